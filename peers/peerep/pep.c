/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * The owner side of a core driven through the peer API (lnx_pep.h): the
 * peer SRX and peer CQ lnx gives the core, whose callbacks call Go
 * (peers/peerep/exports.go), and the calls Go makes into the core. Every
 * callback runs on the thread that called into the core, inside lnx's own
 * calls (docs/peer-api.md), with the lnx endpoint locked by Go.
 */
#include <stdlib.h>
#include <string.h>
#include "lnx_pep.h"
#include "lnx_pep_lend.h"
#include "_cgo_export.h"

static struct lnx_pep *pep_of_srx(uintptr_t srx)
{
	return (struct lnx_pep *)srx;
}

/* lnx_zero16 zeroes n bytes at p (n a multiple of 8) with 16-byte
 * stores the compiler unrolls: a memset of a constant 100-200 bytes
 * becomes rep stos, whose start-up cost was two of them per message
 * received, the most of any instruction of lnx's receive path in a
 * small-message stream. */
typedef uint64_t lnx_v2u64 __attribute__((vector_size(16), may_alias, aligned(8)));
static inline void lnx_zero16(void *p, size_t n)
{
	lnx_v2u64 *v = p;
#pragma GCC unroll 16
	for (size_t i = 0; i < n / 16; i++)
		v[i] = (lnx_v2u64){ 0, 0 };
	if (n % 16)
		*(uint64_t *)(void *)((char *)p + n - 8) = 0;
}

/* An operation context, zeroed past the core's scratch (ctx): one kept
 * (lnx_pep.free_c) or a new one. */
static struct lnx_pctx *pctx_get(struct lnx_pep *p)
{
	struct lnx_pctx *c = p->free_c;
	if (!c)
		return calloc(1, sizeof(*c));
	p->free_c = c->s_next;
	p->n_free_c--;
	_Static_assert(offsetof(struct lnx_pctx, id) == sizeof(struct fi_context2),
		       "lnx_pctx: ctx first, then the fields zeroed");
	_Static_assert(sizeof(struct lnx_pctx) % 8 == 0, "lnx_pctx: whole words");
	lnx_zero16(&c->id, sizeof(*c) - offsetof(struct lnx_pctx, id));
	return c;
}

static void pctx_put(struct lnx_pep *p, struct lnx_pctx *c)
{
	if (p->n_free_c >= p->keep) {
		free(c);
		return;
	}
	c->s_next = p->free_c;
	p->free_c = c;
	p->n_free_c++;
}

/* An rx entry with its fid_peer_rx_entry and state zeroed (its iov and
 * desc are read only up to the count the owner sets). */
static struct lnx_pentry *pentry_get(struct lnx_pep *p)
{
	struct lnx_pentry *e = p->free_e;
	if (!e)
		return calloc(1, sizeof(*e));
	p->free_e = e->stash_next;
	p->n_free_e--;
	_Static_assert(sizeof(e->pe) % 8 == 0, "rx entry: whole words");
	lnx_zero16(&e->pe, sizeof(e->pe));
	e->queued = e->dropped = 0;
	e->stash_next = NULL;
	e->stash_tagged = 0;
	return e;
}

static void pentry_put(struct lnx_pep *p, struct lnx_pentry *e)
{
	if (p->n_free_e >= p->keep) {
		free(e);
		return;
	}
	e->stash_next = p->free_e;
	p->free_e = e;
	p->n_free_e++;
}

/* get_* while lent (lnx_pep_take): C matches the message to an armed
 * receive if Go would have: nothing is left to Go before it, its sender is
 * known, and the earliest armed receive that takes it takes it whole. Of
 * any size: a message over the inject size (shm's CMA copy, rxm's
 * rendezvous read) may complete after this poll, into the ring of a later
 * one or through Go (WriteC), as Go's own matched receives do; c_pending
 * counts those in the core meanwhile. Matched here, it is never queued
 * and started later, which for rxm would need lnx's check that its sender
 * is still there (lnx/core_peer.go senderGone), and a round through Go.
 * Anything else is left to Go, which adopts it in order
 * (lnx_pep_stash_pop) once it takes the arm back. */
