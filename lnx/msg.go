// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only

package lnx

import (
	"errors"
	"slices"
	"time"
	"unsafe"

	"github.com/lnx-go/lnx-go/internal/fi"
	"github.com/lnx-go/lnx-go/lnx/config"
	"github.com/lnx-go/lnx-go/lnx/logging"
	"github.com/lnx-go/lnx-go/peers"
	"github.com/lnx-go/lnx-go/peers/ofi"
	"github.com/lnx-go/lnx-go/peers/peerep"
	"github.com/lnx-go/lnx-go/shm"
)

// Header flag bits lnx carries through a core with each message.
const (
	hdrTagged uint32 = 1 << 0
	hdrData   uint32 = 1 << 1
	hdrIPC    uint32 = 1 << 2 // payload is an ipcDesc, not the data
	hdrAck    uint32 = 1 << 3 // acknowledges an IPC send; not a message
)

const fiSelective = bindSelective

// recvCtx is a posted receive: what the application gave, kept until the
// receive completes.
type recvCtx struct {
	iov   [MaxIov]Buf
	n     int
	ctx   unsafe.Pointer
	flags uint64
	tag   uint64 // as posted, for FI_PEEK/cancel reporting
	rec   peers.Recv
	kinds [MaxIov]memKind // memory kind of each buffer, when dev
	mrs   [MaxIov]*MR     // the application's descriptors, if any
	dev   bool            // some buffer is device memory
	multi *multiRecv      // an FI_MULTI_RECV buffer (posted; messages are carved from it)
	last  bool            // the message that releases a multi-receive buffer
}

// multiRecv is an FI_MULTI_RECV buffer: messages land one after another
// from off on, each completing as a receive of its own that points into
// the buffer, until less than the endpoint's FI_OPT_MIN_MULTI_RECV is
// left; that message's completion carries FI_MULTI_RECV and the buffer is
// the application's again.
type multiRecv struct {
	base      unsafe.Pointer
	size, off uint64
}

// carve takes the next message, of size bytes, from multi-receive buffer
// r: it returns that message's own receive (the rest of the buffer, so a
// larger message truncates) and whether r has room for more.
func (e *Endpoint) carve(r *recvCtx, size uint64) (*recvCtx, bool) {
	m := r.multi
	left := m.size - m.off
	c := e.getRecv()
	c.n, c.ctx, c.flags, c.tag = 1, r.ctx, r.flags, r.tag
	c.iov[0] = Buf{Ptr: unsafe.Add(m.base, m.off), Len: left}
	c.mrs[0] = r.mrs[0]
	m.off += min(size, left)
	more := m.off < m.size && m.size-m.off >= e.minMultiRecv
	c.last = !more
	return c, more
}

// taken is the receive a message that r matched lands in: r itself, or
// for a multi-receive buffer one carved from it (r goes back in its place
// in q while it has room).
func (e *Endpoint) taken(q *peers.Queue, r *recvCtx, size uint64) *recvCtx {
	if r.multi == nil {
		return r
	}
	c, more := e.carve(r, size)
	if more {
		q.Repost(&r.rec)
	} else {
		e.putRecv(r)
	}
	return c
}

func (r *recvCtx) bufs() []Buf { return r.iov[:r.n] }

// capacity is the total length of the receive's buffers.
func (r *recvCtx) capacity() uint64 {
	var n uint64
	for _, b := range r.bufs() {
		n += b.Len
	}
	return n
}

// msgHdr is what every core carries with a message (shm.Hdr and ofi.Hdr
// have the same fields).
type msgHdr struct {
	Tag, Data uint64
	Flags     uint32
}

// rndv is a large message still in the sender's memory, on one core.
type rndv struct {
	shm *shm.Rendezvous
	net *ofi.Rendezvous
	t   *ofi.Transport
	ti  int // t's index in Endpoint.nets
	// A message a peer-API core queued (core_peer.go): its entry, which
	// the receive that takes it starts.
	pe peerep.Entry
	pc *peerCore
}

func (r rndv) none() bool { return r.shm == nil && r.net == nil && !r.pe.Valid() }

// unexpected is a message that arrived before its receive was posted.
type unexpected struct {
	hdr  msgHdr
	data []byte // eager payload copy
	rv   rndv
	kind int // core kind, for stats
	// id: the sender's id on its core (shm endpoint or network transport
	// id), by which a sender not in the AV on arrival (msg.Src
	// FI_ADDR_NOTAVAIL) is named once it is inserted (resolveAnon).
	id  uint64
	msg peers.Msg
}

// pendingPull is a receive whose data a network core is still moving.
type pendingPull struct {
	r     *recvCtx
	src   uint64
	size  uint64
	hdr   msgHdr
	kind  uint64
	stage []byte // host buffer the data lands in, for a device receive
}

// sendCtx is a send waiting for its rendezvous acknowledgement.
type sendCtx struct {
	ctx   unsafe.Pointer
	flags uint64
	len   uint64
	cq    bool      // write a CQ entry
	stage []byte    // host copy of a device buffer, released at completion
	ipc   *shm.Peer // IPC send: the receiver, watched until it acknowledges
	net   bool      // carried by a network core (counted in netSends)
}

func (e *Endpoint) queue(tagged bool) *peers.Queue {
	if tagged {
		return e.tagged
	}
	return e.untagged
}

func opKindFlags(tagged bool) uint64 {
	if tagged {
		return fi.TAGGED
	}
	return fi.MSG
}

