/* SPDX-License-Identifier: MIT */
/*
 * gateway/stat_view.c - `rpcrdma-gw stat`: the live view of a running gateway
 * from its stats endpoint (gateway/stat_view.h).
 *
 * Three stages: fetch a /stats document (libevent's HTTP client), make the
 * report of an interval from two documents (jansson in, jansson out), and
 * print it as a table or as JSON. Only the fetch touches the network, so
 * the report is tested on documents captured from a running gateway.
 */
#include "gateway/stat_view.h"

#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>

#include "common/version.h"
#include "conf/config.h"

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

enum {
	DEFAULT_TIMEOUT_MS = 5000,
	DEFAULT_MAX_SESSIONS = 20,
	/* /stats with 10,000 sessions is about 36 MB; more than this is not a gateway. */
	MAX_DOCUMENT = 512 * 1024 * 1024,
};

static const char default_endpoint[] = "127.0.0.1:9464";

/* How bytes crossed the RDMA side, as /stats names them. */
static const char *const rdma_vias[] = { "inline", "read_chunk", "write_chunk", "reply_chunk" };
static const double percentiles[] = { 0.50, 0.90, 0.99 };
static const char *const percentile_names[] = { "p50", "p90", "p99" };

/* ---- fetching ---------------------------------------------------------------- */

struct fetch {
	struct event_base *base;
	struct evbuffer *body;
	int status; /* HTTP status, 0: no answer */
	char why[128];
};

static void fetch_done(struct evhttp_request *req, void *arg)
{
	struct fetch *f = arg;

	if (!req) {
		snprintf(f->why, sizeof(f->why), "no answer (connection refused or timed out)");
	} else {
		f->status = evhttp_request_get_response_code(req);
		if (f->status == 0)
			snprintf(f->why, sizeof(f->why), "connection refused or timed out");
		else
			evbuffer_add_buffer(f->body, evhttp_request_get_input_buffer(req));
	}
	event_base_loopexit(f->base, NULL);
}

/* "http://HOST:PORT/", "HOST:PORT", "[::1]:PORT" into host (no brackets) and port. */
static bool parse_endpoint(const char *endpoint, char *host, size_t hostlen, unsigned *port)
{
	const char *s = endpoint, *colon, *end;
	char *tail;
	unsigned long p;
	size_t n;

	if (strncmp(s, "http://", 7) == 0)
		s += 7;
	end = s + strcspn(s, "/");
	if (*s == '[') {
		const char *close = memchr(s, ']', (size_t)(end - s));
		if (!close || close[1] != ':')
			return false;
		n = (size_t)(close - s - 1);
		s++;
		colon = close + 1;
	} else {
		colon = NULL;
		for (const char *c = s; c < end; c++) {
			if (*c == ':')
				colon = c;
		}
		if (!colon)
			return false;
		n = (size_t)(colon - s);
	}
	if (n == 0 || n >= hostlen)
		return false;
	memcpy(host, s, n);
	host[n] = '\0';
	errno = 0;
	p = strtoul(colon + 1, &tail, 10);
	if (errno || tail != end || tail == colon + 1 || p == 0 || p > 65535)
		return false;
	*port = (unsigned)p;
	return true;
}

static json_t *parse_body(struct fetch *f, const char *endpoint, const char *path, char *err,
			  size_t errlen)
{
	size_t len = evbuffer_get_length(f->body);
	const char *text = (const char *)evbuffer_pullup(f->body, -1);
	json_error_t jerr;
	json_t *doc;

	if (len && !text) {
		snprintf(err, errlen, "%s%s: out of memory", endpoint, path);
		return NULL;
	}
	doc = json_loadb(text ? text : "", len, 0, &jerr);
	if (!doc)
		snprintf(err, errlen, "%s%s: the answer is not JSON: %s", endpoint, path,
			 jerr.text);
	return doc;
}

