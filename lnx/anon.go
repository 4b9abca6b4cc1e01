// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only

package lnx

import (
	"github.com/lnx-go/lnx-go/internal/fi"
	"github.com/lnx-go/lnx-go/peers"
)

// A message can arrive before its sender is in the AV (a server that
// learns its clients' addresses later, a peer that starts sending before
// this process inserted it): it is queued with source FI_ADDR_NOTAVAIL.
// Once the sender is inserted, such a message is the sender's, as it
// would have been had it arrived after the insert: it matches receives
// directed at the sender, and its completion names it. libfabric's own
// providers do the same (the peer API's foreach_unspec_addr).

// sendersKnown is called after fi_av_insert (e locked): the peer cores
// take the new addresses into their AVs now rather than at the next
// poll, and the messages of senders not known before are resolved.
func (e *Endpoint) sendersKnown() {
	if e.closed || !e.enabled {
		return // nothing arrived yet, or its cores are gone
	}
	for _, c := range e.cores {
		if pc, ok := c.(*peerCore); ok {
			pc.sync()
		}
	}
	e.resolveAnon()
	if len(e.anonSeqs) != 0 {
		e.resolveSeqs()
	}
}

// resolveAnon gives each unexpected message from an unknown sender the
// fi_addr its sender has now, if any (e locked). A receive posted for
// that sender since takes it here.
func (e *Endpoint) resolveAnon() {
	if e.av == nil {
		return
	}
	for _, tagged := range [...]bool{true, false} {
		q := e.queue(tagged)
		for _, p := range q.Resolve(fi.ADDR_NOTAVAIL, e.senderNow) {
			e.deliverUnexpected(e.taken(q, p.Recv.Ctx.(*recvCtx), p.Msg.Size), p.Msg, opKindFlags(tagged))
		}
	}
}

// senderNow is the fi_addr of unexpected message m's sender now.
func (e *Endpoint) senderNow(m *peers.Msg) uint64 {
	u := m.Ctx.(*unexpected)
	switch {
	case u.rv.pe.Valid():
		return u.rv.pc.entrySource(u.rv.pe)
	case u.kind == kindShm:
		return e.av.byShmID(u.id)
	default:
		return e.av.byNetID(u.id)
	}
}
