// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only

package shm

import (
	"errors"
	"fmt"
	"runtime"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"
)

// maxCMABatch bounds one process_vm_readv call (the kernel caps a single
// transfer below 2 GiB anyway).
const maxCMABatch = 1 << 30

// Pull copies a rendezvous message into dst and acknowledges it to the
// sender, which then reports SendDone. It copies min(r.Size(), len(dst))
// bytes and returns that count; a short dst truncates the message (the
// caller compares n with r.Size()) and is still acknowledged as success.
//
// Pull reads the sender's memory with process_vm_readv (CMA). If CMA is
// disabled or not permitted it falls back to a copy through the ring's bulk
// window, which needs the sender to Poll meanwhile (from another thread or
// process); Pull spins until the copy completes, the sender dies or closes,
// or Config.StallTimeout passes. r is consumed whatever the outcome.
//
// Errors: ErrPeerGone (sender died or closed; nothing is acknowledged),
// ErrRemote (the sender's buffers could not be read, or it rejected the
// request), ErrStalled, ErrCorrupt, ErrBadHandle, ErrClosed.
func (e *Endpoint) Pull(r *Rendezvous, dst [][]byte) (n uint64, err error) {
	if e.closed {
		return 0, ErrClosed
	}
	if r == nil || r.e != e || !r.live {
		return 0, ErrBadHandle
	}
	ring := r.ring
	if ring.session != r.session || ring.state == ringIdle {
		e.putRndv(r)
		return 0, fmt.Errorf("%w: channel from %016x was released", ErrPeerGone, r.src)
	}
	var room uint64
	for _, b := range dst {
		room += uint64(len(b))
	}
	want := min(r.size, room)
	if want > 0 {
		cma := !e.cfg.DisableCMA && !r.noCMA && !ring.noCMA
		if cma {
			n, err = e.cmaPull(r, dst, want)
			if err != nil && n == 0 && cmaUnavailable(err) {
				ring.noCMA = true // not permitted towards this sender: stop trying
				cma, err = false, nil
			} else if err == nil {
				e.stats.CMAPulls++
			}
		}
		if !cma {
			e.stats.FallbackPulls++
			n, err = e.bulkPull(r, dst, want)
		}
	}
	status := uint64(ackOK)
	switch {
	case err == nil:
	case errors.Is(err, ErrPeerGone):
		if ring.session == r.session && ring.state == ringActive {
			ring.state = ringClosing
		}
		e.putRndv(r)
		return n, err
	case errors.Is(err, ErrStalled):
		status = ackAbort
	default:
		status = ackFault
	}
	if ring.session == r.session {
		e.writeAck(ring, r.cookie, status, n)
	}
	e.putRndv(r)
	return n, err
}

// CMA reports whether Pull would first try process_vm_readv for r (as a
// caller taking rendezvous records from lent rings may: RingView.CMA).
func (r *Rendezvous) CMA() bool {
	return r != nil && r.live && !r.noCMA && !r.ring.noCMA && !r.e.cfg.DisableCMA
}

// Discard acknowledges a rendezvous message without copying it (a
// discarded or cancelled receive); the sender's SendDone reports success.
func (e *Endpoint) Discard(r *Rendezvous) error {
	if e.closed {
		return ErrClosed
	}
	if r == nil || r.e != e || !r.live {
		return ErrBadHandle
	}
	if ring := r.ring; ring.session == r.session && ring.state != ringIdle {
		e.writeAck(ring, r.cookie, ackDiscard, 0)
	}
	e.putRndv(r)
	return nil
}

func (e *Endpoint) writeAck(r *inRing, cookie, status, n uint64) {
	if r.ackTail-atomic.LoadUint64(&r.ctl.ackHead) >= r.ackMask+1 {
		// Only a sender that ignores its own outstanding limit (or lies
		// about its ack head) gets here.
		e.stats.DroppedAcks++
		return
	}
	a := (*ackEnt)(unsafe.Add(r.ack, (r.ackTail&r.ackMask)*ackBytes))
	a.cookie = cookie
	a.status = status
	a.n = n
	atomic.StoreUint64(&a.stamp, r.ackTail+1)
	r.ackTail++
}

func cmaUnavailable(err error) bool {
	return errors.Is(err, unix.EPERM) || errors.Is(err, unix.ENOSYS) || errors.Is(err, unix.EACCES)
}

