// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only

//go:build cgo

package cuda

/*
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

// The driver API's types, as cuda.h declares them on 64-bit Linux.
typedef int CUresult;
typedef int CUdevice;
typedef unsigned long long CUdeviceptr;
typedef void *CUcontext;
typedef void *CUstream;
typedef struct { char reserved[64]; } CUipcMemHandle;

enum {
	F_cuInit,
	F_cuDeviceGetCount,
	F_cuDeviceGet,
	F_cuCtxGetCurrent,
	F_cuCtxSetCurrent,
	F_cuDevicePrimaryCtxRetain,
	F_cuPointerGetAttribute,
	F_cuMemcpyDtoH,
	F_cuMemcpyHtoD,
	F_cuMemcpyDtoD,
	F_cuStreamSynchronize,
	F_cuMemGetAddressRange,
	F_cuIpcGetMemHandle,
	F_cuIpcOpenMemHandle,
	F_cuIpcCloseMemHandle,
	F_cuDevicePrimaryCtxGetState,
	F_cuGetErrorName,
	F_cuMemAlloc,
	F_cuMemFree,
	F_cuMemHostRegister,
	F_cuMemHostUnregister,
	F_N
};

typedef CUresult (*t_init)(unsigned int);
typedef CUresult (*t_count)(int *);
typedef CUresult (*t_devget)(CUdevice *, int);
typedef CUresult (*t_ctxget)(CUcontext *);
typedef CUresult (*t_ctxset)(CUcontext);
typedef CUresult (*t_retain)(CUcontext *, CUdevice);
typedef CUresult (*t_attr)(void *, int, CUdeviceptr);
typedef CUresult (*t_dtoh)(void *, CUdeviceptr, size_t);
typedef CUresult (*t_htod)(CUdeviceptr, const void *, size_t);
typedef CUresult (*t_dtod)(CUdeviceptr, CUdeviceptr, size_t);
typedef CUresult (*t_sync)(CUstream);
typedef CUresult (*t_range)(CUdeviceptr *, size_t *, CUdeviceptr);
typedef CUresult (*t_ipcget)(CUipcMemHandle *, CUdeviceptr);
typedef CUresult (*t_ipcopen)(CUdeviceptr *, CUipcMemHandle, unsigned int);
typedef CUresult (*t_ipcclose)(CUdeviceptr);
typedef CUresult (*t_state)(CUdevice, unsigned int *, int *);
typedef CUresult (*t_errname)(CUresult, const char **);
typedef CUresult (*t_alloc)(CUdeviceptr *, size_t);
typedef CUresult (*t_free)(CUdeviceptr);
typedef CUresult (*t_hostreg)(void *, size_t, unsigned int);
typedef CUresult (*t_hostunreg)(void *);

#define CALL(c, name, type) ((type)(c)->fn[F_##name])

enum {
	ATTR_MEMORY_TYPE = 2,     // CU_POINTER_ATTRIBUTE_MEMORY_TYPE
	ATTR_DEVICE_ORDINAL = 9,  // CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL
	MEMTYPE_DEVICE = 2,       // CU_MEMORYTYPE_DEVICE
	MEMTYPE_UNIFIED = 4,      // CU_MEMORYTYPE_UNIFIED
	IPC_LAZY_PEER = 1,        // CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS
	HOSTREG_PORTABLE = 1,     // CU_MEMHOSTREGISTER_PORTABLE: pinned for every context
	ERR_OUT_OF_MEMORY = 2,
	ERR_INVALID_DEVICE = 101,
};

typedef struct {
	void *fn[F_N];
	int ndev;
	pthread_mutex_t mu;
	CUcontext *prim; // primary contexts, retained on first use
} lnx_cu;

static lnx_cu *lnx_cu_new(void) {
	lnx_cu *c = calloc(1, sizeof *c);
	if (c)
		pthread_mutex_init(&c->mu, NULL);
	return c;
}

static void lnx_cu_free(lnx_cu *c) {
	free(c->prim);
	free(c);
}

static void lnx_cu_set(lnx_cu *c, int i, void *p) { c->fn[i] = p; }

static const char *lnx_cu_errname(lnx_cu *c, CUresult r) {
	const char *s = NULL;
	if (c->fn[F_cuGetErrorName] && CALL(c, cuGetErrorName, t_errname)(r, &s) != 0)
		s = NULL;
	return s;
}

// lnx_cu_start runs cuInit and counts devices.
static CUresult lnx_cu_start(lnx_cu *c, int *ndev, int *where) {
	CUresult r;
	int n = 0;
	*where = F_cuInit;
	if ((r = CALL(c, cuInit, t_init)(0)))
		return r;
	*where = F_cuDeviceGetCount;
	if ((r = CALL(c, cuDeviceGetCount, t_count)(&n)))
		return r;
	if (n > 0 && !(c->prim = calloc((size_t)n, sizeof(CUcontext))))
		return ERR_OUT_OF_MEMORY;
	c->ndev = n;
	*ndev = n;
	return 0;
}

// primary returns device dev's primary context, retaining it once.
static CUresult primary(lnx_cu *c, int dev, CUcontext *out, int *where) {
	CUresult r = 0;
	if (dev < 0 || dev >= c->ndev) {
		*where = F_cuDeviceGet;
		return ERR_INVALID_DEVICE;
	}
	pthread_mutex_lock(&c->mu);
	if (!c->prim[dev]) {
		CUdevice d;
		CUcontext ctx = NULL;
		*where = F_cuDeviceGet;
		r = CALL(c, cuDeviceGet, t_devget)(&d, dev);
		if (!r) {
			*where = F_cuDevicePrimaryCtxRetain;
			r = CALL(c, cuDevicePrimaryCtxRetain, t_retain)(&ctx, d);
		}
		if (!r)
			c->prim[dev] = ctx;
	}
	*out = c->prim[dev];
	pthread_mutex_unlock(&c->mu);
	return r;
}

// home is the device for work that names none: the first device whose
// primary context is active (the one the application's CUDA runtime
// uses), else 0.
static int home(lnx_cu *c) {
	if (!c->fn[F_cuDevicePrimaryCtxGetState])
		return 0;
	for (int d = 0; d < c->ndev; d++) {
		CUdevice dv;
		unsigned int flags;
		int active = 0;
		if (CALL(c, cuDeviceGet, t_devget)(&dv, d) == 0 &&
		    CALL(c, cuDevicePrimaryCtxGetState, t_state)(dv, &flags, &active) == 0 &&
		    active)
			return d;
	}
	return 0;
}

typedef struct {
	int set;
	CUcontext prev;
	int used; // device whose primary context was made current; -1: the thread's own
} scope;

// enter makes sure a context is current on this thread. With dev >= 0 it
// is dev's primary context. With dev < 0 the thread's current context is
// kept if it has one; else the primary context of the device ptr lives on
// (ptr != 0), or of home().
static CUresult enter(lnx_cu *c, CUdeviceptr ptr, int dev, scope *s, int *where) {
	CUcontext cur = NULL, ctx = NULL;
	CUresult r;
	s->set = 0;
	s->prev = NULL;
	s->used = -1;
	*where = F_cuCtxGetCurrent;
	if ((r = CALL(c, cuCtxGetCurrent, t_ctxget)(&cur)))
		return r;
	if (dev < 0) {
		if (cur)
			return 0;
		dev = -1;
		if (ptr) {
			int ord = -1;
			if (CALL(c, cuPointerGetAttribute, t_attr)(&ord, ATTR_DEVICE_ORDINAL, ptr) == 0)
				dev = ord;
		}
		if (dev < 0 || dev >= c->ndev)
			dev = home(c);
	}
	if ((r = primary(c, dev, &ctx, where)))
		return r;
	s->used = dev;
	if (ctx == cur)
		return 0;
	*where = F_cuCtxSetCurrent;
	if ((r = CALL(c, cuCtxSetCurrent, t_ctxset)(ctx)))
		return r;
	s->set = 1;
	s->prev = cur;
	return 0;
}

static void leave(lnx_cu *c, scope *s) {
	if (s->set)
		CALL(c, cuCtxSetCurrent, t_ctxset)(s->prev);
}

// lnx_cu_classify: *isdev is 1 for device (or unified) memory, with its
// device ordinal in *ord. Needs no context.
static void lnx_cu_classify(lnx_cu *c, CUdeviceptr p, int *isdev, int *ord) {
	unsigned int type = 0;
	int o = 0;
	*isdev = 0;
	*ord = 0;
	if (CALL(c, cuPointerGetAttribute, t_attr)(&type, ATTR_MEMORY_TYPE, p) != 0)
		return;
	if (type != MEMTYPE_DEVICE && type != MEMTYPE_UNIFIED)
		return;
	if (CALL(c, cuPointerGetAttribute, t_attr)(&o, ATTR_DEVICE_ORDINAL, p) != 0 || o < 0)
		o = 0;
	*isdev = 1;
	*ord = o;
}

// Copies. Host-to-device from pageable memory and device-to-device may
// return before the data has landed; the legacy default stream they run
// on is synchronized before returning.
static CUresult lnx_cu_dtoh(lnx_cu *c, void *dst, CUdeviceptr src, size_t n, int *where) {
	scope s;
	CUresult r = enter(c, src, -1, &s, where);
	if (r)
		return r;
	*where = F_cuMemcpyDtoH;
	r = CALL(c, cuMemcpyDtoH, t_dtoh)(dst, src, n);
	leave(c, &s);
	return r;
}

static CUresult lnx_cu_htod(lnx_cu *c, CUdeviceptr dst, const void *src, size_t n, int *where) {
	scope s;
	CUresult r = enter(c, dst, -1, &s, where);
	if (r)
		return r;
	*where = F_cuMemcpyHtoD;
	r = CALL(c, cuMemcpyHtoD, t_htod)(dst, src, n);
	if (!r) {
		*where = F_cuStreamSynchronize;
		r = CALL(c, cuStreamSynchronize, t_sync)(NULL);
	}
	leave(c, &s);
	return r;
}

static CUresult lnx_cu_dtod(lnx_cu *c, CUdeviceptr dst, CUdeviceptr src, size_t n, int *where) {
	scope s;
	CUresult r = enter(c, src, -1, &s, where);
	if (r)
		return r;
	*where = F_cuMemcpyDtoD;
	r = CALL(c, cuMemcpyDtoD, t_dtod)(dst, src, n);
	if (!r) {
		*where = F_cuStreamSynchronize;
		r = CALL(c, cuStreamSynchronize, t_sync)(NULL);
	}
	leave(c, &s);
	return r;
}

static CUresult lnx_cu_range(lnx_cu *c, CUdeviceptr p, CUdeviceptr *base, size_t *size, int *where) {
	scope s;
	CUresult r = enter(c, p, -1, &s, where);
	if (r)
		return r;
	*where = F_cuMemGetAddressRange;
	r = CALL(c, cuMemGetAddressRange, t_range)(base, size, p);
	leave(c, &s);
	return r;
}

// lnx_cu_ipc_get exports the whole allocation holding p.
static CUresult lnx_cu_ipc_get(lnx_cu *c, CUdeviceptr p, void *h, CUdeviceptr *base, int *where) {
	scope s;
	size_t size = 0;
	CUresult r = enter(c, p, -1, &s, where);
	if (r)
		return r;
	*where = F_cuMemGetAddressRange;
	r = CALL(c, cuMemGetAddressRange, t_range)(base, &size, p);
	if (!r) {
		*where = F_cuIpcGetMemHandle;
		r = CALL(c, cuIpcGetMemHandle, t_ipcget)((CUipcMemHandle *)h, *base);
	}
	leave(c, &s);
	return r;
}

static CUresult lnx_cu_ipc_open(lnx_cu *c, const void *h, int dev, CUdeviceptr *out, int *used, int *where) {
	scope s;
	CUipcMemHandle hv;
	memcpy(&hv, h, sizeof hv);
	CUresult r = enter(c, 0, dev, &s, where);
	if (r)
		return r;
	*used = s.used;
	*where = F_cuIpcOpenMemHandle;
	r = CALL(c, cuIpcOpenMemHandle, t_ipcopen)(out, hv, IPC_LAZY_PEER);
	leave(c, &s);
	return r;
}

static CUresult lnx_cu_ipc_close(lnx_cu *c, CUdeviceptr p, int dev, int *where) {
	scope s;
	CUresult r = enter(c, dev < 0 ? p : 0, dev, &s, where);
	if (r)
		return r;
	*where = F_cuIpcCloseMemHandle;
	r = CALL(c, cuIpcCloseMemHandle, t_ipcclose)(p);
	leave(c, &s);
	return r;
}

static CUresult lnx_cu_alloc(lnx_cu *c, int dev, size_t n, CUdeviceptr *out, int *where) {
	scope s;
	if (!c->fn[F_cuMemAlloc]) {
		*where = F_cuMemAlloc;
		return -1;
	}
	CUresult r = enter(c, 0, dev, &s, where);
	if (r)
		return r;
	*where = F_cuMemAlloc;
	r = CALL(c, cuMemAlloc, t_alloc)(out, n);
	leave(c, &s);
	return r;
}

static CUresult lnx_cu_free_mem(lnx_cu *c, CUdeviceptr p, int *where) {
	scope s;
	if (!c->fn[F_cuMemFree]) {
		*where = F_cuMemFree;
		return -1;
	}
	CUresult r = enter(c, p, -1, &s, where);
	if (r)
		return r;
	*where = F_cuMemFree;
	r = CALL(c, cuMemFree, t_free)(p);
	leave(c, &s);
	return r;
}

// lnx_cu_pin page-locks host memory (cuMemHostRegister_v2, portable) in
// the thread's context or the home device's primary one; lnx_cu_unpin
// undoes it.
static CUresult lnx_cu_pin(lnx_cu *c, void *p, size_t n, int *where) {
	scope s;
	*where = F_cuMemHostRegister;
	if (!c->fn[F_cuMemHostRegister] || !c->fn[F_cuMemHostUnregister])
		return -1;
	CUresult r = enter(c, 0, -1, &s, where);
	if (r)
		return r;
	*where = F_cuMemHostRegister;
	r = CALL(c, cuMemHostRegister, t_hostreg)(p, n, HOSTREG_PORTABLE);
	leave(c, &s);
	return r;
}

static CUresult lnx_cu_unpin(lnx_cu *c, void *p, int *where) {
	scope s;
	*where = F_cuMemHostUnregister;
	if (!c->fn[F_cuMemHostUnregister])
		return -1;
	CUresult r = enter(c, 0, -1, &s, where);
	if (r)
		return r;
	*where = F_cuMemHostUnregister;
	r = CALL(c, cuMemHostUnregister, t_hostunreg)(p);
	leave(c, &s);
	return r;
}
*/
import "C"

