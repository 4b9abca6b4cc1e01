// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only

package shm

import (
	"bufio"
	"bytes"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Two-process tests: the test binary re-executes itself with childEnv set
// to a role; parent and child exchange addresses (hex lines) over the
// child's stdin/stdout and then talk through shared memory only.

const (
	childEnv   = "LNX_SHM_TEST_CHILD"
	noCMAEnv   = "LNX_SHM_TEST_NOCMA"
	sizeEnv    = "LNX_SHM_TEST_SIZE"
	stallEnv   = "LNX_SHM_TEST_STALL"
	childLimit = 5 * time.Minute // the child's own watchdog: well past the parent's waits (liveness)
)

// Message tags of the test protocol.
const (
	tagPing     = 1 // parent->child eager; echoed back with the same tag
	tagBigToKid = 2 // parent->child rendezvous, Data = pattern seed
	tagBigAck   = 3 // child->parent eager: [1] ok / [0]+text failure
	tagBigToPa  = 4 // child->parent rendezvous, Data = pattern seed
	tagAskBig   = 5 // parent->child: please send tagBigToPa of Data bytes
	tagSentBig  = 6 // child->parent: SendDone of tagBigToPa was nil ([1]) or not
	tagBye      = 9
)

func childMain(role string) int {
	go func() {
		time.Sleep(childLimit)
		fmt.Fprintln(os.Stderr, "child: watchdog expired")
		os.Exit(3)
	}()
	cfg := Config{DisableCMA: os.Getenv(noCMAEnv) != ""}
	ep, err := Open(cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, "child: open:", err)
		return 2
	}
	defer ep.Close()
	fmt.Println(hex.EncodeToString(ep.Addr()))
	in := bufio.NewReader(os.Stdin)
	line, err := in.ReadString('\n')
	if err != nil {
		fmt.Fprintln(os.Stderr, "child: read addr:", err)
		return 2
	}
	addr, err := hex.DecodeString(strings.TrimSpace(line))
	if err != nil {
		return 2
	}
	peer, err := ep.Connect(addr)
	if err != nil {
		fmt.Fprintln(os.Stderr, "child: connect:", err)
		return 2
	}
	// Exit when the parent goes away (stdin closes).
	go func() {
		io.Copy(io.Discard, in)
		os.Exit(4)
	}()
	c := &kid{ep: ep, peer: peer}
	switch role {
	case "echo":
		return c.echo()
	case "hold":
		return c.hold()
	case "sendbig":
		size, _ := strconv.Atoi(os.Getenv(sizeEnv))
		return c.sendBig(size, os.Getenv(stallEnv) != "")
	}
	fmt.Fprintln(os.Stderr, "child: unknown role", role)
	return 2
}

type kid struct {
	ep   *Endpoint
	peer *Peer
}

// send retries on ErrAgain while polling (without delivering arrivals).
func (c *kid) send(h Hdr, iov [][]byte, id uint64) (bool, error) {
	for {
		done, err := c.ep.Send(c.peer, h, iov, id)
		if !errors.Is(err, ErrAgain) {
			return done, err
		}
		c.ep.Poll(nil, nil)
	}
}

func (c *kid) echo() int {
	var held *Rendezvous
	var heldSeed uint64
	var ask uint64
	bye := false
	var echo []byte
	var echoHdr Hdr
	echoing := false
	cb := func(a *Arrival) bool {
		switch a.Hdr.Tag {
		case tagPing:
			if echoing {
				return false // one echo at a time; the rest waits in the ring
			}
			echo = append(echo[:0], a.Eager...)
			echoHdr, echoing = a.Hdr, true
		case tagBigToKid:
			held, heldSeed = a.Rndv, a.Hdr.Data
		case tagAskBig:
			ask = a.Hdr.Data
		case tagBye:
			bye = true
		}
		return true
	}
	for !bye {
		c.ep.Poll(cb, nil)
		if echoing {
			if _, err := c.send(echoHdr, [][]byte{echo}, 0); err != nil {
				fmt.Fprintln(os.Stderr, "child: echo:", err)
				return 5
			}
			echoing = false
		}
		if held != nil {
			rv := held
			held = nil
			want := pattern(int(rv.Size()), heldSeed)
			dst := make([]byte, rv.Size())
			n, err := c.ep.Pull(rv, split(dst, 1000, len(dst)/3, 0, 4095))
			reply := []byte{1}
			if err != nil || n != uint64(len(want)) || !bytes.Equal(dst, want) {
				reply = []byte(fmt.Sprintf("\x00pull n=%d err=%v diff@%d", n, err, firstDiff(dst, want)))
			}
			c.send(Hdr{Tag: tagBigAck}, [][]byte{reply}, 0)
		}
		if ask != 0 {
			size := ask
			ask = 0
			src := pattern(int(size), 4242)
			c.send(Hdr{Tag: tagBigToPa, Data: 4242}, split(src, 3, int(size)/2, 0, 1<<20), 77)
			ok := byte(2)
			deadline := time.Now().Add(liveness)
			for ok == 2 && time.Now().Before(deadline) {
				c.ep.Poll(cb, func(id uint64, err error) {
					ok = 0
					if id == 77 && err == nil {
						ok = 1
					}
				})
			}
			c.send(Hdr{Tag: tagSentBig}, [][]byte{{ok}}, 0)
		}
	}
	return 0
}

