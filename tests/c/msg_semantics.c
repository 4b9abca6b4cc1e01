/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * msg_semantics: matching and completion semantics beyond plain delivery.
 *
 * Usage: msg_semantics [shm|link|tcp|<links> [distinct]]   (see common.h)
 * Set LNX_TEST_ONLY=case[,case] to run a subset.
 *
 *  trunc_tagged / trunc_untagged
 *      a message longer than the receive buffer: CQ error entry with
 *      err FI_ETRUNC, olen = bytes that did not fit, len = bytes placed,
 *      op_context, flags, tag; the buffer holds the message prefix and
 *      nothing past it is written; the sender completes normally; posted
 *      and unexpected, eager and 1 MiB; the endpoint keeps working
 *  peek        FI_PEEK: FI_ENOMSG error entry when nothing matches (also for
 *              a wrong tag or source while a message waits); success entry
 *              with len, tag, CQ data, source when it does; the message stays
 *              queued; an optional buffer gets a prefix; after a real
 *              receive, FI_ENOMSG again
 *  claim       FI_PEEK|FI_CLAIM hides the message from other receives; a
 *              later fi_trecvmsg(FI_CLAIM) with the same context gets it
 *  discard     FI_PEEK|FI_DISCARD drops the message; FI_CLAIM|FI_DISCARD
 *              drops a claimed one; the next message is still delivered
 *  cancel      fi_cancel of a posted tagged and untagged receive: FI_ECANCELED
 *              error entry with the context; the buffer is never written; a
 *              later message goes to a new receive
 *  any_vs_directed (3 processes)
 *              rank 0 posts, per tag, a receive directed at rank 2 and then an
 *              any-source one; ranks 1 and 2 send at the same time; the
 *              directed receive always gets rank 2's message (tagged: 100
 *              tags posted at once; untagged: 30 rounds)
 *  counters    send/recv counters count completions (60 each side); a
 *              truncated receive counts as an error on the recv counter
 *  post_mixed  200 receives of one tag posted through every entry point
 *              in turn (fi_trecv and fi_recv, which lnx queues in C, and
 *              fi_trecvmsg, fi_trecvv with two buffers, which it does not),
 *              more than lnx's queue holds: messages match in posting order
 *  post_late   a receive posted after its message arrived and went to the
 *              unexpected queue completes on the first fi_cq_read or the
 *              second, not after a run of empty polls
 *  rearm       receives posted right after one completed (which lnx arms in
 *              C in place of the completed one, see FI_LNX_REARM_RECV):
 *              two posted at once match two messages in posting order, the
 *              second too large for C to complete; one is cancelled
 *              (FI_ECANCELED, buffer untouched) and the next receive gets
 *              the next message; any-source and untagged ones too; one
 *              must not take a message of another tag that comes first
 */
#define MSG_NO_SHARED_CASES
#include "msg_basic.h"

/* ---- truncation ---------------------------------------------------------- */

struct trunc_case {
	size_t msg, cap;
	int unexpected;
};
static const struct trunc_case k_trunc[] = {
	{ 3000, 1000, 0 },	 { 3000, 1000, 1 }, { 1 * MiB, 4 * KiB, 0 },
	{ 1 * MiB, 4 * KiB, 1 }, { 100, 0, 0 },
};
#define NTRUNC (sizeof(k_trunc) / sizeof(k_trunc[0]))

static void trunc_a(struct peer *p)
{
	for (size_t i = 0; i < NTRUNC; i++) {
		const struct trunc_case *t = &k_trunc[i];
		uint8_t *b = sbuf(t->msg, 2000 + i);
		struct fi_context2 c, c2;
		if (!t->unexpected)
			barrier(p);
		POST(p->l.cq, x_send(p, 1, b, t->msg, 0x2000 + i, &c));
		if (t->unexpected)
			barrier(p);
		wait_send(p, &c, "send that the receiver truncates");
		/* The endpoint keeps working. */
		POST(p->l.cq, x_send(p, 1, b, 64, 0x2100 + i, &c2));
		wait_send(p, &c2, "follow-up send");
		barrier(p);
		free(b);
	}
}

static void trunc_b(struct peer *p)
{
	for (size_t i = 0; i < NTRUNC; i++) {
		const struct trunc_case *t = &k_trunc[i];
		uint8_t *b = rbuf(t->cap), *b2 = rbuf(64);
		struct fi_context2 c, c2;
		struct fi_cq_err_entry err;
		char what[96], fl[256];
		snprintf(what, sizeof(what), "%zu B into %zu B (%s)", t->msg, t->cap,
			 t->unexpected ? "unexpected" : "posted first");
		if (t->unexpected) {
			barrier(p);
			progress_for(p->l.cq, 100);
		}
		POST(p->l.cq, x_recv(p, b, t->cap, peer_addr(p), 0x2000 + i, 0, &c));
		if (!t->unexpected)
			barrier(p);
		int r = wait_cq(p->l.cq, NULL, NULL, &err, WAIT_MS);
		EXPECT(r == -FI_ETRUNC, "%s: wait_cq -> %d (%s), want -FI_ETRUNC", what, r,
		       fi_strerror(-r));
		EXPECT(err.err == FI_ETRUNC, "%s: err %d", what, err.err);
		EXPECT(err.op_context == &c, "%s: op_context %p, want %p", what, err.op_context,
		       (void *)&c);
		EXPECT(err.olen == t->msg - t->cap, "%s: olen %zu, want %zu (bytes not placed)",
		       what, err.olen, t->msg - t->cap);
		EXPECT(err.len == t->cap, "%s: len %zu, want %zu (bytes placed)", what, err.len,
		       t->cap);
		EXPECT((err.flags & FI_RECV) && (err.flags & KIND), "%s: flags %s", what,
		       flags_str(err.flags, fl, sizeof(fl)));
		if (g_tagged)
			EXPECT(err.tag == 0x2000 + i, "%s: tag %#llx", what,
			       (unsigned long long)err.tag);
		rbuf_check(b, t->cap, t->cap, 2000 + i, what);

		POST(p->l.cq, x_recv(p, b2, 64, peer_addr(p), 0x2100 + i, 0, &c2));
		struct want_recv w = { &c2, 64, 0x2100 + i, 0, 0, peer_addr(p) };
		wait_recv(p, &w, "message after a truncation");
		rbuf_check(b2, 64, 64, 2000 + i, "message after a truncation");
		barrier(p);
		free(b);
		free(b2);
	}
}

