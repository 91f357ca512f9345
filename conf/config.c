/* SPDX-License-Identifier: MIT */
/*
 * conf/config.c - loading a configuration file: the document, logging,
 * stats, defaults, routes, and the checks that span several routes.
 *
 * Loading never stops at the first mistake: each value that is wrong is
 * reported and loading goes on with the built-in default in its place, so
 * that one run of --check shows everything. Values that depend on a wrong
 * one (the scheme of a listen address when the mode is unknown) are
 * checked less strictly rather than reported twice.
 */
#include "conf/conf_priv.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* A configuration is a few kilobytes; anything this large is the wrong file. */
enum { CONF_FILE_MAX = 4 * 1024 * 1024 };

static const char *const top_keys[] = {
	"routes",	 "defaults",	 "logging", "stats",	   "drain_timeout_s",
	"drain_delay_s", "max_sessions", "workers", "qos_classes", "comment",
};
static const char *const logging_keys[] = { "level", "destination", "comment" };
static const char *const stats_keys[] = { "enabled", "listen", "max_connections", "comment" };
/* Only in routes: never inherited, so never in "defaults". */
static const char *const route_only_keys[] = { "name", "mode", "listen", "upstream" };
/* Only in routes too, but optional: the quality-of-service classes a route applies. */
static const char *const route_qos_keys[] = { "qos", "qos_default" };

static const char *const mode_names[] = {
	[GW_MODE_FORWARD] = "forward",
	[GW_MODE_REVERSE] = "reverse",
};
static const char *const log_level_names[] = {
	[GW_LOG_ERR] = "error",
	[GW_LOG_WARN] = "warning",
	[GW_LOG_INFO] = "info",
	[GW_LOG_DEBUG] = "debug",
};
static const char *const log_destination_names[] = {
	[GW_LOG_TO_STDERR] = "stderr",
	[GW_LOG_TO_SYSLOG] = "syslog",
};

static const char stats_default_listen[] = "127.0.0.1:9464";

/* Shaped as a route option so that it is read and described the same way. */
static const struct conf_option drain_timeout = {
	.name = "drain_timeout_s",
	.type = CONF_OPT_SECONDS,
	.offset = offsetof(struct gw_config, drain_timeout_ms),
	.min = 0,
	.max = 3600000,
	.step = 1,
	.def = 30000,
	.reload = CONF_RELOAD_LIVE,
	.change = GW_CHANGE_TIMEOUTS,
};

/*
 * Behind a load balancer (IPVS, docs/operations.md): after SIGTERM the
 * gateway goes on listening and relaying for this long while /healthz says
 * "draining", so that the director has taken it out before its listeners
 * close and its clients' reconnections find another gateway.
 */
static const struct conf_option drain_delay = {
	.name = "drain_delay_s",
	.type = CONF_OPT_SECONDS,
	.offset = offsetof(struct gw_config, drain_delay_ms),
	.min = 0,
	.max = 600000,
	.step = 1,
	.def = 0,
	.reload = CONF_RELOAD_LIVE,
	.change = GW_CHANGE_TIMEOUTS,
};

/*
 * Sessions over all routes: each holds registered buffers and, in forward
 * mode, a reserved source port and an RDMA connection at the server.
 */
static const struct conf_option process_max_sessions = {
	.name = "max_sessions",
	.type = CONF_OPT_UINT,
	.offset = offsetof(struct gw_config, max_sessions),
	.min = 1,
	.max = 1048576,
	.step = 1,
	.def = 4096,
	.reload = CONF_RELOAD_LIVE,
	.change = GW_CHANGE_LIMITS,
};

/*
 * Worker threads, each with its own event loop, RDMA resources and
 * sessions. 0 is "auto": the engine takes one per online CPU, capped at
 * GW_WORKERS_MAX and at the RDMA device's completion vectors.
 */
static const struct conf_option workers = {
	.name = "workers",
	.type = CONF_OPT_UINT,
	.offset = offsetof(struct gw_config, workers),
	.min = 0,
	.max = GW_WORKERS_MAX,
	.step = 1,
	.def = GW_WORKERS_AUTO,
	.reload = CONF_RELOAD_RESTART, /* conf/reload.c: compare_workers() */
};
/* conf_load_number() stores a uint32_t. */
_Static_assert(sizeof(((struct gw_config *)0)->workers) == sizeof(uint32_t),
	       "workers is loaded as a uint32_t");

/* HTTP connections to the stats endpoint at once. */
static const struct conf_option stats_max_connections = {
	.name = "max_connections",
	.type = CONF_OPT_UINT,
	.offset = offsetof(struct gw_config, stats_max_connections),
	.min = 1,
	.max = 4096,
	.step = 1,
	.def = 32,
	.reload = CONF_RELOAD_LIVE,
	.change = GW_CHANGE_LIMITS,
};

static bool name_in(const char *name, const char *const *list, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (strcmp(name, list[i]) == 0)
			return true;
	}
	return false;
}

static bool is_option(const char *name)
{
	for (size_t i = 0; i < conf_options_count; i++) {
		if (strcmp(name, conf_options[i].name) == 0)
			return true;
	}
	return false;
}

/* ---- members ------------------------------------------------------------- */

enum { KNOWN_MAX = 64 };

/*
 * The keys of "defaults" (the options and "comment"), or of a route (the
 * required keys too), for check_members(). Returns how many were put in @known.
 */
