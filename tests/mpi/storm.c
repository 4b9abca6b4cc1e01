/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/* Nonblocking storms: every rank exchanges a burst of messages of many sizes
 * (0, tiny, around the shm/rxm eager limits, and well over 64 KiB) with
 * every other rank at once using MPI_Isend/MPI_Irecv, then MPI_Waitall.
 *
 * Each round uses one posting discipline:
 *   0  receives posted before the sends (expected path)
 *   1  sends first, barrier, then receives (unexpected path; large sends
 *      wait for their receive)
 *   2  receives and sends interleaved, per peer, in a shuffled order
 *   3  every message of a pair on ONE tag: receives match in posting order,
 *      so request i must get message i (sizes differ, so a mix-up shows)
 * Receives are posted with a buffer larger than the message (except round
 * 0, exact size). For every receive the status source, tag and count, the
 * payload and the guard bytes past the message are checked. */
#include "mpitest.h"

static const size_t sizes[] = { 0,     1,      7,      64,	 1000,	4095,	4096,  4097,
				8192,  16383,  16384,  16385,	 32768, 65535,	65536, 65537,
				70000, 131072, 262145, 1u << 20, 3,	524288, 100000 };
#define NSIZES	((int)(sizeof(sizes) / sizeof(sizes[0])))
#define NROUNDS 12
#define SLACK	32

static uint64_t rng_state = 88172645463325252ull;
static uint64_t rng(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return rng_state;
}

/* Size of message k from src to dst in round r: a rotation of the list so
 * every pair sees every size, in a different order each round. */
static size_t msg_len(int src, int dst, int r, int k)
{
	return sizes[(k + src * 3 + dst * 5 + r * 7) % NSIZES];
}

static int msg_tag(int r, int k)
{
	return (r % 4 == 3) ? 77 : 100 + k;
}

