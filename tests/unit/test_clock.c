/* SPDX-License-Identifier: MIT */
/*
 * tests/unit/test_clock.c - the per-pass clock and its wall-clock time
 * (common/clock.h). clock_gettime() is wrapped (test_clock.wrap) to count
 * the readings.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <time.h>

#include "common/clock.h"

int __real_clock_gettime(clockid_t id, struct timespec *ts);
int __wrap_clock_gettime(clockid_t id, struct timespec *ts);

static unsigned int realtime_reads;

int __wrap_clock_gettime(clockid_t id, struct timespec *ts)
{
	if (id == CLOCK_REALTIME)
		realtime_reads++;
	return __real_clock_gettime(id, ts);
}

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

/*
 * A monotonic reading turned into wall-clock time: what the wall clock
 * says, and the wall clock is read once a second of readings, not per use.
 */
static void test_realtime_from_a_reading(void **state)
{
	(void)state;
	struct timespec rt;
	uint64_t mono = gw_now_us();
	unsigned int before = realtime_reads;

	int64_t ns = gw_realtime_ns(mono);
	__real_clock_gettime(CLOCK_REALTIME, &rt);
	int64_t wall = (int64_t)rt.tv_sec * 1000000000 + rt.tv_nsec;
	assert_true(ns <= wall && wall - ns < 50000000); /* a loaded host may preempt us */
	assert_true(realtime_reads <= before + 1);

	before = realtime_reads;
	for (int i = 0; i < 1000; i++)
		assert_int_equal(gw_realtime_ns(mono + (uint64_t)i), ns + (int64_t)i * 1000);
	assert_int_equal(realtime_reads, before);

	/* a second later (of readings), the offset is taken again */
	uint64_t later = mono + 1000000;
	ns = gw_realtime_ns(later);
	assert_int_equal(realtime_reads, before + 1);
	/* the offset stays the wall clock's (no step here): the second is a second */
	int64_t second = ns - gw_realtime_ns(mono);
	assert_true(second > 950000000 && second < 1050000000);
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
		cmocka_unit_test(test_realtime_from_a_reading),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
