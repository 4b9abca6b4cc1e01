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
