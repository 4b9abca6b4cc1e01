/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * Armed receives (struct lnx_arm): fi_cq_read completing the receives Go
 * lent, and those posted in C while they are lent, from the inbound shm
 * rings and the network transport lent with them, without a call into Go.
 * Go's side is lnx/arm.go.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* process_vm_readv */
#endif
#include <string.h>
#include <sys/uio.h>
#include "lnx_capi.h"
#include "lnx_internal.h"
#include "lnx_tp_lend.h"
#include "lnx_pep_lend.h"

/* lnx_arm_match: the slot (the index in s of a position in [head, tail))
 * of the earliest posted receive pending that takes an eager message with
 * lnx header flags hflags and tag from src, as Go's queues would match it;
 * -1 if none does, or the message is of a kind C leaves to Go (a->lock
 * held). */
static int32_t lnx_arm_match(const struct lnx_arm *a, uint64_t hflags, uint64_t tag, uint64_t src)
{
	if (hflags & ~(uint64_t)(LNX_HDR_TAGGED | LNX_HDR_DATA))
		return -1;
	uint32_t tagged = (hflags & LNX_HDR_TAGGED) != 0;
	for (uint64_t p = a->head; p != a->tail; p++) {
		uint32_t i = p & (LNX_ARM_SLOTS - 1);
		const struct lnx_arm_slot *s = &a->s[i];
		if (a->done[i] || s->tagged != tagged)
			continue;
		if (tagged && ((tag ^ s->tag) & ~s->ignore))
			continue;
		if (s->src != FI_ADDR_UNSPEC && s->src != src)
			continue;
		return (int32_t)i;
	}
	return -1;
}

/* lnx_arm_claim: the slot of the receive that takes an eager message
 * (lnx_arm_match) if it takes it whole and the completion ring has room
 * for its completion, which it then holds (a->lock held; cring's lock
 * taken unless serial, lnx_arm_done releases it); -1 when the message
 * needs Go. */
static int32_t lnx_arm_claim(struct lnx_arm *a, int serial, uint64_t hflags, uint64_t tag,
			     uint64_t src, uint64_t size)
{
	int32_t i = lnx_arm_match(a, hflags, tag, src);
	if (i < 0 || size > a->s[i].len || !lnx_cring_reserve(a->cring, serial))
		return -1;
	return i;
}

/* lnx_arm_take_slot marks slot i taken (a->lock held). */
static void lnx_arm_take_slot(struct lnx_arm *a, uint32_t i)
{
	const struct lnx_arm_slot *s = &a->s[i];
	if (s->go_index >= 0)
		a->go_done[s->go_index] = 1;
	a->done[i] = 1;
	while (a->head != a->tail && a->done[a->head & (LNX_ARM_SLOTS - 1)])
		a->head++;
}

/* lnx_arm_put counts a receive C completed with a message from core (0
 * shm, 1 network) and writes its completion into a's ring (a->lock and
 * the ring's lock held, room reserved; releases the ring's lock). */
static void lnx_arm_put(struct lnx_arm *a, int serial, int core, void *ctx, void *buf,
			uint64_t flags, uint64_t len, uint64_t data, uint64_t tag, uint64_t src)
{
	a->done_msgs[core]++;
	a->done_bytes[core] += len;
	lnx_cring_put(a->cring, ctx, buf, flags, len, data, tag, src);
	lnx_unlock(&a->cring->lock, serial);
}

/* lnx_arm_done completes the receive in slot i with a message from core
 * already copied into its buffer (a->lock and the ring's lock held, room
 * reserved). */
static void lnx_arm_done(struct lnx_arm *a, int serial, uint32_t i, int core, uint64_t hflags,
			 uint64_t size, uint64_t data, uint64_t tag, uint64_t src)
{
	int tagged = (hflags & LNX_HDR_TAGGED) != 0, has_data = (hflags & LNX_HDR_DATA) != 0;
	const struct lnx_arm_slot *s = &a->s[i];
	lnx_arm_take_slot(a, i);
	lnx_arm_put(a, serial, core, s->ctx, s->buf,
		    FI_RECV | (tagged ? FI_TAGGED : FI_MSG) | (has_data ? FI_REMOTE_CQ_DATA : 0),
		    size, has_data ? data : 0, tag, src);
}

