/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * completions: where completions go, between two processes.
 *
 * Usage: completions [shm|link|tcp|<links> [distinct]]   (see common.h)
 * Set LNX_TEST_ONLY=case[,case] to run a subset.
 *
 *  separate_cqs   a transmit CQ and a receive CQ bound apart: sends
 *                 complete only on the one, receives only on the other,
 *                 both ways
 *  selective      FI_SELECTIVE_COMPLETION on both CQs: only operations
 *                 posted with FI_COMPLETION write an entry (fi_tsendmsg
 *                 with FI_INJECT | FI_COMPLETION too), fi_tinject and
 *                 plain fi_tsend none; counters count every operation;
 *                 every receive's data arrives
 *  cntr_pingpong  no CQ at all: a ping-pong driven by send and receive
 *                 counters (fi_cntr_wait), data checked each way; then
 *                 fi_cntr_add / fi_cntr_set / fi_cntr_adderr /
 *                 fi_cntr_seterr / fi_cntr_readerr
 *  errors_only    a selective CQ that only ever sees errors beside the
 *                 counters: a truncated receive counts as an error
 *                 (fi_cntr_wait -FI_EAVAIL, fi_cntr_readerr) and its
 *                 FI_ETRUNC entry is the CQ's only entry; a good message
 *                 after it counts as a success and writes nothing
 *  multi_recv     FI_MULTI_RECV (asked for in the hints, so reported in
 *                 caps): one fi_recvmsg buffer takes messages sent before
 *                 and after it was posted, each completion pointing at its
 *                 place in the buffer with its length and data; the one
 *                 that leaves less than FI_OPT_MIN_MULTI_RECV (set and read
 *                 back with fi_setopt/fi_getopt) carries FI_MULTI_RECV, and
 *                 the next message goes to a receive posted after the buffer
 */
#include "common.h"
#include "wep.h"

#define LEN  200
#define NSEL 6

/* Posts, retrying while lnx says -FI_EAGAIN (a retried send progresses
 * the endpoint itself). */
#define RETRY(expr)                                                   \
	do {                                                          \
		uint64_t _dl = now_ms() + WAIT_MS;                    \
		ssize_t _r;                                           \
		while ((_r = (expr)) == -FI_EAGAIN && now_ms() < _dl) \
			;                                             \
		CHECK(_r);                                            \
	} while (0)

static void sync_peer(struct peer *p)
{
	char c = 's';
	oob_send(p, other(p), &c, 1);
	oob_recv(p, other(p), &c, 1);
}

/* Waits for one entry on cq (progressing it), which must be a success. */
static void one(struct fid_cq *cq, struct fi_cq_tagged_entry *e, const char *what)
{
	uint64_t dl = now_ms() + WAIT_MS;
	ssize_t r;
	while ((r = fi_cq_read(cq, e, 1)) == -FI_EAGAIN)
		EXPECT(now_ms() < dl, "%s: no completion within %d ms", what, WAIT_MS);
	if (r == -FI_EAVAIL) {
		struct fi_cq_err_entry err = { 0 };
		fi_cq_readerr(cq, &err, 0);
		FAIL("%s: error entry %d (%s)", what, err.err, fi_strerror(err.err));
	}
	CHECK_RC(r, 1);
}

static void check_entry(const struct fi_cq_tagged_entry *e, void *ctx, uint64_t flags, size_t len,
			const char *what)
{
	EXPECT(e->op_context == ctx, "%s: context %p, want %p", what, e->op_context, ctx);
	EXPECT(e->flags == flags, "%s: flags %#llx, want %#llx", what, (unsigned long long)e->flags,
	       (unsigned long long)flags);
	if (flags & FI_RECV)
		EXPECT(e->len == len, "%s: len %zu, want %zu", what, e->len, len);
}

/* ---- separate transmit and receive CQs --------------------------------------- */

