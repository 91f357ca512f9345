/* SPDX-License-Identifier: MIT */
/*
 * /metrics, the Prometheus exposition of the stats endpoint
 * (gateway/stats/stats_prom.c), read back by prometheus_client's own parser
 * (support/promtext.h) and every value checked against the fake engine: the
 * route series (counters, events, latency histograms with their bounds
 * spelt out, procedures, credits), the RDMA devices' pools, the shared
 * upstream connections, the NLM relay, the opt-in per-session series
 * (?sessions=1) with their queue and socket wait times, and the families
 * there with no route at all.
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

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include <jansson.h>

#include "common/version.h"
#include "gateway/counters/counters.h"

#include "support/promtext.h"
#include "support/statsrig.h"

static void check_family(json_t *families, const char *name, const char *type)
{
	json_t *fam = gwt_prom_family(families, name);

	if (!fam)
		fail_msg("no family %s", name);
	assert_string_equal(json_string_value(json_object_get(fam, "type")), type);
}

#define R "route"

static void check_route_scalars(json_t *fams, const char *route, const struct gw_counters *c)
{
	assert_true(gwt_prom_sample(fams, "rpcrdma_gw_rpc_calls_total", R, route, NULL) ==
		    c->calls);
	assert_true(gwt_prom_sample(fams, "rpcrdma_gw_rpc_replies_total", R, route, NULL) ==
		    c->replies);
	assert_true(gwt_prom_sample(fams, "rpcrdma_gw_backward_calls_total", R, route, NULL) ==
		    c->backward_calls);
	assert_true(gwt_prom_sample(fams, "rpcrdma_gw_backward_replies_total", R, route, NULL) ==
		    c->backward_replies);
	assert_true(gwt_prom_sample(fams, "rpcrdma_gw_calls_queued_for_credits_total", R, route,
				    NULL) == c->calls_queued_for_credits);
	assert_true(gwt_prom_sample(fams, "rpcrdma_gw_remote_invalidations_total", R, route,
				    NULL) == c->remote_invalidations);
	assert_true(gwt_prom_sample(fams, "rpcrdma_gw_sessions_opened_total", R, route, NULL) ==
		    c->sessions_opened);
	assert_true(gwt_prom_sample(fams, "rpcrdma_gw_sessions_closed_total", R, route, NULL) ==
		    c->sessions_closed);
	assert_true(gwt_prom_sample(fams, "rpcrdma_gw_rdma_bytes_total", R, route, "via", "inline",
				    NULL) == c->bytes_inline);
	assert_true(gwt_prom_sample(fams, "rpcrdma_gw_rdma_bytes_total", R, route, "via",
				    "read_chunk", NULL) == c->bytes_read_chunk);
	assert_true(gwt_prom_sample(fams, "rpcrdma_gw_rdma_bytes_total", R, route, "via",
				    "write_chunk", NULL) == c->bytes_write_chunk);
	assert_true(gwt_prom_sample(fams, "rpcrdma_gw_rdma_bytes_total", R, route, "via",
				    "reply_chunk", NULL) == c->bytes_reply_chunk);
	assert_true(gwt_prom_sample(fams, "rpcrdma_gw_tcp_bytes_total", R, route, "direction",
				    "received", NULL) == c->tcp_bytes_in);
	assert_true(gwt_prom_sample(fams, "rpcrdma_gw_tcp_bytes_total", R, route, "direction",
				    "sent", NULL) == c->tcp_bytes_out);
	for (unsigned k = 0; k < GW_EV_KIND_COUNT; k++)
		assert_true(gwt_prom_sample(fams, "rpcrdma_gw_events_total", R, route, "kind",
					    gw_event_kind_name(k), NULL) == c->events[k]);
}

static void check_route_histogram(json_t *fams, const char *name, const char *route,
				  const struct gw_hist *h)
{
	char bucket[128], sum[128], count[128], le[32];
	double cumulative = 0;

	snprintf(bucket, sizeof(bucket), "%s_bucket", name);
	snprintf(sum, sizeof(sum), "%s_sum", name);
	snprintf(count, sizeof(count), "%s_count", name);
	for (unsigned i = 0; i < GW_HIST_BUCKETS; i++) {
		cumulative += (double)h->buckets[i];
		if (i == GW_HIST_BUCKETS - 1)
			snprintf(le, sizeof(le), "+Inf");
		else
			snprintf(le, sizeof(le), "%.6f", (double)gw_hist_bucket_le(i) / 1e6);
		/* the bound is written without trailing zeros */
		for (size_t n = strlen(le); n > 1 && strchr(le, '.') && le[n - 1] == '0';)
			le[--n] = '\0';
		if (le[strlen(le) - 1] == '.')
			le[strlen(le) - 1] = '\0';
		assert_true(gwt_prom_sample(fams, bucket, R, route, "le", le, NULL) == cumulative);
	}
	assert_true(fabs(gwt_prom_sample(fams, sum, R, route, NULL) - (double)h->sum_us / 1e6) <
		    1e-9);
	assert_true(gwt_prom_sample(fams, count, R, route, NULL) == h->count);
}

