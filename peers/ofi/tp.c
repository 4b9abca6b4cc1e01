/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * The network core's C side (lnx_tp.h): opening and closing the core
 * endpoint, posting operations from the C operation table, reading the core
 * CQ into completion batches, and what C does with a lent transport
 * (lnx_tp_lend.h). peers/ofi's Go (tp_c.go, tp_*.go) drives it; capi calls
 * only the lent-transport functions.
 */
#include <stdlib.h>
#include <string.h>
#include "lnx_tp.h"
#include "lnx_copy.h"

int lnx_tp_close(struct lnx_tp *t)
{
	int ret = 0, r;
	if (!t)
		return 0;
	if (t->ep && (r = fi_close(&t->ep->fid)) && !ret)
		ret = r;
	if (t->cq && (r = fi_close(&t->cq->fid)) && !ret)
		ret = r;
	if (t->av && (r = fi_close(&t->av->fid)) && !ret)
		ret = r;
	free(t->ops);
	free(t->stage);
	free(t);
	return ret;
}

struct lnx_tp *lnx_tp_open(struct fid_domain *dom, struct fi_info *info, size_t nops,
			   size_t cq_size, const void *src, size_t srclen, int *ret)
{
	struct fi_av_attr av_attr = { .type = FI_AV_TABLE };
	struct fi_cq_attr cq_attr = { .format = FI_CQ_FORMAT_TAGGED,
				      .wait_obj = FI_WAIT_NONE,
				      .size = cq_size };
	struct lnx_tp *t = calloc(1, sizeof(*t));
	*ret = -FI_ENOMEM;
	if (!t)
		return NULL;
	if (posix_memalign((void **)&t->ops, 64, nops * sizeof(struct lnx_op))) {
		t->ops = NULL;
		goto fail;
	}
	memset(t->ops, 0, nops * sizeof(struct lnx_op));
	t->nops = nops;
	t->inject = info->tx_attr ? info->tx_attr->inject_size : 0;
	t->tx_iov = info->tx_attr ? info->tx_attr->iov_limit : 1;
	t->rx_iov = info->rx_attr ? info->rx_attr->iov_limit : 1;
	t->tx_size = info->tx_attr ? info->tx_attr->size : 0;
	t->cq_data = info->domain_attr ? info->domain_attr->cq_data_size : 0;
	t->stage_len = t->inject < LNX_STAGE_MAX ? t->inject : LNX_STAGE_MAX;
	if (t->stage_len > LNX_HDR_EAGER && !(t->stage = malloc(t->stage_len)))
		goto fail;
	if ((*ret = fi_av_open(dom, &av_attr, &t->av, NULL)))
		goto fail;
	if ((*ret = fi_cq_open(dom, &cq_attr, &t->cq, NULL)))
		goto fail;
	if (src) {
		/* Bind to src (FI_SOURCE with a service): the core's own
		 * fi_info with its src_addr replaced. */
		struct fi_info *bound = fi_dupinfo(info);
		if (!bound)
			goto fail;
		free(bound->src_addr);
		bound->src_addr = malloc(srclen);
		if (!bound->src_addr) {
			fi_freeinfo(bound);
			goto fail;
		}
		memcpy(bound->src_addr, src, srclen);
		bound->src_addrlen = srclen;
		*ret = fi_endpoint(dom, bound, &t->ep, NULL);
		fi_freeinfo(bound);
		if (*ret)
			goto fail;
	} else if ((*ret = fi_endpoint(dom, info, &t->ep, NULL)))
		goto fail;
	if ((*ret = fi_ep_bind(t->ep, &t->av->fid, 0)))
		goto fail;
	if ((*ret = fi_ep_bind(t->ep, &t->cq->fid, FI_TRANSMIT | FI_RECV)))
		goto fail;
	if ((*ret = fi_enable(t->ep)))
		goto fail;
	*ret = 0;
	return t;
fail:
	lnx_tp_close(t);
	return NULL;
}

int lnx_tp_getname(struct lnx_tp *t, void *buf, size_t *len)
{
	return fi_getname(&t->ep->fid, buf, len);
}

