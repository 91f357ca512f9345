/* SPDX-License-Identifier: MIT */
/*
 * gateway/reverse/reverse.c - reverse mode: RPC-over-RDMA clients, a record-marked
 * TCP server upstream. The gateway is the RDMA responder.
 *
 * A call's way through:
 *
 *   RDMA receive (the connection has posted a fresh receive already)
 *     -> rev_recv(): decode; answer what cannot be a call (ERR_VERS,
 *        ERR_CHUNK), drop RDMA_DONE, hold a credit and a call slot, copy
 *        the Write list and Reply chunk the client offered into the slot
 *     -> rev_reads_pump(): a call with Read chunks becomes ONE contiguous
 *        message in a pool buffer: the inline pieces are copied (at most
 *        the inline threshold), chunk data is RDMA-Read straight to its
 *        final place, and never more Reads are outstanding than the client
 *        allowed (its responder resources)
 *     -> rev_call_ready(): ULB parse (GARBAGE_ARGS is answered here, never
 *        forwarded), XID map, and out on TCP by reference, XID unchanged
 *   TCP reply record (it lands in a registered pool buffer)
 *     -> rev_tcp_record(): match the XID, find the DDP-eligible results
 *     -> rev_post_reply(): result item k into the client's Write chunk k
 *        (RDMA Writes straight from the record buffer, no pad), the reduced
 *        reply inline (the Send gathers it from the record buffer) or into
 *        the Reply chunk (RDMA_NOMSG), or ERR_CHUNK when it fits nothing
 *        offered. The record goes back to the pool when the Send completes.
 *
 * Credits. The gateway grants the route's credits in every answer and keeps
 * that many receives posted, plus the backchannel's. A call holds a credit
 * from its receive until its answer is posted, which is never later than
 * the client can learn of the answer. A client with more calls outstanding
 * than granted has broken the protocol (its next message might find no
 * receive): it is counted and disconnected (rev_admit_call()).
 *
 * Call slots are another matter: a slot is held until its answer's Send has
 * completed, and the client may send its next call before the gateway has
 * seen that completion. A call that finds every slot busy is not the
 * client's fault: its receive buffer is kept, in arrival order, until a
 * slot frees (rev_rx_park(), rev_rx_pump()). That costs a pool buffer per
 * waiting message and no receive (rconn has posted a fresh one already),
 * and it bounds itself: a client within its credits never has more waiting
 * than its credits plus its backward replies, the room kept; one that
 * fills that room has overrun its credits. Slots could instead be sized for
 * the worst case, but the Sends a slow completion leaves pending are bounded
 * only by the send queue, and each slot carries a segment array for every
 * chunk a client may offer.
 *
 * The upstream (reverse_upstream.h: the stages call it through the
 * session's table and never ask which it is). With upstream_connections 0
 * (reverse_own.c): one TCP connection per RDMA connection, made when the
 * RDMA connection is established; calls wait until it is up. When it drops (a
 * server restart) the gateway reconnects with a growing delay, for up to
 * connect_timeout, and calls wait meanwhile (at most queue_limit of them;
 * beyond that they are answered SYSTEM_ERR). The calls that were in flight
 * are sent again on the new connection with their XIDs, as a TCP client
 * retransmits after a reconnect, so that an NFS server restart costs the
 * RDMA client a pause and not an I/O error. If the upstream cannot be
 * (re)connected in time, the RDMA connection is closed: the client
 * reconnects and retransmits as after any server restart.
 * With upstream_connections N > 0 (reverse_share.c) the route's clients
 * share N such connections (calls under wire XIDs, a fair queue on each),
 * made and made again the same way.
 *
 * A call the upstream does not answer within call_timeout is counted
 * (call_timeout) and the upstream connection is started over, which sends
 * the calls in flight again, as a TCP client does after a major timeout; a
 * call that then goes unanswered once more ends the session, and the RDMA
 * client reconnects and retransmits, as the kernel's client does after
 * its own timeout. One timer per session watches the oldest call on the
 * upstream (the sent queue is in the order sent), not a timer per call.
 *
 * When the session
 * ends, its own upstream connection gets a normal close (its output flushed,
 * FIN, the server's FIN awaited within close_timeout), so the server sees a
 * client leave and not a failure; only a client that broke the rules (a
 * protocol violation, a credit overrun) or an upstream that did (a bad
 * record, a call never answered) gets a reset. The session is freed once
 * that close is over.
 *
 * The backchannel (RFC 8167). A CALL record from the server (an NFSv4.1
 * callback) goes to the client as a backward call: RDMA_MSG, no chunks,
 * inline, sent from the record buffer itself. No more are outstanding
 * than the client's backward credits (1 until its first backward reply
 * says otherwise); others wait in arrival order, up to backchannel_credits
 * of them, and a call that cannot be delivered (too large for the client's
 * inline threshold, no slot) is answered SYSTEM_ERR on TCP. The client's
 * reply (msg_type REPLY; the XID is never used to guess) goes to the server
 * as a record, unless the upstream connection that carried the call is gone.
 *
 * Ownership. A slot holds the receive buffer while its Read list is still
 * being walked, the assembled call until its reply comes (for a resend
 * after a reconnect), and the reply record until its Send completes. A
 * slot is free again only when no work request can touch its memory: its
 * Reads and its answer's Send have completed, or the connection's teardown
 * has flushed them.
 *
 * This file holds the session's life; reverse_priv.h lists the stages.
 */
