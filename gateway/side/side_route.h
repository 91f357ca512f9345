/* SPDX-License-Identifier: MIT */
/*
 * gateway/side/side_route.h - the NFSv3 side services of one route: a portmapper
 * (rpcbind) on the route's listen address, and what it advertises: the
 * MOUNT relay, the NLM relay (lock owners rewritten per client,
 * gateway/side/nlm/nlm_relay.h) and the NSM service that turns a client's SM_NOTIFY
 * into unlocks of its locks. Beside them, on the gateway's address toward
 * the server, the NLM callback service that relays the server's GRANTED to
 * the client (gateway/side/nlm/nlm_callback.h). Forward routes relay to the NFS/RDMA server's
 * host, reverse routes to the TCP server's host.
 *
 * An unmodified NFSv3 client mounts GATEWAY:/export in one of two ways:
 * - a route on one address with "portmapper_port" answers the portmapper
 *   itself there: NFS (the route's listen port, forward routes only), MOUNT
 *   (the relay's port), NLM and NSM. That portmapper binds the route's own
 *   listen address, never the wildcard: a host rpcbind may keep port 111
 *   on the host's other addresses (docs/forward-mode.md);
 * - a route on the wildcard address registers the same services with the
 *   host's rpcbind, as every Linux RPC service does, when one runs
 *   (gateway/side/rpc/rpcb_reg.h), and unregisters them at stop. No
 *   rpcbind, or another live service holding one of the programs (the
 *   kernel's lockd when this host is an NFS client): no side services,
 *   logged; the route's NFS goes on.
 * Its MOUNT calls go on to the server's mountd.
 */
#ifndef GW_GATEWAY_SIDEROUTE_H
#define GW_GATEWAY_SIDEROUTE_H

#include <stdbool.h>
#include <stddef.h>

struct event_base;
struct gw_counters;
struct gw_route;
struct gw_side;
struct gw_stats_nlm;
struct rpcb_reg_ops;

/* Which way a route offers the NFSv3 side services (side_route.h, above). */
enum gw_side_way {
	GW_SIDE_NONE,		/* none (one address, no portmapper_port) */
	GW_SIDE_OWN_PORTMAPPER, /* its own portmapper on its listen address */
	GW_SIDE_HOST_RPCBIND,	/* registered with the host's rpcbind (the wildcard) */
};

enum gw_side_way gw_side_way(const struct gw_route *route);

/*
 * One line saying which way @route offers plain NFSv3, for --check and
 * the log; false when it cannot (the wildcard, and no rpcbind answers
 * through @ops; NULL: the host's rpcbind).
 */
bool gw_side_describe(const struct gw_route *route, const struct rpcb_reg_ops *ops, char *out,
		      size_t outlen);

/*
 * Start the side services of @route, counting into @counters (the route's
 * totals). NULL without error when the route has none (or, on the
 * wildcard, cannot register them: logged); NULL with a message in @err
 * when they cannot start (set *@failed).
 */
struct gw_side *gw_side_start(struct event_base *base, const struct gw_route *route,
			      struct gw_counters *counters, int *failed, char *err, size_t errlen);

/* The same, registering through @ops (NULL: the host's rpcbind): for tests. */
struct gw_side *gw_side_start_with(struct event_base *base, const struct gw_route *route,
				   struct gw_counters *counters, const struct rpcb_reg_ops *ops,
				   int *failed, char *err, size_t errlen);

/* Stop, after unregistering from the host's rpcbind what the start registered. */
void gw_side_stop(struct gw_side *side);

/*
 * After a configuration reload, on the side's own thread: every service
 * and relay of @side takes @route, the same route in the new configuration
 * (its allowed_clients and limits that may change live; the old
 * configuration is freed after this). NULL @side: nothing.
 */
void gw_side_set_route(struct gw_side *side, const struct gw_route *route);

/* The NLM relay's figures in @out; false when @side is NULL (no side services). */
bool gw_side_nlm_stats(const struct gw_side *side, struct gw_stats_nlm *out);

#endif
