/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * A peer killed with SIGKILL in the middle of a transfer: the survivor gets
 * an error completion for the affected operation within a bounded time, never
 * a hang or a crash, and its endpoint still talks to another peer afterwards.
 *
 *   sender_dies:   the peer posts a 4 MiB send (rendezvous: the payload stays
 *                  in its memory) and is killed before we receive it; our
 *                  receive must complete with an error.
 *   receiver_dies: we send 4 MiB to a peer that never receives and is killed;
 *                  our send must complete with an error.
 *   ring_full:     we stream eager sends at a killed peer until its ring is
 *                  full; the send call must fail, not return -FI_EAGAIN
 *                  forever.
 * With "device" (and the emulated device in FI_LNX_CUDA_LIB), the same
 * for device memory, whose large messages go by IPC handle over shm:
 *   dev_receiver_dies: our 1 MiB device send waits for an acknowledgement
 *                  that a killed receiver never sends; it must fail.
 *   dev_sender_dies: the peer's device send reached us, then the peer was
 *                  killed; opening its IPC handle fails, and so must our
 *                  receive (into device memory).
 * With "tcp", sender_dies and receiver_dies run between simulated nodes
 * (distinct FI_LNX_NODE_ID), so the network core (tcp;ofi_rxm) carries the
 * transfer; 1.17 rxm never reports a dead peer, so lnx's transport notices
 * by probing within FI_LNX_PEER_TIMEOUT (2s in ctest).
 * Each case then pings a fresh peer to show the survivor is intact.
 *
 * Peers are fresh executions of this program (fork + exec): a Go runtime,
 * which the parent has once lnx is loaded, does not survive a plain fork.
 */
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>
#include "common.h"
#include "devmem.h"

#define BIG (4u << 20)

static void xwrite(int fd, const void *b, size_t n)
{
	if (write(fd, b, n) != (ssize_t)n)
		FAIL("pipe write");
}

static void xread(int fd, void *b, size_t n)
{
	size_t got = 0;
	while (got < n) {
		ssize_t r = read(fd, (char *)b + got, n - got);
		if (r <= 0)
			FAIL("pipe read");
		got += (size_t)r;
	}
}

/* "shm" or "tcp": which core carries the transfers (see main). */
static const char *g_mode = "shm";

enum role { PEER_SEND_BIG, PEER_IDLE, PEER_ECHO, PEER_SEND_DEV };
#define DEVBIG (1u << 20)

/* The peer process: opens an endpoint, swaps names, does its role. */
static void peer_main(enum role role, int rfd, int wfd)
{
	struct lnx l;
	struct lnx_opts o = { .links = LINK_SHM };
	if (!strcmp(g_mode, "tcp")) {
		char id[64];
		snprintf(id, sizeof(id), "fault-peer-%d", (int)getpid());
		setenv("FI_LNX_NODE_ID", id, 1);
		o.links = LINK_TCP;
	}
	lnx_open(&l, &o);
	xwrite(wfd, l.name, l.namelen);
	uint8_t name[LNX_ADDRLEN];
	xread(rfd, name, sizeof(name));
	fi_addr_t peer;
	CHECK_RC(fi_av_insert(l.av, name, 1, &peer, 0, NULL), 1);
	static char big[BIG];
	struct fi_context2 ctx;
	struct fi_cq_tagged_entry e;
	char one = 0;
	switch (role) {
	case PEER_SEND_BIG:
		fill_pattern(big, BIG, 7);
		POST(l.cq, fi_tsend(l.ep, big, BIG, NULL, peer, 0x77, &ctx));
		xwrite(wfd, &one, 1); /* posted: kill me now */
		for (;;)
			cq_progress(l.cq);
	case PEER_SEND_DEV: {
		dev_init();
		void *d = dev_alloc(DEVBIG);
		dev_fill(d, DEVBIG, 8);
		POST(l.cq, fi_tsend(l.ep, d, DEVBIG, NULL, peer, 0x7a, &ctx));
		xwrite(wfd, &one, 1);
		for (;;)
			cq_progress(l.cq);
	}
	case PEER_IDLE: /* progresses (a network core needs that to connect) but never receives */
		xwrite(wfd, &one, 1);
		for (;;)
			cq_progress(l.cq);
	case PEER_ECHO:
		POST(l.cq, fi_trecv(l.ep, &one, 1, NULL, peer, 0x55, 0, &ctx));
		wait_ok(l.cq, &e, NULL, "echo recv");
		POST(l.cq, fi_tsend(l.ep, &one, 1, NULL, peer, 0x55, &ctx));
		wait_ok(l.cq, &e, NULL, "echo send");
		lnx_close(&l);
		_exit(0);
	}
	_exit(3);
}

