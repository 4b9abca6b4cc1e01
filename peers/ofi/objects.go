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
static int lnx_core_open_ep(struct fid_domain *dom, struct fi_info *info, int av_type,
			    struct fid_av **av, struct fid_cq **cq, struct fid_ep **ep) {
	struct fi_av_attr av_attr = { .type = av_type };
	struct fi_cq_attr cq_attr = { .format = FI_CQ_FORMAT_TAGGED, .wait_obj = FI_WAIT_NONE };
	int ret;

	*av = NULL; *cq = NULL; *ep = NULL;
	ret = fi_av_open(dom, &av_attr, av, NULL);
	if (ret) return ret;
	ret = fi_cq_open(dom, &cq_attr, cq, NULL);
	if (ret) return ret;
	ret = fi_endpoint(dom, info, ep, NULL);
	if (ret) return ret;
	ret = fi_ep_bind(*ep, &(*av)->fid, 0);
	if (ret) return ret;
	ret = fi_ep_bind(*ep, &(*cq)->fid, FI_TRANSMIT | FI_RECV);
	if (ret) return ret;
	return fi_enable(*ep);
}
static int lnx_core_getname(struct fid_ep *ep, void *buf, size_t *len) {
	return fi_getname(&ep->fid, buf, len);
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

// OpenDomain opens the core domain the fabric's fi_info names.
func (f *Fabric) OpenDomain() (*Domain, error) {
	d := &Domain{f: f}
	if err := check("core fi_domain", C.lnx_core_domain(f.fab, f.info, &d.dom)); err != nil {
		return nil, err
	}
	return d, nil
}

// Close closes the core domain.
func (d *Domain) Close() error {
	err := check("core domain close", C.lnx_fid_close(unsafe.Pointer(d.dom)))
	d.dom = nil
	return err
}

// Endpoint is an enabled core RDM endpoint with its own AV and CQ.
type Endpoint struct {
	av *C.struct_fid_av
	cq *C.struct_fid_cq
	ep *C.struct_fid_ep
}

// OpenEndpoint opens, binds and enables a core endpoint.
func (d *Domain) OpenEndpoint(avType int) (*Endpoint, error) {
	e := &Endpoint{}
	ret := C.lnx_core_open_ep(d.dom, d.f.info, C.int(avType), &e.av, &e.cq, &e.ep)
	if ret != 0 {
		e.Close()
		return nil, check("core endpoint open", ret)
	}
	return e, nil
}

// Name returns the core endpoint's address.
func (e *Endpoint) Name() ([]byte, error) {
	buf := make([]byte, 256)
	for {
		n := C.size_t(len(buf))
		ret := C.lnx_core_getname(e.ep, unsafe.Pointer(&buf[0]), &n)
		if ret == -C.FI_ETOOSMALL && int(n) > len(buf) {
			buf = make([]byte, n)
			continue
		}
		if err := check("core fi_getname", ret); err != nil {
			return nil, err
		}
		return buf[:n], nil
	}
}

// Close closes the endpoint, then its CQ and AV (libfabric requires the
// endpoint to go first).
func (e *Endpoint) Close() error {
	err := errors.Join(
		check("core ep close", C.lnx_fid_close(unsafe.Pointer(e.ep))),
		check("core cq close", C.lnx_fid_close(unsafe.Pointer(e.cq))),
		check("core av close", C.lnx_fid_close(unsafe.Pointer(e.av))),
	)
	e.ep, e.cq, e.av = nil, nil, nil
	return err
}