int lnx_tp_av_insert(struct lnx_tp *t, const void *name, uint64_t *out)
{
	fi_addr_t a = FI_ADDR_NOTAVAIL;
	int n = fi_av_insert(t->av, name, 1, &a, 0, NULL);
	*out = a;
	if (n == 1 && a != FI_ADDR_NOTAVAIL)
		return 0;
	return n < 0 ? n : -FI_EINVAL;
}

static void lnx_ev_locate(struct lnx_tp *t, struct lnx_ev *ev, void *ctx)
{
	uintptr_t p = (uintptr_t)ctx, base = (uintptr_t)t->ops;
	size_t span = t->nops * sizeof(struct lnx_op), off, in;
	if (!ctx || p < base || p >= base + span) {
		ev->op = UINT32_MAX;
		ev->sub = 2;
		return;
	}
	off = p - base;
	ev->op = (uint32_t)(off / sizeof(struct lnx_op));
	in = off % sizeof(struct lnx_op);
	ev->sub = in == 0 ? 0 : in == sizeof(struct fi_context2) ? 1 : 2;
}

/* lnx_tp_drain reads up to max completions (successes and error entries,
 * in CQ order) into t->evs and returns their count, or a negative error
 * if the CQ itself failed before anything was read. */
int lnx_tp_drain(struct lnx_tp *t, int max)
{
	int n = 0;
	if (max > LNX_EV_MAX)
		max = LNX_EV_MAX;
	while (n < max) {
		ssize_t want = max - n;
		ssize_t r = fi_cq_read(t->cq, t->ents, (size_t)want);
		t->reads++;
		if (r > 0) {
			for (ssize_t i = 0; i < r; i++) {
				struct lnx_ev *ev = &t->evs[n++];
				lnx_ev_locate(t, ev, t->ents[i].op_context);
				ev->err = 0;
				ev->prov_err = 0;
				ev->len = t->ents[i].len;
				ev->olen = 0;
				ev->tag = t->ents[i].tag;
				ev->data = t->ents[i].data;
			}
			/* Fewer than asked: the CQ was empty after this read's
			 * progress. Another read would only run the core's progress
			 * (system calls) again for nothing. */
			if (r < want)
				break;
			continue;
		}
		if (r == -FI_EAVAIL) {
			struct fi_cq_err_entry e;
			memset(&e, 0, sizeof(e));
			ssize_t rr = fi_cq_readerr(t->cq, &e, 0);
			if (rr == -FI_EAGAIN)
				break;
			if (rr < 0)
				return n > 0 ? n : (int)rr;
			struct lnx_ev *ev = &t->evs[n++];
			lnx_ev_locate(t, ev, e.op_context);
			ev->err = e.err > 0 ? e.err : e.err < 0 ? -e.err : FI_EOTHER;
			ev->prov_err = e.prov_errno;
			ev->len = e.len;
			ev->olen = e.olen;
			ev->tag = e.tag;
			ev->data = e.data;
			continue;
		}
		if (r == -FI_EAGAIN)
			break;
		return n > 0 ? n : (int)r;
	}
	return n;
}

/* lnx_tp_te_of: which of the lent peer's tagged eager receives op is
 * (its index in te_op), or -1. */
static int lnx_tp_te_of(const struct lnx_tp_lend *l, uint32_t op)
{
	for (int j = 0; j < LNX_TE_BUFS; j++)
		if (l->te_op[j] == op)
			return j;
	return -1;
}

/* lnx_tp_repost hands the bounce buffers of the messages C took back to
 * the core, as Go's repost would (the op stays pending), so that C may
 * take any number of messages in one lending; those the core refuses stay
 * in took_op for Go. It runs at the next peek, not in lnx_tp_consume, so
 * that the post is not between a message and its completion. */
