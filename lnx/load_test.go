// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only

package lnx

import (
	"encoding/binary"
	"errors"
	"github.com/lnx-go/lnx-go/lnx/config"
	"runtime"
	"testing"
	"time"

	"github.com/lnx-go/lnx-go/internal/fi"
)

// node is one endpoint with its own AV and CQ in a shm-only domain.
type node struct {
	ep *Endpoint
	cq *CQ
	av *AV
}

func openNodes(t *testing.T, env map[string]string, n int) []*node {
	t.Helper()
	withEnv(t, env)
	infos, err := GetInfo(v117, nil)
	if err != nil {
		t.Fatal(err)
	}
	f, _ := OpenFabric(v117, infos[0].Fabric)
	d, err := f.OpenDomain(infos[0])
	if err != nil {
		t.Fatal(err)
	}
	nodes := make([]*node, n)
	for i := range nodes {
		nd := &node{}
		nd.av, _ = d.OpenAV(AVAttr{Type: fi.AV_TABLE})
		nd.cq, _ = d.OpenCQ(CQAttr{Format: fi.CQ_FORMAT_TAGGED})
		if nd.ep, err = d.OpenEndpoint(infos[0]); err != nil {
			t.Fatalf("endpoint %d: %v", i, err)
		}
		nd.ep.Bind(nd.av, 0)
		nd.ep.Bind(nd.cq, fi.SEND|fi.RECV)
		if err := nd.ep.Enable(); err != nil {
			t.Fatal(err)
		}
		nodes[i] = nd
	}
	t.Cleanup(func() {
		for _, nd := range nodes {
			nd.ep.Close()
			nd.cq.Close()
			nd.av.Close()
		}
		d.Close()
		f.Close()
	})
	return nodes
}

// insert puts every node's address into nd's AV; fi_addr i is node i.
func (nd *node) insert(t *testing.T, all []*node) {
	for _, o := range all {
		name, _ := o.ep.Name()
		if nd.av.Insert(name, 1, nil, nil) != 1 {
			t.Fatal("insert failed")
		}
	}
}

func heapInuse() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapInuse
}

// TestLoadManyEndpointsAndReceives: 64 endpoints in one process, and
// 100,000 receives outstanding on one of them, every one completed with
// the right message.
func TestLoadManyEndpointsAndReceives(t *testing.T) {
	if testing.Short() {
		t.Skip("load test")
	}
	nodes := openNodes(t, map[string]string{config.Links: "shm"}, 64)
	rx, tx := nodes[0], nodes[63]
	rx.insert(t, nodes)
	tx.insert(t, nodes)
	const n = 100000
	bufs := make([]byte, 8*n)
	for i := 0; i < n; i++ {
		if err := rx.ep.Recv(bufOp(bufs[8*i:8*i+8], 63, uint64(i), true)); err != nil {
			t.Fatal(err)
		}
	}
	if posted, _, _ := rx.ep.tagged.Stats(); posted != n {
		t.Fatalf("%d receives posted, want %d", posted, n)
	}
	var out [64]Completion
	msg := make([]byte, 8)
	got := 0
	deadline := time.Now().Add(60 * time.Second)
	// Send in reverse tag order: every message must find its own receive.
	for i := n - 1; i >= 0; {
		binary.LittleEndian.PutUint64(msg, uint64(i))
		err := tx.ep.Send(bufOp(msg, 0, uint64(i), true))
		if err == nil {
			i--
		} else if !errors.Is(err, fi.EAGAIN) {
			t.Fatal(err)
		}
		k, _ := rx.cq.Read(out[:], 0)
		got += k
		tx.cq.Read(out[:], 0)
		if time.Now().After(deadline) {
			t.Fatal("timed out")
		}
	}
	for got < n && time.Now().Before(deadline) {
		k, _ := rx.cq.Read(out[:], 0)
		got += k
		tx.cq.Read(out[:], 0)
	}
	if got != n {
		t.Fatalf("%d of %d receives completed", got, n)
	}
	for i := 0; i < n; i++ {
		if v := binary.LittleEndian.Uint64(bufs[8*i:]); v != uint64(i) {
			t.Fatalf("receive %d got message %d", i, v)
		}
	}
}

