package ofi

/*
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <rdma/fabric.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_tagged.h>
#include <rdma/fi_rma.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_eq.h>
#include "lnx_tp_lend.h"

// The transport keeps every piece of memory the core sees in C: the
// operation table (contexts, iovec arrays, wire headers), the bounce
// buffers and the completion batch. Go code writes into it through
// unsafe views and passes only C pointers and indexes to C.

#define LNX_EV_MAX 64
#define LNX_OP_IOV 9      // iov[0]: our header, iov[1..8]: user pieces
#define LNX_HDR_BYTES 128
// wire.go's constants that C reads messages with (checked by tests).
#define LNX_WIRE_VERSION 1
#define LNX_KIND_EAGER 1
#define LNX_HDR_EAGER 40
// Messages C may take in one lending: their bounce buffers wait for Go.
#define LNX_LEND_TAKES 32

struct lnx_op {
	struct fi_context2 ctx[2];
	struct iovec iov[LNX_OP_IOV];
	void *desc[LNX_OP_IOV];   // core MR descriptors of the iov pieces (NULL: none)
	uint8_t hdr[LNX_HDR_BYTES];
};

struct lnx_ev {
	uint32_t op;       // index into ops, UINT32_MAX if the context is not ours
	uint32_t sub;      // 0 or 1: which context of the op; 2 if misaligned
	int32_t err;       // 0, or the positive fi_errno of an error entry
	int32_t prov_err;
	uint64_t len;
	uint64_t olen;
	uint64_t tag;      // the completion's tag and CQ data (tagged eager receives)
	uint64_t data;
};

// What C may do while the transport is lent (tp_lend.go): Go writes the
// first block before lending and reads the second after taking it back.
struct lnx_tp_lend {
	uint64_t peer;      // Go: id of the peer whose eager message C may take (0: none)
	uint32_t rx_seq;    // Go, then C: that peer's next sequence number
	uint32_t pool;      // Go: ops [0, pool) are bounce receives
	uint64_t buf_size;  // Go: bytes per bounce buffer
	uint64_t eager_max; // Go: largest eager payload
	uint8_t *bounce;    // Go: the bounce buffers
	int32_t stashed;    // C: events in evs Go has not seen; Go clears it
	uint32_t took;      // C: messages it took (at most LNX_LEND_TAKES)
	uint32_t took_op[LNX_LEND_TAKES]; // C: their bounce slots, for Go to repost
	uint32_t owe;       // Go: a taken message earns its sender a credit
	uint32_t owe_max;   // Go: credits owed that Go must return itself
	// Sending to the same peer: small eager messages with fi_inject.
	uint32_t tx_on;     // Go: C may send to the peer
	uint32_t tx_seq;    // Go, then C: the next sequence number we send it
	uint32_t window;    // Go: its credit window (0: no flow control)
	int32_t credits;    // Go, then C: credits it left us
	uint32_t owed;      // Go, then C: credits we owe it (they ride on our sends)
	uint32_t sent;      // C: messages sent
	uint64_t tx_addr;   // Go: its core fi_addr
	uint64_t id;        // Go: our transport id
};

struct lnx_tp {
	struct fid_av *av;
	struct fid_cq *cq;
	struct fid_ep *ep;
	struct lnx_op *ops;
	size_t nops;
	size_t inject, tx_iov, rx_iov, tx_size, cq_data;
	uint64_t reads;    // fi_cq_read calls (each runs the core's progress)
	struct fi_cq_tagged_entry ents[LNX_EV_MAX];
	struct lnx_ev evs[LNX_EV_MAX];
	struct lnx_tp_lend lend;
};

static int lnx_tp_close(struct lnx_tp *t) {
	int ret = 0, r;
	if (!t) return 0;
	if (t->ep && (r = fi_close(&t->ep->fid)) && !ret) ret = r;
	if (t->cq && (r = fi_close(&t->cq->fid)) && !ret) ret = r;
	if (t->av && (r = fi_close(&t->av->fid)) && !ret) ret = r;
	free(t->ops);
	free(t);
	return ret;
}

static struct lnx_tp *lnx_tp_open(struct fid_domain *dom, struct fi_info *info, size_t nops,
				  size_t cq_size, const void *src, size_t srclen, int *ret) {
	struct fi_av_attr av_attr = { .type = FI_AV_TABLE };
	struct fi_cq_attr cq_attr = { .format = FI_CQ_FORMAT_TAGGED, .wait_obj = FI_WAIT_NONE,
				      .size = cq_size };
	struct lnx_tp *t = calloc(1, sizeof(*t));
	*ret = -FI_ENOMEM;
	if (!t) return NULL;
	if (posix_memalign((void **)&t->ops, 64, nops * sizeof(struct lnx_op))) {
		t->ops = NULL;
		goto fail;
	}
	memset(t->ops, 0, nops * sizeof(struct lnx_op));
	t->nops = nops;
	t->inject = info->tx_attr ? info->tx_attr->inject_size : 0;
	t->tx_iov = info->tx_attr ? info->tx_attr->iov_limit : 1;
	t->rx_iov = info->rx_attr ? info->rx_attr->iov_limit : 1;
	t->tx_size = info->tx_attr ? info->tx_attr->size : 0;
	t->cq_data = info->domain_attr ? info->domain_attr->cq_data_size : 0;
	if ((*ret = fi_av_open(dom, &av_attr, &t->av, NULL))) goto fail;
	if ((*ret = fi_cq_open(dom, &cq_attr, &t->cq, NULL))) goto fail;
	if (src) {
		// Bind to src (FI_SOURCE with a service): the core's own
		// fi_info with its src_addr replaced.
		struct fi_info *bound = fi_dupinfo(info);
		if (!bound) goto fail;
		free(bound->src_addr);
		bound->src_addr = malloc(srclen);
		if (!bound->src_addr) {
			fi_freeinfo(bound);
			goto fail;
		}
		memcpy(bound->src_addr, src, srclen);
		bound->src_addrlen = srclen;
		*ret = fi_endpoint(dom, bound, &t->ep, NULL);
		fi_freeinfo(bound);
		if (*ret) goto fail;
	} else if ((*ret = fi_endpoint(dom, info, &t->ep, NULL))) goto fail;
	if ((*ret = fi_ep_bind(t->ep, &t->av->fid, 0))) goto fail;
	if ((*ret = fi_ep_bind(t->ep, &t->cq->fid, FI_TRANSMIT | FI_RECV))) goto fail;
	if ((*ret = fi_enable(t->ep))) goto fail;
	*ret = 0;
	return t;
fail:
	lnx_tp_close(t);
	return NULL;
}

static int lnx_tp_getname(struct lnx_tp *t, void *buf, size_t *len) {
	return fi_getname(&t->ep->fid, buf, len);
}

static int lnx_tp_av_insert(struct lnx_tp *t, const void *name, uint64_t *out) {
	fi_addr_t a = FI_ADDR_NOTAVAIL;
	int n = fi_av_insert(t->av, name, 1, &a, 0, NULL);
	*out = a;
	if (n == 1 && a != FI_ADDR_NOTAVAIL) return 0;
	return n < 0 ? n : -FI_EINVAL;
}

static void lnx_ev_locate(struct lnx_tp *t, struct lnx_ev *ev, void *ctx) {
	uintptr_t p = (uintptr_t)ctx, base = (uintptr_t)t->ops;
	size_t span = t->nops * sizeof(struct lnx_op), off, in;
	if (!ctx || p < base || p >= base + span) {
		ev->op = UINT32_MAX;
		ev->sub = 2;
		return;
	}
	off = p - base;
	ev->op = (uint32_t)(off / sizeof(struct lnx_op));
	in = off % sizeof(struct lnx_op);
	ev->sub = in == 0 ? 0 : in == sizeof(struct fi_context2) ? 1 : 2;
}

// lnx_tp_drain reads up to max completions (successes and error entries,
// in CQ order) into t->evs and returns their count, or a negative error
// if the CQ itself failed before anything was read.
static int lnx_tp_drain(struct lnx_tp *t, int max) {
	int n = 0;
	if (max > LNX_EV_MAX) max = LNX_EV_MAX;
	while (n < max) {
		ssize_t want = max - n;
		ssize_t r = fi_cq_read(t->cq, t->ents, (size_t)want);
		t->reads++;
		if (r > 0) {
			for (ssize_t i = 0; i < r; i++) {
				struct lnx_ev *ev = &t->evs[n++];
				lnx_ev_locate(t, ev, t->ents[i].op_context);
				ev->err = 0;
				ev->prov_err = 0;
				ev->len = t->ents[i].len;
				ev->olen = 0;
				ev->tag = t->ents[i].tag;
				ev->data = t->ents[i].data;
			}
			// Fewer than asked: the CQ was empty after this read's
			// progress. Another read would only run the core's progress
			// (system calls) again for nothing.
			if (r < want) break;
			continue;
		}
		if (r == -FI_EAVAIL) {
			struct fi_cq_err_entry e;
			memset(&e, 0, sizeof(e));
			ssize_t rr = fi_cq_readerr(t->cq, &e, 0);
			if (rr == -FI_EAGAIN) break;
			if (rr < 0) return n > 0 ? n : (int)rr;
			struct lnx_ev *ev = &t->evs[n++];
			lnx_ev_locate(t, ev, e.op_context);
			ev->err = e.err > 0 ? e.err : e.err < 0 ? -e.err : FI_EOTHER;
			ev->prov_err = e.prov_errno;
			ev->len = e.len;
			ev->olen = e.olen;
			ev->tag = e.tag;
			ev->data = e.data;
			continue;
		}
		if (r == -FI_EAGAIN) break;
		return n > 0 ? n : (int)r;
	}
	return n;
}

int lnx_tp_peek(void *tp) {
	struct lnx_tp *t = tp;
	if (t->lend.stashed)
		return t->lend.stashed;
	int n = lnx_tp_drain(t, LNX_EV_MAX);
	if (n > 0)
		t->lend.stashed = n;
	return n;
}

static uint64_t lnx_le64(const uint8_t *b) { uint64_t v; memcpy(&v, b, 8); return v; }
static uint32_t lnx_le32(const uint8_t *b) { uint32_t v; memcpy(&v, b, 4); return v; }

// The eager layout of wire.go: version, kind, credits, flags, sender id,
// sequence number, tag, cq data, payload.
int lnx_tp_look(void *tp, struct lnx_tp_msg *m) {
	struct lnx_tp *t = tp;
	struct lnx_tp_lend *l = &t->lend;
	if (l->stashed != 1 || l->took >= LNX_LEND_TAKES || !l->peer || (l->owe && l->owed + 1 >= l->owe_max))
		return 0;
	const struct lnx_ev *ev = &t->evs[0];
	if (ev->err || ev->sub != 0 || ev->op >= l->pool || ev->len < LNX_HDR_EAGER ||
	    ev->len - LNX_HDR_EAGER > l->eager_max)
		return 0;
	const uint8_t *b = l->bounce + (uint64_t)ev->op * l->buf_size;
	if (b[0] != LNX_WIRE_VERSION || b[1] != LNX_KIND_EAGER || lnx_le64(b + 8) != l->peer ||
	    lnx_le32(b + 16) != l->rx_seq)
		return 0;
	m->flags = lnx_le32(b + 4);
	m->tag = lnx_le64(b + 24);
	m->data = lnx_le64(b + 32);
	m->size = ev->len - LNX_HDR_EAGER;
	m->payload = b + LNX_HDR_EAGER;
	return 1;
}

void lnx_tp_consume(void *tp) {
	struct lnx_tp *t = tp;
	struct lnx_tp_lend *l = &t->lend;
	const uint8_t *b = l->bounce + (uint64_t)t->evs[0].op * l->buf_size;
	uint16_t c;
	memcpy(&c, b + 2, 2);
	l->took_op[l->took++] = t->evs[0].op;
	l->rx_seq++;
	l->stashed = 0;
	if (l->window) {
		int64_t v = (int64_t)l->credits + c;
		l->credits = v > (int64_t)l->window ? (int32_t)l->window : (int32_t)v;
	}
	if (l->owe)
		l->owed++;
}

int lnx_tp_send_eager(void *tp, uint32_t flags, uint64_t tag, uint64_t data, const void *buf, size_t len) {
	struct lnx_tp *t = tp;
	struct lnx_tp_lend *l = &t->lend;
	uint8_t b[256];
	size_t total = LNX_HDR_EAGER + len;
	if (!l->tx_on || total > t->inject || total > sizeof(b) || (l->window && l->credits <= 0))
		return -1;
	uint16_t owed = l->owed > 0xffff ? 0xffff : (uint16_t)l->owed;
	uint32_t zero = 0;
	b[0] = LNX_WIRE_VERSION;
	b[1] = LNX_KIND_EAGER;
	memcpy(b + 2, &owed, 2);
	memcpy(b + 4, &flags, 4);
	memcpy(b + 8, &l->id, 8);
	memcpy(b + 16, &l->tx_seq, 4);
	memcpy(b + 20, &zero, 4);
	memcpy(b + 24, &tag, 8);
	memcpy(b + 32, &data, 8);
	if (len)
		memcpy(b + LNX_HDR_EAGER, buf, len);
	if (fi_inject(t->ep, b, total, (fi_addr_t)l->tx_addr))
		return -1;
	l->tx_seq++;
	l->owed -= owed;
	if (l->window)
		l->credits--;
	l->sent++;
	return 0;
}

static ssize_t lnx_tp_sendv(struct lnx_tp *t, uint32_t op, int sub, int off, int niov, uint64_t dest) {
	struct lnx_op *o = &t->ops[op];
	return fi_sendv(t->ep, &o->iov[off], NULL, (size_t)niov, (fi_addr_t)dest, &o->ctx[sub]);
}

static ssize_t lnx_tp_tsendv(struct lnx_tp *t, uint32_t op, int sub, int off, int niov, uint64_t dest,
			     uint64_t tag) {
	struct lnx_op *o = &t->ops[op];
	return fi_tsendv(t->ep, &o->iov[off], &o->desc[off], (size_t)niov, (fi_addr_t)dest, tag, &o->ctx[sub]);
}

// A tagged send with remote CQ data: a tagged eager message (wire.go).
static ssize_t lnx_tp_tsenddata(struct lnx_tp *t, uint32_t op, int sub, int off, int niov, uint64_t dest,
				uint64_t tag, uint64_t data) {
	struct lnx_op *o = &t->ops[op];
	struct fi_msg_tagged m = {
		.msg_iov = &o->iov[off], .desc = &o->desc[off], .iov_count = (size_t)niov,
		.addr = (fi_addr_t)dest, .tag = tag, .ignore = 0, .context = &o->ctx[sub], .data = data,
	};
	return fi_tsendmsg(t->ep, &m, FI_REMOTE_CQ_DATA | FI_COMPLETION);
}

// A receive of tagged eager messages from src: any tag under mask.
static ssize_t lnx_tp_trecv_any(struct lnx_tp *t, uint32_t op, void *buf, size_t len, uint64_t src,
				uint64_t tag, uint64_t ignore) {
	struct lnx_op *o = &t->ops[op];
	return fi_trecv(t->ep, buf, len, NULL, (fi_addr_t)src, tag, ignore, &o->ctx[0]);
}

static ssize_t lnx_tp_trecvv(struct lnx_tp *t, uint32_t op, int sub, int off, int niov, uint64_t src,
			     uint64_t tag) {
	struct lnx_op *o = &t->ops[op];
	return fi_trecvv(t->ep, &o->iov[off], &o->desc[off], (size_t)niov, (fi_addr_t)src, tag, 0, &o->ctx[sub]);
}

static ssize_t lnx_tp_readv(struct lnx_tp *t, uint32_t op, int sub, int off, int niov, uint64_t src,
			    uint64_t addr, uint64_t key) {
	struct lnx_op *o = &t->ops[op];
	return fi_readv(t->ep, &o->iov[off], &o->desc[off], (size_t)niov, (fi_addr_t)src, addr, key, &o->ctx[sub]);
}

static ssize_t lnx_tp_recv(struct lnx_tp *t, uint32_t op, void *buf, size_t len) {
	struct lnx_op *o = &t->ops[op];
	return fi_recv(t->ep, buf, len, NULL, FI_ADDR_UNSPEC, &o->ctx[0]);
}

static ssize_t lnx_tp_inject(struct lnx_tp *t, const void *buf, size_t len, uint64_t dest) {
	return fi_inject(t->ep, buf, len, (fi_addr_t)dest);
}

static ssize_t lnx_tp_tinject(struct lnx_tp *t, const void *buf, size_t len, uint64_t dest, uint64_t tag) {
	return fi_tinject(t->ep, buf, len, (fi_addr_t)dest, tag);
}

static int lnx_tp_cancel(struct lnx_tp *t, uint32_t op, int sub) {
	return (int)fi_cancel(&t->ep->fid, &t->ops[op].ctx[sub]);
}
*/
import "C"

