/* SPDX-License-Identifier: MIT */
/*
 * Tests of gateway/core/admission.c: the session limits per client address, per
 * route and per process, what a refusal counts, and that a session's count
 * is given back exactly once.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>

#include "gateway/core/admission.h"

static struct sockaddr_storage v4(const char *addr, uint16_t port)
{
	struct sockaddr_storage ss = { 0 };
	struct sockaddr_in *in = (struct sockaddr_in *)&ss;

	in->sin_family = AF_INET;
	in->sin_port = htons(port);
	assert_int_equal(inet_pton(AF_INET, addr, &in->sin_addr), 1);
	return ss;
}

static struct sockaddr_storage v6(const char *addr, uint16_t port)
{
	struct sockaddr_storage ss = { 0 };
	struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)&ss;

	in6->sin6_family = AF_INET6;
	in6->sin6_port = htons(port);
	assert_int_equal(inet_pton(AF_INET6, addr, &in6->sin6_addr), 1);
	return ss;
}

#define SA(ss) ((const struct sockaddr *)&(ss))

/* A route as the engine keeps it: its live count follows enter and leave. */
struct route {
	struct gw_admission adm;
	struct gw_counters totals;
	struct gw_admission_limits lim;
	uint64_t now_us;
};

static void route_init(struct route *r, uint32_t route_max, uint32_t client_max)
{
	memset(r, 0, sizeof(*r));
	gw_admission_init(&r->adm, 12345);
	r->lim.route = "test";
	r->lim.route_max = route_max;
	r->lim.client_max = client_max;
	r->now_us = 1000000;
}

/* The engine's sequence: ask, and when admitted, register (enter). */
static bool route_try(struct route *r, const struct sockaddr *peer, struct gw_admission_ticket *t)
{
	if (!gw_admission_check(&r->adm, &r->lim, peer, &r->totals, r->now_us))
		return false;
	assert_true(gw_admission_enter(&r->adm, peer, t));
	r->lim.route_live++;
	r->lim.process_live++;
	return true;
}

static void route_leave(struct route *r, struct gw_admission_ticket *t)
{
	gw_admission_leave(&r->adm, t);
	r->lim.route_live--;
	r->lim.process_live--;
}

/* One address gets max_sessions_per_client sessions; others are not affected. */
static void test_per_client_limit(void **state)
{
	struct route r;
	struct gw_admission_ticket t[4] = { 0 }, other = { 0 };
	struct sockaddr_storage a1 = v4("192.0.2.1", 1000), a2 = v4("192.0.2.1", 1001);
	struct sockaddr_storage b = v4("192.0.2.2", 1000);

	(void)state;
	route_init(&r, 100, 3);
	/* the port does not matter: the address is the client */
	assert_true(route_try(&r, SA(a1), &t[0]));
	assert_true(route_try(&r, SA(a2), &t[1]));
	assert_true(route_try(&r, SA(a1), &t[2]));
	assert_int_equal(gw_admission_client_sessions(&r.adm, SA(a2)), 3);
	assert_false(route_try(&r, SA(a2), &t[3]));
	assert_int_equal(r.totals.events[GW_EV_CLIENT_SESSION_LIMIT], 1);
	assert_int_equal(r.totals.events[GW_EV_SESSION_LIMIT], 0);
	/* another client is let in */
	assert_true(route_try(&r, SA(b), &other));
	assert_int_equal(r.adm.entries, 2);

	/* one session ends: its client may have one more */
	route_leave(&r, &t[1]);
	assert_null(t[1].entry);
	assert_int_equal(gw_admission_client_sessions(&r.adm, SA(a1)), 2);
	assert_true(route_try(&r, SA(a1), &t[3]));
	assert_false(route_try(&r, SA(a1), &t[1]));
	assert_int_equal(r.totals.events[GW_EV_CLIENT_SESSION_LIMIT], 2);

	route_leave(&r, &t[0]);
	route_leave(&r, &t[2]);
	route_leave(&r, &t[3]);
	route_leave(&r, &other);
	/* no address is kept once its sessions are gone */
	assert_int_equal(r.adm.entries, 0);
	assert_int_equal(gw_admission_client_sessions(&r.adm, SA(a1)), 0);
	gw_admission_fini(&r.adm);
}

