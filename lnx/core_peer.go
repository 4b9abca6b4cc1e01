// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only

package lnx

import (
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"
	"unsafe"

	"github.com/lnx-go/lnx-go/internal/fi"
	"github.com/lnx-go/lnx-go/internal/memmap"
	"github.com/lnx-go/lnx-go/lnx/logging"
	"github.com/lnx-go/lnx-go/peers"
	"github.com/lnx-go/lnx-go/peers/ofi"
	"github.com/lnx-go/lnx-go/peers/peerep"
)

// peerCore is the core adapter (core.go) of a network core driven through
// libfabric's peer API (peers/peerep; docs/peer-api.md "Wiring"): the core
// moves messages with its own protocols, the application's tag and CQ
// data, and no lnx header; lnx owns its receive side and completions.
//
// Matching: the core asks (peerep.Owner.Get) for the receive of every
// message it reads, inside progress, a send or a start, all of them
// called from Go with the endpoint locked: Get matches against the same
// peers.Queue as every other core (ArriveIfPosted, then Arrive), so
// any-source receives see arrivals of all cores in lnx's order. A message
// no receive wants is queued in peers.Queue as unexpected, holding the
// core's entry (rndv.pe); the receive that later takes it (Post,
// FI_CLAIM, a multi-receive carve) fills the entry and starts it
// (deliver). The core's completions (Write) become lnx completions.
//
// The callbacks run with e locked by the caller and never lock it.
type peerCore struct {
	e    *Endpoint
	fab  *ofi.Fabric // the core fabric and domain of this endpoint alone:
	dom  *ofi.Domain // 2.1 rxm takes one peer SRX per domain
	prov string      // the core's provider name (ofi.ListenerProbeable)
	ep   *peerep.EP
	blob []byte // our address blob (ofi.EncodeAddr: id and core name)

	// The core's AV: core names of AV entries inserted (byName), and the
	// transport id of each core fi_addr (byCore), by which an arrival's
	// sender is found in lnx's AV (av.byNetID).
	byName map[string]uint64
	byCore map[uint64]uint64
	names  map[uint64][]byte // core fi_addr -> core name (senderGone)
	avGen  uint64
	avSeen *AV

	// A peer that knows us only by our core address (fi_getinfo's
	// node/service: bound says ours was set that way) sends its first
	// messages before we know it: the core names their sender
	// FI_ADDR_NOTAVAIL (anon counts them), so we cannot tell which peer
	// it was. Such a peer, on our node, would not recognise us over shm
	// (reachedOverNet): a bound endpoint that had one answers every peer
	// over this core, which every peer can attribute.
	bound bool
	anon  uint64

	// checkBufs: FI_LNX_CHECK_SEND_BUFFERS (memmap.Checked before a send
	// the core reads later; one copied in this process is always checked).
	checkBufs bool

	// Lent to C (lend): lent until takeBack, then adoptDue until disarm
	// adopts what C left to Go. srcAV, srcGen, srcN: what lendSrcs last
	// told C from.
	lent, adoptDue bool
	srcAV          *AV
	srcGen         uint64
	srcN           int

	// Sends from C while lent (lnx_pep_send_lent, lnx_pep_send_lent_big):
	// the lnx fi_addrs published to C (publish) and each one's side
	// transport peer (nil for none), unpublished when it is declared gone;
	// cInjects counts what C sent, cBig those of them over the core's
	// inject size (counted in sends, the rest in injects).
	dsts     map[uint64]*ofi.Peer
	cInjects uint64
	cBig     uint64

	recvs map[uint64]peerRecv // receives the core is filling, by id (values: no allocation per message)
	early map[uint64]error    // send completions written inside the send call
	next  uint64

	// Liveness: 2.1 rxm never completes a send whose receiver died.
	// Each send in the core is watched on the peer's side transport
	// (ep.go, openSide), which probes the peer while it waits and
	// declares it gone (peerGone) when it stops answering and its
	// listener is gone, as the adapter's transport does; without one, by
	// asking the receiver's listener (peer_alive.go). Its sends then
	// fail. A failed send's later core completion is dropped.
	watch   map[uint64]*ofi.Peer    // sends in the core, by id: the peer's side transport
	lwatch  map[uint64]uint64       // sends in the core watched by listener, by id: the receiver's core fi_addr
	alive   map[uint64]*listenWatch // those receivers, by core fi_addr
	checks  uint64                  // listener checks made (peer_alive.go)
	csends  map[uint64]peerep.CSend // sends C made, adopted at takeBack (adoptSends), by id
	dropped map[uint64]struct{}     // sends failed by peerGone that the core still holds
	gone    uint64                  // sends failed that way
	closed  uint64                  // queued messages whose sender was gone at start (senderGone)
	stalled map[uint64]refusal      // receivers the core refuses sends to, by core fi_addr (stall)

	sends, injects, expected, started, unexpected uint64
}

