/* SPDX-License-Identifier: MIT */
/*
 * XDR splicing: rebuilding a call from its inline part and Read chunks,
 * reducing a message by taking items out, planning RDMA operations over a
 * chunk's segments, and rebuilding a reply from its Write chunks, with the
 * round-up rules of 5666bis-01 sections 4.4.4.1 and 4.4.5.2.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "rdma/splice.h"

#define MAXIOV 32

/* Concatenate out's iovecs; returns the malloc'd bytes (out->len of them). */
static uint8_t *flatten(const struct splice_out *out)
{
	uint8_t *buf = malloc(out->len + 1u), *p = buf;
	size_t total = 0;

	for (unsigned i = 0; i < out->cnt; i++) {
		assert_true(out->iov[i].iov_len > 0); /* no empty iovecs */
		memcpy(p, out->iov[i].iov_base, out->iov[i].iov_len);
		p += out->iov[i].iov_len;
		total += out->iov[i].iov_len;
	}
	assert_int_equal(total, out->len);
	return buf;
}

/* A message of len bytes with recognisable content. */
static uint8_t *message(uint32_t len, uint8_t seed)
{
	uint8_t *m = malloc(len + 1u);

	for (uint32_t i = 0; i < len; i++)
		m[i] = (uint8_t)(seed + i * 7 + 1);
	return m;
}

static void test_rebuild_plain(void **state)
{
	(void)state;
	struct iovec iov[MAXIOV];
	struct splice_out out = { iov, MAXIOV, 0, 0 };
	uint8_t *m = message(40, 1);

	assert_int_equal(splice_rebuild(m, 40, NULL, 0, &out), SPLICE_OK);
	assert_int_equal(out.cnt, 1);
	assert_ptr_equal(iov[0].iov_base, m);
	assert_int_equal(out.len, 40);
	free(m);
}

/*
 * The Linux client's NFS WRITE: the chunk sits at the end of the head,
 * carries no pad, and the inline tail carries none either. The rebuilt
 * stream has the pad from the zero buffer, then the tail.
 */
static void test_rebuild_chunk_then_inline(void **state)
{
	(void)state;
	struct iovec iov[MAXIOV];
	struct splice_out out = { iov, MAXIOV, 0, 0 };
	uint8_t inl[24], data[5] = { 'a', 'b', 'c', 'd', 'e' }, *flat;
	const struct splice_chunk ch[1] = { { 16, data, 5 } };

	memset(inl, 'h', 16);
	memset(inl + 16, 't', 8);
	assert_int_equal(splice_rebuild(inl, sizeof(inl), ch, 1, &out), SPLICE_OK);
	assert_int_equal(out.cnt, 4);
	assert_int_equal(out.len, 16 + 8 + 8);
	assert_int_equal(iov[2].iov_len, 3); /* the pad */
	flat = flatten(&out);
	assert_memory_equal(flat, "hhhhhhhhhhhhhhhhabcde\0\0\0tttttttt", 32);
	free(flat);

	/* a chunk that ends the message still gets its pad */
	assert_int_equal(splice_rebuild(inl, 16, ch, 1, &out), SPLICE_OK);
	assert_int_equal(out.len, 24);
	assert_int_equal(out.cnt, 3);
	/* an aligned chunk gets none */
	const struct splice_chunk ch4[1] = { { 16, data, 4 } };
	assert_int_equal(splice_rebuild(inl, 16, ch4, 1, &out), SPLICE_OK);
	assert_int_equal(out.cnt, 2);
	assert_int_equal(out.len, 20);
}

/* Positions count the whole stream, pads of earlier chunks included. */
static void test_rebuild_two_chunks(void **state)
{
	(void)state;
	struct iovec iov[MAXIOV];
	struct splice_out out = { iov, MAXIOV, 0, 0 };
	uint8_t inl[12] = "AAAABBBBCCCC", d1[5] = "11111", d2[2] = "22", *flat;
	/* A, chunk 1 at 4 (5 + 3 pad), B at 12, chunk 2 at 16 (2 + 2 pad), C */
	const struct splice_chunk ch[2] = { { 4, d1, 5 }, { 16, d2, 2 } };

	assert_int_equal(splice_rebuild(inl, sizeof(inl), ch, 2, &out), SPLICE_OK);
	flat = flatten(&out);
	assert_int_equal(out.len, 24);
	assert_memory_equal(flat, "AAAA11111\0\0\0BBBB22\0\0CCCC", 24);
	free(flat);
	/* adjacent chunks, no inline between them */
	const struct splice_chunk adj[2] = { { 4, d1, 5 }, { 12, d2, 2 } };
	assert_int_equal(splice_rebuild(inl, sizeof(inl), adj, 2, &out), SPLICE_OK);
	flat = flatten(&out);
	assert_memory_equal(flat,
			    "AAAA11111\0\0\0"
			    "22\0\0BBBBCCCC",
			    24);
	free(flat);
}

