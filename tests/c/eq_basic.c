/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * eq_basic: event queues on an lnx fabric, and AVs that complete inserts
 * through one. argv[1]: shm or link (the links the endpoint is opened
 * with; the EQ does not depend on them, the AV inserts do).
 *
 *  - fi_eq_open with FI_WAIT_NONE, FI_WAIT_UNSPEC (-> FI_WAIT_FD) and
 *    FI_WAIT_FD; FI_WAIT_MUTEX_COND -> -FI_ENOSYS (no core offers it)
 *  - FI_WAIT_POLLFD: FI_GETWAIT fills a struct fi_wait_pollfd (nfds 0 ->
 *    -FI_ETOOSMALL and the count needed; then one fd that poll(2) finds
 *    readable once an event is queued)
 *  - FI_WAIT_SET: an EQ in a set from fi_wait_open (wait_set NULL ->
 *    -FI_EINVAL); GETWAITOBJ says FI_WAIT_SET; the set cannot close while
 *    the EQ is in it; fi_wait times out on an empty EQ, returns 0 once
 *    another thread wrote an event, which fi_eq_read then returns;
 *    fi_trywait on the set or the EQ -> -FI_EAGAIN while it is queued;
 *    after fi_trywait found nothing, the set's fd becomes readable when
 *    an event is written; fi_eq_sread works too
 *  - fi_trywait on an FI_WAIT_FD EQ: -FI_EAGAIN with an event queued,
 *    0 without
 *  - fi_eq_read on an empty EQ -> -FI_EAGAIN; fi_eq_write then fi_eq_read
 *    returns the event kind and the bytes written (fid, context, data);
 *    FI_PEEK leaves the event queued; a short buffer -> -FI_ETOOSMALL
 *  - fi_eq_readerr with nothing queued -> -FI_EAGAIN
 *  - fi_eq_sread: -FI_ENOSYS without a wait object; with one, a timeout
 *    on an empty EQ -> -FI_EAGAIN, using little CPU (it sleeps, it does
 *    not spin); woken by a write from another thread
 *  - fi_control(FI_GETWAIT) gives an fd that epoll reports readable while
 *    an event is queued and not readable once it is read
 *  - fi_av_bind of an EQ to an AV opened with FI_EVENT: an insert before
 *    the bind -> -FI_ENOEQ; after it, fi_av_insert returns 0 and the EQ
 *    gets an error entry for the bad address (data = its index, err
 *    FI_EINVAL, the insert's context) and then FI_AV_COMPLETE (fid = the
 *    AV, context, data = number inserted); the good address works
 *  - fi_ep_bind of an EQ to an RDM endpoint is accepted
 *  - fi_domain_bind of an EQ: flags 0 accepted (no events); FI_REG_MR on a
 *    second domain: fi_mr_reg returns the MR and the EQ gets
 *    FI_MR_COMPLETE (fid = the MR, the registration's context); other
 *    flags -FI_EBADFLAGS, a second EQ -FI_EALREADY; the EQ cannot close
 *    before the domain
 *  - FI_WAIT_YIELD: no fd (FI_GETWAIT -> -FI_ENODATA), GETWAITOBJ says
 *    FI_WAIT_YIELD, fi_eq_sread times out (-FI_EAGAIN) and reads an event
 *  - closing an EQ still bound to an AV -> -FI_EBUSY
 */
#include <poll.h>
#include <pthread.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "common.h"

static int ready_fd(int fd)
{
	int ep = epoll_create1(0);
	ASSERT(ep >= 0);
	struct epoll_event ev = { .events = EPOLLIN }, out;
	EXPECT(epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev) == 0, "epoll_ctl");
	int n = epoll_wait(ep, &out, 1, 0);
	close(ep);
	EXPECT(n >= 0, "epoll_wait");
	return n;
}

