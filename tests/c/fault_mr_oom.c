/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * fault_mr_oom: memory registration while C allocations fail.
 *
 * This program defines malloc, calloc and realloc itself, so that every C
 * allocation in the process (libfabric, the tcp;ofi_rxm core, lnx's C
 * side) comes through here. The failure is armed on this thread only, around
 * one fi_mr_reg call, and fails the Nth allocation of that call (once, or
 * every one from the Nth on), for N = 1, 2, ... until a call makes fewer
 * than N allocations. Registrations use the shm+tcp;ofi_rxm link, so each
 * host MR is also registered with the network core.
 *
 * What must hold: fi_mr_reg returns 0 or a negative error (-FI_ENOMEM
 * expected), never crashes; a refused registration leaves nothing behind:
 * its requested key is free again, the same range registers afterwards,
 * and the domain closes once the MRs that did succeed are closed. At the
 * end an MR registered after all of this carries a message to a second
 * endpoint.
 */
#include <errno.h>
#include "common.h"

extern void *__libc_malloc(size_t n);
extern void *__libc_calloc(size_t n, size_t size);
extern void *__libc_realloc(void *p, size_t n);

static __thread long fail_in;	 /* allocations until the failing one; 0: off */
static __thread int fail_sticky; /* keep failing after the first */
static __thread long fail_count; /* allocations refused since armed */

static int refuse(void)
{
	if (fail_in <= 0)
		return 0;
	if (fail_in > 1) {
		fail_in--;
		return 0;
	}
	fail_count++;
	if (!fail_sticky)
		fail_in = 0;
	errno = ENOMEM;
	return 1;
}

void *malloc(size_t n)
{
	return refuse() ? NULL : __libc_malloc(n);
}
void *calloc(size_t n, size_t size)
{
	return refuse() ? NULL : __libc_calloc(n, size);
}
void *realloc(void *p, size_t n)
{
	return refuse() ? NULL : __libc_realloc(p, n);
}

#define SLOT  4096
#define MAX_N 200

/* One pass: fail allocation N of a registration, for every N. */
static void pass(struct lnx *l, char *buf, int sticky, uint64_t key_base)
{
	/* Fresh ranges: a cached core registration would allocate nothing. */
	buf += (size_t)sticky * MAX_N * SLOT;
	static struct fid_mr *kept[MAX_N];
	int nkept = 0, enomem = 0, other = 0;
	long n;
	for (n = 1; n < MAX_N; n++) {
		char *p = buf + (size_t)n * SLOT;
		uint64_t key = key_base + (uint64_t)n;
		struct fid_mr *mr = NULL;
		fail_in = n;
		fail_sticky = sticky;
		fail_count = 0;
		/* Remotely accessible with a requested key: a key lost to a
		 * failed registration would show as -FI_ENOKEY below. */
		int r = fi_mr_reg(l->domain, p, SLOT, FI_SEND | FI_RECV | FI_REMOTE_READ, 0, key, 0,
				  &mr, NULL);
		fail_in = 0;
		long refused = fail_count;
		if (r == 0) {
			EXPECT(mr != NULL && fi_mr_key(mr) == key,
			       "registration %ld: MR %p key %llu", n, (void *)mr,
			       mr ? (unsigned long long)fi_mr_key(mr) : 0ULL);
			kept[nkept++] = mr;
			if (!refused)
				break; /* fewer than n allocations: every one has failed once */
			continue;
		}
		EXPECT(r < 0, "fi_mr_reg returned %d", r);
		EXPECT(refused > 0, "fi_mr_reg failed (%d, %s) with no allocation refused", r,
		       fi_strerror(-r));
		if (r == -FI_ENOMEM)
			enomem++;
		else
			other++;
		/* Nothing left behind: the same range and key register now. */
		r = fi_mr_reg(l->domain, p, SLOT, FI_SEND | FI_RECV | FI_REMOTE_READ, 0, key, 0,
			      &mr, NULL);
		EXPECT(r == 0, "registration %ld after a refused allocation: %d (%s)", n, r,
		       fi_strerror(-r));
		kept[nkept++] = mr;
	}
	EXPECT(n < MAX_N, "a registration still allocated at N = %d", MAX_N);
	note("%s failure: a registration makes %ld allocations; %d refusals gave -FI_ENOMEM, %d "
	     "another error, %d succeeded anyway",
	     sticky ? "persistent" : "single", n - 1, enomem, other, nkept - enomem - other - 1);
	for (int i = 0; i < nkept; i++)
		CHECK(fi_close(&kept[i]->fid));
}

/* Sends SLOT bytes from an MR of a's to b and checks them. */
static void exchange(struct lnx *a, struct lnx *b, fi_addr_t to_a, fi_addr_t to_b, char *buf,
		     char *rbuf, uint64_t seed)
{
	struct fid_mr *mr;
	fill_pattern(buf, SLOT, seed);
	memset(rbuf, 0, SLOT);
	CHECK(fi_mr_reg(a->domain, buf, SLOT, FI_SEND, 0, 0, 0, &mr, NULL));
	struct fi_context2 rctx, sctx;
	POST(b->cq, fi_trecv(b->ep, rbuf, SLOT, NULL, to_a, seed, 0, &rctx));
	POST(a->cq, fi_tsend(a->ep, buf, SLOT, fi_mr_desc(mr), to_b, seed, &sctx));
	struct fi_cq_tagged_entry e;
	uint64_t deadline = now_ms() + WAIT_MS;
	int got = 0, sent = 0;
	while ((!got || !sent) && now_ms() < deadline) {
		if (fi_cq_read(a->cq, &e, 1) == 1)
			sent = e.op_context == &sctx;
		if (fi_cq_read(b->cq, &e, 1) == 1) {
			EXPECT(e.op_context == &rctx && e.tag == seed && e.len == SLOT,
			       "receive completion tag %llu len %zu", (unsigned long long)e.tag,
			       e.len);
			got = 1;
		}
	}
	EXPECT(got && sent, "message %llu: sent %d received %d", (unsigned long long)seed, sent,
	       got);
	EXPECT_PATTERN(rbuf, SLOT, seed);
	CHECK(fi_close(&mr->fid));
}

int main(void)
{
	snprintf(g_role, sizeof(g_role), "fault_mr_oom");
	struct lnx a, b;
	struct lnx_opts o = { .links = LINK_TCP,
			      .mr_mode = FI_MR_ALLOCATED }; /* keys as requested */
	lnx_open(&a, &o);
	lnx_open(&b, &o);
	fi_addr_t to_b, to_a;
	CHECK_RC(fi_av_insert(a.av, b.name, 1, &to_b, 0, NULL), 1);
	CHECK_RC(fi_av_insert(b.av, a.name, 1, &to_a, 0, NULL), 1);
	char *buf = xmalloc((size_t)2 * MAX_N * SLOT);
	char *rbuf = xmalloc(SLOT);
	/* Warm up the data path (connections, peer mappings) first. */
	exchange(&a, &b, to_a, to_b, buf, rbuf, 6);
	int fds0 = count_fds();

	pass(&a, buf, 0, 1000);
	pass(&a, buf, 1, 100000);

	/* The domain still registers and sends. */
	exchange(&a, &b, to_a, to_b, buf, rbuf, 7);
	EXPECT(count_fds() == fds0, "file descriptors %d -> %d", fds0, count_fds());
	lnx_close(&b);
	lnx_close(&a); /* -FI_EBUSY here would mean an MR left behind */
	free(rbuf);
	free(buf);
	note("ok");
	return 0;
}
