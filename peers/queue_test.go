// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only

package peers

import (
	"testing"
)

type step struct {
	op                string // "post" or "arrive"
	name              string // Ctx of the new entry
	src, tag, ignore  uint64 // ignore is unused for arrive
	want              string // name of the partner it must match, "" for queued
	wantPosted, wantU int    // Stats after the step
}

const anySrc = AddrUnspec

func runSteps(t *testing.T, q *Queue, steps []step) {
	t.Helper()
	for i, s := range steps {
		var got string
		switch s.op {
		case "post":
			if m := q.Post(&Recv{Src: s.src, Tag: s.tag, Ignore: s.ignore, Ctx: s.name}); m != nil {
				got = m.Ctx.(string)
			}
		case "arrive":
			if r := q.Arrive(&Msg{Src: s.src, Tag: s.tag, Size: 1, Ctx: s.name}); r != nil {
				got = r.Ctx.(string)
			}
		default:
			t.Fatalf("step %d: bad op %q", i, s.op)
		}
		if got != s.want {
			t.Fatalf("step %d (%s %s): matched %q, want %q", i, s.op, s.name, got, s.want)
		}
		p, u, _ := q.Stats()
		if p != s.wantPosted || u != s.wantU {
			t.Fatalf("step %d (%s %s): stats posted=%d unexpected=%d, want %d/%d",
				i, s.op, s.name, p, u, s.wantPosted, s.wantU)
		}
		if err := q.check(); err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
	}
}

