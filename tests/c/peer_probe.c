/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * peer_probe: what a core provider does when it is driven through
 * libfabric's peer API, without lnx. The test is the owner: it implements
 * a peer SRX (a posted-receive list and an unexpected list per kind) and a
 * peer CQ in C, opens the core named on the command line directly with
 * them, and two processes exchange tagged and untagged messages, small
 * (eager) and 1 MiB (the core's rendezvous or CMA path), all with
 * FI_REMOTE_CQ_DATA.
 *
 * Usage: peer_probe PROVIDER      e.g. shm, tcp, "tcp;ofi_rxm"
 *
 * Phase "expected": the receiver posts each receive before the sender
 * sends; get_tag/get_msg must find it (return 0) with the sender's fi_addr,
 * the tag and (2.x) the size, the data must land intact in the owner's
 * buffer and the completion must come through the peer CQ's write() with
 * the receive's context, FI_RECV, FI_TAGGED or FI_MSG, FI_REMOTE_CQ_DATA,
 * length, tag and data. Phase "unexpected": the sender sends all four
 * first; the core must ask (-FI_ENOENT from the owner) and hand each one
 * to queue_tag/queue_msg; the receives posted afterwards start them
 * (start_tag/start_msg) and they complete as above. Every send completes
 * through write() with FI_SEND. Each process prints every callback, the
 * thread it ran on and what the test was doing then (post, progress,
 * start), so `ctest -R peer_probe -V` shows the facts docs/peer-api.md
 * records.
 *
 * A core that refuses the peer SRX or CQ (or is absent) skips: exit 77,
 * with the call and error printed. The peer API's structures differ by
 * libfabric version; the test is built for 1.17 (rdma/fi_ext.h: get_tag
 * without size, rx_entry.size) and 2.x (rdma/providers/fi_peer.h:
 * fi_peer_match_attr, rx_entry.msg_size). Headers of 1.18 and 1.19 skip.
 */
#include "common.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#if FI_MAJOR_VERSION >= 2
#include <rdma/providers/fi_peer.h>
#define PEER_ABI      2
#define RX_SIZE(e)    ((e)->msg_size)
#define PEER_ABI_NAME "2.x (fi_peer.h, fi_peer_match_attr)"
#elif FI_MAJOR_VERSION == 1 && FI_MINOR_VERSION == 17
#include <rdma/fi_ext.h>
#define PEER_ABI      117
#define RX_SIZE(e)    ((e)->size)
#define PEER_ABI_NAME "1.17 (fi_ext.h, get_tag without size)"
#else
#define PEER_ABI 0
#endif

#define SKIP_RC	  77
#define SMALL	  64
#define LARGE	  (1 << 20)
#define NMSG	  4
#define MAX_ENT	  64
#define MAX_EVENT 256

#if PEER_ABI

/* ---- what the owner saw ---------------------------------------------- */

enum where { W_SETUP, W_POST, W_PROGRESS, W_START, W_CLOSE };
static const char *const where_name[] = { "setup", "post", "progress", "start", "close" };
static enum where g_where = W_SETUP;
static int g_own_cq; /* "own-cq": the peer SRX with the core's own CQ, read by the test */
static pthread_t g_main;

enum ev_kind { EV_GET_MSG, EV_GET_TAG, EV_QUEUE_MSG, EV_QUEUE_TAG, EV_FREE, EV_WRITE, EV_WRITEERR };
static const char *const ev_name[] = { "get_msg",    "get_tag",	 "queue_msg",  "queue_tag",
				       "free_entry", "cq write", "cq writeerr" };

struct event {
	enum ev_kind kind;
	enum where where;
	int main_thread;
	int rc;
	fi_addr_t addr;
	uint64_t tag, flags, data;
	size_t size;
	void *context;
	struct fi_peer_rx_entry *entry;
};
static struct event g_ev[MAX_EVENT];
static int g_nev;

static struct event *record(enum ev_kind kind)
{
	if (g_nev == MAX_EVENT)
		FAIL("more than %d peer callbacks", MAX_EVENT);
	struct event *e = &g_ev[g_nev++];
	memset(e, 0, sizeof(*e));
	e->kind = kind;
	e->where = g_where;
	e->main_thread = pthread_equal(pthread_self(), g_main);
	return e;
}

static void print_event(const struct event *e)
{
	char fl[256];
	note("%-11s addr=%llu tag=0x%llx size=%zu flags=%s data=0x%llx ctx=%p rc=%d  [%s, %s]",
	     e->kind == EV_WRITE && g_own_cq ? "cq read" : ev_name[e->kind],
	     (unsigned long long)e->addr, (unsigned long long)e->tag, e->size,
	     flags_str(e->flags, fl, sizeof(fl)), (unsigned long long)e->data, e->context, e->rc,
	     where_name[e->where], e->main_thread ? "main thread" : "OTHER THREAD");
}

/* ---- the owner's SRX: posted and unexpected lists ---------------------- */

struct own_entry {
	struct fi_peer_rx_entry pe; /* first: the core gets &pe */
	struct own_entry *link;
	int used;
	struct iovec iov;
	void *desc;
};
static struct own_entry g_ent[MAX_ENT];

/* FIFO lists: [0] untagged, [1] tagged. */
static struct own_entry *g_posted[2], *g_unexp[2];

static struct fid_peer_srx g_srx;
static struct fid_peer_cq g_pcq;

static struct own_entry *ent_alloc(void)
{
	for (int i = 0; i < MAX_ENT; i++) {
		if (!g_ent[i].used) {
			memset(&g_ent[i], 0, sizeof(g_ent[i]));
			g_ent[i].used = 1;
			return &g_ent[i];
		}
	}
	FAIL("owner out of rx entries");
}

static struct own_entry *own(struct fi_peer_rx_entry *pe)
{
	struct own_entry *o = (struct own_entry *)pe;
	if (o < g_ent || o >= g_ent + MAX_ENT || !o->used)
		FAIL("the core handed back an rx entry the owner does not own: %p", (void *)pe);
	return o;
}

static void push(struct own_entry **l, struct own_entry *o)
{
	o->link = NULL;
	while (*l)
		l = &(*l)->link;
	*l = o;
}

static int addr_match(fi_addr_t want, fi_addr_t have)
{
	return want == FI_ADDR_UNSPEC || have == FI_ADDR_UNSPEC || want == have;
}

/* Removes and returns the first entry of l matching addr (and tag). */
static struct own_entry *take(struct own_entry **l, int tagged, fi_addr_t addr, uint64_t tag)
{
	for (; *l; l = &(*l)->link) {
		struct own_entry *o = *l;
		if (addr_match(o->pe.addr, addr) && (!tagged || o->pe.tag == tag)) {
			*l = o->link;
			return o;
		}
	}
	return NULL;
}

static int get_common(struct fid_peer_srx *srx, int tagged, fi_addr_t addr, size_t size,
		      uint64_t tag, struct fi_peer_rx_entry **entry)
{
	struct event *e = record(tagged ? EV_GET_TAG : EV_GET_MSG);
	e->addr = addr;
	e->tag = tag;
	e->size = size;
	if (srx != &g_srx)
		FAIL("%s: srx %p is not the owner's %p", ev_name[e->kind], (void *)srx,
		     (void *)&g_srx);
	struct own_entry *o = take(&g_posted[tagged], tagged, addr, tag);
	if (o) {
		o->pe.addr = addr; /* a receive from FI_ADDR_UNSPEC learns its source */
		*entry = &o->pe;
		e->entry = &o->pe;
		e->context = o->pe.context;
		return e->rc = 0;
	}
	o = ent_alloc();
	o->pe.srx = srx;
	o->pe.addr = addr;
	o->pe.tag = tag;
	RX_SIZE(&o->pe) = size;
	o->pe.flags = tagged ? FI_TAGGED | FI_RECV : FI_MSG | FI_RECV;
	*entry = &o->pe;
	e->entry = &o->pe;
	return e->rc = -FI_ENOENT;
}

#if PEER_ABI == 2
static int own_get_msg(struct fid_peer_srx *srx, struct fi_peer_match_attr *a,
		       struct fi_peer_rx_entry **entry)
{
	return get_common(srx, 0, a->addr, a->msg_size, 0, entry);
}
static int own_get_tag(struct fid_peer_srx *srx, struct fi_peer_match_attr *a,
		       struct fi_peer_rx_entry **entry)
{
	return get_common(srx, 1, a->addr, a->msg_size, a->tag, entry);
}
static void own_foreach_unspec_addr(struct fid_peer_srx *srx,
				    fi_addr_t (*get_addr)(struct fi_peer_rx_entry *))
{
	note("foreach_unspec_addr called [%s]", where_name[g_where]);
}
#else
static int own_get_msg(struct fid_peer_srx *srx, fi_addr_t addr, size_t size,
		       struct fi_peer_rx_entry **entry)
{
	return get_common(srx, 0, addr, size, 0, entry);
}
/* 1.17: no size; the entry's size field is what the core fills in. */
static int own_get_tag(struct fid_peer_srx *srx, fi_addr_t addr, uint64_t tag,
		       struct fi_peer_rx_entry **entry)
{
	return get_common(srx, 1, addr, (size_t)-1, tag, entry);
}
#endif

static int queue_common(struct fi_peer_rx_entry *pe, int tagged)
{
	struct own_entry *o = own(pe);
	struct event *e = record(tagged ? EV_QUEUE_TAG : EV_QUEUE_MSG);
	e->addr = pe->addr;
	e->tag = pe->tag;
	e->size = RX_SIZE(pe);
	e->flags = pe->flags;
	e->entry = pe;
#if PEER_ABI == 2
	e->data = pe->cq_data;
#endif
	push(&g_unexp[tagged], o);
	return 0;
}
static int own_queue_msg(struct fi_peer_rx_entry *pe)
{
	return queue_common(pe, 0);
}
static int own_queue_tag(struct fi_peer_rx_entry *pe)
{
	return queue_common(pe, 1);
}
static void own_free_entry(struct fi_peer_rx_entry *pe)
{
	struct own_entry *o = own(pe);
	struct event *e = record(EV_FREE);
	e->addr = pe->addr;
	e->tag = pe->tag;
	e->size = RX_SIZE(pe);
	e->context = pe->context;
	e->entry = pe;
	o->used = 0;
}

static struct fi_ops_srx_owner g_srx_owner_ops = {
	.size = sizeof(struct fi_ops_srx_owner),
	.get_msg = own_get_msg,
	.get_tag = own_get_tag,
	.queue_msg = own_queue_msg,
	.queue_tag = own_queue_tag,
#if PEER_ABI == 2
	.foreach_unspec_addr = own_foreach_unspec_addr,
#endif
	.free_entry = own_free_entry,
};

/* ---- the owner's CQ ------------------------------------------------------ */

static ssize_t own_cq_write(struct fid_peer_cq *cq, void *context, uint64_t flags, size_t len,
			    void *buf, uint64_t data, uint64_t tag, fi_addr_t src)
{
	struct event *e = record(EV_WRITE);
	e->context = context;
	e->flags = flags;
	e->size = len;
	e->data = data;
	e->tag = tag;
	e->addr = src;
	if (cq != &g_pcq)
		FAIL("cq write: cq %p is not the owner's %p", (void *)cq, (void *)&g_pcq);
	return 0;
}

static ssize_t own_cq_writeerr(struct fid_peer_cq *cq, const struct fi_cq_err_entry *err)
{
	struct event *e = record(EV_WRITEERR);
	e->context = err->op_context;
	e->flags = err->flags;
	e->size = err->len;
	e->tag = err->tag;
	e->rc = -err->err;
	return 0;
}

static struct fi_ops_cq_owner g_cq_owner_ops = {
	.size = sizeof(struct fi_ops_cq_owner),
	.write = own_cq_write,
	.writeerr = own_cq_writeerr,
};

static int own_close(struct fid *fid)
{
	return 0;
}
static int own_bind(struct fid *fid, struct fid *bfid, uint64_t flags)
{
	return -FI_ENOSYS;
}
static int own_control(struct fid *fid, int command, void *arg)
{
	return -FI_ENOSYS;
}
static int own_ops_open(struct fid *fid, const char *name, uint64_t flags, void **ops, void *ctx)
{
	return -FI_ENOSYS;
}
static struct fi_ops g_own_fid_ops = {
	.size = sizeof(struct fi_ops),
	.close = own_close,
	.bind = own_bind,
	.control = own_control,
	.ops_open = own_ops_open,
};

/* ---- the core, opened directly ------------------------------------------ */

static const char *g_prov;
static int g_sock;

struct core {
	struct fi_info *info;
	struct fid_fabric *fabric;
	struct fid_domain *domain;
	struct fid_av *av;
	struct fid_cq *cq;
	struct fid_ep *ep, *srx_ep;
	fi_addr_t peer;
};

static void __attribute__((noreturn)) skip(const char *fmt, ...)
{
	va_list ap;
	char msg[512];
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	note("SKIP: %s (libfabric %u.%u, headers %d.%d): %s", g_prov, FI_MAJOR(fi_version()),
	     FI_MINOR(fi_version()), FI_MAJOR_VERSION, FI_MINOR_VERSION, msg);
	exit(SKIP_RC);
}

/* A core call the peer API needs: a refusal is a skip, with the call named. */
#define NEED(expr)                                                                        \
	do {                                                                              \
		int _r = (int)(expr);                                                     \
		if (_r)                                                                   \
			skip("%s -> %d (%s)", #expr, _r, fi_strerror(_r < 0 ? -_r : _r)); \
	} while (0)

static void core_open(struct core *c)
{
	struct fi_info *hints = fi_allocinfo();
	int rc;
	char fl[512];

	hints->ep_attr->type = FI_EP_RDM;
	hints->caps = FI_MSG | FI_TAGGED | FI_SEND | FI_RECV | FI_SOURCE | FI_DIRECTED_RECV;
	/* No FI_MR_LOCAL: the owner's buffers go to the core without descriptors. */
	hints->domain_attr->mr_mode = FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY;
	hints->fabric_attr->prov_name = strdup(g_prov);
	/* FI_PEER in the caps first, as the built-in lnx asks; a core whose caps
	 * lack it (1.17 shm, 2.1 tcp) is asked again without. "tcp" also
	 * matches tcp;ofi_rxm: only the exact provider is taken. */
	for (int with_peer = 1; with_peer >= 0 && !c->info; with_peer--) {
		struct fi_info *list = NULL, *i;
		hints->caps = with_peer ? hints->caps | FI_PEER : hints->caps & ~FI_PEER;
		rc = fi_getinfo(TEST_FI_VERSION, NULL, NULL, 0, hints, &list);
		for (i = rc ? NULL : list; i; i = i->next)
			if (!strcmp(i->fabric_attr->prov_name, g_prov))
				break;
		note("fi_getinfo(%s, caps %s FI_PEER) -> %d (%s)%s", g_prov,
		     with_peer ? "with" : "without", rc, fi_strerror(-rc),
		     rc || i ? "" : ", only other providers");
		if (i)
			c->info = fi_dupinfo(i);
		fi_freeinfo(list);
	}
	fi_freeinfo(hints);
	if (!c->info)
		skip("no RDM endpoint of %s itself with FI_MSG|FI_TAGGED", g_prov);
	note("core %s %s, caps %s, data_progress %d", c->info->fabric_attr->prov_name,
	     c->info->domain_attr->name, flags_str(c->info->caps, fl, sizeof(fl)),
	     (int)c->info->domain_attr->data_progress);

	CHECK(fi_fabric(c->info->fabric_attr, &c->fabric, NULL));
	CHECK(fi_domain(c->fabric, c->info, &c->domain, NULL));
	struct fi_av_attr av_attr = { .type = FI_AV_TABLE };
	CHECK(fi_av_open(c->domain, &av_attr, &c->av, NULL));

	g_pcq.fid.fclass = FI_CLASS_PEER_CQ;
	g_pcq.fid.ops = &g_own_fid_ops;
	g_pcq.owner_ops = &g_cq_owner_ops;
	struct fi_peer_cq_context cq_ctx = { .size = sizeof(cq_ctx), .cq = &g_pcq };
	struct fi_cq_attr cq_attr = { .format = FI_CQ_FORMAT_TAGGED, .flags = FI_PEER };
	if (g_own_cq) {
		cq_attr.flags = 0;
		CHECK(fi_cq_open(c->domain, &cq_attr, &c->cq, NULL));
		note("own-cq: the core's own CQ, read with fi_cq_readfrom (no peer CQ)");
	} else {
		NEED(fi_cq_open(c->domain, &cq_attr, &c->cq, &cq_ctx));
	}

	CHECK(fi_endpoint(c->domain, c->info, &c->ep, NULL));
	CHECK(fi_ep_bind(c->ep, &c->av->fid, 0));
	CHECK(fi_ep_bind(c->ep, &c->cq->fid, FI_TRANSMIT | FI_RECV));

	g_srx.ep_fid.fid.fclass = FI_CLASS_PEER_SRX;
	g_srx.ep_fid.fid.ops = &g_own_fid_ops;
	g_srx.owner_ops = &g_srx_owner_ops;
	struct fi_peer_srx_context srx_ctx = { .size = sizeof(srx_ctx), .srx = &g_srx };
	struct fi_rx_attr rx_attr = { .op_flags = FI_PEER };
	NEED(fi_srx_context(c->domain, &rx_attr, &c->srx_ep, &srx_ctx));
	if (!g_srx.peer_ops)
		skip("fi_srx_context(FI_PEER) -> 0 but set no peer_ops on the owner's SRX: the "
		     "core ignored FI_PEER and made an SRX of its own (%p)",
		     (void *)c->srx_ep);
	if (c->srx_ep) {
		note("fi_srx_context(FI_PEER) returned the core's SRX %p (fclass %zu): bound",
		     (void *)c->srx_ep, c->srx_ep->fid.fclass);
		NEED(fi_ep_bind(c->ep, &c->srx_ep->fid, 0));
	} else {
		/* 1.17 shm keeps the SRX per domain and leaves *rx_ep alone; it
		 * takes the owner's own SRX fid. */
		note("fi_srx_context(FI_PEER) left *rx_ep NULL: binding the owner's SRX fid");
		g_srx.ep_fid.fid.fclass = FI_CLASS_SRX_CTX;
		NEED(fi_ep_bind(c->ep, &g_srx.ep_fid.fid, 0));
	}
	NEED(fi_enable(c->ep));
	note("peer SRX%s accepted; peer_ops start_msg=%p start_tag=%p",
	     g_own_cq ? "" : " and peer CQ", (void *)(uintptr_t)g_srx.peer_ops->start_msg,
	     (void *)(uintptr_t)g_srx.peer_ops->start_tag);
}

static void core_close(struct core *c)
{
	g_where = W_CLOSE;
	CHECK(fi_close(&c->ep->fid));
	if (c->srx_ep)
		CHECK(fi_close(&c->srx_ep->fid));
	CHECK(fi_close(&c->cq->fid));
	CHECK(fi_close(&c->av->fid));
	CHECK(fi_close(&c->domain->fid));
	CHECK(fi_close(&c->fabric->fid));
	fi_freeinfo(c->info);
}

/* Drives the core's progress once (the peer CQ's fi_cq_read). In own-cq
 * mode a completion read is recorded as the write() the peer CQ would get. */
static void progress(struct core *c)
{
	struct fi_cq_tagged_entry ent;
	fi_addr_t src = FI_ADDR_NOTAVAIL;
	enum where was = g_where;
	g_where = W_PROGRESS;
	/* A peer CQ's read only progresses the core (its readfrom is -FI_ENOSYS
	 * under 2.1). */
	ssize_t rc = g_own_cq ? fi_cq_readfrom(c->cq, &ent, 1, &src) : fi_cq_read(c->cq, &ent, 1);
	g_where = was;
	if (rc > 0 && g_own_cq) {
		struct event *e = record(EV_WRITE);
		e->where = W_PROGRESS;
		e->context = ent.op_context;
		e->flags = ent.flags;
		e->size = ent.len;
		e->data = ent.data;
		e->tag = ent.tag;
		e->addr = src;
		return;
	}
	if (rc == -FI_EAVAIL && g_own_cq) {
		struct fi_cq_err_entry err = { 0 };
		fi_cq_readerr(c->cq, &err, 0);
		FAIL("error completion: %d (%s), len %zu", err.err, fi_strerror(err.err), err.len);
	}
	if (rc > 0)
		FAIL("fi_cq_read of the core's peer CQ returned an entry (%zd)", rc);
	if (rc < 0 && rc != -FI_EAGAIN) {
		static int said;
		if (!said++)
			note("fi_cq_read(core peer CQ) -> %zd (%s)", rc, fi_strerror((int)-rc));
		if (rc != -FI_ENOSYS && rc != -FI_EAVAIL)
			FAIL("fi_cq_read -> %zd", rc);
	}
}

static int count(enum ev_kind kind, int from)
{
	int n = 0;
	for (int i = from; i < g_nev; i++)
		n += g_ev[i].kind == kind;
	return n;
}

/* Progresses until `want` events of kind arrived since `from`. */
static void progress_until(struct core *c, enum ev_kind kind, int from, int want, const char *what)
{
	uint64_t dl = now_ms() + WAIT_MS;
	while (count(kind, from) < want) {
		if (now_ms() > dl)
			FAIL("%s: %d of %d %s in %d ms", what, count(kind, from), want,
			     ev_name[kind], WAIT_MS);
		progress(c);
	}
}

/* Out of band, over the socketpair. */
static void oob_put(char ch)
{
	if (write(g_sock, &ch, 1) != 1)
		FAIL("oob write: %s", strerror(errno));
}
static char oob_get(struct core *c)
{
	char ch;
	uint64_t dl = now_ms() + 3 * WAIT_MS;
	for (;;) {
		struct pollfd p = { .fd = g_sock, .events = POLLIN };
		if (poll(&p, 1, 0) == 1)
			break;
		if (now_ms() > dl)
			FAIL("peer process silent");
		if (c)
			progress(c);
		else
			usleep(1000);
	}
	if (read(g_sock, &ch, 1) != 1)
		FAIL("oob read: peer gone");
	return ch;
}

/* ---- messages ------------------------------------------------------------ */

struct msg {
	const char *name;
	int tagged;
	size_t len;
	uint64_t tag, data;
};
static const struct msg g_msgs[NMSG] = {
	{ "tagged small", 1, SMALL, 0x1100, 0xd0001 },
	{ "tagged large", 1, LARGE, 0x2200, 0xd0002 },
	{ "untagged small", 0, SMALL, 0, 0xd0003 },
	{ "untagged large", 0, LARGE, 0, 0xd0004 },
};
/* The unexpected phase uses other tags and data, and seeds. */
#define UNEXP_TAG  0x10000
#define UNEXP_DATA 0x100000

static void send_one(struct core *c, const struct msg *m, void *buf, uint64_t tag, uint64_t data,
		     void *ctx)
{
	g_where = W_POST;
	for (uint64_t dl = now_ms() + WAIT_MS;;) {
		ssize_t rc = m->tagged ? fi_tsenddata(c->ep, buf, m->len, NULL, data, c->peer, tag,
						      ctx) :
					 fi_senddata(c->ep, buf, m->len, NULL, data, c->peer, ctx);
		if (rc == 0)
			break;
		if (rc != -FI_EAGAIN || now_ms() > dl)
			FAIL("send %s -> %zd (%s)", m->name, rc, fi_strerror((int)-rc));
		progress(c);
		g_where = W_POST;
	}
	g_where = W_SETUP;
}

/* Posts a receive the owner's way: a match in the unexpected list is
 * started; otherwise the receive waits in the posted list. */
static void post_recv(struct core *c, int tagged, void *buf, size_t len, uint64_t tag, void *ctx)
{
	struct own_entry *o = take(&g_unexp[tagged], tagged, c->peer, tag);
	int started = o != NULL;
	if (!o) {
		o = ent_alloc();
		o->pe.addr = c->peer;
		o->pe.tag = tag;
		RX_SIZE(&o->pe) = len; /* an unexpected entry keeps the core's size */
	}
	o->iov.iov_base = buf;
	o->iov.iov_len = len;
	o->pe.iov = &o->iov;
	o->desc = NULL;
	o->pe.desc = &o->desc;
	o->pe.count = 1;
	o->pe.context = ctx;
	/* FI_COMPLETION: rxm writes a receive's completion only when the
	 * entry's flags carry it (PEER_PROBE_NO_FI_COMPLETION=1 shows that). */
	o->pe.flags = (tagged ? FI_TAGGED : FI_MSG) | FI_RECV;
	if (!getenv("PEER_PROBE_NO_FI_COMPLETION"))
		o->pe.flags |= FI_COMPLETION;
	if (!started) {
		g_where = W_POST;
		push(&g_posted[tagged], o);
		g_where = W_SETUP;
		return;
	}
	g_where = W_START;
	int rc = tagged ? g_srx.peer_ops->start_tag(&o->pe) : g_srx.peer_ops->start_msg(&o->pe);
	g_where = W_SETUP;
	note("%s(entry %p, len %zu) -> %d", tagged ? "start_tag" : "start_msg", (void *)&o->pe, len,
	     rc);
	if (rc)
		FAIL("start -> %d (%s)", rc, fi_strerror(-rc));
}

static const struct event *find(enum ev_kind kind, int from, void *ctx)
{
	for (int i = from; i < g_nev; i++)
		if (g_ev[i].kind == kind && (!ctx || g_ev[i].context == ctx))
			return &g_ev[i];
	return NULL;
}

/* The receive completion of m (context ctx) through the peer CQ. */
static void check_rx(struct core *c, const struct msg *m, int from, void *ctx, void *buf,
		     uint64_t tag, uint64_t data, uint64_t seed)
{
	const struct event *w = find(EV_WRITE, from, ctx);
	EXPECT(w, "%s: no peer CQ write with context %p", m->name, ctx);
	uint64_t want = FI_RECV | FI_REMOTE_CQ_DATA | (m->tagged ? FI_TAGGED : FI_MSG);
	char fl[256];
	EXPECT((w->flags & want) == want, "%s: write flags %s lack %#llx", m->name,
	       flags_str(w->flags, fl, sizeof(fl)), (unsigned long long)want);
	EXPECT(w->size == m->len, "%s: write len %zu, want %zu", m->name, w->size, m->len);
	EXPECT(w->data == data, "%s: write data 0x%llx, want 0x%llx", m->name,
	       (unsigned long long)w->data, (unsigned long long)data);
	if (m->tagged)
		EXPECT(w->tag == tag, "%s: write tag 0x%llx, want 0x%llx", m->name,
		       (unsigned long long)w->tag, (unsigned long long)tag);
	EXPECT_PATTERN(buf, m->len, seed);
}

/* The get_* the core called for m: the sender's address, the tag, the size
 * (2.x; 1.17's get_tag has none). */
static const struct event *check_get(const struct core *c, const struct msg *m, int from,
				     uint64_t tag, int want_rc)
{
	const struct event *g = NULL;
	/* A tagged message is told by its tag, an untagged one by its size. */
	for (int i = from; i < g_nev && !g; i++)
		if (g_ev[i].kind == (m->tagged ? EV_GET_TAG : EV_GET_MSG) &&
		    (m->tagged ? g_ev[i].tag == tag : g_ev[i].size == m->len))
			g = &g_ev[i];
	EXPECT(g, "%s: the core never called %s", m->name, m->tagged ? "get_tag" : "get_msg");
	EXPECT(g->addr == c->peer, "%s: %s addr %llu, want the sender's fi_addr %llu", m->name,
	       ev_name[g->kind], (unsigned long long)g->addr, (unsigned long long)c->peer);
	EXPECT(g->rc == want_rc, "%s: %s -> %d, want %d", m->name, ev_name[g->kind], g->rc,
	       want_rc);
	if (PEER_ABI == 2 || !m->tagged)
		EXPECT(g->size == m->len, "%s: %s size %zu, want %zu", m->name, ev_name[g->kind],
		       g->size, m->len);
	return g;
}

static void sender(struct core *c)
{
	void *buf[NMSG];
	int ctx[NMSG];
	for (int i = 0; i < NMSG; i++)
		buf[i] = xmalloc(g_msgs[i].len);

	/* expected: one at a time, after the receiver posted. */
	for (int i = 0; i < NMSG; i++) {
		const struct msg *m = &g_msgs[i];
		fill_pattern(buf[i], m->len, 100 + i);
		EXPECT(oob_get(c) == 'r', "receiver not ready for %s", m->name);
		int from = g_nev;
		send_one(c, m, buf[i], m->tag, m->data, &ctx[i]);
		progress_until(c, EV_WRITE, from, 1, m->name);
		const struct event *w = find(EV_WRITE, from, &ctx[i]);
		char fl[256];
		EXPECT(w, "%s: send completion with another context", m->name);
		EXPECT(w->flags & FI_SEND, "%s: send completion flags %s", m->name,
		       flags_str(w->flags, fl, sizeof(fl)));
		note("expected %s sent: send completion flags %s len %zu", m->name,
		     flags_str(w->flags, fl, sizeof(fl)), w->size);
	}
	/* unexpected: all four before any receive is posted. */
	EXPECT(oob_get(c) == 'u', "receiver not ready for the unexpected phase");
	int from = g_nev;
	for (int i = 0; i < NMSG; i++) {
		const struct msg *m = &g_msgs[i];
		fill_pattern(buf[i], m->len, 200 + i);
		send_one(c, m, buf[i], m->tag | UNEXP_TAG, m->data | UNEXP_DATA, &ctx[i]);
	}
	progress_until(c, EV_WRITE, from, NMSG, "unexpected sends");
	for (int i = 0; i < NMSG; i++)
		EXPECT(find(EV_WRITE, from, &ctx[i]), "no send completion for %s", g_msgs[i].name);
	note("unexpected: all %d send completions", NMSG);
	EXPECT(count(EV_GET_MSG, 0) + count(EV_GET_TAG, 0) == 0,
	       "the sender's core called the owner's SRX");
	oob_put('d');
	EXPECT(oob_get(c) == 'd', "receiver did not finish");
	for (int i = 0; i < NMSG; i++)
		free(buf[i]);
}

static void receiver(struct core *c)
{
	void *buf[NMSG];
	int ctx[NMSG];
	for (int i = 0; i < NMSG; i++)
		buf[i] = xmalloc(g_msgs[i].len);

	for (int i = 0; i < NMSG; i++) {
		const struct msg *m = &g_msgs[i];
		memset(buf[i], 0, m->len);
		int from = g_nev;
		post_recv(c, m->tagged, buf[i], m->len, m->tag, &ctx[i]);
		oob_put('r');
		progress_until(c, EV_WRITE, from, 1, m->name);
		check_get(c, m, from, m->tag, 0);
		check_rx(c, m, from, &ctx[i], buf[i], m->tag, m->data, 100 + i);
		EXPECT(!find(EV_QUEUE_MSG, from, NULL) && !find(EV_QUEUE_TAG, from, NULL),
		       "%s: posted receive, yet the core queued the message", m->name);
		note("expected %s: matched by %s, data intact, completion ok", m->name,
		     m->tagged ? "get_tag" : "get_msg");
	}

	/* unexpected: wait until the core queued all four, then post. */
	int from = g_nev;
	oob_put('u');
	uint64_t dl = now_ms() + WAIT_MS;
	while (count(EV_QUEUE_MSG, from) + count(EV_QUEUE_TAG, from) < NMSG) {
		if (now_ms() > dl)
			FAIL("unexpected: %d queue_tag + %d queue_msg of %d in %d ms",
			     count(EV_QUEUE_TAG, from), count(EV_QUEUE_MSG, from), NMSG, WAIT_MS);
		progress(c);
	}
	EXPECT(count(EV_WRITE, from) == 0, "a message completed with no receive posted");
	for (int i = 0; i < NMSG; i++) {
		const struct msg *m = &g_msgs[i];
		const struct event *g = check_get(c, m, from, m->tag | UNEXP_TAG, -FI_ENOENT);
		const struct event *q = find(m->tagged ? EV_QUEUE_TAG : EV_QUEUE_MSG, from, NULL);
		while (q && q->entry != g->entry)
			q = find(q->kind, (int)(q - g_ev) + 1, NULL);
		EXPECT(q, "%s: the entry of get -> -FI_ENOENT was never queued", m->name);
		note("unexpected %s queued: entry size %zu%s", m->name, q->size,
		     PEER_ABI == 2 ? "" : " (1.17)");
	}
	int posted = g_nev;
	for (int i = 0; i < NMSG; i++) {
		const struct msg *m = &g_msgs[i];
		memset(buf[i], 0, m->len);
		post_recv(c, m->tagged, buf[i], m->len, m->tag | UNEXP_TAG, &ctx[i]);
	}
	progress_until(c, EV_WRITE, posted, NMSG, "unexpected receives");
	for (int i = 0; i < NMSG; i++) {
		const struct msg *m = &g_msgs[i];
		check_rx(c, m, posted, &ctx[i], buf[i], m->tag | UNEXP_TAG, m->data | UNEXP_DATA,
			 200 + i);
		note("unexpected %s: started, data intact, completion ok", m->name);
	}
	EXPECT(oob_get(c) == 'd', "sender did not finish");
	oob_put('d');
	for (int i = 0; i < NMSG; i++)
		free(buf[i]);
}

static int g_dumped;
static void dump_events(void)
{
	if (g_dumped++)
		return;
	for (int i = 0; i < g_nev; i++)
		print_event(&g_ev[i]);
	int other = 0;
	for (int i = 0; i < g_nev; i++)
		other += !g_ev[i].main_thread;
	note("%d callbacks, %d of them on a thread other than the test's", g_nev, other);
}

static int child(int rank, int sock)
{
	struct core c = { 0 };
	g_sock = sock;
	g_main = pthread_self();
	snprintf(g_role, sizeof(g_role), "%s %s", rank ? "B" : "A", g_prov);
	atexit(dump_events); /* what the owner saw, also when a check fails */
	core_open(&c);

	/* Addresses: exchange, insert. A skip on one side becomes 'S'. */
	uint8_t name[256], pname[256];
	size_t len = sizeof(name);
	CHECK(fi_getname(&c.ep->fid, name, &len));
	if (write(sock, &len, sizeof(len)) != sizeof(len) || write(sock, name, len) != (ssize_t)len)
		FAIL("oob write");
	size_t plen;
	ssize_t n = read(sock, &plen, sizeof(plen));
	if (n == 0) {
		/* The other process left before sending its address: it skipped
		 * (or failed, which the parent sees in its exit status). */
		note("the other process left before the address exchange");
		exit(SKIP_RC);
	}
	if (n != sizeof(plen) || plen > sizeof(pname) || read(sock, pname, plen) != (ssize_t)plen)
		FAIL("oob read of the peer's address");
	/* Our own address first, so the peer's fi_addr is not 0. */
	fi_addr_t self;
	CHECK_RC(fi_av_insert(c.av, name, 1, &self, 0, NULL), 1);
	CHECK_RC(fi_av_insert(c.av, pname, 1, &c.peer, 0, NULL), 1);
	note("self fi_addr %llu, peer fi_addr %llu", (unsigned long long)self,
	     (unsigned long long)c.peer);

	if (rank == 0)
		sender(&c);
	else
		receiver(&c);

	dump_events();
	core_close(&c);
	note("passed");
	return 0;
}

int main(int argc, char **argv)
{
	if (argc < 2 || argc > 3 || (argc == 3 && strcmp(argv[2], "own-cq"))) {
		fprintf(stderr, "usage: %s PROVIDER [own-cq]   (shm, tcp, \"tcp;ofi_rxm\")\n",
			argv[0]);
		return 2;
	}
	g_prov = argv[1];
	g_own_cq = argc == 3;
	setvbuf(stdout, NULL, _IOLBF, 0);
	printf("peer_probe: %s, peer API ABI %s, %s\n", g_prov, PEER_ABI_NAME,
	       g_own_cq ? "peer SRX with the core's own CQ" : "peer SRX and peer CQ");
	int sv[2];
	if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv))
		FAIL("socketpair: %s", strerror(errno));
	pid_t pid[2];
	for (int r = 0; r < 2; r++) {
		pid[r] = fork();
		if (pid[r] < 0)
			FAIL("fork: %s", strerror(errno));
		if (pid[r] == 0) {
			close(sv[1 - r]);
			exit(child(r, sv[r]));
		}
	}
	close(sv[0]);
	close(sv[1]);
	int rc[2], skipped = 0, failed = 0;
	for (int r = 0; r < 2; r++) {
		int st;
		if (waitpid(pid[r], &st, 0) < 0)
			FAIL("waitpid: %s", strerror(errno));
		rc[r] = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
		skipped += rc[r] == SKIP_RC;
		failed += rc[r] != 0 && rc[r] != SKIP_RC;
	}
	if (skipped && !failed) {
		printf("peer_probe: %s skipped (exit %d): the core refuses the peer API here\n",
		       g_prov, SKIP_RC);
		return SKIP_RC;
	}
	if (failed || skipped) {
		printf("peer_probe: %s FAILED (A exit %d, B exit %d)\n", g_prov, rc[0], rc[1]);
		return 1;
	}
	printf("peer_probe: %s passed\n", g_prov);
	return 0;
}

#else /* !PEER_ABI */

int main(int argc, char **argv)
{
	printf("peer_probe: SKIP: headers of libfabric %d.%d: the test knows the peer API of "
	       "1.17 and 2.x only\n",
	       FI_MAJOR_VERSION, FI_MINOR_VERSION);
	return 77;
}

#endif
