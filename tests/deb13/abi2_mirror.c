/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * abi2_mirror: capi/include/lnx_abi2.h against the real libfabric 2.x
 * headers (compiled in the Debian 13 root). lnx is built against 1.17's
 * headers and takes what 2.x changed from that mirror, so a wrong value
 * there would misread an application's caps, progress or structs.
 */
#include <stddef.h>
#include <stdio.h>
#include <rdma/fabric.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_errno.h>
#include "lnx_abi2.h"

static int bad;

static void check(const char *what, unsigned long long mirror, unsigned long long real)
{
	printf("abi2_mirror: %-36s %#llx %s\n", what, real, mirror == real ? "ok" : "MISMATCH");
	if (mirror != real) {
		printf("abi2_mirror:   lnx_abi2.h says %#llx\n", mirror);
		bad++;
	}
}

#define CHECK_EQ(m, r) check(#r, (unsigned long long)(m), (unsigned long long)(r))

int main(void)
{
	CHECK_EQ(LNX_FI_VERSION_2_0, FI_VERSION(2, 0));
	CHECK_EQ(LNX_FI2_TAGGED_DIRECTED_RECV, FI_TAGGED_DIRECTED_RECV);
	CHECK_EQ(LNX_FI2_TAGGED_MULTI_RECV, FI_TAGGED_MULTI_RECV);
	CHECK_EQ(LNX_FI2_EXACT_DIRECTED_RECV, FI_EXACT_DIRECTED_RECV);
	CHECK_EQ(LNX_FI2_MR_DMABUF, FI_MR_DMABUF);
	CHECK_EQ(LNX_FI2_MR_SINGLE_USE, FI_MR_SINGLE_USE);
	CHECK_EQ(LNX_FI2_PROGRESS_CONTROL_UNIFIED, FI_PROGRESS_CONTROL_UNIFIED);
	CHECK_EQ(LNX_FI2_ENOMR, FI_ENOMR);
	CHECK_EQ(LNX_FI2_DOMAIN_ATTR_SIZE, sizeof(struct fi_domain_attr));
	CHECK_EQ(LNX_FI2_DOMAIN_ATTR_MAX_EP_AUTH_KEY, offsetof(struct fi_domain_attr, max_ep_auth_key));
	CHECK_EQ(LNX_FI2_CQ_ERR_ENTRY_SIZE, sizeof(struct fi_cq_err_entry));
	CHECK_EQ(LNX_FI2_CQ_ERR_ENTRY_SRC_ADDR, offsetof(struct fi_cq_err_entry, src_addr));
	CHECK_EQ(LNX_FI2_MR_ATTR_SIZE, sizeof(struct fi_mr_attr));
	CHECK_EQ(LNX_FI2_OPS_AV_SIZE, sizeof(struct fi_ops_av));
	/* Bits whose 1.x meaning lnx still uses under 2.x. */
	CHECK_EQ(1ULL << 45, FI_HMEM_HOST_ALLOC);
	CHECK_EQ(1ULL << 46, FI_HMEM_DEVICE_ONLY);
	printf("abi2_mirror: libfabric %u.%u headers: %s\n", FI_MAJOR_VERSION, FI_MINOR_VERSION,
	       bad ? "FAILED" : "ok");
	return bad ? 1 : 0;
}
