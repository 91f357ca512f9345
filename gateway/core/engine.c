/* SPDX-License-Identifier: MIT */
#include "gateway/core/engine.h"

#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/event.h>

#include "common/addr_text.h"
#include "common/clock.h"
#include "common/log.h"
#include "gateway/core/handoff.h"
#include "gateway/core/mode.h"
#include "gateway/core/session.h"
#include "gateway/side/side_route.h"
#include "gateway/stats/stats_merge.h"
#include "rdma/conn.h"
#include "rdma/device.h"
#include "rdma/pool.h"
#include "tcp/listener.h"
#include "ulb-rules/ulb.h"

struct gw_engine {
	struct event_base *base;
	const struct gw_config *cfg;
	struct rdma_ctx *rdma;
	struct gw_route_rt *routes;
	size_t nroutes;
	/* This engine is worker @worker of @nworkers (gateway/workers.h); 0 of 1 alone. */
	unsigned worker;
	unsigned nworkers;
	/* Sessions of every worker, for the limits that hold over all of them; NULL alone. */
	struct gw_engine_shared *shared;
	uint64_t next_session_id; /* ids step by nworkers from worker: unique in the process */
	size_t live_sessions;	  /* over all routes, for the top-level max_sessions */
	bool draining;
	struct gw_handoff *handoff; /* attached: reverse connections from worker 0 */
	struct event *sweep_timer;  /* idle timeouts, once a second */
	struct event *drain_timer;
	void (*drain_done)(void *arg);
	void *drain_arg;
};

struct event_base *gw_engine_base(const struct gw_engine *eng)
{
	return eng->base;
}

struct rdma_ctx *gw_engine_rdma(const struct gw_engine *eng)
{
	return eng->rdma;
}

/*
 * The sessions of every worker, kept beside each worker's own: the route's
 * and the process's max_sessions hold over all workers. Relaxed atomics:
 * they are limits checked at admission, not a lock on anything, and two
 * workers admitting at the same instant may each see the other's session
 * not yet counted (the limit is then passed by at most workers - 1).
 */
static void engine_shared_count(struct gw_route_rt *route, int delta)
{
	struct gw_engine_shared *sh = route->eng->shared;
	size_t i = (size_t)(route - route->eng->routes);

	if (!sh || i >= sh->nroutes)
		return;
	if (delta > 0) {
		atomic_fetch_add_explicit(&sh->route_live[i], 1, memory_order_relaxed);
		atomic_fetch_add_explicit(&sh->process_live, 1, memory_order_relaxed);
	} else {
		atomic_fetch_sub_explicit(&sh->route_live[i], 1, memory_order_relaxed);
		atomic_fetch_sub_explicit(&sh->process_live, 1, memory_order_relaxed);
	}
}

static uint32_t engine_route_live(const struct gw_route_rt *route)
{
	const struct gw_engine_shared *sh = route->eng->shared;
	size_t i = (size_t)(route - route->eng->routes);

	if (!sh || i >= sh->nroutes)
		return route->live_sessions;
	return atomic_load_explicit(&sh->route_live[i], memory_order_relaxed);
}

static size_t engine_process_live(const struct gw_engine *eng)
{
	if (!eng->shared)
		return eng->live_sessions;
	return atomic_load_explicit(&eng->shared->process_live, memory_order_relaxed);
}

void gw_session_register(struct gw_route_rt *route, struct gw_session *s,
			 const struct gw_session_ops *ops, const struct sockaddr *client)
{
	s->route = route;
	s->ops = ops;
	route->eng->next_session_id += route->eng->nworkers;
	s->id = route->eng->next_session_id;
	s->started_us = gw_now_us();
	s->active_us = s->started_us;
	gw_addr_text(client, s->client, sizeof(s->client));
	s->rules = ulb_rules_ref(route->rules);
	if (!gw_admission_enter(&route->admission, client, &s->admitted))
		gw_warn("%s: out of memory counting sessions per client; session from %s "
			"not counted against its address",
			route->cfg->name, s->client);
	TAILQ_INSERT_TAIL(&route->sessions, s, link);
	route->live_sessions++;
	route->eng->live_sessions++;
	engine_shared_count(route, 1);
	GW_COUNT(s, sessions_opened, 1);
	gw_info("%s: session %llu from %s", route->cfg->name, (unsigned long long)s->id, s->client);
}

static void engine_check_drained(struct gw_engine *eng);
static void engine_sweep(evutil_socket_t fd, short what, void *arg);

