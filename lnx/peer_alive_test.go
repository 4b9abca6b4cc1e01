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
	if got := listenerAnswer(ofi.ProbeListener(name, time.Second)); got != checkListening {
		t.Fatalf("a held listener: answer %d, want listening (%d)", got, checkListening)
	}
	_ = l.Close()
	if got := listenerAnswer(ofi.ProbeListener(name, time.Second)); got != checkGone {
		t.Fatalf("a closed listener: answer %d, want gone (%d)", got, checkGone)
	}
	if got := listenerAnswer(ofi.ProbeListener([]byte("not a socket address"), time.Second)); got != checkUnknown {
		t.Fatalf("a name that is no socket address: answer %d, want unknown (%d)", got, checkUnknown)
	}
}
