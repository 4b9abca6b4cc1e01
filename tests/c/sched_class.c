/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * sched_class: an application thread at SCHED_FIFO opens lnx and talks over
 * it; the threads lnx's Go runtime created meanwhile must run at SCHED_RR
 * of the same priority, not inherit SCHED_FIFO. Inherited, one of them
 * looping in Go (the background sweeper, which yields only inside Go)
 * kept the application thread it shared a CPU with waiting for good:
 * fi_bench at SCHED_FIFO over the peer path stopped with both ranks
 * "timed out waiting for completions" (capi/threads.c).
 *
 * Needs CAP_SYS_NICE for SCHED_FIFO (skipped, 77, without it).
 */
#include "common.h"

#include <dirent.h>
#include <errno.h>
#include <sched.h>
#include <unistd.h>

/* The scheduling policy of thread tid of this process (field 41 of its
 * stat) and its real-time priority (field 40), -1 if it is gone. */
static int policy_of(const char *tid, int *prio)
{
	char path[64], buf[1024];
	snprintf(path, sizeof(path), "/proc/self/task/%s/stat", tid);
	FILE *f = fopen(path, "r");
	if (!f)
		return -1;
	size_t n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	char *p = strrchr(buf, ')'); /* the name may hold spaces */
	if (!p)
		return -1;
	/* After ")": field 3 (state) onwards; priority 40, policy 41. */
	int field = 2;
	for (; *p && field < 40; p++)
		if (*p == ' ')
			field++;
	*prio = atoi(p);
	p = strchr(p, ' ');
	return p ? atoi(p + 1) : -1;
}

int main(void)
{
	struct sched_param sp = { .sched_priority = 1 };
	if (sched_setscheduler(0, SCHED_FIFO, &sp)) {
		printf("SKIP: SCHED_FIFO refused (%s)\n", strerror(errno));
		return 77;
	}

	struct lnx a, b;
	struct lnx_opts o = { .links = LINK_SHM };
	lnx_open(&a, &o);
	lnx_open(&b, &o);
	fi_addr_t to_b;
	CHECK_RC(fi_av_insert(a.av, b.name, 1, &to_b, 0, NULL), 1);
	/* Some traffic, so that the runtime has started its threads. */
	for (int i = 0; i < 200; i++) {
		uint64_t out = i, in = 0;
		CHECK(fi_trecv(b.ep, &in, sizeof(in), NULL, FI_ADDR_UNSPEC, 7, 0, NULL));
		CHECK(fi_tsend(a.ep, &out, sizeof(out), NULL, to_b, 7, NULL));
		struct fi_cq_tagged_entry e;
		int got = 0;
		for (uint64_t t0 = now_ms(); got < 2 && now_ms() - t0 < 10000;) {
			if (fi_cq_read(a.cq, &e, 1) == 1)
				got++;
			if (fi_cq_read(b.cq, &e, 1) == 1)
				got++;
		}
		EXPECT(got == 2 && in == out, "message %d: %d completions, %llu received", i, got,
		       (unsigned long long)in);
	}

	char self[32];
	snprintf(self, sizeof(self), "%d", (int)getpid());
	int others = 0, rr = 0;
	DIR *d = opendir("/proc/self/task");
	ASSERT(d);
	for (struct dirent *t; (t = readdir(d));) {
		if (t->d_name[0] == '.')
			continue;
		int prio = -1, pol = policy_of(t->d_name, &prio);
		if (!strcmp(t->d_name, self)) {
			EXPECT(pol == SCHED_FIFO, "the main thread's policy is %d", pol);
			continue;
		}
		others++;
		if (pol == SCHED_RR && prio == 1)
			rr++;
		else
			note("thread %s: policy %d, priority %d", t->d_name, pol, prio);
	}
	closedir(d);
	/* Every thread here but the main one is the Go runtime's (lnx's own
	 * shm core starts no other). */
	EXPECT(others >= 2 && rr == others, "%d of %d other threads at SCHED_RR 1", rr, others);
	note("%d threads beside the main one, all at SCHED_RR 1", others);

	sp.sched_priority = 0;
	sched_setscheduler(0, SCHED_OTHER, &sp);
	lnx_close(&a);
	lnx_close(&b);
	printf("PASS\n");
	return 0;
}
