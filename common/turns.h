/* SPDX-License-Identifier: MIT */
/*
 * common/turns.h - whether a worker's event loop is serving more than one
 * client now, so that a busy client's turns can be cut short only then.
 *
 * A turn budget (records per read turn, completions per pass) trades the
 * other clients' wait against the loop passes a busy client costs: a long
 * turn batches more per pass, and every other client's call waits for it
 * in its socket. While one client has the loop to itself nobody waits, and
 * a long turn is free; as soon as a second one is active, it is not. So a
 * client connection reports each turn that delivered work, and the loop
 * counts as contended while two different connections take such turns
 * (common/contention.h: within GW_CONTENTION_WINDOW_US of each other, and
 * for that long after).
 * A connection then uses its contended budget instead of its full one.
 *
 * Loop state, not configuration: per thread (a worker is a thread with one
 * loop), like the pass clock of common/clock.h, whose readings it takes.
 */
#ifndef GW_COMMON_TURNS_H
#define GW_COMMON_TURNS_H

#include <stdbool.h>
#include <stdint.h>

#include "common/clock.h"
#include "common/contention.h"

/* Connection @who (any stable identity, e.g. its address) took a turn that
 * delivered work at @now_us (a gw_now_pass_us() reading). */
void gw_turn_taken(const void *who, uint64_t now_us);

/* Whether two different connections took turns within the window of each
 * other, the later less than GW_CONTENTION_WINDOW_US before @now_us. */
bool gw_turns_contended(uint64_t now_us);

/* Pick the budget: @contended while the loop is, else @full. A @contended
 * of 0 (the owner does not take part) or above @full means @full, without
 * a clock reading. */
static inline unsigned int gw_turns_budget(unsigned int full, unsigned int contended)
{
	if (contended == 0 || contended >= full)
		return full;
	return gw_turns_contended(gw_now_pass_us()) ? contended : full;
}

/* Forget this thread's state (tests; a worker's loop starting anew). */
void gw_turns_reset(void);

#endif
