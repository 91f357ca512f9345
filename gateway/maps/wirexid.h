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
 * Bounds. Every entry comes from a pool allocated at init, the hash tables
 * too (a bucket per WIREXID_ENTRIES_PER_BUCKET entries, set up whole at
 * init: a fixed cost of the route): nothing is allocated per call. The pool
 * is sized for every slot of every client the route admits, and most are
 * never used: its entries are made as they are first needed (made), so that
 * its untouched pages stay out of the gateway's resident memory. An entry is
 * in flight from the call's admission until its reply (or wirexid_cancel());
 * in-flight entries are never taken back, and when all are in flight a new
 * call is refused (WIREXID_FULL: the caller stops reading that client). An
 * answered entry is kept for the TTL, so that a retransmission of a call
 * whose reply the client lost still reaches the server's cache, and is then
 * recycled; under pressure the oldest answered entry is recycled early
 * (counted as an eviction).
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

/* 16,384 entries (about 1.2 MiB) and 120 s: knfsd keeps its cache entries 120 s. */
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
	uint32_t key_next;   /* chain in the key table */
	uint32_t wire_next;  /* chain in the wire table */
	uint32_t prev, next; /* answered list, oldest first; next: free list */
	uint16_t chan;
	uint8_t state; /* enum wirexid_state */
};

struct wirexid_stats {
	uint64_t new_calls;	 /* calls given a fresh wire XID */
	uint64_t hits_in_flight; /* retransmissions of a call still in flight (absorbed) */
	uint64_t hits_answered;	 /* retransmissions of an answered call (sent again) */
	uint64_t expired;	 /* answered entries recycled after their TTL */
	uint64_t evicted;	 /* answered entries recycled early, for want of room */
	uint64_t full;		 /* calls refused: every entry in flight */
	uint64_t stray;		 /* replies with no in-flight entry: dropped */
	uint32_t in_flight;	 /* entries now in flight */
	uint32_t answered;	 /* entries now kept for retransmissions */
};

struct wirexid_params {
	uint32_t max_entries; /* 0: WIREXID_DEFAULT_MAX; at most WIREXID_MAX_ENTRIES */
	uint64_t ttl_us;      /* 0: WIREXID_DEFAULT_TTL_US */
	uint16_t channels;    /* 1..WIREXID_MAX_CHANNELS */
	uint64_t seed;	      /* random in the gateway: hash secret and first wire XIDs */
};

struct wirexid {
	struct wirexid_entry *e;
	uint32_t max;
	uint64_t ttl_us;
	uint16_t channels;
	uint64_t secret;
	uint32_t mask;		     /* buckets - 1 */
	uint32_t *key_head;	     /* buckets of the key table */
	uint32_t *wire_head;	     /* buckets of the wire table */
	uint32_t *next_xid;	     /* per channel */
	uint32_t free_head;	     /* freed entries; then those never used, from made on */
	uint32_t made;		     /* entries [0, made) have been used */
	uint32_t old_head, old_tail; /* answered entries, oldest first */
	struct wirexid_stats st;
};

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
};

/*
 * Admit the call @k of the connection @owner. A new call goes on channel
 * @chan (the caller's choice, e.g. its least loaded); a retransmission
 * keeps the channel it had. Every verdict but WIREXID_FULL sets *@idx and
 * makes @owner the entry's owner (the reply goes to the newest connection).
 */
enum wirexid_verdict wirexid_map(struct wirexid *m, const struct wirexid_key *k, uint16_t chan,
				 uint64_t owner, uint64_t now_us, uint32_t *idx);

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
