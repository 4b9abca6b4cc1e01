/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * emu.c: an emulated GPU for testing lnx's hmem loaders without a GPU.
 *
 * One shared object exports the entry points that hmem/cuda resolves from
 * libcuda.so.1 (the CUDA driver API) and the ones that hmem/rocm resolves
 * from libamdhip64.so (HIP), with the same C signatures, so the loaders
 * reach it through exactly the dlopen/dlsym path they use for the real
 * libraries (FI_LNX_CUDA_LIB / FI_LNX_ROCM_LIB name it).
 *
 *   cc -shared -fPIC -o libemu.so hmem/emu/emu.c
 *
 * Device memory cannot be touched by the CPU. Every allocation is a memfd
 * mapped twice: PROT_NONE at the address handed out as the "device
 * pointer", so any CPU load or store through it faults (SIGSEGV,
 * SEGV_ACCERR), and read-write (MAP_SHARED) at an alias address that only
 * this file knows, which the emulator's own copy functions use. IPC
 * handles name the exporter's pid, the memfd's descriptor number and its
 * inode; the importer opens /proc/<pid>/fd/<n>, checks the inode, and maps
 * it the same two ways. A handle is valid while the exporter lives and the
 * allocation is not freed, as with the real drivers.
 *
 * The emulator is strict where the real libraries are: the CUDA entry
 * points need cuInit and a current context (CUDA_ERROR_NOT_INITIALIZED,
 * CUDA_ERROR_INVALID_CONTEXT), copy kinds and ranges are checked, IPC open
 * flags must be the documented value, a process may not open its own
 * handle, and a HIP pointer is unknown to the CUDA API and vice versa.
 *
 * Environment:
 *   EMU_DEVICES       number of devices (default 1; 0 = none: cuInit
 *                     returns CUDA_ERROR_NO_DEVICE and hipGetDeviceCount
 *                     hipErrorNoDevice); read at every call
 *   EMU_HIP_VERSION   "6": behave like ROCm 6 (hipMemoryType values of
 *                     6.x, success with hipMemoryTypeUnregistered for
 *                     unknown pointers, IPC flag 1); default ROCm 5.2
 *                     (5.x values, hipErrorInvalidValue for unknown
 *                     pointers, IPC flag 0)
 *
 * Build-time: -DEMU_NO_CU_IPC / -DEMU_NO_HIP_IPC leave out the IPC entry
 * points, to test a loader's missing-symbol path.
 *
 * Not a real API: emu_counter(name) returns a call counter or a live
 * count ("cuPointerGetAttribute", "hipPointerGetAttributes", "copies",
 * "allocs", "ipc_maps", "pinned": host ranges registered now,
 * "pinned_copies": copies whose host side lay in one), so tests can see
 * what the loaders did.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#define EXPORT __attribute__((visibility("default")))
#define MAXDEV 16

/* ------------------------------------------------------------------ */
/* Allocations                                                         */

enum { API_CUDA = 1, API_HIP = 2 };

typedef struct buf {
	uintptr_t dev;  /* PROT_NONE mapping: the "device pointer" */
	char *rw;       /* private read-write alias of the same memfd */
	size_t size;    /* bytes asked for */
	size_t maplen;  /* size rounded up to pages */
	int fd;         /* memfd; -1 for imported mappings */
	int device;
	int api;
	int imported;
	uint64_t ino, stdev;
	struct buf *next;
} buf;

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static buf *bufs;
static long n_cu_attr, n_hip_attr, n_copies, n_allocs, n_ipc_maps, n_pinned_copies;

/* Host ranges registered with cuMemHostRegister / hipHostRegister. */
typedef struct pin {
	uintptr_t p;
	size_t n;
	struct pin *next;
} pin;
static pin *pins;
static long n_pinned;

#define IPC_MAGIC "EMUIPC1"
typedef struct {
	char magic[8];
	int32_t pid;
	int32_t fd;
	uint64_t size;
	uint64_t ino;
	uint64_t stdev;
	int32_t device;
	int32_t api;
	uint64_t pad;
} ipc_wire; /* 56 bytes, inside the 64-byte handles */

typedef struct { char reserved[64]; } handle64;
_Static_assert(sizeof(ipc_wire) <= sizeof(handle64), "ipc handle too big");

static int ndev(void)
{
	const char *s = getenv("EMU_DEVICES");
	if (!s || !*s)
		return 1;
	int n = atoi(s);
	if (n < 0)
		n = 0;
	if (n > MAXDEV)
		n = MAXDEV;
	return n;
}

static int hip6(void)
{
	const char *s = getenv("EMU_HIP_VERSION");
	return s && s[0] == '6';
}