// cmaPull copies want bytes from the sender's iov into dst with
// process_vm_readv.
func (e *Endpoint) cmaPull(r *Rendezvous, dst [][]byte, want uint64) (uint64, error) {
	var done uint64
	di, doff := 0, 0 // local cursor
	ri, roff := 0, 0 // remote cursor
	for done < want {
		batch := min(want-done, maxCMABatch)
		// Local pieces, up to batch bytes.
		nl := 0
		var lsum uint64
		for i, o := di, doff; i < len(dst) && nl < len(e.liov) && lsum < batch; i, o = i+1, 0 {
			b := dst[i][o:]
			if len(b) == 0 {
				continue
			}
			l := min(uint64(len(b)), batch-lsum)
			e.liov[nl].Base = &b[0]
			e.liov[nl].SetLen(int(l))
			nl++
			lsum += l
		}
		// Remote pieces covering the same bytes.
		nr := 0
		var rsum uint64
		for i, o := ri, roff; i < r.niov && rsum < lsum; i, o = i+1, 0 {
			v := r.iov[i]
			l := min(uint64(v.Len-o), lsum-rsum)
			e.riov[nr] = unix.RemoteIovec{Base: v.Base + uintptr(o), Len: int(l)}
			nr++
			rsum += l
		}
		if rsum < lsum || nl == 0 {
			clear(e.liov[:nl])
			return done, fmt.Errorf("%w: rendezvous iov shorter than its size", ErrCorrupt)
		}
		k, err := unix.ProcessVMReadv(r.pid, e.liov[:nl], e.riov[:nr], 0)
		clear(e.liov[:nl])
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			if err == unix.ESRCH {
				return done, fmt.Errorf("%w: process_vm_readv(pid %d): %w", ErrPeerGone, r.pid, err)
			}
			if cmaUnavailable(err) {
				return done, err
			}
			return done, fmt.Errorf("%w: process_vm_readv(pid %d): %w", ErrRemote, r.pid, err)
		}
		if k <= 0 {
			return done, fmt.Errorf("%w: process_vm_readv(pid %d) made no progress", ErrRemote, r.pid)
		}
		done += uint64(k)
		// Advance both cursors by k.
		for left := k; left > 0 && di < len(dst); {
			rem := len(dst[di]) - doff
			if left < rem {
				doff += left
				break
			}
			left -= rem
			di, doff = di+1, 0
		}
		for left := k; left > 0 && ri < r.niov; {
			rem := r.iov[ri].Len - roff
			if left < rem {
				roff += left
				break
			}
			left -= rem
			ri, roff = ri+1, 0
		}
	}
	return done, nil
}

// bulkPull copies want bytes through the ring's bulk window: it asks the
// sender (via the channel's control block) to stream the message in chunks
// into two alternating halves of the window and drains them into dst.
func (e *Endpoint) bulkPull(r *Rendezvous, dst [][]byte, want uint64) (uint64, error) {
	ring := r.ring
	ctl := ring.ctl
	if err := e.allocBulk(ring); err != nil {
		return 0, err
	}
	ring.bulkGen++
	if ring.bulkGen == 0 {
		ring.bulkGen = 1
	}
	gen := ring.bulkGen
	atomic.StoreUint64(&ctl.bulkCookie, r.cookie)
	atomic.StoreUint64(&ctl.bulkWant, want)
	atomic.StoreUint64(&ctl.bulkDrain, uint64(gen)<<32)
	atomic.StoreUint64(&ctl.bulkReq, uint64(gen))

	cur := iovCursor{iov: dst}
	var got uint64
	var count uint32
	spins := 0
	progressed := false
	start := e.now()
	lastProgress, lastCheck := start, start
	for got < want {
		if f := atomic.LoadUint64(&ctl.bulkFill); uint32(f>>32) == gen {
			if f&fillErr != 0 {
				return got, fmt.Errorf("%w: sender rejected the copy request", ErrRemote)
			}
			if c := uint32(f) & countMask; c != count {
				if (c-count)&countMask > 2 {
					return got, fmt.Errorf("%w: bulk fill count", ErrCorrupt)
				}
				half := uint64(count & 1)
				l := atomic.LoadUint64(&ctl.bulkLen[half])
				if l == 0 || l > ring.half || l > want-got {
					return got, fmt.Errorf("%w: bulk chunk length %d", ErrCorrupt, l)
				}
				cur.scatter(unsafe.Slice((*byte)(unsafe.Add(ring.bulk, half*ring.half)), l))
				got += l
				count = (count + 1) & countMask
				atomic.StoreUint64(&ctl.bulkDrain, uint64(gen)<<32|uint64(count))
				spins = 0
				progressed = true
				continue
			}
		}
		spins++
		if spins&63 == 0 {
			e.serveOutbound()
		}
		if spins&1023 == 0 {
			now := e.now()
			if progressed {
				lastProgress, progressed = now, false
			}
			if now-lastCheck >= livenessInterval {
				lastCheck = now
				if ring.session != r.session || atomic.LoadUint64(&ctl.state) != ring.word || !ring.proc.alive() {
					return got, fmt.Errorf("%w: sender %016x (pid %d) gone during copy", ErrPeerGone, r.src, r.pid)
				}
			}
			if st := int64(e.cfg.StallTimeout); st > 0 && now-lastProgress >= st {
				return got, fmt.Errorf("%w: fallback copy from pid %d", ErrStalled, r.pid)
			}
			runtime.Gosched()
		}
	}
	return got, nil
}

// allocBulk allocates the pages of ring's bulk window in our region file
// before the sender is asked to write there (createRegion leaves them
// sparse): a /dev/shm without room fails the Pull with ENOSPC instead of
// killing the sender with SIGBUS. Once allocated they stay.
func (e *Endpoint) allocBulk(ring *inRing) error {
	if ring.bulkOK || e.lockFd < 0 {
		return nil
	}
	off := e.geo.dataOff + uint64(ring.idx)*e.geo.dataStride + e.geo.bulkOff
	if err := fallocate(e.lockFd, int64(off), int64(e.geo.bulkBytes)); err != nil {
		return fmt.Errorf("shm: allocating the fallback copy window: %w", err)
	}
	ring.bulkOK = true
	return nil
}
