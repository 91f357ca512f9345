/* SPDX-License-Identifier: MIT */
/*
 * conf/conf_priv.h - what the files of conf/ share; not for other modules
 * (their interface is conf/config.h).
 */
#ifndef GW_CONF_CONF_PRIV_H
#define GW_CONF_CONF_PRIV_H

#include <jansson.h>
#include <stdarg.h>

#include "common/json_pos.h"
#include "conf/config.h"

#define CONF_ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

/*
 * A loaded configuration and what it keeps for later messages: the
 * position index of its text, so that gw_config_reloadable() can point
 * at the line of a changed value.
 */
struct conf_private {
	struct gw_config pub;
	struct json_pos_index *idx;
};

static inline struct conf_private *conf_private_of(const struct gw_config *cfg)
{
	return (struct conf_private *)((char *)cfg - offsetof(struct conf_private, pub));
}

/* ---- where a value is: its JSON Pointer and its name in messages ------- */

enum { CONF_WHERE_MAX = 256 };

struct conf_where {
	char ptr[CONF_WHERE_MAX]; /* "/routes/1/listen", for the position index */
	char key[CONF_WHERE_MAX]; /* "routes[1].listen", for people */
};

void conf_where_root(struct conf_where *w);
void conf_where_member(struct conf_where *out, const struct conf_where *parent, const char *name);
void conf_where_index(struct conf_where *out, const struct conf_where *parent, size_t index);

/* ---- reporting --------------------------------------------------------- */

/* Everything needed to report an error against one file. */
struct conf_report {
	const char *path;
	const struct json_pos_index *idx; /* NULL: every position is 1:1 */
	struct gw_conf_errors *errs;
};

enum conf_at {
	CONF_AT_VALUE, /* the value's first character */
	CONF_AT_KEY,   /* the member's key (unknown keys) */
};

/* Report "path:line:col: key: message" at @w; the position is @w's, or its
 * nearest enclosing value's when @w is not in the text (a missing key). */
void conf_fail(const struct conf_report *rep, const struct conf_where *w, enum conf_at at,
	       const char *fmt, ...) __attribute__((format(printf, 4, 5)));
void conf_vfail(const struct conf_report *rep, const struct conf_where *w, enum conf_at at,
		const char *fmt, va_list ap) __attribute__((format(printf, 4, 0)));
/* Report at an explicit position, with no key (syntax and I/O errors). */
void conf_fail_at(struct gw_conf_errors *errs, const char *path, int line, int column,
		  const char *fmt, ...) __attribute__((format(printf, 5, 6)));
/* Whether @w names a value present in the text. */
bool conf_where_exists(const struct conf_report *rep, const struct conf_where *w);
/* The line of @w, for "(line 3)" cross-references. */
int conf_where_line(const struct conf_report *rep, const struct conf_where *w);
/* Put the stored errors in file order. */
void conf_errors_sort(struct gw_conf_errors *errs);

/*
 * How a value appears after "got": strings quoted and escaped as in JSON
 * (shortened when long), numbers and literals as written, containers by
 * kind ("an object").
 */
void conf_describe(const json_t *v, char *buf, size_t len);

/*
 * Match the string @v against @names; on failure report what was
 * expected (and the closest name, when it looks like a typo).
 */
bool conf_load_enum(const struct conf_report *rep, const struct conf_where *w, const json_t *v,
		    const char *const *names, size_t n, unsigned *out);

/* "\"a\", \"b\" or \"c\"" */
void conf_format_choices(const char *const *names, size_t n, char *buf, size_t len);

/* The known word closest to @word when close enough to be a typo, or NULL. */
const char *conf_suggest(const char *word, const char *const *known, size_t n);

/* ---- addresses (addr.c) ------------------------------------------------ */

/*
 * Why a text is not a valid address: what was expected ("a port
 * 1..65535 after the ':'"), and a detail when there is one (the
 * resolver's answer). The caller adds the key and the value.
 */
struct conf_why {
	char expect[192];
	char detail[128];
};

/*
 * "SCHEME://HOST[:PORT]" with HOST a dotted IPv4 address, an IPv6 address
 * in brackets or a name (resolved here). Without a port, tcp:// means 2049
 * and rdma:// 20049. @text must already start with a known scheme; see
 * conf_url_transport(). On failure, @why says what was expected.
 */
bool conf_parse_url(const char *text, bool to_connect, struct gw_endpoint *ep,
		    struct conf_why *why);
/* The transport named by @text's scheme; false when it has neither. */
bool conf_url_transport(const char *text, enum gw_transport *out);
/* "HOST:PORT" (the port is required), for the stats endpoint. */
bool conf_parse_host_port(const char *text, struct sockaddr_storage *ss, socklen_t *len,
			  struct conf_why *why);
/* "ADDRESS/PREFIX" or a bare address (a single host). */
bool conf_parse_cidr(const char *text, struct gw_cidr *out, struct conf_why *why);
/* Whether two listeners of the same transport would fight over a port. */
bool conf_listen_overlap(const struct sockaddr_storage *a, const struct sockaddr_storage *b);
/* Same family, address, port (and IPv6 scope). */
bool conf_sockaddr_equal(const struct sockaddr_storage *a, const struct sockaddr_storage *b);
bool conf_cidr_equal(const struct gw_cidr *a, const struct gw_cidr *b);

/* ---- route options (route.c) ------------------------------------------- */

