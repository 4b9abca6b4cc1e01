/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * fi_bench: two-process tagged ping-pong and streaming bandwidth over any
 * libfabric provider, several providers side by side in one invocation.
 * With -R, one-sided operations instead (RMA mode, below).
 *
 *   fi_bench [-R] [-r rounds] [-n iters] [-w warmup] [-s size,size,...] [-c file.csv] [-q] [-p]
 *            CASE...
 *   CASE = label=prov[@links][#nodeid][%mode][^VAR=value]
 *          e.g. lnx=lnx@shm  shm=shm  lnxdev=lnx@shm%dev
 *
 * Modes: "host" (default: one buffer, registered once if the provider
 * wants FI_MR_LOCAL), "regmsg" (Open MPI 5.0.6's accelerator pattern on
 * host memory: every send and receive registers its buffer and closes the
 * MR at completion), "dev" (the buffer is device memory of the CUDA library
 * $FI_LNX_CUDA_LIB, e.g. the emulated device, registered once with
 * FI_HMEM_CUDA), "devregmsg" (both); "safe" added to any of them asks
 * for FI_THREAD_SAFE (default FI_THREAD_DOMAIN), "dc" for FI_DELIVERY_COMPLETE
 * transmit completions (tx op_flags), "lnxcore" for what lnx asks of a
 * network core (RMA caps, no FI_MR_LOCAL, a 16 KiB inject size; with
 * ^FI_OFI_RXM_SAR_LIMIT=0, tcp;ofi_rxm as lnx's peer path runs it: the
 * core alone, without lnx). "^VAR=value" sets an environment
 * variable for the case's processes; several may follow each other
 * ("^A=1^B=2").
 *
 * For each round, each case runs in a fresh pair of processes (forked from
 * this launcher, which never initialises libfabric itself), so every case
 * sees its own environment. Cases are interleaved round by round and the
 * median over rounds is reported, with each case's ratio to the first.
 * With "#id" the two processes get different FI_LNX_NODE_ID values
 * (id-0, id-1), so lnx treats them as peers on different nodes.
 *
 * The table goes to stdout, with each case's ratios to the first and the
 * one-way latency it adds to the first's in nanoseconds (the fast-core
 * row of make bench: what lnx adds over libfabric's shm); with -c the same
 * medians, ratios and added nanoseconds also go to
 * a CSV file, one row per case and size, cases in command-line order
 * (tests/bench/plot.gp draws it). Progress, one line per round, goes to
 * stderr unless -q. With -p a second table follows: the 50th, 90th and
 * 99th percentiles of the ping-pong's per-iteration one-way latency (each
 * of rank 0's round trips timed on its own, halved), where a mean that
 * moved shows whether every message got slower or a few much slower.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/wait.h>
#include <rdma/fabric.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_tagged.h>
#include <rdma/fi_rma.h>
#include <rdma/fi_atomic.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_errno.h>
#include <dlfcn.h>

#define MAX_SIZES  32
#define MAX_CASES  8
#define MAX_ROUNDS 15
#define WINDOW	   64
#define TAG_DATA   0x1234
#define TAG_ACK	   0x99

static int warmup = 50000; /* 1-byte round trips before the first size (-w) */

struct bcase {
	char label[32];
	char prov[64];
	char links[256];
	char node[64];
	char mode[16];
	char env[128];
};

/* The percentiles -p reports: a mean can hide that a few messages in a
 * hundred take twice as long (issue #20's 32 KiB row: the median level
 * with the core's, the 99th percentile not). */
#define NTAIL 3
static const int tail_pct[NTAIL] = { 50, 90, 99 };

struct result {
	double lat_us[MAX_SIZES];
	double bw_mbs[MAX_SIZES];
	/* RMA mode: lat_us/bw_mbs are the write figures, these the read ones. */
	double rlat_us[MAX_SIZES];
	double rbw_mbs[MAX_SIZES];
	double fadd_us;
	/* -p: the ping-pong's per-iteration one-way latency (half of each
	 * round trip rank 0 timed), its 50th, 90th and 99th percentiles. */
	double tail_us[MAX_SIZES][NTAIL];
};

static size_t sizes[MAX_SIZES];
static int nsizes;
static int iters = 2000;
static int rma_mode;
static int tails; /* -p */

#define CHK(call)                                                                            \
	do {                                                                                 \
		int _r = (int)(call);                                                        \
		if (_r < 0) {                                                                \
			fprintf(stderr, "fi_bench: %s:%d %s: %s (%d)\n", __FILE__, __LINE__, \
				#call, fi_strerror(-_r), _r);                                \
			_exit(2);                                                            \
		}                                                                            \
	} while (0)

struct ctx {
	struct fi_info *info;
	struct fid_fabric *fab;
	struct fid_domain *dom;
	struct fid_ep *ep;
	struct fid_av *av;
	struct fid_cq *cq;
	fi_addr_t peer;
	char *buf;
	void *desc;
	struct fid_mr *mr;
	struct fi_context2 ctx[WINDOW + 1];
	int dev, regmsg;
	struct fid_mr *slot_mr[WINDOW + 1]; /* regmsg: per-operation MRs */
	uint64_t rkey, raddr;		    /* RMA mode: the peer's buffer */
	uint64_t fadd_res;
};

/* Device memory through the CUDA driver API of $FI_LNX_CUDA_LIB. */
static void *dev_alloc(size_t n)
{
	const char *path = getenv("FI_LNX_CUDA_LIB");
	void *lib = path ? dlopen(path, RTLD_NOW | RTLD_GLOBAL) : NULL;
	if (!lib) {
		fprintf(stderr, "fi_bench: mode dev needs FI_LNX_CUDA_LIB (%s)\n", dlerror());
		_exit(7);
	}
	int (*init)(unsigned) = dlsym(lib, "cuInit");
	int (*get)(int *, int) = dlsym(lib, "cuDeviceGet");
	int (*retain)(void **, int) = dlsym(lib, "cuDevicePrimaryCtxRetain");
	int (*setcur)(void *) = dlsym(lib, "cuCtxSetCurrent");
	int (*alloc)(uintptr_t *, size_t) = dlsym(lib, "cuMemAlloc_v2");
	int d;
	void *ctx;
	uintptr_t p = 0;
	if (!init || !get || !retain || !setcur || !alloc || init(0) || get(&d, 0) ||
	    retain(&ctx, d) || setcur(ctx) || alloc(&p, n)) {
		fprintf(stderr, "fi_bench: no CUDA device in %s\n", path);
		_exit(7);
	}
	return (void *)p;
}

static struct fid_mr *reg(struct ctx *c, size_t len)
{
	struct iovec iov = { .iov_base = c->buf, .iov_len = len };
	/* Open MPI's requested_key is 0; a core that picks no keys itself
	 * (tcp;ofi_rxm on 1.17) rejects a second live key 0 with FI_ENOKEY, so
	 * there each registration asks for a fresh key, as btl/ofi does. */
	static uint64_t next_key;
	uint64_t key = c->info->domain_attr->mr_mode & FI_MR_PROV_KEY ? 0 : ++next_key;
	uint64_t access = FI_SEND | FI_RECV;
	if (rma_mode)
		access |= FI_READ | FI_WRITE | FI_REMOTE_READ | FI_REMOTE_WRITE;
	struct fi_mr_attr attr = { .mr_iov = &iov,
				   .iov_count = 1,
				   .access = access,
				   .requested_key = key,
				   .iface = c->dev ? FI_HMEM_CUDA : FI_HMEM_SYSTEM };
	struct fid_mr *mr;
	CHK(fi_mr_regattr(c->dom, &attr, 0, &mr));
	return mr;
}

/* regmsg: an operation's MR is closed once its completion is read. */
static void *op_desc(struct ctx *c, size_t len, int slot)
{
	if (!c->regmsg)
		return c->desc;
	c->slot_mr[slot] = reg(c, len);
	return fi_mr_desc(c->slot_mr[slot]);
}

static void release_mrs(struct ctx *c)
{
	if (!c->regmsg)
		return;
	for (int i = 0; i <= WINDOW; i++)
		if (c->slot_mr[i]) {
			fi_close(&c->slot_mr[i]->fid);
			c->slot_mr[i] = NULL;
		}
}

static int cmpd(const void *a, const void *b);

static double now_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static void wait_n(struct ctx *c, int n)
{
	struct fi_cq_tagged_entry e[16];
	double start = now_us();
	while (n > 0) {
		ssize_t r = fi_cq_read(c->cq, e, n < 16 ? n : 16);
		if (r > 0) {
			n -= r;
			continue;
		}
		if (r == -FI_EAVAIL) {
			struct fi_cq_err_entry err = { 0 };
			fi_cq_readerr(c->cq, &err, 0);
			fprintf(stderr, "fi_bench: completion error %s\n", fi_strerror(err.err));
			_exit(3);
		}
		if (r != -FI_EAGAIN)
			CHK(r);
		if (now_us() - start > 60e6) {
			fprintf(stderr, "fi_bench: timed out waiting for completions\n");
			_exit(4);
		}
	}
	release_mrs(c);
}

/* retry_wait progresses while a post is refused (-FI_EAGAIN), for at most
 * the 60 s wait_n allows: a peer that exited never drains, and a rank
 * retrying for ever outlived its pair (two benchmarks at SCHED_FIFO at
 * once starve one rank of each pair, and the other spun here). */
static void retry_wait(struct ctx *c, double start)
{
	fi_cq_read(c->cq, NULL, 0);
	if (now_us() - start > 60e6) {
		fprintf(stderr, "fi_bench: timed out posting (-FI_EAGAIN for 60 s)\n");
		_exit(4);
	}
}

static void post_recv(struct ctx *c, size_t len, uint64_t tag, int slot)
{
	ssize_t r;
	void *desc = op_desc(c, len, slot);
	double start = now_us();
	while ((r = fi_trecv(c->ep, c->buf, len, desc, c->peer, tag, 0, &c->ctx[slot])) ==
	       -FI_EAGAIN)
		retry_wait(c, start);
	CHK(r);
}

static void post_send(struct ctx *c, size_t len, uint64_t tag, int slot)
{
	ssize_t r;
	void *desc = op_desc(c, len, slot);
	double start = now_us();
	while ((r = fi_tsend(c->ep, c->buf, len, desc, c->peer, tag, &c->ctx[slot])) == -FI_EAGAIN)
		retry_wait(c, start);
	CHK(r);
}

static void setup(struct ctx *c, const struct bcase *bc, size_t maxsize, int rfd, int wfd)
{
	struct fi_info *hints = fi_allocinfo();
	c->dev = strstr(bc->mode, "dev") != NULL;
	c->regmsg = strstr(bc->mode, "regmsg") != NULL;
	hints->caps = FI_TAGGED | FI_MSG | (c->dev ? FI_HMEM : 0) |
		      (rma_mode ? FI_RMA | FI_ATOMIC | FI_READ | FI_WRITE | FI_REMOTE_READ |
					  FI_REMOTE_WRITE :
				  0);
	hints->mode = FI_CONTEXT | FI_CONTEXT2;
	hints->ep_attr->type = FI_EP_RDM;
	hints->domain_attr->mr_mode = FI_MR_LOCAL | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED |
				      FI_MR_PROV_KEY | (c->dev ? FI_MR_HMEM : 0);
	hints->domain_attr->av_type = FI_AV_TABLE;
	if (strstr(bc->mode, "lnxcore") != NULL) {
		/* As peers/ofi/core.go asks (GetInfo, WantInject's first). */
		hints->caps |= FI_RMA | FI_READ | FI_WRITE | FI_REMOTE_READ | FI_REMOTE_WRITE;
		hints->domain_attr->mr_mode &= ~(uint64_t)FI_MR_LOCAL;
		hints->tx_attr->inject_size = 16384;
	}
	/* Mode "dc": delivery-complete transmit completions, as Open MPI's
	 * btl/ofi and Sandia OpenSHMEM ask for their one-sided operations
	 * (lnx gives no weaker completion). */
	if (strstr(bc->mode, "dc") != NULL)
		hints->tx_attr->op_flags = FI_DELIVERY_COMPLETE;
	/* One thread per process: FI_THREAD_DOMAIN, as Open MPI (without
	 * MPI_THREAD_MULTIPLE) and fabtests ask; mode "safe" asks for
	 * FI_THREAD_SAFE instead. */
	hints->domain_attr->threading =
		strstr(bc->mode, "safe") != NULL ? FI_THREAD_SAFE : FI_THREAD_DOMAIN;
	hints->fabric_attr->prov_name = strdup(bc->prov);
	CHK(fi_getinfo(FI_VERSION(FI_MAJOR_VERSION, FI_MINOR_VERSION), NULL, NULL, 0, hints,
		       &c->info));
	fi_freeinfo(hints);
	CHK(fi_fabric(c->info->fabric_attr, &c->fab, NULL));
	CHK(fi_domain(c->fab, c->info, &c->dom, NULL));
	struct fi_av_attr av_attr = { .type = FI_AV_TABLE };
	struct fi_cq_attr cq_attr = { .format = FI_CQ_FORMAT_TAGGED, .wait_obj = FI_WAIT_NONE };
	CHK(fi_av_open(c->dom, &av_attr, &c->av, NULL));
	CHK(fi_cq_open(c->dom, &cq_attr, &c->cq, NULL));
	CHK(fi_endpoint(c->dom, c->info, &c->ep, NULL));
	CHK(fi_ep_bind(c->ep, &c->av->fid, 0));
	CHK(fi_ep_bind(c->ep, &c->cq->fid, FI_TRANSMIT | FI_RECV));
	CHK(fi_enable(c->ep));

	if (c->dev) {
		c->buf = dev_alloc(maxsize);
	} else {
		c->buf = aligned_alloc(4096, (maxsize + 4095) & ~(size_t)4095);
		memset(c->buf, 0xa5, maxsize);
	}
	if (!c->regmsg && (rma_mode || c->dev || c->info->domain_attr->mr_mode & FI_MR_LOCAL)) {
		c->mr = reg(c, maxsize);
		c->desc = fi_mr_desc(c->mr);
	}

	char name[1024];
	size_t len = sizeof(name);
	CHK(fi_getname(&c->ep->fid, name, &len));
	if (write(wfd, &len, sizeof(len)) != sizeof(len) || write(wfd, name, len) != (ssize_t)len)
		_exit(5);
	char peer[1024];
	size_t plen;
	if (read(rfd, &plen, sizeof(plen)) != sizeof(plen) || plen > sizeof(peer) ||
	    read(rfd, peer, plen) != (ssize_t)plen)
		_exit(5);
	if (fi_av_insert(c->av, peer, 1, &c->peer, 0, NULL) != 1) {
		fprintf(stderr, "fi_bench: fi_av_insert failed\n");
		_exit(5);
	}
	if (rma_mode) {
		/* Each side tells the other how to address its buffer. */
		uint64_t mine[2] = { fi_mr_key(c->mr),
				     c->info->domain_attr->mr_mode & FI_MR_VIRT_ADDR ?
					     (uint64_t)(uintptr_t)c->buf :
					     0 };
		uint64_t theirs[2];
		if (write(wfd, mine, sizeof(mine)) != sizeof(mine) ||
		    read(rfd, theirs, sizeof(theirs)) != sizeof(theirs))
			_exit(5);
		c->rkey = theirs[0];
		c->raddr = theirs[1];
	}
}

/* RMA mode: one operation of kind op ('w', 'r', 'f') of len bytes. */
static void post_rma(struct ctx *c, int op, size_t len, int slot)
{
	ssize_t r;
	double start = now_us();
	for (;;) {
		static uint64_t one = 1;
		switch (op) {
		case 'w':
			r = fi_write(c->ep, c->buf, len, c->desc, c->peer, c->raddr, c->rkey,
				     &c->ctx[slot]);
			break;
		case 'r':
			r = fi_read(c->ep, c->buf, len, c->desc, c->peer, c->raddr, c->rkey,
				    &c->ctx[slot]);
			break;
		default:
			r = fi_fetch_atomic(c->ep, &one, 1, NULL, &c->fadd_res, NULL, c->peer,
					    c->raddr, c->rkey, FI_UINT64, FI_SUM, &c->ctx[slot]);
		}
		if (r != -FI_EAGAIN)
			break;
		retry_wait(c, start);
	}
	CHK(r);
}

/* RMA mode, rank 0: latency (us) of n operations one at a time, or with
 * bw set bandwidth (MB/s) of windows of WINDOW in flight. */
static double rma_measure(struct ctx *c, int op, size_t len, int n, int bw)
{
	int warm = n / 10 + 5;
	double t0 = 0;
	if (!bw) {
		for (int i = 0; i < warm + n; i++) {
			if (i == warm)
				t0 = now_us();
			post_rma(c, op, len, 0);
			wait_n(c, 1);
		}
		return (now_us() - t0) / n;
	}
	int windows = len >= (1 << 20) ? 4 : len >= 65536 ? 16 : 64;
	for (int w = 0; w < windows + 2; w++) {
		if (w == 2)
			t0 = now_us();
		for (int k = 0; k < WINDOW; k++)
			post_rma(c, op, len, k);
		wait_n(c, WINDOW);
	}
	return (double)len * WINDOW * windows / (now_us() - t0);
}

/* RMA mode: rank 0 measures, rank 1 progresses until rank 0's
 * zero-byte "done" message arrives. */
static void run_rma(int rank, struct ctx *c, struct result *res)
{
	if (rank == 1) {
		post_recv(c, 0, TAG_ACK, WINDOW);
		wait_n(c, 1); /* reading the CQ progresses the operations aimed at us */
		return;
	}
	for (int i = 0; i < warmup / 10; i++) {
		post_rma(c, 'w', 1, 0);
		wait_n(c, 1);
	}
	for (int s = 0; s < nsizes; s++) {
		size_t len = sizes[s];
		int n = len >= (1 << 20) ? iters / 20 + 10 : len >= 65536 ? iters / 4 + 10 : iters;
		res->lat_us[s] = rma_measure(c, 'w', len, n, 0);
		res->rlat_us[s] = rma_measure(c, 'r', len, n, 0);
		res->bw_mbs[s] = rma_measure(c, 'w', len, n, 1);
		res->rbw_mbs[s] = rma_measure(c, 'r', len, n, 1);
	}
	res->fadd_us = rma_measure(c, 'f', 8, iters, 0);
	post_send(c, 0, TAG_ACK, WINDOW);
	wait_n(c, 1);
}

static void teardown(struct ctx *c)
{
	if (c->mr)
		fi_close(&c->mr->fid);
	fi_close(&c->ep->fid);
	fi_close(&c->av->fid);
	fi_close(&c->cq->fid);
	fi_close(&c->dom->fid);
	fi_close(&c->fab->fid);
	fi_freeinfo(c->info);
	if (!c->dev)
		free(c->buf);
}

/* One process of a pair; rank 0 measures and writes its result to resfd. */
static void run_rank(int rank, const struct bcase *bc, int rfd, int wfd, int resfd)
{
	struct ctx c = { 0 };
	size_t maxsize = 0;
	for (int i = 0; i < nsizes; i++)
		if (sizes[i] > maxsize)
			maxsize = sizes[i];
	if (bc->links[0])
		setenv("FI_LNX_PROV_LINKS", bc->links, 1);
	if (bc->env[0]) {
		char *env = strdup(bc->env), *save = NULL;
		for (char *t = strtok_r(env, "^", &save); t; t = strtok_r(NULL, "^", &save))
			putenv(t); /* env is never freed: the strings stay valid */
	}
	if (bc->node[0]) {
		char id[96];
		snprintf(id, sizeof(id), "%s-%d", bc->node, rank);
		setenv("FI_LNX_NODE_ID", id, 1);
	}
	setup(&c, bc, maxsize, rfd, wfd);
	struct result res = { 0 };
	if (rma_mode) {
		run_rma(rank, &c, &res);
		if (rank == 0 && write(resfd, &res, sizeof(res)) != sizeof(res))
			_exit(6);
		teardown(&c);
		_exit(0);
	}

	/* Warm-up before any measurement, the same for every case: a process
	 * that has just started runs slower for some milliseconds (page
	 * faults, lazy binding, and for lnx the Go runtime's monitor thread,
	 * which wakes every 20 us at first and backs off to 10 ms). */
	for (int i = 0; i < warmup; i++) {
		if (rank == 0) {
			post_recv(&c, 1, TAG_DATA, 1);
			post_send(&c, 1, TAG_DATA, 0);
			wait_n(&c, 2);
		} else {
			post_recv(&c, 1, TAG_DATA, 1);
			wait_n(&c, 1);
			post_send(&c, 1, TAG_DATA, 0);
			wait_n(&c, 1);
		}
	}

	for (int s = 0; s < nsizes; s++) {
		size_t len = sizes[s];
		int n = len >= (1 << 20) ? iters / 20 + 10 : len >= 65536 ? iters / 4 + 10 : iters;
		int warm = n / 10 + 5;
		double t0 = 0;
		/* -p: each round trip of rank 0's, timed on its own. */
		double *rtt = tails && rank == 0 ? malloc(sizeof(double) * (size_t)n) : NULL;
		if (tails && rank == 0 && !rtt)
			_exit(7);
		/* Ping-pong: the receive is always pre-posted before the peer sends. */
		for (int i = 0; i < warm + n; i++) {
			if (i == warm)
				t0 = now_us();
			if (rank == 0) {
				double a = rtt ? now_us() : 0;
				post_recv(&c, len, TAG_DATA, 1);
				post_send(&c, len, TAG_DATA, 0);
				wait_n(&c, 2);
				if (rtt && i >= warm)
					rtt[i - warm] = now_us() - a;
			} else {
				post_recv(&c, len, TAG_DATA, 1);
				wait_n(&c, 1);
				post_send(&c, len, TAG_DATA, 0);
				wait_n(&c, 1);
			}
		}
		res.lat_us[s] = (now_us() - t0) / (2.0 * n);
		if (rtt) {
			qsort(rtt, (size_t)n, sizeof(double), cmpd);
			for (int t = 0; t < NTAIL; t++)
				res.tail_us[s][t] = rtt[(size_t)n * (size_t)tail_pct[t] / 100] / 2;
			free(rtt);
		}

		/* Streaming: a window of sends, then a zero-byte ack. */
		int windows = len >= (1 << 20) ? 4 : len >= 65536 ? 16 : 64;
		for (int w = 0; w < windows + 2; w++) {
			if (w == 2)
				t0 = now_us();
			if (rank == 0) {
				post_recv(&c, 0, TAG_ACK, WINDOW);
				for (int k = 0; k < WINDOW; k++)
					post_send(&c, len, TAG_DATA, k);
				wait_n(&c, WINDOW + 1);
			} else {
				for (int k = 0; k < WINDOW; k++)
					post_recv(&c, len, TAG_DATA, k);
				wait_n(&c, WINDOW);
				post_send(&c, 0, TAG_ACK, WINDOW);
				wait_n(&c, 1);
			}
		}
		double el = now_us() - t0;
		res.bw_mbs[s] = (double)len * WINDOW * windows / el; /* bytes/us = MB/s */
	}
	if (rank == 0 && write(resfd, &res, sizeof(res)) != sizeof(res))
		_exit(6);
	teardown(&c);
	_exit(0);
}

static int run_pair(const struct bcase *bc, struct result *out)
{
	int a2b[2], b2a[2], res[2];
	if (pipe(a2b) || pipe(b2a) || pipe(res))
		return -1;
	/* Each rank closes the ends it does not use, so that a rank whose
	 * peer died in its setup reads end-of-file instead of waiting for
	 * ever for the peer's address. */
	pid_t p0 = fork();
	if (p0 == 0) {
		close(a2b[0]);
		close(b2a[1]);
		close(res[0]);
		run_rank(0, bc, b2a[0], a2b[1], res[1]);
	}
	pid_t p1 = fork();
	if (p1 == 0) {
		close(b2a[0]);
		close(a2b[1]);
		close(res[0]);
		run_rank(1, bc, a2b[0], b2a[1], res[1]);
	}
	close(res[1]);
	close(a2b[0]);
	close(a2b[1]);
	close(b2a[0]);
	close(b2a[1]);
	ssize_t got = read(res[0], out, sizeof(*out));
	close(res[0]);
	int st0 = 0, st1 = 0;
	waitpid(p0, &st0, 0);
	waitpid(p1, &st1, 0);
	if (got != sizeof(*out) || !WIFEXITED(st0) || WEXITSTATUS(st0) || !WIFEXITED(st1) ||
	    WEXITSTATUS(st1)) {
		fprintf(stderr, "fi_bench: case %s failed (status %d/%d)\n", bc->label, st0, st1);
		return -1;
	}
	return 0;
}

static int cmpd(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
	qsort(v, n, sizeof(double), cmpd);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static void fmt_size(size_t s, char *buf, size_t len)
{
	if (s >= (1 << 20) && s % (1 << 20) == 0)
		snprintf(buf, len, "%zuM", s >> 20);
	else if (s >= 1024 && s % 1024 == 0)
		snprintf(buf, len, "%zuK", s >> 10);
	else
		snprintf(buf, len, "%zu", s);
}

/* -p's table: each case's percentiles of the ping-pong's per-iteration
 * one-way latency, medians over the rounds, and their ratios to the first
 * case's. */
static void print_tails(double (*tail)[MAX_SIZES][NTAIL][MAX_ROUNDS], const struct bcase *cases,
			int ncases, int rounds)
{
	printf("# ping-pong per-iteration one-way latency (us): percentiles p50 p90 p99 of each "
	       "run's iterations, medians of %d rounds; ratio = case / %s\n",
	       rounds, cases[0].label);
	printf("%-8s", "size");
	for (int k = 0; k < ncases; k++)
		for (int t = 0; t < NTAIL; t++)
			printf(" %10s_p%d", cases[k].label, tail_pct[t]);
	for (int k = 1; k < ncases; k++)
		for (int t = 0; t < NTAIL; t++)
			printf(" %7s/%s_p%d", cases[k].label, cases[0].label, tail_pct[t]);
	printf("\n");
	for (int s = 0; s < nsizes; s++) {
		char sz[24];
		double m[MAX_CASES][NTAIL];
		fmt_size(sizes[s], sz, sizeof(sz));
		printf("%-8s", sz);
		for (int k = 0; k < ncases; k++)
			for (int t = 0; t < NTAIL; t++) {
				m[k][t] = median(tail[k][s][t], rounds);
				printf(" %14.3f", m[k][t]);
			}
		for (int k = 1; k < ncases; k++)
			for (int t = 0; t < NTAIL; t++)
				printf(" %14.2fx", m[k][t] / m[0][t]);
		printf("\n");
	}
}

int main(int argc, char **argv)
{
	int rounds = 5, opt, quiet = 0;
	const char *sizelist = "1,8,64,512,4096,65536,1048576,4194304", *csvpath = NULL;
	while ((opt = getopt(argc, argv, "Rr:n:w:s:c:qp")) != -1) {
		switch (opt) {
		case 'R':
			rma_mode = 1;
			break;
		case 'r':
			rounds = atoi(optarg);
			break;
		case 'n':
			iters = atoi(optarg);
			break;
		case 'w':
			warmup = atoi(optarg);
			break;
		case 's':
			sizelist = optarg;
			break;
		case 'c':
			csvpath = optarg;
			break;
		case 'q':
			quiet = 1;
			break;
		case 'p':
			tails = 1;
			break;
		default:
			fprintf(stderr,
				"usage: %s [-R] [-r rounds] [-n iters] [-w warmup] [-s sizes]"
				" [-c file.csv] [-q] [-p] label=prov[@links][#node]...\n",
				argv[0]);
			return 1;
		}
	}
	/* Keep tcp on loopback: benchmarks never leave this machine. */
	setenv("FI_TCP_IFACE", "lo", 0);
	if (rounds < 1 || rounds > MAX_ROUNDS)
		rounds = 5;
	char *sl = strdup(sizelist);
	for (char *t = strtok(sl, ","); t && nsizes < MAX_SIZES; t = strtok(NULL, ","))
		sizes[nsizes++] = strtoull(t, NULL, 0);
	struct bcase cases[MAX_CASES];
	int ncases = 0;
	for (int i = optind; i < argc && ncases < MAX_CASES; i++) {
		struct bcase *bc = &cases[ncases++];
		memset(bc, 0, sizeof(*bc));
		char *spec = strdup(argv[i]);
		char *eq = strchr(spec, '=');
		char *prov = eq ? eq + 1 : spec;
		snprintf(bc->label, sizeof(bc->label), "%.*s",
			 eq ? (int)(eq - spec) : (int)strlen(spec), spec);
		char *caret = strchr(prov, '^');
		if (caret) {
			*caret = 0;
			snprintf(bc->env, sizeof(bc->env), "%s", caret + 1);
		}
		char *pct = strchr(prov, '%');
		if (pct) {
			*pct = 0;
			snprintf(bc->mode, sizeof(bc->mode), "%s", pct + 1);
		}
		char *hash = strchr(prov, '#');
		if (hash) {
			*hash = 0;
			snprintf(bc->node, sizeof(bc->node), "%s", hash + 1);
		}
		char *at = strchr(prov, '@');
		if (at) {
			*at = 0;
			snprintf(bc->links, sizeof(bc->links), "%s", at + 1);
		}
		snprintf(bc->prov, sizeof(bc->prov), "%s", prov);
		free(spec);
	}
	if (ncases == 0) {
		fprintf(stderr, "fi_bench: no cases given\n");
		return 1;
	}
	/* Opened before the run, so that a bad path fails at once. */
	FILE *csv = NULL;
	if (csvpath && !(csv = fopen(csvpath, "w"))) {
		fprintf(stderr, "fi_bench: %s: %s\n", csvpath, strerror(errno));
		return 1;
	}
	if (rma_mode && csv) {
		fclose(csv);
		csv = NULL;
		remove(csvpath);
	}
	static double lat[MAX_CASES][MAX_SIZES][MAX_ROUNDS], bw[MAX_CASES][MAX_SIZES][MAX_ROUNDS];
	static double rlat[MAX_CASES][MAX_SIZES][MAX_ROUNDS], rbw[MAX_CASES][MAX_SIZES][MAX_ROUNDS];
	static double fadd[MAX_CASES][MAX_ROUNDS];
	static double tail[MAX_CASES][MAX_SIZES][NTAIL][MAX_ROUNDS];
	for (int r = 0; r < rounds; r++) {
		if (!quiet) {
			fprintf(stderr, "fi_bench: round %d/%d:", r + 1, rounds);
			for (int k = 0; k < ncases; k++)
				fprintf(stderr, " %s", cases[k].label);
			fprintf(stderr, "\n");
		}
		for (int k = 0; k < ncases; k++) {
			struct result res;
			if (run_pair(&cases[k], &res))
				return 1;
			for (int s = 0; s < nsizes; s++) {
				lat[k][s][r] = res.lat_us[s];
				bw[k][s][r] = res.bw_mbs[s];
				rlat[k][s][r] = res.rlat_us[s];
				rbw[k][s][r] = res.rbw_mbs[s];
				for (int t = 0; t < NTAIL; t++)
					tail[k][s][t][r] = res.tail_us[s][t];
			}
			fadd[k][r] = res.fadd_us;
		}
	}
	if (rma_mode) {
		printf("# RMA: fi_write / fi_read latency (us: one posted, its completion read)"
		       " and\n# bandwidth (MB/s, %d in flight); medians of %d interleaved rounds;"
		       " ratio = case / %s\n",
		       WINDOW, rounds, cases[0].label);
		printf("%-8s", "size");
		for (int k = 0; k < ncases; k++)
			printf(" %10s_wlat %10s_rlat %10s_wbw %10s_rbw", cases[k].label,
			       cases[k].label, cases[k].label, cases[k].label);
		for (int k = 1; k < ncases; k++)
			printf("  %s/%s: wlat rlat wbw rbw", cases[k].label, cases[0].label);
		printf("\n");
		double m[MAX_CASES][4];
		for (int s = 0; s < nsizes; s++) {
			char sz[24];
			fmt_size(sizes[s], sz, sizeof(sz));
			printf("%-8s", sz);
			for (int k = 0; k < ncases; k++) {
				m[k][0] = median(lat[k][s], rounds);
				m[k][1] = median(rlat[k][s], rounds);
				m[k][2] = median(bw[k][s], rounds);
				m[k][3] = median(rbw[k][s], rounds);
				printf(" %15.3f %15.3f %14.1f %14.1f", m[k][0], m[k][1], m[k][2],
				       m[k][3]);
			}
			for (int k = 1; k < ncases; k++)
				printf("  %5.2fx %5.2fx %5.2fx %5.2fx", m[k][0] / m[0][0],
				       m[k][1] / m[0][1], m[k][2] / m[0][2], m[k][3] / m[0][3]);
			printf("\n");
		}
		printf("# fetch-add (8-byte FI_UINT64 FI_SUM fi_fetch_atomic) latency, us:");
		double f0 = median(fadd[0], rounds);
		for (int k = 0; k < ncases; k++) {
			double f = median(fadd[k], rounds);
			printf(" %s %.3f", cases[k].label, f);
			if (k > 0)
				printf(" (%.2fx)", f / f0);
		}
		printf("\n");
		return 0;
	}
	printf("# tagged ping-pong (one-way latency, us) and streaming bandwidth (MB/s)\n");
	printf("# medians of %d interleaved rounds; ratio = case / %s; added_ns = the case's "
	       "one-way latency minus %s's, in ns\n",
	       rounds, cases[0].label, cases[0].label);
	printf("%-8s", "size");
	for (int k = 0; k < ncases; k++)
		printf(" %12s_lat %12s_bw", cases[k].label, cases[k].label);
	for (int k = 1; k < ncases; k++)
		printf(" %9s/%s_lat %9s/%s_bw", cases[k].label, cases[0].label, cases[k].label,
		       cases[0].label);
	for (int k = 1; k < ncases; k++)
		printf(" %12s_added_ns", cases[k].label);
	printf("\n");
	static double ml[MAX_CASES][MAX_SIZES], mb[MAX_CASES][MAX_SIZES];
	for (int s = 0; s < nsizes; s++) {
		char sz[24];
		fmt_size(sizes[s], sz, sizeof(sz));
		printf("%-8s", sz);
		for (int k = 0; k < ncases; k++) {
			ml[k][s] = median(lat[k][s], rounds);
			mb[k][s] = median(bw[k][s], rounds);
			printf(" %16.3f %15.1f", ml[k][s], mb[k][s]);
		}
		for (int k = 1; k < ncases; k++)
			printf(" %16.2fx %15.2fx", ml[k][s] / ml[0][s], mb[k][s] / mb[0][s]);
		for (int k = 1; k < ncases; k++)
			printf(" %21.0f", (ml[k][s] - ml[0][s]) * 1000);
		printf("\n");
	}
	if (tails)
		print_tails(tail, cases, ncases, rounds);
	if (csv) {
		fprintf(csv,
			"case,size_bytes,latency_us,bandwidth_mbs,latency_ratio,bandwidth_ratio,"
			"baseline,rounds,latency_added_ns\n");
		for (int k = 0; k < ncases; k++)
			for (int s = 0; s < nsizes; s++)
				fprintf(csv, "%s,%zu,%.4f,%.2f,%.4f,%.4f,%s,%d,%.1f\n",
					cases[k].label, sizes[s], ml[k][s], mb[k][s],
					ml[k][s] / ml[0][s], mb[k][s] / mb[0][s], cases[0].label,
					rounds, (ml[k][s] - ml[0][s]) * 1000);
		if (fclose(csv)) {
			fprintf(stderr, "fi_bench: %s: %s\n", csvpath, strerror(errno));
			return 1;
		}
	}
	return 0;
}
