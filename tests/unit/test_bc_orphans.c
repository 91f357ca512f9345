/* SPDX-License-Identifier: MIT */
/*
 * tests/unit/test_bc_orphans.c - back channels kept for a gone client's
 * reconnection (gateway/maps/bc_orphans.h): found by session, with the gone
 * client's address and time; claimed once; dropped (not adopted) when
 * moot; gone after the TTL; bounded, the oldest replaced, and one
 * address's share bounded too, its own oldest replaced, so that it cannot
 * push out other addresses' entries; nothing allocated until the first
 * entry.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "gateway/maps/bc_orphans.h"

static void sid(uint8_t id[ULB_SESSIONID_SIZE], uint32_t n)
{
	memset(id, 0x5e, ULB_SESSIONID_SIZE);
	memcpy(id, &n, sizeof(n));
}

static void addr_of(uint8_t a[16], uint8_t last)
{
	memset(a, 0, 16);
	a[10] = a[11] = 0xff; /* ::ffff:192.0.2.last */
	a[12] = 192;
	a[14] = 2;
	a[15] = last;
}

static void test_found_and_claimed_once(void **state)
{
	(void)state;
	struct bc_orphans o;
	uint8_t x[ULB_SESSIONID_SIZE], y[ULB_SESSIONID_SIZE], a[16];

	sid(x, 1);
	sid(y, 2);
	addr_of(a, 1);
	bc_orphans_init(&o, 0);
	assert_null(o.e);
	assert_null(bc_orphans_find(&o, x, 0));
	bc_orphans_add(&o, x, a, 4096, 1000);
	assert_non_null(o.e);
	assert_int_equal(o.since_us, 1000);
	bc_orphans_add(&o, y, a, 0, 1500); /* a later one: the bound stays */
	assert_int_equal(o.since_us, 1000);
	bc_orphans_claim(&o, y);
	assert_int_equal(bc_orphans_count(&o), 1);
	assert_null(bc_orphans_find(&o, y, 2000));
	const struct bc_orphan *e = bc_orphans_find(&o, x, 2000);
	assert_non_null(e);
	assert_memory_equal(e->addr, a, 16);
	assert_int_equal(e->maxresp, 4096);
	assert_int_equal(e->gone_us, 1000);
	bc_orphans_claim(&o, x);
	assert_null(bc_orphans_find(&o, x, 3000));
	bc_orphans_claim(&o, x); /* nothing left to claim: not counted twice */
	assert_int_equal(o.st.kept, 2);
	assert_int_equal(o.st.adopted, 2);
	bc_orphans_add(&o, x, a, 0, 4000); /* into an empty table: a new bound */
	assert_int_equal(o.since_us, 4000);
	bc_orphans_fini(&o);
	assert_null(o.e);
}

static void test_gone_after_the_ttl(void **state)
{
	(void)state;
	struct bc_orphans o;
	uint8_t x[ULB_SESSIONID_SIZE], a[16];

	sid(x, 1);
	addr_of(a, 1);
	bc_orphans_init(&o, 0);
	bc_orphans_add(&o, x, a, 0, 5);
	assert_null(bc_orphans_find(&o, x, 5 + BC_ORPHANS_TTL_US));
	assert_int_equal(bc_orphans_count(&o), 0);
	assert_int_equal(o.st.expired, 1);
	bc_orphans_add(&o, x, a, 0, 10);
	assert_non_null(bc_orphans_find(&o, x, 9 + BC_ORPHANS_TTL_US));
	bc_orphans_fini(&o);
}