import (
	"fmt"
	"unsafe"

	"github.com/lnx-go/lnx-go/hmem/internal/dl"
	"github.com/lnx-go/lnx-go/hmem/internal/loader"
)

// symbols is the driver's entry points, by slot of the C function table.
var symbols = [...]struct {
	slot     C.int
	names    []string
	required bool
}{
	{C.F_cuInit, []string{"cuInit"}, true},
	{C.F_cuDeviceGetCount, []string{"cuDeviceGetCount"}, true},
	{C.F_cuDeviceGet, []string{"cuDeviceGet"}, true},
	{C.F_cuCtxGetCurrent, []string{"cuCtxGetCurrent"}, true},
	{C.F_cuCtxSetCurrent, []string{"cuCtxSetCurrent"}, true},
	{C.F_cuDevicePrimaryCtxRetain, []string{"cuDevicePrimaryCtxRetain"}, true},
	{C.F_cuPointerGetAttribute, []string{"cuPointerGetAttribute"}, true},
	{C.F_cuMemcpyDtoH, []string{"cuMemcpyDtoH_v2"}, true},
	{C.F_cuMemcpyHtoD, []string{"cuMemcpyHtoD_v2"}, true},
	// cuMemcpy has cuMemcpyDtoD_v2's signature and infers the direction.
	{C.F_cuMemcpyDtoD, []string{"cuMemcpyDtoD_v2", "cuMemcpy"}, true},
	{C.F_cuStreamSynchronize, []string{"cuStreamSynchronize"}, true},
	{C.F_cuMemGetAddressRange, []string{"cuMemGetAddressRange_v2"}, true},
	{C.F_cuIpcGetMemHandle, []string{"cuIpcGetMemHandle"}, true},
	{C.F_cuIpcOpenMemHandle, []string{"cuIpcOpenMemHandle_v2", "cuIpcOpenMemHandle"}, true},
	{C.F_cuIpcCloseMemHandle, []string{"cuIpcCloseMemHandle"}, true},
	{C.F_cuDevicePrimaryCtxGetState, []string{"cuDevicePrimaryCtxGetState"}, false},
	{C.F_cuGetErrorName, []string{"cuGetErrorName"}, false},
	{C.F_cuMemAlloc, []string{"cuMemAlloc_v2"}, false},
	{C.F_cuMemFree, []string{"cuMemFree_v2"}, false},
	{C.F_cuMemHostRegister, []string{"cuMemHostRegister_v2", "cuMemHostRegister"}, false},
	{C.F_cuMemHostUnregister, []string{"cuMemHostUnregister"}, false},
}

