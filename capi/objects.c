/*
 * The fid objects libfabric applications hold, and their ops tables. Every
 * entry point is a thin trampoline: it unpacks the call into a handle and
 * plain values, and calls one Go export. Nothing here keeps Go pointers.
 */
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include "lnx_capi.h"
#include "lnx_wait.h"
#include "lnx_ops.h"
#include "lnx_rma.h"
#include "lnx_tp_lend.h"
#include "_cgo_export.h"

#define LNX_H(type, fidp) (((struct type *)(void *)(fidp))->h)

/* ---- unsupported operations ------------------------------------------- */

static int nosys_bind(struct fid *fid, struct fid *bfid, uint64_t flags) { return -FI_ENOSYS; }
static int nosys_control(struct fid *fid, int command, void *arg) { return -FI_ENOSYS; }
static int nosys_ops_open(struct fid *fid, const char *name, uint64_t flags, void **ops, void *context)
{ return -FI_ENOSYS; }
static int nosys_ops_set(struct fid *fid, const char *name, uint64_t flags, void *ops, void *context)
{ return -FI_ENOSYS; }

/* ---- generic close ------------------------------------------------------ */

static int lnx_close_common(struct fid *fid, lnx_handle h)
{
	int ret = lnx_go_close(h);
	if (ret == 0)
		free(fid);
	return ret;
}

static int fabric_close(struct fid *fid) { return lnx_close_common(fid, LNX_H(lnx_fabric, fid)); }
static int domain_close(struct fid *fid)
{
	struct lnx_eq *q = ((struct lnx_domain *)(void *)fid)->eq;
	int ret = lnx_close_common(fid, LNX_H(lnx_domain, fid));
	if (ret == 0 && q)
		lnx_eq_ref(q, -1);
	return ret;
}
static int ep_close(struct fid *fid)
{
	struct lnx_ep *e = (struct lnx_ep *)(void *)fid;
	int ret = lnx_go_close(e->h);
	if (ret == 0)
		lnx_free_ep(e);
	return ret;
}
static int av_close(struct fid *fid)
{
	struct lnx_eq *q = ((struct lnx_av *)(void *)fid)->eq;
	int ret = lnx_close_common(fid, LNX_H(lnx_av, fid));
	if (ret == 0 && q)
		lnx_eq_ref(q, -1);
	return ret;
}
static int cq_close(struct fid *fid)
{
	struct lnx_cq *c = (struct lnx_cq *)(void *)fid;
	int ret = lnx_go_close(c->h);
	if (ret == 0)
		lnx_free_cq(c);
	return ret;
}
static int cntr_close(struct fid *fid) { return lnx_close_common(fid, LNX_H(lnx_cntr, fid)); }

/* ---- fabric ------------------------------------------------------------- */

static int fabric_domain(struct fid_fabric *fabric, struct fi_info *info,
			 struct fid_domain **dom, void *context)
{
	lnx_handle h = 0;
	int ret = lnx_go_domain(LNX_H(lnx_fabric, fabric), info, &h);
	if (ret)
		return ret;
	*dom = lnx_new_domain(h, fabric, context);
	if (!*dom) {
		lnx_go_close(h);
		return -FI_ENOMEM;
	}
	return 0;
}

static int fabric_domain2(struct fid_fabric *fabric, struct fi_info *info,
			  struct fid_domain **dom, uint64_t flags, void *context)
{
	if (flags)
		return -FI_EBADFLAGS;
	return fabric_domain(fabric, info, dom, context);
}

static int fabric_pep(struct fid_fabric *f, struct fi_info *i, struct fid_pep **p, void *c) { return -FI_ENOSYS; }
static int fabric_wait(struct fid_fabric *f, struct fi_wait_attr *a, struct fid_wait **w) { return lnx_wait_open(f, a, w); }
static int fabric_trywait(struct fid_fabric *f, struct fid **fids, int count) { return lnx_trywait(f, fids, count); }

static struct fi_ops fabric_fi_ops = {
	.size = sizeof(struct fi_ops), .close = fabric_close, .bind = nosys_bind,
	.control = nosys_control, .ops_open = nosys_ops_open, .ops_set = nosys_ops_set,
};
static struct fi_ops_fabric fabric_ops = {
	.size = sizeof(struct fi_ops_fabric), .domain = fabric_domain, .passive_ep = fabric_pep,
	.eq_open = lnx_eq_open, .wait_open = fabric_wait, .trywait = fabric_trywait,
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

/* ---- domain ------------------------------------------------------------- */

static int domain_av_open(struct fid_domain *domain, struct fi_av_attr *attr,
			  struct fid_av **av, void *context)
{
	lnx_handle h = 0;
	struct fi_av_attr a;
	int event = 0;
	if (attr && (attr->flags & FI_EVENT)) {
		/* Asynchronous inserts are C's business (av_insert): Go
		 * opens a plain AV. */
		a = *attr;
		a.flags &= ~(uint64_t)FI_EVENT;
		attr = &a;
		event = 1;
	}
	int ret = lnx_go_av_open(LNX_H(lnx_domain, domain), attr, &h);
	if (ret)
		return ret;
	*av = lnx_new_av(h, context);
	if (!*av) {
		lnx_go_close(h);
		return -FI_ENOMEM;
	}
	((struct lnx_av *)(void *)*av)->event = event;
	return 0;
}

static int domain_cq_open(struct fid_domain *domain, struct fi_cq_attr *attr,
			  struct fid_cq **cq, void *context)
{
	lnx_handle h = 0;
	struct lnx_cq *c = lnx_alloc_cq();
	if (!c)
		return -FI_ENOMEM;
	int ret = lnx_go_cq_open(LNX_H(lnx_domain, domain), attr, &c->gate, c->cring, &h);
	if (ret) {
		lnx_free_cq(c);
		return ret;
	}
	c->cring->format = attr && attr->format != FI_CQ_FORMAT_UNSPEC ? attr->format : FI_CQ_FORMAT_CONTEXT;
	lnx_init_cq(c, h, context);
	*cq = &c->cq;
	return 0;
}

static int domain_cntr_open(struct fid_domain *domain, struct fi_cntr_attr *attr,
			    struct fid_cntr **cntr, void *context)
{
	lnx_handle h = 0;
	int ret = lnx_go_cntr_open(LNX_H(lnx_domain, domain), attr, &h);
	if (ret)
		return ret;
	*cntr = lnx_new_cntr(h, context);
	if (!*cntr) {
		lnx_go_close(h);
		return -FI_ENOMEM;
	}
	return 0;
}

static int domain_endpoint(struct fid_domain *domain, struct fi_info *info,
			   struct fid_ep **ep, void *context)
{
	lnx_handle h = 0;
	struct lnx_ep *e = lnx_alloc_ep();
	if (!e)
		return -FI_ENOMEM;
	int ret = lnx_go_endpoint(LNX_H(lnx_domain, domain), info, e->fast, &h);
	if (ret) {
		lnx_free_ep(e);
		return ret;
	}
	lnx_init_ep(e, h, context);
	*ep = &e->ep;
	return 0;
}

static int domain_endpoint2(struct fid_domain *domain, struct fi_info *info,
			    struct fid_ep **ep, uint64_t flags, void *context)
{
	if (flags)
		return -FI_EBADFLAGS;
	return domain_endpoint(domain, info, ep, context);
}

static int domain_sep(struct fid_domain *d, struct fi_info *i, struct fid_ep **e, void *c) { return -FI_ENOSYS; }
static int domain_poll(struct fid_domain *d, struct fi_poll_attr *a, struct fid_poll **p) { return lnx_poll_open(d, a, p); }
static int domain_stx(struct fid_domain *d, struct fi_tx_attr *a, struct fid_stx **s, void *c) { return -FI_ENOSYS; }
static int domain_srx(struct fid_domain *d, struct fi_rx_attr *a, struct fid_ep **r, void *c) { return -FI_ENOSYS; }
/* fi_query_atomic: FI_FETCH_ATOMIC / FI_COMPARE_ATOMIC pick the call. */
static int domain_qatomic(struct fid_domain *d, enum fi_datatype dt, enum fi_op op,
			  struct fi_atomic_attr *a, uint64_t f)
{
	if (!a || (f & FI_FETCH_ATOMIC && f & FI_COMPARE_ATOMIC))
		return -FI_EINVAL;
	size_t size = 0;
	int kind = (f & FI_COMPARE_ATOMIC) ? LNX_OP_COMPARE : (f & FI_FETCH_ATOMIC) ? LNX_OP_FETCH : 0;
	int ret = lnx_go_atomic_valid(dt, op, kind, &a->count, &size);
	if (ret == 0)
		a->size = size;
	return ret;
}
static int domain_qcoll(struct fid_domain *d, enum fi_collective_op c,
			struct fi_collective_attr *a, uint64_t f) { return -FI_EOPNOTSUPP; }

/* Memory registration: every variant becomes one fi_mr_attr for Go. The
 * descriptor (fi_mr_desc) is the MR's Go handle, so the data path finds the
 * MR without trusting a pointer the application hands back. */
static int mr_close(struct fid *fid) { return lnx_close_common(fid, LNX_H(lnx_mr, fid)); }

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
	.size = sizeof(struct fi_ops), .close = mr_close, .bind = mr_bind,
	.control = mr_control, .ops_open = nosys_ops_open, .ops_set = nosys_ops_set,
};

