// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only

package lnx

import (
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/lnx-go/lnx-go/shm"
)

// A gate lets the C side of fi_cq_read answer an idle poll without
// entering Go: entering costs a cgo callback, several times what an idle
// poll of the shm core costs. Go publishes, after each progress, the words
// of shared memory whose change means a message has arrived (see
// shm.Endpoint.IdleWords); C reads them and calls Go only when one changed,
// when completions are queued, when Go asked to be called (open), or after
// skipMax idle answers in a row (so that slower duties such as network
// polls and housekeeping still run). Go also publishes when it is next
// due (due): when a network core Go polls on a clock is, or else
// gateDutyGap ahead, for housekeeping. C reads the clock every so many
// idle answers (at most skipMax, fewer when they come far apart:
// capi/cq_ring.c, lnx_gate_clock), and enters Go once due has passed.
//
// The memory is C's: struct lnx_gate in capi/include/lnx_capi.h, which
// gateMem mirrors (generated, cabi_gen.go). Pointers are stored as
// uintptr: they point into shm regions, never into the Go heap, and a
// typed pointer store into C memory would run the GC's write barrier over
// whatever the word held before.

// Idle answers C may give in a row: rarely call Go when only shm words
// announce work (housekeeping is time based) or C polls the network core
// itself, more often with a network core Go polls on a clock
// (netQuietGap).
const (
	gateSkipShm = 256
	gateSkipNet = 64
	// gateDutyGap: unless Go polls a network core on its own clock,
	// idle answers enter Go for its slower duties at most this often
	// (publish).
	gateDutyGap = time.Millisecond
)

// gate is a CQ's view of its C gate; without C memory (Go tests) it does
// nothing.
type gate struct {
	m     *gateMem
	kicks atomic.Uint32 // operations since which the watches may be stale
}

// SetGate gives the CQ the C memory of its gate (struct lnx_gate, zeroed:
// every read enters Go until the first publish).
func (q *CQ) SetGate(p unsafe.Pointer) {
	q.mu.Lock()
	q.gate.m = (*gateMem)(p)
	q.mu.Unlock()
}

// watchSet collects the words one Read's progress left to watch.
type watchSet struct {
	n    int
	busy bool  // some endpoint needs Go on every read
	net  bool  // some endpoint has a network core
	lent bool  // ... which C polls itself (netCore.lend)
	due  int64 // CLOCK_MONOTONIC ns when the first quiet network core is due (0: none)
	// slow: C let this read into Go only because it had answered idle
	// skipMax times in a row; endpoints run their slower duties.
	slow bool
	// armLater: an endpoint that arms once this read returned the
	// completions in its CQ (armAfterCQRead).
	armLater *Endpoint
	kicks    uint32
	words    [GateWatches]shm.Word
}

// reset empties w for another collection (its kicks stay).
func (w *watchSet) reset() {
	w.n, w.busy, w.net, w.lent, w.slow, w.armLater, w.due = 0, false, false, false, false, nil, 0
}

// addDue notes that a quiet network core is due at t (monoNs).
func (w *watchSet) addDue(t int64) {
	if w.due == 0 || t < w.due {
		w.due = t
	}
}

// Go's monotonic clock on CLOCK_MONOTONIC's scale, which C reads: the
// gate's due is an absolute time.
var (
	monoStart = time.Now()
	monoBase  = func() int64 {
		var ts unix.Timespec
		_ = unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts)
		return ts.Nano() - int64(time.Since(monoStart))
	}()
)

// monoNs is t as CLOCK_MONOTONIC nanoseconds.
func monoNs(t time.Time) int64 { return monoBase + int64(t.Sub(monoStart)) }

// setPending records whether completions are queued (q.mu held). C takes
// it as a hint and Go rechecks under q.mu, so a release store will do.
func (g *gate) setPending(v bool) {
	if g.m == nil {
		return
	}
	var x uint32
	if v {
		x = 1
	}
	if g.m.pending != x {
		storeRelease32(&g.m.pending, x)
	}
}

// kick makes reads enter Go until the next publish that started after it:
// an operation changed what progress has to do.
func (g *gate) kick() {
	if g.m == nil {
		return
	}
	g.kicks.Add(1)
	g.setOpen()
}

// setOpen makes every read enter Go (g.m set).
func (g *gate) setOpen() {
	if atomic.LoadUint32(&g.m.open) == 0 {
		atomic.StoreUint32(&g.m.open, 1)
	}
}

// takeIdle clears the count of idle answers C gave since Go last ran. It
// reports whether C let this read in only because that count reached
// skipMax: the read is one of the slower duties' turns (housekeeping).
func (g *gate) takeIdle() bool {
	if g.m == nil || g.m.idle == 0 {
		return false
	}
	turn := g.m.idle >= atomic.LoadUint32(&g.m.skipMax)
	storeRelease32(&g.m.idle, 0)
	return turn
}

// publish installs w (q.mu held) unless an operation kicked the gate since
// w was collected. The watches are rewritten between two increments of
// seq, so a reader that saw seq odd or changed ignores what it read (a
// seqlock).
func (g *gate) publish(w *watchSet) {
	if g.m == nil {
		return
	}
	if w.busy || g.kicks.Load() != w.kicks {
		g.setOpen()
		return
	}
	// Only Go writes the gate (under q.mu), so seq needs no atomic
	// increment; release stores keep the rewrite inside the odd seq.
	m := g.m
	seq := m.seq
	storeRelease32(&m.seq, seq+1)
	for i, x := range w.words[:w.n] {
		eq := uint64(0)
		if x.Eq {
			eq = 1
		}
		m.w[i] = gateWatch{p: uintptr(unsafe.Pointer(x.P)), v: x.V, eq: eq}
	}
	storeRelease32(&m.n, uint32(w.n))
	skip := uint32(gateSkipShm)
	if w.net && !w.lent {
		skip = gateSkipNet
	}
	storeRelease32(&m.skipMax, skip)
	due := uint64(0)
	if w.net && !w.lent && w.due > 0 {
		due = uint64(w.due)
	} else if w.lent || !w.net {
		// Only the words C watches, or the lent network core C reads
		// itself, announce work (work they do not announce makes the
		// set busy): Go's slower duties (housekeeping, liveness probes)
		// are on clocks of 10 ms and more, so a run of idle answers
		// need not enter Go before gateDutyGap has passed. Without the
		// clock, links shm entered Go every 256 idle answers: about
		// 1,900 times per rank in mpi_bench's 8-byte ping-pong of 61,000
		// messages, a disarm and an arm each, and Go then completed
		// the message waiting (0.03 us of the one-way latency).
		due = uint64(monoNs(time.Now().Add(gateDutyGap)))
	}
	if m.due != due {
		atomic.StoreUint64(&m.due, due)
	}
	storeRelease32(&m.seq, seq+2)
	if m.open != 0 {
		storeRelease32(&m.open, 0)
	}
}

// quiesce stops C from reading the watches because an endpoint is leaving
// and its region will be unmapped: open is set, then every reader that
// may have missed it is waited for (q.mu held).
func (g *gate) quiesce() {
	if g.m == nil {
		return
	}
	g.kicks.Add(1)
	atomic.StoreUint32(&g.m.open, 1)
	for atomic.LoadUint32(&g.m.readers) != 0 {
		// A reader scans at most GateWatches words: this spins briefly.
	}
	atomic.StoreUint32(&g.m.n, 0)
}
