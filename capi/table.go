// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only

package main

import (
	"sync"
	"sync/atomic"
)

// handleTable maps the integers C keeps to Go objects. Lookups are two
// atomic loads and no lock: they sit on every data-path call, where
// runtime/cgo.Handle's sync.Map cost as much as the rest of a small send.
type handleTable struct {
	mu     sync.Mutex
	chunks [handleChunks]atomic.Pointer[handleChunk]
	free   []uintptr
	next   uintptr
}

const (
	handleChunkBits = 12
	handleChunkLen  = 1 << handleChunkBits
	handleChunks    = 1 << 12 // up to 16M live objects
)

type handleChunk [handleChunkLen]atomic.Pointer[handleSlot]

type handleSlot struct{ v any }

var handles = handleTable{next: 1} // 0 is never a valid handle

// add stores v and returns its handle, or 0 if the table is full.
func (t *handleTable) add(v any) uintptr {
	t.mu.Lock()
	defer t.mu.Unlock()
	var h uintptr
	if n := len(t.free); n > 0 {
		h, t.free = t.free[n-1], t.free[:n-1]
	} else {
		if t.next >= handleChunks*handleChunkLen {
			return 0
		}
		h = t.next
		t.next++
	}
	c := t.chunks[h>>handleChunkBits].Load()
	if c == nil {
		c = new(handleChunk)
		t.chunks[h>>handleChunkBits].Store(c)
	}
	c[h&(handleChunkLen-1)].Store(&handleSlot{v: v})
	return h
}

// get returns the object behind h, or nil.
func (t *handleTable) get(h uintptr) any {
	if h == 0 || h >= handleChunks*handleChunkLen {
		return nil
	}
	c := t.chunks[h>>handleChunkBits].Load()
	if c == nil {
		return nil
	}
	s := c[h&(handleChunkLen-1)].Load()
	if s == nil {
		return nil
	}
	return s.v
}

// remove forgets h; the slot is reused by a later add.
func (t *handleTable) remove(h uintptr) {
	if t.get(h) == nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.chunks[h>>handleChunkBits].Load()[h&(handleChunkLen-1)].Store(nil)
	t.free = append(t.free, h)
}
