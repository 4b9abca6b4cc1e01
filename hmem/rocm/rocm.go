// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only

// Package rocm is lnx's ROCm runtime: it loads HIP (libamdhip64.so) with
// dlopen at run time, so lnx builds, links and runs on machines without
// ROCm, and it classifies pointers (hipPointerGetAttributes), copies
// between host and device memory with hipMemcpy (the CPU never touches
// device memory), and exports and imports device buffers by HIP IPC
// handles.
//
// The library is FI_LNX_ROCM_LIB when set ("none" disables ROCm), else the
// first of libamdhip64.so, libamdhip64.so.6 and libamdhip64.so.5 that
// loads. A missing library, a missing entry point or zero devices
// (hipGetDeviceCount failing, as it does with hipErrorNoDevice on a
// machine without a GPU) leave the Runtime unavailable, with Reason saying
// why; nothing panics.
//
// ROCm 6 renumbered enum hipMemoryType and hipIpcMemLazyEnablePeerAccess;
// the loader asks hipRuntimeGetVersion which numbering the library uses
// (5.x when it cannot tell).
package rocm

import (
	"fmt"
	"strings"

	"github.com/lnx-go/lnx-go/hmem/internal/iface"
	"github.com/lnx-go/lnx-go/hmem/internal/loader"
)

const (
	// EnvLib names the library to load instead of libamdhip64.so; "none"
	// (or "off") disables ROCm.
	EnvLib = "FI_LNX_ROCM_LIB"
	// HandleSize is the size of a hipIpcMemHandle_t (HIP_IPC_HANDLE_SIZE).
	HandleSize = 64
)

// DefaultLibs are the names Open tries, in order, without EnvLib.
var DefaultLibs = []string{"libamdhip64.so", "libamdhip64.so.6", "libamdhip64.so.5"}

// Symbol is one HIP entry point the loader resolves.
type Symbol = loader.Symbol

// Error is a failed HIP call.
type Error struct {
	Func string // the entry point that failed
	Code int    // hipError_t
	Name string // e.g. hipErrorInvalidValue, when the library names it
}

func (e *Error) Error() string {
	if e.Name == "" {
		return fmt.Sprintf("rocm: %s: hipError_t %d", e.Func, e.Code)
	}
	return fmt.Sprintf("rocm: %s: %s (%d)", e.Func, e.Name, e.Code)
}

// Runtime is one loaded (or failed) instance of the HIP library.
type Runtime struct {
	path string
	loader.State
	version int // hipRuntimeGetVersion, 0 if unknown
}

// Open loads the runtime as the FI_LNX_ROCM_LIB setting (EnvLib) says:
// "" loads the first of DefaultLibs that loads, "none" or "off" gives an unavailable Runtime, anything
// else is the library to load. Each call loads anew; lnx loads once per
// process through package hmem, which gets the setting from lnx's config.
func Open(setting string) *Runtime {
	p := strings.TrimSpace(setting)
	switch strings.ToLower(p) {
	case "":
		return loadFirst(DefaultLibs...)
	case "none", "off":
		return &Runtime{path: p, State: loader.State{Why: "rocm: disabled by " + EnvLib + "=" + p}}
	}
	return Load(p)
}

// Load loads the HIP library at path (a file, or a name for the dynamic
// linker), resolves its entry points and counts devices. It never returns
// nil: a failure is an unavailable Runtime with a Reason.
func Load(path string) *Runtime {
	r := &Runtime{path: path}
	r.load()
	return r
}

// loadFirst loads the first of paths that dlopen accepts.
func loadFirst(paths ...string) *Runtime {
	var reasons []string
	var r *Runtime
	for _, p := range paths {
		if r = Load(p); r.LibOK {
			return r
		}
		reasons = append(reasons, strings.TrimPrefix(r.Why, "rocm: "))
	}
	r.Why = "rocm: " + strings.Join(reasons, "; ")
	return r
}

// Name returns "rocm".
func (r *Runtime) Name() string { return "rocm" }

// Iface returns FI_HMEM_ROCR.
func (r *Runtime) Iface() iface.Iface { return iface.ROCR }

// Path returns the library path that was loaded or tried.
func (r *Runtime) Path() string { return r.path }

// Version returns hipRuntimeGetVersion's value (e.g. 50221153 for 5.2),
// 0 when unknown.
func (r *Runtime) Version() int { return r.version }

// Loaded reports whether the library itself loaded, whatever else failed.
func (r *Runtime) Loaded() bool { return r.LibOK }

