// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only

package lnx

import (
	"errors"
	"github.com/lnx-go/lnx-go/lnx/config"
	"testing"

	"github.com/lnx-go/lnx-go/internal/fi"
	"github.com/lnx-go/lnx-go/lnx/links"
)

// withEnv sets Getenv to a fixed map for one test.
func withEnv(t *testing.T, env map[string]string) {
	t.Helper()
	old := Getenv
	Getenv = func(k string) string { return env[k] }
	t.Cleanup(func() { Getenv = old })
}

const v117 = 1<<16 | 17

func TestGetInfoShmOnly(t *testing.T) {
	withEnv(t, map[string]string{config.Links: "shm"})
	infos, err := GetInfo(v117, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(infos) != 1 {
		t.Fatalf("%d infos, want 1", len(infos))
	}
	in := infos[0]
	if in.Domain.Name != "shm" || in.Fabric.Name != FabricName || in.EP.Type != fi.EP_RDM {
		t.Fatalf("unexpected info %+v", in)
	}
	for _, c := range []uint64{fi.MSG, fi.TAGGED, fi.DIRECTED_RECV, fi.LOCAL_COMM, fi.REMOTE_COMM} {
		if in.Caps&c == 0 {
			t.Errorf("caps %#x lack %#x", in.Caps, c)
		}
	}
	if in.Tx.InjectSize != shmLimits.inject || in.Tx.IovLimit != shmLimits.iov {
		t.Errorf("limits not the shm core's: inject %d iov %d", in.Tx.InjectSize, in.Tx.IovLimit)
	}
}

func TestGetInfoErrors(t *testing.T) {
	cases := []struct {
		links string
		want  fi.Errno
	}{
		{"shm++tcp", fi.EINVAL},
		{"shm:dom", fi.EINVAL},
		{"|", fi.EINVAL},
		{"shm+no_such_prov_zz", fi.ENODATA},
		{"no_such_prov_zz", fi.ENODATA},
	}
	for _, c := range cases {
		withEnv(t, map[string]string{config.Links: c.links})
		_, err := GetInfo(v117, nil)
		if !errors.Is(err, c.want) {
			t.Errorf("links %q: err %v, want %v", c.links, err, c.want)
		}
	}
}

func TestGetInfoSkipsUnavailableGroup(t *testing.T) {
	withEnv(t, map[string]string{config.Links: "shm+no_such_prov_zz|shm"})
	infos, err := GetInfo(v117, nil)
	if err != nil || len(infos) != 1 || infos[0].Domain.Name != "shm" {
		t.Fatalf("got %d infos (%v), want only the shm link", len(infos), err)
	}
}

func TestGetInfoHints(t *testing.T) {
	withEnv(t, map[string]string{config.Links: "shm"})
	ok := func(mod func(h *fi.Info)) (fi.Info, error) {
		h := fi.Info{HasEP: true, HasTx: true, HasRx: true, HasDomain: true, HasFabric: true}
		mod(&h)
		infos, err := GetInfo(v117, &h)
		if err != nil {
			return fi.Info{}, err
		}
		return infos[0], nil
	}
	in, err := ok(func(h *fi.Info) {
		h.Caps = fi.MSG | fi.TAGGED | fi.DIRECTED_RECV
		h.Mode = fi.CONTEXT | fi.CONTEXT2
		h.EP.Type = fi.EP_RDM
		h.Domain.AVType = fi.AV_MAP
		h.Domain.CQDataSize = 4
		h.Domain.Threading = fi.THREAD_DOMAIN
		h.Tx.MsgOrder, h.Rx.MsgOrder = fi.ORDER_SAS, fi.ORDER_SAS
	})
	if err != nil {
		t.Fatalf("Open MPI-like hints rejected: %v", err)
	}
	if in.Domain.AVType != fi.AV_MAP || in.Domain.Threading != fi.THREAD_DOMAIN || in.Caps&fi.TAGGED == 0 || in.Mode != 0 {
		t.Errorf("hints not honoured: %+v", in.Domain)
	}
	bad := map[string]func(h *fi.Info){
		"rma iov":     func(h *fi.Info) { h.Tx.RmaIovLimit = 4 },
		"ep msg":      func(h *fi.Info) { h.EP.Type = fi.EP_MSG },
		"sockaddr":    func(h *fi.Info) { h.AddrFormat = 2 },
		"addr str":    func(h *fi.Info) { h.AddrFormat = fi.ADDR_STR },
		"inject":      func(h *fi.Info) { h.Tx.InjectSize = 1 << 30 },
		"iov":         func(h *fi.Info) { h.Rx.IovLimit = 1 << 20 },
		"domain":      func(h *fi.Info) { h.Domain.Name = "elsewhere" },
		"fabric":      func(h *fi.Info) { h.Fabric.Name = "bogus" },
		"auto data":   func(h *fi.Info) { h.Domain.DataProg = fi.PROGRESS_AUTO },
		"cq data":     func(h *fi.Info) { h.Domain.CQDataSize = 16 },
		"comp order":  func(h *fi.Info) { h.Tx.CompOrder = fi.ORDER_STRICT },
		"scalable ep": func(h *fi.Info) { h.EP.TxCtxCnt = 4 },
	}
	for name, mod := range bad {
		if _, err := ok(mod); !errors.Is(err, fi.ENODATA) {
			t.Errorf("%s: err %v, want ENODATA", name, err)
		}
	}
}

func TestGetInfoWithTCP(t *testing.T) {
	withEnv(t, map[string]string{config.Links: "shm+tcp;ofi_rxm:lo"})
	infos, err := GetInfo(v117, nil)
	if err != nil {
		t.Skipf("tcp;ofi_rxm unavailable: %v", err)
	}
	in := infos[0]
	if in.Domain.Name != "shm+tcp;ofi_rxm:lo" {
		t.Errorf("domain name %q", in.Domain.Name)
	}
	// rxm's inject is 64 bytes; lnx copies what the core cannot inject.
	if in.Tx.InjectSize != shmLimits.inject {
		t.Errorf("inject size %d, want the shm core's %d", in.Tx.InjectSize, shmLimits.inject)
	}
}

// Under libfabric 2.x each link is offered as "lnx" and as
// "<cores>:lnx" (the core appends ":lnx" to the prov_name lnx sets);
// under 1.x only once, with prov_name left for the core to fill.
func TestGetInfoLinkedNames(t *testing.T) {
	for _, linked := range []bool{false, true} {
		old := linkedNames
		linkedNames = func() bool { return linked }
		withEnv(t, map[string]string{config.Links: "shm|shm+tcp;ofi_rxm:lo"})
		infos, err := GetInfo(v117, nil)
		linkedNames = old
		if err != nil {
			t.Skipf("links unavailable: %v", err)
		}
		want := []string{"", "shm", "", "shm+tcp;ofi_rxm"}
		if !linked {
			want = []string{"", ""}
		}
		if len(infos) != len(want) {
			t.Fatalf("linked=%v: %d infos, want %d", linked, len(infos), len(want))
		}
		for i, in := range infos {
			if in.Fabric.ProvName != want[i] {
				t.Errorf("linked=%v: info %d prov_name %q, want %q", linked, i, in.Fabric.ProvName, want[i])
			}
			if linked && i%2 == 1 && in.Domain.Name != infos[i-1].Domain.Name {
				t.Errorf("twin %d domain %q, want %q", i, in.Domain.Name, infos[i-1].Domain.Name)
			}
		}
	}
}

// Bits 45 and 48 and control progress 3 mean something only from API 2.0.
func TestGetInfoAPISemantics(t *testing.T) {
	withEnv(t, map[string]string{config.Links: "shm"})
	for _, c := range []struct {
		caps     uint64
		progress int
		v2, v1   bool // accepted under API 2.1, under 1.18
	}{
		{fi.TAGGED_DIRECTED_RECV, 0, true, false},
		{fi.EXACT_DIRECTED_RECV, 0, true, false},
		{fi.TAGGED_MULTI_RECV, 0, false, false},
		{0, fi.PROGRESS_CONTROL_UNIFIED, true, false},
		{0, 9, false, false},
	} {
		for _, v := range []uint32{fi.Version(2, 1), fi.V1_18} {
			h := fi.Info{Caps: fi.MSG | fi.TAGGED | c.caps, HasDomain: true}
			h.Domain.ControlProgress = c.progress
			infos, err := GetInfo(v, &h)
			want := c.v2
			if v < fi.V2_0 {
				want = c.v1
			}
			if (err == nil) != want {
				t.Errorf("caps %#x progress %d API %#x: err %v, want accepted=%v", c.caps, c.progress, v, err, want)
			}
			if err == nil && infos[0].Caps&c.caps != c.caps {
				t.Errorf("caps %#x asked, %#x granted", c.caps, infos[0].Caps)
			}
		}
	}
	if in := (&Link{}).Info(fi.V1_18); in.Caps&fi.TAGGED_DIRECTED_RECV != 0 {
		t.Errorf("API 1.18 answer reports bit 45 (FI_HMEM_HOST_ALLOC there)")
	}
	if in := (&Link{}).Info(fi.Version(2, 1)); in.Rx.Caps&fi.TAGGED_DIRECTED_RECV == 0 {
		t.Errorf("API 2.1 answer lacks FI_TAGGED_DIRECTED_RECV")
	}
}

// Open MPI's btl/ofi on its main branch (not 5.0.7), built with libfabric
// 2.x headers, asks API 1.18 with FI_PROGRESS_CONTROL_UNIFIED in the
// progress field (data_progress in 1.x): manual progress that the
// application serializes, which lnx gives. libfabric 2.1's own providers
// accept it at API 1.18 too.
func TestGetInfoUnifiedProgress(t *testing.T) {
	withEnv(t, map[string]string{config.Links: "shm"})
	for _, v := range []uint32{fi.Version(2, 1), fi.V1_18} {
		h := fi.Info{Caps: fi.MSG | fi.RMA | fi.ATOMIC, HasDomain: true}
		h.Domain.Threading = fi.THREAD_DOMAIN
		h.Domain.DataProg = fi.PROGRESS_CONTROL_UNIFIED
		infos, err := GetInfo(v, &h)
		if err != nil {
			t.Fatalf("API %#x: progress FI_PROGRESS_CONTROL_UNIFIED refused: %v", v, err)
		}
		if p := infos[0].Domain.DataProg; p != fi.PROGRESS_CONTROL_UNIFIED {
			t.Errorf("API %#x: answer's progress %d, want FI_PROGRESS_CONTROL_UNIFIED", v, p)
		}
	}
	h := fi.Info{Caps: fi.MSG, HasDomain: true}
	h.Domain.DataProg = fi.PROGRESS_AUTO
	if _, err := GetInfo(fi.V1_18, &h); err == nil {
		t.Errorf("FI_PROGRESS_AUTO data progress accepted")
	}
}

// ep_cnt (and the domain's tx_ctx_cnt and rx_ctx_cnt, one context of
// each per endpoint) is lnx's own bound, lowered by a network core that
// supports fewer endpoints: each lnx endpoint opens one of the core's.
func TestEPCntFollowsCores(t *testing.T) {
	for _, c := range []struct{ core, want uint64 }{{0, maxEndpoints}, {1 << 15, maxEndpoints}, {16, 16}} {
		l := &Link{lim: shmLimits}
		l.lim.meet(limitsOf(&fi.Info{Domain: fi.DomainAttr{EPCnt: c.core}}))
		d := l.Info(v117).Domain
		if d.EPCnt != c.want || d.TxCtxCnt != c.want || d.RxCtxCnt != c.want {
			t.Errorf("core ep_cnt %d: ep_cnt %d tx_ctx_cnt %d rx_ctx_cnt %d, want %d", c.core, d.EPCnt,
				d.TxCtxCnt, d.RxCtxCnt, c.want)
		}
	}
}

// libfabric's own shm as a core ("fi_shm") is a network core to lnx: its
// domain and linked names say fi_shm, never plain "shm", which names lnx's
// built-in core ("shm:lnx" and "shm+shm:lnx" would be ambiguous).
func TestGetInfoFiShm(t *testing.T) {
	old := linkedNames
	linkedNames = func() bool { return true }
	defer func() { linkedNames = old }()
	withEnv(t, map[string]string{config.Links: "fi_shm|shm+fi_shm"})
	infos, err := GetInfo(v117, nil)
	if err != nil {
		t.Skipf("libfabric shm unavailable: %v", err)
	}
	want := []struct{ prov, dom string }{
		{"", "fi_shm:shm"}, {"fi_shm", "fi_shm:shm"}, {"", "shm+fi_shm:shm"}, {"shm+fi_shm", "shm+fi_shm:shm"},
	}
	if len(infos) != len(want) {
		t.Fatalf("%d infos, want %d", len(infos), len(want))
	}
	for i, in := range infos {
		if in.Fabric.ProvName != want[i].prov || in.Domain.Name != want[i].dom {
			t.Errorf("info %d: prov_name %q domain %q, want %q %q", i, in.Fabric.ProvName, in.Domain.Name,
				want[i].prov, want[i].dom)
		}
	}
	// Asked of libfabric's shm: neither FI_LOCAL_COMM nor FI_REMOTE_COMM
	// (1.17's reports neither); of other cores, both.
	if c := coreCaps(links.FiShm); c&(fi.LOCAL_COMM|fi.REMOTE_COMM) != 0 || c&fi.TAGGED == 0 {
		t.Errorf("caps asked of fi_shm %#x", c)
	}
	if c := coreCaps("tcp;ofi_rxm"); c&(fi.LOCAL_COMM|fi.REMOTE_COMM) != fi.LOCAL_COMM|fi.REMOTE_COMM {
		t.Errorf("caps asked of tcp %#x", c)
	}
}
