/* SPDX-License-Identifier: MIT */
/*
 * Tests of tcp/tcp_conn.c on a real event loop, over socketpairs and
 * loopback TCP. The test's end of the connection (the "peer") writes from
 * a feeder event in chunks of random size, so records arrive across
 * partial reads, and reads through a sink event that can be switched off
 * to play a client that does not drain its replies.
 *
 * Buffers come from a test source that allocates exactly the size asked
 * (ASan sees overruns), can be limited to play a dry pool, and counts
 * allocations and frees. Every wait has a generous deadline; nothing
 * asserts speed.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <event2/event.h>

#include "common/turns.h"
#include "common/xdr.h"
#include "tcp/tcp_conn.h"

#include "support/loop.h"
#include "support/record.h"

#define MAX_RECS 2048
#define WAIT_MS	 30000

/* ---- a buffer source ------------------------------------------------------ */

struct tsrc {
	struct gw_buf_source src;
	unsigned int limit; /* most buffers out at once; 0: no limit */
	unsigned int outstanding;
	unsigned int allocs;
	unsigned int frees;
	unsigned int failed;
	size_t largest;
	/* If set, the pool's two classes: requests above small get a buffer of big bytes. */
	size_t small, big;
};

static void tsrc_free(struct gw_buf *b)
{
	struct tsrc *s = b->pool;

	assert_int_equal(b->refs, 0);
	s->outstanding--;
	s->frees++;
	free(b->base);
	free(b);
}

static struct gw_buf *tsrc_alloc(struct gw_buf_source *src, size_t min_size)
{
	struct tsrc *s = (struct tsrc *)src;
	struct gw_buf *b;

	if (s->limit != 0 && s->outstanding >= s->limit) {
		s->failed++;
		return NULL;
	}
	if (s->big != 0 && min_size > s->small && min_size <= s->big)
		min_size = s->big;
	b = calloc(1, sizeof(*b));
	assert_non_null(b);
	b->base = malloc(min_size);
	assert_non_null(b->base);
	b->size = (uint32_t)min_size;
	b->refs = 1;
	b->free_fn = tsrc_free;
	b->pool = s;
	s->outstanding++;
	s->allocs++;
	if (min_size > s->largest)
		s->largest = min_size;
	return b;
}

/* ---- streams -------------------------------------------------------------- */

static uint32_t lcg(uint32_t *seed)
{
	*seed = *seed * 1103515245u + 12345u;
	return *seed >> 8;
}

/* ---- the harness ---------------------------------------------------------- */

struct harness {
	struct event_base *base;
	struct event *tick;
	evutil_socket_t peer;
	evutil_socket_t conn_fd;
	struct tcp_conn *c;
	struct tcp_conn_config cfg;
	struct tsrc src;

	/* records in */
	unsigned int nrec;
	uint32_t lens[MAX_RECS];
	uint64_t rx_wait_us[MAX_RECS]; /* tcp_conn_rx_wait_us() in the callback */
	struct gw_buf *held[MAX_RECS];
	bool hold;
	bool bad_content;
	unsigned int pause_at;
	unsigned int free_at;

	/* callbacks */
	bool closed;
	struct tcp_close_info why;
	unsigned int congested_calls;
	unsigned int relieved_calls;
	size_t queued_at_congested;
	size_t queued_at_relieved;
	unsigned int starved_calls;

	/* the peer writing */
	struct event *feed_ev;
	struct gwt_stream feed;
	size_t feed_pos;
	size_t feed_max_chunk;
	uint32_t feed_seed;

	/* the peer reading */
	struct event *sink_ev;
	struct gwt_stream sunk;
	bool sink_eof;
	int sink_err;
};

static void on_record(struct tcp_conn *c, struct gw_buf *buf, uint32_t off, uint32_t len, void *arg)
{
	struct harness *h = arg;
	unsigned int r = h->nrec++;

	if (r >= MAX_RECS) {
		h->bad_content = true;
		gw_buf_put(buf);
		return;
	}
	h->lens[r] = len;
	h->rx_wait_us[r] = tcp_conn_rx_wait_us(c);
	if ((uint64_t)off + len > buf->size)
		h->bad_content = true;
	for (uint32_t i = 0; i < len && !h->bad_content; i++)
		if (buf->base[off + i] != gwt_pattern(r, i))
			h->bad_content = true;
	if (h->hold)
		h->held[r] = buf;
	else
		gw_buf_put(buf);
	if (h->pause_at != 0 && h->nrec == h->pause_at)
		tcp_conn_pause_read(c);
	if (h->free_at != 0 && h->nrec == h->free_at) {
		tcp_conn_free(c);
		h->c = NULL;
	}
}

static void on_pressure(struct tcp_conn *c, bool congested, void *arg)
{
	struct harness *h = arg;

	if (congested) {
		h->congested_calls++;
		h->queued_at_congested = tcp_conn_output_queued(c);
	} else {
		h->relieved_calls++;
		h->queued_at_relieved = tcp_conn_output_queued(c);
	}
}

static void on_starved(struct tcp_conn *c, void *arg)
{
	struct harness *h = arg;

	(void)c;
	h->starved_calls++;
}

/* The usual owner: free the connection when it closes. */
static void on_closed(struct tcp_conn *c, const struct tcp_close_info *why, void *arg)
{
	struct harness *h = arg;

	h->closed = true;
	h->why = *why;
	tcp_conn_free(c);
	h->c = NULL;
}

static const struct tcp_conn_ops ops = {
	.record = on_record,
	.output_pressure = on_pressure,
	.starved = on_starved,
	.closed = on_closed,
};

static void feed_cb(evutil_socket_t fd, short what, void *arg)
{
	struct harness *h = arg;
	size_t left = h->feed.len - h->feed_pos;
	size_t n = 1 + lcg(&h->feed_seed) % h->feed_max_chunk;
	ssize_t w;

	(void)what;
	if (left == 0) {
		event_del(h->feed_ev);
		return;
	}
	if (n > left)
		n = left;
	w = send(fd, h->feed.data + h->feed_pos, n, MSG_NOSIGNAL);
	if (w > 0)
		h->feed_pos += (size_t)w;
	else if (w < 0 && errno != EAGAIN && errno != EINTR)
		event_del(h->feed_ev);
}

static void sink_cb(evutil_socket_t fd, short what, void *arg)
{
	struct harness *h = arg;
	uint8_t buf[65536];

	(void)what;
	for (;;) {
		ssize_t n = read(fd, buf, sizeof(buf));

		if (n > 0) {
			gwt_stream_put(&h->sunk, buf, (size_t)n);
			continue;
		}
		if (n == 0)
			h->sink_eof = true;
		else if (errno == EAGAIN || errno == EINTR)
			return;
		else
			h->sink_err = errno;
		event_del(h->sink_ev);
		return;
	}
}

static void tick_cb(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	(void)arg;
}