static void trunc_tagged_a(struct peer *p, void *arg)
{
	g_tagged = 1;
	trunc_a(p);
}
static void trunc_tagged_b(struct peer *p, void *arg)
{
	g_tagged = 1;
	trunc_b(p);
}
static void trunc_untagged_a(struct peer *p, void *arg)
{
	g_tagged = 0;
	trunc_a(p);
}
static void trunc_untagged_b(struct peer *p, void *arg)
{
	g_tagged = 0;
	trunc_b(p);
}

/* ---- peek / claim / discard ------------------------------------------------ */

/* One FI_PEEK (with extra flags). Returns 0 (entry in *e, source in *src),
 * -FI_ENOMSG, or dies on anything else. */
static int peek_once(struct peer *p, uint64_t tag, uint64_t ignore, fi_addr_t from, uint64_t flags,
		     struct iovec *iov, void *ctx, struct fi_cq_tagged_entry *e, fi_addr_t *src)
{
	struct fi_msg_tagged m = {
		.msg_iov = iov,
		.desc = NULL,
		.iov_count = iov ? 1 : 0,
		.addr = from,
		.tag = tag,
		.ignore = ignore,
		.context = ctx,
		.data = 0,
	};
	struct fi_cq_err_entry err;
	POST(p->l.cq, fi_trecvmsg(p->l.ep, &m, FI_PEEK | flags));
	int r = wait_cq_quiet(p->l.cq, e, src, &err, WAIT_MS);
	if (r == -FI_ENOMSG) {
		EXPECT(err.op_context == ctx, "FI_ENOMSG entry context %p, want %p", err.op_context,
		       ctx);
		return r;
	}
	if (r)
		FAIL("FI_PEEK tag %#llx: %d (%s)", (unsigned long long)tag, r, fi_strerror(-r));
	EXPECT(e->op_context == ctx, "peek completion context %p, want %p", e->op_context, ctx);
	return 0;
}

/* Peeks until a match (the message may still be on its way). */
static void peek_until(struct peer *p, uint64_t tag, uint64_t flags, struct iovec *iov, void *ctx,
		       struct fi_cq_tagged_entry *e, fi_addr_t *src)
{
	uint64_t dl = now_ms() + WAIT_MS;
	while (peek_once(p, tag, 0, FI_ADDR_UNSPEC, flags, iov, ctx, e, src) == -FI_ENOMSG) {
		if (now_ms() > dl)
			FAIL("FI_PEEK for tag %#llx found nothing within %d ms",
			     (unsigned long long)tag, WAIT_MS);
		progress_for(p->l.cq, 1);
	}
}

static void expect_nomsg(struct peer *p, uint64_t tag, fi_addr_t from, const char *what)
{
	struct fi_context2 c;
	struct fi_cq_tagged_entry e;
	fi_addr_t src;
	int r = peek_once(p, tag, 0, from, 0, NULL, &c, &e, &src);
	EXPECT(r == -FI_ENOMSG, "%s: FI_PEEK matched (len %zu tag %#llx)", what, e.len,
	       (unsigned long long)e.tag);
}

static void check_peek_entry(const struct fi_cq_tagged_entry *e, fi_addr_t src, size_t len,
			     uint64_t tag, int has_data, uint64_t data, fi_addr_t want_src,
			     const char *what)
{
	char fl[256];
	flags_str(e->flags, fl, sizeof(fl));
	EXPECT(e->len == len, "%s: peek len %zu, want %zu (the message size)", what, e->len, len);
	EXPECT(e->tag == tag, "%s: peek tag %#llx", what, (unsigned long long)e->tag);
	EXPECT((e->flags & FI_RECV) && (e->flags & FI_TAGGED), "%s: peek flags %s", what, fl);
	if (has_data)
		EXPECT((e->flags & FI_REMOTE_CQ_DATA) && e->data == data,
		       "%s: peek data %#llx flags %s", what, (unsigned long long)e->data, fl);
	EXPECT(src == want_src, "%s: peek source %#llx, want %#llx", what, (unsigned long long)src,
	       (unsigned long long)want_src);
}

static void peek_a(struct peer *p, void *arg)
{
	uint8_t *b = sbuf(5000, 3000);
	struct fi_context2 c;
	g_tagged = 1;
	barrier(p); /* B peeked at an empty queue */
	POST(p->l.cq, fi_tsenddata(p->l.ep, b, 5000, NULL, 0xABCD, peer_addr(p), 0xC01, &c));
	wait_send(p, &c, "senddata");
	barrier(p); /* B done with the first message */
	POST(p->l.cq, fi_tsend(p->l.ep, b, 300, NULL, peer_addr(p), 0xC03, &c));
	wait_send(p, &c, "send");
	barrier(p);
	free(b);
}