/* lookup finds the allocation of api holding [p, p+n); caller holds mu. */
static buf *lookup(uintptr_t p, size_t n, int api)
{
	for (buf *b = bufs; b; b = b->next) {
		if (b->api != api || p < b->dev || p >= b->dev + b->size)
			continue;
		if (n > b->size - (p - b->dev))
			return NULL;
		return b;
	}
	return NULL;
}

/* alias returns the read-write address of device range [p, p+n). */
static char *alias(uintptr_t p, size_t n, int api)
{
	pthread_mutex_lock(&mu);
	buf *b = lookup(p, n, api);
	char *a = b ? b->rw + (p - b->dev) : NULL;
	pthread_mutex_unlock(&mu);
	return a;
}

/* map_both maps fd PROT_NONE (the device address) and read-write. */
static int map_both(int fd, size_t maplen, uintptr_t *dev, char **rw)
{
	void *d = mmap(NULL, maplen, PROT_NONE, MAP_SHARED, fd, 0);
	if (d == MAP_FAILED)
		return -1;
	void *a = mmap(NULL, maplen, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (a == MAP_FAILED) {
		munmap(d, maplen);
		return -1;
	}
	*dev = (uintptr_t)d;
	*rw = a;
	return 0;
}

static size_t roundpage(size_t n)
{
	size_t pg = (size_t)sysconf(_SC_PAGESIZE);
	return (n + pg - 1) / pg * pg;
}

/* emu_alloc returns 0, or -1 for bad size / out of memory. */
static int emu_alloc(size_t size, int device, int api, uintptr_t *out)
{
	if (size == 0)
		return -1;
	int fd = memfd_create("emu-device-mem", MFD_CLOEXEC);
	if (fd < 0)
		return -1;
	size_t maplen = roundpage(size);
	struct stat st;
	buf *b = calloc(1, sizeof *b);
	if (!b || ftruncate(fd, (off_t)maplen) != 0 || fstat(fd, &st) != 0 ||
	    map_both(fd, maplen, &b->dev, &b->rw) != 0) {
		free(b);
		close(fd);
		return -1;
	}
	b->size = size;
	b->maplen = maplen;
	b->fd = fd;
	b->device = device;
	b->api = api;
	b->ino = (uint64_t)st.st_ino;
	b->stdev = (uint64_t)st.st_dev;
	pthread_mutex_lock(&mu);
	b->next = bufs;
	bufs = b;
	n_allocs++;
	pthread_mutex_unlock(&mu);
	*out = b->dev;
	return 0;
}

/* emu_release unmaps the allocation or import based at p; imported says
 * which kind the caller may release. Returns 0 or -1. */
static int emu_release(uintptr_t p, int api, int imported)
{
	pthread_mutex_lock(&mu);
	buf **pp = &bufs, *b;
	for (; (b = *pp); pp = &b->next)
		if (b->dev == p && b->api == api && b->imported == imported)
			break;
	if (!b) {
		pthread_mutex_unlock(&mu);
		return -1;
	}
	*pp = b->next;
	if (imported)
		n_ipc_maps--;
	else
		n_allocs--;
	pthread_mutex_unlock(&mu);
	munmap((void *)b->dev, b->maplen);
	munmap(b->rw, b->maplen);
	if (b->fd >= 0)
		close(b->fd);
	free(b);
	return 0;
}

/* emu_range reports the allocation holding p. */
static int emu_range(uintptr_t p, int api, uintptr_t *base, size_t *size)
{
	pthread_mutex_lock(&mu);
	buf *b = lookup(p, 1, api);
	if (b) {
		if (base)
			*base = b->dev;
		if (size)
			*size = b->size;
	}
	pthread_mutex_unlock(&mu);
	return b ? 0 : -1;
}

/* emu_export fills h for the owned allocation based at p. */
__attribute__((unused)) static int emu_export(uintptr_t p, int api, handle64 *h)
{
	ipc_wire w;
	memset(&w, 0, sizeof w);
	pthread_mutex_lock(&mu);
	buf *b = lookup(p, 1, api);
	if (!b || b->imported || b->dev != p) {
		pthread_mutex_unlock(&mu);
		return -1;
	}
	memcpy(w.magic, IPC_MAGIC, sizeof w.magic);
	w.pid = (int32_t)getpid();
	w.fd = b->fd;
	w.size = b->size;
	w.ino = b->ino;
	w.stdev = b->stdev;
	w.device = b->device;
	w.api = api;
	pthread_mutex_unlock(&mu);
	memset(h, 0, sizeof *h);
	memcpy(h, &w, sizeof w);
	return 0;
}

/* emu_import maps the allocation that h names. Returns 0, -1 for a bad or
 * stale handle, -2 for a handle of this very process. */
__attribute__((unused)) static int emu_import(const handle64 *h, int api, uintptr_t *out)
{
	ipc_wire w;
	memcpy(&w, h, sizeof w);
	if (memcmp(w.magic, IPC_MAGIC, sizeof w.magic) != 0 || w.api != api ||
	    w.size == 0)
		return -1;
	if (w.pid == (int32_t)getpid())
		return -2;
	char path[64];
	snprintf(path, sizeof path, "/proc/%d/fd/%d", (int)w.pid, (int)w.fd);
	int fd = open(path, O_RDWR | O_CLOEXEC);
	if (fd < 0)
		return -1;
	struct stat st;
	size_t maplen = roundpage(w.size);
	buf *b = calloc(1, sizeof *b);
	if (!b || fstat(fd, &st) != 0 || (uint64_t)st.st_ino != w.ino ||
	    (uint64_t)st.st_dev != w.stdev || (size_t)st.st_size < maplen ||
	    map_both(fd, maplen, &b->dev, &b->rw) != 0) {
		free(b);
		close(fd);
		return -1;
	}
	close(fd); /* the mappings keep the memfd alive */
	b->fd = -1;
	b->size = w.size;
	b->maplen = maplen;
	b->device = w.device;
	b->api = api;
	b->imported = 1;
	b->ino = w.ino;
	b->stdev = w.stdev;
	pthread_mutex_lock(&mu);
	b->next = bufs;
	bufs = b;
	n_ipc_maps++;
	pthread_mutex_unlock(&mu);
	*out = b->dev;
	return 0;
}

/* emu_copy copies between device ranges (through their aliases) and host
 * memory; srcdev/dstdev say which side is device memory of api. */
static int emu_copy(uintptr_t dst, int dstdev, uintptr_t src, int srcdev,
		    size_t n, int api)
{
	if (n == 0)
		return 0;
	char *d = dstdev ? alias(dst, n, api) : (char *)dst;
	const char *s = srcdev ? alias(src, n, api) : (const char *)src;
	if (!d || !s)
		return -1;
	if (dstdev != srcdev) {
		uintptr_t h = dstdev ? src : dst;
		pthread_mutex_lock(&mu);
		for (pin *q = pins; q; q = q->next)
			if (h >= q->p && h + n <= q->p + q->n) {
				n_pinned_copies++;
				break;
			}
		pthread_mutex_unlock(&mu);
	}
	memmove(d, s, n);
	__atomic_add_fetch(&n_copies, 1, __ATOMIC_RELAXED);
	return 0;
}

static int is_dev(uintptr_t p, int api)
{
	pthread_mutex_lock(&mu);
	int r = lookup(p, 1, api) != NULL;
	pthread_mutex_unlock(&mu);
	return r;
}

static int dev_of(uintptr_t p, int api)
{
	pthread_mutex_lock(&mu);
	buf *b = lookup(p, 1, api);
	int d = b ? b->device : -1;
	pthread_mutex_unlock(&mu);
	return d;
}

EXPORT long emu_counter(const char *name)
{
	long v = -1;
	pthread_mutex_lock(&mu);
	if (!strcmp(name, "cuPointerGetAttribute"))
		v = n_cu_attr;
	else if (!strcmp(name, "hipPointerGetAttributes"))
		v = n_hip_attr;
	else if (!strcmp(name, "copies"))
		v = __atomic_load_n(&n_copies, __ATOMIC_RELAXED);
	else if (!strcmp(name, "allocs"))
		v = n_allocs;
	else if (!strcmp(name, "ipc_maps"))
		v = n_ipc_maps;
	else if (!strcmp(name, "pinned"))
		v = n_pinned;
	else if (!strcmp(name, "pinned_copies"))
		v = n_pinned_copies;
	pthread_mutex_unlock(&mu);
	return v;
}

/* Registers [p, p+n): 0, 1 when it overlaps a registered range (the
 * drivers' "already registered"), -1 for bad arguments or device memory. */
static int emu_pin(uintptr_t p, size_t n, int api)
{
	if (!p || !n || is_dev(p, api))
		return -1;
	pthread_mutex_lock(&mu);
	for (pin *q = pins; q; q = q->next)
		if (p < q->p + q->n && q->p < p + n) {
			pthread_mutex_unlock(&mu);
			return 1;
		}
	pin *q = malloc(sizeof *q);
	if (!q) {
		pthread_mutex_unlock(&mu);
		return -1;
	}
	*q = (pin){ p, n, pins };
	pins = q;
	n_pinned++;
	pthread_mutex_unlock(&mu);
	return 0;
}

/* Unregisters the range starting at p: 0, or 1 when none does. */
static int emu_unpin(uintptr_t p)
{
	pthread_mutex_lock(&mu);
	for (pin **q = &pins; *q; q = &(*q)->next)
		if ((*q)->p == p) {
			pin *d = *q;
			*q = d->next;
			free(d);
			n_pinned--;
			pthread_mutex_unlock(&mu);
			return 0;
		}
	pthread_mutex_unlock(&mu);
	return 1;
}

/* ------------------------------------------------------------------ */
/* CUDA driver API                                                     */

typedef int CUresult;
typedef int CUdevice;
typedef unsigned long long CUdeviceptr;
typedef struct CUctx_st *CUcontext;
typedef struct CUstream_st *CUstream;
typedef handle64 CUipcMemHandle;

enum {
	CUDA_SUCCESS = 0,
	CUDA_ERROR_INVALID_VALUE = 1,
	CUDA_ERROR_OUT_OF_MEMORY = 2,
	CUDA_ERROR_NOT_INITIALIZED = 3,
	CUDA_ERROR_NO_DEVICE = 100,
	CUDA_ERROR_INVALID_DEVICE = 101,
	CUDA_ERROR_INVALID_CONTEXT = 201,
	CUDA_ERROR_INVALID_HANDLE = 400,
	CUDA_ERROR_NOT_FOUND = 500,
	CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED = 712,
	CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED = 713,
};
enum {
	CU_POINTER_ATTRIBUTE_CONTEXT = 1,
	CU_POINTER_ATTRIBUTE_MEMORY_TYPE = 2,
	CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL = 9,
	CU_POINTER_ATTRIBUTE_RANGE_START_ADDR = 11,
	CU_POINTER_ATTRIBUTE_RANGE_SIZE = 12,
};
enum { CU_MEMORYTYPE_DEVICE = 2 };
#define CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS 0x1

struct CUctx_st {
	int device;
	int retained;
};
static struct CUctx_st ctxs[MAXDEV];
static __thread CUcontext cur_ctx;
static int cu_inited;

static CUresult cu_ready(void)
{
	if (!__atomic_load_n(&cu_inited, __ATOMIC_ACQUIRE))
		return CUDA_ERROR_NOT_INITIALIZED;
	if (!cur_ctx)
		return CUDA_ERROR_INVALID_CONTEXT;
	return CUDA_SUCCESS;
}

EXPORT CUresult cuInit(unsigned int flags)
{
	if (flags != 0)
		return CUDA_ERROR_INVALID_VALUE;
	if (ndev() == 0)
		return CUDA_ERROR_NO_DEVICE;
	__atomic_store_n(&cu_inited, 1, __ATOMIC_RELEASE);
	return CUDA_SUCCESS;
}

EXPORT CUresult cuDeviceGetCount(int *count)
{
	if (!__atomic_load_n(&cu_inited, __ATOMIC_ACQUIRE))
		return CUDA_ERROR_NOT_INITIALIZED;
	if (!count)
		return CUDA_ERROR_INVALID_VALUE;
	*count = ndev();
	return CUDA_SUCCESS;
}

EXPORT CUresult cuDeviceGet(CUdevice *dev, int ordinal)
{
	if (!__atomic_load_n(&cu_inited, __ATOMIC_ACQUIRE))
		return CUDA_ERROR_NOT_INITIALIZED;
	if (!dev)
		return CUDA_ERROR_INVALID_VALUE;
	if (ordinal < 0 || ordinal >= ndev())
		return CUDA_ERROR_INVALID_DEVICE;
	*dev = ordinal;
	return CUDA_SUCCESS;
}

EXPORT CUresult cuGetErrorName(CUresult r, const char **name)
{
	if (!name)
		return CUDA_ERROR_INVALID_VALUE;
	switch (r) {
	case CUDA_SUCCESS: *name = "CUDA_SUCCESS"; break;
	case CUDA_ERROR_INVALID_VALUE: *name = "CUDA_ERROR_INVALID_VALUE"; break;
	case CUDA_ERROR_OUT_OF_MEMORY: *name = "CUDA_ERROR_OUT_OF_MEMORY"; break;
	case CUDA_ERROR_NOT_INITIALIZED: *name = "CUDA_ERROR_NOT_INITIALIZED"; break;
	case CUDA_ERROR_NO_DEVICE: *name = "CUDA_ERROR_NO_DEVICE"; break;
	case CUDA_ERROR_INVALID_DEVICE: *name = "CUDA_ERROR_INVALID_DEVICE"; break;
	case CUDA_ERROR_INVALID_CONTEXT: *name = "CUDA_ERROR_INVALID_CONTEXT"; break;
	case CUDA_ERROR_INVALID_HANDLE: *name = "CUDA_ERROR_INVALID_HANDLE"; break;
	case CUDA_ERROR_NOT_FOUND: *name = "CUDA_ERROR_NOT_FOUND"; break;
	case CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED:
		*name = "CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED";
		break;
	case CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED:
		*name = "CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED";
		break;
	default: *name = NULL; return CUDA_ERROR_INVALID_VALUE;
	}
	return CUDA_SUCCESS;
}

EXPORT CUresult cuDevicePrimaryCtxRetain(CUcontext *pctx, CUdevice dev)
{
	if (!__atomic_load_n(&cu_inited, __ATOMIC_ACQUIRE))
		return CUDA_ERROR_NOT_INITIALIZED;
	if (!pctx)
		return CUDA_ERROR_INVALID_VALUE;
	if (dev < 0 || dev >= ndev())
		return CUDA_ERROR_INVALID_DEVICE;
	pthread_mutex_lock(&mu);
	ctxs[dev].device = dev;
	ctxs[dev].retained++;
	pthread_mutex_unlock(&mu);
	*pctx = &ctxs[dev];
	return CUDA_SUCCESS;
}

EXPORT CUresult cuDevicePrimaryCtxRelease_v2(CUdevice dev)
{
	if (dev < 0 || dev >= MAXDEV)
		return CUDA_ERROR_INVALID_DEVICE;
	pthread_mutex_lock(&mu);
	if (ctxs[dev].retained > 0)
		ctxs[dev].retained--;
	pthread_mutex_unlock(&mu);
	return CUDA_SUCCESS;
}

EXPORT CUresult cuDevicePrimaryCtxGetState(CUdevice dev, unsigned int *flags,
					   int *active)
{
	if (!__atomic_load_n(&cu_inited, __ATOMIC_ACQUIRE))
		return CUDA_ERROR_NOT_INITIALIZED;
	if (dev < 0 || dev >= ndev())
		return CUDA_ERROR_INVALID_DEVICE;
	if (!flags || !active)
		return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&mu);
	*flags = 0;
	*active = ctxs[dev].retained > 0;
	pthread_mutex_unlock(&mu);
	return CUDA_SUCCESS;
}

