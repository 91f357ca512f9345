/* SPDX-License-Identifier: MIT */
/*
 * gateway/stats/stats_prom.c - /metrics: the counters in the Prometheus text
 * format 0.0.4, written while the engine is walked (a visitor,
 * gateway/counters/counters.h). The structs passed to the callbacks are only read
 * during the call.
 */
#include "gateway/stats/stats_render.h"

#include <inttypes.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>

#include "common/version.h"
#include "gateway/stats/procinfo.h"
#include "gateway/counters/rpc_names.h"

#define ARRAY_SIZE(a)		       STATS_ARRAY_SIZE(a)
#define container_of(ptr, type, field) stats_container_of(ptr, type, field)
#define METRIC_PREFIX		       "rpcrdma_gw_"

/*
 * The cap on per-session series (/metrics?sessions=1): each session adds
 * about 80 series (its counters, credits and two histograms), and a
 * Prometheus server holds every series it has seen for hours. Past the cap
 * a route's further sessions are left out of the scrape, in the engine's
 * walk order (the oldest stay, so that their series continue), and
 * rpcrdma_gw_sessions_not_exported says how many; the route's own series
 * include them.
 */
enum { PROM_SESSIONS_PER_ROUTE = 256 };

/* ---- Prometheus text format ------------------------------------------------ */

/*
 * Every family is written to its own buffer while the engine is walked, and
 * the buffers are joined at the end: the format wants each family's samples
 * in one group, and the walk goes route by route.
 *
 * Per-session families are the route families' names with "session_" in
 * front ("rpcrdma_gw_session_rpc_calls_total"), not the same families with
 * one more label: summing a family over its series must not count a session
 * once in its route's total and again on its own.
 */
enum prom_scope { SCOPE_ROUTE, SCOPE_SESSION, SCOPE_COUNT };
#define ON_ROUTE   (1u << SCOPE_ROUTE)
#define ON_SESSION (1u << SCOPE_SESSION)

enum prom_family {
	FAM_ROUTE_INFO,
	FAM_SESSION_INFO,
	FAM_SESSION_AGE,
	FAM_SESSIONS,
	FAM_SESSIONS_BY_STATE,
	FAM_SESSIONS_NOT_EXPORTED,
	FAM_SESSIONS_OPENED,
	FAM_SESSIONS_CLOSED,
	FAM_CALLS,
	FAM_REPLIES,
	FAM_BACKWARD_CALLS,
	FAM_BACKWARD_REPLIES,
	FAM_QUEUED,
	FAM_REMOTE_INVALIDATIONS,
	FAM_RDMA_BYTES,
	FAM_TCP_BYTES,
	FAM_EVENTS,
	FAM_CREDITS_GRANTED,
	FAM_CREDITS_IN_USE,
	FAM_CALLS_WAITING,
	FAM_BACKWARD_CREDITS_GRANTED,
	FAM_BACKWARD_CREDITS_IN_USE,
	FAM_INLINE_THRESHOLD,
	FAM_GATEWAY_LATENCY,
	FAM_UPSTREAM_LATENCY,
	FAM_PROC_CALLS,
	FAM_PROC_REPLIES,
	FAM_PROC_UPSTREAM_LATENCY,
	FAM_POOL_BUFFERS_IN_USE,
	FAM_POOL_BUFFERS,
	FAM_POOL_BYTES_REGISTERED,
	FAM_POOL_ALLOC_FAILURES,
	FAM_RPCRDMA_VERSION,
	FAM_SHARED_CREDITS,
	FAM_SHARED_IN_FLIGHT,
	FAM_SHARED_QUEUED,
	FAM_SHARED_CLIENTS,
	FAM_SHARED_STALLS,
	FAM_SHARED_RECONNECTS,
	FAM_SHARED_RECONNECT_FAILURES,
	FAM_SHARED_RESENT,
	FAM_SHARED_ORPHANED,
	FAM_XID_MAP_ENTRIES,
	FAM_XID_MAP_EVENTS,
	FAM_XID_MAP_EVICTED,
	FAM_XID_MAP_KEPT_CLIENTS,
	FAM_NLM_HELD,
	FAM_NLM_REFUSED,
	FAM_NLM_RECLAIMED,
	FAM_NLM_CALLBACKS,
	FAM_SHARED_QUEUE_TIME,
	FAM_NLM_ASYNC,
	FAM_NLM_SERVER_REBOOTS,
	FAM_NLM_GATEWAY_RESTART,
	FAM_NLM_GATEWAY_RESTART_STATE,
	FAM_SHARED_CQ_YIELDS,
	FAM_READ_YIELDS,
	FAM_SHARED_BC_KEPT,
	FAM_SHARED_BC_EVENTS,
	FAM_SOCKET_WAIT,
	FAM_QOS_CALLS,
	FAM_QOS_BYTES,
	FAM_QOS_THROTTLED,
	FAM_QOS_THROTTLES,
	FAM_QOS_CLIENTS_THROTTLED,
	FAM_QOS_CLIENTS,
	FAM_COUNT
};

