// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only

package lnx

import (
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/lnx-go/lnx-go/internal/fi"
	"github.com/lnx-go/lnx-go/lnx/config"
	"github.com/lnx-go/lnx-go/lnx/links"
	"github.com/lnx-go/lnx-go/lnx/logging"
	"github.com/lnx-go/lnx-go/peers/ofi"
)

// FabricName is fabric_attr->name of every lnx fi_info.
const FabricName = "lnx"

// Caps lnx offers on every link. FI_HMEM is added only when a device
// runtime is present (see hmemCaps).
const baseCaps = fi.MSG | fi.TAGGED | fi.SEND | fi.RECV | fi.DIRECTED_RECV |
	fi.LOCAL_COMM | fi.REMOTE_COMM | fi.SOURCE | fi.MULTI_RECV | oneSidedCaps

// oneSidedCaps: RMA and atomics, executed by the target over every core
// (rma.go), so offered on every link.
const oneSidedCaps = fi.RMA | fi.ATOMIC | fi.READ | fi.WRITE | fi.REMOTE_READ | fi.REMOTE_WRITE | fi.RMA_EVENT

const txCapMask = fi.MSG | fi.TAGGED | fi.SEND | fi.HMEM | fi.LOCAL_COMM | fi.REMOTE_COMM |
	fi.RMA | fi.ATOMIC | fi.READ | fi.WRITE
const rxCapMask = fi.MSG | fi.TAGGED | fi.RECV | fi.DIRECTED_RECV | fi.SOURCE | fi.HMEM | fi.LOCAL_COMM | fi.REMOTE_COMM |
	fi.MULTI_RECV | fi.TAGGED_DIRECTED_RECV | fi.EXACT_DIRECTED_RECV |
	fi.RMA | fi.ATOMIC | fi.REMOTE_READ | fi.REMOTE_WRITE | fi.RMA_EVENT

// rmaIovLimit: one remote address range per operation.
const rmaIovLimit = 1

// capsFor is what lnx reports for an application that asked for API
// version, and what it grants beyond that when asked. From 2.0 bits 45 and
// 48 are FI_TAGGED_DIRECTED_RECV (lnx's directed receive covers tagged
// receives) and FI_EXACT_DIRECTED_RECV (a promise never to post an
// any-source receive, which lnx's matching does not need but honours);
// before 2.0 the same bits mean other things and are refused.
func capsFor(version uint32) (offered, grantable uint64) {
	offered = baseCaps | hmemCaps()
	if version >= fi.V2_0 {
		offered |= fi.TAGGED_DIRECTED_RECV
		return offered, offered | fi.EXACT_DIRECTED_RECV
	}
	return offered, offered
}

// Secondary caps a provider may add to what the hints asked for.
const secondaryCaps = fi.LOCAL_COMM | fi.REMOTE_COMM | fi.SOURCE

// mr_mode bits lnx can honour when an application offers them.
const mrModeOffered = fi.MR_HMEM | fi.MR_PROV_KEY | fi.MR_VIRT_ADDR | fi.MR_ALLOCATED | fi.MR_LOCAL | fi.MR_ENDPOINT

// Limits of the built-in shm core.
var shmLimits = coreLimits{
	inject: stagedInject, maxMsg: 1 << 62, txSize: 1024, rxSize: 1024, iov: 8,
	cqData: 8, msgOrder: fi.ORDER_SAS, mrKeySize: 8, mrIov: 8, epCnt: maxEndpoints,
}

// maxEndpoints is the ep_cnt lnx reports at most (and tx_ctx_cnt and
// rx_ctx_cnt, one of each per endpoint); a network core that supports
// fewer endpoints per domain lowers it, since each lnx endpoint opens one
// of the core's.
const maxEndpoints = 1024

type coreLimits struct {
	inject, maxMsg, txSize, rxSize, iov, cqData, msgOrder, mrKeySize, mrIov uint64
	epCnt                                                                   uint64
}

func (l *coreLimits) meet(o coreLimits) {
	l.inject = min(l.inject, o.inject)
	l.maxMsg = min(l.maxMsg, o.maxMsg)
	l.txSize = min(l.txSize, o.txSize)
	l.rxSize = min(l.rxSize, o.rxSize)
	l.iov = min(l.iov, o.iov)
	l.cqData = min(l.cqData, o.cqData)
	l.msgOrder &= o.msgOrder
	l.mrKeySize = min(l.mrKeySize, o.mrKeySize)
	l.epCnt = min(l.epCnt, o.epCnt)
	// Not mrIov: lnx registers one host range per MR with each core
	// (mr.go), so a core's own mr_iov_limit does not bound lnx's.
}

