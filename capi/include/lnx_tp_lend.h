/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * A transport lent to C (peers/ofi/tp_lend.go): while lnx has an armed
 * receive, the C side of fi_cq_read may read the transport's core CQ
 * itself, take eager messages of one peer and send that peer small ones, so
 * that neither the idle polls nor those messages enter Go. capi calls these
 * (arm.c, fast_send.c); peers/ofi defines them (peers/ofi/tp.c). The caller
 * serializes the calls with Go's taking the transport back (lnx's arm lock).
 */
#ifndef LNX_TP_LEND_H
#define LNX_TP_LEND_H

#include <stddef.h>
#include <stdint.h>

/* An eager message C may take: the lnx header fields and the payload,
 * which stays in the transport's bounce buffer until lnx_tp_consume. */
struct lnx_tp_msg {
	uint32_t flags; /* the sender's lnx header flags */
	uint32_t pad;
	uint64_t tag, data, size;
	const void *payload;
};

/* Reads the core CQ into the transport's stash unless it holds events
 * already; returns the number stashed (0: nothing happened), or a
 * negative fi_errno if the CQ failed (Go reads it again and reports). */
int lnx_tp_peek(void *tp);

/* Describes the stash's first event if it is an eager message of the lent
 * peer, next in that peer's order, and C may take one more (none that
 * would make Go owe the sender a credit message, nor more than a bounded
 * number whose bounce buffers wait for Go): 1, else 0. The rest of the
 * stash stays for the next lnx_tp_peek (or Go), in CQ order. */
int lnx_tp_look(void *tp, struct lnx_tp_msg *m);

/* Takes the message lnx_tp_look described, once the caller has copied its
 * payload: the next lnx_tp_peek reposts its bounce buffer (or leaves that
 * to Go if the core refuses), and Go accounts for it (sequence, credits)
 * when it takes the transport back. */
void lnx_tp_consume(void *tp);

/* Sends a message of len bytes (flags, tag and data as in lnx's header)
 * to the lent peer, in the form Go's Send would use, if C may: an eager
 * message (header and payload staged, fi_inject), or, above the peer's
 * eager limit, a tagged eager message injected from buf (fi_tinjectdata).
 * 0 when sent, -1 when Go must send it (not allowed, too large, flags or
 * CQ data too wide for a tagged eager message, no credits, or the core
 * refused). */
int lnx_tp_send_eager(void *tp, uint32_t flags, uint64_t tag, uint64_t data, const void *buf,
		      size_t len);

#endif
