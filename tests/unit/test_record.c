/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of the RFC 5531 record-marking parser (tcp/record.c).
 *
 * A small driver plays the caller's part: it hands the parser buffers of a
 * chosen size (exactly that size on the heap, so ASan sees any overrun),
 * "reads" from an in-memory stream in chunks of a chosen size, and copies
 * out every record. The checks are on what came out, on the read windows
 * the parser asked for, and on what it moved.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "common/xdr.h"
#include "tcp/record.h"

#include "support/record.h"

#define MAX_RECS 4096
#define MAX_OVER 64

/* The caller's side of the parser. */
struct driver {
	struct rm_parser p;
	/* policy */
	size_t chunk;	  /* most bytes one read returns */
	uint32_t bufsize; /* size of a fresh buffer, at least what is asked */
	uint32_t bigsize; /* if set: the size of a buffer for what bufsize cannot take */
	/* the current buffer */
	uint8_t *buf;
	uint32_t size;
	/* results */
	unsigned int nrec;
	size_t rec_len[MAX_RECS];
	uint32_t rec_off[MAX_RECS];
	bool rec_ok[MAX_RECS];
	unsigned int reads;
	unsigned int switches;
	/* the first switches: bytes moved, and records delivered before */
	uint32_t switch_pending[64];
	unsigned int switch_nrec[64];
	uint32_t max_switch_pending;
	uint64_t switch_moved;
	/* the largest buffer asked for, and for an oversized record */
	uint32_t max_need;
	uint32_t max_skip_need;
	/* oversized records: their heads (checked against gwt_pattern()) and lengths */
	unsigned int nover;
	uint32_t over_head[MAX_OVER];
	uint64_t over_len[MAX_OVER];
	bool over_ok[MAX_OVER];
	/* records delivered before each */
	unsigned int over_nrec[MAX_OVER];
	enum rm_error err;
	bool eof_clean;
};

/* Records seen so far, delivered or skipped: the next one's pattern number. */
static unsigned int driver_seen(const struct driver *d)
{
	return d->nrec + d->nover;
}

static void driver_init(struct driver *d, uint32_t max_record, uint32_t readahead, size_t chunk,
			uint32_t bufsize)
{
	memset(d, 0, sizeof(*d));
	rm_init(&d->p, max_record, readahead);
	d->chunk = chunk;
	d->bufsize = bufsize;
}

static void driver_switch(struct driver *d, uint32_t need)
{
	uint32_t size = need > d->bufsize ? need : d->bufsize;

	if (need > d->bufsize && d->bigsize >= need)
		size = d->bigsize;
	uint8_t *nb = malloc(size);
	uint32_t pending = rm_pending(&d->p);

	assert_non_null(nb);
	assert_true(pending <= need);
	if (need > d->max_need)
		d->max_need = need;
	if (rm_skipping(&d->p) && need > d->max_skip_need)
		d->max_skip_need = need;
	assert_true(rm_set_buffer(&d->p, nb, size));
	if (d->switches < 64) {
		d->switch_pending[d->switches] = pending;
		d->switch_nrec[d->switches] = d->nrec;
	}
	d->switches++;
	d->switch_moved += pending;
	if (pending > d->max_switch_pending)
		d->max_switch_pending = pending;
	free(d->buf);
	d->buf = nb;
	d->size = size;
}

/*
 * Feed the whole stream; records are checked against gwt_pattern() as they
 * come (record r is expected to have length lens[r]).
 */
static void driver_run(struct driver *d, const struct gwt_stream *s, const size_t *lens)
{
	size_t in = 0;

	for (;;) {
		struct rm_span sp;
		enum rm_status st = rm_next(&d->p, &sp);

		switch (st) {
		case RM_RECORD: {
			bool ok = true;

			assert_true(d->nrec < MAX_RECS);
			assert_true((uint64_t)sp.off + sp.len <= d->size);
			if (lens)
				ok = sp.len == lens[driver_seen(d)];
			for (uint32_t i = 0; ok && i < sp.len; i++)
				ok = d->buf[sp.off + i] == gwt_pattern(driver_seen(d), i);
			d->rec_ok[d->nrec] = ok;
			d->rec_off[d->nrec] = sp.off;
			d->rec_len[d->nrec++] = sp.len;
			break;
		}
		case RM_OVERSIZED: {
			bool ok = true;

			assert_true(d->nover < MAX_OVER);
			assert_true(rm_skipping(&d->p));
			assert_true((uint64_t)sp.off + sp.len <= d->size);
			for (uint32_t i = 0; ok && i < sp.len; i++)
				ok = d->buf[sp.off + i] == gwt_pattern(driver_seen(d), i);
			d->over_ok[d->nover] = ok;
			d->over_head[d->nover] = sp.len;
			d->over_len[d->nover] = rm_oversized_len(&d->p);
			d->over_nrec[d->nover++] = d->nrec;
			break;
		}
		case RM_NEED_BUFFER:
			driver_switch(d, sp.len);
			break;
		case RM_NEED_INPUT: {
			size_t n = sp.len;

			assert_true(sp.len > 0);
			assert_true((uint64_t)sp.off + sp.len <= d->size);
			if (in == s->len) {
				d->err = rm_eof(&d->p);
				d->eof_clean = d->err == RM_OK;
				return;
			}
			if (n > d->chunk)
				n = d->chunk;
			if (n > s->len - in)
				n = s->len - in;
			memcpy(d->buf + sp.off, s->data + in, n);
			rm_filled(&d->p, (uint32_t)n);
			in += n;
			d->reads++;
			break;
		}
		case RM_ERROR:
			d->err = rm_error(&d->p);
			assert_int_not_equal(d->err, RM_OK);
			return;
		}
	}
}

static void driver_done(struct driver *d)
{
	free(d->buf);
	d->buf = NULL;
}

static void assert_records_ok(const struct driver *d, unsigned int n)
{
	assert_int_equal(d->nrec, n);
	for (unsigned int i = 0; i < n; i++)
		assert_true(d->rec_ok[i]);
}

/* ------------------------------------------------------------------ */

static void test_encode_mark(void **state)
{
	(void)state;
	uint8_t m[4];

	rm_encode_mark(m, 0x1234, true);
	assert_int_equal(xdr_get32(m), 0x80001234u);
	rm_encode_mark(m, RM_LEN_MASK, false);
	assert_int_equal(xdr_get32(m), 0x7fffffffu);
	rm_encode_mark(m, 0, true);
	assert_int_equal(xdr_get32(m), 0x80000000u);
}

