/* SPDX-License-Identifier: MIT */
/*
 * gateway/maps/fairq.h - the fair credit scheduler of a shared upstream
 * connection (route key upstream_connections; gateway/forward/forward_share.c, see
 * docs/architecture.md, "Shared upstream connections").
 *
 * Clients queue calls; while the connection has a free credit (calls in
 * flight below the server's current grant), fairq_pick() hands out the next
 * call, taking clients in round robin with a quantum: a client sends at most
 * @quantum calls in a row, then goes to the back of the ring. Calls cost one
 * credit each whatever their size, so deficit round robin with a unit cost
 * is exactly this. A client with @cap calls in flight leaves the ring until
 * a reply brings it below, so one client never holds more than its cap of
 * the grant. A client with 64 calls queued and one with 1 therefore share
 * the connection call by call: the second is served within two picks.
 *
 * Everything is intrusive (the caller embeds struct fairq_item in its call
 * and struct fairq_client in its client) and every operation is O(1) but
 * fairq_client_detach(), which is O(calls the client had queued).
 * Time is passed in (microseconds) for the queue-time counters.
 */
#ifndef GW_GATEWAY_FAIRQ_H
#define GW_GATEWAY_FAIRQ_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/queue.h>

#include "common/contention.h"

struct fairq_client;

struct fairq_item {
	TAILQ_ENTRY(fairq_item) link;
	struct fairq_client *client;
	uint64_t t_enq;
};

struct fairq_client {
	TAILQ_HEAD(, fairq_item) calls;
	TAILQ_ENTRY(fairq_client) ring;
	bool in_ring;
	uint32_t cap;	/* calls in flight at most (0: no cap but the grant) */
	uint32_t burst; /* picks left in this turn */
	bool paused;	/* its replies are not being read: none of its calls is picked */
	/* Counters, read by /stats. */
	uint32_t queued;
	uint32_t in_flight;
	uint64_t picked;
	uint64_t dropped;      /* queued calls dropped when the client went away */
	uint64_t queue_us;     /* total time its picked calls waited */
	uint64_t queue_max_us; /* the longest */
};

struct fairq {
	TAILQ_HEAD(, fairq_client) ring; /* clients with queued calls below their cap */
	uint32_t quantum;
	uint32_t grant;	    /* the server's current grant (credits) */
	uint32_t in_flight; /* calls picked and not completed, detached clients' included */
	uint32_t queued;
	uint32_t orphans; /* calls in flight of clients that went away */
	uint64_t picks;
	uint64_t stalls; /* picks refused for want of a credit with calls queued */
	/* Each client's cap while others are served too (0: none): fairq_set_contended_cap(). */
	uint32_t contended_cap;
	struct gw_contention contention; /* over the clients of the picks */
};

/* A scheduler with @quantum calls per turn (0: 1) and a first grant of @grant. */
void fairq_init(struct fairq *q, uint32_t quantum, uint32_t grant);
/* The server's new grant: a smaller one stops picks until completions bring in_flight below it. */
void fairq_set_grant(struct fairq *q, uint32_t grant);

/*
 * The cap of each client on a shared connection of @credits: @configured
 * (route key shared_client_max_in_flight) if set, at most @credits; else
 * half of @credits, at least 1, so that one client never holds the whole
 * grant.
 */
uint32_t fairq_share_cap(uint32_t credits, uint32_t configured);

/*
 * While more than one client is being served (two different clients'
 * calls picked within GW_CONTENTION_WINDOW_US), each client may have at
 * most @cap calls in flight (0: its own cap always). Why: the server serves
 * the calls it holds in order, so every call of a deep client in flight is
 * one more that another client's call waits behind at the server, which no
 * scheduling here can undo. A client alone keeps its whole cap, which
 * delays nobody. A client above @cap when another one comes is not
 * picked again until its replies bring it below.
 */
void fairq_set_contended_cap(struct fairq *q, uint32_t cap);

/* Whether two different clients' calls were picked within the window before @now_us. */
bool fairq_contended(const struct fairq *q, uint64_t now_us);

/* A client with at most @cap calls in flight (0: no cap of its own). */
void fairq_client_init(struct fairq_client *c, uint32_t cap);

/* Queue @it for @c at @now_us. */
void fairq_enqueue(struct fairq *q, struct fairq_client *c, struct fairq_item *it, uint64_t now_us);

/* The next call to send, counted in flight; NULL when no credit is free or nothing may go. */
struct fairq_item *fairq_pick(struct fairq *q, uint64_t now_us);

/*
 * A picked call is done (replied, or failed) and gives its credit back.
 * @c is its client, or NULL when the client went away (fairq_client_detach()).
 */
void fairq_complete(struct fairq *q, struct fairq_client *c);

/*
 * A picked call could not go after all (no buffer, no send-queue room):
 * back to the head of its client's queue, its credit free again, and its
 * client first in the ring so that it keeps its turn.
 */
void fairq_unpick(struct fairq *q, struct fairq_item *it);

/*
 * @c's replies stop being read (its TCP output is congested): while paused
 * none of its calls is picked, and the others' go; resumed, it rejoins the
 * ring at the back. Why not simply stop the pump: one slow reader would
 * stall every client of the connection.
 */
void fairq_client_pause(struct fairq *q, struct fairq_client *c, bool paused);

/* Take one queued call out (e.g. a call abandoned before it went). */
void fairq_remove(struct fairq *q, struct fairq_item *it);

/*
 * The client goes away: each of its queued calls is handed to @drop (which
 * releases it), and none of anyone else's. Its calls in flight keep their
 * credits until they complete with fairq_complete(q, NULL).
 */
void fairq_client_detach(struct fairq *q, struct fairq_client *c,
			 void (*drop)(struct fairq_item *it, void *arg), void *arg);

#endif /* GW_GATEWAY_FAIRQ_H */