void gw_session_unregister(struct gw_session *s)
{
	struct gw_route_rt *route = s->route;

	GW_COUNT(s, sessions_closed, 1);
	TAILQ_REMOVE(&route->sessions, s, link);
	route->live_sessions--;
	route->eng->live_sessions--;
	engine_shared_count(route, -1);
	gw_admission_leave(&route->admission, &s->admitted);
	gw_info("%s: session %llu from %s ended (%llu calls)", route->cfg->name,
		(unsigned long long)s->id, s->client, (unsigned long long)s->counters.calls);
	ulb_rules_free(s->rules);
	s->rules = NULL;
	gw_counters_release(&s->counters); /* its table by procedure, if it grew one */
	if (route->eng->draining)
		engine_check_drained(route->eng);
}

/* ---- accepting ---- */

/*
 * Whether the route takes a session from @peer: the address ACL, then the
 * session limits. Runs before anything is done for the client (forward:
 * the TCP socket is reset by the listener; reverse: the connection
 * request is rejected), and the session it admits registers in the same
 * turn of the loop, so no other admission can come in between.
 */
static bool engine_admit(const struct sockaddr *peer, socklen_t len, void *arg)
{
	struct gw_route_rt *route = arg;
	struct gw_engine *eng = route->eng;

	if (route->draining || (eng->shared && atomic_load(&eng->shared->draining)))
		return false;
	if (!gw_route_client_allowed(route->cfg, peer)) {
		gw_admission_refuse_unlisted(&route->admission, route->cfg->name, peer,
					     &route->counters, gw_now_us());
		return false;
	}
	struct gw_admission_limits lim = {
		.route = route->cfg->name,
		.route_live = engine_route_live(route),
		.route_max = route->cfg->max_sessions,
		.process_live = engine_process_live(eng),
		.process_max = eng->cfg->max_sessions,
		.client_max = route->cfg->max_sessions_per_client,
	};
	return gw_admission_check(&route->admission, &lim, peer, &route->counters, gw_now_us());
}

static void engine_tcp_accepted(evutil_socket_t fd, const struct sockaddr *peer, socklen_t len,
				void *arg)
{
	struct gw_route_rt *route = arg;

	route->mode->accept(route, fd, peer);
}

static const struct tcp_listener_ops engine_tcp_listener_ops = {
	.admit = engine_admit,
	.accepted = engine_tcp_accepted,
};

static bool engine_rdma_accept(struct rlistener *l, void *owner, const struct sockaddr *peer,
			       const uint8_t *pdata, uint8_t pdata_len,
			       const struct rdma_conn_param *req, struct rconn_params *params,
			       const struct rconn_ops **ops, void **conn_owner)
{
	struct gw_route_rt *route = owner;

	if (!engine_admit(peer, 0, route))
		return false;
	return route->mode->rdma_accept(route, peer, pdata, pdata_len, req, params, ops,
					conn_owner);
}

/*
 * Worker 0's RDMA listener keeps a connection request when the client's
 * address names worker 0 (the TCP listeners' hash), and hands it to the
 * worker it names otherwise. A request that cannot be handed over (that
 * worker's queue full, or the worker gone) is refused: accepted here it
 * would split the client's connections over two workers (its sessions
 * per address, and in a shared route the upstream connection that a
 * retransmission must go out on again). The client connects again.
 */
static bool engine_rdma_steer(struct rlistener *l, void *owner, const struct sockaddr *peer,
			      struct rconn_request *r)
{
	struct gw_route_rt *route = owner;
	struct gw_engine *eng = route->eng;

	(void)l;
	if (eng->nworkers < 2 || !eng->shared || !eng->shared->handoffs)
		return false;
	unsigned w = tcp_listener_steer_index(peer, eng->nworkers);
	if (w == eng->worker)
		return false;
	/*
	 * What can be refused from here is refused before the hand-over (an
	 * unlisted address's flood must not fill another worker's queue); the
	 * session limits are the serving worker's to check.
	 */
	if (route->draining || atomic_load(&eng->shared->draining)) {
		rconn_request_reject(r);
		return true;
	}
	if (!gw_route_client_allowed(route->cfg, peer)) {
		gw_admission_refuse_unlisted(&route->admission, route->cfg->name, peer,
					     &route->counters, gw_now_us());
		rconn_request_reject(r);
		return true;
	}
	int err = gw_handoff_post(eng->shared->handoffs[w], (size_t)(route - eng->routes), r);
	if (err) {
		/* In a connection storm most are not logged: once a second, with a tally. */
		uint64_t now = gw_now_us();
		route->counters.events[GW_EV_HANDOFF_REFUSED]++;
		route->handoff_unlogged++;
		if (route->handoff_logged_us == 0 || now - route->handoff_logged_us >= 1000000) {
			char who[80];
			gw_addr_text(peer, who, sizeof(who));
			gw_warn("%s: refused client %s: cannot hand its connection to worker %u: "
				"%s "
				"(%llu refused since the last such message)",
				route->cfg->name, who, w,
				err == -EBUSY ? "too many connection requests waiting"
					      : strerror(-err),
				(unsigned long long)route->handoff_unlogged - 1);
			route->handoff_logged_us = now;
			route->handoff_unlogged = 0;
		}
		rconn_request_reject(r);
	}
	return true;
}