json_t *gw_stat_fetch(const char *endpoint, const char *path, unsigned timeout_ms, char *err,
		      size_t errlen)
{
	struct fetch f = { 0 };
	struct evhttp_connection *conn = NULL;
	struct evhttp_request *req;
	struct timeval tv = { (time_t)(timeout_ms / 1000),
			      (suseconds_t)(timeout_ms % 1000) * 1000 };
	json_t *doc = NULL;
	char host[256];
	unsigned port;

	if (!parse_endpoint(endpoint, host, sizeof(host), &port)) {
		snprintf(err, errlen, "%s: expected HOST:PORT, [IPV6]:PORT or http://HOST:PORT",
			 endpoint);
		return NULL;
	}
	f.base = event_base_new();
	f.body = evbuffer_new();
	if (f.base)
		conn = evhttp_connection_base_new(f.base, NULL, host, (ev_uint16_t)port);
	req = conn ? evhttp_request_new(fetch_done, &f) : NULL;
	if (!req || !f.body) {
		snprintf(err, errlen, "%s: out of memory", endpoint);
		goto out;
	}
	evhttp_connection_set_timeout_tv(conn, &tv);
	evhttp_connection_set_max_body_size(conn, MAX_DOCUMENT);
	evhttp_add_header(evhttp_request_get_output_headers(req), "Host", host);
	if (evhttp_make_request(conn, req, EVHTTP_REQ_GET, path) != 0) {
		snprintf(err, errlen, "%s: cannot send the request", endpoint);
		goto out; /* evhttp freed the request */
	}
	event_base_dispatch(f.base);
	if (f.status != 200) {
		if (f.status)
			snprintf(err, errlen, "%s%s: HTTP status %d", endpoint, path, f.status);
		else
			snprintf(err, errlen, "%s: %s", endpoint, f.why[0] ? f.why : "no answer");
		goto out;
	}
	doc = parse_body(&f, endpoint, path, err, errlen);
out:
	if (conn)
		evhttp_connection_free(conn);
	if (f.body)
		evbuffer_free(f.body);
	if (f.base)
		event_base_free(f.base);
	return doc;
}

/* ---- the report of an interval -------------------------------------------------- */

static json_int_t int_at(const json_t *obj, const char *key)
{
	return json_integer_value(json_object_get(obj, key));
}

static double real_at(const json_t *obj, const char *key)
{
	return json_number_value(json_object_get(obj, key));
}

/*
 * How much a counter grew. A counter smaller than before belongs to a
 * gateway that restarted since: all of it is new.
 */
static json_int_t grew(const json_t *prev, const json_t *cur, const char *key)
{
	json_int_t now = int_at(cur, key), before = int_at(prev, key);

	return now >= before ? now - before : now;
}

static json_t *rate(json_int_t delta, double interval_s)
{
	return json_real(interval_s > 0 ? (double)delta / interval_s : 0.0);
}

/* A bucket's upper bound in µs; the overflow bucket (le_us null) sorts last. */
static double bucket_le(const json_t *b)
{
	const json_t *le = json_object_get(b, "le_us");

	return json_is_integer(le) ? (double)json_integer_value(le) : INFINITY;
}

static json_int_t bucket_count(const json_t *buckets, double le)
{
	size_t i;
	json_t *b;

	json_array_foreach(buckets, i, b)
	{
		if (bucket_le(b) == le)
			return json_integer_value(json_object_get(b, "count"));
	}
	return 0;
}

/*
 * The percentiles of the samples a histogram gained in the interval, each
 * the upper bound of the bucket it falls in (µs), or null when that is the
 * overflow bucket. Buckets come sparse, non-cumulative and in order.
 */
static json_t *latency_percentiles(const json_t *prev, const json_t *cur)
{
	const json_t *pb = json_object_get(prev, "buckets"), *cb = json_object_get(cur, "buckets");
	json_t *o = json_object(), *b;
	json_int_t total = grew(prev, cur, "count"), seen = 0;
	size_t i, next = 0;

	json_object_set_new(o, "count", json_integer(total));
	json_array_foreach(cb, i, b)
	{
		double le = bucket_le(b);
		json_int_t now = json_integer_value(json_object_get(b, "count"));
		json_int_t before = bucket_count(pb, le);

		seen += now >= before ? now - before : now;
		while (next < ARRAY_SIZE(percentiles) && total > 0 &&
		       (double)seen >= ceil(percentiles[next] * (double)total)) {
			json_object_set_new(o, percentile_names[next],
					    isinf(le) ? json_null() : json_integer((json_int_t)le));
			next++;
		}
	}
	for (; next < ARRAY_SIZE(percentiles); next++)
		json_object_set_new(o, percentile_names[next], json_null());
	return o;
}

