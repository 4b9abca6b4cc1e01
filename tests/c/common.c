/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
#include "common.h"

#include <dirent.h>
#include <errno.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

char g_role[32] = "test";
void (*g_child_setup)(int rank);

/* Keep tcp on loopback even when a test binary is run by hand; this runs
 * before main(), so before libfabric reads its environment. */
__attribute__((constructor)) static void test_env_defaults(void)
{
	setenv("FI_TCP_IFACE", "lo", 0);
}
static int g_in_child;
static struct peer *g_peer; /* set in harness children */
static void check_peers_alive(void);

/* ---- failure reporting -------------------------------------------------- */

static void vreport(const char *file, int line, const char *fmt, va_list ap)
{
	fflush(stdout);
	fprintf(stderr, "[%s] FAIL %s:%d: ", g_role, file, line);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	fflush(stderr);
}

static void __attribute__((noreturn)) bail(void)
{
	if (g_in_child)
		_exit(1);
	exit(1);
}

void die(const char *file, int line, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vreport(file, line, fmt, ap);
	va_end(ap);
	bail();
}

void die_cond(const char *file, int line, const char *cond, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	fflush(stdout);
	fprintf(stderr, "[%s] FAIL %s:%d: expected %s%s%s\n", g_role, file, line, cond,
		msg[0] ? ": " : "", msg);
	fflush(stderr);
	bail();
}

void note(const char *fmt, ...)
{
	va_list ap;
	printf("[%s] ", g_role);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	fflush(stdout);
}

/* ---- small utilities ----------------------------------------------------- */

uint64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static inline uint8_t pattern_byte(size_t i, uint64_t seed)
{
	uint64_t x = (uint64_t)i * 0x9E3779B97F4A7C15ull + seed * 0xBF58476D1CE4E5B9ull;
	x ^= x >> 29;
	return (uint8_t)(x ^ (x >> 8) ^ (i >> 12));
}

void fill_pattern(void *buf, size_t len, uint64_t seed)
{
	uint8_t *b = buf;
	for (size_t i = 0; i < len; i++)
		b[i] = pattern_byte(i, seed);
}

long long check_pattern(const void *buf, size_t len, uint64_t seed)
{
	const uint8_t *b = buf;
	for (size_t i = 0; i < len; i++)
		if (b[i] != pattern_byte(i, seed))
			return (long long)i;
	return -1;
}

void *xmalloc(size_t n)
{
	void *p = malloc(n ? n : 1);
	if (!p)
		FAIL("out of memory (%zu bytes)", n);
	return p;
}

const char *flags_str(uint64_t flags, char *buf, size_t len)
{
	fi_tostr_r(buf, len, &flags, FI_TYPE_CQ_EVENT_FLAGS);
	return buf;
}

/* ---- getinfo helpers ------------------------------------------------------ */

void set_links(const char *links)
{
	if (links)
		setenv("FI_LNX_PROV_LINKS", links, 1);
	else
		unsetenv("FI_LNX_PROV_LINKS");
}

struct fi_info *lnx_hints(void)
{
	struct fi_info *h = fi_allocinfo();
	if (!h)
		FAIL("fi_allocinfo failed");
	h->caps = FI_MSG | FI_TAGGED | FI_SEND | FI_RECV | FI_DIRECTED_RECV | FI_SOURCE |
		  FI_LOCAL_COMM | FI_REMOTE_COMM;
	h->ep_attr->type = FI_EP_RDM;
	h->domain_attr->mr_mode = FI_MR_ALLOCATED | FI_MR_PROV_KEY | FI_MR_VIRT_ADDR;
	h->fabric_attr->prov_name = strdup("lnx");
	return h;
}

int lnx_getinfo(struct fi_info *hints, struct fi_info **info)
{
	*info = NULL;
	return fi_getinfo(TEST_FI_VERSION, NULL, NULL, 0, hints, info);
}

/* The threading level lnx_open asks for: the test's own, or
 * LNX_TEST_THREADING's ("safe", "domain"), or FI_THREAD_DOMAIN. */
static enum fi_threading test_threading(enum fi_threading want)
{
	const char *v = getenv("LNX_TEST_THREADING");
	if (want != FI_THREAD_UNSPEC)
		return want;
	if (v && !strcmp(v, "safe"))
		return FI_THREAD_SAFE;
	if (v && strcmp(v, "domain"))
		FAIL("LNX_TEST_THREADING=%s: want safe or domain", v);
	return FI_THREAD_DOMAIN;
}

