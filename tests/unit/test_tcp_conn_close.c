/* SPDX-License-Identifier: MIT */
/*
 * How a tcp/tcp_conn.c connection ends, and what its owner is told: a
 * malformed record stream (each kind of bad mark, a truncated record), the
 * peer's EOF between records, a reset, a write to a peer gone away (EPIPE,
 * not SIGPIPE; from tcp_conn_flush_now() too, told from the loop), an abort
 * by the owner (queued output released), a graceful close that delivers
 * everything queued first, and a close that a peer which neither drains nor
 * closes cannot hold up past its timeout.
 *
 * Each test runs a tcp_conn on a real event loop against the test's end of
 * its socket (support/tcprig.h); every wait has a generous deadline and
 * nothing asserts speed.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <event2/event.h>

#include "tcp/tcp_conn.h"

#include "support/loop.h"
#include "support/record.h"
#include "support/tcprig.h"

/* The peer closes its end; h->peer then holds /dev/null, for gwt_rig_free() to close. */
static void peer_gone(struct gwt_rig *h)
{
	close(h->peer);
	h->peer = open("/dev/null", O_RDONLY);
}

/* The connection closes, within the deadline, for @reason. */
static void assert_closes(struct gwt_rig *h, enum tcp_close_reason reason)
{
	GWT_RUN_UNTIL(h->base, h->closed, GWT_RIG_WAIT_MS);
	assert_true(h->closed);
	assert_int_equal(h->why.reason, reason);
}

/*
 * A buffer of @size bytes of @fill queued by reference, the test's own
 * reference put: the queued output holds the only one.
 */
static void send_buffer(struct gwt_rig *h, size_t size, int fill)
{
	struct gw_buf *a = gwt_bufsrc_alloc(&h->src.src, size);

	memset(a->base, fill, a->size);
	assert_int_equal(tcp_conn_send_ref(h->c, a, 0, a->size), 0);
	gw_buf_put(a);
}

static void check_bad_record(enum rm_error want)
{
	struct gwt_rig *h = gwt_rig_new(want == RM_ERR_TRUNCATED);
	struct gwt_stream s = { 0 };

	h->cfg.max_record = 1000;
	gwt_stream_record(&s, 0, 10, 0);
	gwt_stream_record(&s, 1, 1000, 300);
	switch (want) {
	case RM_ERR_FRAGMENT_TOO_LARGE:
		gwt_stream_mark(&s, 1001, true);
		break;
	case RM_ERR_RECORD_TOO_LARGE: {
		uint8_t body[600] = { 0 };

		gwt_stream_mark(&s, 600, false);
		gwt_stream_put(&s, body, sizeof(body));
		gwt_stream_mark(&s, 401, true);
		break;
	}
	case RM_ERR_EMPTY_FRAGMENT:
		gwt_stream_mark(&s, 0, false);
		break;
	case RM_ERR_EMPTY_RECORD:
		gwt_stream_mark(&s, 0, true);
		break;
	default:
		gwt_stream_mark(&s, 100, true);
		gwt_stream_put(&s, "abc", 3);
		break;
	}
	/* what follows a bad mark is never looked at */
	gwt_stream_record(&s, 2, 10, 0);
	if (want == RM_ERR_TRUNCATED)
		s.len -= 14;
	assert_int_equal(gwt_rig_start(h), 0);
	gwt_rig_feed(h, &s);
	gwt_rig_sink(h, true);
	if (want == RM_ERR_TRUNCATED) {
		GWT_RUN_UNTIL(h->base, h->feed_pos == s.len, GWT_RIG_WAIT_MS);
		shutdown(h->peer, SHUT_WR);
	}
	assert_closes(h, TCP_CLOSE_BAD_RECORD);
	assert_int_equal(h->why.record_err, want);
	assert_int_equal(h->nrec, 2);
	assert_false(h->bad_content);
	/* the peer sees the connection go */
	GWT_RUN_UNTIL(h->base, h->sink_eof || h->sink_err != 0, GWT_RIG_WAIT_MS);
	assert_true(h->sink_eof || h->sink_err == ECONNRESET);
	assert_int_equal(gwt_rig_free(h), 0);
	free(s.data);
}

static void test_bad_record_closes(void **state)
{
	(void)state;
	check_bad_record(RM_ERR_FRAGMENT_TOO_LARGE);
	check_bad_record(RM_ERR_RECORD_TOO_LARGE);
	check_bad_record(RM_ERR_EMPTY_FRAGMENT);
	check_bad_record(RM_ERR_EMPTY_RECORD);
	check_bad_record(RM_ERR_TRUNCATED);
	assert_string_equal(tcp_close_reason_name(TCP_CLOSE_BAD_RECORD), "bad-record");
}

static void test_eof_between_records(void **state)
{
	(void)state;
	struct gwt_rig *h = gwt_rig_new(true);
	struct gwt_stream s = { 0 };

	for (unsigned int r = 0; r < 3; r++)
		gwt_stream_record(&s, r, 100 * (r + 1), 0);
	assert_int_equal(gwt_rig_start(h), 0);
	/* replies must not wait for ACKs */
	int nodelay = 0;
	socklen_t sl = sizeof(nodelay);
	assert_int_equal(getsockopt(tcp_conn_fd(h->c), IPPROTO_TCP, TCP_NODELAY, &nodelay, &sl), 0);
	assert_int_equal(nodelay, 1);
	assert_int_equal(gwt_rig_write_now(h, &s), 0);
	shutdown(h->peer, SHUT_WR);
	assert_closes(h, TCP_CLOSE_EOF);
	assert_int_equal(h->nrec, 3);
	assert_int_equal(gwt_rig_free(h), 0);
	free(s.data);
}

