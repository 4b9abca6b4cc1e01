// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only

package peers

import (
	"slices"
	"sync"
)

// AddrUnspec as a receive's Src matches a message from any source
// (FI_ADDR_UNSPEC).
const AddrUnspec = ^uint64(0)

// maxFreeLists caps the bucket free lists so a burst of distinct tags does not
// pin memory forever, while the steady state recycles buckets without
// allocating.
const maxFreeLists = 1024

// Recv is a posted receive. The caller allocates it, fills the exported fields
// and owns it again once the Queue returns it (from Arrive, Cancel, Unpost or
// Drain) or declines to queue it (Post returned a message). Exported fields
// must not be changed while the Recv is posted.
type Recv struct {
	// Src is the peer address to receive from, or AddrUnspec for any.
	Src uint64
	// Tag and Ignore select messages whose tag T satisfies
	// T&^Ignore == Tag&^Ignore. Both are unused by an untagged Queue.
	Tag, Ignore uint64
	// Ctx is the caller's context (e.g. the fi_context of the operation).
	Ctx any

	q     *Queue // non-nil while posted
	seq   uint64
	links [nRecvLinks]recvLink
}

// Msg is an arrived message. The caller allocates it and owns it again once
// the Queue returns it (from Post, Remove, TakeClaimed or DrainUnexpected) or
// declines to queue it (Arrive returned a receive).
type Msg struct {
	// Src is the sender's address; Tag its tag (unused when untagged).
	Src, Tag uint64
	// Size is the payload length, summed into the unexpected-bytes counter.
	Size uint64
	// Ctx is the transport's opaque handle for fetching the payload.
	Ctx any

	q     *Queue // non-nil while unexpected or claimed
	seq   uint64
	state uint8
	links [nMsgLinks]msgLink
}

const (
	msgFree uint8 = iota
	msgUnexpected
	msgClaimed
)

// Queue matches posted receives against arrived messages for one endpoint.
// Every method of a Queue made by NewQueue is safe for concurrent use; one
// made by NewSerialQueue leaves that to its caller.
//
// Posted receives match in post order and unexpected messages in arrival
// order: a message takes the earliest-posted receive that matches it, and a
// receive takes the earliest-arrived message that matches it, whether the
// candidates are exact or wildcard entries.
type Queue struct {
	mu     sync.Mutex
	serial bool // the caller serializes calls: mu is not used
	tagged bool

	postSeq, arrSeq uint64

	// Posted receives: exact ones (known Src, Ignore==0) in buckets, the rest
	// in wild; allPosted orders them all for Cancel and Drain.
	posted    map[key]*recvList
	wild      recvList
	allPosted recvList
	nPosted   int

	// Unexpected messages: by (src, tag), by src (tagged only, so a receive
	// with a known source and ignore bits scans only that source), and all in
	// arrival order for any-source receives.
	unexp      map[key]*msgList
	bySrc      map[uint64]*msgList
	arrivals   msgList
	nUnexp     int
	unexpBytes uint64

	claimed      map[any]*Msg
	claimedBytes uint64

	freeR []*recvList
	freeM []*msgList
}

// NewQueue returns an empty Queue. A tagged Queue matches on source and tag
// (fi_tsend/fi_trecv); an untagged one on source only (fi_send/fi_recv).
func NewQueue(tagged bool) *Queue {
	q := &Queue{
		tagged:  tagged,
		posted:  make(map[key]*recvList),
		unexp:   make(map[key]*msgList),
		claimed: make(map[any]*Msg),
	}
	if tagged {
		q.bySrc = make(map[uint64]*msgList)
	}
	return q
}

// NewSerialQueue is NewQueue for a caller that already serializes every
// call (lnx holds its endpoint's lock around each): it takes no lock of its
// own, which saves two atomic operations per call on the message path.
func NewSerialQueue(tagged bool) *Queue {
	q := NewQueue(tagged)
	q.serial = true
	return q
}

func (q *Queue) lock() {
	if !q.serial {
		q.mu.Lock()
	}
}

func (q *Queue) unlock() {
	if !q.serial {
		q.mu.Unlock()
	}
}

// Tagged reports whether q matches on tags.
func (q *Queue) Tagged() bool { return q.tagged }

func (q *Queue) key(src, tag uint64) key {
	if !q.tagged {
		tag = 0
	}
	return key{src, tag}
}

// exact reports whether a receive for (src, ignore) can live in a bucket.
func (q *Queue) exact(src, ignore uint64) bool {
	return src != AddrUnspec && (ignore == 0 || !q.tagged)
}

func (q *Queue) match(src, tag, ignore uint64, m *Msg) bool {
	if src != AddrUnspec && src != m.Src {
		return false
	}
	return !q.tagged || (m.Tag^tag)&^ignore == 0
}