// Send posts a send.
func (e *Endpoint) Send(op *Op) error {
	flags := op.Flags
	if !op.Explicit {
		flags = e.txFlags
	}
	if flags&fi.TRIGGER != 0 {
		return fi.Wrap(fi.EOPNOTSUPP, "triggered operations are not supported")
	}
	if op.HasData {
		flags |= fi.REMOTE_CQ_DATA
	}
	if op.Inject {
		flags |= fi.INJECT
	}
	if uint64(op.N) > e.iovLimit() {
		return fi.Wrap(fi.EINVAL, "%d iovs exceed iov_limit %d", op.N, e.iovLimit())
	}
	size := op.length()
	if flags&fi.INJECT != 0 && size > e.injectSize() {
		return fi.Wrap(fi.EMSGSIZE, "inject of %d bytes exceeds inject_size %d", size, e.injectSize())
	}
	e.lock()
	defer e.unlock()
	if !e.enabled {
		return fi.Wrap(fi.EOPBADSTATE, "endpoint not enabled")
	}
	defer e.kickIfBusy()
	rt, err := e.route(op.Addr)
	if err != nil {
		return err
	}
	hdr := msgHdr{Tag: op.Tag}
	if op.Tagged {
		hdr.Flags |= hdrTagged
	}
	if flags&fi.REMOTE_CQ_DATA != 0 {
		hdr.Flags |= hdrData
		hdr.Data = op.Data
	}
	var iovs [MaxIov][]byte
	niov := op.N
	var stage []byte
	var kinds [MaxIov]memKind
	e.nextSend++
	id := e.nextSend
	dev := e.devKinds(op, &kinds)
	var ipc bool
	if dev {
		if iovs[0], ipc = e.ipcDescFor(rt, op, kinds[0], size, id); ipc {
			hdr.Flags |= hdrIPC
			niov = 1
		}
	}
	if dev && !ipc {
		// Device memory: the runtime copies it to host memory first.
		if stage, err = e.stage.get(size); err != nil {
			return err
		}
		if err = gather(stage, op.Iov(), kinds[:op.N]); err != nil {
			e.stage.put(stage)
			return err
		}
		iovs[0], niov = stage, 1
	} else if !ipc {
		for i, b := range op.Iov() {
			iovs[i] = b.bytes()
		}
	}
	var done bool
	var again bool
	// The route knows its core: typed calls, no interface call per
	// message (core.go is for lifecycle, progress and watch code).
	if rt.shm != nil {
		done, err = e.shm.Send(rt.shm, shm.Hdr(hdr), iovs[:niov], id)
		again = errors.Is(err, shm.ErrAgain)
	} else if rt.peer {
		// The core's own protocols, the application's tag and CQ data.
		if e.rma != nil && len(e.rma.revoking) > 0 && e.revokeHeld(rt.net) {
			err, again = peerep.ErrAgain, true
		} else {
			done, err = e.peer.send(rt.pfa, rt.net, op.Tagged, hdr, iovs[:niov], flags&fi.INJECT != 0, id)
			again = errors.Is(err, peerep.ErrAgain)
		}
		e.netBusy()
	} else {
		r, seq := rt.nextRail()
		h := hdr
		h.Flags |= seq
		if !dev && flags&fi.INJECT != 0 && size > 0 && !r.t.Copies(r.net, size) {
			// The buffers must be reusable on return, and the core may
			// read them after it (an eager send over libfabric's shm is
			// one copy, made by the receiver): send a copy of them.
			if stage, err = e.stage.get(size); err != nil {
				return err
			}
			gatherHost(stage, op.Iov())
			iovs[0], niov = stage, 1
		}
		// The application's registrations with this core spare it
		// registering a rendezvous send's buffers itself (eager sends
		// copy and need none).
		var mrs [MaxIov]*ofi.MR
		if !dev && size > uint64(r.net.EagerMax()) {
			for i := range niov {
				mrs[i] = op.MRs[i].coreMR(r.ti)
			}
		}
		done, err = r.t.SendMR(r.net, ofi.Hdr(h), iovs[:niov], mrs[:niov], id)
		again = errors.Is(err, ofi.ErrAgain)
		if err == nil {
			rt.sent()
		}
		e.netBusy() // a reply is likely: watch the network closely
	}
	if err != nil || done {
		e.stage.put(stage)
	}
	if ipc && err == nil {
		done = false // completes when the receiver acknowledges
	}
	if again {
		e.progressLocked()
		return fi.EAGAIN
	}
	if err != nil {
		return fi.Wrap(fi.EIO, "send to %d: %v", op.Addr, err)
	}
	e.stats[rt.kind].tx(size)
	// Only the fi_inject* calls suppress the completion; FI_INJECT on a
	// …msg call just means the buffer is reusable on return.
	wantCQ := !op.Inject && (!e.txSel || flags&fi.COMPLETION != 0)
	cflags := fi.SEND | opKindFlags(op.Tagged)
	if done {
		e.completeSend(op.Ctx, cflags, wantCQ, nil)
		return nil
	}
	s := sendCtx{ctx: op.Ctx, flags: cflags, len: size, cq: wantCQ, stage: stage}
	if ipc {
		s.ipc = rt.shm
		e.ipcSends++
	}
	if rt.shm == nil {
		s.net = true
		e.netSends++
	}
	e.sends[id] = s
	return nil
}

