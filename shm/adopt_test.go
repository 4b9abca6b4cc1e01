// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only

package shm

import (
	"bytes"
	"errors"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"
)

// ptrAt reads the pointer a TxSlot keeps as a uintptr (memory outside
// the Go heap).
func ptrAt(p *uintptr) unsafe.Pointer { return *(*unsafe.Pointer)(unsafe.Pointer(p)) }

// outsidePost writes a rendezvous record for buf into p's ring through its
// TxSlot, as lnx's C fast path does (lnx_fast_put_rndv): entry j of the
// slot's table, cookie with txRndvBit. It returns the cookie.
func outsidePost(t *testing.T, s *TxSlot, j int, buf []byte, h Hdr, ctx uintptr) uint64 {
	t.Helper()
	if s.Ready == 0 || uint64(len(buf)) > s.RndvMax {
		t.Fatalf("slot not ready (%d) or %d bytes over RndvMax %d", s.Ready, len(buf), s.RndvMax)
	}
	r := &s.R[j]
	if r.State != txrFree {
		t.Fatalf("entry %d in state %d", j, r.State)
	}
	off := s.Tail & s.Mask
	rec := (*recHdr)(unsafe.Add(ptrAt(&s.Ring), off))
	pair := (*[2]uint64)(unsafe.Add(unsafe.Pointer(rec), recHdrSize))
	pair[0] = uint64(uintptr(unsafe.Pointer(unsafe.SliceData(buf))))
	pair[1] = uint64(len(buf))
	rec.kf = recRndv | 1<<8 | uint64(h.Flags)<<32
	rec.tag, rec.data, rec.size = h.Tag, h.Data, uint64(len(buf))
	cookie := uint64(r.Gen)<<32 | txRndvBit | uint64(j)
	rec.cookie = cookie
	*r = TxRndv{Ctx: ctx, Base: pair[0], Len: uint64(len(buf)), Gen: r.Gen, State: txrC, Cq: 1, Tagged: 1}
	storeRelease(&rec.stamp, stampOf(s.Tail, s.Salt))
	s.Tail += lineBytes
	s.Nout++
	return cookie
}

// outsideReap reaps the next ack as lnx's C layer does (lnx_arm_reap); it
// reports the cookie.
func outsideReap(t *testing.T, s *TxSlot) uint64 {
	t.Helper()
	a := (*ackEnt)(unsafe.Add(ptrAt(&s.Ack), (s.AckHead&s.AckMask)*ackBytes))
	var cookie uint64
	spin(t, "an ack", func() bool { return atomic.LoadUint64(&a.stamp) == s.AckHead+1 })
	cookie = a.cookie
	j := uint32(cookie) &^ txRndvBit
	s.AckHead++
	atomic.StoreUint64((*uint64)(ptrAt(&s.AckPub)), s.AckHead)
	s.R[j].State = txrFree
	s.R[j].Gen++
	s.Nout--
	return cookie
}