static const struct prom_family_desc {
	const char *name; /* after the prefix, and after "session_" for sessions */
	const char *type;
	unsigned scopes;
	const char *help;
} families[FAM_COUNT] = {
	[FAM_ROUTE_INFO] = { "route_info", "gauge", ON_ROUTE,
			     "Always 1; the labels describe the route." },
	[FAM_SESSION_INFO] = { "info", "gauge", ON_SESSION,
			       "Always 1; the labels describe the live session." },
	[FAM_SESSION_AGE] = { "age_seconds", "gauge", ON_SESSION,
			      "Time since the session's client connected." },
	[FAM_SESSIONS] = { "sessions", "gauge", ON_ROUTE, "Live sessions." },
	[FAM_SESSIONS_BY_STATE] = { "sessions_by_state", "gauge", ON_ROUTE,
				    "Live sessions by state: connecting, ready, draining "
				    "(taking no new call since SIGTERM), closing." },
	[FAM_SESSIONS_NOT_EXPORTED] = { "sessions_not_exported", "gauge", ON_ROUTE,
					"Live sessions left out of this scrape's per-session "
					"series (beyond 256 per route); the route's series "
					"count their traffic." },
	[FAM_SESSIONS_OPENED] = { "sessions_opened_total", "counter", ON_ROUTE,
				  "Sessions opened (a client accepted and paired)." },
	[FAM_SESSIONS_CLOSED] = { "sessions_closed_total", "counter", ON_ROUTE,
				  "Sessions closed." },
	[FAM_CALLS] = { "rpc_calls_total", "counter", ON_ROUTE | ON_SESSION,
			"RPC calls relayed from clients to the upstream." },
	[FAM_REPLIES] = { "rpc_replies_total", "counter", ON_ROUTE | ON_SESSION,
			  "RPC replies relayed from the upstream to clients." },
	[FAM_BACKWARD_CALLS] = { "backward_calls_total", "counter", ON_ROUTE | ON_SESSION,
				 "Backward (callback) calls relayed from the server side." },
	[FAM_BACKWARD_REPLIES] = { "backward_replies_total", "counter", ON_ROUTE | ON_SESSION,
				   "Replies to backward calls relayed." },
	[FAM_QUEUED] = { "calls_queued_for_credits_total", "counter", ON_ROUTE | ON_SESSION,
			 "Calls that had to wait for an RPC-over-RDMA credit." },
	[FAM_REMOTE_INVALIDATIONS] = { "remote_invalidations_total", "counter",
				       ON_ROUTE | ON_SESSION,
				       "Chunk regions invalidated by the other side's Send With "
				       "Invalidate: forward, the gateway's windows by the server's "
				       "reply; reverse, the client's by the gateway's answer." },
	[FAM_RDMA_BYTES] = { "rdma_bytes_total", "counter", ON_ROUTE | ON_SESSION,
			     "Payload bytes moved on the RDMA side, by how: inline, "
			     "read_chunk, write_chunk, reply_chunk." },
	[FAM_TCP_BYTES] = { "tcp_bytes_total", "counter", ON_ROUTE | ON_SESSION,
			    "Bytes on the TCP side, by direction: received, sent." },
	[FAM_EVENTS] = { "events_total", "counter", ON_ROUTE | ON_SESSION,
			 "Errors and unusual events, by kind." },
	[FAM_CREDITS_GRANTED] = { "credits_granted", "gauge", ON_ROUTE | ON_SESSION,
				  "RPC-over-RDMA credits granted (by the server in forward "
				  "mode, by the gateway in reverse mode)." },
	[FAM_CREDITS_IN_USE] = { "credits_in_use", "gauge", ON_ROUTE | ON_SESSION,
				 "Calls in flight on the RDMA side." },
	[FAM_CALLS_WAITING] = { "calls_waiting_for_credits", "gauge", ON_ROUTE | ON_SESSION,
				"Calls waiting for a credit now." },
	[FAM_BACKWARD_CREDITS_GRANTED] = { "backward_credits_granted", "gauge",
					   ON_ROUTE | ON_SESSION,
					   "Credits granted for backward calls." },
	[FAM_BACKWARD_CREDITS_IN_USE] = { "backward_credits_in_use", "gauge", ON_ROUTE | ON_SESSION,
					  "Backward calls in flight." },
	[FAM_INLINE_THRESHOLD] = { "inline_threshold_bytes", "gauge", ON_SESSION,
				   "Inline thresholds in effect on the RDMA connection, by "
				   "direction: send, receive." },
	[FAM_GATEWAY_LATENCY] = { "gateway_latency_seconds", "histogram", ON_ROUTE | ON_SESSION,
				  "Time a call spends in the gateway itself." },
	[FAM_UPSTREAM_LATENCY] = { "upstream_latency_seconds", "histogram", ON_ROUTE | ON_SESSION,
				   "Time from sending a call upstream to its reply." },
	[FAM_PROC_CALLS] = { "procedure_calls_total", "counter", ON_ROUTE,
			     "RPC calls by program, version and procedure." },
	[FAM_PROC_REPLIES] = { "procedure_replies_total", "counter", ON_ROUTE,
			       "RPC replies by program, version and procedure." },
	[FAM_PROC_UPSTREAM_LATENCY] = { "procedure_upstream_latency_seconds", "histogram", ON_ROUTE,
					"Time the upstream took to answer, by program, version "
					"and procedure." },
	/* Per RDMA device (label device), written in the route scope: no prefix. */
	[FAM_POOL_BUFFERS_IN_USE] = { "pool_buffers_in_use", "gauge", ON_ROUTE,
				      "Registered buffers in use (records, headers, receives, "
				      "chunk data)." },
	[FAM_POOL_BUFFERS] = { "pool_buffers", "gauge", ON_ROUTE,
			       "Registered buffers carved so far, in use or free." },
	[FAM_POOL_BYTES_REGISTERED] = { "pool_registered_bytes", "gauge", ON_ROUTE,
					"Bytes of memory registered with the device." },
	[FAM_POOL_ALLOC_FAILURES] = { "pool_exhausted_total", "counter", ON_ROUTE,
				      "Buffer allocations that found the pool at its limit "
				      "(back-pressure applied)." },
	[FAM_RPCRDMA_VERSION] = { "rpcrdma_version", "gauge", ON_SESSION,
				  "RPC-over-RDMA version the connection speaks (0: none settled "
				  "yet)." },
	/* A forward route's shared upstream connections (label channel). */
	[FAM_SHARED_CREDITS] = { "shared_channel_credits_granted", "gauge", ON_ROUTE,
				 "Credits the server grants a shared upstream connection." },
	[FAM_SHARED_IN_FLIGHT] = { "shared_channel_calls_in_flight", "gauge", ON_ROUTE,
				   "Calls in flight on a shared upstream connection." },
	[FAM_SHARED_QUEUED] = { "shared_channel_calls_queued", "gauge", ON_ROUTE,
				"Calls waiting for a credit of a shared upstream connection." },
	[FAM_SHARED_CLIENTS] = { "shared_channel_clients", "gauge", ON_ROUTE,
				 "Client connections on a shared upstream connection." },
	[FAM_SHARED_STALLS] = { "shared_channel_stalls_total", "counter", ON_ROUTE,
				"Times calls waited because every credit of a shared "
				"upstream connection was in use." },
	[FAM_SHARED_RECONNECTS] = { "shared_channel_reconnects_total", "counter", ON_ROUTE,
				    "Lost connections of a shared upstream channel made again, "
				    "its clients kept." },
	[FAM_SHARED_RECONNECT_FAILURES] = { "shared_channel_reconnect_failures_total", "counter",
					    ON_ROUTE,
					    "Lost shared upstream connections not made again in "
					    "time: their clients were closed." },
	[FAM_SHARED_RESENT] = { "shared_channel_calls_resent_total", "counter", ON_ROUTE,
				"Calls in flight on a lost shared upstream connection sent again "
				"on the new one, under their wire XIDs." },
	[FAM_SHARED_ORPHANED] = { "shared_channel_calls_orphaned_total", "counter", ON_ROUTE,
				  "Calls the server left unanswered for call_timeout on a shared "
				  "upstream connection, given up alone: their windows invalidated, "
				  "the connection kept." },
	[FAM_XID_MAP_ENTRIES] = { "shared_xid_map_entries", "gauge", ON_ROUTE,
				  "Entries of the shared connections' XID map, by state: "
				  "in_flight, answered (kept for retransmissions), kept (of "
				  "answered, calls that must not run twice, kept for their "
				  "address), size." },
	[FAM_XID_MAP_EVENTS] = { "shared_xid_map_total", "counter", ON_ROUTE,
				 "Calls and replies through the shared connections' XID map, by "
				 "what: new, retransmit_in_flight, retransmit_answered, expired, "
				 "evicted, full, stray (a reply for no call in flight, dropped)." },
	[FAM_XID_MAP_EVICTED] = { "shared_xid_map_evicted_total", "counter", ON_ROUTE,
				  "Answered entries of the shared connections' XID map recycled "
				  "early for room, by whose: safe_twice (a call safe to run "
				  "twice, any client's), own (a kept call of the calling "
				  "address), other (a kept call of the address holding the "
				  "most)." },
	[FAM_XID_MAP_KEPT_CLIENTS] = { "shared_xid_map_kept_clients", "gauge", ON_ROUTE,
				       "Client addresses holding kept entries (answered calls "
				       "that must not run twice) in the shared connections' XID "
				       "map." },
	/* The NLM relay of a route with a portmapper. */
	[FAM_NLM_HELD] = { "nlm_held", "gauge", ON_ROUTE,
			   "What the NLM relay holds now, by what: clients, owners, locks, "
			   "callbacks_pending." },
	[FAM_NLM_REFUSED] = { "nlm_refused_total", "counter", ON_ROUTE,
			      "NLM calls or callbacks the relay's state refused, by reason: "
			      "clients_full, owners_full, locks_full, client_locks_full, "
			      "oh_too_long, stale_owner, client_owners_full, "
			      "client_prefix_full." },
	[FAM_NLM_RECLAIMED] = { "nlm_clients_reclaimed_total", "counter", ON_ROUTE,
				"Client hosts holding nothing (no lock, share or call at the "
				"server) "
				"forgotten, least recently used first, to make room for a new one: "
				"a high rate is many hosts, or forged sources." },
	[FAM_NLM_CALLBACKS] = { "nlm_granted_callbacks_total", "counter", ON_ROUTE,
				"The server's GRANTED callbacks, by outcome: relayed (answered by "
				"the client), granted (of which the client took the lock), stale, "
				"full, timed_out, not_from_server." },
	/* Shared routes' fairness: compare a client's queue time with the route's. */
	[FAM_SHARED_QUEUE_TIME] = { "shared_queue_seconds", "histogram", ON_ROUTE | ON_SESSION,
				    "Time a call waited for its turn and a credit of a shared "
				    "upstream connection, from admission to send." },
	[FAM_NLM_ASYNC] = { "nlm_async_total", "counter", ON_ROUTE,
			    "The clients' asynchronous NLM calls (TEST_MSG..UNLOCK_MSG) and "
			    "their results, by outcome: sent (upstream, with a cookie of the "
			    "gateway's), delivered (the client took its _RES), full, "
			    "unknown_cookie (a server _RES for no pending call), from_client (a "
			    "_RES a client sent), timed_out, refused_client_cap (a client host "
			    "or its network at its share), late_given_back (a LOCK_RES after "
			    "its _MSG timed out: the lock given back upstream), "
			    "portmapper_silent (the client's portmapper did not answer: the "
			    "result dropped), yielded (a result waiting for a silent portmapper "
			    "dropped for a new call, the table being full)." },
	[FAM_NLM_SERVER_REBOOTS] = { "nlm_server_reboot_notifications_total", "counter", ON_ROUTE,
				     "The server's SM_NOTIFY and its relay to the clients that "
				     "held locks, by what: received, repeated, delivered, "
				     "not_delivered, not_from_server, clients_full." },
	/* /stats nlm.gateway_restart: this instance's start told to the server and clients. */
	[FAM_NLM_GATEWAY_RESTART] = { "nlm_gateway_restart_total", "counter", ON_ROUTE,
				      "The gateway's own restart told to the server's statd and "
				      "to the clients that held locks, by what: sent (SM_NOTIFY "
				      "and GETPORT calls to the server, resends included), "
				      "delivered, not_delivered (1 once settled), clients_told, "
				      "clients_delivered, reclaims_converted, grace_refused." },
	[FAM_NLM_GATEWAY_RESTART_STATE] = { "nlm_gateway_restart_state", "gauge", ON_ROUTE,
					    "This instance's NSM state, by what: nsm_state (the "
					    "number sent), persisted (1: kept in the state "
					    "file, 0: taken from the clock)." },
	[FAM_SHARED_CQ_YIELDS] = { "shared_channel_cq_yields_total", "counter", ON_ROUTE,
				   "Completion passes of a shared upstream connection cut short "
				   "by the budget (32), to go on in a later loop pass." },
	[FAM_READ_YIELDS] = { "read_yields_total", "counter", ON_SESSION,
			      "The client's turns of the event loop cut short by the record "
			      "budget (16 records), its other records read in a later pass." },
	[FAM_SHARED_BC_KEPT] = { "shared_back_channels_kept", "gauge", ON_ROUTE,
				 "NFSv4.1 back channels of clients gone from a shared route, kept "
				 "for their reconnection (5 minutes)." },
	[FAM_SHARED_BC_EVENTS] = { "shared_back_channels_total", "counter", ON_ROUTE,
				   "Back channels of gone clients, by what: kept, adopted (by the "
				   "client's new connection), expired, replaced (the table "
				   "full)." },
	/* A worker's loop that cannot keep up shows here first. */
	[FAM_SOCKET_WAIT] = { "socket_wait_seconds", "histogram", ON_ROUTE | ON_SESSION,
			      "Forward routes: time a client's call waited in the gateway's "
			      "TCP socket before its worker's event loop read it (from the "
			      "kernel's receive time)." },
	/* A route's quality-of-service classes (label class). */
	[FAM_QOS_CALLS] = { "qos_calls_total", "counter", ON_ROUTE,
			    "Calls admitted in a qos class." },
	[FAM_QOS_BYTES] = { "qos_bytes_total", "counter", ON_ROUTE,
			    "Bytes of a qos class's calls (direction to_server) and of their "
			    "replies (to_client)." },
	[FAM_QOS_THROTTLED] = { "qos_throttled_seconds_total", "counter", ON_ROUTE,
				"Time clients' calls were held to a qos class's limits (summed "
				"over sessions)." },
	[FAM_QOS_THROTTLES] = { "qos_throttles_total", "counter", ON_ROUTE,
				"Times a session began holding a call to a qos class's limits." },
	[FAM_QOS_CLIENTS_THROTTLED] = { "qos_clients_throttled", "gauge", ON_ROUTE,
					"Clients of a qos class holding a call now." },
	[FAM_QOS_CLIENTS] = { "qos_clients", "gauge", ON_ROUTE,
			      "Client addresses of a qos class with buckets of their own "
			      "(bucket=\"own\"), and clients put in the class's shared bucket "
			      "since the start (bucket=\"shared_total\")." },
};

