/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * info_limits: what fi_info reports for lnx is what its objects accept.
 * argv[1]: shm, link or tcp (msg_test_opts). Rank A sends, rank B
 * receives; each checks the limits of its own fi_info.
 *
 *  - tx iov_limit: fi_sendv with that many buffers delivers their bytes
 *    in order; one more is -FI_EINVAL at once
 *  - rx iov_limit: fi_recvv with that many buffers takes a message across
 *    all of them; one more is -FI_EINVAL
 *  - inject_size: fi_inject of exactly that many bytes is delivered; one
 *    byte more fails (-FI_EMSGSIZE or -FI_EINVAL), no completion
 *  - cq_data_size: fi_senddata's data arrives with all of its
 *    cq_data_size bytes (FI_REMOTE_CQ_DATA)
 *  - msg_order FI_ORDER_SAS: two sends matching one tag arrive in order
 *  - mode: no mode bits, so the test's plain int contexts must do
 *  - mr_iov_limit: fi_mr_regv with that many iovs works; one more is
 *    -FI_EINVAL
 *  - cq_cnt / cntr_cnt: that many CQs / counters open at once in a domain
 *    (both reported non-zero)
 *  - mr_cnt: that many MRs registered at once in a domain
 *  - ep_cnt: the domain's tx_ctx_cnt and rx_ctx_cnt equal it (one context
 *    of each per endpoint: ep_attr tx_ctx_cnt = rx_ctx_cnt = 1, domain
 *    max_ep_tx_ctx = max_ep_rx_ctx = 1, no shared contexts); over shm,
 *    ep_cnt endpoints open and enable at once in a domain; with a network
 *    core it is no more than that core (fi_getinfo of tcp;ofi_rxm) states,
 *    since each lnx endpoint opens one of the core's, and 8 of them open
 *    (a tcp;ofi_rxm endpoint costs the core 8 fds and here most of a
 *    second: 1024 of them are not a test)
 *  - av_type: hints without one get FI_AV_UNSPEC, hints asking FI_AV_MAP
 *    or FI_AV_TABLE get it; AVs of all three types open
 */
#include "common.h"

#define TAG 0x5a

static size_t g_tx_iov, g_inject;

static void check_domain_counts(struct peer *p)
{
	struct fi_domain_attr *d = p->l.info->domain_attr;
	EXPECT(d->cq_cnt > 0 && d->cntr_cnt > 0, "cq_cnt %zu cntr_cnt %zu", d->cq_cnt, d->cntr_cnt);
	struct fid_cq **cqs = xmalloc(d->cq_cnt * sizeof(*cqs));
	struct fi_cq_attr ca = { .format = FI_CQ_FORMAT_CONTEXT,
				 .wait_obj = FI_WAIT_NONE,
				 .size = 16 };
	/* lnx_open's CQ is one of them. */
	for (size_t i = 0; i + 1 < d->cq_cnt; i++)
		CHECK(fi_cq_open(p->l.domain, &ca, &cqs[i], NULL));
	for (size_t i = 0; i + 1 < d->cq_cnt; i++)
		CHECK(fi_close(&cqs[i]->fid));
	free(cqs);
	struct fid_cntr **cs = xmalloc(d->cntr_cnt * sizeof(*cs));
	struct fi_cntr_attr na = { .events = FI_CNTR_EVENTS_COMP, .wait_obj = FI_WAIT_NONE };
	for (size_t i = 0; i < d->cntr_cnt; i++)
		CHECK(fi_cntr_open(p->l.domain, &na, &cs[i], NULL));
	for (size_t i = 0; i < d->cntr_cnt; i++)
		CHECK(fi_close(&cs[i]->fid));
	free(cs);
	note("%zu CQs, %zu counters", d->cq_cnt, d->cntr_cnt);

	/* mr_iov_limit. */
	size_t n = d->mr_iov_limit;
	EXPECT(n >= 1, "mr_iov_limit %zu", n);
	uint8_t *mb = xmalloc((n + 1) * 256);
	struct iovec *iov = xmalloc((n + 1) * sizeof(*iov));
	for (size_t i = 0; i <= n; i++)
		iov[i] = (struct iovec){ .iov_base = mb + i * 256, .iov_len = 256 };
	struct fid_mr *mr;
	CHECK(fi_mr_regv(p->l.domain, iov, n, FI_SEND | FI_RECV, 0, 0, 0, &mr, NULL));
	CHECK(fi_close(&mr->fid));
	CHECK_RC(fi_mr_regv(p->l.domain, iov, n + 1, FI_SEND | FI_RECV, 0, 0, 0, &mr, NULL),
		 -FI_EINVAL);
	free(iov);
	free(mb);
	note("mr_iov_limit %zu", n);
}

