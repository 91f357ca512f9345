/* SPDX-License-Identifier: MIT */
/*
 * gateway/maps/xidmap.h - XID -> call slot, for the calls of one connection.
 *
 * An open-addressing table with linear probing and backward-shift
 * deletion (no tombstones to lengthen probes over a long-lived
 * connection), kept at most half full.
 *
 * Its bound is set when the session starts: room for @entries XIDs (the
 * call slots), in a table of at most twice that, a power of two. Most
 * connections never have more than a few calls out, and on a shared route
 * a client's calls are mapped elsewhere (gateway/maps/wirexid.h) and this table
 * is never used, so the table is not allocated at init: the first insert
 * makes a small one (XIDMAP_START_SIZE) and an insert that would fill it
 * past half doubles it, never past the bound. Growing is rare (a few times
 * in a session's life, at most log2 of the bound), so it may allocate.
 */
#ifndef GW_GATEWAY_XIDMAP_H
#define GW_GATEWAY_XIDMAP_H

#include <stdbool.h>
#include <stdint.h>

#define XIDMAP_NONE UINT32_MAX

enum { XIDMAP_START_SIZE = 16 }; /* the first table: 8 XIDs, 128 bytes */

struct xidmap {
	uint32_t mask; /* table size - 1; 0 while there is no table */
	uint32_t count;
	uint32_t capacity; /* entries the table as it is allows: half of it */
	uint32_t max_size; /* the largest table: 2 * entries, rounded up */
	struct xidmap_entry {
		uint32_t xid;
		uint32_t slot; /* XIDMAP_NONE: empty */
	} * table;
};

/* What xidmap_put() did. */
enum xidmap_put_result {
	XIDMAP_ADDED,
	XIDMAP_DUPLICATE, /* @xid is there already: left as it was */
	XIDMAP_NO_ROOM,	  /* at its bound, or the table could not grow */
};

/* A map for up to @entries XIDs (allocates nothing yet). Returns -EINVAL or 0. */
int xidmap_init(struct xidmap *m, uint32_t entries);
void xidmap_destroy(struct xidmap *m);

/* The slot of @xid, or XIDMAP_NONE. */
uint32_t xidmap_find(const struct xidmap *m, uint32_t xid);
/* Add @xid -> @slot, growing the table if it must. */
enum xidmap_put_result xidmap_put(struct xidmap *m, uint32_t xid, uint32_t slot);
/* xidmap_put() == XIDMAP_ADDED: false if @xid is there already or there is no room. */
bool xidmap_insert(struct xidmap *m, uint32_t xid, uint32_t slot);
/* Remove @xid; false if it was not there. */
bool xidmap_remove(struct xidmap *m, uint32_t xid);

#endif
