/* SPDX-License-Identifier: MIT */
/*
 * /stats, the JSON of the stats endpoint (gateway/stats/stats_json.c): every
 * figure of the fake engine read back, route by route (totals, events,
 * latency histograms, procedures, credits, sessions, the RDMA devices' pools),
 * the shared upstream connections and their XID map, the NLM relay, queue and
 * socket wait times; ?sessions=0, a counter beyond the range of JSON
 * integers, and an engine with no routes.
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

#include <jansson.h>

#include "gateway/counters/counters.h"

#include "support/jsonpath.h"
#include "support/statsrig.h"

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

static const char *jtext(json_t *obj, const char *key)
{
	json_t *v = json_object_get(obj, key);

	if (!json_is_string(v))
		fail_msg("%s is not a string", key);
	return json_string_value(v);
}

static void check_json_hist(json_t *h, const struct gw_hist *want)
{
	json_t *buckets = json_object_get(h, "buckets");
	size_t n = 0;

	assert_int_equal(json_integer_value(json_object_get(h, "count")), want->count);
	assert_int_equal(json_integer_value(json_object_get(h, "sum_us")), want->sum_us);
	for (unsigned i = 0; i < GW_HIST_BUCKETS; i++) {
		if (!want->buckets[i])
			continue;
		json_t *b = json_array_get(buckets, n++);
		assert_non_null(b);
		json_t *le = json_object_get(b, "le_us");
		if (i == GW_HIST_BUCKETS - 1)
			assert_true(json_is_null(le));
		else
			assert_int_equal(json_integer_value(le), gw_hist_bucket_le(i));
		assert_int_equal(json_integer_value(json_object_get(b, "count")), want->buckets[i]);
	}
	assert_int_equal(json_array_size(buckets), n);
}

static void test_stats_json(void **state)
{
	struct gwt_stats_rig *f = *state;
	const struct gwt_fake_route *fa = &f->engine.routes[0];
	const struct gw_counters *t = &fa->totals;
	json_t *root = gwt_stats_get_json(f, "/stats");
	assert_non_null(root);
	json_t *routes = json_object_get(root, "routes");
	json_t *ra = json_array_get(routes, 0), *rb = json_array_get(routes, 1);

	assert_int_equal(f->engine.walks, 1);
	assert_true(json_is_string(json_object_get(root, "version")));
	assert_int_equal(json_array_size(routes), 2);

	assert_string_equal(jtext(ra, "name"), "nfs-fwd");
	assert_string_equal(jtext(ra, "mode"), "forward");
	assert_string_equal(jtext(ra, "listen"), "0.0.0.0:2049");
	assert_string_equal(jtext(ra, "upstream"), "192.168.1.10:20049");
	assert_int_equal(gwt_json_int(ra, "live_sessions"), 2);
	assert_int_equal(gwt_json_int(ra, "sessions_by_state.connecting"), 1);
	assert_int_equal(gwt_json_int(ra, "sessions_by_state.ready"), 1);
	assert_int_equal(gwt_json_int(ra, "sessions_by_state.draining"), 0);
	assert_int_equal(gwt_json_int(ra, "sessions_by_state.closing"), 0);
	assert_int_equal(gwt_json_int(rb, "sessions_by_state.ready"), 0);
	assert_true(json_is_false(json_object_get(root, "draining")));
	assert_int_equal(gwt_json_int(ra, "totals.calls"), t->calls);
	assert_int_equal(gwt_json_int(ra, "totals.replies"), t->replies);
	assert_int_equal(gwt_json_int(ra, "totals.backward_calls"), t->backward_calls);
	assert_int_equal(gwt_json_int(ra, "totals.backward_replies"), t->backward_replies);
	assert_int_equal(gwt_json_int(ra, "totals.calls_queued_for_credits"),
			 t->calls_queued_for_credits);
	assert_int_equal(gwt_json_int(ra, "totals.remote_invalidations"), t->remote_invalidations);
	assert_int_equal(gwt_json_int(ra, "totals.rdma_bytes.inline"), t->bytes_inline);
	assert_int_equal(gwt_json_int(ra, "totals.rdma_bytes.read_chunk"), t->bytes_read_chunk);
	assert_int_equal(gwt_json_int(ra, "totals.rdma_bytes.write_chunk"), t->bytes_write_chunk);
	assert_int_equal(gwt_json_int(ra, "totals.rdma_bytes.reply_chunk"), t->bytes_reply_chunk);
	assert_int_equal(gwt_json_int(ra, "totals.tcp_bytes.received"), t->tcp_bytes_in);
	assert_int_equal(gwt_json_int(ra, "totals.tcp_bytes.sent"), t->tcp_bytes_out);
	assert_int_equal(gwt_json_int(ra, "totals.sessions_opened"), t->sessions_opened);
	assert_int_equal(gwt_json_int(ra, "totals.sessions_closed"), t->sessions_closed);
	json_t *events = json_object_get(json_object_get(ra, "totals"), "events");
	assert_int_equal(json_object_size(events), GW_EV_KIND_COUNT);
	for (unsigned k = 0; k < GW_EV_KIND_COUNT; k++)
		assert_int_equal(json_integer_value(json_object_get(events, gw_event_kind_name(k))),
				 t->events[k]);
	assert_int_equal(gwt_json_int(ra, "totals.events.malformed_record"), 3);

	json_t *latency = json_object_get(json_object_get(ra, "totals"), "latency");
	check_json_hist(json_object_get(latency, "gateway"), &t->gateway_us);
	check_json_hist(json_object_get(latency, "upstream"), &t->upstream_us);

	/* procedures: sorted by program, version, procedure; named where known */
	json_t *procs = json_object_get(json_object_get(ra, "totals"), "procedures");
	static const struct {
		uint32_t prog, vers, proc;
		const char *prog_name, *proc_name;
	} want[] = {
		{ 100003, 3, 6, "nfs", "READ" },     { 100003, 3, 7, "nfs", "WRITE" },
		{ 100003, 4, 1, "nfs", "COMPOUND" }, { 100021, 4, 2, "nlm", "LOCK" },
		{ 400000, 1, 7, NULL, NULL },
	};
	assert_int_equal(json_array_size(procs), ARRAY_SIZE(want));
	for (size_t i = 0; i < ARRAY_SIZE(want); i++) {
		json_t *p = json_array_get(procs, i);
		const struct gw_proc_count *pc = gw_counters_proc(
			(struct gw_counters *)t, want[i].prog, want[i].vers, want[i].proc);
		assert_int_equal(gwt_json_int(p, "program"), want[i].prog);
		assert_int_equal(gwt_json_int(p, "version"), want[i].vers);
		assert_int_equal(gwt_json_int(p, "procedure"), want[i].proc);
		assert_int_equal(gwt_json_int(p, "calls"), pc->calls);
		assert_int_equal(gwt_json_int(p, "replies"), pc->replies);
		if (want[i].prog_name) {
			assert_string_equal(jtext(p, "program_name"), want[i].prog_name);
			assert_string_equal(jtext(p, "procedure_name"), want[i].proc_name);
		} else {
			assert_true(json_is_null(json_object_get(p, "program_name")));
			assert_true(json_is_null(json_object_get(p, "procedure_name")));
		}
	}
	/* the upstream's latency by procedure, on the route: READ's two answers, WRITE's none */
	const struct gw_proc_count *read_slot =
		gw_counters_proc((struct gw_counters *)t, 100003, 3, 6);
	unsigned nslots;
	check_json_hist(json_object_get(json_array_get(procs, 0), "upstream_latency"),
			&fa->proc_upstream_us[read_slot - gw_counters_procs(t, &nslots)]);
	assert_int_equal(gwt_json_int(json_array_get(procs, 0), "upstream_latency.count"), 2);
	assert_int_equal(gwt_json_int(json_array_get(procs, 1), "upstream_latency.count"), 0);
	assert_int_equal(gwt_json_int(ra, "totals.procedures_other.calls"), 3);
	assert_int_equal(gwt_json_int(ra, "totals.procedures_other.replies"), 2);

	/* route credits are the sums over its live sessions */
	assert_int_equal(gwt_json_int(ra, "credits.granted"), 129);
	assert_int_equal(gwt_json_int(ra, "credits.in_use"), 4);
	assert_int_equal(gwt_json_int(ra, "credits.queued"), 2);
	assert_int_equal(gwt_json_int(ra, "credits.backward_granted"), 8);
	assert_int_equal(gwt_json_int(ra, "credits.backward_in_use"), 1);

	json_t *sessions = json_object_get(ra, "sessions");
	assert_int_equal(json_array_size(sessions), 2);
	for (unsigned i = 0; i < 2; i++) {
		const struct gwt_fake_session *fs = &fa->sessions[i];
		json_t *s = json_array_get(sessions, i);
		assert_int_equal(gwt_json_int(s, "id"), fs->s.id);
		assert_string_equal(jtext(s, "client"), fs->s.client);
		assert_string_equal(jtext(s, "upstream"), fs->s.upstream);
		assert_string_equal(jtext(s, "state"), fs->s.state);
		assert_int_equal(gwt_json_int(s, "age_ms"), fs->s.age_ms);
		assert_int_equal(gwt_json_int(s, "inline_send"), fs->s.inline_send);
		assert_int_equal(gwt_json_int(s, "inline_recv"), fs->s.inline_recv);
		assert_int_equal(gwt_json_int(s, "rpcrdma_version"), fs->s.rpcrdma_version);
		assert_int_equal(gwt_json_int(s, "read_yields"), fs->s.read_yields);
		assert_int_equal(gwt_json_int(s, "credits.granted"), fs->s.credits.granted);
		assert_int_equal(gwt_json_int(s, "credits.in_use"), fs->s.credits.in_use);
		assert_int_equal(gwt_json_int(s, "credits.queued"), fs->s.credits.queued);
		assert_int_equal(gwt_json_int(s, "counters.calls"), fs->c.calls);
		assert_int_equal(gwt_json_int(s, "counters.replies"), fs->c.replies);
		assert_int_equal(gwt_json_int(s, "counters.rdma_bytes.read_chunk"),
				 fs->c.bytes_read_chunk);
		/* a session lists only the events that happened to it */
		json_t *sev = json_object_get(json_object_get(s, "counters"), "events");
		size_t nonzero = 0;
		for (unsigned k = 0; k < GW_EV_KIND_COUNT; k++) {
			json_t *ev = json_object_get(sev, gw_event_kind_name(k));
			if (!fs->c.events[k]) {
				assert_null(ev);
				continue;
			}
			nonzero++;
			assert_int_equal(json_integer_value(ev), fs->c.events[k]);
		}
		assert_int_equal(json_object_size(sev), nonzero);
		check_json_hist(
			json_object_get(json_object_get(json_object_get(s, "counters"), "latency"),
					"gateway"),
			&fs->c.gateway_us);
	}
	assert_int_equal(gwt_json_int(sessions, "0.counters.procedures.0.calls"), 600);
	assert_int_equal(gwt_json_int(sessions, "0.counters.events.retransmit_absorbed"), 2);
	/* a session that never counted by procedure has no table of its own: none shown */
	assert_null(fa->sessions[1].c.procs_big);
	assert_int_equal(gwt_json_int(sessions, "1.counters.calls"), 2);
	assert_int_equal(
		json_array_size(json_object_get(
			json_object_get(json_array_get(sessions, 1), "counters"), "procedures")),
		0);

	/* the second route: escapes survive, no sessions, nothing in use */
	assert_string_equal(jtext(rb, "name"), gwt_fake_weird_name);
	assert_string_equal(jtext(rb, "mode"), "reverse");
	assert_int_equal(gwt_json_int(rb, "totals.calls"), 42);
	assert_int_equal(gwt_json_int(rb, "totals.events.credit_overrun"), 9);
	assert_int_equal(json_array_size(json_object_get(rb, "sessions")), 0);
	assert_int_equal(gwt_json_int(rb, "credits.granted"), 0);
	assert_int_equal(gwt_json_int(rb, "credits.in_use"), 0);
	/* the RDMA devices' pools, after the routes */
	json_t *devs = json_object_get(root, "rdma_devices");
	assert_int_equal(json_array_size(devs), 2);
	assert_string_equal(jtext(json_array_get(devs, 0), "name"), "rxe0");
	assert_int_equal(gwt_json_int(json_array_get(devs, 0), "buffers_in_use"), 130);
	assert_int_equal(gwt_json_int(json_array_get(devs, 0), "buffers"), 1088);
	assert_int_equal(gwt_json_int(json_array_get(devs, 0), "registered_bytes"), 75ll << 20);
	assert_int_equal(gwt_json_int(json_array_get(devs, 0), "exhausted"), 3);
	assert_string_equal(jtext(json_array_get(devs, 1), "name"), "mlx5_1");
	assert_int_equal(gwt_json_int(json_array_get(devs, 1), "buffers_in_use"), 0);
	json_decref(root);
}

