/* SPDX-License-Identifier: MIT */
/*
 * gateway/bc_orphans.h - back channels whose client went away, on a shared
 * route (route key upstream_connections; gateway/forward_share.c).
 *
 * On a shared route the server's connections are the gateway's: when a
 * client's TCP connection to the gateway is reset, the server sees nothing,
 * and the NFSv4.1 session that client made keeps its back channel on the
 * gateway's connection. The Linux client connects again from the same
 * address and port (its transport keeps its source port) and goes on with
 * the same session; it sends BIND_CONN_TO_SESSION only for the server's
 * CB_PATH_DOWN, which never comes. Without help, the server's next callback
 * for that session finds no holder at the gateway and is refused: knfsd then
 * drops it (a recall waits a lease) and the client makes a new session.
 *
 * So when a client that held back channels goes, each is kept here with the
 * client's address and port, for BC_ORPHANS_TTL_US. The gateway gives one
 * back to a client only if both hold: it connects from that same address
 * and port (as the DRC mapping of retransmissions trusts, gateway/upxid.h),
 * and the server answers NFS4_OK to its COMPOUND whose SEQUENCE names that
 * session (it has the session: the server would take its
 * BIND_CONN_TO_SESSION too). The caller checks the second.
 *
 * Bounds: at most @max entries (default BC_ORPHANS_DEFAULT_MAX), allocated
 * at the first entry, not before; when full the oldest is replaced
 * (counted). Lookups scan the entries in use, which are few: each lives
 * until its client comes back or the TTL ends. Time is passed in
 * (microseconds). Single-threaded, as the event loop is.
 */
#ifndef GW_GATEWAY_BC_ORPHANS_H
#define GW_GATEWAY_BC_ORPHANS_H

#include <stdbool.h>
#include <stdint.h>

#include "gateway/upxid.h"
#include "ulb-rules/ulb.h"

/* Longer than a lease (nfsd's default is 90 s): after that the server has
 * dropped a client that did not come back. */
#define BC_ORPHANS_TTL_US      (300ull * 1000000)
#define BC_ORPHANS_DEFAULT_MAX 1024u

struct bc_orphan {
	uint8_t id[ULB_SESSIONID_SIZE];
	struct upxid_key who; /* the gone client's address and port; xid 0 */
	uint32_t maxresp;     /* the session's ca_maxresponsesize, 0 if not known */
	uint64_t gone_us;
};

struct bc_orphans_stats {
	uint64_t kept;	    /* back channels kept when their client went */
	uint64_t adopted;   /* given back to the client's new connection */
	uint64_t expired;   /* not claimed within the TTL */
	uint64_t replaced;  /* the oldest, replaced when full */
	uint64_t no_memory; /* the table could not be allocated */
};

/* Zero-initialised is empty, with the default bound. */
struct bc_orphans {
	struct bc_orphan *e; /* NULL until the first entry */
	uint32_t n, max;
	struct bc_orphans_stats st;
};

/* Empty, holding at most @max entries (0: BC_ORPHANS_DEFAULT_MAX). */
void bc_orphans_init(struct bc_orphans *o, uint32_t max);
void bc_orphans_fini(struct bc_orphans *o);

/* Session @id's back channel, held by the client at @who, which goes at @now. */
void bc_orphans_add(struct bc_orphans *o, const uint8_t id[ULB_SESSIONID_SIZE],
		    const struct upxid_key *who, uint32_t maxresp, uint64_t now);

/*
 * A client at @who uses session @id: true, with the session's @maxresp,
 * when its back channel was kept for that address and port (the entry is
 * taken out). False otherwise; an entry for another peer stays.
 */
bool bc_orphans_take(struct bc_orphans *o, const uint8_t id[ULB_SESSIONID_SIZE],
		     const struct upxid_key *who, uint64_t now, uint32_t *maxresp);

/* Entries held now (expired ones included until the next add or take). */
static inline uint32_t bc_orphans_count(const struct bc_orphans *o)
{
	return o->n;
}

#endif
