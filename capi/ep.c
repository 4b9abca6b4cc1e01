/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * The endpoint fid: bind, control, options, names, and the fi_ops_msg and
 * fi_ops_tagged trampolines. A send or receive first tries lnx's C fast
 * paths (fast_send.c, recv_queue.c) and goes to Go (lnx_go_send,
 * lnx_go_recv) when they decline. RMA and atomics are rma.c's and
 * atomic.c's.
 */
#include "lnx_capi.h"
#include "lnx_internal.h"
#include "lnx_ops.h"

static int ep_close(struct fid *fid)
{
	struct lnx_ep *e = (struct lnx_ep *)(void *)fid;
	int ret = lnx_go_close(e->h);
	if (ret == 0)
		lnx_free_ep(e);
	return ret;
}

lnx_handle lnx_handle_of(struct fid *fid, int *kind)
{
	*kind = LNX_KIND_NONE;
	if (!fid)
		return 0;
	if (fid->ops == &lnx_av_fi_ops) {
		*kind = LNX_KIND_AV;
		return LNX_H(lnx_av, fid);
	}
	if (fid->ops == &lnx_cq_fi_ops) {
		*kind = LNX_KIND_CQ;
		return LNX_H(lnx_cq, fid);
	}
	if (fid->ops == &lnx_cntr_fi_ops) {
		*kind = LNX_KIND_CNTR;
		return LNX_H(lnx_cntr, fid);
	}
	return 0;
}

static int ep_bind(struct fid *fid, struct fid *bfid, uint64_t flags)
{
	int kind;
	if (lnx_eq_of(bfid))
		/* RDM endpoints have no connection events: binding an EQ is
		 * allowed and changes nothing. */
		return flags ? -FI_EBADFLAGS : 0;
	lnx_handle bh = lnx_handle_of(bfid, &kind);
	if (!bh)
		return -FI_EINVAL;
	struct lnx_ep *e = (struct lnx_ep *)(void *)fid;
	int ret = lnx_go_ep_bind(e->h, bh, kind, flags);
	if (ret == 0 && kind == LNX_KIND_CQ) {
		struct lnx_cq *c = (struct lnx_cq *)(void *)bfid;
		if (flags & FI_TRANSMIT)
			__atomic_store_n(&e->fast->cring, c->cring, __ATOMIC_RELEASE);
		if (flags & FI_RECV) {
			__atomic_store_n(&e->fast->rx_gate, &c->gate, __ATOMIC_RELEASE);
			__atomic_store_n(&e->fast->arm.cring, c->cring, __ATOMIC_RELEASE);
		}
	}
	return ret;
}

static int ep_control(struct fid *fid, int command, void *arg)
{
	switch (command) {
	case FI_ENABLE:
		return lnx_go_ep_enable(LNX_H(lnx_ep, fid));
	case FI_GETOPSFLAG:
		if (!arg)
			return -FI_EINVAL;
		return lnx_go_ep_opsflag(LNX_H(lnx_ep, fid), (uint64_t *)arg, 0);
	case FI_SETOPSFLAG:
		if (!arg)
			return -FI_EINVAL;
		return lnx_go_ep_opsflag(LNX_H(lnx_ep, fid), (uint64_t *)arg, 1);
	default:
		return -FI_ENOSYS;
	}
}

static ssize_t ep_cancel(fid_t fid, void *context)
{
	return lnx_go_ep_cancel(LNX_H(lnx_ep, fid), context);
}

static int ep_getopt(fid_t fid, int level, int optname, void *optval, size_t *optlen)
{
	return lnx_go_ep_getopt(LNX_H(lnx_ep, fid), level, optname, optval, optlen);
}

static int ep_setopt(fid_t fid, int level, int optname, const void *optval, size_t optlen)
{
	return lnx_go_ep_setopt(LNX_H(lnx_ep, fid), level, optname, (void *)optval, optlen);
}

