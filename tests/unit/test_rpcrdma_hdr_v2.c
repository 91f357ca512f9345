/* SPDX-License-Identifier: MIT */
/*
 * RPC-over-RDMA Version Two transport headers
 * (draft-cel-nfsv4-rpcrdma-version-two-01 section 4.2): every header type,
 * both directions, every error case of the decoder, the direction against
 * the RPC message and the role, the encoders, and the forms of each version
 * that the other version's decoder must refuse. Headers are written as
 * lists of XDR words and decoded from an exact-size heap copy, so that ASan
 * catches any read past the end.
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

#define XID	 0x5eed0002u
#define V2(proc) XID, 2, 32, (proc)
#define V1(proc) XID, 1, 32, (proc)
#define CALL	 RPCRDMA_RPC_CALL
#define REPLY	 RPCRDMA_RPC_REPLY

static struct rpcrdma_limits lim;

/* Both versions enabled, as a gateway configured for Version Two has them. */
static int setup(void **state)
{
	(void)state;
	rpcrdma_limits_default(&lim);
	lim.versions |= 1u << RPCRDMA_V2;
	return 0;
}

/*
 * Decode words followed by `extra` bytes of RPC message: its XID, then
 * msg_type `mtype`, then filler.
 */
static void decode_m(struct gwt_hdr_msg *m, const uint32_t *w, size_t n, size_t extra,
		     uint32_t mtype)
{
	gwt_hdr_decode(m, w, n, extra, (const uint32_t[]){ XID, mtype }, 2, &lim);
}

static enum rpcrdma_reason reason_of(const uint32_t *w, size_t n, size_t extra)
{
	return gwt_hdr_reason(w, n, extra, (const uint32_t[]){ XID, CALL }, 2, &lim);
}

/* The RPC message after an RDMA2_MSG header. */
static enum rpcrdma_reason check_xid(const struct gwt_hdr_msg *m)
{
	return rpcrdma_hdr_check_xid(&m->h, m->buf + m->h.hdr_len, m->h.inline_len);
}

static void test_msg_call_and_reply(void **state)
{
	(void)state;
	struct gwt_hdr_msg m;

	decode_m(&m, GWT_WORDS(V2(RPCRDMA_MSG), CALL, 0, 0, 0), 40, CALL);
	assert_int_equal(m.r, RPCRDMA_OK);
	assert_int_equal(m.h.version, RPCRDMA_V2);
	assert_int_equal(m.h.proc, RPCRDMA_MSG);
	assert_int_equal(m.h.direction, CALL);
	assert_int_equal(m.h.hdr_len, RPCRDMA2_HDR_MIN_SIZE);
	assert_int_equal(m.h.inline_len, 40);
	assert_int_equal(m.h.nreads + m.h.nwrites + m.h.read_nsegs, 0);
	assert_false(m.h.has_reply);
	assert_int_equal(check_xid(&m), RPCRDMA_OK);
	assert_int_equal(rpcrdma_hdr_check_call(&m.h), RPCRDMA_OK);
	/* a header that says CALL is not a reply */
	assert_int_equal(rpcrdma_hdr_check_reply(&m.h, NULL), RPCRDMA_R_DIRECTION_MISMATCH);
	free(m.buf);

	/* a reply, or a backward-direction reply: REPLY, and its RPC message says so */
	decode_m(&m, GWT_WORDS(V2(RPCRDMA_MSG), REPLY, 0, 0, 0), 24, REPLY);
	assert_int_equal(m.r, RPCRDMA_OK);
	assert_int_equal(m.h.direction, REPLY);
	assert_int_equal(check_xid(&m), RPCRDMA_OK);
	assert_int_equal(rpcrdma_hdr_check_reply(&m.h, NULL), RPCRDMA_OK);
	assert_int_equal(rpcrdma_hdr_check_call(&m.h), RPCRDMA_R_DIRECTION_MISMATCH);
	free(m.buf);

	/* Version One headers carry no direction: nothing to contradict */
	decode_m(&m, GWT_WORDS(V1(RPCRDMA_MSG), 0, 0, 0), 24, REPLY);
	assert_int_equal(m.r, RPCRDMA_OK);
	assert_int_equal(m.h.direction, RPCRDMA_DIR_NONE);
	assert_int_equal(check_xid(&m), RPCRDMA_OK);
	assert_int_equal(rpcrdma_hdr_check_call(&m.h), RPCRDMA_OK);
	assert_int_equal(rpcrdma_hdr_check_reply(&m.h, NULL), RPCRDMA_OK);
	free(m.buf);
}

