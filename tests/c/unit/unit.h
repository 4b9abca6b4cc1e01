/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * What the unit tests that compile lnx's C files without Go share:
 * CHECK(cond, fmt, ...) reports a failed condition with its place and
 * counts it in unit_failures (main returns non-zero if any failed), and
 * zalloc hands out zeroed, cache-line aligned memory standing in for the
 * shared memory the code under test reads.
 */
#ifndef LNX_UNIT_H
#define LNX_UNIT_H
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int unit_failures;
#define CHECK(cond, ...)                                                     \
	do {                                                                 \
		if (!(cond)) {                                               \
			fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__); \
			fprintf(stderr, __VA_ARGS__);                        \
			fputc('\n', stderr);                                 \
			unit_failures++;                                     \
		}                                                            \
	} while (0)

static inline void *zalloc(size_t n)
{
	void *p = aligned_alloc(64, (n + 63) & ~(size_t)63);
	if (!p) {
		perror("aligned_alloc");
		exit(2);
	}
	memset(p, 0, n);
	return p;
}

#endif