// Classify reports whether ptr is HIP device (or managed) memory and on
// which device (hipPointerGetAttributes). Host memory, pinned or not, and
// an unavailable runtime give (FI_HMEM_SYSTEM, 0, false).
func (r *Runtime) Classify(ptr uintptr) (kind iface.Iface, device int, ok bool) {
	if ptr == 0 || !r.Available() {
		return iface.System, 0, false
	}
	dev, isDev := r.classify(ptr)
	if !isDev {
		return iface.System, 0, false
	}
	return iface.ROCR, dev, true
}

// CopyToHost copies len(dst) bytes from device memory at src into dst
// (hipMemcpy, hipMemcpyDeviceToHost).
func (r *Runtime) CopyToHost(dst []byte, src uintptr) error {
	if err := r.Check(); err != nil || len(dst) == 0 {
		return err
	}
	return r.copyToHost(dst, src)
}

// CopyFromHost copies src into device memory at dst (hipMemcpy,
// hipMemcpyHostToDevice).
func (r *Runtime) CopyFromHost(dst uintptr, src []byte) error {
	if err := r.Check(); err != nil || len(src) == 0 {
		return err
	}
	return r.copyFromHost(dst, src)
}

// CopyDevice copies n bytes between device buffers (hipMemcpy,
// hipMemcpyDeviceToDevice), and returns once the copy has completed.
func (r *Runtime) CopyDevice(dst, src uintptr, n uint64) error {
	if err := r.Check(); err != nil || n == 0 {
		return err
	}
	return r.copyDevice(dst, src, n)
}

// AddressRange returns the allocation that holds ptr
// (hipMemGetAddressRange).
func (r *Runtime) AddressRange(ptr uintptr) (base uintptr, size uint64, err error) {
	if err := r.Check(); err != nil {
		return 0, 0, err
	}
	return r.addressRange(ptr)
}

// IPCHandle returns a HIP IPC handle (hipIpcGetMemHandle) for the whole
// allocation that holds ptr, and ptr's offset from that allocation's base
// (hipMemGetAddressRange): the importer adds offset to the base IPCOpen
// returns.
func (r *Runtime) IPCHandle(ptr uintptr) (handle []byte, offset uint64, err error) {
	if err := r.Check(); err != nil {
		return nil, 0, err
	}
	h, base, err := r.ipcHandle(ptr)
	if err != nil {
		return nil, 0, err
	}
	return h, uint64(ptr - base), nil
}

// IPCOpen maps another process's allocation (hipIpcOpenMemHandle with
// hipIpcMemLazyEnablePeerAccess) on the thread's current device and
// returns its base here. A process cannot open its own handles.
func (r *Runtime) IPCOpen(handle []byte) (uintptr, error) {
	if err := r.Check(); err != nil {
		return 0, err
	}
	if len(handle) != HandleSize {
		return 0, fmt.Errorf("rocm: IPC handle of %d bytes, want %d", len(handle), HandleSize)
	}
	return r.ipcOpen(handle)
}

// IPCClose unmaps an address that IPCOpen returned (hipIpcCloseMemHandle).
func (r *Runtime) IPCClose(base uintptr) error {
	if err := r.Check(); err != nil {
		return err
	}
	return r.ipcClose(base)
}

// Alloc allocates n bytes of device memory (hipMalloc) on the thread's
// current device. For tests and tools; lnx itself never allocates device
// memory.
func (r *Runtime) Alloc(n uint64) (uintptr, error) {
	if err := r.Check(); err != nil {
		return 0, err
	}
	if n == 0 {
		return 0, fmt.Errorf("rocm: Alloc: size 0")
	}
	return r.alloc(n)
}

// Free frees memory from Alloc (hipFree).
func (r *Runtime) Free(p uintptr) error {
	if err := r.Check(); err != nil {
		return err
	}
	return r.free(p)
}

// PinHost page-locks host memory b (hipHostRegister, portable), so that
// copies between it and device memory run at full speed. b must stay
// mapped until UnpinHost. A runtime without the entry points gives an
// error, and b stays usable unpinned.
func (r *Runtime) PinHost(b []byte) error {
	if err := r.Check(); err != nil || len(b) == 0 {
		return err
	}
	return r.pin(b)
}

// UnpinHost undoes PinHost (hipHostUnregister).
func (r *Runtime) UnpinHost(b []byte) error {
	if err := r.Check(); err != nil || len(b) == 0 {
		return err
	}
	return r.unpin(b)
}
