/* SPDX-License-Identifier: MIT */
/*
 * What tcp/tcp_conn.c does with a client that sends more than a route
 * carries or takes too long over it: a record larger than the route's
 * largest is reported to the owner with its head and skipped without a buffer
 * of its size when the route says so (and closes the connection otherwise),
 * and a record that does not arrive whole within the record deadline closes
 * it, while records sent slowly or pipelined, each finished in time, do not.
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

#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>

#include <event2/event.h>

#include "common/xdr.h"
#include "tcp/tcp_conn.h"

#include "support/loop.h"
#include "support/record.h"
#include "support/tcprig.h"

/* ---- the record deadline ----------------------------------------------------- */

/* The peer sends a stream a few bytes at a time, one piece per interval. */
struct drip {
	struct gwt_rig *h;
	struct event *ev;
	struct gwt_stream s;
	size_t pos;
	size_t chunk;
};

static void drip_cb(evutil_socket_t fd, short what, void *arg)
{
	struct drip *d = arg;
	size_t n = d->s.len - d->pos < d->chunk ? d->s.len - d->pos : d->chunk;

	(void)fd;
	(void)what;
	if (n == 0) {
		event_del(d->ev);
		return;
	}
	if (send(d->h->peer, d->s.data + d->pos, n, MSG_NOSIGNAL) == (ssize_t)n)
		d->pos += n;
}

static void drip_start(struct drip *d, struct gwt_rig *h, size_t chunk, unsigned int interval_ms)
{
	struct timeval tv = { interval_ms / 1000, (suseconds_t)(interval_ms % 1000) * 1000 };

	d->h = h;
	d->chunk = chunk;
	d->ev = event_new(h->base, -1, EV_PERSIST, drip_cb, d);
	assert_non_null(d->ev);
	assert_int_equal(event_add(d->ev, &tv), 0);
}

static void drip_free(struct drip *d)
{
	event_free(d->ev);
	free(d->s.data);
}

/*
 * A client that sends a record's mark and then a byte every 50 ms is cut
 * off once the record is 300 ms old; the time it sat idle before the mark
 * does not count.
 */
static void test_record_deadline_trickle(void **state)
{
	(void)state;
	struct gwt_rig *h = gwt_rig_new(true);
	struct gwt_stream first = { 0 };
	struct drip d = { 0 };

	h->cfg.record_timeout_ms = 300;
	assert_int_equal(gwt_rig_start(h), 0);
	gwt_stream_record(&first, 0, 100, 0);
	assert_int_equal(gwt_rig_write_now(h, &first), 0);
	GWT_RUN_UNTIL(h->base, h->nrec == 1, GWT_RIG_WAIT_MS);
	assert_int_equal(h->nrec, 1);
	/* idle between records, longer than the deadline */
	gwt_run_for(h->base, 700);
	assert_false(h->closed);
	/* then a record of 100 bytes, one byte at a time: 5 s to finish */
	gwt_stream_record(&d.s, 1, 100, 0);
	drip_start(&d, h, 1, 50);
	GWT_RUN_UNTIL(h->base, h->closed, GWT_RIG_WAIT_MS);
	assert_true(h->closed);
	assert_int_equal(h->why.reason, TCP_CLOSE_RECORD_TIMEOUT);
	assert_string_equal(tcp_close_reason_name(h->why.reason), "record_timeout");
	assert_int_equal(h->nrec, 1);
	/* cut off well before the record could have been finished */
	assert_true(d.pos < d.s.len);
	/* its half record's buffer went back */
	assert_int_equal(h->src.outstanding, 0);
	drip_free(&d);
	free(first.data);
	assert_int_equal(gwt_rig_free(h), 0);
}

/*
 * A client that sends its records slowly, each in two pieces 100 ms
 * apart and 450 ms between records, is not cut off: each record is
 * finished well within the deadline, and between records it is idle, not
 * late.
 */
static void test_record_deadline_slow_records(void **state)
{
	(void)state;
	struct gwt_rig *h = gwt_rig_new(true);
	const unsigned int n = 4;

	h->cfg.record_timeout_ms = 300;
	assert_int_equal(gwt_rig_start(h), 0);
	for (unsigned int r = 0; r < n; r++) {
		struct gwt_stream s = { 0 };

		gwt_stream_record(&s, r, 200, 0);
		assert_int_equal(send(h->peer, s.data, 100, MSG_NOSIGNAL), 100);
		gwt_run_for(h->base, 100);
		assert_int_equal(send(h->peer, s.data + 100, s.len - 100, MSG_NOSIGNAL),
				 (ssize_t)(s.len - 100));
		GWT_RUN_UNTIL(h->base, h->nrec == r + 1 || h->closed, GWT_RIG_WAIT_MS);
		assert_int_equal(h->nrec, r + 1);
		gwt_run_for(h->base, 450);
		assert_false(h->closed);
		free(s.data);
	}
	assert_false(h->bad_content);
	assert_int_equal(gwt_rig_free(h), 0);
}

