/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * The fast send path (struct lnx_fast): small sends written into a
 * same-node peer's shm ring, or handed to the lent network transport,
 * without a call into Go; the completion goes to the transmit CQ's C ring
 * (cq_ring.c). Go's side is lnx/fast.go; docs/design.md says who writes
 * which word.
 */
#include <string.h>
#include "lnx_capi.h"
#include "lnx_internal.h"
#include "lnx_ops.h"
#include "lnx_tp_lend.h"
#include "lnx_pep_lend.h"
#include "lnx_pep.h"

/*
 * lnx_copyable reports whether buf may be copied, or handed to a core that
 * reads it later: a buffer of at most a page is taken as it is (it may still
 * straddle a hole; the check is for multi-page buffers shorter than their
 * stated length), a larger one when every page it covers is mapped
 * (lnx_mapped, mapped.c: an msync, or none for a range this thread found
 * mapped in the last 1 ms). A buffer that fails goes to Go, which fails the send,
 * instead of faulting the process here. Inline for the small case, which
 * is every send of 1-8 B.
 */
static inline int lnx_copyable(const void *buf, size_t len)
{
	return len <= 4096 || lnx_mapped(buf, len);
}

/*
 * lnx_ring_reserve makes room for a record of need bytes at the tail of
 * slot s's ring (s->lock held), as shm's reserveSlow does: where the record
 * would not fit before the ring's end it first writes a pad record there
 * (the receiver skips to the start), so that C, not Go, takes the wrap.
 * It returns the record's offset and sets *tail to its position, or
 * returns UINT64_MAX when the ring has no room (Go decides between
 * -FI_EAGAIN and a dead peer).
 */
static uint64_t lnx_ring_reserve_slow(struct lnx_txslot *s, uint64_t need, uint64_t *tail)
{
	uint64_t t = s->tail, off = t & s->mask, pad = 0;
	if (off + need > s->size)
		pad = s->size - off;
	if (t + pad + need + LNX_REC_LINE > s->head_cache + s->size) {
		s->head_cache = __atomic_load_n((const uint64_t *)s->fwd_head, __ATOMIC_ACQUIRE);
		if (t + pad + need + LNX_REC_LINE > s->head_cache + s->size)
			return UINT64_MAX;
	}
	if (pad) {
		struct lnx_rec *rec = (struct lnx_rec *)(s->ring + off);
		rec->kf = LNX_REC_PAD;
		__atomic_store_n(&rec->stamp, lnx_rec_stamp(t, s->salt), __ATOMIC_RELEASE);
		t += pad;
		s->tail = t;
		off = 0;
	}
	*tail = t;
	return off;
}

/* lnx_ring_reserve: the common case (no wrap, room known) inline. */
static inline uint64_t lnx_ring_reserve(struct lnx_txslot *s, uint64_t need, uint64_t *tail)
{
	uint64_t t = s->tail, off = t & s->mask;
	if (off + need <= s->size && t + need + LNX_REC_LINE <= s->head_cache + s->size) {
		*tail = t;
		return off;
	}
	return lnx_ring_reserve_slow(s, need, tail);
}

/* Of the eager sends that find an open peer's ring full, every this many
 * goes to Go, which tells a dead peer (shm's full); C answers the others. */
#define LNX_FULL_GO 64

/*
 * lnx_fast_put_shm appends an eager record to a same-node peer's shm ring
 * through its slot, the way shm.Endpoint.Send does: 0; -FI_EAGAIN when
 * the ring is full, as Go would answer (the caller's progress, fi_cq_read
 * in C, lets the peer's drain it: going to Go took the endpoint back from
 * C, so the rest of a window that overfills the ring, 64 records of 2
 * KiB, went through Go); or declined when the slot is not ready, the
 * receiver has closed its endpoint, or for every LNX_FULL_GO-th full ring
 * (Go decides between -FI_EAGAIN and a dead peer).
 */
