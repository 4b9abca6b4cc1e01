// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only

package ofi

/*
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <rdma/fabric.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_errno.h>

static int lnx_core_mr_reg(struct fid_domain *dom, uintptr_t addr, size_t len, uint64_t access,
			   uint64_t key, int iface, int device, struct fid_mr **mr,
			   void **desc, uint64_t *out_key) {
	struct iovec iov = { .iov_base = (void *)addr, .iov_len = len };
	struct fi_mr_attr attr;
	memset(&attr, 0, sizeof(attr));
	attr.mr_iov = &iov;
	attr.iov_count = 1;
	attr.access = access;
	attr.requested_key = key;
	attr.iface = (enum fi_hmem_iface)iface;
	attr.device.reserved = 0;
	attr.device.cuda = device;
	int ret = fi_mr_regattr(dom, &attr, 0, mr);
	if (ret)
		return ret;
	*desc = fi_mr_desc(*mr);
	*out_key = fi_mr_key(*mr);
	return 0;
}

static int lnx_core_mr_mode(struct fi_info *info) { return info->domain_attr->mr_mode; }
static uint64_t lnx_core_caps(struct fi_info *info) { return info->caps; }
static int lnx_core_mr_close(struct fid_mr *mr) { return fi_close(&mr->fid); }
*/
import "C"

import (
	"unsafe"
)

// MR is one registration with a core domain.
type MR struct {
	mr   *C.struct_fid_mr
	desc unsafe.Pointer
	key  uint64
	base uintptr
}

// ProvKey reports whether the core chooses its own keys (FI_MR_PROV_KEY):
// a requested key is then ignored and Key says what the core picked.
func (d *Domain) ProvKey() bool {
	return C.lnx_core_mr_mode(d.f.info)&C.FI_MR_PROV_KEY != 0
}

// canRead reports whether the domain's endpoints may read remote memory
// that peers registered for it (FI_RMA with FI_READ and FI_REMOTE_READ),
// and whether remote addresses are virtual (FI_MR_VIRT_ADDR) rather than
// offsets into the registration.
func (d *Domain) canRead() (ok, virt bool) {
	c := uint64(C.lnx_core_caps(d.f.info))
	return c&rmaCaps == rmaCaps, C.lnx_core_mr_mode(d.f.info)&C.FI_MR_VIRT_ADDR != 0
}

// canWrite reports whether the domain's endpoints may write remote memory
// (FI_RMA with FI_WRITE and FI_REMOTE_WRITE).
func (d *Domain) canWrite() bool {
	return uint64(C.lnx_core_caps(d.f.info))&writeCaps == writeCaps
}

// RegMR registers [addr, addr+n) with the core domain. key is the
// requested key (ignored by FI_MR_PROV_KEY cores); callers pass a key
// unique in this domain, never the application's.
func (d *Domain) RegMR(addr uintptr, n uint64, access, key uint64, iface, device int) (*MR, error) {
	m := &MR{}
	var desc unsafe.Pointer
	var out C.uint64_t
	rc := C.lnx_core_mr_reg(d.dom, C.uintptr_t(addr), C.size_t(n), C.uint64_t(access), C.uint64_t(key),
		C.int(iface), C.int(device), &m.mr, &desc, &out)
	if err := check("core fi_mr_regattr", rc); err != nil {
		return nil, err
	}
	m.desc, m.key, m.base = desc, uint64(out), addr
	return m, nil
}

// Desc is the core's descriptor for this registration.
func (m *MR) Desc() unsafe.Pointer { return m.desc }

// Key is the core's key for this registration.
func (m *MR) Key() uint64 { return m.key }

// Close releases the registration.
func (m *MR) Close() error {
	if m.mr == nil {
		return nil
	}
	err := check("core mr close", C.lnx_core_mr_close(m.mr))
	m.mr = nil
	return err
}
