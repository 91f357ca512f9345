/* SPDX-License-Identifier: MIT */
/*
 * gateway/forward/forward.c - forward mode: record-marked TCP clients, an RPC-over-RDMA
 * server upstream. The gateway is the RDMA requester.
 *
 * A call's way through:
 *
 *   TCP record (in a registered pool buffer)
 *     -> fwd_record(): CALL or backward REPLY?
 *     -> fwd_call_admit(): ULB parse, XID check, into a slot, onto the queue
 *     -> fwd_pump(): while the server's grant and the send queue allow:
 *          fwd_marshal(): choose inline / Read chunks / Position-Zero for the
 *          call and Write chunks / Reply chunk for the reply, expose exactly
 *          those bytes through memory windows, and Send the transport header
 *          followed by scatter/gather entries into the record buffer
 *   RDMA reply (in a receive buffer)
 *     -> fwd_recv(): decode, match the XID, update the grant
 *     -> rconn_fence(): invalidate the call's windows (unless the server
 *        invalidated the one it could with Send With Invalidate)
 *     -> fwd_deliver(): rebuild the RPC reply from the inline part and the
 *        Write chunk data (or take it whole from the Reply chunk) and queue it
 *        on TCP by reference: no bulk byte is copied on the way.
 *
 * A slot is free again only when its Send has completed, its reply has been
 * delivered (or the connection is gone) and its windows are fenced: the
 * server may read or write the call's memory until then.
 *
 * The stages know the RDMA connection a session's calls go on only
 * through its upstream (forward_upstream.h): a connection of its own
 * (forward_own.c), which lives and dies with the client's TCP connection
 * (when either goes, the other is closed, and the client reconnects and
 * retransmits as it would after a server restart), or one of the route's
 * shared channels (forward_share.c), which outlives its clients.
 *
 * This file holds the session's life; forward_priv.h lists the stages.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/queue.h>
#include <sys/socket.h>
#include <unistd.h>

#include <event2/event.h>

#include "common/addr_text.h"
#include "common/clock.h"
#include "common/log.h"
#include "common/xdr.h"
#include "gateway/core/mode.h"
#include "gateway/core/session.h"
#include "gateway/maps/xidmap.h"
#include "rdma/conn.h"
#include "rdma/device.h"
#include "rdma/privdata.h"
#include "rdma/rpcrdma_hdr.h"
#include "rdma/splice.h"
#include "tcp/tcp_conn.h"
#include "ulb-rules/rpc_msg.h"
#include "ulb-rules/ulb.h"
#include "gateway/forward/forward_priv.h"

static void fwd_tcp_pressure(struct tcp_conn *tc, bool congested, void *arg)
{
	struct fwd_session *s = arg;

	/*
	 * While the client does not drain, send no new calls: no new replies
	 * come. On a shared connection only this client's calls stop.
	 */
	s->out_congested = congested;
	s->up->pause_changed(s);
	if (!congested)
		fwd_pump(s);
}

static void fwd_tcp_starved(struct tcp_conn *tc, void *arg)
{
	struct fwd_session *s = arg;

	gw_count_event(&s->base, GW_EV_NO_BUFFERS);
	s->tcp_starved = true;
	rdma_dev_wait_for_buffers(s->dev, &s->pool_waiter);
}

static void fwd_tcp_closed(struct tcp_conn *tc, const struct tcp_close_info *why, void *arg)
{
	struct fwd_session *s = arg;

	if (why->reason == TCP_CLOSE_BAD_RECORD) {
		gw_warn("forward %s: closing: bad record from the client: %s", s->base.client,
			rm_error_name(why->record_err));
		gw_count_event(&s->base, GW_EV_MALFORMED_RECORD);
	} else if (why->reason == TCP_CLOSE_RECORD_TIMEOUT) {
		gw_count_event(&s->base, GW_EV_RECORD_TIMEOUT);
	} else if (why->reason == TCP_CLOSE_ERROR) {
		gw_info("forward %s: client connection error: %s", s->base.client,
			strerror(why->err));
		gw_count_event(&s->base, GW_EV_CONNECTION_LOST);
	} else {
		gw_debug("forward %s: client closed (%s)", s->base.client,
			 tcp_close_reason_name(why->reason));
	}
	tcp_conn_free(s->tcp);
	s->tcp = NULL;
	fwd_session_close(s);
}

