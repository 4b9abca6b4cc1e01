/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/* Helpers shared by the MPI acceptance tests for the lnx provider.
 *
 * Every program counts the mismatches it finds (printing the first few with
 * what differed), sums them over all ranks at the end and has rank 0 print
 * "<name>: ok" or "<name>: FAILED (<n> errors)"; run_mpi.sh looks for the
 * "ok" line. The exit status is non-zero on any mismatch. */
#ifndef LNX_MPITEST_H
#define LNX_MPITEST_H

#include <mpi.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int mt_rank = -1, mt_size = 0;
static long mt_errors;
static const char *mt_name = "mpitest";

/* Print at most this many mismatches per rank; all are counted. */
#define MT_MAX_REPORTS 20

static __attribute__((unused)) void mt_error(const char *fmt, ...)
{
	mt_errors++;
	if (mt_errors > MT_MAX_REPORTS) {
		if (mt_errors == MT_MAX_REPORTS + 1)
			fprintf(stderr, "%s: rank %d: further errors not shown\n", mt_name,
				mt_rank);
		return;
	}
	char msg[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	fprintf(stderr, "%s: rank %d: ERROR: %s\n", mt_name, mt_rank, msg);
	fflush(stderr);
}

static void mt_init(int *argc, char ***argv, const char *name, int min_ranks)
{
	mt_name = name;
	MPI_Init(argc, argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &mt_rank);
	MPI_Comm_size(MPI_COMM_WORLD, &mt_size);
	if (mt_size < min_ranks) {
		if (mt_rank == 0)
			fprintf(stderr, "%s: needs at least %d ranks, got %d\n", name, min_ranks,
				mt_size);
		MPI_Abort(MPI_COMM_WORLD, 2);
	}
}

/* Sum the errors over all ranks, report, finalize; returns the exit code. */
static int mt_finish(void)
{
	long total = 0;
	MPI_Allreduce(&mt_errors, &total, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
	if (mt_rank == 0) {
		if (total)
			printf("%s: FAILED (%ld errors, %d ranks)\n", mt_name, total, mt_size);
		else
			printf("%s: ok (%d ranks)\n", mt_name, mt_size);
		fflush(stdout);
	}
	MPI_Finalize();
	return total ? 1 : 0;
}

static __attribute__((unused)) void *mt_malloc(size_t n)
{
	void *p = malloc(n ? n : 1);
	if (!p) {
		fprintf(stderr, "%s: rank %d: out of memory (%zu bytes)\n", mt_name, mt_rank, n);
		MPI_Abort(MPI_COMM_WORLD, 3);
	}
	return p;
}

/* Byte i of the message identified by key: a hash, so shifted, repeated or
 * foreign data never matches by accident. */
static inline unsigned char mt_byte(uint64_t key, size_t i)
{
	uint64_t x = (uint64_t)i + key * 0x9E3779B97F4A7C15ull;
	x ^= x >> 29;
	x *= 0xBF58476D1CE4E5B9ull;
	x ^= x >> 32;
	return (unsigned char)x;
}

static __attribute__((unused)) void mt_fill(void *buf, size_t len, uint64_t key)
{
	unsigned char *b = buf;
	for (size_t i = 0; i < len; i++)
		b[i] = mt_byte(key, i);
}

/* Check len bytes against key; reports the first differing byte. Returns
 * 0 when equal. */
static __attribute__((unused)) int mt_check(const void *buf, size_t len, uint64_t key,
					    const char *what)
{
	const unsigned char *b = buf;
	for (size_t i = 0; i < len; i++) {
		unsigned char want = mt_byte(key, i);
		if (b[i] != want) {
			size_t bad = 0;
			for (size_t j = i; j < len; j++)
				bad += b[j] != mt_byte(key, j);
			mt_error("%s: data mismatch at byte %zu of %zu: got 0x%02x want 0x%02x "
				 "(%zu bytes differ)",
				 what, i, len, b[i], want, bad);
			return 1;
		}
	}
	return 0;
}

/* Key for message (src, dst, tag, seq) so each message's payload is unique. */
static inline uint64_t mt_key(int src, int dst, int tag, long seq)
{
	return ((uint64_t)(unsigned)src << 48) ^ ((uint64_t)(unsigned)dst << 32) ^
	       ((uint64_t)(unsigned)tag << 16) ^ (uint64_t)seq ^ 0x5bd1e995ull;
}

/* Check status source, tag and byte count. */
static __attribute__((unused)) int mt_check_status(const MPI_Status *st, int src, int tag,
						   size_t len, const char *what)
{
	int count = -1, bad = 0;
	MPI_Get_count(st, MPI_BYTE, &count);
	if (src != MPI_ANY_SOURCE && st->MPI_SOURCE != src) {
		mt_error("%s: status source %d want %d", what, st->MPI_SOURCE, src);
		bad = 1;
	}
	if (tag != MPI_ANY_TAG && st->MPI_TAG != tag) {
		mt_error("%s: status tag %d want %d", what, st->MPI_TAG, tag);
		bad = 1;
	}
	if (count < 0 || (size_t)count != len) {
		mt_error("%s: count %d want %zu", what, count, len);
		bad = 1;
	}
	return bad;
}

#endif
