// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only

package ofi

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand"
	"os"
	"testing"
	"time"
	"unsafe"

	"github.com/lnx-go/lnx-go/internal/fi"
	"golang.org/x/sys/unix"
)

func TestMain(m *testing.M) {
	// Keep all traffic on loopback.
	if os.Getenv("FI_TCP_IFACE") == "" {
		os.Setenv("FI_TCP_IFACE", "lo")
	}
	if role := os.Getenv(helperEnv); role != "" {
		os.Exit(helperMain(role))
	}
	os.Exit(m.Run())
}

var testCfg = Config{Prov: "tcp;ofi_rxm", Domain: "lo", ProbeInterval: 50 * time.Millisecond,
	PeerTimeout: time.Second, CloseTimeout: 300 * time.Millisecond}

// rec records what a transport's Poll delivers.
type rec struct {
	t      *Transport
	arr    []got
	done   map[uint64]error
	pulls  map[any]pullRes // by the handle's Context (set before Pull)
	npull  int
	refuse int // refuse this many deliveries (flow control test)
	onArr  func(a *Arrival) bool
	errs   []error
}

type got struct {
	src  uint64
	hdr  Hdr
	size uint64
	data []byte
	rv   *Rendezvous
	peer *Peer
}

type pullRes struct {
	n   uint64
	err error
}

func newRec(t *Transport) *rec {
	return &rec{t: t, done: map[uint64]error{}, pulls: map[any]pullRes{}}
}

func (r *rec) arrival(a *Arrival) bool {
	if r.refuse > 0 {
		r.refuse--
		return false
	}
	if r.onArr != nil {
		return r.onArr(a)
	}
	g := got{src: a.Src, hdr: a.Hdr, size: a.Size, rv: a.Rndv, peer: a.Peer}
	if a.Rndv == nil {
		g.data = append([]byte{}, a.Eager...)
	}
	r.arr = append(r.arr, g)
	return true
}

func (r *rec) poll() int {
	return r.t.Poll(r.arrival, func(id uint64, err error) {
		if _, dup := r.done[id]; dup {
			r.errs = append(r.errs, fmt.Errorf("duplicate SendDone %d", id))
		}
		r.done[id] = err
	}, func(rv *Rendezvous, n uint64, err error) {
		key := rv.Context()
		if key == nil {
			r.errs = append(r.errs, errors.New("PullDone for a handle without context"))
		}
		if _, dup := r.pulls[key]; dup {
			r.errs = append(r.errs, fmt.Errorf("duplicate PullDone %v", key))
		}
		r.pulls[key] = pullRes{n, err}
		r.npull++
	})
}

// liveness bounds every wait of these tests for something that must
// happen. It is about hangs, not speed: a wait ends as soon as the thing
// happens, and a loaded machine (the race detector, other suites running
// at the same time) may take many times longer than an idle one.
const liveness = 60 * time.Second

// pump polls rs until cond holds; it fails the test if that has not
// happened within liveness.
func pump(t *testing.T, what string, cond func() bool, rs ...*rec) {
	t.Helper()
	deadline := time.Now().Add(liveness)
	for !cond() {
		for _, r := range rs {
			r.poll()
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s did not happen within %v (a hang, not slowness)", what, liveness)
		}
	}
	for _, r := range rs {
		for _, e := range r.errs {
			t.Error(e)
		}
		r.errs = nil
	}
}

func openT(t *testing.T, cfg Config) *Transport {
	t.Helper()
	tr, err := Open(RuntimeVersion(), cfg)
	if err != nil {
		if _, gerr := GetInfo(RuntimeVersion(), "tcp;ofi_rxm", "lo", CoreCaps); gerr != nil {
			t.Skipf("tcp;ofi_rxm on lo unavailable: %v", gerr)
		}
		t.Fatal(err)
	}
	t.Cleanup(func() { tr.Close() })
	return tr
}

// pair opens two transports connected to each other.
func pair(t *testing.T, cfg Config) (a, b *rec, ab, ba *Peer) {
	t.Helper()
	ta, tb := openT(t, cfg), openT(t, cfg)
	var err error
	if ab, err = ta.Connect(tb.Addr()); err != nil {
		t.Fatal(err)
	}
	if ba, err = tb.Connect(ta.Addr()); err != nil {
		t.Fatal(err)
	}
	return newRec(ta), newRec(tb), ab, ba
}