static size_t option_names(const char **known, bool route)
{
	size_t n = 0;

	if (route) {
		for (size_t i = 0; i < CONF_ARRAY_SIZE(route_only_keys); i++)
			known[n++] = route_only_keys[i];
		for (size_t i = 0; i < CONF_ARRAY_SIZE(route_qos_keys); i++)
			known[n++] = route_qos_keys[i];
	}
	for (size_t i = 0; i < conf_options_count && n + 1 < KNOWN_MAX; i++)
		known[n++] = conf_options[i].name;
	known[n++] = "comment";
	return n;
}

/* The kinds of object, for hints about keys put in the wrong one. */
enum object_kind { OBJ_TOP, OBJ_DEFAULTS, OBJ_ROUTE, OBJ_LOGGING, OBJ_STATS };

/*
 * A key that is right, only in another object: say where it belongs.
 * ("comment", known everywhere, never gets here.)
 */
static const char *misplaced_hint(enum object_kind kind, const char *name)
{
	bool route_only = name_in(name, route_only_keys, CONF_ARRAY_SIZE(route_only_keys)) ||
			  name_in(name, route_qos_keys, CONF_ARRAY_SIZE(route_qos_keys));

	if (kind == OBJ_TOP && is_option(name))
		return "it is a route key: set it in \"defaults\" or in a route";
	if (kind == OBJ_TOP && route_only)
		return "it is a route key: set it in each route";
	if (kind == OBJ_TOP && name_in(name, logging_keys, CONF_ARRAY_SIZE(logging_keys)))
		return "it belongs in \"logging\"";
	if (kind == OBJ_DEFAULTS && route_only)
		return "it cannot have a default: set it in each route";
	if ((kind == OBJ_ROUTE || kind == OBJ_DEFAULTS) &&
	    name_in(name, top_keys, CONF_ARRAY_SIZE(top_keys)))
		return "it is a top-level key";
	return NULL;
}

/*
 * Objects with at most this many keys list them when one is unknown: the
 * top level (ten) does; routes and "defaults" (dozens) point to the docs.
 */
enum { SHORT_KEY_LIST = 12 };

static void fail_unknown_listing(const struct conf_report *rep, const struct conf_where *kw,
				 const char *const *known, size_t n)
{
	char choices[160];

	conf_format_choices(known, n, choices, sizeof(choices));
	conf_fail(rep, kw, CONF_AT_KEY, "unknown key; expected %s", choices);
}

/*
 * Every member of @obj must be one of @known: a misspelled key would
 * otherwise be a setting silently not applied. "comment" is known
 * everywhere, and must be a string.
 */
static void check_members(const struct conf_report *rep, const struct conf_where *w, json_t *obj,
			  enum object_kind kind, const char *const *known, size_t n)
{
	for (void *it = json_object_iter(obj); it; it = json_object_iter_next(obj, it)) {
		const char *key = json_object_iter_key(it);
		json_t *v = json_object_iter_value(it);
		struct conf_where kw;
		const char *hint;

		conf_where_member(&kw, w, key);
		if (strcmp(key, "comment") == 0) {
			if (!json_is_string(v)) {
				char got[96];
				conf_describe(v, got, sizeof(got));
				conf_fail(rep, &kw, CONF_AT_VALUE, "expected a string, got %s",
					  got);
			}
			continue;
		}
		if (name_in(key, known, n))
			continue;
		if ((hint = misplaced_hint(kind, key)))
			conf_fail(rep, &kw, CONF_AT_KEY, "unknown key here; %s", hint);
		else if ((hint = conf_suggest(key, known, n)))
			conf_fail(rep, &kw, CONF_AT_KEY, "unknown key; did you mean \"%s\"?", hint);
		else if (n <= SHORT_KEY_LIST)
			fail_unknown_listing(rep, &kw, known, n);
		else
			conf_fail(rep, &kw, CONF_AT_KEY,
				  "unknown key; the keys are listed in docs/configuration.md");
	}
}

/* The member @name of @obj if it is an object; otherwise NULL, reported. */
static json_t *object_member(const struct conf_report *rep, const struct conf_where *parent,
			     json_t *obj, const char *name, struct conf_where *w)
{
	json_t *v = json_object_get(obj, name);
	char got[96];

	conf_where_member(w, parent, name);
	if (!v || json_is_object(v))
		return v;
	conf_describe(v, got, sizeof(got));
	conf_fail(rep, w, CONF_AT_VALUE, "expected an object, got %s", got);
	return NULL;
}

static void fail_missing(const struct conf_report *rep, const struct conf_where *w,
			 const char *expect)
{
	conf_fail(rep, w, CONF_AT_VALUE, "required key is missing; expected %s", expect);
}

/* ---- logging, stats, drain ----------------------------------------------- */

static void load_logging(const struct conf_report *rep, const struct conf_where *top, json_t *root,
			 struct gw_config *cfg)
{
	struct conf_where w, mw;
	json_t *obj, *v;
	unsigned i;

