// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only

package ofi

import "testing"

func TestGetInfoUnknownProvider(t *testing.T) {
	_, err := GetInfo(RuntimeVersion(), "no_such_provider_xyz", "", CoreCaps)
	if err == nil {
		t.Fatal("GetInfo of an unknown provider succeeded")
	}
}

func TestTCPRoundTrip(t *testing.T) {
	l, err := GetInfo(RuntimeVersion(), "tcp;ofi_rxm", "lo", CoreCaps)
	if err != nil {
		t.Skipf("tcp;ofi_rxm unavailable: %v", err)
	}
	defer l.Free()
	ci := l.Infos[0]
	if ci.Domain.Name != "lo" || ci.EP.Type != 3 {
		t.Fatalf("unexpected core info: domain %q type %d", ci.Domain.Name, ci.EP.Type)
	}
	f, err := OpenFabric(ci)
	if err != nil {
		t.Fatal(err)
	}
	d, err := f.OpenDomain()
	if err != nil {
		t.Fatal(err)
	}
	e, err := d.OpenTransport(Config{})
	if err != nil {
		t.Fatal(err)
	}
	if id, err := AddrID(e.Addr()); err != nil || id != e.ID() {
		t.Fatalf("AddrID(Addr()) = %x, %v; want %x", id, err, e.ID())
	}
	for _, c := range []func() error{e.Close, d.Close, f.Close} {
		if err := c(); err != nil {
			t.Fatal(err)
		}
	}
}