static void peek_b(struct peer *p, void *arg)
{
	struct fi_context2 c;
	struct fi_cq_tagged_entry e;
	fi_addr_t src;
	g_tagged = 1;

	expect_nomsg(p, 0xC01, FI_ADDR_UNSPEC, "peek with nothing sent");
	barrier(p);

	peek_until(p, 0xC01, 0, NULL, &c, &e, &src);
	check_peek_entry(&e, src, 5000, 0xC01, 1, 0xABCD, peer_addr(p), "peek");
	EXPECT(e.buf == NULL, "peek without a buffer reports buf %p", e.buf);
	expect_nomsg(p, 0xC02, FI_ADDR_UNSPEC, "peek for another tag");

	/* Still there; with a buffer, a prefix may be copied. */
	uint8_t *pb = rbuf(100);
	struct iovec iov = { pb, 100 };
	CHECK_RC(peek_once(p, 0xC01, 0, FI_ADDR_UNSPEC, 0, &iov, &c, &e, &src), 0);
	check_peek_entry(&e, src, 5000, 0xC01, 1, 0xABCD, peer_addr(p), "second peek");
	if (e.buf) {
		EXPECT(e.buf == pb, "peek buf %p, want the first input buffer %p", e.buf, pb);
		rbuf_check(pb, 100, 100, 3000, "peek data");
	}

	/* The real receive. */
	uint8_t *b = rbuf(5000);
	POST(p->l.cq, fi_trecv(p->l.ep, b, 5000, NULL, peer_addr(p), 0xC01, 0, &c));
	struct want_recv w = { &c, 5000, 0xC01, 1, 0xABCD, peer_addr(p) };
	wait_recv(p, &w, "receive after peek");
	rbuf_check(b, 5000, 5000, 3000, "receive after peek");
	expect_nomsg(p, 0xC01, FI_ADDR_UNSPEC, "peek after the message was received");
	barrier(p);

	/* Source filtering: a peek directed at another address does not match. */
	peek_until(p, 0xC03, 0, NULL, &c, &e, &src);
	expect_nomsg(p, 0xC03, p->addr[p->rank], "peek directed at our own address");
	CHECK_RC(peek_once(p, 0xC03, 0, peer_addr(p), 0, NULL, &c, &e, &src), 0);
	check_peek_entry(&e, src, 300, 0xC03, 0, 0, peer_addr(p), "directed peek");
	/* Wildcard peek. */
	CHECK_RC(peek_once(p, 0xC00, 0xff, FI_ADDR_UNSPEC, 0, NULL, &c, &e, &src), 0);
	check_peek_entry(&e, src, 300, 0xC03, 0, 0, peer_addr(p), "wildcard peek");
	POST(p->l.cq, fi_trecv(p->l.ep, b, 5000, NULL, FI_ADDR_UNSPEC, 0xC03, 0, &c));
	struct want_recv w3 = { &c, 300, 0xC03, 0, 0, peer_addr(p) };
	wait_recv(p, &w3, "drain");
	barrier(p);
	free(pb);
	free(b);
}

/* Two messages, same tag, distinct payloads. */
static void two_messages_a(struct peer *p, uint64_t tag, size_t l1, size_t l2, uint64_t seed)
{
	uint8_t *m1 = sbuf(l1, seed), *m2 = sbuf(l2, seed + 1);
	struct fi_context2 c1, c2;
	void *cp[2] = { &c1, &c2 };
	POST(p->l.cq, fi_tsend(p->l.ep, m1, l1, NULL, peer_addr(p), tag, &c1));
	POST(p->l.cq, fi_tsend(p->l.ep, m2, l2, NULL, peer_addr(p), tag, &c2));
	wait_all(p, 2, cp, NULL, NULL, "two sends");
	free(m1);
	free(m2);
}

static void claim_a(struct peer *p, void *arg)
{
	barrier(p);
	two_messages_a(p, 0xD00, 700, 900, 3100);
	barrier(p);
}

static void claim_b(struct peer *p, void *arg)
{
	struct fi_context claim_ctx; /* FI_CLAIM requires a struct fi_context */
	struct fi_context2 rc;
	struct fi_cq_tagged_entry e;
	fi_addr_t src;
	uint8_t *b1 = rbuf(2000), *b2 = rbuf(2000);
	g_tagged = 1;
	barrier(p);

	peek_until(p, 0xD00, FI_CLAIM, NULL, &claim_ctx, &e, &src);
	check_peek_entry(&e, src, 700, 0xD00, 0, 0, peer_addr(p), "peek+claim");

	/* An ordinary receive must get the second message, not the claimed one. */
	POST(p->l.cq, fi_trecv(p->l.ep, b2, 2000, NULL, FI_ADDR_UNSPEC, 0xD00, 0, &rc));
	struct want_recv w2 = { &rc, 900, 0xD00, 0, 0, peer_addr(p) };
	wait_recv(p, &w2, "receive while the first message is claimed");
	rbuf_check(b2, 2000, 900, 3101, "second message");
	expect_nomsg(p, 0xD00, FI_ADDR_UNSPEC, "peek sees a claimed message");

	/* Retrieve the claimed message. */
	struct iovec iov = { b1, 2000 };
	struct fi_msg_tagged m = {
		.msg_iov = &iov,
		.desc = NULL,
		.iov_count = 1,
		.addr = FI_ADDR_UNSPEC,
		.tag = 0xD00,
		.ignore = 0,
		.context = &claim_ctx,
		.data = 0,
	};
	POST(p->l.cq, fi_trecvmsg(p->l.ep, &m, FI_CLAIM));
	struct want_recv w1 = { &claim_ctx, 700, 0xD00, 0, 0, peer_addr(p) };
	wait_recv(p, &w1, "FI_CLAIM receive");
	rbuf_check(b1, 2000, 700, 3100, "claimed message");
	expect_no_completion(p->l.cq, 100, "after claim");
	barrier(p);
	free(b1);
	free(b2);
}

static void discard_a(struct peer *p, void *arg)
{
	barrier(p);
	two_messages_a(p, 0xE00, 600, 800, 3200);
	barrier(p);
	two_messages_a(p, 0xE01, 500, 400, 3300);
	barrier(p);
}

