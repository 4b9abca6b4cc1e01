// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only

package peerep

/*
#cgo CFLAGS: -I${SRCDIR}/../../capi/include
#include <stdlib.h>
#include "lnx_pep.h"
*/
import "C"

import (
	"errors"
	"fmt"
	"runtime/cgo"
	"sync/atomic"
	"unsafe"

	"github.com/lnx-go/lnx-go/internal/fi"
)

// MaxIov is the most pieces a send or receive hands the core.
const MaxIov = C.LNX_PEP_IOV

// Entry is an owner rx entry (C memory): a message the core asked about.
type Entry struct{ c *C.struct_lnx_pentry }

// Valid reports whether e names an entry.
func (e Entry) Valid() bool { return e.c != nil }

// Size is the message's length (2.x gives it in get_*), Addr the core
// fi_addr of its sender.
func (e Entry) Size() uint64 { return uint64(e.c.pe.msg_size) }

func (e Entry) Addr() uint64 { return uint64(e.c.pe.addr) }

// SenderAddr is Addr, or when the core did not know the sender on arrival
// (FI_ADDR_NOTAVAIL) the core fi_addr the core gives it now, after its AV
// grew (foreach_unspec_addr); still FI_ADDR_NOTAVAIL if it cannot.
func (ep *EP) SenderAddr(e Entry) uint64 {
	if a := e.Addr(); a != fi.ADDR_NOTAVAIL || ep.c.get_addr == nil {
		return a
	}
	return uint64(C.lnx_pep_entry_addr(ep.c, e.c))
}

// Tag is a tagged message's tag (0 for an untagged one).
func (e Entry) Tag() uint64 { return uint64(e.c.pe.tag) }

// CQData is the sender's CQ data of a queued message, if HasData.
func (e Entry) CQData() (uint64, bool) {
	return uint64(e.c.pe.cq_data), uint64(e.c.pe.flags)&fi.REMOTE_CQ_DATA != 0
}

// Set gives the entry a receive's buffers and the id its completion will
// carry (Owner.Write). bases are C (application) memory.
func (e Entry) Set(bases []unsafe.Pointer, lens []uint64, id uint64) error {
	n := min(len(bases), MaxIov)
	for i := range n { // straight into the entry's C iovec: nothing to allocate
		e.c.iov[i].iov_base, e.c.iov[i].iov_len = bases[i], C.size_t(lens[i])
	}
	return check("peer rx entry", C.lnx_pep_entry_bind(e.c, C.int(n), C.uint64_t(id)))
}

// Start starts a queued message into the receive Set gave it.
func (ep *EP) Start(e Entry, tagged bool) error {
	err := check("peer start", C.lnx_pep_start(e.c, cbool(tagged)))
	ep.drain()
	return err
}

// Discard drops a queued message.
func (ep *EP) Discard(e Entry, tagged bool) error {
	err := check("peer discard", C.lnx_pep_discard(e.c, cbool(tagged)))
	ep.drain()
	return err
}

// drain hands the completions the core wrote during the last call to the
// owner, in the order written.
func (ep *EP) drain() {
	n := int(ep.c.ncomp)
	if n == 0 {
		return
	}
	// A copy (the owner may call into the core again, which refills
	// comps), on the stack and no larger than it needs: Go zeroes the
	// whole array, and 64 completions are 6 KiB for a batch that is
	// mostly one.
	if n <= drainSmall {
		var batch [drainSmall]C.struct_lnx_pcomp
		copy(batch[:n], ep.c.comps[:n])
		ep.handOff(batch[:n])
		return
	}
	var batch [C.LNX_PEP_COMPS]C.struct_lnx_pcomp
	copy(batch[:n], ep.c.comps[:n])
	ep.handOff(batch[:n])
}

// drainSmall: the batch drain copies into a small array.
const drainSmall = 4

// handOff hands the owner batch, a copy of comps, and then what C wrote
// past comps while it polled the core (lent).
func (ep *EP) handOff(batch []C.struct_lnx_pcomp) {
	ep.c.ncomp = 0 // before the owner runs: it may call into the core again
	var more []C.struct_lnx_pcomp
	if m := int(ep.c.nmore); m > 0 {
		more = append(more, unsafe.Slice(ep.c.more, m)...)
		ep.c.nmore = 0
	}
	ep.hand(batch)
	ep.hand(more)
}

