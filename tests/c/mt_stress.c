/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * mt_stress: several application threads on one endpoint and one CQ
 * (FI_THREAD_SAFE), between two processes.
 *
 * Usage: mt_stress [shm|link|tcp|<links> [distinct]]   (see common.h)
 *
 * lnx answers idle fi_cq_read calls and writes small same-node sends in C,
 * next to Go's own progress: this runs them from several threads at once.
 * In A, THREADS threads each send PER messages (8 B to 16 KiB, so both the
 * C fast path and Go's eager and rendezvous paths are taken) while every
 * thread also reads the CQ; in B, THREADS threads each post PER receives
 * and all of them read the CQ. Every send and every receive must complete
 * exactly once, each receive with its own tag, length and data.
 */
#include <pthread.h>
#include "common.h"

#define THREADS 4
#define PER	1500
#define TOTAL	(THREADS * PER)

struct shared {
	struct peer *p;
	struct fi_context2 ctx[TOTAL];
	uint8_t *buf[TOTAL];
	int seen[TOTAL];
	int done; /* completions read, all threads */
	int bad;
};

static size_t len_of(int k)
{
	return (size_t)8 << (k % 12);
} /* 8 B .. 16 KiB */
static uint64_t tag_of(int k)
{
	return 0x77000000ull + (uint64_t)k;
}

/* Reads and checks up to 8 completions; returns how many, or -1 on an
 * error completion. */
static ssize_t reap_once(struct shared *s, int recv_side)
{
	struct fi_cq_tagged_entry e[8];
	ssize_t n = fi_cq_read(s->p->l.cq, e, 8);
	if (n == -FI_EAGAIN)
		return 0;
	if (n < 0) {
		struct fi_cq_err_entry err = { 0 };
		fi_cq_readerr(s->p->l.cq, &err, 0);
		note("completion error %d (%s)", err.err, fi_strerror(err.err));
		__atomic_store_n(&s->bad, 1, __ATOMIC_RELAXED);
		return -1;
	}
	for (ssize_t i = 0; i < n; i++) {
		int k = (int)((struct fi_context2 *)e[i].op_context - s->ctx);
		if (k < 0 || k >= TOTAL || __atomic_exchange_n(&s->seen[k], 1, __ATOMIC_RELAXED)) {
			note("foreign or repeated completion (context %p)", e[i].op_context);
			__atomic_store_n(&s->bad, 1, __ATOMIC_RELAXED);
			continue;
		}
		if (recv_side) {
			long long off = check_pattern(s->buf[k], len_of(k), 5000 + k);
			if (e[i].tag != tag_of(k) || e[i].len != len_of(k) || off >= 0 ||
			    !(e[i].flags & FI_RECV)) {
				note("receive %d: tag %#llx len %zu, data differs at %lld", k,
				     (unsigned long long)e[i].tag, e[i].len, off);
				__atomic_store_n(&s->bad, 1, __ATOMIC_RELAXED);
			}
		} else if (!(e[i].flags & FI_SEND)) {
			note("send %d: completion without FI_SEND", k);
			__atomic_store_n(&s->bad, 1, __ATOMIC_RELAXED);
		}
		__atomic_add_fetch(&s->done, 1, __ATOMIC_RELEASE);
	}
	return n;
}

/* Reads completions until all TOTAL have been seen (by any thread). */
static void reap(struct shared *s, int recv_side)
{
	uint64_t deadline = now_ms() + 4 * WAIT_MS;
	while (__atomic_load_n(&s->done, __ATOMIC_ACQUIRE) < TOTAL) {
		if (reap_once(s, recv_side) < 0)
			return;
		if (now_ms() > deadline) {
			note("timed out: %d of %d completions",
			     __atomic_load_n(&s->done, __ATOMIC_RELAXED), TOTAL);
			__atomic_store_n(&s->bad, 1, __ATOMIC_RELAXED);
			return;
		}
	}
}

struct job {
	struct shared *s;
	int t;
};

static void *send_thread(void *arg)
{
	struct job *j = arg;
	struct shared *s = j->s;
	for (int i = 0; i < PER; i++) {
		int k = j->t * PER + i;
		uint64_t deadline = now_ms() + WAIT_MS;
		ssize_t r;
		while ((r = fi_tsend(s->p->l.ep, s->buf[k], len_of(k), NULL, peer_addr(s->p),
				     tag_of(k), &s->ctx[k])) == -FI_EAGAIN) {
			if (now_ms() > deadline || reap_once(s, 0) < 0)
				break;
		}
		if (r) {
			note("fi_tsend %d -> %zd", k, r);
			__atomic_store_n(&s->bad, 1, __ATOMIC_RELAXED);
			break;
		}
	}
	reap(s, 0);
	return NULL;
}

static void *recv_thread(void *arg)
{
	struct job *j = arg;
	reap(j->s, 1);
	return NULL;
}

static void run_threads(struct shared *s, void *(*fn)(void *))
{
	pthread_t th[THREADS];
	struct job jobs[THREADS];
	for (int t = 0; t < THREADS; t++) {
		jobs[t] = (struct job){ s, t };
		if (pthread_create(&th[t], NULL, fn, &jobs[t]))
			FAIL("pthread_create");
	}
	for (int t = 0; t < THREADS; t++)
		pthread_join(th[t], NULL);
	EXPECT(!s->bad, "see the notes above");
	EXPECT(s->done == TOTAL, "%d of %d completions", s->done, TOTAL);
	for (int k = 0; k < TOTAL; k++)
		EXPECT(s->seen[k], "operation %d never completed", k);
}

static void sender(struct peer *p, void *arg)
{
	static struct shared s;
	memset(&s, 0, sizeof(s));
	s.p = p;
	for (int k = 0; k < TOTAL; k++) {
		s.buf[k] = xmalloc(len_of(k));
		fill_pattern(s.buf[k], len_of(k), 5000 + k);
	}
	barrier(p); /* B has posted every receive */
	run_threads(&s, send_thread);
	barrier(p);
	for (int k = 0; k < TOTAL; k++)
		free(s.buf[k]);
}

static void receiver(struct peer *p, void *arg)
{
	static struct shared s;
	memset(&s, 0, sizeof(s));
	s.p = p;
	for (int k = 0; k < TOTAL; k++) {
		s.buf[k] = xmalloc(len_of(k));
		POST(p->l.cq, fi_trecv(p->l.ep, s.buf[k], len_of(k), NULL, peer_addr(p), tag_of(k),
				       0, &s.ctx[k]));
	}
	barrier(p);
	run_threads(&s, recv_thread);
	barrier(p);
	for (int k = 0; k < TOTAL; k++)
		free(s.buf[k]);
}

int main(int argc, char **argv)
{
	struct lnx_opts o;
	msg_test_opts(argc, argv, &o);
	o.threading = FI_THREAD_SAFE; /* several threads on one endpoint */
	return run_pair("mt_stress", &o, sender, receiver, NULL) ? 1 : 0;
}
