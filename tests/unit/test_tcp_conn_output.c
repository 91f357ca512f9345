/* SPDX-License-Identifier: MIT */
/*
 * tcp/tcp_conn.c sending: records queued and written once per pass of the
 * loop or at once (tcp_conn_flush_now()), the write event added only while
 * the socket is full, the high and low watermarks a peer that does not read
 * drives output through, the limit on queued output, and replies sent as a
 * mark plus pieces, bulk by reference (each reference put once, a piece
 * reaching past its buffer refused).
 *
 * Each test runs a tcp_conn on a real event loop against the test's end of
 * its socket (support/tcprig.h), which reads what comes only when told to;
 * every wait has a generous deadline and nothing asserts speed.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include <event2/event.h>

#include "common/xdr.h"
#include "tcp/tcp_conn.h"

#include "support/loop.h"
#include "support/record.h"
#include "support/tcprig.h"

static void test_watermarks(void **state)
{
	(void)state;
	struct gwt_rig *h = gwt_rig_new(false);
	uint8_t rec[1000];
	unsigned int sent = 0;

	h->cfg.out_high = 64 * 1024;
	h->cfg.out_low = 16 * 1024;
	assert_int_equal(gwt_rig_start(h), 0);
	assert_int_equal(gwt_rig_shrink_sndbuf(h), 0);
	/* the peer does not read: output piles up */
	while (h->congested_calls == 0 && sent < 1000) {
		gwt_pattern_fill(rec, sent, sizeof(rec));
		assert_int_equal(tcp_conn_send_copy(h->c, rec, sizeof(rec)), 0);
		sent++;
		event_base_loop(h->base, EVLOOP_NONBLOCK);
	}
	assert_int_equal(h->congested_calls, 1);
	assert_true(h->queued_at_congested >= h->cfg.out_high);
	assert_true(tcp_conn_output_congested(h->c));
	gwt_run_for(h->base, 200);
	assert_int_equal(h->relieved_calls, 0);
	assert_true(tcp_conn_output_congested(h->c));

	/* the peer drains */
	gwt_rig_sink(h, true);
	GWT_RUN_UNTIL(h->base, h->relieved_calls == 1, GWT_RIG_WAIT_MS);
	assert_int_equal(h->relieved_calls, 1);
	assert_true(h->queued_at_relieved <= h->cfg.out_low);
	assert_false(tcp_conn_output_congested(h->c));
	GWT_RUN_UNTIL(h->base, h->sunk.len == sent * 1004, GWT_RIG_WAIT_MS);
	assert_int_equal(gwt_rig_decode_sunk(h, 1000), sent);
	assert_int_equal(h->congested_calls, 1);
	assert_int_equal(tcp_conn_stats(h->c)->congested, 1);
	assert_int_equal(tcp_conn_stats(h->c)->records_out, sent);
	assert_int_equal(gwt_rig_free(h), 0);
}

/*
 * Events added to the loop and waiting (libevent's count of added events
 * also holds those made active): the write event shows here while it is
 * armed, a scheduled flush does not.
 */
static int added_events(const struct gwt_rig *h)
{
	return event_base_get_num_events(h->base, EVENT_BASE_COUNT_ADDED) -
	       event_base_get_num_events(h->base, EVENT_BASE_COUNT_ACTIVE);
}

/*
 * A peer that keeps up: records queued in one pass leave together in one
 * sendmsg() later in that pass, and the socket's write event is never
 * added (no epoll_ctl() pair per reply).
 */
static void test_flush_once_per_pass(void **state)
{
	(void)state;
	struct gwt_rig *h = gwt_rig_new(false);
	int base_events;

	assert_int_equal(gwt_rig_start(h), 0);
	gwt_rig_sink(h, true);
	base_events = added_events(h);
	assert_int_equal(gwt_rig_send_records(h, 0, 3, 100), 0);
	/* not written inside the send calls, and no write event added for it */
	assert_int_equal(tcp_conn_stats(h->c)->writes, 0);
	assert_int_equal(added_events(h), base_events);
	assert_false(tcp_conn_write_waiting(h->c));
	event_base_loop(h->base, EVLOOP_NONBLOCK);
	assert_int_equal(tcp_conn_output_queued(h->c), 0);
	assert_int_equal(tcp_conn_stats(h->c)->writes, 1);
	GWT_RUN_UNTIL(h->base, h->sunk.len == 3 * 104, GWT_RIG_WAIT_MS);
	assert_int_equal(gwt_rig_decode_sunk(h, 100), 3);
	assert_int_equal(tcp_conn_stats(h->c)->write_waits, 0);
	assert_int_equal(added_events(h), base_events);
	assert_int_equal(gwt_rig_free(h), 0);
}

