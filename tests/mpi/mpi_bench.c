/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/* mpi_bench: MPI-level point-to-point benchmark, as MPI programs see a
 * provider (issue #19): one-way ping-pong latency, windowed bandwidth and
 * message rate, bidirectional bandwidth, and with 4 or more ranks the
 * aggregate message rate of several pairs at once.
 *
 *   mpirun -np 2 mpi_bench [-s 1,64,4096] [-x scale] [-t lat,bw,bibw,pairs]
 *
 * Rank r pairs with r + np/2. Every test moves real data: the receiver
 * checks the first and last byte of every message it gets against the
 * pattern the sender wrote (a wrong or stale buffer is an error, and the
 * run ends "mpi_bench: FAILED"). Rank 0 prints one line per test and size:
 *
 *   mpi_bench: lat <size> <one-way us>
 *   mpi_bench: bw <size> <MB/s> <million messages/s>
 *   mpi_bench: bibw <size> <MB/s, both directions>
 *   mpi_bench: pairs <size> <million messages/s, all pairs> <pairs>
 *
 * then "mpi_bench: ok". tests/mpi/mpi_bench.sh runs it over several
 * transports and prints ratios; it is a benchmark, not a timed test. */
#define _GNU_SOURCE
#include "mpitest.h"

#include <unistd.h>

#define WINDOW	  64
#define MAX_SIZES 64

static int peer, pairs, is_sender; /* the lower rank of a pair sends */
static double scale = 1.0;
static char *sbuf, *rbuf;

static unsigned char pat(size_t size, long it)
{
	return (unsigned char)(size * 31 + it * 7 + 1);
}

/* Writes the pattern's first and last byte; the rest of the buffer keeps
 * whatever it had (the copy is what is measured, not a memset). */
static void mark(char *b, size_t size, long it)
{
	if (size)
		b[0] = (char)pat(size, it);
	if (size > 1)
		b[size - 1] = (char)(pat(size, it) ^ 0x5a);
}

static void check(const char *b, size_t size, long it, const char *what)
{
	if (size && ((unsigned char)b[0] != pat(size, it) ||
		     (size > 1 && (unsigned char)b[size - 1] != (pat(size, it) ^ 0x5a))))
		mt_error("%s size %zu iteration %ld: got %02x..%02x, want %02x..%02x", what, size,
			 it, (unsigned char)b[0], (unsigned char)b[size - 1], pat(size, it),
			 pat(size, it) ^ 0x5a);
}

static long iters(size_t size, long small, long bytes_budget)
{
	long n = size ? bytes_budget / (long)size : small;
	if (n > small)
		n = small;
	if (n < 20)
		n = 20;
	n = (long)(n * scale);
	return n < 4 ? 4 : n;
}

/* One-way latency: half the round trip of a ping-pong, receives posted
 * before the message can arrive only as MPI_Recv does it. */
/* An untimed ping-pong of every pair before the first test, as fi_bench
 * warms up: the first tens of milliseconds of a process that loaded lnx
 * run slower (the Go runtime's monitor thread polls every 20 us until it
 * backs off; README, "Notes for integrators"), and whichever size came first was
 * measured 20-30% slower than the same size run second. 50,000 round
 * trips, scaled by -x like every test (at least 1,000): a short run over a
 * slower network core (tcp;ofi_rxm between simulated nodes, on a loaded
 * machine 1-2 ms a round trip) is not all warm-up. */