static const struct tcp_conn_ops fwd_tcp_ops = {
	.record = fwd_record,
	.oversized = fwd_oversized,
	.output_pressure = fwd_tcp_pressure,
	.starved = fwd_tcp_starved,
	.closed = fwd_tcp_closed,
};

static void fwd_established(struct rconn *rc, void *owner, const uint8_t *pdata, uint8_t len)
{
	struct fwd_session *s = owner;

	s->peer_pd_sent = rpcrdma_privdata_decode(pdata, len, &s->peer_pd);
	if (!s->peer_pd_sent)
		gw_info("forward %s: server sent no RFC 8797 private data", s->base.client);
	rpcrdma_inline_thresholds(&s->own_pd, &s->peer_pd, &s->thr);
	gw_addr_text(rconn_local_addr(rc), s->base.upstream, sizeof(s->base.upstream));
	gw_debug("forward %s: connected upstream from %s (inline %u/%u)", s->base.client,
		 s->base.upstream, s->thr.send, s->thr.recv);
	s->up->conn_ready(s, rc);
}

/*
 * Only once the RDMA connection the client's calls go on is up is the
 * device known whose pool the client's records must be read into: the
 * socket has waited, unread, until here.
 */
void fwd_client_ready(struct fwd_session *s)
{
	s->tcp = tcp_conn_new(gw_engine_base(s->base.route->eng), s->fd, &s->base.route->tcp_cfg,
			      rdma_pool_source(fwd_pool(s)), &fwd_tcp_ops, s);
	if (!s->tcp) {
		gw_err("forward %s: cannot set up the client connection: %s", s->base.client,
		       strerror(errno));
		fwd_session_close(s);
		return;
	}
	s->fd = -1;
	s->state = FS_READY;
	fwd_pump(s);
}

static void fwd_rdma_closed(struct rconn *rc, void *owner, enum rconn_close_reason reason)
{
	struct fwd_session *s = owner;

	s->rdma_closed = true;
	if (s->state == FS_CONNECTING) {
		gw_warn("forward %s: cannot reach the server: %s", s->base.client,
			rconn_close_reason_str(reason));
		gw_count_event(&s->base, GW_EV_UPSTREAM_FAILURE);
	} else if (reason == RCONN_CLOSE_PROTOCOL) {
		/* rconn said what the server did; the client reconnects and retransmits. */
		gw_count_event(&s->base, GW_EV_PROTOCOL_VIOLATION);
	} else if (reason != RCONN_CLOSE_LOCAL) {
		gw_info("forward %s: server connection lost: %s", s->base.client,
			rconn_close_reason_str(reason));
		gw_count_event(&s->base, GW_EV_CONNECTION_LOST);
	}
	if (s->up->conn_lost(s, reason))
		return; /* made again; its clients stay */
	fwd_session_close(s);
}

const struct rconn_ops fwd_rdma_ops = {
	.established = fwd_established,
	.recv = fwd_recv,
	.closed = fwd_rdma_closed,
};

/* ---- session life ---- */

/*
 * Close both sides. The TCP side closes gracefully: replies already queued
 * still reach the client. Calls still queued are dropped (the client
 * retransmits after it reconnects); slots in flight are freed by their
 * flushed completions, or, when none is outstanding, once the RDMA
 * teardown has run.
 */
