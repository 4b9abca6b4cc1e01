/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * fault_shm_env: lnx's shm core in hostile environments (namespaces, a
 * small or full /dev/shm). Needs root (unshare, mount); skipped (exit 77)
 * where namespaces cannot be made. Every case runs under its own private
 * tmpfs on /dev/shm, so it neither sees nor disturbs other lnx processes.
 *
 * Usage: fault_shm_env [case ...]   (default: all)
 *
 *  full_shm      /dev/shm of 64 MiB (a container's default), two processes
 *                open their endpoints, then a file fills /dev/shm: eager
 *                and 1 MiB messages still flow both ways with intact data
 *                (no SIGBUS when lnx first touches ring pages), and a
 *                further fi_endpoint fails with -FI_ENOSPC (no SIGBUS)
 *  pidns_data    two processes in distinct PID namespaces (both pid 1)
 *                sharing /dev/shm and node id, links shm+tcp: tagged 8 B
 *                and 1 MiB messages both ways arrive intact, with the right
 *                tag, length and source (shm's process_vm_readv would read
 *                the receiver's own memory: lnx must not use it)
 *  pidns_shm     the same with links "shm" only: a 1 MiB send fails with
 *                -FI_EHOSTUNREACH instead of "completing" with wrong data
 *  pidns_cleanup a process in another PID namespace, whose pid does not
 *                exist in ours, keeps its region while we open endpoints
 *  pidns_stale   the region of a killed process that was pid 1 in its own
 *                PID namespace is removed when a process of the parent
 *                namespace (where pid 1 exists) opens an endpoint
 *  mntns_fallback two processes with the same node id but private
 *                /dev/shm each (shm cannot reach across), links shm+tcp:
 *                messages both ways go over the network core, intact
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include "common.h"

#define BIG  (1u << 20)
#define SKIP 77

/* Mounts a private tmpfs of the given size on /dev/shm in a new mount
 * namespace. Returns 0, or an errno. */
static int private_shm(const char *size)
{
	char opt[64];
	if (unshare(CLONE_NEWNS))
		return errno;
	/* Keep our mounts from propagating out. In a chroot "/" need not be
	 * a mount point: then the /dev/shm mount (or /dev) is made private,
	 * the parent of the tmpfs mounted below. */
	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) &&
	    mount(NULL, "/dev/shm", NULL, MS_REC | MS_PRIVATE, NULL) &&
	    mount(NULL, "/dev", NULL, MS_REC | MS_PRIVATE, NULL))
		return errno;
	snprintf(opt, sizeof(opt), "size=%s,mode=1777", size);
	if (mount("lnxtest", "/dev/shm", "tmpfs", 0, opt))
		return errno;
	return 0;
}

static void wait_exit(pid_t c)
{
	int st;
	while (waitpid(c, &st, 0) < 0)
		if (errno != EINTR)
			_exit(1);
	fflush(stdout);
	_exit(WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st));
}

/* Moves the caller into a new PID namespace: it forks, the parent waits
 * and exits with the child's status, the child returns as pid 1 there
 * (after `burn` throwaway children: as pid burn + 2). */
static void new_pidns(int burn)
{
	if (unshare(CLONE_NEWPID))
		FAIL("unshare(CLONE_NEWPID): %s", strerror(errno));
	fflush(stdout);
	pid_t c = fork();
	if (c < 0)
		FAIL("fork: %s", strerror(errno));
	if (c > 0)
		wait_exit(c);
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (!burn)
		return;
	for (int i = 0; i < burn; i++) {
		pid_t b = fork();
		if (b == 0)
			_exit(0);
		waitpid(b, NULL, 0);
	}
	c = fork();
	if (c < 0)
		FAIL("fork: %s", strerror(errno));
	if (c > 0)
		wait_exit(c);
	prctl(PR_SET_PDEATHSIG, SIGKILL);
}

/* Number of lnx regions in /dev/shm whose name starts with prefix. */
static int count_regions(const char *prefix)
{
	int n = 0;
	DIR *d = opendir("/dev/shm");
	if (!d)
		FAIL("opendir /dev/shm: %s", strerror(errno));
	for (struct dirent *e; (e = readdir(d));)
		if (!strncmp(e->d_name, prefix, strlen(prefix)))
			n++;
	closedir(d);
	return n;
}

