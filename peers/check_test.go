// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only

package peers

import "fmt"

// check verifies q's internal invariants: every index agrees with the
// counters, lists are doubly linked and seq-ordered, and entries sit in the
// bucket their fields select.
func (q *Queue) check() error {
	q.mu.Lock()
	defer q.mu.Unlock()

	walkR := func(name string, l *recvList, i int, each func(*Recv) error) (int, error) {
		n := 0
		var prev *Recv
		for r := l.head; r != nil; r = r.links[i].next {
			ln := r.links[i]
			if ln.list != l || ln.prev != prev {
				return n, fmt.Errorf("%s: bad links at seq %d", name, r.seq)
			}
			if prev != nil && prev.seq >= r.seq {
				return n, fmt.Errorf("%s: seq %d after %d", name, r.seq, prev.seq)
			}
			if r.q != q {
				return n, fmt.Errorf("%s: recv seq %d has wrong owner", name, r.seq)
			}
			if err := each(r); err != nil {
				return n, err
			}
			prev = r
			n++
		}
		if l.tail != prev {
			return n, fmt.Errorf("%s: bad tail", name)
		}
		return n, nil
	}
	walkM := func(name string, l *msgList, i int, each func(*Msg) error) (int, error) {
		n := 0
		var prev *Msg
		for m := l.head; m != nil; m = m.links[i].next {
			ln := m.links[i]
			if ln.list != l || ln.prev != prev {
				return n, fmt.Errorf("%s: bad links at seq %d", name, m.seq)
			}
			if prev != nil && prev.seq >= m.seq {
				return n, fmt.Errorf("%s: seq %d after %d", name, m.seq, prev.seq)
			}
			if m.q != q || m.state != msgUnexpected {
				return n, fmt.Errorf("%s: msg seq %d has wrong owner/state", name, m.seq)
			}
			if err := each(m); err != nil {
				return n, err
			}
			prev = m
			n++
		}
		if l.tail != prev {
			return n, fmt.Errorf("%s: bad tail", name)
		}
		return n, nil
	}
	none := func(*Recv) error { return nil }

	n, err := walkR("allPosted", &q.allPosted, rAll, none)
	if err != nil {
		return err
	}
	if n != q.nPosted {
		return fmt.Errorf("allPosted has %d, nPosted %d", n, q.nPosted)
	}
	total, err := walkR("wild", &q.wild, rBucket, func(r *Recv) error {
		if q.exact(r.Src, r.Ignore) {
			return fmt.Errorf("exact recv seq %d in wild list", r.seq)
		}
		return nil
	})
	if err != nil {
		return err
	}
	for k, l := range q.posted {
		if l.k != k || l.head == nil {
			return fmt.Errorf("posted bucket %v: key %v, empty %v", k, l.k, l.head == nil)
		}
		c, err := walkR("posted bucket", l, rBucket, func(r *Recv) error {
			if !q.exact(r.Src, r.Ignore) || q.key(r.Src, r.Tag) != k {
				return fmt.Errorf("recv seq %d in wrong bucket %v", r.seq, k)
			}
			return nil
		})
		if err != nil {
			return err
		}
		total += c
	}
	if total != q.nPosted {
		return fmt.Errorf("buckets+wild hold %d, nPosted %d", total, q.nPosted)
	}

	var bytes uint64
	n, err = walkM("arrivals", &q.arrivals, mAll, func(m *Msg) error { bytes += m.Size; return nil })
	if err != nil {
		return err
	}
	if n != q.nUnexp || bytes != q.unexpBytes {
		return fmt.Errorf("arrivals hold %d/%dB, counters %d/%dB", n, bytes, q.nUnexp, q.unexpBytes)
	}
	total = 0
	for k, l := range q.unexp {
		if l.k != k || l.head == nil {
			return fmt.Errorf("unexp bucket %v: key %v, empty %v", k, l.k, l.head == nil)
		}
		c, err := walkM("unexp bucket", l, mBucket, func(m *Msg) error {
			if q.key(m.Src, m.Tag) != k {
				return fmt.Errorf("msg seq %d in wrong bucket %v", m.seq, k)
			}
			return nil
		})
		if err != nil {
			return err
		}
		total += c
	}
	if total != q.nUnexp {
		return fmt.Errorf("unexp buckets hold %d, nUnexp %d", total, q.nUnexp)
	}
	if !q.tagged && len(q.bySrc) != 0 {
		return fmt.Errorf("untagged queue has source lists")
	}
	if q.tagged {
		total = 0
		for s, l := range q.bySrc {
			if l.k.src != s || l.head == nil {
				return fmt.Errorf("source list %d: key %v, empty %v", s, l.k, l.head == nil)
			}
			c, err := walkM("source list", l, mSrc, func(m *Msg) error {
				if m.Src != s {
					return fmt.Errorf("msg seq %d in wrong source list %d", m.seq, s)
				}
				return nil
			})
			if err != nil {
				return err
			}
			total += c
		}
		if total != q.nUnexp {
			return fmt.Errorf("source lists hold %d, nUnexp %d", total, q.nUnexp)
		}
	}

	bytes = 0
	for k, m := range q.claimed {
		if m.q != q || m.state != msgClaimed {
			return fmt.Errorf("claimed %v has wrong owner/state", k)
		}
		for i := range m.links {
			if m.links[i] != (msgLink{}) {
				return fmt.Errorf("claimed %v still linked", k)
			}
		}
		bytes += m.Size
	}
	if bytes != q.claimedBytes {
		return fmt.Errorf("claimed hold %dB, counter %dB", bytes, q.claimedBytes)
	}
	return nil
}