static int g_shm_only;

/* mr_cnt MRs at once. */
static void check_mr_cnt(struct peer *p)
{
	size_t n = p->l.info->domain_attr->mr_cnt;
	EXPECT(n >= 1, "mr_cnt %zu", n);
	struct fid_mr **mrs = xmalloc(n * sizeof(*mrs));
	uint8_t *buf = xmalloc(n);
	for (size_t i = 0; i < n; i++)
		CHECK(fi_mr_reg(p->l.domain, buf + i, 1, FI_SEND | FI_RECV, 0, 0, 0, &mrs[i],
				NULL));
	for (size_t i = 0; i < n; i++)
		CHECK(fi_close(&mrs[i]->fid));
	free(buf);
	free(mrs);
	note("%zu MRs", n);
}

/* ep_cnt and the context counts; av_type. */
static void check_ep_cnt(struct peer *p)
{
	struct fi_info *i = p->l.info;
	struct fi_domain_attr *d = i->domain_attr;
	size_t n = d->ep_cnt;
	EXPECT(n >= 1 && d->tx_ctx_cnt == n && d->rx_ctx_cnt == n,
	       "ep_cnt %zu tx_ctx_cnt %zu rx_ctx_cnt %zu", n, d->tx_ctx_cnt, d->rx_ctx_cnt);
	EXPECT(i->ep_attr->tx_ctx_cnt == 1 && i->ep_attr->rx_ctx_cnt == 1 &&
		       d->max_ep_tx_ctx == 1 && d->max_ep_rx_ctx == 1 && d->max_ep_stx_ctx == 0 &&
		       d->max_ep_srx_ctx == 0,
	       "contexts: ep %zu/%zu, max_ep %zu/%zu, stx %zu srx %zu", i->ep_attr->tx_ctx_cnt,
	       i->ep_attr->rx_ctx_cnt, d->max_ep_tx_ctx, d->max_ep_rx_ctx, d->max_ep_stx_ctx,
	       d->max_ep_srx_ctx);
	size_t open_n = n;
	if (!g_shm_only) {
		struct fi_info *h = fi_allocinfo(), *core = NULL;
		h->fabric_attr->prov_name = strdup("tcp;ofi_rxm");
		h->ep_attr->type = FI_EP_RDM;
		CHECK(fi_getinfo(TEST_FI_VERSION, NULL, NULL, 0, h, &core));
		size_t cn = core->domain_attr->ep_cnt;
		EXPECT(cn == 0 || n <= cn, "lnx ep_cnt %zu, its network core's %zu", n, cn);
		note("core ep_cnt %zu", cn);
		fi_freeinfo(core);
		fi_freeinfo(h);
		open_n = n < 8 ? n : 8;
	}
	/* The test's own endpoint is one of them. */
	struct fid_ep **eps = xmalloc(open_n * sizeof(*eps));
	for (size_t k = 0; k + 1 < open_n; k++) {
		CHECK(fi_endpoint(p->l.domain, i, &eps[k], NULL));
		CHECK(fi_ep_bind(eps[k], &p->l.av->fid, 0));
		CHECK(fi_ep_bind(eps[k], &p->l.cq->fid, FI_TRANSMIT | FI_RECV));
		CHECK(fi_enable(eps[k]));
	}
	for (size_t k = 0; k + 1 < open_n; k++)
		CHECK(fi_close(&eps[k]->fid));
	free(eps);
	note("ep_cnt %zu: %zu endpoints open at once", n, open_n);

	enum fi_av_type types[] = { FI_AV_MAP, FI_AV_TABLE, FI_AV_UNSPEC };
	for (int k = 0; k < 3; k++) {
		struct fi_av_attr aa = { .type = types[k], .count = 4 };
		struct fid_av *av;
		CHECK(fi_av_open(p->l.domain, &aa, &av, NULL));
		CHECK(fi_close(&av->fid));
	}
	for (int k = 0; k < 3; k++) {
		struct fi_info *h = fi_dupinfo(p->l.hints), *got = NULL;
		h->domain_attr->av_type = types[2 - k];
		CHECK(fi_getinfo(TEST_FI_VERSION, NULL, NULL, 0, h, &got));
		EXPECT(got->domain_attr->av_type == types[2 - k], "hints av_type %d: av_type %d",
		       types[2 - k], got->domain_attr->av_type);
		fi_freeinfo(got);
		fi_freeinfo(h);
	}
}

