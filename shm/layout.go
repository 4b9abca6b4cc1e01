// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only

package shm

import (
	"unsafe"
)

// Shared-memory layout. Every structure below lives in a mapping that other
// processes may write, so none of it is trusted: geometry is recomputed
// locally from validated header fields, positions are masked before use, and
// record fields are copied into locals once and checked before they are used.

const (
	regionMagic   = 0x4c4e58534d484d31 // "LNXSMHM1"
	regionVersion = 1

	pageBytes  = 4096
	hdrBytes   = pageBytes // region header page
	ctlBytes   = 512       // per-channel control block
	lineBytes  = 64        // cache line; record alignment
	ackBytes   = 32        // one ack entry
	recHdrSize = 48        // record header (stamp .. cookie)
	iovBytes   = 16        // one {addr, len} pair in a rendezvous record

	// ackEntries is the number of ack slots in every channel. A sender keeps
	// at most ackEntries-1 rendezvous sends outstanding per channel, so an
	// honest receiver can never find the ack ring full.
	ackEntries = 256

	// Limits used to validate a peer's header (and our own Config).
	minRingBytes  = 4096
	maxRingBytes  = 1 << 26
	minBulkBytes  = 8192
	maxBulkBytes  = 1 << 26
	maxRings      = 4096
	minAckEntries = 16
	maxAckEntries = 4096
	maxRegion     = 1 << 40
	maxAddrArea   = 120
)

// Region header feature bits.
const (
	// hdrLocked: the owner holds an OFD write lock on the region file for
	// the endpoint's lifetime (createRegion), so a free lock means a dead
	// owner. Regions without it are judged by their pid (cleanupStale).
	hdrLocked = 1 << 0
)

// Region header states.
const (
	epOpen   = 1
	epClosed = 2
)

// Channel (inbound ring) claim states: low 8 bits of chanCtl.state; the
// owner's pid sits in the upper bits so that a stuck claim can be recovered
// when its owner dies.
const (
	stFree     = 0
	stClaiming = 1
	stActive   = 2
	stClosed   = 3 // sender closed / disconnected
	stDropped  = 4 // receiver found the ring corrupt and stopped reading it
)

func stateWord(pid int, st uint64) uint64 { return uint64(uint32(pid))<<8 | st }

// Record kinds (low byte of recHdr.kf).
const (
	recPad   = 1 // skip to the end of the ring
	recEager = 2 // payload inline
	recRndv  = 3 // rendezvous request: iov list follows the header
)

// Internal record flags (bits 16..31 of recHdr.kf).
const (
	rfNoCMA = 1 << 16 // sender asks the receiver not to use CMA
)

// Ack status values.
const (
	ackOK      = 0
	ackDiscard = 1
	ackFault   = 2 // receiver could not read the sender's buffers
	ackAbort   = 3 // receiver gave up (stall timeout)
)

// Bulk (fallback copy) fill word: gen<<32 | fillErr | count.
const (
	fillErr   = 1 << 31
	countMask = fillErr - 1
)

// Channel flags written by the sender at claim time.
const (
	cfNoCMA = 1
)

// regionHdr is the first page of a region.
type regionHdr struct {
	magic      uint64 // 0
	version    uint32 // 8
	features   uint32 // 12: hdrLocked ...; 0 in regions of older lnx-go
	pid        uint64 // 16
	id         uint64 // 24
	nrings     uint32 // 32
	ringBytes  uint32
	ackEntries uint32 // 40
	bulkBytes  uint32
	eagerMax   uint32 // 48
	_          uint32
	total      uint64    // 56
	claimGen   uint64    // 64: bumped on every claim / close / release
	pidNS      uint64    // 72: owner's PID namespace (pidNSID), 0 = unknown
	_          [6]uint64 //
	state      uint64    // 128: epOpen / epClosed
	_          [7]uint64
}

// chanCtl is the control block of one inbound channel. Each group of words
// that is written by one side sits in its own cache line.
type chanCtl struct {
	// line 0: claim; written by the claiming sender (and the receiver on release)
	state uint64
	owner uint64 // sender endpoint id
	epoch uint64 // incremented by every claim
	flags uint64 // cfNoCMA
	salt  uint64 // random per claim; mixed into record stamps
	_     [3]uint64
	// line 1: receiver: consumed position of the forward ring
	fwdHead uint64
	_       [7]uint64
	// line 2: sender: consumed position of the ack ring
	ackHead uint64
	_       [7]uint64
	// line 3: receiver: bulk (fallback) request
	bulkReq    uint64
	bulkCookie uint64
	bulkWant   uint64
	_          [5]uint64
	// line 4: sender: bulk fill
	bulkFill uint64
	bulkLen  [2]uint64
	_        [5]uint64
	// line 5: receiver: bulk drain
	bulkDrain uint64
	_         [7]uint64
	// lines 6-7: sender's address blob (for SourceAddr)
	addrLen uint64
	addr    [maxAddrArea]byte
}

