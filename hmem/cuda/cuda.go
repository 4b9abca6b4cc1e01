// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only

// Package cuda is lnx's CUDA runtime: it loads the CUDA driver API
// (libcuda.so.1) with dlopen at run time, so lnx builds, links and runs on
// machines without CUDA, and it classifies pointers, copies between host
// and device memory with the driver's copy functions (the CPU never touches
// device memory), and exports and imports device buffers by CUDA IPC
// handles.
//
// The library is FI_LNX_CUDA_LIB when set ("none" disables CUDA), else
// libcuda.so.1. A missing library, a missing entry point, a failing cuInit
// or zero devices leave the Runtime unavailable, with Reason saying why;
// nothing panics.
//
// Contexts: the driver's copy and IPC calls need a current context on the
// calling thread. Each call keeps the thread's current context when it has
// one (the application's, on an application thread); otherwise it makes
// the primary context of the device the pointer lives on current for the
// duration of that one C call and restores the thread's previous (empty)
// context afterwards. Primary contexts are retained on first use, one per
// device that lnx actually touches, and never released.
package cuda

import (
	"fmt"
	"strings"
	"sync"

	"github.com/lnx-go/lnx-go/hmem/internal/iface"
	"github.com/lnx-go/lnx-go/hmem/internal/loader"
)

const (
	// EnvLib names the library to load instead of libcuda.so.1; "none"
	// (or "off") disables CUDA.
	EnvLib = "FI_LNX_CUDA_LIB"
	// DefaultLib is the driver library's soname; Open falls back to
	// libcuda.so if it does not load.
	DefaultLib = "libcuda.so.1"
	// HandleSize is the size of a CUipcMemHandle.
	HandleSize = 64
)

// Symbol is one driver entry point the loader resolves.
type Symbol = loader.Symbol

// Error is a failed driver call.
type Error struct {
	Func string // the entry point that failed, as resolved
	Code int    // CUresult
	Name string // e.g. CUDA_ERROR_INVALID_VALUE, when the driver names it
}

func (e *Error) Error() string {
	if e.Name == "" {
		return fmt.Sprintf("cuda: %s: CUresult %d", e.Func, e.Code)
	}
	return fmt.Sprintf("cuda: %s: %s (%d)", e.Func, e.Name, e.Code)
}

// Runtime is one loaded (or failed) instance of the driver library.
type Runtime struct {
	path string
	loader.State

	mu     sync.Mutex
	opened map[uintptr]int // IPC mappings -> device whose context opened them (-1: the thread's)
}

// Open loads the runtime as the FI_LNX_CUDA_LIB setting (EnvLib) says:
// "" loads libcuda.so.1, "none" or "off" gives an unavailable Runtime, anything
// else is the library to load. Each call loads anew; lnx loads once per
// process through package hmem, which gets the setting from lnx's config.
func Open(setting string) *Runtime {
	p := strings.TrimSpace(setting)
	switch strings.ToLower(p) {
	case "":
		return loadFirst(DefaultLib, "libcuda.so")
	case "none", "off":
		return &Runtime{path: p, State: loader.State{Why: "cuda: disabled by " + EnvLib + "=" + p}}
	}
	return Load(p)
}

// Load loads the driver library at path (a file, or a name for the dynamic
// linker), resolves its entry points, runs cuInit and counts devices. It
// never returns nil: a failure is an unavailable Runtime with a Reason.
func Load(path string) *Runtime {
	r := &Runtime{path: path, opened: map[uintptr]int{}}
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
		reasons = append(reasons, strings.TrimPrefix(r.Why, "cuda: "))
	}
	r.Why = "cuda: " + strings.Join(reasons, "; ")
	return r
}

// Name returns "cuda".
func (r *Runtime) Name() string { return "cuda" }

// Iface returns FI_HMEM_CUDA.
func (r *Runtime) Iface() iface.Iface { return iface.CUDA }

// Path returns the library path that was loaded or tried.
func (r *Runtime) Path() string { return r.path }

// Classify reports whether ptr is CUDA device memory
// (cuPointerGetAttribute: CU_POINTER_ATTRIBUTE_MEMORY_TYPE is DEVICE or
// UNIFIED) and on which device (CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL).
// Pinned or registered host memory (MEMORY_TYPE HOST), unknown host memory
// and an unavailable runtime give (FI_HMEM_SYSTEM, 0, false).
func (r *Runtime) Classify(ptr uintptr) (kind iface.Iface, device int, ok bool) {
	if ptr == 0 || !r.Available() {
		return iface.System, 0, false
	}
	dev, isDev := r.classify(ptr)
	if !isDev {
		return iface.System, 0, false
	}
	return iface.CUDA, dev, true
}

