// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only

package ofi

import (
	"fmt"
	"syscall"
	"time"
	"unsafe"
)

const liveInterval = int64(time.Millisecond) // between liveness passes

// Poll makes progress: it reads the core CQ (which drives the core's
// manual progress), delivers inbound messages in their senders' order to
// onArrival, and reports finished sends to onSendDone and finished pulls
// to onPullDone. It also probes peers it waits on and declares
// unreachable ones gone (see Config.PeerTimeout).
//
// If onArrival returns false, Poll stops delivering; that message and the
// ones after it are delivered by a later Poll (flow control: their bounce
// buffers stay out of the pool, so the core eventually pushes back on
// the senders). A nil callback leaves its events queued. Callbacks may call
// Send, Pull, Discard and Connect, but not Poll or Close. Poll returns the
// number of events delivered.
func (t *Transport) Poll(onArrival func(*Arrival) bool, onSendDone func(sendID uint64, err error),
	onPullDone func(r *Rendezvous, n uint64, err error)) int {
	if t.closed {
		return 0
	}
	if len(t.reposts) != 0 {
		t.flushReposts()
	}
	n := t.k.next(evMax)
	t.tick++
	if n != 0 || t.tick&63 == 0 {
		t.clock()
	}
	if n < 0 {
		t.stats.CoreErrors++
		t.report(0, coreErr("core fi_cq_read", n, 0))
		n = 0
	}
	for i := 0; i < n; i++ {
		t.dispatch(i)
	}
	if len(t.retry) != 0 {
		t.runRetry()
	}
	if len(t.deferred) != 0 && len(t.free) != 0 {
		t.runDeferred()
	}
	if len(t.creditQ) != 0 {
		t.runCredits()
	}
	if len(t.teNeed) != 0 && len(t.free) != 0 {
		t.runTENeed()
	}
	cnt := 0
	if onArrival != nil && t.readyHd < len(t.ready) {
		cnt += t.deliver(onArrival)
	}
	if (len(t.busy) != 0 || t.cancels != 0) && t.now-t.lastLive >= liveInterval {
		t.liveness()
	}
	if onSendDone != nil && len(t.sendDone) != 0 {
		for i := 0; i < len(t.sendDone); i++ {
			e := t.sendDone[i]
			t.sendDone[i] = doneEvt{}
			onSendDone(e.sendID, e.err)
			cnt++
		}
		t.sendDone = t.sendDone[:0]
	}
	if onPullDone != nil && len(t.pullDone) != 0 {
		for i := 0; i < len(t.pullDone); i++ {
			e := t.pullDone[i]
			t.pullDone[i] = pullEvt{}
			onPullDone(e.r, e.n, e.err)
			t.putRndv(e.r)
			cnt++
		}
		t.pullDone = t.pullDone[:0]
	}
	return cnt
}

