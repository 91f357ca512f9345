/* SPDX-License-Identifier: MIT */
/* common/turns.c - the loop's contention state of common/turns.h. */
#include "common/turns.h"

#include <string.h>

#include "common/contention.h"

/* Per thread: a worker is a thread with one loop. */
static _Thread_local struct gw_contention gw_turns;

void gw_turn_taken(const void *who, uint64_t now_us)
{
	gw_contention_note(&gw_turns, who, now_us);
}

bool gw_turns_contended(uint64_t now_us)
{
	return gw_contention_active(&gw_turns, now_us);
}

void gw_turns_reset(void)
{
	memset(&gw_turns, 0, sizeof(gw_turns));
}
