/* SPDX-License-Identifier: MIT */
/*
 * gateway/reverse/reverse_own.c - reverse mode, a session's own TCP
 * connection (upstream_connections 0): the upstream (reverse_upstream.h)
 * of a client that is its only user. Calls go by reference under the
 * client's own XIDs, kept end to end (the server's duplicate request cache
 * sees the client's); reply records are matched in the session's XID
 * table; the connection is made when the RDMA connection is established
 * and made again with a growing delay, the calls in flight sent again on
 * the new one in their order; its backward calls are all its client's.
 */
#include "common/addr_text.h"
#include "gateway/reverse/reverse_priv.h"

static const struct tcp_conn_ops rev_tcp_ops;
static void rev_up_connect(struct rev_session *s);
static void rev_up_restart(struct rev_session *s);

/* ---- calls ---- */

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

	while (s->state == RS_READY && s->up_state == UP_READY && !s->out_congested &&
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

static void own_call(struct rev_session *s, struct rev_call *c)
{
	if (s->up_state == UP_READY && !s->out_congested && s->upq.n == 0 &&
	    rev_send_upstream(s, c))
		return;
	/*
	 * While the upstream reconnects, queue_limit bounds the calls that
	 * wait. Before it was ever reached they wait anyway (the credits bound
	 * them): the session ends if it cannot be reached.
	 */
	if (s->up_reached && s->up_state != UP_READY &&
	    s->upq.n >= s->base.route->cfg->queue_limit) {
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

/* The calls in flight go again on a new connection, in their order, XIDs unchanged. */
static void own_timed_out(struct rev_session *s, const struct rev_call *c)
{
	gw_warn("reverse %s: xid %#x: no reply from the upstream within %u ms: a new upstream "
		"connection, %u calls in flight go again",
		s->base.client, c->xid, s->base.route->cfg->call_timeout_ms, s->sentq.n);
	rev_up_restart(s);
}

/* The client's sessions are its own: no other client could take a back channel from it. */
static void own_back_bound(struct rev_session *s, const uint8_t id[ULB_SESSIONID_SIZE])
{
	(void)s;
	(void)id;
}

/* ---- records from the server ---- */

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

static void rev_tcp_closed(struct tcp_conn *tc, const struct tcp_close_info *why, void *arg)
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
	s->up_state = UP_NONE;
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

static const struct tcp_conn_ops rev_tcp_ops = {
	.record = rev_tcp_record,
	.output_pressure = rev_tcp_pressure,
	.starved = rev_tcp_starved,
	.closed = rev_tcp_closed,
};

/* ---- the connection ---- */

static struct tcp_conn *own_conn(const struct rev_session *s)
{
	return s->up_state == UP_READY ? s->tcp : NULL;
}

static uint32_t own_generation(const struct rev_session *s)
{
	return s->up_gen;
}

/* Not when a failed send closed the connection already: it is being made again. */
static void own_overflow(struct rev_session *s, const char *what, uint32_t xid)
{
	int err = errno;

	if (!s->tcp)
		return;
	rev_up_overflow_warn(s, what, xid, err);
	struct tcp_close_info why = { .reason = TCP_CLOSE_ERROR, .err = err };
	rev_tcp_closed(s->tcp, &why, s);
}

static void own_buffers_back(struct rev_session *s)
{
	if (s->tcp_starved && s->tcp) {
		s->tcp_starved = false;
		tcp_conn_source_ready(s->tcp);
	}
}

static uint32_t own_queued(const struct rev_session *s)
{
	return s->upq.n;
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

	if (s->state == RS_READY && s->up_state == UP_NONE)
		rev_up_connect(s);
}

static void rev_up_connected(evutil_socket_t fd, int err, void *arg)
{
	struct rev_session *s = arg;

	s->connect = NULL;
	s->up_state = UP_NONE;
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
	s->up_state = UP_READY;
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

static void rev_up_connect(struct rev_session *s)
{
	const struct gw_route *r = s->base.route->cfg;
	uint64_t missing = rev_up_missing_ms(s);

	if (missing >= r->connect_timeout_ms) {
		rev_up_give_up(s);
		return;
	}
	unsigned flags = r->source_port == GW_SOURCE_PORT_RESERVED ? TCP_CONNECT_RESVPORT : 0;
	s->up_state = UP_CONNECTING;
	s->connect = tcp_connect_start(
		gw_engine_base(s->base.route->eng), (const struct sockaddr *)&r->upstream.addr,
		r->upstream.addrlen, (unsigned)(r->connect_timeout_ms - missing), flags,
		rev_up_connected, s);
	if (!s->connect) {
		gw_warn("reverse %s: cannot connect to %s: %s", s->base.client, r->upstream.text,
			strerror(errno));
		s->up_state = UP_NONE;
		rev_up_retry_later(s);
	}
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
	s->up_state = UP_NONE;
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

/* ---- the session's life ---- */

/* The connection is made now; calls wait in the queue until it is up. */
static bool own_open(struct rev_session *s)
{
	s->up_missing_since = gw_now_us();
	gw_backoff_init(&s->backoff, REV_BACKOFF_MIN_MS, REV_BACKOFF_MAX_MS);
	rev_up_connect(s); /* closes the session itself if it gives up */
	return true;
}

static void own_close(struct rev_session *s)
{
	if (s->retry_timer)
		evtimer_del(s->retry_timer);
	if (s->connect) {
		tcp_connect_cancel(s->connect);
		s->connect = NULL;
	}
	const struct gw_route *r = s->base.route->cfg;
	bool linger = !s->reset_upstream && (r->source_port != GW_SOURCE_PORT_RESERVED ||
					     gw_upstream_may_linger(s->base.route, gw_now_us()));
	if (s->tcp && !linger) {
		tcp_conn_free(s->tcp);
		s->tcp = NULL;
	} else if (s->tcp) {
		/*
		 * The client is gone or going: its calls' replies have nowhere
		 * to go, but what was sent goes, and the server sees a FIN. The
		 * session waits for rev_tcp_closed().
		 */
		tcp_conn_close(s->tcp);
	}
	s->up_state = UP_NONE;
}

/* A normal close under way is cut short: the server gets a reset. */
static void own_reset(struct rev_session *s)
{
	if (s->tcp) {
		tcp_conn_free(s->tcp);
		s->tcp = NULL;
	}
}

static bool own_holds(const struct rev_session *s)
{
	return s->tcp || s->connect;
}

const struct rev_upstream_ops rev_own_upstream = {
	.learns_sessions = false,
	.call = own_call,
	.timed_out = own_timed_out,
	.back_bound = own_back_bound,
	.conn = own_conn,
	.generation = own_generation,
	.overflow = own_overflow,
	.buffers_back = own_buffers_back,
	.queued = own_queued,
	.open = own_open,
	.close = own_close,
	.reset = own_reset,
	.holds = own_holds,
};
