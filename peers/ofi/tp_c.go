// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only

package ofi

/*
#cgo CFLAGS: -I${SRCDIR}/../../capi/include
#include <stdlib.h>
#include <string.h>
#include "lnx_tp.h"
*/
import "C"

import (
	"errors"
	"unsafe"

	"github.com/lnx-go/lnx-go/internal/fi"
)

// Limits of the C operation table.
const (
	opIOV    = C.LNX_OP_IOV     // iovec slots per operation
	hdrBytes = C.LNX_HDR_BYTES  // wire header area per operation
	evMax    = C.LNX_EV_MAX     // completions read per Poll
	maxUser  = C.LNX_OP_IOV - 1 // user pieces per operation
)

// core is the transport's C state (struct lnx_tp, capi/include/lnx_tp.h,
// whose functions are in tp.c): the core endpoint with its own AV and CQ,
// and the C operation table.
type core struct {
	c   *C.struct_lnx_tp
	ops []C.struct_lnx_op // view of c.ops
	evs []C.struct_lnx_ev // view of c.evs
	ev0 int               // the first event of the last read in evs (after those C took)
}

func openCore(d *Domain, nops, cqSize int, src []byte) (core, error) {
	var ret C.int
	var csrc unsafe.Pointer
	if len(src) > 0 {
		csrc = C.CBytes(src)
		defer C.free(csrc)
	}
	c := C.lnx_tp_open(d.dom, d.f.info, C.size_t(nops), C.size_t(cqSize), csrc, C.size_t(len(src)), &ret)
	if c == nil {
		if ret == 0 {
			ret = -C.FI_ENOMEM
		}
		return core{}, check("core transport endpoint open", ret)
	}
	return core{
		c:   c,
		ops: unsafe.Slice(c.ops, nops),
		evs: unsafe.Slice(&c.evs[0], evMax),
	}, nil
}

func (k *core) close() error {
	err := check("core transport close", C.lnx_tp_close(k.c))
	k.c, k.ops, k.evs = nil, nil, nil
	return err
}

func (k *core) limits() (inject, txIOV, rxIOV, txSize int) {
	return int(k.c.inject), int(k.c.tx_iov), int(k.c.rx_iov), int(k.c.tx_size)
}

// cqData is the core's cq_data_size.
func (k *core) cqData() int { return int(k.c.cq_data) }

// evTagData is the tag and CQ data of completion i of the last drain.
func (k *core) evTagData(i int) (tag, data uint64) {
	e := &k.evs[k.ev0+i]
	return uint64(e.tag), uint64(e.data)
}

// tinjectdata sends n bytes at buf (C memory, or Go memory the call
// alone reads) as a tagged message with remote CQ data with fi_tinjectdata:
// a tagged eager message that completes on return.
func (k *core) tinjectdata(buf unsafe.Pointer, n int, dest, tag, data uint64) int {
	return int(C.lnx_tp_tinjectdata(k.c, buf, C.size_t(n), C.uint64_t(dest), C.uint64_t(tag), C.uint64_t(data)))
}

func (k *core) tsenddata(op uint32, sub, off, niov int, dest, tag, data uint64) int {
	return int(C.lnx_tp_tsenddata(k.c, C.uint32_t(op), C.int(sub), C.int(off), C.int(niov), C.uint64_t(dest),
		C.uint64_t(tag), C.uint64_t(data)))
}

func (k *core) trecvAny(op uint32, buf unsafe.Pointer, n int, src, tag, ignore uint64) int {
	return int(C.lnx_tp_trecv_any(k.c, C.uint32_t(op), buf, C.size_t(n), C.uint64_t(src), C.uint64_t(tag),
		C.uint64_t(ignore)))
}

func (k *core) name() ([]byte, error) {
	buf := make([]byte, 256)
	for {
		n := C.size_t(len(buf))
		ret := C.lnx_tp_getname(k.c, unsafe.Pointer(&buf[0]), &n)
		if ret == -C.FI_ETOOSMALL && int(n) > len(buf) {
			buf = make([]byte, n)
			continue
		}
		if err := check("core fi_getname", ret); err != nil {
			return nil, err
		}
		if n == 0 {
			return nil, errors.New("core fi_getname returned an empty address")
		}
		return buf[:n], nil
	}
}

