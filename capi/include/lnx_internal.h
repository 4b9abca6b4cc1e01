/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * What capi's C files share and nothing outside capi uses: the helpers every
 * fid uses, the spin lock and completion ring writers of the fast paths, and
 * the functions and ops tables one file defines for another. Everything
 * declared here is hidden: the library exports only what libfabric and Go
 * need.
 */
#ifndef LNX_INTERNAL_H
#define LNX_INTERNAL_H

#include <stdlib.h>
#include <sys/mman.h>
#include <time.h>
#include "lnx_capi.h"
#include "lnx_copy.h"
#include "_cgo_export.h" /* the Go entry points (lnx_go_*) */

#define LNX_HIDDEN __attribute__((visibility("hidden")))

#define LNX_H(type, fidp) (((struct type *)(void *)(fidp))->h)

/* Unsupported operations. */
static inline int nosys_bind(struct fid *fid, struct fid *bfid, uint64_t flags)
{
	return -FI_ENOSYS;
}
static inline int nosys_control(struct fid *fid, int command, void *arg)
{
	return -FI_ENOSYS;
}
static inline int nosys_ops_open(struct fid *fid, const char *name, uint64_t flags, void **ops,
				 void *context)
{
	return -FI_ENOSYS;
}
static inline int nosys_ops_set(struct fid *fid, const char *name, uint64_t flags, void *ops,
				void *context)
{
	return -FI_ENOSYS;
}

static inline int lnx_close_common(struct fid *fid, lnx_handle h)
{
	int ret = lnx_go_close(h);
	if (ret == 0)
		free(fid);
	return ret;
}

static inline void lnx_spin_lock(uint32_t *l)
{
	while (__atomic_exchange_n(l, 1, __ATOMIC_ACQUIRE))
		while (__atomic_load_n(l, __ATOMIC_RELAXED))
			__builtin_ia32_pause();
}
static inline void lnx_spin_unlock(uint32_t *l)
{
	__atomic_store_n(l, 0, __ATOMIC_RELEASE);
}

/*
 * The fast paths' locks (and the gate's reader count) keep out two kinds
 * of concurrent caller: other application threads, and Go's watcher
 * goroutine (lnx/wait.go), which drives progress for a CQ or counter with
 * a wait object. A serial domain (struct lnx_domain's serial: opened with
 * FI_THREAD_DOMAIN, no CQ or counter with a wait object) has neither: the
 * application serializes every call into it, and C and Go touch these
 * words only within those calls. Its fast paths skip the locked
 * instructions, which were most of C's time per small message.
 */
static inline void lnx_lock(uint32_t *l, int serial)
{
	if (!serial)
		lnx_spin_lock(l);
}
static inline void lnx_unlock(uint32_t *l, int serial)
{
	if (!serial)
		lnx_spin_unlock(l);
}
/* lnx_trylock: 1 when taken (or serial), 0 when another thread holds it. */
static inline int lnx_trylock(uint32_t *l, int serial)
{
	return serial || !__atomic_exchange_n(l, 1, __ATOMIC_ACQUIRE);
}
/* A gate's readers count (struct lnx_gate): C scanning what an endpoint
 * leaving, or Go unmapping a region, waits out; a serial domain needs none. */
static inline void lnx_readers_in(struct lnx_gate *g, int serial)
{
	if (!serial)
		__atomic_fetch_add(&g->readers, 1, __ATOMIC_SEQ_CST);
}
static inline void lnx_readers_out(struct lnx_gate *g, int serial)
{
	if (!serial)
		__atomic_fetch_sub(&g->readers, 1, __ATOMIC_RELEASE);
}
static inline int lnx_serial(const uint32_t *serial)
{
	return serial && __atomic_load_n(serial, __ATOMIC_RELAXED);
}

/* An shm ring record's length in the ring for body bytes after its header
 * (payload, or a rendezvous record's pieces), and the stamp a record at
 * position pos of a ring salted salt carries once written
 * (lnx_capi.h, shm/layout.go). */
static inline uint64_t lnx_rec_len(uint64_t body)
{
	return (LNX_REC_HDR + body + LNX_REC_LINE - 1) & ~(uint64_t)(LNX_REC_LINE - 1);
}
static inline uint64_t lnx_rec_stamp(uint64_t pos, uint64_t salt)
{
	return (pos ^ salt) | 1;
}

