/* SPDX-License-Identifier: MIT */
#include "rdma/device.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "common/log.h"

struct rdma_dev {
	struct rdma_dev *next;
	struct rdma_ctx *ctx;
	struct ibv_context *verbs;
	struct ibv_pd *pd;
	struct ibv_comp_channel *channel;
	struct event *channel_ev;
	struct rdma_pool *pool;
	struct rdma_dev_caps caps;
	struct rdma_pool_waiter *waiters; /* waiting for buffers */
	struct rdma_pool_waiter *waking;  /* being woken now (dev_wake_waiters()) */
	struct event *wake_ev;
};

struct rdma_ctx {
	struct event_base *base;
	struct rdma_event_channel *cm_channel;
	struct event *cm_ev;
	struct rdma_dev *devices;
	struct rdma_pool_config pool_cfg;
	unsigned comp_vector;
};

static int set_nonblocking(int fd)
{
	int flags = fcntl(fd, F_GETFL);

	if (flags < 0 || fcntl(fd, F_SETFL, flags | O_NONBLOCK) < 0)
		return -errno;
	return 0;
}

/*
 * Drain the CM channel. Each event goes to the handler in its cm_id's
 * context; a CONNECT_REQUEST's new id has no context yet, so it goes to the
 * listener's handler (the listen_id's context).
 */
static void ctx_cm_readable(evutil_socket_t fd, short what, void *arg)
{
	struct rdma_ctx *ctx = arg;
	struct rdma_cm_event *ev;

	while (rdma_get_cm_event(ctx->cm_channel, &ev) == 0) {
		gw_debug("rdma: cm channel: %s", rdma_event_str(ev->event));
		struct rdma_cm_id *id =
			ev->event == RDMA_CM_EVENT_CONNECT_REQUEST ? ev->listen_id : ev->id;
		struct rdma_cm_handler *h = id ? id->context : NULL;
		if (h)
			h->handle(h, ev); /* the handler acks the event */
		else
			rdma_ack_cm_event(ev);
	}
}

struct rdma_ctx *rdma_ctx_create(struct event_base *base, const struct rdma_pool_config *pool_cfg)
{
	struct rdma_ctx *ctx = calloc(1, sizeof(*ctx));

	if (!ctx)
		return NULL;
	ctx->base = base;
	ctx->pool_cfg = *pool_cfg;
	ctx->cm_channel = rdma_create_event_channel();
	if (!ctx->cm_channel) {
		gw_err("rdma: cannot create the CM event channel: %s (is rdma_ucm loaded?)",
		       strerror(errno));
		free(ctx);
		return NULL;
	}
	if (set_nonblocking(ctx->cm_channel->fd) != 0)
		goto fail;
	ctx->cm_ev =
		event_new(base, ctx->cm_channel->fd, EV_READ | EV_PERSIST, ctx_cm_readable, ctx);
	if (!ctx->cm_ev || event_add(ctx->cm_ev, NULL) != 0)
		goto fail;
	return ctx;
fail:
	if (ctx->cm_ev)
		event_free(ctx->cm_ev);
	rdma_destroy_event_channel(ctx->cm_channel);
	free(ctx);
	return NULL;
}

static void dev_close(struct rdma_dev *dev)
{
	if (dev->channel_ev)
		event_free(dev->channel_ev);
	if (dev->wake_ev)
		event_free(dev->wake_ev);
	rdma_pool_destroy(dev->pool);
	if (dev->channel)
		ibv_destroy_comp_channel(dev->channel);
	if (dev->pd)
		ibv_dealloc_pd(dev->pd);
	free(dev);
}

void rdma_ctx_destroy(struct rdma_ctx *ctx)
{
	if (!ctx)
		return;
	while (ctx->devices) {
		struct rdma_dev *dev = ctx->devices;
		ctx->devices = dev->next;
		dev_close(dev);
	}
	event_free(ctx->cm_ev);
	rdma_destroy_event_channel(ctx->cm_channel);
	free(ctx);
}

struct event_base *rdma_ctx_base(const struct rdma_ctx *ctx)
{
	return ctx->base;
}

