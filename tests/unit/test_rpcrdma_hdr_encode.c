/* SPDX-License-Identifier: MIT */
/*
 * Transport header encoding: requester calls, responder replies (the Write
 * list echo), RDMA_ERROR, and the descriptions the encoders refuse. Every
 * header encoded here is decoded back with rpcrdma_hdr_decode().
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "rdma/rpcrdma_hdr.h"

#include "support/rdmahdr.h"

#define XID 0xcafe0001u

static struct rpcrdma_limits lim;

static int setup(void **state)
{
	(void)state;
	rpcrdma_limits_default(&lim);
	return 0;
}

static const struct rpcrdma_seg rsegs[2] = { { 0x10, 65536, 0x1000000000ull },
					     { 0x11, 3, 0x2000000000ull } };
static const struct rpcrdma_seg wsegs[3] = { { 0x20, 4096, 0x3000 },
					     { 0x21, 4096, 0x4000 },
					     { 0x22, 4, 0x5000 } };
static const struct rpcrdma_seg rcsegs[1] = { { 0x30, 8192, 0x6000 } };

static void test_call_roundtrip(void **state)
{
	(void)state;
	const struct rpcrdma_read_chunk_desc reads[1] = { { 120, 2, rsegs } };
	const struct rpcrdma_chunk_desc writes[2] = { { 3, wsegs }, { 1, wsegs + 2 } };
	const struct rpcrdma_chunk_desc reply = { 1, rcsegs };
	const struct rpcrdma_call_desc d = {
		.version = RPCRDMA_V1,
		.xid = XID,
		.credits = 128,
		.proc = RPCRDMA_MSG,
		.nreads = 1,
		.reads = reads,
		.nwrites = 2,
		.writes = writes,
		.reply = &reply,
	};
	uint8_t buf[512], *msg;
	struct rpcrdma_hdr h;
	struct rpcrdma_seg s;
	ssize_t size = rpcrdma_call_hdr_size(&d);

	assert_int_equal(size, 16 + (2 * 24 + 4) + (8 + 3 * 16 + 8 + 16 + 4) + (8 + 16));
	assert_int_equal(rpcrdma_encode_call(buf, sizeof(buf), &d), size);

	/* decode it back with 120 bytes of RPC message behind it */
	msg = malloc((size_t)size + 120);
	memcpy(msg, buf, (size_t)size);
	memset(msg + size, 0, 120);
	xdr_put32(msg + size, XID);
	assert_int_equal(rpcrdma_hdr_decode(&h, msg, (size_t)size + 120, &lim), RPCRDMA_OK);
	assert_int_equal(h.xid, XID);
	assert_int_equal(h.credits, 128);
	assert_int_equal(h.proc, RPCRDMA_MSG);
	assert_int_equal(h.hdr_len, size);
	assert_int_equal(h.nreads, 1);
	assert_int_equal(h.read[0].position, 120);
	assert_int_equal(h.read[0].nsegs, 2);
	assert_int_equal(h.read[0].length, 65539);
	rpcrdma_chunk_seg(&h.read[0], 1, &s);
	assert_memory_equal(&s, &rsegs[1], sizeof(s));
	assert_int_equal(h.nwrites, 2);
	assert_int_equal(h.write[0].nsegs, 3);
	rpcrdma_chunk_seg(&h.write[0], 2, &s);
	assert_memory_equal(&s, &wsegs[2], sizeof(s));
	assert_int_equal(h.write[1].nsegs, 1);
	assert_true(h.has_reply);
	rpcrdma_chunk_seg(&h.reply, 0, &s);
	assert_memory_equal(&s, &rcsegs[0], sizeof(s));
	assert_int_equal(rpcrdma_hdr_check_xid(&h, msg + h.hdr_len, h.inline_len), RPCRDMA_OK);
	assert_int_equal(rpcrdma_hdr_check_call(&h), RPCRDMA_OK);
	free(msg);
}

