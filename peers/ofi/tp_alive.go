// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only

package ofi

import (
	"encoding/binary"
	"errors"
	"net"
	"net/netip"
	"sync/atomic"
	"syscall"
	"time"
)

// Liveness of a peer that the core keeps refusing (see eagain).
//
// rxm answers -FI_EAGAIN for a peer it cannot reach, and the reasons look
// alike from here: the peer's process exited or closed its endpoint (its
// listener is gone and every connection attempt is refused), or it is
// alive but not running (SIGSTOP, a debugger, swapped out, a long pause),
// so that the connection handshake or a full send queue waits for it. The
// first is gone; the second is slow and must not lose its peers. Where the
// core's addresses are IP socket addresses (tcp), the transport asks the
// peer's kernel: a TCP connection to the peer's listening address is
// accepted while the process holds its listener, even stopped, and refused
// once the process is gone. The check runs in a goroutine, so that Poll
// never blocks on it, and takes at most PeerTimeout (a host that does not
// answer at all counts as gone). Cores with other address formats keep
// the plain timeout.

const (
	peerUnknown      = iota // no IP address to check: the timeout decides
	peerCheckPending        // a check is running
	peerListening           // the peer's listener accepted a connection
	peerNotListening        // refused, unreachable or timed out
)

// listening reports what the last liveness check of p found, starting one
// if none is running or its answer was used.
func (t *Transport) listening(p *Peer) int {
	if p.check != nil {
		switch r := int(p.check.Load()); r {
		case peerCheckPending:
			return r
		default:
			p.check = nil
			return r
		}
	}
	ap, ok := sockAddr(p.name)
	if !ok {
		return peerUnknown
	}
	c := new(atomic.Int32)
	c.Store(peerCheckPending)
	p.check = c
	timeout := t.cfg.PeerTimeout
	t.stats.LivenessChecks++
	go func() {
		conn, err := net.DialTimeout("tcp", ap.String(), timeout)
		if err != nil {
			c.Store(peerNotListening)
			return
		}
		reset(conn)
		c.Store(peerListening)
	}()
	return peerCheckPending
}

// Refused asks the kernel of the host in the core name (an IP socket
// address) at once, waiting at most timeout: true when a TCP connection
// to its listening address is refused or the host is unreachable, so that
// the process that listened there is gone. An accepted connection (the
// process holds its listener, even stopped), no answer within timeout,
// a local failure, or a name that is not a socket address: false.
func Refused(name []byte, timeout time.Duration) bool {
	ap, ok := sockAddr(name)
	if !ok {
		return false
	}
	conn, err := net.DialTimeout("tcp", ap.String(), timeout)
	if err == nil {
		reset(conn)
		return false
	}
	return errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.EHOSTUNREACH) ||
		errors.Is(err, syscall.ENETUNREACH)
}

// reset closes a probe's connection with a reset, not an orderly close:
// the listener is a core's (2.1 tcp's), which accepts it and waits for a
// connection request; reading end-of-file there, it may see a stale
// EAGAIN and keep the socket for ever (and poll it on every progress),
// while a reset fails its read and it closes the socket.
func reset(conn net.Conn) {
	if tc, ok := conn.(*net.TCPConn); ok {
		_ = tc.SetLinger(0)
	}
	conn.Close()
}

// IsSockAddr reports whether a core name is an IP socket address (tcp's),
// whose length does not vary from one process to the next.
func IsSockAddr(name []byte) bool {
	_, ok := sockAddr(name)
	return ok
}

// sockAddr decodes a core address that is a struct sockaddr_in or
// sockaddr_in6 (tcp's fi_getname).
func sockAddr(b []byte) (netip.AddrPort, bool) {
	const afInet, afInet6 = 2, 10
	switch {
	case len(b) == 16 && binary.NativeEndian.Uint16(b) == afInet:
		a := netip.AddrFrom4([4]byte(b[4:8]))
		return netip.AddrPortFrom(a, binary.BigEndian.Uint16(b[2:])), true
	case len(b) == 28 && binary.NativeEndian.Uint16(b) == afInet6:
		a := netip.AddrFrom16([16]byte(b[8:24]))
		if scope := binary.NativeEndian.Uint32(b[24:]); scope != 0 && a.IsLinkLocalUnicast() {
			if ifc, err := net.InterfaceByIndex(int(scope)); err == nil {
				a = a.WithZone(ifc.Name)
			}
		}
		return netip.AddrPortFrom(a, binary.BigEndian.Uint16(b[2:])), true
	}
	return netip.AddrPort{}, false
}