// peerRecv is a receive handed to the core.
type peerRecv struct {
	r         *recvCtx
	src, size uint64
	kind      uint64
	bounce    []byte // a staging buffer (mmap'd, pinned for device copies) the core fills instead of r
}

// openPeerCore opens the peer endpoint on cd's domain; an error wrapping
// peerep.ErrRefused means the core does not take the peer API.
// src, if set, binds it (node/service with FI_SOURCE): its id is then
// ofi.NameID of the address it got, as the transport's.
func (e *Endpoint) openPeerCore(cd *coreDomain, src []byte) (*peerCore, error) {
	c := &peerCore{e: e, byName: map[string]uint64{}, byCore: map[uint64]uint64{}, names: map[uint64][]byte{},
		recvs: map[uint64]peerRecv{}, early: map[uint64]error{},
		watch: map[uint64]*ofi.Peer{}, lwatch: map[uint64]uint64{}, alive: map[uint64]*listenWatch{}, dropped: map[uint64]struct{}{}, dsts: map[uint64]*ofi.Peer{},
		stalled: map[uint64]refusal{},
		csends:  map[uint64]peerep.CSend{}}
	var err error
	if c.fab, err = ofi.OpenFabric(cd.list.Infos[0]); err != nil {
		return nil, err
	}
	c.prov = cd.choice.ProvName
	// This endpoint's alone, and lnx serializes every call into it (e's
	// lock, C's arm lock while lent, or the application in a serial lnx
	// domain): the core's own locks would only cost time.
	c.fab.Serial()
	if c.dom, err = c.fab.OpenDomain(); err != nil {
		_ = c.fab.Close()
		return nil, err
	}
	if strings.Contains(c.prov, "ofi_rxm") {
		rxmNoSAR()
	}
	ep, err := peerep.Open(c.dom.Ptr(), c.dom.InfoPtr(), src, c)
	if err != nil {
		_ = c.dom.Close()
		_ = c.fab.Close()
		return nil, err
	}
	c.ep = ep
	c.checkBufs = e.cfg().CheckSendBuffers
	ep.SetCheckBuffers(c.checkBufs)
	var b [8]byte
	_, _ = rand.Read(b[:])
	id := binary.LittleEndian.Uint64(b[:])&(1<<56-1) | 1
	if src != nil {
		id = ofi.NameID(ep.Name())
		c.bound = true
	}
	c.blob = ofi.EncodeAddr(id, ep.Name())
	return c, nil
}

// rxmNoSAR turns rxm's SAR protocol off (FI_OFI_RXM_SAR_LIMIT at or
// below the eager limit, read when an rxm endpoint opens) unless the user
// set the variable: 2.1 rxm crashes when it closes a connection (its
// peer died) while a SAR message from it is half received, since
// rxm_close_conn hands the records of its own list of such messages to
// the owner's free_entry as if they were owner entries (a call through a
// pointer read from rxm's record: PC 0 in soak_short's core dumps).
// Messages over the eager limit go by rendezvous instead, whose queued
// entries lnx checks before it starts them (senderGone). The user's
// setting is read through Getenv (C's environment): os.LookupEnv sees
// the copy Go took at load, without what the application set since, and
// lnx overwrote that setting with 0.
func rxmNoSAR() {
	if Getenv("FI_OFI_RXM_SAR_LIMIT") == "" {
		_ = os.Setenv("FI_OFI_RXM_SAR_LIMIT", "0")
	}
}

// peerAPIUsable says whether the running libfabric's peer structs are the
// v2 ones lnx mirrors (2.0 to 2.2).
func peerAPIUsable() bool {
	v := ofi.RuntimeVersion()
	major, minor := v>>16, v&0xffff
	return major == 2 && minor <= 2
}