/* A route with shared upstream connections shows each channel and the XID map. */
static void test_stats_json_shared(void **state)
{
	struct gwt_stats_rig *f = *state;
	json_t *root = gwt_stats_get_json(f, "/stats");
	assert_non_null(root);
	json_t *rb = json_array_get(json_object_get(root, "routes"), 1);

	assert_int_equal(gwt_json_int(root, "routes.0.shared_upstream.channels.0.channel"), 0);
	json_t *chans =
		json_object_get(json_object_get(json_array_get(json_object_get(root, "routes"), 0),
						"shared_upstream"),
				"channels");
	assert_int_equal(json_array_size(chans), 2);
	assert_string_equal(jtext(json_array_get(chans, 0), "state"), "ready");
	assert_string_equal(jtext(json_array_get(chans, 1), "state"), "closed");
	assert_int_equal(gwt_json_int(root, "routes.0.shared_upstream.channels.0.credits_granted"),
			 64);
	assert_int_equal(gwt_json_int(root, "routes.0.shared_upstream.channels.0.calls_in_flight"),
			 3);
	assert_int_equal(gwt_json_int(root, "routes.0.shared_upstream.channels.0.calls_queued"), 7);
	assert_int_equal(gwt_json_int(root, "routes.0.shared_upstream.channels.0.clients"), 4);
	assert_int_equal(gwt_json_int(root, "routes.0.shared_upstream.channels.0.stalls"), 11);
	assert_int_equal(gwt_json_int(root, "routes.0.shared_upstream.channels.1.channel"), 1);
	assert_int_equal(gwt_json_int(root, "routes.0.shared_upstream.channels.1.reconnects"), 2);
	assert_int_equal(
		gwt_json_int(root, "routes.0.shared_upstream.channels.1.reconnect_failures"), 1);
	assert_int_equal(gwt_json_int(root, "routes.0.shared_upstream.channels.1.calls_resent"), 9);
	assert_int_equal(gwt_json_int(root, "routes.0.shared_upstream.channels.0.calls_resent"), 0);
	assert_int_equal(gwt_json_int(root, "routes.0.shared_upstream.channels.1.calls_orphaned"),
			 6);
	assert_int_equal(gwt_json_int(root, "routes.0.shared_upstream.channels.1.cq_yields"), 14);
	assert_int_equal(gwt_json_int(root, "routes.0.shared_upstream.back_channels_kept.now"), 2);
	assert_int_equal(gwt_json_int(root, "routes.0.shared_upstream.back_channels_kept.kept"),
			 31);
	assert_int_equal(gwt_json_int(root, "routes.0.shared_upstream.back_channels_kept.adopted"),
			 32);
	assert_int_equal(gwt_json_int(root, "routes.0.shared_upstream.back_channels_kept.expired"),
			 33);
	assert_int_equal(gwt_json_int(root, "routes.0.shared_upstream.back_channels_kept.replaced"),
			 34);
	assert_int_equal(gwt_json_int(root, "routes.0.shared_upstream.back_channels_kept.dropped"),
			 35);
	assert_int_equal(gwt_json_int(root, "routes.0.shared_upstream.xid_map.entries"), 61440);
	assert_int_equal(gwt_json_int(root, "routes.0.shared_upstream.xid_map.in_flight"), 3);
	assert_int_equal(gwt_json_int(root, "routes.0.shared_upstream.xid_map.answered"), 250);
	assert_int_equal(gwt_json_int(root, "routes.0.shared_upstream.xid_map.new"), 1000);
	assert_int_equal(
		gwt_json_int(root, "routes.0.shared_upstream.xid_map.retransmit_in_flight"), 2);
	assert_int_equal(gwt_json_int(root, "routes.0.shared_upstream.xid_map.retransmit_answered"),
			 1);
	assert_int_equal(gwt_json_int(root, "routes.0.shared_upstream.xid_map.expired"), 700);
	assert_int_equal(gwt_json_int(root, "routes.0.shared_upstream.xid_map.stray"), 5);
	assert_int_equal(gwt_json_int(root, "routes.0.shared_upstream.xid_map.kept"), 40);
	assert_int_equal(gwt_json_int(root, "routes.0.shared_upstream.xid_map.kept_clients"), 3);
	assert_int_equal(gwt_json_int(root, "routes.0.shared_upstream.xid_map.evicted"), 9);
	assert_int_equal(gwt_json_int(root, "routes.0.shared_upstream.xid_map.evicted_safe_twice"),
			 6);
	assert_int_equal(gwt_json_int(root, "routes.0.shared_upstream.xid_map.evicted_own"), 2);
	assert_int_equal(gwt_json_int(root, "routes.0.shared_upstream.xid_map.evicted_other"), 1);
	/* A route without: no member at all. */
	assert_null(json_object_get(rb, "shared_upstream"));
	json_decref(root);
}