static int domain_mr_regattr(struct fid *fid, const struct fi_mr_attr *attr,
			     uint64_t flags, struct fid_mr **mr)
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

static int domain_mr_regv(struct fid *fid, const struct iovec *iov, size_t count,
			  uint64_t access, uint64_t offset, uint64_t requested_key,
			  uint64_t flags, struct fid_mr **mr, void *context)
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

/*
 * fi_domain_bind of an EQ: lnx has no asynchronous control events for a
 * domain or its RDM endpoints, so the EQ receives only what FI_REG_MR
 * asks: each registration, done at once, is reported by an FI_MR_COMPLETE
 * event (fid: the MR, context: the registration's); a registration that
 * fails still fails the call, with no event.
 */
static int domain_bind(struct fid *fid, struct fid *bfid, uint64_t flags)
{
	struct lnx_domain *d = (struct lnx_domain *)(void *)fid;
	struct lnx_eq *q = lnx_eq_of(bfid);
	if (!q)
		return -FI_EINVAL;
	if (flags & ~(uint64_t)FI_REG_MR)
		return -FI_EBADFLAGS;
	if (d->eq)
		return -FI_EALREADY;
	lnx_eq_ref(q, 1);
	d->eq = q;
	d->reg_mr = (flags & FI_REG_MR) != 0;
	return 0;
}

static struct fi_ops domain_fi_ops = {
	.size = sizeof(struct fi_ops), .close = domain_close, .bind = domain_bind,
	.control = nosys_control, .ops_open = nosys_ops_open, .ops_set = nosys_ops_set,
};
static struct fi_ops_domain domain_ops = {
	.size = sizeof(struct fi_ops_domain), .av_open = domain_av_open, .cq_open = domain_cq_open,
	.endpoint = domain_endpoint, .scalable_ep = domain_sep, .cntr_open = domain_cntr_open,
	.poll_open = domain_poll, .stx_ctx = domain_stx, .srx_ctx = domain_srx,
	.query_atomic = domain_qatomic, .query_collective = domain_qcoll,
	.endpoint2 = domain_endpoint2,
};
static struct fi_ops_mr domain_mr_ops = {
	.size = sizeof(struct fi_ops_mr), .reg = domain_mr_reg, .regv = domain_mr_regv,
	.regattr = domain_mr_regattr,
};

struct fid_domain *lnx_new_domain(lnx_handle h, struct fid_fabric *fabric, void *context)
{
	struct lnx_domain *d = calloc(1, sizeof(*d));
	if (!d)
		return NULL;
	d->dom.fid.fclass = FI_CLASS_DOMAIN;
	d->dom.fid.context = context;
	d->dom.fid.ops = &domain_fi_ops;
	d->dom.ops = &domain_ops;
	d->dom.mr = &domain_mr_ops;
	d->h = h;
	return &d->dom;
}

/* ---- endpoint ----------------------------------------------------------- */

static struct fi_ops av_fi_ops, cq_fi_ops, cntr_fi_ops;

