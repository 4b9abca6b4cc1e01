/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * Memory registration (fi_mr_reg, fi_mr_regv, fi_mr_regattr on a domain)
 * and the MR fid. Go keeps the registration (lnx/mr.go).
 */
#include <string.h>
#include "lnx_capi.h"
#include "lnx_internal.h"

/* Memory registration: every variant becomes one fi_mr_attr for Go. The
 * descriptor (fi_mr_desc) is the MR's Go handle, so the data path finds the
 * MR without trusting a pointer the application hands back. */
static int mr_close(struct fid *fid)
{
	return lnx_close_common(fid, LNX_H(lnx_mr, fid));
}

static int mr_bind(struct fid *fid, struct fid *bfid, uint64_t flags)
{
	/* lnx never asks for FI_MR_ENDPOINT; binding is accepted for
	 * applications that bind anyway. */
	if (!bfid)
		return -FI_EINVAL;
	switch (bfid->fclass) {
	case FI_CLASS_EP:
	case FI_CLASS_CNTR:
		return 0;
	default:
		return -FI_EINVAL;
	}
}

static int mr_control(struct fid *fid, int command, void *arg)
{
	switch (command) {
	case FI_ENABLE:
		return 0;
	default:
		return -FI_ENOSYS;
	}
}

static struct fi_ops mr_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = mr_close,
	.bind = mr_bind,
	.control = mr_control,
	.ops_open = nosys_ops_open,
	.ops_set = nosys_ops_set,
};

static int domain_mr_regattr(struct fid *fid, const struct fi_mr_attr *attr, uint64_t flags,
			     struct fid_mr **mr)
{
	struct lnx_domain *d = (struct lnx_domain *)(void *)fid;
	lnx_handle h = 0;
	uint64_t key = 0;
	if (!attr || !mr)
		return -FI_EINVAL;
	struct lnx_mr *m = calloc(1, sizeof(*m));
	if (!m)
		return -FI_ENOMEM;
	int ret = lnx_go_mr_reg(d->h, (struct fi_mr_attr *)attr, flags, &h, &key);
	if (ret) {
		free(m);
		return ret;
	}
	m->mr.fid.fclass = FI_CLASS_MR;
	m->mr.fid.context = attr->context;
	m->mr.fid.ops = &mr_fi_ops;
	m->mr.mem_desc = (void *)h;
	m->mr.key = key;
	m->h = h;
	*mr = &m->mr;
	if (d->reg_mr) {
		/* FI_REG_MR: registration is complete already; the EQ says so. */
		struct fi_eq_entry ev = { .fid = &m->mr.fid, .context = attr->context };
		lnx_eq_post(d->eq, FI_MR_COMPLETE, &ev, sizeof(ev), 0, NULL, NULL, 0);
	}
	return 0;
}

static int domain_mr_regv(struct fid *fid, const struct iovec *iov, size_t count, uint64_t access,
			  uint64_t offset, uint64_t requested_key, uint64_t flags,
			  struct fid_mr **mr, void *context)
{
	struct fi_mr_attr attr;
	memset(&attr, 0, sizeof(attr));
	attr.mr_iov = iov;
	attr.iov_count = count;
	attr.access = access;
	attr.offset = offset;
	attr.requested_key = requested_key;
	attr.context = context;
	attr.iface = FI_HMEM_SYSTEM;
	return domain_mr_regattr(fid, &attr, flags, mr);
}

static int domain_mr_reg(struct fid *fid, const void *buf, size_t len, uint64_t access,
			 uint64_t offset, uint64_t requested_key, uint64_t flags,
			 struct fid_mr **mr, void *context)
{
	struct iovec iov = { .iov_base = (void *)buf, .iov_len = len };
	return domain_mr_regv(fid, &iov, 1, access, offset, requested_key, flags, mr, context);
}

struct fi_ops_mr lnx_domain_mr_ops = {
	.size = sizeof(struct fi_ops_mr),
	.reg = domain_mr_reg,
	.regv = domain_mr_regv,
	.regattr = domain_mr_regattr,
};
