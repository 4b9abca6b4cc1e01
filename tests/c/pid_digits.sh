#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
# pid_digits.sh PROGRAM ARGS...: runs PROGRAM in a new PID namespace
# whose next pids are 9 and 10, so that the two ranks of its first case
# have pids of different digit counts. libfabric 1.17's shm names an
# endpoint "<pid>:<n>:<n>", so its address length follows the pid: lnx's
# transport adapter refused a peer whose name was longer or shorter than
# its own (fi_tsend -FI_EHOSTUNREACH), and any fi_shm test whose ranks
# straddled 999/1000 or 9999/10000 failed at random. Exits 77 (skipped)
# where this process may not make a PID namespace or set its next pid.
unshare --pid --fork sh -c 'echo 8 > /proc/sys/kernel/ns_last_pid' 2>/dev/null || {
	echo "pid_digits: cannot make a PID namespace and set its next pid here (unshare --pid, ns_last_pid); skipped"
	exit 77
}
# Regions a failed run left under the pids the ranks get again: libfabric
# 1.17's shm refuses to reopen them (fi_endpoint -FI_EBUSY). The host's
# pids 9 and 10 (kernel threads here) are checked to map none of them.
for pid in 9 10; do
	for f in /dev/shm/"$pid":*; do
		[ -f "$f" ] && [ -O "$f" ] || continue
		grep -qF "$f" "/proc/$pid/maps" 2>/dev/null || rm -f -- "$f"
	done
done
# exec keeps the program at pid 1, so its first two children are 9, 10.
# ns_last_pid sets the writer's own PID namespace: no /proc of its own
# is needed (which a chroot could not mount).
exec unshare --pid --fork sh -c 'echo 8 > /proc/sys/kernel/ns_last_pid && exec "$@"' pid_digits "$@"