	cfg->log_level = GW_LOG_INFO;
	cfg->log_destination = GW_LOG_TO_STDERR;
	obj = object_member(rep, top, root, "logging", &w);
	if (!obj)
		return;
	check_members(rep, &w, obj, OBJ_LOGGING, logging_keys, CONF_ARRAY_SIZE(logging_keys));
	if ((v = json_object_get(obj, "level"))) {
		conf_where_member(&mw, &w, "level");
		if (conf_load_enum(rep, &mw, v, log_level_names, CONF_ARRAY_SIZE(log_level_names),
				   &i))
			cfg->log_level = (enum gw_log_level)i;
	}
	if ((v = json_object_get(obj, "destination"))) {
		conf_where_member(&mw, &w, "destination");
		if (conf_load_enum(rep, &mw, v, log_destination_names,
				   CONF_ARRAY_SIZE(log_destination_names), &i))
			cfg->log_destination = (enum gw_log_destination)i;
	}
}

static void load_stats(const struct conf_report *rep, const struct conf_where *top, json_t *root,
		       struct gw_config *cfg)
{
	struct conf_where w, mw;
	const char *text = stats_default_listen;
	struct conf_why why;
	json_t *obj, *v;
	char got[96];

	cfg->stats_enabled = true;
	cfg->stats_max_connections = stats_max_connections.def;
	obj = object_member(rep, top, root, "stats", &w);
	if (obj) {
		check_members(rep, &w, obj, OBJ_STATS, stats_keys, CONF_ARRAY_SIZE(stats_keys));
		if ((v = json_object_get(obj, stats_max_connections.name))) {
			conf_where_member(&mw, &w, stats_max_connections.name);
			conf_load_number(rep, &mw, v, &stats_max_connections, cfg);
		}
		if ((v = json_object_get(obj, "enabled"))) {
			conf_where_member(&mw, &w, "enabled");
			if (json_is_boolean(v)) {
				cfg->stats_enabled = json_is_true(v);
			} else {
				conf_describe(v, got, sizeof(got));
				conf_fail(rep, &mw, CONF_AT_VALUE, "expected true or false, got %s",
					  got);
			}
		}
		if ((v = json_object_get(obj, "listen"))) {
			conf_where_member(&mw, &w, "listen");
			text = json_string_value(v);
			if (!text) {
				conf_describe(v, got, sizeof(got));
				conf_fail(rep, &mw, CONF_AT_VALUE, "expected \"HOST:PORT\", got %s",
					  got);
				return;
			}
		}
	}
	conf_where_member(&mw, &w, "listen");
	if (!conf_parse_host_port(text, &cfg->stats_addr, &cfg->stats_addrlen, &why)) {
		conf_describe(json_object_get(obj, "listen"), got, sizeof(got));
		conf_fail(rep, &mw, CONF_AT_VALUE, "expected %s, got %s%s%s%s", why.expect, got,
			  why.detail[0] ? " (" : "", why.detail, why.detail[0] ? ")" : "");
		return;
	}
	cfg->stats_text = strdup(text);
	if (!cfg->stats_text)
		conf_fail(rep, &mw, CONF_AT_VALUE, "out of memory");
}

/* ---- routes ---------------------------------------------------------------- */

static bool name_char_ok(char c, bool first)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       (!first && (c == '.' || c == '_' || c == '-'));
}

/*
 * Route names appear in log lines and as labels of the stats endpoint:
 * keep them to characters that need no quoting in either.
 */
static bool route_name_ok(const char *s)
{
	size_t n = strlen(s);

	if (n == 0 || n > 32)
		return false;
	for (size_t i = 0; i < n; i++) {
		if (!name_char_ok(s[i], i == 0))
			return false;
	}
	return true;
}

static void load_route_name(const struct conf_report *rep, const struct conf_where *rw, json_t *obj,
			    struct gw_route *r)
{
	static const char expect[] = "a name of 1..32 letters, digits, '.', '_' or '-', "
				     "starting with a letter or digit";
	json_t *v = json_object_get(obj, "name");
	struct conf_where w;
	char got[96];

	conf_where_member(&w, rw, "name");
	if (!v) {
		fail_missing(rep, &w, expect);
		return;
	}
	if (!json_is_string(v) || !route_name_ok(json_string_value(v))) {
		conf_describe(v, got, sizeof(got));
		conf_fail(rep, &w, CONF_AT_VALUE, "expected %s, got %s", expect, got);
		return;
	}
	r->name = strdup(json_string_value(v));
	if (!r->name)
		conf_fail(rep, &w, CONF_AT_VALUE, "out of memory");
}

static bool load_route_mode(const struct conf_report *rep, const struct conf_where *rw, json_t *obj,
			    struct gw_route *r)
{
	json_t *v = json_object_get(obj, "mode");
	struct conf_where w;
	unsigned i;

	conf_where_member(&w, rw, "mode");
	if (!v) {
		fail_missing(rep, &w, "\"forward\" or \"reverse\"");
		return false;
	}
	if (!conf_load_enum(rep, &w, v, mode_names, CONF_ARRAY_SIZE(mode_names), &i))
		return false;
	r->mode = (enum gw_route_mode)i;
	return true;
}

/* Which transport a mode puts on each side. */
static enum gw_transport mode_transport(enum gw_route_mode mode, bool upstream)
{
	bool tcp_side = mode == GW_MODE_FORWARD ? !upstream : upstream;

	return tcp_side ? GW_TRANSPORT_TCP : GW_TRANSPORT_RDMA;
}

/*
 * listen or upstream. With a known mode the scheme must be the one the
 * mode puts on that side; with a wrong or missing mode (already
 * reported) either scheme passes, so the address itself is still checked.
 */