lnx_handle lnx_handle_of(struct fid *fid, int *kind)
{
	*kind = LNX_KIND_NONE;
	if (!fid)
		return 0;
	if (fid->ops == &av_fi_ops) {
		*kind = LNX_KIND_AV;
		return LNX_H(lnx_av, fid);
	}
	if (fid->ops == &cq_fi_ops) {
		*kind = LNX_KIND_CQ;
		return LNX_H(lnx_cq, fid);
	}
	if (fid->ops == &cntr_fi_ops) {
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

static int ep_txctx(struct fid_ep *sep, int i, struct fi_tx_attr *a, struct fid_ep **t, void *c) { return -FI_ENOSYS; }
static int ep_rxctx(struct fid_ep *sep, int i, struct fi_rx_attr *a, struct fid_ep **r, void *c) { return -FI_ENOSYS; }
static ssize_t ep_rx_size_left(struct fid_ep *ep) { return -FI_ENOSYS; }
static ssize_t ep_tx_size_left(struct fid_ep *ep) { return -FI_ENOSYS; }

static int ep_getname(fid_t fid, void *addr, size_t *addrlen)
{
	if (!addrlen)
		return -FI_EINVAL;
	return lnx_go_ep_getname(LNX_H(lnx_ep, fid), addr, addrlen);
}
static int ep_setname(fid_t fid, void *addr, size_t addrlen) { return -FI_ENOSYS; }
static int ep_getpeer(struct fid_ep *ep, void *addr, size_t *addrlen) { return -FI_ENOSYS; }
static int ep_connect(struct fid_ep *ep, const void *addr, const void *param, size_t len) { return -FI_ENOSYS; }
static int ep_listen(struct fid_pep *pep) { return -FI_ENOSYS; }
static int ep_accept(struct fid_ep *ep, const void *param, size_t len) { return -FI_ENOSYS; }
static int ep_reject(struct fid_pep *pep, fid_t h, const void *param, size_t len) { return -FI_ENOSYS; }
static int ep_shutdown(struct fid_ep *ep, uint64_t flags) { return -FI_ENOSYS; }
static int ep_join(struct fid_ep *ep, const void *addr, uint64_t flags, struct fid_mc **mc, void *c) { return -FI_ENOSYS; }

/* Data transfer: every variant becomes one lnx_go_send / lnx_go_recv. */
#define EP_H(ep) LNX_H(lnx_ep, ep)

static inline void lnx_spin_lock(uint32_t *l)
{
	while (__atomic_exchange_n(l, 1, __ATOMIC_ACQUIRE))
		while (__atomic_load_n(l, __ATOMIC_RELAXED))
			__builtin_ia32_pause();
}
static inline void lnx_spin_unlock(uint32_t *l) { __atomic_store_n(l, 0, __ATOMIC_RELEASE); }

/* lnx_cring_put appends one completion (cr->lock held, room checked). */
static inline void lnx_cring_put(struct lnx_cring *cr, void *ctx, void *buf, uint64_t flags, uint64_t len,
				 uint64_t data, uint64_t tag, uint64_t src)
{
	typeof(cr->e[0]) *x = &cr->e[cr->tail % LNX_CRING];
	x->ctx = ctx;
	x->buf = buf;
	x->flags = flags;
	x->len = len;
	x->data = data;
	x->tag = tag;
	x->src = src;
	__atomic_store_n(&cr->tail, cr->tail + 1, __ATOMIC_RELEASE);
}

/* lnx_cring_reserve takes cr->lock if the ring has room for one more
 * completion (1); a full ring is left unlocked (0). */
static inline int lnx_cring_reserve(struct lnx_cring *cr)
{
	lnx_spin_lock(&cr->lock);
	if (cr->tail - cr->head < LNX_CRING)
		return 1;
	lnx_spin_unlock(&cr->lock);
	return 0;
}

#define LNX_FAST_DECLINED 1 /* not a libfabric return value: Go takes the send */

/*
 * lnx_fast_put_shm appends an eager record to a same-node peer's shm ring
 * through its slot, the way shm.Endpoint.Send does: 0, or declined when
 * the slot is not ready, the receiver has closed its endpoint, the record
 * would wrap (Go writes the pad record) or the ring is full (Go decides
 * between -FI_EAGAIN and a dead peer).
 */
static ssize_t lnx_fast_put_shm(struct lnx_txslot *s, uint64_t hflags, uint64_t tag, uint64_t data,
				const void *buf, size_t len)
{
	ssize_t ret = LNX_FAST_DECLINED;
	lnx_spin_lock(&s->lock);
	if (!s->ready || len > s->eager_max ||
	    __atomic_load_n((const uint64_t *)s->peer_state, __ATOMIC_ACQUIRE) != LNX_SHM_PEER_OPEN)
		goto out; /* Go reports a closed peer */
	uint64_t need = (LNX_REC_HDR + len + LNX_REC_LINE - 1) & ~(uint64_t)(LNX_REC_LINE - 1);
	uint64_t tail = s->tail, off = tail & s->mask;
	if (off + need > s->size)
		goto out;
	if (tail + need + LNX_REC_LINE > s->head_cache + s->size) {
		s->head_cache = __atomic_load_n((const uint64_t *)s->fwd_head, __ATOMIC_ACQUIRE);
		if (tail + need + LNX_REC_LINE > s->head_cache + s->size)
			goto out;
	}
	struct lnx_rec *rec = (struct lnx_rec *)(s->ring + off);
	rec->kf = LNX_REC_EAGER | hflags << 32;
	rec->tag = tag;
	rec->data = data;
	rec->size = len;
	if (len)
		memcpy((char *)rec + LNX_REC_HDR, buf, len);
	__atomic_store_n(&rec->stamp, (tail ^ s->salt) | 1, __ATOMIC_RELEASE);
	s->tail = tail + need;
	ret = 0;
out:
	lnx_spin_unlock(&s->lock);
	return ret;
}

/*
 * lnx_fast_put_net sends to the network peer of a lent transport (struct
 * lnx_arm's net and net_src) with the core's fi_inject, using the peer's
 * sequence number and credits that Go lent with the transport: 0, or
 * declined. The arm lock keeps Go (taking the transport back) and C
 * readers out; if another thread holds it, Go sends.
 */
static ssize_t lnx_fast_put_net(struct lnx_arm *a, fi_addr_t dest, uint64_t hflags, uint64_t tag,
				uint64_t data, const void *buf, size_t len)
{
	ssize_t ret = LNX_FAST_DECLINED;
	if (__atomic_exchange_n(&a->lock, 1, __ATOMIC_ACQUIRE))
		return ret;
	if (__atomic_load_n(&a->lent, __ATOMIC_ACQUIRE) && a->net && a->net_src == dest &&
	    lnx_tp_send_eager((void *)a->net, (uint32_t)hflags, tag, data, buf, len) == 0)
		ret = 0;
	__atomic_store_n(&a->lock, 0, __ATOMIC_RELEASE);
	return ret;
}

/*
 * lnx_fast_send sends a small message without a call into Go: to a peer on
 * this node through its shm ring, or to the network peer of a lent
 * transport, and queues the completion in the transmit CQ's C ring.
 * Anything it is not sure about (no slot published yet, ring full or
 * wrapping, the ...msg variants, several buffers, completion ring full,
 * a network message over the core's inject size) is declined and goes to
 * Go, which also reports every error.
 */
static ssize_t lnx_fast_send(struct lnx_fast *f, const struct iovec *iov, size_t count,
			     fi_addr_t dest, uint64_t tag, uint64_t data, void *ctx, int kind)
{
	if (!__atomic_load_n(&f->on, __ATOMIC_ACQUIRE) || (kind & LNX_OP_EXPLICIT) || count > 1 ||
	    dest >= LNX_FAST_PEERS)
		return LNX_FAST_DECLINED;
	struct lnx_txslot *s = (struct lnx_txslot *)__atomic_load_n(&f->peer[dest], __ATOMIC_ACQUIRE);
	struct lnx_arm *a = &f->arm;
	if (!s && (!__atomic_load_n(&a->lent, __ATOMIC_RELAXED) || !__atomic_load_n(&a->net, __ATOMIC_RELAXED) ||
		   __atomic_load_n(&a->net_src, __ATOMIC_RELAXED) != dest))
		return LNX_FAST_DECLINED;
	size_t len = count ? iov[0].iov_len : 0;
	const void *buf = count ? iov[0].iov_base : NULL;
	uint64_t txf = __atomic_load_n(&f->tx_flags, __ATOMIC_RELAXED);
	if ((len && !buf) || (((kind & LNX_OP_INJECT) || (txf & FI_INJECT)) && len > f->inject_size))
		return LNX_FAST_DECLINED;
	int want_cq = !(kind & LNX_OP_INJECT) && (!f->tx_sel || (txf & FI_COMPLETION));
	struct lnx_cring *cr = __atomic_load_n(&f->cring, __ATOMIC_ACQUIRE);
	if (want_cq && (!cr || !lnx_cring_reserve(cr)))
		return LNX_FAST_DECLINED;
	uint64_t hflags = (kind & LNX_OP_TAGGED) ? LNX_HDR_TAGGED : 0;
	if ((kind & LNX_OP_DATA) || (txf & FI_REMOTE_CQ_DATA))
		hflags |= LNX_HDR_DATA;
	else
		data = 0;
	ssize_t ret = s ? lnx_fast_put_shm(s, hflags, tag, data, buf, len)
			: lnx_fast_put_net(a, dest, hflags, tag, data, buf, len);
	if (want_cq) {
		if (ret == 0)
			lnx_cring_put(cr, ctx, NULL, FI_SEND | ((kind & LNX_OP_TAGGED) ? FI_TAGGED : FI_MSG), 0, 0, 0,
				      FI_ADDR_NOTAVAIL);
		lnx_spin_unlock(&cr->lock);
	}
	return ret;
}

static ssize_t do_send(struct fid_ep *ep, const struct iovec *iov, void **desc, size_t count,
		       fi_addr_t dest, uint64_t tag, uint64_t data, uint64_t flags, void *ctx, int kind)
{
	struct lnx_ep *e = (struct lnx_ep *)(void *)ep;
	ssize_t ret = lnx_fast_send(e->fast, iov, count, dest, tag, data, ctx, kind);
	if (ret != LNX_FAST_DECLINED)
		return ret;
	return lnx_go_send(e->h, (struct iovec *)iov, desc, count, dest, tag, data, flags, ctx, kind);
}

/*
 * lnx_rearm arms a receive in place of the one C completed (struct
 * lnx_arm's rearm): only while the rings are lent, nothing is armed and
 * no receive is queued, so the new one is the oldest outstanding. Go posts
 * it to its own queue when it takes the rings back, if it is still
 * pending then. Returns 1 when armed.
 */
static int lnx_rearm(struct lnx_fast *f, const struct iovec *iov, void **desc, size_t count,
		     fi_addr_t src, uint64_t tag, uint64_t ignore, void *ctx, int kind)
{
	struct lnx_arm *a = &f->arm;
	if (!__atomic_load_n(&a->rearm, __ATOMIC_RELAXED) || !__atomic_load_n(&a->lent, __ATOMIC_RELAXED) ||
	    __atomic_load_n(&a->on, __ATOMIC_RELAXED))
		return 0;
	if (__atomic_exchange_n(&a->lock, 1, __ATOMIC_ACQUIRE))
		return 0;
	int ok = 0;
	lnx_spin_lock(&f->rxq_lock);
	if (__atomic_load_n(&a->lent, __ATOMIC_ACQUIRE) && a->rearm && !a->on &&
	    __atomic_load_n(&f->rx_on, __ATOMIC_ACQUIRE) &&
	    f->rxq_tail == __atomic_load_n(&f->rxq_head, __ATOMIC_ACQUIRE)) {
		int tagged = (kind & LNX_OP_TAGGED) != 0;
		a->buf = count ? iov[0].iov_base : NULL;
		a->len = count ? iov[0].iov_len : 0;
		a->desc = count && desc ? (uintptr_t)desc[0] : 0;
		a->ctx = ctx;
		a->src = a->directed ? src : FI_ADDR_UNSPEC;
		a->tag = tag;
		a->ignore = tagged ? ignore : ~(uint64_t)0;
		a->tagged = tagged;
		a->c_armed = 1;
		__atomic_store_n(&a->on, 1, __ATOMIC_RELEASE);
		ok = 1;
	}
	lnx_spin_unlock(&f->rxq_lock);
	__atomic_store_n(&a->lock, 0, __ATOMIC_RELEASE);
	return ok;
}

/*
 * lnx_fast_recv queues a receive for Go (see struct lnx_fast): posting
 * then costs no call into Go, and the call that takes it is usually a poll
 * made while the message is still on its way. Go's posting cannot fail for
 * what is queued here (the endpoint is enabled while rx_on is set; errors
 * come only from the ...msg flags and bad buffers, which go to Go); a full
 * queue goes to Go too, which takes the queue first, so order holds.
 */
static ssize_t lnx_fast_recv(struct lnx_fast *f, const struct iovec *iov, void **desc, size_t count,
			     fi_addr_t src, uint64_t tag, uint64_t ignore, void *ctx, int kind)
{
	if (!__atomic_load_n(&f->rx_on, __ATOMIC_ACQUIRE) || (kind & LNX_OP_EXPLICIT) || count > 1)
		return LNX_FAST_DECLINED;
	struct lnx_gate *g = __atomic_load_n(&f->rx_gate, __ATOMIC_ACQUIRE);
	if (!g || (count && iov[0].iov_len && !iov[0].iov_base))
		return LNX_FAST_DECLINED;
	if (lnx_rearm(f, iov, desc, count, src, tag, ignore, ctx, kind))
		return 0;
	ssize_t ret = LNX_FAST_DECLINED;
	lnx_spin_lock(&f->rxq_lock);
	uint64_t t = f->rxq_tail;
	/* rx_on again under the lock: Go clears it, then takes the lock to
	 * wait out posters, before it stops taking the queue. */
	if (__atomic_load_n(&f->rx_on, __ATOMIC_ACQUIRE) &&
	    t - __atomic_load_n(&f->rxq_head, __ATOMIC_ACQUIRE) < LNX_RXQ) {
		struct lnx_rxq_entry *q = &f->rxq[t % LNX_RXQ];
		q->buf = count ? iov[0].iov_base : NULL;
		q->len = count ? iov[0].iov_len : 0;
		q->desc = count && desc ? (uintptr_t)desc[0] : 0;
		q->ctx = ctx;
		q->src = src;
		q->tag = tag;
		q->ignore = ignore;
		q->kind = ((kind & LNX_OP_TAGGED) ? LNX_RXQ_TAGGED : 0) | (count ? LNX_RXQ_IOV : 0);
		__atomic_store_n(&f->rxq_tail, t + 1, __ATOMIC_RELEASE);
		__atomic_fetch_add(&g->posts, 1, __ATOMIC_RELEASE);
		ret = 0;
	}
	lnx_spin_unlock(&f->rxq_lock);
	return ret;
}

static ssize_t do_recv(struct fid_ep *ep, const struct iovec *iov, void **desc, size_t count,
		       fi_addr_t src, uint64_t tag, uint64_t ignore, uint64_t flags, void *ctx, int kind)
{
	struct lnx_ep *e = (struct lnx_ep *)(void *)ep;
	ssize_t ret = lnx_fast_recv(e->fast, iov, desc, count, src, tag, ignore, ctx, kind);
	if (ret != LNX_FAST_DECLINED)
		return ret;
	return lnx_go_recv(e->h, (struct iovec *)iov, desc, count, src, tag, ignore, flags, ctx, kind);
}

#define ONE_IOV(buf, len) struct iovec one = { .iov_base = (void *)(buf), .iov_len = (len) }

static ssize_t msg_recv(struct fid_ep *ep, void *buf, size_t len, void *desc, fi_addr_t src, void *ctx)
{ ONE_IOV(buf, len); return do_recv(ep, &one, &desc, 1, src, 0, 0, 0, ctx, 0); }
static ssize_t msg_recvv(struct fid_ep *ep, const struct iovec *iov, void **desc, size_t count, fi_addr_t src, void *ctx)
{ return do_recv(ep, iov, desc, count, src, 0, 0, 0, ctx, 0); }
static ssize_t msg_recvmsg(struct fid_ep *ep, const struct fi_msg *m, uint64_t flags)
{ return do_recv(ep, m->msg_iov, m->desc, m->iov_count, m->addr, 0, 0, flags, m->context, LNX_OP_EXPLICIT); }
static ssize_t msg_send(struct fid_ep *ep, const void *buf, size_t len, void *desc, fi_addr_t dest, void *ctx)
{ ONE_IOV(buf, len); return do_send(ep, &one, &desc, 1, dest, 0, 0, 0, ctx, 0); }
static ssize_t msg_sendv(struct fid_ep *ep, const struct iovec *iov, void **desc, size_t count, fi_addr_t dest, void *ctx)
{ return do_send(ep, iov, desc, count, dest, 0, 0, 0, ctx, 0); }
static ssize_t msg_sendmsg(struct fid_ep *ep, const struct fi_msg *m, uint64_t flags)
{ return do_send(ep, m->msg_iov, m->desc, m->iov_count, m->addr, 0, m->data, flags, m->context, LNX_OP_EXPLICIT); }
static ssize_t msg_inject(struct fid_ep *ep, const void *buf, size_t len, fi_addr_t dest)
{ ONE_IOV(buf, len); return do_send(ep, &one, NULL, 1, dest, 0, 0, 0, NULL, LNX_OP_INJECT); }
static ssize_t msg_senddata(struct fid_ep *ep, const void *buf, size_t len, void *desc, uint64_t data, fi_addr_t dest, void *ctx)
{ ONE_IOV(buf, len); return do_send(ep, &one, &desc, 1, dest, 0, data, 0, ctx, LNX_OP_DATA); }
static ssize_t msg_injectdata(struct fid_ep *ep, const void *buf, size_t len, uint64_t data, fi_addr_t dest)
{ ONE_IOV(buf, len); return do_send(ep, &one, NULL, 1, dest, 0, data, 0, NULL, LNX_OP_INJECT | LNX_OP_DATA); }

static ssize_t tag_recv(struct fid_ep *ep, void *buf, size_t len, void *desc, fi_addr_t src, uint64_t tag, uint64_t ignore, void *ctx)
{ ONE_IOV(buf, len); return do_recv(ep, &one, &desc, 1, src, tag, ignore, 0, ctx, LNX_OP_TAGGED); }
static ssize_t tag_recvv(struct fid_ep *ep, const struct iovec *iov, void **desc, size_t count, fi_addr_t src, uint64_t tag, uint64_t ignore, void *ctx)
{ return do_recv(ep, iov, desc, count, src, tag, ignore, 0, ctx, LNX_OP_TAGGED); }
static ssize_t tag_recvmsg(struct fid_ep *ep, const struct fi_msg_tagged *m, uint64_t flags)
{ return do_recv(ep, m->msg_iov, m->desc, m->iov_count, m->addr, m->tag, m->ignore, flags, m->context, LNX_OP_TAGGED | LNX_OP_EXPLICIT); }
static ssize_t tag_send(struct fid_ep *ep, const void *buf, size_t len, void *desc, fi_addr_t dest, uint64_t tag, void *ctx)
{ ONE_IOV(buf, len); return do_send(ep, &one, &desc, 1, dest, tag, 0, 0, ctx, LNX_OP_TAGGED); }
static ssize_t tag_sendv(struct fid_ep *ep, const struct iovec *iov, void **desc, size_t count, fi_addr_t dest, uint64_t tag, void *ctx)
{ return do_send(ep, iov, desc, count, dest, tag, 0, 0, ctx, LNX_OP_TAGGED); }
static ssize_t tag_sendmsg(struct fid_ep *ep, const struct fi_msg_tagged *m, uint64_t flags)
{ return do_send(ep, m->msg_iov, m->desc, m->iov_count, m->addr, m->tag, m->data, flags, m->context, LNX_OP_TAGGED | LNX_OP_EXPLICIT); }
static ssize_t tag_inject(struct fid_ep *ep, const void *buf, size_t len, fi_addr_t dest, uint64_t tag)
{ ONE_IOV(buf, len); return do_send(ep, &one, NULL, 1, dest, tag, 0, 0, NULL, LNX_OP_TAGGED | LNX_OP_INJECT); }
static ssize_t tag_senddata(struct fid_ep *ep, const void *buf, size_t len, void *desc, uint64_t data, fi_addr_t dest, uint64_t tag, void *ctx)
{ ONE_IOV(buf, len); return do_send(ep, &one, &desc, 1, dest, tag, data, 0, ctx, LNX_OP_TAGGED | LNX_OP_DATA); }
static ssize_t tag_injectdata(struct fid_ep *ep, const void *buf, size_t len, uint64_t data, fi_addr_t dest, uint64_t tag)
{ ONE_IOV(buf, len); return do_send(ep, &one, NULL, 1, dest, tag, data, 0, NULL, LNX_OP_TAGGED | LNX_OP_INJECT | LNX_OP_DATA); }

static struct fi_ops ep_fi_ops = {
	.size = sizeof(struct fi_ops), .close = ep_close, .bind = ep_bind,
	.control = ep_control, .ops_open = nosys_ops_open, .ops_set = nosys_ops_set,
};
static struct fi_ops_ep ep_ops = {
	.size = sizeof(struct fi_ops_ep), .cancel = ep_cancel, .getopt = ep_getopt,
	.setopt = ep_setopt, .tx_ctx = ep_txctx, .rx_ctx = ep_rxctx,
	.rx_size_left = ep_rx_size_left, .tx_size_left = ep_tx_size_left,
};
static struct fi_ops_cm ep_cm_ops = {
	.size = sizeof(struct fi_ops_cm), .setname = ep_setname, .getname = ep_getname,
	.getpeer = ep_getpeer, .connect = ep_connect, .listen = ep_listen, .accept = ep_accept,
	.reject = ep_reject, .shutdown = ep_shutdown, .join = ep_join,
};
static struct fi_ops_msg ep_msg_ops = {
	.size = sizeof(struct fi_ops_msg), .recv = msg_recv, .recvv = msg_recvv, .recvmsg = msg_recvmsg,
	.send = msg_send, .sendv = msg_sendv, .sendmsg = msg_sendmsg, .inject = msg_inject,
	.senddata = msg_senddata, .injectdata = msg_injectdata,
};
static struct fi_ops_tagged ep_tagged_ops = {
	.size = sizeof(struct fi_ops_tagged), .recv = tag_recv, .recvv = tag_recvv, .recvmsg = tag_recvmsg,
	.send = tag_send, .sendv = tag_sendv, .sendmsg = tag_sendmsg, .inject = tag_inject,
	.senddata = tag_senddata, .injectdata = tag_injectdata,
};

/* One-sided operations: every RMA variant becomes one lnx_go_rma, every
 * atomic variant one lnx_go_atomic (lnx/rma.go, lnx/atomic.go). One
 * rma_iov and one ioc per operation (rma_iov_limit is 1). */
static ssize_t do_rma(struct fid_ep *ep, const struct iovec *iov, void **desc, size_t count, fi_addr_t a,
		      uint64_t addr, uint64_t key, uint64_t data, uint64_t flags, void *ctx, int kind)
{
	struct lnx_ep *e = (struct lnx_ep *)(void *)ep;
	return lnx_go_rma(e->h, (struct iovec *)iov, desc, count, a, addr, key, data, flags, ctx, kind);
}
static ssize_t do_rmamsg(struct fid_ep *ep, const struct fi_msg_rma *m, uint64_t flags, int kind)
{
	if (!m || m->rma_iov_count != 1 || !m->rma_iov)
		return -FI_EINVAL;
	return do_rma(ep, m->msg_iov, m->desc, m->iov_count, m->addr, m->rma_iov[0].addr, m->rma_iov[0].key,
		      m->data, flags, m->context, kind | LNX_OP_EXPLICIT | ((flags & FI_REMOTE_CQ_DATA) ? LNX_OP_DATA : 0));
}
static ssize_t rma_read(struct fid_ep *ep, void *buf, size_t len, void *desc, fi_addr_t a, uint64_t addr, uint64_t key, void *ctx)
{ ONE_IOV(buf, len); return do_rma(ep, &one, &desc, 1, a, addr, key, 0, 0, ctx, LNX_OP_READ); }
static ssize_t rma_readv(struct fid_ep *ep, const struct iovec *iov, void **desc, size_t count, fi_addr_t a, uint64_t addr, uint64_t key, void *ctx)
{ return do_rma(ep, iov, desc, count, a, addr, key, 0, 0, ctx, LNX_OP_READ); }
static ssize_t rma_readmsg(struct fid_ep *ep, const struct fi_msg_rma *m, uint64_t flags)
{ return do_rmamsg(ep, m, flags, LNX_OP_READ); }
static ssize_t rma_write(struct fid_ep *ep, const void *buf, size_t len, void *desc, fi_addr_t a, uint64_t addr, uint64_t key, void *ctx)
{ ONE_IOV(buf, len); return do_rma(ep, &one, &desc, 1, a, addr, key, 0, 0, ctx, 0); }
static ssize_t rma_writev(struct fid_ep *ep, const struct iovec *iov, void **desc, size_t count, fi_addr_t a, uint64_t addr, uint64_t key, void *ctx)
{ return do_rma(ep, iov, desc, count, a, addr, key, 0, 0, ctx, 0); }
static ssize_t rma_writemsg(struct fid_ep *ep, const struct fi_msg_rma *m, uint64_t flags)
{ return do_rmamsg(ep, m, flags, 0); }
static ssize_t rma_inject(struct fid_ep *ep, const void *buf, size_t len, fi_addr_t a, uint64_t addr, uint64_t key)
{ ONE_IOV(buf, len); return do_rma(ep, &one, NULL, 1, a, addr, key, 0, 0, NULL, LNX_OP_INJECT); }
static ssize_t rma_writedata(struct fid_ep *ep, const void *buf, size_t len, void *desc, uint64_t data, fi_addr_t a, uint64_t addr, uint64_t key, void *ctx)
{ ONE_IOV(buf, len); return do_rma(ep, &one, &desc, 1, a, addr, key, data, 0, ctx, LNX_OP_DATA); }
static ssize_t rma_injectdata(struct fid_ep *ep, const void *buf, size_t len, uint64_t data, fi_addr_t a, uint64_t addr, uint64_t key)
{ ONE_IOV(buf, len); return do_rma(ep, &one, NULL, 1, a, addr, key, data, 0, NULL, LNX_OP_INJECT | LNX_OP_DATA); }
static struct fi_ops_rma ep_rma_ops = {
	.size = sizeof(struct fi_ops_rma), .read = rma_read, .readv = rma_readv,
	.readmsg = rma_readmsg, .write = rma_write, .writev = rma_writev,
	.writemsg = rma_writemsg, .inject = rma_inject, .writedata = rma_writedata,
	.injectdata = rma_injectdata,
};

static ssize_t do_atomic(struct fid_ep *ep, const void *buf, size_t count, void *desc, const void *cmp, void *res,
			 fi_addr_t a, uint64_t addr, uint64_t key, enum fi_datatype dt, enum fi_op op,
			 uint64_t data, uint64_t flags, void *ctx, int kind)
{
	struct lnx_ep *e = (struct lnx_ep *)(void *)ep;
	return lnx_go_atomic(e->h, (void *)buf, count, desc, (void *)cmp, res, a, addr, key, dt, op, data, flags, ctx, kind);
}
/* The single-ioc forms of the vector and msg calls. */
#define LNX_ONE_IOC(v, n) do { if ((n) != 1 || !(v)) return -FI_EINVAL; } while (0)
static ssize_t do_atomicmsg(struct fid_ep *ep, const struct fi_msg_atomic *m, const struct fi_ioc *cmp, size_t ncmp,
			    struct fi_ioc *res, size_t nres, uint64_t flags, int kind)
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
			 cmp ? cmp[0].addr : NULL, res ? res[0].addr : NULL, m->addr, m->rma_iov[0].addr,
			 m->rma_iov[0].key, m->datatype, m->op, m->data, flags, m->context,
			 kind | LNX_OP_EXPLICIT | ((flags & FI_REMOTE_CQ_DATA) ? LNX_OP_DATA : 0));
}
static ssize_t at_write(struct fid_ep *ep, const void *buf, size_t count, void *desc, fi_addr_t a,
			uint64_t addr, uint64_t key, enum fi_datatype dt, enum fi_op op, void *ctx)
{ return do_atomic(ep, buf, count, desc, NULL, NULL, a, addr, key, dt, op, 0, 0, ctx, 0); }
static ssize_t at_writev(struct fid_ep *ep, const struct fi_ioc *iov, void **desc, size_t count, fi_addr_t a,
			 uint64_t addr, uint64_t key, enum fi_datatype dt, enum fi_op op, void *ctx)
{
	LNX_ONE_IOC(iov, count);
	return do_atomic(ep, iov[0].addr, iov[0].count, desc ? desc[0] : NULL, NULL, NULL, a, addr, key, dt, op, 0, 0, ctx, 0);
}
static ssize_t at_writemsg(struct fid_ep *ep, const struct fi_msg_atomic *m, uint64_t flags)
{ return do_atomicmsg(ep, m, NULL, 0, NULL, 0, flags, 0); }
static ssize_t at_inject(struct fid_ep *ep, const void *buf, size_t count, fi_addr_t a, uint64_t addr, uint64_t key,
			 enum fi_datatype dt, enum fi_op op)
{ return do_atomic(ep, buf, count, NULL, NULL, NULL, a, addr, key, dt, op, 0, 0, NULL, LNX_OP_INJECT); }
static ssize_t at_readwrite(struct fid_ep *ep, const void *buf, size_t count, void *desc, void *res, void *res_desc,
			    fi_addr_t a, uint64_t addr, uint64_t key, enum fi_datatype dt, enum fi_op op, void *ctx)
{ return do_atomic(ep, buf, count, desc, NULL, res, a, addr, key, dt, op, 0, 0, ctx, LNX_OP_FETCH); }
static ssize_t at_readwritev(struct fid_ep *ep, const struct fi_ioc *iov, void **desc, size_t count,
			     struct fi_ioc *resv, void **res_desc, size_t res_count, fi_addr_t a, uint64_t addr,
			     uint64_t key, enum fi_datatype dt, enum fi_op op, void *ctx)
{
	LNX_ONE_IOC(iov, count);
	LNX_ONE_IOC(resv, res_count);
	return do_atomic(ep, iov[0].addr, iov[0].count, desc ? desc[0] : NULL, NULL, resv[0].addr, a, addr, key,
			 dt, op, 0, 0, ctx, LNX_OP_FETCH);
}
static ssize_t at_readwritemsg(struct fid_ep *ep, const struct fi_msg_atomic *m, struct fi_ioc *resv,
			       void **res_desc, size_t res_count, uint64_t flags)
{ return do_atomicmsg(ep, m, NULL, 0, resv, res_count, flags, LNX_OP_FETCH); }
static ssize_t at_compwrite(struct fid_ep *ep, const void *buf, size_t count, void *desc, const void *cmp,
			    void *cmp_desc, void *res, void *res_desc, fi_addr_t a, uint64_t addr, uint64_t key,
			    enum fi_datatype dt, enum fi_op op, void *ctx)
{ return do_atomic(ep, buf, count, desc, cmp, res, a, addr, key, dt, op, 0, 0, ctx, LNX_OP_COMPARE); }
static ssize_t at_compwritev(struct fid_ep *ep, const struct fi_ioc *iov, void **desc, size_t count,
			     const struct fi_ioc *cmpv, void **cmp_desc, size_t cmp_count, struct fi_ioc *resv,
			     void **res_desc, size_t res_count, fi_addr_t a, uint64_t addr, uint64_t key,
			     enum fi_datatype dt, enum fi_op op, void *ctx)
{
	LNX_ONE_IOC(iov, count);
	LNX_ONE_IOC(cmpv, cmp_count);
	LNX_ONE_IOC(resv, res_count);
	return do_atomic(ep, iov[0].addr, iov[0].count, desc ? desc[0] : NULL, cmpv[0].addr, resv[0].addr, a, addr,
			 key, dt, op, 0, 0, ctx, LNX_OP_COMPARE);
}
static ssize_t at_compwritemsg(struct fid_ep *ep, const struct fi_msg_atomic *m, const struct fi_ioc *cmpv,
			       void **cmp_desc, size_t cmp_count, struct fi_ioc *resv, void **res_desc,
			       size_t res_count, uint64_t flags)
{ return do_atomicmsg(ep, m, cmpv, cmp_count, resv, res_count, flags, LNX_OP_COMPARE); }
static int at_valid(enum fi_datatype dt, enum fi_op op, size_t *count, int kind)
{
	if (!count)
		return -FI_EINVAL;
	return lnx_go_atomic_valid(dt, op, kind, count, NULL);
}
static int at_writevalid(struct fid_ep *ep, enum fi_datatype dt, enum fi_op op, size_t *count)
{ return at_valid(dt, op, count, 0); }
static int at_readwritevalid(struct fid_ep *ep, enum fi_datatype dt, enum fi_op op, size_t *count)
{ return at_valid(dt, op, count, LNX_OP_FETCH); }
static int at_compwritevalid(struct fid_ep *ep, enum fi_datatype dt, enum fi_op op, size_t *count)
{ return at_valid(dt, op, count, LNX_OP_COMPARE); }
static struct fi_ops_atomic ep_atomic_ops = {
	.size = sizeof(struct fi_ops_atomic), .write = at_write, .writev = at_writev, .writemsg = at_writemsg,
	.inject = at_inject, .readwrite = at_readwrite, .readwritev = at_readwritev,
	.readwritemsg = at_readwritemsg, .compwrite = at_compwrite, .compwritev = at_compwritev,
	.compwritemsg = at_compwritemsg, .writevalid = at_writevalid, .readwritevalid = at_readwritevalid,
	.compwritevalid = at_compwritevalid,
};