/* The events that happened in the interval, by kind, and their sum. */
static json_t *events_grown(const json_t *prev, const json_t *cur, json_int_t *sum)
{
	const json_t *pe = json_object_get(prev, "events"), *ce = json_object_get(cur, "events");
	json_t *o = json_object();
	const char *kind;
	json_t *v;

	*sum = 0;
	json_object_foreach((json_t *)ce, kind, v)
	{
		json_int_t d = grew(pe, ce, kind);
		if (d > 0) {
			json_object_set_new(o, kind, json_integer(d));
			*sum += d;
		}
	}
	return o;
}

/*
 * The rates of one counters object (a route's totals or a session's) and
 * its credit gauges, into @out.
 */
static void report_counters(json_t *out, const json_t *prev, const json_t *cur,
			    const json_t *credits, double dt)
{
	const json_t *prdma = json_object_get(prev, "rdma_bytes");
	const json_t *crdma = json_object_get(cur, "rdma_bytes");
	const json_t *ptcp = json_object_get(prev, "tcp_bytes");
	const json_t *ctcp = json_object_get(cur, "tcp_bytes");
	const json_t *plat = json_object_get(prev, "latency");
	const json_t *clat = json_object_get(cur, "latency");
	json_t *mb = json_object(), *tcp = json_object(), *lat = json_object();
	json_int_t events;

	json_object_set_new(out, "calls_per_s", rate(grew(prev, cur, "calls"), dt));
	json_object_set_new(out, "replies_per_s", rate(grew(prev, cur, "replies"), dt));
	json_object_set_new(out, "backward_calls_per_s",
			    rate(grew(prev, cur, "backward_calls"), dt));
	for (size_t i = 0; i < ARRAY_SIZE(rdma_vias); i++)
		json_object_set_new(mb, rdma_vias[i],
				    rate(grew(prdma, crdma, rdma_vias[i]), dt * 1e6));
	json_object_set_new(out, "rdma_mb_per_s", mb);
	json_object_set_new(tcp, "received", rate(grew(ptcp, ctcp, "received"), dt * 1e6));
	json_object_set_new(tcp, "sent", rate(grew(ptcp, ctcp, "sent"), dt * 1e6));
	json_object_set_new(out, "tcp_mb_per_s", tcp);
	json_object_set_new(out, "credits_granted", json_integer(int_at(credits, "granted")));
	json_object_set_new(out, "credits_in_use", json_integer(int_at(credits, "in_use")));
	json_object_set_new(out, "calls_queued", json_integer(int_at(credits, "queued")));
	json_object_set_new(out, "queued_for_credits_per_s",
			    rate(grew(prev, cur, "calls_queued_for_credits"), dt));
	json_object_set_new(out, "events", events_grown(prev, cur, &events));
	json_object_set_new(out, "events_per_s", rate(events, dt));
	json_object_set_new(lat, "gateway",
			    latency_percentiles(json_object_get(plat, "gateway"),
						json_object_get(clat, "gateway")));
	json_object_set_new(lat, "upstream",
			    latency_percentiles(json_object_get(plat, "upstream"),
						json_object_get(clat, "upstream")));
	json_object_set_new(out, "latency_us", lat);
}

/* The element of @list whose @key equals @cur's, or NULL. */
static const json_t *find_by(const json_t *list, const char *key, const json_t *cur)
{
	const json_t *want = json_object_get(cur, key);
	size_t i;
	json_t *item;

	json_array_foreach(list, i, item)
	{
		if (json_equal(json_object_get(item, key), (json_t *)want))
			return item;
	}
	return NULL;
}

static json_t *report_session(const json_t *prev, const json_t *cur, double dt)
{
	json_t *s = json_object();

	json_object_set(s, "id", json_object_get(cur, "id"));
	json_object_set(s, "client", json_object_get(cur, "client"));
	if (json_object_get(cur, "worker"))
		json_object_set(s, "worker", json_object_get(cur, "worker"));
	json_object_set(s, "state", json_object_get(cur, "state"));
	json_object_set_new(s, "age_s", json_real((double)int_at(cur, "age_ms") / 1000.0));
	/* A session that started in the interval: all its counts are new. */
	report_counters(s, json_object_get(prev, "counters"), json_object_get(cur, "counters"),
			json_object_get(cur, "credits"), dt);
	return s;
}

/*
 * A route's qos classes over the interval: calls and MB (10^6 bytes) a
 * second each way, the share of the interval its clients' calls were held
 * (summed over sessions: 2.0 is two sessions held all the time), and the
 * clients throttled now. NULL when the route has no classes.
 */
