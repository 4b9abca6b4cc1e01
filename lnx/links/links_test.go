// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only

package links

import (
	"errors"
	"reflect"
	"testing"
)

func TestParseGood(t *testing.T) {
	tests := []struct {
		in   string
		want []Group
	}{
		{"shm", []Group{{Members: []Member{{Prov: "shm"}}}}},
		{"shm+tcp;ofi_rxm", []Group{{Members: []Member{{Prov: "shm"}, {Prov: "tcp;ofi_rxm"}}}}},
		{"shm+cxi:cxi0,cxi1", []Group{{Members: []Member{{Prov: "shm"}, {Prov: "cxi", Domains: []string{"cxi0", "cxi1"}}}}}},
		{"tcp;ofi_rxm+cxi:cxi0", []Group{{Members: []Member{{Prov: "tcp;ofi_rxm"}, {Prov: "cxi", Domains: []string{"cxi0"}}}}}},
		{"shm+tcp;ofi_rxm:lo|shm+verbs;ofi_rxm:mlx5_0", []Group{
			{Members: []Member{{Prov: "shm"}, {Prov: "tcp;ofi_rxm", Domains: []string{"lo"}}}},
			{Members: []Member{{Prov: "shm"}, {Prov: "verbs;ofi_rxm", Domains: []string{"mlx5_0"}}}},
		}},
		{"tcp:eth0.100", []Group{{Members: []Member{{Prov: "tcp", Domains: []string{"eth0.100"}}}}}},
	}
	for _, tt := range tests {
		got, err := Parse(tt.in)
		if err != nil {
			t.Errorf("Parse(%q): %v", tt.in, err)
			continue
		}
		if !reflect.DeepEqual(got, tt.want) {
			t.Errorf("Parse(%q) = %+v, want %+v", tt.in, got, tt.want)
		}
		// The rendered form must parse back to the same groups.
		var s string
		for i, g := range got {
			if i > 0 {
				s += "|"
			}
			s += g.String()
		}
		if s != tt.in {
			t.Errorf("round trip of %q gave %q", tt.in, s)
		}
	}
}

func TestParseBad(t *testing.T) {
	for _, in := range []string{
		"", " ", "+", "|", "shm+", "+shm", "shm||tcp", "shm|", "shm+shm",
		"tcp;", ";tcp", "tcp;;ofi_rxm", "cxi:", "cxi:a,,b", "cxi:a,a", "shm:x",
		"sh m", "tcp:e th0", "cxi:cxi0:cxi1", "tcp/rxm", "shm+tcp\x00", string(make([]byte, MaxLen+1)),
	} {
		g, err := Parse(in)
		if err == nil {
			t.Errorf("Parse(%q) = %+v, want error", in, g)
			continue
		}
		if !errors.Is(err, ErrSyntax) {
			t.Errorf("Parse(%q) error %v does not wrap ErrSyntax", in, err)
		}
	}
}

func TestGroupHelpers(t *testing.T) {
	g, err := Parse("shm+tcp;ofi_rxm:lo+cxi")
	if err != nil {
		t.Fatal(err)
	}
	if !g[0].HasShm() {
		t.Error("HasShm false for a group with shm")
	}
	net := g[0].Network()
	if len(net) != 2 || net[0].Prov != "tcp;ofi_rxm" || net[1].Prov != "cxi" {
		t.Errorf("Network() = %+v", net)
	}
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{"shm", "shm+tcp;ofi_rxm", "shm+cxi:cxi0,cxi1|tcp", "a:b,c+d|e", "||", "shm:+"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		groups, err := Parse(s)
		if err != nil {
			if !errors.Is(err, ErrSyntax) {
				t.Fatalf("unwrapped error %v", err)
			}
			return
		}
		var out string
		for i, g := range groups {
			if len(g.Members) == 0 {
				t.Fatalf("empty group from %q", s)
			}
			if i > 0 {
				out += "|"
			}
			out += g.String()
		}
		again, err := Parse(out)
		if err != nil || !reflect.DeepEqual(again, groups) {
			t.Fatalf("re-parse of %q (from %q) = %+v, %v", out, s, again, err)
		}
	})
}

// fi_shm names libfabric's shm: a network member, asked of libfabric as
// "shm"; "shm" stays lnx's own.
func TestFiShm(t *testing.T) {
	gs, err := Parse("shm+fi_shm")
	if err != nil {
		t.Fatal(err)
	}
	g := gs[0]
	if !g.HasShm() || len(g.Network()) != 1 || g.Network()[0].Prov != FiShm {
		t.Fatalf("group %+v", g)
	}
	if CoreProv(FiShm) != "shm" || CoreProv("tcp;ofi_rxm") != "tcp;ofi_rxm" || CoreProv(Shm) != Shm {
		t.Errorf("CoreProv: %q %q", CoreProv(FiShm), CoreProv("tcp;ofi_rxm"))
	}
}