static int ep_txctx(struct fid_ep *sep, int i, struct fi_tx_attr *a, struct fid_ep **t, void *c)
{
	return -FI_ENOSYS;
}
static int ep_rxctx(struct fid_ep *sep, int i, struct fi_rx_attr *a, struct fid_ep **r, void *c)
{
	return -FI_ENOSYS;
}
static ssize_t ep_rx_size_left(struct fid_ep *ep)
{
	return -FI_ENOSYS;
}
static ssize_t ep_tx_size_left(struct fid_ep *ep)
{
	return -FI_ENOSYS;
}

static int ep_getname(fid_t fid, void *addr, size_t *addrlen)
{
	if (!addrlen)
		return -FI_EINVAL;
	return lnx_go_ep_getname(LNX_H(lnx_ep, fid), addr, addrlen);
}
static int ep_setname(fid_t fid, void *addr, size_t addrlen)
{
	return -FI_ENOSYS;
}
static int ep_getpeer(struct fid_ep *ep, void *addr, size_t *addrlen)
{
	return -FI_ENOSYS;
}
static int ep_connect(struct fid_ep *ep, const void *addr, const void *param, size_t len)
{
	return -FI_ENOSYS;
}
static int ep_listen(struct fid_pep *pep)
{
	return -FI_ENOSYS;
}
static int ep_accept(struct fid_ep *ep, const void *param, size_t len)
{
	return -FI_ENOSYS;
}
static int ep_reject(struct fid_pep *pep, fid_t h, const void *param, size_t len)
{
	return -FI_ENOSYS;
}
static int ep_shutdown(struct fid_ep *ep, uint64_t flags)
{
	return -FI_ENOSYS;
}
static int ep_join(struct fid_ep *ep, const void *addr, uint64_t flags, struct fid_mc **mc, void *c)
{
	return -FI_ENOSYS;
}

/* Data transfer: every variant becomes one lnx_go_send / lnx_go_recv. */
#define EP_H(ep) LNX_H(lnx_ep, ep)

static ssize_t do_send(struct fid_ep *ep, const struct iovec *iov, void **desc, size_t count,
		       fi_addr_t dest, uint64_t tag, uint64_t data, uint64_t flags, void *ctx,
		       int kind)
{
	struct lnx_ep *e = (struct lnx_ep *)(void *)ep;
	ssize_t ret = lnx_fast_send(e->fast, lnx_serial(e->serial), iov, count, dest, tag, data,
				    ctx, kind);
	if (ret != LNX_FAST_DECLINED)
		return ret;
	return lnx_go_send(e->h, (struct iovec *)iov, desc, count, dest, tag, data, flags, ctx,
			   kind);
}

static ssize_t do_recv(struct fid_ep *ep, const struct iovec *iov, void **desc, size_t count,
		       fi_addr_t src, uint64_t tag, uint64_t ignore, uint64_t flags, void *ctx,
		       int kind)
{
	struct lnx_ep *e = (struct lnx_ep *)(void *)ep;
	ssize_t ret = lnx_fast_recv(e->fast, lnx_serial(e->serial), iov, desc, count, src, tag,
				    ignore, ctx, kind);
	if (ret != LNX_FAST_DECLINED)
		return ret;
	return lnx_go_recv(e->h, (struct iovec *)iov, desc, count, src, tag, ignore, flags, ctx,
			   kind);
}