static json_t *report_qos(const json_t *prev, const json_t *cur, double dt)
{
	const json_t *classes = json_object_get(cur, "qos"), *c;
	json_t *out;
	size_t i;

	if (!classes)
		return NULL;
	out = json_array();
	json_array_foreach(classes, i, c)
	{
		const json_t *p = find_by(json_object_get(prev, "qos"), "class", c);
		json_t *o = json_object();
		double held = real_at(c, "throttled_seconds") - real_at(p, "throttled_seconds");

		json_object_set(o, "class", json_object_get(c, "class"));
		json_object_set_new(o, "calls_per_s", rate(grew(p, c, "calls"), dt));
		json_object_set_new(o, "to_server_mb_per_s",
				    rate(grew(p, c, "bytes_to_server"), dt * 1e6));
		json_object_set_new(o, "to_client_mb_per_s",
				    rate(grew(p, c, "bytes_to_client"), dt * 1e6));
		json_object_set_new(o, "throttled_per_s",
				    json_real(dt > 0 && held > 0 ? held / dt : 0.0));
		json_object_set_new(o, "clients_throttled",
				    json_integer(int_at(c, "clients_throttled")));
		json_array_append_new(out, o);
	}
	return out;
}

static json_t *report_route(const json_t *prev, const json_t *cur, double dt)
{
	const json_t *psessions = json_object_get(prev, "sessions");
	json_t *r = json_object(), *sessions = json_array(), *s;
	size_t i;

	for (size_t k = 0; k < 4; k++) {
		static const char *const keys[] = { "name", "mode", "listen", "upstream" };
		json_object_set(r, keys[k], json_object_get(cur, keys[k]));
	}
	json_object_set_new(r, "live_sessions", json_integer(int_at(cur, "live_sessions")));
	report_counters(r, json_object_get(prev, "totals"), json_object_get(cur, "totals"),
			json_object_get(cur, "credits"), dt);
	json_array_foreach(json_object_get(cur, "sessions"), i, s)
		json_array_append_new(sessions, report_session(find_by(psessions, "id", s), s, dt));
	json_object_set_new(r, "sessions", sessions);
	json_t *qos = report_qos(prev, cur, dt);
	if (qos)
		json_object_set_new(r, "qos", qos);
	return r;
}

/*
 * Whether two "process" objects describe different processes. Both start
 * times come from the same /proc figures in ticks: equal unless another
 * process (a missing object reads as 0).
 */
static bool other_process(const json_t *prev, const json_t *cur)
{
	return fabs(real_at(prev, "started") - real_at(cur, "started")) > 0.5;
}

/*
 * The gateway process over the interval: its CPU share (user and system, in
 * per cent of one core) and resident memory. Left out when the document has
 * no "process" object (a gateway that cannot read /proc).
 */
static void report_process(json_t *report, const json_t *prev, const json_t *cur, double interval_s)
{
	double cpu;
	json_t *o;

	if (!json_is_object(cur))
		return;
	o = json_object();
	json_object_set(o, "pid", json_object_get(cur, "pid"));
	json_object_set(o, "started", json_object_get(cur, "started"));
	json_object_set(o, "rss_bytes", json_object_get(cur, "rss_bytes"));
	json_object_set(o, "open_fds", json_object_get(cur, "open_fds"));
	cpu = real_at(cur, "cpu_user_s") + real_at(cur, "cpu_system_s");
	if (json_is_object(prev) && !other_process(prev, cur))
		cpu -= real_at(prev, "cpu_user_s") + real_at(prev, "cpu_system_s");
	json_object_set_new(o, "cpu_percent",
			    json_real(interval_s > 0 && cpu > 0 ? 100.0 * cpu / interval_s : 0.0));
	json_object_set_new(report, "process", o);
}

json_t *gw_stat_report(const json_t *prev, const json_t *cur, double interval_s, char *err,
		       size_t errlen)
{
	const json_t *routes = json_object_get(cur, "routes");
	const json_t *proutes = json_object_get(prev, "routes");
	json_t *report, *list, *r;
	size_t i;

	if (!json_is_array(routes) || !json_is_string(json_object_get(cur, "version"))) {
		snprintf(err, errlen, "not a /stats document (no \"version\" and \"routes\")");
		return NULL;
	}
	report = json_object();
	list = json_array();
	json_object_set(report, "version", json_object_get(cur, "version"));
	json_object_set_new(report, "interval_s", json_real(interval_s));
	report_process(report, json_object_get(prev, "process"), json_object_get(cur, "process"),
		       interval_s);
	json_array_foreach(routes, i, r) json_array_append_new(
		list, report_route(find_by(proutes, "name", r), r, interval_s));
	json_object_set_new(report, "routes", list);
	return report;
}

