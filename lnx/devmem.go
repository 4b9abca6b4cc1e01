// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only

package lnx

import (
	"math/bits"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/lnx-go/lnx-go/hmem"
	"github.com/lnx-go/lnx-go/internal/fi"
)

// Device memory on the data path. lnx never reads or writes device memory
// with the CPU: a send from device memory is copied by the device runtime
// into a host staging buffer, which the core then sends; a receive into
// device memory lands in a staging buffer (or, for eager messages, comes
// straight from the core's buffer) and the runtime copies it in. The cores
// (our shm, Debian's 1.17 tcp;ofi_rxm) therefore only ever see host memory.

// memKind is what one iov element is.
type memKind struct {
	iface  hmem.Iface
	device int
}

func (k memKind) isDevice() bool { return k.iface.IsDevice() }

// kindOf says what b is: the MR's word when the application passed a
// descriptor, else (when a device runtime is loaded) the runtime's.
func (e *Endpoint) kindOf(b Buf, mr *MR) memKind {
	if mr != nil {
		if mr.IsDevice() {
			return memKind{mr.Iface, mr.Device}
		}
		return memKind{}
	}
	if !e.hmemOn || b.Len == 0 {
		return memKind{}
	}
	i, d := hmem.Classify(uintptr(b.Ptr), hmem.Unknown)
	return memKind{i, d}
}

// devKinds fills kinds for op's iov and reports whether any is device
// memory. Without a runtime and without device MRs it costs a few loads.
func (e *Endpoint) devKinds(op *Op, kinds *[MaxIov]memKind) bool {
	any := false
	for i := 0; i < op.N; i++ {
		mr := op.MRs[i]
		if mr == nil && !e.hmemOn {
			continue
		}
		k := e.kindOf(op.IovBuf[i], mr)
		kinds[i] = k
		any = any || k.isDevice()
	}
	return any
}

// runtimeFor returns the runtime that moves memory of kind k.
func runtimeFor(k memKind) (hmem.Runtime, error) {
	rt, ok := hmem.Lookup(k.iface)
	if !ok {
		return nil, fi.Wrap(fi.ENOSYS, "no %v runtime for device memory", k.iface)
	}
	return rt, nil
}

// gather copies op's iov (host or device) into one host buffer.
func gather(dst []byte, iov []Buf, kinds []memKind) error {
	off := uint64(0)
	for i, b := range iov {
		if b.Len == 0 {
			continue
		}
		d := dst[off : off+b.Len]
		if kinds[i].isDevice() {
			rt, err := runtimeFor(kinds[i])
			if err != nil {
				return err
			}
			if err := rt.CopyToHost(d, uintptr(b.Ptr)); err != nil {
				return fi.Wrap(fi.EIO, "copy from device: %v", err)
			}
		} else {
			copy(d, b.bytes())
		}
		off += b.Len
	}
	return nil
}

// gatherUpTo is gather that stops when dst is full.
func gatherUpTo(dst []byte, iov []Buf, kinds []memKind) error {
	var part [MaxIov]Buf
	n := 0
	left := uint64(len(dst))
	for _, b := range iov {
		if left == 0 {
			break
		}
		b.Len = min(b.Len, left)
		left -= b.Len
		part[n] = b
		n++
	}
	return gather(dst[:uint64(len(dst))-left], part[:n], kinds[:n])
}

// scatterKinds copies src into iov (host or device) and returns the bytes
// placed.
func scatterKinds(iov []Buf, kinds []memKind, src []byte) (uint64, error) {
	var n uint64
	for i, b := range iov {
		if len(src) == 0 {
			break
		}
		c := min(uint64(len(src)), b.Len)
		if c == 0 {
			continue
		}
		if kinds[i].isDevice() {
			rt, err := runtimeFor(kinds[i])
			if err != nil {
				return n, err
			}
			if err := rt.CopyFromHost(uintptr(b.Ptr), src[:c]); err != nil {
				return n, fi.Wrap(fi.EIO, "copy to device: %v", err)
			}
		} else {
			copy(b.bytes(), src[:c])
		}
		src = src[c:]
		n += c
	}
	return n, nil
}