/* At the bound the oldest goes; a session kept again replaces its own entry, not another. */
static void test_bounded_oldest_replaced(void **state)
{
	(void)state;
	struct bc_orphans o;
	uint8_t id[ULB_SESSIONID_SIZE], a[16], b[16];

	addr_of(a, 1);
	addr_of(b, 2);
	bc_orphans_init(&o, 4);
	for (uint32_t i = 0; i < 4; i++) {
		sid(id, i);
		bc_orphans_add(&o, id, a, i, 100 + i);
	}
	sid(id, 2);
	bc_orphans_add(&o, id, b, 2, 200); /* session 2 again, its holder now at b */
	assert_int_equal(bc_orphans_count(&o), 4);
	assert_int_equal(o.st.replaced, 0);
	assert_memory_equal(bc_orphans_find(&o, id, 201)->addr, b, 16);
	sid(id, 9);
	bc_orphans_add(&o, id, a, 9, 300);
	assert_int_equal(bc_orphans_count(&o), 4);
	assert_int_equal(o.st.replaced, 1);
	sid(id, 0); /* the oldest, gone */
	assert_null(bc_orphans_find(&o, id, 301));
	for (uint32_t i = 1; i < 4; i++) {
		sid(id, i);
		assert_int_equal(bc_orphans_find(&o, id, 302)->maxresp, i);
	}
	sid(id, 9);
	assert_non_null(bc_orphans_find(&o, id, 303));
	bc_orphans_fini(&o);
}

/* A moot entry goes, counted dropped, not adopted; once. */
static void test_dropped_not_adopted(void **state)
{
	(void)state;
	struct bc_orphans o;
	uint8_t x[ULB_SESSIONID_SIZE], y[ULB_SESSIONID_SIZE], a[16];

	sid(x, 1);
	sid(y, 2);
	addr_of(a, 1);
	bc_orphans_init(&o, 0);
	bc_orphans_drop(&o, x); /* an empty table: nothing to drop */
	bc_orphans_add(&o, x, a, 0, 100);
	bc_orphans_add(&o, y, a, 0, 110);
	bc_orphans_drop(&o, x);
	assert_null(bc_orphans_find(&o, x, 120));
	assert_non_null(bc_orphans_find(&o, y, 120));
	assert_int_equal(bc_orphans_count(&o), 1);
	bc_orphans_drop(&o, x);
	assert_int_equal(o.st.dropped, 1);
	assert_int_equal(o.st.adopted, 0);
	assert_int_equal(o.st.expired, 0);
	bc_orphans_fini(&o);
}

/*
 * One address keeps adding (a client resetting its connection in a loop,
 * each time with new sessions): past its share it replaces its own oldest,
 * and another address's entry, older than all of them, stays.
 */
static void test_one_address_cannot_evict_others(void **state)
{
	(void)state;
	struct bc_orphans o;
	uint8_t id[ULB_SESSIONID_SIZE], a[16], b[16];
	const uint32_t share = BC_ORPHANS_PER_ADDR_MAX;

	addr_of(a, 1);
	addr_of(b, 2);
	bc_orphans_init(&o, share + 2);
	sid(id, 1000);
	bc_orphans_add(&o, id, b, 7, 10);
	for (uint32_t i = 0; i < 3 * share; i++) {
		sid(id, i);
		bc_orphans_add(&o, id, a, i, 100 + i);
	}
	assert_int_equal(bc_orphans_count(&o), share + 1);
	assert_int_equal(o.st.replaced, 2 * share);
	sid(id, 1000);
	const struct bc_orphan *e = bc_orphans_find(&o, id, 500);
	assert_non_null(e);
	assert_memory_equal(e->addr, b, 16);
	/* a's latest share are kept, its older ones replaced */
	for (uint32_t i = 0; i < 3 * share; i++) {
		sid(id, i);
		if (i < 2 * share)
			assert_null(bc_orphans_find(&o, id, 500));
		else
			assert_int_equal(bc_orphans_find(&o, id, 500)->maxresp, i);
	}
	/* another address still has room; a full table replaces the oldest of all */
	addr_of(b, 3);
	sid(id, 2000);
	bc_orphans_add(&o, id, b, 0, 600);
	sid(id, 2001);
	bc_orphans_add(&o, id, b, 0, 601);
	assert_int_equal(bc_orphans_count(&o), share + 2);
	sid(id, 1000);
	assert_null(bc_orphans_find(&o, id, 602));
	bc_orphans_fini(&o);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_found_and_claimed_once),
		cmocka_unit_test(test_gone_after_the_ttl),
		cmocka_unit_test(test_bounded_oldest_replaced),
		cmocka_unit_test(test_dropped_not_adopted),
		cmocka_unit_test(test_one_address_cannot_evict_others),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