/*
 * A client that pipelines, so that some record is always under way but
 * each one is finished soon after it starts, is not cut off either: the
 * deadline is per record, not per stretch of traffic.
 */
static void test_record_deadline_pipelined(void **state)
{
	(void)state;
	struct gwt_rig *h = gwt_rig_new(true);
	struct drip d = { 0 };
	const unsigned int n = 20;

	h->cfg.record_timeout_ms = 300;
	assert_int_equal(gwt_rig_start(h), 0);
	/* 204 bytes a record, 250 a piece: no piece ends where a record does */
	for (unsigned int r = 0; r < n; r++)
		gwt_stream_record(&d.s, r, 200, 0);
	drip_start(&d, h, 250, 100);
	GWT_RUN_UNTIL(h->base, h->nrec == n || h->closed, GWT_RIG_WAIT_MS);
	assert_false(h->closed);
	assert_int_equal(h->nrec, n);
	assert_false(h->bad_content);
	drip_free(&d);
	assert_int_equal(gwt_rig_free(h), 0);
}

/* ---- oversized records ------------------------------------------------------- */

struct over_seen {
	unsigned int calls;
	uint8_t head[RM_OVERSIZED_HEAD];
	uint32_t head_len;
	uint64_t record_len;
	bool reply;
};

static struct over_seen over_seen;

/* The owner's part: keep the head, and answer the call by its XID at once. */
static void on_oversized(struct tcp_conn *c, const uint8_t *head, uint32_t head_len,
			 uint64_t record_len, void *arg)
{
	(void)arg;
	over_seen.calls++;
	over_seen.head_len = head_len;
	over_seen.record_len = record_len;
	memcpy(over_seen.head, head, head_len <= sizeof(over_seen.head) ? head_len : 0);
	if (over_seen.reply && head_len >= 4)
		assert_int_equal(tcp_conn_send_copy(c, head, 4), 0);
}

static const struct tcp_conn_ops ops_oversized = {
	.record = gwt_rig_record,
	.output_pressure = gwt_rig_pressure,
	.starved = gwt_rig_starved,
	.closed = gwt_rig_closed,
	.oversized = on_oversized,
};

/* A call of len bytes with an XID and a call header in front; the rest is filler. */
static void stream_big_call(struct gwt_stream *s, uint32_t xid, size_t len)
{
	uint8_t hdr[24];
	uint8_t fill[4096];

	xdr_put32(hdr, xid);
	xdr_put32(hdr + 4, 0);	     /* CALL */
	xdr_put32(hdr + 8, 2);	     /* RPC version */
	xdr_put32(hdr + 12, 100003); /* NFS */
	xdr_put32(hdr + 16, 3);
	xdr_put32(hdr + 20, 7); /* WRITE */
	memset(fill, 0xa5, sizeof(fill));
	gwt_stream_mark(s, (uint32_t)len, true);
	gwt_stream_put(s, hdr, sizeof(hdr));
	for (size_t done = sizeof(hdr); done < len;) {
		size_t n = len - done < sizeof(fill) ? len - done : sizeof(fill);

		gwt_stream_put(s, fill, n);
		done += n;
	}
}

/*
 * A client sends a record larger than the route carries, then a normal
 * one: the large one is reported once with its head (the XID readable),
 * answered from the callback, and thrown away without a buffer of its size;
 * the normal one is delivered and the connection stays open for more.
 */
