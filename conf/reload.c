/* SPDX-License-Identifier: MIT */
/*
 * conf/reload.c - what SIGHUP may change.
 *
 * Live: whatever is looked at per connection or per call (client
 * networks, limits, timeouts, the source port of new upstream
 * connections, rule files) and logging. Restart: whatever exists before
 * the first connection (the worker threads, listeners, the routes
 * themselves, the stats endpoint) or sizes registered memory and is
 * agreed with the peer when a connection is set up (inline sizes,
 * credits, record size): changing those under running sessions would
 * need every session dropped, which is exactly what a reload promises
 * not to do.
 */
#include "conf/conf_priv.h"

#include <stdio.h>
#include <string.h>

#include "common/addr_text.h"

/* Comparing two configurations, reporting against the new one's file. */
struct reload {
	const struct gw_config *cur;
	const struct gw_config *next;
	struct conf_report rep;
	struct conf_where top;
	struct conf_where routes; /* "routes" in the new file */
	unsigned changes;
};

static void fail_restart(struct reload *rl, const struct conf_where *w, const char *was,
			 const char *now, const char *why)
{
	if (why)
		conf_fail(&rl->rep, w, CONF_AT_VALUE,
			  "changed from %s to %s, which needs a restart (%s)", was, now, why);
	else
		conf_fail(&rl->rep, w, CONF_AT_VALUE,
			  "changed from %s to %s, which needs a restart", was, now);
}

static bool endpoint_equal(const struct gw_endpoint *a, const struct gw_endpoint *b)
{
	return a->transport == b->transport && conf_sockaddr_equal(&a->addr, &b->addr);
}

/*
 * An address is compared as resolved: "localhost" for "127.0.0.1" is no
 * change, while the same name that now resolves elsewhere is one, and
 * the message shows both addresses since the text alone would not.
 */
static void compare_endpoint(struct reload *rl, const struct conf_where *rw,
			     const struct gw_endpoint *was, const struct gw_endpoint *now,
			     const char *key)
{
	char a[GW_ADDR_TEXT_MAX], b[GW_ADDR_TEXT_MAX], was_q[300], now_q[300];
	struct conf_where w;

	if (endpoint_equal(was, now))
		return;
	conf_where_member(&w, rw, key);
	if (strcmp(was->text, now->text) == 0) {
		gw_addr_text((const struct sockaddr *)&was->addr, a, sizeof(a));
		gw_addr_text((const struct sockaddr *)&now->addr, b, sizeof(b));
		conf_fail(&rl->rep, &w, CONF_AT_VALUE,
			  "\"%s\" now resolves to %s instead of %s, which needs a restart",
			  now->text, b, a);
		return;
	}
	snprintf(was_q, sizeof(was_q), "\"%s\"", was->text);
	snprintf(now_q, sizeof(now_q), "\"%s\"", now->text);
	fail_restart(rl, &w, was_q, now_q, NULL);
}

/*
 * Where an option of route @rw is set in the new file: in the route, else
 * in "defaults", else nowhere (back to the built-in default): then it is
 * still named as the route's key, and the position is the route's.
 */
static void option_where(struct reload *rl, const struct conf_where *rw, const char *name,
			 struct conf_where *out)
{
	struct conf_where dw;

	conf_where_member(out, rw, name);
	if (conf_where_exists(&rl->rep, out))
		return;
	conf_where_member(&dw, &rl->top, "defaults");
	conf_where_member(out, &dw, name);
	if (conf_where_exists(&rl->rep, out))
		return;
	conf_where_member(out, rw, name);
}

static void compare_options(struct reload *rl, const struct conf_where *rw,
			    const struct gw_route *was, const struct gw_route *now)
{
	for (size_t i = 0; i < conf_options_count; i++) {
		const struct conf_option *opt = &conf_options[i];
		char a[64], b[64];
		struct conf_where w;

		if (!conf_option_differs(opt, was, now))
			continue;
		if (opt->reload == CONF_RELOAD_LIVE) {
			rl->changes |= opt->change;
			continue;
		}
		option_where(rl, rw, opt->name, &w);
		conf_option_format(opt, was, a, sizeof(a));
		conf_option_format(opt, now, b, sizeof(b));
		fail_restart(rl, &w, a, b, opt->restart_why);
	}
}