static void test_single_fragment(void **state)
{
	(void)state;
	struct gwt_stream s = { 0 };
	struct driver d;
	size_t lens[] = { 100 };

	gwt_stream_record(&s, 0, 100, 0);
	driver_init(&d, 1024, 64, SIZE_MAX, 4096);
	driver_run(&d, &s, lens);
	assert_records_ok(&d, 1);
	/* the payload sits right behind its mark at the start of the buffer */
	assert_int_equal(d.rec_off[0], 4);
	assert_true(d.eof_clean);
	assert_int_equal(rm_moved(&d.p), 0);
	driver_done(&d);
	free(s.data);
}

static void test_multi_fragment_is_contiguous(void **state)
{
	(void)state;
	struct gwt_stream s = { 0 };
	struct driver d;
	size_t lens[] = { 1000, 10 };

	/* fragments of 300 (the last of 100), then ten of 1: marks at odd offsets */
	gwt_stream_record(&s, 0, 1000, 300);
	gwt_stream_record(&s, 1, 10, 1);
	driver_init(&d, 4096, 64, SIZE_MAX, 256);
	driver_run(&d, &s, lens);
	assert_records_ok(&d, 2);
	assert_true(d.eof_clean);
	/* a multi-fragment record gets a buffer for the largest record at once */
	assert_true(d.size >= 4096 + RM_BUF_SLACK);
	/* squeezing out marks moves each payload byte at most once */
	assert_true(rm_moved(&d.p) - d.switch_moved <= 1000 + 10);
	driver_done(&d);
	free(s.data);
}

static void test_final_empty_fragment(void **state)
{
	(void)state;
	struct gwt_stream s = { 0 };
	struct driver d;
	size_t lens[] = { 5 };
	uint8_t body[5];

	for (int i = 0; i < 5; i++)
		body[i] = gwt_pattern(0, (size_t)i);
	/* a record may end with an empty last fragment */
	gwt_stream_mark(&s, 5, false);
	gwt_stream_put(&s, body, 5);
	gwt_stream_mark(&s, 0, true);
	driver_init(&d, 64, 0, SIZE_MAX, 16);
	driver_run(&d, &s, lens);
	assert_records_ok(&d, 1);
	assert_true(d.eof_clean);
	driver_done(&d);
	free(s.data);
}

static void expect_error(const struct gwt_stream *s, uint32_t max_record, enum rm_error want,
			 unsigned int records_before)
{
	struct driver d;

	driver_init(&d, max_record, 16, SIZE_MAX, 64);
	driver_run(&d, s, NULL);
	assert_int_equal(d.err, want);
	assert_int_equal(d.nrec, records_before);
	/* errors stick */
	struct rm_span sp;
	assert_int_equal(rm_next(&d.p, &sp), RM_ERROR);
	assert_int_equal(rm_error(&d.p), want);
	driver_done(&d);
}

static void test_error_fragment_too_large(void **state)
{
	(void)state;
	struct gwt_stream s = { 0 };

	gwt_stream_record(&s, 0, 10, 0);
	gwt_stream_mark(&s, 101, true);
	gwt_stream_put(&s, "x", 1);
	expect_error(&s, 100, RM_ERR_FRAGMENT_TOO_LARGE, 1);
	/* also as a continuation fragment, and even if it is not the last */
	s.len = 0;
	gwt_stream_mark(&s, 10, false);
	gwt_stream_put(&s, "0123456789", 10);
	gwt_stream_mark(&s, 101, false);
	expect_error(&s, 100, RM_ERR_FRAGMENT_TOO_LARGE, 0);
	/* the largest length a mark can carry */
	s.len = 0;
	gwt_stream_mark(&s, RM_LEN_MASK, true);
	expect_error(&s, 100, RM_ERR_FRAGMENT_TOO_LARGE, 0);
	free(s.data);
}

static void test_error_record_too_large(void **state)
{
	(void)state;
	struct gwt_stream s = { 0 };

	/* three fragments of 40: each fits, together they do not */
	gwt_stream_record(&s, 0, 120, 40);
	expect_error(&s, 100, RM_ERR_RECORD_TOO_LARGE, 0);
	free(s.data);
}

static void test_error_empty_fragment(void **state)
{
	(void)state;
	struct gwt_stream s = { 0 };

	gwt_stream_mark(&s, 0, false);
	expect_error(&s, 100, RM_ERR_EMPTY_FRAGMENT, 0);
	/* in the middle of a record too */
	s.len = 0;
	gwt_stream_record(&s, 0, 3, 0);
	gwt_stream_mark(&s, 2, false);
	gwt_stream_put(&s, "ab", 2);
	gwt_stream_mark(&s, 0, false);
	gwt_stream_mark(&s, 0, false);
	expect_error(&s, 100, RM_ERR_EMPTY_FRAGMENT, 1);
	free(s.data);
}

static void test_error_empty_record(void **state)
{
	(void)state;
	struct gwt_stream s = { 0 };

	gwt_stream_record(&s, 0, 8, 0);
	gwt_stream_mark(&s, 0, true);
	expect_error(&s, 100, RM_ERR_EMPTY_RECORD, 1);
	free(s.data);
}

static void test_error_truncated(void **state)
{
	(void)state;
	struct gwt_stream s = { 0 };
	struct driver d;

	/* cut inside a mark, inside a body, and right after a non-last fragment */
	gwt_stream_record(&s, 0, 20, 0);
	size_t whole = s.len;
	gwt_stream_record(&s, 1, 50, 25);
	const size_t cuts[] = { whole + 2, whole + 4 + 10, whole + 4 + 25 };
	for (unsigned int i = 0; i < 3; i++) {
		struct gwt_stream t = { .data = s.data, .len = cuts[i] };
		driver_init(&d, 100, 8, SIZE_MAX, 64);
		driver_run(&d, &t, NULL);
		assert_int_equal(d.nrec, 1);
		assert_int_equal(d.err, RM_ERR_TRUNCATED);
		assert_false(d.eof_clean);
		driver_done(&d);
	}
	/* but a stream that ends between records is fine */
	struct gwt_stream t = { .data = s.data, .len = whole };
	driver_init(&d, 100, 8, SIZE_MAX, 64);
	driver_run(&d, &t, NULL);
	assert_true(d.eof_clean);
	driver_done(&d);
	free(s.data);
}

