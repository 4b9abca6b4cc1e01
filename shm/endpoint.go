// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only

package shm

import (
	"errors"
	"fmt"
	"os"
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// MaxIOV is the largest number of non-empty pieces a rendezvous send may
// have. Eager sends accept any number of pieces.
const MaxIOV = 16

// Configuration defaults.
const (
	DefaultRings     = 64
	DefaultRingBytes = 64 << 10
	DefaultEagerMax  = 4096
	DefaultBulkBytes = 256 << 10
)

const (
	drainBudget      = 64                      // records taken from one ring per Poll
	livenessInterval = int64(time.Millisecond) // between peer liveness checks
	hkInterval       = int64(time.Millisecond) // between inbound-ring housekeeping steps
	sweepInterval    = int64(10 * time.Millisecond)
	sweepBatch       = 32 // peers whose pidfds one sweep polls
)

// Config selects the geometry and behaviour of an Endpoint. The zero value
// selects the defaults.
type Config struct {
	// Rings is the number of inbound rings, i.e. the number of distinct
	// sending endpoints that can be connected to this one at a time.
	// Default DefaultRings; at most 4096.
	Rings int

	// RingBytes is the size of one inbound ring, a power of two between
	// 4 KiB and 64 MiB. Default DefaultRingBytes.
	RingBytes int

	// EagerMax is the largest payload sent inline through the ring; larger
	// messages use rendezvous. The effective threshold towards a peer is
	// the smaller of the two endpoints' values. 0 selects
	// min(DefaultEagerMax, the ring's limit); a negative value sends every
	// non-empty message by rendezvous. At most about RingBytes/2.
	EagerMax int

	// BulkBytes is the size of the per-ring window used by the fallback
	// copy (when CMA is unavailable), a multiple of 4 KiB of at least
	// 8 KiB. Default DefaultBulkBytes.
	BulkBytes int

	// DisableCMA forces the fallback copy through shared memory instead of
	// process_vm_readv, both for messages this endpoint pulls and (by a flag
	// in its requests) for messages it sends.
	DisableCMA bool

	// StallTimeout bounds how long a fallback Pull waits without progress
	// while the sender is alive; 0 waits as long as the sender lives and
	// keeps its endpoint open.
	StallTimeout time.Duration

	// OutsideRndvMax is the largest message an outside writer (lnx's C
	// fast path) may send by rendezvous itself through a peer's TxSlot
	// (TxSlot.RndvMax); 0, or DisableCMA, lets it send none. See AdoptTx.
	OutsideRndvMax uint64

	// OnError, if set, is called (from Poll) when a peer's inbound ring is
	// dropped because of corrupt data. src is the sender's endpoint id.
	OnError func(src uint64, err error)
}

func (c Config) normalize() (Config, geometry, error) {
	if c.Rings == 0 {
		c.Rings = DefaultRings
	}
	if c.RingBytes == 0 {
		c.RingBytes = DefaultRingBytes
	}
	if c.BulkBytes == 0 {
		c.BulkBytes = DefaultBulkBytes
	}
	if c.Rings < 1 || c.Rings > maxRings {
		return c, geometry{}, fmt.Errorf("shm: invalid Config.Rings %d", c.Rings)
	}
	rb := uint64(c.RingBytes)
	if c.RingBytes < minRingBytes || c.RingBytes > maxRingBytes || !isPow2(rb) {
		return c, geometry{}, fmt.Errorf("shm: invalid Config.RingBytes %d", c.RingBytes)
	}
	if c.BulkBytes < minBulkBytes || c.BulkBytes > maxBulkBytes || c.BulkBytes%pageBytes != 0 {
		return c, geometry{}, fmt.Errorf("shm: invalid Config.BulkBytes %d", c.BulkBytes)
	}
	switch {
	case c.EagerMax == 0:
		c.EagerMax = int(min(DefaultEagerMax, maxEagerFor(rb)))
	case c.EagerMax < 0:
		c.EagerMax = 0
	case uint64(c.EagerMax) > maxEagerFor(rb):
		return c, geometry{}, fmt.Errorf("shm: Config.EagerMax %d exceeds %d for RingBytes %d",
			c.EagerMax, maxEagerFor(rb), c.RingBytes)
	}
	if c.StallTimeout < 0 {
		c.StallTimeout = 0
	}
	g, ok := makeGeometry(uint64(c.Rings), rb, ackEntries, uint64(c.BulkBytes), uint64(c.EagerMax))
	if !ok {
		return c, geometry{}, errors.New("shm: invalid configuration")
	}
	return c, g, nil
}

// Hdr is the matching information carried with every message.
type Hdr struct {
	Tag   uint64 // tag (meaningful when the caller's flags say so)
	Data  uint64 // remote CQ data
	Flags uint32 // caller-defined bits, carried verbatim
}

// Arrival describes one inbound message. The Arrival passed to the Poll
// callback is reused; copy what must outlive the callback.
type Arrival struct {
	// Src is the sending endpoint's id (Peer.ID on the sender side's
	// Connect result).
	Src uint64
	// Peer is this endpoint's Peer for Src if it has Connected to the
	// sender's address, else nil.
	Peer *Peer
	// Hdr is the sender's header.
	Hdr Hdr
	// Size is the message length in bytes.
	Size uint64
	// Eager is the payload of an eager message; it points into shared
	// memory and is valid only during the callback. nil for rendezvous.
	Eager []byte
	// Rndv is non-nil for a rendezvous (large) message. If the callback
	// returns true the caller owns it and must eventually pass it to Pull
	// or Discard (it stays valid across Polls until then); if the callback
	// returns false it is invalid.
	Rndv *Rendezvous
}

// Rendezvous is the handle of a large message whose data still sits in the
// sender's memory. It is consumed by Pull or Discard.
type Rendezvous struct {
	e       *Endpoint
	ring    *inRing
	session uint64
	src     uint64
	size    uint64
	cookie  uint64
	pid     int
	hdr     Hdr
	noCMA   bool
	live    bool
	niov    int
	iov     [MaxIOV]unix.RemoteIovec
}

// Size returns the message length.
func (r *Rendezvous) Size() uint64 { return r.size }

// Src returns the sending endpoint's id.
func (r *Rendezvous) Src() uint64 { return r.src }

// Hdr returns the message header.
func (r *Rendezvous) Hdr() Hdr { return r.hdr }

// Ring states (receiver-local).
const (
	ringIdle    = iota
	ringActive  // claimed, polled
	ringClosing // sender closed or died: deliver what is left, then release
	ringBroken  // corrupt: no longer read; released once the owner is gone
)

// inRing is the receiver's private view of one of its inbound channels.
type inRing struct {
	// hot
	ring     unsafe.Pointer
	mask     uint64
	head     uint64
	salt     uint64
	pubHead  uint64
	owner    uint64
	peer     *Peer
	size     uint64
	eagerMax uint64
	ctl      *chanCtl
	state    uint8

	idx       int
	activeIdx int
	word      uint64 // ctl.state while claimed by the current owner
	session   uint64 // bumped on every release; validates Rendezvous handles
	noCMA     bool
	proc      proc

	ack     unsafe.Pointer
	ackMask uint64
	ackTail uint64
	bulk    unsafe.Pointer
	half    uint64
	bulkGen uint32
	bulkOK  bool // the bulk window's pages are allocated (allocBulk)
}

// sendSlot tracks one outstanding rendezvous send.
type sendSlot struct {
	sendID uint64
	size   uint64
	gen    uint32
	inUse  bool
	niov   int
	iov    [MaxIOV][]byte
}

// stream is the sender side of a fallback copy in progress.
type stream struct {
	active   bool
	gen      uint32
	slot     uint32
	produced uint32
	want     uint64
	off      uint64
	cur      iovCursor
}

// Peer is a connection to a remote endpoint, used to send to it.
type Peer struct {
	// hot (Send)
	ring      unsafe.Pointer // nil until a ring is claimed, and after death
	mask      uint64
	size      uint64
	tail      uint64
	headCache uint64
	eagerMax  uint64
	salt      uint64
	ctl       *chanCtl
	e         *Endpoint

	id   uint64
	pid  int
	name string
	mem  []byte
	base unsafe.Pointer
	hdr  *regionHdr
	geo  geometry
	proc proc
	ctx  any
	dead bool
	word uint64 // ctl.state while we own the channel

	ackRing  unsafe.Pointer
	ackMask  uint64
	ackHead  uint64
	bulk     unsafe.Pointer
	bulkHalf uint64
	bulkSeen uint32
	fullTick uint32

	slots       []sendSlot
	free        []uint32
	cslots      []sendSlot // the sends of tx.R Go adopted (AdoptTx), by index
	outstanding int
	maxOut      int
	busyIdx     int
	st          stream

	tx     *TxSlot // shared with outside writers; nil if none was left
	txHeld bool    // Send holds tx.Lock

	watchIdx int // index in Endpoint.watch while mapped, else -1
}

// ID returns the remote endpoint's id; it equals Arrival.Src for messages
// that endpoint sends.
func (p *Peer) ID() uint64 { return p.id }

// EagerMax returns the largest payload sent eagerly (inline) to this peer.
func (p *Peer) EagerMax() int { return int(p.eagerMax) }

// SetContext attaches an arbitrary caller value to the peer.
func (p *Peer) SetContext(v any) { p.ctx = v }

// Context returns the value set by SetContext.
func (p *Peer) Context() any { return p.ctx }

type doneEvt struct {
	sendID uint64
	err    error
}

// Stats are cumulative counters of an Endpoint.
type Stats struct {
	ActiveRings   int    // inbound rings currently claimed and polled
	Peers         int    // connected peers
	CMAPulls      uint64 // rendezvous pulled with process_vm_readv
	FallbackPulls uint64 // rendezvous pulled through shared memory
	Corrupt       uint64 // inbound rings dropped for corrupt data
	DroppedAcks   uint64 // acks not written because a sender's ack ring was full
	DeadPeers     uint64 // peers declared gone while sends were outstanding or retried
}

// Endpoint is one shared-memory endpoint: a region holding its inbound
// rings, plus its connections to other endpoints. It is not safe for
// concurrent use; distinct Endpoints are independent.
type Endpoint struct {
	hdr      *regionHdr
	claimGen uint64
	active   []*inRing
	busy     []*Peer
	failed   []doneEvt
	tick     uint64
	liveTick uint64
	arr      Arrival
	closed   bool
	lent     bool // the inbound rings are lent (Lend) until Resync

	cfg    Config
	geo    geometry
	id     uint64
	pid    int
	name   string
	mem    []byte
	base   unsafe.Pointer
	mapped bool
	lockFd int // our region file, holding the OFD lock that says we live
	addr   []byte
	in     []inRing
	peers  map[uint64]*Peer
	rfree  []*Rendezvous
	t0     time.Time

	lastLive int64
	lastHK   int64
	hkIdx    int
	stats    Stats

	// watch lists the peers still mapped (holding a pidfd and their
	// region): sweepPeers polls their pidfds, a few at a time, so that a
	// peer that died is released even if nothing is sent to it again.
	watch     []*Peer
	watchNext int
	ringNext  int
	lastSweep int64
	sweepFds  [sweepBatch]unix.PollFd

	liov [1024]unix.Iovec
	riov [MaxIOV]unix.RemoteIovec

	txa txArena
	// txPeers finds the peer of a TxSlot an outside writer names (AdoptTx).
	txPeers map[*TxSlot]*Peer
}

// RegionHook, if set, is told the path of every region this process
// creates (live true, before Open returns) and removes (live false, before
// Close unlinks it). lnx's C layer uses it to unlink the regions of
// endpoints never closed when the process exits. Set it before the first
// Open; it must not call into this package.
var RegionHook func(path string, live bool)

// Open creates an endpoint and its shared-memory region. It first removes
// stale regions left by dead processes (best effort).
func Open(cfg Config) (*Endpoint, error) {
	cfg, geo, err := cfg.normalize()
	if err != nil {
		return nil, err
	}
	cleanupStale()
	pid := os.Getpid()
	var mem []byte
	var name string
	var id uint64
	lockFd := -1
	for try := 0; try < 8; try++ {
		for id = randUint64(); id == 0; id = randUint64() {
		}
		name = regionName(pid, id)
		mem, lockFd, err = createRegion(name, geo)
		if err == nil || !errors.Is(err, unix.EEXIST) {
			break
		}
	}
	if err != nil {
		return nil, err
	}
	e := newEndpoint(cfg, geo, mem, id, pid, name)
	e.mapped = true
	e.lockFd = lockFd
	if h := RegionHook; h != nil {
		h(shmDir+"/"+name, true)
	}
	return e, nil
}

// newEndpoint initialises a region in mem (a mapping, or plain memory for
// tests) and the endpoint's private state.
func newEndpoint(cfg Config, geo geometry, mem []byte, id uint64, pid int, name string) *Endpoint {
	base := unsafe.Pointer(&mem[0])
	h := (*regionHdr)(base)
	h.version = regionVersion
	h.features = hdrLocked
	h.pid = uint64(pid)
	h.id = id
	h.nrings = uint32(geo.nrings)
	h.ringBytes = uint32(geo.ringBytes)
	h.ackEntries = uint32(geo.ackEntries)
	h.bulkBytes = uint32(geo.bulkBytes)
	h.eagerMax = uint32(geo.eagerMax)
	h.total = geo.total
	h.pidNS = selfPidNS()
	atomic.StoreUint64(&h.state, epOpen)
	atomic.StoreUint64(&h.magic, regionMagic)

	e := &Endpoint{
		hdr:    h,
		cfg:    cfg,
		geo:    geo,
		id:     id,
		pid:    pid,
		name:   name,
		mem:    mem,
		base:   base,
		addr:   encodeAddr(id, pid),
		in:     make([]inRing, geo.nrings),
		peers:  make(map[uint64]*Peer),
		t0:     time.Now(),
		lockFd: -1,
	}
	for i := range e.in {
		r := &e.in[i]
		r.idx = i
		r.ctl = geo.ctl(base, i)
		r.ring = geo.fwdRing(base, i)
		r.size = geo.ringBytes
		r.mask = geo.ringBytes - 1
		r.eagerMax = geo.eagerMax
		r.ack = geo.ackRing(base, i)
		r.ackMask = geo.ackEntries - 1
		r.bulk = geo.bulk(base, i)
		r.half = geo.bulkBytes / 2
		r.proc = proc{fd: -1}
		r.activeIdx = -1
	}
	e.claimGen = ^uint64(0) // force a scan on the first Poll
	return e
}

func (e *Endpoint) now() int64 { return int64(time.Since(e.t0)) }

// ID returns this endpoint's id (random, non-zero).
func (e *Endpoint) ID() uint64 { return e.id }

// Addr returns the address blob that peers pass to Connect. The blob is
// versioned and names the region, the owner's pid and the endpoint id.
func (e *Endpoint) Addr() []byte { return append([]byte(nil), e.addr...) }

// Config returns the effective configuration (defaults filled in).
func (e *Endpoint) Config() Config { return e.cfg }

// Stats returns the endpoint's counters.
func (e *Endpoint) Stats() Stats {
	s := e.stats
	s.ActiveRings = len(e.active)
	s.Peers = len(e.peers)
	return s
}

// Connect maps the region named by addr (another endpoint's Addr, possibly
// this endpoint's own) and returns a Peer to send to. Connecting twice to
// the same endpoint returns the same Peer. No ring is claimed until the
// first Send.
func (e *Endpoint) Connect(addr []byte) (*Peer, error) {
	if e.closed {
		return nil, ErrClosed
	}
	a, err := parseAddr(addr)
	if err != nil {
		return nil, err
	}
	if p, ok := e.peers[a.id]; ok {
		if p.name != a.name || p.pid != a.pid {
			return nil, fmt.Errorf("%w: id %016x already connected under another name", ErrBadAddr, a.id)
		}
		return p, nil
	}
	mem, err := openRegion(a.name)
	if err != nil {
		return nil, err
	}
	geo, err := validateHdr(mem, a)
	if err != nil {
		_ = unmapGuarded(mem)
		return nil, err
	}
	base := unsafe.Pointer(&mem[0])
	h := (*regionHdr)(base)
	if atomic.LoadUint64(&h.state) != epOpen {
		_ = unmapGuarded(mem)
		return nil, fmt.Errorf("%w: endpoint %s closed", ErrPeerGone, a.name)
	}
	// The address's pid, used for liveness (pidfd) and process_vm_readv,
	// is the peer's own view of itself: it names the peer only if both
	// of us live in the same PID namespace. Two containers of one pod
	// share /dev/shm but not PID namespaces, and there that pid names
	// another process of ours, or none: CMA would read the wrong memory
	// (silently, when it is mapped at the same addresses) and liveness
	// would be wrong. Refuse such a peer; lnx then uses a network core.
	if ns := h.pidNS; !samePidNS(ns, e.hdr.pidNS) {
		_ = unmapGuarded(mem)
		return nil, fmt.Errorf("%w: %s lives in another PID namespace (%s, ours %s)",
			ErrForeignNS, a.name, nsString(ns), nsString(e.hdr.pidNS))
	}
	// A new peer: release first what peers found dead held, so that a
	// process whose peers come and go (some killed, never disconnected)
	// holds descriptors and mappings for the living ones only.
	e.sweepPeers()
	e.sweepRings()
	pr := openProc(a.pid)
	if pr.dead {
		_ = unmapGuarded(mem)
		return nil, fmt.Errorf("%w: process %d", ErrPeerGone, a.pid)
	}
	p := &Peer{
		e:        e,
		id:       a.id,
		pid:      a.pid,
		name:     a.name,
		mem:      mem,
		base:     base,
		hdr:      h,
		geo:      geo,
		proc:     pr,
		eagerMax: min(e.geo.eagerMax, geo.eagerMax),
		maxOut:   int(min(geo.ackEntries-1, 1023)),
		busyIdx:  -1,
		tx:       e.txa.alloc(),
		watchIdx: len(e.watch),
	}
	e.peers[a.id] = p
	if p.tx != nil {
		if e.txPeers == nil {
			e.txPeers = map[*TxSlot]*Peer{}
		}
		e.txPeers[p.tx] = p
	}
	e.watch = append(e.watch, p)
	for i := range e.in {
		if r := &e.in[i]; r.state != ringIdle && r.owner == a.id {
			r.peer = p
		}
	}
	return p, nil
}

// Disconnect releases the channel to p and unmaps its region. Rendezvous
// sends still outstanding to p are reported by the next Poll with
// ErrPeerGone. p must not be used afterwards. A peer found dead was
// unmapped then (markDead); Disconnect still forgets it, so that the
// endpoint keeps nothing of it.
func (e *Endpoint) Disconnect(p *Peer) error {
	if p == nil || p.e != e {
		return ErrBadHandle
	}
	if e.closed {
		return nil
	}
	e.markDead(p)
	if e.peers[p.id] == p {
		delete(e.peers, p.id)
	}
	for i := range e.in {
		if e.in[i].peer == p {
			e.in[i].peer = nil
		}
	}
	return nil
}

// unmapPeer closes p's pidfd and unmaps its region, once no outside
// writer can be inside it (txDisable).
func (e *Endpoint) unmapPeer(p *Peer) {
	p.txDisable()
	p.proc.close()
	e.unwatch(p)
	if p.mem != nil {
		_ = unmapGuarded(p.mem)
	}
	p.mem = nil
	p.base = nil
	p.hdr = nil
	p.ctl = nil
	p.ring = nil
	p.ackRing = nil
	p.bulk = nil
}

// markDead fails all outstanding sends to p (reported by Poll), gives up its
// channel, makes further Sends fail with ErrPeerGone and releases what p
// held: its pidfd and its region's mapping. A dead peer stays known (the
// caller's handle, Connect to its address) but costs no descriptor or
// mapping: a long-running process whose same-node peers are killed and
// never disconnected would otherwise run out of both.
func (e *Endpoint) markDead(p *Peer) {
	if p.dead {
		return
	}
	p.txDisable()
	p.dead = true
	if p.outstanding > 0 {
		e.stats.DeadPeers++
	}
	for i := range p.slots {
		if p.slots[i].inUse {
			e.failed = append(e.failed, doneEvt{p.slots[i].sendID, ErrPeerGone})
			p.freeSlot(uint32(i))
		}
	}
	for i := range p.cslots {
		if p.cslots[i].inUse {
			e.failed = append(e.failed, doneEvt{p.cslots[i].sendID, ErrPeerGone})
			p.freeSlot(uint32(i) | txRndvBit)
		}
	}
	p.slots, p.free = nil, nil
	p.st = stream{}
	p.releaseChannel()
	p.ring = nil
	e.unmapPeer(p)
}

// sweepRings polls the pidfds of up to sweepBatch active inbound rings
// (one system call, round robin): a ring whose sender exited is drained
// and released by Poll (ringClosing), closing its pidfd, and our peer for
// that process, if any, is released at once.
func (e *Endpoint) sweepRings() {
	n := min(len(e.active), sweepBatch)
	if n == 0 {
		return
	}
	if e.ringNext >= len(e.active) {
		e.ringNext = 0
	}
	var batch [sweepBatch]*inRing
	k := 0
	for j := 0; j < n; j++ {
		r := e.active[(e.ringNext+j)%len(e.active)]
		if r.state != ringActive || r.proc.fd < 0 {
			continue
		}
		batch[k] = r
		e.sweepFds[k] = unix.PollFd{Fd: int32(r.proc.fd), Events: unix.POLLIN}
		k++
	}
	e.ringNext = (e.ringNext + n) % len(e.active)
	if k == 0 {
		return
	}
	if m, err := unix.Poll(e.sweepFds[:k], 0); err != nil || m == 0 {
		return
	}
	for i := 0; i < k; i++ {
		if e.sweepFds[i].Revents == 0 {
			continue
		}
		r := batch[i]
		r.proc.dead = true
		r.state = ringClosing
		if p := r.peer; p != nil && p.pid == r.proc.pid {
			e.markDead(p)
		}
	}
}

// unwatch takes p off the sweep list.
func (e *Endpoint) unwatch(p *Peer) {
	i := p.watchIdx
	if i < 0 || i >= len(e.watch) || e.watch[i] != p {
		return
	}
	last := len(e.watch) - 1
	e.watch[i] = e.watch[last]
	e.watch[i].watchIdx = i
	e.watch[last] = nil
	e.watch = e.watch[:last]
	p.watchIdx = -1
}

// sweepPeers polls the pidfds of up to sweepBatch mapped peers (one system
// call, round robin) and marks those whose process exited dead, which
// releases them. Housekeeping runs it every sweepInterval, and Connect and
// a newly claimed inbound ring before they take resources of their own.
func (e *Endpoint) sweepPeers() {
	n := min(len(e.watch), sweepBatch)
	if n == 0 {
		return
	}
	if e.watchNext >= len(e.watch) {
		e.watchNext = 0
	}
	var batch [sweepBatch]*Peer
	k := 0
	for j := 0; j < n; j++ {
		p := e.watch[(e.watchNext+j)%len(e.watch)]
		if atomic.LoadUint64(&p.hdr.state) != epOpen {
			// Closed its endpoint: its region is unlinked, and our
			// mapping is all that keeps its memory.
			e.markDead(p)
			return
		}
		if p.proc.fd < 0 {
			// No pidfd (old kernel): kill(pid, 0), one peer per sweep.
			if j == 0 && !p.proc.alive() {
				e.markDead(p)
				return
			}
			continue
		}
		batch[k] = p
		e.sweepFds[k] = unix.PollFd{Fd: int32(p.proc.fd), Events: unix.POLLIN}
		k++
	}
	e.watchNext = (e.watchNext + n) % len(e.watch)
	if k == 0 {
		return
	}
	m, err := unix.Poll(e.sweepFds[:k], 0)
	if err != nil || m == 0 {
		return
	}
	for i := 0; i < k; i++ {
		if e.sweepFds[i].Revents != 0 {
			batch[i].proc.dead = true
			e.markDead(batch[i])
		}
	}
}

// releaseChannel tells the receiver we are done with our ring there.
func (p *Peer) releaseChannel() {
	if p.ctl == nil || p.word == 0 {
		return
	}
	w := atomic.LoadUint64(&p.ctl.state)
	if w == p.word || w == stateWord(p.e.pid, stDropped) {
		if atomic.CompareAndSwapUint64(&p.ctl.state, w, stateWord(p.e.pid, stClosed)) {
			atomic.AddUint64(&p.hdr.claimGen, 1)
		}
	}
	p.word = 0
}

// Close releases every channel, unmaps all regions and removes this
// endpoint's region from /dev/shm. Outstanding sends and Rendezvous handles
// are abandoned.
func (e *Endpoint) Close() error {
	if e.closed {
		return nil
	}
	e.closed = true
	for _, p := range e.peers {
		p.releaseChannel()
		p.dead = true
		e.unmapPeer(p)
		p.tx = nil // the arena goes below
	}
	e.peers = nil
	e.txPeers = nil
	e.watch = nil
	e.txa.free()
	e.busy = nil
	e.failed = nil
	e.active = nil
	for i := range e.in {
		e.in[i].proc.close()
	}
	atomic.StoreUint64(&e.hdr.state, epClosed)
	var err error
	if e.mapped {
		if uerr := unmapGuarded(e.mem); uerr != nil {
			err = fmt.Errorf("shm: unmap: %w", uerr)
		}
		if h := RegionHook; h != nil {
			h(shmDir+"/"+e.name, false)
		}
		if rerr := os.Remove(shmDir + "/" + e.name); rerr != nil && err == nil {
			err = fmt.Errorf("shm: unlink: %w", rerr)
		}
	}
	if e.lockFd >= 0 {
		_ = unix.Close(e.lockFd) // drops the lock, after the unlink
		e.lockFd = -1
	}
	e.mem = nil
	e.base = nil
	e.hdr = nil
	e.in = nil
	e.rfree = nil
	return err
}

// SourceAddr returns the address blob of the sender with endpoint id src,
// as published in its claim of one of this endpoint's rings, so that a
// receiver can Connect back to a sender it was not told about. It fails if
// no ring is currently claimed by src.
func (e *Endpoint) SourceAddr(src uint64) ([]byte, error) {
	if e.closed {
		return nil, ErrClosed
	}
	for i := range e.in {
		r := &e.in[i]
		if r.state == ringIdle || r.owner != src {
			continue
		}
		n := atomic.LoadUint64(&r.ctl.addrLen)
		if n > maxAddrArea {
			return nil, ErrBadAddr
		}
		b := make([]byte, n)
		copy(b, r.ctl.addr[:n])
		a, err := parseAddr(b)
		if err != nil {
			return nil, err
		}
		if a.id != src || a.pid != r.proc.pid {
			return nil, fmt.Errorf("%w: sender published a mismatching address", ErrBadAddr)
		}
		return b, nil
	}
	return nil, fmt.Errorf("%w: no ring claimed by %016x", ErrPeerGone, src)
}

// Busy reports whether p has rendezvous sends outstanding or a fallback
// copy in progress: Disconnect would fail them.
func (p *Peer) Busy() bool { return !p.dead && (p.outstanding > 0 || p.st.active) }

// PID returns the peer's process id.
func (p *Peer) PID() int { return p.pid }

// Alive reports whether the peer's process may still be running; it costs
// a system call, so callers rate-limit it.
func (p *Peer) Alive() bool { return !p.dead && p.proc.alive() }