static int32_t lnx_arm_peer_claim(struct lnx_arm *a, int tagged, uint64_t tag, uint64_t src,
				  uint64_t size, void **ctx, void **buf, uint64_t *len)
{
	int32_t i = lnx_arm_match(a, tagged ? LNX_HDR_TAGGED : 0, tag, src);
	if (i < 0 || size > a->s[i].len)
		return -1;
	*ctx = a->s[i].ctx;
	*buf = a->s[i].buf;
	*len = a->s[i].len;
	lnx_arm_take_slot(a, (uint32_t)i);
	return i;
}

static int lnx_arm_peer_put(struct lnx_arm *a, int serial, void *ctx, void *buf, uint64_t flags,
			    uint64_t len, uint64_t data, uint64_t tag, uint64_t src)
{
	if (!lnx_cring_reserve(a->cring, serial))
		return 0;
	lnx_arm_put(a, serial, 1, ctx, buf, flags, len, data, tag, src);
	return 1;
}

/* A send's completion (lnx_pep_send_lent_big): no receive statistics. */
static int lnx_arm_peer_put_send(struct lnx_arm *a, int serial, void *ctx, uint64_t flags)
{
	if (!lnx_cring_reserve(a->cring, serial))
		return 0;
	lnx_cring_put(a->cring, ctx, NULL, flags, 0, 0, 0, FI_ADDR_NOTAVAIL);
	lnx_unlock(&a->cring->lock, serial);
	return 1;
}

const struct lnx_pep_arm_ops lnx_arm_pep_ops = { .claim = lnx_arm_peer_claim,
						 .put = lnx_arm_peer_put,
						 .put_send = lnx_arm_peer_put_send };

/* lnx_arm_written: the record at position pos of lent ring r if it is
 * written (its stamp stored), else NULL; a stamp of an earlier lap or
 * session reads as not written. */
static const struct lnx_rec *lnx_arm_written(const struct lnx_arm_ring *r, uint64_t pos)
{
	const struct lnx_rec *rec = (const struct lnx_rec *)(r->ring + (pos & r->mask));
	if (__atomic_load_n(&rec->stamp, __ATOMIC_ACQUIRE) != lnx_rec_stamp(pos, r->salt))
		return NULL;
	return rec;
}

/* lnx_arm_rec_len: the length in ring r of the record at position pos,
 * of kind and flags kf and size field size, if it is an eager or
 * rendezvous record C takes that fits before the ring's end; 0 for another
 * kind or a malformed record (Go's). */
static uint64_t lnx_arm_rec_len(const struct lnx_arm_ring *r, uint64_t pos, uint64_t kf,
				uint64_t size)
{
	uint64_t niov = (kf >> 8) & 0xff, need;
	if ((kf & 0xff) == LNX_REC_EAGER && size <= r->eager_max)
		need = lnx_rec_len(size);
	else if ((kf & 0xff) == LNX_REC_RNDV && niov >= 1 && niov <= LNX_REC_MAX_IOV)
		need = lnx_rec_len(niov * LNX_REC_IOV);
	else
		return 0;
	return (pos & r->mask) + need > r->size ? 0 : need;
}

/* The largest rendezvous message C copies (one process_vm_readv, under
 * arm.lock, which Go's disarm spins on); larger ones go to Go's Pull. */
#define LNX_ARM_RNDV_MAX (4ull << 20)
/* lnx_arm_rndv: the record waits in its ring for a receive (no length of a
 * record is this large). */
#define LNX_ARM_WAIT UINT64_MAX
/* The most records lnx_arm_may_wait looks at behind an unmatched one: a
 * window of MPI messages and its acknowledgement. */
#define LNX_ARM_HOLD_RECS 160
/* The most of its ring waiting records may use, as a shift of its size
 * (an eighth): the ring is the sender's flow control, and larger records
 * that wait would stop it, where Go frees the ring at once. */
#define LNX_ARM_HOLD_SHIFT 3

/*
 * lnx_arm_may_wait: the record at r->head, of header flags hflags, that no
 * armed receive takes may wait in its ring for one posted in C (a->lock
 * held) rather than go to Go, which would make it unexpected and keep the
 * endpoint from being lent until a receive takes it. It may while nothing
 * behind it is held up: every record from pos (the end of the unmatched
 * ones) to the last written is an eager or rendezvous message of a kind
 * C takes that no armed receive takes either (C takes the ring in order,
 * so a receive that takes one of them is Go's to serve), they fit in the
 * scan's bound, and together they use at most an eighth of the ring,
 * so the sender is not stopped by a full ring. A receive posted later that
 * takes the first completes in C; one that takes only a later one, a
 * call into Go for any reason (the gate's periodic one included), or more
 * records take them all to Go in order, as before. In an MPI window the
 * peer's first messages (or the acknowledgement ending the window) often
 * arrive before their receives are posted.
 */
