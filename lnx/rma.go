// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only

package lnx

import (
	"encoding/binary"
	"errors"
	"unsafe"

	"github.com/lnx-go/lnx-go/hmem"
	"github.com/lnx-go/lnx-go/internal/fi"
	"github.com/lnx-go/lnx-go/lnx/logging"
	"github.com/lnx-go/lnx-go/peers/ofi"
	"github.com/lnx-go/lnx-go/shm"
)

// One-sided operations (FI_RMA, FI_ATOMIC) are executed by the target,
// over lnx's own messaging on whichever core reaches the peer, except
// writes and reads toward network peers that the core carries itself
// (rma_native.go): the
// initiator sends a request (an hdrRMA message whose payload starts with
// an rmaHdr), the target checks key, range and access against its MR
// table, performs the copy or the atomic under its domain's key lock
// (which serializes every one-sided operation the process executes, so
// atomics from any number of initiators are atomic), and answers; the
// initiator completes on the answer, which gives delivery-complete
// semantics for every operation.
//
// Small payloads travel inline with the request or the answer. Larger
// ones go as a second hdrRMA|hdrBulk message, which the core moves like
// any large message (CMA over shm, the network core's rendezvous): the
// write data from the initiator's buffer into the target's memory, the
// read data from the target's memory into the initiator's buffer. A
// bulk message carries the operation id in Tag and its role in Data.
//
// Progress is manual on both sides: the target executes requests when the
// application drives its endpoint (fi_cq_read, fi_cntr_read, ...).
//
// Requests and bulk messages to one peer use one core connection (the
// shm ring, or a network peer's first rail) without PER_MSG sequencing,
// so a write's data always follows its request.
//
// Device memory is never touched by the CPU, on either side: the device
// runtime copies it to or from host memory, and the cores only ever see
// host memory (as for messaging, devmem.go). The initiator copies write
// data and atomic operands from the device into a host buffer before
// sending, and lands read data and fetched values in host memory (the
// answer's inline data, or a staging buffer for bulk data) before the
// runtime copies them to the device. The target does the same with an MR
// of device memory: bulk write data is received into a staging buffer
// and copied in, read data is copied out into a staging buffer that the
// core sends from, and an atomic copies the target words to the host,
// applies the operation there and copies them back, all under the key
// lock. Such an atomic is therefore atomic against every other one-sided
// operation this process executes, not against device kernels writing
// the same words meanwhile (as with libfabric's shm provider, which
// stages device memory the same way).
const (
	hdrRMA  uint32 = 1 << 5 // a one-sided request or answer; not a message
	hdrBulk uint32 = 1 << 6 // with hdrRMA: the data of an operation
)

// rmaHdr kinds.
const (
	rmaWrite  = 1
	rmaRead   = 2
	rmaAtomic = 3
	rmaAnswer = 4
)

// request reports whether h asks the target to execute an operation
// (the other kinds answer one, or carry key news and notices).
func (h *rmaHdr) request() bool {
	return h.kind == rmaWrite || h.kind == rmaRead || h.kind == rmaAtomic
}

// rmaHdr flags.
const (
	rfCQData  = 1 << 0 // carries remote CQ data
	rfBulk    = 1 << 1 // the data follows as a bulk message
	rfFetch   = 1 << 2 // atomic: answer with the old values
	rfCompare = 1 << 3 // atomic: compare operands follow the operands
)

// Roles of a bulk message (its Data).
const (
	bulkWrite = 1 // write data, initiator to target
	bulkRead  = 2 // read data, target to initiator
)

// rmaHdrLen is the encoded size of an rmaHdr.
const rmaHdrLen = 56

// rmaHdr is the fixed part of every request and answer.
type rmaHdr struct {
	kind, op, dt, flags uint8
	status              int32 // answers: 0 or a positive fi_errno
	id                  uint64
	key                 uint64
	addr                uint64
	len                 uint64 // bytes addressed at the target
	data                uint64 // remote CQ data
	count               uint64 // atomics: element count
}

func (h *rmaHdr) put(b []byte) {
	b[0], b[1], b[2], b[3] = h.kind, h.op, h.dt, h.flags
	binary.LittleEndian.PutUint32(b[4:], uint32(h.status))
	binary.LittleEndian.PutUint64(b[8:], h.id)
	binary.LittleEndian.PutUint64(b[16:], h.key)
	binary.LittleEndian.PutUint64(b[24:], h.addr)
	binary.LittleEndian.PutUint64(b[32:], h.len)
	binary.LittleEndian.PutUint64(b[40:], h.data)
	binary.LittleEndian.PutUint64(b[48:], h.count)
}

func (h *rmaHdr) get(b []byte) bool {
	if len(b) < rmaHdrLen {
		return false
	}
	h.kind, h.op, h.dt, h.flags = b[0], b[1], b[2], b[3]
	h.status = int32(binary.LittleEndian.Uint32(b[4:]))
	h.id = binary.LittleEndian.Uint64(b[8:])
	h.key = binary.LittleEndian.Uint64(b[16:])
	h.addr = binary.LittleEndian.Uint64(b[24:])
	h.len = binary.LittleEndian.Uint64(b[32:])
	h.data = binary.LittleEndian.Uint64(b[40:])
	h.count = binary.LittleEndian.Uint64(b[48:])
	return true
}

