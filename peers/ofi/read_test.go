// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only

package ofi

import (
	"bytes"
	"errors"
	"fmt"
	"testing"
)

// TestReadRendezvous: on tcp;ofi_rxm a one-piece rendezvous send goes as
// an RTS-read and the receiver reads the data; sizes around the eager
// limit, truncation into a smaller buffer, a buffer in pieces, a
// zero-room pull and a discard all complete both sides correctly.
func TestReadRendezvous(t *testing.T) {
	a, b, ab, _ := pair(t, testCfg)
	if !a.t.rma {
		t.Skip("the core cannot read remote memory")
	}
	src := mmapBuf(t, 4<<20)
	fill(src, 21)
	type tc struct {
		size  int
		dst   []int // piece sizes of the receive buffer; nil: discard
		trunc bool
	}
	cases := []tc{
		{DefaultSplitMax + 1, []int{DefaultSplitMax + 1}, false},
		{1 << 20, []int{1 << 20}, false},
		{4 << 20, []int{1 << 20, 3 << 20}, false},
		{1 << 20, []int{1000}, true},
		{70000, []int{0}, true},
		{70000, nil, false},
	}
	for i, c := range cases {
		send(t, a, ab, Hdr{Tag: uint64(i)}, [][]byte{src[:c.size]}, uint64(i), b)
		pump(t, "RTS", func() bool { return len(b.arr) == i+1 }, a, b)
		rv := b.arr[i].rv
		if rv == nil || !rv.read {
			t.Fatalf("case %d: not an RTS-read (%+v)", i, b.arr[i])
		}
		if c.dst == nil {
			if err := b.t.Discard(rv); err != nil {
				t.Fatal(err)
			}
			pump(t, "discarded send", func() bool { _, ok := a.done[uint64(i)]; return ok }, a, b)
			if err := a.done[uint64(i)]; err != nil {
				t.Fatalf("case %d: discarded send: %v", i, err)
			}
			continue
		}
		var dst [][]byte
		for _, n := range c.dst {
			dst = append(dst, mmapBuf(t, max(n, 1))[:n])
		}
		rv.SetContext(i)
		if err := b.t.Pull(rv, dst); err != nil {
			t.Fatal(err)
		}
		pump(t, "read and send", func() bool {
			_, pulled := b.pulls[i]
			_, sent := a.done[uint64(i)]
			return pulled && sent
		}, a, b)
		res := b.pulls[i]
		want := min(c.size, sumLens(c.dst))
		if res.err != nil || res.n != uint64(want) || a.done[uint64(i)] != nil {
			t.Fatalf("case %d: pull %+v (want %d bytes), send %v", i, res, want, a.done[uint64(i)])
		}
		got := bytes.Join(dst, nil)
		if !bytes.Equal(got[:want], src[:want]) {
			t.Fatalf("case %d: data differs", i)
		}
	}
	if s := a.t.Stats(); s.ReadSends != uint64(len(cases)) {
		t.Fatalf("%d RTS-reads of %d rendezvous sends: %+v", s.ReadSends, len(cases), s)
	}
	if s := b.t.Stats(); s.Reads != uint64(len(cases)-2) {
		t.Fatalf("%d reads, want %d: %+v", s.Reads, len(cases)-2, s)
	}
}

func sumLens(ns []int) int {
	s := 0
	for _, n := range ns {
		s += n
	}
	return s
}

// TestCloseMidRead closes one side while 16 MiB reads are in flight, in
// both roles. Every operation of the survivor ends, with the full data
// or an error; nothing hangs or crashes. (rxm 1.17 crashes in fi_close
// under an RMA read in flight, so a receiver whose sender does not serve
// its reads within CloseTimeout leaves its core endpoint open.)
func TestCloseMidRead(t *testing.T) {
	for _, closeSender := range []bool{true, false} {
		t.Run(fmt.Sprintf("closeSender=%v", closeSender), func(t *testing.T) {
			a, b, ab, _ := pair(t, testCfg)
			if !a.t.rma {
				t.Skip("the core cannot read remote memory")
			}
			const k, size = 4, 16 << 20
			src := mmapBuf(t, size)
			fill(src, 3)
			for i := 0; i < k; i++ {
				send(t, a, ab, Hdr{Tag: uint64(i)}, [][]byte{src}, uint64(i), b)
			}
			pump(t, "RTS", func() bool { return len(b.arr) == k }, a, b)
			dst := make([][]byte, k)
			for i := 0; i < k; i++ {
				dst[i] = mmapBuf(t, size)
				b.arr[i].rv.SetContext(i)
				if err := b.t.Pull(b.arr[i].rv, [][]byte{dst[i]}); err != nil {
					t.Fatal(err)
				}
			}
			for i := 0; i < 20; i++ {
				a.poll()
				b.poll()
			}
			if closeSender {
				a.t.Close()
				pump(t, "pulls finished", func() bool { return len(b.pulls) == k }, b)
				ok := 0
				for i, res := range b.pulls {
					switch {
					case res.err == nil && res.n == size && bytes.Equal(dst[i.(int)], src):
						ok++
					case res.err == nil:
						t.Fatalf("pull %v: %d bytes and no error, or wrong data", i, res.n)
					case !errors.Is(res.err, ErrPeerGone):
						t.Logf("pull %v: %v", i, res.err)
					}
				}
				t.Logf("%d of %d pulls completed before the sender closed; receiver %+v", ok, k, b.t.Stats())
			} else {
				err := b.t.Close()
				t.Logf("receiver close: %v", err)
				pump(t, "sends finished", func() bool { return len(a.done) == k }, a)
				ok := 0
				for _, err := range a.done {
					if err == nil {
						ok++
					} else if !errors.Is(err, ErrPeerGone) {
						t.Errorf("send: %v", err)
					}
				}
				t.Logf("%d of %d sends completed before the receiver closed; sender %+v", ok, k, a.t.Stats())
			}
		})
	}
}