static void test_rebuild_position_zero(void **state)
{
	(void)state;
	struct iovec iov[MAXIOV];
	struct splice_out out = { iov, MAXIOV, 0, 0 };
	uint8_t call[16] = "XXXXCCCCaaaabbbb", d[3] = "ddd", *flat;
	const struct splice_chunk p0[1] = { { 0, call, 16 } };
	const struct splice_chunk p0_and_chunk[2] = { { 0, call, 16 }, { 8, d, 3 } };
	const struct splice_chunk p0_twice[2] = { { 0, call, 16 }, { 0, d, 3 } };

	/* the P0 chunk is the whole message */
	assert_int_equal(splice_rebuild(NULL, 0, p0, 1, &out), SPLICE_OK);
	assert_int_equal(out.cnt, 1);
	assert_ptr_equal(iov[0].iov_base, call);
	assert_int_equal(out.len, 16);
	/* other chunks are placed into it */
	assert_int_equal(splice_rebuild(NULL, 0, p0_and_chunk, 2, &out), SPLICE_OK);
	flat = flatten(&out);
	assert_int_equal(out.len, 20);
	assert_memory_equal(flat, "XXXXCCCCddd\0aaaabbbb", 20);
	free(flat);
	/* an RDMA_NOMSG has no inline part to go with it */
	assert_int_equal(splice_rebuild(call, 4, p0, 1, &out), SPLICE_E_P0_INLINE);
	assert_int_equal(splice_rebuild(NULL, 0, p0_twice, 2, &out), SPLICE_E_ORDER);
}

static void test_rebuild_refused(void **state)
{
	(void)state;
	struct iovec iov[MAXIOV];
	struct splice_out out = { iov, MAXIOV, 0, 0 };
	uint8_t inl[16] = { 0 }, d[8] = { 0 };
	const struct splice_chunk unaligned[1] = { { 6, d, 4 } };
	const struct splice_chunk beyond[1] = { { 20, d, 4 } };
	const struct splice_chunk overlap[2] = { { 4, d, 5 }, { 8, d, 4 } };
	const struct splice_chunk unsorted[2] = { { 8, d, 4 }, { 4, d, 4 } };
	const struct splice_chunk huge[1] = { { 4, d, 0xfffffffeu } };
	const struct splice_chunk huge2[2] = { { 4, d, 0x7ffffff0u },
					       { 0x7ffffff4u, d, 0x80000000u } };

	assert_int_equal(splice_rebuild(inl, 16, unaligned, 1, &out), SPLICE_E_UNALIGNED);
	assert_int_equal(splice_rebuild(inl, 16, beyond, 1, &out), SPLICE_E_RANGE);
	assert_int_equal(splice_rebuild(inl, 16, overlap, 2, &out), SPLICE_E_ORDER);
	assert_int_equal(splice_rebuild(inl, 16, unsorted, 2, &out), SPLICE_E_ORDER);
	assert_int_equal(splice_rebuild(inl, 16, huge, 1, &out), SPLICE_E_OVERFLOW);
	assert_int_equal(splice_rebuild(inl, 16, huge2, 2, &out), SPLICE_E_OVERFLOW);
	/* 16 inline bytes around a chunk with pad: 4 iovecs, not 3 */
	const struct splice_chunk ok[1] = { { 8, d, 5 } };
	out.cap = 3;
	assert_int_equal(splice_rebuild(inl, 16, ok, 1, &out), SPLICE_E_IOV_FULL);
	out.cap = 4;
	assert_int_equal(splice_rebuild(inl, 16, ok, 1, &out), SPLICE_OK);
	out.cap = 0;
	assert_int_equal(splice_rebuild(inl, 16, NULL, 0, &out), SPLICE_E_IOV_FULL);
	assert_string_equal(splice_status_name(SPLICE_E_IOV_FULL), "iov_full");
	assert_string_equal(splice_status_name(SPLICE_E__COUNT), "?");
}