static void test_error_names(void **state)
{
	(void)state;
	/* every reason has its own name, usable as a counter label */
	for (int i = 0; i < RM_ERR_COUNT; i++) {
		assert_non_null(rm_error_name((enum rm_error)i));
		for (int j = 0; j < i; j++)
			assert_string_not_equal(rm_error_name((enum rm_error)i),
						rm_error_name((enum rm_error)j));
	}
	assert_string_equal(rm_error_name(RM_ERR_COUNT), "unknown");
}

/* Mixed records, fed one byte per read: every state boundary gets split. */
static void test_byte_at_a_time(void **state)
{
	(void)state;
	struct gwt_stream s = { 0 };
	struct driver d;
	size_t lens[8];
	const size_t frag[8] = { 0, 3, 0, 1, 0, 50, 0, 7 };

	for (unsigned int r = 0; r < 8; r++) {
		lens[r] = 1 + r * 37;
		gwt_stream_record(&s, r, lens[r], frag[r]);
	}
	driver_init(&d, 512, 16, 1, 64);
	driver_run(&d, &s, lens);
	assert_records_ok(&d, 8);
	assert_true(d.eof_clean);
	assert_int_equal(d.reads, s.len);
	driver_done(&d);
	free(s.data);
}

static void test_several_records_in_one_read(void **state)
{
	(void)state;
	struct gwt_stream s = { 0 };
	struct driver d;
	size_t lens[5] = { 10, 20, 30, 40, 50 };

	for (unsigned int r = 0; r < 5; r++)
		gwt_stream_record(&s, r, lens[r], 0);
	/* read-ahead large enough for the lot: one read brings all records */
	driver_init(&d, 1024, 1024, SIZE_MAX, 4096);
	driver_run(&d, &s, lens);
	assert_records_ok(&d, 5);
	assert_int_equal(d.reads, 1);
	assert_int_equal(d.switches, 1);
	/* pipelined records follow each other in the one buffer */
	for (unsigned int r = 1; r < 5; r++)
		assert_int_equal(d.rec_off[r], d.rec_off[r - 1] + lens[r - 1] + 4);
	driver_done(&d);
	free(s.data);
}

static void test_max_sizes(void **state)
{
	(void)state;
	struct gwt_stream s = { 0 };
	struct driver d;
	const uint32_t max = 3000;
	size_t lens[3] = { max, max, max };

	gwt_stream_record(&s, 0, max, 0);
	gwt_stream_record(&s, 1, max, 1000);
	/* a full-size record followed by an empty last fragment */
	gwt_stream_record(&s, 2, max, max);
	s.data[s.len - max - 4] &= 0x7f; /* clear the last-fragment bit */
	gwt_stream_mark(&s, 0, true);
	driver_init(&d, max, 100, 700, 512);
	driver_run(&d, &s, lens);
	assert_records_ok(&d, 3);
	assert_true(d.eof_clean);
	driver_done(&d);

	/* one byte more is refused, single or multi-fragment */
	s.len = 0;
	gwt_stream_record(&s, 0, max + 1, 0);
	expect_error(&s, max, RM_ERR_FRAGMENT_TOO_LARGE, 0);
	s.len = 0;
	gwt_stream_record(&s, 0, max + 1, max);
	expect_error(&s, max, RM_ERR_RECORD_TOO_LARGE, 0);
	free(s.data);
}

/*
 * The read windows: what the mark or fragment lacks, plus the read-ahead,
 * and never more.
 */
static void test_read_window(void **state)
{
	(void)state;
	struct rm_parser p;
	struct rm_span sp;
	uint8_t *buf = malloc(2000);

	rm_init(&p, 1500, 8);
	/* no buffer yet: the parser asks for one */
	assert_int_equal(rm_next(&p, &sp), RM_NEED_BUFFER);
	assert_int_equal(sp.len, 4);
	/* a buffer too small for a mark is refused */
	assert_false(rm_set_buffer(&p, buf, 3));
	assert_true(rm_set_buffer(&p, buf, 2000));
	assert_int_equal(rm_next(&p, &sp), RM_NEED_INPUT);
	assert_int_equal(sp.off, 0);
	assert_int_equal(sp.len, 4 + 8);
	/* two bytes of the mark arrive */
	rm_encode_mark(buf, 1000, true);
	rm_filled(&p, 2);
	assert_int_equal(rm_next(&p, &sp), RM_NEED_INPUT);
	assert_int_equal(sp.off, 2);
	assert_int_equal(sp.len, 2 + 8);
	/* the rest of the mark and 8 bytes of body */
	rm_filled(&p, 10);
	assert_int_equal(rm_next(&p, &sp), RM_NEED_INPUT);
	assert_int_equal(sp.off, 12);
	assert_int_equal(sp.len, 992 + 8);
	/* the body; the read-ahead is cut at the end of the buffer */
	rm_filled(&p, 992);
	assert_int_equal(rm_next(&p, &sp), RM_RECORD);
	assert_int_equal(sp.off, 4);
	assert_int_equal(sp.len, 1000);
	assert_int_equal(rm_pending(&p), 0);
	assert_int_equal(rm_next(&p, &sp), RM_NEED_INPUT);
	assert_int_equal(sp.off, 1004);
	assert_int_equal(sp.len, 12);
	/* letting go of the buffer while nothing is pending */
	assert_true(rm_set_buffer(&p, NULL, 0));
	assert_int_equal(rm_next(&p, &sp), RM_NEED_BUFFER);
	assert_int_equal(rm_eof(&p), RM_OK);
	free(buf);
}

/* Without read-ahead, reads stop exactly at each mark and body. */
static void test_no_readahead(void **state)
{
	(void)state;
	struct gwt_stream s = { 0 };
	struct driver d;
	size_t lens[3] = { 10, 20, 30 };

	for (unsigned int r = 0; r < 3; r++)
		gwt_stream_record(&s, r, lens[r], 0);
	driver_init(&d, 100, 0, SIZE_MAX, 4096);
	driver_run(&d, &s, lens);
	assert_records_ok(&d, 3);
	assert_int_equal(d.reads, 6);
	driver_done(&d);
	free(s.data);
}

