// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only

// Package emutest builds the emulated device library (hmem/emu/emu.c) and
// runs the same tests against every hmem runtime loaded from it. Test
// helpers only: cgo is not allowed in _test.go files, so the C parts of
// the tests live here.
package emutest

import (
	"bytes"
	"encoding/hex"
	"errors"
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"unsafe"

	"github.com/lnx-go/lnx-go/hmem/internal/iface"
)

// RT is the method set of hmem.Runtime (emutest cannot import hmem).
type RT interface {
	Name() string
	Available() bool
	Reason() string
	DeviceCount() int
	Classify(ptr uintptr) (kind iface.Iface, device int, ok bool)
	CopyToHost(dst []byte, src uintptr) error
	CopyFromHost(dst uintptr, src []byte) error
	CopyDevice(dst, src uintptr, n uint64) error
	IPCHandle(ptr uintptr) (handle []byte, offset uint64, err error)
	IPCOpen(handle []byte) (base uintptr, err error)
	IPCClose(base uintptr) error
	PinHost(b []byte) error
	UnpinHost(b []byte) error
}

// Target is one runtime package under test.
type Target struct {
	Kind    iface.Iface
	EnvLib  string               // FI_LNX_CUDA_LIB or FI_LNX_ROCM_LIB
	Load    func(path string) RT // a fresh load of the library at path
	FromEnv func() RT            // a fresh load as EnvLib says
	Alloc   func(r RT, n uint64) (uintptr, error)
	Free    func(r RT, p uintptr) error
	// NoIPC is the -D that builds the emulator without this API's IPC
	// entry points, and MissingSym one of them.
	NoIPC, MissingSym string
}

const (
	envChild = "EMUTEST_CHILD" // role of a re-executed test binary
	envEmu   = "EMUTEST_LIB"   // the built emulator, for children
	envIPC   = "EMUTEST_IPC"   // handle:offset:size:seed, hex and decimal
)

var build struct {
	mu   sync.Mutex
	dir  string
	libs map[string]string
	errs map[string]error
}

// Main runs a child role when this binary was re-executed as one, and the
// tests otherwise.
func Main(m *testing.M, tg Target) {
	if role := os.Getenv(envChild); role != "" {
		os.Exit(child(role, tg))
	}
	code := m.Run()
	Cleanup()
	os.Exit(code)
}

// Cleanup removes the emulators Lib built; a TestMain that does not use
// Main calls it after m.Run.
func Cleanup() {
	build.mu.Lock()
	defer build.mu.Unlock()
	if build.dir != "" {
		os.RemoveAll(build.dir)
		build.dir, build.libs, build.errs = "", nil, nil
	}
}

