// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only

package lnx

import (
	"testing"
	"time"
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