/*
 * A large record that turns up in a small buffer moves to a large one
 * with only its mark and the read-ahead; its bulk is read in place.
 */
static void test_switch_moves_little(void **state)
{
	(void)state;
	struct gwt_stream s = { 0 };
	struct driver d;
	size_t lens[40];
	unsigned int n = 0;
	const uint32_t ra = 32;

	for (; n < 30; n++) {
		lens[n] = 1 + (n * 13) % 90;
		gwt_stream_record(&s, n, lens[n], 0);
	}
	lens[n] = 100000;
	gwt_stream_record(&s, n, lens[n], 0);
	n++;
	for (; n < 40; n++) {
		lens[n] = 1 + (n * 29) % 200;
		gwt_stream_record(&s, n, lens[n], 0);
	}
	driver_init(&d, 200000, ra, SIZE_MAX, 256);
	driver_run(&d, &s, lens);
	assert_records_ok(&d, 40);
	assert_true(d.switches > 2);
	assert_true(d.max_switch_pending <= rm_move_bound(&d.p));
	/* single-fragment records: nothing moves but at switches */
	assert_int_equal(rm_moved(&d.p), d.switch_moved);
	assert_true(rm_moved(&d.p) <= (uint64_t)d.switches * rm_move_bound(&d.p));
	driver_done(&d);
	free(s.data);
}

/* The same bound holds however the input is cut. */
static void test_move_bound_any_chunking(void **state)
{
	(void)state;
	struct gwt_stream s = { 0 };
	size_t lens[64];
	uint32_t seed = 12345;

	for (unsigned int r = 0; r < 64; r++) {
		seed = seed * 1103515245u + 12345u;
		lens[r] = 1 + (seed >> 8) % (r % 8 == 0 ? 20000 : 300);
		gwt_stream_record(&s, r, lens[r], 0);
	}
	const size_t chunks[] = { 1, 3, 17, 100, 1000, 70000 };
	const uint32_t ras[] = { 0, 4, 61, 500 };
	for (unsigned int c = 0; c < 6; c++) {
		for (unsigned int a = 0; a < 4; a++) {
			struct driver d;
			driver_init(&d, 20000, ras[a], chunks[c], 512);
			driver_run(&d, &s, lens);
			assert_records_ok(&d, 64);
			assert_true(d.eof_clean);
			assert_true(d.max_switch_pending <= rm_move_bound(&d.p));
			assert_int_equal(rm_moved(&d.p), d.switch_moved);
			driver_done(&d);
		}
	}
	free(s.data);
}

/*
 * Pipelined small records, all queued at once: the read-ahead grows while
 * reads come back full, so they are taken many to a read rather than a
 * read-ahead's worth (5 here) at a time; nothing moves in a buffer they
 * fit in.
 */
static void test_readahead_grows_for_pipelined(void **state)
{
	(void)state;
	struct gwt_stream s = { 0 };
	struct driver d;
	size_t lens[256];
	const unsigned int n = 256;

	for (unsigned int r = 0; r < n; r++) {
		lens[r] = 200;
		gwt_stream_record(&s, r, lens[r], 0);
	}
	driver_init(&d, 1u << 20, 1024, SIZE_MAX, 1u << 20);
	rm_set_readahead_max(&d.p, 65536);
	assert_int_equal(rm_move_bound(&d.p), 4 + 65536);
	driver_run(&d, &s, lens);
	assert_records_ok(&d, n);
	assert_true(d.eof_clean);
	/* 52 KB: 1 KiB, then 2, 4, 8, 16, 32 KiB and the rest (a fixed 1 KiB: 43 reads) */
	assert_true(d.reads <= 8);
	assert_int_equal(rm_moved(&d.p), 0);
	/* the last read (at 32 KiB) was short: the socket ran dry, and the read-ahead halved */
	assert_int_equal(rm_readahead(&d.p), 16384);
	driver_done(&d);

	/* Without a maximum the read-ahead stays as configured. */
	driver_init(&d, 1u << 20, 1024, SIZE_MAX, 1u << 20);
	driver_run(&d, &s, NULL);
	/* each read: the rest of a record and 1 KiB */
	assert_true(d.reads >= 40);
	assert_int_equal(rm_readahead(&d.p), 1024);
	driver_done(&d);
	free(s.data);
}

/*
 * The size hint: after a record that the largest read-ahead takes with the
 * configured one beyond it, rm_size_hint() is its mark and payload, and
 * the read that begins the next record asks for that and the configured
 * read-ahead, even in an empty buffer; after a larger record, or with a
 * fixed read-ahead, there is none. The move bound holds with it, however
 * the input is cut and whatever the buffers' size.
 */
static void test_size_hint(void **state)
{
	(void)state;
	struct gwt_stream s = { 0 };
	struct driver d;
	struct rm_span sp;

	gwt_stream_record(&s, 0, 4300, 0);
	gwt_stream_record(&s, 1, 70000, 0);
	gwt_stream_record(&s, 2, 64000, 0);
	gwt_stream_record(&s, 3, 100, 0);
	size_t lens[] = { 4300, 70000, 64000, 100 };
	driver_init(&d, 1u << 20, 1024, SIZE_MAX, 1u << 20);
	rm_set_readahead_max(&d.p, 65536);
	assert_int_equal(rm_size_hint(&d.p), 0);
	struct gwt_stream one = { .data = s.data, .len = 4 + 4300 };
	driver_run(&d, &one, lens);
	assert_int_equal(d.nrec, 1);
	assert_int_equal(rm_size_hint(&d.p), 4304);
	/* the buffer let go of, as an owner does between records */
	assert_true(rm_set_buffer(&d.p, NULL, 0));
	assert_int_equal(rm_next(&d.p, &sp), RM_NEED_BUFFER);
	driver_switch(&d, 4304);
	assert_int_equal(rm_next(&d.p, &sp), RM_NEED_INPUT);
	assert_int_equal(sp.len, 4304 + 1024);
	driver_done(&d);

	/* one large record (70 KB + 1 KiB is past 64 KiB): no hint after it */
	driver_init(&d, 1u << 20, 1024, SIZE_MAX, 1u << 20);
	rm_set_readahead_max(&d.p, 65536);
	driver_run(&d, &s, lens);
	assert_records_ok(&d, 4);
	assert_int_equal(rm_size_hint(&d.p), 104);
	assert_true(d.max_switch_pending <= rm_move_bound(&d.p));
	driver_done(&d);

	/* a fixed read-ahead: none */
	driver_init(&d, 1u << 20, 1024, SIZE_MAX, 1u << 20);
	driver_run(&d, &one, lens);
	assert_int_equal(rm_size_hint(&d.p), 0);
	driver_done(&d);

	/* the bound, cut every way, small buffers */
	const size_t chunks[] = { 1, 7, 1000, 5000, SIZE_MAX };
	for (unsigned int c = 0; c < sizeof(chunks) / sizeof(chunks[0]); c++) {
		driver_init(&d, 1u << 20, 1024, chunks[c], 4096);
		rm_set_readahead_max(&d.p, 65536);
		driver_run(&d, &s, lens);
		assert_records_ok(&d, 4);
		assert_true(d.eof_clean);
		assert_true(d.max_switch_pending <= rm_move_bound(&d.p));
		driver_done(&d);
	}
	free(s.data);
}

