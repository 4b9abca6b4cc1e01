// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only

package ofi

import (
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"net"
)

// Naming a transport by host and port (fi_getinfo's node and service).
//
// A transport's address blob carries a random id that arrivals from it
// carry as their source. A peer that knows only a host and port cannot
// know that id, so a transport bound to an address on purpose
// (Config.SrcName, from FI_SOURCE with a service) takes its id from that
// address instead (NameID), and NamedAddr builds, from a host and port
// alone, the blob that such a transport has.

// SockaddrName returns a struct sockaddr_in (ip an IPv4 address) or
// sockaddr_in6 for ip and port, as the tcp core's fi_getname gives it.
func SockaddrName(ip net.IP, port int) []byte {
	if v4 := ip.To4(); v4 != nil {
		b := make([]byte, inetLen)
		le.PutUint16(b, afInet)
		binary.BigEndian.PutUint16(b[2:], uint16(port))
		copy(b[4:8], v4)
		return b
	}
	b := make([]byte, inet6Len)
	le.PutUint16(b, afInet6)
	binary.BigEndian.PutUint16(b[2:], uint16(port))
	copy(b[8:24], ip.To16())
	return b
}

// SockaddrIP returns the IP and port of a sockaddr_in or sockaddr_in6
// name (ok false for any other name).
func SockaddrIP(name []byte) (ip net.IP, port int, ok bool) {
	switch {
	case len(name) >= inetLen && le.Uint16(name) == afInet:
		return net.IP(append([]byte(nil), name[4:8]...)), int(binary.BigEndian.Uint16(name[2:])), true
	case len(name) >= inet6Len && le.Uint16(name) == afInet6:
		return net.IP(append([]byte(nil), name[8:24]...)), int(binary.BigEndian.Uint16(name[2:])), true
	}
	return nil, 0, false
}

// NameID is the transport id of a transport bound to the core address
// name: a hash of its family, port and IP (flow label and scope left
// out), never 0, within idBits.
func NameID(name []byte) uint64 {
	h := fnv.New64a()
	switch {
	case len(name) == inetLen && le.Uint16(name) == afInet:
		h.Write(name[:8])
	case len(name) == inet6Len && le.Uint16(name) == afInet6:
		h.Write(name[:4])
		h.Write(name[8:24])
	default:
		h.Write(name)
	}
	id := h.Sum64() & (1<<idBits - 1)
	if id == 0 {
		id = 1
	}
	return id
}

// NamedAddr returns the address blob of a transport bound to name with
// cfg's eager limit and credit window (the peer's are not known; towards
// a peer the smaller eager limit applies, and lnx processes share their
// defaults).
func NamedAddr(name []byte, cfg Config) ([]byte, error) {
	cfg, err := cfg.normalize()
	if err != nil {
		return nil, err
	}
	if len(name) == 0 || len(name) > maxNameLen {
		return nil, fmt.Errorf("%w: core address of %d bytes", ErrBadAddr, len(name))
	}
	return encodeAddr(NameID(name), cfg.EagerMax, cfg.Credits, name), nil
}

// AddrName returns the core address inside a transport's address blob.
func AddrName(blob []byte) ([]byte, error) {
	a, err := parseAddr(blob)
	if err != nil {
		return nil, err
	}
	return append([]byte(nil), a.name...), nil
}
