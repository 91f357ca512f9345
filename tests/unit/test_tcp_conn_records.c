/* SPDX-License-Identifier: MIT */
/*
 * tcp/tcp_conn.c reading records: records of every size, in one fragment or
 * many, arriving across partial reads over loopback TCP and socketpairs, each
 * delivered whole and in order; how buffers are used (pipelined records
 * sharing one, few reads and few bytes moved between buffers, no buffer held
 * while idle); the wait a record spent in the socket (rx_timestamps); and the
 * owner's hold on reading: pause and resume, a buffer source that runs dry,
 * the connection freed from inside a record callback.
 *
 * Each test runs a tcp_conn on a real event loop against the test's end of
 * its socket (support/tcprig.h), which writes in chunks of random size;
 * every wait has a generous deadline and nothing asserts speed.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <netinet/in.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <event2/event.h>

#include "tcp/tcp_conn.h"

#include "support/loop.h"
#include "support/record.h"
#include "support/tcprig.h"

static void check_many_sizes(bool tcp, bool multi)
{
	struct gwt_rig *h = gwt_rig_new(tcp);
	struct gwt_stream s = { 0 };
	uint32_t seed = tcp ? 7 : 8;
	size_t want[200];
	const unsigned int n = 200;

	for (unsigned int r = 0; r < n; r++) {
		uint32_t x = gwt_lcg(&seed);
		switch (x % 4) {
		case 0:
			want[r] = 1 + x % 100;
			break;
		case 1:
			want[r] = 100 + x % 3000;
			break;
		case 2:
			want[r] = 3000 + x % 70000;
			break;
		default:
			want[r] = (r % 20 == 3) ? h->cfg.max_record : 1 + x % 400000;
			break;
		}
		gwt_stream_record(&s, r, want[r], multi ? 1 + gwt_lcg(&seed) % 50000 : 0);
	}
	h->feed_max_chunk = 70000;
	assert_int_equal(gwt_rig_start(h), 0);
	gwt_rig_feed(h, &s);
	GWT_RUN_UNTIL(h->base, h->nrec == n || h->closed, GWT_RIG_WAIT_MS * 2);
	assert_false(h->closed);
	assert_int_equal(h->nrec, n);
	assert_false(h->bad_content);
	for (unsigned int r = 0; r < n; r++)
		assert_int_equal(h->lens[r], want[r]);

	const struct tcp_conn_stats *st = tcp_conn_stats(h->c);
	assert_int_equal(st->records_in, n);
	assert_int_equal(st->bytes_in, s.len);
	/* no buffer larger than the largest record needs */
	assert_true(h->src.largest <= tcp_conn_rx_buffer_size(&h->cfg));
	/* bulk is read in place: only marks and read-ahead move between buffers */
	if (!multi)
		assert_true(st->rx_moved <=
			    st->rx_switches * (4 + (h->cfg.readahead_max > h->cfg.readahead
							    ? h->cfg.readahead_max
							    : h->cfg.readahead)));
	/* idle: the connection holds no buffer */
	assert_int_equal(h->src.outstanding, 0);
	assert_int_equal(gwt_rig_free(h), 0);
	free(s.data);
}

static void test_many_sizes_tcp(void **state)
{
	(void)state;
	check_many_sizes(true, false);
}

static void test_many_sizes_socketpair(void **state)
{
	(void)state;
	check_many_sizes(false, false);
}

static void test_multi_fragment_records(void **state)
{
	(void)state;
	check_many_sizes(true, true);
}

