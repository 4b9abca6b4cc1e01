// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only

// Package loader holds what the CUDA and ROCm loaders share: the state of a
// runtime library loaded with dlopen, and the methods that only read it.
package loader

import (
	"fmt"
	"unsafe"

	"github.com/lnx-go/lnx-go/hmem/internal/iface"
)

// Symbol is one entry point a loader resolves.
type Symbol struct {
	Names    []string // accepted names, preferred first
	Required bool     // the runtime is unavailable without it
	Resolved string   // the name that resolved, "" if none
}

// State is embedded by each runtime.
type State struct {
	LibOK bool           // the library itself loaded
	Why   string         // why the runtime is unavailable; "" when it is available
	NDev  int            // devices found
	Syms  []Symbol       // what each entry point resolved to
	St    unsafe.Pointer // the C state (function table, contexts); nil if unusable
}

// Available reports whether the library loaded, every required entry point
// resolved, initialisation succeeded and there is at least one device.
func (s *State) Available() bool { return s.St != nil && s.NDev > 0 }

// Reason says why the runtime is unavailable; "" when it is available.
func (s *State) Reason() string { return s.Why }

// DeviceCount returns the number of devices (0 when unavailable).
func (s *State) DeviceCount() int {
	if !s.Available() {
		return 0
	}
	return s.NDev
}

// Symbols lists the entry points the loader resolves and what each
// resolved to (empty if the library did not load).
func (s *State) Symbols() []Symbol {
	out := make([]Symbol, len(s.Syms))
	copy(out, s.Syms)
	return out
}

// Unavailable is the error every call returns on an unusable runtime.
func (s *State) Unavailable() error {
	return fmt.Errorf("%w: %s", iface.ErrUnavailable, s.Why)
}

// Check returns Unavailable() unless the runtime is available.
func (s *State) Check() error {
	if !s.Available() {
		return s.Unavailable()
	}
	return nil
}

// Resolve looks up each entry point in lib, trying its names in order, and
// hands every address found to set(i, addr) with i its index in want. It
// returns what each resolved to and the first name of every required one
// that is missing.
func Resolve(lib interface{ Sym(string) unsafe.Pointer }, want []Symbol, set func(i int, p unsafe.Pointer)) (syms []Symbol, missing []string) {
	syms = make([]Symbol, len(want))
	for i, w := range want {
		syms[i] = Symbol{Names: w.Names, Required: w.Required}
		for _, name := range w.Names {
			if p := lib.Sym(name); p != nil {
				set(i, p)
				syms[i].Resolved = name
				break
			}
		}
		if syms[i].Resolved == "" && w.Required {
			missing = append(missing, w.Names[0])
		}
	}
	return syms, missing
}
