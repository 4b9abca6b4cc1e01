// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only

package shm

// storeRelease stores v to *p with release semantics with respect to the
// program's earlier loads and stores. On amd64 (TSO) every store is a
// release and the Go compiler keeps stores in program order and after
// earlier (atomic) loads, so a plain MOV suffices; this avoids the XCHG
// (a full fence) that atomic.StoreUint64 compiles to. The location is in
// memory shared with other processes, outside the Go memory model; readers
// use atomic loads.
func storeRelease(p *uint64, v uint64) { *p = v }