static void lnx_tp_repost(struct lnx_tp *t)
{
	struct lnx_tp_lend *l = &t->lend;
	uint32_t k = 0;
	for (uint32_t i = 0; i < l->took; i++) {
		uint32_t op = l->took_op[i];
		int j = op >= l->pool ? lnx_tp_te_of(l, op) : -1;
		ssize_t r = j >= 0 ? lnx_tp_trecv_any(t, op, l->te_buf[j], l->te_cap, l->tx_addr,
						      LNX_TE_CLASS, LNX_TE_IGNORE) :
				     lnx_tp_recv(t, op, l->bounce + (uint64_t)op * l->buf_size,
						 l->buf_size);
		if (r == 0)
			l->reposted++;
		else
			l->took_op[k++] = op;
	}
	l->took = k;
}

int lnx_tp_peek(void *tp)
{
	struct lnx_tp *t = tp;
	if (t->lend.took)
		lnx_tp_repost(t);
	if (t->lend.stashed)
		return t->lend.stashed;
	int n = lnx_tp_drain(t, LNX_EV_MAX);
	if (n > 0) {
		t->lend.stashed = n;
		t->lend.head = 0;
	}
	return n;
}

static uint64_t lnx_le64(const uint8_t *b)
{
	uint64_t v;
	memcpy(&v, b, 8);
	return v;
}
static uint32_t lnx_le32(const uint8_t *b)
{
	uint32_t v;
	memcpy(&v, b, 4);
	return v;
}

/* The eager layout of wire.go: version, kind, credits, flags, sender id,
 * sequence number, tag, cq data, payload. A tagged eager message (one of
 * the lent peer's tagged eager receives, directed at it) has the header
 * in the completion's tag and CQ data (wire.go's teHdr) and the payload
 * in the receive's buffer; Go's onTE reads it the same way. */
int lnx_tp_look(void *tp, struct lnx_tp_msg *m)
{
	struct lnx_tp *t = tp;
	struct lnx_tp_lend *l = &t->lend;
	if (l->stashed < 1 || l->took >= LNX_LEND_TAKES || !l->peer ||
	    (l->owe && l->owed + 1 >= l->owe_max))
		return 0;
	/* The stash's first event: a window's messages come several to a
	 * read, and C takes them one by one in CQ order. */
	const struct lnx_ev *ev = &t->evs[l->head];
	if (ev->err || ev->sub != 0)
		return 0;
	int j = ev->op >= l->pool ? lnx_tp_te_of(l, ev->op) : -1;
	if (j >= 0) {
		if ((ev->tag & ~LNX_TE_IGNORE) != LNX_TE_CLASS || (uint32_t)ev->tag != l->rx_seq ||
		    ev->len > l->te_cap)
			return 0;
		m->flags = (uint32_t)(ev->tag >> 32) & ((1u << LNX_TE_FLAG_BITS) - 1);
		m->tag = ev->data;
		m->data = (ev->tag >> 40) & ((1ull << LNX_TE_DATA_BITS) - 1);
		m->size = ev->len;
		m->payload = l->te_buf[j];
		return 1;
	}
	if (ev->op >= l->pool || ev->len < LNX_HDR_EAGER || ev->len - LNX_HDR_EAGER > l->eager_max)
		return 0;
	const uint8_t *b = l->bounce + (uint64_t)ev->op * l->buf_size;
	if (b[0] != LNX_WIRE_VERSION || b[1] != LNX_KIND_EAGER || lnx_le64(b + 8) != l->peer ||
	    lnx_le32(b + 16) != l->rx_seq)
		return 0;
	m->flags = lnx_le32(b + 4);
	m->tag = lnx_le64(b + 24);
	m->data = lnx_le64(b + 32);
	m->size = ev->len - LNX_HDR_EAGER;
	m->payload = b + LNX_HDR_EAGER;
	return 1;
}

void lnx_tp_consume(void *tp)
{
	struct lnx_tp *t = tp;
	struct lnx_tp_lend *l = &t->lend;
	uint32_t op = t->evs[l->head].op;
	uint16_t c = 0; /* a tagged eager message returns no credits */
	if (op < l->pool)
		memcpy(&c, l->bounce + (uint64_t)op * l->buf_size + 2, 2);
	/* The payload is copied out; the buffer goes back to the core at the
	 * next lnx_tp_peek (lnx_tp_repost), after the completion. */
	l->took_op[l->took++] = op;
	l->rx_seq++;
	l->head++;
	l->stashed--;
	if (l->window) {
		int64_t v = (int64_t)l->credits + c;
		l->credits = v > (int64_t)l->window ? (int32_t)l->window : (int32_t)v;
	}
	if (l->owe)
		l->owed++;
}

