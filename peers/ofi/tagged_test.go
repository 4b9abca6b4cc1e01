// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only

package ofi

import (
	"bytes"
	"testing"
)

// TestTaggedEager: a payload above EagerMax up to the core's eager limit
// (SplitMax, rxm's 16 KiB) goes as one tagged core message once the sender
// has heard from the receiver, arrives in order with the other messages
// as an eager payload, with its tag, flags and CQ data; one whose header
// does not fit the tag, or to a peer not heard from, goes split; one byte
// more goes by rendezvous.
func TestTaggedEager(t *testing.T) {
	a, b, ab, ba := pair(t, testCfg)
	src := mmapBuf(t, DefaultSplitMax+16)
	fill(src, 11)
	// Not heard from b yet: split.
	send(t, a, ab, Hdr{Tag: 100}, [][]byte{src[:DefaultSplitMax]}, 100, b)
	pump(t, "first message", func() bool { return len(b.arr) == 1 && len(a.done) == 1 }, a, b)
	if s := a.t.Stats(); s.SplitSends != 1 || s.TaggedEager != 0 {
		t.Fatalf("before hearing from b: %+v", s)
	}
	if rv := b.arr[0].rv; rv == nil || !rv.split {
		t.Fatalf("first message: %+v", b.arr[0])
	}
	if err := b.t.Discard(b.arr[0].rv); err != nil {
		t.Fatal(err)
	}
	b.arr = nil
	// b answers: a has heard from it.
	send(t, b, ba, Hdr{Tag: 1}, [][]byte{[]byte("hi")}, 1, a)
	pump(t, "reply", func() bool { return len(a.arr) == 1 }, a, b)
	type tc struct {
		size int
		h    Hdr
		te   bool // one tagged core message
	}
	cases := []tc{
		{DefaultEagerMax, Hdr{Tag: 1, Flags: 3, Data: 7}, false}, // eager
		{DefaultEagerMax + 1, Hdr{Tag: 1 << 63, Flags: 1}, true},
		{DefaultSplitMax - 1, Hdr{Tag: 0xfeedface, Flags: 255, Data: 1<<22 - 1}, true},
		{DefaultSplitMax, Hdr{Tag: 42, Flags: 2, Data: 12345}, true},
		{DefaultSplitMax, Hdr{Tag: 43, Flags: 2, Data: 1 << 22}, false}, // data too wide: split
		{DefaultSplitMax, Hdr{Tag: 44, Flags: 1 << 8}, false},           // flags too wide: split
		{DefaultSplitMax + 1, Hdr{Tag: 45}, false},                      // rendezvous
		{DefaultSplitMax, Hdr{Tag: ^uint64(0), Flags: 0, Data: 0}, true},
		{100, Hdr{Tag: 46, Flags: 1, Data: 9}, false}, // eager, after a tagged one
	}
	before := a.t.Stats()
	completions := 1 // the first message's; injected sends have none
	for i, c := range cases {
		done := send(t, a, ab, c.h, [][]byte{src[i : i+c.size]}, uint64(10+i), b)
		if !done {
			completions++
		}
		// rxm grants an inject size of its whole eager limit: a tagged
		// eager message is one fi_tinjectdata, done at once.
		if c.te && !done {
			t.Fatalf("case %d (%d bytes): tagged eager send not done at once (core inject size %d)", i, c.size, a.t.inject)
		}
	}
	pump(t, "messages", func() bool { return len(b.arr) == len(cases) }, a, b)
	te := 0
	for i, c := range cases {
		g := b.arr[i]
		if g.hdr != c.h || g.size != uint64(c.size) || g.src != a.t.ID() {
			t.Fatalf("case %d: hdr %+v size %d src %x, want %+v %d %x", i, g.hdr, g.size, g.src, c.h, c.size, a.t.ID())
		}
		want := src[i : i+c.size]
		if g.rv == nil {
			if c.size > DefaultEagerMax && !c.te {
				t.Fatalf("case %d: eager, want split or rendezvous", i)
			}
			if !bytes.Equal(g.data, want) {
				t.Fatalf("case %d: data differs", i)
			}
			if c.te {
				te++
			}
			continue
		}
		if c.te {
			t.Fatalf("case %d: rendezvous (split %v), want one tagged message", i, g.rv.split)
		}
		dst := mmapBuf(t, c.size)
		g.rv.SetContext(i)
		if err := b.t.Pull(g.rv, [][]byte{dst}); err != nil {
			t.Fatal(err)
		}
		pump(t, "pull", func() bool { _, ok := b.pulls[i]; return ok }, a, b)
		if r := b.pulls[i]; r.err != nil || r.n != uint64(c.size) || !bytes.Equal(dst, want) {
			t.Fatalf("case %d: pull %+v", i, r)
		}
	}
	pump(t, "send completions", func() bool { return len(a.done) == completions }, a, b)
	for id, err := range a.done {
		if err != nil {
			t.Fatalf("send %d: %v", id, err)
		}
	}
	s := a.t.Stats()
	if got := s.TaggedEager - before.TaggedEager; got != uint64(te) || te != 4 {
		t.Fatalf("%d tagged eager sends (%d arrived as such), want 4: %+v", got, te, s)
	}
	if got := s.TaggedInjected - before.TaggedInjected; got != 4 {
		t.Fatalf("%d tagged eager sends injected, want 4: %+v", got, s)
	}
	if got := s.SplitSends - before.SplitSends; got != 2 {
		t.Fatalf("%d split sends, want 2: %+v", got, s)
	}
	if rs := b.t.Stats(); rs.Outstanding != b.t.cfg.RecvPool || rs.TaggedRecvs != teBufs {
		t.Fatalf("receiver: %d slots in use, %d tagged receives: %+v", rs.Outstanding, rs.TaggedRecvs, rs)
	}
}