static void separate(struct peer *p, void *arg)
{
	struct wep w = { .txcq = open_cq(p, FI_WAIT_NONE, NULL),
			 .rxcq = open_cq(p, FI_WAIT_NONE, NULL) };
	wep_open(p, &w);
	int sender = p->rank == 0;
	uint8_t *rb = xmalloc(LEN), *sb = xmalloc(LEN);
	struct fi_context2 rctx, sctx;
	struct fi_cq_tagged_entry e;
	/* Both ways: rank 0 sends first, then rank 1. */
	for (int round = 0; round < 2; round++, sender = !sender) {
		if (!sender) {
			memset(rb, 0, LEN);
			CHECK(fi_trecv(w.ep, rb, LEN, NULL, w.peer, 7 + round, 0, &rctx));
		}
		sync_peer(p);
		if (sender) {
			fill_pattern(sb, LEN, 40 + round);
			RETRY(fi_tsend(w.ep, sb, LEN, NULL, w.peer, 7 + round, &sctx));
			one(w.txcq, &e, "send");
			check_entry(&e, &sctx, FI_SEND | FI_TAGGED, 0, "send on the transmit CQ");
		} else {
			one(w.rxcq, &e, "receive");
			check_entry(&e, &rctx, FI_RECV | FI_TAGGED, LEN,
				    "receive on the receive CQ");
			EXPECT(e.tag == 7u + (unsigned)round, "tag %#llx",
			       (unsigned long long)e.tag);
			EXPECT_PATTERN(rb, LEN, 40 + round);
		}
		sync_peer(p);
		/* Nothing crossed over: the other CQ of each side is empty. */
		CHECK_RC(fi_cq_read(sender ? w.rxcq : w.txcq, &e, 1), -FI_EAGAIN);
		CHECK_RC(fi_cq_read(sender ? w.txcq : w.rxcq, &e, 1), -FI_EAGAIN);
		sync_peer(p);
	}
	free(rb);
	free(sb);
	barrier_quiet(p);
	wep_close(&w);
}

/* ---- FI_SELECTIVE_COMPLETION ------------------------------------------------- */

/* Operation i asks for a completion when i is odd. */
#define WANTS(i) ((i) % 2 == 1)

static void selective_a(struct peer *p, void *arg)
{
	struct wep w = { .txcq = open_cq(p, FI_WAIT_NONE, NULL),
			 .rxcq = open_cq(p, FI_WAIT_NONE, NULL),
			 .txcntr = open_cntr(p, FI_WAIT_UNSPEC, NULL),
			 .tx_flags = FI_SELECTIVE_COMPLETION,
			 .rx_flags = FI_SELECTIVE_COMPLETION };
	wep_open(p, &w);
	uint8_t *b = xmalloc(NSEL * LEN);
	struct fi_context2 ctx[NSEL];
	size_t inj = p->l.info->tx_attr->inject_size < LEN ? p->l.info->tx_attr->inject_size : LEN;
	sync_peer(p); /* B's receives are posted */
	for (int i = 0; i < NSEL; i++) {
		uint8_t *s = b + i * LEN;
		fill_pattern(s, LEN, 60 + i);
		struct iovec iov = { .iov_base = s, .iov_len = LEN };
		struct fi_msg_tagged m = { .msg_iov = &iov,
					   .iov_count = 1,
					   .addr = w.peer,
					   .tag = 100 + i,
					   .context = &ctx[i] };
		switch (i) {
		case 0: /* plain send: no completion under FI_SELECTIVE_COMPLETION */
			RETRY(fi_tsend(w.ep, s, LEN, NULL, w.peer, 100 + i, &ctx[i]));
			break;
		case 2: /* inject: never a completion */
			iov.iov_len = inj;
			RETRY(fi_tinject(w.ep, s, inj, w.peer, 100 + i));
			break;
		case 3: /* inject semantics, completion asked for */
			iov.iov_len = inj;
			RETRY(fi_tsendmsg(w.ep, &m, FI_INJECT | FI_COMPLETION));
			break;
		case 4: /* sendmsg without FI_COMPLETION */
			RETRY(fi_tsendmsg(w.ep, &m, 0));
			break;
		default:
			RETRY(fi_tsendmsg(w.ep, &m, FI_COMPLETION));
		}
	}
	CHECK(fi_cntr_wait(w.txcntr, NSEL, WAIT_MS));
	sync_peer(p); /* B has every message */
	/* Exactly the operations that asked, each once. */
	int seen[NSEL] = { 0 };
	for (int n = 0; n < NSEL / 2; n++) {
		struct fi_cq_tagged_entry e;
		one(w.txcq, &e, "selective send");
		int k = (int)((struct fi_context2 *)e.op_context - ctx);
		EXPECT(k >= 0 && k < NSEL && WANTS(k) && !seen[k]++,
		       "send completion for context %p (op %d)", e.op_context, k);
		EXPECT(e.flags == (FI_SEND | FI_TAGGED), "send flags %#llx",
		       (unsigned long long)e.flags);
	}
	struct fi_cq_tagged_entry e;
	CHECK_RC(fi_cq_read(w.txcq, &e, 1), -FI_EAGAIN);
	EXPECT(fi_cntr_read(w.txcntr) == NSEL, "send counter %llu",
	       (unsigned long long)fi_cntr_read(w.txcntr));
	free(b);
	barrier_quiet(p);
	wep_close(&w);
}

