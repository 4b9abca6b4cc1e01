/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/* Two processes on one GPU, each doing an 8 B HtoD then DtoH per hop of a
 * pipe ping-pong: the cost of alternating GPU work between two processes'
 * contexts, against the same copies in one process. */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
#include <sys/wait.h>
static double now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}
static int (*d2h)(void *, uintptr_t, size_t);
static int (*h2d)(uintptr_t, const void *, size_t);
static uintptr_t d;
static char h[64];
static void setup(const char *lib)
{
	void *l = dlopen(lib, RTLD_NOW);
	int (*init)(unsigned) = dlsym(l, "cuInit");
	int (*get)(int *, int) = dlsym(l, "cuDeviceGet");
	int (*ret)(void **, int) = dlsym(l, "cuDevicePrimaryCtxRetain");
	int (*set)(void *) = dlsym(l, "cuCtxSetCurrent");
	int (*al)(uintptr_t *, size_t) = dlsym(l, "cuMemAlloc_v2");
	d2h = dlsym(l, "cuMemcpyDtoH_v2");
	h2d = dlsym(l, "cuMemcpyHtoD_v2");
	int dev;
	void *ctx;
	init(0);
	get(&dev, 0);
	ret(&ctx, dev);
	set(ctx);
	al(&d, 1 << 20);
}
static void hop(void)
{
	h2d(d, h, 8);
	d2h(h, d, 8);
}
int main(int c, char **v)
{
	const char *lib = c > 1 ? v[1] : "libcuda.so.1";
	int N = 2000;
	int ab[2], ba[2];
	pipe(ab);
	pipe(ba);
	char x = 0;
	pid_t p = fork();
	if (!p) {
		setup(lib);
		for (int i = 0; i < N + 100; i++) {
			read(ab[0], &x, 1);
			hop();
			write(ba[1], &x, 1);
		}
		_exit(0);
	}
	setup(lib);
	double t = 0;
	for (int i = 0; i < N + 100; i++) {
		if (i == 100)
			t = now();
		hop();
		write(ab[1], &x, 1);
		read(ba[0], &x, 1);
	}
	printf("two processes: %.2f us per one-way hop (HtoD+DtoH 8 B each side)\n",
	       (now() - t) / N / 2);
	waitpid(p, 0, 0);
	t = now();
	for (int i = 0; i < N; i++) {
		hop();
		write(ab[1], &x, 1);
		read(ab[0], &x, 1);
	}
	printf("one process:   %.2f us per hop\n", (now() - t) / N);
	return 0;
}
