/* SPDX-License-Identifier: MIT */
/*
 * tests/unit/test_qosmap.c - the quality-of-service buckets: rates, bursts,
 * calls larger than a burst, reply bytes paid after the fact, calls in
 * flight, a reload's new limits, bounded state and idle entries given back.
 * Time is passed in: every test runs on its own clock.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "common/tbucket.h"
#include "gateway/maps/qosmap.h"

#define T0 1000000u /* a clock that does not start at 0 (0 means "never") */

static struct sockaddr_storage v4(uint32_t host)
{
	struct sockaddr_storage ss = { 0 };
	struct sockaddr_in *sin = (struct sockaddr_in *)&ss;

	sin->sin_family = AF_INET;
	sin->sin_addr.s_addr = htonl(0xc0000200u + host); /* 192.0.2.x and on */
	return ss;
}

static const struct sockaddr *sa(const struct sockaddr_storage *ss)
{
	return (const struct sockaddr *)ss;
}

/*
 * Admit calls of @bytes as fast as the buckets let them, from @t for @span_us,
 * each done at once; returns the bytes admitted.
 */
static uint64_t run(struct qos_map *m, struct qos_entry *e, const struct gw_qos_class *c,
		    uint64_t *t, uint64_t span_us, uint64_t bytes)
{
	uint64_t end = *t + span_us, sent = 0;

	while (*t < end) {
		uint64_t wait = qos_entry_admit(m, e, c, *t, bytes);
		if (wait == 0) {
			sent += bytes;
			qos_entry_done(m, e, c, *t, 0);
			continue;
		}
		assert_true(wait != QOSMAP_WAIT_REPLY);
		*t += wait;
	}
	return sent;
}

/* A debt: charged beyond what it holds, paid by the refill before anything is held again. */
static void test_tbucket_debt(void **state)
{
	struct gw_tbucket b = { 0 };

	(void)state;
	/* 1000 a second, 100 at once: 250 pass when it is full, 150 owed. */
	assert_true(gw_tbucket_take_debt(&b, T0, 250, 1000, 100));
	assert_false(gw_tbucket_take_debt(&b, T0, 1, 1000, 100));
	/* 150 owed and 1 to hold: 151 ms. */
	assert_int_equal(gw_tbucket_wait_us(&b, T0, 1, 1000, 100), 151000);
	assert_false(gw_tbucket_take_debt(&b, T0 + 150000, 1, 1000, 100));
	assert_true(gw_tbucket_take_debt(&b, T0 + 151000, 1, 1000, 100));
	/* A size known afterwards: charged whatever it holds. */
	gw_tbucket_charge(&b, T0 + 151000, 50, 1000, 100);
	assert_int_equal(gw_tbucket_wait_us(&b, T0 + 151000, 1, 1000, 100), 51000);
	/* The old use is unchanged: take only what it holds. */
	struct gw_tbucket o = { 0 };
	assert_true(gw_tbucket_take(&o, T0, 100, 1000, 100));
	assert_false(gw_tbucket_take(&o, T0, 1, 1000, 100));
	assert_true(gw_tbucket_full(&o, T0 + 100000, 1000, 100));
}

/* Over ten seconds a client gets its rate, plus one burst, whatever its call size. */
static void test_rate(void **state)
{
	struct gw_qos_class c = { .to_server_bytes_per_s = 4000000, .burst_ms = 250 };
	struct sockaddr_storage p = v4(1);
	struct qos_map m;

	(void)state;
	assert_true(qos_map_init(&m, 1, 7));
	uint32_t sizes[] = { 4096, 65536, 1048576 + 200 };
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		struct qos_entry *e = qos_map_get(&m, 0, sa(&p));
		uint64_t t = T0 + i * 100000000ull; /* buckets full again */
		uint64_t sent = run(&m, e, &c, &t, 10000000, sizes[i]);
		/* 40 MB, the 1 MB burst, and at most one call beyond. */
		assert_true(sent >= 40000000);
		assert_true(sent <= 41000000 + sizes[i]);
	}
	assert_int_equal(m.stats[0].clients, 1);
	qos_map_fini(&m);
}