static const struct rlistener_ops engine_rdma_listener_ops = {
	.accept = engine_rdma_accept,
	.steer = engine_rdma_steer,
};

/* On a worker other than 0: a request worker 0 handed over (engine_rdma_steer()). */
static void engine_handoff_deliver(void *arg, size_t route, struct rconn_request *r)
{
	struct gw_engine *eng = arg;

	if (route >= eng->nroutes || !eng->routes[route].rdma_listener) {
		rconn_request_reject(r); /* the route stopped listening (a drain) meanwhile */
		return;
	}
	rlistener_accept_request(eng->routes[route].rdma_listener, r);
}

/* ---- routes ---- */

static void route_tcp_config(struct gw_route_rt *rt)
{
	const struct gw_route *r = rt->cfg;

	tcp_conn_config_default(&rt->tcp_cfg);
	rt->tcp_cfg.max_record = r->max_record_size;
	rt->tcp_cfg.record_timeout_ms = r->record_timeout_ms;
	rt->tcp_cfg.records_per_turn = r->turn_budget;
	/* Only clients' TCP connections take turns under contention (common/turns.h). */
	if (rt->mode->tcp_clients)
		rt->tcp_cfg.records_per_turn_contended = r->turn_budget_contended;
	/* The clients' calls' wait in the socket (counters.h, socket_us). */
	rt->tcp_cfg.rx_timestamps = rt->mode->tcp_clients;
	/* A client's record over max_record_size is skipped and answered (the mode's). */
	rt->tcp_cfg.skip_oversized = rt->mode->tcp_clients;
	/*
	 * After a TCP peer stops draining (out_high), the messages already asked
	 * for keep coming: in forward mode the replies to every call in flight,
	 * in reverse mode the calls the RDMA client was granted credits for.
	 * Each is at most a record, and none may be refused for want of room.
	 */
	rt->tcp_cfg.out_max = rt->tcp_cfg.out_high + (size_t)(r->credits + r->backchannel_credits) *
							     tcp_conn_rx_buffer_size(&rt->tcp_cfg);
}

static void route_limits(struct gw_route_rt *rt)
{
	const struct gw_route *r = rt->cfg;

	rpcrdma_limits_default(&rt->limits);
	rt->limits.max_chunk_segs = r->max_chunk_segments;
	rt->limits.max_read_chunks = r->max_read_segments;
	rt->limits.max_write_chunks = r->max_write_chunks;
	/* Versions 1 up to max_rpcrdma_version (RFC 8166 section 9.1: a range) */
	rt->limits.versions = ((2u << r->max_rpcrdma_version) - 1) & ~1u;
	rpcrdma_limits_clamp(&rt->limits);
}

/* The route's Upper-Layer Binding rules: the stock files and the route's own. */
static struct ulb_rules *route_load_rules(const struct gw_route *r, char *err, size_t errlen)
{
	char ulb_err[512];
	struct ulb_options uo = {
		.files = (const char *const *)r->ulb_rules,
		.n_files = r->ulb_rules_count,
		.default_reply_max = r->reply_size_estimate,
	};
	struct ulb_rules *rules = ulb_rules_load(&uo, ulb_err, sizeof(ulb_err));

	if (!rules)
		snprintf(err, errlen, "route %s: ulb_rules: %s", r->name, ulb_err);
	return rules;
}

int gw_engine_check_rules(const struct gw_config *cfg, char *err, size_t errlen)
{
	for (size_t i = 0; i < cfg->routes_count; i++) {
		struct ulb_rules *rules = route_load_rules(&cfg->routes[i], err, errlen);
		if (!rules)
			return -EINVAL;
		ulb_rules_free(rules);
	}
	return 0;
}

