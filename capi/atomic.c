/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * The endpoint's fi_ops_atomic: every variant becomes one lnx_go_atomic
 * (lnx/atomic.go), with one ioc per operation.
 */
#include "lnx_capi.h"
#include "lnx_internal.h"
#include "lnx_ops.h"
#include "lnx_rma.h"

static ssize_t do_atomic(struct fid_ep *ep, const void *buf, size_t count, void *desc,
			 const void *cmp, void *res, fi_addr_t a, uint64_t addr, uint64_t key,
			 enum fi_datatype dt, enum fi_op op, uint64_t data, uint64_t flags,
			 void *ctx, int kind)
{
	struct lnx_ep *e = (struct lnx_ep *)(void *)ep;
	return lnx_go_atomic(e->h, (void *)buf, count, desc, (void *)cmp, res, a, addr, key, dt, op,
			     data, flags, ctx, kind);
}
/* The single-ioc forms of the vector and msg calls. */
#define LNX_ONE_IOC(v, n)                  \
	do {                               \
		if ((n) != 1 || !(v))      \
			return -FI_EINVAL; \
	} while (0)
static ssize_t do_atomicmsg(struct fid_ep *ep, const struct fi_msg_atomic *m,
			    const struct fi_ioc *cmp, size_t ncmp, struct fi_ioc *res, size_t nres,
			    uint64_t flags, int kind)
{
	if (!m)
		return -FI_EINVAL;
	LNX_ONE_IOC(m->msg_iov, m->iov_count);
	LNX_ONE_IOC(m->rma_iov, m->rma_iov_count);
	if (kind & LNX_OP_COMPARE)
		LNX_ONE_IOC(cmp, ncmp);
	if (kind & (LNX_OP_FETCH | LNX_OP_COMPARE))
		LNX_ONE_IOC(res, nres);
	if (m->rma_iov[0].count != m->msg_iov[0].count)
		return -FI_EINVAL;
	return do_atomic(ep, m->msg_iov[0].addr, m->msg_iov[0].count, m->desc ? m->desc[0] : NULL,
			 cmp ? cmp[0].addr : NULL, res ? res[0].addr : NULL, m->addr,
			 m->rma_iov[0].addr, m->rma_iov[0].key, m->datatype, m->op, m->data, flags,
			 m->context,
			 kind | LNX_OP_EXPLICIT | ((flags & FI_REMOTE_CQ_DATA) ? LNX_OP_DATA : 0));
}
static ssize_t at_write(struct fid_ep *ep, const void *buf, size_t count, void *desc, fi_addr_t a,
			uint64_t addr, uint64_t key, enum fi_datatype dt, enum fi_op op, void *ctx)
{
	return do_atomic(ep, buf, count, desc, NULL, NULL, a, addr, key, dt, op, 0, 0, ctx, 0);
}
static ssize_t at_writev(struct fid_ep *ep, const struct fi_ioc *iov, void **desc, size_t count,
			 fi_addr_t a, uint64_t addr, uint64_t key, enum fi_datatype dt,
			 enum fi_op op, void *ctx)
{
	LNX_ONE_IOC(iov, count);
	return do_atomic(ep, iov[0].addr, iov[0].count, desc ? desc[0] : NULL, NULL, NULL, a, addr,
			 key, dt, op, 0, 0, ctx, 0);
}
static ssize_t at_writemsg(struct fid_ep *ep, const struct fi_msg_atomic *m, uint64_t flags)
{
	return do_atomicmsg(ep, m, NULL, 0, NULL, 0, flags, 0);
}
static ssize_t at_inject(struct fid_ep *ep, const void *buf, size_t count, fi_addr_t a,
			 uint64_t addr, uint64_t key, enum fi_datatype dt, enum fi_op op)
{
	return do_atomic(ep, buf, count, NULL, NULL, NULL, a, addr, key, dt, op, 0, 0, NULL,
			 LNX_OP_INJECT);
}
static ssize_t at_readwrite(struct fid_ep *ep, const void *buf, size_t count, void *desc, void *res,
			    void *res_desc, fi_addr_t a, uint64_t addr, uint64_t key,
			    enum fi_datatype dt, enum fi_op op, void *ctx)
{
	return do_atomic(ep, buf, count, desc, NULL, res, a, addr, key, dt, op, 0, 0, ctx,
			 LNX_OP_FETCH);
}
static ssize_t at_readwritev(struct fid_ep *ep, const struct fi_ioc *iov, void **desc, size_t count,
			     struct fi_ioc *resv, void **res_desc, size_t res_count, fi_addr_t a,
			     uint64_t addr, uint64_t key, enum fi_datatype dt, enum fi_op op,
			     void *ctx)
{
	LNX_ONE_IOC(iov, count);
	LNX_ONE_IOC(resv, res_count);
	return do_atomic(ep, iov[0].addr, iov[0].count, desc ? desc[0] : NULL, NULL, resv[0].addr,
			 a, addr, key, dt, op, 0, 0, ctx, LNX_OP_FETCH);
}
static ssize_t at_readwritemsg(struct fid_ep *ep, const struct fi_msg_atomic *m,
			       struct fi_ioc *resv, void **res_desc, size_t res_count,
			       uint64_t flags)
{
	return do_atomicmsg(ep, m, NULL, 0, resv, res_count, flags, LNX_OP_FETCH);
}
static ssize_t at_compwrite(struct fid_ep *ep, const void *buf, size_t count, void *desc,
			    const void *cmp, void *cmp_desc, void *res, void *res_desc, fi_addr_t a,
			    uint64_t addr, uint64_t key, enum fi_datatype dt, enum fi_op op,
			    void *ctx)
{
	return do_atomic(ep, buf, count, desc, cmp, res, a, addr, key, dt, op, 0, 0, ctx,
			 LNX_OP_COMPARE);
}
static ssize_t at_compwritev(struct fid_ep *ep, const struct fi_ioc *iov, void **desc, size_t count,
			     const struct fi_ioc *cmpv, void **cmp_desc, size_t cmp_count,
			     struct fi_ioc *resv, void **res_desc, size_t res_count, fi_addr_t a,
			     uint64_t addr, uint64_t key, enum fi_datatype dt, enum fi_op op,
			     void *ctx)
{
	LNX_ONE_IOC(iov, count);
	LNX_ONE_IOC(cmpv, cmp_count);
	LNX_ONE_IOC(resv, res_count);
	return do_atomic(ep, iov[0].addr, iov[0].count, desc ? desc[0] : NULL, cmpv[0].addr,
			 resv[0].addr, a, addr, key, dt, op, 0, 0, ctx, LNX_OP_COMPARE);
}
static ssize_t at_compwritemsg(struct fid_ep *ep, const struct fi_msg_atomic *m,
			       const struct fi_ioc *cmpv, void **cmp_desc, size_t cmp_count,
			       struct fi_ioc *resv, void **res_desc, size_t res_count,
			       uint64_t flags)
{
	return do_atomicmsg(ep, m, cmpv, cmp_count, resv, res_count, flags, LNX_OP_COMPARE);
}
static int at_valid(enum fi_datatype dt, enum fi_op op, size_t *count, int kind)
{
	if (!count)
		return -FI_EINVAL;
	return lnx_go_atomic_valid(dt, op, kind, count, NULL);
}
static int at_writevalid(struct fid_ep *ep, enum fi_datatype dt, enum fi_op op, size_t *count)
{
	return at_valid(dt, op, count, 0);
}
static int at_readwritevalid(struct fid_ep *ep, enum fi_datatype dt, enum fi_op op, size_t *count)
{
	return at_valid(dt, op, count, LNX_OP_FETCH);
}
static int at_compwritevalid(struct fid_ep *ep, enum fi_datatype dt, enum fi_op op, size_t *count)
{
	return at_valid(dt, op, count, LNX_OP_COMPARE);
}
struct fi_ops_atomic lnx_ep_atomic_ops = {
	.size = sizeof(struct fi_ops_atomic),
	.write = at_write,
	.writev = at_writev,
	.writemsg = at_writemsg,
	.inject = at_inject,
	.readwrite = at_readwrite,
	.readwritev = at_readwritev,
	.readwritemsg = at_readwritemsg,
	.compwrite = at_compwrite,
	.compwritev = at_compwritev,
	.compwritemsg = at_compwritemsg,
	.writevalid = at_writevalid,
	.readwritevalid = at_readwritevalid,
	.compwritevalid = at_compwritevalid,
};
