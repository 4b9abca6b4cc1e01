package lnx

import (
	"testing"
	"unsafe"
)

// BenchmarkPingPong1B measures one-way latency through lnx's Go layers
// (no C crossing), two endpoints in two goroutines.
func BenchmarkPingPong1B(b *testing.B) {
	p := newPair(&testing.T{})
	bufs := [2][]byte{make([]byte, 1), make([]byte, 1)}
	var out [4]Completion
	wait := func(i int) {
		for {
			if n, _ := p.cq[i].Read(out[:1], 0); n == 1 {
				return
			}
		}
	}
	done := make(chan struct{})
	go func() {
		for k := 0; k < b.N; k++ {
			p.ep[1].Recv(bufOp(bufs[1], p.peerOf[1], 7, true))
			wait(1)
			p.ep[1].Send(bufOp(bufs[1], p.peerOf[1], 7, true))
			wait(1)
		}
		close(done)
	}()
	b.ResetTimer()
	for k := 0; k < b.N; k++ {
		p.ep[0].Recv(bufOp(bufs[0], p.peerOf[0], 7, true))
		p.ep[0].Send(bufOp(bufs[0], p.peerOf[0], 7, true))
		wait(0)
		wait(0)
	}
	<-done
	b.StopTimer()
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(2*b.N), "ns/one-way")
	_ = unsafe.Pointer(nil)
}
