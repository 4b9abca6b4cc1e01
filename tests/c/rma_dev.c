/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * One-sided operations (FI_RMA, FI_ATOMIC) on device memory between two
 * processes: fi_write and fi_read of inline and bulk sizes device to
 * device, host to device and device to host (local buffers with and
 * without descriptors), and fi_inject_write, every byte checked and the
 * bytes around each target range untouched; fetch-add, compare-swap (hit and miss) and an
 * atomic read on a device-memory target word, with host and with device
 * operand and result buffers; and 2 processes x 1000 fetch-adds on one
 * device counter ending exact, the fetched values exactly 0..1999.
 *
 * The device is the emulated one (hmem/emu/emu.c) that lnx loads through
 * FI_LNX_CUDA_LIB / FI_LNX_ROCM_LIB: its device pointers are PROT_NONE, so
 * a CPU touch of device memory by lnx (or a core) kills the test. Data is
 * checked by copying it back with the runtime. $LNX_TEST_API picks cuda
 * or rocm; argv[1] the link configuration (shm, link, tcp).
 *
 * Rank 0 (A) initiates; rank 1 (B) is the target and only progresses.
 */
#include "rma_common.h"
#include "devmem.h"

enum { HOST, DEV };

/* Inline over every core, bulk over shm (4 KiB eager), bulk everywhere. */
static const size_t k_sizes[] = { 8, 4096, 1 << 20 };
#define NSIZES	(sizeof(k_sizes) / sizeof(k_sizes[0]))
#define GAP	64
#define SEED(i) (500 + (uint64_t)(i))

static enum fi_hmem_iface g_iface;

static void dev_setup(struct peer *p)
{
	g_iface = dev_init();
	EXPECT(p->l.info->caps & FI_HMEM, "no FI_HMEM with a %s device present", dev_api());
	EXPECT(p->l.info->caps & FI_RMA, "no FI_RMA");
	EXPECT(p->l.info->caps & FI_ATOMIC, "no FI_ATOMIC");
}

static struct fid_mr *reg(struct peer *p, int kind, void *buf, size_t n, uint64_t access)
{
	struct iovec iov = { .iov_base = buf, .iov_len = n };
	struct fi_mr_attr attr = {
		.mr_iov = &iov,
		.iov_count = 1,
		.access = access,
		.iface = kind == DEV ? g_iface : FI_HMEM_SYSTEM,
	};
	struct fid_mr *mr;
	CHECK(fi_mr_regattr(p->l.domain, &attr, 0, &mr));
	return mr;
}

static void *alloc(int kind, size_t n)
{
	return kind == DEV ? dev_alloc(n) : xmalloc(n);
}

static void release(int kind, void *b)
{
	if (kind == DEV)
		dev_free(b);
	else
		free(b);
}

/* Writes n bytes of seed's pattern into buf (device or host). */
static void fill(int kind, void *buf, size_t n, uint64_t seed)
{
	if (kind == DEV)
		dev_fill(buf, n, seed);
	else
		fill_pattern(buf, n, seed);
}

/* Copies n bytes of buf (device or host) to a fresh host buffer. */
static uint8_t *to_host(int kind, const void *buf, size_t n)
{
	uint8_t *h = xmalloc(n);
	if (kind == DEV)
		dev_to_host(h, buf, n);
	else
		memcpy(h, buf, n);
	return h;
}

/* Then INJ bytes written by fi_inject_write. */
#define INJ 8

static size_t win_size(void)
{
	size_t t = GAP;
	for (size_t i = 0; i < NSIZES; i++)
		t += k_sizes[i] + GAP;
	return t + INJ + GAP;
}

/* A target window of kind kind, every byte 0xee. */
struct dwin {
	int kind;
	uint8_t *buf;
	size_t len;
	struct fid_mr *mr;
};

static struct rwin dwin_open(struct peer *p, struct dwin *w, int kind, size_t len)
{
	w->kind = kind;
	w->len = len;
	w->buf = alloc(kind, len);
	uint8_t *h = xmalloc(len);
	memset(h, 0xee, len);
	if (kind == DEV)
		host_to_dev(w->buf, h, len);
	else
		memcpy(w->buf, h, len);
	free(h);
	w->mr = reg(p, kind, w->buf, len, FI_REMOTE_READ | FI_REMOTE_WRITE);
	struct rwin x = { fi_mr_key(w->mr), virt_addr(p) ? (uint64_t)(uintptr_t)w->buf : 0, len };
	EXPECT(x.key != FI_KEY_NOTAVAIL, "fi_mr_key");
	return x;
}

static void dwin_close(struct dwin *w)
{
	CHECK(fi_close(&w->mr->fid));
	release(w->kind, w->buf);
}

