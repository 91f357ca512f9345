/* SPDX-License-Identifier: MIT */
/*
 * conf/route.c - the options a route may set, either itself or through
 * "defaults": their ranges, built-in defaults and reload behaviour, and
 * how each is read from JSON.
 */
#include "conf/conf_priv.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define ROUTE_FIELD(f) offsetof(struct gw_route, f)

enum {
	KIB = 1024,
	MIB = 1024 * 1024,
	/* RFC 8797 encodes inline sizes as (bytes / 1024 - 1) in one octet. */
	INLINE_MIN = 1 * KIB,
	INLINE_MAX = 256 * KIB,
	/*
	 * 1 MiB of NFS READ or WRITE data (the largest rsize and wsize Linux
	 * offers) plus a page for RPC and NFS headers: the Linux server's own
	 * limit for a message.
	 */
	RECORD_DEFAULT = 1 * MIB + 4 * KIB,
	/* Room for ROUTE.nlm-clients after it in the side services' 512-byte paths. */
	STATE_DIR_MAX = 255,
};

static const char restart_buffers[] =
	"it sizes registered memory and is exchanged when a connection is set up";

static const char restart_sockets[] = "the side services bind their sockets when the route starts";

static const char restart_nlm[] = "the side services size their tables when the route starts";

/*
 * The table is the reference: docs/configuration.md lists the same keys,
 * in the same order, with the same numbers.
 */
