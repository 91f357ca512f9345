/* SPDX-License-Identifier: MIT */
/*
 * gateway/core/handoff.h - RDMA connection requests passed from worker 0 to the
 * worker that serves the client.
 *
 * An RDMA CM port has one listener, so a reverse route listens on worker 0
 * alone; but its connections are spread over the workers like the forward
 * routes' TCP connections, by the client's address (the same hash as the
 * TCP listeners' steering, tcp_listener_steer_index()), so that all of one
 * client's connections, and its sessions' state, are on one worker.
 * Worker 0 moves each request it does not keep to the chosen worker's CM
 * event channel (rconn_request_migrate()) and posts it to that worker's
 * handoff; the worker accepts it on its own thread, with its own
 * protection domain, completion queue and pools.
 *
 * A handoff belongs to gateway/workers.c and outlives the engines; a
 * worker attaches to its own while its engine runs. Posting is the only
 * call from another thread. The queue is bounded (a client can make the
 * gateway hold connection requests); a request that finds it full, or
 * the worker gone, is refused by the poster's caller.
 */
#ifndef GW_GATEWAY_HANDOFF_H
#define GW_GATEWAY_HANDOFF_H

#include <stddef.h>
#include <stdint.h>

struct event_base;
struct rconn_request;
struct rdma_ctx;
struct gw_handoff;

/*
 * Requests a worker may have waiting for its loop; more are refused. As
 * many as the RDMA CM's listen backlog (rdma_listen() with 0 gives the
 * kernel's default, 1024), so that a reconnect storm of one worker's
 * clients is held as long as it would be with one worker.
 */
enum { GW_HANDOFF_MAX_QUEUED = 1024 };

/* Counters of one handoff, read by any thread. */
struct gw_handoff_stats {
	uint64_t posted;  /* queued for the attached worker */
	uint64_t refused; /* queue full, no worker attached, or not moved */
};

struct gw_handoff *gw_handoff_new(void);
/* Once no worker is attached and none posts any more. */
void gw_handoff_free(struct gw_handoff *h);

/*
 * Take requests from now on, on @base's thread: each posted request is
 * moved to @ctx's CM channel and @deliver(@arg, @route, request) runs on
 * @base's loop, owning it. 0 or -errno.
 */
int gw_handoff_attach(struct gw_handoff *h, struct event_base *base, struct rdma_ctx *ctx,
		      void (*deliver)(void *arg, size_t route, struct rconn_request *r), void *arg);
/*
 * Take no more (posts fail from now on), and refuse what is still queued.
 * On the attached worker's thread, before its rdma_ctx goes.
 */
void gw_handoff_detach(struct gw_handoff *h);

/*
 * From another worker's thread: move @r to the attached worker and queue
 * it for @route. 0 when the worker owns @r now; -ENOTCONN (none attached),
 * -EBUSY (queue full) or the migration's -errno, and the caller still owns
 * @r, unchanged.
 */
int gw_handoff_post(struct gw_handoff *h, size_t route, struct rconn_request *r);

void gw_handoff_get_stats(struct gw_handoff *h, struct gw_handoff_stats *out);

#endif
