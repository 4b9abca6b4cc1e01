// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only

package ofi

import (
	"encoding/binary"
	"errors"
	"io"
	"net"
	"net/netip"
	"os"
	"strconv"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestSockAddr decodes tcp's fi_getname bytes (struct sockaddr_in and
// sockaddr_in6) into connect's address, an IPv6 scope as its interface
// index, and refuses other formats.
func TestSockAddr(t *testing.T) {
	in4 := make([]byte, 16)
	binary.NativeEndian.PutUint16(in4, 2)
	binary.BigEndian.PutUint16(in4[2:], 4242)
	copy(in4[4:], []byte{127, 0, 0, 1})
	in6 := make([]byte, 28)
	binary.NativeEndian.PutUint16(in6, 10)
	binary.BigEndian.PutUint16(in6[2:], 4243)
	in6[23] = 1 // ::1
	ll6 := make([]byte, 28)
	binary.NativeEndian.PutUint16(ll6, 10)
	binary.BigEndian.PutUint16(ll6[2:], 4244)
	ll6[8], ll6[9], ll6[23] = 0xfe, 0x80, 1 // fe80::1
	binary.NativeEndian.PutUint32(ll6[24:], 3)
	other := append([]byte(nil), in4...)
	binary.NativeEndian.PutUint16(other, 27)
	cases := []struct {
		b    []byte
		want string
		ok   bool
	}{
		{in4, "127.0.0.1:4242", true},
		{in6, "[::1]:4243", true},
		{ll6, "[fe80::1%3]:4244", true},
		{other, "", false},
		{in4[:15], "", false},
		{make([]byte, 64), "", false},
	}
	for i, c := range cases {
		sa, family := sockaddrOf(c.b)
		var got string
		switch a := sa.(type) {
		case *unix.SockaddrInet4:
			got = netip.AddrPortFrom(netip.AddrFrom4(a.Addr), uint16(a.Port)).String()
		case *unix.SockaddrInet6:
			ip := netip.AddrFrom16(a.Addr)
			if a.ZoneId != 0 {
				ip = ip.WithZone(strconv.Itoa(int(a.ZoneId)))
			}
			got = netip.AddrPortFrom(ip, uint16(a.Port)).String()
		}
		if ok := sa != nil; ok != c.ok || got != c.want || ok != (family != 0) {
			t.Errorf("case %d: %q (family %d), want %q %v", i, got, family, c.want, c.ok)
		}
		if IsSockAddr(c.b) != c.ok {
			t.Errorf("case %d: IsSockAddr %v, want %v", i, !c.ok, c.ok)
		}
	}
}

// listenerPair returns a listening address (closed when the test ends)
// and one that was listening and is closed now.
func listenerPair(t *testing.T) (live, gone netip.AddrPort) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	gone = closed.Addr().(*net.TCPAddr).AddrPort()
	closed.Close()
	return l.Addr().(*net.TCPAddr).AddrPort(), gone
}

// sockName is the core name (struct sockaddr_in) of IPv4 address ap.
func sockName(ap netip.AddrPort) []byte {
	b := make([]byte, 16)
	binary.NativeEndian.PutUint16(b, 2)
	binary.BigEndian.PutUint16(b[2:], ap.Port())
	a4 := ap.Addr().As4()
	copy(b[4:], a4[:])
	return b
}

// TestListening: the liveness check finds a listening address alive and
// a closed one gone, without blocking the caller.
func TestListening(t *testing.T) {
	live, gone := listenerPair(t)
	tr := &Transport{cfg: Config{PeerTimeout: DefaultPeerTimeout}, prov: "tcp;ofi_rxm"}
	for _, c := range []struct {
		ap   netip.AddrPort
		want int
	}{
		{live, peerListening},
		{gone, peerNotListening},
	} {
		p := &Peer{name: sockName(c.ap)}
		if r := tr.listening(p); r != peerCheckPending {
			t.Fatalf("%v: first answer %d, want pending", c.ap, r)
		}
		r := peerCheckPending
		for r == peerCheckPending {
			r = tr.listening(p)
		}
		if r != c.want {
			t.Errorf("%v: %d, want %d", c.ap, r, c.want)
		}
	}
	if r := tr.listening(&Peer{name: make([]byte, 8)}); r != peerUnknown {
		t.Errorf("a non-IP address: %d, want peerUnknown", r)
	}
}

// TestListeningNoTCPListener: a live peer of a core whose IP socket
// names have no TCP listener behind them (udp;ofi_rxd here; verbs'
// rdma_cm ports at sites) is not asked, and so not found gone: a TCP
// connection to its address is refused while it lives. Before, the
// transport asked it and declared it gone.
func TestListeningNoTCPListener(t *testing.T) {
	var trs [2]*Transport
	for i := range trs {
		tr, err := Open(RuntimeVersion(), Config{Prov: "udp;ofi_rxd", PeerTimeout: DefaultPeerTimeout})
		if err != nil {
			t.Skipf("udp;ofi_rxd: %v", err)
		}
		defer tr.Close()
		trs[i] = tr
	}
	if !IsSockAddr(trs[1].name) {
		t.Skipf("udp;ofi_rxd names are not IP socket addresses here (%d bytes)", len(trs[1].name))
	}
	p := &Peer{name: trs[1].name}
	r := trs[0].listening(p)
	for r == peerCheckPending {
		r = trs[0].listening(p)
	}
	if r != peerUnknown {
		t.Errorf("a live udp;ofi_rxd peer: liveness %d, want %d (not asked)", r, peerUnknown)
	}
}