/* Reads that come back short (the socket holds little at a time) do not grow it. */
static void test_readahead_short_reads_keep_it(void **state)
{
	(void)state;
	struct gwt_stream s = { 0 };
	struct driver d;

	for (unsigned int r = 0; r < 100; r++)
		gwt_stream_record(&s, r, 100, 0);
	driver_init(&d, 1u << 20, 1024, 300, 1u << 20);
	rm_set_readahead_max(&d.p, 65536);
	driver_run(&d, &s, NULL);
	assert_records_ok(&d, 100);
	assert_int_equal(rm_readahead(&d.p), 1024);
	driver_done(&d);
	free(s.data);
}

/*
 * A grown read-ahead does not turn into moved bulk: large records each
 * need a buffer of their own, and the head of one that a read brings in
 * moves with its mark. After a run of small records the first large one
 * can have at most the grown read-ahead moved; its mark sets the
 * read-ahead back, so every later large record moves no more than with a
 * fixed read-ahead (mark + 1 KiB), however much the socket holds; and
 * reads inside a large record do not grow it again.
 */
static void test_readahead_large_records_move_little(void **state)
{
	(void)state;
	struct gwt_stream s = { 0 };
	struct driver d;
	size_t lens[96];
	unsigned int n = 0, first_large = 0;
	const uint32_t ra = 1024, ra_max = 65536;

	/* 4 KiB WRITEs, say: each too large for a small buffer */
	for (; n < 64; n++) {
		lens[n] = 5000;
		gwt_stream_record(&s, n, lens[n], 0);
	}
	first_large = n;
	for (; n < 80; n++) {
		lens[n] = 100000 + n;
		gwt_stream_record(&s, n, lens[n], 0);
	}
	for (; n < 88; n++) {
		lens[n] = n % 2 ? 150 : 300000;
		gwt_stream_record(&s, n, lens[n], 0);
	}
	/* multi-fragment ones: full reads inside a record do not grow it either */
	for (; n < 96; n++) {
		lens[n] = 100000;
		gwt_stream_record(&s, n, lens[n], 5000);
	}
	/* the pool's two classes: records that fit share a large buffer */
	driver_init(&d, 1u << 20, ra, SIZE_MAX, 4096);
	d.bigsize = (1u << 20) + (256u << 10);
	rm_set_readahead_max(&d.p, ra_max);
	driver_run(&d, &s, lens);
	assert_records_ok(&d, n);
	assert_true(d.eof_clean);
	assert_true(d.switches >= 5 && d.switches < 64);
	for (unsigned int i = 0; i < d.switches; i++) {
		/* the small records' buffers: a record's worth at most */
		if (d.switch_nrec[i] < first_large)
			assert_true(d.switch_pending[i] <= 5004);
		else if (d.switch_nrec[i] == first_large)
			assert_true(d.switch_pending[i] <= 4 + ra_max);
		else
			assert_true(d.switch_pending[i] <= 4 + ra);
	}
	driver_done(&d);
	free(s.data);
}

/* Sliding the pending bytes to the start of the same buffer. */
static void test_rebase_same_buffer(void **state)
{
	(void)state;
	struct rm_parser p;
	struct rm_span sp;
	uint8_t buf[64];

	rm_init(&p, 100, 20);
	assert_true(rm_set_buffer(&p, buf, sizeof(buf)));
	assert_int_equal(rm_next(&p, &sp), RM_NEED_INPUT);
	assert_int_equal(sp.len, 24);
	/* a 10-byte record, then 10 bytes of a 30-byte one */
	rm_encode_mark(buf, 10, true);
	memset(buf + 4, 'a', 10);
	rm_encode_mark(buf + 14, 30, true);
	memset(buf + 18, 'b', 6);
	rm_filled(&p, 24);
	assert_int_equal(rm_next(&p, &sp), RM_RECORD);
	assert_int_equal(sp.len, 10);
	/* 14 + 4 + 30 fits in 64: keep reading here */
	assert_int_equal(rm_next(&p, &sp), RM_NEED_INPUT);
	assert_int_equal(sp.off, 24);
	assert_int_equal(rm_pending(&p), 10);
	/* the owner may slide the record to the front at any time */
	assert_true(rm_set_buffer(&p, buf, sizeof(buf)));
	assert_int_equal(rm_pending(&p), 10);
	assert_int_equal(rm_next(&p, &sp), RM_NEED_INPUT);
	assert_int_equal(sp.off, 10);
	memset(buf + 10, 'b', 24);
	rm_filled(&p, 24);
	assert_int_equal(rm_next(&p, &sp), RM_RECORD);
	assert_int_equal(sp.off, 4);
	assert_int_equal(sp.len, 30);
	for (int i = 0; i < 30; i++)
		assert_int_equal(buf[4 + i], 'b');
	/* a buffer smaller than the record needs is refused */
	rm_encode_mark(buf + 34, 60, true);
	rm_filled(&p, 4);
	assert_int_equal(rm_next(&p, &sp), RM_NEED_BUFFER);
	assert_int_equal(sp.len, 64);
	assert_false(rm_set_buffer(&p, buf, 63));
	assert_true(rm_set_buffer(&p, buf, 64));
	assert_int_equal(rm_next(&p, &sp), RM_NEED_INPUT);
	assert_int_equal(sp.off, 4);
	assert_int_equal(sp.len, 60);
}