static int pep_get_lent(struct lnx_pep *p, int tagged, const struct lnx_peer_match_attr *a,
			struct lnx_pentry *e)
{
	struct lnx_pctx *c;
	uint64_t src;
	if (p->stash || a->addr >= LNX_PEP_SRCS || (src = p->src[a->addr]) == LNX_PEP_NOSRC ||
	    !(c = pctx_get(p)))
		goto stash;
	if (p->ops->claim(p->arm, tagged, e->pe.tag, src, a->msg_size, &c->c_ctx, &c->c_buf,
			  &c->c_len) < 0) {
		pctx_put(p, c);
		goto stash;
	}
	c->c_recv = 1;
	c->c_src = src;
	p->c_pending++;
	c->entry = e;
	e->iov[0].iov_base = c->c_buf;
	e->iov[0].iov_len = c->c_len;
	e->desc[0] = NULL;
	e->pe.count = c->c_buf || c->c_len ? 1 : 0;
	e->pe.context = (uintptr_t)c;
	e->pe.flags |= FI_COMPLETION;
	return 0;
stash:
	e->stash_tagged = tagged;
	e->stash_next = NULL;
	*p->stash_end = e;
	p->stash_end = &e->stash_next;
	return -FI_ENOENT;
}

static int pep_get(struct lnx_pep *p, int tagged, const struct lnx_peer_match_attr *a,
		   struct lnx_pentry **out)
{
	struct lnx_pentry *e = pentry_get(p);
	if (!e)
		return -FI_ENOMEM;
	e->pe.srx = (uintptr_t)&p->srx;
	e->pe.addr = a->addr;
	e->pe.msg_size = a->msg_size;
	e->pe.tag = tagged ? a->tag : 0;
	e->pe.flags = FI_RECV | (tagged ? FI_TAGGED : FI_MSG);
	e->pe.iov = (uintptr_t)e->iov;
	e->pe.desc = (uintptr_t)e->desc;
	*out = e;
	if (p->arm) {
		p->c_events++;
		return pep_get_lent(p, tagged, a, e);
	}
	if (lnxPepGet(p->handle, tagged, a->addr, a->msg_size, e->pe.tag, e) == 0)
		return 0;
	return -FI_ENOENT;
}

static int own_get_msg(uintptr_t srx, struct lnx_peer_match_attr *a, struct lnx_pentry **entry)
{
	return pep_get(pep_of_srx(srx), 0, a, entry);
}

static int own_get_tag(uintptr_t srx, struct lnx_peer_match_attr *a, struct lnx_pentry **entry)
{
	return pep_get(pep_of_srx(srx), 1, a, entry);
}

static int own_queue(struct lnx_pentry *e)
{
	struct lnx_pep *p = pep_of_srx(e->pe.srx);
	e->queued = 1;
	if (p->arm)
		return 0; /* a message left to Go: Go takes it up later */
	return lnxPepQueued(p->handle, e);
}

/* The core's AV grew (2.1 calls this inside fi_av_insert): the core can
 * now name the sender of a message it queued from an unknown one. Go asks
 * (lnx_pep_entry_addr) once it has mapped the new core fi_addrs itself;
 * the entries stay the core's to read until started or discarded. */
static void own_foreach_unspec_addr(uintptr_t srx, uint64_t (*get_addr)(struct lnx_pentry *))
{
	pep_of_srx(srx)->get_addr = get_addr;
}

uint64_t lnx_pep_entry_addr(struct lnx_pep *p, struct lnx_pentry *e)
{
	if (e->pe.addr == FI_ADDR_NOTAVAIL && p->get_addr)
		e->pe.addr = p->get_addr(e);
	return e->pe.addr;
}

static struct lnx_pcomp *comp_slot(struct lnx_pep *p);
static void pep_comp_c(struct lnx_pep *p, struct lnx_pcomp *w, struct lnx_pctx *c);

