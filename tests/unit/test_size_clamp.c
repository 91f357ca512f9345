/* SPDX-License-Identifier: MIT */
/*
 * gateway/core/size_clamp.c: what a route carries (gw_size_caps(), from
 * max_record_size), and gw_clamp_reply() on a session of a route: the
 * server's FSINFO lowered to it, each reply changed counted (size_clamped)
 * on the session and the route, the first one of the route logged, and a
 * reply within the route left alone and uncounted.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "nfs4_session_msgs.h"

#include "gateway/core/session.h"
#include "gateway/core/size_clamp.h"

static void test_caps_from_the_record(void **state)
{
	struct gw_route r = { .max_record_size = 1048576 + 4096 };
	struct ulb_size_caps c;

	(void)state;
	gw_size_caps(&r, &c);
	assert_int_equal(c.io_max, 1048576); /* the default route carries 1 MiB READs */
	assert_int_equal(c.msg_max, 1048576 + 4096);
	r.max_record_size = 266240; /* 260 KiB */
	gw_size_caps(&r, &c);
	assert_int_equal(c.io_max, 262144);
	r.max_record_size = 100000; /* whole pages below the record less its headers */
	gw_size_caps(&r, &c);
	assert_int_equal(c.io_max, 94208);
	assert_true(c.io_max + GW_IO_HEADROOM <= r.max_record_size);
	r.max_record_size = 4096; /* the least record: half of it, never nothing */
	gw_size_caps(&r, &c);
	assert_int_equal(c.io_max, 2048);
}

/* An NFSv3 FSINFO call (AUTH_NONE, a 12-byte handle) and its reply with rtmax..dtpref @v. */
static void fsinfo(struct msg *call, struct msg *reply, uint32_t v)
{
	const uint32_t hdr[] = { 0x77, RPC_MSG_CALL,  RPC_VERSION, MSG_NFS_PROG,  3,
				 19,   RPC_AUTH_NONE, 0,	   RPC_AUTH_NONE, 0 };
	call->len = 0;
	for (size_t i = 0; i < sizeof(hdr) / sizeof(hdr[0]); i++)
		msg_u32(call, hdr[i]);
	msg_u32(call, 12);
	for (int i = 0; i < 3; i++)
		msg_u32(call, 0xabcd0000u + (uint32_t)i);
	reply->len = 0;
	msg_u32(reply, 0x77);
	msg_u32(reply, RPC_MSG_REPLY);
	msg_u32(reply, RPC_MSG_ACCEPTED);
	msg_u32(reply, RPC_AUTH_NONE);
	msg_u32(reply, 0);
	msg_u32(reply, RPC_ACC_SUCCESS);
	msg_u32(reply, 0); /* NFS3_OK */
	msg_u32(reply, 0); /* no attributes */
	for (int i = 0; i < 7; i++)
		msg_u32(reply, i == 2 || i == 5 ? 4096 : v); /* rtmult, wtmult */
	for (int i = 0; i < 5; i++)
		msg_u32(reply, 0); /* maxfilesize, time_delta, properties */
}

static void test_reply_lowered_counted_logged_once(void **state)
{
	struct gw_route cfg = { .name = "small", .max_record_size = 266240 };
	struct gw_route_rt rt = { .cfg = &cfg };
	struct gw_session s = { .route = &rt };
	struct ulb_rules *rules = msg_rules_load();
	struct msg call, reply;
	struct ulb_call u;

	(void)state;
	assert_non_null(rules);
	fsinfo(&call, &reply, 1048576);
	assert_int_equal(ulb_parse_call(rules, NULL, call.buf, call.len, &u), ULB_OK);
	assert_true(u.advertises_sizes);
	gw_clamp_reply(&s, &u, reply.buf, reply.len, 0);
	assert_int_equal(xdr_get32(reply.buf + 32), 262144);	  /* rtmax */
	assert_int_equal(xdr_get32(reply.buf + 32 + 12), 262144); /* wtmax */
	assert_int_equal(xdr_get32(reply.buf + 32 + 8), 4096);	  /* rtmult untouched */
	assert_int_equal(s.counters.events[GW_EV_SIZE_CLAMPED], 1);
	assert_int_equal(rt.counters.events[GW_EV_SIZE_CLAMPED], 1);
	assert_true(rt.sizes_logged);

	fsinfo(&call, &reply, 1048576); /* counted again, logged no more */
	gw_clamp_reply(&s, &u, reply.buf, reply.len, 0);
	assert_int_equal(rt.counters.events[GW_EV_SIZE_CLAMPED], 2);

	fsinfo(&call, &reply, 65536); /* within the route: untouched, not counted */
	gw_clamp_reply(&s, &u, reply.buf, reply.len, 0);
	assert_int_equal(xdr_get32(reply.buf + 32), 65536);
	assert_int_equal(rt.counters.events[GW_EV_SIZE_CLAMPED], 2);
	ulb_rules_free(rules);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_caps_from_the_record),
		cmocka_unit_test(test_reply_lowered_counted_logged_once),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
