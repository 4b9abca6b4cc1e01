// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only

package ofi

import (
	"errors"
	"testing"

	"github.com/lnx-go/lnx-go/internal/fi"
)

func benchPair(b *testing.B) (*Transport, *Transport, *Peer, *Peer) {
	ta, err := Open(RuntimeVersion(), testCfg)
	if err != nil {
		b.Skipf("tcp;ofi_rxm on lo unavailable: %v", err)
	}
	b.Cleanup(func() { ta.Close() })
	tb, err := Open(RuntimeVersion(), testCfg)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { tb.Close() })
	ab, err := ta.Connect(tb.Addr())
	if err != nil {
		b.Fatal(err)
	}
	ba, err := tb.Connect(ta.Addr())
	if err != nil {
		b.Fatal(err)
	}
	return ta, tb, ab, ba
}

// BenchmarkPingPong measures a 1-byte round trip between two transports
// driven by one goroutine (the reported time is one round trip).
func BenchmarkPingPong(b *testing.B) {
	b.Run("transport", func(b *testing.B) {
		ta, tb, ab, ba := benchPair(b)
		buf := [][]byte{make([]byte, 1)}
		var gotA, gotB bool
		onA := func(*Arrival) bool { gotA = true; return true }
		onB := func(*Arrival) bool { gotB = true; return true }
		sendDone := func(uint64, error) {}
		xmit := func(t, other *Transport, p *Peer, id uint64) {
			for {
				_, err := t.Send(p, Hdr{Tag: 1}, buf, id)
				if err == nil {
					return
				}
				if !errors.Is(err, ErrAgain) {
					b.Fatal(err)
				}
				t.Poll(nil, sendDone, nil)
				other.Poll(nil, nil, nil)
			}
		}
		round := func(i int) {
			xmit(ta, tb, ab, uint64(i))
			for !gotB {
				tb.Poll(onB, sendDone, nil)
			}
			gotB = false
			xmit(tb, ta, ba, uint64(i))
			for !gotA {
				ta.Poll(onA, sendDone, nil)
			}
			gotA = false
		}
		for i := 0; i < 100; i++ {
			round(i) // connect and warm up
		}
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			round(i)
		}
	})
	for _, inject := range []bool{false, true} {
		name := "raw-tsend"
		if inject {
			name = "raw-tinject"
		}
		b.Run(name, func(b *testing.B) {
			ta, tb, ab, ba := benchPair(b)
			a, rb := newRawSide(b, ta, 1, 1), newRawSide(b, tb, 1, 1)
			a.postRecv(0)
			rb.postRecv(0)
			xmit := func(from, to *rawSide, dest uint64) {
				for !from.trySend(0, dest, inject) {
					from.drain()
					to.drain()
				}
				for {
					from.drain()
					if _, recvs := to.drain(); len(recvs) != 0 {
						to.postRecv(0)
						return
					}
				}
			}
			round := func() {
				xmit(a, rb, ab.fiAddr)
				xmit(rb, a, ba.fiAddr)
			}
			for i := 0; i < 100; i++ {
				round()
			}
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				round()
			}
		})
	}
}