// stagingPool hands out host buffers outside the Go heap (mmap), so that a
// network core may keep a pointer to one after the call that passed it
// (cgo forbids that for Go memory) and a peer may read it by CMA. Buffers
// come in power-of-two classes from 64 KiB. Released buffers are kept for
// reuse up to stagingKeep bytes in all: a window of large device sends in
// flight needs one each, and a fresh mapping costs a page fault per page on
// first touch (measured: keeping only four per class cut streaming
// bandwidth of 1 MiB device messages to an eighth). Each buffer is pinned
// with the device runtimes when it is mapped (hmem.PinHost): a driver
// copies pageable memory through bounce buffers of its own, at a third to
// a quarter of the speed; kept buffers stay pinned.
type stagingPool struct {
	free   [stagingClasses][][]byte
	kept   uint64             // bytes in free
	pinned map[uintptr]func() // buffer address -> its unpin
}

const (
	stagingMinShift = 16
	stagingClasses  = 48 - stagingMinShift
	stagingKeep     = 256 << 20
)

func stagingClass(n uint64) int {
	if n <= 1<<stagingMinShift {
		return 0
	}
	return bits.Len64(n-1) - stagingMinShift
}

// get returns a buffer of at least n bytes, sliced to n.
func (p *stagingPool) get(n uint64) ([]byte, error) {
	c := stagingClass(n)
	if c >= stagingClasses {
		return nil, fi.Wrap(fi.EMSGSIZE, "staging buffer of %d bytes", n)
	}
	if l := len(p.free[c]); l > 0 {
		b := p.free[c][l-1]
		p.free[c] = p.free[c][:l-1]
		p.kept -= uint64(cap(b))
		return b[:n], nil
	}
	b, err := unix.Mmap(-1, 0, 1<<(c+stagingMinShift), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		return nil, fi.Wrap(fi.ENOMEM, "staging buffer of %d bytes: %v", n, err)
	}
	if unpin := hmem.PinHost(b); unpin != nil {
		if p.pinned == nil {
			p.pinned = map[uintptr]func(){}
		}
		p.pinned[uintptr(unsafe.Pointer(&b[0]))] = unpin
	}
	return b[:n], nil
}

// unmap unpins (if pinned) and unmaps a whole buffer.
func (p *stagingPool) unmap(b []byte) {
	a := uintptr(unsafe.Pointer(&b[0]))
	if unpin, ok := p.pinned[a]; ok {
		unpin()
		delete(p.pinned, a)
	}
	unix.Munmap(b)
}

// put returns a buffer from get.
func (p *stagingPool) put(b []byte) {
	if b == nil {
		return
	}
	b = b[:cap(b)]
	c := stagingClass(uint64(len(b)))
	if p.kept+uint64(len(b)) <= stagingKeep {
		p.free[c] = append(p.free[c], b)
		p.kept += uint64(len(b))
		return
	}
	p.unmap(b)
}

// drain unmaps every kept buffer (endpoint close).
func (p *stagingPool) drain() {
	for c := range p.free {
		for _, b := range p.free[c] {
			p.unmap(b)
		}
		p.free[c] = nil
	}
	p.kept = 0
}

// deliverDevice is deliver for a receive with device buffers: eager data
// goes straight from the core's buffer to the device; a large message is
// pulled into a staging buffer first.
func (e *Endpoint) deliverDevice(r *recvCtx, src, size uint64, hdr msgHdr, data []byte, rv rndv, kind uint64, core int) {
	var n uint64
	var err error
	if rv.none() {
		n, err = scatterKinds(r.bufs(), r.kinds[:r.n], data)
		e.complete(r, src, size, n, hdr, kind, core, err)
		return
	}
	var st []byte
	if st, err = e.stage.get(min(size, r.capacity())); err != nil {
		e.discardRndv(rv)
		e.complete(r, src, size, 0, hdr, kind, core, err)
		return
	}
	if rv.shm != nil {
		if n, err = e.shm.Pull(rv.shm, [][]byte{st}); err == nil {
			n, err = scatterKinds(r.bufs(), r.kinds[:r.n], st[:n])
		}
		e.stage.put(st)
		e.complete(r, src, size, n, hdr, kind, core, err)
		return
	}
	pp := &pendingPull{r: r, src: src, size: size, hdr: hdr, kind: kind, stage: st}
	rv.net.SetContext(pp)
	if err = rv.t.Pull(rv.net, [][]byte{st}); err != nil {
		e.stage.put(st)
		e.complete(r, src, size, 0, hdr, kind, core, err)
		return
	}
	e.pulls[pp] = struct{}{}
	e.netBusy()
}

// discardRndv drops a large message that cannot be received. A
// rendezvous carries the handle of the core it came by, so it is
// discarded there directly (typed, like pulls; not through core.go).
func (e *Endpoint) discardRndv(rv rndv) {
	switch {
	case rv.shm != nil:
		e.shm.Discard(rv.shm)
	case rv.net != nil:
		rv.t.Discard(rv.net)
	}
}
