/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/* Raw driver call costs on this machine: what lnx's device path is built from. */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
static double now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}
int main(int c, char **v)
{
	void *l = dlopen(c > 1 ? v[1] : "libcuda.so.1", RTLD_NOW);
	if (!l) {
		printf("%s\n", dlerror());
		return 1;
	}
	int (*init)(unsigned) = dlsym(l, "cuInit");
	int (*get)(int *, int) = dlsym(l, "cuDeviceGet");
	int (*ret)(void **, int) = dlsym(l, "cuDevicePrimaryCtxRetain");
	int (*set)(void *) = dlsym(l, "cuCtxSetCurrent");
	int (*getcur)(void **) = dlsym(l, "cuCtxGetCurrent");
	int (*al)(uintptr_t *, size_t) = dlsym(l, "cuMemAlloc_v2");
	int (*d2h)(void *, uintptr_t, size_t) = dlsym(l, "cuMemcpyDtoH_v2");
	int (*h2d)(uintptr_t, const void *, size_t) = dlsym(l, "cuMemcpyHtoD_v2");
	int (*d2d)(uintptr_t, uintptr_t, size_t) = dlsym(l, "cuMemcpyDtoD_v2");
	int (*pga)(void *, int, uintptr_t) = dlsym(l, "cuPointerGetAttribute");
	int (*range)(uintptr_t *, size_t *, uintptr_t) = dlsym(l, "cuMemGetAddressRange_v2");
	int (*ipcget)(void *, uintptr_t) = dlsym(l, "cuIpcGetMemHandle");
	int (*hreg)(void *, size_t, unsigned) = dlsym(l, "cuMemHostRegister_v2");
	int dev;
	void *ctx;
	init(0);
	get(&dev, 0);
	ret(&ctx, dev);
	set(ctx);
	uintptr_t d;
	al(&d, 1 << 24);
	char *h = malloc(1 << 24);
	int N = 2000;
	double t;
	size_t sz[] = { 8, 4096, 65536, 1 << 20, 4 << 20 };
	for (int k = 0; k < 2; k++) {
		if (k == 1) {
			if (!hreg)
				break;
			int r = hreg(h, 1 << 24, 0);
			printf("host registered (pinned): %d\n", r);
		}
		for (int i = 0; i < 5; i++) {
			size_t n = sz[i];
			int it = n > 65536 ? 200 : N;
			t = now();
			for (int j = 0; j < it; j++)
				d2h(h, d, n);
			double a = (now() - t) / it;
			t = now();
			for (int j = 0; j < it; j++)
				h2d(d, h, n);
			double b = (now() - t) / it;
			t = now();
			for (int j = 0; j < it; j++)
				d2d(d + (8 << 20), d, n);
			double e = (now() - t) / it;
			printf("%s %8zu B: DtoH %8.2f us  HtoD %8.2f us  DtoD %8.2f us\n",
			       k ? "pinned  " : "pageable", n, a, b, e);
		}
	}
	unsigned mt;
	t = now();
	for (int j = 0; j < N; j++)
		pga(&mt, 2, d + 8);
	printf("cuPointerGetAttribute(MEMORY_TYPE): %.2f us\n", (now() - t) / N);
	t = now();
	for (int j = 0; j < N; j++)
		pga(&mt, 2, (uintptr_t)h);
	printf("cuPointerGetAttribute on host ptr: %.2f us\n", (now() - t) / N);
	uintptr_t b;
	size_t s;
	t = now();
	for (int j = 0; j < N; j++)
		range(&b, &s, d + 8);
	printf("cuMemGetAddressRange: %.2f us\n", (now() - t) / N);
	char hd[64];
	t = now();
	for (int j = 0; j < 200; j++)
		ipcget(hd, d);
	printf("cuIpcGetMemHandle: %.2f us\n", (now() - t) / 200);
	void *cur;
	if (getcur) {
		t = now();
		for (int j = 0; j < N; j++) {
			getcur(&cur);
			set(ctx);
		}
		printf("cuCtxGetCurrent+SetCurrent: %.2f us\n", (now() - t) / N);
	}
	return 0;
}
