// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only

package main

/*
#cgo CFLAGS: -I${SRCDIR}/include
#include <sys/uio.h>
#include "lnx_capi.h"
#include "lnx_ops.h"
#include "lnx_rma.h"
*/
import "C"

import (
	"unsafe"

	"github.com/lnx-go/lnx-go/internal/fi"
	"github.com/lnx-go/lnx-go/lnx"
)

//export lnx_go_rma
func lnx_go_rma(eh C.lnx_handle, iov *C.struct_iovec, desc *unsafe.Pointer, count C.size_t,
	dest, addr, key, data, flags C.uint64_t, ctx unsafe.Pointer, kind C.int) (ret C.ssize_t) {
	name := "fi_write"
	if kind&C.LNX_OP_READ != 0 {
		name = "fi_read"
	}
	defer recoverTo(&ret, name)
	e, err := object[*lnx.Endpoint](eh)
	if err != nil {
		return C.ssize_t(code(name, err))
	}
	var op lnx.RMAOp
	if err := fillOp(&op.Op, iov, desc, count); err != nil {
		return C.ssize_t(code(name, err))
	}
	opKind(&op.Op, kind)
	op.Tagged = false
	op.Read = kind&C.LNX_OP_READ != 0
	op.Addr, op.Data, op.Flags, op.Ctx = uint64(dest), uint64(data), uint64(flags), ctx
	op.RAddr, op.Key = uint64(addr), uint64(key)
	return C.ssize_t(code(name, e.RMA(&op)))
}

// atomicKind maps the trampolines' kind bits to lnx's atomic call kinds.
func atomicKind(kind C.int) int {
	switch {
	case kind&C.LNX_OP_COMPARE != 0:
		return lnx.AtomicCompare
	case kind&C.LNX_OP_FETCH != 0:
		return lnx.AtomicFetch
	}
	return lnx.AtomicPlain
}

//export lnx_go_atomic
func lnx_go_atomic(eh C.lnx_handle, buf unsafe.Pointer, count C.size_t, desc unsafe.Pointer,
	cmp, res unsafe.Pointer, dest, addr, key C.uint64_t, dt, aop C.int, data, flags C.uint64_t,
	ctx unsafe.Pointer, kind C.int) (ret C.ssize_t) {
	const name = "fi_atomic"
	defer recoverTo(&ret, name)
	e, err := object[*lnx.Endpoint](eh)
	if err != nil {
		return C.ssize_t(code(name, err))
	}
	var op lnx.RMAOp
	opKind(&op.Op, kind)
	op.Tagged = false
	n, size, err := lnx.AtomicValid(atomicKind(kind), int(aop), int(dt))
	if err != nil {
		return C.ssize_t(code(name, err))
	}
	_ = n
	bytes := uint64(count) * uint64(size)
	if buf != nil {
		op.IovBuf[0], op.N = lnx.Buf{Ptr: buf, Len: bytes}, 1
		if desc != nil {
			op.MRs[0] = descMR(uintptr(desc))
		}
	}
	op.Fetch = kind&C.LNX_OP_FETCH != 0
	op.CmpOp = kind&C.LNX_OP_COMPARE != 0
	if op.CmpOp {
		if cmp == nil {
			return C.ssize_t(code(name, fi.Wrap(fi.EINVAL, "fi_compare_atomic: NULL compare buffer")))
		}
		op.Compare = lnx.Buf{Ptr: cmp, Len: bytes}
	}
	if op.Fetch || op.CmpOp {
		op.Result = lnx.Buf{Ptr: res, Len: bytes}
	}
	op.AtomicOp, op.DT, op.Count = int(aop), int(dt), uint64(count)
	op.Addr, op.Data, op.Flags, op.Ctx = uint64(dest), uint64(data), uint64(flags), ctx
	op.RAddr, op.Key = uint64(addr), uint64(key)
	return C.ssize_t(code(name, e.Atomic(&op)))
}

//export lnx_go_atomic_valid
func lnx_go_atomic_valid(dt, aop, kind C.int, count *C.size_t, size *C.size_t) (ret C.int) {
	defer recoverTo(&ret, "fi_query_atomic")
	n, sz, err := lnx.AtomicValid(atomicKind(kind), int(aop), int(dt))
	if err != nil {
		return code("fi_query_atomic", err)
	}
	*count = C.size_t(n)
	if size != nil {
		*size = C.size_t(sz)
	}
	return 0
}
