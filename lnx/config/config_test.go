// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only

package config

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/lnx-go/lnx-go/peers/ofi"
)

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestDefaults(t *testing.T) {
	c := Load(env(nil))
	want := &Config{Rails: PerPeer, UnexpectedMax: DefaultUnexpectedMax, PeerTimeout: ofi.DefaultPeerTimeout,
		NetRead: true, NativeRMA: true, PeerAPI: true, CheckSendBuffers: true, FastSend: true, FastRndv: true, FastRecv: true, ArmRecv: true, RearmRecv: true, HmemIPC: true,
		MRCacheMax: DefaultMRCacheMax, WaitSleepMax: DefaultWaitSleepMax}
	if !reflect.DeepEqual(c, want) {
		t.Fatalf("defaults:\n got %+v\nwant %+v", c, want)
	}
}

func TestValues(t *testing.T) {
	c := Load(env(map[string]string{
		Links: " shm+tcp;ofi_rxm ", DisableShm: "yes", NodeID: "n1", MultiRailSelection: "per_msg",
		NetAddrFormat: "inet6", DumpStats: "1", UnexpectedMax: "2m", PeerTimeout: "3s", NetCredits: "0",
		NetRead: "off", NativeRMA: "off", PeerAPI: "off", CheckSendBuffers: "off", FastSend: "0", FastRndv: "off", FastRecv: "no", ArmRecv: "false", RearmRecv: "n", HmemIPC: "0",
		MRCacheMax: "0", CudaLib: "none", RocmLib: "/opt/rocm/lib/libamdhip64.so", WaitSleepMax: "250us",
	}))
	want := &Config{Links: "shm+tcp;ofi_rxm", DisableShm: true, NodeID: "n1", Rails: PerMsg,
		NetAddrFormat: ofi.AddrFormatInet6, DumpStats: true, UnexpectedMax: 2 << 20, PeerTimeout: 3 * time.Second,
		NetCredits: -1, CudaLib: "none", RocmLib: "/opt/rocm/lib/libamdhip64.so", WaitSleepMax: 250 * time.Microsecond}
	if !reflect.DeepEqual(c, want) {
		t.Fatalf("values:\n got %+v\nwant %+v", c, want)
	}
	if c := Load(env(map[string]string{NetCredits: "8"})); c.NetCredits != 8 {
		t.Errorf("NetCredits=8 read as %d", c.NetCredits)
	}
	if c := Load(env(map[string]string{PeerAPI: "1"})); !c.PeerAPI || !c.PeerAPIAsked {
		t.Errorf("PeerAPI=1 read as on %v, asked %v", c.PeerAPI, c.PeerAPIAsked)
	}
}

// Malformed values fall back to the default (with a warning), never fail.
func TestMalformed(t *testing.T) {
	c := Load(env(map[string]string{
		MultiRailSelection: "sideways", NetAddrFormat: "ipx", UnexpectedMax: "lots", PeerTimeout: "-1s",
		NetCredits: "256", MRCacheMax: "99999999999999999999g", WaitSleepMax: "1s",
	}))
	if c.Rails != PerPeer || c.NetAddrFormat != 0 || c.UnexpectedMax != DefaultUnexpectedMax ||
		c.PeerTimeout != ofi.DefaultPeerTimeout || c.NetCredits != 0 || c.MRCacheMax != DefaultMRCacheMax ||
		c.WaitSleepMax != DefaultWaitSleepMax {
		t.Fatalf("malformed values not replaced by defaults: %+v", c)
	}
	if c := Load(env(map[string]string{PeerTimeout: "1ns"})); c.PeerTimeout != MinPeerTimeout {
		t.Errorf("PeerTimeout=1ns read as %v, want %v", c.PeerTimeout, MinPeerTimeout)
	}
}

// Every variable Load reads is in Vars, and every one in Vars is read.
func TestVarsAreWhatLoadReads(t *testing.T) {
	read := map[string]bool{}
	Load(func(k string) string { read[k] = true; return "" })
	listed := map[string]bool{}
	for _, v := range Vars {
		if listed[v.Env] {
			t.Errorf("%s listed twice", v.Env)
		}
		listed[v.Env] = true
		if !strings.HasPrefix(v.Env, "FI_LNX_") || v.Help == "" {
			t.Errorf("%+v: want an FI_LNX_ name and help", v)
		}
		if "FI_LNX_"+strings.ToUpper(v.Param()) != v.Env {
			t.Errorf("%s: parameter name %q does not map back", v.Env, v.Param())
		}
	}
	if !reflect.DeepEqual(read, listed) {
		t.Errorf("Load reads %v, Vars lists %v", read, listed)
	}
}