// avInsert inserts one core address (len(name) must be the core's address
// length) and returns its fi_addr.
func (k *core) avInsert(name []byte) (uint64, error) {
	var a C.uint64_t
	ret := C.lnx_tp_av_insert(k.c, unsafe.Pointer(&name[0]), &a)
	if err := check("core fi_av_insert", ret); err != nil {
		return 0, err
	}
	return uint64(a), nil
}

func (k *core) drain(max int) int {
	k.ev0 = 0
	return int(C.lnx_tp_drain(k.c, C.int(max)))
}

// next reads up to max completions like drain, except that events C read
// while the transport was lent (the stash) come first.
func (k *core) next(max int) int {
	if s := k.c.lend.stashed; s != 0 {
		k.ev0 = int(k.c.lend.head)
		k.c.lend.stashed, k.c.lend.head = 0, 0
		return int(s)
	}
	return k.drain(max)
}

// setLend gives C the facts it checks messages with (tp_lend.go).
func (k *core) setLend(pool, bufSize int, eagerMax uint64, bounce unsafe.Pointer) {
	l := &k.c.lend
	l.pool = C.uint32_t(pool)
	l.buf_size = C.uint64_t(bufSize)
	l.eager_max = C.uint64_t(eagerMax)
	*(*uintptr)(unsafe.Pointer(&l.bounce)) = uintptr(bounce)
}

// lendTakes is how many messages C may take in one lending without
// reposting their bounce buffers (LNX_LEND_TAKES).
const lendTakes = C.LNX_LEND_TAKES

// lendState is what a lending hands C about its peer and gets back.
type lendState struct {
	peer    uint64 // the peer's id (0: none)
	rxSeq   uint32
	owe     bool // taken messages earn credits
	txOn    bool // C may send to it
	txSeq   uint32
	window  uint32
	credits int32
	owed    uint32
	txAddr  uint64
	id      uint64

	oweMax     uint32 // credits owed that Go returns itself
	txEagerMax uint64 // the peer's eager limit (Peer.eagerMax)
	teMax      uint64 // the largest tagged eager payload C may inject (0: none)
	teOp       [teBufsMax]uint32
	teBuf      [teBufsMax]unsafe.Pointer // C memory
	teCap      uint64

	took     []uint32 // back: the bounce slots of the messages C took and did not repost
	reposted uint32   // back: messages C took and reposted the bounce buffers of
	sent     uint32   // back: messages C sent
	sentTE   uint32   // back: of sent, tagged eager messages
}

// noTE: no tagged eager receives for C.
var noTE = func() (a [teBufsMax]uint32) {
	for j := range a {
		a[j] = ^uint32(0)
	}
	return a
}()

// lend starts a lending with s.
func (k *core) lend(s *lendState) {
	l := &k.c.lend
	l.peer, l.rx_seq, l.took, l.reposted, l.sent = C.uint64_t(s.peer), C.uint32_t(s.rxSeq), 0, 0, 0
	l.owe, l.owe_max, l.tx_on = cBool(s.owe), C.uint32_t(s.oweMax), cBool(s.txOn)
	l.tx_seq, l.window, l.credits, l.owed = C.uint32_t(s.txSeq), C.uint32_t(s.window), C.int32_t(s.credits), C.uint32_t(s.owed)
	l.tx_addr, l.id = C.uint64_t(s.txAddr), C.uint64_t(s.id)
	l.tx_eager_max, l.te_max, l.sent_te = C.uint64_t(s.txEagerMax), C.uint64_t(s.teMax), 0
	for j := range s.teOp {
		l.te_op[j] = C.uint32_t(s.teOp[j])
		*(*uintptr)(unsafe.Pointer(&l.te_buf[j])) = uintptr(s.teBuf[j])
	}
	l.te_cap = C.uint64_t(s.teCap)
}

// lent ends a lending and fills s with what C changed.
func (k *core) lent(s *lendState) {
	l := &k.c.lend
	s.rxSeq, s.txSeq, s.credits, s.owed = uint32(l.rx_seq), uint32(l.tx_seq), int32(l.credits), uint32(l.owed)
	s.took = s.took[:0]
	for _, op := range l.took_op[:min(int(l.took), len(l.took_op))] {
		s.took = append(s.took, uint32(op))
	}
	s.reposted, s.sent, s.sentTE = uint32(l.reposted), uint32(l.sent), uint32(l.sent_te)
	l.peer, l.took, l.reposted, l.tx_on, l.sent, l.sent_te = 0, 0, 0, 0, 0, 0
}