func TestMatching(t *testing.T) {
	tests := []struct {
		name   string
		tagged bool
		steps  []step
	}{
		{"exact posted first", true, []step{
			{"post", "r1", 1, 7, 0, "", 1, 0},
			{"arrive", "m1", 1, 8, 0, "", 1, 1},   // wrong tag
			{"arrive", "m2", 2, 7, 0, "", 1, 2},   // wrong source
			{"arrive", "m3", 1, 7, 0, "r1", 0, 2}, // exact
		}},
		{"exact unexpected first", true, []step{
			{"arrive", "m1", 1, 7, 0, "", 0, 1},
			{"arrive", "m2", 1, 7, 0, "", 0, 2},
			{"post", "r1", 1, 7, 0, "m1", 0, 1}, // earliest arrival
			{"post", "r2", 1, 7, 0, "m2", 0, 0},
			{"post", "r3", 1, 7, 0, "", 1, 0},
		}},
		{"any source", true, []step{
			{"arrive", "m1", 3, 5, 0, "", 0, 1},
			{"arrive", "m2", 4, 5, 0, "", 0, 2},
			{"post", "r1", anySrc, 5, 0, "m1", 0, 1},
			{"post", "r2", anySrc, 6, 0, "", 1, 1},
			{"arrive", "m3", 9, 6, 0, "r2", 0, 1},
			{"post", "r3", anySrc, 5, 0, "m2", 0, 0},
		}},
		{"ignore bits", true, []step{
			{"post", "r1", 1, 0x10, 0x0f, "", 1, 0},
			{"arrive", "m1", 1, 0x20, 0, "", 1, 1},
			{"arrive", "m2", 1, 0x1f, 0, "r1", 0, 1},
			{"post", "r2", 1, 0, ^uint64(0), "m1", 0, 0}, // any tag
			{"arrive", "m3", 1, 0x13, 0, "", 0, 1},
			{"arrive", "m4", 2, 0x13, 0, "", 0, 2},
			{"post", "r3", anySrc, 0x10, 0x0f, "m3", 0, 1},
			{"post", "r4", 2, 0x10, 0x0f, "m4", 0, 0},
		}},
		{"ignore bits scan skips nonmatching", true, []step{
			{"arrive", "m1", 1, 0x100, 0, "", 0, 1},
			{"arrive", "m2", 2, 0x011, 0, "", 0, 2},
			{"arrive", "m3", 1, 0x012, 0, "", 0, 3},
			{"post", "r1", 1, 0x010, 0x0f, "m3", 0, 2}, // skips m1 (tag), m2 (src)
			{"post", "r2", anySrc, 0x010, 0x0f, "m2", 0, 1},
		}},
		{"wildcard posted before exact wins", true, []step{
			{"post", "w", anySrc, 7, 0, "", 1, 0},
			{"post", "e", 1, 7, 0, "", 2, 0},
			{"arrive", "m1", 1, 7, 0, "w", 1, 0},
			{"arrive", "m2", 1, 7, 0, "e", 0, 0},
		}},
		{"exact posted before wildcard wins", true, []step{
			{"post", "e", 1, 7, 0, "", 1, 0},
			{"post", "w", anySrc, 7, 0, "", 2, 0},
			{"arrive", "m1", 1, 7, 0, "e", 1, 0},
			{"arrive", "m2", 1, 7, 0, "w", 0, 0},
		}},
		{"ignore wildcard vs exact ordering", true, []step{
			{"post", "e1", 1, 7, 0, "", 1, 0},
			{"post", "w1", 1, 0, ^uint64(0), "", 2, 0},
			{"post", "e2", 1, 7, 0, "", 3, 0},
			{"post", "w2", 1, 0, ^uint64(0), "", 4, 0},
			{"arrive", "m1", 1, 7, 0, "e1", 3, 0},
			{"arrive", "m2", 1, 7, 0, "w1", 2, 0},
			{"arrive", "m3", 1, 7, 0, "e2", 1, 0},
			{"arrive", "m4", 1, 9, 0, "w2", 0, 0},
		}},
		{"nonmatching earlier wildcard is skipped", true, []step{
			{"post", "w", anySrc, 8, 0, "", 1, 0},
			{"post", "e", 1, 7, 0, "", 2, 0},
			{"arrive", "m1", 1, 7, 0, "e", 1, 0},
			{"arrive", "m2", 1, 8, 0, "w", 0, 0},
		}},
		{"per-source order with any-source receive", true, []step{
			{"arrive", "a1", 1, 7, 0, "", 0, 1},
			{"arrive", "b1", 2, 7, 0, "", 0, 2},
			{"arrive", "a2", 1, 7, 0, "", 0, 3},
			{"post", "r1", 1, 7, 0, "a1", 0, 2},
			{"post", "r2", anySrc, 7, 0, "b1", 0, 1},
			{"post", "r3", anySrc, 7, 0, "a2", 0, 0},
		}},
		{"untagged ignores tags", false, []step{
			{"post", "r1", 1, 7, 0, "", 1, 0},
			{"arrive", "m1", 1, 99, 0, "r1", 0, 0},
			{"arrive", "m2", 2, 1, 0, "", 0, 1},
			{"arrive", "m3", 1, 2, 0, "", 0, 2},
			{"post", "r2", 1, 5, 0, "m3", 0, 1},
			{"post", "r3", anySrc, 0, 0, "m2", 0, 0},
			{"post", "w", anySrc, 0, 0, "", 1, 0},
			{"post", "e", 3, 0, 0, "", 2, 0},
			{"arrive", "m4", 3, 4, 0, "w", 1, 0},
			{"arrive", "m5", 3, 4, 0, "e", 0, 0},
		}},
		{"untagged ignore field is irrelevant", false, []step{
			{"post", "r1", 1, 0, 0xff, "", 1, 0},
			{"post", "r2", anySrc, 0, 0xff, "", 2, 0},
			{"arrive", "m1", 2, 0, 0, "r2", 1, 0},
			{"arrive", "m2", 1, 0, 0, "r1", 0, 0},
		}},
		{"message from unspecified source", true, []step{
			{"post", "r1", 1, 7, 0, "", 1, 0},
			{"arrive", "m1", anySrc, 7, 0, "", 1, 1},
			{"post", "r2", anySrc, 7, 0, "m1", 1, 0},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			runSteps(t, NewQueue(tt.tagged), tt.steps)
		})
	}
}

