// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only

package ofi

import "unsafe"

// Credit flow control. rxm 1.17 takes every message a peer sends into
// buffers of its own, whether or not a receive is posted, so a receiver
// that stops reposting its bounce buffers does not push back on senders:
// rxm's memory grows with the flood. Instead each transport grants every
// sender a window of Config.Credits eager and RTS messages (advertised in
// its address). A sender spends one credit per such message and gets
// ErrAgain when it has none; the receiver returns credits as it hands
// messages to onArrival, in the [2:4] field of whatever it sends that peer
// next, or in a CREDIT message once half a window is owed. So at most one
// window per sender sits in the receiver's core, and what lnx keeps beyond
// that is bounded by lnx's own budget (onArrival returning false).
//
// Control messages (CTS, PING, BYE, CREDIT, HELLO) take no credits: CTS are
// bounded by the RTS that asked for them, the others by time or by the
// credit traffic itself.
//
// A receiver can return credits only to a peer whose address it knows. A
// sender that runs out before it ever got credits back introduces itself
// once with HELLO (its address blob), so that a receiver that never
// Connected to it can answer.

// takeCredit spends one of p's credits for an eager or RTS message; false
// means none is left and the send must wait (ErrAgain).
func (t *Transport) takeCredit(p *Peer) bool {
	if p.window == 0 {
		return true
	}
	if p.credits > 0 {
		p.credits--
		return true
	}
	t.stats.CreditStalls++
	if !p.stalled {
		// Waiting on p: liveness probes it if it stays silent, so a dead
		// receiver ends the stall with ErrPeerGone instead of ErrAgain
		// for ever.
		p.stalled = true
		t.wait(p)
	}
	if !p.helloSent {
		p.helloSent = t.sendHello(p)
	}
	return false
}

// refundCredit gives back a credit whose message the core refused.
func (t *Transport) refundCredit(p *Peer) {
	if p.window != 0 {
		p.credits++
	}
}

// gotCredits adds credits p returned to us.
func (t *Transport) gotCredits(p *Peer, n uint16) {
	if p == nil || p.window == 0 || p.dead {
		return
	}
	p.credits = min(p.credits+int32(n), int32(p.window))
	t.endStall(p)
}

func (t *Transport) endStall(p *Peer) {
	if p.stalled {
		p.stalled = false
		t.unwait(p)
	}
}

// consumed records that a message from p (which took one of its credits)
// has left its bounce buffer; half a window owed goes back at once.
func (t *Transport) consumed(p *Peer) {
	if t.cfg.Credits == 0 || p == nil {
		return
	}
	p.owed++
	t.creditsDue(p)
}

// creditReturnAt is the number of credits owed to a sender that Go sends
// back at once, in a message of its own if need be.
func (t *Transport) creditReturnAt() uint32 { return uint32(max(1, t.cfg.Credits/2)) }

// creditsDue returns what p is owed once that reaches creditReturnAt.
func (t *Transport) creditsDue(p *Peer) {
	if t.cfg.Credits != 0 && p.owed >= t.creditReturnAt() {
		t.returnCredits(p)
	}
}

// piggyback puts the credits owed to p into the header b of a message
// about to go to p. If the message then does not leave, unPiggyback must
// take them back.
func piggyback(p *Peer, b []byte) {
	n := min(p.owed, 0xffff)
	le.PutUint16(b[2:], uint16(n))
	p.owed -= n
}

func unPiggyback(p *Peer, b []byte) {
	p.owed += uint32(le.Uint16(b[2:]))
	le.PutUint16(b[2:], 0)
}

// returnCredits sends what is owed to p in a CREDIT message; if the core
// cannot take it now, Poll retries.
func (t *Transport) returnCredits(p *Peer) {
	if p.owed == 0 || !p.hasAddr || p.dead || t.closed {
		return // credits for an unknown peer go back once it says HELLO
	}
	if t.inject >= hdrCommon {
		b := unsafe.Slice((*byte)(t.scratch), hdrCommon)
		putCommon(b, kindCredit, 0, t.id)
		piggyback(p, b)
		ret := t.k.inject(t.scratch, hdrCommon, p.fiAddr)
		if ret == 0 {
			t.stats.CreditMsgs++
			return
		}
		unPiggyback(p, b)
		if ret != cEAGAIN {
			t.peerGone(p, coreErr("credit message", ret, 0))
			return
		}
	} else if t.sendCtl(p, kindCredit, 0, nil) {
		t.stats.CreditMsgs++
		return
	}
	if !p.creditDue {
		p.creditDue = true
		t.creditQ = append(t.creditQ, p)
	}
}

// runCredits retries the credit messages the core refused.
func (t *Transport) runCredits() {
	q := t.creditQ
	t.creditQ = nil
	for _, p := range q {
		p.creditDue = false
		t.returnCredits(p)
	}
}

// sendHello introduces us to p (our address blob) through an operation
// slot, retried by Poll if the core refuses it for now.
func (t *Transport) sendHello(p *Peer) bool {
	return t.sendCtl(p, kindHello, 0, t.addr)
}

// sendCtl sends a control message (the common header with word, then
// extra) to p from an operation slot; it reports whether the message was
// posted or queued for a retry, false if no slot was free. Credits owed
// to p ride along.
func (t *Transport) sendCtl(p *Peer, kind uint8, word uint32, extra []byte) bool {
	idx := t.alloc(kCtl, false)
	if idx < 0 {
		return false
	}
	uidx := uint32(idx)
	o := &t.ops[idx]
	hb := t.k.hdr(uidx)
	putCommon(hb, kind, word, t.id)
	piggyback(p, hb)
	n := copy(hb[hdrCommon:], extra)
	t.k.setIOV(uidx, 0, t.k.hdrPtr(uidx), hdrCommon+n)
	o.peer = p
	t.wait(p)
	t.postOrQueue(uidx, 0)
	return true
}

// onHello learns the address of a sender that introduced itself and
// returns the credits we owe it.
func (t *Transport) onHello(src uint64, b []byte) {
	a, err := parseAddr(b)
	if err == nil && a.id != src {
		err = ErrBadAddr
	}
	var p *Peer
	if err == nil {
		p, err = t.connect(a)
	}
	if err != nil {
		t.malformed(src, "HELLO: "+err.Error())
		return
	}
	t.heard(p)
	t.returnCredits(p)
}