func (c *peerCore) addr() CoreAddr { return CoreAddr{Kind: corePeer, Raw: c.blob} }
func (c *peerCore) paced() bool    { return true }
func (c *peerCore) quiet() bool    { return true }
func (c *peerCore) housekeep()     {}
func (c *peerCore) canLend() bool  { return true }
func (c *peerCore) release()       {}

func (c *peerCore) idleWords(*watchSet)  {}
func (c *peerCore) armedWords(*watchSet) {}

// lend lends the core to C's CQ path when progress would poll it on every
// call (netHotNow; a quiet one stays with Go, polled on its clock, as
// netCore's): C then reads the core's CQ itself and answers get_* from
// the armed receives (peerep's pep.c, capi/include/lnx_pep_lend.h),
// leaving to Go, in order, every message it cannot match as Go would.
func (c *peerCore) lend(a *armMem, _ uint64) bool {
	if !c.e.netHotNow() || c.ep.Held() {
		return true
	}
	c.sync()
	c.lendSrcs()
	c.ep.SetTx(c.e.cSendable()) // statistics allowed: C counts its sends (takeBack adds them)
	a.pep = uintptr(c.ep.Ptr())
	c.lent = true
	return true
}

// takeBack: what C left to Go is adopted at the end of disarm (adopt),
// once the receives C took or armed are back in Go's queues. The sends C
// made count as Endpoint.Send's would have. What the core read, wrote or
// sent while C polled it counts as network activity, and C's idle polls
// cool it, as a lent transport's do (lentPolls): while the core is lent
// the gate lets reads into Go only every gateDutyGap (watchArmed), too
// seldom for Go's own polls to cool a core gone quiet.
func (c *peerCore) takeBack([]uint64) {
	if c.lent {
		c.lent, c.adoptDue = false, true
		n, b, big := c.ep.TakeTx()
		if n > 0 {
			c.injects += n - big
			c.sends += big
			c.cInjects += n
			c.cBig += big
			st := &c.e.stats[kindNet]
			st.txMsgs += n
			st.txBytes += b
		}
		reads, events := c.ep.TakeReads()
		c.e.lentPolls(n > 0 || events > 0, reads)
		c.adoptSends()
	}
}

// adoptSends (e locked, not lent) takes over the sends C made over the
// inject size that the core still holds: each gets an id its completion
// carries (SendC), and is watched as Go's own sends are (send), so that
// a receiver that died fails it (peerGone, listenerGone). One to a peer
// declared gone meanwhile fails at once.
func (c *peerCore) adoptSends() {
	for {
		id := c.e.nextSend + 1
		s, ok := c.ep.PopSend(id)
		if !ok {
			return
		}
		c.e.nextSend = id
		var side *ofi.Peer
		var dest uint64
		if rt := c.e.routes[s.Dst]; rt != nil {
			side, dest = rt.net, rt.pfa
		}
		if err := c.goneTo(dest, side); err != nil {
			c.dropped[id] = struct{}{}
			c.gone++
			c.e.completeSend(ptrOf(s.Ctx), s.Flags, s.CQ, err)
			continue
		}
		c.csends[id] = s
		c.watchSend(id, dest, side)
	}
}

// errSideGone fails a send to a peer whose side transport declared it gone.
var errSideGone = fi.Wrap(fi.EIO, "peer is gone (its side transport stopped answering)")

// SendC (peerep.Owner): a send C made completed where C could not write
// its completion (the ring full, after Go adopted it, or an error).
func (c *peerCore) SendC(id, flags uint64, ctx uintptr, cq bool, errno, provErr int) {
	var err error
	if errno != 0 {
		err = fi.Wrap(fi.Errno(errno), "peer core send failed (prov_errno %d)", provErr)
	}
	if id != 0 {
		if !c.settle(id) {
			return
		}
		delete(c.csends, id)
	}
	c.e.completeSend(ptrOf(ctx), flags, cq, err)
}

// settle ends the watch of send id, whose core completion came; false
// when peerGone failed it already (the completion is then dropped).
func (c *peerCore) settle(id uint64) bool {
	if _, ok := c.dropped[id]; ok {
		delete(c.dropped, id)
		return false
	}
	if p, ok := c.watch[id]; ok {
		delete(c.watch, id)
		p.Transport().Unwatch(p)
	}
	c.unwatchListener(id)
	return true
}

