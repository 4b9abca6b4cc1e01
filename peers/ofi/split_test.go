// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only

package ofi

import (
	"bytes"
	"testing"
)

// TestSplitMessages: payloads between EagerMax and SplitMax go as a header
// plus a tagged data message: they arrive as rendezvous handles whose Pull
// needs no CTS; truncation, zero room and Discard leave nothing behind in
// the core, and the send completes without the receiver's help.
func TestSplitMessages(t *testing.T) {
	a, b, ab, _ := pair(t, testCfg)
	src := mmapBuf(t, DefaultSplitMax)
	fill(src, 8)
	type tc struct {
		size int
		room int // -1: discard
	}
	cases := []tc{
		{DefaultEagerMax + 1, DefaultEagerMax + 1},
		{DefaultSplitMax, DefaultSplitMax},
		{DefaultSplitMax, 100}, // truncated
		{DefaultSplitMax, 0},   // no room at all
		{DefaultSplitMax, -1},  // discarded
		{DefaultSplitMax, DefaultSplitMax},
	}
	// The sends complete before any receive is posted.
	for i, c := range cases {
		send(t, a, ab, Hdr{Tag: uint64(i)}, [][]byte{src[:c.size]}, uint64(i), b)
	}
	pump(t, "sends and headers", func() bool { return len(a.done) == len(cases) && len(b.arr) == len(cases) }, a, b)
	for i, err := range a.done {
		if err != nil {
			t.Fatalf("send %d: %v", i, err)
		}
	}
	for i, c := range cases {
		rv := b.arr[i].rv
		if rv == nil || !rv.split || rv.Size() != uint64(c.size) {
			t.Fatalf("case %d: not a split message (%+v)", i, b.arr[i])
		}
		if c.room < 0 {
			if err := b.t.Discard(rv); err != nil {
				t.Fatal(err)
			}
			continue
		}
		dst := mmapBuf(t, max(c.room, 1))[:c.room]
		rv.SetContext(i)
		if err := b.t.Pull(rv, [][]byte{dst}); err != nil {
			t.Fatal(err)
		}
		pump(t, "pull", func() bool { _, ok := b.pulls[i]; return ok }, a, b)
		res, want := b.pulls[i], min(c.size, c.room)
		if res.err != nil || res.n != uint64(want) || !bytes.Equal(dst[:want], src[:want]) {
			t.Fatalf("case %d: pull %+v, want %d bytes of the data", i, res, want)
		}
	}
	if s := b.t.Stats(); s.Outstanding != b.t.cfg.RecvPool {
		t.Fatalf("receiver has %d slots in use after all pulls: %+v", s.Outstanding, s)
	}
	if s := a.t.Stats(); s.SplitSends != uint64(len(cases)) {
		t.Fatalf("%d split sends, want %d: %+v", s.SplitSends, len(cases), s)
	}
}

// TestSplitSenderGone: a split message's data is in the receiver's core
// once the send completed, so it can be received after the sender closed.
func TestSplitSenderGone(t *testing.T) {
	a, b, ab, _ := pair(t, testCfg)
	src := mmapBuf(t, DefaultSplitMax)
	fill(src, 9)
	send(t, a, ab, Hdr{Tag: 1}, [][]byte{src}, 1, b)
	pump(t, "send", func() bool { return len(a.done) == 1 && len(b.arr) == 1 }, a, b)
	if err := a.t.Close(); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 50; i++ {
		b.poll() // the goodbye arrives
	}
	dst := mmapBuf(t, DefaultSplitMax)
	rv := b.arr[0].rv
	rv.SetContext(0)
	if err := b.t.Pull(rv, [][]byte{dst}); err != nil {
		t.Logf("pull after the sender closed: %v", err)
		return // refusing it (the peer is gone) is also fine; it must not hang
	}
	pump(t, "pull", func() bool { return len(b.pulls) == 1 }, b)
	res := b.pulls[0]
	t.Logf("pull after the sender closed: %+v", res)
	if res.err == nil && !bytes.Equal(dst, src) {
		t.Fatal("data differs")
	}
}