// hold acknowledges a rendezvous arrival without pulling it, then polls
// until killed.
func (c *kid) hold() int {
	var kept *Rendezvous
	acked := false
	for {
		c.ep.Poll(func(a *Arrival) bool {
			if a.Rndv != nil && kept == nil {
				kept = a.Rndv
			}
			return true
		}, func(uint64, error) {})
		if kept != nil && !acked {
			c.send(Hdr{Tag: tagBigAck}, [][]byte{{1}}, 0)
			acked = true
		}
	}
}

// sendBig sends a rendezvous message of size bytes and keeps polling
// until killed. With stall, it stops polling as soon as a poll has served
// part of a fallback copy (and says "streaming"): the receiver's Pull then
// waits, mid-stream, for data that will never come, however late the
// parent's kill lands.
func (c *kid) sendBig(size int, stall bool) int {
	src := pattern(size, 99)
	if _, err := c.send(Hdr{Tag: tagBigToPa, Data: 99}, [][]byte{src}, 1); err != nil {
		fmt.Fprintln(os.Stderr, "child: send:", err)
		return 2
	}
	announced := false
	for {
		c.ep.Poll(func(*Arrival) bool { return true }, func(uint64, error) {})
		if !announced && c.peer.st.off > 0 {
			fmt.Println("streaming") // tells the parent a fallback copy is under way
			announced = true
			for stall {
				time.Sleep(time.Hour) // until killed (or the watchdog)
			}
		}
	}
}

type child struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	lines  chan string // the child's stdout, line by line
	region string      // the child's region name
	ep     *Endpoint
	peer   *Peer
	waited bool
}

func startChild(t testing.TB, role string, cfg Config, env ...string) *child {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), append([]string{childEnv + "=" + role}, env...)...)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	c := &child{cmd: cmd, stdin: stdin, lines: make(chan string, 16)}
	t.Cleanup(func() {
		if !c.waited {
			cmd.Process.Kill()
			cmd.Wait()
		}
		// A killed child cannot unlink its region; do it for it.
		if c.region != "" {
			os.Remove(shmDir + "/" + c.region)
		}
	})
	c.ep = mustOpen(t, cfg)
	fmt.Fprintln(stdin, hex.EncodeToString(c.ep.Addr()))
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			c.lines <- sc.Text()
		}
		close(c.lines)
	}()
	var line string
	select {
	case line = <-c.lines:
	case <-time.After(liveness):
		t.Fatal("child did not report its address")
	}
	addr, err := hex.DecodeString(strings.TrimSpace(line))
	if err != nil {
		t.Fatalf("child address %q: %v", line, err)
	}
	c.peer = mustConnect(t, c.ep, addr)
	c.region = c.peer.name
	return c
}

// wait waits (up to liveness) for the child to exit and returns its exit
// code.
func (c *child) wait(t testing.TB) int {
	t.Helper()
	res := make(chan error, 1)
	go func() { res <- c.cmd.Wait() }()
	select {
	case err := <-res:
		c.waited = true
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return ee.ExitCode()
		}
		if err != nil {
			t.Fatal(err)
		}
		return 0
	case <-time.After(liveness):
		c.cmd.Process.Kill()
		<-res
		c.waited = true
		t.Fatalf("child did not exit within %v", liveness)
	}
	return -1
}