// RMAOp is one fi_read/fi_write/fi_atomic family call.
type RMAOp struct {
	Op            // local buffers, destination, context, flags, CQ data
	RAddr, Key    uint64
	Read          bool
	Atomic        bool
	AtomicOp, DT  int
	Count         uint64 // atomic elements
	Compare       Buf    // compare operands (fi_compare_atomic)
	Result        Buf    // fetched values land here (fetch/compare)
	Fetch, CmpOp  bool
	ResultMR      *MR
	atomicPayload []byte
	resultKind    memKind // what Result is
}

// rmaState is an endpoint's one-sided state, made on first use (e.guard).
type rmaState struct {
	ops   map[uint64]*rmaOp     // initiator: operations awaiting their answer
	out   []rmaOut              // messages the core could not take yet
	in    map[rmaInKey]*rmaIn   // target: writes awaiting their data
	sends map[uint64][]byte     // our rendezvous sends in flight, and their staging buffers
	pulls map[*rmaPull]struct{} // network pulls in flight
	shmTo map[uint64]*shm.Peer  // shm answer peers by sender id
	// Native operations (rma_native.go): the targets' core keys learnt,
	// the (peer, key)s asked for, and the operations in flight by
	// transport send id.
	keys   map[natKey]natEnt
	asked  map[natKey]bool
	native map[uint64]natOp
	// slow: per network peer, target-executed operations awaiting their
	// answer; native ones wait for none of them, so none goes while any
	// is outstanding (a read must not overtake an inject atomic before it).
	slow map[*ofi.Peer]int
	// revoking: target, on the peer path: per network peer, the key
	// revokes it has not answered yet (rma_native.go, revokeHeld).
	revoking map[*ofi.Peer]*revokeWait
	next     uint64
	tick     int // progress calls since the last rmaCheckPeers
}

func (e *Endpoint) rmaS() *rmaState {
	if e.rma == nil {
		e.rma = &rmaState{ops: map[uint64]*rmaOp{}, in: map[rmaInKey]*rmaIn{},
			sends: map[uint64][]byte{}, pulls: map[*rmaPull]struct{}{}, shmTo: map[uint64]*shm.Peer{},
			keys: map[natKey]natEnt{}, asked: map[natKey]bool{}, native: map[uint64]natOp{},
			slow: map[*ofi.Peer]int{}, revoking: map[*ofi.Peer]*revokeWait{}}
	}
	return e.rma
}

// rmaBusy reports whether progress has one-sided work of its own.
func (s *rmaState) busy() bool {
	return len(s.ops) > 0 || len(s.out) > 0 || len(s.in) > 0 || len(s.sends) > 0 || len(s.pulls) > 0
}

// rmaOutMax bounds queued messages before new operations see -FI_EAGAIN.
const rmaOutMax = 1024

// rmaPeer is how a one-sided message reaches a peer.
type rmaPeer struct {
	shm *shm.Peer
	t   *ofi.Transport
	net *ofi.Peer
	ti  int
}

// kind is the core kind that carries messages to p (its stats slot).
func (p rmaPeer) kind() int {
	if p.shm != nil {
		return kindShm
	}
	return kindNet
}

func (p rmaPeer) eagerMax() uint64 {
	if p.shm != nil {
		return uint64(p.shm.EagerMax())
	}
	return uint64(p.net.EagerMax())
}

// rmaOut is a message waiting for room.
type rmaOut struct {
	p   rmaPeer
	hdr msgHdr
	iov [][]byte
	mrs []*ofi.MR
	// stage: a staging buffer (e.stage) iov points into, given back
	// once the core is done with it.
	stage []byte
}

// rmaOp is an initiator's operation awaiting its answer.
type rmaOp struct {
	ctx    unsafe.Pointer
	flags  uint64 // completion flags
	cntr   uint64 // counter bit: fi.READ or fi.WRITE
	cq     bool
	len    uint64
	dst    [MaxIov]Buf // read data / fetched values land here
	ndst   int
	keep   []byte  // a copy of inject data sent by rendezvous
	pull   bool    // a network pull is moving the read data
	result bool    // atomic: answer carries fetched values
	peer   rmaPeer // the target, watched until the answer comes
	native bool    // carried by the core (rma_native.go)
	// dev: some of dst is device memory, of the kinds in kinds; the
	// data lands in host memory first.
	dev   bool
	kinds [MaxIov]memKind
}

type rmaInKey struct {
	core int // kindShm, or kindNet + transport index
	src  uint64
	id   uint64
}

// rmaIn is a write whose data is still on its way to the target.
type rmaIn struct {
	p    rmaPeer
	src  uint64 // fi_addr of the initiator, for remote completions
	h    rmaHdr
	dst  [][]byte
	kind memKind // what dst is: device memory takes the data through stage
	err  error
	done bool
}

// rmaPull is a network pull of one-sided data.
type rmaPull struct {
	in    *rmaIn // target: write data
	id    uint64 // initiator: read data of this operation
	op    *rmaOp
	stage []byte // the data lands here first (device memory)
}

