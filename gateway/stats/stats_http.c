/* SPDX-License-Identifier: MIT */
/*
 * gateway/stats/stats_http.c - the traffic-statistics endpoint on evhttp: the
 * listener, the endpoints (/stats, /metrics, /healthz, /) and the cap on
 * connections. The documents are rendered by stats_json.c and
 * stats_prom.c (gateway/stats/stats_render.h) from a copy of the engines'
 * figures (gateway/stats/stats_copy.h), and kept for a moment for the
 * requests that follow.
 */
#include "gateway/stats/stats_http.h"

#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <netinet/in.h>
#include <sys/queue.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <event2/listener.h>
#include <event2/util.h>

#include "common/addr_text.h"
#include "common/clock.h"
#include "common/log.h"
#include "common/version.h"
#include "gateway/stats/stats_copy.h"
#include "gateway/stats/stats_render.h"

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

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
	/*
	 * A document is reused for ten times what it cost to make (the walk,
	 * the copy and the render), and never past a second: under a flood
	 * of scrapes the loop, which also serves worker 0's clients, spends at
	 * most about a tenth of its time making each kind of document, and a
	 * small gateway's, made in a millisecond, is at most ten milliseconds
	 * old when it is sent.
	 */
	DOC_REUSE_PER_COST = 10,
	DOC_REUSE_MAX_US = 1000000,
};

enum stats_format { FORMAT_JSON, FORMAT_PROMETHEUS, FORMAT_COUNT };

/*
 * A document as rendered, shared by the answers that send it: each answer's
 * body refers to it (evbuffer_add_reference()), and whoever lets go last,
 * the cache or an answer sent, frees it.
 */
struct stats_doc {
	unsigned refs;
	size_t len;
	char data[];
};

/* The last document of a format and a sessions= choice, and until when it is reused. */
struct stats_cached {
	struct stats_doc *doc;
	uint64_t until_us;
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
	struct gw_stats_copy copy;		   /* empty between requests */
	struct stats_cached docs[FORMAT_COUNT][2]; /* [format][sessions] */
	/* Connection cap: at max_conns, the listener is off and refuse_ev closes newcomers. */
	struct stats_conn *conns;
	unsigned live_conns;
	unsigned max_conns;
	bool full;
	bool stopping;
	bool draining; /* gw_stats_http_set_draining(): /healthz answers 503 */
	struct event *refuse_ev;
	struct event *sweep_ev; /* finds ended connections; also once a second */
	uint64_t refused;
};

/* ---- HTTP ------------------------------------------------------------------ */

static void send_answer(struct evhttp_request *req, int code, const char *reason, const char *type,
			struct evbuffer *body)
{
	struct evkeyvalq *h = evhttp_request_get_output_headers(req);