static int route_start(struct gw_engine *eng, struct gw_route_rt *rt, char *err, size_t errlen)
{
	const struct gw_route *r = rt->cfg;

	rt->rules = route_load_rules(r, err, errlen);
	if (!rt->rules)
		return -EINVAL;
	gw_ratelimit_init(&rt->oversize_log, 1000000);
	if (rt->mode->route_init) {
		int e = rt->mode->route_init(rt);
		if (e) {
			snprintf(err, errlen, "route %s: cannot set up %s mode: %s", r->name,
				 rt->mode->name, strerror(-e));
			return e;
		}
	}
	route_tcp_config(rt);
	route_limits(rt);

	if (rt->mode->client_transport == GW_TRANSPORT_TCP) {
		/*
		 * Every worker listens on the route's address; the kernel gives
		 * all connections of one client address to the same worker
		 * (tcp_listener_new_steered()), where that client's state is.
		 */
		rt->tcp_listener = tcp_listener_new_steered(
			eng->base, (const struct sockaddr *)&r->listen.addr, r->listen.addrlen, 0,
			&engine_tcp_listener_ops, rt, eng->worker, eng->nworkers);
		if (!rt->tcp_listener) {
			snprintf(err, errlen, "route %s: cannot listen on %s: %s", r->name,
				 r->listen.text, strerror(errno));
			return -errno;
		}
		/* Calls' socket wait (counters.h, socket_us): see tcp_listener_rx_timestamps(). */
		if (tcp_listener_rx_timestamps(rt->tcp_listener) != 0)
			gw_warn("%s: no receive timestamps on %s (%s): socket wait not measured",
				r->name, r->listen.text, strerror(errno));
	} else {
		/*
		 * An RDMA CM port has one listener: worker 0's. It hands each
		 * connection request to the worker the client's address names,
		 * whose listener listens on nothing and takes those
		 * (engine_rdma_steer()).
		 */
		struct rconn_params defaults;
		rt->mode->listen_params(r, &defaults);
		rt->rdma_listener = rlistener_create(
			eng->rdma,
			eng->worker == 0 ? (const struct sockaddr *)&r->listen.addr : NULL, 0,
			&defaults, &engine_rdma_listener_ops, rt);
		if (!rt->rdma_listener) {
			int e = errno ? errno : EADDRNOTAVAIL;
			snprintf(err, errlen, "route %s: cannot listen on %s: %s", r->name,
				 r->listen.text, strerror(e));
			return -e;
		}
	}
	/* The NFSv3 side relays (portmapper, MOUNT, NLM) keep one state: worker 0's. */
	if (eng->worker == 0) {
		int side_failed;
		rt->side = gw_side_start(eng->base, r, &rt->counters, &side_failed, err, errlen);
		if (side_failed)
			return -EADDRNOTAVAIL;
	}
	if (eng->worker == 0 || rt->mode->client_transport == GW_TRANSPORT_TCP) {
		char who[32] = "";
		if (eng->nworkers > 1)
			snprintf(who, sizeof(who), " (worker %u)", eng->worker);
		gw_info("%s: %s route listening on %s%s, upstream %s (%zu ULB bindings)", r->name,
			rt->mode->name, r->listen.text, who, r->upstream.text,
			ulb_rules_count(rt->rules));
	}
	return 0;
}

static void route_stop_listening(struct gw_route_rt *rt)
{
	gw_side_stop(rt->side);
	rt->side = NULL;
	if (rt->tcp_listener) {
		tcp_listener_free(rt->tcp_listener);
		rt->tcp_listener = NULL;
	}
	if (rt->rdma_listener) {
		rlistener_destroy(rt->rdma_listener);
		rt->rdma_listener = NULL;
	}
}

/*
 * One pool layout serves every route: inline buffers as large as the
 * largest inline size (at least 4096, the Linux server's floor), and record
 * buffers as large as the largest record plus the parser's slack.
 */
static void engine_pool_config(const struct gw_config *cfg, struct rdma_pool_config *pc)
{
	uint32_t inline_max = 4096, record_max = 65536;

	for (size_t i = 0; i < cfg->routes_count; i++) {
		const struct gw_route *r = &cfg->routes[i];
		if (r->inline_send_size > inline_max)
			inline_max = r->inline_send_size;
		if (r->inline_receive_size > inline_max)
			inline_max = r->inline_receive_size;
		struct tcp_conn_config tc;
		tcp_conn_config_default(&tc);
		tc.max_record = r->max_record_size;
		if (tcp_conn_rx_buffer_size(&tc) > record_max)
			record_max = tcp_conn_rx_buffer_size(&tc);
	}
	rdma_pool_default_config(pc, inline_max, record_max, 1024);
}

/*
 * A worker other than 0 with a route whose clients come over RDMA takes
 * the connections worker 0's RDMA listener hands it.
 */
