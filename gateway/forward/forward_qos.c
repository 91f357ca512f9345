/* SPDX-License-Identifier: MIT */
/*
 * gateway/forward/forward_qos.c - forward mode, quality of service: a
 * parsed call is held to its class's limits (gateway/maps/qosmap.h) before
 * it reaches its upstream, so before it is mapped, queued or picked for an
 * RDMA connection, whether the session has a connection of its own or a
 * shared one.
 *
 * A client over its rate waits, and only it: its call is held, the calls
 * it sends after it are held behind it (in order), and its TCP connection
 * is not read meanwhile, so the back-pressure reaches its socket and its
 * NFS client throttles itself. It is never answered an error. Other
 * clients' calls never wait for it: nothing held is in a queue they share.
 *
 * A route without classes never comes here (fwd_call_admit() tests one
 * pointer).
 */
#include <event2/event.h>

#include "common/clock.h"
#include "common/log.h"
#include "gateway/forward/forward_priv.h"

static const struct gw_qos_class *class_cfg(const struct fwd_call *c)
{
	return &c->s->base.route->cfg->qos[c->qos_cls];
}

/* Ask @c's entry now: 0 when it went (admitted), else the wait. */
static uint64_t qos_try(struct fwd_session *s, struct fwd_call *c, uint64_t now)
{
	uint64_t wait =
		qos_route_admit(s->base.route->qos, s->base.route->cfg, c->qos_cls,
				(const struct sockaddr *)&s->peer, now, c->rec_len, &c->qos);

	if (wait == 0)
		c->qos_admitted = true;
	return wait;
}

static void qos_arm(struct fwd_session *s, uint64_t wait)
{
	struct timeval tv = qos_hold_delay(wait);

	event_add(s->qos_timer, &tv);
}

/* Reading resumes unless something else keeps it paused (fwd_call_put()'s test). */
static void qos_resume(struct fwd_session *s)
{
	if (s->read_paused && !s->mem_paused && s->state == FS_READY && !s->draining &&
	    !gw_slots_full(&s->slots) && s->queued < s->base.route->cfg->queue_limit) {
		s->read_paused = false;
		tcp_conn_resume_read(s->tcp);
	}
}

/* Send the held calls that may go now, in order; re-arm for the first that may not. */
static void qos_release(struct fwd_session *s)
{
	uint64_t now = gw_now_pass_us();

	while (!TAILQ_EMPTY(&s->qos_held) && s->state == FS_READY) {
		struct fwd_call *c = TAILQ_FIRST(&s->qos_held);
		uint64_t wait = qos_try(s, c, now);

		if (wait != 0) {
			/* Maybe now waiting on another client entry (another class). */
			qos_hold_on(s->base.route->qos, &s->qos_wait, c->qos, now);
			qos_arm(s, wait);
			return;
		}
		TAILQ_REMOVE(&s->qos_held, c, qos_link);
		s->up->admit(s, c);
	}
	qos_hold_end(s->base.route->qos, &s->qos_wait, now);
	qos_resume(s);
}

static void qos_timer_cb(evutil_socket_t fd, short what, void *arg)
{
	struct fwd_session *s = arg;

	(void)fd;
	(void)what;
	gw_clock_pass_begin();
	qos_release(s);
	gw_clock_pass_end();
}

/* A call of the entry this session waits on is done (struct qos_hold): look again now. */
static void qos_wake(void *arg)
{
	struct fwd_session *s = arg;

	if (s->state == FS_READY && !TAILQ_EMPTY(&s->qos_held))
		qos_arm(s, 0);
}

void fwd_qos_admit(struct fwd_session *s, struct fwd_call *c)
{
	struct gw_route_rt *rt = s->base.route;
	int cls = qos_route_class(rt->cfg, (const struct sockaddr *)&s->peer, &c->ulb);
	uint64_t now = gw_now_pass_us(), wait = 0;

	if (cls < 0) {
		s->up->admit(s, c);
		return;
	}
	c->qos_cls = (uint32_t)cls;
	if (TAILQ_EMPTY(&s->qos_held) && (wait = qos_try(s, c, now)) == 0) {
		s->up->admit(s, c);
		return;
	}
	if (!s->qos_timer) {
		s->qos_timer = event_new(gw_engine_base(rt->eng), -1, 0, qos_timer_cb, s);
		if (!s->qos_timer) {
			/* Cannot wait without a timer: the call goes, unlimited. */
			gw_warn("forward %s: no timer for a qos wait; call not limited",
				s->base.client);
			c->qos = NULL;
			s->up->admit(s, c);
			return;
		}
		s->qos_wait.wake = qos_wake;
		s->qos_wait.arg = s;
	}
	bool first = TAILQ_EMPTY(&s->qos_held);
	TAILQ_INSERT_TAIL(&s->qos_held, c, qos_link);
	if (!s->read_paused) {
		s->read_paused = true;
		tcp_conn_pause_read(s->tcp);
	}
	if (first) {
		qos_hold_on(rt->qos, &s->qos_wait, c->qos, now);
		qos_arm(s, wait);
	}
}

/* The bytes of the RPC reply delivered to the client. */
static uint64_t reply_bytes(const struct fwd_call *c)
{
	uint64_t n = c->reply_len > c->reply_hdr_len ? c->reply_len - c->reply_hdr_len : 0;

	for (uint32_t k = 0; k < c->nwrites && k < ULB_MAX_ITEMS; k++)
		n += c->wlen[k];
	return n + c->reply_chunk_len;
}

void fwd_qos_done(struct fwd_call *c)
{
	struct fwd_session *s = c->s;

	/* Wakes every session waiting for a place in flight of c->qos, this one too. */
	qos_entry_done(s->base.route->qos, c->qos, class_cfg(c), gw_now_pass_us(),
		       c->reply ? reply_bytes(c) : 0);
	c->qos_admitted = false;
}

void fwd_qos_close(struct fwd_session *s)
{
	if (s->qos_timer)
		event_del(s->qos_timer);
	qos_hold_end(s->base.route->qos, &s->qos_wait, gw_now_pass_us());
	while (!TAILQ_EMPTY(&s->qos_held)) {
		struct fwd_call *c = TAILQ_FIRST(&s->qos_held);
		TAILQ_REMOVE(&s->qos_held, c, qos_link);
		c->state = FC_DONE;
		fwd_call_put(c);
	}
}

void fwd_qos_free(struct fwd_session *s)
{
	if (s->qos_timer) {
		event_free(s->qos_timer);
		s->qos_timer = NULL;
	}
}
