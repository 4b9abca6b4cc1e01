// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only

// Package ofi is lnx's client side of libfabric: it opens the core
// providers that a link names ("tcp;ofi_rxm", "cxi", ...) through the public
// libfabric API and converts between C struct fi_info and fi.Info. It is the
// only package besides capi that uses cgo.
//
// # Transport
//
// Transport carries lnx messages to peers on other nodes through a core
// provider that has no peer API (libfabric 1.17's tcp;ofi_rxm). Its API
// mirrors package shm so that lnx drives both the same way, and like shm it
// moves messages only: matching stays in lnx. Poll delivers an Arrival per
// inbound message; an eager payload is handed over in place, a large
// message as a Rendezvous handle that lnx later passes to Pull (receive
// into the buffers it chose) or Discard. Large payloads go from the
// sender's buffers to the receiver's with one core tagged transfer (rxm's
// own rendezvous for big sizes), never through a bounce buffer of ours.
//
// Each Transport owns one core RDM endpoint with its own AV (FI_AV_TABLE)
// and a FI_CQ_FORMAT_TAGGED CQ. Everything the core is given is C memory:
// a table of operation slots (two fi_context2, an iovec array and a wire
// header each; a completion's op_context maps back to slot and context), the
// bounce buffers and the completion batch. User buffers may be C memory
// (lnx passes the application's) or Go memory, which is pinned with a
// runtime.Pinner while the core holds its address.
//
// # Addresses
//
// Addr is a blob: version byte, credit window byte, core name length (uint16),
// the endpoint's EagerMax (uint32), its random 64-bit id and the core
// endpoint's fi_getname bytes. Connect validates it (length, version,
// non-zero id, name length equal to this core's address length) and inserts
// the name into the AV; bad blobs return ErrBadAddr. Arrivals carry Src =
// the sender's id (AddrID of its blob), which lnx maps to its own fi_addr.
//
// # Protocol
//
// The control path is untagged. Each Transport keeps Config.RecvPool
// (default 64) receives posted, each of EagerMax plus header bytes, and
// re-posts a buffer once its message has been delivered. All control
// messages start with version, kind, a 32-bit word (the caller's flags or a
// status) and the sender's id; the layouts are in wire.go.
//
//   - Eager (payload <= Peer.EagerMax, the smaller of both sides' EagerMax;
//     default 16320 so that header plus payload stay within rxm's 16 KiB
//     eager limit): one core send of a 40-byte header (flags, id, sequence
//     number, tag, cq data) followed by the payload, sent with fi_sendv
//     straight from the caller's pieces (header + up to iov_limit-1 pieces;
//     more pieces are staged into C memory). Send returns done=false and
//     Poll reports onSendDone when the core send completes. If header and
//     payload fit the core's inject size the message goes with fi_inject
//     and Send returns done=true with no onSendDone. GetInfo asks the core
//     for WantInject (a whole tagged eager payload, DefaultSplitMax; else
//     the header and a whole eager payload; else the header and 4096
//     bytes); rxm grants the first (its own default is 64 bytes),
//     libfabric's shm keeps its 4096.
//   - RTS (larger messages): the eager header plus size and a cookie naming
//     the sender's slot, plus the sender's address blob (so a receiver that
//     never Connected can answer). The sender keeps the user buffers.
//   - CTS: when lnx calls Pull(r, dst), the receiver posts a tagged receive
//     (fi_trecvv, directed at the sender's fi_addr) of exactly
//     min(size, capacity of dst) bytes into dst, with a fresh rendezvous tag
//     (top bit set, 63-bit counter), then sends a CTS carrying the cookie,
//     the tag and that length. On the CTS the sender trims its iov to the
//     length and posts one fi_tsendv of the user pieces with that tag. The
//     receive completion reports onPullDone(r, n, err) (n < r.Size() means
//     truncation); the send completion reports onSendDone. A zero-length
//     grant completes both sides without data. Discard sends a CTS with
//     status "discard" (the sender completes successfully); a Pull that
//     cannot be served (too many pieces) sends "reject" (ErrRemote).
//   - tagged eager (payload above EagerMax but within Config.SplitMax,
//     rxm's 16 KiB eager limit, to a peer heard from, where the core has
//     8 bytes of CQ data): one tagged core message of the payload alone,
//     the header in the core's tag (class bits, sequence number, the
//     caller's flags and up to 22 bits of its CQ data) and CQ data (the
//     caller's tag), into receives each transport keeps posted per peer,
//     directed at it (tp_tagged.go). So a payload that fits the core's
//     eager limit goes as one eager core message, as it would without
//     lnx. One that fits the core's inject size goes with
//     fi_tinjectdata straight from the caller's piece, and Send returns
//     done=true with no onSendDone. A payload that the core injects by
//     itself but not behind the eager header (libfabric shm's 4096-byte
//     inject: 4057-4096 bytes) goes this way too, below EagerMax; over
//     such a core a transport keeps 16 receives per peer instead of 2,
//     for a window of them.
//   - split (the same sizes where tagged eager does not apply: a peer not
//     heard from yet, CQ data or flags too wide for the tag,
//     Config.NoTaggedEager): the RTS header carries a tag, and the data
//     goes at once as a tagged core message with that tag, which the
//     receiver's core holds until Pull posts the tagged receive; no CTS
//     (tp_split.go).
//   - RTS-read (a larger rendezvous send of one piece, where the core has FI_RMA
//     reads and Config.NoRead is not set): the RTS also carries the
//     piece's remote address and key (the caller's core registration, or
//     one the transport makes for the send). Pull reads the data straight
//     into dst with fi_readv and answers with a CTS "read done", which
//     completes the send: one round trip fewer than RTS, CTS and the
//     core's own rendezvous (tp_read.go). A read error fails the pull and
//     rejects the send.
//   - PING: a liveness probe (below). BYE: sent by Close.
//   - CREDIT and HELLO: flow control (below).
//
// # Flow control
//
// rxm 1.17 takes every message into buffers of its own whether or not a
// receive is posted, so a receiver that stops reposting does not push back
// on its senders. Each transport therefore grants every sender a window of
// Config.Credits eager and RTS messages, advertised in byte 1 of its
// address. A sender spends one credit per message and gets ErrAgain when it
// has none left (the peer then counts as one it waits on, so a dead
// receiver is detected as below). The receiver returns credits as messages
// go to onArrival: in bytes 2-3 of its next message to that sender, or in
// a CREDIT message once half a window is owed. A sender that runs out
// before it ever got credits back sends HELLO (its address) once, so that a
// receiver that never Connected to it can answer. Control messages take no
// credits. A receiver whose owner stops taking messages thus holds at most
// one window per sender in the core (tp_credit.go).
//
// The core keeps send-after-send order for one peer's untagged messages,
// but its completion order is unspecified, so eager and RTS messages carry
// a per-(sender, receiver) sequence number and the receiver delivers them
// in that order (one that arrives early waits in its bounce buffer;
// Stats.Reordered counts them). A message that must be dropped (malformed)
// keeps its place so that later ones still flow. If onArrival returns false,
// delivery stops and resumes there on a later Poll; the undelivered
// messages keep their bounce buffers out of the pool and their senders'
// credits unreturned, which holds the senders back.
//
// The core's -FI_EAGAIN on a user Send is returned as ErrAgain. Internal
// posts (receive re-posts, CTS, data sends) that get -FI_EAGAIN are queued
// and retried by Poll, in order within one operation (a pull's receive
// always goes before its CTS, so the data never arrives unexpected) but
// independently across operations.
//
// # Failures
//
// A core CQ error entry (fi_cq_readerr) completes the operation it names:
// a send with an error, a pull's receive by failing the pull (its CTS
// failing cancels the receive and fails the pull). Connection errors
// (ECONNRESET, ENOTCONN, ECANCELED with such a provider errno, ...) also
// declare the peer gone: everything outstanding with it fails with
// ErrPeerGone, pulls after their receive has been cancelled, and later
// Sends fail at once.
//
// rxm 1.17 does not report most failures by itself: when a peer closes or
// dies, a posted receive from it, or a rendezvous send waiting for it, stays
// pending for ever, and every new send to it returns -FI_EAGAIN (rxm keeps
// reconnecting and is refused). So the transport watches the peers it has
// operations outstanding with: one it has not heard from (any message or
// completion) for Config.ProbeInterval gets a PING; a peer that the core has
// refused every send to (probes or user sends) for Config.PeerTimeout while
// nothing was heard from it is declared gone, unless it is merely slow:
// where core addresses are IP socket addresses, the transport first opens a
// TCP connection to the peer's listening address (tp_alive.go); the
// peer's kernel accepts it while the process exists, even stopped, and the
// peer then gets another PeerTimeout. Close sends BYE to every peer
// it talked to, which makes them fail their operations with it at once. A
// killed process is therefore detected after about PeerTimeout (default
// 10 s); a peer whose host vanished without a TCP reset may not be detected
// at all while the core believes the connection is up.
//
// libfabric 1.17's rxm crashes in fi_close of an endpoint that has a
// rendezvous receive in progress (it reads a flushed completion with a NULL
// context), and likewise under an RMA read in flight. Close therefore cancels posted pull receives and waits up to
// Config.CloseTimeout for those already matched; if some remain it leaves
// the core endpoint (and the memory it may write) open instead of crashing,
// and reports an error.
//
// # Lending to C
//
// Lend hands the transport to lnx's C layer between two calls into Go
// (tp_lend.go, capi/include/lnx_tp_lend.h, tp.c): C may read the core CQ,
// take eager and tagged eager messages of one peer in that peer's order
// (reposting their bounce buffers and tagged eager receives), fi_inject
// eager messages to it and fi_tinjectdata tagged eager ones (where Go
// would send that form and the core injects it), with the sequence
// numbers and credits Go lent; Reclaim takes the books back. What C read and did not take is kept for
// the next Poll, which delivers it before reading the core again.
//
// # Concurrency
//
// A Transport is not safe for concurrent use; the caller serializes calls.
// Distinct Transports, in one process or several, are independent. Poll
// callbacks may call Send, Pull, Discard and Connect, but not Poll or Close.
package ofi
