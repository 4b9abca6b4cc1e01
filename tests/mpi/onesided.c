/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/* MPI one-sided communication over lnx: MPI_Put, MPI_Get, MPI_Accumulate,
 * MPI_Fetch_and_op and MPI_Compare_and_swap under the three
 * synchronization modes (fence, post-start-complete-wait, passive-target
 * locks), on a window from MPI_Win_create. Every value is checked.
 *
 * MPI_Win_create, not MPI_Win_allocate: on one node osc/rdma maps an
 * allocated window's memory into every rank and uses CPU loads, stores
 * and atomics on it, bypassing the BTL; a created window's memory is
 * reached through the BTL's put, get and atomics (only the window's lock
 * and synchronization state stays in shared memory).
 *
 * run_mpi_osc.sh runs it with osc/rdma over btl/ofi and lnx selected, and
 * checks in Open MPI's verbose output that btl/ofi ran over lnx. */
#include "mpitest.h"

#define N     1024 /* ints per rank in the window */
#define ITERS 200  /* fetch-adds per rank on one counter */

static int *win_base;
static MPI_Win win;

static int right(void)
{
	return (mt_rank + 1) % mt_size;
}
static int left(void)
{
	return (mt_rank + mt_size - 1) % mt_size;
}
static int val(int origin, int i, int round)
{
	return origin * 1000003 + i * 7 + round;
}

static void clear(void)
{
	MPI_Win_lock(MPI_LOCK_EXCLUSIVE, mt_rank, 0, win);
	for (int i = 0; i < N; i++)
		win_base[i] = -1;
	MPI_Win_unlock(mt_rank, win);
	MPI_Barrier(MPI_COMM_WORLD);
}

/* Fence: put to the right neighbour, get from the left, accumulate into
 * rank 0. */
static void fence(void)
{
	static int buf[N];
	clear();
	for (int i = 0; i < N; i++)
		buf[i] = val(mt_rank, i, 1);
	MPI_Win_fence(0, win);
	MPI_Put(buf, N, MPI_INT, right(), 0, N, MPI_INT, win);
	MPI_Win_fence(0, win);
	for (int i = 0; i < N; i++)
		if (win_base[i] != val(left(), i, 1))
			mt_error("fence put: [%d] = %d, want %d", i, win_base[i],
				 val(left(), i, 1));
	static int got[N];
	memset(got, 0, sizeof(got));
	MPI_Get(got, N, MPI_INT, left(), 0, N, MPI_INT, win);
	MPI_Win_fence(0, win);
	/* Rank left's window holds what left's left put there. */
	int ll = (left() + mt_size - 1) % mt_size;
	for (int i = 0; i < N; i++)
		if (got[i] != val(ll, i, 1))
			mt_error("fence get: [%d] = %d, want %d", i, got[i], val(ll, i, 1));
	if (mt_rank == 0)
		for (int i = 0; i < N; i++)
			win_base[i] = 0;
	MPI_Win_fence(0, win);
	int one[N];
	for (int i = 0; i < N; i++)
		one[i] = mt_rank + i;
	MPI_Accumulate(one, N, MPI_INT, 0, 0, N, MPI_INT, MPI_SUM, win);
	MPI_Win_fence(0, win);
	if (mt_rank == 0) {
		int base = mt_size * (mt_size - 1) / 2;
		for (int i = 0; i < N; i++)
			if (win_base[i] != base + mt_size * i)
				mt_error("fence accumulate: [%d] = %d, want %d", i, win_base[i],
					 base + mt_size * i);
	}
	MPI_Win_fence(0, win);
}

/* Post-start-complete-wait: each rank exposes its window to its left
 * neighbour and accesses its right one. */
static void pscw(void)
{
	clear();
	MPI_Group world, to, from;
	MPI_Comm_group(MPI_COMM_WORLD, &world);
	int r = right(), l = left();
	MPI_Group_incl(world, 1, &r, &to);
	MPI_Group_incl(world, 1, &l, &from);
	static int buf[N];
	for (int i = 0; i < N; i++)
		buf[i] = val(mt_rank, i, 2);
	MPI_Win_post(from, 0, win);
	MPI_Win_start(to, 0, win);
	MPI_Put(buf, N / 2, MPI_INT, r, 0, N / 2, MPI_INT, win);
	MPI_Accumulate(buf + N / 2, N / 2, MPI_INT, r, N / 2, N / 2, MPI_INT, MPI_REPLACE, win);
	MPI_Win_complete(win);
	MPI_Win_wait(win);
	for (int i = 0; i < N; i++)
		if (win_base[i] != val(l, i, 2))
			mt_error("pscw put/accumulate: [%d] = %d, want %d", i, win_base[i],
				 val(l, i, 2));
	/* A get in a second epoch. */
	static int got[N];
	MPI_Win_post(from, 0, win);
	MPI_Win_start(to, 0, win);
	MPI_Get(got, N, MPI_INT, r, 0, N, MPI_INT, win);
	MPI_Win_complete(win);
	MPI_Win_wait(win);
	for (int i = 0; i < N; i++)
		if (got[i] != val(mt_rank, i, 2))
			mt_error("pscw get: [%d] = %d, want %d", i, got[i], val(mt_rank, i, 2));
	MPI_Group_free(&to);
	MPI_Group_free(&from);
	MPI_Group_free(&world);
}

