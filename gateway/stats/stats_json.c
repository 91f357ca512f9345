/* SPDX-License-Identifier: MIT */
/*
 * gateway/stats/stats_json.c - /stats: every counter of every route and live
 * session as one JSON document, streamed while the engine is walked (a
 * visitor, gateway/counters/counters.h).
 */
#include "gateway/stats/stats_render.h"

#include <inttypes.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>
#include <jansson.h>

#include "common/version.h"
#include "gateway/stats/procinfo.h"
#include "gateway/counters/rpc_names.h"

#define container_of(ptr, type, field) stats_container_of(ptr, type, field)

/* ---- JSON ------------------------------------------------------------------ */

/*
 * jansson encodes every value, but the document is streamed: the routes
 * array, each route object and its sessions array are opened and closed
 * by hand, and each session is built, written and freed on its own. A tree
 * of the whole document would hold thousands of sessions' worth of small
 * allocations at once (tens of MB for 10,000 sessions), and freeing it
 * would keep the loop away from the data path even longer.
 *
 * Builders return NULL when jansson runs out of memory; put() takes
 * ownership of @v either way and reports whether it was stored, so a
 * failure anywhere surfaces as one false at the top.
 */
static bool put(json_t *obj, const char *key, json_t *v)
{
	if (!obj) {
		json_decref(v);
		return false;
	}
	return json_object_set_new(obj, key, v) == 0;
}

static bool append(json_t *array, json_t *v)
{
	if (!array) {
		json_decref(v);
		return false;
	}
	return json_array_append_new(array, v) == 0;
}

static json_t *finish(json_t *obj, bool ok)
{
	if (ok)
		return obj;
	json_decref(obj);
	return NULL;
}

/* JSON integers are signed 64-bit here: saturate rather than wrap. */
static json_t *ju64(uint64_t v)
{
	return json_integer(v > (uint64_t)INT64_MAX ? INT64_MAX : (json_int_t)v);
}

static json_t *jstr(const char *s)
{
	return json_string(stats_or_empty(s));
}

static json_t *jname(const char *s)
{
	return s ? json_string(s) : json_null();
}

/* Non-empty buckets only, each with its upper bound; null is +Inf. */
static json_t *json_histogram(const struct gw_hist *h)
{
	json_t *o = json_object(), *buckets = json_array();
	bool ok = put(o, "count", ju64(h->count));

	ok &= put(o, "sum_us", ju64(h->sum_us));
	for (unsigned i = 0; i < GW_HIST_BUCKETS; i++) {
		if (!h->buckets[i])
			continue;
		json_t *b = json_object();
		bool b_ok =
			put(b, "le_us",
			    i == GW_HIST_BUCKETS - 1 ? json_null() : ju64(gw_hist_bucket_le(i)));
		b_ok &= put(b, "count", ju64(h->buckets[i]));
		ok &= append(buckets, finish(b, b_ok));
	}
	ok &= put(o, "buckets", buckets);
	return finish(o, ok);
}

/* @latency: the upstream's time for this procedure (routes only), or NULL. */
static json_t *json_procedure(const struct gw_proc_count *pc, const struct gw_hist *latency)
{
	json_t *o = json_object();
	bool ok = put(o, "program", json_integer(pc->prog));

	ok &= put(o, "program_name", jname(gw_rpc_program_name(pc->prog)));
	ok &= put(o, "version", json_integer(pc->vers));
	ok &= put(o, "procedure", json_integer(pc->proc));
	ok &= put(o, "procedure_name", jname(gw_rpc_procedure_name(pc->prog, pc->vers, pc->proc)));
	ok &= put(o, "calls", ju64(pc->calls));
	ok &= put(o, "replies", ju64(pc->replies));
	if (latency)
		ok &= put(o, "upstream_latency", json_histogram(latency));
	return finish(o, ok);
}

