// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only

package ofi

import (
	"fmt"
	"runtime"
	"unsafe"
)

// Operation slot kinds. Slot i of t.ops is the Go state of C operation i;
// the core's context for a completion (ctx[0] or ctx[1] of the C op) maps
// back to (i, sub).
const (
	kFree   uint8 = iota
	kBounce       // pre-posted control receive (slots below RecvPool)
	kEager        // eager send: sub 0
	kRndv         // rendezvous send: RTS on sub 0, data on sub 1
	kPull         // rendezvous receive: data on sub 0, CTS on sub 1
	kCtl          // control message (CTS of a Discard, PING): sub 0
	kTE           // receive of one peer's tagged eager messages (tp_tagged.go): sub 0
	kRMA          // native one-sided write or read (tp_rma.go): sub 0
)

// Phases of the logical operation.
const (
	phIdle    uint8 = iota
	phWaitCTS       // kRndv: waiting for the receiver's CTS
	phData          // kRndv: data send posted or queued
	phPull          // kPull: waiting for the data
	phDone          // reported; the slot is freed when nothing is pending
)

type op struct {
	kind    uint8
	phase   uint8
	pending uint8 // bit s: a core operation on ctx[s] is outstanding
	queued  uint8 // bit s: the post of ctx[s] waits in the retry queue
	pinned  bool
	user    bool // counts against userMax
	gen     uint32
	peer    *Peer
	sendID  uint64
	size    uint64 // kRndv: message size; kPull: bytes requested
	niov    int    // user pieces in iov[1:]
	dn      int    // kRndv: pieces of the data send (after trimming)
	hlen    int    // bytes of the header (and inline payload) in iov[0]
	rtag    uint64
	rv      *Rendezvous
	err     error // first failure, reported when the op finishes
	heap    unsafe.Pointer
	cancel  int64 // kPull: when the receive was cancelled (0: not)
	probe   bool  // kCtl: a liveness probe
	read    bool  // kPull: reads the data (RMA) from raddr/rkey; kRMA: a read
	split   bool  // kPull: receives a split message's data (no CTS)
	raddr   uint64
	rkey    uint64
	reg     *sendReg // kRndv: our registration of the data, released with the op
	round   uint32
	pin     runtime.Pinner

	// kBounce: the parsed arrival waiting for delivery.
	rx rxInfo
}

type rxInfo struct {
	kind   uint8
	peer   *Peer
	hdr    Hdr
	size   uint64
	cookie uint64
	plen   int    // eager payload bytes after the header
	raddr  uint64 // RTS-read: where the data is, and its key
	rkey   uint64
	rtag   uint64 // split: the data's tag
}

func (o *op) unpin() {
	if o.pinned {
		o.pin.Unpin()
		o.pinned = false
	}
}

// pinBuf pins b (a no-op for C memory) so that its address may sit in C
// memory until the core is done with it.
func (o *op) pinBuf(b []byte) unsafe.Pointer {
	p := unsafe.Pointer(unsafe.SliceData(b))
	o.pin.Pin(p)
	o.pinned = true
	return p
}

// alloc takes a free slot, or returns -1.
func (t *Transport) alloc(kind uint8, user bool) int32 {
	if user && t.userOps >= t.userMax {
		return -1
	}
	n := len(t.free)
	if n == 0 {
		return -1
	}
	idx := t.free[n-1]
	t.free = t.free[:n-1]
	o := &t.ops[idx]
	o.kind = kind
	o.phase = phIdle
	o.gen++
	o.user = user
	if user {
		t.userOps++
	}
	return idx
}

// release returns a slot whose logical operation is over; if core
// operations are still outstanding it is freed when they complete.
func (t *Transport) release(idx uint32) {
	o := &t.ops[idx]
	o.phase = phDone
	o.unpin()
	t.closeMR(o)
	if o.peer != nil {
		t.unwait(o.peer)
		o.peer = nil
	}
	if o.pending != 0 || o.queued != 0 {
		return
	}
	t.freeSlot(idx)
}

func (t *Transport) freeSlot(idx uint32) {
	o := &t.ops[idx]
	if o.kind == kFree || o.kind == kBounce {
		return
	}
	if o.user {
		t.userOps--
	}
	cfree(o.heap)
	gen := o.gen
	*o = op{gen: gen}
	t.free = append(t.free, int32(idx))
}

// coreDone clears the pending bit of (idx, sub) and frees the slot if the
// logical operation is already over.
func (t *Transport) coreDone(idx uint32, sub int) {
	o := &t.ops[idx]
	o.pending &^= 1 << sub
	if o.phase == phDone && o.pending == 0 && o.queued == 0 {
		t.freeSlot(idx)
	}
}

// wait / unwait count the operations outstanding with a peer; peers with
// any are checked for liveness.
func (t *Transport) wait(p *Peer) {
	if p.waiting == 0 {
		p.busyIdx = len(t.busy)
		t.busy = append(t.busy, p)
		if p.lastHeard < t.now {
			p.lastHeard = t.now // the clock starts with the first wait
		}
	}
	p.waiting++
}

func (t *Transport) unwait(p *Peer) {
	p.waiting--
	if p.waiting > 0 {
		return
	}
	p.waiting = 0
	i := p.busyIdx
	if i >= 0 && i < len(t.busy) && t.busy[i] == p {
		last := len(t.busy) - 1
		t.busy[i] = t.busy[last]
		t.busy[i].busyIdx = i
		t.busy[last] = nil
		t.busy = t.busy[:last]
	}
	p.busyIdx = -1
}