// dispatch handles completion i of the last drain.
func (t *Transport) dispatch(i int) {
	idx, sub, errno, provErr, n, _ := t.k.ev(i)
	if int(idx) >= len(t.ops) || sub > 1 {
		t.stats.Malformed++
		return
	}
	o := &t.ops[idx]
	bit := uint8(1) << sub
	if o.pending&bit == 0 {
		t.stats.Malformed++ // a completion we did not expect
		return
	}
	o.pending &^= bit
	if errno != 0 {
		t.stats.CoreErrors++
	}
	switch o.kind {
	case kBounce:
		t.onBounce(idx, errno, provErr, n)
		return
	case kTE:
		tag, data := t.k.evTagData(i)
		t.onTE(idx, errno, provErr, n, tag, data)
		return
	case kRMA:
		t.onRMA(idx, errno, provErr)
	case kEager:
		p := o.peer
		if errno != 0 {
			t.finishSend(idx, coreErr("eager send", errno, provErr))
			t.coreFailure(p, errno, provErr)
		} else {
			t.heard(p)
			t.finishSend(idx, nil)
		}
	case kRndv:
		p := o.peer
		if errno != 0 {
			if o.phase == phWaitCTS || (sub == 1 && o.phase == phData) {
				what := "rendezvous request"
				if sub == 1 {
					what = "rendezvous data send"
				}
				t.finishSend(idx, coreErr(what, errno, provErr))
			}
			t.coreFailure(p, errno, provErr)
		} else {
			t.heard(p)
			if sub == 1 && o.phase == phData {
				t.finishSend(idx, nil)
			}
		}
	case kPull:
		p := o.peer
		switch {
		case sub == 1 && errno != 0:
			// The CTS did not leave: the data will never come.
			if o.phase == phPull {
				o.err = coreErr("rendezvous CTS", errno, provErr)
				t.cancelPull(idx)
			}
			t.coreFailure(p, errno, provErr)
		case sub == 1:
			t.heard(p)
		case o.phase != phPull:
		case o.split && errno == cETRUNC:
			// The buffer was smaller than the message: it holds the
			// first o.size bytes (the caller reports the truncation).
			t.heard(p)
			t.finishPull(idx, o.size, nil)
		case errno == 0 && o.read:
			t.heard(p)
			t.stats.Reads++
			t.readDone(idx)
		case errno == 0:
			t.heard(p)
			t.finishPull(idx, n, nil)
		case o.cancel != 0 && errno == cECANCELED:
			err := o.err
			if err == nil {
				err = ErrPeerGone
			}
			t.finishPull(idx, 0, err)
		case o.read:
			// Tell the sender (if it is still there) that its data did
			// not come: its send fails rather than waiting.
			// A connection failure declares the peer gone first, which
			// fails the pull with ErrPeerGone.
			cookie := o.rv.cookie
			t.coreFailure(p, errno, provErr)
			t.finishPull(idx, 0, coreErr("rendezvous read", errno, provErr))
			t.sendCTS(p, cookie, ctsReject, 0, 0)
		default:
			t.finishPull(idx, 0, coreErr("rendezvous receive", errno, provErr))
			t.coreFailure(p, errno, provErr)
		}
	case kCtl:
		p := o.peer
		if o.probe && p != nil {
			p.probing = false
		}
		if errno != 0 {
			t.coreFailure(p, errno, provErr)
		} else {
			t.heard(p)
		}
		t.release(idx)
	}
	t.maybeFree(idx)
}

func (t *Transport) heard(p *Peer) {
	if p != nil {
		p.lastHeard = t.now
		p.eagainSince = 0
		p.active = true
	}
}

// coreFailure declares p gone if a core error says its connection failed.
func (t *Transport) coreFailure(p *Peer, errno, provErr int) {
	if p == nil || p.dead {
		return
	}
	if connErr(errno) || (errno == cECANCELED && connErr(provErr)) {
		t.peerGone(p, coreErr("connection", errno, provErr))
	}
}

func connErr(code int) bool {
	if code < 0 {
		code = -code
	}
	switch syscall.Errno(code) {
	case syscall.ECONNREFUSED, syscall.ECONNRESET, syscall.ENOTCONN, syscall.ECONNABORTED,
		syscall.EPIPE, syscall.ESHUTDOWN, syscall.EHOSTUNREACH, syscall.ENETUNREACH,
		syscall.EHOSTDOWN, syscall.ETIMEDOUT:
		return true
	}
	return false
}

