/* SPDX-License-Identifier: MIT */
/*
 * gateway/reverse/reverse_upstream.c - reverse mode, the call out and its reply in, whichever
 * upstream the session has (reverse_upstream.h): the reply record matched to its call and
 * relayed, the call timeout over the calls sent, and a message that found no room in the
 * upstream's output.
 */
#include "gateway/core/size_clamp.h"
#include "gateway/reverse/reverse_priv.h"

/* ---- calls on the upstream ---- */

/* Wake up when the oldest call on the upstream reaches call_timeout (0: never). */
void rev_call_timer_arm(struct rev_session *s)
{
	uint64_t limit_us = (uint64_t)s->base.route->cfg->call_timeout_ms * 1000;
	const struct rev_call *c = TAILQ_FIRST(&s->sentq.head);

	if (limit_us == 0 || !c || evtimer_pending(s->call_timer, NULL))
		return;
	uint64_t now = gw_now_us(), due = c->t_sent + limit_us;
	uint64_t wait = due > now ? due - now : 0;
	struct timeval tv = { (time_t)(wait / 1000000), (suseconds_t)(wait % 1000000) };
	evtimer_add(s->call_timer, &tv);
}

/*
 * The oldest call on the upstream may have waited call_timeout: the first
 * time, the upstream starts over and the calls in flight go again; a call
 * that was sent again for that already ends the session.
 */
void rev_call_timeout(evutil_socket_t fd, short what, void *arg)
{
	struct rev_session *s = arg;
	uint32_t limit_ms = s->base.route->cfg->call_timeout_ms;
	struct rev_call *c = TAILQ_FIRST(&s->sentq.head);

	if (s->state != RS_READY || limit_ms == 0 || !c)
		return;
	if (gw_now_us() - c->t_sent < (uint64_t)limit_ms * 1000) {
		rev_call_timer_arm(s); /* answered meanwhile: the next oldest */
		return;
	}
	gw_count_event(&s->base, GW_EV_CALL_TIMEOUT);
	if (c->timed_out) {
		gw_warn("reverse %s: xid %#x: no reply from the upstream within %u ms, twice: "
			"closing the client's connection (it retransmits after reconnecting)",
			s->base.client, c->xid, limit_ms);
		rev_session_fail(s);
		return;
	}
	struct rev_call *o;
	TAILQ_FOREACH (o, &s->sentq.head, link)
		o->timed_out = true;
	s->up->timed_out(s, c);
}

/* ---- replies ---- */

/* The DDP-eligible results of a full reply; only needed when the client offered Write chunks. */
static void rev_find_items(struct rev_session *s, struct rev_call *c)
{
	struct ulb_reply rep;

	c->nitems = 0;
	/* An upstream that routes backward calls by session has every reply read. */
	if ((c->nwrites == 0 && !s->up->learns_sessions) ||
	    (c->ulb.status != ULB_OK && c->ulb.status != ULB_DDP_STOPPED))
		return;
	enum ulb_reply_status st = ulb_parse_reply(
		&c->ulb, &s->ulb_sessions, c->reply->base + c->reply_off, c->reply_len, 0, &rep);
	if (rep.binds_back)
		s->up->back_bound(s, rep.bound_id);
	if ((st != ULB_REPLY_OK && st != ULB_REPLY_STOPPED) || rep.n_items > ULB_MAX_ITEMS ||
	    c->nwrites == 0)
		return;
	c->nitems = rep.n_items;
	memcpy(c->items, rep.items, sizeof(rep.items[0]) * rep.n_items);
}

/* The reply record to @c, a call on the upstream: to the client. */
void rev_reply_to_call(struct rev_session *s, struct rev_call *c, struct gw_buf *buf, uint32_t off,
		       uint32_t len)
{
	rev_dequeue(c);
	xidmap_remove(&s->xids, c->xid);
	c->in_xidmap = false;
	c->t_reply = gw_now_pass_us();
	gw_session_touch(&s->base, c->t_reply);
	rev_put_buf(&c->msg); /* answered: it will not be sent again */
	c->reply = buf;
	c->reply_off = off;
	c->reply_len = len;
	rev_find_items(s, c);
	/*
	 * FSINFO, an NFSv4 GETATTR of maxread/maxwrite, CREATE_SESSION: what
	 * the server advertises is lowered to what the route carries, in the
	 * record the gateway read (rewritten in place: no offset moves).
	 */
	if (c->ulb.advertises_sizes)
		gw_clamp_reply(&s->base, &c->ulb, buf->base + off, len, 0);
	rev_answer(s, c, RA_REPLY);
}

/* ---- the upstream's output ---- */

/*
 * A message for the upstream found no room in its output: the server has
 * stopped reading (output room is sized for everything it was sent).
 * Rather than lose the message on a live connection, where the server
 * would wait for it until its own timeout, the upstream starts over on a
 * new one (its overflow), as when the server goes away: calls in flight
 * go again. Said and counted here, before it does.
 */
void rev_up_overflow_warn(struct rev_session *s, const char *what, uint32_t xid, int err)
{
	gw_warn("reverse %s: %s xid %#x could not be queued to the upstream (%s): reconnecting",
		s->base.client, what, xid, strerror(err));
	gw_count_event(&s->base, GW_EV_OUTPUT_OVERFLOW);
}