static void test_oversized_skipped(void **state)
{
	(void)state;
	struct gwt_rig *h = gwt_rig_new(false);
	struct gwt_stream s = { 0 };
	const size_t big = 100000;

	memset(&over_seen, 0, sizeof(over_seen));
	over_seen.reply = true;
	h->cfg.max_record = 8192;
	h->cfg.skip_oversized = true;
	stream_big_call(&s, 0xdeadbeef, big);
	gwt_stream_record(&s, 0, 300, 0);
	h->c = tcp_conn_new(h->base, h->conn_fd, &h->cfg, &h->src.src, &ops_oversized, h);
	assert_non_null(h->c);
	gwt_rig_sink(h, true);
	gwt_rig_feed(h, &s);
	GWT_RUN_UNTIL(h->base, (h->nrec == 1 && h->sunk.len >= 8) || h->closed, GWT_RIG_WAIT_MS);
	assert_false(h->closed);
	assert_int_equal(h->nrec, 1);
	assert_false(h->bad_content);
	assert_int_equal(h->lens[0], 300);
	assert_int_equal(over_seen.calls, 1);
	assert_int_equal(over_seen.head_len, RM_OVERSIZED_HEAD);
	assert_int_equal(xdr_get32(over_seen.head), 0xdeadbeef);
	assert_int_equal(xdr_get32(over_seen.head + 12), 100003);
	assert_int_equal(over_seen.record_len, big);
	/* the answer went out on the same connection */
	assert_int_equal(h->sunk.len, 8);
	assert_int_equal(xdr_get32(h->sunk.data), RM_LAST_FRAG | 4);
	assert_int_equal(xdr_get32(h->sunk.data + 4), 0xdeadbeef);

	const struct tcp_conn_stats *st = tcp_conn_stats(h->c);
	assert_int_equal(st->records_in, 1);
	assert_int_equal(st->records_skipped, 1);
	assert_int_equal(st->bytes_skipped, big);
	assert_int_equal(st->bytes_in, s.len);
	/* never a buffer for the record's size, nor even for the largest record */
	assert_true(h->src.largest < h->cfg.max_record);

	/* The connection goes on: another record, and another oversized one. */
	s.len = 0;
	gwt_stream_record(&s, 1, 5000, 0);
	stream_big_call(&s, 0x01020304, 9000);
	gwt_rig_feed(h, &s);
	GWT_RUN_UNTIL(h->base, (h->nrec == 2 && over_seen.calls == 2) || h->closed,
		      GWT_RIG_WAIT_MS);
	assert_false(h->closed);
	assert_int_equal(h->nrec, 2);
	assert_false(h->bad_content);
	assert_int_equal(over_seen.calls, 2);
	assert_int_equal(xdr_get32(over_seen.head), 0x01020304);
	GWT_RUN_UNTIL(h->base, tcp_conn_stats(h->c)->bytes_skipped == big + 9000 || h->closed,
		      GWT_RIG_WAIT_MS);
	assert_int_equal(tcp_conn_stats(h->c)->records_skipped, 2);
	assert_int_equal(tcp_conn_stats(h->c)->bytes_skipped, big + 9000);
	assert_true(tcp_conn_fd(h->c) >= 0);
	/* idle again: no buffer held */
	assert_int_equal(h->src.outstanding, 0);
	assert_int_equal(gwt_rig_free(h), 0);
	free(s.data);
}

/* Without the flag, or without the callback, a record too large closes the connection as ever. */
static void check_oversized_closes(bool flag, const struct tcp_conn_ops *o)
{
	struct gwt_rig *h = gwt_rig_new(false);
	struct gwt_stream s = { 0 };

	memset(&over_seen, 0, sizeof(over_seen));
	h->cfg.max_record = 8192;
	h->cfg.skip_oversized = flag;
	gwt_stream_record(&s, 0, 100, 0);
	stream_big_call(&s, 0xdeadbeef, 100000);
	gwt_stream_record(&s, 1, 300, 0);
	h->c = tcp_conn_new(h->base, h->conn_fd, &h->cfg, &h->src.src, o, h);
	assert_non_null(h->c);
	gwt_rig_feed(h, &s);
	GWT_RUN_UNTIL(h->base, h->closed, GWT_RIG_WAIT_MS);
	assert_true(h->closed);
	assert_int_equal(h->why.reason, TCP_CLOSE_BAD_RECORD);
	assert_int_equal(h->why.record_err, RM_ERR_FRAGMENT_TOO_LARGE);
	assert_int_equal(h->nrec, 1);
	assert_int_equal(over_seen.calls, 0);
	assert_int_equal(gwt_rig_free(h), 0);
	free(s.data);
}

static void test_oversized_closes_without_skip(void **state)
{
	(void)state;
	check_oversized_closes(false, &ops_oversized);
	check_oversized_closes(true, &gwt_rig_ops);
}
int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_record_deadline_trickle),
		cmocka_unit_test(test_record_deadline_slow_records),
		cmocka_unit_test(test_record_deadline_pipelined),
		cmocka_unit_test(test_oversized_skipped),
		cmocka_unit_test(test_oversized_closes_without_skip),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
