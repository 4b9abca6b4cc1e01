/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * A network core driven through libfabric's peer API (issue #20), for
 * peers/peerep's Go: lnx is the owner of the core's receive side (a peer
 * SRX whose get/queue callbacks ask lnx's matching engine) and of its
 * completions (a peer CQ whose write callbacks become lnx completions).
 * Only the 2.0 to 2.2 ABI (lnx_peer_abi.h, v2): 1.17 stays on the
 * transport adapter (peers/ofi).
 *
 * Memory the core sees is C memory: the owner's SRX and CQ (inside struct
 * lnx_pep), the rx entries (struct lnx_pentry, calloc'd in get_*, freed in
 * free_entry) and the operation contexts (struct lnx_pctx, one per send or
 * started receive, freed when its completion is written). Go keeps a
 * cgo.Handle in lnx_pep.handle, never a Go pointer in C.
 */
#ifndef LNX_PEP_H
#define LNX_PEP_H

#include <stdint.h>
#include <sys/uio.h>
#include <rdma/fabric.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_tagged.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_eq.h>
#include "lnx_peer_abi.h"
#include "lnx_pep_lend.h"

#ifndef LNX_HIDDEN
#define LNX_HIDDEN __attribute__((visibility("hidden")))
#endif

#define LNX_PEP_IOV 8

/* An owner rx entry: the v2 fi_peer_rx_entry and the iovec it points at.
 * queued: Go holds it as an unexpected message (queue_*); dropped: the
 * core let go of it meanwhile (free_entry), so Go's start or discard
 * frees it instead of handing it back. */
struct lnx_pentry {
	struct lnx_peer_rx_entry_v2 pe;
	struct iovec iov[LNX_PEP_IOV];
	void *desc[LNX_PEP_IOV];
	int queued, dropped;
	/* Left to Go by C's get_* while lent (lnx_pep_lend.h), in arrival
	 * order: the next one, and whether the message is tagged. */
	struct lnx_pentry *stash_next;
	int stash_tagged;
};

/* The context of one operation handed to the core (a send, or a receive
 * entry matched or started): its Go id, and a copy of a send's data that
 * the caller may reuse at once (freed with the context). */
struct lnx_pctx {
	struct fi_context2 ctx;
	uint64_t id;
	void *copy;
	struct lnx_pentry *entry; /* a receive's entry, whose context this is */
	/* A receive C matched to an armed receive while lent (c_recv set):
	 * its completion's context, buffer, the buffer's length and the lnx
	 * fi_addr of the sender. */
	void *c_ctx, *c_buf;
	uint64_t c_len, c_src;
	int c_recv;
	/* A send C made while lent over the core's inject size
	 * (lnx_pep_send_lent_big; c_send set): its completion's context and
	 * flags, whether the application wants it (s_cq), the lnx fi_addr it
	 * went to, and its links in lnx_pep.csends while Go has not adopted
	 * it (id 0; Go gives it an id when it takes the core back). */
	void *s_ctx;
	uint64_t s_flags, s_dst;
	int c_send, s_cq;
	struct lnx_pctx *s_next, **s_pprev;
};

/* A completion the core wrote through the peer CQ, kept until Go drains
 * them after its call into the core returns (one call into Go per batch,
 * not per completion). */
#define LNX_PEP_COMPS 64
struct lnx_pcomp {
	uint64_t id, flags, len, data, tag, src, olen;
	int32_t err, prov_err; /* err: 0, or the positive fi_errno of writeerr */
	/* c_recv: a receive C matched (struct lnx_pctx's c_* fields; src is
	 * then lnx's fi_addr) whose completion C could not write itself.
	 * c_send: a send C made (1; 2: the application wants its completion),
	 * c_ctx its context, id Go's (0 if Go never adopted it). */
	uint64_t c_ctx, c_buf, c_len;
	int32_t c_recv, c_send;
};

/* The core fi_addrs whose lnx fi_addr C knows (lnx_pep.src). */
#define LNX_PEP_SRCS  256
#define LNX_PEP_NOSRC UINT64_MAX /* not known to C: the message goes to Go */
/* The lnx fi_addrs C may send to over the core (lnx_pep.dst): as many as
 * the fast send path's (LNX_FAST_PEERS). */
#define LNX_PEP_DSTS 4096

