/* SPDX-License-Identifier: MIT */
/*
 * common/buf.h - reference-counted data buffers shared by the TCP and RDMA
 * sides.
 *
 * A buffer is owned by whoever holds a reference. The TCP side reads
 * records into buffers it gets from a buffer source; in the gateway the
 * source is a registered RDMA pool, so a record's bytes can be exposed to
 * the RDMA peer or sent with scatter/gather entries where they landed. In
 * unit tests the source is plain malloc. When the last reference is put,
 * the buffer returns to its pool through free_fn.
 *
 * The event loop is single-threaded: reference counts are plain integers.
 */
#ifndef GW_COMMON_BUF_H
#define GW_COMMON_BUF_H

#include <assert.h>
#include <stddef.h>
#include <stdint.h>

struct gw_buf {
	uint8_t *base;
	uint32_t size;
	uint32_t refs;
	/* Local key of the registration that covers base..base+size, 0 if none. */
	uint32_t lkey;
	/* That registration (a struct ibv_mr * for RDMA pools), NULL if none. */
	void *mr;
	/* Returns the buffer to its source when the last reference goes. */
	void (*free_fn)(struct gw_buf *buf);
	void *pool;
};

static inline struct gw_buf *gw_buf_get(struct gw_buf *buf)
{
	buf->refs++;
	return buf;
}

static inline void gw_buf_put(struct gw_buf *buf)
{
	assert(buf->refs > 0);
	if (--buf->refs == 0)
		buf->free_fn(buf);
}

/*
 * Where buffers come from. alloc returns a buffer of at least min_size
 * bytes holding one reference, or NULL when none is available right now
 * (the caller stops reading and retries when notified by its owner).
 */
struct gw_buf_source {
	struct gw_buf *(*alloc)(struct gw_buf_source *src, size_t min_size);
};

static inline struct gw_buf *gw_buf_alloc(struct gw_buf_source *src, size_t min_size)
{
	return src->alloc(src, min_size);
}

#endif