// The table has exactly one entry per slot (compile-time check).
var (
	_ [int(C.F_N) - len(symbols)]struct{}
	_ [len(symbols) - int(C.F_N)]struct{}
)

func (r *Runtime) c() *C.lnx_cu { return (*C.lnx_cu)(r.St) }

func (r *Runtime) load() {
	lib, err := dl.Open(r.path)
	if err != nil {
		r.Why = "cuda: " + err.Error()
		return
	}
	r.LibOK = true
	c := C.lnx_cu_new()
	if c == nil {
		r.Why = "cuda: out of memory"
		return
	}
	want := make([]Symbol, len(symbols))
	for i, s := range symbols {
		want[i] = Symbol{Names: s.names, Required: s.required}
	}
	var missing []string
	r.Syms, missing = loader.Resolve(lib, want, func(i int, p unsafe.Pointer) {
		C.lnx_cu_set(c, symbols[i].slot, p)
	})
	if len(missing) > 0 {
		C.lnx_cu_free(c)
		r.Why = fmt.Sprintf("cuda: %s lacks %v", r.path, missing)
		return
	}
	var n, where C.int
	if rc := C.lnx_cu_start(c, &n, &where); rc != 0 {
		r.Why = r.errorOf(c, rc, where).Error()
		C.lnx_cu_free(c)
		return
	}
	if n <= 0 {
		C.lnx_cu_free(c)
		r.Why = "cuda: no CUDA devices (cuDeviceGetCount = 0)"
		return
	}
	r.NDev = int(n)
	r.St = unsafe.Pointer(c)
}

