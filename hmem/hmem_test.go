// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only

package hmem_test

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"unsafe"

	"github.com/lnx-go/lnx-go/hmem"
	"github.com/lnx-go/lnx-go/hmem/cuda"
	"github.com/lnx-go/lnx-go/hmem/internal/emutest"
	"github.com/lnx-go/lnx-go/hmem/rocm"
)

const envRole = "HMEM_TEST_ROLE"

func TestMain(m *testing.M) {
	if os.Getenv(envRole) == "none" {
		// Both runtimes disabled: nothing is available, all is host.
		hmem.Configure(os.Getenv(cuda.EnvLib), os.Getenv(rocm.EnvLib))
		b := make([]byte, 8)
		k, d := hmem.Classify(uintptr(unsafe.Pointer(&b[0])), hmem.CUDA)
		if hmem.Available() || k != hmem.System || d != 0 || len(hmem.Runtimes()) != 2 {
			fmt.Println("FAIL: available", hmem.Available(), k, d)
			os.Exit(1)
		}
		for _, r := range hmem.Runtimes() {
			fmt.Printf("%s: %s\n", r.Name(), r.Reason())
		}
		os.Exit(0)
	}
	code := m.Run()
	emutest.Cleanup()
	os.Exit(code)
}

func TestIfaceValues(t *testing.T) {
	// enum fi_hmem_iface in rdma/fi_domain.h.
	for i, want := range map[hmem.Iface]int{hmem.System: 0, hmem.CUDA: 1, hmem.ROCR: 2, hmem.ZE: 3} {
		if int(i) != want {
			t.Errorf("%v = %d, want %d", i, int(i), want)
		}
	}
	if hmem.System.IsDevice() || !hmem.CUDA.IsDevice() || hmem.Unknown.IsDevice() {
		t.Error("IsDevice")
	}
	if hmem.ROCR.String() != "FI_HMEM_ROCR" {
		t.Error(hmem.ROCR.String())
	}
}

func TestNone(t *testing.T) {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), envRole+"=none", cuda.EnvLib+"=none", rocm.EnvLib+"=none")
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "disabled by") {
		t.Fatalf("%v\n%s", err, out)
	}
}

// TestRegistry: with both runtimes loaded from the emulator, Classify
// tells CUDA, HIP and host memory apart, and follows hints.
func TestRegistry(t *testing.T) {
	lib := emutest.Lib(t)
	hmem.Configure(lib, lib)
	t.Setenv("EMU_DEVICES", "2")
	rts := hmem.Runtimes()
	if len(rts) != 2 || rts[0].Name() != "cuda" || rts[1].Name() != "rocm" {
		t.Fatalf("Runtimes() = %v", rts)
	}
	for _, r := range rts {
		if !r.Available() || r.DeviceCount() != 2 {
			t.Fatalf("%s: available %v, %d devices: %s", r.Name(), r.Available(), r.DeviceCount(), r.Reason())
		}
	}
	if !hmem.Available() {
		t.Fatal("Available() = false")
	}
	cp, err := rts[0].(*cuda.Runtime).Alloc(4096)
	if err != nil {
		t.Fatal(err)
	}
	defer rts[0].(*cuda.Runtime).Free(cp)
	hp, err := rts[1].(*rocm.Runtime).Alloc(4096)
	if err != nil {
		t.Fatal(err)
	}
	defer rts[1].(*rocm.Runtime).Free(hp)
	host := make([]byte, 64)
	h := uintptr(unsafe.Pointer(&host[0]))
	for _, c := range []struct {
		name string
		ptr  uintptr
		hint hmem.Iface
		want hmem.Iface
	}{
		{"cuda, no hint", cp + 10, hmem.Unknown, hmem.CUDA},
		{"cuda, system hint", cp, hmem.System, hmem.CUDA},
		{"cuda, cuda hint", cp, hmem.CUDA, hmem.CUDA},
		{"cuda, rocr hint", cp, hmem.ROCR, hmem.System},
		{"hip, no hint", hp + 4095, hmem.Unknown, hmem.ROCR},
		{"hip, rocr hint", hp, hmem.ROCR, hmem.ROCR},
		{"hip, cuda hint", hp, hmem.CUDA, hmem.System},
		{"hip, ze hint", hp, hmem.ZE, hmem.System},
		{"host", h, hmem.Unknown, hmem.System},
		{"host, cuda hint", h, hmem.CUDA, hmem.System},
		{"nil", 0, hmem.Unknown, hmem.System},
	} {
		if k, d := hmem.Classify(c.ptr, c.hint); k != c.want || d != 0 {
			t.Errorf("%s: Classify = %v, %d; want %v, 0", c.name, k, d, c.want)
		}
	}
	if r, ok := hmem.Lookup(hmem.ROCR); !ok || r.Name() != "rocm" {
		t.Errorf("Lookup(ROCR) = %v, %v", r, ok)
	}
	if _, ok := hmem.Lookup(hmem.ZE); ok {
		t.Error("Lookup(ZE) found a runtime")
	}
}
