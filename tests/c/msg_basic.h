/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * Data-path helpers and the cases msg_tagged.c and msg_untagged.c share.
 * Included (once) by each of those programs; g_tagged selects fi_t* calls
 * (1) or fi_send/fi_recv calls (0). msg_semantics.c defines
 * MSG_NO_SHARED_CASES to get only the helpers.
 *
 * Roles: in two-process cases A (rank 0) mostly sends and B (rank 1)
 * mostly receives. Every receive completion is checked for op_context,
 * len, tag, flags (FI_RECV plus FI_TAGGED or FI_MSG, FI_REMOTE_CQ_DATA
 * exactly when data was sent), CQ data and the source fi_addr returned by
 * fi_cq_readfrom (it must equal what fi_av_insert gave for the sender);
 * every payload byte is compared and the bytes after it must be untouched.
 */
#ifndef LNX_MSG_BASIC_H
#define LNX_MSG_BASIC_H

#include "common.h"

static int g_tagged;
#define KIND	   (g_tagged ? FI_TAGGED : FI_MSG)
#define GUARD	   64
#define GUARD_BYTE 0xEE
#define KiB	   ((size_t)1024)
#define MiB	   (1024 * KiB)

/* ---- posting wrappers ------------------------------------------------------ */

static inline ssize_t x_send(struct peer *p, int to, const void *buf, size_t len, uint64_t tag,
			     void *ctx)
{
	fi_addr_t d = p->addr[to];
	return g_tagged ? fi_tsend(p->l.ep, buf, len, NULL, d, tag, ctx) :
			  fi_send(p->l.ep, buf, len, NULL, d, ctx);
}

static inline ssize_t x_recv(struct peer *p, void *buf, size_t len, fi_addr_t src, uint64_t tag,
			     uint64_t ignore, void *ctx)
{
	return g_tagged ? fi_trecv(p->l.ep, buf, len, NULL, src, tag, ignore, ctx) :
			  fi_recv(p->l.ep, buf, len, NULL, src, ctx);
}

static inline ssize_t x_inject(struct peer *p, int to, const void *buf, size_t len, uint64_t tag)
{
	fi_addr_t d = p->addr[to];
	return g_tagged ? fi_tinject(p->l.ep, buf, len, d, tag) : fi_inject(p->l.ep, buf, len, d);
}

static inline ssize_t x_senddata(struct peer *p, int to, const void *buf, size_t len, uint64_t data,
				 uint64_t tag, void *ctx)
{
	fi_addr_t d = p->addr[to];
	return g_tagged ? fi_tsenddata(p->l.ep, buf, len, NULL, data, d, tag, ctx) :
			  fi_senddata(p->l.ep, buf, len, NULL, data, d, ctx);
}

static inline ssize_t x_injectdata(struct peer *p, int to, const void *buf, size_t len,
				   uint64_t data, uint64_t tag)
{
	fi_addr_t d = p->addr[to];
	return g_tagged ? fi_tinjectdata(p->l.ep, buf, len, data, d, tag) :
			  fi_injectdata(p->l.ep, buf, len, data, d);
}

static inline ssize_t x_sendv(struct peer *p, int to, const struct iovec *iov, size_t count,
			      uint64_t tag, void *ctx)
{
	fi_addr_t d = p->addr[to];
	return g_tagged ? fi_tsendv(p->l.ep, iov, NULL, count, d, tag, ctx) :
			  fi_sendv(p->l.ep, iov, NULL, count, d, ctx);
}

static inline ssize_t x_recvv(struct peer *p, const struct iovec *iov, size_t count, fi_addr_t src,
			      uint64_t tag, uint64_t ignore, void *ctx)
{
	return g_tagged ? fi_trecvv(p->l.ep, iov, NULL, count, src, tag, ignore, ctx) :
			  fi_recvv(p->l.ep, iov, NULL, count, src, ctx);
}

static inline ssize_t x_sendmsg(struct peer *p, int to, const struct iovec *iov, size_t count,
				uint64_t tag, uint64_t data, uint64_t flags, void *ctx)
{
	if (g_tagged) {
		struct fi_msg_tagged m = {
			.msg_iov = iov,
			.desc = NULL,
			.iov_count = count,
			.addr = p->addr[to],
			.tag = tag,
			.ignore = 0,
			.context = ctx,
			.data = data,
		};
		return fi_tsendmsg(p->l.ep, &m, flags);
	}
	struct fi_msg m = {
		.msg_iov = iov,
		.desc = NULL,
		.iov_count = count,
		.addr = p->addr[to],
		.context = ctx,
		.data = data,
	};
	return fi_sendmsg(p->l.ep, &m, flags);
}

static inline ssize_t x_recvmsg(struct peer *p, const struct iovec *iov, size_t count,
				fi_addr_t src, uint64_t tag, uint64_t ignore, uint64_t flags,
				void *ctx)
{
	if (g_tagged) {
		struct fi_msg_tagged m = {
			.msg_iov = iov,
			.desc = NULL,
			.iov_count = count,
			.addr = src,
			.tag = tag,
			.ignore = ignore,
			.context = ctx,
			.data = 0,
		};
		return fi_trecvmsg(p->l.ep, &m, flags);
	}
	struct fi_msg m = {
		.msg_iov = iov,
		.desc = NULL,
		.iov_count = count,
		.addr = src,
		.context = ctx,
		.data = 0,
	};
	return fi_recvmsg(p->l.ep, &m, flags);
}

/* ---- buffers --------------------------------------------------------------- */

/* A receive buffer of cap bytes followed by a guard; all GUARD_BYTE. */
static inline uint8_t *rbuf(size_t cap)
{
	uint8_t *b = xmalloc(cap + GUARD);
	memset(b, GUARD_BYTE, cap + GUARD);
	return b;
}

/* got bytes of pattern seed, the rest of cap and the guard untouched. */
static inline void rbuf_check(const uint8_t *b, size_t cap, size_t got, uint64_t seed,
			      const char *what)
{
	long long o = check_pattern(b, got, seed);
	EXPECT(o < 0, "%s: data mismatch at offset %lld of %zu", what, o, got);
	for (size_t i = got; i < cap + GUARD; i++)
		EXPECT(b[i] == GUARD_BYTE,
		       "%s: byte %zu past the %zu received (buffer %zu) was "
		       "overwritten",
		       what, i, got, cap);
}

