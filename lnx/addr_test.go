package lnx

import (
	"bytes"
	"testing"
)

func TestAddrRoundTrip(t *testing.T) {
	a := Addr{Node: 0x334455667788, Link: 0xef01, Cores: []CoreAddr{
		{Kind: coreShm, Raw: []byte("lnx-123-abcdef")},
		{Kind: coreOFI, Raw: bytes.Repeat([]byte{7}, 16)},
	}}
	b, err := a.Encode()
	if err != nil {
		t.Fatal(err)
	}
	if len(b) != AddrLen {
		t.Fatalf("encoded %d bytes, want %d", len(b), AddrLen)
	}
	got, err := DecodeAddr(b)
	if err != nil {
		t.Fatal(err)
	}
	if got.Node != a.Node || got.Link != a.Link || len(got.Cores) != 2 ||
		!bytes.Equal(got.Cores[0].Raw, a.Cores[0].Raw) || got.Cores[1].Kind != coreOFI ||
		!bytes.Equal(got.Cores[1].Raw, a.Cores[1].Raw) {
		t.Fatalf("decoded %+v, want %+v", got, a)
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
	big := Addr{Cores: []CoreAddr{{Kind: coreOFI, Raw: make([]byte, 30)}, {Kind: coreOFI, Raw: make([]byte, 30)}}}
	if _, err := (&Addr{Cores: []CoreAddr{{Kind: coreShm, Raw: make([]byte, 15)}, {Kind: coreOFI, Raw: make([]byte, 32)}}}).Encode(); err != nil {
		t.Errorf("shm + IPv4 tcp;ofi_rxm address does not fit: %v", err)
	}
	if _, err := big.Encode(); err == nil {
		t.Error("Encode accepted cores larger than the blob")
	}
}

func FuzzDecodeAddr(f *testing.F) {
	good, _ := (&Addr{Node: 1, Cores: []CoreAddr{{Kind: coreShm, Raw: []byte("lnx-1-2")}, {Kind: coreOFI, Raw: []byte{1, 2, 3}}}}).Encode()
	f.Add(good)
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