uint32_t test_fi_version(void)
{
	const char *v = getenv("LNX_TEST_API");
	unsigned major, minor;
	if (v && sscanf(v, "%u.%u", &major, &minor) == 2)
		return FI_VERSION(major, minor);
	return FI_VERSION(FI_MAJOR_VERSION, FI_MINOR_VERSION);
}

int lnx_linked_names(void)
{
	return FI_VERSION_GE(fi_version(), FI_VERSION(2, 0));
}

int has_linked_name(const struct fi_info *i)
{
	const char *pn = i->fabric_attr->prov_name;
	size_t len = strlen(pn);
	return len > 4 && !strcmp(pn + len - 4, ":lnx");
}

int lnx_peer_path(void)
{
	const char *off[] = { "0", "n", "no", "off", "false" };
	const char *v = getenv("FI_LNX_PEER_API");
	uint32_t fv = fi_version();
	if (FI_MAJOR(fv) != 2 || FI_MINOR(fv) > 2)
		return 0;
	for (size_t i = 0; v && i < sizeof(off) / sizeof(off[0]); i++)
		if (strcasecmp(v, off[i]) == 0)
			return 0;
	return 1;
}

struct fi_info *next_link(struct fi_info *info)
{
	struct fi_info *n = info->next;
	if (n && lnx_linked_names() && has_linked_name(n) && !has_linked_name(info))
		n = n->next;
	return n;
}

/* Links in an lnx answer. Under libfabric 2.x every "lnx" entry must be
 * followed by its twin named "<cores>:lnx", the same domain: checked here
 * so that every test counting entries checks the pairing too. */
int info_count(const struct fi_info *info)
{
	int n = 0;
	for (; info; info = info->next) {
		n++;
		if (!lnx_linked_names() || strcmp(info->fabric_attr->prov_name, "lnx"))
			continue;
		const struct fi_info *twin = info->next;
		EXPECT(twin, "no linked twin after %s", info->domain_attr->name);
		const char *pn = twin->fabric_attr->prov_name;
		EXPECT(has_linked_name(twin) && !strncmp(pn, "shm", 3) ==
							!strncmp(info->domain_attr->name, "shm", 3),
		       "twin prov_name %s for domain %s", pn, info->domain_attr->name);
		EXPECT(!strcmp(twin->domain_attr->name, info->domain_attr->name),
		       "twin domain %s, want %s", twin->domain_attr->name, info->domain_attr->name);
		info = twin;
	}
	return n;
}

/* ---- one lnx endpoint ----------------------------------------------------- */

void lnx_open(struct lnx *l, const struct lnx_opts *o)
{
	static const struct lnx_opts defaults;
	if (!o)
		o = &defaults;
	memset(l, 0, sizeof(*l));
	if (o->links)
		set_links(o->links);

	l->hints = lnx_hints();
	if (o->caps)
		l->hints->caps = o->caps;
	if (o->mr_mode)
		l->hints->domain_attr->mr_mode = o->mr_mode;
	if (o->domain)
		l->hints->domain_attr->name = strdup(o->domain);
	l->hints->domain_attr->av_type = o->av_type ? o->av_type : FI_AV_TABLE;
	l->hints->domain_attr->threading = test_threading(o->threading);
	if (o->selective) {
		l->hints->tx_attr->op_flags |= FI_COMPLETION;
		l->hints->rx_attr->op_flags |= FI_COMPLETION;
	}
	CHECK(lnx_getinfo(l->hints, &l->info));
	EXPECT(l->info != NULL, "fi_getinfo succeeded with an empty list");
	if (getenv("LNX_TEST_LINKED")) {
		/* Use the entry spelled as a linked provider ("shm+...:lnx"),
		 * as an Open MPI 5 include list written for libfabric 2.x's
		 * built-in lnx selects it. */
		struct fi_info *i = l->info;
		while (i && !has_linked_name(i))
			i = i->next;
		EXPECT(i, "no linked (<cores>:lnx) entry");
		i = fi_dupinfo(i);
		fi_freeinfo(l->info);
		l->info = i;
	} else {
		EXPECT(!strcmp(l->info->fabric_attr->prov_name, "lnx"), "provider %s",
		       l->info->fabric_attr->prov_name);
	}
	EXPECT(!(l->info->domain_attr->mr_mode & FI_MR_LOCAL),
	       "lnx asks for FI_MR_LOCAL; these tests post unregistered buffers");

	CHECK(fi_fabric(l->info->fabric_attr, &l->fabric, NULL));
	CHECK(fi_domain(l->fabric, l->info, &l->domain, NULL));

	struct fi_av_attr av_attr = {
		.type = o->av_type ? o->av_type : FI_AV_TABLE,
		.count = 16,
	};
	CHECK(fi_av_open(l->domain, &av_attr, &l->av, NULL));

	struct fi_cq_attr cq_attr = {
		.format = o->cq_format ? o->cq_format : FI_CQ_FORMAT_TAGGED,
		.wait_obj = FI_WAIT_NONE,
		.size = o->cq_size,
	};
	CHECK(fi_cq_open(l->domain, &cq_attr, &l->cq, NULL));
	cq_format_note(l->cq, cq_attr.format);

	if (o->counters) {
		struct fi_cntr_attr cntr_attr = {
			.events = FI_CNTR_EVENTS_COMP,
			.wait_obj = FI_WAIT_UNSPEC,
		};
		CHECK(fi_cntr_open(l->domain, &cntr_attr, &l->tx_cntr, NULL));
		CHECK(fi_cntr_open(l->domain, &cntr_attr, &l->rx_cntr, NULL));
	}

	CHECK(fi_endpoint(l->domain, l->info, &l->ep, NULL));
	CHECK(fi_ep_bind(l->ep, &l->av->fid, 0));
	CHECK(fi_ep_bind(l->ep, &l->cq->fid,
			 FI_TRANSMIT | FI_RECV | (o->selective ? FI_SELECTIVE_COMPLETION : 0)));
	if (o->counters) {
		/* counters == 2: the one-sided events too (FI_RMA_EVENT). */
		CHECK(fi_ep_bind(l->ep, &l->tx_cntr->fid,
				 FI_SEND | (o->counters == 2 ? FI_WRITE | FI_READ : 0)));
		CHECK(fi_ep_bind(
			l->ep, &l->rx_cntr->fid,
			FI_RECV | (o->counters == 2 ? FI_REMOTE_WRITE | FI_REMOTE_READ : 0)));
	}
	CHECK(fi_enable(l->ep));

	l->namelen = sizeof(l->name);
	CHECK(fi_getname(&l->ep->fid, l->name, &l->namelen));
	EXPECT(l->namelen == LNX_ADDRLEN, "fi_getname length %zu", l->namelen);
}

