// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only

package ofi

import (
	"fmt"
	"unsafe"
)

// Pull receives a rendezvous message directly into dst. It is
// asynchronous: it posts a tagged core receive of min(r.Size(), capacity of
// dst) bytes into dst and sends the sender a CTS naming that receive; the
// sender then sends exactly that many bytes. Poll reports
// onPullDone(r, n, err) when the data has landed (n < r.Size() means the
// message was truncated; the caller decides how to report that). dst must
// stay untouched until then; it may be C memory or Go memory (pinned until
// done) and may have at most MaxIOV() non-empty pieces.
//
// If Pull returns an error, r is consumed and no onPullDone follows; the
// sender is told (ErrTooManyIOV: its send fails with ErrRemote). Errors:
// ErrBadHandle, ErrClosed, ErrPeerGone, ErrTooManyIOV.
func (t *Transport) Pull(r *Rendezvous, dst [][]byte) error {
	return t.PullMR(r, dst, nil)
}

// PullMR is Pull with the core registrations of dst's pieces (as in
// SendMR).
func (t *Transport) PullMR(r *Rendezvous, dst [][]byte, mrs []*MR) error {
	if t.closed {
		return ErrClosed
	}
	if r == nil || r.t != t || (r.state != rvOwned && r.state != rvOffered) {
		return ErrBadHandle
	}
	p := r.peer
	if p.dead {
		t.putRndv(r)
		return fmt.Errorf("%w: %016x", ErrPeerGone, p.id)
	}
	var room uint64
	for _, b := range dst {
		room += uint64(len(b))
	}
	want := min(r.size, room)
	if k := pieces(dst, want); k > t.rxIOV {
		t.sendCTS(p, r.cookie, ctsReject, 0, 0)
		t.putRndv(r)
		return fmt.Errorf("%w: %d pieces, the core takes %d", ErrTooManyIOV, k, t.rxIOV)
	}
	r.state = rvPulling
	t.stats.Pulls++
	idx := t.alloc(kPull, false)
	if idx < 0 {
		t.deferred = append(t.deferred, deferredReq{r: r, dst: append([][]byte(nil), dst...),
			mrs: append([]*MR(nil), mrs...)})
		return nil
	}
	t.startPull(uint32(idx), r, dst, mrs, want)
	return nil
}

// pieces counts the non-empty pieces of dst covering its first want bytes.
func pieces(dst [][]byte, want uint64) int {
	k := 0
	for _, b := range dst {
		if want == 0 {
			break
		}
		if len(b) != 0 {
			k++
			want -= min(want, uint64(len(b)))
		}
	}
	return k
}

func (t *Transport) startPull(idx uint32, r *Rendezvous, dst [][]byte, mrs []*MR, want uint64) {
	o := &t.ops[idx]
	p := r.peer
	o.rv = r
	o.peer = p
	o.size = want
	o.phase = phPull
	t.wait(p)
	if r.split {
		t.startSplitPull(idx, r, dst, mrs, want)
		return
	}
	if want == 0 {
		// Nothing to receive: the CTS alone completes the sender.
		putCTS(t.k.hdr(idx), t.id, ctsGo, r.cookie, 0, 0)
		t.k.setIOV(idx, 0, t.k.hdrPtr(idx), hdrCTS)
		t.postOrQueue(idx, 1)
		t.finishPull(idx, 0, nil)
		return
	}
	t.setPullIOV(idx, dst, mrs, want)
	if r.read {
		// Read the data where the sender announced it; the CTS "read
		// done" follows the read (readDone).
		o.read, o.raddr, o.rkey = true, r.raddr, r.rkey
		t.postOrQueue(idx, 0)
		return
	}
	o.rtag = 1<<63 | t.nextTag&(1<<63-1)
	t.nextTag++
	putCTS(t.k.hdr(idx), t.id, ctsGo, r.cookie, o.rtag, want)
	t.k.setIOV(idx, 0, t.k.hdrPtr(idx), hdrCTS)
	gen := o.gen
	t.postOrQueue(idx, 0) // the receive first, so the data never arrives unexpected
	if o.kind == kPull && o.gen == gen && o.phase == phPull {
		t.postOrQueue(idx, 1)
	}
}

// Discard drops a rendezvous message without receiving it; the sender's
// onSendDone reports success. r is consumed.
func (t *Transport) Discard(r *Rendezvous) error {
	if t.closed {
		return ErrClosed
	}
	if r == nil || r.t != t || (r.state != rvOwned && r.state != rvOffered) {
		return ErrBadHandle
	}
	t.stats.Discards++
	if r.split {
		// The data is on its way regardless: receive it into the sink.
		r.discarded = true
		return t.Pull(r, [][]byte{unsafe.Slice((*byte)(t.sink), t.cfg.SplitMax)})
	}
	t.sendCTS(r.peer, r.cookie, ctsDiscard, 0, 0)
	t.putRndv(r)
	return nil
}

// runDeferred starts Pulls and CTSs that found no free slot.
func (t *Transport) runDeferred() {
	k := 0
	for k < len(t.deferred) && len(t.free) != 0 {
		d := t.deferred[k]
		t.deferred[k] = deferredReq{}
		k++
		if d.r == nil {
			t.sendCTS(d.peer, d.cookie, d.status, 0, 0)
			continue
		}
		r := d.r
		if r.peer.dead {
			t.pullDone = append(t.pullDone, pullEvt{r, 0, fmt.Errorf("%w: %016x", ErrPeerGone, r.peer.id)})
			continue
		}
		var room uint64
		for _, b := range d.dst {
			room += uint64(len(b))
		}
		idx := t.alloc(kPull, false)
		t.startPull(uint32(idx), r, d.dst, d.mrs, min(r.size, room))
	}
	n := copy(t.deferred, t.deferred[k:])
	clear(t.deferred[n:])
	t.deferred = t.deferred[:n]
}

func (t *Transport) getRndv() *Rendezvous {
	if n := len(t.rfree); n > 0 {
		r := t.rfree[n-1]
		t.rfree[n-1] = nil
		t.rfree = t.rfree[:n-1]
		return r
	}
	return &Rendezvous{t: t}
}

func (t *Transport) putRndv(r *Rendezvous) {
	*r = Rendezvous{t: t}
	t.rfree = append(t.rfree, r)
}

// setPullIOV points op idx's iov[1:] at the first want bytes of dst (with
// their core registrations), pinning Go memory, and sets niov.
func (t *Transport) setPullIOV(idx uint32, dst [][]byte, mrs []*MR, want uint64) {
	o := &t.ops[idx]
	left := want
	k := 0
	for i, b := range dst {
		if left == 0 {
			break
		}
		if len(b) == 0 {
			continue
		}
		l := min(uint64(len(b)), left)
		k++
		t.k.setIOV(idx, k, o.pinBuf(b), int(l))
		if i < len(mrs) && mrs[i] != nil {
			t.k.setDesc(idx, k, mrs[i].Desc())
		}
		left -= l
	}
	o.niov = k
}
