/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * pep_lent: a peer-API core lent to lnx's C layer (peers/peerep/pep.c and
 * capi/arm.c compiled without Go; issue #20). lnx_pep_take reads the
 * core's CQ, here a fake whose read makes the calls libfabric 2.1's shm
 * makes for an eager message: get_tag, the copy into the entry's iovec,
 * write() through the peer CQ, free_entry.
 *
 *  - C matches a message to the earliest armed receive that takes it (tag,
 *    ignore bits, the sender's lnx fi_addr from the core's through
 *    lnx_pep.src), and its completion lands in the CQ's ring with that
 *    receive's context and buffer, the message's length, tag, CQ data and
 *    source; the payload in the receive's buffer; nothing for Go.
 *  - a message past the core's inject size is matched the same way.
 *  - a message C cannot match as Go would (a sender C does not know, too
 *    large for the receive, no receive for it)
 *    is left to Go (-FI_ENOENT, the core queues it), and so is every one
 *    after it, even one an armed receive takes: Go sees them in arrival
 *    order (lnx_pep_stash_pop) before C takes anything more.
 *  - a completion of a receive C matched that comes after C's poll goes
 *    to Go with what Go needs to write it (context, buffer, source); the
 *    receive counts as pending in the core until then.
 *  - C counts its polls of the core, and the messages read and
 *    completions written inside them (not those after), for Go to keep
 *    the core hot or let it cool (lnx/core_peer.go takeBack).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "lnx_capi.h"
#include "lnx_internal.h"
#include "lnx_pep.h"
#include "lnx_pep_lend.h"
#include "unit.h"
#include "arm_slot.h"

int lnx_go_close(uintptr_t h)
{
	(void)h;
	return 0;
}
int lnxPepGet(uintptr_t h, int tagged, uint64_t addr, size_t size, uint64_t tag,
	      struct lnx_pentry *e)
{
	(void)h, (void)tagged, (void)addr, (void)size, (void)tag, (void)e;
	fprintf(stderr, "FAIL: get_* entered Go while lent\n");
	exit(1);
}
int lnxPepQueued(uintptr_t h, struct lnx_pentry *e)
{
	(void)h, (void)e;
	fprintf(stderr, "FAIL: queue_* entered Go while lent\n");
	exit(1);
}
void lnxPepDrain(uintptr_t h)
{
	(void)h;
	fprintf(stderr, "FAIL: completion batch drained\n");
	exit(1);
}

/* The messages the fake core reads in its next fi_cq_read. */
struct msg {
	uint64_t addr, tag, data, size;
	const char *payload;
	int got;	      /* get_tag's return */
	struct lnx_pentry *e; /* its entry */
	int late;	      /* matched: write() only after the poll */
};
static struct lnx_pep *g_p;
static struct msg *g_msgs;
static int g_n;

static ssize_t fake_read(struct fid_cq *cq, void *buf, size_t count)
{
	struct lnx_peer_srx_owner_v2 *o = (void *)g_p->srx.owner_ops;
	struct lnx_peer_cq_owner *co = (void *)g_p->pcq.owner_ops;
	int (*get)(uintptr_t, struct lnx_peer_match_attr *, struct lnx_pentry **) =
		(void *)o->get_tag;
	ssize_t (*write)(struct lnx_peer_cq *, void *, uint64_t, size_t, void *, uint64_t, uint64_t,
			 uint64_t) = (void *)co->write;
	(void)cq, (void)buf, (void)count;
	for (int i = 0; i < g_n; i++) {
		struct msg *m = &g_msgs[i];
		struct lnx_peer_match_attr a = { .addr = m->addr,
						 .msg_size = m->size,
						 .tag = m->tag };
		m->got = get((uintptr_t)&g_p->srx, &a, &m->e);
		if (m->got) {
			((int (*)(struct lnx_pentry *))o->queue_tag)(m->e);
			continue;
		}
		CHECK(m->e->pe.count == 1 && m->e->iov[0].iov_len >= m->size, "entry iov");
		memcpy(m->e->iov[0].iov_base, m->payload, m->size);
		if (m->late)
			continue;
		write(&g_p->pcq, (void *)m->e->pe.context, FI_RECV | FI_TAGGED | FI_REMOTE_CQ_DATA,
		      m->size, NULL, m->data, m->tag, m->addr);
		((void (*)(struct lnx_pentry *))o->free_entry)(m->e);
	}
	return -FI_EAGAIN;
}

static struct fi_ops_cq fake_ops = { .size = sizeof(struct fi_ops_cq), .read = fake_read };

