/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/* Non-overtaking (MPI 4.0, 3.5): messages from one sender that match the
 * same receive arrive in the order they were sent, whatever their sizes.
 * Here every stream mixes eager sizes (0 .. 16 KiB) with large ones (64 KiB
 * .. 300 KB) that providers move by rendezvous / SAR / CMA, where a later
 * small message can easily overtake an earlier large one.
 *
 * Each rank sends NMSG messages on one tag of MPI_COMM_WORLD to the next
 * rank in a ring (at -np 2: to each other, both directions at once) and
 * receives from the previous one. Receives of one phase all match every
 * message, so receive i must get message i: its count must be len(i) and
 * its payload that of message i (on a mismatch the message that did arrive
 * is identified).
 *
 *   A  all receives preposted (barrier), then Isends
 *   B  Isends first (barrier), then blocking receives: unexpected path
 *   C  half the receives preposted, then Isends, then the other half
 *   D  tags alternate between two values, received with MPI_ANY_TAG
 *      (and MPI_ANY_SOURCE): still one stream in send order
 *   E  pairs (0-1, 2-3, ..): one side sends with a mix of MPI_Send,
 *      MPI_Isend, MPI_Ssend and MPI_Issend while the other receives with
 *      a mix of MPI_Recv and MPI_Irecv batches; then the roles swap
 * Every phase runs REPS times with a different size sequence. */
#include "mpitest.h"

#define NMSG   40
#define REPS   4
#define TAG    42
#define MAXLEN 300000
static const size_t sizes[] = { 0,     1,     8,     100,   4095,   4096,   4097,   16383,
				16384, 16385, 65536, 65537, 100000, 200000, 300000, 2 };
#define NSIZES ((int)(sizeof(sizes) / sizeof(sizes[0])))

static int g_rep, g_phase;

/* Sizes follow a pseudo-random sequence per (sender, phase, rep), so large
 * and small messages are interleaved differently every time. */
static size_t msg_len(int src, int seq)
{
	uint64_t x = mt_key(src, g_phase, g_rep, seq) * 0x2545F4914F6CDD1Dull;
	x ^= x >> 31;
	/* Make every other message tiny so each large message is followed by
	 * a small one that could overtake it. */
	if (seq & 1)
		return sizes[x % 4];
	return sizes[x % NSIZES];
}
static uint64_t msg_key(int src, int seq)
{
	return mt_key(src, 100 + g_phase, g_rep, seq);
}

/* Send buffers of one stream, packed. */
static unsigned char *sbuf;
static size_t soff[NMSG];

static void fill_stream(int me)
{
	size_t off = 0;
	for (int s = 0; s < NMSG; s++) {
		soff[s] = off;
		size_t len = msg_len(me, s);
		mt_fill(sbuf + off, len, msg_key(me, s));
		off += len;
	}
}

/* Check that receive number i from src got message i. */
static void check(int src, int i, const MPI_Status *st, const unsigned char *buf, int want_tag)
{
	char what[128];
	size_t len = msg_len(src, i);
	int count = -1;
	MPI_Get_count(st, MPI_BYTE, &count);
	snprintf(what, sizeof(what),
		 "phase %c rep %d: receive %d from %d (message %d is %zu bytes)", 'A' + g_phase,
		 g_rep, i, src, i, len);
	if (st->MPI_SOURCE != src)
		mt_error("%s: status source %d", what, st->MPI_SOURCE);
	if (st->MPI_TAG != want_tag)
		mt_error("%s: status tag %d want %d", what, st->MPI_TAG, want_tag);
	int same = count >= 0 && (size_t)count == len;
	if (same) {
		for (size_t b = 0; b < len; b++)
			if (buf[b] != mt_byte(msg_key(src, i), b)) {
				same = 0;
				break;
			}
	}
	if (same)
		return;
	/* Which message did arrive? */
	int found = -1;
	for (int j = 0; j < NMSG && found < 0; j++) {
		size_t lj = msg_len(src, j);
		if (count < 0 || (size_t)count != lj)
			continue;
		size_t b = 0;
		while (b < lj && buf[b] == mt_byte(msg_key(src, j), b))
			b++;
		if (b == lj && (lj > 0 || j == i))
			found = j;
	}
	if (found >= 0)
		mt_error("%s: OUT OF ORDER: got message %d (%d bytes) instead", what, found, count);
	else
		mt_error("%s: got %d bytes matching no message of the stream", what, count);
}

