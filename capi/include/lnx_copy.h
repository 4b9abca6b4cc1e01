/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * The small-copy helper of the fast paths, shared by capi (shm records,
 * armed receives) and peers/ofi/tp.c (a lent transport's eager sends).
 */
#ifndef LNX_COPY_H
#define LNX_COPY_H

#include <stdint.h>
#include <string.h>

/* lnx_copy_payload copies a record's payload: 1-16 bytes without a call
 * (overlapping loads and stores of both ends), for the payloads MPI's
 * small messages carry; more by memcpy. */
static inline void lnx_copy_payload(void *dstp, const void *srcp, size_t len)
{
	char *dst = dstp;
	const char *src = srcp;
	if (len > 16) {
		memcpy(dst, src, len);
	} else if (len >= 8) {
		uint64_t a, b;
		__builtin_memcpy(&a, src, 8);
		__builtin_memcpy(&b, src + len - 8, 8);
		__builtin_memcpy(dst, &a, 8);
		__builtin_memcpy(dst + len - 8, &b, 8);
	} else if (len >= 4) {
		uint32_t a, b;
		__builtin_memcpy(&a, src, 4);
		__builtin_memcpy(&b, src + len - 4, 4);
		__builtin_memcpy(dst, &a, 4);
		__builtin_memcpy(dst + len - 4, &b, 4);
	} else if (len) {
		char a = src[0], b = src[len / 2], c = src[len - 1];
		dst[0] = a;
		dst[len / 2] = b;
		dst[len - 1] = c;
	}
}

#endif