void lnx_close(struct lnx *l)
{
	if (l->ep)
		CHECK(fi_close(&l->ep->fid));
	if (l->av)
		CHECK(fi_close(&l->av->fid));
	if (l->cq)
		CHECK(fi_close(&l->cq->fid));
	if (l->tx_cntr)
		CHECK(fi_close(&l->tx_cntr->fid));
	if (l->rx_cntr)
		CHECK(fi_close(&l->rx_cntr->fid));
	if (l->domain)
		CHECK(fi_close(&l->domain->fid));
	if (l->fabric)
		CHECK(fi_close(&l->fabric->fid));
	fi_freeinfo(l->info);
	fi_freeinfo(l->hints);
	memset(l, 0, sizeof(*l));
}

/* ---- completion queues ---------------------------------------------------- */

struct stashed {
	struct fid_cq *cq;
	int is_err;
	struct fi_cq_tagged_entry e;
	fi_addr_t src;
	struct fi_cq_err_entry err;
};

int g_cq_print_errors = 1;

static struct stashed *stash;
static size_t stash_len, stash_cap;

static void stash_push(const struct stashed *s)
{
	if (stash_len == stash_cap) {
		stash_cap = stash_cap ? stash_cap * 2 : 256;
		stash = realloc(stash, stash_cap * sizeof(*stash));
		if (!stash)
			FAIL("out of memory");
	}
	stash[stash_len++] = *s;
}

static int stash_pop(struct fid_cq *cq, struct stashed *out)
{
	for (size_t i = 0; i < stash_len; i++) {
		if (stash[i].cq != cq)
			continue;
		*out = stash[i];
		memmove(&stash[i], &stash[i + 1], (stash_len - i - 1) * sizeof(*stash));
		stash_len--;
		return 1;
	}
	return 0;
}

static void print_err_entry(const struct fi_cq_err_entry *e)
{
	char fl[256];
	note("CQ error entry: err=%d (%s) prov_errno=%d olen=%zu len=%zu tag=%#llx "
	     "ctx=%p flags=%s",
	     e->err, fi_strerror(e->err), e->prov_errno, e->olen, e->len,
	     (unsigned long long)e->tag, e->op_context, flags_str(e->flags, fl, sizeof(fl)));
}

/* The format of each CQ the tests opened, so that the stash reads entries
 * of the right size and widens them to tagged entries. */
static struct {
	struct fid_cq *cq;
	enum fi_cq_format fmt;
} cq_formats[16];

