// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only

package peers

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

// refQueue is the obviously-correct linear-scan model Queue is checked
// against: posted and unexpected are plain slices in post/arrival order.
type refQueue struct {
	tagged   bool
	posted   []refRecv
	unexp    []refMsg
	claimed  map[int]refMsg // by claim key
	claimSeq map[int]int    // claim key -> arrival order, for drain order
}

type refRecv struct {
	id               int
	src, tag, ignore uint64
}

type refMsg struct {
	id             int
	src, tag, size uint64
	arrival        int
}

func newRef(tagged bool) *refQueue {
	return &refQueue{tagged: tagged, claimed: map[int]refMsg{}}
}

func (q *refQueue) matches(src, tag, ignore uint64, m refMsg) bool {
	if src != AddrUnspec && src != m.src {
		return false
	}
	return !q.tagged || m.tag&^ignore == tag&^ignore
}

func (q *refQueue) find(src, tag, ignore uint64) int {
	return slices.IndexFunc(q.unexp, func(m refMsg) bool { return q.matches(src, tag, ignore, m) })
}

func (q *refQueue) take(i int) refMsg {
	m := q.unexp[i]
	q.unexp = slices.Delete(q.unexp, i, i+1)
	return m
}

func (q *refQueue) post(r refRecv) (int, bool) {
	if i := q.find(r.src, r.tag, r.ignore); i >= 0 {
		return q.take(i).id, true
	}
	q.posted = append(q.posted, r)
	return 0, false
}

func (q *refQueue) arrive(m refMsg) (int, bool) {
	i := slices.IndexFunc(q.posted, func(r refRecv) bool { return q.matches(r.src, r.tag, r.ignore, m) })
	if i >= 0 {
		r := q.posted[i]
		q.posted = slices.Delete(q.posted, i, i+1)
		return r.id, true
	}
	q.unexp = append(q.unexp, m)
	return 0, false
}

func (q *refQueue) unexpIndex(id int) int {
	return slices.IndexFunc(q.unexp, func(m refMsg) bool { return m.id == id })
}

func (q *refQueue) cancel(pred func(id int) bool) (int, bool) {
	i := slices.IndexFunc(q.posted, func(r refRecv) bool { return pred(r.id) })
	if i < 0 {
		return 0, false
	}
	id := q.posted[i].id
	q.posted = slices.Delete(q.posted, i, i+1)
	return id, true
}

func (q *refQueue) stats() (int, int, uint64, int, uint64) {
	var b, cb uint64
	for _, m := range q.unexp {
		b += m.size
	}
	for _, m := range q.claimed {
		cb += m.size
	}
	return len(q.posted), len(q.unexp), b, len(q.claimed), cb
}

// opReader turns fuzz bytes into bounded choices; past the end it yields 0.
type opReader struct{ data []byte }

func (r *opReader) more() bool { return len(r.data) > 0 }

func (r *opReader) n(k int) int {
	if len(r.data) == 0 {
		return 0
	}
	b := r.data[0]
	r.data = r.data[1:]
	return int(b) % k
}

// Small value sets so random ops collide often.
var (
	srcVals    = []uint64{0, 1, 2, 3, AddrUnspec}
	tagVals    = []uint64{0, 1, 2, 3, 1<<63 | 1, 0xff00}
	ignoreVals = []uint64{0, 0, 0, 0, 1, 3, 0xff00, 1 << 63, ^uint64(0)}
)

// runModel applies the op stream in data to a Queue and to refQueue and fails
// on the first divergence in results, counters or internal invariants.
func runModel(t testing.TB, tagged bool, data []byte) {
	runModelWith(t, NewQueue, tagged, data)
}

