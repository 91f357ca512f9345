/* SPDX-License-Identifier: MIT */
/*
 * conf/qos.c - quality-of-service classes ("qos_classes") and the route
 * keys that apply them ("qos", "qos_default"): loading, checking, copying
 * into routes, and what SIGHUP may change.
 */
#include "conf/conf_priv.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The keys of a class; the schema and the manual page list the same. */
static const char *const class_keys[] = {
	"clients",	  "program",	   "procedures", "calls_per_s", "to_server_mb_s",
	"to_client_mb_s", "max_in_flight", "burst_s",	 "comment",
};

static const char *const procs_names[] = {
	[GW_QOS_PROCS_ANY] = "any",
	[GW_QOS_PROCS_READS] = "reads",
	[GW_QOS_PROCS_WRITES] = "writes",
	[GW_QOS_PROCS_METADATA] = "metadata",
};

#define CLASS_FIELD(f) offsetof(struct gw_qos_class, f)

/* Shaped as route options, so that they are read and described the same way. */
static const struct conf_option class_program = {
	.name = "program",
	.type = CONF_OPT_UINT,
	.offset = CLASS_FIELD(program),
	.min = 1,
	.max = UINT32_MAX,
	.step = 1,
	.def = 0,
	.reload = CONF_RELOAD_RESTART,
	.restart_why = "a class's match is compiled into each route's list at start",
};
static const struct conf_option class_calls = {
	.name = "calls_per_s",
	.type = CONF_OPT_UINT,
	.offset = CLASS_FIELD(calls_per_s),
	.min = 0,
	.max = 10000000,
	.step = 1,
	.def = 0,
	.reload = CONF_RELOAD_LIVE,
	.change = GW_CHANGE_LIMITS,
};
static const struct conf_option class_in_flight = {
	.name = "max_in_flight",
	.type = CONF_OPT_UINT,
	.offset = CLASS_FIELD(max_in_flight),
	.min = 0,
	.max = 65536,
	.step = 1,
	.def = 0,
	.reload = CONF_RELOAD_LIVE,
	.change = GW_CHANGE_LIMITS,
};
static const struct conf_option class_burst = {
	.name = "burst_s",
	.type = CONF_OPT_SECONDS,
	.offset = CLASS_FIELD(burst_ms),
	.min = 10,
	.max = 60000,
	.step = 1,
	.def = 250,
	.reload = CONF_RELOAD_LIVE,
	.change = GW_CHANGE_LIMITS,
};

/* Megabytes (10^6 bytes) a second: at most this many. */
#define QOS_MB_S_MAX 1000000.0

