/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * mr_keyzero: Open MPI 5's registration pattern, the one that fails over
 * libfabric 2.x's built-in lnx with -FI_ENOKEY at the second MR.
 *
 * mtl/ofi registers every message buffer it cannot send unregistered: one
 * iov, access FI_SEND|FI_RECV, requested_key 0, no FI_MR_PROV_KEY, closed
 * when the message completes; many such MRs are live at once. Here A sends
 * and B receives 200 messages of mixed sizes (eager and rendezvous, over
 * shm or the network core), each through buffers registered just for it
 * and passed as the descriptor; up to LIVE (>16) registrations are live on
 * each side. Every registration must succeed, every payload arrive intact
 * into the right buffer with the right tag and length, and every close
 * succeed.
 */
#define MSG_NO_SHARED_CASES
#include "msg_basic.h"

#define MSGS 200
#define LIVE 24

static size_t size_of(int i)
{
	static const size_t sizes[] = { 1, 64, 4096, 65536, 1 << 20 };
	return sizes[i % 5];
}

struct slot {
	char *buf;
	struct fid_mr *mr;
};

static void reg(struct peer *p, struct slot *s, size_t len, uint64_t access)
{
	s->buf = xmalloc(len);
	int r = fi_mr_reg(p->l.domain, s->buf, len, access, 0, 0, 0, &s->mr, NULL);
	EXPECT(r == 0, "fi_mr_reg requested_key 0, %zu bytes: %d (%s)", len, r, fi_strerror(-r));
}

static void release(struct slot *s)
{
	if (!s->mr)
		return;
	CHECK(fi_close(&s->mr->fid));
	free(s->buf);
	s->mr = NULL;
}

static void run(struct peer *p, int sender)
{
	static struct slot slots[LIVE];
	for (int i = 0; i < MSGS; i++) {
		struct slot *s = &slots[i % LIVE];
		release(s); /* the registration LIVE messages ago */
		size_t len = size_of(i);
		reg(p, s, len, FI_SEND | FI_RECV);
		struct fi_cq_tagged_entry e;
		if (sender) {
			fill_pattern(s->buf, len, (uint64_t)i);
			POST(p->l.cq, fi_tsend(p->l.ep, s->buf, len, fi_mr_desc(s->mr),
					       peer_addr(p), 1000 + i, s));
			wait_ok(p->l.cq, &e, NULL, "send");
			EXPECT(e.op_context == s, "send completion for the wrong message");
		} else {
			memset(s->buf, 0, len);
			POST(p->l.cq, fi_trecv(p->l.ep, s->buf, len, fi_mr_desc(s->mr),
					       peer_addr(p), 1000 + i, 0, s));
			wait_ok(p->l.cq, &e, NULL, "recv");
			EXPECT(e.op_context == s && e.tag == (uint64_t)(1000 + i) && e.len == len,
			       "message %d: ctx %p tag %llu len %zu", i, e.op_context,
			       (unsigned long long)e.tag, e.len);
			EXPECT(check_pattern(s->buf, len, (uint64_t)i) < 0,
			       "message %d (%zu bytes) corrupted", i, len);
		}
	}
	for (int k = 0; k < LIVE; k++)
		release(&slots[k]);
	note("%d messages through %d live key-0 registrations", MSGS, LIVE);
}

static void a(struct peer *p, void *arg)
{
	run(p, 1);
}
static void b(struct peer *p, void *arg)
{
	run(p, 0);
}

int main(int argc, char **argv)
{
	static const struct subtest t[] = {
		{ .name = "ompi5_pattern", .a = a, .b = b, .mr_mode = FI_MR_ALLOCATED },
	};
	return run_subtests(argc, argv, t, 1);
}
