// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only

package peers

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
)

// TestConcurrent runs senders, receivers, claimers and observers on one
// Queue. Three traffic classes keep the expected outcome checkable:
//
//   - class A: sender s sends tag tagA; receiver s posts only Src=s receives,
//     alternating exact-tag (bucket) and any-tag (wildcard list). Every one of
//     its receives matches every class-A message from s, so its k-th receive
//     must get s's k-th message.
//   - class B: senders send tag tagB; several receivers post any-source
//     receives (exact tag, or ignore bits that exclude tagA). Per receiver,
//     messages from each sender must come in send order.
//   - class C: senders send tag tagC, taken only through ClaimMatch and
//     TakeClaimed.
//
// Every message must be delivered exactly once.
func TestConcurrent(t *testing.T) {
	const (
		tagA = 1<<40 | 5
		tagB = 7
		tagC = 1<<41 | 9
	)
	nA, nB, nBRecv, nC, per := 4, 4, 3, 2, 2000
	if testing.Short() {
		per = 300
	}
	q := NewQueue(true)

	type mctx struct {
		src uint64
		seq int
	}
	type rctx struct {
		recv, idx int
	}
	srcB := func(i int) uint64 { return uint64(100 + i) }
	srcC := func(i int) uint64 { return uint64(200 + i) }

	// got[recv][idx] is the message matched to that receive. Each slot is
	// written once, by whichever goroutine completed the match.
	nRecv := nA + nBRecv
	got := make([][]*Msg, nRecv)
	for i := 0; i < nA; i++ {
		got[i] = make([]*Msg, per)
	}
	bTotal := nB * per
	for i := nA; i < nRecv; i++ {
		got[i] = make([]*Msg, bTotal) // upper bound; bCount has the real length
	}
	var bCount [8]int // receives posted by each class-B receiver
	var bPosted atomic.Int64

	record := func(r *Recv, m *Msg) {
		c := r.Ctx.(rctx)
		if got[c.recv][c.idx] != nil {
			panic("receive completed twice")
		}
		got[c.recv][c.idx] = m
	}

	var claimed atomic.Int64
	var claimedSeq [8]atomic.Int64 // last seq claimed per class-C sender
	var wg sync.WaitGroup
	stop := make(chan struct{})

	send := func(src, tag uint64) {
		defer wg.Done()
		for i := range per {
			m := &Msg{Src: src, Tag: tag, Size: 8, Ctx: mctx{src, i}}
			if r := q.Arrive(m); r != nil {
				record(r, m)
			}
		}
	}
	for s := range nA {
		wg.Add(1)
		go send(uint64(s), tagA)
	}
	for s := range nB {
		wg.Add(1)
		go send(srcB(s), tagB)
	}
	for s := range nC {
		wg.Add(1)
		go send(srcC(s), tagC)
	}
	for s := range nA {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range per {
				r := &Recv{Src: uint64(s), Tag: tagA, Ctx: rctx{s, i}}
				if i%2 == 1 {
					r.Tag, r.Ignore = 0, ^uint64(0)
				}
				if m := q.Post(r); m != nil {
					record(r, m)
				}
			}
		}()
	}
	for b := range nBRecv {
		wg.Add(1)
		go func() {
			defer wg.Done()
			id := nA + b
			for i := 0; ; i++ {
				// Claim a slot so the total matches the class-B sends.
				if bPosted.Add(1) > int64(bTotal) {
					return
				}
				bCount[b]++
				r := &Recv{Src: AddrUnspec, Tag: tagB, Ctx: rctx{id, i}}
				if i%3 == 1 {
					r.Tag, r.Ignore = 0, 0xff // any tag below 256: excludes tagA and tagC
				}
				if m := q.Post(r); m != nil {
					record(r, m)
				}
			}
		}()
	}
	for c := range nC {
		wg.Add(1)
		go func() {
			defer wg.Done()
			type key struct{ c, i int }
			for i := 0; claimed.Load() < int64(nC*per); i++ {
				src := srcC(c)
				if m := q.ClaimMatch(key{c, i}, src, tagC, 0); m != nil {
					t2 := q.TakeClaimed(key{c, i})
					if t2 != m {
						panic("TakeClaimed returned a different message")
					}
					seq := int64(m.Ctx.(mctx).seq)
					if prev := claimedSeq[c].Swap(seq + 1); prev != seq {
						panic(fmt.Sprintf("claimed seq %d after %d", seq, prev-1))
					}
					claimed.Add(1)
				}
			}
		}()
	}
	// Observers exercise the read paths under -race.
	var obs sync.WaitGroup
	obs.Add(1)
	go func() {
		defer obs.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			q.Stats()
			q.Claimed()
			q.Peek(AddrUnspec, 0, ^uint64(0))
			q.Cancel(func(*Recv) bool { return false })
		}
	}()
	wg.Wait()
	close(stop)
	obs.Wait()

	if p, u, b := q.Stats(); p != 0 || u != 0 || b != 0 {
		t.Fatalf("left over: posted=%d unexpected=%d bytes=%d", p, u, b)
	}
	if n, _ := q.Claimed(); n != 0 {
		t.Fatalf("left over claimed: %d", n)
	}
	if err := q.check(); err != nil {
		t.Fatal(err)
	}

	seen := map[mctx]bool{}
	for s := range nA {
		for i, m := range got[s] {
			if m == nil {
				t.Fatalf("class A receiver %d receive %d unmatched", s, i)
			}
			c := m.Ctx.(mctx)
			if c != (mctx{uint64(s), i}) {
				t.Fatalf("class A receiver %d receive %d got %+v", s, i, c)
			}
			seen[c] = true
		}
	}
	for b := range nBRecv {
		last := map[uint64]int{}
		for i, m := range got[nA+b][:bCount[b]] {
			if m == nil {
				t.Fatalf("class B receiver %d receive %d unmatched", b, i)
			}
			c := m.Ctx.(mctx)
			if c.src < srcB(0) || c.src >= srcB(nB) {
				t.Fatalf("class B receiver got message from %d", c.src)
			}
			if prev, ok := last[c.src]; ok && c.seq <= prev {
				t.Fatalf("class B receiver %d: src %d seq %d after %d", b, c.src, c.seq, prev)
			}
			last[c.src] = c.seq
			if seen[c] {
				t.Fatalf("message %+v delivered twice", c)
			}
			seen[c] = true
		}
	}
	if len(seen) != (nA+nB)*per {
		t.Fatalf("delivered %d of %d messages", len(seen), (nA+nB)*per)
	}
	if claimed.Load() != int64(nC*per) {
		t.Fatalf("claimed %d of %d", claimed.Load(), nC*per)
	}
}