/* A full bucket lets a burst through at once, then calls at the rate. */
static void test_burst(void **state)
{
	struct gw_qos_class c = { .calls_per_s = 100, .burst_ms = 500 };
	struct sockaddr_storage p = v4(1);
	struct qos_map m;

	(void)state;
	assert_true(qos_map_init(&m, 1, 7));
	struct qos_entry *e = qos_map_get(&m, 0, sa(&p));
	for (int i = 0; i < 50; i++)
		assert_int_equal(qos_entry_admit(&m, e, &c, T0, 0), 0);
	assert_int_equal(qos_entry_admit(&m, e, &c, T0, 0), 10000); /* one call: 10 ms */
	assert_int_equal(qos_entry_admit(&m, e, &c, T0 + 10000, 0), 0);
	assert_int_equal(m.stats[0].calls, 51);
	qos_map_fini(&m);
}

/* Reply bytes are charged when known; the next call waits until they are paid. */
static void test_reply_bytes(void **state)
{
	struct gw_qos_class c = { .to_client_bytes_per_s = 1000000, .burst_ms = 100 };
	struct sockaddr_storage p = v4(1);
	struct qos_map m;

	(void)state;
	assert_true(qos_map_init(&m, 1, 7));
	struct qos_entry *e = qos_map_get(&m, 0, sa(&p));
	assert_int_equal(qos_entry_admit(&m, e, &c, T0, 200), 0);
	qos_entry_done(&m, e, &c, T0, 1000000); /* a 1 MB reply: 900 kB owed */
	assert_int_equal(m.stats[0].bytes_to_client, 1000000);
	assert_int_equal(qos_entry_admit(&m, e, &c, T0, 200), 900001);
	assert_int_equal(qos_entry_admit(&m, e, &c, T0 + 900001, 200), 0);
	qos_map_fini(&m);
}

/* max_in_flight: the next call waits for a reply, not for time. */
static void test_in_flight(void **state)
{
	struct gw_qos_class c = { .max_in_flight = 2, .burst_ms = 250 };
	struct sockaddr_storage p = v4(1);
	struct qos_map m;

	(void)state;
	assert_true(qos_map_init(&m, 1, 7));
	struct qos_entry *e = qos_map_get(&m, 0, sa(&p));
	assert_int_equal(qos_entry_admit(&m, e, &c, T0, 10), 0);
	assert_int_equal(qos_entry_admit(&m, e, &c, T0, 10), 0);
	assert_true(qos_entry_admit(&m, e, &c, T0 + 999999, 10) == QOSMAP_WAIT_REPLY);
	qos_entry_done(&m, e, &c, T0, 0);
	assert_int_equal(qos_entry_admit(&m, e, &c, T0, 10), 0);
	qos_map_fini(&m);
}

static void count_wake(void *arg)
{
	(*(unsigned *)arg)++;
}

/*
 * A call done wakes every session waiting on its entry for a place in
 * flight (two sessions of one client address, an nconnect mount, share
 * them): not one that moved to another entry, nor one that holds nothing
 * any more; and nobody when the class has no max_in_flight.
 */
static void test_done_wakes_the_waiters(void **state)
{
	struct gw_qos_class c = { .max_in_flight = 1, .burst_ms = 250 };
	struct gw_qos_class plain = { .burst_ms = 250 };
	struct sockaddr_storage p = v4(1), q = v4(2);
	struct qos_map m;
	unsigned w1 = 0, w2 = 0, w3 = 0;
	struct qos_hold h1 = { .wake = count_wake, .arg = &w1 },
			h2 = { .wake = count_wake, .arg = &w2 },
			h3 = { .wake = count_wake, .arg = &w3 };

	(void)state;
	assert_true(qos_map_init(&m, 1, 7));
	struct qos_entry *e = qos_map_get(&m, 0, sa(&p)), *f = qos_map_get(&m, 0, sa(&q));
	assert_int_equal(qos_entry_admit(&m, e, &c, T0, 10), 0);
	assert_true(qos_entry_admit(&m, e, &c, T0, 10) == QOSMAP_WAIT_REPLY);
	qos_hold_on(&m, &h1, e, T0);
	qos_hold_on(&m, &h2, e, T0);
	qos_hold_on(&m, &h3, e, T0);
	qos_hold_on(&m, &h3, f, T0); /* moved to another entry */
	qos_entry_done(&m, e, &c, T0 + 10, 0);
	assert_int_equal(w1, 1);
	assert_int_equal(w2, 1);
	assert_int_equal(w3, 0);
	qos_hold_end(&m, &h1, T0 + 20);
	assert_int_equal(qos_entry_admit(&m, e, &c, T0 + 20, 10), 0);
	qos_entry_done(&m, e, &c, T0 + 30, 0);
	assert_int_equal(w1, 1);
	assert_int_equal(w2, 2);
	assert_int_equal(qos_entry_admit(&m, e, &plain, T0 + 40, 10), 0);
	qos_entry_done(&m, e, &plain, T0 + 50, 0); /* no max_in_flight: no wake */
	assert_int_equal(w2, 2);
	qos_hold_end(&m, &h2, T0 + 60);
	qos_hold_end(&m, &h3, T0 + 60);
	assert_int_equal(m.stats[0].throttled_now, 0);
	qos_map_fini(&m);
}