EXPORT CUresult cuCtxGetCurrent(CUcontext *pctx)
{
	if (!__atomic_load_n(&cu_inited, __ATOMIC_ACQUIRE))
		return CUDA_ERROR_NOT_INITIALIZED;
	if (!pctx)
		return CUDA_ERROR_INVALID_VALUE;
	*pctx = cur_ctx;
	return CUDA_SUCCESS;
}

EXPORT CUresult cuCtxSetCurrent(CUcontext ctx)
{
	if (!__atomic_load_n(&cu_inited, __ATOMIC_ACQUIRE))
		return CUDA_ERROR_NOT_INITIALIZED;
	if (ctx && (ctx < &ctxs[0] || ctx >= &ctxs[MAXDEV] ||
		    ctx->retained == 0))
		return CUDA_ERROR_INVALID_CONTEXT;
	cur_ctx = ctx;
	return CUDA_SUCCESS;
}

EXPORT CUresult cuStreamSynchronize(CUstream s)
{
	(void)s;
	return cu_ready();
}

EXPORT CUresult cuPointerGetAttribute(void *data, int attr, CUdeviceptr p)
{
	__atomic_add_fetch(&n_cu_attr, 1, __ATOMIC_RELAXED);
	if (!__atomic_load_n(&cu_inited, __ATOMIC_ACQUIRE))
		return CUDA_ERROR_NOT_INITIALIZED;
	if (!data)
		return CUDA_ERROR_INVALID_VALUE;
	uintptr_t base;
	size_t size;
	if (emu_range((uintptr_t)p, API_CUDA, &base, &size) != 0)
		return CUDA_ERROR_INVALID_VALUE; /* unregistered host memory */
	switch (attr) {
	case CU_POINTER_ATTRIBUTE_MEMORY_TYPE:
		*(unsigned int *)data = CU_MEMORYTYPE_DEVICE;
		return CUDA_SUCCESS;
	case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL:
		*(int *)data = dev_of((uintptr_t)p, API_CUDA);
		return CUDA_SUCCESS;
	case CU_POINTER_ATTRIBUTE_CONTEXT:
		*(CUcontext *)data = &ctxs[dev_of((uintptr_t)p, API_CUDA)];
		return CUDA_SUCCESS;
	case CU_POINTER_ATTRIBUTE_RANGE_START_ADDR:
		*(CUdeviceptr *)data = base;
		return CUDA_SUCCESS;
	case CU_POINTER_ATTRIBUTE_RANGE_SIZE:
		*(size_t *)data = size;
		return CUDA_SUCCESS;
	}
	return CUDA_ERROR_INVALID_VALUE;
}

