// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only

package ofi

import (
	"bytes"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"runtime"
	"sync/atomic"
	"time"
	"unsafe"
)

// Configuration defaults.
const (
	DefaultProv     = "tcp;ofi_rxm"
	DefaultRecvPool = 64
	DefaultMaxOps   = 4096
	// DefaultEagerMax keeps a whole eager message (40-byte header included)
	// within rxm's default eager limit of 16 KiB, so that it travels as one
	// core eager message.
	DefaultEagerMax      = 16384 - 64
	DefaultProbeInterval = 100 * time.Millisecond
	DefaultPeerTimeout   = 10 * time.Second
	DefaultCloseTimeout  = time.Second
	// DefaultCredits lets a sender have 64 messages in the receiver's core
	// at once: with rxm's 16 KiB eager buffers, at most 1 MiB per sender.
	DefaultCredits = 64
	// DefaultSplitMax is rxm's default eager limit (FI_OFI_RXM_BUFFER_SIZE).
	DefaultSplitMax = 16384
	// MaxCredits is the largest credit window (it travels in one byte of
	// the address).
	MaxCredits = 255
	// DefaultSendRegs is how many idle registrations of RTS-read send
	// buffers a transport keeps (as lnx's FI_LNX_MR_CACHE_MAX default).
	DefaultSendRegs = 1024
	// MaxSendRegs bounds Config.SendRegs.
	MaxSendRegs = 1 << 16
)

// Config selects the core and the geometry of a Transport. The zero value
// selects the defaults.
type Config struct {
	// Prov and Domain name the core provider and domain (Open only;
	// OpenTransport uses the Domain it is given). Default Prov is
	// DefaultProv; an empty Domain takes the first one the core offers.
	Prov, Domain string

	// SrcName, if set, is the core address (a struct sockaddr) to bind the
	// core endpoint to: fi_getinfo's FI_SOURCE with a service. The
	// transport's id is then NameID of the address it got, so that
	// NamedAddr of that address names it.
	SrcName []byte

	// ID, if not 0, is the transport's id (at most 56 bits): lnx gives a
	// transport beside a peer-API core the core's id, so that one id
	// names the peer on both and its address can be packed against the
	// core's (PackSide). It takes precedence over SrcName's.
	ID uint64

	// AddrFormat, if not 0, prefers the core's fi_info with this address
	// format (AddrFormatInet6 for IPv6 on a dual-stack interface); Open
	// only.
	AddrFormat uint32

	// EagerMax is the largest payload sent on the control path; larger
	// messages use rendezvous. Towards a peer the smaller of both sides'
	// values applies. 0 selects DefaultEagerMax; a negative value sends every
	// non-empty message by rendezvous. At most MaxEagerMax.
	EagerMax int

	// RecvPool is the number of pre-posted control receive buffers
	// (EagerMax plus header bytes each). Default DefaultRecvPool.
	RecvPool int

	// MaxOps bounds the operations outstanding at once (sends awaiting
	// their completion, pulls, control messages), including the RecvPool
	// receives. Default DefaultMaxOps.
	MaxOps int

	// ProbeInterval is how long the transport waits without hearing from a
	// peer it has operations outstanding with before probing the
	// connection. Default DefaultProbeInterval.
	ProbeInterval time.Duration

	// PeerTimeout is how long the core may keep refusing a probe to a
	// peer (-FI_EAGAIN: no connection can be made) before the peer is
	// declared gone, and how long a rendezvous receive from a gone peer
	// waits for the core to cancel it. Default DefaultPeerTimeout.
	PeerTimeout time.Duration

	// CloseTimeout bounds how long Close waits for rendezvous receives in
	// progress to finish before it abandons the core endpoint instead of
	// closing it (see Close). Default DefaultCloseTimeout.
	CloseTimeout time.Duration

	// SplitMax: a message larger than EagerMax but at most SplitMax goes
	// as a header and a tagged core message sent at once (the core's own
	// eager limit; see tp_split.go). Default DefaultSplitMax; negative:
	// never.
	SplitMax int

	// NoTaggedEager keeps split messages (header and data, two core
	// messages) where the core could carry them as one tagged eager
	// message (tp_tagged.go). Both sides must agree: every transport of
	// one job is given the same setting.
	NoTaggedEager bool

	// NoRead keeps the rendezvous on CTS and tagged transfers even where
	// the core can read remote memory (see the package doc).
	NoRead bool

	// Credits is the credit window this transport grants each sender: the
	// eager and rendezvous-request messages it may have sent that this
	// transport has not yet handed to onArrival. It bounds what the core
	// buffers when lnx stops taking messages (a flood of unexpected
	// messages beyond lnx's budget); a sender out of credits gets ErrAgain.
	// Default DefaultCredits, at most MaxCredits; a negative value turns
	// flow control off (senders are not limited).
	Credits int

	// SendRegs is how many idle core registrations of RTS-read send
	// buffers the transport keeps for the next send of the same range
	// (tp_sendreg.go). Default DefaultSendRegs; negative: none, each send
	// registers its buffer and closes the registration when it completes.
	// Only cores whose registration pins nothing keep them.
	SendRegs int

	// OnError, if set, is called from Poll for dropped malformed messages
	// and for peers declared gone. src is the peer's id (0 if unknown).
	OnError func(src uint64, err error)
}

