// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only

package ofi

import (
	"bytes"
	"testing"
	"time"
)

// TestLend runs a ping-pong in which the receiving side is lent to C the
// way lnx's armed receive lends it: C reads the core CQ, takes the
// message of the lent peer and sends the reply, and Reclaim hands the
// books back to Go. Some rounds reply through Go instead, and some send
// two messages at once (C may take the first, from a stash of one or
// two; Poll delivers the rest), so sequence numbers and credits (a window
// of 4, many times over) must carry across C and Go in both directions.
func TestLend(t *testing.T) {
	cfg := testCfg
	cfg.Credits = 4
	a, b, ab, ba := pair(t, cfg)
	const rounds = 60
	payload := func(i, n int) []byte {
		p := make([]byte, n)
		fill(p, int64(i))
		return p
	}
	// The C path takes what fits the core's inject size with the header.
	small := b.t.inject - hdrEager
	if small < 1 {
		t.Skipf("core inject size %d leaves no room for a payload", b.t.inject)
	}
	var cTook, cSent int
	for i := 0; i < rounds; i++ {
		two := i%5 == 4
		n := 1 + i%small
		send(t, a, ab, Hdr{Flags: 1, Tag: uint64(i), Data: uint64(1000 + i)}, [][]byte{payload(i, n)}, uint64(i), b)
		if two {
			send(t, a, ab, Hdr{Tag: uint64(1 << 20)}, [][]byte{payload(-i, n)}, uint64(1<<20+i), b)
		}
		a.poll()

		// b: lent, C waits for the core to report something.
		if _, ok := b.t.Lend(ba); !ok {
			t.Fatalf("round %d: Lend refused", i)
		}
		deadline := time.Now().Add(liveness)
		for b.t.k.cPeek() == 0 {
			if time.Now().After(deadline) {
				t.Fatalf("round %d: nothing arrived", i)
			}
		}
		ok, flags, tag, data, got := b.t.k.lentMsg()
		if ok {
			if flags != 1 || tag != uint64(i) || data != uint64(1000+i) || !bytes.Equal(got, payload(i, n)) {
				t.Fatalf("round %d: C sees flags %d tag %d data %d payload %x", i, flags, tag, data, got)
			}
			b.t.k.cConsume()
			cTook++
		}
		reply := payload(5000+i, n)
		viaC := i%3 != 2
		if viaC {
			if b.t.k.cSendEager(2, uint64(i), 0, reply) == 0 {
				cSent++
			} else {
				viaC = false
			}
		}
		if active, reads := b.t.Reclaim(); !active || reads == 0 {
			t.Fatalf("round %d: Reclaim reports active %v after %d reads", i, active, reads)
		}
		want := 1
		if two {
			want = 2
		}
		if ok {
			want--
		}
		pump(t, "b's arrivals", func() bool { return len(b.arr) >= want }, a, b)
		if len(b.arr) != want {
			t.Fatalf("round %d: Go delivered %d messages, want %d", i, len(b.arr), want)
		}
		for k, g := range b.arr {
			tg := uint64(i)
			if k == 1 || ok {
				tg = 1 << 20
			}
			if g.hdr.Tag != tg || g.src != a.t.id {
				t.Fatalf("round %d: Go delivered tag %d from %x, want tag %d from %x", i, g.hdr.Tag, g.src, tg, a.t.id)
			}
		}
		b.arr = b.arr[:0]
		if !viaC {
			send(t, b, ba, Hdr{Flags: 2, Tag: uint64(i)}, [][]byte{reply}, uint64(i), a)
		}
		pump(t, "the reply", func() bool { return len(a.arr) == 1 }, a, b)
		if g := a.arr[0]; g.hdr.Tag != uint64(i) || g.hdr.Flags != 2 || !bytes.Equal(g.data, reply) {
			t.Fatalf("round %d: reply tag %d flags %d payload %x", i, g.hdr.Tag, g.hdr.Flags, g.data)
		}
		a.arr = a.arr[:0]
	}
	if cTook < rounds/2 || cSent < rounds/2 {
		t.Fatalf("C took %d and sent %d of %d messages: the test did not exercise it", cTook, cSent, rounds)
	}
	for _, r := range []*rec{a, b} {
		if s := r.t.Stats(); s.Malformed != 0 || s.Reordered != 0 {
			t.Fatalf("stats %+v", s)
		}
	}
	if s := b.t.Stats(); s.Arrivals != uint64(rounds+rounds/5) || s.Injected < uint64(cSent) {
		t.Fatalf("b's stats %+v after %d messages in and %d sent by C", s, rounds+rounds/5, cSent)
	}
}

