/* SPDX-License-Identifier: MIT */
/*
 * common/contention.h - whether more than one party is being served: two
 * different parties (connections, clients) served within
 * GW_CONTENTION_WINDOW_US of each other make it so, until that window
 * passes without it happening again. A change of party after a quiet
 * spell is one party after another, not two at once.
 *
 * One mechanism for the event loop's turns (common/turns.h) and a shared
 * connection's scheduler (gateway/maps/fairq.h). Time is passed in, in
 * microseconds; parties are identities, compared and never followed.
 */
#ifndef GW_COMMON_CONTENTION_H
#define GW_COMMON_CONTENTION_H

#include <stdbool.h>
#include <stdint.h>

/*
 * Longer than a one-call-at-a-time client's gap between calls under load
 * (its call is what waits), short enough that a party alone again gets its
 * whole allowance back within a blink.
 */
enum { GW_CONTENTION_WINDOW_US = 20000 };

struct gw_contention {
	uintptr_t last;	   /* the party served last; 0: none yet */
	uint64_t last_us;  /* and when */
	uint64_t until_us; /* contended until then; 0: never yet */
};

/* Serving @who at @now_us would be a change of party within the window. */
static inline bool gw_contention_would(const struct gw_contention *k, const void *who,
				       uint64_t now_us)
{
	return k->last != 0 && k->last != (uintptr_t)who &&
	       now_us < k->last_us + GW_CONTENTION_WINDOW_US;
}

/* @who was served at @now_us. */
static inline void gw_contention_note(struct gw_contention *k, const void *who, uint64_t now_us)
{
	if (gw_contention_would(k, who, now_us))
		k->until_us = now_us + GW_CONTENTION_WINDOW_US;
	k->last = (uintptr_t)who;
	k->last_us = now_us;
}

/* Whether it is contended at @now_us. */
static inline bool gw_contention_active(const struct gw_contention *k, uint64_t now_us)
{
	return k->until_us != 0 && now_us < k->until_us;
}

/* @who goes away: its memory may come back as another party. */
static inline void gw_contention_forget(struct gw_contention *k, const void *who)
{
	if (k->last == (uintptr_t)who)
		k->last = 0;
}

#endif
