/* SPDX-License-Identifier: MIT */
/*
 * The registration of a route's services with the host's rpcbind
 * (gateway/side/rpc/rpcb_reg.c), against a fake rpcbind
 * (tests/support/fakerpcb.h): every entry mapped at the wildcard address
 * and exactly those unmapped again, but not one a service started since
 * has taken over; nothing at all when no rpcbind
 * answers, when a live service holds one of the programs (the kernel's
 * lockd), or when rpcbind refuses a SET (then what was set is undone); a
 * stale mapping whose port nobody holds replaced; the IPv6 netids on the
 * IPv6 wildcard.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "gateway/side/rpc/rpcb_reg.h"

#include "support/fakerpcb.h"

/* MOUNT 3 over UDP and TCP at 40000 (0x9c40), NLM 4 over UDP at 40001. */
static struct rpcb_reg *three_entries(struct gwt_rpcb *f, bool ipv6)
{
	struct rpcb_reg *reg = rpcb_reg_new(&f->ops, ipv6);

	assert_non_null(reg);
	assert_true(rpcb_reg_add(reg, 100005, 3, 17, 40000));
	assert_true(rpcb_reg_add(reg, 100005, 3, 6, 40000));
	assert_true(rpcb_reg_add(reg, 100021, 4, 17, 40001));
	return reg;
}

static void test_registers_and_unregisters_its_own(void **state)
{
	(void)state;
	struct gwt_rpcb f;
	char why[400];

	gwt_rpcb_init(&f);
	gwt_rpcb_map(&f, 100003, 3, "tcp", 2049); /* someone else's: left alone */
	struct rpcb_reg *reg = three_entries(&f, false);
	assert_int_equal(rpcb_reg_register(reg, why, sizeof(why)), RPCB_REG_DONE);
	assert_int_equal(rpcb_reg_count(reg), 3);
	assert_string_equal(gwt_rpcb_lookup(&f, 100005, 3, "udp"), "0.0.0.0.156.64");
	assert_string_equal(gwt_rpcb_lookup(&f, 100005, 3, "tcp"), "0.0.0.0.156.64");
	assert_string_equal(gwt_rpcb_lookup(&f, 100021, 4, "udp"), "0.0.0.0.156.65");
	assert_null(gwt_rpcb_lookup(&f, 100021, 4, "tcp"));
	assert_null(gwt_rpcb_lookup(&f, 100005, 3, "udp6"));
	assert_int_equal(f.nmap, 4);
	rpcb_reg_free(reg);
	assert_int_equal(f.nmap, 1);
	assert_non_null(gwt_rpcb_lookup(&f, 100003, 3, "tcp"));
	assert_false(gwt_rpcb_logged(&f, "unset 100003 3 tcp", NULL));
}

/*
 * rpc.mountd started after the gateway: it unset MOUNT and set its own.
 * The gateway's stop leaves mountd's mapping, and removes its other ones.
 */
static void test_unregister_leaves_a_later_service_mapping(void **state)
{
	(void)state;
	struct gwt_rpcb f;
	char why[400];

	gwt_rpcb_init(&f);
	struct rpcb_reg *reg = three_entries(&f, false);
	assert_int_equal(rpcb_reg_register(reg, why, sizeof(why)), RPCB_REG_DONE);
	assert_true(f.ops.unset(&f, 100005, 3, "udp"));
	assert_true(f.ops.set(&f, 100005, 3, "udp", "0.0.0.0.78.32"));
	rpcb_reg_free(reg);
	assert_string_equal(gwt_rpcb_lookup(&f, 100005, 3, "udp"), "0.0.0.0.78.32");
	assert_null(gwt_rpcb_lookup(&f, 100005, 3, "tcp"));
	assert_null(gwt_rpcb_lookup(&f, 100021, 4, "udp"));
	assert_int_equal(f.nmap, 1);
}

static void test_ipv6_wildcard_maps_the_ipv6_netids(void **state)
{
	(void)state;
	struct gwt_rpcb f;
	char why[400];

	gwt_rpcb_init(&f);
	struct rpcb_reg *reg = three_entries(&f, true);
	assert_int_equal(rpcb_reg_register(reg, why, sizeof(why)), RPCB_REG_DONE);
	assert_string_equal(gwt_rpcb_lookup(&f, 100005, 3, "udp6"), "::.156.64");
	assert_string_equal(gwt_rpcb_lookup(&f, 100005, 3, "tcp6"), "::.156.64");
	assert_string_equal(gwt_rpcb_lookup(&f, 100021, 4, "udp6"), "::.156.65");
	/* The gateway's IPv6 sockets are IPV6_V6ONLY: nothing for IPv4 clients. */
	assert_null(gwt_rpcb_lookup(&f, 100005, 3, "udp"));
	rpcb_reg_free(reg);
	assert_int_equal(f.nmap, 0);
}

