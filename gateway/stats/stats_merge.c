/* SPDX-License-Identifier: MIT */
#include "gateway/stats/stats_merge.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

int gw_stats_route_acc_init(struct gw_stats_route_acc *acc)
{
	memset(acc, 0, sizeof(*acc));
	acc->proc_upstream_us = calloc(GW_PROC_SLOTS, sizeof(*acc->proc_upstream_us));
	if (!acc->proc_upstream_us)
		return -ENOMEM;
	/* Whole from the start, as a route's is: a slot's place never moves. */
	if (gw_counters_reserve_procs(&acc->totals) != 0) {
		free(acc->proc_upstream_us);
		acc->proc_upstream_us = NULL;
		return -ENOMEM;
	}
	return 0;
}

void gw_stats_route_acc_fini(struct gw_stats_route_acc *acc)
{
	gw_counters_release(&acc->totals);
	free(acc->proc_upstream_us);
	acc->proc_upstream_us = NULL;
}

/*
 * The latency by procedure follows the slots of each worker's own table:
 * find each used slot's procedure in the merged table. gw_counters_add()
 * has taken the same slots already, so the lookup only finds.
 */
static void acc_add_proc_latency(struct gw_stats_route_acc *acc, const struct gw_stats_route *r)
{
	unsigned nslots, mslots;
	const struct gw_proc_count *procs = gw_counters_procs(r->totals, &nslots);
	struct gw_proc_count *merged = gw_counters_procs(&acc->totals, &mslots);

	if (!r->proc_upstream_us || nslots > GW_PROC_SLOTS)
		return;
	for (unsigned i = 0; i < nslots; i++) {
		const struct gw_proc_count *p = &procs[i];
		if (!p->used)
			continue;
		struct gw_proc_count *q = gw_counters_proc(&acc->totals, p->prog, p->vers, p->proc);
		if (!q)
			continue; /* counted in 'other' by gw_counters_add() */
		size_t slot = (size_t)(q - merged);
		if (slot < mslots && slot < GW_PROC_SLOTS)
			gw_hist_merge(&acc->proc_upstream_us[slot], &r->proc_upstream_us[i]);
	}
}

static void acc_add_shared(struct gw_stats_shared *into, const struct gw_stats_shared *from)
{
	for (uint32_t i = 0; i < from->nchannels && into->nchannels < GW_STATS_MAX_CHANNELS; i++)
		into->channels[into->nchannels++] = from->channels[i];
	into->xid_entries += from->xid_entries;
	into->xid_in_flight += from->xid_in_flight;
	into->xid_answered += from->xid_answered;
	into->xid_kept += from->xid_kept;
	into->xid_kept_clients += from->xid_kept_clients;
	into->xid_new += from->xid_new;
	into->xid_retransmit_in_flight += from->xid_retransmit_in_flight;
	into->xid_retransmit_answered += from->xid_retransmit_answered;
	into->xid_expired += from->xid_expired;
	into->xid_evicted += from->xid_evicted;
	into->xid_evicted_safe_twice += from->xid_evicted_safe_twice;
	into->xid_evicted_own += from->xid_evicted_own;
	into->xid_evicted_other += from->xid_evicted_other;
	into->xid_full += from->xid_full;
	into->xid_stray += from->xid_stray;
	into->bc_kept_now += from->bc_kept_now;
	into->bc_kept += from->bc_kept;
	into->bc_adopted += from->bc_adopted;
	into->bc_expired += from->bc_expired;
	into->bc_replaced += from->bc_replaced;
	into->bc_dropped += from->bc_dropped;
}

/* Every worker has the route's classes, in the same order: summed class by class. */
static void acc_add_qos(struct gw_stats_qos *into, const struct gw_stats_qos *from)
{
	for (uint32_t i = 0; i < into->nclasses && i < from->nclasses; i++) {
		struct gw_stats_qos_class *a = &into->classes[i];
		const struct gw_stats_qos_class *b = &from->classes[i];

		a->calls += b->calls;
		a->bytes_to_server += b->bytes_to_server;
		a->bytes_to_client += b->bytes_to_client;
		a->throttled_us += b->throttled_us;
		a->throttles += b->throttles;
		a->throttled_now += b->throttled_now;
		a->clients += b->clients;
		a->overflow += b->overflow;
	}
}

void gw_stats_route_acc_add(struct gw_stats_route_acc *acc, const struct gw_stats_route *r)
{
	if (acc->parts++ == 0) {
		acc->route.name = r->name;
		acc->route.mode = r->mode;
		acc->route.listen = r->listen;
		acc->route.upstream = r->upstream;
		acc->route.totals = &acc->totals;
	}
	gw_counters_add(&acc->totals, r->totals);
	if (r->proc_upstream_us) {
		acc_add_proc_latency(acc, r);
		acc->route.proc_upstream_us = acc->proc_upstream_us;
	}
	acc->route.live_sessions += r->live_sessions;
	for (unsigned k = 0; k < GW_SESSION_STATE_COUNT; k++)
		acc->route.sessions_by_state[k] += r->sessions_by_state[k];
	if (r->shared) {
		acc_add_shared(&acc->shared, r->shared);
		acc->route.shared = &acc->shared;
	}
	if (r->qos && !acc->route.qos) {
		acc->qos = *r->qos;
		acc->route.qos = &acc->qos;
	} else if (r->qos) {
		acc_add_qos(&acc->qos, r->qos);
	}
	if (r->nlm && !acc->route.nlm) {
		acc->nlm = *r->nlm;
		acc->route.nlm = &acc->nlm;
	}
}

void gw_stats_device_add(struct gw_stats_device *into, const struct gw_stats_device *from)
{
	into->bytes_registered += from->bytes_registered;
	into->alloc_failures += from->alloc_failures;
	into->buffers_in_use += from->buffers_in_use;
	into->buffers_total += from->buffers_total;
}
