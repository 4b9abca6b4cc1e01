// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only

package shm

import (
	"bytes"
	"os"
	"sync/atomic"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// A lent ring is consumed by the borrower; after Resync, Poll must go on
// from where the borrower stopped: the next message, not the one taken.
func TestLendResync(t *testing.T) {
	a, b, ab, _ := pair(t, Config{}, Config{})
	defer a.Close()
	defer b.Close()
	// A first message makes the ring active on b's side.
	if _, err := a.Send(ab, Hdr{Tag: 1}, [][]byte{pattern(10, 1)}, 0); err != nil {
		t.Fatal(err)
	}
	if got := collect(t, b, 1); got[0].hdr.Tag != 1 {
		t.Fatalf("first message tag %d", got[0].hdr.Tag)
	}
	var views [4]RingView
	n, ok := b.Lend(views[:])
	if !ok || n != 1 {
		t.Fatalf("Lend: %d rings, ok %v; want 1", n, ok)
	}
	if _, ok := b.Lend(views[:]); ok {
		t.Fatal("a second Lend before Resync succeeded")
	}
	v := views[0]
	if v.Src != a.ID() {
		t.Fatalf("lent ring's sender %#x, want %#x", v.Src, a.ID())
	}
	for i := uint64(2); i <= 3; i++ {
		if _, err := a.Send(ab, Hdr{Tag: i}, [][]byte{pattern(int(i*100), i)}, 0); err != nil {
			t.Fatal(err)
		}
	}
	// Consume message 2 the way a borrower does: stamp, size, advance.
	rec := (*recHdr)(unsafe.Add(v.Ring, v.Head&v.Mask))
	spin(t, "message 2 in the ring", func() bool {
		return atomic.LoadUint64(&rec.stamp) == stampOf(v.Head, v.Salt)
	})
	if rec.tag != 2 || rec.size != 200 || !bytes.Equal(unsafe.Slice((*byte)(unsafe.Add(unsafe.Pointer(rec), recHdrSize)), 200), pattern(200, 2)) {
		t.Fatalf("lent ring's next record: tag %d size %d", rec.tag, rec.size)
	}
	head := v.Head + (recHdrSize+rec.size+lineBytes-1)&^(lineBytes-1)
	atomic.StoreUint64(v.FwdHead, head)
	func() {
		defer func() {
			if recover() == nil {
				t.Error("Poll while lent did not refuse")
			}
		}()
		b.Poll(func(*Arrival) bool { return true }, nil)
	}()
	b.Resync([]uint64{head})
	got := collect(t, b, 1)
	if got[0].hdr.Tag != 3 || !bytes.Equal(got[0].data, pattern(300, 3)) {
		t.Fatalf("after Resync Poll delivered tag %d (%d bytes), want message 3", got[0].hdr.Tag, len(got[0].data))
	}
}

// A borrower may take a rendezvous record from a lent ring as lnx's C
// layer does (RingView: process_vm_readv from Pid, an ack at AckTail);
// after ResyncAcks the sender has its SendDone, and the endpoint's own
// next ack lands after the borrower's, so that the sender reaps it too.
func TestLendRendezvous(t *testing.T) {
	a, b, ab, _ := pair(t, Config{}, Config{})
	defer a.Close()
	defer b.Close()
	if _, err := a.Send(ab, Hdr{Tag: 1}, [][]byte{pattern(10, 1)}, 0); err != nil {
		t.Fatal(err)
	}
	collect(t, b, 1)
	var views [4]RingView
	n, ok := b.Lend(views[:])
	if !ok || n != 1 {
		t.Fatalf("Lend: %d rings, ok %v; want 1", n, ok)
	}
	v := views[0]
	if !v.CMA || v.Pid != os.Getpid() || v.Ack == nil || v.AckHead == nil || v.AckMask != ackEntries-1 {
		t.Fatalf("lent ring: CMA %v pid %d ack %p/%p mask %d", v.CMA, v.Pid, v.Ack, v.AckHead, v.AckMask)
	}
	const size = 3 * 4096
	src := pattern(size, 2)
	if done, err := a.Send(ab, Hdr{Tag: 2}, [][]byte{src}, 42); err != nil || done {
		t.Fatalf("rendezvous Send: done %v, %v", done, err)
	}
	rec := (*recHdr)(unsafe.Add(v.Ring, v.Head&v.Mask))
	spin(t, "the rendezvous record", func() bool {
		return atomic.LoadUint64(&rec.stamp) == stampOf(v.Head, v.Salt)
	})
	niov := rec.kf >> 8 & 0xff
	if rec.kf&0xff != recRndv || niov != 1 || rec.size != size {
		t.Fatalf("record kind/flags %#x size %d", rec.kf, rec.size)
	}
	pair := (*[2]uint64)(unsafe.Add(unsafe.Pointer(rec), recHdrSize))
	dst := make([]byte, size)
	k, err := unix.ProcessVMReadv(v.Pid, []unix.Iovec{{Base: &dst[0], Len: size}},
		[]unix.RemoteIovec{{Base: uintptr(pair[0]), Len: int(pair[1])}}, 0)
	if err != nil || k != size || !bytes.Equal(dst, src) {
		t.Fatalf("process_vm_readv: %d, %v", k, err)
	}
	if v.AckTail-atomic.LoadUint64(v.AckHead) > v.AckMask {
		t.Fatal("no room in the ack ring")
	}
	ack := (*ackEnt)(unsafe.Add(v.Ack, (v.AckTail&v.AckMask)*ackBytes))
	ack.cookie, ack.status, ack.n = rec.cookie, ackOK, size
	atomic.StoreUint64(&ack.stamp, v.AckTail+1)
	head := v.Head + (recHdrSize+niov*iovBytes+lineBytes-1)&^(lineBytes-1)
	atomic.StoreUint64(v.FwdHead, head)
	b.ResyncAcks([]uint64{head}, []uint64{v.AckTail + 1})
	var ids []uint64
	reap := func() bool {
		a.Poll(nil, func(id uint64, err error) {
			if err != nil {
				t.Errorf("send %d: %v", id, err)
			}
			ids = append(ids, id)
		})
		return len(ids) > 0
	}
	spin(t, "SendDone for the borrower's ack", reap)
	if ids[0] != 42 {
		t.Fatalf("SendDone for send %d, want 42", ids[0])
	}
	// The next rendezvous, pulled by b itself after taking the rings back.
	if _, err := a.Send(ab, Hdr{Tag: 3}, [][]byte{pattern(size, 3)}, 43); err != nil {
		t.Fatal(err)
	}
	got := collect(t, b, 1)
	if got[0].rndv == nil {
		t.Fatal("message 3 did not arrive as a rendezvous")
	}
	if k, err := b.Pull(got[0].rndv, [][]byte{dst}); err != nil || k != size || !bytes.Equal(dst, pattern(size, 3)) {
		t.Fatalf("Pull: %d, %v", k, err)
	}
	ids = ids[:0]
	spin(t, "SendDone for b's own ack after the borrower's", reap)
	if ids[0] != 43 {
		t.Fatalf("SendDone for send %d, want 43", ids[0])
	}
}