struct rw_case {
	int local, target; /* HOST or DEV */
	int desc;	   /* pass descriptors for the local buffers */
};

static void rw_a(struct peer *p, void *arg)
{
	const struct rw_case *c = arg;
	dev_setup(p);
	struct rwin r = win_learn(p, 1);
	size_t off = GAP;
	for (size_t i = 0; i < NSIZES; i++) {
		size_t n = k_sizes[i];
		void *src = alloc(c->local, n), *dst = alloc(c->local, n);
		fill(c->local, src, n, SEED(i));
		fill(c->local, dst, n, 0); /* not the pattern read back */
		struct fid_mr *smr = NULL, *dmr = NULL;
		if (c->desc) {
			smr = reg(p, c->local, src, n, FI_WRITE);
			dmr = reg(p, c->local, dst, n, FI_READ);
		}
		char what[64];
		snprintf(what, sizeof(what), "write %zu", n);
		POST(p->l.cq, fi_write(p->l.ep, src, n, smr ? fi_mr_desc(smr) : NULL, peer_addr(p),
				       r.addr + off, r.key, src));
		wait_op(p, src, FI_RMA | FI_WRITE, what);
		snprintf(what, sizeof(what), "read %zu", n);
		POST(p->l.cq, fi_read(p->l.ep, dst, n, dmr ? fi_mr_desc(dmr) : NULL, peer_addr(p),
				      r.addr + off, r.key, dst));
		wait_op(p, dst, FI_RMA | FI_READ, what);
		uint8_t *h = to_host(c->local, dst, n);
		long long bad = check_pattern(h, n, SEED(i));
		EXPECT(bad < 0, "%s: read back differs at offset %lld", what, bad);
		free(h);
		if (smr)
			CHECK(fi_close(&smr->fid));
		if (dmr)
			CHECK(fi_close(&dmr->fid));
		release(c->local, src);
		release(c->local, dst);
		off += n + GAP;
	}
	/* fi_inject_write: the buffer is ours again at once; read back until
	 * the write has landed (inject forms write no completion). */
	void *src = alloc(c->local, INJ), *dst = alloc(c->local, INJ);
	fill(c->local, src, INJ, SEED(NSIZES));
	POST(p->l.cq, fi_inject_write(p->l.ep, src, INJ, peer_addr(p), r.addr + off, r.key));
	fill(c->local, src, INJ, 0);
	for (int k = 0;; k++) {
		POST(p->l.cq,
		     fi_read(p->l.ep, dst, INJ, NULL, peer_addr(p), r.addr + off, r.key, dst));
		wait_op(p, dst, FI_RMA | FI_READ, "read after inject");
		uint8_t *h = to_host(c->local, dst, INJ);
		long long bad = check_pattern(h, INJ, SEED(NSIZES));
		free(h);
		if (bad < 0)
			break;
		EXPECT(k < 10000, "inject write never landed");
	}
	release(c->local, src);
	release(c->local, dst);
	barrier(p);
}

static void rw_b(struct peer *p, void *arg)
{
	const struct rw_case *c = arg;
	dev_setup(p);
	struct dwin w;
	struct rwin x = dwin_open(p, &w, c->target, win_size());
	oob_send(p, 0, &x, sizeof(x));
	barrier(p);
	/* Every byte written where A aimed, nothing between. */
	uint8_t *h = to_host(w.kind, w.buf, w.len);
	size_t off = 0;
	for (size_t i = 0; i < NSIZES; i++) {
		for (size_t g = 0; g < GAP; g++)
			EXPECT(h[off + g] == 0xee, "gap byte %zu before size %zu touched", g,
			       k_sizes[i]);
		off += GAP;
		long long bad = check_pattern(h + off, k_sizes[i], SEED(i));
		EXPECT(bad < 0, "write of %zu: target differs at offset %lld", k_sizes[i], bad);
		off += k_sizes[i];
	}
	for (size_t g = 0; g < GAP; g++)
		EXPECT(h[off + g] == 0xee, "gap byte %zu before the inject touched", g);
	off += GAP;
	EXPECT(check_pattern(h + off, INJ, SEED(NSIZES)) < 0, "inject write: target differs");
	off += INJ;
	for (size_t g = 0; g < GAP; g++)
		EXPECT(h[off + g] == 0xee, "trailing gap byte %zu touched", g);
	free(h);
	dwin_close(&w);
}

static const struct rw_case k_d2d = { DEV, DEV, 1 }, k_d2d_nodesc = { DEV, DEV, 0 },
			    k_h2d = { HOST, DEV, 1 }, k_d2h = { DEV, HOST, 1 },
			    k_d2h_nodesc = { DEV, HOST, 0 };