/* lnx_tp_send_te sends a payload above the peer's eager limit as one
 * tagged eager message (tp_tagged.go's sendTE), injected straight from the
 * caller's buffer: lnx's header in the core tag and CQ data, nothing
 * staged. Go decided at lending that the form applies to the peer (te_max:
 * heard from, a core with the CQ data, not libfabric 1.17's shm) and how
 * large a payload the core injects; flags and CQ data that do not fit the
 * tag go to Go (split). A tagged eager message carries no credits back. */
static int lnx_tp_send_te(struct lnx_tp *t, uint32_t flags, uint64_t tag, uint64_t data,
			  const void *buf, size_t len)
{
	struct lnx_tp_lend *l = &t->lend;
	if (len > l->te_max || flags >> LNX_TE_FLAG_BITS || data >> LNX_TE_DATA_BITS)
		return -1;
	uint64_t ctag = LNX_TE_CLASS | data << 40 | (uint64_t)flags << 32 | l->tx_seq;
	if (fi_tinjectdata(t->ep, buf, len, tag, (fi_addr_t)l->tx_addr, ctag))
		return -1;
	l->tx_seq++;
	if (l->window)
		l->credits--;
	l->sent++;
	l->sent_te++;
	return 0;
}

int lnx_tp_send_eager(void *tp, uint32_t flags, uint64_t tag, uint64_t data, const void *buf,
		      size_t len)
{
	struct lnx_tp *t = tp;
	struct lnx_tp_lend *l = &t->lend;
	uint8_t *b = t->stage;
	size_t total = LNX_HDR_EAGER + len;
	if (!l->tx_on || (l->window && l->credits <= 0))
		return -1;
	/* Above the eager limit, or injected by the core alone but not behind
	 * the header (Go's SendMR decides alike): a tagged eager message. */
	if (len > l->tx_eager_max || (total > t->inject && len <= l->te_max))
		return lnx_tp_send_te(t, flags, tag, data, buf, len);
	if (!b || total > t->stage_len)
		return -1;
	uint16_t owed = l->owed > 0xffff ? 0xffff : (uint16_t)l->owed;
	uint32_t zero = 0;
	b[0] = LNX_WIRE_VERSION;
	b[1] = LNX_KIND_EAGER;
	memcpy(b + 2, &owed, 2);
	memcpy(b + 4, &flags, 4);
	memcpy(b + 8, &l->id, 8);
	memcpy(b + 16, &l->tx_seq, 4);
	memcpy(b + 20, &zero, 4);
	memcpy(b + 24, &tag, 8);
	memcpy(b + 32, &data, 8);
	lnx_copy_payload(b + LNX_HDR_EAGER, buf, len);
	if (fi_inject(t->ep, b, total, (fi_addr_t)l->tx_addr))
		return -1;
	l->tx_seq++;
	l->owed -= owed;
	if (l->window)
		l->credits--;
	l->sent++;
	return 0;
}

ssize_t lnx_tp_sendv(struct lnx_tp *t, uint32_t op, int sub, int off, int niov, uint64_t dest)
{
	struct lnx_op *o = &t->ops[op];
	return fi_sendv(t->ep, &o->iov[off], NULL, (size_t)niov, (fi_addr_t)dest, &o->ctx[sub]);
}

ssize_t lnx_tp_tsendv(struct lnx_tp *t, uint32_t op, int sub, int off, int niov, uint64_t dest,
		      uint64_t tag)
{
	struct lnx_op *o = &t->ops[op];
	return fi_tsendv(t->ep, &o->iov[off], &o->desc[off], (size_t)niov, (fi_addr_t)dest, tag,
			 &o->ctx[sub]);
}

