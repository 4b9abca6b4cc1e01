/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * fault_peer_churn: a server whose same-node clients come and go. Each of
 * LNX_CHURN_CLIENTS (default 100) clients, one after the other, starts,
 * sends the server 1 MiB, receives 1 MiB back, closes and exits; the
 * server fi_av_remove's it. The server runs with RLIMIT_NOFILE 40: every
 * client must still get through, with intact data, and the server's open
 * descriptors and shm mappings must stay where they were after the first
 * clients (lnx used to keep a pidfd and a 21 MB region mapping per client
 * ever seen, and refused new clients with -FI_EHOSTUNREACH after 33).
 *
 * With "kill", each client is SIGKILLed after its exchange instead of
 * closing, and the server never fi_av_remove's it: lnx must release the
 * dead peer's pidfd and mapping once it finds the peer gone. Even clients
 * exchange 1 MiB and the server then sends 1 MiB more to the dead client,
 * which must fail (an error return or an error completion, never success
 * or a crash), and a small send after it must fail at once. Odd clients
 * exchange 64 bytes and the server does nothing more with them: it only
 * keeps progressing, and must find them gone on its own.
 *
 * Usage: fault_peer_churn [shm|link] [kill]
 */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>
#include "common.h"

#define BIG	 (1u << 20)
#define FD_LIMIT 40
#define WARMUP	 10
#define SMALL	 64

static int g_kill; /* clients are SIGKILLed, never removed */

/* The size client c exchanges with the server. */
static size_t xfer_len(int c)
{
	return g_kill && (c & 1) ? SMALL : BIG;
}

/* Lines of /proc/self/maps that map an lnx shm region. */
static int shm_mappings(void)
{
	FILE *f = fopen("/proc/self/maps", "r");
	char line[512];
	int n = 0;
	if (!f)
		FAIL("open /proc/self/maps");
	while (fgets(line, sizeof(line), f))
		if (strstr(line, "/dev/shm/lnx-"))
			n++;
	fclose(f);
	return n;
}

/* The server sends to a killed client it never removed: 1 MiB must fail
 * (at once, or with an error completion), then a small send must fail at
 * once: lnx knows the peer is gone. */
static void send_to_dead(struct lnx *l, uint8_t *buf, fi_addr_t addr, int c)
{
	struct fi_context2 ctx;
	struct fi_cq_tagged_entry e;
	struct fi_cq_err_entry err;
	ssize_t r;
	uint64_t dl = now_ms() + WAIT_MS;

	while ((r = fi_tsend(l->ep, buf, BIG, NULL, addr, 7000 + c, &ctx)) == -FI_EAGAIN &&
	       now_ms() < dl)
		cq_progress(l->cq);
	if (r == 0) {
		memset(&err, 0, sizeof(err));
		int w = wait_cq(l->cq, &e, NULL, &err, WAIT_MS);
		EXPECT(w < 0 && w != -FI_ETIMEDOUT && err.op_context == &ctx,
		       "client %d: 1 MiB to the killed client -> %d (context %s)", c, w,
		       err.op_context == &ctx ? "ours" : "not ours");
	} else {
		EXPECT(r < 0 && r != -FI_EAGAIN, "client %d: 1 MiB to the killed client -> %zd", c,
		       r);
	}
	r = fi_tinject(l->ep, buf, 8, addr, 8000 + c);
	EXPECT(r < 0 && r != -FI_EAGAIN, "client %d: 8 B to the killed client -> %zd (%s)", c, r,
	       fi_strerror((int)-r));
}

struct server_args {
	const struct lnx_opts *o;
	int clients;
};

static void server(int sock, void *arg)
{
	const struct lnx_opts *o = ((struct server_args *)arg)->o;
	int clients = ((struct server_args *)arg)->clients;
	struct rlimit rl = { FD_LIMIT, FD_LIMIT };
	struct lnx l;
	uint8_t *buf = xmalloc(BIG);
	int base_fds = 0, base_maps = 0;

	snprintf(g_role, sizeof(g_role), "server");
	if (setrlimit(RLIMIT_NOFILE, &rl))
		FAIL("setrlimit: %s", strerror(errno));
	lnx_open(&l, o);
	uint32_t len = (uint32_t)l.namelen;
	xwrite(sock, &len, sizeof(len));
	xwrite(sock, l.name, len);
	for (int c = 0; c < clients; c++) {
		uint8_t name[ADDR_MAX];
		fi_addr_t addr = FI_ADDR_NOTAVAIL;
		struct fi_context2 ctx;
		struct fi_cq_tagged_entry e;
		fi_addr_t src;
		char d;
		size_t n = xfer_len(c);
		wait_readable(sock, l.cq);
		xread(sock, name, len);
		CHECK_RC(fi_av_insert(l.av, name, 1, &addr, 0, NULL), 1);
		memset(buf, 0, BIG);
		CHECK(fi_trecv(l.ep, buf, n, NULL, addr, c, 0, &ctx));
		/* The client sends only now, to a receive already posted
		 * (late_insert covers messages that come before the insert). */
		xwrite(sock, "g", 1);
		wait_ok(l.cq, &e, &src, "data from a client");
		EXPECT(e.op_context == &ctx && e.len == n && e.tag == (uint64_t)c && src == addr,
		       "client %d: len %zu tag %llu src %llu", c, e.len, (unsigned long long)e.tag,
		       (unsigned long long)src);
		EXPECT_PATTERN(buf, n, 1000 + c);
		fill_pattern(buf, n, 2000 + c);
		POST(l.cq, fi_tsend(l.ep, buf, n, NULL, addr, c, &ctx));
		wait_ok(l.cq, &e, NULL, "data to a client");
		if (!g_kill) {
			xread(sock, &d, 1); /* the client has closed */
			CHECK(fi_av_remove(l.av, &addr, 1, 0));
		} else {
			wait_readable(sock, l.cq);
			xread(sock, &d, 1); /* the client was killed and reaped */
			EXPECT(d == 'k', "driver said %c", d);
			if (!(c & 1))
				send_to_dead(&l, buf, addr, c);
		}
		cq_progress(l.cq);
		if (c == WARMUP - 1) {
			base_fds = count_fds();
			base_maps = shm_mappings();
			note("after %d clients: %d fds, %d shm mappings", WARMUP, base_fds,
			     base_maps);
		}
	}
	int fds = count_fds(), maps = shm_mappings();
	if (g_kill) {
		/* The last odd clients may not be found dead yet: progress as a
		 * server would until they are (bounded, against a hang). */
		uint64_t dl = now_ms() + 30000;
		while ((fds > base_fds + 2 || maps > base_maps + 1) && now_ms() < dl) {
			progress_for(l.cq, 10);
			fds = count_fds();
			maps = shm_mappings();
		}
	}
	note("after %d clients: %d fds, %d shm mappings", clients, fds, maps);
	/* One client's inbound ring may still be draining: a little slack,
	 * against one descriptor and one mapping per client before. */
	EXPECT(fds <= base_fds + 2, "open fds grew from %d to %d over %d clients", base_fds, fds,
	       clients - WARMUP);
	EXPECT(maps <= base_maps + 1, "shm mappings grew from %d to %d over %d clients", base_maps,
	       maps, clients - WARMUP);
	lnx_close(&l);
	free(buf);
}