func (c Config) normalize() (Config, error) {
	if c.Prov == "" {
		c.Prov = DefaultProv
	}
	if err := defaultOrOff(&c.EagerMax, "EagerMax", DefaultEagerMax, MaxEagerMax); err != nil {
		return c, err
	}
	if c.RecvPool == 0 {
		c.RecvPool = DefaultRecvPool
	}
	if c.RecvPool < 1 || c.RecvPool > 1<<16 {
		return c, fmt.Errorf("ofi: invalid Config.RecvPool %d", c.RecvPool)
	}
	if c.MaxOps == 0 {
		c.MaxOps = DefaultMaxOps
	}
	if c.MaxOps < c.RecvPool+64 || c.MaxOps > 1<<20 {
		return c, fmt.Errorf("ofi: Config.MaxOps %d must be between RecvPool+64 and %d", c.MaxOps, 1<<20)
	}
	if c.ProbeInterval <= 0 {
		c.ProbeInterval = DefaultProbeInterval
	}
	if c.PeerTimeout <= 0 {
		c.PeerTimeout = DefaultPeerTimeout
	}
	if c.CloseTimeout <= 0 {
		c.CloseTimeout = DefaultCloseTimeout
	}
	if err := defaultOrOff(&c.SplitMax, "SplitMax", DefaultSplitMax, MaxEagerMax); err != nil {
		return c, err
	}
	if err := defaultOrOff(&c.Credits, "Credits", DefaultCredits, MaxCredits); err != nil {
		return c, err
	}
	if err := defaultOrOff(&c.SendRegs, "SendRegs", DefaultSendRegs, MaxSendRegs); err != nil {
		return c, err
	}
	return c, nil
}

// defaultOrOff normalizes a setting where 0 means the default and a
// negative value turns the feature off (0 after normalizing).
func defaultOrOff(v *int, name string, def, limit int) error {
	switch {
	case *v == 0:
		*v = def
	case *v < 0:
		*v = 0
	case *v > limit:
		return fmt.Errorf("ofi: Config.%s %d exceeds %d", name, *v, limit)
	}
	return nil
}

// Hdr is the matching information carried with every message; it has the
// same fields as shm.Hdr and is carried verbatim.
type Hdr struct {
	Tag   uint64 // tag (meaningful when the caller's flags say so)
	Data  uint64 // remote CQ data
	Flags uint32 // caller-defined bits
}

