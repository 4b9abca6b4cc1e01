// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only

package shm

import "golang.org/x/sys/unix"

// proc tracks the liveness of a peer process. It prefers a pidfd: unlike
// kill(pid, 0) it is immune to pid reuse and reports a killed but not yet
// reaped (zombie) process as dead.
type proc struct {
	pid  int
	fd   int // pidfd, or -1 when unavailable
	dead bool
}

func openProc(pid int) proc {
	p := proc{pid: pid, fd: -1}
	if pid <= 0 {
		p.dead = true
		return p
	}
	fd, err := unix.PidfdOpen(pid, 0)
	switch err {
	case nil:
		p.fd = fd
	case unix.ESRCH:
		p.dead = true
	}
	return p
}

// alive reports whether the process may still be running. It costs one
// system call; callers rate-limit it.
func (p *proc) alive() bool {
	if p.dead {
		return false
	}
	if p.fd >= 0 {
		fds := [1]unix.PollFd{{Fd: int32(p.fd), Events: unix.POLLIN}}
		n, err := unix.Poll(fds[:], 0)
		if err == nil && n > 0 && fds[0].Revents != 0 {
			p.dead = true
		}
	} else if pidDead(p.pid) {
		p.dead = true
	}
	return !p.dead
}

func (p *proc) close() {
	if p.fd >= 0 {
		_ = unix.Close(p.fd)
		p.fd = -1
	}
}
