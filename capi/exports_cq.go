// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only

package main

/*
#cgo CFLAGS: -I${SRCDIR}/include
#include "lnx_capi.h"
*/
import "C"

import (
	"unsafe"

	"github.com/lnx-go/lnx-go/internal/fi"
	"github.com/lnx-go/lnx-go/lnx"
)

// writeEntry stores c as the i-th entry of a C array in the CQ's format.
func writeEntry(buf unsafe.Pointer, i int, format int, c *lnx.Completion) {
	switch format {
	case fi.CQ_FORMAT_CONTEXT:
		e := &unsafe.Slice((*C.struct_fi_cq_entry)(buf), i+1)[i]
		storeCPtr(&e.op_context, c.Ctx)
	case fi.CQ_FORMAT_MSG:
		e := &unsafe.Slice((*C.struct_fi_cq_msg_entry)(buf), i+1)[i]
		storeCPtr(&e.op_context, c.Ctx)
		e.flags, e.len = C.uint64_t(c.Flags), C.size_t(c.Len)
	case fi.CQ_FORMAT_DATA:
		e := &unsafe.Slice((*C.struct_fi_cq_data_entry)(buf), i+1)[i]
		storeCPtr(&e.op_context, c.Ctx)
		storeCPtr(&e.buf, c.Buf)
		e.flags, e.len, e.data = C.uint64_t(c.Flags), C.size_t(c.Len), C.uint64_t(c.Data)
	default:
		e := &unsafe.Slice((*C.struct_fi_cq_tagged_entry)(buf), i+1)[i]
		storeCPtr(&e.op_context, c.Ctx)
		storeCPtr(&e.buf, c.Buf)
		e.flags, e.len = C.uint64_t(c.Flags), C.size_t(c.Len)
		e.data, e.tag = C.uint64_t(c.Data), C.uint64_t(c.Tag)
	}
}

// cqBatch bounds one read; a larger count just loops in the application.
// Small, since the batch is zeroed on every call (the polling hot path).
const cqBatch = 16

//export lnx_go_cq_read
func lnx_go_cq_read(ch C.lnx_handle, buf unsafe.Pointer, count C.size_t, src *C.fi_addr_t, timeout C.int) (ret C.ssize_t) {
	defer recoverTo(&ret, "fi_cq_read")
	q, err := object[*lnx.CQ](ch)
	if err != nil {
		return C.ssize_t(code("fi_cq_read", err))
	}
	keepSysmonQuiet()
	if count == 0 {
		// A zero-count read drives progress, as libfabric's own CQs do
		// (an application may progress that way and read later): 0 when
		// completions wait, else -FI_EAVAIL or -FI_EAGAIN. Never blocks.
		return cqDeliver(q, nil, buf, src, 0)
	}
	if buf == nil {
		return C.ssize_t(code("fi_cq_read", fi.Wrap(fi.EINVAL, "NULL CQ buffer")))
	}
	// A ping-pong reads one entry at a time: do not zero a whole batch
	// for it.
	if count == 1 {
		var one [1]lnx.Completion
		return cqDeliver(q, one[:], buf, src, timeout)
	}
	// count is a size_t: compare it as one (any count from 2^63 up is a
	// negative int).
	var tmp [cqBatch]lnx.Completion
	return cqDeliver(q, tmp[:min(count, cqBatch)], buf, src, timeout)
}

// cqDeliver reads into tmp and writes what it got to the caller's arrays.
func cqDeliver(q *lnx.CQ, tmp []lnx.Completion, buf unsafe.Pointer, src *C.fi_addr_t, timeout C.int) C.ssize_t {
	n, errno := q.Read(tmp, int(timeout))
	if errno != 0 {
		if errno == fi.EAGAIN {
			keepSysmonQuietIdle()
		}
		return C.ssize_t(-int(errno))
	}
	var srcs []C.fi_addr_t
	if src != nil {
		srcs = unsafe.Slice(src, n)
	}
	for i := 0; i < n; i++ {
		writeEntry(buf, i, q.Attr.Format, &tmp[i])
		if srcs != nil {
			srcs[i] = C.fi_addr_t(tmp[i].Src)
		}
	}
	return C.ssize_t(n)
}

//export lnx_go_cq_readerr
func lnx_go_cq_readerr(ch C.lnx_handle, buf *C.struct_fi_cq_err_entry, flags C.uint64_t) (ret C.ssize_t) {
	defer recoverTo(&ret, "fi_cq_readerr")
	q, err := object[*lnx.CQ](ch)
	if err != nil {
		return C.ssize_t(code("fi_cq_readerr", err))
	}
	c, ok := q.ReadErr()
	if !ok {
		return -C.FI_EAGAIN
	}
	// err_data is provider memory the caller may offer space for; lnx has
	// none to give, so report none.
	storeCPtr(&buf.op_context, c.Ctx)
	storeCPtr(&buf.buf, c.Buf)
	buf.flags, buf.len = C.uint64_t(c.Flags), C.size_t(c.Len)
	buf.data, buf.tag = C.uint64_t(c.Data), C.uint64_t(c.Tag)
	buf.olen, buf.err, buf.prov_errno = C.size_t(c.OLen), C.int(c.Err), C.int(c.ProvErr)
	buf.err_data_size = 0
	return 1
}

//export lnx_go_cq_signal
func lnx_go_cq_signal(ch C.lnx_handle) (ret C.int) {
	defer recoverTo(&ret, "fi_cq_signal")
	q, err := object[*lnx.CQ](ch)
	if err != nil {
		return code("fi_cq_signal", err)
	}
	q.Signal()
	return 0
}

//export lnx_go_cntr_read
func lnx_go_cntr_read(h C.lnx_handle, errs C.int) (ret C.uint64_t) {
	var r C.int
	defer recoverTo(&r, "fi_cntr_read")
	c, err := object[*lnx.Cntr](h)
	if err != nil {
		return 0
	}
	return C.uint64_t(c.Read(errs != 0))
}

//export lnx_go_cntr_update
func lnx_go_cntr_update(h C.lnx_handle, v C.uint64_t, set, errs C.int) (ret C.int) {
	defer recoverTo(&ret, "fi_cntr_add")
	c, err := object[*lnx.Cntr](h)
	if err != nil {
		return code("fi_cntr_add", err)
	}
	c.Update(uint64(v), set != 0, errs != 0)
	return 0
}

//export lnx_go_cntr_wait
func lnx_go_cntr_wait(h C.lnx_handle, threshold C.uint64_t, timeout C.int) (ret C.int) {
	defer recoverTo(&ret, "fi_cntr_wait")
	c, err := object[*lnx.Cntr](h)
	if err != nil {
		return code("fi_cntr_wait", err)
	}
	return code("fi_cntr_wait", c.Wait(uint64(threshold), int(timeout)))
}