// onBounce parses a completed control receive.
func (t *Transport) onBounce(idx uint32, errno, provErr int, n uint64) {
	if errno != 0 {
		if errno == cECANCELED && t.closed {
			return
		}
		t.report(0, coreErr("control receive", errno, provErr))
		t.repost(idx)
		return
	}
	if n < hdrCommon || n > uint64(t.bufSize) {
		t.malformed(0, fmt.Sprintf("control message of %d bytes", n))
		t.repost(idx)
		return
	}
	b := unsafe.Slice((*byte)(unsafe.Add(t.bounce, int(idx)*t.bufSize)), int(n))
	src := le.Uint64(b[8:])
	if b[0] != wireVersion || src == 0 {
		t.malformed(src, fmt.Sprintf("control message version %d from id %016x", b[0], src))
		t.repost(idx)
		return
	}
	if c := le.Uint16(b[2:]); c != 0 {
		t.gotCredits(t.peers[src], c)
	}
	if p := t.peers[src]; p != nil {
		p.heardFrom = true
	}
	o := &t.ops[idx]
	switch kind := b[1]; kind {
	case kindEager:
		if n < hdrEager || n-hdrEager > t.eagerMax {
			t.malformed(src, fmt.Sprintf("eager message of %d bytes", n))
			t.dropSeq(idx, b, src)
			return
		}
		p := t.peerFor(src)
		t.heard(p)
		o.rx = rxInfo{kind: kind, peer: p, hdr: rxHdr(b), size: n - hdrEager, plen: int(n - hdrEager)}
		t.sequence(p, idx, le.Uint32(b[16:]))
		return
	case kindRTS, kindRTSRead, kindSplit:
		hlen := hdrRTS
		switch kind {
		case kindRTSRead:
			hlen = hdrRTSRead
		case kindSplit:
			hlen = hdrSplit
		}
		if n < uint64(hlen)+addrHdr+1 {
			t.malformed(src, fmt.Sprintf("RTS of %d bytes", n))
			t.dropSeq(idx, b, src)
			return
		}
		size, cookie := le.Uint64(b[40:]), le.Uint64(b[48:])
		a, err := parseAddr(b[hlen:])
		if err == nil && a.id != src {
			err = fmt.Errorf("address of %016x", a.id)
		}
		var p *Peer
		if err == nil {
			p, err = t.connect(a) // so that we can answer
		}
		if err != nil || size == 0 {
			t.malformed(src, fmt.Sprintf("RTS (size %d): %v", size, err))
			t.sendCTS(t.peers[src], cookie, ctsReject, 0, 0) // if we can reach it
			t.dropSeq(idx, b, src)
			return
		}
		t.heard(p)
		o.rx = rxInfo{kind: kind, peer: p, hdr: rxHdr(b), size: size, cookie: cookie}
		switch kind {
		case kindRTSRead:
			o.rx.raddr, o.rx.rkey = le.Uint64(b[56:]), le.Uint64(b[64:])
		case kindSplit:
			o.rx.rtag = le.Uint64(b[56:])
		}
		t.sequence(p, idx, le.Uint32(b[16:]))
		return
	case kindCTS:
		if n < hdrCTS {
			t.malformed(src, fmt.Sprintf("CTS of %d bytes", n))
			break
		}
		t.heard(t.peers[src])
		t.onCTS(src, le.Uint32(b[4:]), le.Uint64(b[16:]), le.Uint64(b[24:]), le.Uint64(b[32:]))
	case kindPing, kindCredit:
		t.heard(t.peers[src])
	case kindHello:
		t.onHello(src, b[hdrCommon:])
	case kindBye:
		if p := t.peers[src]; p != nil {
			t.peerGone(p, fmt.Errorf("it closed its transport"))
		}
	default:
		t.malformed(src, fmt.Sprintf("control message kind %d", kind))
	}
	t.repost(idx)
}

// dropSeq drops a sequenced (eager or RTS) message that cannot be
// delivered, keeping its place so that the sender's later messages still
// flow in order.
func (t *Transport) dropSeq(idx uint32, b []byte, src uint64) {
	if len(b) < 20 {
		t.repost(idx)
		return
	}
	p := t.peerFor(src)
	t.ops[idx].rx = rxInfo{peer: p}
	t.sequence(p, idx, le.Uint32(b[16:]))
}

func rxHdr(b []byte) Hdr {
	return Hdr{Tag: le.Uint64(b[24:]), Data: le.Uint64(b[32:]), Flags: le.Uint32(b[4:])}
}

func (t *Transport) malformed(src uint64, why string) {
	t.stats.Malformed++
	t.report(src, fmt.Errorf("%w: %s", ErrCorrupt, why))
}

// peerFor returns the peer with id src, creating an address-less one for a
// sender we have not connected to.
func (t *Transport) peerFor(src uint64) *Peer {
	if p := t.peers[src]; p != nil {
		return p
	}
	return t.newPeer(src)
}