static inline uint8_t *sbuf(size_t len, uint64_t seed)
{
	uint8_t *b = xmalloc(len);
	fill_pattern(b, len, seed);
	return b;
}

/* ---- completion checks ------------------------------------------------------ */

static inline void check_send_entry(const struct fi_cq_tagged_entry *e, void *ctx, const char *what)
{
	char fl[256];
	EXPECT(e->op_context == ctx, "%s: send completion context %p, want %p", what, e->op_context,
	       ctx);
	EXPECT((e->flags & FI_SEND) && (e->flags & KIND) && !(e->flags & FI_RECV),
	       "%s: send completion flags %s", what, flags_str(e->flags, fl, sizeof(fl)));
}

struct want_recv {
	void *ctx;
	size_t len;
	uint64_t tag; /* checked when tagged */
	int has_data;
	uint64_t data;
	fi_addr_t src; /* expected fi_cq_readfrom source */
};

static inline void check_recv_entry(const struct fi_cq_tagged_entry *e, fi_addr_t src,
				    const struct want_recv *w, const char *what)
{
	char fl[256];
	flags_str(e->flags, fl, sizeof(fl));
	EXPECT(e->op_context == w->ctx, "%s: recv completion context %p, want %p", what,
	       e->op_context, w->ctx);
	EXPECT((e->flags & FI_RECV) && (e->flags & KIND) && !(e->flags & FI_SEND),
	       "%s: recv completion flags %s", what, fl);
	EXPECT(e->len == w->len, "%s: recv len %zu, want %zu", what, e->len, w->len);
	if (g_tagged)
		EXPECT(e->tag == w->tag, "%s: tag %#llx, want %#llx", what,
		       (unsigned long long)e->tag, (unsigned long long)w->tag);
	if (w->has_data) {
		EXPECT(e->flags & FI_REMOTE_CQ_DATA, "%s: FI_REMOTE_CQ_DATA missing (flags %s)",
		       what, fl);
		EXPECT(e->data == w->data, "%s: cq data %#llx, want %#llx", what,
		       (unsigned long long)e->data, (unsigned long long)w->data);
	} else {
		EXPECT(!(e->flags & FI_REMOTE_CQ_DATA), "%s: FI_REMOTE_CQ_DATA set but none sent",
		       what);
	}
	EXPECT(src == w->src, "%s: fi_cq_readfrom source %#llx, want %#llx (the sender's fi_addr)",
	       what, (unsigned long long)src, (unsigned long long)w->src);
}

static inline void wait_recv(struct peer *p, const struct want_recv *w, const char *what)
{
	struct fi_cq_tagged_entry e;
	fi_addr_t src = FI_ADDR_NOTAVAIL;
	int r = wait_cq(p->l.cq, &e, &src, NULL, WAIT_MS);
	if (r)
		FAIL("%s: waiting for the receive: %d (%s)", what, r, fi_strerror(-r));
	check_recv_entry(&e, src, w, what);
}

static inline void wait_send(struct peer *p, void *ctx, const char *what)
{
	struct fi_cq_tagged_entry e;
	int r = wait_cq(p->l.cq, &e, NULL, NULL, WAIT_MS);
	if (r)
		FAIL("%s: waiting for the send completion: %d (%s)", what, r, fi_strerror(-r));
	check_send_entry(&e, ctx, what);
}

/* Collects n successful completions whose contexts are ctx[0..n-1] (any
 * order; each exactly once). idx[k] = position in ctx of the k-th
 * completion; ents/srcs receive them by ctx position. */
static inline void wait_all(struct peer *p, size_t n, void *const *ctx,
			    struct fi_cq_tagged_entry *ents, fi_addr_t *srcs, const char *what)
{
	char *seen = calloc(n, 1);
	ASSERT(seen);
	for (size_t k = 0; k < n; k++) {
		struct fi_cq_tagged_entry e;
		fi_addr_t src = FI_ADDR_NOTAVAIL;
		int r = wait_cq(p->l.cq, &e, &src, NULL, WAIT_MS);
		if (r)
			FAIL("%s: completion %zu of %zu: %d (%s)", what, k + 1, n, r,
			     fi_strerror(-r));
		size_t i;
		for (i = 0; i < n && ctx[i] != e.op_context; i++)
			;
		EXPECT(i < n, "%s: completion with unknown context %p", what, e.op_context);
		EXPECT(!seen[i], "%s: two completions for context %p", what, e.op_context);
		seen[i] = 1;
		if (ents)
			ents[i] = e;
		if (srcs)
			srcs[i] = src;
	}
	free(seen);
}

static inline size_t iov_limit(struct peer *p)
{
	size_t a = p->l.info->tx_attr->iov_limit, b = p->l.info->rx_attr->iov_limit;
	return a < b ? a : b;
}

/* ---- shared cases ------------------------------------------------------------ */
#ifndef MSG_NO_SHARED_CASES

/* 16320 and 16 KiB sit on each side of lnx's network eager limit (16 KiB
 * goes as a split message over tcp;ofi_rxm), 64 KiB and up by rendezvous. */
static const size_t k_sizes[] = { 0, 1, 4 * KiB, 16320, 16 * KiB, 64 * KiB, 1 * MiB, 4 * MiB };
#define NSIZES (sizeof(k_sizes) / sizeof(k_sizes[0]))

/* Receives posted before the sends (expected path). */
static void sizes_expected_a(struct peer *p, void *arg)
{
	struct fi_context2 ctx[NSIZES];
	for (size_t i = 0; i < NSIZES; i++) {
		uint8_t *b = sbuf(k_sizes[i], 100 + i);
		char what[64];
		snprintf(what, sizeof(what), "send %zu B", k_sizes[i]);
		barrier(p); /* B has posted */
		POST(p->l.cq, x_send(p, 1, k_sizes[i] ? b : NULL, k_sizes[i], 0x100 + i, &ctx[i]));
		wait_send(p, &ctx[i], what);
		barrier(p);
		free(b);
	}
}