func (c *child) send(t testing.TB, h Hdr, iov [][]byte, id uint64) bool {
	t.Helper()
	deadline := time.Now().Add(liveness)
	for {
		done, err := c.ep.Send(c.peer, h, iov, id)
		if err == nil {
			return done
		}
		if !errors.Is(err, ErrAgain) || time.Now().After(deadline) {
			t.Fatalf("send: %v", err)
		}
		c.ep.Poll(nil, nil)
	}
}

func TestProcPingPongAndLarge(t *testing.T) {
	for _, nocma := range []bool{false, true} {
		t.Run(fmt.Sprintf("nocma=%v", nocma), func(t *testing.T) {
			var env []string
			if nocma {
				env = append(env, noCMAEnv+"=1")
			}
			c := startChild(t, "echo", Config{DisableCMA: nocma}, env...)
			ep := c.ep

			// Ping-pong, sizes 0..EagerMax.
			var reply []byte
			var rtag, rdata uint64
			got := false
			cb := func(a *Arrival) bool {
				got, rtag, rdata = true, a.Hdr.Tag, a.Hdr.Data
				reply = append(reply[:0], a.Eager...)
				return true
			}
			const rounds = 2000
			start := time.Now()
			for i := 0; i < rounds; i++ {
				size := (i * 37) % (c.peer.EagerMax() + 1)
				if i < 10 {
					size = i % 2 // 0 and 1 byte
				}
				msg := pattern(size, uint64(i))
				c.send(t, Hdr{Tag: tagPing, Data: uint64(i)}, [][]byte{msg}, 0)
				got = false
				spin(t, "echo", func() bool { ep.Poll(cb, nil); return got })
				if rtag != tagPing || rdata != uint64(i) || !bytes.Equal(reply, msg) {
					t.Fatalf("round %d: tag %d data %d, payload ok=%v", i, rtag, rdata, bytes.Equal(reply, msg))
				}
			}
			t.Logf("%d round trips (sizes 0..%d) in %v", rounds, c.peer.EagerMax(), time.Since(start))

			// Large parent -> child; the child pulls and checks.
			const size = 4<<20 + 13
			src := pattern(size, 1234)
			if c.send(t, Hdr{Tag: tagBigToKid, Data: 1234}, split(src, 100, 1<<20, 0, 1<<21), 5) {
				t.Fatal("large send completed eagerly")
			}
			var ack []byte
			doneErr, doneSeen := error(nil), false
			spin(t, "large transfer to child", func() bool {
				ep.Poll(func(a *Arrival) bool {
					if a.Hdr.Tag == tagBigAck {
						ack = append([]byte{}, a.Eager...)
					}
					return true
				}, func(id uint64, err error) { doneSeen, doneErr = true, err })
				return ack != nil && doneSeen
			})
			if doneErr != nil || len(ack) != 1 || ack[0] != 1 {
				t.Fatalf("child pull: SendDone=%v ack=%q", doneErr, ack)
			}

			// Large child -> parent; we pull.
			c.send(t, Hdr{Tag: tagAskBig, Data: size}, nil, 0)
			var rv *Rendezvous
			var seed uint64
			spin(t, "large arrival", func() bool {
				ep.Poll(func(a *Arrival) bool {
					if a.Hdr.Tag == tagBigToPa {
						rv, seed = a.Rndv, a.Hdr.Data
					}
					return true
				}, nil)
				return rv != nil
			})
			if rv.Size() != size || rv.Src() != c.peer.ID() {
				t.Fatalf("rendezvous size %d src %x", rv.Size(), rv.Src())
			}
			dst := make([]byte, size)
			n, err := ep.Pull(rv, split(dst, 1<<20, 5, 0, 1<<20))
			if err != nil || n != size {
				t.Fatalf("Pull: %d %v", n, err)
			}
			if want := pattern(size, seed); !bytes.Equal(dst, want) {
				t.Fatalf("data differs at %d", firstDiff(dst, want))
			}
			var sent []byte
			spin(t, "child SendDone", func() bool {
				ep.Poll(func(a *Arrival) bool {
					if a.Hdr.Tag == tagSentBig {
						sent = append([]byte{}, a.Eager...)
					}
					return true
				}, nil)
				return sent != nil
			})
			if sent[0] != 1 {
				t.Fatalf("child SendDone status %d", sent[0])
			}
			st := ep.Stats()
			if nocma && (st.FallbackPulls != 1 || st.CMAPulls != 0) || !nocma && st.CMAPulls != 1 {
				t.Fatalf("stats %+v", st)
			}
			c.send(t, Hdr{Tag: tagBye}, nil, 0)
			if code := c.wait(t); code != 0 {
				t.Fatalf("child exit code %d", code)
			}
			if _, err := os.Stat(shmDir + "/" + c.region); !os.IsNotExist(err) {
				t.Fatalf("child's region left behind after Close: %v", err)
			}
		})
	}
}