// source finds hmem/emu/emu.c: next to this file's source, else above the
// working directory (a package directory under hmem).
func source() (string, error) {
	if _, f, _, ok := runtime.Caller(0); ok {
		p := filepath.Join(filepath.Dir(f), "..", "..", "emu", "emu.c")
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	dir, _ := os.Getwd()
	for d := dir; ; d = filepath.Dir(d) {
		for _, p := range []string{filepath.Join(d, "emu", "emu.c"), filepath.Join(d, "hmem", "emu", "emu.c")} {
			if _, err := os.Stat(p); err == nil {
				return p, nil
			}
		}
		if filepath.Dir(d) == d {
			return "", fmt.Errorf("emutest: hmem/emu/emu.c not found above %s", dir)
		}
	}
}

// Lib builds the emulator (with the given -D flags) once per test binary
// and returns its path; it skips the test if there is no C compiler.
func Lib(t testing.TB, defines ...string) string {
	t.Helper()
	if !Cgo {
		t.Skip("emutest: built without cgo, libraries cannot be loaded")
	}
	if p := os.Getenv(envEmu); p != "" && len(defines) == 0 {
		return p
	}
	cc := os.Getenv("CC")
	if cc == "" {
		cc = "cc"
	}
	ccPath, err := exec.LookPath(cc)
	if err != nil {
		t.Skipf("emutest: no C compiler (%s): %v", cc, err)
	}
	key := strings.Join(defines, " ")
	build.mu.Lock()
	defer build.mu.Unlock()
	if p, ok := build.libs[key]; ok {
		return p
	}
	if err, ok := build.errs[key]; ok {
		t.Fatal(err)
	}
	if build.libs == nil {
		build.libs = map[string]string{}
		build.errs = map[string]error{}
	}
	if build.dir == "" {
		if build.dir, err = os.MkdirTemp("", "emutest"); err != nil {
			t.Fatal(err)
		}
	}
	src, err := source()
	if err == nil {
		out := filepath.Join(build.dir, fmt.Sprintf("libemu%d.so", len(build.libs)))
		args := append([]string{"-shared", "-fPIC", "-O2", "-Wall", "-o", out, src}, defines...)
		var o []byte
		if o, err = exec.Command(ccPath, args...).CombinedOutput(); err != nil {
			err = fmt.Errorf("emutest: %s %s: %v\n%s", cc, strings.Join(args, " "), err, o)
		} else {
			build.libs[key] = out
			return out
		}
	}
	build.errs[key] = err
	t.Fatal(err)
	return ""
}

// pattern is n bytes from seed.
func pattern(n int, seed int64) []byte {
	b := make([]byte, n)
	rand.New(rand.NewSource(seed)).Read(b)
	return b
}

func hostPtr(b []byte) uintptr { return uintptr(unsafe.Pointer(&b[0])) }

// load loads the emulator at path with EMU_DEVICES=n (n < 0: unset).
func load(t *testing.T, tg Target, path string, ndev int) RT {
	t.Helper()
	if ndev >= 0 {
		t.Setenv("EMU_DEVICES", strconv.Itoa(ndev))
	}
	return tg.Load(path)
}

func mustAvail(t *testing.T, r RT) {
	t.Helper()
	if !r.Available() {
		t.Fatalf("%s: unavailable: %s", r.Name(), r.Reason())
	}
}

// checkUnavailable checks that an unavailable runtime says why and that
// every call fails (or says host) without touching anything.
func checkUnavailable(t *testing.T, r RT, want ...string) {
	t.Helper()
	if r.Available() {
		t.Fatalf("%s: Available() = true, want false", r.Name())
	}
	reason := r.Reason()
	if reason == "" {
		t.Fatalf("%s: unavailable without a Reason", r.Name())
	}
	for _, w := range want {
		if Cgo && !strings.Contains(reason, w) {
			t.Errorf("%s: Reason %q lacks %q", r.Name(), reason, w)
		}
	}
	if n := r.DeviceCount(); n != 0 {
		t.Errorf("DeviceCount() = %d on an unavailable runtime", n)
	}
	buf := make([]byte, 16)
	if k, _, ok := r.Classify(hostPtr(buf)); ok || k != iface.System {
		t.Errorf("Classify = %v, %v; want System, false", k, ok)
	}
	for name, err := range map[string]error{
		"CopyToHost":   r.CopyToHost(buf, 0x1000),
		"CopyFromHost": r.CopyFromHost(0x1000, buf),
		"CopyDevice":   r.CopyDevice(0x1000, 0x2000, 16),
		"IPCClose":     r.IPCClose(0x1000),
	} {
		if !errors.Is(err, iface.ErrUnavailable) {
			t.Errorf("%s on an unavailable runtime: %v, want ErrUnavailable", name, err)
		}
	}
	if _, _, err := r.IPCHandle(0x1000); !errors.Is(err, iface.ErrUnavailable) {
		t.Errorf("IPCHandle: %v", err)
	}
	if _, err := r.IPCOpen(make([]byte, 64)); !errors.Is(err, iface.ErrUnavailable) {
		t.Errorf("IPCOpen: %v", err)
	}
	t.Logf("%s unavailable: %s", r.Name(), reason)
}

// Run runs the emulator tests of tg.
func Run(t *testing.T, tg Target) {
	t.Run("MissingLibrary", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "libnothere.so")
		checkUnavailable(t, tg.Load(path), path)
	})
	t.Run("NotASharedObject", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "libjunk.so")
		os.WriteFile(path, []byte("not an ELF file"), 0o644)
		checkUnavailable(t, tg.Load(path), path)
	})
	t.Run("EnvDisabled", func(t *testing.T) {
		t.Setenv(tg.EnvLib, "none")
		checkUnavailable(t, tg.FromEnv(), tg.EnvLib)
	})
	t.Run("EnvMissing", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "libgone.so")
		t.Setenv(tg.EnvLib, path)
		checkUnavailable(t, tg.FromEnv(), path)
	})
	t.Run("ZeroDevices", func(t *testing.T) {
		lib := Lib(t)
		checkUnavailable(t, load(t, tg, lib, 0))
	})
	t.Run("MissingSymbol", func(t *testing.T) {
		lib := Lib(t, tg.NoIPC)
		checkUnavailable(t, load(t, tg, lib, 1), tg.MissingSym)
	})
	t.Run("EnvSelectsLibrary", func(t *testing.T) {
		lib := Lib(t)
		t.Setenv(tg.EnvLib, lib)
		t.Setenv("EMU_DEVICES", "3")
		r := tg.FromEnv()
		mustAvail(t, r)
		if r.Reason() != "" {
			t.Errorf("available with Reason %q", r.Reason())
		}
		if n := r.DeviceCount(); n != 3 {
			t.Errorf("DeviceCount() = %d, want 3", n)
		}
	})
	t.Run("BadCopies", func(t *testing.T) { testBadCopies(t, tg) })
	runDriverChecks(t, tg, origin{})
}

