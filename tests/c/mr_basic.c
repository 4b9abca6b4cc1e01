/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * mr_basic: memory registration through lnx, in one process, on a link with
 * a network core (so every host MR is also registered with tcp;ofi_rxm).
 *
 *  - Open MPI's pattern on host memory: many live MRs, requested_key 0,
 *    FI_SEND|FI_RECV, without FI_MR_PROV_KEY: all succeed.
 *  - Remotely accessible MRs: with FI_MR_PROV_KEY lnx picks distinct keys
 *    whatever was requested; without it the requested key is used and a
 *    duplicate is -FI_ENOKEY, until the first holder closes.
 *  - Descriptors are distinct, non-NULL, and work on the data path.
 *  - Bad requests: iov limits, access and flag bits, a device iface with no
 *    runtime loaded (-FI_ENOSYS), closing a domain with a live MR
 *    (-FI_EBUSY); fi_mr_bind and fi_mr_enable.
 *  - Registration churn: 20000 register/close cycles of the same buffer
 *    (the core registration is cached) and of distinct buffers.
 */
#include "common.h"

#define LIVE 64

static void open_with(struct lnx *l, int mr_mode)
{
	struct lnx_opts o = { .links = LINK_TCP, .mr_mode = mr_mode };
	lnx_open(l, &o);
}

static void ompi_pattern(void)
{
	struct lnx l;
	open_with(&l, FI_MR_ALLOCATED); /* no FI_MR_PROV_KEY */
	EXPECT(!(l.info->domain_attr->mr_mode & FI_MR_PROV_KEY), "lnx set FI_MR_PROV_KEY unasked");
	char *buf = xmalloc(LIVE * 4096);
	struct fid_mr *mr[LIVE];
	for (int i = 0; i < LIVE; i++) {
		int r = fi_mr_reg(l.domain, buf + i * 4096, 4096, FI_SEND | FI_RECV, 0, 0, 0,
				  &mr[i], NULL);
		EXPECT(r == 0, "MR %d with requested_key 0: %d (%s)", i, r, fi_strerror(-r));
		EXPECT(fi_mr_key(mr[i]) == 0, "key %llu, want the requested 0",
		       (unsigned long long)fi_mr_key(mr[i]));
		EXPECT(fi_mr_desc(mr[i]) != NULL, "NULL descriptor");
		for (int k = 0; k < i; k++)
			EXPECT(fi_mr_desc(mr[k]) != fi_mr_desc(mr[i]),
			       "MRs %d and %d share a descriptor", k, i);
	}
	/* User keys of remotely accessible MRs must be unique. */
	struct fid_mr *r1, *r2;
	CHECK(fi_mr_reg(l.domain, buf, 64, FI_REMOTE_READ, 0, 5, 0, &r1, NULL));
	EXPECT(fi_mr_key(r1) == 5, "key %llu", (unsigned long long)fi_mr_key(r1));
	CHECK_RC(fi_mr_reg(l.domain, buf + 64, 64, FI_REMOTE_WRITE, 0, 5, 0, &r2, NULL),
		 -FI_ENOKEY);
	CHECK(fi_mr_reg(l.domain, buf + 64, 64, FI_REMOTE_WRITE, 0, 6, 0, &r2, NULL));
	CHECK(fi_close(&r1->fid));
	CHECK(fi_mr_reg(l.domain, buf + 128, 64, FI_REMOTE_READ, 0, 5, 0, &r1, NULL));
	CHECK(fi_close(&r1->fid));
	CHECK(fi_close(&r2->fid));

	/* A domain with live MRs does not close. */
	CHECK(fi_close(&l.ep->fid));
	l.ep = NULL;
	CHECK(fi_close(&l.av->fid));
	l.av = NULL;
	CHECK(fi_close(&l.cq->fid));
	l.cq = NULL;
	CHECK_RC(fi_close(&l.domain->fid), -FI_EBUSY);
	for (int i = 0; i < LIVE; i++)
		CHECK(fi_close(&mr[i]->fid));
	lnx_close(&l);
	free(buf);
}

