/* SPDX-License-Identifier: MIT */
/*
 * gateway/side/nlm/nlm_relay_release.c - the NLM relay's release queue: the UNLOCKs (and
 * UNSHAREs) a rebooted client's locks need upstream, sent 16 at a time,
 * again after a grace or no-locks refusal or no answer, given up after
 * NLM_RELEASE_GIVE_UP_US (see gateway/side/nlm/nlm_relay.h and docs/architecture.md).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>

#include "common/clock.h"
#include "common/log.h"
#include "common/xdr.h"
#include "gateway/counters/counters.h"
#include "gateway/side/nlm/nlm_relay_priv.h"
#include "gateway/side/rpc/portmap.h"

bool nlm_release_init(struct nlm_relay *rl)
{
	struct release_queue *q = &rl->rq;

	q->cap = nlm_state_limits(rl->st)->max_locks;
	q->e = calloc(q->cap, sizeof(*q->e));
	q->free = calloc(q->cap, sizeof(*q->free));
	if (!q->e || !q->free) {
		errno = ENOMEM;
		return false;
	}
	for (uint32_t i = 0; i < q->cap; i++)
		q->free[i] = q->cap - 1 - i; /* slot 0 on top */
	q->nfree = q->cap;
	return true;
}

uint32_t nlm_relay_release_pending(const struct nlm_relay *rl)
{
	return rl->rq.used;
}

uint32_t nlm_relay_release_in_flight(const struct nlm_relay *rl)
{
	return rl->rq.in_flight;
}

void nlm_release_on_timer(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	nlm_relay_release_tick(arg);
}

/* The tick runs while there is something queued (no event base: the owner ticks). */
static void release_arm(struct nlm_relay *rl, bool on)
{
	struct release_queue *q = &rl->rq;

	if (!rl->cfg.base || q->armed == on)
		return;
	if (!q->ev)
		q->ev = event_new(rl->cfg.base, -1, EV_PERSIST, nlm_release_on_timer, rl);
	struct timeval period = gw_ms_timeval(NLM_RELEASE_TICK_MS);
	if (!q->ev || (on ? event_add(q->ev, &period) : event_del(q->ev)) != 0) {
		gw_warn("%s: nlm relay: no timer for the release queue: an unanswered UNLOCK "
			"of a rebooted client is not sent again",
			rl->cfg.route_name);
		return;
	}
	q->armed = on;
}

static void release_remove(struct nlm_relay *rl, uint32_t slot)
{
	struct release_queue *q = &rl->rq;

	if (q->e[slot].state == RELEASE_IN_FLIGHT)
		q->in_flight--;
	q->e[slot].state = RELEASE_FREE;
	q->free[q->nfree++] = slot;
	if (--q->used == 0)
		q->hi = 0;
}

/*
 * Send the entry's UNLOCK with a fresh cookie: its slot and a sequence
 * number, so that the reply finds it in O(1) and a reply to a send given
 * up is not taken for the last one's. False when @send has no room (the
 * side_relay's table is full): the entry waits for the next turn.
 */
static bool release_send(struct nlm_relay *rl, uint32_t slot, uint64_t now)
{
	struct release_entry *e = &rl->rq.e[slot];
	struct nlm_args a = {
		/* An UNSHARE: mode and access 0, which Linux lockd's unshare ignores. */
		.kind = e->u.unshare ? NLM_ARGS_SHARE : NLM_ARGS_UNLOCK,
		.lock = { .caller = { (const uint8_t *)rl->cfg.caller_name, rl->name_len },
			  .fh = { e->u.fh, e->u.fh_len },
			  .oh = { e->u.owner.oh, NLM_TOKEN_LEN },
			  .svid = e->u.owner.svid },
	};
	uint8_t cookie[RELEASE_COOKIE_LEN];
	uint32_t seq = ++rl->cookie;

	xdr_put32(cookie, slot);
	xdr_put32(cookie + 4, seq);
	size_t n = nlm_relay_encode_call(e->u.vers, e->u.unshare ? NLMPROC_UNSHARE : NLMPROC_UNLOCK,
					 &a, (struct nlm_bytes){ cookie, sizeof(cookie) }, rl->own,
					 sizeof(rl->own));
	if (!n || !rl->cfg.send(rl->cfg.send_arg, rl->own, n))
		return false;
	e->seq = seq;
	e->state = RELEASE_IN_FLIGHT;
	e->due_us = now + rl->resend_us;
	if (e->attempts++)
		rl->stats.release_retried++;
	rl->rq.in_flight++;
	return true;
}

