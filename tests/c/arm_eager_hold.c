/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * arm_eager_hold: capi/arm.c's eager records that no armed receive takes
 * yet, without Go (the test links arm.c and cq_ring.c themselves, as
 * arm_rndv_records does).
 *
 * Eager records that no receive takes, with nothing behind them that one
 * does, wait in their ring (lnx_arm_take returns 0, nothing consumed or
 * completed) so that a receive posted in C later takes them in C, in ring
 * order, with their data, length, tag, CQ data and source: in an MPI
 * window of both ranks the peer's first messages, or the acknowledgement
 * ending the window, often arrive before their receives are posted, and
 * sending them to Go made them unexpected there and kept the endpoint
 * from being lent until their receives came. A record behind them that an
 * armed receive takes, a pad or other record behind them, a truncation,
 * or unmatched records using more than an eighth of the ring still send the read
 * to Go (LNX_ARM_GO) with everything untouched.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <rdma/fabric.h>
#include <rdma/fi_domain.h>
#include "lnx_capi.h"
#include "lnx_internal.h"
#include "lnx_tp_lend.h"
#include "unit.h"

#define RING_BYTES 4096
#define SALT	   0x5a17c0ffee000000ull
#define SRC	   7
#define RECV_LEN   64

struct fixture {
	struct lnx_gate g;
	struct lnx_arm *a;
	struct lnx_cring *cr;
	uint8_t *ring;
	uint64_t fwd_head, tail; /* tail: where the next record goes */
	uint8_t recv[4][RECV_LEN];
	int ctx[4];
};

#include "arm_fixture.h"

/* setup: one lent ring from SRC, empty, and one armed tagged receive for
 * tag 0x77 from any source (slot 0). */
static void setup(struct fixture *f)
{
	memset(f, 0, sizeof(*f));
	f->a = zalloc(sizeof(*f->a));
	f->cr = zalloc(sizeof(*f->cr));
	f->cr->format = FI_CQ_FORMAT_TAGGED;
	f->ring = zalloc(RING_BYTES);
	memset(f->recv, 0xee, sizeof(f->recv));
	struct lnx_arm *a = f->a;
	a->nrings = 1;
	a->cring = f->cr;
	struct lnx_arm_ring *r = &a->r[0];
	r->ring = (uintptr_t)f->ring;
	r->mask = RING_BYTES - 1;
	r->size = RING_BYTES;
	r->salt = SALT;
	r->eager_max = 1024;
	r->fwd_head = (uintptr_t)&f->fwd_head;
	r->src = SRC;
	a->lent = 1;
	a->rearm = 1;
	f->g.arm = (uintptr_t)a;
	unit_arm(a, f->recv[0], RECV_LEN, &f->ctx[0], FI_ADDR_UNSPEC, 0x77, 0);
}

static void teardown(struct fixture *f)
{
	free(f->a);
	free(f->cr);
	free(f->ring);
}

/* put writes a tagged eager record with CQ data at the ring's tail, len
 * bytes of fill, kind kind (LNX_REC_EAGER, or another), stamp last. */
static void put(struct fixture *f, uint64_t tag, uint64_t data, uint64_t len, int fill,
		uint64_t kind)
{
	uint64_t need = lnx_rec_len(len), off = f->tail & (RING_BYTES - 1);
	struct lnx_rec *rec = (struct lnx_rec *)(f->ring + off);
	rec->kf = kind | (uint64_t)(LNX_HDR_TAGGED | LNX_HDR_DATA) << 32;
	rec->tag = tag;
	rec->data = data;
	rec->size = len;
	memset(f->ring + off + LNX_REC_HDR, fill, len);
	__atomic_store_n(&rec->stamp, (f->tail ^ SALT) | 1, __ATOMIC_RELEASE);
	f->tail += need;
}

static int take(struct fixture *f)
{
	int idle = -1;
	return lnx_arm_take(&f->g, 0, 16, &idle);
}

/* untouched: nothing consumed, completed or left locked. */
static void untouched(struct fixture *f, const char *what)
{
	CHECK(f->a->r[0].head == 0 && f->fwd_head == 0, "%s: ring head moved to %llu", what,
	      (unsigned long long)f->a->r[0].head);
	CHECK(f->cr->tail == 0, "%s: %llu completions queued", what,
	      (unsigned long long)f->cr->tail);
	CHECK(f->a->done_msgs[0] == 0, "%s: a receive was completed", what);
	CHECK(f->a->lock == 0, "%s: arm lock left held", what);
}