/* 4.2.2: the direction of RDMA2_MSG and RDMA2_NOMSG is the RPC message's msg_type. */
static void test_direction_contradicts_payload(void **state)
{
	(void)state;
	struct gwt_hdr_msg m;

	decode_m(&m, GWT_WORDS(V2(RPCRDMA_MSG), CALL, 0, 0, 0), 24, REPLY);
	assert_int_equal(m.r, RPCRDMA_OK);
	assert_int_equal(check_xid(&m), RPCRDMA_R_DIRECTION_MISMATCH);
	free(m.buf);
	decode_m(&m, GWT_WORDS(V2(RPCRDMA_MSG), REPLY, 0, 0, 0), 24, CALL);
	assert_int_equal(check_xid(&m), RPCRDMA_R_DIRECTION_MISMATCH);
	free(m.buf);
	/* a msg_type that is neither is no match for either direction */
	decode_m(&m, GWT_WORDS(V2(RPCRDMA_MSG), CALL, 0, 0, 0), 24, 7);
	assert_int_equal(check_xid(&m), RPCRDMA_R_DIRECTION_MISMATCH);
	free(m.buf);
	/* the XID is checked first */
	decode_m(&m, GWT_WORDS(V2(RPCRDMA_MSG), CALL, 0, 0, 0), 24, REPLY);
	xdr_put32(m.buf + m.h.hdr_len, XID + 1);
	assert_int_equal(check_xid(&m), RPCRDMA_R_XID_MISMATCH);
	free(m.buf);
	assert_int_equal(rpcrdma_reason_action(RPCRDMA_R_DIRECTION_MISMATCH),
			 RPCRDMA_ACT_ERR_CHUNK);
}

static void test_msg_with_chunks(void **state)
{
	(void)state;
	struct gwt_hdr_msg m;
	struct rpcrdma_seg s;
	struct rpcrdma_read_seg rs;

	/* a WRITE call: Read chunk at 112, a Write chunk, a Reply chunk */
	decode_m(&m,
		 GWT_WORDS(V2(RPCRDMA_MSG), CALL, 1, 112, GWT_SEG(0x9a4, 8192, 0x1000), 1, 112,
			   GWT_SEG(0x8ae, 100, 0x3000), 0, 1, 2, GWT_SEG(0x20, 4096, 0x4000),
			   GWT_SEG(0x21, 4, 0x5000), 0, 1, 1, GWT_SEG(0x30, 1024, 0x6000)),
		 112, CALL);
	assert_int_equal(m.r, RPCRDMA_OK);
	assert_int_equal(m.h.hdr_len, 20 + 2 * 24 + 4 + 8 + 2 * 16 + 4 + 8 + 16);
	assert_int_equal(m.h.inline_len, 112);
	assert_int_equal(m.h.nreads, 1);
	assert_int_equal(m.h.read_nsegs, 2);
	assert_int_equal(m.h.read[0].position, 112);
	assert_int_equal(m.h.read[0].length, 8292);
	rpcrdma_read_seg(&m.h, 1, &rs);
	assert_int_equal(rs.position, 112);
	assert_int_equal(rs.seg.handle, 0x8ae);
	assert_int_equal(m.h.nwrites, 1);
	assert_int_equal(m.h.write[0].nsegs, 2);
	rpcrdma_chunk_seg(&m.h.write[0], 1, &s);
	assert_int_equal(s.handle, 0x21);
	assert_int_equal(s.offset, 0x5000);
	assert_true(m.h.has_reply);
	assert_int_equal(m.h.reply.length, 1024);
	assert_int_equal(check_xid(&m), RPCRDMA_OK);
	assert_int_equal(rpcrdma_hdr_check_call(&m.h), RPCRDMA_OK);
	free(m.buf);

	/* Version One's rules on the lists hold in Version Two */
	assert_int_equal(
		reason_of(GWT_WORDS(V2(RPCRDMA_MSG), CALL, 1, 0, GWT_SEG(1, 8, 0), 0, 0, 0), 8),
		RPCRDMA_R_POSITION_ZERO_WITH_MSG);
	assert_int_equal(
		reason_of(GWT_WORDS(V2(RPCRDMA_MSG), CALL, 1, 6, GWT_SEG(1, 8, 0), 0, 0, 0), 8),
		RPCRDMA_R_POSITION_UNALIGNED);
	assert_int_equal(reason_of(GWT_WORDS(V2(RPCRDMA_MSG), CALL, 2, 0, 0, 0), 8),
			 RPCRDMA_R_BAD_LIST_MARKER);
	assert_int_equal(reason_of(GWT_WORDS(V2(RPCRDMA_MSG), CALL, 0, 1, 17), 8),
			 RPCRDMA_R_TOO_MANY_SEGMENTS);
}

