/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * pep_free_entry: the peer-API owner's free_entry (peers/peerep/pep.c,
 * compiled without Go) as libfabric 2.1's rxm calls it when it closes a
 * connection (rxm_close_conn): on the head of its list of partly received
 * messages' entries, again and again until that list is empty, leaving
 * the unlinking to the owner. Entries get there through the owner's own
 * get_tag, like the core's.
 *
 *  - the loop ends, after one call per entry (an owner that frees without
 *    unlinking made it call through freed memory: a crash in 2.1 rxm);
 *  - a receive bound to an entry (Go matched it) fails with
 *    FI_ECONNABORTED, with its id, FI_RECV | FI_TAGGED and its tag: the
 *    core wrote no completion for it;
 *  - an entry Go holds as unexpected stays valid until Go starts it, and
 *    that start fails with -FI_ECONNABORTED without calling the core;
 *  - an entry whose receive completed normally (its completion written
 *    through the peer CQ) and is then freed adds no completion;
 *  - an entry Go discards (FI_DISCARD, or a sender gone) is freed by the
 *    owner once the core's discard_tag returns: the cores do not call
 *    free_entry for it (it leaked before). free is wrapped to see that.
 *  - entries and contexts given back are kept for the next message (up
 *    to lnx_pep.keep) and come back with nothing of the one before.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "lnx_pep.h"
#include "unit.h"

/* Go's side, as the test needs it: get_* finds no receive (the entry is
 * queued with the owner, or bound by the test afterwards). */
int lnx_go_close(uintptr_t h)
{
	(void)h;
	return 0;
}
int lnxPepGet(uintptr_t h, int tagged, uint64_t addr, size_t size, uint64_t tag,
	      struct lnx_pentry *e)
{
	(void)h, (void)tagged, (void)addr, (void)size, (void)tag, (void)e;
	return -1;
}
int lnxPepQueued(uintptr_t h, struct lnx_pentry *e)
{
	(void)h, (void)e;
	return 0;
}
void lnxPepDrain(uintptr_t h)
{
	(void)h;
	fprintf(stderr, "FAIL: completion batch drained\n");
	exit(1);
}

/* free, wrapped (-Wl,--wrap=free): the last pointer pep.c freed. */
void __real_free(void *);
static void *last_freed;
void __wrap_free(void *ptr)
{
	if (ptr)
		last_freed = ptr;
	__real_free(ptr);
}

/* The core's discard_tag: lets go of its part, never calls free_entry. */
static int discards;
static int core_discard(struct lnx_pentry *e)
{
	(void)e;
	discards++;
	return 0;
}

/* The core's list of entries: a dlist through the entry's next/prev. */
struct dl {
	struct dl *next, *prev;
};

static void link_tail(struct dl *head, struct lnx_pentry *e)
{
	struct dl *n = (struct dl *)e;
	n->next = head;
	n->prev = head->prev;
	head->prev->next = n;
	head->prev = n;
}

static struct lnx_pentry *get_tag(struct lnx_pep *p, uint64_t tag)
{
	struct lnx_peer_srx_owner_v2 *o = (void *)p->srx.owner_ops;
	struct lnx_peer_match_attr a = { .addr = 3, .msg_size = 65536, .tag = tag };
	struct lnx_pentry *e = NULL;
	int (*get)(uintptr_t, struct lnx_peer_match_attr *, struct lnx_pentry **) =
		(void *)o->get_tag;
	int r = get((uintptr_t)&p->srx, &a, &e);
	CHECK(r == -FI_ENOENT && e, "get_tag: %d", r);
	return e;
}

/* Go's Entry.Set: the receive's buffer into the entry's iovec, then its
 * context (id). */
static int set_entry(struct lnx_pentry *e, void *buf, size_t len, uint64_t id)
{
	e->iov[0].iov_base = buf;
	e->iov[0].iov_len = len;
	return lnx_pep_entry_bind(e, 1, id);
}

static void free_entry(struct lnx_pentry *e)
{
	struct lnx_peer_srx *srx = (void *)e->pe.srx;
	struct lnx_peer_srx_owner_v2 *o = (void *)srx->owner_ops;
	((void (*)(struct lnx_pentry *))o->free_entry)(e);
}