static int take(struct lnx_arm *a, struct msg *m, int n, int *go)
{
	g_msgs = m, g_n = n;
	*go = 0;
	return lnx_pep_take(g_p, a, 1, &lnx_arm_pep_ops, go);
}

int main(void)
{
	struct lnx_pep *p = calloc(1, sizeof(*p));
	struct fid_cq fake = { .ops = &fake_ops };
	lnx_pep_init_owner(p);
	p->cq = &fake;
	p->inject = 4096;
	p->stash_end = &p->stash;
	for (int i = 0; i < LNX_PEP_SRCS; i++)
		p->src[i] = LNX_PEP_NOSRC;
	p->src[1] = 5; /* core fi_addr 1 is lnx's 5, 2 is lnx's 6 */
	p->src[2] = 6;
	g_p = p;
	struct lnx_arm *a = zalloc(sizeof(*a));
	a->cring = zalloc(sizeof(*a->cring));
	a->cring->format = FI_CQ_FORMAT_TAGGED;
	char b[5][64];
	int ctx[5], go;
	memset(b, 0, sizeof(b));

	/* Any source tag 0x10; from 5 alone tag 0x2X (ignore 0xf). */
	unit_arm(a, b[0], 64, &ctx[0], FI_ADDR_UNSPEC, 0x10, 0);
	unit_arm(a, b[1], 64, &ctx[1], 5, 0x20, 0xf);
	/* From core fi_addr 1 (lnx's 5), tag 0x23: the directed receive
	 * takes it (the any-source one's tag differs). */
	struct msg m1[] = {
		{ .addr = 1, .tag = 0x23, .data = 0xd1, .size = 8, .payload = "abcdefgh" }
	};
	int n = take(a, m1, 1, &go);
	CHECK(n == 1 && go == 0 && m1[0].got == 0, "matched: %d done, go %d, get %d", n, go,
	      m1[0].got);
	CHECK(a->cring->tail - a->cring->head == 1, "ring holds %llu",
	      (unsigned long long)(a->cring->tail - a->cring->head));
	typeof(a->cring->e[0]) *x = &a->cring->e[a->cring->head % LNX_CRING];
	CHECK(x->ctx == &ctx[1] && x->buf == b[1] && x->len == 8 && x->tag == 0x23 &&
		      x->data == 0xd1 && x->src == 5 &&
		      x->flags == (FI_RECV | FI_TAGGED | FI_REMOTE_CQ_DATA),
	      "completion: ctx %p len %llu tag %#llx data %#llx src %llu flags %#llx", x->ctx,
	      (unsigned long long)x->len, (unsigned long long)x->tag, (unsigned long long)x->data,
	      (unsigned long long)x->src, (unsigned long long)x->flags);
	CHECK(!memcmp(b[1], "abcdefgh", 8) && b[1][8] == 0, "payload");
	CHECK(a->done[1] == 1 && a->done[0] == 0 && a->head == 0 && a->done_msgs[1] == 1,
	      "slots: done %d %d head %llu", a->done[0], a->done[1], (unsigned long long)a->head);
	CHECK(p->ncomp == 0 && !lnx_pep_held(p), "left for Go: %u comps", p->ncomp);
	a->cring->head = a->cring->tail;
	CHECK(p->c_reads == 1 && p->c_events == 2, "after a message: %llu polls, %llu events",
	      (unsigned long long)p->c_reads, (unsigned long long)p->c_events);
	n = take(a, NULL, 0, &go);
	CHECK(n == 0 && go == 0 && p->c_reads == 2 && p->c_events == 2,
	      "an idle poll: %d done, go %d, %llu polls, %llu events", n, go,
	      (unsigned long long)p->c_reads, (unsigned long long)p->c_events);

	/* Too large for the receive (a truncation: Go's), then one the armed
	 * receive takes: both Go's, in order; the receive stays armed. */
	unit_arm(a, b[2], 16, &ctx[2], FI_ADDR_UNSPEC, 0x30, 0);
	struct msg m2[] = {
		{ .addr = 1,
		  .tag = 0x30,
		  .size = 32,
		  .payload = "0123456789abcdef0123456789abcdef" },
		{ .addr = 2, .tag = 0x10, .size = 4, .payload = "wxyz" },
	};
	n = take(a, m2, 2, &go);
	CHECK(n == 0 && go == 1 && m2[0].got == -FI_ENOENT && m2[1].got == -FI_ENOENT,
	      "left to Go: %d done, go %d, get %d %d", n, go, m2[0].got, m2[1].got);
	CHECK(a->done[0] == 0 && a->done[2] == 0 && a->cring->tail == a->cring->head,
	      "an armed receive was taken");
	CHECK(lnx_pep_held(p), "nothing held for Go");
	/* Held: the next poll leaves everything to Go, the core unread. */
	struct msg m3[] = { { .addr = 1, .tag = 0x10, .size = 1, .payload = "q" } };
	n = take(a, m3, 1, &go);
	CHECK(n == 0 && go == 1 && m3[0].e == NULL, "polled while held");
	int tagged = 0;
	struct lnx_pentry *e1 = lnx_pep_stash_pop(p, &tagged);
	CHECK(e1 == m2[0].e && tagged == 1 && e1->queued, "first left to Go");
	struct lnx_pentry *e2 = lnx_pep_stash_pop(p, &tagged);
	CHECK(e2 == m2[1].e && e2->pe.addr == 2 && e2->pe.tag == 0x10, "second left to Go");
	CHECK(!lnx_pep_stash_pop(p, &tagged) && !lnx_pep_held(p), "more left to Go");
	free(e1);
	free(e2);

	/* A sender C does not know, one past the inject size: Go's. */
	struct msg m4[] = { { .addr = 3, .tag = 0x10, .size = 1, .payload = "r" } };
	n = take(a, m4, 1, &go);
	CHECK(n == 0 && go == 1 && m4[0].got == -FI_ENOENT, "unknown sender");
	free(lnx_pep_stash_pop(p, &tagged));
	/* Past the core's inject size (shm's CMA copy, rxm's rendezvous):
	 * matched in C all the same, never queued for a start through Go. */
	p->inject = 8;
	unit_arm(a, b[3], 64, &ctx[3], FI_ADDR_UNSPEC, 0x50, 0);
	struct msg m5[] = {
		{ .addr = 1, .tag = 0x50, .data = 9, .size = 9, .payload = "123456789" }
	};
	n = take(a, m5, 1, &go);
	CHECK(n == 1 && go == 0 && m5[0].got == 0 && a->done[3] == 1 && p->c_pending == 0,
	      "past the inject size: %d done, go %d, get %d, pending %u", n, go, m5[0].got,
	      p->c_pending);
	x = &a->cring->e[a->cring->head % LNX_CRING];
	CHECK(a->cring->tail - a->cring->head == 1 && x->ctx == &ctx[3] && x->buf == b[3] &&
		      x->len == 9 && x->tag == 0x50 && x->data == 9 && x->src == 5,
	      "past the inject size: completion ctx %p len %llu", x->ctx,
	      (unsigned long long)x->len);
	CHECK(!memcmp(b[3], "123456789", 9) && b[3][9] == 0, "past the inject size: payload");
	a->cring->head = a->cring->tail;

	/* Matched in C past the inject size, completed after the poll (a
	 * rendezvous read): pending meanwhile, then Go writes it. */
	p->inject = 2;
	struct msg m6[] = {
		{ .addr = 2, .tag = 0x10, .data = 7, .size = 3, .payload = "xyz", .late = 1 }
	};
	n = take(a, m6, 1, &go);
	CHECK(n == 0 && go == 0 && m6[0].got == 0 && a->done[0] == 1 && a->head == 2 &&
		      p->c_pending == 1,
	      "late: %d done, go %d, get %d, pending %u", n, go, m6[0].got, p->c_pending);
	p->inject = 4096;
	uint64_t events = p->c_events;
	struct lnx_peer_cq_owner *co = (void *)p->pcq.owner_ops;
	((ssize_t(*)(struct lnx_peer_cq *, void *, uint64_t, size_t, void *, uint64_t, uint64_t,
		     uint64_t))co->write)(&p->pcq, (void *)m6[0].e->pe.context,
					  FI_RECV | FI_TAGGED | FI_REMOTE_CQ_DATA, 3, NULL, 7, 0x10,
					  2);
	struct lnx_pcomp *c = &p->comps[0];
	CHECK(p->ncomp == 1 && c->c_recv == 1 && c->c_ctx == (uintptr_t)&ctx[0] &&
		      c->c_buf == (uintptr_t)b[0] && c->c_len == 64 && c->src == 6 && c->len == 3 &&
		      c->data == 7 && c->tag == 0x10 && c->err == 0,
	      "late completion for Go: %u comps, c_recv %d src %llu", p->ncomp, c->c_recv,
	      (unsigned long long)c->src);
	CHECK(!memcmp(b[0], "xyz", 3), "late payload");
	CHECK(p->c_pending == 0, "still pending after its completion: %u", p->c_pending);
	CHECK(p->c_events == events, "a completion after the poll counted as C's: %llu events",
	      (unsigned long long)p->c_events);
	free(m6[0].e);

	free(a->cring);
	free(a);
	free(p);
	if (unit_failures)
		return 1;
	printf("pep_lent: ok\n");
	return 0;
}
