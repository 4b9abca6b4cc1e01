/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/* Bits of the "kind" argument the data-path trampolines pass to Go. */
#ifndef LNX_OPS_H
#define LNX_OPS_H
#define LNX_OP_TAGGED	0x1 /* tagged queue */
#define LNX_OP_EXPLICIT 0x2 /* flags argument is the caller's (…msg variants) */
#define LNX_OP_INJECT	0x4 /* fi_inject: no completion, buffer reusable at return */
#define LNX_OP_DATA	0x8 /* carries remote CQ data */
#endif
