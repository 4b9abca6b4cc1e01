#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
# Places an MPI rank on a simulated node for lnx: rank r runs on node
# r / RANKS_PER_NODE (Open MPI exports the rank as OMPI_COMM_WORLD_RANK), so
# ranks on the same node talk over shm and the others over tcp;ofi_rxm.
export FI_LNX_NODE_ID="simnode$(( ${OMPI_COMM_WORLD_RANK:-0} / ${RANKS_PER_NODE:-2} ))"
exec "$@"
