/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * Device memory through lnx between two processes: device-to-device,
 * host-to-device and device-to-host tagged transfers, with descriptors from
 * fi_mr_regattr and with NULL descriptors, expected and unexpected, eager
 * and rendezvous sizes of both cores, mixed iovs, truncation, and Open MPI
 * 5.0.6's registration pattern (requested_key 0, FI_SEND|FI_RECV, the
 * runtime's iface, several MRs live at once, registered and closed per
 * message).
 *
 * The device is the emulated one (hmem/emu/emu.c) that lnx loads through
 * FI_LNX_CUDA_LIB / FI_LNX_ROCM_LIB: its device pointers are PROT_NONE, so
 * if lnx (or a core) touched device memory with the CPU this test would
 * die with SIGSEGV rather than pass. Data is checked by copying it back
 * with the runtime. $LNX_TEST_API picks cuda or rocm; argv[1] the link
 * configuration as for the messaging tests (shm, link, tcp).
 */
#include <unistd.h>

#include "common.h"
#include "devmem.h"

enum { HOST, DEV };

/* Sizes around every protocol switch: shm eager (4 KiB), rxm/lnx network
 * eager (16320 B), and large rendezvous. */
static const size_t sizes[] = { 0, 1, 64, 4096, 4097, 16320, 20000, 1 << 20 };
#define NSIZES	(sizeof(sizes) / sizeof(sizes[0]))
#define TAG(i)	(0x5000 + (uint64_t)(i))
#define SEED(i) (77 + (uint64_t)(i))

struct side {
	int kind; /* HOST or DEV */
	int desc; /* register and pass descriptors */
};

struct xfer {
	struct side send, recv;
	int unexpected; /* sends arrive before the receives are posted */
};

static void *buf_alloc(int kind, size_t n)
{
	return kind == DEV ? dev_alloc(n) : xmalloc(n ? n : 1);
}

static void buf_free(int kind, void *p)
{
	if (kind == DEV)
		dev_free(p);
	else
		free(p);
}

static struct fid_mr *buf_reg(struct peer *p, int kind, void *buf, size_t n)
{
	struct fid_mr *mr = NULL;
	if (kind == DEV)
		CHECK(dev_reg(p->l.domain, buf, n, &mr));
	else
		CHECK(fi_mr_reg(p->l.domain, buf, n, FI_SEND | FI_RECV, 0, 0, 0, &mr, NULL));
	EXPECT(fi_mr_desc(mr) != NULL, "fi_mr_desc is NULL");
	return mr;
}

static void release(int kind, void **buf, struct fid_mr **mr)
{
	for (size_t i = 0; i < NSIZES; i++) {
		if (mr[i])
			CHECK(fi_close(&mr[i]->fid));
		buf_free(kind, buf[i]);
	}
}

static void check_caps(struct peer *p)
{
	EXPECT(p->l.info->caps & FI_HMEM, "lnx does not report FI_HMEM with a %s device present",
	       dev_api());
	EXPECT(p->l.info->domain_attr->mr_mode & FI_MR_HMEM, "mr_mode lacks FI_MR_HMEM");
}

static void sender(struct peer *p, const struct xfer *x)
{
	dev_init();
	check_caps(p);
	void *buf[NSIZES];
	struct fid_mr *mr[NSIZES] = { 0 };
	struct fi_context2 ctx[NSIZES];
	for (size_t i = 0; i < NSIZES; i++) {
		buf[i] = buf_alloc(x->send.kind, sizes[i]);
		if (x->send.kind == DEV)
			dev_fill(buf[i], sizes[i], SEED(i));
		else
			fill_pattern(buf[i], sizes[i], SEED(i));
		if (x->send.desc)
			mr[i] = buf_reg(p, x->send.kind, buf[i], sizes[i]);
	}
	if (!x->unexpected)
		barrier(p); /* receives are posted */
	for (size_t i = 0; i < NSIZES; i++)
		POST(p->l.cq, fi_tsend(p->l.ep, buf[i], sizes[i], mr[i] ? fi_mr_desc(mr[i]) : NULL,
				       peer_addr(p), TAG(i), &ctx[i]));
	if (x->unexpected)
		barrier(p); /* everything sent before the receiver posts */
	int done[NSIZES] = { 0 };
	for (size_t k = 0; k < NSIZES; k++) {
		struct fi_cq_tagged_entry e;
		wait_ok(p->l.cq, &e, NULL, "send completion");
		EXPECT(e.flags & FI_SEND, "send completion flags %#llx",
		       (unsigned long long)e.flags);
		size_t i = (struct fi_context2 *)e.op_context - ctx;
		EXPECT(i < NSIZES && !done[i], "bad or repeated send context");
		done[i] = 1;
	}
	release(x->send.kind, buf, mr);
}

