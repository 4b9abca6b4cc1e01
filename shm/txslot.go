// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only

package shm

import (
	"runtime"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"
)

// TxSlot is a peer's send-side ring state kept outside the Go heap, so that
// a writer outside Go (lnx's C fast path for small sends) can append eager
// records to the peer's ring as well. Every writer holds Lock; Send takes
// it for its whole duration, so Go's view (Peer.tail, Peer.headCache) is
// reloaded from and stored back to the slot around each Send. Ready is 1
// only while the ring is claimed and mapped: a writer that finds it 0
// must leave the send to Send, which also handles a full ring, pads and
// peer death. The type is generated (cabi_gen.go) from struct lnx_txslot
// in capi/include/lnx_capi.h; PeerState points at the receiver's endpoint
// state, PeerOpen while it is open.

// PeerOpen is the value of the word at TxSlot.PeerState while the
// receiving endpoint is open; a writer that finds another value leaves the
// send to Send, which reports the peer gone.
const PeerOpen = epOpen

// txArenaSlots bounds the peers of one endpoint that get a TxSlot; later
// ones are served by Send alone.
const txArenaSlots = 4096

// txArena hands out TxSlots from one anonymous mapping per endpoint. Slots
// are never reused: an outside writer may hold a stale pointer to one.
type txArena struct {
	mem  []byte
	next int
}

func (a *txArena) alloc() *TxSlot {
	if a.mem == nil {
		m, err := unix.Mmap(-1, 0, txArenaSlots*int(unsafe.Sizeof(TxSlot{})),
			unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
		if err != nil {
			return nil
		}
		a.mem = m
	}
	if a.next == txArenaSlots {
		return nil
	}
	s := (*TxSlot)(unsafe.Pointer(&a.mem[a.next*int(unsafe.Sizeof(TxSlot{}))]))
	a.next++
	return s
}

func (a *txArena) free() {
	if a.mem != nil {
		_ = unix.Munmap(a.mem)
		a.mem = nil
	}
}

func (s *TxSlot) lock() {
	for !atomic.CompareAndSwapUint32(&s.Lock, 0, 1) {
		runtime.Gosched()
	}
}

func (s *TxSlot) unlock() { atomic.StoreUint32(&s.Lock, 0) }

// TxSlot returns p's slot, or nil if it has none.
func (p *Peer) TxSlot() *TxSlot { return p.tx }

// txBegin locks p's slot and loads the ring positions outside writers may
// have advanced; txEnd stores them back and unlocks.
func (p *Peer) txBegin() {
	if p.tx == nil {
		return
	}
	p.tx.lock()
	p.txHeld = true
	if p.tx.Ready != 0 {
		p.tail, p.headCache = p.tx.Tail, p.tx.HeadCache
	}
}

func (p *Peer) txEnd() {
	if p.tx == nil {
		return
	}
	if p.ring != nil && !p.dead {
		p.tx.Tail, p.tx.HeadCache = p.tail, p.headCache
		p.tx.Ready = 1
	} else {
		p.tx.Ready = 0
	}
	p.txHeld = false
	p.tx.unlock()
}

// txRing copies the geometry of the ring attach just claimed into p's
// slot (Send holds its lock); it stays fixed until the ring is given up.
func (p *Peer) txRing() {
	if p.tx == nil {
		return
	}
	p.tx.Ring = uintptr(p.ring)
	p.tx.Mask, p.tx.Size, p.tx.Salt, p.tx.EagerMax = p.mask, p.size, p.salt, p.eagerMax
	p.tx.FwdHead = uintptr(unsafe.Pointer(&p.ctl.fwdHead))
	p.tx.PeerState = uintptr(unsafe.Pointer(&p.hdr.state))
	// Rendezvous sends of the outside writer: only those the receiver may
	// pull with process_vm_readv (a request for the fallback copy sends
	// the writer to Go, which serves it after AdoptTx).
	p.tx.RndvMax = 0
	if !p.e.cfg.DisableCMA && p.e.cfg.OutsideRndvMax > p.eagerMax {
		p.tx.RndvMax = p.e.cfg.OutsideRndvMax
	}
	p.tx.Ack, p.tx.AckMask, p.tx.AckHead = uintptr(p.ackRing), p.ackMask, p.ackHead
	p.tx.AckPub = uintptr(unsafe.Pointer(&p.ctl.ackHead))
	p.tx.BulkReq = uintptr(unsafe.Pointer(&p.ctl.bulkReq))
	p.tx.BulkSeen = uint64(p.bulkSeen)
}

// OutsideSend is a rendezvous send an outside writer posted through a
// TxSlot (TxRndv) that AdoptTx hands to the caller.
type OutsideSend struct {
	Ctx    unsafe.Pointer // the send's context, as the writer stored it
	Len    uint64
	Tagged bool
	CQ     bool // a completion is wanted
}

// AdoptTx takes over the rendezvous sends an outside writer posted through
// s (entries in state txrC) and did not see acknowledged, once the writer
// has stopped (the caller's lending protocol guarantees it): each becomes
// one of the peer's outstanding sends, id(o) its send id, reported by Poll
// as Send's are (acknowledged, failed, the peer gone), its buffer served
// for a fallback copy. The slot's ack position, which the writer advanced
// as it reaped, becomes the peer's. A slot of no peer of e is ignored.
func (e *Endpoint) AdoptTx(s *TxSlot, id func(OutsideSend) uint64) {
	p := e.txPeers[s]
	if p == nil || p.tx != s {
		return
	}
	p.ackHead = s.AckHead
	s.Nout = 0
	for j := range s.R {
		r := &s.R[j]
		if r.State != txrC {
			continue
		}
		r.State = txrGo
		if p.cslots == nil {
			p.cslots = make([]sendSlot, TxRndvs)
		}
		o := OutsideSend{Ctx: *(*unsafe.Pointer)(unsafe.Pointer(&r.Ctx)), Len: r.Len, Tagged: r.Tagged != 0,
			CQ: r.Cq != 0}
		cs := &p.cslots[j]
		*cs = sendSlot{sendID: id(o), size: r.Len, gen: r.Gen, inUse: true, niov: 1}
		// The application's buffer, never Go's memory.
		cs.iov[0] = unsafe.Slice(*(**byte)(unsafe.Pointer(&r.Base)), r.Len)
		p.outstanding++
		if p.dead {
			// Gone meanwhile: Poll reports it.
			e.failed = append(e.failed, doneEvt{cs.sendID, ErrPeerGone})
			p.freeSlot(uint32(j) | txRndvBit)
		}
	}
	if p.outstanding > 0 && p.busyIdx < 0 && !p.dead {
		p.busyIdx = len(e.busy)
		e.busy = append(e.busy, p)
	}
}

// txDisable stops outside writers before p's ring goes away.
func (p *Peer) txDisable() {
	if p.tx == nil {
		return
	}
	if p.txHeld {
		p.tx.Ready = 0
		return
	}
	p.tx.lock()
	p.tx.Ready = 0
	p.tx.unlock()
}
