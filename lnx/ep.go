// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only

package lnx

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"slices"
	"syscall"
	"time"

	"github.com/lnx-go/lnx-go/hmem"
	"github.com/lnx-go/lnx-go/internal/fi"
	"github.com/lnx-go/lnx-go/lnx/config"
	"github.com/lnx-go/lnx-go/lnx/logging"
	"github.com/lnx-go/lnx-go/peers"
	"github.com/lnx-go/lnx-go/peers/ofi"
	"github.com/lnx-go/lnx-go/shm"
)

// Bind flags (fi_ep_bind).
const (
	bindTransmit  = fi.SEND
	bindRecv      = fi.RECV
	bindSelective = uint64(1) << 59 // FI_SELECTIVE_COMPLETION
)

// Endpoint is an lnx RDM endpoint: one core endpoint per linked core,
// behind one matching engine. Its state is grouped by concern in the
// embedded structs below (their fields are used as e.field); all of it
// is guarded by e.guard (eplock.go) unless a comment says otherwise.
type Endpoint struct {
	Domain *Domain
	Info   fi.Info

	guard   epGuard // taken only through lock, lockCollecting, lockToArm (eplock.go)
	enabled bool
	closed  bool // Close ran: late progress calls find nothing to do

	epBinding  // AV, CQs, counters, op flags
	epCores    // the core endpoints
	epRouting  // fi_addr -> core and peer, message order
	epMatching // posted and unexpected queues
	epInFlight // sends and pulls awaiting their core
	epPolling  // when progress polls which core, and what it hands them
	epDevMem   // device memory: staging and IPC
	epFast     // C's fast paths and the armed receive

	stats [numCoreKinds]coreStats
	goUse goUse // the Go runtime's work while open (said at close)
}

// epBinding is what fi_ep_bind and the op-flag options set: where
// completions and counts go, and the default flags.
type epBinding struct {
	av      *AV
	txCQ    *CQ
	rxCQ    *CQ
	txSel   bool // FI_SELECTIVE_COMPLETION on the transmit CQ
	rxSel   bool
	cntrs   map[uint64]*Cntr // keyed by bind flag (FI_SEND, FI_RECV, ...)
	txFlags uint64
	rxFlags uint64
	// FI_OPT_MIN_MULTI_RECV: a multi-receive buffer with less room left
	// is released.
	minMultiRecv uint64
}

// epCores holds the endpoint's core endpoints twice: as cores, for the
// lifecycle, progress, watch and lending loops (core.go), and typed, for
// routing and the data path, where a route or rendezvous already knows
// its core and calls it directly.
type epCores struct {
	cores []core // shm first, then the network cores in link order: poll order
	// cores[:local] are polled on every progress call, cores[local:] (the
	// paced ones) on the network cadence (netDue); set by addCore.
	local int
	shm   *shm.Endpoint    // the same-node core, or nil
	nets  []*ofi.Transport // one per network core domain of the link
}

// epRouting is how the endpoint reaches each fi_addr (msg.go's route)
// and keeps PER_MSG order, and maps senders back to fi_addrs.
type epRouting struct {
	node     uint64
	routes   map[uint64]*route // fi_addr -> how to reach it
	rails    config.RailSelection
	seqs     map[uint64]*seqState           // PER_MSG senders' order, by fi_addr
	anonSeqs map[uint64][]uint16            // PER_MSG numbers delivered from senders not in the AV, by transport id
	railSeqs map[*ofi.Peer]uint16           // PER_MSG: our next sequence to peers whose fi_addr was removed
	retire   []*shm.Peer                    // shm peers of removed fi_addrs, released once unused (releasePeers)
	srcCache struct{ id, gen, addr uint64 } // shmSource's last answer
}

// epMatching is the matching engine's state: one queue each for tagged
// and untagged messages, the unexpected budget, and scratch that keeps
// small messages allocation-free.
type epMatching struct {
	tagged      *peers.Queue
	untagged    *peers.Queue
	unexpBytes  uint64
	unexpMax    uint64
	forceArrive bool // arrive ignores the unexpected budget
	freeRecvs   []*recvCtx
	probe       peers.Msg
}