void fwd_session_close(struct fwd_session *s)
{
	if (s->in_close)
		return;
	/*
	 * A shared channel is another kind of session (no TCP side, no call
	 * slots, not the engine's): its close and free are forward_share.c's.
	 * Which kind a session is, not which upstream it has, decides here.
	 */
	if (s->is_channel) {
		fwd_share_channel_close(s);
		return;
	}
	s->in_close = true;
	if (s->state != FS_CLOSING) {
		s->state = FS_CLOSING;
		s->up->client_close(s); /* on a shared channel: its queued calls */
		while (!TAILQ_EMPTY(&s->queue)) {
			struct fwd_call *c = TAILQ_FIRST(&s->queue);
			TAILQ_REMOVE(&s->queue, c, qlink);
			s->queued--;
			xidmap_remove(&s->xids, c->wire_xid);
			c->state = FC_DONE;
			fwd_call_put(c);
		}
		fwd_qos_close(s);
		fwd_bcalls_abandon(s);
		if (s->first_ev)
			event_del(s->first_ev);
		if (s->tcp)
			tcp_conn_close(s->tcp);
		if (s->fd >= 0) {
			close(s->fd);
			s->fd = -1;
		}
		if (s->rdma && !s->rdma_closed)
			rconn_close(s->rdma);
	}
	/* Calls still on the wire end if nothing can answer them any more. */
	s->up->close_sent(s);
	s->in_close = false;
	fwd_maybe_free(s);
}

/* The RDMA side under @s's calls on the wire is gone: they end unanswered. */
void fwd_abandon_sent_calls(struct fwd_session *s)
{
	for (uint32_t i = 0; i < s->slots.made; i++) {
		struct fwd_call *c = &s->calls[i];
		if (c->state == FC_SENT && !c->send_pending)
			fwd_call_abandon(c);
	}
}

void fwd_maybe_free(struct fwd_session *s)
{
	if (s->is_channel) { /* a channel's life is forward_share.c's (fwd_session_close()) */
		fwd_share_channel_free(s);
		return;
	}
	if (s->in_close || s->state != FS_CLOSING || s->tcp || !s->rdma_closed || s->slots.busy ||
	    s->bc_busy || s->refusals_busy)
		return;
	if (s->dev)
		rdma_dev_cancel_wait(s->dev, &s->pool_waiter);
	if (s->rdma) {
		rconn_destroy(s->rdma);
		s->rdma = NULL;
	}
	if (s->first_ev)
		event_free(s->first_ev);
	fwd_qos_free(s);
	xidmap_destroy(&s->xids);
	if (s->calls)
		munmap(s->calls, (size_t)s->ncalls * sizeof(*s->calls));
	free(s->bcalls);
	free(s->refusals);
	struct fwd_session *held = s->up->detach(s);
	gw_session_unregister(&s->base);
	free(s);
	if (held)
		fwd_maybe_free(held); /* a channel lost and no longer pointed at */
}

static enum gw_session_state fwd_state(const struct gw_session *g)
{
	const struct fwd_session *s = fwd_of((struct gw_session *)g);

	if (s->state == FS_CLOSING)
		return GW_SESSION_CLOSING;
	if (s->draining)
		return GW_SESSION_DRAINING;
	return s->state == FS_READY ? GW_SESSION_READY : GW_SESSION_CONNECTING;
}

static void fwd_credits(const struct gw_session *g, struct gw_credit_state *out,
			uint32_t *inline_send, uint32_t *inline_recv)
{
	const struct fwd_session *s = (const struct fwd_session *)g;

	memset(out, 0, sizeof(*out));
	out->granted = s->conn->granted;
	out->in_use = s->in_flight;
	out->queued = s->queued;
	out->backward_granted = s->nbcalls;
	out->backward_in_use = s->bc_busy;
	*inline_send = s->conn->thr.send;
	*inline_recv = s->conn->thr.recv;
}

static void fwd_drain(struct gw_session *g)
{
	struct fwd_session *s = fwd_of(g);

	s->draining = true;
	if (s->slots.busy == 0)
		fwd_session_close(s);
}

static void fwd_shutdown(struct gw_session *g)
{
	fwd_session_close(fwd_of(g));
}