static void test_call_long(void **state)
{
	(void)state;
	/* RDMA_NOMSG: P0 chunk with the whole call, plus a Reply chunk */
	const struct rpcrdma_read_chunk_desc reads[1] = { { 0, 1, rsegs } };
	const struct rpcrdma_chunk_desc reply = { 1, rcsegs };
	const struct rpcrdma_call_desc d = {
		.version = RPCRDMA_V1,
		.xid = XID,
		.credits = 1,
		.proc = RPCRDMA_NOMSG,
		.nreads = 1,
		.reads = reads,
		.reply = &reply,
	};
	uint8_t buf[128];
	struct rpcrdma_hdr h;
	ssize_t n = rpcrdma_encode_call(buf, sizeof(buf), &d);

	assert_int_equal(gwt_words_cmp(buf, n,
				       GWT_WORDS(XID, 1, 1, RPCRDMA_NOMSG, 1, 0, 0x10, 65536, 0x10,
						 0, 0, 0, 1, 1, 0x30, 8192, 0, 0x6000)),
			 0);
	assert_int_equal(rpcrdma_hdr_decode(&h, buf, (size_t)n, &lim), RPCRDMA_OK);
	assert_true(rpcrdma_hdr_has_p0(&h));
	assert_int_equal(rpcrdma_hdr_check_call(&h), RPCRDMA_OK);
}

static void test_call_refused(void **state)
{
	(void)state;
	const struct rpcrdma_read_chunk_desc p0[1] = { { 0, 1, rsegs } };
	const struct rpcrdma_read_chunk_desc odd[1] = { { 6, 1, rsegs } };
	const struct rpcrdma_read_chunk_desc unsorted[2] = { { 16, 1, rsegs }, { 8, 1, rsegs } };
	const struct rpcrdma_read_chunk_desc same[2] = { { 8, 1, rsegs }, { 8, 1, rsegs } };
	const struct rpcrdma_read_chunk_desc overlap[2] = { { 8, 1, rsegs }, { 12, 1, rsegs } };
	const struct rpcrdma_read_chunk_desc empty[1] = { { 8, 0, rsegs } };
	const struct rpcrdma_seg huge[2] = { { 1, 0xffffffffu, 0 }, { 2, 0xffffffffu, 0 } };
	const struct rpcrdma_read_chunk_desc toolong[1] = { { 8, 2, huge } };
	const struct rpcrdma_chunk_desc wtoolong[1] = { { 2, huge } };
	struct rpcrdma_call_desc d = { .version = RPCRDMA_V1, .xid = XID, .proc = RPCRDMA_MSG };
	uint8_t buf[256];

	memset(buf, 0xee, sizeof(buf));
	/* never RDMA_MSGP, RDMA_DONE, or an RDMA_ERROR as a call */
	for (uint32_t proc = RPCRDMA_MSGP; proc <= 5; proc++) {
		d.proc = proc;
		assert_int_equal(rpcrdma_call_hdr_size(&d), -EINVAL);
		assert_int_equal(rpcrdma_encode_call(buf, sizeof(buf), &d), -EINVAL);
	}
	d.proc = RPCRDMA_MSG;
	d.nreads = 1;
	d.reads = p0;
	assert_int_equal(rpcrdma_encode_call(buf, sizeof(buf), &d), -EINVAL);
	d.reads = odd;
	assert_int_equal(rpcrdma_encode_call(buf, sizeof(buf), &d), -EINVAL);
	d.reads = empty;
	assert_int_equal(rpcrdma_encode_call(buf, sizeof(buf), &d), -EINVAL);
	d.reads = toolong;
	assert_int_equal(rpcrdma_encode_call(buf, sizeof(buf), &d), -EINVAL);
	d.nreads = 2;
	d.reads = unsorted;
	assert_int_equal(rpcrdma_encode_call(buf, sizeof(buf), &d), -EINVAL);
	d.reads = same; /* one chunk is one entry of the description */
	assert_int_equal(rpcrdma_encode_call(buf, sizeof(buf), &d), -EINVAL);
	d.reads = overlap; /* 65536 bytes at 8 */
	assert_int_equal(rpcrdma_encode_call(buf, sizeof(buf), &d), -EINVAL);
	d.nreads = 0;
	d.nwrites = 1;
	d.writes = wtoolong;
	assert_int_equal(rpcrdma_encode_call(buf, sizeof(buf), &d), -EINVAL);
	d.nwrites = 0;
	d.reply = wtoolong;
	assert_int_equal(rpcrdma_encode_call(buf, sizeof(buf), &d), -EINVAL);
	d.reply = NULL;
	/* an RDMA_NOMSG with nowhere for the message */
	d.proc = RPCRDMA_NOMSG;
	assert_int_equal(rpcrdma_encode_call(buf, sizeof(buf), &d), -EINVAL);
	/* a version without a codec */
	d.proc = RPCRDMA_MSG;
	d.version = 3;
	assert_int_equal(rpcrdma_call_hdr_size(&d), -EPROTONOSUPPORT);
	assert_int_equal(rpcrdma_encode_call(buf, sizeof(buf), &d), -EPROTONOSUPPORT);
	/* nothing was written by any refusal */
	for (size_t i = 0; i < sizeof(buf); i++)
		assert_int_equal(buf[i], 0xee);
}

