/* SPDX-License-Identifier: MIT */
/*
 * common/clock.c - the per-pass clock of common/clock.h.
 *
 * Loop state, not configuration: a thread-local cache, as libevent keeps
 * its own in the event base, since threading a clock through every call
 * chain that stamps a call would touch every signature on the fast path.
 */
#include "common/clock.h"

#include <stdbool.h>

static _Thread_local struct {
	/* Passes open: a callback of one connection may call into another's. */
	unsigned int depth;
	bool valid;
	uint64_t now_us;
} gw_pass;

void gw_clock_pass_begin(void)
{
	gw_pass.depth++;
}

void gw_clock_pass_end(void)
{
	if (gw_pass.depth > 0 && --gw_pass.depth == 0)
		gw_pass.valid = false;
}

uint64_t gw_now_pass_us(void)
{
	if (gw_pass.depth == 0)
		return gw_now_us();
	if (!gw_pass.valid) {
		gw_pass.now_us = gw_now_us();
		gw_pass.valid = true;
	}
	return gw_pass.now_us;
}

static _Thread_local struct {
	bool valid;
	uint64_t at_us; /* the monotonic reading the offset was taken at */
	int64_t offset_ns;
} gw_wall;

int64_t gw_realtime_ns(uint64_t mono_us)
{
	if (!gw_wall.valid || mono_us >= gw_wall.at_us + 1000000u) {
		struct timespec rt, mt;

		clock_gettime(CLOCK_REALTIME, &rt);
		clock_gettime(CLOCK_MONOTONIC, &mt);
		gw_wall.offset_ns = ((int64_t)rt.tv_sec - mt.tv_sec) * 1000000000 +
				    ((int64_t)rt.tv_nsec - mt.tv_nsec);
		gw_wall.at_us = mono_us;
		gw_wall.valid = true;
	}
	return (int64_t)mono_us * 1000 + gw_wall.offset_ns;
}
