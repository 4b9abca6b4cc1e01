// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only

package lnx

import (
	"unsafe"
)

// MaxIov is the largest iov count lnx accepts in one operation.
const MaxIov = 8

// Buf is one iov element: application (possibly device) memory that Go
// must not dereference unless the memory kind allows it.
type Buf struct {
	Ptr unsafe.Pointer
	Len uint64
}

// bytes views host memory as a Go slice (no copy).
func (b Buf) bytes() []byte {
	if b.Len == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(b.Ptr), b.Len)
}

// Op is one send or receive as the application posted it. The iov lives in
// fixed arrays with a count, not in slices into the struct: a slice of its
// own array makes an Op escape to the heap, one allocation per call.
type Op struct {
	IovBuf   [MaxIov]Buf
	MRs      [MaxIov]*MR // the lnx MR of each descriptor, nil for none
	N        int         // iov count
	Addr     uint64      // destination, or source filter for receives
	Tag      uint64
	Ignore   uint64
	Data     uint64
	Flags    uint64
	Ctx      unsafe.Pointer
	Tagged   bool
	Explicit bool // Flags came from a …msg call; otherwise use the defaults
	Inject   bool
	HasData  bool
}

// Iov is the op's buffers.
func (op *Op) Iov() []Buf { return op.IovBuf[:op.N] }

func (op *Op) length() uint64 {
	var n uint64
	for _, b := range op.Iov() {
		n += b.Len
	}
	return n
}

// scatter copies src into the op's buffers and returns the bytes copied.
func scatter(dst []Buf, src []byte) uint64 {
	var n uint64
	for _, b := range dst {
		if len(src) == 0 {
			break
		}
		c := copy(b.bytes(), src)
		src = src[c:]
		n += uint64(c)
	}
	return n
}
