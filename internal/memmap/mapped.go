// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only

package memmap

import (
	"os"
	"syscall"
	"unsafe"
)

// A network core reads a send's buffers itself (a zero-copy eager send, the
// data of a rendezvous, an RMA read served to the receiver). A buffer
// shorter than the length the application gave (memory unmapped under it)
// makes tcp's transfer fail inside the core ("internal transfer failed (Bad
// address)"), which breaks the connection to the peer; lnx's shm core
// copies eager messages itself, and would fault. The senders therefore
// check that every page is mapped and refuse the send before anything
// touches it: msync(2) with MS_ASYNC, which walks the mappings over the
// range (ENOMEM for a hole in it) and writes nothing back. mincore(2)
// answers the same, but reads the state of every page: 0.9 us for 16 KiB
// on this machine against msync's 0.22 (a getppid 0.17). A page mapped
// without read permission is not detected.

// PageSize is the system's page size.
var PageSize = uintptr(os.Getpagesize())

// Mapped reports whether every page that b covers is mapped.
func Mapped(b []byte) bool {
	if len(b) == 0 {
		return true
	}
	start := uintptr(unsafe.Pointer(unsafe.SliceData(b))) &^ (PageSize - 1)
	end := uintptr(unsafe.Pointer(unsafe.SliceData(b))) + uintptr(len(b))
	_, _, errno := syscall.Syscall(syscall.SYS_MSYNC, start, end-start, syscall.MS_ASYNC)
	return errno != syscall.ENOMEM
}

// Checked reports whether lnx may copy b, or hand it to a core, checking
// with Mapped only a piece of more than a page: a smaller one costs no
// system call and is taken as it is (it may still straddle a hole; the
// check is for multi-page buffers shorter than their stated length). C's
// fast send path applies the same rule (lnx_copyable in capi/fast_send.c),
// and skips the system call for a range its thread found mapped less than
// 1 ms before (capi/mapped.c); Go's sends, the slower path, check every
// time.
func Checked(b []byte) bool {
	return uintptr(len(b)) <= PageSize || Mapped(b)
}
