// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only

package memmap

import (
	"os"
	"syscall"
	"testing"
	"unsafe"
)

// mapWithHole maps pages anonymous pages and unmaps n of them from page
// from on: a buffer whose stated length runs over a hole. The test's end
// unmaps the pages still mapped, and only those: the hole may hold
// another mapping by then (the Go runtime's, the race detector's).
func mapWithHole(t *testing.T, pages, from, n int) []byte {
	t.Helper()
	pg := syscall.Getpagesize()
	m, err := syscall.Mmap(-1, 0, pages*pg, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_PRIVATE|syscall.MAP_ANON)
	if err != nil {
		t.Fatal(err)
	}
	addr := uintptr(unsafe.Pointer(&m[0]))
	if _, _, e := syscall.Syscall(syscall.SYS_MUNMAP, addr+uintptr(from*pg), uintptr(n*pg), 0); e != 0 {
		t.Fatal(e)
	}
	t.Cleanup(func() {
		syscall.Syscall(syscall.SYS_MUNMAP, addr, uintptr(from*pg), 0)
		if rest := pages - from - n; rest > 0 {
			syscall.Syscall(syscall.SYS_MUNMAP, addr+uintptr((from+n)*pg), uintptr(rest*pg), 0)
		}
	})
	return m
}

// TestMapped: a range with an unmapped page in it is refused; Go memory
// and a fully mapped range are accepted.
func TestMapped(t *testing.T) {
	pg := syscall.Getpagesize()
	b := mapWithHole(t, 3, 1, 2)
	cases := []struct {
		b    []byte
		want bool
	}{
		{b[:pg], true},
		{b[pg-1 : pg], true},
		{b[:pg+1], false},
		{b[:2*pg], false},
		{b[pg : 2*pg], false},
		{make([]byte, 1<<20), true},
		{nil, true},
	}
	for i, c := range cases {
		if got := Mapped(c.b); got != c.want {
			t.Errorf("case %d (%d bytes at offset %d): mapped %v, want %v", i, len(c.b), cap(b)-cap(c.b), got, c.want)
		}
	}
}

// TestChecked: a piece of at most a page passes without a system call,
// a larger one only when every page it covers is mapped.
func TestChecked(t *testing.T) {
	pg := syscall.Getpagesize()
	m := mapWithHole(t, 3, 2, 1)
	for _, c := range []struct {
		b    []byte
		want bool
	}{{m[:2*pg], true}, {m[:2*pg+1], false}, {m[:3*pg], false}, {m[2*pg : 3*pg], true}, {nil, true}} {
		if got := Checked(c.b); got != c.want {
			t.Errorf("%d bytes at offset %d: Checked %v, want %v", len(c.b), cap(m)-cap(c.b), got, c.want)
		}
	}
}

// TestMappedHole: a hole between two mapped pages is found too (msync
// walks every mapping over the range), and a file mapped shared passes
// without being written back.
func TestMappedHole(t *testing.T) {
	pg := syscall.Getpagesize()
	m := mapWithHole(t, 3, 1, 1)
	if Mapped(m[:3*pg]) || Mapped(m[pg-1:2*pg+1]) {
		t.Error("a range over an unmapped middle page passed")
	}
	if !Mapped(m[2*pg : 3*pg]) {
		t.Error("the mapped page after the hole was refused")
	}
	f, err := os.CreateTemp(t.TempDir(), "mapped")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := f.Truncate(int64(2 * pg)); err != nil {
		t.Fatal(err)
	}
	fm, err := syscall.Mmap(int(f.Fd()), 0, 2*pg, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_SHARED)
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Munmap(fm)
	fm[0] = 1
	if !Mapped(fm) {
		t.Error("a shared file mapping was refused")
	}
}