// Arrival describes one inbound message. The Arrival passed to the Poll
// callback is reused; copy what must outlive the callback.
type Arrival struct {
	// Src is the sending transport's id (its ID(), and AddrID of its
	// address).
	Src uint64
	// Peer is this transport's Peer for Src if its address is known
	// (Connected, or learnt from a rendezvous request), else nil.
	Peer *Peer
	// Hdr is the sender's header.
	Hdr Hdr
	// Size is the message length in bytes.
	Size uint64
	// Eager is the payload of an eager message. It points into a C bounce
	// buffer and is valid only during the callback. nil for rendezvous.
	Eager []byte
	// Rndv is non-nil for a rendezvous message. If the callback returns
	// true the caller owns it and must eventually pass it to Pull or
	// Discard; if it returns false the handle is invalid (the message is
	// delivered again, with a new handle, by a later Poll).
	Rndv *Rendezvous
}

// Rendezvous is the handle of a large message whose data is still in the
// sender's memory. It is consumed by Pull (and stays valid until its
// onPullDone callback returns) or by Discard.
type Rendezvous struct {
	t      *Transport
	peer   *Peer
	src    uint64
	hdr    Hdr
	size   uint64
	cookie uint64
	state  uint8
	ctx    any

	read        bool // RTS-read: Pull reads the data at raddr/rkey
	raddr, rkey uint64
	split       bool // split: the data comes as a tagged message with rtag
	rtag        uint64
	discarded   bool // split: Discard receives the data into the sink
}

const (
	rvFree = iota
	rvOffered
	rvOwned
	rvPulling
)

// Size returns the message length.
func (r *Rendezvous) Size() uint64 { return r.size }

// Src returns the sending transport's id.
func (r *Rendezvous) Src() uint64 { return r.src }

// Hdr returns the message header.
func (r *Rendezvous) Hdr() Hdr { return r.hdr }

// SetContext attaches a caller value, returned by Context (for instance
// the receive a Pull completes).
func (r *Rendezvous) SetContext(v any) { r.ctx = v }

// Context returns the value set by SetContext.
func (r *Rendezvous) Context() any { return r.ctx }

// Peer is another transport endpoint: a core AV entry plus protocol state.
type Peer struct {
	t        *Transport
	id       uint64
	fiAddr   uint64
	hasAddr  bool
	name     []byte
	eagerMax uint64
	dead     bool
	active   bool // we sent to it or heard from it (it gets a goodbye)
	ctx      any

	txSeq  uint32 // next sequence number we send it
	rxSeq  uint32 // next sequence number we deliver from it
	parked map[uint32]int32

	waiting     int // our outstanding operations that depend on it
	busyIdx     int
	lastHeard   int64
	lastProbe   int64
	probing     bool
	eagainSince int64
	lastEagain  int64
	byeAt       int64         // when we last told it that it is gone to us
	check       *atomic.Int32 // liveness check of its listener (tp_alive.go)

	// Flow control, sender side: the peer's window (0: none) and the
	// credits left; stalled while we wait for credits (the peer then
	// counts as one we wait on, so that liveness probes it).
	window    uint8
	credits   int32
	stalled   bool
	helloSent bool
	// Receiver side: messages from the peer consumed but not yet
	// credited back; creditDue while it sits in Transport.creditQ.
	owed      uint32
	creditDue bool
	// Tagged eager messages (tp_tagged.go): heardFrom once a message of
	// the peer arrived (it has then posted receives for ours); teOps
	// receives are posted (or due) for its messages to us.
	heardFrom bool
	teOps     int
	teSlot    [teBufsMax]uint32 // those receives' op slots plus one (0: none), for C (tp_lend.go)
}

// ID returns the peer's transport id.
func (p *Peer) ID() uint64 { return p.id }

// Transport returns the transport p belongs to.
func (p *Peer) Transport() *Transport { return p.t }

// EagerMax returns the largest payload sent eagerly to this peer.
func (p *Peer) EagerMax() int { return int(p.eagerMax) }

