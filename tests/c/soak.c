/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * soak: randomized mixed traffic across 8 processes on 2 simulated nodes
 * (4 per FI_LNX_NODE_ID: shm inside a node, tcp;ofi_rxm between them),
 * while peers are stopped (SIGSTOP/SIGCONT), killed (SIGKILL) and replaced.
 *
 * Usage: soak [seconds]    (default $LNX_SOAK_SECONDS, else 75)
 *
 * Each worker keeps tagged and untagged any-source receives of 1 MiB
 * posted and up to SEND_WINDOW sends of 0 B to 1 MiB in flight to random
 * peers. A message of 32 bytes or more carries a header (magic, length,
 * seed, sender) and a pattern derived from the seed; a smaller one a
 * pattern of its length; a tagged one's tag is derived from its seed.
 * Every receive reported successful is checked byte for byte, with its
 * length and tag: one wrong byte fails the run. Sends and receives that
 * fail are counted (a killed peer's operations fail); a worker must never
 * crash or hang.
 *
 * The parent (which never loads libfabric) stops a random worker for 1 to
 * 4 s, or kills one and starts a replacement in its slot (a new address,
 * which it sends to everyone), every CHAOS_MS. It samples every worker's
 * RSS and open fds and the /dev/shm regions of all workers it started,
 * and at the end checks that the long-lived workers stayed bounded: peak
 * RSS at most twice (plus 64 MiB) and fds at most 32 above what they had
 * once warm, /dev/shm at most twice (plus 64 MiB) the warm figure. Then
 * every worker must drain (its sends complete) and exit cleanly.
 */
#include <dirent.h>
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include "common.h"

#define NW	    8
#define PER_NODE    4
#define MAXMSG	    (1u << 20)
#define SEND_WINDOW 8
#define NRECV	    8 /* of each kind */
#define CHAOS_MS    3000
#define MAGIC	    0x4b414f53u

/* ---- worker ---------------------------------------------------------------- */

struct sctx {
	struct fi_context2 ctx;
	uint8_t *buf;
	int busy;
	size_t len;
};
struct rctx {
	struct fi_context2 ctx;
	uint8_t *buf;
	int tagged;
};

static struct {
	int slot, inc, fd;
	struct lnx l;
	fi_addr_t addr[NW];
	int valid[NW];
	struct sctx s[SEND_WINDOW];
	struct rctx r[2 * NRECV];
	uint64_t rmsgs, rbytes, rerrs, smsgs, sbytes, serrs, sfail_now;
	char line[4096];
	size_t linelen;
	int draining;
	uint64_t rng;
} W;

static uint64_t rnd(void)
{
	W.rng ^= W.rng << 13;
	W.rng ^= W.rng >> 7;
	W.rng ^= W.rng << 17;
	return W.rng;
}

static void wsend(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void wsend(const char *fmt, ...)
{
	char b[1024];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(b, sizeof(b), fmt, ap);
	va_end(ap);
	if (write(W.fd, b, (size_t)n) != n)
		_exit(3); /* the parent is gone */
}

static void post_recv(struct rctx *r)
{
	ssize_t ret;
	do {
		if (r->tagged)
			ret = fi_trecv(W.l.ep, r->buf, MAXMSG, NULL, FI_ADDR_UNSPEC, 0, ~0ULL,
				       &r->ctx);
		else
			ret = fi_recv(W.l.ep, r->buf, MAXMSG, NULL, FI_ADDR_UNSPEC, &r->ctx);
		if (ret == -FI_EAGAIN)
			fi_cq_read(W.l.cq, NULL, 0);
	} while (ret == -FI_EAGAIN);
	if (ret)
		FAIL("posting a receive: %zd (%s)", ret, fi_strerror((int)-ret));
}

static size_t pick_size(void)
{
	uint64_t x = rnd() % 100;
	if (x < 50)
		return rnd() % 257;
	if (x < 80)
		return 257 + rnd() % (16384 - 257);
	if (x < 95)
		return 16384 + rnd() % (131072 - 16384);
	return 131072 + rnd() % (MAXMSG - 131072 + 1);
}

static uint64_t tag_of(uint64_t seed)
{
	return seed & 0x0000ffffffffffffULL;
}

static void fill_msg(uint8_t *b, size_t len, uint64_t seed)
{
	if (len < 32) {
		fill_pattern(b, len, len + 1);
		return;
	}
	uint32_t h[2] = { MAGIC, (uint32_t)len };
	uint64_t src = (uint64_t)W.slot << 32 | (uint32_t)W.inc;
	memcpy(b, h, 8);
	memcpy(b + 8, &seed, 8);
	memcpy(b + 16, &src, 8);
	memset(b + 24, 0, 8);
	fill_pattern(b + 32, len - 32, seed);
}

static void check_msg(const uint8_t *b, size_t len, int tagged, uint64_t tag)
{
	if (len < 32) {
		if (check_pattern(b, len, len + 1) >= 0)
			FAIL("CORRUPT: %zu-byte message differs from its pattern", len);
		return;
	}
	uint32_t h[2];
	uint64_t seed, src;
	memcpy(h, b, 8);
	memcpy(&seed, b + 8, 8);
	memcpy(&src, b + 16, 8);
	if (h[0] != MAGIC || h[1] != len)
		FAIL("CORRUPT: header magic %#x len %u, completion len %zu", h[0], h[1], len);
	if (tagged && tag != tag_of(seed))
		FAIL("CORRUPT: tag %#lx, message says %#lx", (unsigned long)tag,
		     (unsigned long)tag_of(seed));
	long long off = check_pattern(b + 32, len - 32, seed);
	if (off >= 0)
		FAIL("CORRUPT: %zu-byte message from slot %u inc %u differs at byte %lld", len,
		     (unsigned)(src >> 32), (unsigned)src, off + 32);
}

static void try_send(void)
{
	int live[NW], n = 0;
	for (int i = 0; i < NW; i++)
		if (i != W.slot && W.valid[i])
			live[n++] = i;
	if (!n)
		return;
	for (int k = 0; k < SEND_WINDOW; k++) {
		struct sctx *s = &W.s[k];
		if (s->busy)
			continue;
		int dst = live[rnd() % (uint64_t)n];
		size_t len = pick_size();
		uint64_t seed = rnd() | 1;
		int tagged = rnd() & 1;
		fill_msg(s->buf, len, seed);
		ssize_t ret = tagged ? fi_tsend(W.l.ep, s->buf, len, NULL, W.addr[dst],
						tag_of(seed), &s->ctx) :
				       fi_send(W.l.ep, s->buf, len, NULL, W.addr[dst], &s->ctx);
		if (ret == -FI_EAGAIN)
			return;
		if (ret) {
			W.sfail_now++; /* e.g. a killed peer: -FI_EIO at once */
			continue;
		}
		s->busy = 1;
		s->len = len;
	}
}

static int sends_busy(void)
{
	int n = 0;
	for (int k = 0; k < SEND_WINDOW; k++)
		n += W.s[k].busy;
	return n;
}

static void completion(void *ctx, int err, size_t len, uint64_t flags, uint64_t tag)
{
	for (int k = 0; k < SEND_WINDOW; k++)
		if (ctx == &W.s[k].ctx) {
			if (err) {
				W.serrs++;
			} else {
				W.smsgs++;
				W.sbytes += W.s[k].len;
			}
			W.s[k].busy = 0;
			return;
		}
	for (int k = 0; k < 2 * NRECV; k++)
		if (ctx == &W.r[k].ctx) {
			if (err) {
				W.rerrs++;
			} else {
				if (!!(flags & FI_TAGGED) != W.r[k].tagged)
					FAIL("CORRUPT: completion flags %#lx for a %s receive",
					     (unsigned long)flags,
					     W.r[k].tagged ? "tagged" : "untagged");
				check_msg(W.r[k].buf, len, W.r[k].tagged, tag);
				W.rmsgs++;
				W.rbytes += len;
			}
			post_recv(&W.r[k]);
			return;
		}
	FAIL("completion for an unknown context %p", ctx);
}

static void drain_cq(void)
{
	struct fi_cq_tagged_entry e[16];
	ssize_t n = fi_cq_read(W.l.cq, e, 16);
	if (n > 0) {
		for (ssize_t i = 0; i < n; i++)
			completion(e[i].op_context, 0, e[i].len, e[i].flags, e[i].tag);
	} else if (n == -FI_EAVAIL) {
		struct fi_cq_err_entry ee;
		memset(&ee, 0, sizeof(ee));
		if (fi_cq_readerr(W.l.cq, &ee, 0) == 1)
			completion(ee.op_context, ee.err ? ee.err : FI_EIO, 0, ee.flags, 0);
	} else if (n != -FI_EAGAIN) {
		FAIL("fi_cq_read: %zd (%s)", n, fi_strerror((int)-n));
	}
}

static int unhex(char c)
{
	return c <= '9' ? c - '0' : c - 'a' + 10;
}

static void control_line(char *ln)
{
	int slot;
	char hex[2 * ADDR_MAX + 1];
	if (sscanf(ln, "ADDR %d %2048s", &slot, hex) == 2) {
		uint8_t a[ADDR_MAX];
		size_t n = strlen(hex) / 2;
		for (size_t i = 0; i < n; i++)
			a[i] = (uint8_t)(unhex(hex[2 * i]) << 4 | unhex(hex[2 * i + 1]));
		if (W.valid[slot]) {
			W.valid[slot] = 0;
			CHECK(fi_av_remove(W.l.av, &W.addr[slot], 1, 0));
		}
		CHECK_RC(fi_av_insert(W.l.av, a, 1, &W.addr[slot], 0, NULL), 1);
		W.valid[slot] = 1;
	} else if (!strncmp(ln, "DRAIN", 5)) {
		W.draining = 1;
	} else if (!strncmp(ln, "EXIT", 4)) {
		W.draining = 2;
	}
}

static void read_control(void)
{
	for (;;) {
		ssize_t n = recv(W.fd, W.line + W.linelen, sizeof(W.line) - 1 - W.linelen,
				 MSG_DONTWAIT);
		if (n == 0)
			_exit(3); /* the parent is gone */
		if (n < 0)
			return;
		W.linelen += (size_t)n;
		W.line[W.linelen] = 0;
		char *nl;
		while ((nl = strchr(W.line, '\n'))) {
			*nl = 0;
			control_line(W.line);
			size_t used = (size_t)(nl + 1 - W.line);
			memmove(W.line, nl + 1, W.linelen - used + 1);
			W.linelen -= used;
		}
	}
}

static void stats_line(const char *kind)
{
	wsend("%s %lu %lu %lu %lu %lu %lu %lu\n", kind, (unsigned long)W.rmsgs,
	      (unsigned long)W.rbytes, (unsigned long)W.rerrs, (unsigned long)W.smsgs,
	      (unsigned long)W.sbytes, (unsigned long)W.serrs, (unsigned long)W.sfail_now);
}

/* Prints where libfabric and lnx are mapped, once the endpoint is open: a
 * worker that dies of a signal inside a core prints the faulting pc (the
 * Go runtime's report), and pc minus the base is the offset to look up
 * in the library (objdump -d), which has no symbols in Debian. */
static void note_bases(void)
{
	FILE *f = fopen("/proc/self/maps", "r");
	char line[512];
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		unsigned long lo, off;
		char path[256] = "";
		if (sscanf(line, "%lx-%*x %*s %lx %*s %*s %255s", &lo, &off, path) == 3 &&
		    off == 0 && (strstr(path, "libfabric.so") || strstr(path, "liblnx-fi.so")))
			note("%s mapped at %#lx", path, lo);
	}
	fclose(f);
}

static void worker(int slot, int inc, int fd, const char *node)
{
	snprintf(g_role, sizeof(g_role), "soak w%d.%d", slot, inc);
	setenv("FI_LNX_NODE_ID", node, 1);
	W.slot = slot, W.inc = inc, W.fd = fd;
	W.rng = (uint64_t)getpid() * 0x9e3779b97f4a7c15ULL | 1;
	struct lnx_opts o = { .links = LINK_TCP };
	lnx_open(&W.l, &o);
	note_bases();
	for (int k = 0; k < SEND_WINDOW; k++)
		W.s[k].buf = xmalloc(MAXMSG);
	for (int k = 0; k < 2 * NRECV; k++) {
		W.r[k].buf = xmalloc(MAXMSG);
		W.r[k].tagged = k < NRECV;
		post_recv(&W.r[k]);
	}
	char hex[2 * ADDR_MAX + 1];
	for (size_t i = 0; i < W.l.namelen; i++)
		sprintf(hex + 2 * i, "%02x", W.l.name[i]);
	wsend("HELLO %s\n", hex);
	uint64_t next_stat = now_ms() + 500, drain_deadline = 0;
	int drained_sent = 0;
	for (unsigned it = 0;; it++) {
		drain_cq();
		if (!W.draining)
			try_send();
		if ((it & 31) == 0) {
			read_control();
			uint64_t t = now_ms();
			if (t >= next_stat) {
				stats_line("STAT");
				next_stat = t + 500;
			}
			if (W.draining == 1 && !drained_sent) {
				if (!drain_deadline)
					drain_deadline = t + 60000;
				if (!sends_busy()) {
					wsend("DRAINED\n");
					drained_sent = 1;
				} else if (t > drain_deadline) {
					FAIL("HANG: %d sends still outstanding 60 s after the "
					     "drain began",
					     sends_busy());
				}
			}
			if (W.draining == 2)
				break;
		}
	}
	lnx_close(&W.l); /* posted receives are cancelled; every close must succeed */
	stats_line("FINAL");
	_exit(0);
}

/* ---- parent ---------------------------------------------------------------- */

struct wk {
	pid_t pid;
	int fd, inc, stopped, alive;
	uint64_t born, stop_until;
	char addr[2 * ADDR_MAX + 1];
	char buf[8192];
	size_t len;
	uint64_t st[7]; /* latest STAT */
	int drained;
	long rss_warm, rss_peak, fd_warm, fd_peak; /* kB, count; -1 = not yet */
};

static struct wk wk[NW];
static uint64_t dead_st[7]; /* stats of killed incarnations (their last STAT) */
static pid_t all_pids[4096];
static int nall;
static char node_id[2][64];

static long proc_rss_kb(pid_t pid)
{
	char p[64], l[256];
	snprintf(p, sizeof(p), "/proc/%d/status", (int)pid);
	FILE *f = fopen(p, "r");
	long v = -1;
	if (!f)
		return -1;
	while (fgets(l, sizeof(l), f))
		if (!strncmp(l, "VmRSS:", 6))
			v = atol(l + 6);
	fclose(f);
	return v;
}

static long proc_fds(pid_t pid)
{
	char p[64];
	snprintf(p, sizeof(p), "/proc/%d/fd", (int)pid);
	DIR *d = opendir(p);
	long n = 0;
	struct dirent *e;
	if (!d)
		return -1;
	while ((e = readdir(d)))
		n += e->d_name[0] != '.';
	closedir(d);
	return n;
}

/* Bytes of /dev/shm regions (lnx-<pid>-*) of every worker we started. */
static long long shm_bytes(int *files)
{
	DIR *d = opendir("/dev/shm");
	long long sum = 0;
	struct dirent *e;
	*files = 0;
	if (!d)
		return 0;
	while ((e = readdir(d))) {
		int pid;
		if (sscanf(e->d_name, "lnx-%d-", &pid) != 1)
			continue;
		for (int i = 0; i < nall; i++)
			if (all_pids[i] == pid) {
				char p[512];
				struct stat st;
				snprintf(p, sizeof(p), "/dev/shm/%s", e->d_name);
				if (!stat(p, &st)) {
					sum += (long long)st.st_blocks * 512;
					(*files)++;
				}
				break;
			}
	}
	closedir(d);
	return sum;
}

static void psend(int i, const char *s)
{
	if (wk[i].alive && write(wk[i].fd, s, strlen(s)) < 0) {
		/* it died; the reaper notices */
	}
}

static void spawn(int slot)
{
	int sv[2];
	CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv));
	fflush(stdout);
	fflush(stderr);
	pid_t pid = fork();
	if (pid < 0)
		FAIL("fork: %s", strerror(errno));
	if (pid == 0) {
		close(sv[0]);
		for (int i = 0; i < NW; i++)
			if (wk[i].alive)
				close(wk[i].fd);
		worker(slot, wk[slot].inc, sv[1], node_id[slot / PER_NODE]);
	}
	close(sv[1]);
	struct wk *w = &wk[slot];
	w->pid = pid;
	w->fd = sv[0];
	w->alive = 1;
	w->stopped = 0;
	w->born = now_ms();
	w->len = 0;
	w->addr[0] = 0;
	w->drained = 0;
	memset(w->st, 0, sizeof(w->st));
	w->rss_warm = w->rss_peak = w->fd_warm = w->fd_peak = -1;
	all_pids[nall++] = pid;
}