// epInFlight is work handed to a core that progress must finish.
type epInFlight struct {
	sends    map[uint64]sendCtx // sends awaiting their completion (values: no allocation per send)
	nextSend uint64
	pulls    map[*pendingPull]struct{} // network pulls in flight
	rma      *rmaState                 // one-sided operations (rma.go), nil until used
}

// epPolling is the progress side: the network cadence (netDue), the
// callbacks the cores' polls report to (made once: no allocation per
// poll), and the CQ read driving progress.
type epPolling struct {
	// rmaExported: this endpoint handed a network peer a core key
	// (rma_native.go), so peers may access its memory without a message
	// and the quiet network core is polled every netRMAGap.
	rmaExported bool
	netHot      int
	netSeen     bool          // a network core carried something (netBusy): netGap is no longer netColdGap
	netLast     time.Duration // since t0, when a quiet network core was last polled
	netActiveAt time.Duration // since t0, the last traffic seen on a network core (netActive)
	t0          time.Time
	arriveFn    func(*shm.Arrival) bool
	sendDone    func(uint64, error)
	pullDone    func(*ofi.Rendezvous, uint64, error)
	// collecting is the CQ whose read is driving progressWatch (e locked).
	collecting *CQ
}

// epDevMem is device memory's state (devmem.go, ipc.go): staging
// through host buffers, and IPC over shm.
type epDevMem struct {
	hmemOn   bool        // a device runtime is loaded: classify undescribed buffers
	stage    stagingPool // host buffers for device-memory transfers
	ipcOn    bool        // device sends over shm may go by IPC handle
	acks     []pendingAck
	ipcSends int // IPC sends awaiting their ack
	netSends int // of sends, those a network core carries
	ipcTick  int
	ipcMaps  ipcCache // peers' allocations mapped here
}

// epFast is the C fast paths' state (fast.go) and the armed receive
// (arm.go).
type epFast struct {
	fast *fastMem // C's fast send and receive paths; nil in Go tests
	mrOf func(uintptr) *MR
	// queuedOp carries each receive C queued into recvLocked (e locked).
	queuedOp Op
	// Armed receives: whether the endpoint may arm, whether receives are
	// lent to C (false: the cores are Go's), those Go lent (in C's slot
	// order), and disarm's copy of those C armed and left pending.
	canArm   bool
	canRearm bool // C may arm the next receive itself (FI_LNX_REARM_RECV)
	// armAfterRead: the last arm failed only for completions in the CQ.
	armAfterRead bool
	armed        bool
	armRecs      []*peers.Recv
	armPend      []queuedRecv
	// lastBig: the last message to arrive was one C cannot complete (a
	// network rendezvous, an shm one without CMA, an IPC handle): arm
	// does not lend with no receive posted then, as the next call into Go
	// would only take back.
	lastBig bool
	lastNet *ofi.Peer // the last network sender (nil: unknown), for netCore.lend
	peer    *peerCore // the link's network core when driven through the peer API (core_peer.go)
	// armHeads is disarm's copy of the ring heads C left, handed to each
	// core's takeBack. A field, not a local: a local passed through the
	// core interface would be allocated on every disarm.
	armHeads [ArmRings]uint64
	// armAcks: the ack ring positions C left beside armHeads (rendezvous
	// records C acknowledged), for the shm core's takeBack.
	armAcks [ArmRings]uint64
	// armTx: the TxSlots C posted rendezvous sends through while lent
	// (armMem.tx, copied by disarm); the shm core adopts them at takeBack.
	armTx  [ArmTx]uintptr
	armNTx int
}

