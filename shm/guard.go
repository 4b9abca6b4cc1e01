// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only

package shm

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// guardBytes of PROT_NONE surround every mapped region, so that a stray
// access just past a ring faults at once instead of landing in whatever
// mapping (a Go heap arena, say) the kernel placed next to it.
const guardBytes = 1 << 16

// mapGuarded maps size bytes of fd shared, between two guard areas.
func mapGuarded(fd int, size int) ([]byte, error) {
	total := uintptr(size) + 2*guardBytes
	res, err := unix.MmapPtr(-1, 0, nil, total, unix.PROT_NONE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS|unix.MAP_NORESERVE)
	if err != nil {
		return nil, err
	}
	mid := unsafe.Add(res, guardBytes)
	if _, err := unix.MmapPtr(fd, 0, mid, uintptr(size), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_FIXED); err != nil {
		_ = unix.MunmapPtr(res, total)
		return nil, err
	}
	return unsafe.Slice((*byte)(mid), size), nil
}

// unmapGuarded releases a mapping made by mapGuarded, guards included.
func unmapGuarded(mem []byte) error {
	if len(mem) == 0 {
		return nil
	}
	base := unsafe.Add(unsafe.Pointer(unsafe.SliceData(mem)), -guardBytes)
	return unix.MunmapPtr(base, uintptr(len(mem))+2*guardBytes)
}