func (ep *EP) hand(batch []C.struct_lnx_pcomp) {
	for i := range batch {
		w := &batch[i]
		if w.c_send != 0 {
			ep.o.SendC(uint64(w.id), uint64(w.flags), uintptr(w.c_ctx), w.c_send == 2, int(w.err), int(w.prov_err))
			continue
		}
		if w.c_recv != 0 {
			ep.o.WriteC(uint64(w.flags), uint64(w.len), uint64(w.data), uint64(w.tag), uint64(w.src),
				uintptr(w.c_ctx), uintptr(w.c_buf), uint64(w.c_len), int(w.err), int(w.prov_err))
			continue
		}
		if w.err != 0 {
			ep.o.WriteErr(uint64(w.id), uint64(w.flags), uint64(w.len), uint64(w.data), uint64(w.tag),
				int(w.err), int(w.prov_err), uint64(w.olen))
			continue
		}
		ep.o.Write(uint64(w.id), uint64(w.flags), uint64(w.len), uint64(w.data), uint64(w.tag), uint64(w.src))
	}
}

// Owner is lnx's side of the callbacks.
type Owner interface {
	// Get: a message from the core fi_addr addr arrived. Matched: the
	// owner Set e with the receive and returns true; else it keeps e as
	// unexpected (Queued follows) and returns false.
	Get(tagged bool, addr, size, tag uint64, e Entry) bool
	// Queued: the core queued e after Get returned false.
	Queued(e Entry)
	// Write: the operation id completed (flags as libfabric's CQ entry;
	// src the core fi_addr of a receive's sender).
	Write(id, flags, n, data, tag, src uint64)
	// WriteErr: the operation id failed with the positive fi_errno err;
	// olen is the truncated length for FI_ETRUNC.
	WriteErr(id, flags, n, data, tag uint64, err, provErr int, olen uint64)
	// WriteC: a receive C matched while lent (Lent) completed, or failed
	// (err, a positive fi_errno, non-zero), where C could not write its
	// completion: ctx, buf and blen are the armed receive's, src lnx's
	// fi_addr of the sender.
	WriteC(flags, n, data, tag, src uint64, ctx, buf uintptr, blen uint64, err, provErr int)
	// SendC: a send C made while lent completed, or failed (err, a
	// positive fi_errno), where C could not write its completion: id is
	// the one PopSend gave it (0 if none), ctx its context, flags its
	// completion's, cq whether the application wants a completion.
	SendC(id, flags uint64, ctx uintptr, cq bool, err, provErr int)
}

// Ptr is the core's C state (struct lnx_pep *), which lnx lends to C's
// CQ path (struct lnx_arm's pep; capi/include/lnx_pep_lend.h).
func (ep *EP) Ptr() unsafe.Pointer { return unsafe.Pointer(ep.c) }

// MaxSrcs bounds the core fi_addrs SetSrc maps.
const MaxSrcs = C.LNX_PEP_SRCS

// SetSrc tells C lnx's fi_addr of core fi_addr a (< MaxSrcs), by which
// C's get_* matches while lent; known false: C leaves its messages to Go.
// Only while not lent.
func (ep *EP) SetSrc(a, src uint64, known bool) {
	v := C.uint64_t(src)
	if !known {
		v = C.LNX_PEP_NOSRC
	}
	ep.c.src[a] = v
}

// MaxDsts bounds the lnx fi_addrs SetDst maps.
const MaxDsts = C.LNX_PEP_DSTS

// SetDst tells C the core fi_addr of lnx fi_addr a (< MaxDsts), to which
// C then sends small messages itself while lent (lnx_pep_inject_lent);
// known false: C leaves sends to a to Go. Any time (C reads it
// atomically).
func (ep *EP) SetDst(a, core uint64, known bool) {
	if !known {
		core = uint64(C.LNX_PEP_NOSRC)
	}
	atomic.StoreUint64((*uint64)(unsafe.Pointer(&ep.c.dst[a])), core)
}

// SetCheckBuffers says whether C checks that a send buffer over a page
// is mapped before the core reads it later (FI_LNX_CHECK_SEND_BUFFERS).
// Only while not lent.
func (ep *EP) SetCheckBuffers(on bool) {
	var v C.uint32_t
	if on {
		v = 1
	}
	ep.c.check_bufs = v
}