static void receiver(struct peer *p, const struct xfer *x)
{
	dev_init();
	check_caps(p);
	void *buf[NSIZES];
	struct fid_mr *mr[NSIZES] = { 0 };
	struct fi_context2 ctx[NSIZES];
	for (size_t i = 0; i < NSIZES; i++) {
		buf[i] = buf_alloc(x->recv.kind, sizes[i]);
		if (x->recv.desc)
			mr[i] = buf_reg(p, x->recv.kind, buf[i], sizes[i]);
	}
	if (x->unexpected) {
		barrier(p);
		progress_for(p->l.cq, 100); /* let the messages arrive unexpected */
	}
	for (size_t i = 0; i < NSIZES; i++)
		POST(p->l.cq, fi_trecv(p->l.ep, buf[i], sizes[i], mr[i] ? fi_mr_desc(mr[i]) : NULL,
				       peer_addr(p), TAG(i), 0, &ctx[i]));
	if (!x->unexpected)
		barrier(p);
	int done[NSIZES] = { 0 };
	for (size_t k = 0; k < NSIZES; k++) {
		struct fi_cq_tagged_entry e;
		fi_addr_t src;
		wait_ok(p->l.cq, &e, &src, "receive completion");
		size_t i = (struct fi_context2 *)e.op_context - ctx;
		EXPECT(i < NSIZES && !done[i], "bad or repeated receive context");
		done[i] = 1;
		EXPECT(e.flags & FI_RECV && e.flags & FI_TAGGED, "flags %#llx",
		       (unsigned long long)e.flags);
		EXPECT(e.tag == TAG(i), "tag %#llx, want %#llx", (unsigned long long)e.tag,
		       (unsigned long long)TAG(i));
		EXPECT(e.len == sizes[i], "len %zu, want %zu", e.len, sizes[i]);
		EXPECT(src == peer_addr(p), "source %llu", (unsigned long long)src);
		if (x->recv.kind == DEV)
			dev_expect(buf[i], sizes[i], SEED(i), "receive");
		else
			EXPECT_PATTERN(buf[i], sizes[i], SEED(i));
	}
	/* $LNX_TEST_EXPECT_IPC: large device sends over shm must (1) or must
	 * not (0) have come by IPC handle; lnx keeps the mappings cached. */
	const char *ipc = getenv("LNX_TEST_EXPECT_IPC");
	if (ipc && x->send.kind == DEV) {
		long maps = dev_ipc_maps();
		EXPECT(atoi(ipc) ? maps > 0 : maps == 0,
		       "%ld IPC mappings open, LNX_TEST_EXPECT_IPC=%s", maps, ipc);
	}
	/* $LNX_TEST_EXPECT_PINNED: where large device receives are staged
	 * (tcp, shm without IPC), the runtime copied them out of host memory
	 * that lnx had pinned. */
	if (getenv("LNX_TEST_EXPECT_PINNED") && x->recv.kind == DEV) {
		long c = dev_counter("pinned_copies");
		EXPECT(c > 0, "%ld copies from pinned staging buffers", c);
	}
	release(x->recv.kind, buf, mr);
}

/* Whatever lnx pinned, closing the endpoint unpinned (on the emulated
 * device, which counts; a real driver gives -1). */
void test_after_close(void)
{
	long n = dev_counter("pinned");
	EXPECT(n <= 0, "%ld host ranges still pinned after close", n);
}

