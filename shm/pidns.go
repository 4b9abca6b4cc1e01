// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only

package shm

import (
	"fmt"
	"sync"

	"golang.org/x/sys/unix"
)

// selfPidNS identifies the PID namespace this process lives in: the inode
// of /proc/self/ns/pid (nsfs, one device for the whole system), or 0 when
// it cannot be read (no /proc). Namespaces do not change under a running
// process (unshare(CLONE_NEWPID) only moves its future children).
var selfPidNS = sync.OnceValue(func() uint64 {
	var st unix.Stat_t
	if err := unix.Stat("/proc/self/ns/pid", &st); err != nil || st.Ino == 0 {
		return 0
	}
	return st.Ino
})

// samePidNS reports whether a peer with namespace id peer shares ours.
// When neither side could read its namespace (no /proc on either side)
// there is nothing to compare and both are taken to be the same, as before
// namespaces were published; one side unknown and the other known means
// different setups, so not the same.
func samePidNS(peer, ours uint64) bool {
	return peer == ours
}

func nsString(ns uint64) string {
	if ns == 0 {
		return "unknown"
	}
	return fmt.Sprintf("pid:[%d]", ns)
}
