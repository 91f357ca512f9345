/* SPDX-License-Identifier: MIT */
/*
 * Transport header decoding: every message type and every validation rule.
 * Headers are written as lists of XDR words and decoded from an exact-size
 * heap copy, so that ASan catches any read past the end.
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

#define XID	    0x11223344u
#define FIXED(proc) XID, 1, 32, (proc)

static struct rpcrdma_limits lim;

static int setup(void **state)
{
	(void)state;
	rpcrdma_limits_default(&lim);
	return 0;
}

/*
 * Decode words (plus `extra` bytes of RPC message after them, which start
 * with the XID) from an exact-size buffer.
 */
static void decode_x(struct gwt_hdr_msg *m, const uint32_t *w, size_t n, size_t extra)
{
	gwt_hdr_decode(m, w, n, extra, (const uint32_t[]){ XID }, 1, &lim);
}

static void decode(struct gwt_hdr_msg *m, const uint32_t *w, size_t n)
{
	decode_x(m, w, n, 0);
}

static enum rpcrdma_reason reason_of(const uint32_t *w, size_t n, size_t extra)
{
	return gwt_hdr_reason(w, n, extra, (const uint32_t[]){ XID }, 1, &lim);
}

static void test_msg_plain(void **state)
{
	(void)state;
	struct gwt_hdr_msg m;

	decode_x(&m, GWT_WORDS(FIXED(RPCRDMA_MSG), 0, 0, 0), 40);
	assert_int_equal(m.r, RPCRDMA_OK);
	assert_int_equal(m.h.xid, XID);
	assert_int_equal(m.h.version, 1);
	assert_int_equal(m.h.credits, 32);
	assert_int_equal(m.h.proc, RPCRDMA_MSG);
	assert_int_equal(m.h.wire_proc, RPCRDMA_MSG);
	assert_int_equal(m.h.hdr_len, 28);
	assert_int_equal(m.h.inline_len, 40);
	assert_int_equal(m.h.read_nsegs, 0);
	assert_int_equal(m.h.nreads, 0);
	assert_int_equal(m.h.nwrites, 0);
	assert_false(m.h.has_reply);
	assert_int_equal(rpcrdma_hdr_check_xid(&m.h, m.buf + m.h.hdr_len, m.h.inline_len),
			 RPCRDMA_OK);
	free(m.buf);
}

static void test_nomsg_p0_and_reply(void **state)
{
	(void)state;
	struct gwt_hdr_msg m;
	struct rpcrdma_seg s;
	struct rpcrdma_read_seg rs;

	decode(&m, GWT_WORDS(FIXED(RPCRDMA_NOMSG), 1, 0, GWT_SEG(7, 4096, 0x1000), 1, 0,
			     GWT_SEG(8, 100, 0x2000), 0, 0, 1, 2, GWT_SEG(9, 8192, 0x30000),
			     GWT_SEG(10, 4, 0x40000)));
	assert_int_equal(m.r, RPCRDMA_OK);
	assert_int_equal(m.h.proc, RPCRDMA_NOMSG);
	assert_int_equal(m.h.read_nsegs, 2);
	assert_int_equal(m.h.nreads, 1);
	assert_true(rpcrdma_hdr_has_p0(&m.h));
	assert_int_equal(m.h.read[0].nsegs, 2);
	assert_int_equal(m.h.read[0].length, 4196);
	rpcrdma_chunk_seg(&m.h.read[0], 1, &s);
	assert_int_equal(s.handle, 8);
	assert_int_equal(s.length, 100);
	assert_int_equal(s.offset, 0x2000);
	rpcrdma_read_seg(&m.h, 1, &rs);
	assert_int_equal(rs.position, 0);
	assert_int_equal(rs.seg.handle, 8);
	assert_true(m.h.has_reply);
	assert_int_equal(m.h.reply.nsegs, 2);
	assert_int_equal(m.h.reply.length, 8196);
	rpcrdma_chunk_seg(&m.h.reply, 1, &s);
	assert_int_equal(s.handle, 10);
	assert_int_equal(s.offset, 0x40000);
	assert_int_equal(m.h.hdr_len, m.len);
	assert_int_equal(m.h.inline_len, 0);
	assert_int_equal(rpcrdma_hdr_check_call(&m.h), RPCRDMA_OK);
	free(m.buf);
}

static void test_msgp_is_msg(void **state)
{
	(void)state;
	struct gwt_hdr_msg m;

	decode_x(&m, GWT_WORDS(FIXED(RPCRDMA_MSGP), 4096, 1024, 0, 0, 0), 12);
	assert_int_equal(m.r, RPCRDMA_OK);
	assert_int_equal(m.h.proc, RPCRDMA_MSG);
	assert_int_equal(m.h.wire_proc, RPCRDMA_MSGP);
	assert_int_equal(m.h.msgp_align, 4096);
	assert_int_equal(m.h.msgp_thresh, 1024);
	assert_int_equal(m.h.hdr_len, 36);
	assert_int_equal(rpcrdma_hdr_check_xid(&m.h, m.buf + m.h.hdr_len, m.h.inline_len),
			 RPCRDMA_OK);
	free(m.buf);
	/* its extra words are checked like the rest of the header */
	assert_int_equal(reason_of(GWT_WORDS(FIXED(RPCRDMA_MSGP), 4096), 0),
			 RPCRDMA_R_SHORT_HEADER);
	/* and it is refused with a P0 chunk like RDMA_MSG */
	assert_int_equal(
		reason_of(GWT_WORDS(FIXED(RPCRDMA_MSGP), 0, 0, 1, 0, GWT_SEG(1, 8, 0), 0, 0, 0), 0),
		RPCRDMA_R_POSITION_ZERO_WITH_MSG);
}

