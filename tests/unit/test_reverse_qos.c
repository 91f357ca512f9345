/* SPDX-License-Identifier: MIT */
/*
 * tests/unit/test_reverse_qos.c - reverse mode's quality of service
 * (gateway/reverse/reverse_qos.c), from the RDMA client's side: the calls
 * of a client over its class's rate are held in the order they came,
 * keeping their slots (and so their credits), and go on, in order, when
 * its buckets allow, never answered; another client of the class and a
 * call no class takes go at once; a place in flight given back lets the
 * next call go; the reply's bytes are charged when its call is given back;
 * a session that closes with calls held gives every one back and is freed
 * (Asan: nothing leaks); and with every slot held, the client's reply to a
 * backward call is still taken at once.
 *
 * The session's upstream is a stand-in that records what reaches it (own
 * or shared connection alike: the calls are held before either sees them).
 * The clock is the test's (gw_now_pass_us wrapped), and the session's timer
 * is fired by hand once the clock is past its time.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <arpa/inet.h>
#include <event2/event.h>
#include <netinet/in.h>

#include <cmocka.h>

#include "common/clock.h"
#include "gateway/reverse/reverse_priv.h"

#include "support/bufsrc.h"
#include "support/fakeclock.h"
#include "support/qosclasses.h"
#include "support/rdmahdr.h"

static int unregistered;

/* The session is freed (rev_maybe_free()'s last step before free()). */
void __wrap_gw_session_unregister(struct gw_session *s);
void __wrap_gw_session_unregister(struct gw_session *s)
{
	(void)s;
	unregistered++;
}

/* The session has no RDMA connection: its send queue has no room (rev_bc_pump() asks). */
uint32_t __wrap_rconn_sq_space(const struct rconn *rc);
uint32_t __wrap_rconn_sq_space(const struct rconn *rc)
{
	(void)rc;
	return 0;
}

/* What reached the upstream, in order: session id << 16 | call index. */
static uint32_t sent[256];
static size_t nsent;

static void stub_call(struct rev_session *s, struct rev_call *c)
{
	assert_true(nsent < 256);
	sent[nsent++] = (uint32_t)(s->base.id << 16 | c->index);
	c->state = RC_SENT;
	rev_enqueue(&s->sentq, c);
}

static void stub_close(struct rev_session *s)
{
	(void)s;
}

static bool stub_holds(const struct rev_session *s)
{
	(void)s;
	return false;
}

/* The server's connection is gone: a backward reply is taken and dropped, as undeliverable. */
static struct tcp_conn *stub_conn(const struct rev_session *s)
{
	(void)s;
	return NULL;
}

static uint32_t stub_generation(const struct rev_session *s)
{
	(void)s;
	return 0;
}

static const struct rev_upstream_ops stub_upstream = { .call = stub_call,
						       .close = stub_close,
						       .holds = stub_holds,
						       .conn = stub_conn,
						       .generation = stub_generation };

enum { NCALLS = 16 };

struct fixture {
	struct gwt_qos_route q; /* its classes, configuration, run-time route and map */
	struct rev_session *a, *b, *c;
	struct gwt_bufsrc bufs; /* receive buffers, where a test needs them */
};

/* A session as gw_reverse_accept() leaves it, established, without its RDMA connection. */
static struct rev_session *session_new(struct fixture *f, uint64_t id, const char *addr)
{
	struct rev_session *s = calloc(1, sizeof(*s));
	struct sockaddr_in *sin = (struct sockaddr_in *)&s->peer;