static void test_nomsg(void **state)
{
	(void)state;
	struct gwt_hdr_msg m;

	/* a long call: P0 chunk and Reply chunk, nothing after the header */
	decode_m(&m,
		 GWT_WORDS(V2(RPCRDMA_NOMSG), CALL, 1, 0, GWT_SEG(7, 6000, 0x1000), 0, 0, 1, 1,
			   GWT_SEG(8, 8192, 0x2000)),
		 0, CALL);
	assert_int_equal(m.r, RPCRDMA_OK);
	assert_int_equal(m.h.proc, RPCRDMA_NOMSG);
	assert_int_equal(m.h.direction, CALL);
	assert_true(rpcrdma_hdr_has_p0(&m.h));
	assert_int_equal(m.h.hdr_len, m.len);
	assert_int_equal(m.h.inline_len, 0);
	assert_int_equal(rpcrdma_hdr_check_call(&m.h), RPCRDMA_OK);
	free(m.buf);

	/* a long reply: the whole reply in the Reply chunk */
	decode_m(&m, GWT_WORDS(V2(RPCRDMA_NOMSG), REPLY, 0, 0, 1, 1, GWT_SEG(8, 184, 0x2000)), 0,
		 REPLY);
	assert_int_equal(m.r, RPCRDMA_OK);
	assert_int_equal(m.h.direction, REPLY);
	assert_int_equal(rpcrdma_hdr_check_reply(&m.h, NULL), RPCRDMA_OK);
	assert_int_equal(rpcrdma_hdr_check_call(&m.h), RPCRDMA_R_DIRECTION_MISMATCH);
	free(m.buf);

	/* the message has to be somewhere */
	assert_int_equal(reason_of(GWT_WORDS(V2(RPCRDMA_NOMSG), CALL, 0, 0, 0), 0),
			 RPCRDMA_R_NOMSG_WITHOUT_CHUNKS);
	assert_int_equal(reason_of(GWT_WORDS(V2(RPCRDMA_NOMSG), REPLY, 0, 0, 0), 0),
			 RPCRDMA_R_NOMSG_WITHOUT_CHUNKS);
}

/* 4.2.1: an RDMA2_MSG MUST be followed by its RPC message. */
static void test_msg_without_payload(void **state)
{
	(void)state;
	assert_int_equal(reason_of(GWT_WORDS(V2(RPCRDMA_MSG), CALL, 0, 0, 0), 0),
			 RPCRDMA_R_MSG_WITHOUT_PAYLOAD);
	assert_int_equal(
		reason_of(GWT_WORDS(V2(RPCRDMA_MSG), REPLY, 0, 1, 1, GWT_SEG(1, 8, 0), 0, 0), 0),
		RPCRDMA_R_MSG_WITHOUT_PAYLOAD);
	assert_int_equal(rpcrdma_reason_action(RPCRDMA_R_MSG_WITHOUT_PAYLOAD),
			 RPCRDMA_ACT_ERR_CHUNK);
	/* Version One leaves that to the XID check */
	assert_int_equal(reason_of(GWT_WORDS(V1(RPCRDMA_MSG), 0, 0, 0), 0), RPCRDMA_OK);
}

static void test_bad_direction(void **state)
{
	(void)state;
	const uint32_t bad[] = { 2, 3, 0x100, 0xffffffffu };

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct gwt_hdr_msg m;

		decode_m(&m, GWT_WORDS(V2(RPCRDMA_MSG), bad[i], 0, 0, 0), 24, CALL);
		assert_int_equal(m.r, RPCRDMA_R_BAD_DIRECTION);
		/* what the answer needs was decoded */
		assert_int_equal(m.h.xid, XID);
		assert_int_equal(m.h.version, RPCRDMA_V2);
		free(m.buf);
		assert_int_equal(reason_of(GWT_WORDS(V2(RPCRDMA_NOMSG), bad[i], 1, 0,
						     GWT_SEG(1, 8, 0), 0, 0),
					   0),
				 RPCRDMA_R_BAD_DIRECTION);
		assert_int_equal(reason_of(GWT_WORDS(V2(RPCRDMA2_OPTIONAL), bad[i], 9, 0), 0),
				 RPCRDMA_R_BAD_DIRECTION);
	}
	assert_int_equal(rpcrdma_reason_action(RPCRDMA_R_BAD_DIRECTION), RPCRDMA_ACT_ERR_CHUNK);
	/* a header that ends before its direction */
	assert_int_equal(reason_of(GWT_WORDS(V2(RPCRDMA_MSG)), 0), RPCRDMA_R_SHORT_HEADER);
	assert_int_equal(reason_of(GWT_WORDS(V2(RPCRDMA2_OPTIONAL)), 0), RPCRDMA_R_SHORT_HEADER);
}