static void test_done_is_dropped(void **state)
{
	(void)state;
	enum rpcrdma_reason r = reason_of(GWT_WORDS(FIXED(RPCRDMA_DONE)), 0);

	assert_int_equal(r, RPCRDMA_R_RDMA_DONE);
	assert_int_equal(rpcrdma_reason_action(r), RPCRDMA_ACT_DROP);
	assert_string_equal(rpcrdma_reason_name(r), "rdma_done");
}

static void test_error_messages(void **state)
{
	(void)state;
	struct gwt_hdr_msg m;

	decode(&m, GWT_WORDS(FIXED(RPCRDMA_ERROR), RPCRDMA_ERR_VERS, 1, 2));
	assert_int_equal(m.r, RPCRDMA_OK);
	assert_int_equal(m.h.proc, RPCRDMA_ERROR);
	assert_int_equal(m.h.err, RPCRDMA_ERR_VERS);
	assert_int_equal(m.h.vers_low, 1);
	assert_int_equal(m.h.vers_high, 2);
	assert_int_equal(m.h.hdr_len, 28);
	free(m.buf);

	decode(&m, GWT_WORDS(FIXED(RPCRDMA_ERROR), RPCRDMA_ERR_CHUNK));
	assert_int_equal(m.r, RPCRDMA_OK);
	assert_int_equal(m.h.err, RPCRDMA_ERR_CHUNK);
	assert_int_equal(m.h.hdr_len, 20);
	free(m.buf);

	assert_int_equal(reason_of(GWT_WORDS(FIXED(RPCRDMA_ERROR)), 0), RPCRDMA_R_ERROR_SHORT);
	assert_int_equal(reason_of(GWT_WORDS(FIXED(RPCRDMA_ERROR), RPCRDMA_ERR_VERS, 1), 0),
			 RPCRDMA_R_ERROR_SHORT);
	assert_int_equal(reason_of(GWT_WORDS(FIXED(RPCRDMA_ERROR), 3), 0),
			 RPCRDMA_R_ERROR_BAD_CODE);
	/* an error is never answered with an error */
	assert_int_equal(rpcrdma_reason_action(RPCRDMA_R_ERROR_SHORT), RPCRDMA_ACT_DROP);
	assert_int_equal(rpcrdma_reason_action(RPCRDMA_R_ERROR_BAD_CODE), RPCRDMA_ACT_DROP);
}

static void test_short_fixed(void **state)
{
	(void)state;
	struct gwt_hdr_msg m;

	for (size_t len = 0; len < RPCRDMA_FIXED_SIZE; len++) {
		uint8_t *b = malloc(len ? len : 1);
		memset(b, 0, len);
		assert_int_equal(rpcrdma_hdr_decode(&m.h, b, len, &lim), RPCRDMA_R_SHORT_FIXED);
		free(b);
	}
	assert_int_equal(rpcrdma_reason_action(RPCRDMA_R_SHORT_FIXED), RPCRDMA_ACT_DROP);
}

static void test_bad_version(void **state)
{
	(void)state;
	struct gwt_hdr_msg m;
	uint32_t low, high;

	/* Version Two (draft-cel-nfsv4-rpcrdma-version-two), 0 and absurd values */
	const uint32_t versions[] = { 2, 0, 31, 32, 0xffffffffu };
	for (size_t i = 0; i < sizeof(versions) / sizeof(versions[0]); i++) {
		decode(&m, GWT_WORDS(XID, versions[i], 1, RPCRDMA_MSG, 0, 0, 0));
		assert_int_equal(m.r, RPCRDMA_R_BAD_VERSION);
		/* what the ERR_VERS answer needs was decoded */
		assert_int_equal(m.h.xid, XID);
		assert_int_equal(m.h.version, versions[i]);
		free(m.buf);
	}
	assert_int_equal(rpcrdma_reason_action(RPCRDMA_R_BAD_VERSION), RPCRDMA_ACT_ERR_VERS);

	/* ERR_VERS is read whatever its version field (Linux echoes the refused one) */
	decode(&m, GWT_WORDS(XID, 2, 64, RPCRDMA_ERROR, RPCRDMA_ERR_VERS, 1, 1));
	assert_int_equal(m.r, RPCRDMA_OK);
	assert_int_equal(m.h.version, 2);
	assert_int_equal(m.h.proc, RPCRDMA_ERROR);
	assert_int_equal(m.h.err, RPCRDMA_ERR_VERS);
	assert_int_equal(m.h.vers_low, 1);
	assert_int_equal(m.h.vers_high, 1);
	free(m.buf);
	/* but nothing else of another version */
	assert_int_equal(reason_of(GWT_WORDS(XID, 2, 64, RPCRDMA_ERROR, RPCRDMA_ERR_CHUNK), 0),
			 RPCRDMA_R_BAD_VERSION);
	assert_int_equal(reason_of(GWT_WORDS(XID, 2, 64, RPCRDMA_ERROR, RPCRDMA_ERR_VERS, 1), 0),
			 RPCRDMA_R_BAD_VERSION);
	rpcrdma_versions_range(&lim, &low, &high);
	assert_int_equal(low, 1);
	assert_int_equal(high, 1);

	/* enabling a version without a codec for it changes nothing */
	lim.versions |= 1u << 3;
	assert_int_equal(reason_of(GWT_WORDS(XID, 3, 1, RPCRDMA_MSG, 0, 0, 0), 0),
			 RPCRDMA_R_BAD_VERSION);
	rpcrdma_versions_range(&lim, &low, &high);
	assert_int_equal(high, 1);
	assert_false(rpcrdma_limits_clamp(&lim));
	assert_int_equal(lim.versions, 1u << RPCRDMA_V1);
	/* Version Two has one (tests/unit/test_rpcrdma_hdr_v2.c) */
	lim.versions |= 1u << RPCRDMA_V2;
	rpcrdma_versions_range(&lim, &low, &high);
	assert_int_equal(low, 1);
	assert_int_equal(high, 2);
	assert_true(rpcrdma_limits_clamp(&lim));
	/* a configuration that disables Version One refuses it */
	lim.versions = 0;
	assert_int_equal(reason_of(GWT_WORDS(FIXED(RPCRDMA_MSG), 0, 0, 0), 0),
			 RPCRDMA_R_BAD_VERSION);
}

