/* SPDX-License-Identifier: MIT */
/*
 * tests/unit/test_slots.c - a session's call slots (common/slots.h): slots
 * never used are handed out in order and reported fresh, a put-back slot is
 * reused first and not fresh, every slot busy gives none, and forgetting
 * them waits until none is busy.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "common/slots.h"

struct slot {
	uint64_t payload;
	void *next_free;
	uint32_t made_here; /* set by the caller on first use */
};

enum { N = 4 };

struct pool {
	struct slot a[N];
	struct gw_slots p;
};

static void pool_init(struct pool *pl)
{
	memset(pl, 0, sizeof(*pl));
	gw_slots_init(&pl->p, pl->a, sizeof(pl->a[0]), offsetof(struct slot, next_free), N);
}

static struct slot *get(struct pool *pl, bool *fresh)
{
	struct slot *s = gw_slots_get(&pl->p, fresh);

	if (s && *fresh)
		s->made_here++;
	return s;
}

static void test_fresh_slots_in_order_until_full(void **state)
{
	(void)state;
	struct pool pl;
	bool fresh;

	pool_init(&pl);
	for (uint32_t i = 0; i < N; i++) {
		assert_ptr_equal(get(&pl, &fresh), &pl.a[i]);
		assert_true(fresh);
		assert_int_equal(pl.p.busy, i + 1);
	}
	assert_true(gw_slots_full(&pl.p));
	assert_null(get(&pl, &fresh));
	assert_false(fresh);
	assert_int_equal(pl.p.busy, N);
}

static void test_put_back_slot_is_reused_first(void **state)
{
	(void)state;
	struct pool pl;
	bool fresh;

	pool_init(&pl);
	struct slot *s0 = get(&pl, &fresh);
	struct slot *s1 = get(&pl, &fresh);
	gw_slots_put(&pl.p, s0);
	gw_slots_put(&pl.p, s1);
	assert_int_equal(pl.p.busy, 0);
	assert_false(gw_slots_full(&pl.p));

	/* The most recently put back first, neither fresh; then slot 2, made now. */
	assert_ptr_equal(get(&pl, &fresh), s1);
	assert_false(fresh);
	assert_ptr_equal(get(&pl, &fresh), s0);
	assert_false(fresh);
	assert_null(s0->next_free); /* the link is the pool's only while the slot is free */
	assert_ptr_equal(get(&pl, &fresh), &pl.a[2]);
	assert_true(fresh);
	for (uint32_t i = 0; i < N; i++)
		assert_int_equal(pl.a[i].made_here, i < 3 ? 1 : 0); /* slot 3 never touched */
}

static void test_forget_waits_for_idle_then_makes_again(void **state)
{
	(void)state;
	struct pool pl;
	bool fresh;

	pool_init(&pl);
	struct slot *s0 = get(&pl, &fresh);
	struct slot *s1 = get(&pl, &fresh);
	gw_slots_put(&pl.p, s1);
	assert_false(gw_slots_forget(&pl.p)); /* s0 is busy */
	assert_int_equal(pl.p.made, 2);
	assert_ptr_equal(pl.p.free, s1);

	gw_slots_put(&pl.p, s0);
	assert_true(gw_slots_forget(&pl.p));
	assert_int_equal(pl.p.made, 0);
	assert_ptr_equal(get(&pl, &fresh), &pl.a[0]);
	assert_true(fresh); /* set up again: its memory was given back */
	assert_int_equal(pl.a[0].made_here, 2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fresh_slots_in_order_until_full),
		cmocka_unit_test(test_put_back_slot_is_reused_first),
		cmocka_unit_test(test_forget_waits_for_idle_then_makes_again),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
