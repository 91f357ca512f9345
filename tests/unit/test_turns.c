/* SPDX-License-Identifier: MIT */
/*
 * tests/unit/test_turns.c - the loop's contention state (common/turns.h):
 * one connection's turns alone never make it contended; a turn by another
 * does, for GW_CONTENTION_WINDOW_US; the budget follows.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "common/clock.h"
#include "common/turns.h"

static int a, b; /* two connections' identities */

static int reset(void **state)
{
	(void)state;
	gw_turns_reset();
	return 0;
}

static void test_one_connection_alone(void **state)
{
	(void)state;
	for (uint64_t t = 1000; t < 1000 + 100 * 1000; t += 1000) {
		gw_turn_taken(&a, t);
		assert_false(gw_turns_contended(t));
	}
}

static void test_another_connection_contends_for_the_window(void **state)
{
	(void)state;
	gw_turn_taken(&a, 1000);
	gw_turn_taken(&a, 2000);
	assert_false(gw_turns_contended(2000));
	gw_turn_taken(&b, 3000);
	assert_true(gw_turns_contended(3000));
	/* a's turn right after b's is a change of connection too: it renews */
	gw_turn_taken(&a, 4000);
	assert_true(gw_turns_contended(4000 + GW_CONTENTION_WINDOW_US - 1));
	assert_false(gw_turns_contended(4000 + GW_CONTENTION_WINDOW_US));
	/* a alone from then on: its turns do not renew the window */
	gw_turn_taken(&a, 5000);
	gw_turn_taken(&a, 4000 + GW_CONTENTION_WINDOW_US);
	assert_false(gw_turns_contended(4000 + GW_CONTENTION_WINDOW_US));
}

/* A change of connection after a quiet spell is one client after another. */
static void test_change_after_quiet_spell(void **state)
{
	(void)state;
	gw_turn_taken(&a, 1000);
	gw_turn_taken(&b, 1000 + GW_CONTENTION_WINDOW_US);
	assert_false(gw_turns_contended(1000 + GW_CONTENTION_WINDOW_US));
	gw_turn_taken(&a, 1001 + GW_CONTENTION_WINDOW_US);
	assert_true(gw_turns_contended(1001 + GW_CONTENTION_WINDOW_US));
}

static void test_budget_follows(void **state)
{
	(void)state;
	/* outside a pass gw_now_pass_us() reads the clock: take turns at now */
	uint64_t now = gw_now_us();

	assert_int_equal(gw_turns_budget(16, 4), 16);
	gw_turn_taken(&a, now);
	gw_turn_taken(&b, now);
	assert_int_equal(gw_turns_budget(16, 4), 4);
	/* not taking part, or a contended budget above the full one */
	assert_int_equal(gw_turns_budget(16, 0), 16);
	assert_int_equal(gw_turns_budget(2, 4), 2);
	gw_turns_reset();
	assert_int_equal(gw_turns_budget(16, 4), 16);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_one_connection_alone, reset),
		cmocka_unit_test_setup(test_another_connection_contends_for_the_window, reset),
		cmocka_unit_test_setup(test_change_after_quiet_spell, reset),
		cmocka_unit_test_setup(test_budget_follows, reset),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
