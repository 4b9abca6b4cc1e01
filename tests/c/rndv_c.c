/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * rndv_c: shm rendezvous messages (above lnx's shm eager limit) into
 * receives lnx's C layer completes, between two processes.
 *
 * Usage: rndv_c [<cfg> [domain] [nocma]]   (cfg as in common.h; default shm)
 *
 * A ping-pong of 8-64 KiB messages, one receive posted at a time and the
 * endpoint set up as Open MPI's ofi MTL sets up lnx (FI_COMPLETION as the
 * default op flags, selective completion): the case in which lnx lends its
 * shm rings and the receive to C, which then copies a rendezvous message
 * with one process_vm_readv, acknowledges it and completes the receive
 * itself. Every receive completion must carry the message's length,
 * buffer, tag, CQ data (every third), source (every fourth receive is for
 * any source, read with fi_cq_readfrom), and the payload, with nothing
 * written past it. Some rounds post the receive only after the message has
 * arrived (it waits in the ring, or in Go's unexpected queue), and some
 * post a receive shorter than the message: FI_ETRUNC with the right olen,
 * the part that fits delivered (Go's path). The sender checks its
 * completions. Its ctest checks FI_LNX_DUMP_STATS's "by rendezvous" count
 * (messages C pulled). Then a window each way (see window()): rendezvous
 * sends posted before any receive, none completing until the receives are
 * posted. The sending side of these is lnx's C layer's too while the
 * endpoint is lent (fast_send.c posts the record, fi_cq_read reaps the
 * ack): a ctest checks, at FI_LOG_LEVEL=info, that both processes' C
 * posted some.
 *
 * "domain" opens the domain with FI_THREAD_DOMAIN (no locks in C);
 * "nocma" makes process_vm_readv fail with EPERM in both processes (a
 * seccomp filter, as a container's policy may): every message must still
 * arrive, through shm's fallback copy, and C must pull none.
 */
#include <errno.h>
#include <stddef.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "common.h"

#define ROUNDS	  240
#define MAXLEN	  65536
#define GUARD_LEN 64
#define SHORT_BY  100

static size_t len_of(int i)
{
	static const size_t l[] = { 16384, 16385, 32768, 65536, 20000, 8193, 40000, 50001 };
	return l[(i / 2) % 8];
}

/* Round i: the receiver posts only after the message arrived. */
static int late(int i)
{
	return i % 10 == 4 || i % 10 == 5;
}

/* Round i: the receive is SHORT_BY bytes shorter than the message. */
static int trunc_round(int i)
{
	return i % 14 == 6 || i % 14 == 7;
}

static void check_recv(const struct fi_cq_tagged_entry *e, size_t len, const void *buf,
		       int has_data, uint64_t data, uint64_t tag, int i)
{
	char fl[256];
	uint64_t want = FI_RECV | FI_TAGGED | (has_data ? FI_REMOTE_CQ_DATA : 0);
	EXPECT((e->flags & (FI_RECV | FI_SEND | FI_TAGGED | FI_MSG | FI_REMOTE_CQ_DATA)) == want,
	       "round %d: receive flags %s", i, flags_str(e->flags, fl, sizeof(fl)));
	EXPECT(e->len == len, "round %d: length %zu, want %zu", i, e->len, len);
	EXPECT(e->buf == buf, "round %d: buf %p, want %p", i, e->buf, buf);
	EXPECT(e->data == (has_data ? data : 0), "round %d: data %#llx", i,
	       (unsigned long long)e->data);
	EXPECT(e->tag == tag, "round %d: tag %#llx, want %#llx", i, (unsigned long long)e->tag,
	       (unsigned long long)tag);
}

/*
 * window: rank `from` posts WINDOW rendezvous sends (lnx's C layer posts
 * them itself while the endpoint is lent, up to its table's worth, and Go
 * the rest) before the other rank has posted any receive; no send may
 * complete before then (the receiver does not progress: a quiet barrier),
 * however often the sender reads its CQ. The receiver then posts the
 * receives, which must complete in order, each with its length, tag, CQ
 * data and payload and nothing past it; every send completes once.
 */
#define WINDOW 80
#define WPOLLS 20000
#define WBASE  0x4000
static size_t wlen(int j)
{
	static const size_t l[] = { 8193, 65536, 16384, 40000, 9000, 32769 };
	return l[j % 6];
}

static void window(struct peer *p, int from)
{
	fi_addr_t d = peer_addr(p);
	struct fi_context2 ctx[WINDOW];
	uint8_t *b[WINDOW];
	for (int j = 0; j < WINDOW; j++)
		b[j] = xmalloc(MAXLEN + GUARD_LEN);
	barrier(p);
	if (p->rank == from) {
		for (int j = 0; j < WINDOW; j++) {
			fill_pattern(b[j], wlen(j), 9000 + j);
			POST(p->l.cq, fi_tsenddata(p->l.ep, b[j], wlen(j), NULL, 0xd0 + j, d,
						   WBASE + j, &ctx[j]));
		}
		struct fi_cq_tagged_entry e;
		for (int k = 0; k < WPOLLS; k++) {
			ssize_t r = fi_cq_read(p->l.cq, &e, 1);
			EXPECT(r == -FI_EAGAIN,
			       "window: a send completed (%zd, context %p) before any "
			       "receive was posted",
			       r, r == 1 ? e.op_context : NULL);
			if (r != -FI_EAGAIN)
				break;
		}
		barrier_quiet(p); /* now the receiver posts */
		int seen[WINDOW] = { 0 };
		for (int n = 0; n < WINDOW; n++) {
			wait_ok(p->l.cq, &e, NULL, "window send");
			int j = (int)(((struct fi_context2 *)e.op_context) - ctx);
			EXPECT(j >= 0 && j < WINDOW && !seen[j] && (e.flags & FI_SEND) &&
				       (e.flags & FI_TAGGED),
			       "window: send completion %d: context %p flags %#llx", n,
			       e.op_context, (unsigned long long)e.flags);
			if (j >= 0 && j < WINDOW)
				seen[j]++;
		}
	} else {
		barrier_quiet(p);
		for (int j = 0; j < WINDOW; j++) {
			memset(b[j], 0xee, MAXLEN + GUARD_LEN);
			POST(p->l.cq,
			     fi_trecv(p->l.ep, b[j], MAXLEN, NULL, d, WBASE + j, 0, &ctx[j]));
		}
		for (int j = 0; j < WINDOW; j++) {
			struct fi_cq_tagged_entry e;
			wait_ok(p->l.cq, &e, NULL, "window receive");
			EXPECT(e.op_context == &ctx[j],
			       "window: receive %d completed with context %p, "
			       "want %p",
			       j, e.op_context, (void *)&ctx[j]);
			check_recv(&e, wlen(j), b[j], 1, 0xd0 + j, WBASE + j, 1000 + j);
			long long off = check_pattern(b[j], wlen(j), 9000 + j);
			EXPECT(off < 0, "window: receive %d differs at %lld", j, off);
			for (size_t k = wlen(j); k < MAXLEN + GUARD_LEN; k++)
				if (b[j][k] != 0xee) {
					FAIL("window: receive %d: byte %zu past the message", j, k);
					break;
				}
		}
	}
	barrier(p);
	for (int j = 0; j < WINDOW; j++)
		free(b[j]);
}

static void pingpong(struct peer *p, void *arg)
{
	uint8_t *rb = xmalloc(MAXLEN + GUARD_LEN), *sb = xmalloc(MAXLEN);
	struct fi_context2 rc, sc;
	fi_addr_t d = peer_addr(p);
	barrier(p);
	for (int i = 0; i < ROUNDS; i++) {
		int mine = (i % 2) == p->rank; /* who sends round i */
		size_t len = len_of(i);
		uint64_t tag = 0x800 + i, data = 0xda7a0000 + i;
		if (late(i))
			barrier(p); /* the receiver posts after this message arrived */
		if (!mine) {
			int any = (i / 2) % 4 == 3;
			size_t room = trunc_round(i) ? len - SHORT_BY : MAXLEN;
			if (late(i))
				usleep(2000);
			memset(rb, 0xee, MAXLEN + GUARD_LEN);
			POST(p->l.cq, fi_trecv(p->l.ep, rb, room, NULL, any ? FI_ADDR_UNSPEC : d,
					       tag, 0, &rc));
			struct fi_cq_tagged_entry e;
			struct fi_cq_err_entry err = { 0 };
			fi_addr_t src = FI_ADDR_NOTAVAIL;
			int r = wait_cq(p->l.cq, &e, &src, &err, WAIT_MS);
			if (trunc_round(i)) {
				EXPECT(r == -FI_ETRUNC, "round %d: wait_cq -> %d, want -FI_ETRUNC",
				       i, r);
				EXPECT(err.op_context == &rc && err.olen == SHORT_BY &&
					       (err.flags & FI_RECV) && err.tag == tag,
				       "round %d: truncation context %p olen %zu tag %#llx", i,
				       err.op_context, err.olen, (unsigned long long)err.tag);
				EXPECT(check_pattern(rb, room, 5000 + i) < 0,
				       "round %d: truncated payload", i);
				for (size_t k = room; k < MAXLEN + GUARD_LEN; k++)
					if (rb[k] != 0xee)
						FAIL("round %d: byte %zu past a truncated receive "
						     "written",
						     i, k);
				continue;
			}
			EXPECT(r == 0, "round %d: receive -> %d", i, r);
			EXPECT(!any || src == d,
			       "round %d: any-source receive from %llu, want %llu", i,
			       (unsigned long long)src, (unsigned long long)d);
			EXPECT(e.op_context == &rc, "round %d: receive context %p", i,
			       e.op_context);
			long long off = check_pattern(rb, len, 5000 + i);
			EXPECT(off < 0, "round %d: payload differs at %lld", i, off);
			for (size_t k = len; k < MAXLEN + GUARD_LEN; k++)
				if (rb[k] != 0xee)
					FAIL("round %d: byte %zu past the message written", i, k);
			check_recv(&e, len, rb, i % 3 == 0, data, tag, i);
		} else {
			fill_pattern(sb, len, 5000 + i);
			if (i % 3 == 0)
				POST(p->l.cq,
				     fi_tsenddata(p->l.ep, sb, len, NULL, data, d, tag, &sc));
			else
				POST(p->l.cq, fi_tsend(p->l.ep, sb, len, NULL, d, tag, &sc));
			struct fi_cq_tagged_entry e;
			wait_ok(p->l.cq, &e, NULL, "send");
			EXPECT(e.op_context == &sc, "round %d: send context %p", i, e.op_context);
		}
	}
	barrier(p);
	free(rb);
	free(sb);
	window(p, 0);
	window(p, 1);
}

/* deny_cma: process_vm_readv and process_vm_writev fail with EPERM in this
 * process and the threads it starts (libfabric, and Go's, start later). */
static void deny_cma(int rank)
{
	(void)rank;
	struct sock_filter f[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_process_vm_readv, 2, 0),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_process_vm_writev, 1, 0),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (EPERM & SECCOMP_RET_DATA)),
	};
	struct sock_fprog prog = { .len = sizeof(f) / sizeof(f[0]), .filter = f };
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 ||
	    prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) != 0)
		FAIL("seccomp: %s", strerror(errno));
	EXPECT(syscall(SYS_process_vm_readv, getpid(), NULL, 0, NULL, 0, 0) == -1 && errno == EPERM,
	       "process_vm_readv is still allowed");
}

int main(int argc, char **argv)
{
	struct lnx_opts o = { 0 };
	int nocma = 0, domain = 0;
	while (argc > 2 &&
	       (!strcmp(argv[argc - 1], "nocma") || !strcmp(argv[argc - 1], "domain"))) {
		if (!strcmp(argv[argc - 1], "nocma"))
			nocma = 1;
		else
			domain = 1;
		argc--;
	}
	msg_test_opts(argc, argv, &o);
	o.selective = 1;
	if (domain)
		o.threading = FI_THREAD_DOMAIN;
	if (nocma)
		g_child_setup = deny_cma;
	return run_pair("rndv_c ping-pong", &o, pingpong, pingpong, NULL) ? 1 : 0;
}