static void test_wait_none(struct fid_fabric *fab)
{
	struct fi_eq_attr attr = { .size = 8, .wait_obj = FI_WAIT_NONE, .flags = FI_WRITE };
	struct fid_eq *eq;
	struct fi_eq_entry in = { .fid = &fab->fid, .context = (void *)0x1234, .data = 42 }, out;
	uint32_t event = 0;
	int fd;

	CHECK(fi_eq_open(fab, &attr, &eq, (void *)0x99));
	EXPECT(eq->fid.fclass == FI_CLASS_EQ && eq->fid.context == (void *)0x99, "EQ fid");
	CHECK_RC(fi_eq_read(eq, &event, &out, sizeof(out), 0), -FI_EAGAIN);
	struct fi_eq_err_entry err = { 0 };
	CHECK_RC(fi_eq_readerr(eq, &err, 0), -FI_EAGAIN);
	CHECK_RC(fi_eq_sread(eq, &event, &out, sizeof(out), 10, 0), -FI_ENOSYS);
	CHECK_FAILS(fi_control(&eq->fid, FI_GETWAIT, &fd));
	enum fi_wait_obj wo = -1;
	CHECK(fi_control(&eq->fid, FI_GETWAITOBJ, &wo));
	EXPECT(wo == FI_WAIT_NONE, "wait obj %d", wo);

	CHECK_RC(fi_eq_write(eq, FI_NOTIFY, &in, sizeof(in), 0), sizeof(in));
	in.data = 43;
	CHECK_RC(fi_eq_write(eq, FI_MR_COMPLETE, &in, sizeof(in), 0), sizeof(in));

	/* A short buffer, then a peek: the event stays. */
	CHECK_RC(fi_eq_read(eq, &event, &out, sizeof(out) - 1, 0), -FI_ETOOSMALL);
	memset(&out, 0, sizeof(out));
	CHECK_RC(fi_eq_read(eq, &event, &out, sizeof(out), FI_PEEK), sizeof(out));
	EXPECT(event == FI_NOTIFY && out.data == 42, "peek: event %u data %llu", event,
	       (unsigned long long)out.data);
	memset(&out, 0, sizeof(out));
	event = 0;
	CHECK_RC(fi_eq_read(eq, &event, &out, sizeof(out), 0), sizeof(out));
	EXPECT(event == FI_NOTIFY, "event %u", event);
	EXPECT(out.fid == &fab->fid && out.context == (void *)0x1234 && out.data == 42,
	       "entry fid %p context %p data %llu", (void *)out.fid, out.context,
	       (unsigned long long)out.data);
	CHECK_RC(fi_eq_read(eq, &event, &out, sizeof(out), 0), sizeof(out));
	EXPECT(event == FI_MR_COMPLETE && out.data == 43, "second: event %u data %llu", event,
	       (unsigned long long)out.data);
	CHECK_RC(fi_eq_read(eq, &event, &out, sizeof(out), 0), -FI_EAGAIN);

	/* The EQ's size bounds what an application writes. */
	for (int i = 0; i < 8; i++)
		CHECK_RC(fi_eq_write(eq, FI_NOTIFY, &in, sizeof(in), 0), sizeof(in));
	CHECK_RC(fi_eq_write(eq, FI_NOTIFY, &in, sizeof(in), 0), -FI_EAGAIN);

	const char *s = fi_eq_strerror(eq, FI_EINVAL, NULL, NULL, 0);
	EXPECT(s && *s, "fi_eq_strerror");
	char buf[64];
	s = fi_eq_strerror(eq, FI_EINVAL, NULL, buf, sizeof(buf));
	EXPECT(s == buf && *buf, "fi_eq_strerror into a buffer");
	CHECK(fi_close(&eq->fid));
	note("FI_WAIT_NONE: ok");
}

struct writer {
	struct fid_eq *eq;
	struct fi_eq_entry e;
};

static void *write_later(void *arg)
{
	struct writer *w = arg;
	CHECK_RC(fi_eq_write(w->eq, FI_NOTIFY, &w->e, sizeof(w->e), 0), sizeof(w->e));
	return NULL;
}

static uint64_t thread_cpu_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
}