/* Pipelined records share one buffer, which lives until the last is put. */
static void test_pipelined_share_buffer(void **state)
{
	(void)state;
	struct gwt_rig *h = gwt_rig_new(false);
	struct gwt_stream s = { 0 };

	for (unsigned int r = 0; r < 5; r++)
		gwt_stream_record(&s, r, 20, 0);
	h->hold = true;
	h->cfg.readahead = 1024;
	assert_int_equal(gwt_rig_start(h), 0);
	assert_int_equal(gwt_rig_write_now(h, &s), 0);
	GWT_RUN_UNTIL(h->base, h->nrec == 5, GWT_RIG_WAIT_MS);
	assert_int_equal(h->nrec, 5);
	assert_false(h->bad_content);
	for (unsigned int r = 1; r < 5; r++)
		assert_ptr_equal(h->held[r], h->held[0]);
	/* the connection let go of it: only the five records hold it */
	assert_int_equal(h->held[0]->refs, 5);
	for (unsigned int r = 0; r < 4; r++) {
		gw_buf_put(h->held[r]);
		h->held[r] = NULL;
	}
	assert_int_equal(h->src.frees, 0);
	gw_buf_put(h->held[4]);
	h->held[4] = NULL;
	assert_int_equal(h->src.frees, 1);
	assert_int_equal(gwt_rig_free(h), 0);
	free(s.data);
}

/* The gateway's settings and its pool's two buffer classes. */
static struct gwt_rig *h_new_gateway_like(bool tcp)
{
	struct gwt_rig *h = gwt_rig_new(tcp);

	tcp_conn_config_default(&h->cfg);
	h->src.small = h->cfg.recv_size;
	h->src.big = tcp_conn_rx_buffer_size(&h->cfg);
	return h;
}

/*
 * Pipelined 4 KiB WRITE-like calls, all in the socket at once: the
 * read-ahead grows while reads come back full, so they are taken several
 * to a read (one read each with a fixed 1 KiB read-ahead); what moves is
 * only the first record's mark and 1 KiB, from the small buffer to a
 * large one that then takes them all.
 */
static void test_pipelined_few_reads(void **state)
{
	(void)state;
	struct gwt_rig *h = h_new_gateway_like(false);
	struct gwt_stream s = { 0 };
	const unsigned int n = 24;

	for (unsigned int r = 0; r < n; r++)
		gwt_stream_record(&s, r, 4300, 0);
	assert_int_equal(gwt_rig_start(h), 0);
	assert_int_equal(gwt_rig_write_now(h, &s), 0);
	GWT_RUN_UNTIL(h->base, h->nrec == n, GWT_RIG_WAIT_MS);
	assert_int_equal(h->nrec, n);
	assert_false(h->bad_content);

	const struct tcp_conn_stats *st = tcp_conn_stats(h->c);
	assert_int_equal(st->bytes_in, s.len);
	assert_true(st->reads <= n / 2);
	assert_true(st->rx_moved <= 4 + h->cfg.readahead);
	/* idle: the buffer went back */
	assert_int_equal(h->src.outstanding, 0);

	/*
	 * The next batch starts in a fresh buffer, taken large enough for a
	 * record like the last one (the size hint): nothing moves at all.
	 */
	uint64_t moved = st->rx_moved;
	s.len = 0;
	for (unsigned int r = n; r < 2 * n; r++)
		gwt_stream_record(&s, r, 4300, 0);
	assert_int_equal(gwt_rig_write_now(h, &s), 0);
	GWT_RUN_UNTIL(h->base, h->nrec == 2 * n, GWT_RIG_WAIT_MS);
	assert_int_equal(h->nrec, 2 * n);
	assert_false(h->bad_content);
	assert_true(st->reads <= n);
	assert_int_equal(st->rx_moved, moved);
	assert_int_equal(gwt_rig_free(h), 0);
	free(s.data);
}

/*
 * A client with one call at a time: each 4 KiB WRITE-like record is alone
 * in the socket, and the buffer goes back between records. The first
 * takes two reads (1 KiB into a small buffer, whose bytes move to a large
 * one, then the rest); every later one a single read into a fresh buffer
 * taken for a record like the last (rm_size_hint()), with nothing moved;
 * the read comes back short, so no read follows that would find nothing.
 * A small record in between is read in one read as well, and the record
 * after it, large again, pays the two reads once more.
 */
