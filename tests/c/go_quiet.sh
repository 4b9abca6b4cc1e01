#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
# go_quiet.sh PROGRAM ARGS...: runs go_quiet at FI_LOG_LEVEL=info (lnx
# says at each endpoint's close what Go did while it was open; unlike
# FI_LNX_DUMP_STATS, that keeps C's fast paths on, as users run) and reads
# both processes' "Go runtime while open" lines: no garbage collection may
# have run, and Go may have allocated at most GO_QUIET_MAX_BYTES (2 MiB)
# in all. Opening the endpoint and reaching the peer take up to about
# 1 MiB (a network core's transport); the 100,000 messages must add
# less than 10 bytes each.
export FI_LOG_LEVEL=info
dir=$(mktemp -d) || exit 1
trap 'rm -rf "$dir"' EXIT
GO_QUIET_LOGS=$dir/rank "$@"
rc=$?
for f in "$dir"/rank.*; do
	[ -f "$f" ] || continue
	echo "--- ${f##*/}"
	grep -v "^libfabric:.*:\(core\|util\)" "$f"
done
[ $rc -eq 0 ] || exit $rc
cat "$dir"/rank.* | awk -v max="${GO_QUIET_MAX_BYTES:-2097152}" '/Go runtime while open:/ {
	n++
	for (i = 1; i < NF; i++) {
		if ($(i + 1) == "GC" && $(i + 2) == "cycles,") gc = $i
		if ($(i + 1) == "bytes" && $(i + 2) == "allocated") bytes = $i
	}
	if (gc == 0 && bytes <= max) ok++
	else print "go_quiet: FAIL: " gc " GC cycles (want 0), " bytes " bytes allocated (at most " max ")"
} END {
	print "go_quiet: " n + 0 " processes reported, " ok + 0 " quiet"
	exit !(n == 2 && ok == 2)
}'
