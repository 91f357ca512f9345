/* SPDX-License-Identifier: MIT */
/*
 * gateway/maps/bc_orphans.h - back channels whose client went away, on a shared
 * route (route key upstream_connections; gateway/forward/forward_share.c).
 *
 * On a shared route the server's connections are the gateway's: when a
 * client's TCP connection to the gateway is reset, the server sees nothing,
 * and the NFSv4.1 session that client made keeps its back channel on the
 * gateway's connection. The Linux client connects again (for NFSv4.1 from
 * a new source port) and goes on with the same session; it sends
 * BIND_CONN_TO_SESSION only for the server's CB_PATH_DOWN, which never
 * comes. Without help the server's next callback for that session finds no
 * holder at the gateway and is refused: knfsd then drops it (a recall
 * waits up to a lease) and the client makes a new session.
 *
 * So when a client that held back channels goes, each is kept here with the
 * client's address, for BC_ORPHANS_TTL_US. A connection from that address,
 * made after the holder went, that the server answers NFS4_OK on a
 * COMPOUND whose SEQUENCE names the session is a candidate (it has the
 * session: the server would take its BIND_CONN_TO_SESSION too). When a
 * callback for the session finds no live holder and exactly one candidate,
 * that one gets the back channel; with several (an nconnect client whose
 * connections all came back: Linux takes callbacks only on its first
 * transport, and nothing tells which that is) none does, and the callback
 * is refused as before. The choosing is forward_share.c's; this table only
 * keeps the entries.
 *
 * Bounds: at most @max entries (default BC_ORPHANS_DEFAULT_MAX), allocated
 * at the first entry, not before, and at most BC_ORPHANS_PER_ADDR_MAX of
 * one address: an address at its share replaces its own oldest, so that
 * one address (a client resetting its connections in a loop, or a hostile
 * one) cannot push the other clients' entries out; a table full of many
 * addresses' entries replaces its oldest. Both counted (replaced).
 * Lookups scan the entries in use, which are few: each lives until its
 * session is claimed (bc_orphans_claim(), adopted), moot
 * (bc_orphans_drop(): the server answered a DESTROY_SESSION of it, or a
 * live client bound its back channel), or the TTL ends. Time is passed in
 * (microseconds). Single-threaded, as the event loop is.
 */
#ifndef GW_GATEWAY_BC_ORPHANS_H
#define GW_GATEWAY_BC_ORPHANS_H

#include <stdbool.h>
#include <stdint.h>

#include "ulb-rules/ulb.h"

/* Longer than a lease (nfsd's default is 90 s): after that the server has
 * dropped a client that did not come back. */
#define BC_ORPHANS_TTL_US      (300ull * 1000000)
#define BC_ORPHANS_DEFAULT_MAX 1024u
/*
 * One address's share: twice the sessions one connection's table holds
 * (ULB_SESSIONS_MAX), room for a client that went twice before coming back.
 */
#define BC_ORPHANS_PER_ADDR_MAX (2u * ULB_SESSIONS_MAX)

struct bc_orphan {
	uint8_t id[ULB_SESSIONID_SIZE];
	uint8_t addr[16]; /* the gone client's address (IPv6, or IPv4 mapped) */
	uint32_t maxresp; /* the session's ca_maxresponsesize, 0 if not known */
	uint64_t gone_us;
};

struct bc_orphans_stats {
	uint64_t kept;	    /* back channels kept when their client went */
	uint64_t adopted;   /* given to the client's new connection */
	uint64_t expired;   /* not claimed within the TTL */
	uint64_t replaced;  /* the oldest (the table's, or its address's), replaced when full */
	uint64_t dropped;   /* moot: the session destroyed, or its back channel bound */
	uint64_t no_memory; /* the table could not be allocated */
};

/* Zero-initialised is empty, with the default bound. */
struct bc_orphans {
	struct bc_orphan *e; /* NULL until the first entry */
	uint32_t n, max;
	/* Every entry's gone_us is at or after this (set when the first entry
	 * comes into an empty table): a connection older than it is no
	 * candidate for any, which spares the lookup on most calls. */
	uint64_t since_us;
	struct bc_orphans_stats st;
};

/* Empty, holding at most @max entries (0: BC_ORPHANS_DEFAULT_MAX). */
void bc_orphans_init(struct bc_orphans *o, uint32_t max);
void bc_orphans_fini(struct bc_orphans *o);

/* Session @id's back channel, held by a client at @addr, which goes at @now. */
void bc_orphans_add(struct bc_orphans *o, const uint8_t id[ULB_SESSIONID_SIZE],
		    const uint8_t addr[16], uint32_t maxresp, uint64_t now);

/* What is kept of session @id, or NULL (expired entries are dropped first). */
const struct bc_orphan *bc_orphans_find(struct bc_orphans *o, const uint8_t id[ULB_SESSIONID_SIZE],
					uint64_t now);

/* Session @id's entry is claimed by a candidate: it goes (counted adopted). */
void bc_orphans_claim(struct bc_orphans *o, const uint8_t id[ULB_SESSIONID_SIZE]);

/*
 * Session @id's entry is moot (counted dropped): the server destroyed the
 * session, or a live client bound its back channel. Kept, it would make a
 * later connection from the gone client's address a candidate for a
 * session that is not to be adopted.
 */
void bc_orphans_drop(struct bc_orphans *o, const uint8_t id[ULB_SESSIONID_SIZE]);

/* Entries held now (expired ones included until the next add or find). */
static inline uint32_t bc_orphans_count(const struct bc_orphans *o)
{
	return o->n;
}

#endif