static ssize_t lnx_fast_put_shm(struct lnx_txslot *s, int serial, uint64_t hflags, uint64_t tag,
				uint64_t data, const void *buf, size_t len)
{
	ssize_t ret = LNX_FAST_DECLINED;
	/* A rendezvous (Go's) need not pay for the check: eager_max is set
	 * before the slot is ready and never changes. */
	if (len > __atomic_load_n(&s->eager_max, __ATOMIC_RELAXED) || !lnx_copyable(buf, len))
		return ret; /* Go sends it, or reports a short buffer */
	lnx_lock(&s->lock, serial);
	if (!s->ready || len > s->eager_max ||
	    __atomic_load_n((const uint64_t *)s->peer_state, __ATOMIC_ACQUIRE) != LNX_SHM_PEER_OPEN)
		goto out; /* Go reports a closed peer */
	uint64_t need = lnx_rec_len(len), tail;
	uint64_t off = lnx_ring_reserve(s, need, &tail);
	if (off == UINT64_MAX) {
		if (++s->full % LNX_FULL_GO)
			ret = -FI_EAGAIN;
		goto out;
	}
	struct lnx_rec *rec = (struct lnx_rec *)(s->ring + off);
	rec->kf = LNX_REC_EAGER | hflags << 32;
	rec->tag = tag;
	rec->data = data;
	rec->size = len;
	lnx_copy_payload((char *)rec + LNX_REC_HDR, buf, len);
	__atomic_store_n(&rec->stamp, lnx_rec_stamp(tail, s->salt), __ATOMIC_RELEASE);
	s->tail = tail + need;
	ret = 0;
out:
	lnx_unlock(&s->lock, serial);
	return ret;
}

/*
 * lnx_fast_put_net sends to the network peer of a lent transport (struct
 * lnx_arm's net and net_src) with the core's fi_inject, using the peer's
 * sequence number and credits that Go lent with the transport: 0, or
 * declined. The arm lock keeps Go (taking the transport back) and C
 * readers out; if another thread holds it, Go sends. The core copies buf
 * (rxm's inject), so a buffer shorter than len goes to Go, which fails the
 * send, as shm's eager path does.
 */
static ssize_t lnx_fast_put_net(struct lnx_arm *a, int serial, fi_addr_t dest, uint64_t hflags,
				uint64_t tag, uint64_t data, const void *buf, size_t len)
{
	ssize_t ret = LNX_FAST_DECLINED;
	if (!lnx_trylock(&a->lock, serial))
		return ret;
	if (__atomic_load_n(&a->lent, __ATOMIC_ACQUIRE) && a->net && a->net_src == dest &&
	    lnx_copyable(buf, len) &&
	    lnx_tp_send_eager((void *)a->net, (uint32_t)hflags, tag, data, buf, len) == 0)
		ret = 0;
	lnx_unlock(&a->lock, serial);
	return ret;
}

/* lnx_fast_one_ring: the transmit CQ's completions can go into the ring
 * of the receive CQ the arm was lent with, which C's poll writes when a
 * send completes later (a->lock held). */
static inline int lnx_fast_one_ring(struct lnx_fast *f)
{
	return f->arm.cring && f->arm.cring == __atomic_load_n(&f->cring, __ATOMIC_ACQUIRE);
}

/*
 * lnx_fast_put_rndv posts a rendezvous send (a message above the peer's
 * eager limit, up to the slot's rndv_max) to a same-node peer's shm ring,
 * the way shm.Endpoint.Send's sendRndv does: a record naming the buffer,
 * under a cookie of the slot's own table (struct lnx_txrndv), which the
 * receiver echoes in its ack. Only while Go has lent the endpoint (arm.lent,
 * under arm.lock): fi_cq_read reaps the ack and completes the send in C
 * (lnx_arm_reap), and Go adopts whatever is still out when it takes the
 * endpoint back (shm.Endpoint.AdoptTx), so every send C posts has one
 * owner at any time. The completion goes to the receive CQ's ring, so the
 * transmit CQ must be that CQ. 0, or declined (Go sends): not lent, arm.lock
 * busy, another CQ, the slot not ready or the receiver closed, its table
 * or the arm's list of peers full, or the ring is full.
 */