static void load_route_endpoint(const struct conf_report *rep, const struct conf_where *rw,
				json_t *obj, bool mode_known, struct gw_route *r, bool upstream)
{
	const char *key = upstream ? "upstream" : "listen";
	struct gw_endpoint *ep = upstream ? &r->upstream : &r->listen;
	json_t *v = json_object_get(obj, key);
	char expect[96], got[96];
	enum gw_transport want = GW_TRANSPORT_TCP, have;
	struct conf_where w;
	struct conf_why why;
	const char *text;

	conf_where_member(&w, rw, key);
	if (mode_known) {
		want = mode_transport(r->mode, upstream);
		snprintf(expect, sizeof(expect), "\"%s://HOST:PORT\" for a %s route",
			 want == GW_TRANSPORT_TCP ? "tcp" : "rdma", mode_names[r->mode]);
	} else {
		snprintf(expect, sizeof(expect), "\"tcp://HOST:PORT\" or \"rdma://HOST:PORT\"");
	}
	if (!v) {
		fail_missing(rep, &w, expect);
		return;
	}
	conf_describe(v, got, sizeof(got));
	text = json_string_value(v);
	if (!text || !conf_url_transport(text, &have) || (mode_known && have != want)) {
		conf_fail(rep, &w, CONF_AT_VALUE, "expected %s, got %s", expect, got);
		return;
	}
	if (!conf_parse_url(text, upstream, ep, &why)) {
		conf_fail(rep, &w, CONF_AT_VALUE, "expected %s, got %s%s%s%s", why.expect, got,
			  why.detail[0] ? " (" : "", why.detail, why.detail[0] ? ")" : "");
		return;
	}
	ep->text = strdup(text);
	if (!ep->text)
		conf_fail(rep, &w, CONF_AT_VALUE, "out of memory");
}

/*
 * A message that fits inline is also a whole record on the TCP side, so
 * the record limit may not be below either inline size. Reported where
 * the object (a route or "defaults") sets one of the three; a route that
 * sets none inherits a pair already checked in "defaults".
 */
static void check_record_size(const struct conf_report *rep, const struct conf_where *w,
			      json_t *obj, const struct gw_route *r)
{
	static const char *const inline_keys[] = { "inline_send_size", "inline_receive_size" };
	const uint32_t inline_vals[] = { r->inline_send_size, r->inline_receive_size };
	uint32_t biggest = inline_vals[0] > inline_vals[1] ? inline_vals[0] : inline_vals[1];
	struct conf_where kw;

	if (r->max_record_size >= biggest)
		return;
	if (json_object_get(obj, "max_record_size")) {
		conf_where_member(&kw, w, "max_record_size");
		conf_fail(rep, &kw, CONF_AT_VALUE,
			  "expected at least the inline sizes (%u), got %u", biggest,
			  r->max_record_size);
		return;
	}
	for (size_t i = 0; i < 2; i++) {
		if (inline_vals[i] > r->max_record_size && json_object_get(obj, inline_keys[i])) {
			conf_where_member(&kw, w, inline_keys[i]);
			conf_fail(rep, &kw, CONF_AT_VALUE,
				  "expected at most max_record_size (%u), got %u",
				  r->max_record_size, inline_vals[i]);
		}
	}
}

/*
 * The portmapper advertises the route's listen address, and binds port 111
 * on it alone so that a host rpcbind may keep its other addresses: one
 * address, then (a route on the wildcard registers with the host's rpcbind
 * instead, gateway/side/side_route.h). Reported at the listen address, where the fix goes, also
 * when portmapper_port comes from "defaults".
 */
static void check_side_services(const struct conf_report *rep, const struct conf_where *w,
				const struct gw_route *r)
{
	struct conf_where lw;

	if (!r->portmapper_port || !r->listen.text || !gw_addr_is_wildcard(&r->listen.addr))
		return;
	conf_where_member(&lw, w, "listen");
	conf_fail(rep, &lw, CONF_AT_VALUE,
		  "expected one address on a route with portmapper_port %u, got \"%s\", the "
		  "wildcard (the portmapper advertises the address and binds port %u on it "
		  "alone; on the wildcard, leave portmapper_port out: the route registers "
		  "with the host's rpcbind)",
		  r->portmapper_port, r->listen.text, r->portmapper_port);
}

/*
 * One client's share of the NLM relay's owners or locks cannot be more
 * than the whole (gateway/side/nlm/nlm_state.c refuses such limits, and the route
 * would not start): a larger share, set or the built-in default under a
 * lower total, is the total, i.e. no cap per client beyond it. Not an
 * error, so that each key may be set alone to any value of its range.
 */
static void clamp_nlm_shares(struct gw_route *r)
{
	if (r->nlm_max_clients_per_prefix > r->nlm_max_clients)
		r->nlm_max_clients_per_prefix = r->nlm_max_clients;
	if (r->nlm_max_owners_per_client > r->nlm_max_owners)
		r->nlm_max_owners_per_client = r->nlm_max_owners;
	if (r->nlm_max_locks_per_client > r->nlm_max_locks)
		r->nlm_max_locks_per_client = r->nlm_max_locks;
	if (r->nlm_async_max_pending_per_client > r->nlm_async_max_pending)
		r->nlm_async_max_pending_per_client = r->nlm_async_max_pending;
}

/*
 * A Version Two peer that sends no RFC 8797 private data may send 4096-byte
 * messages (the draft's section 2.3): a receive buffer below that would
 * take such a peer's calls for protocol violations. Reported where the
 * object sets one of the two keys; a route that sets neither inherits a
 * pair checked in "defaults".
 */