int main(void)
{
	struct lnx_pep *p = calloc(1, sizeof(*p));
	lnx_pep_init_owner(p);
	struct lnx_peer_srx_owner_v2 *o = (void *)p->srx.owner_ops;
	struct lnx_peer_cq_owner *co = (void *)p->pcq.owner_ops;
	char buf[3][64];
	size_t len = sizeof(buf[0]);

	/* bound: Go matched it to receive 7. queued: Go holds it. done: a
	 * receive completed normally before its entry is freed. */
	struct lnx_pentry *bound = get_tag(p, 0x71), *queued = get_tag(p, 0x72),
			  *done = get_tag(p, 0x73);
	CHECK(set_entry(bound, buf[0], len, 7) == 0, "set_entry bound");
	((int (*)(struct lnx_pentry *))o->queue_tag)(queued);
	CHECK(set_entry(done, buf[2], len, 9) == 0, "set_entry done");
	ssize_t (*write)(struct lnx_peer_cq *, void *, uint64_t, size_t, void *, uint64_t, uint64_t,
			 uint64_t) = (void *)co->write;
	write(&p->pcq, (void *)done->pe.context, FI_RECV | FI_TAGGED, 64, NULL, 0, 0x73, 3);
	CHECK(p->ncomp == 1 && p->comps[0].id == 9 && p->comps[0].err == 0,
	      "normal completion: %u comps", p->ncomp);

	/* rxm_close_conn's loop over its list. */
	struct dl head = { &head, &head };
	link_tail(&head, bound);
	link_tail(&head, queued);
	int calls = 0;
	while (head.next != &head && calls < 10) {
		free_entry((struct lnx_pentry *)head.next);
		calls++;
	}
	CHECK(head.next == &head && head.prev == &head && calls == 2,
	      "the core's list is not emptied by one free_entry per entry (%d calls)", calls);
	CHECK(p->ncomp == 2, "%u completions after the loop, want 2", p->ncomp);
	struct lnx_pcomp *c = &p->comps[1];
	CHECK(c->id == 7 && c->err == FI_ECONNABORTED && c->flags == (FI_RECV | FI_TAGGED) &&
		      c->tag == 0x71,
	      "bound receive's completion: id %llu err %d flags %#llx tag %#llx",
	      (unsigned long long)c->id, c->err, (unsigned long long)c->flags,
	      (unsigned long long)c->tag);

	/* Go starts the message it held: it fails, and the core (which has no
	 * peer ops here) is not called. */
	CHECK(queued->dropped == 1 && queued->pe.tag == 0x72, "held entry not kept");
	CHECK(set_entry(queued, buf[1], len, 8) == 0, "set_entry queued");
	CHECK(lnx_pep_start(queued, 1) == -FI_ECONNABORTED, "start of a dropped entry");

	/* The normally completed one: freed with no completion added. */
	free_entry(done);
	CHECK(p->ncomp == 2, "%u completions after a normal free_entry", p->ncomp);

	/* A queued entry Go discards: the core's discard_tag once, then the
	 * owner frees the entry (no completion: no receive took it). */
	struct lnx_peer_srx_peer peer = { .size = sizeof(peer),
					  .discard_tag = (uintptr_t)core_discard,
					  .discard_msg = (uintptr_t)core_discard };
	p->srx.peer_ops = (uintptr_t)&peer;
	struct lnx_pentry *gone = get_tag(p, 0x74);
	((int (*)(struct lnx_pentry *))o->queue_tag)(gone);
	last_freed = NULL;
	CHECK(lnx_pep_discard(gone, 1) == 0, "discard");
	CHECK(discards == 1, "core's discard_tag called %d times", discards);
	CHECK(last_freed == gone, "the discarded entry was not freed");
	CHECK(p->ncomp == 2, "%u completions after a discard", p->ncomp);

	/* Kept for the next message (lnx_pep.keep: 64 from lnx_pep_open, 0
	 * above): the discarded entry and its context come back from the next
	 * get_tag and bind, with nothing of the message before. */
	p->keep = 2;
	struct lnx_pentry *k = get_tag(p, 0x75);
	CHECK(set_entry(k, buf[0], len, 11) == 0, "set_entry kept");
	void *kc = (void *)k->pe.context;
	((int (*)(struct lnx_pentry *))o->queue_tag)(k);
	k->pe.peer_context = 0x5a5a;
	CHECK(lnx_pep_discard(k, 1) == 0, "discard kept");
	CHECK(p->n_free_e == 1 && p->n_free_c == 1, "kept %u entries and %u contexts, want 1 and 1",
	      p->n_free_e, p->n_free_c);
	struct lnx_pentry *k2 = get_tag(p, 0x76);
	CHECK(k2 == k && p->n_free_e == 0, "the kept entry was not taken again");
	CHECK(k2->pe.tag == 0x76 && k2->pe.flags == (FI_RECV | FI_TAGGED) &&
		      k2->pe.msg_size == 65536 && !k2->pe.context && !k2->pe.count &&
		      !k2->pe.peer_context && !k2->queued && !k2->dropped && !k2->stash_next,
	      "a kept entry carries its last message's state");
	CHECK(set_entry(k2, buf[1], len, 12) == 0, "set_entry reused");
	struct lnx_pctx *c2 = (void *)k2->pe.context;
	CHECK(c2 == kc && c2->id == 12 && c2->entry == k2 && !c2->copy && !c2->c_recv &&
		      !c2->c_send && !c2->s_next,
	      "a kept context carries its last operation's state");
	write(&p->pcq, c2, FI_RECV | FI_TAGGED, 64, NULL, 0, 0x76, 3);
	CHECK(p->ncomp == 3 && p->comps[2].id == 12 && p->comps[2].err == 0,
	      "reused entry's completion: %u comps", p->ncomp);
	free_entry(k2);
	CHECK(p->n_free_e == 1 && p->n_free_c == 1, "kept %u entries and %u contexts after reuse",
	      p->n_free_e, p->n_free_c);
	/* More than keep given back: the rest are freed. */
	struct lnx_pentry *x[4];
	for (int i = 0; i < 4; i++)
		x[i] = get_tag(p, 0x80 + (uint64_t)i);
	for (int i = 0; i < 4; i++)
		free_entry(x[i]);
	CHECK(p->n_free_e == 2, "kept %u entries, want at most keep (2)", p->n_free_e);

	free(p->free_e->stash_next);
	free(p->free_e);
	free(p->free_c);
	free(p);
	if (unit_failures)
		return 1;
	printf("pep_free_entry: ok\n");
	return 0;
}