/* Reads what worker i wrote; returns 0 if it hung up. */
static int pread_lines(int i)
{
	struct wk *w = &wk[i];
	ssize_t n = recv(w->fd, w->buf + w->len, sizeof(w->buf) - 1 - w->len, MSG_DONTWAIT);
	if (n == 0)
		return 0;
	if (n < 0)
		return 1;
	w->len += (size_t)n;
	w->buf[w->len] = 0;
	char *nl;
	while ((nl = strchr(w->buf, '\n'))) {
		*nl = 0;
		unsigned long v[7];
		if (!strncmp(w->buf, "HELLO ", 6)) {
			size_t n = strlen(w->buf + 6);
			if (n >= sizeof(w->addr))
				n = sizeof(w->addr) - 1;
			memmove(w->addr, w->buf + 6, n);
			w->addr[n] = 0;
		} else if (sscanf(w->buf, "%*s %lu %lu %lu %lu %lu %lu %lu", &v[0], &v[1], &v[2],
				  &v[3], &v[4], &v[5], &v[6]) == 7) {
			for (int k = 0; k < 7; k++)
				w->st[k] = v[k];
		} else if (!strcmp(w->buf, "DRAINED")) {
			w->drained = 1;
		}
		size_t used = (size_t)(nl + 1 - w->buf);
		memmove(w->buf, nl + 1, w->len - used + 1);
		w->len -= used;
	}
	return 1;
}