/* Queue time: the route's over all its clients, and each client's own. */
static void test_stats_json_queue_time(void **state)
{
	struct gwt_stats_rig *f = *state;
	json_t *root = gwt_stats_get_json(f, "/stats");
	assert_non_null(root);

	assert_int_equal(gwt_json_int(root, "routes.0.totals.latency.queue.count"), 2);
	assert_int_equal(gwt_json_int(root, "routes.0.totals.latency.queue.sum_us"), 3050);
	assert_int_equal(gwt_json_int(root, "routes.0.totals.latency.socket.count"), 2);
	assert_int_equal(gwt_json_int(root, "routes.0.totals.latency.socket.sum_us"), 907);
	assert_int_equal(gwt_json_int(root, "routes.0.totals.latency.queue.buckets.0.le_us"), 64);
	assert_int_equal(gwt_json_int(root, "routes.0.totals.latency.queue.buckets.1.le_us"), 4096);
	assert_int_equal(gwt_json_int(root, "routes.0.sessions.0.counters.latency.queue.count"), 1);
	assert_int_equal(gwt_json_int(root, "routes.0.sessions.0.counters.latency.queue.sum_us"),
			 3000);
	assert_int_equal(gwt_json_int(root, "routes.0.sessions.1.counters.latency.queue.count"), 0);
	json_decref(root);
}

