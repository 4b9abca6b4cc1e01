// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only

package lnx

import (
	"bytes"
	"testing"

	"github.com/lnx-go/lnx-go/hmem"
)

func TestIPCDescRoundTrip(t *testing.T) {
	d := ipcDesc{iface: hmem.ROCR, device: 3, size: 1 << 20, offset: 4096, cookie: 77, srcID: 0xfeed,
		handle: bytes.Repeat([]byte{0xab}, 64)}
	b := d.encode()
	got, err := decodeIPC(b)
	if err != nil {
		t.Fatal(err)
	}
	if got.iface != d.iface || got.device != d.device || got.size != d.size || got.offset != d.offset ||
		got.cookie != d.cookie || got.srcID != d.srcID || !bytes.Equal(got.handle, d.handle) {
		t.Fatalf("round trip: %+v, want %+v", got, d)
	}
	for n := 0; n < len(b); n++ {
		if _, err := decodeIPC(b[:n]); err == nil {
			t.Errorf("truncated to %d bytes: accepted", n)
		}
	}
	if _, err := decodeIPC(append(b, 0)); err == nil {
		t.Error("trailing byte accepted")
	}
	host := d
	host.iface = hmem.System
	if _, err := decodeIPC(host.encode()); err == nil {
		t.Error("host iface accepted")
	}
}

// FuzzDecodeIPC: a descriptor comes from another process's shared memory;
// whatever it holds, decoding must not panic, and what it accepts must
// re-encode to the same bytes.
func FuzzDecodeIPC(f *testing.F) {
	f.Add((&ipcDesc{iface: hmem.CUDA, size: 8192, handle: make([]byte, 64)}).encode())
	f.Add([]byte("LI\x01"))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		d, err := decodeIPC(b)
		if err != nil {
			return
		}
		if !bytes.Equal(d.encode(), b) {
			t.Fatalf("accepted %x but re-encodes differently", b)
		}
	})
}
