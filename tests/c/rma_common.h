/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * Helpers shared by the one-sided tests (rma.c, atomic.c): registering a
 * window, telling peers its key and address, and checking completions.
 */
#ifndef LNX_RMA_COMMON_H
#define LNX_RMA_COMMON_H

#include <rdma/fi_rma.h>
#include <rdma/fi_atomic.h>

#include "common.h"

/* Caps the one-sided tests ask for beside lnx_hints()'s. */
#define RMA_CAPS                                                                                 \
	(FI_MSG | FI_TAGGED | FI_SEND | FI_RECV | FI_DIRECTED_RECV | FI_SOURCE | FI_LOCAL_COMM | \
	 FI_REMOTE_COMM | FI_RMA | FI_ATOMIC | FI_READ | FI_WRITE | FI_REMOTE_READ |             \
	 FI_REMOTE_WRITE)

/* A registered window of this process, and how a peer addresses it. */
struct win {
	uint8_t *buf;
	size_t len;
	struct fid_mr *mr;
	uint64_t key;
	uint64_t addr; /* what a peer passes as the remote address of buf[0] */
};

/* What a peer learns about a window. */
struct rwin {
	uint64_t key, addr, len;
};

static inline int virt_addr(struct peer *p)
{
	return (p->l.info->domain_attr->mr_mode & FI_MR_VIRT_ADDR) != 0;
}

static inline void win_reg(struct peer *p, struct win *w, size_t len, uint64_t access,
			   uint64_t req_key)
{
	w->len = len;
	w->buf = xmalloc(len);
	memset(w->buf, 0, len);
	CHECK(fi_mr_reg(p->l.domain, w->buf, len, access, 0, req_key, 0, &w->mr, NULL));
	w->key = fi_mr_key(w->mr);
	EXPECT(w->key != FI_KEY_NOTAVAIL, "fi_mr_key");
	w->addr = virt_addr(p) ? (uint64_t)(uintptr_t)w->buf : 0;
}

static inline void win_close(struct win *w)
{
	CHECK(fi_close(&w->mr->fid));
	free(w->buf);
}

/* Sends our window's coordinates to rank r. */
static inline void win_tell(struct peer *p, int r, const struct win *w)
{
	struct rwin x = { w->key, w->addr, w->len };
	oob_send(p, r, &x, sizeof(x));
}

static inline struct rwin win_learn(struct peer *p, int r)
{
	struct rwin x;
	oob_recv(p, r, &x, sizeof(x));
	return x;
}

/* Waits for the completion of ctx and checks its flags. */
static inline void wait_op(struct peer *p, void *ctx, uint64_t flags, const char *what)
{
	struct fi_cq_tagged_entry e;
	struct fi_cq_err_entry err;
	int r = wait_cq(p->l.cq, &e, NULL, &err, WAIT_MS);
	EXPECT(r == 0, "%s: completion -> %d (%s)", what, r, fi_strerror(-r));
	EXPECT(e.op_context == ctx, "%s: context %p, want %p", what, e.op_context, ctx);
	char b1[256], b2[256];
	EXPECT(e.flags == flags, "%s: flags %s, want %s", what, flags_str(e.flags, b1, sizeof(b1)),
	       flags_str(flags, b2, sizeof(b2)));
}

/* Waits for an error completion of ctx with error code want. */
static inline void wait_err(struct peer *p, void *ctx, int want, uint64_t flags, const char *what)
{
	struct fi_cq_tagged_entry e;
	struct fi_cq_err_entry err;
	int saved = g_cq_print_errors;
	g_cq_print_errors = 0;
	int r = wait_cq(p->l.cq, &e, NULL, &err, WAIT_MS);
	g_cq_print_errors = saved;
	EXPECT(r == -want, "%s: completion -> %d (%s), want error %d (%s)", what, r,
	       fi_strerror(-r), want, fi_strerror(want));
	EXPECT(err.op_context == ctx, "%s: error context %p, want %p", what, err.op_context, ctx);
	EXPECT(err.err == want, "%s: err %d", what, err.err);
	EXPECT((err.flags & flags) == flags, "%s: error flags %#llx lack %#llx", what,
	       (unsigned long long)err.flags, (unsigned long long)flags);
}

#endif
