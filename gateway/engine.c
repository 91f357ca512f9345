/* SPDX-License-Identifier: MIT */
#include "gateway/engine.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/event.h>

#include "common/clock.h"
#include "common/log.h"
#include "gateway/session.h"
#include "gateway/sideroute.h"
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
	uint64_t next_session_id;
	size_t live_sessions; /* over all routes, for the top-level max_sessions */
	bool draining;
	struct event *sweep_timer; /* idle timeouts, once a second */
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

void gw_format_addr(const struct sockaddr *sa, char *out, size_t outlen)
{
	char host[INET6_ADDRSTRLEN] = "?";
	unsigned port = 0;

	if (sa && sa->sa_family == AF_INET) {
		const struct sockaddr_in *in = (const struct sockaddr_in *)sa;
		inet_ntop(AF_INET, &in->sin_addr, host, sizeof(host));
		port = ntohs(in->sin_port);
		snprintf(out, outlen, "%s:%u", host, port);
	} else if (sa && sa->sa_family == AF_INET6) {
		const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)sa;
		inet_ntop(AF_INET6, &in6->sin6_addr, host, sizeof(host));
		port = ntohs(in6->sin6_port);
		snprintf(out, outlen, "[%s]:%u", host, port);
	} else {
		snprintf(out, outlen, "?");
	}
}

void gw_session_register(struct gw_route_rt *route, struct gw_session *s,
			 const struct gw_session_ops *ops, const struct sockaddr *client)
{
	s->route = route;
	s->ops = ops;
	s->id = ++route->eng->next_session_id;
	s->started_us = gw_now_us();
	s->active_us = s->started_us;
	gw_format_addr(client, s->client, sizeof(s->client));
	s->rules = ulb_rules_ref(route->rules);
	if (!gw_admission_enter(&route->admission, client, &s->admitted))
		gw_warn("%s: out of memory counting sessions per client; session from %s "
			"not counted against its address",
			route->cfg->name, s->client);
	TAILQ_INSERT_TAIL(&route->sessions, s, link);
	route->live_sessions++;
	route->eng->live_sessions++;
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

	if (route->draining)
		return false;
	if (!gw_route_client_allowed(route->cfg, peer)) {
		gw_admission_refuse_unlisted(&route->admission, route->cfg->name, peer,
					     &route->counters, gw_now_us());
		return false;
	}
	struct gw_admission_limits lim = {
		.route = route->cfg->name,
		.route_live = route->live_sessions,
		.route_max = route->cfg->max_sessions,
		.process_live = eng->live_sessions,
		.process_max = eng->cfg->max_sessions,
		.client_max = route->cfg->max_sessions_per_client,
	};
	return gw_admission_check(&route->admission, &lim, peer, &route->counters, gw_now_us());
}

static void engine_tcp_accepted(evutil_socket_t fd, const struct sockaddr *peer, socklen_t len,
				void *arg)
{
	gw_forward_accept(arg, fd, peer);
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
	if (!engine_admit(peer, 0, owner))
		return false;
	return gw_reverse_accept(owner, peer, pdata, pdata_len, req, params, ops, conn_owner);
}

static const struct rlistener_ops engine_rdma_listener_ops = {
	.accept = engine_rdma_accept,
};

/* ---- routes ---- */

