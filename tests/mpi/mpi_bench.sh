#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
# MPI-level benchmark (issue #19): tests/mpi/mpi_bench over Open MPI's own
# intra-node path (pml ob1 + btl vader, called sm in Open MPI 5) beside pml
# cm + mtl ofi over lnx (links shm, and the default links), in one
# invocation, cases interleaved round by round. Prints, per test and size,
# each case's median over the rounds with its spread (min-max) and its
# ratio to ob1's median. Latency ratios below 1 and bandwidth or rate
# ratios above 1 favour lnx.
#
#   mpi_bench.sh [-r rounds] [-s sizes] [-x scale] [-n ranks] [-c cases] [-t tests] [-b dir] MPI_BENCH
#
# cases: a comma list of ob1, lnx_shm, lnx (default: all three), and with
# -b dir (another build's library directory, to compare two builds in one
# invocation) lnx_shm_base and lnx_base, the same over that library. With 4
# ranks the two-pair message rate is measured too; -t picks tests of
# lat,bw,bibw,pairs (default all). Environment:
# FI_PROVIDER_PATH (holds liblnx-fi.so; required), MPIRUN, MPI_TIMEOUT
# (seconds per run, default 600). Every lnx run must show Open MPI's ofi
# MTL on lnx (its verbose provider line) or the script fails. This is a
# benchmark: nothing here judges the figures.
set -u
rounds=3 sizes=1,8,64,512,4k,32k,256k,1m,4m scale=1 np=2 cases=ob1,lnx_shm,lnx tests=lat,bw,bibw,pairs base=
while getopts r:s:x:n:c:t:b: o; do
	case $o in
	r) rounds=$OPTARG ;;
	s) sizes=$OPTARG ;;
	x) scale=$OPTARG ;;
	n) np=$OPTARG ;;
	c) cases=$OPTARG ;;
	t) tests=$OPTARG ;;
	b) base=$OPTARG ;;
	*) exit 2 ;;
	esac
done
shift $((OPTIND - 1))
bench=${1:?usage: mpi_bench.sh [-r rounds] [-s sizes] [-x scale] [-n ranks] [-c cases] MPI_BENCH}
if [ -z "${FI_PROVIDER_PATH:-}" ] || [ ! -e "$FI_PROVIDER_PATH/liblnx-fi.so" ]; then
	echo "mpi_bench.sh: FI_PROVIDER_PATH must hold liblnx-fi.so" >&2
	exit 2
fi
MPIRUN=${MPIRUN:-$(command -v mpirun.openmpi || command -v mpirun)}
major=$("$MPIRUN" --version 2>&1 | sed -n 's/.*(Open MPI) \([0-9]*\)\..*/\1/p' | head -n 1)
if [ "${major:-0}" -ge 5 ]; then
	sm=sm verbose=(--mca opal_common_ofi_verbose 1)
else
	sm=vader verbose=(--mca mtl_base_verbose 100)
fi
bind=(--bind-to core)
if [ "$np" -gt "$(nproc)" ]; then
	bind=(--bind-to none)
fi
export FI_PROVIDER_PATH FI_TCP_IFACE=lo
data=$(mktemp "${TMPDIR:-/tmp}/mpi_bench.XXXXXX")
out=$data.out
trap 'rm -f "$data" "$out"' EXIT
echo "mpi_bench.sh: Open MPI $("$MPIRUN" --version 2>&1 | head -n 1 | grep -o '[0-9][0-9.]*' | head -n 1)," \
	"$np ranks, $rounds rounds, sizes $sizes, cases $cases"
