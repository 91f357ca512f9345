/* SPDX-License-Identifier: MIT */
/*
 * tests/unit/test_forward_qos.c - forward mode's quality of service
 * (gateway/forward/forward_qos.c), from the client's side: the calls of a
 * client over its class's rate are held in the order it sent them, its
 * socket is not read meanwhile, and they go on, in order, when its buckets
 * allow, never answered an error; another client of the same class and a
 * call no class takes go at once; a place in flight freed by a reply lets
 * the next call go; a reload's new limit applies to the calls held.
 *
 * The session's upstream is a stand-in that records what reaches it (own
 * or shared connection alike: the calls are held before either sees them).
 * The clock is the test's (gw_now_pass_us wrapped), and the session's
 * timer is fired by hand once the clock is past its time.
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
#include "gateway/forward/forward_priv.h"

#include "support/fakeclock.h"
#include "support/qosclasses.h"

static int pauses, resumes;

void __wrap_tcp_conn_pause_read(struct tcp_conn *c);
void __wrap_tcp_conn_pause_read(struct tcp_conn *c)
{
	(void)c;
	pauses++;
}

void __wrap_tcp_conn_resume_read(struct tcp_conn *c);
void __wrap_tcp_conn_resume_read(struct tcp_conn *c)
{
	(void)c;
	resumes++;
}

/* What reached the upstream, in order: session id << 16 | call index. */
static uint32_t sent[256];
static size_t nsent;

static void stub_admit(struct fwd_session *s, struct fwd_call *c)
{
	assert_true(nsent < 256);
	sent[nsent++] = (uint32_t)(s->base.id << 16 | c->index);
}

/* Calls given back (fwd_call_put()), held ones dropped at a close among them. */
static size_t nfreed;

static void stub_call_freed(struct fwd_call *c)
{
	(void)c;
	nfreed++;
}

static const struct fwd_upstream_ops stub_upstream = { .admit = stub_admit,
						       .call_freed = stub_call_freed };

enum { NCALLS = 16 };

struct client {
	struct fwd_session s;
	struct fwd_call calls[NCALLS];
	uint32_t next;
};

struct fixture {
	struct gwt_qos_route q; /* its classes, configuration, run-time route and map */
	struct client a, b, c;
	char tcp_stand_in;
};

static void client_init(struct fixture *f, struct client *cl, uint64_t id, const char *addr)
{
	struct sockaddr_in *sin = (struct sockaddr_in *)&cl->s.peer;

	memset(cl, 0, sizeof(*cl));
	cl->s.base.id = id;
	cl->s.base.route = &f->q.rt;
	snprintf(cl->s.base.client, sizeof(cl->s.base.client), "%s", addr);
	cl->s.state = FS_READY;
	cl->s.up = &stub_upstream;
	cl->s.conn = &cl->s;
	cl->s.slots.n = NCALLS;
	cl->s.tcp = (struct tcp_conn *)&f->tcp_stand_in;
	TAILQ_INIT(&cl->s.qos_held);
	sin->sin_family = AF_INET;
	assert_int_equal(inet_pton(AF_INET, addr, &sin->sin_addr), 1);
	for (uint32_t i = 0; i < NCALLS; i++) {
		cl->calls[i].s = &cl->s;
		cl->calls[i].index = i;
	}
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
	client_init(f, &f->a, 1, "192.0.2.1");
	client_init(f, &f->b, 2, "192.0.2.2");
	client_init(f, &f->c, 3, "198.51.100.3");
	nsent = 0;
	nfreed = 0;
	pauses = resumes = 0;
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;
	struct client *all[] = { &f->a, &f->b, &f->c };

	for (size_t i = 0; i < 3; i++)
		fwd_qos_free(&all[i]->s);
	gwt_qos_route_fini(&f->q);
	event_base_free(gwt_fake_base);
	free(f);
	return 0;
}

/* The client sends its next call: an NFS WRITE of @bytes (or, @write false, a GETATTR). */
static struct fwd_call *send_call(struct client *cl, uint32_t bytes, bool write)
{
	struct fwd_call *c = &cl->calls[cl->next++];

	c->ulb.prog = 100003;
	c->ulb.n_args = write ? 1 : 0;
	c->rec_len = bytes;
	fwd_qos_admit(&cl->s, c);
	return c;
}

/* The clock moves on by @us and the session's timer, if pending, fires (gwt_fake_tick()). */
static void tick(struct client *cl, uint64_t us)
{
	gwt_fake_tick(cl->s.qos_timer, us);
}

static uint32_t id(struct client *cl, uint32_t index)
{
	return (uint32_t)(cl->s.base.id << 16 | index);
}

