// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only

package shm

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
	"unsafe"
)

func TestMain(m *testing.M) {
	if role := os.Getenv(childEnv); role != "" {
		os.Exit(childMain(role))
	}
	code := m.Run()
	if left := leftovers(); len(left) > 0 {
		fmt.Fprintf(os.Stderr, "FAIL: regions left in %s: %v\n", shmDir, left)
		code = 1
	}
	os.Exit(code)
}

// leftovers lists regions of this process still present in /dev/shm.
func leftovers() []string {
	ents, _ := os.ReadDir(shmDir)
	prefix := namePrefix + strconv.Itoa(os.Getpid()) + "-"
	var out []string
	for _, de := range ents {
		if strings.HasPrefix(de.Name(), prefix) {
			out = append(out, de.Name())
		}
	}
	return out
}

func mustOpen(t testing.TB, cfg Config) *Endpoint {
	t.Helper()
	e, err := Open(cfg)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { _ = e.Close() })
	return e
}

func mustConnect(t testing.TB, e *Endpoint, addr []byte) *Peer {
	t.Helper()
	p, err := e.Connect(addr)
	if err != nil {
		t.Fatalf("Connect: %v", err)
	}
	return p
}

// pair opens two endpoints, each connected to the other.
func pair(t testing.TB, ca, cb Config) (a, b *Endpoint, ab, ba *Peer) {
	t.Helper()
	a = mustOpen(t, ca)
	b = mustOpen(t, cb)
	return a, b, mustConnect(t, a, b.Addr()), mustConnect(t, b, a.Addr())
}

// liveness bounds every wait of these tests for something that must
// happen. It is about hangs, not speed: the wait ends as soon as the thing
// happens, and a loaded machine (the race detector, other suites running
// at the same time) may take many times longer than an idle one.
const liveness = 60 * time.Second

// spin calls f until it returns true; it fails the test if that has not
// happened within liveness.
func spin(t testing.TB, what string, f func() bool) {
	t.Helper()
	deadline := time.Now().Add(liveness)
	for i := 0; !f(); i++ {
		if i&255 == 0 && time.Now().After(deadline) {
			t.Fatalf("%s did not happen within %v (a hang, not slowness)", what, liveness)
		}
	}
}

// pattern returns n bytes of a xorshift sequence from seed, a 64-bit word
// a step (in host byte order): tests make tens of MiB of it under the race
// detector.
func pattern(n int, seed uint64) []byte {
	if n == 0 {
		return []byte{}
	}
	w := make([]uint64, (n+7)/8)
	x := seed*0x9e3779b97f4a7c15 + 1
	for i := range w {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		w[i] = x
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(&w[0])), n)
}

// split cuts b into pieces of the given sizes (the last takes the rest).
func split(b []byte, sizes ...int) [][]byte {
	var out [][]byte
	for _, s := range sizes {
		if s > len(b) {
			s = len(b)
		}
		out = append(out, b[:s:s])
		b = b[s:]
	}
	return append(out, b)
}

func firstDiff(a, b []byte) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

type captured struct {
	src   uint64
	peer  *Peer
	hdr   Hdr
	size  uint64
	data  []byte
	rndv  *Rendezvous
	eager bool
}

// collect polls e until n arrivals were captured (payloads copied).
func collect(t testing.TB, e *Endpoint, n int) []captured {
	t.Helper()
	var got []captured
	cb := func(a *Arrival) bool {
		c := captured{src: a.Src, peer: a.Peer, hdr: a.Hdr, size: a.Size, rndv: a.Rndv, eager: a.Rndv == nil}
		if a.Rndv == nil {
			c.data = append([]byte{}, a.Eager...)
		}
		got = append(got, c)
		return true
	}
	spin(t, fmt.Sprintf("%d arrivals", n), func() bool {
		e.Poll(cb, nil)
		return len(got) >= n
	})
	return got
}

func TestConfigValidation(t *testing.T) {
	bad := []Config{
		{Rings: -1}, {Rings: maxRings + 1}, {RingBytes: 5000}, {RingBytes: 2048},
		{BulkBytes: 4096}, {BulkBytes: 10000}, {RingBytes: 4096, EagerMax: 4096},
	}
	for _, c := range bad {
		if e, err := Open(c); err == nil {
			e.Close()
			t.Errorf("Open(%+v) succeeded", c)
		}
	}
	e := mustOpen(t, Config{RingBytes: 4096})
	if got, want := e.Config().EagerMax, int(maxEagerFor(4096)); got != want {
		t.Errorf("EagerMax = %d, want %d", got, want)
	}
	e2 := mustOpen(t, Config{EagerMax: -1})
	if e2.Config().EagerMax != 0 {
		t.Errorf("EagerMax = %d, want 0", e2.Config().EagerMax)
	}
}