// post issues the core operation of (idx, sub). It returns 0, -FI_EAGAIN
// or another negative fi_errno.
func (t *Transport) post(idx uint32, sub int) int {
	o := &t.ops[idx]
	switch o.kind {
	case kBounce:
		return t.k.recv(idx, unsafe.Add(t.bounce, int(idx)*t.bufSize), t.bufSize)
	case kTE:
		return t.k.trecvAny(idx, o.heap, t.cfg.SplitMax, o.peer.fiAddr, teClass, teIgnore)
	case kEager, kCtl:
		return t.k.sendv(idx, 0, 0, 1+o.niov, o.peer.fiAddr)
	case kRndv:
		if sub == 0 {
			return t.k.sendv(idx, 0, 0, 1, o.peer.fiAddr)
		}
		return t.k.tsendv(idx, 1, 1, o.dn, o.peer.fiAddr, o.rtag)
	case kRMA:
		return t.postRMA(o, idx)
	case kPull:
		if sub == 0 && o.read {
			return t.k.readv(idx, 0, 1, o.niov, o.peer.fiAddr, o.raddr, o.rkey)
		}
		if sub == 0 {
			return t.k.trecvv(idx, 0, 1, o.niov, o.peer.fiAddr, o.rtag)
		}
		return t.k.sendv(idx, 1, 0, 1, o.peer.fiAddr)
	}
	return -cEINVAL
}

// postOrQueue posts an internal operation, or queues it when the core
// refuses with -FI_EAGAIN. Posts of one op stay in order (a pull's receive
// goes before its CTS); posts of different ops do not wait for each other,
// so a peer that cannot be reached holds up nothing but its own traffic.
func (t *Transport) postOrQueue(idx uint32, sub int) {
	o := &t.ops[idx]
	if o.queued == 0 && !t.inRetry {
		ret := t.post(idx, sub)
		if ret == 0 {
			o.pending |= 1 << sub
			return
		}
		if ret != cEAGAIN {
			t.postFailed(idx, sub, ret)
			return
		}
	}
	o.queued |= 1 << sub
	e := retryEnt{idx: int32(idx), sub: uint8(sub), gen: o.gen}
	if t.inRetry {
		t.retryNew = append(t.retryNew, e)
	} else {
		t.retry = append(t.retry, e)
	}
}

// runRetry retries queued posts.
func (t *Transport) runRetry() {
	t.inRetry = true
	t.round++
	q := t.retry
	keep := q[:0]
	for _, e := range q {
		o := &t.ops[e.idx]
		bit := uint8(1) << e.sub
		if o.gen != e.gen || o.queued&bit == 0 {
			continue
		}
		if o.kind != kBounce && (o.phase == phDone || o.peer == nil || o.peer.dead) {
			// Given up meanwhile (the op finished, or its peer is gone).
			o.queued &^= bit
			if o.kind == kTE {
				t.dropTE(uint32(e.idx))
			}
			t.maybeFree(uint32(e.idx))
			continue
		}
		if o.round == t.round {
			keep = append(keep, e) // an earlier post of this op still waits
			continue
		}
		ret := t.post(uint32(e.idx), int(e.sub))
		if ret == cEAGAIN {
			o.round = t.round
			keep = append(keep, e)
			continue
		}
		o.queued &^= bit
		if ret == 0 {
			o.pending |= bit
		} else {
			t.postFailed(uint32(e.idx), int(e.sub), ret)
		}
	}
	clear(q[len(keep):])
	t.retry = append(keep, t.retryNew...)
	clear(t.retryNew)
	t.retryNew = t.retryNew[:0]
	t.inRetry = false
}

func (t *Transport) maybeFree(idx uint32) {
	if o := &t.ops[idx]; o.phase == phDone && o.pending == 0 && o.queued == 0 {
		t.freeSlot(idx)
	}
}

// postFailed handles a post that the core rejected for good (the pending
// and queued bits of (idx, sub) are clear).
func (t *Transport) postFailed(idx uint32, sub int, ret int) {
	o := &t.ops[idx]
	err := coreErr("core post", ret, 0)
	switch o.kind {
	case kBounce:
		// The buffer stays out of the pool.
		t.stats.CoreErrors++
		t.report(0, fmt.Errorf("control receive buffer %d lost: %w", idx, err))
	case kTE:
		t.stats.CoreErrors++
		t.report(o.peer.id, fmt.Errorf("tagged eager receive lost: %w", err))
		t.dropTE(idx)
	case kRndv, kRMA:
		t.finishSend(idx, err)
	case kPull:
		if sub == 0 && o.phase == phPull {
			// No receive posted: fail the pull, tell the sender.
			rv, p := o.rv, o.peer
			t.finishPull(idx, 0, err)
			t.sendCTS(p, rv.cookie, ctsReject, 0, 0)
		} else if o.phase == phPull {
			o.err = err
			t.cancelPull(idx)
		} else {
			t.maybeFree(idx)
		}
	default:
		t.release(idx)
	}
}

func (t *Transport) report(src uint64, err error) {
	if t.cfg.OnError != nil {
		t.cfg.OnError(src, err)
	}
}