static void d2d_a(struct peer *p, void *arg)
{
	rw_a(p, (void *)&k_d2d);
}
static void d2d_b(struct peer *p, void *arg)
{
	rw_b(p, (void *)&k_d2d);
}
static void d2d_nodesc_a(struct peer *p, void *arg)
{
	rw_a(p, (void *)&k_d2d_nodesc);
}
static void d2d_nodesc_b(struct peer *p, void *arg)
{
	rw_b(p, (void *)&k_d2d_nodesc);
}
static void h2d_a(struct peer *p, void *arg)
{
	rw_a(p, (void *)&k_h2d);
}
static void h2d_b(struct peer *p, void *arg)
{
	rw_b(p, (void *)&k_h2d);
}
static void d2h_a(struct peer *p, void *arg)
{
	rw_a(p, (void *)&k_d2h);
}
static void d2h_b(struct peer *p, void *arg)
{
	rw_b(p, (void *)&k_d2h);
}
static void d2h_nodesc_a(struct peer *p, void *arg)
{
	rw_a(p, (void *)&k_d2h_nodesc);
}
static void d2h_nodesc_b(struct peer *p, void *arg)
{
	rw_b(p, (void *)&k_d2h_nodesc);
}

/* ---- atomics on a device word --------------------------------------------- */

/* Puts v into a (device or host) buffer and returns what one holds. */
static void put64(int kind, uint64_t *at, uint64_t v)
{
	if (kind == DEV)
		host_to_dev(at, &v, sizeof(v));
	else
		*at = v;
}

static uint64_t get64(int kind, const uint64_t *at)
{
	uint64_t v;
	if (kind == DEV)
		dev_to_host(&v, at, sizeof(v));
	else
		v = *at;
	return v;
}

/* Fetch-add, compare-swap hit and miss, atomic read on the target word at
 * r.addr + 8, with operand, compare and result buffers of kind k. */
static void atomics(struct peer *p, const struct rwin *r, int k)
{
	uint64_t *op = alloc(k, 8), *cmp = alloc(k, 8), *res = alloc(k, 8);
	uint64_t at = r->addr + 8;
	const char *kn = k == DEV ? "device" : "host";

	put64(k, op, 5);
	put64(k, res, 0);
	POST(p->l.cq, fi_fetch_atomic(p->l.ep, op, 1, NULL, res, NULL, peer_addr(p), at, r->key,
				      FI_UINT64, FI_SUM, res));
	wait_op(p, res, FI_ATOMIC | FI_READ, "fetch-add");
	uint64_t base = get64(k, res);

	put64(k, op, 7);
	put64(k, cmp, base + 5);
	POST(p->l.cq, fi_compare_atomic(p->l.ep, op, 1, NULL, cmp, NULL, res, NULL, peer_addr(p),
					at, r->key, FI_UINT64, FI_CSWAP, res));
	wait_op(p, res, FI_ATOMIC | FI_READ, "compare-swap");
	EXPECT(get64(k, res) == base + 5, "%s compare-swap fetched %llu, want %llu", kn,
	       (unsigned long long)get64(k, res), (unsigned long long)(base + 5));

	put64(k, op, 99);
	put64(k, cmp, 12345);
	POST(p->l.cq, fi_compare_atomic(p->l.ep, op, 1, NULL, cmp, NULL, res, NULL, peer_addr(p),
					at, r->key, FI_UINT64, FI_CSWAP, res));
	wait_op(p, res, FI_ATOMIC | FI_READ, "compare-swap (miss)");
	EXPECT(get64(k, res) == 7, "%s failed compare-swap fetched %llu, want 7", kn,
	       (unsigned long long)get64(k, res));

	put64(k, op, 1000);
	POST(p->l.cq,
	     fi_atomic(p->l.ep, op, 1, NULL, peer_addr(p), at, r->key, FI_UINT64, FI_SUM, op));
	wait_op(p, op, FI_ATOMIC | FI_WRITE, "atomic add");

	put64(k, res, 0);
	POST(p->l.cq, fi_fetch_atomic(p->l.ep, NULL, 1, NULL, res, NULL, peer_addr(p), at, r->key,
				      FI_UINT64, FI_ATOMIC_READ, res));
	wait_op(p, res, FI_ATOMIC | FI_READ, "atomic read");
	EXPECT(get64(k, res) == 1007, "%s atomic read %llu, want 1007", kn,
	       (unsigned long long)get64(k, res));

	/* Back to where it started, for the next round. */
	put64(k, op, base);
	POST(p->l.cq, fi_atomic(p->l.ep, op, 1, NULL, peer_addr(p), at, r->key, FI_UINT64,
				FI_ATOMIC_WRITE, op));
	wait_op(p, op, FI_ATOMIC | FI_WRITE, "atomic write");
	release(k, op);
	release(k, cmp);
	release(k, res);
}