static int my_regions(void)
{
	char prefix[32];
	snprintf(prefix, sizeof(prefix), "lnx-%d-", (int)getpid());
	return count_regions(prefix);
}

/* ---- data both ways --------------------------------------------------------- */

/* Waits for the completions of the two operations whose contexts are given,
 * in any order; the receive's entry goes to *rx, its source to *src. */
static void wait_two(struct fid_cq *cq, void *sctx, void *rctx, struct fi_cq_tagged_entry *rx,
		     fi_addr_t *src)
{
	int got_s = 0, got_r = 0;
	while (!got_s || !got_r) {
		struct fi_cq_tagged_entry e;
		fi_addr_t from = FI_ADDR_NOTAVAIL;
		wait_ok(cq, &e, &from, "send or receive");
		if (e.op_context == sctx && !got_s) {
			got_s = 1;
		} else if (e.op_context == rctx && !got_r) {
			got_r = 1;
			*rx = e;
			*src = from;
		} else {
			FAIL("completion for an unknown context %p", e.op_context);
		}
	}
}

static void exchange(struct peer *p, void *arg)
{
	static const size_t sizes[] = { 8, 4096, BIG };
	uint8_t *sbuf = xmalloc(BIG), *rbuf = xmalloc(BIG);
	for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
		size_t n = sizes[k];
		uint64_t tag = 0x500 + k, sseed = 100 * (p->rank + 1) + k,
			 rseed = 100 * (other(p) + 1) + k;
		struct fi_context2 sctx, rctx;
		struct fi_cq_tagged_entry rx;
		fi_addr_t src;
		/* The receive buffer holds other bytes than what will arrive. */
		fill_pattern(rbuf, BIG, 7777 + p->rank);
		fill_pattern(sbuf, n, sseed);
		CHECK(fi_trecv(p->l.ep, rbuf, BIG, NULL, peer_addr(p), tag, 0, &rctx));
		barrier(p);
		POST(p->l.cq, fi_tsend(p->l.ep, sbuf, n, NULL, peer_addr(p), tag, &sctx));
		wait_two(p->l.cq, &sctx, &rctx, &rx, &src);
		EXPECT(rx.len == n, "received %zu bytes, want %zu", rx.len, n);
		EXPECT(rx.tag == tag, "tag %#llx, want %#llx", (unsigned long long)rx.tag,
		       (unsigned long long)tag);
		EXPECT(src == peer_addr(p), "source %llu, want %llu", (unsigned long long)src,
		       (unsigned long long)peer_addr(p));
		EXPECT_PATTERN(rbuf, n, rseed);
		barrier(p);
	}
	free(sbuf);
	free(rbuf);
}

/* ---- full_shm --------------------------------------------------------------- */

static void fill_devshm(void)
{
	int fd = open("/dev/shm/filler", O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0)
		FAIL("create /dev/shm/filler: %s", strerror(errno));
	static char chunk[1 << 20];
	memset(chunk, 0xa5, sizeof(chunk));
	size_t sz = sizeof(chunk);
	while (sz >= 4096) {
		ssize_t w = write(fd, chunk, sz);
		if (w < 0 && errno == ENOSPC)
			sz /= 2;
		else if (w < 0)
			FAIL("write /dev/shm/filler: %s", strerror(errno));
	}
	close(fd);
}

static void full_shm_a(struct peer *p, void *arg)
{
	fill_devshm();
	barrier(p);
	exchange(p, arg);
	/* Many eager messages: every page of the peer's ring gets written. */
	uint8_t buf[4096];
	for (int i = 0; i < 64; i++) {
		struct fi_context2 ctx;
		fill_pattern(buf, sizeof(buf), 900 + i);
		POST(p->l.cq,
		     fi_tsend(p->l.ep, buf, sizeof(buf), NULL, peer_addr(p), 0x900 + i, &ctx));
		wait_ok(p->l.cq, NULL, NULL, "eager send");
	}
	barrier(p);
	barrier(p); /* B tried another endpoint */
	unlink("/dev/shm/filler");
}

