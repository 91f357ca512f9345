/* SPDX-License-Identifier: MIT */
/*
 * `rpcrdma-gw stat` (gateway/stat_view.h):
 *  - the report of two /stats documents captured one second apart from a
 *    gateway relaying the kernel NFS client's traffic over Soft-RoCE
 *    (tests/data/stats/, made by capture-job.sh there): every rate is the
 *    documents' own difference, per route and per session;
 *  - percentiles, counter resets, sessions that started in the interval;
 *  - the text view;
 *  - the fetch, from the real stats endpoint (gateway/stats/stats_http.c) serving
 *    a changing fake engine in another thread.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <pthread.h>
#include <arpa/inet.h>
#include <netinet/in.h>

#include <cmocka.h>
#include <event2/event.h>

#include "gateway/stat_view.h"
#include "gateway/stats/stats_http.h"

static json_t *load(const char *name)
{
	char path[512];
	json_error_t jerr;
	json_t *doc;

	snprintf(path, sizeof(path), "%s/stats/%s", GW_TEST_DATA_DIR, name);
	doc = json_load_file(path, 0, &jerr);
	if (!doc)
		fail_msg("%s: %s", path, jerr.text);
	return doc;
}

static json_int_t at(const json_t *obj, const char *path)
{
	char copy[128], *save = NULL;
	const json_t *v = obj;

	snprintf(copy, sizeof(copy), "%s", path);
	for (char *k = strtok_r(copy, ".", &save); k; k = strtok_r(NULL, ".", &save))
		v = json_object_get(v, k);
	assert_true(json_is_integer(v));
	return json_integer_value(v);
}

static double num(const json_t *obj, const char *path)
{
	char copy[128], *save = NULL;
	const json_t *v = obj;

	snprintf(copy, sizeof(copy), "%s", path);
	for (char *k = strtok_r(copy, ".", &save); k; k = strtok_r(NULL, ".", &save))
		v = json_object_get(v, k);
	assert_true(json_is_number(v));
	return json_number_value(v);
}

static void assert_close(double got, double want)
{
	double tol = 1e-9 + (want < 0 ? -want : want) * 1e-9;

	if (got < want - tol || got > want + tol)
		fail_msg("got %.9g, want %.9g", got, want);
}

/* The canned documents: the route's and each session's rates are their differences. */
static void test_report_of_captured_documents(void **state)
{
	json_t *a = load("stats-1.json"), *b = load("stats-2.json");
	const double dt = 1.25; /* any interval: rates are differences over it */
	char err[128];
	json_t *rep = gw_stat_report(a, b, dt, err, sizeof(err));
	const json_t *ra = json_array_get(json_object_get(a, "routes"), 0);
	const json_t *rb = json_array_get(json_object_get(b, "routes"), 0);
	const json_t *rr = json_array_get(json_object_get(rep, "routes"), 0);
	static const char *const vias[] = { "inline", "read_chunk", "write_chunk", "reply_chunk" };
	size_t i;
	json_t *s;

	assert_non_null(rep);
	assert_string_equal(json_string_value(json_object_get(rr, "name")),
			    json_string_value(json_object_get(rb, "name")));
	/* The capture is of real traffic: calls and bulk data moved in the second. */
	assert_true(at(rb, "totals.calls") > at(ra, "totals.calls"));
	assert_close(num(rr, "calls_per_s"),
		     (double)(at(rb, "totals.calls") - at(ra, "totals.calls")) / dt);
	assert_true(num(rr, "calls_per_s") > 0);
	for (unsigned v = 0; v < 4; v++) {
		char p[64], q[64];
		snprintf(p, sizeof(p), "totals.rdma_bytes.%s", vias[v]);
		snprintf(q, sizeof(q), "rdma_mb_per_s.%s", vias[v]);
		assert_close(num(rr, q), (double)(at(rb, p) - at(ra, p)) / 1e6 / dt);
	}
	assert_true(num(rr, "rdma_mb_per_s.write_chunk") + num(rr, "rdma_mb_per_s.read_chunk") > 0);
	assert_int_equal(at(rr, "credits_in_use"), at(rb, "credits.in_use"));
	assert_int_equal(at(rr, "credits_granted"), at(rb, "credits.granted"));
	assert_int_equal(at(rr, "calls_queued"), at(rb, "credits.queued"));
	assert_int_equal(at(rr, "latency_us.gateway.count"),
			 at(rb, "totals.latency.gateway.count") -
				 at(ra, "totals.latency.gateway.count"));

	/* Each session against its own earlier self, found by id. */
	assert_int_equal(json_array_size(json_object_get(rr, "sessions")),
			 json_array_size(json_object_get(rb, "sessions")));
	assert_true(json_array_size(json_object_get(rr, "sessions")) >= 2);
	json_array_foreach(json_object_get(rb, "sessions"), i, s)
	{
		const json_t *rs = json_array_get(json_object_get(rr, "sessions"), i);
		const json_t *sa = NULL, *x;
		size_t j;
		json_array_foreach(json_object_get(ra, "sessions"), j, x)
		{
			if (at(x, "id") == at(s, "id"))
				sa = x;
		}
		assert_non_null(sa);
		assert_int_equal(at(rs, "id"), at(s, "id"));
		assert_close(num(rs, "calls_per_s"),
			     (double)(at(s, "counters.calls") - at(sa, "counters.calls")) / dt);
		assert_int_equal(at(rs, "credits_in_use"), at(s, "credits.in_use"));
	}
	json_decref(rep);
	json_decref(a);
	json_decref(b);
}