// send retries on ErrAgain, polling everyone.
func send(t *testing.T, from *rec, p *Peer, h Hdr, iov [][]byte, id uint64, rs ...*rec) bool {
	t.Helper()
	deadline := time.Now().Add(liveness)
	for {
		done, err := from.t.Send(p, h, iov, id)
		if err == nil {
			return done
		}
		if !errors.Is(err, ErrAgain) {
			t.Fatalf("send %d: %v", id, err)
		}
		if time.Now().After(deadline) {
			t.Fatalf("send %d: still ErrAgain after 20s", id)
		}
		from.poll()
		for _, r := range rs {
			r.poll()
		}
	}
}

func mmapBuf(t testing.TB, n int) []byte {
	t.Helper()
	b, err := unix.Mmap(-1, 0, max(n, 1), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_ANON|unix.MAP_PRIVATE)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Munmap(b) })
	return b[:n]
}

func fill(b []byte, seed int64) {
	rand.New(rand.NewSource(seed)).Read(b)
}

func TestAddrBlobs(t *testing.T) {
	a := openT(t, testCfg)
	addr := a.Addr()
	id, err := AddrID(addr)
	if err != nil || id != a.ID() || id == 0 {
		t.Fatalf("AddrID = %x, %v; ID %x", id, err, a.ID())
	}
	bad := map[string][]byte{
		"nil":       nil,
		"short":     addr[:10],
		"header":    addr[:addrHdr],
		"truncated": addr[:len(addr)-1],
		"long":      append(append([]byte{}, addr...), 0),
	}
	v := append([]byte{}, addr...)
	v[0] = 9
	bad["version"] = v
	z := append([]byte{}, addr...)
	binary.LittleEndian.PutUint64(z[8:], 0)
	bad["zero id"] = z
	e := append([]byte{}, addr...)
	binary.LittleEndian.PutUint32(e[4:], MaxEagerMax+1)
	bad["eager"] = e
	// Well formed, but a core address of another length (format).
	bad["name length"] = encodeAddr(12345, 100, 0, []byte{1, 2, 3})
	for name, b := range bad {
		if _, err := a.Connect(b); !errors.Is(err, ErrBadAddr) {
			t.Errorf("%s: Connect = %v, want ErrBadAddr", name, err)
		}
	}
	// Random garbage never panics.
	r := rand.New(rand.NewSource(1))
	for i := 0; i < 2000; i++ {
		b := make([]byte, r.Intn(80))
		r.Read(b)
		if i%2 == 0 && len(b) > 0 {
			b[0] = addrVersion
		}
		a.Connect(b)
	}
	// Same id at another address is refused; the same address is the same Peer.
	b := openT(t, testCfg)
	p1, err := a.Connect(b.Addr())
	if err != nil {
		t.Fatal(err)
	}
	if p2, err := a.Connect(b.Addr()); err != nil || p2 != p1 {
		t.Fatalf("reconnect: %p %v, want %p", p2, err, p1)
	}
	if p1.ID() != b.ID() || p1.EagerMax() != min(a.EagerMax(), b.EagerMax()) {
		t.Fatalf("peer id %x eager %d", p1.ID(), p1.EagerMax())
	}
	other := encodeAddr(b.ID(), b.EagerMax(), 0, a.name) // b's id, a's core address
	if _, err := a.Connect(other); !errors.Is(err, ErrBadAddr) {
		t.Fatalf("id at another address: %v", err)
	}
	if _, err := (&Transport{closed: true}).Send(nil, Hdr{}, nil, 0); !errors.Is(err, ErrClosed) {
		t.Fatalf("Send on a closed transport: %v", err)
	}
	if _, err := a.Send(nil, Hdr{}, nil, 1); !errors.Is(err, ErrBadHandle) {
		t.Fatalf("Send(nil) = %v", err)
	}
	if err := a.Pull(nil, nil); !errors.Is(err, ErrBadHandle) {
		t.Fatalf("Pull(nil) = %v", err)
	}
	if err := a.Discard(&Rendezvous{}); !errors.Is(err, ErrBadHandle) {
		t.Fatalf("Discard(foreign) = %v", err)
	}
}

