// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only

package shm

import (
	"errors"
	"fmt"
	"runtime"
	"testing"
	"time"
)

// BenchmarkPingPong1B measures a 1-byte ping-pong between two endpoints
// polled by two goroutines (one per core). ns/oneway is half a round trip.
func BenchmarkPingPong1B(b *testing.B) {
	ea, eb, ab, ba := pair(b, Config{}, Config{})
	const quitTag = 9
	iov := [][]byte{{1}}
	// Claim both rings before timing.
	ea.Send(ab, Hdr{}, iov, 0)
	eb.Send(ba, Hdr{}, iov, 0)
	for ea.Poll(func(*Arrival) bool { return true }, nil) == 0 {
	}
	for eb.Poll(func(*Arrival) bool { return true }, nil) == 0 {
	}

	echoDone := make(chan error)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		quit := false
		var err error
		out := [][]byte{nil}
		cb := func(a *Arrival) bool {
			if a.Hdr.Tag == quitTag {
				quit = true
				return true
			}
			out[0] = a.Eager
			_, err = eb.Send(ba, a.Hdr, out, 0)
			return err == nil
		}
		for !quit && err == nil {
			eb.Poll(cb, nil)
		}
		echoDone <- err
	}()

	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	got := false
	cb := func(*Arrival) bool { got = true; return true }
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := ea.Send(ab, Hdr{Tag: 1}, iov, 0); err != nil {
			b.Fatal(err)
		}
		got = false
		for !got {
			ea.Poll(cb, nil)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(2*b.N), "ns/oneway")
	for {
		_, err := ea.Send(ab, Hdr{Tag: quitTag}, nil, 0)
		if err == nil {
			break
		}
		if !errors.Is(err, ErrAgain) {
			b.Fatal(err)
		}
	}
	if err := <-echoDone; err != nil {
		b.Fatal(err)
	}
}

// BenchmarkStream1B measures one-way 1-byte message throughput (no reply).
func BenchmarkStream1B(b *testing.B) {
	ea, eb, ab, _ := pair(b, Config{}, Config{})
	iov := [][]byte{{1}}
	done := make(chan int)
	go func() {
		n := 0
		cb := func(*Arrival) bool { n++; return true }
		for n < b.N {
			eb.Poll(cb, nil)
		}
		done <- n
	}()
	b.ResetTimer()
	for i := 0; i < b.N; {
		if _, err := ea.Send(ab, Hdr{Tag: uint64(i)}, iov, 0); err == nil {
			i++
		} else if !errors.Is(err, ErrAgain) {
			b.Fatal(err)
		}
	}
	<-done
}

// BenchmarkBandwidth1MiB streams 1 MiB rendezvous messages (up to 8 in
// flight) from one goroutine's endpoint to another's, which pulls them.
func BenchmarkBandwidth1MiB(b *testing.B) {
	for _, nocma := range []bool{false, true} {
		b.Run(fmt.Sprintf("nocma=%v", nocma), func(b *testing.B) {
			const size = 1 << 20
			ea, eb, ab, _ := pair(b, Config{}, Config{DisableCMA: nocma})
			src := pattern(size, 1)
			dst := make([]byte, size)
			iov := [][]byte{src}
			recvDone := make(chan error)
			go func() {
				n := 0
				var err error
				cb := func(a *Arrival) bool {
					if _, perr := eb.Pull(a.Rndv, [][]byte{dst}); perr != nil {
						err = perr
					}
					n++
					return true
				}
				deadline := time.Now().Add(5 * time.Minute)
				for n < b.N && err == nil && time.Now().Before(deadline) {
					eb.Poll(cb, nil)
				}
				recvDone <- err
			}()
			b.SetBytes(size)
			b.ResetTimer()
			inflight, completed := 0, 0
			onDone := func(_ uint64, err error) {
				if err != nil {
					b.Error(err)
				}
				inflight--
				completed++
			}
			for sent := 0; completed < b.N; {
				if sent < b.N && inflight < 8 {
					if _, err := ea.Send(ab, Hdr{}, iov, uint64(sent)); err == nil {
						sent++
						inflight++
					} else if !errors.Is(err, ErrAgain) {
						b.Fatal(err)
					}
				}
				ea.Poll(nil, onDone)
			}
			b.StopTimer()
			if err := <-recvDone; err != nil {
				b.Fatal(err)
			}
		})
	}
}

// BenchmarkProcPingPong1B is the ping-pong across two processes.
func BenchmarkProcPingPong1B(b *testing.B) {
	c := startChild(b, "echo", Config{})
	iov := [][]byte{{1}}
	got := false
	cb := func(*Arrival) bool { got = true; return true }
	// Warm up (claims rings, faults in pages).
	for i := 0; i < 1000; i++ {
		c.send(b, Hdr{Tag: tagPing}, iov, 0)
		for got = false; !got; {
			c.ep.Poll(cb, nil)
		}
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := c.ep.Send(c.peer, Hdr{Tag: tagPing}, iov, 0); err != nil {
			b.Fatal(err)
		}
		for got = false; !got; {
			c.ep.Poll(cb, nil)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(2*b.N), "ns/oneway")
	c.send(b, Hdr{Tag: tagBye}, nil, 0)
	c.wait(b)
}
