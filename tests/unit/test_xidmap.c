/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <cmocka.h>

#include "gateway/maps/xidmap.h"

/*
 * Allocation faults (tests/unit/test_xidmap.wrap: this executable links
 * with -Wl,--wrap=malloc, so xidmap.c's malloc() comes here): with
 * malloc_fail_in at n > 0, the n-th allocation from then on fails, once.
 */
void *__real_malloc(size_t size);
void *__wrap_malloc(size_t size);

static unsigned malloc_fail_in;
static unsigned malloc_failed; /* allocations failed on purpose */
static unsigned malloc_empty;  /* asked for 0 bytes: refused */

void *__wrap_malloc(size_t size)
{
	if (size == 0) {
		malloc_empty++;
		return NULL;
	}
	if (malloc_fail_in > 0 && --malloc_fail_in == 0) {
		malloc_failed++;
		return NULL;
	}
	return __real_malloc(size);
}

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

/*
 * The table is made on the first insert, small, and doubles as it fills,
 * up to the bound set at init and no further; every mapping survives each
 * growth and removals still work after it.
 */
static void test_grows_from_small_start_to_bound(void **state)
{
	(void)state;
	enum { ENTRIES = 100 }; /* bound: a table of 256, 128 XIDs */
	struct xidmap m;
	assert_int_equal(xidmap_init(&m, ENTRIES), 0);
	assert_null(m.table); /* nothing held before the first call */
	assert_int_equal(xidmap_find(&m, 1), XIDMAP_NONE);
	assert_false(xidmap_remove(&m, 1));

	uint32_t n = 0;
	uint32_t sizes_seen = 0, last_size = 0;
	for (;; n++) {
		enum xidmap_put_result r = xidmap_put(&m, 0xabc00000u + n * 7, n);
		if (r != XIDMAP_ADDED) {
			assert_int_equal(r, XIDMAP_NO_ROOM);
			break;
		}
		if (n == 0)
			assert_int_equal(m.mask + 1, XIDMAP_START_SIZE);
		if (m.mask + 1 != last_size) {
			last_size = m.mask + 1;
			sizes_seen++;
		}
		/* Every mapping made so far is still found, whatever growth happened. */
		for (uint32_t i = 0; i <= n; i++)
			assert_int_equal(xidmap_find(&m, 0xabc00000u + i * 7), i);
	}
	assert_int_equal(n, 128);	   /* half of 256: the bound, not the start's 8 */
	assert_int_equal(m.mask + 1, 256); /* never past the bound */
	assert_int_equal(sizes_seen, 5);   /* 16, 32, 64, 128, 256 */
	assert_int_equal(xidmap_put(&m, 0xabc00000u, 9), XIDMAP_DUPLICATE);
	assert_int_equal(xidmap_find(&m, 0xabc00000u), 0);
	/* A removal makes room again, without growing. */
	assert_true(xidmap_remove(&m, 0xabc00000u + 5 * 7));
	assert_int_equal(xidmap_put(&m, 0xdead, 500), XIDMAP_ADDED);
	assert_int_equal(xidmap_put(&m, 0xbeef, 501), XIDMAP_NO_ROOM);
	assert_int_equal(m.mask + 1, 256);
	for (uint32_t i = 0; i < 128; i++)
		assert_int_equal(xidmap_find(&m, 0xabc00000u + i * 7), i == 5 ? XIDMAP_NONE : i);
	assert_int_equal(xidmap_find(&m, 0xdead), 500);
	xidmap_destroy(&m);
}

/*
 * The table of XIDMAP_START_SIZE is full (half of it: 8 XIDs) and cannot
 * grow for want of memory: the put is refused (XIDMAP_NO_ROOM, which the
 * forward path answers SYSTEM_ERR) and the table is left as it was, every
 * mapping still found. Once memory can be had the next put grows it.
 */
