/* SPDX-License-Identifier: MIT */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "gateway/counters/counters.h"
#include "gateway/counters/rpc_names.h"

/* The bucket a single sample lands in. */
static unsigned bucket_of(uint64_t us)
{
	struct gw_hist h;
	unsigned found = GW_HIST_BUCKETS;

	memset(&h, 0, sizeof(h));
	gw_hist_add(&h, us);
	for (unsigned i = 0; i < GW_HIST_BUCKETS; i++) {
		if (h.buckets[i]) {
			assert_int_equal(found, GW_HIST_BUCKETS);
			assert_int_equal(h.buckets[i], 1);
			found = i;
		}
	}
	assert_int_not_equal(found, GW_HIST_BUCKETS);
	return found;
}

static void test_hist_bucket_bounds(void **state)
{
	(void)state;
	assert_int_equal(gw_hist_bucket_le(0), 1);
	assert_int_equal(gw_hist_bucket_le(1), 2);
	assert_int_equal(gw_hist_bucket_le(10), 1024);
	assert_int_equal(gw_hist_bucket_le(GW_HIST_BUCKETS - 2), 1ull << (GW_HIST_BUCKETS - 2));
	assert_true(gw_hist_bucket_le(GW_HIST_BUCKETS - 1) == UINT64_MAX);
}

/* Bounds are inclusive, like Prometheus' le: 2^i itself is in bucket i. */
static void test_hist_edges(void **state)
{
	(void)state;
	assert_int_equal(bucket_of(0), 0);
	assert_int_equal(bucket_of(1), 0);
	assert_int_equal(bucket_of(2), 1);
	assert_int_equal(bucket_of(3), 2);
	assert_int_equal(bucket_of(4), 2);
	assert_int_equal(bucket_of(5), 3);
	assert_int_equal(bucket_of(1000), 10);
	assert_int_equal(bucket_of(1024), 10);
	assert_int_equal(bucket_of(1025), 11);

	const unsigned top = GW_HIST_BUCKETS - 2;
	assert_int_equal(bucket_of(1ull << top), top);
	assert_int_equal(bucket_of((1ull << top) + 1), GW_HIST_BUCKETS - 1);
	assert_int_equal(bucket_of(UINT64_MAX), GW_HIST_BUCKETS - 1);
	assert_int_equal(bucket_of(1ull << 63), GW_HIST_BUCKETS - 1);
}

/* Every sample is at most its bucket's bound and above the previous one's. */
static void test_hist_every_edge(void **state)
{
	(void)state;
	for (unsigned k = 0; k < 40; k++) {
		uint64_t base = 1ull << k;
		uint64_t probes[] = { base - 1, base, base + 1 };
		for (size_t j = 0; j < sizeof(probes) / sizeof(probes[0]); j++) {
			uint64_t us = probes[j];
			unsigned i = bucket_of(us);
			assert_true(us <= gw_hist_bucket_le(i));
			if (i > 0)
				assert_true(us > gw_hist_bucket_le(i - 1));
		}
	}
}

static void test_hist_count_and_sum(void **state)
{
	(void)state;
	struct gw_hist h;

	memset(&h, 0, sizeof(h));
	gw_hist_add(&h, 7);
	gw_hist_add(&h, 8);
	gw_hist_add(&h, 9);
	gw_hist_add(&h, 5000000);
	assert_int_equal(h.count, 4);
	assert_int_equal(h.sum_us, 5000024);
	assert_int_equal(h.buckets[3], 2);
	assert_int_equal(h.buckets[4], 1);
	assert_int_equal(h.buckets[GW_HIST_BUCKETS - 1], 1);
}

