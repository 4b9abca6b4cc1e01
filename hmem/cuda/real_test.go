// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only

package cuda_test

import (
	"os"
	"testing"

	"github.com/lnx-go/lnx-go/hmem/cuda"
	"github.com/lnx-go/lnx-go/hmem/internal/emutest"
)

// TestRealCUDA runs the driver-independent checks (classify, copies both
// ways and device to device, a CPU read of device memory kills the reader,
// IPC into a second process) against the real driver: $LNX_TEST_CUDA_LIB,
// else libcuda.so.1. It skips where the driver does not load or sees no
// GPU, as on the CI machines; docs/memory.md records where it ran.
func TestRealCUDA(t *testing.T) {
	path := os.Getenv("LNX_TEST_CUDA_LIB")
	if path == "" {
		path = cuda.DefaultLib
	}
	if r := cuda.Load(path); r.LibOK {
		for _, s := range r.Symbols() {
			if s.Resolved == "" && s.Required {
				t.Errorf("%s: required %s does not resolve", path, s.Names[0])
			}
		}
	}
	emutest.RunReal(t, target, path)
}
