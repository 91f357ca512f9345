/* SPDX-License-Identifier: MIT */
/*
 * gateway/side/nlm/nlm_relay_priv.h - what the NLM relay's files share
 * (nlm_relay.c: the call and reply hooks; nlm_relay_release.c: the release queue
 * of rebooted clients' locks). Not an interface for other modules: theirs
 * is gateway/side/nlm/nlm_relay.h.
 */
#ifndef GW_GATEWAY_NLM_RELAY_PRIV_H
#define GW_GATEWAY_NLM_RELAY_PRIV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <event2/util.h>

#include "gateway/side/nlm/nlm_relay.h"
#include "gateway/side/nlm/nlm_state.h"
#include "gateway/side/nlm/nlm_xdr.h"

enum {
	OWN_CALL_MAX = 512,	/* an UNLOCK: header, name, fh 64, token 16 */
	RELEASE_COOKIE_LEN = 8, /* the queue slot, the send's sequence number */
	DEFAULT_SEND_TIMEOUT_MS = 15000,
};

enum release_state { RELEASE_FREE, RELEASE_WAITING, RELEASE_IN_FLIGHT };

/* One UNLOCK of a rebooted client's (owner, fh), until the server answers it. */
struct release_entry {
	struct nlm_unlock u;
	uint64_t first_us; /* queued: the give-up bound runs from here */
	uint64_t due_us;   /* waiting: sent from then; in flight: sent again from then */
	uint32_t seq;	   /* the cookie's sequence number of the UNLOCK last sent */
	uint32_t attempts;
	uint8_t state; /* enum release_state */
};

/*
 * The release queue: a fixed array (max_locks entries: each came from a
 * lock record) with a stack of free slots. Sending scans the used slots
 * up to @hi: a client's reboot is rare and the scan bounded, while an
 * ordered structure would cost on every reply for nothing.
 */
struct release_queue {
	struct release_entry *e;
	uint32_t *free; /* free slots, the next on top */
	uint32_t cap, nfree, used, hi, in_flight;
	struct event *ev; /* the tick, armed while the queue is not empty */
	bool armed;
};

struct nlm_relay {
	struct nlm_relay_config cfg;
	struct nlm_state *st;
	struct nlm_async *async; /* NULL: the _MSG forms refused */
	uint32_t name_len;
	uint32_t cookie;	   /* of the relay's own calls */
	uint64_t reclaim_until_us; /* the gateway's own grace period; 0: none */
	uint64_t resend_us;	   /* an UNLOCK in flight this long is sent again */
	struct release_queue rq;
	struct nlm_relay_stats stats;
	uint8_t own[OWN_CALL_MAX + NLM_LM_MAXSTRLEN];
};

/*
 * A call of the relay's own to the server (NLM @vers, @proc, arguments @a
 * with @cookie), encoded into @out; its length, 0 when it does not fit.
 */
size_t nlm_relay_encode_call(uint32_t vers, uint32_t proc, const struct nlm_args *a,
			     struct nlm_bytes cookie, uint8_t *out, size_t cap);

/* nlm_relay_release.c */
bool nlm_release_init(struct nlm_relay *rl);
void nlm_release_on_timer(evutil_socket_t fd, short what, void *arg);
/* A reply to one of the queue's UNLOCKs: true when @c was one (nothing more to do). */
bool nlm_release_reply(struct nlm_relay *rl, const struct relay_call *c, const struct nlm_args *a,
		       const uint8_t *msg, size_t len);
/* @host rebooted: its locks and shares released upstream; how many were queued. */
size_t nlm_release_client(struct nlm_relay *rl, const struct gw_host *host, const char *why);
void nlm_release_drop_all(struct nlm_relay *rl);

#endif
