/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/* MPI ping-pong with validation.
 *
 * Ranks pair up (0-1, 2-3, ...; an odd last rank only joins the final
 * reduction). For every size 0, 1, 2^k-1, 2^k, 2^k+1 up to 4 MiB the even
 * rank sends a message and the odd rank answers with a different payload.
 * Both sides post receives larger than the message and check the bytes, the
 * status source, tag and count, and that nothing was written past the
 * message (guard bytes). */
#include "mpitest.h"

#define MAXLEN (4u << 20)
#define GUARD  64

static int check_guard(const unsigned char *buf, size_t len, const char *what)
{
	for (size_t i = 0; i < GUARD; i++)
		if (buf[len + i] != 0xA5) {
			mt_error("%s: byte %zu past the %zu-byte message was overwritten (0x%02x)",
				 what, i, len, buf[len + i]);
			return 1;
		}
	return 0;
}

int main(int argc, char **argv)
{
	mt_init(&argc, &argv, "pingpong", 2);
	int peer = mt_rank ^ 1;
	int active = peer < mt_size;
	int initiator = !(mt_rank & 1);
	unsigned char *sbuf = mt_malloc(MAXLEN);
	unsigned char *rbuf = mt_malloc(MAXLEN + GUARD);

	size_t sizes[80];
	int nsizes = 0;
	sizes[nsizes++] = 0;
	sizes[nsizes++] = 1;
	for (size_t p = 2; p <= MAXLEN; p *= 2) {
		sizes[nsizes++] = p - 1;
		sizes[nsizes++] = p;
		if (p < MAXLEN)
			sizes[nsizes++] = p + 1;
	}

	long rounds = 0;
	for (int s = 0; active && s < nsizes; s++) {
		size_t len = sizes[s];
		int iters = len >= (1u << 20) ? 2 : 3;
		for (int it = 0; it < iters; it++) {
			int tag = (s * 7 + it) % 32000;
			uint64_t kping = mt_key(mt_rank & ~1, mt_rank | 1, tag, s * 16 + it);
			uint64_t kpong = kping ^ 0xFFFF0000FFFFull;
			char what[96];
			MPI_Status st;
			memset(rbuf, 0xA5, len + GUARD);
			if (initiator) {
				mt_fill(sbuf, len, kping);
				MPI_Send(sbuf, (int)len, MPI_BYTE, peer, tag, MPI_COMM_WORLD);
				MPI_Recv(rbuf, (int)(len + GUARD), MPI_BYTE, peer, tag,
					 MPI_COMM_WORLD, &st);
				snprintf(what, sizeof(what), "pong len %zu iter %d from %d", len,
					 it, peer);
				mt_check_status(&st, peer, tag, len, what);
				mt_check(rbuf, len, kpong, what);
				check_guard(rbuf, len, what);
			} else {
				MPI_Recv(rbuf, (int)(len + GUARD), MPI_BYTE, peer, tag,
					 MPI_COMM_WORLD, &st);
				snprintf(what, sizeof(what), "ping len %zu iter %d from %d", len,
					 it, peer);
				mt_check_status(&st, peer, tag, len, what);
				mt_check(rbuf, len, kping, what);
				check_guard(rbuf, len, what);
				mt_fill(sbuf, len, kpong);
				MPI_Send(sbuf, (int)len, MPI_BYTE, peer, tag, MPI_COMM_WORLD);
			}
			rounds++;
		}
	}
	if (active && initiator)
		printf("pingpong: rank %d<->%d: %ld round trips, %d sizes 0..%u\n", mt_rank, peer,
		       rounds, nsizes, MAXLEN);
	free(sbuf);
	free(rbuf);
	return mt_finish();
}