// runDriverChecks runs the checks that hold for any driver, the emulator
// or a real one.
func runDriverChecks(t *testing.T, tg Target, o origin) {
	t.Run("Classify", func(t *testing.T) { testClassify(t, tg, o) })
	t.Run("RoundTrip1MiB", func(t *testing.T) { testRoundTrip(t, tg, o) })
	t.Run("DeviceToDevice", func(t *testing.T) { testDtoD(t, tg, o) })
	t.Run("CPUAccessFaults", func(t *testing.T) { testFault(t, tg, o) })
	t.Run("IPC", func(t *testing.T) { testIPC(t, tg, o) })
	t.Run("PinHost", func(t *testing.T) { testPinHost(t, tg, o) })
}

// RunReal runs the checks that hold for any driver against the real
// library at path, and skips when it does not load or sees no device (no
// GPU here). The emulator-only checks (device counts, copies past an
// allocation's end, which a driver's 2 MiB granularity may allow) are left
// out; a CPU read of device memory must still kill the reader.
func RunReal(t *testing.T, tg Target, path string) {
	if !Cgo {
		t.Skip("built without cgo")
	}
	r := tg.Load(path)
	if !r.Available() {
		t.Skipf("%s: %s", path, r.Reason())
	}
	t.Logf("%s: %s available with %d devices", path, r.Name(), r.DeviceCount())
	runDriverChecks(t, tg, origin{real: path})
}

// testPinHost: mmap'd host memory pins once (a second pin of the same
// range is refused), copies to and from it carry the data, and it unpins
// once.
func testPinHost(t *testing.T, tg Target, o origin) {
	r := o.open(t, tg, 1)
	mustAvail(t, r)
	const n = 1 << 20
	h, err := syscall.Mmap(-1, 0, n, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_PRIVATE|syscall.MAP_ANON)
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Munmap(h)
	if err := r.PinHost(h); err != nil {
		t.Fatalf("PinHost: %v", err)
	}
	if err := r.PinHost(h); err == nil {
		t.Error("pinning the same range twice succeeded")
	}
	p := alloc(t, tg, r, n)
	copy(h, pattern(n, 5))
	if err := r.CopyFromHost(p, h); err != nil {
		t.Fatal(err)
	}
	clear(h)
	if err := r.CopyToHost(h, p); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(h, pattern(n, 5)) {
		t.Fatal("round trip through pinned memory changed the data")
	}
	if err := r.UnpinHost(h); err != nil {
		t.Fatalf("UnpinHost: %v", err)
	}
	if err := r.UnpinHost(h); err == nil {
		t.Error("unpinning an unpinned range succeeded")
	} else {
		t.Logf("second unpin: %v", err)
	}
}

