/* SPDX-License-Identifier: MIT */
/* RPC message headers: peeking, call/reply header parsing, error replies. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "common/xdr.h"
#include "ulb-rules/rpc_msg.h"

static void put_words(uint8_t *m, const uint32_t *w, size_t n)
{
	for (size_t i = 0; i < n; i++)
		xdr_put32(m + 4 * i, w[i]);
}

static void test_peek(void **state)
{
	uint8_t m[8];
	uint32_t xid, type;
	const uint32_t w[] = { 0xdeadbeef, 1 };

	put_words(m, w, 2);
	assert_false(rpc_msg_peek(m, 7, &xid, &type));
	assert_true(rpc_msg_peek(m, 8, &xid, &type));
	assert_int_equal(xid, 0xdeadbeef);
	assert_int_equal(type, RPC_MSG_REPLY);
}

static void test_call_hdr(void **state)
{
	uint8_t m[64];
	struct rpc_call_hdr h;
	/* AUTH_SYS credential of 8 bytes, AUTH_NONE verifier, one argument word */
	const uint32_t w[] = { 9, 0, 2, 100003, 3, 7, 1, 8, 0x11, 0x22, 0, 0, 0x99 };

	put_words(m, w, 13);
	assert_int_equal(rpc_call_hdr_parse(m, 52, &h), RPC_HDR_OK);
	assert_int_equal(h.xid, 9);
	assert_int_equal(h.prog, 100003);
	assert_int_equal(h.vers, 3);
	assert_int_equal(h.proc, 7);
	assert_int_equal(h.cred_flavor, RPC_AUTH_SYS);
	assert_int_equal(h.cred_off, 32);
	assert_int_equal(h.cred_len, 8);
	assert_int_equal(h.verf_flavor, RPC_AUTH_NONE);
	assert_int_equal(h.args_off, 48);
	/* the verifier does not fit */
	assert_int_equal(rpc_call_hdr_parse(m, 44, &h), RPC_HDR_BAD_CRED);
	assert_int_equal(rpc_call_hdr_parse(m, 23, &h), RPC_HDR_SHORT);
	/* a credential length larger than 400 or than the message */
	xdr_put32(m + 28, 404);
	assert_int_equal(rpc_call_hdr_parse(m, 52, &h), RPC_HDR_BAD_CRED);
	xdr_put32(m + 28, 0xfffffffc);
	assert_int_equal(rpc_call_hdr_parse(m, 52, &h), RPC_HDR_BAD_CRED);
	xdr_put32(m + 28, 8);
	xdr_put32(m + 8, 3);
	assert_int_equal(rpc_call_hdr_parse(m, 52, &h), RPC_HDR_BAD_RPCVERS);
	assert_int_equal(h.xid, 9);
	xdr_put32(m + 4, 1);
	assert_int_equal(rpc_call_hdr_parse(m, 52, &h), RPC_HDR_NOT_CALL);
}

static void test_accepted_errors(void **state)
{
	uint8_t buf[64];
	struct rpc_reply_hdr h;

	size_t n = rpc_build_accepted_error(buf, sizeof(buf), 0x42, RPC_ACC_GARBAGE_ARGS, 0, 0);
	const uint32_t garbage[] = { 0x42, 1, 0, 0, 0, 4 };
	uint8_t want[32];
	put_words(want, garbage, 6);
	assert_int_equal(n, 24);
	assert_memory_equal(buf, want, 24);
	assert_true(rpc_reply_hdr_parse(buf, n, &h));
	assert_int_equal(h.xid, 0x42);
	assert_int_equal(h.reply_stat, RPC_MSG_ACCEPTED);
	assert_int_equal(h.stat, RPC_ACC_GARBAGE_ARGS);
	assert_int_equal(h.results_off, 24);

	n = rpc_build_accepted_error(buf, sizeof(buf), 0x43, RPC_ACC_PROG_MISMATCH, 2, 4);
	const uint32_t mismatch[] = { 0x43, 1, 0, 0, 0, 2, 2, 4 };
	put_words(want, mismatch, 8);
	assert_int_equal(n, 32);
	assert_memory_equal(buf, want, 32);

	n = rpc_build_accepted_error(buf, sizeof(buf), 0x44, RPC_ACC_SYSTEM_ERR, 0, 0);
	assert_int_equal(n, 24);
	assert_int_equal(xdr_get32(buf + 20), RPC_ACC_SYSTEM_ERR);
	n = rpc_build_accepted_error(buf, sizeof(buf), 0x45, RPC_ACC_PROG_UNAVAIL, 0, 0);
	assert_int_equal(xdr_get32(buf + 20), RPC_ACC_PROG_UNAVAIL);
	/* too small a buffer, and SUCCESS (which has results) */
	assert_int_equal(rpc_build_accepted_error(buf, 20, 1, RPC_ACC_GARBAGE_ARGS, 0, 0), 0);
	assert_int_equal(rpc_build_accepted_error(buf, sizeof(buf), 1, RPC_ACC_SUCCESS, 0, 0), 0);
}

static void test_rejected(void **state)
{
	uint8_t buf[64], want[32];
	struct rpc_reply_hdr h;

	size_t n = rpc_build_rejected(buf, sizeof(buf), 7, RPC_REJ_RPC_MISMATCH, 0);
	const uint32_t mismatch[] = { 7, 1, 1, 0, 2, 2 };
	put_words(want, mismatch, 6);
	assert_int_equal(n, 24);
	assert_memory_equal(buf, want, 24);
	n = rpc_build_rejected(buf, sizeof(buf), 8, RPC_REJ_AUTH_ERROR, RPC_AUTHSTAT_TOOWEAK);
	const uint32_t auth[] = { 8, 1, 1, 1, 5 };
	put_words(want, auth, 5);
	assert_int_equal(n, 20);
	assert_memory_equal(buf, want, 20);
	assert_true(rpc_reply_hdr_parse(buf, n, &h));
	assert_int_equal(h.reply_stat, RPC_MSG_DENIED);
	assert_int_equal(h.stat, RPC_REJ_AUTH_ERROR);
	assert_int_equal(rpc_build_rejected(buf, 16, 8, RPC_REJ_AUTH_ERROR, 1), 0);
}

static void test_reply_hdr_bad(void **state)
{
	uint8_t m[64];
	struct rpc_reply_hdr h;
	const uint32_t w[] = { 1, 1, 0, 6, 8, 0xaa, 0xbb, 0 };

	put_words(m, w, 8);
	assert_true(rpc_reply_hdr_parse(m, 32, &h));
	assert_int_equal(h.verf_flavor, 6);
	assert_int_equal(h.verf_len, 8);
	assert_int_equal(h.results_off, 32);
	assert_false(rpc_reply_hdr_parse(m, 28, &h)); /* no accept_stat */
	xdr_put32(m + 16, 401);
	assert_false(rpc_reply_hdr_parse(m, 32, &h));
	xdr_put32(m + 8, 2); /* reply_stat out of range */
	assert_false(rpc_reply_hdr_parse(m, 32, &h));
	xdr_put32(m + 4, 0);
	assert_false(rpc_reply_hdr_parse(m, 32, &h));
	assert_false(rpc_reply_hdr_parse(m, 15, &h));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_peek),
		cmocka_unit_test(test_call_hdr),
		cmocka_unit_test(test_accepted_errors),
		cmocka_unit_test(test_rejected),
		cmocka_unit_test(test_reply_hdr_bad),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