func TestProcSenderSeesReceiverDeath(t *testing.T) {
	c := startChild(t, "hold", Config{})
	big := pattern(4<<20, 1)
	c.send(t, Hdr{Tag: tagBigToKid}, [][]byte{big}, 11)
	gotAck := false
	spin(t, "child holds rendezvous", func() bool {
		c.ep.Poll(func(a *Arrival) bool { gotAck = gotAck || a.Hdr.Tag == tagBigAck; return true },
			func(id uint64, err error) { t.Fatalf("early SendDone(%d, %v)", id, err) })
		return gotAck
	})
	c.cmd.Process.Kill() // not reaped yet: a zombie must count as dead
	start := time.Now()
	var doneErr error
	seen := false
	spin(t, "SendDone after peer death", func() bool {
		c.ep.Poll(func(*Arrival) bool { return true }, func(id uint64, err error) {
			if id != 11 {
				t.Fatalf("SendDone id %d", id)
			}
			seen, doneErr = true, err
		})
		return seen
	})
	t.Logf("death detected after %v", time.Since(start))
	if !errors.Is(doneErr, ErrPeerGone) {
		t.Fatalf("SendDone: %v", doneErr)
	}
	if _, err := c.ep.Send(c.peer, Hdr{}, nil, 0); !errors.Is(err, ErrPeerGone) {
		t.Fatalf("Send to dead peer: %v", err)
	}
	c.wait(t)
}

func TestProcPullFromDeadSender(t *testing.T) {
	cases := []struct {
		name  string
		nocma bool
		size  int
		mid   bool // kill while Pull is running: the child stalls mid-stream
	}{
		{"cma", false, 4 << 20, false},
		{"fallback", true, 4 << 20, false},
		{"fallback-midstream", true, 64 << 20, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			env := []string{sizeEnv + "=" + strconv.Itoa(tc.size)}
			if tc.mid {
				env = append(env, stallEnv+"=1")
			}
			if tc.nocma {
				env = append(env, noCMAEnv+"=1")
			}
			c := startChild(t, "sendbig", Config{DisableCMA: tc.nocma}, env...)
			var rv *Rendezvous
			spin(t, "rendezvous arrival", func() bool {
				c.ep.Poll(func(a *Arrival) bool { rv = a.Rndv; return true }, nil)
				return rv != nil
			})
			killed := make(chan struct{})
			streaming := false
			if tc.mid {
				// The child stops serving once it has served part of the
				// copy: the Pull below is then stuck mid-stream until
				// this kill, whenever it lands.
				go func() {
					defer close(killed)
					select {
					case line := <-c.lines:
						streaming = line == "streaming"
					case <-time.After(liveness):
					}
					c.cmd.Process.Kill()
				}()
			} else {
				// SIGKILL is asynchronous: wait until the process has
				// exited (a zombie) so that the Pull must see it dead.
				pr := openProc(c.cmd.Process.Pid)
				c.cmd.Process.Kill()
				spin(t, "child exit", func() bool { time.Sleep(time.Millisecond); return !pr.alive() })
				pr.close()
				close(killed)
			}
			start := time.Now()
			dst := make([]byte, tc.size)
			n, err := c.ep.Pull(rv, [][]byte{dst})
			t.Logf("Pull returned after %v: n=%d err=%v", time.Since(start), n, err)
			<-killed
			if tc.mid && !streaming {
				t.Errorf("the child did not report a fallback copy under way within %v", liveness)
			}
			if !errors.Is(err, ErrPeerGone) {
				t.Fatalf("Pull: n=%d err=%v", n, err)
			}
			if tc.mid && (n == 0 || n >= uint64(tc.size)) {
				t.Errorf("kill was not mid-stream: n=%d", n)
			}
			if want := pattern(tc.size, 99); !bytes.Equal(dst[:n], want[:n]) {
				t.Fatalf("partial data differs at %d", firstDiff(dst[:n], want[:n]))
			}
			c.wait(t)
			// The dead sender's ring is released eventually.
			spin(t, "ring release", func() bool {
				c.ep.Poll(func(*Arrival) bool { return true }, nil)
				return c.ep.Stats().ActiveRings == 0
			})
		})
	}
}