static void prov_keys(void)
{
	struct lnx l;
	open_with(&l, FI_MR_ALLOCATED | FI_MR_PROV_KEY | FI_MR_VIRT_ADDR);
	EXPECT(l.info->domain_attr->mr_mode & FI_MR_PROV_KEY, "FI_MR_PROV_KEY not granted");
	char *buf = xmalloc(LIVE * 64);
	struct fid_mr *mr[LIVE];
	for (int i = 0; i < LIVE; i++) {
		CHECK(fi_mr_reg(l.domain, buf + i * 64, 64,
				FI_REMOTE_READ | FI_REMOTE_WRITE | FI_SEND | FI_RECV, 0,
				0 /* ignored */, 0, &mr[i], NULL));
		for (int k = 0; k < i; k++)
			EXPECT(fi_mr_key(mr[k]) != fi_mr_key(mr[i]), "MRs %d and %d share key %llu",
			       k, i, (unsigned long long)fi_mr_key(mr[i]));
	}
	for (int i = 0; i < LIVE; i++)
		CHECK(fi_close(&mr[i]->fid));
	lnx_close(&l);
	free(buf);
}

static void bad_requests(void)
{
	struct lnx l;
	open_with(&l, FI_MR_ALLOCATED | FI_MR_PROV_KEY);
	char buf[256];
	struct fid_mr *mr;
	struct iovec iov[9];
	for (int i = 0; i < 9; i++)
		iov[i] = (struct iovec){ buf + i * 16, 16 };
	CHECK(fi_mr_regv(l.domain, iov, 8, FI_SEND, 0, 0, 0, &mr, NULL));
	CHECK(fi_mr_bind(mr, &l.ep->fid, 0));
	CHECK(fi_mr_enable(mr));
	CHECK(fi_close(&mr->fid));
	CHECK_RC(fi_mr_regv(l.domain, iov, 9, FI_SEND, 0, 0, 0, &mr, NULL), -FI_EINVAL);
	CHECK_RC(fi_mr_reg(l.domain, buf, sizeof(buf), 1ULL << 63, 0, 0, 0, &mr, NULL), -FI_EINVAL);
	CHECK_RC(fi_mr_reg(l.domain, buf, sizeof(buf), FI_SEND, 0, 0, 1ULL << 2, &mr, NULL),
		 -FI_EBADFLAGS);
	CHECK_RC(fi_mr_reg(l.domain, NULL, 64, FI_SEND, 0, 0, 0, &mr, NULL), -FI_EINVAL);
	/* FI_HMEM_HOST_ALLOC (bit 45 in 1.17 and 2.x) is a plain host buffer
	 * to lnx; bit 39 means nothing to fi_mr_reg; FI_MR_DMABUF (bit 40,
	 * 1.20+) would make mr_iov a dmabuf descriptor, which lnx does not take. */
	CHECK(fi_mr_reg(l.domain, buf, sizeof(buf), FI_SEND, 0, 0, 1ULL << 45, &mr, NULL));
	CHECK(fi_close(&mr->fid));
	CHECK_RC(fi_mr_reg(l.domain, buf, sizeof(buf), FI_SEND, 0, 0, 1ULL << 39, &mr, NULL),
		 -FI_EBADFLAGS);
	CHECK_RC(fi_mr_reg(l.domain, buf, sizeof(buf), FI_SEND, 0, 0, 1ULL << 40, &mr, NULL),
		 -FI_EBADFLAGS);

	/* Device memory with no runtime loaded (FI_LNX_*_LIB=none). */
	EXPECT(!(l.info->caps & FI_HMEM), "FI_HMEM reported with no device runtime");
	struct fi_mr_attr attr = { .mr_iov = iov,
				   .iov_count = 1,
				   .access = FI_SEND,
				   .iface = FI_HMEM_CUDA };
	CHECK_RC(fi_mr_regattr(l.domain, &attr, 0, &mr), -FI_ENOSYS);
	attr.iface = FI_HMEM_ROCR;
	CHECK_RC(fi_mr_regattr(l.domain, &attr, 0, &mr), -FI_ENOSYS);
	attr.iface = FI_HMEM_ZE;
	CHECK_RC(fi_mr_regattr(l.domain, &attr, 0, &mr), -FI_ENOSYS);

	/* Asking for FI_HMEM without a runtime finds nothing. */
	struct fi_info *h = lnx_hints(), *info = NULL;
	h->caps |= FI_HMEM;
	h->domain_attr->mr_mode |= FI_MR_HMEM;
	CHECK_RC(lnx_getinfo(h, &info), -FI_ENODATA);
	fi_freeinfo(h);
	lnx_close(&l);
}

