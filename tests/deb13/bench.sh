#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
# make bench's Debian 13 section, run inside the root (enter.sh): fi_bench
# built against libfabric 2.1's headers, lnx-go beside libfabric 2.1's own
# shm and tcp;ofi_rxm and beside 2.1's built-in lnx, in one invocation per
# table (cases interleaved round by round; ratios to the first case).
# The built-in runs where FI_PROVIDER_PATH holds no lnx-go; it has no way
# to place two processes of one machine on different nodes, so it appears
# in the same-node table only. Then one-sided operations between two
# simulated nodes (fi_bench -R). Then the MPI-level benchmark
# (tests/mpi/mpi_bench.sh) under Open MPI 5.0.7: ob1 + sm beside lnx-go on
# one node, then between two simulated nodes cm + ofi over tcp;ofi_rxm
# alone, ob1 + btl tcp, and lnx-go (default links) with its transport
# adapter (FI_LNX_PEER_API=0) and with the peer API (=1, the default).
set -eu
mkdir -p /out/bench /out/empty
gcc -O2 -Wall -o /out/bench/fi_bench /lnx/tests/bench/fi_bench.c $(pkg-config --cflags --libs libfabric) -ldl
export FI_PROVIDER_PATH=/lnx/build/lib FI_TCP_IFACE=lo
echo "# Debian 13 (libfabric $(dpkg-query -W -f='${Version}' libfabric1)): same node"
/out/bench/fi_bench -r "${ROUNDS:-5}" -s 1,64,4096,65536,1048576 shm=shm lnx=lnx@shm \
	'lnx_link=lnx@shm+tcp;ofi_rxm:lo' 'builtin=lnx@shm+tcp^FI_PROVIDER_PATH=/out/empty'
echo "# Debian 13: two simulated nodes (lnx over tcp;ofi_rxm) beside tcp;ofi_rxm alone"
/out/bench/fi_bench -r "${ROUNDS:-3}" -s 1,64,4096,65536,1048576 'tcp=tcp;ofi_rxm' \
	'lnx=lnx@shm+tcp;ofi_rxm:lo#bench'
echo "# Debian 13: the peer API path (FI_LNX_PEER_API=1) beside the transport adapter, over fi_shm and tcp;ofi_rxm"
/out/bench/fi_bench -r "${ROUNDS:-3}" -s 1,64,4096,65536,1048576 shm=shm 'adapter=lnx@fi_shm#bench^FI_LNX_PEER_API=0' \
	'peer=lnx@fi_shm#bench^FI_LNX_PEER_API=1'
# 16-128 KiB: rxm sends these by SAR, and lnx turns SAR off on the peer path
# (fi_lnx(7)); peer_sar is the peer path with rxm's default SAR limit set back,
# tcp_as_peer the core alone with the settings the peer path gives it (SAR
# off, lnx's caps, MR mode and inject size): what lnx itself adds. -p adds
# the per-iteration percentiles: where lnx's mean is above the core's, they
# show whether every message or a few are slower.
/out/bench/fi_bench -p -r "${ROUNDS:-3}" -s 1,64,4096,8192,16384,32768,65536,131072,1048576 'tcp=tcp;ofi_rxm' \
	'tcp_as_peer=tcp;ofi_rxm%lnxcore^FI_OFI_RXM_SAR_LIMIT=0' \
	'adapter=lnx@shm+tcp;ofi_rxm:lo#bench^FI_LNX_PEER_API=0' 'peer=lnx@shm+tcp;ofi_rxm:lo#bench^FI_LNX_PEER_API=1' \
	'peer_sar=lnx@shm+tcp;ofi_rxm:lo#bench^FI_LNX_PEER_API=1^FI_OFI_RXM_SAR_LIMIT=131072'
# One-sided operations: lnx completes every write on delivery (fi_lnx(7)),
# so beside the core's default (rxm's write completes once sent) the core
# is also asked for FI_DELIVERY_COMPLETE (%dc), as Open MPI's btl/ofi asks.
echo "# Debian 13: one-sided operations between two simulated nodes: tcp;ofi_rxm alone (default and delivery complete), lnx-go (adapter, peer API)"
/out/bench/fi_bench -R -r "${ROUNDS:-3}" -n 500 -s 8,4096,65536,1048576 'tcp=tcp;ofi_rxm' 'tcp_dc=tcp;ofi_rxm%dc' \
	'adapter=lnx@shm+tcp;ofi_rxm:lo#bench%dc^FI_LNX_PEER_API=0' 'peer=lnx@shm+tcp;ofi_rxm:lo#bench%dc^FI_LNX_PEER_API=1'
echo "# Debian 13: MPI level, Open MPI $(dpkg-query -W -f='${Version}' openmpi-bin): ob1 + sm beside cm + ofi over lnx-go"
mpicc -O2 -Wall -o /out/bench/mpi_bench /lnx/tests/mpi/mpi_bench.c
bash /lnx/tests/mpi/mpi_bench.sh -r "${ROUNDS:-3}" -s 1,64,4k,64k,1m,4m /out/bench/mpi_bench
echo "# Debian 13: MPI level between two simulated nodes: cm + ofi over tcp;ofi_rxm alone, ob1 + btl tcp, lnx-go (adapter, peer API)"
bash /lnx/tests/mpi/mpi_bench.sh -N -r "${ROUNDS:-3}" -t lat,bw -s 1,64,4k,16k,64k,1m \
	-c tcp,ob1_tcp,lnx_nodes_adapter,lnx_nodes_peer /out/bench/mpi_bench