static int engine_attach_handoff(struct gw_engine *eng)
{
	bool rdma_clients = false;

	for (size_t i = 0; i < eng->nroutes; i++)
		rdma_clients |= eng->routes[i].mode->client_transport == GW_TRANSPORT_RDMA;
	if (!rdma_clients || eng->worker == 0 || !eng->shared || !eng->shared->handoffs)
		return 0;
	struct gw_handoff *h = eng->shared->handoffs[eng->worker];
	int err = gw_handoff_attach(h, eng->base, eng->rdma, engine_handoff_deliver, eng);
	if (err == 0)
		eng->handoff = h;
	return err;
}

struct gw_engine *gw_engine_start_worker(struct event_base *base, const struct gw_config *cfg,
					 const struct gw_mode_ops *const *modes, unsigned worker,
					 unsigned nworkers, struct gw_engine_shared *shared,
					 char *err, size_t errlen)
{
	struct gw_engine *eng = calloc(1, sizeof(*eng));
	struct rdma_pool_config pc;

	if (!eng) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	eng->base = base;
	eng->cfg = cfg;
	eng->worker = worker;
	eng->nworkers = nworkers ? nworkers : 1;
	eng->shared = shared;
	eng->next_session_id = worker;
	engine_pool_config(cfg, &pc);
	eng->rdma = rdma_ctx_create(base, &pc);
	if (!eng->rdma) {
		snprintf(err, errlen,
			 "RDMA is not available (is the rdma_ucm module loaded, and "
			 "is there an RDMA device?)");
		free(eng);
		return NULL;
	}
	rdma_ctx_set_comp_vector(eng->rdma, worker);
	eng->routes = calloc(cfg->routes_count, sizeof(*eng->routes));
	if (!eng->routes) {
		snprintf(err, errlen, "out of memory");
		gw_engine_stop(eng);
		return NULL;
	}
	eng->nroutes = cfg->routes_count;
	for (size_t i = 0; i < eng->nroutes; i++) {
		struct gw_route_rt *rt = &eng->routes[i];
		rt->eng = eng;
		rt->cfg = &cfg->routes[i];
		TAILQ_INIT(&rt->sessions);
		rt->mode = gw_mode_find(modes, rt->cfg->mode);
		gw_admission_init(&rt->admission,
				  (uint32_t)(gw_now_us() * 2654435761u) ^ (uint32_t)i);
		if (rt->cfg->qos_count && !(rt->qos = malloc(sizeof(*rt->qos)))) {
			snprintf(err, errlen, "out of memory");
			gw_engine_stop(eng);
			return NULL;
		}
		if (rt->qos && !qos_map_init(rt->qos, (uint32_t)rt->cfg->qos_count,
					     (uint32_t)(gw_now_us() * 40503u) ^ (uint32_t)i)) {
			free(rt->qos);
			rt->qos = NULL;
			snprintf(err, errlen, "out of memory");
			gw_engine_stop(eng);
			return NULL;
		}
	}
	for (size_t i = 0; i < eng->nroutes; i++) {
		if (!eng->routes[i].mode) {
			snprintf(err, errlen, "route %s: mode %s is not built in",
				 eng->routes[i].cfg->name,
				 gw_route_mode_name(eng->routes[i].cfg->mode));
			gw_engine_stop(eng);
			return NULL;
		}
	}
	for (size_t i = 0; i < eng->nroutes; i++) {
		/* The route's table by procedure whole now: its latency by slot relies on it. */
		if (gw_counters_reserve_procs(&eng->routes[i].counters) != 0) {
			snprintf(err, errlen, "out of memory");
			gw_engine_stop(eng);
			return NULL;
		}
		if (route_start(eng, &eng->routes[i], err, errlen) != 0) {
			gw_engine_stop(eng);
			return NULL;
		}
	}
	eng->sweep_timer = event_new(base, -1, EV_PERSIST, engine_sweep, eng);
	struct timeval second = { 1, 0 };
	if (!eng->sweep_timer || event_add(eng->sweep_timer, &second) != 0) {
		snprintf(err, errlen, "cannot start the idle-timeout timer");
		gw_engine_stop(eng);
		return NULL;
	}
	if (engine_attach_handoff(eng) != 0) {
		snprintf(err, errlen, "cannot take connections handed over by worker 0");
		gw_engine_stop(eng);
		return NULL;
	}
	return eng;
}

/*
 * Once a second: let each session end what waited too long (its calls'
 * timeouts), and close sessions that carried nothing for their route's
 * idle_timeout. One sweep a second over every session costs less than a
 * timer per session (or per call) re-armed on every call.
 */