func TestEagerSizes(t *testing.T) {
	a, b, ab, _ := pair(t, testCfg)
	em := ab.EagerMax()
	if em != DefaultEagerMax {
		t.Fatalf("EagerMax %d", em)
	}
	injectMax := a.t.inject - hdrEager
	// (rxm grants an inject size that holds every eager payload: then
	// nothing here goes with a completion.)
	sizes := []int{0, 1, min(max(injectMax, 0), em), min(injectMax+1, em), 88, 89, 4096, em - 1, em}
	src := mmapBuf(t, em)
	fill(src, 7)
	var want []got
	var pending []uint64
	id := uint64(100)
	for _, n := range sizes {
		for _, npieces := range []int{1, 2, 6} {
			// Split src[:n] into npieces (6 > the core's iov limit: staged copy).
			var iov [][]byte
			for k := 0; k < npieces; k++ {
				lo, hi := n*k/npieces, n*(k+1)/npieces
				iov = append(iov, src[lo:hi])
			}
			id++
			h := Hdr{Tag: id, Data: ^id, Flags: uint32(n)}
			done := send(t, a, ab, h, iov, id, b)
			if inj := hdrEager+n <= a.t.inject; done != inj {
				t.Fatalf("size %d: done=%v, inject path %v", n, done, inj)
			}
			if !done {
				pending = append(pending, id)
			}
			want = append(want, got{hdr: h, size: uint64(n), data: src[:n]})
		}
	}
	pump(t, "eager arrivals", func() bool {
		return len(b.arr) >= len(want) && len(a.done) == len(pending)
	}, a, b)
	for _, id := range pending {
		if err, ok := a.done[id]; !ok || err != nil {
			t.Fatalf("send %d: done %v err %v", id, ok, err)
		}
	}
	for i, w := range want {
		g := b.arr[i]
		if g.src != a.t.ID() || g.hdr != w.hdr || g.size != w.size || g.rv != nil || !bytes.Equal(g.data, w.data) {
			t.Fatalf("arrival %d: src %x hdr %+v size %d rv %v, want hdr %+v size %d (data equal %v)",
				i, g.src, g.hdr, g.size, g.rv, w.hdr, w.size, bytes.Equal(g.data, w.data))
		}
		if g.peer == nil || g.peer.ID() != a.t.ID() {
			t.Fatalf("arrival %d: Peer %v", i, g.peer)
		}
	}
	if s := a.t.Stats(); s.Injected == 0 || s.EagerSends != uint64(len(pending)) {
		t.Fatalf("stats %+v: want %d eager sends with a completion", s, len(pending))
	}
}

// rndv sends size bytes from src and pulls them into dst on the other side.
func rndv(t *testing.T, a, b *rec, ab *Peer, id uint64, src [][]byte, dst [][]byte) pullRes {
	t.Helper()
	var size uint64
	for _, s := range src {
		size += uint64(len(s))
	}
	n0 := len(b.arr)
	if done := send(t, a, ab, Hdr{Tag: id}, src, id, b); done {
		t.Fatal("rendezvous send reported done")
	}
	pump(t, "RTS", func() bool { return len(b.arr) > n0 }, a, b)
	g := b.arr[n0]
	if g.rv == nil || g.size != size || g.rv.Size() != size || g.hdr.Tag != id || g.rv.Src() != a.t.ID() {
		t.Fatalf("arrival: %+v", g)
	}
	g.rv.SetContext(id)
	if err := b.t.Pull(g.rv, dst); err != nil {
		t.Fatal(err)
	}
	pump(t, "pull and send completion", func() bool {
		_, pd := b.pulls[id]
		_, sd := a.done[id]
		return pd && sd
	}, a, b)
	if err := a.done[id]; err != nil {
		t.Fatalf("SendDone: %v", err)
	}
	return b.pulls[id]
}

