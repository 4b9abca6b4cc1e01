/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * pep_send_lent: sends over a peer-API core lent to lnx's C layer
 * (capi/fast_send.c's lnx_fast_send_pep, lnx_pep.h's lnx_pep_inject_lent
 * and peers/peerep/pep.c, compiled without Go; issue #20). The core is a fake
 * endpoint whose inject calls record what they were given.
 *
 *  - a send to an lnx fi_addr Go published (lnx_pep.dst) goes to the
 *    core's inject with the core fi_addr, the application's buffer,
 *    length, tag and CQ data (tinjectdata, tinject, injectdata, inject by
 *    kind); its completion lands in the transmit CQ's ring with its
 *    context and FI_SEND|FI_TAGGED or FI_MSG, none for an inject; C
 *    counts it (tx_msgs, tx_bytes).
 *  - Go sends (declined, the core not called, nothing in the ring) when
 *    the core is not lent, C may not send (tx_on), the fi_addr is not
 *    published, the message is over the core's inject size (or lnx's for
 *    an inject), or the core answers anything but 0 (-FI_EAGAIN, an
 *    error): then nothing is counted either.
 *  - a receive completion the core writes inside the inject goes to Go
 *    (the CQ ring's lock is held by the send: with real locks a write
 *    into it would deadlock), and so does a message it reads there.
 *  - a send over the core's inject size goes to the core's send (tsenddata,
 *    send by kind) with the application's buffer and a context of C's;
 *    nothing is in the ring until the core writes the completion in C's
 *    poll (lnx_pep_take), which puts it there with the application's
 *    context (none without FI_COMPLETION under selective completion), or
 *    inside the send itself. Once Go adopted it (lnx_pep_csend_pop: the
 *    application's context, flags and fi_addr, and Go's id), or when it
 *    failed, its completion goes to Go instead. Go sends an inject of that
 *    size (its buffer is reusable on return), one whose completion would go
 *    to another CQ, and one the core answers -FI_EAGAIN; C keeps none.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <unistd.h>
#include "lnx_capi.h"
#include "lnx_internal.h"
#include "lnx_ops.h"
#include "lnx_pep.h"
#include "lnx_pep_lend.h"
#include "unit.h"

int lnx_go_close(uintptr_t h)
{
	(void)h;
	return 0;
}
int lnxPepGet(uintptr_t h, int tagged, uint64_t addr, size_t size, uint64_t tag,
	      struct lnx_pentry *e)
{
	(void)h, (void)tagged, (void)addr, (void)size, (void)tag, (void)e;
	fprintf(stderr, "FAIL: get_* entered Go inside a send from C\n");
	exit(1);
}
int lnxPepQueued(uintptr_t h, struct lnx_pentry *e)
{
	(void)h, (void)e;
	fprintf(stderr, "FAIL: queue_* entered Go inside a send from C\n");
	exit(1);
}
void lnxPepDrain(uintptr_t h)
{
	(void)h;
	fprintf(stderr, "FAIL: completion batch drained inside a send from C\n");
	exit(1);
}

/* msync calls (linked with --wrap=msync): the send path's mapping check. */
static int msyncs;
int __real_msync(void *addr, size_t len, int flags);
int __wrap_msync(void *addr, size_t len, int flags)
{
	msyncs++;
	return __real_msync(addr, len, flags);
}

/* What the fake core's last inject got, and what it answers. */
static struct {
	int calls, tagged, has_data;
	const void *buf;
	size_t len;
	uint64_t data, dest, tag;
	ssize_t ret;
	void (*inside)(void); /* called inside the inject */
} g;
static struct lnx_pep *g_p;