/* Forks a peer with a role; returns its pid and inserts its address. */
static pid_t spawn(struct lnx *l, enum role role, fi_addr_t *addr, int *rfd_out)
{
	int up[2], down[2];
	if (pipe(up) || pipe(down))
		FAIL("pipe");
	pid_t pid = fork();
	if (pid == 0) {
		char r[16], in[16], out[16];
		close(up[0]);
		close(down[1]);
		snprintf(r, sizeof(r), "%d", role);
		snprintf(in, sizeof(in), "%d", down[0]);
		snprintf(out, sizeof(out), "%d", up[1]);
		execl("/proc/self/exe", "fault_peer_death", "peer", r, in, out, g_mode,
		      (char *)NULL);
		_exit(127);
	}
	close(up[1]);
	close(down[0]);
	uint8_t name[LNX_ADDRLEN];
	xread(up[0], name, sizeof(name));
	xwrite(down[1], l->name, l->namelen);
	CHECK_RC(fi_av_insert(l->av, name, 1, addr, 0, NULL), 1);
	*rfd_out = up[0];
	return pid;
}

/* Waits for the peer's one-byte signal while progressing our endpoint: a
 * network core needs both sides to progress to connect. */
static void wait_signal(struct lnx *l, int rfd)
{
	uint64_t deadline = now_ms() + WAIT_MS;
	for (;;) {
		struct pollfd pfd = { .fd = rfd, .events = POLLIN };
		if (poll(&pfd, 1, 0) == 1)
			break;
		cq_progress(l->cq);
		if (now_ms() > deadline)
			FAIL("peer never signalled");
	}
	char one;
	xread(rfd, &one, 1);
}

static void reap(pid_t pid)
{
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
}

static void ping_fresh_peer(struct lnx *l)
{
	fi_addr_t addr;
	int rfd;
	pid_t pid = spawn(l, PEER_ECHO, &addr, &rfd);
	char c = 42, back = 0;
	struct fi_context2 sc, rc;
	struct fi_cq_tagged_entry e;
	POST(l->cq, fi_trecv(l->ep, &back, 1, NULL, addr, 0x55, 0, &rc));
	POST(l->cq, fi_tsend(l->ep, &c, 1, NULL, addr, 0x55, &sc));
	wait_ok(l->cq, &e, NULL, "ping");
	wait_ok(l->cq, &e, NULL, "pong");
	EXPECT(back == 42, "pong carried %d", back);
	int st;
	waitpid(pid, &st, 0);
	EXPECT(WIFEXITED(st) && WEXITSTATUS(st) == 0, "echo peer status %d", st);
	close(rfd);
}

/* Waits for the error entry of the operation with context ctx. */
static void expect_error_entry(struct lnx *l, void *ctx, const char *what)
{
	struct fi_cq_err_entry err;
	uint64_t t0 = now_ms();
	int r = wait_cq(l->cq, NULL, NULL, &err, WAIT_MS);
	EXPECT(r < 0 && r != -FI_ETIMEDOUT, "%s: wait_cq %d (want an error entry)", what, r);
	EXPECT(err.op_context == ctx, "%s: error entry for another context", what);
	note("%s: error entry err=%d (%s) after %llu ms", what, err.err, fi_strerror(err.err),
	     (unsigned long long)(now_ms() - t0));
}

/* A peer in role (one that sends us tag) is killed after its send reached
 * us; our receive of it into buf must then fail. */
static void recv_from_killed_sender(struct lnx *l, enum role role, void *buf, size_t n,
				    uint64_t tag, const char *what)
{
	fi_addr_t addr;
	int rfd;
	pid_t pid = spawn(l, role, &addr, &rfd);
	wait_signal(l, rfd);
	/* Let the request reach us, then kill the sender before we receive:
	 * its payload is gone with it. */
	progress_for(l->cq, 50);
	reap(pid);
	struct fi_context2 ctx;
	POST(l->cq, fi_trecv(l->ep, buf, n, NULL, addr, tag, 0, &ctx));
	expect_error_entry(l, &ctx, what);
	close(rfd);
}

/* We send buf to a peer that never receives; it is killed, and our send
 * (which cannot have completed: the peer took nothing) must fail. */