int main(void)
{
	struct fixture f;
	int got;

	/* Two records no receive takes, then their receives posted: C
	 * completes them, in ring order. */
	setup(&f);
	put(&f, 0x78, 0xd1, 8, 0x11, LNX_REC_EAGER);
	put(&f, 0x78, 0xd2, 5, 0x22, LNX_REC_EAGER);
	got = take(&f);
	CHECK(got == 0, "unmatched: lnx_arm_take returned %d, want 0 (they wait)", got);
	untouched(&f, "unmatched");
	post(&f, 1, 0x78);
	post(&f, 2, 0x78);
	got = take(&f);
	CHECK(got == 2, "posted later: lnx_arm_take returned %d, want 2", got);
	completed(&f, 0, 1, 0x78, 0xd1, 8, 0x11, "posted later");
	completed(&f, 1, 2, 0x78, 0xd2, 5, 0x22, "posted later");
	CHECK(f.a->r[0].head == f.tail && f.fwd_head == f.tail,
	      "posted later: head %llu published %llu, want %llu",
	      (unsigned long long)f.a->r[0].head, (unsigned long long)f.fwd_head,
	      (unsigned long long)f.tail);
	CHECK(f.a->done_msgs[0] == 2, "posted later: %llu counted received in C",
	      (unsigned long long)f.a->done_msgs[0]);
	/* The receive for 0x77 is still armed and takes the next. */
	put(&f, 0x77, 0xd3, 3, 0x33, LNX_REC_EAGER);
	got = take(&f);
	CHECK(got == 1, "the first receive: lnx_arm_take returned %d, want 1", got);
	completed(&f, 2, 0, 0x77, 0xd3, 3, 0x33, "the first receive");
	teardown(&f);

	/* An unmatched record, then one the armed receive takes: Go delivers
	 * both, in order. */
	setup(&f);
	put(&f, 0x78, 0xd1, 8, 0x11, LNX_REC_EAGER);
	put(&f, 0x77, 0xd2, 8, 0x22, LNX_REC_EAGER);
	got = take(&f);
	CHECK(got == LNX_ARM_GO, "a taken record behind: lnx_arm_take returned %d, want GO", got);
	untouched(&f, "a taken record behind");
	teardown(&f);

	/* Two unmatched; a receive posted for the second only: Go's. */
	setup(&f);
	put(&f, 0x78, 0xd1, 8, 0x11, LNX_REC_EAGER);
	put(&f, 0x79, 0xd2, 8, 0x22, LNX_REC_EAGER);
	CHECK(take(&f) == 0, "two unmatched: not waiting");
	post(&f, 1, 0x79);
	got = take(&f);
	CHECK(got == LNX_ARM_GO, "the second taken: lnx_arm_take returned %d, want GO", got);
	untouched(&f, "the second taken");
	teardown(&f);

	/* An unmatched record, then a pad record: Go's. */
	setup(&f);
	put(&f, 0x78, 0xd1, 8, 0x11, LNX_REC_EAGER);
	put(&f, 0, 0, 0, 0, 1 /* shm's pad record */);
	got = take(&f);
	CHECK(got == LNX_ARM_GO, "a pad behind: lnx_arm_take returned %d, want GO", got);
	untouched(&f, "a pad behind");
	teardown(&f);

	/* Unmatched records over an eighth of the ring: Go's, so that the
	 * sender is not stopped by records waiting for receives. */
	setup(&f);
	while (f.tail <= RING_BYTES / 8)
		put(&f, 0x78, 0xd1, 100, 0x11, LNX_REC_EAGER);
	got = take(&f);
	CHECK(got == LNX_ARM_GO, "over an eighth of the ring: lnx_arm_take returned %d, want GO",
	      got);
	untouched(&f, "over an eighth of the ring");
	teardown(&f);

	/* A receive that takes it but is too short (a truncation): Go's. */
	setup(&f);
	put(&f, 0x77, 0xd1, RECV_LEN + 1, 0x11, LNX_REC_EAGER);
	got = take(&f);
	CHECK(got == LNX_ARM_GO, "a truncation: lnx_arm_take returned %d, want GO", got);
	untouched(&f, "a truncation");
	teardown(&f);

	/* A pad record at the ring's head (the sender wrapped): C skips to
	 * the ring's start, publishes the new head and takes the record
	 * there (a pad went to Go before). */
	setup(&f);
	f.a->r[0].head = f.fwd_head = f.tail = RING_BYTES - 128;
	put(&f, 0, 0, 0, 0, LNX_REC_PAD);
	f.tail = RING_BYTES;
	put(&f, 0x77, 0xd9, 8, 0x33, LNX_REC_EAGER);
	got = take(&f);
	CHECK(got == 1, "a pad at the head: lnx_arm_take returned %d, want 1", got);
	CHECK(f.a->r[0].head == RING_BYTES + lnx_rec_len(8) && f.fwd_head == f.a->r[0].head,
	      "a pad at the head: head %llu published %llu", (unsigned long long)f.a->r[0].head,
	      (unsigned long long)f.fwd_head);
	CHECK(f.recv[0][0] == 0x33 && f.recv[0][7] == 0x33 && f.recv[0][8] == 0xee,
	      "a pad at the head: receive data");
	teardown(&f);

	if (unit_failures)
		return 1;
	printf("arm_eager_hold: ok\n");
	return 0;
}
