// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only

package main

/*
#cgo CFLAGS: -I${SRCDIR}/include
#include <stdlib.h>
#include "lnx_capi.h"
*/
import "C"

import (
	"unsafe"

	"github.com/lnx-go/lnx-go/capi/cinfo"
	"github.com/lnx-go/lnx-go/internal/fi"
	"github.com/lnx-go/lnx-go/lnx"
	"github.com/lnx-go/lnx-go/lnx/logging"
)

// fiLog is the logging sink backed by libfabric's fi_log.
type fiLog struct{}

func (fiLog) Enabled(l logging.Level, s logging.Subsys) bool {
	return C.lnx_log_enabled(C.int(l), C.int(s)) != 0
}

func (fiLog) Log(l logging.Level, s logging.Subsys, msg string) {
	cs := C.CString(msg)
	C.lnx_log(C.int(l), C.int(s), cs)
	C.free(unsafe.Pointer(cs))
}

func cGetenv(name string) string {
	cs := C.CString(name)
	defer C.free(unsafe.Pointer(cs))
	v := C.lnx_getenv(cs)
	if v == nil {
		return ""
	}
	return C.GoString(v)
}

//export lnx_go_init
func lnx_go_init() {
	logging.SetSink(fiLog{})
	lnx.Getenv = cGetenv
	raiseProcs(cGetenv("GOMAXPROCS"))
}

//export lnx_go_getinfo
func lnx_go_getinfo(version C.uint32_t, node, service *C.char, flags C.uint64_t,
	hints *C.struct_fi_info, info **C.struct_fi_info) (ret C.int) {
	defer recoverTo(&ret, "getinfo")
	storeCPtr((*unsafe.Pointer)(unsafe.Pointer(info)), nil)
	var h *fi.Info
	if hints != nil {
		hi := cinfo.FromC(unsafe.Pointer(hints))
		h = &hi
	}
	var ns *lnx.NodeService
	if node != nil || service != nil {
		// Resolved into src_addr (FI_SOURCE) or dest_addr, in lnx's
		// address format (lnx.Link.nodeService).
		ns = &lnx.NodeService{Source: flags&C.FI_SOURCE != 0}
		if node != nil {
			ns.Node = C.GoString(node)
		}
		if service != nil {
			ns.Service = C.GoString(service)
		}
	}
	infos, err := lnx.GetInfoAt(uint32(version), h, ns)
	if err != nil {
		return code("getinfo", err)
	}
	list := make([]unsafe.Pointer, 0, len(infos))
	for i := range infos {
		p := cinfo.ToC(&infos[i])
		if p == nil {
			cinfo.Free(cinfo.Link(list))
			return -C.FI_ENOMEM
		}
		list = append(list, p)
	}
	storeCPtr((*unsafe.Pointer)(unsafe.Pointer(info)), cinfo.Link(list))
	return 0
}

//export lnx_go_fabric
func lnx_go_fabric(attr *C.struct_fi_fabric_attr, h *C.lnx_handle) (ret C.int) {
	defer recoverTo(&ret, "fi_fabric")
	var fa fi.FabricAttr
	if attr != nil {
		if attr.name != nil {
			fa.Name = C.GoString(attr.name)
		}
		fa.APIVersion = uint32(attr.api_version)
	}
	f, err := lnx.OpenFabric(uint32(C.fi_version()), fa)
	if err != nil {
		return code("fi_fabric", err)
	}
	return register(f, h)
}

// closer is what every handle holds.
type closer interface{ Close() error }

//export lnx_go_close
func lnx_go_close(h C.lnx_handle) (ret C.int) {
	defer recoverTo(&ret, "fi_close")
	obj, err := object[closer](h)
	if err != nil {
		return code("fi_close", err)
	}
	if err := obj.Close(); err != nil {
		return code("fi_close", err)
	}
	handles.remove(uintptr(h))
	return 0
}