/* The core is done with an entry. Usually it wrote the receive's
 * completion first (which cleared pe.context). An entry still linked in
 * a list of the core's (its next/prev, which lnx never uses) is unlinked
 * first, and a receive bound to it fails with -FI_ECONNABORTED (the core
 * wrote no completion); an entry Go holds as unexpected is only marked.
 * (2.1 rxm_close_conn's loop over its SAR list calls free_entry through
 * rxm's own records, not owner entries: lnx keeps rxm's SAR off,
 * docs/peer-api.md.) */
static void own_free_entry(struct lnx_pentry *e)
{
	struct lnx_pep *p = pep_of_srx(e->pe.srx);
	uintptr_t *next = (uintptr_t *)e->pe.next, *prev = (uintptr_t *)e->pe.prev;
	if (next && prev && next[1] == (uintptr_t)e && prev[0] == (uintptr_t)e) {
		prev[0] = (uintptr_t)next;
		next[1] = (uintptr_t)prev;
	}
	e->pe.next = e->pe.prev = 0;
	struct lnx_pctx *c = (struct lnx_pctx *)e->pe.context;
	if (c) {
		struct lnx_pcomp *w = comp_slot(p);
		*w = (struct lnx_pcomp){ .id = c->id,
					 .flags = e->pe.flags & (FI_RECV | FI_TAGGED | FI_MSG),
					 .tag = e->pe.tag,
					 .err = FI_ECONNABORTED };
		pep_comp_c(p, w, c);
		e->pe.context = 0;
		pctx_put(p, c);
	}
	if (e->queued) {
		e->dropped = 1;
		return;
	}
	pentry_put(p, e);
}

/* Appends a completion for Go (drained after the call into the core);
 * a full batch is drained at once, except while C polls the core (Go
 * must not run then): the batch grows into p->more, which Go drains
 * after it (out of memory, the completion is lost). */
static struct lnx_pcomp *comp_slot(struct lnx_pep *p)
{
	static struct lnx_pcomp lost;
	if (p->ncomp < LNX_PEP_COMPS)
		return &p->comps[p->ncomp++];
	if (!p->arm) {
		lnxPepDrain(p->handle);
		return &p->comps[p->ncomp++];
	}
	if (p->nmore == p->cmore) {
		uint32_t n = p->cmore ? 2 * p->cmore : LNX_PEP_COMPS;
		struct lnx_pcomp *m = realloc(p->more, n * sizeof(*m));
		if (!m)
			return &lost;
		p->more = m;
		p->cmore = n;
	}
	return &p->more[p->nmore++];
}

/* A send C made joins (link) or leaves (unlink) the list of those Go has
 * not adopted (lnx_pep.csends). */
static void csend_link(struct lnx_pep *p, struct lnx_pctx *c)
{
	c->s_next = NULL;
	c->s_pprev = p->csends_end;
	*p->csends_end = c;
	p->csends_end = &c->s_next;
	p->c_sends++;
}

static void csend_unlink(struct lnx_pep *p, struct lnx_pctx *c)
{
	if (!c->s_pprev)
		return; /* adopted by Go, or never linked */
	*c->s_pprev = c->s_next;
	if (c->s_next)
		c->s_next->s_pprev = c->s_pprev;
	else
		p->csends_end = c->s_pprev;
	c->s_next = NULL;
	c->s_pprev = NULL;
	p->c_sends--;
}

/* pep_comp_c adds to w what Go needs to complete receive or send c that C
 * matched or made (lnx_pep_lend.h), if it is one. */
static void pep_comp_c(struct lnx_pep *p, struct lnx_pcomp *w, struct lnx_pctx *c)
{
	if (c->c_send) {
		csend_unlink(p, c);
		w->c_send = c->s_cq ? 2 : 1;
		w->c_ctx = (uintptr_t)c->s_ctx;
		w->flags = c->s_flags;
		return;
	}
	if (!c->c_recv)
		return;
	p->c_pending--;
	w->c_recv = 1;
	w->c_ctx = (uintptr_t)c->c_ctx;
	w->c_buf = (uintptr_t)c->c_buf;
	w->c_len = c->c_len;
	w->src = c->c_src;
}