func limitsOf(in *fi.Info) coreLimits {
	return coreLimits{
		inject: in.Tx.InjectSize, maxMsg: in.EP.MaxMsgSize, txSize: in.Tx.Size, rxSize: in.Rx.Size,
		iov: min(in.Tx.IovLimit, in.Rx.IovLimit), cqData: in.Domain.CQDataSize,
		msgOrder: in.Tx.MsgOrder & in.Rx.MsgOrder, mrKeySize: in.Domain.MRKeySize, mrIov: in.Domain.MRIovLimit,
		epCnt: epCntOf(in),
	}
}

// epCntOf is a core's ep_cnt, 0 (not stated) read as no bound.
func epCntOf(in *fi.Info) uint64 {
	if in.Domain.EPCnt == 0 {
		return ^uint64(0)
	}
	return in.Domain.EPCnt
}

// Link is one usable group of cores: what getinfo reports and fi_domain
// opens.
type Link struct {
	Group links.Group
	Cores []CoreChoice // network cores; shm is implied by Group.HasShm()
	lim   coreLimits
}

// CoreChoice is one network core domain of a link.
type CoreChoice struct {
	Prov, Domain string
	// ProvName is the core's name for itself (fabric_attr->prov_name of
	// the fi_info chosen): "tcp;ofi_rxm" where the link says "tcp".
	ProvName string
	// SrcName is the core's src_addr in that fi_info (its interface's
	// address, port 0), or nil.
	SrcName []byte
}

// ProvName spells the link's cores the way libfabric 2.x's built-in lnx
// names its fi_infos before the core appends ":lnx": "shm+tcp;ofi_rxm";
// libfabric's shm linked as a core is "fi_shm" ("shm+fi_shm").
func (l *Link) ProvName() string {
	var parts []string
	if l.Group.HasShm() {
		parts = append(parts, links.Shm)
	}
	seen := map[string]bool{}
	for _, c := range l.Cores {
		name := c.ProvName
		if c.Prov == links.FiShm {
			// libfabric's shm says "shm", which names lnx's own.
			name = links.FiShm
		}
		if !seen[name] {
			seen[name] = true
			parts = append(parts, name)
		}
	}
	return strings.Join(parts, "+")
}

// Name is the domain name lnx reports for the link ("shm+tcp;ofi_rxm:lo").
func (l *Link) Name() string {
	var parts []string
	if l.Group.HasShm() {
		parts = append(parts, links.Shm)
	}
	byProv := map[string][]string{}
	var order []string
	for _, c := range l.Cores {
		if _, ok := byProv[c.Prov]; !ok {
			order = append(order, c.Prov)
		}
		byProv[c.Prov] = append(byProv[c.Prov], c.Domain)
	}
	for _, p := range order {
		parts = append(parts, p+":"+strings.Join(byProv[p], ","))
	}
	return strings.Join(parts, "+")
}

// candidates for the default network core, best first.
var defaultCandidates = []string{"cxi", "opx", "efa", "psm3", "verbs;ofi_rxm", defaultNetwork}

var defaultOnce struct {
	sync.Mutex
	v string
}

// linksSpec returns FI_LNX_PROV_LINKS or the default: shm plus the first
// network provider that answers fi_getinfo.
func linksSpec(version uint32, cfg *config.Config) string {
	if cfg.Links != "" {
		return cfg.Links
	}
	defaultOnce.Lock()
	defer defaultOnce.Unlock()
	if defaultOnce.v != "" {
		return defaultOnce.v
	}
	spec := links.Shm
	for _, p := range defaultCandidates {
		l, err := ofi.GetInfo(version, p, "", ofi.CoreCaps)
		if err == nil {
			l.Free()
			spec = links.Shm + "+" + p
			break
		}
	}
	logging.Infof(logging.Core, "%s unset; default links %q", config.Links, spec)
	defaultOnce.v = spec
	return spec
}

