/* SPDX-License-Identifier: MIT */
/*
 * gateway/side/nlm/nlm_relay.h - the NLM relay's rewriting and the gateway's NSM
 * service (docs/architecture.md, "NLM and NSM relay").
 *
 * The NLM relay is a side_relay (gateway/side/rpc/side_relay.h) with the hooks below.
 * The server's lockd sees one host, the gateway, so the call hook gives
 * every client lock owner an upstream owner of its own (gateway/side/nlm/nlm_state.h)
 * and writes it, and the gateway's own name as caller_name, into the lock;
 * the reply hook records the locks granted (or blocked) per client, forgets
 * the ones unlocked or cancelled, and maps a TEST holder back.
 * From the call hook to the reply (or the call given up: the gone hook)
 * the owner has a call in flight, which keeps it and its client; at the
 * reply an owner left holding nothing is given back at once.
 *
 * The NSM service answers a client's SM_NOTIFY (its reboot) itself: the
 * client's locks become whole-file UNLOCKs sent upstream as the relay's own
 * calls. It is never forwarded to the server's statd, which knows only the
 * gateway and would free every client's locks. Those UNLOCKs go through a
 * bounded release queue: at most NLM_RELEASE_WINDOW in flight, sent again
 * when unanswered past the side_relay's timeout or answered
 * DENIED_GRACE_PERIOD / DENIED_NOLOCKS, given up after
 * NLM_RELEASE_GIVE_UP_US (logged, counted).
 *
 * Relayed: NULL, TEST, LOCK, CANCEL, UNLOCK of versions 1, 3 and 4,
 * NM_LOCK, SHARE and UNSHARE of 3 and 4 (a share's owner handle rewritten
 * as a lock's, the shares granted recorded per client with its locks and
 * in the same bounds), and TEST_MSG, LOCK_MSG, CANCEL_MSG and UNLOCK_MSG
 * when the route has the asynchronous table (nlm_relay_set_async()).
 * FREE_ALL (3 and 4) is answered, never relayed: it names the host, which
 * upstream is the gateway (every client's locks); it is taken as its
 * sender's reboot, as an SM_NOTIFY (the release queue then carries
 * UNSHAREs as well as UNLOCKs). Refused with PROC_UNAVAIL: GRANTED and
 * GRANTED_MSG (a server's callback, not a client's call: nlm_callback.h
 * relays those).
 */
#ifndef GW_GATEWAY_NLM_RELAY_H
#define GW_GATEWAY_NLM_RELAY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gateway/side/nlm/nlm_state.h"
#include "gateway/side/rpc/side_relay.h"

struct event_base;
struct gw_counters;
struct nlm_async;
struct nlm_relay;

/* How the relay sends a call of its own upstream (side_relay_call_own()). */
typedef bool (*nlm_relay_send_fn)(void *arg, const uint8_t *msg, size_t len);

/* The release queue (a rebooted client's UNLOCKs and UNSHAREs). */
#define NLM_RELEASE_WINDOW     16		      /* UNLOCKs in flight at most */
#define NLM_RELEASE_TICK_MS    1000		      /* its timer's period */
#define NLM_RELEASE_DELAY_US   (5ULL * 1000000)	      /* after GRACE_PERIOD, NOLOCKS */
#define NLM_RELEASE_GIVE_UP_US (10ULL * 60 * 1000000) /* from its queueing */

struct nlm_relay_config {
	const char *route_name;	      /* for logs */
	const char *caller_name;      /* the gateway's name, put in every lock */
	struct gw_counters *counters; /* the route's */
	struct nlm_state_limits limits;
	nlm_relay_send_fn send;
	void *send_arg;
	/*
	 * The release queue's timer runs on @base; NULL: none, the owner
	 * calls nlm_relay_release_tick() (the unit tests).
	 */
	struct event_base *base;
	/* How long @send keeps a call before giving up on it (0: 15000). */
	uint32_t send_timeout_ms;
	/* The clock (0: gw_now_us()); the unit tests' own. */
	uint64_t (*now_us)(void);
};