static json_t *json_procedures(const struct gw_counters *c, const struct gw_hist *latency)
{
	struct stats_proc_ref sorted[GW_PROC_SLOTS];
	unsigned n = stats_procs_sorted(c, sorted), nslots;
	const struct gw_proc_count *procs = gw_counters_procs(c, &nslots);
	json_t *a = json_array();
	bool ok = a != NULL;

	for (unsigned i = 0; i < n; i++)
		ok &= append(a, json_procedure(sorted[i].pc,
					       latency ? &latency[sorted[i].pc - procs] : NULL));
	return finish(a, ok);
}

/* Every kind for a route; only those that happened for a session. */
static json_t *json_events(const struct gw_counters *c, bool every_kind)
{
	json_t *o = json_object();
	bool ok = o != NULL;

	for (unsigned k = 0; k < GW_EV_KIND_COUNT; k++) {
		if (every_kind || c->events[k])
			ok &= put(o, gw_event_kind_name(k), ju64(c->events[k]));
	}
	return finish(o, ok);
}

/* @proc_latency: the route's upstream latency by procedure slot, or NULL (sessions). */
static json_t *json_counters(const struct gw_counters *c, bool every_event_kind,
			     const struct gw_hist *proc_latency)
{
	json_t *o = json_object(), *rdma = json_object(), *tcp = json_object();
	json_t *latency = json_object(), *other = json_object();
	bool ok = put(o, "calls", ju64(c->calls));

	ok &= put(o, "replies", ju64(c->replies));
	ok &= put(o, "backward_calls", ju64(c->backward_calls));
	ok &= put(o, "backward_replies", ju64(c->backward_replies));
	ok &= put(o, "calls_queued_for_credits", ju64(c->calls_queued_for_credits));
	ok &= put(o, "remote_invalidations", ju64(c->remote_invalidations));
	ok &= put(rdma, "inline", ju64(c->bytes_inline));
	ok &= put(rdma, "read_chunk", ju64(c->bytes_read_chunk));
	ok &= put(rdma, "write_chunk", ju64(c->bytes_write_chunk));
	ok &= put(rdma, "reply_chunk", ju64(c->bytes_reply_chunk));
	ok &= put(o, "rdma_bytes", rdma);
	ok &= put(tcp, "received", ju64(c->tcp_bytes_in));
	ok &= put(tcp, "sent", ju64(c->tcp_bytes_out));
	ok &= put(o, "tcp_bytes", tcp);
	ok &= put(o, "sessions_opened", ju64(c->sessions_opened));
	ok &= put(o, "sessions_closed", ju64(c->sessions_closed));
	ok &= put(o, "events", json_events(c, every_event_kind));
	ok &= put(latency, "gateway", json_histogram(&c->gateway_us));
	ok &= put(latency, "upstream", json_histogram(&c->upstream_us));
	ok &= put(latency, "queue", json_histogram(&c->queue_us));
	ok &= put(latency, "socket", json_histogram(&c->socket_us));
	ok &= put(o, "latency", latency);
	ok &= put(o, "procedures", json_procedures(c, proc_latency));
	ok &= put(other, "calls", ju64(c->procs_other_calls));
	ok &= put(other, "replies", ju64(c->procs_other_replies));
	ok &= put(o, "procedures_other", other);
	return finish(o, ok);
}

static json_t *json_credits(const struct gw_credit_state *cs)
{
	json_t *o = json_object();
	bool ok = put(o, "granted", json_integer(cs->granted));

	ok &= put(o, "in_use", json_integer(cs->in_use));
	ok &= put(o, "queued", json_integer(cs->queued));
	ok &= put(o, "backward_granted", json_integer(cs->backward_granted));
	ok &= put(o, "backward_in_use", json_integer(cs->backward_in_use));
	return finish(o, ok);
}

static json_t *json_session(const struct gw_stats_session *s)
{
	json_t *o = json_object();
	bool ok = put(o, "id", ju64(s->id));

	ok &= put(o, "client", jstr(s->client));
	ok &= put(o, "upstream", jstr(s->upstream));
	ok &= put(o, "state", jstr(s->state));
	ok &= put(o, "age_ms", ju64(s->age_ms));
	ok &= put(o, "inline_send", json_integer(s->inline_send));
	ok &= put(o, "inline_recv", json_integer(s->inline_recv));
	ok &= put(o, "rpcrdma_version", json_integer(s->rpcrdma_version));
	ok &= put(o, "read_yields", ju64(s->read_yields));
	ok &= put(o, "worker", ju64(s->worker));
	ok &= put(o, "credits", json_credits(&s->credits));
	ok &= put(o, "counters", json_counters(s->counters, false, NULL));
	return finish(o, ok);
}

