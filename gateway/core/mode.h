/* SPDX-License-Identifier: MIT */
/*
 * gateway/core/mode.h - a route mode as the engine sees it.
 *
 * The engine (gateway/core/engine.c) runs routes: listeners, admission,
 * sessions, drain, stats. What happens to a client once admitted is its
 * route's mode's business (forward: TCP clients, RDMA upstream; reverse:
 * RDMA clients, TCP upstream). Each mode fills one const struct
 * gw_mode_ops; the top of the program lists them (gateway/modes.h) and
 * hands the list to every engine, which reaches a mode only through it,
 * as the kernel's RPC client reaches a transport through its xprt_class.
 *
 * None of these is on the per-call path: accept, route setup, stop and
 * stats only.
 */
#ifndef GW_GATEWAY_MODE_H
#define GW_GATEWAY_MODE_H

#include <stdbool.h>
#include <stdint.h>

#include "conf/config.h"

struct gw_route_rt;
struct gw_stats_shared;
struct rconn_params;
struct rconn_ops;
struct rdma_conn_param;
struct sockaddr;

struct gw_mode_ops {
	const char *name; /* "forward", "reverse": logs and /stats */
	/*
	 * The transport the route's clients come in on, hence the listener the
	 * engine opens: a TCP listener on every worker (accept), or worker 0's
	 * RDMA listener (listen_params, rdma_accept).
	 */
	enum gw_transport client_transport;
	/*
	 * The route's TCP connections are its clients (not its upstream): they
	 * take turns under contention and timestamp their receives
	 * (common/turns.h, counters.h socket_us).
	 */
	bool tcp_clients;

	/*
	 * Optional: the route is starting, before it listens; set up the
	 * mode's state (route->mode_state). -errno when it cannot; route_free
	 * is called all the same.
	 */
	int (*route_init)(struct gw_route_rt *route);

	/* TCP-facing: a client's connection that the route admitted. Owns @fd. */
	void (*accept)(struct gw_route_rt *route, int fd, const struct sockaddr *peer);

	/* RDMA-facing: the RDMA listener's connection parameters for @r. */
	void (*listen_params)(const struct gw_route *r, struct rconn_params *p);
	/*
	 * RDMA-facing: a client's connection request that the route admitted:
	 * make its session. False refuses the connection. The arguments are
	 * the rlistener accept callback's (rdma/conn.h).
	 */
	bool (*rdma_accept)(struct gw_route_rt *route, const struct sockaddr *peer,
			    const uint8_t *pdata, uint8_t pdata_len,
			    const struct rdma_conn_param *req, struct rconn_params *params,
			    const struct rconn_ops **ops, void **owner);

	/*
	 * Optional: the route is stopping and its sessions are shut down;
	 * close what the mode keeps beside them (shared upstream connections).
	 * True while something is still closing: the engine runs its loop and
	 * asks again.
	 */
	bool (*route_close)(struct gw_route_rt *route);
	/*
	 * The route is gone: free the mode's state, once nothing refers to it
	 * (what still does is left to the process's end). Called for every
	 * route, whether route_init ran, failed or not.
	 */
	void (*route_free)(struct gw_route_rt *route);
	/* The route's shared upstream connections for /stats; false when it has none. */
	bool (*route_stats)(const struct gw_route_rt *route, struct gw_stats_shared *out);
};

/*
 * A table of modes indexed by configuration mode (gateway/modes.h): the
 * entry for @mode, or NULL when the table has none.
 */
static inline const struct gw_mode_ops *gw_mode_find(const struct gw_mode_ops *const *table,
						     enum gw_route_mode mode)
{
	return (unsigned)mode < GW_MODE_COUNT ? table[mode] : NULL;
}

/* The modes there are (gateway/forward/forward.c, gateway/reverse/reverse.c). */
extern const struct gw_mode_ops gw_forward_mode;
extern const struct gw_mode_ops gw_reverse_mode;

#endif
