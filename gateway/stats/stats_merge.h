/* SPDX-License-Identifier: MIT */
/*
 * gateway/stats/stats_merge.h - one route's figures over several workers.
 *
 * With `workers` > 1 every worker runs its own copy of each route (its own
 * sessions, counters and shared channels), and the stats endpoint shows the
 * route once: its totals summed, its latency by procedure summed slot by
 * slot (the workers' tables give the same procedure different slots), its
 * shared channels side by side, its XID maps' figures summed. The NFSv3
 * side relays run on worker 0 only, so the NLM figures are the one worker's
 * that has them.
 *
 * An accumulator owns every byte the merged gw_stats_route points to; it is
 * valid until gw_stats_route_acc_fini().
 */
#ifndef GW_GATEWAY_STATS_MERGE_H
#define GW_GATEWAY_STATS_MERGE_H

#include "gateway/counters/counters.h"

struct gw_stats_route_acc {
	struct gw_stats_route route; /* what the visitor is given */
	struct gw_counters totals;
	struct gw_hist *proc_upstream_us; /* [GW_PROC_SLOTS], by the slots of totals */
	struct gw_stats_shared shared;
	struct gw_stats_nlm nlm;
	struct gw_stats_qos qos;
	unsigned parts;
};

/* 0, or -ENOMEM (nothing to free then). */
int gw_stats_route_acc_init(struct gw_stats_route_acc *acc);

/* Add one worker's view of the route; the first gives its name, mode and addresses. */
void gw_stats_route_acc_add(struct gw_stats_route_acc *acc, const struct gw_stats_route *r);

void gw_stats_route_acc_fini(struct gw_stats_route_acc *acc);

/* The devices the stats endpoint shows, at most. */
enum { GW_STATS_MAX_DEVICES = 16 };

/* Add @from's figures into @into: one device's pool, as several workers each register it. */
void gw_stats_device_add(struct gw_stats_device *into, const struct gw_stats_device *from);

#endif