/* A forward route's shared upstream connections: each channel, and the XID map. */
static json_t *json_shared(const struct gw_stats_shared *sh)
{
	json_t *o = json_object(), *map = json_object(), *chans = json_array();
	bool ok = true;

	for (uint32_t i = 0; i < sh->nchannels && i < GW_STATS_MAX_CHANNELS; i++) {
		const struct gw_stats_channel *c = &sh->channels[i];
		json_t *co = json_object();
		bool cok = put(co, "channel", json_integer(i));
		cok &= put(co, "state", jstr(c->state));
		cok &= put(co, "credits_granted", json_integer(c->credits_granted));
		cok &= put(co, "calls_in_flight", json_integer(c->calls_in_flight));
		cok &= put(co, "calls_queued", json_integer(c->calls_queued));
		cok &= put(co, "clients", json_integer(c->clients));
		cok &= put(co, "stalls", ju64(c->stalls));
		cok &= put(co, "reconnects", ju64(c->reconnects));
		cok &= put(co, "reconnect_failures", ju64(c->reconnect_failures));
		cok &= put(co, "calls_resent", ju64(c->calls_resent));
		cok &= put(co, "calls_orphaned", ju64(c->calls_orphaned));
		cok &= put(co, "cq_yields", ju64(c->cq_yields));
		ok &= append(chans, finish(co, cok));
	}
	ok &= put(map, "entries", json_integer(sh->xid_entries));
	ok &= put(map, "in_flight", json_integer(sh->xid_in_flight));
	ok &= put(map, "answered", json_integer(sh->xid_answered));
	ok &= put(map, "kept", json_integer(sh->xid_kept));
	ok &= put(map, "kept_clients", json_integer(sh->xid_kept_clients));
	ok &= put(map, "new", ju64(sh->xid_new));
	ok &= put(map, "retransmit_in_flight", ju64(sh->xid_retransmit_in_flight));
	ok &= put(map, "retransmit_answered", ju64(sh->xid_retransmit_answered));
	ok &= put(map, "expired", ju64(sh->xid_expired));
	ok &= put(map, "evicted", ju64(sh->xid_evicted));
	ok &= put(map, "evicted_safe_twice", ju64(sh->xid_evicted_safe_twice));
	ok &= put(map, "evicted_own", ju64(sh->xid_evicted_own));
	ok &= put(map, "evicted_other", ju64(sh->xid_evicted_other));
	ok &= put(map, "full", ju64(sh->xid_full));
	ok &= put(map, "stray", ju64(sh->xid_stray));
	ok &= put(o, "channels", chans);
	ok &= put(o, "xid_map", map);
	json_t *bc = json_object();
	bool bok = true;
	bok &= put(bc, "now", json_integer(sh->bc_kept_now));
	bok &= put(bc, "kept", ju64(sh->bc_kept));
	bok &= put(bc, "adopted", ju64(sh->bc_adopted));
	bok &= put(bc, "expired", ju64(sh->bc_expired));
	bok &= put(bc, "replaced", ju64(sh->bc_replaced));
	bok &= put(bc, "dropped", ju64(sh->bc_dropped));
	ok &= put(o, "back_channels_kept", finish(bc, bok));
	return finish(o, ok);
}

