/*
 * Turning a test's libevent loop for a while.
 *
 * The tests have two kinds of loop, and so two kinds of tool:
 *
 *  - gwt_run_*: blocking turns (EVLOOP_ONCE), for a harness whose loop always
 *    has a timer armed (a tick of a few ms), so that no turn blocks for long
 *    and nothing needs doing between turns;
 *  - gwt_spin_*: turns that do not block, with a short pause, calling the
 *    test's @between after each: for a test that plays a peer (a fake server,
 *    portmapper or statd) in the same thread, which must be served while the
 *    code under test waits on it.
 *
 * Times are taken from CLOCK_MONOTONIC directly, not from the gateway's clock,
 * which a test may wrap or fake.
 */
#ifndef GW_TESTS_SUPPORT_LOOP_H
#define GW_TESTS_SUPPORT_LOOP_H

#include <stdbool.h>
#include <stdint.h>

#include <event2/event.h>

/* Milliseconds of CLOCK_MONOTONIC. */
uint64_t gwt_now_ms(void);

/* Seconds of CLOCK_MONOTONIC, to the nanosecond. */
double gwt_now_s(void);

/* Blocking turns of @base until @ms pass. */
void gwt_run_for(struct event_base *base, unsigned int ms);

/*
 * Blocking turns of @base until @expr holds or @ms pass; the caller asserts
 * @expr. A macro, because @expr is any expression over the test's state.
 */
#define GWT_RUN_UNTIL(base, expr, ms)                                                              \
	do {                                                                                       \
		uint64_t gwt_deadline_ = gwt_now_ms() + (ms);                                      \
		while (!(expr) && gwt_now_ms() < gwt_deadline_)                                    \
			event_base_loop((base), EVLOOP_ONCE);                                      \
	} while (0)

/* What a test does after every turn of a spin: serve its fake peers. */
typedef void gwt_between_fn(void *arg);

/* Turns of @base that do not block, @between(@arg) (NULL: nothing) after each, for @ms. */
void gwt_spin_for(struct event_base *base, unsigned int ms, gwt_between_fn *between, void *arg);

/*
 * Turns of @base as gwt_spin_for() until @fd has something to read (true) or
 * @ms pass (false); the caller reads it.
 */
bool gwt_spin_until_readable(struct event_base *base, int fd, unsigned int ms,
			     gwt_between_fn *between, void *arg);

/* Turns of @base that do not block until @done(@arg) holds (true) or @ms pass (false). */
bool gwt_spin_until(struct event_base *base, unsigned int ms, bool (*done)(void *arg), void *arg);

#endif