static void discard_b(struct peer *p, void *arg)
{
	struct fi_context pc, cc;
	struct fi_context2 rc;
	struct fi_cq_tagged_entry e;
	fi_addr_t src;
	uint8_t *b = rbuf(2000);
	g_tagged = 1;
	barrier(p);

	/* FI_PEEK | FI_DISCARD */
	peek_until(p, 0xE00, FI_DISCARD, NULL, &pc, &e, &src);
	check_peek_entry(&e, src, 600, 0xE00, 0, 0, peer_addr(p), "peek+discard");
	POST(p->l.cq, fi_trecv(p->l.ep, b, 2000, NULL, FI_ADDR_UNSPEC, 0xE00, 0, &rc));
	struct want_recv w = { &rc, 800, 0xE00, 0, 0, peer_addr(p) };
	wait_recv(p, &w, "receive after peek+discard");
	rbuf_check(b, 2000, 800, 3201, "message after the discarded one");
	expect_nomsg(p, 0xE00, FI_ADDR_UNSPEC, "peek after discard");
	barrier(p);

	/* FI_PEEK | FI_CLAIM, then FI_CLAIM | FI_DISCARD */
	peek_until(p, 0xE01, FI_CLAIM, NULL, &cc, &e, &src);
	check_peek_entry(&e, src, 500, 0xE01, 0, 0, peer_addr(p), "peek+claim");
	struct fi_msg_tagged m = {
		.msg_iov = NULL,
		.desc = NULL,
		.iov_count = 0,
		.addr = FI_ADDR_UNSPEC,
		.tag = 0xE01,
		.ignore = 0,
		.context = &cc,
		.data = 0,
	};
	POST(p->l.cq, fi_trecvmsg(p->l.ep, &m, FI_CLAIM | FI_DISCARD));
	struct fi_cq_tagged_entry de;
	wait_ok(p->l.cq, &de, NULL, "FI_CLAIM|FI_DISCARD completion");
	EXPECT(de.op_context == &cc, "FI_CLAIM|FI_DISCARD completion context %p, want %p",
	       de.op_context, (void *)&cc);
	memset(b, GUARD_BYTE, 2000 + GUARD);
	POST(p->l.cq, fi_trecv(p->l.ep, b, 2000, NULL, FI_ADDR_UNSPEC, 0xE01, 0, &rc));
	struct want_recv w2 = { &rc, 400, 0xE01, 0, 0, peer_addr(p) };
	wait_recv(p, &w2, "receive after claim+discard");
	rbuf_check(b, 2000, 400, 3301, "message after the discarded claimed one");
	expect_nomsg(p, 0xE01, FI_ADDR_UNSPEC, "peek after claim+discard");
	barrier(p);
	free(b);
}

/* ---- cancel ----------------------------------------------------------------- */

static void cancel_a(struct peer *p, void *arg)
{
	uint8_t *b = sbuf(256, 3400);
	struct fi_context2 c;
	barrier(p); /* B cancelled its receives */
	POST(p->l.cq, fi_tsend(p->l.ep, b, 256, NULL, peer_addr(p), 0xF00, &c));
	g_tagged = 1;
	wait_send(p, &c, "tagged send");
	POST(p->l.cq, fi_send(p->l.ep, b, 200, NULL, peer_addr(p), &c));
	g_tagged = 0;
	wait_send(p, &c, "untagged send");
	barrier(p);
	free(b);
}

static void cancel_one(struct peer *p, struct fi_context2 *ctx, const char *what)
{
	struct fi_cq_err_entry err;
	CHECK(fi_cancel(&p->l.ep->fid, ctx));
	int r = wait_cq(p->l.cq, NULL, NULL, &err, WAIT_MS);
	EXPECT(r == -FI_ECANCELED, "%s: wait_cq -> %d (%s), want -FI_ECANCELED", what, r,
	       fi_strerror(-r));
	EXPECT(err.op_context == ctx, "%s: op_context %p, want %p", what, err.op_context,
	       (void *)ctx);
	EXPECT(err.err == FI_ECANCELED, "%s: err %d", what, err.err);
}

static void cancel_b(struct peer *p, void *arg)
{
	struct fi_context2 ct, cu, nt, nu;
	uint8_t *bt = rbuf(256), *bu = rbuf(256), *b2 = rbuf(256), *b3 = rbuf(256);
	POST(p->l.cq, fi_trecv(p->l.ep, bt, 256, NULL, FI_ADDR_UNSPEC, 0xF00, 0, &ct));
	POST(p->l.cq, fi_recv(p->l.ep, bu, 256, NULL, FI_ADDR_UNSPEC, &cu));
	cancel_one(p, &ct, "cancel tagged receive");
	cancel_one(p, &cu, "cancel untagged receive");
	expect_no_completion(p->l.cq, 50, "after cancel");
	barrier(p);
	progress_for(p->l.cq, 100);
	rbuf_check(bt, 256, 0, 0, "cancelled tagged buffer");
	rbuf_check(bu, 256, 0, 0, "cancelled untagged buffer");
	g_tagged = 1;
	POST(p->l.cq, fi_trecv(p->l.ep, b2, 256, NULL, FI_ADDR_UNSPEC, 0xF00, 0, &nt));
	struct want_recv w = { &nt, 256, 0xF00, 0, 0, peer_addr(p) };
	wait_recv(p, &w, "tagged receive after cancel");
	rbuf_check(b2, 256, 256, 3400, "tagged receive after cancel");
	g_tagged = 0;
	POST(p->l.cq, fi_recv(p->l.ep, b3, 256, NULL, FI_ADDR_UNSPEC, &nu));
	struct want_recv wu = { &nu, 200, 0, 0, 0, peer_addr(p) };
	wait_recv(p, &wu, "untagged receive after cancel");
	rbuf_check(b3, 256, 200, 3400, "untagged receive after cancel");
	rbuf_check(bt, 256, 0, 0, "cancelled tagged buffer");
	rbuf_check(bu, 256, 0, 0, "cancelled untagged buffer");
	barrier(p);
	free(bt);
	free(bu);
	free(b2);
	free(b3);
}

/* ---- any-source vs directed, three processes ------------------------------- */

#define AVD_TAGGED   100
#define AVD_UNTAGGED 30
#define AVD_LEN	     256