static void check_v2_inline(const struct conf_report *rep, const struct conf_where *w, json_t *obj,
			    const struct gw_route *r)
{
	struct conf_where kw;

	if (r->max_rpcrdma_version < 2 || r->inline_receive_size >= 4096)
		return;
	if (json_object_get(obj, "inline_receive_size")) {
		conf_where_member(&kw, w, "inline_receive_size");
		conf_fail(rep, &kw, CONF_AT_VALUE,
			  "expected at least 4096 with max_rpcrdma_version %u (a Version Two peer "
			  "without RFC 8797 private data sends 4096-byte messages), got %u",
			  r->max_rpcrdma_version, r->inline_receive_size);
	} else if (json_object_get(obj, "max_rpcrdma_version")) {
		conf_where_member(&kw, w, "max_rpcrdma_version");
		conf_fail(rep, &kw, CONF_AT_VALUE,
			  "expected 1 with inline_receive_size %u, got %u (a Version Two peer "
			  "without RFC 8797 private data sends 4096-byte messages)",
			  r->inline_receive_size, r->max_rpcrdma_version);
	}
}

/*
 * client_reserved_port judges a TCP client's port: a reverse route's
 * clients are RDMA peers, which have none. Reported where the route sets
 * it (set in "defaults" it is for the forward routes).
 */
static void check_reserved_port(const struct conf_report *rep, const struct conf_where *w,
				json_t *obj, const struct gw_route *r)
{
	struct conf_where kw;

	if (r->mode != GW_MODE_REVERSE || !r->client_reserved_port ||
	    !json_object_get(obj, "client_reserved_port"))
		return;
	conf_where_member(&kw, w, "client_reserved_port");
	conf_fail(rep, &kw, CONF_AT_KEY,
		  "a reverse route's clients are RDMA peers, which have no port: remove the "
		  "key (it judges forward routes' TCP clients)");
}

static void load_route(const struct conf_report *rep, const struct conf_where *w, json_t *obj,
		       const struct gw_route *defaults, const char *base,
		       const struct gw_config *cfg, struct gw_route *r)
{
	const char *known[KNOWN_MAX];
	char got[96];
	bool mode_known;

	if (!json_is_object(obj)) {
		conf_describe(obj, got, sizeof(got));
		conf_fail(rep, w, CONF_AT_VALUE,
			  "expected a route object with \"name\", \"mode\", \"listen\" and "
			  "\"upstream\", got %s",
			  got);
		return;
	}
	check_members(rep, w, obj, OBJ_ROUTE, known, option_names(known, true));
	if (!conf_route_copy_options(r, defaults)) {
		conf_fail(rep, w, CONF_AT_VALUE, "out of memory");
		return;
	}
	load_route_name(rep, w, obj, r);
	mode_known = load_route_mode(rep, w, obj, r);
	load_route_endpoint(rep, w, obj, mode_known, r, false);
	load_route_endpoint(rep, w, obj, mode_known, r, true);
	conf_load_options(rep, w, obj, base, r);
	conf_qos_load_route(rep, w, obj, cfg, r);
	check_reserved_port(rep, w, obj, r);
	check_record_size(rep, w, obj, r);
	check_v2_inline(rep, w, obj, r);
	check_side_services(rep, w, r);
	clamp_nlm_shares(r);
}

static void load_defaults(const struct conf_report *rep, const struct conf_where *top, json_t *root,
			  const char *base, struct gw_route *defaults)
{
	const char *known[KNOWN_MAX];
	struct conf_where w;
	json_t *obj;

	conf_route_init_defaults(defaults);
	obj = object_member(rep, top, root, "defaults", &w);
	if (!obj)
		return;
	check_members(rep, &w, obj, OBJ_DEFAULTS, known, option_names(known, false));
	conf_load_options(rep, &w, obj, base, defaults);
	check_record_size(rep, &w, obj, defaults);
	check_v2_inline(rep, &w, obj, defaults);
}

/* ---- checks across routes ------------------------------------------------ */

static void check_unique_names(const struct conf_report *rep, const struct conf_where *routes_w,
			       const struct gw_config *cfg)
{
	for (size_t j = 1; j < cfg->routes_count; j++) {
		for (size_t i = 0; i < j && cfg->routes[j].name; i++) {
			struct conf_where wi, wj, nw;

			if (!cfg->routes[i].name ||
			    strcmp(cfg->routes[i].name, cfg->routes[j].name) != 0)
				continue;
			conf_where_index(&wi, routes_w, i);
			conf_where_index(&wj, routes_w, j);
			conf_where_member(&nw, &wj, "name");
			conf_fail(rep, &nw, CONF_AT_VALUE,
				  "expected a unique route name, got \"%s\", already the name of "
				  "%s (line %d)",
				  cfg->routes[j].name, wi.key, conf_where_line(rep, &wi));
			break;
		}
	}
}

static bool listen_overlaps(const struct gw_endpoint *a, const struct gw_endpoint *b)
{
	return a->text && b->text && a->transport == b->transport &&
	       conf_listen_overlap(&a->addr, &b->addr);
}