void cq_format_note(struct fid_cq *cq, enum fi_cq_format fmt)
{
	for (size_t i = 0; i < sizeof(cq_formats) / sizeof(cq_formats[0]); i++) {
		if (cq_formats[i].cq == cq || !cq_formats[i].cq) {
			cq_formats[i].cq = cq;
			cq_formats[i].fmt = fmt;
			return;
		}
	}
}

static enum fi_cq_format cq_format_of(struct fid_cq *cq)
{
	for (size_t i = 0; i < sizeof(cq_formats) / sizeof(cq_formats[0]); i++)
		if (cq_formats[i].cq == cq)
			return cq_formats[i].fmt;
	return FI_CQ_FORMAT_TAGGED;
}

size_t cq_entry_size(enum fi_cq_format fmt)
{
	switch (fmt) {
	case FI_CQ_FORMAT_CONTEXT:
		return sizeof(struct fi_cq_entry);
	case FI_CQ_FORMAT_MSG:
		return sizeof(struct fi_cq_msg_entry);
	case FI_CQ_FORMAT_DATA:
		return sizeof(struct fi_cq_data_entry);
	default:
		return sizeof(struct fi_cq_tagged_entry);
	}
}

void cq_widen(enum fi_cq_format fmt, const void *entry, struct fi_cq_tagged_entry *out)
{
	/* Each format's entry starts with the previous format's fields. */
	const struct fi_cq_tagged_entry *e = entry;
	memset(out, 0, sizeof(*out));
	out->op_context = e->op_context;
	if (fmt == FI_CQ_FORMAT_CONTEXT)
		return;
	out->flags = e->flags;
	out->len = e->len;
	if (fmt == FI_CQ_FORMAT_MSG)
		return;
	out->buf = e->buf;
	out->data = e->data;
	if (fmt == FI_CQ_FORMAT_DATA)
		return;
	out->tag = e->tag;
}

/* Reads up to n entries of cq's format into tagged entries. */
static ssize_t cq_read_tagged(struct fid_cq *cq, struct fi_cq_tagged_entry *out, size_t n,
			      fi_addr_t *srcs)
{
	enum fi_cq_format fmt = cq_format_of(cq);
	if (fmt == FI_CQ_FORMAT_TAGGED || fmt == FI_CQ_FORMAT_UNSPEC)
		return fi_cq_readfrom(cq, out, n, srcs);
	struct fi_cq_data_entry raw[16]; /* the largest of the other formats */
	if (n > 16)
		n = 16;
	ssize_t r = fi_cq_readfrom(cq, raw, n, srcs);
	for (ssize_t i = 0; i < r; i++)
		cq_widen(fmt, (const char *)raw + i * cq_entry_size(fmt), &out[i]);
	return r;
}

int cq_stash_pop(struct fid_cq *cq, struct fi_cq_tagged_entry *entry, fi_addr_t *src,
		 struct fi_cq_err_entry *err)
{
	struct stashed s;
	if (!stash_pop(cq, &s))
		return 0;
	if (s.is_err) {
		if (err)
			*err = s.err;
		return -1;
	}
	if (entry)
		*entry = s.e;
	if (src)
		*src = s.src;
	return 1;
}

int cq_progress(struct fid_cq *cq)
{
	struct fi_cq_tagged_entry ents[16];
	fi_addr_t srcs[16];
	struct stashed s;
	ssize_t n;

	for (int i = 0; i < 16; i++)
		srcs[i] = FI_ADDR_NOTAVAIL;
	n = cq_read_tagged(cq, ents, 16, srcs);
	if (n > 0) {
		for (ssize_t i = 0; i < n; i++) {
			memset(&s, 0, sizeof(s));
			s.cq = cq;
			s.e = ents[i];
			s.src = srcs[i];
			stash_push(&s);
		}
		return (int)n;
	}
	if (n == -FI_EAGAIN || n == 0)
		return 0;
	if (n != -FI_EAVAIL)
		return (int)n;

	memset(&s, 0, sizeof(s));
	s.cq = cq;
	s.is_err = 1;
	s.src = FI_ADDR_NOTAVAIL;
	n = fi_cq_readerr(cq, &s.err, 0);
	if (n == -FI_EAGAIN)
		return 0;
	if (n < 0)
		return (int)n;
	if (n != 1)
		FAIL("fi_cq_readerr returned %zd, want 1", n);
	s.err.err_data = NULL; /* only valid until the next read */
	s.err.err_data_size = 0;
	stash_push(&s);
	return 1;
}

int wait_cq(struct fid_cq *cq, struct fi_cq_tagged_entry *entry, fi_addr_t *src,
	    struct fi_cq_err_entry *err, int timeout_ms)
{
	uint64_t deadline = now_ms() + (uint64_t)(timeout_ms < 0 ? 0 : timeout_ms);
	uint64_t next_check = now_ms() + 50;
	struct stashed s;

