// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only

package lnx

import (
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"

	"github.com/lnx-go/lnx-go/internal/fi"
	"github.com/lnx-go/lnx-go/lnx/config"
	"github.com/lnx-go/lnx-go/lnx/logging"
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

// maxSymAddrs bounds one fi_av_insertsym (nodecnt x svccnt addresses).
const maxSymAddrs = 1 << 20

// InsertSym is fi_av_insertsym, and with counts of 1 fi_av_insertsvc: it
// inserts, for nodecnt nodes from node on and svccnt services from
// service on (all services of a node before the next node, as fi_av(3)
// orders them), the address fi_getinfo gives for that node and service
// without FI_SOURCE (see nodeService): the endpoint bound there, reached
// over the link's first network core. Nodes count up as IPv4 or IPv6
// addresses, or as the numeric suffix of a host name (its width kept:
// node009, node010); services as port numbers. A name that does not
// resolve gets FI_ADDR_NOTAVAIL in out (and its code in errs), as a bad
// address does in Insert; the return is the number inserted.
func (av *AV) InsertSym(node string, nodecnt int, service string, svccnt int, out []uint64, errs []int32) (int, error) {
	if nodecnt < 1 || svccnt < 1 || nodecnt > maxSymAddrs/svccnt {
		return 0, fi.Wrap(fi.EINVAL, "fi_av_insertsym: %d nodes x %d services", nodecnt, svccnt)
	}
	if service == "" {
		return 0, fi.Wrap(fi.EINVAL, "fi_av_insertsvc: a service is required (lnx takes no FI_ADDR_STR nodes)")
	}
	if len(av.Domain.Link.Cores) == 0 {
		return 0, fi.Wrap(fi.ENODATA, "fi_av_insertsvc: the link has no network core to reach %s:%s", node, service)
	}
	nodes, err := symNodes(node, nodecnt)
	if err != nil {
		return 0, err
	}
	svcs, err := symServices(service, svccnt)
	if err != nil {
		return 0, err
	}
	n := 0
	i := 0
	for _, nd := range nodes {
		for _, sv := range svcs {
			var in fi.Info
			err := av.Domain.Link.nodeService(&in, &NodeService{Node: nd, Service: sv}, av.Domain.cfg)
			if err == nil {
				var one [1]uint64
				var e1 [1]int32
				if av.Insert(in.DestAddr, 1, one[:], e1[:]) == 1 {
					n++
				}
				if out != nil {
					out[i] = one[0]
				}
				if errs != nil {
					errs[i] = e1[0]
				}
			} else {
				logging.Warnf(logging.AV, "fi_av_insertsvc: %s:%s: %v", nd, sv, err)
				if out != nil {
					out[i] = fi.ADDR_NOTAVAIL
				}
				if errs != nil {
					errs[i] = int32(-fi.Code(err))
				}
			}
			i++
		}
	}
	return n, nil
}

// symNodes lists count nodes from node on (see InsertSym).
func symNodes(node string, count int) ([]string, error) {
	if count == 1 {
		return []string{node}, nil
	}
	if ip, err := netip.ParseAddr(node); err == nil {
		out := make([]string, 0, count)
		for i := 0; i < count; i++ {
			if !ip.IsValid() {
				return nil, fi.Wrap(fi.EINVAL, "fi_av_insertsym: %d addresses from %s overflow", count, node)
			}
			out = append(out, ip.String())
			ip = ip.Next()
		}
		return out, nil
	}
	base := strings.TrimRight(node, "0123456789")
	digits := node[len(base):]
	if digits == "" {
		return nil, fi.Wrap(fi.EINVAL, "fi_av_insertsym: node %q has no numeric suffix to count %d nodes from", node, count)
	}
	first, err := strconv.ParseUint(digits, 10, 63)
	if err != nil {
		return nil, fi.Wrap(fi.EINVAL, "fi_av_insertsym: node %q: %v", node, err)
	}
	out := make([]string, 0, count)
	for i := 0; i < count; i++ {
		out = append(out, fmt.Sprintf("%s%0*d", base, len(digits), first+uint64(i)))
	}
	return out, nil
}

// symServices lists count services (ports) from service on.
func symServices(service string, count int) ([]string, error) {
	if count == 1 {
		return []string{service}, nil
	}
	first, err := strconv.ParseUint(service, 10, 16)
	if err != nil || first+uint64(count)-1 > 65535 {
		return nil, fi.Wrap(fi.EINVAL, "fi_av_insertsym: %d ports from %q", count, service)
	}
	out := make([]string, 0, count)
	for i := 0; i < count; i++ {
		out = append(out, strconv.FormatUint(first+uint64(i), 10))
	}
	return out, nil
}
