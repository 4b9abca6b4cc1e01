// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only

package lnx

import (
	"sync"
	"sync/atomic"

	"github.com/lnx-go/lnx-go/hmem"
	"github.com/lnx-go/lnx-go/internal/fi"
	"github.com/lnx-go/lnx-go/peers/ofi"
)

// MRAttr is one registration request, as fi_mr_reg/regv/regattr give it.
type MRAttr struct {
	Iov          []Buf
	Access       uint64
	Offset       uint64
	RequestedKey uint64
	Iface        hmem.Iface
	Device       int
	Flags        uint64
}

// remoteAccess are the access bits that make a key visible to peers.
const remoteAccess = fi.REMOTE_READ | fi.REMOTE_WRITE

// MR is an lnx memory registration. It records what the memory is (host
// or a device runtime's, and which device), so the data path knows how to
// move it without touching device memory, and holds one registration per
// network core domain for host memory (from the domain's cache). Device
// memory is never handed to a core: Debian's 1.17 cores have no FI_HMEM,
// so lnx stages it through host buffers instead.
type MR struct {
	dom    *Domain
	Iface  hmem.Iface // what the memory actually is
	Device int
	Access uint64
	Key    uint64 // the key fi_mr_key reports
	base   uintptr
	len    uint64
	segs   []Buf    // the registered pieces of a several-iov MR (nil: one piece)
	core   *coreReg // per-core registrations of a host MR; nil otherwise
	closed atomic.Bool
	// rmaEvent: registered with FI_RMA_EVENT (one-sided operations on it
	// stay target-executed, rma_native.go).
	rmaEvent bool
	// learners: the network peers (and the endpoints that told them)
	// that learnt a core key of this MR (rma_native.go), told when it
	// closes; the domain's key lock guards it.
	learners []keyLearner
}

// IsDevice reports whether the MR covers device memory.
func (m *MR) IsDevice() bool { return m.Iface.IsDevice() }

// coreKeys hands every core registration a key no other registration of
// this process uses, whatever the application asked for: forwarding the
// application's requested_key to each core is what made upstream LNX fail
// with FI_ENOKEY when Open MPI registered several buffers with key 0.
var coreKeys atomic.Uint64

// mrKeys are the lnx-level keys: a counter for FI_MR_PROV_KEY domains, and
// the live keys of remotely accessible MRs, which must be unique.
type mrKeys struct {
	mu     sync.Mutex
	next   uint64
	remote map[uint64]*MR // live keys of remotely accessible MRs
}

// RegMR registers memory with the domain (fi_mr_regattr).
func (d *Domain) RegMR(a MRAttr) (*MR, error) {
	if len(a.Iov) == 0 {
		return nil, fi.Wrap(fi.EINVAL, "fi_mr_reg: no iov")
	}
	if len(a.Iov) > MaxIov {
		return nil, fi.Wrap(fi.EINVAL, "fi_mr_regv: %d iovs exceed mr_iov_limit %d", len(a.Iov), MaxIov)
	}
	if a.Flags&^mrFlagsKnown != 0 {
		return nil, fi.Wrap(fi.EBADFLAGS, "fi_mr_regattr: flags %#x not supported", a.Flags&^mrFlagsKnown)
	}
	if a.Access&^mrAccessKnown != 0 {
		return nil, fi.Wrap(fi.EINVAL, "fi_mr_reg: access %#x not supported", a.Access&^mrAccessKnown)
	}
	if a.Access == 0 {
		a.Access = mrAccessKnown
	}
	m := &MR{dom: d, Access: a.Access, Iface: hmem.System, rmaEvent: a.Flags&mrFlagRMAEvent != 0}
	// The span the registration covers: one range, from the lowest to the
	// highest iov address (fi_mr_regv users register neighbouring pieces).
	lo, hi := ^uintptr(0), uintptr(0)
	for _, b := range a.Iov {
		if b.Len == 0 {
			continue
		}
		if b.Ptr == nil {
			return nil, fi.Wrap(fi.EINVAL, "fi_mr_reg: NULL buffer of length %d", b.Len)
		}
		p := uintptr(b.Ptr)
		lo, hi = min(lo, p), max(hi, p+uintptr(b.Len))
	}
	if hi > lo {
		m.base, m.len = lo, uint64(hi-lo)
	}
	if len(a.Iov) > 1 {
		m.segs = append([]Buf(nil), a.Iov...)
	}
	switch {
	case a.Iface == hmem.System:
	case a.Iface == hmem.CUDA || a.Iface == hmem.ROCR:
		if _, ok := hmem.Lookup(a.Iface); !ok {
			return nil, fi.Wrap(fi.ENOSYS, "fi_mr_regattr: iface %v: no usable %v runtime in this process (see FI_LNX_CUDA_LIB/FI_LNX_ROCM_LIB)", a.Iface, a.Iface)
		}
		// The runtime has the last word: pinned or managed host memory
		// registered with a device iface is still CPU memory.
		if m.base != 0 {
			m.Iface, m.Device = hmem.Classify(m.base, a.Iface)
		}
	default:
		return nil, fi.Wrap(fi.ENOSYS, "fi_mr_regattr: iface %v not supported", a.Iface)
	}
	if err := d.assignKey(m, a); err != nil {
		return nil, err
	}
	if !m.IsDevice() && m.len > 0 && len(d.cores) > 0 {
		r, err := d.cache.acquire(d, m.base, m.len, m.Access)
		if err != nil {
			d.releaseKey(m)
			return nil, err
		}
		m.core = r
	}
	d.mrs.Add(1)
	return m, nil
}

