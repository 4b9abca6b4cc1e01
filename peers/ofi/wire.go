// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only

package ofi

import (
	"encoding/binary"
	"fmt"
	"net/netip"
)

// Wire format (little endian). Every control message starts with
//
//	[0]     version (wireVersion)
//	[1]     kind
//	[2:4]   credits returned to the receiver of this message (flow control)
//	[4:8]   eager/RTS: the caller's flags; CTS: status
//	[8:16]  sender's transport id
//
// eager: [16:20] seq, [20:24] reserved, [24:32] tag, [32:40] cq data, then
// the payload (its length is the received length minus 40).
// RTS:   as eager up to 40, then [40:48] size, [48:56] cookie, then the
// sender's address blob (so that the receiver can answer).
// RTS-read: as RTS up to 56, then [56:64] the remote address of the data
// and [64:72] the key of its registration, then the address blob: the
// receiver reads the data itself and answers with a CTS "read done".
// split: as RTS up to 56, then [56:64] the tag of the tagged core message
// that carries the data, then the address blob.
// CTS:   [16:24] cookie, [24:32] rendezvous tag, [32:40] granted length.
// PING, BYE, CREDIT: the 16 common bytes only.
// HELLO: the 16 common bytes, then the sender's address blob.
const (
	wireVersion = 1

	kindEager   = 1
	kindRTS     = 2
	kindCTS     = 3
	kindPing    = 4
	kindBye     = 5
	kindCredit  = 6 // returns credits ([2:4]) and carries nothing else
	kindHello   = 7 // introduces the sender, so that credits can reach it
	kindRTSRead = 8 // RTS whose data the receiver reads (RMA)
	kindSplit   = 9 // RTS whose data follows as a tagged core message

	hdrCommon  = 16
	hdrEager   = 40
	hdrRTS     = 56
	hdrRTSRead = 72
	hdrSplit   = 64
	hdrCTS     = 40

	ctsGo      = 0 // send the first len bytes (len may be 0)
	ctsDiscard = 1 // the receiver dropped the message; complete successfully
	ctsReject  = 2 // the receiver could not take it; complete with ErrRemote
	ctsRead    = 3 // the receiver read the data (RTS-read); complete
)

// Tagged eager messages (tp_tagged.go) carry no wire header: the core's
// tag and CQ data hold it. Tag bits 63-62 are 11 (rendezvous data tags
// use 10 and split data tags 01), bits 61-40 the caller's CQ data (22
// bits), bits 39-32 the caller's flags (8 bits), bits 31-0 the sequence
// number; the CQ data is the caller's tag. The sender is the peer whose
// directed receive took the message.
const (
	teClass  = uint64(3) << 62
	teIgnore = uint64(1)<<62 - 1
	teFlagsN = 8
	teDataN  = 22
)

// teFits says whether h fits the tag of a tagged eager message.
func teFits(h Hdr) bool { return h.Flags < 1<<teFlagsN && h.Data < 1<<teDataN }

func teTag(h Hdr, seq uint32) uint64 {
	return teClass | h.Data<<40 | uint64(h.Flags)<<32 | uint64(seq)
}

// teHdr reads a tagged eager message's header from its tag and CQ data.
func teHdr(tag, data uint64) (h Hdr, seq uint32, ok bool) {
	if tag&^teIgnore != teClass {
		return Hdr{}, 0, false
	}
	return Hdr{Tag: data, Flags: uint32(tag>>32) & (1<<teFlagsN - 1), Data: tag >> 40 & (1<<teDataN - 1)}, uint32(tag), true
}

var le = binary.LittleEndian

func putCommon(b []byte, kind uint8, word uint32, src uint64) {
	b[0] = wireVersion
	b[1] = kind
	le.PutUint16(b[2:], 0)
	le.PutUint32(b[4:], word)
	le.PutUint64(b[8:], src)
}

func putEager(b []byte, kind uint8, h Hdr, src uint64, seq uint32) {
	putCommon(b, kind, h.Flags, src)
	le.PutUint32(b[16:], seq)
	le.PutUint32(b[20:], 0)
	le.PutUint64(b[24:], h.Tag)
	le.PutUint64(b[32:], h.Data)
}

func putCTS(b []byte, src uint64, status uint32, cookie, rtag, n uint64) {
	putCommon(b, kindCTS, status, src)
	le.PutUint64(b[16:], cookie)
	le.PutUint64(b[24:], rtag)
	le.PutUint64(b[32:], n)
}

// Address blob: [0] addrVersion, [1] the endpoint's credit window (the
// eager and RTS messages a sender may have unreturned; 0: no flow
// control), [2:4] core name length,
// [4:8] EagerMax of the endpoint (the most payload its bounce buffers
// take), [8:16] transport id, [16:] core endpoint name (fi_getname).
const (
	addrVersion = 1
	addrHdr     = 16
	maxNameLen  = 256
	maxAddrLen  = addrHdr + maxNameLen
	// MaxEagerMax bounds Config.EagerMax.
	MaxEagerMax = 1 << 20
)