static void full_shm_b(struct peer *p, void *arg)
{
	barrier(p); /* A filled /dev/shm */
	exchange(p, arg);
	uint8_t buf[4096];
	for (int i = 0; i < 64; i++) {
		struct fi_context2 ctx;
		struct fi_cq_tagged_entry e;
		memset(buf, 0, sizeof(buf));
		CHECK(fi_trecv(p->l.ep, buf, sizeof(buf), NULL, peer_addr(p), 0x900 + i, 0, &ctx));
		wait_ok(p->l.cq, &e, NULL, "eager receive");
		EXPECT(e.len == sizeof(buf), "len %zu", e.len);
		EXPECT_PATTERN(buf, sizeof(buf), 900 + i);
	}
	barrier(p);
	/* No room for another region: an error, not a crash. */
	struct fid_ep *ep2 = NULL;
	int rc = fi_endpoint(p->l.domain, p->l.info, &ep2, NULL);
	if (rc == 0) {
		fi_close(&ep2->fid);
		FAIL("fi_endpoint succeeded with /dev/shm full");
	}
	CHECK_RC(rc, -FI_ENOSPC);
	barrier(p);
}

/* ---- pidns_* ---------------------------------------------------------------- */

static void setup_pidns(int rank)
{
	new_pidns(0);
}

static void setup_pidns_far(int rank)
{
	/* A is pid 1 of its namespace (its threads take the next few ids);
	 * B is pid 302 of another: a pid that does not exist in A's. */
	new_pidns(rank ? 300 : 0);
}

static void pidns_shm_a(struct peer *p, void *arg)
{
	uint8_t *buf = xmalloc(BIG);
	struct fi_context2 ctx;
	fill_pattern(buf, BIG, 31);
	barrier(p);
	ssize_t rc = fi_tsend(p->l.ep, buf, BIG, NULL, peer_addr(p), 0x31, &ctx);
	char c = 'x';
	oob_send(p, other(p), &c, 1);
	CHECK_RC(rc, -FI_EHOSTUNREACH);
	expect_no_completion(p->l.cq, 200, "a send that failed");
	free(buf);
}

static void pidns_shm_b(struct peer *p, void *arg)
{
	uint8_t *buf = xmalloc(BIG);
	struct fi_context2 ctx;
	fill_pattern(buf, BIG, 32);
	CHECK(fi_trecv(p->l.ep, buf, BIG, NULL, peer_addr(p), 0x31, 0, &ctx));
	barrier(p);
	char c;
	oob_recv(p, other(p), &c, 1);
	CHECK(fi_cancel(&p->l.ep->fid, &ctx));
	free(buf);
}

static void pidns_cleanup_a(struct peer *p, void *arg)
{
	/* Opening endpoints cleans stale regions. */
	struct lnx l2;
	lnx_open(&l2, p->opts);
	lnx_close(&l2);
	char c = 'c';
	oob_send(p, other(p), &c, 1);
	barrier(p);
}

static void pidns_cleanup_b(struct peer *p, void *arg)
{
	char c;
	EXPECT(getpid() > 100, "B is pid %d", (int)getpid());
	EXPECT(my_regions() == 1, "B has %d regions before A's cleanup", my_regions());
	oob_recv(p, other(p), &c, 1);
	EXPECT(my_regions() == 1,
	       "B's live region was removed by a process of another PID namespace");
	barrier(p);
}

/* Opens an lnx endpoint in a new PID namespace as pid 1, lets it be
 * killed, then opens one in ours: the dead one's region must go. */
static int pidns_stale(void)
{
	pid_t x = fork();
	if (x < 0)
		FAIL("fork: %s", strerror(errno));
	if (x == 0) {
		int pfd[2];
		if (pipe(pfd) || unshare(CLONE_NEWPID))
			FAIL("pipe/unshare: %s", strerror(errno));
		pid_t g = fork();
		if (g == 0) {
			struct lnx l;
			struct lnx_opts o = { .links = LINK_SHM };
			snprintf(g_role, sizeof(g_role), "stale G");
			EXPECT(getpid() == 1, "G is pid %d", (int)getpid());
			lnx_open(&l, &o);
			EXPECT(count_regions("lnx-1-") == 1, "G's region is missing");
			char c = 'o';
			if (write(pfd[1], &c, 1) != 1)
				_exit(1);
			for (;;)
				pause();
		}
		char c;
		if (g < 0 || read(pfd[0], &c, 1) != 1)
			FAIL("G did not start");
		kill(g, SIGKILL);
		waitpid(g, NULL, 0);
		_exit(0);
	}
	int st;
	waitpid(x, &st, 0);
	if (!WIFEXITED(st) || WEXITSTATUS(st))
		return 1;
	if (count_regions("lnx-1-") != 1) {
		printf("    the killed process left %d regions, want 1\n", count_regions("lnx-1-"));
		return 1;
	}
	pid_t y = fork();
	if (y == 0) {
		struct lnx l;
		struct lnx_opts o = { .links = LINK_SHM };
		snprintf(g_role, sizeof(g_role), "stale Y");
		lnx_open(&l, &o);
		EXPECT(count_regions("lnx-1-") == 0,
		       "the region of a dead process that was pid 1 in its namespace "
		       "is still there");
		lnx_close(&l);
		_exit(0);
	}
	waitpid(y, &st, 0);
	return !WIFEXITED(st) || WEXITSTATUS(st);
}

