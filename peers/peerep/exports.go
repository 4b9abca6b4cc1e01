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

func endpoint(h C.uintptr_t) *EP {
	ep, _ := cgo.Handle(h).Value().(*EP)
	return ep
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
	if endpoint(h).o.Get(tagged != 0, uint64(addr), uint64(size), uint64(tag), Entry{c: e}) {
		return 0
	}
	return 1
}

//export lnxPepQueued
func lnxPepQueued(h C.uintptr_t, e *C.struct_lnx_pentry) C.int {
	defer recovered("queue")
	endpoint(h).o.Queued(Entry{c: e})
	return 0
}

// lnxPepDrain: the completion batch is full inside a call into the core.
//
//export lnxPepDrain
func lnxPepDrain(h C.uintptr_t) {
	defer recovered("cq write")
	endpoint(h).drain()
}