static void test_peer_reset(void **state)
{
	(void)state;
	struct gwt_rig *h = gwt_rig_new(true);
	struct linger lg = { .l_onoff = 1, .l_linger = 0 };

	assert_int_equal(gwt_rig_start(h), 0);
	assert_int_equal(setsockopt(h->peer, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg)), 0);
	peer_gone(h);
	assert_closes(h, TCP_CLOSE_ERROR);
	assert_int_equal(h->why.err, ECONNRESET);
	assert_int_equal(gwt_rig_free(h), 0);
}

/*
 * A connection with 4 bytes queued for a peer gone away: it is not reading,
 * so it cannot notice the EOF first.
 */
static struct gwt_rig *sending_to_gone_peer(void)
{
	struct gwt_rig *h = gwt_rig_new(false);

	assert_int_equal(gwt_rig_start(h), 0);
	tcp_conn_pause_read(h->c);
	peer_gone(h);
	assert_int_equal(tcp_conn_send_copy(h->c, "abcd", 4), 0);
	return h;
}

/*
 * A write error inside tcp_conn_flush_now() runs no callback there: the
 * owner hears of it from the loop, as it would have without the call.
 */
static void test_flush_now_error_from_loop(void **state)
{
	(void)state;
	struct gwt_rig *h = sending_to_gone_peer();

	tcp_conn_flush_now(h->c);
	assert_false(h->closed);
	assert_non_null(h->c);
	assert_closes(h, TCP_CLOSE_ERROR);
	assert_int_equal(h->why.err, EPIPE);
	assert_int_equal(gwt_rig_free(h), 0);
}

/* A peer gone away: the write fails with EPIPE, reported, not a SIGPIPE. */
static void test_send_to_closed_peer(void **state)
{
	(void)state;
	struct gwt_rig *h = sending_to_gone_peer();

	assert_closes(h, TCP_CLOSE_ERROR);
	assert_int_equal(h->why.err, EPIPE);
	assert_int_equal(gwt_rig_free(h), 0);
}

/* Output dropped by an abort releases its references exactly once too. */
static void test_abort_releases_references(void **state)
{
	(void)state;
	struct gwt_rig *h = gwt_rig_new(false);

	assert_int_equal(gwt_rig_start(h), 0);
	assert_int_equal(gwt_rig_shrink_sndbuf(h), 0);
	send_buffer(h, 1 << 20, 'x');
	/* part of it goes out, the rest stays queued */
	GWT_RUN_UNTIL(h->base, tcp_conn_stats(h->c)->bytes_out > 0, GWT_RIG_WAIT_MS);
	gwt_run_for(h->base, 20);
	assert_true(tcp_conn_output_queued(h->c) > 0);
	assert_int_equal(h->src.frees, 0);
	tcp_conn_abort(h->c);
	assert_int_equal(h->src.frees, 1);
	assert_int_equal(tcp_conn_output_queued(h->c), 0);
	assert_int_equal(tcp_conn_fd(h->c), -1);
	/* aborted by the owner: no closed callback, sends refused */
	assert_false(h->closed);
	assert_int_equal(tcp_conn_send_copy(h->c, "x", 1), -1);
	assert_int_equal(errno, ENOTCONN);
	assert_int_equal(gwt_rig_free(h), 0);
}

static void test_graceful_close(void **state)
{
	(void)state;
	struct gwt_rig *h = gwt_rig_new(true);
	uint8_t rec[1000] = { 0 };
	const unsigned int n = 300;

	assert_int_equal(gwt_rig_start(h), 0);
	assert_int_equal(gwt_rig_send_records(h, 0, n, sizeof(rec)), 0);
	tcp_conn_close(h->c);
	/* never from inside the owner's own call */
	assert_false(h->closed);
	assert_int_equal(tcp_conn_send_copy(h->c, rec, sizeof(rec)), -1);
	assert_int_equal(errno, ENOTCONN);
	/* everything queued arrives, then the half-close */
	gwt_rig_sink(h, true);
	GWT_RUN_UNTIL(h->base, h->sink_eof, GWT_RIG_WAIT_MS);
	assert_true(h->sink_eof);
	assert_int_equal(gwt_rig_decode_sunk(h, 1000), n);
	assert_false(h->closed);
	/* the peer closes in turn */
	peer_gone(h);
	assert_closes(h, TCP_CLOSE_LOCAL);
	assert_int_equal(gwt_rig_free(h), 0);
}

/* A peer that neither drains nor closes cannot hold a close up forever. */
static void test_close_timeout(void **state)
{
	(void)state;

	for (int drains = 0; drains < 2; drains++) {
		struct gwt_rig *h = gwt_rig_new(true);

		h->cfg.close_timeout_ms = 300;
		assert_int_equal(gwt_rig_start(h), 0);
		assert_int_equal(gwt_rig_shrink_sndbuf(h), 0);
		/* more than the socket buffers hold, unless the peer drains */
		send_buffer(h, 8 << 20, 'y');
		gwt_rig_sink(h, drains);
		tcp_conn_close(h->c);
		assert_closes(h, TCP_CLOSE_TIMEOUT);
		/* the queued reference went back once */
		assert_int_equal(h->src.frees, 1);
		assert_int_equal(gwt_rig_free(h), 0);
	}
}
int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_bad_record_closes),
		cmocka_unit_test(test_eof_between_records),
		cmocka_unit_test(test_peer_reset),
		cmocka_unit_test(test_flush_now_error_from_loop),
		cmocka_unit_test(test_send_to_closed_peer),
		cmocka_unit_test(test_abort_releases_references),
		cmocka_unit_test(test_graceful_close),
		cmocka_unit_test(test_close_timeout),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
