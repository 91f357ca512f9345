/* SPDX-License-Identifier: MIT */
/*
 * The stats endpoint's (gateway/stats/stats_http.c) connections: a client
 * too slow to send its request, or idle after an answer it kept the
 * connection for, is dropped at the timeout while others are served; one
 * that vanishes with a reset costs nothing; two scrapes go on one kept-alive
 * connection; beyond max_connections a newcomer is closed at once and
 * counted (in /metrics and /stats), and idle holders lose their slots;
 * stopping closes every connection; listening on an address in use fails,
 * on IPv6 loopback works.
 *
 * Each test serves the endpoint on a loopback port of its own event loop
 * against a fake engine whose every figure is known (support/statsrig.h),
 * fetched by a plain-socket HTTP client (support/httpc.h).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <netinet/in.h>

#include <event2/event.h>
#include <jansson.h>

#include "support/jsonpath.h"
#include "support/loop.h"
#include "support/promtext.h"
#include "support/statsrig.h"

/* ---- clients that misbehave -------------------------------------------------- */

static void test_slow_client_is_dropped(void **state)
{
	struct gwt_stats_rig *f = *state;
	struct timeval tv = { 0, 300 * 1000 };
	struct gwt_http_answer a;
	size_t len;
	bool closed;

	gw_stats_http_set_timeout(f->sh, &tv);
	int slow = gwt_stats_connect(f);
	assert_true(slow >= 0);
	assert_int_equal(gwt_http_send_all(slow, "GET /metr"), 0);
	double start = gwt_now_s();

	/* the loop goes on serving others meanwhile */
	assert_int_equal(gwt_stats_fetch(f, "GET", "/healthz", &a), 0);
	assert_int_equal(a.status, 200);
	gwt_http_answer_free(&a);

	free(gwt_http_pump_read(f->base, slow, 5, &len, &closed));
	assert_true(closed);
	assert_int_equal(len, 0);
	assert_true(gwt_now_s() - start >= 0.25);
	close(slow);
}

static void test_vanished_client(void **state)
{
	struct gwt_stats_rig *f = *state;
	struct linger hard = { .l_onoff = 1, .l_linger = 0 };
	struct gwt_http_answer a;

	for (int i = 0; i < 3; i++) {
		int fd = gwt_stats_connect(f);
		assert_true(fd >= 0);
		assert_int_equal(gwt_http_send_all(fd, "GET /stats HTTP/1.1\r\nHost: x\r\n\r\n"),
				 0);
		/* gone with a reset before the answer */
		assert_int_equal(setsockopt(fd, SOL_SOCKET, SO_LINGER, &hard, sizeof(hard)), 0);
		close(fd);
		for (int k = 0; k < 20; k++)
			event_base_loop(f->base, EVLOOP_NONBLOCK);
	}
	assert_int_equal(gwt_stats_fetch(f, "GET", "/healthz", &a), 0);
	assert_int_equal(a.status, 200);
	gwt_http_answer_free(&a);
}