// CopyToHost copies len(dst) bytes from device memory at src into dst
// (cuMemcpyDtoH_v2).
func (r *Runtime) CopyToHost(dst []byte, src uintptr) error {
	if err := r.Check(); err != nil || len(dst) == 0 {
		return err
	}
	return r.copyToHost(dst, src)
}

// CopyFromHost copies src into device memory at dst (cuMemcpyHtoD_v2),
// and returns once the data is in device memory.
func (r *Runtime) CopyFromHost(dst uintptr, src []byte) error {
	if err := r.Check(); err != nil || len(src) == 0 {
		return err
	}
	return r.copyFromHost(dst, src)
}

// CopyDevice copies n bytes between device buffers (cuMemcpyDtoD_v2), and
// returns once the copy has completed.
func (r *Runtime) CopyDevice(dst, src uintptr, n uint64) error {
	if err := r.Check(); err != nil || n == 0 {
		return err
	}
	return r.copyDevice(dst, src, n)
}

// AddressRange returns the allocation that holds ptr
// (cuMemGetAddressRange_v2).
func (r *Runtime) AddressRange(ptr uintptr) (base uintptr, size int, err error) {
	if err := r.Check(); err != nil {
		return 0, 0, err
	}
	return r.addressRange(ptr)
}

// IPCHandle returns a CUDA IPC handle (cuIpcGetMemHandle) for the whole
// allocation that holds ptr, and ptr's offset from that allocation's base
// (cuMemGetAddressRange_v2): the importer adds offset to the base IPCOpen
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

// IPCOpen maps another process's allocation (cuIpcOpenMemHandle_v2 with
// CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS) and returns its base here, in the
// thread's current context, else in the primary context of the first
// device whose primary context is active, else of device 0. A process
// cannot open its own handles.
func (r *Runtime) IPCOpen(handle []byte) (uintptr, error) {
	return r.IPCOpenOn(handle, -1)
}

// IPCOpenOn is IPCOpen in the primary context of device (-1: as IPCOpen).
func (r *Runtime) IPCOpenOn(handle []byte, device int) (uintptr, error) {
	if err := r.Check(); err != nil {
		return 0, err
	}
	if len(handle) != HandleSize {
		return 0, fmt.Errorf("cuda: IPC handle of %d bytes, want %d", len(handle), HandleSize)
	}
	if device < -1 || device >= r.NDev {
		return 0, fmt.Errorf("cuda: no device %d (%d devices)", device, r.NDev)
	}
	p, used, err := r.ipcOpen(handle, device)
	if err != nil {
		return 0, err
	}
	r.mu.Lock()
	r.opened[p] = used
	r.mu.Unlock()
	return p, nil
}

// IPCClose unmaps an address that IPCOpen returned (cuIpcCloseMemHandle).
func (r *Runtime) IPCClose(base uintptr) error {
	if err := r.Check(); err != nil {
		return err
	}
	r.mu.Lock()
	dev, ok := r.opened[base]
	r.mu.Unlock()
	if !ok {
		dev = -1
	}
	if err := r.ipcClose(base, dev); err != nil {
		return err
	}
	r.mu.Lock()
	delete(r.opened, base)
	r.mu.Unlock()
	return nil
}

// Alloc allocates n bytes of device memory (cuMemAlloc_v2) in the
// thread's current context, else on device 0. For tests and tools; lnx
// itself never allocates device memory.
func (r *Runtime) Alloc(n int) (uintptr, error) { return r.AllocOn(-1, n) }

// AllocOn is Alloc on device (-1: as Alloc).
func (r *Runtime) AllocOn(device, n int) (uintptr, error) {
	if err := r.Check(); err != nil {
		return 0, err
	}
	if n <= 0 {
		return 0, fmt.Errorf("cuda: Alloc: bad size %d", n)
	}
	if device < -1 || device >= r.NDev {
		return 0, fmt.Errorf("cuda: no device %d (%d devices)", device, r.NDev)
	}
	return r.alloc(device, n)
}

// Free frees memory from Alloc (cuMemFree_v2).
func (r *Runtime) Free(p uintptr) error {
	if err := r.Check(); err != nil {
		return err
	}
	return r.free(p)
}

// PinHost page-locks host memory b (cuMemHostRegister_v2, portable to
// every context), so that copies between it and device memory run at the
// copy engines' speed rather than through the driver's pageable bounce
// buffers. b must stay mapped until UnpinHost. A driver without the entry
// points gives an error, and b stays usable unpinned.
func (r *Runtime) PinHost(b []byte) error {
	if err := r.Check(); err != nil || len(b) == 0 {
		return err
	}
	return r.pin(b)
}

// UnpinHost undoes PinHost (cuMemHostUnregister).
func (r *Runtime) UnpinHost(b []byte) error {
	if err := r.Check(); err != nil || len(b) == 0 {
		return err
	}
	return r.unpin(b)
}