/*
 * A simple reference: decode the whole stream at once. Returns the number
 * of records (lengths in lens) and the error the stream ends with.
 */
static unsigned int ref_decode(const uint8_t *in, size_t n, uint32_t max, size_t *lens,
			       enum rm_error *err)
{
	size_t pos = 0;
	unsigned int nrec = 0;
	uint64_t cur = 0;
	bool inrec = false;

	*err = RM_OK;
	while (pos < n) {
		if (n - pos < 4) {
			*err = RM_ERR_TRUNCATED;
			return nrec;
		}
		uint32_t m = xdr_get32(in + pos);
		uint32_t len = m & RM_LEN_MASK;
		bool last = m & RM_LAST_FRAG;
		pos += 4;
		if (len > max) {
			*err = RM_ERR_FRAGMENT_TOO_LARGE;
			return nrec;
		}
		if (cur + len > max) {
			*err = RM_ERR_RECORD_TOO_LARGE;
			return nrec;
		}
		if (len == 0 && !last) {
			*err = RM_ERR_EMPTY_FRAGMENT;
			return nrec;
		}
		if (len == 0 && !inrec) {
			*err = RM_ERR_EMPTY_RECORD;
			return nrec;
		}
		if (n - pos < len) {
			*err = RM_ERR_TRUNCATED;
			return nrec;
		}
		pos += len;
		cur += len;
		inrec = true;
		if (last) {
			lens[nrec++] = (size_t)cur;
			cur = 0;
			inrec = false;
		}
	}
	if (inrec)
		*err = RM_ERR_TRUNCATED;
	return nrec;
}

/* Random streams, valid and not, against the reference. */
static void test_random_against_reference(void **state)
{
	(void)state;
	uint32_t seed = 99;

	for (unsigned int round = 0; round < 300; round++) {
		struct gwt_stream s = { 0 };
		unsigned int nrec = 1 + round % 12;

		for (unsigned int r = 0; r < nrec; r++) {
			seed = seed * 1103515245u + 12345u;
			size_t len = 1 + (seed >> 10) % 700;
			size_t frag = (seed >> 4) % 4 == 0 ? 1 + (seed >> 20) % 200 : 0;
			gwt_stream_record(&s, r, len, frag);
		}
		/* now and then, spoil a byte or cut the stream */
		seed = seed * 1103515245u + 12345u;
		if (seed % 3 == 0)
			s.data[(seed >> 8) % s.len] ^= (uint8_t)(1u << ((seed >> 4) % 8));
		if (seed % 5 == 0)
			s.len -= (seed >> 12) % (s.len / 2 + 1);

		static size_t want[MAX_RECS];
		enum rm_error want_err;
		uint32_t max = 400 + round;
		unsigned int n = ref_decode(s.data, s.len, max, want, &want_err);

		struct driver d;
		driver_init(&d, max, round % 70, 1 + (round * 7) % 300, 32 + round % 500);
		driver_run(&d, &s, NULL);
		assert_int_equal(d.nrec, n);
		for (unsigned int i = 0; i < n; i++)
			assert_int_equal(d.rec_len[i], want[i]);
		assert_int_equal(d.err, want_err);
		driver_done(&d);
		free(s.data);
	}
}

/* ---- oversized records skipped (rm_set_skip_oversized()) ----------- */

/*
 * A stream of n records of lens[] bytes (fragments of frag[] bytes, 0 for
 * one), driven with skipping on; records over max are expected skipped,
 * the others delivered intact.
 */
static void run_skip(struct driver *d, struct gwt_stream *s, const size_t *lens, const size_t *frag,
		     unsigned int n, uint32_t max, uint32_t ra, size_t chunk, uint32_t bufsize,
		     uint32_t head)
{
	s->len = 0;
	for (unsigned int r = 0; r < n; r++)
		gwt_stream_record(s, r, lens[r], frag ? frag[r] : 0);
	driver_init(d, max, ra, chunk, bufsize);
	rm_set_skip_oversized(&d->p, head);
	driver_run(d, s, lens);
}

/* What came out of run_skip(): every record, delivered or skipped, in order. */
static void assert_skipped_ok(const struct driver *d, const size_t *lens, unsigned int n,
			      uint32_t max, uint32_t head)
{
	unsigned int nrec = 0, nover = 0;
	uint64_t skipped = 0;

	assert_int_equal(d->err, RM_OK);
	assert_true(d->eof_clean);
	assert_false(rm_skipping(&d->p));
	for (unsigned int r = 0; r < n; r++) {
		if (lens[r] <= max) {
			assert_true(nrec < d->nrec);
			assert_true(d->rec_ok[nrec]);
			assert_int_equal(d->rec_len[nrec], lens[r]);
			nrec++;
			continue;
		}
		assert_true(nover < d->nover);
		assert_int_equal(d->over_nrec[nover], nrec);
		assert_true(d->over_ok[nover]);
		/* the head is always whole */
		assert_int_equal(d->over_head[nover], head < max ? head : max);
		assert_true(d->over_len[nover] > max);
		assert_true(d->over_len[nover] <= lens[r]);
		skipped += lens[r];
		nover++;
	}
	assert_int_equal(d->nrec, nrec);
	assert_int_equal(d->nover, nover);
	assert_int_equal(rm_skipped(&d->p), skipped);
	/* while skipping, nothing larger than a record's buffer is asked for */
	assert_true(d->max_need <= max + RM_BUF_SLACK);
	assert_true(d->max_switch_pending <= rm_move_bound(&d->p));
}

static void test_skip_single_fragment(void **state)
{
	(void)state;
	struct gwt_stream s = { 0 };
	struct driver d;
	const size_t lens[] = { 50, 5000, 70, 1001, 1000 };

	run_skip(&d, &s, lens, NULL, 5, 1000, 64, SIZE_MAX, 256, 100);
	assert_skipped_ok(&d, lens, 5, 1000, 100);
	assert_int_equal(d.nrec, 3);
	assert_int_equal(d.nover, 2);
	/* one fragment: its whole length is announced at once */
	assert_int_equal(d.over_len[0], 5000);
	assert_int_equal(d.over_len[1], 1001);
	assert_int_equal(rm_oversized_len(&d.p), 1001);
	/* the skipped bytes went through a small region: no buffer for them */
	assert_true(d.max_skip_need <= 4 + 100 + 4 + 64);
	driver_done(&d);

	/* A 3 MiB record past a 1 MiB limit, in the gateway's sizes: 4 KiB buffers suffice. */
	const size_t big[] = { 200, 3u << 20, 200 };
	run_skip(&d, &s, big, NULL, 3, 1u << 20, 1024, 65536, 4096, RM_OVERSIZED_HEAD);
	assert_skipped_ok(&d, big, 3, 1u << 20, RM_OVERSIZED_HEAD);
	assert_true(d.max_need <= 4096);
	driver_done(&d);
	free(s.data);
}