/* The plain counters of struct gw_counters and the family each one feeds. */
static const struct {
	enum prom_family family;
	size_t offset;
} prom_scalars[] = {
	{ FAM_SESSIONS_OPENED, offsetof(struct gw_counters, sessions_opened) },
	{ FAM_SESSIONS_CLOSED, offsetof(struct gw_counters, sessions_closed) },
	{ FAM_CALLS, offsetof(struct gw_counters, calls) },
	{ FAM_REPLIES, offsetof(struct gw_counters, replies) },
	{ FAM_BACKWARD_CALLS, offsetof(struct gw_counters, backward_calls) },
	{ FAM_BACKWARD_REPLIES, offsetof(struct gw_counters, backward_replies) },
	{ FAM_QUEUED, offsetof(struct gw_counters, calls_queued_for_credits) },
	{ FAM_REMOTE_INVALIDATIONS, offsetof(struct gw_counters, remote_invalidations) },
};

struct prom {
	struct gw_stats_visitor visitor;
	bool with_sessions;
	bool failed;
	struct evbuffer *fam[SCOPE_COUNT][FAM_COUNT];
	char *route_labels;		/* route="..." of the route being walked */
	struct gw_credit_state credits; /* summed over its live sessions */
	unsigned route_sessions;	/* of its sessions, exported so far */
	unsigned route_not_exported;	/* and left out (the cap) */
};

