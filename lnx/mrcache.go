// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only

package lnx

import (
	"sync"

	"github.com/lnx-go/lnx-go/internal/fi"
	"github.com/lnx-go/lnx-go/lnx/logging"
	"github.com/lnx-go/lnx-go/peers/ofi"
)

// regCache keeps the core registrations of host ranges so that Open MPI's
// pattern (register, send, close, for every message) registers a buffer
// with the cores once: a released registration stays idle in the cache and
// the next MR of the same range, length and access takes it back. Idle
// entries beyond the limit are closed, least recently used first.
//
// Keyed by virtual address, like any MR cache without a memory monitor: a
// range unmapped and mapped again at the same address reuses the old
// registration. The cores Debian ships (tcp, ofi_rxm) register by address
// without pinning, so this is harmless there; for cores that pin pages set
// FI_LNX_MR_CACHE_MAX=0, which closes core registrations with their MR.
type regCache struct {
	mu    sync.Mutex
	byKey map[regKey]*coreReg
	head  *coreReg // idle list, most recent first
	tail  *coreReg
	idle  int
	max   int // idle entries kept (FI_LNX_MR_CACHE_MAX), set at domain open

	hits, misses uint64
}

func (c *regCache) limit() int { return c.max }

// acquire returns the core registrations of a range, registering it with
// every network core of d on a miss.
func (c *regCache) acquire(d *Domain, base uintptr, n, access uint64) (*coreReg, error) {
	k := regKey{base: base, len: n, access: access}
	c.mu.Lock()
	defer c.mu.Unlock()
	if r, ok := c.byKey[k]; ok {
		if r.refs == 0 {
			c.unlinkIdle(r)
		}
		r.refs++
		c.hits++
		return r, nil
	}
	c.misses++
	r := &coreReg{key: k, refs: 1, mrs: make([]*ofi.MR, len(d.cores))}
	for i, cd := range d.cores {
		// A send buffer may be read by the receiver (the transport's
		// RMA-read rendezvous), which cores that check access refuse
		// unless the registration allows it. So may the source of an
		// fi_write (FI_WRITE): its bulk data goes as such a send.
		acc := access
		if acc&(fi.SEND|fi.WRITE) != 0 {
			acc |= fi.REMOTE_READ
		}
		m, err := cd.dom.RegMR(base, n, acc, coreKeys.Add(1), 0, 0)
		if err != nil {
			r.close()
			return nil, fi.Wrap(fi.Errno(-fi.Code(err)), "registering %d bytes with %s: %v", n, cd.choice.Prov, err)
		}
		r.mrs[i] = m
	}
	if c.limit() > 0 {
		if c.byKey == nil {
			c.byKey = map[regKey]*coreReg{}
		}
		c.byKey[k] = r
	}
	return r, nil
}

// release drops one reference; an unreferenced entry becomes idle, or is
// closed when the cache is off or full.
func (c *regCache) release(r *coreReg) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	r.refs--
	if r.refs > 0 {
		return nil
	}
	if c.byKey[r.key] != r { // not cached
		return r.close()
	}
	if r.exported.Load() {
		// Peers may hold its core keys: they must stop opening the
		// memory now that no MR covers it.
		delete(c.byKey, r.key)
		return r.close()
	}
	r.next, r.prev = c.head, nil
	if c.head != nil {
		c.head.prev = r
	}
	c.head = r
	if c.tail == nil {
		c.tail = r
	}
	c.idle++
	var err error
	for c.idle > c.limit() {
		old := c.tail
		c.unlinkIdle(old)
		delete(c.byKey, old.key)
		if e := old.close(); e != nil && err == nil {
			err = e
		}
	}
	return err
}

func (c *regCache) unlinkIdle(r *coreReg) {
	if r.prev != nil {
		r.prev.next = r.next
	} else {
		c.head = r.next
	}
	if r.next != nil {
		r.next.prev = r.prev
	} else {
		c.tail = r.prev
	}
	r.prev, r.next = nil, nil
	c.idle--
}

// flush closes every idle registration (at domain close).
func (c *regCache) flush() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	var err error
	for c.head != nil {
		r := c.head
		c.unlinkIdle(r)
		delete(c.byKey, r.key)
		if e := r.close(); e != nil && err == nil {
			err = e
		}
	}
	if c.hits+c.misses > 0 {
		logging.Debugf(logging.Domain, "MR cache: %d hits, %d misses", c.hits, c.misses)
	}
	return err
}