static void test_skip_multi_fragment(void **state)
{
	(void)state;
	struct gwt_stream s = { 0 };
	struct driver d;
	/* 400-byte fragments: the third takes it past 1000 */
	const size_t lens[] = { 30, 3000, 40, 2000, 999 };
	const size_t frag[] = { 0, 400, 7, 1500, 333 };

	run_skip(&d, &s, lens, frag, 5, 1000, 32, SIZE_MAX, 128, 100);
	assert_skipped_ok(&d, lens, 5, 1000, 100);
	assert_int_equal(d.nover, 2);
	/* announced up to the fragment that took it over, then the whole record */
	assert_int_equal(d.over_len[0], 1200);
	/* a first fragment over the limit, though not the last */
	assert_int_equal(d.over_len[1], 1500);
	assert_int_equal(rm_oversized_len(&d.p), 2000);
	driver_done(&d);

	/* A head larger than the first fragments: gathered across their marks. */
	for (size_t chunk = 1; chunk < 1000; chunk = chunk * 3 + 1) {
		const size_t l2[] = { 3000, 5 };
		const size_t f2[] = { 150, 0 };

		run_skip(&d, &s, l2, f2, 2, 1000, 16, chunk, 64, 600);
		assert_skipped_ok(&d, l2, 2, 1000, 600);
		assert_int_equal(d.over_len[0], 1050);
		driver_done(&d);
	}
	free(s.data);
}

/* Every state boundary of a skip split by reads of one byte. */
static void test_skip_byte_at_a_time(void **state)
{
	(void)state;
	struct gwt_stream s = { 0 };
	struct driver d;
	const size_t lens[] = { 10, 300, 1, 200, 64, 65, 128 };
	const size_t frag[] = { 0, 0, 0, 7, 0, 0, 50 };

	run_skip(&d, &s, lens, frag, 7, 64, 8, 1, 32, 16);
	assert_skipped_ok(&d, lens, 7, 64, 16);
	assert_int_equal(d.nover, 4);
	/* every byte was asked for: the skip never stalls nor reads past its window */
	assert_int_equal(d.reads, s.len);
	driver_done(&d);
	free(s.data);
}

/* max_record is still a record; one byte more is skipped, single or multi-fragment. */
static void test_skip_exactly_max(void **state)
{
	(void)state;
	struct gwt_stream s = { 0 };
	struct driver d;
	const size_t lens[] = { 1000, 1000, 1001, 1001, 1000 };
	const size_t frag[] = { 0, 300, 0, 1000, 0 };

	run_skip(&d, &s, lens, frag, 5, 1000, 64, 333, 256, RM_OVERSIZED_HEAD);
	/* a head larger than max_record is max_record */
	assert_skipped_ok(&d, lens, 5, 1000, 1000);
	assert_int_equal(d.nrec, 3);
	assert_int_equal(d.nover, 2);
	assert_int_equal(d.over_len[0], 1001);
	/* 1000, then a fragment of 1: the head is the first 1000 */
	assert_int_equal(d.over_len[1], 1001);
	driver_done(&d);
	free(s.data);
}

/*
 * The head is always whole (head_max, or max_record when smaller), even
 * when the read that brought the oversized record's mark brought none of
 * its payload, or when the mark lies at the end of a full buffer: the
 * parser waits for the head's bytes, in a buffer with room for them.
 */
static void test_skip_head_after_short_read(void **state)
{
	(void)state;
	struct gwt_stream s = { 0 };
	struct driver d;
	struct rm_span sp;
	uint8_t *buf = malloc(64);

	rm_init(&d.p, 100, 14);
	rm_set_skip_oversized(&d.p, 40);
	assert_true(rm_set_buffer(&d.p, buf, 64));
	/* a record of 20, then the mark of one of 500, and nothing more yet */
	rm_encode_mark(buf, 20, true);
	memset(buf + 4, 'a', 20);
	rm_encode_mark(buf + 24, 500, true);
	assert_int_equal(rm_next(&d.p, &sp), RM_NEED_INPUT);
	rm_filled(&d.p, 18);
	assert_int_equal(rm_next(&d.p, &sp), RM_NEED_INPUT);
	rm_filled(&d.p, 10);
	assert_int_equal(rm_next(&d.p, &sp), RM_RECORD);
	/* 24 + 4 + 40 > 64: a buffer for the mark and the head, moving only the mark */
	assert_int_equal(rm_next(&d.p, &sp), RM_NEED_BUFFER);
	assert_int_equal(sp.len, 4 + 40);
	assert_int_equal(rm_pending(&d.p), 4);
	uint8_t *nb = malloc(sp.len);
	assert_true(rm_set_buffer(&d.p, nb, sp.len));
	free(buf);
	buf = nb;
	/* the head comes a few bytes at a time; no report before it is whole */
	for (int i = 0; i < 40; i += 8) {
		assert_int_equal(rm_next(&d.p, &sp), RM_NEED_INPUT);
		assert_int_equal(sp.off, 4 + i);
		memset(buf + sp.off, 'A' + i / 8, 8);
		rm_filled(&d.p, 8);
	}
	assert_int_equal(rm_next(&d.p, &sp), RM_OVERSIZED);
	assert_int_equal(sp.off, 4);
	assert_int_equal(sp.len, 40);
	assert_int_equal(buf[4], 'A');
	assert_int_equal(buf[43], 'E');
	assert_int_equal(rm_oversized_len(&d.p), 500);
	/* the rest lands behind the mark again, and is gone */
	assert_int_equal(rm_next(&d.p, &sp), RM_NEED_INPUT);
	assert_int_equal(sp.off, 4);
	assert_int_equal(sp.len, 40);
	rm_filled(&d.p, 40);
	assert_int_equal(rm_skipped(&d.p), 40);
	assert_int_equal(rm_next(&d.p, &sp), RM_NEED_INPUT);
	assert_int_equal(rm_skipped(&d.p), 80);
	assert_true(rm_skipping(&d.p));
	/* cut short inside the skipped record: truncated, as any record */
	assert_int_equal(rm_eof(&d.p), RM_ERR_TRUNCATED);
	free(buf);

	/* The same through the driver, for reads of every size. */
	for (size_t chunk = 1; chunk < 600; chunk += 37) {
		const size_t lens[] = { 10, 500, 20 };

		run_skip(&d, &s, lens, NULL, 3, 100, 0, chunk, 16, 40);
		assert_skipped_ok(&d, lens, 3, 100, 40);
		driver_done(&d);
	}
	free(s.data);
}