static void test_reduce(void **state)
{
	(void)state;
	struct iovec iov[MAXIOV];
	struct splice_out out = { iov, MAXIOV, 0, 0 };
	/* head | 5 bytes + 3 pad | middle | 8 bytes | tail */
	uint8_t msg[32] = "HHHHddddd\0\0\0MMMMeeeeeeeeTTTTTTTT", *flat;
	const struct splice_item items[2] = { { 4, 5 }, { 16, 8 } };
	uint32_t red[2];

	assert_int_equal(splice_reduce(msg, 32, items, 2, red, &out), SPLICE_OK);
	assert_int_equal(out.len, 16);
	assert_int_equal(out.cnt, 3);
	flat = flatten(&out);
	assert_memory_equal(flat, "HHHHMMMMTTTTTTTT", 16);
	free(flat);
	/* where each item goes back into the reduced stream */
	assert_int_equal(red[0], 4);
	assert_int_equal(red[1], 8);

	/* the item and its pad end the message: nothing inline after it */
	const struct splice_item last[1] = { { 24, 7 } };
	assert_int_equal(splice_reduce(msg, 32, last, 1, NULL, &out), SPLICE_OK);
	assert_int_equal(out.len, 24);
	assert_int_equal(out.cnt, 1);
	/* adjacent items leave no empty iovec */
	const struct splice_item adj[2] = { { 4, 8 }, { 12, 4 } };
	assert_int_equal(splice_reduce(msg, 32, adj, 2, red, &out), SPLICE_OK);
	assert_int_equal(out.cnt, 2);
	assert_int_equal(out.len, 20);
	assert_int_equal(red[1], 4);
	/* the whole message */
	const struct splice_item all[1] = { { 0, 32 } };
	assert_int_equal(splice_reduce(msg, 32, all, 1, red, &out), SPLICE_OK);
	assert_int_equal(out.cnt, 0);
	assert_int_equal(out.len, 0);
}

static void test_reduce_refused(void **state)
{
	(void)state;
	struct iovec iov[MAXIOV];
	struct splice_out out = { iov, MAXIOV, 0, 0 };
	uint8_t msg[32] = { 0 };
	const struct splice_item unaligned[1] = { { 6, 4 } };
	const struct splice_item overlap[2] = { { 4, 5 }, { 8, 4 } }; /* pad of the first */
	const struct splice_item pad_out[1] = { { 28, 5 } };
	const struct splice_item past[1] = { { 36, 0 } };
	const struct splice_item huge[1] = { { 4, 0xffffffffu } };
	const struct splice_item two[2] = { { 4, 4 }, { 16, 4 } };

	assert_int_equal(splice_reduce(msg, 32, unaligned, 1, NULL, &out), SPLICE_E_UNALIGNED);
	assert_int_equal(splice_reduce(msg, 32, overlap, 2, NULL, &out), SPLICE_E_ORDER);
	assert_int_equal(splice_reduce(msg, 32, pad_out, 1, NULL, &out), SPLICE_E_RANGE);
	assert_int_equal(splice_reduce(msg, 32, past, 1, NULL, &out), SPLICE_E_RANGE);
	assert_int_equal(splice_reduce(msg, 32, huge, 1, NULL, &out), SPLICE_E_RANGE);
	out.cap = 2;
	assert_int_equal(splice_reduce(msg, 32, two, 2, NULL, &out), SPLICE_E_IOV_FULL);
	out.cap = 3;
	assert_int_equal(splice_reduce(msg, 32, two, 2, NULL, &out), SPLICE_OK);
}

/*
 * A READ reply of 5001 bytes into a Write chunk of 4096 + 4096 + 4 (the
 * Linux client's pad segment): two RDMA Writes, no pad written, and the
 * lengths echoed are 4096, 905, 0, which is what the reply encoder writes.
 */