// origin is where a test's runtime comes from: the emulator built by Lib
// (real == ""), or a real driver library (RunReal).
type origin struct{ real string }

// lib is the library a child process loads.
func (o origin) lib(t *testing.T) string {
	if o.real != "" {
		return o.real
	}
	return Lib(t)
}

// open loads the runtime; ndev is the emulator's device count (a real
// driver has the devices it has).
func (o origin) open(t *testing.T, tg Target, ndev int) RT {
	t.Helper()
	if o.real != "" {
		return tg.Load(o.real)
	}
	return load(t, tg, Lib(t), ndev)
}

func alloc(t *testing.T, tg Target, r RT, n uint64) uintptr {
	t.Helper()
	p, err := tg.Alloc(r, n)
	if err != nil {
		t.Fatalf("Alloc(%d): %v", n, err)
	}
	if p == 0 {
		t.Fatalf("Alloc(%d) = 0", n)
	}
	t.Cleanup(func() {
		if err := tg.Free(r, p); err != nil {
			t.Errorf("Free(%#x): %v", p, err)
		}
	})
	return p
}

func testClassify(t *testing.T, tg Target, o origin) {
	r := o.open(t, tg, 2)
	mustAvail(t, r)
	if n := r.DeviceCount(); o.real == "" && n != 2 {
		t.Fatalf("DeviceCount() = %d, want 2", n)
	}
	p := alloc(t, tg, r, 10000)
	for _, q := range []uintptr{p, p + 1, p + 9999} {
		k, d, ok := r.Classify(q)
		if !ok || k != tg.Kind || d != 0 {
			t.Errorf("Classify(device %#x) = %v, %d, %v; want %v, 0, true", q, k, d, ok, tg.Kind)
		}
	}
	host := make([]byte, 64)
	var stack [8]byte
	hosts := []uintptr{hostPtr(host), uintptr(unsafe.Pointer(&stack[0])), 0}
	if o.real == "" {
		// Past the allocation: a driver may still map it (granularity).
		hosts = append(hosts, p+1<<20)
	}
	for _, q := range hosts {
		if k, _, ok := r.Classify(q); ok || k != iface.System {
			t.Errorf("Classify(host %#x) = %v, %v; want System, false", q, k, ok)
		}
	}
	runtime.KeepAlive(&stack)
}

func testRoundTrip(t *testing.T, tg Target, o origin) {
	r := o.open(t, tg, 1)
	mustAvail(t, r)
	const n = 1 << 20
	p := alloc(t, tg, r, n)
	want := pattern(n, 1)
	if err := r.CopyFromHost(p, want); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, n)
	if err := r.CopyToHost(got, p); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatal("1 MiB host->device->host round trip changed the data")
	}
	// A piece at an odd offset.
	piece := pattern(4097, 2)
	if err := r.CopyFromHost(p+12345, piece); err != nil {
		t.Fatal(err)
	}
	copy(want[12345:], piece)
	if err := r.CopyToHost(got, p); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatal("copy at an offset landed wrong")
	}
	// Zero-length copies succeed and do nothing.
	if err := r.CopyToHost(nil, p); err != nil {
		t.Errorf("empty CopyToHost: %v", err)
	}
	if err := r.CopyFromHost(p, nil); err != nil {
		t.Errorf("empty CopyFromHost: %v", err)
	}
}

func testDtoD(t *testing.T, tg Target, o origin) {
	r := o.open(t, tg, 1)
	mustAvail(t, r)
	const n = 300000
	a := alloc(t, tg, r, n)
	b := alloc(t, tg, r, n)
	want := pattern(n, 3)
	if err := r.CopyFromHost(a, want); err != nil {
		t.Fatal(err)
	}
	if err := r.CopyFromHost(b, make([]byte, n)); err != nil {
		t.Fatal(err)
	}
	if err := r.CopyDevice(b+100, a+200, n-1000); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, n)
	if err := r.CopyToHost(got, b); err != nil {
		t.Fatal(err)
	}
	exp := make([]byte, n)
	copy(exp[100:], want[200:200+n-1000])
	if !bytes.Equal(got, exp) {
		t.Fatal("device->device copy: wrong data")
	}
	if err := r.CopyDevice(b, a, 0); err != nil {
		t.Errorf("empty CopyDevice: %v", err)
	}
}