static bool fwd_idle(const struct gw_session *g)
{
	const struct fwd_session *s = (const struct fwd_session *)g;

	return s->state == FS_READY && s->slots.busy == 0 && s->bc_busy == 0;
}

/*
 * Once a second (the engine's sweep): no client waits for ever. A call the
 * server has not answered within call_timeout is given up, and with it the
 * session on a connection of its own (forward_own.c), the call alone on a
 * shared channel (forward_share.c). A backward call the client has not
 * answered in that time is answered SYSTEM_ERR and its credit freed.
 * Returns true when the session was closed (it may be gone).
 */
static bool fwd_sweep(struct gw_session *g, uint64_t now)
{
	struct fwd_session *s = fwd_of(g);

	return s->up->sweep(s, now, (uint64_t)g->route->cfg->call_timeout_ms * 1000);
}

/* The version calls go in, once connected and settled (0 before). */
static uint32_t fwd_rpcrdma_version(const struct gw_session *g)
{
	const struct fwd_session *s = ((const struct fwd_session *)g)->conn;

	return s->state == FS_CONNECTING || !s->version_settled ? 0 : s->version;
}

static uint64_t fwd_read_yields(const struct gw_session *g)
{
	const struct fwd_session *s = (const struct fwd_session *)g;

	return s->tcp ? tcp_conn_stats(s->tcp)->yields : 0;
}

static const struct gw_session_ops fwd_session_ops = {
	.state = fwd_state,
	.credits = fwd_credits,
	.drain = fwd_drain,
	.shutdown = fwd_shutdown,
	.idle = fwd_idle,
	.sweep = fwd_sweep,
	.rpcrdma_version = fwd_rpcrdma_version,
	.read_yields = fwd_read_yields,
};

struct rconn_params fwd_rdma_params(const struct gw_route *r, struct rpcrdma_privdata *pd)
{
	struct rconn_params p = {
		/*
		 * The Linux server sends inline replies up to its own send size
		 * (4096) whatever we announce: receive buffers are at least that.
		 */
		.recv_count = r->credits + r->backchannel_credits,
		.recv_size = r->inline_receive_size > 4096 ? r->inline_receive_size : 4096,
		.send_depth = r->credits * (FWD_MAX_EXPOSE * 2 + 2) + 16,
		.max_send_sge = FWD_MAX_SGE,
		.nmw = r->credits * FWD_MAX_EXPOSE,
		.responder_resources = 16, /* the server's RDMA Reads of our Read chunks */
		.initiator_depth = 0,
		.connect_timeout_ms = r->connect_timeout_ms,
		.reserved_port = r->source_port == GW_SOURCE_PORT_RESERVED,
		.cq_budget = 2 * r->turn_budget,
		.cq_budget_contended = 2 * r->turn_budget_contended,
	};

	/*
	 * R (remote invalidation, RFC 8797), unless the route turns it off:
	 * the Linux server then answers a call whose chunks all share one
	 * rkey (the gateway's one window of a 4 KiB READ or WRITE) by Send
	 * With Invalidate, which saves the LOCAL_INV, its doorbell and its
	 * completion. fwd_recv() checks that the window it names is one of
	 * the answered call's, so that none is ever invalidated twice: rxe
	 * dereferences NULL when a free window is invalidated again.
	 */
	p.remote_invalidation = r->remote_invalidation != 0;
	*pd = (struct rpcrdma_privdata){ .remote_inv = p.remote_invalidation,
					 .send_size = r->inline_send_size,
					 .recv_size = r->inline_receive_size };
	rpcrdma_privdata_encode(p.private_data, pd);
	p.private_data_len = RPCRDMA_PD_SIZE;
	return p;
}

/*
 * The call slots (a client's) and backward-call state (an RDMA
 * connection's), when the session starts relaying: a session with its own
 * connection has both, a client on a shared channel the first, a channel
 * the second.
 */
