/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * av_flags: the flags of fi_av_insert (fi_av(3)), for links "shm" and
 * "shm+tcp;ofi_rxm:lo". Two endpoints in one process, a and b; a's AV
 * (FI_AV_TABLE, so indexes count up from 0 in insertion order) is tested.
 *
 *  - FI_SYNC_ERR, no EQ: context is an int array of count entries. A batch
 *    of b's address, garbage, a's own address and an all-zero blob returns
 *    2 (the number inserted); the array gets 0 for the two inserted and
 *    FI_EINVAL for the two malformed ones, fi_addr FI_ADDR_NOTAVAIL for
 *    those and 0, 1 for the others; fi_av_lookup gives back the addresses,
 *    and a message sent to each of the two fi_addrs arrives at that
 *    endpoint. With fi_addr NULL the errors are still reported.
 *  - FI_MORE, alone or with FI_SYNC_ERR: accepted (a hint).
 *  - FI_SYNC_ERR with a NULL context -> -FI_EINVAL; other flags (FI_SEND,
 *    FI_AV_USER_ID) -> -FI_EBADFLAGS; neither inserts anything (the next
 *    index is unchanged) nor writes fi_addr or the error array.
 *  - With an EQ bound, FI_SYNC_ERR is ignored (it applies to synchronous
 *    inserts only): the call returns 0 and context is the events' context,
 *    not written to; with fi_addr NULL the malformed address still gets its
 *    error entry (data: its index, err FI_EINVAL), then FI_AV_COMPLETE with
 *    the number inserted.
 */
#include "common.h"

#define SENTINEL (-7)

/* Sends a short tagged message from `from` to fi_addr `to` of its AV and
 * receives it on `at`, the endpoint that address names. */
static void send_to(struct lnx *from, fi_addr_t to, struct lnx *at, uint64_t tag)
{
	char sbuf[48], rbuf[48];
	struct fi_context2 sctx, rctx;
	struct fi_cq_tagged_entry e;

	fill_pattern(sbuf, sizeof(sbuf), tag);
	memset(rbuf, 0, sizeof(rbuf));
	CHECK(fi_trecv(at->ep, rbuf, sizeof(rbuf), NULL, FI_ADDR_UNSPEC, tag, 0, &rctx));
	POST(from->cq, fi_tsend(from->ep, sbuf, sizeof(sbuf), NULL, to, tag, &sctx));
	int sent = 0, got = 0;
	while (!sent || !got) {
		struct lnx *l = !got ? at : from;
		wait_ok(l->cq, &e, NULL, "a message to an inserted fi_addr");
		if (e.op_context == &rctx) {
			EXPECT(l == at && e.tag == tag && e.len == sizeof(rbuf),
			       "receive: tag %#llx len %zu", (unsigned long long)e.tag, e.len);
			got = 1;
		} else {
			EXPECT(l == from && e.op_context == &sctx, "unexpected completion %p",
			       e.op_context);
			sent = 1;
		}
	}
	EXPECT_PATTERN(rbuf, sizeof(rbuf), tag);
}

static void expect_lookup(struct fid_av *av, fi_addr_t fa, const struct lnx *owner,
			  const char *what)
{
	uint8_t buf[ADDR_MAX];
	size_t len = sizeof(buf);
	CHECK(fi_av_lookup(av, fa, buf, &len));
	EXPECT(len == owner->namelen && !memcmp(buf, owner->name, len), "lookup of %s", what);
}

/* Inserts b's address once more and checks it got the next index. */
static void expect_next_index(struct lnx *a, struct lnx *b, fi_addr_t want, const char *after)
{
	fi_addr_t x = 777;
	CHECK_RC(fi_av_insert(a->av, b->name, 1, &x, 0, NULL), 1);
	EXPECT(x == want, "after %s the next fi_addr is %llu, want %llu", after,
	       (unsigned long long)x, (unsigned long long)want);
}