/*
 * lnx_map returns n zeroed bytes of their own mapping, or NULL. The fast
 * send table and the completion ring live there rather than in malloc
 * memory: the table is large and mostly never touched (its pages never
 * become resident), and neither sits in an allocator's (or ASan's)
 * quarantine after close.
 */
static void *lnx_map(size_t n)
{
	void *p = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	return p == MAP_FAILED ? NULL : p;
}

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
	e->ep.rma = &ep_rma_ops;
	e->ep.atomic = &ep_atomic_ops;
	e->ep.collective = &lnx_ep_collective_ops; /* nosys.c */
	e->h = h;
}

/* ---- address vector ----------------------------------------------------- */

/*
 * With an EQ bound (fi_av_bind), inserts are asynchronous as fi_av(3)
 * describes: the call returns 0 and the EQ gets an error entry (data: the
 * index) for each address that failed, then one FI_AV_COMPLETE event whose
 * data is the number inserted and whose context is the call's. lnx inserts
 * at once, so the events are queued before the call returns.
 */
static int av_insert_events(struct lnx_av *a, int ret, size_t count, fi_addr_t *fi_addr, void *context)
{
	struct fid_av *av = &a->av;
	if (ret < 0)
		return ret; /* the call itself was wrong: no events */
	if (fi_addr)
		for (size_t i = 0; i < count; i++)
			if (fi_addr[i] == FI_ADDR_NOTAVAIL)
				lnx_eq_post(a->eq, FI_AV_COMPLETE, NULL, 0, FI_EINVAL, &av->fid, context, i);
	struct fi_eq_entry ev = { .fid = &av->fid, .context = context, .data = (uint64_t)ret };
	return lnx_eq_post(a->eq, FI_AV_COMPLETE, &ev, sizeof(ev), 0, NULL, NULL, 0);
}

