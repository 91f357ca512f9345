/* SPDX-License-Identifier: MIT */
#include "gateway/maps/xidmap.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/*
 * XIDs from one client are often sequential; a multiplicative hash spreads
 * them over the table so that neighbours do not share a probe run.
 */
static uint32_t xid_hash(uint32_t xid)
{
	return xid * 2654435761u;
}

int xidmap_init(struct xidmap *m, uint32_t entries)
{
	uint32_t size = XIDMAP_START_SIZE;

	if (entries > (1u << 30))
		return -EINVAL; /* 2 * entries would not fit the table's index */
	while (size < 2 * entries)
		size *= 2;
	*m = (struct xidmap){ .max_size = size };
	return 0;
}

void xidmap_destroy(struct xidmap *m)
{
	free(m->table);
	m->table = NULL;
	m->mask = 0;
	m->count = 0;
	m->capacity = 0;
}

uint32_t xidmap_find(const struct xidmap *m, uint32_t xid)
{
	if (!m->table)
		return XIDMAP_NONE;
	for (uint32_t i = xid_hash(xid) & m->mask;; i = (i + 1) & m->mask) {
		const struct xidmap_entry *e = &m->table[i];
		if (e->slot == XIDMAP_NONE)
			return XIDMAP_NONE;
		if (e->xid == xid)
			return e->slot;
	}
}

/* Put an XID known to be absent into a table with room for it. */
static void xidmap_place(struct xidmap_entry *table, uint32_t mask, uint32_t xid, uint32_t slot)
{
	uint32_t i = xid_hash(xid) & mask;

	while (table[i].slot != XIDMAP_NONE)
		i = (i + 1) & mask;
	table[i].xid = xid;
	table[i].slot = slot;
}

/*
 * The next table (the first, or twice the size), every entry moved over;
 * false: none. The size is reckoned in 64 bits: twice a table of 2^31
 * entries (a bound of 2^30) would wrap to 0 in 32, pass the bound and
 * make a table of nothing, into which the entries would then be moved.
 */
static bool xidmap_grow(struct xidmap *m)
{
	uint64_t size = m->table ? 2 * ((uint64_t)m->mask + 1) : XIDMAP_START_SIZE;

	if (size > m->max_size)
		return false;
	struct xidmap_entry *t = malloc(size * sizeof(*t));
	if (!t)
		return false;
	/* Every byte 0xff: each entry's slot is XIDMAP_NONE (UINT32_MAX), empty. */
	memset(t, 0xff, size * sizeof(*t));
	for (uint32_t i = 0; m->table && i <= m->mask; i++)
		if (m->table[i].slot != XIDMAP_NONE)
			xidmap_place(t, (uint32_t)(size - 1), m->table[i].xid, m->table[i].slot);
	free(m->table);
	m->table = t;
	m->mask = (uint32_t)(size - 1);
	m->capacity = (uint32_t)(size / 2);
	return true;
}

enum xidmap_put_result xidmap_put(struct xidmap *m, uint32_t xid, uint32_t slot)
{
	if (slot == XIDMAP_NONE)
		return XIDMAP_NO_ROOM; /* not a slot: never stored, it marks the empty */
	if (m->count >= m->capacity) {
		/* A duplicate is told as one even at the bound; a growth may move it. */
		if (xidmap_find(m, xid) != XIDMAP_NONE)
			return XIDMAP_DUPLICATE;
		if (!xidmap_grow(m))
			return XIDMAP_NO_ROOM;
	}
	/* One probe: the XID's own entry (a duplicate) or the first empty one. */
	for (uint32_t i = xid_hash(xid) & m->mask;; i = (i + 1) & m->mask) {
		struct xidmap_entry *e = &m->table[i];
		if (e->slot == XIDMAP_NONE) {
			e->xid = xid;
			e->slot = slot;
			m->count++;
			return XIDMAP_ADDED;
		}
		if (e->xid == xid)
			return XIDMAP_DUPLICATE;
	}
}

bool xidmap_insert(struct xidmap *m, uint32_t xid, uint32_t slot)
{
	return xidmap_put(m, xid, slot) == XIDMAP_ADDED;
}

bool xidmap_remove(struct xidmap *m, uint32_t xid)
{
	if (!m->table)
		return false;
	uint32_t i = xid_hash(xid) & m->mask;

	for (;; i = (i + 1) & m->mask) {
		if (m->table[i].slot == XIDMAP_NONE)
			return false;
		if (m->table[i].xid == xid)
			break;
	}
	/*
	 * Backward-shift: move later entries of the run into the hole when
	 * their home position allows it, so lookups never need tombstones.
	 */
	uint32_t hole = i;
	for (uint32_t j = (i + 1) & m->mask; m->table[j].slot != XIDMAP_NONE;
	     j = (j + 1) & m->mask) {
		uint32_t home = xid_hash(m->table[j].xid) & m->mask;
		/* Can j's entry move to hole? Only if home is not in (hole, j]. */
		bool between = hole <= j ? (home > hole && home <= j) : (home > hole || home <= j);
		if (!between) {
			m->table[hole] = m->table[j];
			hole = j;
		}
	}
	m->table[hole].slot = XIDMAP_NONE;
	m->count--;
	return true;
}