// SetTx says whether C may send through the core while lent. Only while
// not lent.
func (ep *EP) SetTx(on bool) {
	var v C.uint32_t
	if on {
		v = 1
	}
	ep.c.tx_on = v
}

// TakeTx returns and clears the messages C sent through the core while
// lent, their bytes, and how many of them were over the inject size. Only
// while not lent.
func (ep *EP) TakeTx() (msgs, bytes, big uint64) {
	msgs, bytes, big = uint64(ep.c.tx_msgs), uint64(ep.c.tx_bytes), uint64(ep.c.tx_big)
	ep.c.tx_msgs, ep.c.tx_bytes, ep.c.tx_big = 0, 0, 0
	return msgs, bytes, big
}

// TakeReads returns and clears how often C polled the core while lent,
// and how many messages the core read and completions it wrote during
// those polls (only while not lent).
func (ep *EP) TakeReads() (reads, events uint64) {
	reads, events = uint64(ep.c.c_reads), uint64(ep.c.c_events)
	ep.c.c_reads, ep.c.c_events = 0, 0
	return reads, events
}

// CSend is a send C made over the inject size while lent that the core
// has not completed yet (PopSend).
type CSend struct {
	Ctx   uintptr // the application's context
	Flags uint64  // its completion's flags
	CQ    bool    // the application wants its completion
	Dst   uint64  // lnx's fi_addr of the receiver
}

// PopSend adopts the oldest send C made that Go has not: its completion
// (Owner.SendC) carries id from now. ok false: none is left. Only while
// not lent.
func (ep *EP) PopSend(id uint64) (s CSend, ok bool) {
	if ep.c.csends == nil {
		return s, false // the common case, at every takeBack: no cgo call
	}
	c := C.lnx_pep_csend_pop(ep.c, C.uint64_t(id))
	if c == nil {
		return s, false
	}
	return CSend{Ctx: uintptr(c.s_ctx), Flags: uint64(c.s_flags), CQ: c.s_cq != 0, Dst: uint64(c.s_dst)}, true
}

// Adopt drains the completions written while lent, then hands each
// message C left to Go (Owner.Get's work, the core having queued it) to
// f, in arrival order. Only while not lent.
func (ep *EP) Adopt(f func(tagged bool, e Entry)) {
	ep.drain()
	for {
		e := C.lnx_pep_stash_pop(ep.c, &ep.c.go_tagged)
		if e == nil {
			return
		}
		f(ep.c.go_tagged != 0, Entry{c: e})
	}
}

// Pending is the number of receives C matched while lent that the core
// has not completed yet (messages over the inject size: shm's CMA copy,
// rxm's rendezvous read), and of sends C made over the inject size that
// Go has not adopted (PopSend).
func (ep *EP) Pending() uint32 { return uint32(ep.c.c_pending) + uint32(ep.c.c_sends) }

// Held reports whether C left messages or completions to Go.
func (ep *EP) Held() bool { return ep.c.stash != nil || ep.c.ncomp != 0 || ep.c.nmore != 0 }

// EP is a core endpoint driven through the peer API.
type EP struct {
	c      *C.struct_lnx_pep
	o      Owner
	h      cgo.Handle
	name   []byte
	Inject int // the core's inject size
}

// ErrRefused says the core does not take the peer API (docs/peer-api.md):
// the caller keeps the core on the transport adapter.
var ErrRefused = errors.New("peerep: the core does not accept a peer SRX and peer CQ")

var stages = [...]string{"", "fi_av_open", "fi_cq_open(FI_PEER)", "fi_endpoint",
	"fi_srx_context(FI_PEER)", "fi_srx_context(FI_PEER) ignored FI_PEER", "fi_enable"}