static void test_one_at_a_time_one_read(void **state)
{
	(void)state;
	struct gwt_rig *h = h_new_gateway_like(false);
	struct gwt_stream s = { 0 };
	const unsigned int n = 12;
	const struct tcp_conn_stats *st;

	assert_int_equal(gwt_rig_start(h), 0);
	st = tcp_conn_stats(h->c);
	for (unsigned int r = 0; r < n; r++) {
		uint64_t reads = st->reads, moved = st->rx_moved;
		s.len = 0;
		gwt_stream_record(&s, r, r == 6 ? 100 : 4300, 0);
		assert_int_equal(gwt_rig_write_now(h, &s), 0);
		GWT_RUN_UNTIL(h->base, h->nrec == r + 1, GWT_RIG_WAIT_MS);
		assert_int_equal(h->nrec, r + 1);
		assert_false(h->bad_content);
		/* idle between records: the buffer went back */
		assert_int_equal(h->src.outstanding, 0);
		if (r == 0 || r == 7) {
			/* what the first read took moved: the mark (or the small record's
			 * size, the hint then) and the configured read-ahead */
			assert_int_equal(st->reads - reads, 2);
			assert_int_equal(st->rx_moved - moved,
					 (r == 0 ? 4 : 104) + h->cfg.readahead);
		} else {
			assert_int_equal(st->reads - reads, 1);
			assert_int_equal(st->rx_moved - moved, 0);
		}
	}
	assert_int_equal(gwt_rig_free(h), 0);
	free(s.data);
}

/*
 * With rx_timestamps a record says how long it waited in the socket: a
 * call written 30 ms before the loop runs waited at least that; one read
 * at once, little. Without, the wait is unknown.
 */
static void test_rx_wait(void **state)
{
	/*
	 * The kernel turns receive timestamps on for the whole stack when the
	 * first socket asks, from a work item a little later: a segment that
	 * comes in meanwhile carries none. A socket of our own keeps them on
	 * for the test, and the pause lets the work item run.
	 */
	int keep = socket(AF_INET, SOCK_DGRAM, 0), one = 1;
	struct timespec settle = { 0, 20 * 1000 * 1000 };

	(void)state;
	assert_true(keep >= 0);
	assert_int_equal(setsockopt(keep, SOL_SOCKET, SO_TIMESTAMPNS, &one, sizeof(one)), 0);
	nanosleep(&settle, NULL);
	for (int on = 0; on <= 1; on++) {
		struct gwt_rig *h = gwt_rig_new(true);
		struct gwt_stream s = { 0 };
		struct timespec pause = { 0, 30 * 1000 * 1000 };

		h->cfg.rx_timestamps = on;
		assert_int_equal(gwt_rig_start(h), 0);
		gwt_stream_record(&s, 0, 200, 0);
		assert_int_equal(gwt_rig_write_now(h, &s), 0);
		nanosleep(&pause, NULL); /* the loop is not running: the call waits */
		GWT_RUN_UNTIL(h->base, h->nrec == 1, GWT_RIG_WAIT_MS);
		assert_int_equal(h->nrec, 1);
		s.len = 0;
		gwt_stream_record(&s, 1, 200, 0);
		gwt_rig_feed(h, &s); /* written from the loop, read in the same turns */
		GWT_RUN_UNTIL(h->base, h->nrec == 2, GWT_RIG_WAIT_MS);
		assert_int_equal(h->nrec, 2);
		assert_false(h->bad_content);
		if (!on) {
			assert_true(h->rx_wait_us[0] == TCP_CONN_RX_WAIT_UNKNOWN);
			assert_true(h->rx_wait_us[1] == TCP_CONN_RX_WAIT_UNKNOWN);
		} else {
			assert_true(h->rx_wait_us[0] >= 29000);
			assert_true(h->rx_wait_us[0] < 10u * 1000 * 1000);
			assert_true(h->rx_wait_us[1] < 10u * 1000 * 1000); /* known */
		}
		assert_int_equal(gwt_rig_free(h), 0);
		free(s.data);
	}
	close(keep);
}

/*
 * Large records after a run of small ones: the first can have up to the
 * grown read-ahead of its head moved, every later one no more than its
 * mark and the configured read-ahead (large records set it back).
 */
