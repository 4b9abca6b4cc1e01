// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only

//go:build !cgo

package cuda

// Without cgo no library can be loaded: every Runtime is unavailable, and
// the methods below are never reached past the availability check.

func (r *Runtime) load() { r.Why = "cuda: built without cgo" }

func (r *Runtime) classify(uintptr) (int, bool)               { return 0, false }
func (r *Runtime) copyToHost([]byte, uintptr) error           { return r.Unavailable() }
func (r *Runtime) copyFromHost(uintptr, []byte) error         { return r.Unavailable() }
func (r *Runtime) copyDevice(uintptr, uintptr, uint64) error  { return r.Unavailable() }
func (r *Runtime) addressRange(uintptr) (uintptr, int, error) { return 0, 0, r.Unavailable() }
func (r *Runtime) ipcHandle(uintptr) ([]byte, uintptr, error) { return nil, 0, r.Unavailable() }
func (r *Runtime) ipcOpen([]byte, int) (uintptr, int, error)  { return 0, 0, r.Unavailable() }
func (r *Runtime) ipcClose(uintptr, int) error                { return r.Unavailable() }
func (r *Runtime) alloc(int, int) (uintptr, error)            { return 0, r.Unavailable() }
func (r *Runtime) free(uintptr) error                         { return r.Unavailable() }
func (r *Runtime) pin([]byte) error                           { return r.Unavailable() }
func (r *Runtime) unpin([]byte) error                         { return r.Unavailable() }
