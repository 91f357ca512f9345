/* SPDX-License-Identifier: MIT */
/*
 * gateway/stats_http.c - the traffic-statistics endpoint: /stats (JSON),
 * /metrics (Prometheus text format 0.0.4) and /healthz on evhttp.
 *
 * Both renderers are visitors (gateway/counters.h): the engine walks its
 * routes and live sessions and calls us back, and we write as we go. The
 * structs passed to the callbacks are only read during the call; nothing
 * is kept from one callback to the next but what we formatted.
 */
#include "gateway/stats_http.h"

#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/queue.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <event2/listener.h>
#include <event2/util.h>
#include <jansson.h>

#include "common/log.h"
#include "common/version.h"
#include "gateway/rpc_names.h"

#define ARRAY_SIZE(a)		       (sizeof(a) / sizeof((a)[0]))
#define container_of(ptr, type, field) ((type *)((char *)(ptr)-offsetof(type, field)))

#define METRIC_PREFIX	"rpcrdma_gw_"
#define PROMETHEUS_TYPE "text/plain; version=0.0.4; charset=utf-8"
#define JSON_TYPE	"application/json"
#define TEXT_TYPE	"text/plain; charset=utf-8"

enum {
	/* A request is one line and a few headers; anything bigger is not ours. */
	MAX_HEADERS_SIZE = 8192,
	MAX_BODY_SIZE = 4096,
	LISTEN_BACKLOG = 64,
	DEFAULT_TIMEOUT_S = 10,
	DEFAULT_MAX_CONNECTIONS = 32,
	/* Connections refused per readiness event while full, before others get a turn. */
	REFUSE_PER_EVENT = 64,
};

/*
 * One HTTP connection, known by its bufferevent. evhttp (libevent 2.1)
 * neither caps its connections nor says when one ends, except through a
 * close callback that not every path calls; so each bufferevent it makes
 * through us carries one more reference, ours. When evhttp frees it, it
 * clears the callbacks and drops its reference: a bufferevent of ours with
 * no callback argument left is a connection that ended. We then drop ours
 * (which closes the socket, after evhttp's own shutdown already sent FIN).
 */
struct stats_conn {
	struct stats_conn *next;
	struct bufferevent *bev;
};

struct gw_stats_http {
	struct evhttp *http;
	struct evhttp_bound_socket *bound; /* owned by http */
	gw_stats_snapshot_fn snapshot;
	void *engine;
	/* Connection cap: at max_conns, the listener is off and refuse_ev closes newcomers. */
	struct stats_conn *conns;
	unsigned live_conns;
	unsigned max_conns;
	bool full;
	bool stopping;
	struct event *refuse_ev;
	struct event *sweep_ev; /* finds ended connections; also once a second */
	uint64_t refused;
};

static const char *or_empty(const char *s)
{
	return s ? s : "";
}

/* Fixed-point @v / 10^@digits, exactly, without trailing zeros: 1500,3 -> "1.5". */
static void format_fixed(char *out, size_t size, uint64_t v, unsigned digits)
{
	uint64_t scale = 1;

	for (unsigned i = 0; i < digits; i++)
		scale *= 10;
	int n = snprintf(out, size, "%" PRIu64 ".%0*" PRIu64, v / scale, (int)digits, v % scale);
	if (n <= 0 || (size_t)n >= size)
		return;
	while (n > 0 && out[n - 1] == '0')
		out[--n] = '\0';
	if (n > 0 && out[n - 1] == '.')
		out[--n] = '\0';
}

/* A procedure slot in use, for sorting. */
struct proc_ref {
	const struct gw_proc_count *pc;
};

static int proc_order(const void *a, const void *b)
{
	const struct gw_proc_count *p = ((const struct proc_ref *)a)->pc;
	const struct gw_proc_count *q = ((const struct proc_ref *)b)->pc;

	if (p->prog != q->prog)
		return p->prog < q->prog ? -1 : 1;
	if (p->vers != q->vers)
		return p->vers < q->vers ? -1 : 1;
	if (p->proc != q->proc)
		return p->proc < q->proc ? -1 : 1;
	return 0;
}

