// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only

package lnx

import "io"

// core is one of an endpoint's core endpoints (its own shm, or one
// network transport of the link) as the endpoint's lifecycle, progress
// and watch code sees it: the loops over e.cores in OpenEndpoint,
// closeCores, Name, progressLocked, progressWatch, needsLocalPoll,
// watchArmed, arm, disarm, AV.Remove and dumpStats call these methods and
// never ask which kind of core they have. The adapters are shmCore
// (core_shm.go) and netCore (core_net.go). Every method runs with the
// endpoint locked (eplock.go), from Go.
//
// The loops that run on every entry into Go (progressLocked,
// needsLocalPoll, progressWatch, arm, disarm, watchArmed) switch on the
// adapter's concrete type in the loop body (shmCore, netCore) and fall
// back to the interface for any other core: the compiler then calls, and
// where small enough inlines, the adapters' methods as the typed code
// before the interface did. A helper per method (corePoll(c) and the
// like) was not enough: holding both a direct and an interface call, it
// is never inlined itself, and the extra call per method per entry cost
// ~10% of 1-byte streaming bandwidth over shm. Anything passed to an
// interface call escapes, so it must already live on the heap
// (Endpoint.armHeads, the CQ's watch set), or each entry allocates.
//
// The data path does not go through this interface: a route, a
// rendezvous handle or a one-sided peer already knows its core, and
// calls its *shm.Endpoint or *ofi.Transport directly (no interface call
// per message).
//
// Lent to C: while the endpoint is armed (arm.go, docs/design.md
// "Lending and taking back") C may do part of a core's work without
// entering Go; for shm it reads the inbound rings, for a network core it
// reads the core CQ and sends eager messages to one peer. Between lend
// and takeBack Go must not poll the core or look at the state lent; every
// entry into Go takes it back first (e.lock → disarm → takeBack).
type core interface {
	// addr is the core's part of the endpoint's lnx address (Name).
	addr() CoreAddr

	// paced reports whether progress polls the core on the network
	// cadence (netDue: every call right after network activity, else once
	// per netQuietGap) instead of on every progress call. C's gate then
	// lets a read into Go every so often even when nothing it watches
	// changed (watchSet.net). Asked once, by addCore, which orders
	// e.cores so that the paced cores come last (e.local).
	paced() bool

	// poll runs one poll of the core: matching what arrived, reporting
	// sends and pulls done, and the core's own follow-up work (shm: IPC
	// acknowledgements, releasing removed peers).
	poll()

	// quiet reports that the core has no work of its own in flight that
	// only a poll finishes and no watched word announces (shm: busy or
	// failed sends). A paced core reports true: its activity is what the
	// endpoint's cadence (netHot) tracks, and needsLocalPoll asks only the
	// others.
	quiet() bool

	// housekeep does what the core's poll does every so many calls
	// (finding dead senders and peers), for reads C answered without
	// entering Go.
	housekeep()

	// idleWords adds to w the words whose change announces work for the
	// core while Go is not running (C's gate watches them); w.busy when
	// they do not fit or the core cannot be watched that way.
	idleWords(w *watchSet)

	// armedWords is idleWords while the core is lent: what C does not
	// watch by reading the core itself.
	armedWords(w *watchSet)

	// canLend reports whether the core can ever be lent with an armed
	// receive (armable): shm always, a network core only as the link's
	// only one (struct lnx_arm has one network slot).
	canLend() bool

	// lend lends the core to C with the arm a for receives from src (the
	// source every lent receive names, else AddrUnspec; e locked, a not
	// yet published): it fills the core's part of a. false:
	// not now; the caller then takes back the cores lent before it and
	// does not arm. A paced core that progress would not poll on every
	// call is left to Go (lend returns true, nothing lent).
	lend(a *armMem, src uint64) bool

	// takeBack takes the core back from C after lend (disarm, or a later
	// core's lend failing): heads are the positions C left in the lent
	// shm rings (copied under arm.lock; nil when C never saw the arm).
	// It does for what C took what poll would have.
	takeBack(heads []uint64)

	// release frees what the core still holds for fi_addrs removed from
	// the AV once nothing uses it (AV.Remove, and poll).
	release()

	// writeStats writes the core's own statistics lines
	// (FI_LNX_DUMP_STATS), after the endpoint's per-kind lines.
	writeStats(w io.Writer)

	// close closes the core endpoint (nothing is lent any more).
	close() error
}
