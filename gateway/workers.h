/* SPDX-License-Identifier: MIT */
/*
 * gateway/workers.h - the gateway's worker threads.
 *
 * One event loop is one core. With `workers` N the gateway runs N engines
 * (gateway/core/engine.h), each on an event loop and thread of its own, with
 * its own RDMA resources (device context, completion queues, registered
 * pools), sessions and counters: nothing on the data path is shared, so
 * nothing there takes a lock. Worker 0 runs on the caller's thread and
 * event_base, beside the stats endpoint and the signal handlers; workers
 * 1..N-1 on threads started here.
 *
 * Every worker listens on each forward route's address; the kernel hands
 * each new connection to the worker its client's address hashes to
 * (tcp_listener_new_steered()), so that all of a client's connections, and
 * the state kept per client (its sessions, its NFSv4.1 back channel found
 * again after a reconnect, its sessions per address), live in one worker.
 * A reverse route's RDMA listener (an RDMA CM port has one) runs on
 * worker 0, which hands each connection to the worker its client's
 * address hashes to by the same rule (gateway/core/handoff.h). The NFSv3 side
 * relays run on worker 0.
 *
 * The caller's thread talks to the others through a command pipe each:
 * drain, reload, stop, and "park" for the stats endpoint, which reads
 * every worker's engine while the other threads wait in a callback of
 * their own loop (a scrape pauses them for the time it takes to copy the
 * figures, gateway/stats/stats_copy.h, and renders once they go on; the
 * alternative, locks or atomics on every counter, would cost every call).
 */
#ifndef GW_GATEWAY_WORKERS_H
#define GW_GATEWAY_WORKERS_H

#include <stddef.h>

#include "conf/config.h"
#include "gateway/counters/counters.h"

struct event_base;
struct gw_workers;

/*
 * How many workers @configured (0: one per online CPU) comes to, given
 * @ncpus online CPUs and @comp_vectors completion vectors of the RDMA
 * devices (0: unknown, no cap). At least 1, at most GW_WORKERS_MAX (conf/config.h).
 */
unsigned gw_workers_resolve(unsigned configured, unsigned ncpus, unsigned comp_vectors);

/*
 * Start the engines of @cfg->workers workers, worker 0 on @base (the
 * caller's thread). NULL with the reason in @err when one cannot start;
 * then none runs.
 */
struct gw_workers *gw_workers_start(struct event_base *base, const struct gw_config *cfg, char *err,
				    size_t errlen);

unsigned gw_workers_count(const struct gw_workers *ws);

/* Drain every worker (gw_engine_drain()); @done runs on the caller's thread once all are. */
void gw_workers_drain(struct gw_workers *ws, unsigned timeout_ms, void (*done)(void *arg),
		      void *arg);

/*
 * Apply @next (accepted by gw_config_reloadable()) to every worker, or to
 * none: every worker's rule files are read first. -errno with the reason
 * in @err when one does not load.
 */
int gw_workers_reload(struct gw_workers *ws, const struct gw_config *next, char *err,
		      size_t errlen);

/* Stop every worker now, join their threads and free everything. */
void gw_workers_stop(struct gw_workers *ws);

/* Live sessions over all workers. */
size_t gw_workers_sessions(const struct gw_workers *ws);

/* The stats endpoint's snapshot function (gw_stats_snapshot_fn) over every worker. */
void gw_workers_snapshot(void *ws, struct gw_stats_visitor *v);

#endif
