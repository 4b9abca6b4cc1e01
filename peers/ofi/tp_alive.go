// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only

package ofi

import (
	"encoding/binary"
	"errors"
	"strings"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// Liveness of a peer that the core keeps refusing (see eagain).
//
// rxm answers -FI_EAGAIN for a peer it cannot reach, and the reasons look
// alike from here: the peer's process exited or closed its endpoint (its
// listener is gone and every connection attempt is refused), or it is
// alive but not running (SIGSTOP, a debugger, swapped out, a long pause),
// so that the connection handshake or a full send queue waits for it. The
// first is gone; the second is slow and must not lose its peers. Where the
// core's addresses are IP socket addresses of TCP listeners (tcp,
// sockets: ListenerProbeable), the transport asks the peer's kernel: a TCP
// connection to the peer's listening address is accepted while the
// process holds its listener, even stopped, and refused once the process
// is gone. The check runs in a goroutine, so that Poll never blocks on
// it, and takes at most PeerTimeout (a host that does not answer at all
// counts as gone). Other cores keep the plain timeout.

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
	if !ListenerProbeable(t.prov, p.name) {
		return peerUnknown
	}
	c := new(atomic.Int32)
	c.Store(peerCheckPending)
	p.check = c
	name, timeout := p.name, t.cfg.PeerTimeout
	t.stats.LivenessChecks++
	go func() {
		if probe(name, timeout) != nil {
			c.Store(peerNotListening)
			return
		}
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
func Refused(name []byte, timeout time.Duration) bool { return refusal(probe(name, timeout)) }

// refusal: a probe's error that says the listener's process is gone.
func refusal(err error) bool {
	return errors.Is(err, unix.ECONNREFUSED) || errors.Is(err, unix.EHOSTUNREACH) ||
		errors.Is(err, unix.ENETUNREACH)
}

// What ProbeListener found.
const (
	ListenerUnknown  = iota // a local failure, or not an IP socket address: ask again later
	ListenerAccepted        // the process holds its listener (even stopped)
	ListenerGone            // refused, unreachable, or no answer within the timeout
)

// ProbeListener makes one connection to the listening address in core
// name, waiting at most timeout, for an owner that watches a peer itself
// (lnx's peer-API core, which opens no transport). Unlike Refused, a host
// that does not answer in time counts as gone, as the transport's own
// liveness check counts it (listening).
func ProbeListener(name []byte, timeout time.Duration) int {
	switch err := probe(name, timeout); {
	case err == nil:
		return ListenerAccepted
	case refusal(err), errors.Is(err, unix.ETIMEDOUT):
		return ListenerGone
	}
	return ListenerUnknown
}

// errNotSock: a core name that is not an IP socket address.
var errNotSock = errors.New("not an IP socket address")

// probe makes one connection to the listening address in core name on
// the calling thread: nil when it is accepted, else why not (ETIMEDOUT
// when no answer came within timeout). It closes the connection with a
// reset, not an orderly close: the listener is a core's (2.1 tcp's),
// which accepts it and waits for a connection request; reading
// end-of-file there, it may see a stale EAGAIN and keep the socket for
// ever (and poll it on every progress), while a reset fails its read and
// it closes the socket.
//
// Plain system calls, not the net package: its dial parks the goroutine
// on Go's network poller and starts another to watch the deadline.
// Refused runs on a rank's receive path, right before a queued message
// starts, where that took about twice as long (docs/peer-api.md).
func probe(name []byte, timeout time.Duration) error {
	sa, family := sockaddrOf(name)
	if sa == nil {
		return errNotSock
	}
	fd, err := unix.Socket(family, unix.SOCK_STREAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	if err := unix.SetsockoptLinger(fd, unix.SOL_SOCKET, unix.SO_LINGER, &unix.Linger{Onoff: 1}); err != nil {
		return err
	}
	if err := unix.Connect(fd, sa); err != unix.EINPROGRESS {
		return err
	}
	deadline := time.Now().Add(timeout)
	for {
		left := time.Until(deadline)
		if left <= 0 {
			return unix.ETIMEDOUT
		}
		pfd := [1]unix.PollFd{{Fd: int32(fd), Events: unix.POLLOUT}}
		n, err := unix.Poll(pfd[:], int((left+time.Millisecond-1)/time.Millisecond))
		if err == unix.EINTR || (err == nil && n == 0) {
			continue
		}
		if err != nil {
			return err
		}
		break
	}
	soErr, err := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_ERROR)
	if err != nil {
		return err
	}
	if soErr != 0 {
		return unix.Errno(soErr)
	}
	return nil
}

// IsSockAddr reports whether a core name is an IP socket address (tcp's),
// whose length does not vary from one process to the next.
func IsSockAddr(name []byte) bool { return sockFamily(name) != 0 }

// ListenerProbeable says whether core name, of core provider prov
// (fi_info's prov_name), can be asked for its process's liveness with a
// TCP connection: an IP socket address that a TCP listener holds, as
// tcp's and sockets' do. verbs (rdma_cm's ports), udp and usnic name IP
// sockets too, but no TCP listener stands behind them: a connection there
// is refused while the peer lives, which must not count as gone.
func ListenerProbeable(prov string, name []byte) bool {
	core, _, _ := strings.Cut(prov, ";")
	return (core == "tcp" || core == "sockets") && IsSockAddr(name)
}

// sockFamily returns the address family of core name b if it is an IP
// socket address, else 0.
func sockFamily(b []byte) int {
	switch {
	case len(b) == inetLen && binary.NativeEndian.Uint16(b) == afInet:
		return afInet
	case len(b) == inet6Len && binary.NativeEndian.Uint16(b) == afInet6:
		return afInet6
	}
	return 0
}

// sockaddrOf is core name b as connect's address, and its family; nil if
// b is not an IP socket address. An IPv6 scope stays the interface index
// it came as.
func sockaddrOf(b []byte) (unix.Sockaddr, int) {
	switch f := sockFamily(b); f {
	case afInet:
		return &unix.SockaddrInet4{Port: int(binary.BigEndian.Uint16(b[2:])), Addr: [4]byte(b[4:8])}, f
	case afInet6:
		return &unix.SockaddrInet6{Port: int(binary.BigEndian.Uint16(b[2:])),
			ZoneId: binary.NativeEndian.Uint32(b[24:]), Addr: [16]byte(b[8:24])}, f
	}
	return nil, 0
}