const struct conf_option conf_options[] = {
	{
		.name = "inline_send_size",
		.type = CONF_OPT_UINT,
		.offset = ROUTE_FIELD(inline_send_size),
		.min = INLINE_MIN,
		.max = INLINE_MAX,
		.step = KIB,
		.def = 4 * KIB,
		.reload = CONF_RELOAD_RESTART,
		.restart_why = restart_buffers,
	},
	{
		.name = "inline_receive_size",
		.type = CONF_OPT_UINT,
		.offset = ROUTE_FIELD(inline_receive_size),
		.min = INLINE_MIN,
		.max = INLINE_MAX,
		.step = KIB,
		.def = 4 * KIB,
		.reload = CONF_RELOAD_RESTART,
		.restart_why = restart_buffers,
	},
	/*
	 * Forward routes: offer the server Send With Invalidate (RFC 8797),
	 * which saves the gateway a local invalidation per call whose chunks
	 * share one window. Set in the private data of a connection's setup.
	 */
	{
		.name = "remote_invalidation",
		.type = CONF_OPT_BOOL,
		.offset = ROUTE_FIELD(remote_invalidation),
		.min = 0,
		.max = 1,
		.def = 1,
		.reload = CONF_RELOAD_RESTART,
		.restart_why = "it is offered to the server when a connection is set up",
	},
	/*
	 * Forward routes: the export's `secure` option, held at the gateway
	 * (docs/security.md): AUTH_SYS and AUTH_NONE calls but NULL only from
	 * client ports below 1024. Judged per call, so a change applies to the
	 * next call of every session.
	 */
	{
		.name = "client_reserved_port",
		.type = CONF_OPT_BOOL,
		.offset = ROUTE_FIELD(client_reserved_port),
		.min = 0,
		.max = 1,
		.def = 0,
		.reload = CONF_RELOAD_LIVE,
		.change = GW_CHANGE_CLIENTS,
	},
	{
		.name = "credits",
		.type = CONF_OPT_UINT,
		.offset = ROUTE_FIELD(credits),
		.min = 1,
		.max = 1024,
		.step = 1,
		.def = 64,
		.reload = CONF_RELOAD_RESTART,
		.restart_why = restart_buffers,
	},
	{
		.name = "backchannel_credits",
		.type = CONF_OPT_UINT,
		.offset = ROUTE_FIELD(backchannel_credits),
		.min = 1,
		.max = 256,
		.step = 1,
		.def = 16,
		.reload = CONF_RELOAD_RESTART,
		.restart_why = restart_buffers,
	},
	{
		.name = "max_record_size",
		.type = CONF_OPT_UINT,
		.offset = ROUTE_FIELD(max_record_size),
		.min = 4 * KIB,
		.max = 16 * MIB,
		.step = 1,
		.def = RECORD_DEFAULT,
		.reload = CONF_RELOAD_RESTART,
		.restart_why = restart_buffers,
	},
	{
		.name = "max_chunk_segments",
		.type = CONF_OPT_UINT,
		.offset = ROUTE_FIELD(max_chunk_segments),
		.min = 1,
		.max = 256,
		.step = 1,
		.def = 16,
		.reload = CONF_RELOAD_LIVE,
		.change = GW_CHANGE_LIMITS,
	},
	{
		.name = "max_read_segments",
		.type = CONF_OPT_UINT,
		.offset = ROUTE_FIELD(max_read_segments),
		.min = 1,
		.max = 1024,
		.step = 1,
		.def = 32,
		.reload = CONF_RELOAD_LIVE,
		.change = GW_CHANGE_LIMITS,
	},
	{
		.name = "max_write_chunks",
		.type = CONF_OPT_UINT,
		.offset = ROUTE_FIELD(max_write_chunks),
		.min = 1,
		.max = 64,
		.step = 1,
		.def = 4,
		.reload = CONF_RELOAD_LIVE,
		.change = GW_CHANGE_LIMITS,
	},
	{
		.name = "queue_limit",
		.type = CONF_OPT_UINT,
		.offset = ROUTE_FIELD(queue_limit),
		.min = 0,
		.max = 4096,
		.step = 1,
		.def = 64,
		.reload = CONF_RELOAD_LIVE,
		.change = GW_CHANGE_LIMITS,
	},
	{
		.name = "connect_timeout_s",
		.type = CONF_OPT_SECONDS,
		.offset = ROUTE_FIELD(connect_timeout_ms),
		.min = 100,
		.max = 300000,
		.step = 1,
		.def = 10000,
		.reload = CONF_RELOAD_LIVE,
		.change = GW_CHANGE_TIMEOUTS,
	},
	{
		.name = "idle_timeout_s",
		.type = CONF_OPT_SECONDS,
		.offset = ROUTE_FIELD(idle_timeout_ms),
		.min = 0,
		.max = 86400000,
		.step = 1,
		.def = 0,
		.reload = CONF_RELOAD_LIVE,
		.change = GW_CHANGE_TIMEOUTS,
	},
	{
		.name = "call_timeout_s",
		.type = CONF_OPT_SECONDS,
		.offset = ROUTE_FIELD(call_timeout_ms),
		.min = 0,
		.max = 3600000,
		.step = 1,
		.def = 180000,
		.reload = CONF_RELOAD_LIVE,
		.change = GW_CHANGE_TIMEOUTS,
	},
	{
		.name = "record_timeout_s",
		.type = CONF_OPT_SECONDS,
		.offset = ROUTE_FIELD(record_timeout_ms),
		.min = 1000,
		.max = 600000,
		.step = 1,
		.def = 30000,
		.reload = CONF_RELOAD_LIVE,
		.change = GW_CHANGE_TIMEOUTS,
	},
	{
		.name = "max_sessions",
		.type = CONF_OPT_UINT,
		.offset = ROUTE_FIELD(max_sessions),
		.min = 1,
		.max = 65536,
		.step = 1,
		.def = 480,
		.reload = CONF_RELOAD_LIVE,
		.change = GW_CHANGE_LIMITS,
	},
	{
		.name = "max_sessions_per_client",
		.type = CONF_OPT_UINT,
		.offset = ROUTE_FIELD(max_sessions_per_client),
		.min = 1,
		.max = 65536,
		.step = 1,
		.def = 32,
		.reload = CONF_RELOAD_LIVE,
		.change = GW_CHANGE_LIMITS,
	},
	{
		.name = "max_session_memory",
		.type = CONF_OPT_UINT,
		.offset = ROUTE_FIELD(max_session_memory),
		.min = 2 * MIB,
		.max = 1024 * MIB,
		.step = 1,
		.def = 32 * MIB,
		.reload = CONF_RELOAD_LIVE,
		.change = GW_CHANGE_LIMITS,
	},
	{
		.name = "source_port",
		.type = CONF_OPT_SOURCE_PORT,
		.def = GW_SOURCE_PORT_RESERVED,
		.reload = CONF_RELOAD_LIVE,
		.change = GW_CHANGE_SOURCE_PORT,
	},
	{
		.name = "allowed_clients",
		.type = CONF_OPT_CIDRS,
		.reload = CONF_RELOAD_LIVE,
		.change = GW_CHANGE_CLIENTS,
	},
	{
		.name = "ulb_rules",
		.type = CONF_OPT_PATHS,
		.reload = CONF_RELOAD_LIVE,
		.change = GW_CHANGE_ULB_RULES,
	},
	{
		.name = "reply_size_estimate",
		.type = CONF_OPT_UINT,
		.offset = ROUTE_FIELD(reply_size_estimate),
		.min = 4 * KIB,
		.max = 16 * MIB,
		.step = 1,
		.def = 1 * MIB,
		.reload = CONF_RELOAD_LIVE,
		.change = GW_CHANGE_ULB_RULES,
	},
	/* NFSv3's side protocols on the route's address (gateway/side/side_route.h). */
	{
		.name = "portmapper_port",
		.type = CONF_OPT_UINT,
		.offset = ROUTE_FIELD(portmapper_port),
		.min = 0,
		.max = 65535,
		.step = 1,
		.def = 0,
		.reload = CONF_RELOAD_RESTART,
		.restart_why = restart_sockets,
	},
	{
		.name = "mount_port",
		.type = CONF_OPT_UINT,
		.offset = ROUTE_FIELD(mount_port),
		.min = 0,
		.max = 65535,
		.step = 1,
		.def = 0,
		.reload = CONF_RELOAD_RESTART,
		.restart_why = restart_sockets,
	},
	{
		.name = "upstream_mountd_port",
		.type = CONF_OPT_UINT,
		.offset = ROUTE_FIELD(upstream_mountd_port),
		.min = 0,
		.max = 65535,
		.step = 1,
		.def = 0,
		.reload = CONF_RELOAD_RESTART,
		.restart_why = restart_sockets,
	},
	{
		.name = "max_rpcrdma_version",
		.type = CONF_OPT_UINT,
		.offset = ROUTE_FIELD(max_rpcrdma_version),
		.min = 1,
		.max = 2,
		.step = 1,
		.def = 1,
		.reload = CONF_RELOAD_LIVE,
		.change = GW_CHANGE_LIMITS,
	},
	/*
	 * Upstream connections shared by all the route's clients (issue 17):
	 * RDMA in forward mode, TCP in reverse mode; 0 keeps one per client. Restart: the channels
	 * and their XID map are made when the route starts.
	 */
	{
		.name = "upstream_connections",
		.type = CONF_OPT_UINT,
		.offset = ROUTE_FIELD(upstream_connections),
		.min = 0,
		.max = 64,
		.step = 1,
		.def = 0,
		.reload = CONF_RELOAD_RESTART,
		.restart_why =
			"the route's shared connections and XID map are set up when it starts",
	},
	/*
	 * Records a client's TCP connection delivers in one turn of its
	 * worker's event loop, and twice that the completions an RDMA
	 * connection of the route takes in one pass: how long one busy
	 * connection holds the loop while other clients' calls wait in their
	 * sockets. Restart: a connection's budget is set when it opens.
	 */
	{
		.name = "turn_budget",
		.type = CONF_OPT_UINT,
		.offset = ROUTE_FIELD(turn_budget),
		.min = 1,
		.max = 256,
		.step = 1,
		.def = 16,
		.reload = CONF_RELOAD_RESTART,
		.restart_why = "a connection's turn budget is set when it opens",
	},
	/*
	 * Forward routes: the turn budget while the worker's loop is serving
	 * more than one client (two client connections delivered calls within
	 * the last 20 ms). A client with the loop to itself keeps its full
	 * turn_budget, which makes nobody wait. Above turn_budget it is
	 * turn_budget. Restart, as turn_budget.
	 */
	{
		.name = "turn_budget_contended",
		.type = CONF_OPT_UINT,
		.offset = ROUTE_FIELD(turn_budget_contended),
		.min = 1,
		.max = 256,
		.step = 1,
		.def = 4,
		.reload = CONF_RELOAD_RESTART,
		.restart_why = "a connection's turn budget is set when it opens",
	},
	/*
	 * On a shared route, the calls one client may have in flight on its
	 * connection (0: half of credits, the default). Lower keeps a client
	 * with a deep queue from filling the server's queue ahead of the
	 * others' calls, at the cost of that client's throughput when alone.
	 * Restart: a client's cap is set when it joins its connection.
	 */
	{
		.name = "shared_client_max_in_flight",
		.type = CONF_OPT_UINT,
		.offset = ROUTE_FIELD(shared_client_max_in_flight),
		.min = 0,
		.max = 1024,
		.step = 1,
		.def = 0,
		.reload = CONF_RELOAD_RESTART,
		.restart_why = "a client's cap on a shared connection is set when it joins it",
	},
	/*
	 * On a shared route, the calls one client may have in flight while
	 * the connection serves other clients too (two clients' calls sent
	 * within 20 ms of each other; 0: shared_client_max_in_flight always).
	 * The server serves the calls it holds in order, so a deep client's
	 * calls in flight are what the others' wait behind; a client alone
	 * keeps its whole allowance. Restart: the connections' schedulers are
	 * set up when the route starts.
	 */
	{
		.name = "shared_client_max_in_flight_contended",
		.type = CONF_OPT_UINT,
		.offset = ROUTE_FIELD(shared_client_max_in_flight_contended),
		.min = 0,
		.max = 1024,
		.step = 1,
		.def = 4,
		.reload = CONF_RELOAD_RESTART,
		.restart_why = "a shared connection's scheduler is set up when the route starts",
	},
	/*
	 * The NFSv3 side services' limits (issue 13): each sizes a table the
	 * route's NLM relay, callback, async or notify module allocates when
	 * it starts (gateway/side/side_route.c), hence restart. The defaults are the
	 * modules' own.
	 */
	{
		.name = "upstream_nlm_port",
		.type = CONF_OPT_UINT,
		.offset = ROUTE_FIELD(upstream_nlm_port),
		.min = 0,
		.max = 65535,
		.step = 1,
		.def = 0,
		.reload = CONF_RELOAD_RESTART,
		.restart_why = restart_sockets,
	},
	{
		.name = "upstream_nsm_port",
		.type = CONF_OPT_UINT,
		.offset = ROUTE_FIELD(upstream_nsm_port),
		.min = 0,
		.max = 65535,
		.step = 1,
		.def = 0,
		.reload = CONF_RELOAD_RESTART,
		.restart_why = restart_sockets,
	},
	{
		.name = "nlm_max_clients",
		.type = CONF_OPT_UINT,
		.offset = ROUTE_FIELD(nlm_max_clients),
		.min = 1,
		.max = 65536,
		.step = 1,
		.def = 1024,
		.reload = CONF_RELOAD_RESTART,
		.restart_why = restart_nlm,
	},
	{
		.name = "nlm_max_clients_per_prefix",
		.type = CONF_OPT_UINT,
		.offset = ROUTE_FIELD(nlm_max_clients_per_prefix),
		.min = 0,
		.max = 65536,
		.step = 1,
		.def = 0,
		.reload = CONF_RELOAD_RESTART,
		.restart_why = restart_nlm,
	},
	{
		.name = "nlm_max_owners",
		.type = CONF_OPT_UINT,
		.offset = ROUTE_FIELD(nlm_max_owners),
		.min = 1,
		.max = 65535,
		.step = 1,
		.def = 4096,
		.reload = CONF_RELOAD_RESTART,
		.restart_why = restart_nlm,
	},
	{
		.name = "nlm_max_owners_per_client",
		.type = CONF_OPT_UINT,
		.offset = ROUTE_FIELD(nlm_max_owners_per_client),
		.min = 1,
		.max = 65535,
		.step = 1,
		.def = 1024,
		.reload = CONF_RELOAD_RESTART,
		.restart_why = restart_nlm,
	},
	{
		.name = "nlm_max_locks",
		.type = CONF_OPT_UINT,
		.offset = ROUTE_FIELD(nlm_max_locks),
		.min = 1,
		.max = 1048576,
		.step = 1,
		.def = 16384,
		.reload = CONF_RELOAD_RESTART,
		.restart_why = restart_nlm,
	},
	{
		.name = "nlm_max_locks_per_client",
		.type = CONF_OPT_UINT,
		.offset = ROUTE_FIELD(nlm_max_locks_per_client),
		.min = 1,
		.max = 1048576,
		.step = 1,
		.def = 1024,
		.reload = CONF_RELOAD_RESTART,
		.restart_why = restart_nlm,
	},
	{
		.name = "nlm_max_pending_calls",
		.type = CONF_OPT_UINT,
		.offset = ROUTE_FIELD(nlm_max_pending_calls),
		.min = 1,
		.max = 4096,
		.step = 1,
		.def = 128,
		.reload = CONF_RELOAD_RESTART,
		.restart_why = restart_nlm,
	},
	{
		.name = "nlm_call_timeout_s",
		.type = CONF_OPT_SECONDS,
		.offset = ROUTE_FIELD(nlm_call_timeout_ms),
		.min = 1000,
		.max = 300000,
		.step = 1,
		.def = 15000,
		.reload = CONF_RELOAD_RESTART,
		.restart_why = restart_nlm,
	},
	{
		.name = "nlm_callback_max_pending",
		.type = CONF_OPT_UINT,
		.offset = ROUTE_FIELD(nlm_callback_max_pending),
		.min = 1,
		.max = 4096,
		.step = 1,
		.def = 64,
		.reload = CONF_RELOAD_RESTART,
		.restart_why = restart_nlm,
	},
	{
		.name = "nlm_async_max_pending",
		.type = CONF_OPT_UINT,
		.offset = ROUTE_FIELD(nlm_async_max_pending),
		.min = 1,
		.max = 4096,
		.step = 1,
		.def = 64,
		.reload = CONF_RELOAD_RESTART,
		.restart_why = restart_nlm,
	},
	{
		.name = "nlm_async_max_pending_per_client",
		.type = CONF_OPT_UINT,
		.offset = ROUTE_FIELD(nlm_async_max_pending_per_client),
		.min = 1,
		.max = 4096,
		.step = 1,
		.def = 16,
		.reload = CONF_RELOAD_RESTART,
		.restart_why = restart_nlm,
	},
	{
		.name = "nlm_notify_max_hosts",
		.type = CONF_OPT_UINT,
		.offset = ROUTE_FIELD(nlm_notify_max_hosts),
		.min = 1,
		.max = 65536,
		.step = 1,
		.def = 1024,
		.reload = CONF_RELOAD_RESTART,
		.restart_why = restart_nlm,
	},
	{
		.name = "nlm_reclaim_window_s",
		.type = CONF_OPT_SECONDS,
		.offset = ROUTE_FIELD(nlm_reclaim_window_ms),
		.min = 1000,
		.max = 3600000,
		.step = 1,
		.def = 90000,
		.reload = CONF_RELOAD_RESTART,
		.restart_why = restart_nlm,
	},
	{
		.name = "state_directory",
		.type = CONF_OPT_DIR,
		.max = STATE_DIR_MAX,
		.reload = CONF_RELOAD_RESTART,
		.restart_why = "the route's state files are read when it starts",
	},
};
const size_t conf_options_count = CONF_ARRAY_SIZE(conf_options);

