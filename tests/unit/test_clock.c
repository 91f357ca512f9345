/* SPDX-License-Identifier: MIT */
/* tests/unit/test_clock.c - the per-pass clock (common/clock.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <time.h>

#include "common/clock.h"

/* Long enough for the microsecond clock to move. */
static void pause_a_little(void)
{
	struct timespec ts = { 0, 2000000 };

	nanosleep(&ts, NULL);
}

/* Inside a pass, one reading; a new pass reads the clock again. */
static void test_one_reading_per_pass(void **state)
{
	(void)state;
	gw_clock_pass_begin();
	uint64_t first = gw_now_pass_us();
	pause_a_little();
	assert_int_equal(gw_now_pass_us(), first);
	gw_clock_pass_end();

	gw_clock_pass_begin();
	uint64_t next = gw_now_pass_us();
	gw_clock_pass_end();
	assert_true(next >= first + 2000);
}

/* Outside a pass, and after the outermost of nested passes ends, it is the clock. */
static void test_outside_a_pass(void **state)
{
	(void)state;
	uint64_t a = gw_now_pass_us();
	pause_a_little();
	assert_true(gw_now_pass_us() >= a + 2000);

	gw_clock_pass_begin();
	gw_clock_pass_begin();
	uint64_t in = gw_now_pass_us();
	gw_clock_pass_end();
	pause_a_little();
	/* still inside the outer pass */
	assert_int_equal(gw_now_pass_us(), in);
	gw_clock_pass_end();
	assert_true(gw_now_pass_us() >= in + 2000);
	/* an unbalanced end does no harm */
	gw_clock_pass_end();
	a = gw_now_pass_us();
	pause_a_little();
	assert_true(gw_now_pass_us() >= a + 2000);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_one_reading_per_pass),
		cmocka_unit_test(test_outside_a_pass),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