func TestEagerSizes(t *testing.T) {
	a, b, ab, ba := pair(t, Config{}, Config{})
	max := ab.EagerMax()
	if max != DefaultEagerMax {
		t.Fatalf("EagerMax = %d", max)
	}
	sizes := []int{0, 1, 7, 47, 48, 63, 64, 65, 1000, max - 1, max}
	for i, n := range sizes {
		payload := pattern(n, uint64(i))
		h := Hdr{Tag: 0xdead0000 + uint64(i), Data: ^uint64(i), Flags: 0x80000001 | uint32(i)<<8}
		// Vary the iov shape: one piece, several pieces, with empty ones.
		iov := [][]byte{payload}
		if i%2 == 1 {
			iov = split(payload, 0, n/3, 1, 0)
		}
		done, err := a.Send(ab, h, iov, 99)
		if err != nil || !done {
			t.Fatalf("Send(%d): done=%v err=%v", n, done, err)
		}
		got := collect(t, b, 1)[0]
		if !got.eager || got.src != a.ID() || got.peer != ba || got.hdr != h || got.size != uint64(n) {
			t.Fatalf("size %d: arrival %+v", n, got)
		}
		if !bytes.Equal(got.data, payload) {
			t.Fatalf("size %d: payload differs at %d", n, firstDiff(got.data, payload))
		}
	}
	if n := b.Poll(func(*Arrival) bool { return true }, nil); n != 0 {
		t.Fatalf("spurious arrivals: %d", n)
	}
}

func TestZeroAllocSmallPath(t *testing.T) {
	a, b, ab, _ := pair(t, Config{}, Config{})
	buf := []byte{42}
	iov := [][]byte{buf}
	got := 0
	cb := func(ar *Arrival) bool { got += int(ar.Eager[0]); return true }
	a.Send(ab, Hdr{}, iov, 0)
	b.Poll(cb, nil)
	allocs := testing.AllocsPerRun(2000, func() {
		if _, err := a.Send(ab, Hdr{Tag: 1}, iov, 0); err != nil {
			t.Fatal(err)
		}
		for b.Poll(cb, nil) == 0 {
		}
		a.Poll(cb, nil)
	})
	if allocs != 0 {
		t.Fatalf("small-message path allocates %v times per message", allocs)
	}
	if got != 42*2002 { // one direct + AllocsPerRun's warm-up run + 2000
		t.Fatalf("got %d", got)
	}
}

// pullOne waits for one rendezvous arrival at b and returns the handle.
func waitRndv(t testing.TB, b *Endpoint) *Rendezvous {
	t.Helper()
	c := collect(t, b, 1)[0]
	if c.rndv == nil {
		t.Fatalf("expected a rendezvous arrival, got eager size %d", c.size)
	}
	return c.rndv
}

// waitDone polls e until SendDone for id.
func waitDone(t testing.TB, e *Endpoint, id uint64) error {
	t.Helper()
	var res error
	got := false
	spin(t, "SendDone", func() bool {
		e.Poll(nil, func(sid uint64, err error) {
			if sid != id {
				t.Errorf("SendDone(%d), want %d", sid, id)
			}
			res, got = err, true
		})
		return got
	})
	return res
}

func TestRendezvousCMA(t *testing.T) {
	a, b, ab, _ := pair(t, Config{}, Config{})
	const size = 4<<20 + 123
	src := pattern(size, 1)
	h := Hdr{Tag: 5, Data: 6, Flags: 7}
	done, err := a.Send(ab, h, split(src, 1<<20, 3, 0, 2<<20+5), 77)
	if err != nil || done {
		t.Fatalf("Send: done=%v err=%v", done, err)
	}
	rv := waitRndv(t, b)
	if rv.Size() != size || rv.Src() != a.ID() || rv.Hdr() != h {
		t.Fatalf("rendezvous: size %d src %x hdr %+v", rv.Size(), rv.Src(), rv.Hdr())
	}
	dst := make([]byte, size)
	n, err := b.Pull(rv, split(dst, 100, 1<<19, 0, 7, 3<<20))
	if err != nil || n != size {
		t.Fatalf("Pull: n=%d err=%v", n, err)
	}
	if !bytes.Equal(dst, src) {
		t.Fatalf("data differs at %d", firstDiff(dst, src))
	}
	if err := waitDone(t, a, 77); err != nil {
		t.Fatalf("SendDone: %v", err)
	}
	if s := b.Stats(); s.CMAPulls != 1 || s.FallbackPulls != 0 {
		t.Fatalf("stats %+v", s)
	}
	// The handle is consumed.
	if _, err := b.Pull(rv, [][]byte{dst}); !errors.Is(err, ErrBadHandle) {
		t.Fatalf("second Pull: %v", err)
	}
}

