/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/* Probing: MPI_Probe, MPI_Iprobe, MPI_Mprobe + MPI_Mrecv, MPI_Improbe +
 * MPI_Imrecv.
 *
 * In each phase every rank Isends NMSG messages (tag base+seq, eager and
 * large sizes) to every other rank, then receives all of its incoming
 * messages using only the phase's probe to learn their source, tag and size:
 * the receive buffer is allocated with exactly the probed count. Checked:
 * the probed source/tag/count describe the message that is then received
 * (received count == probed count, payload of that exact message), messages
 * from one sender are probed in send order, a plain probe does not consume
 * the message (probing it again gives the same answer), a matched probe
 * does (an Iprobe of the same source then sees the next message or none),
 * every message is received exactly once, and nothing is left to probe
 * after the phase. */
#include "mpitest.h"

#define NMSG 18
static const size_t sizes[] = { 0, 1, 100, 4096, 65536, 65537, 200000, 1u << 20, 12 };
#define NSIZES (sizeof(sizes) / sizeof(sizes[0]))

static size_t msg_len(int src, int dst, int seq)
{
	return sizes[(size_t)(seq + src + dst) % NSIZES];
}

static int *next_seq; /* per source: next seq expected */

/* Check a probe result against the message it must describe; returns the
 * expected length (or (size_t)-1 when the status is unusable). */
static size_t check_probe(const char *phase, int base, const MPI_Status *st, int want_src,
			  size_t *probed)
{
	int src = st->MPI_SOURCE, tag = st->MPI_TAG, count = -1;
	MPI_Get_count(st, MPI_BYTE, &count);
	*probed = count < 0 ? 0 : (size_t)count;
	if (src < 0 || src >= mt_size || src == mt_rank) {
		mt_error("phase %s: probe returned source %d", phase, src);
		return (size_t)-1;
	}
	if (want_src != MPI_ANY_SOURCE && src != want_src)
		mt_error("phase %s: probe for source %d returned source %d", phase, want_src, src);
	int seq = tag - base;
	if (seq != next_seq[src]) {
		mt_error("phase %s: probe from %d returned tag %d, expected tag %d (the next "
			 "message in send order)",
			 phase, src, tag, base + next_seq[src]);
		if (seq < 0 || seq >= NMSG)
			return (size_t)-1;
	}
	size_t len = msg_len(src, mt_rank, seq);
	if (count < 0 || (size_t)count != len)
		mt_error("phase %s: probe of message src %d tag %d: count %d want %zu", phase, src,
			 tag, count, len);
	return len;
}

/* Check a completed receive of the probed message. */
static void check_recv(const char *phase, int base, const MPI_Status *pst, size_t probed,
		       const MPI_Status *rst, const unsigned char *buf)
{
	char what[128];
	int src = pst->MPI_SOURCE, tag = pst->MPI_TAG, seq = tag - base;
	snprintf(what, sizeof(what), "phase %s: receive of probed message src %d tag %d", phase,
		 src, tag);
	mt_check_status(rst, src, tag, probed, what);
	if (seq >= 0 && seq < NMSG) {
		next_seq[src] = seq + 1;
		mt_check(buf, probed, mt_key(src, mt_rank, tag, seq), what);
	}
}

static int pick_source(int i)
{
	/* Round robin over the senders that still have messages. */
	for (int k = 0; k < mt_size; k++) {
		int src = (mt_rank + 1 + i + k) % mt_size;
		if (src != mt_rank && next_seq[src] < NMSG)
			return src;
	}
	return MPI_ANY_SOURCE;
}

static void nothing_left(const char *phase)
{
	int flag = 0;
	MPI_Status st;
	MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, &st);
	if (flag)
		mt_error("phase %s: Iprobe found a message (src %d tag %d) after all were received",
			 phase, st.MPI_SOURCE, st.MPI_TAG);
	for (int src = 0; src < mt_size; src++)
		if (src != mt_rank && next_seq[src] != NMSG)
			mt_error("phase %s: received %d of %d messages from %d", phase,
				 next_seq[src], NMSG, src);
}