static void engine_sweep(evutil_socket_t fd, short what, void *arg)
{
	struct gw_engine *eng = arg;
	uint64_t now = gw_now_us();

	for (size_t i = 0; i < eng->nroutes; i++) {
		struct gw_route_rt *rt = &eng->routes[i];
		uint64_t limit_us = (uint64_t)rt->cfg->idle_timeout_ms * 1000;
		struct gw_session *s, *next;
		/* Idle clients' buckets given back (a reload never changes the class count). */
		if (rt->qos)
			qos_map_sweep(rt->qos, rt->cfg->qos, (uint32_t)rt->cfg->qos_count, now);
		for (s = TAILQ_FIRST(&rt->sessions); s; s = next) {
			next = TAILQ_NEXT(s, link);
			if (s->ops->sweep && s->ops->sweep(s, now))
				continue; /* closed, perhaps freed */
			if (limit_us && now - s->active_us >= limit_us && s->ops->idle(s)) {
				gw_info("%s: session %llu from %s idle for %llu s: closing",
					rt->cfg->name, (unsigned long long)s->id, s->client,
					(unsigned long long)((now - s->active_us) / 1000000));
				s->ops->shutdown(s);
			}
		}
	}
}

size_t gw_engine_sessions(const struct gw_engine *eng)
{
	return eng->live_sessions;
}

static void engine_finish_drain(struct gw_engine *eng)
{
	if (eng->drain_timer) {
		event_free(eng->drain_timer);
		eng->drain_timer = NULL;
	}
	void (*done)(void *) = eng->drain_done;
	eng->drain_done = NULL;
	if (done)
		done(eng->drain_arg);
}

static void engine_check_drained(struct gw_engine *eng)
{
	if (eng->drain_done && gw_engine_sessions(eng) == 0)
		engine_finish_drain(eng);
}

static void engine_drain_timeout(evutil_socket_t fd, short what, void *arg)
{
	struct gw_engine *eng = arg;

	gw_warn("drain: %zu sessions still busy after the drain timeout; closing them",
		gw_engine_sessions(eng));
	for (size_t i = 0; i < eng->nroutes; i++) {
		struct gw_session *s, *next;
		for (s = TAILQ_FIRST(&eng->routes[i].sessions); s; s = next) {
			next = TAILQ_NEXT(s, link);
			s->ops->shutdown(s);
		}
	}
	engine_finish_drain(eng);
}

void gw_engine_drain(struct gw_engine *eng, unsigned timeout_ms, void (*done)(void *arg), void *arg)
{
	eng->draining = true;
	eng->drain_done = done;
	eng->drain_arg = arg;
	for (size_t i = 0; i < eng->nroutes; i++) {
		struct gw_route_rt *rt = &eng->routes[i];
		rt->draining = true;
		route_stop_listening(rt);
		struct gw_session *s, *next;
		for (s = TAILQ_FIRST(&rt->sessions); s; s = next) {
			next = TAILQ_NEXT(s, link);
			s->ops->drain(s);
		}
	}
	if (gw_engine_sessions(eng) == 0) {
		engine_finish_drain(eng);
		return;
	}
	eng->drain_timer = evtimer_new(eng->base, engine_drain_timeout, eng);
	struct timeval tv = gw_ms_timeval(timeout_ms);
	if (eng->drain_timer)
		evtimer_add(eng->drain_timer, &tv);
}

/* Rule sets read for a reload, one per route, before anything changes. */
struct gw_engine_reload {
	size_t nroutes;
	struct ulb_rules *rules[];
};

struct gw_engine_reload *gw_engine_reload_prepare(const struct gw_engine *eng,
						  const struct gw_config *next, char *err,
						  size_t errlen)
{
	/*
	 * The rule files are read again (an operator may have edited one), all
	 * of them before anything changes: a broken file leaves the running
	 * configuration whole.
	 */
	struct gw_engine_reload *rl =
		calloc(1, sizeof(*rl) + eng->nroutes * sizeof(struct ulb_rules *));
	if (!rl) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	rl->nroutes = eng->nroutes;
	for (size_t i = 0; i < eng->nroutes; i++) {
		const struct gw_route *nr = gw_config_route(next, eng->routes[i].cfg->name);
		if (!nr)
			continue; /* gw_config_reloadable() refused such a change */
		rl->rules[i] = route_load_rules(nr, err, errlen);
		if (!rl->rules[i]) {
			gw_engine_reload_abort(rl);
			return NULL;
		}
	}
	return rl;
}

void gw_engine_reload_abort(struct gw_engine_reload *rl)
{
	if (!rl)
		return;
	for (size_t i = 0; i < rl->nroutes; i++)
		ulb_rules_free(rl->rules[i]);
	free(rl);
}