func TestPeekTakeRemove(t *testing.T) {
	q := NewQueue(true)
	m1 := &Msg{Src: 1, Tag: 7, Size: 10}
	m2 := &Msg{Src: 1, Tag: 7, Size: 20}
	m3 := &Msg{Src: 2, Tag: 8, Size: 30}
	for _, m := range []*Msg{m1, m2, m3} {
		if q.Arrive(m) != nil {
			t.Fatal("unexpected match")
		}
	}
	if got := q.Peek(1, 7, 0); got != m1 {
		t.Fatalf("Peek = %p, want m1", got)
	}
	if got := q.Peek(anySrc, 8, 0); got != m3 {
		t.Fatalf("Peek any = %p, want m3", got)
	}
	if got := q.Peek(3, 7, 0); got != nil {
		t.Fatalf("Peek of absent = %p", got)
	}
	if _, u, b := q.Stats(); u != 3 || b != 60 {
		t.Fatalf("Peek changed stats: %d %d", u, b)
	}
	if !q.Remove(m1) {
		t.Fatal("Remove(m1) = false")
	}
	if q.Remove(m1) {
		t.Fatal("second Remove(m1) = true")
	}
	if q.Remove(&Msg{}) {
		t.Fatal("Remove of foreign msg = true")
	}
	if got := q.Peek(1, 7, 0); got != m2 {
		t.Fatalf("Peek after Remove = %p, want m2", got)
	}
	if got := q.Take(anySrc, 0, ^uint64(0)); got != m2 {
		t.Fatalf("Take = %p, want m2", got)
	}
	if _, u, b := q.Stats(); u != 1 || b != 30 {
		t.Fatalf("stats = %d %d, want 1 30", u, b)
	}
	if got := q.Take(1, 7, 0); got != nil {
		t.Fatalf("Take of absent = %p", got)
	}
	if err := q.check(); err != nil {
		t.Fatal(err)
	}
	// Removed messages can be queued again.
	if q.Arrive(m1) != nil || q.Peek(1, 7, 0) != m1 {
		t.Fatal("re-arrived m1 not found")
	}
	if err := q.check(); err != nil {
		t.Fatal(err)
	}
}

func TestClaim(t *testing.T) {
	q := NewQueue(true)
	m1 := &Msg{Src: 1, Tag: 7, Size: 10}
	m2 := &Msg{Src: 1, Tag: 7, Size: 20}
	q.Arrive(m1)
	q.Arrive(m2)
	type ctx struct{ id int }
	k1, k2 := &ctx{1}, &ctx{2}

	if got := q.ClaimMatch(k1, 1, 7, 0); got != m1 {
		t.Fatalf("ClaimMatch = %p, want m1", got)
	}
	if got := q.ClaimMatch(k1, 1, 7, 0); got != nil {
		t.Fatal("ClaimMatch with key in use succeeded")
	}
	if q.Claim(k2, m1) {
		t.Fatal("Claim of an already claimed msg succeeded")
	}
	if q.Remove(m1) {
		t.Fatal("Remove of a claimed msg succeeded")
	}
	// A claimed message is invisible to receives.
	if got := q.Post(&Recv{Src: 1, Tag: 7}); got != m2 {
		t.Fatalf("Post = %p, want m2", got)
	}
	if got := q.Peek(1, 7, 0); got != nil {
		t.Fatal("claimed message visible to Peek")
	}
	if p, u, b := q.Stats(); p != 0 || u != 0 || b != 0 {
		t.Fatalf("stats = %d %d %d", p, u, b)
	}
	if n, b := q.Claimed(); n != 1 || b != 10 {
		t.Fatalf("Claimed = %d %d", n, b)
	}
	if got := q.TakeClaimed(k2); got != nil {
		t.Fatal("TakeClaimed of wrong key returned a msg")
	}
	if got := q.TakeClaimed(k1); got != m1 {
		t.Fatalf("TakeClaimed = %p, want m1", got)
	}
	if got := q.TakeClaimed(k1); got != nil {
		t.Fatal("second TakeClaimed returned a msg")
	}
	if n, b := q.Claimed(); n != 0 || b != 0 {
		t.Fatalf("Claimed = %d %d", n, b)
	}

	// Claim by pointer, then a duplicate key is refused without side effects.
	q.Arrive(m1)
	q.Arrive(m2)
	if !q.Claim(k1, m2) {
		t.Fatal("Claim(m2) failed")
	}
	if q.Claim(k1, m1) {
		t.Fatal("Claim with key in use succeeded")
	}
	if q.Peek(1, 7, 0) != m1 {
		t.Fatal("refused Claim removed m1")
	}
	if err := q.check(); err != nil {
		t.Fatal(err)
	}
}

