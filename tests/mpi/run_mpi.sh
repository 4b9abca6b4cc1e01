#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
# Run one MPI acceptance test over the lnx provider and check that lnx was
# really used.
#
#   run_mpi.sh NP AV PROGRAM [ARGS...]
#
# NP: number of ranks; AV: Open MPI's mtl_ofi_av (map or table); PROGRAM:
# an MPI program built from tests/mpi (it prints "<name>: ok" on success).
# Environment: FI_PROVIDER_PATH (directory holding liblnx-fi.so, required),
# MPIRUN (default: mpirun.openmpi if present, else mpirun), MPI_TIMEOUT
# (seconds, default 120), LNX_INCLUDE (Open MPI's mtl_ofi_provider_include,
# default "lnx"; e.g. "shm+tcp;ofi_rxm:lnx", the libfabric 2.x spelling),
# LNX_BUILTIN=1 (run over libfabric's own built-in lnx for comparison:
# FI_PROVIDER_PATH need not hold liblnx-fi.so, FI_LNX_PROV_LINKS is passed
# on).
#
# The test fails unless
#   - mpirun exits 0 within the timeout,
#   - Open MPI's verbose output shows every rank on lnx: Open MPI 4.1
#     prints "mtl:ofi:provider: <domain>", which must contain "shm" (lnx's
#     link domain, e.g. "shm+tcp;ofi_rxm:lo"; no other provider has one);
#     Open MPI 5 prints "mtl:ofi:provider: <name>", which must be "lnx" or
#     end in ":lnx", then "mtl:ofi:provider:domain: <domain>" with "shm";
#     i.e. the ofi MTL ran over lnx, not a fallback, and
#   - the program printed its success line.
set -u