static void test_plan_write(void **state)
{
	(void)state;
	const struct rpcrdma_seg segs[3] = { { 0x20, 4096, 0x3000 },
					     { 0x21, 4096, 0x9000 },
					     { 0x22, 4, 0xa000 } };
	struct splice_step st[8];
	uint32_t seg_len[3];
	unsigned n = 99;

	assert_int_equal(splice_plan(segs, 3, 5001, 0, st, 8, &n, seg_len), SPLICE_OK);
	assert_int_equal(n, 2);
	assert_int_equal(st[0].seg, 0);
	assert_int_equal(st[0].handle, 0x20);
	assert_int_equal(st[0].remote_offset, 0x3000);
	assert_int_equal(st[0].local_offset, 0);
	assert_int_equal(st[0].len, 4096);
	assert_int_equal(st[1].seg, 1);
	assert_int_equal(st[1].handle, 0x21);
	assert_int_equal(st[1].remote_offset, 0x9000);
	assert_int_equal(st[1].local_offset, 4096);
	assert_int_equal(st[1].len, 905);
	assert_int_equal(seg_len[0], 4096);
	assert_int_equal(seg_len[1], 905);
	assert_int_equal(seg_len[2], 0);

	/* the reply encoder echoes the same lengths */
	const struct rpcrdma_chunk_desc wc = { 3, segs };
	const uint32_t used = 5001;
	const struct rpcrdma_reply_desc r = { .version = RPCRDMA_V1,
					      .xid = 1,
					      .credits = 1,
					      .proc = RPCRDMA_MSG,
					      .nwrites = 1,
					      .writes = &wc,
					      .write_used = &used };
	uint8_t buf[128];
	struct rpcrdma_hdr h;
	struct rpcrdma_limits lim;
	struct rpcrdma_seg s;
	ssize_t len = rpcrdma_encode_reply(buf, sizeof(buf), &r);
	rpcrdma_limits_default(&lim);
	assert_int_equal(rpcrdma_hdr_decode(&h, buf, (size_t)len, &lim), RPCRDMA_OK);
	for (uint32_t i = 0; i < 3; i++) {
		rpcrdma_chunk_seg(&h.write[0], i, &s);
		assert_int_equal(s.length, seg_len[i]);
	}

	/* an unused chunk: no step, lengths all 0 */
	assert_int_equal(splice_plan(segs, 3, 0, 0, st, 8, &n, seg_len), SPLICE_OK);
	assert_int_equal(n, 0);
	assert_int_equal(seg_len[0] + seg_len[1] + seg_len[2], 0);
	/* exactly full */
	assert_int_equal(splice_plan(segs, 3, 8196, 0, st, 8, &n, NULL), SPLICE_OK);
	assert_int_equal(n, 3);
}

static void test_plan_limits(void **state)
{
	(void)state;
	const struct rpcrdma_seg segs[3] = { { 1, 10000, 0x100000 },
					     { 2, 0, 0x200000 },
					     { 3, 100, 0x300000 } };
	struct splice_step st[8];
	unsigned n;

	/* a device limit splits a segment into several operations */
	assert_int_equal(splice_plan(segs, 3, 10050, 4096, st, 8, &n, NULL), SPLICE_OK);
	assert_int_equal(n, 4);
	assert_int_equal(st[1].remote_offset, 0x100000 + 4096);
	assert_int_equal(st[1].local_offset, 4096);
	assert_int_equal(st[2].len, 10000 - 8192);
	/* the zero-length segment gets no step */
	assert_int_equal(st[3].seg, 2);
	assert_int_equal(st[3].handle, 3);
	assert_int_equal(st[3].len, 50);
	assert_int_equal(st[3].local_offset, 10000);
	/* too small a chunk, too few steps */
	assert_int_equal(splice_plan(segs, 3, 10101, 0, st, 8, &n, NULL), SPLICE_E_CHUNK_SMALL);
	assert_int_equal(splice_plan(segs, 3, 1, 0, st, 8, &n, NULL), SPLICE_OK);
	assert_int_equal(splice_plan(NULL, 0, 1, 0, st, 8, &n, NULL), SPLICE_E_CHUNK_SMALL);
	assert_int_equal(splice_plan(segs, 3, 10050, 4096, st, 3, &n, NULL), SPLICE_E_STEPS_FULL);
}

