#include "support/loop.h"

#include <poll.h>
#include <time.h>

/*
 * The pause between two turns of a spin: short against the tests' waits (tens
 * of ms and more), long enough not to take a core shared with other builds.
 */
enum { SPIN_PAUSE_MS = 2 };

uint64_t gwt_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

double gwt_now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

void gwt_run_for(struct event_base *base, unsigned int ms)
{
	uint64_t deadline = gwt_now_ms() + ms;

	while (gwt_now_ms() < deadline)
		event_base_loop(base, EVLOOP_ONCE);
}

void gwt_spin_for(struct event_base *base, unsigned int ms, gwt_between_fn *between, void *arg)
{
	uint64_t deadline = gwt_now_ms() + ms;

	while (gwt_now_ms() < deadline) {
		event_base_loop(base, EVLOOP_NONBLOCK);
		if (between)
			between(arg);
		poll(NULL, 0, SPIN_PAUSE_MS);
	}
}

bool gwt_spin_until_readable(struct event_base *base, int fd, unsigned int ms,
			     gwt_between_fn *between, void *arg)
{
	uint64_t deadline = gwt_now_ms() + ms;

	while (gwt_now_ms() < deadline) {
		struct pollfd p = { .fd = fd, .events = POLLIN };

		event_base_loop(base, EVLOOP_NONBLOCK);
		if (between)
			between(arg);
		if (poll(&p, 1, SPIN_PAUSE_MS) == 1)
			return true;
	}
	return false;
}

bool gwt_spin_until(struct event_base *base, unsigned int ms, bool (*done)(void *arg), void *arg)
{
	uint64_t deadline = gwt_now_ms() + ms;

	while (!done(arg) && gwt_now_ms() < deadline) {
		event_base_loop(base, EVLOOP_NONBLOCK);
		poll(NULL, 0, SPIN_PAUSE_MS);
	}
	return done(arg);
}