static ssize_t own_cq_write(struct lnx_peer_cq *cq, void *context, uint64_t flags, size_t len,
			    void *buf, uint64_t data, uint64_t tag, uint64_t src)
{
	struct lnx_pep *p = (struct lnx_pep *)((char *)cq - offsetof(struct lnx_pep, pcq));
	struct lnx_pctx *c = context;
	struct lnx_pcomp *w;
	(void)buf;
	if (p->arm)
		p->c_events++;
	if (!c)
		return 0;
	if (c->entry)
		c->entry->pe.context = 0;
	if (c->c_send && !c->id) {
		/* A send C made that Go has not adopted: done here unless its
		 * completion is wanted and cannot go into the ring (outside
		 * C's poll and send, inside an inject whose caller holds the
		 * ring's lock, or the ring full). */
		csend_unlink(p, c);
		if (!c->s_cq || (p->arm && !p->sending &&
				 p->ops->put_send(p->arm, p->serial, c->s_ctx, c->s_flags))) {
			p->took += c->s_cq;
			pctx_put(p, c);
			return 0;
		}
	}
	if (c->c_recv && p->arm && !p->sending) {
		/* A receive C matched, completed inside C's poll (not inside
		 * C's send, which may hold the CQ ring's lock already: Go
		 * writes that one). */
		uint64_t f = flags & (FI_RECV | FI_TAGGED | FI_MSG | FI_REMOTE_CQ_DATA);
		if (p->ops->put(p->arm, p->serial, c->c_ctx, c->c_buf, f, len,
				f & FI_REMOTE_CQ_DATA ? data : 0, f & FI_TAGGED ? tag : 0,
				c->c_src)) {
			p->took++;
			p->c_pending--;
			pctx_put(p, c);
			return 0;
		}
	}
	w = comp_slot(p);
	_Static_assert(sizeof(*w) % 8 == 0, "lnx_pcomp: whole words");
	lnx_zero16(w, sizeof(*w)); /* not a compound literal: rep stos */
	w->id = c->id;
	w->flags = flags;
	w->len = len;
	w->data = data;
	w->tag = tag;
	w->src = src;
	pep_comp_c(p, w, c);
	free(c->copy);
	pctx_put(p, c);
	return 0;
}

static ssize_t own_cq_writeerr(struct lnx_peer_cq *cq, const struct fi_cq_err_entry *err)
{
	struct lnx_pep *p = (struct lnx_pep *)((char *)cq - offsetof(struct lnx_pep, pcq));
	struct lnx_pctx *c = err->op_context;
	struct lnx_pcomp *w;
	if (p->arm)
		p->c_events++;
	if (!c)
		return 0;
	w = comp_slot(p);
	if (c->entry)
		c->entry->pe.context = 0;
	*w = (struct lnx_pcomp){ .id = c->id,
				 .flags = err->flags,
				 .len = err->len,
				 .data = err->data,
				 .tag = err->tag,
				 .olen = err->olen,
				 .err = err->err ? err->err : FI_EIO,
				 .prov_err = err->prov_errno };
	pep_comp_c(p, w, c);
	free(c->copy);
	pctx_put(p, c);
	return 0;
}

static int own_close(struct fid *fid)
{
	(void)fid;
	return 0;
}

static int own_bind(struct fid *fid, struct fid *bfid, uint64_t flags)
{
	(void)fid;
	(void)bfid;
	(void)flags;
	return -FI_ENOSYS;
}

static int own_control(struct fid *fid, int command, void *arg)
{
	(void)fid;
	(void)command;
	(void)arg;
	return -FI_ENOSYS;
}

static int own_ops_open(struct fid *fid, const char *name, uint64_t flags, void **ops, void *ctx)
{
	(void)fid;
	(void)name;
	(void)flags;
	(void)ops;
	(void)ctx;
	return -FI_ENOSYS;
}

