// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only

package shm

import (
	"sync/atomic"
	"unsafe"

	"github.com/lnx-go/lnx-go/internal/memmap"
)

// attach claims a free inbound ring in p's region.
func (e *Endpoint) attach(p *Peer) error {
	if p == nil || p.e != e {
		return ErrBadHandle
	}
	if e.closed {
		return ErrClosed
	}
	if p.dead {
		return ErrPeerGone
	}
	// Liveness costs a system call: check on the first attempt and then on
	// every 64th retry after ErrNoRing.
	if atomic.LoadUint64(&p.hdr.state) != epOpen || p.fullTick&63 == 0 && !p.proc.alive() {
		e.markDead(p)
		return ErrPeerGone
	}
	p.fullTick++
	n := int(p.geo.nrings)
	start := int(e.id % uint64(n))
	claiming := stateWord(e.pid, stClaiming)
	for k := 0; k < n; k++ {
		i := (start + k) % n
		ctl := p.geo.ctl(p.base, i)
		if atomic.LoadUint64(&ctl.state) != stFree ||
			!atomic.CompareAndSwapUint64(&ctl.state, stFree, claiming) {
			continue
		}
		atomic.StoreUint64(&ctl.owner, e.id)
		atomic.StoreUint64(&ctl.epoch, atomic.LoadUint64(&ctl.epoch)+1)
		var flags uint64
		if e.cfg.DisableCMA {
			flags |= cfNoCMA
		}
		atomic.StoreUint64(&ctl.flags, flags)
		copy(ctl.addr[:], e.addr)
		atomic.StoreUint64(&ctl.addrLen, uint64(len(e.addr)))

		p.salt = randUint64()
		atomic.StoreUint64(&ctl.salt, p.salt)
		ring := p.geo.fwdRing(p.base, i)
		p.ctl = ctl
		p.size = p.geo.ringBytes
		p.mask = p.geo.ringBytes - 1
		p.tail = atomic.LoadUint64(&ctl.fwdHead) &^ (lineBytes - 1)
		p.headCache = p.tail
		p.ackRing = p.geo.ackRing(p.base, i)
		p.ackMask = p.geo.ackEntries - 1
		p.ackHead = atomic.LoadUint64(&ctl.ackHead)
		p.bulk = p.geo.bulk(p.base, i)
		p.bulkHalf = p.geo.bulkBytes / 2
		p.bulkSeen = uint32(atomic.LoadUint64(&ctl.bulkReq))
		p.word = stateWord(e.pid, stActive)
		atomic.StoreUint64(&ctl.state, p.word)
		atomic.AddUint64(&p.hdr.claimGen, 1)
		p.ring = ring
		p.txRing()
		return nil
	}
	return ErrNoRing
}

// Send sends the concatenation of iov to p.
//
// A message of at most p.EagerMax() bytes is copied into the peer's ring and
// Send returns done=true: the buffers may be reused at once and no SendDone
// follows. A larger message is posted as a rendezvous request and Send
// returns done=false; the buffers must stay untouched until Poll reports
// onSendDone(sendID, err). ErrAgain (ring full, or too many rendezvous sends
// outstanding to p) and ErrNoRing are transient: Poll and retry.
func (e *Endpoint) Send(p *Peer, h Hdr, iov [][]byte, sendID uint64) (done bool, err error) {
	if p != nil && p.e == e && p.tx != nil {
		p.txBegin()
		defer p.txEnd()
	}
	if p == nil || p.ring == nil || p.e != e {
		if err := e.attach(p); err != nil {
			return false, err
		}
	} else if atomic.LoadUint64(&p.hdr.state) != epOpen {
		// The receiver closed its endpoint: nothing will read the ring
		// again, so fail now rather than once it is full.
		e.markDead(p)
		return false, ErrPeerGone
	}
	var size uint64
	for i := range iov {
		size += uint64(len(iov[i]))
	}
	if size > p.eagerMax {
		return e.sendRndv(p, h, iov, size, sendID)
	}
	// A buffer shorter than the application said fails the send instead
	// of faulting the process in the copy.
	for _, b := range iov {
		if !memmap.Checked(b) {
			return false, ErrBadBuffer
		}
	}
	need := (recHdrSize + size + lineBytes - 1) &^ (lineBytes - 1)
	tail := p.tail
	off := tail & p.mask
	if off+need > p.size || tail+need+lineBytes > p.headCache+p.size {
		var ok bool
		if off, ok = e.reserveSlow(p, need); !ok {
			return false, e.full(p)
		}
		tail = p.tail
	}
	rec := (*recHdr)(unsafe.Add(p.ring, off))
	rec.kf = recEager | uint64(h.Flags)<<32
	rec.tag = h.Tag
	rec.data = h.Data
	rec.size = size
	if size != 0 {
		dst := unsafe.Slice((*byte)(unsafe.Add(p.ring, off+recHdrSize)), size)
		for _, b := range iov {
			n := copy(dst, b)
			dst = dst[n:]
		}
	}
	storeRelease(&rec.stamp, stampOf(tail, p.salt))
	p.tail = tail + need
	return true, nil
}