/* A ticket is given back once: a second leave does not free another session's count. */
static void test_leave_exactly_once(void **state)
{
	struct route r;
	struct gw_admission_ticket t1 = { 0 }, t2 = { 0 };
	struct sockaddr_storage a = v4("198.51.100.9", 1);

	(void)state;
	route_init(&r, 0, 2);
	assert_true(route_try(&r, SA(a), &t1));
	assert_true(route_try(&r, SA(a), &t2));
	gw_admission_leave(&r.adm, &t1);
	gw_admission_leave(&r.adm, &t1);
	assert_int_equal(gw_admission_client_sessions(&r.adm, SA(a)), 1);
	assert_int_equal(r.adm.entries, 1);
	gw_admission_leave(&r.adm, &t2);
	assert_int_equal(r.adm.entries, 0);
	gw_admission_fini(&r.adm);
}

/* The route's and the process's limits count session_limit. */
static void test_route_and_process_limits(void **state)
{
	struct route r;
	struct gw_admission_ticket t[8] = { 0 };
	char addr[32];

	(void)state;
	route_init(&r, 4, 32);
	for (int i = 0; i < 4; i++) {
		snprintf(addr, sizeof(addr), "10.0.0.%d", i + 1);
		struct sockaddr_storage a = v4(addr, 700);
		assert_true(route_try(&r, SA(a), &t[i]));
	}
	struct sockaddr_storage late = v4("10.0.0.99", 700);
	assert_false(route_try(&r, SA(late), &t[4]));
	assert_int_equal(r.totals.events[GW_EV_SESSION_LIMIT], 1);
	assert_int_equal(r.totals.events[GW_EV_CLIENT_SESSION_LIMIT], 0);
	route_leave(&r, &t[0]);
	assert_true(route_try(&r, SA(late), &t[4]));

	/* the process is full although the route is not */
	r.lim.route_max = 100;
	r.lim.process_max = 6;
	r.lim.process_live = 6;
	struct sockaddr_storage more = v4("10.0.0.100", 700);
	assert_false(route_try(&r, SA(more), &t[5]));
	assert_int_equal(r.totals.events[GW_EV_SESSION_LIMIT], 2);
	r.lim.process_live = 5;
	assert_true(route_try(&r, SA(more), &t[5]));

	for (int i = 1; i < 6; i++)
		gw_admission_leave(&r.adm, &t[i]);
	assert_int_equal(r.adm.entries, 0);
	gw_admission_fini(&r.adm);
}

/* An IPv4 client seen through a dual-stack socket is the same client. */
static void test_v4_mapped_is_v4(void **state)
{
	struct route r;
	struct gw_admission_ticket t1 = { 0 }, t2 = { 0 }, t3 = { 0 };
	struct sockaddr_storage a = v4("203.0.113.5", 1), m = v6("::ffff:203.0.113.5", 2);
	struct sockaddr_storage other6 = v6("2001:db8::5", 3);

	(void)state;
	route_init(&r, 0, 1);
	assert_true(route_try(&r, SA(a), &t1));
	assert_false(route_try(&r, SA(m), &t2));
	assert_true(route_try(&r, SA(other6), &t3));
	gw_admission_leave(&r.adm, &t1);
	gw_admission_leave(&r.adm, &t3);
	gw_admission_fini(&r.adm);
}

/*
 * With the route defaults (480 sessions, 32 per client): 400 clients from
 * different addresses all get in; a flood of 1000 connections from one
 * address gets 32, and the rest are refused and counted. The table holds
 * one entry per address with live sessions.
 */