	evhttp_add_header(h, "Content-Type", type);
	/* counters: no cache between may keep them (ours keeps one a second at most) */
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

static void send_no_memory(struct evhttp_request *req)
{
	gw_warn("stats: out of memory while answering %s", evhttp_request_get_uri(req));
	send_text(req, HTTP_INTERNAL, "Internal Server Error", "out of memory\n");
}

static void serve_index(struct gw_stats_http *sh, struct evhttp_request *req)
{
	send_text(req, HTTP_OK, "OK",
		  "rpcrdma-gw " GW_VERSION "\n"
		  "/stats                counters of every route and live session, JSON\n"
		  "/stats?sessions=0     the same without the sessions\n"
		  "/metrics              per-route series, Prometheus text format 0.0.4\n"
		  "/metrics?sessions=1   the same with per-session series\n"
		  "/healthz              \"ok\" while the event loop runs; 503 \"draining\" once "
		  "told to stop\n");
}

/*
 * A load balancer's readiness check (keepalived's HTTP_GET, a Kubernetes
 * probe): 200 while the gateway takes new clients, 503 from the moment it
 * is told to stop, so that the director sends no new client here while the
 * calls in flight finish.
 */
static void serve_healthz(struct gw_stats_http *sh, struct evhttp_request *req)
{
	if (sh->draining)
		send_text(req, HTTP_SERVUNAVAIL, "Service Unavailable", "draining\n");
	else
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

static void doc_put(struct stats_doc *doc)
{
	if (doc && --doc->refs == 0)
		free(doc);
}

/* An answer's reference let go: its body was sent, or its connection closed. */
static void doc_sent(const void *data, size_t len, void *arg)
{
	(void)data;
	(void)len;
	doc_put(arg);
}

/*
 * Copy the engines' figures, and render from the copy: the walk (and the
 * park of the other workers, gateway/workers.h) lasts only as long as the
 * copy. NULL when memory ran out.
 */
static struct stats_doc *doc_make(struct gw_stats_http *sh, enum stats_format format, bool sessions)
{
	struct evbuffer *out = evbuffer_new();
	struct stats_doc *doc = NULL;
	const struct stats_endpoint_view ep = { .refused = sh->refused, .draining = sh->draining };
	bool ok = out && gw_stats_copy_take(&sh->copy, sh->snapshot, sh->engine, sessions);

	if (ok && format == FORMAT_JSON)
		ok = stats_render_json(gw_stats_copy_replay, &sh->copy, &ep, sessions, out);
	else if (ok)
		ok = stats_render_prometheus(gw_stats_copy_replay, &sh->copy, &ep, sessions, out);
	gw_stats_copy_clear(&sh->copy);
	if (ok) {
		size_t len = evbuffer_get_length(out);
		doc = malloc(sizeof(*doc) + len);
		if (doc && evbuffer_remove(out, doc->data, len) == (ev_ssize_t)len) {
			doc->refs = 1;
			doc->len = len;
		} else {
			free(doc);
			doc = NULL;
		}
	}
	if (out)
		evbuffer_free(out);
	return doc;
}

/*
 * Let go of the documents past their time (all of them when @now is
 * UINT64_MAX): they are not kept for a request that may not come.
 */
static void docs_expire(struct gw_stats_http *sh, uint64_t now)
{
	for (unsigned f = 0; f < FORMAT_COUNT; f++) {
		for (unsigned k = 0; k < 2; k++) {
			struct stats_cached *slot = &sh->docs[f][k];
			if (slot->doc && now >= slot->until_us) {
				doc_put(slot->doc);
				slot->doc = NULL;
			}
		}
	}
}

/* The document of @format and @sessions, the one made a moment ago or a new one. */
static void serve_document(struct gw_stats_http *sh, struct evhttp_request *req,
			   enum stats_format format, bool sessions, const char *type)
{
	struct stats_cached *slot = &sh->docs[format][sessions];
	uint64_t now = gw_now_us();
	struct evbuffer *body;

	docs_expire(sh, now);
	if (!slot->doc) {
		slot->doc = doc_make(sh, format, sessions);
		if (!slot->doc) {
			send_no_memory(req);
			return;
		}
		uint64_t cost = gw_now_us() - now;
		slot->until_us = now + (cost < DOC_REUSE_MAX_US / DOC_REUSE_PER_COST
						? cost * DOC_REUSE_PER_COST
						: DOC_REUSE_MAX_US);
	}
	body = evbuffer_new();
	if (!body || evbuffer_add_reference(body, slot->doc->data, slot->doc->len, doc_sent,
					    slot->doc) != 0) {
		send_no_memory(req);
	} else {
		slot->doc->refs++;
		send_answer(req, HTTP_OK, "OK", type, body);
	}
	if (body)
		evbuffer_free(body);
}

/* Sessions are in by default: the document is for people and scripts. */
static void serve_stats(struct gw_stats_http *sh, struct evhttp_request *req)
{
	bool sessions;

	if (!sessions_param(req, true, &sessions)) {
		bad_sessions_param(req);
		return;
	}
	serve_document(sh, req, FORMAT_JSON, sessions, JSON_TYPE);
}

/* Sessions are out by default: one series set per NFS client is too many. */
static void serve_metrics(struct gw_stats_http *sh, struct evhttp_request *req)
{
	bool sessions;

	if (!sessions_param(req, false, &sessions)) {
		bad_sessions_param(req);
		return;
	}
	serve_document(sh, req, FORMAT_PROMETHEUS, sessions, PROMETHEUS_TYPE);
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
	docs_expire(arg, gw_now_us());
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
	char where[GW_ADDR_TEXT_MAX];

	gw_addr_text(addr, where, sizeof(where));
	if (!sh)
		goto nomem;
	sh->snapshot = snapshot;
	sh->engine = engine;
	gw_stats_copy_init(&sh->copy);
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
		gw_addr_text((struct sockaddr *)&ss, where, sizeof(where));
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
	/* The answers' references went with their connections: the cache's are the last. */
	for (unsigned f = 0; f < FORMAT_COUNT; f++) {
		for (unsigned k = 0; k < 2; k++)
			doc_put(sh->docs[f][k].doc);
	}
	gw_stats_copy_clear(&sh->copy);
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

void gw_stats_http_set_draining(struct gw_stats_http *sh, bool draining)
{
	if (!sh || sh->draining == draining)
		return;
	sh->draining = draining;
	docs_expire(sh, UINT64_MAX); /* the next document says so, not one made before */
}
