// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only

// Package peerep drives a libfabric core through the peer API (issue #20,
// docs/peer-api.md "Wiring"): the core's endpoint is opened with a peer
// CQ and a peer SRX that lnx owns, so that the core runs its own eager and
// rendezvous protocols with the application's tag and CQ data (no lnx
// header), asks lnx's matching engine (an Owner) for the receive of every
// message, and writes its completions through the Owner. The C side is
// pep.c (capi/include/lnx_pep.h). Only libfabric 2.0 to 2.2 (the v2 ABI of
// capi/include/lnx_peer_abi.h) is driven this way.
//
// Every callback comes on the thread that called into the core, inside
// one of EP's methods (docs/peer-api.md: the cores lnx drives this way
// have manual progress): an Owner's methods run inside Progress, Send,
// Start or Discard, with whatever lock the caller holds, and must not
// take it again.
package peerep
