// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only

package shm

import (
	"bytes"
	"errors"
	"os"
	"testing"

	"golang.org/x/sys/unix"
)

// smallShm mounts a tmpfs of the given size on a temporary directory and
// makes it the region directory for the test (root only).
func smallShm(t *testing.T, size string) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root to mount a tmpfs")
	}
	dir := t.TempDir()
	if err := unix.Mount("lnxtest", dir, "tmpfs", 0, "size="+size); err != nil {
		t.Skip("cannot mount a tmpfs:", err)
	}
	old := shmDir
	shmDir = dir
	t.Cleanup(func() {
		shmDir = old
		_ = unix.Unmount(dir, unix.MNT_DETACH)
	})
	return dir
}

// fill writes a file into dir until the file system is full.
func fill(t *testing.T, dir string) string {
	t.Helper()
	path := dir + "/filler"
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	chunk := make([]byte, 64<<10)
	for sz := len(chunk); sz >= pageBytes; {
		if _, err := f.Write(chunk[:sz]); err != nil {
			if !errors.Is(err, unix.ENOSPC) {
				t.Fatal(err)
			}
			sz /= 2
		}
	}
	return path
}

// A region is allocated when it is created: with /dev/shm too small Open
// fails with ENOSPC (it used to succeed with a sparse file and raise
// SIGBUS at the first touch of a page the tmpfs could not back).
func TestOpenNoSpace(t *testing.T) {
	dir := smallShm(t, "64k")
	_, err := Open(Config{})
	if !errors.Is(err, unix.ENOSPC) {
		t.Fatalf("Open on a 64 KiB /dev/shm: %v, want ENOSPC", err)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Fatalf("Open left %d files behind", len(ents))
	}
}

// With /dev/shm filled after both endpoints opened, eager messages through
// the whole ring still flow, and a fallback (no CMA) Pull, whose bulk
// window is allocated on first use, fails with ENOSPC rather than SIGBUS
// in the sender; once there is room again it succeeds.
func TestFullShmFallback(t *testing.T) {
	dir := smallShm(t, "2m")
	cfg := Config{Rings: 2, RingBytes: 16 << 10, BulkBytes: 64 << 10, DisableCMA: true}
	a, b, ab, _ := pair(t, cfg, cfg)
	filler := fill(t, dir)

	// Eager: several laps of the ring.
	for i := 0; i < 64; i++ {
		msg := pattern(1000, uint64(i))
		spin(t, "eager send", func() bool {
			_, err := a.Send(ab, Hdr{Tag: uint64(i)}, [][]byte{msg}, 0)
			if err != nil && !errors.Is(err, ErrAgain) {
				t.Fatalf("Send: %v", err)
			}
			return err == nil
		})
		var got []byte
		spin(t, "eager arrival", func() bool {
			b.Poll(func(ar *Arrival) bool { got = append([]byte(nil), ar.Eager...); return true }, nil)
			return got != nil
		})
		if !bytes.Equal(got, msg) {
			t.Fatalf("eager message %d corrupt", i)
		}
	}

	big := pattern(200<<10, 7)
	rndv := func() *Rendezvous {
		if done, err := a.Send(ab, Hdr{Tag: 7}, [][]byte{big}, 42); err != nil || done {
			t.Fatalf("rendezvous Send: done=%v err=%v", done, err)
		}
		var rv *Rendezvous
		spin(t, "rendezvous arrival", func() bool {
			b.Poll(func(ar *Arrival) bool { rv = ar.Rndv; return true }, nil)
			return rv != nil
		})
		return rv
	}
	sendDone := func() error {
		var res error
		seen := false
		spin(t, "send completion", func() bool {
			a.Poll(func(*Arrival) bool { return true }, func(id uint64, err error) { seen, res = true, err })
			return seen
		})
		return res
	}

	dst := make([]byte, len(big))
	if _, err := b.Pull(rndv(), [][]byte{dst}); !errors.Is(err, unix.ENOSPC) {
		t.Fatalf("fallback Pull with /dev/shm full: %v, want ENOSPC", err)
	}
	if err := sendDone(); !errors.Is(err, ErrRemote) {
		t.Fatalf("sender's completion: %v, want ErrRemote", err)
	}

	os.Remove(filler)
	rv := rndv()
	stop := make(chan struct{})
	served := make(chan error, 1)
	go func() { // the sender streams the fallback copy while it polls
		var res error
		seen := false
		for !seen {
			select {
			case <-stop:
				served <- errors.New("stopped before the send completed")
				return
			default:
			}
			a.Poll(func(*Arrival) bool { return true }, func(id uint64, err error) { seen, res = true, err })
		}
		served <- res
	}()
	n, err := b.Pull(rv, [][]byte{dst})
	if err != nil || n != uint64(len(big)) || !bytes.Equal(dst, big) {
		close(stop)
		<-served
		t.Fatalf("fallback Pull after space was freed: n=%d err=%v", n, err)
	}
	if err := <-served; err != nil {
		t.Fatalf("sender's completion: %v", err)
	}
}