type addrInfo struct {
	id       uint64
	eagerMax uint32
	window   uint8
	name     []byte
}

func encodeAddr(id uint64, eagerMax, window int, name []byte) []byte {
	b := make([]byte, addrHdr+len(name))
	b[0] = addrVersion
	b[1] = uint8(window)
	le.PutUint16(b[2:], uint16(len(name)))
	le.PutUint32(b[4:], uint32(eagerMax))
	le.PutUint64(b[8:], id)
	copy(b[addrHdr:], name)
	return b
}

// parseAddr validates a blob; the name aliases b.
func parseAddr(b []byte) (addrInfo, error) {
	if len(b) < addrHdr+1 {
		return addrInfo{}, fmt.Errorf("%w: %d bytes", ErrBadAddr, len(b))
	}
	if b[0] != addrVersion {
		return addrInfo{}, fmt.Errorf("%w: version %d, want %d", ErrBadAddr, b[0], addrVersion)
	}
	n := int(le.Uint16(b[2:]))
	if n == 0 || n > maxNameLen || addrHdr+n != len(b) {
		return addrInfo{}, fmt.Errorf("%w: name length %d in a %d-byte blob", ErrBadAddr, n, len(b))
	}
	a := addrInfo{eagerMax: le.Uint32(b[4:]), id: le.Uint64(b[8:]), window: b[1], name: b[addrHdr:]}
	if a.id == 0 {
		return addrInfo{}, fmt.Errorf("%w: zero id", ErrBadAddr)
	}
	if a.eagerMax > MaxEagerMax {
		return addrInfo{}, fmt.Errorf("%w: eager limit %d", ErrBadAddr, a.eagerMax)
	}
	return a, nil
}

// AddrID returns the transport id an address blob names (the Src that
// arrivals from that transport carry), validating the blob as Connect does
// (except for the core address length, which only a Transport knows).
func AddrID(addr []byte) (uint64, error) {
	a, err := parseAddr(addr)
	if err != nil {
		return 0, err
	}
	return a.id, nil
}

// Packed address blobs. lnx carries every core's address in libfabric's
// FI_NAME_MAX (64) bytes, which the blob above does not fit twice, nor once
// with an IPv6 name. PackAddr therefore drops what is implied and what is
// zero: [0] name format, [1:8] id (ids have 56 bits), [8] EagerMax in
// units of 64 bytes (at most 255: a smaller limit is always safe), [9]
// credit window, then the core name:
//
//	packInet:  port, IPv4 address (6 bytes; sockaddr_in with zero padding)
//	packInet6: port, IPv6 address, scope id (22 bytes; sockaddr_in6 with
//	           zero flow info)
//	packRaw:   the name as is (any other core)
const (
	packInet  = 1
	packInet6 = 2
	packRaw   = 3

	packHdr  = 10
	idBits   = 56
	eagerQ   = 64
	afInet   = 2  // AF_INET on Linux
	afInet6  = 10 // AF_INET6 on Linux
	inetLen  = 16 // sizeof(struct sockaddr_in)
	inet6Len = 28 // sizeof(struct sockaddr_in6)
)

// PackAddr packs an address blob (Addr) for a space-constrained carrier;
// UnpackAddr restores it exactly, except that EagerMax is rounded down to
// a multiple of 64 bytes, at most 16320.
func PackAddr(blob []byte) ([]byte, error) {
	a, err := parseAddr(blob)
	if err != nil {
		return nil, err
	}
	if a.id>>idBits != 0 {
		return nil, fmt.Errorf("%w: id %016x has more than %d bits", ErrBadAddr, a.id, idBits)
	}
	p := make([]byte, packHdr, packHdr+len(a.name))
	var id [8]byte
	le.PutUint64(id[:], a.id)
	copy(p[1:8], id[:7])
	p[8] = uint8(min(a.eagerMax/eagerQ, 255))
	p[9] = a.window
	n := a.name
	switch {
	case len(n) == inetLen && le.Uint16(n) == afInet && allZero(n[8:16]):
		p[0] = packInet
		p = append(p, n[2:8]...)
	case len(n) == inet6Len && le.Uint16(n) == afInet6 && allZero(n[4:8]):
		p[0] = packInet6
		p = append(p, n[2:4]...)
		p = append(p, n[8:28]...)
	default:
		p[0] = packRaw
		p = append(p, n...)
	}
	return p, nil
}

