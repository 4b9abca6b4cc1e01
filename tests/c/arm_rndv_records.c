/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * arm_rndv_records: capi/arm.c's handling of shm rendezvous records in a
 * lent ring, without Go (the test links arm.c and cq_ring.c themselves;
 * unit/_cgo_export.h stands in for cgo's header). The sending endpoint is
 * this process: a record names buffers of ours, so process_vm_readv
 * reads them as it would a peer's.
 *
 * A well-formed record that the armed receive takes whole must be copied
 * into the receive's buffer (nothing past its length), acknowledged once
 * in the ack ring (cookie, status, length, stamp) and completed (context,
 * flags, length, tag, CQ data, source), and the ring's head published.
 * A record a sender could have written wrong or on purpose (no pieces,
 * too many, a zero-length piece, a piece that wraps the address space or
 * lies outside any mapping, pieces that do not add up to its size, a
 * record running past the ring's end, CMA not allowed, a size over what C
 * copies, more data than the receive holds) must send the read to Go
 * (LNX_ARM_GO) with the ring, the ack ring and the completion ring as they
 * were, and the receive still pending. A record with no receive for it
 * waits (0) while it is the ring's last.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <rdma/fabric.h>
#include <rdma/fi_domain.h>
#include "lnx_capi.h"
#include "lnx_internal.h"
#include "lnx_tp_lend.h"
#include "unit.h"
#include "arm_slot.h"

#define RING_BYTES 4096
#define ACKS	   8
#define RECV_LEN   8192
#define SALT	   0x5a17c0ffee000000ull
#define SRC	   7

struct fixture {
	struct lnx_gate g;
	struct lnx_arm *a;
	struct lnx_cring *cr;
	uint8_t *ring, *ack;
	uint64_t fwd_head, ack_head;
	uint8_t *recv;
	int ctx;
};

/* setup: one lent ring from SRC, empty, and one armed tagged receive of
 * RECV_LEN bytes for tag 0x77 from any source. */
static void setup(struct fixture *f)
{
	memset(&f->g, 0, sizeof(f->g));
	f->a = zalloc(sizeof(*f->a));
	f->cr = zalloc(sizeof(*f->cr));
	f->cr->format = FI_CQ_FORMAT_TAGGED;
	f->ring = zalloc(RING_BYTES);
	f->ack = zalloc(ACKS * LNX_ACK_BYTES);
	f->recv = zalloc(RECV_LEN + 64);
	memset(f->recv, 0xee, RECV_LEN + 64);
	f->fwd_head = f->ack_head = 0;
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
	r->ack = (uintptr_t)f->ack;
	r->ack_mask = ACKS - 1;
	r->ack_head = (uintptr_t)&f->ack_head;
	r->pid = (uint64_t)getpid();
	r->cma = 1;
	unit_arm(a, f->recv, RECV_LEN, &f->ctx, FI_ADDR_UNSPEC, 0x77, 0);
	a->lent = 1;
	f->g.arm = (uintptr_t)a;
}

static void teardown(struct fixture *f)
{
	free(f->a);
	free(f->cr);
	free(f->ring);
	free(f->ack);
	free(f->recv);
}

struct piece {
	uint64_t base, len;
};

/* put_rndv writes a rendezvous record at ring offset off (position off)
 * with the given pieces, size and extra kf bits, stamp last. */
static void put_rndv(struct fixture *f, uint64_t off, const struct piece *p, uint64_t niov,
		     uint64_t size, uint64_t kf_extra)
{
	struct lnx_rec *rec = (struct lnx_rec *)(f->ring + off);
	rec->kf = LNX_REC_RNDV | niov << 8 | kf_extra |
		  (uint64_t)(LNX_HDR_TAGGED | LNX_HDR_DATA) << 32;
	rec->tag = 0x77;
	rec->data = 0xda7a;
	rec->size = size;
	rec->cookie = 0xc00c1e;
	uint64_t *body = (uint64_t *)(f->ring + off + LNX_REC_HDR);
	for (uint64_t i = 0; i < niov && off + LNX_REC_HDR + 16 * (i + 1) <= RING_BYTES; i++) {
		body[2 * i] = p[i].base;
		body[2 * i + 1] = p[i].len;
	}
	__atomic_store_n(&rec->stamp, (off ^ SALT) | 1, __ATOMIC_RELEASE);
}

/* untouched: the read went to Go and left everything as it was. */
static void expect_go(struct fixture *f, int got, const char *what)
{
	CHECK(got == LNX_ARM_GO, "%s: lnx_arm_take returned %d, want LNX_ARM_GO", what, got);
	CHECK(f->a->r[0].head == 0 && f->fwd_head == 0, "%s: ring head moved to %llu", what,
	      (unsigned long long)f->a->r[0].head);
	CHECK(f->a->r[0].ack_tail == 0, "%s: ack tail moved", what);
	for (size_t i = 0; i < ACKS * LNX_ACK_BYTES; i++)
		if (f->ack[i]) {
			CHECK(0, "%s: ack ring written at byte %zu", what, i);
			break;
		}
	CHECK(f->cr->tail == 0, "%s: a completion was queued", what);
	CHECK(f->a->done[0] == 0 && f->a->head == 0, "%s: the receive was completed", what);
	CHECK(f->a->pulls == 0, "%s: counted as pulled", what);
	CHECK(f->a->lock == 0, "%s: arm lock left held", what);
}

static int take(struct fixture *f)
{
	int idle = -1;
	return lnx_arm_take(&f->g, 0, 16, &idle);
}

int main(void)
{
	long page = sysconf(_SC_PAGESIZE);
	/* The sender's data: two pieces, and a page that is not mapped. */
	size_t n1 = 3000, n2 = 2100, size = n1 + n2;
	uint8_t *src = zalloc(n1 + n2);
	for (size_t i = 0; i < n1 + n2; i++)
		src[i] = (uint8_t)(i * 7 + 3);
	uint8_t *hole = mmap(NULL, (size_t)page, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (hole == MAP_FAILED || munmap(hole, (size_t)page)) {
		perror("mmap");
		return 2;
	}
	struct piece good[2] = { { (uintptr_t)src, n1 }, { (uintptr_t)src + n1, n2 } };
	struct fixture f;

	/* A well-formed record the receive takes. */
	setup(&f);
	put_rndv(&f, 0, good, 2, size, 0);
	int got = take(&f);
	uint64_t need = (LNX_REC_HDR + 2 * LNX_REC_IOV + LNX_REC_LINE - 1) & ~(uint64_t)63;
	CHECK(got == 1, "good record: lnx_arm_take returned %d, want 1", got);
	CHECK(memcmp(f.recv, src, size) == 0, "good record: payload differs");
	CHECK(f.recv[size] == 0xee, "good record: byte past the message written");
	const struct lnx_ack *ack = (const struct lnx_ack *)f.ack;
	CHECK(ack->stamp == 1 && ack->cookie == 0xc00c1e && ack->status == LNX_ACK_OK &&
		      ack->n == size,
	      "good record: ack stamp %llu cookie %#llx status %llu n %llu",
	      (unsigned long long)ack->stamp, (unsigned long long)ack->cookie,
	      (unsigned long long)ack->status, (unsigned long long)ack->n);
	CHECK(f.a->r[0].ack_tail == 1, "good record: ack tail %llu",
	      (unsigned long long)f.a->r[0].ack_tail);
	CHECK(f.a->r[0].head == need && f.fwd_head == need,
	      "good record: head %llu published %llu, want %llu",
	      (unsigned long long)f.a->r[0].head, (unsigned long long)f.fwd_head,
	      (unsigned long long)need);
	CHECK(f.cr->tail == 1, "good record: %llu completions", (unsigned long long)f.cr->tail);
	if (f.cr->tail == 1) {
		__typeof__(f.cr->e[0]) *e = &f.cr->e[0];
		CHECK(e->ctx == &f.ctx && e->buf == f.recv && e->len == size && e->tag == 0x77 &&
			      e->data == 0xda7a && e->src == SRC &&
			      e->flags == (FI_RECV | FI_TAGGED | FI_REMOTE_CQ_DATA),
		      "good record: completion ctx %p buf %p len %llu tag %#llx data %#llx "
		      "src %llu flags %#llx",
		      e->ctx, e->buf, (unsigned long long)e->len, (unsigned long long)e->tag,
		      (unsigned long long)e->data, (unsigned long long)e->src,
		      (unsigned long long)e->flags);
	}
	CHECK(f.a->pulls == 1, "good record: %llu pulls counted", (unsigned long long)f.a->pulls);
	teardown(&f);

	/* No receive for it, and nothing behind it: it waits in its ring. */
	setup(&f);
	f.a->s[0].tag = 0x78;
	put_rndv(&f, 0, good, 2, size, 0);
	got = take(&f);
	CHECK(got == 0, "unmatched last record: lnx_arm_take returned %d, want 0", got);
	CHECK(f.a->r[0].head == 0 && f.a->r[0].ack_tail == 0 && f.cr->tail == 0,
	      "unmatched last record: consumed");
	teardown(&f);

	/* What a sender may get wrong. */
	struct {
		const char *what;
		struct piece p[LNX_REC_MAX_IOV + 1];
		uint64_t niov, size, kf, off;
		uint64_t cma, recv_len;
	} bad[] = {
		{ "no pieces", { { (uintptr_t)src, size } }, 0, size, 0, 0, 1, RECV_LEN },
		{ "too many pieces",
		  { { (uintptr_t)src, size } },
		  LNX_REC_MAX_IOV + 1,
		  size,
		  0,
		  0,
		  1,
		  RECV_LEN },
		{ "a zero-length piece",
		  { { (uintptr_t)src, size }, { (uintptr_t)src, 0 } },
		  2,
		  size,
		  0,
		  0,
		  1,
		  RECV_LEN },
		{ "a piece that wraps", { { UINT64_MAX - 10, size } }, 1, size, 0, 0, 1, RECV_LEN },
		{ "a piece beyond user space",
		  { { 1ull << 50, size } },
		  1,
		  size,
		  0,
		  0,
		  1,
		  RECV_LEN },
		{ "an unmapped piece", { { (uintptr_t)hole, 100 } }, 1, 100, 0, 0, 1, RECV_LEN },
		{ "pieces short of the size",
		  { { (uintptr_t)src, n1 } },
		  1,
		  size,
		  0,
		  0,
		  1,
		  RECV_LEN },
		{ "pieces over the size",
		  { { (uintptr_t)src, n1 }, { (uintptr_t)src + n1, n2 } },
		  2,
		  n1,
		  0,
		  0,
		  1,
		  RECV_LEN },
		{ "a zero size", { { (uintptr_t)src, 0 } }, 1, 0, 0, 0, 1, RECV_LEN },
		{ "past the ring's end",
		  { { (uintptr_t)src, n1 }, { (uintptr_t)src + n1, n2 } },
		  2,
		  size,
		  0,
		  RING_BYTES - LNX_REC_LINE,
		  1,
		  RECV_LEN },
		{ "CMA refused by the sender",
		  { { (uintptr_t)src, size } },
		  1,
		  size,
		  LNX_REC_NOCMA,
		  0,
		  1,
		  RECV_LEN },
		{ "CMA not allowed here",
		  { { (uintptr_t)src, size } },
		  1,
		  size,
		  0,
		  0,
		  0,
		  RECV_LEN },
		{ "more than the receive holds",
		  { { (uintptr_t)src, size } },
		  1,
		  size,
		  0,
		  0,
		  1,
		  size - 1 },
		{ "over C's size limit",
		  { { (uintptr_t)src, (4ull << 20) + 1 } },
		  1,
		  (4ull << 20) + 1,
		  0,
		  0,
		  1,
		  RECV_LEN },
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		setup(&f);
		f.a->r[0].cma = bad[i].cma;
		f.a->s[0].len = bad[i].recv_len;
		if (bad[i].off) {
			/* The record sits at the ring's last line: head there. */
			f.a->r[0].head = bad[i].off;
			f.fwd_head = 0;
		}
		put_rndv(&f, bad[i].off, bad[i].p, bad[i].niov, bad[i].size, bad[i].kf);
		got = take(&f);
		if (bad[i].off) {
			CHECK(got == LNX_ARM_GO && f.a->r[0].head == bad[i].off &&
				      f.fwd_head == 0 && f.a->r[0].ack_tail == 0 && f.cr->tail == 0,
			      "%s: returned %d, head %llu", bad[i].what, got,
			      (unsigned long long)f.a->r[0].head);
		} else {
			expect_go(&f, got, bad[i].what);
		}
		teardown(&f);
	}

	/* A full ack ring (the sender has not consumed any): Go's. */
	setup(&f);
	f.a->r[0].ack_tail = ACKS;
	put_rndv(&f, 0, good, 2, size, 0);
	got = take(&f);
	CHECK(got == LNX_ARM_GO && f.a->r[0].head == 0 && f.a->r[0].ack_tail == ACKS &&
		      f.cr->tail == 0,
	      "full ack ring: returned %d", got);
	teardown(&f);

	free(src);
	if (unit_failures) {
		fprintf(stderr, "arm_rndv_records: %d failures\n", unit_failures);
		return 1;
	}
	printf("arm_rndv_records: ok\n");
	return 0;
}