static void test_event_names(void **state)
{
	(void)state;
	for (unsigned i = 0; i < GW_EV_KIND_COUNT; i++) {
		const char *a = gw_event_kind_name((enum gw_event_kind)i);
		assert_non_null(a);
		assert_string_not_equal(a, "unknown");
		/* names are metric label values: lower case, digits, '_' */
		assert_int_equal(strspn(a, "abcdefghijklmnopqrstuvwxyz0123456789_"), strlen(a));
		for (unsigned j = 0; j < i; j++)
			assert_string_not_equal(a, gw_event_kind_name((enum gw_event_kind)j));
	}
	assert_string_equal(gw_event_kind_name(GW_EV_ERR_VERS_SENT), "err_vers_sent");
	assert_string_equal(gw_event_kind_name(GW_EV_MALFORMED_RECORD), "malformed_record");
	assert_string_equal(gw_event_kind_name(GW_EV_KIND_COUNT), "unknown");
	assert_string_equal(gw_event_kind_name((enum gw_event_kind)(GW_EV_KIND_COUNT + 7)),
			    "unknown");
}

static struct gw_counters *counters_new(void)
{
	struct gw_counters *c = calloc(1, sizeof(*c));
	assert_non_null(c);
	return c;
}

static void counters_free(struct gw_counters *c)
{
	gw_counters_release(c);
	free(c);
}

/* Slots taken in @c's table by procedure, wherever it is. */
static unsigned procs_used(const struct gw_counters *c)
{
	unsigned nslots, used = 0;
	const struct gw_proc_count *procs = gw_counters_procs(c, &nslots);

	for (unsigned i = 0; i < nslots; i++)
		used += procs[i].used;
	return used;
}

static void test_proc_slots(void **state)
{
	(void)state;
	struct gw_counters *c = counters_new();

	gw_counters_count_call(c, 100003, 3, 6);
	gw_counters_count_call(c, 100003, 3, 6);
	gw_counters_count_reply(c, 100003, 3, 6);
	gw_counters_count_call(c, 100003, 4, 1);
	/* rpcbind NULL: a key with zeros, not an empty slot */
	gw_counters_count_call(c, 100000, 2, 0);
	/* (0, 0, 0) is no procedure anybody defines: 'other' */
	gw_counters_count_call(c, 0, 0, 0);

	struct gw_proc_count *p = gw_counters_proc(c, 100003, 3, 6);
	assert_non_null(p);
	assert_int_equal(p->calls, 2);
	assert_int_equal(p->replies, 1);
	assert_int_equal(gw_counters_proc(c, 100003, 4, 1)->calls, 1);
	assert_int_equal(gw_counters_proc(c, 100000, 2, 0)->calls, 1);
	assert_int_equal(c->calls, 5);
	assert_int_equal(c->replies, 1);
	assert_int_equal(c->procs_other_calls, 1);

	assert_int_equal(procs_used(c), 3);
	counters_free(c);
}

/* Every slot taken (by the table's own function, as no peer can): a fill of keys. */
static void fill_table(struct gw_counters *c, uint32_t prog)
{
	for (uint32_t i = 0; i < GW_PROC_SLOTS; i++)
		assert_non_null(gw_counters_proc(c, prog, 1, i));
	assert_int_equal(procs_used(c), GW_PROC_SLOTS);
}

/* A full table still finds what it holds; newcomers are counted as 'other'. */
static void test_proc_table_full(void **state)
{
	(void)state;
	struct gw_counters *c = counters_new();

	fill_table(c, 400000);
	assert_null(gw_counters_proc(c, 400000, 1, GW_PROC_SLOTS));
	gw_counters_count_call(c, 100005, 3, 1);
	gw_counters_count_reply(c, 100005, 3, 1);
	gw_counters_count_call(c, 100003, 3, 6);
	assert_int_equal(c->procs_other_calls, 2);
	assert_int_equal(c->procs_other_replies, 1);
	assert_int_equal(c->calls, 2);
	assert_int_equal(c->replies, 1);

	for (uint32_t i = 0; i < GW_PROC_SLOTS; i++) {
		struct gw_proc_count *p = gw_counters_proc(c, 400000, 1, i);
		assert_non_null(p);
		assert_int_equal(p->proc, i);
	}
	counters_free(c);
}