/* A label value as the text format wants it: \ " and newline escaped. */
static void add_escaped_label(struct evbuffer *b, const char *name, const char *value)
{
	const char *v = stats_or_empty(value);

	if (evbuffer_get_length(b))
		evbuffer_add(b, ",", 1);
	evbuffer_add_printf(b, "%s=\"", name);
	for (size_t run; *v; v += run) {
		run = strcspn(v, "\\\"\n");
		evbuffer_add(b, v, run);
		if (!v[run])
			break;
		evbuffer_add(b, v[run] == '\n' ? "\\n" : v[run] == '"' ? "\\\"" : "\\\\", 2);
		run++;
	}
	evbuffer_add(b, "\"", 1);
}

/* The buffer's text as a string; the buffer is drained. */
static char *buffer_to_string(struct evbuffer *b)
{
	size_t n = evbuffer_get_length(b);
	char *s = malloc(n + 1);

	if (!s)
		return NULL;
	if (evbuffer_remove(b, s, n) != (int)n) {
		free(s);
		return NULL;
	}
	s[n] = '\0';
	return s;
}

/*
 * Labels in one string: @prefix (already formatted, or NULL) then the
 * name/value pairs of @pairs, escaped. NULL when out of memory.
 */
static char *make_labels(const char *prefix, const char *const *pairs, size_t npairs)
{
	struct evbuffer *b = evbuffer_new();
	char *s;

	if (!b)
		return NULL;
	if (prefix)
		evbuffer_add(b, prefix, strlen(prefix));
	for (size_t i = 0; i + 1 < npairs; i += 2)
		add_escaped_label(b, pairs[i], pairs[i + 1]);
	s = buffer_to_string(b);
	evbuffer_free(b);
	return s;
}

static void put_sample(struct prom *p, enum prom_scope scope, enum prom_family f,
		       const char *suffix, const char *labels, const char *extra, const char *value)
{
	int n = evbuffer_add_printf(p->fam[scope][f], "%s%s%s%s{%s%s%s} %s\n", METRIC_PREFIX,
				    scope == SCOPE_SESSION ? "session_" : "", families[f].name,
				    suffix, labels, extra ? "," : "", stats_or_empty(extra), value);
	if (n < 0)
		p->failed = true;
}

static void put_u64(struct prom *p, enum prom_scope scope, enum prom_family f, const char *suffix,
		    const char *labels, const char *extra, uint64_t v)
{
	char text[24];

	snprintf(text, sizeof(text), "%" PRIu64, v);
	put_sample(p, scope, f, suffix, labels, extra, text);
}

static void prom_counters(struct prom *p, enum prom_scope scope, const char *labels,
			  const struct gw_counters *c)
{
	static const char *const rdma_via[] = { "via=\"inline\"", "via=\"read_chunk\"",
						"via=\"write_chunk\"", "via=\"reply_chunk\"" };
	const uint64_t rdma[] = { c->bytes_inline, c->bytes_read_chunk, c->bytes_write_chunk,
				  c->bytes_reply_chunk };
	char kind[64];

	for (size_t i = 0; i < ARRAY_SIZE(prom_scalars); i++) {
		enum prom_family f = prom_scalars[i].family;
		if (families[f].scopes & (1u << scope))
			put_u64(p, scope, f, "", labels, NULL,
				*(const uint64_t *)((const char *)c + prom_scalars[i].offset));
	}
	for (size_t i = 0; i < ARRAY_SIZE(rdma); i++)
		put_u64(p, scope, FAM_RDMA_BYTES, "", labels, rdma_via[i], rdma[i]);
	put_u64(p, scope, FAM_TCP_BYTES, "", labels, "direction=\"received\"", c->tcp_bytes_in);
	put_u64(p, scope, FAM_TCP_BYTES, "", labels, "direction=\"sent\"", c->tcp_bytes_out);

	/*
	 * A route shows every kind, zero or not, so that rate() and alerts
	 * work from the first scrape; a session only what happened to it.
	 */
	for (unsigned k = 0; k < GW_EV_KIND_COUNT; k++) {
		if (scope == SCOPE_SESSION && !c->events[k])
			continue;
		snprintf(kind, sizeof(kind), "kind=\"%s\"", gw_event_kind_name(k));
		put_u64(p, scope, FAM_EVENTS, "", labels, kind, c->events[k]);
	}
}

static void prom_credits(struct prom *p, enum prom_scope scope, const char *labels,
			 const struct gw_credit_state *cs)
{
	put_u64(p, scope, FAM_CREDITS_GRANTED, "", labels, NULL, cs->granted);
	put_u64(p, scope, FAM_CREDITS_IN_USE, "", labels, NULL, cs->in_use);
	put_u64(p, scope, FAM_CALLS_WAITING, "", labels, NULL, cs->queued);
	put_u64(p, scope, FAM_BACKWARD_CREDITS_GRANTED, "", labels, NULL, cs->backward_granted);
	put_u64(p, scope, FAM_BACKWARD_CREDITS_IN_USE, "", labels, NULL, cs->backward_in_use);
}

/* Cumulative buckets with bounds in seconds; the last bucket is +Inf. */
static void prom_histogram(struct prom *p, enum prom_scope scope, enum prom_family f,
			   const char *labels, const struct gw_hist *h)
{
	char le[48], sum[32];
	uint64_t cumulative = 0;

	for (unsigned i = 0; i < GW_HIST_BUCKETS; i++) {
		cumulative += h->buckets[i];
		if (i == GW_HIST_BUCKETS - 1) {
			snprintf(le, sizeof(le), "le=\"+Inf\"");
		} else {
			char bound[32];
			stats_format_fixed(bound, sizeof(bound), gw_hist_bucket_le(i), 6);
			snprintf(le, sizeof(le), "le=\"%s\"", bound);
		}
		put_u64(p, scope, f, "_bucket", labels, le, cumulative);
	}
	stats_format_fixed(sum, sizeof(sum), h->sum_us, 6);
	put_sample(p, scope, f, "_sum", labels, NULL, sum);
	put_u64(p, scope, f, "_count", labels, NULL, h->count);
}