static void sizes_expected_b(struct peer *p, void *arg)
{
	struct fi_context2 ctx[NSIZES];
	for (size_t i = 0; i < NSIZES; i++) {
		size_t n = k_sizes[i];
		uint8_t *b = rbuf(n);
		char what[64];
		snprintf(what, sizeof(what), "recv %zu B (posted first)", n);
		POST(p->l.cq, x_recv(p, n ? b : NULL, n, peer_addr(p), 0x100 + i, 0, &ctx[i]));
		barrier(p);
		struct want_recv w = { &ctx[i], n, 0x100 + i, 0, 0, peer_addr(p) };
		wait_recv(p, &w, what);
		rbuf_check(b, n, n, 100 + i, what);
		barrier(p);
		free(b);
	}
}

/* Around the network core's eager limit (tcp;ofi_rxm: 16 KiB): after one
 * small message each way, 16383 and 16384 bytes with CQ data that fits
 * lnx's tagged eager header go as one core message each, 16384 with CQ
 * data that does not as a split message, 16385 by rendezvous (the
 * "threshold_stats" ctest checks that from FI_LNX_DUMP_STATS). Data,
 * lengths, tags, CQ data and source are checked, and the order. */
static const size_t k_thr_sizes[] = { 16383, 16384, 16384, 16385 };
static const uint64_t k_thr_data[] = { 0x2a, 0x3fffff, 0xCAFEBABE, 0x2b };
#define NTHR (sizeof(k_thr_sizes) / sizeof(k_thr_sizes[0]))

static void threshold_a(struct peer *p, void *arg)
{
	struct fi_context2 ctx[NTHR + 1];
	uint8_t one = 1, *b[NTHR];
	POST(p->l.cq, x_send(p, 1, &one, 1, 0x700, &ctx[NTHR]));
	wait_send(p, &ctx[NTHR], "threshold hello");
	struct want_recv w = { &ctx[NTHR], 1, 0x701, 0, 0, peer_addr(p) };
	POST(p->l.cq, x_recv(p, &one, 1, peer_addr(p), 0x701, 0, &ctx[NTHR]));
	wait_recv(p, &w, "threshold reply");
	void *cp[NTHR];
	for (size_t i = 0; i < NTHR; i++) {
		b[i] = sbuf(k_thr_sizes[i], 700 + i);
		cp[i] = &ctx[i];
		POST(p->l.cq,
		     x_senddata(p, 1, b[i], k_thr_sizes[i], k_thr_data[i], 0x710 + i, &ctx[i]));
	}
	struct fi_cq_tagged_entry ents[NTHR];
	wait_all(p, NTHR, cp, ents, NULL, "threshold sends");
	for (size_t i = 0; i < NTHR; i++) {
		check_send_entry(&ents[i], &ctx[i], "threshold send");
		free(b[i]);
	}
	barrier(p);
}

static void threshold_b(struct peer *p, void *arg)
{
	struct fi_context2 ctx[NTHR + 1];
	uint8_t one = 0, *b[NTHR];
	struct want_recv h = { &ctx[NTHR], 1, 0x700, 0, 0, peer_addr(p) };
	POST(p->l.cq, x_recv(p, &one, 1, peer_addr(p), 0x700, 0, &ctx[NTHR]));
	wait_recv(p, &h, "threshold hello");
	POST(p->l.cq, x_send(p, 0, &one, 1, 0x701, &ctx[NTHR]));
	wait_send(p, &ctx[NTHR], "threshold reply");
	/* Half the receives posted before the messages arrive, half after
	 * (in order: untagged receives match in arrival order). */
	for (size_t i = 0; i < NTHR; i++) {
		b[i] = rbuf(k_thr_sizes[i]);
		if (i < NTHR / 2)
			POST(p->l.cq,
			     x_recv(p, b[i], k_thr_sizes[i], peer_addr(p), 0x710 + i, 0, &ctx[i]));
	}
	for (size_t i = 0; i < NTHR; i++) {
		char what[64];
		snprintf(what, sizeof(what), "threshold recv %zu (%zu B)", i, k_thr_sizes[i]);
		if (i >= NTHR / 2)
			POST(p->l.cq,
			     x_recv(p, b[i], k_thr_sizes[i], peer_addr(p), 0x710 + i, 0, &ctx[i]));
		struct want_recv w = { &ctx[i], k_thr_sizes[i], 0x710 + i,
				       1,	k_thr_data[i],	peer_addr(p) };
		wait_recv(p, &w, what);
		rbuf_check(b[i], k_thr_sizes[i], k_thr_sizes[i], 700 + i, what);
		free(b[i]);
	}
	barrier(p);
}

/* The same limit in windows: MIX_ROUNDS times, A sends messages of
 * MIX sizes around it back to back (eager up to 16320 bytes, tagged eager
 * 16321-16384, split for CQ data too wide for the tag, rendezvous from
 * 16385) with one tag, and B receives them in receives of one size posted
 * ahead, half of them before A starts and half as it goes: receives of
 * one tag (untagged: any) take the messages in send order, so each
 * completion's length, CQ data and payload say whether the forms kept
 * their order. Over tcp;ofi_rxm lnx's C layer sends those it can (the
 * "threshold_mix_stats" ctest counts them from FI_LNX_DUMP_STATS). */
static const size_t k_mix_sizes[] = { 100,   16320, 16321, 16383, 16384, 16384, 16385,
				      16384, 50,    16383, 16321, 16320, 16384, 7 };
#define NMIX	   (sizeof(k_mix_sizes) / sizeof(k_mix_sizes[0]))
#define MIX_ROUNDS 8
#define MIX_CAP	   (16385 + 64)
static uint64_t mix_data(size_t i)
{
	return i == 5 ? 0xCAFEBABE : 0x100 * i + 7; /* the sixth too wide for the tag */
}

static void threshold_mix_a(struct peer *p, void *arg)
{
	struct fi_context2 ctx[NMIX + 1];
	uint8_t one = 1, *b[NMIX];
	POST(p->l.cq, x_send(p, 1, &one, 1, 0x700, &ctx[NMIX]));
	wait_send(p, &ctx[NMIX], "mix hello");
	struct want_recv w = { &ctx[NMIX], 1, 0x701, 0, 0, peer_addr(p) };
	POST(p->l.cq, x_recv(p, &one, 1, peer_addr(p), 0x701, 0, &ctx[NMIX]));
	wait_recv(p, &w, "mix reply");
	for (int r = 0; r < MIX_ROUNDS; r++) {
		void *cp[NMIX];
		barrier(p);
		for (size_t i = 0; i < NMIX; i++) {
			b[i] = sbuf(k_mix_sizes[i], 1000 * r + i);
			cp[i] = &ctx[i];
			POST(p->l.cq,
			     x_senddata(p, 1, b[i], k_mix_sizes[i], mix_data(i), 0x720, &ctx[i]));
		}
		struct fi_cq_tagged_entry ents[NMIX];
		wait_all(p, NMIX, cp, ents, NULL, "mix sends");
		for (size_t i = 0; i < NMIX; i++) {
			check_send_entry(&ents[i], &ctx[i], "mix send");
			free(b[i]);
		}
	}
	barrier(p);
}

