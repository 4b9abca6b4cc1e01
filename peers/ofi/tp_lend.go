// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only

package ofi

import "unsafe"

// Lending the transport to C. lnx's armed receive (lnx/arm.go) lets the C
// side of fi_cq_read complete a message without entering Go; with a
// network core in use, the same holds for the transport: while lent, C
// reads the core CQ itself (lnx_tp_peek, lnx_tp_lend.h) and keeps what it
// read in a stash that the next Poll starts from, and it may take eager
// messages of one peer, each the next in that peer's order, that match
// the armed receive (lnx_tp_look, lnx_tp_consume), reposting their
// bounce buffers itself (up to LNX_LEND_TAKES whose repost the core
// refused wait for Go), and only while the credits they earn their sender
// stay below what Go returns by a message of its own. It may also send
// that peer eager messages that fit the core's fi_inject, and tagged
// eager ones (payloads above the peer's eager limit) that fit the core's
// fi_tinjectdata, straight from the caller's buffer (lnx_tp_send_eager). Reclaim then does for all of them what Poll and
// Send would have: the peer's sequence numbers, the credits both ways,
// the reposts C left.
// Everything else C read (other kinds, other peers, completions of our
// own operations, a message C may not take) waits in the stash for Poll,
// in core CQ order.
//
// Lend and Reclaim bracket the lending; the caller keeps C from using the
// transport outside them and Go from using it inside them.

// Lend prepares the transport for C and returns the pointer C is given
// (the transport's C state). C may take the next eager message of p and
// send small eager messages to p (nil: C only reads the CQ). It reports
// false, lending nothing, while Go has work of its own pending
// (deliveries, retries, completions to report), which only Poll does.
func (t *Transport) Lend(p *Peer) (unsafe.Pointer, bool) {
	if len(t.reposts) != 0 {
		t.flushReposts()
	}
	if t.closed || t.readyHd < len(t.ready) || len(t.retry) != 0 || len(t.deferred) != 0 ||
		len(t.creditQ) != 0 || len(t.sendDone) != 0 || len(t.pullDone) != 0 || t.k.stashed() {
		return nil, false
	}
	t.lendReads = t.k.reads()
	t.lendPeer = nil
	s := lendState{teOp: noTE}
	if p != nil && p.t == t && !p.dead && len(p.parked) == 0 {
		t.lendPeer = p
		s = lendState{peer: p.id, rxSeq: p.rxSeq, owe: t.cfg.Credits != 0, oweMax: t.creditReturnAt(),
			txOn: p.hasAddr && !p.stalled, txSeq: p.txSeq, window: uint32(p.window), credits: p.credits,
			owed: p.owed, txAddr: p.fiAddr, id: t.id, txEagerMax: p.eagerMax}
		if t.te && p.heardFrom {
			// Tagged eager messages C injects from the caller's buffer.
			s.teMax = uint64(min(t.cfg.SplitMax, t.inject))
		}
		// The peer's tagged eager receives, whose messages C may take
		// like eager ones (in sequence) and repost.
		s.teCap = uint64(t.cfg.SplitMax)
		for j, v := range p.teSlot {
			s.teOp[j] = ^uint32(0)
			if v != 0 && t.te {
				s.teOp[j], s.teBuf[j] = v-1, t.ops[v-1].heap
			}
		}
	}
	t.k.lend(&s)
	return unsafe.Pointer(t.k.c), true
}

// Reclaim takes the transport back after Lend, once C has stopped using
// it: it does for the messages C took and sent what Poll and Send would
// have. active reports that C took or sent a message or that events wait
// for Poll, reads how many times C read the core CQ.
func (t *Transport) Reclaim() (active bool, reads uint64) {
	s := lendState{took: t.lendTook[:0]}
	t.k.lent(&s)
	t.lendTook = s.took
	p := t.lendPeer
	t.lendPeer = nil
	for _, idx := range s.took {
		t.ops[idx].pending &^= 1
		t.repost(idx)
		t.stats.Arrivals++
	}
	// The ones C reposted stay pending, as posted by Go.
	t.stats.Arrivals += uint64(s.reposted)
	took := len(s.took) != 0 || s.reposted != 0
	if p != nil {
		p.rxSeq, p.txSeq, p.owed = s.rxSeq, s.txSeq, s.owed
		if p.window != 0 {
			p.credits = s.credits
		}
		if s.sent != 0 {
			p.eagainSince = 0
			p.active = true
			t.stats.Injected += uint64(s.sent - s.sentTE)
			t.stats.TaggedEager += uint64(s.sentTE)
			t.stats.TaggedInjected += uint64(s.sentTE)
			t.stats.SentByC += uint64(s.sent)
		}
		if took {
			t.heard(p)
			p.heardFrom = true
			t.gotCredits(p, 0) // C added what the message returned
			t.creditsDue(p)
		}
	}
	return took || s.sent != 0 || t.k.stashed(), t.k.reads() - t.lendReads
}