static void client(int sock, const struct lnx_opts *o, int c, const uint8_t *sname, uint32_t slen)
{
	struct lnx l;
	uint8_t *sbuf = xmalloc(BIG), *rbuf = xmalloc(BIG);
	fi_addr_t srv = FI_ADDR_NOTAVAIL;
	struct fi_context2 sctx, rctx;
	int got_s = 0, got_r = 0;

	snprintf(g_role, sizeof(g_role), "client %d", c);
	lnx_open(&l, o);
	EXPECT(l.namelen == slen, "name length %zu, server's %u", l.namelen, slen);
	CHECK_RC(fi_av_insert(l.av, sname, 1, &srv, 0, NULL), 1);
	size_t n = xfer_len(c);
	fill_pattern(sbuf, n, 1000 + c);
	memset(rbuf, 0, BIG);
	CHECK(fi_trecv(l.ep, rbuf, n, NULL, srv, c, 0, &rctx));
	xwrite(sock, l.name, l.namelen);
	char g;
	xread(sock, &g, 1); /* the server has inserted us */
	POST(l.cq, fi_tsend(l.ep, sbuf, n, NULL, srv, c, &sctx));
	while (!got_s || !got_r) {
		struct fi_cq_tagged_entry e;
		wait_ok(l.cq, &e, NULL, "exchange with the server");
		if (e.op_context == &sctx)
			got_s = 1;
		else if (e.op_context == &rctx) {
			EXPECT(e.len == n && e.tag == (uint64_t)c, "reply len %zu tag %llu", e.len,
			       (unsigned long long)e.tag);
			got_r = 1;
		}
	}
	EXPECT_PATTERN(rbuf, n, 2000 + c);
	if (g_kill) {
		fflush(stdout);
		raise(SIGKILL); /* no close, no exit handlers */
	}
	lnx_close(&l);
	xwrite(sock, "d", 1);
	free(sbuf);
	free(rbuf);
}

int main(int argc, char **argv)
{
	struct lnx_opts o;
	int clients = 100, st;
	const char *n = getenv("LNX_CHURN_CLIENTS");

	setvbuf(stdout, NULL, _IOLBF, 0);
	msg_test_opts(argc, argv, &o);
	g_kill = argc > 2 && !strcmp(argv[2], "kill");
	if (n && atoi(n) > WARMUP)
		clients = atoi(n);
	struct server_args sa = { &o, clients };
	uint32_t slen;
	uint8_t sname[ADDR_MAX];
	int sock;
	pid_t s = fork_server(server, &sa, &sock, sname, &slen);
	int failed = 0;
	for (int c = 0; c < clients && !failed; c++) {
		fflush(stdout);
		pid_t k = fork();
		if (k < 0)
			FAIL("fork: %s", strerror(errno));
		if (k == 0) {
			client(sock, &o, c, sname, slen);
			fflush(stdout);
			_exit(0);
		}
		waitpid(k, &st, 0);
		if (g_kill && WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL) {
			xwrite(sock, "k", 1); /* dead and reaped */
		} else if (!WIFEXITED(st) || WEXITSTATUS(st) || g_kill) {
			printf("client %d failed\n", c);
			failed = 1;
		}
	}
	if (failed)
		kill(s, SIGKILL);
	waitpid(s, &st, 0);
	if (!WIFEXITED(st) || WEXITSTATUS(st)) {
		printf("server failed\n");
		failed = 1;
	}
	printf("%s: %s (%d clients%s, links %s)\n", argv[0], failed ? "FAILED" : "ok", clients,
	       g_kill ? ", killed" : "", o.links);
	return failed;
}
