/* SPDX-License-Identifier: MIT */
/*
 * gateway/reverse/reverse_upstream.c - reverse mode, the TCP upstream: calls sent by reference,
 * reply records matched by XID, the upstream connection made and remade with a growing delay, and
 * the call timeout that starts it over.
 */
#include "common/addr_text.h"
#include "gateway/core/size_clamp.h"
#include "gateway/reverse/reverse_priv.h"

/* ---- calls to the upstream ---- */

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

static bool rev_send_upstream(struct rev_session *s, struct rev_call *c)
{
	if (tcp_conn_send_ref(s->tcp, c->msg, c->msg_off, c->msg_len) != 0) {
		gw_debug("reverse %s: xid %#x not queued upstream: %s", s->base.client, c->xid,
			 strerror(errno));
		return false;
	}
	GW_COUNT(&s->base, tcp_bytes_out, (uint64_t)c->msg_len + 4);
	c->state = RC_SENT;
	c->t_sent = gw_now_pass_us();
	rev_enqueue(&s->sentq, c);
	rev_call_timer_arm(s);
	return true;
}

static void rev_requeue_front(struct rev_session *s, struct rev_call *c)
{
	c->state = RC_WAITING;
	TAILQ_INSERT_HEAD(&s->upq.head, c, link);
	s->upq.n++;
	c->q = &s->upq;
}

/* Calls that wait go to the upstream while it takes them. */
static void rev_up_pump(struct rev_session *s)
{
	struct rev_call *c;

	while (s->state == RS_READY && s->up == UP_READY && !s->out_congested &&
	       (c = TAILQ_FIRST(&s->upq.head)) != NULL) {
		rev_dequeue(c);
		if (rev_send_upstream(s, c))
			continue;
		/* A failed send may have closed the upstream under us (ENOMEM). */
		if (s->state == RS_READY)
			rev_requeue_front(s, c);
		else if (c->state != RC_FREE) /* the close has not released it already */
			rev_call_put(c);
		return;
	}
}

void rev_call_to_upstream(struct rev_session *s, struct rev_call *c)
{
	if (s->ch) {
		rev_share_call(s, c); /* over the route's pool of connections */
		return;
	}
	if (s->up == UP_READY && !s->out_congested && s->upq.n == 0 && rev_send_upstream(s, c))
		return;
	/*
	 * While the upstream reconnects, queue_limit bounds the calls that
	 * wait. Before it was ever reached they wait anyway (the credits bound
	 * them): the session ends if it cannot be reached.
	 */
	if (s->up_reached && s->up != UP_READY && s->upq.n >= s->base.route->cfg->queue_limit) {
		gw_warn("reverse %s: xid %#x: the upstream is not connected and %u calls wait "
			"already: SYSTEM_ERR",
			s->base.client, c->xid, s->upq.n);
		xidmap_remove(&s->xids, c->xid);
		c->in_xidmap = false;
		rev_put_buf(&c->msg);
		c->rpc_stat = RPC_ACC_SYSTEM_ERR;
		rev_answer(s, c, RA_RPC_ERROR);
		return;
	}
	c->state = RC_WAITING;
	rev_enqueue(&s->upq, c);
}

/* ---- the upstream ---- */

static void rev_up_restart(struct rev_session *s);
static const struct tcp_conn_ops rev_tcp_ops;

/* The DDP-eligible results of a full reply; only needed when the client offered Write chunks. */
static void rev_find_items(struct rev_session *s, struct rev_call *c)
{
	struct ulb_reply rep;

	c->nitems = 0;
	/*
	 * On a shared upstream every reply is read, for the sessions that
	 * CREATE_SESSION makes and BIND_CONN_TO_SESSION binds: backward calls
	 * are routed by them.
	 */
	if ((c->nwrites == 0 && !s->ch) ||
	    (c->ulb.status != ULB_OK && c->ulb.status != ULB_DDP_STOPPED))
		return;
	enum ulb_reply_status st = ulb_parse_reply(
		&c->ulb, &s->ulb_sessions, c->reply->base + c->reply_off, c->reply_len, 0, &rep);
	if (rep.binds_back)
		rev_share_bound_back(s, rep.bound_id);
	if ((st != ULB_REPLY_OK && st != ULB_REPLY_STOPPED) || rep.n_items > ULB_MAX_ITEMS ||
	    c->nwrites == 0)
		return;
	c->nitems = rep.n_items;
	memcpy(c->items, rep.items, sizeof(rep.items[0]) * rep.n_items);
}