#include "common/addr_text.h"
#include "gateway/core/mode.h"
#include "gateway/reverse/reverse_priv.h"

/* ---- the RDMA connection ---- */

static void rev_established(struct rconn *rc, void *owner, const uint8_t *pdata, uint8_t len)
{
	struct rev_session *s = owner;

	s->rdma = rc;
	if (s->state == RS_CLOSING) {
		/* Shut down before the connection was up. */
		rconn_close(rc);
		return;
	}
	s->read_depth = rconn_initiator_depth(rc);
	if (s->read_depth > REV_MAX_READ_DEPTH)
		s->read_depth = REV_MAX_READ_DEPTH;

	/* Header room for every slot, in as few registered buffers as the pool allows. */
	uint32_t per_buf = rdma_pool_max_size(rev_pool(s)) / s->room_size;
	if (per_buf == 0) {
		gw_err("reverse %s: the pool's largest buffer holds no header room",
		       s->base.client);
		rev_session_close(s);
		return;
	}
	for (uint32_t i = 0; i < s->ncalls; i++) {
		uint32_t b = i / per_buf, k = i % per_buf;
		if (k == 0) {
			uint32_t n = s->ncalls - i < per_buf ? s->ncalls - i : per_buf;
			s->hdr_bufs[b] = rdma_pool_alloc(rev_pool(s), (size_t)n * s->room_size);
			if (!s->hdr_bufs[b]) {
				gw_err("reverse %s: no registered memory for the session's headers",
				       s->base.client);
				rev_session_close(s);
				return;
			}
			s->nhdr_bufs = b + 1;
		}
		s->calls[i].room = s->hdr_bufs[b]->base + (size_t)k * s->room_size;
		s->calls[i].room_lkey = s->hdr_bufs[b]->lkey;
	}
	s->bc_hdr_buf = rdma_pool_alloc(rev_pool(s), (size_t)s->nbcalls * REV_BC_ROOM);
	if (!s->bc_hdr_buf) {
		gw_err("reverse %s: no registered memory for the backchannel's headers",
		       s->base.client);
		rev_session_close(s);
		return;
	}
	for (uint32_t i = 0; i < s->nbcalls; i++) {
		s->bcalls[i].room = s->bc_hdr_buf->base + (size_t)i * REV_BC_ROOM;
		s->bcalls[i].room_lkey = s->bc_hdr_buf->lkey;
	}
	s->state = RS_READY;
	gw_debug("reverse %s: established (inline %u/%u, %u credits, %u RDMA Reads at a time)",
		 s->base.client, s->thr.send, s->thr.recv, s->grant, s->read_depth);
	if (!s->up->open(s))
		rev_session_close(s);
}

