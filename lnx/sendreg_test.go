// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only

package lnx

import (
	"bytes"
	"errors"
	"math/rand"
	"testing"
	"time"

	"github.com/lnx-go/lnx-go/internal/fi"
	"github.com/lnx-go/lnx-go/lnx/config"
)

// TestNetSendRegsKept: large network sends from one unregistered buffer,
// its contents changed between them, each deliver the buffer's contents,
// tag and length; the endpoint registers the buffer with the core once and
// reuses the registration, unless FI_LNX_MR_CACHE_MAX=0.
func TestNetSendRegsKept(t *testing.T) {
	for _, keep := range []string{"", "0"} {
		t.Run("MR_CACHE_MAX="+keep, func(t *testing.T) {
			env := map[string]string{config.Links: "tcp;ofi_rxm:lo"}
			if keep != "" {
				env[config.MRCacheMax] = keep
			}
			nodes := openNodes(t, env, 2)
			tx, rx := nodes[0], nodes[1]
			tx.insert(t, nodes)
			rx.insert(t, nodes)
			if len(tx.ep.nets) == 0 {
				t.Skip("no network transport (peer API?)")
			}
			if _, read, _ := tx.ep.nets[0].CanRMA(); !read {
				t.Skip("the network core cannot read remote memory")
			}
			const size, n = 200000, 5
			src := make([]byte, size)
			dst := make([]byte, size)
			var out [8]Completion
			for i := 0; i < n; i++ {
				rand.New(rand.NewSource(int64(i))).Read(src)
				clear(dst)
				if err := rx.ep.Recv(bufOp(dst, 0, uint64(i), true)); err != nil {
					t.Fatal(err)
				}
				deadline := time.Now().Add(testLiveness)
				for {
					err := tx.ep.Send(bufOp(src, 1, uint64(i), true))
					if err == nil {
						break
					}
					if !errors.Is(err, fi.EAGAIN) || time.Now().After(deadline) {
						t.Fatalf("send %d: %v", i, err)
					}
					tx.cq.Read(out[:], 0)
					rx.cq.Read(out[:], 0)
				}
				var got *Completion
				sent := false
				for got == nil || !sent {
					if time.Now().After(deadline) {
						t.Fatalf("send %d: completions sent %v received %v", i, sent, got != nil)
					}
					if k, _ := tx.cq.Read(out[:], 0); k > 0 {
						sent = true
					}
					if k, _ := rx.cq.Read(out[:], 0); k > 0 {
						c := out[0]
						got = &c
					}
				}
				if got.Tag != uint64(i) || got.Len != size || !bytes.Equal(dst, src) {
					t.Fatalf("receive %d: tag %d, %d bytes, data equal %v", i, got.Tag, got.Len, bytes.Equal(dst, src))
				}
			}
			s := tx.ep.nets[0].Stats()
			t.Logf("read sends %d, registrations %d, reused %d", s.ReadSends, s.SendRegs, s.SendRegHits)
			if s.ReadSends < n {
				t.Skipf("%d of %d sends read by the receiver", s.ReadSends, n)
			}
			if keep == "" && (s.SendRegs != 1 || s.SendRegHits < n-1) || keep == "0" && s.SendRegHits != 0 {
				t.Fatalf("FI_LNX_MR_CACHE_MAX=%q: %d registrations, %d reused", keep, s.SendRegs, s.SendRegHits)
			}
		})
	}
}
