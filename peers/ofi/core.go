// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only

package ofi

/*
#include <stdlib.h>
#include <string.h>
#include <rdma/fabric.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_errno.h>

// OFI_GETINFO_HIDDEN lets lnx reach cores that a positive FI_PROVIDER
// filter (e.g. FI_PROVIDER=lnx) hides from applications.
#define LNX_GETINFO_HIDDEN (1ULL << 60)

static struct fi_info *lnx_core_hints(const char *prov, const char *dom, uint64_t caps, uint64_t mode,
				       size_t inject) {
	struct fi_info *h = fi_allocinfo();
	if (!h) return NULL;
	h->caps = caps;
	h->mode = mode;
	h->tx_attr->inject_size = inject;
	h->ep_attr->type = FI_EP_RDM;
	h->domain_attr->mr_mode = FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY;
	h->fabric_attr->prov_name = strdup(prov);
	if (dom) h->domain_attr->name = strdup(dom);
	return h;
}

static int lnx_core_getinfo(uint32_t version, const char *prov, const char *dom, uint64_t caps,
			    uint64_t mode, size_t inject, struct fi_info **out) {
	struct fi_info *h = lnx_core_hints(prov, dom, caps, mode, inject);
	if (!h) return -FI_ENOMEM;
	int ret = fi_getinfo(version, NULL, NULL, LNX_GETINFO_HIDDEN, h, out);
	fi_freeinfo(h);
	return ret;
}
*/
import "C"

import (
	"runtime"
	"sort"
	"strings"
	"unsafe"

	"github.com/lnx-go/lnx-go/capi/cinfo"
	"github.com/lnx-go/lnx-go/internal/fi"
)

// CoreInfo is one fi_info a core provider returned; C owns the memory.
type CoreInfo struct {
	c *C.struct_fi_info
	fi.Info
}

// Ptr is the C struct fi_info, valid until the CoreInfo is released.
func (ci *CoreInfo) Ptr() unsafe.Pointer { return unsafe.Pointer(ci.c) }

// Provider is the provider name the core reported ("tcp;ofi_rxm").
func (ci *CoreInfo) Provider() string { return ci.Fabric.ProvName }

// CoreCaps are the capabilities lnx may ask of a network core.
const CoreCaps = fi.MSG | fi.TAGGED | fi.SEND | fi.RECV | fi.DIRECTED_RECV | fi.REMOTE_COMM | fi.LOCAL_COMM

// rmaCaps let the transport's rendezvous read from the sender's buffer.
const rmaCaps = fi.RMA | fi.READ | fi.REMOTE_READ

// writeCaps let lnx carry one-sided writes on the core (tp_rma.go).
const writeCaps = fi.RMA | fi.WRITE | fi.REMOTE_WRITE

// WantInject are the inject sizes lnx asks of a core, in turn: a whole
// tagged eager payload (DefaultSplitMax, rxm's eager limit, so that those
// messages are core injects too, fi_tinjectdata from the caller's buffer,
// tp_tagged.go), its eager header with a whole eager payload
// (wantEagerInject, so that every eager message is one core inject; C
// stages up to that, LNX_STAGE_MAX), then with 4096 bytes, lnx's least
// inject size for a link. rxm grants each (up to its 16 KiB buffer).
var WantInject = [...]int{DefaultSplitMax, wantEagerInject, hdrEager + 4096}

const wantEagerInject = hdrEager + DefaultEagerMax

// CoreModes are the mode bits lnx can honour when it drives a core: it
// always passes a context area of its own.
const CoreModes = fi.CONTEXT | fi.CONTEXT2

// List holds one getinfo answer of a core provider.
type List struct {
	head  *C.struct_fi_info
	Infos []*CoreInfo
}