func TestRendezvousTruncateAndDiscard(t *testing.T) {
	for _, nocma := range []bool{false, true} {
		t.Run(fmt.Sprintf("nocma=%v", nocma), func(t *testing.T) {
			a, b, ab, _ := pair(t, Config{}, Config{DisableCMA: nocma})
			src := pattern(100000, 2)
			if _, err := a.Send(ab, Hdr{}, [][]byte{src}, 1); err != nil {
				t.Fatal(err)
			}
			if _, err := a.Send(ab, Hdr{}, [][]byte{src}, 2); err != nil {
				t.Fatal(err)
			}
			arr := collect(t, b, 2)
			// A goroutine keeps the sender polling (the fallback needs it).
			doneIDs := make(chan uint64, 2)
			errs := make(chan error, 2)
			go func() {
				deadline := time.Now().Add(liveness)
				for n := 0; n < 2 && time.Now().Before(deadline); {
					a.Poll(nil, func(id uint64, err error) {
						doneIDs <- id
						errs <- err
						n++
					})
				}
				close(doneIDs)
			}()
			dst := make([]byte, 5000)
			n, err := b.Pull(arr[0].rndv, [][]byte{dst[:1000], dst[1000:]})
			if err != nil || n != 5000 || !bytes.Equal(dst, src[:5000]) {
				t.Fatalf("truncated Pull: n=%d err=%v", n, err)
			}
			if err := b.Discard(arr[1].rndv); err != nil {
				t.Fatal(err)
			}
			var ids []uint64
			for id := range doneIDs {
				ids = append(ids, id)
				if err := <-errs; err != nil {
					t.Errorf("SendDone(%d): %v", id, err)
				}
			}
			if len(ids) != 2 {
				t.Fatalf("SendDone ids %v", ids)
			}
		})
	}
}

func TestRendezvousFallback(t *testing.T) {
	modes := []struct {
		name   string
		sender Config
		recv   Config
	}{
		{"receiver-disables", Config{}, Config{DisableCMA: true}},
		{"sender-disables", Config{DisableCMA: true}, Config{}},
		{"small-window", Config{DisableCMA: true}, Config{BulkBytes: 8192}},
	}
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			a, b, ab, _ := pair(t, m.sender, m.recv)
			const size = 4<<20 + 4097
			src := pattern(size, 3)
			if done, err := a.Send(ab, Hdr{Tag: 1}, split(src, 12345, 1<<20, 1, 0, 1<<21), 55); done || err != nil {
				t.Fatalf("Send: %v %v", done, err)
			}
			res := make(chan error, 1)
			go func() {
				deadline := time.Now().Add(liveness)
				for time.Now().Before(deadline) {
					got, gerr := false, error(nil)
					for i := 0; i < 1000 && !got; i++ {
						a.Poll(nil, func(id uint64, err error) {
							got, gerr = true, err
							if id != 55 {
								gerr = fmt.Errorf("SendDone id %d", id)
							}
						})
					}
					if got {
						res <- gerr
						return
					}
				}
				res <- errors.New("sender: timeout")
			}()
			rv := waitRndv(t, b)
			dst := make([]byte, size)
			n, err := b.Pull(rv, split(dst, 1, 65536, 0, 3<<20, 17))
			if err != nil || n != size {
				t.Fatalf("Pull: n=%d err=%v", n, err)
			}
			if !bytes.Equal(dst, src) {
				t.Fatalf("data differs at %d", firstDiff(dst, src))
			}
			if err := <-res; err != nil {
				t.Fatalf("sender: %v", err)
			}
			if s := b.Stats(); s.FallbackPulls != 1 || s.CMAPulls != 0 {
				t.Fatalf("stats %+v", s)
			}
		})
	}
}

func TestRendezvousKeptAcrossPolls(t *testing.T) {
	a, b, ab, _ := pair(t, Config{}, Config{})
	big := pattern(1<<20, 4)
	a.Send(ab, Hdr{Tag: 1}, [][]byte{big}, 1)
	rv := waitRndv(t, b)
	// Lots of traffic (several ring laps) while the handle is held.
	small := pattern(3000, 5)
	for i := 0; i < 200; i++ {
		for {
			_, err := a.Send(ab, Hdr{Tag: 2}, [][]byte{small}, 0)
			if err == nil {
				break
			}
			if !errors.Is(err, ErrAgain) {
				t.Fatal(err)
			}
			b.Poll(func(*Arrival) bool { return true }, nil)
		}
	}
	for b.Poll(func(*Arrival) bool { return true }, nil) > 0 {
	}
	dst := make([]byte, len(big))
	if n, err := b.Pull(rv, [][]byte{dst}); err != nil || n != uint64(len(big)) || !bytes.Equal(dst, big) {
		t.Fatalf("Pull: n=%d err=%v", n, err)
	}
	if err := waitDone(t, a, 1); err != nil {
		t.Fatal(err)
	}
}