static const char *const source_port_names[] = {
	[GW_SOURCE_PORT_RESERVED] = "reserved",
	[GW_SOURCE_PORT_ANY] = "any",
};

static uint32_t *field_u32(void *obj, const struct conf_option *opt)
{
	return (uint32_t *)((char *)obj + opt->offset);
}

static uint32_t route_u32_get(const struct gw_route *r, const struct conf_option *opt)
{
	return *(const uint32_t *)((const char *)r + opt->offset);
}

/* ---- life cycle ---------------------------------------------------------- */

void conf_route_init_defaults(struct gw_route *r)
{
	for (size_t i = 0; i < conf_options_count; i++) {
		const struct conf_option *opt = &conf_options[i];
		if (opt->type == CONF_OPT_UINT || opt->type == CONF_OPT_SECONDS ||
		    opt->type == CONF_OPT_BOOL)
			*field_u32(r, opt) = opt->def;
	}
	r->source_port = GW_SOURCE_PORT_RESERVED;
}

static char **paths_dup(char *const *paths, size_t n)
{
	char **copy = calloc(n, sizeof(*copy));

	for (size_t i = 0; copy && i < n; i++) {
		copy[i] = strdup(paths[i]);
		if (!copy[i]) {
			while (i-- > 0)
				free(copy[i]);
			free(copy);
			return NULL;
		}
	}
	return copy;
}

