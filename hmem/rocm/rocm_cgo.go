// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only

//go:build cgo

package rocm

/*
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

// HIP's types, as hip_runtime_api.h declares them on 64-bit Linux.
typedef int hipError_t;
typedef struct { char reserved[64]; } hipIpcMemHandle_t;
typedef void *hipStream_t;

// hipPointerAttribute_t has this layout in ROCm 5.x and 6.x (6.x puts the
// first field in a union with an alias, "type").
typedef struct {
	int memoryType;
	int device;
	void *devicePointer;
	void *hostPointer;
	int isManaged;
	unsigned allocationFlags;
} lnx_hip_attr;

enum {
	F_hipGetDeviceCount,
	F_hipPointerGetAttributes,
	F_hipMemcpy,
	F_hipMemGetAddressRange,
	F_hipIpcGetMemHandle,
	F_hipIpcOpenMemHandle,
	F_hipIpcCloseMemHandle,
	F_hipRuntimeGetVersion,
	F_hipGetErrorName,
	F_hipGetLastError,
	F_hipStreamSynchronize,
	F_hipMalloc,
	F_hipFree,
	F_hipHostRegister,
	F_hipHostUnregister,
	F_N
};

typedef hipError_t (*t_count)(int *);
typedef hipError_t (*t_attr)(lnx_hip_attr *, const void *);
typedef hipError_t (*t_memcpy)(void *, const void *, size_t, int);
typedef hipError_t (*t_range)(void **, size_t *, void *);
typedef hipError_t (*t_ipcget)(hipIpcMemHandle_t *, void *);
typedef hipError_t (*t_ipcopen)(void **, hipIpcMemHandle_t, unsigned int);
typedef hipError_t (*t_ipcclose)(void *);
typedef hipError_t (*t_version)(int *);
typedef const char *(*t_errname)(hipError_t);
typedef hipError_t (*t_lasterr)(void);
typedef hipError_t (*t_sync)(hipStream_t);
typedef hipError_t (*t_malloc)(void **, size_t);
typedef hipError_t (*t_free)(void *);
typedef hipError_t (*t_hostreg)(void *, size_t, unsigned int);
typedef hipError_t (*t_hostunreg)(void *);

#define CALL(c, name, type) ((type)(c)->fn[F_##name])

enum {
	H2D = 1, // hipMemcpyHostToDevice
	D2H = 2, // hipMemcpyDeviceToHost
	D2D = 3, // hipMemcpyDeviceToDevice
};

typedef struct {
	void *fn[F_N];
	int v6;         // ROCm 6 numbering of hipMemoryType and IPC flags
} lnx_hip;

static lnx_hip *lnx_hip_new(void) { return calloc(1, sizeof(lnx_hip)); }
static void lnx_hip_free(lnx_hip *c) { free(c); }
static void lnx_hip_set(lnx_hip *c, int i, void *p) { c->fn[i] = p; }

static const char *lnx_hip_errname(lnx_hip *c, hipError_t r) {
	return c->fn[F_hipGetErrorName] ? CALL(c, hipGetErrorName, t_errname)(r) : NULL;
}

// clear resets HIP's per-thread last error after a call of ours failed, so
// that the application's hipGetLastError does not see lnx's failures.
static void clear(lnx_hip *c) {
	if (c->fn[F_hipGetLastError])
		CALL(c, hipGetLastError, t_lasterr)();
}

// lnx_hip_start reads the version and counts devices.
static hipError_t lnx_hip_start(lnx_hip *c, int *ndev, int *version, int *where) {
	int n = 0, v = 0;
	hipError_t r;
	if (c->fn[F_hipRuntimeGetVersion] &&
	    CALL(c, hipRuntimeGetVersion, t_version)(&v) == 0)
		*version = v;
	c->v6 = v >= 60000000;
	*where = F_hipGetDeviceCount;
	r = CALL(c, hipGetDeviceCount, t_count)(&n);
	if (r) {
		clear(c);
		return r;
	}
	*ndev = n;
	return 0;
}

// lnx_hip_classify: *isdev is 1 for device or managed memory, with its
// device in *dev. 5.x: Host 0, Device 1, Array 2, Unified 3; 6.x:
// Unregistered 0, Host 1, Device 2, Managed 3, Array 10, Unified 11.
static void lnx_hip_classify(lnx_hip *c, uintptr_t p, int *isdev, int *dev) {
	lnx_hip_attr a;
	memset(&a, 0, sizeof a);
	*isdev = 0;
	*dev = 0;
	if (CALL(c, hipPointerGetAttributes, t_attr)(&a, (const void *)p) != 0) {
		clear(c); // 5.x: unknown host memory is an error
		return;
	}
	int t = a.memoryType;
	int d = c->v6 ? (t == 2 || t == 3 || t == 10 || t == 11)
		      : (t == 1 || t == 2 || t == 3);
	if (!d && !a.isManaged)
		return;
	*isdev = 1;
	*dev = a.device < 0 ? 0 : a.device;
}

static hipError_t lnx_hip_copy(lnx_hip *c, uintptr_t dst, uintptr_t src, size_t n, int kind, int *where) {
	*where = F_hipMemcpy;
	hipError_t r = CALL(c, hipMemcpy, t_memcpy)((void *)dst, (const void *)src, n, kind);
	if (!r && kind == D2D && c->fn[F_hipStreamSynchronize]) {
		*where = F_hipStreamSynchronize;
		r = CALL(c, hipStreamSynchronize, t_sync)(NULL);
	}
	if (r)
		clear(c);
	return r;
}

static hipError_t lnx_hip_dtoh(lnx_hip *c, void *dst, uintptr_t src, size_t n, int *where) {
	return lnx_hip_copy(c, (uintptr_t)dst, src, n, D2H, where);
}

static hipError_t lnx_hip_htod(lnx_hip *c, uintptr_t dst, const void *src, size_t n, int *where) {
	return lnx_hip_copy(c, dst, (uintptr_t)src, n, H2D, where);
}

static hipError_t lnx_hip_range(lnx_hip *c, uintptr_t p, uintptr_t *base, size_t *size, int *where) {
	void *b = NULL;
	*where = F_hipMemGetAddressRange;
	hipError_t r = CALL(c, hipMemGetAddressRange, t_range)(&b, size, (void *)p);
	if (r)
		clear(c);
	*base = (uintptr_t)b;
	return r;
}

static hipError_t lnx_hip_ipc_get(lnx_hip *c, uintptr_t p, void *h, uintptr_t *base, int *where) {
	size_t size = 0;
	hipError_t r = lnx_hip_range(c, p, base, &size, where);
	if (r)
		return r;
	*where = F_hipIpcGetMemHandle;
	r = CALL(c, hipIpcGetMemHandle, t_ipcget)((hipIpcMemHandle_t *)h, (void *)*base);
	if (r)
		clear(c);
	return r;
}

static hipError_t lnx_hip_ipc_open(lnx_hip *c, const void *h, uintptr_t *out, int *where) {
	hipIpcMemHandle_t hv;
	void *p = NULL;
	memcpy(&hv, h, sizeof hv);
	*where = F_hipIpcOpenMemHandle;
	// hipIpcMemLazyEnablePeerAccess: 0 in ROCm 5.x, 1 in 6.x.
	hipError_t r = CALL(c, hipIpcOpenMemHandle, t_ipcopen)(&p, hv, c->v6 ? 1u : 0u);
	if (r)
		clear(c);
	*out = (uintptr_t)p;
	return r;
}

static hipError_t lnx_hip_ipc_close(lnx_hip *c, uintptr_t p, int *where) {
	*where = F_hipIpcCloseMemHandle;
	hipError_t r = CALL(c, hipIpcCloseMemHandle, t_ipcclose)((void *)p);
	if (r)
		clear(c);
	return r;
}

static hipError_t lnx_hip_alloc(lnx_hip *c, size_t n, uintptr_t *out, int *where) {
	void *p = NULL;
	*where = F_hipMalloc;
	if (!c->fn[F_hipMalloc])
		return -1;
	hipError_t r = CALL(c, hipMalloc, t_malloc)(&p, n);
	if (r)
		clear(c);
	*out = (uintptr_t)p;
	return r;
}

static hipError_t lnx_hip_free_mem(lnx_hip *c, uintptr_t p, int *where) {
	*where = F_hipFree;
	if (!c->fn[F_hipFree])
		return -1;
	hipError_t r = CALL(c, hipFree, t_free)((void *)p);
	if (r)
		clear(c);
	return r;
}

// lnx_hip_pin page-locks host memory (hipHostRegister, portable: flag 1,
// hipHostRegisterPortable); lnx_hip_unpin undoes it.
static hipError_t lnx_hip_pin(lnx_hip *c, void *p, size_t n, int *where) {
	*where = F_hipHostRegister;
	if (!c->fn[F_hipHostRegister] || !c->fn[F_hipHostUnregister])
		return -1;
	hipError_t r = CALL(c, hipHostRegister, t_hostreg)(p, n, 1);
	if (r)
		clear(c);
	return r;
}

static hipError_t lnx_hip_unpin(lnx_hip *c, void *p, int *where) {
	*where = F_hipHostUnregister;
	if (!c->fn[F_hipHostUnregister])
		return -1;
	hipError_t r = CALL(c, hipHostUnregister, t_hostunreg)(p);
	if (r)
		clear(c);
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

// symbols is HIP's entry points, by slot of the C function table.
var symbols = [...]struct {
	slot     C.int
	names    []string
	required bool
}{
	{C.F_hipGetDeviceCount, []string{"hipGetDeviceCount"}, true},
	{C.F_hipPointerGetAttributes, []string{"hipPointerGetAttributes"}, true},
	{C.F_hipMemcpy, []string{"hipMemcpy"}, true},
	{C.F_hipMemGetAddressRange, []string{"hipMemGetAddressRange"}, true},
	{C.F_hipIpcGetMemHandle, []string{"hipIpcGetMemHandle"}, true},
	{C.F_hipIpcOpenMemHandle, []string{"hipIpcOpenMemHandle"}, true},
	{C.F_hipIpcCloseMemHandle, []string{"hipIpcCloseMemHandle"}, true},
	{C.F_hipRuntimeGetVersion, []string{"hipRuntimeGetVersion"}, false},
	{C.F_hipGetErrorName, []string{"hipGetErrorName"}, false},
	{C.F_hipGetLastError, []string{"hipGetLastError"}, false},
	{C.F_hipStreamSynchronize, []string{"hipStreamSynchronize"}, false},
	{C.F_hipMalloc, []string{"hipMalloc"}, false},
	{C.F_hipFree, []string{"hipFree"}, false},
	{C.F_hipHostRegister, []string{"hipHostRegister"}, false},
	{C.F_hipHostUnregister, []string{"hipHostUnregister"}, false},
}

// The table has exactly one entry per slot (compile-time check).
var (
	_ [int(C.F_N) - len(symbols)]struct{}
	_ [len(symbols) - int(C.F_N)]struct{}
)

func (r *Runtime) c() *C.lnx_hip { return (*C.lnx_hip)(r.St) }

func (r *Runtime) load() {
	lib, err := dl.Open(r.path)
	if err != nil {
		r.Why = "rocm: " + err.Error()
		return
	}
	r.LibOK = true
	c := C.lnx_hip_new()
	if c == nil {
		r.Why = "rocm: out of memory"
		return
	}
	want := make([]Symbol, len(symbols))
	for i, s := range symbols {
		want[i] = Symbol{Names: s.names, Required: s.required}
	}
	var missing []string
	r.Syms, missing = loader.Resolve(lib, want, func(i int, p unsafe.Pointer) {
		C.lnx_hip_set(c, symbols[i].slot, p)
	})
	if len(missing) > 0 {
		C.lnx_hip_free(c)
		r.Why = fmt.Sprintf("rocm: %s lacks %v", r.path, missing)
		return
	}
	var n, v, where C.int
	if rc := C.lnx_hip_start(c, &n, &v, &where); rc != 0 {
		r.version = int(v)
		r.Why = r.errorOf(c, rc, where).Error() + ": no usable ROCm device"
		C.lnx_hip_free(c)
		return
	}
	r.version = int(v)
	if n <= 0 {
		C.lnx_hip_free(c)
		r.Why = "rocm: no ROCm devices (hipGetDeviceCount = 0)"
		return
	}
	r.NDev = int(n)
	r.St = unsafe.Pointer(c)
}

// errorOf builds the Error for rc from the call in slot where.
func (r *Runtime) errorOf(c *C.lnx_hip, rc C.hipError_t, where C.int) *Error {
	e := &Error{Code: int(rc), Func: "?"}
	for _, s := range symbols {
		if s.slot == where {
			e.Func = s.names[0]
		}
	}
	if rc == -1 {
		e.Name = "entry point not in " + r.path
		return e
	}
	if s := C.lnx_hip_errname(c, rc); s != nil {
		e.Name = C.GoString(s)
	}
	return e
}

func (r *Runtime) fail(rc C.hipError_t, where C.int) error {
	if rc == 0 {
		return nil
	}
	return r.errorOf(r.c(), rc, where)
}

func (r *Runtime) classify(ptr uintptr) (int, bool) {
	var isdev, dev C.int
	C.lnx_hip_classify(r.c(), C.uintptr_t(ptr), &isdev, &dev)
	return int(dev), isdev != 0
}

func (r *Runtime) copyToHost(dst []byte, src uintptr) error {
	var where C.int
	rc := C.lnx_hip_dtoh(r.c(), unsafe.Pointer(&dst[0]), C.uintptr_t(src), C.size_t(len(dst)), &where)
	return r.fail(rc, where)
}

func (r *Runtime) copyFromHost(dst uintptr, src []byte) error {
	var where C.int
	rc := C.lnx_hip_htod(r.c(), C.uintptr_t(dst), unsafe.Pointer(&src[0]), C.size_t(len(src)), &where)
	return r.fail(rc, where)
}

func (r *Runtime) copyDevice(dst, src uintptr, n uint64) error {
	var where C.int
	rc := C.lnx_hip_copy(r.c(), C.uintptr_t(dst), C.uintptr_t(src), C.size_t(n), C.D2D, &where)
	return r.fail(rc, where)
}

func (r *Runtime) addressRange(ptr uintptr) (uintptr, uint64, error) {
	var base C.uintptr_t
	var size C.size_t
	var where C.int
	if rc := C.lnx_hip_range(r.c(), C.uintptr_t(ptr), &base, &size, &where); rc != 0 {
		return 0, 0, r.fail(rc, where)
	}
	return uintptr(base), uint64(size), nil
}

func (r *Runtime) ipcHandle(ptr uintptr) ([]byte, uintptr, error) {
	h := make([]byte, HandleSize)
	var base C.uintptr_t
	var where C.int
	if rc := C.lnx_hip_ipc_get(r.c(), C.uintptr_t(ptr), unsafe.Pointer(&h[0]), &base, &where); rc != 0 {
		return nil, 0, r.fail(rc, where)
	}
	return h, uintptr(base), nil
}

func (r *Runtime) ipcOpen(handle []byte) (uintptr, error) {
	var p C.uintptr_t
	var where C.int
	if rc := C.lnx_hip_ipc_open(r.c(), unsafe.Pointer(&handle[0]), &p, &where); rc != 0 {
		return 0, r.fail(rc, where)
	}
	return uintptr(p), nil
}

func (r *Runtime) ipcClose(p uintptr) error {
	var where C.int
	return r.fail(C.lnx_hip_ipc_close(r.c(), C.uintptr_t(p), &where), where)
}

func (r *Runtime) alloc(n uint64) (uintptr, error) {
	var p C.uintptr_t
	var where C.int
	if rc := C.lnx_hip_alloc(r.c(), C.size_t(n), &p, &where); rc != 0 {
		return 0, r.fail(rc, where)
	}
	return uintptr(p), nil
}

func (r *Runtime) free(p uintptr) error {
	var where C.int
	return r.fail(C.lnx_hip_free_mem(r.c(), C.uintptr_t(p), &where), where)
}

func (r *Runtime) pin(b []byte) error {
	var where C.int
	return r.fail(C.lnx_hip_pin(r.c(), unsafe.Pointer(&b[0]), C.size_t(len(b)), &where), where)
}

func (r *Runtime) unpin(b []byte) error {
	var where C.int
	return r.fail(C.lnx_hip_unpin(r.c(), unsafe.Pointer(&b[0]), &where), where)
}
