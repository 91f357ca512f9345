/* SPDX-License-Identifier: MIT */
/*
 * gateway/core/engine.h - the gateway as main and the stats endpoint see it.
 *
 * The engine turns a configuration into running routes: a TCP listener per
 * forward route, an RDMA listener per reverse route, the ULB rules each
 * uses, and the sessions they accept. Everything runs on the caller's
 * event_base.
 */
#ifndef GW_GATEWAY_ENGINE_H
#define GW_GATEWAY_ENGINE_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "conf/config.h"
#include "gateway/counters/counters.h"

struct event_base;
struct gw_engine;

/*
 * What the engines of several workers share: the sessions over all of
 * them, for the route's and the process's max_sessions. The caller owns it
 * (gateway/workers.c); @route_live has one counter per route of the config.
 */
struct gw_handoff;
struct gw_engine_shared {
	atomic_bool draining; /* set before any worker drains: none admits any more */
	_Atomic size_t process_live;
	_Atomic uint32_t *route_live;
	size_t nroutes;
	/*
	 * One per worker (gateway/core/handoff.h): reverse routes' connection
	 * requests, from worker 0's RDMA listener to the worker that serves
	 * the client. NULL: worker 0 keeps them all.
	 */
	struct gw_handoff **handoffs;
};

/*
 * Set up every route of @cfg (which must outlive the engine, or be
 * replaced by a reload) as worker @worker of @nworkers, each on its own
 * thread and event_base. @modes is the table of modes by configuration
 * mode (gateway/modes.h, gw_mode_find()): the engine knows a route's mode
 * only as its entry there. Returns NULL with a message in @err when a
 * mode is not in the table, or a rule file, a listener or RDMA cannot be
 * set up.
 *
 * Every worker listens on each forward route's
 * address (a SO_REUSEPORT group steered by the client's address, so that
 * a client's connections all come to one worker), worker 0 alone runs
 * the reverse routes' RDMA listeners (handing each connection to the
 * worker the client's address names, by the same hash) and the NFSv3
 * side relays.
 * Workers must be started in order 0, 1, ... (the kernel numbers the
 * listeners of a group in the order they are opened).
 */
struct gw_mode_ops;
struct gw_engine *gw_engine_start_worker(struct event_base *base, const struct gw_config *cfg,
					 const struct gw_mode_ops *const *modes, unsigned worker,
					 unsigned nworkers, struct gw_engine_shared *shared,
					 char *err, size_t errlen);

/*
 * Stop accepting, let every session finish its calls in flight, and call
 * @done once all sessions are gone or @timeout_ms has passed (then the rest
 * are closed).
 */
void gw_engine_drain(struct gw_engine *eng, unsigned timeout_ms, void (*done)(void *arg),
		     void *arg);

/*
 * Apply a new configuration @next that gw_config_reloadable() accepted:
 * logging, client ACLs, limits, timeouts, and every route's Upper-Layer
 * Binding rules, read again from their files (sessions that are already
 * open keep the rules they started with); the caller frees the old
 * configuration after commit. In two steps, so that several workers
 * change together or not at all: prepare reads every rule file (on any
 * thread; NULL with the reason in @err when one does not load), commit
 * applies it on the engine's own thread and cannot fail, abort lets an
 * unused one go.
 */
struct gw_engine_reload;
struct gw_engine_reload *gw_engine_reload_prepare(const struct gw_engine *eng,
						  const struct gw_config *next, char *err,
						  size_t errlen);
void gw_engine_reload_commit(struct gw_engine *eng, const struct gw_config *next,
			     struct gw_engine_reload *rl);
void gw_engine_reload_abort(struct gw_engine_reload *rl);

/*
 * Load every route's Upper-Layer Binding rules of @cfg and let them go:
 * what --check does for rule files. -errno with "route NAME: ulb_rules:
 * FILE:LINE:COL: reason" in @err for the first that does not load.
 */
int gw_engine_check_rules(const struct gw_config *cfg, char *err, size_t errlen);

/* Close everything at once and free the engine. */
void gw_engine_stop(struct gw_engine *eng);

/*
 * For the stats endpoint: visit routes and their live sessions over the
 * engines of several workers, each route once with its
 * figures merged (gateway/stats/stats_merge.h), then every worker's sessions of
 * it. The caller makes sure no engine runs meanwhile (gateway/workers.c
 * parks the other workers' threads).
 */
void gw_engines_snapshot(struct gw_engine *const *engs, size_t n, struct gw_stats_visitor *v);

/* Live sessions over all routes. */
size_t gw_engine_sessions(const struct gw_engine *eng);

#endif