static int lnx_arm_may_wait(const struct lnx_arm *a, const struct lnx_arm_ring *r, uint64_t hflags,
			    uint64_t pos)
{
	if (hflags & ~(uint64_t)(LNX_HDR_TAGGED | LNX_HDR_DATA))
		return 0;
	for (int n = 0;; n++) {
		if (pos - r->head > r->size >> LNX_ARM_HOLD_SHIFT)
			return 0;
		const struct lnx_rec *rec = lnx_arm_written(r, pos);
		if (!rec)
			return 1;
		if (n == LNX_ARM_HOLD_RECS)
			return 0;
		uint64_t kf = __atomic_load_n(&rec->kf, __ATOMIC_RELAXED);
		uint64_t size = __atomic_load_n(&rec->size, __ATOMIC_RELAXED);
		uint64_t tag = __atomic_load_n(&rec->tag, __ATOMIC_RELAXED);
		hflags = kf >> 32;
		if ((kf & 0xff) == LNX_REC_PAD && (pos & r->mask) != 0) {
			pos += r->size - (pos & r->mask);
			continue;
		}
		uint64_t need = lnx_arm_rec_len(r, pos, kf, size);
		if (!need || lnx_arm_match(a, hflags, tag, r->src) >= 0)
			return 0; /* another kind, or a receive takes it: Go */
		pos += need;
	}
}

/*
 * lnx_arm_rndv takes the rendezvous record rec of ring r at its head
 * (stamp checked, kind and flags kf, length need; a->lock held) the way shm.Pull and
 * lnx.Endpoint.deliver would for the earliest posted receive that takes
 * it: one process_vm_readv of the sender's buffers into the receive's,
 * an ack in the channel's ack ring, the completion. It returns the
 * record's length in the ring when it completed the receive, 0 when the
 * record needs Go, untouched but for the receive's buffer, which Go's Pull
 * then writes again: no receive takes it whole, CMA is off, or not
 * permitted, or failed (Go tells why and falls back), a malformed record
 * (Go reports it), a full ack ring or completion ring. Every field of the
 * record is read once, and checked as Go's parseRndv checks it, before
 * use: the sender may write anything there.
 */
static uint64_t lnx_arm_rndv(struct lnx_arm *a, int serial, struct lnx_arm_ring *r,
			     const struct lnx_rec *rec, uint64_t need, uint64_t kf)
{
	uint64_t niov = (kf >> 8) & 0xff, hflags = kf >> 32;
	if (!r->cma || (kf & LNX_REC_NOCMA))
		return 0;
	uint64_t size = __atomic_load_n(&rec->size, __ATOMIC_RELAXED);
	uint64_t tag = __atomic_load_n(&rec->tag, __ATOMIC_RELAXED);
	uint64_t data = __atomic_load_n(&rec->data, __ATOMIC_RELAXED);
	uint64_t cookie = __atomic_load_n(&rec->cookie, __ATOMIC_RELAXED);
	if (size == 0 || size > LNX_ARM_RNDV_MAX)
		return 0;
	int32_t k = lnx_arm_match(a, hflags, tag, r->src);
	if (k < 0) {
		/* No receive for it yet: it may wait in its ring for one posted
		 * in C (lnx_arm_may_wait). A blocking MPI send returns only once
		 * its rendezvous is acknowledged, so in a ping-pong the reply is
		 * often here before the receive for it is posted. */
		return lnx_arm_may_wait(a, r, hflags, r->head + need) ? LNX_ARM_WAIT : 0;
	}
	if (size > a->s[k].len)
		return 0; /* a truncation: Go */
	struct iovec riov[LNX_REC_MAX_IOV];
	const uint64_t *body = (const uint64_t *)((const char *)rec + LNX_REC_HDR);
	uint64_t sum = 0;
	for (uint64_t i = 0; i < niov; i++) {
		uint64_t base = __atomic_load_n(&body[2 * i], __ATOMIC_RELAXED);
		uint64_t len = __atomic_load_n(&body[2 * i + 1], __ATOMIC_RELAXED);
		/* shm's maxPiece checks (user addresses are below 2^48) */
		if (len == 0 || len > (1ull << 48) || base > (1ull << 49) || base + len < base)
			return 0;
		sum += len;
		riov[i].iov_base = (void *)(uintptr_t)base;
		riov[i].iov_len = len;
	}
	if (sum != size)
		return 0;
	/* Room for the ack: the sender's consumed position is its word, so a
	 * lie only makes us leave the record to Go, which drops the ack. */
	uint64_t ack_head = __atomic_load_n((const uint64_t *)r->ack_head, __ATOMIC_ACQUIRE);
	if (r->ack_tail - ack_head >= r->ack_mask + 1)
		return 0;
	struct iovec liov = { .iov_base = a->s[k].buf, .iov_len = size };
	if (process_vm_readv((pid_t)r->pid, &liov, 1, riov, niov, 0) != (ssize_t)size)
		return 0;
	if (!lnx_cring_reserve(a->cring, serial))
		return 0;
	struct lnx_ack *ack =
		(struct lnx_ack *)(r->ack + (r->ack_tail & r->ack_mask) * LNX_ACK_BYTES);
	ack->cookie = cookie;
	ack->status = LNX_ACK_OK;
	ack->n = size;
	__atomic_store_n(&ack->stamp, r->ack_tail + 1, __ATOMIC_RELEASE);
	r->ack_tail++;
	r->head += need;
	__atomic_store_n((uint64_t *)r->fwd_head, r->head, __ATOMIC_RELEASE);
	a->pulls++;
	lnx_arm_done(a, serial, (uint32_t)k, 0, hflags, size, data, tag, r->src);
	return need;
}

