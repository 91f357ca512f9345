/* SPDX-License-Identifier: MIT */
/*
 * The XDR examples of draft-ietf-nfsv4-rfc5666bis-01 section 13.1
 * (RFC 8166 section 4.6), word for word, in both directions: the decoder
 * reads each drawing, and the encoder writes exactly the drawing.
 *
 *   HLOO             segment: handle, length, offset (64 bits)
 *   PHLOO            Read segment
 *   1 PHLOO 1 PHLOO 1 PHLOO 0              a Read chunk of three segments
 *   3 HLOO HLOO HLOO                       a Write chunk of three segments
 *   1 3 HLOO HLOO HLOO 1 2 HLOO HLOO 0     a Write list of two chunks
 *   0                                      an empty Read or Write list
 *   1 2 HLOO HLOO                          a Reply chunk of two segments
 *   0 0 0                                  no chunks
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "rdma/rpcrdma_hdr.h"

#include "support/rdmahdr.h"

#define XID	0x0a0b0c0du
#define P	64u
#define HLOO(i) (0x100u + (i)), (1000u + (i)), 0x7fu, (0x10000u * (i))

static const struct rpcrdma_seg seg[6] = {
	{ 0x100, 1000, 0x7f00000000ull }, { 0x101, 1001, 0x7f00010000ull },
	{ 0x102, 1002, 0x7f00020000ull }, { 0x103, 1003, 0x7f00030000ull },
	{ 0x104, 1004, 0x7f00040000ull }, { 0x105, 1005, 0x7f00050000ull },
};

struct example {
	const char *drawing;
	const uint32_t *w;
	size_t n;
};

/* Fixed words, the three lists drawn in the example, and the RPC message. */
static void check_words(const uint32_t *w, size_t n, const struct rpcrdma_call_desc *d,
			void (*check)(const struct rpcrdma_hdr *h))
{
	struct rpcrdma_limits lim;
	struct rpcrdma_hdr h;
	size_t len = n * 4 + 3072; /* room for a chunk at position P */
	uint8_t *buf = calloc(1, len), *enc = malloc(len);

	gwt_put_words(buf, w, n);
	xdr_put32(buf + 4 * n, XID);
	rpcrdma_limits_default(&lim);
	assert_int_equal(rpcrdma_hdr_decode(&h, buf, len, &lim), RPCRDMA_OK);
	assert_int_equal(h.hdr_len, n * 4);
	check(&h);

	assert_int_equal(rpcrdma_call_hdr_size(d), (ssize_t)(n * 4));
	assert_int_equal(rpcrdma_encode_call(enc, len, d), (ssize_t)(n * 4));
	assert_memory_equal(enc, buf, n * 4);
	free(buf);
	free(enc);
}

static void check_read_chunk(const struct rpcrdma_hdr *h)
{
	struct rpcrdma_seg s;

	assert_int_equal(h->read_nsegs, 3);
	assert_int_equal(h->nreads, 1);
	assert_int_equal(h->read[0].position, P);
	assert_int_equal(h->read[0].nsegs, 3);
	assert_int_equal(h->read[0].length, 3003);
	for (uint32_t i = 0; i < 3; i++) {
		rpcrdma_chunk_seg(&h->read[0], i, &s);
		assert_memory_equal(&s, &seg[i], sizeof(s));
	}
	assert_int_equal(h->nwrites, 0);
	assert_false(h->has_reply);
}

static void test_read_chunk(void **state)
{
	(void)state;
	const struct rpcrdma_read_chunk_desc reads[1] = { { P, 3, seg } };
	const struct rpcrdma_call_desc d = { .version = 1,
					     .xid = XID,
					     .credits = 1,
					     .proc = RPCRDMA_MSG,
					     .nreads = 1,
					     .reads = reads };
	const uint32_t w[] = { XID, 1,	     1, RPCRDMA_MSG, 1,	      P, HLOO(0), 1,
			       P,   HLOO(1), 1, P,	     HLOO(2), 0, 0,	  0 };

	check_words(w, sizeof(w) / 4, &d, check_read_chunk);
}

static void check_write_list(const struct rpcrdma_hdr *h)
{
	struct rpcrdma_seg s;

	assert_int_equal(h->read_nsegs, 0);
	assert_int_equal(h->nwrites, 2);
	assert_int_equal(h->write[0].nsegs, 3);
	assert_int_equal(h->write[1].nsegs, 2);
	for (uint32_t i = 0; i < 5; i++) {
		rpcrdma_chunk_seg(&h->write[i / 3], i % 3, &s);
		assert_memory_equal(&s, &seg[i], sizeof(s));
	}
	assert_false(h->has_reply);
}

