// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only

package ofi

import (
	"net"
	"testing"
)

func TestNamedAddr(t *testing.T) {
	for _, ip := range []string{"127.0.0.1", "::1"} {
		name := SockaddrName(net.ParseIP(ip), 4242)
		got, port, ok := SockaddrIP(name)
		if !ok || !got.Equal(net.ParseIP(ip)) || port != 4242 {
			t.Fatalf("%s: SockaddrIP = %v %d %v", ip, got, port, ok)
		}
		blob, err := NamedAddr(name, Config{})
		if err != nil {
			t.Fatal(err)
		}
		id, err := AddrID(blob)
		if err != nil || id != NameID(name) {
			t.Fatalf("%s: AddrID = %x, %v; want NameID %x", ip, id, err, NameID(name))
		}
		// It survives lnx's packing, as a network core's part of an
		// lnx address.
		p, err := PackAddr(blob)
		if err != nil {
			t.Fatal(err)
		}
		back, err := UnpackAddr(p)
		if err != nil || string(back) != string(blob) {
			t.Fatalf("%s: pack round trip: %v", ip, err)
		}
		n, err := AddrName(blob)
		if err != nil || string(n) != string(name) {
			t.Fatalf("%s: AddrName: %v", ip, err)
		}
	}
	// The id is the address's: another port or host, another id; the
	// IPv6 flow label and scope do not count.
	a := NameID(SockaddrName(net.ParseIP("127.0.0.1"), 4242))
	if a == NameID(SockaddrName(net.ParseIP("127.0.0.1"), 4243)) || a == NameID(SockaddrName(net.ParseIP("127.0.0.2"), 4242)) {
		t.Fatal("NameID ignores the port or the host")
	}
	n6 := SockaddrName(net.ParseIP("::1"), 7)
	n6b := append([]byte(nil), n6...)
	n6b[4], n6b[24] = 9, 3
	if NameID(n6) != NameID(n6b) {
		t.Fatal("NameID depends on the IPv6 flow label or scope")
	}
	if NameID(n6)>>idBits != 0 || NameID(n6) == 0 {
		t.Fatal("NameID out of range")
	}
}