func TestArriveClaimedPanics(t *testing.T) {
	q := NewQueue(true)
	m := &Msg{Src: 1}
	q.Arrive(m)
	q.ClaimMatch("k", 1, 0, 0)
	defer func() {
		if recover() == nil {
			t.Fatal("Arrive of a claimed msg did not panic")
		}
	}()
	q.Arrive(m)
}

func TestDoubleQueuePanics(t *testing.T) {
	q := NewQueue(true)
	r := &Recv{Src: 1}
	q.Post(r)
	func() {
		defer func() {
			if recover() == nil {
				t.Fatal("double Post did not panic")
			}
		}()
		q.Post(r)
	}()
	m := &Msg{Src: 2}
	q.Arrive(m)
	func() {
		defer func() {
			if recover() == nil {
				t.Fatal("double Arrive did not panic")
			}
		}()
		q.Arrive(m)
	}()
	// The queue stays usable after a misuse panic.
	if p, u, _ := q.Stats(); p != 1 || u != 1 {
		t.Fatalf("stats = %d %d", p, u)
	}
	if q.Arrive(&Msg{Src: 1}) != r {
		t.Fatal("r not matched")
	}
}

func TestCancelUnpostDrain(t *testing.T) {
	q := NewQueue(true)
	rs := []*Recv{
		{Src: 1, Tag: 1, Ctx: 0},
		{Src: anySrc, Tag: 1, Ctx: 1},
		{Src: 1, Tag: 1, Ctx: 2},
		{Src: 2, Tag: 0, Ignore: 3, Ctx: 3},
		{Src: 1, Tag: 1, Ctx: 4},
	}
	for _, r := range rs {
		q.Post(r)
	}
	even := func(r *Recv) bool { return r.Ctx.(int)%2 == 0 }
	if got := q.Cancel(even); got != rs[0] {
		t.Fatalf("Cancel = %v, want rs[0]", got.Ctx)
	}
	if got := q.Cancel(func(r *Recv) bool { return r.Ctx == 3 }); got != rs[3] {
		t.Fatal("Cancel by ctx did not return rs[3]")
	}
	if got := q.Cancel(func(r *Recv) bool { return r.Ctx == 3 }); got != nil {
		t.Fatal("Cancel of cancelled recv returned one")
	}
	if !q.Unpost(rs[2]) || q.Unpost(rs[2]) || q.Unpost(&Recv{}) {
		t.Fatal("Unpost results wrong")
	}
	if err := q.check(); err != nil {
		t.Fatal(err)
	}
	// rs[1] (wildcard) was posted before rs[4] and is not cancelled.
	if got := q.Arrive(&Msg{Src: 1, Tag: 1}); got != rs[1] {
		t.Fatalf("Arrive matched %v, want rs[1]", got.Ctx)
	}
	q.Post(rs[0]) // reuse a cancelled Recv
	d := q.Drain()
	if len(d) != 2 || d[0] != rs[4] || d[1] != rs[0] {
		t.Fatalf("Drain returned %d recvs", len(d))
	}
	if p, _, _ := q.Stats(); p != 0 || len(q.Drain()) != 0 {
		t.Fatal("Drain left receives behind")
	}
	if err := q.check(); err != nil {
		t.Fatal(err)
	}
}