// testBadCopies: the emulator, like a driver, refuses copies that leave
// the allocation or whose device side is not device memory.
func testBadCopies(t *testing.T, tg Target) {
	r := load(t, tg, Lib(t), 1)
	mustAvail(t, r)
	p := alloc(t, tg, r, 4096)
	host := make([]byte, 8192)
	if err := r.CopyToHost(host, p); err == nil {
		t.Error("CopyToHost past the end of the allocation succeeded")
	}
	if err := r.CopyFromHost(p, host); err == nil {
		t.Error("CopyFromHost past the end of the allocation succeeded")
	}
	other := make([]byte, 64)
	if err := r.CopyToHost(host[:64], hostPtr(other)); err == nil {
		t.Error("CopyToHost from host memory succeeded")
	}
	if err := r.CopyDevice(p, p+4000, 200); err == nil {
		t.Error("CopyDevice past the end succeeded")
	}
	if _, _, err := r.IPCHandle(hostPtr(other)); err == nil {
		t.Error("IPCHandle of host memory succeeded")
	}
}

// runChild re-executes the test binary in role, with env added.
func runChild(t *testing.T, tg Target, o origin, role string, env ...string) (stdout, stderr string, st syscall.WaitStatus) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	lib := o.lib(t)
	cmd.Env = append(os.Environ(), envChild+"="+role, envEmu+"="+lib, tg.EnvLib+"="+lib, "EMU_DEVICES=1")
	cmd.Env = append(cmd.Env, env...)
	var so, se bytes.Buffer
	cmd.Stdout, cmd.Stderr = &so, &se
	err := cmd.Run()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatalf("child %s: %v", role, err)
	}
	st = cmd.ProcessState.Sys().(syscall.WaitStatus)
	return so.String(), se.String(), st
}

func testFault(t *testing.T, tg Target, o origin) {
	for _, off := range []int{0, 5000} {
		out, errOut, st := runChild(t, tg, o, "touch", "EMUTEST_OFF="+strconv.Itoa(off))
		if !st.Signaled() || st.Signal() != syscall.SIGSEGV {
			t.Fatalf("CPU read of device memory (+%d): child exited with %v, want death by SIGSEGV\nstdout:\n%s\nstderr:\n%s", off, st, out, errOut)
		}
		// The child printed the address before touching it; the fault
		// must be a protection fault at exactly that address.
		var addr string
		for _, l := range strings.Split(out, "\n") {
			if a, ok := strings.CutPrefix(l, "touching "); ok {
				addr = a
			}
		}
		// The emulator's pages are PROT_NONE; a driver's device
		// addresses may be unmapped on the CPU side instead.
		code := " code=SEGV_ACCERR"
		if o.real != "" {
			code = " code=SEGV_"
		}
		if addr == "" || !strings.Contains(errOut, "addr="+addr+code) {
			t.Fatalf("fault report does not match: touched %q, stderr:\n%s", addr, errOut)
		}
		t.Logf("child killed by %v: %s", st.Signal(), strings.TrimSpace(errOut))
	}
}

