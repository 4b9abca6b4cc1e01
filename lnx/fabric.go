// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only

package lnx

import (
	"sync"
	"sync/atomic"

	"github.com/lnx-go/lnx-go/internal/fi"
)

// refs counts the children of an object so that closing a parent with open
// children fails with -FI_EBUSY, as libfabric's own providers do.
type refs struct{ n atomic.Int64 }

func (r *refs) get()       { r.n.Add(1) }
func (r *refs) put()       { r.n.Add(-1) }
func (r *refs) busy() bool { return r.n.Load() > 0 }

// Fabric is an lnx fabric. It is a container: core fabrics are opened per
// domain, since which cores to open depends on the link the domain names.
type Fabric struct {
	Version uint32
	refs
	mu     sync.Mutex
	closed bool
}

// OpenFabric opens an lnx fabric for fabric_attr.
func OpenFabric(version uint32, attr fi.FabricAttr) (*Fabric, error) {
	if attr.Name != "" && attr.Name != FabricName {
		return nil, fi.Wrap(fi.EINVAL, "fabric %q is not an lnx fabric", attr.Name)
	}
	if attr.APIVersion != 0 {
		version = attr.APIVersion
	}
	return &Fabric{Version: version}, nil
}

// Close closes the fabric; it must have no open domains.
func (f *Fabric) Close() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.busy() {
		return fi.Wrap(fi.EBUSY, "fabric has open domains")
	}
	f.closed = true
	return nil
}
