// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only

package ofi

import (
	"fmt"
	"unsafe"

	"github.com/lnx-go/lnx-go/internal/fi"
)

// Tagged eager messages. A payload above EagerMax (lnx's header plus the
// payload would exceed the core's eager limit) but within Config.SplitMax
// (the core's eager limit: rxm's 16 KiB) goes as one tagged core message
// with no wire header: the tag carries the sequence number, the caller's
// flags and CQ data (when they fit, teFits), and the core's CQ data the
// caller's tag (wire.go). The core sends it eagerly, as it would the
// application's own message of that size, instead of a header and a data
// message (split, tp_split.go) or a rendezvous.
//
// Each receiver keeps teN tagged receives of SplitMax bytes posted per
// peer it has connected to (teBufs, or teBufsMax over a core whose inject
// size is within lnx's header of the eager limit, see teCount), directed at that peer (so the completion
// names the sender) and matching only the tagged eager class of tags.
// A sender uses the form only towards a peer it has heard from: that peer
// has connected to it, and so has posted (or, short of operation slots,
// will post) receives for it; a message that arrives before one is posted
// waits in the core like any unexpected message. Arrivals join the
// sender's other messages in sequence order and are delivered like eager
// ones (Arrival.Eager points into the receive buffer until it is
// reposted); they take and return credits like them.
//
// Both sides decide to use the form from their core (cq_data_size >= 8)
// and Config.NoTaggedEager, so all transports of a job must agree on the
// latter.

// teBufs is the number of tagged eager receives posted per peer where
// tagged eager messages are only the payloads above EagerMax (rare).
const teBufs = 2

// teBufsMax is the number posted per peer over a core that injects a
// payload alone but not behind lnx's header below the eager limit
// (libfabric shm: 4 KiB payloads, tp_send.go's fitsAlone): those go as
// tagged eager messages, and a window of them (fi_bench's 64, up to the
// credit window) would otherwise wait in the core's unexpected queue and
// be copied twice. 16 receives of SplitMax bytes: 256 KiB of C memory and
// 16 operation slots per peer instead of 32 KiB and 2.
const teBufsMax = 16

// teCount is the number of tagged eager receives t posts per peer.
func teCount(inject, eagerMax, splitMax int) int {
	if inject > hdrEager && inject-hdrEager < eagerMax && inject <= splitMax {
		return teBufsMax
	}
	return teBufs
}

// shmTagBug says whether d is libfabric's shm from before 2.0. libfabric
// 1.17's shm (its own shared receive context) matches a tagged receive
// against the messages waiting unexpected under the ignore bits stored
// with each waiting message (stale from the entry's last use, 0 when
// fresh) instead of the receive's own: smr_match_tagged on its
// unexpected queue. A tagged eager message that waited unexpected was
// then not taken by the masked receive posted for it, or one posted for
// an earlier message took it, and the sender's window stalled for good
// (tests/c/fishm_tagged_window shows it without lnx); an entry's stale
// mask could as well let an exact receive take another message. Over such
// a core 16 KiB payloads go split: their receives name the exact tag with
// no ignore bits, as every other receive lnx posts there, so every entry's
// mask is 0 and that matching is exact. shm later moved onto libfabric's util_srx
// (ofiwg/libfabric#8907), which matches under the receive's ignore bits;
// 2.1's shm passes the reproduction, and releases between 1.17 and 2.0
// are not tested, so they keep the split form. Both ends of a link over
// shm run on one node, with one libfabric, so they agree.
func shmTagBug(d *Domain) bool {
	return d.provName() == "shm" && RuntimeVersion() < fi.V2_0
}

// teOK says whether a send of size bytes with header h to p goes as a
// tagged eager message.
func (t *Transport) teOK(p *Peer, h Hdr, size uint64) bool {
	return t.te && p.heardFrom && size <= uint64(t.cfg.SplitMax) && teFits(h)
}

// postTE posts p's tagged eager receives (those missing), or queues p
// until operation slots are free.
func (t *Transport) postTE(p *Peer) {
	if !t.te || !p.hasAddr || p.dead {
		return
	}
	for p.teOps < t.teN {
		idx := t.alloc(kTE, false)
		if idx < 0 {
			t.teNeed = append(t.teNeed, p)
			return
		}
		o := &t.ops[idx]
		o.heap = cmalloc(t.cfg.SplitMax)
		if o.heap == nil {
			t.freeSlot(uint32(idx))
			t.teNeed = append(t.teNeed, p)
			return
		}
		o.peer = p
		p.teOps++
		for j := range p.teSlot {
			if p.teSlot[j] == 0 {
				p.teSlot[j] = uint32(idx) + 1
				break
			}
		}
		t.postOrQueue(uint32(idx), 0)
	}
}