// RMA posts a one-sided operation.
func (e *Endpoint) RMA(op *RMAOp) error {
	flags := op.Flags
	if !op.Explicit {
		flags = e.txFlags
	}
	if op.HasData {
		flags |= fi.REMOTE_CQ_DATA
	}
	size := op.length()
	if op.Inject && size > e.injectSize() {
		return fi.Wrap(fi.EMSGSIZE, "inject of %d bytes exceeds inject_size %d", size, e.injectSize())
	}
	if uint64(op.N) > e.Domain.Link.lim.iov {
		return fi.Wrap(fi.EINVAL, "%d iovs exceed iov_limit %d", op.N, e.Domain.Link.lim.iov)
	}
	if op.Inject && op.Read {
		return fi.Wrap(fi.EINVAL, "no inject form of a read")
	}
	if !op.Atomic && size > e.Domain.Link.lim.maxMsg {
		return fi.Wrap(fi.EMSGSIZE, "%d bytes exceed max_msg_size", size)
	}
	e.lock()
	defer e.unlock()
	if !e.enabled {
		return fi.Wrap(fi.EOPBADSTATE, "endpoint not enabled")
	}
	var kinds [MaxIov]memKind
	dev := e.devKinds(&op.Op, &kinds)
	// Write data from device memory: the runtime copies it to the host
	// now, and the operation goes on as from host memory.
	var host []byte
	if dev && !op.Read && !op.Atomic {
		host = make([]byte, size)
		if err := gather(host, op.Iov(), kinds[:op.N]); err != nil {
			return err
		}
	}
	defer e.kickIfBusy()
	return e.rmaStart(op, flags, size, dev, &kinds, host, false)
}

// rmaStart posts an operation RMA checked; retry: a native operation that
// failed goes again, the target-executed way (rmaNativeDone).
func (e *Endpoint) rmaStart(op *RMAOp, flags, size uint64, dev bool, kinds *[MaxIov]memKind, host []byte, retry bool) error {
	s := e.rmaS()
	if !retry && len(s.out) >= rmaOutMax {
		e.progressLocked()
		if len(s.out) >= rmaOutMax {
			return fi.EAGAIN
		}
	}
	rt, err := e.route(op.Addr)
	if err != nil {
		return err
	}
	if rt.peer && rt.net == nil {
		// A peer-API core's one-sided operations go over the side
		// transport beside it (ep.go, openSide), which a node/service
		// address does not name.
		return fi.Wrap(fi.EOPNOTSUPP, "peer %d has no side transport address for one-sided operations (a node/service address)", op.Addr)
	}
	p := rmaPeer{shm: rt.shm}
	if rt.shm == nil {
		r := rt.rail
		if len(rt.rails) > 0 {
			r = rt.rails[0]
		}
		p.t, p.net, p.ti = r.t, r.net, r.ti
	}
	o := &rmaOp{ctx: op.Ctx, len: size, cq: !op.Inject && (!e.txSel || flags&fi.COMPLETION != 0)}
	var want bool
	if e.nativeOK(op, p, flags, dev) {
		o.flags, o.cntr = fi.RMA|fi.WRITE, fi.WRITE
		if op.Read {
			o.flags, o.cntr = fi.RMA|fi.READ, fi.READ
		}
		if retry {
			want = !s.asked[natKey{p.net, op.Key}]
		} else {
			var posted bool
			if posted, want, err = e.rmaNative(op, p, o, flags); posted || err != nil {
				return err
			}
			o.keep = nil
		}
	}
	s.next++
	h := rmaHdr{id: s.next, key: op.Key, addr: op.RAddr, len: size}
	if want {
		h.flags |= rfWantKey
		s.asked[natKey{p.net, op.Key}] = true
	}
	if flags&fi.REMOTE_CQ_DATA != 0 {
		h.flags |= rfCQData
		h.data = op.Data
	}
	var iov [][]byte
	var bulk [][]byte
	var bulkMRs []*ofi.MR
	switch {
	case op.Atomic:
		h.kind, h.op, h.dt, h.count = rmaAtomic, uint8(op.AtomicOp), uint8(op.DT), op.Count
		h.len = op.Count * uint64(dtSize(op.DT))
		o.flags, o.cntr = fi.ATOMIC|fi.WRITE, fi.WRITE
		if op.Fetch || op.CmpOp {
			o.flags, o.cntr = fi.ATOMIC|fi.READ, fi.READ
			h.flags |= rfFetch
			o.result = true
			o.dst[0], o.ndst = op.Result, 1
			o.kinds[0], o.dev = op.resultKind, op.resultKind.isDevice()
		}
		if op.CmpOp {
			h.flags |= rfCompare
		}
		iov = [][]byte{op.atomicPayload}
	case op.Read:
		h.kind = rmaRead
		o.flags, o.cntr = fi.RMA|fi.READ, fi.READ
		o.dst, o.ndst = op.IovBuf, op.N
		o.kinds, o.dev = *kinds, dev
	default:
		h.kind = rmaWrite
		o.flags, o.cntr = fi.RMA|fi.WRITE, fi.WRITE
		switch {
		case host != nil && rmaHdrLen+size <= p.eagerMax():
			iov = [][]byte{host}
		case rmaHdrLen+size <= p.eagerMax():
			for _, b := range op.Iov() {
				iov = append(iov, b.bytes())
			}
		default:
			h.flags |= rfBulk
			if host != nil {
				o.keep = host
				bulk = [][]byte{host}
			} else if op.Inject {
				o.keep = make([]byte, size)
				gatherHost(o.keep, op.Iov())
				bulk = [][]byte{o.keep}
			} else {
				for i, b := range op.Iov() {
					bulk = append(bulk, b.bytes())
					if p.net != nil {
						bulkMRs = append(bulkMRs, op.MRs[i].coreMR(p.ti))
					}
				}
			}
		}
	}
	hb := make([]byte, rmaHdrLen)
	h.put(hb)
	msg := rmaOut{p: p, hdr: msgHdr{Flags: hdrRMA}, iov: append([][]byte{hb}, iov...)}
	// Inline data is copied by the core when it takes the message; a
	// message queued for room keeps pointing at the caller's buffer,
	// which an inject call may reuse at once: copy it then.
	if op.Inject || op.Atomic {
		msg.iov = [][]byte{flatten(msg.iov)}
	}
	o.peer = p
	if p.net != nil {
		// The request's send completes long before the answer comes:
		// have the transport probe the target meanwhile, so that it
		// notices if the target dies (rmaCheckPeers).
		p.t.Watch(p.net)
	}
	s.ops[h.id] = o
	if p.net != nil {
		s.slow[p.net]++
	}
	st := &e.stats[p.kind()]
	switch h.kind {
	case rmaAtomic:
		st.rmaAtomics++
	case rmaRead:
		st.rmaReads++
	default:
		st.rmaWrites++
	}
	st.rmaBytes += h.len
	e.rmaSend(msg)
	if h.flags&rfBulk != 0 {
		e.rmaSend(rmaOut{p: p, hdr: msgHdr{Flags: hdrRMA | hdrBulk, Tag: h.id, Data: bulkWrite}, iov: bulk, mrs: bulkMRs})
	}
	return nil
}

