/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/* Wildcard receives: rank 0 receives from every other rank (3 senders at
 * -np 4) with MPI_ANY_SOURCE and/or MPI_ANY_TAG.
 *
 * Each sender sends NMSG messages per phase, message seq with tag base+seq
 * and a size from a list that mixes eager and large (>64 KiB) sizes. For
 * every receive rank 0 checks the status source and tag (the sender and tag
 * of that exact message), the count, the payload, that the message was not
 * received before, that messages from one sender arrive in send order, and
 * at the end of a phase that every message arrived exactly once.
 *
 *   A  blocking MPI_Recv(ANY_SOURCE, ANY_TAG)
 *   B  all MPI_Irecv(ANY_SOURCE, ANY_TAG) preposted, then MPI_Waitall
 *   C  MPI_Recv(ANY_SOURCE, tag) for each tag in turn
 *   D  MPI_Recv(src, ANY_TAG), round robin over the senders
 *   E  MPI_Recv(ANY_SOURCE, ANY_TAG) with every message already unexpected */
#include "mpitest.h"

#define NMSG 24
static const size_t sizes[] = { 0, 1, 16, 1000, 8192, 65536, 70000, 300000, 7, 4096, 131072, 65 };
#define NSIZES (sizeof(sizes) / sizeof(sizes[0]))
#define MAXLEN 300000

static size_t msg_len(int src, int seq)
{
	return sizes[(size_t)(seq + src) % NSIZES];
}

struct phase_state {
	char seen[64][NMSG];
	int next[64]; /* next seq expected from each sender */
};

/* Validate one received message given its status. */
static void check_msg(struct phase_state *ps, const char *phase, int base, const MPI_Status *st,
		      const unsigned char *buf, int want_src, int want_tag)
{
	char what[128];
	int src = st->MPI_SOURCE, tag = st->MPI_TAG, seq = tag - base;
	int count = -1;
	MPI_Get_count(st, MPI_BYTE, &count);
	snprintf(what, sizeof(what), "phase %s: message src %d tag %d (%d bytes)", phase, src, tag,
		 count);
	if (src < 1 || src >= mt_size) {
		mt_error("%s: status source %d is not a sender", what, src);
		return;
	}
	if (seq < 0 || seq >= NMSG) {
		mt_error("%s: status tag %d is not in [%d,%d)", what, tag, base, base + NMSG);
		return;
	}
	if (want_src != MPI_ANY_SOURCE && src != want_src)
		mt_error("%s: receive was for source %d", what, want_src);
	if (want_tag != MPI_ANY_TAG && tag != want_tag)
		mt_error("%s: receive was for tag %d", what, want_tag);
	if (ps->seen[src][seq])
		mt_error("%s: received twice", what);
	ps->seen[src][seq] = 1;
	if (seq != ps->next[src])
		mt_error("%s: out of order: expected seq %d from this sender, got seq %d", what,
			 ps->next[src], seq);
	ps->next[src] = seq + 1;
	size_t len = msg_len(src, seq);
	if (count < 0 || (size_t)count != len) {
		mt_error("%s: count %d want %zu", what, count, len);
		return;
	}
	mt_check(buf, len, mt_key(src, 0, tag, seq), what);
}

static void check_all_seen(struct phase_state *ps, const char *phase)
{
	for (int src = 1; src < mt_size; src++)
		for (int seq = 0; seq < NMSG; seq++)
			if (!ps->seen[src][seq])
				mt_error("phase %s: message seq %d from %d never received", phase,
					 seq, src);
}

static void send_all(int base, unsigned char *buf)
{
	for (int seq = 0; seq < NMSG; seq++) {
		size_t len = msg_len(mt_rank, seq);
		mt_fill(buf, len, mt_key(mt_rank, 0, base + seq, seq));
		MPI_Send(buf, (int)len, MPI_BYTE, 0, base + seq, MPI_COMM_WORLD);
	}
}

