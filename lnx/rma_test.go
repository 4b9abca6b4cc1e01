// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only

package lnx

import (
	"errors"
	"math"
	"runtime"
	"strings"
	"testing"
	"unsafe"

	"github.com/lnx-go/lnx-go/internal/fi"
)

func TestRMAHdrRoundTrip(t *testing.T) {
	h := rmaHdr{kind: rmaAtomic, op: OpCswapGt, dt: DtDouble, flags: rfFetch | rfCompare, status: 13,
		id: 1 << 40, key: ^uint64(0), addr: 0x7fff00001234, len: 4096, data: 0xdeadbeef, count: 512}
	b := make([]byte, rmaHdrLen)
	h.put(b)
	var g rmaHdr
	if !g.get(b) || g != h {
		t.Fatalf("round trip: %+v, want %+v", g, h)
	}
	if g.get(b[:rmaHdrLen-1]) {
		t.Fatal("a short header decoded")
	}
}

// TestRMATarget: key, access and range checks, virtual and 0-based
// addressing, and the gaps of a several-iov MR.
func TestRMATarget(t *testing.T) {
	mem := make([]byte, 256)
	base := uintptr(unsafe.Pointer(&mem[0]))
	d := &Domain{}
	ro := &MR{dom: d, Access: fi.REMOTE_READ, Key: 1, base: base, len: 64}
	rw := &MR{dom: d, Access: fi.REMOTE_READ | fi.REMOTE_WRITE, Key: 2, base: base + 64, len: 64}
	// Two pieces with a 32-byte gap between them.
	gap := &MR{dom: d, Access: fi.REMOTE_WRITE, Key: 3, base: base + 128, len: 96,
		segs: []Buf{{unsafe.Pointer(&mem[128]), 32}, {unsafe.Pointer(&mem[192]), 32}}}
	d.keys.remote = map[uint64]*MR{1: ro, 2: rw, 3: gap}
	cases := []struct {
		name             string
		virt             bool
		key, addr, n, ac uint64
		want             error
		wantLen          int
	}{
		{"read ro", false, 1, 0, 64, fi.REMOTE_READ, nil, 1},
		{"write ro", false, 1, 0, 8, fi.REMOTE_WRITE, fi.EACCES, 0},
		{"unknown key", false, 9, 0, 8, fi.REMOTE_READ, fi.EKEYREJECTED, 0},
		{"past end", false, 2, 60, 5, fi.REMOTE_WRITE, fi.EINVAL, 0},
		{"huge offset", false, 2, ^uint64(0) - 2, 5, fi.REMOTE_WRITE, fi.EINVAL, 0},
		{"virt ok", true, 2, uint64(base) + 64 + 10, 54, fi.REMOTE_WRITE, nil, 1},
		{"virt below", true, 2, uint64(base) + 63, 2, fi.REMOTE_WRITE, fi.EINVAL, 0},
		{"virt past", true, 2, uint64(base) + 120, 9, fi.REMOTE_WRITE, fi.EINVAL, 0},
		{"first piece", false, 3, 0, 32, fi.REMOTE_WRITE, nil, 1},
		{"second piece", false, 3, 64, 32, fi.REMOTE_WRITE, nil, 1},
		{"across the gap", false, 3, 16, 32, fi.REMOTE_WRITE, fi.EINVAL, 0},
		{"zero bytes", false, 2, 64, 0, fi.REMOTE_WRITE, nil, 0},
	}
	for _, c := range cases {
		d.Info.Domain.MRMode = 0
		if c.virt {
			d.Info.Domain.MRMode = fi.MR_VIRT_ADDR
		}
		got, _, err := d.rmaTarget(c.key, c.addr, c.n, c.ac)
		if c.want == nil && err != nil || c.want != nil && !errors.Is(err, c.want) {
			t.Errorf("%s: error %v, want %v", c.name, err, c.want)
			continue
		}
		if len(got) != c.wantLen {
			t.Errorf("%s: %d pieces, want %d", c.name, len(got), c.wantLen)
		}
		var n uint64
		for _, g := range got {
			n += uint64(len(g))
		}
		if err == nil && n != c.n {
			t.Errorf("%s: %d bytes, want %d", c.name, n, c.n)
		}
	}
}