/* Every procedure the name table knows, counted once; returns how many. */
static unsigned count_every_known(struct gw_counters *c)
{
	static const uint32_t progs[] = { 100000, 100003, 100005, 100021, 100024, 100227 };
	unsigned n = 0;

	for (size_t i = 0; i < sizeof(progs) / sizeof(progs[0]); i++) {
		for (uint32_t vers = 0; vers < 8; vers++) {
			for (uint32_t proc = 0; proc < 64; proc++) {
				if (!gw_rpc_procedure_known(progs[i], vers, proc))
					continue;
				gw_counters_count_call(c, progs[i], vers, proc);
				n++;
			}
		}
	}
	return n;
}

/*
 * A session that used a few procedures keeps them in the block itself:
 * nothing allocated, and the block no longer carries a whole table (issue 17:
 * it was 9.2 KB a session, 8 KiB of it the table).
 */
static void test_proc_few_allocate_nothing(void **state)
{
	(void)state;
	struct gw_counters *c = counters_new();

	assert_true(sizeof(struct gw_counters) < 2048);
	gw_counters_count_call(c, 100003, 3, 0); /* NULL, as a client's first call */
	gw_counters_count_reply(c, 100003, 3, 0);
	assert_null(c->procs_big);
	for (uint32_t proc = 1; proc <= 5; proc++)
		gw_counters_count_call(c, 100003, 3, proc);
	assert_null(c->procs_big);
	assert_int_equal(procs_used(c), 6);
	assert_int_equal(gw_counters_proc(c, 100003, 3, 0)->replies, 1);
	assert_int_equal(c->events[GW_EV_COUNTERS_NO_MEMORY], 0);
	counters_free(c);
}

/*
 * Past the small table it grows, doubling, and every count survives each
 * move; a slot once found stays found.
 */
static void test_proc_grows_keeping_counts(void **state)
{
	(void)state;
	struct gw_counters *c = counters_new();
	unsigned n = count_every_known(c);
	unsigned nslots;

	assert_non_null(c->procs_big);
	gw_counters_procs(c, &nslots);
	assert_true(nslots > GW_PROC_SMALL && nslots <= GW_PROC_SLOTS);
	assert_int_equal(procs_used(c), n);
	assert_int_equal(count_every_known(c), n); /* again: the same slots, now 2 each */
	assert_int_equal(procs_used(c), n);
	assert_int_equal(gw_counters_proc(c, 100003, 3, 6)->calls, 2);
	assert_int_equal(gw_counters_proc(c, 100000, 2, 0)->calls, 2);
	assert_int_equal(c->procs_other_calls, 0);
	gw_counters_release(c);
	assert_null(c->procs_big);
	assert_int_equal(procs_used(c), 0);
	free(c);
}

/* A route's table is whole from the start: no later count moves a slot. */
static void test_proc_reserve_whole(void **state)
{
	(void)state;
	struct gw_counters *c = counters_new();
	unsigned nslots;

	gw_counters_count_call(c, 100003, 3, 6);
	assert_int_equal(gw_counters_reserve_procs(c), 0);
	gw_counters_procs(c, &nslots);
	assert_int_equal(nslots, GW_PROC_SLOTS);
	struct gw_proc_count *read = gw_counters_proc(c, 100003, 3, 6);
	assert_int_equal(read->calls, 1); /* carried over */
	count_every_known(c);
	assert_ptr_equal(gw_counters_proc(c, 100003, 3, 6), read);
	assert_int_equal(read->calls, 2);
	counters_free(c);
}

/*
 * Numbers a client makes up, thousands of them, take no slot: they are
 * 'other', and every real procedure still gets its own slot afterwards.
 */