/* Prometheus keeps its connection: two scrapes on one, both whole. */
static void test_keep_alive(void **state)
{
	struct gwt_stats_rig *f = *state;
	int fd = gwt_stats_connect(f);
	assert_true(fd >= 0);
	size_t len;
	bool closed;
	char *raw;

	assert_int_equal(gwt_http_send_all(fd, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"), 0);
	raw = gwt_http_pump_read(f->base, fd, 0.3, &len, &closed);
	assert_non_null(raw);
	assert_false(closed);
	assert_non_null(strstr(raw, "\r\n\r\nok\n"));
	free(raw);
	assert_int_equal(
		gwt_http_send_all(fd,
				  "GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"),
		0);
	raw = gwt_http_pump_read(f->base, fd, 5, &len, &closed);
	assert_non_null(raw);
	assert_true(closed);
	assert_non_null(strstr(raw, "200"));
	free(raw);
	close(fd);
}

/* A kept-alive connection that stays idle is closed after the timeout too. */
static void test_idle_connection_is_closed(void **state)
{
	struct gwt_stats_rig *f = *state;
	struct timeval tv = { 0, 300 * 1000 };
	int fd = gwt_stats_connect(f);
	assert_true(fd >= 0);
	size_t len;
	bool closed;
	char *raw;

	gw_stats_http_set_timeout(f->sh, &tv);
	assert_int_equal(gwt_http_send_all(fd, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"), 0);
	raw = gwt_http_pump_read(f->base, fd, 5, &len, &closed);
	assert_non_null(raw);
	assert_true(closed);
	assert_non_null(strstr(raw, "\r\n\r\nok\n"));
	free(raw);
	close(fd);
}

/* What pump_until_connections() waits for: the endpoint counts @want connections. */
struct connections_are {
	struct gwt_stats_rig *f;
	unsigned want;
};

static bool connections_are(void *arg)
{
	struct connections_are *c = arg;

	return gw_stats_http_connections(c->f->sh) == c->want;
}

/* Turn the loop until the endpoint counts @n connections (or 5 s pass). */
static void pump_until_connections(struct gwt_stats_rig *f, unsigned n)
{
	struct connections_are c = { f, n };

	gwt_spin_until(f->base, 5000, connections_are, &c);
	assert_int_equal(gw_stats_http_connections(f->sh), n);
}

/*
 * With max_connections open, a newcomer is closed at once (not left
 * hanging), and counted in /metrics and /stats; once a holder goes, new
 * clients are served again.
 */
static void test_connection_cap(void **state)
{
	struct gwt_stats_rig *f = *state;
	int idle[3];
	size_t len;
	bool closed;

	gw_stats_http_set_max_connections(f->sh, 3);
	for (int i = 0; i < 3; i++) {
		idle[i] = gwt_stats_connect(f);
		assert_true(idle[i] >= 0);
	}
	pump_until_connections(f, 3);

	for (int i = 0; i < 2; i++) {
		int late = gwt_stats_connect(f);
		assert_true(late >= 0);
		double start = gwt_now_s();
		assert_int_equal(
			gwt_http_send_all(late, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"), 0);
		free(gwt_http_pump_read(f->base, late, 5, &len, &closed));
		assert_true(closed);
		assert_int_equal(len, 0);
		/* at once, not after the request timeout */
		assert_true(gwt_now_s() - start < 5);
		close(late);
	}
	assert_int_equal(gw_stats_http_refused(f->sh), 2);
	assert_int_equal(gw_stats_http_connections(f->sh), 3);

	/* one holder leaves: its slot comes back */
	close(idle[0]);
	pump_until_connections(f, 2);
	json_t *fams = gwt_stats_get_metrics(f, "/metrics");
	assert_non_null(fams);
	assert_true(gwt_prom_sample(fams, "rpcrdma_gw_stats_connections_refused_total", NULL) == 2);
	json_decref(fams);
	json_t *root = gwt_stats_get_json(f, "/stats");
	assert_non_null(root);
	assert_int_equal(gwt_json_int(root, "stats_connections_refused"), 2);
	json_decref(root);
	close(idle[1]);
	close(idle[2]);
	pump_until_connections(f, 0);
}

/* Connections that never send a request lose their slots at the request timeout. */
static void test_idle_holders_are_shed(void **state)
{
	struct gwt_stats_rig *f = *state;
	struct timeval tv = { 0, 300 * 1000 };
	int idle[4];
	struct gwt_http_answer a;

	gw_stats_http_set_timeout(f->sh, &tv);
	gw_stats_http_set_max_connections(f->sh, 4);
	for (int i = 0; i < 4; i++) {
		idle[i] = gwt_stats_connect(f);
		assert_true(idle[i] >= 0);
	}
	pump_until_connections(f, 4);
	pump_until_connections(f, 0);
	assert_int_equal(gwt_stats_fetch(f, "GET", "/healthz", &a), 0);
	assert_int_equal(a.status, 200);
	gwt_http_answer_free(&a);
	assert_int_equal(gw_stats_http_refused(f->sh), 0);
	for (int i = 0; i < 4; i++)
		close(idle[i]);
}

static void test_stop_closes_connections(void **state)
{
	struct gwt_stats_rig *f = *state;
	int fd = gwt_stats_connect(f);
	assert_true(fd >= 0);
	size_t len;
	bool closed;
	char buf[8];

	assert_int_equal(gwt_http_send_all(fd, "GET /st"), 0);
	free(gwt_http_pump_read(f->base, fd, 0.1, &len, &closed));
	assert_false(closed);
	gw_stats_http_stop(f->sh);
	f->sh = NULL;
	assert_int_equal(recv(fd, buf, sizeof(buf), 0), 0);
	close(fd);
}

/* ---- listening --------------------------------------------------------------- */

static void test_address_in_use(void **state)
{
	struct gwt_stats_rig *f = *state;

	assert_null(gw_stats_http_start(f->base, (struct sockaddr *)&f->addr, f->addrlen,
					gwt_fake_snapshot, &f->engine));
}

static void test_ipv6_loopback(void **state)
{
	struct gwt_stats_rig *f = *state;
	struct sockaddr_in6 sin6 = { .sin6_family = AF_INET6, .sin6_addr = IN6ADDR_LOOPBACK_INIT };
	int probe = socket(AF_INET6, SOCK_STREAM, 0);
	struct gwt_http_answer a;

	if (probe < 0 || bind(probe, (struct sockaddr *)&sin6, sizeof(sin6)) != 0) {
		if (probe >= 0)
			close(probe);
		skip(); /* no IPv6 loopback in this sandbox */
	}
	close(probe);

	gw_stats_http_stop(f->sh);
	f->sh = gwt_stats_rig_start_on(f, (struct sockaddr *)&sin6, sizeof(sin6));
	assert_non_null(f->sh);
	assert_int_equal(f->addr.ss_family, AF_INET6);
	assert_int_not_equal(((struct sockaddr_in6 *)&f->addr)->sin6_port, 0);
	assert_int_equal(gwt_stats_fetch(f, "GET", "/healthz", &a), 0);
	assert_int_equal(a.status, 200);
	gwt_http_answer_free(&a);
}
int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_slow_client_is_dropped, gwt_stats_rig_setup,
						gwt_stats_rig_teardown),
		cmocka_unit_test_setup_teardown(test_vanished_client, gwt_stats_rig_setup,
						gwt_stats_rig_teardown),
		cmocka_unit_test_setup_teardown(test_keep_alive, gwt_stats_rig_setup,
						gwt_stats_rig_teardown),
		cmocka_unit_test_setup_teardown(test_idle_connection_is_closed, gwt_stats_rig_setup,
						gwt_stats_rig_teardown),
		cmocka_unit_test_setup_teardown(test_connection_cap, gwt_stats_rig_setup,
						gwt_stats_rig_teardown),
		cmocka_unit_test_setup_teardown(test_idle_holders_are_shed, gwt_stats_rig_setup,
						gwt_stats_rig_teardown),
		cmocka_unit_test_setup_teardown(test_stop_closes_connections, gwt_stats_rig_setup,
						gwt_stats_rig_teardown),
		cmocka_unit_test_setup_teardown(test_address_in_use, gwt_stats_rig_setup,
						gwt_stats_rig_teardown),
		cmocka_unit_test_setup_teardown(test_ipv6_loopback, gwt_stats_rig_setup,
						gwt_stats_rig_teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