func cBool(b bool) C.uint32_t {
	if b {
		return 1
	}
	return 0
}

// stashed reports whether events C read wait for Poll.
func (k *core) stashed() bool { return k.c.lend.stashed != 0 }

// The C entry points of a lent transport (capi/include/lnx_tp_lend.h),
// which capi calls from C; Go calls them only in tests.

func (k *core) cPeek() int { return int(C.lnx_tp_peek(unsafe.Pointer(k.c))) }

func (k *core) cLook() (ok bool, m C.struct_lnx_tp_msg) {
	ok = C.lnx_tp_look(unsafe.Pointer(k.c), &m) == 1
	return ok, m
}

func (k *core) cConsume() { C.lnx_tp_consume(unsafe.Pointer(k.c)) }

// cSendEager sends b (which C copies before it returns).
func (k *core) cSendEager(flags uint32, tag, data uint64, b []byte) int {
	var p unsafe.Pointer
	if len(b) > 0 {
		p = unsafe.Pointer(&b[0])
	}
	return int(C.lnx_tp_send_eager(unsafe.Pointer(k.c), C.uint32_t(flags), C.uint64_t(tag), C.uint64_t(data), p,
		C.size_t(len(b))))
}

// lentMsg is cLook's answer in Go terms; the payload aliases the bounce
// buffer.
func (k *core) lentMsg() (ok bool, flags uint32, tag, data uint64, payload []byte) {
	ok, m := k.cLook()
	if !ok {
		return false, 0, 0, 0, nil
	}
	return true, uint32(m.flags), uint64(m.tag), uint64(m.data), unsafe.Slice((*byte)(m.payload), int(m.size))
}

// The wire constants C reads eager messages with are wire.go's.
var (
	_ = [1]struct{}{}[wireVersion-C.LNX_WIRE_VERSION]
	_ = [1]struct{}{}[kindEager-C.LNX_KIND_EAGER]
	_ = [1]struct{}{}[hdrEager-C.LNX_HDR_EAGER]
	_ = [1]struct{}{}[wantEagerInject-C.LNX_STAGE_MAX]
	_ = [1]struct{}{}[teClass-C.LNX_TE_CLASS]
	_ = [1]struct{}{}[teIgnore-C.LNX_TE_IGNORE]
	_ = [1]struct{}{}[teFlagsN-C.LNX_TE_FLAG_BITS]
	_ = [1]struct{}{}[teDataN-C.LNX_TE_DATA_BITS]
	_ = [1]struct{}{}[teBufsMax-C.LNX_TE_BUFS]
)

// reads is the number of fi_cq_read calls made on the core CQ so far.
func (k *core) reads() uint64 { return uint64(k.c.reads) }

// The post functions return 0, -FI_EAGAIN or another negative fi_errno.

func (k *core) sendv(op uint32, sub, off, niov int, dest uint64) int {
	return int(C.lnx_tp_sendv(k.c, C.uint32_t(op), C.int(sub), C.int(off), C.int(niov), C.uint64_t(dest)))
}

func (k *core) tsendv(op uint32, sub, off, niov int, dest, tag uint64) int {
	return int(C.lnx_tp_tsendv(k.c, C.uint32_t(op), C.int(sub), C.int(off), C.int(niov), C.uint64_t(dest), C.uint64_t(tag)))
}

func (k *core) trecvv(op uint32, sub, off, niov int, src, tag uint64) int {
	return int(C.lnx_tp_trecvv(k.c, C.uint32_t(op), C.int(sub), C.int(off), C.int(niov), C.uint64_t(src), C.uint64_t(tag)))
}

func (k *core) readv(op uint32, sub, off, niov int, src, addr, key uint64) int {
	return int(C.lnx_tp_readv(k.c, C.uint32_t(op), C.int(sub), C.int(off), C.int(niov), C.uint64_t(src),
		C.uint64_t(addr), C.uint64_t(key)))
}

