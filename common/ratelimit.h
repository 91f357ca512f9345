/* SPDX-License-Identifier: MIT */
/*
 * common/ratelimit.h - at most one log line per interval for an event that
 * a peer can repeat at will (a client resending the same bad record), with
 * the number of lines left out since the last one:
 *
 *	uint64_t more;
 *
 *	if (gw_ratelimit_allow(&c->oversized_rl, gw_now_us(), &more))
 *		gw_warn("... (%llu more since)", ..., (unsigned long long)more);
 *
 * The caller owns the state (one per connection, route or worker, as the
 * lines should be grouped) and passes the time: no global state, no clock
 * reading here, and tests can use any times they like. Times are
 * microseconds of a clock that does not step back (gw_now_us(),
 * gw_now_pass_us()).
 */
#ifndef GW_COMMON_RATELIMIT_H
#define GW_COMMON_RATELIMIT_H

#include <stdbool.h>
#include <stdint.h>

struct gw_ratelimit {
	/* No line before this time; 0 at first, so the first event is logged. */
	uint64_t next_us;
	/* Events not logged since the last line. */
	uint64_t suppressed;
	/* Time between two lines; 0 logs every event. */
	uint32_t interval_us;
};

#define GW_RATELIMIT_INIT(interval)                                                                \
	{                                                                                          \
		.next_us = 0, .suppressed = 0, .interval_us = (interval)                           \
	}

static inline void gw_ratelimit_init(struct gw_ratelimit *rl, uint32_t interval_us)
{
	rl->next_us = 0;
	rl->suppressed = 0;
	rl->interval_us = interval_us;
}

/*
 * An event happens at now_us: true if it is to be logged now, and then
 * *suppressed is set to the events left out since the last line (which the
 * line should mention) and that count starts again; false if the interval
 * since the last line has not passed, and the event is counted.
 */
static inline bool gw_ratelimit_allow(struct gw_ratelimit *rl, uint64_t now_us,
				      uint64_t *suppressed)
{
	if (now_us < rl->next_us) {
		rl->suppressed++;
		return false;
	}
	*suppressed = rl->suppressed;
	rl->suppressed = 0;
	/* Saturates rather than wrapping to a time already past. */
	rl->next_us = now_us > UINT64_MAX - rl->interval_us ? UINT64_MAX : now_us + rl->interval_us;
	return true;
}

#endif
