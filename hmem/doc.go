// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only

// Package hmem is lnx's device-memory support: it tells device memory
// from host memory, and moves data in and out of device memory with the
// device runtimes' own copy functions, so that lnx never touches device
// memory with the CPU (on a real GPU that faults, or silently reads
// garbage through a BAR mapping).
//
// The runtimes are hmem/cuda (the CUDA driver API, libcuda.so.1) and
// hmem/rocm (HIP, libamdhip64.so). Both are loaded with dlopen on first
// use, so lnx has no link-time dependency on either and builds and runs on
// machines that have neither; a runtime whose library, entry points or
// devices are missing is unavailable and says why (Runtime.Reason).
// FI_LNX_CUDA_LIB and FI_LNX_ROCM_LIB name other libraries to load ("none"
// disables one); the tests load the emulated device of hmem/emu/emu.c that
// way.
//
// Iface values are libfabric's enum fi_hmem_iface. Classify takes the
// iface of a memory registration as a hint: with one, only that runtime
// is asked; without one (System or Unknown) each available runtime is.
//
// IPC: Runtime.IPCHandle exports the whole allocation holding a pointer,
// and the pointer's offset in it; a peer process passes the handle to
// IPCOpen, adds the offset to the base it returns, and calls IPCClose with
// that base when done.
package hmem
