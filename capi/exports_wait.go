// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only

package main

/*
#cgo CFLAGS: -I${SRCDIR}/include
#include "lnx_wait.h"
*/
import "C"

import (
	"unsafe"

	"github.com/lnx-go/lnx-go/internal/fi"
	"github.com/lnx-go/lnx-go/lnx"
)

// waitSetOf returns the wait set a CQ or counter attribute names, for
// FI_WAIT_SET.
func waitSetOf(waitObj C.enum_fi_wait_obj, ws *C.struct_fid_wait) (*lnx.WaitSet, error) {
	if waitObj != C.FI_WAIT_SET {
		return nil, nil
	}
	h := C.lnx_wait_handle(ws)
	if h == 0 {
		return nil, fi.Wrap(fi.EINVAL, "FI_WAIT_SET without an lnx wait set")
	}
	return object[*lnx.WaitSet](h)
}

//export lnx_go_wait_open
func lnx_go_wait_open(waitObj C.enum_fi_wait_obj, h *C.lnx_handle) (ret C.int) {
	defer recoverTo(&ret, "fi_wait_open")
	s, err := lnx.OpenWaitSet(int(waitObj))
	if err != nil {
		return code("fi_wait_open", err)
	}
	return register(s, h)
}

// setMember is an EQ's place in a wait set; closing it leaves the set.
type setMember struct{ leave func() }

func (m *setMember) Close() error { m.leave(); return nil }

// lnx_go_wait_join adds the EQ eq (C memory, a struct lnx_eq) to the wait
// set wh; *h gets the handle whose close takes it out again.
//
//export lnx_go_wait_join
func lnx_go_wait_join(wh C.lnx_handle, eq unsafe.Pointer, h *C.lnx_handle) (ret C.int) {
	defer recoverTo(&ret, "fi_eq_open")
	s, err := object[*lnx.WaitSet](wh)
	if err != nil {
		return code("fi_eq_open", err)
	}
	leave := s.Join(func() bool { return C.lnx_eq_ready(eq) != 0 })
	return register(&setMember{leave}, h)
}

//export lnx_go_wait_wait
func lnx_go_wait_wait(h C.lnx_handle, timeout C.int) (ret C.int) {
	defer recoverTo(&ret, "fi_wait")
	s, err := object[*lnx.WaitSet](h)
	if err != nil {
		return code("fi_wait", err)
	}
	return code("fi_wait", s.Wait(int(timeout)))
}

// lnx_go_wait_fd returns the fd of a CQ, counter or wait set, -1 when it
// has none, or an error code below -1.
//
//export lnx_go_wait_fd
func lnx_go_wait_fd(h C.lnx_handle) (ret C.int) {
	defer recoverTo(&ret, "fi_control(FI_GETWAIT)")
	switch o := handles.get(uintptr(h)).(type) {
	case *lnx.CQ:
		return C.int(o.WaitFD())
	case *lnx.Cntr:
		return C.int(o.WaitFD())
	case *lnx.WaitSet:
		return C.int(o.FD())
	}
	return -C.FI_EINVAL
}

// lnx_go_wait_kind returns the wait object (enum fi_wait_obj) of a CQ,
// counter or wait set, or an error code below 0.
//
//export lnx_go_wait_kind
func lnx_go_wait_kind(h C.lnx_handle) (ret C.int) {
	defer recoverTo(&ret, "fi_control(FI_GETWAITOBJ)")
	switch o := handles.get(uintptr(h)).(type) {
	case *lnx.CQ:
		return C.int(o.WaitKind())
	case *lnx.Cntr:
		return C.int(o.WaitKind())
	case *lnx.WaitSet:
		return C.int(o.WaitKind())
	}
	return -C.FI_EINVAL
}

//export lnx_go_trywait
func lnx_go_trywait(h C.lnx_handle) (ret C.int) {
	defer recoverTo(&ret, "fi_trywait")
	var err error
	switch o := handles.get(uintptr(h)).(type) {
	case *lnx.CQ:
		err = o.TryWait()
	case *lnx.Cntr:
		err = o.TryWait()
	case *lnx.WaitSet:
		err = o.TryWait()
	default:
		err = fi.Wrap(fi.EINVAL, "fi_trywait on an object without a wait object")
	}
	return code("fi_trywait", err)
}

//export lnx_go_poll_open
func lnx_go_poll_open(dh C.lnx_handle, h *C.lnx_handle) (ret C.int) {
	defer recoverTo(&ret, "fi_poll_open")
	d, err := object[*lnx.Domain](dh)
	if err != nil {
		return code("fi_poll_open", err)
	}
	p, err := d.OpenPollSet()
	if err != nil {
		return code("fi_poll_open", err)
	}
	return register(p, h)
}

// lnx_go_poll_add adds (add != 0) or removes a CQ or counter; ctx is the
// fid's context, what fi_poll reports.
//
//export lnx_go_poll_add
func lnx_go_poll_add(ph, oh C.lnx_handle, ctx unsafe.Pointer, add C.int) (ret C.int) {
	defer recoverTo(&ret, "fi_poll_add")
	p, err := object[*lnx.PollSet](ph)
	if err != nil {
		return code("fi_poll_add", err)
	}
	obj := handles.get(uintptr(oh))
	if add != 0 {
		return code("fi_poll_add", p.Add(obj, ctx))
	}
	return code("fi_poll_del", p.Del(obj))
}

//export lnx_go_poll
func lnx_go_poll(ph C.lnx_handle, ctxs *unsafe.Pointer, count C.int) (ret C.int) {
	defer recoverTo(&ret, "fi_poll")
	p, err := object[*lnx.PollSet](ph)
	if err != nil {
		return code("fi_poll", err)
	}
	if count == 0 {
		return 0
	}
	return C.int(p.Poll(unsafe.Slice(ctxs, int(count))))
}
