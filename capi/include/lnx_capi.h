/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * C side of lnx's boundary: the fid wrappers libfabric sees, and the Go
 * entry points (exported from package capi) that the trampolines call.
 * C keeps only integer handles to Go objects, never Go pointers.
 */
#ifndef LNX_CAPI_H
#define LNX_CAPI_H

#include <stdint.h>
#include <stddef.h>
#include <rdma/fabric.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_tagged.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>
#include <rdma/fi_atomic.h>
#include <rdma/providers/fi_prov.h>
#include <rdma/providers/fi_log.h>

typedef uintptr_t lnx_handle;

struct lnx_fabric {
	struct fid_fabric fab;
	lnx_handle h;
};
/* eq: the EQ bound with fi_domain_bind; reg_mr: FI_REG_MR was given (MR
 * registrations then complete through it); serial: opened with
 * FI_THREAD_DOMAIN and no CQ or counter with a wait object opened since, so
 * the fast paths take no locks (lnx_internal.h, lnx_lock). Its CQs and
 * endpoints point at it: a domain outlives them (close is -FI_EBUSY). */
struct lnx_domain {
	struct fid_domain dom;
	lnx_handle h;
	struct lnx_eq *eq;
	int reg_mr;
	uint32_t serial;
};
struct lnx_fast;
struct lnx_ep {
	struct fid_ep ep;
	lnx_handle h;
	struct lnx_fast *fast;
	const uint32_t *serial; /* the domain's */
};
struct lnx_eq;
/* eq: the EQ bound with fi_av_bind (inserts then complete through it);
 * event: opened with FI_EVENT (inserts need a bound EQ). */
struct lnx_av {
	struct fid_av av;
	lnx_handle h;
	struct lnx_eq *eq;
	int event;
};
/*
 * A CQ's gate (lnx/gate.go, whose gateMem mirrors it): lets fi_cq_read
 * answer an idle poll in C. Go publishes the shm words whose change means
 * a message arrived; C enters Go only when one changed, completions are
 * pending, Go set open, or after skip_max idle answers in a row.
 */
#define LNX_GATE_WATCHES 32
struct lnx_gate_watch {
	uintptr_t p; /* const volatile uint64_t * in an shm region */
	uint64_t v;
	uint64_t eq; /* 1: work once *p == v; 0: work once *p != v */
};
struct lnx_gate {
	uint32_t pending;  /* Go: completions or errors queued */
	uint32_t open;	   /* Go: every read must enter Go */
	uint32_t skip_max; /* Go: idle answers allowed in a row */
	uint32_t n;	   /* Go: watches in use */
	uint32_t readers;  /* C: readers scanning the watches */
	uint32_t idle;	   /* C: idle answers since Go last ran */
	uint32_t seq;	   /* Go: odd while the watches are rewritten */
	int32_t posts;	   /* C adds, Go subtracts: receives queued in C that
			      Go has not taken yet (struct lnx_fast) */
	uintptr_t arm;	   /* Go: struct lnx_arm * of the endpoint whose
			      receive C may complete (0: none) */
	uint64_t due;	   /* Go: CLOCK_MONOTONIC ns before which a run of
			      skip_max idle answers does not enter Go (a
			      quiet network core's next poll; 0: no clock) */
	/* C: idle answers between two clock reads while due is set (0:
	 * skip_max; fewer when reads come far apart), and the time of the
	 * last clock read (CLOCK_MONOTONIC ns). */
	uint64_t clock_every, clock_last;
	struct lnx_gate_watch w[LNX_GATE_WATCHES];
};

/*
 * Send completions written by C (the fast send path below), read by
 * fi_cq_read before anything else. Guarded by lock: C senders and C
 * readers only; Go never touches it.
 */
