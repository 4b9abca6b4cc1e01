/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * getinfo_node: fi_getinfo with node and service, as core providers take
 * them. argv[1]: "tcp" (the two processes on simulated nodes, distinct
 * FI_LNX_NODE_ID) or "link" (one node); links shm+tcp;ofi_rxm:lo.
 *
 *  - a link with no network core ("shm") answers node/service with
 *    -FI_ENODATA
 *  - server: fi_getinfo(NULL, port, FI_SOURCE) gives a 64-byte src_addr
 *    and no dest_addr; its endpoint's fi_getname shows that port
 *    (fi_av_straddr of the name)
 *  - client: fi_getinfo("127.0.0.1", port, 0) gives a 64-byte dest_addr;
 *    inserted in the client's AV it reaches the server: the client sends
 *    its fi_getname (untagged), then a tagged message; the server inserts
 *    the client's name, receives the tagged message with a receive
 *    directed at the client, and answers with a tagged and an untagged
 *    message that the client receives with receives directed at the
 *    dest_addr's fi_addr. Every message's data, length, tag, flags and
 *    source are checked on both sides.
 *  - argv[2] "svc": the client reaches the server through
 *    fi_av_insertsvc("127.0.0.1", port) instead, whose fi_av_lookup is the
 *    dest_addr fi_getinfo gives; fi_av_insertsym("127.0.0.1", 2 nodes,
 *    port, 2 services) inserts 4 addresses, in fi_av(3)'s order, each the
 *    dest_addr of fi_getinfo for that node and port (with FI_MORE and
 *    FI_SYNC_ERR: 0 in each of the 4 error slots); a NULL service, or
 *    counting services from a name, is -FI_EINVAL, flag FI_SEND
 *    -FI_EBADFLAGS; an AV bound to an EQ completes fi_av_insertsvc with
 *    FI_AV_COMPLETE (data 1), FI_SYNC_ERR leaving its context unwritten.
 */
#include <arpa/inet.h>
#include <fcntl.h>
#include <signal.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common.h"

#define TAG_REQ 0x77
#define TAG_REP 0x88
#define REQ_LEN 4096
#define REP_LEN 70000 /* over the eager limit: a rendezvous */
#define UNT_LEN 100

struct ep {
	struct fi_info *info;
	struct fid_fabric *fabric;
	struct fid_domain *domain;
	struct fid_av *av;
	struct fid_cq *cq;
	struct fid_ep *ep;
	uint8_t name[ADDR_MAX];
	size_t namelen;
};

static void ep_open(struct ep *e, struct fi_info *info)
{
	memset(e, 0, sizeof(*e));
	e->info = info;
	CHECK(fi_fabric(info->fabric_attr, &e->fabric, NULL));
	CHECK(fi_domain(e->fabric, info, &e->domain, NULL));
	struct fi_av_attr av_attr = { .type = FI_AV_TABLE, .count = 4 };
	CHECK(fi_av_open(e->domain, &av_attr, &e->av, NULL));
	struct fi_cq_attr cq_attr = { .format = FI_CQ_FORMAT_TAGGED, .wait_obj = FI_WAIT_NONE };
	CHECK(fi_cq_open(e->domain, &cq_attr, &e->cq, NULL));
	cq_format_note(e->cq, FI_CQ_FORMAT_TAGGED);
	CHECK(fi_endpoint(e->domain, info, &e->ep, NULL));
	CHECK(fi_ep_bind(e->ep, &e->av->fid, 0));
	CHECK(fi_ep_bind(e->ep, &e->cq->fid, FI_TRANSMIT | FI_RECV));
	CHECK(fi_enable(e->ep));
	e->namelen = sizeof(e->name);
	CHECK(fi_getname(&e->ep->fid, e->name, &e->namelen));
	EXPECT(e->namelen == LNX_ADDRLEN, "fi_getname length %zu", e->namelen);
}

