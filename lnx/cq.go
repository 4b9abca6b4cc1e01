// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only

package lnx

import (
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/lnx-go/lnx-go/internal/fi"
)

// Completion is one CQ entry in format-neutral form; capi writes it out in
// the CQ's FI_CQ_FORMAT_*.
type Completion struct {
	Ctx   unsafe.Pointer // op_context (C memory)
	Flags uint64
	Len   uint64
	Buf   unsafe.Pointer
	Data  uint64
	Tag   uint64
	Src   uint64 // fi_addr of the sender, FI_ADDR_NOTAVAIL if unknown
	// Error entries only.
	Err     fi.Errno
	ProvErr int
	OLen    uint64
}

// CQAttr is the part of fi_cq_attr lnx uses.
type CQAttr struct {
	Size    uint64
	Format  int
	WaitObj int
	WaitSet *WaitSet // FI_WAIT_SET's set
}

// CQ is an lnx completion queue. Progress is manual: reading a CQ drives
// the endpoints bound to it.
type CQ struct {
	Domain *Domain
	Attr   CQAttr

	mu      sync.Mutex
	entries []Completion // ring of successes
	head    int
	errs    []Completion
	eps     atomic.Pointer[[]*Endpoint] // copied on change: read without mu
	signal  chan struct{}
	gate    gate

	// Waiting (wait.go): the FI_WAIT_FD fd, or the FI_WAIT_SET set; the
	// C completion ring's head and tail words, which a wait checks too.
	wfd      *waitFD
	set      *WaitSet
	cring    unsafe.Pointer
	pollRefs atomic.Int32

	// scratch is the watch set of the Read that holds scratchMu: a poll
	// then does not zero a fresh one (most of a kilobyte) every time.
	scratchMu sync.Mutex
	scratch   watchSet
}

type progresser interface{ progress() }

const cqInitial = 64

// OpenCQ opens a completion queue.
func (d *Domain) OpenCQ(attr CQAttr) (*CQ, error) {
	switch attr.Format {
	case fi.CQ_FORMAT_UNSPEC:
		attr.Format = fi.CQ_FORMAT_CONTEXT
	case fi.CQ_FORMAT_CONTEXT, fi.CQ_FORMAT_MSG, fi.CQ_FORMAT_DATA, fi.CQ_FORMAT_TAGGED:
	default:
		return nil, fi.Wrap(fi.EINVAL, "unknown CQ format %d", attr.Format)
	}
	var wfd *waitFD
	switch attr.WaitObj {
	case WaitNone, WaitYield:
		// FI_WAIT_YIELD: no object; fi_cq_sread polls as it always does.
	case WaitUnspec, WaitFD, WaitPollFD:
		// FI_WAIT_UNSPEC is an fd too: FI_GETWAIT then has one to give.
		w, err := newWaitObj(attr.WaitObj)
		if err != nil {
			return nil, err
		}
		wfd = w
	case WaitSet_:
		if attr.WaitSet == nil {
			return nil, fi.Wrap(fi.EINVAL, "FI_WAIT_SET without a wait set")
		}
	default:
		return nil, fi.Wrap(fi.ENOSYS, "CQ wait object %d not supported", attr.WaitObj)
	}
	d.get()
	// The queue grows on demand (an lnx CQ never overruns) and keeps its
	// capacity, so it starts small rather than at the requested size:
	// 1024 entries were 96 KiB of garbage per CQ open/close cycle.
	q := &CQ{Domain: d, Attr: attr, signal: make(chan struct{}, 1), entries: make([]Completion, 0, cqInitial), wfd: wfd}
	if attr.WaitObj == WaitSet_ {
		q.set = attr.WaitSet
		q.set.add(q)
	}
	return q, nil
}

// SetCRing gives the CQ C's completion ring (struct lnx_cring, whose
// head and tail words follow two uint32s): waits count its entries.
func (q *CQ) SetCRing(p unsafe.Pointer) { q.cring = p }

// cringReady reports whether C's completion ring holds entries.
func (q *CQ) cringReady() bool {
	if q.cring == nil {
		return false
	}
	head := (*uint64)(unsafe.Add(q.cring, 8))
	tail := (*uint64)(unsafe.Add(q.cring, 16))
	return atomic.LoadUint64(tail) != atomic.LoadUint64(head)
}

// ready drives progress once and reports whether a read would return
// something (a completion or an error entry).
func (q *CQ) ready() bool {
	if q.cringReady() {
		return true
	}
	_, errno := q.Read(nil, 0)
	return errno != fi.EAGAIN || q.cringReady()
}

// WaitFD returns the CQ's fd (FI_GETWAIT), or -1 when it has none.
func (q *CQ) WaitFD() int {
	if q.wfd == nil {
		return -1
	}
	return q.wfd.FD()
}

// WaitKind is the CQ's wait object (FI_GETWAITOBJ; FI_WAIT_UNSPEC is
// FI_WAIT_FD).
func (q *CQ) WaitKind() int {
	if q.set != nil {
		return WaitSet_
	}
	if q.Attr.WaitObj == WaitYield {
		return WaitYield
	}
	return q.wfd.kind()
}

// TryWait is fi_trywait on the CQ: EAGAIN when completions are ready,
// else nil, and the CQ's fd becomes readable when one is.
func (q *CQ) TryWait() error {
	if q.set != nil {
		return q.set.TryWait()
	}
	return trywait(q, q.wfd)
}

func (q *CQ) pollRef(d int32) { q.pollRefs.Add(d) }