static void selective_b(struct peer *p, void *arg)
{
	struct wep w = { .txcq = open_cq(p, FI_WAIT_NONE, NULL),
			 .rxcq = open_cq(p, FI_WAIT_NONE, NULL),
			 .rxcntr = open_cntr(p, FI_WAIT_UNSPEC, NULL),
			 .tx_flags = FI_SELECTIVE_COMPLETION,
			 .rx_flags = FI_SELECTIVE_COMPLETION };
	wep_open(p, &w);
	size_t inj = p->l.info->tx_attr->inject_size < LEN ? p->l.info->tx_attr->inject_size : LEN;
	uint8_t *b = xmalloc(NSEL * LEN);
	memset(b, 0, NSEL * LEN);
	struct fi_context2 ctx[NSEL];
	for (int i = 0; i < NSEL; i++) {
		struct iovec iov = { .iov_base = b + i * LEN, .iov_len = LEN };
		struct fi_msg_tagged m = { .msg_iov = &iov,
					   .iov_count = 1,
					   .addr = w.peer,
					   .tag = 100 + i,
					   .context = &ctx[i] };
		CHECK(fi_trecvmsg(w.ep, &m, WANTS(i) ? FI_COMPLETION : 0));
	}
	sync_peer(p);
	CHECK(fi_cntr_wait(w.rxcntr, NSEL, WAIT_MS));
	for (int i = 0; i < NSEL; i++)
		EXPECT_PATTERN(b + i * LEN, (i == 2 || i == 3) ? inj : LEN, 60 + i);
	int seen[NSEL] = { 0 };
	for (int n = 0; n < NSEL / 2; n++) {
		struct fi_cq_tagged_entry e;
		one(w.rxcq, &e, "selective receive");
		int k = (int)((struct fi_context2 *)e.op_context - ctx);
		EXPECT(k >= 0 && k < NSEL && WANTS(k) && !seen[k]++,
		       "receive completion for context %p (op %d)", e.op_context, k);
		check_entry(&e, &ctx[k], FI_RECV | FI_TAGGED, k == 3 ? inj : LEN,
			    "selective receive");
		EXPECT(e.tag == 100u + (unsigned)k, "tag %#llx", (unsigned long long)e.tag);
	}
	struct fi_cq_tagged_entry e;
	CHECK_RC(fi_cq_read(w.rxcq, &e, 1), -FI_EAGAIN);
	EXPECT(fi_cntr_read(w.rxcntr) == NSEL, "receive counter %llu",
	       (unsigned long long)fi_cntr_read(w.rxcntr));
	sync_peer(p);
	free(b);
	barrier_quiet(p);
	wep_close(&w);
}

/* ---- counters only ---------------------------------------------------------------- */

#define ROUNDS 50

static void cntr_ops(struct peer *p)
{
	struct fid_cntr *c = open_cntr(p, FI_WAIT_UNSPEC, NULL);
	CHECK(fi_cntr_add(c, 5));
	CHECK(fi_cntr_add(c, 2));
	EXPECT(fi_cntr_read(c) == 7, "after add 5, add 2: %llu",
	       (unsigned long long)fi_cntr_read(c));
	CHECK(fi_cntr_set(c, 3));
	EXPECT(fi_cntr_read(c) == 3, "after set 3: %llu", (unsigned long long)fi_cntr_read(c));
	CHECK(fi_cntr_wait(c, 3, 0));
	CHECK_RC(fi_cntr_wait(c, 4, 10), -FI_ETIMEDOUT);
	EXPECT(fi_cntr_readerr(c) == 0, "error count %llu", (unsigned long long)fi_cntr_readerr(c));
	CHECK(fi_cntr_seterr(c, 4));
	CHECK(fi_cntr_adderr(c, 1));
	EXPECT(fi_cntr_readerr(c) == 5, "after seterr 4, adderr 1: %llu",
	       (unsigned long long)fi_cntr_readerr(c));
	EXPECT(fi_cntr_read(c) == 3, "the error count moved the success count: %llu",
	       (unsigned long long)fi_cntr_read(c));
	CHECK(fi_cntr_seterr(c, 0));
	EXPECT(fi_cntr_readerr(c) == 0, "after seterr 0: %llu",
	       (unsigned long long)fi_cntr_readerr(c));
	CHECK(fi_close(&c->fid));
}

