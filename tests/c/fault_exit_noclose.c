/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * fault_exit_noclose: a process that opens lnx endpoints and exits without
 * closing them (exit(), or a return from main) leaves no shm region in
 * /dev/shm behind. Before, they stayed until the next lnx process on the
 * node cleaned up stale regions.
 *
 * Usage: fault_exit_noclose [shm|link]
 */
#include <dirent.h>
#include <errno.h>
#include <sys/wait.h>
#include <unistd.h>
#include "common.h"

/* Regions of process pid in /dev/shm. */
static int regions_of(pid_t pid)
{
	char prefix[32];
	int n = 0;
	snprintf(prefix, sizeof(prefix), "lnx-%d-", (int)pid);
	DIR *d = opendir("/dev/shm");
	if (!d)
		FAIL("opendir /dev/shm: %s", strerror(errno));
	for (struct dirent *e; (e = readdir(d));)
		if (!strncmp(e->d_name, prefix, strlen(prefix)))
			n++;
	closedir(d);
	return n;
}

int main(int argc, char **argv)
{
	struct lnx_opts o;
	int failed = 0;

	setvbuf(stdout, NULL, _IOLBF, 0);
	msg_test_opts(argc, argv, &o);
	/* exit() from main's thread, and from a return of main. */
	for (int how = 0; how < 2; how++) {
		fflush(stdout);
		pid_t c = fork();
		if (c < 0)
			FAIL("fork: %s", strerror(errno));
		if (c == 0) {
			struct lnx a, b;
			snprintf(g_role, sizeof(g_role), "child");
			lnx_open(&a, &o);
			lnx_open(&b, &o);
			EXPECT(regions_of(getpid()) == 2, "%d regions while open, want 2",
			       regions_of(getpid()));
			/* One closed, one left open, through exit(). */
			lnx_close(&b);
			EXPECT(regions_of(getpid()) == 1, "%d regions after one close",
			       regions_of(getpid()));
			fflush(stdout);
			if (how == 0)
				exit(0);
			return 0; /* the child returns from main */
		}
		int st;
		waitpid(c, &st, 0);
		if (!WIFEXITED(st) || WEXITSTATUS(st)) {
			printf("child failed (status %#x)\n", st);
			failed = 1;
			continue;
		}
		int left = regions_of(c);
		printf("%s: %d regions left\n", how ? "return from main" : "exit()", left);
		if (left) {
			printf("FAIL: the process exited without fi_close and left %d regions in "
			       "/dev/shm\n",
			       left);
			failed = 1;
		}
	}
	printf("%s: %s\n", argv[0], failed ? "FAILED" : "ok");
	return failed;
}
