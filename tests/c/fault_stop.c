/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * fault_stop: a peer stopped (SIGSTOP) for longer than FI_LNX_PEER_TIMEOUT
 * in the middle of mixed traffic, then continued (SIGCONT), is slow, not
 * gone: after SIGCONT every operation of both sides completes successfully
 * and every byte arrives intact, in the right buffer with the right tag and
 * length.
 *
 * Usage: fault_stop [shm|link|tcp]   (ctest: tcp, FI_LNX_PEER_TIMEOUT=2s;
 *        and tcp with the default timeout, 10 s, and LNX_STOP_MS=12000)
 *
 * Both processes post a receive for each of the other's N messages (sizes
 * cycling from 0 bytes to 1 MiB: inject, eager, split, rendezvous), then
 * send theirs. Rank 0 stops rank 1 before its first send, so that the core
 * has to connect to a stopped process, and keeps sending for STOP_MS; later,
 * in the middle of the traffic, rank 1 does the same to rank 0. (Before lnx
 * asked the peer's kernel whether its process still listens, a peer the
 * core could not reach for FI_LNX_PEER_TIMEOUT was declared gone: one
 * side's sends failed with -FI_EIO while the other's 64 KiB and 1 MiB sends
 * never completed.) LNX_STOP_MS sets how long each stop lasts (default
 * 5000 ms).
 */
#include <signal.h>
#include <sys/types.h>
#include <unistd.h>
#include "common.h"

static int N = 84;	   /* messages each way (LNX_STOP_MSGS) */
static int STOP_MS = 5000; /* each stop (LNX_STOP_MS) */
static const size_t sizes[] = { 0, 8, 1000, 16000, 16384, 65536, 1u << 20 };
#define NSIZES (sizeof(sizes) / sizeof(sizes[0]))
/* The message index after which each rank stops the other. */
static int stop_at[2] = { -1, 55 }; /* -1: before the first send */

static pid_t g_other;
static uint64_t g_cont_at; /* when to SIGCONT the other; 0: not stopped */

static void pump(void)
{
	if (g_cont_at && now_ms() >= g_cont_at) {
		CHECK(kill(g_other, SIGCONT));
		g_cont_at = 0;
		note("SIGCONT sent to the peer (pid %d)", (int)g_other);
	}
}

static size_t size_of(int i)
{
	return sizes[(size_t)i % NSIZES];
}
static uint64_t seed_of(int rank, int i)
{
	return (uint64_t)rank * 1000 + (uint64_t)i + 1;
}