/*
 * lnx_arm_reap reaps the acks of the rendezvous sends C posted while lent
 * (lnx_fast_put_rndv; a->lock held) as shm's reapAcks does, and completes
 * each send into the CQ's ring: up to budget completions, their number
 * returned. It sets *go and stops, leaving the ack to Go (which adopts the
 * sends, shm.Endpoint.AdoptTx), at an ack it does not know (a cookie of no
 * send of C's: Go skips it), an error status (Go reports the send failed),
 * a full completion ring, or a receiver asking for the fallback copy (Go
 * serves it). A receiver that never acks is Go's too: with sends out the
 * gate still lets a read into Go after skip_max idle ones, and Go then
 * adopts them and checks the receiver's liveness as for its own.
 */
static int lnx_arm_reap(struct lnx_arm *a, int serial, int budget, int *go)
{
	int done = 0;
	for (uint32_t i = 0; i < a->ntx && done < budget && !*go; i++) {
		struct lnx_txslot *s = (struct lnx_txslot *)a->tx[i];
		if (!s->nout)
			continue;
		if (!s->ready ||
		    (uint32_t)__atomic_load_n((const uint64_t *)s->bulk_req, __ATOMIC_RELAXED) !=
			    (uint32_t)s->bulk_seen) {
			*go = 1;
			break;
		}
		while (s->nout && done < budget) {
			const struct lnx_ack *k =
				(const struct lnx_ack *)(s->ack + (s->ack_head & s->ack_mask) *
									  LNX_ACK_BYTES);
			if (__atomic_load_n(&k->stamp, __ATOMIC_ACQUIRE) != s->ack_head + 1)
				break;
			uint64_t cookie = __atomic_load_n(&k->cookie, __ATOMIC_RELAXED);
			uint64_t status = __atomic_load_n(&k->status, __ATOMIC_RELAXED);
			uint32_t idx = (uint32_t)cookie, j = idx & ~LNX_TX_RNDV_BIT;
			struct lnx_txrndv *r = &s->r[j < LNX_TX_RNDV ? j : 0];
			if (!(idx & LNX_TX_RNDV_BIT) || j >= LNX_TX_RNDV || r->state != LNX_TXR_C ||
			    r->gen != (uint32_t)(cookie >> 32) ||
			    (status != LNX_ACK_OK && status != LNX_ACK_DISCARD) ||
			    (r->cq && !lnx_cring_reserve(a->cring, serial))) {
				*go = 1;
				break;
			}
			s->ack_head++;
			__atomic_store_n((uint64_t *)s->ack_pub, s->ack_head, __ATOMIC_RELEASE);
			r->state = LNX_TXR_FREE;
			r->gen++;
			s->nout--;
			if (r->cq) {
				lnx_cring_put(a->cring, r->ctx, NULL,
					      FI_SEND | (r->tagged ? FI_TAGGED : FI_MSG), 0, 0, 0,
					      FI_ADDR_NOTAVAIL);
				lnx_unlock(&a->cring->lock, serial);
				done++;
			}
		}
	}
	return done;
}

