/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * mapped_cache: capi/mapped.c's lnx_mapped, the check that a send buffer
 * over a page is mapped, and its per-thread cache of ranges found mapped
 * (linked with --wrap=msync to count the system calls):
 *
 *  - a mapped range is checked once; the same range, or one inside it,
 *    again makes no call; one reaching past it is checked;
 *  - a range with a hole (its last page unmapped) is refused, and checked
 *    again each time (a refusal is never cached); so is one that an error
 *    other than ENOMEM answered (not refused: it says nothing of holes);
 *  - the cache holds the last LNX_MAPPED_WAYS ranges: the oldest of
 *    LNX_MAPPED_WAYS + 1 is checked again;
 *  - each thread has its own cache;
 *  - a range found mapped longer than lnx_mapped_ttl_ns ago is checked
 *    again (and refused once its memory is gone), in its own place;
 *  - a length that wraps the address space is refused without a call;
 *    a buffer of a page or less is accepted without one, as Go's
 *    memmap.Checked takes it.
 */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <sys/mman.h>
#include <unistd.h>
#include "lnx_capi.h"
#include "lnx_internal.h"
#include "unit.h"

static int msyncs, fail_with;
int __real_msync(void *addr, size_t len, int flags);
int __wrap_msync(void *addr, size_t len, int flags)
{
	msyncs++;
	if (fail_with) {
		errno = fail_with;
		return -1;
	}
	return __real_msync(addr, len, flags);
}

static char *pages;
static size_t pg;

static void *other_thread(void *arg)
{
	(void)arg;
	int before = msyncs;
	CHECK(lnx_mapped(pages, 2 * pg) == 1, "another thread: mapped range refused");
	CHECK(msyncs == before + 1, "another thread used this thread's cache (%d calls)",
	      msyncs - before);
	return NULL;
}

int main(void)
{
	/* Long, so that a preempted test still sees what it cached; the
	 * expiry is tested by setting it short. */
	lnx_mapped_ttl_ns = 60 * 1000000000ull;
	pg = (size_t)sysconf(_SC_PAGESIZE);
	size_t n = 2 * (LNX_MAPPED_WAYS + 2);
	pages = mmap(NULL, n * pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (pages == MAP_FAILED) {
		perror("mmap");
		return 2;
	}
	/* A hole at the last page. */
	CHECK(munmap(pages + (n - 1) * pg, pg) == 0, "munmap");

	CHECK(lnx_mapped(pages + 10, 2 * pg) == 1 && msyncs == 1, "first check: %d calls", msyncs);
	CHECK(lnx_mapped(pages + 10, 2 * pg) == 1 && lnx_mapped(pages, 3 * pg) == 1 &&
		      lnx_mapped(pages + pg, pg + 5) == 1 && msyncs == 1,
	      "the same range and ranges inside it: %d calls, not 1", msyncs);
	CHECK(lnx_mapped(pages, 3 * pg + 1) == 1 && msyncs == 2,
	      "a range one byte past it: %d calls, not 2", msyncs);

	for (int i = 0; i < 2; i++)
		CHECK(lnx_mapped(pages + (n - 3) * pg, 3 * pg) == 0 && msyncs == 3 + i,
		      "a range over the hole, check %d: %d calls", i, msyncs);

	fail_with = EINVAL;
	CHECK(lnx_mapped(pages + 4 * pg, 2 * pg) == 1 && msyncs == 5, "EINVAL: refused");
	fail_with = 0;
	CHECK(lnx_mapped(pages + 4 * pg, 2 * pg) == 1 && msyncs == 6,
	      "a range EINVAL answered was cached (%d calls)", msyncs);

	/* The ranges of pages 4-5 and 0-3 are cached; LNX_MAPPED_WAYS more
	 * evict both. */
	for (int i = 0; i < LNX_MAPPED_WAYS; i++)
		CHECK(lnx_mapped(pages + (size_t)(6 + i) * pg, 2 * pg) == 1, "range %d refused", i);
	int before = msyncs;
	CHECK(before == 6 + LNX_MAPPED_WAYS, "%d distinct ranges made %d calls", LNX_MAPPED_WAYS,
	      before - 6);
	CHECK(lnx_mapped(pages + (size_t)(5 + LNX_MAPPED_WAYS) * pg, pg + 1) == 1 &&
		      msyncs == before,
	      "the newest range was not kept");
	CHECK(lnx_mapped(pages, 3 * pg) == 1 && msyncs == before + 1,
	      "an evicted range was not checked again (%d calls)", msyncs - before);

	pthread_t t;
	CHECK(pthread_create(&t, NULL, other_thread, NULL) == 0, "pthread_create");
	pthread_join(t, NULL);

	/* Expiry: the range of pages 0-2 is cached (just checked again); with
	 * the time short it is checked again, and once its last page is
	 * unmapped, refused. Its place is reused: the newest range stays. */
	before = msyncs;
	lnx_mapped_ttl_ns = 1;
	CHECK(lnx_mapped(pages, 3 * pg) == 1 && msyncs == before + 1,
	      "an expired range was not checked again (%d calls)", msyncs - before);
	CHECK(munmap(pages + 2 * pg, pg) == 0, "munmap");
	CHECK(lnx_mapped(pages, 3 * pg) == 0 && msyncs == before + 2,
	      "an expired range whose memory is gone: accepted");
	lnx_mapped_ttl_ns = 60 * 1000000000ull;
	CHECK(lnx_mapped(pages + (size_t)(5 + LNX_MAPPED_WAYS) * pg, pg + 1) == 1 &&
		      msyncs == before + 2,
	      "re-checking an expired range evicted another");

	before = msyncs;
	CHECK(lnx_mapped((void *)(UINTPTR_MAX - pg), 2 * pg) == 0 && msyncs == before,
	      "a wrapping length: accepted or checked");
	CHECK(lnx_mapped(pages, 0) == 1 && lnx_mapped(pages + (n - 1) * pg - 10, pg) == 1 &&
		      msyncs == before,
	      "an empty buffer, or a page's length over the hole, was checked");

	if (unit_failures)
		return 1;
	printf("mapped_cache: ok\n");
	return 0;
}
