// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only

package ofi

import (
	"bytes"
	"errors"
	"testing"
)

// TestPackAddr: real transport addresses (IPv4 and, where the core offers
// it, IPv6) pack into the sizes lnx budgets for and unpack to the same
// blob; the packed peers then talk.
func TestPackAddr(t *testing.T) {
	for _, tc := range []struct {
		name   string
		format uint32
		packed int
	}{{"IPv4", AddrFormatInet, 16}, {"IPv6", AddrFormatInet6, 32}} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := testCfg
			cfg.AddrFormat = tc.format
			a, b := openT(t, cfg), openT(t, cfg)
			if got := len(a.name); (tc.format == AddrFormatInet6) != (got == inet6Len) {
				t.Skipf("the core gave a %d-byte name for %s", got, tc.name)
			}
			pa, err := PackAddr(a.Addr())
			if err != nil {
				t.Fatal(err)
			}
			if len(pa) != tc.packed {
				t.Errorf("packed %s address is %d bytes, want %d", tc.name, len(pa), tc.packed)
			}
			ua, err := UnpackAddr(pa)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(ua, a.Addr()) {
				t.Fatalf("unpacked %x, want %x", ua, a.Addr())
			}
			pb, _ := PackAddr(b.Addr())
			ub, err := UnpackAddr(pb)
			if err != nil {
				t.Fatal(err)
			}
			ab, err := a.Connect(ub)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := b.Connect(ua); err != nil {
				t.Fatal(err)
			}
			ra, rb := newRec(a), newRec(b)
			msg := []byte("over " + tc.name)
			send(t, ra, ab, Hdr{Tag: 6}, [][]byte{msg}, 1, rb)
			pump(t, "arrival", func() bool { return len(rb.arr) == 1 }, ra, rb)
			if g := rb.arr[0]; g.src != a.ID() || g.hdr.Tag != 6 || !bytes.Equal(g.data, msg) {
				t.Fatalf("got %+v", g)
			}
		})
	}
}

func TestPackAddrRejects(t *testing.T) {
	good, _ := PackAddr(encodeAddr(5, 16320, 64, make([]byte, 16)))
	for name, p := range map[string][]byte{
		"short":         good[:packHdr],
		"format":        append([]byte{9}, good[1:]...),
		"IPv4 length":   append(append([]byte{packInet}, good[1:]...), 0),
		"IPv6 length":   append([]byte{packInet6}, good[1:]...),
		"raw too long":  append([]byte{packRaw}, make([]byte, packHdr-1+maxNameLen+1)...),
		"zero id (raw)": append([]byte{packRaw}, make([]byte, packHdr-1+4)...),
	} {
		if _, err := UnpackAddr(p); !errors.Is(err, ErrBadAddr) {
			t.Errorf("%s: UnpackAddr gave %v", name, err)
		}
	}
	if _, err := PackAddr(encodeAddr(1<<56, 0, 0, []byte{1})); !errors.Is(err, ErrBadAddr) {
		t.Errorf("a 57-bit id packed: %v", err)
	}
}

func TestDescribeAddr(t *testing.T) {
	v4 := make([]byte, inetLen)
	v4[0], v4[2], v4[3] = afInet, 0x10, 0x92
	copy(v4[4:], []byte{127, 0, 0, 1})
	v6 := make([]byte, inet6Len)
	v6[0], v6[2], v6[3], v6[23] = afInet6, 0x10, 0x92, 1
	for blob, want := range map[string]string{
		string(encodeAddr(0xab, 0, 0, v4)):           "000000000000ab@127.0.0.1:4242",
		string(encodeAddr(0xab, 0, 0, v6)):           "000000000000ab@[::1]:4242",
		string(encodeAddr(0xab, 0, 0, []byte{1, 2})): "000000000000ab@0102",
		"junk": "invalid",
	} {
		if got := DescribeAddr([]byte(blob)); got != want {
			t.Errorf("DescribeAddr = %q, want %q", got, want)
		}
	}
}