func (k *core) writev(op uint32, sub, off, niov int, dest, addr, key uint64) int {
	return int(C.lnx_tp_writev(k.c, C.uint32_t(op), C.int(sub), C.int(off), C.int(niov), C.uint64_t(dest),
		C.uint64_t(addr), C.uint64_t(key)))
}

func (k *core) recv(op uint32, buf unsafe.Pointer, n int) int {
	return int(C.lnx_tp_recv(k.c, C.uint32_t(op), buf, C.size_t(n)))
}

// inject sends buf (C memory) with fi_inject; it completes on return.
func (k *core) inject(buf unsafe.Pointer, n int, dest uint64) int {
	return int(C.lnx_tp_inject(k.c, buf, C.size_t(n), C.uint64_t(dest)))
}

// tinject is fi_tinject (used by the raw-core benchmark).
func (k *core) tinject(buf unsafe.Pointer, n int, dest, tag uint64) int {
	return int(C.lnx_tp_tinject(k.c, buf, C.size_t(n), C.uint64_t(dest), C.uint64_t(tag)))
}

func (k *core) cancel(op uint32, sub int) int {
	return int(C.lnx_tp_cancel(k.c, C.uint32_t(op), C.int(sub)))
}

// setIOV points iov[i] of op at n bytes at p (C memory or pinned Go memory).
func (k *core) setIOV(op uint32, i int, p unsafe.Pointer, n int) {
	v := &k.ops[op].iov[i]
	// No write barrier: the slot's old value may be a Go pointer whose
	// object was unpinned and freed since; a barrier would hand it to the
	// GC, which aborts on pointers into freed heap.
	*(*uintptr)(unsafe.Pointer(&v.iov_base)) = uintptr(p)
	v.iov_len = C.size_t(n)
	*(*uintptr)(unsafe.Pointer(&k.ops[op].desc[i])) = 0
}

// setDesc gives piece i of op the core MR descriptor d (C memory, or nil),
// so that the core need not register the piece itself; setIOV clears it.
func (k *core) setDesc(op uint32, i int, d unsafe.Pointer) {
	*(*uintptr)(unsafe.Pointer(&k.ops[op].desc[i])) = uintptr(d)
}

func (k *core) iovLen(op uint32, i int) int { return int(k.ops[op].iov[i].iov_len) }

func (k *core) iovBase(op uint32, i int) unsafe.Pointer { return k.ops[op].iov[i].iov_base }

func (k *core) setIOVLen(op uint32, i int, n int) { k.ops[op].iov[i].iov_len = C.size_t(n) }

// hdr returns op's wire header area (C memory).
func (k *core) hdr(op uint32) []byte {
	return unsafe.Slice((*byte)(unsafe.Pointer(&k.ops[op].hdr[0])), hdrBytes)
}

func (k *core) hdrPtr(op uint32) unsafe.Pointer { return unsafe.Pointer(&k.ops[op].hdr[0]) }

// ev returns completion i of the last drain.
func (k *core) ev(i int) (op uint32, sub int, errno, provErr int, n, olen uint64) {
	e := &k.evs[k.ev0+i]
	return uint32(e.op), int(e.sub), int(e.err), int(e.prov_err), uint64(e.len), uint64(e.olen)
}

// cmalloc allocates n bytes of C memory (64-byte aligned, zeroed).
func cmalloc(n int) unsafe.Pointer {
	if n <= 0 {
		n = 1
	}
	var p unsafe.Pointer
	if C.posix_memalign(&p, 64, C.size_t(n)) != 0 {
		return nil
	}
	C.memset(p, 0, C.size_t(n))
	return p
}

func cfree(p unsafe.Pointer) {
	if p != nil {
		C.free(p)
	}
}

// coreErr converts a negative post return value or a positive CQ error
// into an error that carries the fi code.
func coreErr(what string, code, provErr int) error {
	if code < 0 {
		code = -code
	}
	if provErr != 0 {
		return fi.Wrap(fi.Errno(code), "%s: %s (provider errno %d)", what, Strerror(code), provErr)
	}
	return fi.Wrap(fi.Errno(code), "%s: %s", what, Strerror(code))
}

const (
	cEAGAIN    = -int(C.FI_EAGAIN)
	cECANCELED = int(C.FI_ECANCELED)
	cEINVAL    = int(C.FI_EINVAL)
	cETRUNC    = int(C.FI_ETRUNC)
)