// TestTaggedEagerOff: with Config.NoTaggedEager such payloads go split.
func TestTaggedEagerOff(t *testing.T) {
	cfg := testCfg
	cfg.NoTaggedEager = true
	a, b, ab, ba := pair(t, cfg)
	send(t, b, ba, Hdr{Tag: 1}, [][]byte{[]byte("hi")}, 1, a)
	pump(t, "reply", func() bool { return len(a.arr) == 1 }, a, b)
	src := mmapBuf(t, DefaultSplitMax)
	send(t, a, ab, Hdr{Tag: 2}, [][]byte{src}, 2, b)
	pump(t, "message", func() bool { return len(b.arr) == 1 }, a, b)
	if s := a.t.Stats(); s.TaggedEager != 0 || s.SplitSends != 1 {
		t.Fatalf("%+v", s)
	}
	if b.arr[0].rv == nil || !b.arr[0].rv.split {
		t.Fatalf("%+v", b.arr[0])
	}
	if s := b.t.Stats(); s.TaggedRecvs != 0 {
		t.Fatalf("receiver posted %d tagged receives", s.TaggedRecvs)
	}
}

// TestLendTaggedEager: C, lent the transport, sends what Go's Send would
// send as a tagged eager message (above the peer's eager limit, within
// the core's inject size, header fitting the tag) with fi_tinjectdata, and
// leaves the rest to Go (CQ data too wide for the tag, a rendezvous size).
// Eager, tagged eager, split and rendezvous messages from C and Go, over
// two lendings, must arrive in send order with their data, size, tag,
// flags, CQ data and source.
func TestLendTaggedEager(t *testing.T) {
	a, b, ab, ba := pair(t, testCfg)
	// b hears from a (a has posted its tagged eager receives for b).
	send(t, a, ab, Hdr{Tag: 1}, [][]byte{[]byte("hi")}, 1, b)
	pump(t, "hello", func() bool { return len(b.arr) == 1 }, a, b)
	b.arr = nil
	src := mmapBuf(t, 8*DefaultSplitMax)
	fill(src, 21)
	type msg struct {
		size int
		h    Hdr
		byC  bool // C sends it (else C declines and Go does)
	}
	lend1 := []msg{
		{100, Hdr{Tag: 10, Flags: 1, Data: 5}, true},
		{DefaultEagerMax, Hdr{Tag: 11, Flags: 3, Data: 6}, true},         // eager, staged
		{DefaultEagerMax + 1, Hdr{Tag: 12, Flags: 1}, true},              // tagged eager
		{DefaultSplitMax, Hdr{Tag: 13, Flags: 3, Data: 1<<22 - 1}, true}, // tagged eager
		{DefaultSplitMax, Hdr{Tag: 14, Flags: 3, Data: 1 << 22}, false},  // split (data too wide)
		{DefaultSplitMax + 1, Hdr{Tag: 15, Flags: 1, Data: 8}, false},    // rendezvous
		{50, Hdr{Tag: 16}, false},                                        // after Go's, by Go
	}
	lend2 := []msg{
		{DefaultSplitMax - 1, Hdr{Tag: 17, Flags: 1, Data: 9}, true}, // tagged eager
		{7, Hdr{Tag: 18, Flags: 1, Data: 10}, true},
	}
	var all []msg
	off := 0
	var offs []int
	run := func(ms []msg) {
		if _, ok := b.t.Lend(ba); !ok {
			t.Fatal("Lend refused")
		}
		var later []msg
		for _, m := range ms {
			if !m.byC {
				later = append(later, m)
				continue
			}
			if len(later) != 0 {
				t.Fatal("test bug: a C send after one left to Go")
			}
			if ret := b.t.k.cSendEager(m.h.Flags, m.h.Tag, m.h.Data, src[off:off+m.size]); ret != 0 {
				t.Fatalf("C declined %d bytes (tag %d): core inject size %d", m.size, m.h.Tag, b.t.inject)
			}
			all, offs = append(all, m), append(offs, off)
			off += m.size
		}
		// What C must decline.
		for _, m := range later {
			if m.size > DefaultEagerMax {
				if ret := b.t.k.cSendEager(m.h.Flags, m.h.Tag, m.h.Data, src[off:off+m.size]); ret == 0 {
					t.Fatalf("C sent %d bytes (tag %d), which Go must send", m.size, m.h.Tag)
				}
			}
		}
		if active, _ := b.t.Reclaim(); !active && len(later) < len(ms) {
			t.Fatal("Reclaim reports nothing sent")
		}
		for _, m := range later {
			send(t, b, ba, m.h, [][]byte{src[off : off+m.size]}, m.h.Tag, a)
			all, offs = append(all, m), append(offs, off)
			off += m.size
		}
	}
	run(lend1)
	run(lend2)
	pump(t, "the messages", func() bool { return len(b.arr) == 0 && len(a.arr) == len(all) }, a, b)
	for i, m := range all {
		g := a.arr[i]
		if g.hdr != m.h || g.size != uint64(m.size) || g.src != b.t.ID() {
			t.Fatalf("message %d: hdr %+v size %d src %x, want %+v %d %x", i, g.hdr, g.size, g.src, m.h, m.size, b.t.ID())
		}
		want := src[offs[i] : offs[i]+m.size]
		if g.rv == nil {
			if !bytes.Equal(g.data, want) {
				t.Fatalf("message %d (%d bytes): data differs", i, m.size)
			}
			continue
		}
		dst := mmapBuf(t, m.size)
		g.rv.SetContext(i)
		if err := a.t.Pull(g.rv, [][]byte{dst}); err != nil {
			t.Fatal(err)
		}
		pump(t, "pull", func() bool { _, ok := a.pulls[i]; return ok }, a, b)
		if r := a.pulls[i]; r.err != nil || r.n != uint64(m.size) || !bytes.Equal(dst, want) {
			t.Fatalf("message %d: pull %+v", i, r)
		}
	}
	s := b.t.Stats()
	if s.SentByC != 6 || s.TaggedInjected != 3 || s.TaggedEager != 3 || s.SplitSends != 1 {
		t.Fatalf("sender stats %+v: want 6 sent by C, 3 of them tagged eager injects, 1 split", s)
	}
	if r := a.t.Stats(); r.Malformed != 0 || r.Reordered != 0 {
		t.Fatalf("receiver stats %+v", r)
	}
}