func (e *Endpoint) completeSend(ctx unsafe.Pointer, flags uint64, wantCQ bool, err error) {
	if c := e.cntrs[fi.SEND]; c != nil {
		c.Inc(err != nil)
	}
	if e.txCQ == nil {
		return
	}
	if err != nil {
		// The error entry carries only a code; the log says why.
		logging.Warnf(logging.EPData, "send failed: %v", err)
		e.txCQ.PushErr(Completion{Ctx: ctx, Flags: flags, Err: fi.EIO, ProvErr: fi.Code(err)})
		return
	}
	if wantCQ {
		e.txCQ.Push(Completion{Ctx: ctx, Flags: flags})
	}
}

func (e *Endpoint) injectSize() uint64 { return e.Domain.Link.lim.inject }

// iovLimit is the tx and rx iov_limit lnx reports: its own (MaxIov)
// below what a network core takes (a rendezvous hands the core the
// application's buffers as they are).
func (e *Endpoint) iovLimit() uint64 { return e.Domain.Link.lim.iov }

// route is how this endpoint reaches one fi_addr: shm for a peer on this
// node when the link has shm, else a network core (rail chosen per peer).
type route struct {
	kind int
	shm  *shm.Peer
	rail // a network peer: its rail, the only one unless PER_MSG

	// PER_MSG over several rails (rail.go): every rail, the next to use,
	// and the sequence number of the next message.
	rails []rail
	rr    int
	seq   uint16

	// A peer-API core (core_peer.go): the peer's fi_addr in its AV.
	peer bool
	pfa  uint64
}

// reachedOverNet says whether a peer already talks to us over a network
// core (it introduced itself there): a peer that knows us only by a
// network address (fi_getinfo's node/service) would not recognise us
// over shm, so a peer on this node that came that way is answered there.
// On the peer path the sender of such a first message is unknown
// (peerCore.reachedUs).
func (e *Endpoint) reachedOverNet(a *Addr) bool {
	if e.peer != nil {
		return e.peer.reachedUs()
	}
	for i, raw := range netAddrsOf(a) {
		if i >= len(e.nets) {
			break
		}
		if id, err := ofi.AddrID(raw); err == nil && e.nets[i].Knows(id) {
			return true
		}
	}
	return false
}

// route returns (connecting on first use) the route to fi_addr. Routing
// is where the endpoint chooses a core, so it looks at the typed handles
// (e.shm, e.nets) rather than e.cores: the route keeps the concrete
// *shm.Peer or rail, and sends over it call that core directly.
func (e *Endpoint) route(addr uint64) (*route, error) {
	if rt, ok := e.routes[addr]; ok {
		return rt, nil
	}
	ent := e.av.entry(addr)
	if ent == nil {
		return nil, fi.Wrap(fi.EINVAL, "fi_addr %d is not in the AV", addr)
	}
	if raw, ok := shmAddrOf(ent.addr); ok && e.shm != nil && ent.addr.Node == e.node && !e.reachedOverNet(ent.addr) {
		p, err := e.shm.Connect(raw)
		if err == nil {
			rt := &route{kind: kindShm, shm: p}
			e.routes[addr] = rt
			e.publishFast(addr, rt)
			return rt, nil
		}
		// Same node id but shm cannot reach the peer: a private /dev/shm
		// (separate mount namespaces), another PID namespace, a region
		// that is gone. A network core both addresses carry still can
		// (a peer-API core, on the peer path).
		reach := len(netAddrsOf(ent.addr)) > 0 && len(e.nets) > 0
		if e.peer != nil {
			reach = len(peerAddrsOf(ent.addr)) > 0
		}
		if !reach {
			return nil, fi.Wrap(fi.EHOSTUNREACH, "shm connect to %d: %v", addr, err)
		}
		logging.Warnf(logging.EPData, "peer %d on this node is not reachable over shm (%v); using the network core", addr, err)
	}
	if e.peer != nil {
		// A node/service address (nodesvc.go) names the core address
		// alone: it serves the peer path too. A process's own address
		// (a node/service one has node 0) with adapter addresses only
		// does not: that process's network core is on lnx's transport
		// adapter, whose endpoint drops what a peer core sends it.
		peers, nets := peerAddrsOf(ent.addr), netAddrsOf(ent.addr)
		if len(peers) == 0 && len(nets) > 0 && ent.addr.Node != 0 {
			return nil, fi.Wrap(fi.EHOSTUNREACH, "peer %d uses lnx's transport adapter for its network core, this process the peer API: FI_LNX_PEER_API (or the libfabric version) differs between the two; set it alike in every process", addr)
		}
		blobs := append(peers, nets...)
		if len(blobs) == 0 {
			return nil, fi.Wrap(fi.EHOSTUNREACH, "peer %d has no peer-API core address (FI_LNX_PEER_API differs between the two?)", addr)
		}
		fa, err := e.peer.connect(blobs[0])
		if err != nil {
			return nil, fi.Wrap(fi.EHOSTUNREACH, "peer core insert of %d: %v", addr, err)
		}
		rt := &route{kind: kindNet, peer: true, pfa: fa}
		// The peer's side transport (ep.go, openSide): one-sided
		// operations, and the probes that find it dead while the
		// peer core waits for it. A node/service address has none.
		if side, ok := sideAddrOf(ent.addr); ok && len(e.nets) > 0 {
			p, err := e.nets[0].Connect(side)
			if err != nil {
				return nil, fi.Wrap(fi.EHOSTUNREACH, "side transport connect to %d: %v", addr, err)
			}
			rt.rail = rail{e.nets[0], p, 0}
		}
		e.routes[addr] = rt
		e.peer.publish(addr, rt)
		return rt, nil
	}
	nets := netAddrsOf(ent.addr)
	if len(nets) == 0 && len(peerAddrsOf(ent.addr)) > 0 && len(e.nets) > 0 {
		return nil, fi.Wrap(fi.EHOSTUNREACH, "peer %d drives its network core through the peer API, this process uses lnx's transport adapter: FI_LNX_PEER_API (or the libfabric version) differs between the two; set it alike in every process", addr)
	}
	if len(nets) == 0 || len(e.nets) == 0 {
		return nil, fi.Wrap(fi.EHOSTUNREACH, "peer %d is not reachable: no common core (peer on another node: %v)", addr, ent.addr.Node != e.node)
	}
	n := min(len(nets), len(e.nets))
	rt := &route{kind: kindNet}
	if e.rails == config.PerMsg && n > 1 {
		for i := 0; i < n; i++ {
			p, err := e.nets[i].Connect(nets[i])
			if err != nil {
				return nil, fi.Wrap(fi.EHOSTUNREACH, "network connect to %d on rail %d: %v", addr, i, err)
			}
			rt.rails = append(rt.rails, rail{e.nets[i], p, i})
		}
		rt.rail = rt.rails[0]
		// A peer reached before under an fi_addr since removed: its
		// receiver expects our sequence to go on.
		if seq, ok := e.railSeqs[rt.net]; ok {
			rt.seq = seq
			delete(e.railSeqs, rt.net)
		}
	} else {
		// PER_PEER: one rail per peer keeps its messages in order.
		i := int(addr % uint64(n))
		p, err := e.nets[i].Connect(nets[i])
		if err != nil {
			return nil, fi.Wrap(fi.EHOSTUNREACH, "network connect to %d: %v", addr, err)
		}
		rt.rail = rail{e.nets[i], p, i}
	}
	e.routes[addr] = rt
	return rt, nil
}

