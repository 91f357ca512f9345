/* SPDX-License-Identifier: MIT */
/*
 * RFC 8797 private data: the 8 octets, the size encoding, the "absent or
 * foreign means 1024 both ways and no remote invalidation" rule, and the
 * inline threshold of each direction.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "rdma/privdata.h"

/* What the Linux client sends: 4096/4096 with R set. */
static const uint8_t linux_client[8] = { 0xf6, 0xab, 0x0e, 0x18, 1, 1, 3, 3 };
/* What the Linux server sends: 4096/4096 with R clear. */
static const uint8_t linux_server[8] = { 0xf6, 0xab, 0x0e, 0x18, 1, 0, 3, 3 };

static void test_encode(void **state)
{
	(void)state;
	uint8_t out[8];
	struct rpcrdma_privdata pd = { true, 4096, 4096 };

	rpcrdma_privdata_encode(out, &pd);
	assert_memory_equal(out, linux_client, 8);
	pd.remote_inv = false;
	rpcrdma_privdata_encode(out, &pd);
	assert_memory_equal(out, linux_server, 8);

	/* 1 KiB is 0, 256 KiB is 255; sizes round down and clamp */
	pd = (struct rpcrdma_privdata){ false, 1024, 256 * 1024 };
	rpcrdma_privdata_encode(out, &pd);
	assert_int_equal(out[6], 0);
	assert_int_equal(out[7], 255);
	pd = (struct rpcrdma_privdata){ false, 8191, 300 * 1024 };
	rpcrdma_privdata_encode(out, &pd);
	assert_int_equal(out[6], 6); /* 7168: never promise more than we have */
	assert_int_equal(out[7], 255);
	pd = (struct rpcrdma_privdata){ false, 0, 100 };
	rpcrdma_privdata_encode(out, &pd);
	assert_int_equal(out[6], 0);
	assert_int_equal(out[7], 0);
}

static void test_decode(void **state)
{
	(void)state;
	struct rpcrdma_privdata pd;
	uint8_t buf[12];

	assert_true(rpcrdma_privdata_decode(linux_client, 8, &pd));
	assert_true(pd.remote_inv);
	assert_int_equal(pd.send_size, 4096);
	assert_int_equal(pd.recv_size, 4096);
	assert_true(rpcrdma_privdata_decode(linux_server, 8, &pd));
	assert_false(pd.remote_inv);

	/* reserved flag bits and trailing octets are ignored */
	memcpy(buf, linux_client, 8);
	buf[5] = 0xfe;
	buf[6] = 0;
	buf[7] = 255;
	memset(buf + 8, 0xff, 4);
	assert_true(rpcrdma_privdata_decode(buf, sizeof(buf), &pd));
	assert_false(pd.remote_inv);
	assert_int_equal(pd.send_size, 1024);
	assert_int_equal(pd.recv_size, 256 * 1024);

	/* round trip of every size octet */
	for (unsigned s = 0; s < 256; s++) {
		struct rpcrdma_privdata in = { s & 1, (s + 1) * 1024, (256 - s) * 1024 }, back;
		uint8_t out[8];
		rpcrdma_privdata_encode(out, &in);
		assert_true(rpcrdma_privdata_decode(out, 8, &back));
		assert_int_equal(in.remote_inv, back.remote_inv);
		assert_int_equal(in.send_size, back.send_size);
		assert_int_equal(in.recv_size, back.recv_size);
	}
}

/* Absent, short, of another format or version: R = 0 and 1024 both ways. */
static void test_absent_or_foreign(void **state)
{
	(void)state;
	struct rpcrdma_privdata pd;
	uint8_t buf[8];

	assert_false(rpcrdma_privdata_decode(NULL, 0, &pd));
	assert_false(pd.remote_inv);
	assert_int_equal(pd.send_size, 1024);
	assert_int_equal(pd.recv_size, 1024);

	pd.send_size = 0;
	assert_false(rpcrdma_privdata_decode(linux_client, 7, &pd));
	assert_int_equal(pd.send_size, 1024);
	assert_false(pd.remote_inv);

	memcpy(buf, linux_client, 8);
	buf[0] = 0xf7;
	assert_false(rpcrdma_privdata_decode(buf, 8, &pd));
	assert_false(pd.remote_inv);
	assert_int_equal(pd.recv_size, 1024);

	memcpy(buf, linux_client, 8);
	buf[4] = 2;
	assert_false(rpcrdma_privdata_decode(buf, 8, &pd));
	assert_false(pd.remote_inv);
	assert_int_equal(pd.send_size, 1024);

	/* the CM pads private data with zeros: all-zero is no private data */
	memset(buf, 0, 8);
	assert_false(rpcrdma_privdata_decode(buf, 8, &pd));
}

static void test_thresholds(void **state)
{
	(void)state;
	struct rpcrdma_privdata local = { true, 8192, 4096 }, peer, none;
	struct rpcrdma_thresholds t;

	/* against the Linux server: 4096 each way */
	rpcrdma_privdata_decode(linux_server, 8, &peer);
	rpcrdma_inline_thresholds(&local, &peer, &t);
	assert_int_equal(t.send, 4096);
	assert_int_equal(t.recv, 4096);

	/* each direction on its own: send = min(our send, their receive) */
	peer = (struct rpcrdma_privdata){ false, 16384, 2048 };
	rpcrdma_inline_thresholds(&local, &peer, &t);
	assert_int_equal(t.send, 2048);
	assert_int_equal(t.recv, 4096);
	local = (struct rpcrdma_privdata){ false, 1024, 65536 };
	rpcrdma_inline_thresholds(&local, &peer, &t);
	assert_int_equal(t.send, 1024);
	assert_int_equal(t.recv, 16384);

	/* a peer that sent nothing: 1024 */
	rpcrdma_privdata_decode(NULL, 0, &none);
	rpcrdma_inline_thresholds(&local, &none, &t);
	assert_int_equal(t.send, 1024);
	assert_int_equal(t.recv, 1024);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_encode),
		cmocka_unit_test(test_decode),
		cmocka_unit_test(test_absent_or_foreign),
		cmocka_unit_test(test_thresholds),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
