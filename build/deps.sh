#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
# Installs what building and testing lnx-go needs on a fresh Debian 12
# machine. Go itself comes from the machine image (/usr/local/go).
# "deps.sh bench" (make bench-deps) adds what make bench needs beyond that:
# gnuplot for its plots.
set -euo pipefail
extra=()
for a in "$@"; do
	case $a in
	bench) extra+=(gnuplot-nox) ;;
	*) echo "deps.sh: unknown set '$a' (known: bench)" >&2; exit 2 ;;
	esac
done
pkgs=(libfabric-dev libfabric1 libfabric-bin cmake pkg-config gcc make openmpi-bin libopenmpi-dev
	libamdhip64-5 # the real ROCm runtime: hmem/rocm checks its symbols (no GPU needed)
	debootstrap   # the Debian 13 root of the libfabric 2.x suite (tests/deb13)
	man-db groff-base  # docs/mangen's test renders the man page with man --warnings
	clang-format)      # make format-check: the C style (.clang-format)
pkgs+=(${extra[@]+"${extra[@]}"})
missing=()
for p in "${pkgs[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
	SUDO=""
	[ "$(id -u)" -eq 0 ] || SUDO=sudo
	$SUDO apt-get update -q
	DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q "${missing[@]}"
fi
command -v go >/dev/null || [ -x /usr/local/go/bin/go ] || {
	echo "deps.sh: Go 1.26 is required (expected at /usr/local/go)" >&2
	exit 1
}
