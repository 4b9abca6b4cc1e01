package lnx

import (
	"unsafe"

	"github.com/lnx-go/lnx-go/lnx/fi"
)

// MaxIov is the largest iov count lnx accepts in one operation.
const MaxIov = 8

// Buf is one iov element: application (possibly device) memory that Go
// must not dereference unless the memory kind allows it.
type Buf struct {
	Ptr unsafe.Pointer
	Len uint64
}

// Op is one send or receive as the application posted it.
type Op struct {
	Iov      []Buf
	Desc     []unsafe.Pointer
	IovBuf   [MaxIov]Buf
	DescBuf  [MaxIov]unsafe.Pointer
	Addr     uint64 // destination, or source filter for receives
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

// Send posts a send.
func (e *Endpoint) Send(op *Op) error {
	return fi.Wrap(fi.ENOSYS, "data transfer is not implemented yet")
}

// Recv posts a receive.
func (e *Endpoint) Recv(op *Op) error {
	return fi.Wrap(fi.ENOSYS, "data transfer is not implemented yet")
}

// Cancel cancels a posted receive by context.
func (e *Endpoint) Cancel(ctx unsafe.Pointer) error {
	return fi.Wrap(fi.ENOENT, "no operation with that context")
}