/* Percentiles: by bucket bound, from the samples of the interval only. */
static void test_percentiles(void **state)
{
	/* Before: 100 samples at <=1us. In the interval: 50 at <=8us, 49 at <=64us, 1 above. */
	json_t *a = json_pack("{s:s, s:[{s:s, s:{s:{s:{s:I, s:I, s:[{s:I, s:I}]}}}}]}", "version",
			      "t", "routes", "name", "r", "totals", "latency", "gateway", "count",
			      (json_int_t)100, "sum_us", (json_int_t)100, "buckets", "le_us",
			      (json_int_t)1, "count", (json_int_t)100);
	json_t *b = json_pack("{s:s, s:[{s:s, s:{s:{s:{s:I, s:I, s:[{s:I, s:I}, {s:I, s:I}, "
			      "{s:I, s:I}, {s:n, s:I}]}}}}]}",
			      "version", "t", "routes", "name", "r", "totals", "latency", "gateway",
			      "count", (json_int_t)200, "sum_us", (json_int_t)9000, "buckets",
			      "le_us", (json_int_t)1, "count", (json_int_t)100, "le_us",
			      (json_int_t)8, "count", (json_int_t)50, "le_us", (json_int_t)64,
			      "count", (json_int_t)49, "le_us", "count", (json_int_t)1);
	char err[128];
	json_t *rep = gw_stat_report(a, b, 1.0, err, sizeof(err));
	const json_t *g = json_object_get(
		json_object_get(json_object_get(json_array_get(json_object_get(rep, "routes"), 0),
						"latency_us"),
				"gateway"),
		"p50");

	assert_non_null(rep);
	const json_t *lat = json_object_get(
		json_object_get(json_array_get(json_object_get(rep, "routes"), 0), "latency_us"),
		"gateway");
	assert_int_equal(at(lat, "count"), 100);
	assert_int_equal(json_integer_value(g), 8); /* the 50th of 100 is at <=8us */
	assert_int_equal(at(lat, "p90"), 64);	    /* the 90th at <=64us */
	assert_int_equal(at(lat, "p99"), 64);	    /* the 99th too */
	json_decref(rep);

	/* Since the start (no earlier document): 100 of 200 at <=1us. */
	rep = gw_stat_report(NULL, b, 1.0, err, sizeof(err));
	lat = json_object_get(
		json_object_get(json_array_get(json_object_get(rep, "routes"), 0), "latency_us"),
		"gateway");
	assert_int_equal(at(lat, "p50"), 1);
	assert_int_equal(at(lat, "p99"), 64); /* the 198th of 200 */
	json_decref(rep);

	/* Nothing in the interval: no percentile. */
	rep = gw_stat_report(b, b, 1.0, err, sizeof(err));
	lat = json_object_get(
		json_object_get(json_array_get(json_object_get(rep, "routes"), 0), "latency_us"),
		"gateway");
	assert_int_equal(at(lat, "count"), 0);
	assert_true(json_is_null(json_object_get(lat, "p50")));
	json_decref(rep);
	json_decref(a);
	json_decref(b);
}

