/* SPDX-License-Identifier: MIT */
/*
 * Turns in tcp/tcp_conn.c: one connection's backlog does not hold the
 * others on its loop. A connection delivers at most records_per_turn records
 * a turn (fewer, records_per_turn_contended, while other clients are active)
 * and yields; a connection paused by its owner is not resumed by its yield,
 * and one freed while its next turn is due never runs it.
 *
 * Two connections on one loop (A and B, over socketpairs) log the order in
 * which their records are delivered; every wait has a generous deadline and
 * nothing asserts speed.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include <event2/event.h>

#include "common/turns.h"
#include "tcp/tcp_conn.h"

#include "support/bufsrc.h"
#include "support/loop.h"
#include "support/record.h"
#include "support/tcprig.h"

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
	struct gwt_bufsrc src;
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
	assert_int_equal(gwt_sock_pair(fds, false), 0);
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
	gwt_bufsrc_init(&t->src);
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

static bool turns_a_in(const struct turns *t)
{
	return t->a.n == TURN_A_RECS;
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
	assert_int_equal(gwt_bufsrc_all_back(&t->src), 0);
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
	turns_run(t, turns_all_in, GWT_RIG_WAIT_MS);
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
		struct gwt_rig *h = gwt_rig_new(false);
		struct gwt_stream s = { 0 };
		unsigned int want = budgets[b] ? budgets[b] : TCP_CONN_RECORDS_PER_TURN_DEFAULT;

		h->cfg.records_per_turn = budgets[b];
		h->cfg.recv_size =
			65536; /* all 40 records fit one buffer: the budget alone stops */
		h->cfg.readahead = 65536;
		assert_int_equal(gwt_rig_start(h), 0);
		for (unsigned int r = 0; r < 40; r++)
			gwt_stream_record(&s, r, 40, 0);
		assert_int_equal(gwt_rig_write_now(h, &s), 0);
		event_base_loop(h->base, EVLOOP_ONCE);
		assert_int_equal(h->nrec, want);
		GWT_RUN_UNTIL(h->base, h->nrec == 40, GWT_RIG_WAIT_MS);
		assert_int_equal(h->nrec, 40);
		assert_false(h->bad_content);
		assert_true(tcp_conn_stats(h->c)->yields >= 40 / want - 1);
		assert_int_equal(gwt_rig_free(h), 0);
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
		turns_run(t, turns_all_in, GWT_RIG_WAIT_MS);
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
	/* A alone: B has sent nothing yet (waiting for B too ran out the whole wait). */
	turns_run(t, turns_a_in, GWT_RIG_WAIT_MS);
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
int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_backlog_yields_turn),
		cmocka_unit_test(test_turn_budget),
		cmocka_unit_test(test_turn_budget_contended),
		cmocka_unit_test(test_yield_respects_pause),
		cmocka_unit_test(test_free_while_yielded),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
