package lnx

import "github.com/lnx-go/lnx-go/shm"

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
