// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only

package cuda_test

import (
	"os"
	"testing"

	"github.com/lnx-go/lnx-go/hmem/cuda"
	"github.com/lnx-go/lnx-go/hmem/internal/emutest"
	"github.com/lnx-go/lnx-go/hmem/internal/iface"
)

var target = emutest.Target{
	Kind:    iface.CUDA,
	EnvLib:  cuda.EnvLib,
	Load:    func(p string) emutest.RT { return cuda.Load(p) },
	FromEnv: func() emutest.RT { return cuda.Open(os.Getenv(cuda.EnvLib)) },
	Alloc: func(r emutest.RT, n uint64) (uintptr, error) {
		return r.(*cuda.Runtime).Alloc(int(n))
	},
	Free:       func(r emutest.RT, p uintptr) error { return r.(*cuda.Runtime).Free(p) },
	NoIPC:      "-DEMU_NO_CU_IPC",
	MissingSym: "cuIpcGetMemHandle",
}

func TestMain(m *testing.M) { emutest.Main(m, target) }

func TestEmulator(t *testing.T) { emutest.Run(t, target) }

// TestSymbols: against the emulator every entry point resolves, with the
// _v2 names preferred.
func TestSymbols(t *testing.T) {
	r := cuda.Load(emutest.Lib(t))
	if !r.Available() {
		t.Fatal(r.Reason())
	}
	got := map[string]string{}
	for _, s := range r.Symbols() {
		got[s.Names[0]] = s.Resolved
	}
	for name, want := range map[string]string{
		"cuInit": "cuInit", "cuDeviceGetCount": "cuDeviceGetCount",
		"cuPointerGetAttribute": "cuPointerGetAttribute",
		"cuMemcpyDtoH_v2":       "cuMemcpyDtoH_v2", "cuMemcpyHtoD_v2": "cuMemcpyHtoD_v2",
		"cuMemcpyDtoD_v2":          "cuMemcpyDtoD_v2",
		"cuIpcGetMemHandle":        "cuIpcGetMemHandle",
		"cuIpcOpenMemHandle_v2":    "cuIpcOpenMemHandle_v2",
		"cuIpcCloseMemHandle":      "cuIpcCloseMemHandle",
		"cuMemGetAddressRange_v2":  "cuMemGetAddressRange_v2",
		"cuDevicePrimaryCtxRetain": "cuDevicePrimaryCtxRetain",
		"cuCtxSetCurrent":          "cuCtxSetCurrent",
		"cuMemAlloc_v2":            "cuMemAlloc_v2", "cuMemFree_v2": "cuMemFree_v2",
	} {
		if got[name] != want {
			t.Errorf("%s resolved to %q, want %q", name, got[name], want)
		}
	}
}

// TestDeviceOrdinal: memory on device 1 classifies as device 1, and copies
// to and from it work from a thread whose context is device 0's or none.
func TestDeviceOrdinal(t *testing.T) {
	t.Setenv("EMU_DEVICES", "2")
	r := cuda.Load(emutest.Lib(t))
	if !r.Available() {
		t.Fatal(r.Reason())
	}
	p, err := r.AllocOn(1, 1000)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Free(p)
	if k, d, ok := r.Classify(p + 999); !ok || k != iface.CUDA || d != 1 {
		t.Fatalf("Classify = %v, %d, %v; want CUDA, 1, true", k, d, ok)
	}
	in := []byte("device one")
	if err := r.CopyFromHost(p, in); err != nil {
		t.Fatal(err)
	}
	out := make([]byte, len(in))
	if err := r.CopyToHost(out, p); err != nil || string(out) != string(in) {
		t.Fatalf("%q, %v", out, err)
	}
	if base, size, err := r.AddressRange(p + 10); err != nil || base != p || size != 1000 {
		t.Fatalf("AddressRange = %#x, %d, %v", base, size, err)
	}
	if _, err := r.AllocOn(2, 10); err == nil {
		t.Error("AllocOn(2) with 2 devices succeeded")
	}
}
