/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * go_quiet: a long stream of small tagged messages between two processes,
 * every one checked, for a ctest that reads FI_LNX_DUMP_STATS's "Go
 * runtime while open" line (tests/c/go_quiet.sh): lnx's data paths must
 * not allocate per message, so no garbage collection runs. A collection
 * pauses every thread that calls into Go, and under a real-time
 * scheduling class its background work holds a CPU for up to a round-robin
 * time slice (100 ms) while the application's thread waits for it.
 *
 * Usage: go_quiet [shm|link|tcp|<links> [distinct]]   (see common.h)
 *
 * A and B ping-pong PINGS messages (fi_tsenddata, one receive posted at a
 * time, the one Open MPI's ofi MTL makes), then B posts windows of WIN
 * receives, each for its own tag, and A sends each window (fi_tsenddata
 * and fi_tinjectdata alternating) and waits for B's zero-byte go-ahead.
 * Each receive must complete with its context, length, tag, CQ data,
 * source and payload, and nothing past the length written.
 *
 * With GO_QUIET_LOGS=PREFIX each process writes its stderr to PREFIX.<rank>
 * (two processes writing to one pipe interleave inside libfabric's log
 * lines, which go_quiet.sh reads).
 */
#include <fcntl.h>
#include <unistd.h>
#include "common.h"

#define PINGS	  20000
#define WINS	  300
#define WIN	  32
#define LEN	  64
#define T_PING	  0x100000000ull
#define T_PONG	  0x200000000ull
#define T_WIN	  0x300000000ull
#define T_GO	  0x400000000ull
#define GUARD	  16
#define GUARD_VAL 0xa5

static void fill(uint8_t *b, uint64_t seq)
{
	for (int i = 0; i < LEN; i++)
		b[i] = (uint8_t)(seq * 131 + (uint64_t)i * 7 + 1);
	memset(b + LEN, GUARD_VAL, GUARD);
}

static void check(const uint8_t *b, uint64_t seq, const char *what)
{
	for (int i = 0; i < LEN; i++)
		if (b[i] != (uint8_t)(seq * 131 + (uint64_t)i * 7 + 1))
			FAIL("%s %llu: byte %d is %#x, want %#x", what, (unsigned long long)seq, i,
			     b[i], (uint8_t)(seq * 131 + (uint64_t)i * 7 + 1));
	for (int i = 0; i < GUARD; i++)
		if (b[LEN + i] != GUARD_VAL)
			FAIL("%s %llu: byte %d past the message was written", what,
			     (unsigned long long)seq, LEN + i);
}

/* Waits for the completion of receive ctx: len, tag, data and source. */
static void want_recv(struct peer *p, void *ctx, uint64_t tag, uint64_t data, size_t len,
		      const char *what)
{
	struct fi_cq_tagged_entry e;
	fi_addr_t src = FI_ADDR_NOTAVAIL;
	int r = wait_cq(p->l.cq, &e, &src, NULL, WAIT_MS);
	if (r)
		FAIL("%s: waiting for a receive: %d (%s)", what, r, fi_strerror(-r));
	EXPECT(e.op_context == ctx, "%s: context %p, want %p", what, e.op_context, ctx);
	EXPECT((e.flags & (FI_RECV | FI_TAGGED)) == (FI_RECV | FI_TAGGED), "%s: flags %#llx", what,
	       (unsigned long long)e.flags);
	EXPECT(e.len == len, "%s: len %zu, want %zu", what, e.len, len);
	EXPECT(e.tag == tag, "%s: tag %#llx, want %#llx", what, (unsigned long long)e.tag,
	       (unsigned long long)tag);
	EXPECT((e.flags & FI_REMOTE_CQ_DATA) && e.data == data,
	       "%s: data %#llx (flags %#llx), want %#llx", what, (unsigned long long)e.data,
	       (unsigned long long)e.flags, (unsigned long long)data);
	EXPECT(src == peer_addr(p), "%s: source %#llx, want %#llx", what, (unsigned long long)src,
	       (unsigned long long)peer_addr(p));
}

/* Waits for the send completion of ctx. */
static void want_send(struct peer *p, void *ctx, const char *what)
{
	struct fi_cq_tagged_entry e;
	int r = wait_cq(p->l.cq, &e, NULL, NULL, WAIT_MS);
	if (r)
		FAIL("%s: waiting for a send completion: %d (%s)", what, r, fi_strerror(-r));
	EXPECT(e.op_context == ctx && (e.flags & FI_SEND),
	       "%s: send completion %p flags %#llx, want %p", what, e.op_context,
	       (unsigned long long)e.flags, ctx);
}

static void ping_a(struct peer *p, uint8_t *sb, uint8_t *rb)
{
	struct fi_context2 sc, rc;
	for (uint64_t i = 0; i < PINGS; i++) {
		memset(rb, 0, LEN + GUARD);
		memset(rb + LEN, GUARD_VAL, GUARD);
		POST(p->l.cq, fi_trecv(p->l.ep, rb, LEN, NULL, peer_addr(p), T_PONG | i, 0, &rc));
		fill(sb, i);
		POST(p->l.cq,
		     fi_tsenddata(p->l.ep, sb, LEN, NULL, i, peer_addr(p), T_PING | i, &sc));
		want_send(p, &sc, "ping");
		want_recv(p, &rc, T_PONG | i, ~i, LEN, "pong");
		check(rb, ~i, "pong");
	}
}

static void ping_b(struct peer *p, uint8_t *sb, uint8_t *rb)
{
	struct fi_context2 sc, rc;
	for (uint64_t i = 0; i < PINGS; i++) {
		memset(rb, 0, LEN + GUARD);
		memset(rb + LEN, GUARD_VAL, GUARD);
		POST(p->l.cq, fi_trecv(p->l.ep, rb, LEN, NULL, peer_addr(p), T_PING | i, 0, &rc));
		want_recv(p, &rc, T_PING | i, i, LEN, "ping");
		check(rb, i, "ping");
		fill(sb, ~i);
		POST(p->l.cq,
		     fi_tsenddata(p->l.ep, sb, LEN, NULL, ~i, peer_addr(p), T_PONG | i, &sc));
		want_send(p, &sc, "pong");
	}
}

static void role_a(struct peer *p, void *arg)
{
	(void)arg;
	uint8_t *sb = xmalloc((LEN + GUARD) * WIN), *rb = xmalloc(LEN + GUARD);
	ping_a(p, sb, rb);
	struct fi_context2 sc[WIN], gc;
	for (uint64_t w = 0; w < WINS; w++) {
		/* B's go-ahead says its receives are posted. */
		POST(p->l.cq, fi_trecv(p->l.ep, NULL, 0, NULL, peer_addr(p), T_GO | w, 0, &gc));
		struct fi_cq_tagged_entry e;
		int r = wait_cq(p->l.cq, &e, NULL, NULL, WAIT_MS);
		EXPECT(r == 0 && e.op_context == &gc && e.tag == (T_GO | w),
		       "window %llu: go-ahead (%d)", (unsigned long long)w, r);
		int sends = 0;
		for (int k = 0; k < WIN; k++) {
			uint64_t seq = w * WIN + (uint64_t)k;
			uint8_t *b = sb + (size_t)k * (LEN + GUARD);
			fill(b, seq);
			if (k & 1) {
				POST(p->l.cq, fi_tinjectdata(p->l.ep, b, LEN, seq, peer_addr(p),
							     T_WIN | seq));
			} else {
				POST(p->l.cq, fi_tsenddata(p->l.ep, b, LEN, NULL, seq, peer_addr(p),
							   T_WIN | seq, &sc[k]));
				sends++;
			}
		}
		for (int k = 0; k < sends; k++) {
			r = wait_cq(p->l.cq, &e, NULL, NULL, WAIT_MS);
			EXPECT(r == 0 && (e.flags & FI_SEND),
			       "window %llu: send completion %d of %d (%d)", (unsigned long long)w,
			       k, sends, r);
		}
	}
	barrier(p);
	free(sb);
	free(rb);
}

static void role_b(struct peer *p, void *arg)
{
	(void)arg;
	uint8_t *sb = xmalloc(LEN + GUARD), *rb = xmalloc((LEN + GUARD) * WIN);
	ping_b(p, sb, rb);
	struct fi_context2 rc[WIN], gc;
	for (uint64_t w = 0; w < WINS; w++) {
		memset(rb, GUARD_VAL, (LEN + GUARD) * WIN);
		for (int k = 0; k < WIN; k++) {
			uint64_t seq = w * WIN + (uint64_t)k;
			POST(p->l.cq, fi_trecv(p->l.ep, rb + (size_t)k * (LEN + GUARD), LEN, NULL,
					       peer_addr(p), T_WIN | seq, 0, &rc[k]));
		}
		POST(p->l.cq, fi_tinject(p->l.ep, NULL, 0, peer_addr(p), T_GO | w));
		/* Each tag has its own receive, and messages of one sender
		 * arrive in order: the k-th completion is the k-th receive. */
		for (int k = 0; k < WIN; k++) {
			uint64_t seq = w * WIN + (uint64_t)k;
			want_recv(p, &rc[k], T_WIN | seq, seq, LEN, "window");
			check(rb + (size_t)k * (LEN + GUARD), seq, "window");
		}
	}
	barrier(p);
	(void)gc;
	free(sb);
	free(rb);
}

static void own_stderr(int rank)
{
	const char *prefix = getenv("GO_QUIET_LOGS");
	if (!prefix)
		return;
	char path[4096];
	snprintf(path, sizeof(path), "%s.%d", prefix, rank);
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0 || dup2(fd, 2) < 0)
		FAIL("stderr to %s: %s", path, strerror(errno));
	close(fd);
}

int main(int argc, char **argv)
{
	struct lnx_opts o;
	msg_test_opts(argc, argv, &o);
	g_child_setup = own_stderr;
	/* The pair's own timeout, not run_pair's 30 s: a loaded 2-core
	 * machine runs the 100,000 messages many times slower. */
	role_fn roles[2] = { role_a, role_b };
	int rc = run_group("go_quiet", &o, 2, roles, NULL, 110);
	if (rc == 0)
		note("go_quiet: %d ping-pongs and %d windows of %d messages checked", PINGS, WINS,
		     WIN);
	return rc;
}