func testIPC(t *testing.T, tg Target, o origin) {
	r := o.open(t, tg, 1)
	mustAvail(t, r)
	const n = 1 << 20
	const off = 8192 + 17
	p := alloc(t, tg, r, n)
	const seed = 42
	data := pattern(n, seed)
	if err := r.CopyFromHost(p, data); err != nil {
		t.Fatal(err)
	}
	h, gotOff, err := r.IPCHandle(p + off)
	if err != nil {
		t.Fatal(err)
	}
	if gotOff != off {
		t.Fatalf("IPCHandle offset = %d, want %d", gotOff, off)
	}
	if len(h) != 64 {
		t.Fatalf("handle of %d bytes", len(h))
	}
	// A process cannot open its own handle (as with the real drivers).
	if b, err := r.IPCOpen(h); err == nil {
		r.IPCClose(b)
		t.Error("IPCOpen of this process's own handle succeeded")
	}
	if _, err := r.IPCOpen(make([]byte, 64)); err == nil {
		t.Error("IPCOpen of a zero handle succeeded")
	}
	arg := fmt.Sprintf("%s:%d:%d:%d", hex.EncodeToString(h), gotOff, n, seed)
	out, errOut, st := runChild(t, tg, o, "ipc", envIPC+"="+arg)
	if !st.Exited() || st.ExitStatus() != 0 || !strings.Contains(out, "IPC OK") {
		t.Fatalf("IPC child: %v\nstdout:\n%s\nstderr:\n%s", st, out, errOut)
	}
	t.Log(strings.TrimSpace(out))
	// The child wrote its mark through its mapping; it is in ours.
	got := make([]byte, 16)
	if err := r.CopyToHost(got, p); err != nil {
		t.Fatal(err)
	}
	if string(got) != "written by child" {
		t.Fatalf("the child's write through IPC is not visible: %q", got)
	}
}

// child runs a role in a re-executed test binary; it returns the exit
// code.
func child(role string, tg Target) int {
	fail := func(f string, a ...any) int {
		fmt.Fprintf(os.Stderr, "child %s: "+f+"\n", append([]any{role}, a...)...)
		return 1
	}
	r := tg.FromEnv()
	if !r.Available() {
		return fail("runtime unavailable: %s", r.Reason())
	}
	switch role {
	case "touch":
		off, _ := strconv.Atoi(os.Getenv("EMUTEST_OFF"))
		p, err := tg.Alloc(r, 1<<16)
		if err != nil {
			return fail("alloc: %v", err)
		}
		if err := r.CopyFromHost(p, pattern(1<<16, 7)); err != nil {
			return fail("copy: %v", err)
		}
		q := p + uintptr(off)
		fmt.Printf("touching %#x\n", q)
		os.Stdout.Sync()
		v := Touch(q)
		fmt.Printf("SURVIVED: read %d from device memory\n", v)
		return 0
	case "ipc":
		f := strings.Split(os.Getenv(envIPC), ":")
		if len(f) != 4 {
			return fail("bad %s", envIPC)
		}
		h, err := hex.DecodeString(f[0])
		off, err1 := strconv.ParseUint(f[1], 10, 64)
		n, err2 := strconv.Atoi(f[2])
		seed, err3 := strconv.ParseInt(f[3], 10, 64)
		if err = errors.Join(err, err1, err2, err3); err != nil {
			return fail("bad %s: %v", envIPC, err)
		}
		base, err := r.IPCOpen(h)
		if err != nil {
			return fail("IPCOpen: %v", err)
		}
		p := base + uintptr(off)
		if k, _, ok := r.Classify(p); !ok || k != tg.Kind {
			return fail("imported pointer classified %v, %v", k, ok)
		}
		got := make([]byte, n-int(off))
		if err := r.CopyToHost(got, p); err != nil {
			return fail("CopyToHost: %v", err)
		}
		want := pattern(n, seed)[off:]
		if !bytes.Equal(got, want) {
			i := 0
			for i < len(got) && got[i] == want[i] {
				i++
			}
			return fail("data differs at offset %d", i)
		}
		if err := r.CopyFromHost(base, []byte("written by child")); err != nil {
			return fail("CopyFromHost: %v", err)
		}
		if err := r.IPCClose(base); err != nil {
			return fail("IPCClose: %v", err)
		}
		if err := r.IPCClose(base); err == nil {
			return fail("second IPCClose succeeded")
		}
		fmt.Printf("IPC OK: %d bytes at offset %d validated in pid %d\n", len(got), off, os.Getpid())
		return 0
	}
	return fail("unknown role")
}