// forgetAddrs drops the routes to fi_addrs removed from the AV (e.guard
// held), and C's fast sends to them: an operation on a removed fi_addr
// then fails in route like one never inserted. The core connections stay
// (shared with any other entry of the same peer, and found again on a
// re-insert), and so does a PER_MSG sender's place in the peer's order.
func (e *Endpoint) forgetAddrs(addrs []uint64) {
	for _, a := range addrs {
		rt := e.routes[a]
		if rt == nil {
			continue
		}
		delete(e.routes, a)
		e.unpublishFast(a)
		if e.peer != nil {
			e.peer.unpublish(a)
		}
		if rt.shm != nil && !slices.Contains(e.retire, rt.shm) {
			e.retire = append(e.retire, rt.shm)
		}
		if len(rt.rails) > 1 {
			if e.railSeqs == nil {
				e.railSeqs = map[*ofi.Peer]uint16{}
			}
			e.railSeqs[rt.rails[0].net] = rt.seq
		}
	}
}

// releasePeers disconnects the shm peers of removed fi_addrs that nothing
// uses any more (e locked): no route (an fi_addr of the same peer, or the
// address inserted again, found it through Connect), no send awaiting an
// acknowledgement from it, no queued acknowledgement to it. That unmaps
// the peer's region and closes its pidfd: a server whose clients come and
// go otherwise keeps both per client until it runs out of descriptors.
// C's fast sends to the peer stopped with unpublishFast, and Disconnect
// takes the peer's TxSlot lock and marks it not ready, so no C writer is
// inside the mapping when it goes.
func (e *Endpoint) releasePeers() {
	keep := e.retire[:0]
	for _, p := range e.retire {
		if e.shmPeerInUse(p) {
			continue // a route has it again: no longer ours to release
		}
		if p.Busy() || e.shmPeerPending(p) {
			keep = append(keep, p)
			continue
		}
		_ = e.shm.Disconnect(p)
	}
	clear(e.retire[len(keep):])
	e.retire = keep
}

func (e *Endpoint) shmPeerInUse(p *shm.Peer) bool {
	for _, rt := range e.routes {
		if rt.shm == p {
			return true
		}
	}
	return false
}

func (e *Endpoint) shmPeerPending(p *shm.Peer) bool {
	for _, a := range e.acks {
		if a.p == p {
			return true
		}
	}
	for _, s := range e.sends {
		if s.ipc == p {
			return true
		}
	}
	return false
}

// Recv posts a receive (or, with FI_PEEK/FI_CLAIM, inspects unexpected
// messages).
func (e *Endpoint) Recv(op *Op) error {
	if op.Explicit && op.Flags&fi.TRIGGER != 0 {
		return fi.Wrap(fi.EOPNOTSUPP, "triggered operations are not supported")
	}
	if uint64(op.N) > e.iovLimit() {
		return fi.Wrap(fi.EINVAL, "%d iovs exceed iov_limit %d", op.N, e.iovLimit())
	}
	e.lock()
	defer e.unlock()
	e.takeQueued()
	return e.recvLocked(op)
}

