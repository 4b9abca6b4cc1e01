// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only

package lnx

import (
	"sync/atomic"
	"unsafe"

	"github.com/lnx-go/lnx-go/internal/fi"
	"github.com/lnx-go/lnx-go/peers"
)

// An armed receive lets C complete a message without entering Go. The
// queue of receives (fast.go) took the call into Go off the posting side;
// this takes it off the arriving side, for the case a ping-pong lives in:
// the endpoint has one posted receive, nothing unexpected, and no
// operation of its own in flight. Go then lends C its inbound rings and
// that receive (struct lnx_arm), and fi_cq_read checks the rings in C: an
// eager record the receive takes is copied, consumed and completed there,
// and an shm rendezvous record it takes whole is pulled (one
// process_vm_readv) and acknowledged there (lnx_arm_rndv; a rendezvous
// record no receive takes yet may wait in its ring for one). Anything
// else (another record, a second message, a mismatch) makes the
// read enter Go, and every entry into Go for the endpoint takes the rings
// back first (disarm), so Go's view of the rings and queues is whole
// whenever it runs. Go arms again at the end of a progress call when the
// case holds.
//
// A quiet network core is still polled on Go's clock (C lets a read into
// Go every gateSkipNet idle answers). A busy one, which progress would
// poll on every call, is lent too (netCore.lend, ofi.Transport.Lend): C reads
// its CQ after the rings (the order Go polls them in), completes the
// receive with the next eager message of one peer, and sends that peer
// its smallest messages (fast send); what C read and did not take waits
// for Go's next Poll.
//
// armMem mirrors struct lnx_arm and armRing struct lnx_arm_ring
// (capi/include/lnx_capi.h; generated, cabi_gen.go); pointers are stored
// as uintptr (see gateMem). net is the lent transport's C state
// (ofi.Transport.Lend), or 0.

// armable tells refreshFast whether an endpoint that may queue receives
// in C may also arm one: what C's completion leaves out (a receive
// counter, default receive flags other than FI_COMPLETION) must not be
// needed. FI_COMPLETION alone is what Open MPI sets, with selective
// completion: every receive then completes, as C's do. C counts what it
// completes for the statistics (armMem.doneMsgs).
func (e *Endpoint) armable() bool {
	return e.someCoreLends() && e.cntrs[fi.RECV] == nil && e.rxFlags&^fi.COMPLETION == 0 && e.cfg().ArmRecv
}

// someCoreLends reports whether a core can be lent with an armed receive
// (shm, or a link's only network core).
func (e *Endpoint) someCoreLends() bool {
	for _, c := range e.cores {
		if c.canLend() {
			return true
		}
	}
	return false
}