// Post matches r against the unexpected messages. If one matches, the
// earliest-arrived such message is removed and returned and r is not queued.
// Otherwise r is queued and Post returns nil. Posting a Recv that is already
// posted panics.
func (q *Queue) Post(r *Recv) *Msg {
	q.lock()
	defer q.unlock()
	if r.q != nil {
		panic("peers: Post of a Recv that is already posted")
	}
	if m := q.findMsg(r.Src, r.Tag, r.Ignore); m != nil {
		q.removeUnexpected(m)
		return m
	}
	q.postSeq++
	r.seq = q.postSeq
	r.q = q
	if q.exact(r.Src, r.Ignore) {
		k := q.key(r.Src, r.Tag)
		l := q.posted[k]
		if l == nil {
			l = q.newRecvList(k)
			q.posted[k] = l
		}
		l.push(rBucket, r)
	} else {
		q.wild.push(rBucket, r)
	}
	q.allPosted.push(rAll, r)
	q.nPosted++
	return nil
}

// Repost puts back a receive a message just took (Arrive or
// ArriveIfPosted returned it) in its place in the post order, ahead of
// receives posted after it: a multi-receive buffer with room left. It
// does not look at unexpected messages (none matched r when it was taken).
// Reposting a Recv that is posted, or was never posted, panics.
func (q *Queue) Repost(r *Recv) {
	q.lock()
	defer q.unlock()
	if r.q != nil || r.seq == 0 {
		panic("peers: Repost of a Recv that is posted or was never posted")
	}
	r.q = q
	if q.exact(r.Src, r.Ignore) {
		k := q.key(r.Src, r.Tag)
		l := q.posted[k]
		if l == nil {
			l = q.newRecvList(k)
			q.posted[k] = l
		}
		l.insert(rBucket, r)
	} else {
		q.wild.insert(rBucket, r)
	}
	q.allPosted.insert(rAll, r)
	q.nPosted++
}

// ArriveIfPosted matches m against the posted receives like Arrive, but
// never queues it: nil means no receive matched and m is untouched. The
// caller uses it to hold a message back (flow control) instead of buffering
// it as unexpected.
func (q *Queue) ArriveIfPosted(m *Msg) *Recv {
	q.lock()
	defer q.unlock()
	if m.q != nil {
		panic("peers: ArriveIfPosted of a Msg that is already queued")
	}
	return q.takePosted(m)
}

// takePosted removes and returns the earliest-posted receive matching m.
func (q *Queue) takePosted(m *Msg) *Recv {
	var best *Recv
	if l := q.posted[q.key(m.Src, m.Tag)]; l != nil {
		best = l.head
	}
	// Wildcards are in post order, so stop at the first one posted after the
	// bucket candidate: it could not win.
	for w := q.wild.head; w != nil; w = w.links[rBucket].next {
		if best != nil && w.seq > best.seq {
			break
		}
		if q.match(w.Src, w.Tag, w.Ignore, m) {
			best = w
			break
		}
	}
	if best != nil {
		q.removePosted(best)
	}
	return best
}

// Arrive matches m against the posted receives. If one matches, the
// earliest-posted such receive is removed and returned and m is not queued.
// Otherwise m is queued as unexpected and Arrive returns nil. Arriving a Msg
// that is already queued or claimed panics.
func (q *Queue) Arrive(m *Msg) *Recv {
	q.lock()
	defer q.unlock()
	if m.q != nil {
		panic("peers: Arrive of a Msg that is already queued")
	}
	if best := q.takePosted(m); best != nil {
		return best
	}
	q.arrSeq++
	m.seq = q.arrSeq
	q.queueUnexpected(m)
	return nil
}

// Resolved is an unexpected message that Resolve gave a posted receive.
type Resolved struct {
	Msg  *Msg
	Recv *Recv
}

// Resolve gives each unexpected or claimed message from source from (a
// sender not known when it arrived) the source f returns for it, in
// arrival order; f returning from leaves the message as it was. A message
// so resolved keeps its place in the arrival order and matches as if it
// had arrived with that source: when a posted receive takes it, it leaves
// the queue and the pair is returned, in arrival order, for the caller to
// deliver. f runs with q locked and must not call q's methods.
func (q *Queue) Resolve(from uint64, f func(*Msg) uint64) []Resolved {
	q.lock()
	defer q.unlock()
	var l *msgList
	link := mBucket
	if q.tagged {
		l, link = q.bySrc[from], mSrc
	} else {
		l = q.unexp[q.key(from, 0)]
	}
	var cands []*Msg
	if l != nil {
		for m := l.head; m != nil; m = m.links[link].next {
			cands = append(cands, m)
		}
	}
	var out []Resolved
	for _, m := range cands {
		src := f(m)
		if src == from {
			continue
		}
		q.removeUnexpected(m)
		m.Src = src
		if r := q.takePosted(m); r != nil {
			out = append(out, Resolved{Msg: m, Recv: r})
			continue
		}
		q.queueUnexpected(m)
	}
	for _, m := range q.claimed {
		if m.Src == from {
			m.Src = f(m)
		}
	}
	return out
}