#define LNX_CRING 255 /* the ring fits four pages */
struct lnx_cring {
	uint32_t lock;
	uint32_t format; /* the CQ's FI_CQ_FORMAT_* (never UNSPEC) */
	uint64_t head, tail;
	/* Each entry in a cache line of its own: after the 24-byte header
	 * every one straddled two, and fi_cq_read's copy of it was a split
	 * load (the hottest instruction of lnx in a 1 B ping-pong). */
	struct {
		void *ctx, *buf;
		uint64_t flags, len, data, tag, src;
		uint64_t pad;
	} e[LNX_CRING] __attribute__((aligned(64)));
};

struct lnx_cq {
	struct fid_cq cq;
	lnx_handle h;
	struct lnx_gate gate;
	struct lnx_cring *cring;
	const uint32_t *serial; /* the domain's */
};

/*
 * A peer's send-side ring state (shm.TxSlot mirrors it): C appends small
 * eager records to the peer's shm ring under lock, as shm.Endpoint.Send
 * does, when ready says the ring is claimed and mapped.
 */
/*
 * One rendezvous send C posted through a struct lnx_txslot. Its cookie
 * (what the receiver echoes in the ack) is gen<<32 | LNX_TX_RNDV_BIT | its
 * index, apart from Go's own (shm's send slots). LNX_TXR_FREE: unused;
 * LNX_TXR_C: C's, C reaps its ack; LNX_TXR_GO: Go adopted it and frees it
 * (gen + 1) when its ack comes or the peer is gone.
 */
#define LNX_TX_RNDV	64
#define LNX_TX_RNDV_BIT 0x80000000u
#define LNX_TXR_FREE	0
#define LNX_TXR_C	1
#define LNX_TXR_GO	2
struct lnx_txrndv {
	void *ctx;	/* the send's context */
	uint64_t base;	/* the sender's buffer */
	uint64_t len;	/* its length */
	uint32_t gen;	/* the cookie's generation */
	uint32_t state; /* LNX_TXR_* */
	uint32_t cq;	/* 1: a completion is wanted */
	uint32_t tagged;
};
struct lnx_txslot {
	uint32_t lock;	/* every writer, C or Go, holds it */
	uint32_t ready; /* Go: 1 only while the ring is claimed and mapped */
	uintptr_t ring; /* Go: ring base */
	uint64_t mask, size;
	uint64_t tail;	     /* next record's absolute position */
	uint64_t head_cache; /* receiver's consumed position, as last read */
	uint64_t salt, eager_max;
	uintptr_t fwd_head;   /* const volatile uint64_t *: receiver's consumed position */
	uintptr_t peer_state; /* const volatile uint64_t *: receiver's endpoint state */
	/* Rendezvous sends C posts itself (fast_send.c), only while Go has
	 * lent the endpoint (struct lnx_arm's lent, which orders every access
	 * below: C's under arm.lock, Go's under its endpoint lock with nothing
	 * lent). Their acks arrive in the channel's ack ring; C reaps them in
	 * fi_cq_read (arm.c), and Go adopts those still out when it takes the
	 * endpoint back (shm.Endpoint.AdoptTx). */
	uint64_t rndv_max; /* Go: largest one C may post (0: none) */
	uintptr_t ack;	   /* Go: the channel's ack ring base (struct lnx_ack) */
	uint64_t ack_mask; /* Go: entries - 1 */
	uint64_t ack_head; /* next ack to reap: Go's copy, C's while it has sends out */
	uintptr_t ack_pub; /* Go: uint64_t *: where the reaped position is published */
	uintptr_t
		bulk_req; /* Go: const volatile uint64_t *: the receiver's fallback copy request */
	uint64_t bulk_seen; /* Go: the request Go served last */
	uint32_t nout;	    /* C: entries in state LNX_TXR_C */
	uint32_t full;	    /* C: eager sends that found the ring full (lock held) */
	struct lnx_txrndv r[LNX_TX_RNDV];
};
/* *peer_state while the receiving endpoint is open (shm.PeerOpen). */
#define LNX_SHM_PEER_OPEN 1
/* shm ring records (shm/layout.go): a 48-byte header {stamp, kind|flags,
 * tag, data, size, cookie}, payload inline, 64-byte aligned; the stamp,
 * (pos ^ salt) | 1, is written last. */