static void sender(struct peer *p, void *arg)
{
	struct fi_info *i = p->l.info;
	int ctx[4];
	g_tx_iov = i->tx_attr->iov_limit;
	g_inject = i->tx_attr->inject_size;
	EXPECT(i->mode == 0 && i->tx_attr->mode == 0 && i->rx_attr->mode == 0, "mode bits %#llx",
	       (unsigned long long)i->mode);
	EXPECT(i->tx_attr->msg_order & FI_ORDER_SAS, "no FI_ORDER_SAS");
	EXPECT(g_tx_iov >= 1 && g_inject > 0, "iov_limit %zu inject_size %zu", g_tx_iov, g_inject);

	/* tx iov_limit buffers of 10 bytes each; then one more. */
	size_t n = g_tx_iov;
	uint8_t *b = xmalloc((n + 1) * 10);
	fill_pattern(b, (n + 1) * 10, 7);
	struct iovec *iov = xmalloc((n + 1) * sizeof(*iov));
	for (size_t k = 0; k <= n; k++)
		iov[k] = (struct iovec){ .iov_base = b + k * 10, .iov_len = 10 };
	CHECK_RC(fi_sendv(p->l.ep, iov, NULL, n + 1, peer_addr(p), &ctx[0]), -FI_EINVAL);
	barrier(p);
	POST(p->l.cq, fi_sendv(p->l.ep, iov, NULL, n, peer_addr(p), &ctx[0]));
	wait_ok(p->l.cq, NULL, NULL, "sendv");

	/* inject_size bytes, then one more. */
	uint8_t *ib = xmalloc(g_inject + 1);
	fill_pattern(ib, g_inject + 1, 8);
	CHECK_FAILS(fi_inject(p->l.ep, ib, g_inject + 1, peer_addr(p)));
	POST(p->l.cq, fi_inject(p->l.ep, ib, g_inject, peer_addr(p)));

	/* All cq_data_size bytes of data. */
	uint64_t data = 0xfedcba9876543210ULL;
	size_t ds = i->domain_attr->cq_data_size;
	EXPECT(ds >= 1 && ds <= 8, "cq_data_size %zu", ds);
	if (ds < 8)
		data &= (1ULL << (8 * ds)) - 1;
	POST(p->l.cq, fi_senddata(p->l.ep, b, 10, NULL, data, peer_addr(p), &ctx[1]));
	wait_ok(p->l.cq, NULL, NULL, "senddata");

	/* Send after send, one tag. */
	POST(p->l.cq, fi_tsend(p->l.ep, b, 10, NULL, peer_addr(p), TAG, &ctx[2]));
	POST(p->l.cq, fi_tsend(p->l.ep, b + 10, 10, NULL, peer_addr(p), TAG, &ctx[3]));
	wait_ok(p->l.cq, NULL, NULL, "tsend 1");
	wait_ok(p->l.cq, NULL, NULL, "tsend 2");
	barrier(p);
	free(ib);
	free(iov);
	free(b);
}