// queueUnexpected links m into the unexpected lists in its arrival place
// (m.seq): at the tail for a new arrival, among the others for one that
// Resolve took out.
func (q *Queue) queueUnexpected(m *Msg) {
	m.q = q
	m.state = msgUnexpected
	k := q.key(m.Src, m.Tag)
	l := q.unexp[k]
	if l == nil {
		l = q.newMsgList(k)
		q.unexp[k] = l
	}
	l.insertBySeq(mBucket, m)
	if q.tagged {
		s := q.bySrc[m.Src]
		if s == nil {
			s = q.newMsgList(key{src: m.Src})
			q.bySrc[m.Src] = s
		}
		s.insertBySeq(mSrc, m)
	}
	q.arrivals.insertBySeq(mAll, m)
	q.nUnexp++
	q.unexpBytes += m.Size
}

// findMsg returns the earliest-arrived unexpected message matching the
// receive criteria, or nil.
func (q *Queue) findMsg(src, tag, ignore uint64) *Msg {
	if q.exact(src, ignore) {
		if l := q.unexp[q.key(src, tag)]; l != nil {
			return l.head
		}
		return nil
	}
	if !q.tagged { // any source, untagged: oldest message wins
		return q.arrivals.head
	}
	if src != AddrUnspec {
		l := q.bySrc[src]
		if l == nil {
			return nil
		}
		for m := l.head; m != nil; m = m.links[mSrc].next {
			if (m.Tag^tag)&^ignore == 0 {
				return m
			}
		}
		return nil
	}
	for m := q.arrivals.head; m != nil; m = m.links[mAll].next {
		if (m.Tag^tag)&^ignore == 0 {
			return m
		}
	}
	return nil
}

// Peek returns the earliest-arrived unexpected message that a receive for
// (src, tag, ignore) would take, without removing it, or nil. The result
// stays owned by the Queue and may be taken by another goroutine at any time;
// use ClaimMatch to peek and claim atomically.
func (q *Queue) Peek(src, tag, ignore uint64) *Msg {
	q.lock()
	defer q.unlock()
	return q.findMsg(src, tag, ignore)
}

// Take removes and returns the message Peek would return (FI_PEEK|FI_DISCARD
// or a receive that must not be queued), or nil.
func (q *Queue) Take(src, tag, ignore uint64) *Msg {
	q.lock()
	defer q.unlock()
	m := q.findMsg(src, tag, ignore)
	if m != nil {
		q.removeUnexpected(m)
	}
	return m
}

// Remove removes m from the unexpected messages (FI_DISCARD of a peeked
// message). It reports false if m is not queued as unexpected in q.
func (q *Queue) Remove(m *Msg) bool {
	q.lock()
	defer q.unlock()
	if m.q != q || m.state != msgUnexpected {
		return false
	}
	q.removeUnexpected(m)
	return true
}

// Claim moves m from the unexpected messages to the claimed store under key
// (FI_PEEK|FI_CLAIM), so only TakeClaimed(key) can receive it. It reports
// false, changing nothing, if m is not unexpected in q or key is in use. key
// must be comparable.
func (q *Queue) Claim(key any, m *Msg) bool {
	q.lock()
	defer q.unlock()
	if m.q != q || m.state != msgUnexpected {
		return false
	}
	if _, dup := q.claimed[key]; dup {
		return false
	}
	q.claim(key, m)
	return true
}

// ClaimMatch atomically finds the message Peek would return and claims it
// under key, returning it; nil if none matches or key is in use.
func (q *Queue) ClaimMatch(key any, src, tag, ignore uint64) *Msg {
	q.lock()
	defer q.unlock()
	if _, dup := q.claimed[key]; dup {
		return nil
	}
	m := q.findMsg(src, tag, ignore)
	if m != nil {
		q.claim(key, m)
	}
	return m
}

func (q *Queue) claim(key any, m *Msg) {
	q.removeUnexpected(m)
	m.q = q
	m.state = msgClaimed
	q.claimed[key] = m
	q.claimedBytes += m.Size
}

// TakeClaimed removes and returns the message claimed under key (a receive
// with FI_CLAIM), or nil.
func (q *Queue) TakeClaimed(key any) *Msg {
	q.lock()
	defer q.unlock()
	m := q.claimed[key]
	if m == nil {
		return nil
	}
	delete(q.claimed, key)
	q.claimedBytes -= m.Size
	m.q, m.state = nil, msgFree
	return m
}