// errorOf builds the Error for rc from the call in slot where.
func (r *Runtime) errorOf(c *C.lnx_cu, rc C.CUresult, where C.int) *Error {
	e := &Error{Code: int(rc)}
	for i, s := range symbols {
		if s.slot == where {
			e.Func = s.names[0]
			if i < len(r.Syms) && r.Syms[i].Resolved != "" {
				e.Func = r.Syms[i].Resolved
			}
		}
	}
	if e.Func == "" {
		e.Func = "?"
	}
	if rc == -1 {
		e.Name = "entry point not in " + r.path
		return e
	}
	if s := C.lnx_cu_errname(c, rc); s != nil {
		e.Name = C.GoString(s)
	}
	return e
}

func (r *Runtime) fail(rc C.CUresult, where C.int) error {
	if rc == 0 {
		return nil
	}
	return r.errorOf(r.c(), rc, where)
}

func (r *Runtime) classify(ptr uintptr) (int, bool) {
	var isdev, ord C.int
	C.lnx_cu_classify(r.c(), C.CUdeviceptr(ptr), &isdev, &ord)
	return int(ord), isdev != 0
}

func (r *Runtime) copyToHost(dst []byte, src uintptr) error {
	var where C.int
	rc := C.lnx_cu_dtoh(r.c(), unsafe.Pointer(&dst[0]), C.CUdeviceptr(src), C.size_t(len(dst)), &where)
	return r.fail(rc, where)
}