/* NULL with errno (EINVAL: a limit or the name out of range; ENOMEM). */
struct nlm_relay *nlm_relay_new(const struct nlm_relay_config *cfg);

/*
 * After a configuration reload: the route's new settings (the old ones are
 * freed once every worker has taken the new configuration).
 */
void nlm_relay_set_route_name(struct nlm_relay *rl, const char *route_name);
void nlm_relay_free(struct nlm_relay *rl);

/* Where the own calls go, once the upstream relay exists. */
void nlm_relay_set_send(struct nlm_relay *rl, nlm_relay_send_fn send, void *arg);

/* The side_relay hooks: @arg is the nlm_relay. */
enum side_relay_verdict nlm_relay_call_hook(void *arg, const struct side_service_peer *peer,
					    const struct rpc_call_hdr *h, const uint8_t *msg,
					    size_t len, uint8_t *out, size_t cap, size_t *n);
enum side_relay_verdict nlm_relay_reply_hook(void *arg, const struct relay_call *c,
					     const uint8_t *msg, size_t len, uint8_t *out,
					     size_t cap, size_t *n);
/*
 * A client's call ended without its reply (given up, or never sent): its
 * owner's call in flight ends (nlm_relay_call_done(), answered when it
 * never left).
 */
void nlm_relay_gone_hook(void *arg, const struct relay_call *c);

/*
 * A call of the upstream owner in @a (its arguments as sent upstream) that
 * the call hook counted in flight has ended, @answered by the server (or
 * never sent): nlm_state_call_end(), which gives back an owner, and a
 * client, left holding nothing; settled unless a LOCK or SHARE went
 * unanswered (the server may hold it: the owner stays, idle). The reply
 * hook and nlm_relay_gone_hook() call it for the synchronous calls, the
 * asynchronous table for a _MSG (at its _RES, or when it gives that up).
 */
void nlm_relay_call_done(struct nlm_relay *rl, const struct nlm_args *a, bool answered);

/* The NSM service, a side_service_msg_fn: @arg is the nlm_relay. */
void nlm_relay_on_nsm(void *arg, struct side_service *svc, const struct side_service_peer *peer,
		      const uint8_t *msg, size_t len);

/*
 * The NSM answer to @msg from @peer in @out (its length, 0: none), and,
 * for an SM_NOTIFY, the UNLOCKs of @peer's locks and the UNSHAREs of its
 * shares queued for upstream (*@unlocks their count; the first window sent
 * at once).
 * nlm_relay_on_nsm() is this plus sending the answer.
 */
size_t nlm_relay_nsm_answer(struct nlm_relay *rl, const struct side_service_peer *peer,
			    const uint8_t *msg, size_t len, uint8_t *out, size_t cap,
			    size_t *unlocks);

/*
 * The client owner behind the upstream owner in a server's GRANTED
 * (nlm_state_lookup_upstream()); false for none of ours (stale counted).
 */
bool nlm_relay_client_of(struct nlm_relay *rl, int32_t svid, struct nlm_bytes oh,
			 struct nlm_client_owner *out);

/* Send a whole call of the caller's upstream as the relay's own (a GRANTED_RES). */
bool nlm_relay_send_own(struct nlm_relay *rl, const uint8_t *msg, size_t len);

/*
 * The asynchronous procedures (gateway/side/nlm/nlm_async.h): with @as set, the
 * relay relays a client's TEST_MSG, LOCK_MSG, CANCEL_MSG and UNLOCK_MSG
 * as it does their synchronous forms, with a cookie of the gateway's, and
 * drops a client's _RES; without, they stay refused (PROC_UNAVAIL).
 */
void nlm_relay_set_async(struct nlm_relay *rl, struct nlm_async *as);

/*
 * The bookkeeping of a result that came back as a _RES call: @a is the
 * _MSG's arguments as sent upstream (the upstream owner). A LOCK_RES's
 * @stat granted or blocked is recorded; false when it cannot be (the lock
 * is given back upstream, counted): the client is to be told
 * NLM_DENIED_NOLOCKS. An UNLOCK_RES granted forgets what it covers.
 */
