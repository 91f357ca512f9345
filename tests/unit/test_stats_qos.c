/* SPDX-License-Identifier: MIT */
/*
 * A route's quality-of-service classes in /stats and /metrics
 * (gateway/stats/stats_json.c, stats_prom.c): each class's calls, bytes
 * each way, time throttled and clients throttled now, in the route's
 * order; two workers' figures summed class by class (stats_merge.c); a
 * route without classes shows none.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <event2/buffer.h>
#include <jansson.h>

#include "gateway/stats/stats_merge.h"
#include "gateway/stats/stats_render.h"
#include "tests/support/jsonpath.h"
#include "tests/support/promtext.h"

struct fake {
	struct gw_counters totals;
	struct gw_stats_qos qos;
	bool with_qos;
};

static void fake_snapshot(void *engine, struct gw_stats_visitor *v)
{
	struct fake *f = engine;
	struct gw_stats_route r = { .name = "r",
				    .mode = "forward",
				    .listen = "0.0.0.0:2049",
				    .upstream = "192.0.2.1:20049",
				    .totals = &f->totals,
				    .qos = f->with_qos ? &f->qos : NULL };

	v->route(v, &r);
}

static struct gw_stats_qos one_worker(uint64_t k)
{
	struct gw_stats_qos q = { .nclasses = 2 };

	snprintf(q.classes[1].name, sizeof(q.classes[1].name), "rest");
	q.classes[0] = (struct gw_stats_qos_class){ .calls = 10 * k,
						    .bytes_to_server = 4000000 * k,
						    .bytes_to_client = 100 * k,
						    .throttled_us = 1500000 * k,
						    .throttles = 3 * k,
						    .throttled_now = 1,
						    .clients = 2,
						    .overflow = k };
	snprintf(q.classes[0].name, sizeof(q.classes[0].name), "backup");
	q.classes[1].calls = 7 * k;
	return q;
}

static char *render(struct fake *f, bool json)
{
	const struct stats_endpoint_view ep = { 0 };
	struct evbuffer *b = evbuffer_new();
	char *text;
	size_t n;

	assert_non_null(b);
	if (json)
		assert_true(stats_render_json(fake_snapshot, f, &ep, false, b));
	else
		assert_true(stats_render_prometheus(fake_snapshot, f, &ep, false, b));
	n = evbuffer_get_length(b);
	text = calloc(1, n + 1);
	assert_non_null(text);
	assert_int_equal(evbuffer_remove(b, text, n), (int)n);
	evbuffer_free(b);
	return text;
}

/* Two workers' classes, summed as the endpoint shows a route of several workers. */
static void merged(struct fake *f)
{
	struct gw_stats_route_acc acc;
	struct gw_stats_qos a = one_worker(1), b = one_worker(2);
	struct gw_counters t = { 0 };
	struct gw_stats_route ra = { .name = "r", .mode = "forward", .totals = &t, .qos = &a };
	struct gw_stats_route rb = { .name = "r", .mode = "forward", .totals = &t, .qos = &b };

	assert_int_equal(gw_stats_route_acc_init(&acc), 0);
	gw_stats_route_acc_add(&acc, &ra);
	gw_stats_route_acc_add(&acc, &rb);
	assert_non_null(acc.route.qos);
	f->qos = *acc.route.qos;
	f->with_qos = true;
	gw_stats_route_acc_fini(&acc);
}

static void test_json(void **state)
{
	struct fake f = { 0 };
	json_error_t err;

	(void)state;
	merged(&f);
	char *text = render(&f, true);
	json_t *doc = json_loads(text, 0, &err);
	assert_non_null(doc);
	json_t *cls = json_object_get(json_array_get(json_object_get(doc, "routes"), 0), "qos");
	assert_int_equal(json_array_size(cls), 2);
	assert_string_equal(json_string_value(json_object_get(json_array_get(cls, 0), "class")),
			    "backup");
	assert_int_equal(gwt_json_int(doc, "routes.0.qos.0.calls"), 30);
	assert_int_equal(gwt_json_int(doc, "routes.0.qos.0.bytes_to_server"), 12000000);
	assert_int_equal(gwt_json_int(doc, "routes.0.qos.0.bytes_to_client"), 300);
	assert_int_equal(gwt_json_int(doc, "routes.0.qos.0.throttles"), 9);
	assert_int_equal(gwt_json_int(doc, "routes.0.qos.0.clients_throttled"), 2);
	assert_int_equal(gwt_json_int(doc, "routes.0.qos.0.clients"), 4);
	assert_int_equal(gwt_json_int(doc, "routes.0.qos.0.clients_shared_bucket"), 3);
	assert_float_equal(
		json_real_value(json_object_get(json_array_get(cls, 0), "throttled_seconds")), 4.5,
		1e-9);
	assert_int_equal(gwt_json_int(doc, "routes.0.qos.1.calls"), 21);
	json_decref(doc);
	free(text);

	f.with_qos = false;
	text = render(&f, true);
	assert_null(strstr(text, "\"qos\""));
	free(text);
}

static void test_metrics(void **state)
{
	struct fake f = { 0 };

	(void)state;
	merged(&f);
	char *text = render(&f, false);
	json_t *fams = gwt_prom_parse(text, strlen(text));
	assert_non_null(fams);
	assert_float_equal(gwt_prom_sample(fams, "rpcrdma_gw_qos_calls_total", "route", "r",
					   "class", "backup", NULL),
			   30, 0);
	assert_float_equal(gwt_prom_sample(fams, "rpcrdma_gw_qos_bytes_total", "route", "r",
					   "class", "backup", "direction", "to_server", NULL),
			   12000000, 0);
	assert_float_equal(gwt_prom_sample(fams, "rpcrdma_gw_qos_bytes_total", "route", "r",
					   "class", "backup", "direction", "to_client", NULL),
			   300, 0);
	assert_float_equal(gwt_prom_sample(fams, "rpcrdma_gw_qos_throttled_seconds_total", "route",
					   "r", "class", "backup", NULL),
			   4.5, 1e-9);
	assert_float_equal(gwt_prom_sample(fams, "rpcrdma_gw_qos_clients_throttled", "route", "r",
					   "class", "backup", NULL),
			   2, 0);
	assert_float_equal(gwt_prom_sample(fams, "rpcrdma_gw_qos_clients", "route", "r", "class",
					   "backup", "bucket", "own", NULL),
			   4, 0);
	assert_float_equal(gwt_prom_sample(fams, "rpcrdma_gw_qos_calls_total", "route", "r",
					   "class", "rest", NULL),
			   21, 0);
	json_decref(fams);
	free(text);

	f.with_qos = false;
	text = render(&f, false);
	assert_null(strstr(text, "rpcrdma_gw_qos_calls_total{"));
	free(text);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_json),
		cmocka_unit_test(test_metrics),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