func flatten(iov [][]byte) []byte {
	n := 0
	for _, b := range iov {
		n += len(b)
	}
	out := make([]byte, 0, n)
	for _, b := range iov {
		out = append(out, b...)
	}
	return out
}

// gatherHost copies host buffers into dst.
func gatherHost(dst []byte, src []Buf) {
	for _, b := range src {
		dst = dst[copy(dst, b.bytes()):]
	}
}

// rmaSend sends a one-sided message, or queues it behind earlier ones.
func (e *Endpoint) rmaSend(m rmaOut) {
	s := e.rma
	if len(s.out) == 0 && e.rmaTry(m) {
		return
	}
	s.out = append(s.out, m)
}

// rmaFlush sends queued one-sided messages, in order, while cores take them.
func (e *Endpoint) rmaFlush() {
	s := e.rma
	i := 0
	for ; i < len(s.out); i++ {
		if !e.rmaTry(s.out[i]) {
			break
		}
	}
	if i == len(s.out) {
		s.out = s.out[:0]
		return
	}
	s.out = append(s.out[:0], s.out[i:]...)
}

// rmaTry hands one message to its core; false when the core has no room.
func (e *Endpoint) rmaTry(m rmaOut) bool {
	e.nextSend++
	id := e.nextSend
	var done, again bool
	var err error
	if m.p.shm != nil { // the peer knows its core: typed calls, as in Send
		done, err = e.shm.Send(m.p.shm, shm.Hdr(m.hdr), m.iov, id)
		again = errors.Is(err, shm.ErrAgain)
	} else {
		done, err = m.p.t.SendMR(m.p.net, ofi.Hdr(m.hdr), m.iov, m.mrs, id)
		again = errors.Is(err, ofi.ErrAgain)
		e.netBusy()
	}
	if again {
		return false
	}
	if err != nil || done {
		e.stage.put(m.stage)
	}
	if err != nil {
		// The answer will never come: fail what waits for it.
		logging.Warnf(logging.EPData, "one-sided message lost: %v", err)
		if m.hdr.Flags&hdrBulk == 0 {
			var h rmaHdr
			if len(m.iov) > 0 && h.get(m.iov[0]) && h.request() {
				e.rmaDone(h.id, fi.Code(err))
			}
		} else if m.hdr.Data == bulkWrite {
			e.rmaDone(m.hdr.Tag, fi.Code(err))
		}
		return true
	}
	if !done {
		e.rma.sends[id] = m.stage
	}
	return true
}

// rmaSendDone forgets one of our rendezvous sends (onSendDone's ids that
// are not the application's).
func (e *Endpoint) rmaSendDone(id uint64) {
	if e.rma != nil {
		if b, ok := e.rma.sends[id]; ok {
			delete(e.rma.sends, id)
			e.stage.put(b)
		}
	}
}

