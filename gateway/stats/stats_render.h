/* SPDX-License-Identifier: MIT */
/*
 * gateway/stats/stats_render.h - what the files of the stats endpoint share; not
 * for other modules (their interface is gateway/stats/stats_http.h).
 *
 *   stats_http.c     HTTP: the listener, the endpoints, the connection cap
 *   stats_json.c     /stats, streamed JSON
 *   stats_prom.c     /metrics, Prometheus text format 0.0.4
 *   stats_render.c   the helpers both renderers use
 *
 * A renderer walks the engine through @snapshot and writes as it goes;
 * it returns false when memory ran out on the way. The endpoint hands it
 * a copy of the engines' figures to walk (gateway/stats/stats_copy.h), so
 * that the workers are not parked while it writes.
 */
#ifndef GW_GATEWAY_STATS_RENDER_H
#define GW_GATEWAY_STATS_RENDER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gateway/counters/counters.h"

struct evbuffer;

#define STATS_ARRAY_SIZE(a)		     (sizeof(a) / sizeof((a)[0]))
#define stats_container_of(ptr, type, field) ((type *)((char *)(ptr)-offsetof(type, field)))

/* What the endpoint itself knows, beside the engines' figures. */
struct stats_endpoint_view {
	uint64_t refused; /* connections closed at once for stats.max_connections */
	bool draining;	  /* the process was told to stop (gw_stats_http_set_draining()) */
};

bool stats_render_json(gw_stats_snapshot_fn snapshot, void *engine,
		       const struct stats_endpoint_view *ep, bool with_sessions,
		       struct evbuffer *out);
bool stats_render_prometheus(gw_stats_snapshot_fn snapshot, void *engine,
			     const struct stats_endpoint_view *ep, bool with_sessions,
			     struct evbuffer *out);

const char *stats_or_empty(const char *s);
/* Fixed-point @v / 10^@digits, exactly, without trailing zeros: 1500,3 -> "1.5". */
void stats_format_fixed(char *out, size_t size, uint64_t v, unsigned digits);

/* A procedure slot in use, for sorting. */
struct stats_proc_ref {
	const struct gw_proc_count *pc;
};
/* The slots in use, in (program, version, procedure) order: the table is hashed. */
unsigned stats_procs_sorted(const struct gw_counters *c, struct stats_proc_ref out[GW_PROC_SLOTS]);
void stats_credits_add(struct gw_credit_state *sum, const struct gw_credit_state *c);

#endif
