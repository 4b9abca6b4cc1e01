// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only

package ofi

import (
	"fmt"
	"unsafe"
)

// RMA-read rendezvous. Where the core can read remote memory (rxm over
// tcp can), a rendezvous send of one piece announces the piece's remote
// address and key in an RTS-read instead of a plain RTS. The receiver's
// Pull then reads the data straight into its buffers (fi_readv) and
// answers with a CTS "read done", which completes the send. Compared with
// RTS, CTS and the core's own rendezvous (which itself starts with a
// request and a read or an acknowledgement), this saves one round trip,
// and both sides' buffers stay zero-copy. A send of several pieces, a core
// without FI_RMA, or Config.NoRead keep the CTS protocol; a receiver may
// also answer an RTS-read with an ordinary CTS, and the data is then sent.
//
// The sender's piece is read through the registration the caller passed
// (lnx's core registration of the application's MR), or through one the
// transport makes for the send and closes when it completes.

// readable makes b readable by the peer and returns its remote address
// and key; ok is false if the core cannot register it (the CTS protocol
// then carries the send).
func (t *Transport) readable(o *op, b []byte, m *MR) (raddr, rkey uint64, ok bool) {
	addr := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	if m == nil {
		r, err := t.regs.acquire(t.d, addr, uint64(len(b)), &t.stats)
		if err != nil {
			t.stats.ReadRegFailures++
			return 0, 0, false
		}
		o.reg = r
		m = r.mr
	}
	raddr = uint64(addr)
	if !t.virt {
		raddr = uint64(addr - m.base)
	}
	return raddr, m.Key(), true
}

// closeMR releases the registration an operation took for itself.
func (t *Transport) closeMR(o *op) {
	if o.reg != nil {
		if err := t.regs.release(o.reg); err != nil {
			t.report(0, fmt.Errorf("closing a send's core registration: %w", err))
		}
		o.reg = nil
	}
}

// readDone ends a pull whose read completed: it tells the sender, whose
// send then completes, and reports the data.
func (t *Transport) readDone(idx uint32) {
	o := &t.ops[idx]
	// From a slot of its own, so that a retried post outlives the pull.
	t.sendCTS(o.peer, o.rv.cookie, ctsRead, 0, o.size)
	t.finishPull(idx, o.size, nil)
}