static void threshold_mix_b(struct peer *p, void *arg)
{
	struct fi_context2 ctx[NMIX + 1];
	uint8_t one = 0, *b[NMIX];
	struct want_recv h = { &ctx[NMIX], 1, 0x700, 0, 0, peer_addr(p) };
	POST(p->l.cq, x_recv(p, &one, 1, peer_addr(p), 0x700, 0, &ctx[NMIX]));
	wait_recv(p, &h, "mix hello");
	POST(p->l.cq, x_send(p, 0, &one, 1, 0x701, &ctx[NMIX]));
	wait_send(p, &ctx[NMIX], "mix reply");
	for (int r = 0; r < MIX_ROUNDS; r++) {
		for (size_t i = 0; i < NMIX; i++) {
			b[i] = rbuf(MIX_CAP);
			if (i < NMIX / 2)
				POST(p->l.cq,
				     x_recv(p, b[i], MIX_CAP, peer_addr(p), 0x720, 0, &ctx[i]));
		}
		barrier(p);
		for (size_t i = 0; i < NMIX; i++) {
			char what[64];
			snprintf(what, sizeof(what), "mix round %d message %zu (%zu B)", r, i,
				 k_mix_sizes[i]);
			if (i >= NMIX / 2)
				POST(p->l.cq,
				     x_recv(p, b[i], MIX_CAP, peer_addr(p), 0x720, 0, &ctx[i]));
			struct want_recv w = { &ctx[i], k_mix_sizes[i], 0x720,
					       1,	mix_data(i),	peer_addr(p) };
			wait_recv(p, &w, what);
			rbuf_check(b[i], MIX_CAP, k_mix_sizes[i], 1000 * r + i, what);
			free(b[i]);
		}
	}
	barrier(p);
}

/* Sends first; receives posted once the messages had time to arrive
 * (unexpected path), in reverse order to exercise the unexpected queue.
 * Untagged messages match in arrival order, so B posts receives big
 * enough for any of them and checks by length. */
static void sizes_unexpected_a(struct peer *p, void *arg)
{
	struct fi_context2 ctx[NSIZES];
	void *cp[NSIZES];
	uint8_t *b[NSIZES];
	for (size_t i = 0; i < NSIZES; i++) {
		b[i] = sbuf(k_sizes[i], 200 + i);
		cp[i] = &ctx[i];
		POST(p->l.cq,
		     x_send(p, 1, k_sizes[i] ? b[i] : NULL, k_sizes[i], 0x200 + i, &ctx[i]));
	}
	barrier(p);
	struct fi_cq_tagged_entry ents[NSIZES];
	wait_all(p, NSIZES, cp, ents, NULL, "unexpected sends");
	for (size_t i = 0; i < NSIZES; i++)
		check_send_entry(&ents[i], &ctx[i], "unexpected send");
	for (size_t i = 0; i < NSIZES; i++)
		free(b[i]);
}

static void sizes_unexpected_b(struct peer *p, void *arg)
{
	struct fi_context2 ctx[NSIZES];
	void *cp[NSIZES];
	uint8_t *b[NSIZES];
	size_t cap = 4 * MiB;
	barrier(p);
	progress_for(p->l.cq, 200);
	for (size_t k = 0; k < NSIZES; k++) {
		size_t i = NSIZES - 1 - k; /* reverse */
		b[i] = rbuf(g_tagged ? k_sizes[i] : cap);
		cp[i] = &ctx[i];
		POST(p->l.cq, x_recv(p, b[i], g_tagged ? k_sizes[i] : cap, peer_addr(p), 0x200 + i,
				     0, &ctx[i]));
	}
	struct fi_cq_tagged_entry ents[NSIZES];
	fi_addr_t srcs[NSIZES];
	wait_all(p, NSIZES, cp, ents, srcs, "unexpected receives");
	for (size_t i = 0; i < NSIZES; i++) {
		char what[64];
		/* Untagged: receive i (posted (NSIZES-1-i)-th) got message
		 * number NSIZES-1-i in send order. */
		size_t m = g_tagged ? i : NSIZES - 1 - i;
		snprintf(what, sizeof(what), "unexpected recv %zu B", k_sizes[m]);
		struct want_recv w = { &ctx[i], k_sizes[m], 0x200 + m, 0, 0, peer_addr(p) };
		check_recv_entry(&ents[i], srcs[i], &w, what);
		rbuf_check(b[i], g_tagged ? k_sizes[i] : cap, k_sizes[m], 200 + m, what);
	}
	for (size_t i = 0; i < NSIZES; i++)
		free(b[i]);
}

/* Inject: buffer reusable on return, no send completion. */
static void inject_a(struct peer *p, void *arg)
{
	size_t max = p->l.info->tx_attr->inject_size;
	size_t sizes[] = { 0, 1, max / 2, max };
	uint8_t *b = xmalloc(max + 1);
	for (size_t i = 0; i < 4; i++) {
		fill_pattern(b, sizes[i], 300 + i);
		POST(p->l.cq, x_inject(p, 1, sizes[i] ? b : NULL, sizes[i], 0x300 + i));
		memset(b, 0x5C, max + 1); /* scribble: lnx must have copied */
	}
	/* Larger than inject_size must be refused. */
	fill_pattern(b, max + 1, 399);
	ssize_t r = x_inject(p, 1, b, max + 1, 0x3ff);
	EXPECT(r < 0 && r != -FI_EAGAIN, "inject of inject_size+1 (%zu) bytes -> %zd", max + 1, r);
	barrier(p); /* B got everything */
	expect_no_completion(p->l.cq, 200, "fi_inject must not generate a completion");
	free(b);
}

