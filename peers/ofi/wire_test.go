// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only

package ofi

import (
	"errors"
	"testing"
	"time"
)

// rawSend sends b (at most hdrBytes) as one untagged core message from a
// to p, bypassing the protocol.
func rawSend(t *testing.T, a *rec, p *Peer, b []byte, rs ...*rec) {
	t.Helper()
	deadline := time.Now().Add(liveness)
	for {
		idx := a.t.alloc(kCtl, false)
		if idx < 0 {
			t.Fatal("no slot")
		}
		u := uint32(idx)
		copy(a.t.k.hdr(u), b)
		a.t.k.setIOV(u, 0, a.t.k.hdrPtr(u), len(b))
		o := &a.t.ops[idx]
		o.peer = p
		ret := a.t.post(u, 0)
		if ret == 0 {
			o.pending = 1
			a.t.wait(p)
			return
		}
		o.peer = nil
		a.t.freeSlot(u)
		if ret != cEAGAIN || time.Now().After(deadline) {
			t.Fatalf("raw send: %d", ret)
		}
		a.poll()
		for _, r := range rs {
			r.poll()
		}
	}
}

func eagerMsg(src uint64, seq uint32, tag uint64, payload string) []byte {
	b := make([]byte, hdrEager+len(payload))
	putEager(b, kindEager, Hdr{Tag: tag}, src, seq)
	copy(b[hdrEager:], payload)
	return b
}

func TestMalformedAndReordered(t *testing.T) {
	cfg := testCfg
	var reports []error
	cfg.OnError = func(src uint64, err error) { reports = append(reports, err) }
	ta := openT(t, testCfg)
	tb := openT(t, cfg)
	ab, err := ta.Connect(tb.Addr())
	if err != nil {
		t.Fatal(err)
	}
	a, b := newRec(ta), newRec(tb)
	const fake = 0x77
	msgs := [][]byte{
		{1}, // too short
		{9, kindEager, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0}, // bad version
		make([]byte, hdrCommon),                                  // version 0, id 0
		eagerMsg(fake, 1, 11, "second"),                          // ahead of its turn: parked
		eagerMsg(fake, 0, 10, "first"),
		eagerMsg(fake, 0, 99, "duplicate"), // old sequence number: dropped
	}
	unk := eagerMsg(fake, 0, 0, "")
	unk[1] = 42 // unknown kind
	msgs = append(msgs, unk)
	// An RTS with a broken address takes sequence 2; 3 must still arrive.
	rts := make([]byte, hdrRTS+addrHdr+4)
	putEager(rts, kindRTS, Hdr{Tag: 12}, fake, 2)
	le.PutUint64(rts[40:], 1<<20)
	rts[hdrRTS] = 7 // bad address version
	msgs = append(msgs, rts, eagerMsg(fake, 3, 13, "third"))
	// A CTS for nothing.
	cts := make([]byte, hdrCTS)
	putCTS(cts, fake, ctsGo, 12345, 1<<63, 10)
	msgs = append(msgs, cts)
	for _, m := range msgs {
		rawSend(t, a, ab, m, b)
	}
	pump(t, "sequenced arrivals", func() bool { return len(b.arr) == 3 }, a, b)
	for i, want := range []struct {
		tag  uint64
		data string
	}{{10, "first"}, {11, "second"}, {13, "third"}} {
		g := b.arr[i]
		if g.src != fake || g.hdr.Tag != want.tag || string(g.data) != want.data || g.peer != nil {
			t.Fatalf("arrival %d: %+v, want tag %d %q", i, g, want.tag, want.data)
		}
	}
	s := tb.Stats()
	if s.Malformed < 7 || s.Reordered != 1 {
		t.Fatalf("stats %+v", s)
	}
	for _, e := range reports {
		if !errors.Is(e, ErrCorrupt) {
			t.Fatalf("report %v", e)
		}
	}
	if len(reports) < 7 {
		t.Fatalf("%d reports: %v", len(reports), reports)
	}
	// The transport still works normally.
	send(t, a, ab, Hdr{Tag: 5}, [][]byte{[]byte("ok")}, 1, b)
	pump(t, "normal message", func() bool { return len(b.arr) == 4 }, a, b)
	if g := b.arr[3]; g.src != ta.ID() || string(g.data) != "ok" {
		t.Fatalf("normal arrival %+v", g)
	}
}