static void test_wait_fd(struct fid_fabric *fab, enum fi_wait_obj asked)
{
	struct fi_eq_attr attr = { .wait_obj = asked };
	struct fid_eq *eq;
	struct fi_eq_entry in = { .fid = &fab->fid, .context = &attr, .data = 7 }, out;
	uint32_t event = 0;
	int fd = -1;

	CHECK(fi_eq_open(fab, &attr, &eq, NULL));
	enum fi_wait_obj wo = -1;
	CHECK(fi_control(&eq->fid, FI_GETWAITOBJ, &wo));
	EXPECT(wo == FI_WAIT_FD, "asked %d, wait obj %d", asked, wo);
	CHECK(fi_control(&eq->fid, FI_GETWAIT, &fd));
	EXPECT(fd >= 0, "FI_GETWAIT fd %d", fd);
	EXPECT(ready_fd(fd) == 0, "fd readable on an empty EQ");

	/* A 300 ms timeout on an empty EQ: -FI_EAGAIN, and the thread
	 * slept rather than spun (CPU time, not elapsed time). */
	uint64_t cpu = thread_cpu_us(), t0 = now_ms();
	CHECK_RC(fi_eq_sread(eq, &event, &out, sizeof(out), 300, 0), -FI_EAGAIN);
	cpu = thread_cpu_us() - cpu;
	EXPECT(now_ms() - t0 >= 290, "sread returned before its timeout");
	EXPECT(cpu < 100000, "sread used %llu us of CPU in a 300 ms wait", (unsigned long long)cpu);
	CHECK_RC(fi_eq_sread(eq, &event, &out, sizeof(out), 0, 0), -FI_EAGAIN);

	CHECK_RC(fi_eq_write(eq, FI_NOTIFY, &in, sizeof(in), 0), sizeof(in));
	EXPECT(ready_fd(fd) == 1, "fd not readable with an event queued");
	CHECK_RC(fi_eq_sread(eq, &event, &out, sizeof(out), -1, 0), sizeof(out));
	EXPECT(event == FI_NOTIFY && out.context == &attr && out.data == 7,
	       "sread: event %u data %llu", event, (unsigned long long)out.data);
	EXPECT(ready_fd(fd) == 0, "fd still readable after the only event was read");
	struct fid *fids[1] = { &eq->fid };
	CHECK(fi_trywait(fab, fids, 1));
	CHECK_RC(fi_eq_write(eq, FI_NOTIFY, &in, sizeof(in), 0), sizeof(in));
	CHECK_RC(fi_trywait(fab, fids, 1), -FI_EAGAIN);
	CHECK_RC(fi_eq_read(eq, &event, &out, sizeof(out), 0), sizeof(out));

	/* A blocked sread wakes for a write from another thread. */
	struct writer w = { .eq = eq, .e = { .fid = &eq->fid, .context = &w, .data = 99 } };
	pthread_t t;
	EXPECT(pthread_create(&t, NULL, write_later, &w) == 0, "pthread_create");
	memset(&out, 0, sizeof(out));
	CHECK_RC(fi_eq_sread(eq, &event, &out, sizeof(out), -1, 0), sizeof(out));
	pthread_join(t, NULL);
	EXPECT(event == FI_NOTIFY && out.fid == &eq->fid && out.context == &w && out.data == 99,
	       "woken sread: event %u data %llu", event, (unsigned long long)out.data);
	CHECK(fi_close(&eq->fid));
	note("wait object %d: ok", asked);
}

static void test_pollfd(struct fid_fabric *fab)
{
	struct fi_eq_attr attr = { .wait_obj = FI_WAIT_POLLFD };
	struct fid_eq *eq;
	struct fi_eq_entry in = { .fid = &fab->fid, .context = fab, .data = 5 }, out;
	uint32_t event = 0;
	struct pollfd pfd[2];

	CHECK(fi_eq_open(fab, &attr, &eq, NULL));
	enum fi_wait_obj wo = -1;
	CHECK(fi_control(&eq->fid, FI_GETWAITOBJ, &wo));
	EXPECT(wo == FI_WAIT_POLLFD, "wait obj %d", wo);
	struct fi_wait_pollfd wp = { .nfds = 0, .fd = NULL };
	CHECK_RC(fi_control(&eq->fid, FI_GETWAIT, &wp), -FI_ETOOSMALL);
	EXPECT(wp.nfds == 1, "nfds needed %zu", wp.nfds);
	wp.nfds = 2;
	wp.fd = pfd;
	memset(pfd, 0, sizeof(pfd));
	CHECK(fi_control(&eq->fid, FI_GETWAIT, &wp));
	EXPECT(wp.nfds == 1 && pfd[0].fd >= 0 && (pfd[0].events & POLLIN),
	       "pollfd: nfds %zu fd %d events %#x", wp.nfds, pfd[0].fd, pfd[0].events);
	EXPECT(poll(pfd, 1, 0) == 0, "pollfd readable on an empty EQ");
	CHECK_RC(fi_eq_write(eq, FI_NOTIFY, &in, sizeof(in), 0), sizeof(in));
	EXPECT(poll(pfd, 1, -1) == 1 && (pfd[0].revents & POLLIN),
	       "pollfd not readable with an event queued");
	CHECK_RC(fi_eq_read(eq, &event, &out, sizeof(out), 0), sizeof(out));
	EXPECT(event == FI_NOTIFY && out.context == fab && out.data == 5, "event %u data %llu",
	       event, (unsigned long long)out.data);
	EXPECT(poll(pfd, 1, 0) == 0, "pollfd still readable after the only event was read");
	CHECK(fi_close(&eq->fid));
	note("FI_WAIT_POLLFD: ok");
}