static void inject_b(struct peer *p, void *arg)
{
	size_t max = p->l.info->tx_attr->inject_size;
	size_t sizes[] = { 0, 1, max / 2, max };
	EXPECT(max > 0, "inject_size %zu", max);
	note("inject_size %zu", max);
	for (size_t i = 0; i < 4; i++) {
		struct fi_context2 ctx;
		uint8_t *b = rbuf(max);
		char what[64];
		snprintf(what, sizeof(what), "injected %zu B", sizes[i]);
		POST(p->l.cq, x_recv(p, b, max, peer_addr(p), 0x300 + i, 0, &ctx));
		struct want_recv w = { &ctx, sizes[i], 0x300 + i, 0, 0, peer_addr(p) };
		wait_recv(p, &w, what);
		rbuf_check(b, max, sizes[i], 300 + i, what);
		free(b);
	}
	expect_no_completion(p->l.cq, 100, "oversized inject must not arrive");
	barrier(p);
}

/* senddata / injectdata carry CQ data; a plain send does not. */
static void data_a(struct peer *p, void *arg)
{
	struct fi_context2 c1, c2;
	uint8_t *b = sbuf(2000, 400);
	barrier(p);
	POST(p->l.cq, x_senddata(p, 1, b, 2000, 0xCAFEBABE, 0x400, &c1));
	wait_send(p, &c1, "senddata");
	POST(p->l.cq, x_injectdata(p, 1, b, 16, 0x12345678, 0x401));
	POST(p->l.cq, x_send(p, 1, b, 100, 0x402, &c2));
	wait_send(p, &c2, "plain send after data");
	POST(p->l.cq, x_senddata(p, 1, NULL, 0, 0x0BADF00D, 0x403, &c1));
	wait_send(p, &c1, "zero-byte senddata");
	barrier(p);
	expect_no_completion(p->l.cq, 100, "fi_injectdata must not generate a completion");
	free(b);
}

static void data_b(struct peer *p, void *arg)
{
	struct fi_context2 c[4];
	uint8_t *b[4];
	void *cp[4];
	for (int i = 0; i < 4; i++) {
		b[i] = rbuf(4096);
		cp[i] = &c[i];
		POST(p->l.cq, x_recv(p, b[i], 4096, peer_addr(p), 0x400 + i, 0, &c[i]));
	}
	barrier(p);
	struct fi_cq_tagged_entry e[4];
	fi_addr_t s[4];
	wait_all(p, 4, cp, e, s, "data receives");
	struct want_recv w0 = { &c[0], 2000, 0x400, 1, 0xCAFEBABE, peer_addr(p) };
	struct want_recv w1 = { &c[1], 16, 0x401, 1, 0x12345678, peer_addr(p) };
	struct want_recv w2 = { &c[2], 100, 0x402, 0, 0, peer_addr(p) };
	struct want_recv w3 = { &c[3], 0, 0x403, 1, 0x0BADF00D, peer_addr(p) };
	check_recv_entry(&e[0], s[0], &w0, "senddata");
	check_recv_entry(&e[1], s[1], &w1, "injectdata");
	check_recv_entry(&e[2], s[2], &w2, "plain send");
	check_recv_entry(&e[3], s[3], &w3, "zero-byte senddata");
	rbuf_check(b[0], 4096, 2000, 400, "senddata");
	rbuf_check(b[1], 4096, 16, 400, "injectdata");
	rbuf_check(b[2], 4096, 100, 400, "plain send");
	rbuf_check(b[3], 4096, 0, 400, "zero-byte senddata");
	barrier(p);
	for (int i = 0; i < 4; i++)
		free(b[i]);
}

/* 3-element iovs on both sides, split differently. */
static const size_t k_iov_total[] = { 7 + 4096 + 65539, 3 * MiB + 5 };

static void iov_a(struct peer *p, void *arg)
{
	if (iov_limit(p) < 3) {
		note("iov_limit %zu < 3: skipping", iov_limit(p));
		barrier(p);
		return;
	}
	for (size_t t = 0; t < 2; t++) {
		size_t total = k_iov_total[t];
		uint8_t *b = sbuf(total, 500 + t);
		size_t s0 = 7, s1 = t ? 1 * MiB : 4096;
		struct iovec iov[3] = {
			{ b, s0 },
			{ b + s0, s1 },
			{ b + s0 + s1, total - s0 - s1 },
		};
		struct fi_context2 c;
		barrier(p);
		POST(p->l.cq, x_sendv(p, 1, iov, 3, 0x500 + t, &c));
		wait_send(p, &c, "sendv");
		barrier(p);
		free(b);
	}
	barrier(p);
}

static void iov_b(struct peer *p, void *arg)
{
	if (iov_limit(p) < 3) {
		barrier(p);
		return;
	}
	for (size_t t = 0; t < 2; t++) {
		size_t total = k_iov_total[t];
		uint8_t *b = rbuf(total);
		size_t r0 = 4000, r1 = 5;
		struct iovec iov[3] = {
			{ b, r0 },
			{ b + r0, r1 },
			{ b + r0 + r1, total - r0 - r1 },
		};
		struct fi_context2 c;
		char what[64];
		snprintf(what, sizeof(what), "recvv of %zu B", total);
		POST(p->l.cq, x_recvv(p, iov, 3, peer_addr(p), 0x500 + t, 0, &c));
		barrier(p);
		struct want_recv w = { &c, total, 0x500 + t, 0, 0, peer_addr(p) };
		wait_recv(p, &w, what);
		rbuf_check(b, total, total, 500 + t, what);
		barrier(p);
		free(b);
	}
	barrier(p);
}

/* sendmsg / recvmsg with flags: FI_REMOTE_CQ_DATA, FI_COMPLETION, FI_INJECT. */
static void msg_a(struct peer *p, void *arg)
{
	size_t lim = iov_limit(p) >= 2 ? 2 : 1;
	uint8_t *b = sbuf(10000, 600);
	struct iovec iov[2] = { { b, lim == 2 ? 3000 : 10000 }, { b + 3000, 7000 } };
	struct fi_context2 c1, c2, c3;
	barrier(p);
	POST(p->l.cq,
	     x_sendmsg(p, 1, iov, lim, 0x600, 0xD00D, FI_REMOTE_CQ_DATA | FI_COMPLETION, &c1));
	wait_send(p, &c1, "sendmsg with data");
	POST(p->l.cq, x_sendmsg(p, 1, iov, lim, 0x601, 0, FI_COMPLETION, &c2));
	wait_send(p, &c2, "sendmsg");

	/* FI_INJECT: buffer reusable on return; the completion is still written. */
	size_t n = p->l.info->tx_attr->inject_size < 64 ? p->l.info->tx_attr->inject_size : 64;
	uint8_t *small = sbuf(n, 602);
	struct iovec one = { small, n };
	POST(p->l.cq, x_sendmsg(p, 1, &one, 1, 0x602, 0, FI_INJECT | FI_COMPLETION, &c3));
	memset(small, 0, n);
	wait_send(p, &c3, "sendmsg FI_INJECT");
	barrier(p);
	free(small);
	free(b);
}