// recvLocked is Recv with e locked.
func (e *Endpoint) recvLocked(op *Op) error {
	flags := op.Flags
	if !op.Explicit {
		flags = e.rxFlags
	}
	src := op.Addr
	if e.Info.Caps&fi.DIRECTED_RECV == 0 && e.Info.Caps != 0 {
		src = peers.AddrUnspec
	}
	ignore := op.Ignore
	if !op.Tagged {
		ignore = ^uint64(0)
	}
	if !e.enabled {
		return fi.Wrap(fi.EOPBADSTATE, "endpoint not enabled")
	}
	defer e.kickIfBusy()
	q := e.queue(op.Tagged)
	kind := opKindFlags(op.Tagged)
	if flags&fi.PEEK != 0 {
		return e.peek(q, op, src, ignore, flags, kind)
	}
	if flags&fi.CLAIM != 0 {
		m := q.TakeClaimed(op.Ctx)
		if m == nil {
			return fi.Wrap(fi.EINVAL, "FI_CLAIM with no message claimed for this context")
		}
		r := e.newRecv(op, flags)
		if flags&fi.DISCARD != 0 {
			e.discard(m)
			e.rxCQ.Push(Completion{Ctx: op.Ctx, Flags: fi.RECV | kind, Tag: m.Tag, Src: m.Src})
			return nil
		}
		e.deliverUnexpected(r, m, kind)
		return nil
	}
	if flags&fi.MULTI_RECV != 0 {
		if op.Tagged {
			return fi.Wrap(fi.EBADFLAGS, "FI_MULTI_RECV on a tagged receive")
		}
		if op.N != 1 || op.IovBuf[0].Len == 0 {
			return fi.Wrap(fi.EINVAL, "FI_MULTI_RECV takes one non-empty buffer")
		}
	}
	r := e.newRecv(op, flags)
	r.rec = peers.Recv{Src: src, Tag: op.Tag, Ignore: ignore, Ctx: r}
	if flags&fi.MULTI_RECV != 0 {
		if r.dev {
			e.putRecv(r)
			return fi.Wrap(fi.EINVAL, "FI_MULTI_RECV in device memory is not supported")
		}
		r.multi = &multiRecv{base: r.iov[0].Ptr, size: r.iov[0].Len}
		for {
			m := q.Post(&r.rec)
			if m == nil {
				return nil
			}
			c, more := e.carve(r, m.Size)
			e.deliverUnexpected(c, m, kind)
			if !more {
				e.putRecv(r)
				return nil
			}
		}
	}
	if m := q.Post(&r.rec); m != nil {
		e.deliverUnexpected(r, m, kind)
	}
	return nil
}

// newRecv takes a receive record from the endpoint's free list (records
// return there when they complete), so posting allocates nothing.
func (e *Endpoint) newRecv(op *Op, flags uint64) *recvCtx {
	r := e.getRecv()
	r.n, r.ctx, r.flags, r.tag = op.N, op.Ctx, flags, op.Tag
	r.iov = op.IovBuf
	r.mrs = op.MRs
	r.dev = e.devKinds(op, &r.kinds)
	return r
}

// getRecv returns a zeroed receive record.
func (e *Endpoint) getRecv() *recvCtx {
	if n := len(e.freeRecvs); n > 0 {
		r := e.freeRecvs[n-1]
		e.freeRecvs = e.freeRecvs[:n-1]
		*r = recvCtx{}
		return r
	}
	return new(recvCtx)
}

// maxFreeRecvs bounds the free list; beyond it records go to the GC.
const maxFreeRecvs = 1024

func (e *Endpoint) putRecv(r *recvCtx) {
	if len(e.freeRecvs) < maxFreeRecvs {
		e.freeRecvs = append(e.freeRecvs, r)
	}
}

func (e *Endpoint) peek(q *peers.Queue, op *Op, src, ignore, flags, kind uint64) error {
	e.progressLocked()
	var m *peers.Msg
	if flags&fi.CLAIM != 0 && flags&fi.DISCARD == 0 {
		m = q.ClaimMatch(op.Ctx, src, op.Tag, ignore)
	} else if flags&fi.DISCARD != 0 {
		m = q.Take(src, op.Tag, ignore)
	} else {
		m = q.Peek(src, op.Tag, ignore)
	}
	if e.rxCQ == nil {
		return nil
	}
	if m == nil {
		e.rxCQ.PushErr(Completion{Ctx: op.Ctx, Flags: fi.RECV | kind | fi.PEEK, Err: fi.Errno(42) /* ENOMSG */, Tag: op.Tag})
		return nil
	}
	u := m.Ctx.(*unexpected)
	c := Completion{Ctx: op.Ctx, Flags: fi.RECV | kind, Len: m.Size, Tag: m.Tag, Src: m.Src}
	if u.hdr.Flags&hdrData != 0 {
		c.Flags |= fi.REMOTE_CQ_DATA
		c.Data = u.hdr.Data
	}
	if u.rv.pe.Valid() {
		if d, ok := u.rv.pe.CQData(); ok { // the core queued it with its CQ data
			c.Flags |= fi.REMOTE_CQ_DATA
			c.Data = d
		}
	}
	if flags&fi.DISCARD != 0 {
		e.discard(m)
	}
	e.rxCQ.Push(c)
	return nil
}

func (e *Endpoint) discard(m *peers.Msg) {
	u := m.Ctx.(*unexpected)
	var err error
	switch {
	case u.rv.shm != nil:
		err = e.shm.Discard(u.rv.shm)
	case u.rv.net != nil:
		err = u.rv.t.Discard(u.rv.net)
	case u.rv.pe.Valid():
		err = u.rv.pc.ep.Discard(u.rv.pe, u.hdr.Flags&hdrTagged != 0)
	case u.hdr.Flags&hdrIPC != 0:
		// The sender waits for an acknowledgement to release its buffer.
		if d, derr := decodeIPC(u.data); derr == nil {
			e.sendAck(d.srcID, d.cookie, nil)
		}
	}
	if err != nil {
		logging.Warnf(logging.EPData, "discarding a large message: %v", err)
	}
	e.unexpBytes -= uint64(len(u.data))
}