// finishSend completes send id with err: Endpoint.Send's, or one C made
// and Go adopted (adoptSends).
func (c *peerCore) finishSend(id uint64, err error) {
	if s, ok := c.csends[id]; ok {
		delete(c.csends, id)
		c.e.completeSend(ptrOf(s.Ctx), s.Flags, s.CQ, err)
		return
	}
	c.e.onSendDone(id, err)
}

// ptrOf is the application's pointer that C kept as an integer.
func ptrOf(p uintptr) unsafe.Pointer { return *(*unsafe.Pointer)(unsafe.Pointer(&p)) }

// publish lets C send to lnx fi_addr addr over the core (rt, the route
// just made; e locked), unless it was declared gone (goneTo) or its
// messages wait for answers to key revokes (revokeHeld).
func (c *peerCore) publish(addr uint64, rt *route) {
	if addr >= peerep.MaxDsts || c.goneTo(rt.pfa, rt.net) != nil {
		return
	}
	if r := c.e.rma; r != nil && rt.net != nil && r.revoking[rt.net] != nil {
		return
	}
	c.dsts[addr] = rt.net
	c.ep.SetDst(addr, rt.pfa, true)
}

// unpublish stops C sending to addr (it left the AV, or its peer is
// gone): Go then sends, and fails the send as before.
func (c *peerCore) unpublish(addr uint64) {
	if _, ok := c.dsts[addr]; ok {
		delete(c.dsts, addr)
		c.ep.SetDst(addr, 0, false)
	}
}

// hold stops C sending to the lnx fi_addrs of side transport peer side
// (e locked): Go's send holds what goes to it (revokeHeld) until
// revokeRelease publishes them again.
func (c *peerCore) hold(side *ofi.Peer) {
	for addr, p := range c.dsts {
		if p == side {
			c.unpublish(addr)
		}
	}
}

// adopt (e locked, not lent) hands Go the completions C could not write
// and the messages C left to Go, each as Get would have had it on
// arrival; the core queued those, so a receive that takes one starts it.
func (c *peerCore) adopt() {
	c.adoptDue = false
	c.e.netActive()
	c.ep.Adopt(c.arrived)
}

// arrived is Get for message pe, which C left to Go and the core queued.
func (c *peerCore) arrived(tagged bool, pe peerep.Entry) {
	e := c.e
	size, tag := pe.Size(), pe.Tag()
	if pe.Addr() == fi.ADDR_NOTAVAIL {
		c.anon++
	}
	src := c.entrySource(pe)
	q := e.queue(tagged)
	kind := opKindFlags(tagged)
	hdr := msgHdr{Tag: tag}
	if tagged {
		hdr.Flags |= hdrTagged
	} else {
		hdr.Tag = 0
	}
	u := &unexpected{hdr: hdr, rv: rndv{pe: pe, pc: c}, kind: kindNet}
	u.msg = peers.Msg{Src: src, Tag: hdr.Tag, Size: size, Ctx: u}
	if r := q.Arrive(&u.msg); r != nil {
		if d, ok := pe.CQData(); ok {
			hdr.Data, hdr.Flags = d, hdr.Flags|hdrData
		}
		c.start(e.taken(q, r.Ctx.(*recvCtx), size), src, size, hdr, pe, kind)
		return
	}
	c.unexpected++
	e.lastBig = false
}

// lendSrcs tells C the lnx fi_addr of each core fi_addr it may see (when
// the AV or the core's AV changed since it last did).
func (c *peerCore) lendSrcs() {
	av := c.e.av
	var gen uint64
	if av != nil {
		gen = av.gen.Load()
	}
	if av == c.srcAV && gen == c.srcGen && len(c.byCore) == c.srcN {
		return
	}
	c.srcAV, c.srcGen, c.srcN = av, gen, len(c.byCore)
	for a := range uint64(peerep.MaxSrcs) {
		c.ep.SetSrc(a, 0, false)
	}
	for a := range c.byCore {
		if a < peerep.MaxSrcs {
			src := c.source(a)
			c.ep.SetSrc(a, src, src != fi.ADDR_NOTAVAIL)
		}
	}
}