// Gone reports whether the peer has been declared gone.
func (p *Peer) Gone() bool { return p.dead }

// Watch tells the transport that the caller waits for something from p
// that no operation of the transport stands for (the answer to a message
// whose send already completed): until the matching Unwatch, p is probed
// like a peer with operations outstanding, and declared gone (Gone, and
// Config.OnError) if it is unreachable for Config.PeerTimeout. Watches
// nest; call them, like Poll, under the transport's lock.
func (t *Transport) Watch(p *Peer) {
	if p != nil && p.t == t {
		t.wait(p)
	}
}

// Unwatch ends one Watch of p.
func (t *Transport) Unwatch(p *Peer) {
	if p != nil && p.t == t && p.waiting > 0 {
		t.unwait(p)
	}
}

// SetContext attaches an arbitrary caller value to the peer.
func (p *Peer) SetContext(v any) { p.ctx = v }

// Context returns the value set by SetContext.
func (p *Peer) Context() any { return p.ctx }

// Stats are cumulative counters of a Transport.
type Stats struct {
	Peers           int    // known peers
	Outstanding     int    // operation slots in use (bounce buffers included, TaggedRecvs not)
	TaggedRecvs     int    // tagged eager receives posted for peers' messages (tp_tagged.go)
	Injected        uint64 // eager sends completed inline (fi_inject)
	EagerSends      uint64 // eager sends with a completion
	RndvSends       uint64 // rendezvous sends started
	Pulls           uint64 // rendezvous receives posted
	Discards        uint64 // rendezvous messages discarded
	Arrivals        uint64 // messages delivered to onArrival
	Reordered       uint64 // control messages that arrived ahead of their turn
	Probes          uint64 // liveness probes sent
	DeadPeers       uint64 // peers declared gone
	Malformed       uint64 // dropped control messages
	CoreErrors      uint64 // error completions read from the core CQ
	CoreReads       uint64 // fi_cq_read calls on the core CQ (each runs the core's progress)
	Abandoned       uint64 // core operations left behind by a gone peer
	CreditStalls    uint64 // sends refused because the receiver granted no credits
	CreditMsgs      uint64 // credit messages sent (credits that found no reply to ride on)
	ReadSends       uint64 // rendezvous sends whose data the receiver read (RTS-read)
	SplitSends      uint64 // sends of a header and a tagged data message at once (split)
	TaggedEager     uint64 // sends as one tagged core message, header in tag and CQ data (tp_tagged.go)
	TaggedInjected  uint64 // of TaggedEager, those sent with fi_tinjectdata (completed inline)
	SentByC         uint64 // of Injected and TaggedInjected, those C sent over the lent transport (tp_lend.go)
	Reads           uint64 // pulls done by reading the sender's buffer
	RMAOps          uint64 // native one-sided writes and reads posted (tp_rma.go)
	ReadRegFailures uint64 // RTS-read not possible: the core refused to register the data
	SendRegs        uint64 // core registrations made for RTS-read sends
	SendRegHits     uint64 // RTS-read sends that reused a kept registration (tp_sendreg.go)
	LeakedCloses    uint64 // Close left the core endpoint open (see Close)
	LivenessChecks  uint64 // connections made to a refusing peer's listener (tp_alive.go)
}