// OpenEndpoint opens an endpoint and its core endpoints.
func (d *Domain) OpenEndpoint(info fi.Info) (*Endpoint, error) {
	if info.HasEP && info.EP.Type != fi.EP_RDM && info.EP.Type != fi.EP_UNSPEC {
		return nil, fi.Wrap(fi.EOPNOTSUPP, "endpoint type %d: lnx endpoints are FI_EP_RDM", info.EP.Type)
	}
	e := &Endpoint{Domain: d, Info: info,
		epBinding:  epBinding{cntrs: map[uint64]*Cntr{}},
		epRouting:  epRouting{node: NodeID(d.cfg), routes: map[uint64]*route{}},
		epMatching: epMatching{tagged: peers.NewSerialQueue(true), untagged: peers.NewSerialQueue(false), unexpMax: d.cfg.UnexpectedMax},
		epInFlight: epInFlight{sends: map[uint64]sendCtx{}, pulls: map[*pendingPull]struct{}{}},
		epPolling:  epPolling{t0: time.Now()}}
	e.goUse.start()
	e.minMultiRecv = e.injectSize()
	if info.HasTx {
		e.txFlags = info.Tx.OpFlags
	}
	if info.HasRx {
		e.rxFlags = info.Rx.OpFlags
	}
	e.arriveFn, e.sendDone, e.pullDone = e.onArrival, e.onSendDone, e.onPullDone
	e.hmemOn = hmem.Available() // without a runtime no buffer is ever classified
	e.ipcOn = e.hmemOn && d.cfg.HmemIPC
	if d.Link.Group.HasShm() {
		cfg := shmConfig
		if d.cfg.FastRndv {
			cfg.OutsideRndvMax = fastRndvMax
		}
		se, err := shm.Open(cfg)
		if err != nil {
			code := fi.ENODEV
			if errors.Is(err, syscall.ENOSPC) {
				code = fi.ENOSPC // /dev/shm cannot hold the region
			}
			return nil, fi.Wrap(code, "shm core: %v", err)
		}
		e.shm = se
		e.addCore(&shmCore{e: e, ep: se})
	}
	e.rails, e.seqs = d.cfg.Rails, map[uint64]*seqState{}
	src, err := d.srcNames(info)
	if err != nil {
		e.closeCores()
		return nil, err
	}
	if len(d.cores) == 1 && d.cores[0].peer {
		// The peer API (FI_LNX_PEER_API, libfabric 2.0 to 2.2): the
		// core's endpoint takes lnx's peer SRX and CQ, or lnx falls
		// back to the transport adapter.
		var srcName []byte
		if len(src) > 0 {
			srcName = src[0]
		}
		pc, err := e.openPeerCore(d.cores[0], srcName)
		if err == nil {
			e.peer = pc
			e.addCore(pc)
			if err = e.openSide(d.cores[0], pc); err == nil {
				d.get()
				return e, nil
			}
			e.closePeerPath()
		}
		// The default: a core without the peer API (2.1's native tcp)
		// is no surprise. Asked for, it is.
		logf := logging.Infof
		if d.cfg.PeerAPIAsked {
			logf = logging.Warnf
		}
		logf(logging.EPCtrl, "link %s: peer API not taken, using the transport adapter: %v", d.Link.Name(), err)
	}
	for i, c := range d.cores {
		var srcName []byte
		if i < len(src) {
			srcName = src[i]
		}
		// On the domain lnx opened. 1.17 rxm never reports a dead peer:
		// the transport probes and gives up after the peer timeout.
		t, err := c.dom.OpenTransport(ofi.Config{PeerTimeout: d.cfg.PeerTimeout,
			Credits: d.cfg.NetCredits, NoRead: !d.cfg.NetRead, SrcName: srcName, SendRegs: sendRegs(d.cfg.MRCacheMax)})
		if err != nil {
			e.closeCores()
			return nil, err
		}
		ti := len(e.nets)
		e.nets = append(e.nets, t)
		e.addCore(&netCore{e: e, t: t, ti: ti, arrive: e.netArrival(t, ti), sole: len(d.cores) == 1})
	}
	d.get()
	return e, nil
}

// sendRegs is how many idle registrations of send buffers a transport
// keeps (ofi.Config.SendRegs): FI_LNX_MR_CACHE_MAX, as for the
// application's MRs; 0 keeps none.
func sendRegs(cacheMax int) int {
	if cacheMax <= 0 {
		return -1
	}
	return min(cacheMax, ofi.MaxSendRegs)
}

