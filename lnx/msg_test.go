// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only

package lnx

import (
	"bytes"
	"errors"
	"github.com/lnx-go/lnx-go/lnx/config"
	"strings"
	"sync"
	"testing"
	"time"
	"unsafe"

	"github.com/lnx-go/lnx-go/internal/fi"
	"github.com/lnx-go/lnx-go/lnx/logging"
)

// pair is two enabled endpoints of one shm-only domain that know each other.
type pair struct {
	d      *Domain
	ep     [2]*Endpoint
	cq     [2]*CQ
	av     [2]*AV
	peerOf [2]uint64 // fi_addr of the other endpoint in each AV
}

func newPair(t *testing.T) *pair {
	t.Helper()
	withEnv(t, map[string]string{config.Links: "shm"})
	infos, err := GetInfo(v117, nil)
	if err != nil {
		t.Fatal(err)
	}
	f, err := OpenFabric(v117, infos[0].Fabric)
	if err != nil {
		t.Fatal(err)
	}
	d, err := f.OpenDomain(infos[0])
	if err != nil {
		t.Fatal(err)
	}
	p := &pair{d: d}
	for i := range p.ep {
		if p.av[i], err = d.OpenAV(AVAttr{Type: fi.AV_TABLE}); err != nil {
			t.Fatal(err)
		}
		if p.cq[i], err = d.OpenCQ(CQAttr{Format: fi.CQ_FORMAT_TAGGED}); err != nil {
			t.Fatal(err)
		}
		if p.ep[i], err = d.OpenEndpoint(infos[0]); err != nil {
			t.Fatal(err)
		}
		if err := p.ep[i].Bind(p.av[i], 0); err != nil {
			t.Fatal(err)
		}
		if err := p.ep[i].Bind(p.cq[i], fi.SEND|fi.RECV); err != nil {
			t.Fatal(err)
		}
		if err := p.ep[i].Enable(); err != nil {
			t.Fatal(err)
		}
	}
	for i := range p.ep {
		name, err := p.ep[1-i].Name()
		if err != nil {
			t.Fatal(err)
		}
		out := []uint64{0}
		if n := p.av[i].Insert(name, 1, out, nil); n != 1 {
			t.Fatalf("insert of peer address failed")
		}
		p.peerOf[i] = out[0]
	}
	t.Cleanup(func() {
		for i := range p.ep {
			p.ep[i].Close()
			p.cq[i].Close()
			p.av[i].Close()
		}
		d.Close()
		f.Close()
	})
	return p
}

func bufOp(b []byte, addr, tag uint64, tagged bool) *Op {
	op := &Op{Addr: addr, Tag: tag, Tagged: tagged}
	op.IovBuf[0] = Buf{Ptr: unsafe.Pointer(unsafe.SliceData(b)), Len: uint64(len(b))}
	op.N = 1
	return op
}

// testLiveness bounds the waits of these tests for something that must
// happen: about hangs, not speed (a loaded machine may take many times
// longer than an idle one; a wait ends as soon as the thing happens).
const testLiveness = 60 * time.Second

func (p *pair) wait(t *testing.T, i int) Completion {
	t.Helper()
	var out [1]Completion
	deadline := time.Now().Add(testLiveness)
	for time.Now().Before(deadline) {
		// Drive both sides: rendezvous acks need the sender to poll.
		p.cq[1-i].progress()
		n, err := p.cq[i].Read(out[:], 0)
		if n == 1 {
			return out[0]
		}
		if err == fi.EAVAIL {
			c, _ := p.cq[i].ReadErr()
			t.Fatalf("error completion: %+v", c)
		}
	}
	t.Fatalf("no completion within %v", testLiveness)
	return Completion{}
}

func TestTaggedPingPong(t *testing.T) {
	p := newPair(t)
	for _, size := range []int{0, 1, 64, 4096, 1 << 16, 1 << 20} {
		for iter := 0; iter < 20; iter++ {
			send := bytes.Repeat([]byte{byte(size + iter)}, size)
			recv := make([]byte, size)
			ctx := unsafe.Pointer(&recv)
			rop := bufOp(recv, p.peerOf[1], 42, true)
			rop.Ctx = ctx
			if err := p.ep[1].Recv(rop); err != nil {
				t.Fatal(err)
			}
			if err := p.ep[0].Send(bufOp(send, p.peerOf[0], 42, true)); err != nil {
				t.Fatal(err)
			}
			c := p.wait(t, 1)
			if c.Ctx != ctx || c.Len != uint64(size) || c.Tag != 42 || c.Src != p.peerOf[1] || c.Flags&fi.TAGGED == 0 {
				t.Fatalf("size %d: completion %+v", size, c)
			}
			if !bytes.Equal(recv, send) {
				t.Fatalf("size %d: data corrupted", size)
			}
			p.wait(t, 0)
		}
	}
	var sb strings.Builder
	p.ep[1].dumpStats(&sb)
	if want := "core shm: tx 0 msgs 0 bytes, rx 120 msgs"; !strings.Contains(sb.String(), want) {
		t.Errorf("stats %q lack %q", sb.String(), want)
	}
}