/* Without rm_set_skip_oversized(), the errors of old; with it, the others stay errors. */
static void test_skip_off_and_other_errors(void **state)
{
	(void)state;
	struct gwt_stream s = { 0 };
	struct driver d;
	const size_t lens[] = { 50, 5000, 70 };
	const size_t frag[] = { 0, 400, 0 };

	s.len = 0;
	for (unsigned int r = 0; r < 3; r++)
		gwt_stream_record(&s, r, lens[r], 0);
	expect_error(&s, 1000, RM_ERR_FRAGMENT_TOO_LARGE, 1);
	s.len = 0;
	for (unsigned int r = 0; r < 3; r++)
		gwt_stream_record(&s, r, lens[r], frag[r]);
	expect_error(&s, 1000, RM_ERR_RECORD_TOO_LARGE, 1);

	/* an empty non-last fragment inside a skipped record */
	s.len = 0;
	gwt_stream_record(&s, 0, 10, 0);
	gwt_stream_mark(&s, 200, false);
	for (int i = 0; i < 200; i++)
		gwt_stream_put(&s, "x", 1);
	gwt_stream_mark(&s, 0, false);
	gwt_stream_mark(&s, 0, true);
	driver_init(&d, 100, 16, SIZE_MAX, 64);
	rm_set_skip_oversized(&d.p, 20);
	driver_run(&d, &s, NULL);
	assert_int_equal(d.nrec, 1);
	assert_int_equal(d.nover, 1);
	assert_int_equal(d.err, RM_ERR_EMPTY_FRAGMENT);
	driver_done(&d);
	/* but an empty last fragment ends it as it ends a record */
	s.len -= 8;
	gwt_stream_mark(&s, 0, true);
	gwt_stream_record(&s, 2, 10, 0);
	driver_init(&d, 100, 16, SIZE_MAX, 64);
	rm_set_skip_oversized(&d.p, 20);
	driver_run(&d, &s, NULL);
	assert_int_equal(d.err, RM_OK);
	assert_int_equal(d.nrec, 2);
	assert_int_equal(d.nover, 1);
	assert_true(d.rec_ok[1]);
	assert_int_equal(rm_oversized_len(&d.p), 200);
	driver_done(&d);
	free(s.data);
}

/*
 * Oversized records among pipelined small ones and large ones, cut every
 * way, with a read-ahead that grows: the move bound holds, no buffer
 * larger than a record's is asked for, and the records around each skip
 * come out intact.
 */
static void test_skip_move_bound_any_chunking(void **state)
{
	(void)state;
	struct gwt_stream s = { 0 };
	size_t lens[80], frag[80];
	uint32_t seed = 4242;
	const uint32_t max = 20000;

	for (unsigned int r = 0; r < 80; r++) {
		seed = seed * 1103515245u + 12345u;
		lens[r] = 1 + (seed >> 8) % (r % 5 == 0 ? 60000 : r % 3 == 0 ? 20000 : 300);
		frag[r] = r % 7 == 0 ? 1 + (seed >> 4) % 9000 : 0;
	}
	s.len = 0;
	for (unsigned int r = 0; r < 80; r++)
		gwt_stream_record(&s, r, lens[r], frag[r]);
	const size_t chunks[] = { 1, 3, 17, 100, 1000, 70000 };
	const uint32_t ras[] = { 0, 4, 61, 500 };
	const uint32_t heads[] = { 0, 1, 1024 };
	for (unsigned int c = 0; c < 6; c++) {
		for (unsigned int a = 0; a < 4; a++) {
			struct driver d;
			uint32_t head = heads[(c + a) % 3];

			driver_init(&d, max, ras[a], chunks[c], 512);
			rm_set_readahead_max(&d.p, ras[a] * 16);
			rm_set_skip_oversized(&d.p, head);
			driver_run(&d, &s, lens);
			assert_skipped_ok(&d, lens, 80, max, head);
			assert_true(d.nover > 5);
			driver_done(&d);
		}
	}
	free(s.data);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_encode_mark),
		cmocka_unit_test(test_single_fragment),
		cmocka_unit_test(test_multi_fragment_is_contiguous),
		cmocka_unit_test(test_final_empty_fragment),
		cmocka_unit_test(test_error_fragment_too_large),
		cmocka_unit_test(test_error_record_too_large),
		cmocka_unit_test(test_error_empty_fragment),
		cmocka_unit_test(test_error_empty_record),
		cmocka_unit_test(test_error_truncated),
		cmocka_unit_test(test_error_names),
		cmocka_unit_test(test_byte_at_a_time),
		cmocka_unit_test(test_several_records_in_one_read),
		cmocka_unit_test(test_max_sizes),
		cmocka_unit_test(test_read_window),
		cmocka_unit_test(test_no_readahead),
		cmocka_unit_test(test_switch_moves_little),
		cmocka_unit_test(test_move_bound_any_chunking),
		cmocka_unit_test(test_readahead_grows_for_pipelined),
		cmocka_unit_test(test_readahead_short_reads_keep_it),
		cmocka_unit_test(test_size_hint),
		cmocka_unit_test(test_readahead_large_records_move_little),
		cmocka_unit_test(test_rebase_same_buffer),
		cmocka_unit_test(test_random_against_reference),
		cmocka_unit_test(test_skip_single_fragment),
		cmocka_unit_test(test_skip_multi_fragment),
		cmocka_unit_test(test_skip_byte_at_a_time),
		cmocka_unit_test(test_skip_exactly_max),
		cmocka_unit_test(test_skip_head_after_short_read),
		cmocka_unit_test(test_skip_off_and_other_errors),
		cmocka_unit_test(test_skip_move_bound_any_chunking),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