static void atomic_a(struct peer *p, void *arg)
{
	dev_setup(p);
	struct rwin r = win_learn(p, 1);
	atomics(p, &r, HOST);
	atomics(p, &r, DEV);
	barrier(p);
}

static void atomic_b(struct peer *p, void *arg)
{
	dev_setup(p);
	struct dwin w;
	struct rwin x = dwin_open(p, &w, DEV, 64);
	uint64_t v = 40;
	host_to_dev(w.buf + 8, &v, sizeof(v));
	oob_send(p, 0, &x, sizeof(x));
	barrier(p);
	uint8_t *h = to_host(DEV, w.buf, w.len);
	memcpy(&v, h + 8, sizeof(v));
	EXPECT(v == 40, "device word %llu at the end, want 40", (unsigned long long)v);
	for (size_t i = 0; i < w.len; i++)
		EXPECT((i >= 8 && i < 16) || h[i] == 0xee, "byte %zu beside the word touched", i);
	free(h);
	dwin_close(&w);
}

/* ---- contention: 2 x NADD fetch-adds on one device counter ----------------- */

#define NADD   1000
#define WINDOW 32

static void contend(struct peer *p, void *arg)
{
	dev_setup(p);
	struct dwin w = { 0 };
	struct rwin r;
	if (p->rank == 0) {
		r = dwin_open(p, &w, DEV, 64);
		uint64_t zero = 0;
		host_to_dev(w.buf, &zero, sizeof(zero));
		oob_send(p, 1, &r, sizeof(r));
	} else {
		r = win_learn(p, 0);
	}
	uint64_t *got = xmalloc(NADD * sizeof(uint64_t));
	uint64_t one = 1;
	int posted = 0, done = 0;
	while (done < NADD) {
		while (posted < NADD && posted - done < WINDOW) {
			ssize_t ret = fi_fetch_atomic(p->l.ep, &one, 1, NULL, &got[posted], NULL,
						      p->addr[0], r.addr, r.key, FI_UINT64, FI_SUM,
						      &got[posted]);
			if (ret == -FI_EAGAIN)
				break;
			CHECK(ret);
			posted++;
		}
		struct fi_cq_tagged_entry e;
		int ret = wait_cq(p->l.cq, &e, NULL, NULL, WAIT_MS);
		EXPECT(ret == 0, "fetch-add %d: %d", done, ret);
		EXPECT(e.flags == (FI_ATOMIC | FI_READ), "flags %#llx",
		       (unsigned long long)e.flags);
		done++;
	}
	if (p->rank != 0) {
		oob_send(p, 0, got, NADD * sizeof(uint64_t));
		barrier(p);
		free(got);
		return;
	}
	uint64_t *theirs = xmalloc(NADD * sizeof(uint64_t));
	oob_recv(p, 1, theirs, NADD * sizeof(uint64_t));
	barrier(p);
	uint64_t end;
	dev_to_host(&end, w.buf, sizeof(end));
	EXPECT(end == 2 * NADD, "device counter %llu, want %d", (unsigned long long)end, 2 * NADD);
	uint8_t *seen = xmalloc(2 * NADD);
	memset(seen, 0, 2 * NADD);
	for (int i = 0; i < 2 * NADD; i++) {
		uint64_t v = i < NADD ? got[i] : theirs[i - NADD];
		EXPECT(v < 2 * NADD && !seen[v], "fetched %llu out of range or twice",
		       (unsigned long long)v);
		seen[v] = 1;
	}
	free(seen);
	free(theirs);
	free(got);
	dwin_close(&w);
}

#define DCAPS (RMA_CAPS | FI_HMEM)
#define DMR   (FI_MR_HMEM | FI_MR_ALLOCATED | FI_MR_PROV_KEY | FI_MR_VIRT_ADDR)
#define DCASE(n, fa, fb)                                                             \
	{                                                                            \
		.name = (n), .a = (fa), .b = (fb), .opt_caps = DCAPS, .mr_mode = DMR \
	}
#define X(name) DCASE(#name, name##_a, name##_b)

static const struct subtest tests[] = {
	X(d2d),
	X(d2d_nodesc),
	X(h2d),
	X(d2h),
	X(d2h_nodesc),
	X(atomic),
	DCASE("contend", contend, contend),
	/* 0-based addressing: no FI_MR_VIRT_ADDR. */
	{ .name = "d2d_offset",
	  .a = d2d_a,
	  .b = d2d_b,
	  .opt_caps = DCAPS,
	  .mr_mode = FI_MR_HMEM | FI_MR_ALLOCATED | FI_MR_PROV_KEY },
};

int main(int argc, char **argv)
{
	return run_subtests(argc, argv, tests, sizeof(tests) / sizeof(tests[0]));
}
