/* SPDX-License-Identifier: MIT */
/*
 * gateway/engine.h - the gateway as main and the stats endpoint see it.
 *
 * The engine turns a configuration into running routes: a TCP listener per
 * forward route, an RDMA listener per reverse route, the ULB rules each
 * uses, and the sessions they accept. Everything runs on the caller's
 * event_base.
 */
#ifndef GW_GATEWAY_ENGINE_H
#define GW_GATEWAY_ENGINE_H

#include <stdbool.h>
#include <stddef.h>

#include "conf/config.h"
#include "gateway/counters.h"

struct event_base;
struct gw_engine;

/*
 * Set up every route of @cfg (which must outlive the engine, or be replaced
 * by gw_engine_reload()). Returns NULL with a message in @err when a rule
 * file, a listener or RDMA cannot be set up.
 */
struct gw_engine *gw_engine_start(struct event_base *base, const struct gw_config *cfg, char *err,
				  size_t errlen);

/*
 * Stop accepting, let every session finish its calls in flight, and call
 * @done once all sessions are gone or @timeout_ms has passed (then the rest
 * are closed).
 */
void gw_engine_drain(struct gw_engine *eng, unsigned timeout_ms, void (*done)(void *arg),
		     void *arg);

/*
 * Apply a new configuration that gw_config_reloadable() accepted: logging,
 * client ACLs, limits, timeouts, and every route's Upper-Layer Binding rules,
 * read again from their files (sessions that are already open keep the
 * rules they started with). @next replaces the running one (the caller
 * frees the old one after this returns). When a rule file does not load,
 * nothing changes: -errno, with the reason in @err.
 */
int gw_engine_reload(struct gw_engine *eng, const struct gw_config *next, char *err, size_t errlen);

/*
 * Load every route's Upper-Layer Binding rules of @cfg and let them go:
 * what --check does for rule files. -errno with "route NAME: ulb_rules:
 * FILE:LINE:COL: reason" in @err for the first that does not load.
 */
int gw_engine_check_rules(const struct gw_config *cfg, char *err, size_t errlen);

/* Close everything at once and free the engine. */
void gw_engine_stop(struct gw_engine *eng);

/* For the stats endpoint: visit routes and their live sessions. */
void gw_engine_snapshot(void *eng, struct gw_stats_visitor *v);

/* Live sessions over all routes. */
size_t gw_engine_sessions(const struct gw_engine *eng);

#endif
