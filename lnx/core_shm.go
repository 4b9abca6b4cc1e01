// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only

package lnx

import (
	"github.com/lnx-go/lnx-go/peers/ofi"
	"github.com/lnx-go/lnx-go/shm"
)

// shmAddrOf returns the shm core's address inside an lnx address.
func shmAddrOf(a *Addr) ([]byte, bool) {
	for _, c := range a.Cores {
		if c.Kind == coreShm {
			return c.Raw, true
		}
	}
	return nil, false
}

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
func netAddrsOf(a *Addr) [][]byte {
	var out [][]byte
	for _, c := range a.Cores {
		if c.Kind == coreOFI {
			out = append(out, c.Raw)
		}
	}
	return out
}

// netIDsOf returns the transport ids of a peer's network cores.
func netIDsOf(a *Addr) []uint64 {
	var ids []uint64
	for _, raw := range netAddrsOf(a) {
		if id, err := ofi.AddrID(raw); err == nil {
			ids = append(ids, id)
		}
	}
	return ids
}