static void ep_close(struct ep *e)
{
	CHECK(fi_close(&e->ep->fid));
	CHECK(fi_close(&e->av->fid));
	CHECK(fi_close(&e->cq->fid));
	CHECK(fi_close(&e->domain->fid));
	CHECK(fi_close(&e->fabric->fid));
	fi_freeinfo(e->info);
}

/* Completions read while waiting for another one (they come in any order
 * across operations). */
static struct {
	struct fi_cq_tagged_entry c;
	fi_addr_t src;
} early[8];
static int nearly;

/* Waits for the completion of the operation with context ctx and checks
 * what a user checks. */
static void expect_comp(struct ep *e, void *ctx, uint64_t flags, size_t len, uint64_t tag,
			fi_addr_t src, const char *what)
{
	struct fi_cq_tagged_entry c;
	fi_addr_t from = FI_ADDR_NOTAVAIL;
	int found = 0;
	for (int i = 0; i < nearly && !found; i++) {
		if (early[i].c.op_context == ctx) {
			c = early[i].c;
			from = early[i].src;
			early[i] = early[--nearly];
			found = 1;
		}
	}
	while (!found) {
		wait_ok(e->cq, &c, &from, what);
		if (c.op_context == ctx)
			break;
		EXPECT(nearly < 8, "%s: too many other completions", what);
		early[nearly].c = c;
		early[nearly++].src = from;
	}
	char fb[256];
	EXPECT((c.flags & flags) == flags, "%s: flags %s", what,
	       flags_str(c.flags, fb, sizeof(fb)));
	if (flags & FI_RECV) {
		EXPECT(c.len == len, "%s: len %zu, want %zu", what, c.len, len);
		if (flags & FI_TAGGED)
			EXPECT(c.tag == tag, "%s: tag %#llx", what, (unsigned long long)c.tag);
		EXPECT(from == src, "%s: source %llu, want %llu", what, (unsigned long long)from,
		       (unsigned long long)src);
	}
}

static void server(const char *port, int ready_fd, int done_fd)
{
	struct fi_info *hints = lnx_hints(), *info = NULL;
	strcpy(g_role, "server");

	set_links("shm");
	CHECK_RC(fi_getinfo(TEST_FI_VERSION, NULL, port, FI_SOURCE, hints, &info), -FI_ENODATA);
	set_links(LINK_TCP);
	CHECK(fi_getinfo(TEST_FI_VERSION, NULL, port, FI_SOURCE, hints, &info));
	fi_freeinfo(hints);
	EXPECT(info->src_addr && info->src_addrlen == LNX_ADDRLEN, "src_addr %p len %zu",
	       info->src_addr, info->src_addrlen);
	EXPECT(!info->dest_addr, "FI_SOURCE gave a dest_addr");

	struct ep e;
	ep_open(&e, info);
	char s[256], want[32];
	size_t sl = sizeof(s);
	fi_av_straddr(e.av, e.name, s, &sl);
	snprintf(want, sizeof(want), ":%s", port);
	EXPECT(strstr(s, want), "fi_getname %s does not show port %s", s, port);
	note("bound: %s", s);
	EXPECT(write(ready_fd, "r", 1) == 1, "ready");

	/* The client's name, from a client we do not know yet. */
	uint8_t cname[ADDR_MAX];
	int ctx_name, ctx_req, ctx_rep, ctx_unt;
	POST(e.cq, fi_recv(e.ep, cname, sizeof(cname), NULL, FI_ADDR_UNSPEC, &ctx_name));
	/* The client opens its endpoint only now: on a loaded machine that
	 * takes longer than one wait_ok, so wait (the alarm bounds it). */
	while (!nearly) {
		struct fi_cq_tagged_entry c;
		fi_addr_t from = FI_ADDR_NOTAVAIL;
		struct fi_cq_err_entry err;
		int r = wait_cq(e.cq, &c, &from, &err, WAIT_MS);
		if (r == -FI_ETIMEDOUT || r == -FI_EAGAIN)
			continue;
		CHECK(r);
		early[nearly].c = c;
		early[nearly++].src = from;
	}
	expect_comp(&e, &ctx_name, FI_RECV | FI_MSG, LNX_ADDRLEN, 0, FI_ADDR_NOTAVAIL,
		    "client name");
	fi_addr_t caddr = FI_ADDR_NOTAVAIL;
	CHECK_RC(fi_av_insert(e.av, cname, 1, &caddr, 0, NULL), 1);
	/* Tell the client it is known (as fabtests' address exchange does):
	 * what it sends from now on comes from caddr. */
	int ctx_ack;
	POST(e.cq, fi_send(e.ep, "ack", 4, NULL, caddr, &ctx_ack));
	expect_comp(&e, &ctx_ack, FI_SEND | FI_MSG, 0, 0, 0, "ack send");

	uint8_t *req = xmalloc(REQ_LEN), *rep = xmalloc(REP_LEN), unt[UNT_LEN];
	memset(req, 0, REQ_LEN);
	POST(e.cq, fi_trecv(e.ep, req, REQ_LEN, NULL, caddr, TAG_REQ, 0, &ctx_req));
	expect_comp(&e, &ctx_req, FI_RECV | FI_TAGGED, REQ_LEN, TAG_REQ, caddr, "tagged request");
	EXPECT_PATTERN(req, REQ_LEN, 1);

	fill_pattern(rep, REP_LEN, 2);
	fill_pattern(unt, UNT_LEN, 3);
	POST(e.cq, fi_tsend(e.ep, rep, REP_LEN, NULL, caddr, TAG_REP, &ctx_rep));
	POST(e.cq, fi_send(e.ep, unt, UNT_LEN, NULL, caddr, &ctx_unt));
	expect_comp(&e, &ctx_rep, FI_SEND | FI_TAGGED, 0, 0, 0, "tagged reply send");
	expect_comp(&e, &ctx_unt, FI_SEND | FI_MSG, 0, 0, 0, "untagged reply send");
	/* Stay (progressing) until the client has everything. */
	char d;
	while (read(done_fd, &d, 1) != 1)
		progress_for(e.cq, 10);
	free(req);
	free(rep);
	ep_close(&e);
	note("ok");
}

