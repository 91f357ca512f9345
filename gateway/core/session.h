/* SPDX-License-Identifier: MIT */
/*
 * gateway/core/session.h - what the engine and the forward and reverse pipelines
 * share: a route at run time, and the common part of a session.
 *
 * This header is internal to gateway/: main and the stats endpoint see the
 * engine only through gateway/core/engine.h, and the engine sees the pipelines
 * only through their gateway/core/mode.h entries.
 *
 * A session pairs one accepted connection with one upstream connection and
 * lives on its route's list from accept until both sides are closed and
 * every call slot is free. Each pipeline embeds struct gw_session first in
 * its own session struct and implements gw_session_ops.
 */
#ifndef GW_GATEWAY_SESSION_H
#define GW_GATEWAY_SESSION_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/queue.h>

#include "conf/config.h"
#include "gateway/core/admission.h"
#include "common/ratelimit.h"
#include "gateway/counters/counters.h"
#include "gateway/maps/qosmap.h"
#include "rdma/rpcrdma_hdr.h"
#include "tcp/tcp_conn.h"

struct gw_engine;
struct gw_mode_ops;
struct gw_session;
struct rdma_ctx;
struct ulb_rules;
struct tcp_listener;
struct rlistener;
struct event_base;

TAILQ_HEAD(gw_session_list, gw_session);

struct gw_route_rt {
	struct gw_engine *eng;
	const struct gw_route *cfg; /* replaced on reload */
	const struct gw_mode_ops
		*mode; /* cfg->mode's entry of the engine's table (gateway/core/mode.h) */
	struct ulb_rules *rules;
	struct rpcrdma_limits limits;
	struct tcp_conn_config tcp_cfg;
	struct gw_counters counters;
	/*
	 * The upstream's latency by procedure, slot for slot with counters'
	 * table (whole from the route's start, its slots taken for good): on
	 * the route only, as nfsiostat shows it per mount. 24 buckets x 256 slots, about 53 KB a
	 * route; a session's would cost that per client.
	 */
	struct gw_hist proc_upstream_us[GW_PROC_SLOTS];
	struct tcp_listener *tcp_listener; /* forward */
	struct rlistener *rdma_listener; /* reverse; on workers but 0, takes handed-over requests */
	uint64_t handoff_logged_us;	 /* reverse, worker 0: last "cannot hand" warning */
	uint64_t handoff_unlogged;	 /* refusals since */
	bool sizes_logged;		 /* the first size_clamped reply was logged */
	struct gw_ratelimit oversize_log; /* forward: records over max_record_size */
	struct gw_session_list sessions;
	uint32_t live_sessions;
	/* Sessions per client address, and the refusals' log rate. */
	struct gw_admission admission;
	/*
	 * The buckets of the route's quality-of-service classes (cfg->qos),
	 * this worker's clients'; NULL: the route has none, and a call costs
	 * one test of this pointer.
	 */
	struct qos_map *qos;
	/*
	 * Upstream connections on reserved ports this route closed with a FIN
	 * in the current minute: each leaves its port in TIME_WAIT for a
	 * minute, and the range has 512 ports (gw_upstream_may_linger()).
	 */
	uint64_t linger_window_us;
	uint32_t linger_count;
	bool draining;
	struct gw_side *side; /* NFSv3 portmapper and MOUNT relay, or NULL */
	/*
	 * The mode's own state of the route, set up and freed by the mode
	 * (gateway/core/mode.h), read through its private header's accessor.
	 */
	void *mode_state;
};

/*
 * May an upstream TCP connection of @route on a reserved source port end
 * with a normal close (FIN) now? The side that closes first keeps the port
 * in TIME_WAIT for a minute, so a route that ends more than
 * GW_LINGER_PER_MINUTE such connections a minute resets the rest rather
 * than run out of reserved ports for new ones.
 */
enum { GW_LINGER_PER_MINUTE = 256 };
static inline bool gw_upstream_may_linger(struct gw_route_rt *route, uint64_t now_us)
{
	if (now_us - route->linger_window_us >= 60u * 1000000u) {
		route->linger_window_us = now_us;
		route->linger_count = 0;
	}
	if (route->linger_count >= GW_LINGER_PER_MINUTE)
		return false;
	route->linger_count++;
	return true;
}