// Cancel removes and returns the earliest-posted receive for which pred
// returns true (fi_cancel), or nil. pred runs with q locked and must not call
// q's methods.
func (q *Queue) Cancel(pred func(*Recv) bool) *Recv {
	q.lock()
	defer q.unlock()
	for r := q.allPosted.head; r != nil; r = r.links[rAll].next {
		if pred(r) {
			q.removePosted(r)
			return r
		}
	}
	return nil
}

// AppendPosted appends every posted receive to dst in post order and
// returns the extended slice (for a caller that hands them all elsewhere,
// as lnx lends them to its C layer).
func (q *Queue) AppendPosted(dst []*Recv) []*Recv {
	q.lock()
	defer q.unlock()
	for r := q.allPosted.head; r != nil; r = r.links[rAll].next {
		dst = append(dst, r)
	}
	return dst
}

// Queue is the queue r is posted on, or nil when it is not posted.
func (r *Recv) Queue() *Queue { return r.q }

// Unpost removes r if it is posted in q, reporting whether it was.
func (q *Queue) Unpost(r *Recv) bool {
	q.lock()
	defer q.unlock()
	if r.q != q {
		return false
	}
	q.removePosted(r)
	return true
}

// Drain removes and returns every posted receive in post order, so the
// caller can complete them with FI_ECANCELED when the endpoint closes.
func (q *Queue) Drain() []*Recv {
	q.lock()
	defer q.unlock()
	out := make([]*Recv, 0, q.nPosted)
	for q.allPosted.head != nil {
		r := q.allPosted.head
		q.removePosted(r)
		out = append(out, r)
	}
	return out
}

// DrainUnexpected removes and returns every unexpected message in arrival
// order followed by every claimed message in arrival order, so the caller can
// release their transport handles.
func (q *Queue) DrainUnexpected() []*Msg {
	q.lock()
	defer q.unlock()
	out := make([]*Msg, 0, q.nUnexp+len(q.claimed))
	for q.arrivals.head != nil {
		m := q.arrivals.head
		q.removeUnexpected(m)
		out = append(out, m)
	}
	n := len(out)
	for k, m := range q.claimed {
		delete(q.claimed, k)
		m.q, m.state = nil, msgFree
		out = append(out, m)
	}
	q.claimedBytes = 0
	slices.SortFunc(out[n:], func(a, b *Msg) int {
		if a.seq < b.seq {
			return -1
		}
		return 1 // seqs are unique
	})
	return out
}

// Stats returns the number of posted receives, the number of unexpected
// messages and the sum of their Sizes. Claimed messages are not counted; see
// Claimed.
func (q *Queue) Stats() (posted, unexpected int, unexpectedBytes uint64) {
	q.lock()
	defer q.unlock()
	return q.nPosted, q.nUnexp, q.unexpBytes
}

// Claimed returns the number of claimed messages and the sum of their Sizes.
func (q *Queue) Claimed() (n int, bytes uint64) {
	q.lock()
	defer q.unlock()
	return len(q.claimed), q.claimedBytes
}

func (q *Queue) removePosted(r *Recv) {
	if l := unlinkRecv(rBucket, r); l != &q.wild && l.head == nil {
		delete(q.posted, l.k)
		q.freeRecvList(l)
	}
	unlinkRecv(rAll, r)
	q.nPosted--
	r.q = nil
}

func (q *Queue) removeUnexpected(m *Msg) {
	if l := unlinkMsg(mBucket, m); l.head == nil {
		delete(q.unexp, l.k)
		q.freeMsgList(l)
	}
	if q.tagged {
		if l := unlinkMsg(mSrc, m); l.head == nil {
			delete(q.bySrc, l.k.src)
			q.freeMsgList(l)
		}
	}
	unlinkMsg(mAll, m)
	q.nUnexp--
	q.unexpBytes -= m.Size
	m.q, m.state = nil, msgFree
}

func (q *Queue) newRecvList(k key) *recvList {
	if n := len(q.freeR); n > 0 {
		l := q.freeR[n-1]
		q.freeR = q.freeR[:n-1]
		l.k = k
		return l
	}
	return &recvList{k: k}
}

func (q *Queue) freeRecvList(l *recvList) {
	if len(q.freeR) < maxFreeLists {
		*l = recvList{}
		q.freeR = append(q.freeR, l)
	}
}

func (q *Queue) newMsgList(k key) *msgList {
	if n := len(q.freeM); n > 0 {
		l := q.freeM[n-1]
		q.freeM = q.freeM[:n-1]
		l.k = k
		return l
	}
	return &msgList{k: k}
}

func (q *Queue) freeMsgList(l *msgList) {
	if len(q.freeM) < maxFreeLists {
		*l = msgList{}
		q.freeM = append(q.freeM, l)
	}
}