// WriteC (peerep.Owner): a receive C matched completed where C could not
// write its completion (its ring full, or a completion after C's poll).
func (c *peerCore) WriteC(flags, n, data, tag, src uint64, ctx, buf uintptr, blen uint64, errno, provErr int) {
	e := c.e
	r := e.getRecv()
	r.ctx = *(*unsafe.Pointer)(unsafe.Pointer(&ctx))
	r.flags = fi.COMPLETION // C armed it: it completes
	if buf != 0 || blen != 0 {
		r.n = 1
		r.iov[0] = Buf{Ptr: *(*unsafe.Pointer)(unsafe.Pointer(&buf)), Len: blen}
	}
	hdr := msgHdr{}
	kind := opKindFlags(flags&fi.TAGGED != 0)
	if flags&fi.TAGGED != 0 {
		hdr.Tag, hdr.Flags = tag, hdrTagged
	}
	if flags&fi.REMOTE_CQ_DATA != 0 {
		hdr.Data, hdr.Flags = data, hdr.Flags|hdrData
	}
	var err error
	if errno != 0 {
		err = fi.Wrap(fi.Errno(errno), "peer core receive failed (prov_errno %d)", provErr)
		n = 0
	} else {
		e.stats[kindNet].rxByPeer++
	}
	e.complete(r, src, n, min(n, blen), hdr, kind, kindNet, err)
}

func (c *peerCore) close() error {
	return errors.Join(c.ep.Close(), c.dom.Close(), c.fab.Close())
}

// poll inserts senders new to lnx's AV into the core's AV (so that the
// core reports their fi_addr), then drives the core: its callbacks match,
// queue and complete inside.
func (c *peerCore) poll() {
	if c.sync() {
		c.e.resolveAnon()
	}
	n := c.sends + c.expected + c.started + c.unexpected
	_ = c.ep.Progress()
	c.checkAlive()
	if c.sends+c.expected+c.started+c.unexpected != n {
		c.e.netActive()
	} else if len(c.recvs) > 0 || c.e.netSends > 0 || len(c.csends) > 0 || c.ep.Pending() > 0 {
		c.e.netBusy()
	}
}

// sync puts the peer-core addresses of lnx's AV into the core's AV,
// reporting whether the core's AV grew.
func (c *peerCore) sync() bool {
	av := c.e.av
	if av == nil {
		return false
	}
	gen := av.gen.Load()
	if av == c.avSeen && gen == c.avGen {
		return false
	}
	c.avSeen, c.avGen = av, gen
	av.mu.RLock()
	var blobs [][]byte
	for _, ent := range av.entries {
		if ent != nil {
			blobs = append(blobs, peerAddrsOf(ent.addr)...)
			blobs = append(blobs, netAddrsOf(ent.addr)...) // node/service addresses
		}
	}
	av.mu.RUnlock()
	had := len(c.byName)
	for _, b := range blobs {
		_, _ = c.connect(b)
	}
	return len(c.byName) != had
}

// connect inserts a peer's blob into the core's AV (once per core name).
func (c *peerCore) connect(blob []byte) (uint64, error) {
	name, err := ofi.AddrName(blob)
	if err != nil {
		return 0, err
	}
	id, err := ofi.AddrID(blob)
	if err != nil {
		return 0, err
	}
	if fa, ok := c.byName[string(name)]; ok {
		c.byCore[fa] = id
		return fa, nil
	}
	fa, err := c.ep.Insert(name)
	if err != nil {
		return 0, err
	}
	c.byName[string(name)] = fa
	c.byCore[fa] = id
	c.names[fa] = name
	return fa, nil
}

// reachedUs says whether a peer may know us only by our core address
// (bound): some unknown sender reached us over this core.
func (c *peerCore) reachedUs() bool { return c.bound && c.anon > 0 }

// entrySource is the lnx fi_addr of the sender of the message the core
// queued as pe, asking the core again when it did not know the sender on
// arrival (it may since, its AV grown).
func (c *peerCore) entrySource(pe peerep.Entry) uint64 {
	return c.source(c.ep.SenderAddr(pe))
}

// source is the lnx fi_addr of the core fi_addr a (FI_ADDR_NOTAVAIL when
// the sender was not in the core's AV).
func (c *peerCore) source(a uint64) uint64 {
	id, ok := c.byCore[a]
	if !ok || c.e.av == nil {
		return fi.ADDR_NOTAVAIL
	}
	return c.e.av.byNetID(id)
}

