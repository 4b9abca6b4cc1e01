// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only

package cinfo

/*
#cgo pkg-config: libfabric
#include <stdlib.h>
#include <string.h>
#include <rdma/fabric.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
*/
import "C"

import (
	"unsafe"

	"github.com/lnx-go/lnx-go/internal/fi"
)

func goStr(s *C.char) string {
	if s == nil {
		return ""
	}
	return C.GoString(s)
}

func cStr(s string) *C.char {
	if s == "" {
		return nil
	}
	return C.CString(s)
}

// maxHintAddr bounds the src_addr and dest_addr bytes FromC reads from hints: no
// address of lnx or of a core is longer, and a nonsense length must not
// make it read far past the caller's buffer.
const maxHintAddr = 4096

// FromC copies a C struct fi_info (one element, not the list).
func FromC(p unsafe.Pointer) fi.Info {
	ci := (*C.struct_fi_info)(p)
	var in fi.Info
	if ci == nil {
		return in
	}
	in.Caps = uint64(ci.caps)
	in.Mode = uint64(ci.mode)
	in.AddrFormat = uint32(ci.addr_format)
	in.HasSrcAddr, in.SrcAddrLen = ci.src_addr != nil, uint64(ci.src_addrlen)
	in.HasDestAddr, in.DestAddrLen = ci.dest_addr != nil, uint64(ci.dest_addrlen)
	if ci.src_addr != nil && ci.src_addrlen > 0 && ci.src_addrlen <= maxHintAddr {
		in.SrcAddr = C.GoBytes(ci.src_addr, C.int(ci.src_addrlen))
	}
	if ci.dest_addr != nil && ci.dest_addrlen > 0 && ci.dest_addrlen <= maxHintAddr {
		in.DestAddr = C.GoBytes(ci.dest_addr, C.int(ci.dest_addrlen))
	}
	if t := ci.tx_attr; t != nil {
		in.HasTx = true
		in.Tx = fi.TxAttr{Caps: uint64(t.caps), Mode: uint64(t.mode), OpFlags: uint64(t.op_flags),
			MsgOrder: uint64(t.msg_order), CompOrder: uint64(t.comp_order), InjectSize: uint64(t.inject_size),
			Size: uint64(t.size), IovLimit: uint64(t.iov_limit), RmaIovLimit: uint64(t.rma_iov_limit)}
	}
	if r := ci.rx_attr; r != nil {
		in.HasRx = true
		in.Rx = fi.RxAttr{Caps: uint64(r.caps), Mode: uint64(r.mode), OpFlags: uint64(r.op_flags),
			MsgOrder: uint64(r.msg_order), CompOrder: uint64(r.comp_order),
			TotalBufferedRecv: uint64(r.total_buffered_recv), Size: uint64(r.size), IovLimit: uint64(r.iov_limit)}
	}
	if e := ci.ep_attr; e != nil {
		in.HasEP = true
		in.EP = fi.EPAttr{Type: int(e._type), Protocol: uint32(e.protocol), ProtoVer: uint32(e.protocol_version),
			MaxMsgSize: uint64(e.max_msg_size), MsgPrefixSize: uint64(e.msg_prefix_size),
			MaxOrderRawSize: uint64(e.max_order_raw_size), MaxOrderWarSize: uint64(e.max_order_war_size),
			MaxOrderWawSize: uint64(e.max_order_waw_size), MemTagFormat: uint64(e.mem_tag_format),
			TxCtxCnt: uint64(e.tx_ctx_cnt), RxCtxCnt: uint64(e.rx_ctx_cnt)}
	}
	if d := ci.domain_attr; d != nil {
		in.HasDomain = true
		in.Domain = fi.DomainAttr{Name: goStr(d.name), Threading: int(d.threading),
			ControlProgress: int(d.control_progress), DataProg: int(d.data_progress),
			ResourceMgmt: int(d.resource_mgmt), AVType: int(d.av_type), MRMode: int(d.mr_mode),
			MRKeySize: uint64(d.mr_key_size), CQDataSize: uint64(d.cq_data_size), CQCnt: uint64(d.cq_cnt),
			EPCnt: uint64(d.ep_cnt), TxCtxCnt: uint64(d.tx_ctx_cnt), RxCtxCnt: uint64(d.rx_ctx_cnt),
			MaxEPTxCtx: uint64(d.max_ep_tx_ctx), MaxEPRxCtx: uint64(d.max_ep_rx_ctx),
			MaxEPStxCtx: uint64(d.max_ep_stx_ctx), MaxEPSrxCtx: uint64(d.max_ep_srx_ctx),
			MRIovLimit: uint64(d.mr_iov_limit), Caps: uint64(d.caps), Mode: uint64(d.mode), MRCnt: uint64(d.mr_cnt),
			CntrCnt: uint64(d.cntr_cnt)}
	}
	if f := ci.fabric_attr; f != nil {
		in.HasFabric = true
		in.Fabric = fi.FabricAttr{Name: goStr(f.name), ProvName: goStr(f.prov_name),
			ProvVersion: uint32(f.prov_version), APIVersion: uint32(f.api_version)}
	}
	return in
}