static void test_metrics_routes(void **state)
{
	struct gwt_stats_rig *f = *state;
	const struct gwt_fake_engine *e = &f->engine;
	const struct gw_counters *t = &e->routes[0].totals;
	json_t *fams = gwt_stats_get_metrics(f, "/metrics");
	assert_non_null(fams);

	assert_int_equal(f->engine.walks, 1);
	assert_true(gwt_prom_sample(fams, "rpcrdma_gw_build_info", "version", GW_VERSION, NULL) ==
		    1);
	check_family(fams, "rpcrdma_gw_rpc_calls", "counter");
	check_family(fams, "rpcrdma_gw_events", "counter");
	check_family(fams, "rpcrdma_gw_rdma_bytes", "counter");
	check_family(fams, "rpcrdma_gw_sessions", "gauge");
	check_family(fams, "rpcrdma_gw_credits_granted", "gauge");
	check_family(fams, "rpcrdma_gw_route_info", "gauge");
	check_family(fams, "rpcrdma_gw_gateway_latency_seconds", "histogram");
	check_family(fams, "rpcrdma_gw_upstream_latency_seconds", "histogram");
	check_family(fams, "rpcrdma_gw_procedure_calls", "counter");
	check_family(fams, "rpcrdma_gw_procedure_upstream_latency_seconds", "histogram");

	assert_true(gwt_prom_sample(fams, "rpcrdma_gw_route_info", R, "nfs-fwd", "mode", "forward",
				    "listen", "0.0.0.0:2049", "upstream", "192.168.1.10:20049",
				    NULL) == 1);
	assert_true(gwt_prom_sample(fams, "rpcrdma_gw_sessions", R, "nfs-fwd", NULL) == 2);
	check_family(fams, "rpcrdma_gw_sessions_by_state", "gauge");
	check_family(fams, "rpcrdma_gw_draining", "gauge");
	assert_true(gwt_prom_sample(fams, "rpcrdma_gw_draining", NULL) == 0);
	assert_true(gwt_prom_sample(fams, "rpcrdma_gw_sessions_by_state", R, "nfs-fwd", "state",
				    "ready", NULL) == 1);
	assert_true(gwt_prom_sample(fams, "rpcrdma_gw_sessions_by_state", R, "nfs-fwd", "state",
				    "connecting", NULL) == 1);
	assert_true(gwt_prom_sample(fams, "rpcrdma_gw_sessions_by_state", R, "nfs-fwd", "state",
				    "draining", NULL) == 0);
	assert_true(gwt_prom_sample(fams, "rpcrdma_gw_sessions_by_state", R, "nfs-fwd", "state",
				    "closing", NULL) == 0);
	check_route_scalars(fams, "nfs-fwd", t);
	check_route_histogram(fams, "rpcrdma_gw_gateway_latency_seconds", "nfs-fwd",
			      &t->gateway_us);
	check_route_histogram(fams, "rpcrdma_gw_upstream_latency_seconds", "nfs-fwd",
			      &t->upstream_us);
	/* a few by hand, so that the bounds' spelling is pinned down too */
	assert_true(gwt_prom_sample(fams, "rpcrdma_gw_gateway_latency_seconds_bucket", R, "nfs-fwd",
				    "le", "0.000001", NULL) == 1);
	assert_true(gwt_prom_sample(fams, "rpcrdma_gw_gateway_latency_seconds_bucket", R, "nfs-fwd",
				    "le", "0.001024", NULL) == 4);
	assert_true(gwt_prom_sample(fams, "rpcrdma_gw_gateway_latency_seconds_bucket", R, "nfs-fwd",
				    "le", "4.194304", NULL) == 4);
	assert_true(gwt_prom_sample(fams, "rpcrdma_gw_gateway_latency_seconds_bucket", R, "nfs-fwd",
				    "le", "+Inf", NULL) == 5);
	assert_true(gwt_prom_sample(fams, "rpcrdma_gw_gateway_latency_seconds_sum", R, "nfs-fwd",
				    NULL) == 5.001006);

	/* credits are the sums over the live sessions */
	assert_true(gwt_prom_sample(fams, "rpcrdma_gw_credits_granted", R, "nfs-fwd", NULL) == 129);
	assert_true(gwt_prom_sample(fams, "rpcrdma_gw_credits_in_use", R, "nfs-fwd", NULL) == 4);
	assert_true(gwt_prom_sample(fams, "rpcrdma_gw_calls_waiting_for_credits", R, "nfs-fwd",
				    NULL) == 2);
	assert_true(gwt_prom_sample(fams, "rpcrdma_gw_backward_credits_granted", R, "nfs-fwd",
				    NULL) == 8);
	assert_true(gwt_prom_sample(fams, "rpcrdma_gw_backward_credits_in_use", R, "nfs-fwd",
				    NULL) == 1);

	const char *pc = "rpcrdma_gw_procedure_calls_total";
	const char *pr = "rpcrdma_gw_procedure_replies_total";
	assert_true(gwt_prom_sample(fams, pc, R, "nfs-fwd", "program", "nfs", "version", "3",
				    "procedure", "READ", NULL) == 600);
	assert_true(gwt_prom_sample(fams, pr, R, "nfs-fwd", "program", "nfs", "version", "3",
				    "procedure", "READ", NULL) == 598);
	assert_true(gwt_prom_sample(fams, pc, R, "nfs-fwd", "program", "nfs", "version", "3",
				    "procedure", "WRITE", NULL) == 300);
	assert_true(gwt_prom_sample(fams, pc, R, "nfs-fwd", "program", "nfs", "version", "4",
				    "procedure", "COMPOUND", NULL) == 50);
	assert_true(gwt_prom_sample(fams, pc, R, "nfs-fwd", "program", "nlm", "version", "4",
				    "procedure", "LOCK", NULL) == 10);
	assert_true(gwt_prom_sample(fams, pc, R, "nfs-fwd", "program", "400000", "version", "1",
				    "procedure", "7", NULL) == 40);
	assert_true(gwt_prom_sample(fams, pc, R, "nfs-fwd", "program", "other", "version", "",
				    "procedure", "", NULL) == 3);
	assert_true(gwt_prom_sample(fams, pr, R, "nfs-fwd", "program", "other", "version", "",
				    "procedure", "", NULL) == 2);
	/* the upstream's latency of READ; none for WRITE, which was never timed */
	const char *pl = "rpcrdma_gw_procedure_upstream_latency_seconds";
	char series[96];
	snprintf(series, sizeof(series), "%s_count", pl);
	assert_true(gwt_prom_sample(fams, series, R, "nfs-fwd", "program", "nfs", "version", "3",
				    "procedure", "READ", NULL) == 2);
	snprintf(series, sizeof(series), "%s_bucket", pl);
	assert_true(gwt_prom_sample(fams, series, R, "nfs-fwd", "program", "nfs", "version", "3",
				    "procedure", "READ", "le", "0.000128", NULL) == 1);
	assert_true(gwt_prom_sample(fams, series, R, "nfs-fwd", "program", "nfs", "version", "3",
				    "procedure", "READ", "le", "+Inf", NULL) == 2);
	snprintf(series, sizeof(series), "%s_sum", pl);
	assert_true(gwt_prom_sample(fams, series, R, "nfs-fwd", "program", "nfs", "version", "3",
				    "procedure", "READ", NULL) == 0.0004);
	snprintf(series, sizeof(series), "%s_count", pl);
	assert_false(gwt_prom_has_sample(fams, series, R, "nfs-fwd", "program", "nfs", "version",
					 "3", "procedure", "WRITE", NULL));

	/* the second route's name, with a quote, a backslash and a newline, reads back intact */
	assert_true(gwt_prom_sample(fams, "rpcrdma_gw_route_info", R, gwt_fake_weird_name, "mode",
				    "reverse", "listen", "[::]:20049", "upstream",
				    "nfs.example:2049", NULL) == 1);
	check_route_scalars(fams, gwt_fake_weird_name, &e->routes[1].totals);
	check_route_histogram(fams, "rpcrdma_gw_upstream_latency_seconds", gwt_fake_weird_name,
			      &e->routes[1].totals.upstream_us);
	assert_true(gwt_prom_sample(fams, "rpcrdma_gw_sessions", R, gwt_fake_weird_name, NULL) ==
		    0);
	assert_true(gwt_prom_sample(fams, "rpcrdma_gw_credits_granted", R, gwt_fake_weird_name,
				    NULL) == 0);
	/* no procedures on that route, and no 'other' either */
	assert_false(gwt_prom_has_sample(fams, pc, R, gwt_fake_weird_name, "program", "other",
					 "version", "", "procedure", "", NULL));

	/* the RDMA devices' pools */
	check_family(fams, "rpcrdma_gw_pool_buffers_in_use", "gauge");
	check_family(fams, "rpcrdma_gw_pool_exhausted", "counter");
	assert_true(gwt_prom_sample(fams, "rpcrdma_gw_pool_buffers_in_use", "device", "rxe0",
				    NULL) == 130);
	assert_true(gwt_prom_sample(fams, "rpcrdma_gw_pool_buffers", "device", "rxe0", NULL) ==
		    1088);
	assert_true(gwt_prom_sample(fams, "rpcrdma_gw_pool_registered_bytes", "device", "rxe0",
				    NULL) == 75 << 20);
	assert_true(gwt_prom_sample(fams, "rpcrdma_gw_pool_exhausted_total", "device", "rxe0",
				    NULL) == 3);
	assert_true(gwt_prom_sample(fams, "rpcrdma_gw_pool_buffers", "device", "mlx5_1", NULL) ==
		    64);

	/* every kind of event on every route, from the first scrape */
	assert_int_equal(gwt_prom_family_size(fams, "rpcrdma_gw_events"), 2 * GW_EV_KIND_COUNT);

	/* per-session series are opt-in */
	size_t i;
	json_t *fam;
	json_array_foreach(fams, i, fam)
	{
		const char *name = json_string_value(json_object_get(fam, "name"));
		assert_true(strncmp(name, "rpcrdma_gw_session_", 19) != 0);
	}
	json_decref(fams);
}

