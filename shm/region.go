// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only

package shm

import (
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"os"
	"strconv"
	"strings"
	"unsafe"

	"golang.org/x/sys/unix"
)

// shmDir is where POSIX shared memory objects live on Linux (shm_open(3)
// creates its objects there, so a region is also reachable as /name).
var shmDir = "/dev/shm" // a variable for tests only

const namePrefix = "lnx-"

// Address blob layout (little endian), 15 bytes so that an lnx address
// with a network core still fits libfabric's FI_NAME_MAX (64), which Open
// MPI uses as its buffer for fi_getname:
//
//	0  "LS"
//	2  version (2)
//	3  owner pid (uint32)
//	7  endpoint id (uint64)
//
// The region name is derived from pid and id (regionName).
const (
	addrMagic   = "LS"
	addrVersion = 2
	addrLen     = 15
)

type addrInfo struct {
	id   uint64
	pid  int
	name string
}

func encodeAddr(id uint64, pid int) []byte {
	b := make([]byte, addrLen)
	copy(b, addrMagic)
	b[2] = addrVersion
	binary.LittleEndian.PutUint32(b[3:], uint32(pid))
	binary.LittleEndian.PutUint64(b[7:], id)
	return b
}

func parseAddr(b []byte) (addrInfo, error) {
	var a addrInfo
	if len(b) != addrLen {
		return a, fmt.Errorf("%w: bad length %d", ErrBadAddr, len(b))
	}
	if string(b[:2]) != addrMagic {
		return a, fmt.Errorf("%w: bad magic", ErrBadAddr)
	}
	if b[2] != addrVersion {
		return a, fmt.Errorf("%w: unsupported version %d", ErrBadAddr, b[2])
	}
	pid := binary.LittleEndian.Uint32(b[3:])
	a.id = binary.LittleEndian.Uint64(b[7:])
	if a.id == 0 || pid == 0 || pid > 1<<30 {
		return a, fmt.Errorf("%w: bad id or pid", ErrBadAddr)
	}
	a.pid = int(pid)
	a.name = regionName(a.pid, a.id)
	return a, nil
}

// parseName checks that name is "lnx-<pid>-<16 lowercase hex>" and returns
// the pid.
func parseName(name string) (int, bool) {
	rest, ok := strings.CutPrefix(name, namePrefix)
	if !ok {
		return 0, false
	}
	ps, hex, ok := strings.Cut(rest, "-")
	if !ok || len(ps) == 0 || len(ps) > 10 || len(hex) != 16 {
		return 0, false
	}
	pid := 0
	for i := 0; i < len(ps); i++ {
		c := ps[i]
		if c < '0' || c > '9' || (i == 0 && c == '0') {
			return 0, false
		}
		pid = pid*10 + int(c-'0')
	}
	for i := 0; i < len(hex); i++ {
		c := hex[i]
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return 0, false
		}
	}
	if pid <= 0 || pid > 1<<30 {
		return 0, false
	}
	return pid, true
}

func randUint64() uint64 {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic("shm: crypto/rand failed: " + err.Error())
	}
	return binary.LittleEndian.Uint64(b[:])
}

// createRegion creates, locks, sizes and maps a new region file. The
// returned fd stays open for the endpoint's lifetime: it holds an OFD write
// lock on the file, which is how other processes (in any PID namespace
// sharing this /dev/shm) tell a live region from a stale one.
func createRegion(name string, geo geometry) ([]byte, int, error) {
	size := geo.total
	path := shmDir + "/" + name
	fd, err := unix.Open(path, unix.O_RDWR|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return nil, -1, fmt.Errorf("shm: create %s: %w", path, err)
	}
	fail := func(what string, err error) ([]byte, int, error) {
		_ = os.Remove(path)
		_ = unix.Close(fd)
		return nil, -1, fmt.Errorf("shm: %s %s: %w", what, path, err)
	}
	if err := unix.Fchmod(fd, 0o600); err != nil {
		return fail("chmod", err)
	}
	if ok, err := lockRegion(fd); err != nil || !ok {
		// A cleaner holds the lock of our brand-new file (and unlinks
		// it only if it takes it for a dead process's): the file is
		// ours, remove it and start again under another name.
		if err == nil {
			err = unix.EEXIST
		}
		return fail("lock", err)
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return fail("stat", err)
	}
	if st.Nlink == 0 {
		// A cleaner took the lock between our create and our lock, and
		// unlinked the file before releasing it.
		_ = unix.Close(fd)
		return nil, -1, fmt.Errorf("shm: %s was removed while created: %w", path, unix.EEXIST)
	}
	// Allocate the pages now: a region sized by ftruncate alone is
	// sparse, and when /dev/shm (a tmpfs, often 64 MiB in a container)
	// cannot back a page touched later, the access raises SIGBUS, in our
	// process or in a peer writing into our rings. fallocate makes a full
	// /dev/shm an error here (ENOSPC) instead. Everything a peer may write
	// at any time (header, control blocks, ack and forward rings) is
	// allocated; the bulk windows, three quarters of a default region and
	// used only by the fallback copy, are allocated when a Pull first
	// needs one (allocBulk), which then fails cleanly instead.
	if err := unix.Ftruncate(fd, int64(size)); err != nil {
		return fail("size", err)
	}
	if err := fallocate(fd, 0, int64(geo.dataOff)); err != nil {
		return fail(fmt.Sprintf("allocate %d bytes for", geo.dataOff), err)
	}
	for i := uint64(0); i < geo.nrings; i++ {
		if err := fallocate(fd, int64(geo.dataOff+i*geo.dataStride), int64(geo.bulkOff)); err != nil {
			return fail(fmt.Sprintf("allocate ring %d of", i), err)
		}
	}
	mem, err := mapGuarded(fd, int(size))
	if err != nil {
		return fail("map", err)
	}
	return mem, fd, nil
}