// TestLendTakesMany lets C take a run of messages in one lending, more
// than LNX_LEND_TAKES: C reposts their bounce buffers itself, every
// buffer is posted after Reclaim, and Go's books (arrivals, sequence)
// agree with what C did. (Without flow control: C takes no message that
// would make Go owe the sender a credit message, and here b sends none.)
func TestLendTakesMany(t *testing.T) {
	cfg := testCfg
	cfg.Credits = -1
	a, b, ab, ba := pair(t, cfg)
	n := 3 * lendTakes
	send(t, a, ab, Hdr{Tag: 999}, [][]byte{{1}}, 999, b) // connect
	pump(t, "the first message", func() bool { return len(b.arr) == 1 }, a, b)
	b.arr = b.arr[:0]
	before := b.t.Stats()
	if _, ok := b.t.Lend(ba); !ok {
		t.Fatal("Lend refused")
	}
	for i := 0; i < n; i++ {
		p := []byte{byte(i), byte(i >> 8), 7}
		if _, err := a.t.Send(ab, Hdr{Tag: uint64(i)}, [][]byte{p}, uint64(i)); err != nil {
			t.Fatalf("send %d: %v", i, err)
		}
		awaitLent(t, a, b, i)
		ok, _, tag, _, got := b.t.k.lentMsg()
		if !ok || tag != uint64(i) || !bytes.Equal(got, p) {
			t.Fatalf("message %d: C may take %v, tag %d, payload %x", i, ok, tag, got)
		}
		b.t.k.cConsume()
	}
	if r := b.t.k.c.lend.reposted; r == 0 {
		t.Fatal("C reposted no bounce buffer")
	}
	if active, _ := b.t.Reclaim(); !active {
		t.Fatal("Reclaim reports nothing taken")
	}
	b.poll()
	for i := 0; i < b.t.cfg.RecvPool; i++ {
		if b.t.ops[i].pending&1 == 0 {
			t.Fatalf("bounce buffer %d is not posted after the lending", i)
		}
	}
	if after := b.t.Stats(); after.Arrivals-before.Arrivals != uint64(n) {
		t.Fatalf("arrivals %d -> %d after C took %d", before.Arrivals, after.Arrivals, n)
	}
	// Go carries on from C's sequence numbers.
	send(t, a, ab, Hdr{Tag: 1000}, [][]byte{{9}}, 1000, b)
	pump(t, "a message after the lending", func() bool { return len(b.arr) == 1 }, a, b)
	if g := b.arr[0]; g.hdr.Tag != 1000 || b.t.Stats().Malformed != 0 {
		t.Fatalf("after the lending: tag %d, stats %+v", g.hdr.Tag, b.t.Stats())
	}
}

// awaitLent polls a (the sender) until b's lent transport reports
// message i to C.
func awaitLent(t *testing.T, a, b *rec, i int) {
	t.Helper()
	deadline := time.Now().Add(liveness)
	for b.t.k.cPeek() == 0 {
		a.poll()
		if time.Now().After(deadline) {
			t.Fatalf("message %d did not arrive", i)
		}
	}
}

// TestLendTakesStash: messages of the lent peer that come several to one
// core read (a window) are each taken by C, one by one, from the stash in
// their order, with their data; none is left for Go.
func TestLendTakesStash(t *testing.T) {
	cfg := testCfg
	cfg.Credits = -1
	a, b, ab, ba := pair(t, cfg)
	send(t, a, ab, Hdr{Tag: 999}, [][]byte{{1}}, 999, b) // connect
	pump(t, "the first message", func() bool { return len(b.arr) == 1 }, a, b)
	b.arr = b.arr[:0]
	const window = 8
	multi := 0 // rounds whose messages C found more than one to a read
	for round := 0; round < 10 && multi < 3; round++ {
		for i := 0; i < window; i++ {
			p := []byte{byte(round), byte(i), 7}
			if _, err := a.t.Send(ab, Hdr{Tag: uint64(round*window + i), Data: uint64(i)}, [][]byte{p}, 0); err != nil {
				t.Fatalf("send %d: %v", i, err)
			}
		}
		// Let the window reach b's core before b reads it.
		for k := 0; k < 20; k++ {
			a.poll()
			time.Sleep(time.Millisecond)
		}
		if _, ok := b.t.Lend(ba); !ok {
			t.Fatalf("round %d: Lend refused", round)
		}
		most := 0
		for i := 0; i < window; i++ {
			awaitLent(t, a, b, i)
			most = max(most, int(b.t.k.c.lend.stashed))
			ok, _, tag, data, got := b.t.k.lentMsg()
			if !ok || tag != uint64(round*window+i) || data != uint64(i) || !bytes.Equal(got, []byte{byte(round), byte(i), 7}) {
				t.Fatalf("round %d message %d (stash of %d): C may take %v, tag %d data %d payload %x", round, i,
					b.t.k.c.lend.stashed, ok, tag, data, got)
			}
			b.t.k.cConsume()
		}
		if most > 1 {
			multi++
		}
		b.t.Reclaim()
		b.poll()
		if len(b.arr) != 0 {
			t.Fatalf("round %d: Go delivered %d messages C should have taken", round, len(b.arr))
		}
	}
	if multi == 0 {
		t.Fatal("no window came more than one message to a read: the test did not exercise the stash")
	}
	send(t, a, ab, Hdr{Tag: 1000}, [][]byte{{9}}, 1000, b)
	pump(t, "a message after the lendings", func() bool { return len(b.arr) == 1 }, a, b)
	if g := b.arr[0]; g.hdr.Tag != 1000 || b.t.Stats().Malformed != 0 || b.t.Stats().Reordered != 0 {
		t.Fatalf("after the lendings: tag %d, stats %+v", g.hdr.Tag, b.t.Stats())
	}
}
