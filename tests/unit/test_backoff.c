/* SPDX-License-Identifier: MIT */
/*
 * tests/unit/test_backoff.c - retry delays (common/backoff.h), with explicit
 * times: doubling to the cap, a reset, a retransmission's due time, and
 * retries within a time limit, the last cut to the limit.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "common/backoff.h"

static void test_doubles_to_the_cap(void **state)
{
	(void)state;
	static const uint32_t want[] = { 100, 200, 400, 800, 1600, 2000, 2000 };
	struct gw_backoff b;

	gw_backoff_init(&b, 100, 2000);
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		assert_int_equal(gw_backoff_delay(&b), want[i]);
		assert_int_equal(gw_backoff_next(&b), want[i]);
	}
}

static void test_reset_starts_over(void **state)
{
	(void)state;
	struct gw_backoff b;

	gw_backoff_init(&b, 1000, 8000);
	gw_backoff_next(&b);
	gw_backoff_next(&b);
	assert_int_equal(gw_backoff_delay(&b), 4000);
	gw_backoff_reset(&b);
	assert_int_equal(gw_backoff_next(&b), 1000);
	assert_int_equal(gw_backoff_delay(&b), 2000);
}

/* A first delay above the cap is used once (the configuration's), then the cap. */
static void test_first_above_cap(void **state)
{
	(void)state;
	struct gw_backoff b;

	gw_backoff_init(&b, 10000, 8000);
	assert_int_equal(gw_backoff_next(&b), 10000);
	assert_int_equal(gw_backoff_next(&b), 8000);
	assert_int_equal(gw_backoff_next(&b), 8000);
}

/* Large delays do not wrap to small ones. */
static void test_no_wrap(void **state)
{
	(void)state;
	struct gw_backoff b;

	gw_backoff_init(&b, UINT32_MAX / 2 + 1, UINT32_MAX);
	gw_backoff_next(&b);
	assert_int_equal(gw_backoff_delay(&b), UINT32_MAX);
	gw_backoff_next(&b);
	assert_int_equal(gw_backoff_delay(&b), UINT32_MAX);
}

/* Due once the current delay has passed since the last try, in microseconds. */
static void test_due(void **state)
{
	(void)state;
	struct gw_backoff b;

	gw_backoff_init(&b, 1000, 8000);
	assert_false(gw_backoff_due(&b, 5000000, 5000000));
	assert_false(gw_backoff_due(&b, 5000000, 5999999));
	assert_true(gw_backoff_due(&b, 5000000, 6000000));
	gw_backoff_next(&b);
	assert_false(gw_backoff_due(&b, 6000000, 7999999));
	assert_true(gw_backoff_due(&b, 6000000, 8000000));
}

/* The last delay ends at the limit; at the limit, no more tries. */
static void test_within_a_limit(void **state)
{
	(void)state;
	struct gw_backoff b;
	uint64_t delay = 0;

	gw_backoff_init(&b, 100, 2000);
	assert_true(gw_backoff_next_within(&b, 0, 1000, &delay));
	assert_int_equal(delay, 100);
	assert_true(gw_backoff_next_within(&b, 100, 1000, &delay));
	assert_int_equal(delay, 200);
	assert_true(gw_backoff_next_within(&b, 300, 1000, &delay));
	assert_int_equal(delay, 400);
	/* 800 would pass the limit: cut to the 300 left. */
	assert_true(gw_backoff_next_within(&b, 700, 1000, &delay));
	assert_int_equal(delay, 300);
	assert_int_equal(gw_backoff_delay(&b), 1600);
	/* Time is up: false, and nothing changes. */
	delay = 77;
	assert_false(gw_backoff_next_within(&b, 1000, 1000, &delay));
	assert_false(gw_backoff_next_within(&b, 1500, 1000, &delay));
	assert_int_equal(delay, 77);
	assert_int_equal(gw_backoff_delay(&b), 1600);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_doubles_to_the_cap),
		cmocka_unit_test(test_reset_starts_over),
		cmocka_unit_test(test_first_above_cap),
		cmocka_unit_test(test_no_wrap),
		cmocka_unit_test(test_due),
		cmocka_unit_test(test_within_a_limit),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