static void avd_sender(struct peer *p, void *arg)
{
	uint8_t *b = xmalloc(AVD_TAGGED * AVD_LEN);
	struct fi_context2 c[AVD_TAGGED];
	void *cp[AVD_TAGGED];
	barrier(p); /* rank 0 posted */
	for (int i = 0; i < AVD_TAGGED; i++) {
		fill_pattern(b + i * AVD_LEN, AVD_LEN, (uint64_t)p->rank * 10000 + i);
		cp[i] = &c[i];
		POST(p->l.cq, fi_tsend(p->l.ep, b + i * AVD_LEN, AVD_LEN, NULL, p->addr[0],
				       0x5000 + i, &c[i]));
	}
	wait_all(p, AVD_TAGGED, cp, NULL, NULL, "tagged sends");
	barrier(p);
	for (int i = 0; i < AVD_UNTAGGED; i++) {
		barrier(p); /* rank 0 posted this round */
		fill_pattern(b, AVD_LEN, (uint64_t)p->rank * 10000 + 5000 + i);
		POST(p->l.cq, fi_send(p->l.ep, b, AVD_LEN, NULL, p->addr[0], &c[0]));
		g_tagged = 0;
		wait_send(p, &c[0], "untagged send");
		barrier(p);
	}
	free(b);
}

static void avd_receiver(struct peer *p, void *arg)
{
	uint8_t *b = rbuf(2 * AVD_TAGGED * AVD_LEN);
	struct fi_context2 c[2 * AVD_TAGGED];
	void *cp[2 * AVD_TAGGED];
	struct fi_cq_tagged_entry *e = calloc(2 * AVD_TAGGED, sizeof(*e));
	fi_addr_t s[2 * AVD_TAGGED];
	ASSERT(e);
	/* Per tag: [2i] directed at rank 2, then [2i+1] any source. */
	for (int i = 0; i < AVD_TAGGED; i++) {
		cp[2 * i] = &c[2 * i];
		cp[2 * i + 1] = &c[2 * i + 1];
		POST(p->l.cq, fi_trecv(p->l.ep, b + 2 * i * AVD_LEN, AVD_LEN, NULL, p->addr[2],
				       0x5000 + i, 0, &c[2 * i]));
		POST(p->l.cq, fi_trecv(p->l.ep, b + (2 * i + 1) * AVD_LEN, AVD_LEN, NULL,
				       FI_ADDR_UNSPEC, 0x5000 + i, 0, &c[2 * i + 1]));
	}
	barrier(p);
	wait_all(p, 2 * AVD_TAGGED, cp, e, s, "tagged any/directed receives");
	g_tagged = 1;
	for (int i = 0; i < AVD_TAGGED; i++) {
		char what[64];
		snprintf(what, sizeof(what), "tag %#x directed at rank 2", 0x5000 + i);
		struct want_recv wd = { &c[2 * i], AVD_LEN, 0x5000 + i, 0, 0, p->addr[2] };
		check_recv_entry(&e[2 * i], s[2 * i], &wd, what);
		EXPECT_PATTERN(b + 2 * i * AVD_LEN, AVD_LEN, 2 * 10000 + i);
		snprintf(what, sizeof(what), "tag %#x any source", 0x5000 + i);
		struct want_recv wa = { &c[2 * i + 1], AVD_LEN, 0x5000 + i, 0, 0, p->addr[1] };
		check_recv_entry(&e[2 * i + 1], s[2 * i + 1], &wa, what);
		EXPECT_PATTERN(b + (2 * i + 1) * AVD_LEN, AVD_LEN, 1 * 10000 + i);
	}
	barrier(p);

	g_tagged = 0;
	for (int i = 0; i < AVD_UNTAGGED; i++) {
		memset(b, GUARD_BYTE, 2 * AVD_LEN);
		POST(p->l.cq, fi_recv(p->l.ep, b, AVD_LEN, NULL, p->addr[2], &c[0]));
		POST(p->l.cq, fi_recv(p->l.ep, b + AVD_LEN, AVD_LEN, NULL, FI_ADDR_UNSPEC, &c[1]));
		barrier(p);
		wait_all(p, 2, cp, e, s, "untagged any/directed receives");
		struct want_recv wd = { &c[0], AVD_LEN, 0, 0, 0, p->addr[2] };
		struct want_recv wa = { &c[1], AVD_LEN, 0, 0, 0, p->addr[1] };
		check_recv_entry(&e[0], s[0], &wd, "untagged, directed at rank 2");
		check_recv_entry(&e[1], s[1], &wa, "untagged, any source");
		EXPECT_PATTERN(b, AVD_LEN, 2 * 10000 + 5000 + i);
		EXPECT_PATTERN(b + AVD_LEN, AVD_LEN, 1 * 10000 + 5000 + i);
		barrier(p);
	}
	free(e);
	free(b);
}

/* ---- counters --------------------------------------------------------------- */

#define CNT_N 30