static void warm_up(void)
{
	char b = 0;
	long n = (long)(50000 * scale);
	if (n < 1000)
		n = 1000;
	for (long i = 0; i < n; i++) {
		if (is_sender) {
			MPI_Send(&b, 1, MPI_BYTE, peer, 3, MPI_COMM_WORLD);
			MPI_Recv(&b, 1, MPI_BYTE, peer, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
		} else {
			MPI_Recv(&b, 1, MPI_BYTE, peer, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
			MPI_Send(&b, 1, MPI_BYTE, peer, 3, MPI_COMM_WORLD);
		}
	}
}

static double lat(size_t size, MPI_Comm comm)
{
	long n = iters(size, 10000, 400L << 20), warm = n / 10 + 2;
	double t0 = 0;
	MPI_Barrier(comm);
	for (long i = -warm; i < n; i++) {
		if (i == 0)
			t0 = MPI_Wtime();
		if (is_sender) {
			mark(sbuf, size, i);
			MPI_Send(sbuf, (int)size, MPI_BYTE, peer, 1, MPI_COMM_WORLD);
			MPI_Recv(rbuf, (int)size, MPI_BYTE, peer, 2, MPI_COMM_WORLD,
				 MPI_STATUS_IGNORE);
			check(rbuf, size, i, "lat reply");
		} else {
			MPI_Recv(rbuf, (int)size, MPI_BYTE, peer, 1, MPI_COMM_WORLD,
				 MPI_STATUS_IGNORE);
			check(rbuf, size, i, "lat");
			mark(sbuf, size, i);
			MPI_Send(sbuf, (int)size, MPI_BYTE, peer, 2, MPI_COMM_WORLD);
		}
	}
	return (MPI_Wtime() - t0) / n / 2 * 1e6;
}

/* Windows of WINDOW messages (receives pre-posted, one zero-byte ack per
 * window), between the ranks of comm that pair up. both: the two ranks
 * send at once (bibw). Returns seconds for the measured windows; *msgs is
 * the messages one direction moved. */
static double windows(size_t size, int both, MPI_Comm comm, long *msgs)
{
	long n = iters(size, 2000 / (WINDOW / 16), (800L << 20) / WINDOW);
	long warm = n / 10 + 2;
	MPI_Request rq[2 * WINDOW];
	size_t stride = size ? size : 1;
	double t0 = 0;
	MPI_Barrier(comm);
	for (long w = -warm; w < n; w++) {
		if (w == 0)
			t0 = MPI_Wtime();
		int k = 0;
		int send = is_sender || both, recv = !is_sender || both;
		if (recv)
			for (int j = 0; j < WINDOW; j++)
				MPI_Irecv(rbuf + j * stride, (int)size, MPI_BYTE, peer, 3,
					  MPI_COMM_WORLD, &rq[k++]);
		if (send)
			for (int j = 0; j < WINDOW; j++) {
				mark(sbuf + j * stride, size, w * WINDOW + j);
				MPI_Isend(sbuf + j * stride, (int)size, MPI_BYTE, peer, 3,
					  MPI_COMM_WORLD, &rq[k++]);
			}
		MPI_Waitall(k, rq, MPI_STATUSES_IGNORE);
		if (recv)
			for (int j = 0; j < WINDOW; j++)
				check(rbuf + j * stride, size, w * WINDOW + j,
				      both ? "bibw" : "bw");
		if (both) {
			MPI_Sendrecv(NULL, 0, MPI_BYTE, peer, 4, NULL, 0, MPI_BYTE, peer, 4,
				     MPI_COMM_WORLD, MPI_STATUS_IGNORE);
		} else if (is_sender) {
			MPI_Recv(NULL, 0, MPI_BYTE, peer, 4, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
		} else {
			MPI_Send(NULL, 0, MPI_BYTE, peer, 4, MPI_COMM_WORLD);
		}
	}
	*msgs = n * WINDOW;
	return MPI_Wtime() - t0;
}

static int parse_sizes(const char *s, size_t *out)
{
	int n = 0;
	for (const char *p = s; *p && n < MAX_SIZES;) {
		char *end;
		unsigned long long v = strtoull(p, &end, 10);
		if (end == p)
			return -1;
		if (*end == 'k' || *end == 'K')
			v <<= 10, end++;
		else if (*end == 'm' || *end == 'M')
			v <<= 20, end++;
		out[n++] = (size_t)v;
		p = *end == ',' ? end + 1 : end;
		if (*end && *end != ',')
			return -1;
	}
	return n;
}

int main(int argc, char **argv)
{
	const char *sizes_arg = "1,8,64,512,4k,32k,256k,1m,4m", *tests = "lat,bw,bibw,pairs";
	mt_init(&argc, &argv, "mpi_bench", 2);
	int opt;
	while ((opt = getopt(argc, argv, "s:x:t:")) != -1) {
		switch (opt) {
		case 's':
			sizes_arg = optarg;
			break;
		case 'x':
			scale = atof(optarg);
			break;
		case 't':
			tests = optarg;
			break;
		default:
			if (mt_rank == 0)
				fprintf(stderr, "usage: mpi_bench [-s sizes] [-x scale] [-t "
						"lat,bw,bibw,pairs]\n");
			MPI_Abort(MPI_COMM_WORLD, 2);
		}
	}
	size_t sizes[MAX_SIZES], maxsz = 1;
	int nsizes = parse_sizes(sizes_arg, sizes);
	if (nsizes <= 0 || mt_size < 2 || mt_size % 2 || scale <= 0) {
		if (mt_rank == 0)
			fprintf(stderr,
				"mpi_bench: bad sizes %s, scale %g or rank count %d (need an even "
				"count)\n",
				sizes_arg, scale, mt_size);
		MPI_Abort(MPI_COMM_WORLD, 2);
	}
	for (int i = 0; i < nsizes; i++)
		if (sizes[i] > maxsz)
			maxsz = sizes[i];
	pairs = mt_size / 2;
	peer = mt_rank < pairs ? mt_rank + pairs : mt_rank - pairs;
	is_sender = mt_rank < pairs;
	sbuf = malloc(maxsz * WINDOW);
	rbuf = malloc(maxsz * WINDOW);
	if (!sbuf || !rbuf) {
		fprintf(stderr, "mpi_bench: out of memory for %zu-byte windows\n", maxsz * WINDOW);
		MPI_Abort(MPI_COMM_WORLD, 2);
	}
	memset(sbuf, 0xa5, maxsz * WINDOW);
	memset(rbuf, 0, maxsz * WINDOW);
	warm_up();
	/* Two-rank tests run on the first pair only; the other ranks wait. */
	MPI_Comm pair;
	MPI_Comm_split(MPI_COMM_WORLD, mt_rank == 0 || mt_rank == pairs ? 0 : MPI_UNDEFINED,
		       mt_rank, &pair);
	for (int i = 0; i < nsizes; i++) {
		size_t sz = sizes[i];
		long msgs;
		if (strstr(tests, "lat") && pair != MPI_COMM_NULL) {
			double us = lat(sz, pair);
			if (mt_rank == 0)
				printf("mpi_bench: lat %zu %.3f\n", sz, us);
		}
		if (strstr(tests, "bw") && pair != MPI_COMM_NULL) {
			double t = windows(sz, 0, pair, &msgs);
			if (mt_rank == 0)
				printf("mpi_bench: bw %zu %.3f %.5f\n", sz,
				       msgs * (double)sz / t / 1e6, msgs / t / 1e6);
		}
		if (strstr(tests, "bibw") && pair != MPI_COMM_NULL) {
			double t = windows(sz, 1, pair, &msgs);
			if (mt_rank == 0)
				printf("mpi_bench: bibw %zu %.3f\n", sz,
				       2 * msgs * (double)sz / t / 1e6);
		}
		if (strstr(tests, "pairs") && pairs > 1) {
			/* All pairs at once; the slowest pair's time counts. */
			double t = windows(sz, 0, MPI_COMM_WORLD, &msgs), tmax;
			MPI_Reduce(&t, &tmax, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
			if (mt_rank == 0)
				printf("mpi_bench: pairs %zu %.4f %d\n", sz,
				       pairs * msgs / tmax / 1e6, pairs);
		}
		fflush(stdout);
		MPI_Barrier(MPI_COMM_WORLD);
	}
	if (pair != MPI_COMM_NULL)
		MPI_Comm_free(&pair);
	free(sbuf);
	free(rbuf);
	return mt_finish();
}
