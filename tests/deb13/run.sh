#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
# Makes or reuses the Debian 13 root, then runs suite.sh (or bench.sh:
# run.sh bench) in it against build/lib/liblnx-fi.so (built on the host,
# Debian 12). A machine that cannot make the root skips with a message
# (exit 0), except under CI.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
bash "$here/root.sh"
rc=$?
if [ $rc -eq 77 ]; then
	exit 0
elif [ $rc -ne 0 ]; then
	exit $rc
fi
bash "$here/../c/clear_stale_shm.sh" # the root shares /dev/shm
exec bash "$here/enter.sh" bash "/lnx/tests/deb13/${1:-suite}.sh"
