// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only

package lnx

import (
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/lnx-go/lnx-go/internal/fi"
	"golang.org/x/sys/unix"
)

// Waiting. Progress in lnx is driven by the application's calls, so a
// thread that blocks (fi_cq_sread, fi_cntr_wait, fi_wait) or an fd an
// application sleeps on (FI_GETWAIT after fi_trywait) needs someone to
// keep calling it. lnx does it with polling that backs off: a blocked call
// (or, for an fd, a watcher goroutine started by fi_trywait and ending
// when it signals) polls as fi_cq_read would, first back to back, then
// sleeping 10 us, 20 us, ... up to FI_LNX_WAIT_SLEEP_MAX (1 ms) between
// polls. A blocked waiter thus costs a wake-up and one progress call per
// FI_LNX_WAIT_SLEEP_MAX (a few % of a core at 1 ms; the wait_objects
// ctest prints what it measured) and sees a completion at most that late
// once it has been idle for a while. The network core's own wait fd is
// not used: the shm core has none, and the armed receive and fast send
// completions live in C (the completion ring), which only a poll sees.
// Nothing of this runs unless a wait call or fi_trywait is made: the
// fi_cq_read and send paths are unchanged.
const (
	waitSpins    = 64
	waitMinSleep = 10 * time.Microsecond
)

// waitMaxSleep is FI_LNX_WAIT_SLEEP_MAX as the last fi_getinfo read it.
func waitMaxSleep() time.Duration { return currentSettings().WaitSleepMax }

// Wait object kinds (enum fi_wait_obj).
const (
	WaitNone   = 0
	WaitUnspec = 1
	WaitSet_   = 2
	WaitFD     = 3
	WaitYield  = 5
	WaitPollFD = 6
)

// backoff paces a polling wait.
type backoff struct {
	n int
	d time.Duration
}

func (b *backoff) pause() {
	if b.n++; b.n <= waitSpins {
		return
	}
	if b.d == 0 {
		b.d = waitMinSleep
	} else if b.d *= 2; b.d > waitMaxSleep() {
		b.d = waitMaxSleep()
	}
	time.Sleep(b.d)
}

// waitable is what fi_trywait, a wait set and a poll set check: ready
// drives progress once and reports whether the application has something
// to read.
type waitable interface {
	ready() bool
}

// waitFD is an FI_WAIT_FD wait object: an eventfd that becomes readable
// when its owner is ready, once an fi_trywait found it was not.
type waitFD struct {
	fd      int
	poll    bool // FI_WAIT_POLLFD: handed out as a struct fi_wait_pollfd
	mu      sync.Mutex
	running bool // a watcher goroutine runs
	again   bool // fi_trywait drained the fd while the watcher ran
	closed  atomic.Bool
	wg      sync.WaitGroup
}

func newWaitFD() (*waitFD, error) {
	fd, err := unix.Eventfd(0, unix.EFD_NONBLOCK|unix.EFD_CLOEXEC)
	if err != nil {
		return nil, fi.Wrap(fi.ENOMEM, "eventfd: %v", err)
	}
	return &waitFD{fd: fd}, nil
}

// FD returns the file descriptor FI_GETWAIT hands out.
func (w *waitFD) FD() int { return w.fd }

// kind is the wait object w is (FI_WAIT_NONE for none).
func (w *waitFD) kind() int {
	switch {
	case w == nil:
		return WaitNone
	case w.poll:
		return WaitPollFD
	}
	return WaitFD
}

// newWaitObj makes the fd of wait object waitObj (FI_WAIT_UNSPEC,
// FI_WAIT_FD or FI_WAIT_POLLFD: one fd either way).
func newWaitObj(waitObj int) (*waitFD, error) {
	w, err := newWaitFD()
	if err == nil {
		w.poll = waitObj == WaitPollFD
	}
	return w, err
}

func (w *waitFD) signal() {
	var one = [8]byte{1}
	_, _ = unix.Write(w.fd, one[:])
}

func (w *waitFD) drain() {
	var b [8]byte
	_, _ = unix.Read(w.fd, b[:])
}

// arm drains the fd and makes sure a watcher signals it once ready holds
// (the fi_trywait that found nothing ready).
func (w *waitFD) arm(ready func() bool) {
	w.drain()
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed.Load() {
		return
	}
	if w.running {
		w.again = true
		return
	}
	w.running = true
	w.wg.Add(1)
	go w.watch(ready)
}

func (w *waitFD) watch(ready func() bool) {
	defer w.wg.Done()
	var b backoff
	for !w.closed.Load() {
		if !ready() {
			b.pause()
			continue
		}
		w.signal()
		w.mu.Lock()
		if !w.again {
			w.running = false
			w.mu.Unlock()
			return
		}
		w.again = false // drained after our check: look again
		w.mu.Unlock()
		b = backoff{}
	}
	w.mu.Lock()
	w.running = false
	w.mu.Unlock()
}

func (w *waitFD) close() {
	if w == nil {
		return
	}
	w.closed.Store(true)
	w.wg.Wait()
	_ = unix.Close(w.fd)
}

// trywait is fi_trywait for one object: EAGAIN when it is ready, else
// its fd (if any) is armed.
func trywait(o waitable, w *waitFD) error {
	if o.ready() {
		return fi.EAGAIN
	}
	if w != nil {
		w.arm(o.ready)
	}
	return nil
}

