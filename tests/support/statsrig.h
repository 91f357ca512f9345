/*
 * The stats endpoint (gateway/stats/stats_http.h) served on a loopback port of
 * the test's own event loop, against a fake engine whose every figure is
 * known, for the tests of /stats, /metrics and the endpoint's handling of its
 * clients. Requests go through support/httpc.h.
 *
 * The fake engine has two routes: "nfs-fwd", forward, with two live sessions,
 * shared upstream connections and an NLM relay, every figure different; and
 * a reverse route whose name needs every escape of the text format
 * (gwt_fake_weird_name), with no sessions. And two RDMA devices' pools.
 */
#ifndef GW_TESTS_SUPPORT_STATSRIG_H
#define GW_TESTS_SUPPORT_STATSRIG_H

#include <jansson.h>
#include <stdbool.h>
#include <sys/socket.h>

#include <event2/event.h>

#include "gateway/counters/counters.h"
#include "gateway/stats/stats_http.h"

#include "support/httpc.h"

/* ---- the fake engine ---- */

struct gwt_fake_session {
	struct gw_stats_session s;
	struct gw_counters c;
};

struct gwt_fake_route {
	struct gw_stats_route r;
	struct gw_stats_shared shared;
	struct gw_stats_nlm nlm;
	struct gw_counters totals;
	struct gw_hist proc_upstream_us[GW_PROC_SLOTS];
	struct gwt_fake_session sessions[2];
	unsigned nsessions;
};

struct gwt_fake_engine {
	struct gwt_fake_route routes[2];
	unsigned nroutes;
	struct gw_stats_device devices[2];
	unsigned ndevices;
	unsigned walks;
	/* Each walk lasts at least this long: the engine of a large gateway. */
	unsigned walk_us;
	/* True during a walk: what the gateway's other workers are parked for. */
	bool walking;
};

/* The second route's name: a quote, a backslash and a newline. */
extern const char gwt_fake_weird_name[];

/* The engine's figures, as described above. */
void gwt_fake_engine_init(struct gwt_fake_engine *e);

/*
 * The engine's snapshot function (@arg the engine): it counts its walks, is
 * walking while it runs (for walk_us at least), and hands out temporaries
 * (one struct reused for every route and one for every session), so that a
 * renderer that kept a pointer past its callback would show the wrong
 * route's values.
 */
void gwt_fake_snapshot(void *arg, struct gw_stats_visitor *v);

/* ---- the endpoint ---- */

struct gwt_stats_rig {
	struct event_base *base;
	struct gwt_fake_engine engine;
	struct gw_stats_http *sh;
	struct sockaddr_storage addr;
	socklen_t addrlen;
};

/* The endpoint on @sa for the rig's engine, its address in f->addr; NULL when it cannot start. */
struct gw_stats_http *gwt_stats_rig_start_on(struct gwt_stats_rig *f, const struct sockaddr *sa,
					     socklen_t len);

/*
 * A cmocka setup and teardown (*@state is the rig): the loop, the engine's
 * figures and the endpoint on 127.0.0.1, a port of the system's choosing;
 * logging at warnings. The setup returns -1 when any of it cannot be had.
 */
int gwt_stats_rig_setup(void **state);
int gwt_stats_rig_teardown(void **state);

/* A connection to the endpoint, or -1. */
int gwt_stats_connect(const struct gwt_stats_rig *f);

/*
 * @method @target on a fresh connection with "Connection: close"; the server
 * closes it after answering. 0, or -1 (see gwt_http_fetch_raw()).
 */
int gwt_stats_fetch(struct gwt_stats_rig *f, const char *method, const char *target,
		    struct gwt_http_answer *a);

/* gwt_http_fetch_raw() to the endpoint. */
int gwt_stats_fetch_raw(struct gwt_stats_rig *f, const char *request, struct gwt_http_answer *a);

/*
 * GET @target as JSON: NULL unless the answer is a 200 of type
 * application/json whose body is JSON (why, on stderr). The caller
 * json_decref()s it.
 */
json_t *gwt_stats_get_json(struct gwt_stats_rig *f, const char *target);

/*
 * GET @target as the Prometheus text format: its families (support/promtext.h);
 * NULL unless the answer is a 200 of type "text/plain; version=0.0.4;
 * charset=utf-8" that prometheus_client accepts (why, on stderr).
 */
json_t *gwt_stats_get_metrics(struct gwt_stats_rig *f, const char *target);

#endif
