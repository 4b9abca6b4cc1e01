/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * The counter fid: every call goes to Go (lnx_go_cntr_*).
 */
#include "lnx_capi.h"
#include "lnx_internal.h"
#include "lnx_wait.h"

static int cntr_close(struct fid *fid)
{
	return lnx_close_common(fid, LNX_H(lnx_cntr, fid));
}

static uint64_t cntr_read(struct fid_cntr *c)
{
	return lnx_go_cntr_read(LNX_H(lnx_cntr, c), 0);
}
static uint64_t cntr_readerr(struct fid_cntr *c)
{
	return lnx_go_cntr_read(LNX_H(lnx_cntr, c), 1);
}
static int cntr_add(struct fid_cntr *c, uint64_t v)
{
	return lnx_go_cntr_update(LNX_H(lnx_cntr, c), v, 0, 0);
}
static int cntr_set(struct fid_cntr *c, uint64_t v)
{
	return lnx_go_cntr_update(LNX_H(lnx_cntr, c), v, 1, 0);
}
static int cntr_adderr(struct fid_cntr *c, uint64_t v)
{
	return lnx_go_cntr_update(LNX_H(lnx_cntr, c), v, 0, 1);
}
static int cntr_seterr(struct fid_cntr *c, uint64_t v)
{
	return lnx_go_cntr_update(LNX_H(lnx_cntr, c), v, 1, 1);
}
static int cntr_wait(struct fid_cntr *c, uint64_t threshold, int timeout)
{
	return lnx_go_cntr_wait(LNX_H(lnx_cntr, c), threshold, timeout);
}

static int cntr_control(struct fid *fid, int command, void *arg)
{
	return lnx_wait_control(LNX_H(lnx_cntr, fid), command, arg);
}

struct fi_ops lnx_cntr_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = cntr_close,
	.bind = nosys_bind,
	.control = cntr_control,
	.ops_open = nosys_ops_open,
	.ops_set = nosys_ops_set,
};

static struct fi_ops_cntr cntr_ops = {
	.size = sizeof(struct fi_ops_cntr),
	.read = cntr_read,
	.readerr = cntr_readerr,
	.add = cntr_add,
	.set = cntr_set,
	.wait = cntr_wait,
	.adderr = cntr_adderr,
	.seterr = cntr_seterr,
};

struct fid_cntr *lnx_new_cntr(lnx_handle h, void *context)
{
	struct lnx_cntr *c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	c->cntr.fid.fclass = FI_CLASS_CNTR;
	c->cntr.fid.context = context;
	c->cntr.fid.ops = &lnx_cntr_fi_ops;
	c->cntr.ops = &cntr_ops;
	c->h = h;
	return &c->cntr;
}