// TestLendTakesTaggedEager: C, lent the transport, takes the lent peer's
// tagged eager messages (16321-16384 bytes) as it takes eager ones, each
// the next in the peer's order, with the header from the core's tag and
// CQ data, and reposts their receives itself; Go carries on from C's
// sequence numbers afterwards. The messages outnumber the peer's tagged
// eager receives several times over.
func TestLendTakesTaggedEager(t *testing.T) {
	cfg := testCfg
	cfg.Credits = -1 // C takes no message that would make Go owe a credit message
	a, b, ab, ba := pair(t, cfg)
	// a hears from b, and b has posted its tagged eager receives for a.
	send(t, b, ba, Hdr{Tag: 1}, [][]byte{[]byte("hi")}, 1, a)
	pump(t, "hello", func() bool { return len(a.arr) == 1 }, a, b)
	sizes := []int{100, DefaultEagerMax, DefaultEagerMax + 1, DefaultSplitMax - 1, DefaultSplitMax, 7,
		DefaultSplitMax, DefaultEagerMax + 1, 50, DefaultSplitMax, DefaultSplitMax - 1, DefaultEagerMax}
	src := mmapBuf(t, len(sizes)*DefaultSplitMax)
	fill(src, 31)
	before := b.t.Stats()
	if _, ok := b.t.Lend(ba); !ok {
		t.Fatal("Lend refused")
	}
	off := 0
	for i, n := range sizes {
		h := Hdr{Tag: uint64(0x900 + i), Flags: uint32(1 + i%2), Data: uint64(i) << 16}
		p := src[off : off+n]
		off += n
		if _, err := a.t.Send(ab, h, [][]byte{p}, uint64(i)); err != nil {
			t.Fatalf("send %d: %v", i, err)
		}
		awaitLent(t, a, b, i)
		ok, flags, tag, data, got := b.t.k.lentMsg()
		if !ok || flags != h.Flags || tag != h.Tag || data != h.Data || !bytes.Equal(got, p) {
			t.Fatalf("message %d (%d bytes): C may take %v: flags %d tag %#x data %#x, %d bytes, payload intact %v",
				i, n, ok, flags, tag, data, len(got), bytes.Equal(got, p))
		}
		b.t.k.cConsume()
	}
	if active, _ := b.t.Reclaim(); !active {
		t.Fatal("Reclaim reports nothing taken")
	}
	if s := b.t.Stats(); s.Arrivals-before.Arrivals != uint64(len(sizes)) || s.TaggedRecvs != teBufs {
		t.Fatalf("after C took %d: arrivals %d -> %d, %d tagged eager receives posted", len(sizes),
			before.Arrivals, s.Arrivals, s.TaggedRecvs)
	}
	// Go carries on from C's sequence numbers, in both forms.
	send(t, a, ab, Hdr{Tag: 0x1000, Data: 3}, [][]byte{src[:DefaultSplitMax]}, 100, b)
	send(t, a, ab, Hdr{Tag: 0x1001}, [][]byte{src[:9]}, 101, b)
	pump(t, "messages after the lending", func() bool { return len(b.arr) == 2 }, a, b)
	if g := b.arr[0]; g.hdr.Tag != 0x1000 || g.hdr.Data != 3 || !bytes.Equal(g.data, src[:DefaultSplitMax]) {
		t.Fatalf("after the lending: %+v", g.hdr)
	}
	if g := b.arr[1]; g.hdr.Tag != 0x1001 || !bytes.Equal(g.data, src[:9]) {
		t.Fatalf("after the lending: %+v", g.hdr)
	}
	if s := b.t.Stats(); s.Malformed != 0 || s.Reordered != 0 {
		t.Fatalf("receiver stats %+v", s)
	}
}