static void test_rebuild_reply(void **state)
{
	(void)state;
	struct iovec iov[MAXIOV];
	struct splice_out out = { iov, MAXIOV, 0, 0 };
	uint8_t inl[12] = "RRRRLLLLTTTT", d[6] = "dddddd", e[1] = "e", *flat;
	const struct splice_insert one[1] = { { 8, d, 6 } };
	const struct splice_insert two_same[2] = { { 8, d, 6 }, { 8, e, 1 } };

	assert_int_equal(splice_rebuild_reply(inl, 12, one, 1, &out), SPLICE_OK);
	flat = flatten(&out);
	assert_int_equal(out.len, 20);
	assert_memory_equal(flat, "RRRRLLLLdddddd\0\0TTTT", 20);
	free(flat);
	assert_int_equal(splice_rebuild_reply(inl, 12, two_same, 2, &out), SPLICE_OK);
	flat = flatten(&out);
	assert_int_equal(out.len, 24);
	assert_memory_equal(flat, "RRRRLLLLdddddd\0\0e\0\0\0TTTT", 24);
	free(flat);
	/* at the very end of the reduced reply */
	const struct splice_insert end[1] = { { 12, e, 1 } };
	assert_int_equal(splice_rebuild_reply(inl, 12, end, 1, &out), SPLICE_OK);
	assert_int_equal(out.len, 16);

	const struct splice_insert unaligned[1] = { { 6, d, 6 } };
	const struct splice_insert backwards[2] = { { 8, d, 6 }, { 4, e, 1 } };
	const struct splice_insert beyond[1] = { { 16, d, 6 } };
	assert_int_equal(splice_rebuild_reply(inl, 12, unaligned, 1, &out), SPLICE_E_UNALIGNED);
	assert_int_equal(splice_rebuild_reply(inl, 12, backwards, 2, &out), SPLICE_E_ORDER);
	assert_int_equal(splice_rebuild_reply(inl, 12, beyond, 1, &out), SPLICE_E_RANGE);
}

/* xorshift, so that the round trips below are the same on every run */
static uint32_t rnd(uint32_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 17;
	*s ^= *s << 5;
	return *s;
}

/*
 * Reduce random messages by random items and rebuild them both ways: as
 * a call (Read chunks at their positions) and as a reply (items at their
 * reduced offsets). Both give back the message, pads as zeros.
 */
static void test_roundtrip(void **state)
{
	(void)state;
	uint32_t seed = 0x12345678;

	for (int iter = 0; iter < 2000; iter++) {
		struct iovec iov[MAXIOV], iov2[MAXIOV];
		struct splice_out red = { iov, MAXIOV, 0, 0 }, back = { iov2, MAXIOV, 0, 0 };
		struct splice_item items[6];
		struct splice_chunk chunks[6];
		struct splice_insert ins[6];
		uint32_t roff[6], len = 0, n = rnd(&seed) % 6;
		uint8_t *msg = malloc(4096), *inl, *flat;

		/* build: inline words, then items of random length with zero pads */
		for (uint32_t i = 0; i < n; i++) {
			uint32_t gap = (rnd(&seed) % 5) * 4, ilen = rnd(&seed) % 40;
			for (uint32_t k = 0; k < gap; k++)
				msg[len++] = (uint8_t)rnd(&seed);
			items[i].offset = len;
			items[i].len = ilen;
			for (uint32_t k = 0; k < ilen; k++)
				msg[len++] = (uint8_t)rnd(&seed);
			for (uint32_t k = 0; k < xdr_pad(ilen); k++)
				msg[len++] = 0;
		}
		for (uint32_t k = 0, tail = (rnd(&seed) % 4) * 4; k < tail; k++)
			msg[len++] = (uint8_t)rnd(&seed);

		assert_int_equal(splice_reduce(msg, len, items, n, roff, &red), SPLICE_OK);
		inl = flatten(&red);
		for (uint32_t i = 0; i < n; i++) {
			chunks[i] = (struct splice_chunk){ items[i].offset, msg + items[i].offset,
							   items[i].len };
			ins[i] = (struct splice_insert){ roff[i], msg + items[i].offset,
							 items[i].len };
		}
		/* a chunk at position 0 would be a P0 chunk: not what a reduced call has */
		if (!(n > 0 && items[0].offset == 0)) {
			assert_int_equal(splice_rebuild(inl, red.len, chunks, n, &back), SPLICE_OK);
			assert_int_equal(back.len, len);
			flat = flatten(&back);
			assert_memory_equal(flat, msg, len);
			free(flat);
		}
		assert_int_equal(splice_rebuild_reply(inl, red.len, ins, n, &back), SPLICE_OK);
		assert_int_equal(back.len, len);
		flat = flatten(&back);
		assert_memory_equal(flat, msg, len);
		free(flat);
		free(inl);
		free(msg);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rebuild_plain),
		cmocka_unit_test(test_rebuild_chunk_then_inline),
		cmocka_unit_test(test_rebuild_two_chunks),
		cmocka_unit_test(test_rebuild_position_zero),
		cmocka_unit_test(test_rebuild_refused),
		cmocka_unit_test(test_reduce),
		cmocka_unit_test(test_reduce_refused),
		cmocka_unit_test(test_plan_write),
		cmocka_unit_test(test_plan_limits),
		cmocka_unit_test(test_rebuild_reply),
		cmocka_unit_test(test_roundtrip),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