// resolve turns a parsed group into a Link by asking each network core.
func resolve(version uint32, g links.Group, cfg *config.Config) (*Link, error) {
	if cfg.DisableShm {
		g = links.Group{Members: g.Network()}
		if len(g.Members) == 0 {
			return nil, fi.Wrap(fi.ENODATA, "%s set and the link has only shm", config.DisableShm)
		}
	}
	l := &Link{Group: g, lim: coreLimits{inject: ^uint64(0), maxMsg: ^uint64(0), txSize: ^uint64(0),
		rxSize: ^uint64(0), iov: ^uint64(0), cqData: ^uint64(0), msgOrder: ^uint64(0), mrKeySize: ^uint64(0), mrIov: ^uint64(0),
		epCnt: maxEndpoints}}
	if g.HasShm() {
		l.lim.meet(shmLimits)
	}
	for _, m := range g.Network() {
		doms := m.Domains
		if len(doms) == 0 {
			doms = []string{""}
		}
		for _, d := range doms {
			list, err := ofi.GetInfo(version, links.CoreProv(m.Prov), d, coreCaps(m.Prov))
			if err != nil {
				return nil, err
			}
			list.Prefer(cfg.NetAddrFormat)
			ci := list.Infos[0]
			l.lim.meet(limitsOf(&ci.Info))
			l.Cores = append(l.Cores, CoreChoice{Prov: m.Prov, Domain: ci.Domain.Name, ProvName: ci.Provider(),
				SrcName: ci.SrcAddr})
			list.Free()
		}
	}
	// lnx sends an fi_inject's data from a copy where a core's own
	// inject is smaller (msg.go, rma_native.go), so a network core's
	// small limit need not bound the link's: Open MPI injects what fits
	// inject_size and otherwise waits for each send's completion, and
	// rxm's 64 bytes would cost every peer of the link, shm ones too.
	l.lim.inject = max(l.lim.inject, stagedInject)
	return l, nil
}

// stagedInject is the least inject_size a link offers, and the shm
// core's own.
const stagedInject = 4096

// Links parses and resolves the configured links. Groups whose cores are
// unavailable are skipped with a warning; a malformed string is EINVAL.
func Links(version uint32, cfg *config.Config) ([]*Link, error) {
	spec := linksSpec(version, cfg)
	groups, err := links.Parse(spec)
	if err != nil {
		logging.Warnf(logging.Core, "%s: %v", config.Links, err)
		return nil, fi.Wrap(fi.EINVAL, "%s: %v", config.Links, err)
	}
	var out []*Link
	var errs []error
	for _, g := range groups {
		l, err := resolve(version, g, cfg)
		if err != nil {
			logging.Warnf(logging.Core, "link %q unavailable: %v", g.String(), err)
			errs = append(errs, err)
			continue
		}
		out = append(out, l)
	}
	if len(out) == 0 {
		return nil, fi.Wrap(fi.ENODATA, "no usable link in %s=%q: %v", config.Links, spec, errors.Join(errs...))
	}
	return out, nil
}

// Info builds the fi_info lnx reports for a link.
func (l *Link) Info(version uint32) fi.Info {
	caps, _ := capsFor(version)
	in := fi.Info{
		Caps: caps, AddrFormat: fi.FORMAT_UNSPEC,
		HasTx: true, HasRx: true, HasEP: true, HasDomain: true, HasFabric: true,
		Tx: fi.TxAttr{Caps: caps & txCapMask, MsgOrder: l.lim.msgOrder, CompOrder: fi.ORDER_NONE,
			InjectSize: l.lim.inject, Size: l.lim.txSize, IovLimit: l.lim.iov, RmaIovLimit: rmaIovLimit},
		Rx: fi.RxAttr{Caps: caps & rxCapMask, MsgOrder: l.lim.msgOrder, CompOrder: fi.ORDER_NONE,
			Size: l.lim.rxSize, IovLimit: l.lim.iov},
		EP: fi.EPAttr{Type: fi.EP_RDM, MaxMsgSize: l.lim.maxMsg, MemTagFormat: 0xaaaaaaaaaaaaaaaa,
			TxCtxCnt: 1, RxCtxCnt: 1},
		Domain: fi.DomainAttr{Name: l.Name(), Threading: fi.THREAD_SAFE, ControlProgress: fi.PROGRESS_AUTO,
			DataProg: fi.PROGRESS_MANUAL, ResourceMgmt: fi.RM_ENABLED, AVType: fi.AV_UNSPEC,
			MRKeySize: l.lim.mrKeySize, CQDataSize: l.lim.cqData, CQCnt: 1024, EPCnt: l.lim.epCnt,
			TxCtxCnt: l.lim.epCnt, RxCtxCnt: l.lim.epCnt, MaxEPTxCtx: 1, MaxEPRxCtx: 1, MRIovLimit: MaxIov,
			CntrCnt: 1024,
			Caps:    fi.LOCAL_COMM | fi.REMOTE_COMM, MRCnt: 1 << 16},
		Fabric: fi.FabricAttr{Name: FabricName, APIVersion: version},
	}
	return in
}

