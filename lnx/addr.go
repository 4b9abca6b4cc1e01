package lnx

import (
	"encoding/binary"
	"hash/fnv"
	"os"
	"strings"

	"github.com/lnx-go/lnx-go/lnx/fi"
)

// AddrLen is the fixed size of an lnx endpoint address. libfabric packs
// FI_FORMAT_UNSPEC addresses back to back in fi_av_insert, so every
// address of a provider must have the same length; and Open MPI gives
// fi_getname a buffer of FI_NAME_MAX (64) bytes.
const AddrLen = 64

// Layout: "LX", version, core count, node id (8), link hash (4), then per
// core a kind byte, a length byte and the core's address.
const (
	addrMagic    = "LX"
	addrVersion  = 1
	addrHdrLen   = 16
	maxAddrCores = 8

	coreShm byte = 1 // lnx's shm core
	coreOFI byte = 2 // a libfabric core, in link order
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
	copy(b, addrMagic)
	b[2] = addrVersion
	binary.LittleEndian.PutUint64(b[4:], a.Node)
	binary.LittleEndian.PutUint32(b[12:], a.Link)
	if len(a.Cores) > maxAddrCores {
		return nil, fi.Wrap(fi.EINVAL, "too many cores for an lnx address")
	}
	b[3] = byte(len(a.Cores))
	off := addrHdrLen
	for _, c := range a.Cores {
		if len(c.Raw) > 255 || off+2+len(c.Raw) > AddrLen {
			return nil, fi.Wrap(fi.EOVERFLOW, "core addresses do not fit in %d bytes", AddrLen)
		}
		b[off], b[off+1] = c.Kind, byte(len(c.Raw))
		copy(b[off+2:], c.Raw)
		off += 2 + len(c.Raw)
	}
	return b, nil
}

// DecodeAddr validates and unpacks an address blob from a peer.
func DecodeAddr(b []byte) (*Addr, error) {
	if len(b) < AddrLen {
		return nil, fi.Wrap(fi.EINVAL, "lnx address is %d bytes, want %d", len(b), AddrLen)
	}
	if string(b[:2]) != addrMagic {
		return nil, fi.Wrap(fi.EINVAL, "not an lnx address (bad magic)")
	}
	if b[2] != addrVersion {
		return nil, fi.Wrap(fi.EINVAL, "lnx address version %d not supported", b[2])
	}
	a := &Addr{Node: binary.LittleEndian.Uint64(b[4:]), Link: binary.LittleEndian.Uint32(b[12:])}
	n := int(b[3])
	if n > maxAddrCores {
		return nil, fi.Wrap(fi.EINVAL, "lnx address claims %d cores", n)
	}
	off := addrHdrLen
	for i := 0; i < n; i++ {
		if off+2 > AddrLen {
			return nil, fi.Wrap(fi.EINVAL, "lnx address truncated at core %d", i)
		}
		kind, l := b[off], int(b[off+1])
		if kind != coreShm && kind != coreOFI {
			return nil, fi.Wrap(fi.EINVAL, "lnx address core %d has unknown kind %d", i, kind)
		}
		if off+2+l > AddrLen {
			return nil, fi.Wrap(fi.EINVAL, "lnx address core %d overruns the blob", i)
		}
		a.Cores = append(a.Cores, CoreAddr{Kind: kind, Raw: append([]byte(nil), b[off+2:off+2+l]...)})
		off += 2 + l
	}
	return a, nil
}

// linkHash identifies a link configuration in addresses.
func linkHash(name string) uint32 {
	h := fnv.New32a()
	h.Write([]byte(name))
	return h.Sum32()
}

// NodeID is this node's identity: FI_LNX_NODE_ID if set (tests and
// containers), else hostname plus kernel boot id.
func NodeID() uint64 {
	id := strings.TrimSpace(Getenv(EnvNodeID))
	if id == "" {
		host, _ := os.Hostname()
		boot, _ := os.ReadFile("/proc/sys/kernel/random/boot_id")
		id = host + "/" + strings.TrimSpace(string(boot))
	}
	h := fnv.New64a()
	h.Write([]byte(id))
	return h.Sum64()
}