// runTENeed posts the receives that found no free slot before.
func (t *Transport) runTENeed() {
	q := t.teNeed
	t.teNeed = nil
	for _, p := range q {
		if p.teOps < t.teN {
			t.postTE(p)
		}
	}
}

// dropTE retires a tagged eager receive (its peer is gone, or the
// transport closes) once the core no longer holds it.
func (t *Transport) dropTE(idx uint32) {
	o := &t.ops[idx]
	if o.phase == phDone {
		return
	}
	o.phase = phDone
	o.rx = rxInfo{}
	o.peer.teOps--
	for j, v := range o.peer.teSlot {
		if v == idx+1 {
			o.peer.teSlot[j] = 0
		}
	}
	t.maybeFree(idx)
}

// sendTE sends one tagged eager message. One that fits the core's inject
// size goes with fi_tinjectdata (done: no completion follows), straight
// from a single piece, else staged in t.scratch.
func (t *Transport) sendTE(p *Peer, h Hdr, iov [][]byte, size uint64, pieces int, sendID uint64) (done bool, err error) {
	if size <= uint64(t.inject) && size <= uint64(t.scratchN) {
		return true, t.injectTE(p, h, iov, size, pieces)
	}
	idx := t.alloc(kEager, true)
	if idx < 0 {
		return false, ErrAgain
	}
	uidx := uint32(idx)
	o := &t.ops[idx]
	n := 0
	if pieces <= t.txIOV {
		for _, b := range iov {
			if len(b) != 0 {
				n++
				t.k.setIOV(uidx, n, o.pinBuf(b), len(b))
				t.k.setDesc(uidx, n, nil)
			}
		}
	} else {
		// More pieces than the core takes: one staged copy.
		o.heap = cmalloc(int(size))
		if o.heap == nil {
			t.freeSlot(uidx)
			return false, ErrAgain
		}
		b := unsafe.Slice((*byte)(o.heap), int(size))
		off := 0
		for _, x := range iov {
			off += copy(b[off:], x)
		}
		n = 1
		t.k.setIOV(uidx, 1, o.heap, int(size))
		t.k.setDesc(uidx, 1, nil)
	}
	o.niov = n
	if ret := t.k.tsenddata(uidx, 0, 1, n, p.fiAddr, teTag(h, p.txSeq), h.Tag); ret != 0 {
		o.unpin()
		t.freeSlot(uidx)
		return false, t.sendFailed(p, ret)
	}
	o.pending = 1
	o.peer = p
	o.sendID = sendID
	t.wait(p)
	p.txSeq++
	p.eagainSince = 0
	p.active = true
	t.stats.TaggedEager++
	return false, nil
}

// injectTE sends a tagged eager message with fi_tinjectdata: the core has
// copied the payload when it returns.
func (t *Transport) injectTE(p *Peer, h Hdr, iov [][]byte, size uint64, pieces int) error {
	var buf unsafe.Pointer
	switch {
	case pieces == 1:
		for _, b := range iov {
			if len(b) != 0 {
				// Go or C memory, read during the call only.
				buf = unsafe.Pointer(unsafe.SliceData(b))
			}
		}
	case pieces > 1:
		b := unsafe.Slice((*byte)(t.scratch), int(size))
		off := 0
		for _, x := range iov {
			off += copy(b[off:], x)
		}
		buf = t.scratch
	}
	if ret := t.k.tinjectdata(buf, int(size), p.fiAddr, teTag(h, p.txSeq), h.Tag); ret != 0 {
		return t.sendFailed(p, ret)
	}
	p.txSeq++
	p.eagainSince = 0
	p.active = true
	t.stats.TaggedEager++
	t.stats.TaggedInjected++
	return nil
}

// onTE handles the completion of a tagged eager receive.
func (t *Transport) onTE(idx uint32, errno, provErr int, n, tag, data uint64) {
	o := &t.ops[idx]
	p := o.peer
	if errno != 0 {
		if errno == cECANCELED || t.closed || p.dead {
			t.dropTE(idx)
			return
		}
		t.report(p.id, coreErr("tagged eager receive", errno, provErr))
		t.coreFailure(p, errno, provErr)
		t.repost(idx)
		return
	}
	h, seq, ok := teHdr(tag, data)
	if !ok || n > uint64(t.cfg.SplitMax) {
		t.malformed(p.id, fmt.Sprintf("tagged eager message of %d bytes, tag %#x", n, tag))
		t.repost(idx) // its sequence number is unknown: nothing to hold back
		return
	}
	t.heard(p)
	p.heardFrom = true
	o.rx = rxInfo{kind: kindEager, peer: p, hdr: h, size: n, plen: int(n)}
	t.sequence(p, idx, seq)
}