/* New limits (a reload) apply to the buckets as they are, at the next call. */
static void test_reload_limits(void **state)
{
	struct gw_qos_class c = { .to_server_bytes_per_s = 1000000, .burst_ms = 100 };
	struct sockaddr_storage p = v4(1);
	struct qos_map m;
	uint64_t t = T0;

	(void)state;
	assert_true(qos_map_init(&m, 1, 7));
	struct qos_entry *e = qos_map_get(&m, 0, sa(&p));
	uint64_t slow = run(&m, e, &c, &t, 5000000, 10000);
	c.to_server_bytes_per_s = 4000000; /* SIGHUP raised it */
	uint64_t fast = run(&m, e, &c, &t, 5000000, 10000);
	assert_true(slow >= 5000000 && slow <= 5100000 + 10000);
	assert_true(fast >= 20000000 && fast <= 20000000 + 400000 + 10000);
	qos_map_fini(&m);
}

/* Clients each have their own buckets; one over its rate does not slow another. */
static void test_clients_apart(void **state)
{
	struct gw_qos_class c = { .calls_per_s = 10, .burst_ms = 100 };
	struct sockaddr_storage a = v4(1), b = v4(2);
	struct qos_map m;

	(void)state;
	assert_true(qos_map_init(&m, 2, 7));
	struct qos_entry *ea = qos_map_get(&m, 0, sa(&a));
	struct qos_entry *eb = qos_map_get(&m, 0, sa(&b));
	assert_ptr_not_equal(ea, eb);
	assert_ptr_equal(qos_map_get(&m, 0, sa(&a)), ea);
	/* The same address in another class is another entry. */
	assert_ptr_not_equal(qos_map_get(&m, 1, sa(&a)), ea);
	assert_int_equal(qos_entry_admit(&m, ea, &c, T0, 0), 0);
	assert_true(qos_entry_admit(&m, ea, &c, T0, 0) > 0);
	assert_int_equal(qos_entry_admit(&m, eb, &c, T0, 0), 0);
	qos_map_fini(&m);
}

/* Beyond QOSMAP_MAX_CLIENTS a class's clients share one entry; sweeps give idle ones back. */
static void test_bounded_and_swept(void **state)
{
	struct gw_qos_class c = { .calls_per_s = 10, .burst_ms = 1000 };
	struct qos_map m;

	(void)state;
	assert_true(qos_map_init(&m, 1, 7));
	for (uint32_t i = 0; i < QOSMAP_MAX_CLIENTS; i++) {
		struct sockaddr_storage p = v4(i);
		struct qos_entry *e = qos_map_get(&m, 0, sa(&p));
		assert_false(e->shared);
		assert_int_equal(qos_entry_admit(&m, e, &c, T0, 0), 0);
		qos_entry_done(&m, e, &c, T0, 0);
	}
	assert_int_equal(m.stats[0].clients, QOSMAP_MAX_CLIENTS);
	struct sockaddr_storage extra = v4(QOSMAP_MAX_CLIENTS), more = v4(QOSMAP_MAX_CLIENTS + 1);
	struct qos_entry *s1 = qos_map_get(&m, 0, sa(&extra));
	assert_true(s1->shared);
	assert_ptr_equal(qos_map_get(&m, 0, sa(&more)), s1);
	assert_int_equal(m.stats[0].overflow, 2);

	/* One client still busy (a call in flight), one waiting: kept; the rest full again. */
	struct sockaddr_storage p0 = v4(0), p1 = v4(1);
	struct qos_entry *busy = qos_map_get(&m, 0, sa(&p0));
	struct qos_entry *held = qos_map_get(&m, 0, sa(&p1));
	assert_int_equal(qos_entry_admit(&m, busy, &c, T0, 0), 0);
	qos_entry_wait_begin(&m, held);
	assert_int_equal(m.stats[0].throttled_now, 1);
	/* Not yet full (the buckets refill over 100 ms a call): nothing freed. */
	assert_int_equal(qos_map_sweep(&m, &c, 1, T0 + 50000), 0);
	assert_int_equal(qos_map_sweep(&m, &c, 1, T0 + 2000000), QOSMAP_MAX_CLIENTS - 2);
	assert_int_equal(m.stats[0].clients, 2);
	qos_entry_wait_end(&m, held, 1234);
	assert_int_equal(m.stats[0].throttled_now, 0);
	assert_int_equal(m.stats[0].throttled_us, 1234);
	qos_entry_done(&m, busy, &c, T0 + 2000000, 0);
	assert_int_equal(qos_map_sweep(&m, &c, 1, T0 + 4000000), 2);
	/* Room again: a new client has its own entry. */
	assert_false(qos_map_get(&m, 0, sa(&extra))->shared);
	qos_map_fini(&m);
}