static void rev_tcp_record(struct tcp_conn *tc, struct gw_buf *buf, uint32_t off, uint32_t len,
			   void *arg)
{
	struct rev_session *s = arg;
	uint32_t xid, type;

	GW_COUNT(&s->base, tcp_bytes_in, (uint64_t)len + 4);
	if (s->state != RS_READY || !rpc_msg_peek(buf->base + off, len, &xid, &type)) {
		gw_buf_put(buf);
		return;
	}
	if (type == RPC_MSG_CALL) {
		/* The server calls the client (an NFSv4.1 callback): told by its msg_type. */
		gw_session_touch(&s->base, gw_now_us());
		rev_bc_call(s, buf, off, len, xid);
		return;
	}
	uint32_t i = xidmap_find(&s->xids, xid);
	if (i == XIDMAP_NONE || i >= s->ncalls || s->calls[i].state != RC_SENT) {
		gw_count_event(&s->base, GW_EV_UNMATCHED_REPLY);
		gw_buf_put(buf);
		return;
	}
	rev_reply_to_call(s, &s->calls[i], buf, off, len);
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

static void rev_tcp_pressure(struct tcp_conn *tc, bool congested, void *arg)
{
	struct rev_session *s = arg;

	/* The server does not read its calls: keep new ones until it does. */
	s->out_congested = congested;
	if (!congested)
		rev_up_pump(s);
}

static void rev_tcp_starved(struct tcp_conn *tc, void *arg)
{
	struct rev_session *s = arg;

	gw_count_event(&s->base, GW_EV_NO_BUFFERS);
	s->tcp_starved = true;
	rdma_dev_wait_for_buffers(rconn_device(s->rdma), &s->pool_waiter);
}

void rev_pool_wake(struct rdma_pool_waiter *w)
{
	struct rev_session *s =
		(struct rev_session *)((char *)w - offsetof(struct rev_session, pool_waiter));

	if (s->tcp_starved && s->tcp) {
		s->tcp_starved = false;
		tcp_conn_source_ready(s->tcp);
	}
	rev_reads_pump(s);
}

static void rev_up_give_up(struct rev_session *s)
{
	gw_warn("reverse %s: the upstream %s could not be reached within %u ms: closing the "
		"client's connection",
		s->base.client, s->base.route->cfg->upstream.text,
		s->base.route->cfg->connect_timeout_ms);
	gw_count_event(&s->base, GW_EV_UPSTREAM_FAILURE);
	rev_session_close(s);
}

static uint64_t rev_up_missing_ms(const struct rev_session *s)
{
	return (gw_now_us() - s->up_missing_since) / 1000;
}

/* Try again after a delay that doubles each time, within the connect timeout. */
static void rev_up_retry_later(struct rev_session *s)
{
	uint64_t delay;

	if (!gw_backoff_next_within(&s->backoff, rev_up_missing_ms(s),
				    s->base.route->cfg->connect_timeout_ms, &delay)) {
		rev_up_give_up(s);
		return;
	}
	struct timeval tv = gw_ms_timeval(delay);
	evtimer_add(s->retry_timer, &tv);
}

void rev_up_retry(evutil_socket_t fd, short what, void *arg)
{
	struct rev_session *s = arg;

	if (s->state == RS_READY && s->up == UP_NONE)
		rev_up_connect(s);
}

static void rev_up_connected(evutil_socket_t fd, int err, void *arg)
{
	struct rev_session *s = arg;

	s->connect = NULL;
	s->up = UP_NONE;
	if (fd < 0) {
		gw_info("reverse %s: upstream %s: %s", s->base.client,
			s->base.route->cfg->upstream.text, strerror(err));
		rev_up_retry_later(s);
		return;
	}
	s->tcp = tcp_conn_new(gw_engine_base(s->base.route->eng), fd, &s->base.route->tcp_cfg,
			      rdma_pool_source(rev_pool(s)), &rev_tcp_ops, s);
	if (!s->tcp) {
		gw_err("reverse %s: cannot set up the upstream connection: %s", s->base.client,
		       strerror(errno));
		close(fd);
		rev_up_retry_later(s);
		return;
	}
	s->up = UP_READY;
	s->up_gen++;
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	if (getsockname(fd, (struct sockaddr *)&ss, &sl) == 0)
		gw_addr_text((const struct sockaddr *)&ss, s->base.upstream,
			     sizeof(s->base.upstream));
	if (s->up_reached) {
		gw_info("reverse %s: upstream reconnected from %s; %u calls go (again)",
			s->base.client, s->base.upstream, s->upq.n);
		gw_count_event(&s->base, GW_EV_UPSTREAM_RECONNECT);
	} else {
		gw_debug("reverse %s: upstream connected from %s", s->base.client,
			 s->base.upstream);
	}
	s->up_reached = true;
	rev_up_pump(s);
}

void rev_up_connect(struct rev_session *s)
{
	const struct gw_route *r = s->base.route->cfg;
	uint64_t missing = rev_up_missing_ms(s);

	if (missing >= r->connect_timeout_ms) {
		rev_up_give_up(s);
		return;
	}
	unsigned flags = r->source_port == GW_SOURCE_PORT_RESERVED ? TCP_CONNECT_RESVPORT : 0;
	s->up = UP_CONNECTING;
	s->connect = tcp_connect_start(
		gw_engine_base(s->base.route->eng), (const struct sockaddr *)&r->upstream.addr,
		r->upstream.addrlen, (unsigned)(r->connect_timeout_ms - missing), flags,
		rev_up_connected, s);
	if (!s->connect) {
		gw_warn("reverse %s: cannot connect to %s: %s", s->base.client, r->upstream.text,
			strerror(errno));
		s->up = UP_NONE;
		rev_up_retry_later(s);
	}
}

void rev_tcp_closed(struct tcp_conn *tc, const struct tcp_close_info *why, void *arg)
{
	struct rev_session *s = arg;

	if (s->state == RS_CLOSING) {
		/* The session's own close of the upstream is over (or failed): the last of it. */
		tcp_conn_free(tc);
		s->tcp = NULL;
		rev_maybe_free(s); /* may free s */
		return;
	}
	tcp_conn_free(s->tcp);
	s->tcp = NULL;
	s->up = UP_NONE;
	s->out_congested = false;
	s->tcp_starved = false;
	if (why->reason == TCP_CLOSE_BAD_RECORD) {
		/* The same call would get the same reply again: no point reconnecting. */
		gw_warn("reverse %s: closing: bad record from the upstream: %s", s->base.client,
			rm_error_name(why->record_err));
		gw_count_event(&s->base, GW_EV_MALFORMED_RECORD);
		rev_session_fail(s);
		return;
	}
	if (why->reason == TCP_CLOSE_RECORD_TIMEOUT)
		gw_count_event(&s->base, GW_EV_RECORD_TIMEOUT);
	gw_info("reverse %s: upstream connection lost (%s%s%s); reconnecting", s->base.client,
		tcp_close_reason_name(why->reason), why->err ? ": " : "",
		why->err ? strerror(why->err) : "");
	gw_count_event(&s->base, GW_EV_CONNECTION_LOST);
	rev_up_restart(s);
}

/*
 * The upstream is to start over on a new connection (it was lost, or it
 * stopped answering): the calls in flight go first on the next one, in
 * their order, XIDs unchanged.
 */
static void rev_up_restart(struct rev_session *s)
{
	struct rev_call *c;

	if (s->tcp) {
		/* A server that stops answering gets a reset: it may not read a FIN either. */
		tcp_conn_free(s->tcp);
		s->tcp = NULL;
	}
	s->up = UP_NONE;
	s->out_congested = false;
	s->tcp_starved = false;
	rev_bc_drop_waiting(s);
	while ((c = TAILQ_LAST(&s->sentq.head, rev_callhead)) != NULL) {
		rev_dequeue(c);
		rev_requeue_front(s, c);
	}
	s->up_missing_since = gw_now_us();
	gw_backoff_init(&s->backoff, REV_BACKOFF_MIN_MS, REV_BACKOFF_MAX_MS);
	rev_up_connect(s);
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
	if (s->ch && !c->timed_out) {
		rev_share_timeout(s); /* the channel starts over; its calls go again */
		return;
	}
	if (c->timed_out) {
		gw_warn("reverse %s: xid %#x: no reply from the upstream within %u ms, twice: "
			"closing the client's connection (it retransmits after reconnecting)",
			s->base.client, c->xid, limit_ms);
		rev_session_fail(s);
		return;
	}
	gw_warn("reverse %s: xid %#x: no reply from the upstream within %u ms: a new upstream "
		"connection, %u calls in flight go again",
		s->base.client, c->xid, limit_ms, s->sentq.n);
	TAILQ_FOREACH (c, &s->sentq.head, link)
		c->timed_out = true;
	rev_up_restart(s);
}

static const struct tcp_conn_ops rev_tcp_ops = {
	.record = rev_tcp_record,
	.output_pressure = rev_tcp_pressure,
	.starved = rev_tcp_starved,
	.closed = rev_tcp_closed,
};