// arm lends the rings and the endpoint's posted receives to C when the
// case holds (e locked, after progress). It reports whether it did; the
// caller then watches only the claim word (C watches the rings).
func (e *Endpoint) arm() bool {
	if !e.canArm || e.armed {
		return false
	}
	tq, uq := e.queue(true), e.queue(false)
	tp, tu, _ := tq.Stats()
	up, uu, _ := uq.Stats()
	tc, _ := tq.Claimed()
	uc, _ := uq.Claimed()
	// With none posted the cores are lent all the same if C may arm
	// receives: the next ones posted are armed in C (lnx_arm_post) instead
	// of queued for Go, and C sends over a lent network core. Not after a
	// large message, whose like C could not complete: a 32 KiB MPI
	// ping-pong lost 0.3-0.5 us a round trip to lending and taking back.
	rearm := e.canRearm && (!e.rxSel || e.rxFlags&fi.COMPLETION != 0)
	n := tp + up
	if n > ArmSlots || n == 0 && (!rearm || e.lastBig) || tu+uu+tc+uc != 0 {
		return false
	}
	// C's completions go ahead of Go's in fi_cq_read: arm only when the CQ
	// holds none of Go's, and has no other endpoint to watch.
	q := e.rxCQ
	q.mu.Lock()
	held := q.head != len(q.entries)
	alone := len(q.endpoints()) == 1
	errs := len(q.errs) != 0
	q.mu.Unlock()
	if held || errs || !alone {
		// Only completions of Go's stand in the way: the read under way
		// may return them all and arm then (armAfterCQRead).
		e.armAfterRead = held && alone
		return false
	}
	// Each queue in post order; C matches a message only against
	// receives of its own kind, so the two need no order between them.
	e.armRecs = tq.AppendPosted(uq.AppendPosted(e.armRecs[:0]))
	src := peers.AddrUnspec
	if n > 0 {
		src = e.armRecs[0].Src
	}
	for _, rec := range e.armRecs {
		r := rec.Ctx.(*recvCtx)
		if r.n > 1 || r.dev || r.multi != nil || (e.rxSel && r.flags&fi.COMPLETION == 0) {
			clear(e.armRecs)
			return false
		}
		if rec.Src != src {
			src = peers.AddrUnspec
		}
	}
	a := &e.fast.arm
	a.nrings = 0
	a.net, a.netSrc, a.pep = 0, fi.ADDR_NOTAVAIL, 0
	// Each core fills its part of a (the shm rings; the network core when
	// it must be read on every poll); if one cannot, those lent before it
	// are taken back.
	for i, c := range e.cores {
		var ok bool
		switch c := c.(type) {
		case *shmCore:
			ok = c.lend(a, src)
		case *netCore:
			ok = c.lend(a, src)
		default:
			ok = c.lend(a, src)
		}
		if !ok {
			for _, l := range e.cores[:i] {
				l.takeBack(nil)
			}
			clear(e.armRecs)
			return false
		}
	}
	// recvLocked already made each source AddrUnspec without
	// FI_DIRECTED_RECV, so C compares them as posted.
	for i, rec := range e.armRecs {
		r := rec.Ctx.(*recvCtx)
		s := &a.s[i]
		*s = armSlot{ctx: uintptr(r.ctx), src: rec.Src, tag: rec.Tag, ignore: rec.Ignore, goIndex: int32(i)}
		if rec.Queue() == tq {
			s.tagged = 1
		}
		if r.n > 0 {
			s.buf, s.len = uintptr(r.iov[0].Ptr), r.iov[0].Len
		}
		a.done[i], a.goDone[i] = 0, 0
	}
	a.head, a.tail, a.ngo = 0, uint64(n), uint32(n)
	// C may arm further receives itself unless their completion would
	// depend on flags fi_recv does not carry (selective completion, unless
	// FI_COMPLETION is among the default receive flags).
	a.rearm, a.directed = 0, 0
	if rearm {
		a.rearm = 1
	}
	if e.Info.Caps&fi.DIRECTED_RECV != 0 || e.Info.Caps == 0 {
		a.directed = 1
	}
	atomic.StoreUint32(&a.lent, 1)
	atomic.StoreUintptr(&q.gate.m.arm, uintptr(unsafe.Pointer(a)))
	e.armed = true
	return true
}

// disarm takes the rings back from C (e locked; see lock). The receives
// C completed leave the posted queues here, and those C armed and left
// pending join them, behind the rest.
func (e *Endpoint) disarm() {
	if !e.armed {
		return
	}
	e.armed = false
	// The gates published their watches for the armed endpoint, whose
	// rings C read itself: they watch none of them. Until a read enters Go
	// to arm again or watch the rings, C would answer idle over records
	// waiting there (after a send that entered Go, for as long as the
	// gate's clock: in a bidirectional window of injected messages the
	// reads then idled for up to 1 ms at a time).
	e.openGates()
	a := &e.fast.arm
	for !atomic.CompareAndSwapUint32(&a.lock, 0, 1) {
		// A C reader holds it while it takes a few records.
	}
	atomic.StoreUint32(&a.lent, 0)
	// C memory and the application's pointers, never Go's.
	pend := e.armPend[:0]
	for p := a.head; p != a.tail; p++ {
		i := p & (ArmSlots - 1)
		if s := &a.s[i]; a.done[i] == 0 && s.goIndex < 0 {
			qr := queuedRecv{buf: s.buf, len: s.len, desc: s.desc, ctx: s.ctx, src: s.src, tag: s.tag,
				ignore: s.ignore, kind: QueuedIov}
			if s.tagged != 0 {
				qr.kind |= QueuedTagged
			}
			pend = append(pend, qr)
		}
	}
	heads := e.armHeads[:a.nrings]
	for i := range heads {
		heads[i] = a.r[i].head
		e.armAcks[i] = a.r[i].ackTail
	}
	a.net, a.pep = 0, 0
	e.armNTx = copy(e.armTx[:], a.tx[:min(a.ntx, ArmTx)])
	e.stats[kindShm].txRndvByC += a.txRndv
	a.ntx, a.txRndv = 0, 0
	for k := range a.doneMsgs {
		e.stats[k].rxMsgs += a.doneMsgs[k]
		e.stats[k].rxBytes += a.doneBytes[k]
		e.stats[k].rxByC += a.doneMsgs[k]
		a.doneMsgs[k], a.doneBytes[k] = 0, 0
	}
	e.stats[kindShm].rxRndvByC += a.pulls
	a.pulls = 0
	atomic.StoreUint32(&a.lock, 0)
	for _, c := range e.cores {
		switch c := c.(type) {
		case *shmCore:
			c.takeBack(heads)
		case *netCore:
			c.takeBack(heads)
		default:
			c.takeBack(heads)
		}
	}
	// lent is 0: C writes none of a any more.
	for i, rec := range e.armRecs[:a.ngo] {
		if a.goDone[i] != 0 {
			r := rec.Ctx.(*recvCtx)
			rec.Queue().Unpost(rec)
			e.putRecv(r)
		}
	}
	clear(e.armRecs)
	e.armRecs = e.armRecs[:0]
	// Posted after every receive still in Go's queues, before any C
	// queued (takeQueued runs after this).
	for i := range pend {
		e.postQueued(&pend[i])
	}
	e.armPend = pend[:0]
	// Messages a lent peer core left to Go meet the queues as they are
	// now, as they would have on arrival.
	if e.peer != nil && e.peer.adoptDue {
		e.peer.adopt()
	}
}