	if (err)
		memset(err, 0, sizeof(*err));
	for (;;) {
		if (stash_pop(cq, &s)) {
			if (s.is_err) {
				if (g_cq_print_errors)
					print_err_entry(&s.err);
				if (err)
					*err = s.err;
				if (src)
					*src = FI_ADDR_NOTAVAIL;
				return s.err.err > 0 ? -s.err.err : -FI_EOTHER;
			}
			if (entry)
				*entry = s.e;
			if (src)
				*src = s.src;
			return 0;
		}
		int r = cq_progress(cq);
		if (r < 0) {
			note("fi_cq_readfrom/readerr failed: %d (%s)", r, fi_strerror(-r));
			return r;
		}
		if (r == 0) {
			uint64_t t = now_ms();
			if (t >= deadline)
				return -FI_ETIMEDOUT;
			if (t >= next_check) {
				check_peers_alive();
				next_check = t + 50;
			}
			sched_yield();
		}
	}
}

int wait_cq_quiet(struct fid_cq *cq, struct fi_cq_tagged_entry *entry, fi_addr_t *src,
		  struct fi_cq_err_entry *err, int timeout_ms)
{
	int saved = g_cq_print_errors;
	g_cq_print_errors = 0;
	int r = wait_cq(cq, entry, src, err, timeout_ms);
	g_cq_print_errors = saved;
	return r;
}

void wait_ok_ms(struct fid_cq *cq, struct fi_cq_tagged_entry *entry, fi_addr_t *src, int timeout_ms,
		const char *what)
{
	int r = wait_cq(cq, entry, src, NULL, timeout_ms);
	if (r)
		FAIL("waiting for %s: %d (%s)", what, r, fi_strerror(-r));
}

void wait_ok(struct fid_cq *cq, struct fi_cq_tagged_entry *entry, fi_addr_t *src, const char *what)
{
	wait_ok_ms(cq, entry, src, WAIT_MS, what);
}

void expect_no_completion(struct fid_cq *cq, int ms, const char *what)
{
	struct fi_cq_tagged_entry e;
	struct fi_cq_err_entry err;
	int r = wait_cq(cq, &e, NULL, &err, ms);
	if (r == -FI_ETIMEDOUT)
		return;
	if (r == 0)
		FAIL("%s: unexpected completion ctx=%p flags=%#llx len=%zu tag=%#llx", what,
		     e.op_context, (unsigned long long)e.flags, e.len, (unsigned long long)e.tag);
	FAIL("%s: unexpected error completion %d (%s) ctx=%p", what, r, fi_strerror(-r),
	     err.op_context);
}

void progress_for(struct fid_cq *cq, int ms)
{
	uint64_t deadline = now_ms() + (uint64_t)ms, next_check = now_ms() + 50;
	uint64_t t;
	while ((t = now_ms()) < deadline) {
		int r = cq_progress(cq);
		if (r < 0)
			FAIL("progress: fi_cq_readfrom -> %d (%s)", r, fi_strerror(-r));
		if (t >= next_check) {
			check_peers_alive();
			next_check = t + 50;
		}
		if (r == 0)
			sched_yield();
	}
}

/* ---- multi-process harness ------------------------------------------------ */

#define OOB_WAIT_MS 30000

/* A peer that exited (failed) closes its sockets: notice it instead of
 * waiting for a completion that will never come. */
static void check_peers_alive(void)
{
	if (!g_peer)
		return;
	for (int j = 0; j < g_peer->nranks; j++) {
		char c;
		if (j == g_peer->rank)
			continue;
		ssize_t n = recv(g_peer->sock[j], &c, 1, MSG_PEEK | MSG_DONTWAIT);
		if (n == 0)
			FAIL("rank %d exited (it failed?) while we were waiting", j);
	}
}

static void write_all(struct peer *p, int rank, const void *buf, size_t len)
{
	const char *b = buf;
	while (len) {
		ssize_t n = send(p->sock[rank], b, len, MSG_NOSIGNAL);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			FAIL("out-of-band send to rank %d: %s (did it fail?)", rank,
			     n < 0 ? strerror(errno) : "closed");
		b += n;
		len -= (size_t)n;
	}
}

void oob_send(struct peer *p, int rank, const void *buf, size_t len)
{
	write_all(p, rank, buf, len);
}