static ssize_t lnx_fast_put_rndv(struct lnx_fast *f, struct lnx_txslot *s, int serial,
				 uint64_t hflags, uint64_t tag, uint64_t data, const void *buf,
				 size_t len, void *ctx, int want_cq)
{
	struct lnx_arm *a = &f->arm;
	ssize_t ret = LNX_FAST_DECLINED;
	if (len > __atomic_load_n(&s->rndv_max, __ATOMIC_RELAXED) ||
	    !__atomic_load_n(&a->lent, __ATOMIC_RELAXED) || !lnx_trylock(&a->lock, serial))
		return ret;
	if (!__atomic_load_n(&a->lent, __ATOMIC_ACQUIRE) || !lnx_fast_one_ring(f))
		goto out;
	uint32_t k = 0, j;
	for (; k < a->ntx && a->tx[k] != (uintptr_t)s; k++)
		;
	if (k == a->ntx && k == LNX_ARM_TX)
		goto out; /* C reaps for this many peers at most */
	for (j = 0; j < LNX_TX_RNDV && s->r[j].state != LNX_TXR_FREE; j++)
		;
	if (j == LNX_TX_RNDV)
		goto out;
	lnx_lock(&s->lock, serial);
	if (!s->ready || len > s->rndv_max ||
	    __atomic_load_n((const uint64_t *)s->peer_state, __ATOMIC_ACQUIRE) != LNX_SHM_PEER_OPEN)
		goto unlock;
	uint64_t need = lnx_rec_len(LNX_REC_IOV), tail;
	uint64_t off = lnx_ring_reserve(s, need, &tail);
	if (off == UINT64_MAX)
		goto unlock;
	struct lnx_txrndv *r = &s->r[j];
	struct lnx_rec *rec = (struct lnx_rec *)(s->ring + off);
	uint64_t *body = (uint64_t *)((char *)rec + LNX_REC_HDR);
	body[0] = (uint64_t)(uintptr_t)buf;
	body[1] = len;
	rec->kf = LNX_REC_RNDV | 1ull << 8 | hflags << 32;
	rec->tag = tag;
	rec->data = data;
	rec->size = len;
	rec->cookie = (uint64_t)r->gen << 32 | LNX_TX_RNDV_BIT | j;
	r->ctx = ctx;
	r->base = (uint64_t)(uintptr_t)buf;
	r->len = len;
	r->cq = want_cq != 0;
	r->tagged = (hflags & LNX_HDR_TAGGED) != 0;
	r->state = LNX_TXR_C;
	__atomic_store_n(&rec->stamp, lnx_rec_stamp(tail, s->salt), __ATOMIC_RELEASE);
	s->tail = tail + need;
	s->nout++;
	if (k == a->ntx)
		a->tx[a->ntx++] = (uintptr_t)s;
	a->tx_rndv++;
	ret = 0;
unlock:
	lnx_unlock(&s->lock, serial);
out:
	lnx_unlock(&a->lock, serial);
	return ret;
}

/* A send's one buffer and what the call and the endpoint's transmit flags
 * ask of it (kind: LNX_OP_*), as both fast send paths read them. */
struct fast_msg {
	const void *buf;
	size_t len;
	uint64_t txf; /* the endpoint's transmit op flags */
	int want_cq;  /* a send completion is due */
	int has_data; /* with CQ data */
};

/* fast_msg fills m; 0 when C must decline the send: a NULL buffer with a
 * length, or an inject over the endpoint's inject size (Go answers it). */
static inline int fast_msg(const struct lnx_fast *f, const struct iovec *iov, size_t count,
			   int kind, struct fast_msg *m)
{
	m->len = count ? iov[0].iov_len : 0;
	m->buf = count ? iov[0].iov_base : NULL;
	m->txf = __atomic_load_n(&f->tx_flags, __ATOMIC_RELAXED);
	if ((m->len && !m->buf) ||
	    (((kind & LNX_OP_INJECT) || (m->txf & FI_INJECT)) && m->len > f->inject_size))
		return 0;
	m->want_cq = !(kind & LNX_OP_INJECT) && (!f->tx_sel || (m->txf & FI_COMPLETION));
	m->has_data = (kind & LNX_OP_DATA) || (m->txf & FI_REMOTE_CQ_DATA);
	return 1;
}