/* Why the client's connection went, logged and counted: the client's doing or the fabric's. */
static void rev_rdma_close_reason(struct rev_session *s, enum rconn_close_reason reason)
{
	switch (reason) {
	case RCONN_CLOSE_DISCONNECTED:
		gw_debug("reverse %s: the client disconnected", s->base.client);
		return;
	case RCONN_CLOSE_PROTOCOL:
		/* rconn closed it: the client posted what no RPC-over-RDMA peer may. */
		gw_warn("reverse %s: the client broke the transport's rules (%s): closed",
			s->base.client, rconn_close_reason_str(reason));
		gw_count_event(&s->base, GW_EV_PROTOCOL_VIOLATION);
		s->reset_upstream = true;
		return;
	case RCONN_CLOSE_TIMEOUT:
		if (s->state == RS_ACCEPTING) {
			/* Accepted, never established: it held a session for connect_timeout. */
			gw_info("reverse %s: the connection was not established within %u ms",
				s->base.client, s->base.route->cfg->connect_timeout_ms);
			gw_count_event(&s->base, GW_EV_CONNECT_TIMEOUT);
			return;
		}
		break;
	default:
		break;
	}
	gw_info("reverse %s: connection lost: %s", s->base.client, rconn_close_reason_str(reason));
	gw_count_event(&s->base, GW_EV_CONNECTION_LOST);
}

static void rev_rdma_closed(struct rconn *rc, void *owner, enum rconn_close_reason reason)
{
	struct rev_session *s = owner;

	s->rdma = rc;
	s->rdma_closed = true;
	if (s->state != RS_CLOSING)
		rev_rdma_close_reason(s, reason);
	/* The teardown has completed every work request: every slot can go now. */
	rev_session_close(s);
}

static const struct rconn_ops rev_rdma_ops = {
	.established = rev_established,
	.recv = rev_recv,
	.closed = rev_rdma_closed,
};

/* ---- session life ---- */

/*
 * Close both sides. Slots go as soon as no work request refers to them;
 * the rest when the RDMA teardown has flushed theirs (rev_rdma_closed()).
 */
void rev_session_close(struct rev_session *s)
{
	if (s->in_close)
		return;
	s->in_close = true;
	if (s->state != RS_CLOSING) {
		s->state = RS_CLOSING;
		if (s->call_timer)
			evtimer_del(s->call_timer);
		if (s->mem_ev)
			evtimer_del(s->mem_ev);
		rev_qos_close(s);
		/* Its own connection gets a normal close; its calls on a shared one lose their
		 * owner. */
		s->up->close(s);
		if (s->rdma && !s->rdma_closed)
			rconn_close(s->rdma);
	}
	rev_rx_drop_all(s);
	for (uint32_t i = 0; i < s->ncalls; i++) {
		struct rev_call *c = &s->calls[i];
		if (c->state != RC_FREE)
			rev_call_put(c);
	}
	rev_bc_abandon(s);
	s->in_close = false;
	rev_maybe_free(s);
}

/* A peer broke the rules: close, resetting the upstream rather than closing it. */
void rev_session_fail(struct rev_session *s)
{
	s->reset_upstream = true;
	rev_session_close(s);
}

/*
 * Free the session once nothing refers to it: both connections are gone
 * (the upstream's close has reported, the RDMA teardown has completed every
 * work request) and every slot is free. Called wherever one of those
 * becomes true; the last such call frees it, and nothing after it touches
 * @s.
 */