// GetInfo answers lnx's fi_getinfo: one fi_info per usable link that
// satisfies the hints.
func GetInfo(version uint32, hints *fi.Info) ([]fi.Info, error) {
	return GetInfoAt(version, hints, nil)
}

// GetInfoAt is GetInfo with fi_getinfo's node, service and FI_SOURCE
// (ns nil: neither node nor service given); see Link.nodeService.
func GetInfoAt(version uint32, hints *fi.Info, ns *NodeService) ([]fi.Info, error) {
	if hints != nil && hints.HasEP && hints.EP.Type != fi.EP_UNSPEC && hints.EP.Type != fi.EP_RDM {
		// ofi_rxm and other utilities probe every core with FI_EP_MSG.
		return nil, fi.Wrap(fi.ENODATA, "lnx offers FI_EP_RDM only")
	}
	cfg := loadSettings()
	ls, err := Links(version, cfg)
	if err != nil {
		return nil, err
	}
	var out []fi.Info
	var reasons []string
	for _, l := range ls {
		in := l.Info(version)
		if hints != nil {
			if why := applyHints(&in, hints, version); why != "" {
				reasons = append(reasons, fmt.Sprintf("%s: %s", in.Domain.Name, why))
				continue
			}
		}
		if ns != nil {
			if err := l.nodeService(&in, ns, cfg); err != nil {
				reasons = append(reasons, fmt.Sprintf("%s: %v", in.Domain.Name, err))
				continue
			}
		}
		out = append(out, in)
		if linkedNames() {
			linked := in
			linked.Fabric.ProvName = l.ProvName()
			out = append(out, linked)
		}
	}
	if len(out) == 0 {
		msg := strings.Join(reasons, "; ")
		logging.Infof(logging.Core, "hints not satisfied: %s", msg)
		return nil, fi.Wrap(fi.ENODATA, "hints not satisfied: %s", msg)
	}
	return out, nil
}

// linkedNames says whether the running libfabric names a provider called
// "lnx*" the way it names linked providers (2.0 and later): it then
// appends ":lnx" to a prov_name the provider sets. Each link is then
// offered twice, as "lnx" and as "<cores>:lnx" ("shm+tcp;ofi_rxm:lnx"),
// because Open MPI 5 selects providers by prefix of that name and users'
// include lists carry either spelling. Under 1.x lnx is a core-typed
// provider and must leave prov_name unset.
var linkedNames = func() bool { return ofi.RuntimeVersion() >= fi.V2_0 }

// Operation flags an endpoint takes as its default tx and rx op_flags
// (fi_endpoint(3)): completion and completion-level flags on the transmit
// side, FI_COMPLETION on the receive side. Any other bit in hints (a flag
// of another operation class, or garbage) is refused as libfabric's own
// providers refuse op_flags they do not offer.
const (
	txOpFlags = fi.COMPLETION | fi.INJECT | fi.INJECT_COMPLETE | fi.TRANSMIT_COMPL |
		fi.DELIVERY_COMPL | fi.MATCH_COMPLETE | fi.REMOTE_CQ_DATA | fi.MORE
	rxOpFlags = fi.COMPLETION | fi.MORE
)

