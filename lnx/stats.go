// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only

package lnx

import (
	"fmt"
	"io"
	"os"
	"runtime/metrics"
)

// Core kinds an endpoint moves traffic over, for its counters.
const (
	kindShm = iota
	kindNet
	numCoreKinds
)

// coreStats counts one core's traffic on one endpoint (FI_LNX_DUMP_STATS).
type coreStats struct {
	txMsgs, txBytes, rxMsgs, rxBytes, errors uint64
	reordered                                uint64 // PER_MSG arrivals held back for an earlier one
	rxByC                                    uint64 // of rxMsgs, those lnx's C layer completed (armed receives)
	rxRndvByC                                uint64 // of rxByC, shm rendezvous messages (one process_vm_readv in C)
	txRndvByC                                uint64 // shm rendezvous sends C posted (fast_send.c; logged at close)
	rxByPeer                                 uint64 // of rxMsgs, those a peer-API core placed and completed (core_peer.go)
	// One-sided operations this endpoint initiated over the core (and
	// the bytes they address at the target), and requests it executed
	// as a target.
	rmaWrites, rmaReads, rmaAtomics, rmaBytes, rmaServed uint64
	rmaNative                                            uint64 // of the writes and reads, those the core carried (rma_native.go)
}

func (s *coreStats) oneSided() uint64 { return s.rmaWrites + s.rmaReads + s.rmaAtomics + s.rmaServed }

func (s *coreStats) tx(n uint64) { s.txMsgs++; s.txBytes += n }
func (s *coreStats) rx(n uint64) { s.rxMsgs++; s.rxBytes += n }

// dumpStats writes one line per core that carried traffic, so a user can
// see which core reached which peers.
func (e *Endpoint) dumpStats(w io.Writer) {
	names := [numCoreKinds]string{kindShm: "shm", kindNet: "net"}
	if cs := e.Domain.Link.Cores; len(cs) > 0 {
		names[kindNet] = cs[0].Prov + ":" + cs[0].Domain
	}
	for k, s := range e.stats {
		if s.txMsgs+s.rxMsgs+s.errors+s.oneSided() == 0 {
			continue
		}
		var rma string
		if s.oneSided() > 0 {
			var native string
			if k == kindNet {
				native = fmt.Sprintf(" (%d native)", s.rmaNative)
			}
			rma = fmt.Sprintf(", one-sided: %d writes %d reads %d atomics %d bytes initiated%s, %d executed as target",
				s.rmaWrites, s.rmaReads, s.rmaAtomics, s.rmaBytes, native, s.rmaServed)
		}
		var byC string
		if s.rxByC > 0 {
			byC = fmt.Sprintf(", %d received in C", s.rxByC)
			if s.rxRndvByC > 0 {
				byC += fmt.Sprintf(" (%d by rendezvous)", s.rxRndvByC)
			}
		}
		if s.rxByPeer > 0 {
			// The core matched through lnx's callbacks and completed
			// them: C completes none on the peer path (core_peer.go).
			byC += fmt.Sprintf(", %d received through the peer API", s.rxByPeer)
		}
		fmt.Fprintf(w, "lnx: pid %d link %s core %s: tx %d msgs %d bytes, rx %d msgs %d bytes, %d errors, %d reordered%s%s\n",
			os.Getpid(), e.Domain.Link.Name(), names[k], s.txMsgs, s.txBytes, s.rxMsgs, s.rxBytes, s.errors, s.reordered, byC, rma)
	}
	for _, c := range e.cores {
		c.writeStats(w)
	}
	fmt.Fprintln(w, e.goUse.line(e))
}

// goUse is what the Go runtime did while an endpoint was open, said at
// its close (FI_LNX_DUMP_STATS, or the info log level). A collection
// pauses the threads that call into Go, and at a real-time priority its
// background work can hold a CPU the application waits for (docs/lnx.7.md,
// REAL-TIME SCHEDULING): the data paths allocate nothing per message.
type goUse struct {
	at [2]uint64 // GC cycles and heap bytes allocated when it opened
}

var goUseMetrics = [2]string{"/gc/cycles/total:gc-cycles", "/gc/heap/allocs:bytes"}

func readGoUse() (v [2]uint64) {
	var s [2]metrics.Sample
	for i := range s {
		s[i].Name = goUseMetrics[i]
	}
	metrics.Read(s[:])
	for i := range s {
		if s[i].Value.Kind() == metrics.KindUint64 {
			v[i] = s[i].Value.Uint64()
		}
	}
	return v
}

func (g *goUse) start() { g.at = readGoUse() }

// line says how many collections ran and how many bytes Go allocated
// since the endpoint opened (process-wide figures: other endpoints of the
// process count too).
func (g *goUse) line(e *Endpoint) string {
	now := readGoUse()
	return fmt.Sprintf("lnx: pid %d link %s Go runtime while open: %d GC cycles, %d bytes allocated",
		os.Getpid(), e.Domain.Link.Name(), now[0]-g.at[0], now[1]-g.at[1])
}