func TestRendezvous(t *testing.T) {
	// EagerMax+1 would go as a tagged eager message once a has heard
	// from b (tagged_test.go): this test is about the rendezvous.
	cfg := testCfg
	cfg.NoTaggedEager = true
	a, b, ab, _ := pair(t, cfg)
	for i, c := range []struct {
		size     int
		sp, dp   int
		goMemory bool
	}{
		{1 << 20, 1, 1, false},
		{4 << 20, 1, 1, false},
		{4 << 20, 3, 4, false},
		{DefaultEagerMax + 1, 2, 2, false},
		{1 << 20, 1, 1, true},
		{100 << 10, 4, 3, true},
	} {
		srcMem := mmapBuf(t, c.size)
		fill(srcMem, int64(i))
		var dstMem []byte
		if c.goMemory {
			dstMem = make([]byte, c.size)
		} else {
			dstMem = mmapBuf(t, c.size)
		}
		split := func(m []byte, k int) (out [][]byte) {
			for j := 0; j < k; j++ {
				out = append(out, m[len(m)*j/k:len(m)*(j+1)/k])
			}
			return out
		}
		res := rndv(t, a, b, ab, uint64(1000+i), split(srcMem, c.sp), split(dstMem, c.dp))
		if res.err != nil || res.n != uint64(c.size) {
			t.Fatalf("case %d: pull n=%d err=%v", i, res.n, res.err)
		}
		if !bytes.Equal(srcMem, dstMem) {
			t.Fatalf("case %d: data differs", i)
		}
	}
	if s := b.t.Stats(); s.Pulls != 6 || s.Outstanding != b.t.cfg.RecvPool {
		t.Fatalf("receiver stats %+v", s)
	}
	if s := a.t.Stats(); s.RndvSends != 6 || s.Outstanding != a.t.cfg.RecvPool {
		t.Fatalf("sender stats %+v", s)
	}
}

func TestTruncationAndDiscard(t *testing.T) {
	a, b, ab, _ := pair(t, testCfg)
	src := mmapBuf(t, 1<<20)
	fill(src, 3)
	dst := mmapBuf(t, 300<<10)
	res := rndv(t, a, b, ab, 1, [][]byte{src}, [][]byte{dst})
	if res.err != nil || res.n != 300<<10 || !bytes.Equal(dst, src[:300<<10]) {
		t.Fatalf("truncated pull: n=%d err=%v equal=%v", res.n, res.err, bytes.Equal(dst, src[:300<<10]))
	}
	// No room at all.
	res = rndv(t, a, b, ab, 2, [][]byte{src}, nil)
	if res.err != nil || res.n != 0 {
		t.Fatalf("zero-capacity pull: n=%d err=%v", res.n, res.err)
	}
	// Discard.
	n0 := len(b.arr)
	send(t, a, ab, Hdr{Tag: 3}, [][]byte{src}, 3, b)
	pump(t, "RTS", func() bool { return len(b.arr) > n0 }, a, b)
	rv := b.arr[n0].rv
	if err := b.t.Discard(rv); err != nil {
		t.Fatal(err)
	}
	if err := b.t.Discard(rv); !errors.Is(err, ErrBadHandle) {
		t.Fatalf("second Discard: %v", err)
	}
	pump(t, "discarded send", func() bool { _, ok := a.done[3]; return ok }, a, b)
	if err := a.done[3]; err != nil {
		t.Fatalf("discarded send: %v", err)
	}
	// Too many pieces: the pull fails at once and the sender is told.
	n0 = len(b.arr)
	send(t, a, ab, Hdr{Tag: 4}, [][]byte{src}, 4, b)
	pump(t, "RTS", func() bool { return len(b.arr) > n0 }, a, b)
	_, maxPull := b.t.MaxIOV()
	many := make([][]byte, maxPull+1)
	for i := range many {
		many[i] = dst[i*100 : i*100+100]
	}
	if err := b.t.Pull(b.arr[n0].rv, many); !errors.Is(err, ErrTooManyIOV) {
		t.Fatalf("Pull with %d pieces: %v", len(many), err)
	}
	pump(t, "rejected send", func() bool { _, ok := a.done[4]; return ok }, a, b)
	if err := a.done[4]; !errors.Is(err, ErrRemote) {
		t.Fatalf("rejected send: %v", err)
	}
	maxSend, _ := a.t.MaxIOV()
	big := make([][]byte, maxSend+1)
	for i := range big {
		big[i] = src[i*(64<<10) : (i+1)*(64<<10)]
	}
	if _, err := a.t.Send(ab, Hdr{}, big, 5); !errors.Is(err, ErrTooManyIOV) {
		t.Fatalf("rendezvous Send with %d pieces: %v", len(big), err)
	}
	// Everything is still usable.
	dst2 := mmapBuf(t, 1<<20)
	if res = rndv(t, a, b, ab, 6, [][]byte{src}, [][]byte{dst2}); res.err != nil || !bytes.Equal(src, dst2) {
		t.Fatalf("after discard: %v", res.err)
	}
}