// openGates makes the next read of the endpoint's CQs enter Go (e locked).
// Unlike kick it leaves the gates' kick count alone: the read under way,
// if this is one, publishes its own watches at its end and closes them.
func (e *Endpoint) openGates() {
	for _, q := range [2]*CQ{e.rxCQ, e.txCQ} {
		if q != nil && q.gate.m != nil {
			q.gate.setOpen()
		}
	}
}

// unhookArm stops the receive CQ's C side from reading this endpoint's
// arm before its memory goes (e locked, disarmed); the CQ's detach then
// waits out readers.
func (e *Endpoint) unhookArm() {
	if e.fast == nil || e.rxCQ == nil || e.rxCQ.gate.m == nil {
		return
	}
	m := e.rxCQ.gate.m
	if atomic.LoadUintptr(&m.arm) == uintptr(unsafe.Pointer(&e.fast.arm)) {
		atomic.StoreUintptr(&m.arm, 0)
	}
}

// netHotNow reports whether progress polls the network cores on every
// call (recent network activity; see progressLocked). Only network paths
// make netHot non-zero (netBusy).
func (e *Endpoint) netHotNow() bool { return e.netHot > 0 }

// armAfterCQRead arms the endpoint once the CQ read that drove its progress
// has returned the completions that kept it from arming (q is that CQ,
// e's receive CQ and its only endpoint's), and republishes the gate:
// otherwise the next receive posted would be queued for Go and the read
// after it enter Go as well. w is that read's watch set, done with and
// refilled here (keeping its kicks): the cores' watch methods are
// interface calls, so a watch set of armAfterCQRead's own would be
// allocated on every call.
func (e *Endpoint) armAfterCQRead(q *CQ, w *watchSet) {
	e.lockToArm()
	defer e.unlock()
	if !e.enabled || e.rxCQ != q || e.needsLocalPoll() || !e.arm() {
		return
	}
	w.reset()
	e.watchPaced(w)
	e.watchArmed(w)
	q.mu.Lock()
	q.gate.publish(w)
	q.mu.Unlock()
}

// watchArmed adds to w what C's gate watches while the endpoint is armed
// (e locked): C reads the rings, and a lent network core, itself; a new
// ring still shows in the claim word. A lent peer-API core is read by C
// on every poll as well, so the gate gives it a lent core's clock, unless
// the endpoint does one-sided operations: the side transport that carries
// them is Go's to poll, on the paced cores' clock (a contended atomic
// waits for the target's Go). On that clock reads entered Go, taking the
// core back, 122,165 times in a 1-byte fi_bench run over libfabric's shm
// (1,073 on the lent clock), and added 60-90 ns to each small message.
func (e *Endpoint) watchArmed(w *watchSet) {
	a := &e.fast.arm
	oneSided := e.Info.Caps&oneSidedCaps != 0 || e.rmaExported
	w.lent = w.lent || a.net != 0 || (a.pep != 0 && !oneSided)
	for _, c := range e.cores {
		switch c := c.(type) {
		case *shmCore:
			c.armedWords(w)
		case *netCore:
			c.armedWords(w)
		default:
			c.armedWords(w)
		}
	}
}

// watchPaced tells the gate that the endpoint has a core polled on Go's
// cadence, so reads enter Go now and then even when nothing changes.
func (e *Endpoint) watchPaced(w *watchSet) {
	if e.local < len(e.cores) {
		w.net = true
		w.addDue(monoNs(e.t0.Add(e.netLast + e.netGap())))
	}
}
