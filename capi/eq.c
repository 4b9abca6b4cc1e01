/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * Event queues (fi_eq_open on an lnx fabric). An EQ carries control
 * events only (lnx's RDM endpoints have no connection events; AVs bound to
 * one report FI_AV_COMPLETE here), so it lives in C: a mutex, a condition
 * variable for fi_eq_sread, a FIFO of events and, for FI_WAIT_FD (and
 * FI_WAIT_UNSPEC, FI_WAIT_POLLFD), an eventfd that is readable while the
 * queue holds an event. Go is entered only to join and leave a wait set
 * (FI_WAIT_SET): the set's waits (lnx/wait.go) then ask lnx_eq_ready.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/eventfd.h>
#include <poll.h>
#include "lnx_capi.h"
#include "lnx_wait.h"
#include "_cgo_export.h"

#define LNX_EQ_DEFAULT_SIZE 1024

struct lnx_eq_event {
	struct lnx_eq_event *next;
	uint32_t event;
	int err;		  /* an error entry: read with fi_eq_readerr */
	struct fi_eq_err_entry e; /* err: the entry (err_data not kept) */
	size_t len;
	uint64_t data[]; /* !err: the event's bytes */
};

struct lnx_eq {
	struct fid_eq eq;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	enum fi_wait_obj wait_obj; /* FI_WAIT_NONE, _FD, _POLLFD, _SET or _YIELD */
	int fd;			   /* eventfd for FI_WAIT_FD and _POLLFD, else -1 */
	lnx_handle member;	   /* FI_WAIT_SET: the EQ's place in the set */
	struct fid_wait *wait_set; /* FI_WAIT_SET: the set */
	size_t size, n;
	struct lnx_eq_event *head, *tail;
	int refs; /* AVs and endpoints bound to the EQ */
};

static struct fi_ops eq_fi_ops;

struct lnx_eq *lnx_eq_of(struct fid *fid)
{
	return fid && fid->fclass == FI_CLASS_EQ && fid->ops == &eq_fi_ops ?
		       (struct lnx_eq *)(void *)fid :
		       NULL;
}

/* lnx_eq_ready reports whether an event (or error entry) is queued: what
 * a wait set holding the EQ checks. */
int lnx_eq_ready(void *eq)
{
	struct lnx_eq *q = eq;
	pthread_mutex_lock(&q->lock);
	int r = q->head != NULL;
	pthread_mutex_unlock(&q->lock);
	return r;
}

/* lnx_eq_trywait is fi_trywait on an EQ: -FI_EAGAIN while an event is
 * queued, else 0 (an fd needs no arming: it follows the queue). */
int lnx_eq_trywait(struct lnx_eq *q)
{
	if (q->wait_obj == FI_WAIT_SET)
		return lnx_go_trywait(lnx_wait_handle(q->wait_set));
	if (q->wait_obj != FI_WAIT_FD && q->wait_obj != FI_WAIT_POLLFD)
		return -FI_EINVAL; /* nothing to wait on */
	return lnx_eq_ready(q) ? -FI_EAGAIN : 0;
}

void lnx_eq_ref(struct lnx_eq *q, int d)
{
	pthread_mutex_lock(&q->lock);
	q->refs += d;
	pthread_mutex_unlock(&q->lock);
}

/* lnx_eq_fd_sync makes the eventfd readable iff events are queued (lock held). */
static void lnx_eq_fd_sync(struct lnx_eq *q)
{
	uint64_t v = 1;
	if (q->fd < 0)
		return;
	if (q->head) {
		if (write(q->fd, &v, sizeof(v)) < 0) {
			/* EAGAIN: the counter is already non-zero, readable */
		}
	} else {
		if (read(q->fd, &v, sizeof(v)) < 0) {
			/* EAGAIN: already drained */
		}
	}
}

