// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only

package shm

import (
	"bytes"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"
)

// outsideSend appends an eager record through p's TxSlot the way lnx's C
// fast path does (capi/fast_send.c, lnx_fast_send), declining whenever C
// would: not ready, too big, needs a pad, ring full.
func outsideSend(s *TxSlot, h Hdr, b []byte) bool {
	s.lock()
	defer s.unlock()
	if s.Ready == 0 || uint64(len(b)) > s.EagerMax {
		return false
	}
	need := (recHdrSize + uint64(len(b)) + lineBytes - 1) &^ (lineBytes - 1)
	tail, off := s.Tail, s.Tail&s.Mask
	if off+need > s.Size {
		return false
	}
	if tail+need+lineBytes > s.HeadCache+s.Size {
		s.HeadCache = atomic.LoadUint64(*(**uint64)(unsafe.Pointer(&s.FwdHead)))
		if tail+need+lineBytes > s.HeadCache+s.Size {
			return false
		}
	}
	base := unsafe.Add(*(*unsafe.Pointer)(unsafe.Pointer(&s.Ring)), off)
	*(*uint64)(unsafe.Add(base, unsafe.Offsetof(recHdr{}.kf))) = recEager | uint64(h.Flags)<<32
	*(*uint64)(unsafe.Add(base, unsafe.Offsetof(recHdr{}.tag))) = h.Tag
	*(*uint64)(unsafe.Add(base, unsafe.Offsetof(recHdr{}.data))) = h.Data
	*(*uint64)(unsafe.Add(base, unsafe.Offsetof(recHdr{}.size))) = uint64(len(b))
	copy(unsafe.Slice((*byte)(unsafe.Add(base, recHdrSize)), len(b)), b)
	atomic.StoreUint64((*uint64)(unsafe.Add(base, unsafe.Offsetof(recHdr{}.stamp))), (tail^s.Salt)|1)
	s.Tail = tail + need
	return true
}

// A writer outside Go and Send share one ring through the TxSlot: every
// message arrives once, in the order it was written, across ring wraps
// (pads written by Send), full rings and rendezvous sends in between.
func TestTxSlotSharedWriter(t *testing.T) {
	a, b, ab, _ := pair(t, Config{RingBytes: 4096}, Config{RingBytes: 4096})
	s := ab.TxSlot()
	if s == nil {
		t.Fatal("peer has no TxSlot")
	}
	if s.Ready != 0 {
		t.Fatal("slot ready before any Send claimed a ring")
	}
	const n = 3000
	var got []uint64
	deliver := func(ar *Arrival) bool {
		want := pattern(int(ar.Size), ar.Hdr.Tag)
		if ar.Rndv != nil {
			dst := make([]byte, ar.Size)
			if _, err := b.Pull(ar.Rndv, [][]byte{dst}); err != nil {
				t.Errorf("pull %d: %v", ar.Hdr.Tag, err)
			}
			if !bytes.Equal(dst, want) {
				t.Errorf("message %d: rendezvous payload differs", ar.Hdr.Tag)
			}
		} else if !bytes.Equal(ar.Eager, want) {
			t.Errorf("message %d: eager payload differs", ar.Hdr.Tag)
		}
		got = append(got, ar.Hdr.Tag)
		return true
	}
	outside, rndv := 0, 0
	deadline := time.Now().Add(liveness)
	for i := uint64(0); i < n; {
		if time.Now().After(deadline) {
			t.Fatalf("stuck at message %d", i)
		}
		size := int(i*37) % 700
		if i%97 == 5 {
			size = 6000 // above EagerMax: rendezvous, Go only
		}
		msg := pattern(size, i)
		h := Hdr{Tag: i, Data: ^i}
		if i%3 != 0 && size <= 700 && outsideSend(s, h, msg) {
			outside++
			i++
			continue
		}
		done, err := a.Send(ab, h, [][]byte{msg}, i)
		switch {
		case err == ErrAgain:
			b.Poll(deliver, nil)
			a.Poll(nil, func(uint64, error) {})
			continue
		case err != nil:
			t.Fatalf("Send %d: %v", i, err)
		case !done:
			rndv++
		}
		if s.Ready != 1 {
			t.Fatalf("slot not ready after a Send")
		}
		i++
		if i%5 == 0 {
			b.Poll(deliver, nil)
			a.Poll(nil, func(uint64, error) {})
		}
	}
	spin(t, "all messages", func() bool {
		b.Poll(deliver, nil)
		a.Poll(nil, func(uint64, error) {})
		return len(got) == n
	})
	for i, tag := range got {
		if tag != uint64(i) {
			t.Fatalf("arrival %d is message %d: order broken", i, tag)
		}
	}
	if outside < n/3 || rndv == 0 {
		t.Fatalf("mix not exercised: %d outside writes, %d rendezvous", outside, rndv)
	}
	if err := a.Disconnect(ab); err != nil {
		t.Fatal(err)
	}
	if s.Ready != 0 {
		t.Fatal("slot still ready after Disconnect")
	}
}
