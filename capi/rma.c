/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * The endpoint's fi_ops_rma: every variant becomes one lnx_go_rma
 * (lnx/rma.go).
 */
#include "lnx_capi.h"
#include "lnx_internal.h"
#include "lnx_ops.h"
#include "lnx_rma.h"

/* One-sided operations: every RMA variant becomes one lnx_go_rma, every
 * atomic variant one lnx_go_atomic (lnx/rma.go, lnx/atomic.go). One
 * rma_iov and one ioc per operation (rma_iov_limit is 1). */
static ssize_t do_rma(struct fid_ep *ep, const struct iovec *iov, void **desc, size_t count,
		      fi_addr_t a, uint64_t addr, uint64_t key, uint64_t data, uint64_t flags,
		      void *ctx, int kind)
{
	struct lnx_ep *e = (struct lnx_ep *)(void *)ep;
	return lnx_go_rma(e->h, (struct iovec *)iov, desc, count, a, addr, key, data, flags, ctx,
			  kind);
}
static ssize_t do_rmamsg(struct fid_ep *ep, const struct fi_msg_rma *m, uint64_t flags, int kind)
{
	if (!m || m->rma_iov_count != 1 || !m->rma_iov)
		return -FI_EINVAL;
	return do_rma(ep, m->msg_iov, m->desc, m->iov_count, m->addr, m->rma_iov[0].addr,
		      m->rma_iov[0].key, m->data, flags, m->context,
		      kind | LNX_OP_EXPLICIT | ((flags & FI_REMOTE_CQ_DATA) ? LNX_OP_DATA : 0));
}
static ssize_t rma_read(struct fid_ep *ep, void *buf, size_t len, void *desc, fi_addr_t a,
			uint64_t addr, uint64_t key, void *ctx)
{
	ONE_IOV(buf, len);
	return do_rma(ep, &one, &desc, 1, a, addr, key, 0, 0, ctx, LNX_OP_READ);
}
static ssize_t rma_readv(struct fid_ep *ep, const struct iovec *iov, void **desc, size_t count,
			 fi_addr_t a, uint64_t addr, uint64_t key, void *ctx)
{
	return do_rma(ep, iov, desc, count, a, addr, key, 0, 0, ctx, LNX_OP_READ);
}
static ssize_t rma_readmsg(struct fid_ep *ep, const struct fi_msg_rma *m, uint64_t flags)
{
	return do_rmamsg(ep, m, flags, LNX_OP_READ);
}
static ssize_t rma_write(struct fid_ep *ep, const void *buf, size_t len, void *desc, fi_addr_t a,
			 uint64_t addr, uint64_t key, void *ctx)
{
	ONE_IOV(buf, len);
	return do_rma(ep, &one, &desc, 1, a, addr, key, 0, 0, ctx, 0);
}
static ssize_t rma_writev(struct fid_ep *ep, const struct iovec *iov, void **desc, size_t count,
			  fi_addr_t a, uint64_t addr, uint64_t key, void *ctx)
{
	return do_rma(ep, iov, desc, count, a, addr, key, 0, 0, ctx, 0);
}
static ssize_t rma_writemsg(struct fid_ep *ep, const struct fi_msg_rma *m, uint64_t flags)
{
	return do_rmamsg(ep, m, flags, 0);
}
static ssize_t rma_inject(struct fid_ep *ep, const void *buf, size_t len, fi_addr_t a,
			  uint64_t addr, uint64_t key)
{
	ONE_IOV(buf, len);
	return do_rma(ep, &one, NULL, 1, a, addr, key, 0, 0, NULL, LNX_OP_INJECT);
}
static ssize_t rma_writedata(struct fid_ep *ep, const void *buf, size_t len, void *desc,
			     uint64_t data, fi_addr_t a, uint64_t addr, uint64_t key, void *ctx)
{
	ONE_IOV(buf, len);
	return do_rma(ep, &one, &desc, 1, a, addr, key, data, 0, ctx, LNX_OP_DATA);
}
static ssize_t rma_injectdata(struct fid_ep *ep, const void *buf, size_t len, uint64_t data,
			      fi_addr_t a, uint64_t addr, uint64_t key)
{
	ONE_IOV(buf, len);
	return do_rma(ep, &one, NULL, 1, a, addr, key, data, 0, NULL, LNX_OP_INJECT | LNX_OP_DATA);
}
struct fi_ops_rma lnx_ep_rma_ops = {
	.size = sizeof(struct fi_ops_rma),
	.read = rma_read,
	.readv = rma_readv,
	.readmsg = rma_readmsg,
	.write = rma_write,
	.writev = rma_writev,
	.writemsg = rma_writemsg,
	.inject = rma_inject,
	.writedata = rma_writedata,
	.injectdata = rma_injectdata,
};
