/* SPDX-License-Identifier: MIT */
#include "gateway/core/handoff.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <event2/event.h>

#include "common/log.h"
#include "rdma/conn.h"

struct handoff_item {
	size_t route;
	struct rconn_request *r;
};

struct gw_handoff {
	pthread_mutex_t lock;
	/*
	 * The attached worker's wake-up. libevent wakes another thread's loop
	 * only with its locking enabled (evthread_use_pthreads()), which every
	 * event of every loop would then pay for; an eventfd wakes this one.
	 */
	int efd;
	struct event *ev;
	bool attached;
	struct rdma_ctx *ctx;
	void (*deliver)(void *arg, size_t route, struct rconn_request *r);
	void *arg;
	/* A ring, so that posting allocates nothing. */
	struct handoff_item q[GW_HANDOFF_MAX_QUEUED];
	unsigned head, count;
	struct gw_handoff_stats stats;
};

struct gw_handoff *gw_handoff_new(void)
{
	struct gw_handoff *h = calloc(1, sizeof(*h));

	if (!h)
		return NULL;
	h->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (h->efd < 0 || pthread_mutex_init(&h->lock, NULL) != 0) {
		if (h->efd >= 0)
			close(h->efd);
		free(h);
		return NULL;
	}
	return h;
}

void gw_handoff_free(struct gw_handoff *h)
{
	if (!h)
		return;
	/*
	 * Every worker detaches before its rdma_ctx goes, which empties the
	 * queue. Were anything left, its requests' CM channel would be gone:
	 * they could not even be refused, so they are left (and said so).
	 */
	if (h->count)
		gw_err("handoff: %u connection requests left behind", h->count);
	if (h->ev)
		event_free(h->ev);
	close(h->efd);
	pthread_mutex_destroy(&h->lock);
	free(h);
}

/* Under h->lock: the oldest queued request, or false. */
static bool handoff_pop(struct gw_handoff *h, struct handoff_item *out)
{
	if (h->count == 0)
		return false;
	*out = h->q[h->head];
	h->head = (h->head + 1) % GW_HANDOFF_MAX_QUEUED;
	h->count--;
	return true;
}

/*
 * Deliver what is queued, one at a time: the lock is not held while a
 * request is accepted (that sets up a queue pair), so worker 0 is never
 * kept waiting by it. Requests posted meanwhile are taken in this turn too.
 */
static void handoff_readable(evutil_socket_t fd, short what, void *arg)
{
	struct gw_handoff *h = arg;
	struct handoff_item it;
	uint64_t v;

	(void)what;
	if (read(fd, &v, sizeof(v)) < 0 && errno != EAGAIN)
		gw_warn("handoff: reading the wake-up: %s", strerror(errno));
	for (;;) {
		pthread_mutex_lock(&h->lock);
		bool more = h->attached && handoff_pop(h, &it);
		pthread_mutex_unlock(&h->lock);
		if (!more)
			break;
		h->deliver(h->arg, it.route, it.r);
	}
}

int gw_handoff_attach(struct gw_handoff *h, struct event_base *base, struct rdma_ctx *ctx,
		      void (*deliver)(void *arg, size_t route, struct rconn_request *r), void *arg)
{
	struct event *ev = event_new(base, h->efd, EV_READ | EV_PERSIST, handoff_readable, h);

	if (!ev || event_add(ev, NULL) != 0) {
		if (ev)
			event_free(ev);
		return -ENOMEM;
	}
	pthread_mutex_lock(&h->lock);
	if (h->ev)
		event_free(h->ev);
	h->ev = ev;
	h->ctx = ctx;
	h->deliver = deliver;
	h->arg = arg;
	h->attached = true;
	pthread_mutex_unlock(&h->lock);
	return 0;
}

void gw_handoff_detach(struct gw_handoff *h)
{
	struct handoff_item it;

	if (!h)
		return;
	pthread_mutex_lock(&h->lock);
	h->attached = false;
	h->ctx = NULL;
	if (h->ev) {
		event_free(h->ev);
		h->ev = NULL;
	}
	pthread_mutex_unlock(&h->lock);
	/*
	 * Migrated to this worker's channel, which goes next: refused here.
	 * Nothing is posted any more (not attached), so the queue only shrinks.
	 */
	for (;;) {
		pthread_mutex_lock(&h->lock);
		bool more = handoff_pop(h, &it);
		pthread_mutex_unlock(&h->lock);
		if (!more)
			break;
		rconn_request_reject(it.r);
	}
}

int gw_handoff_post(struct gw_handoff *h, size_t route, struct rconn_request *r)
{
	int err = 0;

	pthread_mutex_lock(&h->lock);
	if (!h->attached)
		err = -ENOTCONN;
	else if (h->count >= GW_HANDOFF_MAX_QUEUED)
		err = -EBUSY;
	else
		/* Under the lock: the worker cannot detach, and its channel go, meanwhile. */
		err = rconn_request_migrate(r, h->ctx);
	if (err == 0) {
		unsigned tail = (h->head + h->count) % GW_HANDOFF_MAX_QUEUED;
		h->q[tail] = (struct handoff_item){ .route = route, .r = r };
		h->count++;
		h->stats.posted++;
	} else {
		h->stats.refused++;
	}
	pthread_mutex_unlock(&h->lock);
	if (err == 0) {
		uint64_t one = 1;
		/* Only EAGAIN can fail it, when the counter is full: a wake-up is pending then. */
		if (write(h->efd, &one, sizeof(one)) < 0 && errno != EAGAIN)
			gw_warn("handoff: waking the worker: %s", strerror(errno));
	}
	return err;
}

void gw_handoff_get_stats(struct gw_handoff *h, struct gw_handoff_stats *out)
{
	pthread_mutex_lock(&h->lock);
	*out = h->stats;
	pthread_mutex_unlock(&h->lock);
}
