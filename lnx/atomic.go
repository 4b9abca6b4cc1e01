// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only

package lnx

import (
	"math"
	"unsafe"

	"github.com/lnx-go/lnx-go/internal/fi"
	"github.com/lnx-go/lnx-go/lnx/logging"
)

// Atomic operations (enum fi_op) and datatypes (enum fi_datatype), as
// numbered by rdma/fi_domain.h in every libfabric version.
const (
	OpMin = iota
	OpMax
	OpSum
	OpProd
	OpLor
	OpLand
	OpBor
	OpBand
	OpLxor
	OpBxor
	OpRead
	OpWrite
	OpCswap
	OpCswapNe
	OpCswapLe
	OpCswapLt
	OpCswapGe
	OpCswapGt
	OpMswap
)

const (
	DtInt8 = iota
	DtUint8
	DtInt16
	DtUint16
	DtInt32
	DtUint32
	DtInt64
	DtUint64
	DtFloat
	DtDouble
)

// AtomicMaxBytes bounds one atomic operation's operands: they travel
// inline with the request, and the fetched values inline with the answer.
const AtomicMaxBytes = 1024

// Kinds of atomic call, for AtomicValid.
const (
	AtomicPlain   = iota // fi_atomic
	AtomicFetch          // fi_fetch_atomic
	AtomicCompare        // fi_compare_atomic
)

// dtSize is the byte size of a supported datatype, 0 for others.
func dtSize(dt int) int {
	switch dt {
	case DtInt8, DtUint8:
		return 1
	case DtInt16, DtUint16:
		return 2
	case DtInt32, DtUint32, DtFloat:
		return 4
	case DtInt64, DtUint64, DtDouble:
		return 8
	}
	return 0
}

// AtomicValid reports whether lnx executes op on dt for a call of the
// given kind, and the largest element count of one operation (what
// fi_query_atomic and its fetch/compare forms answer).
func AtomicValid(kind, op, dt int) (count uint64, size int, err error) {
	size = dtSize(dt)
	if size == 0 || op < 0 {
		return 0, 0, fi.Wrap(fi.EOPNOTSUPP, "atomic op %d on datatype %d not supported", op, dt)
	}
	float := dt == DtFloat || dt == DtDouble
	ok := false
	switch kind {
	case AtomicPlain:
		ok = op <= OpBxor || op == OpWrite
	case AtomicFetch:
		ok = op <= OpWrite
	case AtomicCompare:
		ok = op >= OpCswap && op <= OpMswap
	}
	if ok && float {
		switch op {
		case OpLor, OpLand, OpLxor, OpBor, OpBand, OpBxor, OpMswap:
			ok = false
		}
	}
	if !ok {
		return 0, 0, fi.Wrap(fi.EOPNOTSUPP, "atomic op %d on datatype %d not supported by this call", op, dt)
	}
	return uint64(AtomicMaxBytes / size), size, nil
}