static void paths_free(char **paths, size_t n)
{
	for (size_t i = 0; paths && i < n; i++)
		free(paths[i]);
	free(paths);
}

bool conf_route_copy_options(struct gw_route *dst, const struct gw_route *src)
{
	struct gw_cidr *cidrs = NULL;
	char **paths = NULL;
	char *dir = NULL;

	if (src->state_directory && !(dir = strdup(src->state_directory)))
		return false;
	if (src->allowed_clients_count) {
		cidrs = malloc(src->allowed_clients_count * sizeof(*cidrs));
		if (!cidrs) {
			free(dir);
			return false;
		}
		memcpy(cidrs, src->allowed_clients, src->allowed_clients_count * sizeof(*cidrs));
	}
	if (src->ulb_rules_count) {
		paths = paths_dup(src->ulb_rules, src->ulb_rules_count);
		if (!paths) {
			free(cidrs);
			free(dir);
			return false;
		}
	}
	for (size_t i = 0; i < conf_options_count; i++) {
		const struct conf_option *opt = &conf_options[i];
		if (opt->type == CONF_OPT_UINT || opt->type == CONF_OPT_SECONDS ||
		    opt->type == CONF_OPT_BOOL)
			*field_u32(dst, opt) = route_u32_get(src, opt);
	}
	dst->source_port = src->source_port;
	free(dst->allowed_clients);
	dst->allowed_clients = cidrs;
	dst->allowed_clients_count = src->allowed_clients_count;
	paths_free(dst->ulb_rules, dst->ulb_rules_count);
	dst->ulb_rules = paths;
	dst->ulb_rules_count = src->ulb_rules_count;
	free(dst->state_directory);
	dst->state_directory = dir;
	return true;
}

