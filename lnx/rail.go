// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only

package lnx

import (
	"github.com/lnx-go/lnx-go/internal/fi"
	"github.com/lnx-go/lnx-go/lnx/logging"
	"github.com/lnx-go/lnx-go/peers/ofi"
)

// Multi-rail: a link may name several domains of one network core
// ("tcp;ofi_rxm:eth0,eth1"), each a rail with its own transport.
//
// PER_PEER (the default) reaches each peer over one rail (fi_addr modulo
// the rail count), which keeps its messages in order for free. PER_MSG
// spreads one peer's messages over all rails in turn. Two rails are two
// connections, so messages overtake each other; each message to a peer
// therefore carries a 16-bit per-peer sequence number (hdrSeq and the top
// half of the header flags), and the receiver holds back the ones that
// arrive ahead of their turn (eager payloads copied, rendezvous handles
// kept) until the gap fills. Each rail's credits bound how many can be
// ahead, far below the 32768 that the sequence arithmetic allows.

const (
	hdrSeq   uint32 = 1 << 4 // the top 16 bits carry a per-peer sequence number
	seqShift        = 16
)

// rail is one network core's connection to a peer.
type rail struct {
	t   *ofi.Transport
	net *ofi.Peer
	ti  int // index of t in Endpoint.nets (and the domain's cores)
}

// nextRail picks the rail for the next message to rt, and the header bits
// that put it in sequence (PER_MSG); the caller calls sent once the core
// took the message.
func (rt *route) nextRail() (rail, uint32) {
	if len(rt.rails) < 2 {
		return rt.rail, 0
	}
	r := rt.rails[rt.rr]
	rt.rr = (rt.rr + 1) % len(rt.rails)
	return r, hdrSeq | uint32(rt.seq)<<seqShift
}

func (rt *route) sent() { rt.seq++ }

// seqState is a sender's place in the PER_MSG order, on the receiving side.
type seqState struct {
	next   uint16
	parked map[uint16]*parkedMsg
}

// parkedMsg is a message that arrived ahead of its turn.
type parkedMsg struct {
	hdr  msgHdr
	size uint64
	data []byte
	rv   rndv
}

// takenTurn parks the turn of a message delivered while its sender was not
// in the AV (resolveSeqs): its turn passes without a delivery.
var takenTurn = &parkedMsg{}

// park holds p (or takenTurn) until seq's turn comes.
func (st *seqState) park(seq uint16, p *parkedMsg) {
	if st.parked == nil {
		st.parked = make(map[uint16]*parkedMsg)
	}
	st.parked[seq] = p
}

// maxAnonSeqs bounds the sequence numbers kept for one sender not in the
// AV: half the sequence space, past which the order is lost anyway.
const maxAnonSeqs = 1 << 15

// arriveSeq delivers a sequenced message from src in its sender's order.
// id is the sender's transport id on the rail it came by.
func (e *Endpoint) arriveSeq(src, id uint64, hdr msgHdr, size uint64, eager []byte, rv rndv) bool {
	seq := uint16(hdr.Flags >> seqShift)
	hdr.Flags &^= hdrSeq | 0xffff<<seqShift
	if src == fi.ADDR_NOTAVAIL {
		// A sender we cannot name has no order to keep track of yet:
		// delivered now, its number kept so that the order resumes past
		// it once the sender is inserted (resolveSeqs).
		if !e.arrive(src, id, hdr, size, eager, rv, kindNet) {
			return false
		}
		if e.anonSeqs == nil {
			e.anonSeqs = map[uint64][]uint16{}
		}
		if len(e.anonSeqs[id]) < maxAnonSeqs {
			e.anonSeqs[id] = append(e.anonSeqs[id], seq)
		}
		return true
	}
	st := e.seqState(src)
	if seq != st.next {
		if int16(seq-st.next) < 0 {
			logging.Warnf(logging.EPData, "dropping a message from %d: sequence %d is behind %d", src, seq, st.next)
			return true
		}
		p := &parkedMsg{hdr: hdr, size: size, rv: rv}
		if rv.none() {
			p.data = append([]byte(nil), eager...)
		}
		st.park(seq, p)
		e.stats[kindNet].reordered++
		return true
	}
	if !e.arrive(src, id, hdr, size, eager, rv, kindNet) {
		return false // over the unexpected budget: the core holds it
	}
	st.next++
	e.drainSeq(src, st)
	return true
}

func (e *Endpoint) seqState(src uint64) *seqState {
	st := e.seqs[src]
	if st == nil {
		st = &seqState{}
		e.seqs[src] = st
	}
	return st
}

// drainSeq delivers the messages of src that waited for their turn, which
// has come. Their data is already in our memory, so the unexpected budget
// does not apply to them.
func (e *Endpoint) drainSeq(src uint64, st *seqState) {
	for len(st.parked) != 0 {
		p, ok := st.parked[st.next]
		if !ok {
			break
		}
		delete(st.parked, st.next)
		if p != takenTurn {
			e.forceArrive = true
			e.arrive(src, 0, p.hdr, p.size, p.data, p.rv, kindNet)
			e.forceArrive = false
		}
		st.next++
	}
}

// resolveSeqs resumes the order of each sender just inserted that sent
// sequenced messages before (e locked): their turns are taken, and a
// message still on its way on another rail keeps its own.
func (e *Endpoint) resolveSeqs() {
	for id, seqs := range e.anonSeqs {
		src := e.av.byNetID(id)
		if src == fi.ADDR_NOTAVAIL {
			continue
		}
		delete(e.anonSeqs, id)
		st := e.seqState(src)
		for _, seq := range seqs {
			if int16(seq-st.next) >= 0 {
				st.park(seq, takenTurn)
			}
		}
		e.drainSeq(src, st)
	}
}