static void msg_b(struct peer *p, void *arg)
{
	size_t lim = iov_limit(p) >= 2 ? 2 : 1;
	uint8_t *b1 = rbuf(10000), *b2 = rbuf(10000), *b3 = rbuf(64);
	struct iovec i1[2] = { { b1, lim == 2 ? 1 : 10000 }, { b1 + 1, 9999 } };
	struct iovec i2 = { b2, 10000 }, i3 = { b3, 64 };
	struct fi_context2 c1, c2, c3;
	size_t n = p->l.info->tx_attr->inject_size < 64 ? p->l.info->tx_attr->inject_size : 64;
	POST(p->l.cq, x_recvmsg(p, i1, lim, peer_addr(p), 0x600, 0, FI_COMPLETION, &c1));
	POST(p->l.cq, x_recvmsg(p, &i2, 1, FI_ADDR_UNSPEC, 0x601, 0, 0, &c2));
	POST(p->l.cq, x_recvmsg(p, &i3, 1, peer_addr(p), 0x602, 0, FI_COMPLETION, &c3));
	barrier(p);
	void *cp[3] = { &c1, &c2, &c3 };
	struct fi_cq_tagged_entry e[3];
	fi_addr_t s[3];
	wait_all(p, 3, cp, e, s, "recvmsg");
	struct want_recv w1 = { &c1, 10000, 0x600, 1, 0xD00D, peer_addr(p) };
	struct want_recv w2 = { &c2, 10000, 0x601, 0, 0, peer_addr(p) };
	struct want_recv w3 = { &c3, n, 0x602, 0, 0, peer_addr(p) };
	check_recv_entry(&e[0], s[0], &w1, "recvmsg with data");
	check_recv_entry(&e[1], s[1], &w2, "recvmsg FI_ADDR_UNSPEC");
	check_recv_entry(&e[2], s[2], &w3, "recvmsg of FI_INJECT send");
	rbuf_check(b1, 10000, 10000, 600, "recvmsg with data");
	rbuf_check(b2, 10000, 10000, 600, "recvmsg");
	rbuf_check(b3, 64, n, 602, "recvmsg of FI_INJECT send");
	barrier(p);
	free(b1);
	free(b2);
	free(b3);
}

/* FI_ADDR_UNSPEC receives report the sender's fi_addr; fi_cq_read (no
 * source) works too. */
static void any_source_a(struct peer *p, void *arg)
{
	uint8_t *b = sbuf(512, 700);
	struct fi_context2 c[3];
	void *cp[3] = { &c[0], &c[1], &c[2] };
	barrier_quiet(p);
	for (int i = 0; i < 3; i++)
		POST(p->l.cq, x_send(p, 1, b, 512, 0x700, &c[i]));
	wait_all(p, 3, cp, NULL, NULL, "sends");
	barrier(p);
	free(b);
}

static void any_source_b(struct peer *p, void *arg)
{
	struct fi_context2 c[3];
	void *cp[3] = { &c[0], &c[1], &c[2] };
	uint8_t *b[3];
	for (int i = 0; i < 3; i++) {
		b[i] = rbuf(512);
		POST(p->l.cq, x_recv(p, b[i], 512, FI_ADDR_UNSPEC, 0x700, 0, &c[i]));
	}
	/* No progress during this barrier, so nothing is stashed and a plain
	 * fi_cq_read sees the first completion itself. */
	barrier_quiet(p);
	struct fi_cq_tagged_entry e, ents[3];
	fi_addr_t srcs[3];
	uint64_t dl = now_ms() + WAIT_MS;
	ssize_t r;
	while ((r = fi_cq_read(p->l.cq, &e, 1)) == -FI_EAGAIN && now_ms() < dl)
		;
	CHECK_RC(r, 1);
	int first = -1;
	for (int i = 0; i < 3; i++)
		if (e.op_context == &c[i])
			first = i;
	EXPECT(first >= 0, "fi_cq_read: unknown context %p", e.op_context);
	EXPECT(e.len == 512 && (e.flags & FI_RECV), "fi_cq_read entry len %zu", e.len);
	rbuf_check(b[first], 512, 512, 700, "fi_cq_read recv");
	/* The other two via fi_cq_readfrom. */
	void *rest[2];
	for (int i = 0, k = 0; i < 3; i++)
		if (i != first)
			rest[k++] = cp[i];
	wait_all(p, 2, rest, ents, srcs, "FI_ADDR_UNSPEC receives");
	for (int k = 0; k < 2; k++) {
		struct want_recv w = { rest[k], 512, 0x700, 0, 0, peer_addr(p) };
		check_recv_entry(&ents[k], srcs[k], &w, "FI_ADDR_UNSPEC recv");
		rbuf_check(rest[k] == &c[0] ? b[0] :
			   rest[k] == &c[1] ? b[1] :
					      b[2],
			   512, 512, 700, "FI_ADDR_UNSPEC recv");
	}
	barrier(p);
	for (int i = 0; i < 3; i++)
		free(b[i]);
}

/* 1000 messages, one tag: matched in send order (FI_ORDER_SAS). Half the
 * receives are posted before the sends, half after (unexpected). */
#define ORD_N	 1000
#define ORD_SLOT 64
static size_t ord_len(size_t i)
{
	return 8 + i % 50;
}