// Registration flags lnx accepts (FI_RMA_EVENT asks for remote events,
// which lnx raises through the endpoint's counters and CQ; the FI_HMEM_* flags
// describe how a buffer was allocated, which lnx learns from its iface).
// FI_MR_DMABUF is refused: mr_iov then points at a dmabuf descriptor.
const (
	mrFlagRMAEvent = uint64(1) << 56 // FI_RMA_EVENT
	mrFlagsKnown   = mrFlagRMAEvent | fi.HMEM_HOST_ALLOC | fi.HMEM_DEVICE_ONLY
	mrAccessKnown  = fi.SEND | fi.RECV | fi.READ | fi.WRITE | fi.REMOTE_READ | fi.REMOTE_WRITE
)

// assignKey picks the key fi_mr_key reports. With FI_MR_PROV_KEY lnx
// chooses one, unique in the domain. Otherwise it is the requested key; a
// key only matters to peers when the MR allows remote access, so only such
// MRs must have distinct keys (-FI_ENOKEY for a duplicate, as libfabric
// specifies); local-only MRs (Open MPI's FI_SEND|FI_RECV registrations,
// all with key 0) never conflict.
func (d *Domain) assignKey(m *MR, a MRAttr) error {
	k := &d.keys
	k.mu.Lock()
	defer k.mu.Unlock()
	if d.provKey() {
		k.next++
		m.Key = k.next
	} else {
		m.Key = a.RequestedKey
	}
	if m.Access&remoteAccess == 0 {
		return nil
	}
	if _, dup := k.remote[m.Key]; dup {
		return fi.Wrap(fi.ENOKEY, "fi_mr_reg: key %#x is already in use by a remotely accessible MR", m.Key)
	}
	if k.remote == nil {
		k.remote = map[uint64]*MR{}
	}
	k.remote[m.Key] = m
	return nil
}

func (d *Domain) releaseKey(m *MR) {
	if m.Access&remoteAccess == 0 {
		return
	}
	d.keys.mu.Lock()
	if d.keys.remote[m.Key] == m {
		delete(d.keys.remote, m.Key)
	}
	d.keys.mu.Unlock()
}

func (d *Domain) provKey() bool {
	return d.Info.Domain.MRMode&fi.MR_PROV_KEY != 0
}

// CoreKey is the key the i-th network core of the domain knows this MR
// by, and whether it has one (host memory on an open core).
func (m *MR) CoreKey(i int) (uint64, bool) {
	if m.core == nil || i < 0 || i >= len(m.core.mrs) || m.core.mrs[i] == nil {
		return 0, false
	}
	return m.core.mrs[i].Key(), true
}

// coreMR is the i-th network core's registration of this MR, nil if it
// has none.
func (m *MR) coreMR(i int) *ofi.MR {
	if m == nil || m.core == nil || i < 0 || i >= len(m.core.mrs) {
		return nil
	}
	return m.core.mrs[i]
}

// Close releases the registration.
func (m *MR) Close() error {
	if m.closed.Swap(true) {
		return fi.Wrap(fi.EINVAL, "MR already closed")
	}
	// Initiators that cached a core key of this MR forget it before the
	// core registration goes: their next operation with the key is
	// refused by this process (FI_EKEYREJECTED) instead of reaching a
	// core key that no longer opens anything.
	m.dom.keys.mu.Lock()
	learners := m.learners
	m.learners = nil
	m.dom.keys.mu.Unlock()
	for _, l := range learners {
		l.e.rmaRevoke(l.p, m.Key)
	}
	var err error
	if m.core != nil {
		err = m.dom.cache.release(m.core)
		m.core = nil
	}
	m.dom.releaseKey(m)
	m.dom.mrs.Add(-1)
	return err
}

// coreReg is the registrations of one host range with every network core
// of a domain, shared by all MRs of that range through the cache.
type coreReg struct {
	key        regKey
	mrs        []*ofi.MR
	refs       int
	prev, next *coreReg // idle list, most recently released first
	// exported: a core key of this registration was handed to a peer
	// (rma_native.go); it is closed, not kept idle, once unreferenced.
	exported atomic.Bool
}

type regKey struct {
	base   uintptr
	len    uint64
	access uint64
}

func (r *coreReg) close() error {
	var first error
	for _, m := range r.mrs {
		if m == nil {
			continue
		}
		if err := m.Close(); err != nil && first == nil {
			first = err
		}
	}
	r.mrs = nil
	return first
}