static int use_svc;

/* fi_av_insertsym and the fi_av_insertsvc forms that fail, in an AV of
 * their own; an AV bound to an EQ. */
static void check_insertsym(struct ep *e, const char *port)
{
	struct fi_av_attr av_attr = { .type = FI_AV_TABLE, .count = 8 };
	struct fid_av *av;
	CHECK(fi_av_open(e->domain, &av_attr, &av, NULL));
	fi_addr_t fa[4];
	memset(fa, 0xff, sizeof(fa));
	int errs[4] = { -7, -7, -7, -7 };
	CHECK_RC(fi_av_insertsym(av, "127.0.0.1", 2, port, 2, fa, FI_MORE | FI_SYNC_ERR, errs), 4);
	EXPECT(!errs[0] && !errs[1] && !errs[2] && !errs[3],
	       "insertsym FI_SYNC_ERR codes %d %d %d %d", errs[0], errs[1], errs[2], errs[3]);
	int p0 = atoi(port);
	for (int n = 0; n < 2; n++) {
		for (int sv = 0; sv < 2; sv++) {
			char node[32], svc[16];
			snprintf(node, sizeof(node), "127.0.0.%d", 1 + n);
			snprintf(svc, sizeof(svc), "%d", p0 + sv);
			struct fi_info *hints = lnx_hints(), *want = NULL;
			CHECK(fi_getinfo(TEST_FI_VERSION, node, svc, 0, hints, &want));
			fi_freeinfo(hints);
			uint8_t back[ADDR_MAX];
			size_t len = sizeof(back);
			fi_addr_t a = fa[n * 2 + sv];
			EXPECT(a != FI_ADDR_NOTAVAIL, "insertsym %s:%s not inserted", node, svc);
			CHECK(fi_av_lookup(av, a, back, &len));
			EXPECT(len == LNX_ADDRLEN && !memcmp(back, want->dest_addr, LNX_ADDRLEN),
			       "insertsym address %d is not fi_getinfo's for %s:%s", n * 2 + sv,
			       node, svc);
			fi_freeinfo(want);
		}
	}
	CHECK_RC(fi_av_insertsvc(av, "127.0.0.1", NULL, fa, 0, NULL), -FI_EINVAL);
	CHECK_RC(fi_av_insertsym(av, "127.0.0.1", 1, "http", 2, fa, 0, NULL), -FI_EINVAL);
	CHECK_RC(fi_av_insertsym(av, "127.0.0.1", 0, port, 1, fa, 0, NULL), -FI_EINVAL);
	CHECK_RC(fi_av_insertsvc(av, "127.0.0.1", port, fa, FI_SEND, NULL), -FI_EBADFLAGS);
	CHECK(fi_close(&av->fid));

	struct fi_eq_attr eq_attr = { .wait_obj = FI_WAIT_UNSPEC };
	struct fid_eq *eq;
	int ctx = 99;
	CHECK(fi_eq_open(e->fabric, &eq_attr, &eq, NULL));
	av_attr.flags = FI_EVENT;
	CHECK(fi_av_open(e->domain, &av_attr, &av, NULL));
	CHECK_RC(fi_av_insertsvc(av, "127.0.0.1", port, fa, 0, &ctx), -FI_ENOEQ);
	CHECK(fi_av_bind(av, &eq->fid, 0));
	fa[0] = FI_ADDR_NOTAVAIL;
	CHECK_RC(fi_av_insertsvc(av, "127.0.0.1", port, fa, FI_SYNC_ERR, &ctx), 0);
	EXPECT(ctx == 99, "FI_SYNC_ERR with an EQ wrote %d into the context", ctx);
	uint32_t event = 0;
	struct fi_eq_entry ev;
	memset(&ev, 0, sizeof(ev));
	CHECK_RC(fi_eq_sread(eq, &event, &ev, sizeof(ev), -1, 0), sizeof(ev));
	EXPECT(event == FI_AV_COMPLETE && ev.fid == &av->fid && ev.context == &ctx && ev.data == 1,
	       "insertsvc event %u fid %p context %p data %llu", event, (void *)ev.fid, ev.context,
	       (unsigned long long)ev.data);
	EXPECT(fa[0] != FI_ADDR_NOTAVAIL, "insertsvc through the EQ gave no fi_addr");
	CHECK(fi_close(&av->fid));
	CHECK(fi_close(&eq->fid));
	note("insertsym: ok");
}

