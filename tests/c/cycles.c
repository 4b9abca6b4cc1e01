/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * Opens and closes every object 1000 times in one process and checks that
 * nothing accumulates: file descriptors, /dev/shm regions of this process,
 * and resident memory (after a warm-up, growth stays under a bound that a
 * per-cycle leak of even a few KiB would exceed). LNX_CYCLES overrides the
 * 1000 measured cycles (tests/deb13 uses fewer where a core's own endpoint
 * set-up takes a second).
 */
#include <dirent.h>
#include <malloc.h>
#include <unistd.h>
#include "common.h"

static int count_shm(void)
{
	char prefix[64];
	snprintf(prefix, sizeof(prefix), "lnx-%d-", (int)getpid());
	int n = 0;
	DIR *d = opendir("/dev/shm");
	if (!d)
		return 0;
	for (struct dirent *e; (e = readdir(d));)
		if (!strncmp(e->d_name, prefix, strlen(prefix)))
			n++;
	closedir(d);
	return n;
}

/* Resident memory after returning what the allocator holds free: glibc
 * keeps freed chunks (libfabric 2.1's tcp and rxm free and reallocate
 * large pools per endpoint), so without malloc_trim the figure swings by
 * over 100 MiB between cycles on Debian 13 whether anything leaks or not. */
static long rss_kb(void)
{
	malloc_trim(0);
	FILE *f = fopen("/proc/self/status", "r");
	char line[256];
	long kb = -1;
	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "VmRSS: %ld", &kb) == 1)
			break;
	if (f)
		fclose(f);
	return kb;
}

static void cycle(const char *links)
{
	struct lnx l;
	struct lnx_opts o = { .links = links, .counters = 1 };
	lnx_open(&l, &o);
	fi_addr_t self;
	CHECK_RC(fi_av_insert(l.av, l.name, 1, &self, 0, NULL), 1);
	char b = 1, r = 0;
	struct fi_context2 sc, rc;
	struct fi_cq_tagged_entry e;
	POST(l.cq, fi_trecv(l.ep, &r, 1, NULL, self, 9, 0, &rc));
	POST(l.cq, fi_tsend(l.ep, &b, 1, NULL, self, 9, &sc));
	wait_ok(l.cq, &e, NULL, "cycle completion 1");
	wait_ok(l.cq, &e, NULL, "cycle completion 2");
	EXPECT(r == 1, "loopback message lost");
	lnx_close(&l);
}

int main(int argc, char **argv)
{
	const char *links = argc > 1 && !strcmp(argv[1], "link") ? LINK_TCP : LINK_SHM;
	int cycles = getenv("LNX_CYCLES") ? atoi(getenv("LNX_CYCLES")) : 1000;
	for (int i = 0; i < 50; i++)
		cycle(links);
	int fds0 = count_fds(), shm0 = count_shm();
	long rss0 = rss_kb();
	for (int i = 0; i < cycles; i++)
		cycle(links);
	int fds1 = count_fds(), shm1 = count_shm();
	long rss1 = rss_kb();
	note("%s: %d cycles: fds %d -> %d, lnx shm regions %d -> %d, rss %ld -> %ld KiB", links,
	     cycles, fds0, fds1, shm0, shm1, rss0, rss1);
	EXPECT(fds1 == fds0, "file descriptors leaked: %d -> %d", fds0, fds1);
	EXPECT(shm1 == 0 && shm0 == 0, "shm regions left: %d", shm1);
	EXPECT(rss1 - rss0 < 16 * 1024, "resident memory grew by %ld KiB over %d cycles",
	       rss1 - rss0, cycles);
	printf("cycles: ok\n");
	return 0;
}