// Atomic posts fi_atomic, fi_fetch_atomic or fi_compare_atomic (one ioc of
// each kind): op.IovBuf[0] holds the operands, op.Compare the compare
// values, op.Result the buffer for the fetched values.
func (e *Endpoint) Atomic(op *RMAOp) error {
	kind := AtomicPlain
	switch {
	case op.CmpOp:
		kind = AtomicCompare
	case op.Fetch:
		kind = AtomicFetch
	}
	max, size, err := AtomicValid(kind, op.AtomicOp, op.DT)
	if err != nil {
		return err
	}
	if op.Count == 0 || op.Count > max {
		return fi.Wrap(fi.EINVAL, "atomic count %d outside 1..%d", op.Count, max)
	}
	n := op.Count * uint64(size)
	need := n
	if op.AtomicOp == OpRead {
		need = 0
	}
	if op.N > 0 && op.length() < need || op.N == 0 && need > 0 {
		return fi.Wrap(fi.EINVAL, "atomic operands: %d bytes given, %d needed", op.length(), need)
	}
	if op.CmpOp && op.Compare.Len < n {
		return fi.Wrap(fi.EINVAL, "compare operands: %d bytes given, %d needed", op.Compare.Len, n)
	}
	if (op.Fetch || op.CmpOp) && (op.Result.Ptr == nil || op.Result.Len < n) {
		return fi.Wrap(fi.EINVAL, "result buffer: %d bytes given, %d needed", op.Result.Len, n)
	}
	// Operands and compare values travel inline: copied here, by the
	// device runtime from device memory. Fetched values into device
	// memory land in host memory first (rmaAnswer).
	var kinds [MaxIov]memKind
	e.devKinds(&op.Op, &kinds)
	payload := make([]byte, need, 2*n)
	if need > 0 {
		if err := gatherUpTo(payload, op.Iov(), kinds[:op.N]); err != nil {
			return err
		}
	}
	if op.CmpOp {
		cmp := [1]Buf{{Ptr: op.Compare.Ptr, Len: n}}
		ck := [1]memKind{e.kindOf(cmp[0], nil)}
		payload = payload[:2*n]
		if err := gather(payload[n:], cmp[:], ck[:]); err != nil {
			return err
		}
	}
	if op.Fetch || op.CmpOp {
		op.resultKind = e.kindOf(Buf{Ptr: op.Result.Ptr, Len: n}, op.ResultMR)
	}
	op.atomicPayload = payload
	op.Atomic = true
	op.N = 0
	return e.RMA(op)
}

// rmaServeAtomic executes an atomic request under the domain's key lock
// and answers with the old values when asked.
func (e *Endpoint) rmaServeAtomic(p rmaPeer, src uint64, h *rmaHdr, body []byte) {
	op, dt := int(h.op), int(h.dt)
	kind := AtomicPlain
	switch {
	case h.flags&rfCompare != 0:
		kind = AtomicCompare
	case h.flags&rfFetch != 0:
		kind = AtomicFetch
	}
	max, size, err := AtomicValid(kind, op, dt)
	n := h.count * uint64(size)
	access := fi.REMOTE_WRITE
	if op == OpRead {
		access = fi.REMOTE_READ
	}
	var dst [][]byte
	var mk memKind
	switch {
	case err != nil:
	case h.count == 0 || h.count > max || n != h.len:
		err = fi.Wrap(fi.EINVAL, "atomic of %d elements (%d bytes)", h.count, h.len)
	default:
		need := n
		if op == OpRead {
			need = 0
		}
		if kind == AtomicCompare {
			need = 2 * n
		}
		if uint64(len(body)) != need {
			err = fi.Wrap(fi.EINVAL, "atomic request carries %d operand bytes, wants %d", len(body), need)
			break
		}
		dst, mk, err = e.Domain.rmaTarget(h.key, h.addr, n, access)
		if err == nil && len(dst) != 1 {
			err = fi.Wrap(fi.EINVAL, "atomic target crosses pieces of an MR")
		}
	}
	if err != nil {
		logging.Debugf(logging.EPData, "refusing a remote atomic: %v", err)
		e.rmaAnswerTo(p, h.id, err, nil)
		return
	}
	var old []byte
	if h.flags&rfFetch != 0 {
		old = make([]byte, n)
	}
	var operand, compare []byte
	if op != OpRead {
		operand = body[:n]
	}
	if kind == AtomicCompare {
		compare = body[n:]
	}
	e.Domain.keys.mu.Lock()
	err = atomicAt(mk, dst[0], old, func(mem []byte) {
		applyAtomic(op, dt, size, mem, operand, compare)
	})
	e.Domain.keys.mu.Unlock()
	if err != nil {
		logging.Warnf(logging.EPData, "remote atomic on device memory: %v", err)
		e.rmaAnswerTo(p, h.id, err, nil)
		return
	}
	ev := fi.REMOTE_WRITE
	if op == OpRead {
		ev = fi.REMOTE_READ
	}
	e.rmaRemoteEvent(src, h, ev)
	e.rmaAnswerTo(p, h.id, nil, old)
}

