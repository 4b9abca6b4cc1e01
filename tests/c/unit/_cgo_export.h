/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * Stands in for cgo's generated header when a unit test compiles lnx's C
 * files without Go: it declares the Go entry points they name
 * (lnx_internal.h's inline helpers; peers/peerep/pep.c's callbacks into
 * the owner), which each test defines as it needs or links no caller of.
 */
#ifndef LNX_UNIT_CGO_EXPORT_H
#define LNX_UNIT_CGO_EXPORT_H
#include <stdint.h>
#include <stddef.h>
int lnx_go_close(uintptr_t h);
struct lnx_pentry;
int lnxPepGet(uintptr_t h, int tagged, uint64_t addr, size_t size, uint64_t tag,
	      struct lnx_pentry *e);
int lnxPepQueued(uintptr_t h, struct lnx_pentry *e);
void lnxPepDrain(uintptr_t h);
#endif
