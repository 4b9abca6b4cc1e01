package lnx

import (
	"errors"
	"unsafe"

	"github.com/lnx-go/lnx-go/lnx/fi"
	"github.com/lnx-go/lnx-go/lnx/logging"
	"github.com/lnx-go/lnx-go/peers"
	"github.com/lnx-go/lnx-go/shm"
)

// Header flag bits lnx carries through a core with each message.
const (
	hdrTagged uint32 = 1 << 0
	hdrData   uint32 = 1 << 1
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
}

func (r *recvCtx) bufs() []Buf { return r.iov[:r.n] }

// unexpected is a message that arrived before its receive was posted.
type unexpected struct {
	hdr  shm.Hdr
	data []byte          // eager payload copy
	rndv *shm.Rendezvous // large message still in the sender's memory
	msg  peers.Msg
}

// sendCtx is a send waiting for its rendezvous acknowledgement.
type sendCtx struct {
	ctx   unsafe.Pointer
	flags uint64
	len   uint64
	cq    bool // write a CQ entry
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
	if op.HasData {
		flags |= fi.REMOTE_CQ_DATA
	}
	if op.Inject {
		flags |= fi.INJECT
	}
	size := op.length()
	if flags&fi.INJECT != 0 && size > e.injectSize() {
		return fi.Wrap(fi.EMSGSIZE, "inject of %d bytes exceeds inject_size %d", size, e.injectSize())
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if !e.enabled {
		return fi.Wrap(fi.EOPBADSTATE, "endpoint not enabled")
	}
	p, err := e.shmPeer(op.Addr)
	if err != nil {
		return err
	}
	hdr := shm.Hdr{Tag: op.Tag, Flags: 0}
	if op.Tagged {
		hdr.Flags |= hdrTagged
	}
	if flags&fi.REMOTE_CQ_DATA != 0 {
		hdr.Flags |= hdrData
		hdr.Data = op.Data
	}
	var iovs [MaxIov][]byte
	for i, b := range op.Iov() {
		iovs[i] = b.bytes()
	}
	e.nextSend++
	id := e.nextSend
	done, err := e.shm.Send(p, hdr, iovs[:op.N], id)
	if errors.Is(err, shm.ErrAgain) {
		e.progressLocked()
		return fi.EAGAIN
	}
	if err != nil {
		return fi.Wrap(fi.EIO, "shm send: %v", err)
	}
	// Only the fi_inject* calls suppress the completion; FI_INJECT on a
	// …msg call just means the buffer is reusable on return.
	e.stats[kindShm].tx(size)
	wantCQ := !op.Inject && (!e.txSel || flags&fi.COMPLETION != 0)
	cflags := fi.SEND | opKindFlags(op.Tagged)
	if done {
		e.completeSend(op.Ctx, cflags, wantCQ, nil)
		return nil
	}
	e.sends[id] = &sendCtx{ctx: op.Ctx, flags: cflags, len: size, cq: wantCQ}
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
		e.txCQ.PushErr(Completion{Ctx: ctx, Flags: flags, Err: fi.EIO, ProvErr: fi.Code(err)})
		return
	}
	if wantCQ {
		e.txCQ.Push(Completion{Ctx: ctx, Flags: flags})
	}
}

func (e *Endpoint) injectSize() uint64 { return e.Domain.Link.lim.inject }

// shmPeer returns (connecting on first use) the shm peer behind fi_addr.
func (e *Endpoint) shmPeer(addr uint64) (*shm.Peer, error) {
	if p, ok := e.peers[addr]; ok {
		return p, nil
	}
	ent := e.av.entry(addr)
	if ent == nil {
		return nil, fi.Wrap(fi.EINVAL, "fi_addr %d is not in the AV", addr)
	}
	if e.shm == nil {
		return nil, fi.Wrap(fi.ENOSYS, "no shm core in this link and network cores are not wired yet")
	}
	raw, ok := shmAddrOf(ent.addr)
	if !ok {
		return nil, fi.Wrap(fi.EHOSTUNREACH, "peer %d has no shm core", addr)
	}
	if ent.addr.Node != e.node {
		return nil, fi.Wrap(fi.EHOSTUNREACH, "peer %d is on another node and no network core is wired yet", addr)
	}
	p, err := e.shm.Connect(raw)
	if err != nil {
		return nil, fi.Wrap(fi.EHOSTUNREACH, "shm connect to %d: %v", addr, err)
	}
	e.peers[addr] = p
	return p, nil
}

// Recv posts a receive (or, with FI_PEEK/FI_CLAIM, inspects unexpected
// messages).
func (e *Endpoint) Recv(op *Op) error {
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
	e.mu.Lock()
	defer e.mu.Unlock()
	if !e.enabled {
		return fi.Wrap(fi.EOPBADSTATE, "endpoint not enabled")
	}
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
	r := e.newRecv(op, flags)
	r.rec = peers.Recv{Src: src, Tag: op.Tag, Ignore: ignore, Ctx: r}
	if m := q.Post(&r.rec); m != nil {
		e.deliverUnexpected(r, m, kind)
	}
	return nil
}