/* program="nfs",version="3",procedure="READ"; numbers where no name is known. */
static void proc_labels(char *out, size_t size, const struct gw_proc_count *pc)
{
	const char *prog = gw_rpc_program_name(pc->prog);
	const char *proc = gw_rpc_procedure_name(pc->prog, pc->vers, pc->proc);
	char prog_num[16], proc_num[16];

	snprintf(prog_num, sizeof(prog_num), "%" PRIu32, pc->prog);
	snprintf(proc_num, sizeof(proc_num), "%" PRIu32, pc->proc);
	snprintf(out, size, "program=\"%s\",version=\"%" PRIu32 "\",procedure=\"%s\"",
		 prog ? prog : prog_num, pc->vers, proc ? proc : proc_num);
}

/* The upstream's latency of one procedure; only for procedures answered at least once. */
static void prom_procedure_latency(struct prom *p, const char *labels, const char *proc,
				   const struct gw_hist *h)
{
	size_t n = strlen(labels) + strlen(proc) + 2;
	char *both;

	if (!h->count)
		return;
	both = malloc(n); /* the stats path, not the data path */
	if (!both) {
		p->failed = true;
		return;
	}
	snprintf(both, n, "%s,%s", labels, proc);
	prom_histogram(p, SCOPE_ROUTE, FAM_PROC_UPSTREAM_LATENCY, both, h);
	free(both);
}

static void prom_procedures(struct prom *p, const char *labels, const struct gw_counters *c,
			    const struct gw_hist *latency)
{
	static const char other[] = "program=\"other\",version=\"\",procedure=\"\"";
	struct stats_proc_ref sorted[GW_PROC_SLOTS];
	unsigned n = stats_procs_sorted(c, sorted), nslots;
	const struct gw_proc_count *procs = gw_counters_procs(c, &nslots);
	char extra[128];

	for (unsigned i = 0; i < n; i++) {
		const struct gw_proc_count *pc = sorted[i].pc;
		proc_labels(extra, sizeof(extra), pc);
		put_u64(p, SCOPE_ROUTE, FAM_PROC_CALLS, "", labels, extra, pc->calls);
		put_u64(p, SCOPE_ROUTE, FAM_PROC_REPLIES, "", labels, extra, pc->replies);
		if (latency)
			prom_procedure_latency(p, labels, extra, &latency[pc - procs]);
	}
	/* What did not fit the table; shown only once it happens. */
	if (c->procs_other_calls || c->procs_other_replies) {
		put_u64(p, SCOPE_ROUTE, FAM_PROC_CALLS, "", labels, other, c->procs_other_calls);
		put_u64(p, SCOPE_ROUTE, FAM_PROC_REPLIES, "", labels, other,
			c->procs_other_replies);
	}
}

/* A route's credit gauges are its sessions' sums: known once they are walked. */
static void prom_route_end(struct prom *p)
{
	if (!p->route_labels)
		return;
	prom_credits(p, SCOPE_ROUTE, p->route_labels, &p->credits);
	if (p->with_sessions)
		put_u64(p, SCOPE_ROUTE, FAM_SESSIONS_NOT_EXPORTED, "", p->route_labels, NULL,
			p->route_not_exported);
	free(p->route_labels);
	p->route_labels = NULL;
	memset(&p->credits, 0, sizeof(p->credits));
	p->route_sessions = 0;
	p->route_not_exported = 0;
}

static void prom_shared(struct prom *p, const struct gw_stats_shared *sh)
{
	const struct {
		const char *what;
		uint64_t v;
	} map[] = {
		{ "what=\"new\"", sh->xid_new },
		{ "what=\"retransmit_in_flight\"", sh->xid_retransmit_in_flight },
		{ "what=\"retransmit_answered\"", sh->xid_retransmit_answered },
		{ "what=\"expired\"", sh->xid_expired },
		{ "what=\"evicted\"", sh->xid_evicted },
		{ "what=\"full\"", sh->xid_full },
		{ "what=\"stray\"", sh->xid_stray },
	};
	char chan[32];

	for (uint32_t i = 0; i < sh->nchannels && i < GW_STATS_MAX_CHANNELS; i++) {
		const struct gw_stats_channel *c = &sh->channels[i];
		snprintf(chan, sizeof(chan), "channel=\"%u\"", i);
		put_u64(p, SCOPE_ROUTE, FAM_SHARED_CREDITS, "", p->route_labels, chan,
			c->credits_granted);
		put_u64(p, SCOPE_ROUTE, FAM_SHARED_IN_FLIGHT, "", p->route_labels, chan,
			c->calls_in_flight);
		put_u64(p, SCOPE_ROUTE, FAM_SHARED_QUEUED, "", p->route_labels, chan,
			c->calls_queued);
		put_u64(p, SCOPE_ROUTE, FAM_SHARED_CLIENTS, "", p->route_labels, chan, c->clients);
		put_u64(p, SCOPE_ROUTE, FAM_SHARED_STALLS, "", p->route_labels, chan, c->stalls);
		put_u64(p, SCOPE_ROUTE, FAM_SHARED_RECONNECTS, "", p->route_labels, chan,
			c->reconnects);
		put_u64(p, SCOPE_ROUTE, FAM_SHARED_RECONNECT_FAILURES, "", p->route_labels, chan,
			c->reconnect_failures);
		put_u64(p, SCOPE_ROUTE, FAM_SHARED_RESENT, "", p->route_labels, chan,
			c->calls_resent);
		put_u64(p, SCOPE_ROUTE, FAM_SHARED_ORPHANED, "", p->route_labels, chan,
			c->calls_orphaned);
		put_u64(p, SCOPE_ROUTE, FAM_SHARED_CQ_YIELDS, "", p->route_labels, chan,
			c->cq_yields);
	}
	put_u64(p, SCOPE_ROUTE, FAM_SHARED_BC_KEPT, "", p->route_labels, NULL, sh->bc_kept_now);
	put_u64(p, SCOPE_ROUTE, FAM_SHARED_BC_EVENTS, "", p->route_labels, "what=\"kept\"",
		sh->bc_kept);
	put_u64(p, SCOPE_ROUTE, FAM_SHARED_BC_EVENTS, "", p->route_labels, "what=\"adopted\"",
		sh->bc_adopted);
	put_u64(p, SCOPE_ROUTE, FAM_SHARED_BC_EVENTS, "", p->route_labels, "what=\"expired\"",
		sh->bc_expired);
	put_u64(p, SCOPE_ROUTE, FAM_SHARED_BC_EVENTS, "", p->route_labels, "what=\"replaced\"",
		sh->bc_replaced);
	put_u64(p, SCOPE_ROUTE, FAM_SHARED_BC_EVENTS, "", p->route_labels, "what=\"dropped\"",
		sh->bc_dropped);
	put_u64(p, SCOPE_ROUTE, FAM_XID_MAP_ENTRIES, "", p->route_labels, "state=\"in_flight\"",
		sh->xid_in_flight);
	put_u64(p, SCOPE_ROUTE, FAM_XID_MAP_ENTRIES, "", p->route_labels, "state=\"answered\"",
		sh->xid_answered);
	put_u64(p, SCOPE_ROUTE, FAM_XID_MAP_ENTRIES, "", p->route_labels, "state=\"kept\"",
		sh->xid_kept);
	put_u64(p, SCOPE_ROUTE, FAM_XID_MAP_ENTRIES, "", p->route_labels, "state=\"size\"",
		sh->xid_entries);
	put_u64(p, SCOPE_ROUTE, FAM_XID_MAP_EVICTED, "", p->route_labels, "of=\"safe_twice\"",
		sh->xid_evicted_safe_twice);
	put_u64(p, SCOPE_ROUTE, FAM_XID_MAP_EVICTED, "", p->route_labels, "of=\"own\"",
		sh->xid_evicted_own);
	put_u64(p, SCOPE_ROUTE, FAM_XID_MAP_EVICTED, "", p->route_labels, "of=\"other\"",
		sh->xid_evicted_other);
	put_u64(p, SCOPE_ROUTE, FAM_XID_MAP_KEPT_CLIENTS, "", p->route_labels, NULL,
		sh->xid_kept_clients);
	for (size_t i = 0; i < ARRAY_SIZE(map); i++)
		put_u64(p, SCOPE_ROUTE, FAM_XID_MAP_EVENTS, "", p->route_labels, map[i].what,
			map[i].v);
}

