#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
# Run an MPI one-sided test with Open MPI's osc/rdma over btl/ofi on the
# lnx provider, and check that lnx carried the one-sided traffic.
#
#   run_mpi_osc.sh NP PROGRAM [ARGS...]
#
# Open MPI: pml ob1 with btl self,sm (4.1: vader) for two-sided traffic, btl/ofi in its
# one-sided mode (btl_ofi_mode 0) restricted to lnx, osc rdma. Environment
# as run_mpi.sh: FI_PROVIDER_PATH (required), MPIRUN, MPI_TIMEOUT,
# LNX_INCLUDE (default "lnx"), RANKS_PER_NODE (simulated nodes, simnode.sh).
# OSC_BTL_FULL=1: btl self,ofi with btl_ofi_mode 2 instead, so that ob1's
# messages go through btl/ofi and lnx too (every rank must then also show
# two-sided traffic). btl/ofi's default mode is 0 (one-sided only): with
# "btl self,ofi" and that mode ob1 has no BTL to send to other ranks with,
# and Open MPI 5.0.7 crashes in ob1 at the first such send.
#
# The test fails unless
#   - mpirun exits 0 within the timeout and the program prints "<name>: ok",
#   - every rank's osc/rdma reports "selected btl: ofi" (Open MPI 4.1:
#     that its window was osc/rdma's),
#   - every rank's FI_LNX_DUMP_STATS shows one-sided operations it
#     initiated and ones it executed as a target (lnx moved them), and
#   - with RANKS_PER_NODE, one-sided traffic went over both shm and
#     tcp;ofi_rxm.
set -u

if [ $# -lt 2 ]; then
	echo "usage: $0 NP PROGRAM [ARGS...]" >&2
	exit 2
fi
np=$1 prog=$2
shift 2
name=$(basename "$prog")

if [ -z "${FI_PROVIDER_PATH:-}" ] || [ ! -e "$FI_PROVIDER_PATH/liblnx-fi.so" ]; then
	echo "run_mpi_osc.sh: FI_PROVIDER_PATH must name the directory of liblnx-fi.so" >&2
	exit 2
fi
if [ -z "${MPIRUN:-}" ]; then
	MPIRUN=$(command -v mpirun.openmpi || command -v mpirun)
fi
export FI_PROVIDER_PATH FI_TCP_IFACE=lo

out=$(mktemp "${TMPDIR:-/tmp}/run_mpi_osc.XXXXXX")
trap 'rm -f "$out"' EXIT

ompi_major=$("$MPIRUN" --version 2>&1 | sed -n 's/.*(Open MPI) \([0-9]*\)\..*/\1/p' | head -n 1)
# Open MPI 5 shares one provider filter between the ofi components; 4.1
# has btl/ofi's own.
# has btl/ofi's own, and calls btl/sm vader.
if [ "${ompi_major:-0}" -ge 5 ]; then
	include=(--mca opal_common_ofi_provider_include "${LNX_INCLUDE:-lnx}")
	btls=self,sm,ofi
else
	include=(--mca btl_ofi_provider_include "${LNX_INCLUDE:-lnx}")
	btls=self,vader,ofi
fi
mode=0
if [ -n "${OSC_BTL_FULL:-}" ]; then
	btls=self,ofi
	mode=2
fi
wrap=()
extra=()
if [ -n "${RANKS_PER_NODE:-}" ]; then
	wrap=(sh "$(dirname "$0")/simnode.sh")
	extra+=(-x RANKS_PER_NODE)
fi
cmd=("$MPIRUN" --allow-run-as-root --oversubscribe -np "$np" --bind-to none
	--mca pml ob1 --mca btl "$btls" --mca btl_ofi_mode "$mode" "${include[@]}"
	--mca osc rdma --mca osc_base_verbose 100
	-x FI_PROVIDER_PATH -x FI_TCP_IFACE -x FI_LNX_DUMP_STATS=1 "${extra[@]}"
	"${wrap[@]}" "$prog" "$@")
echo "run_mpi_osc.sh: ${cmd[*]}"
timeout -k 10 "${MPI_TIMEOUT:-120}" "${cmd[@]}" >"$out" 2>&1
rc=$?
tr -d '\000' <"$out" >"$out.txt" && mv "$out.txt" "$out"

fail=
if [ $rc -eq 124 ] || [ $rc -eq 137 ]; then
	fail="mpirun timed out after ${MPI_TIMEOUT:-120}s (rc $rc)"
elif [ $rc -ne 0 ]; then
	fail="mpirun exited with $rc"
fi
if ! grep -aqE "^$name: ok" "$out"; then
	fail="${fail:+$fail; }no '$name: ok' line"
fi
# Open MPI 5's osc/rdma names the BTL it chose; 4.1's says only that its
# window was osc/rdma's (there lnx's stats below show btl/ofi moved the
# data: pml ob1 runs over self and vader, so btl/ofi is lnx's only user).
if [ "${ompi_major:-0}" -ge 5 ]; then
	oscline='selected btl: ofi'
else
	oscline='rdma component destroying window'
fi
nbtl=$(grep -aE "$oscline" "$out" | grep -oE '^\[[^]]*\]' | sort -u | wc -l)
if [ "$nbtl" -ne "$np" ]; then
	fail="${fail:+$fail; }$nbtl of $np ranks report osc/rdma's '$oscline'"
fi
stats=$(grep -aE '^lnx: pid [0-9]+ .* one-sided: ' "$out")
# Per rank (pid): one-sided operations initiated and executed, summed over cores.
nboth=$(echo "$stats" | awk '/one-sided:/ {
		for (i = 1; i <= NF; i++) {
			if ($i == "one-sided:") { ini[$3] += $(i + 1) + $(i + 3) + $(i + 5) }
			if ($i == "executed") { exe[$3] += $(i - 1) }
		}
	} END { n = 0; for (p in ini) if (ini[p] > 0 && exe[p] > 0) n++; print n }')
if [ "$nboth" -ne "$np" ]; then
	fail="${fail:+$fail; }FI_LNX_DUMP_STATS: $nboth of $np ranks both initiated and executed one-sided operations over lnx"
fi
if [ -n "${OSC_BTL_FULL:-}" ]; then
	ntwo=$(echo "$stats" | grep -E ': tx [1-9][0-9]* msgs' | awk '{print $3}' | sort -u | wc -l)
	if [ "$ntwo" -ne "$np" ]; then
		fail="${fail:+$fail; }FI_LNX_DUMP_STATS: $ntwo of $np ranks sent ob1's messages through lnx"
	fi
fi
if [ -n "${RANKS_PER_NODE:-}" ]; then
	echo "$stats" | grep -q ' core shm: ' || fail="${fail:+$fail; }no one-sided traffic over shm"
	echo "$stats" | grep -q ' core tcp;ofi_rxm' || fail="${fail:+$fail; }no one-sided traffic over tcp;ofi_rxm"
fi

if [ -n "$fail" ]; then
	cat "$out"
	echo "run_mpi_osc.sh: FAILED: $fail" >&2
	exit 1
fi
grep -aE "$oscline" "$out" | sed 's/^.*\] //' | sort | uniq -c
echo "$stats"
grep -avE '^\[[^]]*\] |^lnx: ' "$out"
echo "run_mpi_osc.sh: passed ($np ranks: osc/rdma over btl/ofi, one-sided traffic through lnx)"