// heardPair opens a pair whose core was asked for an inject size of
// inject bytes (skipping where it grants another), and lets a hear from b
// (b has posted its tagged eager receives for a).
func heardPair(t *testing.T, inject int) (a, b *rec, ab *Peer) {
	t.Helper()
	saved := WantInject
	WantInject = [len(WantInject)]int{inject, inject, inject}
	t.Cleanup(func() { WantInject = saved })
	a, b, ab, ba := pair(t, testCfg)
	if a.t.inject != inject {
		t.Skipf("core inject size %d, not the %d asked", a.t.inject, inject)
	}
	send(t, b, ba, Hdr{Tag: 1}, [][]byte{[]byte("hi")}, 1, a)
	pump(t, "hello", func() bool { return len(a.arr) == 1 }, a, b)
	a.arr = nil
	return a, b, ab
}

// TestTaggedEagerFitsAlone: over a core whose inject size holds a payload
// but not lnx's header with it (libfabric shm: 4096 bytes), such a payload
// goes as one injected tagged eager message, from Go's Send and from C
// over the lent transport alike, instead of an eager message the core
// sends by its protocol for larger ones; one that fits with the header
// stays eager, one larger than the inject size too. All arrive in order
// with their data, size, tag, flags, CQ data and source.
func TestTaggedEagerFitsAlone(t *testing.T) {
	const inject = 4096
	a, b, ab := heardPair(t, inject)
	src := mmapBuf(t, 8*inject)
	fill(src, 31)
	type msg struct {
		size int
		h    Hdr
		te   bool // one injected tagged eager message
	}
	msgs := []msg{
		{inject - hdrEager, Hdr{Tag: 20, Flags: 1, Data: 3}, false}, // eager, injected whole
		{inject - hdrEager + 1, Hdr{Tag: 21, Flags: 3, Data: 4}, true},
		{inject, Hdr{Tag: 22, Flags: 1, Data: 5}, true},
		{inject + 1, Hdr{Tag: 23, Flags: 1, Data: 6}, false},   // eager, by the core's larger protocol
		{inject, Hdr{Tag: 24, Flags: 1, Data: 1 << 22}, false}, // CQ data too wide for the tag
	}
	var offs []int
	off := 0
	before := a.t.Stats()
	// By Go.
	for _, m := range msgs {
		done := send(t, a, ab, m.h, [][]byte{src[off : off+m.size]}, m.h.Tag, b)
		if m.te && !done {
			t.Fatalf("%d bytes: not injected", m.size)
		}
		offs = append(offs, off)
		off += m.size
	}
	s := a.t.Stats()
	if got := s.TaggedInjected - before.TaggedInjected; got != 2 {
		t.Fatalf("Go: %d tagged eager injects, want 2: %+v", got, s)
	}
	// By C, lent: the two that fit alone.
	if _, ok := a.t.Lend(ab); !ok {
		t.Fatal("Lend refused")
	}
	all := append([]msg(nil), msgs...)
	for _, m := range msgs {
		if !m.te {
			continue
		}
		m.h.Tag += 100
		if ret := a.t.k.cSendEager(m.h.Flags, m.h.Tag, m.h.Data, src[off:off+m.size]); ret != 0 {
			t.Fatalf("C declined %d bytes", m.size)
		}
		all, offs = append(all, m), append(offs, off)
		off += m.size
	}
	a.t.Reclaim()
	pump(t, "the messages", func() bool { return len(b.arr) == len(all) }, a, b)
	for i, m := range all {
		g := b.arr[i]
		if g.hdr != m.h || g.size != uint64(m.size) || g.src != a.t.ID() || g.rv != nil ||
			!bytes.Equal(g.data, src[offs[i]:offs[i]+m.size]) {
			t.Fatalf("message %d: hdr %+v size %d src %x rndv %v, want %+v %d %x eager", i, g.hdr, g.size,
				g.src, g.rv != nil, m.h, m.size, a.t.ID())
		}
	}
	s = a.t.Stats()
	if got := s.TaggedInjected - before.TaggedInjected; got != 4 || s.SentByC-before.SentByC != 2 {
		t.Fatalf("%d tagged eager injects (want 4), %d sent by C (want 2): %+v", got, s.SentByC-before.SentByC, s)
	}
}

