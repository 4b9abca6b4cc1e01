// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only

package lnx

import (
	"errors"
	"time"
	"unsafe"

	"github.com/lnx-go/lnx-go/internal/fi"
	"github.com/lnx-go/lnx-go/lnx/logging"
	"github.com/lnx-go/lnx-go/peers/ofi"
)

// Native one-sided operations. Toward a network peer, a write or read of
// host memory goes as the network core's own RMA (fi_writev/fi_readv on
// the core endpoint) once the initiator knows the core key under which
// the target registered the MR with that core. lnx's key stays the only
// key the application sees, valid on every core: the target keeps its
// per-core registrations in its MR map (MR.core), and the initiator
// learns the core key of a (network peer, lnx key) once, then caches it:
//
//   - The first request of any kind to a (peer, key) the initiator knows
//     nothing about carries rfWantKey; it is executed by the target as
//     always. The target answers rfWantKey, before the request's own
//     answer and on the same connection, with an rmaKeyInfo message: the
//     core key of the MR on the core that carried the request, the MR's
//     base address and length, and which of FI_REMOTE_WRITE and
//     FI_REMOTE_READ the initiator may carry natively (none for device
//     memory, MRs of several pieces, FI_RMA_EVENT MRs, or access the
//     target must count: an endpoint with a remote-write or remote-read
//     counter bound).
//   - Later writes and reads to that key check the range against the
//     cached MR bounds (a range outside goes the target-executed way,
//     which reports the error) and go on the core. Their completion is
//     the core's; the initiator's CQ entry and counter come from it.
//   - A native operation that fails forgets the entry (the target may
//     have closed the MR; the next operation asks again).
//
// A target MR whose core key was handed out keeps no idle core
// registration when it closes (the cache drops it), so a stale cached
// key no longer opens the memory at the core. Closing it also sends each
// initiator that learnt the key an rmaRevoke on the connection the key
// went on, so an operation posted after that arrives asks the target
// again and is refused (FI_EKEYREJECTED) rather than meeting the stale
// core key, which tcp;ofi_rxm answers by dropping the connection. An
// operation racing the close can still meet it.
//
// On the peer path the application's messages to that initiator go on the
// peer core, beside the side transport that carries the revoke, and the
// two connections keep no order between them: "the MR is closed", sent
// after fi_close, could be read before the revoke. So there the revoke
// asks for an answer (rfAck), which the initiator sends once it forgot the
// key, and the target holds its messages to that initiator until the
// answers came (revokeHeld: Go's send says -FI_EAGAIN, C's is not
// offered the peer), the peer is gone, or the peer timeout passed (an
// initiator that does not answer, an older lnx). fi_close itself does not
// wait: an initiator that computes for a while delays only what is sent to
// it.
//
// Writes with remote CQ data whose data would not travel inline with a
// request go natively as well, as plain writes: once the core completed
// one (delivery complete, so the data is in place), the initiator sends
// the target an rmaNotify with the CQ data and length, and the target
// writes its remote entry from it, with the initiator's fi_addr as the
// source. The core's own remote CQ data is not used: tcp;ofi_rxm 1.17
// writes remote-write entries with no source and no length (and without
// FI_RMA), which lnx could not complete an application's entry from. The
// notice leaves before the initiator's completion is written, so on the
// adapter anything the application sends the target afterwards arrives
// after it; on the peer path the message takes the peer core, beside the
// notice's connection, and may overtake it (lnx promises no completion
// order, FI_ORDER_NONE, so no application may count on either). Smaller
// writes with data stay target-executed: their inline request gets the
// target's entry written half a round trip sooner than write-then-notify.
//
// Atomics, smaller writes with remote CQ data, device buffers on the
// initiator and every operation toward shm peers keep the
// target-executed path (rma.go). FI_LNX_NATIVE_RMA=0 turns the native
// path off.
//
// Open: native atomics. tcp;ofi_rxm executes a peer's atomic in the
// target's rxm progress (any call that reads the core CQ of the endpoint
// that received it, or posts on it), with plain read-modify-write code,
// not under lnx's domain key lock that serializes lnx's own executions.
// Within one lnx endpoint the two are already serialized (Go touches the
// transport and executes requests only under e.guard with nothing lent;
// C reads a lent core CQ only while Go does neither), but another
// endpoint of the same domain executing a shm peer's atomic on the same
// MR, or a second endpoint's rxm, is not: a native grant must be tied to
// one endpoint per domain, and the others' executions on its MRs run
// under that endpoint's lock (or stay off those MRs), before atomics may
// go natively.

