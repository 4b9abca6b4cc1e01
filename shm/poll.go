// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only

package shm

import (
	"fmt"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"
)

// maxPiece bounds one remote iov entry (the user address space is < 2^48).
const maxPiece = 1 << 48

// Poll makes progress: it delivers inbound messages to onArrival, reports
// completed rendezvous sends to onSendDone, serves fallback copies the
// endpoint's receivers asked for, and (rate-limited) detects dead peers.
//
// If onArrival returns false, Poll stops delivering and leaves that message
// in its ring for a later Poll (flow control). A nil onArrival delivers
// nothing; a nil onSendDone leaves completions queued. Callbacks may call
// Send, Pull, Discard and Connect, but not Poll, Disconnect or Close.
// Poll returns the number of events delivered.
func (e *Endpoint) Poll(onArrival func(*Arrival) bool, onSendDone func(sendID uint64, err error)) int {
	if e.closed {
		return 0
	}
	if e.lent {
		panic("shm: Poll while the inbound rings are lent")
	}
	if atomic.LoadUint64(&e.hdr.claimGen) != e.claimGen {
		e.refreshClaims()
	}
	n := 0
	if onArrival != nil {
		for i := 0; i < len(e.active); {
			r := e.active[i]
			c, stop := e.drain(r, onArrival)
			n += c
			if stop {
				break
			}
			if i < len(e.active) && e.active[i] == r {
				i++
			}
		}
	}
	if len(e.busy) != 0 || len(e.failed) != 0 {
		n += e.progressSends(onSendDone)
	}
	e.tick++
	if e.tick&1023 == 0 {
		e.housekeep()
	}
	return n
}

// drain delivers up to drainBudget records from r.
func (e *Endpoint) drain(r *inRing, cb func(*Arrival) bool) (n int, stop bool) {
	head := r.head
loop:
	for n < drainBudget {
		off := head & r.mask
		p := unsafe.Add(r.ring, off)
		rec := (*recHdr)(p)
		if atomic.LoadUint64(&rec.stamp) != stampOf(head, r.salt) {
			// Not written yet (whatever the slot holds is stale).
			if r.state == ringClosing {
				e.publish(r, head)
				e.release(r)
				return n, false
			}
			break
		}
		kf := rec.kf
		switch kf & 0xff {
		case recEager:
			size := rec.size
			if size > r.eagerMax {
				e.publish(r, head)
				e.corrupt(r, "eager size too large")
				return n, false
			}
			need := (recHdrSize + size + lineBytes - 1) &^ (lineBytes - 1)
			if off+need > r.size {
				e.publish(r, head)
				e.corrupt(r, "eager record crosses ring end")
				return n, false
			}
			a := &e.arr
			a.Src = r.owner
			a.Peer = r.peer
			a.Hdr = Hdr{Tag: rec.tag, Data: rec.data, Flags: uint32(kf >> 32)}
			a.Size = size
			a.Eager = unsafe.Slice((*byte)(unsafe.Add(p, recHdrSize)), size)
			a.Rndv = nil
			ok := cb(a)
			a.Eager = nil
			if !ok {
				stop = true
				break loop
			}
			head += need
			n++
		case recRndv:
			rv, need, why := e.parseRndv(r, p, off, kf)
			if rv == nil {
				e.publish(r, head)
				e.corrupt(r, why)
				return n, false
			}
			a := &e.arr
			a.Src = r.owner
			a.Peer = r.peer
			a.Hdr = rv.hdr
			a.Size = rv.size
			a.Eager = nil
			a.Rndv = rv
			ok := cb(a)
			a.Rndv = nil
			if !ok {
				if rv.live {
					e.putRndv(rv)
				}
				stop = true
				break loop
			}
			head += need
			n++
		case recPad:
			if off == 0 {
				e.publish(r, head)
				e.corrupt(r, "pad at ring start")
				return n, false
			}
			head += r.size - off
		default:
			e.publish(r, head)
			e.corrupt(r, "unknown record kind")
			return n, false
		}
	}
	e.publish(r, head)
	return n, stop
}

// publish records head as consumed, letting the sender reuse the space.
func (e *Endpoint) publish(r *inRing, head uint64) {
	r.head = head
	if head != r.pubHead {
		storeRelease(&r.ctl.fwdHead, head)
		r.pubHead = head
	}
}