// deliverUnexpected completes r with a message that was queued unexpected.
func (e *Endpoint) deliverUnexpected(r *recvCtx, m *peers.Msg, kind uint64) {
	u := m.Ctx.(*unexpected)
	e.unexpBytes -= uint64(len(u.data))
	e.deliver(r, m.Src, m.Size, u.hdr, u.data, u.rv, kind, u.kind)
}

// deliver copies a message into a posted receive and completes it; a large
// message on a network core completes later, in onPullDone.
func (e *Endpoint) deliver(r *recvCtx, src, size uint64, hdr msgHdr, data []byte, rv rndv, kind uint64, core int) {
	if hdr.Flags&hdrIPC != 0 {
		e.deliverIPC(r, src, size, hdr, data, kind, core)
		return
	}
	if rv.pe.Valid() {
		// The core moves the data (into a bounce buffer for device
		// memory: core_peer.go).
		rv.pc.start(r, src, size, hdr, rv.pe, kind)
		return
	}
	if r.dev {
		e.deliverDevice(r, src, size, hdr, data, rv, kind, core)
		return
	}
	var n uint64
	var err error
	switch {
	case rv.none():
		n = scatter(r.bufs(), data)
	default:
		var dst [MaxIov][]byte
		for i, b := range r.bufs() {
			dst[i] = b.bytes()
		}
		if rv.shm != nil {
			n, err = e.shm.Pull(rv.shm, dst[:r.n])
			break
		}
		pp := &pendingPull{r: r, src: src, size: size, hdr: hdr, kind: kind}
		rv.net.SetContext(pp)
		var mrs [MaxIov]*ofi.MR
		for i := range r.n {
			mrs[i] = r.mrs[i].coreMR(rv.ti)
		}
		if err = rv.t.PullMR(rv.net, dst[:r.n], mrs[:r.n]); err == nil {
			e.pulls[pp] = struct{}{}
			e.netBusy()
			return // onPullDone completes it
		}
	}
	e.complete(r, src, size, n, hdr, kind, core, err)
}

// onPullDone finishes a receive whose data came by a network rendezvous.
func (e *Endpoint) onPullDone(rv *ofi.Rendezvous, n uint64, err error) {
	p, ok := rv.Context().(*pendingPull)
	if !ok {
		e.rmaPullDone(rv, n, err)
		return
	}
	delete(e.pulls, p)
	if p.stage != nil {
		if err == nil {
			n, err = scatterKinds(p.r.bufs(), p.r.kinds[:p.r.n], p.stage[:n])
		}
		e.stage.put(p.stage)
	}
	e.complete(p.r, p.src, p.size, n, p.hdr, p.kind, kindNet, err)
}

// complete writes a receive's completion (or error entry) and recycles it.
func (e *Endpoint) complete(r *recvCtx, src, size, n uint64, hdr msgHdr, kind uint64, core int, err error) {
	capacity := r.capacity()
	c := Completion{Ctx: r.ctx, Flags: fi.RECV | kind, Len: n, Tag: hdr.Tag, Src: src}
	if r.last {
		c.Flags |= fi.MULTI_RECV
	}
	if r.n > 0 {
		c.Buf = r.iov[0].Ptr
	}
	if hdr.Flags&hdrData != 0 {
		c.Flags |= fi.REMOTE_CQ_DATA
		c.Data = hdr.Data
	}
	wantCQ := !e.rxSel || r.flags&fi.COMPLETION != 0
	e.putRecv(r) // everything needed is in c now
	e.stats[core].rx(n)
	cntr := e.cntrs[fi.RECV]
	switch {
	case err != nil:
		e.stats[core].errors++
		c.Err, c.ProvErr = fi.EIO, fi.Code(err)
		logging.Warnf(logging.EPData, "receiving %d bytes from %d: %v", size, src, err)
	case size > capacity:
		c.Err, c.OLen = fi.ETRUNC, size-capacity
	}
	if cntr != nil {
		cntr.Inc(c.Err != 0)
	}
	if e.rxCQ == nil {
		return
	}
	if c.Err != 0 {
		e.rxCQ.PushErr(c)
		return
	}
	if wantCQ {
		e.rxCQ.Push(c)
	}
}

// Cancel cancels a posted receive by context; it completes with
// FI_ECANCELED.
func (e *Endpoint) Cancel(ctx unsafe.Pointer) error {
	e.lock()
	defer e.unlock()
	e.takeQueued()
	for _, tagged := range []bool{true, false} {
		r := e.queue(tagged).Cancel(func(r *peers.Recv) bool { return r.Ctx.(*recvCtx).ctx == ctx })
		if r == nil {
			continue
		}
		rc := r.Ctx.(*recvCtx)
		if e.rxCQ != nil {
			f := fi.RECV | opKindFlags(tagged)
			if rc.multi != nil {
				f |= fi.MULTI_RECV // the buffer is released
			}
			e.rxCQ.PushErr(Completion{Ctx: ctx, Flags: f, Tag: rc.tag, Err: fi.ECANCELED})
		}
		return nil
	}
	return fi.Wrap(fi.ENOENT, "fi_cancel: no pending receive with that context")
}

// progress drives the endpoint's cores.
func (e *Endpoint) progress() {
	e.lock()
	e.progressLocked()
	e.unlock()
}