static void make_pair(int fds[2], bool tcp)
{
	if (!tcp) {
		assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, fds), 0);
		return;
	}
	struct sockaddr_in sin = { .sin_family = AF_INET };
	socklen_t sl = sizeof(sin);
	int l = socket(AF_INET, SOCK_STREAM, 0);

	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_true(l >= 0);
	assert_int_equal(bind(l, (struct sockaddr *)&sin, sizeof(sin)), 0);
	assert_int_equal(listen(l, 1), 0);
	assert_int_equal(getsockname(l, (struct sockaddr *)&sin, &sl), 0);
	fds[1] = socket(AF_INET, SOCK_STREAM, 0);
	assert_int_equal(connect(fds[1], (struct sockaddr *)&sin, sizeof(sin)), 0);
	fds[0] = accept(l, NULL, NULL);
	assert_true(fds[0] >= 0);
	close(l);
}

/* Set up the loop and the socket pair; the test may adjust h->cfg, then h_start(). */
static struct harness *h_new(bool tcp)
{
	struct harness *h = calloc(1, sizeof(*h));
	struct timeval tv = { 0, 5000 };
	int fds[2];

	assert_non_null(h);
	h->base = event_base_new();
	assert_non_null(h->base);
	h->tick = event_new(h->base, -1, EV_PERSIST, tick_cb, NULL);
	event_add(h->tick, &tv);
	make_pair(fds, tcp);
	h->peer = fds[1];
	assert_int_equal(evutil_make_socket_nonblocking(h->peer), 0);
	h->src.src.alloc = tsrc_alloc;
	tcp_conn_config_default(&h->cfg);
	h->cfg.recv_size = 512;
	h->cfg.readahead = 64;
	h->feed_max_chunk = 4096;
	h->feed_seed = 1;
	h->feed_ev = event_new(h->base, h->peer, EV_WRITE | EV_PERSIST, feed_cb, h);
	h->sink_ev = event_new(h->base, h->peer, EV_READ | EV_PERSIST, sink_cb, h);
	h->conn_fd = fds[0];
	return h;
}

static void h_start(struct harness *h)
{
	h->c = tcp_conn_new(h->base, h->conn_fd, &h->cfg, &h->src.src, &ops, h);
	assert_non_null(h->c);
}

static void h_feed(struct harness *h, const struct gwt_stream *s)
{
	gwt_stream_put(&h->feed, s->data, s->len);
	event_add(h->feed_ev, NULL);
}

/* Write at once, bypassing the feeder (the loop is not running). */
static void h_write_now(struct harness *h, const struct gwt_stream *s)
{
	assert_int_equal(send(h->peer, s->data, s->len, MSG_NOSIGNAL), (ssize_t)s->len);
}

static void h_sink(struct harness *h, bool on)
{
	if (on)
		event_add(h->sink_ev, NULL);
	else
		event_del(h->sink_ev);
}

static void h_free(struct harness *h)
{
	for (unsigned int i = 0; i < h->nrec && i < MAX_RECS; i++)
		if (h->held[i])
			gw_buf_put(h->held[i]);
	if (h->c)
		tcp_conn_free(h->c);
	/* everything the connection took from the source went back */
	assert_int_equal(h->src.outstanding, 0);
	event_free(h->feed_ev);
	event_free(h->sink_ev);
	event_free(h->tick);
	close(h->peer);
	event_base_free(h->base);
	free(h->feed.data);
	free(h->sunk.data);
	free(h);
}

/* Decode the records the peer received; check their bytes; return how many. */
static unsigned int decode_sunk(const struct harness *h, uint32_t len_each)
{
	size_t pos = 0;
	unsigned int n = 0;

	while (pos < h->sunk.len) {
		assert_true(h->sunk.len - pos >= 4);
		uint32_t m = xdr_get32(h->sunk.data + pos);
		assert_true(m & RM_LAST_FRAG);
		assert_int_equal(m & RM_LEN_MASK, len_each);
		pos += 4;
		assert_true(h->sunk.len - pos >= len_each);
		for (uint32_t i = 0; i < len_each; i++)
			assert_int_equal(h->sunk.data[pos + i], gwt_pattern(n, i));
		pos += len_each;
		n++;
	}
	return n;
}

static void fill_pattern(uint8_t *p, unsigned int r, size_t len)
{
	for (size_t i = 0; i < len; i++)
		p[i] = gwt_pattern(r, i);
}

/* ---- input ---------------------------------------------------------------- */

static void check_many_sizes(bool tcp, bool multi)
{
	struct harness *h = h_new(tcp);
	struct gwt_stream s = { 0 };
	uint32_t seed = tcp ? 7 : 8;
	size_t want[200];
	const unsigned int n = 200;

	for (unsigned int r = 0; r < n; r++) {
		uint32_t x = lcg(&seed);
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
		gwt_stream_record(&s, r, want[r], multi ? 1 + lcg(&seed) % 50000 : 0);
	}
	h->feed_max_chunk = 70000;
	h_start(h);
	h_feed(h, &s);
	GWT_RUN_UNTIL(h->base, h->nrec == n || h->closed, WAIT_MS * 2);
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
	h_free(h);
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
	struct harness *h = h_new(false);
	struct gwt_stream s = { 0 };

	for (unsigned int r = 0; r < 5; r++)
		gwt_stream_record(&s, r, 20, 0);
	h->hold = true;
	h->cfg.readahead = 1024;
	h_start(h);
	h_write_now(h, &s);
	GWT_RUN_UNTIL(h->base, h->nrec == 5, WAIT_MS);
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
	h_free(h);
	free(s.data);
}

/* The gateway's settings and its pool's two buffer classes. */
static struct harness *h_new_gateway_like(bool tcp)
{
	struct harness *h = h_new(tcp);

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
	struct harness *h = h_new_gateway_like(false);
	struct gwt_stream s = { 0 };
	const unsigned int n = 24;

	for (unsigned int r = 0; r < n; r++)
		gwt_stream_record(&s, r, 4300, 0);
	h_start(h);
	h_write_now(h, &s);
	GWT_RUN_UNTIL(h->base, h->nrec == n, WAIT_MS);
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
	h_write_now(h, &s);
	GWT_RUN_UNTIL(h->base, h->nrec == 2 * n, WAIT_MS);
	assert_int_equal(h->nrec, 2 * n);
	assert_false(h->bad_content);
	assert_true(st->reads <= n);
	assert_int_equal(st->rx_moved, moved);
	h_free(h);
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
	struct harness *h = h_new_gateway_like(false);
	struct gwt_stream s = { 0 };
	const unsigned int n = 12;
	const struct tcp_conn_stats *st;

