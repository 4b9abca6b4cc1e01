#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
# install_pingpong: make install into a temporary DESTDIR, then use only the
# installed copy (FI_PROVIDER_PATH names the installed provider directory):
# its provider version and load message, a two-process tagged ping-pong
# over shm and over tcp;ofi_rxm, the installed man page; then make
# uninstall removes exactly what install put there.
#
#   install_test.sh <source root> <liblnx-fi.so to install> <msg_tagged>
set -eu
src=$1 lib=$2 prog=$3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
prefix=/opt/lnx-go
fail() { echo "install_pingpong: $*" >&2; exit 1; }
step() { echo "install_pingpong: $*"; }
# Run make as a fresh top-level make, not as part of the one running ctest.
mk() { env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make -s -C "$src" LIB="$lib" PREFIX=$prefix "$@"; }
release=$(sed -n 's/^#define LNX_RELEASE \([0-9][0-9]*\)$/\1/p' "$src/capi/include/lnx_version.h")
[ -n "$release" ] || fail "no LNX_RELEASE in capi/include/lnx_version.h"

step "make install DESTDIR=$tmp/root PREFIX=$prefix"
dest=$tmp/root
provdir=$dest$prefix/lib/libfabric
page=$dest$prefix/share/man/man7/fi_lnx.7
mk install DESTDIR="$dest"
(cd "$dest" && find . ! -type d | sort) >"$tmp/files"
printf '%s\n' ".$prefix/lib/libfabric/liblnx-fi.so" ".$prefix/share/man/man7/fi_lnx.7" >"$tmp/want"
cmp -s "$tmp/files" "$tmp/want" || { diff "$tmp/want" "$tmp/files"; fail "installed files differ"; }
cmp -s "$lib" "$provdir/liblnx-fi.so" || fail "installed library is not $lib"

# Nothing but the installed directory: not the build tree's library.
export FI_PROVIDER_PATH="$provdir"
unset FI_LOG_LEVEL FI_LOG_PROV FI_LOG_SUBSYS || :

step "fi_info -l: lnx version 1000.$release"
fi_info -l >"$tmp/list" 2>&1 || { cat "$tmp/list"; fail "fi_info -l failed"; }
grep -A1 '^lnx:$' "$tmp/list" | grep -qx "    version: 1000\.$release" ||
	{ cat "$tmp/list"; fail "lnx is not listed with version 1000.$release"; }

step "FI_LOG_LEVEL=info: load message"
FI_LOG_LEVEL=info fi_info -l >"$tmp/log" 2>&1 || :
grep -E "lnx-go release $release, commit ([0-9a-f]{12}(-dirty)?|unknown): provider version 1000\.$release, libfabric API [0-9]+\.[0-9]+ \(running libfabric [0-9]+\.[0-9]+\)" \
	"$tmp/log" >/dev/null || { grep lnx "$tmp/log"; fail "no load message at FI_LOG_LEVEL=info"; }

for cfg in link tcp; do
	step "ping-pong ($cfg) through the installed library"
	rm -f "$tmp"/ld.*
	LNX_TEST_ONLY=pingpong LD_DEBUG=files LD_DEBUG_OUTPUT="$tmp/ld" "$prog" $cfg >"$tmp/out" 2>&1 ||
		{ cat "$tmp/out"; fail "ping-pong ($cfg) failed"; }
	# ld.so's record of every library loaded, children included: lnx came
	# from the installed directory, and from nowhere else.
	cat "$tmp"/ld.* | grep -o 'file=[^ ]*liblnx-fi\.so' | sort -u >"$tmp/loaded" || :
	[ "$(cat "$tmp/loaded")" = "file=$provdir/liblnx-fi.so" ] ||
		{ cat "$tmp/loaded"; fail "lnx not (only) loaded from $provdir"; }
done

step "man page: renders without warnings, found in its man7 directory"
warn=$(MANWIDTH=80 man --warnings -l "$page" 2>&1 >/dev/null) || fail "man -l failed"
[ -z "$warn" ] || fail "man warnings: $warn"
[ "$(MANPATH=$dest$prefix/share/man man -w 7 fi_lnx)" = "$page" ] || fail "man -w 7 fi_lnx does not find $page"

step "make uninstall"
mk uninstall DESTDIR="$dest"
left=$(cd "$dest" && find . ! -type d)
[ -z "$left" ] || fail "left after uninstall: $left"
[ ! -e "$provdir" ] || fail "empty $provdir left after uninstall"

step "make uninstall keeps what others put in the provider directory"
mkdir -p "$provdir"
echo site >"$provdir/site-notes.txt"
mk install DESTDIR="$dest"
mk uninstall DESTDIR="$dest"
left=$(cd "$dest" && find . ! -type d)
[ "$left" = ".$prefix/lib/libfabric/site-notes.txt" ] || fail "after uninstall: $left"
step ok