/* A route's qos classes, in its order (first match first). */
static json_t *json_qos(const struct gw_stats_qos *q)
{
	json_t *a = json_array();
	bool ok = a != NULL;

	for (uint32_t i = 0; ok && i < q->nclasses; i++) {
		const struct gw_stats_qos_class *c = &q->classes[i];
		json_t *o = json_object();
		bool cok = true;

		cok &= put(o, "class", json_string(c->name));
		cok &= put(o, "calls", ju64(c->calls));
		cok &= put(o, "bytes_to_server", ju64(c->bytes_to_server));
		cok &= put(o, "bytes_to_client", ju64(c->bytes_to_client));
		cok &= put(o, "throttled_seconds", json_real((double)c->throttled_us / 1e6));
		cok &= put(o, "throttles", ju64(c->throttles));
		cok &= put(o, "clients_throttled", json_integer(c->throttled_now));
		cok &= put(o, "clients", json_integer(c->clients));
		cok &= put(o, "clients_shared_bucket", ju64(c->overflow));
		ok &= json_array_append_new(a, finish(o, cok)) == 0;
	}
	return finish(a, ok);
}

/* The server's SM_NOTIFY relayed to the clients that held locks. */
static json_t *json_server_reboots(const struct gw_stats_nlm *n)
{
	json_t *o = json_object();
	bool ok = true;

	ok &= put(o, "pending", json_integer(n->notify_pending));
	ok &= put(o, "received", ju64(n->sn_received));
	ok &= put(o, "repeated", ju64(n->sn_repeated));
	ok &= put(o, "delivered", ju64(n->sn_delivered));
	ok &= put(o, "not_delivered", ju64(n->sn_not_delivered));
	ok &= put(o, "not_from_server", ju64(n->sn_not_from_server));
	ok &= put(o, "clients_full", ju64(n->sn_clients_full));
	return finish(o, ok);
}

/* The gateway's own restart told to the server (gateway/side/nlm/nlm_restart.h). */
static json_t *json_gateway_restart(const struct gw_stats_nlm *n)
{
	json_t *o = json_object();
	bool ok = true;

	ok &= put(o, "nsm_state", json_integer(n->gr_state));
	ok &= put(o, "state_persisted", json_boolean(n->gr_persisted != 0));
	ok &= put(o, "sent", ju64(n->gr_sent));
	ok &= put(o, "delivered", ju64(n->gr_delivered));
	ok &= put(o, "not_delivered", ju64(n->gr_not_delivered));
	ok &= put(o, "clients_told", ju64(n->gr_clients_told));
	ok &= put(o, "clients_delivered", ju64(n->gr_clients_delivered));
	ok &= put(o, "reclaims_converted", ju64(n->gr_reclaims_converted));
	ok &= put(o, "grace_refused", ju64(n->gr_grace_refused));
	return finish(o, ok);
}

/* A rebooted client's UNLOCKs (nlm_relay's release queue). */
static json_t *json_release_queue(const struct gw_stats_nlm *n)
{
	json_t *o = json_object();
	bool ok = true;

	ok &= put(o, "pending", json_integer(n->rel_pending));
	ok &= put(o, "in_flight", json_integer(n->rel_in_flight));
	ok &= put(o, "queued", ju64(n->rel_queued));
	ok &= put(o, "released", ju64(n->rel_done));
	ok &= put(o, "retried", ju64(n->rel_retried));
	ok &= put(o, "given_up", ju64(n->rel_given_up));
	ok &= put(o, "full", ju64(n->rel_full));
	return finish(o, ok);
}

