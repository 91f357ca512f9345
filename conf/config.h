/* SPDX-License-Identifier: MIT */
/*
 * conf/config.h - the gateway's JSON configuration.
 *
 * A configuration file is loaded once into an immutable struct gw_config:
 * plain C values with every default applied, every address resolved and
 * every client network parsed, so that nothing on the data path looks at
 * JSON or calls the resolver. A file that is wrong in any way gives no
 * configuration at all, only a list of errors; each error names the file,
 * the line and column, the key (as "routes[1].listen") and what was
 * expected, so an operator can fix every mistake in one pass.
 *
 * On SIGHUP the gateway loads the file again and asks
 * gw_config_reloadable() whether the new configuration can replace the
 * running one without dropping connections. The reference for every key
 * is docs/configuration.md.
 */
#ifndef GW_CONF_CONFIG_H
#define GW_CONF_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include "common/log.h"

/* ---- errors ------------------------------------------------------------ */

/* A load reports at most this many errors; the rest are only counted. */
enum { GW_CONF_MAX_ERRORS = 20 };

struct gw_conf_error {
	int line;   /* 1-based; 0 when the error has no position (unreadable file) */
	int column; /* 1-based, in characters */
	/* The whole message: "gw.json:7:18: routes[1].listen: expected ..." */
	char *text;
};

struct gw_conf_errors {
	struct gw_conf_error list[GW_CONF_MAX_ERRORS]; /* in file order */
	size_t count;				       /* entries in list */
	size_t total; /* errors found, including those beyond the cap */
};

void gw_conf_errors_init(struct gw_conf_errors *errs);
/* Free the messages and make @errs empty again. */
void gw_conf_errors_clear(struct gw_conf_errors *errs);
/*
 * Print every error on its own line, then a line telling how many more
 * were found beyond the cap, if any. This is what --check prints.
 */
void gw_conf_errors_print(FILE *out, const struct gw_conf_errors *errs);

/* ---- the configuration --------------------------------------------------- */

enum gw_route_mode {
	GW_MODE_FORWARD, /* TCP listener, RDMA upstream: the gateway is a requester */
	GW_MODE_REVERSE, /* RDMA listener, TCP upstream: the gateway is a responder */
	GW_MODE_COUNT,	 /* not a mode: how many there are (gateway/modes.h) */
};

enum gw_transport {
	GW_TRANSPORT_TCP,
	GW_TRANSPORT_RDMA,
};

enum gw_source_port {
	GW_SOURCE_PORT_RESERVED, /* bind a port below 1024 for upstream connections */
	GW_SOURCE_PORT_ANY,	 /* let the kernel choose */
};

enum gw_log_destination {
	GW_LOG_TO_STDERR,
	GW_LOG_TO_SYSLOG,
};

struct gw_endpoint {
	enum gw_transport transport;
	struct sockaddr_storage addr; /* resolved at load; port set */
	socklen_t addrlen;
	char *text; /* as written in the file, for messages */
};

/*
 * An allowed client network. The address has its host bits clear.
 * IPv4-mapped IPv6 networks (::ffff:0:0/96 and longer) are stored as IPv4.
 */
struct gw_cidr {
	sa_family_t family; /* AF_INET or AF_INET6 */
	uint8_t prefix_len;
	union {
		struct in_addr v4;
		struct in6_addr v6;
	} addr;
};

/*
 * Quality of service: a class of calls (top-level "qos_classes") and the
 * limits each client address in it is held to (gateway/core/qos.h
 * enforces them). A route lists the classes it applies ("qos"), first
 * match wins, and may name a default class ("qos_default") for the calls
 * no listed class matches.
 */
enum gw_qos_procs {
	GW_QOS_PROCS_ANY,      /* every procedure */
	GW_QOS_PROCS_READS,    /* calls whose reply carries bulk data (NFS READ, READLINK) */
	GW_QOS_PROCS_WRITES,   /* calls that carry bulk data (NFS WRITE, SYMLINK) */
	GW_QOS_PROCS_METADATA, /* the others */
};

struct gw_qos_class {
	char *name;
	/* The match: every client when there are no networks; program 0: any. */
	struct gw_cidr *clients;
	size_t clients_count;
	uint32_t program;
	enum gw_qos_procs procedures;
	/* The limits, per client address; 0: none. */
	uint32_t calls_per_s;
	uint64_t to_server_bytes_per_s; /* call bytes from the client */
	uint64_t to_client_bytes_per_s; /* reply bytes to the client */
	uint32_t max_in_flight;		/* calls admitted and not yet answered */
	uint32_t burst_ms;		/* what a bucket holds: this long at its rate */
};

struct gw_route {
	char *name;
	enum gw_route_mode mode;
	struct gw_endpoint listen;
	struct gw_endpoint upstream;