static void test_proc_made_up_numbers(void **state)
{
	(void)state;
	static const uint32_t progs[] = { 100000, 100003, 100005, 100021, 100024, 100227 };
	struct gw_counters *c = counters_new();
	uint64_t other = 0;

	srand(11);
	for (unsigned i = 0; i < 20000; i++) {
		uint32_t r = (uint32_t)rand() ^ ((uint32_t)rand() << 16);
		uint32_t prog, vers, proc;
		switch (i % 3) {
		case 0: /* anything at all */
			prog = r;
			vers = (uint32_t)rand() ^ ((uint32_t)rand() << 16);
			proc = (uint32_t)rand() ^ ((uint32_t)rand() << 16);
			break;
		case 1: /* a known program, a version it does not have */
			prog = progs[r % 6];
			vers = 5 + (uint32_t)rand() % 1000;
			proc = (uint32_t)rand() % 32;
			break;
		default: /* a known program and version, a procedure beyond its last */
			prog = 100003;
			vers = 2 + r % 3;
			proc = 22 + (uint32_t)rand() % 100000;
			break;
		}
		if (gw_rpc_procedure_known(prog, vers, proc))
			continue; /* the odd random hit on a real one */
		gw_counters_count_call(c, prog, vers, proc);
		gw_counters_count_reply(c, prog, vers, proc);
		other++;
	}
	assert_int_equal(procs_used(c), 0);
	assert_null(c->procs_big); /* nor did they make the table grow */
	assert_int_equal(c->procs_other_calls, other);
	assert_int_equal(c->procs_other_replies, other);

	/* Every real one, all at once: each in a slot of its own. */
	unsigned known = count_every_known(c);
	assert_true(known > 100);
	assert_true(known <= GW_PROC_SLOTS);
	assert_int_equal(c->procs_other_calls, other);
	unsigned used = 0, nslots;
	const struct gw_proc_count *procs = gw_counters_procs(c, &nslots);
	for (unsigned i = 0; i < nslots; i++) {
		if (!procs[i].used)
			continue;
		used++;
		assert_true(gw_rpc_procedure_known(procs[i].prog, procs[i].vers, procs[i].proc));
		assert_int_equal(procs[i].calls, 1);
	}
	assert_int_equal(used, known);
	counters_free(c);
}

static void fill(struct gw_counters *c, uint64_t k)
{
	c->calls = 1 * k;
	c->replies = 2 * k;
	c->backward_calls = 3 * k;
	c->backward_replies = 4 * k;
	c->calls_queued_for_credits = 5 * k;
	c->remote_invalidations = 17 * k;
	c->bytes_inline = 6 * k;
	c->bytes_read_chunk = 7 * k;
	c->bytes_write_chunk = 8 * k;
	c->bytes_reply_chunk = 9 * k;
	c->tcp_bytes_in = 10 * k;
	c->tcp_bytes_out = 11 * k;
	c->sessions_opened = 12 * k;
	c->sessions_closed = 13 * k;
	for (unsigned i = 0; i < GW_EV_KIND_COUNT; i++)
		c->events[i] = (100 + i) * k;
	gw_hist_add(&c->gateway_us, 3 * k);
	gw_hist_add(&c->upstream_us, 300 * k);
	c->procs_other_calls = 20 * k;
	c->procs_other_replies = 21 * k;
}