/* A route's NLM relay: what it holds, what its bounds refused, the GRANTED callbacks. */
static json_t *json_nlm(const struct gw_stats_nlm *n)
{
	json_t *o = json_object(), *refused = json_object(), *cb = json_object();
	json_t *as = json_object();
	bool ok = true;

	ok &= put(o, "clients", json_integer(n->clients));
	ok &= put(o, "owners", json_integer(n->owners));
	ok &= put(o, "locks", json_integer(n->locks));
	ok &= put(o, "clients_reclaimed", ju64(n->clients_reclaimed));
	ok &= put(refused, "clients_full", ju64(n->clients_full));
	ok &= put(refused, "owners_full", ju64(n->owners_full));
	ok &= put(refused, "locks_full", ju64(n->locks_full));
	ok &= put(refused, "client_locks_full", ju64(n->client_locks_full));
	ok &= put(refused, "oh_too_long", ju64(n->oh_too_long));
	ok &= put(refused, "stale_owner", ju64(n->stale_owner));
	ok &= put(refused, "client_owners_full", ju64(n->client_owners_full));
	ok &= put(refused, "client_prefix_full", ju64(n->client_prefix_full));
	ok &= put(cb, "pending", json_integer(n->callbacks_pending));
	ok &= put(cb, "relayed", ju64(n->cb_relayed));
	ok &= put(cb, "granted", ju64(n->cb_granted));
	ok &= put(cb, "stale", ju64(n->cb_stale));
	ok &= put(cb, "full", ju64(n->cb_full));
	ok &= put(cb, "timed_out", ju64(n->cb_timed_out));
	ok &= put(cb, "not_from_server", ju64(n->cb_not_from_server));
	ok &= put(o, "refused", refused);
	ok &= put(o, "granted_callbacks", cb);
	ok &= put(as, "pending", json_integer(n->async_pending));
	ok &= put(as, "sent", ju64(n->async_sent));
	ok &= put(as, "delivered", ju64(n->async_delivered));
	ok &= put(as, "full", ju64(n->async_full));
	ok &= put(as, "unknown_cookie", ju64(n->async_unknown_cookie));
	ok &= put(as, "from_client", ju64(n->async_from_client));
	ok &= put(as, "timed_out", ju64(n->async_timed_out));
	ok &= put(as, "refused_client_cap", ju64(n->async_refused_client_cap));
	ok &= put(as, "late_given_back", ju64(n->async_late_given_back));
	ok &= put(as, "portmapper_silent", ju64(n->async_portmapper_silent));
	ok &= put(as, "yielded", ju64(n->async_yielded));
	ok &= put(o, "async", as);
	ok &= put(o, "server_reboots", json_server_reboots(n));
	ok &= put(o, "gateway_restart", json_gateway_restart(n));
	ok &= put(o, "release_queue", json_release_queue(n));
	return finish(o, ok);
}

struct jwriter {
	struct gw_stats_visitor visitor;
	struct evbuffer *out;
	bool with_sessions;
	bool failed;
	unsigned routes;	    /* routes opened so far */
	bool route_open;	    /* the last one still is */
	unsigned sessions;	    /* sessions written in it */
	struct gw_credit_state sum; /* and their credits */
	unsigned devices;	    /* RDMA devices written (after the routes) */
};

static void jw_raw(struct jwriter *w, const char *text)
{
	if (evbuffer_add(w->out, text, strlen(text)) != 0)
		w->failed = true;
}

/*
 * @v encoded after @lead, then freed; NULL (out of memory) fails the answer.
 * Encoded into one string first: jansson's streaming callback is called
 * for every token, and an evbuffer_add() per token costs more than the copy.
 */
static void jw_value(struct jwriter *w, const char *lead, json_t *v)
{
	char *text = v ? json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY) : NULL;

	jw_raw(w, lead);
	if (!text || evbuffer_add(w->out, text, strlen(text)) != 0)
		w->failed = true;
	free(text);
	json_decref(v);
}

/* A route's credits are its sessions' sums: written once they are walked. */
static void jw_route_end(struct jwriter *w)
{
	if (!w->route_open)
		return;
	if (w->with_sessions)
		jw_raw(w, "]");
	jw_value(w, ",\"credits\":", json_credits(&w->sum));
	jw_raw(w, "}");
	w->route_open = false;
	w->sessions = 0;
	memset(&w->sum, 0, sizeof(w->sum));
}

/* {"connecting":n,"ready":n,"draining":n,"closing":n}: every state, zero or not. */
static json_t *json_by_state(const uint32_t by_state[GW_SESSION_STATE_COUNT])
{
	json_t *o = json_object();
	bool ok = o != NULL;

	for (unsigned k = 0; ok && k < GW_SESSION_STATE_COUNT; k++)
		ok &= put(o, gw_session_state_name(k), json_integer(by_state[k]));
	return finish(o, ok);
}