/*
 * tcp_conn_flush_now(): the records queued so far leave inside the call,
 * in one sendmsg(), before the loop runs again; the flush the sends
 * scheduled then finds nothing to write (no second system call), and no
 * write event is added.
 */
static void test_flush_now(void **state)
{
	(void)state;
	struct gwt_rig *h = gwt_rig_new(false);
	uint8_t rec[100];
	uint8_t got[3 * 104];
	int base_events;

	assert_int_equal(gwt_rig_start(h), 0);
	base_events = added_events(h);
	assert_int_equal(gwt_rig_send_records(h, 0, 3, sizeof(rec)), 0);
	/* without it, nothing is on the socket until the loop's flush */
	assert_int_equal(recv(h->peer, got, sizeof(got), MSG_DONTWAIT), -1);
	assert_true(errno == EAGAIN || errno == EWOULDBLOCK);
	tcp_conn_flush_now(h->c);
	assert_int_equal(tcp_conn_stats(h->c)->writes, 1);
	assert_int_equal(tcp_conn_output_queued(h->c), 0);
	assert_int_equal(recv(h->peer, got, sizeof(got), MSG_DONTWAIT), (ssize_t)sizeof(got));
	for (unsigned int r = 0; r < 3; r++) {
		gwt_pattern_fill(rec, r, sizeof(rec));
		assert_memory_equal(got + r * 104 + 4, rec, sizeof(rec));
	}
	/* nothing left to flush, and nothing queued: no-ops */
	tcp_conn_flush_now(h->c);
	event_base_loop(h->base, EVLOOP_NONBLOCK);
	assert_int_equal(tcp_conn_stats(h->c)->writes, 1);
	assert_int_equal(tcp_conn_stats(h->c)->write_waits, 0);
	assert_int_equal(added_events(h), base_events);
	assert_false(h->closed);
	assert_int_equal(gwt_rig_free(h), 0);
}

/*
 * A socket that is full: tcp_conn_flush_now() does not try it again while
 * the write event waits for room, and everything still arrives in order.
 */
static void test_flush_now_full_socket(void **state)
{
	(void)state;
	struct gwt_rig *h = gwt_rig_new(true);
	static uint8_t big[256 << 10];

	assert_int_equal(gwt_rig_start(h), 0);
	assert_int_equal(gwt_rig_shrink_sndbuf(h), 0);
	gwt_pattern_fill(big, 0, sizeof(big));
	assert_int_equal(tcp_conn_send_copy(h->c, big, sizeof(big)), 0);
	tcp_conn_flush_now(h->c);
	assert_int_equal(tcp_conn_stats(h->c)->writes, 1);
	assert_true(tcp_conn_output_queued(h->c) > 0);
	event_base_loop(h->base, EVLOOP_NONBLOCK);
	assert_true(tcp_conn_write_waiting(h->c));
	uint64_t writes = tcp_conn_stats(h->c)->writes;
	gwt_pattern_fill(big, 1, 1000);
	assert_int_equal(tcp_conn_send_copy(h->c, big, 1000), 0);
	tcp_conn_flush_now(h->c);
	assert_int_equal(tcp_conn_stats(h->c)->writes, writes);
	gwt_rig_sink(h, true);
	GWT_RUN_UNTIL(h->base, h->sunk.len == sizeof(big) + 4 + 1004, GWT_RIG_WAIT_MS);
	assert_int_equal(h->sunk.len, sizeof(big) + 4 + 1004);
	assert_false(tcp_conn_write_waiting(h->c));
	assert_false(h->closed);
	assert_int_equal(gwt_rig_free(h), 0);
}

/*
 * A peer that does not read: the flush that meets a full socket adds the
 * write event, further records wait for it without trying the socket, and
 * once the peer drains, everything arrives in order and the write event is
 * removed again.
 */