void gw_engine_reload_commit(struct gw_engine *eng, const struct gw_config *next,
			     struct gw_engine_reload *rl)
{
	for (size_t i = 0; i < eng->nroutes && i < rl->nroutes; i++) {
		struct gw_route_rt *rt = &eng->routes[i];
		const struct gw_route *nr = gw_config_route(next, rt->cfg->name);
		if (!nr)
			continue;
		rt->cfg = nr;
		route_tcp_config(rt);
		route_limits(rt);
		/* Its side relays refer to the route too (only worker 0 has them). */
		gw_side_set_route(rt->side, nr);
		/* Live sessions keep the set they started with (their calls refer to it). */
		ulb_rules_free(rt->rules);
		rt->rules = rl->rules[i];
		rl->rules[i] = NULL;
		if (eng->worker == 0)
			gw_info("%s: %zu ULB bindings for new sessions", nr->name,
				ulb_rules_count(rt->rules));
	}
	gw_engine_reload_abort(rl); /* frees what no route took */
	eng->cfg = next;
}

void gw_engine_stop(struct gw_engine *eng)
{
	if (!eng)
		return;
	/* Requests handed over but not taken yet are on this engine's CM channel: refused now. */
	if (eng->handoff)
		gw_handoff_detach(eng->handoff);
	for (size_t i = 0; i < eng->nroutes; i++) {
		struct gw_route_rt *rt = &eng->routes[i];
		route_stop_listening(rt);
		struct gw_session *s, *next;
		for (s = TAILQ_FIRST(&rt->sessions); s; s = next) {
			next = TAILQ_NEXT(s, link);
			s->ops->shutdown(s);
		}
	}
	/*
	 * Sessions finish closing on the loop (RDMA teardown is deferred);
	 * run it until they are gone, so that no buffer is still out when
	 * the pools go.
	 */
	for (int spins = 0; spins < 1000; spins++) {
		bool shared_open = false;
		for (size_t i = 0; i < eng->nroutes; i++) {
			struct gw_route_rt *rt = &eng->routes[i];
			if (rt->mode && rt->mode->route_close)
				shared_open |= rt->mode->route_close(rt);
		}
		if (gw_engine_sessions(eng) == 0 && !shared_open)
			break;
		event_base_loop(eng->base, EVLOOP_ONCE | EVLOOP_NONBLOCK);
	}
	for (size_t i = 0; i < eng->nroutes; i++) {
		if (eng->routes[i].mode)
			eng->routes[i].mode->route_free(&eng->routes[i]);
		ulb_rules_free(eng->routes[i].rules);
		gw_admission_fini(&eng->routes[i].admission);
		if (eng->routes[i].qos) {
			qos_map_fini(eng->routes[i].qos);
			free(eng->routes[i].qos);
		}
		gw_counters_release(&eng->routes[i].counters);
	}
	free(eng->routes);
	if (eng->drain_timer)
		event_free(eng->drain_timer);
	if (eng->sweep_timer)
		event_free(eng->sweep_timer);
	rdma_ctx_destroy(eng->rdma);
	free(eng);
}

/* A route's qos classes' figures into @out; false when it has none. */
static bool route_qos_view(const struct gw_route_rt *rt, struct gw_stats_qos *out)
{
	if (!rt->qos)
		return false;
	out->nclasses = 0;
	for (size_t i = 0; i < rt->cfg->qos_count && i < GW_STATS_MAX_QOS; i++) {
		const struct qos_class_stats *st = &rt->qos->stats[i];
		struct gw_stats_qos_class *o = &out->classes[out->nclasses++];

		snprintf(o->name, sizeof(o->name), "%s", rt->cfg->qos[i].name);
		o->calls = st->calls;
		o->bytes_to_server = st->bytes_to_server;
		o->bytes_to_client = st->bytes_to_client;
		o->throttled_us = st->throttled_us;
		o->throttles = st->throttles;
		o->throttled_now = st->throttled_now;
		o->clients = st->clients;
		o->overflow = st->overflow;
	}
	return true;
}

/* One route of one engine as the stats endpoint sees it; @shared, @nlm, @qos are its storage. */
static void route_view(struct gw_route_rt *rt, struct gw_stats_route *r,
		       struct gw_stats_shared *shared, struct gw_stats_nlm *nlm,
		       struct gw_stats_qos *qos)
{
	*r = (struct gw_stats_route){
		.name = rt->cfg->name,
		.mode = rt->mode->name,
		.listen = rt->cfg->listen.text,
		.upstream = rt->cfg->upstream.text,
		.totals = &rt->counters,
		.proc_upstream_us = rt->proc_upstream_us,
		.live_sessions = rt->live_sessions,
	};
	/* The live sessions walked, on a scrape only: nothing kept per state on the data path. */
	const struct gw_session *s;
	TAILQ_FOREACH (s, &rt->sessions, link) {
		enum gw_session_state st = s->ops->state(s);
		if ((unsigned)st < GW_SESSION_STATE_COUNT)
			r->sessions_by_state[st]++;
	}
	if (rt->mode->route_stats(rt, shared))
		r->shared = shared;
	if (gw_side_nlm_stats(rt->side, nlm))
		r->nlm = nlm;
	if (route_qos_view(rt, qos))
		r->qos = qos;
}

