/* SPDX-License-Identifier: MIT */
/*
 * gateway/reverse/reverse_qos.c - reverse mode, quality of service: a
 * parsed call of an RDMA client is held to its class's limits
 * (gateway/maps/qosmap.h) before it reaches its TCP upstream, so before it
 * is queued for the session's own connection or put in a shared
 * connection's fair queue.
 *
 * Back-pressure is the client's credits: a held call keeps its slot, its
 * receive (or assembled) buffer and its credit until it goes and is
 * answered, so a client over its rate can have at most its credits of
 * calls here and then sends no more. Its calls sent after a held one are
 * held behind it, in order; none is answered an error. What does not need
 * a credit still flows: the client's replies to backward calls are taken
 * as they come (rev_recv()), and its calls already on the upstream are
 * answered. Other clients never wait for a held call: it is in no queue
 * they share (the session's own queue of held calls, qosq).
 *
 * When the session closes, its held calls are given back with every other
 * slot (rev_session_close()); rev_qos_close() ends their wait's figures.
 *
 * A route without classes never comes here (rev_call_ready() tests one
 * pointer).
 */
#include "gateway/reverse/reverse_priv.h"

static const struct gw_qos_class *class_cfg(const struct rev_call *c)
{
	return &c->s->base.route->cfg->qos[c->qos_cls];
}

/* Ask @c's entry now: 0 when it went (admitted), else the wait. */
static uint64_t qos_try(struct rev_session *s, struct rev_call *c, uint64_t now)
{
	uint64_t wait =
		qos_route_admit(s->base.route->qos, s->base.route->cfg, c->qos_cls,
				(const struct sockaddr *)&s->peer, now, c->msg_len, &c->qos);

	if (wait == 0)
		c->qos_admitted = true;
	return wait;
}

static void qos_arm(struct rev_session *s, uint64_t wait)
{
	struct timeval tv = qos_hold_delay(wait);

	event_add(s->qos_timer, &tv);
}

/* Send the held calls that may go now, in order; re-arm for the first that may not. */
static void qos_release(struct rev_session *s)
{
	uint64_t now = gw_now_pass_us();
	struct rev_call *c;

	while (s->state == RS_READY && (c = TAILQ_FIRST(&s->qosq.head)) != NULL) {
		uint64_t wait = qos_try(s, c, now);

		if (wait != 0) {
			/* Maybe now waiting on another client entry (another class). */
			qos_hold_on(s->base.route->qos, &s->qos_wait, c->qos, now);
			qos_arm(s, wait);
			return;
		}
		rev_dequeue(c);
		s->up->call(s, c); /* which sets its state: sent, queued or answered */
	}
	qos_hold_end(s->base.route->qos, &s->qos_wait, now);
}

static void qos_timer_cb(evutil_socket_t fd, short what, void *arg)
{
	struct rev_session *s = arg;

	(void)fd;
	(void)what;
	gw_clock_pass_begin();
	qos_release(s);
	gw_clock_pass_end();
}

/* A call of the entry this session waits on is done (struct qos_hold): look again now. */
static void qos_wake(void *arg)
{
	struct rev_session *s = arg;

	if (s->state == RS_READY && s->qosq.n)
		qos_arm(s, 0);
}

void rev_qos_call(struct rev_session *s, struct rev_call *c)
{
	struct gw_route_rt *rt = s->base.route;
	int cls = qos_route_class(rt->cfg, (const struct sockaddr *)&s->peer, &c->ulb);
	uint64_t now = gw_now_pass_us(), wait = 0;

	if (cls < 0) {
		s->up->call(s, c);
		return;
	}
	c->qos_cls = (uint32_t)cls;
	if (s->qosq.n == 0 && (wait = qos_try(s, c, now)) == 0) {
		s->up->call(s, c);
		return;
	}
	if (!s->qos_timer) {
		s->qos_timer = event_new(gw_engine_base(rt->eng), -1, 0, qos_timer_cb, s);
		if (!s->qos_timer) {
			/* Cannot wait without a timer: the call goes, unlimited. */
			gw_warn("reverse %s: no timer for a qos wait; call not limited",
				s->base.client);
			c->qos = NULL;
			s->up->call(s, c);
			return;
		}
		s->qos_wait.wake = qos_wake;
		s->qos_wait.arg = s;
	}
	bool first = s->qosq.n == 0;
	c->state = RC_QOS_HELD;
	rev_enqueue(&s->qosq, c);
	if (first) {
		qos_hold_on(rt->qos, &s->qos_wait, c->qos, now);
		qos_arm(s, wait);
	}
}

void rev_qos_done(struct rev_call *c)
{
	struct rev_session *s = c->s;

	/*
	 * The reply record relayed to the client, whichever way it went
	 * (inline or chunks). Wakes every session waiting for a place in
	 * flight of c->qos, this one too.
	 */
	qos_entry_done(s->base.route->qos, c->qos, class_cfg(c), gw_now_pass_us(),
		       c->answer == RA_REPLY ? c->reply_len : 0);
	c->qos_admitted = false;
}

void rev_qos_close(struct rev_session *s)
{
	if (s->qos_timer)
		event_del(s->qos_timer);
	if (s->base.route->qos)
		qos_hold_end(s->base.route->qos, &s->qos_wait, gw_now_pass_us());
}

void rev_qos_free(struct rev_session *s)
{
	if (s->qos_timer) {
		event_free(s->qos_timer);
		s->qos_timer = NULL;
	}
}
