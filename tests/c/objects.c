/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * objects: object lifecycle and control-path calls, for links "shm" and
 * "shm+tcp;ofi_rxm:lo".
 *
 *  - fabric, domain, AV (FI_AV_MAP and FI_AV_TABLE), CQ in every format,
 *    counter (read/add/set/readerr), endpoint with binds and fi_enable
 *  - fi_getname: too-small buffer -> -FI_ETOOSMALL and the needed length
 *    (256); then the real call; stable across calls
 *  - fi_av_insert of our own address -> 1; fi_av_lookup returns the same
 *    bytes (and the needed length when the buffer is short); fi_av_straddr
 *    non-empty; fi_av_remove; lookup after remove fails; re-insert works;
 *    FI_AV_TABLE indexes are 0, 1, ... in insertion order
 *  - fi_av_insert of a garbage blob -> 0 inserted, FI_ADDR_NOTAVAIL; a
 *    batch of good+garbage -> 1 inserted
 *  - fi_enable without an AV -> error
 *  - fi_cq_read / fi_cq_readerr on an empty CQ -> -FI_EAGAIN
 *  - closing a domain, fabric, AV or CQ that is still in use -> -FI_EBUSY,
 *    then closing in the right order succeeds
 */
#include "common.h"

/* Failures that do not stop the rest of the test from being meaningful are
 * counted and reported at the end. */