static void role(struct peer *p, void *arg)
{
	uint8_t **sbuf = xmalloc(N * sizeof(*sbuf)), **rbuf = xmalloc(N * sizeof(*rbuf));
	struct fi_context2 *sctx = xmalloc(N * sizeof(*sctx)), *rctx = xmalloc(N * sizeof(*rctx));
	int *rdone = calloc(N, sizeof(int)), *sdone = calloc(N, sizeof(int));
	pid_t me = getpid();

	oob_send(p, other(p), &me, sizeof(me));
	oob_recv(p, other(p), &g_other, sizeof(g_other));
	for (int i = 0; i < N; i++) {
		sbuf[i] = xmalloc(size_of(i) + 1);
		rbuf[i] = xmalloc(size_of(i) + 1);
		fill_pattern(sbuf[i], size_of(i), seed_of(p->rank, i));
		memset(rbuf[i], 0xee, size_of(i) + 1);
		CHECK(fi_trecv(p->l.ep, rbuf[i], size_of(i), NULL, peer_addr(p),
			       0x5000 + (uint64_t)i, 0, &rctx[i]));
	}
	barrier(p); /* every receive is posted on both sides */

	uint64_t deadline = now_ms() + 50000 + 2 * (uint64_t)STOP_MS;
	if (stop_at[p->rank] < 0) {
		CHECK(kill(g_other, SIGSTOP));
		g_cont_at = now_ms() + STOP_MS;
		note("peer (pid %d) stopped before the first send, for %d ms", (int)g_other,
		     STOP_MS);
	}
	for (int i = 0; i < N; i++) {
		ssize_t r;
		while ((r = fi_tsend(p->l.ep, sbuf[i], size_of(i), NULL, peer_addr(p),
				     0x5000 + (uint64_t)i, &sctx[i])) == -FI_EAGAIN) {
			pump();
			EXPECT(cq_progress(p->l.cq) >= 0, "progress failed");
			EXPECT(now_ms() < deadline,
			       "send %d (%zu bytes) refused with -FI_EAGAIN until the deadline", i,
			       size_of(i));
		}
		EXPECT(r == 0, "send %d (%zu bytes) -> %zd (%s)", i, size_of(i), r,
		       fi_strerror((int)-r));
		if (i == stop_at[p->rank]) {
			CHECK(kill(g_other, SIGSTOP));
			g_cont_at = now_ms() + STOP_MS;
			note("peer (pid %d) stopped after send %d, for %d ms", (int)g_other, i,
			     STOP_MS);
		}
		pump();
	}

	/* Every send and every receive must complete successfully. */
	int left = 2 * N;
	while (left > 0) {
		struct fi_cq_tagged_entry e;
		struct fi_cq_err_entry err;
		pump();
		int r = wait_cq(p->l.cq, &e, NULL, &err, 200);
		if (r == -FI_ETIMEDOUT) {
			EXPECT(now_ms() < deadline, "%d operations never completed", left);
			continue;
		}
		if (r != 0) {
			struct fi_context2 *c = err.op_context;
			FAIL("error completion (%d, %s) for %s %ld", r, fi_strerror(-r),
			     c >= sctx && c < sctx + N ? "send" : "receive",
			     c >= sctx && c < sctx + N ? (long)(c - sctx) : (long)(c - rctx));
		}
		struct fi_context2 *c = e.op_context;
		if (c >= sctx && c < sctx + N) {
			int i = (int)(c - sctx);
			EXPECT(!sdone[i], "send %d completed twice", i);
			sdone[i] = 1;
		} else {
			EXPECT(c >= rctx && c < rctx + N, "completion for an unknown context %p",
			       (void *)c);
			int i = (int)(c - rctx);
			EXPECT(!rdone[i], "receive %d completed twice", i);
			rdone[i] = 1;
			EXPECT(e.len == size_of(i), "receive %d: len %zu, want %zu", i, e.len,
			       size_of(i));
			EXPECT(e.tag == 0x5000 + (uint64_t)i, "receive %d: tag %#lx", i,
			       (unsigned long)e.tag);
			EXPECT_PATTERN(rbuf[i], size_of(i), seed_of(other(p), i));
			EXPECT(rbuf[i][size_of(i)] == 0xee, "receive %d: written past its length",
			       i);
		}
		left--;
	}
	EXPECT(g_cont_at == 0, "the peer is still stopped");
	note("all %d sends and %d receives completed with intact data", N, N);
	for (int i = 0; i < N; i++) {
		free(sbuf[i]);
		free(rbuf[i]);
	}
	free(sbuf), free(rbuf), free(sctx), free(rctx), free(rdone), free(sdone);
}

int main(int argc, char **argv)
{
	struct lnx_opts o;
	msg_test_opts(argc, argv, &o);
	if (getenv("LNX_STOP_MSGS"))
		N = atoi(getenv("LNX_STOP_MSGS"));
	if (getenv("LNX_STOP_MS"))
		STOP_MS = atoi(getenv("LNX_STOP_MS"));
	if (getenv("LNX_STOP_AT0"))
		stop_at[0] = atoi(getenv("LNX_STOP_AT0"));
	EXPECT(N > stop_at[1], "LNX_STOP_MSGS must exceed %d", stop_at[1]);
	role_fn roles[2] = { role, role };
	int r = run_group("stop_cont", &o, 2, roles, NULL, 90 + 2 * STOP_MS / 1000);
	printf("fault_stop: %s\n", r ? "FAIL" : "PASS");
	return r ? 1 : 0;
}