static void compare_route(struct reload *rl, size_t index, const struct gw_route *was,
			  const struct gw_route *now)
{
	struct conf_where rw, w;
	char a[16], b[16];

	conf_where_index(&rw, &rl->routes, index);
	if (was->mode != now->mode) {
		conf_where_member(&w, &rw, "mode");
		snprintf(a, sizeof(a), "\"%s\"", gw_route_mode_name(was->mode));
		snprintf(b, sizeof(b), "\"%s\"", gw_route_mode_name(now->mode));
		fail_restart(rl, &w, a, b, NULL);
	}
	compare_endpoint(rl, &rw, &was->listen, &now->listen, "listen");
	compare_endpoint(rl, &rw, &was->upstream, &now->upstream, "upstream");
	compare_options(rl, &rw, was, now);
	conf_qos_compare_route(&rl->rep, &rw, was, now, &rl->changes);
}

static void compare_routes(struct reload *rl)
{
	for (size_t i = 0; i < rl->cur->routes_count; i++) {
		const char *name = rl->cur->routes[i].name;
		if (!gw_config_route(rl->next, name))
			conf_fail(&rl->rep, &rl->routes, CONF_AT_VALUE,
				  "route \"%s\" was removed, which needs a restart", name);
	}
	for (size_t j = 0; j < rl->next->routes_count; j++) {
		const struct gw_route *now = &rl->next->routes[j];
		const struct gw_route *was = gw_config_route(rl->cur, now->name);
		struct conf_where rw;

		if (was) {
			compare_route(rl, j, was, now);
			continue;
		}
		conf_where_index(&rw, &rl->routes, j);
		conf_fail(&rl->rep, &rw, CONF_AT_VALUE,
			  "route \"%s\" was added, which needs a restart", now->name);
	}
}

static void compare_stats(struct reload *rl)
{
	const struct gw_config *cur = rl->cur, *next = rl->next;
	struct conf_where sw, w;
	char a[300], b[300];

	conf_where_member(&sw, &rl->top, "stats");
	if (cur->stats_enabled != next->stats_enabled) {
		conf_where_member(&w, &sw, "enabled");
		fail_restart(rl, &w, cur->stats_enabled ? "true" : "false",
			     next->stats_enabled ? "true" : "false", NULL);
		return;
	}
	if (!next->stats_enabled || conf_sockaddr_equal(&cur->stats_addr, &next->stats_addr))
		return;
	conf_where_member(&w, &sw, "listen");
	snprintf(a, sizeof(a), "\"%s\"", cur->stats_text);
	snprintf(b, sizeof(b), "\"%s\"", next->stats_text);
	fail_restart(rl, &w, a, b, NULL);
}

/*
 * The worker threads, and what each one owns (its event loop, listeners,
 * RDMA resources, sessions), exist from the start: another count would
 * mean moving every session. Where the new file no longer sets the key,
 * the message is at the top.
 */
static void compare_workers(struct reload *rl)
{
	char a[16], b[16];
	struct conf_where w;

	if (rl->cur->workers == rl->next->workers)
		return;
	conf_where_member(&w, &rl->top, "workers");
	snprintf(a, sizeof(a), "%u", rl->cur->workers);
	snprintf(b, sizeof(b), "%u", rl->next->workers);
	fail_restart(rl, &w, a, b,
		     "each worker thread's event loop, listeners and sessions are set up at start");
}

bool gw_config_reloadable(const struct gw_config *cur, const struct gw_config *next,
			  unsigned *changes, struct gw_conf_errors *errs)
{
	struct reload rl = {
		.cur = cur,
		.next = next,
		.rep = { next->path, conf_private_of(next)->idx, errs },
	};
	size_t before = errs->total;

	conf_where_root(&rl.top);
	conf_where_member(&rl.routes, &rl.top, "routes");
	if (cur->log_level != next->log_level || cur->log_destination != next->log_destination)
		rl.changes |= GW_CHANGE_LOGGING;
	if (cur->drain_timeout_ms != next->drain_timeout_ms ||
	    cur->drain_delay_ms != next->drain_delay_ms)
		rl.changes |= GW_CHANGE_TIMEOUTS;
	if (cur->max_sessions != next->max_sessions ||
	    cur->stats_max_connections != next->stats_max_connections)
		rl.changes |= GW_CHANGE_LIMITS;
	compare_workers(&rl);
	compare_stats(&rl);
	compare_routes(&rl);
	conf_errors_sort(errs);
	*changes = rl.changes;
	return errs->total == before;
}