/* A gateway restarted between the documents: counters smaller than before are all new. */
static void test_counter_reset_and_new_session(void **state)
{
	json_t *a =
		json_pack("{s:s, s:[{s:s, s:{s:I}, s:[{s:I, s:{s:I}}]}]}", "version", "t", "routes",
			  "name", "r", "totals", "calls", (json_int_t)1000, "sessions", "id",
			  (json_int_t)1, "counters", "calls", (json_int_t)1000);
	json_t *b = json_pack("{s:s, s:[{s:s, s:{s:I}, s:[{s:I, s:{s:I}}]}]}", "version", "t",
			      "routes", "name", "r", "totals", "calls", (json_int_t)30, "sessions",
			      "id", (json_int_t)2, "counters", "calls", (json_int_t)30);
	char err[128];
	json_t *rep = gw_stat_report(a, b, 2.0, err, sizeof(err));
	const json_t *r = json_array_get(json_object_get(rep, "routes"), 0);

	assert_non_null(rep);
	assert_close(num(r, "calls_per_s"), 15.0);
	assert_close(num(json_array_get(json_object_get(r, "sessions"), 0), "calls_per_s"), 15.0);
	json_decref(rep);

	/* Not a /stats document. */
	rep = gw_stat_report(a, json_object_get(a, "routes"), 1.0, err, sizeof(err));
	assert_null(rep);
	assert_non_null(strstr(err, "not a /stats document"));
	json_decref(a);
	json_decref(b);
}

/* A route's qos classes: rates of the interval, held time per second, and a line each. */
static void test_qos_line(void **state)
{
	json_t *a = json_pack(
		"{s:s, s:[{s:s, s:{s:I}, s:[{s:s, s:I, s:I, s:I, s:f, s:I}]}]}", "version", "t",
		"routes", "name", "r", "totals", "calls", (json_int_t)0, "qos", "class", "backup",
		"calls", (json_int_t)100, "bytes_to_server", (json_int_t)4000000, "bytes_to_client",
		(json_int_t)0, "throttled_seconds", 1.0, "clients_throttled", (json_int_t)1);
	json_t *b =
		json_pack("{s:s, s:[{s:s, s:{s:I}, s:[{s:s, s:I, s:I, s:I, s:f, s:I}]}]}",
			  "version", "t", "routes", "name", "r", "totals", "calls", (json_int_t)0,
			  "qos", "class", "backup", "calls", (json_int_t)140, "bytes_to_server",
			  (json_int_t)12000000, "bytes_to_client", (json_int_t)2000000,
			  "throttled_seconds", 2.8, "clients_throttled", (json_int_t)1);
	char err[128], *text = NULL;
	size_t len = 0;
	json_t *rep = gw_stat_report(a, b, 2.0, err, sizeof(err));
	const json_t *r = json_array_get(json_object_get(rep, "routes"), 0);
	const json_t *q = json_array_get(json_object_get(r, "qos"), 0);

	(void)state;
	assert_non_null(q);
	assert_close(num(q, "calls_per_s"), 20.0);
	assert_close(num(q, "to_server_mb_per_s"), 4.0);
	assert_close(num(q, "to_client_mb_per_s"), 1.0);
	assert_close(num(q, "throttled_per_s"), 0.9);
	assert_int_equal(at(q, "clients_throttled"), 1);
	FILE *out = open_memstream(&text, &len);
	gw_stat_print(out, rep, 10);
	fclose(out);
	assert_non_null(strstr(text, "  qos backup "));
	assert_non_null(strstr(text, "4.00 MB/s to server"));
	assert_non_null(strstr(text, "1 clients throttled, held 0.90 s/s"));
	free(text);
	json_decref(rep);

	/* A route without classes has no "qos" in the report, and no line. */
	json_object_del(json_array_get(json_object_get(b, "routes"), 0), "qos");
	rep = gw_stat_report(a, b, 2.0, err, sizeof(err));
	assert_null(json_object_get(json_array_get(json_object_get(rep, "routes"), 0), "qos"));
	json_decref(rep);
	json_decref(a);
	json_decref(b);
}

