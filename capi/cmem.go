// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only

package main

import "unsafe"

// storeCPtr writes p into a pointer-typed slot of C memory without a Go
// write barrier. While the GC runs, a barrier reads the slot's old contents
// as a Go pointer; C memory an application hands us (a CQ entry on its
// stack, an fi_info ** it has not initialised) holds garbage, and garbage
// that happens to point into freed Go heap makes the GC abort the process
// ("found bad pointer in Go heap"). The values stored are C pointers (the
// application's contexts and buffers), which the GC does not track anyway.
func storeCPtr(dst *unsafe.Pointer, p unsafe.Pointer) {
	*(*uintptr)(unsafe.Pointer(dst)) = uintptr(p)
}