/* A route with an NLM relay shows what it holds, its refusals and the callbacks. */
static void test_stats_json_nlm(void **state)
{
	struct gwt_stats_rig *f = *state;
	json_t *root = gwt_stats_get_json(f, "/stats");
	assert_non_null(root);

	assert_int_equal(gwt_json_int(root, "routes.0.nlm.clients"), 2);
	assert_int_equal(gwt_json_int(root, "routes.0.nlm.owners"), 3);
	assert_int_equal(gwt_json_int(root, "routes.0.nlm.locks"), 5);
	assert_int_equal(gwt_json_int(root, "routes.0.nlm.refused.clients_full"), 6);
	assert_int_equal(gwt_json_int(root, "routes.0.nlm.refused.owners_full"), 7);
	assert_int_equal(gwt_json_int(root, "routes.0.nlm.refused.locks_full"), 8);
	assert_int_equal(gwt_json_int(root, "routes.0.nlm.refused.client_locks_full"), 9);
	assert_int_equal(gwt_json_int(root, "routes.0.nlm.refused.oh_too_long"), 10);
	assert_int_equal(gwt_json_int(root, "routes.0.nlm.refused.stale_owner"), 12);
	assert_int_equal(gwt_json_int(root, "routes.0.nlm.refused.client_owners_full"), 71);
	assert_int_equal(gwt_json_int(root, "routes.0.nlm.refused.client_prefix_full"), 73);
	assert_int_equal(gwt_json_int(root, "routes.0.nlm.clients_reclaimed"), 74);
	assert_int_equal(gwt_json_int(root, "routes.0.nlm.granted_callbacks.pending"), 1);
	assert_int_equal(gwt_json_int(root, "routes.0.nlm.granted_callbacks.relayed"), 13);
	assert_int_equal(gwt_json_int(root, "routes.0.nlm.granted_callbacks.granted"), 14);
	assert_int_equal(gwt_json_int(root, "routes.0.nlm.granted_callbacks.stale"), 15);
	assert_int_equal(gwt_json_int(root, "routes.0.nlm.granted_callbacks.full"), 16);
	assert_int_equal(gwt_json_int(root, "routes.0.nlm.granted_callbacks.timed_out"), 17);
	assert_int_equal(gwt_json_int(root, "routes.0.nlm.granted_callbacks.not_from_server"), 18);
	assert_int_equal(gwt_json_int(root, "routes.0.nlm.async.pending"), 19);
	assert_int_equal(gwt_json_int(root, "routes.0.nlm.async.sent"), 20);
	assert_int_equal(gwt_json_int(root, "routes.0.nlm.async.delivered"), 21);
	assert_int_equal(gwt_json_int(root, "routes.0.nlm.async.full"), 22);
	assert_int_equal(gwt_json_int(root, "routes.0.nlm.async.unknown_cookie"), 23);
	assert_int_equal(gwt_json_int(root, "routes.0.nlm.async.from_client"), 24);
	assert_int_equal(gwt_json_int(root, "routes.0.nlm.async.timed_out"), 25);
	assert_int_equal(gwt_json_int(root, "routes.0.nlm.async.refused_client_cap"), 26);
	assert_int_equal(gwt_json_int(root, "routes.0.nlm.async.late_given_back"), 27);
	assert_int_equal(gwt_json_int(root, "routes.0.nlm.async.portmapper_silent"), 28);
	assert_int_equal(gwt_json_int(root, "routes.0.nlm.async.yielded"), 29);
	assert_int_equal(gwt_json_int(root, "routes.0.nlm.server_reboots.pending"), 2);
	assert_int_equal(gwt_json_int(root, "routes.0.nlm.server_reboots.received"), 19);
	assert_int_equal(gwt_json_int(root, "routes.0.nlm.server_reboots.repeated"), 20);
	assert_int_equal(gwt_json_int(root, "routes.0.nlm.server_reboots.delivered"), 21);
	assert_int_equal(gwt_json_int(root, "routes.0.nlm.server_reboots.not_delivered"), 22);
	assert_int_equal(gwt_json_int(root, "routes.0.nlm.server_reboots.not_from_server"), 23);
	assert_int_equal(gwt_json_int(root, "routes.0.nlm.server_reboots.clients_full"), 24);
	assert_int_equal(gwt_json_int(root, "routes.0.nlm.gateway_restart.nsm_state"), 1001);
	assert_true(json_is_true(json_object_get(
		json_object_get(
			json_object_get(json_array_get(json_object_get(root, "routes"), 0), "nlm"),
			"gateway_restart"),
		"state_persisted")));
	assert_int_equal(gwt_json_int(root, "routes.0.nlm.gateway_restart.sent"), 3);
	assert_int_equal(gwt_json_int(root, "routes.0.nlm.gateway_restart.delivered"), 1);
	assert_int_equal(gwt_json_int(root, "routes.0.nlm.gateway_restart.not_delivered"), 0);
	assert_int_equal(gwt_json_int(root, "routes.0.nlm.gateway_restart.clients_told"), 2);
	assert_int_equal(gwt_json_int(root, "routes.0.nlm.gateway_restart.reclaims_converted"), 5);
	assert_int_equal(gwt_json_int(root, "routes.0.nlm.gateway_restart.grace_refused"), 6);
	assert_int_equal(gwt_json_int(root, "routes.0.nlm.release_queue.pending"), 31);
	assert_int_equal(gwt_json_int(root, "routes.0.nlm.release_queue.in_flight"), 16);
	assert_int_equal(gwt_json_int(root, "routes.0.nlm.release_queue.queued"), 300);
	assert_int_equal(gwt_json_int(root, "routes.0.nlm.release_queue.released"), 260);
	assert_int_equal(gwt_json_int(root, "routes.0.nlm.release_queue.retried"), 12);
	assert_int_equal(gwt_json_int(root, "routes.0.nlm.release_queue.given_up"), 9);
	assert_int_equal(gwt_json_int(root, "routes.0.nlm.release_queue.full"), 4);
	/* A route without side services has no "nlm" at all. */
	json_t *rb = json_array_get(json_object_get(root, "routes"), 1);
	assert_null(json_object_get(rb, "nlm"));
	json_decref(root);
}