static void send_to_killed_receiver(struct lnx *l, void *buf, size_t n, uint64_t tag,
				    const char *what)
{
	fi_addr_t addr;
	int rfd;
	pid_t pid = spawn(l, PEER_IDLE, &addr, &rfd);
	wait_signal(l, rfd);
	struct fi_context2 ctx;
	POST(l->cq, fi_tsend(l->ep, buf, n, NULL, addr, tag, &ctx));
	progress_for(l->cq, 20);
	expect_no_completion(l->cq, 0, what);
	reap(pid);
	expect_error_entry(l, &ctx, what);
	close(rfd);
}

static void sender_dies(struct lnx *l)
{
	static char buf[BIG];
	recv_from_killed_sender(l, PEER_SEND_BIG, buf, BIG, 0x77, "sender_dies");
}

static void receiver_dies(struct lnx *l)
{
	static char buf[BIG];
	send_to_killed_receiver(l, buf, BIG, 0x78, "receiver_dies");
}

static void ring_full(struct lnx *l)
{
	fi_addr_t addr;
	int rfd;
	pid_t pid = spawn(l, PEER_IDLE, &addr, &rfd);
	char one;
	xread(rfd, &one, 1);
	reap(pid);
	static char buf[4096];
	uint64_t deadline = now_ms() + WAIT_MS;
	long long r = 0;
	int sent = 0;
	while (now_ms() < deadline) {
		r = fi_tinject(l->ep, buf, sizeof(buf), addr, 0x79);
		if (r == 0) {
			sent++;
			continue;
		}
		if (r == -FI_EAGAIN) {
			cq_progress(l->cq);
			continue;
		}
		break;
	}
	EXPECT(r < 0 && r != -FI_EAGAIN,
	       "injects to a killed peer never failed (%d sent, last %lld)", sent, r);
	note("ring_full: %d injects accepted, then %lld (%s)", sent, r, fi_strerror((int)-r));
	/* Drain any error entries the failed peer produced. */
	progress_for(l->cq, 10);
	struct fi_cq_err_entry err;
	while (fi_cq_readerr(l->cq, &err, 0) == 1)
		;
	close(rfd);
}

static void dev_receiver_dies(struct lnx *l)
{
	void *d = dev_alloc(DEVBIG);
	send_to_killed_receiver(l, d, DEVBIG, 0x7b, "dev_receiver_dies");
	dev_free(d);
}

static void dev_sender_dies(struct lnx *l)
{
	void *d = dev_alloc(DEVBIG);
	recv_from_killed_sender(l, PEER_SEND_DEV, d, DEVBIG, 0x7a, "dev_sender_dies");
	dev_free(d);
}

int main(int argc, char **argv)
{
	if (argc == 6 && !strcmp(argv[1], "peer")) {
		alarm(60);
		g_mode = argv[5];
		peer_main((enum role)atoi(argv[2]), atoi(argv[3]), atoi(argv[4]));
	}
	struct lnx l;
	struct lnx_opts o = { .links = LINK_SHM };
	g_cq_print_errors = 0;
	if (argc > 1 && !strcmp(argv[1], "tcp")) {
		g_mode = "tcp";
		setenv("FI_LNX_NODE_ID", "fault-main", 1);
		o.links = LINK_TCP;
		lnx_open(&l, &o);
		sender_dies(&l);
		ping_fresh_peer(&l);
		receiver_dies(&l);
		ping_fresh_peer(&l);
		lnx_close(&l);
		printf("fault_peer_death tcp: ok\n");
		return 0;
	}
	if (argc > 1 && !strcmp(argv[1], "device")) {
		dev_init();
		o.caps = FI_MSG | FI_TAGGED | FI_SEND | FI_RECV | FI_DIRECTED_RECV | FI_SOURCE |
			 FI_LOCAL_COMM | FI_REMOTE_COMM | FI_HMEM;
		lnx_open(&l, &o);
		dev_receiver_dies(&l);
		ping_fresh_peer(&l);
		dev_sender_dies(&l);
		ping_fresh_peer(&l);
		lnx_close(&l);
		printf("fault_peer_death device: ok\n");
		return 0;
	}
	lnx_open(&l, &o);
	/* Peers that send their last message and exit at once, several in a
	 * row: each one's message must arrive. */
	for (int i = 0; i < 4; i++)
		ping_fresh_peer(&l);
	sender_dies(&l);
	ping_fresh_peer(&l);
	receiver_dies(&l);
	ping_fresh_peer(&l);
	ring_full(&l);
	ping_fresh_peer(&l);
	lnx_close(&l);
	printf("fault_peer_death: ok\n");
	return 0;
}