/* After a fast send into a completion ring reserved for it (cr, locked):
 * its send completion when it went (ret 0), then the ring's lock back. */
static void fast_send_done(struct lnx_cring *cr, int serial, ssize_t ret, void *ctx, int kind)
{
	if (ret == 0)
		lnx_cring_put(cr, ctx, NULL,
			      FI_SEND | ((kind & LNX_OP_TAGGED) ? FI_TAGGED : FI_MSG), 0, 0, 0,
			      FI_ADDR_NOTAVAIL);
	lnx_unlock(&cr->lock, serial);
}

/*
 * lnx_fast_send_pep sends a message to a peer reached over a peer-API core
 * lent to C (struct lnx_arm's pep; lnx/core_peer.go) from C, as
 * Endpoint.Send would over that core: within the core's inject size with
 * its inject, the completion written into the transmit CQ's ring at once;
 * over it with the core's send of the application's buffer, the
 * completion written when the core reports it (lnx_pep_send_lent_big).
 * 0, or declined (Go sends it, as before, and reports any error): the
 * core not lent, arm.lock busy, C not allowed to send (the core's tx_on:
 * a send counter, device memory), the fi_addr not one Go published for
 * the core (no route yet, removed from the AV, a peer its side transport
 * declared gone), an inject over the core's inject size, a transmit CQ
 * other than the receive CQ for a larger send, the completion ring full,
 * or the core's answer not 0 (-FI_EAGAIN included). Go hands every send
 * to the core at once (none waits in Go), so one from C never overtakes
 * an earlier one of Go's.
 */
static ssize_t lnx_fast_send_pep(struct lnx_fast *f, int serial, const struct iovec *iov,
				 size_t count, fi_addr_t dest, uint64_t tag, uint64_t data,
				 void *ctx, int kind)
{
	struct lnx_arm *a = &f->arm;
	struct fast_msg m;
	if (!fast_msg(f, iov, count, kind, &m) || (m.txf & FI_TRIGGER))
		return LNX_FAST_DECLINED;
	if (!m.has_data)
		data = 0;
	if (!lnx_trylock(&a->lock, serial))
		return LNX_FAST_DECLINED;
	ssize_t ret = LNX_FAST_DECLINED;
	struct lnx_cring *cr = NULL;
	struct lnx_pep *p = (struct lnx_pep *)a->pep;
	if (!__atomic_load_n(&a->lent, __ATOMIC_ACQUIRE) || !p)
		goto out;
	if (m.len > p->inject) {
		/* The core reads the application's buffer after the call (shm's
		 * CMA copy, rxm's rendezvous): never for a buffer reusable on
		 * return (Go copies it), and only into the arm's CQ ring, where
		 * C's poll writes the completion. The mapping check
		 * (lnx_copyable) may be off: the core then fails a short
		 * buffer itself. */
		if ((kind & LNX_OP_INJECT) || (m.txf & FI_INJECT) ||
		    (m.want_cq && !lnx_fast_one_ring(f)) ||
		    (lnx_pep_checks_bufs((void *)a->pep) && !lnx_copyable(m.buf, m.len)))
			goto out;
		if (lnx_pep_send_lent_big((void *)a->pep, a, serial, &lnx_arm_pep_ops, dest,
					  (kind & LNX_OP_TAGGED) != 0, m.buf, m.len, tag, data,
					  m.has_data, ctx, m.want_cq) == 0)
			ret = 0;
		goto out;
	}
	if (!lnx_copyable(m.buf, m.len))
		goto out;
	if (m.want_cq && (!(cr = __atomic_load_n(&f->cring, __ATOMIC_ACQUIRE)) ||
			  !lnx_cring_reserve(cr, serial)))
		goto out;
	if (lnx_pep_inject_lent(p, a, serial, &lnx_arm_pep_ops, dest, (kind & LNX_OP_TAGGED) != 0,
				m.buf, m.len, tag, data, m.has_data) == 0)
		ret = 0;
	if (m.want_cq)
		fast_send_done(cr, serial, ret, ctx, kind);
out:
	lnx_unlock(&a->lock, serial);
	return ret;
}

