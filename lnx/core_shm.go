// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only

package lnx

import (
	"io"
	"unsafe"

	"github.com/lnx-go/lnx-go/internal/fi"
	"github.com/lnx-go/lnx-go/peers/ofi"
	"github.com/lnx-go/lnx-go/shm"
)

// shmConfig is the geometry of the endpoint's shm core. Messages of up
// to 4 KiB go eager, copied through the ring by sender and receiver, both
// in C; larger ones by rendezvous: one process_vm_readv by the receiver,
// in C too when the receive is armed (lnx_arm_rndv), and posted and
// reaped in C by a lent sender (lnx_fast_put_rndv). Since the sender's
// side moved to C, the single copy beats the two from 5 KiB on: an MPI
// ping-pong of 8 KiB took 1.64-1.87 us by rendezvous and 2.3-2.5 eager,
// ob1 + vader 1.8-2.1 us; 4 KiB eager took 1.1 us (docs/performance.md,
// "The shm eager limit down to 4 KiB"). A 128 KiB ring holds about 30
// eager messages of 4 KiB in flight; each sender to the endpoint has a
// ring.
var shmConfig = shm.Config{RingBytes: 128 << 10, EagerMax: 4 << 10}

// fastRndvMax is the largest shm rendezvous send C posts itself
// (FI_LNX_FAST_RNDV): the largest a receiver's C copies too
// (LNX_ARM_RNDV_MAX in capi/arm.c).
const fastRndvMax = 4 << 20

// shmCore is the core adapter (core.go) of the endpoint's own
// shared-memory core. Lent to C, it means the inbound rings: C reads
// their records and advances the heads Go adopts back at takeBack.
type shmCore struct {
	e  *Endpoint
	ep *shm.Endpoint // the same as e.shm
}

func (c *shmCore) addr() CoreAddr { return CoreAddr{Kind: coreShm, Raw: c.ep.Addr()} }
func (c *shmCore) paced() bool    { return false }
func (c *shmCore) quiet() bool    { return c.ep.Quiet() }
func (c *shmCore) housekeep()     { c.ep.Housekeep() }
func (c *shmCore) canLend() bool  { return true }
func (c *shmCore) release()       { c.e.releasePeers() }
func (c *shmCore) close() error   { return c.ep.Close() }

// writeStats: shm's traffic is in the endpoint's per-kind lines.
func (c *shmCore) writeStats(io.Writer) {}

func (c *shmCore) poll() {
	e := c.e
	c.ep.Poll(e.arriveFn, e.sendDone)
	if len(e.acks) > 0 {
		e.flushAcks()
	}
	if e.ipcSends > 0 {
		e.checkIPCPeers()
	}
	if len(e.retire) > 0 {
		e.releasePeers()
	}
}

func (c *shmCore) idleWords(w *watchSet) {
	n, ok := c.ep.IdleWords(w.words[w.n:])
	w.n += n
	if !ok {
		w.busy = true
	}
}

// armedWords: C reads the lent rings itself; a new ring still shows in
// the claim word.
func (c *shmCore) armedWords(w *watchSet) {
	if w.n == len(w.words) {
		w.busy = true
		return
	}
	w.words[w.n] = c.ep.ClaimWord()
	w.n++
}

// lend describes the active inbound rings in a. A sender not in the AV
// keeps the rings with Go, which reports it as such.
func (c *shmCore) lend(a *armMem, _ uint64) bool {
	var views [ArmRings]shm.RingView
	n, ok := c.ep.Lend(views[:])
	if !ok {
		return false
	}
	for i, v := range views[:n] {
		src := c.e.shmSource(v.Src)
		if src == fi.ADDR_NOTAVAIL {
			c.ep.Resync(nil)
			return false
		}
		a.r[i] = armRing{ring: uintptr(v.Ring), mask: v.Mask, size: v.Size, salt: v.Salt, eagerMax: v.EagerMax,
			head: v.Head, fwdHead: uintptr(unsafe.Pointer(v.FwdHead)), src: src,
			ack: uintptr(v.Ack), ackMask: v.AckMask, ackTail: v.AckTail,
			ackHead: uintptr(unsafe.Pointer(v.AckHead)), pid: uint64(v.Pid)}
		if v.CMA && v.Pid > 0 {
			a.r[i].cma = 1
		}
	}
	a.nrings = uint32(n)
	return true
}

// takeBack adopts the ring positions C consumed up to, and the ack ring
// positions after the rendezvous records it acknowledged (disarm copied
// them to armAcks beside heads); then the rendezvous sends C posted and
// has not seen acknowledged (disarm copied their slots to armTx) become
// Go's, completed as Send's are.
func (c *shmCore) takeBack(heads []uint64) {
	c.ep.ResyncAcks(heads, c.e.armAcks[:len(heads)])
	e := c.e
	for i := range e.armNTx {
		// C memory (the shm endpoint's slot arena), never Go's.
		s := *(**shm.TxSlot)(unsafe.Pointer(&e.armTx[i]))
		c.ep.AdoptTx(s, e.adoptSend)
		e.armTx[i] = 0
	}
	e.armNTx = 0
}

// adoptSend makes a rendezvous send C posted one of Go's (e locked): it
// completes when shm's Poll reports its ack (onSendDone).
func (e *Endpoint) adoptSend(o shm.OutsideSend) uint64 {
	e.nextSend++
	e.sends[e.nextSend] = sendCtx{ctx: o.Ctx, flags: fi.SEND | opKindFlags(o.Tagged), len: o.Len, cq: o.CQ}
	return e.nextSend
}

// coreAddrs returns the blobs of a's cores of one kind, in link order.
func coreAddrs(a *Addr, kind byte) [][]byte {
	var out [][]byte
	for _, c := range a.Cores {
		if c.Kind == kind {
			out = append(out, c.Raw)
		}
	}
	return out
}

// coreAddr returns the blob of a's first core of one kind, if any.
func coreAddr(a *Addr, kind byte) ([]byte, bool) {
	for _, c := range a.Cores {
		if c.Kind == kind {
			return c.Raw, true
		}
	}
	return nil, false
}

// shmAddrOf returns the shm core's address inside an lnx address.
func shmAddrOf(a *Addr) ([]byte, bool) { return coreAddr(a, coreShm) }

// shmIDOf returns the shm endpoint id carried in a peer address, which is
// how an arriving message is traced back to its fi_addr.
func shmIDOf(a *Addr) (uint64, bool) {
	raw, ok := shmAddrOf(a)
	if !ok {
		return 0, false
	}
	id, err := shm.AddrID(raw)
	return id, err == nil
}

// netAddrsOf returns the network cores' addresses inside an lnx address,
// in link order.
func netAddrsOf(a *Addr) [][]byte { return coreAddrs(a, coreOFI) }

// peerAddrsOf returns the address blobs of a peer's peer-API cores.
func peerAddrsOf(a *Addr) [][]byte { return coreAddrs(a, corePeer) }

// sideAddrOf returns the address blob of the transport a peer opened
// beside its peer-API core (coreSide), if any.
func sideAddrOf(a *Addr) ([]byte, bool) { return coreAddr(a, coreSide) }

// netIDsOf returns the transport ids of a peer's network cores (peer-API
// ones included: their blobs carry an id too, by which an arrival's
// sender is found in the AV).
func netIDsOf(a *Addr) []uint64 {
	var ids []uint64
	for _, raw := range append(netAddrsOf(a), peerAddrsOf(a)...) {
		if id, err := ofi.AddrID(raw); err == nil {
			ids = append(ids, id)
		}
	}
	return ids
}