#define LNX_REC_HDR   48
#define LNX_REC_LINE  64
#define LNX_REC_PAD   1 /* the rest of the ring is padding: skip to its start */
#define LNX_REC_EAGER 2
struct lnx_rec {
	uint64_t stamp; /* (pos ^ salt) | 1, stored last (release) */
	uint64_t kf;	/* kind | niov<<8 | internal flags (16..31) | user flags<<32 */
	uint64_t tag;
	uint64_t data;
	uint64_t size;	 /* payload bytes (eager) or message bytes (rendezvous) */
	uint64_t cookie; /* rendezvous: sender's slot cookie */
};
/* A rendezvous record (kind LNX_REC_RNDV) carries niov (1..LNX_REC_MAX_IOV)
 * {address, length} pairs of the sender's buffers after its header;
 * LNX_REC_NOCMA (an internal flag) asks the receiver not to use CMA. The
 * receiver acknowledges it with an entry in the channel's ack ring, its
 * stamp (the entry's sequence number + 1) stored last. */
#define LNX_REC_RNDV	3
#define LNX_REC_IOV	16
#define LNX_REC_MAX_IOV 16
#define LNX_REC_NOCMA	0x10000
#define LNX_ACK_OK	0
#define LNX_ACK_DISCARD 1
#define LNX_ACK_BYTES	32
struct lnx_ack {
	uint64_t stamp; /* sequence + 1, stored last (release) */
	uint64_t cookie;
	uint64_t status;
	uint64_t n; /* bytes copied */
};
/* lnx's message header flags (lnx/msg.go), carried in kf's top half. */
#define LNX_HDR_TAGGED 0x1
#define LNX_HDR_DATA   0x2

/*
 * An endpoint's fast send path (lnx/fast.go, whose fastMem mirrors it): Go
 * says whether C may write small sends itself (on) and publishes the shm
 * peers by fi_addr; C falls back to Go for anything else.
 */
#define LNX_FAST_PEERS 4096
/*
 * Receives are queued the same way: fi_trecv/fi_recv into one buffer
 * append to rxq and return, and Go posts the queued receives, in order,
 * under the endpoint's lock before anything else touches its matching
 * queues (a poll, another post, a cancel). The receive CQ's gate counts
 * them (posts) so that C's idle answer never hides a queued receive whose
 * message has already arrived.
 */
#define LNX_RXQ	       64
#define LNX_RXQ_TAGGED 0x1 /* kind: tagged queue */
#define LNX_RXQ_IOV    0x2 /* kind: one buffer given (else none, count 0) */
struct lnx_rxq_entry {
	void *buf;
	uint64_t len;
	uintptr_t desc; /* the caller's descriptor: an lnx MR handle, or 0 */
	void *ctx;
	uint64_t src, tag, ignore;
	uint32_t kind, pad;
};
/*
 * Armed receives (lnx/arm.go): when an endpoint's posted receives are all
 * simple (one host buffer, completion wanted) and no more than
 * LNX_ARM_SLOTS, and nothing is unexpected, Go lends C its inbound shm
 * rings and those receives, in post order. fi_cq_read then checks the
 * rings in C; an eager record is matched against the lent receives as Go
 * would match it (the earliest posted that takes it), copied, consumed and
 * completed in C without entering Go, and so is a rendezvous record (one
 * process_vm_readv, then the ack; a rendezvous record no receive takes yet
 * may wait in its ring while it is the ring's last). Anything else on a
 * ring (another kind, no receive for it, a truncation) sends the read to
 * Go, which takes the rings back first. While a network core is busy Go may lend its
 * transport too (net, lnx_tp_lend.h): C then reads that core's CQ and
 * takes eager messages of the peer net_src names the same way.
 */