// TestTaggedEagerWindow: over a core that injects a payload alone but not
// behind lnx's header (inject size 4096, below the eager limit), the
// receiver posts teBufsMax tagged eager receives for its peer instead of
// teBufs, so that a window of such payloads finds receives posted rather
// than the core's unexpected queue; a window of twice that many, sent
// before the receiver polls, arrives whole and in order.
func TestTaggedEagerWindow(t *testing.T) {
	const inject = 4096
	a, b, ab := heardPair(t, inject)
	if s := b.t.Stats(); s.TaggedRecvs != teBufsMax {
		t.Fatalf("receiver posted %d tagged eager receives for its peer, want %d", s.TaggedRecvs, teBufsMax)
	}
	const n = 2 * teBufsMax
	src := mmapBuf(t, n*inject)
	fill(src, 47)
	before := a.t.Stats()
	for i := 0; i < n; i++ {
		// Only the sender polls (for credits), so the receiver's
		// receives are all the core has for the window.
		send(t, a, ab, Hdr{Tag: uint64(100 + i), Data: uint64(i)}, [][]byte{src[i*inject : (i+1)*inject]}, uint64(100+i))
	}
	if got := a.t.Stats().TaggedInjected - before.TaggedInjected; got != n {
		t.Fatalf("%d tagged eager injects, want %d", got, n)
	}
	pump(t, "the window", func() bool { return len(b.arr) == n }, a, b)
	for i, g := range b.arr {
		if g.hdr != (Hdr{Tag: uint64(100 + i), Data: uint64(i)}) || g.size != inject || g.src != a.t.ID() ||
			!bytes.Equal(g.data, src[i*inject:(i+1)*inject]) {
			t.Fatalf("message %d: hdr %+v size %d src %x", i, g.hdr, g.size, g.src)
		}
	}
	if s := b.t.Stats(); s.TaggedRecvs != teBufsMax {
		t.Fatalf("receiver has %d tagged eager receives after the window, want %d", s.TaggedRecvs, teBufsMax)
	}
}