// reserveSlow makes room for a record of need bytes, writing a pad record
// when it would not fit before the end of the ring. It returns the offset
// at which to write the record.
func (e *Endpoint) reserveSlow(p *Peer, need uint64) (uint64, bool) {
	off := p.tail & p.mask
	var pad uint64
	if off+need > p.size {
		pad = p.size - off
	}
	total := pad + need + lineBytes
	if p.tail+total > p.headCache+p.size {
		p.headCache = atomic.LoadUint64(&p.ctl.fwdHead)
		if p.tail+total > p.headCache+p.size {
			return 0, false
		}
	}
	if pad != 0 {
		rec := (*recHdr)(unsafe.Add(p.ring, off))
		rec.kf = recPad
		atomic.StoreUint64(&rec.stamp, stampOf(p.tail, p.salt))
		p.tail += pad
		off = 0
	}
	return off, true
}

// full decides between ErrAgain and ErrPeerGone when a ring has no room.
func (e *Endpoint) full(p *Peer) error {
	if atomic.LoadUint64(&p.hdr.state) != epOpen || atomic.LoadUint64(&p.ctl.state) != p.word {
		e.markDead(p)
		return ErrPeerGone
	}
	p.fullTick++
	if p.fullTick&63 == 0 && !p.proc.alive() {
		e.markDead(p)
		return ErrPeerGone
	}
	return ErrAgain
}

func (e *Endpoint) sendRndv(p *Peer, h Hdr, iov [][]byte, size, sendID uint64) (bool, error) {
	var n uint64
	for i := range iov {
		if len(iov[i]) != 0 {
			n++
		}
	}
	if n > MaxIOV {
		return false, ErrTooManyIOV
	}
	if p.outstanding >= p.maxOut {
		return false, ErrAgain
	}
	need := (recHdrSize + n*iovBytes + lineBytes - 1) &^ (lineBytes - 1)
	off := p.tail & p.mask
	if off+need > p.size || p.tail+need+lineBytes > p.headCache+p.size {
		var ok bool
		if off, ok = e.reserveSlow(p, need); !ok {
			return false, e.full(p)
		}
	}
	idx := p.allocSlot()
	s := &p.slots[idx]
	s.sendID = sendID
	s.size = size
	s.niov = 0
	rec := (*recHdr)(unsafe.Add(p.ring, off))
	body := unsafe.Add(p.ring, off+recHdrSize)
	for _, b := range iov {
		if len(b) == 0 {
			continue
		}
		s.iov[s.niov] = b
		pair := (*[2]uint64)(unsafe.Add(body, s.niov*iovBytes))
		pair[0] = uint64(uintptr(unsafe.Pointer(unsafe.SliceData(b))))
		pair[1] = uint64(len(b))
		s.niov++
	}
	kf := recRndv | n<<8 | uint64(h.Flags)<<32
	if e.cfg.DisableCMA {
		kf |= rfNoCMA
	}
	rec.kf = kf
	rec.tag = h.Tag
	rec.data = h.Data
	rec.size = size
	rec.cookie = uint64(s.gen)<<32 | uint64(idx)
	atomic.StoreUint64(&rec.stamp, stampOf(p.tail, p.salt))
	p.tail += need
	p.outstanding++
	if p.busyIdx < 0 {
		p.busyIdx = len(e.busy)
		e.busy = append(e.busy, p)
	}
	return false, nil
}

