package lnx

import (
	"sync/atomic"
	"unsafe"

	"github.com/lnx-go/lnx-go/lnx/fi"
)

// The fast send path: a call into Go costs about as much as a whole shm
// message, so capi's C side writes small sends to peers on this node
// itself, into the peer's shm ring through its shm.TxSlot, and queues their
// completions in C. Go decides when that is allowed (fastMem.on) and
// publishes, per fi_addr, the slot of each shm peer once it has a route to
// it. Everything else (first send to a peer, rendezvous sizes, a full or
// wrapping ring, device memory, counters, FI_LNX_DUMP_STATS, the …msg
// calls) goes through Endpoint.Send as before.
//
// fastMem mirrors struct lnx_fast (capi/include/lnx_capi.h; capi's tests
// compare the layouts). Its memory is C's; pointers are stored as uintptr
// (see gateMem).
type fastMem struct {
	on         uint32
	txSel      uint32
	txFlags    uint64
	injectSize uint64
	cring      uintptr // C's: the transmit CQ's completion ring
	peer       [FastPeers]uintptr
}

// FastPeers is LNX_FAST_PEERS: fi_addrs below it can be sent to from C.
const FastPeers = 4096

// FastSize and FastPeerOffset describe struct lnx_fast (checked by capi).
const (
	FastSize       = unsafe.Sizeof(fastMem{})
	FastPeerOffset = unsafe.Offsetof(fastMem{}.peer)
)

// HdrTagged and HdrData are lnx's message header flags, which the C fast
// path writes too (checked by capi).
const (
	HdrTagged = hdrTagged
	HdrData   = hdrData
)

// EnvFastSend turns the C fast send path off when "0".
const EnvFastSend = "FI_LNX_FAST_SEND"

// SetFast gives the endpoint the C memory of its fast send path (struct
// lnx_fast, zeroed: off until refreshFast turns it on).
func (e *Endpoint) SetFast(p unsafe.Pointer) {
	e.mu.Lock()
	e.fast = (*fastMem)(p)
	e.mu.Unlock()
}

// refreshFast recomputes whether C may send by itself (e.mu held): only
// where Endpoint.Send would do nothing C cannot, i.e. host memory (no
// device runtime to consult), no send counter, no statistics.
func (e *Endpoint) refreshFast() {
	f := e.fast
	if f == nil {
		return
	}
	on := e.enabled && e.shm != nil && !e.hmemOn && e.txCQ != nil && e.cntrs[fi.SEND] == nil &&
		!envBool(EnvDumpStats) && !envOff(EnvFastSend)
	atomic.StoreUint64(&f.txFlags, e.txFlags)
	atomic.StoreUint64(&f.injectSize, e.injectSize())
	sel := uint32(0)
	if e.txSel {
		sel = 1
	}
	atomic.StoreUint32(&f.txSel, sel)
	v := uint32(0)
	if on {
		v = 1
	}
	atomic.StoreUint32(&f.on, v)
}

// publishFast lets C send to addr over shm once Go has a route (e.mu held).
func (e *Endpoint) publishFast(addr uint64, rt *route) {
	if e.fast == nil || addr >= FastPeers || rt.shm == nil {
		return
	}
	if s := rt.shm.TxSlot(); s != nil {
		atomic.StoreUintptr(&e.fast.peer[addr], uintptr(unsafe.Pointer(s)))
	}
}

// closeFast stops the C fast path before the shm core goes away (e.mu
// held).
func (e *Endpoint) closeFast() {
	if e.fast == nil {
		return
	}
	atomic.StoreUint32(&e.fast.on, 0)
	for i := range e.fast.peer {
		if e.fast.peer[i] != 0 {
			atomic.StoreUintptr(&e.fast.peer[i], 0)
		}
	}
}