/* ---- mntns_fallback ------------------------------------------------------------- */

static void setup_mntns(int rank)
{
	int e = private_shm("64m");
	if (e)
		FAIL("private /dev/shm: %s", strerror(e));
}

/* ---- driver ------------------------------------------------------------------- */

static int run_case(const char *name)
{
	struct lnx_opts shm = { .links = LINK_SHM }, link = { .links = LINK_TCP };
	g_child_setup = NULL;
	if (!strcmp(name, "full_shm")) {
		if (private_shm("64m"))
			return 1;
		return run_pair(name, &shm, full_shm_a, full_shm_b, NULL);
	}
	if (private_shm("512m"))
		return 1;
	if (!strcmp(name, "pidns_data")) {
		g_child_setup = setup_pidns;
		return run_pair(name, &link, exchange, exchange, NULL);
	}
	if (!strcmp(name, "pidns_shm")) {
		g_child_setup = setup_pidns;
		return run_pair(name, &shm, pidns_shm_a, pidns_shm_b, NULL);
	}
	if (!strcmp(name, "pidns_cleanup")) {
		g_child_setup = setup_pidns_far;
		return run_pair(name, &shm, pidns_cleanup_a, pidns_cleanup_b, NULL);
	}
	if (!strcmp(name, "pidns_stale"))
		return pidns_stale();
	if (!strcmp(name, "mntns_fallback")) {
		g_child_setup = setup_mntns;
		return run_pair(name, &link, exchange, exchange, NULL);
	}
	printf("unknown case %s\n", name);
	return 1;
}

/* Whether this process may make mount and PID namespaces and mount tmpfs. */
static int can_unshare(void)
{
	pid_t c = fork();
	if (c == 0) {
		if (private_shm("1m") || unshare(CLONE_NEWPID))
			_exit(1);
		_exit(0);
	}
	int st;
	return c > 0 && waitpid(c, &st, 0) == c && WIFEXITED(st) && WEXITSTATUS(st) == 0;
}

int main(int argc, char **argv)
{
	static const char *all[] = { "full_shm",      "pidns_data",  "pidns_shm",
				     "pidns_cleanup", "pidns_stale", "mntns_fallback" };
	const char **names = all;
	int n = sizeof(all) / sizeof(all[0]), failed = 0;
	char failures[512] = "";

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (!can_unshare()) {
		printf("SKIP: cannot make mount/PID namespaces here (needs root)\n");
		return SKIP;
	}
	if (argc > 1) {
		names = (const char **)argv + 1;
		n = argc - 1;
	}
	for (int i = 0; i < n; i++) {
		fflush(stdout);
		pid_t c = fork();
		if (c < 0)
			FAIL("fork: %s", strerror(errno));
		if (c == 0)
			_exit(run_case(names[i]));
		int st;
		waitpid(c, &st, 0);
		int bad = !WIFEXITED(st) || WEXITSTATUS(st);
		printf("=== case %s: %s\n", names[i], bad ? "FAILED" : "ok");
		if (bad) {
			failed++;
			size_t l = strlen(failures);
			snprintf(failures + l, sizeof(failures) - l, " %s", names[i]);
		}
	}
	printf("\n%s: %d/%d cases passed%s%s\n", argv[0], n - failed, n, failed ? "; failed:" : "",
	       failures);
	return failed ? 1 : 0;
}
