/* SPDX-License-Identifier: MIT */
/* common/turns.c - the loop's contention state of common/turns.h. */
#include "common/turns.h"

#include <stddef.h>

static _Thread_local struct {
	/* The connection that took the last turn, compared, never followed; and when. */
	uintptr_t last;
	uint64_t last_us;
	/* Contended until this reading; 0: not since the thread began. */
	uint64_t until_us;
} gw_turns;

void gw_turn_taken(const void *who, uint64_t now_us)
{
	uintptr_t id = (uintptr_t)who;

	/* A change of connection after a quiet spell is one client after another, not two. */
	if (gw_turns.last != 0 && gw_turns.last != id &&
	    now_us < gw_turns.last_us + GW_TURNS_WINDOW_US)
		gw_turns.until_us = now_us + GW_TURNS_WINDOW_US;
	gw_turns.last = id;
	gw_turns.last_us = now_us;
}

bool gw_turns_contended(uint64_t now_us)
{
	return gw_turns.until_us != 0 && now_us < gw_turns.until_us;
}

void gw_turns_reset(void)
{
	gw_turns.last = 0;
	gw_turns.last_us = 0;
	gw_turns.until_us = 0;
}
