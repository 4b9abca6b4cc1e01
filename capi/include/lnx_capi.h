/*
 * C side of lnx's boundary: the fid wrappers libfabric sees, and the Go
 * entry points (exported from package capi) that the trampolines call.
 * C keeps only integer handles to Go objects, never Go pointers.
 */
#ifndef LNX_CAPI_H
#define LNX_CAPI_H

#include <stdint.h>
#include <stddef.h>
#include <rdma/fabric.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_tagged.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>
#include <rdma/fi_atomic.h>
#include <rdma/providers/fi_prov.h>
#include <rdma/providers/fi_log.h>

typedef uintptr_t lnx_handle;

struct lnx_fabric { struct fid_fabric fab; lnx_handle h; };
struct lnx_domain { struct fid_domain dom; lnx_handle h; };
struct lnx_ep     { struct fid_ep ep; lnx_handle h; };
struct lnx_av     { struct fid_av av; lnx_handle h; };
struct lnx_cq     { struct fid_cq cq; lnx_handle h; };
struct lnx_cntr   { struct fid_cntr cntr; lnx_handle h; };
struct lnx_mr     { struct fid_mr mr; lnx_handle h; };

extern struct fi_provider lnx_prov;

/* Object constructors (objects.c): wrap a Go handle in a fid. */
struct fid_fabric *lnx_new_fabric(lnx_handle h, void *context);
struct fid_domain *lnx_new_domain(lnx_handle h, struct fid_fabric *fabric, void *context);
struct fid_ep *lnx_new_ep(lnx_handle h, void *context);
struct fid_av *lnx_new_av(lnx_handle h, void *context);
struct fid_cq *lnx_new_cq(lnx_handle h, void *context);
struct fid_cntr *lnx_new_cntr(lnx_handle h, void *context);

/* Kinds of object a handle designates, for fi_ep_bind. */
enum lnx_kind { LNX_KIND_NONE, LNX_KIND_AV, LNX_KIND_CQ, LNX_KIND_CNTR, LNX_KIND_EQ, LNX_KIND_MR };
lnx_handle lnx_handle_of(struct fid *fid, int *kind);

/* Logging and environment for Go. */
int lnx_log_enabled(int level, int subsys);
void lnx_log(int level, int subsys, const char *msg);
const char *lnx_getenv(const char *name);

/* fi_info helpers. */
struct fi_info *lnx_info_next(struct fi_info *info);

#endif