func (r *Runtime) copyFromHost(dst uintptr, src []byte) error {
	var where C.int
	rc := C.lnx_cu_htod(r.c(), C.CUdeviceptr(dst), unsafe.Pointer(&src[0]), C.size_t(len(src)), &where)
	return r.fail(rc, where)
}

func (r *Runtime) copyDevice(dst, src uintptr, n uint64) error {
	var where C.int
	rc := C.lnx_cu_dtod(r.c(), C.CUdeviceptr(dst), C.CUdeviceptr(src), C.size_t(n), &where)
	return r.fail(rc, where)
}

func (r *Runtime) addressRange(ptr uintptr) (uintptr, int, error) {
	var base C.CUdeviceptr
	var size C.size_t
	var where C.int
	if rc := C.lnx_cu_range(r.c(), C.CUdeviceptr(ptr), &base, &size, &where); rc != 0 {
		return 0, 0, r.fail(rc, where)
	}
	return uintptr(base), int(size), nil
}

func (r *Runtime) ipcHandle(ptr uintptr) ([]byte, uintptr, error) {
	h := make([]byte, HandleSize)
	var base C.CUdeviceptr
	var where C.int
	if rc := C.lnx_cu_ipc_get(r.c(), C.CUdeviceptr(ptr), unsafe.Pointer(&h[0]), &base, &where); rc != 0 {
		return nil, 0, r.fail(rc, where)
	}
	return h, uintptr(base), nil
}

