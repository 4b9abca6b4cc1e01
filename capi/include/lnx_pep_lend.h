/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * A peer-API core lent to C (peers/peerep/pep.c, lnx/core_peer.go): while
 * lnx has armed receives and the network is hot, the C side of fi_cq_read
 * polls the core itself (lnx_pep_take). The core's get_* is answered in C
 * from the armed receives when one takes the message exactly as Go's
 * queues would (lnx_arm_peer_claim), and its completion goes into the
 * receive CQ's ring (lnx_arm_peer_put); any other message is left to Go
 * (queued by the core, adopted in arrival order when Go takes the arm
 * back), and so is everything after it. The caller holds the arm's lock.
 */
#ifndef LNX_PEP_LEND_H
#define LNX_PEP_LEND_H

#include <stddef.h>
#include <stdint.h>

struct lnx_arm;

/* arm.c's side, for pep.c's get_* and write() (a->lock held), handed to
 * lnx_pep_take (peers/peerep cannot link capi's symbols):
 *  - claim: the earliest armed receive that takes a message whole (as
 *    lnx_arm_match), marked taken; its context, buffer and length in
 *    *ctx, *buf, *len. -1: none does.
 *  - put: completes a receive claim took into a's ring (1), or 0 when
 *    the ring is full (the caller leaves it to Go).
 *  - put_send: the same for a send's completion (ctx, flags). */
struct lnx_pep_arm_ops {
	int32_t (*claim)(struct lnx_arm *a, int tagged, uint64_t tag, uint64_t src, uint64_t size,
			 void **ctx, void **buf, uint64_t *len);
	int (*put)(struct lnx_arm *a, int serial, void *ctx, void *buf, uint64_t flags,
		   uint64_t len, uint64_t data, uint64_t tag, uint64_t src);
	int (*put_send)(struct lnx_arm *a, int serial, void *ctx, uint64_t flags);
};

/* arm.c's ops (capi). */
extern const struct lnx_pep_arm_ops lnx_arm_pep_ops;

/* Polls lent core pep once (a->lock held): the number of receives it
 * completed into a's ring; *go set when Go must run (messages or
 * completions left for Go, or the core's CQ failed). */
int lnx_pep_take(void *pep, struct lnx_arm *a, int serial, const struct lnx_pep_arm_ops *ops,
		 int *go);

/* Sends len bytes at buf, over the core's inject size, to lnx fi_addr
 * dest through lent core pep, from C (a->lock held, lent), as the core's
 * send of the application's buffer: 0 when the core took it. Its
 * completion (context ctx; want_cq: the application wants one) goes into
 * a's ring when the core writes it inside C's poll or send, else to Go; a
 * send Go adopts (lnx_pep_csend_pop) completes through Go, which watches
 * its peer meanwhile. The transmit CQ must be a's CQ. -1 as for
 * lnx_pep_inject_lent (lnx_pep.h; and out of memory). */
int lnx_pep_send_lent_big(void *pep, struct lnx_arm *a, int serial,
			  const struct lnx_pep_arm_ops *ops, uint64_t dest, int tagged,
			  const void *buf, size_t len, uint64_t tag, uint64_t data, int has_data,
			  void *ctx, int want_cq);

/* Whether a send buffer the core reads after the call (over its inject
 * size) must be checked for being mapped first (FI_LNX_CHECK_SEND_BUFFERS). */
int lnx_pep_checks_bufs(const void *pep);

/* Whether lent core pep holds messages or completions for Go (a->lock
 * held): C then takes nothing more, so that Go sees them first. */
int lnx_pep_held(const void *pep);

#endif