int main(int argc, char **argv)
{
	mt_init(&argc, &argv, "storm", 2);
	int npeers = mt_size - 1, nmsg = npeers * NSIZES;
	size_t maxbytes = 0;
	for (int k = 0; k < NSIZES; k++)
		maxbytes += sizes[k] + SLACK;
	/* Per peer and direction at most maxbytes. */
	unsigned char *sbuf = mt_malloc(maxbytes * npeers);
	unsigned char *rbuf = mt_malloc(maxbytes * npeers);
	MPI_Request *req = mt_malloc(sizeof(MPI_Request) * 2 * nmsg);
	MPI_Status *st = mt_malloc(sizeof(MPI_Status) * 2 * nmsg);
	/* Book-keeping per receive request. */
	int *r_src = mt_malloc(sizeof(int) * nmsg), *r_k = mt_malloc(sizeof(int) * nmsg);
	size_t *r_off = mt_malloc(sizeof(size_t) * nmsg), *r_cap = mt_malloc(sizeof(size_t) * nmsg);
	/* op list for the shuffled round: >= 0 receive index, < 0 send. */
	int *ops = mt_malloc(sizeof(int) * 2 * nmsg);
	long checked = 0;
	rng_state ^= (uint64_t)mt_rank * 0x9E3779B97F4A7C15ull;

	for (int r = 0; r < NROUNDS; r++) {
		int mode = r % 4;
		int nr = 0, ns = 0;
		MPI_Request *rreq = req, *sreq = req + nmsg;

		/* Describe the receives: peer slot p, message k. */
		for (int p = 0; p < npeers; p++) {
			int src = (mt_rank + 1 + p) % mt_size;
			size_t off = maxbytes * p;
			for (int k = 0; k < NSIZES; k++) {
				size_t len = msg_len(src, mt_rank, r, k);
				r_src[nr] = src;
				r_k[nr] = k;
				r_off[nr] = off;
				r_cap[nr] = len + (mode == 0 ? 0 : SLACK);
				memset(rbuf + off, 0xA5, len + SLACK);
				off += len + SLACK;
				nr++;
			}
		}
		/* Fill the send buffers. */
		for (int p = 0; p < npeers; p++) {
			int dst = (mt_rank + 1 + p) % mt_size;
			size_t off = maxbytes * p;
			for (int k = 0; k < NSIZES; k++) {
				size_t len = msg_len(mt_rank, dst, r, k);
				mt_fill(sbuf + off, len,
					mt_key(mt_rank, dst, msg_tag(r, k), r * 64 + k));
				off += len + SLACK;
			}
		}
#define POST_RECV(i)                                                                      \
	MPI_Irecv(rbuf + r_off[i], (int)r_cap[i], MPI_BYTE, r_src[i], msg_tag(r, r_k[i]), \
		  MPI_COMM_WORLD, &rreq[i])
		/* Sends are described by index s = p * NSIZES + k. */
#define POST_SEND(s)                                                                       \
	do {                                                                               \
		int p_ = (s) / NSIZES, k_ = (s) % NSIZES;                                  \
		int dst_ = (mt_rank + 1 + p_) % mt_size;                                   \
		size_t off_ = maxbytes * p_;                                               \
		for (int j_ = 0; j_ < k_; j_++)                                            \
			off_ += msg_len(mt_rank, dst_, r, j_) + SLACK;                     \
		MPI_Isend(sbuf + off_, (int)msg_len(mt_rank, dst_, r, k_), MPI_BYTE, dst_, \
			  msg_tag(r, k_), MPI_COMM_WORLD, &sreq[s]);                       \
		ns++;                                                                      \
	} while (0)

		switch (mode) {
		case 0:
		case 3:
			for (int i = 0; i < nr; i++)
				POST_RECV(i);
			MPI_Barrier(MPI_COMM_WORLD);
			for (int s = 0; s < nmsg; s++)
				POST_SEND(s);
			break;
		case 1:
			for (int s = 0; s < nmsg; s++)
				POST_SEND(s);
			MPI_Barrier(MPI_COMM_WORLD);
			for (int i = 0; i < nr; i++)
				POST_RECV(i);
			break;
		case 2: {
			/* Shuffle sends and receives together (tags are
			 * distinct, so the receives' order does not matter). */
			int n = 0;
			for (int i = 0; i < nr; i++)
				ops[n++] = i;
			for (int s = 0; s < nmsg; s++)
				ops[n++] = -1 - s;
			for (int i = n - 1; i > 0; i--) {
				int j = (int)(rng() % (uint64_t)(i + 1));
				int t = ops[i];
				ops[i] = ops[j];
				ops[j] = t;
			}
			for (int i = 0; i < n; i++) {
				if (ops[i] >= 0)
					POST_RECV(ops[i]);
				else
					POST_SEND(-1 - ops[i]);
			}
			break;
		}
		}
		if (ns != nmsg)
			mt_error("round %d: posted %d sends, want %d", r, ns, nmsg);
		/* One Waitall over receives and sends together. */
		MPI_Waitall(nr + nmsg, req, st);

		for (int i = 0; i < nr; i++) {
			char what[128];
			int src = r_src[i], k = r_k[i], tag = msg_tag(r, k);
			size_t len = msg_len(src, mt_rank, r, k);
			unsigned char *b = rbuf + r_off[i];
			snprintf(what, sizeof(what),
				 "round %d (mode %d): message %d (%zu bytes) from %d", r, mode, k,
				 len, src);
			if (mt_check_status(&st[i], src, tag, len, what))
				continue;
			mt_check(b, len, mt_key(src, mt_rank, tag, r * 64 + k), what);
			for (size_t g = len; g < len + SLACK; g++)
				if (b[g] != 0xA5) {
					mt_error("%s: byte %zu past the message was overwritten",
						 what, g - len);
					break;
				}
			checked++;
		}
	}
	long all = 0;
	MPI_Reduce(&checked, &all, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
	if (mt_rank == 0)
		printf("storm: %d ranks, %d rounds, %d sizes 0..%u per pair: "
		       "%ld messages checked\n",
		       mt_size, NROUNDS, NSIZES, 1u << 20, all);
	free(sbuf);
	free(rbuf);
	free(req);
	free(st);
	free(r_src);
	free(r_k);
	free(r_off);
	free(r_cap);
	free(ops);
	return mt_finish();
}