/* ?sessions=0: the totals and the credit sums, without the session list */
static void test_stats_json_without_sessions(void **state)
{
	struct gwt_stats_rig *f = *state;
	json_t *root = gwt_stats_get_json(f, "/stats?sessions=0");
	assert_non_null(root);
	json_t *ra = json_array_get(json_object_get(root, "routes"), 0);

	assert_null(json_object_get(ra, "sessions"));
	assert_int_equal(gwt_json_int(ra, "live_sessions"), 2);
	assert_int_equal(gwt_json_int(ra, "totals.calls"), f->engine.routes[0].totals.calls);
	assert_int_equal(gwt_json_int(ra, "credits.granted"), 129);
	assert_int_equal(gwt_json_int(root, "routes.1.totals.calls"), 42);
	json_decref(root);

	root = gwt_stats_get_json(f, "/stats?sessions=1");
	assert_non_null(root);
	ra = json_array_get(json_object_get(root, "routes"), 0);
	assert_int_equal(json_array_size(json_object_get(ra, "sessions")), 2);
	json_decref(root);
}

static void test_stats_json_huge_counter_saturates(void **state)
{
	struct gwt_stats_rig *f = *state;

	f->engine.routes[0].totals.tcp_bytes_out = UINT64_MAX;
	json_t *root = gwt_stats_get_json(f, "/stats");
	assert_non_null(root);
	assert_int_equal(gwt_json_int(root, "routes.0.totals.tcp_bytes.sent"), INT64_MAX);
	json_decref(root);
}

