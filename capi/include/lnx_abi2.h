/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * What libfabric 2.x changed in the ABI that lnx sees, mirrored so that one
 * liblnx-fi.so built against the 1.17 headers (Debian 12) can serve 2.x
 * applications too. Values were read from libfabric 2.1's headers;
 * tests/deb13/abi2_mirror.c checks every one of them against the real 2.x
 * headers in the Debian 13 root, and capi/cinfo checks internal/fi's Go
 * copies against this file.
 *
 * Which of these apply is decided at run time from the API version an
 * application asked for (fabric_attr->api_version), never at build time.
 */
#ifndef LNX_ABI2_H
#define LNX_ABI2_H

#include <stddef.h>
#include <stdint.h>

#define LNX_FI_VERSION_2_0 ((2u << 16) | 0u)

/* Capability bits that 2.0 gave new meanings. Under 1.x bits 45 and 46
 * are the MR flags FI_HMEM_HOST_ALLOC and FI_HMEM_DEVICE_ONLY (still so
 * in fi_mr_regattr's flags under 2.x) and bit 48 is FI_VARIABLE_MSG. */
#define LNX_FI2_TAGGED_DIRECTED_RECV (1ULL << 45)
#define LNX_FI2_TAGGED_MULTI_RECV    (1ULL << 46)
#define LNX_FI2_EXACT_DIRECTED_RECV  (1ULL << 48)

/* fi_mr_regattr flags (1.20+): mr_iov is then a struct fi_mr_dmabuf. */
#define LNX_FI2_MR_DMABUF     (1ULL << 40)
#define LNX_FI2_MR_SINGLE_USE (1ULL << 41)

/* enum fi_progress gained a value after FI_PROGRESS_MANUAL. */
#define LNX_FI2_PROGRESS_CONTROL_UNIFIED 3

/* New error code. */
#define LNX_FI2_ENOMR 270

/* struct fi_domain_attr grew at its end (max_ep_auth_key, max_group_id):
 * an fi_info lnx hands to libfabric must be allocated by the running
 * library (fi_dupinfo(NULL)), never by lnx, so the tail exists. */
#define LNX_FI2_DOMAIN_ATTR_SIZE	    208
#define LNX_FI2_DOMAIN_ATTR_MAX_EP_AUTH_KEY 192

/* struct fi_cq_err_entry gained src_addr at its end: only an application
 * that asked for API 2.0 or later has room for it. */
#define LNX_FI2_CQ_ERR_ENTRY_SIZE     88
#define LNX_FI2_CQ_ERR_ENTRY_SRC_ADDR 80

/* struct fi_mr_attr grew at its end (hmem_data, page_size, base_mr,
 * sub_mr_cnt); lnx reads only the 1.17 prefix. */
#define LNX_FI2_MR_ATTR_SIZE 112

/* struct fi_ops_av grew (insert_auth_key, lookup_auth_key, set_user_id):
 * lnx's table keeps the 1.17 size, so libfabric's inline wrappers answer
 * -FI_ENOSYS for the new calls (FI_CHECK_OP). */
#define LNX_FI2_OPS_AV_SIZE 88

#endif
