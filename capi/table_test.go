// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only

package main

import "testing"

func TestHandleTable(t *testing.T) {
	var tab = handleTable{next: 1}
	a, b := "a", "b"
	ha, hb := tab.add(&a), tab.add(&b)
	if ha == 0 || hb == 0 || ha == hb {
		t.Fatalf("handles %d %d", ha, hb)
	}
	if tab.get(ha) != &a || tab.get(hb) != &b {
		t.Fatal("lookup returned the wrong object")
	}
	tab.remove(ha)
	if tab.get(ha) != nil {
		t.Fatal("removed handle still resolves")
	}
	if tab.get(0) != nil || tab.get(^uintptr(0)) != nil {
		t.Fatal("invalid handles resolve")
	}
	c := "c"
	if hc := tab.add(&c); hc != ha || tab.get(hc) != &c {
		t.Fatalf("slot not reused: %d", hc)
	}
	for i := 0; i < 3*handleChunkLen; i++ {
		if tab.add(i) == 0 {
			t.Fatal("table full too early")
		}
	}
}
