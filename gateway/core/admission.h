/* SPDX-License-Identifier: MIT */
/*
 * gateway/core/admission.h - whether a route takes one more session: its own
 * limit, the process-wide limit, and the limit per client address.
 *
 * The engine asks before a session is made (before a forward session takes
 * any RDMA resource, before a reverse connection request is accepted), so
 * a refused client costs a closed socket or a rejected request and nothing
 * else. A route keeps, for each client address that has live sessions on
 * it, how many it has: a small hash whose entries come and go with those
 * sessions, so it never holds more entries than there are live sessions.
 * Addresses are whole (an IPv6 client is counted per /128; IPv4-mapped
 * IPv6 addresses count as the IPv4 address).
 *
 * Refusals are counted on the route's totals (session_limit,
 * client_session_limit) and logged at most once a second per route, so a
 * flood of connections does not become a flood of log lines.
 */
#ifndef GW_GATEWAY_ADMISSION_H
#define GW_GATEWAY_ADMISSION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "gateway/counters/counters.h"

/* Buckets of a route's address table (a power of two). */
#define GW_ADMISSION_BUCKETS 256

struct gw_client_entry;

struct gw_admission {
	struct gw_client_entry *buckets[GW_ADMISSION_BUCKETS];
	uint32_t seed;	  /* of the hash: a peer cannot aim its addresses at one bucket */
	uint32_t entries; /* addresses with live sessions */
	/* Rate-limited refusal messages. */
	uint64_t last_log_us;
	uint64_t unlogged; /* refusals since the last message */
};

/* The limits a decision is made against; 0 in a max means no limit. */
struct gw_admission_limits {
	const char *route;    /* for messages */
	uint32_t route_live;  /* sessions on the route now */
	uint32_t route_max;   /* the route's max_sessions */
	size_t process_live;  /* sessions over all routes now */
	uint32_t process_max; /* the top-level max_sessions */
	uint32_t client_max;  /* the route's max_sessions_per_client */
};

/* A session's hold on its address's count, taken by gw_admission_enter(). */
struct gw_admission_ticket {
	struct gw_client_entry *entry; /* NULL: not held */
};

void gw_admission_init(struct gw_admission *a, uint32_t seed);
/* Free what is left; every ticket must have been released. */
void gw_admission_fini(struct gw_admission *a);

/*
 * May a session from @peer start now? When not, the refusal is counted in
 * @totals (GW_EV_CLIENT_SESSION_LIMIT when @peer already holds client_max
 * sessions, otherwise GW_EV_SESSION_LIMIT) and logged, at most once a
 * second (@now_us) for this route.
 */
bool gw_admission_check(struct gw_admission *a, const struct gw_admission_limits *lim,
			const struct sockaddr *peer, struct gw_counters *totals, uint64_t now_us);

/*
 * Count a client refused by the route's allowed_clients (GW_EV_REFUSED_CLIENT
 * on @totals) and log it, under the same once-a-second limit as the
 * session-limit refusals: a flood of unlisted clients is one line a second.
 */
void gw_admission_refuse_unlisted(struct gw_admission *a, const char *route,
				  const struct sockaddr *peer, struct gw_counters *totals,
				  uint64_t now_us);

/*
 * A session from @peer starts: count it against its address. False only
 * when memory for a new address entry is short; the session then runs
 * uncounted (the ticket holds nothing) rather than failing.
 */
bool gw_admission_enter(struct gw_admission *a, const struct sockaddr *peer,
			struct gw_admission_ticket *t);

/* The session ends: give its count back. A ticket that holds nothing is a no-op. */
void gw_admission_leave(struct gw_admission *a, struct gw_admission_ticket *t);

/* Live sessions from @peer's address (0 for an address family other than IPv4/IPv6). */
uint32_t gw_admission_client_sessions(const struct gw_admission *a, const struct sockaddr *peer);

#endif
