/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * The domain fid (fi_domain): opening AVs, CQs, counters, endpoints and poll
 * sets, and fi_query_atomic. Memory registration is mr.c's.
 */
#include "lnx_capi.h"
#include "lnx_internal.h"
#include "lnx_wait.h"
#include "lnx_ops.h"
#include "lnx_rma.h"

static int domain_close(struct fid *fid)
{
	struct lnx_eq *q = ((struct lnx_domain *)(void *)fid)->eq;
	int ret = lnx_close_common(fid, LNX_H(lnx_domain, fid));
	if (ret == 0 && q)
		lnx_eq_ref(q, -1);
	return ret;
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

static int domain_av_open(struct fid_domain *domain, struct fi_av_attr *attr, struct fid_av **av,
			  void *context)
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

/*
 * lnx_domain_waits ends a domain's serial mode when a CQ or counter with a
 * wait object opens: waiting on it may start Go's watcher goroutine
 * (lnx/wait.go), which drives progress beside the application's thread.
 * The application serializes this call with every other in the domain, so
 * no fast path is inside a section it left unlocked, and no lock word is
 * held: the next call locks.
 */
static void lnx_domain_waits(struct lnx_domain *d, enum fi_wait_obj w)
{
	if (w == FI_WAIT_NONE || !d->serial)
		return;
	__atomic_store_n(&d->serial, 0, __ATOMIC_RELAXED);
	lnx_log(FI_LOG_INFO, FI_LOG_DOMAIN,
		"FI_THREAD_DOMAIN domain: a CQ or counter with a wait object opened; "
		"the fast paths lock from now on");
}

static int domain_cq_open(struct fid_domain *domain, struct fi_cq_attr *attr, struct fid_cq **cq,
			  void *context)
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
	lnx_domain_waits((struct lnx_domain *)(void *)domain, attr ? attr->wait_obj : FI_WAIT_NONE);
	c->serial = &((struct lnx_domain *)(void *)domain)->serial;
	c->cring->format =
		attr && attr->format != FI_CQ_FORMAT_UNSPEC ? attr->format : FI_CQ_FORMAT_CONTEXT;
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
	lnx_domain_waits((struct lnx_domain *)(void *)domain, attr ? attr->wait_obj : FI_WAIT_NONE);
	*cntr = lnx_new_cntr(h, context);
	if (!*cntr) {
		lnx_go_close(h);
		return -FI_ENOMEM;
	}
	return 0;
}

static int domain_endpoint(struct fid_domain *domain, struct fi_info *info, struct fid_ep **ep,
			   void *context)
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
	e->serial = &((struct lnx_domain *)(void *)domain)->serial;
	*ep = &e->ep;
	return 0;
}

static int domain_endpoint2(struct fid_domain *domain, struct fi_info *info, struct fid_ep **ep,
			    uint64_t flags, void *context)
{
	if (flags)
		return -FI_EBADFLAGS;
	return domain_endpoint(domain, info, ep, context);
}

static int domain_sep(struct fid_domain *d, struct fi_info *i, struct fid_ep **e, void *c)
{
	return -FI_ENOSYS;
}
static int domain_poll(struct fid_domain *d, struct fi_poll_attr *a, struct fid_poll **p)
{
	return lnx_poll_open(d, a, p);
}
static int domain_stx(struct fid_domain *d, struct fi_tx_attr *a, struct fid_stx **s, void *c)
{
	return -FI_ENOSYS;
}
static int domain_srx(struct fid_domain *d, struct fi_rx_attr *a, struct fid_ep **r, void *c)
{
	return -FI_ENOSYS;
}
/* fi_query_atomic: FI_FETCH_ATOMIC / FI_COMPARE_ATOMIC pick the call. */
static int domain_qatomic(struct fid_domain *d, enum fi_datatype dt, enum fi_op op,
			  struct fi_atomic_attr *a, uint64_t f)
{
	if (!a || (f & FI_FETCH_ATOMIC && f & FI_COMPARE_ATOMIC))
		return -FI_EINVAL;
	size_t size = 0;
	int kind = (f & FI_COMPARE_ATOMIC) ? LNX_OP_COMPARE :
		   (f & FI_FETCH_ATOMIC)   ? LNX_OP_FETCH :
					     0;
	int ret = lnx_go_atomic_valid(dt, op, kind, &a->count, &size);
	if (ret == 0)
		a->size = size;
	return ret;
}
static int domain_qcoll(struct fid_domain *d, enum fi_collective_op c, struct fi_collective_attr *a,
			uint64_t f)
{
	return -FI_EOPNOTSUPP;
}

static struct fi_ops domain_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = domain_close,
	.bind = domain_bind,
	.control = nosys_control,
	.ops_open = nosys_ops_open,
	.ops_set = nosys_ops_set,
};
static struct fi_ops_domain domain_ops = {
	.size = sizeof(struct fi_ops_domain),
	.av_open = domain_av_open,
	.cq_open = domain_cq_open,
	.endpoint = domain_endpoint,
	.scalable_ep = domain_sep,
	.cntr_open = domain_cntr_open,
	.poll_open = domain_poll,
	.stx_ctx = domain_stx,
	.srx_ctx = domain_srx,
	.query_atomic = domain_qatomic,
	.query_collective = domain_qcoll,
	.endpoint2 = domain_endpoint2,
};

struct fid_domain *lnx_new_domain(lnx_handle h, struct fid_fabric *fabric, void *context,
				  int serial)
{
	struct lnx_domain *d = calloc(1, sizeof(*d));
	if (!d)
		return NULL;
	d->dom.fid.fclass = FI_CLASS_DOMAIN;
	d->dom.fid.context = context;
	d->dom.fid.ops = &domain_fi_ops;
	d->dom.ops = &domain_ops;
	d->dom.mr = &lnx_domain_mr_ops;
	d->h = h;
	d->serial = serial != 0;
	if (serial)
		lnx_log(FI_LOG_INFO, FI_LOG_DOMAIN,
			"FI_THREAD_DOMAIN domain: the fast paths take no locks");
	return &d->dom;
}