static int av_insert(struct fid_av *av, const void *addr, size_t count,
		     fi_addr_t *fi_addr, uint64_t flags, void *context)
{
	struct lnx_av *a = (struct lnx_av *)(void *)av;
	if (!a->eq) {
		if (a->event)
			return -FI_ENOEQ;
		return lnx_go_av_insert(a->h, (void *)addr, count, fi_addr, flags);
	}
	return av_insert_events(a, lnx_go_av_insert(a->h, (void *)addr, count, fi_addr, flags), count, fi_addr,
				context);
}

static int av_bind(struct fid *fid, struct fid *bfid, uint64_t flags)
{
	struct lnx_av *a = (struct lnx_av *)(void *)fid;
	struct lnx_eq *q = lnx_eq_of(bfid);
	if (!q || flags)
		return q ? -FI_EBADFLAGS : -FI_EINVAL;
	if (a->eq)
		return -FI_EALREADY;
	lnx_eq_ref(q, 1);
	a->eq = q;
	return 0;
}
/*
 * fi_av_insertsym: the addresses fi_getinfo gives for each node and
 * service without FI_SOURCE (lnx/nodesvc.go); with an EQ bound, completed
 * through it as fi_av_insert is.
 */
static int av_insertsym(struct fid_av *av, const char *node, size_t nodecnt, const char *service,
			size_t svccnt, fi_addr_t *fi_addr, uint64_t flags, void *context)
{
	struct lnx_av *a = (struct lnx_av *)(void *)av;
	if (!a->eq && a->event)
		return -FI_ENOEQ;
	int ret = lnx_go_av_insertsym(a->h, (char *)node, nodecnt, (char *)service, svccnt, fi_addr, flags);
	if (!a->eq)
		return ret;
	return av_insert_events(a, ret, ret < 0 ? 0 : nodecnt * svccnt, fi_addr, context);
}
static int av_insertsvc(struct fid_av *av, const char *node, const char *service,
			fi_addr_t *fi_addr, uint64_t flags, void *context)
{
	return av_insertsym(av, node, 1, service, 1, fi_addr, flags, context);
}
static int av_remove(struct fid_av *av, fi_addr_t *fi_addr, size_t count, uint64_t flags)
{
	return lnx_go_av_remove(LNX_H(lnx_av, av), fi_addr, count, flags);
}
static int av_lookup(struct fid_av *av, fi_addr_t fi_addr, void *addr, size_t *addrlen)
{
	if (!addrlen)
		return -FI_EINVAL;
	return lnx_go_av_lookup(LNX_H(lnx_av, av), fi_addr, addr, addrlen);
}
static const char *av_straddr(struct fid_av *av, const void *addr, char *buf, size_t *len)
{
	if (!buf || !len)
		return NULL;
	lnx_go_av_straddr((void *)addr, buf, len);
	return buf;
}
static int av_set_nosys(struct fid_av *av, struct fi_av_set_attr *attr, struct fid_av_set **s, void *c) { return -FI_ENOSYS; }