static ssize_t got(int tagged, int has_data, const void *buf, size_t len, uint64_t data,
		   fi_addr_t dest, uint64_t tag)
{
	g.calls++;
	g.tagged = tagged, g.has_data = has_data, g.buf = buf, g.len = len;
	g.data = data, g.dest = dest, g.tag = tag;
	if (g.inside)
		g.inside();
	return g.ret;
}
static ssize_t t_inject(struct fid_ep *ep, const void *buf, size_t len, fi_addr_t dest,
			uint64_t tag)
{
	return got(1, 0, buf, len, 0, dest, tag);
}
static ssize_t t_injectdata(struct fid_ep *ep, const void *buf, size_t len, uint64_t data,
			    fi_addr_t dest, uint64_t tag)
{
	return got(1, 1, buf, len, data, dest, tag);
}
static ssize_t m_inject(struct fid_ep *ep, const void *buf, size_t len, fi_addr_t dest)
{
	return got(0, 0, buf, len, 0, dest, 0);
}
static ssize_t m_injectdata(struct fid_ep *ep, const void *buf, size_t len, uint64_t data,
			    fi_addr_t dest)
{
	return got(0, 1, buf, len, data, dest, 0);
}
/* The core's sends (over its inject size): also the context they got,
 * which the fake CQ completes (write_send). */
static void *g_sctx;
static ssize_t sent(int tagged, int has_data, const void *buf, size_t len, uint64_t data,
		    fi_addr_t dest, uint64_t tag, void *ctx)
{
	g_sctx = ctx;
	return got(tagged, has_data, buf, len, data, dest, tag);
}
static ssize_t t_send(struct fid_ep *ep, const void *buf, size_t len, void *desc, fi_addr_t dest,
		      uint64_t tag, void *ctx)
{
	return sent(1, 0, buf, len, 0, dest, tag, ctx);
}
static ssize_t t_senddata(struct fid_ep *ep, const void *buf, size_t len, void *desc, uint64_t data,
			  fi_addr_t dest, uint64_t tag, void *ctx)
{
	return sent(1, 1, buf, len, data, dest, tag, ctx);
}
static ssize_t m_send(struct fid_ep *ep, const void *buf, size_t len, void *desc, fi_addr_t dest,
		      void *ctx)
{
	return sent(0, 0, buf, len, 0, dest, 0, ctx);
}
static ssize_t m_senddata(struct fid_ep *ep, const void *buf, size_t len, void *desc, uint64_t data,
			  fi_addr_t dest, void *ctx)
{
	return sent(0, 1, buf, len, data, dest, 0, ctx);
}
static struct fi_ops_tagged fake_tagged = { .size = sizeof(struct fi_ops_tagged),
					    .send = t_send,
					    .senddata = t_senddata,
					    .inject = t_inject,
					    .injectdata = t_injectdata };
static struct fi_ops_msg fake_msg = { .size = sizeof(struct fi_ops_msg),
				      .send = m_send,
				      .senddata = m_senddata,
				      .inject = m_inject,
				      .injectdata = m_injectdata };

/* Inside the inject the core completes a receive C matched earlier, and
 * reads a message. */
static struct lnx_pctx *g_recv;
static int g_get_ret;
static void core_writes(void)
{
	struct lnx_peer_cq_owner *co = (void *)g_p->pcq.owner_ops;
	((ssize_t(*)(struct lnx_peer_cq *, void *, uint64_t, size_t, void *, uint64_t, uint64_t,
		     uint64_t))co->write)(&g_p->pcq, g_recv, FI_RECV | FI_TAGGED, 2, NULL, 0, 0x44,
					  1);
	struct lnx_peer_srx_owner_v2 *o = (void *)g_p->srx.owner_ops;
	struct lnx_peer_match_attr a = { .addr = 1, .msg_size = 1, .tag = 0x55 };
	struct lnx_pentry *e = NULL;
	g_get_ret = ((int (*)(uintptr_t, struct lnx_peer_match_attr *,
			      struct lnx_pentry **))o->get_tag)((uintptr_t)&g_p->srx, &a, &e);
	((int (*)(struct lnx_pentry *))o->queue_tag)(e);
}

/* The core completes the send whose context it got last (write(), or
 * writeerr() when g_send_err), as 2.1 shm does once the receiver copied
 * the data: in its CQ read (lnx_pep_take), or inside the send. */
