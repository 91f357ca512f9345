/* SPDX-License-Identifier: MIT */
/*
 * rdma/device.h - the process's RDMA context and its devices.
 *
 * One rdma_ctx per process ties RDMA to the libevent loop: it owns the
 * RDMA-CM event channel (its fd is watched by the loop) and the devices
 * that connections use. A device is opened lazily, when the first
 * connection resolves to it: a protection domain, a completion channel
 * (also watched by the loop) and the buffer pool registered on that PD.
 *
 * Dispatch is by handler objects embedded in their owners: the CM channel
 * calls the rdma_cm_handler found in the event's cm_id context, and the
 * completion channel calls the rdma_cq_handler found in the CQ context.
 */
#ifndef GW_RDMA_DEVICE_H
#define GW_RDMA_DEVICE_H

#include <stdbool.h>

#include <event2/event.h>
#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#include "rdma/pool.h"

struct rdma_ctx;
struct rdma_dev;

struct rdma_cm_handler {
	void (*handle)(struct rdma_cm_handler *h, struct rdma_cm_event *ev);
};

struct rdma_cq_handler {
	void (*handle)(struct rdma_cq_handler *h);
};

struct rdma_dev_caps {
	int max_qp_wr;
	int max_sge;
	int max_cqe;
	int max_qp_rd_atom; /* RDMA Reads we may have outstanding as responder */
	int max_qp_init_rd_atom;
	int max_mw;
	bool mw_type2; /* per-RPC exposure needs type 2 memory windows */
};

/*
 * The most completion vectors any RDMA device of the host has (each device
 * opened and closed again); 0 when there is no device.
 */
unsigned rdma_comp_vectors_max(void);

/* @pool_cfg is copied; every device gets a pool with this layout. */
struct rdma_ctx *rdma_ctx_create(struct event_base *base, const struct rdma_pool_config *pool_cfg);
/* All connections must be gone. */
void rdma_ctx_destroy(struct rdma_ctx *ctx);

struct event_base *rdma_ctx_base(const struct rdma_ctx *ctx);
/*
 * The completion vector this context's CQs ask for (modulo each device's
 * count): a worker thread's own, so that workers' completion interrupts
 * go to different vectors (and CPUs). 0 by default.
 */
void rdma_ctx_set_comp_vector(struct rdma_ctx *ctx, unsigned vector);
struct rdma_event_channel *rdma_ctx_cm_channel(const struct rdma_ctx *ctx);

/* The device behind @verbs, opened on first use; NULL on failure (logged). */
struct rdma_dev *rdma_ctx_device(struct rdma_ctx *ctx, struct ibv_context *verbs);
/* The devices opened so far: the first with @prev NULL, then the one after @prev. */
const struct rdma_dev *rdma_ctx_next_device(const struct rdma_ctx *ctx,
					    const struct rdma_dev *prev);

struct ibv_pd *rdma_dev_pd(const struct rdma_dev *dev);
struct ibv_comp_channel *rdma_dev_comp_channel(const struct rdma_dev *dev);
/* The completion vector for a CQ of @dev (rdma_ctx_set_comp_vector()). */
int rdma_dev_comp_vector(const struct rdma_dev *dev);
struct rdma_pool *rdma_dev_pool(const struct rdma_dev *dev);
const struct rdma_dev_caps *rdma_dev_caps(const struct rdma_dev *dev);
const char *rdma_dev_name(const struct rdma_dev *dev);

/*
 * Call @fn(@w) when buffers come back to the device's pool after an
 * allocation failed: from the event loop, never from inside the
 * gw_buf_put() that returned them. One waiter per connection; cancel it
 * before freeing.
 */
struct rdma_pool_waiter {
	void (*fn)(struct rdma_pool_waiter *w);
	struct rdma_pool_waiter *next;
	bool queued;
};
void rdma_dev_wait_for_buffers(struct rdma_dev *dev, struct rdma_pool_waiter *w);
void rdma_dev_cancel_wait(struct rdma_dev *dev, struct rdma_pool_waiter *w);

#endif
