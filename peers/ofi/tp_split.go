// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only

package ofi

// Split messages. rxm sends a message of up to its eager limit (16 KiB by
// default) in one go, and anything larger by its own rendezvous, which
// costs about three times as much on tcp. lnx's 40-byte header pushes
// payloads just under that limit over it: a 16 KiB MPI message would go
// by rendezvous where rxm alone sends it eagerly. Such a payload goes as
// one tagged eager message where it can (tp_tagged.go); otherwise a
// payload larger than EagerMax but at most Config.SplitMax goes as a
// header (sequenced like an RTS, carrying a tag) and, at the same time,
// a tagged core message with the data. The receiver's core holds the data like any unexpected eager
// message; Pull posts a tagged receive for it straight into the caller's
// buffers (the core copies from its own buffer, as for its eager
// messages). There is no CTS: the send completes when the core has sent
// both. A smaller receive buffer gets the first bytes (the core reports
// FI_ETRUNC, which ends the pull with the bytes that fit), and Discard
// receives the data into a sink, so that nothing stays in the core.
//
// As the data has left the sender when the send completes, a sender that
// closes or dies afterwards takes nothing with it; one that dies before
// its data arrives leaves a pull that liveness fails (ErrPeerGone).

// startSplitPull posts the tagged receive of a split message's data.
func (t *Transport) startSplitPull(idx uint32, r *Rendezvous, dst [][]byte, mrs []*MR, want uint64) {
	o := &t.ops[idx]
	t.setPullIOV(idx, dst, mrs, want)
	o.split = true
	o.rtag = r.rtag
	t.postOrQueue(idx, 0)
}