/*
 * What both modes share around the map: the class of a call (first match,
 * then the default), a held call's timer (at most 0.1 s, a reply's poll for
 * max_in_flight), and a session's wait moved from entry to entry.
 */
static void test_mode_neutral_helpers(void **state)
{
	struct gw_qos_class cls[2] = { { .name = "writes",
					 .program = 100003,
					 .procedures = GW_QOS_PROCS_WRITES,
					 .to_server_bytes_per_s = 1000000,
					 .burst_ms = 100 },
				       { .name = "rest" } };
	struct gw_route r = { .qos = cls, .qos_count = 2, .qos_has_default = true };
	struct ulb_call write = { .prog = 100003, .n_args = 1 }, getattr = { .prog = 100003 };
	struct sockaddr_storage p = v4(1);
	struct qos_map m;
	struct qos_entry *e = NULL;

	(void)state;
	assert_int_equal(qos_route_class(&r, sa(&p), &write), 0);
	assert_int_equal(qos_route_class(&r, sa(&p), &getattr), 1);
	r.qos_has_default = false;
	r.qos_count = 1;
	assert_int_equal(qos_route_class(&r, sa(&p), &getattr), -1);

	struct timeval tv = qos_hold_delay(QOSMAP_WAIT_REPLY);
	assert_int_equal(tv.tv_sec * 1000000 + tv.tv_usec, QOSMAP_MAX_WAIT_US);
	tv = qos_hold_delay(5000000);
	assert_int_equal(tv.tv_sec * 1000000 + tv.tv_usec, QOSMAP_MAX_WAIT_US);
	tv = qos_hold_delay(1234);
	assert_int_equal(tv.tv_sec * 1000000 + tv.tv_usec, 1234);

	assert_true(qos_map_init(&m, 1, 3));
	assert_int_equal(qos_route_admit(&m, &r, 0, sa(&p), T0, 100000, &e), 0);
	assert_ptr_equal(e, qos_map_get(&m, 0, sa(&p)));
	assert_int_equal(qos_route_admit(&m, &r, 0, sa(&p), T0, 50000, &e), 50000);
	struct qos_hold h = { 0 };
	qos_hold_on(&m, &h, e, T0);
	qos_hold_on(&m, &h, e, T0 + 10); /* the same entry: nothing changes */
	assert_int_equal(m.stats[0].throttles, 1);
	assert_int_equal(m.stats[0].throttled_now, 1);
	qos_hold_end(&m, &h, T0 + 50000);
	qos_hold_end(&m, &h, T0 + 90000); /* no wait any more: nothing counted */
	assert_null(h.waiting);
	assert_int_equal(m.stats[0].throttled_now, 0);
	assert_int_equal(m.stats[0].throttled_us, 50000);
	qos_entry_done(&m, e, &cls[0], T0 + 50000, 0);
	qos_map_fini(&m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_tbucket_debt),
		cmocka_unit_test(test_rate),
		cmocka_unit_test(test_burst),
		cmocka_unit_test(test_reply_bytes),
		cmocka_unit_test(test_in_flight),
		cmocka_unit_test(test_done_wakes_the_waiters),
		cmocka_unit_test(test_reload_limits),
		cmocka_unit_test(test_clients_apart),
		cmocka_unit_test(test_bounded_and_swept),
		cmocka_unit_test(test_mode_neutral_helpers),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
