// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only

package lnx

import (
	"encoding/binary"
	"hash/fnv"
	"os"
	"strings"

	"github.com/lnx-go/lnx-go/internal/fi"
	"github.com/lnx-go/lnx-go/lnx/config"
	"github.com/lnx-go/lnx-go/peers/ofi"
)

// AddrLen is the fixed size of an lnx endpoint address. libfabric packs
// FI_FORMAT_UNSPEC addresses back to back in fi_av_insert, so every
// address of a provider must have the same length; and Open MPI gives
// fi_getname a buffer of FI_NAME_MAX (64) bytes.
const AddrLen = 64

// Layout: 'L', version<<4 | core count, node id (48 bits), link hash (16
// bits), then per core a kind byte, a length byte and the core's address;
// a network core's address is packed (ofi.PackAddr: 18 bytes for IPv4, 34
// for IPv6). The header is kept to 10 bytes so that 64 take shm plus two
// IPv4 rails (63 bytes), or shm plus one IPv6 rail (61).
const (
	addrMagic    = 'L'
	addrVersion  = 2
	addrHdrLen   = 10
	maxAddrCores = 8
	nodeMask     = 1<<48 - 1

	coreShm byte = 1 // lnx's shm core
	coreOFI byte = 2 // a libfabric core, in link order
	// corePeer is a libfabric core driven through the peer API
	// (core_peer.go): its blob is packed like coreOFI's (ofi.EncodeAddr),
	// and an endpoint on the transport adapter never connects to it, nor
	// one on the peer path to a coreOFI address (they carry different
	// wire formats).
	corePeer byte = 3
	// coreSide is the transport lnx opens beside a peer-API core
	// (ep.go, OpenEndpoint) for one-sided operations and liveness
	// probes: in memory a transport blob like coreOFI's, on the wire
	// packed against the corePeer address before it (ofi.PackSide:
	// same id, the few bytes of its core name that differ).
	coreSide byte = 4
)

// Addr is a decoded lnx address: where the endpoint lives and how each of
// its cores is reached.
type Addr struct {
	Node  uint64 // node identity: equal nodes talk over shm
	Link  uint32 // hash of the link name, to catch mismatched configs
	Cores []CoreAddr
}

// CoreAddr is one core's address inside an lnx address.
type CoreAddr struct {
	Kind byte
	Raw  []byte
}

// Encode packs a into AddrLen bytes.
func (a *Addr) Encode() ([]byte, error) {
	b := make([]byte, AddrLen)
	if len(a.Cores) > maxAddrCores {
		return nil, fi.Wrap(fi.EINVAL, "too many cores for an lnx address")
	}
	b[0] = addrMagic
	b[1] = addrVersion<<4 | byte(len(a.Cores))
	var node [8]byte
	binary.LittleEndian.PutUint64(node[:], a.Node&nodeMask)
	copy(b[2:8], node[:6])
	binary.LittleEndian.PutUint16(b[8:], uint16(a.Link))
	off := addrHdrLen
	var base []byte // the last corePeer blob, which a coreSide packs against
	for _, c := range a.Cores {
		raw := c.Raw
		switch c.Kind {
		case coreOFI, corePeer:
			p, err := ofi.PackAddr(raw)
			if err != nil {
				return nil, fi.Wrap(fi.EINVAL, "network core address: %v", err)
			}
			if c.Kind == corePeer {
				base = raw
			}
			raw = p
		case coreSide:
			if base == nil {
				return nil, fi.Wrap(fi.EINVAL, "side transport address without its peer-API core's")
			}
			p, err := ofi.PackSide(base, raw)
			if err != nil {
				return nil, fi.Wrap(fi.EINVAL, "side transport address: %v", err)
			}
			raw = p
		}
		if len(raw) > 255 || off+2+len(raw) > AddrLen {
			return nil, fi.Wrap(fi.EOVERFLOW, "core addresses do not fit in %d bytes (%d cores)", AddrLen, len(a.Cores))
		}
		b[off], b[off+1] = c.Kind, byte(len(raw))
		copy(b[off+2:], raw)
		off += 2 + len(raw)
	}
	return b, nil
}

// DecodeAddr validates and unpacks an address blob from a peer.
func DecodeAddr(b []byte) (*Addr, error) {
	if len(b) < AddrLen {
		return nil, fi.Wrap(fi.EINVAL, "lnx address is %d bytes, want %d", len(b), AddrLen)
	}
	if b[0] != addrMagic {
		return nil, fi.Wrap(fi.EINVAL, "not an lnx address (bad magic)")
	}
	if b[1]>>4 != addrVersion {
		return nil, fi.Wrap(fi.EINVAL, "lnx address version %d not supported", b[1]>>4)
	}
	var node [8]byte
	copy(node[:6], b[2:8])
	a := &Addr{Node: binary.LittleEndian.Uint64(node[:]), Link: uint32(binary.LittleEndian.Uint16(b[8:]))}
	n := int(b[1] & 0xf)
	if n > maxAddrCores {
		return nil, fi.Wrap(fi.EINVAL, "lnx address claims %d cores", n)
	}
	off := addrHdrLen
	var base []byte
	for i := 0; i < n; i++ {
		if off+2 > AddrLen {
			return nil, fi.Wrap(fi.EINVAL, "lnx address truncated at core %d", i)
		}
		kind, l := b[off], int(b[off+1])
		if kind != coreShm && kind != coreOFI && kind != corePeer && kind != coreSide {
			return nil, fi.Wrap(fi.EINVAL, "lnx address core %d has unknown kind %d", i, kind)
		}
		if off+2+l > AddrLen {
			return nil, fi.Wrap(fi.EINVAL, "lnx address core %d overruns the blob", i)
		}
		raw := append([]byte(nil), b[off+2:off+2+l]...)
		switch kind {
		case coreOFI, corePeer:
			blob, err := ofi.UnpackAddr(raw)
			if err != nil {
				return nil, fi.Wrap(fi.EINVAL, "lnx address core %d: %v", i, err)
			}
			raw = blob
			if kind == corePeer {
				base = blob
			}
		case coreSide:
			if base == nil {
				return nil, fi.Wrap(fi.EINVAL, "lnx address core %d: side transport before its peer-API core", i)
			}
			blob, err := ofi.UnpackSide(base, raw)
			if err != nil {
				return nil, fi.Wrap(fi.EINVAL, "lnx address core %d: %v", i, err)
			}
			raw = blob
		}
		a.Cores = append(a.Cores, CoreAddr{Kind: kind, Raw: raw})
		off += 2 + l
	}
	return a, nil
}

// linkHash identifies a link configuration in addresses (16 bits: it only
// has to catch a peer started with different FI_LNX_PROV_LINKS).
func linkHash(name string) uint32 {
	h := fnv.New32a()
	h.Write([]byte(name))
	return h.Sum32() & 0xffff
}

// NodeID is this node's identity: FI_LNX_NODE_ID if set (tests and
// containers), else hostname plus kernel boot id.
func NodeID(cfg *config.Config) uint64 {
	id := cfg.NodeID
	if id == "" {
		host, _ := os.Hostname()
		boot, _ := os.ReadFile("/proc/sys/kernel/random/boot_id")
		id = host + "/" + strings.TrimSpace(string(boot))
	}
	h := fnv.New64a()
	h.Write([]byte(id))
	return h.Sum64() & nodeMask // what the address carries
}