func TestDrainUnexpected(t *testing.T) {
	q := NewQueue(true)
	ms := make([]*Msg, 6)
	for i := range ms {
		ms[i] = &Msg{Src: uint64(i % 2), Tag: uint64(i), Size: uint64(i)}
		q.Arrive(ms[i])
	}
	q.Claim("b", ms[4])
	q.Claim("a", ms[1])
	got := q.DrainUnexpected()
	want := []*Msg{ms[0], ms[2], ms[3], ms[5], ms[1], ms[4]}
	if len(got) != len(want) {
		t.Fatalf("got %d msgs", len(got))
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("msg %d: got tag %d, want %d", i, got[i].Tag, want[i].Tag)
		}
	}
	_, u, b := q.Stats()
	n, cb := q.Claimed()
	if u != 0 || b != 0 || n != 0 || cb != 0 {
		t.Fatalf("counters after drain: %d %d %d %d", u, b, n, cb)
	}
	if q.TakeClaimed("a") != nil {
		t.Fatal("claimed msg survived drain")
	}
	if err := q.check(); err != nil {
		t.Fatal(err)
	}
}

func TestStatsBytes(t *testing.T) {
	q := NewQueue(false)
	var want uint64
	ms := make([]*Msg, 100)
	for i := range ms {
		ms[i] = &Msg{Src: uint64(i % 7), Size: uint64(i * 3)}
		want += ms[i].Size
		q.Arrive(ms[i])
	}
	if _, u, b := q.Stats(); u != 100 || b != want {
		t.Fatalf("stats = %d %d, want 100 %d", u, b, want)
	}
	for i := range ms {
		var m *Msg
		if i%2 == 0 {
			m = q.Post(&Recv{Src: AddrUnspec})
		} else {
			m = q.Post(&Recv{Src: ms[i].Src})
		}
		if m == nil {
			t.Fatalf("recv %d unmatched", i)
		}
		want -= m.Size
		if _, u, b := q.Stats(); u != 99-i || b != want {
			t.Fatalf("after %d: stats = %d %d, want %d %d", i, u, b, 99-i, want)
		}
	}
	if err := q.check(); err != nil {
		t.Fatal(err)
	}
}

// Buckets are recycled: a steady exact-match stream must not allocate.
func TestExactMatchNoAlloc(t *testing.T) {
	q := NewQueue(true)
	for i := range 1000 {
		q.Arrive(&Msg{Src: 5, Tag: uint64(i) + 100})
	}
	r := &Recv{Src: 1, Tag: 2}
	m := &Msg{Src: 1, Tag: 2}
	allocs := testing.AllocsPerRun(1000, func() {
		if q.Post(r) != nil || q.Arrive(m) != r {
			panic("no match")
		}
		if q.Arrive(m) != nil || q.Post(r) != m {
			panic("no match")
		}
	})
	if allocs != 0 {
		t.Fatalf("exact match allocates %.1f times per op pair", allocs)
	}
}

func TestArriveIfPosted(t *testing.T) {
	q := NewQueue(true)
	m := &Msg{Src: 1, Tag: 7, Size: 3}
	if r := q.ArriveIfPosted(m); r != nil {
		t.Fatalf("matched %v with nothing posted", r)
	}
	if _, unexp, _ := q.Stats(); unexp != 0 {
		t.Fatalf("ArriveIfPosted queued the message (%d unexpected)", unexp)
	}
	r := &Recv{Src: AddrUnspec, Tag: 7}
	if got := q.Post(r); got != nil {
		t.Fatalf("Post matched %v", got)
	}
	if got := q.ArriveIfPosted(m); got != r {
		t.Fatalf("ArriveIfPosted = %v, want the posted receive", got)
	}
	if posted, unexp, _ := q.Stats(); posted != 0 || unexp != 0 {
		t.Fatalf("stats after match: posted %d unexpected %d", posted, unexp)
	}
}