static void counters_a(struct peer *p, void *arg)
{
	uint8_t *b = sbuf(128, 3500);
	struct fi_context2 c[2 * CNT_N + 1];
	void *cp[2 * CNT_N];
	ASSERT(p->l.tx_cntr && p->l.rx_cntr);
	barrier(p);
	for (int i = 0; i < CNT_N; i++) {
		cp[2 * i] = &c[2 * i];
		cp[2 * i + 1] = &c[2 * i + 1];
		POST(p->l.cq, fi_tsend(p->l.ep, b, 128, NULL, peer_addr(p), 0x6000, &c[2 * i]));
		POST(p->l.cq, fi_send(p->l.ep, b, 128, NULL, peer_addr(p), &c[2 * i + 1]));
	}
	CHECK(fi_cntr_wait(p->l.tx_cntr, 2 * CNT_N, WAIT_MS));
	wait_all(p, 2 * CNT_N, cp, NULL, NULL, "sends (CQ entries as well as counts)");
	EXPECT(fi_cntr_read(p->l.tx_cntr) == 2 * CNT_N, "send counter %llu, want %d",
	       (unsigned long long)fi_cntr_read(p->l.tx_cntr), 2 * CNT_N);
	EXPECT(fi_cntr_readerr(p->l.tx_cntr) == 0, "send error counter %llu",
	       (unsigned long long)fi_cntr_readerr(p->l.tx_cntr));
	EXPECT(fi_cntr_read(p->l.rx_cntr) == 0, "recv counter on the sender %llu",
	       (unsigned long long)fi_cntr_read(p->l.rx_cntr));
	barrier(p);

	/* One message the receiver truncates. */
	POST(p->l.cq, fi_tsend(p->l.ep, b, 128, NULL, peer_addr(p), 0x6001, &c[2 * CNT_N]));
	g_tagged = 1;
	wait_send(p, &c[2 * CNT_N], "send to be truncated");
	EXPECT(fi_cntr_read(p->l.tx_cntr) == 2 * CNT_N + 1, "send counter %llu after one more",
	       (unsigned long long)fi_cntr_read(p->l.tx_cntr));
	barrier(p);
	free(b);
}

static void counters_b(struct peer *p, void *arg)
{
	uint8_t *b = rbuf(2 * CNT_N * 128);
	struct fi_context2 c[2 * CNT_N + 1];
	void *cp[2 * CNT_N];
	ASSERT(p->l.tx_cntr && p->l.rx_cntr);
	for (int i = 0; i < CNT_N; i++) {
		cp[2 * i] = &c[2 * i];
		cp[2 * i + 1] = &c[2 * i + 1];
		POST(p->l.cq, fi_trecv(p->l.ep, b + 2 * i * 128, 128, NULL, peer_addr(p), 0x6000, 0,
				       &c[2 * i]));
		POST(p->l.cq, fi_recv(p->l.ep, b + (2 * i + 1) * 128, 128, NULL, peer_addr(p),
				      &c[2 * i + 1]));
	}
	EXPECT(fi_cntr_read(p->l.rx_cntr) == 0, "recv counter before any message");
	barrier(p);
	CHECK(fi_cntr_wait(p->l.rx_cntr, 2 * CNT_N, WAIT_MS));
	EXPECT(fi_cntr_read(p->l.rx_cntr) == 2 * CNT_N, "recv counter %llu, want %d",
	       (unsigned long long)fi_cntr_read(p->l.rx_cntr), 2 * CNT_N);
	wait_all(p, 2 * CNT_N, cp, NULL, NULL, "receives (CQ entries as well as counts)");
	for (int i = 0; i < 2 * CNT_N; i++)
		EXPECT_PATTERN(b + i * 128, 128, 3500);
	EXPECT(fi_cntr_readerr(p->l.rx_cntr) == 0, "recv error counter %llu",
	       (unsigned long long)fi_cntr_readerr(p->l.rx_cntr));
	EXPECT(fi_cntr_read(p->l.tx_cntr) == 0, "send counter on the receiver %llu",
	       (unsigned long long)fi_cntr_read(p->l.tx_cntr));
	barrier(p);

	/* Truncated receive: counted as an error, not a success. */
	POST(p->l.cq, fi_trecv(p->l.ep, b, 10, NULL, peer_addr(p), 0x6001, 0, &c[2 * CNT_N]));
	uint64_t dl = now_ms() + WAIT_MS;
	while (fi_cntr_readerr(p->l.rx_cntr) == 0 && now_ms() < dl)
		;
	EXPECT(fi_cntr_readerr(p->l.rx_cntr) == 1, "recv error counter %llu after a truncation",
	       (unsigned long long)fi_cntr_readerr(p->l.rx_cntr));
	EXPECT(fi_cntr_read(p->l.rx_cntr) == 2 * CNT_N, "recv counter %llu after a truncation",
	       (unsigned long long)fi_cntr_read(p->l.rx_cntr));
	struct fi_cq_err_entry err;
	int r = wait_cq(p->l.cq, NULL, NULL, &err, WAIT_MS);
	EXPECT(r == -FI_ETRUNC && err.op_context == &c[2 * CNT_N],
	       "truncation error entry: %d (%s) ctx %p", r, fi_strerror(-r), err.op_context);
	barrier(p);
	free(b);
}

/* ---- receives posted through every entry point ------------------------------ */

#define PM_N	200
#define PM_SLOT 32

static void post_mixed_a(struct peer *p, void *arg)
{
	uint8_t *b = xmalloc(PM_N * PM_SLOT);
	struct fi_context2 *c = calloc(PM_N, sizeof(*c));
	void **cp = calloc(PM_N, sizeof(*cp));
	ASSERT(c && cp);
	for (size_t i = 0; i < PM_N; i++) {
		fill_pattern(b + i * PM_SLOT, PM_SLOT, 7000 + i);
		cp[i] = &c[i];
	}
	barrier(p); /* B posted everything */
	for (int tagged = 1; tagged >= 0; tagged--) {
		g_tagged = tagged;
		for (size_t i = 0; i < PM_N; i++)
			POST(p->l.cq, x_send(p, 1, b + i * PM_SLOT, 1 + i % PM_SLOT, 0xA00, &c[i]));
		wait_all(p, PM_N, cp, NULL, NULL, "sends");
	}
	barrier(p);
	free(cp);
	free(c);
	free(b);
}

