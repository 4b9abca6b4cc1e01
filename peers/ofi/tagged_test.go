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
		if !send(t, a, ab, c.h, [][]byte{src[i : i+c.size]}, uint64(10+i), b) {
			completions++
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