/* The gateway process: CPU share over the interval; a new start time is a restart. */
static void test_process_and_restart(void **state)
{
	json_t *a = json_pack("{s:s, s:{s:I, s:f, s:f, s:f, s:I}, s:[]}", "version", "t", "process",
			      "pid", (json_int_t)100, "started", 1700000000.25, "cpu_user_s", 1.0,
			      "cpu_system_s", 2.0, "rss_bytes", (json_int_t)4000000, "routes");
	json_t *b = json_pack("{s:s, s:{s:I, s:f, s:f, s:f, s:I}, s:[]}", "version", "t", "process",
			      "pid", (json_int_t)100, "started", 1700000000.25, "cpu_user_s", 1.5,
			      "cpu_system_s", 2.5, "rss_bytes", (json_int_t)5000000, "routes");
	json_t *c = json_pack("{s:s, s:{s:I, s:f, s:f, s:f}, s:[]}", "version", "t", "process",
			      "pid", (json_int_t)100, "started", 1700000600.0, "cpu_user_s", 0.1,
			      "cpu_system_s", 0.1, "routes");
	json_t *old = json_pack("{s:s, s:[]}", "version", "t", "routes");
	char err[128];
	json_t *rep = gw_stat_report(a, b, 2.0, err, sizeof(err));

	assert_non_null(rep);
	assert_close(num(json_object_get(rep, "process"), "cpu_percent"), 50.0);
	assert_close(num(json_object_get(rep, "process"), "rss_bytes"), 5000000);
	json_decref(rep);

	assert_false(gw_stat_restarted(a, b));
	assert_true(gw_stat_restarted(b, c)); /* same pid, another process: pids are reused */
	assert_true(gw_stat_restarted(old, a));
	assert_false(gw_stat_restarted(old, old));
	/* Across a restart the CPU share is the new process's own, not a negative difference. */
	rep = gw_stat_report(b, c, 1.0, err, sizeof(err));
	assert_close(num(json_object_get(rep, "process"), "cpu_percent"), 20.0);
	json_decref(rep);
	/* A gateway without the object: no process figures, no error. */
	rep = gw_stat_report(old, old, 1.0, err, sizeof(err));
	assert_non_null(rep);
	assert_null(json_object_get(rep, "process"));
	json_decref(rep);
	json_decref(a);
	json_decref(b);
	json_decref(c);
	json_decref(old);
}

/* The text view: the route, its sessions by client address, the header; a cap on sessions. */
static void test_text_view(void **state)
{
	json_t *a = load("stats-1.json"), *b = load("stats-2.json");
	char err[128], *text = NULL;
	size_t len = 0;
	json_t *rep = gw_stat_report(a, b, 1.0, err, sizeof(err));
	const json_t *rb = json_array_get(json_object_get(b, "routes"), 0);
	FILE *out = open_memstream(&text, &len);
	size_t i;
	json_t *s;

	gw_stat_print(out, rep, 100);
	fclose(out);
	assert_non_null(strstr(text, "calls/s"));
	assert_non_null(strstr(text, "gateway p50/99"));
	assert_non_null(strstr(text, json_string_value(json_object_get(rb, "name"))));
	json_array_foreach(json_object_get(rb, "sessions"), i, s)
		assert_non_null(strstr(text, json_string_value(json_object_get(s, "client"))));
	free(text);

	text = NULL;
	out = open_memstream(&text, &len);
	gw_stat_print(out, rep, 1);
	fclose(out);
	assert_non_null(strstr(text, "more sessions (--sessions N)"));
	free(text);
	json_decref(rep);
	json_decref(a);
	json_decref(b);
}

/* Mark session @k of the first route of @snap as served by worker @w. */
static void set_worker(json_t *snap, size_t k, int w)
{
	json_t *sessions =
		json_object_get(json_array_get(json_object_get(snap, "routes"), 0), "sessions");
	json_object_set_new(json_array_get(sessions, k), "worker", json_integer(w));
}

/*
 * With several workers the view says which serves each session, and the
 * route's sessions by worker; with one (or a gateway from before workers)
 * neither appears.
 */
static void test_text_view_workers(void **state)
{
	(void)state;
	json_t *a = load("stats-1.json"), *b = load("stats-2.json");
	const json_t *sb =
		json_object_get(json_array_get(json_object_get(b, "routes"), 0), "sessions");
	size_t n = json_array_size(sb);
	char err[128], *text = NULL, want[128];
	size_t len = 0;

	assert_true(n >= 2);
	for (size_t k = 0; k < n; k++) {
		set_worker(a, k, k == 0 ? 0 : 1);
		set_worker(b, k, k == 0 ? 0 : 1);
	}
	json_t *rep = gw_stat_report(a, b, 1.0, err, sizeof(err));
	FILE *out = open_memstream(&text, &len);
	gw_stat_print(out, rep, 100);
	fclose(out);
	snprintf(want, sizeof(want), "sessions (worker 0: 1, 1: %zu)", n - 1);
	assert_non_null(strstr(text, want));
	const json_t *s1 = json_array_get(sb, 1);
	snprintf(want, sizeof(want), "%s w1", json_string_value(json_object_get(s1, "client")));
	assert_non_null(strstr(text, want));
	free(text);
	json_decref(rep);

	/* All on worker 0: the plain view. */
	for (size_t k = 0; k < n; k++) {
		set_worker(a, k, 0);
		set_worker(b, k, 0);
	}
	rep = gw_stat_report(a, b, 1.0, err, sizeof(err));
	text = NULL;
	out = open_memstream(&text, &len);
	gw_stat_print(out, rep, 100);
	fclose(out);
	assert_null(strstr(text, "(worker"));
	assert_null(strstr(text, " w0"));
	free(text);
	json_decref(rep);
	json_decref(a);
	json_decref(b);
}

