// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only

package ofi

/*
#include <stdlib.h>
#include <rdma/fabric.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_errno.h>

static int lnx_core_fabric(struct fi_info *info, struct fid_fabric **fab) {
	return fi_fabric(info->fabric_attr, fab, NULL);
}
static int lnx_core_domain(struct fid_fabric *fab, struct fi_info *info, struct fid_domain **dom) {
	return fi_domain(fab, info, dom, NULL);
}
static void lnx_core_serial(struct fi_info *info) {
	info->domain_attr->threading = FI_THREAD_DOMAIN;
}
static const char *lnx_core_prov_name(struct fi_info *info) {
	return info->fabric_attr && info->fabric_attr->prov_name ? info->fabric_attr->prov_name : "";
}
static int lnx_fid_close(void *fid) {
	return fid ? fi_close((struct fid *)fid) : 0;
}
*/
import "C"

import (
	"errors"
	"unsafe"
)

// Fabric is an open core fabric.
type Fabric struct {
	info *C.struct_fi_info // our own copy
	fab  *C.struct_fid_fabric
}

// OpenFabric opens the fabric of a core fi_info.
func OpenFabric(ci *CoreInfo) (*Fabric, error) {
	info := C.fi_dupinfo(ci.c)
	if info == nil {
		return nil, errors.New("fi_dupinfo failed")
	}
	f := &Fabric{info: info}
	if err := check("core fi_fabric", C.lnx_core_fabric(info, &f.fab)); err != nil {
		C.fi_freeinfo(info)
		return nil, err
	}
	return f, nil
}

// ProvName is the core's provider name ("tcp;ofi_rxm": the core
// provider, then the utility providers over it).
func (f *Fabric) ProvName() string { return C.GoString(C.lnx_core_prov_name(f.info)) }

// StrAddr reports whether the core's addresses are strings (FI_ADDR_STR):
// NUL-terminated names whose length varies between processes (libfabric
// 1.17's shm names hold the pid), where a fixed format's is the same.
func (f *Fabric) StrAddr() bool { return f.info.addr_format == C.FI_ADDR_STR }

// Close closes the core fabric.
func (f *Fabric) Close() error {
	err := check("core fabric close", C.lnx_fid_close(unsafe.Pointer(f.fab)))
	C.fi_freeinfo(f.info)
	f.fab, f.info = nil, nil
	return err
}

// Domain is an open core domain.
type Domain struct {
	f   *Fabric
	dom *C.struct_fid_domain
}

// Serial makes the domains opened next from f (OpenDomain) and their
// endpoints FI_THREAD_DOMAIN: the caller serializes every call into them,
// so the core takes no locks of its own (libfabric's shm: a mutex per CQ
// read and per send otherwise).
func (f *Fabric) Serial() { C.lnx_core_serial(f.info) }

// OpenDomain opens the core domain the fabric's fi_info names.
func (f *Fabric) OpenDomain() (*Domain, error) {
	d := &Domain{f: f}
	if err := check("core fi_domain", C.lnx_core_domain(f.fab, f.info, &d.dom)); err != nil {
		return nil, err
	}
	return d, nil
}

// provName is the core provider's name (its fabric_attr->prov_name).
func (d *Domain) provName() string {
	info := d.f.info
	if info == nil || info.fabric_attr == nil || info.fabric_attr.prov_name == nil {
		return ""
	}
	return C.GoString(info.fabric_attr.prov_name)
}

// Close closes the core domain.
func (d *Domain) Close() error {
	err := check("core domain close", C.lnx_fid_close(unsafe.Pointer(d.dom)))
	d.dom = nil
	return err
}

// Ptr is the core domain's struct fid_domain (peers/peerep opens its peer
// endpoint on it), InfoPtr the struct fi_info it was opened with; both
// valid until the domain and its fabric close.
func (d *Domain) Ptr() unsafe.Pointer     { return unsafe.Pointer(d.dom) }
func (d *Domain) InfoPtr() unsafe.Pointer { return unsafe.Pointer(d.f.info) }
