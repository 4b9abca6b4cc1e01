#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
# MPI-level benchmark (issue #19): tests/mpi/mpi_bench over Open MPI's own
# intra-node path (pml ob1 + btl vader, called sm in Open MPI 5) beside pml
# cm + mtl ofi over lnx (links shm, and the default links), in one
# invocation, cases interleaved round by round. Prints, per test and size,
# each case's median over the rounds with its spread (min-max) and its
# ratio to the first case's median (ob1 unless -c or -N says otherwise).
# Latency ratios below 1 and bandwidth or rate ratios above 1 favour the
# case over the first.
#
#   mpi_bench.sh [-N] [-r rounds] [-s sizes] [-x scale] [-n ranks] [-c cases] [-t tests] [-b dir] MPI_BENCH
#
# cases: a comma list of ob1, lnx_shm, lnx (default: all three), and with
# -b dir (another build's library directory, to compare two builds in one
# invocation) lnx_shm_base and lnx_base, the same over that library.
# Between two simulated nodes (issue #20; -N makes tcp,ob1_tcp,lnx_nodes
# the default): tcp (pml cm + mtl ofi over tcp;ofi_rxm alone, the network
# core by itself), ob1_tcp (pml ob1 + btl tcp over lo), lnx_nodes (cm + ofi
# over lnx, default links, FI_LNX_NODE_ID set per rank by simnode.sh so that
# rank r and its partner r + n/2 are on different nodes and tcp;ofi_rxm
# carries their traffic; under libfabric 2.0-2.2 through the peer API, the
# default), lnx_nodes_peer (the same with FI_LNX_PEER_API=1),
# lnx_nodes_adapter (FI_LNX_PEER_API=0: lnx's transport adapter),
# lnx_nodes_peer_sar (the peer path with rxm's SAR protocol on,
# FI_OFI_RXM_SAR_LIMIT=131072: lnx keeps it off otherwise) and with
# -b lnx_nodes_base. The
# ranks run on this one machine, so tcp runs over loopback. With 4 ranks
# the two-pair message rate is measured too; -t picks tests of
# lat,bw,bibw,pairs (default all). Environment: FI_PROVIDER_PATH (holds
# liblnx-fi.so; required), MPIRUN, MPI_TIMEOUT (seconds per run, default
# 600), MPI_BENCH_CHECK_CORES=1 (every lnx run also prints lnx's per-core
# counters, FI_LNX_DUMP_STATS, and must show every rank sending over the
# core its case is about: shm on one node, tcp;ofi_rxm between simulated
# nodes (and nothing over shm with 2 ranks), lnx_nodes_peer through the
# peer API, lnx_nodes_adapter not through it; the counters turn C's fast
# send path off, so this proves the paths, for tests, and its figures are
# not lnx's). Every
# lnx run must show Open MPI's ofi MTL on lnx (its verbose provider line),
# and a tcp run on a provider other than lnx, or the script fails. This is
# a benchmark: nothing here judges the figures.
set -u
rounds=3 sizes=1,8,64,512,4k,32k,256k,1m,4m scale=1 np=2 cases= tests=lat,bw,bibw,pairs base= nodes=
while getopts Nr:s:x:n:c:t:b: o; do
	case $o in
	N) nodes=1 ;;
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
bench=${1:?usage: mpi_bench.sh [-N] [-r rounds] [-s sizes] [-x scale] [-n ranks] [-c cases] MPI_BENCH}
if [ -z "$cases" ]; then
	cases=ob1,lnx_shm,lnx
	[ -z "$nodes" ] || cases=tcp,ob1_tcp,lnx_nodes
fi
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
# Two simulated nodes of n/2 ranks each: rank r and its partner r + n/2
# (mpi_bench's pairs) are always on different nodes.
simnode=(sh "$(cd "$(dirname "$0")" && pwd)/simnode.sh")
per_node=$(((np + 1) / 2))
data=$(mktemp "${TMPDIR:-/tmp}/mpi_bench.XXXXXX")
out=$data.out
trap 'rm -f "$data" "$out"' EXIT
# ranks CORE: how many ranks' counters (MPI_BENCH_CHECK_CORES) show sends over CORE.
ranks() { grep -aE "^lnx: pid [0-9]+ .* core $1[^ ]*: tx [1-9]" "$out" | awk '{ print $3 }' | sort -u | wc -l; }
echo "mpi_bench.sh: Open MPI $("$MPIRUN" --version 2>&1 | head -n 1 | grep -o '[0-9][0-9.]*' | head -n 1)," \
	"$np ranks, $rounds rounds, sizes $sizes, cases $cases"
