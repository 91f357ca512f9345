/* SPDX-License-Identifier: MIT */
/*
 * gateway/maps/wirexid.h - the XID map of a shared upstream (route key
 * upstream_connections; gateway/forward/forward_share.c, see docs/architecture.md,
 * "Shared upstream connections").
 *
 * When many TCP clients' calls share a few RDMA connections ("channels")
 * to one server, two clients may use the same XID, so each call goes out
 * under a wire XID of the gateway's, unique on its channel. This map holds
 *
 *   (client address, port, client XID) -> (channel, wire XID, owner)
 *   (channel, wire XID)               -> the same entry, for the reply
 *
 * A retransmission (same address, port and XID) - also from a new TCP
 * connection after the client reconnected from the same port, as Linux
 * clients do - finds its entry and goes out on the same channel under the
 * same wire XID, so that the server's duplicate request cache recognises it.
 *
 * Bounds. Every entry comes from a pool allocated at init, and so do the
 * hash tables and the ledger of addresses (below): nothing is allocated
 * per call. The hash tables have a bucket per WIREXID_ENTRIES_PER_BUCKET
 * entries, set up whole at init (a fixed cost of the route). The pool is
 * sized for every slot of every client the route admits, and most are
 * never used: its entries are made as they are first needed (made), and
 * the ledger's records and tables start zeroed and are touched only as
 * addresses use them, so that untouched pages stay out of the gateway's
 * resident memory. An entry is in flight from the call's admission until
 * its reply (or wirexid_cancel()); in-flight entries are never taken back,
 * and when every entry is in flight a new call is refused (WIREXID_FULL).
 *
 * Retention. An answered entry is kept for the TTL, so that a
 * retransmission of a call whose reply the client lost still reaches the
 * server's cache, and is then recycled (expired). What happens when the
 * map has no room depends on the call, which the caller judges at
 * wirexid_map() (ulb_call_safe_twice()):
 *
 *   - safe twice (it only reads, or an NFSv4.1 session slot's cache answers
 *     its repeat): losing its entry costs at most a harmless second
 *     execution, so its answered entry may be recycled by any client,
 *     oldest first;
 *   - run once (REMOVE, RENAME, an exclusive CREATE, anything not known):
 *     its answered entry is "kept" for its client, the peer address without
 *     its port (a host reconnects from other ports, and a host with several
 *     mounts uses several). The ledger counts each address's kept entries
 *     and links them oldest first.
 *
 * A new call takes a free entry, else one never made, else the oldest
 * answered safe-twice entry, else a kept one: its own address's oldest when
 * that address holds at least an equal share of the kept entries (its
 * count x the addresses holding any >= all kept), else the oldest of the
 * address that holds the most. Each step is O(1) (the ledger keeps its
 * addresses in lists by count). So:
 *
 *   - no call takes a kept entry while an answered safe-twice one exists:
 *     a flood of NULLs, READs or GETATTRs recycles its own kind, and takes
 *     a kept entry only when every entry is in flight or kept (to have
 *     more calls in flight at once, never to keep its answers);
 *   - an address that holds fewer than an equal share of the kept entries
 *     (kept / addresses holding any) loses none of them before the TTL,
 *     whatever the other clients do: a client whose run-once calls within
 *     the TTL number fewer than (entries - calls in flight) / (addresses
 *     holding kept entries) keeps every one of them for the TTL. A client
 *     above its share recycles its own oldest first, and gives its oldest
 *     to a client below its share that needs room.
 *
 * So retention never refuses a call: as before, a call is refused only
 * when every entry is in flight, which the callers size the map against
 * (every call slot of every client; they answer WIREXID_FULL, a bug, with
 * SYSTEM_ERR rather than wait). A refusal for kept entries would
 * have failed a client's calls for up to the TTL. The share is per
 * address: hosts behind one NAT address share one.
 *
 * Wire XIDs. Each channel has a counter, starting from a value drawn from
 * the caller's seed; a new call takes the next value that no live entry of
 * that channel holds. So a wire XID comes back on a channel only after 2^32
 * allocations there, and never while an entry holds it. A reply is accepted
 * only for a live in-flight entry of its channel; any other (an expired or
 * cancelled mapping, an answered one, a forged XID) is dropped and counted
 * (stray): a late reply can never reach another client.
 *
 * Time is passed in by the caller (microseconds, gw_now_us()), so that
 * tests drive it. Single-threaded, as the event loop is.
 */