	/* RFC 8797 sizes the gateway offers, in bytes: multiples of 1024. */
	uint32_t inline_send_size;
	uint32_t inline_receive_size;
	/* forward: credits requested from the server; reverse: credits granted. */
	uint32_t credits;
	uint32_t backchannel_credits;
	uint32_t max_record_size; /* largest TCP record, in bytes */
	uint32_t max_chunk_segments;
	uint32_t max_read_segments;
	uint32_t max_write_chunks;
	uint32_t queue_limit; /* calls that may wait for a credit, per session */
	uint32_t connect_timeout_ms;
	uint32_t idle_timeout_ms; /* 0: never */
	/* A call unanswered this long resets its session (forward), 0: never. */
	uint32_t call_timeout_ms;
	/* Once a record's mark has arrived, the record must be complete within this. */
	uint32_t record_timeout_ms;
	uint32_t max_sessions;		  /* sessions on this route at once */
	uint32_t max_sessions_per_client; /* sessions from one client address */
	uint32_t max_session_memory;	  /* bytes of pool buffers one session may hold */
	enum gw_source_port source_port;

	/* No entries: every client is allowed. */
	struct gw_cidr *allowed_clients;
	size_t allowed_clients_count;

	/*
	 * Rule files besides the stock ones: absolute paths, in the order
	 * given. No entries: the stock rules alone.
	 */
	char **ulb_rules;
	size_t ulb_rules_count;
	/* The reply size assumed for calls whose reply the rules do not bound. */
	uint32_t reply_size_estimate;

	/*
	 * NFSv3's side protocols (forward routes): the portmapper's port on the
	 * listen address (0: none), the MOUNT relay's (0: chosen by the system),
	 * and the server's mountd (0: asked of the server's portmapper).
	 */
	uint32_t portmapper_port;
	uint32_t mount_port;
	uint32_t upstream_mountd_port;
	/*
	 * The highest RPC-over-RDMA version spoken, 1 or 2: reverse accepts
	 * every version up to it; forward tries it first and falls back.
	 */
	uint32_t max_rpcrdma_version;
	/*
	 * Forward: RDMA connections to the server shared by every client of
	 * the route (0: one per client). Reverse routes must leave it 0.
	 */
	uint32_t upstream_connections;
	/*
	 * With upstream_connections > 0: the calls one client may have in
	 * flight on its shared connection (0: half of credits).
	 */
	uint32_t shared_client_max_in_flight;
	/*
	 * The same while more than one client is being served on a shared
	 * connection (gateway/maps/fairq.h, fairq_set_contended_cap(); 0: none).
	 */
	uint32_t shared_client_max_in_flight_contended;
	/*
	 * Records a client's TCP connection delivers per turn of the event
	 * loop; the route's RDMA connections take twice as many completions
	 * per pass (tcp_conn records_per_turn, rconn cq_budget).
	 */
	uint32_t turn_budget;
	/*
	 * Forward: the same while the worker's loop serves more than one
	 * client (common/turns.h); above turn_budget counts as turn_budget.
	 */
	uint32_t turn_budget_contended;
	/* Forward routes: Send With Invalidate offered to the server (0 or 1). */
	uint32_t remote_invalidation;
	/*
	 * Forward routes (0 or 1): a call other than NULL that does not use
	 * RPCSEC_GSS is answered AUTH_ERROR (AUTH_TOOWEAK) unless its client's
	 * TCP port is below 1024, as the Linux server's `secure` export option
	 * does (which the gateway's own reserved port and RPC-over-RDMA defeat).
	 */
	uint32_t client_reserved_port;
	/*
	 * NFSv3's side services, further (routes with portmapper_port): the
	 * server's lockd and statd (0: asked of its portmapper), the limits of the
	 * NLM relay's lock records (gateway/side/nlm/nlm_state.h), of its calls
	 * awaiting the server, of the GRANTED callbacks and _MSG calls
	 * pending, of the client hosts told of a reboot, and the gateway's
	 * reclaim window after its own restart.
	 */
	uint32_t upstream_nlm_port;
	uint32_t upstream_nsm_port; /* the server's statd (0: asked of its portmapper) */
	uint32_t nlm_max_clients;
	uint32_t nlm_max_clients_per_prefix; /* of one /24 or /64; 0: the default share */
	uint32_t nlm_max_owners;
	uint32_t nlm_max_owners_per_client; /* at most nlm_max_owners */
	uint32_t nlm_max_locks;
	uint32_t nlm_max_locks_per_client; /* at most nlm_max_locks */
	uint32_t nlm_max_pending_calls;
	uint32_t nlm_call_timeout_ms;
	uint32_t nlm_callback_max_pending;
	uint32_t nlm_async_max_pending;
	uint32_t nlm_async_max_pending_per_client; /* at most nlm_async_max_pending */
	uint32_t nlm_notify_max_hosts;
	uint32_t nlm_reclaim_window_ms;
	/*
	 * Where the side services keep the route's NSM state and client list
	 * (an absolute path); NULL: $STATE_DIRECTORY, else /var/lib/rpcrdma-gw.
	 */
	char *state_directory;

	/*
	 * The route's quality-of-service classes, copies in the order of its
	 * "qos" list, then its "qos_default" if any (qos_has_default, the
	 * last entry, matches every call). No entries: no limits, no cost.
	 */
	struct gw_qos_class *qos;
	size_t qos_count;
	bool qos_has_default;
};