bool gw_stat_restarted(const json_t *prev, const json_t *cur)
{
	return other_process(json_object_get(prev, "process"), json_object_get(cur, "process"));
}

/* ---- the text view -------------------------------------------------------------- */

static const char *str_or(const char *s, const char *dflt)
{
	return s ? s : dflt;
}

/* A latency bound in µs as "128us", "2.0ms", "4.2s"; "-" for none, ">4.2s" for overflow. */
static void latency_text(const json_t *hist, const char *which, char *buf, size_t len)
{
	const json_t *v = json_object_get(hist, which);
	double us;

	if (int_at(hist, "count") == 0) {
		snprintf(buf, len, "-");
		return;
	}
	if (!json_is_integer(v)) {
		snprintf(buf, len, ">4.2s");
		return;
	}
	us = (double)json_integer_value(v);
	if (us < 1000)
		snprintf(buf, len, "%.0fus", us);
	else if (us < 1e6)
		snprintf(buf, len, "%.1fms", us / 1e3);
	else
		snprintf(buf, len, "%.1fs", us / 1e6);
}

static void print_header(FILE *out)
{
	fprintf(out, "  %-24s %9s %8s %8s %8s %8s %11s %6s %8s %15s %15s\n", "", "calls/s",
		"inline", "read", "write", "reply", "credits", "queued", "events/s",
		"gateway p50/99", "upstream p50/99");
	/* The units under the figures; nothing after the last, no trailing blanks. */
	fprintf(out, "  %-24s %9s %8s %8s %8s %8s %11s\n", "", "", "MB/s", "MB/s", "MB/s", "MB/s",
		"used/grant");
}

static void print_line(FILE *out, const char *label, const json_t *c)
{
	const json_t *mb = json_object_get(c, "rdma_mb_per_s");
	const json_t *lat = json_object_get(c, "latency_us");
	const json_t *gw = json_object_get(lat, "gateway"), *up = json_object_get(lat, "upstream");
	char credits[24], g50[16], g99[16], u50[16], u99[16], gwl[34], upl[34];

	snprintf(credits, sizeof(credits), "%lld/%lld", (long long)int_at(c, "credits_in_use"),
		 (long long)int_at(c, "credits_granted"));
	latency_text(gw, "p50", g50, sizeof(g50));
	latency_text(gw, "p99", g99, sizeof(g99));
	latency_text(up, "p50", u50, sizeof(u50));
	latency_text(up, "p99", u99, sizeof(u99));
	snprintf(gwl, sizeof(gwl), "%s/%s", g50, g99);
	snprintf(upl, sizeof(upl), "%s/%s", u50, u99);
	fprintf(out, "  %-24.24s %9.1f %8.2f %8.2f %8.2f %8.2f %11s %6lld %8.1f %15s %15s\n", label,
		real_at(c, "calls_per_s"), real_at(mb, "inline"), real_at(mb, "read_chunk"),
		real_at(mb, "write_chunk"), real_at(mb, "reply_chunk"), credits,
		(long long)int_at(c, "calls_queued"), real_at(c, "events_per_s"), gwl, upl);
}

/* "  events: kind n, kind n" when any happened in the interval. */
static void print_events(FILE *out, const char *indent, const json_t *c)
{
	const json_t *ev = json_object_get(c, "events");
	const char *kind;
	json_t *v;
	bool first = true;

	json_object_foreach((json_t *)ev, kind, v)
	{
		fprintf(out, "%s%s %s %lld", first ? indent : ", ", first ? "events:" : "", kind,
			(long long)json_integer_value(v));
		first = false;
	}
	if (!first)
		fputc('\n', out);
}

