/* SPDX-License-Identifier: MIT */
/* common/clock.h - monotonic time for latencies and ages. */
#ifndef GW_COMMON_CLOCK_H
#define GW_COMMON_CLOCK_H

#include <stdint.h>
#include <sys/time.h>
#include <time.h>

static inline uint64_t gw_now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

/* @ms milliseconds as a struct timeval, for libevent timers. */
static inline struct timeval gw_ms_timeval(uint64_t ms)
{
	return (struct timeval){ .tv_sec = (time_t)(ms / 1000),
				 .tv_usec = (suseconds_t)(ms % 1000) * 1000 };
}

#endif