// lockRegion takes a non-blocking OFD write lock on the whole file. It
// reports false (and no error) when another open file description holds a
// lock on it. OFD locks belong to the open file, not to a pid, so they work
// across PID namespaces and are released by the kernel when the owner
// exits, however it exits.
func lockRegion(fd int) (bool, error) {
	lk := unix.Flock_t{Type: unix.F_WRLCK, Whence: 0, Start: 0, Len: 0}
	for {
		err := unix.FcntlFlock(uintptr(fd), unix.F_OFD_SETLK, &lk)
		switch err {
		case nil:
			return true, nil
		case unix.EINTR:
			continue
		case unix.EAGAIN, unix.EACCES:
			return false, nil
		}
		return false, err
	}
}

// fallocate allocates len bytes at off of fd's file (already sized),
// retrying on EINTR (tmpfs can be interrupted while allocating). A file
// system without fallocate (not a tmpfs) keeps the old sparse sizing.
func fallocate(fd int, off, len int64) error {
	for {
		err := unix.Fallocate(fd, 0, off, len)
		if err == unix.EOPNOTSUPP {
			return nil
		}
		if err != unix.EINTR {
			return err
		}
	}
}

// openRegion maps an existing region read-write after basic file checks.
func openRegion(name string) ([]byte, error) {
	path := shmDir + "/" + name
	fd, err := unix.Open(path, unix.O_RDWR|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		if err == unix.ENOENT {
			return nil, fmt.Errorf("%w: %s: %v", ErrPeerGone, path, err)
		}
		return nil, fmt.Errorf("%w: open %s: %v", ErrBadAddr, path, err)
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return nil, fmt.Errorf("%w: stat %s: %v", ErrBadAddr, path, err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG || st.Size < hdrBytes || st.Size > maxRegion {
		return nil, fmt.Errorf("%w: %s is not a region", ErrBadAddr, path)
	}
	mem, err := mapGuarded(fd, int(st.Size))
	if err != nil {
		return nil, fmt.Errorf("%w: map %s: %v", ErrBadAddr, path, err)
	}
	return mem, nil
}

// validateHdr checks a mapped peer region against the address it was
// reached by and returns its geometry.
func validateHdr(mem []byte, a addrInfo) (geometry, error) {
	h := (*regionHdr)(unsafe.Pointer(&mem[0]))
	// Copy every field once; the peer may change them underneath us.
	magic := h.magic
	version := h.version
	pid := h.pid
	id := h.id
	nr, rb, ae, bb, em := uint64(h.nrings), uint64(h.ringBytes), uint64(h.ackEntries), uint64(h.bulkBytes), uint64(h.eagerMax)
	total := h.total
	if magic != regionMagic || version != regionVersion {
		return geometry{}, fmt.Errorf("%w: %s: bad magic/version", ErrBadAddr, a.name)
	}
	if id != a.id || pid != uint64(a.pid) {
		return geometry{}, fmt.Errorf("%w: %s: id/pid mismatch", ErrBadAddr, a.name)
	}
	g, ok := makeGeometry(nr, rb, ae, bb, em)
	if !ok || g.total != total || g.total != uint64(len(mem)) {
		return geometry{}, fmt.Errorf("%w: %s: bad geometry", ErrBadAddr, a.name)
	}
	return g, nil
}

// pidDead reports whether pid certainly no longer exists.
func pidDead(pid int) bool {
	return pid > 0 && unix.Kill(pid, 0) == unix.ESRCH
}

// cleanupStale removes regions of our user whose owner is gone. Best
// effort: errors are ignored.
//
// Liveness is proven by the owner's OFD lock (createRegion), never by the
// pid in the name: that pid means nothing in another PID namespace sharing
// this /dev/shm (two containers of one pod), where it may name no process
// (a live region would be deleted) or an unrelated one (a stale region
// would stay forever). A region whose lock we can take, and whose header
// says its owner held one (hdrLocked), has no owner; we unlink it while
// holding the lock, and a creator racing with us sees its file unlinked
// once it gets the lock (createRegion) and starts again. A region without
// that bit (an older lnx-go, which takes no lock, or a creator that died
// before writing its header) falls back to the pid test.
func cleanupStale() {
	ents, err := os.ReadDir(shmDir)
	if err != nil {
		return
	}
	euid := uint32(os.Geteuid())
	for _, de := range ents {
		name := de.Name()
		pid, ok := parseName(name)
		if !ok {
			continue
		}
		path := shmDir + "/" + name
		fd, err := unix.Open(path, unix.O_RDWR|unix.O_NOFOLLOW|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
		if err != nil {
			continue
		}
		var st unix.Stat_t
		if unix.Fstat(fd, &st) == nil && st.Mode&unix.S_IFMT == unix.S_IFREG && st.Uid == euid {
			if ok, err := lockRegion(fd); ok && err == nil && (lockedRegion(fd) || pidDead(pid)) {
				_ = unix.Unlink(path)
			}
		}
		_ = unix.Close(fd)
	}
}

// lockedRegion reports whether the region file's header says its owner
// holds the OFD lock while alive.
func lockedRegion(fd int) bool {
	var b [16]byte
	n, err := unix.Pread(fd, b[:], 0)
	return err == nil && n == len(b) && binary.LittleEndian.Uint64(b[0:]) == regionMagic &&
		binary.LittleEndian.Uint32(b[12:])&hdrLocked != 0
}

// regionName is the /dev/shm name of the region of endpoint id in pid.
func regionName(pid int, id uint64) string {
	return namePrefix + strconv.Itoa(pid) + "-" + fmt.Sprintf("%016x", id)
}