/* lnx_eq_push queues ev (lock held) and wakes readers. */
static void lnx_eq_push(struct lnx_eq *q, struct lnx_eq_event *ev)
{
	int was_empty = q->head == NULL;
	ev->next = NULL;
	if (q->tail)
		q->tail->next = ev;
	else
		q->head = ev;
	q->tail = ev;
	q->n++;
	if (was_empty)
		lnx_eq_fd_sync(q);
	pthread_cond_broadcast(&q->cond);
}

/*
 * lnx_eq_post queues an event from lnx itself (not counted against the
 * EQ's size: a provider event is never dropped). err != 0 queues an error
 * entry for fid/context with data and err (a positive FI_E* code).
 */
int lnx_eq_post(struct lnx_eq *q, uint32_t event, const void *buf, size_t len, int err,
		struct fid *fid, void *context, uint64_t data)
{
	struct lnx_eq_event *ev = calloc(1, sizeof(*ev) + (err ? 0 : len));
	if (!ev)
		return -FI_ENOMEM;
	ev->event = event;
	if (err) {
		ev->err = 1;
		ev->e.fid = fid;
		ev->e.context = context;
		ev->e.data = data;
		ev->e.err = err;
		ev->e.prov_errno = -err;
	} else {
		ev->len = len;
		if (len)
			memcpy(ev->data, buf, len);
	}
	pthread_mutex_lock(&q->lock);
	lnx_eq_push(q, ev);
	pthread_mutex_unlock(&q->lock);
	return 0;
}

/* lnx_eq_take reads the head event (lock held): bytes copied or -FI_E*. */
static ssize_t lnx_eq_take(struct lnx_eq *q, uint32_t *event, void *buf, size_t len, uint64_t flags)
{
	struct lnx_eq_event *ev = q->head;
	if (!ev)
		return -FI_EAGAIN;
	if (ev->err)
		return -FI_EAVAIL;
	if (len < ev->len)
		return -FI_ETOOSMALL;
	if (ev->len && !buf)
		return -FI_EINVAL;
	if (event)
		*event = ev->event;
	if (ev->len)
		memcpy(buf, ev->data, ev->len);
	ssize_t ret = (ssize_t)ev->len;
	if (!(flags & FI_PEEK)) {
		q->head = ev->next;
		if (!q->head)
			q->tail = NULL;
		q->n--;
		free(ev);
		if (!q->head)
			lnx_eq_fd_sync(q);
	}
	return ret;
}

static ssize_t eq_read(struct fid_eq *eq, uint32_t *event, void *buf, size_t len, uint64_t flags)
{
	struct lnx_eq *q = (struct lnx_eq *)(void *)eq;
	pthread_mutex_lock(&q->lock);
	ssize_t ret = lnx_eq_take(q, event, buf, len, flags);
	pthread_mutex_unlock(&q->lock);
	return ret;
}

static ssize_t eq_readerr(struct fid_eq *eq, struct fi_eq_err_entry *buf, uint64_t flags)
{
	struct lnx_eq *q = (struct lnx_eq *)(void *)eq;
	if (!buf)
		return -FI_EINVAL;
	pthread_mutex_lock(&q->lock);
	struct lnx_eq_event *ev = q->head;
	ssize_t ret = -FI_EAGAIN;
	if (ev && ev->err) {
		/* err_data: lnx has none; a caller's buffer is left alone
		 * (err_data_size 0 says nothing was written). */
		void *keep = buf->err_data;
		*buf = ev->e;
		buf->err_data = keep;
		buf->err_data_size = 0;
		ret = (ssize_t)sizeof(*buf);
		if (!(flags & FI_PEEK)) {
			q->head = ev->next;
			if (!q->head)
				q->tail = NULL;
			q->n--;
			free(ev);
			if (!q->head)
				lnx_eq_fd_sync(q);
		}
	}
	pthread_mutex_unlock(&q->lock);
	return ret;
}