// applyHints narrows in to what hints ask for, or says why it cannot.
func applyHints(in *fi.Info, h *fi.Info, version uint32) string {
	_, grantable := capsFor(version)
	if extra := h.Caps &^ grantable; extra != 0 {
		return fmt.Sprintf("caps %#x not supported", extra)
	}
	if h.Caps != 0 {
		in.Caps = h.Caps | (in.Caps & secondaryCaps)
		in.Tx.Caps &= in.Caps
		in.Rx.Caps &= in.Caps
	}
	if h.AddrFormat != fi.FORMAT_UNSPEC {
		return fmt.Sprintf("addr_format %d not supported (lnx addresses are opaque)", h.AddrFormat)
	}
	if h.HasSrcAddr || h.SrcAddrLen != 0 {
		// Only an lnx address, such as fi_getinfo with FI_SOURCE and a
		// service made: it says where the network core binds.
		if !h.HasSrcAddr || h.SrcAddrLen != AddrLen || len(h.SrcAddr) != AddrLen {
			return fmt.Sprintf("src_addr of %d bytes is not an lnx address (%d bytes)", h.SrcAddrLen, AddrLen)
		}
		if _, err := DecodeAddr(h.SrcAddr); err != nil {
			return fmt.Sprintf("src_addr: %v", err)
		}
		in.SrcAddr = append([]byte(nil), h.SrcAddr...)
	}
	if h.HasDestAddr || h.DestAddrLen != 0 {
		if !h.HasDestAddr || h.DestAddrLen != AddrLen || len(h.DestAddr) != AddrLen {
			return fmt.Sprintf("dest_addr of %d bytes is not an lnx address (%d bytes)", h.DestAddrLen, AddrLen)
		}
		if _, err := DecodeAddr(h.DestAddr); err != nil {
			return fmt.Sprintf("dest_addr: %v", err)
		}
	}
	if h.HasEP {
		if h.EP.MaxMsgSize > in.EP.MaxMsgSize {
			return "max_msg_size too large"
		}
		if h.EP.Protocol != 0 {
			return "protocol not supported"
		}
		if h.EP.TxCtxCnt > 1 || h.EP.RxCtxCnt > 1 {
			return "scalable endpoints not supported"
		}
	}
	if h.HasTx {
		switch {
		case h.Tx.Caps&^in.Caps != 0:
			return fmt.Sprintf("tx caps %#x not supported", h.Tx.Caps&^in.Caps)
		case h.Tx.MsgOrder&^in.Tx.MsgOrder != 0:
			return fmt.Sprintf("tx msg_order %#x not supported", h.Tx.MsgOrder&^in.Tx.MsgOrder)
		case h.Tx.CompOrder&^in.Tx.CompOrder != 0:
			return "tx comp_order not supported"
		case h.Tx.InjectSize > in.Tx.InjectSize:
			return fmt.Sprintf("inject_size %d > %d", h.Tx.InjectSize, in.Tx.InjectSize)
		case h.Tx.Size > in.Tx.Size:
			return fmt.Sprintf("tx size %d > %d", h.Tx.Size, in.Tx.Size)
		case h.Tx.IovLimit > in.Tx.IovLimit:
			return fmt.Sprintf("tx iov_limit %d > %d", h.Tx.IovLimit, in.Tx.IovLimit)
		case h.Tx.RmaIovLimit > in.Tx.RmaIovLimit:
			return fmt.Sprintf("rma_iov_limit %d > %d", h.Tx.RmaIovLimit, in.Tx.RmaIovLimit)
		}
		if extra := h.Tx.OpFlags &^ txOpFlags; extra != 0 {
			return fmt.Sprintf("tx op_flags %#x not supported", extra)
		}
		in.Tx.OpFlags = h.Tx.OpFlags
		if h.Tx.MsgOrder != 0 {
			in.Tx.MsgOrder = h.Tx.MsgOrder
		}
	}
	if h.HasRx {
		switch {
		case h.Rx.MsgOrder&^in.Rx.MsgOrder != 0:
			return fmt.Sprintf("rx msg_order %#x not supported", h.Rx.MsgOrder&^in.Rx.MsgOrder)
		case h.Rx.CompOrder&^in.Rx.CompOrder != 0:
			return "rx comp_order not supported"
		case h.Rx.Size > in.Rx.Size:
			return fmt.Sprintf("rx size %d > %d", h.Rx.Size, in.Rx.Size)
		case h.Rx.IovLimit > in.Rx.IovLimit:
			return fmt.Sprintf("rx iov_limit %d > %d", h.Rx.IovLimit, in.Rx.IovLimit)
		}
		if extra := h.Rx.OpFlags &^ rxOpFlags; extra != 0 {
			return fmt.Sprintf("rx op_flags %#x not supported", extra)
		}
		in.Rx.OpFlags = h.Rx.OpFlags
		if h.Rx.MsgOrder != 0 {
			in.Rx.MsgOrder = h.Rx.MsgOrder
		}
	}
	if h.HasDomain {
		d := &h.Domain
		if d.Name != "" && d.Name != in.Domain.Name {
			return fmt.Sprintf("domain %q not offered", d.Name)
		}
		switch {
		case d.Threading < fi.THREAD_UNSPEC || d.Threading > fi.THREAD_ENDPOINT:
			return fmt.Sprintf("threading %d unknown", d.Threading)
		case d.AVType < fi.AV_UNSPEC || d.AVType > fi.AV_TABLE:
			return fmt.Sprintf("av_type %d unknown", d.AVType)
		case d.ResourceMgmt < fi.RM_UNSPEC || d.ResourceMgmt > fi.RM_ENABLED:
			return fmt.Sprintf("resource_mgmt %d unknown", d.ResourceMgmt)
		case d.DataProg == fi.PROGRESS_AUTO:
			return "FI_PROGRESS_AUTO data progress not supported"
		case d.DataProg != fi.PROGRESS_UNSPEC && d.DataProg != fi.PROGRESS_MANUAL &&
			d.DataProg != fi.PROGRESS_CONTROL_UNIFIED:
			return fmt.Sprintf("data progress %d unknown", d.DataProg)
		case !controlProgressKnown(d.ControlProgress, version):
			return fmt.Sprintf("control progress %d unknown to API %d.%d",
				d.ControlProgress, version>>16, version&0xffff)
		}
		if d.Threading != fi.THREAD_UNSPEC {
			in.Domain.Threading = d.Threading
		}
		if d.ControlProgress != fi.PROGRESS_UNSPEC {
			in.Domain.ControlProgress = d.ControlProgress
		}
		// FI_PROGRESS_CONTROL_UNIFIED in the progress field (2.x's name
		// for data_progress): manual progress of data and control
		// operations, serialized by the application. lnx's progress is
		// manual and its control operations need none. Open MPI's
		// btl/ofi on its main branch (not 5.0.7), built with 2.x
		// headers, asks it at API 1.18, where libfabric 2.1's shm,
		// tcp;ofi_rxm, sockets and udp;ofi_rxd grant it too.
		if d.DataProg == fi.PROGRESS_CONTROL_UNIFIED {
			in.Domain.DataProg = fi.PROGRESS_CONTROL_UNIFIED
		}
		if d.ResourceMgmt != fi.RM_UNSPEC {
			in.Domain.ResourceMgmt = d.ResourceMgmt
		}
		if d.AVType != fi.AV_UNSPEC {
			in.Domain.AVType = d.AVType
		}
		if d.MRKeySize > in.Domain.MRKeySize {
			return "mr_key_size too large"
		}
		if d.CQDataSize > in.Domain.CQDataSize {
			return fmt.Sprintf("cq_data_size %d > %d", d.CQDataSize, in.Domain.CQDataSize)
		}
		if d.MRMode == fi.MR_BASIC || d.MRMode == fi.MR_SCALABLE {
			in.Domain.MRMode = 0
		} else {
			in.Domain.MRMode = d.MRMode & mrModeOffered &^ (fi.MR_LOCAL | fi.MR_ENDPOINT)
			if in.Caps&fi.HMEM == 0 {
				in.Domain.MRMode &^= fi.MR_HMEM
			}
		}
	}
	if h.HasFabric {
		if h.Fabric.Name != "" && h.Fabric.Name != FabricName {
			return fmt.Sprintf("fabric %q not offered", h.Fabric.Name)
		}
	}
	return ""
}

// controlProgressKnown: FI_PROGRESS_CONTROL_UNIFIED exists from API 2.0
// (control operations progress with the data calls, which lnx's control
// operations never need).
func controlProgressKnown(p int, version uint32) bool {
	switch p {
	case fi.PROGRESS_UNSPEC, fi.PROGRESS_AUTO, fi.PROGRESS_MANUAL:
		return true
	case fi.PROGRESS_CONTROL_UNIFIED:
		return version >= fi.V2_0
	}
	return false
}