fail=0
for r in $(seq 1 "$rounds"); do
	for c in ${cases//,/ }; do
		lib=$FI_PROVIDER_PATH
		case $c in
		*_base) lib=${base:?mpi_bench.sh: case $c needs -b dir} ;;
		esac
		case $c in
		ob1) opts=(--mca pml ob1 --mca btl "self,$sm") env=() ;;
		lnx_shm | lnx_shm_base) opts=(--mca pml cm --mca mtl ofi --mca mtl_ofi_provider_include lnx "${verbose[@]}")
			env=(-x FI_LNX_PROV_LINKS=shm) ;;
		lnx | lnx_base) opts=(--mca pml cm --mca mtl ofi --mca mtl_ofi_provider_include lnx "${verbose[@]}")
			env=(-x FI_LNX_PROV_LINKS=) ;;
		*) echo "mpi_bench.sh: unknown case $c" >&2; exit 2 ;;
		esac
		echo "mpi_bench.sh: round $r/$rounds: $c"
		FI_PROVIDER_PATH=$lib timeout -k 10 "${MPI_TIMEOUT:-600}" "$MPIRUN" --allow-run-as-root --oversubscribe -np "$np" \
			"${bind[@]}" "${opts[@]}" -x FI_PROVIDER_PATH -x FI_TCP_IFACE "${env[@]}" \
			"$bench" -s "$sizes" -x "$scale" -t "$tests" >"$out" 2>&1
		rc=$?
		tr -d '\000' <"$out" >"$out.t" && mv "$out.t" "$out"
		if [ $rc -ne 0 ] || ! grep -aq '^mpi_bench: ok' "$out"; then
			echo "mpi_bench.sh: $c failed (rc $rc):" >&2
			cat "$out" >&2
			fail=1
			continue
		fi
		if [ "$c" != ob1 ] && ! grep -aqE 'mtl:ofi:provider: ([^ ]*shm|([^ ]*:)?lnx *$)' "$out"; then
			echo "mpi_bench.sh: $c: no provider line naming lnx: Open MPI did not run over lnx" >&2
			grep -a 'mtl:ofi' "$out" >&2
			fail=1
			continue
		fi
		grep -aE '^mpi_bench: (lat|bw|bibw|pairs) ' "$out" |
			awk -v c="$c" '{ print c, $2, $3, $4, ($2 == "bw" ? $5 : "") }' >>"$data"
	done
done

# Medians: sort by case, test, size, value; the middle line of each group.
# bw lines carry the message rate too, reported as test "rate".
awk '{ print $1, $2, $3, $4; if ($2 == "bw") print $1, "rate", $3, $5 }' "$data" |
	sort -k1,1 -k2,2 -k3,3n -k4,4g |
	awk -v cases="$cases" '
	function flush() {
		if (n) { med[key] = (n % 2 ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2); lo[key] = v[1]; hi[key] = v[n] }
		n = 0
	}
	{ k = $1 " " $2 " " $3; if (k != key) { flush(); key = k } v[++n] = $4
	  if (!(($2 " " $3) in seen)) { seen[$2 " " $3] = 1; order[++m] = $2 " " $3 } cs[$1] = 1 }
	END {
		flush()
		split("lat bw rate bibw pairs", tests, " ")
		unit["lat"] = "one-way us"; unit["bw"] = "MB/s"; unit["rate"] = "million msgs/s"
		unit["bibw"] = "MB/s both ways"; unit["pairs"] = "million msgs/s, all pairs"
		nc = 0
		nall = split(cases, all, ",")
		for (j = 1; j <= nall; j++) if (all[j] in cs) cl[++nc] = all[j]
		for (t = 1; t <= 5; t++) {
			hdr = 0
			for (i = 1; i <= m; i++) {
				split(order[i], f, " ")
				if (f[1] != tests[t]) continue
				if (!hdr) {
					printf "\n%s (%s): median [min-max], ratio to ob1\n", tests[t], unit[tests[t]]
					printf "%10s", "size"
					for (j = 1; j <= nc; j++) printf "  %-34s", cl[j]
					printf "\n"; hdr = 1
				}
				printf "%10s", f[2]
				for (j = 1; j <= nc; j++) {
					k = cl[j] " " order[i]
					if (!(k in med)) { printf "  %-34s", "-"; continue }
					cell = sprintf("%.4g [%.4g-%.4g]", med[k], lo[k], hi[k])
					b = "ob1 " order[i]
					if (cl[j] != "ob1" && (b in med) && med[b] > 0) cell = cell sprintf(" %.2fx", med[k] / med[b])
					printf "  %-34s", cell
				}
				printf "\n"
			}
		}
	}'
exit $fail
