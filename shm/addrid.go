// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only

package shm

// AddrID returns the endpoint id an address blob names (the Src that
// arrivals from that endpoint carry), validating the blob as Connect does.
func AddrID(addr []byte) (uint64, error) {
	a, err := parseAddr(addr)
	if err != nil {
		return 0, err
	}
	return a.id, nil
}
