/* SPDX-License-Identifier: MIT */
/*
 * tests/unit/test_bc_orphans.c - back channels kept for a gone client's
 * reconnection (gateway/bc_orphans.h): given back only to the same address
 * and port, once; gone after the TTL; bounded, the oldest replaced; nothing
 * allocated until the first entry.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "gateway/bc_orphans.h"

static void sid(uint8_t id[ULB_SESSIONID_SIZE], uint32_t n)
{
	memset(id, 0x5e, ULB_SESSIONID_SIZE);
	memcpy(id, &n, sizeof(n));
}

static struct upxid_key peer(uint8_t last, uint16_t port)
{
	struct upxid_key k = { .port = port };

	k.addr[10] = k.addr[11] = 0xff; /* ::ffff:192.0.2.last */
	k.addr[12] = 192;
	k.addr[14] = 2;
	k.addr[15] = last;
	return k;
}

static void test_taken_by_the_same_peer_once(void **state)
{
	(void)state;
	struct bc_orphans o;
	uint8_t x[ULB_SESSIONID_SIZE], y[ULB_SESSIONID_SIZE];
	struct upxid_key a = peer(1, 700), a_other_port = peer(1, 701), b = peer(2, 700);
	uint32_t maxresp = 0;

	sid(x, 1);
	sid(y, 2);
	bc_orphans_init(&o, 0);
	assert_null(o.e);
	assert_false(bc_orphans_take(&o, x, &a, 0, &maxresp));
	bc_orphans_add(&o, x, &a, 4096, 1000);
	assert_non_null(o.e);
	assert_int_equal(bc_orphans_count(&o), 1);
	assert_false(bc_orphans_take(&o, y, &a, 2000, &maxresp));
	assert_false(bc_orphans_take(&o, x, &a_other_port, 2000, &maxresp));
	assert_false(bc_orphans_take(&o, x, &b, 2000, &maxresp));
	assert_int_equal(bc_orphans_count(&o), 1);
	assert_true(bc_orphans_take(&o, x, &a, 2000, &maxresp));
	assert_int_equal(maxresp, 4096);
	assert_false(bc_orphans_take(&o, x, &a, 3000, &maxresp));
	assert_int_equal(o.st.kept, 1);
	assert_int_equal(o.st.adopted, 1);
	bc_orphans_fini(&o);
	assert_null(o.e);
}

static void test_gone_after_the_ttl(void **state)
{
	(void)state;
	struct bc_orphans o;
	uint8_t x[ULB_SESSIONID_SIZE];
	struct upxid_key a = peer(1, 700);
	uint32_t maxresp;

	bc_orphans_init(&o, 0);
	sid(x, 1);
	bc_orphans_add(&o, x, &a, 0, 5);
	assert_false(bc_orphans_take(&o, x, &a, 5 + BC_ORPHANS_TTL_US, &maxresp));
	assert_int_equal(bc_orphans_count(&o), 0);
	assert_int_equal(o.st.expired, 1);
	bc_orphans_add(&o, x, &a, 0, 10);
	assert_true(bc_orphans_take(&o, x, &a, 9 + BC_ORPHANS_TTL_US, &maxresp));
	bc_orphans_fini(&o);
}

/* At the bound the oldest goes; a session kept again replaces its own entry, not another. */
static void test_bounded_oldest_replaced(void **state)
{
	(void)state;
	struct bc_orphans o;
	uint8_t id[ULB_SESSIONID_SIZE];
	struct upxid_key a = peer(1, 700), a2 = peer(1, 702);
	uint32_t maxresp;

	bc_orphans_init(&o, 4);
	for (uint32_t i = 0; i < 4; i++) {
		sid(id, i);
		bc_orphans_add(&o, id, &a, i, 100 + i);
	}
	sid(id, 2);
	bc_orphans_add(&o, id, &a2, 2, 200); /* session 2 again, its holder now at port 702 */
	assert_int_equal(bc_orphans_count(&o), 4);
	assert_int_equal(o.st.replaced, 0);
	assert_false(bc_orphans_take(&o, id, &a, 201, &maxresp));
	sid(id, 9);
	bc_orphans_add(&o, id, &a, 9, 300);
	assert_int_equal(bc_orphans_count(&o), 4);
	assert_int_equal(o.st.replaced, 1);
	sid(id, 0); /* the oldest, gone */
	assert_false(bc_orphans_take(&o, id, &a, 301, &maxresp));
	for (uint32_t i = 1; i < 4; i++) {
		sid(id, i);
		assert_true(bc_orphans_take(&o, id, i == 2 ? &a2 : &a, 302, &maxresp));
		assert_int_equal(maxresp, i);
	}
	sid(id, 9);
	assert_true(bc_orphans_take(&o, id, &a, 303, &maxresp));
	assert_int_equal(bc_orphans_count(&o), 0);
	bc_orphans_fini(&o);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_taken_by_the_same_peer_once),
		cmocka_unit_test(test_gone_after_the_ttl),
		cmocka_unit_test(test_bounded_oldest_replaced),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