/*
 * The call slots are mapped rather than calloc'd, and each is set up when
 * first needed (fwd_call_get()): credits + queue_limit slots are ~190 KB
 * at the defaults, a client that is mostly idle uses a few, and a shared
 * route is for thousands of such clients. Untouched pages of a mapping
 * stay out of resident memory; a calloc'd block taken from recycled heap
 * memory is cleared, all of it, at once.
 */
static struct fwd_call *fwd_map_slots(uint32_t n)
{
	void *p = mmap(NULL, (size_t)n * sizeof(struct fwd_call), PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	return p == MAP_FAILED ? NULL : p;
}

int fwd_alloc_slots(struct fwd_session *s, const struct gw_route *r, bool calls, bool bcalls)
{
	uint32_t ncalls = calls ? r->credits + r->queue_limit : 0;
	uint32_t nbcalls = bcalls ? r->backchannel_credits : 0;

	if (calls && ncalls) {
		if (!(s->calls = fwd_map_slots(ncalls)))
			return -ENOMEM;
		s->ncalls = ncalls; /* the mapping's size, for munmap */
		gw_slots_init(&s->slots, s->calls, sizeof(*s->calls),
			      offsetof(struct fwd_call, next_free), ncalls);
		if (xidmap_init(&s->xids, ncalls) != 0)
			return -ENOMEM; /* fwd_maybe_free() frees what was had */
	}
	if (bcalls && (!(s->bcalls = calloc(nbcalls, sizeof(*s->bcalls))) ||
		       !(s->refusals = calloc(nbcalls, sizeof(*s->refusals)))))
		return -ENOMEM;
	s->nbcalls = nbcalls;
	for (uint32_t i = 0; i < s->nbcalls; i++)
		s->bcalls[i].s = s;
	return 0;
}

/*
 * The client has spoken: its call slots, and the connection its calls go
 * on, its own or one of the route's shared channels.
 */
static void fwd_connect_upstream(struct fwd_session *s)
{
	const struct gw_route *r = s->base.route->cfg;

	if (fwd_alloc_slots(s, r, true, r->upstream_connections == 0) != 0) {
		gw_err("forward %s: out of memory for the session", s->base.client);
		fwd_session_close(s);
		return;
	}
	if (!(r->upstream_connections > 0 ? fwd_share_attach(s) : fwd_own_connect(s)))
		fwd_session_close(s);
}

/*
 * The client's first bytes are waited for before anything else is taken:
 * a connection that sends nothing (a port scan, an idle flood) costs a
 * socket and the session's small struct, never a connection at the server,
 * a reserved port or call slots, and it is closed after record_timeout,
 * as a record begun and not finished would be. An RPC client sends its
 * first call as soon as it has connected.
 */
static void fwd_first_bytes(evutil_socket_t fd, short what, void *arg)
{
	struct fwd_session *s = arg;
	uint8_t b;

	if (what & EV_TIMEOUT) {
		gw_info("forward %s: the client sent nothing for %u ms: closing", s->base.client,
			s->base.route->cfg->record_timeout_ms);
		gw_count_event(&s->base, GW_EV_RECORD_TIMEOUT);
		fwd_session_close(s);
		return;
	}
	ssize_t n = recv(fd, &b, 1, MSG_PEEK);
	if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) {
		struct timeval tv = gw_ms_timeval(s->base.route->cfg->record_timeout_ms);
		event_add(s->first_ev, &tv);
		return;
	}
	if (n <= 0) {
		gw_debug("forward %s: the client left before sending anything", s->base.client);
		fwd_session_close(s);
		return;
	}
	fwd_connect_upstream(s);
}

/*
 * How long a route remembers that its server fell back from Version Two
 * (the draft's section 5.2 lets a requester assume it on its next
 * connections, to avoid a negotiation loop; how long is ours). Asking again costs one round trip on
 * the first call of a connection, and NFS clients hold their connections for hours, so the saving
 * is small; what the memory buys is that a burst of new connections (clients mounting after a
 * gateway restart, a client reconnecting over and over) does not each pay for the question and
 * count a fallback. A server is upgraded by restarting it, which drops every connection: ten
 * minutes after the last ERR_VERS the next new connection asks again, so an upgraded server is
 * found within that time without an operator's help.
 */
