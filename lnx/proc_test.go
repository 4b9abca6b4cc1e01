// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only

package lnx

import (
	"bufio"
	"encoding/hex"
	"errors"
	"fmt"
	"github.com/lnx-go/lnx-go/lnx/config"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/lnx-go/lnx-go/internal/fi"
)

// foreignBuf is memory outside the Go heap, like an MPI application's.
func foreignBuf(n int) []byte {
	b, err := unix.Mmap(-1, 0, max(n, 4096), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		panic(err)
	}
	return b[:n]
}

// The two-process tests re-run this binary as the peer.
const childEnv = "LNX_TEST_CHILD"

func TestMain(m *testing.M) {
	if role := os.Getenv(childEnv); role != "" {
		os.Exit(runChild(role))
	}
	os.Exit(m.Run())
}

// solo is one endpoint with its AV and CQ, for multi-process tests.
type solo struct {
	d  *Domain
	ep *Endpoint
	cq *CQ
	av *AV
}

func openSolo(links string) (*solo, error) {
	Getenv = func(k string) string {
		if k == config.Links {
			return links
		}
		return os.Getenv(k)
	}
	infos, err := GetInfo(v117, nil)
	if err != nil {
		return nil, err
	}
	f, _ := OpenFabric(v117, infos[0].Fabric)
	s := &solo{}
	if s.d, err = f.OpenDomain(infos[0]); err != nil {
		return nil, err
	}
	s.av, _ = s.d.OpenAV(AVAttr{Type: fi.AV_TABLE})
	s.cq, _ = s.d.OpenCQ(CQAttr{Format: fi.CQ_FORMAT_TAGGED})
	if s.ep, err = s.d.OpenEndpoint(infos[0]); err != nil {
		return nil, err
	}
	s.ep.Bind(s.av, 0)
	s.ep.Bind(s.cq, fi.SEND|fi.RECV)
	return s, s.ep.Enable()
}

func (s *solo) insert(hexName string) (uint64, error) {
	raw, err := hex.DecodeString(strings.TrimSpace(hexName))
	if err != nil {
		return 0, err
	}
	out := []uint64{0}
	if s.av.Insert(raw, 1, out, nil) != 1 {
		return 0, errors.New("insert failed")
	}
	return out[0], nil
}

func (s *solo) waitN(n int) error {
	var out [16]Completion
	deadline := time.Now().Add(testLiveness)
	for n > 0 {
		k, err := s.cq.Read(out[:min(n, 16)], 0)
		n -= k
		if err == fi.EAVAIL {
			c, _ := s.cq.ReadErr()
			return fmt.Errorf("error completion %+v", c)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%d completions still missing after %v", n, testLiveness)
		}
	}
	return nil
}

const streamWindow, streamRounds = 64, 200

func streamOp(buf []byte, addr, tag uint64, ctx unsafe.Pointer) *Op {
	op := bufOp(buf, addr, tag, true)
	op.Ctx = ctx
	return op
}

// runChild is the receiving side of TestProcStream.
func runChild(role string) int {
	s, err := openSolo("shm")
	if err != nil {
		fmt.Fprintln(os.Stderr, "child:", err)
		return 2
	}
	name, _ := s.ep.Name()
	fmt.Println(hex.EncodeToString(name))
	line, _ := bufio.NewReader(os.Stdin).ReadString('\n')
	peer, err := s.insert(line)
	if err != nil {
		fmt.Fprintln(os.Stderr, "child:", err)
		return 2
	}
	buf := foreignBuf(4096)
	ack := foreignBuf(1)
	ctxs := foreignBuf(4096)
	for r := 0; r < streamRounds; r++ {
		for k := 0; k < streamWindow; k++ {
			if err := s.ep.Recv(streamOp(buf, peer, 1, unsafe.Pointer(&ctxs[k*8]))); err != nil {
				return 3
			}
		}
		if err := s.waitN(streamWindow); err != nil {
			fmt.Fprintln(os.Stderr, "child:", err)
			return 4
		}
		for s.ep.Send(streamOp(ack[:0], peer, 2, nil)) != nil {
			s.cq.progress()
		}
		if err := s.waitN(1); err != nil {
			return 5
		}
	}
	s.ep.Close()
	return 0
}

func TestProcStream(t *testing.T) {
	s, err := openSolo("shm")
	if err != nil {
		t.Fatal(err)
	}
	defer s.ep.Close()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"=recv")
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	peer, err := s.insert(line)
	if err != nil {
		t.Fatal(err)
	}
	name, _ := s.ep.Name()
	fmt.Fprintln(stdin, hex.EncodeToString(name))
	buf := foreignBuf(4096)
	ack := foreignBuf(1)
	ctxs := foreignBuf(4096)
	for r := 0; r < streamRounds; r++ {
		if err := s.ep.Recv(streamOp(ack[:0], peer, 2, nil)); err != nil {
			t.Fatal(err)
		}
		for k := 0; k < streamWindow; k++ {
			for {
				err := s.ep.Send(streamOp(buf, peer, 1, unsafe.Pointer(&ctxs[k*8])))
				if err == nil {
					break
				}
				if !errors.Is(err, fi.EAGAIN) {
					t.Fatal(err)
				}
				s.cq.progress()
			}
		}
		if err := s.waitN(streamWindow + 1); err != nil {
			t.Fatal(err)
		}
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("child: %v", err)
	}
}
