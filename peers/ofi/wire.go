package ofi

import (
	"encoding/binary"
	"fmt"
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
// CTS:   [16:24] cookie, [24:32] rendezvous tag, [32:40] granted length.
// PING, BYE, CREDIT: the 16 common bytes only.
// HELLO: the 16 common bytes, then the sender's address blob.
const (
	wireVersion = 1

	kindEager  = 1
	kindRTS    = 2
	kindCTS    = 3
	kindPing   = 4
	kindBye    = 5
	kindCredit = 6 // returns credits ([2:4]) and carries nothing else
	kindHello  = 7 // introduces the sender, so that credits can reach it

	hdrCommon = 16
	hdrEager  = 40
	hdrRTS    = 56
	hdrCTS    = 40

	ctsGo      = 0 // send the first len bytes (len may be 0)
	ctsDiscard = 1 // the receiver dropped the message; complete successfully
	ctsReject  = 2 // the receiver could not take it; complete with ErrRemote
)

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