#define LNX_ARM_RINGS 8
struct lnx_arm_ring {
	uintptr_t ring; /* Go: inbound ring base */
	uint64_t mask, size, salt, eager_max;
	uint64_t head;	    /* C advances it while lent; Go reads it back */
	uintptr_t fwd_head; /* Go: uint64_t * the sender reads: consumed position */
	uint64_t src;	    /* Go: the sender's fi_addr */
	/* Rendezvous records C takes (process_vm_readv from pid, then an ack
	 * in the channel's ack ring, struct lnx_ack): cma is 1 when C may
	 * read the sender's memory (0: every rendezvous record goes to Go). */
	uintptr_t ack;	    /* Go: ack ring base */
	uint64_t ack_mask;  /* Go: entries - 1 */
	uint64_t ack_tail;  /* C advances it while lent; Go reads it back */
	uintptr_t ack_head; /* Go: const volatile uint64_t *: the sender's consumed position */
	uint64_t pid;	    /* Go: the sender's pid */
	uint64_t cma;	    /* Go */
};
/* An armed receive: one Go lent (go_index is its index in Go's list) or
 * one C posted while lent (go_index is -1). */
#define LNX_ARM_SLOTS 128
/* The most peers C has its own rendezvous sends out to at once. */
#define LNX_ARM_TX 16
struct lnx_arm_slot {
	void *buf;
	uint64_t len;
	void *ctx;
	uint64_t src, tag, ignore; /* as posted: src is FI_ADDR_UNSPEC for any */
	uintptr_t desc;		   /* C-posted: the caller's descriptor (lnx MR handle or 0) */
	uint32_t tagged;
	int32_t go_index;
};
struct lnx_arm {
	uint32_t lent; /* Go sets; cleared by Go under lock: C may consume */
	uint32_t lock; /* C readers (try) and Go taking the rings back */
	uint32_t nrings;
	/* Posting: while lent, a receive posted while nothing is queued for Go
	 * joins the slots at once (fi_recv and fi_trecv of one host buffer),
	 * so that a ping-pong or a window of receives never enters Go. */
	uint32_t rearm;	   /* Go: C may post */
	uint32_t directed; /* Go: the endpoint honours a receive's source */
	uint32_t ngo;	   /* Go: how many receives it lent (slots 0..ngo-1 first) */
	/* The lent receives, in post order: slots [head, tail) mod
	 * LNX_ARM_SLOTS, some of them done (done[] by slot); C advances head
	 * past those done at the front, and records in go_done the Go
	 * receives it completed. */
	uint64_t head, tail;
	struct lnx_cring *cring; /* C: the receive CQ's completion ring */
	uintptr_t net;		 /* Go: the lent transport (void * for lnx_tp_peek), or 0 */
	uint64_t net_src;	 /* Go: fi_addr of the peer C may take messages of */
	uintptr_t pep;		 /* Go: the lent peer-API core (struct lnx_pep *), or 0 */
	/* Receives C completed and their bytes, by core (0 shm, 1 network),
	 * under lock; Go adds them to its statistics and clears them when it
	 * takes the rings back. */
	uint64_t done_msgs[2], done_bytes[2];
	uint64_t pulls; /* of done_msgs[0], rendezvous messages (lnx_arm_rndv) */
	struct lnx_arm_ring r[LNX_ARM_RINGS];
	uint8_t done[LNX_ARM_SLOTS];
	uint8_t go_done[LNX_ARM_SLOTS];
	struct lnx_arm_slot s[LNX_ARM_SLOTS];
	/* The struct lnx_txslot * of the peers C has rendezvous sends out to
	 * (struct lnx_txslot's nout > 0), under lock; Go adopts them when it
	 * takes the endpoint back, and clears ntx. */
	uint32_t ntx;
	uint32_t pad_tx;
	uintptr_t tx[LNX_ARM_TX];
	uint64_t tx_rndv; /* rendezvous sends C posted (statistics), under lock */
};
struct lnx_fast {
	uint32_t on;		  /* Go: C may send */
	uint32_t tx_sel;	  /* Go: FI_SELECTIVE_COMPLETION on the transmit CQ */
	uint64_t tx_flags;	  /* Go: default transmit op flags */
	uint64_t inject_size;	  /* Go */
	struct lnx_cring *cring;  /* C: the transmit CQ's completion ring */
	uint32_t rx_on;		  /* Go: C may queue receives */
	uint32_t rxq_lock;	  /* C posters; Go takes it only to stop them */
	struct lnx_gate *rx_gate; /* C: the receive CQ's gate */
	uint64_t rxq_head;	  /* Go: entries taken */
	uint64_t rxq_tail;	  /* C: entries queued */
	struct lnx_rxq_entry rxq[LNX_RXQ];
	struct lnx_arm arm;
	uintptr_t peer[LNX_FAST_PEERS]; /* Go: fi_addr -> struct lnx_txslot * (0: ask Go) */
};
struct lnx_cntr {
	struct fid_cntr cntr;
	lnx_handle h;
};
struct lnx_mr {
	struct fid_mr mr;
	lnx_handle h;
};

