/* SPDX-License-Identifier: MIT */
/*
 * gateway/side/nlm/nlm_state.h - what the NLM relay must remember: lock owners and
 * the locks taken through the gateway, per client host; the NLM relay's
 * (gateway/side/nlm/nlm_relay.h) and, through it, the NSM service's and the GRANTED
 * callback service's (docs/architecture.md, "NLM and NSM relay").
 *
 * The server's lockd sees one host, the gateway, so two clients' owners
 * must differ on the upstream: each (client address, svid, oh) gets an
 * owner of its own, an upstream svid and a fixed-length owner handle
 * (token) that no other live owner has. Both encode the owner's slot and a
 * generation, so the server's GRANTED callback and a TEST reply's holder
 * map back in O(1), and a stale one (an owner forgotten since) is refused.
 *
 * The locks granted (or blocked, waiting) per client are kept so that the
 * client's reboot (its SM_NOTIFY) becomes UNLOCKs of its locks only: one
 * whole-file UNLOCK per (owner, file handle). A whole-file UNLOCK frees
 * whatever range that owner holds on the file (the owner is the rebooted
 * client's alone), and Linux lockd's unlock also cancels a blocked request
 * of the owner, so the table need not track split or merged ranges: an
 * UNLOCK forgets the records it covers entirely, and what it only cuts
 * stays recorded (unlocking it again at a reboot is harmless).
 *
 * Everything is allocated at init and bounded; a refusal is counted in
 * nlm_state_stats. Client hosts are told apart by address only (as lockd
 * does): a client's lockd and statd use different ports.
 *
 * Nothing is held for a datagram's sender that holds nothing upstream: an
 * owner lives while it has a lock or share recorded or a call in flight
 * (nlm_state_call_begin() .. nlm_state_call_end()), and is given back
 * when the last of those ends answered, its client with its last owner; so
 * a TEST, or a LOCK the server refused, leaves no entry behind. What holds
 * nothing but stays (an owner whose LOCK went unanswered, the owners kept
 * across a server reboot) is reclaimed, least recently used first, when a
 * table is full; an entry with a lock, a share or a call in flight never
 * is. A UDP source address can be forged, so one address is not taken for
 * one host: the client hosts of one address prefix (an IPv4 /24, an IPv6
 * /64) may hold at most max_clients_per_prefix of the client table.
 */
#ifndef GW_GATEWAY_NLM_STATE_H
#define GW_GATEWAY_NLM_STATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "common/host.h"
#include "gateway/side/nlm/nlm_xdr.h"

enum {
	NLM_TOKEN_LEN = 16,	      /* the upstream owner handle */
	NLM_STATE_MAX_OWNERS = 65535, /* the slot is 16 bits of the svid */
};

/*
 * How long the same SM_NOTIFY state counts as a retransmission: sm-notify
 * retries for 15 minutes. After that the same state is a new reboot (a
 * client whose statd does not keep its state across boots sends the same
 * one each time), whose locks must go.
 */
#define NLM_NOTIFY_REPEAT_US (15ULL * 60 * 1000000)

struct nlm_state_limits {
	uint32_t max_clients;		/* client hosts with an owner (default 1024) */
	uint32_t max_owners;		/* owners, all clients (default 4096, <= 65535) */
	uint32_t max_locks;		/* locks recorded, all clients (default 16384) */
	uint32_t max_locks_per_client;	/* (default 1024) */
	uint32_t max_oh;		/* longest client owner handle kept (default 256) */
	uint32_t max_owners_per_client; /* (default 1024, at most max_owners) */
	/*
	 * Client hosts of one /24 (IPv4) or /64 (IPv6) at once (default a
	 * quarter of max_clients, but at least NLM_PREFIX_SHARE_FLOOR, at most
	 * max_clients: no share then).
	 */
	uint32_t max_clients_per_prefix;
};

/* The default prefix share's floor: a whole IPv4 /24 of real hosts fits in it. */
#define NLM_PREFIX_SHARE_FLOOR 256

struct nlm_state_stats {
	uint64_t clients_full, owners_full, locks_full, client_locks_full;
	uint64_t oh_too_long;	     /* an owner handle over max_oh */
	uint64_t stale_owner;	     /* a callback or holder for no live owner of ours */
	uint64_t notify_repeated;    /* a client's SM_NOTIFY with the state it sent last */
	uint64_t client_owners_full; /* a client at max_owners_per_client, none of them idle */
	uint64_t client_prefix_full; /* a new client whose prefix holds max_clients_per_prefix */
	uint64_t clients_reclaimed;  /* idle client hosts forgotten for a new one (LRU) */
};