#define XFER(name, sk, sd, rk, rd, unexp)                                      \
	static const struct xfer x_##name = { { sk, sd }, { rk, rd }, unexp }; \
	static void a_##name(struct peer *p, void *arg)                        \
	{                                                                      \
		sender(p, &x_##name);                                          \
	}                                                                      \
	static void b_##name(struct peer *p, void *arg)                        \
	{                                                                      \
		receiver(p, &x_##name);                                        \
	}

XFER(d2d_desc, DEV, 1, DEV, 1, 0)
XFER(d2d_nodesc, DEV, 0, DEV, 0, 0)
XFER(d2d_desc_unexp, DEV, 1, DEV, 1, 1)
XFER(d2d_nodesc_unexp, DEV, 0, DEV, 0, 1)
XFER(h2d_desc, HOST, 1, DEV, 1, 0)
XFER(d2h_desc, DEV, 1, HOST, 1, 0)
XFER(h2d_nodesc, HOST, 0, DEV, 0, 1)
XFER(d2h_nodesc, DEV, 0, HOST, 0, 1)

/* ---- one message from a host piece and a device piece, into a device
 * piece and a host piece of other lengths -------------------------------- */

#define MIX_A	  3000
#define MIX_B	  9000
#define MIX_TOTAL (MIX_A + MIX_B)

static void mixed_send(struct peer *p, void *arg)
{
	dev_init();
	char *all = xmalloc(MIX_TOTAL);
	fill_pattern(all, MIX_TOTAL, 9);
	char *host = xmalloc(MIX_A);
	memcpy(host, all, MIX_A);
	void *dev = dev_alloc(MIX_B);
	host_to_dev(dev, all + MIX_A, MIX_B);
	struct fid_mr *mr = buf_reg(p, DEV, dev, MIX_B);
	struct iovec iov[2] = { { host, MIX_A }, { dev, MIX_B } };
	void *desc[2] = { NULL, fi_mr_desc(mr) };
	barrier(p);
	struct fi_context2 ctx;
	POST(p->l.cq, fi_tsendv(p->l.ep, iov, desc, 2, peer_addr(p), 42, &ctx));
	wait_ok(p->l.cq, NULL, NULL, "sendv completion");
	CHECK(fi_close(&mr->fid));
	dev_free(dev);
	free(host);
	free(all);
}

static void mixed_recv(struct peer *p, void *arg)
{
	dev_init();
	const size_t first = 7000; /* device piece, then host piece */
	void *dev = dev_alloc(first);
	char *host = xmalloc(MIX_TOTAL - first);
	struct iovec iov[2] = { { dev, first }, { host, MIX_TOTAL - first } };
	struct fi_context2 ctx;
	POST(p->l.cq, fi_trecvv(p->l.ep, iov, NULL, 2, peer_addr(p), 42, 0, &ctx));
	barrier(p);
	struct fi_cq_tagged_entry e;
	wait_ok(p->l.cq, &e, NULL, "recvv completion");
	EXPECT(e.len == MIX_TOTAL, "len %zu", e.len);
	char *all = xmalloc(MIX_TOTAL);
	dev_to_host(all, dev, first);
	memcpy(all + first, host, MIX_TOTAL - first);
	EXPECT_PATTERN(all, MIX_TOTAL, 9);
	dev_free(dev);
	free(host);
	free(all);
}

/* ---- a message longer than the device buffer: FI_ETRUNC with olen, and
 * the part that fits delivered ------------------------------------------- */

static void trunc_send(struct peer *p, void *arg)
{
	dev_init();
	const size_t n[2] = { 3000, 100000 };
	for (int i = 0; i < 2; i++) {
		void *dev = dev_alloc(n[i]);
		dev_fill(dev, n[i], 20 + i);
		struct fi_context2 ctx;
		barrier(p);
		POST(p->l.cq, fi_tsend(p->l.ep, dev, n[i], NULL, peer_addr(p), 7, &ctx));
		wait_ok(p->l.cq, NULL, NULL, "send completion");
		dev_free(dev);
	}
}

static void trunc_recv(struct peer *p, void *arg)
{
	dev_init();
	const size_t n[2] = { 3000, 100000 }, room[2] = { 1000, 50000 };
	for (int i = 0; i < 2; i++) {
		void *dev = dev_alloc(room[i]);
		struct fid_mr *mr = buf_reg(p, DEV, dev, room[i]);
		struct fi_context2 ctx;
		POST(p->l.cq,
		     fi_trecv(p->l.ep, dev, room[i], fi_mr_desc(mr), peer_addr(p), 7, 0, &ctx));
		barrier(p);
		struct fi_cq_err_entry err;
		int r = wait_cq_quiet(p->l.cq, NULL, NULL, &err, WAIT_MS);
		EXPECT(r == -FI_ETRUNC, "wait_cq -> %d, want -FI_ETRUNC", r);
		EXPECT(err.err == FI_ETRUNC && err.olen == n[i] - room[i], "err %d olen %zu",
		       err.err, err.olen);
		EXPECT(err.op_context == &ctx, "error entry context");
		/* The first room bytes of the pattern arrived. */
		char *h = xmalloc(n[i]);
		fill_pattern(h, n[i], 20 + i);
		char *got = xmalloc(room[i]);
		dev_to_host(got, dev, room[i]);
		EXPECT(!memcmp(got, h, room[i]), "truncated data differs");
		free(got);
		free(h);
		CHECK(fi_close(&mr->fid));
		dev_free(dev);
	}
}

/* ---- Open MPI 5.0.6: per-message registration of device buffers -------- */

#define REPLAY_ITERS 40
#define REPLAY_LIVE  8
static const size_t replay_sizes[REPLAY_LIVE] = {
	8, 64, 4096, 8192, 16000, 40000, 200000, 1 << 20
};

static void replay(struct peer *p, int sending, int use_desc)
{
	dev_init();
	void *buf[REPLAY_LIVE];
	for (int j = 0; j < REPLAY_LIVE; j++)
		buf[j] = dev_alloc(replay_sizes[j]);
	for (int it = 0; it < REPLAY_ITERS; it++) {
		struct fid_mr *mr[REPLAY_LIVE] = { 0 };
		struct fi_context2 ctx[REPLAY_LIVE];
		for (int j = 0; j < REPLAY_LIVE; j++) {
			if (sending)
				dev_fill(buf[j], replay_sizes[j], it * 100 + j);
			if (use_desc) {
				/* Every one of these used to fail with FI_ENOKEY. */
				int r = dev_reg(p->l.domain, buf[j], replay_sizes[j], &mr[j]);
				EXPECT(r == 0, "iteration %d MR %d: fi_mr_regattr -> %d (%s)", it,
				       j, r, fi_strerror(-r));
				for (int k = 0; k < j; k++)
					EXPECT(fi_mr_desc(mr[k]) != fi_mr_desc(mr[j]),
					       "two live MRs share a descriptor");
			}
		}
		if (!sending)
			for (int j = 0; j < REPLAY_LIVE; j++)
				POST(p->l.cq,
				     fi_trecv(p->l.ep, buf[j], replay_sizes[j],
					      mr[j] ? fi_mr_desc(mr[j]) : NULL, peer_addr(p),
					      (uint64_t)it << 8 | j, 0, &ctx[j]));
		barrier(p);
		if (sending)
			for (int j = 0; j < REPLAY_LIVE; j++)
				POST(p->l.cq,
				     fi_tsend(p->l.ep, buf[j], replay_sizes[j],
					      mr[j] ? fi_mr_desc(mr[j]) : NULL, peer_addr(p),
					      (uint64_t)it << 8 | j, &ctx[j]));
		for (int k = 0; k < REPLAY_LIVE; k++) {
			struct fi_cq_tagged_entry e;
			wait_ok(p->l.cq, &e, NULL, sending ? "replay send" : "replay receive");
			int j = (struct fi_context2 *)e.op_context - ctx;
			EXPECT(j >= 0 && j < REPLAY_LIVE, "bad context");
			if (!sending) {
				EXPECT(e.tag == ((uint64_t)it << 8 | j), "tag %#llx",
				       (unsigned long long)e.tag);
				EXPECT(e.len == replay_sizes[j], "len %zu", e.len);
			}
		}
		if (!sending)
			for (int j = 0; j < REPLAY_LIVE; j++)
				dev_expect(buf[j], replay_sizes[j], it * 100 + j, "replay");
		for (int j = 0; j < REPLAY_LIVE; j++)
			if (mr[j])
				CHECK(fi_close(&mr[j]->fid));
		barrier(p); /* the sender refills only after the receiver checked */
	}
	for (int j = 0; j < REPLAY_LIVE; j++)
		dev_free(buf[j]);
}

static void replay_a(struct peer *p, void *arg)
{
	replay(p, 1, 1);
}
static void replay_b(struct peer *p, void *arg)
{
	replay(p, 0, 1);
}
static void replay_null_a(struct peer *p, void *arg)
{
	replay(p, 1, 0);
}
static void replay_null_b(struct peer *p, void *arg)
{
	replay(p, 0, 0);
}

#define HCAPS                                                                                    \
	(FI_MSG | FI_TAGGED | FI_SEND | FI_RECV | FI_DIRECTED_RECV | FI_SOURCE | FI_LOCAL_COMM | \
	 FI_REMOTE_COMM | FI_HMEM)
#define OMPI_MR (FI_MR_HMEM | FI_MR_ALLOCATED)
#define DCASE(n, fa, fb)                                                                 \
	{                                                                                \
		.name = (n), .a = (fa), .b = (fb), .opt_caps = HCAPS, .mr_mode = OMPI_MR \
	}
#define X(name) DCASE(#name, a_##name, b_##name)

static const struct subtest tests[] = {
	X(d2d_desc),
	X(d2d_nodesc),
	X(d2d_desc_unexp),
	X(d2d_nodesc_unexp),
	X(h2d_desc),
	X(d2h_desc),
	X(h2d_nodesc),
	X(d2h_nodesc),
	DCASE("mixed_iov", mixed_send, mixed_recv),
	DCASE("truncate", trunc_send, trunc_recv),
	DCASE("ompi_replay", replay_a, replay_b),
	DCASE("ompi_replay_null_desc", replay_null_a, replay_null_b),
};

int main(int argc, char **argv)
{
	return run_subtests(argc, argv, tests, sizeof(tests) / sizeof(tests[0]));
}