#define FWD_VERSION_MEMORY_US (10ull * 60 * 1000000)

/*
 * The version a new connection opens in: the route's highest, unless its
 * server answered ERR_VERS to that within FWD_VERSION_MEMORY_US (a forward
 * route has one upstream address, so the route is the server), or the
 * route is limited below what was remembered since.
 */
uint32_t fwd_opening_version(struct fwd_session *s)
{
	struct gw_route_rt *route = s->base.route;
	struct fwd_route *fr = fwd_route(route);
	uint32_t max = route->cfg->max_rpcrdma_version >= RPCRDMA_V2 ? RPCRDMA_V2 : RPCRDMA_V1;

	if (fr->remembered_version == 0 || fr->remembered_version >= max)
		return max;
	if (gw_now_us() >= fr->remembered_until_us) {
		fr->remembered_version = 0; /* ask again: the server may be upgraded */
		return max;
	}
	gw_count_event(&s->base, GW_EV_VERSION_REMEMBERED);
	return fr->remembered_version;
}

void fwd_remember_version(struct fwd_session *s, uint32_t version)
{
	struct fwd_route *fr = fwd_route(s->base.route);

	fr->remembered_version = version;
	fr->remembered_until_us = gw_now_us() + FWD_VERSION_MEMORY_US;
}

int gw_forward_route_init(struct gw_route_rt *route)
{
	struct fwd_route *fr = calloc(1, sizeof(*fr));

	if (!fr)
		return -ENOMEM;
	route->mode_state = fr;
	return 0;
}

void gw_forward_accept(struct gw_route_rt *route, int fd, const struct sockaddr *peer)
{
	const struct gw_route *r = route->cfg;
	struct fwd_session *s = calloc(1, sizeof(*s));

	if (!s) {
		close(fd);
		return;
	}
	TAILQ_INIT(&s->queue);
	TAILQ_INIT(&s->qos_held);
	/* A connection of its own until fwd_share_attach() puts it on a shared one. */
	s->up = &fwd_own_upstream;
	s->conn = s;
	s->granted = 1; /* until the first reply (RFC 8166) */
	s->next_retry_xid = (uint32_t)gw_now_us() ^ 0x5a5a0000u;
	s->window = r->credits;
	s->pool_waiter.fn = fwd_pool_wake;
	rpcrdma_privdata_decode(NULL, 0, &s->peer_pd);
	s->state = FS_CONNECTING;
	s->fd = fd;
	memcpy(&s->peer, peer,
	       peer->sa_family == AF_INET6 ? sizeof(struct sockaddr_in6)
					   : sizeof(struct sockaddr_in));
	s->rdma_closed = true; /* no connection is started until the client speaks */
	gw_session_register(route, &s->base, &fwd_session_ops, peer);
	/* The highest version the route speaks is tried first; Version One needs no asking. */
	s->version = fwd_opening_version(s);
	s->version_settled = s->version == RPCRDMA_V1;

	s->first_ev = event_new(gw_engine_base(route->eng), fd, EV_READ, fwd_first_bytes, s);
	struct timeval tv = gw_ms_timeval(r->record_timeout_ms);
	if (!s->first_ev || event_add(s->first_ev, &tv) != 0) {
		gw_err("forward %s: cannot wait for the client: %s", s->base.client,
		       strerror(errno));
		fwd_session_close(s);
	}
}

/* Forward mode as the engine sees it: TCP clients, on every worker's listener. */
const struct gw_mode_ops gw_forward_mode = {
	.name = "forward",
	.client_transport = GW_TRANSPORT_TCP,
	.tcp_clients = true,
	.route_init = gw_forward_route_init,
	.accept = gw_forward_accept,
	.route_close = gw_forward_route_close,
	.route_free = gw_forward_route_free,
	.route_stats = gw_forward_route_stats,
};
