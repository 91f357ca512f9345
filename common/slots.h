/* SPDX-License-Identifier: MIT */
/*
 * common/slots.h - a session's fixed array of call slots and its free list,
 * as both modes keep them (forward: gateway/forward/forward_admit.c;
 * reverse: gateway/reverse/reverse_admit.c):
 *
 *	gw_slots_init(&s->slots, s->calls, sizeof(*s->calls),
 *		      offsetof(struct fwd_call, next_free), ncalls);
 *	...
 *	bool fresh;
 *	struct fwd_call *c = gw_slots_get(&s->slots, &fresh);
 *
 *	if (!c)
 *		stop_reading(s);	(every slot busy)
 *	else if (fresh)
 *		set_up(c);		(first use of this slot)
 *	...
 *	gw_slots_put(&s->slots, c);
 *
 * The array is the caller's; each slot holds a `void *` link at @link,
 * used only while the slot is free. A freed slot is reused first, most
 * recently freed first (its memory is the warmest); slots never used are
 * handed out in order after that, so the pages of slots a quiet client
 * never needs are never touched (forward mode maps its array and relies on
 * it). Nothing is allocated here: the fast path costs a few loads and
 * stores. Single-threaded, as a session is.
 */
#ifndef GW_COMMON_SLOTS_H
#define GW_COMMON_SLOTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct gw_slots {
	char *base;    /* the caller's array */
	size_t stride; /* the size of one slot */
	size_t link;   /* offset of the slot's `void *` free-list link */
	uint32_t n;    /* slots in the array */
	uint32_t made; /* slots [0, made) were handed out at least once */
	uint32_t busy; /* slots handed out and not yet put back */
	void *free;    /* put-back slots, most recent first */
};

static inline void **gw_slots_link(const struct gw_slots *p, void *slot)
{
	return (void **)((char *)slot + p->link);
}

static inline void gw_slots_init(struct gw_slots *p, void *base, size_t stride, size_t link,
				 uint32_t n)
{
	*p = (struct gw_slots){ .base = base, .stride = stride, .link = link, .n = n };
}

/*
 * A free slot, or NULL when all @n are busy. *@fresh says whether the slot
 * was never handed out before (the caller sets it up); a reused slot is as
 * its last gw_slots_put() left it.
 */
static inline void *gw_slots_get(struct gw_slots *p, bool *fresh)
{
	void *slot = p->free;

	*fresh = false;
	if (slot) {
		void **link = gw_slots_link(p, slot);

		p->free = *link;
		*link = NULL;
	} else if (p->made < p->n) {
		slot = p->base + (size_t)p->made++ * p->stride;
		*fresh = true;
	} else {
		return NULL;
	}
	p->busy++;
	return slot;
}

/* Give @slot back; the caller has reset whatever it must (its link is set here). */
static inline void gw_slots_put(struct gw_slots *p, void *slot)
{
	*gw_slots_link(p, slot) = p->free;
	p->free = slot;
	p->busy--;
}

/* Every slot is busy: the next gw_slots_get() would return NULL. */
static inline bool gw_slots_full(const struct gw_slots *p)
{
	return p->busy == p->n;
}

/*
 * Forget every slot ever made, with none busy: the caller gave their memory
 * back (madvise(MADV_DONTNEED) zeroes it), and they are made fresh again as
 * they are next needed. False, and nothing changed, while any is busy.
 */
static inline bool gw_slots_forget(struct gw_slots *p)
{
	if (p->busy)
		return false;
	p->made = 0;
	p->free = NULL;
	return true;
}

#endif /* GW_COMMON_SLOTS_H */
