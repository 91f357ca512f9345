/* SPDX-License-Identifier: MIT */
/*
 * common/tbucket.h - a token bucket: at most @rate units a second on
 * average, @burst at once. The caller owns the state (zeroed: full at the
 * first use) and passes the time and the limits, so that one bucket type
 * serves limits of any unit (bytes, calls) and tests can use any times.
 *
 *	static struct gw_tbucket b;
 *
 *	if (gw_tbucket_take(&b, gw_now_us(), len, 131072, 262144))
 *		send(...);	// within 128 KiB/s, 256 KiB at once
 *
 * Tokens are kept in millionths of a unit, so that a rate below one unit a
 * microsecond loses nothing between two calls.
 */
#ifndef GW_COMMON_TBUCKET_H
#define GW_COMMON_TBUCKET_H

#include <stdbool.h>
#include <stdint.h>

struct gw_tbucket {
	uint64_t micro_tokens; /* tokens times 1,000,000 */
	uint64_t last_us;      /* when they were counted; 0: never (full) */
};

/* What a full bucket holds, in millionths of a unit; saturated past 2^44 units (no limit). */
static inline uint64_t gw_tbucket_cap(uint64_t burst)
{
	return burst > UINT64_MAX / 1000000 ? UINT64_MAX : burst * 1000000;
}

/* The bucket brought up to @now_us: what it holds, in millionths of a unit. */
static inline uint64_t gw_tbucket_fill(struct gw_tbucket *b, uint64_t now_us, uint64_t rate,
				       uint64_t burst)
{
	uint64_t cap = gw_tbucket_cap(burst);

	if (b->last_us == 0 || now_us < b->last_us) {
		b->micro_tokens = cap;
	} else {
		uint64_t elapsed = now_us - b->last_us;
		/* A bucket that has been idle long enough is full: no product to overflow. */
		if (rate == 0 || elapsed >= cap / rate)
			b->micro_tokens = rate ? cap : b->micro_tokens;
		else if (b->micro_tokens < cap - elapsed * rate)
			b->micro_tokens += elapsed * rate;
		else
			b->micro_tokens = cap;
	}
	b->last_us = now_us ? now_us : 1;
	return b->micro_tokens;
}

/* Take @n units at @now_us: true if the bucket held them (and now holds that many fewer). */
static inline bool gw_tbucket_take(struct gw_tbucket *b, uint64_t now_us, uint64_t n, uint64_t rate,
				   uint64_t burst)
{
	uint64_t have = gw_tbucket_fill(b, now_us, rate, burst);

	if (n > have / 1000000)
		return false;
	b->micro_tokens = have - n * 1000000;
	return true;
}

/* Whether the bucket is full at @now_us: nobody has taken from it for a while. */
static inline bool gw_tbucket_full(struct gw_tbucket *b, uint64_t now_us, uint64_t rate,
				   uint64_t burst)
{
	return gw_tbucket_fill(b, now_us, rate, burst) >= gw_tbucket_cap(burst);
}

#endif