// newRecv takes a receive record from the endpoint's free list (records
// return there when they complete), so posting allocates nothing.
func (e *Endpoint) newRecv(op *Op, flags uint64) *recvCtx {
	var r *recvCtx
	if n := len(e.freeRecvs); n > 0 {
		r, e.freeRecvs = e.freeRecvs[n-1], e.freeRecvs[:n-1]
		*r = recvCtx{}
	} else {
		r = new(recvCtx)
	}
	r.n, r.ctx, r.flags, r.tag = op.N, op.Ctx, flags, op.Tag
	r.iov = op.IovBuf
	return r
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
	if flags&fi.DISCARD != 0 {
		e.discard(m)
	}
	e.rxCQ.Push(c)
	return nil
}

func (e *Endpoint) discard(m *peers.Msg) {
	u := m.Ctx.(*unexpected)
	if u.rndv != nil {
		if err := e.shm.Discard(u.rndv); err != nil {
			logging.Warnf(logging.EPData, "discarding a large message: %v", err)
		}
	}
	e.unexpBytes -= uint64(len(u.data))
}

// deliverUnexpected completes r with a message that was queued unexpected.
func (e *Endpoint) deliverUnexpected(r *recvCtx, m *peers.Msg, kind uint64) {
	u := m.Ctx.(*unexpected)
	e.unexpBytes -= uint64(len(u.data))
	e.deliver(r, m.Src, m.Size, u.hdr, u.data, u.rndv, kind)
}

// deliver copies a message into a posted receive and completes it.
func (e *Endpoint) deliver(r *recvCtx, src, size uint64, hdr shm.Hdr, data []byte, rndv *shm.Rendezvous, kind uint64) {
	var capacity uint64
	for _, b := range r.bufs() {
		capacity += b.Len
	}
	var n uint64
	var err error
	if rndv != nil {
		var dst [MaxIov][]byte
		for i, b := range r.bufs() {
			dst[i] = b.bytes()
		}
		n, err = e.shm.Pull(rndv, dst[:r.n])
	} else {
		n = scatter(r.bufs(), data)
	}
	c := Completion{Ctx: r.ctx, Flags: fi.RECV | kind, Len: n, Tag: hdr.Tag, Src: src}
	if r.n > 0 {
		c.Buf = r.iov[0].Ptr
	}
	if hdr.Flags&hdrData != 0 {
		c.Flags |= fi.REMOTE_CQ_DATA
		c.Data = hdr.Data
	}
	wantCQ := !e.rxSel || r.flags&fi.COMPLETION != 0
	e.putRecv(r) // everything needed is in c now
	e.stats[kindShm].rx(n)
	cntr := e.cntrs[fi.RECV]
	switch {
	case err != nil:
		e.stats[kindShm].errors++
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
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, tagged := range []bool{true, false} {
		r := e.queue(tagged).Cancel(func(r *peers.Recv) bool { return r.Ctx.(*recvCtx).ctx == ctx })
		if r == nil {
			continue
		}
		rc := r.Ctx.(*recvCtx)
		if e.rxCQ != nil {
			e.rxCQ.PushErr(Completion{Ctx: ctx, Flags: fi.RECV | opKindFlags(tagged), Tag: rc.tag, Err: fi.ECANCELED})
		}
		return nil
	}
	return fi.Wrap(fi.ENOENT, "fi_cancel: no pending receive with that context")
}

// progress drives the endpoint's cores.
func (e *Endpoint) progress() {
	e.mu.Lock()
	e.progressLocked()
	e.mu.Unlock()
}

func (e *Endpoint) progressLocked() {
	if e.shm == nil || !e.enabled {
		return
	}
	e.shm.Poll(e.arriveFn, e.sendDone)
}

func (e *Endpoint) onSendDone(id uint64, err error) {
	s, ok := e.sends[id]
	if !ok {
		return
	}
	delete(e.sends, id)
	e.completeSend(s.ctx, s.flags, s.cq, err)
}

// onArrival matches one message from shm. Over the unexpected budget, a
// message no posted receive wants stays in the ring (returning false), so
// the sender's ring fills and it sees -FI_EAGAIN: flow control instead of
// unbounded buffering.
func (e *Endpoint) onArrival(a *shm.Arrival) bool {
	tagged := a.Hdr.Flags&hdrTagged != 0
	q := e.queue(tagged)
	src := e.av.byShmID(a.Src)
	kind := opKindFlags(tagged)
	tag := a.Hdr.Tag
	if !tagged {
		tag = 0
	}
	// Expected message: match with a scratch record, allocate nothing.
	e.probe = peers.Msg{Src: src, Tag: tag, Size: a.Size}
	if r := q.ArriveIfPosted(&e.probe); r != nil {
		e.deliver(r.Ctx.(*recvCtx), src, a.Size, a.Hdr, a.Eager, a.Rndv, kind)
		return true
	}
	if e.unexpBytes > 0 && e.unexpBytes+uint64(len(a.Eager)) > e.unexpMax {
		return false // held in the ring: the sender sees a full ring
	}
	u := &unexpected{hdr: a.Hdr, rndv: a.Rndv}
	u.msg = peers.Msg{Src: src, Tag: tag, Size: a.Size, Ctx: u}
	if r := q.Arrive(&u.msg); r != nil {
		// Nothing was posted in between (we hold e.mu), but keep Arrive's
		// answer authoritative.
		e.deliver(r.Ctx.(*recvCtx), src, a.Size, a.Hdr, a.Eager, a.Rndv, kind)
		return true
	}
	if a.Rndv == nil {
		u.data = append([]byte(nil), a.Eager...)
		e.unexpBytes += uint64(len(u.data))
	}
	return true
}