void rev_maybe_free(struct rev_session *s)
{
	if (s->in_close || s->state != RS_CLOSING || s->up->holds(s) || !s->rdma_closed ||
	    s->slots.busy || s->bc_busy)
		return;
	for (uint32_t b = 0; b < s->nhdr_bufs; b++)
		gw_buf_put(s->hdr_bufs[b]);
	if (s->bc_hdr_buf)
		gw_buf_put(s->bc_hdr_buf);
	if (s->rdma) {
		if (rconn_device(s->rdma))
			rdma_dev_cancel_wait(rconn_device(s->rdma), &s->pool_waiter);
		rconn_destroy(s->rdma);
	}
	event_free(s->retry_timer);
	event_free(s->call_timer);
	event_free(s->mem_ev);
	rev_qos_free(s);
	xidmap_destroy(&s->xids);
	free(s->rxq);
	free(s->bcalls);
	free(s->hdr_bufs);
	free(s->segs);
	free(s->calls);
	gw_session_unregister(&s->base);
	free(s);
}

static enum gw_session_state rev_state(const struct gw_session *g)
{
	const struct rev_session *s = (const struct rev_session *)g;

	if (s->state == RS_CLOSING)
		return GW_SESSION_CLOSING;
	if (s->draining)
		return GW_SESSION_DRAINING;
	return s->state == RS_READY && s->up->conn(s) ? GW_SESSION_READY : GW_SESSION_CONNECTING;
}

static void rev_credits(const struct gw_session *g, struct gw_credit_state *out,
			uint32_t *inline_send, uint32_t *inline_recv)
{
	const struct rev_session *s = (const struct rev_session *)g;

	memset(out, 0, sizeof(*out));
	out->granted = s->grant;
	out->in_use = s->outstanding;
	out->queued = s->up->queued(s);
	out->backward_granted = s->bc_grant;
	out->backward_in_use = s->bc_out;
	*inline_send = s->thr.send;
	*inline_recv = s->thr.recv;
}

static void rev_drain(struct gw_session *g)
{
	struct rev_session *s = rev_of(g);

	s->draining = true;
	if (s->slots.busy == 0)
		rev_session_close(s);
}

/*
 * Close now. An idle session's upstream gets the normal close; when the
 * process is leaving (its drain ran out of time, or a second signal), the
 * engine does not wait for servers' FINs, so the upstream is reset, even
 * one whose normal close is under way.
 */
static void rev_shutdown(struct gw_session *g)
{
	struct rev_session *s = rev_of(g);

	if (s->base.route->draining) {
		s->reset_upstream = true;
		if (s->state == RS_CLOSING)
			s->up->reset(s);
	}
	rev_session_close(s); /* may free s */
}

static bool rev_idle(const struct gw_session *g)
{
	const struct rev_session *s = (const struct rev_session *)g;

	return s->state == RS_READY && s->slots.busy == 0 && s->bc_busy == 0;
}

static uint32_t rev_rpcrdma_version(const struct gw_session *g)
{
	return ((const struct rev_session *)g)->version;
}

static const struct gw_session_ops rev_session_ops = {
	.state = rev_state,
	.credits = rev_credits,
	.drain = rev_drain,
	.shutdown = rev_shutdown,
	.idle = rev_idle,
	.rpcrdma_version = rev_rpcrdma_version,
};

/* The Write chunks and segments per chunk a client may offer, as the route allows. */
static uint32_t rev_cap_writes(const struct gw_route *r)
{
	return r->max_write_chunks < RPCRDMA_MAX_WRITE_CHUNKS ? r->max_write_chunks
							      : RPCRDMA_MAX_WRITE_CHUNKS;
}

static uint32_t rev_cap_segs(const struct gw_route *r)
{
	return r->max_chunk_segments < REV_MAX_SEGS ? r->max_chunk_segments : REV_MAX_SEGS;
}

/*
 * Call slots: the client may send a new call as soon as it has an answer,
 * before that answer's Send completion reaches the gateway, so slots
 * beyond the credits hold answers whose Sends have not completed yet. A
 * call that still finds none free waits for one (rev_rx_pump()).
 */
static uint32_t rev_slots(const struct gw_route *r)
{
	return 2 * r->credits;
}

/*
 * A slot's header room: the longest reply header (fixed words, an empty
 * Read list, every Write chunk echoed, the Reply chunk) and an RPC error
 * reply after it; never more than can be sent inline anyway.
 */
