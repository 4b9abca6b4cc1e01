// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only

package shm

import (
	"encoding/binary"
	"errors"
	"math/rand"
	"os"
	"testing"
	"time"
	"unsafe"
)

// corruptSetup returns a receiver b whose ring from a is active and
// drained, plus a's peer and a channel of OnError reports.
func corruptSetup(t *testing.T) (a, b *Endpoint, ab *Peer, r *inRing, errs *[]error) {
	t.Helper()
	var list []error
	errs = &list
	a = mustOpen(t, Config{})
	b = mustOpen(t, Config{RingBytes: 8192, OnError: func(src uint64, err error) {
		if src != a.ID() {
			t.Errorf("OnError src %x", src)
		}
		list = append(list, err)
	}})
	ab = mustConnect(t, a, b.Addr())
	if _, err := a.Send(ab, Hdr{}, [][]byte{[]byte("hello")}, 0); err != nil {
		t.Fatal(err)
	}
	collect(t, b, 1)
	return a, b, ab, ringOf(t, b, a.ID()), errs
}

func TestCorruptRecords(t *testing.T) {
	const rb = 8192
	eagerMax := uint64(DefaultEagerMax)
	type rec struct {
		name  string
		setup func(r *inRing) // optional: move head
		words func(head, salt uint64) []uint64
	}
	cases := []rec{
		{"unknown kind", nil, func(h, salt uint64) []uint64 { return []uint64{stampOf(h, salt), 99} }},
		{"kind zero", nil, func(h, salt uint64) []uint64 { return []uint64{stampOf(h, salt), 0} }},
		{"eager too big", nil, func(h, salt uint64) []uint64 { return []uint64{stampOf(h, salt), recEager, 0, 0, eagerMax + 1} }},
		{"eager huge", nil, func(h, salt uint64) []uint64 { return []uint64{stampOf(h, salt), recEager, 0, 0, ^uint64(0)} }},
		{"eager crosses end", func(r *inRing) { r.head = rb - 128 }, func(h, salt uint64) []uint64 {
			return []uint64{stampOf(h, salt), recEager, 0, 0, 200}
		}},
		{"pad at start", func(r *inRing) { r.head = 2 * rb }, func(h, salt uint64) []uint64 { return []uint64{stampOf(h, salt), recPad} }},
		{"rndv no iov", nil, func(h, salt uint64) []uint64 { return []uint64{stampOf(h, salt), recRndv, 0, 0, 0, 0} }},
		{"rndv too many iov", nil, func(h, salt uint64) []uint64 { return []uint64{stampOf(h, salt), recRndv | 17<<8, 0, 0, 17, 0} }},
		{"rndv 255 iov", nil, func(h, salt uint64) []uint64 { return []uint64{stampOf(h, salt), recRndv | 255<<8, 0, 0, 17, 0} }},
		{"rndv size mismatch", nil, func(h, salt uint64) []uint64 {
			return []uint64{stampOf(h, salt), recRndv | 2<<8, 0, 0, 100, 0, 0x10000, 50, 0x20000, 49}
		}},
		{"rndv zero piece", nil, func(h, salt uint64) []uint64 {
			return []uint64{stampOf(h, salt), recRndv | 2<<8, 0, 0, 50, 0, 0x10000, 50, 0x20000, 0}
		}},
		{"rndv overflow", nil, func(h, salt uint64) []uint64 {
			return []uint64{stampOf(h, salt), recRndv | 1<<8, 0, 0, 1 << 40, 0, ^uint64(0) - 10, 1 << 40}
		}},
		{"rndv sum wraps", nil, func(h, salt uint64) []uint64 {
			return []uint64{stampOf(h, salt), recRndv | 2<<8, 0, 0, 1, 0, 0x1000, 1 << 63, 0x1000, 1<<63 + 1}
		}},
		{"rndv crosses end", func(r *inRing) { r.head = rb - 64 }, func(h, salt uint64) []uint64 {
			return []uint64{stampOf(h, salt), recRndv | 4<<8, 0, 0, 4, 0}
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			a, b, ab, r, errs := corruptSetup(t)
			if c.setup != nil {
				c.setup(r)
				r.pubHead = r.head
			}
			writeRec(r, c.words(r.head, r.salt)...)
			delivered := 0
			for i := 0; i < 10; i++ {
				delivered += b.Poll(func(ar *Arrival) bool {
					if ar.Rndv != nil {
						b.Discard(ar.Rndv)
					}
					return true
				}, nil)
			}
			if delivered != 0 {
				t.Fatalf("corrupt record delivered %d arrivals", delivered)
			}
			if len(*errs) != 1 || !errors.Is((*errs)[0], ErrCorrupt) {
				t.Fatalf("OnError calls: %v", *errs)
			}
			t.Log((*errs)[0])
			if s := b.Stats(); s.Corrupt != 1 || s.ActiveRings != 0 {
				t.Fatalf("stats %+v", s)
			}
			// The sender learns it was dropped once its ring fills.
			var err error
			for i := 0; i < 1000 && err == nil; i++ {
				_, err = a.Send(ab, Hdr{}, nil, 0)
			}
			if !errors.Is(err, ErrPeerGone) {
				t.Fatalf("sender after drop: %v", err)
			}
			// After the sender disconnects the ring is released and reusable.
			a.Disconnect(ab)
			ab2 := mustConnect(t, a, b.Addr())
			spin(t, "ring release", func() bool {
				b.Poll(func(*Arrival) bool { return true }, nil)
				_, err := a.Send(ab2, Hdr{Tag: 77}, [][]byte{[]byte("again")}, 0)
				return err == nil
			})
			got := collect(t, b, 1)[0]
			if got.hdr.Tag != 77 || string(got.data) != "again" {
				t.Fatalf("after recovery: %+v", got)
			}
		})
	}
}