static void fail_overlap(const struct conf_report *rep, const struct conf_where *w,
			 const char *text, const struct conf_where *other, const char *other_text)
{
	conf_fail(rep, w, CONF_AT_VALUE,
		  "expected an address and port of its own, got \"%s\", which overlaps %s (\"%s\", "
		  "line %d)",
		  text, other->key, other_text, conf_where_line(rep, other));
}

/*
 * Two listeners on one port would fail at bind time, after the other
 * routes started; catch it here, with both lines. RDMA and TCP listeners
 * are checked separately: rdma_cm has its own port space (on RoCE and
 * InfiniBand, which this gateway is for).
 */
static void check_listeners(const struct conf_report *rep, const struct conf_where *top,
			    const struct conf_where *routes_w, const struct gw_config *cfg)
{
	struct conf_where wi, wj, li, lj;

	for (size_t j = 0; j < cfg->routes_count; j++) {
		conf_where_index(&wj, routes_w, j);
		conf_where_member(&lj, &wj, "listen");
		for (size_t i = 0; i < j; i++) {
			if (!listen_overlaps(&cfg->routes[i].listen, &cfg->routes[j].listen))
				continue;
			conf_where_index(&wi, routes_w, i);
			conf_where_member(&li, &wi, "listen");
			fail_overlap(rep, &lj, cfg->routes[j].listen.text, &li,
				     cfg->routes[i].listen.text);
			break;
		}
	}
	if (!cfg->stats_enabled || !cfg->stats_text)
		return;
	for (size_t i = 0; i < cfg->routes_count; i++) {
		const struct gw_endpoint *ep = &cfg->routes[i].listen;
		struct conf_where sw, slw;

		if (!ep->text || ep->transport != GW_TRANSPORT_TCP ||
		    !conf_listen_overlap(&cfg->stats_addr, &ep->addr))
			continue;
		conf_where_member(&sw, top, "stats");
		conf_where_member(&slw, &sw, "listen");
		conf_where_index(&wi, routes_w, i);
		conf_where_member(&li, &wi, "listen");
		fail_overlap(rep, &slw, cfg->stats_text, &li, ep->text);
		break;
	}
}

static void load_routes(const struct conf_report *rep, const struct conf_where *top, json_t *root,
			const struct gw_route *defaults, const char *base, struct gw_config *cfg)
{
	json_t *routes = json_object_get(root, "routes");
	struct conf_where w, rw;
	json_t *item;
	size_t i;
	char got[96];

	conf_where_member(&w, top, "routes");
	if (!routes) {
		fail_missing(rep, &w, "an array of routes");
		return;
	}
	if (!json_is_array(routes) || json_array_size(routes) == 0) {
		conf_describe(routes, got, sizeof(got));
		conf_fail(rep, &w, CONF_AT_VALUE, "expected a non-empty array of routes, got %s",
			  got);
		return;
	}
	cfg->routes = calloc(json_array_size(routes), sizeof(*cfg->routes));
	if (!cfg->routes) {
		conf_fail(rep, &w, CONF_AT_VALUE, "out of memory");
		return;
	}
	cfg->routes_count = json_array_size(routes);
	for (i = 0; i < json_array_size(routes); i++) {
		item = json_array_get(routes, i);
		conf_where_index(&rw, &w, i);
		load_route(rep, &rw, item, defaults, base, cfg, &cfg->routes[i]);
	}
	check_unique_names(rep, &w, cfg);
	check_listeners(rep, top, &w, cfg);
}

static void load_document(const struct conf_report *rep, json_t *root, const char *base,
			  struct gw_config *cfg)
{
	struct gw_route defaults = { 0 };
	struct conf_where top, w;
	json_t *v;
	char got[96];

	conf_where_root(&top);
	if (!json_is_object(root)) {
		conf_describe(root, got, sizeof(got));
		conf_fail(rep, &top, CONF_AT_VALUE,
			  "expected an object with a \"routes\" array, got %s", got);
		return;
	}
	check_members(rep, &top, root, OBJ_TOP, top_keys, CONF_ARRAY_SIZE(top_keys));
	load_logging(rep, &top, root, cfg);
	load_stats(rep, &top, root, cfg);
	cfg->drain_timeout_ms = drain_timeout.def;
	if ((v = json_object_get(root, drain_timeout.name))) {
		conf_where_member(&w, &top, drain_timeout.name);
		conf_load_number(rep, &w, v, &drain_timeout, cfg);
	}
	cfg->drain_delay_ms = drain_delay.def;
	if ((v = json_object_get(root, drain_delay.name))) {
		conf_where_member(&w, &top, drain_delay.name);
		conf_load_number(rep, &w, v, &drain_delay, cfg);
	}
	cfg->max_sessions = process_max_sessions.def;
	if ((v = json_object_get(root, process_max_sessions.name))) {
		conf_where_member(&w, &top, process_max_sessions.name);
		conf_load_number(rep, &w, v, &process_max_sessions, cfg);
	}
	cfg->workers = workers.def;
	if ((v = json_object_get(root, workers.name))) {
		conf_where_member(&w, &top, workers.name);
		conf_load_number(rep, &w, v, &workers, cfg);
	}
	conf_qos_load_classes(rep, &top, root, cfg);
	load_defaults(rep, &top, root, base, &defaults);
	load_routes(rep, &top, root, &defaults, base, cfg);
	conf_route_release(&defaults);
}

/* ---- entry points ---------------------------------------------------------- */

