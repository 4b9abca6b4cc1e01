// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only

package peerep

/*
#include <stdint.h>
#include <stddef.h>
struct lnx_pentry;
*/
import "C"

import (
	"runtime/cgo"

	"github.com/lnx-go/lnx-go/lnx/logging"
)

// The owner callbacks of pep.c. Each recovers a panic (none may cross
// into the core's C), looks its owner up by handle, and calls it; they
// run inside one of EP's calls (the owner's lock is held by its caller).

func owner(h C.uintptr_t) Owner {
	o, _ := cgo.Handle(h).Value().(Owner)
	return o
}

func recovered(what string) {
	if r := recover(); r != nil {
		logging.Warnf(logging.EPData, "peer API %s callback: %v", what, r)
	}
}

//export lnxPepGet
func lnxPepGet(h C.uintptr_t, tagged C.int, addr C.uint64_t, size C.size_t, tag C.uint64_t, e *C.struct_lnx_pentry) (ret C.int) {
	ret = 1
	defer recovered("get")
	if owner(h).Get(tagged != 0, uint64(addr), uint64(size), uint64(tag), Entry{c: e}) {
		return 0
	}
	return 1
}

//export lnxPepQueued
func lnxPepQueued(h C.uintptr_t, e *C.struct_lnx_pentry) C.int {
	defer recovered("queue")
	owner(h).Queued(Entry{c: e})
	return 0
}

//export lnxPepWrite
func lnxPepWrite(h C.uintptr_t, id, flags C.uint64_t, n C.size_t, data, tag, src C.uint64_t) {
	defer recovered("cq write")
	owner(h).Write(uint64(id), uint64(flags), uint64(n), uint64(data), uint64(tag), uint64(src))
}

//export lnxPepWriteErr
func lnxPepWriteErr(h C.uintptr_t, id, flags C.uint64_t, n C.size_t, data, tag C.uint64_t, err, provErr C.int, olen C.size_t) {
	defer recovered("cq writeerr")
	owner(h).WriteErr(uint64(id), uint64(flags), uint64(n), uint64(data), uint64(tag), int(err), int(provErr), uint64(olen))
}