/* lnx_arm_tx_out: C has rendezvous sends out (a hint, without the lock:
 * the slots live as long as the endpoint, whose readers we count). */
static int lnx_arm_tx_out(const struct lnx_arm *a)
{
	uint32_t n = __atomic_load_n(&a->ntx, __ATOMIC_RELAXED);
	for (uint32_t i = 0; i < n && i < LNX_ARM_TX; i++) {
		const struct lnx_txslot *s =
			(const struct lnx_txslot *)__atomic_load_n(&a->tx[i], __ATOMIC_RELAXED);
		if (s && __atomic_load_n(&s->nout, __ATOMIC_RELAXED))
			return 1;
	}
	return 0;
}

/* lnx_arm_take_net: lnx_arm_take's network part (a->lock held): read the
 * lent transport's core CQ and complete one receive; what C cannot
 * complete stays stashed for Go. Returns 1 when it completed one, 0 when
 * the core had nothing, or LNX_ARM_GO when the stash needs Go. C takes the
 * stash's events one at a time (lnx_tp_look): the next peek returns what
 * is left of the stash without reading the core, so a window's messages
 * that one read found are completed in C, one core read for all of them;
 * the core is read again only once the stash is empty (a caller that
 * reads many at a time, as Open MPI's ofi MTL reads up to 100, paid a
 * whole core poll per message before). */
static int lnx_arm_take_net(struct lnx_arm *a, int serial)
{
	void *t = (void *)a->net;
	int n = lnx_tp_peek(t);
	if (n == 0)
		return 0;
	struct lnx_tp_msg m;
	int32_t i;
	if (n < 1 || !lnx_tp_look(t, &m) ||
	    (i = lnx_arm_claim(a, serial, m.flags, m.tag, a->net_src, m.size)) < 0)
		return LNX_ARM_GO;
	lnx_copy_payload(a->s[i].buf, m.payload, m.size);
	lnx_tp_consume(t);
	lnx_arm_done(a, serial, (uint32_t)i, 1, m.flags, m.size, m.data, m.tag, a->net_src);
	return 1;
}

/* lnx_arm_ready reports whether a lent ring may hold a record, without
 * the arm lock (lnx_readers_in, lent seen): a head another reader is
 * advancing under the lock reads as a record that is there, and the locked
 * pass looks again. */
static int lnx_arm_ready(const struct lnx_arm *a)
{
	uint32_t n = __atomic_load_n(&a->nrings, __ATOMIC_RELAXED);
	for (uint32_t i = 0; i < n; i++) {
		const struct lnx_arm_ring *r = &a->r[i];
		if (lnx_arm_written(r, __atomic_load_n(&r->head, __ATOMIC_RELAXED)))
			return 1;
	}
	return 0;
}

/*
 * lnx_arm_take checks the rings Go lent (struct lnx_arm) for records and
 * completes up to budget receives with them. It returns the number
 * completed; 0 when the rings hold nothing new (or only records waiting
 * for their receives, lnx_arm_may_wait); LNX_ARM_GO when, before
 * completing any, it found a record that needs Go (another kind, no
 * receive for it that may wait, a truncation, a full completion ring) or
 * Go is taking the rings back. The checks mirror lnx.Endpoint.arrive and complete for the case
 * they cover: an eager or shm rendezvous message and the earliest posted
 * receive that takes it whole. With a lent transport, the shm rings come
 * first (as in Go's progress), then the network core's CQ. When it finds
 * the rings empty (and no network core lent) it also answers lnx_cq_idle
 * into *idle (0 or 1; left alone otherwise). serial: the CQ's domain is
 * serial (see lnx_lock).
 */
