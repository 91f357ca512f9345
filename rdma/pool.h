/* SPDX-License-Identifier: MIT */
/*
 * rdma/pool.h - pre-registered buffer pools.
 *
 * A pool hands out gw_bufs of a few fixed size classes, carved from slabs
 * that are registered once (ibv_reg_mr) with local access and the right to
 * bind memory windows, and never with remote access: the peer reaches a
 * buffer only through a memory window bound for one RPC (rdma/conn.h).
 *
 * Allocation is a free-list pop. When a class runs dry the pool registers
 * one more slab, up to the class's limit; that happens while traffic grows,
 * not per message. Beyond the limit alloc returns NULL and the caller
 * applies back-pressure (stops reading, queues the call) until buffers come
 * back; rdma_pool_set_waker() says whom to tell when they do.
 *
 * A pool belongs to one protection domain. All connections on a device
 * share it.
 */
#ifndef GW_RDMA_POOL_H
#define GW_RDMA_POOL_H

#include <stddef.h>
#include <stdint.h>

#include <infiniband/verbs.h>

#include "common/buf.h"

enum { RDMA_POOL_MAX_CLASSES = 6 };

struct rdma_pool_class_config {
	uint32_t buf_size; /* bytes per buffer */
	uint32_t per_slab; /* buffers registered together */
	uint32_t max_bufs; /* upper bound for this class */
};

struct rdma_pool_config {
	unsigned nclasses; /* ascending buf_size */
	struct rdma_pool_class_config classes[RDMA_POOL_MAX_CLASSES];
};

struct rdma_pool_stats {
	uint64_t allocs;
	uint64_t failures; /* alloc found nothing (back-pressure) */
	uint64_t slabs;	   /* registrations done */
	uint64_t bytes_registered;
	uint32_t in_use[RDMA_POOL_MAX_CLASSES];
	uint32_t total[RDMA_POOL_MAX_CLASSES];
};

struct rdma_pool;

/*
 * A pool on @pd (NULL: plain memory without registration, lkey 0, for unit
 * tests of the engine). Returns NULL when @cfg is invalid or on no memory.
 */
struct rdma_pool *rdma_pool_create(struct ibv_pd *pd, const struct rdma_pool_config *cfg);
/* Buffers still out are reported (a leak) and their memory is kept. */
void rdma_pool_destroy(struct rdma_pool *pool);

/* A buffer of at least @min_size bytes with one reference, or NULL. */
struct gw_buf *rdma_pool_alloc(struct rdma_pool *pool, size_t min_size);

/* The pool as a gw_buf_source, for the TCP side. */
struct gw_buf_source *rdma_pool_source(struct rdma_pool *pool);

/* The largest buffer the pool can hand out. */
uint32_t rdma_pool_max_size(const struct rdma_pool *pool);

/*
 * Called (once) after a buffer returns to a class that was found empty by
 * alloc, so a paused reader or a queue can resume.
 */
void rdma_pool_set_waker(struct rdma_pool *pool, void (*wake)(void *arg), void *arg);

void rdma_pool_get_stats(const struct rdma_pool *pool, struct rdma_pool_stats *out);

/* A default layout for inline buffers of @inline_size and records of @max_record. */
void rdma_pool_default_config(struct rdma_pool_config *cfg, uint32_t inline_size,
			      uint32_t max_record, uint32_t max_large);

#endif