	h_start(h);
	st = tcp_conn_stats(h->c);
	for (unsigned int r = 0; r < n; r++) {
		uint64_t reads = st->reads, moved = st->rx_moved;
		s.len = 0;
		gwt_stream_record(&s, r, r == 6 ? 100 : 4300, 0);
		h_write_now(h, &s);
		GWT_RUN_UNTIL(h->base, h->nrec == r + 1, WAIT_MS);
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
	h_free(h);
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
		struct harness *h = h_new(true);
		struct gwt_stream s = { 0 };
		struct timespec pause = { 0, 30 * 1000 * 1000 };

		h->cfg.rx_timestamps = on;
		h_start(h);
		gwt_stream_record(&s, 0, 200, 0);
		h_write_now(h, &s);
		nanosleep(&pause, NULL); /* the loop is not running: the call waits */
		GWT_RUN_UNTIL(h->base, h->nrec == 1, WAIT_MS);
		assert_int_equal(h->nrec, 1);
		s.len = 0;
		gwt_stream_record(&s, 1, 200, 0);
		h_feed(h, &s); /* written from the loop, read in the same turns */
		GWT_RUN_UNTIL(h->base, h->nrec == 2, WAIT_MS);
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
		h_free(h);
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
	struct harness *h = h_new_gateway_like(false);
	struct gwt_stream s = { 0 };
	unsigned int n = 0;

	for (; n < 40; n++)
		gwt_stream_record(&s, n, 200, 0);
	for (; n < 46; n++)
		gwt_stream_record(&s, n, 700000, 0);
	h->feed_max_chunk = 1u << 20;
	h_start(h);
	h_feed(h, &s);
	GWT_RUN_UNTIL(h->base, h->nrec == n || h->closed, WAIT_MS * 2);
	assert_int_equal(h->nrec, n);
	assert_false(h->bad_content);

	const struct tcp_conn_stats *st = tcp_conn_stats(h->c);
	assert_int_equal(st->bytes_in, s.len);
	assert_true(st->rx_switches >= 6);
	assert_true(st->rx_moved <=
		    (4 + h->cfg.readahead_max) + (st->rx_switches - 1) * (4 + h->cfg.readahead));
	h_free(h);
	free(s.data);
}

/* The buffer is held only while part of a record sits in it. */
static void test_idle_buffer_released(void **state)
{
	(void)state;
	struct harness *h = h_new(true);
	struct gwt_stream s = { 0 };

	gwt_stream_record(&s, 0, 30, 0);
	gwt_stream_record(&s, 1, 3000, 0);
	h_start(h);
	struct gwt_stream first = { .data = s.data, .len = 34 + 100 };
	h_write_now(h, &first);
	GWT_RUN_UNTIL(h->base, h->nrec == 1 && tcp_conn_stats(h->c)->bytes_in == first.len,
		      WAIT_MS);
	assert_int_equal(h->nrec, 1);
	/* part of record 1 is pending */
	assert_int_equal(h->src.outstanding, 1);
	struct gwt_stream rest = { .data = s.data + first.len, .len = s.len - first.len };
	h_write_now(h, &rest);
	GWT_RUN_UNTIL(h->base, h->nrec == 2, WAIT_MS);
	assert_int_equal(h->nrec, 2);
	assert_false(h->bad_content);
	assert_int_equal(h->src.outstanding, 0);
	h_free(h);
	free(s.data);
}

static void check_bad_record(enum rm_error want)
{
	struct harness *h = h_new(want == RM_ERR_TRUNCATED);
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
	h_start(h);
	h_feed(h, &s);
	h_sink(h, true);
	if (want == RM_ERR_TRUNCATED) {
		GWT_RUN_UNTIL(h->base, h->feed_pos == s.len, WAIT_MS);
		shutdown(h->peer, SHUT_WR);
	}
	GWT_RUN_UNTIL(h->base, h->closed, WAIT_MS);
	assert_true(h->closed);
	assert_int_equal(h->why.reason, TCP_CLOSE_BAD_RECORD);
	assert_int_equal(h->why.record_err, want);
	assert_int_equal(h->nrec, 2);
	assert_false(h->bad_content);
	/* the peer sees the connection go */
	GWT_RUN_UNTIL(h->base, h->sink_eof || h->sink_err != 0, WAIT_MS);
	assert_true(h->sink_eof || h->sink_err == ECONNRESET);
	h_free(h);
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
	struct harness *h = h_new(true);
	struct gwt_stream s = { 0 };

	for (unsigned int r = 0; r < 3; r++)
		gwt_stream_record(&s, r, 100 * (r + 1), 0);
	h_start(h);
	/* replies must not wait for ACKs */
	int nodelay = 0;
	socklen_t sl = sizeof(nodelay);
	assert_int_equal(getsockopt(tcp_conn_fd(h->c), IPPROTO_TCP, TCP_NODELAY, &nodelay, &sl), 0);
	assert_int_equal(nodelay, 1);
	h_write_now(h, &s);
	shutdown(h->peer, SHUT_WR);
	GWT_RUN_UNTIL(h->base, h->closed, WAIT_MS);
	assert_true(h->closed);
	assert_int_equal(h->why.reason, TCP_CLOSE_EOF);
	assert_int_equal(h->nrec, 3);
	h_free(h);
	free(s.data);
}

static void test_peer_reset(void **state)
{
	(void)state;
	struct harness *h = h_new(true);
	struct linger lg = { .l_onoff = 1, .l_linger = 0 };

	h_start(h);
	assert_int_equal(setsockopt(h->peer, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg)), 0);
	close(h->peer);
	h->peer = open("/dev/null", O_RDONLY);
	GWT_RUN_UNTIL(h->base, h->closed, WAIT_MS);
	assert_true(h->closed);
	assert_int_equal(h->why.reason, TCP_CLOSE_ERROR);
	assert_int_equal(h->why.err, ECONNRESET);
	h_free(h);
}

static void test_pause_resume(void **state)
{
	(void)state;
	struct harness *h = h_new(false);
	struct gwt_stream s = { 0 };

	for (unsigned int r = 0; r < 10; r++)
		gwt_stream_record(&s, r, 50, 0);
	h->cfg.recv_size = 4096;
	h->cfg.readahead = 4096;
	h->pause_at = 3;
	h_start(h);
	/* all ten arrive in one read; the pause still stops after the third */
	h_write_now(h, &s);
	GWT_RUN_UNTIL(h->base, h->nrec >= 3, WAIT_MS);
	gwt_run_for(h->base, 200);
	assert_int_equal(h->nrec, 3);
	assert_int_equal(tcp_conn_stats(h->c)->bytes_in, s.len);
	assert_true(tcp_conn_read_paused(h->c));
	/* no new bytes come: the records already read must be delivered anyway */
	tcp_conn_resume_read(h->c);
	assert_false(tcp_conn_read_paused(h->c));
	GWT_RUN_UNTIL(h->base, h->nrec == 10, WAIT_MS);
	assert_int_equal(h->nrec, 10);

	/* paused from outside a callback, before the data comes */
	tcp_conn_pause_read(h->c);
	s.len = 0;
	gwt_stream_record(&s, 10, 70, 0);
	h_write_now(h, &s);
	gwt_run_for(h->base, 200);
	assert_int_equal(h->nrec, 10);
	tcp_conn_resume_read(h->c);
	GWT_RUN_UNTIL(h->base, h->nrec == 11, WAIT_MS);
	assert_int_equal(h->nrec, 11);
	assert_false(h->bad_content);
	h_free(h);
	free(s.data);
}