// parseRndv validates a rendezvous record at p and returns a handle for it,
// or nil and a reason.
func (e *Endpoint) parseRndv(r *inRing, p unsafe.Pointer, off, kf uint64) (*Rendezvous, uint64, string) {
	niov := int(kf >> 8 & 0xff)
	if niov == 0 || niov > MaxIOV {
		return nil, 0, "bad iov count"
	}
	need := (recHdrSize + uint64(niov)*iovBytes + lineBytes - 1) &^ (lineBytes - 1)
	if off+need > r.size {
		return nil, 0, "rendezvous record crosses ring end"
	}
	rec := (*recHdr)(p)
	size := rec.size
	cookie := rec.cookie
	rv := e.getRndv()
	body := unsafe.Add(p, recHdrSize)
	var sum uint64
	for i := 0; i < niov; i++ {
		pair := (*[2]uint64)(unsafe.Add(body, i*iovBytes))
		base, ln := pair[0], pair[1]
		if ln == 0 || ln > maxPiece || base > maxPiece*2 || base+ln < base {
			e.putRndv(rv)
			return nil, 0, "bad iov entry"
		}
		sum += ln
		rv.iov[i] = unix.RemoteIovec{Base: uintptr(base), Len: int(ln)}
	}
	if sum != size {
		e.putRndv(rv)
		return nil, 0, "rendezvous size mismatch"
	}
	rv.ring = r
	rv.session = r.session
	rv.src = r.owner
	rv.size = size
	rv.cookie = cookie
	rv.pid = r.proc.pid
	rv.hdr = Hdr{Tag: rec.tag, Data: rec.data, Flags: uint32(kf >> 32)}
	rv.noCMA = kf&rfNoCMA != 0
	rv.niov = niov
	return rv, need, ""
}

func (e *Endpoint) getRndv() *Rendezvous {
	var rv *Rendezvous
	if n := len(e.rfree); n > 0 {
		rv = e.rfree[n-1]
		e.rfree[n-1] = nil
		e.rfree = e.rfree[:n-1]
	} else {
		rv = &Rendezvous{e: e}
	}
	rv.live = true
	return rv
}

func (e *Endpoint) putRndv(rv *Rendezvous) {
	rv.live = false
	rv.ring = nil
	rv.niov = 0
	e.rfree = append(e.rfree, rv)
}

// corrupt drops r after the sender wrote garbage into it.
func (e *Endpoint) corrupt(r *inRing, why string) {
	e.stats.Corrupt++
	atomic.CompareAndSwapUint64(&r.ctl.state, r.word, stateWord(r.proc.pid, stDropped))
	e.removeActive(r)
	r.state = ringBroken
	if e.cfg.OnError != nil {
		e.cfg.OnError(r.owner, fmt.Errorf("%w: ring %d from endpoint %016x (pid %d): %s",
			ErrCorrupt, r.idx, r.owner, r.proc.pid, why))
	}
}

func (e *Endpoint) removeActive(r *inRing) {
	i := r.activeIdx
	if i < 0 || i >= len(e.active) || e.active[i] != r {
		return
	}
	last := len(e.active) - 1
	e.active[i] = e.active[last]
	e.active[i].activeIdx = i
	e.active[last] = nil
	e.active = e.active[:last]
	r.activeIdx = -1
}

// refreshClaims rescans the channel states after the claim generation
// changed.
func (e *Endpoint) refreshClaims() {
	e.claimGen = atomic.LoadUint64(&e.hdr.claimGen)
	found := false
	defer func() {
		if found {
			// A new sender: release what senders and peers found dead
			// held (see Connect).
			e.sweepRings()
			e.sweepPeers()
		}
	}()
	for i := range e.in {
		r := &e.in[i]
		w := atomic.LoadUint64(&r.ctl.state)
		switch r.state {
		case ringIdle:
			switch w & 0xff {
			case stActive:
				e.discover(r, w)
				found = true
			case stClosed:
				// Claimed, written and closed between two of our scans
				// (a peer that sends and exits at once): deliver what it
				// wrote, then release.
				e.discover(r, w)
				r.state = ringClosing
			}
		case ringActive:
			if w != r.word {
				r.state = ringClosing
			}
		case ringBroken:
			if w&0xff == stClosed || w&0xff == stFree {
				e.release(r)
			}
		}
	}
}

