// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only

package main

import (
	"strings"
	"testing"
)

func TestLoadMessage(t *testing.T) {
	got := loadMessage(1<<16|17, 2<<16|3)
	for _, want := range []string{"lnx-go release ", "commit " + gitCommit, "libfabric API 1.17", "running libfabric 2.3"} {
		if !strings.Contains(got, want) {
			t.Errorf("load message %q lacks %q", got, want)
		}
	}
}

func TestNewerWarning(t *testing.T) {
	if w := newerWarning(2<<16|1, 2<<16|1); w != "" {
		t.Errorf("warning for a known libfabric: %q", w)
	}
	if w := newerWarning(1<<16|17, 1<<16|17); w != "" {
		t.Errorf("warning for 1.17: %q", w)
	}
	w := newerWarning(2<<16|1, 2<<16|6)
	for _, want := range []string{"libfabric 2.6 is newer", "serves API 2.1", "asking for 2.2 or later"} {
		if !strings.Contains(w, want) {
			t.Errorf("warning %q lacks %q", w, want)
		}
	}
}
