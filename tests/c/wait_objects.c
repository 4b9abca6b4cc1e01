/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * wait_objects: blocking on completions between two processes.
 *
 * Usage: wait_objects [shm|link|tcp|<links> [distinct]]   (see common.h)
 * Set LNX_TEST_ONLY=case[,case] to run a subset.
 *
 * In every case A (rank 0) sends NMSG tagged messages of pattern data
 * once B (rank 1) says it is ready, and B, which posted the receives
 * first, blocks until they complete and checks each completion (context,
 * length, tag, flags, source) and every payload byte. Each side uses an
 * endpoint of its own (wep below) so that its CQs and counters carry the
 * wait objects under test.
 *
 *  sread      fi_cq_sread / fi_cq_sreadfrom on an FI_WAIT_UNSPEC CQ; a 2 s
 *             sread on an empty CQ returns -FI_EAGAIN (its CPU use is
 *             printed); fi_cq_signal makes the next sread return at once
 *  epoll      FI_WAIT_FD CQ: fi_control(FI_GETWAIT) fd in epoll after
 *             fi_trywait; fi_trywait says -FI_EAGAIN while a completion
 *             waits; 2 s of an armed, idle fd (CPU printed) gives no event
 *  cntr_wait  a receive counter (FI_WAIT_UNSPEC) as the only completion
 *             mechanism: fi_cntr_wait to NMSG; a wait past it times out
 *             with -FI_ETIMEDOUT; the counter's FI_GETWAIT fd and trywait
 *  waitset    fi_wait_open: a CQ and a counter in one FI_WAIT_FD set;
 *             fi_wait, the set's fd in epoll after fi_trywait, fi_wait
 *             timing out with -FI_ETIMEDOUT
 *  pollset    fi_poll_open / fi_poll_add / fi_poll / fi_poll_del: fi_poll
 *             names the receive CQ's context once a message is in
 *  yield      FI_WAIT_YIELD (libfabric's shm offers it): a CQ and a counter
 *             say so, have no fd (FI_GETWAIT -FI_ENODATA); fi_cq_sread
 *             brings every message, fi_cntr_wait the count
 *  pollfd     FI_WAIT_POLLFD: a CQ, a counter and a wait set of that kind
 *             say so (FI_GETWAITOBJ); FI_GETWAIT with nfds 0 gives
 *             -FI_ETOOSMALL and nfds 1, then a struct fi_wait_pollfd with
 *             one POLLIN fd; the CQ's pollfd in poll(2) after fi_trywait
 *             brings every message, then the counter's shows the count
 */
#include <errno.h>
#include <poll.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <unistd.h>

#include "common.h"
#include "wep.h"

#define NMSG   8
#define MSGLEN 256
#define TAG    0x5a5a0000ull

/* CPU time (user + system, all threads) this process used so far, in us. */
static long long cpu_us(void)
{
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	return (ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000000LL + ru.ru_utime.tv_usec +
	       ru.ru_stime.tv_usec;
}

static void report_cpu(const char *what, long long cpu0, uint64_t t0)
{
	long long cpu = cpu_us() - cpu0;
	uint64_t ms = now_ms() - t0;
	note("%s: %llu ms blocked, %lld us of CPU (%.1f%% of a core)", what, (unsigned long long)ms,
	     cpu, ms ? cpu / 10.0 / (double)ms : 0.0);
}

/* ---- the sender, common to every case -------------------------------------- */

static struct fi_context2 g_rctx[NMSG];
static uint8_t *g_rbuf[NMSG];

/* A: NMSG tagged sends once B is ready; waits for them with fi_cq_sread
 * on its transmit CQ (or its send counter when it has no CQ). */
static void send_all(struct peer *p, struct wep *w)
{
	char c;
	oob_recv(p, other(p), &c, 1); /* B's receives are posted */
	uint8_t *b = xmalloc(NMSG * MSGLEN);
	struct fi_context2 ctx[NMSG];
	for (int i = 0; i < NMSG; i++) {
		fill_pattern(b + i * MSGLEN, MSGLEN, 100 + i);
		ssize_t r;
		uint64_t dl = now_ms() + WAIT_MS;
		while ((r = fi_tsend(w->ep, b + i * MSGLEN, MSGLEN, NULL, w->peer, TAG + i,
				     &ctx[i])) == -FI_EAGAIN &&
		       now_ms() < dl) {
			if (w->txcq)
				(void)fi_cq_read(w->txcq, NULL, 0);
			else
				(void)fi_cntr_read(w->txcntr);
		}
		CHECK(r);
	}
	if (w->txcq) {
		/* Send completions may come in any order: one each. */
		int seen[NMSG] = { 0 };
		for (int i = 0; i < NMSG; i++) {
			struct fi_cq_tagged_entry e;
			CHECK_RC(fi_cq_sread(w->txcq, &e, 1, NULL, WAIT_MS), 1);
			int k = (int)((struct fi_context2 *)e.op_context - ctx);
			EXPECT(k >= 0 && k < NMSG && !seen[k]++, "send completion with context %p",
			       e.op_context);
			EXPECT(e.flags == (FI_SEND | FI_TAGGED), "send completion flags %#llx",
			       (unsigned long long)e.flags);
		}
	} else {
		CHECK(fi_cntr_wait(w->txcntr, NMSG, WAIT_MS));
	}
	oob_recv(p, other(p), &c, 1); /* B checked everything */
	free(b);
}

static void post_all(struct wep *w)
{
	for (int i = 0; i < NMSG; i++) {
		g_rbuf[i] = xmalloc(MSGLEN + 16);
		memset(g_rbuf[i], 0xEE, MSGLEN + 16);
		CHECK(fi_trecv(w->ep, g_rbuf[i], MSGLEN + 16, NULL, w->peer, TAG + i, 0,
			       &g_rctx[i]));
	}
}

static void go(struct peer *p)
{
	char c = 'g';
	oob_send(p, other(p), &c, 1);
}

/* Data checks that need no completion entry (counter cases). */
static void check_data(int i)
{
	EXPECT_PATTERN(g_rbuf[i], MSGLEN, 100 + i);
	for (int k = MSGLEN; k < MSGLEN + 16; k++)
		EXPECT(g_rbuf[i][k] == 0xEE, "receive %d: byte %d past the message overwritten", i,
		       k);
}

/* Checks the i-th receive's completion and data. */
static void check_recv(struct wep *w, int i, const struct fi_cq_tagged_entry *e, fi_addr_t src)
{
	EXPECT(e->op_context == &g_rctx[i], "receive %d: context %p, want %p", i, e->op_context,
	       (void *)&g_rctx[i]);
	EXPECT(e->len == MSGLEN, "receive %d: len %zu", i, e->len);
	EXPECT(e->tag == TAG + (uint64_t)i, "receive %d: tag %#llx", i, (unsigned long long)e->tag);
	EXPECT(e->flags == (FI_RECV | FI_TAGGED), "receive %d: flags %#llx", i,
	       (unsigned long long)e->flags);
	EXPECT(e->buf == g_rbuf[i], "receive %d: buf %p, want %p", i, e->buf, (void *)g_rbuf[i]);
	if (src != FI_ADDR_NOTAVAIL)
		EXPECT(src == w->peer, "receive %d: source %llu, want %llu", i,
		       (unsigned long long)src, (unsigned long long)w->peer);
	check_data(i);
}

static void check_data_all(void)
{
	for (int i = 0; i < NMSG; i++)
		check_data(i);
}

static void finish_b(struct peer *p, struct wep *w)
{
	go(p); /* tell A we checked everything */
	for (int i = 0; i < NMSG; i++)
		free(g_rbuf[i]);
	barrier_quiet(p);
	wep_close(w);
}

static void finish_a(struct peer *p, struct wep *w)
{
	barrier_quiet(p);
	wep_close(w);
}

/* ---- sread ----------------------------------------------------------------- */

static void sender_cq(struct peer *p, void *arg)
{
	struct wep w = { .txcq = open_cq(p, FI_WAIT_UNSPEC, NULL),
			 .rxcq = open_cq(p, FI_WAIT_UNSPEC, NULL) };
	wep_open(p, &w);
	send_all(p, &w);
	finish_a(p, &w);
}

static void sread_b(struct peer *p, void *arg)
{
	struct wep w = { .txcq = open_cq(p, FI_WAIT_UNSPEC, NULL),
			 .rxcq = open_cq(p, FI_WAIT_UNSPEC, NULL) };
	wep_open(p, &w);
	post_all(&w);
	struct fi_cq_tagged_entry e;

	/* Nothing sent yet: a 2 s sread times out, without spinning. */
	long long cpu0 = cpu_us();
	uint64_t t0 = now_ms();
	CHECK_RC(fi_cq_sread(w.rxcq, &e, 1, NULL, 2000), -FI_EAGAIN);
	report_cpu("fi_cq_sread on an empty CQ", cpu0, t0);

	/* fi_cq_signal wakes the next sread, even one without a timeout. */
	CHECK(fi_cq_signal(w.rxcq));
	CHECK_RC(fi_cq_sread(w.rxcq, &e, 1, NULL, -1), -FI_EAGAIN);

	go(p);
	for (int i = 0; i < NMSG; i++) {
		fi_addr_t src = FI_ADDR_NOTAVAIL;
		if (i % 2)
			CHECK_RC(fi_cq_sreadfrom(w.rxcq, &e, 1, &src, NULL, -1), 1);
		else
			CHECK_RC(fi_cq_sread(w.rxcq, &e, 1, NULL, WAIT_MS), 1);
		check_recv(&w, i, &e, src);
	}
	CHECK_RC(fi_cq_read(w.rxcq, &e, 1), -FI_EAGAIN);
	finish_b(p, &w);
}

/* ---- epoll on the FI_GETWAIT fd --------------------------------------------- */

static int epoll_of(int fd)
{
	int ep = epoll_create1(EPOLL_CLOEXEC);
	EXPECT(ep >= 0, "epoll_create1");
	struct epoll_event ev = { .events = EPOLLIN };
	EXPECT(epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev) == 0, "epoll_ctl");
	return ep;
}

/* epoll_wait for up to ms, waiting again after a signal: a signal (the
 * Go runtime's among them) ends epoll_wait with EINTR whatever
 * SA_RESTART says, and a program waits again. */
static int epoll_wait_ms(int ep, struct epoll_event *ev, int ms)
{
	uint64_t dl = now_ms() + (uint64_t)ms;
	for (;;) {
		uint64_t now = now_ms();
		int k = epoll_wait(ep, ev, 1, now < dl ? (int)(dl - now) : 0);
		if (k >= 0 || errno != EINTR)
			return k;
	}
}

/* Blocks in epoll until fids are ready: fi_trywait first, as libfabric
 * asks. Returns how many times epoll actually slept. */
static int block_on(struct peer *p, int ep, struct fid **fids, int n)
{
	struct fid_fabric *fab = p->l.fabric;
	int slept = 0;
	uint64_t dl = now_ms() + WAIT_MS;
	for (;;) {
		int r = fi_trywait(fab, fids, n);
		if (r == -FI_EAGAIN)
			return slept;
		CHECK(r);
		struct epoll_event ev;
		int k = epoll_wait_ms(ep, &ev, WAIT_MS);
		EXPECT(k >= 0, "epoll_wait: %s", strerror(errno));
		slept++;
		EXPECT(now_ms() < dl, "nothing became ready within %d ms", WAIT_MS);
	}
}

static void epoll_b(struct peer *p, void *arg)
{
	struct wep w = { .txcq = open_cq(p, FI_WAIT_NONE, NULL),
			 .rxcq = open_cq(p, FI_WAIT_FD, NULL) };
	wep_open(p, &w);
	post_all(&w);
	int fd = -1;
	CHECK(fi_control(&w.rxcq->fid, FI_GETWAIT, &fd));
	EXPECT(fd >= 0, "FI_GETWAIT fd %d", fd);
	enum fi_wait_obj wo = FI_WAIT_NONE;
	CHECK(fi_control(&w.rxcq->fid, FI_GETWAITOBJ, &wo));
	EXPECT(wo == FI_WAIT_FD, "FI_GETWAITOBJ %d", (int)wo);
	/* A CQ without a wait object has no fd to give. */
	CHECK_FAILS(fi_control(&w.txcq->fid, FI_GETWAIT, &fd));
	int ep = epoll_of(fd);
	struct fid *fids[1] = { &w.rxcq->fid };

	/* Armed and idle for 2 s: no event, no spinning. */
	CHECK(fi_trywait(p->l.fabric, fids, 1));
	long long cpu0 = cpu_us();
	uint64_t t0 = now_ms();
	struct epoll_event ev;
	EXPECT(epoll_wait_ms(ep, &ev, 2000) == 0, "the fd became readable with nothing sent");
	report_cpu("epoll on an armed FI_WAIT_FD fd", cpu0, t0);

	go(p);
	for (int i = 0; i < NMSG;) {
		block_on(p, ep, fids, 1);
		/* Ready: trywait keeps saying so until the CQ is read. */
		CHECK_RC(fi_trywait(p->l.fabric, fids, 1), -FI_EAGAIN);
		struct fi_cq_tagged_entry e[NMSG];
		fi_addr_t src[NMSG];
		ssize_t n = fi_cq_readfrom(w.rxcq, e, NMSG, src);
		EXPECT(n > 0, "fi_cq_readfrom after the fd said ready: %zd", n);
		for (ssize_t k = 0; k < n; k++, i++)
			check_recv(&w, i, &e[k], src[k]);
	}
	close(ep);
	finish_b(p, &w);
}

/* ---- counters ---------------------------------------------------------------- */

static void sender_cntr(struct peer *p, void *arg)
{
	struct wep w = { .txcntr = open_cntr(p, FI_WAIT_UNSPEC, NULL),
			 .rxcntr = open_cntr(p, FI_WAIT_NONE, NULL) };
	wep_open(p, &w);
	send_all(p, &w);
	EXPECT(fi_cntr_read(w.txcntr) == NMSG, "send counter %llu",
	       (unsigned long long)fi_cntr_read(w.txcntr));
	EXPECT(fi_cntr_readerr(w.txcntr) == 0, "send error counter %llu",
	       (unsigned long long)fi_cntr_readerr(w.txcntr));
	finish_a(p, &w);
}

static void cntr_wait_b(struct peer *p, void *arg)
{
	struct wep w = { .txcntr = open_cntr(p, FI_WAIT_NONE, NULL),
			 .rxcntr = open_cntr(p, FI_WAIT_UNSPEC, NULL) };
	wep_open(p, &w);
	post_all(&w);
	int fd = -1;
	CHECK(fi_control(&w.rxcntr->fid, FI_GETWAIT, &fd));
	int ep = epoll_of(fd);
	struct fid *fids[1] = { &w.rxcntr->fid };
	CHECK(fi_trywait(p->l.fabric, fids, 1));
	CHECK_RC(fi_cntr_wait(w.rxcntr, 1, 100), -FI_ETIMEDOUT);
	go(p);
	/* The fd says the counter moved; then wait for all of them. */
	block_on(p, ep, fids, 1);
	CHECK(fi_cntr_wait(w.rxcntr, NMSG, WAIT_MS));
	EXPECT(fi_cntr_read(w.rxcntr) == NMSG, "receive counter %llu",
	       (unsigned long long)fi_cntr_read(w.rxcntr));
	EXPECT(fi_cntr_readerr(w.rxcntr) == 0, "receive error counter %llu",
	       (unsigned long long)fi_cntr_readerr(w.rxcntr));
	check_data_all();
	/* Read: nothing new, so trywait arms again; past NMSG nothing comes. */
	CHECK(fi_trywait(p->l.fabric, fids, 1));
	CHECK_RC(fi_cntr_wait(w.rxcntr, NMSG + 1, 200), -FI_ETIMEDOUT);
	close(ep);
	finish_b(p, &w);
}

/* ---- wait sets ----------------------------------------------------------------- */

static void waitset_b(struct peer *p, void *arg)
{
	struct fi_wait_attr wa = { .wait_obj = FI_WAIT_FD };
	struct fid_wait *ws;
	CHECK(fi_wait_open(p->l.fabric, &wa, &ws));
	struct wep w = { .txcq = open_cq(p, FI_WAIT_NONE, NULL),
			 .rxcq = open_cq(p, FI_WAIT_SET, ws),
			 .rxcntr = open_cntr(p, FI_WAIT_SET, ws) };
	wep_open(p, &w);
	post_all(&w);
	enum fi_wait_obj wo = FI_WAIT_NONE;
	CHECK(fi_control(&w.rxcq->fid, FI_GETWAITOBJ, &wo));
	EXPECT(wo == FI_WAIT_SET, "FI_GETWAITOBJ of a CQ in a set: %d", (int)wo);
	CHECK_RC(fi_wait(ws, 100), -FI_ETIMEDOUT);
	/* A wait set with members cannot close. */
	CHECK_FAILS(fi_close(&ws->fid));

	go(p);
	int i = 0;
	/* The first half through fi_wait, the rest through the set's fd. */
	while (i < NMSG / 2) {
		CHECK(fi_wait(ws, WAIT_MS));
		struct fi_cq_tagged_entry e[NMSG];
		fi_addr_t src[NMSG];
		ssize_t n;
		while ((n = fi_cq_readfrom(w.rxcq, e, NMSG, src)) > 0)
			for (ssize_t k = 0; k < n; k++, i++)
				check_recv(&w, i, &e[k], src[k]);
		EXPECT(n == -FI_EAGAIN, "fi_cq_readfrom: %zd", n);
		(void)fi_cntr_read(w.rxcntr); /* seen: the set waits for news */
	}
	int fd = -1;
	CHECK(fi_control(&ws->fid, FI_GETWAIT, &fd));
	int ep = epoll_of(fd);
	struct fid *fids[1] = { &ws->fid };
	while (i < NMSG) {
		block_on(p, ep, fids, 1);
		struct fi_cq_tagged_entry e[NMSG];
		fi_addr_t src[NMSG];
		ssize_t n;
		while ((n = fi_cq_readfrom(w.rxcq, e, NMSG, src)) > 0)
			for (ssize_t k = 0; k < n; k++, i++)
				check_recv(&w, i, &e[k], src[k]);
		EXPECT(n == -FI_EAGAIN, "fi_cq_readfrom: %zd", n);
		(void)fi_cntr_read(w.rxcntr);
	}
	EXPECT(fi_cntr_read(w.rxcntr) == NMSG, "receive counter %llu",
	       (unsigned long long)fi_cntr_read(w.rxcntr));
	close(ep);
	finish_b(p, &w);
	CHECK(fi_close(&ws->fid));
}

/* ---- FI_WAIT_POLLFD ------------------------------------------------------------ */

/* The one pollfd of fid (a CQ, counter or wait set) of kind FI_WAIT_POLLFD. */
static struct pollfd pollfd_of(struct fid *fid)
{
	enum fi_wait_obj wo = FI_WAIT_NONE;
	CHECK(fi_control(fid, FI_GETWAITOBJ, &wo));
	EXPECT(wo == FI_WAIT_POLLFD, "FI_GETWAITOBJ %d", (int)wo);
	struct pollfd pfd[2];
	struct fi_wait_pollfd wp = { .nfds = 0 };
	CHECK_RC(fi_control(fid, FI_GETWAIT, &wp), -FI_ETOOSMALL);
	EXPECT(wp.nfds == 1, "nfds needed: %zu", wp.nfds);
	memset(pfd, 0, sizeof(pfd));
	wp.nfds = 2;
	wp.fd = pfd;
	CHECK(fi_control(fid, FI_GETWAIT, &wp));
	EXPECT(wp.nfds == 1 && pfd[0].fd >= 0 && (pfd[0].events & POLLIN),
	       "pollfd: nfds %zu fd %d events %#x", wp.nfds, pfd[0].fd, pfd[0].events);
	return pfd[0];
}

/* poll(2) on pfd until fid is ready, fi_trywait first. */
static void poll_until(struct peer *p, struct pollfd pfd, struct fid *fid)
{
	uint64_t dl = now_ms() + WAIT_MS;
	for (;;) {
		int r = fi_trywait(p->l.fabric, &fid, 1);
		if (r == -FI_EAGAIN)
			return;
		CHECK(r);
		EXPECT(poll(&pfd, 1, WAIT_MS) >= 0 || errno == EINTR, "poll: %s", strerror(errno));
		EXPECT(now_ms() < dl, "nothing became ready within %d ms", WAIT_MS);
	}
}

static void pollfd_b(struct peer *p, void *arg)
{
	struct fi_wait_attr wa = { .wait_obj = FI_WAIT_POLLFD };
	struct fid_wait *ws;
	CHECK(fi_wait_open(p->l.fabric, &wa, &ws));
	(void)pollfd_of(&ws->fid);
	CHECK(fi_close(&ws->fid));

	struct wep w = { .txcq = open_cq(p, FI_WAIT_NONE, NULL),
			 .rxcq = open_cq(p, FI_WAIT_POLLFD, NULL),
			 .rxcntr = open_cntr(p, FI_WAIT_POLLFD, NULL) };
	wep_open(p, &w);
	post_all(&w);
	struct pollfd cq_pfd = pollfd_of(&w.rxcq->fid), cntr_pfd = pollfd_of(&w.rxcntr->fid);
	go(p);
	for (int i = 0; i < NMSG;) {
		poll_until(p, cq_pfd, &w.rxcq->fid);
		struct fi_cq_tagged_entry e[NMSG];
		fi_addr_t src[NMSG];
		ssize_t n = fi_cq_readfrom(w.rxcq, e, NMSG, src);
		EXPECT(n > 0, "fi_cq_readfrom after the pollfd said ready: %zd", n);
		for (ssize_t k = 0; k < n; k++, i++)
			check_recv(&w, i, &e[k], src[k]);
	}
	/* The counter moved since it was last read (never): ready. */
	poll_until(p, cntr_pfd, &w.rxcntr->fid);
	EXPECT(fi_cntr_read(w.rxcntr) == NMSG, "receive counter %llu",
	       (unsigned long long)fi_cntr_read(w.rxcntr));
	finish_b(p, &w);
}

/* ---- FI_WAIT_YIELD -------------------------------------------------------------- */

static void yield_b(struct peer *p, void *arg)
{
	struct wep w = { .txcq = open_cq(p, FI_WAIT_NONE, NULL),
			 .rxcq = open_cq(p, FI_WAIT_YIELD, NULL),
			 .rxcntr = open_cntr(p, FI_WAIT_YIELD, NULL) };
	wep_open(p, &w);
	post_all(&w);
	struct fid *fids[2] = { &w.rxcq->fid, &w.rxcntr->fid };
	for (int k = 0; k < 2; k++) {
		enum fi_wait_obj wo = FI_WAIT_NONE;
		int fd = -1;
		CHECK(fi_control(fids[k], FI_GETWAITOBJ, &wo));
		EXPECT(wo == FI_WAIT_YIELD, "FI_GETWAITOBJ %d", (int)wo);
		CHECK_RC(fi_control(fids[k], FI_GETWAIT, &fd), -FI_ENODATA);
	}
	go(p);
	for (int i = 0; i < NMSG;) {
		struct fi_cq_tagged_entry e[NMSG];
		fi_addr_t src[NMSG];
		ssize_t n = fi_cq_sreadfrom(w.rxcq, e, NMSG, src, NULL, WAIT_MS);
		EXPECT(n > 0, "fi_cq_sreadfrom: %zd", n);
		for (ssize_t k = 0; k < n; k++, i++)
			check_recv(&w, i, &e[k], src[k]);
	}
	CHECK(fi_cntr_wait(w.rxcntr, NMSG, WAIT_MS));
	EXPECT(fi_cntr_read(w.rxcntr) == NMSG, "receive counter %llu",
	       (unsigned long long)fi_cntr_read(w.rxcntr));
	finish_b(p, &w);
}

/* ---- poll sets ----------------------------------------------------------------- */

static void pollset_b(struct peer *p, void *arg)
{
	struct fi_poll_attr pa = { 0 };
	struct fid_poll *ps;
	CHECK(fi_poll_open(p->l.domain, &pa, &ps));
	struct wep w = { 0 };
	static int txtag, rxtag;
	struct fi_cq_attr a = { .format = FI_CQ_FORMAT_TAGGED, .wait_obj = FI_WAIT_NONE };
	CHECK(fi_cq_open(p->l.domain, &a, &w.txcq, &txtag));
	CHECK(fi_cq_open(p->l.domain, &a, &w.rxcq, &rxtag));
	wep_open(p, &w);
	post_all(&w);
	CHECK(fi_poll_add(ps, &w.txcq->fid, 0));
	CHECK(fi_poll_add(ps, &w.rxcq->fid, 0));
	void *ctxs[4];
	CHECK_RC(fi_poll(ps, ctxs, 4), 0);
	/* A CQ in a poll set cannot close. */
	CHECK_FAILS(fi_close(&w.txcq->fid));
	go(p);
	int i = 0;
	uint64_t dl = now_ms() + WAIT_MS;
	while (i < NMSG) {
		int n = fi_poll(ps, ctxs, 4);
		CHECK(n);
		EXPECT(now_ms() < dl, "fi_poll found nothing within %d ms", WAIT_MS);
		if (!n)
			continue;
		EXPECT(n == 1 && ctxs[0] == &rxtag,
		       "fi_poll: %d contexts, first %p (rx CQ %p, tx CQ %p)", n, ctxs[0],
		       (void *)&rxtag, (void *)&txtag);
		struct fi_cq_tagged_entry e[NMSG];
		fi_addr_t src[NMSG];
		ssize_t k = fi_cq_readfrom(w.rxcq, e, NMSG, src);
		EXPECT(k > 0, "fi_cq_readfrom after fi_poll: %zd", k);
		for (ssize_t j = 0; j < k; j++, i++)
			check_recv(&w, i, &e[j], src[j]);
	}
	CHECK(fi_poll_del(ps, &w.txcq->fid, 0));
	CHECK_FAILS(fi_poll_del(ps, &w.txcq->fid, 0));
	CHECK(fi_poll_del(ps, &w.rxcq->fid, 0));
	finish_b(p, &w);
	CHECK(fi_close(&ps->fid));
}

static const struct subtest cases[] = {
	CASE("sread", sender_cq, sread_b),	     CASE("epoll", sender_cq, epoll_b),
	CASE("cntr_wait", sender_cntr, cntr_wait_b), CASE("waitset", sender_cq, waitset_b),
	CASE("pollset", sender_cq, pollset_b),	     CASE("pollfd", sender_cq, pollfd_b),
	CASE("yield", sender_cq, yield_b),
};

int main(int argc, char **argv)
{
	return run_subtests(argc, argv, cases, sizeof(cases) / sizeof(cases[0]));
}
