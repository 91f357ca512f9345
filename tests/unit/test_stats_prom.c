/* SPDX-License-Identifier: MIT */
/*
 * /metrics?sessions=1 (gateway/stats/stats_prom.c): per-session latency
 * histograms, and the cap on per-session series: at most 256 sessions of a
 * route are exported, rpcrdma_gw_sessions_not_exported counts the rest,
 * and the route's series still include them. The exposition passes
 * `promtool check metrics` when promtool is installed.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <event2/buffer.h>

#include "gateway/stats/stats_render.h"

enum { MAX_SESSIONS = 300 };

struct fake {
	struct gw_counters totals;
	struct gw_counters sessions[MAX_SESSIONS];
	unsigned nsessions;
};

static void fake_snapshot(void *engine, struct gw_stats_visitor *v)
{
	struct fake *f = engine;
	struct gw_stats_route r = { .name = "r",
				    .mode = "forward",
				    .listen = "0.0.0.0:2049",
				    .upstream = "192.0.2.1:20049",
				    .totals = &f->totals,
				    .live_sessions = f->nsessions };

	v->route(v, &r);
	for (unsigned i = 0; i < f->nsessions; i++) {
		char client[32];
		snprintf(client, sizeof(client), "10.0.%u.%u:700", i / 250, i % 250 + 1);
		struct gw_stats_session s = { .id = i + 1,
					      .client = client,
					      .upstream = "192.0.2.1:20049",
					      .state = "ready",
					      .counters = &f->sessions[i],
					      .credits = { 64, 1, 0, 16, 0 } };
		v->session(v, &s);
	}
}

static struct fake *fake_new(unsigned nsessions)
{
	struct fake *f = calloc(1, sizeof(*f));

	assert_non_null(f);
	f->nsessions = nsessions;
	for (unsigned i = 0; i < nsessions; i++) {
		f->sessions[i].calls = i + 1;
		gw_hist_add(&f->sessions[i].gateway_us, 5);	   /* le 0.000008 */
		gw_hist_add(&f->sessions[i].upstream_us, 300);	   /* le 0.000512 */
		gw_hist_add(&f->sessions[i].upstream_us, 5000000); /* +Inf */
		f->totals.calls += i + 1;
	}
	return f;
}

static char *render(struct fake *f, bool sessions)
{
	const struct stats_endpoint_view ep = { 0 };
	struct evbuffer *b = evbuffer_new();
	char *text;
	size_t n;

	assert_true(stats_render_prometheus(fake_snapshot, f, &ep, sessions, b));
	n = evbuffer_get_length(b);
	text = calloc(1, n + 1);
	assert_non_null(text);
	assert_int_equal(evbuffer_remove(b, text, n), (int)n);
	evbuffer_free(b);
	return text;
}

static unsigned count_lines(const char *text, const char *prefix)
{
	unsigned n = 0;

	for (const char *l = text; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
		if (strncmp(l, prefix, strlen(prefix)) == 0)
			n++;
	}
	return n;
}

/* promtool's own lint of the exposition, when promtool is there. */
static void promtool_accepts(const char *text)
{
	FILE *p;

	if (access("/usr/bin/promtool", X_OK) != 0) {
		print_message("promtool not installed: exposition not linted\n");
		return;
	}
	p = popen("/usr/bin/promtool check metrics", "w");
	assert_non_null(p);
	fputs(text, p);
	assert_int_equal(pclose(p), 0);
}

static void test_session_histograms(void **state)
{
	struct fake *f = fake_new(3);
	char *text = render(f, true);

	assert_non_null(
		strstr(text, "# TYPE rpcrdma_gw_session_gateway_latency_seconds histogram\n"));
	assert_non_null(
		strstr(text, "# TYPE rpcrdma_gw_session_upstream_latency_seconds histogram\n"));
	assert_non_null(strstr(text,
			       "rpcrdma_gw_session_gateway_latency_seconds_bucket{route=\"r\","
			       "session=\"2\",le=\"0.000004\"} 0\n"));
	assert_non_null(strstr(text,
			       "rpcrdma_gw_session_gateway_latency_seconds_bucket{route=\"r\","
			       "session=\"2\",le=\"0.000008\"} 1\n"));
	assert_non_null(strstr(text,
			       "rpcrdma_gw_session_upstream_latency_seconds_bucket{route=\"r\","
			       "session=\"3\",le=\"0.000512\"} 1\n"));
	assert_non_null(strstr(text,
			       "rpcrdma_gw_session_upstream_latency_seconds_bucket{route=\"r\","
			       "session=\"3\",le=\"+Inf\"} 2\n"));
	assert_non_null(strstr(text,
			       "rpcrdma_gw_session_upstream_latency_seconds_count{route=\"r\","
			       "session=\"3\"} 2\n"));
	assert_non_null(strstr(text, "rpcrdma_gw_session_upstream_latency_seconds_sum{route=\"r\","
				     "session=\"3\"} 5.0003\n"));
	/* 24 buckets of two histograms for each of the three sessions */
	assert_int_equal(count_lines(text, "rpcrdma_gw_session_gateway_latency_seconds_bucket{"),
			 3 * 24);
	assert_non_null(strstr(text, "rpcrdma_gw_sessions_not_exported{route=\"r\"} 0\n"));
	promtool_accepts(text);
	free(text);

	/* Without sessions: neither per-session series nor the cap's gauge. */
	text = render(f, false);
	assert_null(strstr(text, "rpcrdma_gw_session_"));
	assert_null(strstr(text, "rpcrdma_gw_sessions_not_exported"));
	assert_non_null(strstr(text, "rpcrdma_gw_gateway_latency_seconds_count{route=\"r\"} 0\n"));
	free(text);
	free(f);
}

static void test_session_cap(void **state)
{
	struct fake *f = fake_new(MAX_SESSIONS);
	char *text = render(f, true);
	char want[128];

	assert_int_equal(count_lines(text, "rpcrdma_gw_session_info{"), 256);
	assert_int_equal(count_lines(text, "rpcrdma_gw_session_rpc_calls_total{"), 256);
	assert_int_equal(count_lines(text, "rpcrdma_gw_session_gateway_latency_seconds_count{"),
			 256);
	/* the first 256 of the walk: ids 1..256 */
	assert_non_null(strstr(text, "session=\"256\"}"));
	assert_null(strstr(text, "session=\"257\""));
	snprintf(want, sizeof(want), "rpcrdma_gw_sessions_not_exported{route=\"r\"} %u\n",
		 MAX_SESSIONS - 256);
	assert_non_null(strstr(text, want));
	/* the route still counts every session's calls, and its live sessions */
	snprintf(want, sizeof(want), "rpcrdma_gw_rpc_calls_total{route=\"r\"} %u\n",
		 MAX_SESSIONS * (MAX_SESSIONS + 1) / 2);
	assert_non_null(strstr(text, want));
	snprintf(want, sizeof(want), "rpcrdma_gw_sessions{route=\"r\"} %u\n", MAX_SESSIONS);
	assert_non_null(strstr(text, want));
	snprintf(want, sizeof(want), "rpcrdma_gw_credits_in_use{route=\"r\"} %u\n", MAX_SESSIONS);
	assert_non_null(strstr(text, want));
	promtool_accepts(text);
	free(text);
	free(f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_session_histograms),
		cmocka_unit_test(test_session_cap),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