int lnx_pep_close(struct lnx_pep *p)
{
	int ret = 0, r;
	if (!p)
		return 0;
	if (p->ep && (r = fi_close(&p->ep->fid)) && !ret)
		ret = r;
	if (p->srx_ep && (r = fi_close(&p->srx_ep->fid)) && !ret)
		ret = r;
	if (p->cq && (r = fi_close(&p->cq->fid)) && !ret)
		ret = r;
	if (p->av && (r = fi_close(&p->av->fid)) && !ret)
		ret = r;
	for (struct lnx_pentry *e = p->stash, *n; e; e = n) {
		n = e->stash_next;
		free((void *)e->pe.context);
		free(e);
	}
	for (struct lnx_pctx *c = p->csends, *n; c; c = n) {
		n = c->s_next;
		free(c);
	}
	for (struct lnx_pentry *e = p->free_e, *n; e; e = n) {
		n = e->stash_next;
		free(e);
	}
	for (struct lnx_pctx *c = p->free_c, *n; c; c = n) {
		n = c->s_next;
		free(c);
	}
	free(p->more);
	free(p);
	return ret;
}

/* Fills in the peer SRX and peer CQ the owner hands the core: their fids
 * and the owner's callbacks. */
void lnx_pep_init_owner(struct lnx_pep *p)
{
	p->fid_ops = (struct fi_ops){ .size = sizeof(struct fi_ops),
				      .close = own_close,
				      .bind = own_bind,
				      .control = own_control,
				      .ops_open = own_ops_open };
	p->srx_ops = (struct lnx_peer_srx_owner_v2){
		.size = sizeof(p->srx_ops),
		.get_msg = (uintptr_t)own_get_msg,
		.get_tag = (uintptr_t)own_get_tag,
		.queue_msg = (uintptr_t)own_queue,
		.queue_tag = (uintptr_t)own_queue,
		.foreach_unspec_addr = (uintptr_t)own_foreach_unspec_addr,
		.free_entry = (uintptr_t)own_free_entry,
	};
	p->cq_ops = (struct lnx_peer_cq_owner){ .size = sizeof(p->cq_ops),
						.write = (uintptr_t)own_cq_write,
						.writeerr = (uintptr_t)own_cq_writeerr };
	p->pcq.fid.fclass = LNX_FI_CLASS_PEER_CQ;
	p->pcq.fid.ops = (uintptr_t)&p->fid_ops;
	p->pcq.owner_ops = (uintptr_t)&p->cq_ops;
	p->srx.ep_fid.fid.fclass = LNX_FI_CLASS_PEER_SRX;
	p->srx.ep_fid.fid.ops = (uintptr_t)&p->fid_ops;
	p->srx.owner_ops = (uintptr_t)&p->srx_ops;
}

/* Opens the core endpoint with the owner's peer CQ and peer SRX. *stage
 * says which step failed: 1 AV, 2 peer CQ, 3 endpoint, 4 SRX (5: the core
 * returned success but ignored FI_PEER), 6 enable. */
