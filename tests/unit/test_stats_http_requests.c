/* SPDX-License-Identifier: MIT */
/*
 * What the stats endpoint (gateway/stats/stats_http.c) answers by path and
 * method, before any statistics: /healthz (200 "ok", and 503 "draining" from the
 * moment the gateway is told to stop, while /stats and /metrics go on serving
 * and say so) and the index, 404 for any other
 * path whatever the method, 405 with "Allow: GET" for a method other than GET,
 * 400 for a sessions parameter that is neither 0 nor 1; none of them walks
 * the engine.
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

#include <stdlib.h>
#include <string.h>

#include "support/jsonpath.h"
#include "support/promtext.h"
#include "support/statsrig.h"

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

static void test_healthz(void **state)
{
	struct gwt_stats_rig *f = *state;
	struct gwt_http_answer a;
	char v[128];

	assert_int_equal(gwt_stats_fetch(f, "GET", "/healthz", &a), 0);
	assert_int_equal(a.status, 200);
	assert_string_equal(a.body, "ok\n");
	assert_non_null(gwt_http_header(&a, "Content-Type", v, sizeof(v)));
	assert_string_equal(v, "text/plain; charset=utf-8");
	gwt_http_answer_free(&a);
	/* liveness must not cost a walk of every session */
	assert_int_equal(f->engine.walks, 0);
}

/*
 * SIGTERM: gateway/main.c calls gw_stats_http_set_draining() before the drain
 * starts. From then on /healthz answers 503 "draining", so that a director's
 * health check (keepalived HTTP_GET, deploy/scale-out/) sends no new client
 * here; the endpoint goes on serving, and /stats still shows the sessions
 * that finish their calls in flight. A document made before the signal is
 * not reused, even within its reuse window.
 */
static void test_healthz_draining(void **state)
{
	struct gwt_stats_rig *f = *state;
	struct gwt_http_answer a;
	json_t *doc, *fams;

	/* a walk long enough that the document is reused for the next requests */
	f->engine.walk_us = 20000;
	doc = gwt_stats_get_json(f, "/stats");
	assert_non_null(doc);
	assert_true(json_is_false(json_object_get(doc, "draining")));
	json_decref(doc);
	doc = gwt_stats_get_json(f, "/stats");
	assert_non_null(doc);
	json_decref(doc);
	assert_int_equal(f->engine.walks, 1);

	gw_stats_http_set_draining(f->sh, true);
	for (int i = 0; i < 3; i++) {
		assert_int_equal(gwt_stats_fetch(f, "GET", "/healthz", &a), 0);
		assert_int_equal(a.status, 503);
		assert_string_equal(a.body, "draining\n");
		gwt_http_answer_free(&a);
	}
	assert_int_equal(f->engine.walks, 1);

	doc = gwt_stats_get_json(f, "/stats");
	assert_non_null(doc);
	assert_int_equal(f->engine.walks, 2);
	assert_true(json_is_true(json_object_get(doc, "draining")));
	json_t *route = json_array_get(json_object_get(doc, "routes"), 0);
	assert_int_equal(gwt_json_int(route, "live_sessions"), 2);
	assert_int_equal(json_array_size(json_object_get(route, "sessions")), 2);
	json_decref(doc);
	fams = gwt_stats_get_metrics(f, "/metrics");
	assert_non_null(fams);
	assert_true(gwt_prom_sample(fams, "rpcrdma_gw_draining", NULL) == 1);
	json_decref(fams);

	/* the endpoint says what it was told last */
	gw_stats_http_set_draining(f->sh, false);
	assert_int_equal(gwt_stats_fetch(f, "GET", "/healthz", &a), 0);
	assert_int_equal(a.status, 200);
	assert_string_equal(a.body, "ok\n");
	gwt_http_answer_free(&a);
}

static void test_index(void **state)
{
	struct gwt_stats_rig *f = *state;
	struct gwt_http_answer a;

	assert_int_equal(gwt_stats_fetch(f, "GET", "/", &a), 0);
	assert_int_equal(a.status, 200);
	assert_non_null(strstr(a.body, "/stats"));
	assert_non_null(strstr(a.body, "/metrics"));
	assert_non_null(strstr(a.body, "/healthz"));
	gwt_http_answer_free(&a);
}

static void test_not_found(void **state)
{
	struct gwt_stats_rig *f = *state;
	const char *paths[] = { "/nope", "/metricsx", "/stats/", "/METRICS", "/healthz/x" };
	struct gwt_http_answer a;

	for (size_t i = 0; i < ARRAY_SIZE(paths); i++) {
		assert_int_equal(gwt_stats_fetch(f, "GET", paths[i], &a), 0);
		assert_int_equal(a.status, 404);
		gwt_http_answer_free(&a);
	}
	/* an unknown path is unknown whatever the method */
	assert_int_equal(gwt_stats_fetch(f, "POST", "/nope", &a), 0);
	assert_int_equal(a.status, 404);
	gwt_http_answer_free(&a);
	assert_int_equal(f->engine.walks, 0);
}

static void test_method_not_allowed(void **state)
{
	struct gwt_stats_rig *f = *state;
	const char *methods[] = { "POST", "PUT", "DELETE", "HEAD", "OPTIONS", "PATCH" };
	const char *paths[] = { "/stats", "/metrics", "/healthz", "/" };
	struct gwt_http_answer a;
	char v[64];

	for (size_t m = 0; m < ARRAY_SIZE(methods); m++) {
		for (size_t p = 0; p < ARRAY_SIZE(paths); p++) {
			assert_int_equal(gwt_stats_fetch(f, methods[m], paths[p], &a), 0);
			assert_int_equal(a.status, 405);
			assert_non_null(gwt_http_header(&a, "Allow", v, sizeof(v)));
			assert_string_equal(v, "GET");
			gwt_http_answer_free(&a);
		}
	}
	assert_int_equal(f->engine.walks, 0);
}

static void test_bad_sessions_param(void **state)
{
	struct gwt_stats_rig *f = *state;
	struct gwt_http_answer a;

	assert_int_equal(gwt_stats_fetch(f, "GET", "/metrics?sessions=maybe", &a), 0);
	assert_int_equal(a.status, 400);
	gwt_http_answer_free(&a);
	assert_int_equal(gwt_stats_fetch(f, "GET", "/stats?sessions=yes", &a), 0);
	assert_int_equal(a.status, 400);
	gwt_http_answer_free(&a);
	assert_int_equal(f->engine.walks, 0);
}
int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_healthz, gwt_stats_rig_setup,
						gwt_stats_rig_teardown),
		cmocka_unit_test_setup_teardown(test_healthz_draining, gwt_stats_rig_setup,
						gwt_stats_rig_teardown),
		cmocka_unit_test_setup_teardown(test_index, gwt_stats_rig_setup,
						gwt_stats_rig_teardown),
		cmocka_unit_test_setup_teardown(test_not_found, gwt_stats_rig_setup,
						gwt_stats_rig_teardown),
		cmocka_unit_test_setup_teardown(test_method_not_allowed, gwt_stats_rig_setup,
						gwt_stats_rig_teardown),
		cmocka_unit_test_setup_teardown(test_bad_sessions_param, gwt_stats_rig_setup,
						gwt_stats_rig_teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
