// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only

package ofi

/*
#include <rdma/fabric.h>
#include <rdma/fi_domain.h>

static int lnx_core_mr_pins(struct fi_info *info) {
	return (info->domain_attr->mr_mode & (FI_MR_LOCAL | FI_MR_ALLOCATED)) != 0;
}
*/
import "C"

import (
	"container/list"
	"sync/atomic"

	"github.com/lnx-go/lnx-go/internal/fi"
)

// Registrations of RTS-read send buffers. A send without a registration
// of the caller's (fi_bench, Open MPI's mtl ofi without FI_MR_LOCAL)
// needs its buffer registered with the core for the receiver to read it:
// an fi_mr_regattr and an fi_close per message, about 1.2 us under load,
// for an application that sends from the same buffers again and again.
// The transport keeps the registration when the send completes, idle, and
// the next send of the same range and length takes it back; idle ones
// beyond Config.SendRegs are closed, least recently used first.
//
// Keyed by virtual address without a memory monitor, so only where the
// core's registration pins nothing: a core that asks for neither
// FI_MR_LOCAL nor FI_MR_ALLOCATED (tcp, rxm over tcp) reads the range
// through the process's page tables when the peer reads it, so a range
// unmapped and mapped again (other pages, other contents) at the same
// address is read as it is now. A core that pins (verbs, efa, cxi) would
// serve the old pages: there each send registers its buffer and closes the
// registration when it completes, as before.
//
// A kept registration's key stays valid after its send completed: a peer
// that held the key (from an RTS-read it already answered) could still
// read the range. Peers are the job's own processes.

// sendKeys numbers the requested keys of these registrations across every
// transport of the process (non-PROV_KEY cores refuse a key in use in
// the domain, and several transports may share one), clear of the keys
// lnx requests for application MRs.
var sendKeys atomic.Uint64

// regPins reports whether registering memory with the core may pin its
// pages (the core asks for local registrations or allocated memory).
func (d *Domain) regPins() bool { return C.lnx_core_mr_pins(d.f.info) != 0 }

type sendRegKey struct {
	addr uintptr
	n    uint64
}

// sendReg is one registration of a send buffer, shared by the sends in
// flight from it and kept idle (refs 0) in the transport's list.
type sendReg struct {
	mr   *MR
	key  sendRegKey
	refs int
	idle *list.Element // in sendRegs.idle while refs is 0
}

// sendRegs is a transport's cache; like the transport, not safe for
// concurrent use.
type sendRegs struct {
	byKey map[sendRegKey]*sendReg
	idle  list.List // of *sendReg, most recently used first
	max   int       // idle registrations kept; 0: none
}

// acquire returns a registration of [addr, addr+n) for the receiver to
// read, a kept one if there is one.
func (c *sendRegs) acquire(d *Domain, addr uintptr, n uint64, st *Stats) (*sendReg, error) {
	k := sendRegKey{addr, n}
	if r, ok := c.byKey[k]; ok {
		if r.refs == 0 {
			c.takeIdle(r.idle)
		}
		r.refs++
		st.SendRegHits++
		return r, nil
	}
	m, err := d.RegMR(addr, n, fi.SEND|fi.REMOTE_READ, 1<<62+sendKeys.Add(1), 0, 0)
	if err != nil {
		return nil, err
	}
	st.SendRegs++
	r := &sendReg{mr: m, key: k, refs: 1}
	if c.max > 0 {
		if c.byKey == nil {
			c.byKey = map[sendRegKey]*sendReg{}
		}
		c.byKey[k] = r
	}
	return r, nil
}

// release drops one send's reference; an unreferenced registration is
// kept idle, or closed when the cache is off or full.
func (c *sendRegs) release(r *sendReg) error {
	r.refs--
	if r.refs > 0 {
		return nil
	}
	if c.byKey[r.key] != r {
		return r.mr.Close()
	}
	r.idle = c.idle.PushFront(r)
	var err error
	for c.idle.Len() > c.max {
		old := c.takeIdle(c.idle.Back())
		delete(c.byKey, old.key)
		if e := old.mr.Close(); e != nil && err == nil {
			err = e
		}
	}
	return err
}

// takeIdle removes e's registration from the idle list.
func (c *sendRegs) takeIdle(e *list.Element) *sendReg {
	r := c.idle.Remove(e).(*sendReg)
	r.idle = nil
	return r
}

// flush closes every idle registration (at transport close, after the
// operations released theirs).
func (c *sendRegs) flush() error {
	var err error
	for c.idle.Len() > 0 {
		r := c.takeIdle(c.idle.Front())
		delete(c.byKey, r.key)
		if e := r.mr.Close(); e != nil && err == nil {
			err = e
		}
	}
	return err
}