	assert_non_null(s);
	s->base.id = id;
	s->base.route = &f->q.rt;
	snprintf(s->base.client, sizeof(s->base.client), "%s", addr);
	s->state = RS_READY;
	s->rdma_closed = true; /* no RDMA connection to tear down */
	s->up = &stub_upstream;
	s->grant = NCALLS;
	s->ncalls = NCALLS;
	s->calls = calloc(NCALLS, sizeof(*s->calls));
	assert_non_null(s->calls);
	for (uint32_t i = 0; i < NCALLS; i++) {
		s->calls[i].s = s;
		s->calls[i].index = i;
	}
	gw_slots_init(&s->slots, s->calls, sizeof(*s->calls), offsetof(struct rev_call, next_free),
		      NCALLS);
	assert_int_equal(xidmap_init(&s->xids, NCALLS), 0);
	TAILQ_INIT(&s->readq.head);
	TAILQ_INIT(&s->upq.head);
	TAILQ_INIT(&s->sentq.head);
	TAILQ_INIT(&s->qosq.head);
	TAILQ_INIT(&s->sqq.head);
	TAILQ_INIT(&s->bcq);
	s->retry_timer = evtimer_new(gwt_fake_base, rev_up_retry, s);
	s->call_timer = evtimer_new(gwt_fake_base, rev_call_timeout, s);
	s->mem_ev = evtimer_new(gwt_fake_base, rev_mem_wake, s);
	assert_non_null(s->mem_ev);
	sin->sin_family = AF_INET;
	assert_int_equal(inet_pton(AF_INET, addr, &sin->sin_addr), 1);
	return s;
}

/* Close @s as the client's going does, and see it freed. */
static void session_close(struct rev_session **sp)
{
	int was = unregistered;

	rev_session_close(*sp);
	assert_int_equal(unregistered, was + 1);
	*sp = NULL;
}

/*
 * Class 0 "backup": 192.0.2.0/24's NFS WRITEs, 1 MB/s to the server with a
 * 0.1 s burst, 2 calls in flight; class 1: the default, 1000 calls/s.
 */
static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));

	if (!f)
		return -1;
	gwt_fake_base = event_base_new();
	if (!gwt_fake_base || !gwt_qos_route_init(&f->q)) {
		if (gwt_fake_base)
			event_base_free(gwt_fake_base);
		free(f);
		return -1;
	}
	f->q.cfg.max_session_memory = UINT32_MAX;
	f->a = session_new(f, 1, "192.0.2.1");
	f->b = session_new(f, 2, "192.0.2.2");
	f->c = session_new(f, 3, "198.51.100.3");
	nsent = 0;
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;
	struct rev_session **all[] = { &f->a, &f->b, &f->c };

	for (size_t i = 0; i < 3; i++) {
		if (*all[i])
			session_close(all[i]);
	}
	gwt_qos_route_fini(&f->q);
	event_base_free(gwt_fake_base);
	free(f);
	return 0;
}

/*
 * The client's next call, as rev_recv_msg() and rev_call_ready() make it:
 * a slot and a credit taken, in the XID table, parsed; an NFS WRITE of
 * @bytes (or, @write false, a GETATTR).
 */
static struct rev_call *send_call(struct rev_session *s, uint32_t bytes, bool write)
{
	bool fresh;
	struct rev_call *c = gw_slots_get(&s->slots, &fresh);

	assert_non_null(c);
	s->outstanding++;
	c->xid = 0x1000 + c->index;
	assert_int_equal(xidmap_put(&s->xids, c->xid, c->index), XIDMAP_ADDED);
	c->in_xidmap = true;
	c->ulb.prog = 100003;
	c->ulb.n_args = write ? 1 : 0;
	c->msg_len = bytes;
	rev_qos_call(s, c);
	return c;
}

/* The clock moves on by @us and the session's timer, if pending, fires (gwt_fake_tick()). */
static void tick(struct rev_session *s, uint64_t us)
{
	gwt_fake_tick(s->qos_timer, us);
}

static uint32_t id(const struct rev_session *s, uint32_t index)
{
	return (uint32_t)(s->base.id << 16 | index);
}

/* The answer to @c was sent and its Send completed: its slot is given back, as rev_answer does. */
static void answered(struct rev_call *c, uint32_t reply_len)
{
	struct rev_session *s = c->s;

	c->answer = RA_REPLY;
	c->reply_len = reply_len;
	c->state = RC_ANSWERED;
	s->outstanding--;
	rev_call_put(c);
}

