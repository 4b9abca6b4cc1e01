/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * Receives posted without a call into Go (struct lnx_fast's rxq): queued
 * for Go to post, in order, the next time it runs for the endpoint, or
 * armed behind the receives Go lent C (arm.c). Go's
 * side is lnx/fast.go and lnx/arm.go.
 */
#include "lnx_capi.h"
#include "lnx_internal.h"
#include "lnx_ops.h"

/*
 * lnx_arm_post arms a receive behind those lent (struct lnx_arm's rearm):
 * only while the rings are lent, a slot is free and no receive is queued
 * for Go, so the armed ones are every receive outstanding, in post order.
 * Go posts it to its own queue when it takes the rings back, if it is
 * still pending then. Returns 1 when armed.
 */
static int lnx_arm_post(struct lnx_fast *f, int serial, const struct iovec *iov, void **desc,
			size_t count, fi_addr_t src, uint64_t tag, uint64_t ignore, void *ctx,
			int kind)
{
	struct lnx_arm *a = &f->arm;
	if (!__atomic_load_n(&a->rearm, __ATOMIC_RELAXED) ||
	    !__atomic_load_n(&a->lent, __ATOMIC_RELAXED))
		return 0;
	if (!lnx_trylock(&a->lock, serial))
		return 0;
	int ok = 0;
	lnx_lock(&f->rxq_lock, serial);
	if (__atomic_load_n(&a->lent, __ATOMIC_ACQUIRE) && a->rearm &&
	    a->tail - a->head < LNX_ARM_SLOTS && __atomic_load_n(&f->rx_on, __ATOMIC_ACQUIRE) &&
	    f->rxq_tail == __atomic_load_n(&f->rxq_head, __ATOMIC_ACQUIRE)) {
		int tagged = (kind & LNX_OP_TAGGED) != 0;
		uint32_t i = a->tail & (LNX_ARM_SLOTS - 1);
		struct lnx_arm_slot *s = &a->s[i];
		s->buf = count ? iov[0].iov_base : NULL;
		s->len = count ? iov[0].iov_len : 0;
		s->desc = count && desc ? (uintptr_t)desc[0] : 0;
		s->ctx = ctx;
		s->src = a->directed ? src : FI_ADDR_UNSPEC;
		s->tag = tag;
		s->ignore = tagged ? ignore : ~(uint64_t)0;
		s->tagged = tagged;
		s->go_index = -1;
		a->done[i] = 0;
		a->tail++;
		ok = 1;
	}
	lnx_unlock(&f->rxq_lock, serial);
	lnx_unlock(&a->lock, serial);
	return ok;
}

/*
 * lnx_fast_recv queues a receive for Go (see struct lnx_fast): posting
 * then costs no call into Go, and the call that takes it is usually a poll
 * made while the message is still on its way. Go's posting cannot fail for
 * what is queued here (the endpoint is enabled while rx_on is set; errors
 * come only from the ...msg flags and bad buffers, which go to Go); a full
 * queue goes to Go too, which takes the queue first, so order holds.
 * serial: the endpoint's domain is serial (see lnx_lock).
 */

ssize_t lnx_fast_recv(struct lnx_fast *f, int serial, const struct iovec *iov, void **desc,
		      size_t count, fi_addr_t src, uint64_t tag, uint64_t ignore, void *ctx,
		      int kind)
{
	if (!__atomic_load_n(&f->rx_on, __ATOMIC_ACQUIRE) || (kind & LNX_OP_EXPLICIT) || count > 1)
		return LNX_FAST_DECLINED;
	struct lnx_gate *g = __atomic_load_n(&f->rx_gate, __ATOMIC_ACQUIRE);
	if (!g || (count && iov[0].iov_len && !iov[0].iov_base))
		return LNX_FAST_DECLINED;
	if (lnx_arm_post(f, serial, iov, desc, count, src, tag, ignore, ctx, kind))
		return 0;
	ssize_t ret = LNX_FAST_DECLINED;
	lnx_lock(&f->rxq_lock, serial);
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
		if (serial) /* no other thread adds or subtracts */
			__atomic_store_n(&g->posts, g->posts + 1, __ATOMIC_RELEASE);
		else
			__atomic_fetch_add(&g->posts, 1, __ATOMIC_RELEASE);
		ret = 0;
	}
	lnx_unlock(&f->rxq_lock, serial);
	return ret;
}
