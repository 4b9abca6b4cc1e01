// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only

package lnx

import (
	"bytes"
	"encoding/binary"
	"testing"
)

// ofiBlob builds a network core's address blob (peers/ofi's layout:
// version, window, name length, EagerMax, id, name).
func ofiBlob(id uint64, name []byte) []byte {
	b := make([]byte, 16+len(name))
	b[0], b[1] = 1, 64
	binary.LittleEndian.PutUint16(b[2:], uint16(len(name)))
	binary.LittleEndian.PutUint32(b[4:], 16320)
	binary.LittleEndian.PutUint64(b[8:], id)
	copy(b[16:], name)
	return b
}

// inet and inet6 are sockaddr_in and sockaddr_in6 as Linux lays them out.
func inet(port uint16, ip [4]byte) []byte {
	b := make([]byte, 16)
	binary.LittleEndian.PutUint16(b, 2)
	binary.BigEndian.PutUint16(b[2:], port)
	copy(b[4:], ip[:])
	return b
}

func inet6(port uint16, ip [16]byte, scope uint32) []byte {
	b := make([]byte, 28)
	binary.LittleEndian.PutUint16(b, 10)
	binary.BigEndian.PutUint16(b[2:], port)
	copy(b[8:], ip[:])
	binary.LittleEndian.PutUint32(b[24:], scope)
	return b
}

func TestAddrRoundTrip(t *testing.T) {
	shmRaw := []byte("LS\x02pid_id_bytes")
	v6 := [16]byte{0xfd, 0, 15: 2}
	cases := map[string][]CoreAddr{
		"shm + IPv4": {{Kind: coreShm, Raw: shmRaw}, {Kind: coreOFI, Raw: ofiBlob(0x11223344556677, inet(4242, [4]byte{127, 0, 0, 1}))}},
		"shm + two IPv4 rails": {{Kind: coreShm, Raw: shmRaw},
			{Kind: coreOFI, Raw: ofiBlob(1, inet(1, [4]byte{10, 0, 0, 1}))},
			{Kind: coreOFI, Raw: ofiBlob(2, inet(2, [4]byte{10, 0, 1, 1}))}},
		"shm + IPv6":   {{Kind: coreShm, Raw: shmRaw}, {Kind: coreOFI, Raw: ofiBlob(3, inet6(5555, v6, 7))}},
		"raw name":     {{Kind: coreOFI, Raw: ofiBlob(4, bytes.Repeat([]byte{7}, 20))}},
		"three IPv4s":  {{Kind: coreOFI, Raw: ofiBlob(5, inet(1, [4]byte{1}))}, {Kind: coreOFI, Raw: ofiBlob(6, inet(2, [4]byte{2}))}, {Kind: coreOFI, Raw: ofiBlob(7, inet(3, [4]byte{3}))}},
		"shm only":     {{Kind: coreShm, Raw: shmRaw}},
		"odd sockaddr": {{Kind: coreOFI, Raw: ofiBlob(8, append(inet(9, [4]byte{9})[:15], 1))}}, // padding not zero: raw
	}
	for name, cores := range cases {
		a := Addr{Node: 0x334455667788, Link: 0xef01, Cores: cores}
		b, err := a.Encode()
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if len(b) != AddrLen {
			t.Fatalf("%s: encoded %d bytes, want %d", name, len(b), AddrLen)
		}
		got, err := DecodeAddr(b)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if got.Node != a.Node || got.Link != a.Link || len(got.Cores) != len(cores) {
			t.Fatalf("%s: decoded %+v, want %+v", name, got, a)
		}
		for i, c := range cores {
			if got.Cores[i].Kind != c.Kind || !bytes.Equal(got.Cores[i].Raw, c.Raw) {
				t.Errorf("%s: core %d decoded %x, want %x", name, i, got.Cores[i].Raw, c.Raw)
			}
		}
	}
}

func TestAddrRejects(t *testing.T) {
	good, _ := (&Addr{Node: 1, Cores: []CoreAddr{{Kind: coreShm, Raw: []byte("x")}}}).Encode()
	mut := func(f func(b []byte)) []byte {
		b := append([]byte(nil), good...)
		f(b)
		return b
	}
	cases := map[string][]byte{
		"short":          good[:AddrLen-1],
		"bad magic":      mut(func(b []byte) { b[0] = 'X' }),
		"bad version":    mut(func(b []byte) { b[1] = 9<<4 | 1 }),
		"too many cores": mut(func(b []byte) { b[1] = addrVersion<<4 | (maxAddrCores + 1) }),
		"unknown kind":   mut(func(b []byte) { b[addrHdrLen] = 9 }),
		"overrun":        mut(func(b []byte) { b[addrHdrLen+1] = 255; b[1] = addrVersion<<4 | 2 }),
		"truncated core": mut(func(b []byte) { b[1] = addrVersion<<4 | maxAddrCores }),
	}
	for name, b := range cases {
		if _, err := DecodeAddr(b); err == nil {
			t.Errorf("%s: DecodeAddr accepted it", name)
		}
	}
	v6 := inet6(1, [16]byte{1}, 0)
	big := Addr{Cores: []CoreAddr{{Kind: coreShm, Raw: make([]byte, 15)}, {Kind: coreOFI, Raw: ofiBlob(1, v6)}, {Kind: coreOFI, Raw: ofiBlob(2, v6)}}}
	if _, err := big.Encode(); err == nil {
		t.Error("Encode accepted shm and two IPv6 rails in 64 bytes")
	}
	bad := Addr{Cores: []CoreAddr{{Kind: coreOFI, Raw: ofiBlob(1<<60, v6)}}}
	if _, err := bad.Encode(); err == nil {
		t.Error("Encode accepted a network id of more than 56 bits")
	}
}

