/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * A CQ's C side of fi_cq_read: reading the completion ring C's fast paths
 * fill (struct lnx_cring; they append with lnx_cring_reserve and
 * lnx_cring_put, lnx_internal.h), and the gate (struct lnx_gate) that
 * answers an idle poll without entering Go. Go's side of the gate is
 * lnx/gate.go.
 */
#include "lnx_capi.h"
#include "lnx_internal.h"

/* lnx_gate_quiet: no watched word changed and Go is not rewriting them
 * (lnx_readers_in). */
static int lnx_gate_quiet(struct lnx_gate *g)
{
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
	return idle;
}

/* About how long a run of idle answers between two clock reads lasts:
 * how late past due a quiet network core's poll may come. A clock read
 * (vDSO, some 20 ns) then costs about 1% of the time spent polling. With
 * a fixed 64 idle answers per clock read, an application that polls every
 * millisecond (a compute loop's MPI_Test, or a loaded CPU) had that core
 * polled every 64 ms, and a peer's one-sided operation it serves waited as
 * long; a lent tcp;ofi_rxm core, whose reads make system calls, took
 * about 100 us for 64. */
#define LNX_GATE_CLOCK_SLACK_NS 2000u

/* lnx_gate_clock reads the clock for due and fits clock_every to how far
 * apart the reads since the last one came: every read while they are
 * sparse, back to skip_max (doubling) once they are dense again. */
static uint64_t lnx_gate_clock(struct lnx_gate *g, uint32_t skip)
{
	uint64_t now = lnx_mono_ns(), every = g->clock_every ? g->clock_every : skip;
	uint64_t span = now - g->clock_last;
	if (g->clock_last && span > LNX_GATE_CLOCK_SLACK_NS)
		every = every * LNX_GATE_CLOCK_SLACK_NS / span;
	else if (span < LNX_GATE_CLOCK_SLACK_NS / 2)
		every *= 2;
	g->clock_every = every < 1 ? 1 : every > skip ? skip : every;
	g->clock_last = now;
	return now;
}

/* lnx_gate_due: the checks before the watches; 0 means not idle. */
static int lnx_gate_due(struct lnx_gate *g)
{
	if (__atomic_load_n(&g->pending, __ATOMIC_ACQUIRE) ||
	    __atomic_load_n(&g->posts, __ATOMIC_ACQUIRE))
		return 0;
	uint32_t skip = __atomic_load_n(&g->skip_max, __ATOMIC_RELAXED);
	uint64_t due = __atomic_load_n(&g->due, __ATOMIC_RELAXED);
	uint64_t every = due && g->clock_every && g->clock_every < skip ? g->clock_every : skip;
	if (g->idle >= every) {
		/* Time for Go's slower duties, unless Go gave a clock (a quiet
		 * network core is polled on it) and it is not time yet: then
		 * the clock is read once per clock_every idle answers, and Go
		 * runs when the core is due, not skip_max times as often. */
		if (!due)
			return 0;
		if (lnx_gate_clock(g, skip) >= due) {
			g->idle = skip; /* Go's takeIdle: the slower duties' turn */
			return 0;
		}
		g->idle = 0;
	}
	return 1;
}

/*
 * lnx_cq_idle answers whether a poll would find nothing, without entering
 * Go (see struct lnx_gate). Any doubt (a watch changed, Go rewriting the
 * watches, completions pending, open) means "not idle". readers lets Go
 * wait out scans before it unmaps a region the watches point into (in a
 * serial domain, see lnx_lock, it cannot unmap while we scan);
 * lnx_cq_idle_held is the same for a caller that holds it already.
 */
int lnx_cq_idle(struct lnx_gate *g, int serial)
{
	if (!lnx_gate_due(g))
		return 0;
	lnx_readers_in(g, serial);
	int idle = lnx_gate_quiet(g);
	lnx_readers_out(g, serial);
	if (idle)
		g->idle++; /* a hint only: racing threads may lose counts */
	return idle;
}

int lnx_cq_idle_held(struct lnx_gate *g)
{
	int idle = lnx_gate_due(g) && lnx_gate_quiet(g);
	if (idle)
		g->idle++;
	return idle;
}

/* lnx_cring_read returns the completions C queued (fast sends, armed
 * receives), in the CQ's format. */
ssize_t lnx_cring_read(struct lnx_cring *r, int serial, void *buf, size_t count, fi_addr_t *src)
{
	if (__atomic_load_n(&r->tail, __ATOMIC_ACQUIRE) ==
		    __atomic_load_n(&r->head, __ATOMIC_RELAXED) ||
	    !buf)
		return 0;
	lnx_lock(&r->lock, serial);
	size_t n = 0;
	for (; n < count && r->head != r->tail; n++, r->head++) {
		const typeof(r->e[0]) *x = &r->e[r->head % LNX_CRING];
		switch (r->format) {
		case FI_CQ_FORMAT_CONTEXT:
			((struct fi_cq_entry *)buf)[n] =
				(struct fi_cq_entry){ .op_context = x->ctx };
			break;
		case FI_CQ_FORMAT_MSG:
			((struct fi_cq_msg_entry *)buf)[n] =
				(struct fi_cq_msg_entry){ .op_context = x->ctx,
							  .flags = x->flags,
							  .len = x->len };
			break;
		case FI_CQ_FORMAT_DATA:
			((struct fi_cq_data_entry *)buf)[n] =
				(struct fi_cq_data_entry){ .op_context = x->ctx,
							   .flags = x->flags,
							   .len = x->len,
							   .buf = x->buf,
							   .data = x->data };
			break;
		default:
			((struct fi_cq_tagged_entry *)buf)[n] =
				(struct fi_cq_tagged_entry){ .op_context = x->ctx,
							     .flags = x->flags,
							     .len = x->len,
							     .buf = x->buf,
							     .data = x->data,
							     .tag = x->tag };
		}
		if (src)
			src[n] = x->src;
	}
	lnx_unlock(&r->lock, serial);
	return (ssize_t)n;
}
