/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * late_insert: messages that arrive before their sender is in the
 * receiver's AV, as at a server that learns its clients' addresses out of
 * band. The client inserts the server and sends an untagged message, then
 * tagged ones of 16 B, 2000 B, 20000 B and 300 KiB; the server sees the
 * tagged ones arrive (FI_PEEK from any source; the untagged one came
 * first over the same path), only then inserts the client, and
 * receives each with a receive directed at it. Each must match, with its
 * data, length and tag, and fi_cq_readfrom must name the client: once
 * the sender is known, a queued message is the sender's, as it would be
 * had it arrived after the insert. It also keeps its place in the order:
 * after the insert the client sends a second message with the first
 * one's tag (24 B) and a marker; two receives for that tag take the 16 B
 * one first.
 *
 * Usage: late_insert [shm|link|tcp|<links> [distinct]]
 */
#include <errno.h>
#include <sys/wait.h>
#include <unistd.h>
#include "common.h"

#define NTAGGED 4
static const size_t k_len[NTAGGED] = { 16, 2000, 20000, 300 * 1024 };
#define TAG0	     0x7100
#define UNTAGGED_LEN 100
#define SEED(i)	     (9000 + (i))
#define LATE_LEN     24 /* the second message with tag TAG0, after the insert */
#define MARK_TAG     (TAG0 + 0x50)
#define MARK_LEN     8

static void node_id(const struct lnx_opts *o, const char *who)
{
	char id[96];
	if (!o->distinct_nodes)
		return;
	snprintf(id, sizeof(id), "lnx-late-%d-%s", (int)getppid(), who);
	setenv("FI_LNX_NODE_ID", id, 1);
}

/* FI_PEEK from any source until tag's message is there. */
static void peek_arrived(struct lnx *l, uint64_t tag, size_t len)
{
	uint64_t dl = now_ms() + WAIT_MS;
	for (;;) {
		struct fi_context2 c;
		struct fi_msg_tagged tm = { .addr = FI_ADDR_UNSPEC, .tag = tag, .context = &c };
		struct fi_cq_tagged_entry e;
		struct fi_cq_err_entry err;
		fi_addr_t src;
		POST(l->cq, fi_trecvmsg(l->ep, &tm, FI_PEEK));
		int r = wait_cq_quiet(l->cq, &e, &src, &err, WAIT_MS);
		if (r == 0) {
			EXPECT(e.op_context == &c && e.len == len,
			       "peek of tag %#llx: context %p len %zu, want %p %zu",
			       (unsigned long long)tag, e.op_context, e.len, (void *)&c, len);
			return;
		}
		if (r != -FI_ENOMSG)
			FAIL("FI_PEEK of tag %#llx: %d (%s)", (unsigned long long)tag, r,
			     fi_strerror(-r));
		if (now_ms() > dl)
			FAIL("tag %#llx never arrived", (unsigned long long)tag);
		progress_for(l->cq, 1);
	}
}

static void check_one(struct lnx *l, void *ctx, size_t len, uint64_t tag, int tagged,
		      fi_addr_t want_src, const char *what)
{
	struct fi_cq_tagged_entry e;
	fi_addr_t src = FI_ADDR_NOTAVAIL;
	wait_ok(l->cq, &e, &src, what);
	EXPECT(e.op_context == ctx, "%s: context %p, want %p", what, e.op_context, ctx);
	EXPECT(e.len == len, "%s: len %zu, want %zu", what, e.len, len);
	if (tagged)
		EXPECT(e.tag == tag, "%s: tag %#llx, want %#llx", what, (unsigned long long)e.tag,
		       (unsigned long long)tag);
	EXPECT(e.flags & FI_RECV, "%s: flags %#llx lack FI_RECV", what,
	       (unsigned long long)e.flags);
	EXPECT(src == want_src, "%s: source %llu, want %llu", what, (unsigned long long)src,
	       (unsigned long long)want_src);
}