static void ordering_a(struct peer *p, void *arg)
{
	struct fi_context2 *c = calloc(ORD_N, sizeof(*c));
	void **cp = calloc(ORD_N, sizeof(*cp));
	uint8_t *b = xmalloc(ORD_N * ORD_SLOT);
	for (size_t i = 0; i < ORD_N; i++) {
		uint8_t *m = b + i * ORD_SLOT;
		fill_pattern(m, ord_len(i), i);
		memcpy(m, &i, sizeof(i));
		cp[i] = &c[i];
	}
	barrier(p);
	for (size_t i = 0; i < ORD_N; i++)
		POST(p->l.cq, x_send(p, 1, b + i * ORD_SLOT, ord_len(i), 0x800, &c[i]));
	wait_all(p, ORD_N, cp, NULL, NULL, "ordered sends");
	barrier(p);
	free(b);
	free(cp);
	free(c);
}

static void ordering_b(struct peer *p, void *arg)
{
	struct fi_context2 *c = calloc(ORD_N, sizeof(*c));
	void **cp = calloc(ORD_N, sizeof(*cp));
	struct fi_cq_tagged_entry *e = calloc(ORD_N, sizeof(*e));
	fi_addr_t *s = calloc(ORD_N, sizeof(*s));
	uint8_t *b = xmalloc(ORD_N * ORD_SLOT);
	size_t half = ORD_N / 2;
	ASSERT(c && cp && e && s);
	memset(b, GUARD_BYTE, ORD_N * ORD_SLOT);
	for (size_t i = 0; i < ORD_N; i++)
		cp[i] = &c[i];
	for (size_t i = 0; i < half; i++)
		POST(p->l.cq, x_recv(p, b + i * ORD_SLOT, ORD_SLOT, peer_addr(p), 0x800, 0, &c[i]));
	barrier(p);
	wait_all(p, half, cp, e, s, "first half");
	progress_for(p->l.cq, 100);
	for (size_t i = half; i < ORD_N; i++)
		POST(p->l.cq, x_recv(p, b + i * ORD_SLOT, ORD_SLOT, peer_addr(p), 0x800, 0, &c[i]));
	wait_all(p, ORD_N - half, cp + half, e + half, s + half, "second half");
	for (size_t i = 0; i < ORD_N; i++) {
		uint64_t seq;
		memcpy(&seq, b + i * ORD_SLOT, sizeof(seq));
		EXPECT(seq == i, "receive %zu (posted %zu-th) got message %llu: order broken", i, i,
		       (unsigned long long)seq);
		struct want_recv w = { &c[i], ord_len(i), 0x800, 0, 0, peer_addr(p) };
		check_recv_entry(&e[i], s[i], &w, "ordered recv");
		uint8_t tmp[ORD_SLOT];
		memcpy(tmp, b + i * ORD_SLOT, ORD_SLOT);
		fill_pattern(tmp, 8, i); /* the seq overwrote the pattern's head */
		EXPECT(check_pattern(tmp, ord_len(i), i) < 0, "message %zu payload", i);
		for (size_t k = ord_len(i); k < ORD_SLOT; k++)
			EXPECT(tmp[k] == GUARD_BYTE, "message %zu: byte %zu past its end written",
			       i, k);
	}
	barrier(p);
	free(b);
	free(s);
	free(e);
	free(cp);
	free(c);
}

/* Small (eager) and large (rendezvous-sized) messages interleaved must
 * still match in send order. */
#define MIX_N 40
static size_t mix_len(size_t i)
{
	return i % 2 ? 512 * KiB + i : 64 + i;
}

static void ordering_mixed_a(struct peer *p, void *arg)
{
	struct fi_context2 c[MIX_N];
	void *cp[MIX_N];
	uint8_t *b[MIX_N];
	for (size_t i = 0; i < MIX_N; i++) {
		b[i] = sbuf(mix_len(i), 900 + i);
		cp[i] = &c[i];
	}
	barrier(p);
	for (size_t i = 0; i < MIX_N; i++)
		POST(p->l.cq, x_send(p, 1, b[i], mix_len(i), 0x900, &c[i]));
	wait_all(p, MIX_N, cp, NULL, NULL, "mixed sends");
	barrier(p);
	for (size_t i = 0; i < MIX_N; i++)
		free(b[i]);
}

static void ordering_mixed_b(struct peer *p, void *arg)
{
	struct fi_context2 c[MIX_N];
	void *cp[MIX_N];
	uint8_t *b[MIX_N];
	struct fi_cq_tagged_entry e[MIX_N];
	fi_addr_t s[MIX_N];
	size_t cap = 512 * KiB + MIX_N;
	for (size_t i = 0; i < MIX_N; i++) {
		b[i] = rbuf(cap);
		cp[i] = &c[i];
	}
	for (size_t i = 0; i < MIX_N / 2; i++)
		POST(p->l.cq, x_recv(p, b[i], cap, peer_addr(p), 0x900, 0, &c[i]));
	barrier(p);
	wait_all(p, MIX_N / 2, cp, e, s, "mixed, posted first");
	progress_for(p->l.cq, 100);
	for (size_t i = MIX_N / 2; i < MIX_N; i++)
		POST(p->l.cq, x_recv(p, b[i], cap, peer_addr(p), 0x900, 0, &c[i]));
	wait_all(p, MIX_N / 2, cp + MIX_N / 2, e + MIX_N / 2, s + MIX_N / 2, "mixed, unexpected");
	for (size_t i = 0; i < MIX_N; i++) {
		char what[64];
		snprintf(what, sizeof(what), "mixed message %zu", i);
		struct want_recv w = { &c[i], mix_len(i), 0x900, 0, 0, peer_addr(p) };
		check_recv_entry(&e[i], s[i], &w, what);
		rbuf_check(b[i], cap, mix_len(i), 900 + i, what);
	}
	barrier(p);
	for (size_t i = 0; i < MIX_N; i++)
		free(b[i]);
}

/* Tagged and untagged messages use separate queues: an untagged receive
 * never takes a tagged message and vice versa. */
static void separation_a(struct peer *p, void *arg)
{
	uint8_t *t = sbuf(300, 1100), *u = sbuf(200, 1101);
	struct fi_context2 ct, cu;
	void *cp[2] = { &ct, &cu };
	barrier(p);
	POST(p->l.cq, fi_tsend(p->l.ep, t, 300, NULL, peer_addr(p), 0xB00, &ct));
	POST(p->l.cq, fi_send(p->l.ep, u, 200, NULL, peer_addr(p), &cu));
	struct fi_cq_tagged_entry e[2];
	wait_all(p, 2, cp, e, NULL, "sends");
	EXPECT((e[0].flags & FI_TAGGED) && !(e[0].flags & FI_MSG), "tagged send flags %#llx",
	       (unsigned long long)e[0].flags);
	EXPECT((e[1].flags & FI_MSG) && !(e[1].flags & FI_TAGGED), "untagged send flags %#llx",
	       (unsigned long long)e[1].flags);
	barrier(p);
	free(t);
	free(u);
}