EXPORT CUresult cuMemAlloc_v2(CUdeviceptr *p, size_t n)
{
	CUresult r = cu_ready();
	if (r)
		return r;
	if (!p || n == 0)
		return CUDA_ERROR_INVALID_VALUE;
	uintptr_t d;
	if (emu_alloc(n, cur_ctx->device, API_CUDA, &d) != 0)
		return CUDA_ERROR_OUT_OF_MEMORY;
	*p = d;
	return CUDA_SUCCESS;
}

EXPORT CUresult cuMemFree_v2(CUdeviceptr p)
{
	CUresult r = cu_ready();
	if (r)
		return r;
	return emu_release((uintptr_t)p, API_CUDA, 0) ? CUDA_ERROR_INVALID_VALUE
						       : CUDA_SUCCESS;
}

EXPORT CUresult cuMemGetAddressRange_v2(CUdeviceptr *base, size_t *size,
					CUdeviceptr p)
{
	CUresult r = cu_ready();
	if (r)
		return r;
	uintptr_t b;
	size_t s;
	if (emu_range((uintptr_t)p, API_CUDA, &b, &s) != 0)
		return CUDA_ERROR_NOT_FOUND;
	if (base)
		*base = b;
	if (size)
		*size = s;
	return CUDA_SUCCESS;
}