void conf_route_release(struct gw_route *r)
{
	free(r->name);
	free(r->listen.text);
	free(r->upstream.text);
	free(r->allowed_clients);
	paths_free(r->ulb_rules, r->ulb_rules_count);
	free(r->state_directory);
	conf_qos_release(r->qos, r->qos_count);
	memset(r, 0, sizeof(*r));
}

/* ---- describing values --------------------------------------------------- */

/* Milliseconds as seconds, without trailing zeros: 100 -> "0.1". */
static void format_seconds(uint32_t ms, char *buf, size_t len)
{
	if (ms % 1000 == 0) {
		snprintf(buf, len, "%u", ms / 1000);
		return;
	}
	snprintf(buf, len, "%u.%03u", ms / 1000, ms % 1000);
	char *end = buf + strlen(buf);
	while (end[-1] == '0')
		*--end = '\0';
}

/* What an option takes, after "expected". */
static void option_expect(const struct conf_option *opt, char *buf, size_t len)
{
	char lo[16], hi[16];

	switch (opt->type) {
	case CONF_OPT_UINT:
		if (opt->step > 1)
			snprintf(buf, len, "an integer %u..%u, a multiple of %u", opt->min,
				 opt->max, opt->step);
		else
			snprintf(buf, len, "an integer %u..%u", opt->min, opt->max);
		break;
	case CONF_OPT_SECONDS:
		format_seconds(opt->min, lo, sizeof(lo));
		format_seconds(opt->max, hi, sizeof(hi));
		snprintf(buf, len, "a number of seconds %s..%s", lo, hi);
		break;
	case CONF_OPT_SOURCE_PORT:
		snprintf(buf, len, "\"reserved\" or \"any\"");
		break;
	case CONF_OPT_CIDRS:
		snprintf(buf, len,
			 "a non-empty array of networks (omit the key to allow every "
			 "client)");
		break;
	case CONF_OPT_PATHS:
		snprintf(buf, len,
			 "a non-empty array of file names (omit the key for the stock "
			 "rules)");
		break;
	case CONF_OPT_DIR:
		snprintf(buf, len, "an absolute directory name of at most %u bytes", opt->max);
		break;
	case CONF_OPT_BOOL:
		snprintf(buf, len, "true or false");
		break;
	}
}