static void client(const char *port, int ready_fd, int done_fd)
{
	struct fi_info *hints = lnx_hints(), *info = NULL;
	char r;
	strcpy(g_role, "client");
	set_links(LINK_TCP);
	EXPECT(read(ready_fd, &r, 1) == 1, "server never got ready");

	CHECK(fi_getinfo(TEST_FI_VERSION, "127.0.0.1", port, 0, hints, &info));
	fi_freeinfo(hints);
	EXPECT(info->dest_addr && info->dest_addrlen == LNX_ADDRLEN, "dest_addr %p len %zu",
	       info->dest_addr, info->dest_addrlen);

	struct ep e;
	ep_open(&e, info);
	fi_addr_t saddr = FI_ADDR_NOTAVAIL;
	if (use_svc) {
		CHECK_RC(fi_av_insertsvc(e.av, "127.0.0.1", port, &saddr, 0, NULL), 1);
		uint8_t back[ADDR_MAX];
		size_t len = sizeof(back);
		CHECK(fi_av_lookup(e.av, saddr, back, &len));
		EXPECT(len == LNX_ADDRLEN && !memcmp(back, info->dest_addr, LNX_ADDRLEN),
		       "fi_av_insertsvc's address is not fi_getinfo's dest_addr");
	} else {
		CHECK_RC(fi_av_insert(e.av, info->dest_addr, 1, &saddr, 0, NULL), 1);
	}
	char s[256];
	size_t sl = sizeof(s);
	fi_av_straddr(e.av, info->dest_addr, s, &sl);
	note("server at %s", s);

	uint8_t *req = xmalloc(REQ_LEN), *rep = xmalloc(REP_LEN), unt[UNT_LEN];
	int ctx_name, ctx_req, ctx_rep, ctx_unt;
	fill_pattern(req, REQ_LEN, 1);
	memset(rep, 0, REP_LEN);
	memset(unt, 0, UNT_LEN);
	char ack[8] = "";
	int ctx_ack;
	POST(e.cq, fi_trecv(e.ep, rep, REP_LEN, NULL, saddr, TAG_REP, 0, &ctx_rep));
	POST(e.cq, fi_recv(e.ep, ack, sizeof(ack), NULL, saddr, &ctx_ack));
	POST(e.cq, fi_send(e.ep, e.name, e.namelen, NULL, saddr, &ctx_name));
	expect_comp(&e, &ctx_name, FI_SEND | FI_MSG, 0, 0, 0, "name send");
	expect_comp(&e, &ctx_ack, FI_RECV | FI_MSG, 4, 0, saddr, "ack");
	EXPECT(!strcmp(ack, "ack"), "ack data %.8s", ack);
	POST(e.cq, fi_recv(e.ep, unt, UNT_LEN, NULL, saddr, &ctx_unt));
	POST(e.cq, fi_tsend(e.ep, req, REQ_LEN, NULL, saddr, TAG_REQ, &ctx_req));
	expect_comp(&e, &ctx_req, FI_SEND | FI_TAGGED, 0, 0, 0, "request send");
	expect_comp(&e, &ctx_rep, FI_RECV | FI_TAGGED, REP_LEN, TAG_REP, saddr, "tagged reply");
	EXPECT_PATTERN(rep, REP_LEN, 2);
	expect_comp(&e, &ctx_unt, FI_RECV | FI_MSG, UNT_LEN, 0, saddr, "untagged reply");
	EXPECT_PATTERN(unt, UNT_LEN, 3);
	if (use_svc)
		check_insertsym(&e, port);
	EXPECT(write(done_fd, "d", 1) == 1, "done");
	free(req);
	free(rep);
	ep_close(&e);
	note("ok");
}