static void receiver(struct peer *p, void *arg)
{
	struct fi_info *i = p->l.info;
	struct fi_cq_tagged_entry c;
	fi_addr_t src;
	int ctx[5];
	size_t n = i->rx_attr->iov_limit, tx_n = i->tx_attr->iov_limit,
	       inj = i->tx_attr->inject_size;
	EXPECT(n >= 1, "rx iov_limit %zu", n);

	/* rx iov_limit buffers, each a little smaller than the message's
	 * share so the message spans all of them; then one more. */
	size_t total = tx_n * 10;
	size_t each = (total + n - 1) / n;
	uint8_t *rb = xmalloc(n * each + 1);
	memset(rb, 0, n * each + 1);
	struct iovec *iov = xmalloc((n + 1) * sizeof(*iov));
	for (size_t k = 0; k <= n; k++)
		iov[k] = (struct iovec){ .iov_base = rb + k * each, .iov_len = k == n ? 1 : each };
	CHECK_RC(fi_recvv(p->l.ep, iov, NULL, n + 1, FI_ADDR_UNSPEC, &ctx[0]), -FI_EINVAL);
	POST(p->l.cq, fi_recvv(p->l.ep, iov, NULL, n, FI_ADDR_UNSPEC, &ctx[0]));
	barrier(p);
	wait_ok(p->l.cq, &c, &src, "recvv");
	EXPECT(c.op_context == &ctx[0] && c.len == total, "recvv: context %p len %zu, want %zu",
	       c.op_context, c.len, total);
	EXPECT_PATTERN(rb, total, 7);

	uint8_t *ib = xmalloc(inj);
	POST(p->l.cq, fi_recv(p->l.ep, ib, inj, NULL, FI_ADDR_UNSPEC, &ctx[1]));
	wait_ok(p->l.cq, &c, &src, "inject receive");
	EXPECT(c.op_context == &ctx[1] && c.len == inj,
	       "inject: len %zu, want %zu (one byte more must not arrive)", c.len, inj);
	EXPECT_PATTERN(ib, inj, 8);

	uint8_t db[10];
	POST(p->l.cq, fi_recv(p->l.ep, db, sizeof(db), NULL, FI_ADDR_UNSPEC, &ctx[2]));
	wait_ok(p->l.cq, &c, &src, "data receive");
	uint64_t want = 0xfedcba9876543210ULL;
	size_t ds = i->domain_attr->cq_data_size;
	if (ds < 8)
		want &= (1ULL << (8 * ds)) - 1;
	EXPECT((c.flags & FI_REMOTE_CQ_DATA) && c.data == want,
	       "data %#llx, want %#llx (flags %#llx)", (unsigned long long)c.data,
	       (unsigned long long)want, (unsigned long long)c.flags);

	uint8_t t1[10], t2[10];
	POST(p->l.cq, fi_trecv(p->l.ep, t1, 10, NULL, FI_ADDR_UNSPEC, TAG, 0, &ctx[3]));
	POST(p->l.cq, fi_trecv(p->l.ep, t2, 10, NULL, FI_ADDR_UNSPEC, TAG, 0, &ctx[4]));
	for (int k = 0; k < 2; k++)
		wait_ok(p->l.cq, &c, &src, "ordered receives");
	uint8_t w[20];
	fill_pattern(w, 20, 7);
	EXPECT(!memcmp(t1, w, 10) && !memcmp(t2, w + 10, 10), "send-after-send order broken");
	barrier(p);
	free(ib);
	free(iov);
	free(rb);
}

int main(int argc, char **argv)
{
	struct lnx_opts o;
	msg_test_opts(argc, argv, &o);
	g_shm_only = !strcmp(o.links, LINK_SHM);
	int r = run_pair("info_limits", &o, sender, receiver, NULL);
	if (r)
		return r;
	/* The counts, in this process once the pair is done: opening ep_cnt
	 * endpoints and mr_cnt MRs takes a while on a loaded machine, longer
	 * than a peer waits at a barrier. */
	struct peer p;
	memset(&p, 0, sizeof(p));
	lnx_open(&p.l, &o);
	check_domain_counts(&p);
	check_mr_cnt(&p);
	check_ep_cnt(&p);
	lnx_close(&p.l);
	printf("info_limits counts: ok\n");
	return 0;
}
