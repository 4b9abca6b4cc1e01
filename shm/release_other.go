// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only

//go:build !amd64

package shm

import "sync/atomic"

// storeRelease stores v to *p with release semantics (see release_amd64.go).
func storeRelease(p *uint64, v uint64) { atomic.StoreUint64(p, v) }
