// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only

package config

import (
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lnx-go/lnx-go/lnx/logging"
	"github.com/lnx-go/lnx-go/peers/ofi"
)

// warnings collects the warnings lnx logs while a test runs.
type warnings struct {
	mu   sync.Mutex
	on   bool
	msgs []string
}

func (w *warnings) Enabled(l logging.Level, s logging.Subsys) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.on && l == logging.Warn
}

func (w *warnings) Log(l logging.Level, s logging.Subsys, msg string) {
	w.mu.Lock()
	w.msgs = append(w.msgs, msg)
	w.mu.Unlock()
}

func (w *warnings) take() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	m := w.msgs
	w.msgs = nil
	return m
}

// TestPeerTimeoutFloor: FI_LNX_PEER_TIMEOUT below MinPeerTimeout (which
// failed the first send to every network peer) is raised to it with a
// warning; longer values, and the default, are taken as they are.
func TestPeerTimeoutFloor(t *testing.T) {
	w := &warnings{on: true}
	logging.SetSink(w)
	t.Cleanup(func() { w.mu.Lock(); w.on = false; w.mu.Unlock() })
	for _, c := range []struct {
		env  string
		want time.Duration
		warn bool
	}{
		{"1ns", MinPeerTimeout, true},
		{"10ms", MinPeerTimeout, true},
		{"499ms", MinPeerTimeout, true},
		{"500ms", 500 * time.Millisecond, false},
		{"2s", 2 * time.Second, false},
		{"", ofi.DefaultPeerTimeout, false},
	} {
		got := Load(env(map[string]string{PeerTimeout: c.env})).PeerTimeout
		msgs := w.take()
		if got != c.want {
			t.Errorf("%s=%q: %v, want %v", PeerTimeout, c.env, got, c.want)
		}
		warned := len(msgs) == 1 && strings.Contains(msgs[0], PeerTimeout)
		if warned != c.warn || len(msgs) > 1 {
			t.Errorf("%s=%q: warnings %q, want one naming the variable: %v", PeerTimeout, c.env, msgs, c.warn)
		}
	}
}
