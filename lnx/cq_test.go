// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only

package lnx

import (
	"testing"

	"github.com/lnx-go/lnx-go/internal/fi"
)

// TestCQNeverEmptied: a reader that takes completions one at a time while
// more keep coming never empties the CQ. It still gets every completion in
// order, and the CQ holds memory for what is queued, not for every
// completion ever pushed (load_flood's receiver grew by 6 MB for 48,000).
func TestCQNeverEmptied(t *testing.T) {
	p := newPair(t)
	q, err := p.d.OpenCQ(CQAttr{Format: fi.CQ_FORMAT_TAGGED})
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	const total, backlog = 100000, 100
	var out [1]Completion
	next, pushed := uint64(0), uint64(0)
	for ; pushed < backlog; pushed++ {
		q.Push(Completion{Tag: pushed, Len: pushed * 3})
	}
	for next < total {
		if pushed < total {
			q.Push(Completion{Tag: pushed, Len: pushed * 3})
			pushed++
		}
		if n, _ := q.Read(out[:], 0); n != 1 {
			t.Fatalf("read %d with %d queued", n, pushed-next)
		}
		if out[0].Tag != next || out[0].Len != next*3 {
			t.Fatalf("completion %d read where %d was due", out[0].Tag, next)
		}
		next++
		if pushed < total && cap(q.entries) > 4*backlog+cqInitial {
			t.Fatalf("%d completions queued in a slice of %d after %d pushed", pushed-next, cap(q.entries), pushed)
		}
	}
}
