// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only

package main

/*
#cgo CFLAGS: -I${SRCDIR}/include
#include <sys/uio.h>
#include "lnx_capi.h"
*/
import "C"

import (
	"unsafe"

	"github.com/lnx-go/lnx-go/hmem"
	"github.com/lnx-go/lnx-go/internal/fi"
	"github.com/lnx-go/lnx-go/lnx"
)

// lnx_go_mr_reg registers memory (every fi_mr_reg* variant arrives here as
// an fi_mr_attr) and returns the MR's handle and key.
//
//export lnx_go_mr_reg
func lnx_go_mr_reg(dh C.lnx_handle, attr *C.struct_fi_mr_attr, flags C.uint64_t, h *C.lnx_handle, key *C.uint64_t) (ret C.int) {
	defer recoverTo(&ret, "fi_mr_reg")
	d, err := object[*lnx.Domain](dh)
	if err != nil {
		return code("fi_mr_reg", err)
	}
	if attr == nil {
		return code("fi_mr_reg", fi.Wrap(fi.EINVAL, "fi_mr_regattr: NULL attr"))
	}
	n := int(attr.iov_count)
	if n > 0 && attr.mr_iov == nil {
		return code("fi_mr_reg", fi.Wrap(fi.EINVAL, "fi_mr_regattr: NULL mr_iov with iov_count %d", n))
	}
	if n > lnx.MaxIov {
		return code("fi_mr_reg", fi.Wrap(fi.EINVAL, "fi_mr_regv: %d iovs exceed mr_iov_limit %d", n, lnx.MaxIov))
	}
	var iov [lnx.MaxIov]lnx.Buf
	for i, v := range unsafe.Slice(attr.mr_iov, n) {
		iov[i] = lnx.Buf{Ptr: v.iov_base, Len: uint64(v.iov_len)}
	}
	a := lnx.MRAttr{
		Iov: iov[:n], Access: uint64(attr.access), Offset: uint64(attr.offset),
		RequestedKey: uint64(attr.requested_key), Iface: hmem.Iface(attr.iface),
		Device: int(*(*C.int)(unsafe.Pointer(&attr.device))), Flags: uint64(flags),
	}
	m, err := d.RegMR(a)
	if err != nil {
		return code("fi_mr_reg", err)
	}
	*key = C.uint64_t(m.Key)
	return register(m, h)
}