/* "  qos CLASS: ..." for each class of the route, when it has any. */
static void print_qos(FILE *out, const json_t *r)
{
	size_t i;
	json_t *c;

	json_array_foreach(json_object_get(r, "qos"), i, c)
	{
		fprintf(out,
			"  qos %-20.20s %9.1f calls/s %8.2f MB/s to server %8.2f MB/s to client, "
			"%lld clients throttled, held %.2f s/s\n",
			str_or(json_string_value(json_object_get(c, "class")), "?"),
			real_at(c, "calls_per_s"), real_at(c, "to_server_mb_per_s"),
			real_at(c, "to_client_mb_per_s"), (long long)int_at(c, "clients_throttled"),
			real_at(c, "throttled_per_s"));
	}
}

static int busiest_first(const void *a, const void *b)
{
	double x = real_at(*(json_t *const *)a, "calls_per_s");
	double y = real_at(*(json_t *const *)b, "calls_per_s");

	return x < y ? 1 : x > y ? -1 : 0;
}

/* The highest worker a session of @sessions is on: 0 with one worker (or an older gateway). */
static long long top_worker(const json_t *sessions)
{
	long long top = 0;
	size_t i;
	json_t *s;

	json_array_foreach(sessions, i, s)
	{
		if ((long long)int_at(s, "worker") > top)
			top = (long long)int_at(s, "worker");
	}
	return top;
}

/* " (worker 0: 8, 1: 8)": the route's sessions by worker, when there are several. */
static void print_workers(FILE *out, const json_t *sessions)
{
	long long top = top_worker(sessions);
	size_t i;
	json_t *s;

	if (top <= 0 || top >= GW_WORKERS_MAX)
		return;
	fputs(" (worker", out);
	for (long long w = 0; w <= top; w++) {
		long long n = 0;
		json_array_foreach(sessions, i, s) n += (long long)int_at(s, "worker") == w;
		fprintf(out, "%s %lld: %lld", w ? "," : "", w, n);
	}
	fputc(')', out);
}

static void print_sessions(FILE *out, const json_t *sessions, size_t max_sessions)
{
	size_t n = json_array_size(sessions), i;
	json_t **sorted = n ? calloc(n, sizeof(json_t *)) : NULL;
	bool workers = top_worker(sessions) > 0;
	json_t *s;

	if (!sorted)
		return;
	json_array_foreach(sessions, i, s) sorted[i] = s;
	qsort(sorted, n, sizeof(json_t *), busiest_first);
	for (i = 0; i < n && i < max_sessions; i++) {
		char label[64];
		const char *client =
			str_or(json_string_value(json_object_get(sorted[i], "client")), "?");
		if (workers)
			snprintf(label, sizeof(label), "%s w%lld", client,
				 (long long)int_at(sorted[i], "worker"));
		else
			snprintf(label, sizeof(label), "%s", client);
		print_line(out, label, sorted[i]);
		print_events(out, "      ", sorted[i]);
	}
	if (n > max_sessions)
		fprintf(out, "  ... %zu more sessions (--sessions N)\n", n - max_sessions);
	free(sorted);
}

void gw_stat_print(FILE *out, const json_t *report, size_t max_sessions)
{
	const json_t *routes = json_object_get(report, "routes");
	size_t i;
	json_t *r;

	json_array_foreach(routes, i, r)
	{
		fprintf(out, "route %s: %s %s -> %s, %lld sessions",
			str_or(json_string_value(json_object_get(r, "name")), "?"),
			str_or(json_string_value(json_object_get(r, "mode")), "?"),
			str_or(json_string_value(json_object_get(r, "listen")), "?"),
			str_or(json_string_value(json_object_get(r, "upstream")), "?"),
			(long long)int_at(r, "live_sessions"));
		print_workers(out, json_object_get(r, "sessions"));
		fputc('\n', out);
		print_header(out);
		print_line(out, "(route)", r);
		print_events(out, "      ", r);
		print_qos(out, r);
		print_sessions(out, json_object_get(r, "sessions"), max_sessions);
		fputc('\n', out);
	}
}

/* ---- the command ------------------------------------------------------------------ */

struct stat_options {
	const char *endpoint;
	double interval_s;
	long count; /* 0: until interrupted */
	bool json;
	bool sessions;
	size_t max_sessions;
	unsigned timeout_ms;
};