//export lnx_go_domain
func lnx_go_domain(fh C.lnx_handle, info *C.struct_fi_info, h *C.lnx_handle) (ret C.int) {
	defer recoverTo(&ret, "fi_domain")
	f, err := object[*lnx.Fabric](fh)
	if err != nil {
		return code("fi_domain", err)
	}
	if info == nil {
		return code("fi_domain", fi.Wrap(fi.EINVAL, "fi_domain needs an fi_info"))
	}
	d, err := f.OpenDomain(cinfo.FromC(unsafe.Pointer(info)))
	if err != nil {
		return code("fi_domain", err)
	}
	return register(d, h)
}

//export lnx_go_av_open
func lnx_go_av_open(dh C.lnx_handle, attr *C.struct_fi_av_attr, h *C.lnx_handle) (ret C.int) {
	defer recoverTo(&ret, "fi_av_open")
	d, err := object[*lnx.Domain](dh)
	if err != nil {
		return code("fi_av_open", err)
	}
	var a lnx.AVAttr
	if attr != nil {
		a.Type, a.Count = int(attr._type), uint64(attr.count)
		if attr.flags != 0 || attr.name != nil {
			return code("fi_av_open", fi.Wrap(fi.ENOSYS, "named or flagged AVs are not supported"))
		}
	}
	av, err := d.OpenAV(a)
	if err != nil {
		return code("fi_av_open", err)
	}
	return register(av, h)
}

//export lnx_go_cq_open
func lnx_go_cq_open(dh C.lnx_handle, attr *C.struct_fi_cq_attr, gate *C.struct_lnx_gate, cring *C.struct_lnx_cring, h *C.lnx_handle) (ret C.int) {
	defer recoverTo(&ret, "fi_cq_open")
	d, err := object[*lnx.Domain](dh)
	if err != nil {
		return code("fi_cq_open", err)
	}
	var a lnx.CQAttr
	if attr != nil {
		a = lnx.CQAttr{Size: uint64(attr.size), Format: int(attr.format), WaitObj: int(attr.wait_obj)}
		if a.WaitSet, err = waitSetOf(attr.wait_obj, attr.wait_set); err != nil {
			return code("fi_cq_open", err)
		}
	}
	cq, err := d.OpenCQ(a)
	if err != nil {
		return code("fi_cq_open", err)
	}
	cq.SetGate(unsafe.Pointer(gate))
	cq.SetCRing(unsafe.Pointer(cring))
	return register(cq, h)
}

//export lnx_go_cntr_open
func lnx_go_cntr_open(dh C.lnx_handle, attr *C.struct_fi_cntr_attr, h *C.lnx_handle) (ret C.int) {
	defer recoverTo(&ret, "fi_cntr_open")
	d, err := object[*lnx.Domain](dh)
	if err != nil {
		return code("fi_cntr_open", err)
	}
	waitObj, set := 0, (*lnx.WaitSet)(nil)
	if attr != nil {
		if attr.events != C.FI_CNTR_EVENTS_COMP {
			return code("fi_cntr_open", fi.Wrap(fi.ENOSYS, "counter events %d not supported", attr.events))
		}
		waitObj = int(attr.wait_obj)
		if set, err = waitSetOf(attr.wait_obj, attr.wait_set); err != nil {
			return code("fi_cntr_open", err)
		}
	}
	c, err := d.OpenCntr(waitObj, set)
	if err != nil {
		return code("fi_cntr_open", err)
	}
	return register(c, h)
}

//export lnx_go_endpoint
func lnx_go_endpoint(dh C.lnx_handle, info *C.struct_fi_info, fast *C.struct_lnx_fast, h *C.lnx_handle) (ret C.int) {
	defer recoverTo(&ret, "fi_endpoint")
	d, err := object[*lnx.Domain](dh)
	if err != nil {
		return code("fi_endpoint", err)
	}
	var in fi.Info
	if info != nil {
		in = cinfo.FromC(unsafe.Pointer(info))
	}
	e, err := d.OpenEndpoint(in)
	if err != nil {
		return code("fi_endpoint", err)
	}
	e.SetFast(unsafe.Pointer(fast), descMR)
	return register(e, h)
}

