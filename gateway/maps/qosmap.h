/* SPDX-License-Identifier: MIT */
/*
 * gateway/maps/qosmap.h - the token buckets of a route's quality-of-service
 * classes (conf/config.h, struct gw_qos_class), one set per (class, client
 * address), and each class's figures for /stats.
 *
 * A call is admitted against its client's entry in its class: one token of
 * the calls bucket, its bytes from the to-server bucket, a free place under
 * max_in_flight, and no unpaid reply bytes in the to-client bucket (reply
 * sizes are known only when the reply comes: qos_entry_done() charges them,
 * and what the bucket lacked is paid before the client's next call). A call
 * that may not go now is told how long to wait; nothing is taken then, so
 * the caller holds it and asks again (gateway/forward: the session stops
 * reading its client's socket meanwhile).
 *
 * The limits are passed in at every call (the route's current
 * configuration), so a reload's new limits apply at once to the buckets as
 * they are.
 *
 * Bounded state: at most QOSMAP_MAX_CLIENTS entries per class; a client
 * beyond them, or one whose address is not IP, shares its class's one
 * shared entry (their calls then share one set of limits). An entry that
 * holds no call, has nobody waiting on it and whose buckets are full again
 * is freed by qos_map_sweep(): an idle client costs nothing after a while.
 * Pure: no I/O, time passed in (microseconds).
 */
#ifndef GW_GATEWAY_QOSMAP_H
#define GW_GATEWAY_QOSMAP_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/queue.h>
#include <sys/socket.h>
#include <sys/time.h>

#include "common/host.h"
#include "common/tbucket.h"
#include "conf/config.h"
#include "ulb-rules/ulb.h"

/* Client addresses with buckets of their own, per class (and per worker). */
#define QOSMAP_MAX_CLIENTS 4096
/* Chains of the hash of entries (a power of two). */
#define QOSMAP_BUCKETS 1024
/* qos_entry_admit()'s wait when only a completion can let the call go (max_in_flight). */
#define QOSMAP_WAIT_REPLY UINT64_MAX
/*
 * A held call looks again at least this often, however long its buckets
 * said to wait (or, held for max_in_flight, before a call of its entry is
 * done and wakes it: qos_hold): the limits a SIGHUP brings apply to it
 * within this time.
 */
#define QOSMAP_MAX_WAIT_US 100000u

struct qos_hold;

struct qos_entry {
	struct qos_entry *next; /* hash chain */
	struct gw_host key;
	uint32_t cls;
	bool shared; /* the class's shared entry: never in the hash, never freed by a sweep */
	struct gw_tbucket calls;
	struct gw_tbucket to_server;
	struct gw_tbucket to_client;
	uint32_t in_flight;	      /* calls admitted and not done */
	uint32_t waiting;	      /* sessions holding a call for it (qos_entry_wait_begin()) */
	TAILQ_HEAD(, qos_hold) holds; /* the sessions' waits on it (qos_hold_on()) */
};

/* A class's figures, for /stats and /metrics. */
struct qos_class_stats {
	uint64_t calls;		  /* admitted */
	uint64_t bytes_to_server; /* of the calls admitted */
	uint64_t bytes_to_client; /* of their replies */
	uint64_t throttled_us;	  /* time sessions spent holding a call of this class */
	uint64_t throttles;	  /* times a session began to hold one */
	uint32_t throttled_now;	  /* clients (entries) with a session holding a call now */
	uint32_t clients;	  /* entries of their own now */
	uint64_t overflow;	  /* clients that got the shared entry for want of room */
};

struct qos_map {
	struct qos_entry *hash[QOSMAP_BUCKETS];
	uint32_t seed;
	uint32_t nclasses;
	struct qos_entry *shared;      /* one per class */
	struct qos_class_stats *stats; /* one per class */
};

/* A map for @nclasses classes; false on ENOMEM. */
bool qos_map_init(struct qos_map *m, uint32_t nclasses, uint32_t seed);
/* Free every entry; the caller holds no entry any more. */
void qos_map_fini(struct qos_map *m);