int lnx_arm_take(struct lnx_gate *g, int serial, int budget, int *idle)
{
	if (!__atomic_load_n(&g->arm, __ATOMIC_RELAXED))
		return 0;
	/* readers: an endpoint leaving clears arm and waits for us (quiesce)
	 * before its memory goes; in a serial domain it cannot leave while we
	 * read. */
	lnx_readers_in(g, serial);
	struct lnx_arm *a = (struct lnx_arm *)__atomic_load_n(&g->arm, __ATOMIC_SEQ_CST);
	int done = 0, go = 0;
	if (!a || !__atomic_load_n(&a->lent, __ATOMIC_ACQUIRE))
		goto out;
	if (!a->net && !a->pep && !lnx_arm_ready(a) && !lnx_arm_tx_out(a)) {
		/* Nothing to take: the idle answer under the same hold of
		 * readers, without the arm lock (an idle poll of Open MPI's
		 * progress loop costs two locked operations, not five). */
		if (idle)
			*idle = lnx_cq_idle_held(g);
		goto out;
	}
	if (!lnx_trylock(&a->lock, serial)) {
		go = 1;
		goto out;
	}
	if (!__atomic_load_n(&a->lent, __ATOMIC_ACQUIRE))
		goto unlock;
	if (a->pep && lnx_pep_held((void *)a->pep)) {
		/* Messages the core left for Go come first: Go may match
		 * them to receives armed here. */
		go = 1;
		goto unlock;
	}
	if (a->ntx)
		done = lnx_arm_reap(a, serial, budget, &go);
	for (uint32_t i = 0; i < a->nrings && !go && done < budget; i++) {
		struct lnx_arm_ring *r = &a->r[i];
		while (done < budget) {
			uint64_t off = r->head & r->mask;
			const struct lnx_rec *rec = lnx_arm_written(r, r->head);
			if (!rec)
				break;
			uint64_t kf = rec->kf, hflags = kf >> 32, size = rec->size;
			int32_t k;
			if ((kf & 0xff) == LNX_REC_PAD && off != 0) {
				/* The sender wrapped (shm's Poll does the same; a pad
				 * at the ring's start is corruption Go reports). */
				r->head += r->size - off;
				__atomic_store_n((uint64_t *)r->fwd_head, r->head,
						 __ATOMIC_RELEASE);
				continue;
			}
			uint64_t need = lnx_arm_rec_len(r, r->head, kf, size);
			if (!need) {
				go = 1; /* another kind, or corruption Go reports */
				break;
			}
			if ((kf & 0xff) == LNX_REC_RNDV) {
				uint64_t n = lnx_arm_rndv(a, serial, r, rec, need, kf);
				if (n == LNX_ARM_WAIT)
					break; /* the ring's last: the next ring */
				if (!n) {
					go = 1;
					break;
				}
				done++;
				continue;
			}
			if ((k = lnx_arm_claim(a, serial, hflags, rec->tag, r->src, size)) < 0) {
				/* No receive takes it yet: it may wait (the next
				 * ring); a truncation or a full completion ring is
				 * Go's. */
				if (lnx_arm_match(a, hflags, rec->tag, r->src) < 0 &&
				    lnx_arm_may_wait(a, r, hflags, r->head + need))
					break;
				go = 1;
				break;
			}
			lnx_copy_payload(a->s[k].buf, (const char *)rec + LNX_REC_HDR, size);
			r->head += need;
			__atomic_store_n((uint64_t *)r->fwd_head, r->head, __ATOMIC_RELEASE);
			lnx_arm_done(a, serial, (uint32_t)k, 0, hflags, size, rec->data, rec->tag,
				     r->src);
			done++;
		}
	}
	if (!go && done < budget && a->net) {
		int n = lnx_arm_take_net(a, serial);
		if (n == LNX_ARM_GO)
			go = 1;
		else
			done += n;
		/* Nothing anywhere: the idle answer under this hold of readers,
		 * rather than the caller's own lnx_cq_idle after it. */
		if (!done && !go && idle)
			*idle = lnx_cq_idle_held(g);
	}
	if (!go && done < budget && a->pep) {
		int left = 0;
		done += lnx_pep_take((void *)a->pep, a, serial, &lnx_arm_pep_ops, &left);
		if (left) {
			/* No more receives armed in C before Go ran: it may
			 * owe one of them a message the core left to it. */
			__atomic_store_n(&a->rearm, 0, __ATOMIC_RELAXED);
			go = 1;
		}
	}
unlock:
	lnx_unlock(&a->lock, serial);
out:
	lnx_readers_out(g, serial);
	return done ? done : go ? LNX_ARM_GO : 0;
}