static void test_no_rpcbind_registers_nothing(void **state)
{
	(void)state;
	struct gwt_rpcb f;
	char why[400];

	gwt_rpcb_init(&f);
	f.down = true;
	struct rpcb_reg *reg = three_entries(&f, false);
	assert_int_equal(rpcb_reg_register(reg, why, sizeof(why)), RPCB_REG_NO_RPCBIND);
	assert_non_null(strstr(why, "no rpcbind"));
	assert_int_equal(f.nlog, 0);
	rpcb_reg_free(reg);
	assert_int_equal(f.nlog, 0);
}

/*
 * The kernel's lockd holds NLM 4 over UDP at a live port: the gateway
 * maps nothing (not even MOUNT), removes nothing, and says why.
 */
static void test_live_lockd_is_not_overwritten(void **state)
{
	(void)state;
	struct gwt_rpcb f;
	char why[400];

	gwt_rpcb_init(&f);
	gwt_rpcb_map(&f, 100021, 4, "udp", 4045);
	f.held[0] = 4045;
	struct rpcb_reg *reg = three_entries(&f, false);
	assert_int_equal(rpcb_reg_register(reg, why, sizeof(why)), RPCB_REG_COLLISION);
	assert_non_null(strstr(why, "nlm (program 100021) version 4 over UDP to port 4045"));
	assert_non_null(strstr(why, "lockd"));
	assert_int_equal(f.nlog, 0);
	assert_int_equal(rpcb_reg_count(reg), 0);
	rpcb_reg_free(reg);
	assert_int_equal(f.nlog, 0);
	assert_string_equal(gwt_rpcb_lookup(&f, 100021, 4, "udp"), "0.0.0.0.15.205");
}

/* A previous gateway's mapping whose port nobody holds: replaced. */
static void test_stale_mapping_is_replaced(void **state)
{
	(void)state;
	struct gwt_rpcb f;
	char why[400];
	size_t unset_at, set_at;

	gwt_rpcb_init(&f);
	gwt_rpcb_map(&f, 100021, 4, "udp", 33333);
	struct rpcb_reg *reg = three_entries(&f, false);
	assert_int_equal(rpcb_reg_register(reg, why, sizeof(why)), RPCB_REG_DONE);
	assert_true(gwt_rpcb_logged(&f, "unset 100021 4 udp", &unset_at));
	assert_true(gwt_rpcb_logged(&f, "set 100021 4 udp 0.0.0.0.156.65", &set_at));
	assert_true(unset_at < set_at);
	assert_string_equal(gwt_rpcb_lookup(&f, 100021, 4, "udp"), "0.0.0.0.156.65");
	rpcb_reg_free(reg);
	assert_int_equal(f.nmap, 0);
}

/* rpcbind refuses the second SET: the first is undone, nothing stays. */
static void test_refused_set_undoes_the_others(void **state)
{
	(void)state;
	struct gwt_rpcb f;
	char why[400];

	gwt_rpcb_init(&f);
	f.refuse_set_at = 2;
	struct rpcb_reg *reg = three_entries(&f, false);
	assert_int_equal(rpcb_reg_register(reg, why, sizeof(why)), RPCB_REG_REFUSED);
	assert_non_null(strstr(why, "refused to map mount (program 100005) version 3 over tcp"));
	assert_int_equal(f.nmap, 0);
	assert_int_equal(rpcb_reg_count(reg), 0);
	assert_false(gwt_rpcb_logged(&f, "set 100021 4 udp 0.0.0.0.156.65", NULL));
	size_t before = f.nlog;
	rpcb_reg_free(reg);
	assert_int_equal(f.nlog, before); /* nothing more to remove */
}

static void test_table_is_bounded(void **state)
{
	(void)state;
	struct gwt_rpcb f;

	gwt_rpcb_init(&f);
	struct rpcb_reg *reg = rpcb_reg_new(&f.ops, false);
	for (int i = 0; i < RPCB_REG_MAX_ENTRIES; i++)
		assert_true(rpcb_reg_add(reg, 100005, (uint32_t)i, 6, 1));
	assert_false(rpcb_reg_add(reg, 100005, 99, 6, 1));
	rpcb_reg_free(reg);
	/* A protocol rpcbind's GETPORT does not know. */
	reg = rpcb_reg_new(&f.ops, false);
	assert_false(rpcb_reg_add(reg, 100005, 3, 99, 1));
	rpcb_reg_free(reg);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_registers_and_unregisters_its_own),
		cmocka_unit_test(test_unregister_leaves_a_later_service_mapping),
		cmocka_unit_test(test_ipv6_wildcard_maps_the_ipv6_netids),
		cmocka_unit_test(test_no_rpcbind_registers_nothing),
		cmocka_unit_test(test_live_lockd_is_not_overwritten),
		cmocka_unit_test(test_stale_mapping_is_replaced),
		cmocka_unit_test(test_refused_set_undoes_the_others),
		cmocka_unit_test(test_table_is_bounded),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
