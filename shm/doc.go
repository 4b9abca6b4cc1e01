// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only

// Package shm is an intra-node message transport between processes (or
// endpoints within one process) over POSIX shared memory, in pure Go.
//
// It moves messages only; tag matching is the caller's job. Poll delivers an
// Arrival per inbound message and the caller decides where the data goes:
// an eager payload is handed over in place, a large message as a Rendezvous
// handle that the caller later passes to Pull (copy into its buffers) or
// Discard.
//
// # Regions and channels
//
// Every Endpoint creates one region, /dev/shm/lnx-<pid>-<16 hex> (mode
// 0600, unlinked by Close). Its pages are allocated with fallocate when it
// is created, so that a full /dev/shm is an ENOSPC from Open rather than a
// SIGBUS later, except for the bulk windows of the fallback copy, which a
// Pull allocates before first using one (ENOSPC from that Pull). The
// owner holds an OFD write lock on the file while the endpoint lives; Open
// removes regions of its user whose lock it can take. Liveness by lock,
// not by the pid in the name, holds across PID namespaces that share
// /dev/shm. The region holds a header page (magic, version, owner pid,
// random 64-bit endpoint id, geometry, a claim generation counter, the
// owner's PID namespace, open/closed state) followed by
// Config.Rings inbound channels. A channel is used by exactly one sending
// endpoint and consists of:
//
//   - a 512-byte control block: claim word (state | owner pid<<8, taken by
//     CAS), owner id, per-claim random salt, flags, the sender's address,
//     and the bulk-copy control words. Every group of words written by one
//     side sits in its own 64-byte cache line (the receiver's consumed
//     position, the sender's ack position, bulk request / fill / drain);
//   - an ack ring (256 entries of 32 bytes) written by the receiver and
//     read by the sender: the reverse direction of the channel;
//   - the forward ring (Config.RingBytes, a power of two) written by the
//     sender, read by the receiver;
//   - a bulk window (Config.BulkBytes) for the fallback copy.
//
// A sender claims a free channel in the receiver's region on its first
// Send (ErrNoRing when none is free), then bumps the receiver's claim
// generation. The receiver keeps a private list of claimed channels and
// rescans the claim words only when the generation changes, so an idle Poll
// with one peer costs two loads that hit in cache: the generation and the
// stamp of the next record. Disconnect/Close marks the channel closed; the
// receiver delivers what is left and returns it to the free pool. Channel
// positions are monotonic across sessions and each claim picks a new salt,
// so a released channel is reused without being cleared.
//
// Because acknowledgements travel on the channel's own ack ring, a receiver
// never needs a ring in the sender's region (or to map it at all) to
// complete a rendezvous, and acks are not held up by flow control on the
// data direction.
//
// Connect refuses (ErrForeignNS) a peer whose region says it lives in
// another PID namespace: its pid, which CMA and pidfd liveness rely on,
// names another process (or none) in ours.
//
// # Forward ring records
//
// Records are 64-byte aligned and variable length. A 48-byte header holds
// stamp, kind|iov count|internal flags|caller flags (32 bits, verbatim),
// tag, cq data, size and (rendezvous) a cookie naming the sender's send
// slot. An eager record carries its payload inline: a 1-byte message is one
// cache line. A rendezvous record carries up to MaxIOV {address, length}
// pairs of the sender's buffers. A record that would not fit before the end
// of the ring is preceded by a pad record. At least one 64-byte slot stays
// free, so a 4 KiB ring holds 63 small messages.
//
// The stamp is written last and equals ((pos ^ salt) | 1), where pos is the
// record's absolute position and salt the claim's random salt. The receiver
// spins on the stamp of the record at its head, so a message costs one
// cache-line transfer to the receiver and no separate tail counter.
// Anything else in that slot (an earlier lap, an earlier session, stale
// payload bytes) means "not written yet", and matches by accident with
// probability 2^-64. The receiver publishes its consumed position once per
// drained ring per Poll; the sender reads it only when its cached copy says
// the ring is full. On amd64 the stamp and head are published with plain
// stores: TSO makes every store a release, and it avoids the XCHG that
// atomic.StoreUint64 compiles to. Other architectures use atomic stores.
//
// The small-message path (Send of an eager message, Poll delivering it)
// makes no allocation, no system call and takes no lock.
//
// Lend hands the inbound rings to a caller that consumes eager records
// itself (lnx's C layer, for a receive it already knows the destination
// of), and rendezvous records too, pulling them with process_vm_readv and
// writing their acks (RingView), and Resync (ResyncAcks) takes them back
// with the positions it reached; Poll, Pull and Discard must not run in
// between.
//
// # Thresholds
//
// Messages of at most EagerMax bytes (default 4 KiB; the effective value
// towards a peer is the smaller of both endpoints' settings, see
// Peer.EagerMax) go eager and complete at once (Send returns done=true).
// Larger ones use rendezvous and complete through Poll's onSendDone. A
// sender keeps at most 255 rendezvous sends outstanding per peer; beyond
// that, or when the ring is full, Send returns ErrAgain.
//
// # Rendezvous
//
// Pull reads the sender's buffers with process_vm_readv (CMA) straight into
// the destination, then writes an ack into the channel's ack ring. The
// sender's Poll reaps it and reports SendDone. If CMA is disabled
// (Config.DisableCMA on either side) or not permitted (EPERM/ENOSYS, for
// instance Yama ptrace_scope), Pull falls back to a copy through the
// channel's bulk window. The receiver posts a request (cookie, length) in
// the control block. The sender, whenever it polls, copies the message in
// chunks into two alternating halves of the window (fill count), and Pull
// drains them (drain count). Pull spins until the copy is done and keeps
// serving its own endpoint's outbound fallback copies meanwhile, so two
// endpoints pulling from each other cannot deadlock. The fallback needs the
// sender to Poll during the Pull, so two endpoints driven by a single
// goroutine cannot use it with each other (an endpoint sending to itself
// can). A short destination truncates; it is still acknowledged as a
// success, and Pull returns the byte count. Discard acknowledges without
// copying.
//
// # Peer death and hostile peers
//
// Liveness is tracked with pidfds, which are immune to pid reuse and report
// an unreaped zombie as dead; kill(pid, 0) is the fallback. While
// rendezvous sends are outstanding, Poll checks their receivers about once
// a millisecond (time is read every 32 Polls) and fails the sends with
// ErrPeerGone if the receiver died, closed its endpoint or dropped the
// channel. A full ring towards a dead or closed receiver yields ErrPeerGone
// rather than ErrAgain forever. Pull from a dead sender fails with
// ErrPeerGone (ESRCH from process_vm_readv, or the liveness check inside
// the fallback loop; Config.StallTimeout additionally bounds a fallback
// copy from a live but unresponsive sender). Inbound channels of dead
// senders are drained and released by a rate-limited round-robin check in
// Poll.
//
// Everything read from shared memory is treated as hostile. Geometry is
// recomputed from validated header fields, positions are masked, and every
// record field is copied once and checked against the ring bounds and the
// limits (eager size, iov count, piece lengths, size = sum of pieces) before
// use. A malformed record drops the sender's channel: it is no longer read,
// Config.OnError is called with ErrCorrupt, and the sender eventually gets
// ErrPeerGone. Cookies in acks and bulk requests are validated against the
// sender's own table, and the sender writes only inside its mapping. Nothing
// panics or hangs on such input. Out of scope: a peer that truncates its
// region file (SIGBUS), since any process able to do so can also ptrace us.
//
// # Concurrency
//
// An Endpoint is not safe for concurrent use; the caller serializes calls.
// Distinct Endpoints, in one process or several, are independent. Poll
// callbacks may call Send, Pull, Discard and Connect, but not Poll,
// Disconnect or Close.
package shm
