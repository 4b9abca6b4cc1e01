// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only

package shm

import (
	"bytes"
	"sync/atomic"
	"testing"
	"unsafe"
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