static void cntr_pingpong(struct peer *p, void *arg)
{
	struct wep w = { .txcntr = open_cntr(p, FI_WAIT_UNSPEC, NULL),
			 .rxcntr = open_cntr(p, FI_WAIT_UNSPEC, NULL) };
	wep_open(p, &w);
	uint8_t *rb = xmalloc(LEN), *sb = xmalloc(LEN);
	int ping = p->rank == 0;
	for (int i = 0; i < ROUNDS; i++) {
		memset(rb, 0, LEN);
		CHECK(fi_trecv(w.ep, rb, LEN, NULL, w.peer, 1, 0, NULL));
		if (i == 0)
			sync_peer(p); /* the first receive is posted on both sides */
		if (ping) {
			fill_pattern(sb, LEN, 1000 + i * 2);
			RETRY(fi_tsend(w.ep, sb, LEN, NULL, w.peer, 1, NULL));
		}
		CHECK(fi_cntr_wait(w.rxcntr, (uint64_t)i + 1, WAIT_MS));
		EXPECT_PATTERN(rb, LEN, 1000 + i * 2 + ping);
		if (!ping) {
			fill_pattern(sb, LEN, 1000 + i * 2 + 1);
			RETRY(fi_tsend(w.ep, sb, LEN, NULL, w.peer, 1, NULL));
		}
		CHECK(fi_cntr_wait(w.txcntr, (uint64_t)i + 1, WAIT_MS));
	}
	EXPECT(fi_cntr_read(w.txcntr) == ROUNDS && fi_cntr_read(w.rxcntr) == ROUNDS,
	       "counters %llu/%llu", (unsigned long long)fi_cntr_read(w.txcntr),
	       (unsigned long long)fi_cntr_read(w.rxcntr));
	EXPECT(fi_cntr_readerr(w.txcntr) == 0 && fi_cntr_readerr(w.rxcntr) == 0, "error counts");
	free(rb);
	free(sb);
	cntr_ops(p);
	barrier_quiet(p);
	wep_close(&w);
}

/* ---- a CQ for errors only ------------------------------------------------------------- */

static void errors_only_a(struct peer *p, void *arg)
{
	struct fid_cq *cq = open_cq(p, FI_WAIT_NONE, NULL);
	struct wep w = { .txcq = cq,
			 .rxcq = cq,
			 .txcntr = open_cntr(p, FI_WAIT_UNSPEC, NULL),
			 .rxcntr = open_cntr(p, FI_WAIT_UNSPEC, NULL),
			 .tx_flags = FI_SELECTIVE_COMPLETION };
	wep_open(p, &w);
	uint8_t *b = xmalloc(64);
	for (int i = 0; i < 2; i++) {
		sync_peer(p);
		fill_pattern(b, 64, 80 + i);
		RETRY(fi_tsend(w.ep, b, 64, NULL, w.peer, 3, NULL));
		CHECK(fi_cntr_wait(w.txcntr, (uint64_t)i + 1, WAIT_MS));
	}
	sync_peer(p);
	struct fi_cq_tagged_entry e;
	CHECK_RC(fi_cq_read(cq, &e, 1), -FI_EAGAIN);
	EXPECT(fi_cntr_readerr(w.txcntr) == 0, "send errors %llu",
	       (unsigned long long)fi_cntr_readerr(w.txcntr));
	free(b);
	barrier_quiet(p);
	wep_close(&w);
}

