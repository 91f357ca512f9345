/* SPDX-License-Identifier: MIT */
#include "gateway/xidmap.h"

#include <errno.h>
#include <stdlib.h>

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
	uint32_t size = 16;

	while (size < 2 * entries)
		size *= 2;
	m->table = malloc(size * sizeof(*m->table));
	if (!m->table)
		return -ENOMEM;
	for (uint32_t i = 0; i < size; i++)
		m->table[i].slot = XIDMAP_NONE;
	m->mask = size - 1;
	m->count = 0;
	m->capacity = size / 2;
	return 0;
}

void xidmap_destroy(struct xidmap *m)
{
	free(m->table);
	m->table = NULL;
}

uint32_t xidmap_find(const struct xidmap *m, uint32_t xid)
{
	for (uint32_t i = xid_hash(xid) & m->mask;; i = (i + 1) & m->mask) {
		const struct xidmap_entry *e = &m->table[i];
		if (e->slot == XIDMAP_NONE)
			return XIDMAP_NONE;
		if (e->xid == xid)
			return e->slot;
	}
}

bool xidmap_insert(struct xidmap *m, uint32_t xid, uint32_t slot)
{
	if (m->count >= m->capacity || slot == XIDMAP_NONE)
		return false;
	for (uint32_t i = xid_hash(xid) & m->mask;; i = (i + 1) & m->mask) {
		struct xidmap_entry *e = &m->table[i];
		if (e->slot == XIDMAP_NONE) {
			e->xid = xid;
			e->slot = slot;
			m->count++;
			return true;
		}
		if (e->xid == xid)
			return false;
	}
}

bool xidmap_remove(struct xidmap *m, uint32_t xid)
{
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