func TestTaggedStreamUnexpected(t *testing.T) {
	p := newPair(t)
	for _, size := range []int{1, 64, 4096, 1 << 16} {
		const window = 64
		for round := 0; round < 10; round++ {
			sends := make([][]byte, window)
			for k := range sends {
				sends[k] = bytes.Repeat([]byte{byte(k + round)}, size)
				op := bufOp(sends[k], p.peerOf[0], uint64(k), true)
				for {
					err := p.ep[0].Send(op)
					if !errors.Is(err, fi.EAGAIN) {
						if err != nil {
							t.Fatal(err)
						}
						break
					}
					p.cq[1].progress()
				}
			}
			recvs := make([][]byte, window)
			for k := range recvs {
				recvs[k] = make([]byte, size)
				if err := p.ep[1].Recv(bufOp(recvs[k], p.peerOf[1], uint64(k), true)); err != nil {
					t.Fatal(err)
				}
			}
			for k := 0; k < window; k++ {
				c := p.wait(t, 1)
				if c.Len != uint64(size) {
					t.Fatalf("len %d", c.Len)
				}
			}
			for k := 0; k < window; k++ {
				p.wait(t, 0)
			}
			for k := range recvs {
				if !bytes.Equal(recvs[k], sends[k]) {
					t.Fatalf("size %d message %d corrupted", size, k)
				}
			}
		}
	}
}

// TestSmallMessageAllocs guards the hot path: an expected eager message,
// posted, sent, matched and completed, allocates nothing.
func TestSmallMessageAllocs(t *testing.T) {
	p := newPair(t)
	sbuf, rbuf := make([]byte, 8), make([]byte, 8)
	sop := bufOp(sbuf, p.peerOf[0], 5, true)
	rop := bufOp(rbuf, p.peerOf[1], 5, true)
	var out [2]Completion
	round := func() {
		if err := p.ep[1].Recv(rop); err != nil {
			t.Fatal(err)
		}
		if err := p.ep[0].Send(sop); err != nil {
			t.Fatal(err)
		}
		for {
			if n, _ := p.cq[1].Read(out[:1], 0); n == 1 {
				break
			}
		}
		for {
			if n, _ := p.cq[0].Read(out[:1], 0); n == 1 {
				break
			}
		}
	}
	round() // warm the free lists and connections
	if n := testing.AllocsPerRun(200, round); n != 0 {
		t.Errorf("%v allocations per small message, want 0", n)
	}
}

// logLines collects the lines lnx logs at FI_LOG_WARN.
type logLines struct {
	mu   sync.Mutex
	off  bool
	msgs []string
}

func (w *logLines) Enabled(l logging.Level, s logging.Subsys) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return !w.off && l == logging.Warn
}

func (w *logLines) Log(l logging.Level, s logging.Subsys, msg string) {
	w.mu.Lock()
	w.msgs = append(w.msgs, msg)
	w.mu.Unlock()
}

func (w *logLines) all() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return strings.Join(w.msgs, "\n")
}

// TestSendFailedLogsWhy: a rendezvous send whose receiver closes before
// taking it completes with an FI_EIO error entry, which carries only a
// code; the log at FI_LOG_WARN must say why (the peer is gone).
func TestSendFailedLogsWhy(t *testing.T) {
	w := &logLines{}
	logging.SetSink(w)
	t.Cleanup(func() { w.mu.Lock(); w.off = true; w.mu.Unlock() })
	p := newPair(t)
	buf := foreignBuf(1 << 16) // above the eager limit: waits for the receiver
	var ctx [16]byte
	op := bufOp(buf, p.peerOf[0], 7, true)
	op.Ctx = unsafe.Pointer(&ctx)
	if err := p.ep[0].Send(op); err != nil {
		t.Fatal(err)
	}
	if err := p.ep[1].Close(); err != nil {
		t.Fatal(err)
	}
	var out [1]Completion
	deadline := time.Now().Add(testLiveness)
	for {
		n, err := p.cq[0].Read(out[:], 0)
		if n == 1 {
			t.Fatalf("send completed without error: %+v", out[0])
		}
		if err == fi.EAVAIL {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no error completion within %v", testLiveness)
		}
	}
	c, _ := p.cq[0].ReadErr()
	if c.Err != fi.EIO || c.Ctx != unsafe.Pointer(&ctx) || c.Flags&fi.SEND == 0 {
		t.Fatalf("error entry %+v, want FI_EIO for the send's context", c)
	}
	if log := w.all(); !strings.Contains(log, "send failed") || !strings.Contains(log, "peer is gone") {
		t.Fatalf("warnings %q do not say the send failed because the peer is gone", log)
	}
}