static bool class_name_ok(const char *s)
{
	size_t n = strlen(s);

	if (n == 0 || n > 32)
		return false;
	for (size_t i = 0; i < n; i++) {
		char c = s[i];
		bool alnum =
			(c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
		if (!alnum && (i == 0 || (c != '.' && c != '_' && c != '-')))
			return false;
	}
	return true;
}

/* "to_server_mb_s": megabytes a second, a fraction allowed, into bytes a second. */
static void load_mb_s(const struct conf_report *rep, const struct conf_where *w, json_t *v,
		      uint64_t *out)
{
	char got[96];
	double mb;

	if (json_is_number(v)) {
		mb = json_number_value(v);
		/* Written so that NaN would fail too. */
		if (mb >= 0.0 && mb <= QOS_MB_S_MAX && (mb == 0.0 || mb * 1e6 >= 1.0)) {
			*out = (uint64_t)llround(mb * 1e6);
			return;
		}
	}
	conf_describe(v, got, sizeof(got));
	conf_fail(rep, w, CONF_AT_VALUE,
		  "expected megabytes (10^6 bytes) a second, 0..%.0f (0: no limit), got %s",
		  QOS_MB_S_MAX, got);
}

static void check_class_members(const struct conf_report *rep, const struct conf_where *w,
				json_t *obj)
{
	for (void *it = json_object_iter(obj); it; it = json_object_iter_next(obj, it)) {
		const char *key = json_object_iter_key(it);
		const char *hint;
		struct conf_where kw;
		char choices[256];

		bool known = false;

		for (size_t i = 0; i < CONF_ARRAY_SIZE(class_keys); i++)
			known = known || strcmp(key, class_keys[i]) == 0;
		if (known)
			continue;
		conf_where_member(&kw, w, key);
		if ((hint = conf_suggest(key, class_keys, CONF_ARRAY_SIZE(class_keys)))) {
			conf_fail(rep, &kw, CONF_AT_KEY, "unknown key; did you mean \"%s\"?", hint);
			continue;
		}
		conf_format_choices(class_keys, CONF_ARRAY_SIZE(class_keys), choices,
				    sizeof(choices));
		conf_fail(rep, &kw, CONF_AT_KEY, "unknown key in a qos class; expected %s",
			  choices);
	}
}

static void load_class(const struct conf_report *rep, const struct conf_where *w, const char *name,
		       json_t *obj, struct gw_qos_class *c)
{
	static const struct conf_option *const numbers[] = { &class_program, &class_calls,
							     &class_in_flight, &class_burst };
	struct conf_where mw;
	char got[96];
	json_t *v;

	c->burst_ms = class_burst.def;
	c->name = strdup(name);
	if (!c->name) {
		conf_fail(rep, w, CONF_AT_VALUE, "out of memory");
		return;
	}
	if (!class_name_ok(name))
		conf_fail(rep, w, CONF_AT_KEY,
			  "expected a class name of 1..32 letters, digits, '.', '_' or '-', "
			  "starting with a letter or digit");
	if (!json_is_object(obj)) {
		conf_describe(obj, got, sizeof(got));
		conf_fail(rep, w, CONF_AT_VALUE,
			  "expected a qos class object (\"clients\", limits such as "
			  "\"to_server_mb_s\"), got %s",
			  got);
		return;
	}
	check_class_members(rep, w, obj);
	if ((v = json_object_get(obj, "clients"))) {
		conf_where_member(&mw, w, "clients");
		conf_load_cidr_list(rep, &mw, v,
				    "a non-empty array of networks (omit the key to match every "
				    "client)",
				    &c->clients, &c->clients_count);
	}
	for (size_t i = 0; i < CONF_ARRAY_SIZE(numbers); i++) {
		if (!(v = json_object_get(obj, numbers[i]->name)))
			continue;
		conf_where_member(&mw, w, numbers[i]->name);
		conf_load_number(rep, &mw, v, numbers[i], c);
	}
	if ((v = json_object_get(obj, "procedures"))) {
		unsigned p;

		conf_where_member(&mw, w, "procedures");
		if (conf_load_enum(rep, &mw, v, procs_names, CONF_ARRAY_SIZE(procs_names), &p))
			c->procedures = (enum gw_qos_procs)p;
	}
	if ((v = json_object_get(obj, "to_server_mb_s"))) {
		conf_where_member(&mw, w, "to_server_mb_s");
		load_mb_s(rep, &mw, v, &c->to_server_bytes_per_s);
	}
	if ((v = json_object_get(obj, "to_client_mb_s"))) {
		conf_where_member(&mw, w, "to_client_mb_s");
		load_mb_s(rep, &mw, v, &c->to_client_bytes_per_s);
	}
}

void conf_qos_load_classes(const struct conf_report *rep, const struct conf_where *top,
			   json_t *root, struct gw_config *cfg)
{
	json_t *obj = json_object_get(root, "qos_classes");
	struct conf_where w, cw;
	char got[96];
	size_t i = 0;

	if (!obj)
		return;
	conf_where_member(&w, top, "qos_classes");
	if (!json_is_object(obj) || json_object_size(obj) == 0) {
		conf_describe(obj, got, sizeof(got));
		conf_fail(rep, &w, CONF_AT_VALUE,
			  "expected a non-empty object of qos classes by name, got %s", got);
		return;
	}
	cfg->qos_classes = calloc(json_object_size(obj), sizeof(*cfg->qos_classes));
	if (!cfg->qos_classes) {
		conf_fail(rep, &w, CONF_AT_VALUE, "out of memory");
		return;
	}
	/* jansson keeps an object's members in the order of the file. */
	for (void *it = json_object_iter(obj); it; it = json_object_iter_next(obj, it)) {
		const char *name = json_object_iter_key(it);

		conf_where_member(&cw, &w, name);
		load_class(rep, &cw, name, json_object_iter_value(it), &cfg->qos_classes[i++]);
		cfg->qos_classes_count = i;
	}
}

static void class_release(struct gw_qos_class *c)
{
	free(c->name);
	free(c->clients);
	memset(c, 0, sizeof(*c));
}

void conf_qos_release(struct gw_qos_class *list, size_t n)
{
	for (size_t i = 0; i < n; i++)
		class_release(&list[i]);
	free(list);
}

static bool class_copy(struct gw_qos_class *dst, const struct gw_qos_class *src)
{
	*dst = *src;
	dst->name = strdup(src->name);
	dst->clients = NULL;
	if (src->clients_count) {
		dst->clients = malloc(src->clients_count * sizeof(*dst->clients));
		if (dst->clients)
			memcpy(dst->clients, src->clients,
			       src->clients_count * sizeof(*dst->clients));
	}
	if (!dst->name || (src->clients_count && !dst->clients)) {
		class_release(dst);
		return false;
	}
	return true;
}

/* The class called @name, or NULL after reporting it unknown at @w. */
static const struct gw_qos_class *find_class(const struct conf_report *rep,
					     const struct conf_where *w,
					     const struct gw_config *cfg, json_t *v)
{
	const char *known[64];
	const char *hint, *name;
	size_t n = 0;
	char got[96];

	if (!json_is_string(v)) {
		conf_describe(v, got, sizeof(got));
		conf_fail(rep, w, CONF_AT_VALUE, "expected the name of a qos class, got %s", got);
		return NULL;
	}
	name = json_string_value(v);
	for (size_t i = 0; i < cfg->qos_classes_count; i++) {
		if (cfg->qos_classes[i].name && strcmp(cfg->qos_classes[i].name, name) == 0)
			return &cfg->qos_classes[i];
		if (n < CONF_ARRAY_SIZE(known) && cfg->qos_classes[i].name)
			known[n++] = cfg->qos_classes[i].name;
	}
	conf_describe(v, got, sizeof(got));
	if (cfg->qos_classes_count == 0)
		conf_fail(rep, w, CONF_AT_VALUE,
			  "expected a class of the top-level \"qos_classes\", got %s, and there "
			  "is no \"qos_classes\"",
			  got);
	else if ((hint = conf_suggest(name, known, n)))
		conf_fail(rep, w, CONF_AT_VALUE,
			  "expected a class of \"qos_classes\", got %s; did you mean \"%s\"?", got,
			  hint);
	else
		conf_fail(rep, w, CONF_AT_VALUE, "expected a class of \"qos_classes\", got %s",
			  got);
	return NULL;
}

/* Append a copy of @c to @r's classes. */
static void route_add(const struct conf_report *rep, const struct conf_where *w, struct gw_route *r,
		      const struct gw_qos_class *c)
{
	struct gw_qos_class *grown;

	/* /stats shows at most GW_STATS_MAX_QOS (64) classes a route. */
	if (r->qos_count >= 64) {
		conf_fail(rep, w, CONF_AT_VALUE, "expected at most 64 classes in a route");
		return;
	}
	grown = realloc(r->qos, (r->qos_count + 1) * sizeof(*r->qos));
	if (!grown) {
		conf_fail(rep, w, CONF_AT_VALUE, "out of memory");
		return;
	}
	r->qos = grown;
	if (!class_copy(&r->qos[r->qos_count], c)) {
		conf_fail(rep, w, CONF_AT_VALUE, "out of memory");
		return;
	}
	r->qos_count++;
}

static void load_route_list(const struct conf_report *rep, const struct conf_where *rw, json_t *v,
			    const struct gw_config *cfg, struct gw_route *r)
{
	struct conf_where w, iw, jw;
	char got[96];

	conf_where_member(&w, rw, "qos");
	if (!json_is_array(v) || json_array_size(v) == 0) {
		conf_describe(v, got, sizeof(got));
		conf_fail(rep, &w, CONF_AT_VALUE,
			  "expected a non-empty array of qos class names, first match first (omit "
			  "the key for no limits), got %s",
			  got);
		return;
	}
	for (size_t i = 0; i < json_array_size(v); i++) {
		json_t *item = json_array_get(v, i);
		const struct gw_qos_class *c;
		bool dup = false;

		conf_where_index(&iw, &w, i);
		if (!(c = find_class(rep, &iw, cfg, item)))
			continue;
		for (size_t j = 0; j < i && !dup; j++) {
			if (json_equal(json_array_get(v, j), item)) {
				conf_where_index(&jw, &w, j);
				conf_fail(rep, &iw, CONF_AT_VALUE,
					  "expected each class once, got \"%s\" again (first at "
					  "line %d)",
					  c->name, conf_where_line(rep, &jw));
				dup = true;
			}
		}
		if (!dup)
			route_add(rep, &iw, r, c);
	}
}

static void load_route_default(const struct conf_report *rep, const struct conf_where *rw,
			       json_t *v, const struct gw_config *cfg, struct gw_route *r)
{
	const struct gw_qos_class *c;
	struct conf_where w;

	conf_where_member(&w, rw, "qos_default");
	if (!(c = find_class(rep, &w, cfg, v)))
		return;
	/*
	 * A default takes every call no listed class takes: a match of its
	 * own would be silently ignored, so it is refused.
	 */
	if (c->clients_count || c->program || c->procedures != GW_QOS_PROCS_ANY) {
		conf_fail(rep, &w, CONF_AT_VALUE,
			  "expected a class without \"clients\", \"program\" or \"procedures\" (a "
			  "default class takes every call the listed classes do not), got \"%s\", "
			  "which has a match",
			  c->name);
		return;
	}
	for (size_t i = 0; i < r->qos_count; i++) {
		if (strcmp(r->qos[i].name, c->name) == 0) {
			conf_fail(rep, &w, CONF_AT_VALUE,
				  "expected a class not in the route's \"qos\" list, got \"%s\", "
				  "which is listed there",
				  c->name);
			return;
		}
	}
	route_add(rep, &w, r, c);
	r->qos_has_default = true;
}

void conf_qos_load_route(const struct conf_report *rep, const struct conf_where *rw, json_t *obj,
			 const struct gw_config *cfg, struct gw_route *r)
{
	json_t *list = json_object_get(obj, "qos");
	json_t *def = json_object_get(obj, "qos_default");

	/* Either mode: forward_qos.c and reverse_qos.c hold calls before the upstream. */
	if (list)
		load_route_list(rep, rw, list, cfg, r);
	if (def)
		load_route_default(rep, rw, def, cfg, r);
}

/* ---- reload ----------------------------------------------------------------- */

static bool cidrs_equal(const struct gw_qos_class *a, const struct gw_qos_class *b)
{
	if (a->clients_count != b->clients_count)
		return false;
	for (size_t i = 0; i < a->clients_count; i++) {
		if (!conf_cidr_equal(&a->clients[i], &b->clients[i]))
			return false;
	}
	return true;
}

/* The same class in the same place, matching the same calls. */
static bool match_equal(const struct gw_qos_class *a, const struct gw_qos_class *b)
{
	return strcmp(a->name, b->name) == 0 && a->program == b->program &&
	       a->procedures == b->procedures && cidrs_equal(a, b);
}

static bool limits_equal(const struct gw_qos_class *a, const struct gw_qos_class *b)
{
	return a->calls_per_s == b->calls_per_s &&
	       a->to_server_bytes_per_s == b->to_server_bytes_per_s &&
	       a->to_client_bytes_per_s == b->to_client_bytes_per_s &&
	       a->max_in_flight == b->max_in_flight && a->burst_ms == b->burst_ms;
}

/*
 * The classes of a route and their matches size and key the buckets of
 * every session (gateway/core/qos.h): changing them needs a restart. Their
 * limits are read per call: a change is live.
 */
bool conf_qos_compare_route(const struct conf_report *rep, const struct conf_where *rw,
			    const struct gw_route *was, const struct gw_route *now,
			    unsigned *changes)
{
	struct conf_where w;
	bool same =
		was->qos_count == now->qos_count && was->qos_has_default == now->qos_has_default;

	for (size_t i = 0; same && i < now->qos_count; i++)
		same = match_equal(&was->qos[i], &now->qos[i]);
	if (!same) {
		conf_where_member(&w, rw, now->qos_count ? "qos" : "name");
		conf_fail(rep, &w, CONF_AT_VALUE,
			  "the route's qos classes or their matches changed, which needs a restart "
			  "(each session keeps buckets by class); limits alone are applied live");
		return false;
	}
	for (size_t i = 0; i < now->qos_count; i++) {
		if (!limits_equal(&was->qos[i], &now->qos[i]))
			*changes |= GW_CHANGE_LIMITS;
	}
	return true;
}

/* ---- the schema ----------------------------------------------------------- */

void conf_qos_schema(struct conf_key_info *out, size_t max, size_t *n)
{
	for (size_t i = 0; i + 1 < CONF_ARRAY_SIZE(class_keys); i++) {
		struct conf_key_info k = { .has_reload = true, .reload = CONF_RELOAD_LIVE };
		const char *name = class_keys[i];

		snprintf(k.key, sizeof(k.key), "qos_classes.CLASS.%s", name);
		if (strcmp(name, "clients") == 0) {
			k.kind = "networks";
			k.def = "every client";
			k.reload = CONF_RELOAD_RESTART;
		} else if (strcmp(name, "program") == 0) {
			k.kind = "program";
			k.reload = CONF_RELOAD_RESTART;
		} else if (strcmp(name, "procedures") == 0) {
			k.kind = "enum";
			k.choices = procs_names;
			k.nchoices = CONF_ARRAY_SIZE(procs_names);
			k.def = procs_names[GW_QOS_PROCS_ANY];
			k.reload = CONF_RELOAD_RESTART;
		} else if (strcmp(name, "calls_per_s") == 0) {
			k.opt = &class_calls;
		} else if (strcmp(name, "max_in_flight") == 0) {
			k.opt = &class_in_flight;
		} else if (strcmp(name, "burst_s") == 0) {
			k.opt = &class_burst;
		} else {
			k.kind = "mb_s";
		}
		if (*n < max)
			out[*n] = k;
		(*n)++;
	}
}