void conf_option_format(const struct conf_option *opt, const struct gw_route *r, char *buf,
			size_t len)
{
	switch (opt->type) {
	case CONF_OPT_UINT:
		snprintf(buf, len, "%u", route_u32_get(r, opt));
		break;
	case CONF_OPT_SECONDS:
		format_seconds(route_u32_get(r, opt), buf, len);
		break;
	case CONF_OPT_SOURCE_PORT:
		snprintf(buf, len, "\"%s\"", source_port_names[r->source_port]);
		break;
	case CONF_OPT_CIDRS:
		snprintf(buf, len, "%zu networks", r->allowed_clients_count);
		break;
	case CONF_OPT_PATHS:
		snprintf(buf, len, "%zu files", r->ulb_rules_count);
		break;
	case CONF_OPT_DIR:
		snprintf(buf, len, "\"%s\"", r->state_directory ? r->state_directory : "");
		break;
	case CONF_OPT_BOOL:
		snprintf(buf, len, "%s", route_u32_get(r, opt) ? "true" : "false");
		break;
	}
}

bool conf_option_differs(const struct conf_option *opt, const struct gw_route *a,
			 const struct gw_route *b)
{
	switch (opt->type) {
	case CONF_OPT_UINT:
	case CONF_OPT_SECONDS:
	case CONF_OPT_BOOL:
		return route_u32_get(a, opt) != route_u32_get(b, opt);
	case CONF_OPT_SOURCE_PORT:
		return a->source_port != b->source_port;
	case CONF_OPT_CIDRS:
		if (a->allowed_clients_count != b->allowed_clients_count)
			return true;
		for (size_t i = 0; i < a->allowed_clients_count; i++) {
			if (!conf_cidr_equal(&a->allowed_clients[i], &b->allowed_clients[i]))
				return true;
		}
		return false;
	case CONF_OPT_PATHS:
		if (a->ulb_rules_count != b->ulb_rules_count)
			return true;
		for (size_t i = 0; i < a->ulb_rules_count; i++) {
			if (strcmp(a->ulb_rules[i], b->ulb_rules[i]) != 0)
				return true;
		}
		return false;
	case CONF_OPT_DIR:
		if (!a->state_directory || !b->state_directory)
			return a->state_directory != b->state_directory;
		return strcmp(a->state_directory, b->state_directory) != 0;
	}
	return false;
}

/* ---- loading ------------------------------------------------------------- */

static void fail_expected(const struct conf_report *rep, const struct conf_where *w,
			  const struct conf_option *opt, const json_t *v)
{
	char expect[160], got[96];

	option_expect(opt, expect, sizeof(expect));
	conf_describe(v, got, sizeof(got));
	conf_fail(rep, w, CONF_AT_VALUE, "expected %s, got %s", expect, got);
}