// rmaKeyInfo is the kind of a target's key message (rmaHdr: key is lnx's
// key, data the core key, addr and len the MR bounds, count the access
// the initiator may carry natively).
const rmaKeyInfo = 5

// rmaRevoke is the kind of a target's message that a key it handed out
// is gone (rmaHdr: key is lnx's key), sent when the MR closes.
const rmaRevoke = 7

// rmaRevokeAck is the kind of an initiator's answer to an rmaRevoke that
// asked for one (rfAck): it forgot the key (rmaHdr: key is lnx's key).
const rmaRevokeAck = 8

// rfAck (rmaRevoke flag): answer with rmaRevokeAck.
const rfAck = 1 << 5

// revokeWait is a network peer's revokes that wait for its answers, and
// when the first of them went (time since e.t0).
type revokeWait struct {
	n     int
	since time.Duration
}

// keyLearner is a network peer that learnt a core key of an MR, and the
// endpoint that told it.
type keyLearner struct {
	e *Endpoint
	p rmaPeer
}

// rmaNotify is the kind of the message that follows a native write with
// remote CQ data once the core completed it (rmaHdr: key is lnx's key,
// addr the target address, len the bytes written, data the CQ data): the
// target writes the remote completion from it.
const rmaNotify = 6

// rfWantKey (request flag): the initiator wants the target's core key.
const rfWantKey = 1 << 4

type natKey struct {
	peer *ofi.Peer
	key  uint64
}

type natEnt struct {
	coreKey, base, len, allow uint64
}

// natOp is a native operation in flight, by its transport send id.
type natOp struct {
	id    uint64 // the rmaOp
	k     natKey
	retry *RMAOp // the operation again, should the core fail it
	flags uint64
	// notify: a write with remote CQ data, whose rmaNotify goes once
	// the core completed it.
	notify *rmaHdr
}

// nativeOK reports whether op may go natively toward p at all. A write
// with remote CQ data goes natively only where the target-executed path
// would move its data as a bulk message: the target's completion comes
// from an rmaNotify sent after the core's completion, half a round trip
// later than an inline request's (see the header comment).
func (e *Endpoint) nativeOK(op *RMAOp, p rmaPeer, flags uint64, dev bool) bool {
	if p.net == nil || op.Atomic || dev || op.length() == 0 || !e.Domain.cfg.NativeRMA {
		return false
	}
	return flags&fi.REMOTE_CQ_DATA == 0 || (!op.Read && rmaHdrLen+op.length() > p.eagerMax())
}

// rmaNative posts op natively if the initiator knows the target's core
// key; want is true when the request should ask for it instead.
func (e *Endpoint) rmaNative(op *RMAOp, p rmaPeer, o *rmaOp, flags uint64) (posted, want bool, err error) {
	s := e.rma
	k := natKey{p.net, op.Key}
	ent, ok := s.keys[k]
	if !ok {
		if s.asked[k] {
			return false, false, nil
		}
		return false, true, nil
	}
	if s.slow[p.net] > 0 || len(s.out) > 0 {
		// Earlier operations to this target are still on their way
		// through lnx's messaging: this one must not overtake them.
		return false, false, nil
	}
	write, read, virt := p.t.CanRMA()
	need := fi.REMOTE_WRITE
	if op.Read {
		need = fi.REMOTE_READ
	}
	if ent.allow&need == 0 || (op.Read && !read) || (!op.Read && !write) {
		return false, false, nil
	}
	size := op.length()
	off := op.RAddr
	if e.Domain.Info.Domain.MRMode&fi.MR_VIRT_ADDR != 0 {
		if off < ent.base {
			return false, false, nil
		}
		off -= ent.base
	}
	if off > ent.len || size > ent.len-off {
		return false, false, nil // the target reports the error
	}
	raddr := off
	if virt {
		raddr = ent.base + off
	}
	iov := make([][]byte, 0, op.N)
	var mrs []*ofi.MR
	if op.Inject {
		o.keep = make([]byte, size)
		gatherHost(o.keep, op.Iov())
		iov = append(iov, o.keep)
	} else {
		for i, b := range op.Iov() {
			iov = append(iov, b.bytes())
			if op.MRs[i] != nil {
				if mrs == nil {
					mrs = make([]*ofi.MR, op.N)
				}
				mrs[i] = op.MRs[i].coreMR(p.ti)
			}
		}
	}
	e.nextSend++
	sid := e.nextSend
	s.next++
	id := s.next
	if err := p.t.RMA(p.net, !op.Read, iov, mrs, raddr, ent.coreKey, sid); err != nil {
		if errors.Is(err, ofi.ErrAgain) {
			return false, false, fi.EAGAIN
		}
		logging.Debugf(logging.EPData, "native one-sided operation not posted (%v): the target executes it", err)
		return false, false, nil
	}
	o.peer, o.native = p, true
	p.t.Watch(p.net)
	s.ops[id] = o
	// Kept to go again the target-executed way should the core fail it
	// (a core key gone stale: the target re-registered the key); inject
	// data from the copy.
	again := *op
	if op.Inject {
		again.IovBuf[0], again.N = Buf{Ptr: unsafe.Pointer(unsafe.SliceData(o.keep)), Len: size}, 1
		again.MRs = [MaxIov]*MR{}
	}
	n := natOp{id: id, k: k, retry: &again, flags: flags}
	if flags&fi.REMOTE_CQ_DATA != 0 {
		n.notify = &rmaHdr{kind: rmaNotify, flags: rfCQData, key: op.Key, addr: op.RAddr, len: size, data: op.Data}
	}
	s.native[sid] = n
	st := &e.stats[kindNet]
	if op.Read {
		st.rmaReads++
	} else {
		st.rmaWrites++
	}
	st.rmaNative++
	st.rmaBytes += size
	e.netBusy()
	return true, false, nil
}

