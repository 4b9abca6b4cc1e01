/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/* Collectives over the ofi MTL (Open MPI's coll components run on top of
 * point-to-point, so these exercise lnx with the traffic patterns of real
 * applications). Every result is computed independently and compared
 * element by element:
 *
 *   MPI_Allreduce  SUM/MAX/MIN on MPI_INT, SUM on MPI_DOUBLE (integer-valued,
 *                  so exact), MPI_MAXLOC on MPI_DOUBLE_INT, MPI_IN_PLACE;
 *                  counts 0, 1, 7, 1000, 16384 and 300000 (1.2 MB of ints)
 *   MPI_Alltoall   MPI_INT, 1 .. 40000 elements per rank pair, and
 *                  MPI_IN_PLACE; every block names its source, destination
 *                  and element index
 *   MPI_Bcast      from every root, 0 bytes .. 2 MiB
 *   MPI_Barrier    between repetitions; ITERS repetitions of the lot. */
#include "mpitest.h"

#define ITERS 3

static const int red_counts[] = { 0, 1, 7, 1000, 16384, 300000 };
static const int a2a_counts[] = { 1, 3, 256, 4096, 17000, 40000 };
static const size_t bc_sizes[] = { 0, 1, 100, 4096, 65536, 65537, 300000, 2u << 20 };
#define N(a) ((int)(sizeof(a) / sizeof((a)[0])))

/* Value rank r contributes at element i in iteration it: varied signs, never
 * large enough to overflow an int when summed over a few hundred ranks. */
static int ival(int r, int i, int it)
{
	return ((i * 31 + r * 1009 + it * 7) % 20001) - 10000;
}