// rmaDone completes an initiator's operation; code is 0 or a negative
// fi_errno.
func (e *Endpoint) rmaDone(id uint64, code int) {
	s := e.rma
	o, ok := s.ops[id]
	if !ok {
		return
	}
	delete(s.ops, id)
	if o.peer.net != nil {
		o.peer.t.Unwatch(o.peer.net)
		if !o.native {
			if s.slow[o.peer.net]--; s.slow[o.peer.net] <= 0 {
				delete(s.slow, o.peer.net)
			}
		}
	}
	if c := e.cntrs[o.cntr]; c != nil {
		c.Inc(code != 0)
	}
	if e.txCQ == nil {
		return
	}
	if code != 0 {
		errno := fi.Errno(-code)
		e.txCQ.PushErr(Completion{Ctx: o.ctx, Flags: o.flags, Err: errno, ProvErr: code})
		return
	}
	if o.cq {
		e.txCQ.Push(Completion{Ctx: o.ctx, Flags: o.flags})
	}
}

// rmaCheckEvery: progress calls between liveness checks of the targets
// that one-sided operations wait for.
const rmaCheckEvery = 1024

// rmaCheckPeers fails the operations whose target is gone: a same-node
// process that died (shm's pidfd), or a network peer its transport
// declared gone (Watch). Their answers will never come.
func (e *Endpoint) rmaCheckPeers() {
	s := e.rma
	if s.tick++; s.tick < rmaCheckEvery {
		return
	}
	s.tick = 0
	var checked map[*shm.Peer]bool // alive, per shm peer: one system call each
	var dead []uint64
	for id, o := range s.ops {
		switch {
		case o.peer.shm != nil:
			alive, ok := checked[o.peer.shm]
			if !ok {
				if checked == nil {
					checked = map[*shm.Peer]bool{}
				}
				alive = o.peer.shm.Alive()
				checked[o.peer.shm] = alive
			}
			if !alive {
				dead = append(dead, id)
			}
		case o.peer.net != nil && o.peer.net.Gone():
			dead = append(dead, id)
		}
	}
	for _, id := range dead {
		logging.Debugf(logging.EPData, "one-sided operation %d: its target is gone", id)
		e.rmaDone(id, -int(fi.EIO))
	}
}

// onRMAShm takes a one-sided message from shm.
func (e *Endpoint) onRMAShm(a *shm.Arrival) bool {
	s := e.rmaS()
	p := a.Peer
	if p == nil {
		p = s.shmTo[a.Src]
	}
	if p == nil {
		raw, err := e.shm.SourceAddr(a.Src)
		if err == nil {
			p, err = e.shm.Connect(raw)
		}
		if err != nil {
			logging.Warnf(logging.EPData, "one-sided request from an unreachable shm peer: %v", err)
			if a.Rndv != nil {
				_ = e.shm.Discard(a.Rndv)
			}
			return true
		}
		s.shmTo[a.Src] = p
	}
	rv := rndv{shm: a.Rndv}
	e.rmaArrive(rmaPeer{shm: p}, rmaInKey{core: kindShm, src: a.Src}, e.shmSource(a.Src), msgHdr(a.Hdr), a.Eager, rv)
	return true
}

// onRMANet takes a one-sided message from a network core.
func (e *Endpoint) onRMANet(t *ofi.Transport, ti int, a *ofi.Arrival) bool {
	e.rmaS()
	src := e.av.byNetID(a.Src)
	p := rmaPeer{t: t, net: a.Peer, ti: ti}
	if p.net == nil && src != fi.ADDR_NOTAVAIL {
		if rt, err := e.route(src); err == nil && rt.shm == nil {
			p.t, p.net, p.ti = rt.rail.t, rt.rail.net, rt.rail.ti
		}
	}
	var rv rndv
	if a.Rndv != nil {
		rv = rndv{net: a.Rndv, t: t, ti: ti}
	}
	if p.net == nil {
		logging.Warnf(logging.EPData, "one-sided request from a network peer not in the AV: dropped")
		if rv.net != nil {
			_ = t.Discard(rv.net)
		}
		return true
	}
	e.netBusy()
	e.rmaArrive(p, rmaInKey{core: kindNet + ti, src: a.Src}, src, msgHdr(a.Hdr), a.Eager, rv)
	return true
}