static void server(int sock, void *arg)
{
	const struct lnx_opts *o = arg;
	struct lnx l;
	uint8_t name[ADDR_MAX];
	char d;

	snprintf(g_role, sizeof(g_role), "server");
	node_id(o, "server");
	lnx_open(&l, o);
	uint32_t len = (uint32_t)l.namelen;
	xwrite(sock, &len, sizeof(len));
	xwrite(sock, l.name, len);
	wait_readable(sock, l.cq);
	xread(sock, name, len); /* the client's name: not inserted yet */
	wait_readable(sock, l.cq);
	xread(sock, &d, 1); /* its sends are posted */

	for (int i = 0; i < NTAGGED; i++)
		peek_arrived(&l, TAG0 + i, k_len[i]);

	fi_addr_t addr = FI_ADDR_NOTAVAIL;
	CHECK_RC(fi_av_insert(l.av, name, 1, &addr, 0, NULL), 1);
	xwrite(sock, "i", 1);
	peek_arrived(&l, MARK_TAG, MARK_LEN); /* after the late one, in order */

	/* The tag that has two messages, the one queued before the insert
	 * first. */
	uint8_t *late = xmalloc(LATE_LEN), *mark = xmalloc(MARK_LEN);
	struct fi_context2 lc, mc;
	uint8_t *first = xmalloc(LATE_LEN); /* room for either */
	struct fi_context2 fc;
	CHECK(fi_trecv(l.ep, first, LATE_LEN, NULL, addr, TAG0, 0, &fc));
	check_one(&l, &fc, k_len[0], TAG0, 1, addr, "first of tag TAG0 (before the insert)");
	EXPECT_PATTERN(first, k_len[0], SEED(0));
	CHECK(fi_trecv(l.ep, late, LATE_LEN, NULL, addr, TAG0, 0, &lc));
	check_one(&l, &lc, LATE_LEN, TAG0, 1, addr, "second of tag TAG0 (after the insert)");
	EXPECT_PATTERN(late, LATE_LEN, SEED(20));
	CHECK(fi_trecv(l.ep, mark, MARK_LEN, NULL, addr, MARK_TAG, 0, &mc));
	check_one(&l, &mc, MARK_LEN, MARK_TAG, 1, addr, "marker");
	free(first);
	free(late);
	free(mark);

	/* Directed receives, the largest first: each must take its message. */
	uint8_t *b[NTAGGED + 1];
	struct fi_context2 c[NTAGGED + 1];
	for (int i = NTAGGED - 1; i >= 1; i--) {
		char what[64];
		b[i] = xmalloc(k_len[i]);
		memset(b[i], 0, k_len[i]);
		CHECK(fi_trecv(l.ep, b[i], k_len[i], NULL, addr, TAG0 + i, 0, &c[i]));
		snprintf(what, sizeof(what), "tagged %zu B, directed at the client", k_len[i]);
		check_one(&l, &c[i], k_len[i], TAG0 + i, 1, addr, what);
		EXPECT_PATTERN(b[i], k_len[i], SEED(i));
	}
	b[NTAGGED] = xmalloc(UNTAGGED_LEN);
	memset(b[NTAGGED], 0, UNTAGGED_LEN);
	CHECK(fi_recv(l.ep, b[NTAGGED], UNTAGGED_LEN, NULL, addr, &c[NTAGGED]));
	check_one(&l, &c[NTAGGED], UNTAGGED_LEN, 0, 0, addr, "untagged, directed at the client");
	EXPECT_PATTERN(b[NTAGGED], UNTAGGED_LEN, SEED(NTAGGED));

	xwrite(sock, "r", 1);
	wait_readable(sock, l.cq);
	xread(sock, &d, 1); /* the client has its send completions */
	lnx_close(&l);
	for (int i = 1; i <= NTAGGED; i++)
		free(b[i]);
}

static void client(int sock, const struct lnx_opts *o, const uint8_t *sname, uint32_t slen)
{
	struct lnx l;
	uint8_t *b[NTAGGED + 1];
	struct fi_context2 c[NTAGGED + 3];
	fi_addr_t srv = FI_ADDR_NOTAVAIL;
	char d;

	snprintf(g_role, sizeof(g_role), "client");
	node_id(o, "client");
	lnx_open(&l, o);
	CHECK_RC(fi_av_insert(l.av, sname, 1, &srv, 0, NULL), 1);
	xwrite(sock, l.name, l.namelen);
	b[NTAGGED] = xmalloc(UNTAGGED_LEN);
	fill_pattern(b[NTAGGED], UNTAGGED_LEN, SEED(NTAGGED));
	POST(l.cq, fi_send(l.ep, b[NTAGGED], UNTAGGED_LEN, NULL, srv, &c[NTAGGED]));
	for (int i = 0; i < NTAGGED; i++) {
		b[i] = xmalloc(k_len[i]);
		fill_pattern(b[i], k_len[i], SEED(i));
		POST(l.cq, fi_tsend(l.ep, b[i], k_len[i], NULL, srv, TAG0 + i, &c[i]));
	}
	xwrite(sock, "s", 1);
	wait_readable(sock, l.cq);
	xread(sock, &d, 1); /* the server inserted us */
	uint8_t *late = xmalloc(LATE_LEN), *mark = xmalloc(MARK_LEN);
	fill_pattern(late, LATE_LEN, SEED(20));
	fill_pattern(mark, MARK_LEN, SEED(21));
	POST(l.cq, fi_tsend(l.ep, late, LATE_LEN, NULL, srv, TAG0, &c[NTAGGED + 1]));
	POST(l.cq, fi_tsend(l.ep, mark, MARK_LEN, NULL, srv, MARK_TAG, &c[NTAGGED + 2]));
	for (int got = 0; got < NTAGGED + 3; got++) {
		struct fi_cq_tagged_entry e;
		wait_ok(l.cq, &e, NULL, "send completions");
		int k = (int)((struct fi_context2 *)e.op_context - c);
		EXPECT(k >= 0 && k < NTAGGED + 3 && (e.flags & FI_SEND),
		       "send completion context %p flags %#llx", e.op_context,
		       (unsigned long long)e.flags);
	}
	wait_readable(sock, l.cq);
	xread(sock, &d, 1); /* the server received all */
	xwrite(sock, "d", 1);
	lnx_close(&l);
	for (int i = 0; i <= NTAGGED; i++)
		free(b[i]);
	free(late);
	free(mark);
}

int main(int argc, char **argv)
{
	struct lnx_opts o;
	int sock, st, failed = 0;
	uint32_t slen;
	uint8_t sname[ADDR_MAX];

	msg_test_opts(argc, argv, &o);
	pid_t s = fork_server(server, &o, &sock, sname, &slen);
	pid_t k = fork();
	if (k < 0)
		FAIL("fork: %s", strerror(errno));
	if (k == 0) {
		client(sock, &o, sname, slen);
		fflush(stdout);
		_exit(0);
	}
	waitpid(k, &st, 0);
	if (!WIFEXITED(st) || WEXITSTATUS(st)) {
		printf("client failed\n");
		failed = 1;
		kill(s, SIGKILL);
	}
	waitpid(s, &st, 0);
	if (!WIFEXITED(st) || WEXITSTATUS(st)) {
		printf("server failed\n");
		failed = 1;
	}
	printf("%s: %s (links %s%s)\n", argv[0], failed ? "FAILED" : "ok", o.links,
	       o.distinct_nodes ? ", distinct nodes" : "");
	return failed;
}
