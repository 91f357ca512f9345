/* SPDX-License-Identifier: MIT */
/*
 * gateway/forward/forward_own.c - forward mode, a session's own RDMA
 * connection (upstream_connections 0): the upstream (forward_upstream.h)
 * of a client that is its only user. Its calls go under the client's own
 * XIDs, kept end to end (the server's duplicate request cache sees the
 * client's), in the session's XID table and queue; the connection's
 * backward calls are all its client's; when the connection goes, the
 * client goes with it, and the client reconnects and retransmits as it
 * would after a server restart.
 */
#include <errno.h>
#include <string.h>
#include <sys/queue.h>

#include "common/clock.h"
#include "common/log.h"
#include "common/xdr.h"
#include "gateway/core/session.h"
#include "gateway/maps/xidmap.h"
#include "rdma/conn.h"
#include "rdma/device.h"
#include "rdma/rpcrdma_hdr.h"
#include "ulb-rules/rpc_msg.h"
#include "gateway/forward/forward_priv.h"

/* ---- calls ---- */

/* Send queued calls while the server's grant, the send queue and buffers allow. */
static void own_pump(struct fwd_session *s)
{
	if (s->state != FS_READY)
		return;
	while (!TAILQ_EMPTY(&s->queue) && !s->out_congested) {
		uint32_t window = s->granted < s->window ? s->granted : s->window;
		if (s->in_flight >= window)
			break;
		struct fwd_call *c = TAILQ_FIRST(&s->queue);
		int err = fwd_marshal(s, c);
		if (err == -EDQUOT) /* max_session_memory: resumed as buffers come back */
			rdma_dev_wait_for_buffers(s->dev, &s->pool_waiter);
		if (err == -EAGAIN || err == -EDQUOT)
			break;
		TAILQ_REMOVE(&s->queue, c, qlink);
		s->queued--;
		if (err) {
			/* Could not be sent: the connection is failing, or the call is unsendable.
			 */
			xidmap_remove(&s->xids, c->wire_xid);
			if (s->state == FS_READY)
				fwd_reply_error(s, c->xid, RPC_ACC_SYSTEM_ERR);
			c->state = FC_DONE;
			fwd_call_unexpose(s, c);
			fwd_call_put(c);
			if (s->state != FS_READY)
				return;
			continue;
		}
		c->state = FC_SENT;
		c->t_sent = gw_now_pass_us();
		s->in_flight++;
	}
}

/* The call goes under the client's XID; a retransmission of one in flight is absorbed. */
static void own_admit(struct fwd_session *s, struct fwd_call *c)
{
	enum xidmap_put_result put = xidmap_put(&s->xids, c->xid, c->index);

	if (put != XIDMAP_ADDED) {
		if (put == XIDMAP_DUPLICATE) {
			/* The client sent this XID again while the first is in flight. */
			gw_count_event(&s->base, GW_EV_RETRANSMIT_ABSORBED);
		} else {
			/* The XID table could not grow (out of memory): refused as unservable now.
			 */
			gw_count_event(&s->base, GW_EV_NO_BUFFERS);
			fwd_reply_error(s, c->xid, RPC_ACC_SYSTEM_ERR);
		}
		c->state = FC_DONE;
		fwd_call_put(c);
		return;
	}
	c->state = FC_QUEUED;
	TAILQ_INSERT_TAIL(&s->queue, c, qlink);
	s->queued++;
	uint32_t window = s->granted < s->window ? s->granted : s->window;
	if (s->in_flight >= window)
		GW_COUNT(&s->base, calls_queued_for_credits, 1);
	own_pump(s);
}

/*
 * The call goes again, first in the queue, under an XID of the gateway's
 * own: any that is not in flight will do; a client call that later comes
 * with the same one while the retry is out is taken for a retransmit (one
 * chance in four billion per retry).
 */
static void own_requeue(struct fwd_call *c)
{
	struct fwd_session *s = c->s;
	enum xidmap_put_result put;

	do {
		c->wire_xid = s->next_retry_xid++;
		put = c->wire_xid == c->xid ? XIDMAP_DUPLICATE
					    : xidmap_put(&s->xids, c->wire_xid, c->index);
	} while (put == XIDMAP_DUPLICATE);
	if (put == XIDMAP_NO_ROOM) {
		/* The XID table could not grow (out of memory): the retry cannot go out. */
		gw_count_event(&s->base, GW_EV_NO_BUFFERS);
		fwd_reply_error(s, c->xid, RPC_ACC_SYSTEM_ERR);
		fwd_call_put(c); /* FC_DONE already, its windows fenced */
		return;
	}
	xdr_put32(c->rec->base + c->rec_off, c->wire_xid);
	c->state = FC_QUEUED;
	TAILQ_INSERT_HEAD(&s->queue, c, qlink);
	s->queued++;
	own_pump(s);
}

static void own_call_done(struct fwd_call *c, bool answered)
{
	(void)answered;
	xidmap_remove(&c->s->xids, c->wire_xid);
	c->s->in_flight--;
}

static void own_call_freed(struct fwd_call *c)
{
	(void)c;
}