// TestLoadUnexpectedFlood: 8 senders flood one receiver that posts nothing.
// The receiver buffers at most FI_LNX_UNEXPECTED_MAX of payload and holds
// the rest back in the senders' rings (they see EAGAIN); memory stays
// bounded; once receives are posted every message arrives, in per-sender
// order, none lost.
func TestLoadUnexpectedFlood(t *testing.T) {
	if testing.Short() {
		t.Skip("load test")
	}
	const senders, perSender, size = 8, 4000, 1024
	const budget = 1 << 20
	nodes := openNodes(t, map[string]string{config.Links: "shm", config.UnexpectedMax: "1m"}, senders+1)
	rx := nodes[0]
	rx.insert(t, nodes)
	for _, s := range nodes[1:] {
		s.insert(t, nodes)
	}
	base := heapInuse()
	sent := make([]int, senders)
	payload := make([]byte, size)
	var out [64]Completion
	deadline := time.Now().Add(60 * time.Second)
	stalled := 0
	// Phase 1: flood with nothing posted, until every sender is stalled.
	for stalled < senders && time.Now().Before(deadline) {
		stalled = 0
		for s := 0; s < senders; s++ {
			if sent[s] == perSender {
				stalled++
				continue
			}
			binary.LittleEndian.PutUint64(payload, uint64(sent[s]))
			err := nodes[s+1].ep.Send(bufOp(payload, 0, uint64(s+1), true))
			switch {
			case err == nil:
				sent[s]++
			case errors.Is(err, fi.EAGAIN):
				stalled++
			default:
				t.Fatal(err)
			}
			nodes[s+1].cq.Read(out[:], 0)
		}
		rx.cq.Read(out[:], 0) // drives arrivals into the unexpected queue
	}
	_, unexp, unexpBytes := rx.ep.tagged.Stats()
	grown := heapInuse() - base
	t.Logf("flood: %d unexpected (%d bytes) buffered, senders held back after %v; heap +%d KiB",
		unexp, unexpBytes, sent, grown>>10)
	if rx.ep.unexpBytes > budget+size {
		t.Errorf("buffered %d unexpected bytes, budget %d", rx.ep.unexpBytes, budget)
	}
	if grown > 16*budget {
		t.Errorf("heap grew %d bytes for a %d-byte budget", grown, budget)
	}
	// Phase 2: post receives per sender and finish the flood.
	next := make([]int, senders)
	recvBufs := make([][]byte, senders)
	for s := range recvBufs {
		recvBufs[s] = make([]byte, perSender*size)
	}
	posted := make([]int, senders)
	done := 0
	for done < senders*perSender && time.Now().Before(deadline) {
		for s := 0; s < senders; s++ {
			for posted[s] < perSender && posted[s]-next[s] < 256 {
				b := recvBufs[s][posted[s]*size : (posted[s]+1)*size]
				if err := rx.ep.Recv(bufOp(b, uint64(s+1), uint64(s+1), true)); err != nil {
					t.Fatal(err)
				}
				posted[s]++
			}
			if sent[s] < perSender {
				binary.LittleEndian.PutUint64(payload, uint64(sent[s]))
				if err := nodes[s+1].ep.Send(bufOp(payload, 0, uint64(s+1), true)); err == nil {
					sent[s]++
				} else if !errors.Is(err, fi.EAGAIN) {
					t.Fatal(err)
				}
			}
			nodes[s+1].cq.Read(out[:], 0)
		}
		k, errno := rx.cq.Read(out[:], 0)
		if errno == fi.EAVAIL {
			c, _ := rx.cq.ReadErr()
			t.Fatalf("error completion %+v", c)
		}
		for _, c := range out[:k] {
			next[c.Src-1]++
		}
		done += k
	}
	if done != senders*perSender {
		t.Fatalf("%d of %d messages received", done, senders*perSender)
	}
	for s := 0; s < senders; s++ {
		for i := 0; i < perSender; i++ {
			if v := binary.LittleEndian.Uint64(recvBufs[s][i*size:]); v != uint64(i) {
				t.Fatalf("sender %d: receive %d got message %d (order or loss)", s+1, i, v)
			}
		}
	}
}
