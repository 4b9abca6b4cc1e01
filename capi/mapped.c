/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * lnx_mapped: the check that a send buffer of more than a page is mapped
 * over its whole length before C hands it to a core that reads it
 * (fast_send.c's lnx_copyable; Go's internal/memmap checks its own sends).
 *
 * The check is one msync(MS_ASYNC) over the buffer's pages (ENOMEM for a
 * hole, nothing written back). A system call per send is what made 8 KiB
 * messages over tcp;ofi_rxm 1.2x of the core alone on a VM whose system
 * calls cost 1 us, so each thread keeps the last LNX_MAPPED_WAYS page
 * ranges it found mapped, for lnx_mapped_ttl_ns, and answers a buffer
 * inside one of them without a call: applications send from the same
 * buffers again and again, microseconds apart.
 *
 * What the cache gives up: memory unmapped within that time after a check
 * is not noticed, nor a shorter mapping placed at the same address in
 * that time (a buffer too short for its length there is then left to the
 * core, as without lnx). Only success is cached, so a refused buffer is
 * checked again each time.
 */
#include <errno.h>
#include <stdint.h>
#include <unistd.h>
#include "lnx_internal.h"

uint64_t lnx_mapped_ttl_ns = LNX_MAPPED_TTL_NS;

struct lnx_mapped_cache {
	uintptr_t lo[LNX_MAPPED_WAYS], hi[LNX_MAPPED_WAYS];
	uint64_t at[LNX_MAPPED_WAYS]; /* when it was found mapped */
	unsigned next;
};

/* Per thread: no lock on the send path, and a thread's own buffers are
 * what it sends again. */
static __thread struct lnx_mapped_cache lnx_mc;

int lnx_mapped(const void *buf, size_t len)
{
	static uintptr_t pg;
	if (!pg)
		pg = (uintptr_t)sysconf(_SC_PAGESIZE);
	uintptr_t b = (uintptr_t)buf, end = b + len;
	if (len <= pg)
		return 1; /* as Go's memmap.Checked: a page or less is taken */
	if (end < b)
		return 0; /* wraps the address space: no mapping holds it */
	uintptr_t lo = b & ~(pg - 1), hi = (end + pg - 1) & ~(pg - 1);
	struct lnx_mapped_cache *c = &lnx_mc;
	uint64_t now = 0;
	int w = -1;
	for (int i = 0; i < LNX_MAPPED_WAYS; i++) {
		if (lo < c->lo[i] || hi > c->hi[i])
			continue;
		if (!now)
			now = lnx_mono_ns();
		if (now - c->at[i] < lnx_mapped_ttl_ns)
			return 1;
		w = i; /* expired: checked again in its place */
	}
	if (msync((void *)lo, hi - lo, MS_ASYNC) != 0)
		return errno != ENOMEM; /* another error says nothing of holes */
	if (w < 0)
		w = (int)(c->next++ % LNX_MAPPED_WAYS);
	c->lo[w] = lo;
	c->hi[w] = hi;
	c->at[w] = now ? now : lnx_mono_ns();
	return 1;
}
