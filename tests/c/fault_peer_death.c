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
 * by probing within FI_LNX_PEER_TIMEOUT (2s in ctest). Also there:
 *   sender_dies_closed: sender_dies with our receive posted only after we
 *                  progressed 500 ms past the death (the core has closed
 *                  the connection by then); it must fail all the same.
 *   ring_full:     the same as over shm: injects to a killed peer must
 *                  fail, not return -FI_EAGAIN forever (2.1 rxm refuses
 *                  every send while it connects to the dead peer again);
 *                  in "rma_tcp" as well, where a side transport watches.
 * With "rma" (link shm) and "rma_tcp" (simulated nodes, tcp;ofi_rxm):
 *   rma_target_dies: one-sided operations (writes and reads, inline and
 *                  bulk, a fetching and a compare atomic) wait for a
 *                  target that has stopped progressing; it is killed, and
 *                  every one of them must complete with an error entry
 *                  (and count as an error on the FI_WRITE/FI_READ counter).
 * With "armed" (the endpoint set up as Open MPI's ofi MTL sets it up, so
 * that lnx lends it to its C layer, which then posts shm rendezvous sends
 * itself and reaps their acks in fi_cq_read):
 *   armed_receiver_dies: a window of rendezvous sends (64 KiB to 4 MiB) to
 *                  a peer that never receives and is killed; every one
 *                  must complete with an error entry, once, and none
 *                  before. Its ctest checks (FI_LOG_LEVEL=info) that C
 *                  posted them.
 * With "armed_tcp", armed_receiver_dies between simulated nodes: on the
 * peer API path (libfabric 2.x, FI_LNX_PEER_API=1) C hands those sends to
 * the core itself, and Go must still watch the receiver and fail them
 * (its ctest checks FI_LNX_DUMP_STATS's "over the inject size" count).
 * Each case then pings a fresh peer to show the survivor is intact.
 *
 * Peers are fresh executions of this program (fork + exec): a Go runtime,
 * which the parent has once lnx is loaded, does not survive a plain fork.
 */
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>
#include "rma_common.h"
#include "devmem.h"

#define BIG (4u << 20)

/* "shm", "tcp", "rma" or "rma_tcp": which core carries the transfers and
 * whether endpoints have the one-sided caps (see main). */
static const char *g_mode = "shm";

static int mode_tcp(void)
{
	return strstr(g_mode, "tcp") != NULL;
}
static int mode_rma(void)
{
	return !strncmp(g_mode, "rma", 3);
}

static void mode_opts(struct lnx_opts *o)
{
	if (mode_tcp())
		o->links = LINK_TCP;
	if (mode_rma()) {
		o->caps = RMA_CAPS;
		o->counters = 2;
	}
}

enum role { PEER_SEND_BIG, PEER_IDLE, PEER_ECHO, PEER_SEND_DEV, PEER_RMA_TARGET };
#define RMA_WIN (2u << 20)
#define DEVBIG	(1u << 20)

/* The peer process: opens an endpoint, swaps names, does its role. */
static void peer_main(enum role role, int rfd, int wfd)
{
	struct lnx l;
	struct lnx_opts o = { .links = LINK_SHM };
	if (mode_tcp()) {
		char id[64];
		snprintf(id, sizeof(id), "fault-peer-%d", (int)getpid());
		setenv("FI_LNX_NODE_ID", id, 1);
	}
	mode_opts(&o);
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
	case PEER_RMA_TARGET: {
		/* A window the parent writes, reads and updates; we progress
		 * (executing its operations) until told to stop, then never
		 * again: what it posts later waits for us until we are killed. */
		uint8_t *win = calloc(1, RMA_WIN);
		struct fid_mr *mr;
		CHECK(fi_mr_reg(l.domain, win, RMA_WIN, FI_REMOTE_READ | FI_REMOTE_WRITE, 0, 5, 0,
				&mr, NULL));
		struct rwin w = { fi_mr_key(mr),
				  (l.info->domain_attr->mr_mode & FI_MR_VIRT_ADDR) ?
					  (uint64_t)(uintptr_t)win :
					  0,
				  RMA_WIN };
		xwrite(wfd, &w, sizeof(w));
		for (;;) {
			struct pollfd pfd = { .fd = rfd, .events = POLLIN };
			if (poll(&pfd, 1, 0) == 1)
				break;
			cq_progress(l.cq);
		}
		xread(rfd, &one, 1);
		xwrite(wfd, &one, 1); /* stopped: kill me whenever */
		for (;;)
			pause();
	}
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

/* Forks a peer with a role; returns its pid and inserts its address;
 * *rfd_out reads what the peer writes, *wfd_out (if not NULL) writes to it. */
static pid_t spawn_fds(struct lnx *l, enum role role, fi_addr_t *addr, int *rfd_out, int *wfd_out)
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
	if (wfd_out)
		*wfd_out = down[1];
	else
		close(down[1]);
	return pid;
}

static pid_t spawn(struct lnx *l, enum role role, fi_addr_t *addr, int *rfd_out)
{
	return spawn_fds(l, role, addr, rfd_out, NULL);
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
 * us; our receive of it into buf must then fail. settle_ms: how long we
 * progress between its death and our receive. */
static void recv_from_killed_sender(struct lnx *l, enum role role, void *buf, size_t n,
				    uint64_t tag, int settle_ms, const char *what)
{
	fi_addr_t addr;
	int rfd;
	pid_t pid = spawn(l, role, &addr, &rfd);
	wait_signal(l, rfd);
	/* Let the request reach us, then kill the sender before we receive:
	 * its payload is gone with it. */
	progress_for(l->cq, 50);
	reap(pid);
	if (settle_ms)
		progress_for(l->cq, settle_ms);
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
	recv_from_killed_sender(l, PEER_SEND_BIG, buf, BIG, 0x77, 0, "sender_dies");
}

/* The same, with the receive posted only after we progressed for a while
 * past the sender's death: the network core has read the shutdown its
 * kernel sent and closed the connection by then (2.1 rxm looks every
 * 10 ms), yet still holds the queued message. On the peer API path that
 * start crashed inside 2.1 rxm (docs/peer-api.md, "Results"). */
static void sender_dies_closed(struct lnx *l)
{
	static char buf[BIG];
	recv_from_killed_sender(l, PEER_SEND_BIG, buf, BIG, 0x77, 500, "sender_dies_closed");
}

static void receiver_dies(struct lnx *l)
{
	static char buf[BIG];
	send_to_killed_receiver(l, buf, BIG, 0x78, "receiver_dies");
}

/* A window of rendezvous sends to a peer that never receives; it is
 * killed, and each send must fail, once (armed mode: C posts them). */
#define ARMED_SENDS 6
static void armed_receiver_dies(struct lnx *l)
{
	static char buf[ARMED_SENDS][BIG];
	/* Over shm all are past lnx's eager limit; between simulated nodes
	 * all past tcp;ofi_rxm's (16 KiB), whose eager sends complete at once. */
	static const size_t shm_len[ARMED_SENDS] = { 65536, 16385, 8193, 1 << 20, 65536, BIG };
	static const size_t tcp_len[ARMED_SENDS] = { 65536, 32768, 20000, 1 << 20, 65536, BIG };
	const size_t *len = mode_tcp() ? tcp_len : shm_len;
	fi_addr_t addr;
	int rfd;
	pid_t pid = spawn(l, PEER_IDLE, &addr, &rfd);
	wait_signal(l, rfd);
	/* A first (eager) message, which Go sends: it connects to the peer and
	 * publishes it to C. Then lnx lends the endpoint to C again. */
	static char hello = 1;
	struct fi_context2 ctx[ARMED_SENDS];
	struct fi_cq_tagged_entry e;
	POST(l->cq, fi_tsend(l->ep, &hello, 1, NULL, addr, 0x7f, &ctx[0]));
	wait_ok(l->cq, &e, NULL, "armed_receiver_dies: eager send");
	progress_for(l->cq, 20);
	for (int i = 0; i < ARMED_SENDS; i++)
		POST(l->cq, fi_tsend(l->ep, buf[i], len[i], NULL, addr, 0x80 + i, &ctx[i]));
	progress_for(l->cq, 20);
	expect_no_completion(l->cq, 0, "armed_receiver_dies");
	reap(pid);
	int seen[ARMED_SENDS] = { 0 };
	uint64_t t0 = now_ms();
	for (int n = 0; n < ARMED_SENDS; n++) {
		struct fi_cq_err_entry err;
		int r = wait_cq(l->cq, NULL, NULL, &err, WAIT_MS);
		EXPECT(r < 0 && r != -FI_ETIMEDOUT,
		       "armed_receiver_dies: wait_cq %d (want an error entry)", r);
		if (r >= 0 || r == -FI_ETIMEDOUT)
			break;
		int i = 0;
		while (i < ARMED_SENDS && err.op_context != &ctx[i])
			i++;
		EXPECT(i < ARMED_SENDS && !seen[i] && (err.flags & FI_SEND),
		       "armed_receiver_dies: error entry %d: context %p flags %#llx", n,
		       err.op_context, (unsigned long long)err.flags);
		if (i < ARMED_SENDS)
			seen[i]++;
	}
	note("armed_receiver_dies: %d error entries after %llu ms", ARMED_SENDS,
	     (unsigned long long)(now_ms() - t0));
	expect_no_completion(l->cq, 0, "armed_receiver_dies (after the errors)");
	close(rfd);
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
	recv_from_killed_sender(l, PEER_SEND_DEV, d, DEVBIG, 0x7a, 0, "dev_sender_dies");
	dev_free(d);
}

/* One-sided operations to a target that stops answering and is killed:
 * each completes with an error entry naming it, and the FI_WRITE/FI_READ
 * counter counts them as errors. */
static void rma_target_dies(struct lnx *l)
{
	fi_addr_t addr;
	int rfd, wfd;
	pid_t pid = spawn_fds(l, PEER_RMA_TARGET, &addr, &rfd, &wfd);
	struct rwin w;
	xread(rfd, &w, sizeof(w));
	static uint8_t big[RMA_WIN / 2], bigin[RMA_WIN / 2];
	uint64_t small[8] = { 1, 2, 3, 4, 5, 6, 7, 8 }, smallin[8];
	uint64_t one = 1, cmp = 0, swap = 9, res[2];
	struct fi_context2 ctx[7];

	/* The path works while the target progresses. */
	POST(l->cq, fi_write(l->ep, small, sizeof(small), NULL, addr, w.addr, w.key, &ctx[6]));
	struct fi_cq_tagged_entry e;
	wait_ok(l->cq, &e, NULL, "rma warm-up write");
	EXPECT(e.op_context == &ctx[6], "warm-up completion for another context");
	EXPECT(fi_cntr_read(l->tx_cntr) == 1, "warm-up: counter %llu",
	       (unsigned long long)fi_cntr_read(l->tx_cntr));

	/* Stop the target's progress, then post what it will never answer. */
	char stop = 's';
	xwrite(wfd, &stop, 1);
	wait_signal(l, rfd);
	POST(l->cq, fi_write(l->ep, small, sizeof(small), NULL, addr, w.addr + 64, w.key, &ctx[0]));
	POST(l->cq, fi_write(l->ep, big, sizeof(big), NULL, addr, w.addr + 4096, w.key, &ctx[1]));
	POST(l->cq, fi_read(l->ep, smallin, sizeof(smallin), NULL, addr, w.addr, w.key, &ctx[2]));
	POST(l->cq, fi_read(l->ep, bigin, sizeof(bigin), NULL, addr, w.addr + RMA_WIN / 2, w.key,
			    &ctx[3]));
	POST(l->cq, fi_fetch_atomic(l->ep, &one, 1, NULL, res, NULL, addr, w.addr + 128, w.key,
				    FI_UINT64, FI_SUM, &ctx[4]));
	POST(l->cq, fi_compare_atomic(l->ep, &swap, 1, NULL, &cmp, NULL, res + 1, NULL, addr,
				      w.addr + 136, w.key, FI_UINT64, FI_CSWAP, &ctx[5]));
	expect_no_completion(l->cq, 50, "one-sided operations to a stopped target");
	reap(pid);

	static const uint64_t flags[6] = { FI_RMA | FI_WRITE,	FI_RMA | FI_WRITE,
					   FI_RMA | FI_READ,	FI_RMA | FI_READ,
					   FI_ATOMIC | FI_READ, FI_ATOMIC | FI_READ };
	static const char *names[6] = { "small write", "bulk write",   "small read",
					"bulk read",   "fetch_atomic", "compare_atomic" };
	int seen[6] = { 0 };
	for (int i = 0; i < 6; i++) {
		struct fi_cq_err_entry err;
		/* A bound against a hang only: the network core needs
		 * FI_LNX_PEER_TIMEOUT plus a liveness check, longer on a loaded
		 * machine. */
		int r = wait_cq(l->cq, NULL, NULL, &err, 6 * WAIT_MS);
		EXPECT(r < 0 && r != -FI_ETIMEDOUT,
		       "operation %d of 6 to the killed target: wait_cq %d (want an error entry)",
		       i + 1, r);
		int k = -1;
		for (int j = 0; j < 6; j++)
			if (err.op_context == &ctx[j])
				k = j;
		EXPECT(k >= 0 && !seen[k], "error entry for an unknown or repeated context %p",
		       err.op_context);
		seen[k] = 1;
		EXPECT(err.err == FI_EIO, "%s: err %d (%s), want FI_EIO", names[k], err.err,
		       fi_strerror(err.err));
		EXPECT((err.flags & flags[k]) == flags[k], "%s: error flags %#llx lack %#llx",
		       names[k], (unsigned long long)err.flags, (unsigned long long)flags[k]);
		note("rma_target_dies: %s: error entry err=%d (%s)", names[k], err.err,
		     fi_strerror(err.err));
	}
	EXPECT(fi_cntr_read(l->tx_cntr) == 1, "counter %llu after the failures, want 1",
	       (unsigned long long)fi_cntr_read(l->tx_cntr));
	EXPECT(fi_cntr_readerr(l->tx_cntr) == 6, "error counter %llu, want 6",
	       (unsigned long long)fi_cntr_readerr(l->tx_cntr));
	close(rfd);
	close(wfd);
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
	if (argc > 1 && (!strcmp(argv[1], "rma") || !strcmp(argv[1], "rma_tcp"))) {
		g_mode = argv[1];
		if (mode_tcp())
			setenv("FI_LNX_NODE_ID", "fault-main", 1);
		mode_opts(&o);
		lnx_open(&l, &o);
		rma_target_dies(&l);
		ping_fresh_peer(&l);
		if (mode_tcp()) {
			/* The endpoint has one-sided caps: on the peer path the
			 * side transport watches the killed peer. */
			ring_full(&l);
			ping_fresh_peer(&l);
		}
		lnx_close(&l);
		printf("fault_peer_death %s: ok\n", g_mode);
		return 0;
	}
	if (argc > 1 && !strcmp(argv[1], "tcp")) {
		g_mode = "tcp";
		setenv("FI_LNX_NODE_ID", "fault-main", 1);
		o.links = LINK_TCP;
		lnx_open(&l, &o);
		sender_dies(&l);
		ping_fresh_peer(&l);
		sender_dies_closed(&l);
		ping_fresh_peer(&l);
		receiver_dies(&l);
		ping_fresh_peer(&l);
		ring_full(&l);
		ping_fresh_peer(&l);
		lnx_close(&l);
		printf("fault_peer_death tcp: ok\n");
		return 0;
	}
	if (argc > 1 && (!strcmp(argv[1], "armed") || !strcmp(argv[1], "armed_tcp"))) {
		o.selective = 1;
		if (!strcmp(argv[1], "armed_tcp")) {
			g_mode = "tcp";
			setenv("FI_LNX_NODE_ID", "fault-main", 1);
			o.links = LINK_TCP;
		}
		lnx_open(&l, &o);
		ping_fresh_peer(&l);
		armed_receiver_dies(&l);
		ping_fresh_peer(&l);
		lnx_close(&l);
		printf("fault_peer_death %s: ok\n", argv[1]);
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
