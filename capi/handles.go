// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only

package main

/*
#cgo CFLAGS: -I${SRCDIR}/include
#cgo pkg-config: libfabric
#include "lnx_capi.h"
*/
import "C"

import (
	"io"
	"runtime/debug"

	"github.com/lnx-go/lnx-go/internal/fi"
	"github.com/lnx-go/lnx-go/lnx/logging"
)

// register stores a new object's handle in *h for C to keep; if the table
// is full the object is closed again and the call fails with -FI_ENOMEM.
func register(v io.Closer, h *C.lnx_handle) C.int {
	id := handles.add(v)
	if id == 0 {
		v.Close()
		return -C.FI_ENOMEM
	}
	*h = C.lnx_handle(id)
	return 0
}

// object resolves a handle to an object of type T.
func object[T any](h C.lnx_handle) (T, error) {
	var zero T
	v, ok := handles.get(uintptr(h)).(T)
	if !ok {
		return zero, fi.Wrap(fi.EINVAL, "handle %d is not an open %T", uintptr(h), zero)
	}
	return v, nil
}

// code turns an error into a C return value, logging failures.
func code(what string, err error) C.int {
	if err == nil {
		return 0
	}
	c := fi.Code(err)
	if c == -int(fi.EAGAIN) {
		// Flow control on the data path: normal, frequent, not worth a log
		// check.
		return C.int(c)
	}
	if c != -int(fi.ENODATA) {
		logging.Warnf(logging.Core, "%s: %v", what, err)
	} else {
		logging.Debugf(logging.Core, "%s: %v", what, err)
	}
	return C.int(c)
}

type integer interface {
	~int | ~int32 | ~int64
}

// recoverTo is deferred by every export: a panic becomes -FI_EOTHER and a
// log line with the stack, never a crash of the host process.
func recoverTo[T integer](ret *T, what string) {
	if r := recover(); r != nil {
		logging.Warnf(logging.Core, "lnx: internal error in %s: %v\n%s", what, r, debug.Stack())
		*ret = T(-int(fi.EOTHER))
	}
}
