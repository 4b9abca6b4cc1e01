#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
#
# The device checks on a GPU machine, from the bundle tests/device/bundle.sh
# makes: the hmem/cuda Go tests against the real driver, the device ctest
# programs over libfabric 1.17 and 2.1, and fi_bench on device memory.
# Locally, DEV_LIB=build/ctest/liblnxemu.so runs it on the emulated device.
R=$PWD/.devrun
OUT=${OUT:-/tmp/out}; mkdir -p $OUT
exec > >(tee $OUT/log.txt) 2>&1
echo "== machine"; nvidia-smi -L; nvidia-smi --query-gpu=driver_version --format=csv,noheader; uname -r; head -2 /etc/os-release; ldd --version | head -1
ldconfig -p | grep -E "libcuda.so" | head -3
chmod +x $R/bin/* $R/d13/ld-linux-x86-64.so.2
HOSTLD=$LD_LIBRARY_PATH; echo "LD_LIBRARY_PATH=$HOSTLD"
if [ -z "$DEV_LIB" ]; then
  DEV_LIB=$(ldconfig -p | awk '/libcuda.so.1 /{print $NF; exit}')
  [ -n "$DEV_LIB" ] || DEV_LIB=$(ls /usr/local/nvidia/lib64/libcuda.so.1 /usr/lib/x86_64-linux-gnu/libcuda.so.1 /usr/local/cuda/compat/libcuda.so.1 2>/dev/null | head -1)
fi
echo "driver library: $DEV_LIB"
export FI_TCP_IFACE=lo 'FI_LNX_PROV_LINKS=shm+tcp;ofi_rxm:lo' FI_PROVIDER_PATH=$R/lnx
export FI_LNX_CUDA_LIB=${DEV_LIB:-libcuda.so.1} LNX_TEST_API=cuda LNX_TEST_CUDA_LIB=${DEV_LIB:-libcuda.so.1}
pass=0; fail=0
t() { # name timeout cmd...
  local name=$1 to=$2; shift 2; local s=$(date +%s%N)
  timeout $to "$@" > $OUT/$name.log 2>&1; local rc=$?
  local d=$(( ($(date +%s%N) - s) / 1000000 ))
  if [ $rc = 0 ]; then pass=$((pass+1)); echo "PASS $name (${d} ms)"; else fail=$((fail+1)); echo "FAIL $name rc=$rc (${d} ms)"; tail -15 $OUT/$name.log; fi
}
echo "== Go: hmem/cuda against the real driver"
(cd $R/bin && t gocuda 60 ./cuda.test -test.run 'TestRealCUDA' -test.v); grep -E "available|child killed|IPC OK|---" $OUT/gocuda.log
for v in d12 d13; do
  if [ $v = d12 ]; then L=; export LD_LIBRARY_PATH=$R/d12${HOSTLD:+:$HOSTLD}
  else L="$R/d13/ld-linux-x86-64.so.2 --library-path $R/d13${HOSTLD:+:$HOSTLD}"; export LD_LIBRARY_PATH=$HOSTLD; fi
  echo "== $v: libfabric $($L $R/bin/fi_info --version 2>/dev/null | sed -n 's/^libfabric: //p')"
  t ${v}_hmem_xfer_shm 90 $L $R/bin/hmem_xfer shm
  t ${v}_hmem_xfer_tcp 90 $L $R/bin/hmem_xfer tcp
  t ${v}_hmem_xfer_shm_staged 90 env FI_LNX_HMEM_IPC=0 $L $R/bin/hmem_xfer shm
  t ${v}_rma_dev_shm 90 $L $R/bin/rma_dev shm
  t ${v}_rma_dev_tcp 90 $L $R/bin/rma_dev tcp
  [ $v = d12 ] && t ${v}_fault_peer_death_device 90 $L $R/bin/fault_peer_death device
done
echo "== tests: $pass passed, $fail failed"
export LD_LIBRARY_PATH=$R/d12${HOSTLD:+:$HOSTLD}
echo "== driver floor: 8 B copies alternating between two processes (ctxpp), raw call costs (cudalat)"
$R/bin/ctxpp "$DEV_LIB"; $R/bin/cudalat "$DEV_LIB"
[ -n "$NOBENCH" ] && exit 0
# Without MPS two processes' GPU work is time-sliced: every alternation
# costs a context switch (about 150 us on an H200), which hides what lnx
# itself costs. With MPS both run in one server context.
if command -v nvidia-cuda-mps-control >/dev/null; then
  export CUDA_MPS_PIPE_DIRECTORY=/tmp/mps CUDA_MPS_LOG_DIRECTORY=/tmp/mpslog
  mkdir -p /tmp/mps /tmp/mpslog && nvidia-cuda-mps-control -d && echo "== with MPS" && $R/bin/ctxpp "$DEV_LIB"
fi
# $R/lnxbase, if bundled (BASE_LIB), is the library to compare against.
base() { [ -d $R/lnxbase ] && echo "$1^FI_PROVIDER_PATH=$R/lnxbase"; }
echo "== fi_bench device memory, same node (libfabric 1.17)"
timeout 200 $R/bin/fi_bench -q -r 3 -w 2000 -s 8,65536,1048576,4194304 'host=lnx@shm' 'devipc=lnx@shm%dev' \
  'staged=lnx@shm%dev^FI_LNX_HMEM_IPC=0' $(base 'b_staged=lnx@shm%dev^FI_LNX_HMEM_IPC=0') 2>&1 | tee $OUT/bench_shm.txt
echo "== fi_bench device memory, 2 simulated nodes over tcp;ofi_rxm (libfabric 1.17)"
timeout 200 $R/bin/fi_bench -q -r 3 -w 2000 -s 8,65536,1048576,4194304 'host=lnx@shm+tcp;ofi_rxm:lo#n' \
  'dev=lnx@shm+tcp;ofi_rxm:lo#n%dev' $(base 'b_dev=lnx@shm+tcp;ofi_rxm:lo#n%dev') 2>&1 | tee $OUT/bench_net.txt
command -v nvidia-cuda-mps-control >/dev/null && echo quit | nvidia-cuda-mps-control
exit 0