static void post_mixed_b(struct peer *p, void *arg)
{
	uint8_t *b[2];
	struct fi_context2 *c[2];
	void **cp = calloc(PM_N, sizeof(*cp));
	struct fi_cq_tagged_entry *e = calloc(PM_N, sizeof(*e));
	fi_addr_t *s = calloc(PM_N, sizeof(*s));
	ASSERT(cp && e && s);
	for (int tagged = 1; tagged >= 0; tagged--) {
		g_tagged = tagged;
		b[tagged] = rbuf(PM_N * PM_SLOT);
		c[tagged] = calloc(PM_N, sizeof(struct fi_context2));
		ASSERT(c[tagged]);
		for (size_t i = 0; i < PM_N; i++) {
			uint8_t *m = b[tagged] + i * PM_SLOT;
			struct fi_context2 *ctx = &c[tagged][i];
			struct iovec one = { m, PM_SLOT };
			struct iovec iov[2] = { { m, 5 }, { m + 5, PM_SLOT - 5 } };
			switch (i % 4) {
			case 0:
			case 1:
				POST(p->l.cq, x_recv(p, m, PM_SLOT, FI_ADDR_UNSPEC, 0xA00, 0, ctx));
				break;
			case 2:
				POST(p->l.cq,
				     x_recvmsg(p, &one, 1, FI_ADDR_UNSPEC, 0xA00, 0, 0, ctx));
				break;
			default:
				POST(p->l.cq, x_recvv(p, iov, 2, FI_ADDR_UNSPEC, 0xA00, 0, ctx));
			}
		}
	}
	barrier(p);
	for (int tagged = 1; tagged >= 0; tagged--) {
		g_tagged = tagged;
		for (size_t i = 0; i < PM_N; i++)
			cp[i] = &c[tagged][i];
		wait_all(p, PM_N, cp, e, s, tagged ? "tagged receives" : "untagged receives");
		for (size_t i = 0; i < PM_N; i++) {
			struct want_recv w = { &c[tagged][i], 1 + i % PM_SLOT, 0xA00, 0, 0,
					       peer_addr(p) };
			check_recv_entry(&e[i], s[i], &w, "receive in posting order");
			uint8_t want[PM_SLOT];
			fill_pattern(want, PM_SLOT, 7000 + i);
			EXPECT(memcmp(b[tagged] + i * PM_SLOT, want, w.len) == 0,
			       "receive %zu (entry point %zu): wrong message", i, i % 4);
		}
		free(b[tagged]);
		free(c[tagged]);
	}
	barrier(p);
	free(s);
	free(e);
	free(cp);
}

/* ---- a receive posted after its message is already unexpected --------------- */

static void post_late_a(struct peer *p, void *arg)
{
	uint8_t *b = sbuf(100, 7100);
	struct fi_context2 c;
	g_tagged = 1;
	for (int round = 0; round < 20; round++) {
		POST(p->l.cq, fi_tsend(p->l.ep, b, 100, NULL, peer_addr(p), 0xB00 + round, &c));
		wait_send(p, &c, "send");
		barrier(p); /* B has the message queued as unexpected */
		barrier(p); /* B received it */
	}
	free(b);
}

static void post_late_b(struct peer *p, void *arg)
{
	uint8_t *b = rbuf(100);
	struct fi_context2 c;
	g_tagged = 1;
	int late = 0;
	for (int round = 0; round < 20; round++) {
		barrier(p);
		/* The message is unexpected once FI_PEEK sees it; then let C's
		 * idle answers settle. */
		struct fi_context2 pc;
		struct fi_cq_tagged_entry pe;
		fi_addr_t ps;
		peek_until(p, 0xB00 + round, 0, NULL, &pc, &pe, &ps);
		progress_for(p->l.cq, 5);
		ASSERT(fi_trecv(p->l.ep, b, 100, NULL, FI_ADDR_UNSPEC, 0xB00 + round, 0, &c) == 0);
		struct fi_cq_tagged_entry e;
		fi_addr_t src = FI_ADDR_NOTAVAIL;
		ssize_t r = -FI_EAGAIN;
		int reads = 0;
		while (r == -FI_EAGAIN && reads < 2) {
			r = fi_cq_readfrom(p->l.cq, &e, 1, &src);
			reads++;
		}
		if (r == -FI_EAGAIN) {
			late++;
			ASSERT(wait_cq(p->l.cq, &e, &src, NULL, WAIT_MS) == 0);
		} else {
			EXPECT(r == 1, "fi_cq_readfrom -> %zd (%s)", r, fi_strerror((int)-r));
		}
		struct want_recv w = { &c, 100, 0xB00 + round, 0, 0, peer_addr(p) };
		check_recv_entry(&e, src, &w, "late-posted receive");
		rbuf_check(b, 100, 100, 7100, "late-posted receive");
		barrier(p);
	}
	EXPECT(late == 0,
	       "%d of 20 receives posted after their message needed more than two "
	       "fi_cq_read calls",
	       late);
	free(b);
}

/* ---- receives posted right after a completion ------------------------------ */

#define REARM_ROUNDS 20
#define REARM_BIG    8000 /* over shm's eager limit and the network core's inject */

static void rearm_a(struct peer *p, void *arg)
{
	uint8_t *small = sbuf(16, 7200), *big = sbuf(REARM_BIG, 7300), *other = sbuf(16, 7400);
	struct fi_context2 c;
	for (int round = 0; round < REARM_ROUNDS; round++) {
		uint64_t tag = 0xC00 + round;
		g_tagged = 1;
		POST(p->l.cq, fi_tsend(p->l.ep, small, 16, NULL, peer_addr(p), tag, &c));
		wait_send(p, &c, "first");
		barrier(p); /* B posted two receives */
		POST(p->l.cq, fi_tsend(p->l.ep, small, 16, NULL, peer_addr(p), tag, &c));
		wait_send(p, &c, "second");
		POST(p->l.cq, fi_tsend(p->l.ep, big, REARM_BIG, NULL, peer_addr(p), tag, &c));
		wait_send(p, &c, "third");
		barrier(p); /* B cancelled a receive and posted another */
		POST(p->l.cq, fi_tsend(p->l.ep, small, 16, NULL, peer_addr(p), tag, &c));
		wait_send(p, &c, "fourth");
		g_tagged = 0;
		POST(p->l.cq, fi_send(p->l.ep, small, 12, NULL, peer_addr(p), &c));
		wait_send(p, &c, "untagged");
		barrier(p); /* B posted a receive for tag + 0x100 */
		g_tagged = 1;
		POST(p->l.cq, fi_tsend(p->l.ep, other, 16, NULL, peer_addr(p), tag + 0x200, &c));
		wait_send(p, &c, "other tag");
		POST(p->l.cq, fi_tsend(p->l.ep, small, 16, NULL, peer_addr(p), tag + 0x100, &c));
		wait_send(p, &c, "wanted tag");
		barrier(p);
	}
	free(small);
	free(big);
	free(other);
}