// rmaArrive handles a request, an answer or a bulk message.
func (e *Endpoint) rmaArrive(p rmaPeer, k rmaInKey, src uint64, hdr msgHdr, eager []byte, rv rndv) {
	s := e.rma
	if hdr.Flags&hdrBulk != 0 {
		k.id = hdr.Tag
		if hdr.Data == bulkRead {
			e.rmaReadData(hdr.Tag, eager, rv)
			return
		}
		in := s.in[k]
		if in == nil {
			logging.Warnf(logging.EPData, "one-sided data for no pending write: dropped")
			e.rmaDiscard(rv)
			return
		}
		delete(s.in, k)
		e.rmaWriteData(in, eager, rv)
		return
	}
	var h rmaHdr
	if !h.get(eager) {
		logging.Warnf(logging.EPData, "malformed one-sided message (%d bytes): dropped", len(eager))
		e.rmaDiscard(rv)
		return
	}
	body := eager[rmaHdrLen:]
	if h.request() {
		e.stats[p.kind()].rmaServed++
		if h.flags&rfWantKey != 0 && p.net != nil {
			e.rmaSendKeyInfo(p, h.key)
		}
	}
	switch h.kind {
	case rmaKeyInfo:
		e.rmaLearnKey(p, &h)
	case rmaNotify:
		e.rmaNotified(src, &h)
	case rmaRevoke:
		e.rmaForgetKey(p, &h)
	case rmaRevokeAck:
		e.rmaRevokeAcked(p)
	case rmaAnswer:
		e.rmaAnswer(&h, body)
	case rmaWrite:
		dst, mk, err := e.Domain.rmaTarget(h.key, h.addr, h.len, fi.REMOTE_WRITE)
		if h.flags&rfBulk != 0 {
			k.id = h.id
			s.in[k] = &rmaIn{p: p, src: src, h: h, dst: dst, kind: mk, err: err}
			return
		}
		if err == nil {
			if uint64(len(body)) != h.len {
				err = fi.Wrap(fi.EINVAL, "write of %d bytes carries %d", h.len, len(body))
			} else {
				e.Domain.keys.mu.Lock()
				err = scatterMem(mk, dst, body)
				e.Domain.keys.mu.Unlock()
			}
		}
		e.rmaWritten(&rmaIn{p: p, src: src, h: h}, err)
	case rmaRead:
		e.rmaServeRead(p, src, &h)
	case rmaAtomic:
		e.rmaServeAtomic(p, src, &h, body)
	default:
		logging.Warnf(logging.EPData, "unknown one-sided request kind %d: dropped", h.kind)
	}
}

func (e *Endpoint) rmaDiscard(rv rndv) {
	switch {
	case rv.shm != nil:
		_ = e.shm.Discard(rv.shm)
	case rv.net != nil:
		_ = rv.t.Discard(rv.net)
	}
}

// rmaWriteData lands a write's bulk data in the target's memory.
func (e *Endpoint) rmaWriteData(in *rmaIn, eager []byte, rv rndv) {
	if in.err != nil {
		e.rmaDiscard(rv)
		e.rmaWritten(in, in.err)
		return
	}
	var err error
	// Device memory: the data lands in a staging buffer first.
	dst := in.dst
	var st []byte
	if in.kind.isDevice() && !rv.none() {
		if st, err = e.stage.get(in.h.len); err != nil {
			e.rmaDiscard(rv)
			e.rmaWritten(in, err)
			return
		}
		dst = [][]byte{st}
	}
	switch {
	case rv.shm != nil:
		var n uint64
		n, err = e.shm.Pull(rv.shm, dst)
		if err == nil && n != in.h.len {
			err = fi.Wrap(fi.EIO, "write moved %d of %d bytes", n, in.h.len)
		}
		if err == nil && st != nil {
			err = e.rmaToDevice(in, st)
		}
	case rv.net != nil:
		pl := &rmaPull{in: in, stage: st}
		rv.net.SetContext(pl)
		if err = rv.t.PullMR(rv.net, dst, nil); err == nil {
			e.rma.pulls[pl] = struct{}{}
			e.netBusy()
			return
		}
	default:
		if uint64(len(eager)) != in.h.len {
			err = fi.Wrap(fi.EINVAL, "write of %d bytes carries %d", in.h.len, len(eager))
		} else {
			e.Domain.keys.mu.Lock()
			err = scatterMem(in.kind, in.dst, eager)
			e.Domain.keys.mu.Unlock()
		}
	}
	e.stage.put(st)
	e.rmaWritten(in, err)
}

// rmaToDevice copies a write's staged data into the target's device memory.
func (e *Endpoint) rmaToDevice(in *rmaIn, st []byte) error {
	e.Domain.keys.mu.Lock()
	defer e.Domain.keys.mu.Unlock()
	return scatterMem(in.kind, in.dst, st[:in.h.len])
}

// rmaPullDone finishes a network pull of one-sided data (onPullDone's
// rendezvous that are not receives).
func (e *Endpoint) rmaPullDone(rv *ofi.Rendezvous, n uint64, err error) {
	pl, ok := rv.Context().(*rmaPull)
	if !ok || e.rma == nil {
		return
	}
	delete(e.rma.pulls, pl)
	defer e.stage.put(pl.stage)
	if pl.in != nil {
		if err == nil && n != pl.in.h.len {
			err = fi.Wrap(fi.EIO, "write moved %d of %d bytes", n, pl.in.h.len)
		}
		if err == nil && pl.stage != nil {
			err = e.rmaToDevice(pl.in, pl.stage)
		}
		e.rmaWritten(pl.in, err)
		return
	}
	if err == nil && n != pl.op.len {
		err = fi.Wrap(fi.EIO, "read moved %d of %d bytes", n, pl.op.len)
	}
	if err == nil && pl.stage != nil {
		_, err = scatterKinds(pl.op.dst[:pl.op.ndst], pl.op.kinds[:pl.op.ndst], pl.stage[:n])
	}
	e.rmaDone(pl.id, codeOf(err))
}

func codeOf(err error) int {
	if err == nil {
		return 0
	}
	return fi.Code(err)
}