static void release_held(struct harness *h)
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
	struct harness *h = h_new(true);
	struct gwt_stream s = { 0 };
	const unsigned int n = 8;

	for (unsigned int r = 0; r < n; r++)
		gwt_stream_record(&s, r, 1000, 0);
	h->hold = true;
	h->src.limit = 2;
	h_start(h);
	h_feed(h, &s);

	unsigned int rounds = 0;
	while (h->nrec < n && rounds++ < 100) {
		unsigned int starved = h->starved_calls;

		GWT_RUN_UNTIL(h->base, h->nrec == n || h->starved_calls > starved, WAIT_MS);
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
	h_free(h);
	free(s.data);
}

/* The owner frees the connection from inside a record callback. */
static void test_free_in_callback(void **state)
{
	(void)state;
	struct harness *h = h_new(false);
	struct gwt_stream s = { 0 };

	for (unsigned int r = 0; r < 5; r++)
		gwt_stream_record(&s, r, 40, 0);
	h->cfg.readahead = 4096;
	h->free_at = 2;
	h_start(h);
	h_write_now(h, &s);
	GWT_RUN_UNTIL(h->base, h->c == NULL, WAIT_MS);
	gwt_run_for(h->base, 50);
	assert_null(h->c);
	assert_int_equal(h->nrec, 2);
	assert_false(h->closed);
	h_free(h);
	free(s.data);
}

/* ---- output --------------------------------------------------------------- */

/* Small socket buffers, so that a peer that does not read holds output back soon. */
static void shrink_sndbuf(struct harness *h)
{
	int sz = 4096;

	assert_int_equal(setsockopt(tcp_conn_fd(h->c), SOL_SOCKET, SO_SNDBUF, &sz, sizeof(sz)), 0);
	assert_int_equal(setsockopt(h->peer, SOL_SOCKET, SO_RCVBUF, &sz, sizeof(sz)), 0);
}

static void test_watermarks(void **state)
{
	(void)state;
	struct harness *h = h_new(false);
	uint8_t rec[1000];
	unsigned int sent = 0;

	h->cfg.out_high = 64 * 1024;
	h->cfg.out_low = 16 * 1024;
	h_start(h);
	shrink_sndbuf(h);
	/* the peer does not read: output piles up */
	while (h->congested_calls == 0 && sent < 1000) {
		fill_pattern(rec, sent, sizeof(rec));
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
	h_sink(h, true);
	GWT_RUN_UNTIL(h->base, h->relieved_calls == 1, WAIT_MS);
	assert_int_equal(h->relieved_calls, 1);
	assert_true(h->queued_at_relieved <= h->cfg.out_low);
	assert_false(tcp_conn_output_congested(h->c));
	GWT_RUN_UNTIL(h->base, h->sunk.len == sent * 1004, WAIT_MS);
	assert_int_equal(decode_sunk(h, 1000), sent);
	assert_int_equal(h->congested_calls, 1);
	assert_int_equal(tcp_conn_stats(h->c)->congested, 1);
	assert_int_equal(tcp_conn_stats(h->c)->records_out, sent);
	h_free(h);
}

/*
 * Events added to the loop and waiting (libevent's count of added events
 * also holds those made active): the write event shows here while it is
 * armed, a scheduled flush does not.
 */
static int added_events(const struct harness *h)
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
	struct harness *h = h_new(false);
	uint8_t rec[100];
	int base_events;

	h_start(h);
	h_sink(h, true);
	base_events = added_events(h);
	for (unsigned int r = 0; r < 3; r++) {
		fill_pattern(rec, r, sizeof(rec));
		assert_int_equal(tcp_conn_send_copy(h->c, rec, sizeof(rec)), 0);
	}
	/* not written inside the send calls, and no write event added for it */
	assert_int_equal(tcp_conn_stats(h->c)->writes, 0);
	assert_int_equal(added_events(h), base_events);
	assert_false(tcp_conn_write_waiting(h->c));
	event_base_loop(h->base, EVLOOP_NONBLOCK);
	assert_int_equal(tcp_conn_output_queued(h->c), 0);
	assert_int_equal(tcp_conn_stats(h->c)->writes, 1);
	GWT_RUN_UNTIL(h->base, h->sunk.len == 3 * 104, WAIT_MS);
	assert_int_equal(decode_sunk(h, 100), 3);
	assert_int_equal(tcp_conn_stats(h->c)->write_waits, 0);
	assert_int_equal(added_events(h), base_events);
	h_free(h);
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
	struct harness *h = h_new(false);
	uint8_t rec[100];
	uint8_t got[3 * 104];
	int base_events;

	h_start(h);
	base_events = added_events(h);
	for (unsigned int r = 0; r < 3; r++) {
		fill_pattern(rec, r, sizeof(rec));
		assert_int_equal(tcp_conn_send_copy(h->c, rec, sizeof(rec)), 0);
	}
	/* without it, nothing is on the socket until the loop's flush */
	assert_int_equal(recv(h->peer, got, sizeof(got), MSG_DONTWAIT), -1);
	assert_true(errno == EAGAIN || errno == EWOULDBLOCK);
	tcp_conn_flush_now(h->c);
	assert_int_equal(tcp_conn_stats(h->c)->writes, 1);
	assert_int_equal(tcp_conn_output_queued(h->c), 0);
	assert_int_equal(recv(h->peer, got, sizeof(got), MSG_DONTWAIT), (ssize_t)sizeof(got));
	for (unsigned int r = 0; r < 3; r++) {
		fill_pattern(rec, r, sizeof(rec));
		assert_memory_equal(got + r * 104 + 4, rec, sizeof(rec));
	}
	/* nothing left to flush, and nothing queued: no-ops */
	tcp_conn_flush_now(h->c);
	event_base_loop(h->base, EVLOOP_NONBLOCK);
	assert_int_equal(tcp_conn_stats(h->c)->writes, 1);
	assert_int_equal(tcp_conn_stats(h->c)->write_waits, 0);
	assert_int_equal(added_events(h), base_events);
	assert_false(h->closed);
	h_free(h);
}

/*
 * A write error inside tcp_conn_flush_now() runs no callback there: the
 * owner hears of it from the loop, as it would have without the call.
 */
static void test_flush_now_error_from_loop(void **state)
{
	(void)state;
	struct harness *h = h_new(false);

	h_start(h);
	tcp_conn_pause_read(h->c);
	close(h->peer);
	h->peer = open("/dev/null", O_RDONLY);
	assert_int_equal(tcp_conn_send_copy(h->c, "abcd", 4), 0);
	tcp_conn_flush_now(h->c);
	assert_false(h->closed);
	assert_non_null(h->c);
	GWT_RUN_UNTIL(h->base, h->closed, WAIT_MS);
	assert_true(h->closed);
	assert_int_equal(h->why.reason, TCP_CLOSE_ERROR);
	assert_int_equal(h->why.err, EPIPE);
	h_free(h);
}

/*
 * A socket that is full: tcp_conn_flush_now() does not try it again while
 * the write event waits for room, and everything still arrives in order.
 */