// discover starts polling a newly claimed ring.
func (e *Endpoint) discover(r *inRing, w uint64) {
	r.owner = atomic.LoadUint64(&r.ctl.owner)
	r.noCMA = atomic.LoadUint64(&r.ctl.flags)&cfNoCMA != 0
	r.salt = atomic.LoadUint64(&r.ctl.salt)
	r.word = w
	r.proc = openProc(int(w >> 8))
	r.peer = e.peers[r.owner]
	r.pubHead = r.head
	r.state = ringActive
	r.activeIdx = len(e.active)
	e.active = append(e.active, r)
}

// release returns a drained (or broken) ring to the free pool.
func (e *Endpoint) release(r *inRing) {
	e.removeActive(r)
	atomic.StoreUint64(&r.ctl.fwdHead, r.head)
	r.pubHead = r.head
	atomic.StoreUint64(&r.ctl.ackHead, r.ackTail)
	r.proc.close()
	r.proc = proc{fd: -1}
	r.peer = nil
	r.owner = 0
	r.word = 0
	r.noCMA = false
	r.session++
	r.state = ringIdle
	atomic.StoreUint64(&r.ctl.state, stFree)
}

// Housekeep runs the housekeeping Poll runs every 1024 calls: it finds
// dead senders and dead peers and releases what they held. A caller that
// polls rarely (lnx answers idle CQ reads in C and enters Go once in
// many) calls it on its idle entries. It reads the clock (costly on some
// virtual machines) and does the rest at most once a millisecond.
func (e *Endpoint) Housekeep() {
	if e.closed || e.lent {
		return
	}
	e.housekeep()
}

// housekeep checks a few inbound rings (round robin, at most one system
// call) for dead owners, stuck claims and missed claims.
func (e *Endpoint) housekeep() {
	now := e.now()
	if now-e.lastHK < hkInterval {
		return
	}
	e.lastHK = now
	if now-e.lastSweep >= sweepInterval {
		e.lastSweep = now
		e.sweepPeers()
		e.sweepRings()
	}
	n := len(e.in)
	for k := 0; k < n && k < 16; k++ {
		r := &e.in[e.hkIdx]
		if e.hkIdx++; e.hkIdx == n {
			e.hkIdx = 0
		}
		w := atomic.LoadUint64(&r.ctl.state)
		switch r.state {
		case ringIdle:
			switch w & 0xff {
			case stFree:
				continue
			case stActive, stClosed:
				e.refreshClaims() // a claim whose generation bump we missed
				return
			case stClaiming:
				if pidDead(int(w >> 8)) {
					atomic.CompareAndSwapUint64(&r.ctl.state, w, stFree)
				}
				return
			default: // closed/dropped/garbage on a ring nobody owns
				atomic.CompareAndSwapUint64(&r.ctl.state, w, stFree)
			}
		case ringActive:
			if w != r.word {
				r.state = ringClosing // drained and released by Poll
			} else if !r.proc.alive() {
				r.state = ringClosing
				// The sender's process is gone: so is our peer for
				// it, if we have one; release its pidfd and mapping.
				if p := r.peer; p != nil && p.pid == r.proc.pid {
					e.markDead(p)
				}
			}
			return
		case ringClosing:
			continue
		case ringBroken:
			if w&0xff != stDropped || !r.proc.alive() {
				e.release(r)
			}
			return
		}
	}
}

// Quiet reports whether Poll has nothing to do but deliver arrivals: no
// rendezvous sends to reap or failures to report.
func (e *Endpoint) Quiet() bool { return len(e.busy) == 0 && len(e.failed) == 0 }

// Word is a word of this endpoint's shared memory that Poll would look at
// when idle: Poll has work once the word at P equals V (Eq) or differs
// from V (!Eq). P points into the region, which stays mapped until Close.
type Word struct {
	P  *uint64
	V  uint64
	Eq bool
}