// Open opens an endpoint of the core domain dom (struct fid_domain *) with
// the fi_info it was opened with (struct fi_info *), owned by o; src, if
// set, is the core address to bind it to.
func Open(dom, info unsafe.Pointer, src []byte, o Owner) (*EP, error) {
	ep := &EP{o: o}
	h := cgo.NewHandle(ep)
	var ret, stage C.int
	var csrc unsafe.Pointer
	if len(src) > 0 {
		csrc = C.CBytes(src)
		defer C.free(csrc)
	}
	c := C.lnx_pep_open((*C.struct_fid_domain)(dom), (*C.struct_fi_info)(info), csrc, C.size_t(len(src)),
		C.uintptr_t(h), &ret, &stage)
	if c == nil {
		h.Delete()
		if ret == 0 {
			ret = -C.FI_ENOMEM
		}
		what := "peer endpoint"
		if int(stage) < len(stages) && stage > 0 {
			what = stages[stage]
		}
		err := check(what, ret)
		if stage >= 2 && stage != 3 {
			err = fmt.Errorf("%w: %w", ErrRefused, err)
		}
		return nil, err
	}
	ep.c, ep.h, ep.Inject = c, h, int(c.inject)
	var err error
	if ep.name, err = ep.getname(); err != nil {
		ep.Close()
		return nil, err
	}
	return ep, nil
}

func (ep *EP) getname() ([]byte, error) {
	buf := make([]byte, 256)
	for {
		n := C.size_t(len(buf))
		ret := C.lnx_pep_getname(ep.c, unsafe.Pointer(&buf[0]), &n)
		if ret == -C.FI_ETOOSMALL && int(n) > len(buf) {
			buf = make([]byte, n)
			continue
		}
		if err := check("peer fi_getname", ret); err != nil {
			return nil, err
		}
		return buf[:n], nil
	}
}

// Name is the core endpoint's address (fi_getname).
func (ep *EP) Name() []byte { return ep.name }

// Insert puts a core address into the core's AV and returns its fi_addr.
func (ep *EP) Insert(name []byte) (uint64, error) {
	if len(name) == 0 {
		return 0, errors.New("peerep: empty core address")
	}
	p := C.CBytes(name)
	defer C.free(p)
	var a C.uint64_t
	if err := check("peer fi_av_insert", C.lnx_pep_av_insert(ep.c, p, &a)); err != nil {
		return 0, err
	}
	return uint64(a), nil
}

// Progress drives the core (its CQ read); callbacks come inside.
func (ep *EP) Progress() error {
	n := C.lnx_pep_progress(ep.c)
	ep.drain()
	if n < 0 {
		return check("peer progress", C.int(n))
	}
	return nil
}

// ErrAgain is the core's -FI_EAGAIN on a send.
var ErrAgain = errors.New("peerep: core busy")

// Send sends the pieces to the core fi_addr dest with the application's
// tag and CQ data. inject: the buffers are reusable on return. done: no
// completion will come (an inject); else Owner.Write(id) reports it.
func (ep *EP) Send(tagged bool, bases []unsafe.Pointer, lens []uint64, dest, tag, data uint64, hasData, inject bool, id uint64) (done bool, err error) {
	n := len(bases)
	if n > MaxIov {
		return false, fi.Wrap(fi.EINVAL, "%d pieces exceed %d", n, MaxIov)
	}
	b, l := &ep.c.go_base, &ep.c.go_len // C memory: nothing to allocate
	for i := range n {
		b[i], l[i] = bases[i], C.size_t(lens[i])
	}
	ret := C.lnx_pep_send(ep.c, cbool(tagged), &b[0], &l[0], C.int(n), C.uint64_t(dest), C.uint64_t(tag),
		C.uint64_t(data), cbool(hasData), cbool(inject), C.uint64_t(id))
	ep.drain() // a completion written inside the send reaches the owner after it returns
	switch {
	case ret == 1:
		return true, nil
	case ret == 0:
		return false, nil
	case ret == -C.FI_EAGAIN:
		return false, ErrAgain
	}
	return false, check("peer send", C.int(ret))
}

// Close closes the core endpoint.
func (ep *EP) Close() error {
	if ep.c == nil {
		return nil
	}
	err := check("peer endpoint close", C.lnx_pep_close(ep.c))
	ep.c = nil
	ep.h.Delete()
	return err
}

func cbool(b bool) C.int {
	if b {
		return 1
	}
	return 0
}

func check(what string, ret C.int) error {
	if ret == 0 {
		return nil
	}
	code := int(ret)
	if code < 0 {
		code = -code
	}
	return fi.Wrap(fi.Errno(code), "%s: %s", what, C.GoString(C.fi_strerror(C.int(code))))
}