bool nlm_relay_lock_result(struct nlm_relay *rl, uint32_t vers, const struct nlm_args *a,
			   uint32_t stat);
void nlm_relay_unlock_result(struct nlm_relay *rl, const struct nlm_args *a, uint32_t stat);
/*
 * A lock of the upstream owner in @a (a LOCK's arguments as sent upstream)
 * that the gateway will not keep is given back: an UNLOCK of it sent
 * upstream as the relay's own call (which also cancels a blocked request).
 */
void nlm_relay_give_back(struct nlm_relay *rl, uint32_t vers, const struct nlm_args *a);
/* Does the upstream owner in @a hold anything recorded on @a's file? */
bool nlm_relay_owner_holds(struct nlm_relay *rl, const struct nlm_args *a);
/* A TEST_RES holder as @host may see it (nlm_state_holder_view()). */
void nlm_relay_holder_view(struct nlm_relay *rl, const struct gw_host *host, struct nlm_holder *h);

/*
 * The server rebooted (its SM_NOTIFY): the client hosts that held locks in
 * @hosts (the first @max; their count returned, which may be more); the lock records forgotten.
 */
size_t nlm_relay_server_rebooted(struct nlm_relay *rl, struct nlm_peer *hosts, size_t max);

/*
 * The server was told NLM_DENIED for its GRANTED of @owner's lock on @fh
 * (the client could not take it): the server unlocks it, so its record goes.
 */
void nlm_relay_forget_lock(struct nlm_relay *rl, const struct nlm_owner_id *owner,
			   struct nlm_bytes fh, uint64_t offset, uint64_t len);

/*
 * The gateway's own grace period after its restart (docs/forward-mode.md,
 * "The gateway's restart"): until @until_us (gw_now_us() clock; 0: none),
 * a client's LOCK with `reclaim` set is sent upstream as an ordinary
 * non-blocking LOCK (the server is not in grace and would refuse a
 * reclaim): granted, the client keeps its lock; denied, its kernel marks
 * the lock lost. A synchronous LOCK, NM_LOCK or SHARE without `reclaim` is
 * answered NLM_DENIED_GRACE_PERIOD (the client's lockd waits and re-sends
 * it), so that the reclaiming clients get their locks back first. Outside
 * the window reclaims pass unchanged: the server's own reboot needs them.
 */
void nlm_relay_set_reclaim_window(struct nlm_relay *rl, uint64_t until_us);

struct nlm_relay_stats {
	uint64_t reclaims_converted; /* reclaims sent as ordinary LOCKs in the window */
	uint64_t grace_refused;	     /* new LOCKs answered DENIED_GRACE_PERIOD in it */
	/* The release queue: */
	uint64_t release_queued;   /* UNLOCKs queued (a rebooted client's (owner, fh)) */
	uint64_t release_done;	   /* answered for good, or moot (the server rebooted) */
	uint64_t release_retried;  /* sent again: unanswered, GRACE_PERIOD or NOLOCKS */
	uint64_t release_given_up; /* still unanswered after NLM_RELEASE_GIVE_UP_US */
	uint64_t release_full;	   /* not queued: the queue was full (the lock stays) */
};
const struct nlm_relay_stats *nlm_relay_stats(const struct nlm_relay *rl);

/* UNLOCKs in the release queue now (waiting or in flight), and in flight. */
uint32_t nlm_relay_release_pending(const struct nlm_relay *rl);
uint32_t nlm_relay_release_in_flight(const struct nlm_relay *rl);

/*
 * The release queue's timer: an UNLOCK unanswered past the send timeout is
 * sent again, one past NLM_RELEASE_GIVE_UP_US given up, and the waiting
 * ones are sent as the window allows.
 */
void nlm_relay_release_tick(struct nlm_relay *rl);

/* nlm_state_take_clients_dirty() of the relay's state: the client list to save. */
bool nlm_relay_take_clients_dirty(struct nlm_relay *rl);

/* What the relay's state holds (for tests and /stats). */
const struct nlm_state *nlm_relay_state(const struct nlm_relay *rl);

#endif
