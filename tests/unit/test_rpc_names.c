/* SPDX-License-Identifier: MIT */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "gateway/counters/rpc_names.h"

static void test_programs(void **state)
{
	(void)state;
	assert_string_equal(gw_rpc_program_name(100000), "rpcbind");
	assert_string_equal(gw_rpc_program_name(100003), "nfs");
	assert_string_equal(gw_rpc_program_name(100005), "mount");
	assert_string_equal(gw_rpc_program_name(100021), "nlm");
	assert_string_equal(gw_rpc_program_name(100024), "nsm");
	assert_string_equal(gw_rpc_program_name(100227), "nfs_acl");
	assert_null(gw_rpc_program_name(0));
	assert_null(gw_rpc_program_name(100004));
	assert_null(gw_rpc_program_name(0x40000000));
}

static void test_nfs(void **state)
{
	(void)state;
	/* v2 and v3 number their procedures differently: READ is 6 in both, WRITE is not */
	assert_string_equal(gw_rpc_procedure_name(100003, 2, 0), "NULL");
	assert_string_equal(gw_rpc_procedure_name(100003, 2, 6), "READ");
	assert_string_equal(gw_rpc_procedure_name(100003, 2, 8), "WRITE");
	assert_string_equal(gw_rpc_procedure_name(100003, 2, 17), "STATFS");
	assert_null(gw_rpc_procedure_name(100003, 2, 18));
	assert_string_equal(gw_rpc_procedure_name(100003, 3, 6), "READ");
	assert_string_equal(gw_rpc_procedure_name(100003, 3, 7), "WRITE");
	assert_string_equal(gw_rpc_procedure_name(100003, 3, 17), "READDIRPLUS");
	assert_string_equal(gw_rpc_procedure_name(100003, 3, 21), "COMMIT");
	assert_null(gw_rpc_procedure_name(100003, 3, 22));
	assert_string_equal(gw_rpc_procedure_name(100003, 4, 0), "NULL");
	assert_string_equal(gw_rpc_procedure_name(100003, 4, 1), "COMPOUND");
	assert_null(gw_rpc_procedure_name(100003, 4, 2));
	assert_null(gw_rpc_procedure_name(100003, 5, 1));
	assert_null(gw_rpc_procedure_name(100003, 1, 0));
}

static void test_side_protocols(void **state)
{
	(void)state;
	assert_string_equal(gw_rpc_procedure_name(100005, 1, 1), "MNT");
	assert_string_equal(gw_rpc_procedure_name(100005, 3, 5), "EXPORT");
	assert_null(gw_rpc_procedure_name(100005, 3, 6));
	assert_string_equal(gw_rpc_procedure_name(100021, 4, 2), "LOCK");
	assert_string_equal(gw_rpc_procedure_name(100021, 1, 15), "GRANTED_RES");
	assert_null(gw_rpc_procedure_name(100021, 4, 16)); /* unassigned */
	assert_null(gw_rpc_procedure_name(100021, 4, 19));
	assert_string_equal(gw_rpc_procedure_name(100021, 4, 23), "FREE_ALL");
	assert_null(gw_rpc_procedure_name(100021, 4, 24));
	assert_string_equal(gw_rpc_procedure_name(100024, 1, 6), "NOTIFY");
	assert_string_equal(gw_rpc_procedure_name(100227, 3, 1), "GETACL");
	assert_string_equal(gw_rpc_procedure_name(100227, 2, 4), "ACCESS");
	assert_string_equal(gw_rpc_procedure_name(100000, 2, 3), "GETPORT");
	assert_string_equal(gw_rpc_procedure_name(100000, 3, 3), "GETADDR");
	assert_string_equal(gw_rpc_procedure_name(100000, 3, 5), "CALLIT");
	assert_string_equal(gw_rpc_procedure_name(100000, 4, 5), "BCAST");
	assert_string_equal(gw_rpc_procedure_name(100000, 4, 12), "GETSTAT");
	assert_null(gw_rpc_procedure_name(123456, 1, 0));
	assert_null(gw_rpc_procedure_name(100003, 3, UINT32_MAX));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_programs),
		cmocka_unit_test(test_nfs),
		cmocka_unit_test(test_side_protocols),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