static void test_errors(void **state)
{
	(void)state;
	struct gwt_hdr_msg m;

	decode_m(&m, GWT_WORDS(V2(RPCRDMA_ERROR), RPCRDMA_ERR_VERS, 1, 2), 0, 0);
	assert_int_equal(m.r, RPCRDMA_OK);
	assert_int_equal(m.h.proc, RPCRDMA_ERROR);
	assert_int_equal(m.h.direction, REPLY); /* only responders send errors */
	assert_int_equal(m.h.err, RPCRDMA_ERR_VERS);
	assert_int_equal(m.h.vers_low, 1);
	assert_int_equal(m.h.vers_high, 2);
	assert_int_equal(m.h.hdr_len, 28);
	assert_int_equal(m.h.inline_len, 0);
	free(m.buf);
	decode_m(&m, GWT_WORDS(V2(RPCRDMA_ERROR), RPCRDMA2_ERR_BAD_HEADER), 0, 0);
	assert_int_equal(m.r, RPCRDMA_OK);
	assert_int_equal(m.h.err, RPCRDMA2_ERR_BAD_HEADER);
	free(m.buf);
	decode_m(&m, GWT_WORDS(V2(RPCRDMA_ERROR), RPCRDMA2_ERR_INVAL_OPTION), 0, 0);
	assert_int_equal(m.r, RPCRDMA_OK);
	assert_int_equal(m.h.err, RPCRDMA2_ERR_INVAL_OPTION);
	assert_int_equal(m.h.hdr_len, 20);
	free(m.buf);

	/* 4.2.1: no RPC message after an error */
	assert_int_equal(reason_of(GWT_WORDS(V2(RPCRDMA_ERROR), RPCRDMA2_ERR_BAD_HEADER), 8),
			 RPCRDMA_R_ERROR_WITH_PAYLOAD);
	assert_int_equal(reason_of(GWT_WORDS(V2(RPCRDMA_ERROR), RPCRDMA_ERR_VERS, 1, 2, 0), 0),
			 RPCRDMA_R_ERROR_WITH_PAYLOAD);
	assert_int_equal(rpcrdma_reason_action(RPCRDMA_R_ERROR_WITH_PAYLOAD), RPCRDMA_ACT_DROP);
	/* codes it does not have, and bodies cut short */
	assert_int_equal(reason_of(GWT_WORDS(V2(RPCRDMA_ERROR), 0), 0), RPCRDMA_R_ERROR_BAD_CODE);
	assert_int_equal(reason_of(GWT_WORDS(V2(RPCRDMA_ERROR), 4), 0), RPCRDMA_R_ERROR_BAD_CODE);
	assert_int_equal(reason_of(GWT_WORDS(V2(RPCRDMA_ERROR)), 0), RPCRDMA_R_ERROR_SHORT);
	assert_int_equal(reason_of(GWT_WORDS(V2(RPCRDMA_ERROR), RPCRDMA_ERR_VERS, 1), 0),
			 RPCRDMA_R_ERROR_SHORT);
}

static void test_optional(void **state)
{
	(void)state;
	struct gwt_hdr_msg m;

	/* a requester's optional message without payload: type 9, 5 bytes of info */
	decode_m(&m, GWT_WORDS(V2(RPCRDMA2_OPTIONAL), CALL, 9, 5, 0x01020304, 0x05000000), 0, 0);
	assert_int_equal(m.r, RPCRDMA_R_UNKNOWN_OPTION);
	assert_int_equal(rpcrdma_reason_action(m.r), RPCRDMA_ACT_ERR_INVAL_OPTION);
	/* the answer needs the XID; the rest is decoded for logs and counters */
	assert_int_equal(m.h.xid, XID);
	assert_int_equal(m.h.proc, RPCRDMA2_OPTIONAL);
	assert_int_equal(m.h.direction, CALL);
	assert_int_equal(m.h.opt_type, 9);
	assert_int_equal(m.h.opt_len, 5);
	assert_ptr_equal(m.h.opt_info, m.buf + 28);
	assert_int_equal(m.h.opt_info[4], 5);
	assert_int_equal(m.h.hdr_len, 36);
	assert_int_equal(m.h.inline_len, 0);
	free(m.buf);

	/* with an RPC message (all or part of one) after it */
	decode_m(&m, GWT_WORDS(V2(RPCRDMA2_OPTIONAL), CALL, 9, 0), 12, CALL);
	assert_int_equal(m.r, RPCRDMA_R_UNKNOWN_OPTION);
	assert_int_equal(m.h.opt_len, 0);
	assert_int_equal(m.h.hdr_len, RPCRDMA2_OPT_MIN_SIZE);
	assert_int_equal(m.h.inline_len, 12);
	free(m.buf);

	/* a responder's: errors go only the other way, so it is dropped */
	decode_m(&m, GWT_WORDS(V2(RPCRDMA2_OPTIONAL), REPLY, 9, 0), 0, 0);
	assert_int_equal(m.r, RPCRDMA_R_UNKNOWN_OPTION_REPLY);
	assert_int_equal(rpcrdma_reason_action(m.r), RPCRDMA_ACT_DROP);
	free(m.buf);

	/* an optional message passes the role checks: it has no chunk lists */
	decode_m(&m, GWT_WORDS(V2(RPCRDMA2_OPTIONAL), CALL, 9, 0), 0, 0);
	assert_int_equal(rpcrdma_hdr_check_call(&m.h), RPCRDMA_OK);
	assert_int_equal(rpcrdma_hdr_check_reply(&m.h, NULL), RPCRDMA_OK);
	free(m.buf);
}