static void prom_nlm(struct prom *p, const struct gw_stats_nlm *n)
{
	const struct {
		enum prom_family family;
		const char *what;
		uint64_t v;
	} rows[] = {
		{ FAM_NLM_HELD, "what=\"clients\"", n->clients },
		{ FAM_NLM_HELD, "what=\"owners\"", n->owners },
		{ FAM_NLM_HELD, "what=\"locks\"", n->locks },
		{ FAM_NLM_HELD, "what=\"callbacks_pending\"", n->callbacks_pending },
		{ FAM_NLM_REFUSED, "reason=\"clients_full\"", n->clients_full },
		{ FAM_NLM_REFUSED, "reason=\"owners_full\"", n->owners_full },
		{ FAM_NLM_REFUSED, "reason=\"locks_full\"", n->locks_full },
		{ FAM_NLM_REFUSED, "reason=\"client_locks_full\"", n->client_locks_full },
		{ FAM_NLM_REFUSED, "reason=\"oh_too_long\"", n->oh_too_long },
		{ FAM_NLM_REFUSED, "reason=\"stale_owner\"", n->stale_owner },
		{ FAM_NLM_REFUSED, "reason=\"client_owners_full\"", n->client_owners_full },
		{ FAM_NLM_REFUSED, "reason=\"client_prefix_full\"", n->client_prefix_full },
		{ FAM_NLM_RECLAIMED, NULL, n->clients_reclaimed },
		{ FAM_NLM_CALLBACKS, "outcome=\"relayed\"", n->cb_relayed },
		{ FAM_NLM_CALLBACKS, "outcome=\"granted\"", n->cb_granted },
		{ FAM_NLM_CALLBACKS, "outcome=\"stale\"", n->cb_stale },
		{ FAM_NLM_CALLBACKS, "outcome=\"full\"", n->cb_full },
		{ FAM_NLM_CALLBACKS, "outcome=\"timed_out\"", n->cb_timed_out },
		{ FAM_NLM_CALLBACKS, "outcome=\"not_from_server\"", n->cb_not_from_server },
		{ FAM_NLM_HELD, "what=\"async_pending\"", n->async_pending },
		{ FAM_NLM_ASYNC, "outcome=\"sent\"", n->async_sent },
		{ FAM_NLM_ASYNC, "outcome=\"delivered\"", n->async_delivered },
		{ FAM_NLM_ASYNC, "outcome=\"full\"", n->async_full },
		{ FAM_NLM_ASYNC, "outcome=\"unknown_cookie\"", n->async_unknown_cookie },
		{ FAM_NLM_ASYNC, "outcome=\"from_client\"", n->async_from_client },
		{ FAM_NLM_ASYNC, "outcome=\"timed_out\"", n->async_timed_out },
		{ FAM_NLM_ASYNC, "outcome=\"refused_client_cap\"", n->async_refused_client_cap },
		{ FAM_NLM_ASYNC, "outcome=\"late_given_back\"", n->async_late_given_back },
		{ FAM_NLM_ASYNC, "outcome=\"portmapper_silent\"", n->async_portmapper_silent },
		{ FAM_NLM_ASYNC, "outcome=\"yielded\"", n->async_yielded },
		{ FAM_NLM_HELD, "what=\"notify_pending\"", n->notify_pending },
		{ FAM_NLM_SERVER_REBOOTS, "what=\"received\"", n->sn_received },
		{ FAM_NLM_SERVER_REBOOTS, "what=\"repeated\"", n->sn_repeated },
		{ FAM_NLM_SERVER_REBOOTS, "what=\"delivered\"", n->sn_delivered },
		{ FAM_NLM_SERVER_REBOOTS, "what=\"not_delivered\"", n->sn_not_delivered },
		{ FAM_NLM_SERVER_REBOOTS, "what=\"not_from_server\"", n->sn_not_from_server },
		{ FAM_NLM_SERVER_REBOOTS, "what=\"clients_full\"", n->sn_clients_full },
		{ FAM_NLM_GATEWAY_RESTART, "what=\"sent\"", n->gr_sent },
		{ FAM_NLM_GATEWAY_RESTART, "what=\"delivered\"", n->gr_delivered },
		{ FAM_NLM_GATEWAY_RESTART, "what=\"not_delivered\"", n->gr_not_delivered },
		{ FAM_NLM_GATEWAY_RESTART, "what=\"clients_told\"", n->gr_clients_told },
		{ FAM_NLM_GATEWAY_RESTART, "what=\"clients_delivered\"", n->gr_clients_delivered },
		{ FAM_NLM_GATEWAY_RESTART, "what=\"reclaims_converted\"",
		  n->gr_reclaims_converted },
		{ FAM_NLM_GATEWAY_RESTART, "what=\"grace_refused\"", n->gr_grace_refused },
		/* The state is a 32-bit number statd compares for change only. */
		{ FAM_NLM_GATEWAY_RESTART_STATE, "what=\"nsm_state\"", (uint32_t)n->gr_state },
		{ FAM_NLM_GATEWAY_RESTART_STATE, "what=\"persisted\"", n->gr_persisted },
	};

	for (size_t i = 0; i < ARRAY_SIZE(rows); i++)
		put_u64(p, SCOPE_ROUTE, rows[i].family, "", p->route_labels, rows[i].what,
			rows[i].v);
}