if [ $# -lt 3 ]; then
	echo "usage: $0 NP AV PROGRAM [ARGS...]" >&2
	exit 2
fi
np=$1 av=$2 prog=$3
shift 3
name=$(basename "$prog")

if [ -z "${FI_PROVIDER_PATH:-}" ]; then
	echo "run_mpi.sh: FI_PROVIDER_PATH is not set" >&2
	exit 2
fi
if [ -z "${LNX_BUILTIN:-}" ] && [ ! -e "$FI_PROVIDER_PATH/liblnx-fi.so" ]; then
	echo "run_mpi.sh: $FI_PROVIDER_PATH/liblnx-fi.so does not exist (run make lib)" >&2
	exit 2
fi
if [ -z "${MPIRUN:-}" ]; then
	MPIRUN=$(command -v mpirun.openmpi || command -v mpirun)
fi
export FI_PROVIDER_PATH
# Keep all traffic on loopback.
export FI_TCP_IFACE=lo

out=$(mktemp "${TMPDIR:-/tmp}/run_mpi.XXXXXX")
trap 'rm -f "$out"' EXIT

# RANKS_PER_NODE=k: simulate nodes of k ranks (see simnode.sh) and require,
# from lnx's FI_LNX_DUMP_STATS lines, that every rank moved traffic over
# both shm and the network core.
wrap=()
extra=()
if [ -n "${LNX_BUILTIN:-}" ]; then
	extra+=(-x FI_LNX_PROV_LINKS)
fi
# Open MPI 5 prints the chosen provider on common/ofi's verbose stream.
ompi_major=$("$MPIRUN" --version 2>&1 | sed -n 's/.*(Open MPI) \([0-9]*\)\..*/\1/p' | head -n 1)
if [ "${ompi_major:-0}" -ge 5 ]; then
	extra+=(--mca opal_common_ofi_verbose 1)
fi
if [ -n "${RANKS_PER_NODE:-}" ]; then
	wrap=(sh "$(dirname "$0")/simnode.sh")
	extra+=(-x RANKS_PER_NODE -x FI_LNX_DUMP_STATS=1)
fi
cmd=("$MPIRUN" --allow-run-as-root --oversubscribe -np "$np"
	--mca pml cm --mca mtl ofi --mca mtl_ofi_provider_include "${LNX_INCLUDE:-lnx}"
	--mca mtl_base_verbose 100 --mca mtl_ofi_av "$av"
	--mca btl self --bind-to none
	-x FI_PROVIDER_PATH -x FI_TCP_IFACE=lo "${extra[@]}"
	"${wrap[@]}" "$prog" "$@")
echo "run_mpi.sh: ${cmd[*]}"
start=$(date +%s.%N)
timeout -k 10 "${MPI_TIMEOUT:-120}" "${cmd[@]}" >"$out" 2>&1
rc=$?
end=$(date +%s.%N)
# Open MPI 5 sometimes starts a forwarded line with a NUL byte.
tr -d '\000' <"$out" >"$out.txt" && mv "$out.txt" "$out"

fail=
if [ $rc -eq 124 ] || [ $rc -eq 137 ]; then
	fail="mpirun timed out after ${MPI_TIMEOUT:-120}s (rc $rc)"
elif [ $rc -ne 0 ]; then
	fail="mpirun exited with $rc"
fi
# Every rank prints the provider line(s), prefixed "[host:pid]"; every rank
# must name an lnx (shm...) domain and none another provider.
if [ "${ompi_major:-0}" -ge 5 ]; then
	ondomain='mtl:ofi:provider:domain: [^ ]*shm'
	nother=$(grep -aE 'mtl:ofi:provider: ' "$out" | grep -vcE 'mtl:ofi:provider: ([^ ]*:)?lnx *$')
else
	ondomain='mtl:ofi:provider: [^ ]*shm'
	nother=$(grep -aE 'mtl:ofi:provider: ' "$out" | grep -vcE 'mtl:ofi:provider: [^ ]*shm')
fi
nprov=$(grep -aE "$ondomain" "$out" | grep -oE '^\[[^]]*\]' | sort -u | wc -l)
if [ "$nprov" -eq 0 ]; then
	fail="${fail:+$fail; }no 'mtl:ofi:provider: <shm... domain>' line: lnx was not selected"
elif [ "$nprov" -ne "$np" ]; then
	fail="${fail:+$fail; }only $nprov of $np ranks reported an lnx (shm...) domain"
fi
if [ "$nother" -ne 0 ]; then
	fail="${fail:+$fail; }$nother provider line(s) name a provider other than lnx"
fi
if [ -n "${RANKS_PER_NODE:-}" ]; then
	nshm=$(grep -aE '^lnx: pid [0-9]+ .* core shm: tx [1-9]' "$out" | awk '{print $3}' | sort -u | wc -l)
	nnet=$(grep -aE '^lnx: pid [0-9]+ .* core tcp;ofi_rxm[^ ]*: tx [1-9]' "$out" | awk '{print $3}' | sort -u | wc -l)
	if [ "$nshm" -ne "$np" ] || [ "$nnet" -ne "$np" ]; then
		fail="${fail:+$fail; }per-core stats: $nshm of $np ranks sent over shm, $nnet over tcp;ofi_rxm"
	fi
	grep -aE '^lnx: pid' "$out"
fi
if ! grep -aqE "^$name: ok" "$out"; then
	fail="${fail:+$fail; }no '$name: ok' line"
fi

# Show the program's own output and the provider lines, not Open MPI's
# component chatter (all of it on failure).
if [ -n "$fail" ]; then
	cat "$out"
else
	grep -aE 'mtl:ofi:provider(:domain)?: ' "$out" | sed 's/^.*mtl:ofi:provider/mtl:ofi:provider/' | sort | uniq -c
	grep -avE '^\[[^]]*\] ' "$out"
fi
awk -v n="$name" -v np="$np" -v av="$av" -v s="$start" -v e="$end" \
	'BEGIN { printf "run_mpi.sh: %s np=%s av=%s: %.1fs\n", n, np, av, e - s }'
if [ -n "$fail" ]; then
	echo "run_mpi.sh: FAILED: $fail" >&2
	exit 1
fi
echo "run_mpi.sh: passed ($nprov ranks on lnx)"