/* rdma_optinfo's length against what was received, its pad included. */
static void test_optional_bad_lengths(void **state)
{
	(void)state;
	/* 5 bytes of info need 8 on the wire */
	assert_int_equal(reason_of(GWT_WORDS(V2(RPCRDMA2_OPTIONAL), CALL, 9, 5), 5),
			 RPCRDMA_R_OPTION_TOO_LONG);
	assert_int_equal(reason_of(GWT_WORDS(V2(RPCRDMA2_OPTIONAL), CALL, 9, 5), 7),
			 RPCRDMA_R_OPTION_TOO_LONG);
	assert_int_equal(reason_of(GWT_WORDS(V2(RPCRDMA2_OPTIONAL), CALL, 9, 5), 8),
			 RPCRDMA_R_UNKNOWN_OPTION);
	assert_int_equal(reason_of(GWT_WORDS(V2(RPCRDMA2_OPTIONAL), CALL, 9, 64), 60),
			 RPCRDMA_R_OPTION_TOO_LONG);
	/* lengths that wrap 32 bits when rounded up */
	assert_int_equal(reason_of(GWT_WORDS(V2(RPCRDMA2_OPTIONAL), CALL, 9, 0xffffffffu), 16),
			 RPCRDMA_R_OPTION_TOO_LONG);
	assert_int_equal(reason_of(GWT_WORDS(V2(RPCRDMA2_OPTIONAL), CALL, 9, 0xfffffffdu), 16),
			 RPCRDMA_R_OPTION_TOO_LONG);
	/* the type and the length themselves cut short */
	assert_int_equal(reason_of(GWT_WORDS(V2(RPCRDMA2_OPTIONAL), CALL), 0),
			 RPCRDMA_R_SHORT_HEADER);
	assert_int_equal(reason_of(GWT_WORDS(V2(RPCRDMA2_OPTIONAL), CALL, 9), 0),
			 RPCRDMA_R_SHORT_HEADER);
	assert_int_equal(rpcrdma_reason_action(RPCRDMA_R_OPTION_TOO_LONG), RPCRDMA_ACT_ERR_CHUNK);
}

/*
 * Each decoder refuses the other version's forms: the types and codes the
 * other has alone, and the other's layout under its own version number.
 */
static void test_versions_refuse_each_other(void **state)
{
	(void)state;
	/* Version Two has no RDMA_MSGP or RDMA_DONE */
	assert_int_equal(reason_of(GWT_WORDS(V2(RPCRDMA_MSGP), CALL, 4096, 1024, 0, 0, 0), 8),
			 RPCRDMA_R_BAD_PROC);
	assert_int_equal(reason_of(GWT_WORDS(V2(RPCRDMA_DONE)), 0), RPCRDMA_R_BAD_PROC);
	assert_int_equal(reason_of(GWT_WORDS(V2(6), CALL, 0, 0, 0), 8), RPCRDMA_R_BAD_PROC);
	/* Version One has no RDMA2_OPTIONAL or RDMA2_ERR_INVAL_OPTION */
	assert_int_equal(reason_of(GWT_WORDS(V1(RPCRDMA2_OPTIONAL), CALL, 9, 0), 0),
			 RPCRDMA_R_BAD_PROC);
	assert_int_equal(reason_of(GWT_WORDS(V1(RPCRDMA_ERROR), RPCRDMA2_ERR_INVAL_OPTION), 0),
			 RPCRDMA_R_ERROR_BAD_CODE);

	/* a Version One WRITE call labelled Version Two: the Read list's "1" is read as the
	 * direction, its position as a list marker */
	assert_int_equal(
		reason_of(GWT_WORDS(V2(RPCRDMA_MSG), 1, 112, GWT_SEG(1, 8192, 0), 0, 0, 0), 112),
		RPCRDMA_R_BAD_LIST_MARKER);
	/* a Version One long call labelled Version Two: the P0 entry's "1" is the direction, its
	 * position 0 ends the Read list, its handle opens a Write chunk of 6000 segments */
	assert_int_equal(
		reason_of(GWT_WORDS(V2(RPCRDMA_NOMSG), 1, 0, GWT_SEG(1, 6000, 0), 0, 0, 0), 0),
		RPCRDMA_R_TOO_MANY_SEGMENTS);
	/* a Version Two long call labelled Version One: the direction is read as an empty Read
	 * list, and the NOMSG has then no Position-Zero chunk to carry its call */
	{
		struct gwt_hdr_msg m;

		decode_m(&m, GWT_WORDS(V1(RPCRDMA_NOMSG), CALL, 1, 0, GWT_SEG(1, 6000, 0), 0, 0, 0),
			 0, CALL);
		assert_int_not_equal(m.r, RPCRDMA_OK);
		free(m.buf);
	}
	/* a Version Two inline reply labelled Version One: "1 0 0 0" is a Read list entry cut
	 * short */
	assert_int_equal(reason_of(GWT_WORDS(V1(RPCRDMA_MSG), REPLY, 0, 0, 0), 0),
			 RPCRDMA_R_SHORT_HEADER);

	/* with Version Two not enabled, its messages are answered ERR_VERS (1, 1) */
	lim.versions = 1u << RPCRDMA_V1;
	assert_int_equal(reason_of(GWT_WORDS(V2(RPCRDMA_MSG), CALL, 0, 0, 0), 8),
			 RPCRDMA_R_BAD_VERSION);
	assert_int_equal(reason_of(GWT_WORDS(V2(RPCRDMA2_OPTIONAL), CALL, 9, 0), 0),
			 RPCRDMA_R_BAD_VERSION);
	/* and with Version One disabled, Version One's */
	lim.versions = 1u << RPCRDMA_V2;
	assert_int_equal(reason_of(GWT_WORDS(V1(RPCRDMA_MSG), 0, 0, 0), 8), RPCRDMA_R_BAD_VERSION);
	{
		uint32_t low, high;

		rpcrdma_versions_range(&lim, &low, &high);
		assert_int_equal(low, 2);
		assert_int_equal(high, 2);
	}
}