/* Send the waiting entries that are due while the window has room. */
static void release_pump(struct nlm_relay *rl, uint64_t now)
{
	struct release_queue *q = &rl->rq;

	if (!rl->cfg.send)
		return;
	for (uint32_t i = 0; i < q->hi && q->in_flight < NLM_RELEASE_WINDOW; i++) {
		if (q->e[i].state == RELEASE_WAITING && q->e[i].due_us <= now &&
		    !release_send(rl, i, now))
			return;
	}
}

void nlm_relay_release_tick(struct nlm_relay *rl)
{
	struct release_queue *q = &rl->rq;
	uint64_t now = rl->cfg.now_us();
	uint32_t gave_up = 0;

	for (uint32_t i = 0; i < q->hi; i++) {
		struct release_entry *e = &q->e[i];
		if (e->state == RELEASE_IN_FLIGHT && now >= e->due_us) {
			/* The side_relay gave its send up unanswered: the server is away. */
			e->state = RELEASE_WAITING;
			q->in_flight--;
		}
		if (e->state == RELEASE_WAITING && now - e->first_us >= NLM_RELEASE_GIVE_UP_US) {
			release_remove(rl, i);
			gave_up++;
		}
	}
	if (gave_up) {
		/* Not call_timeout: the side_relay counted each of its sends that timed out. */
		rl->stats.release_given_up += gave_up;
		gw_warn("%s: nlm relay: %u UNLOCK%s of rebooted clients given up, unanswered for "
			"%llu s: the server may keep those locks until it restarts",
			rl->cfg.route_name, gave_up, gave_up == 1 ? "" : "s",
			(unsigned long long)(NLM_RELEASE_GIVE_UP_US / 1000000));
	}
	release_pump(rl, now);
	release_arm(rl, q->used != 0);
}

/*
 * The server's answer to one of the queue's UNLOCKs: true when @c was one
 * (nothing more to do with its reply). The cookie is read from the call as
 * sent, not from the reply: the server's answer to that XID is the answer
 * to that call whatever cookie it echoes. GRACE_PERIOD (the server is in
 * grace, it refuses unlocks too) and NOLOCKS (no memory for it now), or an
 * RPC error the server may not give next time (SYSTEM_ERR, a reply that
 * does not decode): asked again after NLM_RELEASE_DELAY_US. Any other
 * result is final: GRANTED, or a lock the server does not have (DENIED,
 * NLM4_STALE_FH...), which asking again would not change; and an RPC
 * refusal (GARBAGE_ARGS, PROC_UNAVAIL, an auth error...), given up at once
 * rather than repeated for NLM_RELEASE_GIVE_UP_US.
 */