static void wait_hello(int i)
{
	uint64_t dl = now_ms() + 60000;
	while (!wk[i].addr[0]) {
		struct pollfd pf = { wk[i].fd, POLLIN, 0 };
		poll(&pf, 1, 100);
		if (!pread_lines(i))
			FAIL("worker %d died before saying hello", i);
		EXPECT(now_ms() < dl, "worker %d never said hello", i);
	}
}

static void send_addr(int to, int of)
{
	char l[2 * ADDR_MAX + 32];
	snprintf(l, sizeof(l), "ADDR %d %s\n", of, wk[of].addr);
	psend(to, l);
}

static int g_failed;

static void reap(void)
{
	for (int i = 0; i < NW; i++) {
		int status;
		if (!wk[i].alive)
			continue;
		pid_t r = waitpid(wk[i].pid, &status, WNOHANG);
		if (r == wk[i].pid) {
			printf("soak: FAIL worker %d (pid %d) died on its own: %s %d\n", i,
			       (int)wk[i].pid, WIFSIGNALED(status) ? "signal" : "exit",
			       WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status));
			g_failed = 1;
			wk[i].alive = 0;
		}
	}
}

int main(int argc, char **argv)
{
	int secs = argc > 1		      ? atoi(argv[1]) :
		   getenv("LNX_SOAK_SECONDS") ? atoi(getenv("LNX_SOAK_SECONDS")) :
						75;
	snprintf(g_role, sizeof(g_role), "soak");
	setvbuf(stdout, NULL, _IOLBF, 0);
	signal(SIGPIPE, SIG_IGN);
	if (!getenv("FI_LNX_PEER_TIMEOUT"))
		setenv("FI_LNX_PEER_TIMEOUT", "2s", 1);
	for (int n = 0; n < 2; n++)
		snprintf(node_id[n], sizeof(node_id[n]), "soak-%d-node%d", (int)getpid(), n);
	uint64_t rng = (uint64_t)getpid() * 0x2545f4914f6cdd1dULL | 1;
#define PRND() (rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17, rng)

	for (int i = 0; i < NW; i++)
		spawn(i);
	for (int i = 0; i < NW; i++)
		wait_hello(i);
	for (int i = 0; i < NW; i++)
		for (int j = 0; j < NW; j++)
			if (i != j)
				send_addr(i, j);

	uint64_t t0 = now_ms(), end = t0 + (uint64_t)secs * 1000,
		 warm_at = t0 + (uint64_t)secs * 250;
	uint64_t next_chaos = t0 + CHAOS_MS, next_sample = t0 + 1000, next_print = t0 + 10000;
	long stops = 0, kills = 0, rss_peak = 0, fd_peak = 0;
	long long shm_warm = -1, shm_peak = 0;
	int shm_files_peak = 0;
	printf("soak: %d s, %d workers on 2 nodes, chaos every %d ms, FI_LNX_PEER_TIMEOUT=%s\n",
	       secs, NW, CHAOS_MS, getenv("FI_LNX_PEER_TIMEOUT"));
	while (now_ms() < end && !g_failed) {
		struct pollfd pf[NW];
		for (int i = 0; i < NW; i++)
			pf[i] = (struct pollfd){ wk[i].alive ? wk[i].fd : -1, POLLIN, 0 };
		poll(pf, NW, 100);
		for (int i = 0; i < NW; i++)
			if (wk[i].alive)
				pread_lines(i);
		reap();
		uint64_t t = now_ms();
		for (int i = 0; i < NW; i++)
			if (wk[i].alive && wk[i].stopped && t >= wk[i].stop_until) {
				kill(wk[i].pid, SIGCONT);
				wk[i].stopped = 0;
			}
		if (t >= next_chaos) {
			next_chaos = t + CHAOS_MS;
			int i = (int)(PRND() % NW);
			int any_stopped = 0;
			for (int k = 0; k < NW; k++)
				any_stopped |= wk[k].stopped;
			if (wk[i].alive && !wk[i].stopped) {
				if (PRND() % 2 && !any_stopped) {
					wk[i].stopped = 1;
					wk[i].stop_until = t + 1000 + PRND() % 3000;
					kill(wk[i].pid, SIGSTOP);
					stops++;
				} else {
					kill(wk[i].pid, SIGKILL);
					waitpid(wk[i].pid, NULL, 0);
					for (int k = 0; k < 7; k++)
						dead_st[k] += wk[i].st[k];
					close(wk[i].fd);
					wk[i].alive = 0;
					wk[i].inc++;
					kills++;
					spawn(i);
					wait_hello(i);
					for (int j = 0; j < NW; j++)
						if (j != i && wk[j].alive) {
							send_addr(j, i);
							send_addr(i, j);
						}
				}
			}
		}
		if (t >= next_sample) {
			next_sample = t + 1000;
			for (int i = 0; i < NW; i++) {
				struct wk *w = &wk[i];
				if (!w->alive || w->stopped)
					continue;
				long rss = proc_rss_kb(w->pid), fds = proc_fds(w->pid);
				if (rss < 0 || fds < 0)
					continue;
				if (rss > rss_peak)
					rss_peak = rss;
				if (fds > fd_peak)
					fd_peak = fds;
				if (t >= warm_at && t - w->born >= 10000) {
					if (w->rss_warm < 0) {
						w->rss_warm = rss;
						w->fd_warm = fds;
					}
					if (rss > w->rss_peak)
						w->rss_peak = rss;
					if (fds > w->fd_peak)
						w->fd_peak = fds;
				}
			}
			int files;
			long long sb = shm_bytes(&files);
			if (sb > shm_peak)
				shm_peak = sb;
			if (files > shm_files_peak)
				shm_files_peak = files;
			if (t >= warm_at && shm_warm < 0)
				shm_warm = sb;
		}
		if (t >= next_print) {
			next_print = t + 10000;
			uint64_t m = dead_st[0], b = dead_st[1];
			for (int i = 0; i < NW; i++)
				m += wk[i].st[0], b += wk[i].st[1];
			printf("soak: %3lu s: %lu messages, %.1f MiB checked; %ld stops, %ld "
			       "kills; peak RSS %ld MiB, fds %ld\n",
			       (unsigned long)((t - t0) / 1000), (unsigned long)m, b / 1048576.0,
			       stops, kills, rss_peak / 1024, fd_peak);
		}
	}
	/* Continue anyone stopped, then drain. */
	for (int i = 0; i < NW; i++)
		if (wk[i].alive && wk[i].stopped) {
			kill(wk[i].pid, SIGCONT);
			wk[i].stopped = 0;
		}
	/* The bounds, on workers that lived through the warm mark. */
	for (int i = 0; i < NW && !g_failed; i++) {
		struct wk *w = &wk[i];
		if (!w->alive || w->rss_warm < 0)
			continue;
		printf("soak: worker %d (pid %d): RSS %ld -> peak %ld MiB, fds %ld -> peak %ld\n",
		       i, (int)w->pid, w->rss_warm / 1024, w->rss_peak / 1024, w->fd_warm,
		       w->fd_peak);
		if (w->rss_peak > 2 * w->rss_warm + 65536) {
			printf("soak: FAIL worker %d: RSS grew from %ld to %ld MiB\n", i,
			       w->rss_warm / 1024, w->rss_peak / 1024);
			g_failed = 1;
		}
		if (w->fd_peak > w->fd_warm + 32) {
			printf("soak: FAIL worker %d: fds grew from %ld to %ld\n", i, w->fd_warm,
			       w->fd_peak);
			g_failed = 1;
		}
	}
	printf("soak: /dev/shm regions of our workers: warm %.1f MiB, peak %.1f MiB (%d files at "
	       "most)\n",
	       shm_warm / 1048576.0, shm_peak / 1048576.0, shm_files_peak);
	if (shm_warm >= 0 && shm_peak > 2 * shm_warm + (64ll << 20)) {
		printf("soak: FAIL /dev/shm grew from %lld to %lld bytes\n", shm_warm, shm_peak);
		g_failed = 1;
	}
	for (int i = 0; i < NW; i++)
		psend(i, "DRAIN\n");
	uint64_t dl = now_ms() + 90000;
	for (;;) {
		int all = 1;
		for (int i = 0; i < NW; i++)
			if (wk[i].alive) {
				pread_lines(i);
				all &= wk[i].drained;
			}
		reap();
		if (all)
			break;
		if (now_ms() > dl) {
			printf("soak: FAIL HANG: workers did not drain within 90 s:");
			for (int i = 0; i < NW; i++)
				if (wk[i].alive && !wk[i].drained)
					printf(" %d", i);
			printf("\n");
			g_failed = 1;
			break;
		}
		usleep(20000);
	}
	for (int i = 0; i < NW; i++)
		psend(i, "EXIT\n");
	uint64_t m = dead_st[0], b = dead_st[1], re = dead_st[2], sm = dead_st[3], se = dead_st[5],
		 sr = dead_st[6];
	for (int i = 0; i < NW; i++) {
		if (!wk[i].alive)
			continue;
		int status = 0;
		uint64_t xdl = now_ms() + 30000;
		pid_t r;
		while ((r = waitpid(wk[i].pid, &status, WNOHANG)) == 0 && now_ms() < xdl) {
			pread_lines(i);
			usleep(10000);
		}
		pread_lines(i);
		if (r != wk[i].pid) {
			printf("soak: FAIL worker %d did not exit within 30 s\n", i);
			kill(wk[i].pid, SIGKILL);
			waitpid(wk[i].pid, &status, 0);
			g_failed = 1;
		} else if (!WIFEXITED(status) || WEXITSTATUS(status)) {
			printf("soak: FAIL worker %d ended with %s %d\n", i,
			       WIFSIGNALED(status) ? "signal" : "exit",
			       WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status));
			g_failed = 1;
		}
		m += wk[i].st[0], b += wk[i].st[1], re += wk[i].st[2], sm += wk[i].st[3];
		se += wk[i].st[5], sr += wk[i].st[6];
		close(wk[i].fd);
	}
	int files;
	long long left = shm_bytes(&files);
	printf("soak: %s: %d s, %lu messages (%.1f MiB) received and checked, %lu sends completed, "
	       "%lu sends and %lu receives completed with an error and %lu sends refused at the "
	       "call (killed peers), %ld stops, %ld kills; peak RSS %ld MiB, peak fds %ld, "
	       "/dev/shm peak %.1f MiB, %d regions of ours left after exit\n",
	       g_failed ? "FAIL" : "PASS", secs, (unsigned long)m, b / 1048576.0, (unsigned long)sm,
	       (unsigned long)se, (unsigned long)re, (unsigned long)sr, stops, kills,
	       rss_peak / 1024, fd_peak, shm_peak / 1048576.0, files);
	(void)left;
	return g_failed ? 1 : 0;
}