/* The reply goes to the client that sent the call, unless it is closing. */
static struct fwd_session *own_reply_to(struct fwd_call *c)
{
	return c->s->state != FS_CLOSING ? c->s : NULL;
}

/* NFSv4.1 sessions bear on this client alone: its session table has learned them. */
static void own_sessions_learned(struct fwd_session *s, const struct ulb_call *u,
				 const struct ulb_reply *rep)
{
	(void)s;
	(void)u;
	(void)rep;
}

static struct fwd_bcall *own_bcall_of(struct fwd_session *s, uint32_t xid)
{
	for (uint32_t i = 0; i < s->nbcalls; i++) {
		struct fwd_bcall *b = &s->bcalls[i];
		if (b->busy && !b->send_pending && b->xid == xid)
			return b;
	}
	return NULL;
}

/* ---- the client's life ---- */

/* The pump reads out_congested as it goes; fwd_tcp_pressure() runs it when that ends. */
static void own_pause_changed(struct fwd_session *s)
{
	(void)s;
}

/* The session's queue and backward calls are its own: fwd_session_close() drops them. */
static void own_client_close(struct fwd_session *s)
{
	(void)s;
}

/*
 * Calls still waiting for their replies end once the RDMA side is gone
 * (ops->closed has run: every work request has completed). They are not
 * answered; the client retransmits them after it reconnects.
 */
static void own_close_sent(struct fwd_session *s)
{
	if (s->rdma_closed)
		fwd_abandon_sent_calls(s);
}

static struct fwd_session *own_detach(struct fwd_session *s)
{
	(void)s;
	return NULL;
}

/*
 * A call the server has not answered within call_timeout resets the
 * session, as the kernel's RPC-over-RDMA client does after a major
 * timeout: both sides close, the client reconnects and retransmits, and
 * the server's duplicate request cache answers what it had already done.
 */
static bool own_sweep(struct fwd_session *s, uint64_t now, uint64_t limit)
{
	if (!limit || s->state != FS_READY)
		return false;
	fwd_bcalls_expire(s, now, limit);
	if (s->in_flight == 0)
		return false;
	for (uint32_t i = 0; i < s->slots.made; i++) {
		const struct fwd_call *c = &s->calls[i];
		if (c->state == FC_SENT && now - c->t_sent >= limit) {
			gw_warn("forward %s: the server has not answered xid %#x in %llu s: "
				"resetting the session",
				s->base.client, c->xid,
				(unsigned long long)((now - c->t_sent) / 1000000));
			gw_count_event(&s->base, GW_EV_CALL_TIMEOUT);
			fwd_session_close(s);
			return true;
		}
	}
	return false;
}

/* ---- the connection ---- */

static struct fwd_call *own_call_by_xid(struct fwd_session *s, uint32_t wire_xid)
{
	uint32_t i = xidmap_find(&s->xids, wire_xid);

	if (i == XIDMAP_NONE || s->calls[i].state != FC_SENT)
		return NULL;
	return &s->calls[i];
}

/* The pump reads the grant as it goes. */
static void own_grant_changed(struct fwd_session *s)
{
	(void)s;
}

static struct fwd_session *own_bcall_client(struct fwd_session *s, struct gw_buf *buf,
					    const struct rpcrdma_hdr *h, const char **why)
{
	(void)buf;
	(void)h;
	if (!s->tcp) {
		*why = "the client is gone";
		return NULL;
	}
	return s;
}

static void own_conn_ready(struct fwd_session *s, struct rconn *rc)
{
	s->dev = rconn_device(rc);
	fwd_client_ready(s);
}

/* The client goes with its connection. */
static bool own_conn_lost(struct fwd_session *s, enum rconn_close_reason reason)
{
	(void)s;
	(void)reason;
	return false;
}

/*
 * Open the session's RDMA connection; its calls wait in the queue until it
 * is established (own_conn_ready()). False: it could not be started.
 */
bool fwd_own_connect(struct fwd_session *s)
{
	struct gw_route_rt *route = s->base.route;
	const struct gw_route *r = route->cfg;
	struct rconn_params params = fwd_rdma_params(r, &s->own_pd);

	s->rdma_closed = false;
	s->rdma = rconn_connect(gw_engine_rdma(route->eng),
				(const struct sockaddr *)&r->upstream.addr, NULL, &params,
				&fwd_rdma_ops, s);
	if (!s->rdma) {
		gw_count_event(&s->base, GW_EV_UPSTREAM_FAILURE);
		s->rdma_closed = true;
		return false;
	}
	return true;
}

const struct fwd_upstream_ops fwd_own_upstream = {
	.remade = false,
	.admit = own_admit,
	.pump = own_pump,
	.requeue = own_requeue,
	.call_done = own_call_done,
	.call_freed = own_call_freed,
	.reply_to = own_reply_to,
	.sessions_learned = own_sessions_learned,
	.bcall_of = own_bcall_of,
	.pause_changed = own_pause_changed,
	.client_close = own_client_close,
	.close_sent = own_close_sent,
	.detach = own_detach,
	.sweep = own_sweep,
	.call_by_xid = own_call_by_xid,
	.grant_changed = own_grant_changed,
	.bcall_client = own_bcall_client,
	.conn_ready = own_conn_ready,
	.conn_lost = own_conn_lost,
};