void oob_recv(struct peer *p, int rank, void *buf, size_t len)
{
	char *b = buf;
	uint64_t deadline = now_ms() + OOB_WAIT_MS;
	while (len) {
		struct pollfd pfd = { .fd = p->sock[rank], .events = POLLIN };
		int r = poll(&pfd, 1, 0);
		if (r < 0 && errno != EINTR)
			FAIL("poll: %s", strerror(errno));
		if (r > 0) {
			ssize_t n = read(p->sock[rank], b, len);
			if (n < 0 && errno == EINTR)
				continue;
			if (n <= 0)
				FAIL("rank %d went away before answering (it failed)", rank);
			b += n;
			len -= (size_t)n;
			continue;
		}
		if (now_ms() > deadline)
			FAIL("rank %d did not answer within %d ms", rank, OOB_WAIT_MS);
		if (p->l.cq) {
			int pr = cq_progress(p->l.cq);
			if (pr < 0)
				FAIL("progress: %d (%s)", pr, fi_strerror(-pr));
			if (pr == 0)
				sched_yield();
		} else {
			poll(&pfd, 1, 1);
		}
	}
}

void barrier(struct peer *p)
{
	char c = 'b';
	for (int j = 0; j < p->nranks; j++)
		if (j != p->rank)
			oob_send(p, j, &c, 1);
	for (int j = 0; j < p->nranks; j++) {
		if (j == p->rank)
			continue;
		oob_recv(p, j, &c, 1);
		if (c != 'b')
			FAIL("barrier: out-of-band stream from rank %d out of step", j);
	}
}

void barrier_quiet(struct peer *p)
{
	struct fid_cq *cq = p->l.cq;
	p->l.cq = NULL; /* oob_recv then just sleeps between polls */
	barrier(p);
	p->l.cq = cq;
}

static void __attribute__((noreturn))
child_main(const char *name, int rank, int n, int socks[MAX_RANKS][MAX_RANKS][2],
	   const struct lnx_opts *opts, role_fn role, void *arg)
{
	struct peer p;
	char id[128];

	g_in_child = 1;
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (n == 2)
		snprintf(g_role, sizeof(g_role), "%s %c", name, 'A' + rank);
	else
		snprintf(g_role, sizeof(g_role), "%s %d", name, rank);

	memset(&p, 0, sizeof(p));
	p.rank = rank;
	p.nranks = n;
	p.opts = opts;
	for (int i = 0; i < n; i++) {
		for (int j = i + 1; j < n; j++) {
			if (i == rank) {
				p.sock[j] = socks[i][j][0];
				close(socks[i][j][1]);
			} else if (j == rank) {
				p.sock[i] = socks[i][j][1];
				close(socks[i][j][0]);
			} else {
				close(socks[i][j][0]);
				close(socks[i][j][1]);
			}
		}
	}
	p.sock[rank] = -1;
	g_peer = &p;
	if (g_child_setup)
		g_child_setup(rank);

	if (opts && opts->distinct_nodes) {
		/* distinct_nodes > 1: that many consecutive ranks per node. */
		snprintf(id, sizeof(id), "lnx-test-node-%d-%d", (int)getppid(),
			 rank / (opts->distinct_nodes > 1 ? opts->distinct_nodes : 1));
		setenv("FI_LNX_NODE_ID", id, 1);
	}

	lnx_open(&p.l, opts);

	/* Exchange names: everyone sends first (tiny, fits in socket buffers),
	 * then reads. */
	uint32_t len = (uint32_t)p.l.namelen;
	uint8_t names[MAX_RANKS][ADDR_MAX];
	for (int j = 0; j < n; j++) {
		if (j == rank)
			continue;
		oob_send(&p, j, &len, sizeof(len));
		oob_send(&p, j, p.l.name, len);
	}
	memcpy(names[rank], p.l.name, len);
	for (int j = 0; j < n; j++) {
		uint32_t plen;
		if (j == rank)
			continue;
		oob_recv(&p, j, &plen, sizeof(plen));
		EXPECT(plen == len, "rank %d address is %u bytes, ours %u", j, plen, len);
		oob_recv(&p, j, names[j], plen);
	}

	/* Insert ourselves first, then the others in rank order. */
	int order[MAX_RANKS], k = 0;
	uint8_t blob[MAX_RANKS * ADDR_MAX];
	fi_addr_t out[MAX_RANKS];
	order[k++] = rank;
	for (int j = 0; j < n; j++)
		if (j != rank)
			order[k++] = j;
	for (int i = 0; i < n; i++) {
		memcpy(blob + (size_t)i * len, names[order[i]], len);
		out[i] = FI_ADDR_NOTAVAIL;
	}
	CHECK_RC(fi_av_insert(p.l.av, blob, (size_t)n, out, 0, NULL), n);
	for (int i = 0; i < n; i++) {
		EXPECT(out[i] != FI_ADDR_NOTAVAIL, "fi_av_insert gave FI_ADDR_NOTAVAIL for rank %d",
		       order[i]);
		p.addr[order[i]] = out[i];
	}
	/* LNX_TEST_EXPECT_ADDR: a text every peer's fi_av_straddr must contain
	 * (e.g. "@[::1]:" to check that the network core runs over IPv6). */
	const char *want = getenv("LNX_TEST_EXPECT_ADDR");
	if (want && *want) {
		char str[256];
		size_t slen = sizeof(str);
		const char *s = fi_av_straddr(p.l.av, names[rank], str, &slen);
		EXPECT(s && strstr(s, want), "address %s lacks \"%s\"", s ? s : "(null)", want);
	}

	barrier(&p);
	role(&p, arg);
	barrier(&p);
	lnx_close(&p.l);
	test_after_close();
	fflush(stdout);
	_exit(0);
}