// progressWatch is progress for a CQ read that C's gate let through; it
// adds to w what C may watch until the next one.
func (e *Endpoint) progressWatch(w *watchSet, q *CQ) {
	e.lockCollecting(q)
	defer func() {
		e.collecting = nil
		e.unlock()
	}()
	e.progressLocked()
	if w.slow {
		// Reads answered in C do not reach shm's Poll, which
		// housekeeps every 1024 calls: find dead senders and peers now.
		for _, c := range e.cores {
			c.housekeep()
		}
	}
	if !e.enabled || w.busy {
		return
	}
	e.watchPaced(w)
	if e.needsLocalPoll() {
		w.busy = true
		return
	}
	e.armAfterRead = false
	if e.arm() {
		e.watchArmed(w)
		return
	}
	if e.armAfterRead {
		w.armLater = e
	}
	if e.netHotNow() {
		w.busy = true
		return
	}
	for _, c := range e.cores {
		switch c := c.(type) {
		case *shmCore:
			c.idleWords(w)
		case *netCore:
			c.idleWords(w)
		default:
			c.idleWords(w)
		}
	}
}

// needsPoll reports whether progress has work that no shm word announces:
// network traffic in flight, rendezvous and IPC sends awaiting their
// acknowledgement, acknowledgements to send, pulls, shm sends to reap.
func (e *Endpoint) needsPoll() bool {
	return e.needsLocalPoll() || e.netHotNow()
}

// needsLocalPoll is needsPoll but for a busy network core, which C can
// read for Go while a receive is armed (arm.go).
func (e *Endpoint) needsLocalPoll() bool {
	if len(e.acks) > 0 || e.ipcSends > 0 || len(e.sends) > 0 || len(e.pulls) > 0 || len(e.retire) > 0 {
		return true
	}
	for _, c := range e.cores[:e.local] { // a paced core's work is netHot's
		if s, ok := c.(*shmCore); ok {
			if !s.quiet() {
				return true
			}
		} else if !c.quiet() {
			return true
		}
	}
	return e.rma != nil && e.rma.busy()
}

// kickIfBusy tells the CQs' gates, after an operation, that progress has
// work no watched word announces, so the next read enters Go.
func (e *Endpoint) kickIfBusy() {
	if e.needsPoll() {
		e.kick()
	}
}

// kick makes the next read of the endpoint's CQs enter Go. Progress for
// a read of the endpoint's only CQ needs none: it decides what C may
// watch after everything it did (progressWatch).
func (e *Endpoint) kick() {
	if c := e.collecting; c != nil && c == e.txCQ && c == e.rxCQ {
		return
	}
	if e.txCQ != nil {
		e.txCQ.gate.kick()
	}
	if e.rxCQ != nil && e.rxCQ != e.txCQ {
		e.rxCQ.gate.kick()
	}
}

func (e *Endpoint) progressLocked() {
	if !e.enabled {
		return
	}
	e.takeQueued()
	if e.rma != nil && len(e.rma.out) > 0 {
		e.rmaFlush()
	}
	if e.rma != nil && len(e.rma.ops) > 0 {
		e.rmaCheckPeers()
	}
	for _, c := range e.cores[:e.local] {
		if s, ok := c.(*shmCore); ok {
			s.poll()
		} else {
			c.poll()
		}
	}
	// Polling a network core costs system calls (rxm/tcp progress polls
	// its sockets), several times a whole shm round trip: the paced cores
	// are polled only when netDue says so.
	if e.local == len(e.cores) || !e.netDue() {
		return
	}
	for _, c := range e.cores[e.local:] {
		if n, ok := c.(*netCore); ok {
			n.poll()
		} else {
			c.poll()
		}
	}
}

// netDue reports whether this progress call polls the network cores.
// Right after network activity (an event, a send of ours, work in
// flight) they are polled every time for netHotPolls calls; once they
// have been quiet that long, once every netQuietGap, so that a same-node
// exchange running beside a quiet network core keeps shm's latency.
func (e *Endpoint) netDue() bool {
	if e.netHot > 0 {
		e.netHot--
		return true
	}
	if now := time.Since(e.t0); now-e.netLast >= e.netGap() {
		e.netLast = now
		return true
	}
	return false
}

// netGap is how long a quiet network core goes unpolled. A target whose
// memory network peers access with the core's own RMA sees nothing of it
// (the core serves those accesses when it is polled, and reports none):
// its gap is netRMAGap. A core that has carried nothing yet, on an
// endpoint whose AV never held an address of another node (a job on one
// node, with the default links), is polled every netColdGap: each poll
// costs system calls that a same-node exchange would otherwise wait
// behind, and only a peer not in the AV, or on this node but out of
// shm's reach, can reach it.
func (e *Endpoint) netGap() time.Duration {
	if e.rmaExported {
		return netRMAGap
	}
	if !e.netSeen && (e.av == nil || !e.av.remote.Load()) {
		return netColdGap
	}
	return netQuietGap
}

// netBusy marks network activity: poll the network cores every time for a
// while.
func (e *Endpoint) netBusy() { e.netHot, e.netSeen = netHotPolls, true }

// netActive is netBusy for traffic seen on a network core (arrivals, or
// messages C took or sent), whose time starts netHotMin (netCore.reclaim).
func (e *Endpoint) netActive() {
	e.netBusy()
	e.netActiveAt = time.Since(e.t0)
}