static struct fi_ops av_fi_ops = {
	.size = sizeof(struct fi_ops), .close = av_close, .bind = av_bind,
	.control = nosys_control, .ops_open = nosys_ops_open, .ops_set = nosys_ops_set,
};
static struct fi_ops_av av_ops = {
	.size = sizeof(struct fi_ops_av), .insert = av_insert, .insertsvc = av_insertsvc,
	.insertsym = av_insertsym, .remove = av_remove, .lookup = av_lookup,
	.straddr = av_straddr, .av_set = av_set_nosys,
};

struct fid_av *lnx_new_av(lnx_handle h, void *context)
{
	struct lnx_av *a = calloc(1, sizeof(*a));
	if (!a)
		return NULL;
	a->av.fid.fclass = FI_CLASS_AV;
	a->av.fid.context = context;
	a->av.fid.ops = &av_fi_ops;
	a->av.ops = &av_ops;
	a->h = h;
	return &a->av;
}

/* ---- completion queue --------------------------------------------------- */

/*
 * lnx_cq_idle answers whether a poll would find nothing, without entering
 * Go (see struct lnx_gate). Any doubt (a watch changed, Go rewriting the
 * watches, completions pending, open) means "not idle". readers lets Go
 * wait out scans before it unmaps a region the watches point into.
 */
