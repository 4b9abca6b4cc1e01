package lnx

import (
	"sync/atomic"
	"time"

	"github.com/lnx-go/lnx-go/lnx/fi"
)

// Cntr is an lnx completion counter.
type Cntr struct {
	Domain *Domain
	val    atomic.Uint64
	errs   atomic.Uint64
	eps    atomic.Pointer[[]progresser]
}

// OpenCntr opens a counter.
func (d *Domain) OpenCntr() (*Cntr, error) {
	d.get()
	c := &Cntr{Domain: d}
	c.eps.Store(&[]progresser{})
	return c, nil
}

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
		return c.errs.Load()
	}
	return c.val.Load()
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
func (c *Cntr) Wait(threshold uint64, timeout int) error {
	start := time.Now()
	errs0 := c.errs.Load()
	for spins := 0; ; spins++ {
		c.progress()
		if c.val.Load() >= threshold {
			return nil
		}
		if c.errs.Load() != errs0 {
			return fi.EAVAIL
		}
		if timeout >= 0 && time.Since(start) >= time.Duration(timeout)*time.Millisecond {
			return fi.ETIMEDOUT
		}
		if spins > 64 {
			time.Sleep(10 * time.Microsecond)
		}
	}
}

// Close closes the counter.
func (c *Cntr) Close() error {
	if len(*c.eps.Load()) > 0 {
		return fi.Wrap(fi.EBUSY, "counter still bound to an endpoint")
	}
	c.Domain.put()
	return nil
}