/* Every truncation of a Version Two header with chunks is refused, never read past. */
static void test_every_cut(void **state)
{
	(void)state;
	const uint32_t w[] = { V2(RPCRDMA_NOMSG),
			       CALL,
			       1,
			       0,
			       GWT_SEG(1, 8, 0),
			       1,
			       8,
			       GWT_SEG(2, 4, 0),
			       0,
			       1,
			       2,
			       GWT_SEG(3, 8, 0),
			       GWT_SEG(4, 8, 0),
			       0,
			       1,
			       1,
			       GWT_SEG(6, 64, 0) };
	const size_t n = sizeof(w) / 4;

	assert_int_equal(reason_of(w, n, 0), RPCRDMA_OK);
	assert_int_equal(
		gwt_hdr_first_cut_not(w, n, RPCRDMA_FIXED_SIZE, &lim, RPCRDMA_R_SHORT_HEADER),
		n * 4);
}

/*
 * Encoding
 */

static const struct rpcrdma_seg rsegs[1] = { { 0x10, 8192, 0x1000000000ull } };
static const struct rpcrdma_seg wsegs[2] = { { 0x20, 4096, 0x3000 }, { 0x21, 4, 0x5000 } };
static const struct rpcrdma_seg rcsegs[1] = { { 0x30, 8192, 0x6000 } };

static void test_encode_call(void **state)
{
	(void)state;
	const struct rpcrdma_read_chunk_desc reads[1] = { { 112, 1, rsegs } };
	const struct rpcrdma_chunk_desc writes[1] = { { 2, wsegs } };
	const struct rpcrdma_chunk_desc reply = { 1, rcsegs };
	struct rpcrdma_call_desc d = {
		.version = RPCRDMA_V2,
		.xid = XID,
		.credits = 1,
		.proc = RPCRDMA_MSG,
		.nreads = 1,
		.reads = reads,
		.nwrites = 1,
		.writes = writes,
		.reply = &reply,
	};
	uint8_t buf[512];
	struct rpcrdma_hdr h;
	ssize_t n = rpcrdma_encode_call(buf, sizeof(buf), &d);

	/* the same lists as Version One, after a direction word */
	assert_int_equal(
		gwt_words_cmp(buf, n,
			      GWT_WORDS(XID, 2, 1, RPCRDMA_MSG, CALL, 1, 112,
					GWT_SEG(0x10, 8192, 0x1000000000ull), 0, 1, 2,
					GWT_SEG(0x20, 4096, 0x3000), GWT_SEG(0x21, 4, 0x5000), 0, 1,
					1, GWT_SEG(0x30, 8192, 0x6000))),
		0);
	d.version = RPCRDMA_V1;
	assert_int_equal(rpcrdma_call_hdr_size(&d), n - 4);
	d.version = RPCRDMA_V2;

	/* decoded back, with 112 bytes of call after it */
	memset(buf + n, 0, 112);
	xdr_put32(buf + n, XID);
	assert_int_equal(rpcrdma_hdr_decode(&h, buf, (size_t)n + 112, &lim), RPCRDMA_OK);
	assert_int_equal(h.direction, CALL);
	assert_int_equal(h.hdr_len, n);
	assert_int_equal(h.read[0].position, 112);
	assert_int_equal(h.write[0].nsegs, 2);
	assert_int_equal(h.reply.length, 8192);
	assert_int_equal(rpcrdma_hdr_check_xid(&h, buf + n, 112), RPCRDMA_OK);

	/* a backward-direction reply */
	d.nreads = d.nwrites = 0;
	d.reply = NULL;
	d.direction = REPLY;
	n = rpcrdma_encode_call(buf, sizeof(buf), &d);
	assert_int_equal(gwt_words_cmp(buf, n, GWT_WORDS(XID, 2, 1, RPCRDMA_MSG, REPLY, 0, 0, 0)),
			 0);
	/* a direction that is neither */
	memset(buf, 0xee, sizeof(buf));
	d.direction = RPCRDMA_DIR_NONE;
	assert_int_equal(rpcrdma_call_hdr_size(&d), -EINVAL);
	d.direction = 7;
	assert_int_equal(rpcrdma_encode_call(buf, sizeof(buf), &d), -EINVAL);
	/* no such type in a call */
	d.direction = CALL;
	d.proc = RPCRDMA2_OPTIONAL;
	assert_int_equal(rpcrdma_encode_call(buf, sizeof(buf), &d), -EINVAL);
	d.proc = RPCRDMA_ERROR;
	assert_int_equal(rpcrdma_encode_call(buf, sizeof(buf), &d), -EINVAL);
	/* too small a buffer */
	d.proc = RPCRDMA_MSG;
	assert_int_equal(rpcrdma_encode_call(buf, RPCRDMA2_HDR_MIN_SIZE - 1, &d), -EMSGSIZE);
	for (size_t i = 0; i < sizeof(buf); i++)
		assert_int_equal(buf[i], 0xee);
	/* Version One ignores the direction: it has no word for it */
	d.version = RPCRDMA_V1;
	d.direction = 7;
	n = rpcrdma_encode_call(buf, sizeof(buf), &d);
	assert_int_equal(gwt_words_cmp(buf, n, GWT_WORDS(XID, 1, 1, RPCRDMA_MSG, 0, 0, 0)), 0);
}

