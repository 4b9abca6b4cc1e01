// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only

package ofi

import "fmt"

// Native one-sided operations: lnx's writes and reads toward a network
// peer, posted on the core endpoint (fi_writev, fi_readv) with the remote
// address and the core key the peer registered its memory under. They
// complete like sends: Poll reports onSendDone(sendID, err) when the core
// completion comes (for a write, the core's transmit completion; for a
// read, the data has landed).

// CanRMA reports whether the core carries one-sided writes and reads, and
// whether its remote addresses are virtual (FI_MR_VIRT_ADDR) rather than
// offsets into the registration.
func (t *Transport) CanRMA() (write, read, virt bool) {
	return t.canWrite, t.canReadRMA, t.virt
}

// RMA posts a write of iov to (raddr, rkey) at p (write), or a read from
// there into iov. mrs[i] is the core registration of iov[i] (nil: none).
// The buffers must stay untouched until onSendDone(sendID, err); Go memory
// is pinned meanwhile. At most MaxIOV() non-empty pieces. Errors:
// ErrClosed, ErrBadHandle, ErrPeerGone, ErrNoAddr, ErrAgain (no operation
// slot: Poll and retry), ErrTooManyIOV.
func (t *Transport) RMA(p *Peer, write bool, iov [][]byte, mrs []*MR, raddr, rkey, sendID uint64) error {
	if t.closed {
		return ErrClosed
	}
	if p == nil || p.t != t {
		return ErrBadHandle
	}
	if p.dead {
		return fmt.Errorf("%w: %016x", ErrPeerGone, p.id)
	}
	if !p.hasAddr {
		return ErrNoAddr
	}
	if (write && !t.canWrite) || (!write && !t.canReadRMA) {
		return ErrBadHandle
	}
	lim := t.rxIOV
	if write {
		lim = t.txIOV
	}
	n := 0
	for _, b := range iov {
		if len(b) != 0 {
			n++
		}
	}
	if n > lim {
		return fmt.Errorf("%w: %d pieces, the core takes %d", ErrTooManyIOV, n, lim)
	}
	idx := t.alloc(kRMA, true)
	if idx < 0 {
		return ErrAgain
	}
	uidx := uint32(idx)
	o := &t.ops[idx]
	o.peer, o.sendID, o.read, o.raddr, o.rkey = p, sendID, !write, raddr, rkey
	o.phase = phData
	k := 0
	for i, b := range iov {
		if len(b) == 0 {
			continue
		}
		k++
		t.k.setIOV(uidx, k, o.pinBuf(b), len(b))
		if i < len(mrs) && mrs[i] != nil {
			t.k.setDesc(uidx, k, mrs[i].Desc())
		}
	}
	o.niov = k
	t.wait(p)
	t.stats.RMAOps++
	t.postOrQueue(uidx, 0)
	return nil
}

// postRMA issues the core operation of a native one-sided op.
func (t *Transport) postRMA(o *op, idx uint32) int {
	if o.read {
		return t.k.readv(idx, 0, 1, o.niov, o.peer.fiAddr, o.raddr, o.rkey)
	}
	return t.k.writev(idx, 0, 1, o.niov, o.peer.fiAddr, o.raddr, o.rkey)
}

// onRMA handles the core completion of a native one-sided op.
func (t *Transport) onRMA(idx uint32, errno, provErr int) {
	o := &t.ops[idx]
	p := o.peer
	if errno != 0 {
		what := "one-sided write"
		if o.read {
			what = "one-sided read"
		}
		t.finishSend(idx, coreErr(what, errno, provErr))
		t.coreFailure(p, errno, provErr)
		return
	}
	t.heard(p)
	t.finishSend(idx, nil)
}