/* A test program may define it to check what closing left behind. */
__attribute__((weak)) void test_after_close(void)
{
}

int run_group(const char *name, const struct lnx_opts *opts, int n, const role_fn *roles, void *arg,
	      int timeout_s)
{
	int socks[MAX_RANKS][MAX_RANKS][2];
	pid_t pids[MAX_RANKS];
	int status[MAX_RANKS], done[MAX_RANKS], killed[MAX_RANKS];
	int failed = 0;

	if (n < 2 || n > MAX_RANKS)
		FAIL("run_group: %d ranks", n);
	printf("=== %s (%d processes, links %s%s)\n", name, n,
	       opts && opts->links ? opts->links : "<env>",
	       opts && opts->distinct_nodes ? ", distinct node ids" : "");
	for (int i = 0; i < n; i++)
		for (int j = i + 1; j < n; j++)
			if (socketpair(AF_UNIX, SOCK_STREAM, 0, socks[i][j]))
				FAIL("socketpair: %s", strerror(errno));
	fflush(stdout);
	fflush(stderr);
	for (int r = 0; r < n; r++) {
		pids[r] = fork();
		if (pids[r] < 0)
			FAIL("fork: %s", strerror(errno));
		if (pids[r] == 0)
			child_main(name, r, n, socks, opts, roles[r], arg);
		done[r] = killed[r] = 0;
	}
	for (int i = 0; i < n; i++)
		for (int j = i + 1; j < n; j++) {
			close(socks[i][j][0]);
			close(socks[i][j][1]);
		}

	uint64_t deadline = now_ms() + (uint64_t)timeout_s * 1000, grace = 0;
	int left = n;
	while (left > 0) {
		for (int r = 0; r < n; r++) {
			if (done[r])
				continue;
			pid_t w = waitpid(pids[r], &status[r], WNOHANG);
			if (w == pids[r]) {
				done[r] = 1;
				left--;
				if (!WIFEXITED(status[r]) || WEXITSTATUS(status[r]) != 0) {
					failed = 1;
					if (!grace)
						grace = now_ms() + 2000;
				}
			}
		}
		if (left == 0)
			break;
		uint64_t t = now_ms();
		if (t > deadline || (grace && t > grace)) {
			for (int r = 0; r < n; r++) {
				if (done[r])
					continue;
				kill(pids[r], SIGKILL);
				waitpid(pids[r], &status[r], 0);
				done[r] = killed[r] = 1;
				failed = 1;
			}
			break;
		}
		usleep(5000);
	}
	for (int r = 0; r < n; r++) {
		const char *who = n == 2 ? (r ? "B" : "A") : NULL;
		char rn[16];
		if (!who) {
			snprintf(rn, sizeof(rn), "rank %d", r);
			who = rn;
		}
		if (killed[r])
			printf("    %s %s: KILLED (%s)\n", name, who,
			       grace ? "its peer failed" : "timed out");
		else if (WIFSIGNALED(status[r]))
			printf("    %s %s: died with signal %d\n", name, who, WTERMSIG(status[r]));
		else if (WEXITSTATUS(status[r]))
			printf("    %s %s: exit %d\n", name, who, WEXITSTATUS(status[r]));
	}
	printf("=== %s: %s\n", name, failed ? "FAILED" : "ok");
	fflush(stdout);
	return failed;
}

int run_pair(const char *name, const struct lnx_opts *opts, role_fn a, role_fn b, void *arg)
{
	role_fn roles[2] = { a, b };
	return run_group(name, opts, 2, roles, arg, PAIR_TIMEOUT_S);
}