/* The absolute directory of @path, for rule files; NULL when it does not exist. */
static char *base_dir(const char *path)
{
	const char *slash = strrchr(path, '/');
	char *dir, *abs;

	if (!slash)
		return realpath(".", NULL);
	dir = slash == path ? strdup("/") : strndup(path, (size_t)(slash - path));
	if (!dir)
		return NULL;
	abs = realpath(dir, NULL);
	free(dir);
	return abs;
}

static void conf_private_free(struct conf_private *cp)
{
	for (size_t i = 0; i < cp->pub.routes_count; i++)
		conf_route_release(&cp->pub.routes[i]);
	free(cp->pub.routes);
	conf_qos_release(cp->pub.qos_classes, cp->pub.qos_classes_count);
	free(cp->pub.path);
	free(cp->pub.stats_text);
	json_pos_index_free(cp->idx);
	free(cp);
}

void gw_config_free(const struct gw_config *cfg)
{
	if (cfg)
		conf_private_free(conf_private_of(cfg));
}

static int clamp_pos(int v)
{
	return v < 1 ? 1 : v;
}

const struct gw_config *gw_config_parse(const char *path, const char *text, size_t len,
					struct gw_conf_errors *errs)
{
	size_t before = errs->total;
	struct conf_private *cp;
	struct conf_report rep;
	json_error_t jerr;
	json_t *root;
	char *base;

	/*
	 * Some editors start UTF-8 files with a byte order mark. RFC 8259
	 * lets a parser ignore it, and an editor does not count it as a
	 * column, so it is skipped before jansson and the index see the text.
	 */
	if (len >= 3 && memcmp(text, "\xef\xbb\xbf", 3) == 0) {
		text += 3;
		len -= 3;
	}
	root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &jerr);
	if (!root) {
		/* jansson's column is that of the last character it read. */
		conf_fail_at(errs, path, clamp_pos(jerr.line), clamp_pos(jerr.column),
			     "JSON syntax error: %s", jerr.text);
		return NULL;
	}
	cp = calloc(1, sizeof(*cp));
	if (!cp || !(cp->pub.path = strdup(path))) {
		conf_fail_at(errs, path, 0, 0, "out of memory");
		free(cp);
		json_decref(root);
		return NULL;
	}
	/* Without the index (out of memory, or nesting deeper than it
	 * follows) errors are still reported, at 1:1. */
	cp->idx = json_pos_index_build(text, len);
	rep = (struct conf_report){ path, cp->idx, errs };
	base = base_dir(path);
	load_document(&rep, root, base, &cp->pub);
	free(base);
	json_decref(root);
	conf_errors_sort(errs);
	if (errs->total != before) {
		conf_private_free(cp);
		return NULL;
	}
	return &cp->pub;
}

