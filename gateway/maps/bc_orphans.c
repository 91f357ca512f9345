/* SPDX-License-Identifier: MIT */
/*
 * gateway/maps/bc_orphans.c - back channels whose client went away (see the header).
 */
#include "gateway/maps/bc_orphans.h"

#include <stdlib.h>
#include <string.h>

void bc_orphans_init(struct bc_orphans *o, uint32_t max)
{
	*o = (struct bc_orphans){ .max = max };
}

void bc_orphans_fini(struct bc_orphans *o)
{
	free(o->e);
	*o = (struct bc_orphans){ .max = o->max };
}

static uint32_t bound(const struct bc_orphans *o)
{
	return o->max ? o->max : BC_ORPHANS_DEFAULT_MAX;
}

/* Entry @i leaves: the last takes its place (order does not matter). */
static void drop(struct bc_orphans *o, uint32_t i)
{
	o->e[i] = o->e[--o->n];
}

static void expire(struct bc_orphans *o, uint64_t now)
{
	for (uint32_t i = 0; i < o->n;) {
		if (now - o->e[i].gone_us >= BC_ORPHANS_TTL_US) {
			drop(o, i);
			o->st.expired++;
		} else {
			i++;
		}
	}
}

static int find(const struct bc_orphans *o, const uint8_t id[ULB_SESSIONID_SIZE])
{
	for (uint32_t i = 0; i < o->n; i++) {
		if (memcmp(o->e[i].id, id, ULB_SESSIONID_SIZE) == 0)
			return (int)i;
	}
	return -1;
}

static uint32_t oldest(const struct bc_orphans *o)
{
	uint32_t k = 0;

	for (uint32_t i = 1; i < o->n; i++) {
		if (o->e[i].gone_us < o->e[k].gone_us)
			k = i;
	}
	return k;
}

/*
 * Where a new entry of address @addr goes: over that address's oldest when
 * it has its share already, so that one address cannot push the others'
 * entries out; else over the table's oldest when the table is full; else
 * a new one.
 */
static uint32_t room_for(struct bc_orphans *o, const uint8_t addr[16])
{
	uint32_t n = 0, k = 0;

	for (uint32_t i = 0; i < o->n; i++) {
		if (memcmp(o->e[i].addr, addr, sizeof(o->e[i].addr)) != 0)
			continue;
		if (n++ == 0 || o->e[i].gone_us < o->e[k].gone_us)
			k = i;
	}
	if (n >= BC_ORPHANS_PER_ADDR_MAX) {
		o->st.replaced++;
		return k;
	}
	if (o->n == bound(o)) {
		o->st.replaced++;
		return oldest(o);
	}
	return o->n++;
}

void bc_orphans_add(struct bc_orphans *o, const uint8_t id[ULB_SESSIONID_SIZE],
		    const uint8_t addr[16], uint32_t maxresp, uint64_t now)
{
	if (!o->e) {
		o->e = calloc(bound(o), sizeof(*o->e));
		if (!o->e) {
			o->st.no_memory++;
			return;
		}
	}
	expire(o, now);
	if (!o->n)
		o->since_us = now;
	/* A session has one holder: a newer one replaces what was kept of it. */
	int i = find(o, id);
	if (i < 0)
		i = (int)room_for(o, addr);
	struct bc_orphan *e = &o->e[i];
	memcpy(e->id, id, ULB_SESSIONID_SIZE);
	memcpy(e->addr, addr, sizeof(e->addr));
	e->maxresp = maxresp;
	e->gone_us = now;
	o->st.kept++;
}

const struct bc_orphan *bc_orphans_find(struct bc_orphans *o, const uint8_t id[ULB_SESSIONID_SIZE],
					uint64_t now)
{
	if (!o->n)
		return NULL;
	expire(o, now);
	int i = find(o, id);
	return i < 0 ? NULL : &o->e[i];
}

void bc_orphans_claim(struct bc_orphans *o, const uint8_t id[ULB_SESSIONID_SIZE])
{
	int i = find(o, id);

	if (i < 0)
		return;
	drop(o, (uint32_t)i);
	o->st.adopted++;
}

void bc_orphans_drop(struct bc_orphans *o, const uint8_t id[ULB_SESSIONID_SIZE])
{
	int i = find(o, id);

	if (i < 0)
		return;
	drop(o, (uint32_t)i);
	o->st.dropped++;
}