static ssize_t eq_write(struct fid_eq *eq, uint32_t event, const void *buf, size_t len,
			uint64_t flags)
{
	struct lnx_eq *q = (struct lnx_eq *)(void *)eq;
	if (flags || (len && !buf))
		return -FI_EINVAL;
	struct lnx_eq_event *ev = calloc(1, sizeof(*ev) + len);
	if (!ev)
		return -FI_ENOMEM;
	ev->event = event;
	ev->len = len;
	if (len)
		memcpy(ev->data, buf, len);
	pthread_mutex_lock(&q->lock);
	if (q->n >= q->size) {
		pthread_mutex_unlock(&q->lock);
		free(ev);
		return -FI_EAGAIN;
	}
	lnx_eq_push(q, ev);
	pthread_mutex_unlock(&q->lock);
	return (ssize_t)len;
}

static ssize_t eq_sread(struct fid_eq *eq, uint32_t *event, void *buf, size_t len, int timeout,
			uint64_t flags)
{
	struct lnx_eq *q = (struct lnx_eq *)(void *)eq;
	if (q->wait_obj == FI_WAIT_NONE)
		return -FI_ENOSYS;
	struct timespec dl;
	if (timeout >= 0) {
		clock_gettime(CLOCK_MONOTONIC, &dl);
		dl.tv_sec += timeout / 1000;
		dl.tv_nsec += (long)(timeout % 1000) * 1000000L;
		if (dl.tv_nsec >= 1000000000L) {
			dl.tv_sec++;
			dl.tv_nsec -= 1000000000L;
		}
	}
	pthread_mutex_lock(&q->lock);
	ssize_t ret;
	while ((ret = lnx_eq_take(q, event, buf, len, flags)) == -FI_EAGAIN) {
		if (timeout == 0)
			break;
		if (timeout < 0) {
			pthread_cond_wait(&q->cond, &q->lock);
		} else if (pthread_cond_timedwait(&q->cond, &q->lock, &dl) == ETIMEDOUT) {
			ret = lnx_eq_take(q, event, buf, len, flags);
			break;
		}
	}
	pthread_mutex_unlock(&q->lock);
	return ret; /* -FI_EAGAIN when the timeout passed, as libfabric's own EQs */
}

static const char *eq_strerror(struct fid_eq *eq, int prov_errno, const void *err_data, char *buf,
			       size_t len)
{
	const char *s = fi_strerror(prov_errno < 0 ? -prov_errno : prov_errno);
	if (buf && len) {
		strncpy(buf, s, len - 1);
		buf[len - 1] = '\0';
		return buf;
	}
	return s;
}

static int eq_control(struct fid *fid, int command, void *arg)
{
	struct lnx_eq *q = (struct lnx_eq *)(void *)fid;
	switch (command) {
	case FI_GETWAIT:
		if (q->wait_obj == FI_WAIT_FD || q->wait_obj == FI_WAIT_POLLFD)
			return lnx_wait_getwait(q->wait_obj, q->fd, command, arg);
		if (!arg)
			return -FI_EINVAL;
		/* FI_WAIT_NONE and FI_WAIT_YIELD have no object; FI_WAIT_SET's
		 * is the set's (fi_control on the set) */
		return -FI_ENODATA;
	case FI_GETWAITOBJ:
		if (!arg)
			return -FI_EINVAL;
		*(enum fi_wait_obj *)arg = q->wait_obj;
		return 0;
	default:
		return -FI_ENOSYS;
	}
}

static int eq_close(struct fid *fid)
{
	struct lnx_eq *q = (struct lnx_eq *)(void *)fid;
	pthread_mutex_lock(&q->lock);
	if (q->refs) {
		pthread_mutex_unlock(&q->lock);
		return -FI_EBUSY;
	}
	pthread_mutex_unlock(&q->lock);
	/* Leave the set without the lock: a wait on the set may be asking
	 * lnx_eq_ready, and leaving waits for it. */
	if (q->member) {
		int ret = lnx_go_close(q->member);
		if (ret)
			return ret;
		q->member = 0;
	}
	pthread_mutex_lock(&q->lock);
	struct lnx_eq_event *ev = q->head;
	while (ev) {
		struct lnx_eq_event *next = ev->next;
		free(ev);
		ev = next;
	}
	pthread_mutex_unlock(&q->lock);
	if (q->fd >= 0)
		close(q->fd);
	pthread_cond_destroy(&q->cond);
	pthread_mutex_destroy(&q->lock);
	free(q);
	return 0;
}

