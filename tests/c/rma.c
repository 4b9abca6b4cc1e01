/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * FI_RMA between two processes: every byte written and read, completion
 * flags, remote CQ data at the target, refusals of bad keys, ranges and
 * access (the target's memory untouched), iov and msg forms, and 0-based
 * addressing when the domain has no FI_MR_VIRT_ADDR.
 *
 * A is the initiator, B the target; B only progresses (the barrier and
 * the out-of-band helpers read its CQ), as lnx's manual progress asks.
 *
 * Usage: rma <shm|link|tcp|LINKS [distinct]>
 */
#include <unistd.h>

#include "rma_common.h"

/* Sizes on both sides of every path: inline (below the cores' eager
 * limits) and bulk (CMA over shm, rendezvous over the network). */
static const size_t k_sizes[] = { 1, 7, 100, 4000, 4040, 4096, 5000, 16000, 65536, 1000003 };
#define NSIZES (sizeof(k_sizes) / sizeof(k_sizes[0]))
#define GAP    64

static size_t sizes_total(void)
{
	size_t t = GAP;
	for (size_t i = 0; i < NSIZES; i++)
		t += k_sizes[i] + GAP;
	return t;
}

static void sizes_a(struct peer *p, void *arg)
{
	struct rwin r = win_learn(p, 1);
	size_t off = GAP;
	for (size_t i = 0; i < NSIZES; i++) {
		size_t n = k_sizes[i];
		uint8_t *src = xmalloc(n), *dst = xmalloc(n);
		fill_pattern(src, n, 1000 + i);
		memset(dst, 0, n);
		char what[64];
		snprintf(what, sizeof(what), "write %zu", n);
		POST(p->l.cq,
		     fi_write(p->l.ep, src, n, NULL, peer_addr(p), r.addr + off, r.key, src));
		wait_op(p, src, FI_RMA | FI_WRITE, what);
		snprintf(what, sizeof(what), "read %zu", n);
		POST(p->l.cq,
		     fi_read(p->l.ep, dst, n, NULL, peer_addr(p), r.addr + off, r.key, dst));
		wait_op(p, dst, FI_RMA | FI_READ, what);
		EXPECT_PATTERN(dst, n, 1000 + i);
		free(src);
		free(dst);
		off += n + GAP;
	}
	barrier(p);
}

static void sizes_b(struct peer *p, void *arg)
{
	struct win w;
	win_reg(p, &w, sizes_total(), FI_REMOTE_READ | FI_REMOTE_WRITE, 7);
	memset(w.buf, 0xee, w.len);
	win_tell(p, 0, &w);
	barrier(p);
	/* Every byte written where A aimed, nothing between. */
	size_t off = 0;
	for (size_t i = 0; i < NSIZES; i++) {
		for (size_t g = 0; g < GAP; g++)
			EXPECT(w.buf[off + g] == 0xee, "gap byte %zu before size %zu touched", g,
			       k_sizes[i]);
		off += GAP;
		EXPECT_PATTERN(w.buf + off, k_sizes[i], 1000 + i);
		off += k_sizes[i];
	}
	for (size_t g = 0; g < GAP; g++)
		EXPECT(w.buf[off + g] == 0xee, "trailing gap byte %zu touched", g);
	win_close(&w);
}

/* fi_writedata, fi_inject_writedata, fi_writemsg with FI_REMOTE_CQ_DATA:
 * the target sees each with its data, length and flags. */
#define NDATA 4
static const size_t k_data_len[NDATA] = { 256, 64, 300000, 128 };
static const uint64_t k_data[NDATA] = { 0x1122334455667788ull, 0xfeedull, 0xabcdef0123ull, 42 };

static void data_a(struct peer *p, void *arg)
{
	struct rwin r = win_learn(p, 1);
	uint8_t *buf = xmalloc(300000);
	uint64_t off = 0;
	fill_pattern(buf, k_data_len[0], 10);
	POST(p->l.cq, fi_writedata(p->l.ep, buf, k_data_len[0], NULL, k_data[0], peer_addr(p),
				   r.addr + off, r.key, buf));
	wait_op(p, buf, FI_RMA | FI_WRITE, "writedata");
	off += k_data_len[0];
	fill_pattern(buf, k_data_len[1], 11);
	POST(p->l.cq, fi_inject_writedata(p->l.ep, buf, k_data_len[1], k_data[1], peer_addr(p),
					  r.addr + off, r.key));
	memset(buf, 0, k_data_len[1]); /* the inject's buffer is ours again */
	off += k_data_len[1];
	fill_pattern(buf, k_data_len[2], 12);
	POST(p->l.cq, fi_writedata(p->l.ep, buf, k_data_len[2], NULL, k_data[2], peer_addr(p),
				   r.addr + off, r.key, buf + 1));
	wait_op(p, buf + 1, FI_RMA | FI_WRITE, "writedata (bulk)");
	off += k_data_len[2];
	fill_pattern(buf, k_data_len[3], 13);
	struct iovec iov = { buf, k_data_len[3] };
	struct fi_rma_iov riov = { r.addr + off, k_data_len[3], r.key };
	struct fi_msg_rma m = { .msg_iov = &iov,
				.iov_count = 1,
				.addr = peer_addr(p),
				.rma_iov = &riov,
				.rma_iov_count = 1,
				.context = buf + 2,
				.data = k_data[3] };
	POST(p->l.cq,
	     fi_writemsg(p->l.ep, &m, FI_REMOTE_CQ_DATA | FI_COMPLETION | FI_DELIVERY_COMPLETE));
	wait_op(p, buf + 2, FI_RMA | FI_WRITE, "writemsg");
	expect_no_completion(p->l.cq, 50, "inject_writedata");
	barrier(p);
	free(buf);
}

/* Waits for the i-th remote write entry and checks it: FI_RMA |
 * FI_REMOTE_WRITE | FI_REMOTE_CQ_DATA, the data, the length and the
 * writer as source. */
static void expect_remote_data(struct peer *p, int i, uint64_t data, size_t len)
{
	struct fi_cq_tagged_entry e;
	fi_addr_t src = FI_ADDR_NOTAVAIL;
	int ret = wait_cq(p->l.cq, &e, &src, NULL, WAIT_MS);
	EXPECT(ret == 0, "remote completion %d: %d", i, ret);
	char b[256];
	EXPECT(e.flags == (FI_RMA | FI_REMOTE_WRITE | FI_REMOTE_CQ_DATA),
	       "remote completion %d flags %s", i, flags_str(e.flags, b, sizeof(b)));
	EXPECT(e.data == data, "remote completion %d data %#llx, want %#llx", i,
	       (unsigned long long)e.data, (unsigned long long)data);
	EXPECT(e.len == len, "remote completion %d len %zu, want %zu", i, e.len, len);
	EXPECT(src == peer_addr(p), "remote completion %d source %llu", i, (unsigned long long)src);
}

static void data_b(struct peer *p, void *arg)
{
	struct win w;
	win_reg(p, &w, 300000 + 512, FI_REMOTE_WRITE, 9);
	win_tell(p, 0, &w);
	size_t off = 0;
	for (int i = 0; i < NDATA; i++) {
		expect_remote_data(p, i, k_data[i], k_data_len[i]);
		/* The data is in place when its completion is. */
		EXPECT_PATTERN(w.buf + off, k_data_len[i], 10 + i);
		off += k_data_len[i];
	}
	barrier(p);
	win_close(&w);
}

/* Large writes with remote CQ data (above every core's eager limit, where
 * a network peer's lnx carries them as the core's own RMA and tells the
 * target afterwards): fi_writedata, and fi_writemsg with two local pieces;
 * 64-bit data values. The target sees each, in order, with its flags,
 * data, length and source, its data in place when the entry is; no
 * completion for a write without data; and a message sent after the
 * last completion arrives after every remote entry. */
#define NBIG	 6
#define BIG_BASE 200000
static uint64_t big_data(int i)
{
	return 0x8000000000000000ull | ((uint64_t)i << 40) | (0x5a5a00ull + (uint64_t)i);
}

static void data_big_a(struct peer *p, void *arg)
{
	struct rwin r = win_learn(p, 1);
	size_t total = 0;
	for (int i = 0; i < NBIG; i++)
		total += BIG_BASE + (size_t)i * 1000;
	uint8_t *buf = xmalloc(total);
	uint64_t off = 0;
	for (int i = 0; i < NBIG; i++) {
		size_t n = BIG_BASE + (size_t)i * 1000;
		fill_pattern(buf + off, n, 70 + i);
		if (i % 2 == 0) {
			POST(p->l.cq, fi_writedata(p->l.ep, buf + off, n, NULL, big_data(i),
						   peer_addr(p), r.addr + off, r.key, buf + i));
		} else {
			struct iovec iov[2] = { { buf + off, 1000 },
						{ buf + off + 1000, n - 1000 } };
			struct fi_rma_iov riov = { r.addr + off, n, r.key };
			struct fi_msg_rma m = { .msg_iov = iov,
						.iov_count = 2,
						.addr = peer_addr(p),
						.rma_iov = &riov,
						.rma_iov_count = 1,
						.context = buf + i,
						.data = big_data(i) };
			POST(p->l.cq,
			     fi_writemsg(p->l.ep, &m,
					 FI_REMOTE_CQ_DATA | FI_COMPLETION | FI_DELIVERY_COMPLETE));
		}
		wait_op(p, buf + i, FI_RMA | FI_WRITE, "large write with data");
		off += n;
	}
	/* A large write without data: no remote entry. */
	fill_pattern(buf, BIG_BASE, 90);
	POST(p->l.cq,
	     fi_write(p->l.ep, buf, BIG_BASE, NULL, peer_addr(p), r.addr + off, r.key, buf));
	wait_op(p, buf, FI_RMA | FI_WRITE, "large write");
	uint64_t msg = 0x77;
	POST(p->l.cq, fi_tsend(p->l.ep, &msg, sizeof(msg), NULL, peer_addr(p), 9, &msg));
	wait_op(p, &msg, FI_SEND | FI_TAGGED, "tsend");
	barrier(p);
	free(buf);
}

static void data_big_b(struct peer *p, void *arg)
{
	size_t total = BIG_BASE;
	for (int i = 0; i < NBIG; i++)
		total += BIG_BASE + (size_t)i * 1000;
	struct win w;
	win_reg(p, &w, total, FI_REMOTE_WRITE, 16);
	uint64_t got = 0;
	CHECK(fi_trecv(p->l.ep, &got, sizeof(got), NULL, peer_addr(p), 9, 0, &got));
	win_tell(p, 0, &w);
	size_t off = 0;
	for (int i = 0; i < NBIG; i++) {
		size_t n = BIG_BASE + (size_t)i * 1000;
		expect_remote_data(p, i, big_data(i), n);
		EXPECT_PATTERN(w.buf + off, n, 70 + i);
		off += n;
	}
	/* Next: the message, not an entry for the write without data. */
	wait_op(p, &got, FI_RECV | FI_TAGGED, "trecv");
	EXPECT(got == 0x77, "received %#llx", (unsigned long long)got);
	EXPECT_PATTERN(w.buf + off, BIG_BASE, 90);
	barrier(p);
	win_close(&w);
}

/* Writes with remote CQ data posted back to back, without waiting for
 * completions, large (carried by a network core) and small (executed by
 * the target) mixed: the target sees one remote entry per write, each
 * with its data, length and source, its data in place. Their order is not
 * checked: the target-executed path over the network already completes a
 * large write (pulled by rendezvous) after a small one sent after it. */
#define NORD 12
static const int k_ord_big[NORD] = { 1, 1, 0, 1, 0, 0, 1, 1, 1, 0, 1, 0 };
static size_t ord_len(int i)
{
	return k_ord_big[i] ? 150000 + (size_t)i * 100 : 100 + (size_t)i;
}

static size_t ord_off(int i)
{
	size_t off = 0;
	for (int k = 0; k < i; k++)
		off += ord_len(k);
	return off;
}

static void data_pipe_a(struct peer *p, void *arg)
{
	struct rwin r = win_learn(p, 1);
	size_t total = 0;
	for (int i = 0; i < NORD; i++)
		total += ord_len(i);
	uint8_t *buf = xmalloc(total);
	/* The first operation learns the core key. */
	POST(p->l.cq, fi_write(p->l.ep, buf, 8, NULL, peer_addr(p), r.addr + total, r.key, buf));
	wait_op(p, buf, FI_RMA | FI_WRITE, "first write");
	uint64_t off = 0;
	for (int i = 0; i < NORD; i++) {
		fill_pattern(buf + off, ord_len(i), 100 + i);
		POST(p->l.cq, fi_writedata(p->l.ep, buf + off, ord_len(i), NULL, 500 + (uint64_t)i,
					   peer_addr(p), r.addr + off, r.key, buf + i));
		off += ord_len(i);
	}
	int seen[NORD] = { 0 };
	for (int k = 0; k < NORD; k++) {
		struct fi_cq_tagged_entry e;
		int ret = wait_cq(p->l.cq, &e, NULL, NULL, WAIT_MS);
		EXPECT(ret == 0, "completion %d: %d", k, ret);
		long i = (uint8_t *)e.op_context - buf;
		EXPECT(i >= 0 && i < NORD && !seen[i], "completion %d: context %p", k,
		       e.op_context);
		EXPECT(e.flags == (FI_RMA | FI_WRITE), "completion %d: flags %#llx", k,
		       (unsigned long long)e.flags);
		seen[i] = 1;
	}
	barrier(p);
	free(buf);
}

static void data_pipe_b(struct peer *p, void *arg)
{
	size_t total = 8;
	for (int i = 0; i < NORD; i++)
		total += ord_len(i);
	struct win w;
	win_reg(p, &w, total, FI_REMOTE_WRITE, 17);
	win_tell(p, 0, &w);
	int seen[NORD] = { 0 };
	for (int k = 0; k < NORD; k++) {
		struct fi_cq_tagged_entry e;
		fi_addr_t src = FI_ADDR_NOTAVAIL;
		int ret = wait_cq(p->l.cq, &e, &src, NULL, WAIT_MS);
		EXPECT(ret == 0, "remote completion %d: %d", k, ret);
		EXPECT(e.flags == (FI_RMA | FI_REMOTE_WRITE | FI_REMOTE_CQ_DATA),
		       "remote completion %d flags %#llx", k, (unsigned long long)e.flags);
		long i = (long)e.data - 500;
		EXPECT(i >= 0 && i < NORD && !seen[i], "remote completion %d data %llu", k,
		       (unsigned long long)e.data);
		seen[i] = 1;
		EXPECT(e.len == ord_len(i), "remote completion %d len %zu, want %zu", k, e.len,
		       ord_len(i));
		EXPECT(src == peer_addr(p), "remote completion %d source %llu", k,
		       (unsigned long long)src);
		EXPECT_PATTERN(w.buf + ord_off(i), ord_len(i), 100 + i);
	}
	barrier(p);
	win_close(&w);
}

/* fi_inject_write at and below inject_size: the buffer is reusable at
 * return; a later fi_write's completion orders them (one target executes
 * one initiator's requests in order). */
static void inject_a(struct peer *p, void *arg)
{
	struct rwin r = win_learn(p, 1);
	size_t isz = p->l.info->tx_attr->inject_size;
	EXPECT(isz >= 64, "inject_size %zu", isz);
	uint8_t *buf = xmalloc(isz);
	fill_pattern(buf, 64, 20);
	POST(p->l.cq, fi_inject_write(p->l.ep, buf, 64, peer_addr(p), r.addr, r.key));
	memset(buf, 0, 64);
	fill_pattern(buf, isz, 21);
	POST(p->l.cq, fi_inject_write(p->l.ep, buf, isz, peer_addr(p), r.addr + 64, r.key));
	memset(buf, 0, isz);
	CHECK_RC(fi_inject_write(p->l.ep, buf, isz + 1, peer_addr(p), r.addr, r.key), -FI_EMSGSIZE);
	fill_pattern(buf, 8, 22);
	POST(p->l.cq, fi_write(p->l.ep, buf, 8, NULL, peer_addr(p), r.addr + 64 + isz, r.key, buf));
	wait_op(p, buf, FI_RMA | FI_WRITE, "write after injects");
	expect_no_completion(p->l.cq, 50, "injects");
	barrier(p);
	free(buf);
}

static void inject_b(struct peer *p, void *arg)
{
	struct win w;
	win_reg(p, &w, 2 * 4096 + 128, FI_REMOTE_WRITE, 3);
	win_tell(p, 0, &w);
	barrier(p);
	size_t isz = p->l.info->tx_attr->inject_size;
	EXPECT_PATTERN(w.buf, 64, 20);
	EXPECT_PATTERN(w.buf + 64, isz, 21);
	EXPECT_PATTERN(w.buf + 64 + isz, 8, 22);
	win_close(&w);
}

/* Refusals: each is an error completion at the initiator, and the target's
 * memory keeps every byte. */
static void bad_a(struct peer *p, void *arg)
{
	struct rwin ro = win_learn(p, 1), wo = win_learn(p, 1);
	size_t big = 200000;
	uint8_t *buf = xmalloc(big);
	fill_pattern(buf, big, 99);
	int ctx[16];
	/* A read-only window refuses writes, small and bulk. */
	POST(p->l.cq, fi_write(p->l.ep, buf, 100, NULL, peer_addr(p), ro.addr, ro.key, &ctx[0]));
	wait_err(p, &ctx[0], FI_EACCES, FI_RMA | FI_WRITE, "write to a read-only MR");
	POST(p->l.cq, fi_write(p->l.ep, buf, big, NULL, peer_addr(p), ro.addr, ro.key, &ctx[1]));
	wait_err(p, &ctx[1], FI_EACCES, FI_RMA | FI_WRITE, "bulk write to a read-only MR");
	/* A write-only window refuses reads. */
	POST(p->l.cq, fi_read(p->l.ep, buf, 100, NULL, peer_addr(p), wo.addr, wo.key, &ctx[2]));
	wait_err(p, &ctx[2], FI_EACCES, FI_RMA | FI_READ, "read from a write-only MR");
	/* Unknown key. */
	POST(p->l.cq, fi_write(p->l.ep, buf, 100, NULL, peer_addr(p), wo.addr,
			       wo.key + ro.key + 1000, &ctx[3]));
	wait_err(p, &ctx[3], FI_EKEYREJECTED, FI_RMA | FI_WRITE, "write with an unknown key");
	POST(p->l.cq, fi_read(p->l.ep, buf, big, NULL, peer_addr(p), ro.addr,
			      ro.key + wo.key + 1000, &ctx[4]));
	wait_err(p, &ctx[4], FI_EKEYREJECTED, FI_RMA | FI_READ, "bulk read with an unknown key");
	/* Past the end, by one byte and by a bulk write. */
	POST(p->l.cq, fi_write(p->l.ep, buf, 100, NULL, peer_addr(p), wo.addr + wo.len - 99, wo.key,
			       &ctx[5]));
	wait_err(p, &ctx[5], FI_EINVAL, FI_RMA | FI_WRITE, "write one byte past the end");
	POST(p->l.cq,
	     fi_write(p->l.ep, buf, big, NULL, peer_addr(p), wo.addr + 1, wo.key, &ctx[6]));
	wait_err(p, &ctx[6], FI_EINVAL, FI_RMA | FI_WRITE, "bulk write past the end");
	POST(p->l.cq,
	     fi_read(p->l.ep, buf, 100, NULL, peer_addr(p), ro.addr + ro.len, ro.key, &ctx[7]));
	wait_err(p, &ctx[7], FI_EINVAL, FI_RMA | FI_READ, "read at the end");
	/* Below the start (virtual addresses), or a huge offset. */
	uint64_t below = virt_addr(p) ? wo.addr - 1 : ~(uint64_t)0 - 10;
	POST(p->l.cq, fi_write(p->l.ep, buf, 100, NULL, peer_addr(p), below, wo.key, &ctx[8]));
	wait_err(p, &ctx[8], FI_EINVAL, FI_RMA | FI_WRITE, "write outside the MR");
	/* An inject write refused is reported too. */
	POST(p->l.cq, fi_inject_write(p->l.ep, buf, 16, peer_addr(p), ro.addr, ro.key));
	struct fi_cq_err_entry err;
	int r = wait_cq_quiet(p->l.cq, NULL, NULL, &err, WAIT_MS);
	EXPECT(r == -FI_EACCES, "refused inject write -> %d", r);
	/* Something valid still works after all that. */
	POST(p->l.cq,
	     fi_write(p->l.ep, buf, 100, NULL, peer_addr(p), wo.addr + 8, wo.key, &ctx[9]));
	wait_op(p, &ctx[9], FI_RMA | FI_WRITE, "valid write");
	/* More than one remote range is refused at once. */
	struct iovec iov = { buf, 16 };
	struct fi_rma_iov riov[2] = { { wo.addr, 8, wo.key }, { wo.addr + 8, 8, wo.key } };
	struct fi_msg_rma m = { .msg_iov = &iov,
				.iov_count = 1,
				.addr = peer_addr(p),
				.rma_iov = riov,
				.rma_iov_count = 2,
				.context = &ctx[10] };
	CHECK_RC(fi_writemsg(p->l.ep, &m, 0), -FI_EINVAL);
	barrier(p);
	free(buf);
}

static void bad_b(struct peer *p, void *arg)
{
	struct win ro, wo;
	win_reg(p, &ro, 4096, FI_REMOTE_READ, 11);
	win_reg(p, &wo, 4096, FI_REMOTE_WRITE, 12);
	fill_pattern(ro.buf, ro.len, 5);
	fill_pattern(wo.buf, wo.len, 6);
	win_tell(p, 0, &ro);
	win_tell(p, 0, &wo);
	barrier(p);
	EXPECT_PATTERN(ro.buf, ro.len, 5);
	/* Only the valid write (100 bytes at 8) touched the write window. */
	EXPECT_PATTERN(wo.buf, 8, 6);
	EXPECT_PATTERN(wo.buf + 8, 100, 99);
	uint8_t *ref = xmalloc(wo.len);
	fill_pattern(ref, wo.len, 6);
	EXPECT(!memcmp(wo.buf + 108, ref + 108, wo.len - 108),
	       "write window touched past the valid write");
	free(ref);
	win_close(&ro);
	win_close(&wo);
}

/* fi_writev / fi_readv with several local pieces, fi_readmsg. */
static void iov_a(struct peer *p, void *arg)
{
	struct rwin r = win_learn(p, 1);
	static const size_t len[3] = { 10, 5000, 70000 };
	size_t total = len[0] + len[1] + len[2];
	uint8_t *src = xmalloc(total), *dst = xmalloc(total);
	fill_pattern(src, total, 30);
	struct iovec iov[3];
	size_t o = 0;
	for (int i = 0; i < 3; i++) {
		iov[i] = (struct iovec){ src + o, len[i] };
		o += len[i];
	}
	POST(p->l.cq, fi_writev(p->l.ep, iov, NULL, 3, peer_addr(p), r.addr, r.key, src));
	wait_op(p, src, FI_RMA | FI_WRITE, "writev");
	/* Read it back in other pieces. */
	memset(dst, 0, total);
	struct iovec riov[3] = { { dst, 3 }, { dst + 3, 40000 }, { dst + 40003, total - 40003 } };
	POST(p->l.cq, fi_readv(p->l.ep, riov, NULL, 3, peer_addr(p), r.addr, r.key, dst));
	wait_op(p, dst, FI_RMA | FI_READ, "readv");
	EXPECT_PATTERN(dst, total, 30);
	/* fi_readmsg of a middle piece into one buffer. */
	memset(dst, 0, total);
	struct iovec one = { dst, 1000 };
	struct fi_rma_iov ri = { r.addr + 4000, 1000, r.key };
	struct fi_msg_rma m = { .msg_iov = &one,
				.iov_count = 1,
				.addr = peer_addr(p),
				.rma_iov = &ri,
				.rma_iov_count = 1,
				.context = dst + 1 };
	POST(p->l.cq, fi_readmsg(p->l.ep, &m, FI_COMPLETION));
	wait_op(p, dst + 1, FI_RMA | FI_READ, "readmsg");
	EXPECT(!memcmp(dst, src + 4000, 1000), "readmsg data");
	barrier(p);
	free(src);
	free(dst);
}

static void iov_b(struct peer *p, void *arg)
{
	struct win w;
	win_reg(p, &w, 80000, FI_REMOTE_READ | FI_REMOTE_WRITE, 13);
	win_tell(p, 0, &w);
	barrier(p);
	EXPECT_PATTERN(w.buf, 75010, 30);
	win_close(&w);
}

/* The target closes its MR and registers the same memory again under the
 * same requested key: a key the initiator used before (and whose network
 * core key lnx may have cached) must reach the new registration. */
static void rereg_a(struct peer *p, void *arg)
{
	uint8_t buf[256];
	for (int round = 0; round < 2; round++) {
		struct rwin r = win_learn(p, 1);
		for (int i = 0; i < 3; i++) {
			fill_pattern(buf, sizeof(buf), 60 + round * 3 + i);
			POST(p->l.cq, fi_write(p->l.ep, buf, sizeof(buf), NULL, peer_addr(p),
					       r.addr + 64, r.key, buf));
			wait_op(p, buf, FI_RMA | FI_WRITE, "write");
		}
		barrier(p);
	}
}

static void rereg_b(struct peer *p, void *arg)
{
	struct win w;
	win_reg(p, &w, 4096, FI_REMOTE_READ | FI_REMOTE_WRITE, 31);
	win_tell(p, 0, &w);
	barrier(p);
	EXPECT_PATTERN(w.buf + 64, 256, 62);
	CHECK(fi_close(&w.mr->fid));
	CHECK(fi_mr_reg(p->l.domain, w.buf, w.len, FI_REMOTE_READ | FI_REMOTE_WRITE, 0, 31, 0,
			&w.mr, NULL));
	w.key = fi_mr_key(w.mr);
	win_tell(p, 0, &w);
	barrier(p);
	EXPECT_PATTERN(w.buf + 64, 256, 65);
	win_close(&w);
}

/* The target closes an MR whose key the initiator used (and whose network
 * core key lnx may have cached), then tells the initiator so by a message:
 * a write and a read with the closed key after that message are refused
 * with FI_EKEYREJECTED, and the connection still carries a write to the
 * target's other MR. */
static int revoke_nap_ms; /* revoke_asleep: the initiator's nap after the barrier */

static void revoke_a(struct peer *p, void *arg)
{
	struct rwin r1 = win_learn(p, 1), r2 = win_learn(p, 1);
	uint8_t buf[512];
	for (int i = 0; i < 3; i++) {
		fill_pattern(buf, sizeof(buf), 80 + i);
		POST(p->l.cq,
		     fi_write(p->l.ep, buf, sizeof(buf), NULL, peer_addr(p), r1.addr, r1.key, buf));
		wait_op(p, buf, FI_RMA | FI_WRITE, "write before the close");
		POST(p->l.cq,
		     fi_write(p->l.ep, buf, sizeof(buf), NULL, peer_addr(p), r2.addr, r2.key, buf));
		wait_op(p, buf, FI_RMA | FI_WRITE, "write to the other MR");
	}
	uint64_t msg = 0;
	CHECK(fi_trecv(p->l.ep, &msg, sizeof(msg), NULL, peer_addr(p), 11, 0, &msg));
	barrier(p);
	if (revoke_nap_ms)
		usleep(revoke_nap_ms * 1000);
	wait_op(p, &msg, FI_RECV | FI_TAGGED, "the target's word that the MR is closed");
	EXPECT(msg == 0xc105ed, "received %#llx", (unsigned long long)msg);
	int ctx[2];
	POST(p->l.cq,
	     fi_write(p->l.ep, buf, sizeof(buf), NULL, peer_addr(p), r1.addr, r1.key, &ctx[0]));
	wait_err(p, &ctx[0], FI_EKEYREJECTED, FI_RMA | FI_WRITE, "write with the closed MR's key");
	POST(p->l.cq,
	     fi_read(p->l.ep, buf, sizeof(buf), NULL, peer_addr(p), r1.addr, r1.key, &ctx[1]));
	wait_err(p, &ctx[1], FI_EKEYREJECTED, FI_RMA | FI_READ, "read with the closed MR's key");
	fill_pattern(buf, sizeof(buf), 89);
	POST(p->l.cq,
	     fi_write(p->l.ep, buf, sizeof(buf), NULL, peer_addr(p), r2.addr, r2.key, buf));
	wait_op(p, buf, FI_RMA | FI_WRITE, "write to the other MR after the refusals");
	barrier(p);
}

static void revoke_b(struct peer *p, void *arg)
{
	struct win w1, w2;
	win_reg(p, &w1, 4096, FI_REMOTE_READ | FI_REMOTE_WRITE, 0);
	win_reg(p, &w2, 4096, FI_REMOTE_READ | FI_REMOTE_WRITE, 0);
	win_tell(p, 0, &w1);
	win_tell(p, 0, &w2);
	barrier(p);
	EXPECT_PATTERN(w1.buf, 512, 82);
	CHECK(fi_close(&w1.mr->fid));
	uint64_t msg = 0xc105ed;
	POST(p->l.cq, fi_tsend(p->l.ep, &msg, sizeof(msg), NULL, peer_addr(p), 11, &msg));
	wait_op(p, &msg, FI_SEND | FI_TAGGED, "tsend");
	barrier(p);
	EXPECT_PATTERN(w1.buf, 512, 82); /* the closed MR's memory untouched */
	EXPECT_PATTERN(w2.buf, 512, 89);
	free(w1.buf);
	win_close(&w2);
}

/* revoke with an initiator that makes no libfabric call while the target
 * closes the MR and sends its word: the revoke and the word are both
 * waiting when it looks again, on the peer path on two connections (the
 * side transport, the peer core) whose order lnx must not depend on. */
static void revoke_asleep_a(struct peer *p, void *arg)
{
	revoke_nap_ms = 300;
	revoke_a(p, arg);
}

/* Both ranks write into each other's windows at once: each is initiator
 * and target, progressing the other's requests while waiting for its own. */
static void both(struct peer *p, void *arg)
{
	struct win w;
	win_reg(p, &w, 1 << 20, FI_REMOTE_READ | FI_REMOTE_WRITE, 20 + p->rank);
	win_tell(p, other(p), &w);
	struct rwin r = win_learn(p, other(p));
	uint8_t *src = xmalloc(1 << 20);
	fill_pattern(src, 1 << 20, 40 + p->rank);
	for (int i = 0; i < 17; i++) {
		size_t n = (size_t)1 << (i + 4);
		if (n > (1 << 20))
			n = 1 << 20;
		POST(p->l.cq,
		     fi_write(p->l.ep, src, n, NULL, peer_addr(p), r.addr, r.key, src + i));
		wait_op(p, src + i, FI_RMA | FI_WRITE, "crossed write");
	}
	barrier(p);
	EXPECT_PATTERN(w.buf, 1 << 20, 40 + other(p));
	win_close(&w);
	free(src);
}

/* Counters: the initiator's FI_WRITE|FI_READ counter counts successes and
 * errors apart; the target's FI_REMOTE_WRITE|FI_REMOTE_READ counter counts
 * every operation it executed (FI_RMA_EVENT) and no refused one. */
#define NCW 5
#define NCR 3
static void cntr_a(struct peer *p, void *arg)
{
	struct rwin r = win_learn(p, 1);
	uint8_t *buf = xmalloc(100000);
	fill_pattern(buf, 100000, 50);
	for (int i = 0; i < NCW; i++) {
		size_t n = i == 2 ? 100000 : 64; /* one bulk write */
		POST(p->l.cq,
		     fi_write(p->l.ep, buf, n, NULL, peer_addr(p), r.addr, r.key, buf + i));
		wait_op(p, buf + i, FI_RMA | FI_WRITE, "counted write");
	}
	POST(p->l.cq, fi_inject_write(p->l.ep, buf, 8, peer_addr(p), r.addr, r.key));
	for (int i = 0; i < NCR; i++) {
		POST(p->l.cq,
		     fi_read(p->l.ep, buf, 64, NULL, peer_addr(p), r.addr, r.key, buf + 10 + i));
		wait_op(p, buf + 10 + i, FI_RMA | FI_READ, "counted read");
	}
	/* A refused write counts as an error, not a success. */
	int ctx;
	POST(p->l.cq, fi_write(p->l.ep, buf, 8, NULL, peer_addr(p), r.addr, r.key + 77, &ctx));
	wait_err(p, &ctx, FI_EKEYREJECTED, FI_RMA | FI_WRITE, "refused write");
	/* The inject has no completion; its count arrives with its answer. */
	uint64_t dl = now_ms() + WAIT_MS;
	while (fi_cntr_read(p->l.tx_cntr) < NCW + 1 + NCR && now_ms() < dl)
		cq_progress(p->l.cq);
	EXPECT(fi_cntr_read(p->l.tx_cntr) == NCW + 1 + NCR, "tx counter %llu, want %d",
	       (unsigned long long)fi_cntr_read(p->l.tx_cntr), NCW + 1 + NCR);
	EXPECT(fi_cntr_readerr(p->l.tx_cntr) == 1, "tx error counter %llu",
	       (unsigned long long)fi_cntr_readerr(p->l.tx_cntr));
	barrier(p);
	free(buf);
}

static void cntr_b(struct peer *p, void *arg)
{
	struct win w;
	win_reg(p, &w, 100000, FI_REMOTE_READ | FI_REMOTE_WRITE, 14);
	win_tell(p, 0, &w);
	barrier(p);
	EXPECT(fi_cntr_read(p->l.rx_cntr) == NCW + 1 + NCR, "remote counter %llu, want %d",
	       (unsigned long long)fi_cntr_read(p->l.rx_cntr), NCW + 1 + NCR);
	EXPECT(fi_cntr_readerr(p->l.rx_cntr) == 0, "remote error counter %llu",
	       (unsigned long long)fi_cntr_readerr(p->l.rx_cntr));
	EXPECT_PATTERN(w.buf, 100000, 50);
	win_close(&w);
}

/* The target has a receive posted (which lnx may lend to C: an armed
 * receive) while one-sided requests arrive: they are executed, and the
 * receive still takes the message sent after them. */
static void armed_a(struct peer *p, void *arg)
{
	struct rwin r = win_learn(p, 1);
	uint8_t buf[256];
	for (int i = 0; i < 20; i++) {
		fill_pattern(buf, sizeof(buf), 60 + i);
		/* Each write has its own slice: A's completion does not wait
		 * for B to read its CQ, so write i+1 may land before B checks
		 * write i. */
		POST(p->l.cq, fi_writedata(p->l.ep, buf, sizeof(buf), NULL, 1000 + i, peer_addr(p),
					   r.addr + (uint64_t)i * sizeof(buf), r.key, buf));
		wait_op(p, buf, FI_RMA | FI_WRITE, "writedata");
	}
	uint64_t msg = 0x5555;
	POST(p->l.cq, fi_tsend(p->l.ep, &msg, sizeof(msg), NULL, peer_addr(p), 5, &msg));
	wait_op(p, &msg, FI_SEND | FI_TAGGED, "tsend");
	barrier(p);
}

static void armed_b(struct peer *p, void *arg)
{
	struct win w;
	win_reg(p, &w, 20 * 256, FI_REMOTE_WRITE, 15);
	uint64_t got = 0;
	CHECK(fi_trecv(p->l.ep, &got, sizeof(got), NULL, peer_addr(p), 5, 0, &got));
	win_tell(p, 0, &w);
	for (int i = 0; i < 20; i++) {
		struct fi_cq_tagged_entry e;
		int ret = wait_cq(p->l.cq, &e, NULL, NULL, WAIT_MS);
		EXPECT(ret == 0, "remote completion %d: %d", i, ret);
		EXPECT(e.flags == (FI_RMA | FI_REMOTE_WRITE | FI_REMOTE_CQ_DATA) &&
			       e.data == 1000 + (uint64_t)i,
		       "entry %d: flags %#llx data %llu", i, (unsigned long long)e.flags,
		       (unsigned long long)e.data);
		EXPECT_PATTERN(w.buf + i * 256, 256, 60 + i);
	}
	wait_op(p, &got, FI_RECV | FI_TAGGED, "trecv");
	EXPECT(got == 0x5555, "received %#llx", (unsigned long long)got);
	barrier(p);
	win_close(&w);
}

static const struct subtest cases[] = {
	{ .name = "armed", .a = armed_a, .b = armed_b, .opt_caps = RMA_CAPS },
	{ .name = "counters",
	  .a = cntr_a,
	  .b = cntr_b,
	  .opt_caps = RMA_CAPS | FI_RMA_EVENT,
	  .counters = 2 },
	{ .name = "sizes", .a = sizes_a, .b = sizes_b, .opt_caps = RMA_CAPS },
	{ .name = "data", .a = data_a, .b = data_b, .opt_caps = RMA_CAPS },
	{ .name = "data_big", .a = data_big_a, .b = data_big_b, .opt_caps = RMA_CAPS },
	{ .name = "data_pipelined", .a = data_pipe_a, .b = data_pipe_b, .opt_caps = RMA_CAPS },
	{ .name = "inject", .a = inject_a, .b = inject_b, .opt_caps = RMA_CAPS },
	{ .name = "bad", .a = bad_a, .b = bad_b, .opt_caps = RMA_CAPS },
	{ .name = "iov", .a = iov_a, .b = iov_b, .opt_caps = RMA_CAPS },
	{ .name = "both", .a = both, .b = both, .opt_caps = RMA_CAPS },
	{ .name = "revoke", .a = revoke_a, .b = revoke_b, .opt_caps = RMA_CAPS },
	{ .name = "revoke_asleep", .a = revoke_asleep_a, .b = revoke_b, .opt_caps = RMA_CAPS },
	/* Requested keys (no FI_MR_PROV_KEY): the same key comes back. */
	{ .name = "rereg",
	  .a = rereg_a,
	  .b = rereg_b,
	  .opt_caps = RMA_CAPS,
	  .mr_mode = FI_MR_VIRT_ADDR | FI_MR_ALLOCATED },
	/* 0-based addressing: no FI_MR_VIRT_ADDR in the domain. */
	{ .name = "sizes_offset",
	  .a = sizes_a,
	  .b = sizes_b,
	  .opt_caps = RMA_CAPS,
	  .mr_mode = FI_MR_ALLOCATED | FI_MR_PROV_KEY },
	{ .name = "bad_offset",
	  .a = bad_a,
	  .b = bad_b,
	  .opt_caps = RMA_CAPS,
	  .mr_mode = FI_MR_ALLOCATED | FI_MR_PROV_KEY },
};

int main(int argc, char **argv)
{
	return run_subtests(argc, argv, cases, sizeof(cases) / sizeof(cases[0]));
}
