/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * Two processes on different (simulated) nodes whose network cores took
 * different paths: rank 0 on lnx's transport adapter (FI_LNX_PEER_API=0),
 * rank 1 driving tcp;ofi_rxm through the peer API (the default under
 * libfabric 2.0-2.2). Neither can reach the other (fi_lnx(7): both sides
 * must use the same setting), and each must say so at its send, with
 * -FI_EHOSTUNREACH, rather than lose the message: before, rank 1's peer
 * core sent it to rank 0's adapter endpoint, which dropped it, and the
 * send completed without error. Neither side may hang, and each side's
 * receive stays posted until cancelled.
 *
 * Skipped (77) where the running libfabric has no peer path.
 */
#include "common.h"

static void child_setup(int rank)
{
	setenv("FI_LNX_PEER_API", rank == 0 ? "0" : "1", 1);
}

static void role(struct peer *p, void *arg)
{
	(void)arg;
	struct fi_context2 rctx, sctx;
	char rbuf[64], sbuf[64] = "hello across paths";
	CHECK(fi_trecv(p->l.ep, rbuf, sizeof(rbuf), NULL, peer_addr(p), 0x42, 0, &rctx));
	barrier(p);
	ssize_t r;
	uint64_t dl = now_ms() + 5000;
	while ((r = fi_tsend(p->l.ep, sbuf, sizeof(sbuf), NULL, peer_addr(p), 0x42, &sctx)) ==
		       -FI_EAGAIN &&
	       now_ms() < dl)
		cq_progress(p->l.cq);
	note("rank %d (%s): fi_tsend -> %zd (%s)", p->rank,
	     p->rank == 0 ? "transport adapter" : "peer API", r, fi_strerror((int)-r));
	if (r != -FI_EHOSTUNREACH)
		FAIL("rank %d: a send to a process on the other path returned %zd, want "
		     "-FI_EHOSTUNREACH",
		     p->rank, r);
	/* Nothing arrives from the other side either. */
	expect_no_completion(p->l.cq, 500, "receive from a process on the other path");
	barrier(p);
	CHECK(fi_cancel(&p->l.ep->fid, &rctx));
	struct fi_cq_tagged_entry e;
	struct fi_cq_err_entry err;
	int w = wait_cq_quiet(p->l.cq, &e, NULL, &err, 2000);
	if (w != -FI_ECANCELED || err.op_context != &rctx)
		FAIL("rank %d: the cancelled receive ended with %d, want -FI_ECANCELED", p->rank,
		     w);
}

int main(void)
{
	uint32_t v = fi_version();
	if (FI_MAJOR(v) != 2 || FI_MINOR(v) > 2) {
		printf("SKIP: libfabric %u.%u has no peer path\n", FI_MAJOR(v), FI_MINOR(v));
		return 77;
	}
	struct lnx_opts o = { .links = LINK_TCP, .distinct_nodes = 1 };
	g_child_setup = child_setup;
	return run_pair("peer_path_mismatch", &o, role, role, NULL) ? 1 : 0;
}
