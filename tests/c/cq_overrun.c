/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * cq_overrun: far more completions than the CQ's size, none read until the
 * end. libfabric lets a provider fail with FI_EOVERRUN here; lnx's CQs grow
 * instead, so nothing may be lost: every completion must come out, receives
 * in posting order with the right tag, length and data, and each send once.
 *
 * One process sends to itself (over shm); the sends are retried on
 * -FI_EAGAIN without reading the CQ, which lnx answers by progressing its
 * cores, so completions pile up in the CQ.
 */
#include "common.h"

#define N  5000
#define SZ 256

int main(void)
{
	snprintf(g_role, sizeof(g_role), "cq_overrun");
	struct lnx l;
	struct lnx_opts o = { .links = LINK_TCP, .cq_size = 16 };
	lnx_open(&l, &o);
	fi_addr_t self;
	CHECK_RC(fi_av_insert(l.av, l.name, 1, &self, 0, NULL), 1);
	char *rbuf = xmalloc((size_t)N * SZ), *sbuf = xmalloc((size_t)N * SZ);
	static struct fi_context2 rctx[N], sctx[N];
	for (int i = 0; i < N; i++) {
		fill_pattern(sbuf + (size_t)i * SZ, SZ, i);
		CHECK(fi_trecv(l.ep, rbuf + (size_t)i * SZ, SZ, NULL, self, 0x1000 + i, 0,
			       &rctx[i]));
	}
	for (int i = 0; i < N; i++) {
		ssize_t r;
		uint64_t deadline = now_ms() + WAIT_MS;
		while ((r = fi_tsend(l.ep, sbuf + (size_t)i * SZ, SZ, NULL, self, 0x1000 + i,
				     &sctx[i])) == -FI_EAGAIN)
			EXPECT(now_ms() < deadline,
			       "send %d: -FI_EAGAIN for %d ms without reading the CQ", i, WAIT_MS);
		CHECK(r);
	}
	int next_recv = 0, sends = 0;
	static char seen[N];
	while (next_recv < N || sends < N) {
		struct fi_cq_tagged_entry e;
		wait_ok(l.cq, &e, NULL, "completion");
		if (e.flags & FI_RECV) {
			int i = (struct fi_context2 *)e.op_context - rctx;
			EXPECT(i == next_recv, "receive %d completed where %d was due", i,
			       next_recv);
			EXPECT(e.tag == 0x1000 + (uint64_t)i && e.len == SZ, "tag %#llx len %zu",
			       (unsigned long long)e.tag, e.len);
			EXPECT_PATTERN(rbuf + (size_t)i * SZ, SZ, i);
			next_recv++;
		} else {
			int i = (struct fi_context2 *)e.op_context - sctx;
			EXPECT(i >= 0 && i < N && !seen[i], "bad or repeated send completion");
			seen[i] = 1;
			sends++;
		}
	}
	expect_no_completion(l.cq, 50, "after all completions");
	lnx_close(&l);
	printf("cq_overrun: %d receives and %d sends completed through a CQ of size 16\n", N, N);
	free(rbuf);
	free(sbuf);
	return 0;
}
