// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only

package rocm_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lnx-go/lnx-go/hmem/internal/emutest"
	"github.com/lnx-go/lnx-go/hmem/internal/iface"
	"github.com/lnx-go/lnx-go/hmem/rocm"
)

var target = emutest.Target{
	Kind:       iface.ROCR,
	EnvLib:     rocm.EnvLib,
	Load:       func(p string) emutest.RT { return rocm.Load(p) },
	FromEnv:    func() emutest.RT { return rocm.Open(os.Getenv(rocm.EnvLib)) },
	Alloc:      func(r emutest.RT, n uint64) (uintptr, error) { return r.(*rocm.Runtime).Alloc(n) },
	Free:       func(r emutest.RT, p uintptr) error { return r.(*rocm.Runtime).Free(p) },
	NoIPC:      "-DEMU_NO_HIP_IPC",
	MissingSym: "hipIpcGetMemHandle",
}

func TestMain(m *testing.M) { emutest.Main(m, target) }

func TestEmulator(t *testing.T) { emutest.Run(t, target) }

// TestEmulatorROCm6: with the ROCm 6 numbering of hipMemoryType and of
// the IPC flag (which the emulator enforces), the same tests pass.
func TestEmulatorROCm6(t *testing.T) {
	t.Setenv("EMU_HIP_VERSION", "6")
	r := rocm.Load(emutest.Lib(t))
	if !r.Available() || r.Version() < 60000000 {
		t.Fatalf("available %v (%s), version %d", r.Available(), r.Reason(), r.Version())
	}
	emutest.Run(t, target)
}

// TestRealROCm loads the ROCm libraries installed here, if any: every
// entry point resolves, and without a GPU the runtime is unavailable with
// a reason, and nothing crashes.
func TestRealROCm(t *testing.T) {
	if !emutest.Cgo {
		t.Skip("built without cgo")
	}
	libs, _ := filepath.Glob("/usr/lib/x86_64-linux-gnu/libamdhip64.so*")
	if len(libs) == 0 {
		t.Skip("no libamdhip64.so in /usr/lib/x86_64-linux-gnu")
	}
	for _, lib := range libs {
		r := rocm.Load(lib)
		if !r.Loaded() {
			t.Errorf("%s: did not load: %s", lib, r.Reason())
			continue
		}
		for _, s := range r.Symbols() {
			if s.Resolved == "" {
				t.Errorf("%s: %s does not resolve (required %v)", lib, s.Names[0], s.Required)
			}
		}
		if r.Available() {
			t.Logf("%s: available with %d devices (a GPU is present)", lib, r.DeviceCount())
			continue
		}
		if !strings.Contains(r.Reason(), "hipGetDeviceCount") {
			t.Errorf("%s: Reason %q does not name the failed call", lib, r.Reason())
		}
		t.Logf("%s (HIP %d): %s", lib, r.Version(), r.Reason())
		if k, _, ok := r.Classify(uintptr(0x1000)); ok || k != iface.System {
			t.Errorf("Classify on an unavailable runtime: %v %v", k, ok)
		}
	}
	// The default search finds the library too.
	r := rocm.Open("")
	if !r.Loaded() {
		t.Errorf("Open(\"\"): %s", r.Reason())
	}
}