// Get (peerep.Owner): the core read a message; match it in lnx's order.
func (c *peerCore) Get(tagged bool, addr, size, tag uint64, pe peerep.Entry) bool {
	e := c.e
	src := c.source(addr)
	if addr == fi.ADDR_NOTAVAIL {
		c.anon++
	}
	q := e.queue(tagged)
	kind := opKindFlags(tagged)
	if !tagged {
		tag = 0
	}
	e.probe = peers.Msg{Src: src, Tag: tag, Size: size}
	if r := q.ArriveIfPosted(&e.probe); r != nil {
		c.expected++
		rc := e.taken(q, r.Ctx.(*recvCtx), size)
		return c.bind(pe, rc, src, size, kind, size > rc.capacity() || rc.dev) == nil
	}
	hdr := msgHdr{Tag: tag}
	if tagged {
		hdr.Flags |= hdrTagged
	}
	u := &unexpected{hdr: hdr, rv: rndv{pe: pe, pc: c}, kind: kindNet}
	u.msg = peers.Msg{Src: src, Tag: tag, Size: size, Ctx: u}
	if r := q.Arrive(&u.msg); r != nil {
		c.expected++
		rc := e.taken(q, r.Ctx.(*recvCtx), size)
		return c.bind(pe, rc, src, size, kind, size > rc.capacity() || rc.dev) == nil
	}
	c.unexpected++
	e.lastBig = false
	return false
}

// Queued (peerep.Owner): the core queued the entry Get left unexpected;
// its CQ data is in the entry now (peek reads it there).
func (c *peerCore) Queued(peerep.Entry) {}

// bind gives entry pe the receive r and remembers r until it completes.
// bounce: the core fills a C buffer of the message's size, copied into r
// at completion (device buffers, which the core cannot address, and
// messages larger than r). lnx truncates itself: 2.1 shm crashes in start_tag when
// a queued message is larger than the receive, and never completes the
// send of a 1 MiB message truncated on arrival.
func (c *peerCore) bind(pe peerep.Entry, r *recvCtx, src, size, kind uint64, bounce bool) error {
	c.next++
	id := c.next
	var bases [peerep.MaxIov]unsafe.Pointer
	var lens [peerep.MaxIov]uint64
	n := min(r.n, peerep.MaxIov)
	for i := range n {
		bases[i], lens[i] = r.iov[i].Ptr, r.iov[i].Len
	}
	p := peerRecv{r: r, src: src, size: size, kind: kind}
	if bounce {
		b, err := c.e.stage.get(max(size, 1))
		if err != nil {
			return err
		}
		p.bounce = b
		bases[0], lens[0], n = unsafe.Pointer(unsafe.SliceData(b)), size, 1
	}
	if err := pe.Set(bases[:n], lens[:n], id); err != nil {
		c.e.stage.put(p.bounce)
		return err
	}
	c.recvs[id] = p
	return nil
}

// landed copies a bounced receive's n bytes into its buffers (device
// buffers through the device runtime): the bytes placed.
func (c *peerCore) landed(p *peerRecv, n uint64) (uint64, error) {
	if p.bounce == nil {
		return n, nil
	}
	var err error
	data := p.bounce[:min(n, p.size)]
	if p.r.dev {
		n, err = scatterKinds(p.r.bufs(), p.r.kinds[:p.r.n], data)
	} else {
		n = scatter(p.r.bufs(), data)
	}
	c.e.stage.put(p.bounce)
	p.bounce = nil
	return n, err
}

// start starts a queued message into receive r (deliver).
func (c *peerCore) start(r *recvCtx, src, size uint64, hdr msgHdr, pe peerep.Entry, kind uint64) {
	tagged := hdr.Flags&hdrTagged != 0
	if c.senderGone(pe) {
		c.closed++
		if err := c.ep.Discard(pe, tagged); err != nil {
			logging.Warnf(logging.EPData, "discarding a message whose sender is gone: %v", err)
		}
		c.e.complete(r, src, size, 0, hdr, kind, kindNet, fi.Wrap(fi.ECONNABORTED,
			"the sender of this %d-byte message is gone (its listener refuses connections)", size))
		return
	}
	err := c.bind(pe, r, src, size, kind, size > r.capacity() || r.dev)
	if err == nil {
		c.started++
		id := c.next
		if err = c.ep.Start(pe, tagged); err != nil {
			delete(c.recvs, id)
		}
	}
	if err != nil {
		c.e.complete(r, src, size, 0, hdr, kind, kindNet, err)
	}
}

