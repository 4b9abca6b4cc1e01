/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * The lent network transport's entry points (peers/ofi/tp.c) for unit
 * tests that compile capi's C files without Go and lend no transport:
 * arm.c and fast_send.c still link them, and nothing calls them.
 */
#include <stddef.h>
#include <stdint.h>
#include "lnx_tp_lend.h"

int lnx_tp_peek(void *tp)
{
	(void)tp;
	return 0;
}

int lnx_tp_look(void *tp, struct lnx_tp_msg *m)
{
	(void)tp;
	(void)m;
	return 0;
}

void lnx_tp_consume(void *tp)
{
	(void)tp;
}

int lnx_tp_send_eager(void *tp, uint32_t flags, uint64_t tag, uint64_t data, const void *buf,
		      size_t len)
{
	(void)tp, (void)flags, (void)tag, (void)data, (void)buf, (void)len;
	return -1;
}
