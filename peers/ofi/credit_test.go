// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only

package ofi

import (
	"encoding/binary"
	"errors"
	"testing"
	"time"
)

// sendUntilStalled sends 8-byte numbered messages from a to p until the
// transport keeps answering ErrAgain for 300 ms and 1000 tries in a row
// (polling everyone in between; the count keeps a test that is descheduled
// for 300 ms from taking that for a stall), or limit went; it returns how
// many went.
func sendUntilStalled(t *testing.T, a *rec, p *Peer, limit int, others ...*rec) int {
	t.Helper()
	var b [8]byte
	n := 0
	quiet, tries := time.Now(), 0
	const first = 0
	for deadline := time.Now().Add(liveness); n < limit && (time.Since(quiet) < 300*time.Millisecond || tries < 1000); {
		binary.LittleEndian.PutUint64(b[:], uint64(first+n))
		_, err := a.t.Send(p, Hdr{Tag: uint64(first + n)}, [][]byte{b[:]}, uint64(first+n))
		switch {
		case err == nil:
			n++
			quiet, tries = time.Now(), 0
		case !errors.Is(err, ErrAgain):
			t.Fatalf("send %d: %v", first+n, err)
		default:
			tries++
		}
		a.poll()
		for _, r := range others {
			r.poll()
		}
		if time.Now().After(deadline) {
			t.Fatal("the sender never stalled")
		}
	}
	return n
}

// checkNumbered checks that r received messages first.. in order.
func checkNumbered(t *testing.T, r *rec, first int) {
	t.Helper()
	for i, g := range r.arr {
		if want := uint64(first + i); g.hdr.Tag != want || len(g.data) != 8 || binary.LittleEndian.Uint64(g.data) != want {
			t.Fatalf("arrival %d: tag %d, %d bytes %x; want message %d", i, g.hdr.Tag, len(g.data), g.data, want)
		}
	}
}

// TestCreditWindow: a receiver that takes nothing lets a sender have
// exactly its window of messages outstanding; once it takes them, the
// credits come back on their own (no reply traffic) and everything
// arrives in order.
func TestCreditWindow(t *testing.T) {
	cfg := testCfg
	cfg.Credits = 8
	a, b, ab, _ := pair(t, cfg)
	b.refuse = 1 << 30
	if n := sendUntilStalled(t, a, ab, 1000, b); n != 8 {
		t.Fatalf("sent %d messages into a receiver that takes none, window 8", n)
	}
	if s := a.t.Stats(); s.CreditStalls == 0 {
		t.Fatalf("no credit stall counted: %+v", s)
	}
	b.refuse = 0
	const total = 200
	for i := 8; i < total; i++ {
		var m [8]byte
		binary.LittleEndian.PutUint64(m[:], uint64(i))
		send(t, a, ab, Hdr{Tag: uint64(i)}, [][]byte{m[:]}, uint64(i), b)
	}
	pump(t, "arrivals", func() bool { return len(b.arr) == total }, a, b)
	checkNumbered(t, b, 0)
	if s := b.t.Stats(); s.CreditMsgs == 0 {
		t.Fatalf("the receiver never sent credits back: %+v", s)
	}
}

// TestCreditsRideOnReplies: in a ping-pong the credits go back with the
// replies, so no credit message is needed.
func TestCreditsRideOnReplies(t *testing.T) {
	cfg := testCfg
	cfg.Credits = 4
	a, b, ab, ba := pair(t, cfg)
	var m [8]byte
	for i := 0; i < 100; i++ {
		binary.LittleEndian.PutUint64(m[:], uint64(i))
		send(t, a, ab, Hdr{Tag: uint64(i)}, [][]byte{m[:]}, uint64(i), b)
		pump(t, "ping", func() bool { return len(b.arr) == i+1 }, a, b)
		send(t, b, ba, Hdr{Tag: uint64(i)}, [][]byte{m[:]}, uint64(i), a)
		pump(t, "pong", func() bool { return len(a.arr) == i+1 }, a, b)
	}
	checkNumbered(t, b, 0)
	checkNumbered(t, a, 0)
	sa, sb := a.t.Stats(), b.t.Stats()
	if sa.CreditMsgs+sb.CreditMsgs != 0 || sa.CreditStalls+sb.CreditStalls != 0 {
		t.Fatalf("ping-pong needed credit messages or stalled: %+v / %+v", sa, sb)
	}
}

// TestCreditHello: the receiver never Connects to the sender, so it learns
// where to return credits from the sender's HELLO.
func TestCreditHello(t *testing.T) {
	cfg := testCfg
	cfg.Credits = 4
	ta, tb := openT(t, cfg), openT(t, cfg)
	ab, err := ta.Connect(tb.Addr())
	if err != nil {
		t.Fatal(err)
	}
	a, b := newRec(ta), newRec(tb)
	const total = 50
	var m [8]byte
	for i := 0; i < total; i++ {
		binary.LittleEndian.PutUint64(m[:], uint64(i))
		send(t, a, ab, Hdr{Tag: uint64(i)}, [][]byte{m[:]}, uint64(i), b)
	}
	pump(t, "arrivals", func() bool { return len(b.arr) == total }, a, b)
	checkNumbered(t, b, 0)
	if b.arr[total-1].peer == nil {
		t.Fatal("the receiver did not learn the sender's address")
	}
}

// TestCreditsOff: with flow control off (a negative window) a sender is
// not limited.
func TestCreditsOff(t *testing.T) {
	cfg := testCfg
	cfg.Credits = -1
	a, b, ab, _ := pair(t, cfg)
	b.refuse = 1 << 30
	if n := sendUntilStalled(t, a, ab, 1000, b); n != 1000 {
		t.Fatalf("only %d messages went without flow control", n)
	}
	if s := a.t.Stats(); s.CreditStalls != 0 {
		t.Fatalf("credit stalls without flow control: %+v", s)
	}
}

// TestStalledSenderKilledReceiver: a sender waiting for credits from a
// receiver that is then killed gets ErrPeerGone, not ErrAgain for ever.
func TestStalledSenderKilledReceiver(t *testing.T) {
	r := newRec(openT(t, testCfg))
	c := startChild(t, "refuse")
	p := connectChild(t, c, r)
	if n := sendUntilStalled(t, r, p, 1000); n != DefaultCredits {
		t.Fatalf("sent %d messages, window %d", n, DefaultCredits)
	}
	c.cmd.Process.Kill()
	start := time.Now()
	var m [8]byte
	for {
		_, err := r.t.Send(p, Hdr{}, [][]byte{m[:]}, 1<<20)
		if errors.Is(err, ErrPeerGone) {
			break
		}
		if err != nil && !errors.Is(err, ErrAgain) {
			t.Fatalf("send to a killed receiver: %v", err)
		}
		if time.Since(start) > liveness {
			t.Fatalf("still %v %v after the receiver was killed; %+v", err, liveness, r.t.Stats())
		}
		r.poll()
	}
	t.Logf("detected after %v; %+v", time.Since(start), r.t.Stats())
}