static void test_short_buffer(void **state)
{
	(void)state;
	const struct rpcrdma_chunk_desc writes[1] = { { 3, wsegs } };
	const struct rpcrdma_call_desc d = { .version = RPCRDMA_V1,
					     .xid = XID,
					     .proc = RPCRDMA_MSG,
					     .nwrites = 1,
					     .writes = writes };
	const uint32_t used[1] = { 10 };
	const struct rpcrdma_reply_desc r = { .version = RPCRDMA_V1,
					      .xid = XID,
					      .proc = RPCRDMA_MSG,
					      .nwrites = 1,
					      .writes = writes,
					      .write_used = used };
	uint8_t buf[128];
	ssize_t size = rpcrdma_call_hdr_size(&d);

	memset(buf, 0xee, sizeof(buf));
	assert_int_equal(rpcrdma_encode_call(buf, (size_t)size - 1, &d), -EMSGSIZE);
	assert_int_equal(rpcrdma_encode_reply(buf, (size_t)size - 1, &r), -EMSGSIZE);
	assert_int_equal(rpcrdma_encode_err_vers(buf, RPCRDMA_ERR_VERS_SIZE - 1, XID, 1, 1, 1),
			 -EMSGSIZE);
	assert_int_equal(rpcrdma_encode_err_chunk(buf, RPCRDMA_ERR_CHUNK_SIZE - 1, XID, 1),
			 -EMSGSIZE);
	assert_int_equal(rpcrdma_encode_msg_inline(buf, RPCRDMA_HDR_MIN_SIZE - 1, 1, XID, 1),
			 -EMSGSIZE);
	for (size_t i = 0; i < sizeof(buf); i++)
		assert_int_equal(buf[i], 0xee);
	assert_int_equal(rpcrdma_encode_call(buf, (size_t)size, &d), size);
	assert_int_equal(rpcrdma_reply_hdr_size(&r), size);
}

/*
 * A responder's reply: every offered Write chunk comes back in order with
 * its segment count; lengths are the bytes written spread over the
 * segments in order; an unused chunk has all lengths 0.
 */
static void test_reply_write_echo(void **state)
{
	(void)state;
	const struct rpcrdma_chunk_desc writes[2] = { { 3, wsegs }, { 1, wsegs + 2 } };
	const uint32_t used[2] = { 5001, 0 };
	const struct rpcrdma_reply_desc r = { .version = RPCRDMA_V1,
					      .xid = XID,
					      .credits = 64,
					      .proc = RPCRDMA_MSG,
					      .nwrites = 2,
					      .writes = writes,
					      .write_used = used };
	uint8_t buf[256];
	ssize_t n = rpcrdma_encode_reply(buf, sizeof(buf), &r);
	struct rpcrdma_hdr h;
	const struct rpcrdma_offer offer = { 2, writes, NULL };

	assert_int_equal(gwt_words_cmp(buf, n,
				       GWT_WORDS(XID, 1, 64, RPCRDMA_MSG, 0,
						 /* 5001 = 4096 + 905 + 0 */
						 1, 3, 0x20, 4096, 0, 0x3000, 0x21, 905, 0, 0x4000,
						 0x22, 0, 0, 0x5000,
						 /* unused: one segment, length 0 */
						 1, 1, 0x22, 0, 0, 0x5000, 0,
						 /* no Reply chunk */
						 0)),
			 0);
	assert_int_equal(rpcrdma_hdr_decode(&h, buf, (size_t)n, &lim), RPCRDMA_OK);
	assert_int_equal(h.write[0].length, 5001);
	assert_int_equal(h.write[1].length, 0);
	assert_int_equal(rpcrdma_hdr_check_reply(&h, &offer), RPCRDMA_OK);
}

