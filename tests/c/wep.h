/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * wep: a second endpoint on the harness's domain, with the CQs and
 * counters a test wants (the harness's own endpoint has one CQ for both
 * directions). Included by the tests that use it.
 */
#ifndef LNX_TEST_WEP_H
#define LNX_TEST_WEP_H

#include "common.h"

/* An endpoint of the test's own on the harness's domain. */
struct wep {
	struct fid_av *av;
	struct fid_ep *ep;
	struct fid_cq *txcq, *rxcq;
	struct fid_cntr *txcntr, *rxcntr;
	uint64_t tx_flags, rx_flags; /* e.g. FI_SELECTIVE_COMPLETION */
	fi_addr_t peer;
};

/* Opens the endpoint, binds the objects set in *w (tx_flags and rx_flags
 * add to FI_TRANSMIT and FI_RECV; one CQ for both takes tx_flags), enables
 * it and swaps names with the other rank of a pair; w->peer is then the
 * other rank's endpoint. */
static void wep_open(struct peer *p, struct wep *w)
{
	struct fi_av_attr av_attr = { .type = FI_AV_TABLE, .count = 4 };
	CHECK(fi_av_open(p->l.domain, &av_attr, &w->av, NULL));
	CHECK(fi_endpoint(p->l.domain, p->l.info, &w->ep, NULL));
	CHECK(fi_ep_bind(w->ep, &w->av->fid, 0));
	if (w->txcq && w->txcq == w->rxcq) {
		CHECK(fi_ep_bind(w->ep, &w->txcq->fid, FI_TRANSMIT | FI_RECV | w->tx_flags));
	} else {
		if (w->txcq)
			CHECK(fi_ep_bind(w->ep, &w->txcq->fid, FI_TRANSMIT | w->tx_flags));
		if (w->rxcq)
			CHECK(fi_ep_bind(w->ep, &w->rxcq->fid, FI_RECV | w->rx_flags));
	}
	if (w->txcntr)
		CHECK(fi_ep_bind(w->ep, &w->txcntr->fid, FI_SEND));
	if (w->rxcntr)
		CHECK(fi_ep_bind(w->ep, &w->rxcntr->fid, FI_RECV));
	CHECK(fi_enable(w->ep));
	uint8_t name[ADDR_MAX], theirs[ADDR_MAX];
	size_t len = sizeof(name);
	CHECK(fi_getname(&w->ep->fid, name, &len));
	EXPECT(len == LNX_ADDRLEN, "fi_getname length %zu", len);
	oob_send(p, other(p), name, len);
	oob_recv(p, other(p), theirs, len);
	CHECK_RC(fi_av_insert(w->av, theirs, 1, &w->peer, 0, NULL), 1);
}

static void wep_close(struct wep *w)
{
	CHECK(fi_close(&w->ep->fid));
	CHECK(fi_close(&w->av->fid));
	struct fid_cq *cqs[2] = { w->txcq, w->rxcq != w->txcq ? w->rxcq : NULL };
	for (int i = 0; i < 2; i++)
		if (cqs[i])
			CHECK(fi_close(&cqs[i]->fid));
	struct fid_cntr *cs[2] = { w->txcntr, w->rxcntr };
	for (int i = 0; i < 2; i++)
		if (cs[i])
			CHECK(fi_close(&cs[i]->fid));
}

static struct fid_cq *open_cq(struct peer *p, enum fi_wait_obj wait, struct fid_wait *set)
{
	struct fi_cq_attr a = { .format = FI_CQ_FORMAT_TAGGED, .wait_obj = wait, .wait_set = set };
	struct fid_cq *cq;
	CHECK(fi_cq_open(p->l.domain, &a, &cq, NULL));
	return cq;
}

static struct fid_cntr *open_cntr(struct peer *p, enum fi_wait_obj wait, struct fid_wait *set)
{
	struct fi_cntr_attr a = { .events = FI_CNTR_EVENTS_COMP,
				  .wait_obj = wait,
				  .wait_set = set };
	struct fid_cntr *c;
	CHECK(fi_cntr_open(p->l.domain, &a, &c, NULL));
	return c;
}

#endif