static void test_bad_proc(void **state)
{
	(void)state;
	assert_int_equal(reason_of(GWT_WORDS(FIXED(5), 0, 0, 0), 0), RPCRDMA_R_BAD_PROC);
	assert_int_equal(reason_of(GWT_WORDS(FIXED(0xffffffffu), 0, 0, 0), 0), RPCRDMA_R_BAD_PROC);
	assert_int_equal(rpcrdma_reason_action(RPCRDMA_R_BAD_PROC), RPCRDMA_ACT_ERR_CHUNK);
}

/* Every truncation of a header inside its chunk lists is short_header. */
static void test_short_header_every_cut(void **state)
{
	(void)state;
	const uint32_t w[] = { FIXED(RPCRDMA_NOMSG),
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
			       1,
			       1,
			       GWT_SEG(5, 8, 0),
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

static void test_bad_list_marker(void **state)
{
	(void)state;
	assert_int_equal(reason_of(GWT_WORDS(FIXED(RPCRDMA_MSG), 2, 0, 0), 0),
			 RPCRDMA_R_BAD_LIST_MARKER);
	assert_int_equal(
		reason_of(GWT_WORDS(FIXED(RPCRDMA_MSG), 1, 8, GWT_SEG(1, 4, 0), 7, 0, 0), 0),
		RPCRDMA_R_BAD_LIST_MARKER);
	assert_int_equal(reason_of(GWT_WORDS(FIXED(RPCRDMA_MSG), 0, 0xffffffffu, 0), 0),
			 RPCRDMA_R_BAD_LIST_MARKER);
	assert_int_equal(reason_of(GWT_WORDS(FIXED(RPCRDMA_MSG), 0, 1, 0, 2, 0), 0),
			 RPCRDMA_R_BAD_LIST_MARKER);
	assert_int_equal(reason_of(GWT_WORDS(FIXED(RPCRDMA_MSG), 0, 0, 3), 0),
			 RPCRDMA_R_BAD_LIST_MARKER);
}

static void test_read_chunk_grouping(void **state)
{
	(void)state;
	struct gwt_hdr_msg m;
	struct rpcrdma_seg s;

	/* P0 (2 segments), a chunk at 8 (2 segments), a chunk at 12 + round-up */
	decode(&m, GWT_WORDS(FIXED(RPCRDMA_NOMSG), 1, 0, GWT_SEG(1, 100, 0), 1, 0,
			     GWT_SEG(2, 20, 0), 1, 8, GWT_SEG(3, 1, 0), 1, 8, GWT_SEG(4, 2, 0), 1,
			     12, GWT_SEG(5, 9, 0), 0, 0, 0));
	assert_int_equal(m.r, RPCRDMA_OK);
	assert_int_equal(m.h.read_nsegs, 5);
	assert_int_equal(m.h.nreads, 3);
	assert_int_equal(m.h.read[0].position, 0);
	assert_int_equal(m.h.read[0].nsegs, 2);
	assert_int_equal(m.h.read[0].length, 120);
	assert_int_equal(m.h.read[1].position, 8);
	assert_int_equal(m.h.read[1].nsegs, 2);
	assert_int_equal(m.h.read[1].length, 3);
	rpcrdma_chunk_seg(&m.h.read[1], 0, &s);
	assert_int_equal(s.handle, 3);
	rpcrdma_chunk_seg(&m.h.read[1], 1, &s);
	assert_int_equal(s.handle, 4);
	assert_int_equal(m.h.read[2].position, 12);
	assert_int_equal(m.h.read[2].length, 9);
	free(m.buf);
}

static void test_write_list(void **state)
{
	(void)state;
	struct gwt_hdr_msg m;
	struct rpcrdma_seg s;
	struct rpcrdma_seg out[4];

	decode_x(&m,
		 GWT_WORDS(FIXED(RPCRDMA_MSG), 0, 1, 3, GWT_SEG(1, 10, 0x100),
			   GWT_SEG(2, 20, 0x200), GWT_SEG(3, 30, 0x300), 1, 0, 1, 1,
			   GWT_SEG(4, 1, 0xffffffff00000001ull), 0, 0),
		 8);
	assert_int_equal(m.r, RPCRDMA_OK);
	assert_int_equal(m.h.nwrites, 3);
	assert_int_equal(m.h.write[0].nsegs, 3);
	assert_int_equal(m.h.write[0].length, 60);
	assert_int_equal(m.h.write[1].nsegs, 0); /* a chunk of no segments is valid XDR */
	assert_int_equal(m.h.write[1].length, 0);
	assert_int_equal(m.h.write[2].nsegs, 1);
	rpcrdma_chunk_seg(&m.h.write[2], 0, &s);
	assert_int_equal(s.offset, 0xffffffff00000001ull);
	assert_int_equal(rpcrdma_chunk_copy(&m.h.write[0], out, 4), 3);
	assert_int_equal(out[2].handle, 3);
	assert_int_equal(out[2].length, 30);
	assert_int_equal(out[2].offset, 0x300);
	assert_int_equal(rpcrdma_chunk_copy(&m.h.write[0], out, 2), 2);
	free(m.buf);
}

static void test_limits(void **state)
{
	(void)state;
	/* 5 Read chunks, 5 Write chunks, 17 segments: over the defaults */
	const uint32_t reads5[] = { FIXED(RPCRDMA_MSG),
				    1,
				    4,
				    GWT_SEG(1, 4, 0),
				    1,
				    8,
				    GWT_SEG(1, 4, 0),
				    1,
				    12,
				    GWT_SEG(1, 4, 0),
				    1,
				    16,
				    GWT_SEG(1, 4, 0),
				    1,
				    20,
				    GWT_SEG(1, 4, 0),
				    0,
				    0,
				    0,
				    0,
				    0,
				    0,
				    0,
				    0,
				    0 };
	const uint32_t writes5[] = { FIXED(RPCRDMA_MSG), 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 0, 0 };
	uint32_t segs17[4 + 3 + 17 * 4 + 1 + 4];
	size_t n = 0;

	segs17[n++] = XID, segs17[n++] = 1, segs17[n++] = 1, segs17[n++] = RPCRDMA_MSG;
	segs17[n++] = 0, segs17[n++] = 1, segs17[n++] = 17;
	for (int i = 0; i < 17; i++) {
		segs17[n++] = 1, segs17[n++] = 4, segs17[n++] = 0, segs17[n++] = 0;
	}
	segs17[n++] = 0, segs17[n++] = 0;

	assert_int_equal(reason_of(reads5, sizeof(reads5) / 4, 24), RPCRDMA_R_TOO_MANY_READ_CHUNKS);
	assert_int_equal(reason_of(writes5, sizeof(writes5) / 4, 0),
			 RPCRDMA_R_TOO_MANY_WRITE_CHUNKS);
	assert_int_equal(reason_of(segs17, n, 0), RPCRDMA_R_TOO_MANY_SEGMENTS);

	/* a configuration can raise each limit */
	lim.max_read_chunks = 5;
	lim.max_write_chunks = 5;
	lim.max_chunk_segs = 17;
	assert_true(rpcrdma_limits_clamp(&lim));
	assert_int_equal(reason_of(reads5, sizeof(reads5) / 4, 24), RPCRDMA_OK);
	assert_int_equal(reason_of(writes5, sizeof(writes5) / 4, 0), RPCRDMA_OK);
	assert_int_equal(reason_of(segs17, n, 0), RPCRDMA_OK);

	/* and lower them; no segments at all refuses every chunk */
	lim.max_chunk_segs = 0;
	assert_int_equal(
		reason_of(GWT_WORDS(FIXED(RPCRDMA_MSG), 1, 4, GWT_SEG(1, 4, 0), 0, 0, 0), 8),
		RPCRDMA_R_TOO_MANY_SEGMENTS);
	assert_int_equal(
		reason_of(GWT_WORDS(FIXED(RPCRDMA_MSG), 0, 1, 1, GWT_SEG(1, 4, 0), 0, 0), 8),
		RPCRDMA_R_TOO_MANY_SEGMENTS);
	lim.max_chunk_segs = 1;
	assert_int_equal(reason_of(GWT_WORDS(FIXED(RPCRDMA_MSG), 1, 4, GWT_SEG(1, 4, 0), 1, 4,
					     GWT_SEG(2, 4, 0), 0, 0, 0),
				   8),
			 RPCRDMA_R_TOO_MANY_SEGMENTS);
	assert_int_equal(reason_of(GWT_WORDS(FIXED(RPCRDMA_MSG), 0, 0, 1, 2, GWT_SEG(1, 4, 0),
					     GWT_SEG(1, 4, 0)),
				   0),
			 RPCRDMA_R_TOO_MANY_SEGMENTS);

	/* a configuration cannot go past the arrays of the decoded header */
	lim.max_read_chunks = 1000;
	lim.max_write_chunks = 1000;
	assert_false(rpcrdma_limits_clamp(&lim));
	assert_int_equal(lim.max_read_chunks, RPCRDMA_MAX_READ_CHUNKS);
	assert_int_equal(lim.max_write_chunks, RPCRDMA_MAX_WRITE_CHUNKS);
	/* even unclamped, the decoder stays inside them */
	{
		uint32_t w[4 + 1 + (RPCRDMA_MAX_WRITE_CHUNKS + 1) * 2 + 1];
		size_t k = 0;
		w[k++] = XID, w[k++] = 1, w[k++] = 1, w[k++] = RPCRDMA_MSG, w[k++] = 0;
		for (unsigned i = 0; i <= RPCRDMA_MAX_WRITE_CHUNKS; i++)
			w[k++] = 1, w[k++] = 0;
		w[k++] = 0;
		lim.max_write_chunks = 1000;
		assert_int_equal(reason_of(w, k, 0), RPCRDMA_R_TOO_MANY_WRITE_CHUNKS);
	}
}

static void test_position_unaligned(void **state)
{
	(void)state;
	assert_int_equal(
		reason_of(GWT_WORDS(FIXED(RPCRDMA_MSG), 1, 6, GWT_SEG(1, 4, 0), 0, 0, 0), 8),
		RPCRDMA_R_POSITION_UNALIGNED);
	assert_int_equal(
		reason_of(GWT_WORDS(FIXED(RPCRDMA_MSG), 1, 8, GWT_SEG(1, 4, 0), 0, 0, 0), 8),
		RPCRDMA_OK);
}

static void test_read_list_unsorted(void **state)
{
	(void)state;
	assert_int_equal(reason_of(GWT_WORDS(FIXED(RPCRDMA_MSG), 1, 16, GWT_SEG(1, 4, 0), 1, 8,
					     GWT_SEG(2, 4, 0), 0, 0, 0),
				   32),
			 RPCRDMA_R_READ_LIST_UNSORTED);
	/* a chunk's segments must be adjacent: A B A is unsorted */
	assert_int_equal(reason_of(GWT_WORDS(FIXED(RPCRDMA_MSG), 1, 8, GWT_SEG(1, 4, 0), 1, 16,
					     GWT_SEG(2, 4, 0), 1, 8, GWT_SEG(3, 4, 0), 0, 0, 0),
				   32),
			 RPCRDMA_R_READ_LIST_UNSORTED);
	assert_int_equal(reason_of(GWT_WORDS(FIXED(RPCRDMA_MSG), 1, 8, GWT_SEG(1, 4, 0), 1, 16,
					     GWT_SEG(2, 4, 0), 0, 0, 0),
				   32),
			 RPCRDMA_OK);
}

static void test_read_chunks_overlap(void **state)
{
	(void)state;
	/* chunk at 8 of 10 bytes takes 8..20 with its pad: 16 is inside it */
	assert_int_equal(reason_of(GWT_WORDS(FIXED(RPCRDMA_MSG), 1, 8, GWT_SEG(1, 10, 0), 1, 16,
					     GWT_SEG(2, 4, 0), 0, 0, 0),
				   32),
			 RPCRDMA_R_READ_CHUNKS_OVERLAP);
	assert_int_equal(reason_of(GWT_WORDS(FIXED(RPCRDMA_MSG), 1, 8, GWT_SEG(1, 10, 0), 1, 20,
					     GWT_SEG(2, 4, 0), 0, 0, 0),
				   32),
			 RPCRDMA_OK);
	/* after P0, chunks are placed in the P0 stream, from its offset 0 on */
	assert_int_equal(reason_of(GWT_WORDS(FIXED(RPCRDMA_NOMSG), 1, 0, GWT_SEG(1, 64, 0), 1, 4,
					     GWT_SEG(2, 4, 0), 0, 0, 0),
				   0),
			 RPCRDMA_OK);
}

static void test_length_overflow(void **state)
{
	(void)state;
	/* the segments of one Read chunk add up past 32 bits */
	assert_int_equal(reason_of(GWT_WORDS(FIXED(RPCRDMA_NOMSG), 1, 0, GWT_SEG(1, 0xffffffffu, 0),
					     1, 0, GWT_SEG(2, 0xffffffffu, 0), 0, 0, 0),
				   0),
			 RPCRDMA_R_LENGTH_OVERFLOW);
	/* position plus length */
	assert_int_equal(
		reason_of(GWT_WORDS(FIXED(RPCRDMA_MSG), 1, 8, GWT_SEG(1, 0xfffffffau, 0), 0, 0, 0),
			  8),
		RPCRDMA_R_LENGTH_OVERFLOW);
	/* a length whose round-up would wrap */
	assert_int_equal(reason_of(GWT_WORDS(FIXED(RPCRDMA_NOMSG), 1, 0, GWT_SEG(1, 0xfffffffeu, 0),
					     0, 0, 0),
				   0),
			 RPCRDMA_R_LENGTH_OVERFLOW);
	/* the same, found when the next chunk starts */
	assert_int_equal(reason_of(GWT_WORDS(FIXED(RPCRDMA_NOMSG), 1, 0, GWT_SEG(1, 0xfffffffeu, 0),
					     1, 4, GWT_SEG(2, 4, 0), 0, 0, 0),
				   0),
			 RPCRDMA_R_LENGTH_OVERFLOW);
	/* Write and Reply chunks */
	assert_int_equal(
		reason_of(GWT_WORDS(FIXED(RPCRDMA_MSG), 0, 1, 2, GWT_SEG(1, 0x80000000u, 0),
				    GWT_SEG(2, 0x80000000u, 0), 0, 0),
			  0),
		RPCRDMA_R_LENGTH_OVERFLOW);
	assert_int_equal(reason_of(GWT_WORDS(FIXED(RPCRDMA_NOMSG), 0, 0, 1, 2,
					     GWT_SEG(1, 0xffffffffu, 0), GWT_SEG(2, 1, 0)),
				   0),
			 RPCRDMA_R_LENGTH_OVERFLOW);
	assert_int_equal(
		reason_of(GWT_WORDS(FIXED(RPCRDMA_NOMSG), 0, 0, 1, 1, GWT_SEG(1, 0xfffffffcu, 0)),
			  0),
		RPCRDMA_OK);
}

static void test_position_zero_with_msg(void **state)
{
	(void)state;
	assert_int_equal(
		reason_of(GWT_WORDS(FIXED(RPCRDMA_MSG), 1, 0, GWT_SEG(1, 64, 0), 0, 0, 0), 8),
		RPCRDMA_R_POSITION_ZERO_WITH_MSG);
	assert_int_equal(
		reason_of(GWT_WORDS(FIXED(RPCRDMA_NOMSG), 1, 0, GWT_SEG(1, 64, 0), 0, 0, 0), 0),
		RPCRDMA_OK);
}

static void test_nomsg_without_chunks(void **state)
{
	(void)state;
	assert_int_equal(reason_of(GWT_WORDS(FIXED(RPCRDMA_NOMSG), 0, 0, 0), 0),
			 RPCRDMA_R_NOMSG_WITHOUT_CHUNKS);
	/* neither a Write list nor a non-P0 Read chunk can carry the message */
	assert_int_equal(reason_of(GWT_WORDS(FIXED(RPCRDMA_NOMSG), 1, 8, GWT_SEG(1, 4, 0), 0, 1, 1,
					     GWT_SEG(2, 8, 0), 0, 0),
				   0),
			 RPCRDMA_R_NOMSG_WITHOUT_CHUNKS);
	/* a Reply chunk alone can (a long reply) */
	assert_int_equal(
		reason_of(GWT_WORDS(FIXED(RPCRDMA_NOMSG), 0, 0, 1, 1, GWT_SEG(1, 64, 0)), 0),
		RPCRDMA_OK);
}

static void test_position_beyond_message(void **state)
{
	(void)state;
	/* 8 inline bytes: a chunk can go at 0..8 of the stream, not at 12 */
	assert_int_equal(
		reason_of(GWT_WORDS(FIXED(RPCRDMA_MSG), 1, 12, GWT_SEG(1, 4, 0), 0, 0, 0), 8),
		RPCRDMA_R_POSITION_BEYOND_MSG);
	assert_int_equal(
		reason_of(GWT_WORDS(FIXED(RPCRDMA_MSG), 1, 8, GWT_SEG(1, 4, 0), 0, 0, 0), 8),
		RPCRDMA_OK);
	/* the second chunk is placed after the first one's 8 bytes (5 + pad) */
	assert_int_equal(reason_of(GWT_WORDS(FIXED(RPCRDMA_MSG), 1, 8, GWT_SEG(1, 5, 0), 1, 16,
					     GWT_SEG(2, 4, 0), 0, 0, 0),
				   8),
			 RPCRDMA_OK);
	assert_int_equal(reason_of(GWT_WORDS(FIXED(RPCRDMA_MSG), 1, 8, GWT_SEG(1, 5, 0), 1, 20,
					     GWT_SEG(2, 4, 0), 0, 0, 0),
				   8),
			 RPCRDMA_R_POSITION_BEYOND_MSG);
	/* RDMA_NOMSG: inside the P0 chunk's message */
	assert_int_equal(reason_of(GWT_WORDS(FIXED(RPCRDMA_NOMSG), 1, 0, GWT_SEG(1, 64, 0), 1, 68,
					     GWT_SEG(2, 4, 0), 0, 0, 0),
				   0),
			 RPCRDMA_R_POSITION_BEYOND_MSG);
	assert_int_equal(reason_of(GWT_WORDS(FIXED(RPCRDMA_NOMSG), 1, 0, GWT_SEG(1, 64, 0), 1, 64,
					     GWT_SEG(2, 4, 0), 0, 0, 0),
				   0),
			 RPCRDMA_OK);
}

static void test_check_xid(void **state)
{
	(void)state;
	struct gwt_hdr_msg m;
	uint8_t rpc[8];

	decode_x(&m, GWT_WORDS(FIXED(RPCRDMA_MSG), 0, 0, 0), 8);
	assert_int_equal(m.r, RPCRDMA_OK);
	assert_int_equal(rpcrdma_hdr_check_xid(&m.h, m.buf + 28, 8), RPCRDMA_OK);
	assert_int_equal(rpcrdma_hdr_check_xid(&m.h, m.buf + 28, 7), RPCRDMA_R_RPC_SHORT);
	assert_int_equal(rpcrdma_hdr_check_xid(&m.h, m.buf + 28, 0), RPCRDMA_R_RPC_SHORT);
	xdr_put32(rpc, XID + 1);
	xdr_put32(rpc + 4, RPCRDMA_RPC_REPLY);
	assert_int_equal(rpcrdma_hdr_check_xid(&m.h, rpc, 8), RPCRDMA_R_XID_MISMATCH);
	assert_int_equal(rpcrdma_rpc_msg_type(rpc), RPCRDMA_RPC_REPLY);
	assert_int_equal(rpcrdma_reason_action(RPCRDMA_R_XID_MISMATCH), RPCRDMA_ACT_ERR_CHUNK);
	free(m.buf);
}

static void test_check_call(void **state)
{
	(void)state;
	struct gwt_hdr_msg m;

	decode(&m, GWT_WORDS(FIXED(RPCRDMA_NOMSG), 0, 0, 1, 1, GWT_SEG(1, 64, 0)));
	assert_int_equal(m.r, RPCRDMA_OK);
	assert_int_equal(rpcrdma_hdr_check_call(&m.h), RPCRDMA_R_CALL_NOMSG_WITHOUT_P0);
	free(m.buf);
	decode_x(&m,
		 GWT_WORDS(FIXED(RPCRDMA_MSG), 1, 8, GWT_SEG(1, 4, 0), 0, 0, 1, 1,
			   GWT_SEG(1, 64, 0)),
		 8);
	assert_int_equal(m.r, RPCRDMA_OK);
	assert_int_equal(rpcrdma_hdr_check_call(&m.h), RPCRDMA_OK);
	free(m.buf);
	/* an RDMA_ERROR has no lists to check */
	decode(&m, GWT_WORDS(FIXED(RPCRDMA_ERROR), RPCRDMA_ERR_CHUNK));
	assert_int_equal(m.r, RPCRDMA_OK);
	assert_int_equal(rpcrdma_hdr_check_call(&m.h), RPCRDMA_OK);
	assert_int_equal(rpcrdma_hdr_check_reply(&m.h, NULL), RPCRDMA_OK);
	free(m.buf);
}

static void test_check_reply(void **state)
{
	(void)state;
	struct gwt_hdr_msg m;
	const struct rpcrdma_seg w0[2] = { { 1, 100, 0x1000 }, { 2, 4, 0x2000 } };
	const struct rpcrdma_seg rc[1] = { { 3, 4096, 0x3000 } };
	const struct rpcrdma_chunk_desc writes[1] = { { 2, w0 } };
	const struct rpcrdma_chunk_desc reply = { 1, rc };
	struct rpcrdma_offer offer = { 1, writes, &reply };

	decode_x(&m, GWT_WORDS(FIXED(RPCRDMA_MSG), 1, 8, GWT_SEG(1, 4, 0), 0, 0, 0), 8);
	assert_int_equal(rpcrdma_hdr_check_reply(&m.h, NULL), RPCRDMA_R_REPLY_HAS_READ_LIST);
	free(m.buf);
	decode(&m, GWT_WORDS(FIXED(RPCRDMA_NOMSG), 1, 0, GWT_SEG(1, 4, 0), 0, 0, 0));
	assert_int_equal(m.r, RPCRDMA_OK);
	m.h.read_nsegs = 0; /* take the Read list away: the Reply chunk is what is missing */
	assert_int_equal(rpcrdma_hdr_check_reply(&m.h, NULL),
			 RPCRDMA_R_REPLY_NOMSG_WITHOUT_REPLY_CHUNK);
	free(m.buf);
	decode_x(&m, GWT_WORDS(FIXED(RPCRDMA_MSG), 0, 0, 1, 1, GWT_SEG(3, 8, 0x3000)), 8);
	assert_int_equal(rpcrdma_hdr_check_reply(&m.h, NULL), RPCRDMA_R_REPLY_MSG_USES_REPLY_CHUNK);
	free(m.buf);
	/* an RDMA_MSG may echo the unused Reply chunk with zero lengths */
	decode_x(&m,
		 GWT_WORDS(FIXED(RPCRDMA_MSG), 0, 1, 2, GWT_SEG(1, 0, 0x1000),
			   GWT_SEG(2, 0, 0x2000), 0, 1, 1, GWT_SEG(3, 0, 0x3000)),
		 8);
	assert_int_equal(rpcrdma_hdr_check_reply(&m.h, &offer), RPCRDMA_OK);
	free(m.buf);
	/* the offered shapes, echoed */
	decode(&m, GWT_WORDS(FIXED(RPCRDMA_NOMSG), 0, 1, 2, GWT_SEG(1, 100, 0x1000),
			     GWT_SEG(2, 0, 0x2000), 0, 1, 1, GWT_SEG(3, 200, 0x3000)));
	assert_int_equal(rpcrdma_hdr_check_reply(&m.h, &offer), RPCRDMA_OK);
	free(m.buf);
	/* more chunks than offered, fewer segments, other handle, longer than offered */
	decode(&m, GWT_WORDS(FIXED(RPCRDMA_NOMSG), 0, 1, 2, GWT_SEG(1, 100, 0x1000),
			     GWT_SEG(2, 0, 0x2000), 1, 0, 0, 1, 1, GWT_SEG(3, 200, 0x3000)));
	assert_int_equal(rpcrdma_hdr_check_reply(&m.h, &offer),
			 RPCRDMA_R_REPLY_WRITE_LIST_MISMATCH);
	free(m.buf);
	decode(&m, GWT_WORDS(FIXED(RPCRDMA_NOMSG), 0, 1, 1, GWT_SEG(1, 100, 0x1000), 0, 1, 1,
			     GWT_SEG(3, 200, 0x3000)));
	assert_int_equal(rpcrdma_hdr_check_reply(&m.h, &offer),
			 RPCRDMA_R_REPLY_WRITE_LIST_MISMATCH);
	free(m.buf);
	decode(&m, GWT_WORDS(FIXED(RPCRDMA_NOMSG), 0, 1, 2, GWT_SEG(9, 100, 0x1000),
			     GWT_SEG(2, 0, 0x2000), 0, 1, 1, GWT_SEG(3, 200, 0x3000)));
	assert_int_equal(rpcrdma_hdr_check_reply(&m.h, &offer),
			 RPCRDMA_R_REPLY_WRITE_LIST_MISMATCH);
	free(m.buf);
	decode(&m, GWT_WORDS(FIXED(RPCRDMA_NOMSG), 0, 1, 2, GWT_SEG(1, 101, 0x1000),
			     GWT_SEG(2, 0, 0x2000), 0, 1, 1, GWT_SEG(3, 200, 0x3000)));
	assert_int_equal(rpcrdma_hdr_check_reply(&m.h, &offer),
			 RPCRDMA_R_REPLY_WRITE_LIST_MISMATCH);
	free(m.buf);
	decode(&m, GWT_WORDS(FIXED(RPCRDMA_NOMSG), 0, 1, 2, GWT_SEG(1, 100, 0x1000),
			     GWT_SEG(2, 0, 0x2000), 0, 1, 1, GWT_SEG(3, 4097, 0x3000)));
	assert_int_equal(rpcrdma_hdr_check_reply(&m.h, &offer), RPCRDMA_R_REPLY_CHUNK_MISMATCH);
	free(m.buf);
	decode(&m, GWT_WORDS(FIXED(RPCRDMA_NOMSG), 0, 1, 2, GWT_SEG(1, 100, 0x1000),
			     GWT_SEG(2, 0, 0x2000), 0, 1, 1, GWT_SEG(3, 200, 0x3008)));
	assert_int_equal(rpcrdma_hdr_check_reply(&m.h, &offer), RPCRDMA_R_REPLY_CHUNK_MISMATCH);
	/* a Reply chunk that was never offered */
	offer.reply = NULL;
	assert_int_equal(rpcrdma_hdr_check_reply(&m.h, &offer), RPCRDMA_R_REPLY_CHUNK_MISMATCH);
	free(m.buf);
}

static void test_reason_table(void **state)
{
	(void)state;
	for (int i = 0; i < RPCRDMA_R__COUNT; i++) {
		const char *name = rpcrdma_reason_name(i);
		assert_non_null(name);
		assert_true(strlen(name) > 1);
		for (const char *c = name; *c; c++)
			assert_true((*c >= 'a' && *c <= 'z') || *c == '_');
		for (int j = 0; j < i; j++)
			assert_string_not_equal(name, rpcrdma_reason_name(j));
		enum rpcrdma_action a = rpcrdma_reason_action(i);
		assert_true(i == RPCRDMA_OK ? a == RPCRDMA_ACT_ACCEPT : a != RPCRDMA_ACT_ACCEPT);
	}
	assert_string_equal(rpcrdma_reason_name(RPCRDMA_R_SHORT_HEADER), "short_header");
	assert_string_equal(rpcrdma_reason_name(RPCRDMA_R_BAD_VERSION), "bad_version");
	assert_string_equal(rpcrdma_reason_name(RPCRDMA_R_READ_LIST_UNSORTED),
			    "read_list_unsorted");
	assert_string_equal(rpcrdma_reason_name(RPCRDMA_R__COUNT), "?");
	assert_int_equal(rpcrdma_reason_action(RPCRDMA_R__COUNT), RPCRDMA_ACT_DROP);
	assert_int_equal(rpcrdma_reason_action(RPCRDMA_R_SHORT_HEADER), RPCRDMA_ACT_ERR_CHUNK);
	assert_int_equal(rpcrdma_reason_action(RPCRDMA_R_REPLY_HAS_READ_LIST), RPCRDMA_ACT_DROP);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_msg_plain, setup),
		cmocka_unit_test_setup(test_nomsg_p0_and_reply, setup),
		cmocka_unit_test_setup(test_msgp_is_msg, setup),
		cmocka_unit_test_setup(test_done_is_dropped, setup),
		cmocka_unit_test_setup(test_error_messages, setup),
		cmocka_unit_test_setup(test_short_fixed, setup),
		cmocka_unit_test_setup(test_bad_version, setup),
		cmocka_unit_test_setup(test_bad_proc, setup),
		cmocka_unit_test_setup(test_short_header_every_cut, setup),
		cmocka_unit_test_setup(test_bad_list_marker, setup),
		cmocka_unit_test_setup(test_read_chunk_grouping, setup),
		cmocka_unit_test_setup(test_write_list, setup),
		cmocka_unit_test_setup(test_limits, setup),
		cmocka_unit_test_setup(test_position_unaligned, setup),
		cmocka_unit_test_setup(test_read_list_unsorted, setup),
		cmocka_unit_test_setup(test_read_chunks_overlap, setup),
		cmocka_unit_test_setup(test_length_overflow, setup),
		cmocka_unit_test_setup(test_position_zero_with_msg, setup),
		cmocka_unit_test_setup(test_nomsg_without_chunks, setup),
		cmocka_unit_test_setup(test_position_beyond_message, setup),
		cmocka_unit_test_setup(test_check_xid, setup),
		cmocka_unit_test_setup(test_check_call, setup),
		cmocka_unit_test_setup(test_check_reply, setup),
		cmocka_unit_test_setup(test_reason_table, setup),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