static void test_defaults_admit_many_clients_refuse_a_flood(void **state)
{
	static struct gw_admission_ticket clients[400], flood[1000];
	struct route r;
	char addr[32];
	unsigned admitted = 0;

	(void)state;
	route_init(&r, 480, 32);
	r.lim.process_max = 4096;
	for (int i = 0; i < 400; i++) {
		snprintf(addr, sizeof(addr), "10.1.%d.%d", i / 200, i % 200 + 1);
		struct sockaddr_storage a = v4(addr, 900);
		assert_true(route_try(&r, SA(a), &clients[i]));
	}
	struct sockaddr_storage bad = v4("192.0.2.66", 0);
	for (int i = 0; i < 1000; i++) {
		((struct sockaddr_in *)&bad)->sin_port = htons((uint16_t)(1024 + i));
		admitted += route_try(&r, SA(bad), &flood[i]);
	}
	assert_int_equal(admitted, 32);
	assert_int_equal(r.totals.events[GW_EV_CLIENT_SESSION_LIMIT], 1000 - 32);
	assert_int_equal(r.adm.entries, 401);
	/* the refusals were logged once, the rest only counted (same second) */
	assert_int_equal(r.adm.unlogged, 1000 - 32 - 1);
	/* a second later a refusal is logged again */
	r.now_us += 1000000;
	assert_false(route_try(&r, SA(bad), &flood[999]));
	assert_int_equal(r.adm.unlogged, 0);

	for (int i = 0; i < 400; i++)
		gw_admission_leave(&r.adm, &clients[i]);
	for (int i = 0; i < 1000; i++)
		gw_admission_leave(&r.adm, &flood[i]);
	assert_int_equal(r.adm.entries, 0);
	gw_admission_fini(&r.adm);
}

/*
 * Clients refused by allowed_clients: each counted, logged at most once a
 * second with the tally of those that were not, under the same limit as
 * the session-limit refusals.
 */
static void test_unlisted_refusals_logged_once_a_second(void **state)
{
	struct route r;
	struct sockaddr_storage a = v4("198.51.100.7", 700);

	(void)state;
	route_init(&r, 480, 32);
	for (int i = 0; i < 500; i++)
		gw_admission_refuse_unlisted(&r.adm, "test", SA(a), &r.totals, r.now_us);
	assert_int_equal(r.totals.events[GW_EV_REFUSED_CLIENT], 500);
	assert_int_equal(r.totals.events[GW_EV_CLIENT_SESSION_LIMIT], 0);
	/* the first was logged; 499 wait for the next message's tally */
	assert_int_equal(r.adm.unlogged, 499);
	assert_int_equal(r.adm.last_log_us, r.now_us);
	r.now_us += 1000000;
	gw_admission_refuse_unlisted(&r.adm, "test", SA(a), &r.totals, r.now_us);
	assert_int_equal(r.adm.unlogged, 0);
	assert_int_equal(r.adm.last_log_us, r.now_us);
	assert_int_equal(r.totals.events[GW_EV_REFUSED_CLIENT], 501);
	/* nothing was entered in the address table */
	assert_int_equal(r.adm.entries, 0);
	gw_admission_fini(&r.adm);
}

/* Peers that are not IP (a Unix socket in tests) are not counted per address. */
static void test_non_ip_peer(void **state)
{
	struct route r;
	struct gw_admission_ticket t = { 0 };
	struct sockaddr_storage un = { .ss_family = AF_UNIX };

	(void)state;
	route_init(&r, 0, 1);
	assert_true(route_try(&r, SA(un), &t));
	assert_null(t.entry);
	assert_int_equal(r.adm.entries, 0);
	gw_admission_leave(&r.adm, &t);
	gw_admission_fini(&r.adm);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_per_client_limit),
		cmocka_unit_test(test_leave_exactly_once),
		cmocka_unit_test(test_route_and_process_limits),
		cmocka_unit_test(test_v4_mapped_is_v4),
		cmocka_unit_test(test_defaults_admit_many_clients_refuse_a_flood),
		cmocka_unit_test(test_unlisted_refusals_logged_once_a_second),
		cmocka_unit_test(test_non_ip_peer),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