// Rendezvous sends an outside writer posted through a TxSlot: the receiver
// pulls and acknowledges them like Go's; the writer reaps one ack itself,
// then Go adopts the rest (AdoptTx) and reports each as a send of its own,
// once, its entry freed for the writer under a new generation. The
// endpoint's next own rendezvous send reaps after them.
func TestAdoptTx(t *testing.T) {
	a, b, ab, _ := pair(t, Config{OutsideRndvMax: 1 << 20}, Config{})
	defer a.Close()
	defer b.Close()
	// The first message claims the ring and readies the slot.
	if _, err := a.Send(ab, Hdr{Tag: 1}, [][]byte{pattern(10, 1)}, 0); err != nil {
		t.Fatal(err)
	}
	collect(t, b, 1)
	s := ab.TxSlot()
	if s == nil || s.Ready == 0 || s.RndvMax != 1<<20 || s.Ack == 0 || s.AckPub == 0 || s.BulkReq == 0 {
		t.Fatalf("slot: %+v", s)
	}
	bufs := [][]byte{pattern(20000, 2), pattern(65536, 3), pattern(8193, 4)}
	var cookies []uint64
	for j, buf := range bufs {
		cookies = append(cookies, outsidePost(t, s, j, buf, Hdr{Tag: uint64(10 + j), Data: 7, Flags: 1}, uintptr(100+j)))
	}
	arr := collect(t, b, len(bufs))
	for j, buf := range bufs {
		rv := arr[j].rndv
		if rv == nil {
			t.Fatalf("arrival %d is not a rendezvous", j)
		}
		if rv.Size() != uint64(len(buf)) || rv.Hdr() != (Hdr{Tag: uint64(10 + j), Data: 7, Flags: 1}) {
			t.Fatalf("record %d: size %d hdr %+v", j, rv.Size(), rv.Hdr())
		}
		dst := make([]byte, len(buf)+64)
		if n, err := b.Pull(rv, [][]byte{dst}); err != nil || n != uint64(len(buf)) {
			t.Fatalf("Pull %d: %d %v", j, n, err)
		}
		if !bytes.Equal(dst[:len(buf)], buf) || !bytes.Equal(dst[len(buf):], make([]byte, 64)) {
			t.Fatalf("record %d: data differs at %d", j, firstDiff(dst[:len(buf)], buf))
		}
	}
	if c := outsideReap(t, s); c != cookies[0] {
		t.Fatalf("first ack's cookie %#x, want %#x", c, cookies[0])
	}
	gen0 := s.R[0].Gen
	ids := map[uint64]int{}
	a.AdoptTx(s, func(o OutsideSend) uint64 {
		j := int(uintptr(o.Ctx)) - 100
		if j < 1 || j > 2 || o.Len != uint64(len(bufs[j])) || !o.Tagged || !o.CQ {
			t.Errorf("adopted %+v", o)
		}
		ids[uint64(500+j)] = j
		return uint64(500 + j)
	})
	if len(ids) != 2 || s.Nout != 0 || s.R[1].State != txrGo || s.R[2].State != txrGo || s.R[0].State != txrFree {
		t.Fatalf("adopted %v; nout %d states %d %d %d", ids, s.Nout, s.R[0].State, s.R[1].State, s.R[2].State)
	}
	done := map[uint64]error{}
	spin(t, "two SendDones", func() bool {
		a.Poll(nil, func(id uint64, err error) {
			if _, ok := done[id]; ok {
				t.Errorf("SendDone(%d) twice", id)
			}
			done[id] = err
		})
		return len(done) >= 2
	})
	for id, err := range done {
		if _, ok := ids[id]; !ok || err != nil {
			t.Fatalf("SendDone(%d, %v)", id, err)
		}
	}
	if s.R[1].State != txrFree || s.R[2].State != txrFree || s.R[0].Gen != gen0 || s.R[1].Gen != 1 ||
		s.AckHead != 3 || !a.Quiet() {
		t.Fatalf("after the acks: states %d %d gens %d %d ack head %d quiet %v",
			s.R[1].State, s.R[2].State, s.R[0].Gen, s.R[1].Gen, s.AckHead, a.Quiet())
	}
	// Go's own rendezvous send after them.
	src := pattern(30000, 9)
	if done, err := a.Send(ab, Hdr{Tag: 20}, [][]byte{src}, 77); done || err != nil {
		t.Fatalf("Send: %v %v", done, err)
	}
	rv := waitRndv(t, b)
	dst := make([]byte, len(src))
	if _, err := b.Pull(rv, [][]byte{dst}); err != nil || !bytes.Equal(dst, src) {
		t.Fatalf("Go's send: %v", err)
	}
	if err := waitDone(t, a, 77); err != nil {
		t.Fatal(err)
	}
}

// An adopted send whose receiver pulls through the fallback copy (no CMA
// there) is served by Go's Poll; one whose receiver closes fails with
// ErrPeerGone, once.
func TestAdoptTxFallbackAndPeerGone(t *testing.T) {
	a, b, ab, _ := pair(t, Config{OutsideRndvMax: 1 << 20}, Config{DisableCMA: true})
	defer a.Close()
	if _, err := a.Send(ab, Hdr{Tag: 1}, [][]byte{pattern(10, 1)}, 0); err != nil {
		t.Fatal(err)
	}
	collect(t, b, 1)
	s := ab.TxSlot()
	buf := pattern(300000, 5)
	outsidePost(t, s, 0, buf, Hdr{Tag: 2}, 1)
	a.AdoptTx(s, func(OutsideSend) uint64 { return 41 })
	res := make(chan error, 1)
	go func() {
		deadline := time.Now().Add(liveness)
		for time.Now().Before(deadline) {
			got, gerr := false, error(nil)
			a.Poll(nil, func(id uint64, err error) {
				got, gerr = true, err
				if id != 41 {
					gerr = errors.New("wrong SendDone id")
				}
			})
			if got {
				res <- gerr
				return
			}
		}
		res <- errors.New("sender: timeout")
	}()
	rv := waitRndv(t, b)
	dst := make([]byte, len(buf))
	if n, err := b.Pull(rv, [][]byte{dst}); err != nil || n != uint64(len(buf)) || !bytes.Equal(dst, buf) {
		t.Fatalf("fallback Pull: %d %v", n, err)
	}
	if err := <-res; err != nil {
		t.Fatal(err)
	}
	if st := b.Stats(); st.FallbackPulls != 1 {
		t.Fatalf("stats %+v", st)
	}
	// The next one's receiver closes before taking it.
	outsidePost(t, s, 1, buf, Hdr{Tag: 3}, 2)
	a.AdoptTx(s, func(OutsideSend) uint64 { return 42 })
	collect(t, b, 1)
	b.Close()
	if err := waitDone(t, a, 42); !errors.Is(err, ErrPeerGone) {
		t.Fatalf("SendDone after the receiver closed: %v", err)
	}
	if s.R[1].State != txrFree {
		t.Fatalf("entry of a failed send in state %d", s.R[1].State)
	}
}
