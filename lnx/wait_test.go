// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only

package lnx

import (
	"bytes"
	"errors"
	"testing"
	"unsafe"

	"github.com/lnx-go/lnx-go/internal/fi"
	"golang.org/x/sys/unix"
)

// readable waits (at most 10 s) for fd to become readable.
func readable(t *testing.T, fd int) {
	t.Helper()
	fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
	n, err := unix.Poll(fds, 10000)
	if err != nil || n != 1 {
		t.Fatalf("fd %d not readable: n=%d err=%v", fd, n, err)
	}
}

func notReadable(t *testing.T, fd int) {
	t.Helper()
	fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
	if n, _ := unix.Poll(fds, 0); n != 0 {
		t.Fatalf("fd %d readable", fd)
	}
}

func TestCQWaitFD(t *testing.T) {
	p := newPair(t)
	q, err := p.d.OpenCQ(CQAttr{Format: fi.CQ_FORMAT_TAGGED, WaitObj: WaitFD})
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	fd := q.WaitFD()
	if fd < 0 {
		t.Fatal("no fd")
	}
	if err := q.TryWait(); err != nil {
		t.Fatalf("trywait on an empty CQ: %v", err)
	}
	notReadable(t, fd)
	go q.Push(Completion{Len: 7})
	readable(t, fd)
	if err := q.TryWait(); !errors.Is(err, fi.EAGAIN) {
		t.Fatalf("trywait with a completion: %v", err)
	}
	var out [1]Completion
	if n, _ := q.Read(out[:], -1); n != 1 || out[0].Len != 7 {
		t.Fatalf("read %d %+v", n, out[0])
	}
	if err := q.TryWait(); err != nil {
		t.Fatalf("trywait after the read: %v", err)
	}
	notReadable(t, fd) // trywait drained it
	q.Signal()
	readable(t, fd)
	if n, errno := q.Read(out[:], -1); n != 0 || errno != fi.EAGAIN {
		t.Fatalf("signalled sread: %d %v", n, errno)
	}
	if n, errno := q.Read(out[:], 1+20); n != 0 || errno != fi.EAGAIN {
		t.Fatalf("sread timing out: %d %v", n, errno)
	}
}

func TestWaitSetAndPollSet(t *testing.T) {
	p := newPair(t)
	ws, err := OpenWaitSet(WaitFD)
	if err != nil {
		t.Fatal(err)
	}
	c, err := p.d.OpenCntr(WaitSet_, ws)
	if err != nil {
		t.Fatal(err)
	}
	q, err := p.d.OpenCQ(CQAttr{WaitObj: WaitSet_, WaitSet: ws})
	if err != nil {
		t.Fatal(err)
	}
	if err := ws.Wait(10); !errors.Is(err, fi.ETIMEDOUT) {
		t.Fatalf("empty wait set: %v", err)
	}
	if err := ws.TryWait(); err != nil {
		t.Fatal(err)
	}
	go c.Update(1, false, false)
	readable(t, ws.FD())
	if err := ws.Wait(0); err != nil {
		t.Fatalf("wait with the counter moved: %v", err)
	}
	if v := c.Read(false); v != 1 {
		t.Fatalf("counter %d", v)
	}
	if err := ws.TryWait(); err != nil {
		t.Fatalf("trywait after reading the counter: %v", err)
	}
	if err := ws.Close(); !errors.Is(err, fi.EBUSY) {
		t.Fatalf("closing a wait set with members: %v", err)
	}

	ps, _ := p.d.OpenPollSet()
	qctx, cctx := unsafe.Pointer(new(int)), unsafe.Pointer(new(int))
	if err := ps.Add(q, qctx); err != nil {
		t.Fatal(err)
	}
	if err := ps.Add(c, cctx); err != nil {
		t.Fatal(err)
	}
	out := make([]unsafe.Pointer, 4)
	if n := ps.Poll(out); n != 0 {
		t.Fatalf("poll of idle members: %d", n)
	}
	q.Push(Completion{})
	if n := ps.Poll(out); n != 1 || out[0] != qctx {
		t.Fatalf("poll: %d %v", n, out[:n])
	}
	if err := q.Close(); !errors.Is(err, fi.EBUSY) {
		t.Fatalf("closing a CQ in a poll set: %v", err)
	}
	if err := ps.Del(q); err != nil {
		t.Fatal(err)
	}
	if err := ps.Del(q); err == nil {
		t.Fatal("second Del succeeded")
	}
	ps.Close() // releases c
	for _, o := range []interface{ Close() error }{q, c, ws} {
		if err := o.Close(); err != nil {
			t.Fatalf("close %T: %v", o, err)
		}
	}
}

func TestMultiRecv(t *testing.T) {
	p := newPair(t)
	v := uint64(16)
	p.ep[1].MinMultiRecv(&v, true)
	buf := make([]byte, 100)
	mctx := unsafe.Pointer(&buf)
	op := bufOp(buf, p.peerOf[1], 0, false)
	op.Ctx, op.Flags, op.Explicit = mctx, fi.MULTI_RECV, true
	tagged := *op
	tagged.Tagged = true
	if err := p.ep[1].Recv(&tagged); !errors.Is(err, fi.EBADFLAGS) {
		t.Fatalf("tagged multi-receive: %v", err)
	}
	send := func(k int) {
		t.Helper()
		if err := p.ep[0].Send(bufOp(bytes.Repeat([]byte{byte('a' + k)}, 30), p.peerOf[0], 0, false)); err != nil {
			t.Fatal(err)
		}
	}
	send(0) // before the post: taken from the unexpected queue
	p.cq[1].progress()
	if err := p.ep[1].Recv(op); err != nil {
		t.Fatal(err)
	}
	plain := make([]byte, 30)
	pop := bufOp(plain, p.peerOf[1], 0, false)
	pctx := unsafe.Pointer(&plain)
	pop.Ctx = pctx
	if err := p.ep[1].Recv(pop); err != nil {
		t.Fatal(err)
	}
	for k := 1; k < 4; k++ {
		send(k)
	}
	// 3 x 30 bytes leave 10 < 16: the third releases the buffer, the
	// fourth goes to the receive posted after it.
	for k := 0; k < 4; k++ {
		c := p.wait(t, 1)
		p.wait(t, 0)
		want := unsafe.Pointer(&buf[min(k, 2)*30])
		flags := fi.RECV | fi.MSG
		if k == 2 {
			flags |= fi.MULTI_RECV
		}
		if k == 3 {
			want = unsafe.Pointer(&plain[0])
			if c.Ctx != pctx {
				t.Fatalf("message 3 context %p, want the plain receive's", c.Ctx)
			}
		} else if c.Ctx != mctx {
			t.Fatalf("message %d context %p", k, c.Ctx)
		}
		if c.Buf != want || c.Len != 30 || c.Flags != flags {
			t.Fatalf("message %d: buf %p (want %p) len %d flags %#x (want %#x)", k, c.Buf, want, c.Len, c.Flags, flags)
		}
		if got := unsafe.Slice((*byte)(c.Buf), 30); !bytes.Equal(got, bytes.Repeat([]byte{byte('a' + k)}, 30)) {
			t.Fatalf("message %d data %q", k, got)
		}
	}
	if buf[90] != 0 {
		t.Fatal("bytes past the messages written")
	}
}