/* Descriptors on the data path: sends and receives to ourselves, host
 * buffers, over shm and (self) over the endpoint's shm core. */
static void data_path(void)
{
	struct lnx l;
	open_with(&l, FI_MR_ALLOCATED | FI_MR_PROV_KEY);
	fi_addr_t self;
	CHECK_RC(fi_av_insert(l.av, l.name, 1, &self, 0, NULL), 1);
	const size_t sizes[] = { 1, 4096, 70000, 1 << 20 };
	for (size_t i = 0; i < 4; i++) {
		size_t n = sizes[i];
		char *s = xmalloc(n), *r = xmalloc(n);
		fill_pattern(s, n, i);
		memset(r, 0, n);
		struct fid_mr *ms, *mrr;
		CHECK(fi_mr_reg(l.domain, s, n, FI_SEND, 0, 0, 0, &ms, NULL));
		CHECK(fi_mr_reg(l.domain, r, n, FI_RECV, 0, 0, 0, &mrr, NULL));
		struct fi_context2 sc, rc;
		void *rd = fi_mr_desc(mrr), *sd = fi_mr_desc(ms);
		POST(l.cq, fi_trecv(l.ep, r, n, rd, self, 100 + i, 0, &rc));
		POST(l.cq, fi_tsend(l.ep, s, n, sd, self, 100 + i, &sc));
		for (int k = 0; k < 2; k++) {
			struct fi_cq_tagged_entry e;
			wait_ok(l.cq, &e, NULL, "self transfer");
			if (e.op_context == &rc)
				EXPECT(e.len == n && e.tag == 100 + i, "len %zu tag %llu", e.len,
				       (unsigned long long)e.tag);
		}
		EXPECT_PATTERN(r, n, i);
		CHECK(fi_close(&ms->fid));
		CHECK(fi_close(&mrr->fid));
		free(s);
		free(r);
	}
	lnx_close(&l);
}

static void churn(void)
{
	struct lnx l;
	open_with(&l, FI_MR_ALLOCATED);
	char *buf = xmalloc(1 << 20);
	uint64_t t0 = now_ms();
	for (int i = 0; i < 20000; i++) {
		struct fid_mr *mr;
		CHECK(fi_mr_reg(l.domain, buf, 1 << 20, FI_SEND | FI_RECV, 0, 0, 0, &mr, NULL));
		CHECK(fi_close(&mr->fid));
	}
	uint64_t t1 = now_ms();
	for (int i = 0; i < 20000; i++) {
		struct fid_mr *mr;
		CHECK(fi_mr_reg(l.domain, buf + (i % 4096) * 64, 64, FI_SEND | FI_RECV, 0, 0, 0,
				&mr, NULL));
		CHECK(fi_close(&mr->fid));
	}
	note("20000 register/close of one buffer: %llu ms; of 4096 distinct ones: %llu ms",
	     (unsigned long long)(t1 - t0), (unsigned long long)(now_ms() - t1));
	lnx_close(&l);
	free(buf);
}

int main(void)
{
	snprintf(g_role, sizeof(g_role), "mr_basic");
	ompi_pattern();
	prov_keys();
	bad_requests();
	data_path();
	churn();
	printf("mr_basic: all checks passed\n");
	return 0;
}
