/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * The network core's C state and calls (peers/ofi/tp.c), for peers/ofi's Go
 * (tp_c.go): the core endpoint with its own AV and CQ, the operation table,
 * the completion batch and what C may do while the transport is lent
 * (lnx_tp_lend.h, which capi calls).
 */
#ifndef LNX_TP_H
#define LNX_TP_H

#include <stdint.h>
#include <sys/uio.h>
#include <rdma/fabric.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_tagged.h>
#include <rdma/fi_rma.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_eq.h>
#include "lnx_tp_lend.h"

#ifndef LNX_HIDDEN
#define LNX_HIDDEN __attribute__((visibility("hidden")))
#endif

/* The transport keeps every piece of memory the core sees in C: the
 * operation table (contexts, iovec arrays, wire headers), the bounce
 * buffers and the completion batch. Go code writes into it through
 * unsafe views and passes only C pointers and indexes to C. */

#define LNX_EV_MAX    64
#define LNX_OP_IOV    9 /* iov[0]: our header, iov[1..8]: user pieces */
#define LNX_HDR_BYTES 128
/* wire.go's constants that C reads messages with (checked by tests). */
#define LNX_WIRE_VERSION 1
#define LNX_KIND_EAGER	 1
#define LNX_HDR_EAGER	 40
/* A tagged eager message's core tag (wire.go's teTag): the class in the
 * top two bits, the caller's CQ data (LNX_TE_DATA_BITS) from bit 40, its
 * flags (LNX_TE_FLAG_BITS) from bit 32, the sequence number below. */
#define LNX_TE_CLASS	 (3ull << 62)
#define LNX_TE_IGNORE	 ((1ull << 62) - 1)
#define LNX_TE_FLAG_BITS 8
#define LNX_TE_DATA_BITS 22
/* The most tagged eager receives posted per peer (tp_tagged.go's
 * teBufsMax). */
#define LNX_TE_BUFS 16
/* Messages C may take in one lending whose bounce buffers it could not
 * repost itself (the core said -FI_EAGAIN): those wait for Go. */
#define LNX_LEND_TAKES 32

struct lnx_op {
	struct fi_context2 ctx[2];
	struct iovec iov[LNX_OP_IOV];
	void *desc[LNX_OP_IOV]; /* core MR descriptors of the iov pieces (NULL: none) */
	uint8_t hdr[LNX_HDR_BYTES];
};

struct lnx_ev {
	uint32_t op;  /* index into ops, UINT32_MAX if the context is not ours */
	uint32_t sub; /* 0 or 1: which context of the op; 2 if misaligned */
	int32_t err;  /* 0, or the positive fi_errno of an error entry */
	int32_t prov_err;
	uint64_t len;
	uint64_t olen;
	uint64_t tag; /* the completion's tag and CQ data (tagged eager receives) */
	uint64_t data;
};

/* What C may do while the transport is lent (tp_lend.go): Go writes the
 * first block before lending and reads the second after taking it back. */
struct lnx_tp_lend {
	uint64_t peer;	    /* Go: id of the peer whose eager message C may take (0: none) */
	uint32_t rx_seq;    /* Go, then C: that peer's next sequence number */
	uint32_t pool;	    /* Go: ops [0, pool) are bounce receives */
	uint64_t buf_size;  /* Go: bytes per bounce buffer */
	uint64_t eager_max; /* Go: largest eager payload */
	uint8_t *bounce;    /* Go: the bounce buffers */
	int32_t stashed;    /* C: events in evs Go has not seen; Go clears it */
	uint32_t head;	    /* C: the first of them (C took those before) */
	uint32_t took;	    /* C: messages it took, not reposted yet (at most LNX_LEND_TAKES) */
	uint32_t took_op[LNX_LEND_TAKES]; /* C: their bounce slots, for C or Go to repost */
	uint32_t reposted;		  /* C: messages it took whose bounce buffers it reposted */
	uint32_t owe;			  /* Go: a taken message earns its sender a credit */
	uint32_t owe_max;		  /* Go: credits owed that Go must return itself */
	/* Sending to the same peer: eager messages with fi_inject, tagged
	 * eager ones with fi_tinjectdata. */
	uint32_t tx_on;	       /* Go: C may send to the peer */
	uint32_t tx_seq;       /* Go, then C: the next sequence number we send it */
	uint32_t window;       /* Go: its credit window (0: no flow control) */
	int32_t credits;       /* Go, then C: credits it left us */
	uint32_t owed;	       /* Go, then C: credits we owe it (they ride on our sends) */
	uint32_t sent;	       /* C: messages sent */
	uint64_t tx_addr;      /* Go: its core fi_addr */
	uint64_t id;	       /* Go: our transport id */
	uint64_t tx_eager_max; /* Go: the largest eager payload it takes */
	uint64_t te_max;  /* Go: the largest tagged eager payload C may inject to it (0: none) */
	uint32_t sent_te; /* C: of sent, tagged eager messages */
	/* Taking the peer's tagged eager messages: the ops of its tagged
	 * eager receives (UINT32_MAX: none), their buffers of te_cap bytes. */
	uint32_t te_op[LNX_TE_BUFS];
	uint64_t te_cap;
	uint8_t *te_buf[LNX_TE_BUFS];
};