static void stat_usage(FILE *out)
{
	fprintf(out,
		"usage: rpcrdma-gw stat [-i SECONDS] [-n COUNT | --once] [--json]\n"
		"                       [--sessions N | --no-sessions] [--timeout MS] [ENDPOINT]\n"
		"\n"
		"Per route and per session of a running gateway: calls/s, MB/s by how the\n"
		"bytes crossed the RDMA side, credits in use, queued calls, events/s and the\n"
		"latency percentiles of the gateway and of the upstream, over each interval.\n"
		"ENDPOINT is the stats endpoint, HOST:PORT (default %s).\n"
		"\n"
		"  -i, --interval S   seconds between reports (default 1; fractions allowed)\n"
		"  -n, --count N      stop after N reports (default: until interrupted)\n"
		"      --once         one report, then exit (-n 1)\n"
		"      --json         each report as one line of JSON\n"
		"      --sessions N   sessions shown per route, busiest first (default %d)\n"
		"      --no-sessions  routes only (fetches /stats?sessions=0: cheap)\n"
		"      --timeout MS   how long to wait for the endpoint (default %d)\n",
		default_endpoint, DEFAULT_MAX_SESSIONS, DEFAULT_TIMEOUT_MS);
}

static bool parse_number(const char *text, double lo, double hi, double *out)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(text, &end);
	if (errno || end == text || *end || !(v >= lo && v <= hi))
		return false;
	*out = v;
	return true;
}