/* Passive target: fetch-adds and compare-and-swaps on rank 0's counters
 * from every rank at once, and put/get under shared locks. */
static void passive(void)
{
	clear();
	if (mt_rank == 0) {
		MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 0, 0, win);
		win_base[0] = 0;
		win_base[1] = 0;
		MPI_Win_unlock(0, win);
	}
	MPI_Barrier(MPI_COMM_WORLD);
	/* Fetch-adds under lock_all with flushes: the fetched values of all
	 * ranks together are exactly 0 .. size*ITERS-1. */
	int *seen = calloc((size_t)mt_size * ITERS, sizeof(int));
	int mine[ITERS];
	MPI_Win_lock_all(0, win);
	for (int k = 0; k < ITERS; k++) {
		int one = 1, old = -1;
		MPI_Fetch_and_op(&one, &old, MPI_INT, 0, 0, MPI_SUM, win);
		MPI_Win_flush(0, win);
		mine[k] = old;
	}
	MPI_Win_unlock_all(win);
	int *all = malloc(sizeof(int) * (size_t)mt_size * ITERS);
	MPI_Allgather(mine, ITERS, MPI_INT, all, ITERS, MPI_INT, MPI_COMM_WORLD);
	for (int i = 0; i < mt_size * ITERS; i++) {
		if (all[i] < 0 || all[i] >= mt_size * ITERS)
			mt_error("fetch_and_op returned %d, out of range", all[i]);
		else if (seen[all[i]]++)
			mt_error("fetch_and_op returned %d twice", all[i]);
	}
	free(all);
	free(seen);
	/* Compare-and-swap: each rank claims slot 1 once, in turn order
	 * decided by the swaps; exactly one rank sees each value. */
	int claimed = -1;
	for (int tries = 0; tries < 100000 && claimed < 0; tries++) {
		MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 0, 0, win);
		int cur = -1, next, old = -1;
		MPI_Fetch_and_op(NULL, &cur, MPI_INT, 0, 1, MPI_NO_OP, win);
		MPI_Win_flush(0, win);
		next = cur + 1;
		MPI_Compare_and_swap(&next, &cur, &old, MPI_INT, 0, 1, win);
		MPI_Win_unlock(0, win);
		if (old == cur)
			claimed = cur;
	}
	int *claims = malloc(sizeof(int) * (size_t)mt_size);
	MPI_Allgather(&claimed, 1, MPI_INT, claims, 1, MPI_INT, MPI_COMM_WORLD);
	int *cs = calloc((size_t)mt_size, sizeof(int));
	for (int i = 0; i < mt_size; i++) {
		if (claims[i] < 0 || claims[i] >= mt_size)
			mt_error("rank %d claimed %d by compare_and_swap", i, claims[i]);
		else if (cs[claims[i]]++)
			mt_error("value %d claimed twice by compare_and_swap", claims[i]);
	}
	free(cs);
	free(claims);
	MPI_Barrier(MPI_COMM_WORLD);
	if (mt_rank == 0) {
		MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 0, 0, win);
		if (win_base[0] != mt_size * ITERS)
			mt_error("counter %d after %d fetch-adds", win_base[0], mt_size * ITERS);
		if (win_base[1] != mt_size)
			mt_error("cas slot %d, want %d", win_base[1], mt_size);
		MPI_Win_unlock(0, win);
	}
	/* Shared locks: put into the right neighbour's upper half, flush,
	 * get it back. */
	static int buf[N / 2], got[N / 2];
	for (int i = 0; i < N / 2; i++)
		buf[i] = val(mt_rank, i, 3);
	MPI_Win_lock(MPI_LOCK_SHARED, right(), 0, win);
	MPI_Put(buf, N / 2, MPI_INT, right(), N / 2, N / 2, MPI_INT, win);
	MPI_Win_flush(right(), win);
	MPI_Get(got, N / 2, MPI_INT, right(), N / 2, N / 2, MPI_INT, win);
	MPI_Win_unlock(right(), win);
	for (int i = 0; i < N / 2; i++)
		if (got[i] != val(mt_rank, i, 3))
			mt_error("lock put/get: [%d] = %d, want %d", i, got[i], val(mt_rank, i, 3));
	MPI_Barrier(MPI_COMM_WORLD);
}

int main(int argc, char **argv)
{
	mt_init(&argc, &argv, "onesided", 2);
	MPI_Alloc_mem(N * sizeof(int), MPI_INFO_NULL, &win_base);
	MPI_Win_create(win_base, N * sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &win);
	fence();
	pscw();
	passive();
	MPI_Win_free(&win);
	MPI_Free_mem(win_base);
	return mt_finish();
}