static void test_flush_now_full_socket(void **state)
{
	(void)state;
	struct harness *h = h_new(true);
	static uint8_t big[256 << 10];

	h_start(h);
	shrink_sndbuf(h);
	fill_pattern(big, 0, sizeof(big));
	assert_int_equal(tcp_conn_send_copy(h->c, big, sizeof(big)), 0);
	tcp_conn_flush_now(h->c);
	assert_int_equal(tcp_conn_stats(h->c)->writes, 1);
	assert_true(tcp_conn_output_queued(h->c) > 0);
	event_base_loop(h->base, EVLOOP_NONBLOCK);
	assert_true(tcp_conn_write_waiting(h->c));
	uint64_t writes = tcp_conn_stats(h->c)->writes;
	fill_pattern(big, 1, 1000);
	assert_int_equal(tcp_conn_send_copy(h->c, big, 1000), 0);
	tcp_conn_flush_now(h->c);
	assert_int_equal(tcp_conn_stats(h->c)->writes, writes);
	h_sink(h, true);
	GWT_RUN_UNTIL(h->base, h->sunk.len == sizeof(big) + 4 + 1004, WAIT_MS);
	assert_int_equal(h->sunk.len, sizeof(big) + 4 + 1004);
	assert_false(tcp_conn_write_waiting(h->c));
	assert_false(h->closed);
	h_free(h);
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
	struct harness *h = h_new(false);
	uint8_t rec[1000];
	const unsigned int n = 200;
	int base_events;
	uint64_t writes;

	h->cfg.out_high = 0;
	h_start(h);
	shrink_sndbuf(h);
	base_events = added_events(h);
	for (unsigned int r = 0; r < n / 2; r++) {
		fill_pattern(rec, r, sizeof(rec));
		assert_int_equal(tcp_conn_send_copy(h->c, rec, sizeof(rec)), 0);
	}
	event_base_loop(h->base, EVLOOP_NONBLOCK);
	assert_true(tcp_conn_output_queued(h->c) > 0);
	assert_true(tcp_conn_write_waiting(h->c));
	assert_int_equal(tcp_conn_stats(h->c)->write_waits, 1);
	assert_int_equal(added_events(h), base_events + 1);
	/* more output while the socket is full: queued, no futile sendmsg() */
	writes = tcp_conn_stats(h->c)->writes;
	for (unsigned int r = n / 2; r < n; r++) {
		fill_pattern(rec, r, sizeof(rec));
		assert_int_equal(tcp_conn_send_copy(h->c, rec, sizeof(rec)), 0);
	}
	gwt_run_for(h->base, 50);
	assert_int_equal(tcp_conn_stats(h->c)->writes, writes);
	assert_true(tcp_conn_write_waiting(h->c));

	h_sink(h, true);
	GWT_RUN_UNTIL(h->base, h->sunk.len == n * 1004, WAIT_MS);
	assert_int_equal(decode_sunk(h, 1000), n);
	assert_int_equal(tcp_conn_output_queued(h->c), 0);
	assert_false(tcp_conn_write_waiting(h->c));
	/* the sink's event, not the connection's write event */
	assert_int_equal(added_events(h), base_events + 1);
	h_sink(h, false);
	assert_int_equal(added_events(h), base_events);
	h_free(h);
}

