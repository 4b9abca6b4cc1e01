/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * Wait sets (fi_wait_open), poll sets (fi_poll_open), fi_trywait and the
 * wait object controls of CQs and counters. Trampolines, as in ep.c:
 * the objects are Go's (lnx/wait.go); C keeps handles.
 */
#include <poll.h>
#include <stdlib.h>
#include "lnx_wait.h"
#include "_cgo_export.h"

/*
 * lnx_wait_getwait answers FI_GETWAIT and FI_GETWAITOBJ for an object of
 * wait object kind with fd (-1: none): an int for FI_WAIT_FD, a struct
 * fi_wait_pollfd holding that one fd for FI_WAIT_POLLFD (change_index
 * stays 1: the fd is the object's for its life).
 */
int lnx_wait_getwait(int kind, int fd, int command, void *arg)
{
	if (!arg)
		return -FI_EINVAL;
	switch (command) {
	case FI_GETWAIT:
		if (fd < 0)
			return -FI_ENODATA;
		if (kind == FI_WAIT_POLLFD) {
			struct fi_wait_pollfd *p = arg;
			size_t room = p->nfds;
			p->change_index = 1;
			p->nfds = 1;
			if (room < 1)
				return -FI_ETOOSMALL;
			if (!p->fd)
				return -FI_EINVAL;
			p->fd[0] = (struct pollfd){ .fd = fd, .events = POLLIN };
			return 0;
		}
		*(int *)arg = fd;
		return 0;
	case FI_GETWAITOBJ:
		*(enum fi_wait_obj *)arg = kind;
		return 0;
	default:
		return -FI_ENOSYS;
	}
}

int lnx_wait_control(lnx_handle h, int command, void *arg)
{
	if (command != FI_GETWAIT && command != FI_GETWAITOBJ)
		return -FI_ENOSYS;
	int kind = lnx_go_wait_kind(h);
	if (kind < 0)
		return kind; /* an error code */
	int fd = lnx_go_wait_fd(h);
	if (fd < -1)
		return fd;
	return lnx_wait_getwait(kind, fd, command, arg);
}

/* ---- wait sets ----------------------------------------------------------- */

static int wait_close(struct fid *fid)
{
	struct lnx_wait *w = (struct lnx_wait *)(void *)fid;
	int ret = lnx_go_close(w->h);
	if (ret == 0)
		free(w);
	return ret;
}
static int wait_control(struct fid *fid, int command, void *arg)
{
	struct lnx_wait *w = (struct lnx_wait *)(void *)fid;
	if (command != FI_GETWAIT && command != FI_GETWAITOBJ)
		return -FI_ENOSYS;
	return lnx_wait_control(w->h, command, arg);
}
static int wait_bind(struct fid *fid, struct fid *bfid, uint64_t flags)
{
	return -FI_ENOSYS;
}
static int wait_ops_open(struct fid *fid, const char *name, uint64_t flags, void **ops,
			 void *context)
{
	return -FI_ENOSYS;
}
static int wait_ops_set(struct fid *fid, const char *name, uint64_t flags, void *ops, void *context)
{
	return -FI_ENOSYS;
}
static int wait_wait(struct fid_wait *ws, int timeout)
{
	return lnx_go_wait_wait(((struct lnx_wait *)(void *)ws)->h, timeout);
}

static struct fi_ops wait_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = wait_close,
	.bind = wait_bind,
	.control = wait_control,
	.ops_open = wait_ops_open,
	.ops_set = wait_ops_set,
};
static struct fi_ops_wait wait_ops = { .size = sizeof(struct fi_ops_wait), .wait = wait_wait };

lnx_handle lnx_wait_handle(struct fid_wait *w)
{
	if (!w || w->fid.ops != &wait_fi_ops)
		return 0;
	return ((struct lnx_wait *)(void *)w)->h;
}

