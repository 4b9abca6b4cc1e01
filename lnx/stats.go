// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only

package lnx

import (
	"fmt"
	"io"
	"os"
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
}