/* A tagged send with remote CQ data: a tagged eager message (wire.go). */
ssize_t lnx_tp_tsenddata(struct lnx_tp *t, uint32_t op, int sub, int off, int niov, uint64_t dest,
			 uint64_t tag, uint64_t data)
{
	struct lnx_op *o = &t->ops[op];
	struct fi_msg_tagged m = {
		.msg_iov = &o->iov[off],
		.desc = &o->desc[off],
		.iov_count = (size_t)niov,
		.addr = (fi_addr_t)dest,
		.tag = tag,
		.ignore = 0,
		.context = &o->ctx[sub],
		.data = data,
	};
	return fi_tsendmsg(t->ep, &m, FI_REMOTE_CQ_DATA | FI_COMPLETION);
}

/* A receive of tagged eager messages from src: any tag under mask. */
ssize_t lnx_tp_trecv_any(struct lnx_tp *t, uint32_t op, void *buf, size_t len, uint64_t src,
			 uint64_t tag, uint64_t ignore)
{
	struct lnx_op *o = &t->ops[op];
	return fi_trecv(t->ep, buf, len, NULL, (fi_addr_t)src, tag, ignore, &o->ctx[0]);
}

ssize_t lnx_tp_trecvv(struct lnx_tp *t, uint32_t op, int sub, int off, int niov, uint64_t src,
		      uint64_t tag)
{
	struct lnx_op *o = &t->ops[op];
	return fi_trecvv(t->ep, &o->iov[off], &o->desc[off], (size_t)niov, (fi_addr_t)src, tag, 0,
			 &o->ctx[sub]);
}

ssize_t lnx_tp_readv(struct lnx_tp *t, uint32_t op, int sub, int off, int niov, uint64_t src,
		     uint64_t addr, uint64_t key)
{
	struct lnx_op *o = &t->ops[op];
	return fi_readv(t->ep, &o->iov[off], &o->desc[off], (size_t)niov, (fi_addr_t)src, addr, key,
			&o->ctx[sub]);
}

ssize_t lnx_tp_writev(struct lnx_tp *t, uint32_t op, int sub, int off, int niov, uint64_t dest,
		      uint64_t addr, uint64_t key)
{
	struct lnx_op *o = &t->ops[op];
	struct fi_rma_iov rma = { .addr = addr, .len = 0, .key = key };
	for (int i = 0; i < niov; i++)
		rma.len += o->iov[off + i].iov_len;
	struct fi_msg_rma m = {
		.msg_iov = &o->iov[off],
		.desc = &o->desc[off],
		.iov_count = (size_t)niov,
		.addr = (fi_addr_t)dest,
		.rma_iov = &rma,
		.rma_iov_count = 1,
		.context = &o->ctx[sub],
	};
	/* Delivery complete: lnx completes a write once the data is in the
	 * target's memory, as its target-executed writes do. */
	return fi_writemsg(t->ep, &m, FI_COMPLETION | FI_DELIVERY_COMPLETE);
}

ssize_t lnx_tp_recv(struct lnx_tp *t, uint32_t op, void *buf, size_t len)
{
	struct lnx_op *o = &t->ops[op];
	return fi_recv(t->ep, buf, len, NULL, FI_ADDR_UNSPEC, &o->ctx[0]);
}

ssize_t lnx_tp_inject(struct lnx_tp *t, const void *buf, size_t len, uint64_t dest)
{
	return fi_inject(t->ep, buf, len, (fi_addr_t)dest);
}

ssize_t lnx_tp_tinject(struct lnx_tp *t, const void *buf, size_t len, uint64_t dest, uint64_t tag)
{
	return fi_tinject(t->ep, buf, len, (fi_addr_t)dest, tag);
}

ssize_t lnx_tp_tinjectdata(struct lnx_tp *t, const void *buf, size_t len, uint64_t dest,
			   uint64_t tag, uint64_t data)
{
	return fi_tinjectdata(t->ep, buf, len, data, (fi_addr_t)dest, tag);
}

int lnx_tp_cancel(struct lnx_tp *t, uint32_t op, int sub)
{
	return (int)fi_cancel(&t->ep->fid, &t->ops[op].ctx[sub]);
}