// openSide opens the transport beside peer core pc where the endpoint
// needs one (needSide), on the domain lnx registers the application's
// MRs with (pc has a domain of its own): the peer core carries the
// messages, the transport one-sided operations
// (rma.go, rma_native.go: requests the target executes, and the core's
// own RMA with its MR keys) and the probes that find a peer dead while
// the peer core waits for it (peerCore.watch). It has pc's id, so that
// one id names a peer on both, and lnx's address carries it packed
// against pc's (coreSide); an address that does not fit then fails the
// peer path (the caller falls back to the adapter).
func (e *Endpoint) openSide(cd *coreDomain, pc *peerCore) error {
	id, err := ofi.AddrID(pc.blob)
	if err != nil {
		return err
	}
	name, _ := ofi.AddrName(pc.blob)
	if e.shm != nil && !ofi.IsSockAddr(name) {
		// libfabric shm's names grow with the pid: beside lnx's shm,
		// whether both fit would differ from one process to the next,
		// and two processes must take the same path.
		return errors.New("no room for a side transport beside lnx's shm and a core name of varying length (libfabric shm) in lnx's 64-byte address")
	}
	if !e.needSide(pc.prov, name) {
		return e.sideRoom(id, name)
	}
	cfg := e.Domain.cfg
	t, err := cd.dom.OpenTransport(ofi.Config{ID: id, PeerTimeout: cfg.PeerTimeout,
		Credits: cfg.NetCredits, NoRead: !cfg.NetRead, OnError: pc.peerGone, SendRegs: sendRegs(cfg.MRCacheMax)})
	if err != nil {
		return fmt.Errorf("side transport: %w", err)
	}
	e.nets = append(e.nets, t)
	e.addCore(&netCore{e: e, t: t, arrive: e.netArrival(t, 0), side: true})
	if _, err := e.Name(); err != nil {
		return fmt.Errorf("address with the side transport: %w", err)
	}
	return nil
}

// needSide says whether the endpoint opens the side transport beside a
// peer core of provider prov and core name: for one-sided operations,
// and to watch the peers' liveness where their listeners cannot be asked
// (no TCP listener behind the core name: ofi.ListenerProbeable,
// peer_alive.go). Without it an endpoint holds one core endpoint, as on
// the adapter: 2.1 rxm posts its shared receive buffers when an endpoint
// is enabled, about 130 MB per endpoint on the default links
// (docs/peer-api.md).
func (e *Endpoint) needSide(prov string, name []byte) bool {
	caps := e.Info.Caps // 0: the application asked for none, so all of them
	return caps == 0 || caps&oneSidedCaps != 0 || !ofi.ListenerProbeable(prov, name)
}

// sideRoom fails the peer path where lnx's address would have no room for
// a side transport beside core name, though none is opened: every process
// of a job must take the same path whatever caps its endpoints ask for
// (lnx's shm beside an IPv6 name: the adapter for all). The stand-in has
// another port, the most a real side transport's packed name differs by.
func (e *Endpoint) sideRoom(id uint64, name []byte) error {
	alt := bytes.Clone(name)
	alt[2], alt[3] = ^alt[2], ^alt[3]
	a := e.addr()
	a.Cores = append(a.Cores, CoreAddr{Kind: coreSide, Raw: ofi.EncodeAddr(id, alt)})
	if _, err := a.Encode(); err != nil {
		return fmt.Errorf("address with room for a side transport: %w", err)
	}
	return nil
}

// closePeerPath closes what OpenEndpoint opened for the peer path, the
// shm core excepted, before it falls back to the adapter.
func (e *Endpoint) closePeerPath() {
	for i := len(e.cores) - 1; i >= 0; i-- {
		switch c := e.cores[i].(type) {
		case *peerCore, *netCore:
			_ = c.close()
			e.cores = slices.Delete(e.cores, i, i+1)
		}
	}
	e.peer, e.nets = nil, nil
}

