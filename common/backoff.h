/* SPDX-License-Identifier: MIT */
/*
 * common/backoff.h - a retry delay that doubles up to a cap, for whatever
 * the gateway tries again (an upstream connection, an NSM call over UDP):
 *
 *	gw_backoff_init(&s->backoff, 100, 2000);
 *	...
 *	uint64_t delay_ms;
 *
 *	if (!gw_backoff_next_within(&s->backoff, elapsed_ms, limit_ms, &delay_ms))
 *		give_up(s);
 *	else
 *		arm_timer(s, delay_ms);
 *
 * or, for a retransmission checked from a periodic tick:
 *
 *	if (gw_backoff_due(&s->backoff, s->sent_us, now_us)) {
 *		send_again(s);
 *		gw_backoff_next(&s->backoff);
 *	}
 *
 * The caller owns the state and passes the times: no global state and no
 * clock reading here, so tests can use any times they like. Delays are
 * milliseconds; times are microseconds of a clock that does not step back
 * (gw_now_us()). No jitter: none of the callers has needed any.
 */
#ifndef GW_COMMON_BACKOFF_H
#define GW_COMMON_BACKOFF_H

#include <stdbool.h>
#include <stdint.h>

struct gw_backoff {
	uint32_t first_ms; /* the first delay, and the one after a reset */
	uint32_t max_ms;   /* doubling stops here */
	uint32_t cur_ms;   /* the delay the next retry waits */
};

static inline void gw_backoff_reset(struct gw_backoff *b)
{
	b->cur_ms = b->first_ms;
}

/*
 * The delays start at @first_ms and double up to @max_ms. A first delay
 * above the cap is used once, then the cap: it is what the configuration
 * asked for, and the cap only bounds the growth.
 */
static inline void gw_backoff_init(struct gw_backoff *b, uint32_t first_ms, uint32_t max_ms)
{
	b->first_ms = first_ms;
	b->max_ms = max_ms;
	gw_backoff_reset(b);
}

/* The delay the next retry waits, without moving on. */
static inline uint32_t gw_backoff_delay(const struct gw_backoff *b)
{
	return b->cur_ms;
}

/* A retry is made: returns its delay, and the next one is double, at most the cap. */
static inline uint32_t gw_backoff_next(struct gw_backoff *b)
{
	uint32_t delay = b->cur_ms;
	uint64_t twice = (uint64_t)delay * 2; /* 64 bits: no wrap for any delay */

	b->cur_ms = twice < b->max_ms ? (uint32_t)twice : b->max_ms;
	return delay;
}

/* The current delay has passed since @last_us (the last try) at @now_us. */
static inline bool gw_backoff_due(const struct gw_backoff *b, uint64_t last_us, uint64_t now_us)
{
	return now_us - last_us >= (uint64_t)b->cur_ms * 1000;
}

/*
 * A retry within a time limit: @elapsed_ms of @limit_ms have gone since the
 * tries began. False when none is left (the caller gives up; the state is
 * unchanged); else *@delay_ms is the next delay, cut to what is left so
 * that the last try comes at the limit, and the delay after it doubles.
 */
static inline bool gw_backoff_next_within(struct gw_backoff *b, uint64_t elapsed_ms,
					  uint64_t limit_ms, uint64_t *delay_ms)
{
	if (elapsed_ms >= limit_ms)
		return false;
	uint64_t left = limit_ms - elapsed_ms;
	uint64_t delay = gw_backoff_next(b);

	*delay_ms = delay < left ? delay : left;
	return true;
}

#endif