static void test_output_limit(void **state)
{
	(void)state;
	struct harness *h = h_new(false);
	uint8_t rec[1000];
	unsigned int sent = 0;

	h->cfg.out_high = 0;
	h->cfg.out_max = 20000;
	h_start(h);
	/* nothing is written while the loop does not run: all of it is queued */
	while (sent < 1000) {
		fill_pattern(rec, sent, sizeof(rec));
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
	h_sink(h, true);
	GWT_RUN_UNTIL(h->base, tcp_conn_output_queued(h->c) == 0 && h->sunk.len == sent * 1004,
		      WAIT_MS);
	assert_int_equal(decode_sunk(h, 1000), sent);
	/* room again */
	assert_int_equal(tcp_conn_send_copy(h->c, rec, sizeof(rec)), 0);
	/* and a record no mark can describe is refused outright */
	struct tcp_piece big[2] = { { .data = rec, .len = RM_LEN_MASK },
				    { .data = rec, .len = 1 } };
	assert_int_equal(tcp_conn_send_record(h->c, big, 2), -1);
	assert_int_equal(errno, EMSGSIZE);
	h_free(h);
}

/*
 * A reply as a mark plus pieces: a copied header and bulk by reference.
 * The referenced bytes are sent from where they lie (a change made after
 * queueing shows on the wire), and each reference is put exactly once.
 */
static void test_send_by_reference(void **state)
{
	(void)state;
	struct harness *h = h_new(true);
	uint8_t hdr[12];
	struct gw_buf *a, *b;

	h_start(h);
	a = tsrc_alloc(&h->src.src, 100000);
	b = tsrc_alloc(&h->src.src, 50000);
	fill_pattern(a->base, 1, a->size);
	fill_pattern(b->base, 2, b->size);
	fill_pattern(hdr, 3, sizeof(hdr));
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
	h_sink(h, true);
	const size_t total = 4 + 12 + 100000 + 40000 + 1000;
	GWT_RUN_UNTIL(h->base, h->sunk.len == total && h->src.frees == frees + 2, WAIT_MS);
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
	h_free(h);
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
	struct harness *h = h_new(true);
	uint8_t hdr[8] = { 0 };
	struct gw_buf *a;

	h_start(h);
	a = tsrc_alloc(&h->src.src, 4096);
	fill_pattern(a->base, 4, a->size);
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
	h_sink(h, true);
	GWT_RUN_UNTIL(h->base, h->sunk.len == 4 + 4000, WAIT_MS);
	assert_int_equal(h->sunk.len, 4 + 4000);
	assert_int_equal(xdr_get32(h->sunk.data), RM_LAST_FRAG | 4000);
	for (size_t i = 0; i < 4000; i++)
		assert_int_equal(h->sunk.data[4 + i], gwt_pattern(4, 96 + i));
	h_free(h);
}

/* A peer gone away: the write fails with EPIPE, reported, not a SIGPIPE. */
static void test_send_to_closed_peer(void **state)
{
	(void)state;
	struct harness *h = h_new(false);

	h_start(h);
	/* not reading, the connection cannot notice the EOF first */
	tcp_conn_pause_read(h->c);
	close(h->peer);
	h->peer = open("/dev/null", O_RDONLY);
	assert_int_equal(tcp_conn_send_copy(h->c, "abcd", 4), 0);
	GWT_RUN_UNTIL(h->base, h->closed, WAIT_MS);
	assert_true(h->closed);
	assert_int_equal(h->why.reason, TCP_CLOSE_ERROR);
	assert_int_equal(h->why.err, EPIPE);
	h_free(h);
}

/* Output dropped by an abort releases its references exactly once too. */
static void test_abort_releases_references(void **state)
{
	(void)state;
	struct harness *h = h_new(false);
	struct gw_buf *a;

	h_start(h);
	shrink_sndbuf(h);
	a = tsrc_alloc(&h->src.src, 1 << 20);
	memset(a->base, 'x', a->size);
	assert_int_equal(tcp_conn_send_ref(h->c, a, 0, a->size), 0);
	gw_buf_put(a);
	/* part of it goes out, the rest stays queued */
	GWT_RUN_UNTIL(h->base, tcp_conn_stats(h->c)->bytes_out > 0, WAIT_MS);
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
	h_free(h);
}

static void test_graceful_close(void **state)
{
	(void)state;
	struct harness *h = h_new(true);
	uint8_t rec[1000];
	const unsigned int n = 300;

	h_start(h);
	for (unsigned int r = 0; r < n; r++) {
		fill_pattern(rec, r, sizeof(rec));
		assert_int_equal(tcp_conn_send_copy(h->c, rec, sizeof(rec)), 0);
	}
	tcp_conn_close(h->c);
	/* never from inside the owner's own call */
	assert_false(h->closed);
	assert_int_equal(tcp_conn_send_copy(h->c, rec, sizeof(rec)), -1);
	assert_int_equal(errno, ENOTCONN);
	/* everything queued arrives, then the half-close */
	h_sink(h, true);
	GWT_RUN_UNTIL(h->base, h->sink_eof, WAIT_MS);
	assert_true(h->sink_eof);
	assert_int_equal(decode_sunk(h, 1000), n);
	assert_false(h->closed);
	/* the peer closes in turn */
	close(h->peer);
	h->peer = open("/dev/null", O_RDONLY);
	GWT_RUN_UNTIL(h->base, h->closed, WAIT_MS);
	assert_true(h->closed);
	assert_int_equal(h->why.reason, TCP_CLOSE_LOCAL);
	h_free(h);
}

/* A peer that neither drains nor closes cannot hold a close up forever. */
static void test_close_timeout(void **state)
{
	(void)state;

	for (int drains = 0; drains < 2; drains++) {
		struct harness *h = h_new(true);
		struct gw_buf *a;

		h->cfg.close_timeout_ms = 300;
		h_start(h);
		shrink_sndbuf(h);
		/* more than the socket buffers hold, unless the peer drains */
		a = tsrc_alloc(&h->src.src, 8 << 20);
		memset(a->base, 'y', a->size);
		assert_int_equal(tcp_conn_send_ref(h->c, a, 0, a->size), 0);
		gw_buf_put(a);
		h_sink(h, drains);
		tcp_conn_close(h->c);
		GWT_RUN_UNTIL(h->base, h->closed, WAIT_MS);
		assert_true(h->closed);
		assert_int_equal(h->why.reason, TCP_CLOSE_TIMEOUT);
		/* the queued reference went back once */
		assert_int_equal(h->src.frees, 1);
		h_free(h);
	}
}

/* ---- the record deadline -------------------------------------------------- */

/* The peer sends a stream a few bytes at a time, one piece per interval. */
struct drip {
	struct harness *h;
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

static void drip_start(struct drip *d, struct harness *h, size_t chunk, unsigned int interval_ms)
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
	struct harness *h = h_new(true);
	struct gwt_stream first = { 0 };
	struct drip d = { 0 };

	h->cfg.record_timeout_ms = 300;
	h_start(h);
	gwt_stream_record(&first, 0, 100, 0);
	h_write_now(h, &first);
	GWT_RUN_UNTIL(h->base, h->nrec == 1, WAIT_MS);
	assert_int_equal(h->nrec, 1);
	/* idle between records, longer than the deadline */
	gwt_run_for(h->base, 700);
	assert_false(h->closed);
	/* then a record of 100 bytes, one byte at a time: 5 s to finish */
	gwt_stream_record(&d.s, 1, 100, 0);
	drip_start(&d, h, 1, 50);
	GWT_RUN_UNTIL(h->base, h->closed, WAIT_MS);
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
	h_free(h);
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
	struct harness *h = h_new(true);
	const unsigned int n = 4;

	h->cfg.record_timeout_ms = 300;
	h_start(h);
	for (unsigned int r = 0; r < n; r++) {
		struct gwt_stream s = { 0 };

		gwt_stream_record(&s, r, 200, 0);
		assert_int_equal(send(h->peer, s.data, 100, MSG_NOSIGNAL), 100);
		gwt_run_for(h->base, 100);
		assert_int_equal(send(h->peer, s.data + 100, s.len - 100, MSG_NOSIGNAL),
				 (ssize_t)(s.len - 100));
		GWT_RUN_UNTIL(h->base, h->nrec == r + 1 || h->closed, WAIT_MS);
		assert_int_equal(h->nrec, r + 1);
		gwt_run_for(h->base, 450);
		assert_false(h->closed);
		free(s.data);
	}
	assert_false(h->bad_content);
	h_free(h);
}

/*
 * A client that pipelines, so that some record is always under way but
 * each one is finished soon after it starts, is not cut off either: the
 * deadline is per record, not per stretch of traffic.
 */
static void test_record_deadline_pipelined(void **state)
{
	(void)state;
	struct harness *h = h_new(true);
	struct drip d = { 0 };
	const unsigned int n = 20;

	h->cfg.record_timeout_ms = 300;
	h_start(h);
	/* 204 bytes a record, 250 a piece: no piece ends where a record does */
	for (unsigned int r = 0; r < n; r++)
		gwt_stream_record(&d.s, r, 200, 0);
	drip_start(&d, h, 250, 100);
	GWT_RUN_UNTIL(h->base, h->nrec == n || h->closed, WAIT_MS);
	assert_false(h->closed);
	assert_int_equal(h->nrec, n);
	assert_false(h->bad_content);
	drip_free(&d);
	h_free(h);
}

/* ---- turns: one connection's backlog does not hold the others ------------ */

/*
 * Two connections on one loop, A and B: each record is logged in the order
 * it is delivered. A's records carry gwt_pattern(r) for r = 0, 1, ...; B's
 * gwt_pattern(TURN_B + r), so that a record crossing over shows.
 */
enum { TURN_A_RECS = 100, TURN_B = 1000, TURN_LOG = 256, TURN_REC_LEN = 40 };

struct turn_side {
	struct turns *t;
	struct tcp_conn *c;
	evutil_socket_t peer;
	unsigned int n;
	unsigned int base_r;
	unsigned int pause_at;
};

struct turns {
	struct event_base *base;
	struct tsrc src;
	struct turn_side a, b;
	unsigned int nlog;
	char log[TURN_LOG];
	bool bad;
};

static void turn_record(struct tcp_conn *c, struct gw_buf *buf, uint32_t off, uint32_t len,
			void *arg)
{
	struct turn_side *side = arg;
	struct turns *t = side->t;
	unsigned int r = side->base_r + side->n++;

	if (len != TURN_REC_LEN || (uint64_t)off + len > buf->size)
		t->bad = true;
	for (uint32_t i = 0; i < len && !t->bad; i++)
		if (buf->base[off + i] != gwt_pattern(r, i))
			t->bad = true;
	gw_buf_put(buf);
	if (t->nlog < TURN_LOG)
		t->log[t->nlog++] = side == &t->a ? 'A' : 'B';
	if (side->pause_at != 0 && side->n == side->pause_at)
		tcp_conn_pause_read(c);
}

static void turn_closed(struct tcp_conn *c, const struct tcp_close_info *why, void *arg)
{
	struct turn_side *side = arg;

	(void)why;
	side->t->bad = true;
	tcp_conn_free(c);
	side->c = NULL;
}

static const struct tcp_conn_ops turn_ops = {
	.record = turn_record,
	.closed = turn_closed,
};

static void turn_side_start(struct turns *t, struct turn_side *side, unsigned int base_r,
			    unsigned int contended)
{
	struct tcp_conn_config cfg;
	int fds[2];

	tcp_conn_config_default(&cfg);
	cfg.records_per_turn_contended = contended;
	/* One read takes A's whole backlog: the budget, not the read, must end its turn. */
	cfg.recv_size = 16384;
	cfg.readahead = 16384;
	make_pair(fds, false);
	side->t = t;
	side->base_r = base_r;
	side->peer = fds[1];
	side->c = tcp_conn_new(t->base, fds[0], &cfg, &t->src.src, &turn_ops, side);
	assert_non_null(side->c);
}

/* Two connections whose contended budget is @contended (0: none). */
static struct turns *turns_new_contended(unsigned int contended)
{
	struct turns *t = calloc(1, sizeof(*t));

	assert_non_null(t);
	t->base = event_base_new();
	assert_non_null(t->base);
	t->src.src.alloc = tsrc_alloc;
	turn_side_start(t, &t->a, 0, contended);
	turn_side_start(t, &t->b, TURN_B, contended);
	return t;
}

static struct turns *turns_new(void)
{
	return turns_new_contended(0);
}

static void turns_write(struct turn_side *side, unsigned int first, unsigned int n)
{
	struct gwt_stream s = { 0 };

	for (unsigned int r = first; r < first + n; r++)
		gwt_stream_record(&s, side->base_r + r, TURN_REC_LEN, 0);
	assert_int_equal(send(side->peer, s.data, s.len, MSG_NOSIGNAL), (ssize_t)s.len);
	free(s.data);
}

static void turns_run(struct turns *t, bool (*done)(const struct turns *), unsigned int ms)
{
	uint64_t deadline = gwt_now_ms() + ms;

	while (!done(t) && gwt_now_ms() < deadline)
		event_base_loop(t->base, EVLOOP_ONCE | EVLOOP_NONBLOCK);
}

static bool turns_all_in(const struct turns *t)
{
	return t->a.n == TURN_A_RECS && t->b.n == 1;
}

static bool turns_never(const struct turns *t)
{
	(void)t;
	return false;
}

static void turns_free(struct turns *t)
{
	tcp_conn_free(t->a.c);
	tcp_conn_free(t->b.c);
	/* every buffer the connections took went back */
	assert_int_equal(t->src.outstanding, 0);
	close(t->a.peer);
	close(t->b.peer);
	event_base_free(t->base);
	free(t);
}

/*
 * A's 100 pipelined calls arrive in one read; B's single call arrives
 * while A's are still being delivered. B's is delivered before A's last,
 * and all of A's arrive, in order, with none lost or crossed.
 */
static void test_backlog_yields_turn(void **state)
{
	(void)state;
	struct turns *t = turns_new();

	turns_write(&t->a, 0, TURN_A_RECS);
	/* A's first turn: only A is readable. */
	event_base_loop(t->base, EVLOOP_ONCE);
	assert_true(t->a.n > 0);
	assert_true(t->a.n < TURN_A_RECS);
	assert_int_equal(tcp_conn_stats(t->a.c)->bytes_in, TURN_A_RECS * (TURN_REC_LEN + 4));
	turns_write(&t->b, 0, 1);
	turns_run(t, turns_all_in, WAIT_MS);
	assert_false(t->bad);
	assert_int_equal(t->a.n, TURN_A_RECS);
	assert_int_equal(t->b.n, 1);
	assert_int_equal(t->nlog, TURN_A_RECS + 1);
	/* B's record came before A's last: A's backlog did not hold it */
	assert_int_equal(t->log[t->nlog - 1], 'A');
	assert_true(tcp_conn_stats(t->a.c)->yields >= TURN_A_RECS / 16 - 1);
	assert_int_equal(tcp_conn_stats(t->b.c)->yields, 0);
	turns_free(t);
}

/* records_per_turn (a route's turn_budget): a turn delivers that many, no more. */
static void test_turn_budget(void **state)
{
	(void)state;
	const unsigned int budgets[] = { 0, 4 }; /* 0: the default, 16 */

	for (size_t b = 0; b < 2; b++) {
		struct harness *h = h_new(false);
		struct gwt_stream s = { 0 };
		unsigned int want = budgets[b] ? budgets[b] : TCP_CONN_RECORDS_PER_TURN_DEFAULT;

		h->cfg.records_per_turn = budgets[b];
		h->cfg.recv_size =
			65536; /* all 40 records fit one buffer: the budget alone stops */
		h->cfg.readahead = 65536;
		h_start(h);
		for (unsigned int r = 0; r < 40; r++)
			gwt_stream_record(&s, r, 40, 0);
		h_write_now(h, &s);
		event_base_loop(h->base, EVLOOP_ONCE);
		assert_int_equal(h->nrec, want);
		GWT_RUN_UNTIL(h->base, h->nrec == 40, WAIT_MS);
		assert_int_equal(h->nrec, 40);
		assert_false(h->bad_content);
		assert_true(tcp_conn_stats(h->c)->yields >= 40 / want - 1);
		h_free(h);
		free(s.data);
	}
}

/*
 * records_per_turn_contended (a forward route's turn_budget_contended): A's
 * backlog is delivered 16 records a turn while A has the loop to itself;
 * once B delivered a call, A's next turn in the same pass delivers 4, and
 * A's turns are full again once the loop saw no other client for the
 * window (common/turns.h). Without a contended budget A keeps taking 16.
 */
static void test_turn_budget_contended(void **state)
{
	const unsigned int contended[] = { 4, 0 };

	(void)state;
	for (size_t i = 0; i < 2; i++) {
		unsigned int want = contended[i] ? contended[i] : 16;
		struct turns *t;

		gw_turns_reset();
		t = turns_new_contended(contended[i]);
		turns_write(&t->a, 0, TURN_A_RECS);
		event_base_loop(t->base, EVLOOP_ONCE);
		assert_int_equal(t->a.n, 16);
		/* A's yield timer and B's record are due in the same pass: B's first */
		turns_write(&t->b, 0, 1);
		event_base_loop(t->base, EVLOOP_ONCE | EVLOOP_NONBLOCK);
		assert_int_equal(t->b.n, 1);
		assert_int_equal(t->a.n, 16 + want);
		assert_int_equal(t->log[16], 'B');
		/* B quiet for longer than the window: A's turns are whole again */
		usleep(2 * GW_CONTENTION_WINDOW_US);
		event_base_loop(t->base, EVLOOP_ONCE | EVLOOP_NONBLOCK);
		assert_int_equal(t->a.n, 16 + want + 16);
		turns_run(t, turns_all_in, WAIT_MS);
		assert_int_equal(t->a.n, TURN_A_RECS);
		assert_false(t->bad);
		turns_free(t);
	}
}

/*
 * A yielded with records buffered, then the owner paused it (from outside
 * A's callbacks, as another client's call or a credit shortage would): the
 * yield does not resume it. Resumed, A delivers the rest with no new bytes.
 * Paused from inside its own turn, it yields nothing.
 */
static void test_yield_respects_pause(void **state)
{
	(void)state;
	struct turns *t = turns_new();
	unsigned int before;

	turns_write(&t->a, 0, TURN_A_RECS);
	event_base_loop(t->base, EVLOOP_ONCE);
	before = t->a.n;
	assert_true(before > 0 && before < TURN_A_RECS);
	assert_int_equal(tcp_conn_stats(t->a.c)->yields, 1);
	tcp_conn_pause_read(t->a.c);
	turns_run(t, turns_never, 200);
	assert_int_equal(t->a.n, before);
	tcp_conn_resume_read(t->a.c);
	turns_run(t, turns_all_in, WAIT_MS);
	assert_int_equal(t->a.n, TURN_A_RECS);

	/* B pauses itself in its own turn with records left: no yield runs it on */
	t->b.pause_at = 5;
	turns_write(&t->b, 0, 50);
	turns_run(t, turns_never, 200);
	assert_int_equal(t->b.n, 5);
	assert_int_equal(tcp_conn_stats(t->b.c)->yields, 0);
	tcp_conn_resume_read(t->b.c);
	turns_run(t, turns_never, 200);
	assert_int_equal(t->b.n, 50);
	assert_false(t->bad);
	turns_free(t);
}

/* A connection freed while its next turn is due: the turn never runs. */
static void test_free_while_yielded(void **state)
{
	(void)state;
	struct turns *t = turns_new();

	turns_write(&t->a, 0, TURN_A_RECS);
	event_base_loop(t->base, EVLOOP_ONCE);
	assert_true(t->a.n > 0 && t->a.n < TURN_A_RECS);
	unsigned int before = t->a.n;
	tcp_conn_free(t->a.c);
	t->a.c = NULL;
	/* ASan would see a turn run on freed memory */
	turns_run(t, turns_never, 100);
	assert_int_equal(t->a.n, before);
	assert_false(t->bad);
	turns_free(t);
}

/* ---- oversized records ------------------------------------------------------ */

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
	.record = on_record,
	.output_pressure = on_pressure,
	.starved = on_starved,
	.closed = on_closed,
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
	struct harness *h = h_new(false);
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
	h_sink(h, true);
	h_feed(h, &s);
	GWT_RUN_UNTIL(h->base, (h->nrec == 1 && h->sunk.len >= 8) || h->closed, WAIT_MS);
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
	h_feed(h, &s);
	GWT_RUN_UNTIL(h->base, (h->nrec == 2 && over_seen.calls == 2) || h->closed, WAIT_MS);
	assert_false(h->closed);
	assert_int_equal(h->nrec, 2);
	assert_false(h->bad_content);
	assert_int_equal(over_seen.calls, 2);
	assert_int_equal(xdr_get32(over_seen.head), 0x01020304);
	GWT_RUN_UNTIL(h->base, tcp_conn_stats(h->c)->bytes_skipped == big + 9000 || h->closed,
		      WAIT_MS);
	assert_int_equal(tcp_conn_stats(h->c)->records_skipped, 2);
	assert_int_equal(tcp_conn_stats(h->c)->bytes_skipped, big + 9000);
	assert_true(tcp_conn_fd(h->c) >= 0);
	/* idle again: no buffer held */
	assert_int_equal(h->src.outstanding, 0);
	h_free(h);
	free(s.data);
}

