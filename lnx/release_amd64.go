// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only

package lnx

// storeRelease32 stores v to *p, a word C reads without a lock (see
// gate.go), with release semantics. On amd64 (TSO) every store is a
// release and the Go compiler keeps stores in program order, so a plain
// MOV suffices and avoids the XCHG that atomic.StoreUint32 compiles to
// (shm/release_amd64.go relies on the same).
func storeRelease32(p *uint32, v uint32) { *p = v }
