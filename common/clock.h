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

/*
 * One clock reading per event-loop callback for the per-call timestamps
 * (latency histograms, session ages), instead of one per timestamp: the
 * callbacks that start work on the fast path (a TCP connection's input and
 * output, the completion channel) open a pass with gw_clock_pass_begin()
 * and close it with gw_clock_pass_end(); gw_now_pass_us() inside a pass
 * reads the clock the first time and then returns that reading, outside a
 * pass it is gw_now_us(). A call admitted and sent in the same pass thus
 * shows no gateway time for that pass's work: the gateway latency
 * histogram counts the waits between passes (credits, buffers, a full
 * socket), which is what it is for.
 *
 * Why not libevent's event_base_gettimeofday_cached(): it is wall-clock
 * time (its monotonic reading plus an offset re-read every few seconds, so
 * it can step) and, unless the base asks for precise timers, it comes from
 * CLOCK_MONOTONIC_COARSE, a millisecond or more, too coarse for calls that
 * take tens of microseconds. The cache is per thread, like libevent's own
 * per event base: a pass never spans two loops.
 */
void gw_clock_pass_begin(void);
void gw_clock_pass_end(void);
uint64_t gw_now_pass_us(void);

/*
 * CLOCK_REALTIME in nanoseconds at the monotonic reading @mono_us (a
 * gw_now_us() or gw_now_pass_us() value), for comparing with the kernel's
 * receive timestamps (SO_TIMESTAMPNS, which are wall-clock time). The
 * offset between the two clocks is read again once @mono_us is a second
 * past its last reading, so that a pass's reading turns into wall-clock
 * time without a system call of its own (in a guest without a vDSO clock,
 * clock_gettime() is one); a step of the wall clock shows within a second.
 * Per thread, like the pass.
 */
int64_t gw_realtime_ns(uint64_t mono_us);

/* @ms milliseconds as a struct timeval, for libevent timers. */
static inline struct timeval gw_ms_timeval(uint64_t ms)
{
	return (struct timeval){ .tv_sec = (time_t)(ms / 1000),
				 .tv_usec = (suseconds_t)(ms % 1000) * 1000 };
}

#endif