int main(int argc, char **argv)
{
	mt_init(&argc, &argv, "anysource", 2);
	if (mt_size > 64) {
		if (mt_rank == 0)
			fprintf(stderr, "anysource: at most 64 ranks\n");
		MPI_Abort(MPI_COMM_WORLD, 2);
	}
	int nsend = mt_size - 1, total = nsend * NMSG;
	unsigned char *buf = mt_malloc(MAXLEN);
	struct phase_state *ps = mt_malloc(sizeof(*ps));
	MPI_Status st;

	/* A: blocking ANY_SOURCE + ANY_TAG. */
	if (mt_rank == 0) {
		memset(ps, 0, sizeof(*ps));
		for (int i = 0; i < total; i++) {
			MPI_Recv(buf, MAXLEN, MPI_BYTE, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD,
				 &st);
			check_msg(ps, "A", 100, &st, buf, MPI_ANY_SOURCE, MPI_ANY_TAG);
		}
		check_all_seen(ps, "A");
	} else {
		send_all(100, buf);
	}
	MPI_Barrier(MPI_COMM_WORLD);

	/* B: preposted nonblocking ANY_SOURCE + ANY_TAG. */
	if (mt_rank == 0) {
		memset(ps, 0, sizeof(*ps));
		unsigned char *bufs = mt_malloc((size_t)total * MAXLEN);
		MPI_Request *reqs = mt_malloc(sizeof(MPI_Request) * total);
		MPI_Status *sts = mt_malloc(sizeof(MPI_Status) * total);
		for (int i = 0; i < total; i++)
			MPI_Irecv(bufs + (size_t)i * MAXLEN, MAXLEN, MPI_BYTE, MPI_ANY_SOURCE,
				  MPI_ANY_TAG, MPI_COMM_WORLD, &reqs[i]);
		MPI_Barrier(MPI_COMM_WORLD);
		MPI_Waitall(total, reqs, sts);
		/* Receives are matched in posting order, so per sender the
		 * sequence numbers must increase with the request index. */
		for (int i = 0; i < total; i++)
			check_msg(ps, "B", 200, &sts[i], bufs + (size_t)i * MAXLEN, MPI_ANY_SOURCE,
				  MPI_ANY_TAG);
		check_all_seen(ps, "B");
		free(bufs);
		free(reqs);
		free(sts);
	} else {
		MPI_Barrier(MPI_COMM_WORLD);
		send_all(200, buf);
	}
	MPI_Barrier(MPI_COMM_WORLD);

	/* C: ANY_SOURCE with a specific tag, one tag at a time. */
	if (mt_rank == 0) {
		memset(ps, 0, sizeof(*ps));
		for (int seq = 0; seq < NMSG; seq++) {
			for (int i = 0; i < nsend; i++) {
				MPI_Recv(buf, MAXLEN, MPI_BYTE, MPI_ANY_SOURCE, 300 + seq,
					 MPI_COMM_WORLD, &st);
				check_msg(ps, "C", 300, &st, buf, MPI_ANY_SOURCE, 300 + seq);
			}
		}
		check_all_seen(ps, "C");
	} else {
		send_all(300, buf);
	}
	MPI_Barrier(MPI_COMM_WORLD);

	/* D: specific source with ANY_TAG, round robin. */
	if (mt_rank == 0) {
		memset(ps, 0, sizeof(*ps));
		for (int seq = 0; seq < NMSG; seq++) {
			for (int src = 1; src < mt_size; src++) {
				MPI_Recv(buf, MAXLEN, MPI_BYTE, src, MPI_ANY_TAG, MPI_COMM_WORLD,
					 &st);
				check_msg(ps, "D", 400, &st, buf, src, MPI_ANY_TAG);
			}
		}
		check_all_seen(ps, "D");
	} else {
		send_all(400, buf);
	}
	MPI_Barrier(MPI_COMM_WORLD);

	/* E: everything sent (nonblocking) before rank 0 posts a receive. */
	if (mt_rank == 0) {
		memset(ps, 0, sizeof(*ps));
		MPI_Barrier(MPI_COMM_WORLD);
		for (int i = 0; i < total; i++) {
			MPI_Recv(buf, MAXLEN, MPI_BYTE, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD,
				 &st);
			check_msg(ps, "E", 500, &st, buf, MPI_ANY_SOURCE, MPI_ANY_TAG);
		}
		check_all_seen(ps, "E");
	} else {
		unsigned char *sbufs = mt_malloc((size_t)NMSG * MAXLEN);
		MPI_Request reqs[NMSG];
		for (int seq = 0; seq < NMSG; seq++) {
			size_t len = msg_len(mt_rank, seq);
			unsigned char *b = sbufs + (size_t)seq * MAXLEN;
			mt_fill(b, len, mt_key(mt_rank, 0, 500 + seq, seq));
			MPI_Isend(b, (int)len, MPI_BYTE, 0, 500 + seq, MPI_COMM_WORLD, &reqs[seq]);
		}
		MPI_Barrier(MPI_COMM_WORLD);
		MPI_Waitall(NMSG, reqs, MPI_STATUSES_IGNORE);
		free(sbufs);
	}
	/* Nothing may be left over on the communicator. */
	if (mt_rank == 0) {
		int flag = 0;
		MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, &st);
		if (flag)
			mt_error("after all phases: unexpected extra message from %d tag %d",
				 st.MPI_SOURCE, st.MPI_TAG);
		printf("anysource: %d senders x %d messages x 5 phases checked\n", nsend, NMSG);
	}
	free(ps);
	free(buf);
	return mt_finish();
}