static int soft_failures;
#define SOFT_EXPECT(cond, ...)                                                               \
	do {                                                                                 \
		if (!(cond)) {                                                               \
			printf("[%s] FAIL %s:%d: expected %s: ", g_role, __FILE__, __LINE__, \
			       #cond);                                                       \
			printf(__VA_ARGS__);                                                 \
			printf("\n");                                                        \
			soft_failures++;                                                     \
		}                                                                            \
	} while (0)

static void open_fabric_domain(const char *links, struct fi_info **info, struct fid_fabric **fab,
			       struct fid_domain **dom)
{
	struct fi_info *h = lnx_hints();
	set_links(links);
	CHECK(lnx_getinfo(h, info));
	EXPECT(!strcmp((*info)->domain_attr->name, links), "domain %s", (*info)->domain_attr->name);
	fi_freeinfo(h);
	CHECK(fi_fabric((*info)->fabric_attr, fab, NULL));
	CHECK(fi_domain(*fab, *info, dom, NULL));
}

static void test_cq_formats(struct fid_domain *dom)
{
	static const enum fi_cq_format fmts[] = {
		FI_CQ_FORMAT_UNSPEC, FI_CQ_FORMAT_CONTEXT, FI_CQ_FORMAT_MSG,
		FI_CQ_FORMAT_DATA,   FI_CQ_FORMAT_TAGGED,
	};
	for (size_t i = 0; i < sizeof(fmts) / sizeof(fmts[0]); i++) {
		struct fi_cq_attr attr = { .format = fmts[i],
					   .wait_obj = FI_WAIT_NONE,
					   .size = 64 };
		struct fid_cq *cq;
		struct fi_cq_tagged_entry e[4];
		struct fi_cq_err_entry err;
		CHECK(fi_cq_open(dom, &attr, &cq, NULL));
		CHECK_RC(fi_cq_read(cq, e, 4), -FI_EAGAIN);
		memset(&err, 0, sizeof(err));
		CHECK_RC(fi_cq_readerr(cq, &err, 0), -FI_EAGAIN);
		CHECK(fi_close(&cq->fid));
	}
	/* Default attributes. */
	struct fid_cq *cq;
	CHECK(fi_cq_open(dom, NULL, &cq, NULL));
	CHECK(fi_close(&cq->fid));
	note("CQ formats: ok");
}

static void test_cntr(struct fid_domain *dom)
{
	struct fi_cntr_attr attr = { .events = FI_CNTR_EVENTS_COMP, .wait_obj = FI_WAIT_UNSPEC };
	struct fid_cntr *c;
	CHECK(fi_cntr_open(dom, &attr, &c, NULL));
	EXPECT(fi_cntr_read(c) == 0, "fresh counter %llu", (unsigned long long)fi_cntr_read(c));
	EXPECT(fi_cntr_readerr(c) == 0, "fresh error counter");
	CHECK(fi_cntr_add(c, 5));
	EXPECT(fi_cntr_read(c) == 5, "after add 5: %llu", (unsigned long long)fi_cntr_read(c));
	CHECK(fi_cntr_set(c, 2));
	EXPECT(fi_cntr_read(c) == 2, "after set 2: %llu", (unsigned long long)fi_cntr_read(c));
	CHECK(fi_cntr_wait(c, 2, 100));
	CHECK(fi_cntr_adderr(c, 3));
	EXPECT(fi_cntr_readerr(c) == 3, "error count %llu", (unsigned long long)fi_cntr_readerr(c));
	CHECK(fi_cntr_seterr(c, 0));
	EXPECT(fi_cntr_readerr(c) == 0, "error count reset");
	CHECK_RC(fi_cntr_wait(c, 10, 50), -FI_ETIMEDOUT);
	CHECK(fi_close(&c->fid));
	note("counter: ok");
}

static void test_av(struct fid_domain *dom, enum fi_av_type type, const uint8_t *name,
		    size_t namelen, const uint8_t *name2)
{
	struct fi_av_attr attr = { .type = type, .count = 8 };
	struct fid_av *av;
	fi_addr_t fa = 12345, fb = 12345, fc, batch[3];
	uint8_t buf[ADDR_MAX], garbage[LNX_ADDRLEN], two[2 * LNX_ADDRLEN];
	size_t len;
	const char *tn = type == FI_AV_MAP ? "FI_AV_MAP" : "FI_AV_TABLE";

	CHECK(fi_av_open(dom, &attr, &av, NULL));

	CHECK_RC(fi_av_insert(av, name, 1, &fa, 0, NULL), 1);
	EXPECT(fa != FI_ADDR_NOTAVAIL, "%s: own address got FI_ADDR_NOTAVAIL", tn);
	if (type == FI_AV_TABLE)
		EXPECT(fa == 0, "first FI_AV_TABLE index %llu", (unsigned long long)fa);

	memset(buf, 0, sizeof(buf));
	len = sizeof(buf);
	CHECK(fi_av_lookup(av, fa, buf, &len));
	EXPECT(len == namelen, "%s: lookup length %zu, want %zu", tn, len, namelen);
	EXPECT(!memcmp(buf, name, namelen), "%s: lookup returned different bytes", tn);

	/* Short buffer: truncated copy, needed length reported. */
	memset(buf, 0, sizeof(buf));
	len = 16;
	int r = fi_av_lookup(av, fa, buf, &len);
	EXPECT(r == 0 || r == -FI_ETOOSMALL, "%s: short lookup -> %d (%s)", tn, r, fi_strerror(-r));
	EXPECT(len == namelen, "%s: short lookup reports %zu, want %zu", tn, len, namelen);
	EXPECT(!memcmp(buf, name, 16), "%s: truncated lookup bytes", tn);
	EXPECT(buf[16] == 0, "%s: short lookup wrote past the buffer", tn);

	/* straddr */
	char str[512];
	len = sizeof(str);
	memset(str, 0, sizeof(str));
	const char *s = fi_av_straddr(av, name, str, &len);
	EXPECT(s != NULL && s[0] != 0, "%s: fi_av_straddr gave an empty string", tn);
	EXPECT(len >= strlen(s) + 1 || len == strlen(s), "straddr length %zu vs \"%s\"", len, s);
	note("%s: straddr %s", tn, s);
	{
		char tiny[8];
		size_t tl = sizeof(tiny);
		const char *t = fi_av_straddr(av, name, tiny, &tl);
		EXPECT(t != NULL, "straddr into a small buffer returns the buffer");
		EXPECT(tl > sizeof(tiny), "straddr reports the size needed (%zu)", tl);
		EXPECT(memchr(tiny, 0, sizeof(tiny)) != NULL, "truncated straddr is terminated");
	}

	/* A second, different address: next TABLE index. */
	if (!name2) {
		note("%s: no distinct second address; skipping the two-address checks", tn);
		goto single;
	}
	CHECK_RC(fi_av_insert(av, name2, 1, &fb, 0, NULL), 1);
	EXPECT(fb != FI_ADDR_NOTAVAIL && fb != fa, "%s: second address %llu (first %llu)", tn,
	       (unsigned long long)fb, (unsigned long long)fa);
	if (type == FI_AV_TABLE)
		EXPECT(fb == 1, "second FI_AV_TABLE index %llu", (unsigned long long)fb);
	len = sizeof(buf);
	CHECK(fi_av_lookup(av, fb, buf, &len));
	EXPECT(len == namelen && !memcmp(buf, name2, namelen), "%s: lookup of second address", tn);

	/* Remove, lookup fails, re-insert works. */
	CHECK(fi_av_remove(av, &fa, 1, 0));
	len = sizeof(buf);
	CHECK_FAILS(fi_av_lookup(av, fa, buf, &len));
	fc = FI_ADDR_NOTAVAIL;
	CHECK_RC(fi_av_insert(av, name, 1, &fc, 0, NULL), 1);
	EXPECT(fc != FI_ADDR_NOTAVAIL, "%s: re-insert after remove", tn);
	len = sizeof(buf);
	CHECK(fi_av_lookup(av, fc, buf, &len));
	EXPECT(!memcmp(buf, name, namelen), "%s: lookup after re-insert", tn);
	len = sizeof(buf);
	CHECK(fi_av_lookup(av, fb, buf, &len));
	EXPECT(!memcmp(buf, name2, namelen), "%s: other entry unaffected", tn);
	goto garbage;

single:
	CHECK(fi_av_remove(av, &fa, 1, 0));
	len = sizeof(buf);
	CHECK_FAILS(fi_av_lookup(av, fa, buf, &len));
	fc = FI_ADDR_NOTAVAIL;
	CHECK_RC(fi_av_insert(av, name, 1, &fc, 0, NULL), 1);
	EXPECT(fc != FI_ADDR_NOTAVAIL, "%s: re-insert after remove", tn);
	len = sizeof(buf);
	CHECK(fi_av_lookup(av, fc, buf, &len));
	EXPECT(!memcmp(buf, name, namelen), "%s: lookup after re-insert", tn);

garbage:

	/* Garbage. */
	for (size_t i = 0; i < sizeof(garbage); i++)
		garbage[i] = (uint8_t)(i * 37 + 11);
	fi_addr_t fg = 777;
	CHECK_RC(fi_av_insert(av, garbage, 1, &fg, 0, NULL), 0);
	EXPECT(fg == FI_ADDR_NOTAVAIL, "%s: garbage got fi_addr %llu", tn, (unsigned long long)fg);
	/* Garbage after a valid magic-less zero blob. */
	memset(garbage, 0, sizeof(garbage));
	fg = 777;
	CHECK_RC(fi_av_insert(av, garbage, 1, &fg, 0, NULL), 0);
	EXPECT(fg == FI_ADDR_NOTAVAIL, "%s: zero blob got fi_addr %llu", tn,
	       (unsigned long long)fg);

	/* Batch: a valid address (removed first, so it is not a duplicate)
	 * and garbage. */
	CHECK(fi_av_remove(av, &fc, 1, 0));
	memcpy(two, name, LNX_ADDRLEN);
	memset(two + LNX_ADDRLEN, 0xA5, LNX_ADDRLEN);
	batch[0] = batch[1] = 777;
	CHECK_RC(fi_av_insert(av, two, 2, batch, 0, NULL), 1);
	EXPECT(batch[0] != FI_ADDR_NOTAVAIL, "%s: batch good entry", tn);
	EXPECT(batch[1] == FI_ADDR_NOTAVAIL, "%s: batch garbage entry %llu", tn,
	       (unsigned long long)batch[1]);
	len = sizeof(buf);
	CHECK(fi_av_lookup(av, batch[0], buf, &len));
	EXPECT(!memcmp(buf, name, namelen), "%s: lookup of batch entry", tn);

	/* Zero-count insert is a no-op. */
	CHECK_RC(fi_av_insert(av, name, 0, batch, 0, NULL), 0);

	CHECK(fi_close(&av->fid));
	note("%s: ok", tn);
}

static void run_links(const char *links)
{
	struct fi_info *info;
	struct fid_fabric *fab;
	struct fid_domain *dom;
	struct fid_av *av;
	struct fid_cq *cq;
	struct fid_cntr *cntr;
	struct fid_ep *ep, *ep2, *ep3;
	uint8_t name[ADDR_MAX], name_again[ADDR_MAX], name3[ADDR_MAX], small[8];
	size_t len;

	note("--- links %s", links);
	open_fabric_domain(links, &info, &fab, &dom);
	test_cq_formats(dom);
	test_cntr(dom);

	struct fi_av_attr av_attr = { .type = FI_AV_TABLE, .count = 8 };
	CHECK(fi_av_open(dom, &av_attr, &av, NULL));
	struct fi_cq_attr cq_attr = { .format = FI_CQ_FORMAT_TAGGED, .wait_obj = FI_WAIT_NONE };
	CHECK(fi_cq_open(dom, &cq_attr, &cq, NULL));
	struct fi_cntr_attr cntr_attr = { .events = FI_CNTR_EVENTS_COMP,
					  .wait_obj = FI_WAIT_UNSPEC };
	CHECK(fi_cntr_open(dom, &cntr_attr, &cntr, NULL));

	/* fi_enable without an AV must fail. */
	CHECK(fi_endpoint(dom, info, &ep2, NULL));
	CHECK(fi_ep_bind(ep2, &cq->fid, FI_TRANSMIT | FI_RECV));
	CHECK_FAILS(fi_enable(ep2));
	CHECK(fi_close(&ep2->fid));
	note("fi_enable without AV fails: ok");

	/* The real endpoint. */
	CHECK(fi_endpoint(dom, info, &ep, NULL));
	CHECK(fi_ep_bind(ep, &av->fid, 0));
	CHECK(fi_ep_bind(ep, &cq->fid, FI_TRANSMIT | FI_RECV));
	CHECK(fi_ep_bind(ep, &cntr->fid, FI_SEND | FI_RECV));
	CHECK(fi_enable(ep));

	/* fi_getname: size query, then the real call. */
	len = 0;
	CHECK_RC(fi_getname(&ep->fid, NULL, &len), -FI_ETOOSMALL);
	EXPECT(len == LNX_ADDRLEN, "needed length %zu, want %d", len, LNX_ADDRLEN);
	len = sizeof(small);
	memset(small, 0xEE, sizeof(small));
	CHECK_RC(fi_getname(&ep->fid, small, &len), -FI_ETOOSMALL);
	EXPECT(len == LNX_ADDRLEN, "needed length %zu, want %d", len, LNX_ADDRLEN);
	len = sizeof(name);
	CHECK(fi_getname(&ep->fid, name, &len));
	EXPECT(len == LNX_ADDRLEN, "name length %zu", len);
	len = LNX_ADDRLEN; /* exactly big enough */
	CHECK(fi_getname(&ep->fid, name_again, &len));
	EXPECT(len == LNX_ADDRLEN && !memcmp(name, name_again, LNX_ADDRLEN), "name is stable");
	note("fi_getname: ok");

	/* A second enabled endpoint for a distinct valid address. */
	struct fid_av *av3;
	struct fid_cq *cq3;
	CHECK(fi_av_open(dom, &av_attr, &av3, NULL));
	CHECK(fi_cq_open(dom, &cq_attr, &cq3, NULL));
	CHECK(fi_endpoint(dom, info, &ep3, NULL));
	CHECK(fi_ep_bind(ep3, &av3->fid, 0));
	CHECK(fi_ep_bind(ep3, &cq3->fid, FI_TRANSMIT | FI_RECV));
	CHECK(fi_enable(ep3));
	len = sizeof(name3);
	CHECK(fi_getname(&ep3->fid, name3, &len));
	EXPECT(len == LNX_ADDRLEN, "second endpoint name length %zu", len);
	int distinct = memcmp(name, name3, LNX_ADDRLEN) != 0;
	SOFT_EXPECT(distinct,
		    "two endpoints of one domain (links %s) have identical "
		    "fi_getname addresses",
		    links);

	test_av(dom, FI_AV_MAP, name, LNX_ADDRLEN, distinct ? name3 : NULL);
	test_av(dom, FI_AV_TABLE, name, LNX_ADDRLEN, distinct ? name3 : NULL);

	/* Own address into the bound AV. */
	fi_addr_t self = FI_ADDR_NOTAVAIL;
	CHECK_RC(fi_av_insert(av, name, 1, &self, 0, NULL), 1);
	EXPECT(self == 0, "first index of the bound FI_AV_TABLE is %llu", (unsigned long long)self);

	/* Empty CQ. */
	struct fi_cq_tagged_entry e;
	struct fi_cq_err_entry err;
	fi_addr_t src;
	CHECK_RC(fi_cq_read(cq, &e, 1), -FI_EAGAIN);
	CHECK_RC(fi_cq_readfrom(cq, &e, 1, &src), -FI_EAGAIN);
	memset(&err, 0, sizeof(err));
	CHECK_RC(fi_cq_readerr(cq, &err, 0), -FI_EAGAIN);
	EXPECT(fi_cntr_read(cntr) == 0, "bound counter still 0");
	note("empty CQ: ok");

	/* Closing parents with live children. */
	CHECK_RC(fi_close(&dom->fid), -FI_EBUSY);
	CHECK_RC(fi_close(&fab->fid), -FI_EBUSY);
	CHECK_RC(fi_close(&av->fid), -FI_EBUSY);
	CHECK_RC(fi_close(&cq->fid), -FI_EBUSY);
	/* Still usable after the refused closes. */
	len = sizeof(name_again);
	CHECK(fi_getname(&ep->fid, name_again, &len));
	EXPECT(!memcmp(name, name_again, LNX_ADDRLEN), "name unchanged after refused closes");
	CHECK_RC(fi_cq_read(cq, &e, 1), -FI_EAGAIN);
	note("-FI_EBUSY on early close: ok");

	CHECK(fi_close(&ep3->fid));
	CHECK(fi_close(&av3->fid));
	CHECK(fi_close(&cq3->fid));
	CHECK(fi_close(&ep->fid));
	CHECK(fi_close(&av->fid));
	CHECK(fi_close(&cq->fid));
	CHECK(fi_close(&cntr->fid));
	CHECK(fi_close(&dom->fid));
	CHECK(fi_close(&fab->fid));
	fi_freeinfo(info);

	/* And the whole thing again via the helper, both AV types. */
	struct lnx l;
	struct lnx_opts o = { .links = links, .av_type = FI_AV_MAP, .counters = 1 };
	lnx_open(&l, &o);
	lnx_close(&l);
	o.av_type = FI_AV_TABLE;
	o.counters = 0;
	lnx_open(&l, &o);
	lnx_close(&l);
	note("links %s: done", links);
}

int main(void)
{
	snprintf(g_role, sizeof(g_role), "objects");
	run_links(LINK_SHM);
	run_links(LINK_TCP);
	if (soft_failures) {
		printf("objects: %d FAILURES\n", soft_failures);
		return 1;
	}
	note("PASS");
	return 0;
}