static void test_metrics_shared(void **state)
{
	struct gwt_stats_rig *f = *state;
	json_t *fams = gwt_stats_get_metrics(f, "/metrics");
	assert_non_null(fams);

	check_family(fams, "rpcrdma_gw_shared_channel_credits_granted", "gauge");
	check_family(fams, "rpcrdma_gw_shared_channel_stalls", "counter");
	check_family(fams, "rpcrdma_gw_shared_xid_map", "counter");
	check_family(fams, "rpcrdma_gw_shared_xid_map_entries", "gauge");
	check_family(fams, "rpcrdma_gw_shared_xid_map_evicted", "counter");
	check_family(fams, "rpcrdma_gw_shared_xid_map_kept_clients", "gauge");
	const char *g = "rpcrdma_gw_shared_channel_credits_granted";
	assert_true(gwt_prom_sample(fams, g, R, "nfs-fwd", "channel", "0", NULL) == 64);
	assert_true(gwt_prom_sample(fams, g, R, "nfs-fwd", "channel", "1", NULL) == 0);
	assert_true(gwt_prom_sample(fams, "rpcrdma_gw_shared_channel_calls_in_flight", R, "nfs-fwd",
				    "channel", "0", NULL) == 3);
	assert_true(gwt_prom_sample(fams, "rpcrdma_gw_shared_channel_calls_queued", R, "nfs-fwd",
				    "channel", "0", NULL) == 7);
	assert_true(gwt_prom_sample(fams, "rpcrdma_gw_shared_channel_clients", R, "nfs-fwd",
				    "channel", "0", NULL) == 4);
	assert_true(gwt_prom_sample(fams, "rpcrdma_gw_shared_channel_stalls_total", R, "nfs-fwd",
				    "channel", "0", NULL) == 11);
	check_family(fams, "rpcrdma_gw_shared_channel_reconnects", "counter");
	check_family(fams, "rpcrdma_gw_shared_channel_reconnect_failures", "counter");
	check_family(fams, "rpcrdma_gw_shared_channel_calls_resent", "counter");
	check_family(fams, "rpcrdma_gw_shared_channel_calls_orphaned", "counter");
	assert_true(gwt_prom_sample(fams, "rpcrdma_gw_shared_channel_calls_orphaned_total", R,
				    "nfs-fwd", "channel", "1", NULL) == 6);
	check_family(fams, "rpcrdma_gw_shared_back_channels_kept", "gauge");
	assert_true(gwt_prom_sample(fams, "rpcrdma_gw_shared_back_channels_kept", R, "nfs-fwd",
				    NULL) == 2);
	check_family(fams, "rpcrdma_gw_shared_back_channels", "counter");
	assert_true(gwt_prom_sample(fams, "rpcrdma_gw_shared_back_channels_total", R, "nfs-fwd",
				    "what", "adopted", NULL) == 32);
	assert_true(gwt_prom_sample(fams, "rpcrdma_gw_shared_back_channels_total", R, "nfs-fwd",
				    "what", "replaced", NULL) == 34);
	check_family(fams, "rpcrdma_gw_shared_channel_cq_yields", "counter");
	assert_true(gwt_prom_sample(fams, "rpcrdma_gw_shared_channel_cq_yields_total", R, "nfs-fwd",
				    "channel", "1", NULL) == 14);
	assert_true(gwt_prom_sample(fams, "rpcrdma_gw_shared_channel_reconnects_total", R,
				    "nfs-fwd", "channel", "1", NULL) == 2);
	assert_true(gwt_prom_sample(fams, "rpcrdma_gw_shared_channel_reconnect_failures_total", R,
				    "nfs-fwd", "channel", "1", NULL) == 1);
	assert_true(gwt_prom_sample(fams, "rpcrdma_gw_shared_channel_calls_resent_total", R,
				    "nfs-fwd", "channel", "1", NULL) == 9);
	const char *m = "rpcrdma_gw_shared_xid_map_total";
	assert_true(gwt_prom_sample(fams, m, R, "nfs-fwd", "what", "new", NULL) == 1000);
	assert_true(gwt_prom_sample(fams, m, R, "nfs-fwd", "what", "retransmit_in_flight", NULL) ==
		    2);
	assert_true(gwt_prom_sample(fams, m, R, "nfs-fwd", "what", "stray", NULL) == 5);
	const char *e = "rpcrdma_gw_shared_xid_map_entries";
	assert_true(gwt_prom_sample(fams, e, R, "nfs-fwd", "state", "in_flight", NULL) == 3);
	assert_true(gwt_prom_sample(fams, e, R, "nfs-fwd", "state", "answered", NULL) == 250);
	assert_true(gwt_prom_sample(fams, e, R, "nfs-fwd", "state", "kept", NULL) == 40);
	assert_true(gwt_prom_sample(fams, m, R, "nfs-fwd", "what", "evicted", NULL) == 9);
	const char *ev = "rpcrdma_gw_shared_xid_map_evicted_total";
	assert_true(gwt_prom_sample(fams, ev, R, "nfs-fwd", "of", "safe_twice", NULL) == 6);
	assert_true(gwt_prom_sample(fams, ev, R, "nfs-fwd", "of", "own", NULL) == 2);
	assert_true(gwt_prom_sample(fams, ev, R, "nfs-fwd", "of", "other", NULL) == 1);
	assert_true(gwt_prom_sample(fams, "rpcrdma_gw_shared_xid_map_kept_clients", R, "nfs-fwd",
				    NULL) == 3);
	assert_int_equal(gwt_prom_family_size(fams, "rpcrdma_gw_shared_xid_map_evicted"), 3);
	/* Only the route that has them. */
	assert_int_equal(gwt_prom_family_size(fams, g), 2);
	assert_int_equal(gwt_prom_family_size(fams, "rpcrdma_gw_shared_xid_map"), 7);
	/* The route's queue time, and no series for the route that does not share. */
	check_family(fams, "rpcrdma_gw_shared_queue_seconds", "histogram");
	check_route_histogram(fams, "rpcrdma_gw_shared_queue_seconds", "nfs-fwd",
			      &f->engine.routes[0].totals.queue_us);
	assert_int_equal(gwt_prom_family_size(fams, "rpcrdma_gw_shared_queue_seconds"),
			 GW_HIST_BUCKETS + 2);
	/* The calls' wait in their sockets: the route's, and no series where none was seen. */
	check_family(fams, "rpcrdma_gw_socket_wait_seconds", "histogram");
	check_route_histogram(fams, "rpcrdma_gw_socket_wait_seconds", "nfs-fwd",
			      &f->engine.routes[0].totals.socket_us);
	assert_int_equal(gwt_prom_family_size(fams, "rpcrdma_gw_socket_wait_seconds"),
			 GW_HIST_BUCKETS + 2);
	json_decref(fams);
}

