// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only

package lnx

import (
	"net"

	"github.com/lnx-go/lnx-go/lnx/config"
	"github.com/lnx-go/lnx-go/lnx/fi"
	"github.com/lnx-go/lnx-go/peers/ofi"
)

// NodeService is what fi_getinfo's node, service and flags say about
// addresses ("" for a NULL argument).
type NodeService struct {
	Node, Service string
	Source        bool // FI_SOURCE: node/service are the local address
}

// nodeService fills in's src_addr or dest_addr from ns, the way core
// providers such as tcp do, in lnx's address format: an lnx address
// holding only the first network core's part, since a host and port name
// a network endpoint. With FI_SOURCE the address is where an endpoint
// opened with in binds that core (node omitted: the core's own interface
// address; service omitted: any port), and its transport id derives from
// it; without, it is a peer's address to insert in an AV (node omitted:
// the core's interface address, as for a local service), reached over
// that network core. A link without a network core cannot honour either.
func (l *Link) nodeService(in *fi.Info, ns *NodeService, cfg *config.Config) error {
	if len(l.Cores) == 0 {
		return fi.Wrap(fi.ENODATA, "node/service name a network address and the link has no network core")
	}
	core := l.Cores[0]
	local, _, haveLocal := ofi.SockaddrIP(core.SrcName)
	port := 0
	if ns.Service != "" {
		p, err := net.LookupPort("tcp", ns.Service)
		if err != nil {
			return fi.Wrap(fi.ENODATA, "service %q: %v", ns.Service, err)
		}
		port = p
	}
	var ip net.IP
	switch {
	case ns.Node != "":
		ips, err := net.LookupIP(ns.Node)
		if err != nil || len(ips) == 0 {
			return fi.Wrap(fi.ENODATA, "node %q: %v", ns.Node, err)
		}
		// The family of the core's addresses, else IPv4 first.
		want4 := !haveLocal || local.To4() != nil
		for _, c := range ips {
			if (c.To4() != nil) == want4 {
				ip = c
				break
			}
		}
		if ip == nil {
			return fi.Wrap(fi.ENODATA, "node %q has no address of the network core's family", ns.Node)
		}
	case haveLocal:
		ip = local
	case ns.Source:
		ip = net.IPv4zero
	default:
		ip = net.IPv4(127, 0, 0, 1)
	}
	name := ofi.SockaddrName(ip, port)
	blob, err := ofi.NamedAddr(name, ofi.Config{Credits: cfg.NetCredits})
	if err != nil {
		return fi.Wrap(fi.EINVAL, "node/service address: %v", err)
	}
	a := Addr{Link: linkHash(l.Name()), Cores: []CoreAddr{{Kind: coreOFI, Raw: blob}}}
	if ns.Source {
		a.Node = NodeID(cfg)
	}
	// Node 0 in a destination: a node lnx does not know, reached over the
	// network core even when it turns out to be this one.
	raw, err := a.Encode()
	if err != nil {
		return err
	}
	if ns.Source {
		in.SrcAddr = raw
	} else {
		in.DestAddr = raw
	}
	return nil
}

// srcNames returns, per network core in link order, the address that
// info's src_addr (from nodeService) binds it to; nil where none.
func (d *Domain) srcNames(info fi.Info) ([][]byte, error) {
	if len(info.SrcAddr) == 0 {
		return nil, nil
	}
	a, err := DecodeAddr(info.SrcAddr)
	if err == nil && a.Link != linkHash(d.Link.Name()) {
		err = fi.Wrap(fi.EINVAL, "it names another link configuration")
	}
	if err != nil {
		return nil, fi.Wrap(fi.EINVAL, "fi_endpoint: src_addr: %v", err)
	}
	var out [][]byte
	for _, raw := range netAddrsOf(a) {
		name, err := ofi.AddrName(raw)
		if err != nil {
			return nil, fi.Wrap(fi.EINVAL, "fi_endpoint: src_addr: %v", err)
		}
		out = append(out, name)
	}
	return out, nil
}
