// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only

package lnx

import (
	"encoding/binary"
	"errors"
	"github.com/lnx-go/lnx-go/lnx/config"
	"os"
	"testing"
	"time"
	"unsafe"

	"github.com/lnx-go/lnx-go/internal/fi"
	"github.com/lnx-go/lnx-go/peers/ofi"
)

// twoRails returns a tcp;ofi_rxm link with two rails (lo and another
// interface of this machine; traffic to a local address stays in the
// kernel), or skips.
func twoRails(t *testing.T) string {
	t.Helper()
	if os.Getenv("FI_TCP_IFACE") != "" {
		t.Skip("FI_TCP_IFACE restricts tcp to one interface")
	}
	l, err := ofi.GetInfo(v117, "tcp;ofi_rxm", "", ofi.CoreCaps)
	if err != nil {
		t.Skipf("tcp;ofi_rxm: %v", err)
	}
	defer l.Free()
	for _, ci := range l.Infos {
		if d := ci.Domain.Name; d != "lo" && d != "" {
			return "tcp;ofi_rxm:lo," + d
		}
	}
	t.Skip("tcp offers no interface besides lo")
	return ""
}

// railTraffic returns the messages each rail of nd's endpoint sent.
func railTraffic(nd *node) []uint64 {
	var out []uint64
	for _, tr := range nd.ep.nets {
		s := tr.Stats()
		out = append(out, s.Injected+s.EagerSends+s.RndvSends)
	}
	return out
}

// TestRailsPerPeer: with PER_PEER each peer keeps one rail, and the peers
// are spread over both.
func TestRailsPerPeer(t *testing.T) {
	nodes := openNodes(t, map[string]string{config.Links: twoRails(t)}, 3)
	for _, nd := range nodes {
		nd.insert(t, nodes)
	}
	streamAndCheck(t, nodes[0], nodes[1], 1, 200)
	streamAndCheck(t, nodes[0], nodes[2], 2, 200)
	rails := railTraffic(nodes[0])
	if len(rails) != 2 || rails[0] != 200 || rails[1] != 200 {
		t.Fatalf("messages per rail %v, want 200 on each (one peer each)", rails)
	}
}

// TestRailsPerMessage: with PER_MSG one peer's messages alternate over
// both rails, and still arrive in order (tag, length and data of every
// receive, posted in order with wildcard tags), across eager, inject and
// rendezvous sizes.
func TestRailsPerMessage(t *testing.T) {
	nodes := openNodes(t, map[string]string{config.Links: twoRails(t), config.MultiRailSelection: "PER_MSG"}, 2)
	for _, nd := range nodes {
		nd.insert(t, nodes)
	}
	const n = 2000
	streamAndCheck(t, nodes[0], nodes[1], 1, n)
	rails := railTraffic(nodes[0])
	// Strict turns, except that a rail refusing a message (-FI_EAGAIN)
	// passes the turn on.
	if len(rails) != 2 || rails[0]+rails[1] != n || rails[0] < n/4 || rails[1] < n/4 {
		t.Fatalf("messages per rail %v, want about %d on each", rails, n/2)
	}
	t.Logf("messages per rail %v; receiver held back %d messages that overtook an earlier one", rails, nodes[1].ep.stats[kindNet].reordered)
}

// streamAndCheck sends n numbered messages of mixed sizes from tx to the
// receiver at fi_addr dst, which pre-posts n wildcard receives in order;
// receive i must hold message i.
// TestRailsPerMessageAVReinsert: a PER_MSG sender that removes its peer
// from the AV can no longer send to that fi_addr, and once it inserts the
// peer again its messages still arrive, in order: the receiver's place in
// the sender's sequence goes on.
func TestRailsPerMessageAVReinsert(t *testing.T) {
	nodes := openNodes(t, map[string]string{config.Links: twoRails(t), config.MultiRailSelection: "PER_MSG"}, 2)
	for _, nd := range nodes {
		nd.insert(t, nodes)
	}
	tx, rx := nodes[0], nodes[1]
	streamAndCheck(t, tx, rx, 1, 30)
	if err := tx.av.Remove([]uint64{1}); err != nil {
		t.Fatal(err)
	}
	if err := tx.ep.Send(bufOp(make([]byte, 8), 1, 0, true)); !errors.Is(err, fi.EINVAL) {
		t.Fatalf("send to a removed fi_addr: %v, want FI_EINVAL", err)
	}
	name, _ := rx.ep.Name()
	out := []uint64{fi.ADDR_NOTAVAIL}
	if tx.av.Insert(name, 1, out, nil) != 1 {
		t.Fatal("re-insert failed")
	}
	streamAndCheck(t, tx, rx, out[0], 30)
}