// UnpackAddr restores a blob packed by PackAddr.
func UnpackAddr(p []byte) ([]byte, error) {
	if len(p) < packHdr+1 {
		return nil, fmt.Errorf("%w: packed address of %d bytes", ErrBadAddr, len(p))
	}
	var id [8]byte
	copy(id[:7], p[1:8])
	rest := p[packHdr:]
	var name []byte
	switch p[0] {
	case packInet:
		if len(rest) != 6 {
			return nil, fmt.Errorf("%w: packed IPv4 name of %d bytes", ErrBadAddr, len(rest))
		}
		name = make([]byte, inetLen)
		le.PutUint16(name, afInet)
		copy(name[2:8], rest)
	case packInet6:
		if len(rest) != 22 {
			return nil, fmt.Errorf("%w: packed IPv6 name of %d bytes", ErrBadAddr, len(rest))
		}
		name = make([]byte, inet6Len)
		le.PutUint16(name, afInet6)
		copy(name[2:4], rest[:2])
		copy(name[8:28], rest[2:])
	case packRaw:
		if len(rest) > maxNameLen {
			return nil, fmt.Errorf("%w: packed name of %d bytes", ErrBadAddr, len(rest))
		}
		name = rest
	default:
		return nil, fmt.Errorf("%w: packed name format %d", ErrBadAddr, p[0])
	}
	blob := encodeAddr(le.Uint64(id[:]), int(p[8])*eagerQ, int(p[9]), name)
	if _, err := parseAddr(blob); err != nil {
		return nil, err
	}
	return blob, nil
}

func allZero(b []byte) bool {
	for _, x := range b {
		if x != 0 {
			return false
		}
	}
	return true
}

// DescribeAddr renders an address blob for people (fi_av_straddr):
// "id@127.0.0.1:4242", "id@[::1]:4242", or the core name in hex.
func DescribeAddr(blob []byte) string {
	a, err := parseAddr(blob)
	if err != nil {
		return "invalid"
	}
	n := a.name
	var port uint16
	switch {
	case len(n) == inetLen && le.Uint16(n) == afInet:
		port = uint16(n[2])<<8 | uint16(n[3])
		return fmt.Sprintf("%014x@%s", a.id, netip.AddrPortFrom(netip.AddrFrom4([4]byte(n[4:8])), port))
	case len(n) == inet6Len && le.Uint16(n) == afInet6:
		port = uint16(n[2])<<8 | uint16(n[3])
		ip := netip.AddrFrom16([16]byte(n[8:24]))
		if scope := le.Uint32(n[24:]); scope != 0 {
			ip = ip.WithZone(fmt.Sprint(scope))
		}
		return fmt.Sprintf("%014x@%s", a.id, netip.AddrPortFrom(ip, port))
	}
	return fmt.Sprintf("%014x@%x", a.id, n)
}

// EncodeAddr makes an address blob for a core endpoint that the transport
// does not drive (a peer-API endpoint, peers/peerep): id and core name,
// no eager limit and no credit window. PackAddr, UnpackAddr, AddrID and
// AddrName take it like a transport's.
func EncodeAddr(id uint64, name []byte) []byte { return encodeAddr(id, 0, 0, name) }

// Side addresses. A transport opened beside a peer-API core endpoint of
// the same provider (lnx carries its one-sided operations and liveness
// probes over it) has the core's id (Config.ID), and its core name
// differs from the peer core's in a few bytes (a port, an endpoint
// index), so that lnx's 64-byte address can carry both: PackSide writes
// the side blob against the base blob as
//
//	[0] EagerMax in units of 64 bytes, [1] credit window, [2] length of
//	the name prefix the two share, [3] length of the suffix they share
//	(after that prefix), then the side name's bytes between them
//
// and UnpackSide restores it from the same base blob.
const sideHdr = 4

// PackSide packs side against base (both address blobs with one id).
func PackSide(base, side []byte) ([]byte, error) {
	b, err := parseAddr(base)
	if err != nil {
		return nil, err
	}
	s, err := parseAddr(side)
	if err != nil {
		return nil, err
	}
	if b.id != s.id {
		return nil, fmt.Errorf("%w: side id %016x differs from the base's %016x", ErrBadAddr, s.id, b.id)
	}
	pre := 0
	for pre < min(len(b.name), len(s.name), 255) && b.name[pre] == s.name[pre] {
		pre++
	}
	suf := 0
	for suf < min(len(b.name)-pre, len(s.name)-pre, 255) && b.name[len(b.name)-1-suf] == s.name[len(s.name)-1-suf] {
		suf++
	}
	p := []byte{uint8(min(s.eagerMax/eagerQ, 255)), s.window, uint8(pre), uint8(suf)}
	return append(p, s.name[pre:len(s.name)-suf]...), nil
}

// UnpackSide restores a blob PackSide packed against base.
func UnpackSide(base, p []byte) ([]byte, error) {
	b, err := parseAddr(base)
	if err != nil {
		return nil, err
	}
	if len(p) < sideHdr {
		return nil, fmt.Errorf("%w: packed side address of %d bytes", ErrBadAddr, len(p))
	}
	pre, suf := int(p[2]), int(p[3])
	if pre+suf > len(b.name) {
		return nil, fmt.Errorf("%w: side address shares %d+%d bytes of a %d-byte name", ErrBadAddr, pre, suf, len(b.name))
	}
	name := append(append(append([]byte(nil), b.name[:pre]...), p[sideHdr:]...), b.name[len(b.name)-suf:]...)
	if len(name) == 0 || len(name) > maxNameLen {
		return nil, fmt.Errorf("%w: side name of %d bytes", ErrBadAddr, len(name))
	}
	return encodeAddr(b.id, int(p[0])*eagerQ, int(p[1]), name), nil
}