// TestOrder sends 1000 mixed eager and rendezvous messages without waiting
// and checks they arrive in order, intact. The receiver pulls each
// rendezvous message as it arrives.
func TestOrder(t *testing.T) {
	a, b, ab, _ := pair(t, testCfg)
	const n = 1000
	sizeOf := func(i int) int {
		switch {
		case i%10 == 3:
			return DefaultEagerMax + 1 + i*97
		case i%10 == 7:
			return 200<<10 + i
		default:
			return (i * 131) % 3000
		}
	}
	offs := make([]int, n+1)
	for i := 0; i < n; i++ {
		offs[i+1] = offs[i] + sizeOf(i)
	}
	src := mmapBuf(t, offs[n])
	fill(src, 11)
	dst := mmapBuf(t, offs[n])
	var order []uint64
	pulled := 0
	b.onArr = func(ar *Arrival) bool {
		i := int(ar.Hdr.Tag)
		order = append(order, ar.Hdr.Tag)
		if i >= n || ar.Size != uint64(sizeOf(i)) {
			t.Errorf("arrival tag %d size %d", i, ar.Size)
			return true
		}
		if ar.Rndv != nil {
			ar.Rndv.SetContext(i)
			if err := b.t.Pull(ar.Rndv, [][]byte{dst[offs[i]:offs[i+1]]}); err != nil {
				t.Errorf("pull %d: %v", i, err)
			}
			pulled++
		} else {
			copy(dst[offs[i]:], ar.Eager)
		}
		return true
	}
	pending := 0
	for i := 0; i < n; i++ {
		if done := send(t, a, ab, Hdr{Tag: uint64(i)}, [][]byte{src[offs[i]:offs[i+1]]}, uint64(i), b); !done {
			pending++
		}
	}
	pump(t, "1000 messages", func() bool {
		return len(order) >= n && b.npull >= pulled && len(a.done) == pending
	}, a, b)
	for i, tag := range order {
		if tag != uint64(i) {
			t.Fatalf("arrival %d has tag %d", i, tag)
		}
	}
	for id, err := range a.done {
		if err != nil {
			t.Fatalf("send %d: %v", id, err)
		}
	}
	for _, res := range b.pulls {
		if res.err != nil {
			t.Fatalf("pull: %v", res.err)
		}
	}
	if !bytes.Equal(src, dst) {
		t.Fatal("data differs")
	}
	t.Logf("sender %+v", a.t.Stats())
	t.Logf("receiver %+v", b.t.Stats())
}

// TestFlowControl refuses deliveries and checks that messages come back in
// order, including a rendezvous handle offered again.
func TestFlowControl(t *testing.T) {
	a, b, ab, _ := pair(t, testCfg)
	src := mmapBuf(t, 64<<10)
	fill(src, 5)
	send(t, a, ab, Hdr{Tag: 0}, [][]byte{src[:10]}, 0, b)
	send(t, a, ab, Hdr{Tag: 1}, [][]byte{src}, 1, b)
	send(t, a, ab, Hdr{Tag: 2}, [][]byte{src[:100]}, 2, b)
	b.refuse = 5
	pump(t, "arrivals", func() bool { return len(b.arr) == 3 }, a, b)
	for i, g := range b.arr {
		if g.hdr.Tag != uint64(i) {
			t.Fatalf("arrival %d tag %d", i, g.hdr.Tag)
		}
	}
	dst := mmapBuf(t, 64<<10)
	b.arr[1].rv.SetContext(1)
	if err := b.t.Pull(b.arr[1].rv, [][]byte{dst}); err != nil {
		t.Fatal(err)
	}
	pump(t, "pull", func() bool { return len(b.pulls) == 1 && len(a.done) >= 1 }, a, b)
	if !bytes.Equal(src, dst) {
		t.Fatal("data differs")
	}
}