static void test_write_list(void **state)
{
	(void)state;
	const struct rpcrdma_chunk_desc writes[2] = { { 3, seg }, { 2, seg + 3 } };
	const struct rpcrdma_call_desc d = { .version = 1,
					     .xid = XID,
					     .credits = 1,
					     .proc = RPCRDMA_MSG,
					     .nwrites = 2,
					     .writes = writes };
	const uint32_t w[] = { XID,	1,	 1, RPCRDMA_MSG, 0,	  1,	   3, HLOO(0),
			       HLOO(1), HLOO(2), 1, 2,		 HLOO(3), HLOO(4), 0, 0 };

	check_words(w, sizeof(w) / 4, &d, check_write_list);
}

static void check_reply_chunk(const struct rpcrdma_hdr *h)
{
	struct rpcrdma_seg s;

	assert_int_equal(h->read_nsegs, 0);
	assert_int_equal(h->nwrites, 0);
	assert_true(h->has_reply);
	assert_int_equal(h->reply.nsegs, 2);
	assert_int_equal(h->reply.length, 1004 + 1005);
	rpcrdma_chunk_seg(&h->reply, 1, &s);
	assert_memory_equal(&s, &seg[5], sizeof(s));
}

static void test_reply_chunk(void **state)
{
	(void)state;
	const struct rpcrdma_chunk_desc reply = { 2, seg + 4 };
	const struct rpcrdma_call_desc d = {
		.version = 1, .xid = XID, .credits = 1, .proc = RPCRDMA_MSG, .reply = &reply
	};
	const uint32_t w[] = { XID, 1, 1, RPCRDMA_MSG, 0, 0, 1, 2, HLOO(4), HLOO(5) };

	check_words(w, sizeof(w) / 4, &d, check_reply_chunk);
}

static void check_none(const struct rpcrdma_hdr *h)
{
	assert_int_equal(h->read_nsegs, 0);
	assert_int_equal(h->nreads, 0);
	assert_int_equal(h->nwrites, 0);
	assert_false(h->has_reply);
	assert_int_equal(h->hdr_len, RPCRDMA_HDR_MIN_SIZE);
}

static void test_no_chunks(void **state)
{
	(void)state;
	const struct rpcrdma_call_desc d = {
		.version = 1, .xid = XID, .credits = 1, .proc = RPCRDMA_MSG
	};
	const uint32_t w[] = { XID, 1, 1, RPCRDMA_MSG, 0, 0, 0 };

	check_words(w, sizeof(w) / 4, &d, check_none);
}

/* All three drawings in one header. */
static void check_all(const struct rpcrdma_hdr *h)
{
	assert_int_equal(h->nreads, 1);
	assert_int_equal(h->read[0].nsegs, 3);
	assert_int_equal(h->nwrites, 2);
	assert_int_equal(h->write[1].nsegs, 2);
	assert_true(h->has_reply);
	assert_int_equal(h->reply.nsegs, 2);
}

static void test_all_lists(void **state)
{
	(void)state;
	const struct rpcrdma_read_chunk_desc reads[1] = { { P, 3, seg } };
	const struct rpcrdma_chunk_desc writes[2] = { { 3, seg }, { 2, seg + 3 } };
	const struct rpcrdma_chunk_desc reply = { 2, seg + 4 };
	const struct rpcrdma_call_desc d = { .version = 1,
					     .xid = XID,
					     .credits = 1,
					     .proc = RPCRDMA_MSG,
					     .nreads = 1,
					     .reads = reads,
					     .nwrites = 2,
					     .writes = writes,
					     .reply = &reply };
	const uint32_t w[] = { XID,	1,	 1,	  RPCRDMA_MSG, 1,	P,	 HLOO(0),
			       1,	P,	 HLOO(1), 1,	       P,	HLOO(2), 0,
			       1,	3,	 HLOO(0), HLOO(1),     HLOO(2), 1,	 2,
			       HLOO(3), HLOO(4), 0,	  1,	       2,	HLOO(4), HLOO(5) };

	check_words(w, sizeof(w) / 4, &d, check_all);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_read_chunk),  cmocka_unit_test(test_write_list),
		cmocka_unit_test(test_reply_chunk), cmocka_unit_test(test_no_chunks),
		cmocka_unit_test(test_all_lists),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
