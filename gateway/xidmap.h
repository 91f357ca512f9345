/* SPDX-License-Identifier: MIT */
/*
 * gateway/xidmap.h - XID -> call slot, for the calls of one connection.
 *
 * A fixed open-addressing table sized when the session starts (twice the
 * call slots, a power of two), with linear probing and backward-shift
 * deletion, so it never allocates, never fills, and has no tombstones
 * that would lengthen probes over a long-lived connection.
 */
#ifndef GW_GATEWAY_XIDMAP_H
#define GW_GATEWAY_XIDMAP_H

#include <stdbool.h>
#include <stdint.h>

#define XIDMAP_NONE UINT32_MAX

struct xidmap {
	uint32_t mask;
	uint32_t count;
	uint32_t capacity; /* entries allowed: half the table */
	struct xidmap_entry {
		uint32_t xid;
		uint32_t slot; /* XIDMAP_NONE: empty */
	} * table;
};

/* A map for up to @entries XIDs. Returns -ENOMEM or 0. */
int xidmap_init(struct xidmap *m, uint32_t entries);
void xidmap_destroy(struct xidmap *m);

/* The slot of @xid, or XIDMAP_NONE. */
uint32_t xidmap_find(const struct xidmap *m, uint32_t xid);
/* Add @xid -> @slot; false if @xid is there already or the map is full. */
bool xidmap_insert(struct xidmap *m, uint32_t xid, uint32_t slot);
/* Remove @xid; false if it was not there. */
bool xidmap_remove(struct xidmap *m, uint32_t xid);

#endif
