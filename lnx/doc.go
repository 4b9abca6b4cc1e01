// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only

// Package lnx implements the linking provider's objects and policy: getinfo
// over the linked cores, and the fabric, domain, endpoint, AV, CQ, counter and
// MR objects that capi exposes to C. It decides which core reaches which
// peer; matching lives in package peers, transports in shm and peers/ofi.
package lnx