int main(int argc, char **argv)
{
	mt_init(&argc, &argv, "ordering", 2);
	int dst = (mt_rank + 1) % mt_size, src = (mt_rank + mt_size - 1) % mt_size;
	int partner = mt_rank ^ 1;
	sbuf = mt_malloc((size_t)NMSG * MAXLEN);
	unsigned char *rbuf = mt_malloc((size_t)NMSG * MAXLEN);
	MPI_Request rreq[NMSG], sreq[NMSG];
	MPI_Status rst[NMSG];
	long checked = 0;
#define RB(i) (rbuf + (size_t)(i)*MAXLEN)

	for (g_rep = 0; g_rep < REPS; g_rep++) {
		/* Phases A-D: ring. */
		for (g_phase = 0; g_phase < 4; g_phase++) {
			fill_stream(mt_rank);
			int tagof[NMSG];
			for (int s = 0; s < NMSG; s++)
				tagof[s] = g_phase == 3 ? TAG + (s & 1) : TAG;
			int rtag = g_phase == 3 ? MPI_ANY_TAG : TAG;
			int rsrc = g_phase == 3 ? MPI_ANY_SOURCE : src;
			int pre = g_phase == 0 ? NMSG : g_phase == 2 ? NMSG / 2 : 0;
			for (int i = 0; i < pre; i++)
				MPI_Irecv(RB(i), MAXLEN, MPI_BYTE, rsrc, rtag, MPI_COMM_WORLD,
					  &rreq[i]);
			MPI_Barrier(MPI_COMM_WORLD);
			for (int s = 0; s < NMSG; s++)
				MPI_Isend(sbuf + soff[s], (int)msg_len(mt_rank, s), MPI_BYTE, dst,
					  tagof[s], MPI_COMM_WORLD, &sreq[s]);
			if (g_phase == 1) {
				MPI_Barrier(MPI_COMM_WORLD);
				for (int i = 0; i < NMSG; i++)
					MPI_Recv(RB(i), MAXLEN, MPI_BYTE, rsrc, rtag,
						 MPI_COMM_WORLD, &rst[i]);
			} else if (g_phase == 3) {
				for (int i = 0; i < NMSG; i++)
					MPI_Recv(RB(i), MAXLEN, MPI_BYTE, rsrc, rtag,
						 MPI_COMM_WORLD, &rst[i]);
			} else {
				for (int i = pre; i < NMSG; i++)
					MPI_Irecv(RB(i), MAXLEN, MPI_BYTE, rsrc, rtag,
						  MPI_COMM_WORLD, &rreq[i]);
				MPI_Waitall(NMSG, rreq, rst);
			}
			MPI_Waitall(NMSG, sreq, MPI_STATUSES_IGNORE);
			for (int i = 0; i < NMSG; i++, checked++)
				check(src, i, &rst[i], RB(i), g_phase == 3 ? TAG + (i & 1) : TAG);
			MPI_Barrier(MPI_COMM_WORLD);
		}

		/* Phase E: pairs, mixed send and receive modes, one direction
		 * at a time. */
		g_phase = 4;
		for (int dir = 0; dir < 2; dir++) {
			int sender = (mt_rank & 1) == dir;
			if (partner >= mt_size) {
				/* odd rank out: only joins the barrier */
			} else if (sender) {
				fill_stream(mt_rank);
				int ns = 0;
				for (int s = 0; s < NMSG; s++) {
					void *b = sbuf + soff[s];
					int n = (int)msg_len(mt_rank, s);
					switch ((s * 7 + g_rep) % 4) {
					case 0:
						MPI_Send(b, n, MPI_BYTE, partner, TAG,
							 MPI_COMM_WORLD);
						break;
					case 1:
						MPI_Isend(b, n, MPI_BYTE, partner, TAG,
							  MPI_COMM_WORLD, &sreq[ns++]);
						break;
					case 2:
						MPI_Ssend(b, n, MPI_BYTE, partner, TAG,
							  MPI_COMM_WORLD);
						break;
					case 3:
						MPI_Issend(b, n, MPI_BYTE, partner, TAG,
							   MPI_COMM_WORLD, &sreq[ns++]);
						break;
					}
				}
				MPI_Waitall(ns, sreq, MPI_STATUSES_IGNORE);
			} else {
				int i = 0;
				while (i < NMSG) {
					/* Alternate: one blocking receive, then a batch
					 * of up to 5 Irecvs completed with Waitall. */
					MPI_Recv(RB(i), MAXLEN, MPI_BYTE, partner, TAG,
						 MPI_COMM_WORLD, &rst[i]);
					i++;
					int n = NMSG - i < 5 ? NMSG - i : 5;
					for (int k = 0; k < n; k++)
						MPI_Irecv(RB(i + k), MAXLEN, MPI_BYTE, partner, TAG,
							  MPI_COMM_WORLD, &rreq[k]);
					MPI_Waitall(n, rreq, rst + i);
					i += n;
				}
				for (int k = 0; k < NMSG; k++, checked++)
					check(partner, k, &rst[k], RB(k), TAG);
			}
			MPI_Barrier(MPI_COMM_WORLD);
		}
	}
	long all = 0;
	MPI_Reduce(&checked, &all, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
	if (mt_rank == 0)
		printf("ordering: %d ranks, %d messages per stream, 5 phases x %d reps: %ld "
		       "receives in order\n",
		       mt_size, NMSG, REPS, all);
	free(sbuf);
	free(rbuf);
	return mt_finish();
}