// repost returns bounce slot idx to the core at the start of the next
// Poll: posting a receive costs a call through the core, and deferring it
// keeps that call off the path between a message's arrival and the
// application seeing it (in a ping-pong, the reply is on its way by then).
func (t *Transport) repost(idx uint32) {
	t.ops[idx].rx = rxInfo{}
	if o := &t.ops[idx]; o.kind == kTE && (o.peer.dead || t.closed) {
		t.dropTE(idx)
		return
	}
	t.reposts = append(t.reposts, idx)
}

func (t *Transport) flushReposts() {
	for _, idx := range t.reposts {
		t.postOrQueue(idx, 0)
	}
	t.reposts = t.reposts[:0]
}

// sequence queues the arrival in bounce slot idx for delivery in its
// sender's order; one that is ahead of its turn waits for the ones before.
func (t *Transport) sequence(p *Peer, idx uint32, seq uint32) {
	if seq == p.rxSeq {
		t.ready = append(t.ready, int32(idx))
		p.rxSeq++
		for len(p.parked) != 0 {
			j, ok := p.parked[p.rxSeq]
			if !ok {
				break
			}
			delete(p.parked, p.rxSeq)
			t.ready = append(t.ready, j)
			p.rxSeq++
		}
		return
	}
	if d := int32(seq - p.rxSeq); d > 0 && d <= int32(len(t.ops)) {
		if p.parked == nil {
			p.parked = make(map[uint32]int32)
		}
		if _, dup := p.parked[seq]; !dup {
			p.parked[seq] = int32(idx)
			t.stats.Reordered++
			return
		}
	}
	t.malformed(p.id, fmt.Sprintf("sequence number %d, expected %d", seq, p.rxSeq))
	t.repost(idx)
	t.consumed(p)
}

// deliver hands ready arrivals to cb in order.
func (t *Transport) deliver(cb func(*Arrival) bool) int {
	n := 0
	for t.readyHd < len(t.ready) {
		idx := uint32(t.ready[t.readyHd])
		rx := &t.ops[idx].rx
		if rx.kind == 0 { // a dropped message's place
			p := rx.peer
			t.readyHd++
			t.repost(idx)
			t.consumed(p)
			continue
		}
		a := &t.arr
		a.Src = rx.peer.id
		a.Peer = nil
		if rx.peer.hasAddr {
			a.Peer = rx.peer
		}
		a.Hdr = rx.hdr
		a.Size = rx.size
		var rv *Rendezvous
		if rx.kind == kindEager && t.ops[idx].kind == kTE {
			a.Eager = unsafe.Slice((*byte)(t.ops[idx].heap), rx.plen)
			a.Rndv = nil
		} else if rx.kind == kindEager {
			a.Eager = unsafe.Slice((*byte)(unsafe.Add(t.bounce, int(idx)*t.bufSize+hdrEager)), rx.plen)
			a.Rndv = nil
		} else {
			rv = t.getRndv()
			rv.peer, rv.src, rv.hdr, rv.size, rv.cookie = rx.peer, rx.peer.id, rx.hdr, rx.size, rx.cookie
			rv.read, rv.raddr, rv.rkey = rx.kind == kindRTSRead, rx.raddr, rx.rkey
			rv.split, rv.rtag = rx.kind == kindSplit, rx.rtag
			rv.state = rvOffered
			a.Eager = nil
			a.Rndv = rv
		}
		ok := cb(a)
		a.Eager, a.Rndv, a.Peer = nil, nil, nil
		// A handle the callback already pulled or discarded counts as
		// taken even if it returned false.
		consumed := rv != nil && rv.state != rvOffered
		if !ok && !consumed {
			if rv != nil {
				t.putRndv(rv)
			}
			break
		}
		if rv != nil && rv.state == rvOffered {
			rv.state = rvOwned
		}
		t.readyHd++
		n++
		t.stats.Arrivals++
		p := rx.peer
		t.repost(idx)
		t.consumed(p)
		if !ok {
			break
		}
	}
	if t.readyHd == len(t.ready) {
		t.ready = t.ready[:0]
		t.readyHd = 0
	} else if t.readyHd > 0 && len(t.ready) == cap(t.ready) {
		k := copy(t.ready, t.ready[t.readyHd:])
		t.ready = t.ready[:k]
		t.readyHd = 0
	}
	return n
}