struct lnx_pep *lnx_pep_open(struct fid_domain *dom, struct fi_info *info, const void *src,
			     size_t srclen, uintptr_t handle, int *ret, int *stage)
{
	struct fi_info *bound = NULL;
	struct fi_av_attr av_attr = { .type = FI_AV_TABLE };
	struct fi_cq_attr cq_attr = { .format = FI_CQ_FORMAT_TAGGED, .flags = LNX_FI_PEER };
	struct fi_rx_attr rx_attr = { .op_flags = LNX_FI_PEER };
	struct lnx_peer_cq_context cq_ctx = { .size = sizeof(cq_ctx) };
	struct lnx_peer_srx_context srx_ctx = { .size = sizeof(srx_ctx) };
	struct lnx_pep *p = calloc(1, sizeof(*p));

	*ret = -FI_ENOMEM;
	*stage = 0;
	if (!p)
		return NULL;
	p->handle = handle;
	p->check_bufs = 1;
	p->keep = 64;
	p->stash_end = &p->stash;
	p->csends_end = &p->csends;
	for (int i = 0; i < LNX_PEP_SRCS; i++)
		p->src[i] = LNX_PEP_NOSRC;
	for (int i = 0; i < LNX_PEP_DSTS; i++)
		p->dst[i] = LNX_PEP_NOSRC;
	p->inject = info->tx_attr ? info->tx_attr->inject_size : 0;
	p->tx_iov = info->tx_attr ? info->tx_attr->iov_limit : 1;
	p->cq_data = info->domain_attr ? info->domain_attr->cq_data_size : 0;
	lnx_pep_init_owner(p);
	cq_ctx.cq = (uintptr_t)&p->pcq;
	srx_ctx.srx = (uintptr_t)&p->srx;

	*stage = 1;
	if ((*ret = fi_av_open(dom, &av_attr, &p->av, NULL)))
		goto fail;
	*stage = 2;
	if ((*ret = fi_cq_open(dom, &cq_attr, &p->cq, &cq_ctx)))
		goto fail;
	*stage = 3;
	if (src) {
		/* Bind to src (fi_getinfo's node/service with FI_SOURCE). */
		*ret = -FI_ENOMEM;
		bound = fi_dupinfo(info);
		if (!bound)
			goto fail;
		free(bound->src_addr);
		bound->src_addr = malloc(srclen);
		if (!bound->src_addr)
			goto fail;
		memcpy(bound->src_addr, src, srclen);
		bound->src_addrlen = srclen;
		info = bound;
	}
	if ((*ret = fi_endpoint(dom, info, &p->ep, NULL)))
		goto fail;
	if ((*ret = fi_ep_bind(p->ep, &p->av->fid, 0)))
		goto fail;
	if ((*ret = fi_ep_bind(p->ep, &p->cq->fid, FI_TRANSMIT | FI_RECV)))
		goto fail;
	*stage = 4;
	if ((*ret = fi_srx_context(dom, &rx_attr, &p->srx_ep, &srx_ctx)))
		goto fail;
	if (!p->srx.peer_ops || !p->srx_ep) {
		/* 2.1 tcp: an SRX of its own, FI_PEER ignored (1.17 shm's
		 * NULL srx_ep is not taken here: 1.17 stays on the adapter). */
		*stage = 5;
		*ret = -FI_ENOSYS;
		goto fail;
	}
	if ((*ret = fi_ep_bind(p->ep, &p->srx_ep->fid, 0)))
		goto fail;
	*stage = 6;
	if ((*ret = fi_enable(p->ep)))
		goto fail;
	*ret = 0;
	fi_freeinfo(bound);
	return p;
fail:
	fi_freeinfo(bound);
	lnx_pep_close(p);
	return NULL;
}

int lnx_pep_getname(struct lnx_pep *p, void *buf, size_t *len)
{
	return fi_getname(&p->ep->fid, buf, len);
}

int lnx_pep_av_insert(struct lnx_pep *p, const void *name, uint64_t *out)
{
	fi_addr_t a = FI_ADDR_NOTAVAIL;
	int n = fi_av_insert(p->av, name, 1, &a, 0, NULL);
	if (n != 1)
		return n < 0 ? n : -FI_EINVAL;
	*out = a;
	return 0;
}

ssize_t lnx_pep_progress(struct lnx_pep *p)
{
	ssize_t n = fi_cq_read(p->cq, p->evs, 16);
	if (n == -FI_EAGAIN)
		return 0;
	return n;
}

/* The core's send of one buffer for a message's kind, with context c. */
static ssize_t pep_send_one(struct lnx_pep *p, int tagged, const void *buf, size_t len,
			    int has_data, uint64_t data, fi_addr_t dest, uint64_t tag, void *c)
{
	if (tagged)
		return has_data ? fi_tsenddata(p->ep, buf, len, NULL, data, dest, tag, c) :
				  fi_tsend(p->ep, buf, len, NULL, dest, tag, c);
	return has_data ? fi_senddata(p->ep, buf, len, NULL, data, dest, c) :
			  fi_send(p->ep, buf, len, NULL, dest, c);
}