import (
	"errors"
	"unsafe"

	"github.com/lnx-go/lnx-go/lnx/fi"
)

// Limits of the C operation table.
const (
	opIOV    = C.LNX_OP_IOV     // iovec slots per operation
	hdrBytes = C.LNX_HDR_BYTES  // wire header area per operation
	evMax    = C.LNX_EV_MAX     // completions read per Poll
	maxUser  = C.LNX_OP_IOV - 1 // user pieces per operation
)

// core is the transport's C state: the core endpoint with its own AV and
// CQ, and the C operation table.
type core struct {
	c   *C.struct_lnx_tp
	ops []C.struct_lnx_op // view of c.ops
	evs []C.struct_lnx_ev // view of c.evs
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
	e := &k.evs[i]
	return uint64(e.tag), uint64(e.data)
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

func (k *core) drain(max int) int { return int(C.lnx_tp_drain(k.c, C.int(max))) }

// next reads up to max completions like drain, except that events C read
// while the transport was lent (the stash) come first.
func (k *core) next(max int) int {
	if s := k.c.lend.stashed; s != 0 {
		k.c.lend.stashed = 0
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

	oweMax uint32 // credits owed that Go returns itself

	took []uint32 // back: the bounce slots of the messages C took
	sent uint32   // back: messages C sent
}

// lend starts a lending with s.
func (k *core) lend(s *lendState) {
	l := &k.c.lend
	l.peer, l.rx_seq, l.took, l.sent = C.uint64_t(s.peer), C.uint32_t(s.rxSeq), 0, 0
	l.owe, l.owe_max, l.tx_on = cBool(s.owe), C.uint32_t(s.oweMax), cBool(s.txOn)
	l.tx_seq, l.window, l.credits, l.owed = C.uint32_t(s.txSeq), C.uint32_t(s.window), C.int32_t(s.credits), C.uint32_t(s.owed)
	l.tx_addr, l.id = C.uint64_t(s.txAddr), C.uint64_t(s.id)
}

// lent ends a lending and fills s with what C changed.
func (k *core) lent(s *lendState) {
	l := &k.c.lend
	s.rxSeq, s.txSeq, s.credits, s.owed = uint32(l.rx_seq), uint32(l.tx_seq), int32(l.credits), uint32(l.owed)
	s.took = s.took[:0]
	for _, op := range l.took_op[:min(int(l.took), len(l.took_op))] {
		s.took = append(s.took, uint32(op))
	}
	s.sent = uint32(l.sent)
	l.peer, l.took, l.tx_on, l.sent = 0, 0, 0, 0
}

func cBool(b bool) C.uint32_t {
	if b {
		return 1
	}
	return 0
}

// stashed reports whether events C read wait for Poll.
func (k *core) stashed() bool { return k.c.lend.stashed != 0 }

// The C entry points of a lent transport (lnx_tp_lend.h), which capi
// calls from C; Go calls them only in tests.

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
	e := &k.evs[i]
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