static void test_wait_set(struct fid_fabric *fab)
{
	struct fi_wait_attr wattr = { .wait_obj = FI_WAIT_UNSPEC };
	struct fid_wait *ws;
	struct fid_eq *eq;
	struct fi_eq_entry out;
	uint32_t event = 0;
	int fd = -1;

	struct fi_eq_attr bad = { .wait_obj = FI_WAIT_SET, .wait_set = NULL };
	CHECK_RC(fi_eq_open(fab, &bad, &eq, NULL), -FI_EINVAL);

	CHECK(fi_wait_open(fab, &wattr, &ws));
	struct fi_eq_attr attr = { .wait_obj = FI_WAIT_SET, .wait_set = ws };
	CHECK(fi_eq_open(fab, &attr, &eq, NULL));
	enum fi_wait_obj wo = -1;
	CHECK(fi_control(&eq->fid, FI_GETWAITOBJ, &wo));
	EXPECT(wo == FI_WAIT_SET, "EQ wait obj %d", wo);
	CHECK_RC(fi_close(&ws->fid), -FI_EBUSY);

	/* Empty: fi_wait times out. */
	CHECK_RC(fi_wait(ws, 50), -FI_ETIMEDOUT);

	/* A write from another thread wakes fi_wait; the event is there. */
	struct writer w = { .eq = eq, .e = { .fid = &eq->fid, .context = &w, .data = 21 } };
	pthread_t t;
	EXPECT(pthread_create(&t, NULL, write_later, &w) == 0, "pthread_create");
	CHECK(fi_wait(ws, -1));
	pthread_join(t, NULL);
	struct fid *set_fid[1] = { &ws->fid }, *eq_fid[1] = { &eq->fid };
	CHECK_RC(fi_trywait(fab, set_fid, 1), -FI_EAGAIN);
	CHECK_RC(fi_trywait(fab, eq_fid, 1), -FI_EAGAIN);
	memset(&out, 0, sizeof(out));
	CHECK_RC(fi_eq_read(eq, &event, &out, sizeof(out), 0), sizeof(out));
	EXPECT(event == FI_NOTIFY && out.fid == &eq->fid && out.context == &w && out.data == 21,
	       "event %u data %llu", event, (unsigned long long)out.data);
	CHECK_RC(fi_eq_read(eq, &event, &out, sizeof(out), 0), -FI_EAGAIN);

	/* The set's fd: armed by fi_trywait, readable once an event comes. */
	CHECK(fi_control(&ws->fid, FI_GETWAIT, &fd));
	EXPECT(fd >= 0, "set fd %d", fd);
	CHECK(fi_trywait(fab, set_fid, 1));
	EXPECT(pthread_create(&t, NULL, write_later, &w) == 0, "pthread_create");
	struct pollfd p = { .fd = fd, .events = POLLIN };
	EXPECT(poll(&p, 1, -1) == 1 && (p.revents & POLLIN),
	       "set fd not readable after an EQ event");
	pthread_join(t, NULL);
	CHECK_RC(fi_eq_sread(eq, &event, &out, sizeof(out), -1, 0), sizeof(out));
	EXPECT(event == FI_NOTIFY && out.data == 21, "sread: event %u data %llu", event,
	       (unsigned long long)out.data);

	CHECK(fi_close(&eq->fid));
	CHECK(fi_close(&ws->fid));
	note("FI_WAIT_SET: ok");
}