static int g_send_err;
static void write_send(void)
{
	struct lnx_peer_cq_owner *co = (void *)g_p->pcq.owner_ops;
	if (g_send_err) {
		struct fi_cq_err_entry e = { .op_context = g_sctx,
					     .flags = FI_SEND | FI_TAGGED,
					     .err = FI_ECONNREFUSED,
					     .prov_errno = 7 };
		((ssize_t(*)(struct lnx_peer_cq *, const struct fi_cq_err_entry *))co->writeerr)(
			&g_p->pcq, &e);
		return;
	}
	((ssize_t(*)(struct lnx_peer_cq *, void *, uint64_t, size_t, void *, uint64_t, uint64_t,
		     uint64_t))co->write)(&g_p->pcq, g_sctx, FI_SEND | FI_TAGGED, 0, NULL, 0, 0,
					  FI_ADDR_NOTAVAIL);
}
static ssize_t fake_cq_read(struct fid_cq *cq, void *buf, size_t count)
{
	(void)cq, (void)buf, (void)count;
	write_send();
	return -FI_EAGAIN;
}
static struct fi_ops_cq fake_cq_ops = { .size = sizeof(struct fi_ops_cq), .read = fake_cq_read };

static struct lnx_fast *g_f;
static uint64_t ring_len(void)
{
	return g_f->cring->tail - g_f->cring->head;
}

/* One send through lnx_fast_send (serial 0: real locks). */
static ssize_t send_c(const void *buf, size_t len, fi_addr_t dest, uint64_t tag, uint64_t data,
		      void *ctx, int kind)
{
	struct iovec iov = { .iov_base = (void *)buf, .iov_len = len };
	return lnx_fast_send(g_f, 0, &iov, 1, dest, tag, data, ctx, kind);
}