static void test_large_records_move_little(void **state)
{
	(void)state;
	struct gwt_rig *h = h_new_gateway_like(false);
	struct gwt_stream s = { 0 };
	unsigned int n = 0;

	for (; n < 40; n++)
		gwt_stream_record(&s, n, 200, 0);
	for (; n < 46; n++)
		gwt_stream_record(&s, n, 700000, 0);
	h->feed_max_chunk = 1u << 20;
	assert_int_equal(gwt_rig_start(h), 0);
	gwt_rig_feed(h, &s);
	GWT_RUN_UNTIL(h->base, h->nrec == n || h->closed, GWT_RIG_WAIT_MS * 2);
	assert_int_equal(h->nrec, n);
	assert_false(h->bad_content);

	const struct tcp_conn_stats *st = tcp_conn_stats(h->c);
	assert_int_equal(st->bytes_in, s.len);
	assert_true(st->rx_switches >= 6);
	assert_true(st->rx_moved <=
		    (4 + h->cfg.readahead_max) + (st->rx_switches - 1) * (4 + h->cfg.readahead));
	assert_int_equal(gwt_rig_free(h), 0);
	free(s.data);
}

/* The buffer is held only while part of a record sits in it. */
static void test_idle_buffer_released(void **state)
{
	(void)state;
	struct gwt_rig *h = gwt_rig_new(true);
	struct gwt_stream s = { 0 };

	gwt_stream_record(&s, 0, 30, 0);
	gwt_stream_record(&s, 1, 3000, 0);
	assert_int_equal(gwt_rig_start(h), 0);
	struct gwt_stream first = { .data = s.data, .len = 34 + 100 };
	assert_int_equal(gwt_rig_write_now(h, &first), 0);
	GWT_RUN_UNTIL(h->base, h->nrec == 1 && tcp_conn_stats(h->c)->bytes_in == first.len,
		      GWT_RIG_WAIT_MS);
	assert_int_equal(h->nrec, 1);
	/* part of record 1 is pending */
	assert_int_equal(h->src.outstanding, 1);
	struct gwt_stream rest = { .data = s.data + first.len, .len = s.len - first.len };
	assert_int_equal(gwt_rig_write_now(h, &rest), 0);
	GWT_RUN_UNTIL(h->base, h->nrec == 2, GWT_RIG_WAIT_MS);
	assert_int_equal(h->nrec, 2);
	assert_false(h->bad_content);
	assert_int_equal(h->src.outstanding, 0);
	assert_int_equal(gwt_rig_free(h), 0);
	free(s.data);
}

/* ---- the owner holds reading back -------------------------------------------- */

static void test_pause_resume(void **state)
{
	(void)state;
	struct gwt_rig *h = gwt_rig_new(false);
	struct gwt_stream s = { 0 };

	for (unsigned int r = 0; r < 10; r++)
		gwt_stream_record(&s, r, 50, 0);
	h->cfg.recv_size = 4096;
	h->cfg.readahead = 4096;
	h->pause_at = 3;
	assert_int_equal(gwt_rig_start(h), 0);
	/* all ten arrive in one read; the pause still stops after the third */
	assert_int_equal(gwt_rig_write_now(h, &s), 0);
	GWT_RUN_UNTIL(h->base, h->nrec >= 3, GWT_RIG_WAIT_MS);
	gwt_run_for(h->base, 200);
	assert_int_equal(h->nrec, 3);
	assert_int_equal(tcp_conn_stats(h->c)->bytes_in, s.len);
	assert_true(tcp_conn_read_paused(h->c));
	/* no new bytes come: the records already read must be delivered anyway */
	tcp_conn_resume_read(h->c);
	assert_false(tcp_conn_read_paused(h->c));
	GWT_RUN_UNTIL(h->base, h->nrec == 10, GWT_RIG_WAIT_MS);
	assert_int_equal(h->nrec, 10);

	/* paused from outside a callback, before the data comes */
	tcp_conn_pause_read(h->c);
	s.len = 0;
	gwt_stream_record(&s, 10, 70, 0);
	assert_int_equal(gwt_rig_write_now(h, &s), 0);
	gwt_run_for(h->base, 200);
	assert_int_equal(h->nrec, 10);
	tcp_conn_resume_read(h->c);
	GWT_RUN_UNTIL(h->base, h->nrec == 11, GWT_RIG_WAIT_MS);
	assert_int_equal(h->nrec, 11);
	assert_false(h->bad_content);
	assert_int_equal(gwt_rig_free(h), 0);
	free(s.data);
}