func TestOrdering(t *testing.T) {
	a, b, ab, _ := pair(t, Config{RingBytes: 16 << 10}, Config{RingBytes: 16 << 10})
	const total = 20000
	next := uint64(0) // next expected sequence number at b
	pending := 0      // rendezvous sends not yet done
	var failure error
	dst := make([]byte, 9000)
	cb := func(ar *Arrival) bool {
		if ar.Hdr.Tag != next && failure == nil {
			failure = fmt.Errorf("got seq %d, want %d", ar.Hdr.Tag, next)
		}
		want := pattern(int(ar.Hdr.Data), ar.Hdr.Tag)
		if ar.Rndv != nil {
			n, err := b.Pull(ar.Rndv, [][]byte{dst})
			if err != nil || !bytes.Equal(dst[:n], want) {
				failure = fmt.Errorf("seq %d: rendezvous n=%d err=%v", next, n, err)
			}
		} else if !bytes.Equal(ar.Eager, want) && failure == nil {
			failure = fmt.Errorf("seq %d: payload mismatch", next)
		}
		next++
		return true
	}
	onDone := func(id uint64, err error) {
		pending--
		if err != nil {
			failure = err
		}
	}
	deadline := time.Now().Add(liveness)
	for seq := uint64(0); seq < total; seq++ {
		size := int(seq*7919) % 3000
		if seq%97 == 0 {
			size = 4097 + int(seq%4000) // rendezvous
		}
		msg := pattern(size, seq)
		for {
			done, err := a.Send(ab, Hdr{Tag: seq, Data: uint64(size)}, [][]byte{msg}, seq)
			if err == nil {
				if !done {
					pending++
				}
				break
			}
			if !errors.Is(err, ErrAgain) {
				t.Fatal(err)
			}
			b.Poll(cb, nil)
			a.Poll(nil, onDone)
			if time.Now().After(deadline) {
				t.Fatal("timeout")
			}
		}
		if seq%13 == 0 {
			b.Poll(cb, nil)
		}
	}
	spin(t, "drain", func() bool {
		b.Poll(cb, nil)
		a.Poll(nil, onDone)
		return (next == total && pending == 0) || failure != nil
	})
	if failure != nil {
		t.Fatal(failure)
	}
}

