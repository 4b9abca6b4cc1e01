#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
# `fi_info -e` through the running libfabric lists every FI_LNX_*
# variables docs/lnx.7.md describes under ENVIRONMENT (lnx hands libfabric
# its one list, lnx/config.Vars, with fi_param_define).
# usage: params_test.sh <repo root>   (FI_PROVIDER_PATH set by ctest)
set -u
doc=$1/docs/lnx.7.md
want=$(sed -n '/^## ENVIRONMENT/,/^## [A-Z]/p' "$doc" | grep '^\*\*FI_LNX_' |
	grep -o 'FI_LNX_[A-Z0-9_]*[A-Z0-9]' | sort -u)
got=$(fi_info -e 2>&1 | tr -d '\000' | grep -o '^# FI_LNX_[A-Z0-9_]*[A-Z0-9]' | cut -c3- | sort -u)
if [ -z "$want" ]; then
	echo "no FI_LNX_ variable found under ENVIRONMENT in $doc"
	exit 1
fi
# libfabric 2.x lists its built-in lnx's variables too (FI_LNX_USE_SRQ, also
# under "lnx"): what fi_info -e lists beyond the page is shown, not failed.
missing=$(echo "$want" | grep -vxF "$got")
extra=$(echo "$got" | grep -vxF "$want")
if [ -n "$missing" ]; then
	echo "fi_info -e lacks variables docs/lnx.7.md describes: $(echo "$missing" | tr '\n' ' ')"
	exit 1
fi
[ -z "$extra" ] || echo "fi_info -e also lists (another lnx, e.g. libfabric 2.x's built-in): $(echo "$extra" | tr '\n' ' ')"
echo "fi_info -e lists the $(echo "$want" | wc -l) documented FI_LNX_* variables"