static ssize_t msg_recv(struct fid_ep *ep, void *buf, size_t len, void *desc, fi_addr_t src,
			void *ctx)
{
	ONE_IOV(buf, len);
	return do_recv(ep, &one, &desc, 1, src, 0, 0, 0, ctx, 0);
}
static ssize_t msg_recvv(struct fid_ep *ep, const struct iovec *iov, void **desc, size_t count,
			 fi_addr_t src, void *ctx)
{
	return do_recv(ep, iov, desc, count, src, 0, 0, 0, ctx, 0);
}
static ssize_t msg_recvmsg(struct fid_ep *ep, const struct fi_msg *m, uint64_t flags)
{
	return do_recv(ep, m->msg_iov, m->desc, m->iov_count, m->addr, 0, 0, flags, m->context,
		       LNX_OP_EXPLICIT);
}
static ssize_t msg_send(struct fid_ep *ep, const void *buf, size_t len, void *desc, fi_addr_t dest,
			void *ctx)
{
	ONE_IOV(buf, len);
	return do_send(ep, &one, &desc, 1, dest, 0, 0, 0, ctx, 0);
}
static ssize_t msg_sendv(struct fid_ep *ep, const struct iovec *iov, void **desc, size_t count,
			 fi_addr_t dest, void *ctx)
{
	return do_send(ep, iov, desc, count, dest, 0, 0, 0, ctx, 0);
}
static ssize_t msg_sendmsg(struct fid_ep *ep, const struct fi_msg *m, uint64_t flags)
{
	return do_send(ep, m->msg_iov, m->desc, m->iov_count, m->addr, 0, m->data, flags,
		       m->context, LNX_OP_EXPLICIT);
}
static ssize_t msg_inject(struct fid_ep *ep, const void *buf, size_t len, fi_addr_t dest)
{
	ONE_IOV(buf, len);
	return do_send(ep, &one, NULL, 1, dest, 0, 0, 0, NULL, LNX_OP_INJECT);
}
static ssize_t msg_senddata(struct fid_ep *ep, const void *buf, size_t len, void *desc,
			    uint64_t data, fi_addr_t dest, void *ctx)
{
	ONE_IOV(buf, len);
	return do_send(ep, &one, &desc, 1, dest, 0, data, 0, ctx, LNX_OP_DATA);
}
static ssize_t msg_injectdata(struct fid_ep *ep, const void *buf, size_t len, uint64_t data,
			      fi_addr_t dest)
{
	ONE_IOV(buf, len);
	return do_send(ep, &one, NULL, 1, dest, 0, data, 0, NULL, LNX_OP_INJECT | LNX_OP_DATA);
}

static ssize_t tag_recv(struct fid_ep *ep, void *buf, size_t len, void *desc, fi_addr_t src,
			uint64_t tag, uint64_t ignore, void *ctx)
{
	ONE_IOV(buf, len);
	return do_recv(ep, &one, &desc, 1, src, tag, ignore, 0, ctx, LNX_OP_TAGGED);
}
static ssize_t tag_recvv(struct fid_ep *ep, const struct iovec *iov, void **desc, size_t count,
			 fi_addr_t src, uint64_t tag, uint64_t ignore, void *ctx)
{
	return do_recv(ep, iov, desc, count, src, tag, ignore, 0, ctx, LNX_OP_TAGGED);
}
static ssize_t tag_recvmsg(struct fid_ep *ep, const struct fi_msg_tagged *m, uint64_t flags)
{
	return do_recv(ep, m->msg_iov, m->desc, m->iov_count, m->addr, m->tag, m->ignore, flags,
		       m->context, LNX_OP_TAGGED | LNX_OP_EXPLICIT);
}
static ssize_t tag_send(struct fid_ep *ep, const void *buf, size_t len, void *desc, fi_addr_t dest,
			uint64_t tag, void *ctx)
{
	ONE_IOV(buf, len);
	return do_send(ep, &one, &desc, 1, dest, tag, 0, 0, ctx, LNX_OP_TAGGED);
}
static ssize_t tag_sendv(struct fid_ep *ep, const struct iovec *iov, void **desc, size_t count,
			 fi_addr_t dest, uint64_t tag, void *ctx)
{
	return do_send(ep, iov, desc, count, dest, tag, 0, 0, ctx, LNX_OP_TAGGED);
}
static ssize_t tag_sendmsg(struct fid_ep *ep, const struct fi_msg_tagged *m, uint64_t flags)
{
	return do_send(ep, m->msg_iov, m->desc, m->iov_count, m->addr, m->tag, m->data, flags,
		       m->context, LNX_OP_TAGGED | LNX_OP_EXPLICIT);
}
static ssize_t tag_inject(struct fid_ep *ep, const void *buf, size_t len, fi_addr_t dest,
			  uint64_t tag)
{
	ONE_IOV(buf, len);
	return do_send(ep, &one, NULL, 1, dest, tag, 0, 0, NULL, LNX_OP_TAGGED | LNX_OP_INJECT);
}
static ssize_t tag_senddata(struct fid_ep *ep, const void *buf, size_t len, void *desc,
			    uint64_t data, fi_addr_t dest, uint64_t tag, void *ctx)
{
	ONE_IOV(buf, len);
	return do_send(ep, &one, &desc, 1, dest, tag, data, 0, ctx, LNX_OP_TAGGED | LNX_OP_DATA);
}
static ssize_t tag_injectdata(struct fid_ep *ep, const void *buf, size_t len, uint64_t data,
			      fi_addr_t dest, uint64_t tag)
{
	ONE_IOV(buf, len);
	return do_send(ep, &one, NULL, 1, dest, tag, data, 0, NULL,
		       LNX_OP_TAGGED | LNX_OP_INJECT | LNX_OP_DATA);
}