/* An upstream owner, as the relay writes it into a call. */
struct nlm_owner_id {
	int32_t svid;
	uint8_t oh[NLM_TOKEN_LEN];
};

/* A client's own view of one of its owners. */
struct nlm_client_owner {
	struct gw_host host;
	struct gw_host via; /* the gateway's address its client last called (family 0: unknown) */
	int32_t svid;
	struct nlm_bytes oh; /* the state's copy, valid until the owner is forgotten */
};

/*
 * A client host to tell of a reboot, and the gateway's address it called
 * (family 0: unknown): the SM_NOTIFY leaves from there and names it, for
 * the client's statd knows its server by the name it mounted (a route on
 * the wildcard address has several).
 */
struct nlm_peer {
	struct gw_host host;
	struct gw_host via;
};

/* What to send upstream for one lock (or share) of a rebooted client. */
struct nlm_unlock {
	uint32_t vers;
	bool unshare; /* an UNSHARE of a share, not a whole-file UNLOCK */
	struct nlm_owner_id owner;
	uint32_t fh_len;
	uint8_t fh[NLM4_FHSIZE];
};

struct nlm_state;

/* NULL with errno (EINVAL for a limit out of range, ENOMEM). 0 in @lim: default. */
struct nlm_state *nlm_state_new(const struct nlm_state_limits *lim, uint64_t instance);
void nlm_state_free(struct nlm_state *st);
const struct nlm_state_stats *nlm_state_stats(const struct nlm_state *st);
/* The limits in force (the defaults filled in). */
const struct nlm_state_limits *nlm_state_limits(const struct nlm_state *st);

/*
 * The upstream owner of @host's (@svid, @oh), made if new. 0; -ENOSPC when
 * a table is full, or @host's prefix holds its share of the clients, and
 * nothing idle can be reclaimed; -E2BIG for an owner handle over max_oh
 * (each counted). An owner made holds nothing until a call of its begins
 * (nlm_state_call_begin()) or a lock is recorded: the first to be reclaimed.
 */
int nlm_state_owner(struct nlm_state *st, const struct gw_host *host, int32_t svid,
		    struct nlm_bytes oh, struct nlm_owner_id *out);

/*
 * A call of the upstream owner @owner is relayed: until its
 * nlm_state_call_end(), the owner and its client are neither reclaimed nor
 * given back, so that the server's answer finds them. False for no live
 * owner (nothing counted then).
 */
bool nlm_state_call_begin(struct nlm_state *st, const struct nlm_owner_id *owner);
/*
 * That call ended. @settled: the server answered it (or it never left, or
 * it could not have left anything upstream), so the records say all the
 * owner holds: an owner then holding no lock, no share and no call in
 * flight is forgotten at once, and its client with its last owner. Not
 * settled (a LOCK given up unanswered: the server may hold it), the owner
 * stays, idle, for the client's retransmission to find under the same
 * upstream owner; reclaimed only when a table is full. A stale @owner
 * (forgotten meanwhile, at its client's reboot) is ignored.
 */
void nlm_state_call_end(struct nlm_state *st, const struct nlm_owner_id *owner, bool settled);

/*
 * @owner's client called the gateway at @via, an address of this host (a
 * route on the wildcard address has several): the calls the gateway makes
 * back to that client (the server's GRANTED, the SM_NOTIFY of a reboot)
 * leave from there, for Linux lockd takes a GRANTED only from the address
 * it sent its LOCK to, and its statd knows the server by the address
 * mounted. @connected: learned on a TCP connection, whose source a forger
 * cannot choose; once the client has such an address, a datagram (whose
 * source can be forged) does not replace it. Family 0 (unknown) keeps what
 * was known. A stale @owner is ignored.
 */
void nlm_state_client_via(struct nlm_state *st, const struct nlm_owner_id *owner,
			  const struct gw_host *via, bool connected);

/*
 * The upstream owner of @host's (@svid, @oh) if it exists: 0, or -ENOENT
 * (nothing made: an UNLOCK of an owner the gateway never saw holds nothing).
 */
int nlm_state_find_owner(struct nlm_state *st, const struct gw_host *host, int32_t svid,
			 struct nlm_bytes oh, struct nlm_owner_id *out);

/*
 * The upstream owner a token names (its svid is in it too): a SHARE
 * carries no svid. False for an @oh that is not a token's length.
 */
bool nlm_state_owner_of_token(struct nlm_bytes oh, struct nlm_owner_id *out);

/*
 * The client owner behind an upstream svid and owner handle (a GRANTED
 * callback, a TEST holder); false for none of ours (counted as stale when
 * it looks like ours but is not live).
 */
bool nlm_state_lookup_upstream(struct nlm_state *st, int32_t svid, struct nlm_bytes oh,
			       struct nlm_client_owner *out);