func (r *Runtime) ipcOpen(handle []byte, device int) (uintptr, int, error) {
	var p C.CUdeviceptr
	var used, where C.int
	if rc := C.lnx_cu_ipc_open(r.c(), unsafe.Pointer(&handle[0]), C.int(device), &p, &used, &where); rc != 0 {
		return 0, 0, r.fail(rc, where)
	}
	return uintptr(p), int(used), nil
}

func (r *Runtime) ipcClose(p uintptr, device int) error {
	var where C.int
	return r.fail(C.lnx_cu_ipc_close(r.c(), C.CUdeviceptr(p), C.int(device), &where), where)
}

func (r *Runtime) alloc(device, n int) (uintptr, error) {
	var p C.CUdeviceptr
	var where C.int
	if rc := C.lnx_cu_alloc(r.c(), C.int(device), C.size_t(n), &p, &where); rc != 0 {
		return 0, r.fail(rc, where)
	}
	return uintptr(p), nil
}

func (r *Runtime) free(p uintptr) error {
	var where C.int
	return r.fail(C.lnx_cu_free_mem(r.c(), C.CUdeviceptr(p), &where), where)
}

func (r *Runtime) pin(b []byte) error {
	var where C.int
	// The driver keeps only the address of memory outside the Go heap
	// (lnx's staging buffers are mmap'd).
	return r.fail(C.lnx_cu_pin(r.c(), unsafe.Pointer(&b[0]), C.size_t(len(b)), &where), where)
}

func (r *Runtime) unpin(b []byte) error {
	var where C.int
	return r.fail(C.lnx_cu_unpin(r.c(), unsafe.Pointer(&b[0]), &where), where)
}
