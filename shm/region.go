package shm

import (
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// shmDir is where POSIX shared memory objects live on Linux (shm_open(3)
// creates its objects there, so a region is also reachable as /name).
const shmDir = "/dev/shm"

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

// createRegion creates, sizes and maps a new region file.
func createRegion(name string, size uint64) ([]byte, error) {
	path := shmDir + "/" + name
	fd, err := unix.Open(path, unix.O_RDWR|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return nil, fmt.Errorf("shm: create %s: %w", path, err)
	}
	defer unix.Close(fd)
	if err := unix.Fchmod(fd, 0o600); err != nil {
		_ = os.Remove(path)
		return nil, fmt.Errorf("shm: chmod %s: %w", path, err)
	}
	if err := unix.Ftruncate(fd, int64(size)); err != nil {
		_ = os.Remove(path)
		return nil, fmt.Errorf("shm: size %s: %w", path, err)
	}
	mem, err := mapGuarded(fd, int(size))
	if err != nil {
		_ = os.Remove(path)
		return nil, fmt.Errorf("shm: map %s: %w", path, err)
	}
	return mem, nil
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

// cleanupStale removes regions left behind by dead processes of our user.
// Best effort: errors are ignored.
func cleanupStale() {
	ents, err := os.ReadDir(shmDir)
	if err != nil {
		return
	}
	self := os.Getpid()
	euid := uint32(os.Geteuid())
	for _, de := range ents {
		name := de.Name()
		pid, ok := parseName(name)
		if !ok || pid == self || !pidDead(pid) {
			continue
		}
		fi, err := os.Lstat(shmDir + "/" + name)
		if err != nil || !fi.Mode().IsRegular() {
			continue
		}
		if st, ok := fi.Sys().(*syscall.Stat_t); !ok || st.Uid != euid {
			continue
		}
		_ = os.Remove(shmDir + "/" + name)
	}
}

// regionName is the /dev/shm name of the region of endpoint id in pid.
func regionName(pid int, id uint64) string {
	return namePrefix + strconv.Itoa(pid) + "-" + fmt.Sprintf("%016x", id)
}