static void jw_route(struct gw_stats_visitor *v, const struct gw_stats_route *r)
{
	struct jwriter *w = container_of(v, struct jwriter, visitor);

	jw_route_end(w);
	jw_value(w, w->routes++ ? ",{\"name\":" : "{\"name\":", jstr(r->name));
	jw_value(w, ",\"mode\":", jstr(r->mode));
	jw_value(w, ",\"listen\":", jstr(r->listen));
	jw_value(w, ",\"upstream\":", jstr(r->upstream));
	jw_value(w, ",\"live_sessions\":", json_integer(r->live_sessions));
	jw_value(w, ",\"sessions_by_state\":", json_by_state(r->sessions_by_state));
	jw_value(w, ",\"totals\":", json_counters(r->totals, true, r->proc_upstream_us));
	if (r->shared)
		jw_value(w, ",\"shared_upstream\":", json_shared(r->shared));
	if (r->nlm)
		jw_value(w, ",\"nlm\":", json_nlm(r->nlm));
	if (r->qos)
		jw_value(w, ",\"qos\":", json_qos(r->qos));
	if (w->with_sessions)
		jw_raw(w, ",\"sessions\":[");
	w->route_open = true;
}

static void jw_session(struct gw_stats_visitor *v, const struct gw_stats_session *s)
{
	struct jwriter *w = container_of(v, struct jwriter, visitor);

	if (!w->route_open)
		return;
	stats_credits_add(&w->sum, &s->credits);
	if (w->with_sessions)
		jw_value(w, w->sessions++ ? "," : "", json_session(s));
}

/* The routes' array ends where the devices' begins. */
static void jw_routes_end(struct jwriter *w)
{
	jw_route_end(w);
	if (w->devices == 0)
		jw_raw(w, "],\"rdma_devices\":[");
}

static void jw_device(struct gw_stats_visitor *v, const struct gw_stats_device *d)
{
	struct jwriter *w = container_of(v, struct jwriter, visitor);

	jw_routes_end(w);
	jw_value(w, w->devices++ ? "," : "",
		 json_pack("{s:s, s:I, s:I, s:I, s:I}", "name", stats_or_empty(d->name),
			   "buffers_in_use", (json_int_t)d->buffers_in_use, "buffers",
			   (json_int_t)d->buffers_total, "registered_bytes",
			   (json_int_t)d->bytes_registered, "exhausted",
			   (json_int_t)d->alloc_failures));
}

/*
 * This process, as the kernel counts it: `rpcrdma-gw stat` tells a restarted
 * gateway by its start time and shows its CPU share. Null when /proc cannot
 * be read.
 */
static json_t *json_process(void)
{
	struct gw_procinfo pi;
	json_t *o;
	bool ok;

	if (!gw_procinfo_read(&pi))
		return json_null();
	o = json_object();
	ok = put(o, "pid", json_integer(pi.pid));
	ok &= put(o, "started", json_real(pi.started_unix));
	ok &= put(o, "cpu_user_s", json_real(pi.cpu_user_s));
	ok &= put(o, "cpu_system_s", json_real(pi.cpu_system_s));
	ok &= put(o, "rss_bytes", ju64(pi.rss_bytes));
	ok &= put(o, "open_fds", ju64(pi.open_fds));
	return finish(o, ok);
}

/* The document into @out; false when memory ran out on the way. */
bool stats_render_json(gw_stats_snapshot_fn snapshot, void *engine,
		       const struct stats_endpoint_view *ep, bool with_sessions,
		       struct evbuffer *out)
{
	struct jwriter w = {
		.visitor = { .route = jw_route, .session = jw_session, .device = jw_device },
		.out = out,
		.with_sessions = with_sessions,
	};

	jw_value(&w, "{\"version\":", json_string(GW_VERSION));
	jw_value(&w, ",\"process\":", json_process());
	jw_value(&w, ",\"draining\":", json_boolean(ep->draining));
	jw_value(&w, ",\"stats_connections_refused\":", ju64(ep->refused));
	jw_raw(&w, ",\"routes\":[");
	snapshot(engine, &w.visitor);
	jw_routes_end(&w);
	jw_raw(&w, "]}\n");
	return !w.failed;
}
