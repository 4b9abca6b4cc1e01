/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * The CQ fid: fi_cq_read and its variants (the completion ring, the armed
 * receive and the gate first, then Go), fi_cq_readerr, fi_cq_signal, and
 * the CQ's C memory.
 */
#include <string.h>
#include "lnx_capi.h"
#include "lnx_internal.h"
#include "lnx_wait.h"

static int cq_close(struct fid *fid)
{
	struct lnx_cq *c = (struct lnx_cq *)(void *)fid;
	int ret = lnx_go_close(c->h);
	if (ret == 0)
		lnx_free_cq(c);
	return ret;
}

static ssize_t cq_read_common(struct fid_cq *cq, void *buf, size_t count, fi_addr_t *src,
			      int timeout)
{
	struct lnx_cq *c = (struct lnx_cq *)(void *)cq;
	if (!count) {
		/* Progress only (Go runs it); completions C queued count too. */
		ssize_t r = lnx_go_cq_read(c->h, buf, 0, src, 0);
		if (r == -FI_EAGAIN && __atomic_load_n(&c->cring->tail, __ATOMIC_ACQUIRE) !=
					       __atomic_load_n(&c->cring->head, __ATOMIC_RELAXED))
			return 0;
		return r;
	}
	int serial = lnx_serial(c->serial);
	ssize_t n = lnx_cring_read(c->cring, serial, buf, count, src);
	if (n)
		return n;
	if (!timeout) {
		int idle = -1;
		int a = lnx_arm_take(&c->gate, serial,
				     count < LNX_ARM_SLOTS ? (int)count : LNX_ARM_SLOTS, &idle);
		if (a > 0)
			return lnx_cring_read(c->cring, serial, buf, count, src);
		if (a == 0 && (idle >= 0 ? idle : lnx_cq_idle(&c->gate, serial)))
			return -FI_EAGAIN;
		return lnx_go_cq_read(c->h, buf, count, src, 0);
	}
	/* sread: Go waits, and returns when C's ring has completions too. */
	ssize_t r = lnx_go_cq_read(c->h, buf, count, src, timeout);
	if (r == -FI_EAGAIN && (n = lnx_cring_read(c->cring, serial, buf, count, src)))
		return n;
	return r;
}

static ssize_t cq_read(struct fid_cq *cq, void *buf, size_t count)
{
	return cq_read_common(cq, buf, count, NULL, 0);
}
static ssize_t cq_readfrom(struct fid_cq *cq, void *buf, size_t count, fi_addr_t *src)
{
	return cq_read_common(cq, buf, count, src, 0);
}
static ssize_t cq_readerr(struct fid_cq *cq, struct fi_cq_err_entry *buf, uint64_t flags)
{
	if (!buf)
		return -FI_EINVAL;
	return lnx_go_cq_readerr(LNX_H(lnx_cq, cq), buf, flags);
}
static ssize_t cq_sread(struct fid_cq *cq, void *buf, size_t count, const void *cond, int timeout)
{
	return cq_read_common(cq, buf, count, NULL, timeout < 0 ? -1 : timeout + 1);
}
static ssize_t cq_sreadfrom(struct fid_cq *cq, void *buf, size_t count, fi_addr_t *src,
			    const void *cond, int timeout)
{
	return cq_read_common(cq, buf, count, src, timeout < 0 ? -1 : timeout + 1);
}
static int cq_signal(struct fid_cq *cq)
{
	return lnx_go_cq_signal(LNX_H(lnx_cq, cq));
}
static const char *cq_strerror(struct fid_cq *cq, int prov_errno, const void *err_data, char *buf,
			       size_t len)
{
	const char *s = fi_strerror(prov_errno < 0 ? -prov_errno : prov_errno);
	if (buf && len) {
		strncpy(buf, s, len - 1);
		buf[len - 1] = '\0';
		return buf;
	}
	return s;
}

static int cq_control(struct fid *fid, int command, void *arg)
{
	return lnx_wait_control(LNX_H(lnx_cq, fid), command, arg);
}

struct fi_ops lnx_cq_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = cq_close,
	.bind = nosys_bind,
	.control = cq_control,
	.ops_open = nosys_ops_open,
	.ops_set = nosys_ops_set,
};

static struct fi_ops_cq cq_ops = {
	.size = sizeof(struct fi_ops_cq),
	.read = cq_read,
	.readfrom = cq_readfrom,
	.readerr = cq_readerr,
	.sread = cq_sread,
	.sreadfrom = cq_sreadfrom,
	.signal = cq_signal,
	.strerror = cq_strerror,
};

_Static_assert(sizeof(struct lnx_cring) <= 16384, "struct lnx_cring fits four pages");

struct lnx_cq *lnx_alloc_cq(void)
{
	struct lnx_cq *c = calloc(1, sizeof(*c));
	if (c && !(c->cring = lnx_map(sizeof(*c->cring)))) {
		free(c);
		c = NULL;
	}
	return c;
}

void lnx_free_cq(struct lnx_cq *c)
{
	munmap(c->cring, sizeof(*c->cring));
	free(c);
}

void lnx_init_cq(struct lnx_cq *c, lnx_handle h, void *context)
{
	c->cq.fid.fclass = FI_CLASS_CQ;
	c->cq.fid.context = context;
	c->cq.fid.ops = &lnx_cq_fi_ops;
	c->cq.ops = &cq_ops;
	c->h = h;
}