// TestListenerProbeable: which cores' names a TCP connection may ask.
func TestListenerProbeable(t *testing.T) {
	sock := sockName(netip.MustParseAddrPort("127.0.0.1:4242"))
	for _, c := range []struct {
		prov string
		name []byte
		want bool
	}{
		{"tcp;ofi_rxm", sock, true},
		{"tcp", sock, true},
		{"sockets", sock, true},
		{"verbs;ofi_rxm", sock, false},
		{"udp;ofi_rxd", sock, false},
		{"usnic", sock, false},
		{"tcp;ofi_rxm", make([]byte, 8), false},
		{"shm", []byte("fi_shm://1234"), false},
	} {
		if got := ListenerProbeable(c.prov, c.name); got != c.want {
			t.Errorf("ListenerProbeable(%q, %d-byte name) = %v, want %v", c.prov, len(c.name), got, c.want)
		}
	}
}

// TestRefused: the check made right before starting a message held by a
// peer-API core says refused for a closed listening address only; an
// accepted connection and a name that is not a socket address are not.
func TestRefused(t *testing.T) {
	live, gone := listenerPair(t)
	if Refused(sockName(live), time.Second) {
		t.Error("a listening address: refused")
	}
	if !Refused(sockName(gone), time.Second) {
		t.Error("a closed address: not refused")
	}
	if Refused(make([]byte, 8), time.Second) {
		t.Error("a non-IP name: refused")
	}
}

// TestRefusedIPv6: the same over a struct sockaddr_in6 name (::1), where
// the host has IPv6 loopback.
func TestRefusedIPv6(t *testing.T) {
	l, err := net.Listen("tcp6", "[::1]:0")
	if err != nil {
		t.Skipf("no IPv6 loopback: %v", err)
	}
	ap := l.Addr().(*net.TCPAddr).AddrPort()
	name := make([]byte, 28)
	binary.NativeEndian.PutUint16(name, 10)
	binary.BigEndian.PutUint16(name[2:], ap.Port())
	a16 := ap.Addr().As16()
	copy(name[8:], a16[:])
	if Refused(name, time.Second) {
		t.Error("a listening IPv6 address: refused")
	}
	l.Close()
	if !Refused(name, time.Second) {
		t.Error("a closed IPv6 address: not refused")
	}
}

// TestProbeOnCallingThread: a probe is a few system calls on the caller's
// thread. It runs on a rank's receive path right before a queued message
// over the inject size starts; the net package's dial (23-26 allocations,
// the goroutine parked on Go's network poller and another started to
// watch the deadline) took about twice as long there.
func TestProbeOnCallingThread(t *testing.T) {
	live, gone := listenerPair(t)
	for _, c := range []struct {
		what string
		name []byte
	}{{"listening", sockName(live)}, {"closed", sockName(gone)}} {
		if n := testing.AllocsPerRun(20, func() { Refused(c.name, time.Second) }); n > 1 {
			t.Errorf("%s address: %v allocations per probe, want at most 1 (the address)", c.what, n)
		}
	}
}

// TestProbeResets: a probe's connection ends in a reset, which the
// listener's read sees as an error. An orderly close (end-of-file) left
// 2.1 tcp's listener holding the socket for ever: soak_short's workers
// grew by one fd per probe over the peer path.
func TestProbeResets(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	name := sockName(l.Addr().(*net.TCPAddr).AddrPort())
	for _, probe := range []struct {
		what string
		run  func()
	}{
		{"Refused", func() { Refused(name, time.Second) }},
		{"listening", func() {
			tr := &Transport{cfg: Config{PeerTimeout: DefaultPeerTimeout}, prov: "tcp;ofi_rxm"}
			p := &Peer{name: name}
			for r := tr.listening(p); r == peerCheckPending; r = tr.listening(p) {
			}
		}},
	} {
		probe.run()
		c, err := l.Accept()
		if err != nil {
			t.Fatal(err)
		}
		_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
		var b [1]byte
		n, err := c.Read(b[:])
		c.Close()
		if err == nil || err == io.EOF || errors.Is(err, os.ErrDeadlineExceeded) {
			t.Errorf("%s: the listener read %d bytes, %v; want a reset", probe.what, n, err)
		}
	}
}

// TestEagainSparseRefusals: a peer the core refuses on every try, tried
// only every 500 ms (a loaded machine), is declared gone once refused for
// PeerTimeout with nothing heard; a send the core takes restarts the
// count. With a gap of three probe intervals (300 ms) allowed between
// refusals, every one restarted it and the peer's operations waited for
// ever (fault_peer_death_rma_tcp under load).
func TestEagainSparseRefusals(t *testing.T) {
	tr := &Transport{cfg: Config{PeerTimeout: 2 * time.Second, ProbeInterval: 100 * time.Millisecond}}
	p := &Peer{name: make([]byte, 8)} // not an IP address: the timeout decides
	at := func(d time.Duration) { tr.t0 = time.Now().Add(-d) }
	at(time.Minute)
	p.lastHeard = int64(time.Minute - 10*time.Second)
	gone := -1
	for i := 0; i <= 10 && gone < 0; i++ {
		at(time.Minute + time.Duration(i)*500*time.Millisecond)
		if tr.eagain(p) {
			gone = i
		}
	}
	if gone < 4 || gone > 5 {
		t.Fatalf("refused every 500 ms: gone at refusal %d, want the fifth (2 s)", gone)
	}
	if !p.dead {
		t.Fatal("declared gone but not dead")
	}

	// A send taken in between (eagainSince reset, as the send paths do)
	// starts the count again.
	q := &Peer{name: make([]byte, 8)}
	q.lastHeard = p.lastHeard
	for i := 0; i <= 10; i++ {
		at(2*time.Minute + time.Duration(i)*500*time.Millisecond)
		if i == 3 {
			q.eagainSince = 0
		}
		if tr.eagain(q) && i < 7 {
			t.Fatalf("gone at refusal %d, 1.5 s after a send was taken", i)
		}
	}
}
