// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only

package lnx

import (
	"sync/atomic"
	"unsafe"

	"github.com/lnx-go/lnx-go/internal/fi"
	"github.com/lnx-go/lnx-go/lnx/logging"
)

// The fast send path: a call into Go costs about as much as a whole shm
// message, so capi's C side writes small sends to peers on this node
// itself, into the peer's shm ring through its shm.TxSlot, and queues their
// completions in C. Go decides when that is allowed (fastMem.on) and
// publishes, per fi_addr, the slot of each shm peer once it has a route to
// it. Everything else (first send to a peer, rendezvous sizes, a full or
// wrapping ring, device memory, counters, FI_LNX_DUMP_STATS, the …msg
// calls) goes through Endpoint.Send as before.
//
// Receives take the same shortcut the other way: C queues fi_recv and
// fi_trecv into one host buffer (rxq) and returns, and Go posts them, in
// order, the next time it runs for the endpoint (takeQueued), which in a
// ping-pong is an fi_cq_read made while the reply is still on its way.
//
// fastMem mirrors struct lnx_fast and queuedRecv struct lnx_rxq_entry
// (capi/include/lnx_capi.h; generated, cabi_gen.go). Their memory is C's;
// pointers are stored as uintptr (see gateMem). A queued receive's
// pointers are the application's, and its desc an lnx MR handle or 0,
// resolved by the endpoint's mrOf. lnx's header flags hdrTagged and
// hdrData, which the C fast path writes too, are checked against C's
// LNX_HDR_TAGGED and LNX_HDR_DATA by cabi_gen_test.go.

// SetFast gives the endpoint the C memory of its fast paths (struct
// lnx_fast, zeroed: off until refreshFast turns it on) and the function
// that turns a descriptor C queued into the MR it designates.
func (e *Endpoint) SetFast(p unsafe.Pointer, mrOf func(uintptr) *MR) {
	e.lockToArm()
	e.fast = (*fastMem)(p)
	e.mrOf = mrOf
	e.unlock()
}

// cSendable says whether C may send by itself (e locked): only where
// Endpoint.Send would do nothing C cannot, i.e. host memory (no device
// runtime to consult), a transmit CQ and no send counter.
func (e *Endpoint) cSendable() bool {
	return e.enabled && !e.hmemOn && e.txCQ != nil && e.cntrs[fi.SEND] == nil && e.cfg().FastSend
}

// refreshFast recomputes whether C may send by itself (e locked):
// cSendable, with a core and no statistics (C's fast sends do not count
// them; the lent peer core's do, see peerCore.lend).
func (e *Endpoint) refreshFast() {
	f := e.fast
	if f == nil {
		return
	}
	on := len(e.cores) > 0 && !e.cfg().DumpStats && e.cSendable()
	atomic.StoreUint64(&f.txFlags, e.txFlags)
	atomic.StoreUint64(&f.injectSize, e.injectSize())
	sel := uint32(0)
	if e.txSel {
		sel = 1
	}
	atomic.StoreUint32(&f.txSel, sel)
	v := uint32(0)
	if on {
		v = 1
	}
	atomic.StoreUint32(&f.on, v)
	// Queued receives are matched later, by whichever call takes them:
	// only host memory (no device runtime to consult on another thread)
	// and a receive CQ whose gate counts them.
	rx := uint32(0)
	if e.enabled && e.rxCQ != nil && e.rxCQ.gate.m != nil && !e.hmemOn && e.rxFlags&(fi.PEEK|fi.CLAIM) == 0 &&
		e.cfg().FastRecv {
		rx = 1
	}
	if f.rxOn != rx {
		atomic.StoreUint32(&f.rxOn, rx)
	}
	e.canArm = rx == 1 && e.armable()
	e.canRearm = e.canArm && e.cfg().RearmRecv
}

// takeQueued posts the receives C queued, in order (e locked). Every
// path that matches or inspects the receive queues calls it first, so a
// queued receive is never overtaken by a later post or by a poll.
func (e *Endpoint) takeQueued() {
	f := e.fast
	if f == nil {
		return
	}
	tail := atomic.LoadUint64(&f.rxTail)
	head := f.rxHead
	if head == tail {
		return
	}
	for i := head; i != tail; i++ {
		e.postQueued(&f.rxq[i%FastRecvs])
	}
	atomic.StoreUint64(&f.rxHead, tail)
	if e.rxCQ != nil && e.rxCQ.gate.m != nil {
		atomic.AddInt32(&e.rxCQ.gate.m.posts, -int32(tail-head))
	}
}

// postQueued posts a receive C took (queued, or armed by C) through
// recvLocked (e locked).
func (e *Endpoint) postQueued(q *queuedRecv) {
	// One Op, rewritten per entry: only its first buffer and the fields
	// below are ever set, so nothing else needs clearing.
	op := &e.queuedOp
	// C memory and the application's pointers, never Go's.
	op.Tagged, op.Addr, op.Tag, op.Ignore = q.kind&QueuedTagged != 0, q.src, q.tag, q.ignore
	op.Ctx = *(*unsafe.Pointer)(unsafe.Pointer(&q.ctx))
	op.N, op.IovBuf[0], op.MRs[0] = 0, Buf{}, nil
	if q.kind&QueuedIov != 0 {
		op.N = 1
		op.IovBuf[0] = Buf{Ptr: *(*unsafe.Pointer)(unsafe.Pointer(&q.buf)), Len: q.len}
		if q.desc != 0 && e.mrOf != nil {
			op.MRs[0] = e.mrOf(q.desc)
		}
	}
	if err := e.recvLocked(op); err != nil {
		// C takes only what posting accepts; say so if that broke.
		logging.Warnf(logging.EPData, "queued receive dropped: %v", err)
	}
}

// stopQueue stops C queueing receives and waits out a poster in progress
// (e locked); what it queued is then taken.
func (e *Endpoint) stopQueue() {
	f := e.fast
	if f == nil {
		return
	}
	atomic.StoreUint32(&f.rxOn, 0)
	for !atomic.CompareAndSwapUint32(&f.rxLock, 0, 1) {
		// A poster holds it for a few stores.
	}
	atomic.StoreUint32(&f.rxLock, 0)
	e.takeQueued()
}

// publishFast lets C send to addr over shm once Go has a route (e locked).
func (e *Endpoint) publishFast(addr uint64, rt *route) {
	if e.fast == nil || addr >= FastPeers || rt.shm == nil {
		return
	}
	if s := rt.shm.TxSlot(); s != nil {
		atomic.StoreUintptr(&e.fast.peer[addr], uintptr(unsafe.Pointer(s)))
	}
}

// unpublishFast stops C sending to addr (e locked). A C send that loaded
// the slot before may still complete: the peer's ring stays mapped.
func (e *Endpoint) unpublishFast(addr uint64) {
	if e.fast != nil && addr < FastPeers && atomic.LoadUintptr(&e.fast.peer[addr]) != 0 {
		atomic.StoreUintptr(&e.fast.peer[addr], 0)
	}
}

// closeFast stops the C fast path before the shm core goes away (e.guard
// held).
func (e *Endpoint) closeFast() {
	if e.fast == nil {
		return
	}
	atomic.StoreUint32(&e.fast.on, 0)
	for i := range e.fast.peer {
		if e.fast.peer[i] != 0 {
			atomic.StoreUintptr(&e.fast.peer[i], 0)
		}
	}
}
