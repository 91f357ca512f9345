/* SPDX-License-Identifier: MIT */
/*
 * common/random.h - unguessable numbers for what an off-path forger must not
 * guess: the XIDs the side relays send to the server's daemons and to
 * clients, and the cookies of asynchronous NLM calls. A counter started from
 * the clock (what these were) lets anyone who saw one value, or knows
 * roughly when the gateway started, forge the reply to the next call (a
 * granted lock nobody holds). Not for the data path: a system call each.
 */
#ifndef GW_COMMON_RANDOM_H
#define GW_COMMON_RANDOM_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/random.h>

#include "common/clock.h"

/*
 * 32 random bits from the kernel's generator (getrandom(2), which blocks
 * only before the generator is first seeded, early in boot). Should the
 * call fail (a kernel without it), a value from the clock, so that the
 * relay goes on, guessable as before.
 */
static inline uint32_t gw_random32(void)
{
	uint32_t v;

	if (getrandom(&v, sizeof(v), 0) == (ssize_t)sizeof(v))
		return v;
	return (uint32_t)(gw_now_us() * 2654435761u) ^ (uint32_t)(gw_now_us() >> 32);
}

/*
 * A random XID for a new call that @in_use says no call in flight holds:
 * a reply is matched by its XID, so two calls out at once must differ.
 */
static inline uint32_t gw_random_xid(bool (*in_use)(void *arg, uint32_t xid), void *arg)
{
	uint32_t xid = gw_random32();

	while (in_use(arg, xid))
		xid = gw_random32();
	return xid;
}

#endif
