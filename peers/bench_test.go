// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only

package peers

import (
	"fmt"
	"testing"
)

// fill queues n posted receives and n unexpected messages that the benchmark
// traffic (src 1, tag 2) never matches.
func fill(q *Queue, n int) {
	for i := range n {
		q.Post(&Recv{Src: uint64(i%64) + 10, Tag: uint64(i) + 100})
		q.Arrive(&Msg{Src: uint64(i%64) + 1000, Tag: uint64(i) + 100, Size: 64})
	}
}

// Exact-match Post then Arrive (and the reverse): cost must not depend on
// how many unrelated entries are queued.
func BenchmarkExactPostArrive(b *testing.B) {
	for _, n := range []int{0, 10000, 100000} {
		b.Run(fmt.Sprintf("queued=%d", n), func(b *testing.B) {
			q := NewQueue(true)
			fill(q, n)
			r := &Recv{Src: 1, Tag: 2}
			m := &Msg{Src: 1, Tag: 2, Size: 64}
			b.ReportAllocs()
			for b.Loop() {
				if q.Post(r) != nil || q.Arrive(m) != r {
					b.Fatal("no match")
				}
			}
		})
	}
}

func BenchmarkExactArrivePost(b *testing.B) {
	for _, n := range []int{0, 10000, 100000} {
		b.Run(fmt.Sprintf("queued=%d", n), func(b *testing.B) {
			q := NewQueue(true)
			fill(q, n)
			r := &Recv{Src: 1, Tag: 2}
			m := &Msg{Src: 1, Tag: 2, Size: 64}
			b.ReportAllocs()
			for b.Loop() {
				if q.Arrive(m) != nil || q.Post(r) != m {
					b.Fatal("no match")
				}
			}
		})
	}
}

// Wildcard costs: an exact message must scan wildcard receives posted before
// the exact one (w non-matching any-source receives); an any-source receive
// scans unexpected messages in arrival order (match at the tail of n).
func BenchmarkWildcard(b *testing.B) {
	for _, w := range []int{10, 100} {
		b.Run(fmt.Sprintf("exact-behind-%d-wild", w), func(b *testing.B) {
			q := NewQueue(true)
			fill(q, 10000)
			for i := range w {
				q.Post(&Recv{Src: AddrUnspec, Tag: uint64(1<<50 + i)})
			}
			r := &Recv{Src: 1, Tag: 2}
			m := &Msg{Src: 1, Tag: 2}
			b.ReportAllocs()
			for b.Loop() {
				if q.Post(r) != nil || q.Arrive(m) != r {
					b.Fatal("no match")
				}
			}
		})
	}
	b.Run("anysrc-recv-head", func(b *testing.B) {
		q := NewQueue(true)
		r := &Recv{Src: AddrUnspec, Tag: 2}
		m := &Msg{Src: 1, Tag: 2}
		b.ReportAllocs()
		for b.Loop() {
			if q.Post(r) != nil || q.Arrive(m) != r {
				b.Fatal("no match")
			}
		}
	})
	b.Run("anytag-recv-10k-other-sources", func(b *testing.B) {
		q := NewQueue(true)
		fill(q, 10000)
		r := &Recv{Src: 1, Ignore: ^uint64(0)}
		m := &Msg{Src: 1, Tag: 2}
		b.ReportAllocs()
		for b.Loop() {
			if q.Arrive(m) != nil || q.Post(r) != m {
				b.Fatal("no match")
			}
		}
	})
	for _, n := range []int{100, 10000} {
		b.Run(fmt.Sprintf("anysrc-recv-scans-%d-unexpected", n), func(b *testing.B) {
			q := NewQueue(true)
			fill(q, n)
			r := &Recv{Src: AddrUnspec, Tag: 2}
			m := &Msg{Src: 1, Tag: 2}
			b.ReportAllocs()
			for b.Loop() {
				if q.Arrive(m) != nil || q.Post(r) != m {
					b.Fatal("no match")
				}
			}
		})
	}
}

func BenchmarkParallelExact(b *testing.B) {
	q := NewQueue(true)
	var id uint64
	b.RunParallel(func(pb *testing.PB) {
		q.mu.Lock()
		id++
		src := id
		q.mu.Unlock()
		r := &Recv{Src: src, Tag: 2}
		m := &Msg{Src: src, Tag: 2}
		for pb.Next() {
			if q.Post(r) != nil || q.Arrive(m) != r {
				panic("no match")
			}
		}
	})
}