#ifndef GW_GATEWAY_WIREXID_H
#define GW_GATEWAY_WIREXID_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#define WIREXID_NONE UINT32_MAX

/* 16,384 entries and 120 s: knfsd keeps its cache entries 120 s. */
enum { WIREXID_DEFAULT_MAX = 16384, WIREXID_MAX_ENTRIES = 1u << 22, WIREXID_MAX_CHANNELS = 256 };
/* The hash tables' buckets: one per 4 entries, at least 16 (wirexid_init()). */
enum { WIREXID_ENTRIES_PER_BUCKET = 4 };
#define WIREXID_DEFAULT_TTL_US (120ull * 1000 * 1000)

/* A client's call as the gateway sees it: peer address, peer port, its XID. */
struct wirexid_key {
	uint8_t addr[16]; /* IPv6, or IPv4 mapped (::ffff:a.b.c.d) */
	uint16_t port;	  /* host order */
	uint16_t zero;	  /* always 0, so keys compare as bytes */
	uint32_t xid;	  /* the client's XID */
};
_Static_assert(sizeof(struct wirexid_key) == 24,
	       "keys are hashed and compared as 6 words, no padding");

/* What the caller knows of a call: may it run twice at the server (ulb_call_safe_twice())? */
enum wirexid_twice {
	WIREXID_RUN_ONCE,   /* no, or not known: its answered entry is kept for its address */
	WIREXID_SAFE_TWICE, /* yes: its answered entry may be recycled by any client */
};

enum wirexid_state {
	WIREXID_FREE,
	WIREXID_INFLIGHT, /* admitted, queued or on the wire: never taken back */
	WIREXID_ANSWERED, /* replied; kept until expire_us for retransmissions */
};

struct wirexid_entry {
	struct wirexid_key key;
	uint64_t owner;	    /* the caller's connection id; never reused by the caller */
	uint64_t expire_us; /* answered: recyclable from then on */
	uint32_t wire_xid;
	uint32_t key_next;     /* chain in the key table */
	uint32_t wire_next;    /* chain in the wire table */
	uint32_t prev, next;   /* answered: its age list, oldest first; next: free list */
	uint32_t cprev, cnext; /* answered and kept: its address's kept entries, oldest first */
	uint32_t client;       /* answered and kept: its address's ledger record */
	uint16_t chan;
	uint8_t state;	 /* enum wirexid_state */
	uint8_t twice;	 /* enum wirexid_twice: WIREXID_RUN_ONCE if any copy of the call said so */
	uint8_t own_xid; /* its wire XID is the client's own (wirexid_map_own_xid()) */
};

/*
 * The ledger's record of an address holding kept entries (record 0 is
 * never used: 0 is "none" in the ledger, so that its calloc'd tables start
 * empty and stay untouched until needed).
 */
struct wirexid_client {
	uint8_t addr[16];
	uint32_t kept;	       /* its answered entries kept (run once) */
	uint32_t head, tail;   /* those entries, oldest first */
	uint32_t hnext;	       /* chain in the ledger's table; next free record */
	uint32_t bprev, bnext; /* the addresses holding as many kept entries */
};

