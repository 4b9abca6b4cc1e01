// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only

package lnx

import (
	"encoding/hex"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/lnx-go/lnx-go/internal/fi"
	"github.com/lnx-go/lnx-go/lnx/logging"
	"github.com/lnx-go/lnx-go/peers/ofi"
)

// AVAttr is the part of fi_av_attr lnx uses.
type AVAttr struct {
	Type  int
	Count uint64
}

// AV is an lnx address vector. FI_AV_MAP and FI_AV_TABLE both hand out
// table indexes as fi_addr_t (MAP lets the provider choose the value).
type AV struct {
	Domain *Domain
	Type   int

	mu      sync.RWMutex
	entries []*avEntry        // index = fi_addr; nil = removed
	byShm   map[uint64]uint64 // shm endpoint id -> fi_addr
	byNet   map[uint64]uint64 // network transport id -> fi_addr
	users   []*Endpoint       // the bound endpoints: Close refuses while any; told of removals
	gen     atomic.Uint64     // bumped by every Insert and Remove
	// remote: whether an address of another node was ever inserted
	// (endpoints poll a network core that never saw one less often).
	remote atomic.Bool
}

type avEntry struct {
	addr *Addr
	raw  []byte
}

// OpenAV opens an address vector.
func (d *Domain) OpenAV(attr AVAttr) (*AV, error) {
	switch attr.Type {
	case fi.AV_UNSPEC:
		attr.Type = fi.AV_TABLE
	case fi.AV_MAP, fi.AV_TABLE:
	default:
		return nil, fi.Wrap(fi.EINVAL, "unknown AV type %d", attr.Type)
	}
	d.get()
	return &AV{Domain: d, Type: attr.Type, byShm: map[uint64]uint64{}, byNet: map[uint64]uint64{}}, nil
}

// Insert adds count addresses packed AddrLen bytes apart. Invalid ones get
// FI_ADDR_NOTAVAIL in out; errs, when not nil, gets each address's outcome
// as FI_SYNC_ERR reports it: 0, or the positive fabric error code. The
// return is the number inserted.
func (av *AV) Insert(blob []byte, count int, out []uint64, errs []int32) int {
	n := av.insert(blob, count, out, errs)
	if n == 0 {
		return 0
	}
	// The bound endpoints may hold messages of the senders just inserted
	// (anon.go): outside av.mu, as Remove tells them of removals.
	av.mu.RLock()
	users := append([]*Endpoint(nil), av.users...)
	av.mu.RUnlock()
	for _, e := range users {
		e.lock()
		e.sendersKnown()
		e.unlock()
	}
	return n
}

func (av *AV) insert(blob []byte, count int, out []uint64, errs []int32) int {
	av.mu.Lock()
	defer av.mu.Unlock()
	defer av.gen.Add(1)
	n := 0
	for i := 0; i < count; i++ {
		raw := blob[i*AddrLen : (i+1)*AddrLen]
		a, err := DecodeAddr(raw)
		if err == nil && a.Link != linkHash(av.Domain.Link.Name()) {
			err = fi.Wrap(fi.EINVAL, "peer address is for another link configuration")
		}
		if err != nil {
			logging.Warnf(logging.AV, "fi_av_insert: address %d rejected: %v", i, err)
			if out != nil {
				out[i] = fi.ADDR_NOTAVAIL
			}
			if errs != nil {
				errs[i] = int32(-fi.Code(err))
			}
			continue
		}
		idx := uint64(len(av.entries))
		av.entries = append(av.entries, &avEntry{addr: a, raw: append([]byte(nil), raw...)})
		if id, ok := shmIDOf(a); ok {
			av.byShm[id] = idx
		}
		for _, id := range netIDsOf(a) {
			av.byNet[id] = idx
		}
		if a.Node != NodeID(av.Domain.cfg) {
			av.remote.Store(true)
		}
		if out != nil {
			out[i] = idx
		}
		if errs != nil {
			errs[i] = 0
		}
		n++
	}
	return n
}

// Remove invalidates fi_addrs.
func (av *AV) Remove(addrs []uint64) error {
	users, err := av.remove(addrs)
	if err != nil {
		return err // nothing was removed
	}
	// Each endpoint forgets how it reached the removed fi_addrs, and takes
	// back what it lent C of a sender's fi_addr (arm.go): outside av.mu
	// (endpoints take av.mu under their own lock).
	for _, e := range users {
		e.lock()
		e.forgetAddrs(addrs)
		for _, c := range e.cores {
			c.release()
		}
		e.unlock()
	}
	return nil
}

func (av *AV) remove(addrs []uint64) ([]*Endpoint, error) {
	av.mu.Lock()
	defer av.mu.Unlock()
	defer av.gen.Add(1)
	users := append([]*Endpoint(nil), av.users...)
	for _, a := range addrs {
		if a >= uint64(len(av.entries)) || av.entries[a] == nil {
			return users, fi.Wrap(fi.EINVAL, "fi_av_remove: %d is not in the AV", a)
		}
	}
	for _, a := range addrs {
		if av.entries[a] == nil {
			// Listed twice in this call: it is gone already. libfabric's
			// util AVs warn about a failed removal and go on.
			logging.Warnf(logging.AV, "fi_av_remove: %d listed more than once", a)
			continue
		}
		if id, ok := shmIDOf(av.entries[a].addr); ok {
			delete(av.byShm, id)
		}
		for _, id := range netIDsOf(av.entries[a].addr) {
			delete(av.byNet, id)
		}
		av.entries[a] = nil
	}
	return users, nil
}

// Lookup returns the address stored at fi_addr.
func (av *AV) Lookup(a uint64) ([]byte, error) {
	e := av.entry(a)
	if e == nil {
		return nil, fi.Wrap(fi.ENOENT, "fi_av_lookup: %d is not in the AV", a)
	}
	return e.raw, nil
}

func (av *AV) entry(a uint64) *avEntry {
	av.mu.RLock()
	defer av.mu.RUnlock()
	if a >= uint64(len(av.entries)) {
		return nil
	}
	return av.entries[a]
}

// byShmID maps a shm sender id to its fi_addr.
func (av *AV) byShmID(id uint64) uint64 {
	av.mu.RLock()
	defer av.mu.RUnlock()
	if a, ok := av.byShm[id]; ok {
		return a
	}
	return fi.ADDR_NOTAVAIL
}

// byNetID maps a network transport id to its fi_addr.
func (av *AV) byNetID(id uint64) uint64 {
	av.mu.RLock()
	defer av.mu.RUnlock()
	if a, ok := av.byNet[id]; ok {
		return a
	}
	return fi.ADDR_NOTAVAIL
}

// Straddr renders an lnx address for people: node, then each core.
func Straddr(raw []byte) string {
	a, err := DecodeAddr(raw)
	if err != nil {
		return "lnx://invalid"
	}
	s := fmt.Sprintf("lnx://%016x/%08x", a.Node, a.Link)
	for _, c := range a.Cores {
		if c.Kind == coreShm {
			s += ";shm=" + hex.EncodeToString(c.Raw)
		} else {
			s += ";net=" + ofi.DescribeAddr(c.Raw)
		}
	}
	return s
}

// Close closes the AV; endpoints bound to it must be closed first.
func (av *AV) Close() error {
	av.mu.Lock()
	defer av.mu.Unlock()
	if len(av.users) > 0 {
		return fi.Wrap(fi.EBUSY, "AV still bound to %d endpoint(s)", len(av.users))
	}
	av.Domain.put()
	return nil
}