/* The slots in use, in (program, version, procedure) order: the table is hashed. */
static unsigned procs_sorted(const struct gw_counters *c, struct proc_ref out[GW_PROC_SLOTS])
{
	unsigned n = 0;

	for (unsigned i = 0; i < GW_PROC_SLOTS; i++) {
		if (c->procs[i].used)
			out[n++].pc = &c->procs[i];
	}
	qsort(out, n, sizeof(out[0]), proc_order);
	return n;
}

static void credits_add(struct gw_credit_state *sum, const struct gw_credit_state *c)
{
	sum->granted += c->granted;
	sum->in_use += c->in_use;
	sum->queued += c->queued;
	sum->backward_granted += c->backward_granted;
	sum->backward_in_use += c->backward_in_use;
}

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
	FAM_SESSIONS_OPENED,
	FAM_SESSIONS_CLOSED,
	FAM_CALLS,
	FAM_REPLIES,
	FAM_BACKWARD_CALLS,
	FAM_BACKWARD_REPLIES,
	FAM_QUEUED,
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
	FAM_POOL_BUFFERS_IN_USE,
	FAM_POOL_BUFFERS,
	FAM_POOL_BYTES_REGISTERED,
	FAM_POOL_ALLOC_FAILURES,
	FAM_RPCRDMA_VERSION,
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
	[FAM_GATEWAY_LATENCY] = { "gateway_latency_seconds", "histogram", ON_ROUTE,
				  "Time a call spends in the gateway itself." },
	[FAM_UPSTREAM_LATENCY] = { "upstream_latency_seconds", "histogram", ON_ROUTE,
				   "Time from sending a call upstream to its reply." },
	[FAM_PROC_CALLS] = { "procedure_calls_total", "counter", ON_ROUTE,
			     "RPC calls by program, version and procedure." },
	[FAM_PROC_REPLIES] = { "procedure_replies_total", "counter", ON_ROUTE,
			       "RPC replies by program, version and procedure." },
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
};

struct prom {
	struct gw_stats_visitor visitor;
	bool with_sessions;
	bool failed;
	struct evbuffer *fam[SCOPE_COUNT][FAM_COUNT];
	char *route_labels;		/* route="..." of the route being walked */
	struct gw_credit_state credits; /* summed over its live sessions */
};

