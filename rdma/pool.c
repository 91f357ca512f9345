/* SPDX-License-Identifier: MIT */
#include "rdma/pool.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "common/log.h"

struct pool_buf {
	struct gw_buf buf; /* first: gw_buf pointers convert back */
	struct pool_buf *next_free;
	struct pool_class *cls;
};

struct pool_slab {
	struct pool_slab *next;
	void *mem;
	size_t len;
	struct ibv_mr *mr;
	struct pool_buf *descs;
};

struct pool_class {
	struct rdma_pool_class_config cfg;
	struct rdma_pool *pool;
	struct pool_buf *free_list;
	struct pool_slab *slabs;
	uint32_t total;
	uint32_t in_use;
	unsigned index;
	bool starved; /* alloc found it empty since the last wake */
};

struct rdma_pool {
	struct gw_buf_source source; /* first: the source converts back */
	struct ibv_pd *pd;
	unsigned nclasses;
	struct pool_class classes[RDMA_POOL_MAX_CLASSES];
	void (*wake)(void *arg);
	void *wake_arg;
	uint64_t allocs;
	uint64_t failures;
	uint64_t slabs;
	uint64_t bytes_registered;
};

static void pool_buf_release(struct gw_buf *buf);

static struct gw_buf *pool_source_alloc(struct gw_buf_source *src, size_t min_size)
{
	return rdma_pool_alloc((struct rdma_pool *)src, min_size);
}

/*
 * Slabs are mmap'd: page-aligned memory registers cleanly, and freeing a slab
 * gives the pages back. The registration allows local write (receives,
 * RDMA Read targets) and memory-window binding; never remote access.
 */
static int class_add_slab(struct pool_class *cls)
{
	struct rdma_pool *pool = cls->pool;
	uint32_t n = cls->cfg.per_slab;

	if (cls->total + n > cls->cfg.max_bufs)
		n = cls->cfg.max_bufs - cls->total;
	if (n == 0)
		return -ENOSPC;

	struct pool_slab *slab = calloc(1, sizeof(*slab));
	struct pool_buf *descs = calloc(n, sizeof(*descs));
	size_t len = (size_t)n * cls->cfg.buf_size;
	void *mem = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (!slab || !descs || mem == MAP_FAILED) {
		free(slab);
		free(descs);
		if (mem != MAP_FAILED)
			munmap(mem, len);
		return -ENOMEM;
	}
	slab->mem = mem;
	slab->len = len;
	slab->descs = descs;
	if (pool->pd) {
		slab->mr =
			ibv_reg_mr(pool->pd, mem, len, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_MW_BIND);
		if (!slab->mr) {
			int err = errno;
			gw_err("pool: cannot register %zu bytes: %s", len, strerror(err));
			munmap(mem, len);
			free(descs);
			free(slab);
			return -err;
		}
	}
	for (uint32_t i = 0; i < n; i++) {
		struct pool_buf *pb = &descs[i];
		pb->buf.base = (uint8_t *)mem + (size_t)i * cls->cfg.buf_size;
		pb->buf.size = cls->cfg.buf_size;
		pb->buf.lkey = slab->mr ? slab->mr->lkey : 0;
		pb->buf.mr = slab->mr;
		pb->buf.free_fn = pool_buf_release;
		pb->buf.pool = pool;
		pb->cls = cls;
		pb->next_free = cls->free_list;
		cls->free_list = pb;
	}
	slab->next = cls->slabs;
	cls->slabs = slab;
	cls->total += n;
	pool->slabs++;
	pool->bytes_registered += len;
	return 0;
}

static bool pool_config_valid(const struct rdma_pool_config *cfg)
{
	if (cfg->nclasses == 0 || cfg->nclasses > RDMA_POOL_MAX_CLASSES)
		return false;
	for (unsigned i = 0; i < cfg->nclasses; i++) {
		const struct rdma_pool_class_config *c = &cfg->classes[i];
		if (c->buf_size == 0 || c->per_slab == 0 || c->max_bufs == 0)
			return false;
		if (i > 0 && c->buf_size <= cfg->classes[i - 1].buf_size)
			return false;
	}
	return true;
}

struct rdma_pool *rdma_pool_create(struct ibv_pd *pd, const struct rdma_pool_config *cfg)
{
	if (!pool_config_valid(cfg))
		return NULL;