static void load_uint(const struct conf_report *rep, const struct conf_where *w, json_t *v,
		      const struct conf_option *opt, void *obj)
{
	json_int_t n;

	if (!json_is_integer(v)) {
		fail_expected(rep, w, opt, v);
		return;
	}
	n = json_integer_value(v);
	if (n < opt->min || n > opt->max || n % opt->step != 0) {
		fail_expected(rep, w, opt, v);
		return;
	}
	*field_u32(obj, opt) = (uint32_t)n;
}

/* Seconds may have a fraction; they are kept as whole milliseconds. */
static void load_seconds(const struct conf_report *rep, const struct conf_where *w, json_t *v,
			 const struct conf_option *opt, void *obj)
{
	double s;

	if (!json_is_number(v)) {
		fail_expected(rep, w, opt, v);
		return;
	}
	s = json_number_value(v);
	/* Written so that NaN, which JSON cannot carry anyway, would fail too. */
	if (!(s * 1000.0 >= opt->min && s * 1000.0 <= opt->max)) {
		fail_expected(rep, w, opt, v);
		return;
	}
	*field_u32(obj, opt) = (uint32_t)llround(s * 1000.0);
}

static void load_source_port(const struct conf_report *rep, const struct conf_where *w, json_t *v,
			     struct gw_route *r)
{
	unsigned i;

	if (conf_load_enum(rep, w, v, source_port_names, CONF_ARRAY_SIZE(source_port_names), &i))
		r->source_port = (enum gw_source_port)i;
}

/* The array of @v, or NULL after reporting that it is not a non-empty one. */
static json_t *nonempty_array(const struct conf_report *rep, const struct conf_where *w, json_t *v,
			      const struct conf_option *opt)
{
	if (!json_is_array(v) || json_array_size(v) == 0) {
		fail_expected(rep, w, opt, v);
		return NULL;
	}
	return v;
}

bool conf_load_cidr_list(const struct conf_report *rep, const struct conf_where *w, json_t *v,
			 const char *expect, struct gw_cidr **out, size_t *count)
{
	struct gw_cidr *list;
	size_t n, i, bad = 0;
	json_t *item;
	char got[96];

	if (!json_is_array(v) || json_array_size(v) == 0) {
		conf_describe(v, got, sizeof(got));
		conf_fail(rep, w, CONF_AT_VALUE, "expected %s, got %s", expect, got);
		return false;
	}
	n = json_array_size(v);
	list = calloc(n, sizeof(*list));
	if (!list) {
		conf_fail(rep, w, CONF_AT_VALUE, "out of memory");
		return false;
	}
	for (i = 0; i < n; i++) {
		item = json_array_get(v, i);
		struct conf_where iw;
		struct conf_why why;

		conf_where_index(&iw, w, i);
		conf_describe(item, got, sizeof(got));
		if (!json_is_string(item)) {
			conf_fail(rep, &iw, CONF_AT_VALUE,
				  "expected a network as a string, as in \"192.0.2.0/24\", got %s",
				  got);
			bad++;
		} else if (!conf_parse_cidr(json_string_value(item), &list[i], &why)) {
			conf_fail(rep, &iw, CONF_AT_VALUE, "expected %s, got %s", why.expect, got);
			bad++;
		}
	}
	if (bad) {
		free(list);
		return false;
	}
	free(*out);
	*out = list;
	*count = n;
	return true;
}

static void load_cidrs(const struct conf_report *rep, const struct conf_where *w, json_t *v,
		       const struct conf_option *opt, struct gw_route *r)
{
	char expect[160];

	option_expect(opt, expect, sizeof(expect));
	conf_load_cidr_list(rep, w, v, expect, &r->allowed_clients, &r->allowed_clients_count);
}

/* Why @path cannot be read as a rule file, or NULL when it can. */
static const char *unreadable(const char *path)
{
	struct stat st;

	if (stat(path, &st) != 0)
		return strerror(errno);
	if (!S_ISREG(st.st_mode))
		return "not a regular file";
	if (access(path, R_OK) != 0)
		return strerror(errno);
	return NULL;
}

/*
 * A rule file named relatively is found from the configuration file's
 * directory, never from the working directory, which a daemon changes.
 * The path is kept absolute; the file is checked now so that --check
 * finds a misspelled name, and read by the ULB module.
 */