/* Without the flag, or without the callback, a record too large closes the connection as ever. */
static void check_oversized_closes(bool flag, const struct tcp_conn_ops *o)
{
	struct harness *h = h_new(false);
	struct gwt_stream s = { 0 };

	memset(&over_seen, 0, sizeof(over_seen));
	h->cfg.max_record = 8192;
	h->cfg.skip_oversized = flag;
	gwt_stream_record(&s, 0, 100, 0);
	stream_big_call(&s, 0xdeadbeef, 100000);
	gwt_stream_record(&s, 1, 300, 0);
	h->c = tcp_conn_new(h->base, h->conn_fd, &h->cfg, &h->src.src, o, h);
	assert_non_null(h->c);
	h_feed(h, &s);
	GWT_RUN_UNTIL(h->base, h->closed, WAIT_MS);
	assert_true(h->closed);
	assert_int_equal(h->why.reason, TCP_CLOSE_BAD_RECORD);
	assert_int_equal(h->why.record_err, RM_ERR_FRAGMENT_TOO_LARGE);
	assert_int_equal(h->nrec, 1);
	assert_int_equal(over_seen.calls, 0);
	h_free(h);
	free(s.data);
}

static void test_oversized_closes_without_skip(void **state)
{
	(void)state;
	check_oversized_closes(false, &ops_oversized);
	check_oversized_closes(true, &ops);
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
		cmocka_unit_test(test_bad_record_closes),
		cmocka_unit_test(test_eof_between_records),
		cmocka_unit_test(test_peer_reset),
		cmocka_unit_test(test_pause_resume),
		cmocka_unit_test(test_source_dry),
		cmocka_unit_test(test_free_in_callback),
		cmocka_unit_test(test_watermarks),
		cmocka_unit_test(test_output_limit),
		cmocka_unit_test(test_flush_once_per_pass),
		cmocka_unit_test(test_flush_now),
		cmocka_unit_test(test_flush_now_error_from_loop),
		cmocka_unit_test(test_flush_now_full_socket),
		cmocka_unit_test(test_write_waits_for_full_socket),
		cmocka_unit_test(test_send_by_reference),
		cmocka_unit_test(test_piece_outside_buffer),
		cmocka_unit_test(test_send_to_closed_peer),
		cmocka_unit_test(test_abort_releases_references),
		cmocka_unit_test(test_graceful_close),
		cmocka_unit_test(test_close_timeout),
		cmocka_unit_test(test_record_deadline_trickle),
		cmocka_unit_test(test_record_deadline_slow_records),
		cmocka_unit_test(test_record_deadline_pipelined),
		cmocka_unit_test(test_backlog_yields_turn),
		cmocka_unit_test(test_turn_budget),
		cmocka_unit_test(test_turn_budget_contended),
		cmocka_unit_test(test_yield_respects_pause),
		cmocka_unit_test(test_free_while_yielded),
		cmocka_unit_test(test_oversized_skipped),
		cmocka_unit_test(test_oversized_closes_without_skip),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
