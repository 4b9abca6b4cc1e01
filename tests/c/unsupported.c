/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * unsupported: what lnx does not offer is refused at once with
 * -FI_ENODATA (fi_getinfo), -FI_ENOSYS or -FI_EOPNOTSUPP (calls), never a
 * hang or a crash. argv[1]: shm or link.
 *
 *  - fi_getinfo hints for FI_EP_MSG, FI_EP_DGRAM, FI_TRIGGER,
 *    FI_COLLECTIVE, scalable endpoints (tx/rx_ctx_cnt 2) and shared contexts
 *    (FI_SHARED_CONTEXT): -FI_ENODATA
 *  - fi_endpoint with an fi_info changed to FI_EP_MSG or FI_EP_DGRAM,
 *    fi_scalable_ep, fi_stx_context, fi_srx_context, fi_passive_ep,
 *    fi_tx_context/fi_rx_context, the connection calls (fi_connect,
 *    fi_accept, fi_shutdown, fi_getpeer, fi_setname, fi_join), fi_barrier,
 *    fi_av_set and triggered sends (FI_TRIGGER), with no completion
 */
#include <rdma/fi_collective.h>
#include <rdma/fi_trigger.h>

#include "common.h"

static int refused(long long r)
{
	return r == -FI_ENOSYS || r == -FI_EOPNOTSUPP || r == -FI_ENODATA;
}

#define REFUSED(expr)                                                                           \
	do {                                                                                    \
		long long _r = (long long)(expr);                                               \
		if (!refused(_r))                                                               \
			FAIL("%s -> %lld (%s), want -FI_ENOSYS, -FI_EOPNOTSUPP or -FI_ENODATA", \
			     #expr, _r, _r < 0 ? fi_strerror((int)-_r) : "ok");                 \
		note("%s: %s", #expr, fi_strerror((int)-_r));                                   \
	} while (0)

static void hints_refused(const char *what, void (*change)(struct fi_info *))
{
	struct fi_info *h = lnx_hints(), *info = NULL;
	change(h);
	int r = fi_getinfo(TEST_FI_VERSION, NULL, NULL, 0, h, &info);
	EXPECT(r == -FI_ENODATA && !info, "%s: fi_getinfo -> %d", what, r);
	fi_freeinfo(h);
	note("hints %s: -FI_ENODATA", what);
}

static void h_msg(struct fi_info *h)
{
	h->ep_attr->type = FI_EP_MSG;
}
static void h_dgram(struct fi_info *h)
{
	h->ep_attr->type = FI_EP_DGRAM;
}
static void h_trigger(struct fi_info *h)
{
	h->caps |= FI_TRIGGER;
}
static void h_coll(struct fi_info *h)
{
	h->caps |= FI_COLLECTIVE;
}
static void h_sep(struct fi_info *h)
{
	h->ep_attr->tx_ctx_cnt = 2;
	h->ep_attr->rx_ctx_cnt = 2;
}
static void h_shared(struct fi_info *h)
{
	h->caps |= FI_SHARED_AV;
	h->ep_attr->tx_ctx_cnt = FI_SHARED_CONTEXT;
}

int main(int argc, char **argv)
{
	struct lnx_opts o;
	struct lnx l;
	msg_test_opts(argc, argv, &o);
	if (o.links)
		set_links(o.links);

	hints_refused("FI_EP_MSG", h_msg);
	hints_refused("FI_EP_DGRAM", h_dgram);
	hints_refused("FI_TRIGGER", h_trigger);
	hints_refused("FI_COLLECTIVE", h_coll);
	hints_refused("tx/rx_ctx_cnt 2", h_sep);
	hints_refused("FI_SHARED_CONTEXT", h_shared);

	lnx_open(&l, &o);
	struct fid_ep *ep = NULL;
	struct fi_info *i = fi_dupinfo(l.info);
	i->ep_attr->type = FI_EP_MSG;
	REFUSED(fi_endpoint(l.domain, i, &ep, NULL));
	i->ep_attr->type = FI_EP_DGRAM;
	REFUSED(fi_endpoint(l.domain, i, &ep, NULL));
	fi_freeinfo(i);
	REFUSED(fi_scalable_ep(l.domain, l.info, &ep, NULL));
	struct fid_stx *stx;
	REFUSED(fi_stx_context(l.domain, l.info->tx_attr, &stx, NULL));
	REFUSED(fi_srx_context(l.domain, l.info->rx_attr, &ep, NULL));
	struct fid_pep *pep;
	REFUSED(fi_passive_ep(l.fabric, l.info, &pep, NULL));
	REFUSED(fi_tx_context(l.ep, 0, NULL, &ep, NULL));
	REFUSED(fi_rx_context(l.ep, 0, NULL, &ep, NULL));

	REFUSED(fi_connect(l.ep, l.name, NULL, 0));
	REFUSED(fi_accept(l.ep, NULL, 0));
	REFUSED(fi_shutdown(l.ep, 0));
	size_t len = sizeof(l.name);
	uint8_t peer[ADDR_MAX];
	REFUSED(fi_getpeer(l.ep, peer, &len));
	REFUSED(fi_setname(&l.ep->fid, l.name, l.namelen));
	struct fid_mc *mc;
	REFUSED(fi_join(l.ep, l.name, 0, &mc, NULL));

	fi_addr_t self;
	CHECK_RC(fi_av_insert(l.av, l.name, 1, &self, 0, NULL), 1);
	uint64_t buf[4] = { 0 };
	int ctx;
	REFUSED(fi_barrier(l.ep, self, &ctx));
	struct fid_av_set *set;
	struct fi_av_set_attr sa = { .count = 1,
				     .start_addr = self,
				     .end_addr = self,
				     .stride = 1 };
	REFUSED(fi_av_set(l.av, &sa, &set, NULL));

	/* A triggered send: refused, and nothing is sent or completed. */
	struct fi_triggered_context tctx = { .event_type = FI_TRIGGER_THRESHOLD };
	struct iovec iov = { .iov_base = buf, .iov_len = 8 };
	struct fi_msg m = { .msg_iov = &iov, .iov_count = 1, .addr = self, .context = &tctx };
	REFUSED(fi_sendmsg(l.ep, &m, FI_TRIGGER));
	REFUSED(fi_recvmsg(l.ep, &m, FI_TRIGGER));
	expect_no_completion(l.cq, 100, "refused operations");

	lnx_close(&l);
	printf("unsupported: ok\n");
	return 0;
}