/* Over its rate, a client's calls are held in order and its socket is paused; then they go. */
static void test_over_rate_held_in_order(void **state)
{
	struct fixture *f = *state;

	send_call(&f->a, 100000, true); /* the burst: 100 kB */
	assert_int_equal(nsent, 1);
	f->q.classes[0].max_in_flight = 0; /* rate alone here */
	send_call(&f->a, 100000, true);
	send_call(&f->a, 1000, false); /* a GETATTR: another class, but behind the held WRITE */
	assert_int_equal(nsent, 1);
	assert_int_equal(pauses, 1);
	assert_true(fwd_qos_holding(&f->a.s));
	assert_int_equal(f->q.map.stats[0].throttled_now, 1);
	f->a.s.read_paused = true;
	tick(&f->a, 50000); /* half of what it needs */
	assert_int_equal(nsent, 1);
	tick(&f->a, 50000);
	assert_int_equal(nsent, 3);
	assert_int_equal(sent[1], id(&f->a, 1));
	assert_int_equal(sent[2], id(&f->a, 2));
	assert_false(fwd_qos_holding(&f->a.s));
	assert_int_equal(resumes, 1);
	assert_int_equal(f->q.map.stats[0].throttled_now, 0);
	assert_int_equal(f->q.map.stats[0].throttled_us, 100000);
	assert_int_equal(f->q.map.stats[0].calls, 2);
	assert_int_equal(f->q.map.stats[1].calls, 1);
}

/* Another client of the class, and a client no class but the default takes, go at once. */
static void test_others_not_delayed(void **state)
{
	struct fixture *f = *state;

	f->q.classes[0].max_in_flight = 0;
	send_call(&f->a, 100000, true);
	send_call(&f->a, 100000, true); /* held */
	send_call(&f->b, 100000, true); /* B's own buckets */
	send_call(&f->c, 100000, true); /* not 192.0.2.0/24: the default class */
	assert_int_equal(nsent, 3);
	assert_int_equal(sent[1], id(&f->b, 0));
	assert_int_equal(sent[2], id(&f->c, 0));
	assert_true(fwd_qos_holding(&f->a.s));
	assert_false(fwd_qos_holding(&f->b.s));
}

/* max_in_flight: the third call waits for a reply, and the reply lets it go. */
static void test_in_flight_released_by_reply(void **state)
{
	struct fixture *f = *state;

	f->q.classes[0].to_server_bytes_per_s = 0;
	struct fwd_call *first = send_call(&f->a, 10, true);
	send_call(&f->a, 10, true);
	send_call(&f->a, 10, true);
	assert_int_equal(nsent, 2);
	assert_true(first->qos_admitted);
	fwd_qos_done(first); /* its reply */
	assert_false(first->qos_admitted);
	tick(&f->a, 0);
	assert_int_equal(nsent, 3);
	assert_int_equal(sent[2], id(&f->a, 2));
}

/* A SIGHUP that raises the limit applies to the calls already held. */
static void test_reload_raises_limit(void **state)
{
	struct fixture *f = *state;

	f->q.classes[0].max_in_flight = 0;
	send_call(&f->a, 100000, true);
	send_call(&f->a, 1000000, true); /* held: 1 s at 1 MB/s */
	tick(&f->a, 10000);
	assert_int_equal(nsent, 1);
	f->q.classes[0].to_server_bytes_per_s = 100000000; /* the new configuration's */
	/* The timer was set for 0.1 s (the most a held call waits between looks) */
	assert_true(event_pending(f->a.s.qos_timer, EV_TIMEOUT, NULL));
	tick(&f->a, 1000); /* 10 kB + 100 kB of the million it needs */
	assert_int_equal(nsent, 1);
	tick(&f->a, 9000);
	assert_int_equal(nsent, 2);
}

/* A call no class takes, on a route without a default, is not limited. */
static void test_unclassed_goes(void **state)
{
	struct fixture *f = *state;

	f->q.cfg.qos_count = 1;
	f->q.cfg.qos_has_default = false;
	for (int i = 0; i < 10; i++)
		send_call(&f->c, 1000000, true);
	assert_int_equal(nsent, 10);
	assert_int_equal(pauses, 0);
}

/*
 * A client that goes while calls of its are held: they are given back
 * (their slots free, nothing sent for them), its throttled time counted,
 * and its timer no longer brings anything out.
 */
static void test_close_with_calls_held(void **state)
{
	struct fixture *f = *state;

	send_call(&f->a, 100000, true); /* the burst */
	f->q.classes[0].max_in_flight = 0;
	struct fwd_call *h1 = send_call(&f->a, 100000, true);
	struct fwd_call *h2 = send_call(&f->a, 1000, false);
	assert_int_equal(nsent, 1);
	assert_true(fwd_qos_holding(&f->a.s));
	assert_int_equal(f->q.map.stats[0].throttled_now, 1);
	tick(&f->a, 20000);
	f->a.s.state = FS_CLOSING;
	fwd_qos_close(&f->a.s);
	assert_false(fwd_qos_holding(&f->a.s));
	assert_int_equal(nfreed, 2);
	assert_int_equal(h1->state, FC_FREE);
	assert_int_equal(h2->state, FC_FREE);
	assert_int_equal(f->q.map.stats[0].throttled_now, 0);
	assert_int_equal(f->q.map.stats[0].throttled_us, 20000);
	tick(&f->a, 1000000);
	assert_int_equal(nsent, 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_over_rate_held_in_order, setup, teardown),
		cmocka_unit_test_setup_teardown(test_others_not_delayed, setup, teardown),
		cmocka_unit_test_setup_teardown(test_in_flight_released_by_reply, setup, teardown),
		cmocka_unit_test_setup_teardown(test_reload_raises_limit, setup, teardown),
		cmocka_unit_test_setup_teardown(test_unclassed_goes, setup, teardown),
		cmocka_unit_test_setup_teardown(test_close_with_calls_held, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
