// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only

package ofi

import (
	"fmt"
	"unsafe"

	"github.com/lnx-go/lnx-go/internal/memmap"
)

// Send sends the concatenation of iov to p, with header h.
//
// A message of at most p.EagerMax() bytes goes on the control path as one
// untagged core send: our header plus the payload pieces (zero copy when
// they fit the core's iov limit). If header and payload fit the core's
// inject size, it is sent with fi_inject and Send returns done=true: the
// buffers may be reused at once and no SendDone follows. Otherwise Send
// returns done=false and Poll reports onSendDone(sendID, err) once the
// core send completed.
//
// A larger message is announced with an RTS on the control path and
// returns done=false; the buffers must stay untouched until onSendDone,
// which follows the receiver's Pull (or Discard) and the data transfer.
// A rendezvous send takes at most MaxIOV() non-empty pieces.
//
// Buffers may be C memory or Go memory; Go memory is pinned until the core
// is done with it. ErrAgain is transient (the core said -FI_EAGAIN, for
// instance while the connection is being made, or too many operations are
// outstanding): Poll and retry.
func (t *Transport) Send(p *Peer, h Hdr, iov [][]byte, sendID uint64) (done bool, err error) {
	return t.SendMR(p, h, iov, nil, sendID)
}

// SendMR is Send with the core registrations of the pieces (mrs[i] covers
// iov[i]; nil where there is none; mrs may be nil or shorter), for
// instance those lnx keeps for application MRs. A rendezvous send hands
// them to the core with the data, or lets the receiver read the data
// through them, so that the core need not register the buffers itself;
// eager sends copy and ignore them.
func (t *Transport) SendMR(p *Peer, h Hdr, iov [][]byte, mrs []*MR, sendID uint64) (done bool, err error) {
	if t.closed {
		return false, ErrClosed
	}
	if p == nil || p.t != t {
		return false, ErrBadHandle
	}
	if p.dead {
		return false, ErrPeerGone
	}
	if !p.hasAddr {
		return false, ErrNoAddr
	}
	var size uint64
	pieces := 0
	for _, b := range iov {
		if len(b) != 0 {
			// A piece of a page or less is taken as it is, as on the
			// shm core: a mincore per send cost 64 B-4 KiB messages
			// over tcp;ofi_rxm 0.2-0.3 us each.
			if !memmap.Checked(b) {
				return false, fmt.Errorf("%w: %d bytes at %p", ErrBadBuffer, len(b), unsafe.SliceData(b))
			}
			size += uint64(len(b))
			pieces++
		}
	}
	if !t.takeCredit(p) {
		return false, ErrAgain
	}
	// A payload the core would inject by itself but not behind lnx's
	// header goes as a tagged eager message too: one inject instead of
	// the core's protocol for larger messages (libfabric shm: 4096 bytes
	// inject, a 4 KiB payload's 4136 took its slower path).
	fitsAlone := size <= uint64(t.inject) && hdrEager+size > uint64(t.inject)
	if (size > p.eagerMax || fitsAlone) && t.teOK(p, h, size) {
		done, err := t.sendTE(p, h, iov, size, pieces, sendID)
		if err != nil {
			t.refundCredit(p)
		}
		return done, err
	}
	if size > p.eagerMax {
		err := t.sendRndv(p, h, iov, mrs, size, pieces, sendID)
		if err != nil {
			t.refundCredit(p)
		}
		return false, err
	}
	total := hdrEager + int(size)
	if total <= t.inject {
		b := unsafe.Slice((*byte)(t.scratch), total)
		putEager(b, kindEager, h, t.id, p.txSeq)
		piggyback(p, b)
		off := hdrEager
		for _, x := range iov {
			off += copy(b[off:], x)
		}
		if ret := t.k.inject(t.scratch, total, p.fiAddr); ret != 0 {
			unPiggyback(p, b)
			t.refundCredit(p)
			return false, t.sendFailed(p, ret)
		}
		p.txSeq++
		p.eagainSince = 0
		p.active = true
		t.stats.Injected++
		return true, nil
	}
	idx := t.alloc(kEager, true)
	if idx < 0 {
		t.refundCredit(p)
		return false, ErrAgain
	}
	uidx := uint32(idx)
	o := &t.ops[idx]
	hb := t.k.hdr(uidx)
	putEager(hb, kindEager, h, t.id, p.txSeq)
	piggyback(p, hb)
	switch {
	case pieces+1 <= t.txIOV:
		t.k.setIOV(uidx, 0, t.k.hdrPtr(uidx), hdrEager)
		n := 0
		for _, b := range iov {
			if len(b) != 0 {
				n++
				t.k.setIOV(uidx, n, o.pinBuf(b), len(b))
			}
		}
		o.niov = n
	case total <= hdrBytes:
		off := hdrEager
		for _, x := range iov {
			off += copy(hb[off:], x)
		}
		t.k.setIOV(uidx, 0, t.k.hdrPtr(uidx), total)
	default:
		// More pieces than the core takes: stage a copy in C memory.
		o.heap = cmalloc(total)
		if o.heap == nil {
			unPiggyback(p, hb)
			t.refundCredit(p)
			t.freeSlot(uidx)
			return false, ErrAgain
		}
		b := unsafe.Slice((*byte)(o.heap), total)
		copy(b, hb[:hdrEager])
		off := hdrEager
		for _, x := range iov {
			off += copy(b[off:], x)
		}
		t.k.setIOV(uidx, 0, o.heap, total)
	}
	if ret := t.k.sendv(uidx, 0, 0, 1+o.niov, p.fiAddr); ret != 0 {
		unPiggyback(p, hb)
		t.refundCredit(p)
		o.unpin()
		t.freeSlot(uidx)
		return false, t.sendFailed(p, ret)
	}
	o.pending = 1
	o.peer = p
	o.sendID = sendID
	t.wait(p)
	p.txSeq++
	p.eagainSince = 0
	p.active = true
	t.stats.EagerSends++
	return false, nil
}