static void release_held(struct gwt_rig *h)
{
	for (unsigned int i = 0; i < h->nrec; i++) {
		if (h->held[i]) {
			gw_buf_put(h->held[i]);
			h->held[i] = NULL;
		}
	}
}

/* The source runs dry: reading stops by itself and resumes when told. */
static void test_source_dry(void **state)
{
	(void)state;
	struct gwt_rig *h = gwt_rig_new(true);
	struct gwt_stream s = { 0 };
	const unsigned int n = 8;

	for (unsigned int r = 0; r < n; r++)
		gwt_stream_record(&s, r, 1000, 0);
	h->hold = true;
	h->src.limit = 2;
	assert_int_equal(gwt_rig_start(h), 0);
	gwt_rig_feed(h, &s);

	unsigned int rounds = 0;
	while (h->nrec < n && rounds++ < 100) {
		unsigned int starved = h->starved_calls;

		GWT_RUN_UNTIL(h->base, h->nrec == n || h->starved_calls > starved, GWT_RIG_WAIT_MS);
		if (h->nrec == n)
			break;
		assert_true(h->starved_calls > starved);
		assert_true(tcp_conn_read_paused(h->c));
		/* stopped, not polling the source */
		unsigned int failed = h->src.failed, got = h->nrec;
		gwt_run_for(h->base, 50);
		assert_int_equal(h->src.failed, failed);
		assert_int_equal(h->nrec, got);
		/* the owner's pool gets buffers back and says so */
		release_held(h);
		tcp_conn_source_ready(h->c);
	}
	assert_int_equal(h->nrec, n);
	assert_false(h->bad_content);
	assert_true(h->starved_calls >= 1);
	assert_int_equal(tcp_conn_stats(h->c)->starved, h->starved_calls);
	assert_int_equal(gwt_rig_free(h), 0);
	free(s.data);
}

/* The owner frees the connection from inside a record callback. */
static void test_free_in_callback(void **state)
{
	(void)state;
	struct gwt_rig *h = gwt_rig_new(false);
	struct gwt_stream s = { 0 };

	for (unsigned int r = 0; r < 5; r++)
		gwt_stream_record(&s, r, 40, 0);
	h->cfg.readahead = 4096;
	h->free_at = 2;
	assert_int_equal(gwt_rig_start(h), 0);
	assert_int_equal(gwt_rig_write_now(h, &s), 0);
	GWT_RUN_UNTIL(h->base, h->c == NULL, GWT_RIG_WAIT_MS);
	gwt_run_for(h->base, 50);
	assert_null(h->c);
	assert_int_equal(h->nrec, 2);
	assert_false(h->closed);
	assert_int_equal(gwt_rig_free(h), 0);
	free(s.data);
}
int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_many_sizes_tcp),
		cmocka_unit_test(test_many_sizes_socketpair),
		cmocka_unit_test(test_multi_fragment_records),
		cmocka_unit_test(test_pipelined_share_buffer),
		cmocka_unit_test(test_pipelined_few_reads),
		cmocka_unit_test(test_one_at_a_time_one_read),
		cmocka_unit_test(test_large_records_move_little),
		cmocka_unit_test(test_rx_wait),
		cmocka_unit_test(test_idle_buffer_released),
		cmocka_unit_test(test_pause_resume),
		cmocka_unit_test(test_source_dry),
		cmocka_unit_test(test_free_in_callback),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
