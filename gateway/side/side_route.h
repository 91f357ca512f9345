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
 * With "portmapper_port" set, an unmodified NFSv3 client can mount
 * GATEWAY:/export: it asks the gateway's portmapper for NFS (the route's
 * listen port, forward routes only) and MOUNT (the relay's port), and its
 * MOUNT calls go on to the server's mountd. The portmapper binds the route's own listen address,
 * never the wildcard: a host rpcbind may keep port 111 on the host's other
 * addresses (it must not hold the wildcard; docs/forward-mode.md).
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

/*
 * Start the side services of @route, counting into @counters (the route's
 * totals). NULL without error when the route has none; NULL with a message
 * in @err when they cannot start (set *@failed).
 */
struct gw_side *gw_side_start(struct event_base *base, const struct gw_route *route,
			      struct gw_counters *counters, int *failed, char *err, size_t errlen);

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