static void route_visit_sessions(struct gw_route_rt *rt, struct gw_stats_visitor *v, uint64_t now)
{
	struct gw_session *s;

	TAILQ_FOREACH (s, &rt->sessions, link) {
		struct gw_stats_session ss = {
			.id = s->id,
			.client = s->client,
			.upstream = s->upstream,
			.state = gw_session_state_name(s->ops->state(s)),
			.age_ms = (now - s->started_us) / 1000,
			.counters = &s->counters,
			.worker = rt->eng->worker,
		};
		s->ops->credits(s, &ss.credits, &ss.inline_send, &ss.inline_recv);
		if (s->ops->rpcrdma_version)
			ss.rpcrdma_version = s->ops->rpcrdma_version(s);
		if (s->ops->read_yields)
			ss.read_yields = s->ops->read_yields(s);
		v->session(v, &ss);
	}
}

static void device_view(const struct rdma_dev *dev, struct gw_stats_device *d)
{
	struct rdma_pool_stats ps;

	rdma_pool_get_stats(rdma_dev_pool(dev), &ps);
	*d = (struct gw_stats_device){
		.name = rdma_dev_name(dev),
		.bytes_registered = ps.bytes_registered,
		.alloc_failures = ps.failures,
	};
	for (unsigned k = 0; k < RDMA_POOL_MAX_CLASSES; k++) {
		d->buffers_in_use += ps.in_use[k];
		d->buffers_total += ps.total[k];
	}
}

/* Route @i over every engine: merged when there are several (gateway/stats/stats_merge.h). */
static void routes_visit(struct gw_engine *const *engs, size_t n, size_t i,
			 struct gw_stats_visitor *v)
{
	struct gw_stats_shared shared;
	struct gw_stats_nlm nlm;
	struct gw_stats_qos qos;
	struct gw_stats_route r;

	if (n == 1) {
		route_view(&engs[0]->routes[i], &r, &shared, &nlm, &qos);
		v->route(v, &r);
		return;
	}
	struct gw_stats_route_acc acc;
	if (gw_stats_route_acc_init(&acc) != 0) {
		gw_warn("stats: out of memory merging route %s; showing worker 0's figures",
			engs[0]->routes[i].cfg->name);
		route_view(&engs[0]->routes[i], &r, &shared, &nlm, &qos);
		v->route(v, &r);
		return;
	}
	for (size_t k = 0; k < n; k++) {
		if (i >= engs[k]->nroutes)
			continue;
		route_view(&engs[k]->routes[i], &r, &shared, &nlm, &qos);
		gw_stats_route_acc_add(&acc, &r);
	}
	v->route(v, &acc.route);
	gw_stats_route_acc_fini(&acc);
}

void gw_engines_snapshot(struct gw_engine *const *engs, size_t n, struct gw_stats_visitor *v)
{
	uint64_t now = gw_now_us();

	if (n == 0)
		return;
	for (size_t i = 0; i < engs[0]->nroutes; i++) {
		routes_visit(engs, n, i, v);
		for (size_t k = 0; k < n; k++) {
			if (i < engs[k]->nroutes)
				route_visit_sessions(&engs[k]->routes[i], v, now);
		}
	}
	/*
	 * A device's pool: each worker registers its own, and opens a device
	 * at its first connection on it: one line per device name, summed.
	 */
	struct gw_stats_device devs[GW_STATS_MAX_DEVICES];
	size_t ndevs = 0;
	for (size_t k = 0; k < n; k++) {
		for (const struct rdma_dev *dev = rdma_ctx_next_device(engs[k]->rdma, NULL); dev;
		     dev = rdma_ctx_next_device(engs[k]->rdma, dev)) {
			struct gw_stats_device d;
			size_t j = 0;
			device_view(dev, &d);
			while (j < ndevs && strcmp(devs[j].name, d.name) != 0)
				j++;
			if (j < ndevs)
				gw_stats_device_add(&devs[j], &d);
			else if (ndevs < GW_STATS_MAX_DEVICES)
				devs[ndevs++] = d;
		}
	}
	for (size_t j = 0; j < ndevs; j++)
		v->device(v, &devs[j]);
}