static void test_yield(struct fid_fabric *fab)
{
	struct fi_eq_attr attr = { .wait_obj = FI_WAIT_YIELD };
	struct fid_eq *eq;
	struct fi_eq_entry in = { .fid = &fab->fid, .context = fab, .data = 3 }, out;
	uint32_t event = 0;
	int fd;

	CHECK(fi_eq_open(fab, &attr, &eq, NULL));
	enum fi_wait_obj wo = -1;
	CHECK(fi_control(&eq->fid, FI_GETWAITOBJ, &wo));
	EXPECT(wo == FI_WAIT_YIELD, "wait obj %d", wo);
	CHECK_RC(fi_control(&eq->fid, FI_GETWAIT, &fd), -FI_ENODATA);
	CHECK_RC(fi_eq_sread(eq, &event, &out, sizeof(out), 20, 0), -FI_EAGAIN);
	CHECK_RC(fi_eq_write(eq, FI_NOTIFY, &in, sizeof(in), 0), sizeof(in));
	CHECK_RC(fi_eq_sread(eq, &event, &out, sizeof(out), -1, 0), sizeof(out));
	EXPECT(event == FI_NOTIFY && out.context == fab && out.data == 3, "event %u data %llu",
	       event, (unsigned long long)out.data);
	CHECK(fi_close(&eq->fid));
	note("FI_WAIT_YIELD: ok");
}

static void test_domain_bind(struct lnx *l)
{
	struct fi_eq_attr eattr = { .wait_obj = FI_WAIT_UNSPEC };
	struct fid_eq *eq, *eq2;
	struct fid_domain *dom;
	uint32_t event = 0;
	struct fi_eq_entry e;

	CHECK(fi_eq_open(l->fabric, &eattr, &eq, NULL));
	CHECK(fi_eq_open(l->fabric, &eattr, &eq2, NULL));
	/* Flags 0: accepted; nothing is reported. */
	CHECK(fi_domain(l->fabric, l->info, &dom, NULL));
	CHECK(fi_domain_bind(dom, &eq->fid, 0));
	CHECK_RC(fi_domain_bind(dom, &eq2->fid, 0), -FI_EALREADY);
	uint8_t buf[64];
	struct fid_mr *mr;
	CHECK(fi_mr_reg(dom, buf, sizeof(buf), FI_SEND, 0, 0, 0, &mr, NULL));
	CHECK(fi_close(&mr->fid));
	CHECK_RC(fi_eq_read(eq, &event, &e, sizeof(e), 0), -FI_EAGAIN);
	CHECK_RC(fi_close(&eq->fid), -FI_EBUSY);
	CHECK(fi_close(&dom->fid));
	CHECK(fi_close(&eq->fid));

	/* FI_REG_MR on a domain of its own. */
	CHECK(fi_domain(l->fabric, l->info, &dom, NULL));
	CHECK_RC(fi_domain_bind(dom, &eq2->fid, FI_SEND), -FI_EBADFLAGS);
	CHECK(fi_domain_bind(dom, &eq2->fid, FI_REG_MR));
	CHECK_RC(fi_close(&eq2->fid), -FI_EBUSY);
	int ctx;
	mr = NULL;
	CHECK(fi_mr_reg(dom, buf, sizeof(buf), FI_SEND | FI_RECV, 0, 0, 0, &mr, &ctx));
	EXPECT(mr != NULL, "no MR");
	memset(&e, 0, sizeof(e));
	CHECK_RC(fi_eq_sread(eq2, &event, &e, sizeof(e), -1, 0), sizeof(e));
	EXPECT(event == FI_MR_COMPLETE && e.fid == &mr->fid && e.context == &ctx,
	       "event %u fid %p (MR %p) context %p", event, (void *)e.fid, (void *)&mr->fid,
	       e.context);
	CHECK(fi_close(&mr->fid));
	CHECK(fi_close(&dom->fid));
	CHECK(fi_close(&eq2->fid));
	note("domain bind: ok");
}