// GetInfo asks libfabric for RDM endpoints of prov, optionally on one
// domain. An empty answer is -FI_ENODATA.
func GetInfo(version uint32, prov, domain string, caps uint64) (*List, error) {
	cprov := C.CString(prov)
	defer C.free(unsafe.Pointer(cprov))
	var cdom *C.char
	if domain != "" {
		cdom = C.CString(domain)
		defer C.free(unsafe.Pointer(cdom))
	}
	var head *C.struct_fi_info
	// Ask for RMA reads too (the transport's rendezvous reads the data
	// from the sender's buffer where it can); a core without them still
	// serves, with the CTS rendezvous.
	// Writes as well where the core has them (lnx's one-sided writes).
	getinfo := func(caps uint64, inject int, out **C.struct_fi_info) C.int {
		return C.lnx_core_getinfo(C.uint32_t(version), cprov, cdom, C.uint64_t(caps), C.uint64_t(CoreModes),
			C.size_t(inject), out)
	}
	var ret C.int
	for _, c := range []uint64{caps | rmaCaps | writeCaps, caps | rmaCaps, caps} {
		if caps, ret = c, getinfo(c, 0, &head); ret != -C.FI_ENODATA {
			break
		}
	}
	if ret == 0 {
		// Then an inject size that holds lnx's eager header and payload
		// (WantInject): rxm offers 64 bytes unless asked, and a message
		// the core injects costs lnx no completion, and C can send it
		// over a lent transport. A core that can do neither keeps its
		// own size.
		for _, want := range WantInject {
			var asked *C.struct_fi_info
			if getinfo(caps, want, &asked) == 0 {
				C.fi_freeinfo(head)
				head = asked
				break
			}
		}
	}
	if ret != 0 {
		return nil, fi.Wrap(fi.Errno(-ret), "core provider %q (domain %q): fi_getinfo: %s", prov, domain, Strerror(int(ret)))
	}
	l := &List{head: head}
	for p := head; p != nil; p = p.next {
		ci := &CoreInfo{c: p, Info: cinfo.FromC(unsafe.Pointer(p))}
		// A utility over a different core (e.g. "tcp;ofi_rxm" asked as
		// "ofi_rxm") is fine; a different top name is libfabric being lax.
		if !provMatches(prov, ci.Fabric.ProvName) {
			continue
		}
		// Some utilities (ofi_rxm) ignore the domain name in hints.
		if domain != "" && ci.Domain.Name != domain {
			continue
		}
		l.Infos = append(l.Infos, ci)
	}
	if len(l.Infos) == 0 {
		l.Free()
		return nil, fi.Wrap(fi.ENODATA, "core provider %q (domain %q): no matching fi_info", prov, domain)
	}
	return l, nil
}

// Address formats for Prefer (enum fi_addr_format).
const (
	AddrFormatInet  = 2 // FI_SOCKADDR_IN
	AddrFormatInet6 = 3 // FI_SOCKADDR_IN6
)

// Prefer moves the infos whose address format is format to the front,
// keeping the core's order otherwise; 0 changes nothing. (tcp offers a
// domain such as "lo" once per address family.)
func (l *List) Prefer(format uint32) {
	if format == 0 {
		return
	}
	sort.SliceStable(l.Infos, func(i, j int) bool {
		return l.Infos[i].AddrFormat == format && l.Infos[j].AddrFormat != format
	})
}

func provMatches(want, got string) bool {
	return strings.EqualFold(want, got) || strings.HasSuffix(strings.ToLower(got), ";"+strings.ToLower(want)) ||
		strings.HasPrefix(strings.ToLower(got), strings.ToLower(want)+";")
}

// Free releases the C list.
func (l *List) Free() {
	if l != nil && l.head != nil {
		C.fi_freeinfo(l.head)
		l.head = nil
		l.Infos = nil
	}
}

// Strerror is fi_strerror for a (negative or positive) code.
func Strerror(code int) string {
	if code < 0 {
		code = -code
	}
	return C.GoString(C.fi_strerror(C.int(code)))
}

// RuntimeVersion is fi_version() of the libfabric that loaded us.
func RuntimeVersion() uint32 { return uint32(C.fi_version()) }

func check(what string, ret C.int) error {
	if ret == 0 {
		return nil
	}
	return fi.Wrap(fi.Errno(-ret), "%s: %s", what, Strerror(int(ret)))
}

var _ = runtime.KeepAlive
