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
 *
 * A bucket may also be charged more than it holds (gw_tbucket_charge(),
 * gw_tbucket_take_debt()): the shortfall is a debt that the next refills pay
 * before the bucket holds anything again. That is how a limit on bytes
 * passes a message larger than its burst (a 1 MiB WRITE under a 4 MB/s
 * limit with a 0.1 s burst), and how a size known only later (a reply's) is
 * counted: the average stays the rate.
 */
#ifndef GW_COMMON_TBUCKET_H
#define GW_COMMON_TBUCKET_H

#include <stdbool.h>
#include <stdint.h>

struct gw_tbucket {
	uint64_t micro_tokens; /* tokens times 1,000,000 */
	uint64_t last_us;      /* when they were counted; 0: never (full) */
	uint64_t micro_debt;   /* charged beyond what it held, paid before it fills again */
};

/* @n units in millionths, saturated. */
static inline uint64_t gw_tbucket_micro(uint64_t n)
{
	return n > UINT64_MAX / 1000000 ? UINT64_MAX : n * 1000000;
}

/* What a full bucket holds, in millionths of a unit; saturated past 2^44 units (no limit). */
static inline uint64_t gw_tbucket_cap(uint64_t burst)
{
	return gw_tbucket_micro(burst);
}

/* The bucket brought up to @now_us: what it holds, in millionths of a unit. */
static inline uint64_t gw_tbucket_fill(struct gw_tbucket *b, uint64_t now_us, uint64_t rate,
				       uint64_t burst)
{
	uint64_t cap = gw_tbucket_cap(burst);

	if (b->last_us == 0 || now_us < b->last_us) {
		b->micro_tokens = cap;
		b->micro_debt = 0;
	} else {
		uint64_t elapsed = now_us - b->last_us;
		uint64_t room = cap - (b->micro_tokens < cap ? b->micro_tokens : cap);
		uint64_t want =
			room > UINT64_MAX - b->micro_debt ? UINT64_MAX : room + b->micro_debt;
		/* Long enough to pay the debt and fill up: no product to overflow. */
		if (rate != 0 && elapsed >= want / rate) {
			b->micro_tokens = cap;
			b->micro_debt = 0;
		} else if (rate != 0) {
			uint64_t add = elapsed * rate; /* < want: no overflow */
			uint64_t pay = add < b->micro_debt ? add : b->micro_debt;
			b->micro_debt -= pay;
			b->micro_tokens += add - pay;
		}
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

/*
 * Take @n units at @now_us whatever the bucket holds: what it lacks becomes
 * debt. For a size known after the fact (a reply's bytes).
 */
static inline void gw_tbucket_charge(struct gw_tbucket *b, uint64_t now_us, uint64_t n,
				     uint64_t rate, uint64_t burst)
{
	uint64_t have = gw_tbucket_fill(b, now_us, rate, burst);
	uint64_t want = gw_tbucket_micro(n);

	if (want <= have) {
		b->micro_tokens = have - want;
		return;
	}
	b->micro_tokens = 0;
	want -= have;
	b->micro_debt = want > UINT64_MAX - b->micro_debt ? UINT64_MAX : b->micro_debt + want;
}

/*
 * Take @n units at @now_us if the bucket holds them, or, for @n larger than
 * @burst, if it is full: the rest becomes debt. False (nothing taken) otherwise.
 */
static inline bool gw_tbucket_take_debt(struct gw_tbucket *b, uint64_t now_us, uint64_t n,
					uint64_t rate, uint64_t burst)
{
	uint64_t have = gw_tbucket_fill(b, now_us, rate, burst);
	uint64_t need = gw_tbucket_micro(n < burst ? n : burst);

	if (have < need)
		return false;
	gw_tbucket_charge(b, now_us, n, rate, burst);
	return true;
}

/*
 * Microseconds from @now_us until gw_tbucket_take_debt() of @n would succeed
 * (0: now; UINT64_MAX: never, a rate of 0). Does not take anything.
 */
static inline uint64_t gw_tbucket_wait_us(struct gw_tbucket *b, uint64_t now_us, uint64_t n,
					  uint64_t rate, uint64_t burst)
{
	uint64_t have = gw_tbucket_fill(b, now_us, rate, burst);
	uint64_t need = gw_tbucket_micro(n < burst ? n : burst);

	if (have >= need)
		return 0;
	if (rate == 0)
		return UINT64_MAX;
	uint64_t lack = need - (have < need ? have : need);
	lack = lack > UINT64_MAX - b->micro_debt ? UINT64_MAX : lack + b->micro_debt;
	return lack / rate + (lack % rate != 0);
}

#endif