// rmaNativeDone completes a native operation (onSendDone's ids).
func (e *Endpoint) rmaNativeDone(sid uint64, err error) bool {
	s := e.rma
	if s == nil {
		return false
	}
	n, ok := s.native[sid]
	if !ok {
		return false
	}
	delete(s.native, sid)
	if err != nil {
		delete(s.keys, n.k)
		delete(s.asked, n.k)
		if o := s.ops[n.id]; o != nil && n.retry != nil && !n.k.peer.Gone() {
			// The target executes it instead, and reports what is
			// wrong with it, if anything.
			logging.Debugf(logging.EPData, "native one-sided operation failed (%v): the target executes it", err)
			var kinds [MaxIov]memKind
			if e.rmaStart(n.retry, n.flags, n.retry.length(), false, &kinds, nil, true) == nil {
				delete(s.ops, n.id)
				o.peer.t.Unwatch(o.peer.net)
				return true
			}
		}
	}
	if err == nil && n.notify != nil {
		if o := s.ops[n.id]; o != nil {
			// The data is in place at the target (the core's write
			// is delivery complete): its remote completion may be
			// written now. It leaves before the initiator's own
			// completion, so that on the adapter anything the
			// application sends the target after that completion
			// arrives after it.
			e.rmaSendHdr(o.peer, n.notify, nil)
		}
	}
	e.rmaDone(n.id, codeOf(err))
	return true
}

// rmaNotified writes the remote completion of a native write with remote
// CQ data (target side).
func (e *Endpoint) rmaNotified(src uint64, h *rmaHdr) {
	if h.flags&rfCQData == 0 {
		return
	}
	e.rmaRemoteEvent(src, h, fi.REMOTE_WRITE)
}

// rmaSendKeyInfo tells an initiator on the network how the core that
// carried its request knows the MR of key h.key (target side).
func (e *Endpoint) rmaSendKeyInfo(p rmaPeer, key uint64) {
	i := rmaHdr{kind: rmaKeyInfo, key: key}
	d := e.Domain
	d.keys.mu.Lock()
	m := d.keys.remote[key]
	// Only keys lnx picks (FI_MR_PROV_KEY), which it never reuses: an
	// application's requested key may come back on other memory, and a
	// core key gone stale is worse than refused by tcp;ofi_rxm, which
	// drops the connection over it ("invalid rma iov").
	if m != nil && d.provKey() && !m.closed.Load() && !m.IsDevice() && m.segs == nil && !m.rmaEvent && m.len > 0 {
		if r := m.coreMR(p.ti); r != nil {
			i.data, i.addr, i.len = r.Key(), uint64(m.base), m.len
			i.count = m.Access & remoteAccess
			if e.cntrs[fi.REMOTE_WRITE] != nil {
				i.count &^= fi.REMOTE_WRITE
			}
			if e.cntrs[fi.REMOTE_READ] != nil {
				i.count &^= fi.REMOTE_READ
			}
			if i.count != 0 {
				m.core.exported.Store(true)
				e.rmaExported = true
				known := false
				for _, l := range m.learners {
					if l.e == e && l.p.net == p.net {
						known = true
						break
					}
				}
				if !known {
					m.learners = append(m.learners, keyLearner{e: e, p: p})
				}
			}
		}
	}
	d.keys.mu.Unlock()
	e.rmaSendHdr(p, &i, nil)
}

