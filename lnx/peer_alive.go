// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only

package lnx

import (
	"sync/atomic"
	"time"

	"github.com/lnx-go/lnx-go/internal/fi"
	"github.com/lnx-go/lnx-go/peers/ofi"
)

// Liveness of a peer-API core's receivers where no side transport
// watches them (docs/peer-api.md, "Liveness").
//
// 2.1 rxm never completes a send whose receiver died. An endpoint that
// asked for no one-sided operations opens no side transport (ep.go,
// needSide), and a peer known by node/service has no side address; for
// their sends the receiver's kernel is asked instead, as the sender check
// does (senderGone): while a send waits in the core, a TCP connection to
// the receiver's core address (its listener) is made in a goroutine. A
// refused connection, an unreachable host, or no answer within the peer
// timeout: the process is gone, and its sends fail. Accepted (alive, or
// stopped): it is asked again later. The first check comes after
// ofi.DefaultProbeInterval of waiting, each next one after twice the gap
// before, up to the peer timeout, so that a peer stopped for long (whose
// accept queue keeps each connection) gets few of them.

// listenWatch is the liveness of one receiver, by its core fi_addr.
type listenWatch struct {
	id      uint64 // the receiver's transport id when watched (a reused address is another peer)
	name    []byte // its core address (an IP socket address)
	waiting int    // sends of ours the core holds for it
	due     time.Duration
	gap     time.Duration
	check   *atomic.Int32 // the running check's answer (ofi.ProbeListener's), checkPending until it comes
	gone    bool
}

// checkPending: no answer from the running check yet.
const checkPending = -1

// errListenerGone fails a send to a receiver whose listener went away.
var errListenerGone = fi.Wrap(fi.EIO, "peer is gone (its core address refuses connections)")

// watchSend records send id, which the core holds for dest, as watched:
// on the peer's side transport (side), or by its listener when the core
// address is an IP socket address. Others stay unwatched (lnx opens a
// side transport for those: needSide).
func (c *peerCore) watchSend(id, dest uint64, side *ofi.Peer) {
	if side != nil {
		c.watch[id] = side
		side.Transport().Watch(side)
		return
	}
	if c.watchListener(dest) {
		c.lwatch[id] = dest
	}
}

// watchListener counts one more wait for receiver dest on its listener's
// watch, made if needed; false when its core address cannot be probed.
func (c *peerCore) watchListener(dest uint64) bool {
	name, ok := c.names[dest]
	if !ok || !ofi.ListenerProbeable(c.prov, name) {
		return false
	}
	w := c.alive[dest]
	if w == nil || w.id != c.byCore[dest] {
		w = &listenWatch{id: c.byCore[dest], name: name}
		c.alive[dest] = w
	}
	if w.waiting == 0 {
		w.gap = ofi.DefaultProbeInterval
		w.due = time.Since(c.e.t0) + w.gap
	}
	w.waiting++
	return true
}

// refusal is a receiver the core refuses sends to (stall): the side
// transport peer that watches it, or whether its listener's watch does.
type refusal struct {
	side   *ofi.Peer
	listen bool
}

// stall records whether the core just refused a send to receiver dest
// with -FI_EAGAIN (e locked). 2.1 rxm refuses every send while it
// connects to a receiver, and to one whose process died it connects
// again each time the last attempt was refused: a sender that retries
// got -FI_EAGAIN forever, with nothing in the core for the watches of
// held sends (watchSend) to find. While refusals last, the receiver is
// watched as for a held send, and once it is declared gone the next send
// fails (goneTo). A send the core takes ends the watch.
func (c *peerCore) stall(dest uint64, side *ofi.Peer, again bool) {
	_, was := c.stalled[dest]
	switch {
	case again && !was:
		r := refusal{side: side}
		if side != nil {
			side.Transport().Watch(side)
		} else {
			r.listen = c.watchListener(dest)
		}
		c.stalled[dest] = r
	case !again && was:
		c.unstall(dest)
	}
}

// unstall forgets the refusals to dest, if any, and ends their watch.
func (c *peerCore) unstall(dest uint64) {
	r, ok := c.stalled[dest]
	if !ok {
		return
	}
	delete(c.stalled, dest)
	if r.side != nil {
		r.side.Transport().Unwatch(r.side)
	} else if r.listen {
		c.unwaitListener(dest)
	}
}

// unwaitListener counts one wait less on dest's listener watch.
func (c *peerCore) unwaitListener(dest uint64) {
	if w := c.alive[dest]; w != nil && w.waiting > 0 {
		w.waiting--
	}
}

// unwatchListener ends the listener watch of send id, if it had one.
func (c *peerCore) unwatchListener(id uint64) {
	dest, ok := c.lwatch[id]
	if !ok {
		return
	}
	delete(c.lwatch, id)
	c.unwaitListener(dest)
}

// goneTo is the error a send to core fi_addr dest fails with at once: its
// side transport, or its listener's watch, declared it gone.
func (c *peerCore) goneTo(dest uint64, side *ofi.Peer) error {
	if side != nil && side.Gone() {
		return errSideGone
	}
	if w := c.alive[dest]; w != nil && w.gone && w.id == c.byCore[dest] {
		return errListenerGone
	}
	return nil
}

// checkAlive (from poll, e locked) starts the checks that are due and
// acts on the answers that came.
func (c *peerCore) checkAlive() {
	if len(c.lwatch) == 0 && len(c.stalled) == 0 {
		return
	}
	now := time.Since(c.e.t0)
	timeout := c.e.Domain.cfg.PeerTimeout
	for dest, w := range c.alive {
		if w.gone || w.waiting == 0 {
			continue
		}
		if w.check != nil {
			switch w.check.Load() {
			case checkPending:
				continue
			case ofi.ListenerGone:
				w.check = nil
				c.listenerGone(dest, w)
				continue
			}
			w.check = nil
			w.gap = min(2*w.gap, timeout)
			w.due = now + w.gap
		}
		if now < w.due {
			continue
		}
		chk := new(atomic.Int32)
		chk.Store(checkPending)
		w.check = chk
		c.checks++
		go func(name []byte) {
			chk.Store(int32(ofi.ProbeListener(name, timeout)))
		}(w.name)
	}
}

// listenerGone fails every send the core holds for dest, and stops C
// sending to it; later sends fail at once (goneTo). The core may still
// write their completions (dropped).
func (c *peerCore) listenerGone(dest uint64, w *listenWatch) {
	w.gone = true
	c.unstall(dest)
	for addr := range c.dsts {
		if rt := c.e.routes[addr]; rt != nil && rt.pfa == dest {
			c.unpublish(addr)
		}
	}
	for id, d := range c.lwatch {
		if d != dest {
			continue
		}
		delete(c.lwatch, id)
		w.waiting--
		c.dropped[id] = struct{}{}
		c.gone++
		c.finishSend(id, errListenerGone)
	}
}