/* ---- the fetch, from the real endpoint ---------------------------------------------- */

struct fake {
	struct gw_counters totals;
	pthread_mutex_t lock;
};

static void fake_snapshot(void *engine, struct gw_stats_visitor *v)
{
	struct fake *f = engine;
	struct gw_stats_route r = { .name = "fake",
				    .mode = "forward",
				    .listen = "127.0.0.1:2049",
				    .upstream = "192.0.2.1:20049",
				    .totals = &f->totals };

	pthread_mutex_lock(&f->lock);
	f->totals.calls += 7; /* each request sees 7 more calls */
	v->route(v, &r);
	pthread_mutex_unlock(&f->lock);
}

struct server {
	struct event_base *base;
	struct gw_stats_http *sh;
	pthread_t thread;
};

static void *serve(void *arg)
{
	struct server *s = arg;

	event_base_dispatch(s->base);
	return NULL;
}

static void test_fetch_from_endpoint(void **state)
{
	struct fake f = { .lock = PTHREAD_MUTEX_INITIALIZER };
	struct server s;
	struct sockaddr_in sin = { .sin_family = AF_INET,
				   .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	struct sockaddr_storage ss;
	char endpoint[64], err[256];
	json_t *a, *b, *rep;
	struct timeval forever = { 3600, 0 };
	struct event *keep;

	s.base = event_base_new();
	s.sh = gw_stats_http_start(s.base, (struct sockaddr *)&sin, sizeof(sin), fake_snapshot, &f);
	assert_non_null(s.sh);
	assert_true(gw_stats_http_local_addr(s.sh, &ss) > 0);
	snprintf(endpoint, sizeof(endpoint), "127.0.0.1:%u",
		 ntohs(((struct sockaddr_in *)&ss)->sin_port));
	keep = event_new(s.base, -1, EV_PERSIST, NULL, NULL); /* the loop stays up when idle */
	event_add(keep, &forever);
	assert_int_equal(pthread_create(&s.thread, NULL, serve, &s), 0);

	a = gw_stat_fetch(endpoint, "/stats", 5000, err, sizeof(err));
	if (!a)
		fail_msg("%s", err);
	b = gw_stat_fetch(endpoint, "/stats?sessions=0", 5000, err, sizeof(err));
	assert_non_null(b);
	rep = gw_stat_report(a, b, 0.5, err, sizeof(err));
	assert_non_null(rep);
	assert_close(num(json_array_get(json_object_get(rep, "routes"), 0), "calls_per_s"), 14.0);
	/* The serving process describes itself: this test's own pid, started before now. */
	assert_int_equal(json_integer_value(json_object_get(json_object_get(a, "process"), "pid")),
			 getpid());
	assert_true(num(json_object_get(a, "process"), "started") <= (double)time(NULL) + 60);
	assert_true(num(json_object_get(a, "process"), "started") >
		    (double)time(NULL) - 86400 * 365);
	assert_false(gw_stat_restarted(a, b));

	/* What is not a /stats document or not there. */
	assert_null(gw_stat_fetch(endpoint, "/nothing", 5000, err, sizeof(err)));
	assert_non_null(strstr(err, "HTTP status 404"));
	assert_null(gw_stat_fetch(endpoint, "/healthz", 5000, err, sizeof(err)));
	assert_non_null(strstr(err, "not JSON"));
	assert_null(gw_stat_fetch("localhost", "/stats", 5000, err, sizeof(err)));
	assert_non_null(strstr(err, "expected HOST:PORT"));
	assert_null(gw_stat_fetch("127.0.0.1:1", "/stats", 5000, err, sizeof(err)));
	assert_non_null(strstr(err, "refused"));

	event_base_loopexit(s.base, NULL);
	pthread_join(s.thread, NULL);
	event_free(keep);
	gw_stats_http_stop(s.sh);
	event_base_free(s.base);
	json_decref(rep);
	json_decref(a);
	json_decref(b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_report_of_captured_documents),
		cmocka_unit_test(test_percentiles),
		cmocka_unit_test(test_counter_reset_and_new_session),
		cmocka_unit_test(test_qos_line),
		cmocka_unit_test(test_process_and_restart),
		cmocka_unit_test(test_text_view),
		cmocka_unit_test(test_text_view_workers),
		cmocka_unit_test(test_fetch_from_endpoint),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