// TestBothDirections runs traffic both ways at once between two
// transports, and a third transport in the same process.
func TestBothDirections(t *testing.T) {
	a, b, ab, ba := pair(t, testCfg)
	c := newRec(openT(t, testCfg))
	ca, err := c.t.Connect(a.t.Addr())
	if err != nil {
		t.Fatal(err)
	}
	src := mmapBuf(t, 1<<20)
	fill(src, 9)
	pullAll := func(r *rec) func(*Arrival) bool {
		return func(ar *Arrival) bool {
			g := got{src: ar.Src, hdr: ar.Hdr, size: ar.Size}
			if ar.Rndv != nil {
				g.data = make([]byte, ar.Size)
				ar.Rndv.SetContext(len(r.arr))
				if err := r.t.Pull(ar.Rndv, [][]byte{g.data}); err != nil {
					t.Error(err)
				}
			}
			r.arr = append(r.arr, g)
			return true
		}
	}
	a.onArr, b.onArr, c.onArr = pullAll(a), pullAll(b), pullAll(c)
	for i := 0; i < 20; i++ {
		send(t, a, ab, Hdr{Tag: uint64(i)}, [][]byte{src}, uint64(i), b, c)
		send(t, b, ba, Hdr{Tag: uint64(i)}, [][]byte{src}, uint64(i), a, c)
		send(t, c, ca, Hdr{Tag: uint64(100 + i)}, [][]byte{src}, uint64(i), a, b)
	}
	pump(t, "both directions", func() bool {
		return len(a.done) == 20 && len(b.done) == 20 && len(c.done) == 20 &&
			len(a.pulls) == 40 && len(b.pulls) == 20
	}, a, b, c)
	for _, r := range []*rec{a, b} {
		for _, g := range r.arr {
			if !bytes.Equal(g.data, src) {
				t.Fatalf("data from %x tag %d differs", g.src, g.hdr.Tag)
			}
		}
	}
	if len(c.arr) != 0 {
		t.Fatalf("c got %d arrivals", len(c.arr))
	}
}

// ctsCfg keeps the rendezvous on the CTS protocol (no RMA reads), for the
// tests of its failure handling.
var ctsCfg = func() Config { c := testCfg; c.NoRead = true; return c }()

// TestSenderClosesDuringPull: the receiver has posted its receive and
// sent the CTS; the sender closes before sending data. The pull fails.
func TestSenderClosesDuringPull(t *testing.T) {
	a, b, ab, _ := pair(t, ctsCfg)
	src := mmapBuf(t, 1<<20)
	dst := mmapBuf(t, 1<<20)
	send(t, a, ab, Hdr{}, [][]byte{src}, 1, b)
	pump(t, "RTS", func() bool { return len(b.arr) == 1 }, a, b)
	b.arr[0].rv.SetContext(0)
	if err := b.t.Pull(b.arr[0].rv, [][]byte{dst}); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 100; i++ {
		b.poll() // the CTS leaves; a never reads it
	}
	if err := a.t.Close(); err != nil {
		t.Fatal(err)
	}
	pump(t, "failed pull", func() bool { return len(b.pulls) == 1 }, b)
	for _, res := range b.pulls {
		if !errors.Is(res.err, ErrPeerGone) {
			t.Fatalf("pull after sender closed: n=%d err=%v", res.n, res.err)
		}
	}
	if _, err := b.t.Send(b.arr[0].peer, Hdr{}, nil, 9); !errors.Is(err, ErrPeerGone) {
		t.Fatalf("send to closed peer: %v", err)
	}
}

// TestReceiverClosesBeforePull: the sender waits for a CTS that never
// comes because the receiver closes.
func TestReceiverClosesBeforePull(t *testing.T) {
	a, b, ab, _ := pair(t, testCfg)
	src := mmapBuf(t, 1<<20)
	send(t, a, ab, Hdr{}, [][]byte{src}, 1, b)
	send(t, a, ab, Hdr{}, [][]byte{src[:5000]}, 2, b)
	pump(t, "RTS", func() bool { return len(b.arr) == 2 }, a, b)
	if err := b.t.Close(); err != nil {
		t.Fatal(err)
	}
	pump(t, "failed send", func() bool { _, ok := a.done[1]; return ok }, a)
	if err := a.done[1]; !errors.Is(err, ErrPeerGone) {
		t.Fatalf("send: %v", err)
	}
	if !ab.Gone() {
		t.Fatal("peer not gone")
	}
}