// atomicAt runs apply on the target words mem (memory of kind k), after
// saving their old values in old when old is not nil; the caller holds
// the key lock. Device memory is copied to the host, changed there and
// copied back by the runtime: atomic against every other one-sided
// operation (they all take the key lock), not against device kernels
// writing the same words meanwhile.
func atomicAt(k memKind, mem, old []byte, apply func([]byte)) error {
	if !k.isDevice() {
		if old != nil {
			copy(old, mem)
		}
		apply(mem)
		return nil
	}
	rt, err := runtimeFor(k)
	if err != nil {
		return err
	}
	at := uintptr(unsafe.Pointer(unsafe.SliceData(mem)))
	host := make([]byte, len(mem))
	if err := rt.CopyToHost(host, at); err != nil {
		return fi.Wrap(fi.EIO, "copy from device: %v", err)
	}
	if old != nil {
		copy(old, host)
	}
	apply(host)
	if err := rt.CopyFromHost(at, host); err != nil {
		return fi.Wrap(fi.EIO, "copy to device: %v", err)
	}
	return nil
}

// applyAtomic applies op element by element to mem.
func applyAtomic(op, dt, size int, mem, operand, compare []byte) {
	for i := 0; i*size < len(mem); i++ {
		at := unsafe.Pointer(&mem[i*size])
		var v, c unsafe.Pointer
		if operand != nil {
			v = unsafe.Pointer(&operand[i*size])
		}
		if compare != nil {
			c = unsafe.Pointer(&compare[i*size])
		}
		switch dt {
		case DtInt8:
			applyInt[int8](op, at, v, c)
		case DtUint8:
			applyInt[uint8](op, at, v, c)
		case DtInt16:
			applyInt[int16](op, at, v, c)
		case DtUint16:
			applyInt[uint16](op, at, v, c)
		case DtInt32:
			applyInt[int32](op, at, v, c)
		case DtUint32:
			applyInt[uint32](op, at, v, c)
		case DtInt64:
			applyInt[int64](op, at, v, c)
		case DtUint64:
			applyInt[uint64](op, at, v, c)
		case DtFloat:
			applyNum[float32](op, at, v, c)
		case DtDouble:
			applyNum[float64](op, at, v, c)
		}
	}
}

type integer interface {
	~int8 | ~uint8 | ~int16 | ~uint16 | ~int32 | ~uint32 | ~int64 | ~uint64
}

type number interface {
	integer | ~float32 | ~float64
}

func truth[T number](x T) bool { return x != 0 }

func fromBool[T number](b bool) T {
	if b {
		return 1
	}
	return 0
}

// applyInt is applyNum plus the logical and bitwise operations.
func applyInt[T integer](op int, at, vp, cp unsafe.Pointer) {
	p := (*T)(at)
	var v, c T
	if vp != nil {
		v = *(*T)(vp)
	}
	if cp != nil {
		c = *(*T)(cp)
	}
	switch op {
	case OpLor:
		*p = fromBool[T](truth(*p) || truth(v))
	case OpLand:
		*p = fromBool[T](truth(*p) && truth(v))
	case OpLxor:
		*p = fromBool[T](truth(*p) != truth(v))
	case OpBor:
		*p |= v
	case OpBand:
		*p &= v
	case OpBxor:
		*p ^= v
	case OpMswap:
		*p = v&c | *p&^c
	default:
		applyNum[T](op, at, vp, cp)
	}
}

func applyNum[T number](op int, at, vp, cp unsafe.Pointer) {
	p := (*T)(at)
	var v, c T
	if vp != nil {
		v = *(*T)(vp)
	}
	if cp != nil {
		c = *(*T)(cp)
	}
	switch op {
	case OpMin:
		if isNaN(v) || v < *p {
			*p = v
		}
	case OpMax:
		if isNaN(v) || v > *p {
			*p = v
		}
	case OpSum:
		*p += v
	case OpProd:
		*p *= v
	case OpWrite:
		*p = v
	case OpCswap:
		if c == *p {
			*p = v
		}
	case OpCswapNe:
		if c != *p {
			*p = v
		}
	case OpCswapLe:
		if c <= *p {
			*p = v
		}
	case OpCswapLt:
		if c < *p {
			*p = v
		}
	case OpCswapGe:
		if c >= *p {
			*p = v
		}
	case OpCswapGt:
		if c > *p {
			*p = v
		}
	}
}

func isNaN[T number](x T) bool { return math.IsNaN(float64(x)) }
