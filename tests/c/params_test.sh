#!/bin/sh
# `fi_info -e` through the running libfabric lists exactly the FI_LNX_*
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
if [ "$want" != "$got" ]; then
	echo "fi_info -e and docs/lnx.7.md disagree:"
	echo "only in docs/lnx.7.md: $(echo "$want" | grep -vxF "$got" | tr '\n' ' ')"
	echo "only in fi_info -e:    $(echo "$got" | grep -vxF "$want" | tr '\n' ' ')"
	exit 1
fi
echo "fi_info -e lists the $(echo "$want" | wc -l) documented FI_LNX_* variables"