static void test_write_waits_for_full_socket(void **state)
{
	(void)state;
	struct gwt_rig *h = gwt_rig_new(false);
	const unsigned int n = 200;
	int base_events;
	uint64_t writes;

	h->cfg.out_high = 0;
	assert_int_equal(gwt_rig_start(h), 0);
	assert_int_equal(gwt_rig_shrink_sndbuf(h), 0);
	base_events = added_events(h);
	assert_int_equal(gwt_rig_send_records(h, 0, n / 2, 1000), 0);
	event_base_loop(h->base, EVLOOP_NONBLOCK);
	assert_true(tcp_conn_output_queued(h->c) > 0);
	assert_true(tcp_conn_write_waiting(h->c));
	assert_int_equal(tcp_conn_stats(h->c)->write_waits, 1);
	assert_int_equal(added_events(h), base_events + 1);
	/* more output while the socket is full: queued, no futile sendmsg() */
	writes = tcp_conn_stats(h->c)->writes;
	assert_int_equal(gwt_rig_send_records(h, n / 2, n - n / 2, 1000), 0);
	gwt_run_for(h->base, 50);
	assert_int_equal(tcp_conn_stats(h->c)->writes, writes);
	assert_true(tcp_conn_write_waiting(h->c));

	gwt_rig_sink(h, true);
	GWT_RUN_UNTIL(h->base, h->sunk.len == n * 1004, GWT_RIG_WAIT_MS);
	assert_int_equal(gwt_rig_decode_sunk(h, 1000), n);
	assert_int_equal(tcp_conn_output_queued(h->c), 0);
	assert_false(tcp_conn_write_waiting(h->c));
	/* the sink's event, not the connection's write event */
	assert_int_equal(added_events(h), base_events + 1);
	gwt_rig_sink(h, false);
	assert_int_equal(added_events(h), base_events);
	assert_int_equal(gwt_rig_free(h), 0);
}

static void test_output_limit(void **state)
{
	(void)state;
	struct gwt_rig *h = gwt_rig_new(false);
	uint8_t rec[1000];
	unsigned int sent = 0;

	h->cfg.out_high = 0;
	h->cfg.out_max = 20000;
	assert_int_equal(gwt_rig_start(h), 0);
	/* nothing is written while the loop does not run: all of it is queued */
	while (sent < 1000) {
		gwt_pattern_fill(rec, sent, sizeof(rec));
		size_t before = tcp_conn_output_queued(h->c);
		if (tcp_conn_send_copy(h->c, rec, sizeof(rec)) < 0) {
			assert_int_equal(errno, ENOBUFS);
			/* all or nothing */
			assert_int_equal(tcp_conn_output_queued(h->c), before);
			break;
		}
		sent++;
	}
	assert_int_equal(sent, 20000 / 1004);
	assert_int_equal(h->congested_calls, 0);
	gwt_rig_sink(h, true);
	GWT_RUN_UNTIL(h->base, tcp_conn_output_queued(h->c) == 0 && h->sunk.len == sent * 1004,
		      GWT_RIG_WAIT_MS);
	assert_int_equal(gwt_rig_decode_sunk(h, 1000), sent);
	/* room again */
	assert_int_equal(tcp_conn_send_copy(h->c, rec, sizeof(rec)), 0);
	/* and a record no mark can describe is refused outright */
	struct tcp_piece big[2] = { { .data = rec, .len = RM_LEN_MASK },
				    { .data = rec, .len = 1 } };
	assert_int_equal(tcp_conn_send_record(h->c, big, 2), -1);
	assert_int_equal(errno, EMSGSIZE);
	assert_int_equal(gwt_rig_free(h), 0);
}

/*
 * A reply as a mark plus pieces: a copied header and bulk by reference.
 * The referenced bytes are sent from where they lie (a change made after
 * queueing shows on the wire), and each reference is put exactly once.
 */
