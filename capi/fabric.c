/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * The fabric fid (fi_fabric): fi_domain, fi_wait_open and fi_trywait; EQs
 * are eq.c's. Go keeps the fabric itself (lnx_go_fabric, lnx_go_domain).
 */
#include "lnx_capi.h"
#include "lnx_internal.h"
#include "lnx_wait.h"

static int fabric_close(struct fid *fid)
{
	return lnx_close_common(fid, LNX_H(lnx_fabric, fid));
}

static int fabric_domain(struct fid_fabric *fabric, struct fi_info *info, struct fid_domain **dom,
			 void *context)
{
	lnx_handle h = 0;
	int ret = lnx_go_domain(LNX_H(lnx_fabric, fabric), info, &h);
	if (ret)
		return ret;
	/* FI_THREAD_DOMAIN (Open MPI's choice without MPI_THREAD_MULTIPLE):
	 * the fast paths may skip their locks (lnx_internal.h, lnx_lock). */
	int serial = info && info->domain_attr && info->domain_attr->threading == FI_THREAD_DOMAIN;
	*dom = lnx_new_domain(h, fabric, context, serial);
	if (!*dom) {
		lnx_go_close(h);
		return -FI_ENOMEM;
	}
	return 0;
}

static int fabric_domain2(struct fid_fabric *fabric, struct fi_info *info, struct fid_domain **dom,
			  uint64_t flags, void *context)
{
	if (flags)
		return -FI_EBADFLAGS;
	return fabric_domain(fabric, info, dom, context);
}

static int fabric_pep(struct fid_fabric *f, struct fi_info *i, struct fid_pep **p, void *c)
{
	return -FI_ENOSYS;
}
static int fabric_wait(struct fid_fabric *f, struct fi_wait_attr *a, struct fid_wait **w)
{
	return lnx_wait_open(f, a, w);
}
static int fabric_trywait(struct fid_fabric *f, struct fid **fids, int count)
{
	return lnx_trywait(f, fids, count);
}

static struct fi_ops fabric_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = fabric_close,
	.bind = nosys_bind,
	.control = nosys_control,
	.ops_open = nosys_ops_open,
	.ops_set = nosys_ops_set,
};
static struct fi_ops_fabric fabric_ops = {
	.size = sizeof(struct fi_ops_fabric),
	.domain = fabric_domain,
	.passive_ep = fabric_pep,
	.eq_open = lnx_eq_open,
	.wait_open = fabric_wait,
	.trywait = fabric_trywait,
	.domain2 = fabric_domain2,
};

struct fid_fabric *lnx_new_fabric(lnx_handle h, void *context)
{
	struct lnx_fabric *f = calloc(1, sizeof(*f));
	if (!f)
		return NULL;
	f->fab.fid.fclass = FI_CLASS_FABRIC;
	f->fab.fid.context = context;
	f->fab.fid.ops = &fabric_fi_ops;
	f->fab.ops = &fabric_ops;
	f->fab.api_version = lnx_prov.fi_version;
	f->h = h;
	return &f->fab;
}
