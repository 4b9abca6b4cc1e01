/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * The check the unit tests that compile lnx's C files without Go share:
 * CHECK(cond, fmt, ...) reports a failed condition with its place and
 * counts it in unit_failures; main returns non-zero if any failed.
 */
#ifndef LNX_UNIT_CHECK_H
#define LNX_UNIT_CHECK_H
#include <stdio.h>

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

#endif
