/* SPDX-License-Identifier: MIT */
/*
 * tests/unit/test_ratelimit.c - log rate limiting (common/ratelimit.h), with
 * explicit times: one line per interval, and the count of the events left
 * out between two lines.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "common/ratelimit.h"

static void test_first_event_is_logged(void **state)
{
	(void)state;
	struct gw_ratelimit rl = GW_RATELIMIT_INIT(1000000);
	uint64_t more = 99;

	/* Even at time 0: a fresh limiter has never logged. */
	assert_true(gw_ratelimit_allow(&rl, 0, &more));
	assert_int_equal(more, 0);
}

static void test_one_line_per_interval(void **state)
{
	(void)state;
	struct gw_ratelimit rl;
	uint64_t more = 0;

	gw_ratelimit_init(&rl, 1000);
	assert_true(gw_ratelimit_allow(&rl, 5000, &more));
	assert_int_equal(more, 0);
	/* Inside the interval: counted, not logged, and *suppressed untouched. */
	more = 77;
	assert_false(gw_ratelimit_allow(&rl, 5000, &more));
	assert_false(gw_ratelimit_allow(&rl, 5500, &more));
	assert_false(gw_ratelimit_allow(&rl, 5999, &more));
	assert_int_equal(more, 77);
	assert_int_equal(rl.suppressed, 3);
	/* The interval is over at exactly last + interval. */
	assert_true(gw_ratelimit_allow(&rl, 6000, &more));
	assert_int_equal(more, 3);
	assert_int_equal(rl.suppressed, 0);
	/* The next interval counts from that line, not from the first. */
	assert_false(gw_ratelimit_allow(&rl, 6999, &more));
	assert_true(gw_ratelimit_allow(&rl, 7000, &more));
	assert_int_equal(more, 1);
}

static void test_quiet_gap_logs_at_once(void **state)
{
	(void)state;
	struct gw_ratelimit rl = GW_RATELIMIT_INIT(1000);
	uint64_t more;

	assert_true(gw_ratelimit_allow(&rl, 1000, &more));
	/* Long after: logged, with nothing left out. */
	assert_true(gw_ratelimit_allow(&rl, 1000000, &more));
	assert_int_equal(more, 0);
}

/* The case this is for: 15,000 events in ten minutes, one line a minute. */
static void test_flood(void **state)
{
	(void)state;
	struct gw_ratelimit rl = GW_RATELIMIT_INIT(60u * 1000000);
	uint64_t more, lines = 0, reported = 0;

	for (uint64_t i = 0; i < 15000; i++) {
		/* one every 40 ms, starting at 1 s */
		if (gw_ratelimit_allow(&rl, 1000000 + i * 40000, &more)) {
			lines++;
			reported += more;
		}
	}
	assert_int_equal(lines, 10);
	/* Every event is either a line or counted in the next line, or still pending. */
	assert_int_equal(lines + reported + rl.suppressed, 15000);
}

static void test_zero_interval_logs_everything(void **state)
{
	(void)state;
	struct gw_ratelimit rl = GW_RATELIMIT_INIT(0);
	uint64_t more;

	for (int i = 0; i < 5; i++) {
		assert_true(gw_ratelimit_allow(&rl, 42, &more));
		assert_int_equal(more, 0);
	}
}

static void test_end_of_time_saturates(void **state)
{
	(void)state;
	struct gw_ratelimit rl = GW_RATELIMIT_INIT(1000);
	uint64_t more;

	/* A deadline that would wrap to a small time must not let the next event through. */
	assert_true(gw_ratelimit_allow(&rl, UINT64_MAX - 10, &more));
	assert_int_equal(rl.next_us, UINT64_MAX);
	assert_false(gw_ratelimit_allow(&rl, UINT64_MAX - 5, &more));
	assert_int_equal(rl.suppressed, 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_first_event_is_logged),
		cmocka_unit_test(test_one_line_per_interval),
		cmocka_unit_test(test_quiet_gap_logs_at_once),
		cmocka_unit_test(test_flood),
		cmocka_unit_test(test_zero_interval_logs_everything),
		cmocka_unit_test(test_end_of_time_saturates),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
