// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only

package main

import (
	"sync/atomic"
	"testing"
	"time"
)

// fakeSched runs keepSysmonQuiet on a clock the test moves, and returns
// the times (since its start) at which it yielded.
func fakeSched(t *testing.T, phases ...phase) []time.Duration {
	t.Helper()
	var now int64
	var yields []time.Duration
	oldClock, oldYield := monoClock, yield
	t.Cleanup(func() {
		monoClock, yield = oldClock, oldYield
		atomic.StoreUint32(&schedMask, 0)
	})
	monoClock = func() int64 { return now }
	yield = func() { yields = append(yields, time.Duration(now)) }
	atomic.StoreUint32(&schedCalls, 0)
	atomic.StoreUint32(&schedMask, 0)
	atomic.StoreInt64(&schedRead, 0)
	atomic.StoreInt64(&schedLast, 0)
	for _, p := range phases {
		for i := range p.calls {
			now += int64(p.gap)
			keepSysmonQuiet()
			if p.idleEvery > 0 && (i+1)%p.idleEvery == 0 {
				keepSysmonQuietIdle() // a CQ read that found nothing
			}
		}
	}
	return yields
}

// A phase is calls into Go gap apart; every idleEvery-th (0: none) is a
// CQ read that found nothing.
type phase struct {
	calls     int
	gap       time.Duration
	idleEvery int
}

// maxGap is the longest time between two yields, the first counted from
// since.
func maxGap(since time.Duration, y []time.Duration) time.Duration {
	var g time.Duration
	last := since
	for _, at := range y {
		g = max(g, at-last)
		last = at
	}
	return g
}

// TestSchedRareCalls: a polling thread that enters Go once a millisecond
// (a peer core lent to C, which sends reads into Go about once a message)
// still yields well within the runtime's 10 ms, every schedEvery. With
// the clock read every 64th call it yielded first after 64 ms, and sysmon
// kept taking the P back and polling every 20 us.
func TestSchedRareCalls(t *testing.T) {
	y := fakeSched(t, phase{200, time.Millisecond, 1})
	if len(y) < 30 || maxGap(0, y) > 6*time.Millisecond {
		t.Fatalf("200 calls 1 ms apart: yields at %v, want one every 5-6 ms", y)
	}
}

// TestSchedBurstThenRare: after a burst of frequent calls the clock is
// read on every 16th call; calls turning rare then wait at most 16 of
// them for the next read, and the reads come on every call again.
func TestSchedBurstThenRare(t *testing.T) {
	y := fakeSched(t, phase{50000, time.Microsecond, 1}, phase{200, time.Millisecond, 1})
	if g := maxGap(0, y); g > 5*time.Millisecond+16*time.Millisecond {
		t.Fatalf("yields at %v: a gap of %v", y, g)
	}
	var late []time.Duration // from the second yield after the burst on
	for _, at := range y {
		if at > 100*time.Millisecond {
			late = append(late, at)
		}
	}
	if len(late) < 25 || maxGap(late[0], late[1:]) > 6*time.Millisecond {
		t.Fatalf("rare calls after the burst: yields at %v", late)
	}
}

// TestSchedFrequentCalls: calls a microsecond apart read the clock seldom
// (every 16th call once it adapted) and still yield every schedEvery.
func TestSchedFrequentCalls(t *testing.T) {
	y := fakeSched(t, phase{100000, time.Microsecond, 1}) // 100 ms
	if len(y) < 19 || len(y) > 21 || maxGap(0, y) > 6*time.Millisecond {
		t.Fatalf("100 ms of calls 1 us apart: yields at %v, want one every 5 ms", y)
	}
	if m := atomic.LoadUint32(&schedMask); m != schedMaskMax {
		t.Fatalf("mask %d after frequent calls, want %d", m, schedMaskMax)
	}
}

// TestSchedBusyCalls: calls that each returned or posted work (sends,
// reads that delivered completions) do not yield before schedForce, and
// yield every schedForce or a call later when no read ever finds nothing:
// still within the runtime's 10 ms.
func TestSchedBusyCalls(t *testing.T) {
	y := fakeSched(t, phase{200, time.Millisecond, 0})
	if len(y) < 20 || y[0] < schedForce || maxGap(0, y) > schedForce+time.Millisecond {
		t.Fatalf("200 busy calls 1 ms apart: yields at %v, want one every 8-9 ms", y)
	}
}

// TestSchedIdleRead: once schedEvery has passed, the yield waits for a
// read that found nothing, which comes here every 3 ms.
func TestSchedIdleRead(t *testing.T) {
	y := fakeSched(t, phase{100, time.Millisecond, 3})
	if len(y) < 15 {
		t.Fatalf("yields at %v", y)
	}
	for _, at := range y {
		if at%(3*time.Millisecond) != 0 {
			t.Fatalf("a yield at %v, not at an idle read (every 3 ms): %v", at, y)
		}
	}
	if g := maxGap(0, y); g > 6*time.Millisecond {
		t.Fatalf("yields at %v: a gap of %v", y, g)
	}
}

func TestNextSchedMask(t *testing.T) {
	for _, c := range []struct {
		mask uint32
		gap  time.Duration
		want uint32
	}{
		{15, time.Millisecond, 7},
		{1, time.Millisecond, 0},
		{0, time.Millisecond, 0},
		{0, time.Microsecond, 1},
		{7, time.Microsecond, 15},
		{15, time.Microsecond, 15},
		{7, 200 * time.Microsecond, 7},
	} {
		if got := nextSchedMask(c.mask, c.gap); got != c.want {
			t.Errorf("nextSchedMask(%d, %v) = %d, want %d", c.mask, c.gap, got, c.want)
		}
	}
}

// TestProcsFloor: a process the runtime gave one P gets a second, idle
// one; the user's GOMAXPROCS, and a runtime choice above 1, stay.
func TestProcsFloor(t *testing.T) {
	for _, c := range []struct {
		env   string
		procs int
		want  int
	}{
		{"", 1, 2},
		{"1", 1, 0},
		{" 1 ", 1, 0},
		{"", 2, 0},
		{"", 64, 0},
	} {
		if got := procsFloor(c.env, c.procs); got != c.want {
			t.Errorf("procsFloor(%q, %d) = %d, want %d", c.env, c.procs, got, c.want)
		}
	}
}