static void errors_only_b(struct peer *p, void *arg)
{
	struct fid_cq *cq = open_cq(p, FI_WAIT_NONE, NULL);
	struct wep w = { .txcq = cq,
			 .rxcq = cq,
			 .txcntr = open_cntr(p, FI_WAIT_UNSPEC, NULL),
			 .rxcntr = open_cntr(p, FI_WAIT_UNSPEC, NULL),
			 .tx_flags = FI_SELECTIVE_COMPLETION };
	wep_open(p, &w);
	uint8_t *b = xmalloc(64);
	struct fi_context2 small, good;
	memset(b, 0, 64);
	CHECK(fi_trecv(w.ep, b, 16, NULL, w.peer, 3, 0, &small));
	sync_peer(p);
	/* Manual progress: the message is taken (and truncated) inside the
	 * wait, so the wait sees the error counted. */
	CHECK_RC(fi_cntr_wait(w.rxcntr, 1, WAIT_MS), -FI_EAVAIL);
	EXPECT(fi_cntr_readerr(w.rxcntr) == 1, "receive errors %llu",
	       (unsigned long long)fi_cntr_readerr(w.rxcntr));
	EXPECT(fi_cntr_read(w.rxcntr) == 0, "receive successes %llu",
	       (unsigned long long)fi_cntr_read(w.rxcntr));
	struct fi_cq_tagged_entry e;
	CHECK_RC(fi_cq_read(cq, &e, 1), -FI_EAVAIL);
	struct fi_cq_err_entry err = { 0 };
	CHECK_RC(fi_cq_readerr(cq, &err, 0), 1);
	EXPECT(err.err == FI_ETRUNC, "error %d (%s), want FI_ETRUNC", err.err,
	       fi_strerror(err.err));
	EXPECT(err.op_context == &small, "error context %p, want %p", err.op_context,
	       (void *)&small);
	EXPECT(err.olen == 48, "olen %zu, want 48", err.olen);
	EXPECT(err.flags & FI_RECV, "error flags %#llx", (unsigned long long)err.flags);
	EXPECT_PATTERN(b, 16, 80);
	for (int k = 16; k < 64; k++)
		EXPECT(b[k] == 0, "byte %d past the truncated receive written", k);

	memset(b, 0, 64);
	CHECK(fi_trecv(w.ep, b, 64, NULL, w.peer, 3, 0, &good));
	sync_peer(p);
	CHECK(fi_cntr_wait(w.rxcntr, 1, WAIT_MS));
	EXPECT_PATTERN(b, 64, 81);
	CHECK_RC(fi_cq_read(cq, &e, 1), -FI_EAGAIN); /* a success writes nothing */
	EXPECT(fi_cntr_readerr(w.rxcntr) == 1, "receive errors %llu",
	       (unsigned long long)fi_cntr_readerr(w.rxcntr));
	sync_peer(p);
	free(b);
	barrier_quiet(p);
	wep_close(&w);
}

/* ---- FI_MULTI_RECV ------------------------------------------------------------------- */

#define MBUF 1024
#define MMIN 128
/* Messages 0..4 fill the buffer to 960 bytes: 64 left, under MMIN, so 4
 * releases it; 5 goes to the plain receive posted after it. Lengths are
 * distinct: they tell the completions apart. */
static const size_t k_msz[] = { 100, 200, 300, 250, 110, 60 };
#define NMULTI (sizeof(k_msz) / sizeof(k_msz[0]))

static void multi_a(struct peer *p, void *arg)
{
	EXPECT(p->l.info->caps & FI_MULTI_RECV, "caps %#llx lack FI_MULTI_RECV",
	       (unsigned long long)p->l.info->caps);
	struct wep w = { .txcq = open_cq(p, FI_WAIT_NONE, NULL),
			 .rxcq = open_cq(p, FI_WAIT_NONE, NULL) };
	wep_open(p, &w);
	uint8_t *b = xmalloc(NMULTI * 512);
	struct fi_cq_tagged_entry e;
	for (size_t i = 0; i < NMULTI; i++) {
		if (i == 2)
			sync_peer(p); /* 0 and 1 went before the buffer was posted */
		fill_pattern(b + i * 512, k_msz[i], 500 + i);
		RETRY(fi_send(w.ep, b + i * 512, k_msz[i], NULL, w.peer, NULL));
		one(w.txcq, &e, "send");
	}
	sync_peer(p);
	free(b);
	barrier_quiet(p);
	wep_close(&w);
}