// WaitSet is an fi_wait_open wait set: the CQs and counters opened with
// FI_WAIT_SET and it as their wait_set.
type WaitSet struct {
	mu      sync.RWMutex // held (read) over a check: a member closing waits
	members []waitable
	wfd     *waitFD
}

// OpenWaitSet opens a wait set of kind waitObj (FI_WAIT_FD, or
// FI_WAIT_UNSPEC, which is an fd too, or FI_WAIT_POLLFD, that fd alone).
func OpenWaitSet(waitObj int) (*WaitSet, error) {
	switch waitObj {
	case WaitFD, WaitUnspec, WaitPollFD:
	default:
		return nil, fi.Wrap(fi.ENOSYS, "wait set object %d not supported", waitObj)
	}
	w, err := newWaitObj(waitObj)
	if err != nil {
		return nil, err
	}
	return &WaitSet{wfd: w}, nil
}

func (s *WaitSet) add(m waitable) {
	s.mu.Lock()
	s.members = append(s.members, m)
	s.mu.Unlock()
}

// funcMember is a wait set member lnx does not own (an EQ, which lives
// in C): f reports whether it holds something to read.
type funcMember struct{ f func() bool }

func (m *funcMember) ready() bool { return m.f() }

// Join adds a member whose readiness f reports (f must not block); the
// returned func takes it out again, once no check of the set is calling f.
func (s *WaitSet) Join(f func() bool) (leave func()) {
	m := &funcMember{f}
	s.add(m)
	return func() { s.remove(m) }
}

func (s *WaitSet) remove(m waitable) {
	s.mu.Lock()
	for i, x := range s.members {
		if x == m {
			s.members = append(s.members[:i:i], s.members[i+1:]...)
			break
		}
	}
	s.mu.Unlock()
}

func (s *WaitSet) ready() bool {
	s.mu.RLock()
	defer s.mu.RUnlock()
	r := false
	for _, m := range s.members {
		if m.ready() {
			r = true // drive the others too: one call, all progress
		}
	}
	return r
}

// FD returns the set's fd (FI_GETWAIT).
func (s *WaitSet) FD() int { return s.wfd.FD() }

// WaitKind is the set's wait object (FI_GETWAITOBJ).
func (s *WaitSet) WaitKind() int { return s.wfd.kind() }

// TryWait is fi_trywait on the set.
func (s *WaitSet) TryWait() error { return trywait(s, s.wfd) }

// Wait is fi_wait: it returns once a member is ready, or ETIMEDOUT after
// timeout ms (< 0: never).
func (s *WaitSet) Wait(timeout int) error {
	return waitUntil(s.ready, timeout, nil)
}

// Close closes the set; its members must be closed first.
func (s *WaitSet) Close() error {
	s.mu.Lock()
	n := len(s.members)
	s.mu.Unlock()
	if n > 0 {
		return fi.Wrap(fi.EBUSY, "wait set still has %d member(s)", n)
	}
	s.wfd.close()
	return nil
}

// waitUntil polls ready with backoff until it holds (nil), timeout ms
// pass (ETIMEDOUT; < 0 waits forever) or stop has a value (EAGAIN).
func waitUntil(ready func() bool, timeout int, stop <-chan struct{}) error {
	var deadline time.Time
	if timeout >= 0 {
		deadline = time.Now().Add(time.Duration(timeout) * time.Millisecond)
	}
	var b backoff
	for {
		if ready() {
			return nil
		}
		if stop != nil {
			select {
			case <-stop:
				return fi.EAGAIN
			default:
			}
		}
		if timeout >= 0 && !time.Now().Before(deadline) {
			return fi.ETIMEDOUT
		}
		b.pause()
	}
}

// PollSet is an fi_poll_open poll set.
type PollSet struct {
	mu      sync.Mutex
	members []pollMember
}

type pollMember struct {
	obj waitable
	ctx unsafe.Pointer // the fid's context (application memory)
}

// OpenPollSet opens a poll set.
func (d *Domain) OpenPollSet() (*PollSet, error) { return &PollSet{}, nil }

// Add adds a CQ or counter; ctx is what fi_poll reports for it.
func (p *PollSet) Add(obj any, ctx unsafe.Pointer) error {
	m, ok := obj.(waitable)
	if !ok {
		return fi.Wrap(fi.EINVAL, "cannot poll %T", obj)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, x := range p.members {
		if x.obj == m {
			return fi.Wrap(fi.EALREADY, "already in the poll set")
		}
	}
	if r, ok := obj.(interface{ pollRef(int32) }); ok {
		r.pollRef(1)
	}
	p.members = append(p.members, pollMember{m, ctx})
	return nil
}

// Del removes a CQ or counter.
func (p *PollSet) Del(obj any) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	for i, x := range p.members {
		if x.obj == obj {
			if r, ok := obj.(interface{ pollRef(int32) }); ok {
				r.pollRef(-1)
			}
			p.members = append(p.members[:i:i], p.members[i+1:]...)
			return nil
		}
	}
	return fi.Wrap(fi.EINVAL, "not in the poll set")
}

// Poll drives every member's progress and writes into out the contexts
// of the ready ones; it returns how many (0: none).
func (p *PollSet) Poll(out []unsafe.Pointer) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for _, m := range p.members {
		if m.obj.ready() && n < len(out) {
			out[n] = m.ctx
			n++
		}
	}
	return n
}

// Close closes the poll set, releasing its members.
func (p *PollSet) Close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, m := range p.members {
		if r, ok := m.obj.(interface{ pollRef(int32) }); ok {
			r.pollRef(-1)
		}
	}
	p.members = nil
	return nil
}