func TestRingFullBackpressure(t *testing.T) {
	a, b, ab, _ := pair(t, Config{}, Config{RingBytes: 4096})
	sent := 0
	for {
		_, err := a.Send(ab, Hdr{Tag: uint64(sent)}, [][]byte{{byte(sent)}}, 0)
		if errors.Is(err, ErrAgain) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		sent++
		if sent > 4096 {
			t.Fatal("ring never filled")
		}
	}
	// 64-byte records in a 4 KiB ring; one slot stays empty.
	if sent != 4096/64-1 {
		t.Fatalf("ring took %d messages", sent)
	}
	got := collect(t, b, sent)
	for i, c := range got {
		if c.hdr.Tag != uint64(i) || c.data[0] != byte(i) {
			t.Fatalf("message %d: %+v", i, c)
		}
	}
	// Room again, across the wrap (pad records).
	for i := 0; i < 500; i++ {
		msg := pattern(i%200, uint64(i))
		for {
			_, err := a.Send(ab, Hdr{Tag: uint64(i)}, [][]byte{msg}, 0)
			if err == nil {
				break
			}
			if !errors.Is(err, ErrAgain) {
				t.Fatal(err)
			}
			c := collect(t, b, 1)[0]
			_ = c
		}
	}
	for b.Poll(func(*Arrival) bool { return true }, nil) > 0 {
	}
	// Outstanding rendezvous limit: b keeps draining its ring (holding the
	// handles) until a hits the limit with an empty ring.
	big := make([]byte, 8192)
	var held []*Rendezvous
	hold := func(ar *Arrival) bool { held = append(held, ar.Rndv); return true }
	n := 0
	for ; n < 2*ackEntries; n++ {
		_, err := a.Send(ab, Hdr{}, [][]byte{big}, uint64(n))
		if errors.Is(err, ErrAgain) {
			if b.Poll(hold, nil) > 0 {
				n--
				continue
			}
			break
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	for b.Poll(hold, nil) > 0 {
	}
	if n != ackEntries-1 || len(held) != n {
		t.Fatalf("outstanding limit %d (held %d), want %d", n, len(held), ackEntries-1)
	}
	for _, rv := range held {
		if err := b.Discard(rv); err != nil {
			t.Fatal(err)
		}
	}
	dones := 0
	spin(t, "acks", func() bool {
		a.Poll(nil, func(uint64, error) { dones++ })
		return dones == n
	})
	if _, err := a.Send(ab, Hdr{}, [][]byte{big}, 1); err != nil {
		t.Fatalf("after acks: %v", err)
	}
}

func TestFlowControl(t *testing.T) {
	a, b, ab, _ := pair(t, Config{}, Config{})
	for i := 0; i < 3; i++ {
		a.Send(ab, Hdr{Tag: uint64(i)}, [][]byte{[]byte(fmt.Sprint("msg", i))}, 0)
	}
	big := pattern(10000, 9)
	a.Send(ab, Hdr{Tag: 3}, [][]byte{big}, 3)
	var tags []uint64
	accept := 1
	cb := func(ar *Arrival) bool {
		if accept == 0 {
			return false
		}
		accept--
		tags = append(tags, ar.Hdr.Tag)
		if ar.Rndv != nil {
			b.Discard(ar.Rndv)
		}
		return true
	}
	if n := b.Poll(cb, nil); n != 1 || len(tags) != 1 {
		t.Fatalf("Poll delivered %d (%v)", n, tags)
	}
	for i := 0; i < 5; i++ {
		if n := b.Poll(cb, nil); n != 0 {
			t.Fatalf("Poll delivered %d while refusing", n)
		}
	}
	// Refuse the rendezvous record once too.
	accept = 2
	b.Poll(cb, nil)
	accept = 100
	b.Poll(cb, nil)
	if fmt.Sprint(tags) != "[0 1 2 3]" {
		t.Fatalf("tags %v", tags)
	}
	if err := waitDone(t, a, 3); err != nil {
		t.Fatal(err)
	}
}

func TestBadAddr(t *testing.T) {
	e := mustOpen(t, Config{})
	other := mustOpen(t, Config{})
	good := other.Addr()
	mod := func(f func(b []byte) []byte) []byte { return f(append([]byte(nil), good...)) }
	cases := map[string][]byte{
		"nil":         nil,
		"short":       good[:10],
		"long":        append(mod(func(b []byte) []byte { return b }), 0),
		"magic":       mod(func(b []byte) []byte { b[0] = 'X'; return b }),
		"version":     mod(func(b []byte) []byte { b[2] = 1; return b }),
		"zero pid":    mod(func(b []byte) []byte { clear(b[3:7]); return b }),
		"huge pid":    mod(func(b []byte) []byte { b[6] = 0xff; return b }),
		"zero id":     mod(func(b []byte) []byte { clear(b[7:15]); return b }),
		"pid":         mod(func(b []byte) []byte { b[3]++; return b }),
		"nonexistent": mod(func(b []byte) []byte { b[7]++; return b }),
	}
	for name, addr := range cases {
		if p, err := e.Connect(addr); err == nil {
			t.Errorf("%s: Connect succeeded (%v)", name, p.ID())
		} else if !errors.Is(err, ErrBadAddr) && !errors.Is(err, ErrPeerGone) {
			t.Errorf("%s: unexpected error class: %v", name, err)
		}
	}
	// A closed endpoint's address.
	gone := mustOpen(t, Config{})
	ga := gone.Addr()
	gone.Close()
	if _, err := e.Connect(ga); !errors.Is(err, ErrPeerGone) {
		t.Errorf("closed endpoint: %v", err)
	}
	// A region whose header does not match (not a region at all).
	name := regionName(os.Getpid(), 12345)
	if err := os.WriteFile(shmDir+"/"+name, make([]byte, 8192), 0o600); err != nil {
		t.Fatal(err)
	}
	defer os.Remove(shmDir + "/" + name)
	if _, err := e.Connect(encodeAddr(12345, os.Getpid())); !errors.Is(err, ErrBadAddr) {
		t.Errorf("garbage region: %v", err)
	}
	// The good one still works, twice (same Peer).
	p1, err1 := e.Connect(good)
	p2, err2 := e.Connect(good)
	if err1 != nil || err2 != nil || p1 != p2 || p1.ID() != other.ID() {
		t.Fatalf("good address: %v %v", err1, err2)
	}
}

func TestNoFreeRingAndReuse(t *testing.T) {
	b := mustOpen(t, Config{Rings: 1})
	a := mustOpen(t, Config{})
	c := mustOpen(t, Config{})
	ab := mustConnect(t, a, b.Addr())
	cb := mustConnect(t, c, b.Addr())
	if _, err := a.Send(ab, Hdr{Tag: 1}, [][]byte{[]byte("from a")}, 0); err != nil {
		t.Fatal(err)
	}
	_, err := c.Send(cb, Hdr{Tag: 2}, nil, 0)
	if !errors.Is(err, ErrNoRing) || !errors.Is(err, ErrAgain) {
		t.Fatalf("second sender: %v", err)
	}
	got := collect(t, b, 1)
	if got[0].src != a.ID() || string(got[0].data) != "from a" {
		t.Fatalf("got %+v", got[0])
	}
	if err := a.Disconnect(ab); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Send(ab, Hdr{}, nil, 0); !errors.Is(err, ErrPeerGone) {
		t.Fatalf("send after Disconnect: %v", err)
	}
	// b releases the ring on its next Poll; then c can claim it.
	spin(t, "ring reuse", func() bool {
		b.Poll(func(*Arrival) bool { return true }, nil)
		_, err := c.Send(cb, Hdr{Tag: 3}, [][]byte{[]byte("from c")}, 0)
		if err != nil && !errors.Is(err, ErrNoRing) {
			t.Fatal(err)
		}
		return err == nil
	})
	got = collect(t, b, 1)
	if got[0].src != c.ID() || string(got[0].data) != "from c" || got[0].hdr.Tag != 3 {
		t.Fatalf("got %+v", got[0])
	}
	// a reconnects: gets a fresh Peer, but no ring until c leaves.
	ab2 := mustConnect(t, a, b.Addr())
	if _, err := a.Send(ab2, Hdr{}, nil, 0); !errors.Is(err, ErrNoRing) {
		t.Fatalf("reconnect: %v", err)
	}
}

func TestReceiverCloses(t *testing.T) {
	a := mustOpen(t, Config{})
	b, err := Open(Config{})
	if err != nil {
		t.Fatal(err)
	}
	ab := mustConnect(t, a, b.Addr())
	big := make([]byte, 1<<20)
	if _, err := a.Send(ab, Hdr{}, [][]byte{big}, 9); err != nil {
		t.Fatal(err)
	}
	b.Close()
	if err := waitDone(t, a, 9); !errors.Is(err, ErrPeerGone) {
		t.Fatalf("SendDone: %v", err)
	}
	if _, err := a.Send(ab, Hdr{}, nil, 0); !errors.Is(err, ErrPeerGone) {
		t.Fatalf("Send after receiver closed: %v", err)
	}
	// An eager send to a receiver that closed its endpoint fails at once
	// (it used to succeed until the ring filled up), and outside writers
	// find the slot closed to them.
	a2 := mustOpen(t, Config{})
	b2, _ := Open(Config{RingBytes: 4096})
	p := mustConnect(t, a2, b2.Addr())
	if _, err := a2.Send(p, Hdr{}, nil, 0); err != nil {
		t.Fatal(err)
	}
	b2.Close()
	if _, err := a2.Send(p, Hdr{}, nil, 0); !errors.Is(err, ErrPeerGone) {
		t.Fatalf("eager to closed receiver: %v", err)
	}
	if s := p.TxSlot(); s != nil && s.Ready != 0 {
		t.Fatal("the slot of a closed receiver is still ready for outside writers")
	}
}

func TestStallTimeout(t *testing.T) {
	a, b, ab, _ := pair(t, Config{}, Config{DisableCMA: true, StallTimeout: 50 * time.Millisecond})
	a.Send(ab, Hdr{}, [][]byte{make([]byte, 1<<20)}, 4)
	rv := waitRndv(t, b)
	start := time.Now()
	_, err := b.Pull(rv, [][]byte{make([]byte, 1<<20)}) // a never polls
	if !errors.Is(err, ErrStalled) {
		t.Fatalf("Pull: %v", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("stall detection took %v", d)
	}
	if err := waitDone(t, a, 4); !errors.Is(err, ErrRemote) {
		t.Fatalf("SendDone: %v", err)
	}
}

func TestSourceAddrAndLoopback(t *testing.T) {
	a, b := mustOpen(t, Config{}), mustOpen(t, Config{})
	ab := mustConnect(t, a, b.Addr())
	a.Send(ab, Hdr{}, nil, 0)
	c := collect(t, b, 1)[0]
	if c.peer != nil {
		t.Fatal("Arrival.Peer set without Connect")
	}
	addr, err := b.SourceAddr(c.src)
	if err != nil || !bytes.Equal(addr, a.Addr()) {
		t.Fatalf("SourceAddr: %v", err)
	}
	ba := mustConnect(t, b, addr)
	a.Send(ab, Hdr{}, nil, 0)
	if c := collect(t, b, 1)[0]; c.peer != ba {
		t.Fatal("Arrival.Peer not set after Connect")
	}
	// An endpoint can send to itself.
	aa := mustConnect(t, a, a.Addr())
	a.Send(aa, Hdr{Tag: 8}, [][]byte{[]byte("self")}, 0)
	big := pattern(50000, 8)
	a.Send(aa, Hdr{Tag: 9}, [][]byte{big}, 10)
	got := collect(t, a, 2)
	if string(got[0].data) != "self" || got[0].peer != aa || got[1].rndv == nil {
		t.Fatalf("loopback: %+v", got)
	}
	dst := make([]byte, len(big))
	if n, err := a.Pull(got[1].rndv, [][]byte{dst}); err != nil || n != uint64(len(big)) || !bytes.Equal(dst, big) {
		t.Fatalf("loopback Pull: %d %v", n, err)
	}
	if err := waitDone(t, a, 10); err != nil {
		t.Fatal(err)
	}
}

func TestTooManyIOV(t *testing.T) {
	a, _, ab, _ := pair(t, Config{}, Config{})
	var iov [][]byte
	for i := 0; i < MaxIOV+1; i++ {
		iov = append(iov, make([]byte, 1000))
	}
	if _, err := a.Send(ab, Hdr{}, iov, 0); !errors.Is(err, ErrTooManyIOV) {
		t.Fatalf("Send: %v", err)
	}
	// Empty pieces do not count; small messages may have any number.
	small := make([][]byte, 100)
	for i := range small {
		small[i] = []byte{byte(i)}
	}
	if done, err := a.Send(ab, Hdr{}, small, 0); !done || err != nil {
		t.Fatalf("eager with 100 pieces: %v", err)
	}
}

func TestCloseRemovesRegion(t *testing.T) {
	e, err := Open(Config{})
	if err != nil {
		t.Fatal(err)
	}
	path := shmDir + "/" + e.name
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o600 {
		t.Errorf("mode %v", st.Mode())
	}
	p := mustConnect(t, e, e.Addr())
	e.Send(p, Hdr{}, nil, 0)
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Fatalf("region still present after Close: %v", err)
	}
	if e.Close() != nil {
		t.Fatal("second Close")
	}
	if _, err := e.Send(p, Hdr{}, nil, 0); err == nil {
		t.Fatal("Send after Close succeeded")
	}
	if e.Poll(func(*Arrival) bool { return true }, nil) != 0 {
		t.Fatal("Poll after Close")
	}
}

func TestStaleCleanup(t *testing.T) {
	// A pid that certainly is dead: a child that has exited and been reaped.
	cmd := exec.Command("/bin/true")
	if err := cmd.Run(); err != nil {
		t.Skip("cannot run /bin/true:", err)
	}
	dead := cmd.ProcessState.Pid()
	name := fmt.Sprintf("lnx-%d-%016x", dead, randUint64())
	path := shmDir + "/" + name
	if err := os.WriteFile(path, []byte("stale"), 0o600); err != nil {
		t.Fatal(err)
	}
	defer os.Remove(path)
	// And one that must survive: our own pid's pattern is skipped, as are
	// names that do not match.
	keep := shmDir + "/lnx-notapid-x"
	os.WriteFile(keep, nil, 0o600)
	defer os.Remove(keep)
	// Liveness is the owner's lock, not the pid in the name (which means
	// nothing in another PID namespace sharing /dev/shm): a locked region
	// named after a pid that does not exist here belongs to a live process
	// elsewhere and stays; an unlocked one named after a pid that exists
	// here (pid 1) is stale and goes.
	live := fmt.Sprintf("%s/lnx-%d-%016x", shmDir, dead, randUint64())
	lfd, err := unix.Open(live, unix.O_RDWR|unix.O_CREAT|unix.O_EXCL|unix.O_CLOEXEC, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer os.Remove(live)
	defer unix.Close(lfd)
	if ok, err := lockRegion(lfd); !ok || err != nil {
		t.Fatalf("lock: %v %v", ok, err)
	}
	var hdr [hdrBytes]byte
	binary.LittleEndian.PutUint64(hdr[0:], regionMagic)
	binary.LittleEndian.PutUint32(hdr[8:], regionVersion)
	binary.LittleEndian.PutUint32(hdr[12:], hdrLocked)
	stale := fmt.Sprintf("%s/lnx-1-%016x", shmDir, randUint64())
	if err := os.WriteFile(stale, hdr[:], 0o600); err != nil {
		t.Fatal(err)
	}
	defer os.Remove(stale)
	// A region of an older lnx-go (no lock, no hdrLocked) whose pid is
	// alive here may be live: it stays.
	old := fmt.Sprintf("%s/lnx-1-%016x", shmDir, randUint64())
	binary.LittleEndian.PutUint32(hdr[12:], 0)
	if err := os.WriteFile(old, hdr[:], 0o600); err != nil {
		t.Fatal(err)
	}
	defer os.Remove(old)
	mustOpen(t, Config{})
	if _, err := os.Stat(old); err != nil {
		t.Fatalf("lock-less region of an older version, pid alive, was removed: %v", err)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Fatalf("stale region of dead pid %d not removed", dead)
	}
	if _, err := os.Stat(keep); err != nil {
		t.Fatalf("unrelated file removed: %v", err)
	}
	if _, err := os.Stat(live); err != nil {
		t.Fatalf("locked (live) region named after a pid absent here was removed: %v", err)
	}
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		t.Fatalf("unlocked region named after pid 1 (alive here) not removed")
	}
}

func TestTwoEndpointsConcurrent(t *testing.T) {
	// Two endpoints in one process driven from two goroutines, both
	// directions at once, eager and rendezvous.
	a, b, ab, ba := pair(t, Config{}, Config{})
	const n = 3000
	run := func(self *Endpoint, to *Peer, seed uint64, res chan<- error) {
		recv, sent, done := 0, 0, 0
		dst := make([]byte, 20000)
		var ferr error
		cb := func(ar *Arrival) bool {
			want := pattern(int(ar.Size), ar.Hdr.Tag)
			var got []byte
			if ar.Rndv != nil {
				k, err := self.Pull(ar.Rndv, [][]byte{dst})
				if err != nil {
					ferr = err
				}
				got = dst[:k]
			} else {
				got = ar.Eager
			}
			if !bytes.Equal(got, want) && ferr == nil {
				ferr = fmt.Errorf("message %d corrupt", ar.Hdr.Tag)
			}
			recv++
			return true
		}
		onDone := func(uint64, error) { done++ }
		deadline := time.Now().Add(liveness)
		rndv := 0
		for (recv < n || sent < n || done < rndv) && ferr == nil {
			if sent < n {
				tag := seed + uint64(sent)
				size := int(tag % 6000)
				if d, err := self.Send(to, Hdr{Tag: tag}, [][]byte{pattern(size, tag)}, tag); err == nil {
					sent++
					if !d {
						rndv++
					}
				} else if !errors.Is(err, ErrAgain) {
					ferr = err
				}
			}
			self.Poll(cb, onDone)
			if time.Now().After(deadline) {
				ferr = fmt.Errorf("timeout: recv %d sent %d done %d/%d", recv, sent, done, rndv)
			}
		}
		res <- ferr
	}
	res := make(chan error, 2)
	go run(a, ab, 1000000, res)
	go run(b, ba, 1000000, res)
	for i := 0; i < 2; i++ {
		if err := <-res; err != nil {
			t.Fatal(err)
		}
	}
}

// ringOf returns b's receiver-side state of the ring a writes into.
func ringOf(t testing.TB, b *Endpoint, src uint64) *inRing {
	t.Helper()
	for _, r := range b.active {
		if r.owner == src {
			return r
		}
	}
	t.Fatalf("no active ring from %x", src)
	return nil
}

// writeRec writes a raw record at r's head (as a hostile sender could).
func writeRec(r *inRing, words ...uint64) {
	p := unsafe.Add(r.ring, r.head&r.mask)
	for i, w := range words {
		if i == 0 {
			continue
		}
		*(*uint64)(unsafe.Add(p, 8*i)) = w
	}
	atomic.StoreUint64((*uint64)(p), words[0])
}

func TestAddrID(t *testing.T) {
	e := mustOpen(t, Config{})
	if id, err := AddrID(e.Addr()); err != nil || id != e.ID() {
		t.Fatalf("AddrID = %x, %v; want %x", id, err, e.ID())
	}
	if _, err := AddrID([]byte("garbage")); !errors.Is(err, ErrBadAddr) {
		t.Fatalf("AddrID(garbage): %v", err)
	}
}

// TestSendThenCloseBeforePoll: a sender that claims a ring, sends and
// closes before the receiver polls even once (a process that sends its last
// message and exits) must still have its messages delivered, each time a
// ring is reused.
func TestSendThenCloseBeforePoll(t *testing.T) {
	r := mustOpen(t, Config{Rings: 2})
	for round := 0; round < 6; round++ {
		s, err := Open(Config{})
		if err != nil {
			t.Fatal(err)
		}
		p := mustConnect(t, s, r.Addr())
		payload := []byte{byte(round), 1, 2, 3}
		if done, err := s.Send(p, Hdr{Tag: uint64(round)}, [][]byte{payload}, 1); err != nil || !done {
			t.Fatalf("round %d: send %v %v", round, done, err)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		got := collect(t, r, 1)
		if got[0].hdr.Tag != uint64(round) || !bytes.Equal(got[0].data, payload) {
			t.Fatalf("round %d: got tag %d data %v", round, got[0].hdr.Tag, got[0].data)
		}
	}
}

// TestEagerShortBuffer: an eager send whose piece of more than a page is
// not mapped over its length fails with ErrBadBuffer instead of faulting,
// writes nothing into the ring, and the next message arrives intact.
func TestEagerShortBuffer(t *testing.T) {
	cfg := Config{RingBytes: 128 << 10, EagerMax: 16 << 10}
	a, b, ab, _ := pair(t, cfg, cfg)
	pg := syscall.Getpagesize()
	m, err := syscall.Mmap(-1, 0, 3*pg, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_PRIVATE|syscall.MAP_ANON)
	if err != nil {
		t.Fatal(err)
	}
	base := uintptr(unsafe.Pointer(&m[0]))
	defer syscall.Syscall(syscall.SYS_MUNMAP, base, uintptr(2*pg), 0)
	if _, _, e := syscall.Syscall(syscall.SYS_MUNMAP, base+uintptr(2*pg), uintptr(pg), 0); e != 0 {
		t.Fatal(e)
	}
	short := m[:3*pg] // the third page is gone
	if done, err := a.Send(ab, Hdr{Tag: 1}, [][]byte{short}, 1); !errors.Is(err, ErrBadBuffer) || done {
		t.Fatalf("Send from a short buffer: done=%v err=%v, want ErrBadBuffer", done, err)
	}
	good := pattern(2*pg, 7)
	if done, err := a.Send(ab, Hdr{Tag: 2}, [][]byte{good}, 2); err != nil || !done {
		t.Fatalf("Send after it: done=%v err=%v", done, err)
	}
	got := collect(t, b, 1)[0]
	if got.hdr.Tag != 2 || !bytes.Equal(got.data, good) {
		t.Fatalf("arrival after the refused send: tag %d, %d bytes", got.hdr.Tag, len(got.data))
	}
	if n := b.Poll(func(*Arrival) bool { return true }, nil); n != 0 {
		t.Fatalf("spurious arrivals: %d", n)
	}
}