int main(void)
{
	struct lnx_pep *p = zalloc(sizeof(*p));
	struct fid_ep ep = { .tagged = &fake_tagged, .msg = &fake_msg };
	lnx_pep_init_owner(p);
	p->ep = &ep;
	p->inject = 64;
	p->stash_end = &p->stash;
	for (int i = 0; i < LNX_PEP_SRCS; i++)
		p->src[i] = LNX_PEP_NOSRC;
	for (int i = 0; i < LNX_PEP_DSTS; i++)
		p->dst[i] = LNX_PEP_NOSRC;
	p->src[1] = 3;
	p->dst[3] = 1; /* lnx fi_addr 3 is core fi_addr 1 */
	p->dst[4] = 9;
	p->tx_on = 1;
	g_p = p;
	struct lnx_fast *f = zalloc(sizeof(*f));
	g_f = f;
	f->cring = zalloc(sizeof(*f->cring));
	f->cring->format = FI_CQ_FORMAT_TAGGED;
	f->inject_size = 32;
	f->arm.cring = f->cring;
	f->arm.pep = (uintptr_t)p;
	f->arm.lent = 1;
	char msg[128] = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
	int ctx[8];

	/* fi_tsenddata: the core's tinjectdata, the completion in the ring. */
	ssize_t r = send_c(msg, 10, 3, 0x77, 0xda7a, &ctx[0], LNX_OP_TAGGED | LNX_OP_DATA);
	CHECK(r == 0 && g.calls == 1, "tsenddata: %zd, %d core calls", r, g.calls);
	CHECK(g.tagged && g.has_data && g.buf == msg && g.len == 10 && g.data == 0xda7a &&
		      g.dest == 1 && g.tag == 0x77,
	      "tsenddata reached the core as tagged %d data %d buf %p len %zu data %#llx dest "
	      "%llu tag %#llx",
	      g.tagged, g.has_data, g.buf, g.len, (unsigned long long)g.data,
	      (unsigned long long)g.dest, (unsigned long long)g.tag);
#define x (&f->cring->e[f->cring->head % LNX_CRING]) /* the first completion in the ring */
	CHECK(ring_len() == 1 && x->ctx == &ctx[0] && x->flags == (FI_SEND | FI_TAGGED) &&
		      x->len == 0 && x->data == 0,
	      "tsenddata completion: %llu in the ring, ctx %p flags %#llx",
	      (unsigned long long)ring_len(), x->ctx, (unsigned long long)x->flags);
	CHECK(p->tx_msgs == 1 && p->tx_bytes == 10, "counted %llu msgs %llu bytes",
	      (unsigned long long)p->tx_msgs, (unsigned long long)p->tx_bytes);
	f->cring->head = f->cring->tail;

	/* fi_tinject: tinject, no completion. fi_send and fi_injectdata:
	 * untagged, the second without a completion. */
	r = send_c(msg, 32, 4, 0x78, 0, NULL, LNX_OP_TAGGED | LNX_OP_INJECT);
	CHECK(r == 0 && g.calls == 2 && g.tagged && !g.has_data && g.dest == 9 && g.tag == 0x78 &&
		      g.len == 32 && ring_len() == 0,
	      "tinject: %zd, calls %d, dest %llu, ring %llu", r, g.calls,
	      (unsigned long long)g.dest, (unsigned long long)ring_len());
	r = send_c(msg, 0, 3, 0, 0, &ctx[1], 0);
	CHECK(r == 0 && g.calls == 3 && !g.tagged && !g.has_data && g.len == 0 && ring_len() == 1 &&
		      x->ctx == &ctx[1] && x->flags == (FI_SEND | FI_MSG),
	      "send: %zd, calls %d, ring %llu, flags %#llx", r, g.calls,
	      (unsigned long long)ring_len(), (unsigned long long)x->flags);
	f->cring->head = f->cring->tail;
	r = send_c(msg, 5, 3, 0, 0x99, NULL, LNX_OP_INJECT | LNX_OP_DATA);
	CHECK(r == 0 && g.calls == 4 && !g.tagged && g.has_data && g.data == 0x99 &&
		      ring_len() == 0,
	      "injectdata: %zd, calls %d", r, g.calls);
	CHECK(p->tx_msgs == 4 && p->tx_bytes == 47, "counted %llu msgs %llu bytes",
	      (unsigned long long)p->tx_msgs, (unsigned long long)p->tx_bytes);

	/* Go's: an fi_addr not published, over the core's inject size, an
	 * inject over lnx's, C not allowed to send, not lent, the core's
	 * -FI_EAGAIN and an error. None calls the core (but the last two),
	 * completes or counts. */
	struct {
		const char *what;
		size_t len;
		fi_addr_t dest;
		int kind;
		ssize_t core;
	} no[] = {
		{ "unpublished", 4, 5, LNX_OP_TAGGED, 0 },
		{ "past LNX_PEP_DSTS", 4, LNX_PEP_DSTS, LNX_OP_TAGGED, 0 },
		{ "an inject over lnx's", 33, 3, LNX_OP_TAGGED | LNX_OP_INJECT, 0 },
		{ "tx_on 0", 4, 3, LNX_OP_TAGGED, 0 },
		{ "not lent", 4, 3, LNX_OP_TAGGED, 0 },
		{ "-FI_EAGAIN", 4, 3, LNX_OP_TAGGED, -FI_EAGAIN },
		{ "-FI_EIO", 4, 3, LNX_OP_TAGGED, -FI_EIO },
	};
	for (size_t i = 0; i < sizeof(no) / sizeof(no[0]); i++) {
		int calls = g.calls, core = no[i].core != 0;
		p->tx_on = strcmp(no[i].what, "tx_on 0") != 0;
		f->arm.lent = strcmp(no[i].what, "not lent") != 0;
		g.ret = no[i].core;
		r = send_c(msg, no[i].len, no[i].dest, 0x1, 0, &ctx[2], no[i].kind);
		CHECK(r == LNX_FAST_DECLINED && g.calls == calls + core && ring_len() == 0 &&
			      p->tx_msgs == 4,
		      "%s: %zd, %d core calls, ring %llu, counted %llu", no[i].what, r,
		      g.calls - calls, (unsigned long long)ring_len(),
		      (unsigned long long)p->tx_msgs);
	}
	p->tx_on = 1, f->arm.lent = 1, g.ret = 0;
	/* Unpublished again (Go cleared it): Go's. */
	p->dst[4] = LNX_PEP_NOSRC;
	r = send_c(msg, 4, 4, 0x1, 0, &ctx[2], LNX_OP_TAGGED);
	CHECK(r == LNX_FAST_DECLINED && g.calls == 6, "unpublished: %zd", r);

	/* Inside the inject the core completes a receive C matched and reads
	 * a message: both go to Go, the send's completion to the ring. */
	g_recv = calloc(1, sizeof(*g_recv));
	char rb[8];
	g_recv->c_recv = 1, g_recv->c_ctx = &ctx[3], g_recv->c_buf = rb, g_recv->c_len = 8;
	g_recv->c_src = 3;
	g.inside = core_writes;
	r = send_c(msg, 4, 3, 0x2, 0, &ctx[4], LNX_OP_TAGGED);
	g.inside = NULL;
	CHECK(r == 0 && ring_len() == 1 && x->ctx == &ctx[4],
	      "send with callbacks inside: %zd, ring %llu, ctx %p", r,
	      (unsigned long long)ring_len(), x->ctx);
	CHECK(p->ncomp == 1 && p->comps[0].c_recv == 1 && p->comps[0].c_ctx == (uintptr_t)&ctx[3] &&
		      p->comps[0].len == 2 && p->comps[0].src == 3,
	      "the receive's completion left to Go: %u comps", p->ncomp);
	CHECK(g_get_ret == -FI_ENOENT && p->stash && lnx_pep_held(p),
	      "the message read inside: get %d, left to Go %d", g_get_ret, p->stash != NULL);
	CHECK(p->arm == NULL && p->sending == 0, "lent state left behind");
	int tagged;
	free(lnx_pep_stash_pop(p, &tagged));
	p->ncomp = 0;
	f->cring->head = f->cring->tail;

	/* Over the core's inject size (64): the core's send with the
	 * application's buffer, the completion when the core writes it. */
	struct fid_cq cq = { .ops = &fake_cq_ops };
	p->cq = &cq;
	p->csends_end = &p->csends;
	char big[200];
	memset(big, 'b', sizeof(big));
	int calls = g.calls, go = 0;
	uint64_t msgs = p->tx_msgs;
	r = send_c(big, 100, 3, 0x66, 0xd0, &ctx[5], LNX_OP_TAGGED | LNX_OP_DATA);
	CHECK(r == 0 && g.calls == calls + 1 && g.tagged && g.has_data && g.buf == big &&
		      g.len == 100 && g.dest == 1 && g.tag == 0x66 && g.data == 0xd0 && g_sctx,
	      "tsenddata of 100 bytes: %zd, %d core calls, buf %p len %zu dest %llu tag %#llx", r,
	      g.calls - calls, g.buf, g.len, (unsigned long long)g.dest, (unsigned long long)g.tag);
	CHECK(ring_len() == 0 && p->c_sends == 1 && p->tx_msgs == msgs + 1 && p->tx_big == 1,
	      "before its completion: ring %llu, c_sends %u, tx_msgs +%llu, tx_big %llu",
	      (unsigned long long)ring_len(), p->c_sends, (unsigned long long)(p->tx_msgs - msgs),
	      (unsigned long long)p->tx_big);
	int n = lnx_pep_take(p, &f->arm, 0, &lnx_arm_pep_ops, &go);
	CHECK(n == 1 && go == 0 && ring_len() == 1 && x->ctx == &ctx[5] &&
		      x->flags == (FI_SEND | FI_TAGGED) && p->c_sends == 0 && p->ncomp == 0,
	      "its completion in C's poll: took %d, go %d, ring %llu, ctx %p, flags %#llx, "
	      "c_sends %u, for Go %u",
	      n, go, (unsigned long long)ring_len(), x->ctx, (unsigned long long)x->flags,
	      p->c_sends, p->ncomp);
	f->cring->head = f->cring->tail;

	/* Completed inside the send call: into the ring too. */
	g.inside = write_send;
	r = send_c(big, 65, 3, 0x67, 0, &ctx[6], LNX_OP_TAGGED);
	g.inside = NULL;
	CHECK(r == 0 && ring_len() == 1 && x->ctx == &ctx[6] && p->c_sends == 0 && p->ncomp == 0 &&
		      p->arm == NULL,
	      "completed inside the send: %zd, ring %llu, c_sends %u, for Go %u", r,
	      (unsigned long long)ring_len(), p->c_sends, p->ncomp);
	f->cring->head = f->cring->tail;

	/* Selective completion without FI_COMPLETION: nothing in the ring. */
	f->tx_sel = 1;
	r = send_c(big, 150, 3, 0x68, 0, &ctx[7], LNX_OP_TAGGED);
	n = lnx_pep_take(p, &f->arm, 0, &lnx_arm_pep_ops, &go);
	f->tx_sel = 0;
	CHECK(r == 0 && n == 0 && go == 0 && ring_len() == 0 && p->c_sends == 0 && p->ncomp == 0,
	      "no completion wanted: %zd, took %d, ring %llu, c_sends %u, for Go %u", r, n,
	      (unsigned long long)ring_len(), p->c_sends, p->ncomp);

	/* Adopted by Go before the core completed it (an fi_send: untagged,
	 * its completion FI_SEND|FI_MSG): the completion goes to Go with Go's
	 * id. */
	r = send_c(big, 120, 4, 0, 0, &ctx[0], 0);
	CHECK(r == LNX_FAST_DECLINED, "to an unpublished fi_addr: %zd", r);
	r = send_c(big, 120, 3, 0, 0, &ctx[0], 0);
	CHECK(r == 0 && !g.tagged && !g.has_data && g.len == 120 && p->c_sends == 1,
	      "send of 120 bytes: %zd, tagged %d, len %zu, c_sends %u", r, g.tagged, g.len,
	      p->c_sends);
	struct lnx_pctx *c = lnx_pep_csend_pop(p, 77);
	CHECK(c && c->s_ctx == &ctx[0] && c->s_flags == (FI_SEND | FI_MSG) && c->s_cq == 1 &&
		      c->s_dst == 3 && p->c_sends == 0 && !lnx_pep_csend_pop(p, 78),
	      "adopted: ctx %p flags %#llx cq %d dst %llu, c_sends %u", c ? c->s_ctx : NULL,
	      c ? (unsigned long long)c->s_flags : 0ull, c ? c->s_cq : -1,
	      c ? (unsigned long long)c->s_dst : 0ull, p->c_sends);
	n = lnx_pep_take(p, &f->arm, 0, &lnx_arm_pep_ops, &go);
	CHECK(n == 0 && go == 1 && ring_len() == 0 && p->ncomp == 1 && p->comps[0].id == 77 &&
		      p->comps[0].c_send == 2 && p->comps[0].c_ctx == (uintptr_t)&ctx[0] &&
		      p->comps[0].flags == (FI_SEND | FI_MSG) && p->comps[0].err == 0,
	      "an adopted send's completion: took %d, go %d, ring %llu, for Go %u (id %llu, "
	      "c_send %d, ctx %#llx)",
	      n, go, (unsigned long long)ring_len(), p->ncomp, (unsigned long long)p->comps[0].id,
	      p->comps[0].c_send, (unsigned long long)p->comps[0].c_ctx);
	p->ncomp = 0;

	/* Failed (writeerr) before Go adopted it: to Go, id 0, the error. */
	r = send_c(big, 90, 3, 0x69, 0, &ctx[1], LNX_OP_TAGGED);
	g_send_err = 1;
	n = lnx_pep_take(p, &f->arm, 0, &lnx_arm_pep_ops, &go);
	g_send_err = 0;
	CHECK(r == 0 && ring_len() == 0 && p->c_sends == 0 && p->ncomp == 1 &&
		      p->comps[0].id == 0 && p->comps[0].c_send == 2 &&
		      p->comps[0].c_ctx == (uintptr_t)&ctx[1] &&
		      p->comps[0].err == FI_ECONNREFUSED && p->comps[0].prov_err == 7,
	      "a failed send: ring %llu, c_sends %u, for Go %u (id %llu, err %d)",
	      (unsigned long long)ring_len(), p->c_sends, p->ncomp,
	      (unsigned long long)p->comps[0].id, p->comps[0].err);
	p->ncomp = 0;

	/* Go's: an inject of this size (lnx's inject size above the core's),
	 * a completion due on another CQ, the core's -FI_EAGAIN. C calls the
	 * core only for the last, and keeps nothing. */
	struct lnx_cring other = { .format = FI_CQ_FORMAT_TAGGED };
	calls = g.calls;
	msgs = p->tx_msgs;
	f->inject_size = 128;
	r = send_c(big, 100, 3, 0x1, 0, NULL, LNX_OP_TAGGED | LNX_OP_INJECT);
	CHECK(r == LNX_FAST_DECLINED && g.calls == calls, "an inject of 100 bytes: %zd", r);
	f->tx_flags = FI_INJECT;
	r = send_c(big, 100, 3, 0x1, 0, &ctx[2], LNX_OP_TAGGED);
	f->tx_flags = 0;
	f->inject_size = 32;
	CHECK(r == LNX_FAST_DECLINED && g.calls == calls, "FI_INJECT in the op flags: %zd", r);
	f->arm.cring = &other;
	r = send_c(big, 100, 3, 0x1, 0, &ctx[2], LNX_OP_TAGGED);
	f->arm.cring = f->cring;
	CHECK(r == LNX_FAST_DECLINED && g.calls == calls, "another CQ: %zd", r);
	g.ret = -FI_EAGAIN;
	r = send_c(big, 100, 3, 0x1, 0, &ctx[2], LNX_OP_TAGGED);
	g.ret = 0;
	CHECK(r == LNX_FAST_DECLINED && g.calls == calls + 1 && p->c_sends == 0 && !p->csends &&
		      p->tx_msgs == msgs && ring_len() == 0,
	      "-FI_EAGAIN: %zd, c_sends %u, counted %llu", r, p->c_sends,
	      (unsigned long long)(p->tx_msgs - msgs));

	/* Buffers over a page within the core's inject size: the first send
	 * from one checks that it is mapped (one msync), later sends from it
	 * or from inside it make no system call (mapped.c's cache of this
	 * thread; its 1 ms made long, so that a preempted test still sees
	 * it); one whose last page is unmapped goes to Go, checked each
	 * time, and never reaches the core. */
	lnx_mapped_ttl_ns = 60 * 1000000000ull;
	size_t pg = (size_t)sysconf(_SC_PAGESIZE);
	char *pages =
		mmap(NULL, 4 * pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CHECK(pages != MAP_FAILED, "mmap");
	CHECK(munmap(pages + 3 * pg, pg) == 0, "munmap");
	p->inject = 4 * pg;
	f->inject_size = 4 * pg;
	calls = g.calls;
	msyncs = 0;
	for (int i = 0; i < 3; i++) {
		r = send_c(pages, 3 * pg, 3, 0x3, 0, NULL, LNX_OP_TAGGED | LNX_OP_INJECT);
		CHECK(r == 0 && g.calls == calls + 1 + i && g.buf == pages && g.len == 3 * pg,
		      "send %d of a 3-page buffer: %zd, %d core calls", i, r, g.calls - calls);
	}
	r = send_c(pages + 100, 2 * pg, 3, 0x3, 0, NULL, LNX_OP_TAGGED | LNX_OP_INJECT);
	CHECK(r == 0 && g.calls == calls + 4, "a send from inside it: %zd", r);
	CHECK(msyncs == 1, "4 sends from one mapped buffer made %d msync calls, not 1", msyncs);
	for (int i = 0; i < 2; i++) {
		r = send_c(pages + pg, 3 * pg, 3, 0x3, 0, NULL, LNX_OP_TAGGED | LNX_OP_INJECT);
		CHECK(r == LNX_FAST_DECLINED && g.calls == calls + 4,
		      "a buffer one page short, send %d: %zd, reached the core %d", i, r,
		      g.calls - calls - 4);
	}
	CHECK(msyncs == 3, "sends from a buffer one page short made %d msync calls, not 2",
	      msyncs - 1);
	munmap(pages, 3 * pg);

	free(f->cring);
	free(f);
	free(p);
	if (unit_failures)
		return 1;
	printf("pep_send_lent: ok\n");
	return 0;
}