// Transport is one network endpoint of lnx over a core provider: a core
// RDM endpoint with its own AV and CQ, a pool of pre-posted control
// receives, and the state of outstanding sends and pulls. It is not safe
// for concurrent use; distinct Transports are independent.
type Transport struct {
	k    core
	cfg  Config
	prov string // the core's provider name (ListenerProbeable)
	// strAddr: the core's names are NUL-terminated strings, whose
	// length may differ from ours (validName).
	strAddr bool

	list *List // owned when opened with Open
	fab  *Fabric
	dom  *Domain

	id       uint64
	name     []byte
	addr     []byte
	eagerMax uint64
	inject   int
	te       bool    // tagged eager messages (tp_tagged.go)
	teNeed   []*Peer // peers still short of tagged eager receives
	teN      int     // tagged eager receives per peer (teCount)
	txIOV    int
	rxIOV    int
	bufSize  int
	bounce   unsafe.Pointer // RecvPool * bufSize bytes of C memory
	scratch  unsafe.Pointer // inject staging, C memory
	scratchN int

	// Lending to C (tp_lend.go): core CQ reads when last lent, the peer
	// lent with it, Reclaim's buffer for the bounce slots C took.
	lendReads uint64
	lendPeer  *Peer
	lendTook  []uint32

	ops      []op
	free     []int32
	userOps  int
	userMax  int
	peers    map[uint64]*Peer
	busy     []*Peer
	ready    []int32 // bounce slots holding arrivals, in delivery order
	readyHd  int
	retry    []retryEnt
	retryNew []retryEnt
	inRetry  bool
	round    uint32
	cancels  int // pulls cancelled and not yet completed
	deferred []deferredReq
	creditQ  []*Peer  // peers owed credits that the core refused to carry
	reposts  []uint32 // bounce slots to post again at the next Poll

	// RMA-read rendezvous (tp_read.go): the domain to register send
	// buffers with, whether the core can read, and whether remote
	// addresses are virtual.
	d        *Domain
	rma      bool
	virt     bool
	regs     sendRegs       // registrations of RTS-read send buffers (tp_sendreg.go)
	sink     unsafe.Pointer // SplitMax bytes of C memory that discarded split data lands in
	sendDone []doneEvt
	pullDone []pullEvt
	rfree    []*Rendezvous
	arr      Arrival
	nextTag  uint64

	// Native one-sided operations (tp_rma.go): whether the core writes
	// and reads remote memory.
	canWrite, canReadRMA bool

	t0       time.Time
	now      int64 // refreshed by Poll
	tick     uint32
	lastLive int64
	closed   bool
	stats    Stats
}

type doneEvt struct {
	sendID uint64
	err    error
}

type pullEvt struct {
	r   *Rendezvous
	n   uint64
	err error
}

type retryEnt struct {
	idx int32
	sub uint8
	gen uint32
}

// deferredReq is a Pull or a CTS that found no free operation slot.
type deferredReq struct {
	r      *Rendezvous // a Pull, if non-nil
	dst    [][]byte
	mrs    []*MR
	peer   *Peer // a CTS: to peer, answering cookie
	cookie uint64
	status uint32
}

// Open opens a Transport on its own fabric and domain of the core cfg
// names (GetInfo, OpenFabric, OpenDomain); Close releases them.
func Open(version uint32, cfg Config) (*Transport, error) {
	cfg, err := cfg.normalize()
	if err != nil {
		return nil, err
	}
	l, err := GetInfo(version, cfg.Prov, cfg.Domain, CoreCaps)
	if err != nil {
		return nil, err
	}
	l.Prefer(cfg.AddrFormat)
	f, err := OpenFabric(l.Infos[0])
	if err != nil {
		l.Free()
		return nil, err
	}
	d, err := f.OpenDomain()
	if err != nil {
		f.Close()
		l.Free()
		return nil, err
	}
	t, err := newTransport(d, cfg)
	if err != nil {
		d.Close()
		f.Close()
		l.Free()
		return nil, err
	}
	t.list, t.fab, t.dom = l, f, d
	return t, nil
}

// OpenTransport opens a Transport on an open core domain (for instance the
// one lnx opened for a link). cfg.Prov and cfg.Domain are ignored. The
// domain must outlive the Transport.
func (d *Domain) OpenTransport(cfg Config) (*Transport, error) {
	cfg, err := cfg.normalize()
	if err != nil {
		return nil, err
	}
	return newTransport(d, cfg)
}