ssize_t lnx_pep_send(struct lnx_pep *p, int tagged, void **base, size_t *len, int n, uint64_t dest,
		     uint64_t tag, uint64_t data, int has_data, int inject, uint64_t id)
{
	struct iovec iov[LNX_PEP_IOV];
	size_t total = 0;
	struct lnx_pctx *c;
	ssize_t ret;
	int i;

	if (n < 0 || n > LNX_PEP_IOV)
		return -FI_EINVAL;
	for (i = 0; i < n; i++)
		total += len[i];
	/* Within the core's inject size a send needs no completion from the
	 * core (the adapter's eager sends are done on return alike). */
	if (total <= p->inject) {
		void *b = n ? base[0] : NULL;
		char small[256];
		if (n > 1) {
			/* fi_inject takes one buffer: gather (inject sizes are small). */
			if (total > sizeof(small))
				goto copy;
			for (i = 0, total = 0; i < n; i++) {
				memcpy(small + total, base[i], len[i]);
				total += len[i];
			}
			b = small;
		}
		ret = lnx_pep_inject(p, tagged, b, total, has_data, data, dest, tag);
		return ret ? ret : 1;
	}
copy:
	c = pctx_get(p);
	if (!c)
		return -FI_ENOMEM;
	c->id = id;
	if (inject && total) {
		char *b = malloc(total);
		if (!b) {
			pctx_put(p, c);
			return -FI_ENOMEM;
		}
		for (i = 0, total = 0; i < n; i++) {
			memcpy(b + total, base[i], len[i]);
			total += len[i];
		}
		c->copy = b;
		iov[0].iov_base = b;
		iov[0].iov_len = total;
		n = 1;
	} else {
		for (i = 0; i < n; i++) {
			iov[i].iov_base = base[i];
			iov[i].iov_len = len[i];
		}
	}
	if (n <= 1) {
		void *b = n ? iov[0].iov_base : NULL;
		size_t l = n ? iov[0].iov_len : 0;
		ret = pep_send_one(p, tagged, b, l, has_data, data, dest, tag, c);
	} else {
		uint64_t flags = FI_COMPLETION | (has_data ? FI_REMOTE_CQ_DATA : 0);
		if (tagged) {
			struct fi_msg_tagged m = { .msg_iov = iov,
						   .iov_count = (size_t)n,
						   .addr = dest,
						   .tag = tag,
						   .context = c,
						   .data = data };
			ret = fi_tsendmsg(p->ep, &m, flags);
		} else {
			struct fi_msg m = { .msg_iov = iov,
					    .iov_count = (size_t)n,
					    .addr = dest,
					    .context = c,
					    .data = data };
			ret = fi_sendmsg(p->ep, &m, flags);
		}
	}
	if (ret) {
		free(c->copy);
		pctx_put(p, c);
		return ret;
	}
	return 0;
}

int lnx_pep_entry_bind(struct lnx_pentry *e, int n, uint64_t id)
{
	struct lnx_pctx *c;
	int i;
	if (n < 0 || n > LNX_PEP_IOV)
		return -FI_EINVAL;
	c = pctx_get(pep_of_srx(e->pe.srx));
	if (!c)
		return -FI_ENOMEM;
	c->id = id;
	c->entry = e;
	/* Stores the compiler keeps (a plain loop becomes rep stos). */
	for (i = 0; i < n; i++)
		__atomic_store_n(&e->desc[i], NULL, __ATOMIC_RELAXED);
	e->pe.count = (size_t)n;
	e->pe.context = (uintptr_t)c;
	/* rxm writes a receive completion only with FI_COMPLETION. */
	e->pe.flags |= FI_COMPLETION;
	return 0;
}

static struct lnx_peer_srx_peer *peer_ops_of(struct lnx_pentry *e)
{
	return (struct lnx_peer_srx_peer *)pep_of_srx(e->pe.srx)->srx.peer_ops;
}

/* pep_entry_free frees an entry the core no longer holds, with its
 * receive context if one is still bound. */
static void pep_entry_free(struct lnx_pentry *e)
{
	struct lnx_pep *p = pep_of_srx(e->pe.srx);
	if (e->pe.context)
		pctx_put(p, (struct lnx_pctx *)e->pe.context);
	pentry_put(p, e);
}

/* An entry the core let go of while Go held it (own_free_entry). */
static int pep_dropped(struct lnx_pentry *e)
{
	if (!e->dropped)
		return 0;
	pep_entry_free(e);
	return 1;
}