/* Over its rate, a client's calls are held in order, keeping their slots; then they go. */
static void test_over_rate_held_in_order(void **state)
{
	struct fixture *f = *state;
	struct rev_session *a = f->a;

	send_call(a, 100000, true); /* the burst: 100 kB */
	assert_int_equal(nsent, 1);
	f->q.classes[0].max_in_flight = 0; /* rate alone here */
	struct rev_call *h1 = send_call(a, 100000, true);
	struct rev_call *h2 = send_call(a, 1000, false); /* another class, behind the WRITE */
	assert_int_equal(nsent, 1);
	assert_int_equal(h1->state, RC_QOS_HELD);
	assert_int_equal(h2->state, RC_QOS_HELD);
	assert_int_equal(a->qosq.n, 2);
	/* Held, they keep their slots and credits: the client can send no more than its grant. */
	assert_int_equal(a->slots.busy, 3);
	assert_int_equal(a->outstanding, 3);
	assert_int_equal(f->q.map.stats[0].throttled_now, 1);
	tick(a, 50000); /* half of what it needs */
	assert_int_equal(nsent, 1);
	tick(a, 50000);
	assert_int_equal(nsent, 3);
	assert_int_equal(sent[1], id(a, h1->index));
	assert_int_equal(sent[2], id(a, h2->index));
	assert_int_equal(a->qosq.n, 0);
	assert_int_equal(h1->state, RC_SENT);
	assert_int_equal(f->q.map.stats[0].throttled_now, 0);
	assert_int_equal(f->q.map.stats[0].throttled_us, 100000);
	assert_int_equal(f->q.map.stats[0].calls, 2);
	assert_int_equal(f->q.map.stats[1].calls, 1);
}

/* Another client of the class, and a client only the default takes, go at once. */
static void test_others_not_delayed(void **state)
{
	struct fixture *f = *state;

	f->q.classes[0].max_in_flight = 0;
	send_call(f->a, 100000, true);
	send_call(f->a, 100000, true); /* held */
	send_call(f->b, 100000, true); /* B's own buckets */
	send_call(f->c, 100000, true); /* not 192.0.2.0/24: the default class */
	assert_int_equal(nsent, 3);
	assert_int_equal(sent[1], id(f->b, 0));
	assert_int_equal(sent[2], id(f->c, 0));
	assert_int_equal(f->a->qosq.n, 1);
	assert_int_equal(f->b->qosq.n, 0);
}

/*
 * max_in_flight: the third call waits for an answer; the answer lets it
 * go, and the reply's bytes are charged to the to-client figures.
 */
static void test_in_flight_released_by_answer(void **state)
{
	struct fixture *f = *state;
	struct rev_session *a = f->a;

	f->q.classes[0].to_server_bytes_per_s = 0;
	struct rev_call *first = send_call(a, 10, true);
	send_call(a, 10, true);
	struct rev_call *third = send_call(a, 10, true);
	assert_int_equal(nsent, 2);
	assert_true(first->qos_admitted);
	answered(first, 300);
	assert_int_equal(f->q.map.stats[0].bytes_to_client, 300);
	assert_int_equal(a->slots.busy, 2);
	tick(a, 0);
	assert_int_equal(nsent, 3);
	assert_int_equal(sent[2], id(a, third->index));
}

/* A SIGHUP that raises the limit applies to the calls already held. */
static void test_reload_raises_limit(void **state)
{
	struct fixture *f = *state;
	struct rev_session *a = f->a;

	f->q.classes[0].max_in_flight = 0;
	send_call(a, 100000, true);
	send_call(a, 1000000, true); /* held: 1 s at 1 MB/s */
	tick(a, 10000);
	assert_int_equal(nsent, 1);
	f->q.classes[0].to_server_bytes_per_s = 100000000; /* the new configuration's */
	assert_true(event_pending(a->qos_timer, EV_TIMEOUT, NULL));
	tick(a, 1000);
	assert_int_equal(nsent, 1);
	tick(a, 9000); /* the 0.1 s a held call waits at most between looks */
	assert_int_equal(nsent, 2);
}

/* A call no class takes, on a route without a default, is not limited. */
static void test_unclassed_goes(void **state)
{
	struct fixture *f = *state;

	f->q.cfg.qos_count = 1;
	f->q.cfg.qos_has_default = false;
	for (int i = 0; i < 10; i++)
		send_call(f->c, 1000000, true);
	assert_int_equal(nsent, 10);
	assert_int_equal(f->c->qosq.n, 0);
}

/*
 * A client that goes while calls of its are held: every slot is given
 * back, nothing is sent for them, its throttled time is counted, the
 * session is freed (Asan sees no leak), and the other clients' buckets
 * go on as they were.
 */
