#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
# Runs a command inside the Debian 13 root (root.sh) with /proc, /sys,
# /dev/shm and /dev/pts bind-mounted (Open MPI and hwloc need them), the
# source tree read-only at /lnx and build/deb13/out writable at /out.
# Every mount is undone when the command ends, fails or is interrupted.
#
#   enter.sh COMMAND [ARGS...]
set -euo pipefail
# In a mount namespace of its own where there is one to have: the mounts
# then go with the last process in it, also one killed by SIGKILL (which
# runs no trap; a CI run killed that way left /proc, /sys, /dev/shm and
# the tree mounted under build/deb13/root, where a later rm -rf of the
# tree reached into them).
if [ -z "${LNX_ENTER_NS:-}" ] && unshare --mount --propagation private true 2>/dev/null; then
	LNX_ENTER_NS=1 exec unshare --mount --propagation private bash "$0" "$@"
fi
top=$(cd "$(dirname "$0")/../.." && pwd)
root=${DEB13_ROOT:-$top/build/deb13/root}
out=$top/build/deb13/out
[ -f "$root/.lnx-ready" ] || { echo "enter.sh: no Debian 13 root at $root (run root.sh)" >&2; exit 2; }
mkdir -p "$out"

mounted=()
cleanup() {
	local i
	for ((i = ${#mounted[@]} - 1; i >= 0; i--)); do
		umount "${mounted[i]}" 2>/dev/null || umount -l "${mounted[i]}" || true
	done
	mounted=()
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

bind() { # bind SRC DST [ro]
	mkdir -p "$root$2"
	mount --bind "$1" "$root$2"
	mounted+=("$root$2")
	if [ "${3:-}" = ro ]; then
		mount -o remount,bind,ro "$root$2"
	fi
}
bind /proc /proc
bind /sys /sys
bind /dev/shm /dev/shm
bind /dev/pts /dev/pts
bind "$top" /lnx ro
bind "$out" /out

# A clean environment: only what the suite passes on.
chroot "$root" env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
	HOME=/root LANG=C.UTF-8 CI="${CI:-}" ROUNDS="${ROUNDS:-}" "$@"