/* A client's own queue time, for the clients that queued: session 11 only. */
static void test_metrics_session_queue_time(void **state)
{
	struct gwt_stats_rig *f = *state;
	json_t *fams = gwt_stats_get_metrics(f, "/metrics?sessions=1");
	assert_non_null(fams);
	const char *q = "rpcrdma_gw_session_shared_queue_seconds";
	char count[128];

	snprintf(count, sizeof(count), "%s_count", q);
	check_family(fams, q, "histogram");
	assert_true(gwt_prom_sample(fams, count, R, "nfs-fwd", "session", "11", NULL) == 1);
	assert_true(gwt_prom_sample(fams, "rpcrdma_gw_session_shared_queue_seconds_bucket", R,
				    "nfs-fwd", "session", "11", "le", "0.002048", NULL) == 0);
	assert_true(gwt_prom_sample(fams, "rpcrdma_gw_session_shared_queue_seconds_bucket", R,
				    "nfs-fwd", "session", "11", "le", "0.004096", NULL) == 1);
	assert_int_equal(gwt_prom_family_size(fams, q), GW_HIST_BUCKETS + 2);
	/* Its wait in the socket, 900 us. */
	const char *w = "rpcrdma_gw_session_socket_wait_seconds_bucket";
	assert_true(gwt_prom_sample(fams, w, R, "nfs-fwd", "session", "11", "le", "0.000512",
				    NULL) == 0);
	assert_true(gwt_prom_sample(fams, w, R, "nfs-fwd", "session", "11", "le", "0.001024",
				    NULL) == 1);
	assert_int_equal(gwt_prom_family_size(fams, "rpcrdma_gw_session_socket_wait_seconds"),
			 GW_HIST_BUCKETS + 2);
	json_decref(fams);
}

