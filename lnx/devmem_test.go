// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only

package lnx

import (
	"bytes"
	"testing"
	"unsafe"
)

func TestStagingClasses(t *testing.T) {
	for _, c := range []struct {
		n    uint64
		want int
	}{{0, 0}, {1, 0}, {64 << 10, 0}, {64<<10 + 1, 1}, {128 << 10, 1}, {1 << 20, 4}, {1<<20 + 1, 5}} {
		if got := stagingClass(c.n); got != c.want {
			t.Errorf("stagingClass(%d) = %d, want %d", c.n, got, c.want)
		}
	}
	var p stagingPool
	defer p.drain()
	a, err := p.get(100000)
	if err != nil {
		t.Fatal(err)
	}
	if len(a) != 100000 || cap(a) != 128<<10 {
		t.Fatalf("len %d cap %d", len(a), cap(a))
	}
	a[len(a)-1] = 1
	p.put(a)
	b, _ := p.get(70000)
	if &b[0] != &a[0] {
		t.Error("a released buffer of the same class was not reused")
	}
	p.put(b)
}

// Host-only gather/scatter across iov boundaries (device kinds are covered
// by tests/c/hmem_xfer against the emulated device).
func TestGatherScatterHost(t *testing.T) {
	src := []byte("0123456789abcdefghij")
	p1, p2 := make([]byte, 7), make([]byte, 13)
	copy(p1, src[:7])
	copy(p2, src[7:])
	iov := []Buf{{unsafe.Pointer(&p1[0]), 7}, {unsafe.Pointer(&p2[0]), 13}}
	kinds := make([]memKind, 2)
	dst := make([]byte, 20)
	if err := gather(dst, iov, kinds); err != nil || !bytes.Equal(dst, src) {
		t.Fatalf("gather = %q, %v", dst, err)
	}
	o1, o2 := make([]byte, 12), make([]byte, 4)
	out := []Buf{{unsafe.Pointer(&o1[0]), 12}, {unsafe.Pointer(&o2[0]), 4}}
	n, err := scatterKinds(out, kinds, src)
	if err != nil || n != 16 || string(o1)+string(o2) != string(src[:16]) {
		t.Fatalf("scatter = %d %q %q, %v", n, o1, o2, err)
	}
}