func (p *Peer) allocSlot() uint32 {
	if p.slots == nil {
		p.slots = make([]sendSlot, p.maxOut)
		p.free = make([]uint32, 0, p.maxOut)
		for i := p.maxOut - 1; i >= 0; i-- {
			p.free = append(p.free, uint32(i))
		}
	}
	idx := p.free[len(p.free)-1]
	p.free = p.free[:len(p.free)-1]
	p.slots[idx].inUse = true
	return idx
}

// slot returns the send slot a valid index (lookup) names: Go's own, or
// one of the outside writer's Go adopted (txRndvBit set).
func (p *Peer) slot(idx uint32) *sendSlot {
	if idx&txRndvBit != 0 {
		return &p.cslots[idx&^txRndvBit]
	}
	return &p.slots[idx]
}

func (p *Peer) freeSlot(idx uint32) {
	s := p.slot(idx)
	s.inUse = false
	s.gen++
	for i := range s.iov[:s.niov] {
		s.iov[i] = nil
	}
	s.niov = 0
	if idx&txRndvBit != 0 {
		// The outside writer's entry: free for its next send, under a
		// new cookie (Go writes it only with nothing lent).
		if p.tx != nil && p.tx.R[idx&^txRndvBit].State == txrGo {
			r := &p.tx.R[idx&^txRndvBit]
			r.Gen++
			r.State = txrFree
		}
	} else {
		p.free = append(p.free, idx)
	}
	p.outstanding--
	if p.st.active && p.st.slot == idx {
		p.st.active = false
	}
}

// lookup validates a cookie received from the peer.
func (p *Peer) lookup(cookie uint64) (uint32, bool) {
	idx := uint32(cookie)
	var s *sendSlot
	if idx&txRndvBit != 0 {
		if j := idx &^ txRndvBit; j < uint32(len(p.cslots)) {
			s = &p.cslots[j]
		}
	} else if uint64(idx) < uint64(len(p.slots)) {
		s = &p.slots[idx]
	}
	if s == nil {
		return 0, false
	}
	if !s.inUse || s.gen != uint32(cookie>>32) {
		return 0, false
	}
	return idx, true
}

// progressSends reports failed sends, reaps acks, serves fallback copy
// requests and (rate-limited) checks that receivers are alive.
func (e *Endpoint) progressSends(cb func(uint64, error)) int {
	n := 0
	if cb != nil && len(e.failed) > 0 {
		f := e.failed
		e.failed = nil
		for _, d := range f {
			cb(d.sendID, d.err)
			n++
		}
		if e.failed == nil {
			e.failed = f[:0]
		}
	}
	for i := 0; i < len(e.busy); {
		p := e.busy[i]
		if !p.dead {
			if cb != nil {
				n += e.reapAcks(p, cb)
			}
			if !p.dead && p.outstanding > 0 {
				e.serveBulk(p)
			}
		}
		if p.dead || p.outstanding == 0 {
			e.removeBusy(i)
			continue
		}
		i++
	}
	if len(e.busy) > 0 {
		e.liveTick++
		if e.liveTick&31 == 0 {
			if now := e.now(); now-e.lastLive >= livenessInterval {
				e.lastLive = now
				e.checkBusyPeers()
			}
		}
	}
	return n
}

func (e *Endpoint) removeBusy(i int) {
	p := e.busy[i]
	last := len(e.busy) - 1
	e.busy[i] = e.busy[last]
	e.busy[i].busyIdx = i
	e.busy[last] = nil
	e.busy = e.busy[:last]
	p.busyIdx = -1
}

// checkBusyPeers declares receivers with outstanding rendezvous sends dead
// when their process exited, their endpoint closed or they dropped us.
func (e *Endpoint) checkBusyPeers() {
	for _, p := range e.busy {
		if p.dead {
			continue
		}
		if atomic.LoadUint64(&p.hdr.state) != epOpen ||
			atomic.LoadUint64(&p.ctl.state) != p.word || !p.proc.alive() {
			e.markDead(p)
		}
	}
}

