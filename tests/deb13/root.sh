#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
# Makes (or reuses) the Debian 13 "trixie" root the deb13 suite runs in:
# libfabric 2.1 (with its own built-in lnx) and Open MPI 5.0.7 from
# Debian's packages, under build/deb13/root. Nothing outside build/ is
# touched and nothing is mounted here (enter.sh mounts for a run).
#
# Exit status: 0 ready; 77 this machine cannot make it (not root, no
# debootstrap, no Debian mirror): a skip, except under CI=true, where
# it is a failure.
set -euo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
root=${DEB13_ROOT:-$top/build/deb13/root}
mirror=${DEB13_MIRROR:-http://deb.debian.org/debian}
pkgs="libfabric1 libfabric-bin libfabric-dev openmpi-bin libopenmpi-dev gcc libc6-dev make cmake pkg-config man-db"
stamp=$root/.lnx-ready

cannot() {
	echo "deb13: $*" >&2
	if [ "${CI:-}" = true ]; then
		echo "deb13: CI must run the Debian 13 suite; failing" >&2
		exit 1
	fi
	echo "deb13: skipping the Debian 13 suite" >&2
	exit 77
}

# A go.mod makes build/deb13 a module of its own, so that "go vet ./..."
# and "go test ./..." in the repository do not walk the Debian root (nor,
# while a run has it mounted, the source tree again under /lnx).
mkdir -p "$(dirname "$root")"
[ -f "$(dirname "$root")/go.mod" ] || echo "module lnx-go-deb13-root" >"$(dirname "$root")/go.mod"
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$pkgs" ]; then
	echo "deb13: reusing $root ($(chroot "$root" dpkg-query -W -f='libfabric ${Version}' libfabric1 2>/dev/null))"
	exit 0
fi
[ "$(id -u)" -eq 0 ] || cannot "making a Debian root needs root (debootstrap, chroot)"
command -v debootstrap >/dev/null || cannot "debootstrap is not installed (make deps installs it)"
if findmnt -rn -o TARGET | grep -qF "$root/"; then
	cannot "something is still mounted under $root; unmount it first"
fi

tmp=$root.new
rm -rf "$tmp"
echo "deb13: [1/2] debootstrap --variant=minbase trixie (about 30 s)"
if ! debootstrap --variant=minbase trixie "$tmp" "$mirror" >"$tmp.log" 2>&1; then
	tail -n 5 "$tmp.log" >&2
	rm -rf "$tmp"
	cannot "debootstrap from $mirror failed (no network to Debian's mirror?); log: $tmp.log"
fi
cp /etc/resolv.conf "$tmp/etc/resolv.conf" 2>/dev/null || true
echo "deb13: [2/2] apt-get install $pkgs (about 30 s)"
if ! chroot "$tmp" env DEBIAN_FRONTEND=noninteractive PATH=/usr/sbin:/usr/bin:/sbin:/bin \
	sh -c "apt-get update -q && apt-get install -y -q --no-install-recommends $pkgs" >>"$tmp.log" 2>&1; then
	tail -n 5 "$tmp.log" >&2
	cannot "apt-get inside the Debian 13 root failed; log: $tmp.log"
fi
echo "$pkgs" >"$tmp/.lnx-ready"
rm -rf "$root"
mv "$tmp" "$root"
rm -f "$tmp.log"
echo "deb13: $root ready ($(chroot "$root" dpkg-query -W -f='libfabric ${Version}, ' libfabric1)$(chroot "$root" dpkg-query -W -f='Open MPI ${Version}' openmpi-bin))"