/* The whole file, NUL-terminated, or NULL with errno set. */
static char *read_file(const char *path, size_t *len)
{
	struct stat st;
	char *buf = NULL;
	size_t got = 0;
	int fd, err;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	if (fstat(fd, &st) != 0)
		goto fail;
	if (!S_ISREG(st.st_mode)) {
		errno = EINVAL;
		goto fail;
	}
	if (st.st_size > CONF_FILE_MAX) {
		errno = EFBIG;
		goto fail;
	}
	buf = malloc((size_t)st.st_size + 1);
	if (!buf)
		goto fail;
	while (got < (size_t)st.st_size) {
		ssize_t n = read(fd, buf + got, (size_t)st.st_size - got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			goto fail;
		if (n == 0)
			break; /* shrank while we read: take what is there */
		got += (size_t)n;
	}
	buf[got] = '\0';
	*len = got;
	close(fd);
	return buf;
fail:
	err = errno;
	free(buf);
	close(fd);
	errno = err;
	return NULL;
}

const struct gw_config *gw_config_load(const char *path, struct gw_conf_errors *errs)
{
	const struct gw_config *cfg;
	size_t len = 0;
	char *text = read_file(path, &len);

	if (!text) {
		if (errno == EINVAL)
			conf_fail_at(errs, path, 0, 0, "cannot read: not a regular file");
		else if (errno == EFBIG)
			conf_fail_at(errs, path, 0, 0, "cannot read: larger than %d bytes",
				     CONF_FILE_MAX);
		else
			conf_fail_at(errs, path, 0, 0, "cannot read: %s", strerror(errno));
		return NULL;
	}
	cfg = gw_config_parse(path, text, len, errs);
	free(text);
	return cfg;
}

const char *gw_route_mode_name(enum gw_route_mode mode)
{
	return (unsigned)mode < CONF_ARRAY_SIZE(mode_names) ? mode_names[mode] : "?";
}

const struct gw_route *gw_config_route(const struct gw_config *cfg, const char *name)
{
	for (size_t i = 0; i < cfg->routes_count; i++) {
		if (strcmp(cfg->routes[i].name, name) == 0)
			return &cfg->routes[i];
	}
	return NULL;
}

/* ---- the schema, for the manual page's test (conf_priv.h) ---------------- */

static void schema_put(struct conf_key_info *out, size_t max, size_t *n,
		       const struct conf_key_info *k)
{
	if (*n < max)
		out[*n] = *k;
	(*n)++;
}

/* What a key outside the route options is, by the object it is in and its name. */
static void schema_describe(struct conf_key_info *k, const char *scope, const char *name)
{
	static const char *const objects[] = { "defaults", "logging", "stats", "qos_classes" };

	k->has_reload = true;
	k->reload = CONF_RELOAD_RESTART;
	if (strcmp(name, "comment") == 0) {
		k->kind = "comment";
		k->has_reload = false;
	} else if (!scope[0] && strcmp(name, "routes") == 0) {
		k->kind = "routes";
		k->required = true;
		k->has_reload = false;
	} else if (!scope[0] && name_in(name, objects, CONF_ARRAY_SIZE(objects))) {
		k->kind = "object";
		k->has_reload = false;
	} else if (!scope[0] && strcmp(name, drain_timeout.name) == 0) {
		k->opt = &drain_timeout;
	} else if (!scope[0] && strcmp(name, drain_delay.name) == 0) {
		k->opt = &drain_delay;
	} else if (!scope[0] && strcmp(name, process_max_sessions.name) == 0) {
		k->opt = &process_max_sessions;
	} else if (!scope[0] && strcmp(name, workers.name) == 0) {
		k->opt = &workers;
	} else if (strcmp(scope, "logging") == 0 && strcmp(name, "level") == 0) {
		k->kind = "enum";
		k->choices = log_level_names;
		k->nchoices = CONF_ARRAY_SIZE(log_level_names);
		k->def = log_level_names[GW_LOG_INFO];
		k->reload = CONF_RELOAD_LIVE;
	} else if (strcmp(scope, "logging") == 0 && strcmp(name, "destination") == 0) {
		k->kind = "enum";
		k->choices = log_destination_names;
		k->nchoices = CONF_ARRAY_SIZE(log_destination_names);
		k->def = log_destination_names[GW_LOG_TO_STDERR];
		k->reload = CONF_RELOAD_LIVE;
	} else if (strcmp(scope, "stats") == 0 && strcmp(name, "enabled") == 0) {
		k->kind = "boolean";
		k->def = "true";
	} else if (strcmp(scope, "stats") == 0 && strcmp(name, "listen") == 0) {
		k->kind = "host_port";
		k->def = stats_default_listen;
	} else if (strcmp(scope, "stats") == 0 && strcmp(name, stats_max_connections.name) == 0) {
		k->opt = &stats_max_connections;
	} else if (strcmp(scope, "routes[]") == 0 && strcmp(name, "name") == 0) {
		k->kind = "string";
		k->required = true;
	} else if (strcmp(scope, "routes[]") == 0 && strcmp(name, "mode") == 0) {
		k->kind = "enum";
		k->choices = mode_names;
		k->nchoices = CONF_ARRAY_SIZE(mode_names);
		k->required = true;
	} else if (strcmp(scope, "routes[]") == 0 && strcmp(name, "qos") == 0) {
		k->kind = "class_names";
		k->reload = CONF_RELOAD_RESTART;
	} else if (strcmp(scope, "routes[]") == 0 && strcmp(name, "qos_default") == 0) {
		k->kind = "class_name";
		k->reload = CONF_RELOAD_RESTART;
	} else if (strcmp(scope, "routes[]") == 0) {
		k->kind = "url"; /* listen, upstream */
		k->required = true;
	}
	/* Anything else is a key added to a table and not here: kind stays NULL. */
	if (k->opt)
		k->reload = k->opt->reload;
}

static void schema_list(struct conf_key_info *out, size_t max, size_t *n, const char *scope,
			const char *const *names, size_t count)
{
	for (size_t i = 0; i < count; i++) {
		struct conf_key_info k = { 0 };

		/* "comment" is known in every object; the top level documents it. */
		if (scope[0] && strcmp(names[i], "comment") == 0)
			continue;
		snprintf(k.key, sizeof(k.key), "%s%s%s", scope, scope[0] ? "." : "", names[i]);
		schema_describe(&k, scope, names[i]);
		schema_put(out, max, n, &k);
	}
}

size_t conf_schema_keys(struct conf_key_info *out, size_t max)
{
	size_t n = 0;

	schema_list(out, max, &n, "", top_keys, CONF_ARRAY_SIZE(top_keys));
	schema_list(out, max, &n, "logging", logging_keys, CONF_ARRAY_SIZE(logging_keys));
	schema_list(out, max, &n, "stats", stats_keys, CONF_ARRAY_SIZE(stats_keys));
	schema_list(out, max, &n, "routes[]", route_only_keys, CONF_ARRAY_SIZE(route_only_keys));
	schema_list(out, max, &n, "routes[]", route_qos_keys, CONF_ARRAY_SIZE(route_qos_keys));
	conf_qos_schema(out, max, &n);
	for (size_t i = 0; i < conf_options_count; i++) {
		const struct conf_option *opt = &conf_options[i];
		struct conf_key_info k = { .opt = opt, .has_reload = true, .reload = opt->reload };

		snprintf(k.key, sizeof(k.key), "routes[].%s", opt->name);
		if (opt->type == CONF_OPT_CIDRS)
			k.def = "every client";
		else if (opt->type == CONF_OPT_PATHS)
			k.def = "the stock rules alone";
		else if (opt->type == CONF_OPT_DIR)
			k.def = "$STATE_DIRECTORY, else /var/lib/rpcrdma-gw";
		else if (opt->type == CONF_OPT_SOURCE_PORT)
			k.choices = conf_source_port_names(&k.nchoices);
		else if (opt->type == CONF_OPT_BOOL) {
			k.kind = "boolean";
			k.def = opt->def ? "true" : "false";
		}
		schema_put(out, max, &n, &k);
	}
	return n;
}
