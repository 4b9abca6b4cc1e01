/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * gate_clock: capi/cq_ring.c's gate (struct lnx_gate) when Go gave it a
 * clock (due: when a quiet network core Go polls, such as the transport
 * beside a peer-API core that serves other processes' one-sided
 * operations, is next due). Without Go: the test plays Go's part by
 * setting due and skip_max.
 *
 * An application that polls its CQ far apart (a compute loop's MPI_Test,
 * a loaded CPU) must get the read that enters Go soon after due, not only
 * once skip_max idle answers have passed: at 64 idle answers before each
 * clock read, a peer's one-sided operation on the CPU-loaded Debian 13
 * suite waited about 90 ms. A busy poll loop keeps reading the clock once
 * per skip_max idle answers.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <stdint.h>
#include <time.h>
#include <unistd.h>
#include <rdma/fabric.h>
#include "lnx_capi.h"
#include "lnx_internal.h"
#include "unit.h"

#define SKIP 64

static uint64_t mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Idle answers, with pause_us between reads, before a read enters Go
 * (at most limit). */
static int reads_until_go(struct lnx_gate *g, int pause_us, int limit)
{
	for (int i = 0; i < limit; i++) {
		if (!lnx_cq_idle(g, 1))
			return i;
		if (pause_us)
			usleep(pause_us);
	}
	return limit;
}

int main(void)
{
	struct lnx_gate *g = zalloc(sizeof(*g));
	g->skip_max = SKIP;

	/* Reads 200 us apart, a core due 1 ms from now: the read that
	 * enters Go comes within a few reads of due. The first two runs of
	 * skip_max idle answers (two clock reads) teach the gate how far
	 * apart they come. */
	g->due = mono_ns() + 3600ull * 1000000000u;
	int n = reads_until_go(g, 200, 2 * SKIP + 2);
	CHECK(n == 2 * SKIP + 2, "a core due in an hour: Go entered after %d idle answers", n);
	g->idle = 0;
	uint64_t due = mono_ns() + 1000000u;
	g->due = due;
	n = reads_until_go(g, 200, 4 * SKIP);
	uint64_t late = mono_ns() - due;
	CHECK(n < 16,
	      "reads 200 us apart, due in 1 ms: Go entered after %d idle answers "
	      "(%llu us past due), want within a few reads of due",
	      n, (unsigned long long)(late / 1000));
	CHECK(g->idle >= SKIP,
	      "the read that entered at due is not the slower duties' turn (idle %u)", g->idle);

	/* Dense reads again: the clock goes back to one read per run of
	 * idle answers (about 2 us of them), not one per poll. The most
	 * seen, so that a preemption at the end does not count. */
	g->idle = 0;
	g->due = mono_ns() + 3600ull * 1000000000u;
	uint64_t most = 0;
	for (int i = 0; i < 100 * SKIP; i++) {
		CHECK(lnx_cq_idle(g, 1), "dense reads: read %d entered Go before due", i);
		if (g->clock_every > most)
			most = g->clock_every;
	}
	CHECK(most >= 16 && most <= SKIP,
	      "dense reads: the clock is read every %llu idle answers at most, want 16 to %d",
	      (unsigned long long)most, SKIP);

	/* No clock (due 0): Go runs every skip_max idle answers, as before. */
	g->idle = 0;
	g->due = 0;
	n = reads_until_go(g, 200, 4 * SKIP);
	CHECK(n == SKIP, "no clock: Go entered after %d idle answers, want %d", n, SKIP);

	if (unit_failures)
		return 1;
	printf("gate_clock: ok\n");
	return 0;
}