void msg_test_opts(int argc, char **argv, struct lnx_opts *o)
{
	const char *cfg = argc > 1 ? argv[1] : "shm";
	memset(o, 0, sizeof(*o));
	if (!strcmp(cfg, "shm")) {
		o->links = LINK_SHM;
	} else if (!strcmp(cfg, "link")) {
		o->links = LINK_TCP;
	} else if (!strcmp(cfg, "tcp")) {
		o->links = LINK_TCP;
		o->distinct_nodes = 1;
	} else {
		o->links = cfg; /* a literal FI_LNX_PROV_LINKS value */
		o->distinct_nodes = argc > 2 && !strcmp(argv[2], "distinct");
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
}

static int selected(const char *name)
{
	const char *only = getenv("LNX_TEST_ONLY");
	if (!only || !*only)
		return 1;
	size_t n = strlen(name);
	for (const char *s = only; *s;) {
		const char *e = strchr(s, ',');
		size_t l = e ? (size_t)(e - s) : strlen(s);
		if (l == n && !strncmp(s, name, n))
			return 1;
		if (!e)
			break;
		s = e + 1;
	}
	return 0;
}

int run_subtests(int argc, char **argv, const struct subtest *t, size_t n)
{
	struct lnx_opts base;
	int failed = 0, ran = 0;
	char failures[4096] = "";

	msg_test_opts(argc, argv, &base);
	for (size_t i = 0; i < n; i++) {
		struct lnx_opts o = base;
		if (!selected(t[i].name))
			continue;
		o.caps = t[i].opt_caps;
		o.mr_mode = t[i].mr_mode;
		o.counters = t[i].counters;
		int r;
		if (t[i].nranks > 2) {
			role_fn roles[MAX_RANKS];
			roles[0] = t[i].a;
			for (int k = 1; k < t[i].nranks; k++)
				roles[k] = t[i].b;
			r = run_group(t[i].name, &o, t[i].nranks, roles, NULL, PAIR_TIMEOUT_S);
		} else {
			r = run_pair(t[i].name, &o, t[i].a, t[i].b, NULL);
		}
		ran++;
		if (r) {
			failed++;
			size_t l = strlen(failures);
			snprintf(failures + l, sizeof(failures) - l, " %s", t[i].name);
		}
	}
	printf("\n%s: %d/%d cases passed (links %s%s)%s%s\n", argv[0], ran - failed, ran,
	       base.links, base.distinct_nodes ? ", distinct node ids" : "",
	       failed ? "; failed:" : "", failures);
	return failed || !ran ? 1 : 0;
}

int count_fds(void)
{
	int n = 0;
	DIR *d = opendir("/proc/self/fd");
	if (!d)
		FAIL("opendir /proc/self/fd");
	for (struct dirent *e; (e = readdir(d));)
		if (e->d_name[0] != '.')
			n++;
	closedir(d);
	return n;
}

void xwrite(int fd, const void *b, size_t n)
{
	if (write(fd, b, n) != (ssize_t)n)
		FAIL("write to the test driver: %s", strerror(errno));
}

void xread(int fd, void *b, size_t n)
{
	size_t got = 0;
	while (got < n) {
		ssize_t r = read(fd, (char *)b + got, n - got);
		if (r <= 0)
			FAIL("read from the test driver: %s", r ? strerror(errno) : "EOF");
		got += (size_t)r;
	}
}

void wait_readable(int sock, struct fid_cq *cq)
{
	struct pollfd pfd = { .fd = sock, .events = POLLIN };
	uint64_t dl = now_ms() + 60000;
	while (poll(&pfd, 1, 0) == 0) {
		int r = cq_progress(cq);
		if (r < 0)
			FAIL("progress: %d (%s)", r, fi_strerror(-r));
		if (now_ms() > dl)
			FAIL("nothing from the test driver in 60 s");
		if (r == 0)
			sched_yield();
	}
}

pid_t fork_server(void (*serve)(int sock, void *arg), void *arg, int *sock, uint8_t *name,
		  uint32_t *len)
{
	int sv[2];
	if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv))
		FAIL("socketpair: %s", strerror(errno));
	fflush(stdout);
	pid_t s = fork();
	if (s < 0)
		FAIL("fork: %s", strerror(errno));
	if (s == 0) {
		close(sv[1]);
		serve(sv[0], arg);
		fflush(stdout);
		_exit(0);
	}
	close(sv[0]);
	xread(sv[1], len, sizeof(*len));
	if (*len > ADDR_MAX)
		FAIL("server name of %u bytes", *len);
	xread(sv[1], name, *len);
	*sock = sv[1];
	return s;
}