static void route_tcp_config(struct gw_route_rt *rt)
{
	const struct gw_route *r = rt->cfg;

	tcp_conn_config_default(&rt->tcp_cfg);
	rt->tcp_cfg.max_record = r->max_record_size;
	rt->tcp_cfg.record_timeout_ms = r->record_timeout_ms;
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
	route_tcp_config(rt);
	route_limits(rt);

	if (r->mode == GW_MODE_FORWARD) {
		rt->tcp_listener =
			tcp_listener_new(eng->base, (const struct sockaddr *)&r->listen.addr,
					 r->listen.addrlen, 0, &engine_tcp_listener_ops, rt);
		if (!rt->tcp_listener) {
			snprintf(err, errlen, "route %s: cannot listen on %s: %s", r->name,
				 r->listen.text, strerror(errno));
			return -errno;
		}
	} else {
		struct rconn_params defaults;
		gw_reverse_listen_params(r, &defaults);
		rt->rdma_listener =
			rlistener_create(eng->rdma, (const struct sockaddr *)&r->listen.addr, 0,
					 &defaults, &engine_rdma_listener_ops, rt);
		if (!rt->rdma_listener) {
			int e = errno ? errno : EADDRNOTAVAIL;
			snprintf(err, errlen, "route %s: cannot listen on %s: %s", r->name,
				 r->listen.text, strerror(e));
			return -e;
		}
	}
	int side_failed;
	rt->side = gw_side_start(eng->base, r, &rt->counters, &side_failed, err, errlen);
	if (side_failed)
		return -EADDRNOTAVAIL;
	gw_info("%s: %s route listening on %s, upstream %s (%zu ULB bindings)", r->name,
		r->mode == GW_MODE_FORWARD ? "forward" : "reverse", r->listen.text,
		r->upstream.text, ulb_rules_count(rt->rules));
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

struct gw_engine *gw_engine_start(struct event_base *base, const struct gw_config *cfg, char *err,
				  size_t errlen)
{
	struct gw_engine *eng = calloc(1, sizeof(*eng));
	struct rdma_pool_config pc;

	if (!eng) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	eng->base = base;
	eng->cfg = cfg;
	engine_pool_config(cfg, &pc);
	eng->rdma = rdma_ctx_create(base, &pc);
	if (!eng->rdma) {
		snprintf(err, errlen,
			 "RDMA is not available (is the rdma_ucm module loaded, and "
			 "is there an RDMA device?)");
		free(eng);
		return NULL;
	}
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
		gw_admission_init(&rt->admission,
				  (uint32_t)(gw_now_us() * 2654435761u) ^ (uint32_t)i);
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

int gw_engine_reload(struct gw_engine *eng, const struct gw_config *next, char *err, size_t errlen)
{
	/*
	 * The rule files are read again (an operator may have edited one), all
	 * of them before anything changes: a broken file leaves the running
	 * configuration whole.
	 */
	struct ulb_rules **rules =
		calloc(eng->nroutes ? eng->nroutes : 1, sizeof(struct ulb_rules *));
	if (!rules) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	for (size_t i = 0; i < eng->nroutes; i++) {
		const struct gw_route *nr = gw_config_route(next, eng->routes[i].cfg->name);
		if (!nr)
			continue; /* gw_config_reloadable() refused such a change */
		rules[i] = route_load_rules(nr, err, errlen);
		if (!rules[i]) {
			while (i-- > 0)
				ulb_rules_free(rules[i]);
			free(rules);
			return -EINVAL;
		}
	}
	for (size_t i = 0; i < eng->nroutes; i++) {
		struct gw_route_rt *rt = &eng->routes[i];
		const struct gw_route *nr = gw_config_route(next, rt->cfg->name);
		if (!nr)
			continue;
		rt->cfg = nr;
		route_tcp_config(rt);
		route_limits(rt);
		/* Live sessions keep the set they started with (their calls refer to it). */
		ulb_rules_free(rt->rules);
		rt->rules = rules[i];
		gw_info("%s: %zu ULB bindings for new sessions", nr->name,
			ulb_rules_count(rt->rules));
	}
	free(rules);
	eng->cfg = next;
	return 0;
}

void gw_engine_stop(struct gw_engine *eng)
{
	if (!eng)
		return;
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
		for (size_t i = 0; i < eng->nroutes; i++)
			shared_open |= gw_forward_route_close(&eng->routes[i]);
		if (gw_engine_sessions(eng) == 0 && !shared_open)
			break;
		event_base_loop(eng->base, EVLOOP_ONCE | EVLOOP_NONBLOCK);
	}
	for (size_t i = 0; i < eng->nroutes; i++) {
		gw_forward_route_free(&eng->routes[i]);
		gw_reverse_route_free(&eng->routes[i]);
		ulb_rules_free(eng->routes[i].rules);
		gw_admission_fini(&eng->routes[i].admission);
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

void gw_engine_snapshot(void *arg, struct gw_stats_visitor *v)
{
	struct gw_engine *eng = arg;
	uint64_t now = gw_now_us();

	for (size_t i = 0; i < eng->nroutes; i++) {
		struct gw_route_rt *rt = &eng->routes[i];
		struct gw_stats_route r = {
			.name = rt->cfg->name,
			.mode = rt->cfg->mode == GW_MODE_FORWARD ? "forward" : "reverse",
			.listen = rt->cfg->listen.text,
			.upstream = rt->cfg->upstream.text,
			.totals = &rt->counters,
			.proc_upstream_us = rt->proc_upstream_us,
			.live_sessions = rt->live_sessions,
		};
		struct gw_stats_shared shared;
		if (gw_forward_route_stats(rt, &shared) || gw_reverse_route_stats(rt, &shared))
			r.shared = &shared;
		struct gw_stats_nlm nlm;
		if (gw_side_nlm_stats(rt->side, &nlm))
			r.nlm = &nlm;
		v->route(v, &r);
		struct gw_session *s;
		TAILQ_FOREACH (s, &rt->sessions, link) {
			struct gw_stats_session ss = {
				.id = s->id,
				.client = s->client,
				.upstream = s->upstream,
				.state = s->ops->state(s),
				.age_ms = (now - s->started_us) / 1000,
				.counters = &s->counters,
			};
			s->ops->credits(s, &ss.credits, &ss.inline_send, &ss.inline_recv);
			if (s->ops->rpcrdma_version)
				ss.rpcrdma_version = s->ops->rpcrdma_version(s);
			if (s->ops->read_yields)
				ss.read_yields = s->ops->read_yields(s);
			v->session(v, &ss);
		}
	}
	for (const struct rdma_dev *dev = rdma_ctx_next_device(eng->rdma, NULL); dev;
	     dev = rdma_ctx_next_device(eng->rdma, dev)) {
		struct rdma_pool_stats ps;
		rdma_pool_get_stats(rdma_dev_pool(dev), &ps);
		struct gw_stats_device d = {
			.name = rdma_dev_name(dev),
			.bytes_registered = ps.bytes_registered,
			.alloc_failures = ps.failures,
		};
		for (unsigned k = 0; k < RDMA_POOL_MAX_CLASSES; k++) {
			d.buffers_in_use += ps.in_use[k];
			d.buffers_total += ps.total[k];
		}
		v->device(v, &d);
	}
}