// senderGone says, right before start, whether the sender of queued entry
// pe is gone. 2.1 rxm closes a connection when it reads its peer's
// shutdown (a killed process's kernel sends it) and frees it, but keeps
// the messages of it that it queued with us and tells us nothing; its
// start of such a message larger than it holds itself (rendezvous, and
// SAR not yet whole) then uses the closed connection: a crash. The
// process that sent it closed its listener too, so a connection to the
// sender's core address is refused then: lnx asks, for each message over
// the core's inject size, and discards instead of starting. No core
// progress runs between the answer and the start, so rxm cannot close the
// connection in between; an accepted connection (the sender alive, or
// stopped) or no answer in time starts it as before.
func (c *peerCore) senderGone(pe peerep.Entry) bool {
	if pe.Size() <= uint64(c.ep.Inject) {
		return false // the core holds all of it
	}
	name, ok := c.names[pe.Addr()]
	if !ok || !ofi.ListenerProbeable(c.prov, name) {
		return false // an unknown sender (FI_ADDR_NOTAVAIL), or no TCP listener to ask
	}
	return ofi.Refused(name, min(c.e.Domain.cfg.PeerTimeout, time.Second))
}

// Write (peerep.Owner): an operation completed.
func (c *peerCore) Write(id, flags, n, data, tag, src uint64) {
	e := c.e
	if flags&fi.RECV != 0 {
		p, hdr := c.takeRecv(id, flags, data, tag)
		if p == nil {
			return
		}
		placed, err := c.landed(p, n)
		if err == nil {
			e.stats[kindNet].rxByPeer++
		}
		e.complete(p.r, p.src, max(p.size, n), placed, hdr, p.kind, kindNet, err)
		return
	}
	c.sendDone(id, nil)
}

// takeRecv removes receive id from those the core is filling and builds
// the lnx header its completion carries; nil if id is not one.
func (c *peerCore) takeRecv(id, flags, data, tag uint64) (*peerRecv, msgHdr) {
	v, ok := c.recvs[id]
	if !ok {
		return nil, msgHdr{}
	}
	p := &v // the caller's to use: stays on its stack
	delete(c.recvs, id)
	hdr := msgHdr{}
	if flags&fi.TAGGED != 0 {
		hdr.Tag, hdr.Flags = tag, hdrTagged
	}
	if flags&fi.REMOTE_CQ_DATA != 0 {
		hdr.Data, hdr.Flags = data, hdr.Flags|hdrData
	}
	return p, hdr
}

// WriteErr (peerep.Owner): an operation failed; a truncated receive
// completes as lnx truncates (FI_ETRUNC with its overflow).
func (c *peerCore) WriteErr(id, flags, n, data, tag uint64, errno, provErr int, olen uint64) {
	e := c.e
	if flags&fi.RECV != 0 {
		p, hdr := c.takeRecv(id, flags, data, tag)
		if p == nil {
			return
		}
		var err error
		if p.bounce != nil {
			n, _ = c.landed(p, n)
		} else if fi.Errno(errno) == fi.ETRUNC {
			// The buffers were filled (shm reports len 0, rxm the
			// message's length).
			n = min(p.r.capacity(), p.size)
		}
		size := p.size // from get_*: the cores' olen differ (rxm's counts more)
		if size == 0 {
			size = n + olen
		}
		if fi.Errno(errno) != fi.ETRUNC {
			err = fi.Wrap(fi.Errno(errno), "peer core receive failed (prov_errno %d)", provErr)
		} else {
			e.stats[kindNet].rxByPeer++
		}
		e.complete(p.r, p.src, size, n, hdr, p.kind, kindNet, err)
		return
	}
	c.sendDone(id, fi.Wrap(fi.Errno(errno), "peer core send failed (prov_errno %d)", provErr))
}

// sendDone completes send id, or keeps its result for Send when the core
// wrote it inside the send call (before Send recorded it).
func (c *peerCore) sendDone(id uint64, err error) {
	if !c.settle(id) {
		return
	}
	if _, ok := c.e.sends[id]; ok {
		c.e.onSendDone(id, err)
		return
	}
	c.early[id] = err
}