func (t *Transport) sendRndv(p *Peer, h Hdr, iov [][]byte, mrs []*MR, size uint64, pieces int, sendID uint64) error {
	if pieces > t.txIOV {
		return fmt.Errorf("%w: %d pieces, the core takes %d", ErrTooManyIOV, pieces, t.txIOV)
	}
	idx := t.alloc(kRndv, true)
	if idx < 0 {
		return ErrAgain
	}
	uidx := uint32(idx)
	o := &t.ops[idx]
	hb := t.k.hdr(uidx)
	k := 0
	var only []byte // the one piece, if there is one
	var onlyMR *MR
	for i, b := range iov {
		if len(b) != 0 {
			k++
			t.k.setIOV(uidx, k, o.pinBuf(b), len(b))
			only, onlyMR = b, nil
			if i < len(mrs) && mrs[i] != nil {
				onlyMR = mrs[i]
				t.k.setDesc(uidx, k, mrs[i].Desc())
			}
		}
	}
	o.niov = k
	kind, hlen := uint8(kindRTS), hdrRTS
	split := size <= uint64(t.cfg.SplitMax)
	if split {
		// Data within the core's eager limit goes at once, tagged; the
		// receiver's core holds it until Pull posts the receive.
		kind, hlen = kindSplit, hdrSplit
		o.rtag = 1<<62 | uint64(p.txSeq)
		le.PutUint64(hb[56:], o.rtag)
	} else if k == 1 && t.rma {
		// The receiver reads the data from our buffer: one message and
		// the read, instead of RTS, CTS and the core's own rendezvous.
		if raddr, rkey, ok := t.readable(o, only, onlyMR); ok {
			kind, hlen = kindRTSRead, hdrRTSRead
			le.PutUint64(hb[56:], raddr)
			le.PutUint64(hb[64:], rkey)
		}
	}
	putEager(hb, kind, h, t.id, p.txSeq)
	piggyback(p, hb)
	le.PutUint64(hb[40:], size)
	le.PutUint64(hb[48:], uint64(o.gen)<<32|uint64(uidx))
	n := copy(hb[hlen:], t.addr)
	t.k.setIOV(uidx, 0, t.k.hdrPtr(uidx), hlen+n)
	if ret := t.k.sendv(uidx, 0, 0, 1, p.fiAddr); ret != 0 {
		unPiggyback(p, hb)
		o.unpin()
		t.closeMR(o)
		t.freeSlot(uidx)
		return t.sendFailed(p, ret)
	}
	o.pending = 1
	o.phase = phWaitCTS
	o.peer = p
	o.sendID = sendID
	o.size = size
	t.wait(p)
	if split {
		o.dn = k
		o.phase = phData
		t.postOrQueue(uidx, 1) // the data send completes the send
		t.stats.SplitSends++
	}
	p.txSeq++
	p.eagainSince = 0
	p.active = true
	t.stats.RndvSends++
	if kind == kindRTSRead {
		t.stats.ReadSends++
	}
	return nil
}

// sendFailed maps a refused user send.
func (t *Transport) sendFailed(p *Peer, ret int) error {
	if ret == cEAGAIN {
		if t.eagain(p) {
			return ErrPeerGone
		}
		return ErrAgain
	}
	return coreErr("core send", ret, 0)
}

