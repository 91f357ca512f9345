/* SPDX-License-Identifier: MIT */
/*
 * gateway/stats/stats_http.h - the traffic-statistics endpoint.
 *
 * A small HTTP server (libevent's evhttp) on the gateway's event loop,
 * meant to be bound to loopback:
 *
 *   GET /stats             every counter as JSON: routes, their totals and
 *                          their live sessions (?sessions=0: without them)
 *   GET /metrics           Prometheus text format 0.0.4, one series set per
 *                          route; GET /metrics?sessions=1 adds per-session
 *                          series (opt-in: one set per NFS client is too many
 *                          for most Prometheus servers)
 *   GET /healthz           "ok" (200): the event loop is turning; "draining"
 *                          (503) once gw_stats_http_set_draining() was
 *                          called, for a load balancer's health check
 *   GET /                  the list of the above
 *
 * Other paths answer 404, other methods 405. A request walks the engine's
 * counters through @snapshot (gateway/counters/counters.h), on the loop's
 * thread, copying them (gateway/stats/stats_copy.h), and its document is
 * rendered from the copy once the walk is over: the walk, which parks the
 * gateway's other workers, lasts only as long as the copy, and the counters
 * are never locked on the data path. A document is reused for the requests
 * that come within ten times what it cost to make, and never more than a
 * second after it was made: a burst of scrapes costs the loop one document
 * of each kind. A client that stalls while sending its request or
 * reading the answer is dropped after the timeout (10 s by default), so it
 * holds neither the loop nor more than one answer's memory. At most
 * max_connections (32 by default) are open at once: while that many are,
 * newcomers are accepted and closed at once, and counted
 * (rpcrdma_gw_stats_connections_refused_total; "stats_connections_refused"
 * in /stats), so that a flood of idle connections cannot hold descriptors
 * and memory without bound.
 */
#ifndef GW_GATEWAY_STATS_HTTP_H
#define GW_GATEWAY_STATS_HTTP_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/time.h>

#include "gateway/counters/counters.h"

struct event_base;
struct gw_stats_http;

/*
 * Listen on @addr (IPv4 or IPv6; port 0 picks a free port) and serve the
 * counters that @snapshot reports for @engine. NULL, with the reason
 * logged, when the address cannot be bound.
 */
struct gw_stats_http *gw_stats_http_start(struct event_base *base, const struct sockaddr *addr,
					  socklen_t addrlen, gw_stats_snapshot_fn snapshot,
					  void *engine);

/* Close the listener and every HTTP connection, and free @sh (NULL is a no-op). */
void gw_stats_http_stop(struct gw_stats_http *sh);

/* The address actually bound, into @ss; returns its length, 0 on error. */
socklen_t gw_stats_http_local_addr(const struct gw_stats_http *sh, struct sockaddr_storage *ss);

/*
 * How long a client may send nothing (mid-request, or idle between requests)
 * or read nothing of its answer before it is disconnected. Applies to
 * connections accepted from then on.
 */
void gw_stats_http_set_timeout(struct gw_stats_http *sh, const struct timeval *tv);

/* At most @n connections at once (stats.max_connections); 0 is taken as 1. */
void gw_stats_http_set_max_connections(struct gw_stats_http *sh, unsigned n);

/* Connections open now, and connections refused so far for the cap. */
unsigned gw_stats_http_connections(const struct gw_stats_http *sh);
uint64_t gw_stats_http_refused(const struct gw_stats_http *sh);

/*
 * The process is leaving (SIGTERM): /healthz answers 503 "draining" from
 * now on, and /stats ("draining": true) and /metrics (rpcrdma_gw_draining 1)
 * say so; documents made before are not reused. @sh NULL is a no-op.
 */
void gw_stats_http_set_draining(struct gw_stats_http *sh, bool draining);

#endif