static char *rule_path(const struct conf_report *rep, const struct conf_where *w, const char *name,
		       const char *base)
{
	char *full = NULL;
	const char *why;

	if (name[0] == '/') {
		full = strdup(name);
	} else if (!base) {
		conf_fail(rep, w, CONF_AT_VALUE,
			  "expected an absolute path (the directory of %s is unknown), got \"%s\"",
			  rep->path, name);
		return NULL;
	} else if (asprintf(&full, "%s/%s", base, name) < 0) {
		full = NULL;
	}
	if (!full) {
		conf_fail(rep, w, CONF_AT_VALUE, "out of memory");
		return NULL;
	}
	why = unreadable(full);
	if (why) {
		conf_fail(rep, w, CONF_AT_VALUE,
			  "expected a readable rule file, got \"%s\" (%s: %s)", name, full, why);
		free(full);
		return NULL;
	}
	return full;
}

static void load_paths(const struct conf_report *rep, const struct conf_where *w, json_t *v,
		       const struct conf_option *opt, struct gw_route *r, const char *base)
{
	size_t n, i, bad = 0;
	json_t *item;
	char **list;

	if (!nonempty_array(rep, w, v, opt))
		return;
	n = json_array_size(v);
	list = calloc(n, sizeof(*list));
	if (!list) {
		conf_fail(rep, w, CONF_AT_VALUE, "out of memory");
		return;
	}
	for (i = 0; i < n; i++) {
		item = json_array_get(v, i);
		struct conf_where iw;
		const char *name = json_string_value(item);

		conf_where_index(&iw, w, i);
		if (!name || !name[0]) {
			char got[96];
			conf_describe(item, got, sizeof(got));
			conf_fail(rep, &iw, CONF_AT_VALUE, "expected a file name, got %s", got);
			bad++;
			continue;
		}
		list[i] = rule_path(rep, &iw, name, base);
		if (!list[i])
			bad++;
	}
	if (bad) {
		paths_free(list, n);
		return;
	}
	paths_free(r->ulb_rules, r->ulb_rules_count);
	r->ulb_rules = list;
	r->ulb_rules_count = n;
}

/*
 * An absolute directory: the gateway runs with / as its working directory,
 * so a relative one would depend on how it was started.
 */
static void load_dir(const struct conf_report *rep, const struct conf_where *w, json_t *v,
		     const struct conf_option *opt, struct gw_route *r)
{
	const char *s = json_is_string(v) ? json_string_value(v) : NULL;
	size_t n = s ? json_string_length(v) : 0;

	if (!s || s[0] != '/' || n > opt->max || strlen(s) != n) {
		fail_expected(rep, w, opt, v);
		return;
	}
	char *copy = strdup(s);
	if (!copy) {
		conf_fail(rep, w, CONF_AT_VALUE, "out of memory");
		return;
	}
	free(r->state_directory);
	r->state_directory = copy;
}

static void load_bool(const struct conf_report *rep, const struct conf_where *w, json_t *v,
		      const struct conf_option *opt, struct gw_route *r)
{
	if (!json_is_boolean(v)) {
		fail_expected(rep, w, opt, v);
		return;
	}
	*field_u32(r, opt) = json_is_true(v) ? 1 : 0;
}

void conf_load_number(const struct conf_report *rep, const struct conf_where *w, json_t *v,
		      const struct conf_option *opt, void *obj)
{
	if (opt->type == CONF_OPT_SECONDS)
		load_seconds(rep, w, v, opt, obj);
	else
		load_uint(rep, w, v, opt, obj);
}

void conf_load_options(const struct conf_report *rep, const struct conf_where *w, json_t *obj,
		       const char *base, struct gw_route *r)
{
	for (size_t i = 0; i < conf_options_count; i++) {
		const struct conf_option *opt = &conf_options[i];
		json_t *v = json_object_get(obj, opt->name);
		struct conf_where ow;

		if (!v)
			continue;
		conf_where_member(&ow, w, opt->name);
		switch (opt->type) {
		case CONF_OPT_UINT:
			load_uint(rep, &ow, v, opt, r);
			break;
		case CONF_OPT_SECONDS:
			load_seconds(rep, &ow, v, opt, r);
			break;
		case CONF_OPT_SOURCE_PORT:
			load_source_port(rep, &ow, v, r);
			break;
		case CONF_OPT_CIDRS:
			load_cidrs(rep, &ow, v, opt, r);
			break;
		case CONF_OPT_PATHS:
			load_paths(rep, &ow, v, opt, r, base);
			break;
		case CONF_OPT_DIR:
			load_dir(rep, &ow, v, opt, r);
			break;
		case CONF_OPT_BOOL:
			load_bool(rep, &ow, v, opt, r);
			break;
		}
	}
}

const char *const *conf_source_port_names(size_t *n)
{
	*n = CONF_ARRAY_SIZE(source_port_names);
	return source_port_names;
}