static void prom_qos(struct prom *p, const struct gw_stats_qos *q)
{
	for (uint32_t i = 0; i < q->nclasses; i++) {
		const struct gw_stats_qos_class *c = &q->classes[i];
		const char *cls[] = { "class", c->name };
		char *l = make_labels(NULL, cls, ARRAY_SIZE(cls));
		char extra[96], secs[32];

		if (!l) {
			p->failed = true;
			return;
		}
		put_u64(p, SCOPE_ROUTE, FAM_QOS_CALLS, "", p->route_labels, l, c->calls);
		snprintf(extra, sizeof(extra), "%s,direction=\"to_server\"", l);
		put_u64(p, SCOPE_ROUTE, FAM_QOS_BYTES, "", p->route_labels, extra,
			c->bytes_to_server);
		snprintf(extra, sizeof(extra), "%s,direction=\"to_client\"", l);
		put_u64(p, SCOPE_ROUTE, FAM_QOS_BYTES, "", p->route_labels, extra,
			c->bytes_to_client);
		snprintf(secs, sizeof(secs), "%.6f", (double)c->throttled_us / 1e6);
		put_sample(p, SCOPE_ROUTE, FAM_QOS_THROTTLED, "", p->route_labels, l, secs);
		put_u64(p, SCOPE_ROUTE, FAM_QOS_THROTTLES, "", p->route_labels, l, c->throttles);
		put_u64(p, SCOPE_ROUTE, FAM_QOS_CLIENTS_THROTTLED, "", p->route_labels, l,
			c->throttled_now);
		snprintf(extra, sizeof(extra), "%s,bucket=\"own\"", l);
		put_u64(p, SCOPE_ROUTE, FAM_QOS_CLIENTS, "", p->route_labels, extra, c->clients);
		snprintf(extra, sizeof(extra), "%s,bucket=\"shared_total\"", l);
		put_u64(p, SCOPE_ROUTE, FAM_QOS_CLIENTS, "", p->route_labels, extra, c->overflow);
		free(l);
	}
}

static void prom_route(struct gw_stats_visitor *v, const struct gw_stats_route *r)
{
	struct prom *p = container_of(v, struct prom, visitor);
	const char *route[] = { "route", r->name };
	const char *info[] = { "mode", r->mode, "listen", r->listen, "upstream", r->upstream };
	char *info_labels;

	prom_route_end(p);
	p->route_labels = make_labels(NULL, route, ARRAY_SIZE(route));
	info_labels = make_labels(NULL, info, ARRAY_SIZE(info));
	if (!p->route_labels || !info_labels) {
		p->failed = true;
		free(info_labels);
		return;
	}
	put_sample(p, SCOPE_ROUTE, FAM_ROUTE_INFO, "", p->route_labels, info_labels, "1");
	free(info_labels);
	put_u64(p, SCOPE_ROUTE, FAM_SESSIONS, "", p->route_labels, NULL, r->live_sessions);
	for (unsigned k = 0; k < GW_SESSION_STATE_COUNT; k++) {
		char state[32];
		snprintf(state, sizeof(state), "state=\"%s\"", gw_session_state_name(k));
		put_u64(p, SCOPE_ROUTE, FAM_SESSIONS_BY_STATE, "", p->route_labels, state,
			r->sessions_by_state[k]);
	}
	prom_counters(p, SCOPE_ROUTE, p->route_labels, r->totals);
	prom_histogram(p, SCOPE_ROUTE, FAM_GATEWAY_LATENCY, p->route_labels,
		       &r->totals->gateway_us);
	prom_histogram(p, SCOPE_ROUTE, FAM_UPSTREAM_LATENCY, p->route_labels,
		       &r->totals->upstream_us);
	prom_procedures(p, p->route_labels, r->totals, r->proc_upstream_us);
	if (r->shared) {
		prom_shared(p, r->shared);
		prom_histogram(p, SCOPE_ROUTE, FAM_SHARED_QUEUE_TIME, p->route_labels,
			       &r->totals->queue_us);
	}
	if (r->totals->socket_us.count)
		prom_histogram(p, SCOPE_ROUTE, FAM_SOCKET_WAIT, p->route_labels,
			       &r->totals->socket_us);
	if (r->nlm)
		prom_nlm(p, r->nlm);
	if (r->qos)
		prom_qos(p, r->qos);
}

static void prom_session(struct gw_stats_visitor *v, const struct gw_stats_session *s)
{
	struct prom *p = container_of(v, struct prom, visitor);
	const char *info[] = { "client", s->client, "upstream", s->upstream, "state", s->state };
	char id[24], age[32];
	char *labels, *info_labels;

	/* A session's route failed to format: the answer is a 500 anyway. */
	if (!p->route_labels)
		return;
	stats_credits_add(&p->credits, &s->credits);
	if (!p->with_sessions)
		return;
	/* Bounded cardinality: the first PROM_SESSIONS_PER_ROUTE of the walk, no more. */
	if (p->route_sessions >= PROM_SESSIONS_PER_ROUTE) {
		p->route_not_exported++;
		return;
	}
	p->route_sessions++;

	snprintf(id, sizeof(id), "%" PRIu64, s->id);
	const char *session[] = { "session", id };
	labels = make_labels(p->route_labels, session, ARRAY_SIZE(session));
	info_labels = make_labels(NULL, info, ARRAY_SIZE(info));
	if (!labels || !info_labels) {
		p->failed = true;
		goto out;
	}
	put_sample(p, SCOPE_SESSION, FAM_SESSION_INFO, "", labels, info_labels, "1");
	stats_format_fixed(age, sizeof(age), s->age_ms, 3);
	put_sample(p, SCOPE_SESSION, FAM_SESSION_AGE, "", labels, NULL, age);
	prom_counters(p, SCOPE_SESSION, labels, s->counters);
	prom_credits(p, SCOPE_SESSION, labels, &s->credits);
	put_u64(p, SCOPE_SESSION, FAM_INLINE_THRESHOLD, "", labels, "direction=\"send\"",
		s->inline_send);
	put_u64(p, SCOPE_SESSION, FAM_INLINE_THRESHOLD, "", labels, "direction=\"receive\"",
		s->inline_recv);
	put_u64(p, SCOPE_SESSION, FAM_RPCRDMA_VERSION, "", labels, NULL, s->rpcrdma_version);
	put_u64(p, SCOPE_SESSION, FAM_READ_YIELDS, "", labels, NULL, s->read_yields);
	prom_histogram(p, SCOPE_SESSION, FAM_GATEWAY_LATENCY, labels, &s->counters->gateway_us);
	prom_histogram(p, SCOPE_SESSION, FAM_UPSTREAM_LATENCY, labels, &s->counters->upstream_us);
	/* Only a shared route's clients queue in a fair queue: no empty series for the others. */
	if (s->counters->queue_us.count)
		prom_histogram(p, SCOPE_SESSION, FAM_SHARED_QUEUE_TIME, labels,
			       &s->counters->queue_us);
	if (s->counters->socket_us.count)
		prom_histogram(p, SCOPE_SESSION, FAM_SOCKET_WAIT, labels, &s->counters->socket_us);
out:
	free(labels);
	free(info_labels);
}