// addCore appends c to the endpoint's cores, keeping the cores polled on
// every call ahead of the paced ones (progressLocked polls cores[:local],
// then cores[local:] when netDue).
func (e *Endpoint) addCore(c core) {
	if c.paced() {
		e.cores = append(e.cores, c)
		return
	}
	e.cores = slices.Insert(e.cores, e.local, c)
	e.local++
}

func (e *Endpoint) closeCores() error {
	var errs []error
	for _, c := range e.cores {
		errs = append(errs, c.close())
	}
	e.cores, e.local, e.shm, e.nets = nil, 0, nil, nil
	return errors.Join(errs...)
}

// Bind attaches an AV, CQ or counter.
func (e *Endpoint) Bind(obj any, flags uint64) error {
	e.lock()
	defer e.unlock()
	if e.enabled {
		return fi.Wrap(fi.EOPBADSTATE, "endpoint already enabled")
	}
	switch o := obj.(type) {
	case *AV:
		if e.av != nil {
			return fi.Wrap(fi.EINVAL, "endpoint already has an AV")
		}
		if o.Domain != e.Domain {
			return fi.Wrap(fi.EINVAL, "AV belongs to another domain")
		}
		o.mu.Lock()
		o.users = append(o.users, e)
		o.mu.Unlock()
		e.av = o
	case *CQ:
		if o.Domain != e.Domain {
			return fi.Wrap(fi.EINVAL, "CQ belongs to another domain")
		}
		if flags&(bindTransmit|bindRecv) == 0 {
			return fi.Wrap(fi.EBADFLAGS, "CQ bind needs FI_TRANSMIT and/or FI_RECV")
		}
		if flags&bindTransmit != 0 {
			if e.txCQ != nil {
				return fi.Wrap(fi.EINVAL, "endpoint already has a transmit CQ")
			}
			e.txCQ, e.txSel = o, flags&bindSelective != 0
			o.attach(e)
		}
		if flags&bindRecv != 0 {
			if e.rxCQ != nil {
				return fi.Wrap(fi.EINVAL, "endpoint already has a receive CQ")
			}
			e.rxCQ, e.rxSel = o, flags&bindSelective != 0
			if o != e.txCQ {
				o.attach(e)
			}
		}
	case *Cntr:
		if o.Domain != e.Domain {
			return fi.Wrap(fi.EINVAL, "counter belongs to another domain")
		}
		const cntrFlags = fi.SEND | fi.RECV | fi.READ | fi.WRITE | fi.REMOTE_READ | fi.REMOTE_WRITE
		if flags&cntrFlags == 0 || flags&^cntrFlags != 0 {
			return fi.Wrap(fi.EBADFLAGS, "bad counter bind flags %#x", flags)
		}
		for bit := uint64(1); bit != 0; bit <<= 1 {
			if flags&bit != 0 {
				e.cntrs[bit] = o
			}
		}
		o.attach(e)
	default:
		return fi.Wrap(fi.EINVAL, "cannot bind %T to an endpoint", obj)
	}
	e.refreshFast()
	return nil
}

// Enable makes the endpoint ready for data transfer.
func (e *Endpoint) Enable() error {
	e.lock()
	defer e.unlock()
	if e.closed {
		return fi.Wrap(fi.EOPBADSTATE, "endpoint is closed")
	}
	if e.enabled {
		return nil
	}
	if e.av == nil {
		return fi.Wrap(fi.ENOAV, "an RDM endpoint needs an AV before fi_enable")
	}
	if e.txCQ == nil && e.rxCQ == nil && len(e.cntrs) == 0 {
		return fi.Wrap(fi.ENOCQ, "endpoint has no CQ or counter bound")
	}
	e.enabled = true
	e.refreshFast()
	e.kick() // the CQs have nothing of this endpoint to watch yet
	return nil
}

