/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * The armed receive (struct lnx_arm): fi_cq_read completing the one receive
 * Go lent, from the inbound shm rings and the network transport lent with
 * it, without a call into Go. Go's side is lnx/arm.go.
 */
#include <string.h>
#include "lnx_capi.h"
#include "lnx_internal.h"
#include "lnx_tp_lend.h"

/* lnx_arm_takes: whether the armed receive takes an eager message with
 * lnx header flags hflags, tag, size bytes, from src (a->lock held). */
static int lnx_arm_takes(const struct lnx_arm *a, uint64_t hflags, uint64_t tag, uint64_t size,
			 uint64_t src)
{
	if (!a->on || (hflags & ~(uint64_t)(LNX_HDR_TAGGED | LNX_HDR_DATA)) || size > a->len)
		return 0;
	int tagged = (hflags & LNX_HDR_TAGGED) != 0;
	if (tagged != (int)a->tagged || (tagged && ((tag ^ a->tag) & ~a->ignore)))
		return 0;
	return a->src == FI_ADDR_UNSPEC || a->src == src;
}

/* lnx_arm_done completes the armed receive with a message from core (0 shm,
 * 1 network) already copied into its buffer (a->lock and cr->lock held,
 * room reserved). */
static void lnx_arm_done(struct lnx_arm *a, struct lnx_cring *cr, int core, uint64_t hflags,
			 uint64_t size, uint64_t data, uint64_t tag, uint64_t src)
{
	int tagged = (hflags & LNX_HDR_TAGGED) != 0, has_data = (hflags & LNX_HDR_DATA) != 0;
	if (!a->c_armed)
		a->go_done = 1;
	__atomic_store_n(&a->on, 0, __ATOMIC_RELEASE);
	a->done_msgs[core]++;
	a->done_bytes[core] += size;
	lnx_cring_put(cr, a->ctx, a->buf,
		      FI_RECV | (tagged ? FI_TAGGED : FI_MSG) | (has_data ? FI_REMOTE_CQ_DATA : 0),
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
	if (n != 1 || !a->on || !lnx_tp_look(t, &m) ||
	    !lnx_arm_takes(a, m.flags, m.tag, m.size, a->net_src) || !lnx_cring_reserve(a->cring))
		return LNX_ARM_GO;
	if (m.size)
		memcpy(a->buf, m.payload, m.size);
	lnx_tp_consume(t);
	lnx_arm_done(a, a->cring, 1, m.flags, m.size, m.data, m.tag, a->net_src);
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
int lnx_arm_take(struct lnx_gate *g)
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
		uint64_t need =
			(LNX_REC_HDR + size + LNX_REC_LINE - 1) & ~(uint64_t)(LNX_REC_LINE - 1);
		if ((kf & 0xff) != LNX_REC_EAGER || size > r->eager_max || off + need > r->size)
			break; /* another kind, or corruption Go reports */
		if (!lnx_arm_takes(a, hflags, rec->tag, size, r->src) ||
		    !lnx_cring_reserve(a->cring))
			break;
		if (size)
			memcpy(a->buf, (const char *)rec + LNX_REC_HDR, size);
		r->head += need;
		__atomic_store_n((uint64_t *)r->fwd_head, r->head, __ATOMIC_RELEASE);
		lnx_arm_done(a, a->cring, 0, hflags, size, rec->data, rec->tag, r->src);
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
