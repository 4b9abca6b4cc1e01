// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only

package ofi

import (
	"bufio"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// The kill tests run a peer in a child process (this test binary, in
// helper mode) and SIGKILL it, so that no goodbye is sent: the survivor
// must notice on its own.
const helperEnv = "LNX_OFI_TEST_HELPER"

// helperMain is the child: it prints its address, reads the parent's, and
// plays its role until it is killed.
func helperMain(role string) int {
	tr, err := Open(RuntimeVersion(), testCfg)
	if err != nil {
		fmt.Println("ERR", err)
		return 1
	}
	fmt.Println("ADDR", hex.EncodeToString(tr.Addr()))
	line, err := bufio.NewReader(os.Stdin).ReadString('\n')
	if err != nil {
		return 1
	}
	raw, err := hex.DecodeString(strings.TrimSpace(line))
	if err != nil {
		return 1
	}
	p, err := tr.Connect(raw)
	if err != nil {
		fmt.Println("ERR", err)
		return 1
	}
	r := newRec(tr)
	switch role {
	case "hold": // take the parent's RTS, never answer
		for len(r.arr) == 0 {
			r.poll()
		}
		fmt.Println("GOT")
	case "rts": // send an RTS, then stop polling
		buf := make([]byte, 1<<20)
		for {
			_, err := tr.Send(p, Hdr{Tag: 42}, [][]byte{buf}, 1)
			if err == nil {
				break
			}
			if !errors.Is(err, ErrAgain) {
				fmt.Println("ERR", err)
				return 1
			}
			r.poll()
		}
		for end := time.Now().Add(100 * time.Millisecond); time.Now().Before(end); {
			r.poll()
		}
		fmt.Println("SENT")
	case "refuse": // progress, but take no message: senders run out of credits
		r.refuse = 1 << 30
		for {
			r.poll()
		}
	}
	time.Sleep(time.Hour)
	return 0
}

type child struct {
	cmd   *exec.Cmd
	in    io.WriteCloser
	lines chan string
}

func startChild(t *testing.T, role string) *child {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), helperEnv+"="+role)
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	c := &child{cmd: cmd, in: in, lines: make(chan string, 16)}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			c.lines <- sc.Text()
		}
		close(c.lines)
	}()
	return c
}

// expect waits for a line with prefix while polling r.
func (c *child) expect(t *testing.T, prefix string, r *rec) string {
	t.Helper()
	deadline := time.Now().Add(liveness)
	for time.Now().Before(deadline) {
		select {
		case l, ok := <-c.lines:
			if !ok {
				t.Fatalf("child exited waiting for %q", prefix)
			}
			if strings.HasPrefix(l, prefix) {
				return strings.TrimSpace(strings.TrimPrefix(l, prefix))
			}
			if strings.HasPrefix(l, "ERR") {
				t.Fatalf("child: %s", l)
			}
		default:
			if r != nil {
				r.poll()
			} else {
				time.Sleep(time.Millisecond)
			}
		}
	}
	t.Fatalf("timed out waiting for %q from the child", prefix)
	return ""
}

func connectChild(t *testing.T, c *child, r *rec) *Peer {
	t.Helper()
	raw, err := hex.DecodeString(c.expect(t, "ADDR", nil))
	if err != nil {
		t.Fatal(err)
	}
	p, err := r.t.Connect(raw)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintln(c.in, hex.EncodeToString(r.t.Addr()))
	return p
}

// TestKilledReceiver: our rendezvous send waits for a CTS from a process
// that is killed. The send must fail within about PeerTimeout.
func TestKilledReceiver(t *testing.T) {
	r := newRec(openT(t, testCfg))
	c := startChild(t, "hold")
	p := connectChild(t, c, r)
	src := mmapBuf(t, 1<<20)
	send(t, r, p, Hdr{Tag: 1}, [][]byte{src}, 1)
	c.expect(t, "GOT", r)
	c.cmd.Process.Kill()
	start := time.Now()
	pump(t, "send failure", func() bool { _, ok := r.done[1]; return ok }, r)
	if err := r.done[1]; !errors.Is(err, ErrPeerGone) {
		t.Fatalf("send to killed peer: %v", err)
	}
	t.Logf("detected after %v; %+v", time.Since(start), r.t.Stats())
	if _, err := r.t.Send(p, Hdr{}, [][]byte{src[:10]}, 2); !errors.Is(err, ErrPeerGone) {
		t.Fatalf("later send: %v", err)
	}
}

// TestKilledSender: we pulled (posted the receive, sent the CTS) from a
// process that is killed before it sends the data. The pull must fail.
func TestKilledSender(t *testing.T) {
	r := newRec(openT(t, testCfg))
	c := startChild(t, "rts")
	connectChild(t, c, r)
	c.expect(t, "SENT", r)
	pump(t, "RTS", func() bool { return len(r.arr) == 1 }, r)
	r.arr[0].rv.SetContext(0)
	if err := r.t.Pull(r.arr[0].rv, [][]byte{mmapBuf(t, 1<<20)}); err != nil {
		t.Fatal(err)
	}
	for end := time.Now().Add(50 * time.Millisecond); time.Now().Before(end); {
		r.poll()
	}
	c.cmd.Process.Kill()
	start := time.Now()
	pump(t, "pull failure", func() bool { return len(r.pulls) == 1 }, r)
	for _, res := range r.pulls {
		if !errors.Is(res.err, ErrPeerGone) {
			t.Fatalf("pull from killed peer: n=%d err=%v", res.n, res.err)
		}
	}
	t.Logf("detected after %v; %+v", time.Since(start), r.t.Stats())
}