static void test_add_scalars_and_hists(void **state)
{
	(void)state;
	struct gw_counters *a = counters_new(), *b = counters_new();

	fill(a, 1);
	fill(b, 1000);
	gw_counters_add(a, b);
	assert_int_equal(a->calls, 1001);
	assert_int_equal(a->replies, 2002);
	assert_int_equal(a->backward_calls, 3003);
	assert_int_equal(a->backward_replies, 4004);
	assert_int_equal(a->calls_queued_for_credits, 5005);
	assert_int_equal(a->remote_invalidations, 17017);
	assert_int_equal(a->bytes_inline, 6006);
	assert_int_equal(a->bytes_read_chunk, 7007);
	assert_int_equal(a->bytes_write_chunk, 8008);
	assert_int_equal(a->bytes_reply_chunk, 9009);
	assert_int_equal(a->tcp_bytes_in, 10010);
	assert_int_equal(a->tcp_bytes_out, 11011);
	assert_int_equal(a->sessions_opened, 12012);
	assert_int_equal(a->sessions_closed, 13013);
	for (unsigned i = 0; i < GW_EV_KIND_COUNT; i++)
		assert_int_equal(a->events[i], (100 + i) * 1001);
	assert_int_equal(a->procs_other_calls, 20020);
	assert_int_equal(a->procs_other_replies, 21021);

	assert_int_equal(a->gateway_us.count, 2);
	assert_int_equal(a->gateway_us.sum_us, 3003);
	assert_int_equal(a->gateway_us.buckets[2], 1);	/* 3 us */
	assert_int_equal(a->gateway_us.buckets[12], 1); /* 3000 us */
	assert_int_equal(a->upstream_us.count, 2);
	assert_int_equal(a->upstream_us.sum_us, 300300);
	assert_int_equal(a->upstream_us.buckets[9], 1);	 /* 300 us */
	assert_int_equal(a->upstream_us.buckets[19], 1); /* 300000 us */

	/* the source is left alone */
	assert_int_equal(b->calls, 1000);
	assert_int_equal(b->gateway_us.count, 1);
	counters_free(a);
	counters_free(b);
}

static void test_add_procs(void **state)
{
	(void)state;
	struct gw_counters *a = counters_new(), *b = counters_new();

	gw_counters_count_call(a, 100003, 3, 6);
	gw_counters_count_call(b, 100003, 3, 6);
	gw_counters_count_reply(b, 100003, 3, 6);
	gw_counters_count_call(b, 100021, 4, 2);
	gw_counters_add(a, b);

	struct gw_proc_count *read = gw_counters_proc(a, 100003, 3, 6);
	assert_int_equal(read->calls, 2);
	assert_int_equal(read->replies, 1);
	assert_int_equal(gw_counters_proc(a, 100021, 4, 2)->calls, 1);
	assert_int_equal(a->calls, 3);
	assert_int_equal(a->replies, 1);
	assert_int_equal(a->procs_other_calls, 0);
	counters_free(a);
	counters_free(b);
}

/* What does not fit the destination's table is kept as 'other', not lost. */
static void test_add_procs_into_full_table(void **state)
{
	(void)state;
	struct gw_counters *a = counters_new(), *b = counters_new();

	fill_table(a, 400000);
	gw_counters_count_call(b, 100003, 3, 1);
	gw_counters_count_call(b, 100005, 3, 1);
	gw_counters_count_call(b, 100005, 3, 1);
	gw_counters_count_reply(b, 100005, 3, 1);
	b->procs_other_calls = 7;
	b->procs_other_replies = 8;
	gw_counters_add(a, b);

	assert_null(gw_counters_proc(a, 100003, 3, 1));
	assert_null(gw_counters_proc(a, 100005, 3, 1));
	assert_int_equal(a->procs_other_calls, 1 + 2 + 7);
	assert_int_equal(a->procs_other_replies, 1 + 8);
	counters_free(a);
	counters_free(b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_hist_bucket_bounds),
		cmocka_unit_test(test_hist_edges),
		cmocka_unit_test(test_hist_every_edge),
		cmocka_unit_test(test_hist_count_and_sum),
		cmocka_unit_test(test_event_names),
		cmocka_unit_test(test_proc_slots),
		cmocka_unit_test(test_proc_table_full),
		cmocka_unit_test(test_proc_made_up_numbers),
		cmocka_unit_test(test_proc_few_allocate_nothing),
		cmocka_unit_test(test_proc_grows_keeping_counts),
		cmocka_unit_test(test_proc_reserve_whole),
		cmocka_unit_test(test_add_scalars_and_hists),
		cmocka_unit_test(test_add_procs),
		cmocka_unit_test(test_add_procs_into_full_table),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