EXPORT CUresult cuMemcpyDtoH_v2(void *dst, CUdeviceptr src, size_t n)
{
	CUresult r = cu_ready();
	if (r)
		return r;
	if (is_dev((uintptr_t)dst, API_CUDA))
		return CUDA_ERROR_INVALID_VALUE;
	return emu_copy((uintptr_t)dst, 0, (uintptr_t)src, 1, n, API_CUDA)
		       ? CUDA_ERROR_INVALID_VALUE
		       : CUDA_SUCCESS;
}

EXPORT CUresult cuMemcpyHtoD_v2(CUdeviceptr dst, const void *src, size_t n)
{
	CUresult r = cu_ready();
	if (r)
		return r;
	if (is_dev((uintptr_t)src, API_CUDA))
		return CUDA_ERROR_INVALID_VALUE;
	return emu_copy((uintptr_t)dst, 1, (uintptr_t)src, 0, n, API_CUDA)
		       ? CUDA_ERROR_INVALID_VALUE
		       : CUDA_SUCCESS;
}

EXPORT CUresult cuMemcpyDtoD_v2(CUdeviceptr dst, CUdeviceptr src, size_t n)
{
	CUresult r = cu_ready();
	if (r)
		return r;
	return emu_copy((uintptr_t)dst, 1, (uintptr_t)src, 1, n, API_CUDA)
		       ? CUDA_ERROR_INVALID_VALUE
		       : CUDA_SUCCESS;
}