/* The most lnx_tp_send_eager stages: lnx's header and a whole eager
 * payload, the first inject size peers/ofi asks of a core (wantEagerInject,
 * checked in tp_c.go), whatever inject size the core reports. */
#define LNX_STAGE_MAX (LNX_HDR_EAGER + 16320)

struct lnx_tp {
	struct fid_av *av;
	struct fid_cq *cq;
	struct fid_ep *ep;
	struct lnx_op *ops;
	size_t nops;
	size_t inject, tx_iov, rx_iov, tx_size, cq_data;
	/* C's eager sends over the lent transport (lnx_tp_send_eager) build
	 * header and payload here: stage_len bytes, the core's inject size up
	 * to LNX_STAGE_MAX, used under lnx's arm lock. */
	uint8_t *stage;
	size_t stage_len;
	uint64_t reads; /* fi_cq_read calls (each runs the core's progress) */
	struct fi_cq_tagged_entry ents[LNX_EV_MAX];
	struct lnx_ev evs[LNX_EV_MAX];
	struct lnx_tp_lend lend;
};

/* Called by peers/ofi's Go only (hidden in the library). */
LNX_HIDDEN int lnx_tp_close(struct lnx_tp *t);
LNX_HIDDEN struct lnx_tp *lnx_tp_open(struct fid_domain *dom, struct fi_info *info, size_t nops,
				      size_t cq_size, const void *src, size_t srclen, int *ret);
LNX_HIDDEN int lnx_tp_getname(struct lnx_tp *t, void *buf, size_t *len);
LNX_HIDDEN int lnx_tp_av_insert(struct lnx_tp *t, const void *name, uint64_t *out);
LNX_HIDDEN int lnx_tp_drain(struct lnx_tp *t, int max);
LNX_HIDDEN ssize_t lnx_tp_sendv(struct lnx_tp *t, uint32_t op, int sub, int off, int niov,
				uint64_t dest);
LNX_HIDDEN ssize_t lnx_tp_tsendv(struct lnx_tp *t, uint32_t op, int sub, int off, int niov,
				 uint64_t dest, uint64_t tag);
LNX_HIDDEN ssize_t lnx_tp_tsenddata(struct lnx_tp *t, uint32_t op, int sub, int off, int niov,
				    uint64_t dest, uint64_t tag, uint64_t data);
LNX_HIDDEN ssize_t lnx_tp_trecv_any(struct lnx_tp *t, uint32_t op, void *buf, size_t len,
				    uint64_t src, uint64_t tag, uint64_t ignore);
LNX_HIDDEN ssize_t lnx_tp_trecvv(struct lnx_tp *t, uint32_t op, int sub, int off, int niov,
				 uint64_t src, uint64_t tag);
LNX_HIDDEN ssize_t lnx_tp_readv(struct lnx_tp *t, uint32_t op, int sub, int off, int niov,
				uint64_t src, uint64_t addr, uint64_t key);
LNX_HIDDEN ssize_t lnx_tp_writev(struct lnx_tp *t, uint32_t op, int sub, int off, int niov,
				 uint64_t dest, uint64_t addr, uint64_t key);
LNX_HIDDEN ssize_t lnx_tp_recv(struct lnx_tp *t, uint32_t op, void *buf, size_t len);
LNX_HIDDEN ssize_t lnx_tp_inject(struct lnx_tp *t, const void *buf, size_t len, uint64_t dest);
LNX_HIDDEN ssize_t lnx_tp_tinject(struct lnx_tp *t, const void *buf, size_t len, uint64_t dest,
				  uint64_t tag);
LNX_HIDDEN ssize_t lnx_tp_tinjectdata(struct lnx_tp *t, const void *buf, size_t len, uint64_t dest,
				      uint64_t tag, uint64_t data);
LNX_HIDDEN int lnx_tp_cancel(struct lnx_tp *t, uint32_t op, int sub);

#endif