// rmaWritten raises the target's remote events for a write and answers.
func (e *Endpoint) rmaWritten(in *rmaIn, err error) {
	if err == nil {
		e.rmaRemoteEvent(in.src, &in.h, fi.REMOTE_WRITE)
	} else {
		logging.Debugf(logging.EPData, "refusing a remote write: %v", err)
	}
	e.rmaAnswerTo(in.p, in.h.id, err, nil)
}

// rmaRemoteEvent writes the target-side completion a one-sided operation
// asks for: a CQ entry with the remote CQ data, and the remote counter.
func (e *Endpoint) rmaRemoteEvent(src uint64, h *rmaHdr, kind uint64) {
	if c := e.cntrs[kind]; c != nil {
		c.Inc(false)
	}
	if h.flags&rfCQData == 0 || e.rxCQ == nil {
		return
	}
	op := fi.RMA
	if h.kind == rmaAtomic {
		op = fi.ATOMIC
	}
	e.rxCQ.Push(Completion{Flags: op | kind | fi.REMOTE_CQ_DATA, Len: h.len, Data: h.data, Src: src})
}

// rmaAnswerTo queues the answer to a request: status and inline data.
func (e *Endpoint) rmaAnswerTo(p rmaPeer, id uint64, err error, data []byte) {
	h := rmaHdr{kind: rmaAnswer, id: id}
	if err != nil {
		h.status = int32(-fi.Code(err))
	}
	e.rmaSendHdr(p, &h, data)
}

// rmaSendHdr queues a one-sided message of one piece: h, then data (an
// answer's inline data; none for key news and notices).
func (e *Endpoint) rmaSendHdr(p rmaPeer, h *rmaHdr, data []byte) {
	b := make([]byte, rmaHdrLen+len(data))
	h.put(b)
	copy(b[rmaHdrLen:], data)
	e.rmaSend(rmaOut{p: p, hdr: msgHdr{Flags: hdrRMA}, iov: [][]byte{b}})
}

// rmaServeRead answers a read: inline when it fits, else as a bulk
// message from the target's memory (the initiator pulls it).
func (e *Endpoint) rmaServeRead(p rmaPeer, src uint64, h *rmaHdr) {
	src_, mk, err := e.Domain.rmaTarget(h.key, h.addr, h.len, fi.REMOTE_READ)
	inline := rmaHdrLen+h.len <= p.eagerMax()
	var data, st []byte
	if err == nil {
		// Host memory read inline is copied here; device memory is
		// copied by the runtime, into a staging buffer when it goes
		// as bulk data.
		switch {
		case inline:
			data = make([]byte, h.len)
		case mk.isDevice():
			st, err = e.stage.get(h.len)
			data = st
		}
	}
	if err == nil && data != nil {
		e.Domain.keys.mu.Lock()
		err = gatherMem(mk, data, src_)
		e.Domain.keys.mu.Unlock()
	}
	if err != nil {
		e.stage.put(st)
		logging.Debugf(logging.EPData, "refusing a remote read: %v", err)
		e.rmaAnswerTo(p, h.id, err, nil)
		return
	}
	e.rmaRemoteEvent(src, h, fi.REMOTE_READ)
	if inline {
		e.rmaAnswerTo(p, h.id, nil, data)
		return
	}
	if st != nil {
		src_ = [][]byte{st}
	}
	e.rmaSend(rmaOut{p: p, hdr: msgHdr{Flags: hdrRMA | hdrBulk, Tag: h.id, Data: bulkRead}, iov: src_, stage: st})
}

// rmaReadData lands a read's bulk data in the initiator's buffers.
func (e *Endpoint) rmaReadData(id uint64, eager []byte, rv rndv) {
	o := e.rma.ops[id]
	if o == nil {
		e.rmaDiscard(rv)
		return
	}
	var dst [MaxIov][]byte
	nd := o.ndst
	var st []byte
	var n uint64
	var err error
	if o.dev && !rv.none() {
		// Device buffers: the data lands in a staging buffer, which
		// the runtime copies in.
		if st, err = e.stage.get(o.len); err != nil {
			e.rmaDiscard(rv)
			e.rmaDone(id, codeOf(err))
			return
		}
		dst[0], nd = st, 1
	} else {
		for i, b := range o.dst[:o.ndst] {
			dst[i] = b.bytes()
		}
	}
	switch {
	case rv.shm != nil:
		n, err = e.shm.Pull(rv.shm, dst[:nd])
		if err == nil && st != nil {
			n, err = scatterKinds(o.dst[:o.ndst], o.kinds[:o.ndst], st[:n])
		}
	case rv.net != nil:
		pl := &rmaPull{id: id, op: o, stage: st}
		rv.net.SetContext(pl)
		if err = rv.t.PullMR(rv.net, dst[:nd], nil); err == nil {
			e.rma.pulls[pl] = struct{}{}
			e.netBusy()
			return
		}
	case o.dev:
		n, err = scatterKinds(o.dst[:o.ndst], o.kinds[:o.ndst], eager)
	default:
		n = scatter(o.dst[:o.ndst], eager)
	}
	e.stage.put(st)
	if err == nil && n != o.len {
		err = fi.Wrap(fi.EIO, "read moved %d of %d bytes", n, o.len)
	}
	e.rmaDone(id, codeOf(err))
}

