// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only

package ofi

import (
	"bytes"
	"errors"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// sendRead sends b from a to b's receiver as one RTS-read, pulls it into a
// fresh buffer and returns what arrived.
func sendRead(t *testing.T, a, b *rec, ab *Peer, id int, src []byte) []byte {
	t.Helper()
	send(t, a, ab, Hdr{Tag: uint64(id)}, [][]byte{src}, uint64(id), b)
	pump(t, "RTS", func() bool { return len(b.arr) == id+1 }, a, b)
	rv := b.arr[id].rv
	if rv == nil || !rv.read || b.arr[id].hdr.Tag != uint64(id) {
		t.Fatalf("send %d: not an RTS-read with its tag (%+v)", id, b.arr[id])
	}
	dst := mmapBuf(t, len(src))
	rv.SetContext(id)
	if err := b.t.Pull(rv, [][]byte{dst}); err != nil {
		t.Fatal(err)
	}
	pump(t, "read and send", func() bool {
		_, pulled := b.pulls[id]
		_, sent := a.done[uint64(id)]
		return pulled && sent
	}, a, b)
	if res := b.pulls[id]; res.err != nil || res.n != uint64(len(src)) || a.done[uint64(id)] != nil {
		t.Fatalf("send %d: pull %+v (want %d bytes), send %v", id, res, len(src), a.done[uint64(id)])
	}
	return dst
}

// remap puts fresh anonymous pages at b's address (MAP_FIXED replaces the
// old mapping in one step, so nothing else can land there meanwhile).
func remap(t *testing.T, b []byte) {
	t.Helper()
	addr := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	p, _, e := unix.Syscall6(unix.SYS_MMAP, addr, uintptr(len(b)), unix.PROT_READ|unix.PROT_WRITE,
		unix.MAP_ANON|unix.MAP_PRIVATE|unix.MAP_FIXED, ^uintptr(0), 0)
	if e != 0 || p != addr {
		t.Fatalf("mmap at %#x: %v", addr, e)
	}
}

// A send the core refused (-FI_EAGAIN while the connection is made) and
// retried takes the registration again: the tests count registrations
// exactly (at least, with none kept) and reuses at least.

// TestSendRegCache: the same buffer sent again reuses the core
// registration of the first send (also while two sends of it are in
// flight), and every send delivers the buffer's current contents: changed
// in place, or on other pages mapped at the same address after the
// registration was made. A buffer whose tail was unmapped since it was
// registered still fails its send with ErrBadBuffer.
func TestSendRegCache(t *testing.T) {
	a, b, ab, _ := pair(t, testCfg)
	if !a.t.rma {
		t.Skip("the core cannot read remote memory")
	}
	if a.t.regs.max == 0 {
		t.Skip("the core's registrations pin memory: none are kept")
	}
	const size = 1 << 20
	src := mmapBuf(t, size)
	id := 0
	check := func(what string, seed int64) {
		t.Helper()
		fill(src, seed)
		want := bytes.Clone(src)
		if got := sendRead(t, a, b, ab, id, src); !bytes.Equal(got, want) {
			t.Fatalf("send %d (%s): data differs", id, what)
		}
		id++
	}
	check("first", 1)
	check("same buffer, new contents", 2)
	remap(t, src)
	check("other pages at the same address", 3)
	if s := a.t.Stats(); s.SendRegs != 1 || s.SendRegHits < 2 {
		t.Fatalf("%d registrations, %d reused; want 1 and at least 2: %+v", s.SendRegs, s.SendRegHits, s)
	}

	// Two sends of the buffer in flight at once share the registration.
	fill(src, 4)
	for i := 0; i < 2; i++ {
		send(t, a, ab, Hdr{Tag: uint64(id + i)}, [][]byte{src}, uint64(id+i), b)
	}
	pump(t, "RTS", func() bool { return len(b.arr) == id+2 }, a, b)
	dst := [2][]byte{mmapBuf(t, size), mmapBuf(t, size)}
	for i := 0; i < 2; i++ {
		b.arr[id+i].rv.SetContext(id + i)
		if err := b.t.Pull(b.arr[id+i].rv, [][]byte{dst[i]}); err != nil {
			t.Fatal(err)
		}
	}
	pump(t, "both reads", func() bool { return len(b.pulls) == id+2 && len(a.done) == id+2 }, a, b)
	for i := 0; i < 2; i++ {
		if res := b.pulls[id+i]; res.err != nil || res.n != size || !bytes.Equal(dst[i], src) || a.done[uint64(id+i)] != nil {
			t.Fatalf("concurrent send %d: pull %+v, send %v, data equal %v", i, res, a.done[uint64(id+i)], bytes.Equal(dst[i], src))
		}
	}
	id += 2
	if s := a.t.Stats(); s.SendRegs != 1 || s.SendRegHits < 4 {
		t.Fatalf("%d registrations, %d reused; want 1 and at least 4: %+v", s.SendRegs, s.SendRegHits, s)
	}

	// The kept registration does not vouch for the pages: a buffer now
	// shorter than its length is refused before anything reads it.
	pg := unix.Getpagesize()
	tail := uintptr(unsafe.Pointer(&src[size-pg]))
	if _, _, e := unix.Syscall(unix.SYS_MUNMAP, tail, uintptr(pg), 0); e != 0 {
		t.Fatal(e)
	}
	if _, err := a.t.Send(ab, Hdr{Tag: 99}, [][]byte{src}, 99); !errors.Is(err, ErrBadBuffer) {
		t.Fatalf("send from a buffer with its last page unmapped: %v, want ErrBadBuffer", err)
	}
	remap(t, src)
	check("mapped again", 5)
	if s := a.t.Stats(); s.SendRegs != 1 || s.SendRegHits < 5 {
		t.Fatalf("%d registrations, %d reused; want 1 and at least 5: %+v", s.SendRegs, s.SendRegHits, s)
	}
}

// TestSendRegLimit: with SendRegs 1 a second buffer's registration
// replaces the first's; with SendRegs -1 every send registers its buffer.
func TestSendRegLimit(t *testing.T) {
	for _, c := range []struct {
		keep       int
		regs, hits uint64
	}{{1, 3, 1}, {-1, 4, 0}} {
		cfg := testCfg
		cfg.SendRegs = c.keep
		a, b, ab, _ := pair(t, cfg)
		if !a.t.rma {
			t.Skip("the core cannot read remote memory")
		}
		x, y := mmapBuf(t, 70000), mmapBuf(t, 70000)
		fill(x, 1)
		fill(y, 2)
		// x (registered), x (kept, reused), y (x's closed), x (registered again)
		for i, src := range [][]byte{x, x, y, x} {
			if got := sendRead(t, a, b, ab, i, src); !bytes.Equal(got, src) {
				t.Fatalf("SendRegs %d, send %d: data differs", c.keep, i)
			}
		}
		s := a.t.Stats()
		if c.keep > 0 && (s.SendRegs != c.regs || s.SendRegHits < c.hits) || c.keep < 0 && (s.SendRegs < c.regs || s.SendRegHits != 0) {
			t.Fatalf("SendRegs %d: %d registrations, %d reused; want %d and %d", c.keep, s.SendRegs, s.SendRegHits, c.regs, c.hits)
		}
	}
}

// BenchmarkSendReg: what an RTS-read send pays for its buffer's
// registration, kept (the same buffer sent again) or made and closed.
func BenchmarkSendReg(b *testing.B) {
	src := mmapBuf(b, 1<<20)
	addr := uintptr(unsafe.Pointer(&src[0]))
	for _, keep := range []int{DefaultSendRegs, 0} {
		b.Run(map[bool]string{true: "kept", false: "per-send"}[keep > 0], func(b *testing.B) {
			tr, err := Open(RuntimeVersion(), testCfg)
			if err != nil {
				b.Skipf("tcp;ofi_rxm on lo unavailable: %v", err)
			}
			defer tr.Close()
			c := &sendRegs{max: keep}
			var st Stats
			for i := 0; i < b.N; i++ {
				r, err := c.acquire(tr.d, addr, uint64(len(src)), &st)
				if err != nil {
					b.Fatal(err)
				}
				if err := c.release(r); err != nil {
					b.Fatal(err)
				}
			}
			if err := c.flush(); err != nil {
				b.Fatal(err)
			}
		})
	}
}