/*
 * @peer's entry in class @cls (< nclasses), made if missing; the class's
 * shared entry when the class has QOSMAP_MAX_CLIENTS entries already, when
 * memory is short, or when @peer is not an IP address. Never NULL.
 */
struct qos_entry *qos_map_get(struct qos_map *m, uint32_t cls, const struct sockaddr *peer);

/*
 * May a call of @bytes go now for @e under @c's limits? 0: yes, and it is
 * counted (a token, its bytes, one in flight, the class's figures);
 * otherwise nothing is taken and the result is the microseconds to wait
 * before asking again, or QOSMAP_WAIT_REPLY when max_in_flight is reached.
 */
uint64_t qos_entry_admit(struct qos_map *m, struct qos_entry *e, const struct gw_qos_class *c,
			 uint64_t now_us, uint64_t bytes);

/* An admitted call of @e is done; its reply had @reply_bytes (0: none came). */
void qos_entry_done(struct qos_map *m, struct qos_entry *e, const struct gw_qos_class *c,
		    uint64_t now_us, uint64_t reply_bytes);

/* A session starts (begin) or stops holding a call for @e, for the throttling figures. */
void qos_entry_wait_begin(struct qos_map *m, struct qos_entry *e);
void qos_entry_wait_end(struct qos_map *m, struct qos_entry *e, uint64_t waited_us);

/*
 * Free the entries that hold no call, have no session waiting and whose
 * buckets are full at @now_us (under @classes, the route's current
 * classes, @nclasses of them). Returns how many were freed.
 */
uint32_t qos_map_sweep(struct qos_map *m, const struct gw_qos_class *classes, uint32_t nclasses,
		       uint64_t now_us);

/*
 * What both modes share around the map: which class of @r takes a call,
 * and a session's holding of calls (the figures of its wait).
 */

/* The first class of @r (route configuration) that takes @u from @peer, or -1: none does. */
int qos_route_class(const struct gw_route *r, const struct sockaddr *peer,
		    const struct ulb_call *u);

/*
 * A call of class @cls of route @r (its configuration, whose limits apply)
 * from @peer, of @bytes, asks to go: *@e is set to @peer's entry, looked up
 * at each ask (a held call's entry may have been swept meanwhile, unless it
 * is the one its session waits on); the result is qos_entry_admit()'s.
 */
uint64_t qos_route_admit(struct qos_map *m, const struct gw_route *r, uint32_t cls,
			 const struct sockaddr *peer, uint64_t now_us, uint64_t bytes,
			 struct qos_entry **e);

/* The timer's delay for a held call told to wait @wait (qos_entry_admit()'s answer). */
struct timeval qos_hold_delay(uint64_t wait);

/*
 * A session's wait: the entry it is counted as waiting on, since when, and
 * how to wake it. A call of that entry done (qos_entry_done()) under a
 * class with max_in_flight calls every waiting session's @wake (it arms
 * the session's timer to look again at once; it must not hold or end a
 * wait), whichever session the call was: the sessions of one client
 * address (an nconnect mount), or of a class's shared entry, share the
 * places in flight.
 */
struct qos_hold {
	struct qos_entry *waiting; /* NULL: the session holds no call */
	uint64_t since;
	TAILQ_ENTRY(qos_hold) link; /* in waiting->holds */
	void (*wake)(void *arg);    /* NULL: none (the timer looks again) */
	void *arg;
};

/* The session holds a call of @e at @now_us: begins its wait, or moves it to @e. */
void qos_hold_on(struct qos_map *m, struct qos_hold *h, struct qos_entry *e, uint64_t now_us);
/* The session holds no call any more (they went, or it closes): its wait is counted. */
void qos_hold_end(struct qos_map *m, struct qos_hold *h, uint64_t now_us);

#endif /* GW_GATEWAY_QOSMAP_H */