// ToC allocates a C struct fi_info (with fi_allocinfo, so fi_freeinfo
// releases it) holding in. The running libfabric allocates it, so fields a
// newer libfabric appended to the attribute structs exist and are zero.
// prov_name is set only when in.Fabric.ProvName is: libfabric 1.x fills it
// for a core-typed DL provider and asserts it is unset; 2.x appends ":lnx"
// to what an lnx-typed provider sets.
func ToC(in *fi.Info) unsafe.Pointer {
	ci := C.fi_dupinfo(nil)
	if ci == nil {
		return nil
	}
	ci.caps = C.uint64_t(in.Caps)
	ci.mode = C.uint64_t(in.Mode)
	ci.addr_format = C.uint32_t(in.AddrFormat)
	if len(in.SrcAddr) > 0 {
		ci.src_addr = C.CBytes(in.SrcAddr) // fi_freeinfo frees it
		ci.src_addrlen = C.size_t(len(in.SrcAddr))
	}
	if len(in.DestAddr) > 0 {
		ci.dest_addr = C.CBytes(in.DestAddr)
		ci.dest_addrlen = C.size_t(len(in.DestAddr))
	}
	t := ci.tx_attr
	t.caps, t.mode, t.op_flags = C.uint64_t(in.Tx.Caps), C.uint64_t(in.Tx.Mode), C.uint64_t(in.Tx.OpFlags)
	t.msg_order, t.comp_order = C.uint64_t(in.Tx.MsgOrder), C.uint64_t(in.Tx.CompOrder)
	t.inject_size, t.size = C.size_t(in.Tx.InjectSize), C.size_t(in.Tx.Size)
	t.iov_limit, t.rma_iov_limit = C.size_t(in.Tx.IovLimit), C.size_t(in.Tx.RmaIovLimit)
	r := ci.rx_attr
	r.caps, r.mode, r.op_flags = C.uint64_t(in.Rx.Caps), C.uint64_t(in.Rx.Mode), C.uint64_t(in.Rx.OpFlags)
	r.msg_order, r.comp_order = C.uint64_t(in.Rx.MsgOrder), C.uint64_t(in.Rx.CompOrder)
	r.total_buffered_recv, r.size, r.iov_limit = C.size_t(in.Rx.TotalBufferedRecv), C.size_t(in.Rx.Size), C.size_t(in.Rx.IovLimit)
	e := ci.ep_attr
	e._type = C.enum_fi_ep_type(in.EP.Type)
	e.protocol, e.protocol_version = C.uint32_t(in.EP.Protocol), C.uint32_t(in.EP.ProtoVer)
	e.max_msg_size, e.msg_prefix_size = C.size_t(in.EP.MaxMsgSize), C.size_t(in.EP.MsgPrefixSize)
	e.max_order_raw_size, e.max_order_war_size, e.max_order_waw_size = C.size_t(in.EP.MaxOrderRawSize), C.size_t(in.EP.MaxOrderWarSize), C.size_t(in.EP.MaxOrderWawSize)
	e.mem_tag_format = C.uint64_t(in.EP.MemTagFormat)
	e.tx_ctx_cnt, e.rx_ctx_cnt = C.size_t(in.EP.TxCtxCnt), C.size_t(in.EP.RxCtxCnt)
	d := ci.domain_attr
	d.name = cStr(in.Domain.Name)
	d.threading = C.enum_fi_threading(in.Domain.Threading)
	d.control_progress = C.enum_fi_progress(in.Domain.ControlProgress)
	d.data_progress = C.enum_fi_progress(in.Domain.DataProg)
	d.resource_mgmt = C.enum_fi_resource_mgmt(in.Domain.ResourceMgmt)
	d.av_type = C.enum_fi_av_type(in.Domain.AVType)
	d.mr_mode = C.int(in.Domain.MRMode)
	d.mr_key_size, d.cq_data_size = C.size_t(in.Domain.MRKeySize), C.size_t(in.Domain.CQDataSize)
	d.cq_cnt, d.ep_cnt = C.size_t(in.Domain.CQCnt), C.size_t(in.Domain.EPCnt)
	d.tx_ctx_cnt, d.rx_ctx_cnt = C.size_t(in.Domain.TxCtxCnt), C.size_t(in.Domain.RxCtxCnt)
	d.max_ep_tx_ctx, d.max_ep_rx_ctx = C.size_t(in.Domain.MaxEPTxCtx), C.size_t(in.Domain.MaxEPRxCtx)
	d.max_ep_stx_ctx, d.max_ep_srx_ctx = C.size_t(in.Domain.MaxEPStxCtx), C.size_t(in.Domain.MaxEPSrxCtx)
	d.mr_iov_limit = C.size_t(in.Domain.MRIovLimit)
	d.caps, d.mode = C.uint64_t(in.Domain.Caps), C.uint64_t(in.Domain.Mode)
	d.mr_cnt = C.size_t(in.Domain.MRCnt)
	d.cntr_cnt = C.size_t(in.Domain.CntrCnt)
	f := ci.fabric_attr
	f.name = cStr(in.Fabric.Name)
	if in.Fabric.ProvName != "" {
		f.prov_name = cStr(in.Fabric.ProvName)
	}
	f.prov_version = C.uint32_t(in.Fabric.ProvVersion)
	f.api_version = C.uint32_t(in.Fabric.APIVersion)
	return unsafe.Pointer(ci)
}

// Link chains C fi_info elements into a list in order.
func Link(list []unsafe.Pointer) unsafe.Pointer {
	for i := 0; i+1 < len(list); i++ {
		(*C.struct_fi_info)(list[i]).next = (*C.struct_fi_info)(list[i+1])
	}
	if len(list) == 0 {
		return nil
	}
	return list[0]
}

// Free releases a list made by libfabric or by ToC.
func Free(p unsafe.Pointer) {
	if p != nil {
		C.fi_freeinfo((*C.struct_fi_info)(p))
	}
}