// lentPolls accounts for a network core C read while it was lent: what C
// took, read or sent there (active) counts as network activity, and C's
// reads of the core as progress polls, except that they do not cool the
// core within netHotMin of its last activity: C reads a fast core
// (libfabric shm) netHotPolls times in a fraction of a round trip between
// processes that share CPUs, and a core gone quiet is read only every
// netQuietGap (arm lends it no more).
func (e *Endpoint) lentPolls(active bool, reads uint64) {
	if active {
		e.netActive()
		return
	}
	if reads >= uint64(e.netHot) && time.Since(e.t0)-e.netActiveAt < netHotMin {
		return
	}
	e.netHot -= int(min(reads, uint64(e.netHot)))
}

// A quiet network core is polled every netQuietGap (the most a message
// from another node waits after a long silence, a fraction of a network
// round trip), or netColdGap before it ever carried anything and while no
// other node is in the AV (see netGap); netHotPolls progress calls after
// activity it is polled on every call (tens of microseconds: longer than a
// network round trip).
const (
	netQuietGap = 20 * time.Microsecond
	netColdGap  = time.Millisecond
	netRMAGap   = 2 * time.Microsecond
	netHotPolls = 4096
	netHotMin   = time.Millisecond
)

func (e *Endpoint) onSendDone(id uint64, err error) {
	s, ok := e.sends[id]
	if !ok {
		if e.rmaNativeDone(id, err) {
			return
		}
		e.rmaSendDone(id)
		return
	}
	delete(e.sends, id)
	if s.ipc != nil {
		e.ipcSends--
	}
	if s.net {
		e.netSends--
	}
	e.stage.put(s.stage)
	e.completeSend(s.ctx, s.flags, s.cq, err)
}

// onArrival matches one message from shm. Over the unexpected budget, a
// message no posted receive wants stays in the ring (returning false), so
// the sender's ring fills and it sees -FI_EAGAIN: flow control instead of
// unbounded buffering.
func (e *Endpoint) onArrival(a *shm.Arrival) bool {
	if a.Hdr.Flags&hdrRMA != 0 {
		return e.onRMAShm(a)
	}
	return e.arrive(e.shmSource(a.Src), a.Src, msgHdr(a.Hdr), a.Size, a.Eager, rndv{shm: a.Rndv}, kindShm)
}

// shmSource maps a shm sender id to its fi_addr, remembering the last
// answer until the AV changes: consecutive messages mostly come from one
// peer, and the AV lookup takes a lock.
func (e *Endpoint) shmSource(id uint64) uint64 {
	c := &e.srcCache
	if gen := e.av.gen.Load(); c.id != id || c.gen != gen || c.id == 0 {
		c.id, c.gen, c.addr = id, gen, e.av.byShmID(id)
	}
	return c.addr
}

// netArrival makes the arrival callback of one network core, so that a
// rendezvous handle is tied to the transport that must pull it.
func (e *Endpoint) netArrival(t *ofi.Transport, ti int) func(*ofi.Arrival) bool {
	return func(a *ofi.Arrival) bool {
		rv := rndv{}
		if a.Rndv != nil {
			rv = rndv{net: a.Rndv, t: t, ti: ti}
		}
		e.lastNet = a.Peer
		if a.Hdr.Flags&(hdrSeq|hdrRMA) != 0 {
			if a.Hdr.Flags&hdrRMA != 0 {
				return e.onRMANet(t, ti, a)
			}
			return e.arriveSeq(e.av.byNetID(a.Src), a.Src, msgHdr(a.Hdr), a.Size, a.Eager, rv)
		}
		return e.arrive(e.av.byNetID(a.Src), a.Src, msgHdr(a.Hdr), a.Size, a.Eager, rv, kindNet)
	}
}

// arrive matches one message from any core: the same queues whatever the
// core, so any-source receives see arrivals from all of them in order.
// id is the sender's id on the core (src's key in the AV).
func (e *Endpoint) arrive(src, id uint64, hdr msgHdr, size uint64, eager []byte, rv rndv, core int) bool {
	if hdr.Flags&(hdrIPC|hdrAck) != 0 {
		if hdr.Flags&hdrAck != 0 {
			e.onAck(hdr)
			return true
		}
		d, err := decodeIPC(eager)
		if err != nil {
			logging.Warnf(logging.EPData, "dropping a message from %d: %v", src, err)
			return true
		}
		size = d.size
	}
	e.lastBig = !rv.none() && (rv.shm == nil || !rv.shm.CMA()) || hdr.Flags&hdrIPC != 0
	tagged := hdr.Flags&hdrTagged != 0
	q := e.queue(tagged)
	kind := opKindFlags(tagged)
	tag := hdr.Tag
	if !tagged {
		tag = 0
	}
	// Expected message: match with a scratch record, allocate nothing.
	e.probe = peers.Msg{Src: src, Tag: tag, Size: size}
	if r := q.ArriveIfPosted(&e.probe); r != nil {
		e.deliver(e.taken(q, r.Ctx.(*recvCtx), size), src, size, hdr, eager, rv, kind, core)
		return true
	}
	if e.unexpBytes > 0 && e.unexpBytes+uint64(len(eager)) > e.unexpMax && !e.forceArrive {
		return false // held in the ring: the sender sees a full ring
	}
	u := &unexpected{hdr: hdr, rv: rv, kind: core, id: id}
	u.msg = peers.Msg{Src: src, Tag: tag, Size: size, Ctx: u}
	if r := q.Arrive(&u.msg); r != nil {
		e.deliver(e.taken(q, r.Ctx.(*recvCtx), size), src, size, hdr, eager, rv, kind, core)
		return true
	}
	if rv.none() {
		u.data = append([]byte(nil), eager...)
		e.unexpBytes += uint64(len(u.data))
	}
	return true
}
