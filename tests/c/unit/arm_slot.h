/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * unit_arm: the unit tests' armed receive. Arms a tagged receive behind
 * the others, as lnx_arm_post does: buf of len bytes, context ctx, from
 * src (FI_ADDR_UNSPEC: any source), for tag under the ignore bits.
 */
#ifndef LNX_UNIT_ARM_SLOT_H
#define LNX_UNIT_ARM_SLOT_H

#include <stdint.h>
#include "lnx_capi.h"

static inline void unit_arm(struct lnx_arm *a, void *buf, uint64_t len, void *ctx, uint64_t src,
			    uint64_t tag, uint64_t ignore)
{
	uint32_t i = a->tail & (LNX_ARM_SLOTS - 1);
	a->s[i] = (struct lnx_arm_slot){ .buf = buf,
					 .len = len,
					 .ctx = ctx,
					 .src = src,
					 .tag = tag,
					 .ignore = ignore,
					 .tagged = 1,
					 .go_index = -1 };
	a->done[i] = 0;
	a->tail++;
}

#endif