func (q *CQ) endpoints() []*Endpoint {
	if p := q.eps.Load(); p != nil {
		return *p
	}
	return nil
}

func (q *CQ) attach(p *Endpoint) {
	q.mu.Lock()
	eps := append(append([]*Endpoint{}, q.endpoints()...), p)
	q.eps.Store(&eps)
	q.gate.kick()
	q.mu.Unlock()
}

// detach unbinds an endpoint; on return C no longer reads its shm region.
func (q *CQ) detach(p *Endpoint) {
	q.mu.Lock()
	old := q.endpoints()
	for i, e := range old {
		if e == p {
			eps := append(append([]*Endpoint{}, old[:i]...), old[i+1:]...)
			q.eps.Store(&eps)
			break
		}
	}
	q.gate.quiesce()
	q.mu.Unlock()
}

// Push adds a successful completion.
func (q *CQ) Push(c Completion) {
	q.mu.Lock()
	if len(q.entries) == cap(q.entries) && q.head >= len(q.entries)/2 {
		// Reuse the part already read: a reader that never empties the
		// CQ would otherwise keep every completion ever pushed.
		n := copy(q.entries, q.entries[q.head:])
		q.entries, q.head = q.entries[:n], 0
	}
	q.entries = append(q.entries, c)
	q.gate.setPending(true)
	q.mu.Unlock()
}

// PushErr adds an error completion.
func (q *CQ) PushErr(c Completion) {
	q.mu.Lock()
	q.errs = append(q.errs, c)
	q.gate.setPending(true)
	q.mu.Unlock()
}

// progress drives the bound endpoints. Its watch set is the CQ's scratch
// when no Read holds it: collect hands it to the cores' watch methods
// (interface calls), so a local one would be allocated every time.
func (q *CQ) progress() {
	if q.scratchMu.TryLock() {
		w := &q.scratch
		w.reset()
		q.collect(w)
		q.scratchMu.Unlock()
		return
	}
	q.collect(new(watchSet))
}

// collect drives the bound endpoints and collects in w what C may watch
// until the next call.
func (q *CQ) collect(w *watchSet) {
	w.slow = q.gate.takeIdle()
	w.kicks = q.gate.kicks.Load()
	for _, e := range q.endpoints() {
		e.progressWatch(w, q)
	}
}

// Read drives progress and pops up to len(out) entries. It returns
// FI_EAVAIL when an error entry is waiting and FI_EAGAIN when empty (as a
// plain code: this is the polling loop's hot path).
// timeout < 0 waits forever, 0 polls once, > 0 is milliseconds+1 (sread).
// With an empty out it only drives progress, once: 0 means completions
// are waiting.
func (q *CQ) Read(out []Completion, timeout int) (int, fi.Errno) {
	var deadline time.Time
	if timeout > 0 {
		deadline = time.Now().Add(time.Duration(timeout-1) * time.Millisecond)
	}
	var w *watchSet
	if q.scratchMu.TryLock() {
		defer q.scratchMu.Unlock()
		w = &q.scratch
	} else {
		w = new(watchSet) // another thread is reading this CQ
	}
	var bo backoff
	for {
		w.reset()
		q.collect(w)
		q.mu.Lock()
		q.gate.publish(w)
		if len(q.errs) > 0 {
			q.mu.Unlock()
			return 0, fi.EAVAIL
		}
		n := copy(out, q.entries[q.head:])
		q.head += n
		emptied := false
		if q.head == len(q.entries) {
			q.entries, q.head = q.entries[:0], 0
			q.gate.setPending(false)
			emptied = true
		}
		q.mu.Unlock()
		if n > 0 {
			if emptied && w.armLater != nil {
				w.armLater.armAfterCQRead(q, w)
			}
			return n, 0
		}
		if len(out) == 0 && !emptied {
			return 0, 0 // a zero-count read: completions wait
		}
		if timeout == 0 || len(out) == 0 {
			return 0, fi.EAGAIN
		}
		select {
		case <-q.signal:
			return 0, fi.EAGAIN
		default:
		}
		if timeout > 0 && time.Now().After(deadline) {
			return 0, fi.EAGAIN
		}
		if q.cringReady() {
			return 0, fi.EAGAIN // C's ring has them: the caller reads it
		}
		bo.pause()
	}
}

// ReadErr pops one error entry.
func (q *CQ) ReadErr() (Completion, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.errs) == 0 {
		return Completion{}, false
	}
	c := q.errs[0]
	q.errs = q.errs[1:]
	q.gate.setPending(len(q.errs) > 0 || q.head < len(q.entries))
	return c, true
}

// Signal wakes a thread blocked in sread, and one sleeping on the CQ's
// fd.
func (q *CQ) Signal() {
	select {
	case q.signal <- struct{}{}:
	default:
	}
	if q.wfd != nil {
		q.wfd.signal()
	} else if q.set != nil {
		q.set.wfd.signal()
	}
}

// Close closes the CQ; endpoints bound to it must be closed first.
func (q *CQ) Close() error {
	if n := len(q.endpoints()); n > 0 {
		return fi.Wrap(fi.EBUSY, "CQ still bound to %d endpoint(s)", n)
	}
	if n := q.pollRefs.Load(); n > 0 {
		return fi.Wrap(fi.EBUSY, "CQ still in %d poll set(s)", n)
	}
	q.wfd.close()
	if q.set != nil {
		q.set.remove(q)
	}
	q.Domain.put()
	return nil
}