/* lnx_cring_put appends one completion (cr->lock held, room checked). */
static inline void lnx_cring_put(struct lnx_cring *cr, void *ctx, void *buf, uint64_t flags,
				 uint64_t len, uint64_t data, uint64_t tag, uint64_t src)
{
	typeof(cr->e[0]) *x = &cr->e[cr->tail % LNX_CRING];
	x->ctx = ctx;
	x->buf = buf;
	x->flags = flags;
	x->len = len;
	x->data = data;
	x->tag = tag;
	x->src = src;
	__atomic_store_n(&cr->tail, cr->tail + 1, __ATOMIC_RELEASE);
}

/* lnx_cring_reserve takes cr->lock (unless serial) if the ring has room
 * for one more completion (1); a full ring is left unlocked (0). */
static inline int lnx_cring_reserve(struct lnx_cring *cr, int serial)
{
	lnx_lock(&cr->lock, serial);
	if (cr->tail - cr->head < LNX_CRING)
		return 1;
	lnx_unlock(&cr->lock, serial);
	return 0;
}

#define ONE_IOV(buf, len) struct iovec one = { .iov_base = (void *)(buf), .iov_len = (len) }

/*
 * lnx_map returns n zeroed bytes of their own mapping, or NULL. The fast
 * send table and the completion ring live there rather than in malloc
 * memory: the table is large and mostly never touched (its pages never
 * become resident), and neither sits in an allocator's (or ASan's)
 * quarantine after close.
 */
static inline void *lnx_map(size_t n)
{
	void *p = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	return p == MAP_FAILED ? NULL : p;
}

/* lnx_mono_ns: CLOCK_MONOTONIC in nanoseconds (the gate's clock, cq_ring.c;
 * the age of a range lnx_mapped found mapped). */
static inline uint64_t lnx_mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/*
 * lnx_mapped reports whether every page [buf, buf+len) covers is mapped
 * (mapped.c): one msync, or none for a range this thread found mapped
 * less than lnx_mapped_ttl_ns ago (a cache of LNX_MAPPED_WAYS ranges;
 * the unit tests change the time).
 */
#define LNX_MAPPED_WAYS	  8
#define LNX_MAPPED_TTL_NS 1000000u /* 1 ms */
LNX_HIDDEN extern uint64_t lnx_mapped_ttl_ns;
LNX_HIDDEN int lnx_mapped(const void *buf, size_t len);

/* Ops tables the endpoint (ep.c) and lnx_handle_of compare with. */
LNX_HIDDEN extern struct fi_ops lnx_av_fi_ops;		  /* av.c */
LNX_HIDDEN extern struct fi_ops lnx_cq_fi_ops;		  /* cq.c */
LNX_HIDDEN extern struct fi_ops lnx_cntr_fi_ops;	  /* cntr.c */
LNX_HIDDEN extern struct fi_ops_mr lnx_domain_mr_ops;	  /* mr.c */
LNX_HIDDEN extern struct fi_ops_rma lnx_ep_rma_ops;	  /* rma.c */
LNX_HIDDEN extern struct fi_ops_atomic lnx_ep_atomic_ops; /* atomic.c */

#define LNX_FAST_DECLINED 1 /* not a libfabric return value: Go takes the send */
/* The fast send path (fast_send.c): 0 when sent, or declined. */
LNX_HIDDEN ssize_t lnx_fast_send(struct lnx_fast *f, int serial, const struct iovec *iov,
				 size_t count, fi_addr_t dest, uint64_t tag, uint64_t data,
				 void *ctx, int kind);
/* Queued receives and re-arming (recv_queue.c): 0, or declined. */
LNX_HIDDEN ssize_t lnx_fast_recv(struct lnx_fast *f, int serial, const struct iovec *iov,
				 void **desc, size_t count, fi_addr_t src, uint64_t tag,
				 uint64_t ignore, void *ctx, int kind);

#define LNX_ARM_GO (-1) /* a record C cannot take: Go must run */
/* Armed receives (arm.c): how many of up to budget it completed, 0 for
 * nothing new, or LNX_ARM_GO. */
LNX_HIDDEN int lnx_arm_take(struct lnx_gate *g, int serial, int budget, int *idle);

/* The completion ring and the gate (cq_ring.c). */
LNX_HIDDEN int lnx_cq_idle(struct lnx_gate *g, int serial);
LNX_HIDDEN int lnx_cq_idle_held(struct lnx_gate *g);
LNX_HIDDEN ssize_t lnx_cring_read(struct lnx_cring *r, int serial, void *buf, size_t count,
				  fi_addr_t *src);

#endif