func TestApplyAtomic(t *testing.T) {
	u64 := func(v ...uint64) []byte { return unsafe.Slice((*byte)(unsafe.Pointer(&v[0])), 8*len(v)) }
	mem := u64(5, 0xf0, 7)
	applyAtomic(OpSum, DtUint64, 8, mem, u64(3, 1, ^uint64(0)), nil)
	if want := u64(8, 0xf1, 6); string(mem) != string(want) {
		t.Errorf("sum: %v", mem)
	}
	applyAtomic(OpMswap, DtUint64, 8, mem, u64(0xff, 0xff, 0xff), u64(0x0f, 0, ^uint64(0)))
	if want := u64(0xf, 0xf1, 0xff); string(mem) != string(want) {
		t.Errorf("mswap: %v", mem)
	}
	applyAtomic(OpCswapGt, DtUint64, 8, mem, u64(1, 2, 3), u64(0x10, 0, 0x100))
	if want := u64(1, 0xf1, 3); string(mem) != string(want) {
		t.Errorf("cswap_gt: %v", mem)
	}
	f := []float64{1.5, -2}
	o := []float64{2, math.Inf(-1)}
	applyAtomic(OpMin, DtDouble, 8, unsafe.Slice((*byte)(unsafe.Pointer(&f[0])), 16),
		unsafe.Slice((*byte)(unsafe.Pointer(&o[0])), 16), nil)
	if f[0] != 1.5 || !math.IsInf(f[1], -1) {
		t.Errorf("min: %v", f)
	}
	i8 := []int8{-3, 0}
	v8 := []int8{7, 5}
	applyAtomic(OpLxor, DtInt8, 1, unsafe.Slice((*byte)(unsafe.Pointer(&i8[0])), 2),
		unsafe.Slice((*byte)(unsafe.Pointer(&v8[0])), 2), nil)
	if i8[0] != 0 || i8[1] != 1 {
		t.Errorf("lxor: %v", i8)
	}
}

func TestAtomicValid(t *testing.T) {
	if n, sz, err := AtomicValid(AtomicPlain, OpSum, DtUint64); err != nil || sz != 8 || n != AtomicMaxBytes/8 {
		t.Errorf("sum u64: %d %d %v", n, sz, err)
	}
	for _, c := range []struct{ kind, op, dt int }{
		{AtomicPlain, OpRead, DtInt32},     // no operand to apply
		{AtomicPlain, OpCswap, DtInt32},    // compare ops need fi_compare_atomic
		{AtomicCompare, OpSum, DtInt32},    // and only they
		{AtomicPlain, OpBor, DtDouble},     // bitwise on floats
		{AtomicCompare, OpMswap, DtFloat},  // masked swap on floats
		{AtomicFetch, OpSum, 10},           // FI_FLOAT_COMPLEX
		{AtomicFetch, OpSum, 12},           // FI_LONG_DOUBLE
		{AtomicFetch, OpMswap + 1, DtInt8}, // past the last op
		{AtomicPlain, -1, DtInt8},          // not an op
	} {
		if _, _, err := AtomicValid(c.kind, c.op, c.dt); !errors.Is(err, fi.EOPNOTSUPP) {
			t.Errorf("%+v: %v, want EOPNOTSUPP", c, err)
		}
	}
}

// FI_LNX_DUMP_STATS shows one-sided traffic: what the initiator posted
// over which core, and what the target executed.
func TestRMAStats(t *testing.T) {
	p := newPair(t)
	mem := make([]byte, 4096)
	mr, err := p.d.RegMR(MRAttr{Iov: []Buf{{unsafe.Pointer(&mem[0]), uint64(len(mem))}},
		Access: fi.REMOTE_READ | fi.REMOTE_WRITE, RequestedKey: 7})
	if err != nil {
		t.Fatal(err)
	}
	defer mr.Close()
	src := []byte("one-sided")
	raddr := uint64(0)
	if p.d.Info.Domain.MRMode&fi.MR_VIRT_ADDR != 0 {
		raddr = uint64(uintptr(unsafe.Pointer(&mem[0])))
	}
	w := &RMAOp{Op: *bufOp(src, p.peerOf[0], 0, false), RAddr: raddr, Key: mr.Key}
	if err := p.ep[0].RMA(w); err != nil {
		t.Fatal(err)
	}
	if c := p.wait(t, 0); c.Flags != fi.RMA|fi.WRITE {
		t.Fatalf("write completion %+v", c)
	}
	dst := make([]byte, len(src))
	r := &RMAOp{Op: *bufOp(dst, p.peerOf[0], 0, false), RAddr: raddr, Key: mr.Key, Read: true}
	if err := p.ep[0].RMA(r); err != nil {
		t.Fatal(err)
	}
	if c := p.wait(t, 0); c.Flags != fi.RMA|fi.READ || string(dst) != string(src) {
		t.Fatalf("read completion %+v, data %q", c, dst)
	}
	var a, b strings.Builder
	p.ep[0].dumpStats(&a)
	p.ep[1].dumpStats(&b)
	if want := "core shm: tx 0 msgs 0 bytes, rx 0 msgs 0 bytes, 0 errors, 0 reordered, one-sided: 1 writes 1 reads 0 atomics 18 bytes initiated, 0 executed as target"; !strings.Contains(a.String(), want) {
		t.Errorf("initiator's stats %q lack %q", a.String(), want)
	}
	if want := "one-sided: 0 writes 0 reads 0 atomics 0 bytes initiated, 2 executed as target"; !strings.Contains(b.String(), want) {
		t.Errorf("target's stats %q lack %q", b.String(), want)
	}
	runtime.KeepAlive(mem)
}
