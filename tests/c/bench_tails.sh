#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
# bench_tails: fi_bench -p (tests/bench/fi_bench.c) prints, after its main
# table, the 50th, 90th and 99th percentiles of the ping-pong's
# per-iteration one-way latency for each case and size. Checks what a
# reader relies on: a row per size, three positive values per case in
# order (p50 <= p90 <= p99), a p50 no larger than 1.5 times the case's
# mean one-way latency from the main table (the percentiles are of the
# same iterations, halved round trips), and ratios that are the case's
# values over the first case's.
#
#   bench_tails.sh FI_BENCH
set -eu
bench=$1
fail() { echo "bench_tails: $*" >&2; exit 1; }
out=$("$bench" -q -r 1 -n 400 -w 50 -s 1,4096 -p shm=shm lnx=lnx) || fail "fi_bench failed"
echo "$out"
echo "$out" | awk '
	/^size .*_lat/ { main = 1; next }
	/^# ping-pong per-iteration/ { main = 0; tail = 1; next }
	/^size .*_p50/ { if (!tail) bad = "tail header before its title"; next }
	/^#/ { next }
	main && NF >= 5 { lat[$1 ",shm"] = $2; lat[$1 ",lnx"] = $4; next }
	tail && NF >= 1 {
		rows++
		if (NF != 10) { bad = "row " $1 ": " NF " fields, want 10"; exit }
		for (k = 0; k < 2; k++) {
			c = k ? "lnx" : "shm"
			p50 = $(2 + 3 * k); p90 = $(3 + 3 * k); p99 = $(4 + 3 * k)
			if (!(p50 > 0 && p50 <= p90 && p90 <= p99)) { bad = "row " $1 " " c ": " p50 " " p90 " " p99 " not ordered"; exit }
			if (!(($1 "," c) in lat) || p50 > 1.5 * lat[$1 "," c]) { bad = "row " $1 " " c ": p50 " p50 " against mean " lat[$1 "," c]; exit }
		}
		for (t = 0; t < 3; t++) {
			want = $(5 + t) / $(2 + t); got = $(8 + t); sub(/x$/, "", got)
			if (got - want > 0.01 || want - got > 0.01) { bad = "row " $1 ": ratio " got " for " want; exit }
		}
	}
	END {
		if (bad) { print bad; exit 1 }
		if (rows != 2) { print "tail rows: " rows ", want 2"; exit 1 }
	}' || fail "tail table wrong"
echo "bench_tails: ok"