static void test_encode_reply_and_inline(void **state)
{
	(void)state;
	const struct rpcrdma_chunk_desc writes[1] = { { 2, wsegs } };
	const struct rpcrdma_chunk_desc reply = { 1, rcsegs };
	const uint32_t used[1] = { 4097 };
	const struct rpcrdma_reply_desc r = {
		.version = RPCRDMA_V2,
		.xid = XID,
		.credits = 64,
		.proc = RPCRDMA_NOMSG,
		.nwrites = 1,
		.writes = writes,
		.write_used = used,
		.reply = &reply,
		.reply_used = 300,
	};
	uint8_t buf[256];
	struct rpcrdma_hdr h;
	ssize_t n = rpcrdma_encode_reply(buf, sizeof(buf), &r);

	assert_int_equal(
		gwt_words_cmp(buf, n,
			      GWT_WORDS(XID, 2, 64, RPCRDMA_NOMSG, REPLY, 0, 1, 2,
					GWT_SEG(0x20, 4096, 0x3000), GWT_SEG(0x21, 1, 0x5000), 0, 1,
					1, GWT_SEG(0x30, 300, 0x6000))),
		0);
	assert_int_equal(rpcrdma_reply_hdr_size(&r), n);
	assert_int_equal(rpcrdma_hdr_decode(&h, buf, (size_t)n, &lim), RPCRDMA_OK);
	assert_int_equal(h.direction, REPLY);
	assert_int_equal(rpcrdma_hdr_check_reply(&h, NULL), RPCRDMA_OK);

	/* inline messages in both directions */
	n = rpcrdma_encode_inline(buf, sizeof(buf), RPCRDMA_V2, XID, 16, CALL);
	assert_int_equal(gwt_words_cmp(buf, n, GWT_WORDS(XID, 2, 16, RPCRDMA_MSG, CALL, 0, 0, 0)),
			 0);
	n = rpcrdma_encode_inline(buf, sizeof(buf), RPCRDMA_V2, XID, 16, REPLY);
	assert_int_equal(gwt_words_cmp(buf, n, GWT_WORDS(XID, 2, 16, RPCRDMA_MSG, REPLY, 0, 0, 0)),
			 0);
	assert_int_equal(n, RPCRDMA2_HDR_MIN_SIZE);
	n = rpcrdma_encode_inline(buf, sizeof(buf), RPCRDMA_V1, XID, 16, REPLY);
	assert_int_equal(gwt_words_cmp(buf, n, GWT_WORDS(XID, 1, 16, RPCRDMA_MSG, 0, 0, 0)), 0);
	assert_int_equal(rpcrdma_encode_inline(buf, sizeof(buf), RPCRDMA_V2, XID, 16, 2), -EINVAL);
	assert_int_equal(
		rpcrdma_encode_inline(buf, RPCRDMA2_HDR_MIN_SIZE - 1, RPCRDMA_V2, XID, 16, CALL),
		-EMSGSIZE);
}

static void test_encode_errors(void **state)
{
	(void)state;
	uint8_t buf[64];
	struct rpcrdma_hdr h;
	ssize_t n = rpcrdma_encode_error(buf, sizeof(buf), RPCRDMA_V2, XID, 3,
					 RPCRDMA2_ERR_INVAL_OPTION);

	assert_int_equal(
		gwt_words_cmp(buf, n,
			      GWT_WORDS(XID, 2, 3, RPCRDMA_ERROR, RPCRDMA2_ERR_INVAL_OPTION)),
		0);
	assert_int_equal(rpcrdma_hdr_decode(&h, buf, (size_t)n, &lim), RPCRDMA_OK);
	assert_int_equal(h.err, RPCRDMA2_ERR_INVAL_OPTION);
	n = rpcrdma_encode_error(buf, sizeof(buf), RPCRDMA_V2, XID, 3, RPCRDMA2_ERR_BAD_HEADER);
	assert_int_equal(
		gwt_words_cmp(buf, n, GWT_WORDS(XID, 2, 3, RPCRDMA_ERROR, RPCRDMA2_ERR_BAD_HEADER)),
		0);
	n = rpcrdma_encode_error(buf, sizeof(buf), RPCRDMA_V1, XID, 3, RPCRDMA_ERR_CHUNK);
	assert_int_equal(
		gwt_words_cmp(buf, n, GWT_WORDS(XID, 1, 3, RPCRDMA_ERROR, RPCRDMA_ERR_CHUNK)), 0);

	memset(buf, 0xee, sizeof(buf));
	/* Version One has no INVAL_OPTION; ERR_VERS has its own encoder; unknown codes */
	assert_int_equal(rpcrdma_encode_error(buf, sizeof(buf), RPCRDMA_V1, XID, 3,
					      RPCRDMA2_ERR_INVAL_OPTION),
			 -EINVAL);
	assert_int_equal(
		rpcrdma_encode_error(buf, sizeof(buf), RPCRDMA_V2, XID, 3, RPCRDMA_ERR_VERS),
		-EINVAL);
	assert_int_equal(rpcrdma_encode_error(buf, sizeof(buf), RPCRDMA_V2, XID, 3, 4), -EINVAL);
	assert_int_equal(rpcrdma_encode_error(buf, sizeof(buf), 3, XID, 3, RPCRDMA_ERR_CHUNK),
			 -EPROTONOSUPPORT);
	assert_int_equal(rpcrdma_encode_error(buf, RPCRDMA_ERR_CHUNK_SIZE - 1, RPCRDMA_V2, XID, 3,
					      RPCRDMA2_ERR_BAD_HEADER),
			 -EMSGSIZE);
	for (size_t i = 0; i < sizeof(buf); i++)
		assert_int_equal(buf[i], 0xee);

	/* ERR_VERS with the range of both versions */
	n = rpcrdma_encode_err_vers(buf, sizeof(buf), XID, 1, 1, 2);
	assert_int_equal(
		gwt_words_cmp(buf, n, GWT_WORDS(XID, 1, 1, RPCRDMA_ERROR, RPCRDMA_ERR_VERS, 1, 2)),
		0);
}