struct wirexid_stats {
	uint64_t new_calls;	    /* calls given a fresh wire XID */
	uint64_t hits_in_flight;    /* retransmissions of a call still in flight (absorbed) */
	uint64_t hits_answered;	    /* retransmissions of an answered call (sent again) */
	uint64_t expired;	    /* answered entries recycled after their TTL */
	uint64_t evicted;	    /* answered entries recycled early, for want of room: */
	uint64_t evicted_safe;	    /*   safe twice (any address's, oldest first) */
	uint64_t evicted_own;	    /*   kept, the calling address's own oldest */
	uint64_t evicted_other;	    /*   kept, the oldest of the address holding the most */
	uint64_t full;		    /* calls refused: every entry in flight */
	uint64_t own_xid_busy;	    /* own-XID calls refused: a call in flight holds that XID */
	uint64_t own_xid_displaced; /* answered entries recycled for an own-XID call's XID */
	uint64_t stray;		    /* replies with no in-flight entry: dropped */
	uint32_t in_flight;	    /* entries now in flight */
	uint32_t answered;	    /* entries now kept for retransmissions */
	uint32_t kept;		    /* of them, run-once calls' (kept for their address) */
	uint32_t kept_clients;	    /* addresses holding those */
};

struct wirexid_params {
	uint32_t max_entries; /* 0: WIREXID_DEFAULT_MAX; at most WIREXID_MAX_ENTRIES */
	uint64_t ttl_us;      /* 0: WIREXID_DEFAULT_TTL_US */
	uint16_t channels;    /* 1..WIREXID_MAX_CHANNELS */
	uint64_t seed;	      /* random in the gateway: hash secret and first wire XIDs */
};

/* A list of answered entries through prev and next, oldest first (with one TTL: expiry order). */
struct wirexid_age {
	uint32_t head, tail;
};

struct wirexid {
	struct wirexid_entry *e;
	uint32_t max;
	uint64_t ttl_us;
	uint16_t channels;
	uint64_t secret;
	uint32_t mask;		 /* buckets - 1 */
	uint32_t *key_head;	 /* buckets of the key table */
	uint32_t *wire_head;	 /* buckets of the wire table */
	uint32_t *next_xid;	 /* per channel */
	uint32_t free_head;	 /* freed entries; then those never used, from made on */
	uint32_t made;		 /* entries [0, made) have been used */
	struct wirexid_age safe; /* answered safe-twice entries, oldest first */
	struct wirexid_age kept; /* answered run-once entries, oldest first */
	/* The ledger: records [1, max], 0 meaning none (struct wirexid_client). */
	struct wirexid_client *cl;
	uint32_t *cl_head; /* buckets of the ledger's table (mask + 1) */
	uint32_t *by_kept; /* [n]: the addresses holding n kept entries (1..max) */
	uint32_t most;	   /* the most kept entries an address holds; 0: none */
	uint32_t cl_free;  /* freed records; then those never used, from cl_made on */
	uint32_t cl_made;  /* records [1, cl_made) have been used */
	struct wirexid_stats st;
};

/*
 * The map's size for a route of @clients clients with @slots call slots
 * each: every call they may hold at once, so that a call with a slot is
 * never refused (WIREXID_FULL), at least WIREXID_DEFAULT_MAX for answered
 * entries kept for retransmissions, at most WIREXID_MAX_ENTRIES.
 */
static inline uint32_t wirexid_entries_for(uint32_t clients, uint32_t slots)
{
	uint64_t n = (uint64_t)clients * slots;

	if (n < WIREXID_DEFAULT_MAX)
		n = WIREXID_DEFAULT_MAX;
	return n > WIREXID_MAX_ENTRIES ? WIREXID_MAX_ENTRIES : (uint32_t)n;
}

/* Returns 0, -EINVAL for parameters out of range, or -ENOMEM. */
int wirexid_init(struct wirexid *m, const struct wirexid_params *p);
void wirexid_destroy(struct wirexid *m);

/* The key of @xid from the peer @sa (AF_INET or AF_INET6); false for another family. */
bool wirexid_key_from_sockaddr(struct wirexid_key *k, const struct sockaddr *sa, uint32_t xid);