func (e *Endpoint) reapAcks(p *Peer, cb func(uint64, error)) int {
	n := 0
	for !p.dead {
		h := p.ackHead
		a := (*ackEnt)(unsafe.Add(p.ackRing, (h&p.ackMask)*ackBytes))
		if atomic.LoadUint64(&a.stamp) != h+1 {
			break
		}
		cookie := a.cookie
		status := a.status
		p.ackHead = h + 1
		atomic.StoreUint64(&p.ctl.ackHead, h+1)
		idx, ok := p.lookup(cookie)
		if !ok {
			continue // bogus ack from a confused or hostile receiver
		}
		sid := p.slot(idx).sendID
		p.freeSlot(idx)
		var err error
		if status != ackOK && status != ackDiscard {
			err = ErrRemote
		}
		cb(sid, err)
		n++
	}
	if p.tx != nil {
		p.tx.AckHead = p.ackHead // an outside writer's sends reap from here
	}
	return n
}

// serveBulk moves data for a fallback copy the receiver requested.
func (e *Endpoint) serveBulk(p *Peer) {
	ctl := p.ctl
	if req := uint32(atomic.LoadUint64(&ctl.bulkReq)); req != p.bulkSeen {
		p.bulkSeen = req
		if p.tx != nil {
			p.tx.BulkSeen = uint64(req)
		}
		cookie := atomic.LoadUint64(&ctl.bulkCookie)
		want := atomic.LoadUint64(&ctl.bulkWant)
		idx, ok := p.lookup(cookie)
		if !ok {
			p.st.active = false
			atomic.StoreUint64(&ctl.bulkFill, uint64(req)<<32|fillErr)
			return
		}
		s := p.slot(idx)
		want = min(want, s.size)
		p.st = stream{active: true, gen: req, slot: idx, want: want, cur: iovCursor{iov: s.iov[:s.niov]}}
	}
	st := &p.st
	if !st.active {
		return
	}
	for st.off < st.want {
		var drained uint32
		if d := atomic.LoadUint64(&ctl.bulkDrain); uint32(d>>32) == st.gen {
			drained = uint32(d) & countMask
		}
		if (st.produced-drained)&countMask >= 2 {
			break
		}
		half := uint64(st.produced & 1)
		n := min(st.want-st.off, p.bulkHalf)
		dst := unsafe.Slice((*byte)(unsafe.Add(p.bulk, half*p.bulkHalf)), n)
		st.cur.gather(dst)
		atomic.StoreUint64(&ctl.bulkLen[half], n)
		st.off += n
		st.produced = (st.produced + 1) & countMask
		atomic.StoreUint64(&ctl.bulkFill, uint64(st.gen)<<32|uint64(st.produced))
	}
	if st.off >= st.want {
		st.active = false
	}
}

// serveOutbound serves pending fallback copies of every busy peer; used while
// this endpoint spins inside Pull so that two endpoints pulling from each
// other cannot deadlock.
func (e *Endpoint) serveOutbound() {
	for _, p := range e.busy {
		if !p.dead && p.outstanding > 0 {
			e.serveBulk(p)
		}
	}
}

// iovCursor walks a list of buffers.
type iovCursor struct {
	iov [][]byte
	i   int
	off int
}

// scatter copies src into the buffers at the cursor and advances it.
func (c *iovCursor) scatter(src []byte) int {
	n := 0
	for len(src) > 0 && c.i < len(c.iov) {
		k := copy(c.iov[c.i][c.off:], src)
		src = src[k:]
		n += k
		c.off += k
		if c.off >= len(c.iov[c.i]) {
			c.i++
			c.off = 0
		}
	}
	return n
}

// gather fills dst from the buffers at the cursor and advances it.
func (c *iovCursor) gather(dst []byte) int {
	n := 0
	for len(dst) > 0 && c.i < len(c.iov) {
		k := copy(dst, c.iov[c.i][c.off:])
		dst = dst[k:]
		n += k
		c.off += k
		if c.off >= len(c.iov[c.i]) {
			c.i++
			c.off = 0
		}
	}
	return n
}