//export lnx_go_ep_bind
func lnx_go_ep_bind(eh, bh C.lnx_handle, kind C.int, flags C.uint64_t) (ret C.int) {
	defer recoverTo(&ret, "fi_ep_bind")
	e, err := object[*lnx.Endpoint](eh)
	if err != nil {
		return code("fi_ep_bind", err)
	}
	obj, err := object[closer](bh)
	if err != nil {
		return code("fi_ep_bind", err)
	}
	return code("fi_ep_bind", e.Bind(obj, uint64(flags)))
}

//export lnx_go_ep_enable
func lnx_go_ep_enable(eh C.lnx_handle) (ret C.int) {
	defer recoverTo(&ret, "fi_enable")
	e, err := object[*lnx.Endpoint](eh)
	if err != nil {
		return code("fi_enable", err)
	}
	return code("fi_enable", e.Enable())
}

//export lnx_go_ep_opsflag
func lnx_go_ep_opsflag(eh C.lnx_handle, v *C.uint64_t, set C.int) (ret C.int) {
	defer recoverTo(&ret, "fi_control")
	e, err := object[*lnx.Endpoint](eh)
	if err != nil {
		return code("fi_control", err)
	}
	x := uint64(*v)
	err = e.OpsFlags(&x, set != 0)
	*v = C.uint64_t(x)
	return code("fi_control", err)
}

//export lnx_go_ep_getname
func lnx_go_ep_getname(eh C.lnx_handle, addr unsafe.Pointer, addrlen *C.size_t) (ret C.int) {
	defer recoverTo(&ret, "fi_getname")
	e, err := object[*lnx.Endpoint](eh)
	if err != nil {
		return code("fi_getname", err)
	}
	name, err := e.Name()
	if err != nil {
		return code("fi_getname", err)
	}
	have := int(*addrlen)
	*addrlen = C.size_t(len(name))
	if addr == nil || have < len(name) {
		return -C.FI_ETOOSMALL
	}
	copy(unsafe.Slice((*byte)(addr), len(name)), name)
	return 0
}

//export lnx_go_ep_getopt
func lnx_go_ep_getopt(eh C.lnx_handle, level, optname C.int, optval unsafe.Pointer, optlen *C.size_t) (ret C.int) {
	defer recoverTo(&ret, "fi_getopt")
	if level != C.FI_OPT_ENDPOINT || optname != C.FI_OPT_MIN_MULTI_RECV {
		return -C.FI_ENOPROTOOPT
	}
	e, err := object[*lnx.Endpoint](eh)
	if err != nil {
		return code("fi_getopt", err)
	}
	if optval == nil || optlen == nil || *optlen < C.size_t(unsafe.Sizeof(C.size_t(0))) {
		return -C.FI_ETOOSMALL
	}
	var v uint64
	e.MinMultiRecv(&v, false)
	*(*C.size_t)(optval) = C.size_t(v)
	*optlen = C.size_t(unsafe.Sizeof(C.size_t(0)))
	return 0
}

//export lnx_go_ep_setopt
func lnx_go_ep_setopt(eh C.lnx_handle, level, optname C.int, optval unsafe.Pointer, optlen C.size_t) (ret C.int) {
	defer recoverTo(&ret, "fi_setopt")
	if level != C.FI_OPT_ENDPOINT || optname != C.FI_OPT_MIN_MULTI_RECV {
		return -C.FI_ENOPROTOOPT
	}
	e, err := object[*lnx.Endpoint](eh)
	if err != nil {
		return code("fi_setopt", err)
	}
	if optval == nil || optlen != C.size_t(unsafe.Sizeof(C.size_t(0))) {
		return -C.FI_EINVAL
	}
	v := uint64(*(*C.size_t)(optval))
	e.MinMultiRecv(&v, true)
	return 0
}
