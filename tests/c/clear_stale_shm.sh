#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
# Removes this user's shared-memory regions in /dev/shm whose creating
# process is gone: libfabric's shm names them "<pid>:<n>:<n>", lnx's own
# shm "lnx-<pid>-<hex>". A test process that dies at a failure leaves its
# region behind, and libfabric 1.17's shm refuses a later endpoint whose
# process got the same pid (fi_endpoint -FI_EBUSY): one failed test would
# fail an unrelated one later. A region whose pid is alive is kept, even
# if the pid is reused by another process.
set -u
n=0
for f in /dev/shm/*; do
	[ -f "$f" ] && [ -O "$f" ] || continue
	b=${f##*/}
	if [[ $b =~ ^([0-9]+):[0-9]+ ]] || [[ $b =~ ^lnx-([0-9]+)- ]]; then
		pid=${BASH_REMATCH[1]}
		if [ ! -d "/proc/$pid" ]; then
			rm -f -- "$f" && n=$((n + 1))
		fi
	fi
done
[ $n -eq 0 ] || echo "clear_stale_shm: removed $n region(s) of processes gone"
exit 0