struct rdma_event_channel *rdma_ctx_cm_channel(const struct rdma_ctx *ctx)
{
	return ctx->cm_channel;
}

/*
 * Completion events: each names the CQ whose handler then polls it. Each
 * event is acknowledged at once, so that destroying a CQ never waits for
 * events nobody acknowledged.
 *
 * One event per wake-up: reading until the channel is empty costs a
 * read(2) that fails with EAGAIN on every wake-up (about one system call
 * per RPC with one call in flight), while the handler's poll, re-arm, poll
 * already takes every completion there is. Should more events be waiting
 * (several CQs armed), the channel stays readable and the loop, which
 * is level-triggered, comes straight back after serving the other ready
 * descriptors.
 */
static void dev_channel_readable(evutil_socket_t fd, short what, void *arg)
{
	struct rdma_dev *dev = arg;
	struct ibv_cq *cq;
	void *cq_ctx;

	if (ibv_get_cq_event(dev->channel, &cq, &cq_ctx) == 0) {
		ibv_ack_cq_events(cq, 1);
		struct rdma_cq_handler *h = cq_ctx;
		/* The completions polled here share one clock reading (common/clock.h). */
		gw_clock_pass_begin();
		if (h)
			h->handle(h);
		gw_clock_pass_end();
	}
}

/*
 * Buffers are back: every connection that waited for them is called, from
 * the event loop. Never from the pool's release itself, which runs inside
 * gw_buf_put() wherever a buffer is let go, in the middle of whatever the
 * caller is doing; a waiter that then posted work, failed and closed its
 * session would pull that state from under the caller.
 *
 * The waiters are taken off the list first: one that finds the pool dry
 * again queues itself anew for the next wake. One may cancel another
 * (its session closes) while they are being called: cancel takes it off
 * dev->waking too.
 */
static void dev_wake_waiters(evutil_socket_t fd, short what, void *arg)
{
	struct rdma_dev *dev = arg;
	struct rdma_pool_waiter *w;

	gw_clock_pass_begin();
	dev->waking = dev->waiters;
	dev->waiters = NULL;
	while ((w = dev->waking) != NULL) {
		dev->waking = w->next;
		w->queued = false;
		w->next = NULL;
		w->fn(w);
	}
	gw_clock_pass_end();
}

static void dev_pool_wake(void *arg)
{
	struct rdma_dev *dev = arg;

	event_active(dev->wake_ev, 0, 0);
}

static void dev_query_caps(struct rdma_dev *dev)
{
	struct ibv_device_attr attr;

	if (ibv_query_device(dev->verbs, &attr) != 0) {
		gw_warn("rdma: %s: cannot query device attributes", rdma_dev_name(dev));
		return;
	}
	dev->caps.max_qp_wr = attr.max_qp_wr;
	dev->caps.max_sge = attr.max_sge;
	dev->caps.max_cqe = attr.max_cqe;
	dev->caps.max_qp_rd_atom = attr.max_qp_rd_atom;
	dev->caps.max_qp_init_rd_atom = attr.max_qp_init_rd_atom;
	dev->caps.max_mw = attr.max_mw;
	dev->caps.mw_type2 = (attr.device_cap_flags & IBV_DEVICE_MEM_WINDOW_TYPE_2B) != 0;
}

static struct rdma_dev *dev_open(struct rdma_ctx *ctx, struct ibv_context *verbs)
{
	struct rdma_dev *dev = calloc(1, sizeof(*dev));

