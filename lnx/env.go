package lnx

import (
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/lnx-go/lnx-go/lnx/logging"
	"github.com/lnx-go/lnx-go/peers/ofi"
)

// Getenv reads the process environment. capi replaces it with C getenv:
// Go's os.Getenv sees a copy taken when the runtime started, which misses
// variables an application sets before calling fi_getinfo.
var Getenv = os.Getenv

// Environment variables (documented in README and docs/lnx.7.md).
const (
	EnvLinks       = "FI_LNX_PROV_LINKS"
	EnvDisableShm  = "FI_LNX_DISABLE_SHM"
	EnvDumpStats   = "FI_LNX_DUMP_STATS"
	EnvRailSelect  = "FI_LNX_MULTI_RAIL_SELECTION"
	EnvNodeID      = "FI_LNX_NODE_ID"
	EnvUnexpMax    = "FI_LNX_UNEXPECTED_MAX"
	EnvPeerTimeout = "FI_LNX_PEER_TIMEOUT"
	EnvNetCredits  = "FI_LNX_NET_CREDITS"
	EnvNetFormat   = "FI_LNX_NET_ADDR_FORMAT"
	EnvNetRead     = "FI_LNX_NET_READ"
	defaultNetwork = "tcp;ofi_rxm"
)

func envBool(name string) bool {
	v := strings.TrimSpace(Getenv(name))
	if v == "" {
		return false
	}
	switch strings.ToLower(v) {
	case "y", "yes", "on", "true":
		return true
	}
	n, err := strconv.Atoi(v)
	return err == nil && n != 0
}

// envDuration reads a Go duration ("2s", "500ms"); def if unset or bad.
func envDuration(name string, def time.Duration) time.Duration {
	v := strings.TrimSpace(Getenv(name))
	if v == "" {
		return def
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		logging.Warnf(logging.Core, "%s=%q is not a positive duration; using %v", name, v, def)
		return def
	}
	return d
}

// MinPeerTimeout is the shortest FI_LNX_PEER_TIMEOUT lnx takes. The core
// refuses sends (-FI_EAGAIN) while it connects to a new peer, and a peer
// refused for the whole timeout is declared gone: a timeout shorter than
// a connection takes failed the first send to every network peer. It is
// also five of the transport's probe intervals, the least in which a
// quiet peer can answer a probe.
const MinPeerTimeout = 500 * time.Millisecond

// peerTimeout reads FI_LNX_PEER_TIMEOUT, raising a value below
// MinPeerTimeout to it with a warning.
func peerTimeout() time.Duration {
	d := envDuration(EnvPeerTimeout, ofi.DefaultPeerTimeout)
	if d < MinPeerTimeout {
		logging.Warnf(logging.Core, "%s=%v is shorter than a connection may take; using %v", EnvPeerTimeout, d, MinPeerTimeout)
		d = MinPeerTimeout
	}
	return d
}

// envSize reads a byte count (plain number, or with a k/m/g suffix).
func envSize(name string, def uint64) uint64 {
	v := strings.ToLower(strings.TrimSpace(Getenv(name)))
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
	if err != nil {
		return def
	}
	return n * mult
}

// envOff reports whether a variable that defaults to on is turned off.
func envOff(name string) bool {
	switch strings.ToLower(strings.TrimSpace(Getenv(name))) {
	case "0", "n", "no", "off", "false":
		return true
	}
	return false
}

// netCredits reads FI_LNX_NET_CREDITS as an ofi.Config.Credits value: unset
// is the default window, 0 turns flow control off, 1..MaxCredits is the
// window.
func netCredits() int {
	v := strings.TrimSpace(Getenv(EnvNetCredits))
	if v == "" {
		return 0
	}
	n, err := strconv.Atoi(v)
	switch {
	case err != nil || n < 0 || n > ofi.MaxCredits:
		logging.Warnf(logging.Core, "%s=%q is not a count from 0 to %d; using %d",
			EnvNetCredits, v, ofi.MaxCredits, ofi.DefaultCredits)
		return 0
	case n == 0:
		return -1
	}
	return n
}

// netAddrFormat reads FI_LNX_NET_ADDR_FORMAT: which address family a network
// core should use where it offers a domain in several (tcp on a dual-stack
// interface). 0: the core's first.
func netAddrFormat() uint32 {
	switch v := strings.ToLower(strings.TrimSpace(Getenv(EnvNetFormat))); v {
	case "":
		return 0
	case "inet", "ipv4", "fi_sockaddr_in":
		return ofi.AddrFormatInet
	case "inet6", "ipv6", "fi_sockaddr_in6":
		return ofi.AddrFormatInet6
	default:
		logging.Warnf(logging.Core, "%s=%q is not inet or inet6; using the core's first address format", EnvNetFormat, v)
		return 0
	}
}