/*
 * "workers": GW_WORKERS_AUTO (the default) lets the engine pick one per
 * online CPU at start; a configured count is at most GW_WORKERS_MAX,
 * which also caps the automatic one.
 */
enum { GW_WORKERS_AUTO = 0, GW_WORKERS_MAX = 64 };

struct gw_config {
	char *path; /* the file, as given to gw_config_load() */

	struct gw_route *routes; /* in file order */
	size_t routes_count;

	enum gw_log_level log_level;
	enum gw_log_destination log_destination;

	bool stats_enabled;
	struct sockaddr_storage stats_addr;
	socklen_t stats_addrlen;
	char *stats_text;		/* "HOST:PORT" as written, or the default */
	uint32_t stats_max_connections; /* HTTP connections at once; more are closed */

	uint32_t drain_timeout_ms; /* on SIGTERM, before open sessions are closed */
	/* On SIGTERM, /healthz "draining" but serving on, before the drain starts. */
	uint32_t drain_delay_ms;
	uint32_t max_sessions; /* sessions over all routes at once */

	/*
	 * The number of worker threads, each with its own event loop, RDMA
	 * resources and sessions. GW_WORKERS_AUTO (0) means one per online
	 * CPU, capped at GW_WORKERS_MAX and, where an RDMA device is
	 * present, at its completion vectors; the engine resolves it at
	 * start. A change needs a restart.
	 */
	unsigned workers;

	/* Every class of "qos_classes", in file order (routes hold copies). */
	struct gw_qos_class *qos_classes;
	size_t qos_classes_count;
};

/*
 * Load the file at @path. Relative ULB rule paths are taken relative to
 * the file's directory. Returns NULL and fills @errs (which must be
 * initialised) when the file cannot be read or is wrong in any way.
 */
const struct gw_config *gw_config_load(const char *path, struct gw_conf_errors *errs);

/*
 * The same for a text already in memory; @path names it in messages and
 * gives the directory for relative rule paths.
 */
const struct gw_config *gw_config_parse(const char *path, const char *text, size_t len,
					struct gw_conf_errors *errs);

void gw_config_free(const struct gw_config *cfg);

/* "forward" or "reverse", as in the file (for logs and the stats endpoint). */
const char *gw_route_mode_name(enum gw_route_mode mode);

/*
 * Parse and resolve one address as a route's upstream is written
 * ("rdma://HOST[:PORT]", "tcp://..."), for tools such as --probe. It must be
 * of transport @want and an address to connect to. Returns 0, or -1 with a
 * message in @err. @out->text is a copy of @text; gw_endpoint_free() frees it.
 */
int gw_endpoint_parse(const char *text, enum gw_transport want, struct gw_endpoint *out, char *err,
		      size_t errlen);
void gw_endpoint_free(struct gw_endpoint *ep);

/* Whether @ss is the wildcard address, 0.0.0.0 or ::. */
bool gw_addr_is_wildcard(const struct sockaddr_storage *ss);

/* The route called @name, or NULL. */
const struct gw_route *gw_config_route(const struct gw_config *cfg, const char *name);

/*
 * Whether a client connecting from @peer may use @route. IPv4-mapped IPv6
 * peers are checked as IPv4. Runs for every accepted connection: no
 * allocation, no system call.
 */
bool gw_route_client_allowed(const struct gw_route *route, const struct sockaddr *peer);

/*
 * Whether class @c's match takes a call of program @prog whose ULB walk
 * says it carries bulk data to the server (@writes) or in its reply
 * (@reads), from @peer. Runs per call on routes with classes: no
 * allocation, no system call.
 */
bool gw_qos_class_matches(const struct gw_qos_class *c, const struct sockaddr *peer, uint32_t prog,
			  bool reads, bool writes);

/* ---- reload -------------------------------------------------------------- */

/* What differs between two configurations that SIGHUP can apply. */
enum gw_config_change {
	GW_CHANGE_LOGGING = 1u << 0,	 /* logging.level, logging.destination */
	GW_CHANGE_CLIENTS = 1u << 1,	 /* a route's allowed_clients */
	GW_CHANGE_LIMITS = 1u << 2,	 /* segment, chunk, queue and session limits */
	GW_CHANGE_TIMEOUTS = 1u << 3,	 /* connect, idle and drain timeouts */
	GW_CHANGE_SOURCE_PORT = 1u << 4, /* a route's source_port */
	GW_CHANGE_ULB_RULES = 1u << 5,	 /* a route's list of rule files */
};

/*
 * Compare the running configuration @cur with @next, loaded from the
 * same file after SIGHUP. Returns true when @next can replace @cur without
 * a restart, and sets *@changes to the GW_CHANGE_* bits that differ. Each
 * difference that needs a restart (routes added or removed, a mode, a
 * listen or upstream address, anything that sizes registered memory or
 * is negotiated at connection time, the stats endpoint) is added to @errs
 * with its position in @next's file, and the result is false. Routes are
 * matched by name, so reordering them is not a change.
 */
bool gw_config_reloadable(const struct gw_config *cur, const struct gw_config *next,
			  unsigned *changes, struct gw_conf_errors *errs);

#endif