// rmaAnswer completes an operation with its answer.
func (e *Endpoint) rmaAnswer(h *rmaHdr, body []byte) {
	o := e.rma.ops[h.id]
	if o == nil {
		return
	}
	if h.status != 0 {
		e.rmaDone(h.id, -int(h.status))
		return
	}
	if o.flags&fi.READ != 0 && len(body) > 0 {
		var n uint64
		var err error
		if o.dev {
			n, err = scatterKinds(o.dst[:o.ndst], o.kinds[:o.ndst], body)
		} else {
			n = scatter(o.dst[:o.ndst], body)
		}
		if err != nil || n != uint64(len(body)) {
			e.rmaDone(h.id, -int(fi.EIO))
			return
		}
	}
	e.rmaDone(h.id, 0)
}

func scatterBytes(dst [][]byte, src []byte) {
	for _, d := range dst {
		src = src[copy(d, src):]
	}
}

// scatterMem copies src into the pieces of target memory dst, which are
// memory of kind k: device memory by its runtime, never by the CPU.
func scatterMem(k memKind, dst [][]byte, src []byte) error {
	if !k.isDevice() {
		scatterBytes(dst, src)
		return nil
	}
	rt, err := runtimeFor(k)
	if err != nil {
		return err
	}
	for _, d := range dst {
		c := min(len(d), len(src))
		if c == 0 {
			continue
		}
		if err := rt.CopyFromHost(uintptr(unsafe.Pointer(unsafe.SliceData(d))), src[:c]); err != nil {
			return fi.Wrap(fi.EIO, "copy to device: %v", err)
		}
		src = src[c:]
	}
	return nil
}

// gatherMem copies the pieces of target memory src, of kind k, into dst.
func gatherMem(k memKind, dst []byte, src [][]byte) error {
	var rt hmem.Runtime
	if k.isDevice() {
		var err error
		if rt, err = runtimeFor(k); err != nil {
			return err
		}
	}
	for _, s := range src {
		c := min(len(s), len(dst))
		if c == 0 {
			continue
		}
		if rt == nil {
			copy(dst, s[:c])
		} else if err := rt.CopyToHost(dst[:c], uintptr(unsafe.Pointer(unsafe.SliceData(s)))); err != nil {
			return fi.Wrap(fi.EIO, "copy from device: %v", err)
		}
		dst = dst[c:]
	}
	return nil
}

// rmaTarget resolves a peer's (key, address, length) against this
// domain's remotely accessible MRs: the pieces of memory it designates
// and what memory they are (device memory: addresses only, never to be
// touched by the CPU), or why it may not be touched.
func (d *Domain) rmaTarget(key, addr, n, access uint64) ([][]byte, memKind, error) {
	d.keys.mu.Lock()
	defer d.keys.mu.Unlock()
	m := d.keys.remote[key]
	if m == nil || m.closed.Load() {
		return nil, memKind{}, fi.Wrap(fi.EKEYREJECTED, "no remotely accessible MR has key %#x", key)
	}
	if m.Access&access == 0 {
		return nil, memKind{}, fi.Wrap(fi.EACCES, "MR %#x does not allow %s", key, accessName(access))
	}
	off := addr
	if d.Info.Domain.MRMode&fi.MR_VIRT_ADDR != 0 {
		if addr < uint64(m.base) {
			return nil, memKind{}, fi.Wrap(fi.EINVAL, "address %#x is below MR %#x", addr, key)
		}
		off = addr - uint64(m.base)
	}
	if off > m.len || n > m.len-off {
		return nil, memKind{}, fi.Wrap(fi.EINVAL, "%d bytes at offset %d exceed MR %#x of %d bytes", n, off, key, m.len)
	}
	var k memKind
	if m.IsDevice() {
		k = memKind{m.Iface, m.Device}
	}
	if n == 0 {
		return nil, k, nil
	}
	// Only registered pieces: an MR of several iovs spans gaps that were
	// never registered.
	segs := m.segs
	if segs == nil {
		return [][]byte{unsafe.Slice((*byte)(cptr(m.base+uintptr(off))), n)}, k, nil
	}
	var out [][]byte
	p := uint64(m.base) + off
	for n > 0 {
		var hit bool
		for _, s := range segs {
			sp := uint64(uintptr(s.Ptr))
			if p >= sp && p < sp+s.Len {
				c := min(n, sp+s.Len-p)
				out = append(out, unsafe.Slice((*byte)(cptr(uintptr(p))), c))
				p += c
				n -= c
				hit = true
				break
			}
		}
		if !hit || len(out) > MaxIov {
			return nil, memKind{}, fi.Wrap(fi.EINVAL, "range crosses memory MR %#x does not cover", key)
		}
	}
	return out, k, nil
}

func accessName(a uint64) string {
	if a == fi.REMOTE_READ {
		return "FI_REMOTE_READ"
	}
	return "FI_REMOTE_WRITE"
}

// cptr turns the address of C (application) memory back into a pointer;
// the memory is not Go's, so the garbage collector has nothing to track.
func cptr(a uintptr) unsafe.Pointer { return *(*unsafe.Pointer)(unsafe.Pointer(&a)) }
