/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * init_fini: repeated initialisation and teardown.
 *
 *  1. In one process, 20 cycles of fi_getinfo / open fabric, domain, AV,
 *     CQ, counters, endpoint / bind / enable / getname / av_insert /
 *     close everything / fi_freeinfo, alternating links "shm" and
 *     "shm+tcp;ofi_rxm:lo" and AV types; after each cycle fi_fini() is
 *     called if libfabric exports it (1.17 does not: there it is only the
 *     library destructor, see 2). The 20th cycle must still work.
 *  2. 20 child processes (fresh exec of this program) each do one cycle and
 *     exit() normally, so libfabric's destructor fi_fini runs, calls lnx's
 *     cleanup and dlcloses the provider while the Go runtime is live. Some
 *     children close everything first, some leave all objects open at exit,
 *     some only call fi_getinfo. Every child must exit 0 (no crash, no hang).
 */
#include "common.h"

#include <dlfcn.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

#define CYCLES 20

static void cycle(int i, int mode)
{
	struct lnx l;
	struct lnx_opts o = {
		.links = i % 2 ? LINK_TCP : LINK_SHM,
		.av_type = i % 4 < 2 ? FI_AV_TABLE : FI_AV_MAP,
		.counters = i % 3 == 0,
	};

	if (mode == 2) {
		/* getinfo only; the list is deliberately not freed. */
		struct fi_info *h = lnx_hints(), *info = NULL;
		set_links(o.links);
		CHECK(lnx_getinfo(h, &info));
		EXPECT(info_count(info) == 1, "cycle %d: %d entries", i, info_count(info));
		return;
	}

	lnx_open(&l, &o);
	fi_addr_t self = FI_ADDR_NOTAVAIL;
	CHECK_RC(fi_av_insert(l.av, l.name, 1, &self, 0, NULL), 1);
	EXPECT(self != FI_ADDR_NOTAVAIL, "cycle %d: own address not inserted", i);
	uint8_t back[ADDR_MAX];
	size_t len = sizeof(back);
	CHECK(fi_av_lookup(l.av, self, back, &len));
	EXPECT(len == l.namelen && !memcmp(back, l.name, len), "cycle %d: lookup", i);
	struct fi_cq_tagged_entry e;
	CHECK_RC(fi_cq_read(l.cq, &e, 1), -FI_EAGAIN);
	if (mode == 0)
		lnx_close(&l);
	/* mode 1: leave everything open for the exit-time fi_fini. */
}

static int child(int i)
{
	snprintf(g_role, sizeof(g_role), "init_fini child %d", i);
	cycle(i, i % 3);
	fflush(stdout);
	return 0; /* normal exit: libfabric's destructor runs */
}

static int spawn_child(const char *self, int i)
{
	char arg[16];
	char *argv[] = { (char *)self, "child", arg, NULL };
	pid_t pid;
	int st;

	snprintf(arg, sizeof(arg), "%d", i);
	fflush(stdout);
	fflush(stderr);
	int r = posix_spawn(&pid, "/proc/self/exe", NULL, NULL, argv, environ);
	if (r)
		FAIL("posix_spawn: %s", strerror(r));
	uint64_t deadline = now_ms() + 20000;
	for (;;) {
		pid_t w = waitpid(pid, &st, WNOHANG);
		if (w == pid)
			break;
		if (now_ms() > deadline) {
			kill(pid, SIGKILL);
			waitpid(pid, &st, 0);
			printf("FAIL child %d (mode %d) hung; killed\n", i, i % 3);
			return 1;
		}
		usleep(2000);
	}
	if (WIFSIGNALED(st)) {
		printf("FAIL child %d (mode %d) died with signal %d\n", i, i % 3, WTERMSIG(st));
		return 1;
	}
	if (WEXITSTATUS(st)) {
		printf("FAIL child %d (mode %d) exited %d\n", i, i % 3, WEXITSTATUS(st));
		return 1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 3 && !strcmp(argv[1], "child"))
		return child(atoi(argv[2]));

	snprintf(g_role, sizeof(g_role), "init_fini");
	setvbuf(stdout, NULL, _IOLBF, 0);

	/* 1. in-process cycles */
	void (*fini)(void) = (void (*)(void))dlsym(RTLD_DEFAULT, "fi_fini");
	note("fi_fini is %s", fini ? "exported: calling it after every cycle" :
				     "not exported by this libfabric (only its destructor); "
				     "exit-time fi_fini is covered by the child processes");
	for (int i = 0; i < CYCLES; i++) {
		cycle(i, 0);
		if (fini)
			fini();
	}
	note("%d in-process cycles: ok", CYCLES);

	/* 2. exit-time teardown in fresh processes */
	int failed = 0;
	for (int i = 0; i < CYCLES; i++)
		failed += spawn_child(argv[0], i);
	if (failed) {
		printf("init_fini: %d of %d children failed\n", failed, CYCLES);
		return 1;
	}
	note("%d child processes with exit-time fi_fini: ok", CYCLES);

	/* One more cycle after all that, for good measure. */
	cycle(CYCLES, 0);
	note("PASS");
	return 0;
}