/* How a change to an option is applied on SIGHUP. */
enum conf_reload_kind {
	CONF_RELOAD_RESTART, /* needs a restart */
	CONF_RELOAD_LIVE,    /* applied to new connections and calls */
};

enum conf_option_type {
	CONF_OPT_UINT,	      /* a uint32_t, integer in JSON */
	CONF_OPT_SECONDS,     /* a uint32_t of milliseconds, seconds in JSON */
	CONF_OPT_SOURCE_PORT, /* enum gw_source_port */
	CONF_OPT_CIDRS,	      /* allowed_clients */
	CONF_OPT_PATHS,	      /* ulb_rules */
	CONF_OPT_DIR,	      /* state_directory: an absolute path, or NULL */
	CONF_OPT_BOOL,	      /* a uint32_t of 0 or 1, true or false in JSON */
};

/* The keys a route may set, either itself or through "defaults". */
struct conf_option {
	const char *name;
	enum conf_option_type type;
	size_t offset; /* of the field in struct gw_route, for UINT and SECONDS */
	uint32_t min, max, step, def;
	enum conf_reload_kind reload;
	unsigned change;	 /* GW_CHANGE_* bit when live */
	const char *restart_why; /* when a restart is needed: why */
};

extern const struct conf_option conf_options[];
extern const size_t conf_options_count;

/* Set every option of @r to its built-in default. */
void conf_route_init_defaults(struct gw_route *r);
/* Copy the options (not name, mode, addresses) of @src to @dst; false on ENOMEM. */
bool conf_route_copy_options(struct gw_route *dst, const struct gw_route *src);
void conf_route_release(struct gw_route *r);

/*
 * Load the option members of @obj (a route or "defaults") into @r, which
 * holds the inherited values. Members that are not options are left to
 * the caller. @base is the directory for relative rule paths.
 */
void conf_load_options(const struct conf_report *rep, const struct conf_where *w, json_t *obj,
		       const char *base, struct gw_route *r);

/*
 * Load a CONF_OPT_UINT or CONF_OPT_SECONDS value into the field at
 * @opt->offset of @obj (for numbers outside routes, such as
 * drain_timeout_s).
 */
void conf_load_number(const struct conf_report *rep, const struct conf_where *w, json_t *v,
		      const struct conf_option *opt, void *obj);

/*
 * Load a non-empty array of networks ("ADDRESS/PREFIX" strings) into a new
 * *@out of *@count entries, replacing (and freeing) the old one. @expect
 * says what was expected when @v is not such an array. False, reported,
 * when anything in it is wrong (*@out unchanged).
 */
bool conf_load_cidr_list(const struct conf_report *rep, const struct conf_where *w, json_t *v,
			 const char *expect, struct gw_cidr **out, size_t *count);

/* Format the value of option @opt in @r for a message. */
void conf_option_format(const struct conf_option *opt, const struct gw_route *r, char *buf,
			size_t len);
/* Whether option @opt differs between two routes. */
bool conf_option_differs(const struct conf_option *opt, const struct gw_route *a,
			 const struct gw_route *b);

/* ---- quality of service (qos.c) ----------------------------------------- */

struct conf_key_info;

/* The top-level "qos_classes" into @cfg->qos_classes. */
void conf_qos_load_classes(const struct conf_report *rep, const struct conf_where *top,
			   json_t *root, struct gw_config *cfg);
/* A route's "qos" and "qos_default" (classes of @cfg) into copies in @r->qos. */
void conf_qos_load_route(const struct conf_report *rep, const struct conf_where *rw, json_t *obj,
			 const struct gw_config *cfg, struct gw_route *r);
/* Free @n classes and the array. */
void conf_qos_release(struct gw_qos_class *list, size_t n);
/*
 * On SIGHUP: false, reported at @rw, when the route's classes or their
 * matches changed (a restart); GW_CHANGE_LIMITS in *@changes when only
 * limits did.
 */
bool conf_qos_compare_route(const struct conf_report *rep, const struct conf_where *rw,
			    const struct gw_route *was, const struct gw_route *now,
			    unsigned *changes);
/* The keys of a class, "qos_classes.CLASS.KEY", for conf_schema_keys(). */
void conf_qos_schema(struct conf_key_info *out, size_t max, size_t *n);

/* ---- the schema, for the manual page's test ------------------------------ */

/*
 * One key of the configuration file as rpcrdma-gw.json(5) describes it.
 * Route options (conf_options[]) and the numbers outside routes carry
 * their conf_option; the other keys say what they are in @kind.
 */
struct conf_key_info {
	char key[64];		       /* "stats.max_connections", "routes[].credits" */
	const struct conf_option *opt; /* or NULL */
	const char *kind;	       /* without opt: "object", "routes", "boolean", "string",
					  "host_port", "url", "enum", "comment", or NULL: unknown */
	const char *const *choices;    /* "enum" and CONF_OPT_SOURCE_PORT */
	size_t nchoices;
	const char *def; /* the default as the manual writes it; NULL: none or required */
	bool required;
	bool has_reload; /* false for objects and "comment" */
	enum conf_reload_kind reload;
};

/*
 * Every key the loader knows, from the same tables it checks keys
 * against, into @out (at most @max); returns how many there are.
 */
size_t conf_schema_keys(struct conf_key_info *out, size_t max);
/* The names "source_port" takes. */
const char *const *conf_source_port_names(size_t *n);

#endif