func streamAndCheck(t *testing.T, tx, rx *node, dst uint64, n int) {
	t.Helper()
	sizes := []int{1, 24, 300, 5000, 20000, 70000} // inject, eager, rendezvous
	const slot = 70000
	rbuf := make([]byte, n*slot)
	ctxs := make([]byte, n)
	for i := 0; i < n; i++ {
		op := bufOp(rbuf[i*slot:(i+1)*slot], fi.ADDR_UNSPEC, 0, true)
		op.Ignore = ^uint64(0)
		op.Ctx = unsafe.Pointer(&ctxs[i])
		if err := rx.ep.Recv(op); err != nil {
			t.Fatal(err)
		}
	}
	sbuf := make([]byte, n*slot)
	var out [64]Completion
	got := make([]*Completion, n)
	sent, recvd, sendDone := 0, 0, 0
	deadline := time.Now().Add(60 * time.Second)
	for recvd < n || sendDone < n {
		if time.Now().After(deadline) {
			t.Fatalf("sent %d, %d send completions, %d receives after 60 s", sent, sendDone, recvd)
		}
		if sent < n {
			sz := sizes[sent%len(sizes)]
			b := sbuf[sent*slot : sent*slot+sz]
			for k := 0; k+8 <= len(b); k += 8 {
				binary.LittleEndian.PutUint64(b[k:], uint64(sent)<<32|uint64(k))
			}
			b[0] = byte(sent)
			err := tx.ep.Send(bufOp(b, dst, uint64(sent), true))
			switch {
			case err == nil:
				sent++
			case !errors.Is(err, fi.EAGAIN):
				t.Fatal(err)
			}
		}
		k, errno := tx.cq.Read(out[:], 0)
		if errno == fi.EAVAIL {
			c, _ := tx.cq.ReadErr()
			t.Fatalf("send error %+v", c)
		}
		sendDone += k
		k, errno = rx.cq.Read(out[:], 0)
		if errno == fi.EAVAIL {
			c, _ := rx.cq.ReadErr()
			t.Fatalf("receive error %+v", c)
		}
		for _, c := range out[:k] {
			i := int(uintptr(c.Ctx) - uintptr(unsafe.Pointer(&ctxs[0])))
			if i < 0 || i >= n || got[i] != nil {
				t.Fatalf("completion for unknown or repeated receive %d", i)
			}
			cc := c
			got[i] = &cc
			recvd++
		}
	}
	for i, c := range got {
		sz := sizes[i%len(sizes)]
		if c.Tag != uint64(i) || c.Len != uint64(sz) {
			t.Fatalf("receive %d got tag %d, %d bytes; want message %d of %d bytes (order lost)", i, c.Tag, c.Len, i, sz)
		}
		b := rbuf[i*slot : i*slot+sz]
		if b[0] != byte(i) {
			t.Fatalf("receive %d: first byte %d", i, b[0])
		}
		for k := 8; k+8 <= len(b); k += 8 {
			if v := binary.LittleEndian.Uint64(b[k:]); v != uint64(i)<<32|uint64(k) {
				t.Fatalf("receive %d: word at %d is %x", i, k, v)
			}
		}
	}
}

// TestSeqReorder drives the receiving side of PER_MSG directly: messages
// that arrive ahead of their turn wait, then all go in sequence order,
// whether receives were posted before (expected) or after (unexpected).
func TestSeqReorder(t *testing.T) {
	for _, posted := range []bool{true, false} {
		nodes := openNodes(t, map[string]string{config.Links: "shm"}, 1)
		nd := nodes[0]
		const src = 7
		bufs := make([]byte, 5*8)
		ctxs := make([]byte, 5)
		post := func() { seqRecvs(t, nd, bufs, ctxs) } // one more than the messages: room for a wrong duplicate
		if posted {
			post()
		}
		arrive := func(seq uint16) { seqArrive(t, nd, src, src, seq) }
		var out [8]Completion
		arrive(2)
		arrive(3)
		arrive(1)
		if k, _ := nd.cq.Read(out[:], 0); k != 0 {
			t.Fatalf("posted=%v: %d completions before message 0 arrived", posted, k)
		}
		arrive(0)
		arrive(0) // a duplicate: behind the sequence, dropped
		if !posted {
			post()
		}
		got := 0
		for deadline := time.Now().Add(testLiveness); got < 4 && time.Now().Before(deadline); {
			k, _ := nd.cq.Read(out[:], 0)
			for _, c := range out[:k] {
				i := int(uintptr(c.Ctx) - uintptr(unsafe.Pointer(&ctxs[0])))
				if c.Tag != uint64(i) || c.Len != 1 || bufs[i*8] != 'a'+byte(i) {
					t.Fatalf("posted=%v: receive %d got tag %d, %d bytes %q", posted, i, c.Tag, c.Len, bufs[i*8])
				}
				got++
			}
		}
		if got != 4 {
			t.Fatalf("posted=%v: %d of 4 receives completed", posted, got)
		}
		if k, _ := nd.cq.Read(out[:], 0); k != 0 {
			t.Fatalf("posted=%v: the duplicate completed a receive", posted)
		}
		if r := nd.ep.stats[kindNet].reordered; r != 3 {
			t.Fatalf("posted=%v: %d held back, want 3", posted, r)
		}
	}
}