static void test_growth_out_of_memory(void **state)
{
	(void)state;
	enum { FULL = XIDMAP_START_SIZE / 2 };
	struct xidmap_entry before[XIDMAP_START_SIZE];
	struct xidmap m;

	assert_int_equal(xidmap_init(&m, 100), 0);
	for (uint32_t i = 0; i < FULL; i++)
		assert_int_equal(xidmap_put(&m, 0x5000 + i * 3, i), XIDMAP_ADDED);
	assert_int_equal(m.mask + 1, XIDMAP_START_SIZE);
	assert_int_equal(m.count, m.capacity);
	const struct xidmap_entry *table = m.table;
	memcpy(before, m.table, sizeof(before));

	malloc_fail_in = 1;
	malloc_failed = 0;
	assert_int_equal(xidmap_put(&m, 0x6000, FULL), XIDMAP_NO_ROOM);
	assert_int_equal(malloc_failed, 1); /* refused for the growth, not for the bound */
	malloc_fail_in = 0;
	assert_ptr_equal(m.table, table);
	assert_int_equal(m.mask + 1, XIDMAP_START_SIZE);
	assert_int_equal(m.count, FULL);
	assert_int_equal(m.capacity, FULL);
	assert_memory_equal(m.table, before, sizeof(before));
	for (uint32_t i = 0; i < FULL; i++)
		assert_int_equal(xidmap_find(&m, 0x5000 + i * 3), i);
	assert_int_equal(xidmap_find(&m, 0x6000), XIDMAP_NONE);
	/* A duplicate is still told as one: no growth is tried for it. */
	malloc_fail_in = 1;
	assert_int_equal(xidmap_put(&m, 0x5000, 77), XIDMAP_DUPLICATE);
	assert_int_equal(malloc_failed, 1);
	malloc_fail_in = 0;

	/* Memory again: the same put grows the table and every mapping moves over. */
	assert_int_equal(xidmap_put(&m, 0x6000, FULL), XIDMAP_ADDED);
	assert_int_equal(m.mask + 1, 2 * XIDMAP_START_SIZE);
	assert_int_equal(m.count, FULL + 1);
	for (uint32_t i = 0; i < FULL; i++)
		assert_int_equal(xidmap_find(&m, 0x5000 + i * 3), i);
	assert_int_equal(xidmap_find(&m, 0x6000), FULL);
	xidmap_destroy(&m);
}

/* The first table cannot be made: refused, nothing held, and the next put makes it. */
static void test_first_table_out_of_memory(void **state)
{
	(void)state;
	struct xidmap m;

	assert_int_equal(xidmap_init(&m, 8), 0);
	malloc_fail_in = 1;
	malloc_failed = 0;
	assert_int_equal(xidmap_put(&m, 42, 0), XIDMAP_NO_ROOM);
	assert_int_equal(malloc_failed, 1);
	malloc_fail_in = 0;
	assert_null(m.table);
	assert_int_equal(m.mask, 0);
	assert_int_equal(m.count, 0);
	assert_int_equal(m.capacity, 0);
	assert_int_equal(xidmap_find(&m, 42), XIDMAP_NONE);
	assert_false(xidmap_remove(&m, 42));

	assert_int_equal(xidmap_put(&m, 42, 0), XIDMAP_ADDED);
	assert_int_equal(m.mask + 1, XIDMAP_START_SIZE);
	assert_int_equal(xidmap_find(&m, 42), 0);
	xidmap_destroy(&m);
}

/* A bound too large for the table's index is refused, not looped on. */
static void test_init_refuses_huge_bound(void **state)
{
	(void)state;
	struct xidmap m;
	assert_int_equal(xidmap_init(&m, UINT32_MAX), -EINVAL);
}

/*
 * A table of 2^31 entries (the largest a bound of 2^30 allows), full to its
 * capacity: an insert finds it at its bound, NO_ROOM, and asks for no table.
 * Twice its size wrapped to 0 in 32 bits, passed the bound, and a table of
 * nothing was asked for, into which every entry would have been moved. The
 * table is a mapping of 16 GiB reserved but never touched, but for the one
 * page of the new XID's first probe, which is made empty so that the search
 * for a duplicate ends there.
 */
static void test_largest_table_does_not_wrap(void **state)
{
	(void)state;
	const uint64_t size = 1ull << 31;
	const size_t bytes = size * sizeof(struct xidmap_entry);
	struct xidmap m;

	assert_int_equal(xidmap_init(&m, 1u << 30), 0);
	assert_int_equal(m.max_size, size);
	void *t = mmap(NULL, bytes, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (t == MAP_FAILED)
		skip(); /* no room for the address range here */
	m.table = t;
	m.mask = (uint32_t)(size - 1);
	m.capacity = (uint32_t)(size / 2);
	m.count = m.capacity;
	const uint32_t xid = 0x1234567;
	m.table[(xid * 2654435761u) & m.mask].slot = XIDMAP_NONE; /* xidmap.c's xid_hash() */

	unsigned empty = malloc_empty;
	assert_int_equal(xidmap_put(&m, xid, 1), XIDMAP_NO_ROOM);
	assert_int_equal(malloc_empty, empty);
	assert_ptr_equal(m.table, t);
	assert_int_equal(m.mask, size - 1);
	munmap(t, bytes);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_insert_find_remove),
		cmocka_unit_test(test_capacity_is_enforced),
		cmocka_unit_test(test_churn_matches_reference),
		cmocka_unit_test(test_grows_from_small_start_to_bound),
		cmocka_unit_test(test_init_refuses_huge_bound),
		cmocka_unit_test(test_largest_table_does_not_wrap),
		cmocka_unit_test(test_growth_out_of_memory),
		cmocka_unit_test(test_first_table_out_of_memory),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