func TestBadStampIsNotReady(t *testing.T) {
	// A slot whose stamp is not the expected one is simply "not written
	// yet": nothing is delivered, nothing is reported, and the sender's
	// next record (written over it) is delivered normally.
	a, b, ab, r, errs := corruptSetup(t)
	const rb = 8192
	for _, st := range []uint64{0, 1, stampOf(r.head, r.salt) + 64, stampOf(r.head+rb, r.salt),
		stampOf(r.head-rb, r.salt), stampOf(r.head, r.salt) ^ 2, ^uint64(0)} {
		writeRec(r, st, recEager, 1, 2, 3)
		if n := b.Poll(func(*Arrival) bool { return true }, nil); n != 0 {
			t.Fatalf("stamp %x: delivered %d", st, n)
		}
	}
	if len(*errs) != 0 || b.Stats().ActiveRings != 1 {
		t.Fatalf("errors %v, stats %+v", *errs, b.Stats())
	}
	a.Send(ab, Hdr{Tag: 5}, [][]byte{[]byte("ok")}, 0)
	if c := collect(t, b, 1)[0]; c.hdr.Tag != 5 || string(c.data) != "ok" {
		t.Fatalf("got %+v", c)
	}
}

func TestCorruptRendezvousAddresses(t *testing.T) {
	// Structurally valid request whose addresses are not mapped in the
	// sender: Pull fails cleanly and the sender hears ErrRemote.
	a, b, _, r, _ := corruptSetup(t)
	writeRec(r, stampOf(r.head, r.salt), recRndv|2<<8, 7, 8, 8192, 0xbad, 0x1000, 4096, 0x7000, 4096)
	var rv *Rendezvous
	spin(t, "arrival", func() bool {
		b.Poll(func(ar *Arrival) bool { rv = ar.Rndv; return true }, nil)
		return rv != nil
	})
	if rv.Size() != 8192 || rv.Hdr().Tag != 7 {
		t.Fatalf("rendezvous %+v", rv)
	}
	_, err := b.Pull(rv, [][]byte{make([]byte, 8192)})
	if !errors.Is(err, ErrRemote) {
		t.Fatalf("Pull: %v", err)
	}
	_ = a
}

func TestCorruptControlWords(t *testing.T) {
	// A hostile receiver scribbles over the control block and ack ring the
	// sender reads: the sender must not crash or report bogus completions.
	a, b, ab, _ := pair(t, Config{}, Config{})
	big := make([]byte, 1<<20)
	if _, err := a.Send(ab, Hdr{}, [][]byte{big}, 1); err != nil {
		t.Fatal(err)
	}
	collect(t, b, 1)
	rng := rand.New(rand.NewSource(1))
	ctl := ab.ctl
	for i := 0; i < 2000; i++ {
		// Random acks with valid stamps but garbage cookies.
		h := ab.ackHead
		e := (*ackEnt)(unsafe.Add(ab.ackRing, (h&ab.ackMask)*ackBytes))
		e.cookie = rng.Uint64()
		e.status = rng.Uint64()
		e.stamp = h + 1
		// Random bulk requests and fill/drain words.
		ctl.bulkReq = uint64(rng.Uint32())
		ctl.bulkCookie = rng.Uint64()
		ctl.bulkWant = rng.Uint64()
		ctl.bulkDrain = rng.Uint64()
		a.Poll(nil, func(id uint64, err error) { t.Fatalf("bogus SendDone(%d, %v)", id, err) })
	}
	// Hostile fwdHead: sender keeps writing within bounds.
	ctl.fwdHead = ^uint64(0) - 12345
	for i := 0; i < 1000; i++ {
		a.Send(ab, Hdr{}, [][]byte{make([]byte, i%300)}, 0)
	}
	if ab.outstanding != 1 {
		t.Fatalf("outstanding %d", ab.outstanding)
	}
}