static void test_allreduce(int it)
{
	int maxc = red_counts[N(red_counts) - 1];
	int *in = mt_malloc(sizeof(int) * maxc), *out = mt_malloc(sizeof(int) * maxc);
	double *din = mt_malloc(sizeof(double) * maxc), *dout = mt_malloc(sizeof(double) * maxc);
	struct {
		double v;
		int loc;
	} *lin = mt_malloc(sizeof(*lin) * maxc), *lout = mt_malloc(sizeof(*lout) * maxc);

	for (int c = 0; c < N(red_counts); c++) {
		int n = red_counts[c];
		for (int i = 0; i < n; i++) {
			in[i] = ival(mt_rank, i, it);
			din[i] = (double)in[i] * 0.5;
			lin[i].v = (double)((i + mt_rank * 7) % mt_size);
			lin[i].loc = mt_rank;
		}
		MPI_Op ops[] = { MPI_SUM, MPI_MAX, MPI_MIN };
		const char *opn[] = { "SUM", "MAX", "MIN" };
		for (int o = 0; o < 3; o++) {
			memset(out, 0x5A, sizeof(int) * maxc);
			MPI_Allreduce(in, out, n, MPI_INT, ops[o], MPI_COMM_WORLD);
			int bad = 0;
			for (int i = 0; i < n && !bad; i++) {
				long want = o == 0 ? 0 : ival(0, i, it);
				for (int r = 0; r < mt_size; r++) {
					long v = ival(r, i, it);
					if (o == 0)
						want += v;
					else if (o == 1 ? v > want : v < want)
						want = v;
				}
				if (out[i] != want) {
					mt_error("iter %d: Allreduce %s MPI_INT count %d: element "
						 "%d is %d want %ld",
						 it, opn[o], n, i, out[i], want);
					bad = 1;
				}
			}
		}
		/* Double SUM, in place. */
		memcpy(dout, din, sizeof(double) * n);
		MPI_Allreduce(MPI_IN_PLACE, dout, n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
		for (int i = 0; i < n; i++) {
			double want = 0;
			for (int r = 0; r < mt_size; r++)
				want += (double)ival(r, i, it) * 0.5;
			if (dout[i] != want) {
				mt_error("iter %d: Allreduce SUM MPI_DOUBLE in place count %d: "
					 "element %d is %g want %g",
					 it, n, i, dout[i], want);
				break;
			}
		}
		/* MAXLOC: the maximum is size-1, reached first (lowest rank)
		 * by the smallest r with (i + 7r) % size == size-1. */
		MPI_Allreduce(lin, lout, n, MPI_DOUBLE_INT, MPI_MAXLOC, MPI_COMM_WORLD);
		for (int i = 0; i < n; i++) {
			double wv = -1;
			int wl = -1;
			for (int r = 0; r < mt_size; r++) {
				double v = (double)((i + r * 7) % mt_size);
				if (v > wv) {
					wv = v;
					wl = r;
				}
			}
			if (lout[i].v != wv || lout[i].loc != wl) {
				mt_error("iter %d: Allreduce MAXLOC count %d: element %d is "
					 "(%g,%d) want (%g,%d)",
					 it, n, i, lout[i].v, lout[i].loc, wv, wl);
				break;
			}
		}
	}
	free(in);
	free(out);
	free(din);
	free(dout);
	free(lin);
	free(lout);
}

/* Element i of the block that src sends to dst. */
static int a2a_val(int src, int dst, int i, int it)
{
	return (src << 24) ^ (dst << 16) ^ (i * 3 + it);
}

static void test_alltoall(int it)
{
	int maxc = a2a_counts[N(a2a_counts) - 1];
	size_t tot = (size_t)maxc * mt_size;
	int *sb = mt_malloc(sizeof(int) * tot), *rb = mt_malloc(sizeof(int) * tot);
	for (int c = 0; c < N(a2a_counts); c++) {
		int n = a2a_counts[c];
		for (int in_place = 0; in_place < 2; in_place++) {
			for (int d = 0; d < mt_size; d++)
				for (int i = 0; i < n; i++)
					(in_place ? rb : sb)[(size_t)d * n + i] =
						a2a_val(mt_rank, d, i, it);
			if (in_place) {
				MPI_Alltoall(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, rb, n, MPI_INT,
					     MPI_COMM_WORLD);
			} else {
				memset(rb, 0x5A, sizeof(int) * tot);
				MPI_Alltoall(sb, n, MPI_INT, rb, n, MPI_INT, MPI_COMM_WORLD);
			}
			for (int s = 0; s < mt_size; s++)
				for (int i = 0; i < n; i++) {
					int got = rb[(size_t)s * n + i],
					    want = a2a_val(s, mt_rank, i, it);
					if (got != want) {
						mt_error("iter %d: Alltoall%s %d ints: block from "
							 "%d element %d is 0x%08x want 0x%08x",
							 it, in_place ? " (in place)" : "", n, s, i,
							 got, want);
						s = mt_size;
						break;
					}
				}
		}
	}
	free(sb);
	free(rb);
}

static void test_bcast(int it)
{
	size_t maxl = bc_sizes[N(bc_sizes) - 1];
	unsigned char *buf = mt_malloc(maxl + 16);
	for (int c = 0; c < N(bc_sizes); c++) {
		size_t len = bc_sizes[c];
		for (int root = 0; root < mt_size; root++) {
			uint64_t key = mt_key(root, 0xBC, c, it);
			if (mt_rank == root)
				mt_fill(buf, len, key);
			else
				memset(buf, 0xA5, len);
			memset(buf + len, 0xA5, 16);
			MPI_Bcast(buf, (int)len, MPI_BYTE, root, MPI_COMM_WORLD);
			char what[96];
			snprintf(what, sizeof(what), "iter %d: Bcast of %zu bytes from root %d", it,
				 len, root);
			mt_check(buf, len, key, what);
			for (int g = 0; g < 16; g++)
				if (buf[len + g] != 0xA5) {
					mt_error("%s: wrote past the buffer", what);
					break;
				}
		}
	}
	free(buf);
}

int main(int argc, char **argv)
{
	mt_init(&argc, &argv, "collectives", 2);
	for (int it = 0; it < ITERS; it++) {
		test_allreduce(it);
		MPI_Barrier(MPI_COMM_WORLD);
		test_alltoall(it);
		MPI_Barrier(MPI_COMM_WORLD);
		test_bcast(it);
		MPI_Barrier(MPI_COMM_WORLD);
	}
	if (mt_rank == 0)
		printf("collectives: %d ranks, %d iterations of Allreduce/Alltoall/Bcast checked\n",
		       mt_size, ITERS);
	return mt_finish();
}