static void test_reply_long(void **state)
{
	(void)state;
	const struct rpcrdma_chunk_desc reply = { 1, rcsegs };
	const struct rpcrdma_chunk_desc writes[1] = { { 1, wsegs } };
	const uint32_t used[1] = { 4096 };
	struct rpcrdma_reply_desc r = { .version = RPCRDMA_V1,
					.xid = XID,
					.credits = 64,
					.proc = RPCRDMA_NOMSG,
					.nwrites = 1,
					.writes = writes,
					.write_used = used,
					.reply = &reply,
					.reply_used = 700 };
	uint8_t buf[256];
	ssize_t n = rpcrdma_encode_reply(buf, sizeof(buf), &r);
	struct rpcrdma_hdr h;
	const struct rpcrdma_offer offer = { 1, writes, &reply };

	assert_true(n > 0);
	assert_int_equal(rpcrdma_hdr_decode(&h, buf, (size_t)n, &lim), RPCRDMA_OK);
	assert_int_equal(h.proc, RPCRDMA_NOMSG);
	assert_true(h.has_reply);
	assert_int_equal(h.reply.length, 700);
	assert_int_equal(h.reply.nsegs, 1);
	assert_int_equal(h.write[0].length, 4096);
	assert_int_equal(rpcrdma_hdr_check_reply(&h, &offer), RPCRDMA_OK);

	/* RDMA_MSG may echo the Reply chunk unused, never with data in it */
	r.proc = RPCRDMA_MSG;
	r.reply_used = 0;
	n = rpcrdma_encode_reply(buf, sizeof(buf), &r);
	assert_true(n > 0);
	assert_int_equal(rpcrdma_hdr_decode(&h, buf, (size_t)n, &lim), RPCRDMA_OK);
	assert_int_equal(rpcrdma_hdr_check_reply(&h, &offer), RPCRDMA_OK);
	r.reply_used = 1;
	assert_int_equal(rpcrdma_encode_reply(buf, sizeof(buf), &r), -EINVAL);
	/* more than the chunks hold */
	r.proc = RPCRDMA_NOMSG;
	r.reply_used = 8193;
	assert_int_equal(rpcrdma_encode_reply(buf, sizeof(buf), &r), -EINVAL);
	r.reply_used = 8192;
	assert_true(rpcrdma_encode_reply(buf, sizeof(buf), &r) > 0);
	{
		const uint32_t over[1] = { 4097 };
		r.write_used = over;
		assert_int_equal(rpcrdma_encode_reply(buf, sizeof(buf), &r), -EINVAL);
		r.write_used = NULL;
		assert_int_equal(rpcrdma_encode_reply(buf, sizeof(buf), &r), -EINVAL);
		r.write_used = used;
	}
	/* RDMA_NOMSG without a Reply chunk, and the deprecated types */
	r.reply = NULL;
	assert_int_equal(rpcrdma_encode_reply(buf, sizeof(buf), &r), -EINVAL);
	r.proc = RPCRDMA_MSGP;
	assert_int_equal(rpcrdma_reply_hdr_size(&r), -EINVAL);
	r.proc = RPCRDMA_DONE;
	assert_int_equal(rpcrdma_reply_hdr_size(&r), -EINVAL);
	r.version = 0;
	assert_int_equal(rpcrdma_reply_hdr_size(&r), -EPROTONOSUPPORT);
	assert_int_equal(rpcrdma_encode_reply(buf, sizeof(buf), &r), -EPROTONOSUPPORT);
}

