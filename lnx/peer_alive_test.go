// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only

package lnx

import (
	"encoding/binary"
	"net"
	"testing"
	"time"

	"github.com/lnx-go/lnx-go/peers/ofi"
)

// inetName is tcp's fi_getname bytes (struct sockaddr_in) of a.
func inetName(a *net.TCPAddr) []byte {
	b := make([]byte, 16)
	binary.NativeEndian.PutUint16(b, 2) // AF_INET
	binary.BigEndian.PutUint16(b[2:], uint16(a.Port))
	copy(b[4:], a.IP.To4())
	return b
}

// TestListenerAnswer: what the peer path's liveness check makes of a
// receiver's core address: a process that holds its listener (even one
// that never accepts, as a stopped one) is alive; once the listener is
// closed, the same address is gone.
func TestListenerAnswer(t *testing.T) {
	l, err := net.ListenTCP("tcp4", &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Skipf("no IPv4 loopback: %v", err)
	}
	name := inetName(l.Addr().(*net.TCPAddr))
	if got := ofi.ProbeListener(name, time.Second); got != ofi.ListenerAccepted {
		t.Fatalf("a held listener: answer %d, want accepted (%d)", got, ofi.ListenerAccepted)
	}
	_ = l.Close()
	if got := ofi.ProbeListener(name, time.Second); got != ofi.ListenerGone {
		t.Fatalf("a closed listener: answer %d, want gone (%d)", got, ofi.ListenerGone)
	}
	if got := ofi.ProbeListener([]byte("not a socket address"), time.Second); got != ofi.ListenerUnknown {
		t.Fatalf("a name that is no socket address: answer %d, want unknown (%d)", got, ofi.ListenerUnknown)
	}
}