static void separation_b(struct peer *p, void *arg)
{
	uint8_t *rt = rbuf(1000), *ru = rbuf(1000);
	struct fi_context2 ct, cu;
	void *cp[2] = { &ct, &cu };
	/* Untagged receive posted first: the tagged message must skip it. */
	POST(p->l.cq, fi_recv(p->l.ep, ru, 1000, NULL, FI_ADDR_UNSPEC, &cu));
	POST(p->l.cq, fi_trecv(p->l.ep, rt, 1000, NULL, FI_ADDR_UNSPEC, 0xB00, 0, &ct));
	barrier(p);
	struct fi_cq_tagged_entry e[2];
	fi_addr_t s[2];
	wait_all(p, 2, cp, e, s, "receives");
	EXPECT(e[0].len == 300 && (e[0].flags & FI_TAGGED) && e[0].tag == 0xB00,
	       "tagged receive: len %zu flags %#llx tag %#llx", e[0].len,
	       (unsigned long long)e[0].flags, (unsigned long long)e[0].tag);
	EXPECT(e[1].len == 200 && (e[1].flags & FI_MSG) && !(e[1].flags & FI_TAGGED),
	       "untagged receive: len %zu flags %#llx", e[1].len, (unsigned long long)e[1].flags);
	EXPECT(s[0] == peer_addr(p) && s[1] == peer_addr(p), "sources %#llx %#llx",
	       (unsigned long long)s[0], (unsigned long long)s[1]);
	rbuf_check(rt, 1000, 300, 1100, "tagged");
	rbuf_check(ru, 1000, 200, 1101, "untagged");
	barrier(p);
	free(rt);
	free(ru);
}

/* B posts a receive directed at its own address, then one directed at A.
 * A's message must go to the second; the first stays posted (a second
 * message from A stays unexpected) until it is cancelled. */
static void directed_a(struct peer *p, void *arg)
{
	struct fi_context2 c1, c2;
	uint8_t *b = sbuf(256, 1400);
	barrier(p);
	POST(p->l.cq, x_send(p, 1, b, 256, 0x1400, &c1));
	wait_send(p, &c1, "first send");
	POST(p->l.cq, x_send(p, 1, b, 128, 0x1400, &c2));
	wait_send(p, &c2, "second send");
	barrier(p);
	free(b);
}

static void directed_b(struct peer *p, void *arg)
{
	struct fi_context2 cself, cpeer, cany;
	uint8_t *bs = rbuf(256), *bp = rbuf(256), *ba = rbuf(256);
	POST(p->l.cq, x_recv(p, bs, 256, p->addr[p->rank], 0x1400, 0, &cself));
	POST(p->l.cq, x_recv(p, bp, 256, peer_addr(p), 0x1400, 0, &cpeer));
	barrier(p);
	struct want_recv w = { &cpeer, 256, 0x1400, 0, 0, peer_addr(p) };
	wait_recv(p, &w, "receive directed at the sender");
	rbuf_check(bp, 256, 256, 1400, "directed");
	expect_no_completion(p->l.cq, 300,
			     "a receive directed at another address took the second message");
	CHECK(fi_cancel(&p->l.ep->fid, &cself));
	struct fi_cq_err_entry err;
	int r = wait_cq(p->l.cq, NULL, NULL, &err, WAIT_MS);
	EXPECT(r == -FI_ECANCELED && err.op_context == &cself,
	       "cancel of the self-directed receive: %d (%s) ctx %p", r, fi_strerror(-r),
	       err.op_context);
	rbuf_check(bs, 256, 0, 0, "cancelled buffer");
	POST(p->l.cq, x_recv(p, ba, 256, FI_ADDR_UNSPEC, 0x1400, 0, &cany));
	struct want_recv w2 = { &cany, 128, 0x1400, 0, 0, peer_addr(p) };
	wait_recv(p, &w2, "second message, now received any-source");
	rbuf_check(ba, 256, 128, 1400, "second message");
	barrier(p);
	free(bs);
	free(bp);
	free(ba);
}

/* Both directions at once: ping-pong, small and large. */
static void pingpong_role(struct peer *p, int iters, size_t len)
{
	uint8_t *sb = xmalloc(len), *rb = rbuf(len);
	struct fi_context2 sc, rc;
	int me = p->rank;
	for (int i = 0; i < iters; i++) {
		int ping = me == 0;
		uint64_t seed = (uint64_t)i * 2 + (ping ? 0 : 1);
		uint64_t rseed = (uint64_t)i * 2 + (ping ? 1 : 0);
		POST(p->l.cq, x_recv(p, rb, len, peer_addr(p), 0xA00 + (ping ? 1 : 0), 0, &rc));
		if (ping) {
			fill_pattern(sb, len, seed);
			POST(p->l.cq, x_send(p, 1, sb, len, 0xA00, &sc));
			void *cp[2] = { &sc, &rc };
			struct fi_cq_tagged_entry e[2];
			fi_addr_t s[2];
			wait_all(p, 2, cp, e, s, "ping");
			check_send_entry(&e[0], &sc, "ping send");
			struct want_recv w = { &rc, len, 0xA01, 0, 0, peer_addr(p) };
			check_recv_entry(&e[1], s[1], &w, "pong");
		} else {
			struct want_recv w = { &rc, len, 0xA00, 0, 0, peer_addr(p) };
			wait_recv(p, &w, "ping");
			EXPECT_PATTERN(rb, len, rseed);
			fill_pattern(sb, len, seed);
			POST(p->l.cq, x_send(p, 0, sb, len, 0xA01, &sc));
			wait_send(p, &sc, "pong");
			continue;
		}
		EXPECT_PATTERN(rb, len, rseed);
	}
	free(sb);
	free(rb);
}

static void pingpong(struct peer *p, void *arg)
{
	pingpong_role(p, 200, 64);
	pingpong_role(p, 10, 1 * MiB);
}

#endif /* MSG_NO_SHARED_CASES */
#endif