int main(int argc, char **argv)
{
	mt_init(&argc, &argv, "probe", 2);
	int npeers = mt_size - 1, total = npeers * NMSG;
	next_seq = mt_malloc(sizeof(int) * mt_size);
	size_t sbytes = 0;
	for (int dst = 0; dst < mt_size; dst++)
		for (int seq = 0; seq < NMSG && dst != mt_rank; seq++)
			sbytes += msg_len(mt_rank, dst, seq);
	unsigned char *sbuf = mt_malloc(sbytes);
	MPI_Request *sreq = mt_malloc(sizeof(MPI_Request) * total);
	const char *phases[] = { "Probe", "Iprobe", "Mprobe", "Improbe" };

	for (int ph = 0; ph < 4; ph++) {
		const char *phase = phases[ph];
		int base = 1000 * (ph + 1);
		memset(next_seq, 0, sizeof(int) * mt_size);
		MPI_Barrier(MPI_COMM_WORLD);
		unsigned char *p = sbuf;
		int ns = 0;
		for (int seq = 0; seq < NMSG; seq++)
			for (int dst = 0; dst < mt_size; dst++) {
				if (dst == mt_rank)
					continue;
				size_t len = msg_len(mt_rank, dst, seq);
				mt_fill(p, len, mt_key(mt_rank, dst, base + seq, seq));
				MPI_Isend(p, (int)len, MPI_BYTE, dst, base + seq, MPI_COMM_WORLD,
					  &sreq[ns++]);
				p += len;
			}

		for (int i = 0; i < total; i++) {
			MPI_Status pst, rst, st2;
			MPI_Message msg;
			size_t probed;
			int flag = 0;
			int want = (i & 1) ? pick_source(i) : MPI_ANY_SOURCE;
			switch (ph) {
			case 0: /* MPI_Probe, probed twice, then MPI_Recv */
				MPI_Probe(want, MPI_ANY_TAG, MPI_COMM_WORLD, &pst);
				if (check_probe(phase, base, &pst, want, &probed) == (size_t)-1)
					goto out;
				MPI_Probe(pst.MPI_SOURCE, pst.MPI_TAG, MPI_COMM_WORLD, &st2);
				{
					int c2 = -1;
					MPI_Get_count(&st2, MPI_BYTE, &c2);
					if (st2.MPI_SOURCE != pst.MPI_SOURCE ||
					    st2.MPI_TAG != pst.MPI_TAG || c2 != (int)probed)
						mt_error("phase %s: second probe of src %d tag %d "
							 "gave src %d tag %d count %d (first: "
							 "count %zu)",
							 phase, pst.MPI_SOURCE, pst.MPI_TAG,
							 st2.MPI_SOURCE, st2.MPI_TAG, c2, probed);
				}
				{
					unsigned char *rb = mt_malloc(probed);
					MPI_Recv(rb, (int)probed, MPI_BYTE, pst.MPI_SOURCE,
						 pst.MPI_TAG, MPI_COMM_WORLD, &rst);
					check_recv(phase, base, &pst, probed, &rst, rb);
					free(rb);
				}
				break;
			case 1: /* MPI_Iprobe polling, then MPI_Recv */
				while (!flag)
					MPI_Iprobe(want, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, &pst);
				if (check_probe(phase, base, &pst, want, &probed) == (size_t)-1)
					goto out;
				{
					unsigned char *rb = mt_malloc(probed);
					MPI_Recv(rb, (int)probed, MPI_BYTE, pst.MPI_SOURCE,
						 pst.MPI_TAG, MPI_COMM_WORLD, &rst);
					check_recv(phase, base, &pst, probed, &rst, rb);
					free(rb);
				}
				break;
			case 2: /* MPI_Mprobe, Iprobe must not see it again, MPI_Mrecv */
				MPI_Mprobe(want, MPI_ANY_TAG, MPI_COMM_WORLD, &msg, &pst);
				if (check_probe(phase, base, &pst, want, &probed) == (size_t)-1)
					goto out;
				MPI_Iprobe(pst.MPI_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &flag,
					   &st2);
				if (flag && st2.MPI_TAG != pst.MPI_TAG + 1)
					mt_error("phase %s: after Mprobe of src %d tag %d, Iprobe "
						 "of that source returned tag %d (want the next, "
						 "tag %d)",
						 phase, pst.MPI_SOURCE, pst.MPI_TAG, st2.MPI_TAG,
						 pst.MPI_TAG + 1);
				{
					unsigned char *rb = mt_malloc(probed);
					MPI_Mrecv(rb, (int)probed, MPI_BYTE, &msg, &rst);
					if (msg != MPI_MESSAGE_NULL)
						mt_error("phase %s: MPI_Mrecv did not reset the "
							 "message handle",
							 phase);
					check_recv(phase, base, &pst, probed, &rst, rb);
					free(rb);
				}
				break;
			case 3: /* MPI_Improbe polling, then MPI_Imrecv + MPI_Wait */
				while (!flag)
					MPI_Improbe(want, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, &msg,
						    &pst);
				if (check_probe(phase, base, &pst, want, &probed) == (size_t)-1)
					goto out;
				{
					unsigned char *rb = mt_malloc(probed);
					MPI_Request r;
					MPI_Imrecv(rb, (int)probed, MPI_BYTE, &msg, &r);
					MPI_Wait(&r, &rst);
					check_recv(phase, base, &pst, probed, &rst, rb);
					free(rb);
				}
				break;
			}
		}
		nothing_left(phase);
		MPI_Waitall(ns, sreq, MPI_STATUSES_IGNORE);
	}
	if (mt_rank == 0)
		printf("probe: %d ranks x %d messages per peer x 4 probe kinds checked\n", mt_size,
		       NMSG);
	free(sbuf);
	free(sreq);
	free(next_seq);
	return mt_finish();
out:
	/* The status was unusable; we cannot tell which message to receive. */
	fprintf(stderr, "probe: rank %d: giving up after an invalid probe result\n", mt_rank);
	MPI_Abort(MPI_COMM_WORLD, 1);
	return 1;
}