/* 0, or the exit status when the options are wrong or help was asked for. */
static int stat_parse(int argc, char **argv, struct stat_options *o)
{
	enum { OPT_ONCE = 256, OPT_JSON, OPT_SESSIONS, OPT_NO_SESSIONS, OPT_TIMEOUT };
	static const struct option longopts[] = {
		{ "interval", required_argument, NULL, 'i' },
		{ "count", required_argument, NULL, 'n' },
		{ "once", no_argument, NULL, OPT_ONCE },
		{ "json", no_argument, NULL, OPT_JSON },
		{ "sessions", required_argument, NULL, OPT_SESSIONS },
		{ "no-sessions", no_argument, NULL, OPT_NO_SESSIONS },
		{ "timeout", required_argument, NULL, OPT_TIMEOUT },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	double v;
	int opt;

	*o = (struct stat_options){ default_endpoint,  1.0, 0, false, true, DEFAULT_MAX_SESSIONS,
				    DEFAULT_TIMEOUT_MS };
	optind = 1;
	while ((opt = getopt_long(argc, argv, "i:n:h", longopts, NULL)) != -1) {
		switch (opt) {
		case 'i':
			if (!parse_number(optarg, 0.1, 3600, &o->interval_s))
				goto bad;
			break;
		case 'n':
			if (!parse_number(optarg, 1, 1e9, &v) || v != floor(v))
				goto bad;
			o->count = (long)v;
			break;
		case OPT_ONCE:
			o->count = 1;
			break;
		case OPT_JSON:
			o->json = true;
			break;
		case OPT_SESSIONS:
			if (!parse_number(optarg, 0, 1e6, &v) || v != floor(v))
				goto bad;
			o->max_sessions = (size_t)v;
			break;
		case OPT_NO_SESSIONS:
			o->sessions = false;
			break;
		case OPT_TIMEOUT:
			if (!parse_number(optarg, 1, 600000, &v) || v != floor(v))
				goto bad;
			o->timeout_ms = (unsigned)v;
			break;
		case 'h':
			stat_usage(stdout);
			return -1;
		default:
			stat_usage(stderr);
			return 2;
		}
	}
	if (optind < argc)
		o->endpoint = argv[optind++];
	if (optind < argc) {
		fprintf(stderr, "rpcrdma-gw stat: unexpected argument '%s'\n", argv[optind]);
		return 2;
	}
	return 0;
bad:
	fprintf(stderr, "rpcrdma-gw stat: bad value '%s' for %s\n", optarg, argv[optind - 1]);
	return 2;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void sleep_s(double s)
{
	struct timespec ts = { (time_t)s, (long)((s - floor(s)) * 1e9) };

	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

/* ", pid 812 cpu 14.2% rss 38.1 MB": the gateway process over the interval. */
static void print_process(FILE *out, const json_t *p)
{
	if (!json_is_object(p))
		return;
	fprintf(out, ", pid %lld cpu %.1f%% rss %.1f MB", (long long)int_at(p, "pid"),
		real_at(p, "cpu_percent"), real_at(p, "rss_bytes") / 1e6);
}

static void show(const struct stat_options *o, const json_t *report, bool clear)
{
	char when[32];
	time_t t = time(NULL);
	struct tm tm;

	if (o->json) {
		json_t *line = json_deep_copy(report);
		json_object_set_new(line, "endpoint", json_string(o->endpoint));
		json_object_set_new(line, "time", json_integer((json_int_t)t));
		json_dumpf(line, stdout, JSON_COMPACT);
		fputc('\n', stdout);
		json_decref(line);
	} else {
		strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S", localtime_r(&t, &tm));
		if (clear)
			fputs("\033[H\033[2J", stdout); /* home, clear: like top */
		printf("rpcrdma-gw %s at %s, over %.1f s, %s",
		       str_or(json_string_value(json_object_get(report, "version")), "?"),
		       o->endpoint, real_at(report, "interval_s"), when);
		print_process(stdout, json_object_get(report, "process"));
		fputs("\n\n", stdout);
		gw_stat_print(stdout, report, o->max_sessions);
	}
	fflush(stdout);
}

/*
 * One line for scripts (--json) or a message for people: the endpoint stopped
 * answering, or answers again from a new gateway process.
 */
static void show_event(const struct stat_options *o, const char *event, const char *detail)
{
	if (o->json) {
		json_t *line = json_pack("{s:s, s:s, s:s, s:I}", "event", event, "detail", detail,
					 "endpoint", o->endpoint, "time", (json_int_t)time(NULL));
		if (line) {
			json_dumpf(line, stdout, JSON_COMPACT);
			fputc('\n', stdout);
			json_decref(line);
		}
		fflush(stdout);
	} else {
		fprintf(stderr, "rpcrdma-gw stat: %s: %s\n", o->endpoint, detail);
	}
}

/*
 * The next document, riding through a gateway that is away. With --once the
 * first failure ends the command (exit 1); a live view keeps asking every
 * interval, like top, saying once that the endpoint went away, and returns
 * when it answers again. NULL only with --once.
 */
static json_t *fetch_next(const struct stat_options *o, const char *path, bool *was_away)
{
	char err[512], detail[600];
	json_t *doc;

	*was_away = false;
	for (;;) {
		doc = gw_stat_fetch(o->endpoint, path, o->timeout_ms, err, sizeof(err));
		if (doc)
			return doc;
		if (o->count == 1) {
			fprintf(stderr, "rpcrdma-gw stat: %s\n", err);
			return NULL;
		}
		if (!*was_away) {
			snprintf(detail, sizeof(detail), "%s; asking again every %.1f s", err,
				 o->interval_s);
			show_event(o, "unreachable", detail);
		}
		*was_away = true;
		sleep_s(o->interval_s);
	}
}

int gw_stat_main(int argc, char **argv)
{
	struct stat_options o;
	const char *path;
	json_t *prev, *cur, *report;
	char err[512], detail[128];
	double t_prev, t_cur;
	bool clear, away, restarted;
	int rc = stat_parse(argc, argv, &o);

	if (rc)
		return rc < 0 ? 0 : rc;
	path = o.sessions ? "/stats" : "/stats?sessions=0";
	clear = !o.json && o.count != 1 && isatty(STDOUT_FILENO);
	prev = fetch_next(&o, path, &away);
	t_prev = now_s();
	if (!prev)
		return 1;
	for (long n = 0; o.count == 0 || n < o.count;) {
		sleep_s(o.interval_s);
		cur = fetch_next(&o, path, &away);
		t_cur = now_s();
		if (!cur) {
			json_decref(prev);
			return 1;
		}
		restarted = gw_stat_restarted(prev, cur);
		if (away || restarted) {
			/* Counts that do not continue the last ones: start over from these. */
			if (restarted) {
				snprintf(detail, sizeof(detail), "the gateway restarted (pid %lld)",
					 (long long)json_integer_value(json_object_get(
						 json_object_get(cur, "process"), "pid")));
				show_event(&o, "restarted", detail);
			} else {
				show_event(&o, "answering", "the endpoint answers again");
			}
			json_decref(prev);
			prev = cur;
			t_prev = t_cur;
			continue;
		}
		report = gw_stat_report(prev, cur, t_cur - t_prev, err, sizeof(err));
		json_decref(prev);
		prev = cur;
		t_prev = t_cur;
		if (!report) {
			fprintf(stderr, "rpcrdma-gw stat: %s: %s\n", o.endpoint, err);
			json_decref(prev);
			return 1;
		}
		show(&o, report, clear);
		json_decref(report);
		n++;
	}
	json_decref(prev);
	return 0;
}