// TestCloseMidTransfer closes one side while the data of 16 MiB rendezvous
// transfers is moving, in both roles. The survivor's Poll reports errors
// (or, if the data made it, success) and nothing hangs or crashes.
func TestCloseMidTransfer(t *testing.T) {
	for _, closeSender := range []bool{true, false} {
		t.Run(fmt.Sprintf("closeSender=%v", closeSender), func(t *testing.T) {
			a, b, ab, _ := pair(t, ctsCfg)
			const k, size = 4, 16 << 20
			src := mmapBuf(t, size)
			for i := 0; i < k; i++ {
				send(t, a, ab, Hdr{Tag: uint64(i)}, [][]byte{src}, uint64(i), b)
			}
			pump(t, "RTS", func() bool { return len(b.arr) == k }, a, b)
			for i := 0; i < k; i++ {
				b.arr[i].rv.SetContext(i)
				if err := b.t.Pull(b.arr[i].rv, [][]byte{mmapBuf(t, size)}); err != nil {
					t.Fatal(err)
				}
			}
			// Let the CTSs arrive and the data start moving.
			pump(t, "data sends posted", func() bool {
				return a.t.Stats().Outstanding > a.t.cfg.RecvPool && a.t.ops[a.t.cfg.RecvPool].phase != phWaitCTS
			}, a, b)
			if closeSender {
				a.t.Close()
				pump(t, "pulls finished", func() bool { return len(b.pulls) == k }, b)
				failed := 0
				for _, res := range b.pulls {
					if res.err != nil {
						failed++
					}
				}
				t.Logf("%d of %d pulls failed; receiver %+v", failed, k, b.t.Stats())
				if failed != k {
					t.Fatalf("%d of %d pulls failed; the sender closed before any data moved", failed, k)
				}
			} else {
				err := b.t.Close()
				t.Logf("receiver close: %v", err)
				pump(t, "sends finished", func() bool { return len(a.done) == k }, a)
				failed := 0
				for _, err := range a.done {
					if err != nil {
						failed++
					}
				}
				t.Logf("%d of %d sends failed; sender %+v; receiver %+v", failed, k, a.t.Stats(), b.t.Stats())
				if failed != k {
					t.Fatalf("%d of %d sends failed; the receiver closed before any data moved", failed, k)
				}
			}
		})
	}
}

func TestOpenConfig(t *testing.T) {
	for _, c := range []Config{{EagerMax: MaxEagerMax + 1}, {RecvPool: -1}, {MaxOps: 10}} {
		c.Prov, c.Domain = "tcp;ofi_rxm", "lo"
		if tr, err := Open(RuntimeVersion(), c); err == nil {
			tr.Close()
			t.Errorf("Open(%+v) succeeded", c)
		}
	}
	if _, err := Open(RuntimeVersion(), Config{Prov: "no_such_provider_xyz"}); err == nil {
		t.Error("Open of an unknown provider succeeded")
	}
	// Everything by rendezvous.
	cfg := testCfg
	cfg.EagerMax = -1
	a, b, ab, _ := pair(t, cfg)
	if ab.EagerMax() != 0 {
		t.Fatalf("EagerMax %d", ab.EagerMax())
	}
	src := []byte("hello, rendezvous")
	dst := make([]byte, 64)
	if res := rndv(t, a, b, ab, 1, [][]byte{src}, [][]byte{dst}); res.err != nil || res.n != uint64(len(src)) ||
		string(dst[:res.n]) != string(src) {
		t.Fatalf("pull: %+v %q", res, dst[:res.n])
	}
	// An empty message is still eager.
	if done := send(t, a, ab, Hdr{Tag: 7}, nil, 2, b); !done {
		t.Fatal("empty send not done at once")
	}
	pump(t, "empty message", func() bool { return len(b.arr) == 2 }, a, b)
	if g := b.arr[1]; g.size != 0 || g.rv != nil || g.hdr.Tag != 7 {
		t.Fatalf("empty arrival %+v", g)
	}
}

