// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only

package hmem

import (
	"sync"

	"github.com/lnx-go/lnx-go/hmem/cuda"
	"github.com/lnx-go/lnx-go/hmem/internal/iface"
	"github.com/lnx-go/lnx-go/hmem/rocm"
)

// Iface is a memory interface, numbered as libfabric's enum fi_hmem_iface.
type Iface = iface.Iface

// Values of enum fi_hmem_iface, and Unknown ("no registration says").
const (
	System  = iface.System // FI_HMEM_SYSTEM
	CUDA    = iface.CUDA   // FI_HMEM_CUDA
	ROCR    = iface.ROCR   // FI_HMEM_ROCR
	ZE      = iface.ZE     // FI_HMEM_ZE
	Unknown = iface.Unknown
)

// ErrUnavailable is wrapped by every error of an unavailable runtime.
var ErrUnavailable = iface.ErrUnavailable

// Runtime is one device runtime (CUDA or ROCm).
type Runtime interface {
	// Name is "cuda" or "rocm".
	Name() string
	// Iface is the fi_hmem_iface of the runtime's memory.
	Iface() Iface
	// Available: the library loaded, its entry points resolved and it
	// has at least one device. Every other method fails (or, Classify,
	// says host) when it is not.
	Available() bool
	// Reason says why the runtime is unavailable ("" if available).
	Reason() string
	DeviceCount() int
	// Classify reports whether ptr is device memory of this runtime, and
	// on which device; (System, 0, false) for anything else.
	Classify(ptr uintptr) (kind Iface, device int, ok bool)
	// CopyToHost copies len(dst) bytes of device memory at src to dst.
	CopyToHost(dst []byte, src uintptr) error
	// CopyFromHost copies src to device memory at dst.
	CopyFromHost(dst uintptr, src []byte) error
	// CopyDevice copies n bytes of device memory from src to dst.
	CopyDevice(dst, src uintptr, n uint64) error
	// IPCHandle exports the allocation holding ptr; offset is ptr's
	// offset from the allocation's base.
	IPCHandle(ptr uintptr) (handle []byte, offset uint64, err error)
	// IPCOpen maps another process's exported allocation here.
	IPCOpen(handle []byte) (base uintptr, err error)
	// IPCClose unmaps a base that IPCOpen returned.
	IPCClose(base uintptr) error
}

var (
	_ Runtime = (*cuda.Runtime)(nil)
	_ Runtime = (*rocm.Runtime)(nil)
)

var reg struct {
	once            sync.Once
	mu              sync.Mutex
	cudaLib, hipLib string // the settings of the first load (lnx's config)
	all             []Runtime
}

// Configure sets which libraries the runtimes load from: the
// FI_LNX_CUDA_LIB and FI_LNX_ROCM_LIB settings ("" for the default
// names, "none" to disable one). The runtimes are loaded once per process,
// on the first Runtimes call; Configure after that changes nothing.
func Configure(cudaLib, rocmLib string) {
	reg.mu.Lock()
	reg.cudaLib, reg.hipLib = cudaLib, rocmLib
	reg.mu.Unlock()
}

// Runtimes returns every runtime lnx knows, available or not, in a fixed
// order (CUDA, ROCm). The libraries are loaded on the first call.
func Runtimes() []Runtime {
	reg.once.Do(func() {
		reg.mu.Lock()
		c, r := reg.cudaLib, reg.hipLib
		reg.mu.Unlock()
		reg.all = []Runtime{cuda.Open(c), rocm.Open(r)}
	})
	return reg.all
}

// Lookup returns the runtime for iface i if it is available.
func Lookup(i Iface) (Runtime, bool) {
	if !i.IsDevice() {
		return nil, false
	}
	for _, r := range Runtimes() {
		if r.Iface() == i && r.Available() {
			return r, true
		}
	}
	return nil, false
}

// hostPinner is a runtime that can page-lock host memory.
type hostPinner interface {
	PinHost(b []byte) error
	UnpinHost(b []byte) error
}

var (
	_ hostPinner = (*cuda.Runtime)(nil)
	_ hostPinner = (*rocm.Runtime)(nil)
)

// PinHost page-locks host memory b with each available runtime that can,
// so that the runtimes' copies between b and device memory run at the copy
// engines' speed instead of through the driver's own pageable bounce
// buffers (on an H200, 1 MiB device-to-host: 26 us pinned, 92 us
// pageable). b must be outside the Go heap and stay mapped until unpin,
// which the caller runs before unmapping it. It returns nil when no
// runtime pinned b (none available, none able, or the driver refused):
// b then works unpinned, only slower.
func PinHost(b []byte) (unpin func()) {
	var done []hostPinner
	for _, r := range Runtimes() {
		p, ok := r.(hostPinner)
		if ok && r.Available() && p.PinHost(b) == nil {
			done = append(done, p)
		}
	}
	if len(done) == 0 {
		return nil
	}
	return func() {
		for _, p := range done {
			p.UnpinHost(b)
		}
	}
}

// Available reports whether any device runtime is available.
func Available() bool {
	for _, r := range Runtimes() {
		if r.Available() {
			return true
		}
	}
	return false
}

// Classify says what memory ptr is and on which device. hint is the iface
// of the memory registration that covers ptr, if any: a device hint asks
// only that runtime (and a hint of an unavailable runtime, or a pointer
// it does not know, gives System); System or Unknown asks each available
// runtime in turn. Anything no runtime claims is System, device 0.
func Classify(ptr uintptr, hint Iface) (Iface, int) {
	if ptr == 0 {
		return System, 0
	}
	if hint.IsDevice() {
		if r, ok := Lookup(hint); ok {
			if k, d, ok := r.Classify(ptr); ok {
				return k, d
			}
		}
		return System, 0
	}
	for _, r := range Runtimes() {
		if !r.Available() {
			continue
		}
		if k, d, ok := r.Classify(ptr); ok {
			return k, d
		}
	}
	return System, 0
}