/*
 * lnx_fast_send sends a small message without a call into Go: to a peer on
 * this node through its shm ring, or to the network peer of a lent
 * transport, and queues the completion in the transmit CQ's C ring.
 * A full shm ring answers -FI_EAGAIN (lnx_fast_put_shm). Anything it is
 * not sure about (no slot published yet, the
 * ...msg variants, several buffers, completion ring full,
 * a network message over the core's inject size) is declined and goes to
 * Go, which also reports every error. serial: the endpoint's domain is
 * serial (see lnx_lock).
 */

ssize_t lnx_fast_send(struct lnx_fast *f, int serial, const struct iovec *iov, size_t count,
		      fi_addr_t dest, uint64_t tag, uint64_t data, void *ctx, int kind)
{
	if ((kind & LNX_OP_EXPLICIT) || count > 1 || dest >= LNX_FAST_PEERS)
		return LNX_FAST_DECLINED;
	struct lnx_arm *a = &f->arm;
	if (!__atomic_load_n(&f->on, __ATOMIC_ACQUIRE)) {
		/* A lent peer core has its own switch (it counts what C
		 * sends, so statistics leave it on). */
		if (__atomic_load_n(&a->pep, __ATOMIC_RELAXED))
			return lnx_fast_send_pep(f, serial, iov, count, dest, tag, data, ctx, kind);
		return LNX_FAST_DECLINED;
	}
	struct lnx_txslot *s =
		(struct lnx_txslot *)__atomic_load_n(&f->peer[dest], __ATOMIC_ACQUIRE);
	if (!s && __atomic_load_n(&a->pep, __ATOMIC_RELAXED))
		return lnx_fast_send_pep(f, serial, iov, count, dest, tag, data, ctx, kind);
	if (!s && (!__atomic_load_n(&a->lent, __ATOMIC_RELAXED) ||
		   !__atomic_load_n(&a->net, __ATOMIC_RELAXED) ||
		   __atomic_load_n(&a->net_src, __ATOMIC_RELAXED) != dest))
		return LNX_FAST_DECLINED;
	struct fast_msg m;
	if (!fast_msg(f, iov, count, kind, &m))
		return LNX_FAST_DECLINED;
	uint64_t hflags = (kind & LNX_OP_TAGGED) ? LNX_HDR_TAGGED : 0;
	if (m.has_data)
		hflags |= LNX_HDR_DATA;
	else
		data = 0;
	if (s && m.len > __atomic_load_n(&s->eager_max, __ATOMIC_RELAXED)) {
		/* A rendezvous: the buffer is the receiver's to read until the
		 * ack, so never an inject (its buffer is free on return). */
		if ((kind & LNX_OP_INJECT) || (m.txf & FI_INJECT))
			return LNX_FAST_DECLINED;
		return lnx_fast_put_rndv(f, s, serial, hflags, tag, data, m.buf, m.len, ctx,
					 m.want_cq);
	}
	struct lnx_cring *cr = __atomic_load_n(&f->cring, __ATOMIC_ACQUIRE);
	if (m.want_cq && (!cr || !lnx_cring_reserve(cr, serial)))
		return LNX_FAST_DECLINED;
	ssize_t ret = s ? lnx_fast_put_shm(s, serial, hflags, tag, data, m.buf, m.len) :
			  lnx_fast_put_net(a, serial, dest, hflags, tag, data, m.buf, m.len);
	if (m.want_cq)
		fast_send_done(cr, serial, ret, ctx, kind);
	return ret;
}