enum wirexid_verdict {
	WIREXID_NEW,	/* a new call: send it on chan under wire_xid */
	WIREXID_RESEND, /* a retransmission of an answered call: send it again, same chan and XID */
	WIREXID_IN_FLIGHT, /* a retransmission of a call in flight: absorb it; its reply goes to
			    * owner
			    */
	WIREXID_FULL,	   /* every entry in flight: refuse the call for now */
	WIREXID_XID_BUSY,  /* wirexid_map_own_xid(): a call in flight holds its XID */
};

/*
 * Admit the call @k of the connection @owner. A new call goes on channel
 * @chan (the caller's choice, e.g. its least loaded); a retransmission
 * keeps the channel it had. @twice says whether the call may run twice
 * (what becomes of its answered entry under pressure: see Retention
 * above); a retransmission that says WIREXID_RUN_ONCE makes the entry so.
 * Every verdict but WIREXID_FULL sets *@idx and makes @owner the entry's
 * owner (the reply goes to the newest connection).
 */
enum wirexid_verdict wirexid_map(struct wirexid *m, const struct wirexid_key *k, uint16_t chan,
				 uint64_t owner, enum wirexid_twice twice, uint64_t now_us,
				 uint32_t *idx);

/*
 * wirexid_map() for a call whose XID must reach the server as the client
 * sent it: an RPCSEC_GSS call, whose verifier is a checksum of the call's
 * header from the XID on (RFC 2203 section 5.3.1), so that the server
 * refuses it under any other XID. Its wire XID is its own XID. Should an
 * answered entry of the channel hold that wire XID, it is recycled (counted
 * own_xid_displaced): the own-XID call cannot go under another, and the
 * chance is that of one 32-bit value among the channel's entries. Should a
 * call in flight hold it, the new call is refused for now
 * (WIREXID_XID_BUSY, counted own_xid_busy) and takes no entry: the caller
 * holds it back and maps it again once a call of that channel is off the
 * wire (forward_share.c, reverse_share.c: GW_EV_GSS_XID_WAIT). The call is
 * run-once (its retransmission keeps the same entry); wirexid_rewire()
 * leaves its wire XID as it is.
 */
enum wirexid_verdict wirexid_map_own_xid(struct wirexid *m, const struct wirexid_key *k,
					 uint16_t chan, uint64_t owner, uint64_t now_us,
					 uint32_t *idx);

/*
 * A reply came on @chan with @wire_xid: the entry's index, now answered
 * (kept for the TTL), or WIREXID_NONE when no call is in flight under that
 * XID on that channel (counted as stray; the caller drops the reply).
 */
uint32_t wirexid_reply(struct wirexid *m, uint16_t chan, uint32_t wire_xid, uint64_t now_us);

/*
 * The in-flight entry a reply on @chan with @wire_xid names, without
 * answering it (the reply may yet send the call again: wirexid_rewire()), or
 * WIREXID_NONE, counted as stray.
 */
uint32_t wirexid_lookup_reply(struct wirexid *m, uint16_t chan, uint32_t wire_xid);

/* An in-flight call whose reply will never be delivered (never sent, failed): free it now. */
void wirexid_cancel(struct wirexid *m, uint32_t idx);

/*
 * Give an in-flight call a fresh wire XID on its channel: a call that is
 * sent again with other contents (the RFC 8267 retry with a larger Reply
 * chunk) must not match the server's cached reply to the first attempt.
 */
void wirexid_rewire(struct wirexid *m, uint32_t idx);

/* Recycle answered entries whose TTL has passed (also done by wirexid_map()). */
void wirexid_expire(struct wirexid *m, uint64_t now_us);

static inline const struct wirexid_entry *wirexid_get(const struct wirexid *m, uint32_t idx)
{
	return idx < m->max ? &m->e[idx] : NULL;
}

#endif /* GW_GATEWAY_WIREXID_H */