// recHdr (generated, cabi_gen.go, from struct lnx_rec in
// capi/include/lnx_capi.h, because lnx's C fast path writes records too)
// is the header of a forward-ring record. stamp is written last (with an
// atomic store) and equals stampOf(pos, salt) where pos is the record's
// absolute position in the ring and salt is the channel session's salt.
// The constants C repeats (recHdrSize, lineBytes, recEager, epOpen) are
// checked against it by cabi_gen_test.go.

// ackEnt (generated, cabi_gen.go, from struct lnx_ack, because lnx's C
// layer writes acks too) is one entry of the reverse (ack) ring; stamp =
// seq+1.

var (
	_ [hdrBytes - unsafe.Sizeof(regionHdr{})]byte
	_ [unsafe.Sizeof(chanCtl{}) - ctlBytes]byte
	_ [ctlBytes - unsafe.Sizeof(chanCtl{})]byte
	_ [unsafe.Sizeof(recHdr{}) - recHdrSize]byte
	_ [recHdrSize - unsafe.Sizeof(recHdr{})]byte
	_ [unsafe.Sizeof(ackEnt{}) - ackBytes]byte
)

// geometry is the region layout derived from four parameters.
type geometry struct {
	nrings     uint64
	ringBytes  uint64
	ackEntries uint64
	bulkBytes  uint64
	eagerMax   uint64

	ctlOff     uint64 // first chanCtl
	dataOff    uint64 // first per-channel data block
	fwdOff     uint64 // forward ring, relative to data block
	bulkOff    uint64 // bulk window, relative to data block
	dataStride uint64
	total      uint64
}

// stampOf is the stamp of the record at absolute position pos (a multiple of
// 64). It is odd, so never zero, and differs for every position and session:
// bytes left in a slot by an earlier lap or session (including stale
// payload) match the expected stamp only with probability 2^-64, so no
// "clear the next slot" store is needed.
func stampOf(pos, salt uint64) uint64 { return (pos ^ salt) | 1 }

func alignUp(v, a uint64) uint64 { return (v + a - 1) &^ (a - 1) }

func isPow2(v uint64) bool { return v != 0 && v&(v-1) == 0 }

// maxEagerFor returns the largest eager payload a ring of ringBytes can carry
// while guaranteeing progress: a record plus the worst-case pad plus the
// cleared next slot always fit in an empty ring.
func maxEagerFor(ringBytes uint64) uint64 {
	return ((ringBytes-lineBytes)/2)&^(lineBytes-1) - recHdrSize
}

// makeGeometry validates the parameters and computes the layout.
func makeGeometry(nrings, ringBytes, acks, bulk, eagerMax uint64) (geometry, bool) {
	var g geometry
	if nrings < 1 || nrings > maxRings ||
		!isPow2(ringBytes) || ringBytes < minRingBytes || ringBytes > maxRingBytes ||
		!isPow2(acks) || acks < minAckEntries || acks > maxAckEntries ||
		bulk < minBulkBytes || bulk > maxBulkBytes || bulk%pageBytes != 0 ||
		eagerMax > maxEagerFor(ringBytes) {
		return g, false
	}
	g = geometry{nrings: nrings, ringBytes: ringBytes, ackEntries: acks, bulkBytes: bulk, eagerMax: eagerMax}
	g.ctlOff = hdrBytes
	g.dataOff = alignUp(g.ctlOff+nrings*ctlBytes, pageBytes)
	g.fwdOff = alignUp(acks*ackBytes, pageBytes)
	g.bulkOff = g.fwdOff + ringBytes
	g.dataStride = alignUp(g.bulkOff+bulk, pageBytes)
	g.total = g.dataOff + nrings*g.dataStride
	if g.total > maxRegion {
		return geometry{}, false
	}
	return g, true
}

// channel pointers within a region mapped at base.
func (g *geometry) ctl(base unsafe.Pointer, i int) *chanCtl {
	return (*chanCtl)(unsafe.Add(base, g.ctlOff+uint64(i)*ctlBytes))
}

func (g *geometry) ackRing(base unsafe.Pointer, i int) unsafe.Pointer {
	return unsafe.Add(base, g.dataOff+uint64(i)*g.dataStride)
}

func (g *geometry) fwdRing(base unsafe.Pointer, i int) unsafe.Pointer {
	return unsafe.Add(base, g.dataOff+uint64(i)*g.dataStride+g.fwdOff)
}

func (g *geometry) bulk(base unsafe.Pointer, i int) unsafe.Pointer {
	return unsafe.Add(base, g.dataOff+uint64(i)*g.dataStride+g.bulkOff)
}