// OpsFlags reads or replaces the default op flags (FI_GETOPSFLAG /
// FI_SETOPSFLAG); which = FI_TRANSMIT or FI_RECV in the flags word.
func (e *Endpoint) OpsFlags(v *uint64, set bool) error {
	e.lock()
	defer e.unlock()
	dir := *v & (fi.SEND | fi.RECV)
	p := &e.txFlags
	switch dir {
	case fi.SEND:
	case fi.RECV:
		p = &e.rxFlags
	default:
		return fi.Wrap(fi.EINVAL, "FI_GETOPSFLAG/FI_SETOPSFLAG need exactly one of FI_TRANSMIT, FI_RECV")
	}
	if set {
		e.takeQueued() // queued receives take the flags they were posted under
		*p = *v &^ (fi.SEND | fi.RECV)
		e.refreshFast()
	} else {
		*v = *p | dir
	}
	return nil
}

// MinMultiRecv reads or sets FI_OPT_MIN_MULTI_RECV (bytes); a buffer
// already posted keeps using the value it was posted under only until
// its next message.
func (e *Endpoint) MinMultiRecv(v *uint64, set bool) {
	e.lock()
	defer e.unlock()
	if set {
		e.minMultiRecv = *v
	} else {
		*v = e.minMultiRecv
	}
}

// Name returns the endpoint's lnx address.
func (e *Endpoint) Name() ([]byte, error) {
	a := e.addr()
	return a.Encode()
}

// addr is the endpoint's lnx address before encoding: its node, link and
// the address of each of its cores.
func (e *Endpoint) addr() Addr {
	a := Addr{Node: e.node, Link: linkHash(e.Domain.Link.Name())}
	for _, c := range e.cores {
		a.Cores = append(a.Cores, c.addr())
	}
	return a
}

// Close closes the endpoint and its cores, releasing its bindings.
func (e *Endpoint) Close() error {
	e.lock()
	defer e.unlock()
	if e.cfg().DumpStats {
		e.dumpStats(os.Stderr)
	} else {
		logging.Infof(logging.EPData, "%s", e.goUse.line(e)) // with C's fast paths on, unlike the stats
	}
	if n := e.stats[kindShm].txRndvByC; n > 0 {
		// C's fast sends are off with FI_LNX_DUMP_STATS: said here.
		logging.Infof(logging.EPData, "pid %d: %d shm rendezvous sends posted in C", os.Getpid(), n)
	}
	// Stop C's fast sends and leave the CQs first: both may be reading
	// shm memory that closing the cores unmaps. Receives C queued become
	// posted receives like any other.
	e.stopQueue()
	e.unhookArm()
	e.closeFast()
	if e.txCQ != nil {
		e.txCQ.detach(e)
	}
	if e.rxCQ != nil && e.rxCQ != e.txCQ {
		e.rxCQ.detach(e)
	}
	err := e.closeCores()
	for _, s := range e.sends {
		e.stage.put(s.stage)
	}
	for p := range e.pulls {
		e.stage.put(p.stage)
	}
	e.sends, e.pulls = nil, nil
	if s := e.rma; s != nil {
		// Staging buffers of one-sided data on device memory.
		for _, b := range s.sends {
			e.stage.put(b)
		}
		for p := range s.pulls {
			e.stage.put(p.stage)
		}
		for _, m := range s.out {
			e.stage.put(m.stage)
		}
		s.sends, s.pulls, s.out = map[uint64][]byte{}, map[*rmaPull]struct{}{}, nil
	}
	e.stage.drain()
	e.ipcMaps.closeAll()
	if e.av != nil {
		e.av.mu.Lock()
		e.av.users = slices.DeleteFunc(e.av.users, func(u *Endpoint) bool { return u == e })
		e.av.mu.Unlock()
	}
	seen := map[*Cntr]bool{}
	for _, c := range e.cntrs {
		if !seen[c] {
			c.detach(e)
			seen[c] = true
		}
	}
	// A CQ or counter read that took its list of endpoints before the
	// detach above may still reach this one once e.guard is released; C
	// unmaps the fast-path memory as soon as Close returns. Leave nothing
	// such a late call could touch: it finds a disabled endpoint.
	e.enabled, e.closed = false, true
	e.fast, e.mrOf = nil, nil
	e.Domain.put()
	if err != nil {
		logging.Warnf(logging.EPCtrl, "closing core endpoints: %v", err)
	}
	return nil
}
