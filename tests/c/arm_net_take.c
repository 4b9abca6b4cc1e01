/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * arm_net_take: capi/arm.c's reads of a lent network transport, without
 * Go (the test links arm.c and cq_ring.c, and stands in for peers/ofi/tp.c's
 * lent-transport entry points with a core that counts its reads).
 *
 * A read of the lnx CQ that finds one message in the lent core completes
 * its armed receive (data, length, tag, CQ data, source) having read the
 * core once: it does not read the core again (another run of its progress,
 * and a repost) between the message and its completion reaching the
 * caller, even when the caller asks for many completions. Messages that
 * arrive one per core read are completed one per lnx read, in order. A
 * read that finds the core empty answers idle from the gate itself.
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

#define SRC	 9
#define RECV_LEN 64
#define MSGS	 4

/* The fake core: messages queued in it, each found by one peek. */
static struct {
	int peeks, consumed, stashed;
	int n, next;
	struct {
		uint64_t tag, data, len;
		uint8_t payload[RECV_LEN];
	} q[MSGS];
} core;

int lnx_tp_peek(void *tp)
{
	core.peeks++;
	if (core.stashed)
		return core.stashed;
	if (core.next < core.n)
		core.stashed = 1;
	return core.stashed;
}

int lnx_tp_look(void *tp, struct lnx_tp_msg *m)
{
	if (core.stashed != 1)
		return 0;
	m->flags = LNX_HDR_TAGGED | LNX_HDR_DATA;
	m->tag = core.q[core.next].tag;
	m->data = core.q[core.next].data;
	m->size = core.q[core.next].len;
	m->payload = core.q[core.next].payload;
	return 1;
}

void lnx_tp_consume(void *tp)
{
	core.stashed = 0;
	core.next++;
	core.consumed++;
}

int lnx_tp_send_eager(void *tp, uint32_t flags, uint64_t tag, uint64_t data, const void *buf,
		      size_t len)
{
	return -1;
}

static void arrive(uint64_t tag, uint64_t data, uint64_t len, int fill)
{
	core.q[core.n].tag = tag;
	core.q[core.n].data = data;
	core.q[core.n].len = len;
	memset(core.q[core.n].payload, fill, len);
	core.n++;
}

struct fixture {
	struct lnx_gate g;
	struct lnx_arm *a;
	struct lnx_cring *cr;
	uint8_t recv[4][RECV_LEN];
	int ctx[4];
};

#include "arm_fixture.h"

static int dummy_tp;

/* setup: a lent transport from SRC and no rings; receives armed with post. */
static void setup(struct fixture *f)
{
	memset(f, 0, sizeof(*f));
	memset(&core, 0, sizeof(core));
	f->a = zalloc(sizeof(*f->a));
	f->cr = zalloc(sizeof(*f->cr));
	f->cr->format = FI_CQ_FORMAT_TAGGED;
	memset(f->recv, 0xee, sizeof(f->recv));
	f->a->cring = f->cr;
	f->a->net = (uintptr_t)&dummy_tp;
	f->a->net_src = SRC;
	f->a->lent = 1;
	f->a->rearm = 1;
	f->g.arm = (uintptr_t)f->a;
	f->g.skip_max = 1000;
}

int main(void)
{
	struct fixture f;
	int got, idle;

	/* One message, a caller asking for 16: one core read. */
	setup(&f);
	post(&f, 0, 0x77);
	post(&f, 1, 0x78);
	arrive(0x77, 0xd1, 5, 0x11);
	idle = -1;
	got = lnx_arm_take(&f.g, 0, 16, &idle);
	CHECK(got == 1, "one message: lnx_arm_take returned %d, want 1", got);
	CHECK(core.peeks == 1, "one message: the core was read %d times, want 1", core.peeks);
	CHECK(core.consumed == 1, "one message: %d consumed", core.consumed);
	completed(&f, 0, 0, 0x77, 0xd1, 5, 0x11, "one message");
	CHECK(f.a->done_msgs[1] == 1 && f.a->done_bytes[1] == 5,
	      "one message: %llu messages %llu bytes counted from the network core",
	      (unsigned long long)f.a->done_msgs[1], (unsigned long long)f.a->done_bytes[1]);
	CHECK(f.a->lock == 0, "one message: arm lock left held");

	/* Two more, one per core read: one per lnx read, in order, each into
	 * the earliest receive that takes it. */
	post(&f, 2, 0x78);
	arrive(0x78, 0xd2, 16, 0x22);
	arrive(0x78, 0xd3, 1, 0x33);
	got = lnx_arm_take(&f.g, 0, 16, &idle);
	CHECK(got == 1, "second: lnx_arm_take returned %d, want 1", got);
	completed(&f, 1, 1, 0x78, 0xd2, 16, 0x22, "second");
	got = lnx_arm_take(&f.g, 0, 16, &idle);
	CHECK(got == 1, "third: lnx_arm_take returned %d, want 1", got);
	completed(&f, 2, 2, 0x78, 0xd3, 1, 0x33, "third");
	CHECK(core.peeks == 3, "three messages: the core was read %d times, want 3", core.peeks);

	/* Nothing in the core: 0, and the idle answer from the gate. */
	idle = -1;
	got = lnx_arm_take(&f.g, 0, 16, &idle);
	CHECK(got == 0, "empty: lnx_arm_take returned %d, want 0", got);
	CHECK(idle == 1, "empty: idle %d, want 1 (the gate is quiet)", idle);
	/* A gate that is not quiet (Go has work) answers not idle. */
	f.g.pending = 1;
	idle = -1;
	got = lnx_arm_take(&f.g, 0, 16, &idle);
	CHECK(got == 0 && idle == 0, "pending: lnx_arm_take returned %d idle %d, want 0 0", got,
	      idle);
	CHECK(f.cr->tail == 3, "%llu completions in all, want 3", (unsigned long long)f.cr->tail);
	free(f.a);
	free(f.cr);

	if (unit_failures)
		fprintf(stderr, "arm_net_take: %d failures\n", unit_failures);
	return unit_failures != 0;
}
