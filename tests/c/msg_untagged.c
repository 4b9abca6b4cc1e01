/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * msg_untagged: fi_send / fi_recv and friends between two processes.
 *
 * Usage: msg_untagged [shm|link|tcp|<links> [distinct]]   (see common.h)
 * Set LNX_TEST_ONLY=case[,case] to run a subset.
 *
 *  sizes_expected    0 B, 1 B, 4 KiB, 1 MiB, 4 MiB; receive posted first
 *  sizes_unexpected  same sizes sent first; receives (4 MiB each) posted
 *                    later match in arrival order
 *  inject            fi_inject 0..inject_size; buffer reusable at once; no
 *                    send completion; inject_size+1 refused
 *  data              fi_senddata / fi_injectdata: FI_REMOTE_CQ_DATA + data;
 *                    plain fi_send without it; zero-byte senddata
 *  iov               fi_sendv / fi_recvv, 3-element iovs split differently
 *  msg               fi_sendmsg / fi_recvmsg with FI_REMOTE_CQ_DATA,
 *                    FI_COMPLETION, FI_INJECT; FI_ADDR_UNSPEC
 *  any_source        FI_ADDR_UNSPEC receives report the sender's fi_addr;
 *                    plain fi_cq_read works
 *  ordering          1000 messages match receives in posting order
 *  ordering_mixed    small and 512 KiB messages interleaved keep send order
 *  pingpong          both directions, 64 B x200 and 1 MiB x10
 *  separation        tagged and untagged queues are independent
 *  fifo              receives of different sizes are filled in posting
 *                    order, whatever the message sizes
 *  directed          a receive directed at another address is skipped; it
 *                    stays posted until cancelled
 */
#include "msg_basic.h"

static const size_t k_fifo_len[] = { 100, 200, 4000, 0 };
#define NFIFO (sizeof(k_fifo_len) / sizeof(k_fifo_len[0]))

static void fifo_a(struct peer *p, void *arg)
{
	struct fi_context2 c[NFIFO];
	void *cp[NFIFO];
	uint8_t *b = sbuf(4000, 1500);
	barrier(p);
	for (size_t i = 0; i < NFIFO; i++) {
		cp[i] = &c[i];
		POST(p->l.cq, fi_send(p->l.ep, k_fifo_len[i] ? b : NULL, k_fifo_len[i], NULL,
				      peer_addr(p), &c[i]));
	}
	wait_all(p, NFIFO, cp, NULL, NULL, "fifo sends");
	barrier(p);
	free(b);
}

static void fifo_b(struct peer *p, void *arg)
{
	/* The first receive is the largest; message sizes do not matter. */
	static const size_t cap[NFIFO] = { 5000, 1000, 4096, 64 };
	struct fi_context2 c[NFIFO];
	void *cp[NFIFO];
	uint8_t *b[NFIFO];
	struct fi_cq_tagged_entry e[NFIFO];
	fi_addr_t s[NFIFO];
	for (size_t i = 0; i < NFIFO; i++) {
		b[i] = rbuf(cap[i]);
		cp[i] = &c[i];
		POST(p->l.cq, fi_recv(p->l.ep, b[i], cap[i], NULL, FI_ADDR_UNSPEC, &c[i]));
	}
	barrier(p);
	wait_all(p, NFIFO, cp, e, s, "fifo receives");
	for (size_t i = 0; i < NFIFO; i++) {
		char what[64];
		snprintf(what, sizeof(what), "receive %zu (%zu B buffer)", i, cap[i]);
		struct want_recv w = { &c[i], k_fifo_len[i], 0, 0, 0, peer_addr(p) };
		check_recv_entry(&e[i], s[i], &w, what);
		rbuf_check(b[i], cap[i], k_fifo_len[i], 1500, what);
		free(b[i]);
	}
	barrier(p);
}

static const struct subtest cases[] = {
	CASE("sizes_expected", sizes_expected_a, sizes_expected_b),
	CASE("sizes_unexpected", sizes_unexpected_a, sizes_unexpected_b),
	CASE("threshold", threshold_a, threshold_b),
	CASE("threshold_mix", threshold_mix_a, threshold_mix_b),
	CASE("inject", inject_a, inject_b),
	CASE("data", data_a, data_b),
	CASE("iov", iov_a, iov_b),
	CASE("msg", msg_a, msg_b),
	CASE("any_source", any_source_a, any_source_b),
	CASE("ordering", ordering_a, ordering_b),
	CASE("ordering_mixed", ordering_mixed_a, ordering_mixed_b),
	CASE("pingpong", pingpong, pingpong),
	CASE("separation", separation_a, separation_b),
	CASE("fifo", fifo_a, fifo_b),
	CASE("directed", directed_a, directed_b),
};

int main(int argc, char **argv)
{
	g_tagged = 0;
	return run_subtests(argc, argv, cases, sizeof(cases) / sizeof(cases[0]));
}