static int lnx_cq_idle(struct lnx_gate *g)
{
	if (__atomic_load_n(&g->pending, __ATOMIC_ACQUIRE) || __atomic_load_n(&g->posts, __ATOMIC_ACQUIRE))
		return 0;
	if (g->idle >= __atomic_load_n(&g->skip_max, __ATOMIC_RELAXED))
		return 0; /* time for Go's slower duties */
	__atomic_fetch_add(&g->readers, 1, __ATOMIC_SEQ_CST);
	int idle = 0;
	uint32_t seq = __atomic_load_n(&g->seq, __ATOMIC_ACQUIRE);
	if (!__atomic_load_n(&g->open, __ATOMIC_SEQ_CST) && !(seq & 1)) {
		uint32_t n = __atomic_load_n(&g->n, __ATOMIC_ACQUIRE);
		idle = n <= LNX_GATE_WATCHES;
		for (uint32_t i = 0; idle && i < n; i++) {
			const struct lnx_gate_watch *w = &g->w[i];
			uint64_t x = __atomic_load_n((const uint64_t *)w->p, __ATOMIC_ACQUIRE);
			if ((x == w->v) == (w->eq != 0))
				idle = 0;
		}
		if (__atomic_load_n(&g->seq, __ATOMIC_ACQUIRE) != seq)
			idle = 0;
	}
	__atomic_fetch_sub(&g->readers, 1, __ATOMIC_RELEASE);
	if (idle)
		g->idle++; /* a hint only: racing threads may lose counts */
	return idle;
}

/* lnx_cring_read returns the completions C queued (fast sends, armed
 * receives), in the CQ's format. */
static ssize_t lnx_cring_read(struct lnx_cring *r, void *buf, size_t count, fi_addr_t *src)
{
	if (__atomic_load_n(&r->tail, __ATOMIC_ACQUIRE) == __atomic_load_n(&r->head, __ATOMIC_RELAXED) || !buf)
		return 0;
	lnx_spin_lock(&r->lock);
	size_t n = 0;
	for (; n < count && r->head != r->tail; n++, r->head++) {
		const typeof(r->e[0]) *x = &r->e[r->head % LNX_CRING];
		switch (r->format) {
		case FI_CQ_FORMAT_CONTEXT:
			((struct fi_cq_entry *)buf)[n] = (struct fi_cq_entry){ .op_context = x->ctx };
			break;
		case FI_CQ_FORMAT_MSG:
			((struct fi_cq_msg_entry *)buf)[n] =
				(struct fi_cq_msg_entry){ .op_context = x->ctx, .flags = x->flags, .len = x->len };
			break;
		case FI_CQ_FORMAT_DATA:
			((struct fi_cq_data_entry *)buf)[n] = (struct fi_cq_data_entry){
				.op_context = x->ctx, .flags = x->flags, .len = x->len, .buf = x->buf, .data = x->data };
			break;
		default:
			((struct fi_cq_tagged_entry *)buf)[n] = (struct fi_cq_tagged_entry){
				.op_context = x->ctx, .flags = x->flags, .len = x->len, .buf = x->buf,
				.data = x->data, .tag = x->tag };
		}
		if (src)
			src[n] = x->src;
	}
	lnx_spin_unlock(&r->lock);
	return (ssize_t)n;
}

#define LNX_ARM_GO (-1) /* a record C cannot take: Go must run */

/* lnx_arm_takes: whether the armed receive takes an eager message with
 * lnx header flags hflags, tag, size bytes, from src (a->lock held). */
static int lnx_arm_takes(const struct lnx_arm *a, uint64_t hflags, uint64_t tag, uint64_t size, uint64_t src)
{
	if (!a->on || (hflags & ~(uint64_t)(LNX_HDR_TAGGED | LNX_HDR_DATA)) || size > a->len)
		return 0;
	int tagged = (hflags & LNX_HDR_TAGGED) != 0;
	if (tagged != (int)a->tagged || (tagged && ((tag ^ a->tag) & ~a->ignore)))
		return 0;
	return a->src == FI_ADDR_UNSPEC || a->src == src;
}

/* lnx_arm_done completes the armed receive with a message already copied
 * into its buffer (a->lock and cr->lock held, room reserved). */
static void lnx_arm_done(struct lnx_arm *a, struct lnx_cring *cr, uint64_t hflags, uint64_t size, uint64_t data,
			 uint64_t tag, uint64_t src)
{
	int tagged = (hflags & LNX_HDR_TAGGED) != 0, has_data = (hflags & LNX_HDR_DATA) != 0;
	if (!a->c_armed)
		a->go_done = 1;
	__atomic_store_n(&a->on, 0, __ATOMIC_RELEASE);
	lnx_cring_put(cr, a->ctx, a->buf, FI_RECV | (tagged ? FI_TAGGED : FI_MSG) | (has_data ? FI_REMOTE_CQ_DATA : 0),
		      size, has_data ? data : 0, tag, src);
	lnx_spin_unlock(&cr->lock);
}

/* lnx_arm_take's network part (a->lock held): read the lent transport's
 * core CQ; what C cannot complete stays stashed for Go. */
static int lnx_arm_take_net(struct lnx_arm *a)
{
	void *t = (void *)a->net;
	int n = lnx_tp_peek(t);
	if (n == 0)
		return 0;
	struct lnx_tp_msg m;
	if (n != 1 || !a->on || !lnx_tp_look(t, &m) || !lnx_arm_takes(a, m.flags, m.tag, m.size, a->net_src) ||
	    !lnx_cring_reserve(a->cring))
		return LNX_ARM_GO;
	if (m.size)
		memcpy(a->buf, m.payload, m.size);
	lnx_tp_consume(t);
	lnx_arm_done(a, a->cring, m.flags, m.size, m.data, m.tag, a->net_src);
	return 1;
}

/*
 * lnx_arm_take checks the rings Go lent (struct lnx_arm) for a record.
 * It returns 1 when it completed the armed receive with one, 0 when the
 * rings hold nothing new, LNX_ARM_GO when a record needs Go (no receive
 * armed, another kind, a mismatch, a truncation, a full completion ring)
 * or Go is taking the rings back. The checks mirror lnx.Endpoint.arrive
 * and complete for the one case they cover: an eager message whose only
 * possible receive is the armed one. With a lent transport, the shm rings
 * come first (as in Go's progress), then the network core's CQ.
 */