// rmaRevoke tells p that the MR of lnx key key, whose core key it learnt
// from e, is closed (target side; MR.Close, with no endpoint locked). It
// goes on the connection the key message went on, ahead of whatever the
// application sends p after closing the MR.
func (e *Endpoint) rmaRevoke(p rmaPeer, key uint64) {
	e.lock()
	defer e.unlock()
	if e.closed || !e.enabled || p.net == nil || p.net.Gone() {
		return
	}
	defer e.kickIfBusy()
	s := e.rmaS()
	h := rmaHdr{kind: rmaRevoke, key: key}
	if e.peer != nil {
		// The application's messages to p go on the peer core: they
		// wait until p answers (see the header comment).
		h.flags = rfAck
		w := s.revoking[p.net]
		if w == nil {
			w = &revokeWait{since: time.Since(e.t0)}
			s.revoking[p.net] = w
			e.peer.hold(p.net)
		}
		w.n++
	}
	e.rmaSendHdr(p, &h, nil)
}

// revokeHeld reports whether the application's messages to network peer
// p wait for its answers to revokes (target side, e locked), and stops
// waiting for a peer gone or silent for the peer timeout.
func (e *Endpoint) revokeHeld(p *ofi.Peer) bool {
	w := e.rma.revoking[p]
	switch {
	case w == nil:
		return false
	case p.Gone():
		// Its sends fail (peerCore.goneTo).
	case time.Since(e.t0)-w.since > e.Domain.cfg.PeerTimeout:
		logging.Warnf(logging.EPData, "network peer did not answer %d one-sided key revocations within %v: sending to it again (an initiator that still uses the keys may meet the closed registrations)",
			w.n, e.Domain.cfg.PeerTimeout)
	default:
		return true
	}
	e.revokeRelease(p)
	return false
}

// rmaRevokeAcked counts an initiator's answer to a revoke (target side).
func (e *Endpoint) rmaRevokeAcked(p rmaPeer) {
	w := e.rma.revoking[p.net]
	if w == nil || p.net == nil {
		return
	}
	if w.n--; w.n <= 0 {
		e.revokeRelease(p.net)
	}
}

// revokeRelease lets the application's messages to p go again.
func (e *Endpoint) revokeRelease(p *ofi.Peer) {
	delete(e.rma.revoking, p)
	if e.peer == nil {
		return
	}
	for addr, rt := range e.routes {
		if rt.peer && rt.net == p {
			e.peer.publish(addr, rt)
		}
	}
}

// rmaForgetKey drops a cached core key its target revoked (initiator
// side): the next operation with the key asks the target again, which
// refuses it.
func (e *Endpoint) rmaForgetKey(p rmaPeer, h *rmaHdr) {
	if p.net == nil {
		return
	}
	k := natKey{p.net, h.key}
	delete(e.rma.keys, k)
	delete(e.rma.asked, k)
	logging.Debugf(logging.EPData, "one-sided key %#x at network peer revoked", h.key)
	if h.flags&rfAck != 0 {
		e.rmaSendHdr(p, &rmaHdr{kind: rmaRevokeAck, key: h.key}, nil)
	}
}

// rmaLearnKey caches a target's key message (initiator side).
func (e *Endpoint) rmaLearnKey(p rmaPeer, h *rmaHdr) {
	if p.net == nil {
		return
	}
	k := natKey{p.net, h.key}
	e.rma.keys[k] = natEnt{coreKey: h.data, base: h.addr, len: h.len, allow: h.count}
	logging.Debugf(logging.EPData, "one-sided key %#x at network peer: core key %#x, %d bytes at %#x, native access %#x",
		h.key, h.data, h.len, h.addr, h.count)
	delete(e.rma.asked, k)
}
