/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/* Bits of the "kind" argument of the one-sided trampolines, beside
 * lnx_ops.h's LNX_OP_EXPLICIT, LNX_OP_INJECT and LNX_OP_DATA. */
#ifndef LNX_RMA_H
#define LNX_RMA_H
#define LNX_OP_READ    0x10 /* fi_read*: data moves from the target */
#define LNX_OP_FETCH   0x20 /* fi_fetch_atomic*: the old values come back */
#define LNX_OP_COMPARE 0x40 /* fi_compare_atomic*: compare operands given */
#endif
