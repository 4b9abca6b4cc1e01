// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only

package lnx

import (
	"sync/atomic"

	"github.com/lnx-go/lnx-go/internal/fi"
)

// Cntr is an lnx completion counter.
type Cntr struct {
	Domain *Domain
	val    atomic.Uint64
	errs   atomic.Uint64
	eps    atomic.Pointer[[]progresser]

	// Waiting (wait.go). seen and seenErrs are the counts the
	// application last read: fi_trywait finds the counter ready when
	// either changed since.
	wfd      *waitFD
	set      *WaitSet
	yield    bool // FI_WAIT_YIELD: no object, reported as such
	seen     atomic.Uint64
	seenErrs atomic.Uint64
	pollRefs atomic.Int32
}

// OpenCntr opens a counter with wait object waitObj (FI_WAIT_NONE,
// FI_WAIT_UNSPEC, FI_WAIT_FD, or FI_WAIT_SET with set).
func (d *Domain) OpenCntr(waitObj int, set *WaitSet) (*Cntr, error) {
	c := &Cntr{Domain: d}
	switch waitObj {
	case WaitNone:
	case WaitYield:
		// No object; fi_cntr_wait polls as it always does.
		c.yield = true
	case WaitUnspec, WaitFD, WaitPollFD:
		w, err := newWaitObj(waitObj)
		if err != nil {
			return nil, err
		}
		c.wfd = w
	case WaitSet_:
		if set == nil {
			return nil, fi.Wrap(fi.EINVAL, "FI_WAIT_SET without a wait set")
		}
		c.set = set
		set.add(c)
	default:
		return nil, fi.Wrap(fi.ENOSYS, "counter wait object %d not supported", waitObj)
	}
	d.get()
	c.eps.Store(&[]progresser{})
	return c, nil
}

// ready drives progress once and reports whether a count changed since
// the application last read it.
func (c *Cntr) ready() bool {
	c.progress()
	return c.val.Load() != c.seen.Load() || c.errs.Load() != c.seenErrs.Load()
}

// WaitFD returns the counter's fd (FI_GETWAIT), or -1 when it has none.
func (c *Cntr) WaitFD() int {
	if c.wfd == nil {
		return -1
	}
	return c.wfd.FD()
}

// TryWait is fi_trywait on the counter.
func (c *Cntr) TryWait() error {
	if c.set != nil {
		return c.set.TryWait()
	}
	return trywait(c, c.wfd)
}

func (c *Cntr) pollRef(d int32) { c.pollRefs.Add(d) }

func (c *Cntr) attach(p progresser) {
	for {
		old := c.eps.Load()
		n := append(append([]progresser{}, *old...), p)
		if c.eps.CompareAndSwap(old, &n) {
			return
		}
	}
}

func (c *Cntr) detach(p progresser) {
	for {
		old := c.eps.Load()
		n := make([]progresser, 0, len(*old))
		for _, e := range *old {
			if e != p {
				n = append(n, e)
			}
		}
		if c.eps.CompareAndSwap(old, &n) {
			return
		}
	}
}

func (c *Cntr) progress() {
	for _, e := range *c.eps.Load() {
		e.progress()
	}
}

// Read drives progress and returns the success (or error) count.
func (c *Cntr) Read(errCount bool) uint64 {
	c.progress()
	if errCount {
		v := c.errs.Load()
		c.seenErrs.Store(v)
		return v
	}
	v := c.val.Load()
	c.seen.Store(v)
	return v
}

// Update adds to or sets the success or error count.
func (c *Cntr) Update(v uint64, set, errCount bool) {
	p := &c.val
	if errCount {
		p = &c.errs
	}
	if set {
		p.Store(v)
	} else {
		p.Add(v)
	}
}

// Inc counts one completion.
func (c *Cntr) Inc(failed bool) {
	if failed {
		c.errs.Add(1)
	} else {
		c.val.Add(1)
	}
}

// Wait drives progress until the count reaches threshold, an error is
// counted, or timeout (ms, < 0 forever) passes.
// Polling backs off as fi_cq_sread's does (wait.go).
func (c *Cntr) Wait(threshold uint64, timeout int) error {
	errs0 := c.errs.Load()
	failed := false
	err := waitUntil(func() bool {
		c.progress()
		if v := c.val.Load(); v >= threshold {
			c.seen.Store(v)
			return true
		}
		failed = c.errs.Load() != errs0
		return failed
	}, timeout, nil)
	if err == nil && failed {
		return fi.EAVAIL
	}
	return err
}

// Close closes the counter.
func (c *Cntr) Close() error {
	if len(*c.eps.Load()) > 0 {
		return fi.Wrap(fi.EBUSY, "counter still bound to an endpoint")
	}
	if n := c.pollRefs.Load(); n > 0 {
		return fi.Wrap(fi.EBUSY, "counter still in %d poll set(s)", n)
	}
	c.wfd.close()
	if c.set != nil {
		c.set.remove(c)
	}
	c.Domain.put()
	return nil
}

// WaitKind is the counter's wait object (FI_GETWAITOBJ).
func (c *Cntr) WaitKind() int {
	if c.set != nil {
		return WaitSet_
	}
	if c.yield {
		return WaitYield
	}
	return c.wfd.kind()
}

// InSet reports whether the counter waits through a wait set.
func (c *Cntr) InSet() bool { return c.set != nil }
