// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only

//go:build !amd64

package lnx

import "sync/atomic"

// storeRelease32 stores v to *p with release semantics (see
// release_amd64.go).
func storeRelease32(p *uint32, v uint32) { atomic.StoreUint32(p, v) }