// IdleWords stores in dst the words an idle Poll checks: the claim
// generation and the stamp each active ring's next record will carry. A
// caller can watch them instead of calling Poll, and call Poll once one
// changes. It returns how many it stored, and false when Poll must be
// called regardless: it has work besides arrivals (rendezvous sends to
// reap, failures to report, a closing ring to release) or dst is too short.
func (e *Endpoint) IdleWords(dst []Word) (int, bool) {
	if e.closed {
		return 0, true
	}
	if len(e.busy) != 0 || len(e.failed) != 0 || len(dst) < 1+len(e.active) {
		return 0, false
	}
	dst[0] = Word{P: &e.hdr.claimGen, V: e.claimGen}
	for i, r := range e.active {
		if r.state == ringClosing {
			return 0, false
		}
		p := (*recHdr)(unsafe.Add(r.ring, r.head&r.mask))
		dst[1+i] = Word{P: &p.stamp, V: stampOf(r.head, r.salt), Eq: true}
	}
	return 1 + len(e.active), true
}

// ClaimWord is IdleWords' first word: it changes when a sender claims a
// ring (the one word to watch while the rings are lent).
func (e *Endpoint) ClaimWord() Word { return Word{P: &e.hdr.claimGen, V: e.claimGen} }

// RingView describes an inbound ring lent to a caller that consumes its
// eager records itself (see Lend). Ring and FwdHead point into the
// region, which stays mapped until Close.
type RingView struct {
	Ring     unsafe.Pointer
	Mask     uint64
	Size     uint64
	Salt     uint64
	EagerMax uint64
	Head     uint64  // the next record's position
	FwdHead  *uint64 // where to publish the consumed position (release store)
	Src      uint64  // the sending endpoint's id

	// A caller may also take rendezvous records while the rings are lent
	// (lnx's C layer does, for a receive it knows the destination of):
	// copy the sender's buffers with process_vm_readv from Pid, only if
	// CMA is true, then acknowledge the record as Pull does, with an
	// entry (status 0, ackOK) at position AckTail of the ack ring (stamp
	// AckTail+1 stored last), when fewer than AckMask+1 entries are
	// unconsumed by the sender (*AckHead). It hands its AckTail back to
	// Resync.
	Ack     unsafe.Pointer
	AckMask uint64
	AckTail uint64
	AckHead *uint64
	Pid     int
	CMA     bool
}

// Lend describes the active inbound rings in dst and lends them: until
// Resync, the caller may consume records (advancing its copy of Head and
// publishing it at FwdHead) and the endpoint must not be polled. Only the
// stamp of the next record (IdleWords' word 0, the claim generation, still
// announces new rings) tells whether a ring has one. It returns false, and
// lends nothing, when Poll has other work or a ring is closing, or dst is
// too short.
func (e *Endpoint) Lend(dst []RingView) (int, bool) {
	if e.closed || e.lent || len(e.busy) != 0 || len(e.failed) != 0 || len(dst) < len(e.active) ||
		atomic.LoadUint64(&e.hdr.claimGen) != e.claimGen {
		return 0, false
	}
	for i, r := range e.active {
		if r.state != ringActive {
			return 0, false
		}
		dst[i] = RingView{Ring: r.ring, Mask: r.mask, Size: r.size, Salt: r.salt, EagerMax: r.eagerMax,
			Head: r.head, FwdHead: &r.ctl.fwdHead, Src: r.owner,
			Ack: r.ack, AckMask: r.ackMask, AckTail: r.ackTail, AckHead: &r.ctl.ackHead,
			Pid: r.proc.pid, CMA: !e.cfg.DisableCMA && !r.noCMA}
	}
	e.lent = true
	return len(e.active), true
}

// Resync takes back the rings Lend lent; heads[i] is the position the
// caller consumed ring i (as Lend ordered them) up to and published. Rings
// past len(heads) were not consumed (nil: none was). Their ack rings are
// taken back as lent: see ResyncAcks.
func (e *Endpoint) Resync(heads []uint64) { e.ResyncAcks(heads, nil) }

// ResyncAcks is Resync for a caller that also took rendezvous records:
// ackTails[i] is ring i's ack ring position after the acks it wrote
// (RingView.AckTail), for rings before len(ackTails).
func (e *Endpoint) ResyncAcks(heads, ackTails []uint64) {
	if !e.lent {
		return
	}
	e.lent = false
	for i, r := range e.active {
		if i < len(heads) {
			r.head, r.pubHead = heads[i], heads[i]
		}
		if i < len(ackTails) {
			r.ackTail = ackTails[i]
		}
	}
}