static void multi_b(struct peer *p, void *arg)
{
	struct wep w = { .txcq = open_cq(p, FI_WAIT_NONE, NULL),
			 .rxcq = open_cq(p, FI_WAIT_NONE, NULL) };
	wep_open(p, &w);
	size_t v = MMIN, len = sizeof(v);
	CHECK(fi_setopt(&w.ep->fid, FI_OPT_ENDPOINT, FI_OPT_MIN_MULTI_RECV, &v, sizeof(v)));
	v = 0;
	CHECK(fi_getopt(&w.ep->fid, FI_OPT_ENDPOINT, FI_OPT_MIN_MULTI_RECV, &v, &len));
	EXPECT(v == MMIN && len == sizeof(v), "FI_OPT_MIN_MULTI_RECV reads back %zu (len %zu)", v,
	       len);
	uint8_t *mb = xmalloc(MBUF), *pb = xmalloc(512);
	memset(mb, 0, MBUF);
	memset(pb, 0, 512);
	struct fi_context2 mctx, pctx;
	struct iovec iov = { .iov_base = mb, .iov_len = MBUF };
	struct fi_msg m = { .msg_iov = &iov,
			    .iov_count = 1,
			    .addr = FI_ADDR_UNSPEC,
			    .context = &mctx };
	/* Tagged multi-receive is not offered. */
	struct fi_msg_tagged tm = { .msg_iov = &iov,
				    .iov_count = 1,
				    .addr = FI_ADDR_UNSPEC,
				    .context = &mctx };
	CHECK_FAILS(fi_trecvmsg(w.ep, &tm, FI_MULTI_RECV));
	/* Messages 0 and 1 are on their way; progress this endpoint meanwhile
	 * (a tcp connection needs both sides). */
	struct fid_cq *hcq = p->l.cq;
	p->l.cq = w.rxcq;
	sync_peer(p);
	p->l.cq = hcq;
	CHECK(fi_recvmsg(w.ep, &m, FI_MULTI_RECV));
	CHECK(fi_recv(w.ep, pb, 512, NULL, FI_ADDR_UNSPEC, &pctx));
	/* Completions of the buffer and of the plain receive may interleave:
	 * each is identified by its (distinct) length. */
	int seen[NMULTI] = { 0 };
	for (size_t n = 0; n < NMULTI; n++) {
		struct fi_cq_tagged_entry e;
		one(w.rxcq, &e, "receive");
		size_t i = 0, off = 0;
		while (i < NMULTI && k_msz[i] != e.len)
			off += k_msz[i++];
		EXPECT(i < NMULTI && !seen[i]++, "a completion of %zu bytes", e.len);
		int last = i == 4;
		if (i < 5) {
			check_entry(&e, &mctx, FI_RECV | FI_MSG | (last ? FI_MULTI_RECV : 0),
				    k_msz[i], "multi-receive");
			EXPECT((uint8_t *)e.buf == mb + off,
			       "message %zu at %p, want buffer + %zu (%p)", i, e.buf, off,
			       (void *)(mb + off));
			EXPECT_PATTERN(mb + off, k_msz[i], 500 + i);
		} else {
			check_entry(&e, &pctx, FI_RECV | FI_MSG, k_msz[i],
				    "the receive after the buffer");
			EXPECT(e.buf == pb, "buf %p, want %p", e.buf, (void *)pb);
			EXPECT_PATTERN(pb, k_msz[i], 500 + i);
		}
	}
	for (size_t k = 960; k < MBUF; k++)
		EXPECT(mb[k] == 0, "byte %zu past the messages written", k);
	struct fi_cq_tagged_entry e;
	CHECK_RC(fi_cq_read(w.rxcq, &e, 1), -FI_EAGAIN);
	sync_peer(p);
	free(mb);
	free(pb);
	barrier_quiet(p);
	wep_close(&w);
}

static const struct subtest cases[] = {
	CASE("separate_cqs", separate, separate),
	CASE("selective", selective_a, selective_b),
	CASE("cntr_pingpong", cntr_pingpong, cntr_pingpong),
	CASE("errors_only", errors_only_a, errors_only_b),
	{ .name = "multi_recv",
	  .a = multi_a,
	  .b = multi_b,
	  .opt_caps = FI_MSG | FI_TAGGED | FI_SEND | FI_RECV | FI_DIRECTED_RECV | FI_SOURCE |
		      FI_LOCAL_COMM | FI_REMOTE_COMM | FI_MULTI_RECV },
};

int main(int argc, char **argv)
{
	return run_subtests(argc, argv, cases, sizeof(cases) / sizeof(cases[0]));
}
