/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * Stands in for cgo's generated header when a unit test compiles capi's C
 * files without Go: it declares the one Go entry point lnx_internal.h's
 * inline helpers name. The tests link none of the code that calls it.
 */
#ifndef LNX_UNIT_CGO_EXPORT_H
#define LNX_UNIT_CGO_EXPORT_H
#include <stdint.h>
int lnx_go_close(uintptr_t h);
#endif
