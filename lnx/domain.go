// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only

package lnx

import (
	"errors"
	"sync/atomic"

	"github.com/lnx-go/lnx-go/internal/fi"
	"github.com/lnx-go/lnx-go/lnx/config"
	"github.com/lnx-go/lnx-go/lnx/links"
	"github.com/lnx-go/lnx-go/lnx/logging"
	"github.com/lnx-go/lnx-go/peers/ofi"
)

// Domain is an lnx domain: one link, with a core fabric and domain opened
// for each of the link's network cores.
type Domain struct {
	refs
	Fabric *Fabric
	Link   *Link
	Info   fi.Info
	cores  []*coreDomain

	// cfg is the configuration of the fi_getinfo before the domain
	// opened; the domain's endpoints and caches follow it.
	cfg   *config.Config
	keys  mrKeys
	cache regCache
	mrs   atomic.Int64 // open MRs
}

type coreDomain struct {
	choice CoreChoice
	list   *ofi.List
	fab    *ofi.Fabric
	dom    *ofi.Domain
	peer   bool // opened with FI_PEER in the caps (FI_LNX_PEER_API)
}

func (c *coreDomain) close() error {
	var errs []error
	if c.dom != nil {
		errs = append(errs, c.dom.Close())
	}
	if c.fab != nil {
		errs = append(errs, c.fab.Close())
	}
	c.list.Free()
	return errors.Join(errs...)
}

// OpenDomain opens the link that info's domain name designates.
func (f *Fabric) OpenDomain(info fi.Info) (*Domain, error) {
	cfg := currentSettings()
	ls, err := Links(f.Version, cfg)
	if err != nil {
		return nil, err
	}
	var link *Link
	for _, l := range ls {
		if info.Domain.Name == "" || info.Domain.Name == l.Name() {
			link = l
			break
		}
	}
	if link == nil {
		return nil, fi.Wrap(fi.EINVAL, "domain %q is not a configured lnx link", info.Domain.Name)
	}
	d := &Domain{Fabric: f, Link: link, Info: info, cfg: cfg}
	d.cache.max = cfg.MRCacheMax
	for _, c := range link.Cores {
		cd := &coreDomain{choice: c}
		d.cores = append(d.cores, cd)
		if err := cd.open(f.Version, cfg.NetAddrFormat, cfg.PeerAPI); err != nil {
			d.closeCores()
			return nil, err
		}
	}
	f.get()
	logging.Infof(logging.Domain, "opened domain %q", link.Name())
	return d, nil
}

// coreCaps are the capabilities asked of a core: libfabric's shm reaches
// only processes of this machine, and 1.17's reports neither FI_LOCAL_COMM
// nor FI_REMOTE_COMM: it is asked for neither.
func coreCaps(prov string) uint64 {
	if prov == links.FiShm {
		return ofi.CoreCaps &^ (fi.REMOTE_COMM | fi.LOCAL_COMM)
	}
	return ofi.CoreCaps
}

func (c *coreDomain) open(version, addrFormat uint32, peerAPI bool) error {
	var err error
	prov, caps := links.CoreProv(c.choice.Prov), coreCaps(c.choice.Prov)
	if peerAPI && peerAPIUsable() {
		// A core that answers with FI_PEER may take lnx's peer SRX and
		// CQ (the endpoint finds out: openPeerCore).
		if c.list, err = ofi.GetInfo(version, prov, c.choice.Domain, caps|fi.PEER); err == nil {
			c.peer = true
		}
	}
	if c.list == nil {
		if c.list, err = ofi.GetInfo(version, prov, c.choice.Domain, caps); err != nil {
			return err
		}
	}
	c.list.Prefer(addrFormat) // as resolve chose
	if c.fab, err = ofi.OpenFabric(c.list.Infos[0]); err != nil {
		return err
	}
	c.dom, err = c.fab.OpenDomain()
	return err
}

func (d *Domain) closeCores() error {
	var errs []error
	for _, c := range d.cores {
		errs = append(errs, c.close())
	}
	d.cores = nil
	return errors.Join(errs...)
}

// Close closes the domain; it must have no open children.
func (d *Domain) Close() error {
	if d.busy() {
		return fi.Wrap(fi.EBUSY, "domain has open endpoints, AVs, CQs or counters")
	}
	if n := d.mrs.Load(); n > 0 {
		return fi.Wrap(fi.EBUSY, "domain has %d open memory registrations", n)
	}
	err := errors.Join(d.cache.flush(), d.closeCores())
	d.Fabric.put()
	return err
}