static void test_metrics_nlm(void **state)
{
	struct gwt_stats_rig *f = *state;
	json_t *fams = gwt_stats_get_metrics(f, "/metrics");
	assert_non_null(fams);

	check_family(fams, "rpcrdma_gw_nlm_held", "gauge");
	check_family(fams, "rpcrdma_gw_nlm_refused", "counter");
	check_family(fams, "rpcrdma_gw_nlm_granted_callbacks", "counter");
	const char *h = "rpcrdma_gw_nlm_held";
	assert_true(gwt_prom_sample(fams, h, R, "nfs-fwd", "what", "clients", NULL) == 2);
	assert_true(gwt_prom_sample(fams, h, R, "nfs-fwd", "what", "owners", NULL) == 3);
	assert_true(gwt_prom_sample(fams, h, R, "nfs-fwd", "what", "locks", NULL) == 5);
	assert_true(gwt_prom_sample(fams, h, R, "nfs-fwd", "what", "callbacks_pending", NULL) == 1);
	const char *r = "rpcrdma_gw_nlm_refused_total";
	assert_true(gwt_prom_sample(fams, r, R, "nfs-fwd", "reason", "clients_full", NULL) == 6);
	assert_true(gwt_prom_sample(fams, r, R, "nfs-fwd", "reason", "owners_full", NULL) == 7);
	assert_true(gwt_prom_sample(fams, r, R, "nfs-fwd", "reason", "locks_full", NULL) == 8);
	assert_true(gwt_prom_sample(fams, r, R, "nfs-fwd", "reason", "client_locks_full", NULL) ==
		    9);
	assert_true(gwt_prom_sample(fams, r, R, "nfs-fwd", "reason", "oh_too_long", NULL) == 10);
	assert_true(gwt_prom_sample(fams, r, R, "nfs-fwd", "reason", "stale_owner", NULL) == 12);
	assert_true(gwt_prom_sample(fams, r, R, "nfs-fwd", "reason", "client_owners_full", NULL) ==
		    71);
	assert_true(gwt_prom_sample(fams, r, R, "nfs-fwd", "reason", "client_prefix_full", NULL) ==
		    73);
	check_family(fams, "rpcrdma_gw_nlm_clients_reclaimed", "counter");
	assert_true(gwt_prom_sample(fams, "rpcrdma_gw_nlm_clients_reclaimed_total", R, "nfs-fwd",
				    NULL) == 74);
	const char *c = "rpcrdma_gw_nlm_granted_callbacks_total";
	assert_true(gwt_prom_sample(fams, c, R, "nfs-fwd", "outcome", "relayed", NULL) == 13);
	assert_true(gwt_prom_sample(fams, c, R, "nfs-fwd", "outcome", "granted", NULL) == 14);
	assert_true(gwt_prom_sample(fams, c, R, "nfs-fwd", "outcome", "stale", NULL) == 15);
	assert_true(gwt_prom_sample(fams, c, R, "nfs-fwd", "outcome", "full", NULL) == 16);
	assert_true(gwt_prom_sample(fams, c, R, "nfs-fwd", "outcome", "timed_out", NULL) == 17);
	assert_true(gwt_prom_sample(fams, c, R, "nfs-fwd", "outcome", "not_from_server", NULL) ==
		    18);
	check_family(fams, "rpcrdma_gw_nlm_async", "counter");
	const char *a = "rpcrdma_gw_nlm_async_total";
	assert_true(gwt_prom_sample(fams, h, R, "nfs-fwd", "what", "async_pending", NULL) == 19);
	assert_true(gwt_prom_sample(fams, a, R, "nfs-fwd", "outcome", "sent", NULL) == 20);
	assert_true(gwt_prom_sample(fams, a, R, "nfs-fwd", "outcome", "delivered", NULL) == 21);
	assert_true(gwt_prom_sample(fams, a, R, "nfs-fwd", "outcome", "full", NULL) == 22);
	assert_true(gwt_prom_sample(fams, a, R, "nfs-fwd", "outcome", "unknown_cookie", NULL) ==
		    23);
	assert_true(gwt_prom_sample(fams, a, R, "nfs-fwd", "outcome", "from_client", NULL) == 24);
	assert_true(gwt_prom_sample(fams, a, R, "nfs-fwd", "outcome", "timed_out", NULL) == 25);
	assert_true(gwt_prom_sample(fams, a, R, "nfs-fwd", "outcome", "refused_client_cap", NULL) ==
		    26);
	assert_true(gwt_prom_sample(fams, a, R, "nfs-fwd", "outcome", "late_given_back", NULL) ==
		    27);
	assert_true(gwt_prom_sample(fams, a, R, "nfs-fwd", "outcome", "portmapper_silent", NULL) ==
		    28);
	assert_true(gwt_prom_sample(fams, a, R, "nfs-fwd", "outcome", "yielded", NULL) == 29);
	assert_int_equal(gwt_prom_family_size(fams, "rpcrdma_gw_nlm_async"), 10);
	assert_true(gwt_prom_sample(fams, h, R, "nfs-fwd", "what", "notify_pending", NULL) == 2);
	const char *sr = "rpcrdma_gw_nlm_server_reboot_notifications_total";
	check_family(fams, "rpcrdma_gw_nlm_server_reboot_notifications", "counter");
	assert_true(gwt_prom_sample(fams, sr, R, "nfs-fwd", "what", "received", NULL) == 19);
	assert_true(gwt_prom_sample(fams, sr, R, "nfs-fwd", "what", "repeated", NULL) == 20);
	assert_true(gwt_prom_sample(fams, sr, R, "nfs-fwd", "what", "delivered", NULL) == 21);
	assert_true(gwt_prom_sample(fams, sr, R, "nfs-fwd", "what", "not_delivered", NULL) == 22);
	assert_true(gwt_prom_sample(fams, sr, R, "nfs-fwd", "what", "not_from_server", NULL) == 23);
	assert_true(gwt_prom_sample(fams, sr, R, "nfs-fwd", "what", "clients_full", NULL) == 24);
	assert_int_equal(gwt_prom_family_size(fams, "rpcrdma_gw_nlm_server_reboot_notifications"),
			 6);
	/* /stats nlm.gateway_restart, the same figures. */
	const char *gr = "rpcrdma_gw_nlm_gateway_restart_total";
	check_family(fams, "rpcrdma_gw_nlm_gateway_restart", "counter");
	assert_true(gwt_prom_sample(fams, gr, R, "nfs-fwd", "what", "sent", NULL) == 3);
	assert_true(gwt_prom_sample(fams, gr, R, "nfs-fwd", "what", "delivered", NULL) == 1);
	assert_true(gwt_prom_sample(fams, gr, R, "nfs-fwd", "what", "not_delivered", NULL) == 0);
	assert_true(gwt_prom_sample(fams, gr, R, "nfs-fwd", "what", "clients_told", NULL) == 2);
	assert_true(gwt_prom_sample(fams, gr, R, "nfs-fwd", "what", "clients_delivered", NULL) ==
		    4);
	assert_true(gwt_prom_sample(fams, gr, R, "nfs-fwd", "what", "reclaims_converted", NULL) ==
		    5);
	assert_true(gwt_prom_sample(fams, gr, R, "nfs-fwd", "what", "grace_refused", NULL) == 6);
	assert_int_equal(gwt_prom_family_size(fams, "rpcrdma_gw_nlm_gateway_restart"), 7);
	const char *gs = "rpcrdma_gw_nlm_gateway_restart_state";
	check_family(fams, gs, "gauge");
	assert_true(gwt_prom_sample(fams, gs, R, "nfs-fwd", "what", "nsm_state", NULL) == 1001);
	assert_true(gwt_prom_sample(fams, gs, R, "nfs-fwd", "what", "persisted", NULL) == 1);
	assert_int_equal(gwt_prom_family_size(fams, gs), 2);
	/* Only the route that has an NLM relay. */
	assert_int_equal(gwt_prom_family_size(fams, h), 6);
	assert_int_equal(gwt_prom_family_size(fams, "rpcrdma_gw_nlm_refused"), 8);
	assert_int_equal(gwt_prom_family_size(fams, "rpcrdma_gw_nlm_granted_callbacks"), 6);
	json_decref(fams);
}

