#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
# fi_pingpong.sh FI_PINGPONG LINKS same|distinct
#
# Debian's fi_pingpong (libfabric-bin: a program nobody here wrote) as a
# server and a client over lnx RDM endpoints, with its data integrity
# checks (-c), every default size up to 1 MiB. LINKS is FI_LNX_PROV_LINKS
# ("tcp" stands for tcp;ofi_rxm:lo, which ctest's lists cannot pass);
# "distinct" gives the two processes their own FI_LNX_NODE_ID, so lnx
# reaches the peer over its network core. Passes when both exit 0 and each
# printed a result line for 64 bytes and 1 MiB with every message acked.
set -u
pp=$1
links=$2
[ "$links" = tcp ] && links='tcp;ofi_rxm:lo'
nodes=$3
iters=10
tmp=$(mktemp -d)
trap 'kill $srv 2>/dev/null; rm -rf "$tmp"' EXIT INT TERM
export FI_LNX_PROV_LINKS="$links"

# A control port nobody listens on (/proc/net/tcp lists them in hex).
listening() {
	hex=$(printf '%04X' "$1")
	grep -q ":$hex 00000000:0000 0A" /proc/net/tcp /proc/net/tcp6 2>/dev/null
}
port=$((40000 + $$ % 20000))
while listening $port; do port=$((port + 1)); done

srv_node=
cli_node=
if [ "$nodes" = distinct ]; then
	srv_node=pp-server-$$
	cli_node=pp-client-$$
fi

FI_LNX_NODE_ID=$srv_node "$pp" -p lnx -e rdm -c -I $iters -B $port >"$tmp/server" 2>&1 &
srv=$!
# Wait for the server's control socket (it listens before opening lnx).
n=0
until listening $port; do
	if ! kill -0 $srv 2>/dev/null || [ $n -ge 300 ]; then
		echo "fi_pingpong server did not start listening on $port:"
		cat "$tmp/server"
		exit 1
	fi
	n=$((n + 1))
	sleep 0.1
done

FI_LNX_NODE_ID=$cli_node "$pp" -p lnx -e rdm -c -I $iters -P $port 127.0.0.1 >"$tmp/client" 2>&1
crc=$?
wait $srv
src=$?
srv=
echo "--- server (rc $src)"
cat "$tmp/server"
echo "--- client (rc $crc)"
cat "$tmp/client"
[ $src -eq 0 ] && [ $crc -eq 0 ] || { echo "FAIL: fi_pingpong exited $src (server), $crc (client)"; exit 1; }
for f in server client; do
	for size in 64 1m; do
		grep -Eq "^$size +$iters +=$iters " "$tmp/$f" ||
			{ echo "FAIL: $f printed no fully acked $size-byte row"; exit 1; }
	done
done
echo "fi_pingpong ($links, $nodes nodes): ok"
