/* SPDX-License-Identifier: MIT */
/*
 * gateway/stats/stats_copy.h - the engines' figures copied out, to render from.
 *
 * A scrape reads every worker's engine while the other workers are parked
 * (gateway/workers.h). Rendering takes a hundred times longer than copying:
 * JSON objects or text lines for every counter of every session, 30-60 ms
 * at 480 sessions and up to 0.7 s at 4,096 on a small machine, all of it
 * with the data path stopped. So the endpoint copies what the walk hands
 * out (gw_stats_copy_take()), lets the workers go, and only then renders:
 * gw_stats_copy_replay() is a snapshot function (gw_stats_snapshot_fn) that
 * makes the same calls, in the same order, with the same figures as the
 * walk did, so the renderers and their documents do not change.
 *
 * The copy owns every byte it hands out: the session's addresses, the
 * names, the counters and their tables by procedure. Nothing of it points
 * back into an engine, whose sessions may close the moment the workers go
 * on. It lives in blocks of its own, one sized like the last walk's and a
 * quarter more, and touched, before the walk, so that the walk only copies
 * into memory already there: faulting in megabytes of fresh pages while
 * the workers are parked would cost more than the copy itself. A walk that
 * finds the room too small (the first, or a gateway that has grown since
 * the last) goes on measuring without copying, and the take walks again
 * into room of the size measured: two short parks instead of a long one.
 * 1.7 KiB per live session with its counters (2.2 KiB once its table by
 * procedure has grown past 6 procedures), under 200 bytes without; one copy
 * at a time, let go by gw_stats_copy_clear() once the document is rendered.
 *
 * Single-threaded: the stats endpoint's loop takes, replays and clears.
 */
#ifndef GW_GATEWAY_STATS_COPY_H
#define GW_GATEWAY_STATS_COPY_H

#include <stdbool.h>
#include <stddef.h>

#include "gateway/counters/counters.h"

struct copy_block;
struct copy_rec;

struct gw_stats_copy {
	struct copy_block *blocks; /* the newest first */
	struct copy_rec *first, *last;
	const struct gw_counters *zero; /* sessions' counters when they were not asked for */
	size_t bytes;			/* taken from the blocks by this copy */
	size_t wanted;			/* by the records walked so far, copied or not */
	size_t last_bytes[2];		/* by the last copy without, with session counters */
	bool grow;			/* new blocks may be taken during the walk */
	bool outgrown;			/* the walk found no room: it only measures */
	bool failed;
};

/* An empty copy; gw_stats_copy_clear() lets go of what a take allocated. */
void gw_stats_copy_init(struct gw_stats_copy *c);

/*
 * Walk @snapshot (@engine) and keep what it hands out; a copy taken before
 * is let go first. @session_counters false keeps of each session only what
 * the renderers read without sessions (its credits): its counters are then
 * all zero in the replay. @snapshot is called once, or twice when the
 * copy outgrew the room prepared for it. False when memory ran out on the
 * way (the copy is then empty; a walk that had begun still ran to its end,
 * as a snapshot function cannot be stopped).
 */
bool gw_stats_copy_take(struct gw_stats_copy *c, gw_stats_snapshot_fn snapshot, void *engine,
			bool session_counters);

/* The snapshot function of a copy (@arg is the struct gw_stats_copy): the walk again. */
void gw_stats_copy_replay(void *arg, struct gw_stats_visitor *v);

/* Let go of the copy's memory; it stays usable, and remembers its size for the next take. */
void gw_stats_copy_clear(struct gw_stats_copy *c);

#endif
