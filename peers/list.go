// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only

package peers

// Intrusive doubly linked lists. Recv and Msg are members of several lists at
// once (a bucket plus one or two ordered lists), so each carries an array of
// links indexed by list kind. Written out per type rather than generically so
// the hot path inlines.

// key indexes exact-match buckets. In an untagged queue tag is always 0.
type key struct{ src, tag uint64 }

// Recv link indexes.
const (
	rBucket = iota // exact bucket or the wildcard list
	rAll           // every posted receive, in post order
	nRecvLinks
)

// Msg link indexes.
const (
	mBucket = iota // (src, tag) bucket
	mSrc           // per-source list; tagged queues only
	mAll           // every unexpected message, in arrival order
	nMsgLinks
)

type recvLink struct {
	next, prev *Recv
	list       *recvList
}

type recvList struct {
	head, tail *Recv
	k          key
}

func (l *recvList) push(i int, r *Recv) {
	ln := &r.links[i]
	ln.list, ln.prev, ln.next = l, l.tail, nil
	if l.tail != nil {
		l.tail.links[i].next = r
	} else {
		l.head = r
	}
	l.tail = r
}

// insert puts r into list i in post order (by seq), for a receive that
// goes back where it was (Queue.Repost).
func (l *recvList) insert(i int, r *Recv) {
	at := l.head
	for at != nil && at.seq < r.seq {
		at = at.links[i].next
	}
	if at == nil {
		l.push(i, r)
		return
	}
	ln := &r.links[i]
	ln.list, ln.next, ln.prev = l, at, at.links[i].prev
	if ln.prev != nil {
		ln.prev.links[i].next = r
	} else {
		l.head = r
	}
	at.links[i].prev = r
}

// unlinkRecv removes r from its list i and returns that list.
func unlinkRecv(i int, r *Recv) *recvList {
	ln := &r.links[i]
	l := ln.list
	if ln.prev != nil {
		ln.prev.links[i].next = ln.next
	} else {
		l.head = ln.next
	}
	if ln.next != nil {
		ln.next.links[i].prev = ln.prev
	} else {
		l.tail = ln.prev
	}
	*ln = recvLink{} // drop references so freed entries do not pin others
	return l
}

type msgLink struct {
	next, prev *Msg
	list       *msgList
}

type msgList struct {
	head, tail *Msg
	k          key
}

// insertBySeq puts m into list i in arrival order (seq): a new arrival at
// the tail, a message whose source became known back among the others
// where it arrived.
func (l *msgList) insertBySeq(i int, m *Msg) {
	p := l.tail
	for p != nil && p.seq > m.seq {
		p = p.links[i].prev
	}
	ln := &m.links[i]
	ln.list, ln.prev = l, p
	if p == nil {
		ln.next = l.head
		l.head = m
	} else {
		ln.next = p.links[i].next
		p.links[i].next = m
	}
	if ln.next != nil {
		ln.next.links[i].prev = m
	} else {
		l.tail = m
	}
}

// unlinkMsg removes m from its list i and returns that list.
func unlinkMsg(i int, m *Msg) *msgList {
	ln := &m.links[i]
	l := ln.list
	if ln.prev != nil {
		ln.prev.links[i].next = ln.next
	} else {
		l.head = ln.next
	}
	if ln.next != nil {
		ln.next.links[i].prev = ln.prev
	} else {
		l.tail = ln.prev
	}
	*ln = msgLink{}
	return l
}