static void test_metrics_sessions(void **state)
{
	struct gwt_stats_rig *f = *state;
	const struct gwt_fake_route *fa = &f->engine.routes[0];
	json_t *fams = gwt_stats_get_metrics(f, "/metrics?sessions=1");
	assert_non_null(fams);

	check_family(fams, "rpcrdma_gw_session_info", "gauge");
	check_family(fams, "rpcrdma_gw_session_rpc_calls", "counter");
	check_family(fams, "rpcrdma_gw_session_credits_granted", "gauge");
	for (unsigned j = 0; j < 2; j++) {
		const struct gwt_fake_session *fs = &fa->sessions[j];
		const struct gw_stats_session *s = &fs->s;
		char id[24];
		snprintf(id, sizeof(id), "%" PRIu64, s->id);
		assert_true(gwt_prom_sample(fams, "rpcrdma_gw_session_info", R, "nfs-fwd",
					    "session", id, "client", s->client, "upstream",
					    s->upstream, "state", s->state, NULL) == 1);
		assert_true(fabs(gwt_prom_sample(fams, "rpcrdma_gw_session_age_seconds", R,
						 "nfs-fwd", "session", id, NULL) -
				 (double)s->age_ms / 1000) < 1e-9);
		assert_true(gwt_prom_sample(fams, "rpcrdma_gw_session_rpc_calls_total", R,
					    "nfs-fwd", "session", id, NULL) == fs->c.calls);
		assert_true(gwt_prom_sample(fams, "rpcrdma_gw_session_rpc_replies_total", R,
					    "nfs-fwd", "session", id, NULL) == fs->c.replies);
		assert_true(gwt_prom_sample(fams, "rpcrdma_gw_session_rdma_bytes_total", R,
					    "nfs-fwd", "session", id, "via", "read_chunk",
					    NULL) == fs->c.bytes_read_chunk);
		assert_true(gwt_prom_sample(fams, "rpcrdma_gw_session_tcp_bytes_total", R,
					    "nfs-fwd", "session", id, "direction", "received",
					    NULL) == fs->c.tcp_bytes_in);
		assert_true(gwt_prom_sample(fams, "rpcrdma_gw_session_credits_granted", R,
					    "nfs-fwd", "session", id, NULL) == s->credits.granted);
		assert_true(gwt_prom_sample(fams, "rpcrdma_gw_session_credits_in_use", R, "nfs-fwd",
					    "session", id, NULL) == s->credits.in_use);
		assert_true(gwt_prom_sample(fams, "rpcrdma_gw_session_calls_waiting_for_credits", R,
					    "nfs-fwd", "session", id, NULL) == s->credits.queued);
		assert_true(gwt_prom_sample(fams, "rpcrdma_gw_session_inline_threshold_bytes", R,
					    "nfs-fwd", "session", id, "direction", "send",
					    NULL) == s->inline_send);
		assert_true(gwt_prom_sample(fams, "rpcrdma_gw_session_inline_threshold_bytes", R,
					    "nfs-fwd", "session", id, "direction", "receive",
					    NULL) == s->inline_recv);
		assert_true(gwt_prom_sample(fams, "rpcrdma_gw_session_rpcrdma_version", R,
					    "nfs-fwd", "session", id, NULL) == s->rpcrdma_version);
		assert_true(gwt_prom_sample(fams, "rpcrdma_gw_session_read_yields_total", R,
					    "nfs-fwd", "session", id, NULL) == s->read_yields);
	}
	/* a session shows only the events that happened to it */
	assert_true(gwt_prom_sample(fams, "rpcrdma_gw_session_events_total", R, "nfs-fwd",
				    "session", "11", "kind", "retransmit_absorbed", NULL) == 2);
	assert_int_equal(gwt_prom_family_size(fams, "rpcrdma_gw_session_events"), 1);
	/* the route series are the same as without sessions */
	assert_true(gwt_prom_sample(fams, "rpcrdma_gw_rpc_calls_total", R, "nfs-fwd", NULL) ==
		    1003);
	assert_true(gwt_prom_sample(fams, "rpcrdma_gw_credits_granted", R, "nfs-fwd", NULL) == 129);
	json_decref(fams);

	fams = gwt_stats_get_metrics(f, "/metrics?sessions=0");
	assert_non_null(fams);
	assert_null(gwt_prom_family(fams, "rpcrdma_gw_session_info"));
	json_decref(fams);
}

