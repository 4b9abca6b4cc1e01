/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * send_formats: send completions in every CQ format, between two processes.
 *
 * Usage: send_formats [shm|link|tcp|<links> [distinct]]   (see common.h)
 *
 * Small sends to a same-node peer complete in lnx's C layer (the fast send
 * path) and larger ones in Go; both must write the CQ's format. For each of
 * FI_CQ_FORMAT_CONTEXT, MSG, DATA and TAGGED, A sends a mix of fi_tsend
 * (16 B, 4 KiB and 256 KiB), fi_tsenddata, fi_tinject (no completion) and
 * fi_tsendmsg, and B receives them. A checks that exactly the expected send
 * completions arrive, each once, with the right context and, where the
 * format has them, FI_SEND|FI_TAGGED flags, length 0 and no data; B checks
 * every payload, tag, length and CQ data in its format. Then, per format,
 * a ping-pong with one receive posted at a time (the case lnx completes
 * receives in C, see pingpong below) checks each receive completion's
 * context, flags, length, buffer, data and tag, the payload and the bytes
 * past it. The ctest runs it with FI_LNX_FAST_SEND on and off, which must
 * not change anything seen.
 *
 * "send_formats <cfg> selective" runs only the ping-pong, set up as Open
 * MPI's ofi MTL sets up lnx: FI_COMPLETION as the default transmit and
 * receive op flags and the CQ bound with FI_SELECTIVE_COMPLETION. lnx's C
 * layer must complete those receives as well (its ctests check
 * FI_LNX_DUMP_STATS's "received in C" count).
 *
 * "send_formats <cfg> window" does the same with windows of receives
 * posted ahead of their messages (see window below), which lnx's C layer
 * must match and complete too; the plain run includes them.
 *
 * "send_formats <cfg> late" runs only the ping-pong, the receiver waiting
 * 200 us between posting its receive and reading the CQ, so that each
 * message has arrived before the read that finds it. When lnx's Go
 * completes a receive (as it does the first), the next one must still be
 * armed in C (the endpoint is lent to C with no receive armed): its ctest
 * checks the "received in C" count over libfabric's shm as network core.
 */
#include <sys/mman.h>
#include <unistd.h>
#include "common.h"

#define N	  24 /* sends with a completion */
#define GUARD_LEN 64

static enum fi_cq_format g_fmt;
static int g_late; /* "late": read each receive's CQ 200 us after posting it */

/* Reads one entry of the CQ's format into a tagged entry (fields the format
 * lacks are left 0), with fi_cq_readfrom into *src when src is given;
 * returns 1, or 0 on timeout. */
static int read_one_from(struct fid_cq *cq, struct fi_cq_tagged_entry *out, int ms, fi_addr_t *src)
{
	union {
		struct fi_cq_entry c;
		struct fi_cq_msg_entry m;
		struct fi_cq_data_entry d;
		struct fi_cq_tagged_entry t;
	} e;
	uint64_t deadline = now_ms() + ms;
	memset(out, 0, sizeof(*out));
	/* What a retried post (POST) or a barrier read first. */
	struct fi_cq_err_entry serr;
	int st = cq_stash_pop(cq, out, src, &serr);
	if (st < 0)
		FAIL("error completion: %s", fi_strerror(serr.err));
	if (st > 0)
		return 1;
	for (;;) {
		memset(&e, 0xee, sizeof(e)); /* fields the format lacks must stay untouched */
		ssize_t r = src ? fi_cq_readfrom(cq, &e, 1, src) : fi_cq_read(cq, &e, 1);
		if (r == 1)
			break;
		if (r == -FI_EAVAIL) {
			struct fi_cq_err_entry err = { 0 };
			fi_cq_readerr(cq, &err, 0);
			FAIL("error completion: %s", fi_strerror(err.err));
		}
		if (r != -FI_EAGAIN)
			FAIL("fi_cq_read -> %zd", r);
		if (now_ms() > deadline)
			return 0;
	}
	const uint8_t *raw = (const uint8_t *)&e;
	for (size_t i = cq_entry_size(g_fmt); i < sizeof(e); i++)
		EXPECT(raw[i] == 0xee, "fi_cq_read wrote byte %zu, past a %zu-byte entry", i,
		       cq_entry_size(g_fmt));
	cq_widen(g_fmt, &e, out);
	return 1;
}

static int read_one(struct fid_cq *cq, struct fi_cq_tagged_entry *out, int ms)
{
	return read_one_from(cq, out, ms, NULL);
}

static size_t len_of(int i)
{
	return i % 6 == 5 ? 256 * 1024 : i % 3 == 2 ? 4096 : 16;
}

static void sender(struct peer *p, void *arg)
{
	struct fi_context2 ctx[N];
	uint8_t *b[N];
	int seen[N] = { 0 };
	uint8_t small[8];
	fill_pattern(small, sizeof(small), 999);
	barrier(p);
	for (int i = 0; i < N; i++) {
		b[i] = xmalloc(len_of(i));
		fill_pattern(b[i], len_of(i), 700 + i);
		fi_addr_t d = peer_addr(p);
		if (i % 4 == 1) {
			POST(p->l.cq, fi_tsenddata(p->l.ep, b[i], len_of(i), NULL, 0xd000 + i, d,
						   0x500 + i, &ctx[i]));
		} else if (i % 8 == 3) {
			struct iovec iov = { b[i], len_of(i) };
			struct fi_msg_tagged m = { .msg_iov = &iov,
						   .iov_count = 1,
						   .addr = d,
						   .tag = 0x500 + i,
						   .context = &ctx[i] };
			POST(p->l.cq, fi_tsendmsg(p->l.ep, &m, FI_COMPLETION));
		} else {
			POST(p->l.cq,
			     fi_tsend(p->l.ep, b[i], len_of(i), NULL, d, 0x500 + i, &ctx[i]));
		}
		/* An inject between every send: it must add no completion. */
		POST(p->l.cq, fi_tinject(p->l.ep, small, sizeof(small), d, 0x900 + i));
	}
	for (int k = 0; k < N; k++) {
		struct fi_cq_tagged_entry e;
		if (!read_one(p->l.cq, &e, WAIT_MS))
			FAIL("format %d: %d of %d send completions", g_fmt, k, N);
		int i = (int)((struct fi_context2 *)e.op_context - ctx);
		EXPECT(i >= 0 && i < N, "format %d: send completion with a foreign context %p",
		       g_fmt, e.op_context);
		EXPECT(!seen[i]++, "format %d: send %d completed twice", g_fmt, i);
		if (g_fmt != FI_CQ_FORMAT_CONTEXT) {
			char fl[256];
			EXPECT((e.flags & (FI_SEND | FI_TAGGED)) == (FI_SEND | FI_TAGGED) &&
				       !(e.flags & FI_RECV),
			       "format %d: send %d flags %s", g_fmt, i,
			       flags_str(e.flags, fl, sizeof(fl)));
			EXPECT(e.len == 0, "format %d: send %d completion len %zu", g_fmt, i,
			       e.len);
		}
		if (g_fmt == FI_CQ_FORMAT_DATA || g_fmt == FI_CQ_FORMAT_TAGGED)
			EXPECT(e.data == 0, "format %d: send %d completion data %#llx", g_fmt, i,
			       (unsigned long long)e.data);
	}
	/* The injects completed nothing. */
	progress_for(p->l.cq, 50);
	struct fi_cq_tagged_entry extra;
	EXPECT(!read_one(p->l.cq, &extra, 100),
	       "format %d: a completion nobody asked for (context %p)", g_fmt, extra.op_context);
	barrier(p);
	for (int i = 0; i < N; i++)
		free(b[i]);
}

/* Checks the fields a receive completion has in the CQ's format: flags
 * (receive, tagged, CQ data exactly when sent), length, buffer, data, tag.
 * what and i name the message in failures. */
static void check_recv(const struct fi_cq_tagged_entry *e, size_t len, const void *buf,
		       int has_data, uint64_t data, uint64_t tag, const char *what, int i)
{
	if (g_fmt == FI_CQ_FORMAT_CONTEXT)
		return;
	char fl[256];
	uint64_t want = FI_RECV | FI_TAGGED | (has_data ? FI_REMOTE_CQ_DATA : 0);
	EXPECT((e->flags & (FI_RECV | FI_SEND | FI_TAGGED | FI_MSG | FI_REMOTE_CQ_DATA)) == want,
	       "format %d: %s %d: receive flags %s", g_fmt, what, i,
	       flags_str(e->flags, fl, sizeof(fl)));
	EXPECT(e->len == len, "format %d: %s %d: length %zu, want %zu", g_fmt, what, i, e->len,
	       len);
	if (g_fmt == FI_CQ_FORMAT_MSG)
		return;
	EXPECT(e->buf == buf, "format %d: %s %d: buf %p, want %p", g_fmt, what, i, e->buf, buf);
	EXPECT(e->data == (has_data ? data : 0), "format %d: %s %d: data %#llx", g_fmt, what, i,
	       (unsigned long long)e->data);
	if (g_fmt == FI_CQ_FORMAT_TAGGED)
		EXPECT(e->tag == tag, "format %d: %s %d: tag %#llx, want %#llx", g_fmt, what, i,
		       (unsigned long long)e->tag, (unsigned long long)tag);
}

/*
 * A ping-pong with one receive posted at a time: the case in which lnx
 * lends the receive and its shm rings, or its network transport, to its C
 * layer (armed receive), so that receive completions, too, are written by
 * C, and sends to that peer. Sizes cross the shm eager limit (4 KiB), the
 * network core's old inject limit (24 bytes of payload over tcp;ofi_rxm)
 * and lnx's forms over it around rxm's 16 KiB eager limit (eager up to
 * 16320 bytes, tagged eager to 16384, which C sends too, split where the
 * CQ data is too wide for the tag, rendezvous from 16385), so that some
 * go through Go; every third message carries CQ data (too wide for a
 * tagged eager message's tag); every fourth round's receive is for any
 * source (its completion must name the sender). The rounds outnumber the
 * network transport's credit window several times over, in both
 * directions, so credits must flow back.
 */
#define PP_ROUNDS 400
static size_t pp_len(int i)
{
	static const size_t l[] = { 0,	   1,	  24,	 64,	4096,  25,    20000, 100,
				    16320, 16321, 16383, 16384, 16385, 16384, 7,     16321 };
	/* The late run keeps to the first eight: its ctest counts the
	 * receives C completes over libfabric's shm, where lnx sends
	 * 16321-16384 bytes split below libfabric 2.0, through Go. */
	return g_late ? l[i % 8] : l[i % 16];
}

static void pingpong(struct peer *p, void *arg)
{
	size_t max = 20000;
	uint8_t *rb = xmalloc(max + GUARD_LEN), *sb = xmalloc(max);
	struct fi_context2 rc, sc;
	fi_addr_t d = peer_addr(p);
	barrier(p);
	for (int i = 0; i < PP_ROUNDS; i++) {
		int mine = (i % 2) == p->rank; /* who sends round i */
		size_t len = pp_len(i);
		uint64_t tag = 0x700 + i, data = 0xda7a0000 + i;
		if (!mine) {
			int any = (i / 2) % 4 == 3;
			memset(rb, 0xee, max + GUARD_LEN);
			POST(p->l.cq, fi_trecv(p->l.ep, rb, max, NULL, any ? FI_ADDR_UNSPEC : d,
					       tag, 0, &rc));
			if (g_late)
				usleep(200);
			struct fi_cq_tagged_entry e;
			fi_addr_t src = FI_ADDR_NOTAVAIL;
			if (!read_one_from(p->l.cq, &e, WAIT_MS, any ? &src : NULL))
				FAIL("format %d: round %d: no receive completion", g_fmt, i);
			EXPECT(!any || src == d,
			       "format %d: round %d: any-source receive from %llu, want %llu",
			       g_fmt, i, (unsigned long long)src, (unsigned long long)d);
			EXPECT(e.op_context == &rc, "format %d: round %d: receive context %p",
			       g_fmt, i, e.op_context);
			EXPECT(check_pattern(rb, len, 5000 + i) < 0, "format %d: round %d: payload",
			       g_fmt, i);
			for (size_t k = len; k < max + GUARD_LEN; k++)
				if (rb[k] != 0xee)
					FAIL("format %d: round %d: byte %zu past the message "
					     "written",
					     g_fmt, i, k);
			check_recv(&e, len, rb, i % 3 == 0, data, tag, "round", i);
		} else {
			fill_pattern(sb, len, 5000 + i);
			if (i % 3 == 0)
				POST(p->l.cq,
				     fi_tsenddata(p->l.ep, sb, len, NULL, data, d, tag, &sc));
			else
				POST(p->l.cq, fi_tsend(p->l.ep, sb, len, NULL, d, tag, &sc));
			struct fi_cq_tagged_entry e;
			if (!read_one(p->l.cq, &e, WAIT_MS))
				FAIL("format %d: round %d: no send completion", g_fmt, i);
			EXPECT(e.op_context == &sc, "format %d: round %d: send context %p", g_fmt,
			       i, e.op_context);
		}
	}
	barrier(p);
	free(rb);
	free(sb);
}

/*
 * Windows of receives, as MPI's streaming benchmarks post them: B posts
 * WIN receives, then tells A to send WIN messages, and reads their
 * completions; WROUNDS times. The receives are posted in the reverse of
 * the order the messages come in, two of them share a tag (the earlier
 * posted takes the earlier message), one message is too large for lnx's
 * eager path (a rendezvous in the middle of the window), and the last
 * receive posted is for any source and any tag, taking the one message no
 * other receive matches; four messages of the second half are of 16 KiB.
 * Every completion must name the receive the matching rules give it, with
 * that message's payload, length, tag and CQ data. A sleeps a little
 * before each window so that B's receives are posted, and lent to lnx's C
 * layer, before the messages arrive (the case lnx completes them in C; the
 * stats ctest counts them).
 */
#define WIN	64
#define WROUNDS 16
#define WTAG	0x3000
#define WBIG	(WIN / 2)
#define WGO	0x2fff
static size_t win_len(int m)
{
	if (m == WBIG)
		return 65536;
	/* 16 KiB, in the second half (the first stays on the eager paths
	 * lnx completes in C): one tagged core message over rxm (tagged
	 * eager), several of them in flight at once. */
	return m > WBIG && m % 8 == 5 ? 16384 : (size_t)(m * 37) % 1000;
}
static uint64_t win_tag(int m)
{
	if (m == WIN - 1)
		return WTAG + 0x999; /* only the any-tag receive takes it */
	return WTAG + (uint64_t)(m == 11 ? 10 : m);
}
/* The receive (post index) message m completes: receives are posted for
 * messages WIN-2 down to 0, then the any-tag one; messages 10 and 11 share
 * a tag, so 10, sent first, takes the earlier posted of the two (11's). */
static int win_recv_of(int m)
{
	if (m == WIN - 1)
		return WIN - 1;
	if (m == 10 || m == 11)
		return WIN - 2 - (m == 10 ? 11 : 10);
	return WIN - 2 - m;
}

static void window(struct peer *p, void *arg)
{
	fi_addr_t d = peer_addr(p);
	uint8_t *b[WIN];
	struct fi_context2 ctx[WIN], goc;
	for (int m = 0; m < WIN; m++)
		b[m] = xmalloc(65536);
	uint8_t go[8];
	barrier(p);
	for (int r = 0; r < WROUNDS; r++) {
		struct fi_cq_tagged_entry e;
		if (p->rank == 0) { /* A: sends the window when B says go */
			POST(p->l.cq, fi_trecv(p->l.ep, go, sizeof(go), NULL, d, WGO, 0, &goc));
			if (!read_one(p->l.cq, &e, WAIT_MS))
				FAIL("window round %d: no go from the receiver", r);
			usleep(20000);
			for (int m = 0; m < WIN; m++) {
				size_t len = win_len(m);
				fill_pattern(b[m], len, 100 * r + m);
				if (m % 3 == 0)
					POST(p->l.cq, fi_tsenddata(p->l.ep, b[m], len, NULL,
								   0xd0000 + 100 * r + m, d,
								   win_tag(m), &ctx[m]));
				else
					POST(p->l.cq, fi_tsend(p->l.ep, b[m], len, NULL, d,
							       win_tag(m), &ctx[m]));
			}
			for (int k = 0; k < WIN; k++)
				if (!read_one(p->l.cq, &e, WAIT_MS))
					FAIL("window round %d: %d of %d send completions", r, k,
					     WIN);
			continue;
		}
		/* B: post, say go, take the window's completions. */
		int msg_of[WIN], seen[WIN] = { 0 };
		for (int m = 0; m < WIN; m++)
			msg_of[win_recv_of(m)] = m;
		for (int j = 0; j < WIN; j++) {
			int m = msg_of[j];
			size_t cap = m == WBIG || win_len(m) == 16384 ? 65536 : 1024;
			memset(b[j], 0xee, cap);
			if (j == WIN - 1)
				POST(p->l.cq, fi_trecv(p->l.ep, b[j], cap, NULL, FI_ADDR_UNSPEC, 0,
						       ~(uint64_t)0, &ctx[j]));
			else
				POST(p->l.cq,
				     fi_trecv(p->l.ep, b[j], cap, NULL, d, win_tag(m), 0, &ctx[j]));
		}
		struct fi_context2 gos;
		memset(go, 0, sizeof(go));
		POST(p->l.cq, fi_tsend(p->l.ep, go, sizeof(go), NULL, d, WGO, &gos));
		for (int k = 0; k < WIN + 1; k++) {
			if (!read_one(p->l.cq, &e, WAIT_MS))
				FAIL("window round %d: %d of %d completions", r, k, WIN + 1);
			if (e.op_context == &gos)
				continue;
			int j = (int)((struct fi_context2 *)e.op_context - ctx);
			EXPECT(j >= 0 && j < WIN && !seen[j]++,
			       "window round %d: bad or repeated receive context %p", r,
			       e.op_context);
			int m = msg_of[j];
			size_t len = win_len(m);
			long long off = check_pattern(b[j], len, 100 * r + m);
			EXPECT(off < 0, "window round %d: message %d in receive %d differs at %lld",
			       r, m, j, off);
			EXPECT(len == 65536 || b[j][len] == 0xee,
			       "window round %d: receive %d written past message %d", r, j, m);
			check_recv(&e, len, b[j], m % 3 == 0, 0xd0000 + 100 * (uint64_t)r + m,
				   win_tag(m), "window message", m);
		}
	}
	barrier(p);
	for (int m = 0; m < WIN; m++)
		free(b[m]);
}

static void receiver(struct peer *p, void *arg)
{
	struct fi_context2 ctx[2 * N];
	uint8_t *b[2 * N];
	for (int i = 0; i < N; i++) {
		b[2 * i] = xmalloc(len_of(i));
		b[2 * i + 1] = xmalloc(8);
		POST(p->l.cq, fi_trecv(p->l.ep, b[2 * i], len_of(i), NULL, peer_addr(p), 0x500 + i,
				       0, &ctx[2 * i]));
		POST(p->l.cq, fi_trecv(p->l.ep, b[2 * i + 1], 8, NULL, peer_addr(p), 0x900 + i, 0,
				       &ctx[2 * i + 1]));
	}
	barrier(p);
	int seen[2 * N] = { 0 };
	for (int k = 0; k < 2 * N; k++) {
		struct fi_cq_tagged_entry e;
		if (!read_one(p->l.cq, &e, WAIT_MS))
			FAIL("format %d: %d of %d receives", g_fmt, k, 2 * N);
		int j = (int)((struct fi_context2 *)e.op_context - ctx);
		EXPECT(j >= 0 && j < 2 * N && !seen[j]++,
		       "format %d: bad or repeated receive context", g_fmt);
		int i = j / 2, inj = j % 2;
		size_t len = inj ? 8 : len_of(i);
		long long off = check_pattern(b[j], len, inj ? 999 : 700 + i);
		EXPECT(off < 0, "format %d: message %d%s differs at %lld", g_fmt, i,
		       inj ? " (inject)" : "", off);
		check_recv(&e, len, b[j], !inj && i % 4 == 1, 0xd000 + (uint64_t)i,
			   (inj ? 0x900u : 0x500u) + (uint64_t)i, inj ? "inject" : "message", i);
	}
	barrier(p);
	for (int j = 0; j < 2 * N; j++)
		free(b[j]);
}

/*
 * A message waiting in the ring of an armed receive, and a send that
 * enters Go before the next read and leaves no completion (fi_tsendmsg
 * with explicit flags, under selective completion without FI_COMPLETION:
 * C's fast path declines it, as it does an inject that finds the ring
 * full). Entering Go takes the receive and rings back from C; the read
 * after it must find the message within a few calls. The gate's watches
 * were published for the armed endpoint and watch none of the rings:
 * before the fix the reads answered idle until the gate's next periodic
 * call into Go (256 idle answers, or 1 ms with a clock).
 */
#define ST_ROUNDS 50
#define ST_READS  16
static void stale_a(struct peer *p, void *arg)
{
	uint8_t rb[64], sb[8] = { 1, 2, 3, 4, 5, 6, 7, 8 };
	struct fi_context2 rc, sc;
	fi_addr_t d = peer_addr(p);
	for (int i = 0; i < ST_ROUNDS; i++) {
		POST(p->l.cq, fi_trecv(p->l.ep, rb, sizeof(rb), NULL, d, 0x300 + i, 0, &rc));
		struct fi_cq_tagged_entry e;
		for (int k = 0; k < 8; k++) /* progress: the receive is armed */
			EXPECT(fi_cq_read(p->l.cq, &e, 1) == -FI_EAGAIN,
			       "round %d: early completion", i);
		/* No progress while waiting (barrier would read the CQ). */
		barrier_quiet(p); /* B injects */
		barrier_quiet(p); /* it is in our ring */
		struct iovec iov = { sb, sizeof(sb) };
		struct fi_msg_tagged m = { .msg_iov = &iov,
					   .iov_count = 1,
					   .addr = d,
					   .tag = 0x400 + i,
					   .context = &sc };
		POST(p->l.cq, fi_tsendmsg(p->l.ep, &m, 0));
		int got = 0, reads = 0;
		while (reads < ST_READS && !got) {
			ssize_t r = fi_cq_read(p->l.cq, &e, 1);
			reads++;
			if (r == -FI_EAGAIN)
				continue;
			EXPECT(r == 1 && e.op_context == &rc,
			       "round %d: fi_cq_read -> %zd, context %p", i, r, e.op_context);
			got = 1;
		}
		EXPECT(got,
		       "round %d: a message waiting since before the send was not found "
		       "in %d reads after it",
		       i, ST_READS);
		if (!got && !read_one(p->l.cq, &e, WAIT_MS))
			FAIL("round %d: no receive completion", i);
		EXPECT(e.len == 8 && e.tag == 0x300u + (uint64_t)i && rb[7] == 0x30 + i,
		       "round %d: receive len %zu tag %llx", i, e.len, (unsigned long long)e.tag);
		barrier(p);
	}
}

static void stale_b(struct peer *p, void *arg)
{
	uint8_t rb[64], sb[8];
	struct fi_context2 rc;
	fi_addr_t d = peer_addr(p);
	for (int i = 0; i < ST_ROUNDS; i++) {
		POST(p->l.cq, fi_trecv(p->l.ep, rb, sizeof(rb), NULL, d, 0x400 + i, 0, &rc));
		barrier(p);
		memset(sb, 0x30 + i, sizeof(sb));
		POST(p->l.cq, fi_tinject(p->l.ep, sb, sizeof(sb), d, 0x300 + i));
		barrier(p);
		struct fi_cq_tagged_entry e;
		if (!read_one(p->l.cq, &e, WAIT_MS))
			FAIL("round %d: no receive completion", i);
		EXPECT(e.op_context == &rc && e.len == 8, "round %d: receive context %p len %zu", i,
		       e.op_context, e.len);
		barrier(p);
	}
}

/*
 * "send_formats <cfg> short": a selective ping-pong (Open MPI's set-up, so
 * that the endpoint is lent to lnx's C layer between rounds) in which the
 * side whose turn it is first sends from a buffer one page shorter than
 * its length (2 and 4 pages mapped but the last: over tcp;ofi_rxm an eager
 * and a tagged eager size, which C sends itself over a lent transport;
 * over shm rendezvous sizes), then the round's real message. The short
 * send must fail, at the call or with an error completion, never succeed
 * and never fault the process in a core's copy; the real message must
 * arrive intact. Each side keeps one receive posted for the other's short
 * messages (any SB_BADTAG tag), which may only fail; a failed one is
 * posted again, and the last is cancelled at the end. Nothing else enters
 * the Go runtime between rounds, so the sends find the endpoint lent.
 */
#define SB_ROUNDS 40
#define SB_BADTAG 0xbad000ull
struct sb_state {
	struct peer *p;
	uint8_t *xb;
	size_t max;
	struct fi_context2 xc;
	int bad_recvs;
};

static void sb_post_bad(struct sb_state *st)
{
	POST(st->p->l.cq, fi_trecv(st->p->l.ep, st->xb, st->max, NULL, peer_addr(st->p), SB_BADTAG,
				   0xfff, &st->xc));
}

/* Waits for the next completion; one of the short-message receive is
 * checked, posted again and not returned: 0 or the error, with *c. */
static int sb_wait(struct sb_state *st, struct fi_cq_tagged_entry *e, void **c, int i)
{
	for (;;) {
		struct fi_cq_err_entry err;
		int w = wait_cq_quiet(st->p->l.cq, e, NULL, &err, WAIT_MS);
		if (w == -FI_ETIMEDOUT)
			FAIL("round %d: a completion never came", i);
		*c = w == 0 ? e->op_context : err.op_context;
		if (*c != &st->xc)
			return w;
		EXPECT(w != 0, "round %d: a short-buffer message arrived (%zu bytes, tag %#llx)", i,
		       e->len, (unsigned long long)e->tag);
		st->bad_recvs++;
		sb_post_bad(st);
	}
}

static void shortbuf(struct peer *p, void *arg)
{
	size_t pg = (size_t)sysconf(_SC_PAGESIZE), max = 4 * pg;
	uint8_t *rb = xmalloc(max), *sb = xmalloc(max);
	struct sb_state st = { .p = p, .xb = xmalloc(max), .max = max };
	struct fi_context2 rc, sc, bc;
	fi_addr_t d = peer_addr(p);
	sb_post_bad(&st);
	barrier(p);
	for (int i = 0; i < SB_ROUNDS; i++) {
		size_t len = 100 + (size_t)i;
		uint64_t tag = 0x500 + i;
		struct fi_cq_tagged_entry e;
		void *c;
		if ((i % 2) != p->rank) {
			memset(rb, 0xee, max);
			POST(p->l.cq, fi_trecv(p->l.ep, rb, max, NULL, d, tag, 0, &rc));
			int w = sb_wait(&st, &e, &c, i);
			EXPECT(w == 0 && c == &rc && e.len == len && e.tag == tag,
			       "round %d: receive %d (%s) context %p len %zu tag %#llx", i, w,
			       fi_strerror(-w), c, e.len, (unsigned long long)e.tag);
			EXPECT(check_pattern(rb, len, 7000 + i) < 0, "round %d: payload", i);
			continue;
		}
		size_t blen = (i % 4 < 2 ? 2 : 4) * pg;
		uint8_t *b = mmap(NULL, blen, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
				  -1, 0);
		ASSERT(b != MAP_FAILED);
		memset(b, 0x5a, blen - pg);
		CHECK(munmap(b + blen - pg, pg));
		ssize_t r = fi_tsend(p->l.ep, b, blen, NULL, d, SB_BADTAG + (uint64_t)i, &bc);
		int bad_done = r != 0, ok_done = 0;
		fill_pattern(sb, len, 7000 + i);
		POST(p->l.cq, fi_tsend(p->l.ep, sb, len, NULL, d, tag, &sc));
		while (!ok_done || !bad_done) {
			int w = sb_wait(&st, &e, &c, i);
			if (c == &bc) {
				EXPECT(w != 0,
				       "round %d: a send of %zu bytes from a short buffer "
				       "succeeded",
				       i, blen);
				bad_done = 1;
				continue;
			}
			EXPECT(w == 0 && c == &sc, "round %d: send %d (%s) context %p", i, w,
			       fi_strerror(-w), c);
			ok_done = 1;
		}
		munmap(b, blen - pg);
	}
	barrier(p);
	/* Every short message either failed at its sender's call or failed
	 * here; the receive posted last is cancelled. */
	CHECK(fi_cancel(&p->l.ep->fid, &st.xc));
	struct fi_cq_err_entry err;
	int w = wait_cq_quiet(p->l.cq, NULL, NULL, &err, WAIT_MS);
	EXPECT(w == -FI_ECANCELED && err.op_context == &st.xc,
	       "cancelled short-buffer receive: %d (%s)", w, fi_strerror(-w));
	note("%d short-buffer messages failed at this receiver", st.bad_recvs);
	free(rb);
	free(sb);
	free(st.xb);
}

int main(int argc, char **argv)
{
	struct lnx_opts o = { 0 };
	msg_test_opts(argc, argv, &o);
	static const enum fi_cq_format fmts[] = { FI_CQ_FORMAT_CONTEXT, FI_CQ_FORMAT_MSG,
						  FI_CQ_FORMAT_DATA, FI_CQ_FORMAT_TAGGED };
	int failed = 0;
	if (argc > 2 && !strcmp(argv[argc - 1], "late")) {
		g_fmt = o.cq_format = FI_CQ_FORMAT_TAGGED;
		g_late = 1;
		return run_pair("send_formats ping-pong, late reads", &o, pingpong, pingpong,
				NULL) ?
			       1 :
			       0;
	}
	if (argc > 2 && !strcmp(argv[argc - 1], "selective")) {
		g_fmt = o.cq_format = FI_CQ_FORMAT_TAGGED;
		o.selective = 1;
		return run_pair("send_formats ping-pong, selective completion", &o, pingpong,
				pingpong, NULL) ?
			       1 :
			       0;
	}
	if (argc > 2 && !strcmp(argv[argc - 1], "stale")) {
		g_fmt = o.cq_format = FI_CQ_FORMAT_TAGGED;
		o.selective = 1;
		return run_pair("send_formats a read after a send that entered Go", &o, stale_a,
				stale_b, NULL) ?
			       1 :
			       0;
	}
	if (argc > 2 && !strcmp(argv[argc - 1], "short")) {
		g_fmt = o.cq_format = FI_CQ_FORMAT_TAGGED;
		o.selective = 1;
		return run_pair("send_formats short buffers while lent", &o, shortbuf, shortbuf,
				NULL) ?
			       1 :
			       0;
	}
	if (argc > 2 && !strcmp(argv[argc - 1], "window")) {
		g_fmt = o.cq_format = FI_CQ_FORMAT_TAGGED;
		o.selective = 1;
		return run_pair("send_formats windows, selective completion", &o, window, window,
				NULL) ?
			       1 :
			       0;
	}
	for (size_t f = 0; f < sizeof(fmts) / sizeof(fmts[0]); f++) {
		g_fmt = fmts[f];
		o.cq_format = g_fmt;
		char name[64];
		snprintf(name, sizeof(name), "send_formats format %d", g_fmt);
		failed |= run_pair(name, &o, sender, receiver, NULL);
		snprintf(name, sizeof(name), "send_formats ping-pong format %d", g_fmt);
		failed |= run_pair(name, &o, pingpong, pingpong, NULL);
		snprintf(name, sizeof(name), "send_formats windows format %d", g_fmt);
		failed |= run_pair(name, &o, window, window, NULL);
	}
	return failed ? 1 : 0;
}