static int lnx_arm_take(struct lnx_gate *g)
{
	if (!__atomic_load_n(&g->arm, __ATOMIC_RELAXED))
		return 0;
	/* readers: an endpoint leaving clears arm and waits for us (quiesce)
	 * before its memory goes. */
	__atomic_fetch_add(&g->readers, 1, __ATOMIC_SEQ_CST);
	struct lnx_arm *a = (struct lnx_arm *)__atomic_load_n(&g->arm, __ATOMIC_SEQ_CST);
	int ret = 0;
	if (!a || !__atomic_load_n(&a->lent, __ATOMIC_ACQUIRE))
		goto done;
	if (__atomic_exchange_n(&a->lock, 1, __ATOMIC_ACQUIRE)) {
		ret = LNX_ARM_GO;
		goto done;
	}
	if (!__atomic_load_n(&a->lent, __ATOMIC_ACQUIRE))
		goto out;
	for (uint32_t i = 0; i < a->nrings && ret == 0; i++) {
		struct lnx_arm_ring *r = &a->r[i];
		uint64_t off = r->head & r->mask;
		const struct lnx_rec *rec = (const struct lnx_rec *)(r->ring + off);
		if (__atomic_load_n(&rec->stamp, __ATOMIC_ACQUIRE) != ((r->head ^ r->salt) | 1))
			continue;
		ret = LNX_ARM_GO;
		uint64_t kf = rec->kf, hflags = kf >> 32, size = rec->size;
		uint64_t need = (LNX_REC_HDR + size + LNX_REC_LINE - 1) & ~(uint64_t)(LNX_REC_LINE - 1);
		if ((kf & 0xff) != LNX_REC_EAGER || size > r->eager_max || off + need > r->size)
			break; /* another kind, or corruption Go reports */
		if (!lnx_arm_takes(a, hflags, rec->tag, size, r->src) || !lnx_cring_reserve(a->cring))
			break;
		if (size)
			memcpy(a->buf, (const char *)rec + LNX_REC_HDR, size);
		r->head += need;
		__atomic_store_n((uint64_t *)r->fwd_head, r->head, __ATOMIC_RELEASE);
		lnx_arm_done(a, a->cring, hflags, size, rec->data, rec->tag, r->src);
		ret = 1;
	}
	if (ret == 0 && a->net)
		ret = lnx_arm_take_net(a);
out:
	__atomic_store_n(&a->lock, 0, __ATOMIC_RELEASE);
done:
	__atomic_fetch_sub(&g->readers, 1, __ATOMIC_RELEASE);
	return ret;
}

static ssize_t cq_read_common(struct fid_cq *cq, void *buf, size_t count, fi_addr_t *src, int timeout)
{
	struct lnx_cq *c = (struct lnx_cq *)(void *)cq;
	if (!count) {
		/* Progress only (Go runs it); completions C queued count too. */
		ssize_t r = lnx_go_cq_read(c->h, buf, 0, src, 0);
		if (r == -FI_EAGAIN && __atomic_load_n(&c->cring->tail, __ATOMIC_ACQUIRE) !=
					       __atomic_load_n(&c->cring->head, __ATOMIC_RELAXED))
			return 0;
		return r;
	}
	ssize_t n = lnx_cring_read(c->cring, buf, count, src);
	if (n)
		return n;
	if (!timeout) {
		int a = lnx_arm_take(&c->gate);
		if (a > 0)
			return lnx_cring_read(c->cring, buf, count, src);
		if (a == 0 && lnx_cq_idle(&c->gate))
			return -FI_EAGAIN;
		return lnx_go_cq_read(c->h, buf, count, src, 0);
	}
	/* sread: Go waits, and returns when C's ring has completions too. */
	ssize_t r = lnx_go_cq_read(c->h, buf, count, src, timeout);
	if (r == -FI_EAGAIN && (n = lnx_cring_read(c->cring, buf, count, src)))
		return n;
	return r;
}

static ssize_t cq_read(struct fid_cq *cq, void *buf, size_t count)
{
	return cq_read_common(cq, buf, count, NULL, 0);
}
static ssize_t cq_readfrom(struct fid_cq *cq, void *buf, size_t count, fi_addr_t *src)
{
	return cq_read_common(cq, buf, count, src, 0);
}
static ssize_t cq_readerr(struct fid_cq *cq, struct fi_cq_err_entry *buf, uint64_t flags)
{
	if (!buf)
		return -FI_EINVAL;
	return lnx_go_cq_readerr(LNX_H(lnx_cq, cq), buf, flags);
}
static ssize_t cq_sread(struct fid_cq *cq, void *buf, size_t count, const void *cond, int timeout)
{
	return cq_read_common(cq, buf, count, NULL, timeout < 0 ? -1 : timeout + 1);
}
static ssize_t cq_sreadfrom(struct fid_cq *cq, void *buf, size_t count, fi_addr_t *src, const void *cond, int timeout)
{
	return cq_read_common(cq, buf, count, src, timeout < 0 ? -1 : timeout + 1);
}
static int cq_signal(struct fid_cq *cq) { return lnx_go_cq_signal(LNX_H(lnx_cq, cq)); }
static const char *cq_strerror(struct fid_cq *cq, int prov_errno, const void *err_data, char *buf, size_t len)
{
	const char *s = fi_strerror(prov_errno < 0 ? -prov_errno : prov_errno);
	if (buf && len) {
		strncpy(buf, s, len - 1);
		buf[len - 1] = '\0';
		return buf;
	}
	return s;
}

static int cq_control(struct fid *fid, int command, void *arg) { return lnx_wait_control(LNX_H(lnx_cq, fid), command, arg); }

static struct fi_ops cq_fi_ops = {
	.size = sizeof(struct fi_ops), .close = cq_close, .bind = nosys_bind,
	.control = cq_control, .ops_open = nosys_ops_open, .ops_set = nosys_ops_set,
};
static struct fi_ops_cq cq_ops = {
	.size = sizeof(struct fi_ops_cq), .read = cq_read, .readfrom = cq_readfrom,
	.readerr = cq_readerr, .sread = cq_sread, .sreadfrom = cq_sreadfrom,
	.signal = cq_signal, .strerror = cq_strerror,
};

_Static_assert(sizeof(struct lnx_cring) <= 16384, "struct lnx_cring fits four pages");

struct lnx_cq *lnx_alloc_cq(void)
{
	struct lnx_cq *c = calloc(1, sizeof(*c));
	if (c && !(c->cring = lnx_map(sizeof(*c->cring)))) {
		free(c);
		c = NULL;
	}
	return c;
}

void lnx_free_cq(struct lnx_cq *c)
{
	munmap(c->cring, sizeof(*c->cring));
	free(c);
}

void lnx_init_cq(struct lnx_cq *c, lnx_handle h, void *context)
{
	c->cq.fid.fclass = FI_CLASS_CQ;
	c->cq.fid.context = context;
	c->cq.fid.ops = &cq_fi_ops;
	c->cq.ops = &cq_ops;
	c->h = h;
}

/* ---- counter ------------------------------------------------------------ */

static uint64_t cntr_read(struct fid_cntr *c) { return lnx_go_cntr_read(LNX_H(lnx_cntr, c), 0); }
static uint64_t cntr_readerr(struct fid_cntr *c) { return lnx_go_cntr_read(LNX_H(lnx_cntr, c), 1); }
static int cntr_add(struct fid_cntr *c, uint64_t v) { return lnx_go_cntr_update(LNX_H(lnx_cntr, c), v, 0, 0); }
static int cntr_set(struct fid_cntr *c, uint64_t v) { return lnx_go_cntr_update(LNX_H(lnx_cntr, c), v, 1, 0); }
static int cntr_adderr(struct fid_cntr *c, uint64_t v) { return lnx_go_cntr_update(LNX_H(lnx_cntr, c), v, 0, 1); }
static int cntr_seterr(struct fid_cntr *c, uint64_t v) { return lnx_go_cntr_update(LNX_H(lnx_cntr, c), v, 1, 1); }
static int cntr_wait(struct fid_cntr *c, uint64_t threshold, int timeout)
{ return lnx_go_cntr_wait(LNX_H(lnx_cntr, c), threshold, timeout); }

static int cntr_control(struct fid *fid, int command, void *arg) { return lnx_wait_control(LNX_H(lnx_cntr, fid), command, arg); }

static struct fi_ops cntr_fi_ops = {
	.size = sizeof(struct fi_ops), .close = cntr_close, .bind = nosys_bind,
	.control = cntr_control, .ops_open = nosys_ops_open, .ops_set = nosys_ops_set,
};
static struct fi_ops_cntr cntr_ops = {
	.size = sizeof(struct fi_ops_cntr), .read = cntr_read, .readerr = cntr_readerr,
	.add = cntr_add, .set = cntr_set, .wait = cntr_wait, .adderr = cntr_adderr,
	.seterr = cntr_seterr,
};

struct fid_cntr *lnx_new_cntr(lnx_handle h, void *context)
{
	struct lnx_cntr *c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	c->cntr.fid.fclass = FI_CLASS_CNTR;
	c->cntr.fid.context = context;
	c->cntr.fid.ops = &cntr_fi_ops;
	c->cntr.ops = &cntr_ops;
	c->h = h;
	return &c->cntr;
}