static int eq_bind(struct fid *fid, struct fid *bfid, uint64_t flags)
{
	return -FI_ENOSYS;
}
static int eq_ops_open(struct fid *fid, const char *name, uint64_t flags, void **ops, void *context)
{
	return -FI_ENOSYS;
}
static int eq_ops_set(struct fid *fid, const char *name, uint64_t flags, void *ops, void *context)
{
	return -FI_ENOSYS;
}

static struct fi_ops eq_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = eq_close,
	.bind = eq_bind,
	.control = eq_control,
	.ops_open = eq_ops_open,
	.ops_set = eq_ops_set,
};
static struct fi_ops_eq eq_ops = {
	.size = sizeof(struct fi_ops_eq),
	.read = eq_read,
	.readerr = eq_readerr,
	.write = eq_write,
	.sread = eq_sread,
	.strerror = eq_strerror,
};

int lnx_eq_open(struct fid_fabric *fabric, struct fi_eq_attr *attr, struct fid_eq **eq,
		void *context)
{
	enum fi_wait_obj wo = attr ? attr->wait_obj : FI_WAIT_NONE;
	if (!eq)
		return -FI_EINVAL;
	switch (wo) {
	case FI_WAIT_UNSPEC:
		wo = FI_WAIT_FD;
		break;
	case FI_WAIT_NONE:
	case FI_WAIT_FD:
	case FI_WAIT_POLLFD:
	case FI_WAIT_YIELD:
		break;
	case FI_WAIT_SET:
		if (!lnx_wait_handle(attr->wait_set)) {
			lnx_log(FI_LOG_WARN, FI_LOG_EQ,
				"fi_eq_open: FI_WAIT_SET without an lnx wait set");
			return -FI_EINVAL;
		}
		break;
	default: /* FI_WAIT_MUTEX_COND: no core offers it (docs/lnx.7.md) */
		lnx_log(FI_LOG_WARN, FI_LOG_EQ, "fi_eq_open: wait object not supported");
		return -FI_ENOSYS;
	}
	if (attr && (attr->flags & ~(uint64_t)(FI_WRITE | FI_AFFINITY)))
		return -FI_EBADFLAGS;
	struct lnx_eq *q = calloc(1, sizeof(*q));
	if (!q)
		return -FI_ENOMEM;
	q->fd = -1;
	if (wo == FI_WAIT_FD || wo == FI_WAIT_POLLFD) {
		q->fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
		if (q->fd < 0) {
			free(q);
			return -FI_EMFILE;
		}
	}
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&q->cond, &ca);
	pthread_condattr_destroy(&ca);
	pthread_mutex_init(&q->lock, NULL);
	q->wait_obj = wo;
	q->size = attr && attr->size ? attr->size : LNX_EQ_DEFAULT_SIZE;
	if (wo == FI_WAIT_SET) {
		int ret = lnx_go_wait_join(lnx_wait_handle(attr->wait_set), q, &q->member);
		if (ret) {
			pthread_cond_destroy(&q->cond);
			pthread_mutex_destroy(&q->lock);
			free(q);
			return ret;
		}
		q->wait_set = attr->wait_set;
	}
	q->eq.fid.fclass = FI_CLASS_EQ;
	q->eq.fid.context = context;
	q->eq.fid.ops = &eq_fi_ops;
	q->eq.ops = &eq_ops;
	*eq = &q->eq;
	return 0;
}