static void test_send_by_reference(void **state)
{
	(void)state;
	struct gwt_rig *h = gwt_rig_new(true);
	uint8_t hdr[12];
	struct gw_buf *a, *b;

	assert_int_equal(gwt_rig_start(h), 0);
	a = gwt_bufsrc_alloc(&h->src.src, 100000);
	b = gwt_bufsrc_alloc(&h->src.src, 50000);
	gwt_pattern_fill(a->base, 1, a->size);
	gwt_pattern_fill(b->base, 2, b->size);
	gwt_pattern_fill(hdr, 3, sizeof(hdr));
	const struct tcp_piece pcs[] = {
		{ .data = hdr, .len = sizeof(hdr) },
		{ .buf = a, .off = 0, .len = 100000 },
		{ .buf = b, .off = 10, .len = 40000 },
		{ .buf = a, .off = 500, .len = 1000 },
	};
	assert_int_equal(tcp_conn_send_record(h->c, pcs, 4), 0);
	assert_int_equal(a->refs, 3);
	assert_int_equal(b->refs, 2);
	gw_buf_put(a);
	gw_buf_put(b);
	/* by reference, not copied */
	a->base[0] = 0xee;
	hdr[0] = 0xdd;
	unsigned int frees = h->src.frees;
	gwt_rig_sink(h, true);
	const size_t total = 4 + 12 + 100000 + 40000 + 1000;
	GWT_RUN_UNTIL(h->base, h->sunk.len == total && h->src.frees == frees + 2, GWT_RIG_WAIT_MS);
	assert_int_equal(h->sunk.len, total);
	assert_int_equal(h->src.frees, frees + 2);

	const uint8_t *p = h->sunk.data;
	assert_int_equal(xdr_get32(p), RM_LAST_FRAG | (total - 4));
	p += 4;
	assert_int_equal(p[0], gwt_pattern(3, 0)); /* the header was copied */
	for (size_t i = 1; i < 12; i++)
		assert_int_equal(p[i], gwt_pattern(3, i));
	p += 12;
	assert_int_equal(p[0], 0xee); /* the bulk was not */
	for (size_t i = 1; i < 100000; i++)
		assert_int_equal(p[i], gwt_pattern(1, i));
	p += 100000;
	for (size_t i = 0; i < 40000; i++)
		assert_int_equal(p[i], gwt_pattern(2, 10 + i));
	p += 40000;
	for (size_t i = 0; i < 1000; i++)
		assert_int_equal(p[i], gwt_pattern(1, 500 + i));
	assert_int_equal(tcp_conn_stats(h->c)->bytes_out, total);
	assert_int_equal(gwt_rig_free(h), 0);
}

/*
 * A piece that reaches past its buffer (a length from a peer gone wrong) is
 * refused before any byte of the record is queued: nothing beyond the
 * buffer reaches the socket, no reference is taken, and the connection
 * stays usable for the next record.
 */
static void test_piece_outside_buffer(void **state)
{
	(void)state;
	struct gwt_rig *h = gwt_rig_new(true);
	uint8_t hdr[8] = { 0 };
	struct gw_buf *a;

	assert_int_equal(gwt_rig_start(h), 0);
	a = gwt_bufsrc_alloc(&h->src.src, 4096);
	gwt_pattern_fill(a->base, 4, a->size);
	const struct tcp_piece bad[] = {
		{ .data = hdr, .len = sizeof(hdr) },
		{ .buf = a, .off = 4000, .len = 200 },
	};
	size_t before = tcp_conn_output_queued(h->c);
	assert_int_equal(tcp_conn_send_record(h->c, bad, 2), -1);
	assert_int_equal(errno, EFAULT);
	assert_int_equal(tcp_conn_output_queued(h->c), before);
	assert_int_equal(a->refs, 1);
	/* the same through the one-piece call, with an offset past the end */
	assert_int_equal(tcp_conn_send_ref(h->c, a, a->size + 1, 1), -1);
	assert_int_equal(errno, EFAULT);
	/* a piece inside the buffer still goes */
	assert_int_equal(tcp_conn_send_ref(h->c, a, 96, 4000), 0);
	gw_buf_put(a);
	gwt_rig_sink(h, true);
	GWT_RUN_UNTIL(h->base, h->sunk.len == 4 + 4000, GWT_RIG_WAIT_MS);
	assert_int_equal(h->sunk.len, 4 + 4000);
	assert_int_equal(xdr_get32(h->sunk.data), RM_LAST_FRAG | 4000);
	for (size_t i = 0; i < 4000; i++)
		assert_int_equal(h->sunk.data[4 + i], gwt_pattern(4, 96 + i));
	assert_int_equal(gwt_rig_free(h), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_watermarks),
		cmocka_unit_test(test_output_limit),
		cmocka_unit_test(test_flush_once_per_pass),
		cmocka_unit_test(test_flush_now),
		cmocka_unit_test(test_flush_now_full_socket),
		cmocka_unit_test(test_write_waits_for_full_socket),
		cmocka_unit_test(test_send_by_reference),
		cmocka_unit_test(test_piece_outside_buffer),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