func newTransport(d *Domain, cfg Config) (*Transport, error) {
	k, err := openCore(d, cfg.MaxOps, cfg.MaxOps+cfg.RecvPool, cfg.SrcName)
	if err != nil {
		return nil, err
	}
	name, err := k.name()
	if err == nil && hdrRTSRead+addrHdr+len(name) > hdrBytes {
		// An RTS carries our address in the operation's header area.
		err = fmt.Errorf("ofi: core address of %d bytes is too long", len(name))
	}
	if err != nil {
		k.close()
		return nil, err
	}
	inject, txIOV, rxIOV, _ := k.limits()
	rma, virt := d.canRead()
	t := &Transport{
		d:        d,
		rma:      rma && !cfg.NoRead,
		virt:     virt,
		k:        k,
		cfg:      cfg,
		prov:     d.f.ProvName(),
		strAddr:  d.f.StrAddr(),
		name:     name,
		eagerMax: uint64(cfg.EagerMax),
		inject:   inject,
		txIOV:    max(1, min(txIOV, maxUser)),
		rxIOV:    max(1, min(rxIOV, maxUser)),
		ops:      make([]op, cfg.MaxOps),
		peers:    make(map[uint64]*Peer),
		t0:       time.Now(),
		nextTag:  1,
	}
	t.canWrite, t.canReadRMA = d.canWrite(), rma
	if !d.regPins() {
		t.regs.max = cfg.SendRegs
	}
	// Tagged eager messages need the core's tagged receives directed at
	// a source and 8 bytes of CQ data (the caller's tag).
	t.te = !cfg.NoTaggedEager && cfg.SplitMax > cfg.EagerMax && k.cqData() >= 8 && !shmTagBug(d)
	t.teN = teCount(inject, cfg.EagerMax, cfg.SplitMax)
	if cfg.SrcName != nil {
		t.id = NameID(name)
	}
	if cfg.ID != 0 {
		t.id = cfg.ID & (1<<idBits - 1)
	}
	for t.id == 0 {
		var b [8]byte
		if _, err := rand.Read(b[:]); err != nil {
			k.close()
			return nil, err
		}
		// 56 bits, so that PackAddr can carry the id in 7 bytes.
		t.id = binary.LittleEndian.Uint64(b[:]) & (1<<idBits - 1)
	}
	t.addr = encodeAddr(t.id, cfg.EagerMax, cfg.Credits, name)
	// A bounce buffer takes the largest eager message and any control
	// message (an RTS carries the sender's address).
	t.bufSize = (max(hdrEager+cfg.EagerMax, hdrRTSRead+maxAddrLen, hdrSplit+maxAddrLen) + 63) &^ 63
	t.scratchN = max(t.inject, hdrBytes)
	t.bounce = cmalloc(cfg.RecvPool * t.bufSize)
	t.scratch = cmalloc(t.scratchN)
	t.sink = cmalloc(max(cfg.SplitMax, 1))
	if t.bounce == nil || t.scratch == nil || t.sink == nil {
		t.freeC()
		k.close()
		return nil, errors.New("ofi: out of C memory for bounce buffers")
	}
	t.k.setLend(cfg.RecvPool, t.bufSize, t.eagerMax, t.bounce)
	t.userMax = cfg.MaxOps - cfg.RecvPool - 64
	t.ready = make([]int32, 0, cfg.RecvPool)
	for i := cfg.MaxOps - 1; i >= cfg.RecvPool; i-- {
		t.free = append(t.free, int32(i))
	}
	for i := 0; i < cfg.RecvPool; i++ {
		o := &t.ops[i]
		o.kind = kBounce
		o.gen = 1
		t.postOrQueue(uint32(i), 0)
	}
	return t, nil
}

func (t *Transport) freeC() {
	cfree(t.bounce)
	cfree(t.scratch)
	cfree(t.sink)
	t.bounce, t.scratch, t.sink = nil, nil, nil
}

