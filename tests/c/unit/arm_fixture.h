/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * The armed-receive unit tests' helpers: arming a receive and checking
 * one completion. Include after defining SRC, RECV_LEN and struct fixture
 * (a: the arm; cr: the completion ring; ctx[k], recv[k][RECV_LEN]:
 * receive k's context and buffer, filled with 0xee before).
 */
#ifndef LNX_UNIT_ARM_FIXTURE_H
#define LNX_UNIT_ARM_FIXTURE_H

#include "arm_slot.h"

/* post arms a tagged receive for tag behind the others, as lnx_arm_post
 * does, into recv[k]. */
static void post(struct fixture *f, int k, uint64_t tag)
{
	unit_arm(f->a, f->recv[k], RECV_LEN, &f->ctx[k], FI_ADDR_UNSPEC, tag, 0);
}

/* completed: completion n is recv[k]'s, of len bytes of fill, tag and data. */
static void completed(struct fixture *f, uint64_t n, int k, uint64_t tag, uint64_t data,
		      uint64_t len, int fill, const char *what)
{
	if (f->cr->tail <= n) {
		CHECK(0, "%s: no completion %llu", what, (unsigned long long)n);
		return;
	}
	__typeof__(f->cr->e[0]) *e = &f->cr->e[n];
	CHECK(e->ctx == &f->ctx[k] && e->buf == f->recv[k] && e->len == len && e->tag == tag &&
		      e->data == data && e->src == SRC &&
		      e->flags == (FI_RECV | FI_TAGGED | FI_REMOTE_CQ_DATA),
	      "%s: completion %llu ctx %p (want %p) len %llu tag %#llx data %#llx src %llu "
	      "flags %#llx",
	      what, (unsigned long long)n, e->ctx, (void *)&f->ctx[k], (unsigned long long)e->len,
	      (unsigned long long)e->tag, (unsigned long long)e->data, (unsigned long long)e->src,
	      (unsigned long long)e->flags);
	for (uint64_t i = 0; i < RECV_LEN; i++) {
		int want = i < len ? fill : 0xee;
		if (f->recv[k][i] != want) {
			CHECK(0, "%s: recv[%d][%llu] = %#x, want %#x", what, k,
			      (unsigned long long)i, f->recv[k][i], want);
			break;
		}
	}
}

#endif
