// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only

package config

import (
	"strconv"
	"strings"
	"time"

	"github.com/lnx-go/lnx-go/lnx/logging"
	"github.com/lnx-go/lnx-go/peers/ofi"
)

// RailSelection is the FI_LNX_MULTI_RAIL_SELECTION policy.
type RailSelection int

const (
	PerPeer RailSelection = iota // each peer keeps one rail
	PerMsg                       // messages take the rails in turn
)

// Defaults and bounds that are lnx's own (the network core's are in ofi).
const (
	DefaultUnexpectedMax = 64 << 20
	DefaultMRCacheMax    = 1024
	// MinPeerTimeout is the shortest FI_LNX_PEER_TIMEOUT lnx takes. The
	// core refuses sends (-FI_EAGAIN) while it connects to a new peer,
	// and a peer refused for the whole timeout is declared gone: a
	// timeout shorter than a connection takes failed the first send to
	// every network peer. It is also five of the transport's probe
	// intervals, the least in which a quiet peer can answer a probe.
	MinPeerTimeout = 500 * time.Millisecond
	// FI_LNX_WAIT_SLEEP_MAX's default and bounds: below 10us a wait is a
	// busy poll; above 100ms a completion waits too long to be seen.
	DefaultWaitSleepMax = time.Millisecond
	MinWaitSleepMax     = 10 * time.Microsecond
	MaxWaitSleepMax     = 100 * time.Millisecond
)

// Config is every setting, read at one moment.
type Config struct {
	Links         string // FI_LNX_PROV_LINKS, trimmed; "" means the default links
	DisableShm    bool
	NodeID        string // "" means hostname and boot id
	Rails         RailSelection
	NetAddrFormat uint32 // ofi.AddrFormatInet/Inet6; 0: the core's first
	DumpStats     bool
	UnexpectedMax uint64
	PeerTimeout   time.Duration
	// NetCredits is an ofi.Config.Credits value: 0 the default window,
	// -1 flow control off, else the window.
	NetCredits int
	NetRead    bool
	NativeRMA  bool
	// PeerAPI: drive network cores that accept it through the peer
	// API (FI_LNX_PEER_API, libfabric 2.0-2.2 only; default on).
	// PeerAPIAsked: the user set it on, so that a core that refuses is
	// worth a warning rather than a note.
	PeerAPI, PeerAPIAsked bool
	// CheckSendBuffers: on the peer API path, msync a send buffer over
	// a page before the core reads it (FI_LNX_CHECK_SEND_BUFFERS,
	// default on).
	CheckSendBuffers bool
	FastSend         bool
	FastRndv         bool
	FastRecv         bool
	ArmRecv          bool
	RearmRecv        bool
	HmemIPC          bool
	MRCacheMax       int
	CudaLib          string // "" means libcuda.so.1; "none" disables
	RocmLib          string // "" means libamdhip64.so; "none" disables
	// WaitSleepMax bounds the sleep between two polls of a blocked wait.
	WaitSleepMax time.Duration
}

// Load reads every variable through getenv. A malformed value is logged
// (warn) and replaced by its default; Load never fails.
func Load(getenv func(string) string) *Config {
	r := reader{getenv}
	return &Config{
		Links:            r.str(Links),
		DisableShm:       r.on(DisableShm),
		NodeID:           r.str(NodeID),
		Rails:            r.rails(),
		NetAddrFormat:    r.addrFormat(),
		DumpStats:        r.on(DumpStats),
		UnexpectedMax:    r.size(UnexpectedMax, DefaultUnexpectedMax),
		PeerTimeout:      r.peerTimeout(),
		NetCredits:       r.credits(),
		NetRead:          !r.off(NetRead),
		NativeRMA:        !r.off(NativeRMA),
		PeerAPI:          !r.off(PeerAPI),
		PeerAPIAsked:     r.on(PeerAPI),
		CheckSendBuffers: !r.off(CheckSendBuffers),
		FastSend:         !r.off(FastSend),
		FastRndv:         !r.off(FastRndv),
		FastRecv:         !r.off(FastRecv),
		ArmRecv:          !r.off(ArmRecv),
		RearmRecv:        !r.off(RearmRecv),
		HmemIPC:          !r.off(HmemIPC),
		MRCacheMax:       int(r.size(MRCacheMax, DefaultMRCacheMax)),
		CudaLib:          r.str(CudaLib),
		RocmLib:          r.str(RocmLib),
		WaitSleepMax:     r.waitSleepMax(),
	}
}