// TestOneCoreReadPerPoll: a Poll that finds fewer completions than a batch
// reads the core CQ once. Every fi_cq_read runs the core's progress (system
// calls on tcp;ofi_rxm); a second, empty read per event cost ~1-2 us of
// one-way latency.
func TestOneCoreReadPerPoll(t *testing.T) {
	a, b, ab, _ := pair(t, testCfg)
	// Above the inject size, so that the send has a completion too. rxm
	// injects up to its whole eager limit, so that is a rendezvous
	// message, which b discards (the sender then completes).
	payload := make([]byte, a.t.inject+1)
	b.onArr = func(x *Arrival) bool {
		if x.Rndv != nil {
			if err := b.t.Discard(x.Rndv); err != nil {
				b.errs = append(b.errs, err)
			}
		}
		b.arr = append(b.arr, got{src: x.Src, hdr: x.Hdr, size: x.Size})
		return true
	}
	for i := 0; i < 20; i++ {
		n0 := len(b.arr)
		send(t, a, ab, Hdr{Tag: uint64(i)}, [][]byte{payload}, uint64(i), b)
		deadline := time.Now().Add(liveness)
		for len(b.arr) == n0 || !hasKey(a.done, uint64(i)) {
			for _, r := range []*rec{a, b} {
				before := r.t.Stats().CoreReads
				r.poll()
				if d := r.t.Stats().CoreReads - before; d != 1 {
					t.Fatalf("message %d: one Poll made %d core CQ reads", i, d)
				}
			}
			if time.Now().After(deadline) {
				t.Fatalf("message %d: no arrival", i)
			}
		}
	}
}

// TestInjectsLinkInjectSize: lnx asks the core for an inject size that
// holds its header and a whole eager payload (rxm offers 64 unless asked),
// so every eager message is one core inject: Send is done at once, and
// nothing waits for a core completion.
func TestInjectsLinkInjectSize(t *testing.T) {
	a, b, ab, _ := pair(t, testCfg)
	sizes := []int{1, 64, 1000, 4096, 8192, DefaultEagerMax}
	for i, n := range sizes {
		payload := make([]byte, n)
		fill(payload, int64(n))
		if done := send(t, a, ab, Hdr{Tag: uint64(n), Data: uint64(i)}, [][]byte{payload}, uint64(i), b); !done {
			t.Fatalf("%d bytes: Send not done at once (core inject size %d)", n, a.t.inject)
		}
		pump(t, "arrival", func() bool { return len(b.arr) == i+1 }, a, b)
		if g := b.arr[i]; g.hdr.Tag != uint64(n) || g.hdr.Data != uint64(i) || !bytes.Equal(g.data, payload) {
			t.Fatalf("%d bytes: arrival tag %d data %d, payload intact %v", n, g.hdr.Tag, g.hdr.Data,
				bytes.Equal(g.data, payload))
		}
	}
	if s := a.t.Stats(); s.Injected != uint64(len(sizes)) || s.EagerSends != 0 {
		t.Fatalf("sender stats %+v: want %d injected, no eager sends with a completion", s, len(sizes))
	}
}

func hasKey(m map[uint64]error, k uint64) bool {
	_, ok := m[k]
	return ok
}

// TestRendezvousWithDesc passes core registrations of both buffers, as
// lnx does for application MRs, through SendDesc and PullDesc.
func TestRendezvousWithDesc(t *testing.T) {
	a, b, ab, _ := pair(t, testCfg)
	src, dst := mmapBuf(t, 1<<20), mmapBuf(t, 1<<20)
	fill(src, 11)
	reg := func(tr *Transport, buf []byte) *MR {
		m, err := tr.dom.RegMR(uintptr(unsafe.Pointer(&buf[0])), uint64(len(buf)), fi.SEND|fi.RECV, 77, 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { m.Close() })
		return m
	}
	ms, md := reg(a.t, src), reg(b.t, dst)
	for deadline := time.Now().Add(liveness); ; {
		a.poll()
		b.poll()
		_, err := a.t.SendMR(ab, Hdr{Tag: 3}, [][]byte{src}, []*MR{ms}, 1)
		if err == nil {
			break
		}
		if !errors.Is(err, ErrAgain) || time.Now().After(deadline) {
			t.Fatal(err)
		}
	}
	pump(t, "RTS", func() bool { return len(b.arr) == 1 }, a, b)
	rv := b.arr[0].rv
	rv.SetContext(1)
	if err := b.t.PullMR(rv, [][]byte{dst}, []*MR{md}); err != nil {
		t.Fatal(err)
	}
	pump(t, "pull and send", func() bool { return len(b.pulls) == 1 && len(a.done) == 1 }, a, b)
	if r := b.pulls[1]; r.err != nil || r.n != 1<<20 || a.done[1] != nil {
		t.Fatalf("pull %+v, send %v", r, a.done[1])
	}
	if !bytes.Equal(src, dst) {
		t.Fatal("data differs")
	}
}
