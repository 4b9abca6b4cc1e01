// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only

package main

import (
	"runtime"
	"strings"
	"sync/atomic"
	"time"
)

// The Go runtime's monitor thread (sysmon) polls every 20 us after it
// took a P back, and backs off to 10 ms only after 1 ms without taking
// one. The host's polling thread calls into Go through cgo callbacks and
// is "in a system call" to the runtime between them, holding its P. Two
// things make sysmon take that P back, and each wake preempts the polling
// thread on its core (Open MPI binds a rank to one):
//
//   - The P's scheduling tick has not moved for 10 ms (forcePreemptNS):
//     a thread that only ever calls in never moves it. A real reschedule
//     (a Gosched, which hands the locked callback goroutine through the
//     scheduler once) moves it; keepSysmonQuiet makes one every
//     schedEvery.
//   - The P has been in the same system call for two of sysmon's looks
//     and no other P is idle: with GOMAXPROCS 1 (a process bound to one
//     CPU) that is every time the thread polls in C for more than 20 us.
//     With a second, idle P sysmon leaves it alone for 10 ms, so
//     procsFloor raises 1 to 2 unless the user set GOMAXPROCS.
//
// The reschedule itself stops the polling thread for 20-50 us on this
// project's VMs (another thread takes the P and hands it back, two
// wake-ups), some 200 times a second. Made inside a read that returns a
// completion, or a send, it delays the application's next step by that
// much: so once schedEvery has passed it waits for a read that found
// nothing (keepSysmonQuietIdle), where the thread only polls, and is made
// by any call only once schedForce has passed.
var (
	schedCalls uint32
	schedMask  uint32 // calls between clock reads, minus one
	schedRead  int64  // when the clock was last read
	schedLast  int64  // when keepSysmonQuiet last yielded
)

// schedEvery is half of the runtime's 10 ms, schedForce what a yield may
// wait for an idle read (the gate lets one into Go at least every
// millisecond while the application polls). The clock (28 ns on this
// project's VMs) is read about every schedReadGap: on every call when
// calls are rarer than that (a peer core lent to C enters Go about once a
// message, every few hundred microseconds), and on every 2nd, 4th, up to
// 16th when they are more frequent. A fixed 64 calls between reads took
// 10-20 ms at those rates: the tick went stale, and sysmon kept polling
// every 20 us. 16 bounds the cost of a burst turning rare: the gate
// sends a polling thread into Go at least every millisecond, so the next
// read comes within 16 ms.
const (
	schedEvery   = 5 * time.Millisecond
	schedForce   = 8 * time.Millisecond
	schedReadGap = 500 * time.Microsecond
	schedMaskMax = 15
)

// monoClock and yield are the clock and the reschedule (tests replace them).
var (
	monoStart = time.Now()
	monoClock = func() int64 { return int64(time.Since(monoStart)) }
	yield     = runtime.Gosched
)

// keepSysmonQuiet is called by every data path export. Calls from several
// threads race on the counters harmlessly: a read or a yield more or less.
func keepSysmonQuiet() {
	if atomic.AddUint32(&schedCalls, 1)&atomic.LoadUint32(&schedMask) != 0 {
		return
	}
	now := monoClock()
	gap := now - atomic.LoadInt64(&schedRead)
	atomic.StoreInt64(&schedRead, now)
	atomic.StoreUint32(&schedMask, nextSchedMask(atomic.LoadUint32(&schedMask), time.Duration(gap)))
	if now-atomic.LoadInt64(&schedLast) >= int64(schedForce) {
		schedYield(now)
	}
}

// keepSysmonQuietIdle is called after a CQ read that found nothing to
// return: the yield due since the last clock read (schedEvery after the
// last yield) is made here, where it delays no completion.
func keepSysmonQuietIdle() {
	if read := atomic.LoadInt64(&schedRead); read-atomic.LoadInt64(&schedLast) >= int64(schedEvery) {
		schedYield(read)
	}
}

// schedYield reschedules the calling goroutine; now is its time.
func schedYield(now int64) {
	atomic.StoreInt64(&schedLast, now)
	yield()
}

// nextSchedMask halves the calls between clock reads when the last read
// came more than schedReadGap after the one before, and doubles them when
// it came within a quarter of it.
func nextSchedMask(mask uint32, gap time.Duration) uint32 {
	switch {
	case gap > schedReadGap:
		return mask >> 1
	case gap < schedReadGap/4 && mask < schedMaskMax:
		return mask<<1 | 1
	}
	return mask
}

// procsFloor is the GOMAXPROCS lnx sets at load: 2 where the runtime
// chose 1 (see above), nothing (0) where the user set GOMAXPROCS or the
// runtime chose more.
func procsFloor(env string, procs int) int {
	if strings.TrimSpace(env) != "" || procs != 1 {
		return 0
	}
	return 2
}

// raiseProcs applies procsFloor. Setting it ends the runtime's own
// updates of GOMAXPROCS (Go 1.25 and later follow a changing CPU mask),
// which only ever matter for a process that widens its mask later.
func raiseProcs(env string) {
	if n := procsFloor(env, runtime.GOMAXPROCS(0)); n > 0 {
		runtime.GOMAXPROCS(n)
	}
}
