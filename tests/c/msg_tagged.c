/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * msg_tagged: fi_tsend / fi_trecv and friends between two processes.
 *
 * Usage: msg_tagged [shm|link|tcp|<links> [distinct]]   (see common.h)
 * Set LNX_TEST_ONLY=case[,case] to run a subset.
 *
 *  sizes_expected    0 B, 1 B, 4 KiB, 1 MiB, 4 MiB; receive posted first
 *  sizes_unexpected  same sizes sent first, receives posted later, reversed
 *  inject            fi_tinject 0..inject_size; buffer reusable at once; no
 *                    send completion; inject_size+1 refused
 *  data              fi_tsenddata / fi_tinjectdata: FI_REMOTE_CQ_DATA + data;
 *                    plain send without it; zero-byte senddata
 *  iov               fi_tsendv / fi_trecvv with 3-element iovs split
 *                    differently on each side (small and 3 MiB)
 *  msg               fi_tsendmsg / fi_trecvmsg with FI_REMOTE_CQ_DATA,
 *                    FI_COMPLETION, FI_INJECT; FI_ADDR_UNSPEC
 *  any_source        FI_ADDR_UNSPEC receives report the sender's fi_addr;
 *                    plain fi_cq_read works
 *  ordering          1000 messages with one tag match in send order (half
 *                    posted before, half after arrival)
 *  ordering_mixed    small and 512 KiB messages interleaved keep send order
 *  pingpong          both directions, 64 B x200 and 1 MiB x10
 *  separation        tagged and untagged queues are independent
 *  wildcard          ignore bits: partial and full wildcards, non-ignored
 *                    bits still discriminate
 *  tag_values        tags 0, 1, 0x0123456789abcdef, 1<<63, ~0
 *  directed          a receive directed at another address does not match;
 *                    it stays posted until cancelled
 */
#include "msg_basic.h"

static void wildcard_a(struct peer *p, void *arg)
{
	static const uint64_t tags[] = { 0x124ab, 0x123ab, 0xAAAA };
	struct fi_context2 c[3];
	void *cp[3];
	uint8_t *b = sbuf(100, 1200);
	barrier(p);
	for (int i = 0; i < 3; i++) {
		cp[i] = &c[i];
		POST(p->l.cq, fi_tsend(p->l.ep, b, 100, NULL, peer_addr(p), tags[i], &c[i]));
	}
	wait_all(p, 3, cp, NULL, NULL, "wildcard sends");
	barrier(p);
	free(b);
}

static void wildcard_b(struct peer *p, void *arg)
{
	struct fi_context2 r1, r2, r3;
	void *cp[3] = { &r1, &r2, &r3 };
	uint8_t *b[3] = { rbuf(100), rbuf(100), rbuf(100) };
	POST(p->l.cq, fi_trecv(p->l.ep, b[0], 100, NULL, peer_addr(p), 0xAAAA, 0, &r1));
	POST(p->l.cq, fi_trecv(p->l.ep, b[1], 100, NULL, peer_addr(p), 0x12300, 0xff, &r2));
	POST(p->l.cq, fi_trecv(p->l.ep, b[2], 100, NULL, peer_addr(p), 0, ~0ull, &r3));
	barrier(p);
	struct fi_cq_tagged_entry e[3];
	fi_addr_t s[3];
	wait_all(p, 3, cp, e, s, "wildcard receives");
	struct want_recv w1 = { &r1, 100, 0xAAAA, 0, 0, peer_addr(p) };
	struct want_recv w2 = { &r2, 100, 0x123ab, 0, 0, peer_addr(p) };
	struct want_recv w3 = { &r3, 100, 0x124ab, 0, 0, peer_addr(p) };
	check_recv_entry(&e[0], s[0], &w1, "exact tag");
	check_recv_entry(&e[1], s[1], &w2, "tag 0x12300 ignore 0xff (0x124ab must not match)");
	check_recv_entry(&e[2], s[2], &w3, "ignore ~0");
	for (int i = 0; i < 3; i++) {
		rbuf_check(b[i], 100, 100, 1200, "wildcard");
		free(b[i]);
	}
	barrier(p);
}

static const uint64_t k_tags[] = { 0, 1, 0x0123456789abcdefull, 1ull << 63, ~0ull };
#define NTAGS (sizeof(k_tags) / sizeof(k_tags[0]))

static void tag_values_a(struct peer *p, void *arg)
{
	struct fi_context2 c[NTAGS];
	void *cp[NTAGS];
	uint8_t *b = sbuf(64, 1300);
	barrier(p);
	for (size_t i = 0; i < NTAGS; i++) {
		cp[i] = &c[i];
		POST(p->l.cq, fi_tsend(p->l.ep, b, 64, NULL, peer_addr(p), k_tags[i], &c[i]));
	}
	wait_all(p, NTAGS, cp, NULL, NULL, "sends");
	barrier(p);
	free(b);
}

static void tag_values_b(struct peer *p, void *arg)
{
	struct fi_context2 c[NTAGS];
	void *cp[NTAGS];
	uint8_t *b[NTAGS];
	struct fi_cq_tagged_entry e[NTAGS];
	fi_addr_t s[NTAGS];
	for (size_t k = 0; k < NTAGS; k++) {
		size_t i = NTAGS - 1 - k;
		b[i] = rbuf(64);
		cp[i] = &c[i];
		POST(p->l.cq, fi_trecv(p->l.ep, b[i], 64, NULL, peer_addr(p), k_tags[i], 0, &c[i]));
	}
	barrier(p);
	wait_all(p, NTAGS, cp, e, s, "receives");
	for (size_t i = 0; i < NTAGS; i++) {
		char what[64];
		snprintf(what, sizeof(what), "tag %#llx", (unsigned long long)k_tags[i]);
		struct want_recv w = { &c[i], 64, k_tags[i], 0, 0, peer_addr(p) };
		check_recv_entry(&e[i], s[i], &w, what);
		rbuf_check(b[i], 64, 64, 1300, what);
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
	CASE("wildcard", wildcard_a, wildcard_b),
	CASE("tag_values", tag_values_a, tag_values_b),
	CASE("directed", directed_a, directed_b),
};

int main(int argc, char **argv)
{
	g_tagged = 1;
	return run_subtests(argc, argv, cases, sizeof(cases) / sizeof(cases[0]));
}