static int free_port(void)
{
	int s = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t l = sizeof(a);
	if (s < 0 || bind(s, (struct sockaddr *)&a, sizeof(a)) ||
	    getsockname(s, (struct sockaddr *)&a, &l))
		FAIL("no free port");
	close(s);
	return ntohs(a.sin_port);
}

int main(int argc, char **argv)
{
	int distinct = argc > 1 && !strcmp(argv[1], "tcp");
	use_svc = argc > 2 && !strcmp(argv[2], "svc");
	int ready[2], done[2];
	char port[16];
	snprintf(port, sizeof(port), "%d", free_port());
	if (pipe(ready) || pipe(done))
		FAIL("pipe");
	/* The server reads done without blocking while it progresses. */
	fcntl(done[0], F_SETFL, O_NONBLOCK);
	pid_t pid[2];
	for (int i = 0; i < 2; i++) {
		pid[i] = fork();
		if (pid[i] < 0)
			FAIL("fork");
		if (pid[i] == 0) {
			alarm(PAIR_TIMEOUT_S * 3);
			if (distinct)
				setenv("FI_LNX_NODE_ID", i ? "node-client" : "node-server", 1);
			if (i == 0)
				server(port, ready[1], done[0]);
			else
				client(port, ready[0], done[1]);
			_exit(0);
		}
	}
	int fails = 0;
	for (int i = 0; i < 2; i++) {
		int st;
		waitpid(pid[i], &st, 0);
		if (!WIFEXITED(st) || WEXITSTATUS(st)) {
			fprintf(stderr, "%s failed (status %#x)\n", i ? "client" : "server", st);
			fails++;
			kill(pid[1 - i], SIGKILL);
		}
	}
	if (fails)
		return 1;
	printf("getinfo_node %s%s: ok\n", distinct ? "tcp" : "link", use_svc ? " svc" : "");
	return 0;
}