static void test_sync(struct lnx *a, struct lnx *b)
{
	uint8_t blob[4 * LNX_ADDRLEN];
	int errs[4];
	fi_addr_t fa[4];

	EXPECT(a->namelen == LNX_ADDRLEN && b->namelen == LNX_ADDRLEN, "address lengths %zu %zu",
	       a->namelen, b->namelen);
	memcpy(blob, b->name, LNX_ADDRLEN);
	memset(blob + LNX_ADDRLEN, 0xA5, LNX_ADDRLEN);
	memcpy(blob + 2 * LNX_ADDRLEN, a->name, LNX_ADDRLEN);
	memset(blob + 3 * LNX_ADDRLEN, 0, LNX_ADDRLEN);
	for (int i = 0; i < 4; i++) {
		errs[i] = SENTINEL;
		fa[i] = 777;
	}
	CHECK_RC(fi_av_insert(a->av, blob, 4, fa, FI_SYNC_ERR, errs), 2);
	EXPECT(errs[0] == 0 && errs[1] == FI_EINVAL && errs[2] == 0 && errs[3] == FI_EINVAL,
	       "FI_SYNC_ERR codes %d %d %d %d, want 0 %d 0 %d", errs[0], errs[1], errs[2], errs[3],
	       FI_EINVAL, FI_EINVAL);
	EXPECT(fa[0] == 0 && fa[1] == FI_ADDR_NOTAVAIL && fa[2] == 1 && fa[3] == FI_ADDR_NOTAVAIL,
	       "fi_addrs %llu %llu %llu %llu", (unsigned long long)fa[0], (unsigned long long)fa[1],
	       (unsigned long long)fa[2], (unsigned long long)fa[3]);
	expect_lookup(a->av, fa[0], b, "the peer's fi_addr");
	expect_lookup(a->av, fa[2], a, "our own fi_addr");
	send_to(a, fa[0], b, 0x51);
	send_to(a, fa[2], a, 0x52);

	/* fi_addr NULL: the array is the only report; with FI_MORE too. */
	errs[0] = errs[1] = SENTINEL;
	memcpy(blob, blob + LNX_ADDRLEN, LNX_ADDRLEN); /* garbage, then b */
	memcpy(blob + LNX_ADDRLEN, b->name, LNX_ADDRLEN);
	CHECK_RC(fi_av_insert(a->av, blob, 2, NULL, FI_SYNC_ERR | FI_MORE, errs), 1);
	EXPECT(errs[0] == FI_EINVAL && errs[1] == 0, "FI_SYNC_ERR codes without fi_addr: %d %d",
	       errs[0], errs[1]);
	expect_lookup(a->av, 2, b, "fi_addr 2 (inserted without an fi_addr array)");

	/* FI_MORE alone is a hint; the call that ends the list has none. */
	fi_addr_t x = 777;
	CHECK_RC(fi_av_insert(a->av, b->name, 1, &x, FI_MORE, NULL), 1);
	EXPECT(x == 3, "FI_MORE insert: fi_addr %llu", (unsigned long long)x);
	expect_next_index(a, b, 4, "FI_MORE");

	/* Refused calls: nothing inserted, nothing written. */
	fa[0] = 777;
	CHECK_RC(fi_av_insert(a->av, b->name, 1, fa, FI_SYNC_ERR, NULL), -FI_EINVAL);
	errs[0] = SENTINEL;
	CHECK_RC(fi_av_insert(a->av, b->name, 1, fa, FI_SEND, errs), -FI_EBADFLAGS);
	CHECK_RC(fi_av_insert(a->av, b->name, 1, fa, FI_AV_USER_ID | FI_SYNC_ERR, errs),
		 -FI_EBADFLAGS);
	EXPECT(fa[0] == 777 && errs[0] == SENTINEL, "a refused call wrote fi_addr %llu / code %d",
	       (unsigned long long)fa[0], errs[0]);
	expect_next_index(a, b, 5, "the refused calls");
	note("FI_SYNC_ERR, FI_MORE, bad flags: ok");
}

static void test_eq(struct lnx *a, struct lnx *b)
{
	struct fi_eq_attr eattr = { .wait_obj = FI_WAIT_UNSPEC };
	struct fi_av_attr aattr = { .type = FI_AV_TABLE, .count = 8, .flags = FI_EVENT };
	struct fid_eq *eq;
	struct fid_av *av;
	uint8_t two[2 * LNX_ADDRLEN];
	int ctx[2] = { 4242, 4343 };

	CHECK(fi_eq_open(a->fabric, &eattr, &eq, NULL));
	CHECK(fi_av_open(a->domain, &aattr, &av, NULL));
	CHECK(fi_av_bind(av, &eq->fid, 0));
	memcpy(two, b->name, LNX_ADDRLEN);
	memset(two + LNX_ADDRLEN, 0xA5, LNX_ADDRLEN);
	CHECK_RC(fi_av_insert(av, two, 2, NULL, FI_SYNC_ERR | FI_MORE, ctx), 0);
	EXPECT(ctx[0] == 4242 && ctx[1] == 4343, "context written with an EQ bound: %d %d", ctx[0],
	       ctx[1]);

	uint32_t event = 0;
	struct fi_eq_entry e;
	struct fi_eq_err_entry err;
	memset(&err, 0, sizeof(err));
	CHECK_RC(fi_eq_read(eq, &event, &e, sizeof(e), 0), -FI_EAVAIL);
	CHECK_RC(fi_eq_readerr(eq, &err, 0), sizeof(err));
	EXPECT(err.fid == &av->fid && err.context == ctx && err.data == 1 && err.err == FI_EINVAL,
	       "error entry: fid %p context %p data %llu err %d", (void *)err.fid, err.context,
	       (unsigned long long)err.data, err.err);
	memset(&e, 0, sizeof(e));
	CHECK_RC(fi_eq_sread(eq, &event, &e, sizeof(e), -1, 0), sizeof(e));
	EXPECT(event == FI_AV_COMPLETE && e.context == ctx && e.data == 1,
	       "event %u context %p data %llu", event, e.context, (unsigned long long)e.data);
	expect_lookup(av, 0, b, "the address inserted through the EQ path");
	CHECK_RC(fi_eq_read(eq, &event, &e, sizeof(e), 0), -FI_EAGAIN);

	/* Bad flags fail the call itself: no events. */
	CHECK_RC(fi_av_insert(av, two, 1, NULL, FI_SEND, ctx), -FI_EBADFLAGS);
	CHECK_RC(fi_eq_read(eq, &event, &e, sizeof(e), 0), -FI_EAGAIN);

	CHECK(fi_close(&av->fid));
	CHECK(fi_close(&eq->fid));
	note("FI_SYNC_ERR with an EQ: ok");
}

int main(void)
{
	static const char *links[] = { LINK_SHM, LINK_TCP };
	for (size_t i = 0; i < sizeof(links) / sizeof(links[0]); i++) {
		struct lnx a, b;
		struct lnx_opts o = { .links = links[i] };
		snprintf(g_role, sizeof(g_role), "av_flags %s", links[i]);
		lnx_open(&a, &o);
		lnx_open(&b, &o);
		test_sync(&a, &b);
		test_eq(&a, &b);
		lnx_close(&b);
		lnx_close(&a);
	}
	printf("av_flags: ok\n");
	return 0;
}