static void prom_device(struct gw_stats_visitor *v, const struct gw_stats_device *d)
{
	struct prom *p = container_of(v, struct prom, visitor);
	const char *device[] = { "device", d->name };
	char *labels;

	prom_route_end(p);
	labels = make_labels(NULL, device, ARRAY_SIZE(device));
	if (!labels) {
		p->failed = true;
		return;
	}
	put_u64(p, SCOPE_ROUTE, FAM_POOL_BUFFERS_IN_USE, "", labels, NULL, d->buffers_in_use);
	put_u64(p, SCOPE_ROUTE, FAM_POOL_BUFFERS, "", labels, NULL, d->buffers_total);
	put_u64(p, SCOPE_ROUTE, FAM_POOL_BYTES_REGISTERED, "", labels, NULL, d->bytes_registered);
	put_u64(p, SCOPE_ROUTE, FAM_POOL_ALLOC_FAILURES, "", labels, NULL, d->alloc_failures);
	free(labels);
}

static void prom_family_header(struct evbuffer *out, enum prom_scope scope, enum prom_family f)
{
	const char *session = scope == SCOPE_SESSION ? "session_" : "";
	const char *per = scope == SCOPE_SESSION ? " One series per live session." : "";

	evbuffer_add_printf(out, "# HELP %s%s%s %s%s\n# TYPE %s%s%s %s\n", METRIC_PREFIX, session,
			    families[f].name, families[f].help, per, METRIC_PREFIX, session,
			    families[f].name, families[f].type);
}

/*
 * The process collector's standard series, unprefixed as every Prometheus
 * client library writes them, so that stock dashboards and rules apply; left
 * out when /proc cannot be read.
 */
static void prom_process(struct evbuffer *out)
{
	struct gw_procinfo pi;

	if (!gw_procinfo_read(&pi))
		return;
	evbuffer_add_printf(out,
			    "# HELP process_cpu_seconds_total Total user and system CPU time "
			    "spent in seconds.\n# TYPE process_cpu_seconds_total counter\n"
			    "process_cpu_seconds_total %.2f\n",
			    pi.cpu_user_s + pi.cpu_system_s);
	evbuffer_add_printf(out,
			    "# HELP process_resident_memory_bytes Resident memory size in "
			    "bytes.\n# TYPE process_resident_memory_bytes gauge\n"
			    "process_resident_memory_bytes %" PRIu64 "\n",
			    pi.rss_bytes);
	evbuffer_add_printf(out,
			    "# HELP process_start_time_seconds Start time of the process since "
			    "unix epoch in seconds.\n# TYPE process_start_time_seconds gauge\n"
			    "process_start_time_seconds %.2f\n",
			    pi.started_unix);
	evbuffer_add_printf(out,
			    "# HELP process_open_fds Number of open file descriptors.\n"
			    "# TYPE process_open_fds gauge\nprocess_open_fds %" PRIu64 "\n",
			    pi.open_fds);
	if (pi.max_fds)
		evbuffer_add_printf(out,
				    "# HELP process_max_fds Maximum number of open file "
				    "descriptors.\n# TYPE process_max_fds gauge\n"
				    "process_max_fds %" PRIu64 "\n",
				    pi.max_fds);
}

/* Families in table order, routes' before sessions'; empty families are left out. */
static void prom_join(struct prom *p, const struct stats_endpoint_view *ep, struct evbuffer *out)
{
	evbuffer_add_printf(out,
			    "# HELP " METRIC_PREFIX "build_info Always 1; the version of the "
			    "gateway.\n# TYPE " METRIC_PREFIX "build_info gauge\n" METRIC_PREFIX
			    "build_info{version=\"%s\"} 1\n",
			    GW_VERSION);
	evbuffer_add_printf(out,
			    "# HELP " METRIC_PREFIX "stats_connections_refused_total Connections "
			    "to this endpoint closed at once because stats.max_connections were "
			    "open.\n# TYPE " METRIC_PREFIX
			    "stats_connections_refused_total counter\n" METRIC_PREFIX
			    "stats_connections_refused_total %" PRIu64 "\n",
			    ep->refused);
	evbuffer_add_printf(out,
			    "# HELP " METRIC_PREFIX "draining 1 once the gateway was told to stop "
			    "(SIGTERM): it takes no new client, and /healthz answers 503.\n"
			    "# TYPE " METRIC_PREFIX "draining gauge\n" METRIC_PREFIX
			    "draining %d\n",
			    ep->draining ? 1 : 0);
	prom_process(out);
	for (unsigned s = 0; s < SCOPE_COUNT; s++) {
		for (unsigned f = 0; f < FAM_COUNT; f++) {
			if (!p->fam[s][f] || !evbuffer_get_length(p->fam[s][f]))
				continue;
			prom_family_header(out, s, f);
			if (evbuffer_add_buffer(out, p->fam[s][f]) != 0)
				p->failed = true;
		}
	}
}

static bool prom_init(struct prom *p, bool with_sessions)
{
	memset(p, 0, sizeof(*p));
	p->visitor.route = prom_route;
	p->visitor.session = prom_session;
	p->visitor.device = prom_device;
	p->with_sessions = with_sessions;
	for (unsigned s = 0; s < SCOPE_COUNT; s++) {
		for (unsigned f = 0; f < FAM_COUNT; f++) {
			if (!(families[f].scopes & (1u << s)))
				continue;
			p->fam[s][f] = evbuffer_new();
			if (!p->fam[s][f])
				return false;
		}
	}
	return true;
}

static void prom_release(struct prom *p)
{
	free(p->route_labels);
	for (unsigned s = 0; s < SCOPE_COUNT; s++) {
		for (unsigned f = 0; f < FAM_COUNT; f++) {
			if (p->fam[s][f])
				evbuffer_free(p->fam[s][f]);
		}
	}
}

/* The exposition into @out; false when memory ran out on the way. */
bool stats_render_prometheus(gw_stats_snapshot_fn snapshot, void *engine,
			     const struct stats_endpoint_view *ep, bool with_sessions,
			     struct evbuffer *out)
{
	struct prom p;
	bool ok = false;

	if (prom_init(&p, with_sessions)) {
		snapshot(engine, &p.visitor);
		prom_route_end(&p);
		prom_join(&p, ep, out);
		ok = !p.failed;
	}
	prom_release(&p);
	return ok;
}
