/* SPDX-License-Identifier: MIT */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <cmocka.h>

#include "gateway/xidmap.h"

static void test_insert_find_remove(void **state)
{
	(void)state;
	struct xidmap m;
	assert_int_equal(xidmap_init(&m, 8), 0);
	assert_int_equal(xidmap_find(&m, 42), XIDMAP_NONE);
	assert_true(xidmap_insert(&m, 42, 3));
	assert_false(xidmap_insert(&m, 42, 4)); /* a duplicate XID is refused */
	assert_int_equal(xidmap_find(&m, 42), 3);
	assert_true(xidmap_remove(&m, 42));
	assert_false(xidmap_remove(&m, 42));
	assert_int_equal(xidmap_find(&m, 42), XIDMAP_NONE);
	xidmap_destroy(&m);
}

static void test_capacity_is_enforced(void **state)
{
	(void)state;
	struct xidmap m;
	assert_int_equal(xidmap_init(&m, 5), 0);
	uint32_t n = 0;
	while (xidmap_insert(&m, 1000 + n, n))
		n++;
	assert_true(n >= 5);
	assert_int_equal(n, m.capacity);
	for (uint32_t i = 0; i < n; i++)
		assert_int_equal(xidmap_find(&m, 1000 + i), i);
	xidmap_destroy(&m);
}

/*
 * Random churn against a reference array: every insert, find and remove
 * agrees, which exercises backward-shift deletion across wrapped runs.
 */
static void test_churn_matches_reference(void **state)
{
	(void)state;
	enum { N = 64, XIDS = 256 };
	struct xidmap m;
	uint32_t ref[XIDS];
	assert_int_equal(xidmap_init(&m, N), 0);
	for (unsigned i = 0; i < XIDS; i++)
		ref[i] = XIDMAP_NONE;
	srand(7);
	unsigned live = 0;
	for (unsigned step = 0; step < 200000; step++) {
		/* Clustered XIDs, as a client's are. */
		uint32_t x = (uint32_t)rand() % XIDS;
		uint32_t xid = 0x10000000u + x;
		if (ref[x] == XIDMAP_NONE && live < N && (rand() & 1)) {
			assert_true(xidmap_insert(&m, xid, step));
			ref[x] = step;
			live++;
		} else if (ref[x] != XIDMAP_NONE && (rand() & 1)) {
			assert_true(xidmap_remove(&m, xid));
			ref[x] = XIDMAP_NONE;
			live--;
		}
		uint32_t y = (uint32_t)rand() % XIDS;
		assert_int_equal(xidmap_find(&m, 0x10000000u + y), ref[y]);
	}
	assert_int_equal(m.count, live);
	xidmap_destroy(&m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_insert_find_remove),
		cmocka_unit_test(test_capacity_is_enforced),
		cmocka_unit_test(test_churn_matches_reference),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
