// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only

package lnx

import (
	"testing"
	"time"

	"github.com/lnx-go/lnx-go/internal/fi"
)

// TestGateLentDue: while C reads a lent network core itself, the gate
// gives C a clock (due, gateDutyGap ahead) so that a run of idle answers
// does not enter Go every skipMax reads for duties on clocks of 10 ms and
// more; a quiet core Go polls keeps its own due, and shm alone gets the
// same clock as a lent core.
func TestGateLentDue(t *testing.T) {
	m := new(gateMem)
	g := gate{m: m}
	now := monoNs(time.Now())
	g.publish(&watchSet{net: true, lent: true})
	if d := int64(m.due) - now; d < int64(gateDutyGap)/2 || d > int64(gateDutyGap)+int64(time.Second) {
		t.Fatalf("lent network core: due %d ns ahead, want about %v", d, gateDutyGap)
	}
	if m.skipMax != gateSkipShm {
		t.Fatalf("lent network core: skipMax %d", m.skipMax)
	}
	quiet := now + int64(20*time.Microsecond)
	g.publish(&watchSet{net: true, due: quiet})
	if int64(m.due) != quiet || m.skipMax != gateSkipNet {
		t.Fatalf("quiet network core: due %d skipMax %d, want %d %d", m.due, m.skipMax, quiet, gateSkipNet)
	}
	now = monoNs(time.Now())
	g.publish(&watchSet{})
	if d := int64(m.due) - now; d < int64(gateDutyGap)/2 || d > int64(gateDutyGap)+int64(time.Second) {
		t.Fatalf("shm only: due %d ns ahead, want about %v", d, gateDutyGap)
	}
}

// TestWatchArmedPeerCore: a peer-API core lent to C is read by C on every
// poll, as a lent transport is, so the gate gets the lent clock (skipMax
// gateSkipShm, due gateDutyGap ahead) rather than the quiet core's, on
// which Go took the core back after every 64 idle polls; unless the
// endpoint does one-sided operations, whose side transport Go serves on
// its own clock.
func TestWatchArmedPeerCore(t *testing.T) {
	e := &Endpoint{}
	e.fast = new(fastMem)
	e.Info.Caps = fi.TAGGED | fi.MSG
	e.fast.arm.pep = 1
	var w watchSet
	e.watchArmed(&w)
	if !w.lent {
		t.Fatal("a lent peer core does not count as lent")
	}
	m := new(gateMem)
	g := gate{m: m}
	w.net, w.due = true, monoNs(time.Now())+int64(20*time.Microsecond)
	now := monoNs(time.Now())
	g.publish(&w)
	if d := int64(m.due) - now; m.skipMax != gateSkipShm || d < int64(gateDutyGap)/2 {
		t.Fatalf("lent peer core: skipMax %d, due %d ns ahead; want %d, about %v", m.skipMax, d, gateSkipShm, gateDutyGap)
	}
	for _, caps := range []uint64{fi.TAGGED | fi.RMA, fi.TAGGED | fi.ATOMIC} {
		e.Info.Caps = caps
		w.reset()
		e.watchArmed(&w)
		if w.lent {
			t.Fatalf("a lent peer core counts as lent with caps %#x", caps)
		}
	}
}

// TestLentPolls: what C did with a lent core (a transport or a peer-API
// core) keeps it hot, and C's idle polls cool it as Go's would, but not
// within netHotMin of its last activity.
func TestLentPolls(t *testing.T) {
	e := &Endpoint{}
	e.t0 = time.Now().Add(-time.Hour)
	e.lentPolls(true, 10)
	if e.netHot != netHotPolls {
		t.Fatalf("active: netHot %d, want %d", e.netHot, netHotPolls)
	}
	e.lentPolls(false, netHotPolls)
	if e.netHot != netHotPolls {
		t.Fatalf("idle polls right after activity cooled the core: netHot %d", e.netHot)
	}
	e.netActiveAt -= 2 * netHotMin
	e.lentPolls(false, 100)
	if e.netHot != netHotPolls-100 {
		t.Fatalf("100 idle polls: netHot %d, want %d", e.netHot, netHotPolls-100)
	}
	e.lentPolls(false, netHotPolls)
	if e.netHotNow() {
		t.Fatalf("idle polls past netHot left it hot: %d", e.netHot)
	}
}