static struct fi_ops ep_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = ep_close,
	.bind = ep_bind,
	.control = ep_control,
	.ops_open = nosys_ops_open,
	.ops_set = nosys_ops_set,
};
static struct fi_ops_ep ep_ops = {
	.size = sizeof(struct fi_ops_ep),
	.cancel = ep_cancel,
	.getopt = ep_getopt,
	.setopt = ep_setopt,
	.tx_ctx = ep_txctx,
	.rx_ctx = ep_rxctx,
	.rx_size_left = ep_rx_size_left,
	.tx_size_left = ep_tx_size_left,
};
static struct fi_ops_cm ep_cm_ops = {
	.size = sizeof(struct fi_ops_cm),
	.setname = ep_setname,
	.getname = ep_getname,
	.getpeer = ep_getpeer,
	.connect = ep_connect,
	.listen = ep_listen,
	.accept = ep_accept,
	.reject = ep_reject,
	.shutdown = ep_shutdown,
	.join = ep_join,
};
static struct fi_ops_msg ep_msg_ops = {
	.size = sizeof(struct fi_ops_msg),
	.recv = msg_recv,
	.recvv = msg_recvv,
	.recvmsg = msg_recvmsg,
	.send = msg_send,
	.sendv = msg_sendv,
	.sendmsg = msg_sendmsg,
	.inject = msg_inject,
	.senddata = msg_senddata,
	.injectdata = msg_injectdata,
};
static struct fi_ops_tagged ep_tagged_ops = {
	.size = sizeof(struct fi_ops_tagged),
	.recv = tag_recv,
	.recvv = tag_recvv,
	.recvmsg = tag_recvmsg,
	.send = tag_send,
	.sendv = tag_sendv,
	.sendmsg = tag_sendmsg,
	.inject = tag_inject,
	.senddata = tag_senddata,
	.injectdata = tag_injectdata,
};

struct lnx_ep *lnx_alloc_ep(void)
{
	struct lnx_ep *e = calloc(1, sizeof(*e));
	if (e && !(e->fast = lnx_map(sizeof(*e->fast)))) {
		free(e);
		e = NULL;
	}
	return e;
}

void lnx_free_ep(struct lnx_ep *e)
{
	munmap(e->fast, sizeof(*e->fast));
	free(e);
}

void lnx_init_ep(struct lnx_ep *e, lnx_handle h, void *context)
{
	e->ep.fid.fclass = FI_CLASS_EP;
	e->ep.fid.context = context;
	e->ep.fid.ops = &ep_fi_ops;
	e->ep.ops = &ep_ops;
	e->ep.cm = &ep_cm_ops;
	e->ep.msg = &ep_msg_ops;
	e->ep.tagged = &ep_tagged_ops;
	e->ep.rma = &lnx_ep_rma_ops;
	e->ep.atomic = &lnx_ep_atomic_ops;
	e->ep.collective = &lnx_ep_collective_ops; /* nosys.c */
	e->h = h;
}
