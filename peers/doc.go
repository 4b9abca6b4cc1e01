// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only

// Package peers is the message matching engine owned by lnx: because lnx
// multiplexes one libfabric endpoint over several core providers, receives
// posted by the application and messages arriving from any core provider must
// be matched in one place, with MPI semantics. A Queue holds posted receives
// and unexpected messages for one endpoint (tagged or untagged), matches them
// in post and arrival order with per-source non-overtaking, and supports peek,
// claim (FI_PEEK|FI_CLAIM), discard, cancel by context and flow-control
// counters. Exact (source, tag) matches are hash indexed and O(1); wildcard
// receives (any source, or ignore bits) are kept in a separate ordered list.
// Entries are caller-allocated and linked intrusively, so the exact-match path
// does not allocate. The package knows nothing about transports: a Msg carries
// an opaque handle the caller uses to fetch the payload.
package peers