struct lnx_pep {
	struct lnx_peer_srx srx; /* first: a callback's srx is the lnx_pep */
	struct lnx_peer_cq pcq;
	struct lnx_peer_srx_owner_v2 srx_ops;
	struct lnx_peer_cq_owner cq_ops;
	struct fi_ops fid_ops;
	struct fid_av *av;
	struct fid_cq *cq;
	struct fid_ep *ep, *srx_ep;
	uintptr_t handle; /* Go's cgo.Handle of the owner */
	size_t inject, tx_iov, cq_data;
	struct fi_cq_tagged_entry evs[16];
	uint32_t ncomp;
	struct lnx_pcomp comps[LNX_PEP_COMPS];
	/* Lent to C (lnx_pep_lend.h). Completions for Go past comps while C
	 * polls (it cannot drain into Go): more, nmore of cmore. */
	struct lnx_pcomp *more;
	uint32_t nmore, cmore;
	void *arm;			   /* struct lnx_arm * inside lnx_pep_take, else NULL */
	const struct lnx_pep_arm_ops *ops; /* lnx_pep_take's */
	int serial;			   /* lnx_pep_take's */
	int took;			   /* receives completed into the arm's ring in this take */
	uint32_t c_pending;		   /* receives C matched that the core has not completed */
	struct lnx_pentry *stash, **stash_end; /* messages left to Go */
	int sending;	     /* inside lnx_pep_inject_lent: no completion into the ring */
	uint32_t tx_on;	     /* Go: C may send through the core while lent */
	uint32_t check_bufs; /* Go: check buffers the core reads later */
	uint64_t tx_msgs;    /* sends C made (lnx_pep_inject_lent), under the arm lock; */
	uint64_t tx_bytes;   /* Go takes them back with the core; */
	uint64_t tx_big;     /* of tx_msgs, those over the inject size */
	/* C's polls of the core while lent (lnx_pep_take), and the messages
	 * the core read and completions it wrote meanwhile: Go takes them
	 * back with the core, to keep it hot or let it cool as its own polls
	 * would (lnx/core_peer.go takeBack). */
	uint64_t c_reads, c_events;
	/* Sends C made over the inject size that the core has not completed
	 * and Go has not adopted (struct lnx_pctx's c_send), oldest first,
	 * and their number: Go adopts them (lnx_pep_csend_pop) when it takes
	 * the core back, and watches their peers. */
	struct lnx_pctx *csends, **csends_end;
	uint32_t c_sends;
	uint64_t src[LNX_PEP_SRCS]; /* Go: core fi_addr -> lnx fi_addr (LNX_PEP_NOSRC) */
	/* Go: lnx fi_addr -> core fi_addr (LNX_PEP_NOSRC: Go sends), set
	 * when Go has a route to the peer over this core, cleared when the
	 * fi_addr leaves the AV or the peer's side transport declares it
	 * gone; atomic, read by C under the arm lock while lent. */
	uint64_t dst[LNX_PEP_DSTS];
	/* Go's arguments to lnx_pep_send and lnx_pep_stash_pop: Go memory
	 * whose address a cgo call takes moves to the heap, one allocation
	 * per message, so Go passes these instead. */
	void *go_base[LNX_PEP_IOV];
	size_t go_len[LNX_PEP_IOV];
	int go_tagged;
	/* The core's get_addr, from its foreach_unspec_addr: the sender of an
	 * entry queued as FI_ADDR_NOTAVAIL, once the core's AV has it. */
	uint64_t (*get_addr)(struct lnx_pentry *);
	/* Entries and contexts given back, kept for the next message (up to
	 * keep of each; 0 frees them at once): each message received takes
	 * one of both, and calloc and free of the two cost about 20 ns. Used
	 * under the serialization every use of the lnx_pep has. */
	struct lnx_pentry *free_e;
	struct lnx_pctx *free_c;
	uint32_t n_free_e, n_free_c, keep;
};

/* lnx_pep_lent_dst: C may send to lnx fi_addr dest while lent (tx_on, and
 * Go published dest), over the core's fi_addr *fa. */
static inline int lnx_pep_lent_dst(const struct lnx_pep *p, uint64_t dest, uint64_t *fa)
{
	return __atomic_load_n(&p->tx_on, __ATOMIC_RELAXED) && dest < LNX_PEP_DSTS &&
	       (*fa = __atomic_load_n(&p->dst[dest], __ATOMIC_ACQUIRE)) != LNX_PEP_NOSRC;
}

/* lnx_pep_inject: the core's inject call for a message's kind, tagged or
 * not, with CQ data or not (fi_*injectdata), to core fi_addr dest. */
static inline ssize_t lnx_pep_inject(struct lnx_pep *p, int tagged, const void *buf, size_t len,
				     int has_data, uint64_t data, fi_addr_t dest, uint64_t tag)
{
	if (tagged)
		return has_data ? fi_tinjectdata(p->ep, buf, len, data, dest, tag) :
				  fi_tinject(p->ep, buf, len, dest, tag);
	return has_data ? fi_injectdata(p->ep, buf, len, data, dest) :
			  fi_inject(p->ep, buf, len, dest);
}