bool nlm_release_reply(struct nlm_relay *rl, const struct relay_call *c, const struct nlm_args *a,
		       const uint8_t *msg, size_t len)
{
	struct release_queue *q = &rl->rq;
	struct nlm_res res;
	struct nlm_shareres sres = { 0 };
	size_t off;
	bool unshare = a->kind == NLM_ARGS_SHARE && c->proc == NLMPROC_UNSHARE;

	if (c->svc || (a->kind != NLM_ARGS_UNLOCK && !unshare) ||
	    a->cookie.len != RELEASE_COOKIE_LEN)
		return false;
	uint32_t slot = xdr_get32(a->cookie.p), seq = xdr_get32(a->cookie.p + 4);
	if (slot >= q->hi || q->e[slot].state != RELEASE_IN_FLIGHT || q->e[slot].seq != seq)
		return true; /* a send given up already, its entry sent again or gone */
	uint64_t now = rl->cfg.now_us();
	bool answered = rpc_reply_results(msg, len, &off) &&
			(unshare ? nlm_decode_shareres(msg + off, len - off, &sres) == 0
				 : nlm_decode_res(msg + off, len - off, &res) == 0);
	if (unshare)
		res.stat = sres.stat;
	if (!answered && rpc_reply_refused(msg, len)) {
		release_remove(rl, slot);
		rl->stats.release_given_up++;
		gw_warn("%s: nlm relay: the server refused a rebooted client's %s (RPC error), "
			"not sent again: the server may keep that lock until it restarts",
			rl->cfg.route_name, unshare ? "UNSHARE" : "UNLOCK");
	} else if (!answered || res.stat == NLM_DENIED_GRACE_PERIOD ||
		   res.stat == NLM_DENIED_NOLOCKS) {
		q->e[slot].state = RELEASE_WAITING;
		q->e[slot].due_us = now + NLM_RELEASE_DELAY_US;
		q->in_flight--;
	} else {
		release_remove(rl, slot);
		rl->stats.release_done++;
	}
	release_pump(rl, now);
	release_arm(rl, q->used != 0);
	return true;
}

/* Queue the UNLOCK of @u; false when the queue is full. */
static bool release_queue_add(struct nlm_relay *rl, const struct nlm_unlock *u, uint64_t now)
{
	struct release_queue *q = &rl->rq;

	if (!q->nfree)
		return false;
	uint32_t slot = q->free[--q->nfree];
	q->e[slot] = (struct release_entry){
		.u = *u, .first_us = now, .due_us = now, .state = RELEASE_WAITING
	};
	q->used++;
	if (slot >= q->hi)
		q->hi = slot + 1;
	rl->stats.release_queued++;
	return true;
}

/*
 * @host rebooted: a whole-file UNLOCK upstream for each (owner, fh) it
 * held, and an UNSHARE for each (owner, fh) it shared, through the release
 * queue. Its records are gone from the state
 * already: an UNLOCK the queue has no room for leaves that lock on the
 * server (logged, counted).
 */
size_t nlm_release_client(struct nlm_relay *rl, const struct gw_host *host, const char *why)
{
	const struct nlm_unlock *u;
	size_t count = nlm_state_client_rebooted(rl->st, host, &u), full = 0;
	uint64_t now = rl->cfg.now_us();

	for (size_t i = 0; i < count; i++) {
		if (!release_queue_add(rl, &u[i], now))
			full++;
	}
	if (full) {
		rl->stats.release_full += full;
		rl->cfg.counters->events[GW_EV_NO_BUFFERS] += full;
		gw_warn("%s: nlm relay: the release queue is full (%u): %zu locks of a rebooted "
			"client are not released upstream",
			rl->cfg.route_name, rl->rq.cap, full);
	}
	if (count)
		gw_info("%s: nlm relay: a client rebooted (%s): %zu of its %zu locks and shares "
			"queued for release upstream",
			rl->cfg.route_name, why, count - full, count);
	release_pump(rl, now);
	release_arm(rl, rl->rq.used != 0);
	return count;
}

/* The server rebooted: it has lost every lock, so the UNLOCKs still queued are moot. */
void nlm_release_drop_all(struct nlm_relay *rl)
{
	uint32_t moot = rl->rq.used;

	for (uint32_t i = 0; i < rl->rq.hi; i++) {
		if (rl->rq.e[i].state != RELEASE_FREE)
			release_remove(rl, i);
	}
	rl->stats.release_done += moot;
	release_arm(rl, false);
}
