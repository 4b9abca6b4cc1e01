#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
# under_load.sh RUNS PROGRAM ARGS...: runs PROGRAM RUNS times while two
# busy loops take the CPUs (this machine's two), and fails at the first
# run that fails, printing its output. A scheduler that delays one of a
# process's threads or connections is how some orderings show up: the
# revoke case of rma over tcp lost 18 of 25 runs this way before lnx held
# its messages behind the revoke's answer.
runs=$1
shift
sh -c 'while :; do :; done' &
b1=$!
sh -c 'while :; do :; done' &
b2=$!
trap 'kill $b1 $b2 2>/dev/null' EXIT
i=1
while [ "$i" -le "$runs" ]; do
	out=$("$@" 2>&1)
	rc=$?
	if [ $rc -ne 0 ]; then
		echo "$out"
		echo "under_load: run $i of $runs failed (exit $rc)"
		exit $rc
	fi
	i=$((i + 1))
done
echo "under_load: $runs runs passed"
