/* SPDX-License-Identifier: MIT */
/*
 * What the stats endpoint (gateway/stats/stats_http.c) answers by path and
 * method, before any statistics: /healthz and the index, 404 for any other
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
