// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only

package shm

import (
	"errors"
	"fmt"
)

var (
	// ErrAgain means a transient lack of resources: the peer's inbound ring
	// is full, or too many rendezvous sends are outstanding to that peer.
	// Poll (so that acknowledgements are reaped and the receiver catches
	// up) and retry. A libfabric caller reports -FI_EAGAIN.
	ErrAgain = errors.New("shm: resource temporarily unavailable")

	// ErrNoRing means the peer has no free inbound ring for a new sender.
	// errors.Is(ErrNoRing, ErrAgain) is true: a ring may become free when
	// another sender disconnects.
	ErrNoRing = fmt.Errorf("shm: no free inbound ring at peer: %w", ErrAgain)

	// ErrPeerGone means the peer process died, or its endpoint (or the
	// channel to it) was closed.
	ErrPeerGone = errors.New("shm: peer is gone")

	// ErrBadAddr means an address blob passed to Connect is malformed or
	// does not name a live, matching region.
	ErrBadAddr = errors.New("shm: invalid address")

	// ErrForeignNS means Connect found the peer's region in our /dev/shm
	// but the peer in another PID namespace, where its pid (which process
	// liveness and process_vm_readv rely on) does not name it. It wraps
	// ErrBadAddr.
	ErrForeignNS = fmt.Errorf("%w: peer in another PID namespace", ErrBadAddr)

	// ErrCorrupt means a peer wrote a malformed record or control word into
	// shared memory. The peer's inbound ring is dropped.
	ErrCorrupt = errors.New("shm: corrupt data from peer")

	// ErrRemote means the other side failed the transfer: for a sender, the
	// receiver could not read its buffers or gave up; for a receiver, the
	// sender rejected a fallback copy request.
	ErrRemote = errors.New("shm: transfer failed at peer")

	// ErrStalled means a fallback copy made no progress within
	// Config.StallTimeout.
	ErrStalled = errors.New("shm: peer made no progress")

	// ErrTooManyIOV means a rendezvous send has more than MaxIOV non-empty
	// pieces.
	ErrTooManyIOV = errors.New("shm: too many iov entries")

	// ErrBadHandle means a Rendezvous was nil, already consumed, or belongs
	// to another endpoint; or a Peer belongs to another endpoint.
	ErrBadHandle = errors.New("shm: invalid handle")

	// ErrBadBuffer means a piece of an eager send is not mapped over its
	// whole length (memmap); nothing was sent.
	ErrBadBuffer = errors.New("shm: send buffer not mapped over its length")

	// ErrClosed means the endpoint was closed.
	ErrClosed = errors.New("shm: endpoint closed")
)