// runModelWith is runModel for a Queue made by newQueue.
func runModelWith(t testing.TB, newQueue func(bool) *Queue, tagged bool, data []byte) {
	q := newQueue(tagged)
	ref := newRef(tagged)
	in := &opReader{data: data}

	// Objects are recycled to check that links are reset on removal. Ctx is
	// the object's current id.
	var recvs []*Recv // every Recv object ever made
	var msgs []*Msg
	var freeR []*Recv
	var freeM []*Msg
	nextID, arrival := 1, 0

	newRecv := func() (*Recv, refRecv) {
		rr := refRecv{id: nextID, src: srcVals[in.n(len(srcVals))],
			tag: tagVals[in.n(len(tagVals))], ignore: ignoreVals[in.n(len(ignoreVals))]}
		nextID++
		var r *Recv
		if n := len(freeR); n > 0 && in.n(2) == 0 {
			r, freeR = freeR[n-1], freeR[:n-1]
		} else {
			r = new(Recv)
			recvs = append(recvs, r)
		}
		r.Src, r.Tag, r.Ignore, r.Ctx = rr.src, rr.tag, rr.ignore, rr.id
		return r, rr
	}
	newMsg := func() (*Msg, refMsg) {
		rm := refMsg{id: nextID, src: srcVals[in.n(len(srcVals))],
			tag: tagVals[in.n(len(tagVals))], size: uint64(in.n(256)), arrival: arrival}
		nextID++
		arrival++
		var m *Msg
		if n := len(freeM); n > 0 && in.n(2) == 0 {
			m, freeM = freeM[n-1], freeM[:n-1]
		} else {
			m = new(Msg)
			msgs = append(msgs, m)
		}
		m.Src, m.Tag, m.Size, m.Ctx = rm.src, rm.tag, rm.size, rm.id
		return m, rm
	}
	idOf := func(ctx any) int { return ctx.(int) }
	// gotMsg checks a *Msg result against the model's (id, ok).
	gotMsg := func(op string, m *Msg, id int, ok bool) {
		t.Helper()
		if (m != nil) != ok || (ok && idOf(m.Ctx) != id) {
			var got any = "nil"
			if m != nil {
				got = m.Ctx
			}
			t.Fatalf("%s: got msg %v, model says %d/%v", op, got, id, ok)
		}
	}
	gotRecv := func(op string, r *Recv, id int, ok bool) {
		t.Helper()
		if (r != nil) != ok || (ok && idOf(r.Ctx) != id) {
			var got any = "nil"
			if r != nil {
				got = r.Ctx
			}
			t.Fatalf("%s: got recv %v, model says %d/%v", op, got, id, ok)
		}
	}
	// A recv is posted iff the model has it; same for messages.
	postedIn := func(id int) bool {
		return slices.ContainsFunc(ref.posted, func(r refRecv) bool { return r.id == id })
	}

	for step := 0; in.more(); step++ {
		op := in.n(12)
		switch op {
		case 0, 1, 2: // post
			r, rr := newRecv()
			id, ok := ref.post(rr)
			m := q.Post(r)
			gotMsg(fmt.Sprintf("step %d post %+v", step, rr), m, id, ok)
			if m != nil {
				freeR = append(freeR, r)
				freeM = append(freeM, m)
			}
		case 3, 4, 5: // arrive
			m, rm := newMsg()
			id, ok := ref.arrive(rm)
			r := q.Arrive(m)
			gotRecv(fmt.Sprintf("step %d arrive %+v", step, rm), r, id, ok)
			if r != nil {
				freeR = append(freeR, r)
				freeM = append(freeM, m)
			}
		case 6: // peek or take
			src, tag, ign := srcVals[in.n(len(srcVals))], tagVals[in.n(len(tagVals))], ignoreVals[in.n(len(ignoreVals))]
			i := ref.find(src, tag, ign)
			id := 0
			if i >= 0 {
				id = ref.unexp[i].id
			}
			if in.n(2) == 0 {
				gotMsg(fmt.Sprintf("step %d peek", step), q.Peek(src, tag, ign), id, i >= 0)
			} else {
				if i >= 0 {
					ref.take(i)
				}
				m := q.Take(src, tag, ign)
				gotMsg(fmt.Sprintf("step %d take", step), m, id, i >= 0)
				if m != nil {
					freeM = append(freeM, m)
				}
			}
		case 7: // remove a specific (possibly not queued) message
			if len(msgs) == 0 {
				continue
			}
			m := msgs[in.n(len(msgs))]
			i := ref.unexpIndex(idOf(m.Ctx))
			if i >= 0 {
				ref.take(i)
			}
			if got := q.Remove(m); got != (i >= 0) {
				t.Fatalf("step %d remove %v: got %v", step, m.Ctx, got)
			}
			if i >= 0 {
				freeM = append(freeM, m)
			}
		case 8: // claim by pointer or by match
			key := in.n(4)
			_, dup := ref.claimed[key]
			if in.n(2) == 0 {
				if len(msgs) == 0 {
					continue
				}
				m := msgs[in.n(len(msgs))]
				i := ref.unexpIndex(idOf(m.Ctx))
				want := i >= 0 && !dup
				if want {
					ref.claimed[key] = ref.take(i)
				}
				if got := q.Claim(key, m); got != want {
					t.Fatalf("step %d claim %d %v: got %v want %v", step, key, m.Ctx, got, want)
				}
			} else {
				src, tag, ign := srcVals[in.n(len(srcVals))], tagVals[in.n(len(tagVals))], ignoreVals[in.n(len(ignoreVals))]
				i := -1
				if !dup {
					i = ref.find(src, tag, ign)
				}
				id := 0
				if i >= 0 {
					id = ref.unexp[i].id
					ref.claimed[key] = ref.take(i)
				}
				gotMsg(fmt.Sprintf("step %d claimmatch %d", step, key), q.ClaimMatch(key, src, tag, ign), id, i >= 0)
			}
		case 9: // take claimed
			key := in.n(4)
			rm, ok := ref.claimed[key]
			delete(ref.claimed, key)
			m := q.TakeClaimed(key)
			gotMsg(fmt.Sprintf("step %d takeclaimed %d", step, key), m, rm.id, ok)
			if m != nil {
				freeM = append(freeM, m)
			}
		case 10: // cancel by predicate, or unpost a specific recv
			if in.n(2) == 0 {
				mod, rem := in.n(3)+1, in.n(3)
				pred := func(id int) bool { return id%mod == rem%mod }
				id, ok := ref.cancel(pred)
				r := q.Cancel(func(r *Recv) bool { return pred(idOf(r.Ctx)) })
				gotRecv(fmt.Sprintf("step %d cancel", step), r, id, ok)
				if r != nil {
					freeR = append(freeR, r)
				}
			} else {
				if len(recvs) == 0 {
					continue
				}
				r := recvs[in.n(len(recvs))]
				id := idOf(r.Ctx)
				want := postedIn(id)
				if want {
					ref.cancel(func(x int) bool { return x == id })
				}
				if got := q.Unpost(r); got != want {
					t.Fatalf("step %d unpost %d: got %v", step, id, got)
				}
				if want {
					freeR = append(freeR, r)
				}
			}
		case 11: // rarely drain everything
			if in.n(8) != 0 {
				continue
			}
			var wantR []int
			for _, r := range ref.posted {
				wantR = append(wantR, r.id)
			}
			ref.posted = nil
			var gotR []int
			for _, r := range q.Drain() {
				gotR = append(gotR, idOf(r.Ctx))
				freeR = append(freeR, r)
			}
			if !slices.Equal(gotR, wantR) {
				t.Fatalf("step %d drain: got %v want %v", step, gotR, wantR)
			}
			if in.n(2) == 0 {
				var wantM []int
				for _, m := range ref.unexp {
					wantM = append(wantM, m.id)
				}
				cl := make([]refMsg, 0, len(ref.claimed))
				for _, m := range ref.claimed {
					cl = append(cl, m)
				}
				slices.SortFunc(cl, func(a, b refMsg) int { return a.arrival - b.arrival })
				for _, m := range cl {
					wantM = append(wantM, m.id)
				}
				ref.unexp, ref.claimed = nil, map[int]refMsg{}
				var gotM []int
				for _, m := range q.DrainUnexpected() {
					gotM = append(gotM, idOf(m.Ctx))
					freeM = append(freeM, m)
				}
				if !slices.Equal(gotM, wantM) {
					t.Fatalf("step %d drain unexpected: got %v want %v", step, gotM, wantM)
				}
			}
		}

		p, u, b := q.Stats()
		c, cb := q.Claimed()
		wp, wu, wb, wc, wcb := ref.stats()
		if p != wp || u != wu || b != wb || c != wc || cb != wcb {
			t.Fatalf("step %d op %d: stats %d/%d/%d claimed %d/%d, model %d/%d/%d claimed %d/%d",
				step, op, p, u, b, c, cb, wp, wu, wb, wc, wcb)
		}
		if err := q.check(); err != nil {
			t.Fatalf("step %d op %d: %v", step, op, err)
		}
	}
}