static void rearm_b(struct peer *p, void *arg)
{
	uint8_t *b[4];
	struct fi_context2 c[4];
	for (int i = 0; i < 4; i++)
		b[i] = rbuf(REARM_BIG);
	for (int round = 0; round < REARM_ROUNDS; round++) {
		uint64_t tag = 0xC00 + round;
		g_tagged = 1;
		memset(b[0], GUARD_BYTE, REARM_BIG);
		POST(p->l.cq,
		     fi_trecv(p->l.ep, b[0], REARM_BIG, NULL, peer_addr(p), tag, 0, &c[0]));
		struct want_recv w0 = { &c[0], 16, tag, 0, 0, peer_addr(p) };
		wait_recv(p, &w0, "first receive");
		rbuf_check(b[0], REARM_BIG, 16, 7200, "first receive");
		/* Right after the completion: the first of these may be armed in
		 * C, the second waits behind it. */
		memset(b[1], GUARD_BYTE, REARM_BIG);
		memset(b[2], GUARD_BYTE, REARM_BIG);
		POST(p->l.cq,
		     fi_trecv(p->l.ep, b[1], REARM_BIG, NULL, FI_ADDR_UNSPEC, tag, 0, &c[1]));
		POST(p->l.cq,
		     fi_trecv(p->l.ep, b[2], REARM_BIG, NULL, peer_addr(p), tag, 0, &c[2]));
		barrier(p);
		struct want_recv w1 = { &c[1], 16, tag, 0, 0, peer_addr(p) };
		wait_recv(p, &w1, "second receive (any source)");
		struct want_recv w2 = { &c[2], REARM_BIG, tag, 0, 0, peer_addr(p) };
		wait_recv(p, &w2, "third receive");
		rbuf_check(b[1], REARM_BIG, 16, 7200, "second receive");
		rbuf_check(b[2], REARM_BIG, REARM_BIG, 7300, "third receive");
		/* Again right after a completion: cancel the receive. */
		memset(b[3], GUARD_BYTE, REARM_BIG);
		POST(p->l.cq,
		     fi_trecv(p->l.ep, b[3], REARM_BIG, NULL, peer_addr(p), tag, 0, &c[3]));
		cancel_one(p, &c[3], "cancel a receive posted right after a completion");
		memset(b[0], GUARD_BYTE, REARM_BIG);
		POST(p->l.cq,
		     fi_trecv(p->l.ep, b[0], REARM_BIG, NULL, peer_addr(p), tag, 0, &c[0]));
		barrier(p);
		wait_recv(p, &w0, "receive after the cancel");
		rbuf_check(b[0], REARM_BIG, 16, 7200, "receive after the cancel");
		rbuf_check(b[3], REARM_BIG, 0, 0, "cancelled receive's buffer");
		g_tagged = 0;
		memset(b[1], GUARD_BYTE, REARM_BIG);
		POST(p->l.cq, fi_recv(p->l.ep, b[1], REARM_BIG, NULL, FI_ADDR_UNSPEC, &c[1]));
		struct want_recv wu = { &c[1], 12, 0, 0, 0, peer_addr(p) };
		wait_recv(p, &wu, "untagged receive");
		rbuf_check(b[1], REARM_BIG, 12, 7200, "untagged receive");
		/* A receive armed after a completion must not take a message of
		 * another tag that comes first. */
		g_tagged = 1;
		memset(b[2], GUARD_BYTE, REARM_BIG);
		POST(p->l.cq,
		     fi_trecv(p->l.ep, b[2], REARM_BIG, NULL, peer_addr(p), tag + 0x100, 0, &c[2]));
		barrier(p);
		struct want_recv wt = { &c[2], 16, tag + 0x100, 0, 0, peer_addr(p) };
		wait_recv(p, &wt, "receive of the second tag");
		rbuf_check(b[2], REARM_BIG, 16, 7200, "receive of the second tag");
		memset(b[3], GUARD_BYTE, REARM_BIG);
		POST(p->l.cq,
		     fi_trecv(p->l.ep, b[3], REARM_BIG, NULL, peer_addr(p), tag + 0x200, 0, &c[3]));
		struct want_recv wo = { &c[3], 16, tag + 0x200, 0, 0, peer_addr(p) };
		wait_recv(p, &wo, "receive of the first tag, posted late");
		rbuf_check(b[3], REARM_BIG, 16, 7400, "receive of the first tag");
		barrier(p);
	}
	for (int i = 0; i < 4; i++)
		free(b[i]);
}

static const struct subtest cases[] = {
	CASE("trunc_tagged", trunc_tagged_a, trunc_tagged_b),
	CASE("trunc_untagged", trunc_untagged_a, trunc_untagged_b),
	CASE("peek", peek_a, peek_b),
	CASE("claim", claim_a, claim_b),
	CASE("discard", discard_a, discard_b),
	CASE("cancel", cancel_a, cancel_b),
	{ .name = "any_vs_directed", .a = avd_receiver, .b = avd_sender, .nranks = 3 },
	{ .name = "counters", .a = counters_a, .b = counters_b, .counters = 1 },
	CASE("post_mixed", post_mixed_a, post_mixed_b),
	CASE("post_late", post_late_a, post_late_b),
	CASE("rearm", rearm_a, rearm_b),
};

int main(int argc, char **argv)
{
	return run_subtests(argc, argv, cases, sizeof(cases) / sizeof(cases[0]));
}
