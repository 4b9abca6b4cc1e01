// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only

package main

/*
#cgo CFLAGS: -I${SRCDIR}/include
#include <string.h>
#include <sys/uio.h>
#include "lnx_capi.h"
#include "lnx_ops.h"
*/
import "C"

import (
	"unsafe"

	"github.com/lnx-go/lnx-go/internal/fi"
	"github.com/lnx-go/lnx-go/lnx"
)

// fillOp converts a C iov/desc array into op without allocating for the
// common small counts.
func fillOp(op *lnx.Op, iov *C.struct_iovec, desc *unsafe.Pointer, count C.size_t) error {
	n := int(count)
	if n > 0 && iov == nil {
		return fi.Wrap(fi.EINVAL, "NULL iov with count %d", n)
	}
	if n > lnx.MaxIov {
		return fi.Wrap(fi.EINVAL, "iov count %d exceeds %d", n, lnx.MaxIov)
	}
	op.N = n
	if n == 0 {
		return nil
	}
	ivs := unsafe.Slice(iov, n)
	var ds []unsafe.Pointer
	if desc != nil {
		ds = unsafe.Slice(desc, n)
	}
	for i, v := range ivs {
		if v.iov_len > 0 && v.iov_base == nil {
			return fi.Wrap(fi.EINVAL, "NULL buffer of length %d", v.iov_len)
		}
		op.IovBuf[i] = lnx.Buf{Ptr: v.iov_base, Len: uint64(v.iov_len)}
		if ds != nil && ds[i] != nil {
			// lnx descriptors are MR handles (see lnx_new_mr); anything
			// else is not ours and is ignored.
			op.MRs[i] = descMR(uintptr(ds[i]))
		}
	}
	return nil
}

// descMR is the MR an lnx descriptor designates, or nil.
func descMR(d uintptr) *lnx.MR {
	m, _ := handles.get(d).(*lnx.MR)
	return m
}

func opKind(op *lnx.Op, kind C.int) {
	op.Tagged = kind&C.LNX_OP_TAGGED != 0
	op.Explicit = kind&C.LNX_OP_EXPLICIT != 0
	op.Inject = kind&C.LNX_OP_INJECT != 0
	op.HasData = kind&C.LNX_OP_DATA != 0
}

//export lnx_go_send
func lnx_go_send(eh C.lnx_handle, iov *C.struct_iovec, desc *unsafe.Pointer, count C.size_t,
	dest, tag, data, flags C.uint64_t, ctx unsafe.Pointer, kind C.int) (ret C.ssize_t) {
	defer recoverTo(&ret, "send")
	keepSysmonQuiet()
	e, err := object[*lnx.Endpoint](eh)
	if err != nil {
		return C.ssize_t(code("send", err))
	}
	var op lnx.Op
	if err := fillOp(&op, iov, desc, count); err != nil {
		return C.ssize_t(code("send", err))
	}
	opKind(&op, kind)
	op.Addr, op.Tag, op.Data, op.Flags, op.Ctx = uint64(dest), uint64(tag), uint64(data), uint64(flags), ctx
	return C.ssize_t(code("send", e.Send(&op)))
}

//export lnx_go_recv
func lnx_go_recv(eh C.lnx_handle, iov *C.struct_iovec, desc *unsafe.Pointer, count C.size_t,
	src, tag, ignore, flags C.uint64_t, ctx unsafe.Pointer, kind C.int) (ret C.ssize_t) {
	defer recoverTo(&ret, "recv")
	keepSysmonQuiet()
	e, err := object[*lnx.Endpoint](eh)
	if err != nil {
		return C.ssize_t(code("recv", err))
	}
	var op lnx.Op
	if err := fillOp(&op, iov, desc, count); err != nil {
		return C.ssize_t(code("recv", err))
	}
	opKind(&op, kind)
	op.Addr, op.Tag, op.Ignore, op.Flags, op.Ctx = uint64(src), uint64(tag), uint64(ignore), uint64(flags), ctx
	return C.ssize_t(code("recv", e.Recv(&op)))
}

//export lnx_go_ep_cancel
func lnx_go_ep_cancel(eh C.lnx_handle, ctx unsafe.Pointer) (ret C.ssize_t) {
	defer recoverTo(&ret, "fi_cancel")
	e, err := object[*lnx.Endpoint](eh)
	if err != nil {
		return C.ssize_t(code("fi_cancel", err))
	}
	return C.ssize_t(code("fi_cancel", e.Cancel(ctx)))
}

// avInsertFlags checks the flags of an AV insertion call as libfabric's
// util AVs do: FI_MORE is a hint (lnx inserts at once, so it is ignored),
// FI_SYNC_ERR asks for each address's outcome in errs (C passes the
// call's context as errs, or NULL where an EQ reports the errors instead:
// fi_av(3) applies FI_SYNC_ERR to synchronous insertions only); anything
// else is -FI_EBADFLAGS.
func avInsertFlags(what string, flags C.uint64_t, errs *C.int) error {
	if f := uint64(flags) &^ (fi.MORE | fi.SYNC_ERR); f != 0 {
		return fi.Wrap(fi.EBADFLAGS, "%s flags %#x not supported", what, f)
	}
	if uint64(flags)&fi.SYNC_ERR != 0 && errs == nil {
		return fi.Wrap(fi.EINVAL, "%s: FI_SYNC_ERR without a context to write the errors to", what)
	}
	return nil
}

