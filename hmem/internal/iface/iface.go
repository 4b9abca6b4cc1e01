// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only

// Package iface holds the types that package hmem and its runtime packages
// (hmem/cuda, hmem/rocm) share; hmem re-exports them, and code outside
// hmem uses them through hmem.
package iface

import (
	"errors"
	"strconv"
)

// Iface is a memory interface, numbered as libfabric's enum fi_hmem_iface.
type Iface int

// Values of enum fi_hmem_iface, and Unknown for "no memory registration
// says": ask the runtimes.
const (
	System  Iface = 0 // FI_HMEM_SYSTEM: host memory the CPU may touch
	CUDA    Iface = 1 // FI_HMEM_CUDA
	ROCR    Iface = 2 // FI_HMEM_ROCR
	ZE      Iface = 3 // FI_HMEM_ZE
	Unknown Iface = -1
)

// String returns the libfabric name of the interface.
func (i Iface) String() string {
	switch i {
	case System:
		return "FI_HMEM_SYSTEM"
	case CUDA:
		return "FI_HMEM_CUDA"
	case ROCR:
		return "FI_HMEM_ROCR"
	case ZE:
		return "FI_HMEM_ZE"
	case Unknown:
		return "unknown"
	}
	return "fi_hmem_iface(" + strconv.Itoa(int(i)) + ")"
}

// IsDevice reports whether memory of this interface may be device memory
// that the CPU must not touch: every value but System (and Unknown).
func (i Iface) IsDevice() bool { return i > System }

// ErrUnavailable is wrapped by every error of a runtime whose library did
// not load or that has no device.
var ErrUnavailable = errors.New("hmem: device runtime unavailable")