// eagain records that the core refused a send to p; a peer the core has
// refused continuously for PeerTimeout is declared gone (rxm answers
// -FI_EAGAIN for ever once the peer's listener is gone), unless we heard
// from it meanwhile (a live peer that stopped reading). It reports whether
// p is gone. Continuously: no send to p was taken since (those reset
// eagainSince), and no gap between refusals as long as the timeout
// itself. (The gap allowed was 3 probe intervals, 300 ms: on a loaded
// machine lnx retried a killed target's operations about every 500 ms,
// every refusal restarted the count, and they waited for ever.)
func (t *Transport) eagain(p *Peer) bool {
	now := t.clock()
	if p.eagainSince == 0 || now-p.lastEagain > int64(t.cfg.PeerTimeout) {
		p.eagainSince = now
	}
	p.lastEagain = now
	if pt := int64(t.cfg.PeerTimeout); now-p.eagainSince >= pt && now-p.lastHeard >= pt {
		switch t.listening(p) {
		case peerListening:
			// Its process is there, merely not answering (stopped,
			// swapped out, busy): slow, not gone. Wait another
			// PeerTimeout before asking again.
			p.eagainSince = now
			return false
		case peerCheckPending:
			return false
		}
		t.peerGone(p, fmt.Errorf("the core refused every send for %v", t.cfg.PeerTimeout))
		return true
	}
	return false
}

// onCTS starts (or ends) the rendezvous send a CTS answers.
func (t *Transport) onCTS(src uint64, status uint32, cookie, rtag, n uint64) {
	idx := uint32(cookie)
	if int(idx) >= len(t.ops) {
		t.malformed(src, "CTS names no operation")
		return
	}
	o := &t.ops[idx]
	if o.kind != kRndv || o.gen != uint32(cookie>>32) || o.phase != phWaitCTS || o.peer == nil || o.peer.id != src {
		// A CTS for a send we already failed (peer declared gone) ends up
		// here too; it is harmless.
		t.malformed(src, "unexpected CTS")
		return
	}
	switch {
	case status == ctsDiscard || status == ctsRead:
		t.finishSend(idx, nil)
	case status == ctsReject:
		t.finishSend(idx, ErrRemote)
	case status != ctsGo || n > o.size:
		t.finishSend(idx, fmt.Errorf("%w: bad CTS (status %d, length %d of %d)", ErrCorrupt, status, n, o.size))
	case n == 0:
		t.finishSend(idx, nil)
	default:
		// Send exactly the n bytes the receiver posted.
		left := int(n)
		k := 0
		for i := 1; i <= o.niov && left > 0; i++ {
			l := t.k.iovLen(idx, i)
			if l > left {
				t.k.setIOVLen(idx, i, left)
				l = left
			}
			left -= l
			k++
		}
		o.dn = k
		o.rtag = rtag
		o.phase = phData
		t.postOrQueue(idx, 1)
	}
}

// finishSend reports a user send (eager or rendezvous) and releases its
// slot; control messages are just released.
func (t *Transport) finishSend(idx uint32, err error) {
	o := &t.ops[idx]
	if o.phase == phDone {
		return
	}
	if o.kind == kEager || o.kind == kRndv || o.kind == kRMA {
		if err != nil && o.pending != 0 {
			t.stats.Abandoned++
		}
		t.sendDone = append(t.sendDone, doneEvt{o.sendID, err})
	}
	t.release(idx)
}

// sendCTS answers an RTS (cookie) from p with a control message of its own.
func (t *Transport) sendCTS(p *Peer, cookie uint64, status uint32, rtag, n uint64) {
	if p == nil || p.dead || !p.hasAddr {
		return
	}
	var b [hdrCTS]byte
	putCTS(b[:], t.id, status, cookie, rtag, n)
	if !t.sendCtl(p, kindCTS, status, b[hdrCommon:]) {
		t.deferred = append(t.deferred, deferredReq{peer: p, cookie: cookie, status: status})
	}
}

// probe sends a PING to p: a successful post and completion show the core
// still has (or can make) a connection to it.
func (t *Transport) probe(p *Peer) {
	idx := t.alloc(kCtl, false)
	if idx < 0 {
		return
	}
	uidx := uint32(idx)
	o := &t.ops[idx]
	putCommon(t.k.hdr(uidx), kindPing, 0, t.id)
	t.k.setIOV(uidx, 0, t.k.hdrPtr(uidx), hdrCommon)
	o.peer = p
	o.probe = true
	if ret := t.post(uidx, 0); ret != 0 {
		o.peer = nil
		t.freeSlot(uidx)
		if ret == cEAGAIN {
			t.eagain(p)
		} else {
			t.peerGone(p, coreErr("probe", ret, 0))
		}
		return
	}
	o.pending = 1
	t.wait(p)
	p.probing = true
	p.eagainSince = 0
	t.stats.Probes++
}