int lnx_pep_start(struct lnx_pentry *e, int tagged)
{
	if (pep_dropped(e))
		return -FI_ECONNABORTED;
	e->queued = 0;
	struct lnx_peer_srx_peer *ops = peer_ops_of(e);
	int (*start)(struct lnx_pentry *) =
		(int (*)(struct lnx_pentry *))(tagged ? ops->start_tag : ops->start_msg);
	return start(e);
}

/* The cores' discard_* lets go of their part of the message without
 * calling free_entry (2.1 rxm and shm): the owner frees its entry. It
 * stays marked queued meanwhile, so that a core calling free_entry inside
 * would only mark it dropped. */
int lnx_pep_discard(struct lnx_pentry *e, int tagged)
{
	if (pep_dropped(e))
		return 0;
	struct lnx_peer_srx_peer *ops = peer_ops_of(e);
	int (*discard)(struct lnx_pentry *) =
		(int (*)(struct lnx_pentry *))(tagged ? ops->discard_tag : ops->discard_msg);
	int ret = discard(e);
	if (ret) {
		e->queued = 0; /* the core may still hold it: not freed */
		return ret;
	}
	pep_entry_free(e);
	return 0;
}

int lnx_pep_held(const void *pep)
{
	const struct lnx_pep *p = pep;
	return p->stash || p->ncomp || p->nmore;
}

int lnx_pep_take(void *pep, struct lnx_arm *a, int serial, const struct lnx_pep_arm_ops *ops,
		 int *go)
{
	struct lnx_pep *p = pep;
	if (lnx_pep_held(p)) {
		*go = 1;
		return 0;
	}
	p->arm = a;
	p->ops = ops;
	p->serial = serial;
	p->took = 0;
	p->c_reads++;
	ssize_t n = fi_cq_read(p->cq, p->evs, 16);
	p->arm = NULL;
	if ((n < 0 && n != -FI_EAGAIN) || lnx_pep_held(p))
		*go = 1;
	return p->took;
}

int lnx_pep_checks_bufs(const void *pep)
{
	return __atomic_load_n(&((const struct lnx_pep *)pep)->check_bufs, __ATOMIC_RELAXED) != 0;
}

int lnx_pep_send_lent_big(void *pep, struct lnx_arm *a, int serial,
			  const struct lnx_pep_arm_ops *ops, uint64_t dest, int tagged,
			  const void *buf, size_t len, uint64_t tag, uint64_t data, int has_data,
			  void *ctx, int want_cq)
{
	struct lnx_pep *p = pep;
	struct lnx_pctx *c;
	uint64_t fa;
	ssize_t ret;
	if (len <= p->inject || !lnx_pep_lent_dst(p, dest, &fa) || !(c = pctx_get(p)))
		return -1;
	c->c_send = 1;
	c->s_ctx = ctx;
	c->s_cq = want_cq != 0;
	c->s_dst = dest;
	c->s_flags = FI_SEND | (tagged ? FI_TAGGED : FI_MSG);
	/* Linked first: the core may complete it inside the call. */
	csend_link(p, c);
	/* Callbacks inside are as inside lnx_pep_take, completions into the
	 * ring included: the caller holds no ring lock (sending stays 0). */
	p->arm = a;
	p->ops = ops;
	p->serial = serial;
	ret = pep_send_one(p, tagged, buf, len, has_data, data, fa, tag, c);
	p->arm = NULL;
	if (ret) {
		csend_unlink(p, c);
		pctx_put(p, c);
		return -1;
	}
	p->tx_msgs++;
	p->tx_bytes += len;
	p->tx_big++;
	return 0;
}

struct lnx_pctx *lnx_pep_csend_pop(struct lnx_pep *p, uint64_t id)
{
	struct lnx_pctx *c = p->csends;
	if (!c)
		return NULL;
	csend_unlink(p, c);
	c->id = id;
	return c;
}

struct lnx_pentry *lnx_pep_stash_pop(struct lnx_pep *p, int *tagged)
{
	struct lnx_pentry *e = p->stash;
	if (!e)
		return NULL;
	p->stash = e->stash_next;
	if (!p->stash)
		p->stash_end = &p->stash;
	e->stash_next = NULL;
	*tagged = e->stash_tagged;
	return e;
}
