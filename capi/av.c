/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * The address vector fid: inserts, removal and lookup go to Go
 * (lnx_go_av_*); with an EQ bound, C posts the insert events.
 */
#include "lnx_capi.h"
#include "lnx_internal.h"

static int av_close(struct fid *fid)
{
	struct lnx_eq *q = ((struct lnx_av *)(void *)fid)->eq;
	int ret = lnx_close_common(fid, LNX_H(lnx_av, fid));
	if (ret == 0 && q)
		lnx_eq_ref(q, -1);
	return ret;
}

/*
 * Flags of the insertion calls (checked in Go, as libfabric's util AVs
 * do): FI_MORE is a hint lnx ignores; anything but it and FI_SYNC_ERR is
 * -FI_EBADFLAGS. Without an EQ, FI_SYNC_ERR makes context an int array of
 * one entry per address, which gets 0 or the positive FI_Exxx of each.
 *
 * With an EQ bound (fi_av_bind), inserts are asynchronous as fi_av(3)
 * describes: the call returns 0 and the EQ gets an error entry (data: the
 * index, err: the address's code) for each address that failed, then one
 * FI_AV_COMPLETE event whose data is the number inserted and whose context
 * is the call's. lnx inserts at once, so the events are queued before the
 * call returns. FI_SYNC_ERR applies to synchronous inserts only: with an
 * EQ it is ignored and context stays the events' context.
 */
static int av_insert_events(struct lnx_av *a, int ret, size_t count, const int *errs, void *context)
{
	struct fid_av *av = &a->av;
	if (ret < 0)
		return ret; /* the call itself was wrong: no events */
	if (errs)
		for (size_t i = 0; i < count; i++)
			if (errs[i])
				lnx_eq_post(a->eq, FI_AV_COMPLETE, NULL, 0, errs[i], &av->fid,
					    context, i);
	struct fi_eq_entry ev = { .fid = &av->fid, .context = context, .data = (uint64_t)ret };
	return lnx_eq_post(a->eq, FI_AV_COMPLETE, &ev, sizeof(ev), 0, NULL, NULL, 0);
}

/* The per-address codes of an insert with an EQ bound, which become its
 * error entries (also when fi_addr is NULL); NULL with *ret 0 for count 0. */
static int *av_event_errs(size_t count, int *ret)
{
	*ret = 0;
	if (count == 0)
		return NULL;
	int *errs = calloc(count, sizeof(*errs));
	if (!errs)
		*ret = -FI_ENOMEM;
	return errs;
}

static int av_insert(struct fid_av *av, const void *addr, size_t count, fi_addr_t *fi_addr,
		     uint64_t flags, void *context)
{
	struct lnx_av *a = (struct lnx_av *)(void *)av;
	if (!a->eq) {
		if (a->event)
			return -FI_ENOEQ;
		return lnx_go_av_insert(a->h, (void *)addr, count, fi_addr, flags,
					(flags & FI_SYNC_ERR) ? context : NULL);
	}
	int ret;
	int *errs = av_event_errs(count, &ret);
	if (ret)
		return ret;
	ret = lnx_go_av_insert(a->h, (void *)addr, count, fi_addr, flags & ~FI_SYNC_ERR, errs);
	ret = av_insert_events(a, ret, count, errs, context);
	free(errs);
	return ret;
}

static int av_bind(struct fid *fid, struct fid *bfid, uint64_t flags)
{
	struct lnx_av *a = (struct lnx_av *)(void *)fid;
	struct lnx_eq *q = lnx_eq_of(bfid);
	if (!q || flags)
		return q ? -FI_EBADFLAGS : -FI_EINVAL;
	if (a->eq)
		return -FI_EALREADY;
	lnx_eq_ref(q, 1);
	a->eq = q;
	return 0;
}

#define LNX_SYM_MAX (1 << 20) /* lnx_go_av_insertsym's bound on nodecnt x svccnt */

/*
 * fi_av_insertsym: the addresses fi_getinfo gives for each node and
 * service without FI_SOURCE (lnx/nodesvc.go); with an EQ bound, completed
 * through it as fi_av_insert is.
 */
static int av_insertsym(struct fid_av *av, const char *node, size_t nodecnt, const char *service,
			size_t svccnt, fi_addr_t *fi_addr, uint64_t flags, void *context)
{
	struct lnx_av *a = (struct lnx_av *)(void *)av;
	if (!a->eq) {
		if (a->event)
			return -FI_ENOEQ;
		return lnx_go_av_insertsym(a->h, (char *)node, nodecnt, (char *)service, svccnt,
					   fi_addr, flags, (flags & FI_SYNC_ERR) ? context : NULL);
	}
	/* Go refuses more than LNX_SYM_MAX addresses in one call (no array). */
	size_t count = nodecnt && svccnt <= LNX_SYM_MAX / nodecnt ? nodecnt * svccnt : 0;
	int ret;
	int *errs = av_event_errs(count, &ret);
	if (ret)
		return ret;
	ret = lnx_go_av_insertsym(a->h, (char *)node, nodecnt, (char *)service, svccnt, fi_addr,
				  flags & ~FI_SYNC_ERR, errs);
	ret = av_insert_events(a, ret, count, errs, context);
	free(errs);
	return ret;
}
static int av_insertsvc(struct fid_av *av, const char *node, const char *service,
			fi_addr_t *fi_addr, uint64_t flags, void *context)
{
	return av_insertsym(av, node, 1, service, 1, fi_addr, flags, context);
}
static int av_remove(struct fid_av *av, fi_addr_t *fi_addr, size_t count, uint64_t flags)
{
	return lnx_go_av_remove(LNX_H(lnx_av, av), fi_addr, count, flags);
}
static int av_lookup(struct fid_av *av, fi_addr_t fi_addr, void *addr, size_t *addrlen)
{
	if (!addrlen)
		return -FI_EINVAL;
	return lnx_go_av_lookup(LNX_H(lnx_av, av), fi_addr, addr, addrlen);
}
static const char *av_straddr(struct fid_av *av, const void *addr, char *buf, size_t *len)
{
	if (!buf || !len)
		return NULL;
	lnx_go_av_straddr((void *)addr, buf, len);
	return buf;
}
static int av_set_nosys(struct fid_av *av, struct fi_av_set_attr *attr, struct fid_av_set **s,
			void *c)
{
	return -FI_ENOSYS;
}

struct fi_ops lnx_av_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = av_close,
	.bind = av_bind,
	.control = nosys_control,
	.ops_open = nosys_ops_open,
	.ops_set = nosys_ops_set,
};

static struct fi_ops_av av_ops = {
	.size = sizeof(struct fi_ops_av),
	.insert = av_insert,
	.insertsvc = av_insertsvc,
	.insertsym = av_insertsym,
	.remove = av_remove,
	.lookup = av_lookup,
	.straddr = av_straddr,
	.av_set = av_set_nosys,
};

struct fid_av *lnx_new_av(lnx_handle h, void *context)
{
	struct lnx_av *a = calloc(1, sizeof(*a));
	if (!a)
		return NULL;
	a->av.fid.fclass = FI_CLASS_AV;
	a->av.fid.context = context;
	a->av.fid.ops = &lnx_av_fi_ops;
	a->av.ops = &av_ops;
	a->h = h;
	return &a->av;
}