/* lnx_pep_inject_lent sends len bytes at buf (tagged: with tag; has_data:
 * with CQ data) to lnx fi_addr dest through lent core p, from C (a->lock
 * held, lent), as the core's inject: 0 when the core took it (nothing
 * more comes of it); -1 when Go must send it: C may not send (tx_on),
 * dest is not one C knows over this core, the message is over the core's
 * inject size, or the core answered anything else (-FI_EAGAIN included:
 * Go progresses and answers it, or reports the error). Inline in capi's
 * fast send: in a stream of small messages over a fast core, calls from
 * fast_send.c into pep.c, with the checks each repeated and the
 * registers each spilled, were a sixth of the instructions a send ran,
 * lnx's and the core's together. */
static inline int lnx_pep_inject_lent(struct lnx_pep *p, struct lnx_arm *a, int serial,
				      const struct lnx_pep_arm_ops *ops, uint64_t dest, int tagged,
				      const void *buf, size_t len, uint64_t tag, uint64_t data,
				      int has_data)
{
	uint64_t fa;
	ssize_t ret;
	if (len > p->inject || !lnx_pep_lent_dst(p, dest, &fa))
		return -1;
	/* What the core calls back inside (a message read, a completion)
	 * is treated as inside lnx_pep_take: left to Go, never into Go. */
	p->arm = a;
	p->ops = ops;
	p->serial = serial;
	p->sending = 1;
	ret = lnx_pep_inject(p, tagged, buf, len, has_data, data, fa, tag);
	p->sending = 0;
	p->arm = NULL;
	if (ret)
		return -1;
	p->tx_msgs++;
	p->tx_bytes += len;
	return 0;
}

/* src (srclen bytes): the core address to bind to, or NULL. */
LNX_HIDDEN struct lnx_pep *lnx_pep_open(struct fid_domain *dom, struct fi_info *info,
					const void *src, size_t srclen, uintptr_t handle, int *ret,
					int *stage);
LNX_HIDDEN void lnx_pep_init_owner(struct lnx_pep *p);
LNX_HIDDEN int lnx_pep_close(struct lnx_pep *p);
LNX_HIDDEN int lnx_pep_getname(struct lnx_pep *p, void *buf, size_t *len);
LNX_HIDDEN int lnx_pep_av_insert(struct lnx_pep *p, const void *name, uint64_t *out);
/* The core fi_addr of entry e's sender: asked of the core (its get_addr)
 * when the entry has FI_ADDR_NOTAVAIL, and kept in the entry. */
LNX_HIDDEN uint64_t lnx_pep_entry_addr(struct lnx_pep *p, struct lnx_pentry *e);
LNX_HIDDEN ssize_t lnx_pep_progress(struct lnx_pep *p);
/* Sends n pieces (base/len arrays) to dest. inject: the caller may reuse
 * the buffers on return (fi_inject within the core's inject size, else a
 * copy). Returns 1 when done on return (no completion will come), 0 when
 * the completion will come with id, or a negative fi_errno. */
LNX_HIDDEN ssize_t lnx_pep_send(struct lnx_pep *p, int tagged, void **base, size_t *len, int n,
				uint64_t dest, uint64_t tag, uint64_t data, int has_data,
				int inject, uint64_t id);
/* Gives an entry whose e->iov[0..n) the caller filled with a receive's
 * buffers its context (id): the core fills them, and its completion
 * carries id. */
LNX_HIDDEN int lnx_pep_entry_bind(struct lnx_pentry *e, int n, uint64_t id);
LNX_HIDDEN int lnx_pep_start(struct lnx_pentry *e, int tagged);
LNX_HIDDEN int lnx_pep_discard(struct lnx_pentry *e, int tagged);
/* The next message C left to Go (lnx_pep_take), in arrival order, and
 * whether it is tagged; NULL when none is left. */
LNX_HIDDEN struct lnx_pentry *lnx_pep_stash_pop(struct lnx_pep *p, int *tagged);
/* Hands Go the oldest send C made that it has not adopted (its context,
 * flags and lnx fi_addr in the s_* fields, to be read at once: the core
 * may complete it at the next call): from now its completion carries id.
 * NULL when none is left. Only while not lent. */
LNX_HIDDEN struct lnx_pctx *lnx_pep_csend_pop(struct lnx_pep *p, uint64_t id);

#endif