struct gw_session_ops {
	/* Where it is in its life: connecting, ready, draining (after drain()), closing. */
	enum gw_session_state (*state)(const struct gw_session *s);
	void (*credits)(const struct gw_session *s, struct gw_credit_state *out,
			uint32_t *inline_send, uint32_t *inline_recv);
	/* Stop taking new calls; close once every call in flight is answered. */
	void (*drain)(struct gw_session *s);
	/* Close both sides now. The session frees itself when that is done. */
	void (*shutdown)(struct gw_session *s);
	/* Nothing in flight either way (the idle timeout may close it). */
	bool (*idle)(const struct gw_session *s);
	/*
	 * Optional, once a second: end what has waited too long (call
	 * timeouts). True when the session closed; it may be freed already.
	 */
	bool (*sweep)(struct gw_session *s, uint64_t now_us);
	/*
	 * Optional: the RPC-over-RDMA version the connection speaks, 0 while
	 * none is settled yet (the stats endpoint shows it).
	 */
	uint32_t (*rpcrdma_version)(const struct gw_session *s);
	/*
	 * Optional: turns the client's TCP connection ended with records still
	 * buffered, to go on in a later loop pass (tcp_conn_stats.yields).
	 */
	uint64_t (*read_yields)(const struct gw_session *s);
};

struct gw_session {
	TAILQ_ENTRY(gw_session) link;
	struct gw_route_rt *route;
	const struct gw_session_ops *ops;
	uint64_t id;
	uint64_t started_us;
	uint64_t active_us; /* last call or reply, for the idle timeout */
	char client[64];    /* the accepted side's address, "addr:port" */
	char upstream[64];  /* the upstream side's address, once known */
	/* The route's ULB rules when the session started: its calls are parsed with them. */
	struct ulb_rules *rules;
	/* Its count on the route's per-address table; given back at unregister. */
	struct gw_admission_ticket admitted;
	struct gw_counters counters;
};

/*
 * Engine services for the pipelines (gateway/core/engine.c).
 *
 * Whether a session may start is decided before the pipeline is asked
 * (the engine's admission hook, gateway/core/admission.h), and a session that
 * registers is counted against its route, the process and its client's
 * address until it unregisters. Register and unregister are each called
 * exactly once per session, register in the same turn of the loop as the
 * admission decision.
 */
struct event_base *gw_engine_base(const struct gw_engine *eng);
struct rdma_ctx *gw_engine_rdma(const struct gw_engine *eng);
void gw_session_register(struct gw_route_rt *route, struct gw_session *s,
			 const struct gw_session_ops *ops, const struct sockaddr *client);
/* The session's last act: off the route's list; the engine may finish a drain. */
void gw_session_unregister(struct gw_session *s);

/* A call or reply passed: the session is not idle. */
static inline void gw_session_touch(struct gw_session *s, uint64_t now_us)
{
	s->active_us = now_us;
}

/* Count on the session and on its route. */
#define GW_COUNT(s, field, n)                                                                      \
	do {                                                                                       \
		(s)->counters.field += (n);                                                        \
		(s)->route->counters.field += (n);                                                 \
	} while (0)

static inline void gw_count_event(struct gw_session *s, enum gw_event_kind kind)
{
	s->counters.events[kind]++;
	s->route->counters.events[kind]++;
}

static inline void gw_count_call(struct gw_session *s, uint32_t prog, uint32_t vers, uint32_t proc)
{
	gw_counters_count_call(&s->counters, prog, vers, proc);
	gw_counters_count_call(&s->route->counters, prog, vers, proc);
}

/*
 * A reply relayed: counted by procedure, and the time the call spent in the
 * gateway and at the upstream, on the session and the route; the route also
 * keeps the upstream's time by procedure.
 */
static inline void gw_count_reply(struct gw_session *s, uint32_t prog, uint32_t vers, uint32_t proc,
				  uint64_t gateway_us, uint64_t upstream_us)
{
	struct gw_route_rt *rt = s->route;
	struct gw_proc_count *slot, *procs;
	unsigned nslots;

	gw_counters_count_reply(&s->counters, prog, vers, proc);
	slot = gw_counters_count_reply(&rt->counters, prog, vers, proc);
	procs = gw_counters_procs(&rt->counters, &nslots);
	/* The route's table is whole from its start (engine.c): its slots never move. */
	if (slot && nslots == GW_PROC_SLOTS)
		gw_hist_add(&rt->proc_upstream_us[slot - procs], upstream_us);
	gw_hist_add(&s->counters.gateway_us, gateway_us);
	gw_hist_add(&s->route->counters.gateway_us, gateway_us);
	gw_hist_add(&s->counters.upstream_us, upstream_us);
	gw_hist_add(&s->route->counters.upstream_us, upstream_us);
}

#endif
