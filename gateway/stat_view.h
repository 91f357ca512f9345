/* SPDX-License-Identifier: MIT */
/*
 * gateway/stat_view.h - `rpcrdma-gw stat [ENDPOINT]`: a live view of a running
 * gateway, per route and per session, refreshed like nfsiostat or top.
 *
 * It reads the gateway's stats endpoint (GET /stats) and nothing else: two
 * documents an interval apart give the rates (calls/s, MB/s by how the
 * bytes crossed the RDMA side, events/s) and the latency percentiles of
 * the calls in between; the credit gauges are the latest document's.
 *
 * A report is a JSON object (what --json prints, one per line); the text
 * view is drawn from the same object, so the two never disagree.
 */
#ifndef GW_GATEWAY_GWSTAT_H
#define GW_GATEWAY_GWSTAT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include <jansson.h>

/* The subcommand: argv[0] is "stat". Returns the exit status. */
int gw_stat_main(int argc, char **argv);

/*
 * The report of the interval between two /stats documents, @interval_s
 * seconds apart. @prev may be NULL: the counters are then taken from zero
 * (the rates are averages since the gateway started). A new reference,
 * or NULL when @cur is not a /stats document (@err says why).
 */
json_t *gw_stat_report(const json_t *prev, const json_t *cur, double interval_s, char *err,
		       size_t errlen);

/*
 * Whether @cur comes from another gateway process than @prev: the process
 * start times of the two documents differ (or @prev has none, being from a
 * gateway older than the "process" object). Then the counters of @cur do not
 * continue @prev's, and `stat` takes @cur as the new reference.
 */
bool gw_stat_restarted(const json_t *prev, const json_t *cur);

/* The text view of a report; at most @max_sessions sessions per route, busiest first. */
void gw_stat_print(FILE *out, const json_t *report, size_t max_sessions);

/*
 * GET http://@endpoint@path ("HOST:PORT", "[V6]:PORT" or with "http://" in
 * front) and parse the body as JSON; NULL with @err filled on any failure
 * (connection, timeout, a status other than 200, a body that is not JSON).
 */
json_t *gw_stat_fetch(const char *endpoint, const char *path, unsigned timeout_ms, char *err,
		      size_t errlen);

#endif