func (t *Transport) clock() int64 {
	t.now = int64(time.Since(t.t0))
	return t.now
}

// ID returns this transport's id (random, non-zero).
func (t *Transport) ID() uint64 { return t.id }

// Addr returns the address blob that peers pass to Connect: a version,
// this transport's id and EagerMax, and the core endpoint's fi_getname.
func (t *Transport) Addr() []byte { return append([]byte(nil), t.addr...) }

// EagerMax returns this transport's eager limit (Config.EagerMax after
// defaults); towards a peer, Peer.EagerMax applies.
func (t *Transport) EagerMax() int { return int(t.eagerMax) }

// MaxIOV returns the most non-empty pieces a rendezvous Send or a Pull may
// have (the core's iov limit). Eager sends take any number.
func (t *Transport) MaxIOV() (send, pull int) { return t.txIOV, t.rxIOV }

// Copies reports whether Send of size bytes to p copies the payload before
// it returns (the message goes with the core's fi_inject, Send returns
// done=true), so that the caller's buffers are reusable at once. Other
// sends leave the core reading the caller's buffers until onSendDone: an
// fi_inject of the application must then stage its data first.
func (t *Transport) Copies(p *Peer, size uint64) bool {
	return size <= p.eagerMax && hdrEager+size <= uint64(t.inject)
}

// Config returns the effective configuration.
func (t *Transport) Config() Config { return t.cfg }

// Stats returns the transport's counters.
func (t *Transport) Stats() Stats {
	s := t.stats
	s.Peers = len(t.peers)
	s.Outstanding = len(t.ops) - len(t.free)
	for _, p := range t.peers {
		s.TaggedRecvs += p.teOps
	}
	s.Outstanding -= s.TaggedRecvs
	if t.k.c != nil {
		s.CoreReads = t.k.reads()
	}
	return s
}

// Knows says whether the transport has a peer with this id: one it
// connected to, or one that introduced itself (HELLO) by sending to us.
func (t *Transport) Knows(id uint64) bool {
	_, ok := t.peers[id]
	return ok
}

// Connect validates addr (another transport's Addr) and inserts its core
// address into this transport's AV. Connecting twice to the same id
// returns the same Peer. The core connection is made by the first send.
func (t *Transport) Connect(addr []byte) (*Peer, error) {
	if t.closed {
		return nil, ErrClosed
	}
	a, err := parseAddr(addr)
	if err != nil {
		return nil, err
	}
	return t.connect(a)
}

func (t *Transport) connect(a addrInfo) (*Peer, error) {
	if err := t.validName(a.name); err != nil {
		return nil, err
	}
	p := t.peers[a.id]
	if p != nil && p.hasAddr {
		if string(p.name) != string(a.name) {
			return nil, fmt.Errorf("%w: id %016x already connected at another address", ErrBadAddr, a.id)
		}
		return p, nil
	}
	fa, err := t.k.avInsert(a.name)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadAddr, err)
	}
	if p == nil {
		p = t.newPeer(a.id)
	}
	p.fiAddr = fa
	p.hasAddr = true
	p.name = append([]byte(nil), a.name...)
	p.eagerMax = min(t.eagerMax, uint64(a.eagerMax))
	p.window, p.credits = a.window, int32(a.window)
	if p.owed != 0 {
		t.returnCredits(p) // it sent before we knew where to answer
	}
	t.postTE(p)
	return p, nil
}

// validName refuses a core name the core would read past the end of:
// fi_av_insert reads as many bytes as the core's address format holds, so
// a fixed format's name must be as long as ours, and a string one
// (FI_ADDR_STR) must end at its first NUL.
func (t *Transport) validName(name []byte) error {
	if !t.strAddr {
		if len(name) != len(t.name) {
			return fmt.Errorf("%w: core address of %d bytes, this core uses %d", ErrBadAddr, len(name), len(t.name))
		}
		return nil
	}
	if i := bytes.IndexByte(name, 0); i != len(name)-1 || i == 0 {
		return fmt.Errorf("%w: core address string of %d bytes is not one non-empty NUL-terminated name (first NUL at %d)", ErrBadAddr, len(name), i)
	}
	return nil
}