static uint32_t rev_room_size(const struct gw_route *r, uint32_t writes, uint32_t segs)
{
	/* the fixed words, Version Two's direction, the empty Read list, ... */
	uint64_t hdr = RPCRDMA_FIXED_SIZE + 4 + 4 +
		       (uint64_t)writes * (8 + segs * RPCRDMA_SEG_SIZE) + 4 + 8 +
		       (uint64_t)segs * RPCRDMA_SEG_SIZE;
	uint64_t room = hdr + REV_RPC_ERR_MAX;

	if (room > r->inline_send_size)
		room = r->inline_send_size;
	return (uint32_t)((room + 63) & ~63ull);
}

void gw_reverse_listen_params(const struct gw_route *r, struct rconn_params *p)
{
	const struct rpcrdma_privdata pd = {
		/* A responder is never sent a Send With Invalidate: R means nothing here. */
		.remote_inv = false,
		.send_size = r->inline_send_size,
		.recv_size = r->inline_receive_size,
	};

	memset(p, 0, sizeof(*p));
	p->recv_count = r->credits + r->backchannel_credits;
	p->recv_size = r->inline_receive_size > 4096 ? r->inline_receive_size : 4096;
	/*
	 * Answers (a Send, usually one Write) and Reads; more waits for room.
	 * The largest single answer (a Write per segment of every chunk the
	 * client may offer, and the Send) must fit an empty queue, or it would
	 * wait for ever and every answer behind it.
	 */
	uint32_t largest = (rev_cap_writes(r) + 1) * rev_cap_segs(r) + 1;
	p->send_depth = rev_slots(r) * 3 + REV_MAX_READ_DEPTH + 16;
	if (p->send_depth < largest + REV_MAX_READ_DEPTH)
		p->send_depth = largest + REV_MAX_READ_DEPTH;
	p->max_send_sge = REV_MAX_SGE;
	p->nmw = 0;				 /* the responder exposes no memory */
	p->responder_resources = 0;		 /* the client does not read from us */
	p->initiator_depth = REV_MAX_READ_DEPTH; /* bounded by the client's at accept */
	p->connect_timeout_ms = r->connect_timeout_ms;
	p->cq_budget = 2 * r->turn_budget;
	rpcrdma_privdata_encode(p->private_data, &pd);
	p->private_data_len = RPCRDMA_PD_SIZE;
}

static void rev_free_unregistered(struct rev_session *s)
{
	if (s->retry_timer)
		event_free(s->retry_timer);
	if (s->call_timer)
		event_free(s->call_timer);
	if (s->mem_ev)
		event_free(s->mem_ev);
	free(s->rxq);
	free(s->bcalls);
	free(s->hdr_bufs);
	free(s->segs);
	free(s->calls);
	free(s);
}

bool gw_reverse_accept(struct gw_route_rt *route, const struct sockaddr *peer, const uint8_t *pdata,
		       uint8_t pdata_len, const struct rdma_conn_param *req,
		       struct rconn_params *params, const struct rconn_ops **ops, void **owner)
{
	const struct gw_route *r = route->cfg;