static void test_encode_optional(void **state)
{
	(void)state;
	const uint8_t info[5] = { 1, 2, 3, 4, 5 };
	struct rpcrdma_opt_desc d = {
		.xid = XID,
		.credits = 1,
		.direction = CALL,
		.type = 9,
		.info_len = sizeof(info),
		.info = info,
	};
	uint8_t buf[64];
	struct rpcrdma_hdr h;
	ssize_t n;

	memset(buf, 0xee, sizeof(buf));
	n = rpcrdma_encode_optional(buf, sizeof(buf), &d);
	/* the info is padded with zeros to a multiple of 4 */
	assert_int_equal(gwt_words_cmp(buf, n,
				       GWT_WORDS(XID, 2, 1, RPCRDMA2_OPTIONAL, CALL, 9, 5,
						 0x01020304, 0x05000000)),
			 0);
	assert_int_equal(rpcrdma_optional_hdr_size(&d), n);
	assert_int_equal(rpcrdma_hdr_decode(&h, buf, (size_t)n, &lim), RPCRDMA_R_UNKNOWN_OPTION);
	assert_int_equal(h.opt_type, 9);
	assert_int_equal(h.opt_len, 5);
	assert_memory_equal(h.opt_info, info, 5);

	d.info_len = 0;
	d.direction = REPLY;
	n = rpcrdma_encode_optional(buf, sizeof(buf), &d);
	assert_int_equal(
		gwt_words_cmp(buf, n, GWT_WORDS(XID, 2, 1, RPCRDMA2_OPTIONAL, REPLY, 9, 0)), 0);

	memset(buf, 0xee, sizeof(buf));
	d.direction = 2;
	assert_int_equal(rpcrdma_encode_optional(buf, sizeof(buf), &d), -EINVAL);
	d.direction = CALL;
	d.info_len = 4;
	d.info = NULL;
	assert_int_equal(rpcrdma_encode_optional(buf, sizeof(buf), &d), -EINVAL);
	d.info = info;
	assert_int_equal(rpcrdma_encode_optional(buf, RPCRDMA2_OPT_MIN_SIZE + 3, &d), -EMSGSIZE);
	d.info_len = 0xfffffff0u;
	assert_int_equal(rpcrdma_optional_hdr_size(&d), -EINVAL);
	for (size_t i = 0; i < sizeof(buf); i++)
		assert_int_equal(buf[i], 0xee);
}

static void test_reason_names(void **state)
{
	(void)state;
	assert_string_equal(rpcrdma_reason_name(RPCRDMA_R_BAD_DIRECTION), "bad_direction");
	assert_string_equal(rpcrdma_reason_name(RPCRDMA_R_UNKNOWN_OPTION), "unknown_option");
	assert_string_equal(rpcrdma_reason_name(RPCRDMA_R_DIRECTION_MISMATCH),
			    "direction_mismatch");
	assert_string_equal(rpcrdma_reason_name(RPCRDMA_R_ERROR_WITH_PAYLOAD),
			    "error_with_payload");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_msg_call_and_reply, setup),
		cmocka_unit_test_setup(test_direction_contradicts_payload, setup),
		cmocka_unit_test_setup(test_msg_with_chunks, setup),
		cmocka_unit_test_setup(test_nomsg, setup),
		cmocka_unit_test_setup(test_msg_without_payload, setup),
		cmocka_unit_test_setup(test_bad_direction, setup),
		cmocka_unit_test_setup(test_errors, setup),
		cmocka_unit_test_setup(test_optional, setup),
		cmocka_unit_test_setup(test_optional_bad_lengths, setup),
		cmocka_unit_test_setup(test_versions_refuse_each_other, setup),
		cmocka_unit_test_setup(test_every_cut, setup),
		cmocka_unit_test_setup(test_encode_call, setup),
		cmocka_unit_test_setup(test_encode_reply_and_inline, setup),
		cmocka_unit_test_setup(test_encode_errors, setup),
		cmocka_unit_test_setup(test_encode_optional, setup),
		cmocka_unit_test_setup(test_reason_names, setup),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