static void test_metrics_no_routes(void **state)
{
	struct gwt_stats_rig *f = *state;

	f->engine.nroutes = 0;
	f->engine.ndevices = 0;
	json_t *fams = gwt_stats_get_metrics(f, "/metrics?sessions=1");
	assert_non_null(fams);
	/* the endpoint's own families are there without any route, and the process's */
	assert_int_equal(json_array_size(fams), 8);
	assert_non_null(gwt_prom_family(fams, "rpcrdma_gw_build_info"));
	check_family(fams, "rpcrdma_gw_stats_connections_refused", "counter");
	check_family(fams, "rpcrdma_gw_draining", "gauge");
	check_family(fams, "process_cpu_seconds", "counter");
	check_family(fams, "process_start_time_seconds", "gauge");
	check_family(fams, "process_resident_memory_bytes", "gauge");
	check_family(fams, "process_open_fds", "gauge");
	check_family(fams, "process_max_fds", "gauge");
	json_decref(fams);
}
int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_metrics_routes, gwt_stats_rig_setup,
						gwt_stats_rig_teardown),
		cmocka_unit_test_setup_teardown(test_metrics_shared, gwt_stats_rig_setup,
						gwt_stats_rig_teardown),
		cmocka_unit_test_setup_teardown(test_metrics_session_queue_time,
						gwt_stats_rig_setup, gwt_stats_rig_teardown),
		cmocka_unit_test_setup_teardown(test_metrics_nlm, gwt_stats_rig_setup,
						gwt_stats_rig_teardown),
		cmocka_unit_test_setup_teardown(test_metrics_sessions, gwt_stats_rig_setup,
						gwt_stats_rig_teardown),
		cmocka_unit_test_setup_teardown(test_metrics_no_routes, gwt_stats_rig_setup,
						gwt_stats_rig_teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