type reader struct{ getenv func(string) string }

func (r reader) str(name string) string { return strings.TrimSpace(r.getenv(name)) }

// on: a variable that defaults to off, turned on by 1/yes/on/true or any
// non-zero number.
func (r reader) on(name string) bool {
	v := strings.ToLower(r.str(name))
	switch v {
	case "":
		return false
	case "y", "yes", "on", "true":
		return true
	}
	n, err := strconv.Atoi(v)
	return err == nil && n != 0
}

// off: a variable that defaults to on, turned off by 0/no/off/false.
func (r reader) off(name string) bool {
	switch strings.ToLower(r.str(name)) {
	case "0", "n", "no", "off", "false":
		return true
	}
	return false
}

// size reads a byte count: a plain number, or with a k/m/g suffix.
func (r reader) size(name string, def uint64) uint64 {
	v := strings.ToLower(r.str(name))
	if v == "" {
		return def
	}
	mult := uint64(1)
	switch {
	case strings.HasSuffix(v, "k"):
		mult, v = 1<<10, strings.TrimSuffix(v, "k")
	case strings.HasSuffix(v, "m"):
		mult, v = 1<<20, strings.TrimSuffix(v, "m")
	case strings.HasSuffix(v, "g"):
		mult, v = 1<<30, strings.TrimSuffix(v, "g")
	}
	n, err := strconv.ParseUint(v, 10, 64)
	if err != nil || n > ^uint64(0)/mult {
		logging.Warnf(logging.Core, "%s=%q is not a byte count; using %d", name, r.str(name), def)
		return def
	}
	return n * mult
}

func (r reader) rails() RailSelection {
	switch v := strings.ToUpper(r.str(MultiRailSelection)); v {
	case "", "PER_PEER":
		return PerPeer
	case "PER_MSG":
		return PerMsg
	default:
		logging.Warnf(logging.EPCtrl, "%s=%s is not PER_PEER or PER_MSG; using PER_PEER", MultiRailSelection, v)
		return PerPeer
	}
}

func (r reader) addrFormat() uint32 {
	switch v := strings.ToLower(r.str(NetAddrFormat)); v {
	case "":
		return 0
	case "inet", "ipv4", "fi_sockaddr_in":
		return ofi.AddrFormatInet
	case "inet6", "ipv6", "fi_sockaddr_in6":
		return ofi.AddrFormatInet6
	default:
		logging.Warnf(logging.Core, "%s=%q is not inet or inet6; using the core's first address format", NetAddrFormat, v)
		return 0
	}
}

// peerTimeout reads a Go duration ("2s", "500ms"), raising a value below
// MinPeerTimeout to it with a warning.
func (r reader) peerTimeout() time.Duration {
	v := r.str(PeerTimeout)
	d := ofi.DefaultPeerTimeout
	if v != "" {
		p, err := time.ParseDuration(v)
		if err != nil || p <= 0 {
			logging.Warnf(logging.Core, "%s=%q is not a positive duration; using %v", PeerTimeout, v, d)
		} else {
			d = p
		}
	}
	if d < MinPeerTimeout {
		logging.Warnf(logging.Core, "%s=%v is shorter than a connection may take; using %v", PeerTimeout, d, MinPeerTimeout)
		d = MinPeerTimeout
	}
	return d
}

func (r reader) waitSleepMax() time.Duration {
	v := r.str(WaitSleepMax)
	if v == "" {
		return DefaultWaitSleepMax
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < MinWaitSleepMax || d > MaxWaitSleepMax {
		logging.Warnf(logging.Core, "%s=%q is not a duration in [%v, %v]; using %v",
			WaitSleepMax, v, MinWaitSleepMax, MaxWaitSleepMax, DefaultWaitSleepMax)
		return DefaultWaitSleepMax
	}
	return d
}

func (r reader) credits() int {
	v := r.str(NetCredits)
	if v == "" {
		return 0
	}
	n, err := strconv.Atoi(v)
	switch {
	case err != nil || n < 0 || n > ofi.MaxCredits:
		logging.Warnf(logging.Core, "%s=%q is not a count from 0 to %d; using %d",
			NetCredits, v, ofi.MaxCredits, ofi.DefaultCredits)
		return 0
	case n == 0:
		return -1
	}
	return n
}