static void test_av_events(struct lnx *l)
{
	struct fi_eq_attr eattr = { .wait_obj = FI_WAIT_UNSPEC };
	struct fi_av_attr aattr = { .type = FI_AV_TABLE, .count = 8, .flags = FI_EVENT };
	struct fid_eq *eq;
	struct fid_av *av;
	uint8_t two[2 * LNX_ADDRLEN];
	fi_addr_t fa[2] = { 777, 777 };
	int ctx;

	CHECK(fi_eq_open(l->fabric, &eattr, &eq, NULL));
	CHECK(fi_av_open(l->domain, &aattr, &av, NULL));
	CHECK_RC(fi_av_insert(av, l->name, 1, fa, 0, &ctx), -FI_ENOEQ);
	CHECK(fi_av_bind(av, &eq->fid, 0));
	CHECK_RC(fi_close(&eq->fid), -FI_EBUSY);

	memcpy(two, l->name, LNX_ADDRLEN);
	memset(two + LNX_ADDRLEN, 0xA5, LNX_ADDRLEN);
	CHECK_RC(fi_av_insert(av, two, 2, fa, 0, &ctx), 0);

	uint32_t event = 0;
	struct fi_eq_entry e;
	struct fi_eq_err_entry err;
	memset(&err, 0, sizeof(err));
	CHECK_RC(fi_eq_read(eq, &event, &e, sizeof(e), 0), -FI_EAVAIL);
	CHECK_RC(fi_eq_readerr(eq, &err, 0), sizeof(err));
	EXPECT(err.fid == &av->fid && err.context == &ctx && err.data == 1 && err.err == FI_EINVAL,
	       "error entry: fid %p context %p data %llu err %d", (void *)err.fid, err.context,
	       (unsigned long long)err.data, err.err);
	memset(&e, 0, sizeof(e));
	CHECK_RC(fi_eq_sread(eq, &event, &e, sizeof(e), -1, 0), sizeof(e));
	EXPECT(event == FI_AV_COMPLETE, "event %u", event);
	EXPECT(e.fid == &av->fid && e.context == &ctx && e.data == 1,
	       "FI_AV_COMPLETE: fid %p context %p data %llu", (void *)e.fid, e.context,
	       (unsigned long long)e.data);
	EXPECT(fa[0] != FI_ADDR_NOTAVAIL && fa[1] == FI_ADDR_NOTAVAIL, "fi_addrs %llu %llu",
	       (unsigned long long)fa[0], (unsigned long long)fa[1]);
	uint8_t back[ADDR_MAX];
	size_t len = sizeof(back);
	CHECK(fi_av_lookup(av, fa[0], back, &len));
	EXPECT(len == LNX_ADDRLEN && !memcmp(back, l->name, LNX_ADDRLEN),
	       "lookup of the inserted address");
	CHECK_RC(fi_eq_read(eq, &event, &e, sizeof(e), 0), -FI_EAGAIN);

	/* An RDM endpoint accepts an EQ. */
	struct fid_ep *ep;
	CHECK(fi_endpoint(l->domain, l->info, &ep, NULL));
	CHECK(fi_ep_bind(ep, &eq->fid, 0));
	CHECK(fi_close(&ep->fid));

	CHECK(fi_close(&av->fid));
	CHECK(fi_close(&eq->fid));
	note("AV events: ok");
}

int main(int argc, char **argv)
{
	struct lnx_opts o;
	struct lnx l;
	msg_test_opts(argc, argv, &o);
	lnx_open(&l, &o);

	test_wait_none(l.fabric);
	test_wait_fd(l.fabric, FI_WAIT_UNSPEC);
	test_wait_fd(l.fabric, FI_WAIT_FD);
	test_pollfd(l.fabric);
	test_wait_set(l.fabric);
	struct fi_eq_attr mc = { .wait_obj = FI_WAIT_MUTEX_COND };
	struct fid_eq *eq;
	CHECK_RC(fi_eq_open(l.fabric, &mc, &eq, NULL), -FI_ENOSYS);
	test_av_events(&l);
	test_yield(l.fabric);
	test_domain_bind(&l);

	lnx_close(&l);
	printf("eq_basic: ok\n");
	return 0;
}