	struct rdma_pool *pool = calloc(1, sizeof(*pool));
	if (!pool)
		return NULL;
	pool->source.alloc = pool_source_alloc;
	pool->pd = pd;
	pool->nclasses = cfg->nclasses;
	for (unsigned i = 0; i < cfg->nclasses; i++) {
		pool->classes[i].cfg = cfg->classes[i];
		pool->classes[i].pool = pool;
		pool->classes[i].index = i;
	}
	return pool;
}

void rdma_pool_destroy(struct rdma_pool *pool)
{
	if (!pool)
		return;
	for (unsigned i = 0; i < pool->nclasses; i++) {
		struct pool_class *cls = &pool->classes[i];
		if (cls->in_use) {
			/* Someone still holds buffers (a bug): keep the memory. */
			gw_err("pool: %u buffers of %u bytes still in use at destroy", cls->in_use,
			       cls->cfg.buf_size);
			continue;
		}
		struct pool_slab *slab = cls->slabs;
		while (slab) {
			struct pool_slab *next = slab->next;
			if (slab->mr)
				ibv_dereg_mr(slab->mr);
			munmap(slab->mem, slab->len);
			free(slab->descs);
			free(slab);
			slab = next;
		}
	}
	free(pool);
}

static struct pool_class *pool_class_for(struct rdma_pool *pool, size_t size)
{
	for (unsigned i = 0; i < pool->nclasses; i++) {
		if (pool->classes[i].cfg.buf_size >= size)
			return &pool->classes[i];
	}
	return NULL;
}

struct gw_buf *rdma_pool_alloc(struct rdma_pool *pool, size_t min_size)
{
	struct pool_class *cls = pool_class_for(pool, min_size);

	if (!cls) {
		pool->failures++;
		return NULL;
	}
	if (!cls->free_list && class_add_slab(cls) != 0) {
		cls->starved = true;
		pool->failures++;
		return NULL;
	}
	struct pool_buf *pb = cls->free_list;
	cls->free_list = pb->next_free;
	pb->next_free = NULL;
	pb->buf.refs = 1;
	cls->in_use++;
	pool->allocs++;
	return &pb->buf;
}

static void pool_buf_release(struct gw_buf *buf)
{
	struct pool_buf *pb = (struct pool_buf *)buf;
	struct pool_class *cls = pb->cls;
	struct rdma_pool *pool = cls->pool;

	pb->next_free = cls->free_list;
	cls->free_list = pb;
	cls->in_use--;
	if (cls->starved) {
		cls->starved = false;
		if (pool->wake)
			pool->wake(pool->wake_arg);
	}
}

struct gw_buf_source *rdma_pool_source(struct rdma_pool *pool)
{
	return &pool->source;
}

uint32_t rdma_pool_max_size(const struct rdma_pool *pool)
{
	return pool->classes[pool->nclasses - 1].cfg.buf_size;
}

void rdma_pool_set_waker(struct rdma_pool *pool, void (*wake)(void *arg), void *arg)
{
	pool->wake = wake;
	pool->wake_arg = arg;
}

void rdma_pool_get_stats(const struct rdma_pool *pool, struct rdma_pool_stats *out)
{
	memset(out, 0, sizeof(*out));
	out->allocs = pool->allocs;
	out->failures = pool->failures;
	out->slabs = pool->slabs;
	out->bytes_registered = pool->bytes_registered;
	for (unsigned i = 0; i < pool->nclasses; i++) {
		out->in_use[i] = pool->classes[i].in_use;
		out->total[i] = pool->classes[i].total;
	}
}

void rdma_pool_default_config(struct rdma_pool_config *cfg, uint32_t inline_size,
			      uint32_t max_record, uint32_t max_large)
{
	uint32_t sizes[] = { inline_size, 32768, 262144, max_record };
	unsigned n = 0;

	memset(cfg, 0, sizeof(*cfg));
	for (unsigned i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		if (n > 0 && sizes[i] <= cfg->classes[n - 1].buf_size)
			continue;
		struct rdma_pool_class_config *c = &cfg->classes[n++];
		c->buf_size = sizes[i];
		/* About 1 MiB per registration for small classes, 8 for large. */
		c->per_slab = sizes[i] >= 262144 ? 8 : (1u << 20) / sizes[i];
		if (c->per_slab == 0)
			c->per_slab = 1;
		c->max_bufs = sizes[i] >= 262144 ? max_large : 65536;
	}
	cfg->nclasses = n;
}