// A reposted receive goes back in its place: it matches again before
// receives posted after it (exact or wildcard), after those before it.
func TestRepost(t *testing.T) {
	for _, tagged := range []bool{false, true} {
		q := NewQueue(tagged)
		first := &Recv{Src: 7, Tag: 1, Ctx: "first"} // exact, another source
		multi := &Recv{Src: anySrc, Tag: 1, Ignore: ^uint64(0), Ctx: "multi"}
		later := &Recv{Src: 5, Tag: 1, Ctx: "later"}
		wild := &Recv{Src: anySrc, Tag: 1, Ignore: ^uint64(0), Ctx: "wild"}
		for _, r := range []*Recv{first, multi, later, wild} {
			if m := q.Post(r); m != nil {
				t.Fatalf("post %v matched", r.Ctx)
			}
		}
		for i := 0; i < 3; i++ {
			r := q.Arrive(&Msg{Src: 5, Tag: 1, Size: 1})
			if r != multi {
				t.Fatalf("tagged=%v arrival %d took %v, want multi", tagged, i, r.Ctx)
			}
			q.Repost(r)
			if p, _, _ := q.Stats(); p != 4 {
				t.Fatalf("posted %d after repost, want 4", p)
			}
		}
		if r := q.Arrive(&Msg{Src: 7, Tag: 1, Size: 1}); r != first {
			t.Fatalf("source 7 took %v, want first", r.Ctx)
		}
		if !q.Unpost(multi) {
			t.Fatal("multi not posted")
		}
		if r := q.Arrive(&Msg{Src: 5, Tag: 1, Size: 1}); r != later {
			t.Fatalf("after unposting multi, %v matched, want later", r.Ctx)
		}
		if got := q.Drain(); len(got) != 1 || got[0] != wild {
			t.Fatalf("drain %v, want [wild]", got)
		}
		func() {
			defer func() {
				if recover() == nil {
					t.Fatal("Repost of a posted Recv did not panic")
				}
			}()
			q.Post(first)
			q.Repost(first)
		}()
	}
}

// TestAppendPosted: every posted receive, exact and wildcard alike, in
// post order, and none that a message or Unpost took.
func TestAppendPosted(t *testing.T) {
	q := NewQueue(true)
	rs := []*Recv{
		{Src: 1, Tag: 1, Ctx: 0},
		{Src: anySrc, Tag: 1, Ctx: 1},
		{Src: 2, Tag: 0, Ignore: 3, Ctx: 2},
		{Src: 1, Tag: 1, Ctx: 3},
		{Src: 1, Tag: 2, Ctx: 4},
	}
	for _, r := range rs {
		q.Post(r)
	}
	if got := q.Arrive(&Msg{Src: 1, Tag: 1}); got != rs[0] {
		t.Fatalf("Arrive matched %v, want rs[0]", got.Ctx)
	}
	q.Unpost(rs[2])
	dst := make([]*Recv, 1, 8) // appended after what dst holds
	got := q.AppendPosted(dst)
	want := []*Recv{nil, rs[1], rs[3], rs[4]}
	if len(got) != len(want) {
		t.Fatalf("AppendPosted returned %d receives, want %d", len(got), len(want))
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("AppendPosted[%d] is not the receive posted in that place", i)
		}
	}
	if p, _, _ := q.Stats(); p != 3 {
		t.Fatalf("AppendPosted changed the queue: %d posted", p)
	}
}

