// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only

package lnx

import (
	"reflect"
	"testing"
)

// fi_av_insertsym's ranges, as fi_av(3)'s example gives them.
func TestSymRanges(t *testing.T) {
	for _, c := range []struct {
		node  string
		count int
		want  []string
	}{
		{"10.1.1.1", 2, []string{"10.1.1.1", "10.1.1.2"}},
		{"10.1.1.255", 2, []string{"10.1.1.255", "10.1.2.0"}},
		{"fe80::ff", 2, []string{"fe80::ff", "fe80::100"}},
		{"host10", 2, []string{"host10", "host11"}},
		{"node009", 2, []string{"node009", "node010"}},
		{"anything", 1, []string{"anything"}},
		{"", 1, []string{""}},
	} {
		got, err := symNodes(c.node, c.count)
		if err != nil || !reflect.DeepEqual(got, c.want) {
			t.Errorf("symNodes(%q, %d) = %v, %v; want %v", c.node, c.count, got, err, c.want)
		}
	}
	if got, err := symNodes("host", 2); err == nil {
		t.Errorf("symNodes(host, 2) = %v: a name without a numeric suffix cannot count", got)
	}
	if got, err := symNodes("255.255.255.255", 2); err == nil {
		t.Errorf("symNodes past the last IPv4 address = %v", got)
	}
	got, err := symServices("5000", 2)
	if err != nil || !reflect.DeepEqual(got, []string{"5000", "5001"}) {
		t.Errorf("symServices(5000, 2) = %v, %v", got, err)
	}
	if got, err := symServices("http", 1); err != nil || !reflect.DeepEqual(got, []string{"http"}) {
		t.Errorf("symServices(http, 1) = %v, %v: one service may be a name", got, err)
	}
	for _, s := range []string{"http", "65535"} {
		if got, err := symServices(s, 2); err == nil {
			t.Errorf("symServices(%q, 2) = %v; want an error", s, got)
		}
	}
}