// liveness probes the peers we wait on that have been quiet for
// ProbeInterval, and gives up on pulls whose cancellation the core never
// confirmed.
func (t *Transport) liveness() {
	now := t.now
	t.lastLive = now
	pi := int64(t.cfg.ProbeInterval)
	for i := 0; i < len(t.busy); i++ {
		p := t.busy[i]
		if p.probing && now-p.lastProbe >= int64(t.cfg.PeerTimeout) {
			p.probing = false // stuck in the core: try again (and count refusals)
		}
		if p.dead || !p.hasAddr || p.probing || now-p.lastHeard < pi || now-p.lastProbe < pi {
			continue
		}
		p.lastProbe = now
		t.probe(p)
	}
	if t.cancels == 0 {
		return
	}
	for i := range t.ops {
		o := &t.ops[i]
		if o.kind == kPull && o.phase == phPull && o.cancel != 0 && now-o.cancel >= int64(t.cfg.PeerTimeout) {
			err := o.err
			if err == nil {
				err = ErrPeerGone
			}
			t.stats.Abandoned++
			t.finishPull(uint32(i), 0, err)
		}
	}
}

// peerGone fails everything outstanding with p; later Sends to it fail
// with ErrPeerGone.
func (t *Transport) peerGone(p *Peer, why error) {
	if p.dead {
		return
	}
	p.dead = true
	t.endStall(p)
	t.stats.DeadPeers++
	t.report(p.id, fmt.Errorf("%w: %016x: %v", ErrPeerGone, p.id, why))
	gone := fmt.Errorf("%w: %016x: %v", ErrPeerGone, p.id, why)
	for i := range t.ops {
		o := &t.ops[i]
		if o.peer != p || o.phase == phDone {
			continue
		}
		switch o.kind {
		case kEager, kRndv, kRMA:
			t.finishSend(uint32(i), gone)
		case kPull:
			if o.phase != phPull {
				t.release(uint32(i))
				continue
			}
			o.err = gone
			if o.pending&1 != 0 {
				t.cancelPull(uint32(i))
			} else {
				t.finishPull(uint32(i), 0, gone)
			}
		case kCtl:
			if o.probe {
				p.probing = false
			}
			t.release(uint32(i))
		case kTE:
			if o.pending&1 != 0 {
				t.k.cancel(uint32(i), 0) // its completion frees the slot
			} else if o.queued == 0 && o.rx.kind == 0 {
				t.dropTE(uint32(i))
			}
		}
	}
}

// cancelPull asks the core to cancel a pull's posted receive; its
// completion (FI_ECANCELED) finishes the pull with o.err.
func (t *Transport) cancelPull(idx uint32) {
	o := &t.ops[idx]
	if o.pending&1 == 0 {
		t.finishPull(idx, 0, o.err)
		return
	}
	if o.cancel != 0 {
		return
	}
	o.cancel = max(t.now, 1)
	t.cancels++
	t.k.cancel(idx, 0)
}

// finishPull reports a pull and releases its slot (which waits for core
// operations still outstanding).
func (t *Transport) finishPull(idx uint32, n uint64, err error) {
	o := &t.ops[idx]
	if o.phase == phDone {
		return
	}
	if o.cancel != 0 {
		t.cancels--
	}
	if err == nil && n != o.size {
		err = fmt.Errorf("%w: received %d bytes, expected %d", ErrCorrupt, n, o.size)
	}
	if o.rv != nil {
		if o.rv.discarded {
			t.putRndv(o.rv)
		} else {
			t.pullDone = append(t.pullDone, pullEvt{o.rv, n, err})
		}
		o.rv = nil
	}
	t.release(idx)
}