static void test_close_with_calls_held(void **state)
{
	struct fixture *f = *state;

	send_call(f->a, 100000, true); /* the burst, on the upstream */
	f->q.classes[0].max_in_flight = 0;
	send_call(f->a, 100000, true);
	send_call(f->a, 1000, false);
	assert_int_equal(nsent, 1);
	assert_int_equal(f->a->qosq.n, 2);
	assert_int_equal(f->q.map.stats[0].throttled_now, 1);
	gwt_fake_now_us += 20000;
	struct sockaddr_storage peer = f->a->peer;
	session_close(&f->a);
	assert_int_equal(nsent, 1);
	assert_int_equal(f->q.map.stats[0].throttled_now, 0);
	assert_int_equal(f->q.map.stats[0].throttled_us, 20000);
	/* The call on the upstream was given back too: A's entry holds none in flight. */
	struct qos_entry *e = qos_map_get(&f->q.map, 0, (const struct sockaddr *)&peer);
	assert_int_equal(e->in_flight, 0);
	assert_int_equal(e->waiting, 0);
	send_call(f->b, 100000, true); /* B's buckets, untouched */
	assert_int_equal(nsent, 2);
}

/*
 * While its calls are held the client may be waiting on the server's
 * callbacks, and the server on their replies: a backward reply needs no
 * slot nor credit, so it is taken at once even when a call of the client
 * waits for a slot (every slot held), never parked behind it.
 */
static void test_backward_reply_not_parked(void **state)
{
	struct fixture *f = *state;
	struct rev_session *a = f->a;
	struct gwt_bufsrc *bufs = &f->bufs;
	uint32_t xid = 0xcb01;

	gwt_bufsrc_init(bufs);
	rpcrdma_limits_default(&f->q.rt.limits);
	a->cap_writes = RPCRDMA_MAX_WRITE_CHUNKS;
	a->cap_segs = 16;
	/* A backward call of the server's, sent to the client and not answered yet. */
	a->nbcalls = 1;
	a->bcalls = calloc(1, sizeof(*a->bcalls));
	assert_non_null(a->bcalls);
	a->bcalls[0] = (struct rev_bcall){ .s = a, .state = BC_SENT, .xid = xid };
	a->bc_busy = 1;
	a->bc_out = 1;
	/* Every slot is taken, held but the first, and a call waits for a slot in the ring. */
	f->q.classes[0].max_in_flight = 0;
	for (int i = 0; i < NCALLS; i++)
		send_call(a, 100000, true);
	assert_true(gw_slots_full(&a->slots));
	assert_int_equal(a->qosq.n, NCALLS - 1);
	a->rxq_cap = NCALLS + 1;
	a->rxq = calloc(a->rxq_cap, sizeof(*a->rxq));
	assert_non_null(a->rxq);
	a->rxq[0] = (struct rev_rx){ .buf = gwt_bufsrc_alloc(&bufs->src, 64), .len = 64 };
	a->rxq_n = 1;
	/* The client's reply: RDMA_MSG, no chunks, an RPC reply (accepted, SUCCESS) inline. */
	struct gw_buf *reply = gwt_bufsrc_alloc(&bufs->src, 52);
	gwt_put_words(reply->base,
		      GWT_WORDS(xid, RPCRDMA_V1, 8, RPCRDMA_MSG, 0, 0, 0, xid, 1, 0, 0, 0, 0));
	rev_recv(NULL, a, reply, 52, 0);
	assert_int_equal(a->rxq_n, 1); /* not parked behind the call */
	assert_int_equal(a->bcalls[0].state, BC_FREE);
	assert_int_equal(a->bc_out, 0);
	assert_int_equal(a->base.counters.events[GW_EV_BACKWARD_UNDELIVERABLE], 1);
	session_close(&f->a);
	assert_int_equal(gwt_bufsrc_all_back(bufs), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_over_rate_held_in_order, setup, teardown),
		cmocka_unit_test_setup_teardown(test_others_not_delayed, setup, teardown),
		cmocka_unit_test_setup_teardown(test_in_flight_released_by_answer, setup, teardown),
		cmocka_unit_test_setup_teardown(test_reload_raises_limit, setup, teardown),
		cmocka_unit_test_setup_teardown(test_unclassed_goes, setup, teardown),
		cmocka_unit_test_setup_teardown(test_close_with_calls_held, setup, teardown),
		cmocka_unit_test_setup_teardown(test_backward_reply_not_parked, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