func TestRandomRingGarbage(t *testing.T) {
	rng := rand.New(rand.NewSource(2))
	for iter := 0; iter < 50; iter++ {
		_, b, _, r, _ := corruptSetup(t)
		buf := unsafe.Slice((*byte)(r.ring), r.size)
		rng.Read(buf)
		// Make the head look valid sometimes so the parser goes deeper.
		for k := 0; k < 20; k++ {
			if iter%2 == 0 {
				binary.LittleEndian.PutUint64(buf[r.head&r.mask:], stampOf(r.head, r.salt))
			}
			b.Poll(func(ar *Arrival) bool {
				for _, c := range ar.Eager {
					_ = c
				}
				if ar.Rndv != nil {
					b.Discard(ar.Rndv)
				}
				return true
			}, nil)
			if len(b.active) == 0 {
				break
			}
		}
	}
}

// fuzzEndpoint builds an endpoint over plain memory with ring 0 claimed by
// a fake sender (this process, so that CMA reads are harmless).
func fuzzEndpoint(tb testing.TB) (*Endpoint, *inRing) {
	cfg, geo, err := Config{Rings: 1, RingBytes: 4096, BulkBytes: 8192, StallTimeout: time.Millisecond}.normalize()
	if err != nil {
		tb.Fatal(err)
	}
	mem := make([]byte, geo.total)
	e := newEndpoint(cfg, geo, mem, 1, os.Getpid(), "lnx-1-0000000000000000")
	ctl := geo.ctl(e.base, 0)
	ctl.owner = 2
	ctl.state = stateWord(os.Getpid(), stActive)
	e.refreshClaims()
	tb.Cleanup(func() { e.Close() }) // closes the pidfd opened by discover
	if len(e.active) != 1 {
		tb.Fatal("fuzz ring not active")
	}
	return e, e.active[0]
}

// FuzzRecord feeds arbitrary bytes as a ring's contents to the parser.
// With fix set, the stamp at the current head is made valid before every
// step so that the parser gets past the stamp check.
func FuzzRecord(f *testing.F) {
	le := func(ws ...uint64) []byte {
		b := make([]byte, 8*len(ws))
		for i, w := range ws {
			binary.LittleEndian.PutUint64(b[8*i:], w)
		}
		return b
	}
	f.Add(le(1, recEager, 1, 2, 5, 0, 0x1122334455), true)
	f.Add(le(1, recRndv|1<<8, 1, 2, 64, 7, 0x1000, 64), true)
	f.Add(le(1, recRndv|2<<8|rfNoCMA, 1, 2, 64, 7, 0x1000, 32, 0x2000, 32), true)
	f.Add(le(1, recPad), true)
	f.Add(le(1, recEager, 0, 0, 4000), false)
	f.Add(make([]byte, 4096), false)
	f.Fuzz(func(t *testing.T, data []byte, fix bool) {
		e, r := fuzzEndpoint(t)
		ring := unsafe.Slice((*byte)(r.ring), r.size)
		copy(ring, data)
		dst := make([]byte, 256)
		sum := 0
		for step := 0; step < 80 && len(e.active) == 1; step++ {
			if fix {
				binary.LittleEndian.PutUint64(ring[r.head&r.mask:], stampOf(r.head, r.salt))
			}
			e.Poll(func(a *Arrival) bool {
				if a.Eager != nil && uint64(len(a.Eager)) != a.Size {
					t.Fatalf("eager len %d size %d", len(a.Eager), a.Size)
				}
				for _, c := range a.Eager {
					sum += int(c)
				}
				if a.Rndv != nil {
					if a.Rndv.noCMA || step%2 == 0 {
						e.Discard(a.Rndv)
					} else {
						e.Pull(a.Rndv, [][]byte{dst})
					}
				}
				return true
			}, func(uint64, error) {})
		}
		if r.head&(lineBytes-1) != 0 {
			t.Fatalf("head %d misaligned", r.head)
		}
	})
}