// TestPackSide: a transport opened with another endpoint's id (Config.ID)
// packs against that endpoint's blob into a few bytes (the port of an
// IPv4 name, the index of a libfabric shm name), unpacks to its own blob,
// and a peer reaches it through the unpacked blob.
func TestPackSide(t *testing.T) {
	base := openT(t, testCfg)
	cfg := testCfg
	cfg.ID = base.ID()
	side, peer := openT(t, cfg), openT(t, testCfg)
	if side.ID() != base.ID() {
		t.Fatalf("side id %x, want the base's %x", side.ID(), base.ID())
	}
	p, err := PackSide(base.Addr(), side.Addr())
	if err != nil {
		t.Fatal(err)
	}
	if len(base.name) == inetLen && len(p) > sideHdr+2 {
		t.Errorf("side of an IPv4 name packs into %d bytes, want at most %d", len(p), sideHdr+2)
	}
	u, err := UnpackSide(base.Addr(), p)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := UnpackAddr(must(PackAddr(side.Addr())))
	if !bytes.Equal(u, want) {
		t.Fatalf("unpacked %x, want %x", u, want)
	}
	ps, err := peer.Connect(u)
	if err != nil {
		t.Fatal(err)
	}
	rp, rs := newRec(peer), newRec(side)
	send(t, rp, ps, Hdr{Tag: 9}, [][]byte{[]byte("side")}, 1, rs)
	pump(t, "arrival", func() bool { return len(rs.arr) == 1 }, rp, rs)
	if g := rs.arr[0]; g.hdr.Tag != 9 || string(g.data) != "side" {
		t.Fatalf("got %+v", g)
	}

	// Names that share nothing, and malformed input.
	a := encodeAddr(5, 4096, 8, []byte("fi_shm://12:0:3\x00"))
	b := encodeAddr(5, 4096, 8, []byte("fi_shm://12:0:14\x00"))
	if p, err := PackSide(a, b); err != nil || len(p) != sideHdr+2 {
		t.Fatalf("shm names: %x, %v", p, err)
	} else if u, err := UnpackSide(a, p); err != nil || !bytes.Equal(u, b) {
		t.Fatalf("shm names: unpacked %q, %v", u, err)
	}
	if _, err := PackSide(a, encodeAddr(6, 0, 0, []byte("x"))); !errors.Is(err, ErrBadAddr) {
		t.Errorf("ids differ: %v", err)
	}
	for _, bad := range [][]byte{nil, {0, 0, 200, 0}, {0, 0, 0, 200}} {
		if _, err := UnpackSide(a, bad); !errors.Is(err, ErrBadAddr) {
			t.Errorf("UnpackSide(%x): %v", bad, err)
		}
	}
}

func must(b []byte, err error) []byte {
	if err != nil {
		panic(err)
	}
	return b
}

// TestValidName: a core with a fixed address format takes only names as
// long as its own (fi_av_insert reads that many bytes); a string core
// (libfabric 1.17's shm, "<pid>:<n>:<n>") takes names of other lengths
// whose one NUL ends them, as when two ranks' pids differ in digits.
func TestValidName(t *testing.T) {
	fixed := &Transport{name: make([]byte, 16)}
	str := &Transport{name: []byte("999:0:0\x00"), strAddr: true}
	for _, tc := range []struct {
		t    *Transport
		name string
		ok   bool
	}{
		{fixed, string(make([]byte, 16)), true},
		{fixed, string(make([]byte, 28)), false},
		{str, "999:0:0\x00", true},
		{str, "1000:0:0\x00", true},
		{str, "9:0:0\x00", true},
		{str, "1000:0:0", false},         // the core would read past it
		{str, "10\x0000:0:0\x00", false}, // an embedded NUL: not one name
		{str, "\x00", false},
	} {
		err := tc.t.validName([]byte(tc.name))
		if (err == nil) != tc.ok {
			t.Errorf("validName(%q) with strAddr %v: %v, want ok %v", tc.name, tc.t.strAddr, err, tc.ok)
		}
		if err != nil && !errors.Is(err, ErrBadAddr) {
			t.Errorf("validName(%q): %v is not ErrBadAddr", tc.name, err)
		}
	}
}
