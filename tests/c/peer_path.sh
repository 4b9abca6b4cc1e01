#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
# peer_path.sh PROGRAM ARGS...: runs PROGRAM (a two-process messaging
# test) with FI_LNX_PEER_API=1 and FI_LNX_DUMP_STATS=1 and checks which
# path the network core took (docs/peer-api.md "Wiring"). Under libfabric
# 2.0 to 2.2 both processes must print the peer API's line, with sends and
# receives on it; elsewhere (1.17) lnx keeps the transport adapter: no
# such line, and the test reports a skip (77) once the program passed.
# PEER_PATH_IN_C (below) asks for receives completed in C as well,
# PEER_PATH_SENT_IN_C for sends made in C, and PEER_PATH_BIG_IN_C for
# sends over the core's inject size made in C.
export FI_LNX_PEER_API=1 FI_LNX_DUMP_STATS=1
out=$("$@" 2>&1)
rc=$?
echo "$out"
[ $rc -eq 0 ] || exit $rc
ver=$(fi_info --version 2>/dev/null | sed -n 's/^libfabric: *\([0-9]*\.[0-9]*\).*/\1/p')
case "$ver" in
2.0 | 2.1 | 2.2)
	n=$(echo "$out" | grep -c 'peer API: sends')
	busy=$(echo "$out" | awk '/peer API: sends/ {
		for (i = 1; i < NF; i++) {
			if ($i == "sends" || $i == "injects" || $i == "arrival" || $i == "unexpected")
				s += $(i + 1)
		}
		if (s > 0) ok++; s = 0 } END { print ok + 0 }')
	echo "peer_path: libfabric $ver: $n peer API lines, $busy with traffic"
	[ "$n" -ge 2 ] && [ "$busy" -ge 2 ] || { echo "peer_path: FAIL: the peer API path was not taken"; exit 1; }
	# PEER_PATH_IN_C=tenth: both processes' core lines must count at
	# least a tenth of their receives completed in lnx's C layer (the
	# peer core lent to C); =N: some line at least N.
	if [ -n "${PEER_PATH_IN_C:-}" ]; then
		echo "$out" | awk -v want="$PEER_PATH_IN_C" '/ core [^ ]*: tx / {
			c = 0; rx = 0
			for (i = 1; i < NF; i++) {
				if ($i == "rx") rx = $(i + 1)
				if ($(i + 1) == "received" && $(i + 2) == "in") c = $i
			}
			n++; if (c * 10 >= rx && rx > 0) q++; if (c > best) best = c }
			END { print "peer_path: " n " core lines, " q + 0 " with a tenth received in C, at most " best + 0
			      exit !(want == "tenth" ? n >= 2 && q == n : best >= want) }' ||
			{ echo "peer_path: FAIL: receives were not completed in C ($PEER_PATH_IN_C)"; exit 1; }
	fi
	# PEER_PATH_SENT_IN_C=tenth: both processes' peer API lines must
	# count at least a tenth of their sends and injects sent by lnx's C
	# layer (", N sent in C": the core lent to C); =N: some line at
	# least N.
	if [ -n "${PEER_PATH_SENT_IN_C:-}" ]; then
		echo "$out" | awk -v want="$PEER_PATH_SENT_IN_C" '/peer API: sends/ {
			c = 0; s = 0
			for (i = 1; i < NF; i++) {
				if ($i == "sends" || $i == "injects") s += $(i + 1)
				if ($(i + 1) == "sent" && $(i + 2) == "in") c = $i
			}
			n++; if (c * 10 >= s && s > 0) q++; if (c > best) best = c }
			END { print "peer_path: " n " peer API lines, " q + 0 " with a tenth sent in C, at most " best + 0
			      exit !(want == "tenth" ? n >= 2 && q == n : best >= want) }' ||
			{ echo "peer_path: FAIL: sends were not sent in C ($PEER_PATH_SENT_IN_C)"; exit 1; }
	fi
	# PEER_PATH_BIG_IN_C=tenth: of each process's sends over the core's
	# inject size (the peer API line's "sends"), at least a tenth must
	# have been sent by lnx's C layer (" (N over the inject size)" after
	# ", M sent in C"), and some process must have sent such.
	if [ -n "${PEER_PATH_BIG_IN_C:-}" ]; then
		echo "$out" | awk '/peer API: sends/ {
			c = 0; s = 0
			for (i = 1; i < NF; i++) {
				if ($i == "sends") s = $(i + 1) + 0
				if ($(i + 1) == "over" && $(i + 2) == "the" && $(i + 3) == "inject") c = substr($i, 2) + 0
			}
			n++; if (c * 10 >= s) q++; if (c > 0) some++ }
			END { print "peer_path: " n " peer API lines, " q + 0 " with a tenth of their sends over the inject size sent in C, " some + 0 " with some"
			      exit !(n >= 2 && q == n && some > 0) }' ||
			{ echo "peer_path: FAIL: sends over the inject size were not sent in C"; exit 1; }
	fi
	;;
*)
	if echo "$out" | grep -q 'peer API: sends'; then
		echo "peer_path: FAIL: libfabric $ver took the peer API path"
		exit 1
	fi
	echo "peer_path: libfabric $ver: the transport adapter (no peer API path here): skip"
	exit 77
	;;
esac