int lnx_wait_open(struct fid_fabric *fabric, struct fi_wait_attr *attr, struct fid_wait **waitset)
{
	if (!attr || !waitset)
		return -FI_EINVAL;
	if (attr->flags)
		return -FI_EBADFLAGS;
	lnx_handle h = 0;
	int ret = lnx_go_wait_open(attr->wait_obj, &h);
	if (ret)
		return ret;
	struct lnx_wait *w = calloc(1, sizeof(*w));
	if (!w) {
		lnx_go_close(h);
		return -FI_ENOMEM;
	}
	w->w.fid.fclass = FI_CLASS_WAIT;
	w->w.fid.ops = &wait_fi_ops;
	w->w.ops = &wait_ops;
	w->h = h;
	*waitset = &w->w;
	return 0;
}

/* ---- fi_trywait ------------------------------------------------------------ */

int lnx_trywait(struct fid_fabric *fabric, struct fid **fids, int count)
{
	if (count < 0 || (count && !fids))
		return -FI_EINVAL;
	for (int i = 0; i < count; i++) {
		struct lnx_eq *q = lnx_eq_of(fids[i]);
		if (q) {
			int ret = lnx_eq_trywait(q);
			if (ret)
				return ret;
			continue;
		}
		int kind;
		lnx_handle h = lnx_handle_of(fids[i], &kind);
		if (!h && fids[i] && fids[i]->fclass == FI_CLASS_WAIT)
			h = lnx_wait_handle((struct fid_wait *)(void *)fids[i]);
		if (!h)
			return -FI_EINVAL;
		int ret = lnx_go_trywait(h);
		if (ret)
			return ret;
	}
	return 0;
}

/* ---- poll sets ------------------------------------------------------------- */

static int poll_close(struct fid *fid)
{
	struct lnx_poll *p = (struct lnx_poll *)(void *)fid;
	int ret = lnx_go_close(p->h);
	if (ret == 0)
		free(p);
	return ret;
}
static int poll_control(struct fid *fid, int command, void *arg)
{
	return -FI_ENOSYS;
}
static int poll_poll(struct fid_poll *ps, void **context, int count)
{
	if (count < 0 || (count && !context))
		return -FI_EINVAL;
	return lnx_go_poll(((struct lnx_poll *)(void *)ps)->h, context, count);
}
static int poll_member(struct fid *event_fid, lnx_handle *h)
{
	int kind;
	*h = lnx_handle_of(event_fid, &kind);
	if (!*h || (kind != LNX_KIND_CQ && kind != LNX_KIND_CNTR))
		return -FI_EINVAL;
	return 0;
}
static int poll_add(struct fid_poll *ps, struct fid *event_fid, uint64_t flags)
{
	lnx_handle h;
	int ret = poll_member(event_fid, &h);
	if (ret)
		return ret;
	return lnx_go_poll_add(((struct lnx_poll *)(void *)ps)->h, h, event_fid->context, 1);
}
static int poll_del(struct fid_poll *ps, struct fid *event_fid, uint64_t flags)
{
	lnx_handle h;
	int ret = poll_member(event_fid, &h);
	if (ret)
		return ret;
	return lnx_go_poll_add(((struct lnx_poll *)(void *)ps)->h, h, NULL, 0);
}

static struct fi_ops poll_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = poll_close,
	.bind = wait_bind,
	.control = poll_control,
	.ops_open = wait_ops_open,
	.ops_set = wait_ops_set,
};
static struct fi_ops_poll poll_ops = {
	.size = sizeof(struct fi_ops_poll),
	.poll = poll_poll,
	.poll_add = poll_add,
	.poll_del = poll_del,
};

int lnx_poll_open(struct fid_domain *domain, struct fi_poll_attr *attr, struct fid_poll **pollset)
{
	if (!pollset)
		return -FI_EINVAL;
	if (attr && attr->flags)
		return -FI_EBADFLAGS;
	lnx_handle h = 0;
	int ret = lnx_go_poll_open(((struct lnx_domain *)(void *)domain)->h, &h);
	if (ret)
		return ret;
	struct lnx_poll *p = calloc(1, sizeof(*p));
	if (!p) {
		lnx_go_close(h);
		return -FI_ENOMEM;
	}
	p->p.fid.fclass = FI_CLASS_POLL;
	p->p.fid.ops = &poll_fi_ops;
	p->p.ops = &poll_ops;
	p->h = h;
	*pollset = &p->p;
	return 0;
}