/* A label value as the text format wants it: \ " and newline escaped. */
static void add_escaped_label(struct evbuffer *b, const char *name, const char *value)
{
	const char *v = or_empty(value);

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
				    suffix, labels, extra ? "," : "", or_empty(extra), value);
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
static void prom_histogram(struct prom *p, enum prom_family f, const char *labels,
			   const struct gw_hist *h)
{
	char le[48], sum[32];
	uint64_t cumulative = 0;

	for (unsigned i = 0; i < GW_HIST_BUCKETS; i++) {
		cumulative += h->buckets[i];
		if (i == GW_HIST_BUCKETS - 1) {
			snprintf(le, sizeof(le), "le=\"+Inf\"");
		} else {
			char bound[32];
			format_fixed(bound, sizeof(bound), gw_hist_bucket_le(i), 6);
			snprintf(le, sizeof(le), "le=\"%s\"", bound);
		}
		put_u64(p, SCOPE_ROUTE, f, "_bucket", labels, le, cumulative);
	}
	format_fixed(sum, sizeof(sum), h->sum_us, 6);
	put_sample(p, SCOPE_ROUTE, f, "_sum", labels, NULL, sum);
	put_u64(p, SCOPE_ROUTE, f, "_count", labels, NULL, h->count);
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

static void prom_procedures(struct prom *p, const char *labels, const struct gw_counters *c)
{
	static const char other[] = "program=\"other\",version=\"\",procedure=\"\"";
	struct proc_ref sorted[GW_PROC_SLOTS];
	unsigned n = procs_sorted(c, sorted);
	char extra[128];

	for (unsigned i = 0; i < n; i++) {
		const struct gw_proc_count *pc = sorted[i].pc;
		proc_labels(extra, sizeof(extra), pc);
		put_u64(p, SCOPE_ROUTE, FAM_PROC_CALLS, "", labels, extra, pc->calls);
		put_u64(p, SCOPE_ROUTE, FAM_PROC_REPLIES, "", labels, extra, pc->replies);
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
	free(p->route_labels);
	p->route_labels = NULL;
	memset(&p->credits, 0, sizeof(p->credits));
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
	prom_counters(p, SCOPE_ROUTE, p->route_labels, r->totals);
	prom_histogram(p, FAM_GATEWAY_LATENCY, p->route_labels, &r->totals->gateway_us);
	prom_histogram(p, FAM_UPSTREAM_LATENCY, p->route_labels, &r->totals->upstream_us);
	prom_procedures(p, p->route_labels, r->totals);
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
	credits_add(&p->credits, &s->credits);
	if (!p->with_sessions)
		return;

	snprintf(id, sizeof(id), "%" PRIu64, s->id);
	const char *session[] = { "session", id };
	labels = make_labels(p->route_labels, session, ARRAY_SIZE(session));
	info_labels = make_labels(NULL, info, ARRAY_SIZE(info));
	if (!labels || !info_labels) {
		p->failed = true;
		goto out;
	}
	put_sample(p, SCOPE_SESSION, FAM_SESSION_INFO, "", labels, info_labels, "1");
	format_fixed(age, sizeof(age), s->age_ms, 3);
	put_sample(p, SCOPE_SESSION, FAM_SESSION_AGE, "", labels, NULL, age);
	prom_counters(p, SCOPE_SESSION, labels, s->counters);
	prom_credits(p, SCOPE_SESSION, labels, &s->credits);
	put_u64(p, SCOPE_SESSION, FAM_INLINE_THRESHOLD, "", labels, "direction=\"send\"",
		s->inline_send);
	put_u64(p, SCOPE_SESSION, FAM_INLINE_THRESHOLD, "", labels, "direction=\"receive\"",
		s->inline_recv);
	put_u64(p, SCOPE_SESSION, FAM_RPCRDMA_VERSION, "", labels, NULL, s->rpcrdma_version);
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

/* Families in table order, routes' before sessions'; empty families are left out. */
static void prom_join(struct prom *p, uint64_t stats_refused, struct evbuffer *out)
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
			    stats_refused);
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
static bool render_prometheus(struct gw_stats_http *sh, bool with_sessions, struct evbuffer *out)
{
	struct prom p;
	bool ok = false;

	if (prom_init(&p, with_sessions)) {
		sh->snapshot(sh->engine, &p.visitor);
		prom_route_end(&p);
		prom_join(&p, sh->refused, out);
		ok = !p.failed;
	}
	prom_release(&p);
	return ok;
}

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
	return json_string(or_empty(s));
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

static json_t *json_procedure(const struct gw_proc_count *pc)
{
	json_t *o = json_object();
	bool ok = put(o, "program", json_integer(pc->prog));

	ok &= put(o, "program_name", jname(gw_rpc_program_name(pc->prog)));
	ok &= put(o, "version", json_integer(pc->vers));
	ok &= put(o, "procedure", json_integer(pc->proc));
	ok &= put(o, "procedure_name", jname(gw_rpc_procedure_name(pc->prog, pc->vers, pc->proc)));
	ok &= put(o, "calls", ju64(pc->calls));
	ok &= put(o, "replies", ju64(pc->replies));
	return finish(o, ok);
}

static json_t *json_procedures(const struct gw_counters *c)
{
	struct proc_ref sorted[GW_PROC_SLOTS];
	unsigned n = procs_sorted(c, sorted);
	json_t *a = json_array();
	bool ok = a != NULL;

	for (unsigned i = 0; i < n; i++)
		ok &= append(a, json_procedure(sorted[i].pc));
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

static json_t *json_counters(const struct gw_counters *c, bool every_event_kind)
{
	json_t *o = json_object(), *rdma = json_object(), *tcp = json_object();
	json_t *latency = json_object(), *other = json_object();
	bool ok = put(o, "calls", ju64(c->calls));

	ok &= put(o, "replies", ju64(c->replies));
	ok &= put(o, "backward_calls", ju64(c->backward_calls));
	ok &= put(o, "backward_replies", ju64(c->backward_replies));
	ok &= put(o, "calls_queued_for_credits", ju64(c->calls_queued_for_credits));
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
	ok &= put(o, "latency", latency);
	ok &= put(o, "procedures", json_procedures(c));
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
	ok &= put(o, "credits", json_credits(&s->credits));
	ok &= put(o, "counters", json_counters(s->counters, false));
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

static void jw_route(struct gw_stats_visitor *v, const struct gw_stats_route *r)
{
	struct jwriter *w = container_of(v, struct jwriter, visitor);

	jw_route_end(w);
	jw_value(w, w->routes++ ? ",{\"name\":" : "{\"name\":", jstr(r->name));
	jw_value(w, ",\"mode\":", jstr(r->mode));
	jw_value(w, ",\"listen\":", jstr(r->listen));
	jw_value(w, ",\"upstream\":", jstr(r->upstream));
	jw_value(w, ",\"live_sessions\":", json_integer(r->live_sessions));
	jw_value(w, ",\"totals\":", json_counters(r->totals, true));
	if (w->with_sessions)
		jw_raw(w, ",\"sessions\":[");
	w->route_open = true;
}

static void jw_session(struct gw_stats_visitor *v, const struct gw_stats_session *s)
{
	struct jwriter *w = container_of(v, struct jwriter, visitor);

	if (!w->route_open)
		return;
	credits_add(&w->sum, &s->credits);
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
		 json_pack("{s:s, s:I, s:I, s:I, s:I}", "name", or_empty(d->name), "buffers_in_use",
			   (json_int_t)d->buffers_in_use, "buffers", (json_int_t)d->buffers_total,
			   "registered_bytes", (json_int_t)d->bytes_registered, "exhausted",
			   (json_int_t)d->alloc_failures));
}

/* The document into @out; false when memory ran out on the way. */
static bool render_json(struct gw_stats_http *sh, bool with_sessions, struct evbuffer *out)
{
	struct jwriter w = {
		.visitor = { .route = jw_route, .session = jw_session, .device = jw_device },
		.out = out,
		.with_sessions = with_sessions,
	};

	jw_value(&w, "{\"version\":", json_string(GW_VERSION));
	jw_value(&w, ",\"stats_connections_refused\":", ju64(sh->refused));
	jw_raw(&w, ",\"routes\":[");
	sh->snapshot(sh->engine, &w.visitor);
	jw_routes_end(&w);
	jw_raw(&w, "]}\n");
	return !w.failed;
}

/* ---- HTTP ------------------------------------------------------------------ */

static void send_answer(struct evhttp_request *req, int code, const char *reason, const char *type,
			struct evbuffer *body)
{
	struct evkeyvalq *h = evhttp_request_get_output_headers(req);

	evhttp_add_header(h, "Content-Type", type);
	/* counters: every answer is fresh */
	evhttp_add_header(h, "Cache-Control", "no-store");
	evhttp_send_reply(req, code, reason, body);
}

static void send_text(struct evhttp_request *req, int code, const char *reason, const char *text)
{
	struct evbuffer *body = evbuffer_new();

	if (!body || evbuffer_add(body, text, strlen(text)) != 0) {
		evhttp_send_error(req, HTTP_INTERNAL, NULL);
	} else {
		send_answer(req, code, reason, TEXT_TYPE, body);
	}
	if (body)
		evbuffer_free(body);
}

static void send_rendered(struct evhttp_request *req, struct evbuffer *body, bool ok,
			  const char *type)
{
	if (ok) {
		send_answer(req, HTTP_OK, "OK", type, body);
	} else {
		gw_warn("stats: out of memory while answering %s", evhttp_request_get_uri(req));
		send_text(req, HTTP_INTERNAL, "Internal Server Error", "out of memory\n");
	}
}

static void serve_index(struct gw_stats_http *sh, struct evhttp_request *req)
{
	send_text(req, HTTP_OK, "OK",
		  "rpcrdma-gw " GW_VERSION "\n"
		  "/stats                counters of every route and live session, JSON\n"
		  "/stats?sessions=0     the same without the sessions\n"
		  "/metrics              per-route series, Prometheus text format 0.0.4\n"
		  "/metrics?sessions=1   the same with per-session series\n"
		  "/healthz              \"ok\" while the event loop runs\n");
}

static void serve_healthz(struct gw_stats_http *sh, struct evhttp_request *req)
{
	send_text(req, HTTP_OK, "OK", "ok\n");
}

/*
 * ?sessions=1|true or 0|false; @dflt when absent. False when the value is
 * anything else: a typo should not silently change what is measured.
 */
static bool sessions_param(struct evhttp_request *req, bool dflt, bool *on)
{
	const char *query = evhttp_uri_get_query(evhttp_request_get_evhttp_uri(req));
	struct evkeyvalq params;
	const char *v;
	bool ok = true;

	*on = dflt;
	if (!query)
		return true;
	TAILQ_INIT(&params);
	if (evhttp_parse_query_str(query, &params) != 0)
		return false;
	v = evhttp_find_header(&params, "sessions");
	if (v && (strcmp(v, "1") == 0 || strcmp(v, "true") == 0))
		*on = true;
	else if (v && (strcmp(v, "0") == 0 || strcmp(v, "false") == 0))
		*on = false;
	else if (v)
		ok = false;
	evhttp_clear_headers(&params);
	return ok;
}

static void bad_sessions_param(struct evhttp_request *req)
{
	send_text(req, HTTP_BADREQUEST, "Bad Request", "sessions= takes 1, true, 0 or false\n");
}

/* Sessions are in by default: the document is for people and scripts. */
static void serve_stats(struct gw_stats_http *sh, struct evhttp_request *req)
{
	struct evbuffer *body;
	bool sessions;

	if (!sessions_param(req, true, &sessions)) {
		bad_sessions_param(req);
		return;
	}
	body = evbuffer_new();
	send_rendered(req, body, body && render_json(sh, sessions, body), JSON_TYPE);
	if (body)
		evbuffer_free(body);
}

/* Sessions are out by default: one series set per NFS client is too many. */
static void serve_metrics(struct gw_stats_http *sh, struct evhttp_request *req)
{
	struct evbuffer *body;
	bool sessions;

	if (!sessions_param(req, false, &sessions)) {
		bad_sessions_param(req);
		return;
	}
	body = evbuffer_new();
	send_rendered(req, body, body && render_prometheus(sh, sessions, body), PROMETHEUS_TYPE);
	if (body)
		evbuffer_free(body);
}

static const struct endpoint {
	const char *path;
	void (*serve)(struct gw_stats_http *sh, struct evhttp_request *req);
} endpoints[] = {
	{ "/", serve_index },
	{ "/stats", serve_stats },
	{ "/metrics", serve_metrics },
	{ "/healthz", serve_healthz },
};

static const struct endpoint *find_endpoint(const char *path)
{
	for (size_t i = 0; path && i < ARRAY_SIZE(endpoints); i++) {
		if (strcmp(path, endpoints[i].path) == 0)
			return &endpoints[i];
	}
	return NULL;
}

static void handle_request(struct evhttp_request *req, void *arg)
{
	struct gw_stats_http *sh = arg;
	const struct evhttp_uri *uri = evhttp_request_get_evhttp_uri(req);
	const struct endpoint *ep = find_endpoint(uri ? evhttp_uri_get_path(uri) : NULL);

	gw_debug("stats: %s", evhttp_request_get_uri(req));
	if (!ep) {
		send_text(req, HTTP_NOTFOUND, "Not Found", "not found\n");
		return;
	}
	if (evhttp_request_get_command(req) != EVHTTP_REQ_GET) {
		evhttp_add_header(evhttp_request_get_output_headers(req), "Allow", "GET");
		send_text(req, HTTP_BADMETHOD, "Method Not Allowed", "only GET\n");
		return;
	}
	ep->serve(sh, req);
}

static void format_addr(const struct sockaddr *sa, char *out, size_t size)
{
	char host[INET6_ADDRSTRLEN] = "?";
	unsigned port = 0;

	if (sa->sa_family == AF_INET) {
		const struct sockaddr_in *in = (const struct sockaddr_in *)sa;
		evutil_inet_ntop(AF_INET, &in->sin_addr, host, sizeof(host));
		port = ntohs(in->sin_port);
		snprintf(out, size, "%s:%u", host, port);
	} else if (sa->sa_family == AF_INET6) {
		const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)sa;
		evutil_inet_ntop(AF_INET6, &in6->sin6_addr, host, sizeof(host));
		port = ntohs(in6->sin6_port);
		snprintf(out, size, "[%s]:%u", host, port);
	} else {
		snprintf(out, size, "(address family %d)", sa->sa_family);
	}
}

/*
 * evhttp answers methods it was not told to allow with 501; allowing them
 * all lets us answer 405 with an Allow header, as RFC 9110 asks.
 */
static const unsigned every_method = EVHTTP_REQ_GET | EVHTTP_REQ_POST | EVHTTP_REQ_HEAD |
				     EVHTTP_REQ_PUT | EVHTTP_REQ_DELETE | EVHTTP_REQ_OPTIONS |
				     EVHTTP_REQ_TRACE | EVHTTP_REQ_CONNECT | EVHTTP_REQ_PATCH;

/* ---- the connection cap ------------------------------------------------------ */

static void stats_update_accepting(struct gw_stats_http *sh)
{
	bool full = sh->live_conns >= sh->max_conns;
	struct evconnlistener *lev;

	if (full == sh->full || sh->stopping || !sh->bound)
		return;
	sh->full = full;
	lev = evhttp_bound_socket_get_listener(sh->bound);
	if (full) {
		/* evconnlistener checks after each callback whether it was disabled. */
		evconnlistener_disable(lev);
		event_add(sh->refuse_ev, NULL);
	} else {
		event_del(sh->refuse_ev);
		evconnlistener_enable(lev);
	}
}

/* While full: accept and close at once, so a client sees a closed connection, not a hang. */
static void stats_refuse(evutil_socket_t fd, short what, void *arg)
{
	struct gw_stats_http *sh = arg;

	(void)what;
	for (int i = 0; i < REFUSE_PER_EVENT; i++) {
		evutil_socket_t c = accept(fd, NULL, NULL);
		if (c < 0)
			return;
		evutil_closesocket(c);
		if (sh->refused++ == 0 || sh->refused % 1000 == 0)
			gw_warn("stats: %u connections open (stats.max_connections): refused "
				"%" PRIu64 " so far",
				sh->max_conns, sh->refused);
	}
}

/* Let go of the connections evhttp has freed. */
static void stats_sweep(evutil_socket_t fd, short what, void *arg)
{
	struct gw_stats_http *sh = arg;
	struct stats_conn **pp = &sh->conns;

	(void)fd;
	(void)what;
	while (*pp) {
		struct stats_conn *sc = *pp;
		bufferevent_data_cb rd, wr;
		bufferevent_event_cb ev;
		void *evcon = NULL;

		bufferevent_getcb(sc->bev, &rd, &wr, &ev, &evcon);
		if (evcon) {
			pp = &sc->next;
			continue;
		}
		*pp = sc->next;
		bufferevent_decref(sc->bev);
		free(sc);
		sh->live_conns--;
	}
	stats_update_accepting(sh);
}

/* evhttp's close callback, when it calls it: sweep soon, from the loop. */
static void stats_conn_closed(struct evhttp_connection *evcon, void *arg)
{
	struct gw_stats_http *sh = arg;

	(void)evcon;
	if (!sh->stopping)
		event_active(sh->sweep_ev, EV_TIMEOUT, 0);
}

/* evhttp accepted a connection and asks for its bufferevent. */
static struct bufferevent *stats_conn_new(struct event_base *base, void *arg)
{
	struct gw_stats_http *sh = arg;
	struct stats_conn *sc = calloc(1, sizeof(*sc));

	if (!sc)
		return NULL; /* evhttp makes one of its own; that connection goes uncounted */
	sc->bev = bufferevent_socket_new(base, -1, BEV_OPT_CLOSE_ON_FREE);
	if (!sc->bev) {
		free(sc);
		return NULL;
	}
	bufferevent_incref(sc->bev);
	sc->next = sh->conns;
	sh->conns = sc;
	sh->live_conns++;
	/* The connection exists once this returns: hook its close callback then. */
	event_active(sh->sweep_ev, EV_TIMEOUT, 0);
	stats_update_accepting(sh);
	return sc->bev;
}

static void stats_conns_hook(struct gw_stats_http *sh)
{
	for (struct stats_conn *sc = sh->conns; sc; sc = sc->next) {
		bufferevent_data_cb rd, wr;
		bufferevent_event_cb ev;
		void *evcon = NULL;

		bufferevent_getcb(sc->bev, &rd, &wr, &ev, &evcon);
		if (evcon)
			evhttp_connection_set_closecb(evcon, stats_conn_closed, sh);
	}
}

static void stats_sweep_and_hook(evutil_socket_t fd, short what, void *arg)
{
	stats_sweep(fd, what, arg);
	stats_conns_hook(arg);
}

static struct evhttp *http_new(struct event_base *base, struct gw_stats_http *sh)
{
	struct evhttp *http = evhttp_new(base);

	if (!http)
		return NULL;
	evhttp_set_gencb(http, handle_request, sh);
	evhttp_set_allowed_methods(http, (ev_uint16_t)every_method);
	evhttp_set_max_headers_size(http, MAX_HEADERS_SIZE);
	evhttp_set_max_body_size(http, MAX_BODY_SIZE);
	evhttp_set_timeout(http, DEFAULT_TIMEOUT_S);
	evhttp_set_bevcb(http, stats_conn_new, sh);
	return http;
}

struct gw_stats_http *gw_stats_http_start(struct event_base *base, const struct sockaddr *addr,
					  socklen_t addrlen, gw_stats_snapshot_fn snapshot,
					  void *engine)
{
	struct gw_stats_http *sh = calloc(1, sizeof(*sh));
	struct evconnlistener *lev;
	struct sockaddr_storage ss;
	char where[INET6_ADDRSTRLEN + 16];

	format_addr(addr, where, sizeof(where));
	if (!sh)
		goto nomem;
	sh->snapshot = snapshot;
	sh->engine = engine;
	sh->max_conns = DEFAULT_MAX_CONNECTIONS;
	sh->sweep_ev = event_new(base, -1, EV_PERSIST, stats_sweep_and_hook, sh);
	if (!sh->sweep_ev)
		goto nomem;
	sh->http = http_new(base, sh);
	if (!sh->http)
		goto nomem;

	lev = evconnlistener_new_bind(
		base, NULL, NULL, LEV_OPT_CLOSE_ON_FREE | LEV_OPT_CLOSE_ON_EXEC | LEV_OPT_REUSEABLE,
		LISTEN_BACKLOG, addr, (int)addrlen);
	if (!lev) {
		gw_err("stats: cannot listen on %s: %s", where, strerror(errno));
		goto fail;
	}
	/* evhttp owns the listener from here: evhttp_free() closes it */
	sh->bound = evhttp_bind_listener(sh->http, lev);
	if (!sh->bound) {
		evconnlistener_free(lev);
		goto nomem;
	}
	sh->refuse_ev =
		event_new(base, evconnlistener_get_fd(lev), EV_READ | EV_PERSIST, stats_refuse, sh);
	struct timeval second = { 1, 0 };
	if (!sh->refuse_ev || event_add(sh->sweep_ev, &second) != 0)
		goto nomem;
	if (gw_stats_http_local_addr(sh, &ss))
		format_addr((struct sockaddr *)&ss, where, sizeof(where));
	gw_info("stats: serving /stats and /metrics on http://%s/", where);
	return sh;

nomem:
	gw_err("stats: out of memory starting the endpoint on %s", where);
fail:
	gw_stats_http_stop(sh);
	return NULL;
}

void gw_stats_http_stop(struct gw_stats_http *sh)
{
	struct stats_conn *sc;

	if (!sh)
		return;
	sh->stopping = true;
	if (sh->refuse_ev)
		event_free(sh->refuse_ev);
	if (sh->http)
		evhttp_free(sh->http);
	/* evhttp has freed every connection: ours are the last references. */
	while ((sc = sh->conns)) {
		sh->conns = sc->next;
		bufferevent_decref(sc->bev);
		free(sc);
	}
	if (sh->sweep_ev)
		event_free(sh->sweep_ev);
	free(sh);
}

socklen_t gw_stats_http_local_addr(const struct gw_stats_http *sh, struct sockaddr_storage *ss)
{
	socklen_t len = sizeof(*ss);
	evutil_socket_t fd = evhttp_bound_socket_get_fd(sh->bound);

	memset(ss, 0, sizeof(*ss));
	if (fd < 0 || getsockname(fd, (struct sockaddr *)ss, &len) != 0)
		return 0;
	return len;
}

void gw_stats_http_set_timeout(struct gw_stats_http *sh, const struct timeval *tv)
{
	evhttp_set_timeout_tv(sh->http, tv);
}

void gw_stats_http_set_max_connections(struct gw_stats_http *sh, unsigned n)
{
	sh->max_conns = n ? n : 1;
	stats_update_accepting(sh);
}

unsigned gw_stats_http_connections(const struct gw_stats_http *sh)
{
	return sh->live_conns;
}

uint64_t gw_stats_http_refused(const struct gw_stats_http *sh)
{
	return sh->refused;
}
