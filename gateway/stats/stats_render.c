/* SPDX-License-Identifier: MIT */
/*
 * gateway/stats/stats_render.c - helpers of the stats renderers (gateway/stats/stats_render.h).
 */
#include "gateway/stats/stats_render.h"

#include <inttypes.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *stats_or_empty(const char *s)
{
	return s ? s : "";
}

/* Fixed-point @v / 10^@digits, exactly, without trailing zeros: 1500,3 -> "1.5". */
void stats_format_fixed(char *out, size_t size, uint64_t v, unsigned digits)
{
	uint64_t scale = 1;

	for (unsigned i = 0; i < digits; i++)
		scale *= 10;
	int n = snprintf(out, size, "%" PRIu64 ".%0*" PRIu64, v / scale, (int)digits, v % scale);
	if (n <= 0 || (size_t)n >= size)
		return;
	while (n > 0 && out[n - 1] == '0')
		out[--n] = '\0';
	if (n > 0 && out[n - 1] == '.')
		out[--n] = '\0';
}

/* A procedure slot in use, for sorting. */

static int proc_order(const void *a, const void *b)
{
	const struct gw_proc_count *p = ((const struct stats_proc_ref *)a)->pc;
	const struct gw_proc_count *q = ((const struct stats_proc_ref *)b)->pc;

	if (p->prog != q->prog)
		return p->prog < q->prog ? -1 : 1;
	if (p->vers != q->vers)
		return p->vers < q->vers ? -1 : 1;
	if (p->proc != q->proc)
		return p->proc < q->proc ? -1 : 1;
	return 0;
}

/* The slots in use, in (program, version, procedure) order: the table is hashed. */
unsigned stats_procs_sorted(const struct gw_counters *c, struct stats_proc_ref out[GW_PROC_SLOTS])
{
	unsigned n = 0, nslots;
	const struct gw_proc_count *procs = gw_counters_procs(c, &nslots);

	for (unsigned i = 0; i < nslots; i++) {
		if (procs[i].used)
			out[n++].pc = &procs[i];
	}
	qsort(out, n, sizeof(out[0]), proc_order);
	return n;
}

void stats_credits_add(struct gw_credit_state *sum, const struct gw_credit_state *c)
{
	sum->granted += c->granted;
	sum->in_use += c->in_use;
	sum->queued += c->queued;
	sum->backward_granted += c->backward_granted;
	sum->backward_in_use += c->backward_in_use;
}