/*
 * A TEST reply's holder (@h, upstream values) as @host may see it: its own
 * owner's svid and oh when the holder is one of @host's owners; the
 * upstream values (the gateway's token, nothing of the other client) when
 * it is another client's; unchanged when it is not the gateway's at all.
 */
void nlm_state_holder_view(struct nlm_state *st, const struct gw_host *host, struct nlm_holder *h);

/*
 * A lock of the upstream owner @owner on (@fh, @offset, @len) was granted
 * (or blocked: waiting upstream). 0; -ENOENT for no live owner, -ENOSPC
 * when a bound is reached (counted), -EINVAL for a file handle over 64.
 */
int nlm_state_record_lock(struct nlm_state *st, const struct nlm_owner_id *owner, uint32_t vers,
			  struct nlm_bytes fh, uint64_t offset, uint64_t len);
/* An UNLOCK of @owner on @fh covering [@offset, @offset+@len) (0: to the end). */
void nlm_state_unlocked(struct nlm_state *st, const struct nlm_owner_id *owner, struct nlm_bytes fh,
			uint64_t offset, uint64_t len);

/*
 * A SHARE of @owner on @fh was granted (DOS share reservation, no range):
 * recorded as a lock is, in the same bounds, so that the client's reboot
 * UNSHAREs it. An UNSHARE granted forgets it. Locks and shares of one
 * owner on one file are separate records: an UNLOCK never forgets a share.
 */
int nlm_state_record_share(struct nlm_state *st, const struct nlm_owner_id *owner, uint32_t vers,
			   struct nlm_bytes fh);
void nlm_state_unshared(struct nlm_state *st, const struct nlm_owner_id *owner,
			struct nlm_bytes fh);

/* Does @owner have a lock (or blocked request) recorded on @fh, any range? */
bool nlm_state_owner_holds(const struct nlm_state *st, const struct nlm_owner_id *owner,
			   struct nlm_bytes fh);

/* Locks recorded for @host, and in all. */
uint32_t nlm_state_client_locks(const struct nlm_state *st, const struct gw_host *host);
uint32_t nlm_state_locks(const struct nlm_state *st);
/* Client hosts and owners held now (for /stats). */
uint32_t nlm_state_clients(const struct nlm_state *st);
uint32_t nlm_state_owners(const struct nlm_state *st);

/*
 * @host rebooted: the UNLOCKs to send upstream for its locks, one per
 * (owner, file handle), and an UNSHARE per (owner, file handle) shared, in *@out (the state's
 * array, valid until the next call); their count is returned. Its owners and records are forgotten.
 */
size_t nlm_state_client_rebooted(struct nlm_state *st, const struct gw_host *host,
				 const struct nlm_unlock **out);

/*
 * @host sent SM_NOTIFY with @state at @now_us: true when that state is new
 * for it (then kept), false for the one it sent last within
 * NLM_NOTIFY_REPEAT_US (a retransmission or a replay: the locks taken since
 * must stay; counted). Kept for max_clients hosts.
 */
bool nlm_state_client_notified(struct nlm_state *st, const struct gw_host *host, int32_t state,
			       uint64_t now_us);

/*
 * The server rebooted: it has lost every lock. The hosts with a lock
 * recorded go in @hosts (the first @max of them; their count, which may
 * be more, is returned), and every
 * lock record is forgotten; the owners stay, so that the clients' reclaims
 * come back under the same upstream owners and are recorded again.
 */
size_t nlm_state_server_rebooted(struct nlm_state *st, struct nlm_peer *hosts, size_t max);

/*
 * The client hosts that hold locks, kept across a gateway restart so that
 * the relay can tell them (SM_NOTIFY) their locks are gone. Saved as text,
 * a line per host under a version line ("ADDRESS" and, when known, a space
 * and the gateway's address it called), atomically (a temporary file,
 * fsync, rename). Load takes this version and the previous one (addresses
 * only: via unknown) and gives at most @max hosts in @hosts and their
 * count; -ENOENT for no file, -EBADMSG with the line in @err for a corrupt
 * one.
 */
int nlm_state_save_clients(const struct nlm_state *st, const char *path, char *err, size_t errlen);
int nlm_state_load_clients(const char *path, struct nlm_peer *hosts, size_t max, size_t *n,
			   char *err, size_t errlen);

/*
 * Whether the set of client hosts holding locks changed (a client's first
 * lock recorded, or its last one released) since the last call, which
 * clears it. The caller saves the list when it did, on a timer: a change
 * per LOCK would be a file written per LOCK.
 */
bool nlm_state_take_clients_dirty(struct nlm_state *st);

#endif