func TestModelRandom(t *testing.T) {
	for _, tagged := range []bool{true, false} {
		for seed := range uint64(20) {
			// Odd seeds check the serial Queue: the same matching without
			// a lock of its own.
			newQueue, kind := NewQueue, "locked"
			if seed%2 == 1 {
				newQueue, kind = NewSerialQueue, "serial"
			}
			t.Run(fmt.Sprintf("tagged=%v/%s/seed=%d", tagged, kind, seed), func(t *testing.T) {
				rng := rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15))
				// ~3000 ops; bias toward post/arrive in some seeds so the
				// queues grow long.
				data := make([]byte, 20000)
				for i := range data {
					data[i] = byte(rng.Uint32())
				}
				runModelWith(t, newQueue, tagged, data)
			})
		}
	}
}

// A workload with no cancels or drains, so queues get long and wildcard scans
// cross many entries.
func TestModelLongQueues(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	var data []byte
	for range 4000 {
		// op byte 0..5 = post/arrive, then plenty of parameter bytes
		data = append(data, byte(rng.IntN(6)))
		for range 6 {
			data = append(data, byte(rng.Uint32()))
		}
	}
	runModel(t, true, data)
	runModel(t, false, data)
}

func FuzzQueue(f *testing.F) {
	f.Add(true, []byte{})
	f.Add(true, []byte{0, 1, 1, 0, 0, 3, 1, 1, 0})
	f.Add(true, []byte{3, 1, 1, 0, 0, 3, 2, 1, 5, 0, 4, 1, 3, 0, 0, 4, 8, 1, 3, 8, 9, 1})
	f.Add(false, []byte{3, 0, 0, 7, 0, 4, 0, 0, 9, 0, 0, 0, 0, 0, 0, 0, 1, 0})
	f.Add(true, []byte{0, 4, 2, 8, 0, 0, 1, 2, 0, 0, 3, 1, 2, 0, 3, 1, 2, 0, 3, 1, 2, 0})
	f.Add(true, []byte{3, 1, 1, 9, 0, 8, 2, 1, 1, 1, 0, 6, 4, 9, 1, 1, 9, 2, 10, 0, 0, 0, 11, 0, 0})
	f.Fuzz(func(t *testing.T, tagged bool, data []byte) {
		if len(data) > 2048 {
			data = data[:2048] // keep the O(n^2) invariant checks fast
		}
		runModel(t, tagged, data)
	})
}