fail=0
for r in $(seq 1 "$rounds"); do
	for c in ${cases//,/ }; do
		lib=$FI_PROVIDER_PATH
		case $c in
		*_base) lib=${base:?mpi_bench.sh: case $c needs -b dir} ;;
		esac
		wrap=() check=shm
		case $c in
		ob1) opts=(--mca pml ob1 --mca btl "self,$sm") env=() check= ;;
		ob1_tcp) opts=(--mca pml ob1 --mca btl self,tcp --mca btl_tcp_if_include lo) env=() check= ;;
		tcp) opts=(--mca pml cm --mca mtl ofi --mca mtl_ofi_provider_include 'tcp;ofi_rxm' "${verbose[@]}")
			env=() check= ;;
		lnx_shm | lnx_shm_base) opts=(--mca pml cm --mca mtl ofi --mca mtl_ofi_provider_include lnx "${verbose[@]}")
			env=(-x FI_LNX_PROV_LINKS=shm) ;;
		lnx | lnx_base) opts=(--mca pml cm --mca mtl ofi --mca mtl_ofi_provider_include lnx "${verbose[@]}")
			env=(-x FI_LNX_PROV_LINKS=) ;;
		lnx_nodes | lnx_nodes_base | lnx_nodes_peer | lnx_nodes_adapter | lnx_nodes_peer_sar)
			opts=(--mca pml cm --mca mtl ofi --mca mtl_ofi_provider_include lnx "${verbose[@]}")
			env=(-x FI_LNX_PROV_LINKS= -x RANKS_PER_NODE="$per_node") wrap=("${simnode[@]}") check=net
			[ "$c" != lnx_nodes_peer ] || env+=(-x FI_LNX_PEER_API=1)
			[ "$c" != lnx_nodes_peer_sar ] || env+=(-x FI_LNX_PEER_API=1 -x FI_OFI_RXM_SAR_LIMIT=131072)
			[ "$c" != lnx_nodes_adapter ] || env+=(-x FI_LNX_PEER_API=0) ;;
		*) echo "mpi_bench.sh: unknown case $c" >&2; exit 2 ;;
		esac
		if [ -n "$check" ] && [ "${MPI_BENCH_CHECK_CORES:-0}" = 1 ]; then
			env+=(-x FI_LNX_DUMP_STATS=1)
		fi
		echo "mpi_bench.sh: round $r/$rounds: $c"
		FI_PROVIDER_PATH=$lib timeout -k 10 "${MPI_TIMEOUT:-600}" "$MPIRUN" --allow-run-as-root --oversubscribe -np "$np" \
			"${bind[@]}" "${opts[@]}" -x FI_PROVIDER_PATH -x FI_TCP_IFACE "${env[@]}" \
			"${wrap[@]}" "$bench" -s "$sizes" -x "$scale" -t "$tests" >"$out" 2>&1
		rc=$?
		tr -d '\000' <"$out" >"$out.t" && mv "$out.t" "$out"
		if [ $rc -ne 0 ] || ! grep -aq '^mpi_bench: ok' "$out"; then
			echo "mpi_bench.sh: $c failed (rc $rc):" >&2
			cat "$out" >&2
			fail=1
			continue
		fi
		# Open MPI 4.1 names the domain (lnx's contains shm, tcp's is the
		# interface), Open MPI 5 the provider (lnx or <cores>:lnx) and then
		# the domain.
		onlnx='mtl:ofi:provider: ([^ ]*shm|([^ ]*:)?lnx *$)'
		case $c in
		ob1 | ob1_tcp) ;;
		tcp)
			if ! grep -aq 'mtl:ofi:provider: ' "$out" || grep -aqE "$onlnx" "$out"; then
				echo "mpi_bench.sh: $c: no provider line, or one naming lnx: Open MPI did not run over tcp;ofi_rxm alone" >&2
				grep -a 'mtl:ofi' "$out" >&2
				fail=1
				continue
			fi ;;
		*)
			if ! grep -aqE "$onlnx" "$out"; then
				echo "mpi_bench.sh: $c: no provider line naming lnx: Open MPI did not run over lnx" >&2
				grep -a 'mtl:ofi' "$out" >&2
				fail=1
				continue
			fi ;;
		esac
		# MPI_BENCH_CHECK_CORES=1: every rank's counters (one line per
		# core, "lnx: pid P link L core C: tx N msgs ...") must show it
		# sending over the case's core, and between simulated nodes of one
		# rank each nothing over shm (with more, shm carries what Open
		# MPI's collectives send inside a node).
		if [ -n "$check" ] && [ "${MPI_BENCH_CHECK_CORES:-0}" = 1 ]; then
			nshm=$(ranks shm) nnet=$(ranks 'tcp;ofi_rxm')
			grep -aE '^lnx: pid [0-9]+ .* (core |peer API: )' "$out"
			if { [ "$check" = shm ] && [ "$nshm" -ne "$np" ]; } ||
				{ [ "$check" = net ] && { [ "$nnet" -ne "$np" ] || { [ "$per_node" = 1 ] && [ "$nshm" -ne 0 ]; }; }; }; then
				echo "mpi_bench.sh: $c: $nshm of $np ranks sent over shm, $nnet over tcp;ofi_rxm" >&2
				fail=1
				continue
			fi
			npeer=$(grep -aE '^lnx: pid [0-9]+ .* peer API: ' "$out" | awk '{ print $3 }' | sort -u | wc -l)
			if { [ "$c" = lnx_nodes_peer ] || [ "$c" = lnx_nodes_peer_sar ]; } && [ "$npeer" -ne "$np" ]; then
				echo "mpi_bench.sh: $c: $npeer of $np ranks drove the core through the peer API" >&2
				fail=1
				continue
			fi
			if [ "$c" = lnx_nodes_adapter ] && [ "$npeer" -ne 0 ]; then
				echo "mpi_bench.sh: $c: $npeer of $np ranks drove the core through the peer API, FI_LNX_PEER_API=0" >&2
				fail=1
				continue
			fi
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
					printf "\n%s (%s): median [min-max], ratio to %s\n", tests[t], unit[tests[t]], all[1]
					printf "%10s", "size"
					for (j = 1; j <= nc; j++) printf "  %-34s", cl[j]
					printf "\n"; hdr = 1
				}
				printf "%10s", f[2]
				for (j = 1; j <= nc; j++) {
					k = cl[j] " " order[i]
					if (!(k in med)) { printf "  %-34s", "-"; continue }
					cell = sprintf("%.4g [%.4g-%.4g]", med[k], lo[k], hi[k])
					b = all[1] " " order[i]
					if (cl[j] != all[1] && (b in med) && med[b] > 0) cell = cell sprintf(" %.2fx", med[k] / med[b])
					printf "  %-34s", cell
				}
				printf "\n"
			}
		}
	}'
exit $fail
