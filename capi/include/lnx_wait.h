/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * Wait objects, wait sets, poll sets and fi_trywait (capi/wait.c): the
 * fids and ops behind them. The waiting itself is Go's (lnx/wait.go).
 */
#ifndef LNX_WAIT_H
#define LNX_WAIT_H

#include "lnx_capi.h"

struct lnx_wait {
	struct fid_wait w;
	lnx_handle h;
};
struct lnx_poll {
	struct fid_poll p;
	lnx_handle h;
};

int lnx_wait_open(struct fid_fabric *fabric, struct fi_wait_attr *attr, struct fid_wait **waitset);
int lnx_trywait(struct fid_fabric *fabric, struct fid **fids, int count);
int lnx_poll_open(struct fid_domain *domain, struct fi_poll_attr *attr, struct fid_poll **pollset);
/* FI_GETWAIT and FI_GETWAITOBJ on a CQ or counter with handle h. */
int lnx_wait_control(lnx_handle h, int command, void *arg);
/* FI_GETWAIT / FI_GETWAITOBJ for wait object kind with fd (-1: none). */
int lnx_wait_getwait(int kind, int fd, int command, void *arg);
/* The handle of a wait set fid of ours, or 0. */
lnx_handle lnx_wait_handle(struct fid_wait *w);

#endif