static void test_stats_json_no_routes(void **state)
{
	struct gwt_stats_rig *f = *state;

	f->engine.nroutes = 0;
	f->engine.ndevices = 0;
	json_t *root = gwt_stats_get_json(f, "/stats");
	assert_non_null(root);
	assert_true(json_is_array(json_object_get(root, "routes")));
	assert_int_equal(json_array_size(json_object_get(root, "routes")), 0);
	assert_true(json_is_array(json_object_get(root, "rdma_devices")));
	assert_int_equal(json_array_size(json_object_get(root, "rdma_devices")), 0);
	json_decref(root);
}
int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_stats_json, gwt_stats_rig_setup,
						gwt_stats_rig_teardown),
		cmocka_unit_test_setup_teardown(test_stats_json_without_sessions,
						gwt_stats_rig_setup, gwt_stats_rig_teardown),
		cmocka_unit_test_setup_teardown(test_stats_json_huge_counter_saturates,
						gwt_stats_rig_setup, gwt_stats_rig_teardown),
		cmocka_unit_test_setup_teardown(test_stats_json_no_routes, gwt_stats_rig_setup,
						gwt_stats_rig_teardown),
		cmocka_unit_test_setup_teardown(test_stats_json_shared, gwt_stats_rig_setup,
						gwt_stats_rig_teardown),
		cmocka_unit_test_setup_teardown(test_stats_json_nlm, gwt_stats_rig_setup,
						gwt_stats_rig_teardown),
		cmocka_unit_test_setup_teardown(test_stats_json_queue_time, gwt_stats_rig_setup,
						gwt_stats_rig_teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