	if (!dev)
		return NULL;
	dev->ctx = ctx;
	dev->verbs = verbs;
	dev_query_caps(dev);
	dev->pd = ibv_alloc_pd(verbs);
	dev->channel = dev->pd ? ibv_create_comp_channel(verbs) : NULL;
	if (!dev->channel || set_nonblocking(dev->channel->fd) != 0) {
		gw_err("rdma: %s: cannot set up protection domain and completion channel: %s",
		       rdma_dev_name(dev), strerror(errno));
		goto fail;
	}
	dev->pool = rdma_pool_create(dev->pd, &ctx->pool_cfg);
	if (!dev->pool) {
		gw_err("rdma: %s: cannot create the buffer pool", rdma_dev_name(dev));
		goto fail;
	}
	dev->wake_ev = event_new(ctx->base, -1, 0, dev_wake_waiters, dev);
	if (!dev->wake_ev)
		goto fail;
	rdma_pool_set_waker(dev->pool, dev_pool_wake, dev);
	dev->channel_ev = event_new(ctx->base, dev->channel->fd, EV_READ | EV_PERSIST,
				    dev_channel_readable, dev);
	if (!dev->channel_ev || event_add(dev->channel_ev, NULL) != 0)
		goto fail;
	gw_info("rdma: device %s opened (max_sge %d, max_qp_wr %d, type 2 windows %s)",
		rdma_dev_name(dev), dev->caps.max_sge, dev->caps.max_qp_wr,
		dev->caps.mw_type2 ? "yes" : "no");
	return dev;
fail:
	dev_close(dev);
	return NULL;
}

struct rdma_dev *rdma_ctx_device(struct rdma_ctx *ctx, struct ibv_context *verbs)
{
	for (struct rdma_dev *dev = ctx->devices; dev; dev = dev->next) {
		if (dev->verbs == verbs)
			return dev;
	}
	struct rdma_dev *dev = dev_open(ctx, verbs);
	if (dev) {
		dev->next = ctx->devices;
		ctx->devices = dev;
	}
	return dev;
}

const struct rdma_dev *rdma_ctx_next_device(const struct rdma_ctx *ctx, const struct rdma_dev *prev)
{
	return prev ? prev->next : ctx->devices;
}

struct ibv_pd *rdma_dev_pd(const struct rdma_dev *dev)
{
	return dev->pd;
}

struct ibv_comp_channel *rdma_dev_comp_channel(const struct rdma_dev *dev)
{
	return dev->channel;
}

struct rdma_pool *rdma_dev_pool(const struct rdma_dev *dev)
{
	return dev->pool;
}

const struct rdma_dev_caps *rdma_dev_caps(const struct rdma_dev *dev)
{
	return &dev->caps;
}

const char *rdma_dev_name(const struct rdma_dev *dev)
{
	return ibv_get_device_name(dev->verbs->device);
}

void rdma_dev_wait_for_buffers(struct rdma_dev *dev, struct rdma_pool_waiter *w)
{
	if (w->queued)
		return;
	w->queued = true;
	w->next = dev->waiters;
	dev->waiters = w;
}

static bool unlink_waiter(struct rdma_pool_waiter **list, struct rdma_pool_waiter *w)
{
	for (struct rdma_pool_waiter **pp = list; *pp; pp = &(*pp)->next) {
		if (*pp == w) {
			*pp = w->next;
			return true;
		}
	}
	return false;
}

void rdma_dev_cancel_wait(struct rdma_dev *dev, struct rdma_pool_waiter *w)
{
	if (!w->queued)
		return;
	if (!unlink_waiter(&dev->waiters, w))
		unlink_waiter(&dev->waking, w);
	w->queued = false;
	w->next = NULL;
}

unsigned rdma_comp_vectors_max(void)
{
	int n = 0;
	struct ibv_device **list = ibv_get_device_list(&n);
	unsigned most = 0;

	if (!list)
		return 0;
	for (int i = 0; i < n; i++) {
		struct ibv_context *verbs = ibv_open_device(list[i]);
		if (!verbs)
			continue;
		if (verbs->num_comp_vectors > 0 && (unsigned)verbs->num_comp_vectors > most)
			most = (unsigned)verbs->num_comp_vectors;
		ibv_close_device(verbs);
	}
	ibv_free_device_list(list);
	return most;
}

void rdma_ctx_set_comp_vector(struct rdma_ctx *ctx, unsigned vector)
{
	ctx->comp_vector = vector;
}

int rdma_dev_comp_vector(const struct rdma_dev *dev)
{
	int n = dev->verbs->num_comp_vectors;

	return n > 0 ? (int)(dev->ctx->comp_vector % (unsigned)n) : 0;
}