// TestSeqAfterLateInsert: PER_MSG messages of a sender not yet in the AV
// are delivered as they come; once it is inserted, its order resumes past
// them, and one still on its way on another rail keeps its turn. Before,
// the order restarted at 0, so the sender's next messages waited for ever.
func TestSeqAfterLateInsert(t *testing.T) {
	nodes := openNodes(t, map[string]string{config.Links: "shm"}, 1)
	nd := nodes[0]
	const src, rail0, rail1 = 5, 77, 78
	bufs := make([]byte, 5*8)
	ctxs := make([]byte, 5)
	seqRecvs(t, nd, bufs, ctxs)
	arrive := func(from, id uint64, seq uint16) { seqArrive(t, nd, from, id, seq) }
	var got []Completion
	read := func() {
		var out [8]Completion
		for deadline := time.Now().Add(100 * time.Millisecond); time.Now().Before(deadline); {
			k, _ := nd.cq.Read(out[:], 0)
			got = append(got, out[:k]...)
		}
	}
	arrive(fi.ADDR_NOTAVAIL, rail0, 0)
	arrive(fi.ADDR_NOTAVAIL, rail1, 2) // 1 is still on its way on rail 0
	nd.av.mu.Lock()
	nd.av.byNet[rail0], nd.av.byNet[rail1] = src, src
	nd.av.mu.Unlock()
	nd.ep.lock()
	nd.ep.sendersKnown()
	nd.ep.unlock()
	arrive(src, rail1, 3)
	read()
	if len(got) != 2 {
		t.Fatalf("%d completions before message 1 arrived, want 2 (0 and 2, delivered unknown)", len(got))
	}
	arrive(src, rail0, 1)
	read()
	want := []uint64{0, 2, 1, 3}
	if len(got) != len(want) {
		t.Fatalf("%d completions, want %d: the sender's order did not resume", len(got), len(want))
	}
	for i, c := range got {
		if c.Tag != want[i] || bufs[i*8] != 'a'+byte(want[i]) {
			t.Fatalf("receive %d got message %d (%q), want %d", i, c.Tag, bufs[i*8], want[i])
		}
		wantSrc := uint64(src)
		if i < 2 {
			wantSrc = fi.ADDR_NOTAVAIL
		}
		if c.Src != wantSrc {
			t.Fatalf("receive %d: source %d, want %d", i, c.Src, wantSrc)
		}
	}
}

// seqRecvs posts len(ctxs) tagged receives from any source for any tag,
// receive i into bufs[8i:8i+8] with context &ctxs[i].
func seqRecvs(t *testing.T, nd *node, bufs, ctxs []byte) {
	t.Helper()
	for i := range ctxs {
		op := bufOp(bufs[i*8:(i+1)*8], fi.ADDR_UNSPEC, 0, true)
		op.Ignore = ^uint64(0)
		op.Ctx = unsafe.Pointer(&ctxs[i])
		if err := nd.ep.Recv(op); err != nil {
			t.Fatal(err)
		}
	}
}

// seqArrive hands nd the PER_MSG message number seq from from (transport
// id id); its tag is seq and its one byte 'a'+seq.
func seqArrive(t *testing.T, nd *node, from, id uint64, seq uint16) {
	t.Helper()
	nd.ep.lock()
	defer nd.ep.unlock()
	h := msgHdr{Tag: uint64(seq), Flags: hdrTagged | hdrSeq | uint32(seq)<<seqShift}
	if !nd.ep.arriveSeq(from, id, h, 1, []byte{'a' + byte(seq)}, rndv{}) {
		t.Fatalf("arrival %d refused", seq)
	}
}
