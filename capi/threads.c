/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * The Go runtime's threads never run at SCHED_FIFO. Every thread of this
 * library (the Go runtime's, through runtime/cgo) is created by
 * pthread_create, linked as __wrap_pthread_create (threads.go), and would
 * inherit the scheduling class of the thread that made it, often an
 * application thread at SCHED_FIFO. A runtime thread at SCHED_FIFO that
 * loops inside Go (the background sweeper yields with runtime.Gosched,
 * never to the kernel) kept an application thread of its priority off
 * their shared CPU for good, the other CPU held by the peer rank's poller
 * (fi_bench at SCHED_FIFO over the peer path: both ranks "timed out
 * waiting for completions"). At SCHED_RR, the same priority, the kernel
 * takes the CPU from such a thread after its time slice (100 ms by
 * default), and otherwise nothing changes: it still runs before normal
 * threads, so a thread the application waits for is not left behind them.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>

int __real_pthread_create(pthread_t *t, const pthread_attr_t *attr, void *(*fn)(void *), void *arg);

__attribute__((visibility("hidden"))) int
__wrap_pthread_create(pthread_t *t, const pthread_attr_t *attr, void *(*fn)(void *), void *arg)
{
	struct sched_param p;
	if (attr && sched_getscheduler(0) == SCHED_FIFO && !sched_getparam(0, &p)) {
		/* runtime/cgo's attr is its own stack variable: set the class
		 * on it, keep its stack size. */
		pthread_attr_t *a = (pthread_attr_t *)attr;
		if (!pthread_attr_setinheritsched(a, PTHREAD_EXPLICIT_SCHED) &&
		    !pthread_attr_setschedpolicy(a, SCHED_RR) &&
		    !pthread_attr_setschedparam(a, &p)) {
			int r = __real_pthread_create(t, attr, fn, arg);
			if (r != EPERM)
				return r;
		}
		/* Not allowed to choose (EPERM): inherit, as before. */
		pthread_attr_setinheritsched(a, PTHREAD_INHERIT_SCHED);
	}
	return __real_pthread_create(t, attr, fn, arg);
}