// TestAddrSide: the transport beside a peer-API core (coreSide) is
// carried in the few bytes its core name differs by, beside lnx's shm
// and the peer core's IPv4 name or libfabric shm name, and decodes to
// its blob; a side address needs its peer core's before it.
func TestAddrSide(t *testing.T) {
	for _, tc := range []struct {
		name, peer, side []byte
		shm              bool // lnx's shm too (the link shm+tcp;ofi_rxm)
	}{
		{[]byte("tcp"), inet(40000, [4]byte{127, 0, 0, 1}), inet(40001, [4]byte{127, 0, 0, 1}), true},
		{[]byte("fi_shm"), []byte("fi_shm://4194304:0:9\x00"), []byte("fi_shm://4194304:0:10\x00"), false},
	} {
		a := Addr{Node: 3, Link: 4}
		if tc.shm {
			a.Cores = append(a.Cores, CoreAddr{Kind: coreShm, Raw: make([]byte, 15)})
		}
		a.Cores = append(a.Cores, CoreAddr{Kind: corePeer, Raw: ofiBlob(77, tc.peer)}, CoreAddr{Kind: coreSide, Raw: ofiBlob(77, tc.side)})
		b, err := a.Encode()
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		d, err := DecodeAddr(b)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		side, ok := sideAddrOf(d)
		n := len(a.Cores)
		if !ok || !bytes.Equal(side, a.Cores[n-1].Raw) {
			t.Fatalf("%s: side %x, want %x", tc.name, side, a.Cores[n-1].Raw)
		}
		if p := peerAddrsOf(d); len(p) != 1 || !bytes.Equal(p[0], a.Cores[n-2].Raw) {
			t.Fatalf("%s: peer core %x", tc.name, p)
		}
	}
	alone := Addr{Cores: []CoreAddr{{Kind: coreSide, Raw: ofiBlob(77, inet(1, [4]byte{1}))}}}
	if _, err := alone.Encode(); err == nil {
		t.Error("Encode accepted a side address with no peer-API core before it")
	}
	other := Addr{Cores: []CoreAddr{{Kind: corePeer, Raw: ofiBlob(77, inet(1, [4]byte{1}))}, {Kind: coreSide, Raw: ofiBlob(78, inet(2, [4]byte{1}))}}}
	if _, err := other.Encode(); err == nil {
		t.Error("Encode accepted a side address whose id is not its peer core's")
	}
}

func FuzzDecodeAddr(f *testing.F) {
	good, _ := (&Addr{Node: 1, Cores: []CoreAddr{{Kind: coreShm, Raw: []byte("lnx-1-2")}, {Kind: coreOFI, Raw: ofiBlob(9, inet(1, [4]byte{127, 0, 0, 1}))}}}).Encode()
	f.Add(good)
	v6, _ := (&Addr{Node: 1, Cores: []CoreAddr{{Kind: coreOFI, Raw: ofiBlob(9, inet6(1, [16]byte{15: 1}, 0))}}}).Encode()
	f.Add(v6)
	side, _ := (&Addr{Node: 1, Cores: []CoreAddr{{Kind: corePeer, Raw: ofiBlob(9, inet(1, [4]byte{127, 0, 0, 1}))}, {Kind: coreSide, Raw: ofiBlob(9, inet(2, [4]byte{127, 0, 0, 1}))}}}).Encode()
	f.Add(side)
	f.Add(make([]byte, AddrLen))
	f.Add([]byte("L\x11"))
	f.Fuzz(func(t *testing.T, b []byte) {
		a, err := DecodeAddr(b)
		if err != nil {
			return
		}
		again, err := a.Encode()
		if err != nil {
			t.Fatalf("decoded address does not re-encode: %v", err)
		}
		b2, err := DecodeAddr(again)
		if err != nil || b2.Node != a.Node || len(b2.Cores) != len(a.Cores) {
			t.Fatalf("re-decode mismatch: %+v vs %+v (%v)", b2, a, err)
		}
	})
}
