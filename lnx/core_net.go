// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only

package lnx

import (
	"fmt"
	"io"
	"os"

	"github.com/lnx-go/lnx-go/peers"
	"github.com/lnx-go/lnx-go/peers/ofi"
)

// netCore is the core adapter (core.go) of one network transport of the
// link (rail ti). Lent to C, it means the transport (ofi.Transport.Lend):
// C reads the core CQ into the transport's stash, may complete the armed
// receive with the next eager message of one peer and send that peer its
// smallest messages; Reclaim at takeBack accounts for it.
type netCore struct {
	e      *Endpoint
	t      *ofi.Transport // the same as e.nets[ti]
	ti     int
	arrive func(*ofi.Arrival) bool // e.netArrival(t, ti), made once
	sole   bool                    // the link's only network core: it can be lent
	lent   bool                    // lend lent t; takeBack reclaims it
	// side: the transport beside a peer-API core (ep.go), which carries
	// one-sided operations and liveness probes, never messages.
	side bool
}

func (c *netCore) addr() CoreAddr {
	if c.side {
		return CoreAddr{Kind: coreSide, Raw: c.t.Addr()}
	}
	return CoreAddr{Kind: coreOFI, Raw: c.t.Addr()}
}
func (c *netCore) paced() bool   { return true }
func (c *netCore) quiet() bool   { return true } // see core.quiet: netHot tracks its work
func (c *netCore) housekeep()    {}              // the transport probes peers in Poll, on Go's cadence
func (c *netCore) canLend() bool { return c.sole }
func (c *netCore) release()      {} // connections stay, shared and found again on a re-insert (forgetAddrs)
func (c *netCore) close() error  { return c.t.Close() }

// idleWords: no word announces network traffic; the gate lets reads
// into Go on the cadence instead (watchSet.net).
func (c *netCore) idleWords(*watchSet)  {}
func (c *netCore) armedWords(*watchSet) {}

// poll polls the transport; arrivals, network sends or pulls in flight
// keep the network cadence hot (a shm rendezvous awaiting its ack does
// not: it would have the sockets polled on every call for nothing).
func (c *netCore) poll() {
	e := c.e
	n := c.t.Poll(c.arrive, e.sendDone, e.pullDone)
	if n > 0 {
		e.netActive()
	} else if e.netSends > 0 || len(e.pulls) > 0 {
		e.netBusy()
	}
}

// lend lends the transport when progress would poll it on every call
// (netHotNow); a quiet one stays with Go, polled on its clock. C may
// complete the armed receives with eager messages of one network peer:
// the source they all name, or else the last network sender.
func (c *netCore) lend(a *armMem, src uint64) bool {
	e := c.e
	if !e.netHotNow() || c.side {
		// The side transport carries no messages: Go polls it on the
		// gate's cadence (its probes), beside a lent peer core.
		return true
	}
	if !c.sole {
		return false
	}
	var p *ofi.Peer
	if src == peers.AddrUnspec && e.lastNet != nil {
		src = e.av.byNetID(e.lastNet.ID())
	}
	if rt := e.routes[src]; rt != nil && rt.kind == kindNet && len(rt.rails) < 2 && rt.ti == c.ti {
		p = rt.net
	}
	ptr, ok := c.t.Lend(p)
	if !ok {
		return false
	}
	c.lent = true
	a.net = uintptr(ptr)
	if p != nil {
		a.netSrc = src
	}
	return true
}

// takeBack reclaims a lent transport (small enough to inline into
// disarm, which calls it on every entry into Go).
func (c *netCore) takeBack([]uint64) {
	if c.lent {
		c.reclaim()
	}
}

// reclaim takes the lent transport back, and accounts for what C did
// with it (lentPolls).
func (c *netCore) reclaim() {
	c.lent = false
	c.e.lentPolls(c.t.Reclaim())
}

// writeStats: how the transport carried the sends: one core message each
// (inline, eager, tagged eager), two (split), or a rendezvous.
func (c *netCore) writeStats(w io.Writer) {
	s := c.t.Stats()
	if s.Injected+s.EagerSends+s.TaggedEager+s.RndvSends == 0 {
		return
	}
	where := fmt.Sprintf("rail %d", c.ti)
	if c.side {
		where = "side transport (one-sided operations, probes)"
	}
	fmt.Fprintf(w, "lnx: pid %d link %s %s sends: inline %d, eager %d, tagged eager %d, split %d, rendezvous %d (read %d; "+
		"buffers registered %d, registrations reused %d)\n",
		os.Getpid(), c.e.Domain.Link.Name(), where, s.Injected, s.EagerSends, s.TaggedEager, s.SplitSends,
		s.RndvSends-s.SplitSends, s.ReadSends, s.SendRegs, s.SendRegHits)
}