/* RFC 8167: backward-direction calls and replies are RDMA_MSG with no chunks */
static void test_inline_and_backward(void **state)
{
	(void)state;
	uint8_t buf[64];
	ssize_t n = rpcrdma_encode_msg_inline(buf, sizeof(buf), RPCRDMA_V1, XID, 2);

	assert_int_equal(gwt_words_cmp(buf, n, GWT_WORDS(XID, 1, 2, RPCRDMA_MSG, 0, 0, 0)), 0);
	assert_int_equal(n, RPCRDMA_HDR_MIN_SIZE);
	/* Version Two needs the direction that only rpcrdma_encode_inline() is given */
	assert_int_equal(rpcrdma_encode_msg_inline(buf, sizeof(buf), RPCRDMA_V2, XID, 2), -EINVAL);
	assert_int_equal(rpcrdma_encode_msg_inline(buf, sizeof(buf), 3, XID, 2), -EPROTONOSUPPORT);
}

static void test_errors(void **state)
{
	(void)state;
	uint8_t buf[64];
	struct rpcrdma_hdr h;
	ssize_t n = rpcrdma_encode_err_vers(buf, sizeof(buf), XID, 64, 1, 1);

	assert_int_equal(
		gwt_words_cmp(buf, n, GWT_WORDS(XID, 1, 64, RPCRDMA_ERROR, RPCRDMA_ERR_VERS, 1, 1)),
		0);
	assert_int_equal(rpcrdma_hdr_decode(&h, buf, (size_t)n, &lim), RPCRDMA_OK);
	assert_int_equal(h.err, RPCRDMA_ERR_VERS);
	assert_int_equal(h.vers_low, 1);
	assert_int_equal(h.vers_high, 1);
	assert_int_equal(rpcrdma_encode_err_vers(buf, sizeof(buf), XID, 64, 2, 1), -EINVAL);

	n = rpcrdma_encode_err_chunk(buf, sizeof(buf), XID, 64);
	assert_int_equal(
		gwt_words_cmp(buf, n, GWT_WORDS(XID, 1, 64, RPCRDMA_ERROR, RPCRDMA_ERR_CHUNK)), 0);
	assert_int_equal(rpcrdma_hdr_decode(&h, buf, (size_t)n, &lim), RPCRDMA_OK);
	assert_int_equal(h.err, RPCRDMA_ERR_CHUNK);
}

/* A Version Two message to a Version One responder is answered ERR_VERS (1, 1) with its XID. */
static void test_v2_gets_err_vers(void **state)
{
	(void)state;
	uint8_t in[32], out[32];
	struct rpcrdma_hdr h;
	uint32_t low, high;
	ssize_t n;

	/* draft-cel-nfsv4-rpcrdma-version-two-01: xid, 2, credit, RDMA2_MSG, direction CALL,
	 * three empty lists */
	const uint32_t v2[] = { XID, RPCRDMA_V2, 32, 0, 0, 0, 0, 0 };
	gwt_put_words(in, v2, 8);
	enum rpcrdma_reason r = rpcrdma_hdr_decode(&h, in, sizeof(in), &lim);
	assert_int_equal(r, RPCRDMA_R_BAD_VERSION);
	assert_int_equal(rpcrdma_reason_action(r), RPCRDMA_ACT_ERR_VERS);
	rpcrdma_versions_range(&lim, &low, &high);
	n = rpcrdma_encode_err_vers(out, sizeof(out), h.xid, 64, low, high);
	assert_int_equal(
		gwt_words_cmp(out, n, GWT_WORDS(XID, 1, 64, RPCRDMA_ERROR, RPCRDMA_ERR_VERS, 1, 1)),
		0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_call_roundtrip, setup),
		cmocka_unit_test_setup(test_call_long, setup),
		cmocka_unit_test_setup(test_call_refused, setup),
		cmocka_unit_test_setup(test_short_buffer, setup),
		cmocka_unit_test_setup(test_reply_write_echo, setup),
		cmocka_unit_test_setup(test_reply_long, setup),
		cmocka_unit_test_setup(test_inline_and_backward, setup),
		cmocka_unit_test_setup(test_errors, setup),
		cmocka_unit_test_setup(test_v2_gets_err_vers, setup),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