// syncErrs is the int array FI_SYNC_ERR fills, as Go sees it.
func syncErrs(errs *C.int, n int) []int32 {
	if errs == nil || n == 0 {
		return nil
	}
	return unsafe.Slice((*int32)(unsafe.Pointer(errs)), n)
}

// lnx_go_av_insert is fi_av_insert; errs, when not NULL, has room for
// count ints (FI_SYNC_ERR, or C's own array when an EQ is bound).
//
//export lnx_go_av_insert
func lnx_go_av_insert(ah C.lnx_handle, addr unsafe.Pointer, count C.size_t, out *C.fi_addr_t, flags C.uint64_t,
	errs *C.int) (ret C.int) {
	defer recoverTo(&ret, "fi_av_insert")
	av, err := object[*lnx.AV](ah)
	if err != nil {
		return code("fi_av_insert", err)
	}
	if err := avInsertFlags("fi_av_insert", flags, errs); err != nil {
		return code("fi_av_insert", err)
	}
	n := int(count)
	if n == 0 {
		return 0
	}
	if addr == nil {
		return code("fi_av_insert", fi.Wrap(fi.EINVAL, "NULL address array"))
	}
	blob := unsafe.Slice((*byte)(addr), n*lnx.AddrLen)
	var o []uint64
	if out != nil {
		o = unsafe.Slice((*uint64)(unsafe.Pointer(out)), n)
	}
	return C.int(av.Insert(blob, n, o, syncErrs(errs, n)))
}

// lnx_go_av_insertsym is fi_av_insertsym (fi_av_insertsvc: counts of 1):
// out and errs, when not NULL, have room for nodecnt x svccnt fi_addrs and
// ints (errs as in lnx_go_av_insert).
//
//export lnx_go_av_insertsym
func lnx_go_av_insertsym(ah C.lnx_handle, node *C.char, nodecnt C.size_t, service *C.char, svccnt C.size_t,
	out *C.fi_addr_t, flags C.uint64_t, errs *C.int) (ret C.int) {
	defer recoverTo(&ret, "fi_av_insertsym")
	av, err := object[*lnx.AV](ah)
	if err != nil {
		return code("fi_av_insertsym", err)
	}
	if err := avInsertFlags("fi_av_insertsym", flags, errs); err != nil {
		return code("fi_av_insertsym", err)
	}
	const most = 1 << 20 // LNX_SYM_MAX in av.c
	if nodecnt == 0 || svccnt == 0 || nodecnt > most || svccnt > most || nodecnt*svccnt > most {
		return code("fi_av_insertsym", fi.Wrap(fi.EINVAL, "%d nodes x %d services", nodecnt, svccnt))
	}
	var nd, sv string
	if node != nil {
		nd = C.GoString(node)
	}
	if service != nil {
		sv = C.GoString(service)
	}
	var o []uint64
	if out != nil {
		o = unsafe.Slice((*uint64)(unsafe.Pointer(out)), int(nodecnt*svccnt))
	}
	n, err := av.InsertSym(nd, int(nodecnt), sv, int(svccnt), o, syncErrs(errs, int(nodecnt*svccnt)))
	if err != nil {
		return code("fi_av_insertsym", err)
	}
	return C.int(n)
}

//export lnx_go_av_remove
func lnx_go_av_remove(ah C.lnx_handle, addrs *C.fi_addr_t, count C.size_t, flags C.uint64_t) (ret C.int) {
	defer recoverTo(&ret, "fi_av_remove")
	av, err := object[*lnx.AV](ah)
	if err != nil {
		return code("fi_av_remove", err)
	}
	if count > 0 && addrs == nil {
		return code("fi_av_remove", fi.Wrap(fi.EINVAL, "NULL fi_addr array"))
	}
	var list []uint64
	if count > 0 {
		list = unsafe.Slice((*uint64)(unsafe.Pointer(addrs)), int(count))
	}
	return code("fi_av_remove", av.Remove(list))
}

//export lnx_go_av_lookup
func lnx_go_av_lookup(ah C.lnx_handle, a C.fi_addr_t, addr unsafe.Pointer, addrlen *C.size_t) (ret C.int) {
	defer recoverTo(&ret, "fi_av_lookup")
	av, err := object[*lnx.AV](ah)
	if err != nil {
		return code("fi_av_lookup", err)
	}
	raw, err := av.Lookup(uint64(a))
	if err != nil {
		return code("fi_av_lookup", err)
	}
	n := min(int(*addrlen), len(raw))
	if addr != nil && n > 0 {
		copy(unsafe.Slice((*byte)(addr), n), raw)
	}
	*addrlen = C.size_t(len(raw))
	return 0
}

//export lnx_go_av_straddr
func lnx_go_av_straddr(addr unsafe.Pointer, buf *C.char, buflen *C.size_t) {
	var ret C.int
	defer recoverTo(&ret, "fi_av_straddr")
	var s string
	if addr == nil {
		s = "lnx://invalid"
	} else {
		s = lnx.Straddr(unsafe.Slice((*byte)(addr), lnx.AddrLen))
	}
	have := int(*buflen)
	*buflen = C.size_t(len(s) + 1)
	if have == 0 {
		return
	}
	n := min(have-1, len(s))
	out := unsafe.Slice((*byte)(unsafe.Pointer(buf)), have)
	copy(out, s[:n])
	out[n] = 0
}
