#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
#
# Packs what the device checks need into .devrun/ (git-ignored through
# .git/info/exclude) for a GPU machine that has a CUDA driver but no
# libfabric: liblnx-fi.so, the device ctest programs, fi_bench, the
# hmem/cuda Go test binary, Debian 12's libfabric 1.17 with its libraries,
# and Debian 13's libfabric 2.1 with its own glibc and loader (run through
# that loader, so the machine's glibc does not matter); with BASE_LIB=dir,
# a second liblnx-fi.so to benchmark against. Needs `make ctest`,
# `make bench-deps` (fi_bench) and the Debian 13 root (`make deb13`) first.
set -euo pipefail
cd "$(dirname "$0")/../.."
R=.devrun
rm -rf $R && mkdir -p $R/d12 $R/d13 $R/lnx $R/bin
grep -qx '/.devrun/' .git/info/exclude 2>/dev/null || { mkdir -p .git/info; echo '/.devrun/' >>.git/info/exclude; }
cp build/lib/liblnx-fi.so $R/lnx/
if [ -n "${BASE_LIB:-}" ]; then mkdir -p $R/lnxbase && cp "$BASE_LIB/liblnx-fi.so" $R/lnxbase/; fi
for b in hmem_xfer rma_dev fault_peer_death; do cp build/ctest/$b $R/bin/; done
cp build/bench/fi_bench /usr/bin/fi_info $R/bin/
go test -c -o $R/bin/cuda.test ./hmem/cuda
for c in cudalat ctxpp; do gcc -O2 -o $R/bin/$c tests/device/$c.c -ldl; done
cp tests/device/run.sh $R/

for l in $(ldd build/ctest/hmem_xfer build/lib/liblnx-fi.so /usr/bin/fi_info | awk '/=>/{print $3}' | sort -u); do
	case $(basename "$l") in libc.so.6 | libm.so.6 | ld-linux* | libpthread* | libdl*) ;; *) cp -L "$l" $R/d12/ ;; esac
done
# Debian 13: libfabric's closure inside the root, glibc and loader included.
root=build/deb13/root
want="libfabric.so.1 libc.so.6 libm.so.6 ld-linux-x86-64.so.2 libatomic.so.1 libuuid.so.1" seen=" "
while [ -n "${want// /}" ]; do
	set -- $want; n=$1; shift; want="$*"
	case "$seen" in *" $n "*) continue ;; esac
	seen="$seen$n "
	f=$(ls $root/usr/lib/x86_64-linux-gnu/$n $root/lib/x86_64-linux-gnu/$n $root/lib64/$n 2>/dev/null | head -1 || true)
	[ -n "$f" ] || { echo "bundle: $n not in $root" >&2; exit 1; }
	cp -L "$f" $R/d13/
	want="$want $(readelf -d "$f" | sed -n 's/.*NEEDED.*\[\(.*\)\]/\1/p' | tr '\n' ' ')"
done
du -sh $R
