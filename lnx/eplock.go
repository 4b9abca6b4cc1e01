// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only

package lnx

import "sync"

// epGuard is an endpoint's lock. While an endpoint is armed, C owns its
// shm rings, its armed receive and its lent network transport (see
// docs/design.md, "Lending and taking back"); Go's view of them is whole
// only after taking them back. The lock therefore has no Lock method of
// its own: the Endpoint methods below are the only ways to take it, each
// saying what it takes back, and TestEndpointGuardOnlyHere checks that no
// other file touches the field.
type epGuard struct{ mu sync.Mutex }

// lock takes the endpoint for a call into Go, and takes back from C what
// it was lent: whatever runs under it sees Go's rings and queues whole.
func (e *Endpoint) lock() {
	e.guard.mu.Lock()
	e.disarm()
}

// lockCollecting is lock for a CQ read that C's gate let through: a
// completion C finished for the armed receive goes to q (being read now,
// its lock held by the reader) as the endpoint is taken back.
func (e *Endpoint) lockCollecting(q *CQ) {
	e.guard.mu.Lock()
	e.collecting = q
	e.disarm()
}

// lockToArm takes the endpoint without taking anything back. Only two
// callers may: armAfterCQRead, which arms only when nothing is armed
// (arm returns false otherwise) and so never reads state C holds; and
// SetFast, which runs before anything can be lent.
func (e *Endpoint) lockToArm() {
	e.guard.mu.Lock()
}

// unlock releases the endpoint; what is armed stays lent to C.
func (e *Endpoint) unlock() {
	e.guard.mu.Unlock()
}