/* Like the driver, registration needs a current context. */
EXPORT CUresult cuMemHostRegister_v2(void *p, size_t n, unsigned int flags)
{
	CUresult r = cu_ready();
	if (r)
		return r;
	if (flags & ~0x0fu)
		return CUDA_ERROR_INVALID_VALUE;
	switch (emu_pin((uintptr_t)p, n, API_CUDA)) {
	case 0: return CUDA_SUCCESS;
	case 1: return CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED;
	default: return CUDA_ERROR_INVALID_VALUE;
	}
}

EXPORT CUresult cuMemHostUnregister(void *p)
{
	CUresult r = cu_ready();
	if (r)
		return r;
	return emu_unpin((uintptr_t)p) ? CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED : CUDA_SUCCESS;
}

#ifndef EMU_NO_CU_IPC
EXPORT CUresult cuIpcGetMemHandle(CUipcMemHandle *h, CUdeviceptr p)
{
	CUresult r = cu_ready();
	if (r)
		return r;
	if (!h)
		return CUDA_ERROR_INVALID_VALUE;
	return emu_export((uintptr_t)p, API_CUDA, h) ? CUDA_ERROR_INVALID_VALUE
						     : CUDA_SUCCESS;
}

/* The handle is passed by value, as in cuda.h. */
EXPORT CUresult cuIpcOpenMemHandle_v2(CUdeviceptr *p, CUipcMemHandle h,
				      unsigned int flags)
{
	CUresult r = cu_ready();
	if (r)
		return r;
	if (!p || flags != CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS)
		return CUDA_ERROR_INVALID_VALUE;
	uintptr_t d;
	switch (emu_import(&h, API_CUDA, &d)) {
	case 0:
		*p = d;
		return CUDA_SUCCESS;
	case -2:
		return CUDA_ERROR_INVALID_CONTEXT; /* own handle, as the driver */
	}
	return CUDA_ERROR_INVALID_HANDLE;
}

