// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only

package ofi

import "github.com/lnx-go/lnx-go/internal/fi"

// Errors of the Transport. Each carries a libfabric code, so fi.Code maps
// it (and anything wrapping it) to the value a C caller should see.
var (
	// ErrAgain means a transient lack of resources: the core returned
	// -FI_EAGAIN (its queues are full, or the connection to the peer is
	// still being set up), or too many operations are outstanding. Poll and
	// retry.
	ErrAgain = fi.Wrap(fi.EAGAIN, "ofi: resource temporarily unavailable")

	// ErrPeerGone means the peer closed its transport (it said goodbye), a
	// core operation towards it failed with a connection error, or it has
	// been unreachable for Config.PeerTimeout.
	ErrPeerGone = fi.Wrap(fi.ENOTCONN, "ofi: peer is gone")

	// ErrBadAddr means an address blob is malformed, of another version, or
	// names a core address of another format.
	ErrBadAddr = fi.Wrap(fi.EINVAL, "ofi: invalid address")

	// ErrBadHandle means a Peer or Rendezvous is nil, belongs to another
	// Transport, or (Rendezvous) was already consumed.
	ErrBadHandle = fi.Wrap(fi.EINVAL, "ofi: invalid handle")

	// ErrNoAddr means a Peer is known only from messages it sent; Connect
	// to its address before sending to it.
	ErrNoAddr = fi.Wrap(fi.EHOSTUNREACH, "ofi: peer address unknown")

	// ErrTooManyIOV means a rendezvous send or a Pull has more non-empty
	// pieces than the core accepts in one operation (Transport.MaxIOV).
	ErrTooManyIOV = fi.Wrap(fi.EINVAL, "ofi: too many iov entries")

	// ErrBadBuffer means a send's buffer is not mapped over its whole
	// length (tp_mapped.go); nothing was sent.
	ErrBadBuffer = fi.Wrap(fi.EFAULT, "ofi: send buffer not mapped over its length")

	// ErrRemote means the other side refused the transfer.
	ErrRemote = fi.Wrap(fi.EIO, "ofi: transfer refused by peer")

	// ErrClosed means the Transport was closed.
	ErrClosed = fi.Wrap(fi.EOPBADSTATE, "ofi: transport closed")

	// ErrCorrupt is passed to Config.OnError for malformed or unexpected
	// control messages, which are dropped.
	ErrCorrupt = fi.Wrap(fi.EIO, "ofi: malformed message from peer")
)