// BenchmarkBandwidth streams 1 MiB messages from one transport to the
// other with 8 in flight.
func BenchmarkBandwidth(b *testing.B) {
	const size, window = 1 << 20, 8
	b.Run("transport", func(b *testing.B) {
		ta, tb, ab, _ := benchPair(b)
		src := mmapBuf(b, size)
		dsts := make([][][]byte, window)
		for i := range dsts {
			dsts[i] = [][]byte{mmapBuf(b, size)}
		}
		inflight, sent, recvd, next := 0, 0, 0, 0
		onSend := func(_ uint64, err error) {
			if err != nil {
				b.Fatal(err)
			}
			inflight--
		}
		onArr := func(a *Arrival) bool {
			if err := tb.Pull(a.Rndv, dsts[next%window]); err != nil {
				b.Fatal(err)
			}
			next++
			return true
		}
		onPull := func(_ *Rendezvous, n uint64, err error) {
			if err != nil || n != size {
				b.Fatal(n, err)
			}
			recvd++
		}
		run := func(n int) {
			sent, recvd = 0, 0
			for recvd < n {
				for inflight < window && sent < n {
					if _, err := ta.Send(ab, Hdr{}, [][]byte{src}, uint64(sent)); err != nil {
						if errors.Is(err, ErrAgain) {
							break
						}
						b.Fatal(err)
					}
					inflight++
					sent++
				}
				ta.Poll(nil, onSend, nil)
				tb.Poll(onArr, nil, onPull)
			}
			for inflight > 0 {
				ta.Poll(nil, onSend, nil)
				tb.Poll(onArr, nil, onPull)
			}
		}
		run(16)
		b.SetBytes(size)
		b.ResetTimer()
		run(b.N)
	})
	b.Run("raw", func(b *testing.B) {
		ta, tb, ab, _ := benchPair(b)
		a, rb := newRawSide(b, ta, size, window), newRawSide(b, tb, size, window)
		for i := 0; i < window; i++ {
			rb.postRecv(i)
		}
		free := make([]int, 0, window)
		for i := 0; i < window; i++ {
			free = append(free, i)
		}
		run := func(n int) {
			sent, recvd := 0, 0
			for recvd < n {
				for len(free) > 0 && sent < n {
					if !a.trySend(free[len(free)-1], ab.fiAddr, false) {
						break
					}
					free = free[:len(free)-1]
					sent++
				}
				sends, _ := a.drain()
				free = append(free, sends...)
				_, recvs := rb.drain()
				for _, k := range recvs {
					recvd++
					rb.postRecv(k)
				}
			}
			for len(free) < window {
				sends, _ := a.drain()
				free = append(free, sends...)
			}
		}
		run(16)
		b.SetBytes(size)
		b.ResetTimer()
		run(b.N)
	})
}

// rawSide drives a transport's core endpoint directly with tagged sends and
// receives (fi_tsendv/fi_trecvv into C buffers), for comparison with the
// transport on the same core. Poll must not be called meanwhile.
type rawSide struct {
	b     *testing.B
	t     *Transport
	send  []uint32 // op slots
	recv  []uint32
	which map[uint32]int // slot -> buffer number, negative for sends (-1-k)
	s, r  []int
}

const rawTag = 0x55

func newRawSide(b *testing.B, t *Transport, size, n int) *rawSide {
	r := &rawSide{b: b, t: t, which: map[uint32]int{}}
	for i := 0; i < n; i++ {
		for _, list := range []*[]uint32{&r.send, &r.recv} {
			idx := uint32(t.alloc(kCtl, false))
			t.k.setIOV(idx, 1, cmalloc(size), size) // never freed: the core may hold it
			*list = append(*list, idx)
		}
		r.which[r.send[i]] = -1 - i
		r.which[r.recv[i]] = i
	}
	return r
}

func (r *rawSide) trySend(k int, dest uint64, inject bool) bool {
	var ret int
	if inject {
		ret = r.t.k.tinject(r.t.k.iovBase(r.send[k], 1), r.t.k.iovLen(r.send[k], 1), dest, rawTag)
	} else {
		ret = r.t.k.tsendv(r.send[k], 0, 1, 1, dest, rawTag)
	}
	if ret == cEAGAIN {
		return false
	}
	if ret != 0 {
		r.b.Fatal(coreErr("tsendv", ret, 0))
	}
	return true
}

func (r *rawSide) postRecv(k int) {
	for {
		ret := r.t.k.trecvv(r.recv[k], 0, 1, 1, fi.ADDR_UNSPEC, rawTag)
		if ret == 0 {
			return
		}
		if ret != cEAGAIN {
			r.b.Fatal(coreErr("trecvv", ret, 0))
		}
		r.drain()
	}
}

// drain returns the buffer numbers of completed sends and receives.
func (r *rawSide) drain() (sends, recvs []int) {
	r.s, r.r = r.s[:0], r.r[:0]
	n := r.t.k.drain(evMax)
	for i := 0; i < n; i++ {
		idx, _, errno, prov, _, _ := r.t.k.ev(i)
		if errno != 0 {
			r.b.Fatal(coreErr("raw completion", errno, prov))
		}
		k, ok := r.which[idx]
		switch {
		case !ok: // a control receive of the transport
		case k < 0:
			r.s = append(r.s, -1-k)
		default:
			r.r = append(r.r, k)
		}
	}
	return r.s, r.r
}
