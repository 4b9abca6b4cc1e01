// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only

package main

import (
	"runtime"
	"sync/atomic"
	"time"
)

// The Go runtime's monitor thread (sysmon) takes the P back from a thread
// whose P has run the same scheduling tick for 10 ms, and while it does
// so it polls every 20 us. A C thread that only ever calls into Go never
// advances that tick, so after its first 10 ms of polling, sysmon would
// wake 10,000s of times a second and preempt the application's polling
// thread on every wake. A real reschedule every few milliseconds (a
// Gosched, which hands the locked callback goroutine through the
// scheduler once) advances the tick, and sysmon backs off to 10 ms.
var (
	schedCalls uint32
	schedLast  int64
)

// schedEvery is half of the runtime's 10 ms (forcePreemptNS). Every data
// path export calls keepSysmonQuiet; the clock is read every 64th call.
const schedEvery = 5 * time.Millisecond

func keepSysmonQuiet() {
	if atomic.AddUint32(&schedCalls, 1)&63 != 0 {
		return
	}
	now := time.Now().UnixNano()
	if now-atomic.LoadInt64(&schedLast) < int64(schedEvery) {
		return
	}
	atomic.StoreInt64(&schedLast, now)
	runtime.Gosched()
}
