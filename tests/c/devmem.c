/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"
#include "devmem.h"

static int api_cuda;
static void *lib;

/* CUDA driver API */
static int (*cuInit)(unsigned);
static int (*cuDeviceGet)(int *, int);
static int (*cuDevicePrimaryCtxRetain)(void **, int);
static int (*cuCtxSetCurrent)(void *);
static int (*cuMemAlloc)(uintptr_t *, size_t);
static int (*cuMemFree)(uintptr_t);
static int (*cuMemcpyHtoD)(uintptr_t, const void *, size_t);
static int (*cuMemcpyDtoH)(void *, uintptr_t, size_t);
/* HIP */
static int (*hipInit)(unsigned);
static int (*hipMalloc)(void **, size_t);
static int (*hipFree)(void *);
static int (*hipMemcpy)(void *, const void *, size_t, int);

static void *sym(const char *name)
{
	void *p = dlsym(lib, name);
	if (!p)
		FAIL("%s: no symbol %s", dev_api(), name);
	return p;
}

const char *dev_api(void)
{
	return api_cuda ? "cuda" : "rocm";
}

enum fi_hmem_iface dev_init(void)
{
	const char *api = getenv("LNX_TEST_API");
	api_cuda = !api || strcmp(api, "rocm");
	const char *env = api_cuda ? "FI_LNX_CUDA_LIB" : "FI_LNX_ROCM_LIB";
	const char *path = getenv(env);
	if (!path || !*path)
		FAIL("%s is not set: the device tests need the emulated device library", env);
	if (!lib && !(lib = dlopen(path, RTLD_NOW | RTLD_GLOBAL)))
		FAIL("dlopen %s: %s", path, dlerror());
	if (api_cuda) {
		cuInit = sym("cuInit");
		cuDeviceGet = sym("cuDeviceGet");
		cuDevicePrimaryCtxRetain = sym("cuDevicePrimaryCtxRetain");
		cuCtxSetCurrent = sym("cuCtxSetCurrent");
		cuMemAlloc = sym("cuMemAlloc_v2");
		cuMemFree = sym("cuMemFree_v2");
		cuMemcpyHtoD = sym("cuMemcpyHtoD_v2");
		cuMemcpyDtoH = sym("cuMemcpyDtoH_v2");
		int dev;
		void *ctx;
		EXPECT(cuInit(0) == 0, "cuInit failed");
		EXPECT(cuDeviceGet(&dev, 0) == 0, "cuDeviceGet failed");
		EXPECT(cuDevicePrimaryCtxRetain(&ctx, dev) == 0, "cuDevicePrimaryCtxRetain failed");
		EXPECT(cuCtxSetCurrent(ctx) == 0, "cuCtxSetCurrent failed");
		return FI_HMEM_CUDA;
	}
	hipInit = sym("hipInit");
	hipMalloc = sym("hipMalloc");
	hipFree = sym("hipFree");
	hipMemcpy = sym("hipMemcpy");
	EXPECT(hipInit(0) == 0, "hipInit failed");
	return FI_HMEM_ROCR;
}

void *dev_alloc(size_t n)
{
	void *p = NULL;
	if (api_cuda) {
		uintptr_t d = 0;
		EXPECT(cuMemAlloc(&d, n ? n : 1) == 0, "cuMemAlloc(%zu) failed", n);
		p = (void *)d;
	} else {
		EXPECT(hipMalloc(&p, n ? n : 1) == 0, "hipMalloc(%zu) failed", n);
	}
	return p;
}

void dev_free(void *p)
{
	if (api_cuda)
		EXPECT(cuMemFree((uintptr_t)p) == 0, "cuMemFree failed");
	else
		EXPECT(hipFree(p) == 0, "hipFree failed");
}

void dev_to_host(void *dst, const void *src, size_t n)
{
	if (!n)
		return;
	if (api_cuda)
		EXPECT(cuMemcpyDtoH(dst, (uintptr_t)src, n) == 0, "cuMemcpyDtoH failed");
	else
		EXPECT(hipMemcpy(dst, src, n, 2 /* hipMemcpyDeviceToHost */) == 0,
		       "hipMemcpy D2H failed");
}

void host_to_dev(void *dst, const void *src, size_t n)
{
	if (!n)
		return;
	if (api_cuda)
		EXPECT(cuMemcpyHtoD((uintptr_t)dst, src, n) == 0, "cuMemcpyHtoD failed");
	else
		EXPECT(hipMemcpy(dst, src, n, 1 /* hipMemcpyHostToDevice */) == 0,
		       "hipMemcpy H2D failed");
}

void dev_fill(void *dev, size_t n, uint64_t seed)
{
	char *h = xmalloc(n ? n : 1);
	fill_pattern(h, n, seed);
	host_to_dev(dev, h, n);
	free(h);
}

void dev_expect(const void *dev, size_t n, uint64_t seed, const char *what)
{
	char *h = xmalloc(n ? n : 1);
	memset(h, 0, n);
	dev_to_host(h, dev, n);
	long long o = check_pattern(h, n, seed);
	EXPECT(o < 0, "%s: device data mismatch at offset %lld of %zu", what, o, n);
	free(h);
}

long dev_counter(const char *name)
{
	long (*counter)(const char *) = lib ? dlsym(lib, "emu_counter") : NULL;
	return counter ? counter(name) : -1;
}

long dev_ipc_maps(void)
{
	long n = dev_counter("ipc_maps");
	if (n < 0)
		FAIL("%s: no emu_counter: the IPC check needs the emulated device", dev_api());
	return n;
}

int dev_reg(struct fid_domain *dom, void *buf, size_t n, struct fid_mr **mr)
{
	struct iovec iov = { .iov_base = buf, .iov_len = n };
	struct fi_mr_attr attr = {
		.mr_iov = &iov,
		.iov_count = 1,
		.access = FI_SEND | FI_RECV,
		.requested_key = 0,
		.iface = api_cuda ? FI_HMEM_CUDA : FI_HMEM_ROCR,
	};
	attr.device.cuda = 0;
	return fi_mr_regattr(dom, &attr, 0, mr);
}