extern struct fi_provider lnx_prov;

/* Object constructors (fabric.c, domain.c, ep.c, av.c, cq.c, cntr.c): wrap
 * a Go handle in a fid. */
struct fid_fabric *lnx_new_fabric(lnx_handle h, void *context);
struct fid_domain *lnx_new_domain(lnx_handle h, struct fid_fabric *fabric, void *context,
				  int serial);
struct lnx_ep *lnx_alloc_ep(void);
void lnx_init_ep(struct lnx_ep *e, lnx_handle h, void *context);
void lnx_free_ep(struct lnx_ep *e);
struct fid_av *lnx_new_av(lnx_handle h, void *context);
/* Collective ops answering -FI_ENOSYS (nosys.c). */
extern struct fi_ops_collective lnx_ep_collective_ops;
/* Event queues (eq.c), C only. */
int lnx_eq_open(struct fid_fabric *fabric, struct fi_eq_attr *attr, struct fid_eq **eq,
		void *context);
struct lnx_eq *lnx_eq_of(struct fid *fid);
void lnx_eq_ref(struct lnx_eq *q, int d);
/* 1 while an event is queued on eq (a struct lnx_eq). */
int lnx_eq_ready(void *eq);
/* fi_trywait on an EQ. */
int lnx_eq_trywait(struct lnx_eq *q);
int lnx_eq_post(struct lnx_eq *q, uint32_t event, const void *buf, size_t len, int err,
		struct fid *fid, void *context, uint64_t data);
struct lnx_cq *lnx_alloc_cq(void);
void lnx_free_cq(struct lnx_cq *c);
void lnx_init_cq(struct lnx_cq *c, lnx_handle h, void *context);
struct fid_cntr *lnx_new_cntr(lnx_handle h, void *context);

/* Kinds of object a handle designates, for fi_ep_bind. */
enum lnx_kind { LNX_KIND_NONE, LNX_KIND_AV, LNX_KIND_CQ, LNX_KIND_CNTR, LNX_KIND_EQ, LNX_KIND_MR };
lnx_handle lnx_handle_of(struct fid *fid, int *kind);

/* Logging and environment for Go. */
int lnx_log_enabled(int level, int subsys);
void lnx_log(int level, int subsys, const char *msg);
const char *lnx_getenv(const char *name);
/* Records a shm region file this process created (live 1) or removed
 * (live 0), so that it is unlinked when the process exits without closing
 * its endpoints (provider.c). */
void lnx_region_note(const char *path, int live);

/* fi_info helpers. */
struct fi_info *lnx_info_next(struct fi_info *info);

#endif