	/* Seen from here (rdma/conn.h): the RDMA Reads the client lets us have at it. */
	if (req->initiator_depth == 0) {
		/* As the Linux server does: Read chunks could never be pulled. */
		char who[80];
		gw_addr_text(peer, who, sizeof(who));
		gw_warn("%s: refused client %s: it allows no RDMA Reads (responder resources 0)",
			r->name, who);
		return false;
	}
	struct rev_session *s = calloc(1, sizeof(*s));
	if (!s)
		return false;
	s->cap_writes = rev_cap_writes(r);
	s->cap_segs = rev_cap_segs(r);
	s->ncalls = rev_slots(r);
	s->room_size = rev_room_size(r, s->cap_writes, s->cap_segs);
	size_t segs_per_call = (size_t)(s->cap_writes + 1) * s->cap_segs;
	s->calls = calloc(s->ncalls, sizeof(*s->calls));
	s->segs = calloc(s->ncalls * segs_per_call, sizeof(*s->segs));
	s->hdr_bufs = calloc(s->ncalls, sizeof(struct gw_buf *));
	s->nbcalls = r->backchannel_credits;
	s->bcalls = calloc(s->nbcalls, sizeof(*s->bcalls));
	/* Every receive the connection keeps posted (gw_reverse_listen_params()). */
	s->rxq_cap = r->credits + r->backchannel_credits;
	s->rxq = calloc(s->rxq_cap, sizeof(*s->rxq));
	s->retry_timer = evtimer_new(gw_engine_base(route->eng), rev_up_retry, s);
	s->call_timer = evtimer_new(gw_engine_base(route->eng), rev_call_timeout, s);
	s->mem_ev = evtimer_new(gw_engine_base(route->eng), rev_mem_wake, s);
	if (!s->calls || !s->segs || !s->hdr_bufs || !s->bcalls || !s->rxq || !s->retry_timer ||
	    !s->call_timer || !s->mem_ev) {
		rev_free_unregistered(s);
		return false;
	}
	if (xidmap_init(&s->xids, s->ncalls) != 0) {
		rev_free_unregistered(s);
		return false;
	}
	for (uint32_t i = 0; i < s->ncalls; i++) {
		struct rev_call *c = &s->calls[i];
		c->s = s;
		c->index = i;
		c->segs = s->segs + i * segs_per_call;
	}
	gw_slots_init(&s->slots, s->calls, sizeof(*s->calls), offsetof(struct rev_call, next_free),
		      s->ncalls);
	TAILQ_INIT(&s->readq.head);
	TAILQ_INIT(&s->upq.head);
	TAILQ_INIT(&s->sentq.head);
	TAILQ_INIT(&s->qosq.head);
	TAILQ_INIT(&s->sqq.head);
	TAILQ_INIT(&s->bcq);
	for (uint32_t i = 0; i < s->nbcalls; i++)
		s->bcalls[i].s = s;
	s->bc_grant = 1; /* until the client's first backward reply grants more */
	/* The one place that asks which upstream: the route's, for the session's life. */
	s->up = r->upstream_connections ? &rev_share_upstream : &rev_own_upstream;
	s->pool_waiter.fn = rev_pool_wake;
	s->own_pd = (struct rpcrdma_privdata){ .remote_inv = false,
					       .send_size = r->inline_send_size,
					       .recv_size = r->inline_receive_size };
	s->peer_pd_sent = rpcrdma_privdata_decode(pdata, pdata_len, &s->peer_pd);
	if (!s->peer_pd_sent)
		gw_debug("%s: a client sent no RFC 8797 private data: 1024 bytes each way",
			 r->name);
	rpcrdma_inline_thresholds(&s->own_pd, &s->peer_pd, &s->thr);
	/* As the Linux server does: the client's offer taken, unless the route says not to. */
	s->send_inv = s->peer_pd_sent && s->peer_pd.remote_inv && r->remote_invalidation;
	s->grant = r->credits;
	if (peer->sa_family == AF_INET || peer->sa_family == AF_INET6)
		memcpy(&s->peer, peer,
		       peer->sa_family == AF_INET ? sizeof(struct sockaddr_in)
						  : sizeof(struct sockaddr_in6));
	s->state = RS_ACCEPTING;
	gw_session_register(route, &s->base, &rev_session_ops, peer);

	*ops = &rev_rdma_ops;
	*owner = s;
	(void)params; /* the route's defaults (gw_reverse_listen_params()) are right */
	return true;
}

/*
 * Reverse mode as the engine sees it: RDMA clients on worker 0's listener.
 * The route's TCP connections are its upstream, so they neither take
 * turns as clients do nor timestamp receives.
 */
const struct gw_mode_ops gw_reverse_mode = {
	.name = "reverse",
	.client_transport = GW_TRANSPORT_RDMA,
	.tcp_clients = false,
	.listen_params = gw_reverse_listen_params,
	.rdma_accept = gw_reverse_accept,
	.route_free = gw_reverse_route_free,
	.route_stats = gw_reverse_route_stats,
};
