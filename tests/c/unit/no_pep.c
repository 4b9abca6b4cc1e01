/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * The lent peer-API core's entry points (peers/peerep/pep.c) for unit
 * tests that compile arm.c without pep.c: nothing lends them one.
 */
#include <stddef.h>
#include <stdint.h>
#include "lnx_pep_lend.h"

int lnx_pep_take(void *pep, struct lnx_arm *a, int serial, const struct lnx_pep_arm_ops *ops,
		 int *go)
{
	(void)pep, (void)a, (void)serial, (void)ops, (void)go;
	return 0;
}

int lnx_pep_held(const void *pep)
{
	(void)pep;
	return 0;
}

int lnx_pep_send_lent_big(void *pep, struct lnx_arm *a, int serial,
			  const struct lnx_pep_arm_ops *ops, uint64_t dest, int tagged,
			  const void *buf, size_t len, uint64_t tag, uint64_t data, int has_data,
			  void *ctx, int want_cq)
{
	(void)pep, (void)a, (void)serial, (void)ops, (void)dest, (void)tagged, (void)buf;
	(void)len, (void)tag, (void)data, (void)has_data, (void)ctx, (void)want_cq;
	return -1;
}

int lnx_pep_checks_bufs(const void *pep)
{
	(void)pep;
	return 1;
}