// peerGone (the side transport's Config.OnError, inside its Poll, e
// locked): a peer declared gone fails the sends the core holds for it.
// The core may still write their completions (dropped).
func (c *peerCore) peerGone(src uint64, err error) {
	if src == 0 || !errors.Is(err, ofi.ErrPeerGone) {
		return
	}
	for addr, p := range c.dsts {
		if p != nil && p.ID() == src {
			c.unpublish(addr)
		}
	}
	for id, p := range c.watch {
		if p.ID() != src {
			continue
		}
		delete(c.watch, id)
		c.dropped[id] = struct{}{}
		c.gone++
		c.finishSend(id, err)
	}
	for dest, r := range c.stalled {
		if r.side != nil && r.side.ID() == src {
			c.unstall(dest)
		}
	}
}

// send sends one message to the core fi_addr dest; done: it needs no
// completion (an inject, or one the core wrote inside the call).
//
// side, if not nil, is the peer on the side transport, which watches it
// while the send is in the core (peerGone); else its listener does
// (watchSend).
func (c *peerCore) send(dest uint64, side *ofi.Peer, tagged bool, hdr msgHdr, iovs [][]byte, inject bool, id uint64) (bool, error) {
	if err := c.goneTo(dest, side); err != nil {
		return false, err
	}
	var bases [peerep.MaxIov]unsafe.Pointer
	var lens [peerep.MaxIov]uint64
	if len(iovs) > peerep.MaxIov {
		return false, fi.Wrap(fi.EINVAL, "%d pieces exceed the peer core's %d", len(iovs), peerep.MaxIov)
	}
	// The core reads the buffer itself: one not mapped over its length
	// would fail inside tcp and break the connection (internal/memmap).
	// FI_LNX_CHECK_SEND_BUFFERS=0 leaves that to the core, but for a
	// buffer copied in this process (an inject, or within the core's
	// inject size), which would crash it.
	check := c.checkBufs || inject
	if !check {
		total := 0
		for _, b := range iovs {
			total += len(b)
		}
		check = total <= c.ep.Inject
	}
	n := 0
	for _, b := range iovs {
		if len(b) == 0 {
			continue
		}
		if check && !memmap.Checked(b) {
			return false, fi.Wrap(fi.EFAULT, "send buffer of %d bytes at %p is not mapped over its length", len(b), unsafe.SliceData(b))
		}
		bases[n], lens[n] = unsafeSliceData(b), uint64(len(b))
		n++
	}
	done, err := c.ep.Send(tagged, bases[:n], lens[:n], dest, hdr.Tag, hdr.Data, hdr.Flags&hdrData != 0, inject, id)
	c.stall(dest, side, errors.Is(err, peerep.ErrAgain))
	if err != nil {
		return false, err
	}
	if done {
		c.injects++
	} else {
		c.sends++
		if eerr, ok := c.early[id]; ok {
			delete(c.early, id)
			return true, eerr
		}
		c.watchSend(id, dest, side)
	}
	return done, nil
}

// writeStats: the line that says the peer path carried traffic.
func (c *peerCore) writeStats(w io.Writer) {
	if c.sends+c.injects+c.expected+c.started+c.unexpected == 0 {
		return
	}
	var gone string
	if c.gone > 0 {
		gone = fmt.Sprintf(", %d sends failed for a peer gone", c.gone)
	}
	if c.closed > 0 {
		gone += fmt.Sprintf(", %d queued messages of a sender gone discarded", c.closed)
	}
	if c.checks > 0 {
		gone += fmt.Sprintf(", %d liveness checks of receivers' listeners", c.checks)
	}
	if c.cInjects > 0 {
		gone += fmt.Sprintf(", %d sent in C", c.cInjects)
		if c.cBig > 0 {
			gone += fmt.Sprintf(" (%d over the inject size)", c.cBig)
		}
	}
	fmt.Fprintf(w, "lnx: pid %d link %s peer API: sends %d, injects %d, receives matched on arrival %d, unexpected %d (started %d)%s\n",
		os.Getpid(), c.e.Domain.Link.Name(), c.sends, c.injects, c.expected, c.unexpected, c.started, gone)
}

func unsafeSliceData(b []byte) unsafe.Pointer { return unsafe.Pointer(unsafe.SliceData(b)) }