func (t *Transport) newPeer(id uint64) *Peer {
	p := &Peer{t: t, id: id, busyIdx: -1, lastHeard: t.now}
	t.peers[id] = p
	return p
}

// Close closes the core endpoint and frees the transport's C memory.
// Outstanding sends and pulls are abandoned without callbacks.
//
// Close first tells every connected peer goodbye (best effort), so that
// they fail their operations with this transport at once. libfabric 1.17's
// rxm crashes when an endpoint is closed while a rendezvous receive is
// being read from the peer, so Close waits up to Config.CloseTimeout for
// such receives to finish; if some remain, it leaves the core endpoint
// and the memory it may still write open (Stats.LeakedCloses) rather than
// crash the process.
func (t *Transport) Close() error {
	if t.closed {
		return nil
	}
	t.closed = true
	t.clock()
	for _, p := range t.peers {
		if p.hasAddr && p.active && !p.dead {
			b := unsafe.Slice((*byte)(t.scratch), hdrCommon)
			putCommon(b, kindBye, 0, t.id)
			_ = t.k.inject(t.scratch, hdrCommon, p.fiAddr)
		}
	}
	// Cancel rendezvous receives; those the core already matched keep
	// running until they complete or fail.
	for i := range t.ops {
		o := &t.ops[i]
		if o.kind == kPull && o.pending&1 != 0 {
			t.k.cancel(uint32(i), 0)
		}
	}
	deadline := t.now + int64(t.cfg.CloseTimeout)
	flush := t.now + int64(5*time.Millisecond) // lets the goodbyes leave
	for {
		n := t.k.next(evMax)
		for i := 0; i < n; i++ {
			idx, sub, _, _, _, _ := t.k.ev(i)
			if int(idx) < len(t.ops) && sub < 2 {
				t.ops[idx].pending &^= 1 << sub
			}
		}
		inflight := false
		for i := range t.ops {
			// (An RMA read too: rxm 1.17 crashes in fi_close under one;
			// native one-sided operations wait the same way.)
			if o := &t.ops[i]; (o.kind == kPull || o.kind == kRMA) && o.pending&1 != 0 {
				inflight = true
				break
			}
		}
		now := t.clock()
		if !inflight && now >= flush {
			break
		}
		if now >= deadline {
			t.stats.LeakedCloses++
			leaked = append(leaked, t) // the core may still write our memory
			t.unpinAll()
			return fmt.Errorf("ofi: close: rendezvous receives still in progress after %v; core endpoint left open", t.cfg.CloseTimeout)
		}
		if n == 0 {
			runtime.Gosched()
		}
	}
	for i := range t.ops {
		t.closeMR(&t.ops[i]) // the domain would refuse to close with them
	}
	if err := t.regs.flush(); err != nil {
		t.report(0, fmt.Errorf("closing kept send registrations: %w", err))
	}
	err := t.k.close()
	for i := range t.ops {
		if o := &t.ops[i]; o.kind == kTE {
			cfree(o.heap) // receives the core no longer holds
			o.heap = nil
		}
	}
	t.unpinAll()
	t.freeC()
	if t.dom != nil {
		err = errors.Join(err, t.dom.Close(), t.fab.Close())
		t.list.Free()
		t.dom, t.fab, t.list = nil, nil, nil
	}
	t.peers = nil
	t.busy = nil
	t.sendDone, t.pullDone, t.deferred = nil, nil, nil
	return err
}

// leaked keeps transports whose core endpoint Close could not close
// safely, with the C memory the core may still use.
var leaked []*Transport

func (t *Transport) unpinAll() {
	for i := range t.ops {
		t.ops[i].unpin()
	}
}