EXPORT CUresult cuIpcCloseMemHandle(CUdeviceptr p)
{
	CUresult r = cu_ready();
	if (r)
		return r;
	return emu_release((uintptr_t)p, API_CUDA, 1) ? CUDA_ERROR_INVALID_VALUE
						      : CUDA_SUCCESS;
}
#endif

/* ------------------------------------------------------------------ */
/* HIP                                                                 */

typedef int hipError_t;
typedef handle64 hipIpcMemHandle_t;
typedef struct ihipStream_t *hipStream_t;

enum {
	hipSuccess = 0,
	hipErrorInvalidValue = 1,
	hipErrorOutOfMemory = 2,
	hipErrorNoDevice = 100,
	hipErrorInvalidDevice = 101,
	hipErrorInvalidContext = 201,
	hipErrorInvalidHandle = 400,
	hipErrorHostMemoryAlreadyRegistered = 712,
	hipErrorHostMemoryNotRegistered = 713,
};
enum {
	hipMemcpyHostToHost = 0,
	hipMemcpyHostToDevice = 1,
	hipMemcpyDeviceToHost = 2,
	hipMemcpyDeviceToDevice = 3,
	hipMemcpyDefault = 4,
};

/* hipPointerAttribute_t: the same layout in ROCm 5.x and 6.x (6.x names
 * the first field type as well as memoryType); the enum values differ. */
typedef struct {
	int memoryType;
	int device;
	void *devicePointer;
	void *hostPointer;
	int isManaged;
	unsigned allocationFlags;
} hipPointerAttribute_t;

static __thread int hip_cur_dev;

EXPORT hipError_t hipInit(unsigned int flags)
{
	if (flags != 0)
		return hipErrorInvalidValue;
	return ndev() ? hipSuccess : hipErrorNoDevice;
}

EXPORT hipError_t hipGetDeviceCount(int *count)
{
	if (!count)
		return hipErrorInvalidValue;
	*count = ndev();
	return *count ? hipSuccess : hipErrorNoDevice;
}

EXPORT hipError_t hipGetDevice(int *dev)
{
	if (!dev)
		return hipErrorInvalidValue;
	if (ndev() == 0)
		return hipErrorNoDevice;
	*dev = hip_cur_dev;
	return hipSuccess;
}

EXPORT hipError_t hipSetDevice(int dev)
{
	if (dev < 0 || dev >= ndev())
		return hipErrorInvalidDevice;
	hip_cur_dev = dev;
	return hipSuccess;
}

EXPORT hipError_t hipRuntimeGetVersion(int *v)
{
	if (!v)
		return hipErrorInvalidValue;
	*v = hip6() ? 60200000 : 50221153;
	return hipSuccess;
}

EXPORT const char *hipGetErrorName(hipError_t e)
{
	switch (e) {
	case hipSuccess: return "hipSuccess";
	case hipErrorInvalidValue: return "hipErrorInvalidValue";
	case hipErrorOutOfMemory: return "hipErrorOutOfMemory";
	case hipErrorNoDevice: return "hipErrorNoDevice";
	case hipErrorInvalidDevice: return "hipErrorInvalidDevice";
	case hipErrorInvalidContext: return "hipErrorInvalidContext";
	case hipErrorInvalidHandle: return "hipErrorInvalidHandle";
	case hipErrorHostMemoryAlreadyRegistered: return "hipErrorHostMemoryAlreadyRegistered";
	case hipErrorHostMemoryNotRegistered: return "hipErrorHostMemoryNotRegistered";
	}
	return "hipErrorUnknown";
}

/* The real hipGetLastError returns and resets the thread's last error;
 * the emulator keeps none. */
EXPORT hipError_t hipGetLastError(void)
{
	return hipSuccess;
}

EXPORT hipError_t hipStreamSynchronize(hipStream_t s)
{
	(void)s;
	return ndev() ? hipSuccess : hipErrorNoDevice;
}

