/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * fault_ep_churn: endpoints opened, bound, enabled and closed on one
 * thread while another thread reads the CQ they are bound to
 * (FI_THREAD_SAFE), in one process.
 *
 * Usage: fault_ep_churn [shm|link]
 *
 * A read of the CQ drives every endpoint bound to it. An endpoint closed
 * while a read is under way must drop out of that read: its C memory (the
 * fast paths' queues) is unmapped as soon as fi_close returns. Each
 * endpoint also posts a receive (queued by lnx's C layer) so that a read
 * has queued work to take from it. The loop runs CYCLES times or
 * CHURN_MS, whichever ends first; every call must succeed, the reader must
 * see nothing but -FI_EAGAIN, completions or error entries, and the CQ
 * must close cleanly afterwards.
 */
#include <pthread.h>
#include "common.h"

#define CYCLES	 2000
#define CHURN_MS 2500

static struct fid_cq *g_cq;
static int g_stop, g_bad;
static long g_reads;

static void *reader(void *arg)
{
	struct fi_cq_tagged_entry e[4];
	while (!__atomic_load_n(&g_stop, __ATOMIC_ACQUIRE)) {
		ssize_t n = fi_cq_read(g_cq, e, 4);
		if (n == -FI_EAVAIL) {
			struct fi_cq_err_entry err = { 0 };
			if (fi_cq_readerr(g_cq, &err, 0) < 0)
				__atomic_store_n(&g_bad, 1, __ATOMIC_RELAXED);
		} else if (n < 0 && n != -FI_EAGAIN) {
			note("fi_cq_read -> %zd (%s)", n, fi_strerror((int)-n));
			__atomic_store_n(&g_bad, 1, __ATOMIC_RELAXED);
		}
		g_reads++;
	}
	return NULL;
}

int main(int argc, char **argv)
{
	const char *cfg = argc > 1 ? argv[1] : "shm";
	set_links(!strcmp(cfg, "link") ? LINK_TCP : LINK_SHM);
	snprintf(g_role, sizeof(g_role), "churn %s", cfg);

	struct fi_info *hints = lnx_hints(), *info;
	hints->domain_attr->threading = FI_THREAD_SAFE;
	CHECK(lnx_getinfo(hints, &info));
	struct fid_fabric *fab;
	struct fid_domain *dom;
	struct fid_av *av;
	CHECK(fi_fabric(info->fabric_attr, &fab, NULL));
	CHECK(fi_domain(fab, info, &dom, NULL));
	struct fi_av_attr av_attr = { .type = FI_AV_TABLE, .count = 16 };
	CHECK(fi_av_open(dom, &av_attr, &av, NULL));
	struct fi_cq_attr cq_attr = { .format = FI_CQ_FORMAT_TAGGED, .wait_obj = FI_WAIT_NONE };
	CHECK(fi_cq_open(dom, &cq_attr, &g_cq, NULL));

	pthread_t th;
	if (pthread_create(&th, NULL, reader, NULL))
		FAIL("pthread_create");

	static char buf[64];
	struct fi_context2 ctx;
	uint64_t end = now_ms() + CHURN_MS;
	int cycles = 0;
	for (; cycles < CYCLES && now_ms() < end; cycles++) {
		struct fid_ep *ep;
		CHECK(fi_endpoint(dom, info, &ep, NULL));
		CHECK(fi_ep_bind(ep, &av->fid, 0));
		CHECK(fi_ep_bind(ep, &g_cq->fid, FI_TRANSMIT | FI_RECV));
		CHECK(fi_enable(ep));
		CHECK(fi_trecv(ep, buf, sizeof(buf), NULL, FI_ADDR_UNSPEC, 0x42, 0, &ctx));
		CHECK(fi_close(&ep->fid));
	}
	__atomic_store_n(&g_stop, 1, __ATOMIC_RELEASE);
	pthread_join(th, NULL);
	note("%d endpoint cycles against %ld CQ reads", cycles, g_reads);
	EXPECT(!g_bad, "the reader saw an unexpected result (above)");
	EXPECT(cycles > 0, "no cycle ran");

	CHECK(fi_close(&g_cq->fid));
	CHECK(fi_close(&av->fid));
	CHECK(fi_close(&dom->fid));
	CHECK(fi_close(&fab->fid));
	fi_freeinfo(info);
	fi_freeinfo(hints);
	note("ok");
	return 0;
}