// Messages from a sender unknown on arrival (anon) get their source once it
// is known: in their arrival place among that source's messages, taken by a
// receive posted for that source meanwhile, claimed ones too.
func TestResolve(t *testing.T) {
	const anon = AddrUnspec
	for _, tagged := range []bool{true, false} {
		q := NewSerialQueue(tagged)
		tag := func(v uint64) uint64 {
			if tagged {
				return v
			}
			return 0
		}
		m0 := &Msg{Src: anon, Tag: tag(7), Size: 16, Ctx: "m0"} // claimed
		m1 := &Msg{Src: anon, Tag: tag(5), Size: 1, Ctx: "m1"}  // becomes 3's
		m2 := &Msg{Src: 3, Tag: tag(5), Size: 2, Ctx: "m2"}     // 3's from the start
		m3 := &Msg{Src: anon, Tag: tag(6), Size: 4, Ctx: "m3"}  // becomes 9's, r1 takes it
		m4 := &Msg{Src: anon, Tag: tag(5), Size: 8, Ctx: "m4"}  // stays unknown
		for _, m := range []*Msg{m0, m1, m2, m3, m4} {
			if r := q.Arrive(m); r != nil {
				t.Fatalf("tagged %v: %s matched %v", tagged, m.Ctx, r.Ctx)
			}
		}
		if c := q.ClaimMatch("k", anon, tag(7), 0); c != m0 {
			t.Fatalf("tagged %v: claimed %v", tagged, c)
		}
		r1 := &Recv{Src: 9, Tag: tag(6), Ctx: "r1"}
		if m := q.Post(r1); m != nil {
			t.Fatalf("tagged %v: r1 took %v before its sender was known", tagged, m.Ctx)
		}
		calls := 0
		got := q.Resolve(anon, func(m *Msg) uint64 {
			calls++
			switch m {
			case m0, m1:
				return 3
			case m3:
				return 9
			}
			return anon
		})
		if err := q.check(); err != nil {
			t.Fatalf("tagged %v: %v", tagged, err)
		}
		if len(got) != 1 || got[0].Msg != m3 || got[0].Recv != r1 || m3.Src != 9 {
			t.Fatalf("tagged %v: resolved pairs %+v, m3 source %d", tagged, got, m3.Src)
		}
		if m0.Src != 3 || calls != 4 {
			t.Fatalf("tagged %v: claimed m0 source %d, f called %d times (want 4)", tagged, m0.Src, calls)
		}
		// Source 3's messages of tag 5 in arrival order: m1, then m2.
		for _, w := range []*Msg{m1, m2} {
			if m := q.Post(&Recv{Src: 3, Tag: tag(5), Ctx: "r"}); m != w {
				t.Fatalf("tagged %v: directed receive took %v, want %v", tagged, m, w.Ctx)
			}
		}
		if m := q.Post(&Recv{Src: 3, Tag: tag(5), Ctx: "r3"}); m != nil {
			t.Fatalf("tagged %v: %v (still unknown) went to source 3", tagged, m.Ctx)
		}
		if m := q.Post(&Recv{Src: anySrc, Tag: tag(5), Ctx: "r"}); m != m4 || m4.Src != anon {
			t.Fatalf("tagged %v: any-source receive took %v (m4 source %d)", tagged, m, m4.Src)
		}
		if err := q.check(); err != nil {
			t.Fatalf("tagged %v: %v", tagged, err)
		}
		if _, u, b := q.Stats(); u != 0 || b != 0 {
			t.Fatalf("tagged %v: %d unexpected (%d bytes) left", tagged, u, b)
		}
	}
}

// A resolved message goes back among later arrivals of its new source in
// arrival order, not at the end.
func TestResolveKeepsArrivalOrder(t *testing.T) {
	const anon = AddrUnspec
	q := NewSerialQueue(true)
	a := &Msg{Src: anon, Tag: 1, Size: 1, Ctx: "a"}
	b := &Msg{Src: 3, Tag: 1, Size: 1, Ctx: "b"}
	c := &Msg{Src: 3, Tag: 2, Size: 1, Ctx: "c"}
	for _, m := range []*Msg{a, b, c} {
		q.Arrive(m)
	}
	q.Resolve(anon, func(*Msg) uint64 { return 3 })
	if err := q.check(); err != nil {
		t.Fatal(err)
	}
	// By source with ignore bits (the per-source list), any source (the
	// arrival list), and exact (the bucket): a comes first in each.
	if m := q.Peek(3, 0, ^uint64(0)); m != a {
		t.Fatalf("per-source list starts with %v", m.Ctx)
	}
	if m := q.Peek(anySrc, 1, 0); m != a {
		t.Fatalf("arrival list starts with %v", m.Ctx)
	}
	if m := q.Peek(3, 1, 0); m != a {
		t.Fatalf("bucket starts with %v", m.Ctx)
	}
}