EXPORT hipError_t hipPointerGetAttributes(hipPointerAttribute_t *a,
					  const void *p)
{
	__atomic_add_fetch(&n_hip_attr, 1, __ATOMIC_RELAXED);
	if (!a)
		return hipErrorInvalidValue;
	memset(a, 0, sizeof *a);
	int d = dev_of((uintptr_t)p, API_HIP);
	if (d < 0) {
		if (!hip6())
			return hipErrorInvalidValue; /* 5.x: unknown pointer */
		a->memoryType = 0;               /* 6.x: Unregistered */
		a->device = -1;
		return hipSuccess;
	}
	a->memoryType = hip6() ? 2 : 1; /* hipMemoryTypeDevice */
	a->device = d;
	a->devicePointer = (void *)p;
	return hipSuccess;
}

EXPORT hipError_t hipMalloc(void **p, size_t n)
{
	if (!p)
		return hipErrorInvalidValue;
	if (ndev() == 0)
		return hipErrorNoDevice;
	if (n == 0) {
		*p = NULL;
		return hipSuccess;
	}
	uintptr_t d;
	if (emu_alloc(n, hip_cur_dev, API_HIP, &d) != 0)
		return hipErrorOutOfMemory;
	*p = (void *)d;
	return hipSuccess;
}

EXPORT hipError_t hipFree(void *p)
{
	if (!p)
		return hipSuccess;
	return emu_release((uintptr_t)p, API_HIP, 0) ? hipErrorInvalidValue
						     : hipSuccess;
}

EXPORT hipError_t hipMemGetAddressRange(void **base, size_t *size, void *p)
{
	uintptr_t b;
	size_t s;
	if (emu_range((uintptr_t)p, API_HIP, &b, &s) != 0)
		return hipErrorInvalidValue;
	if (base)
		*base = (void *)b;
	if (size)
		*size = s;
	return hipSuccess;
}

EXPORT hipError_t hipMemcpy(void *dst, const void *src, size_t n, int kind)
{
	if (ndev() == 0)
		return hipErrorNoDevice;
	int dd = is_dev((uintptr_t)dst, API_HIP);
	int sd = is_dev((uintptr_t)src, API_HIP);
	switch (kind) {
	case hipMemcpyHostToHost:
		if (dd || sd)
			return hipErrorInvalidValue;
		break;
	case hipMemcpyHostToDevice:
		if (!dd || sd)
			return hipErrorInvalidValue;
		break;
	case hipMemcpyDeviceToHost:
		if (dd || !sd)
			return hipErrorInvalidValue;
		break;
	case hipMemcpyDeviceToDevice:
		if (!dd || !sd)
			return hipErrorInvalidValue;
		break;
	case hipMemcpyDefault:
		break;
	default:
		return hipErrorInvalidValue;
	}
	return emu_copy((uintptr_t)dst, dd, (uintptr_t)src, sd, n, API_HIP)
		       ? hipErrorInvalidValue
		       : hipSuccess;
}

EXPORT hipError_t hipHostRegister(void *p, size_t n, unsigned int flags)
{
	if (ndev() == 0)
		return hipErrorNoDevice;
	if (flags & ~0x0fu)
		return hipErrorInvalidValue;
	switch (emu_pin((uintptr_t)p, n, API_HIP)) {
	case 0: return hipSuccess;
	case 1: return hipErrorHostMemoryAlreadyRegistered;
	default: return hipErrorInvalidValue;
	}
}

EXPORT hipError_t hipHostUnregister(void *p)
{
	if (ndev() == 0)
		return hipErrorNoDevice;
	return emu_unpin((uintptr_t)p) ? hipErrorHostMemoryNotRegistered : hipSuccess;
}

#ifndef EMU_NO_HIP_IPC
EXPORT hipError_t hipIpcGetMemHandle(hipIpcMemHandle_t *h, void *p)
{
	if (!h)
		return hipErrorInvalidValue;
	return emu_export((uintptr_t)p, API_HIP, h) ? hipErrorInvalidValue
						    : hipSuccess;
}

/* The handle is passed by value, as in hip_runtime_api.h. ROCm 5.x
 * defines hipIpcMemLazyEnablePeerAccess as 0, 6.x as 1, and HIP rejects
 * any other flags value. */
EXPORT hipError_t hipIpcOpenMemHandle(void **p, hipIpcMemHandle_t h,
				      unsigned int flags)
{
	if (!p || flags != (hip6() ? 1u : 0u))
		return hipErrorInvalidValue;
	uintptr_t d;
	switch (emu_import(&h, API_HIP, &d)) {
	case 0:
		*p = (void *)d;
		return hipSuccess;
	case -2:
		return hipErrorInvalidContext;
	}
	return hipErrorInvalidHandle;
}

EXPORT hipError_t hipIpcCloseMemHandle(void *p)
{
	return emu_release((uintptr_t)p, API_HIP, 1) ? hipErrorInvalidValue
						     : hipSuccess;
}
#endif
