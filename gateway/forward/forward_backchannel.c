/* SPDX-License-Identifier: MIT */
/*
 * gateway/forward/forward_backchannel.c - forward mode, the backward direction (RFC 8167): the
 * server's calls relayed to the client as CALL records, the client's replies back as inline
 * RDMA_MSG, and a SYSTEM_ERR refusal for a call the client cannot be given.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/queue.h>
#include <sys/socket.h>
#include <unistd.h>

#include <event2/event.h>

#include "common/clock.h"
#include "common/log.h"
#include "common/xdr.h"
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

/* ---- the backward direction (RFC 8167) ---- */

void fwd_bcall_release(struct fwd_bcall *b)
{
	struct fwd_session *s = b->s;

	if (b->rec)
		gw_buf_put(b->rec);
	if (b->hdr)
		gw_buf_put(b->hdr);
	b->rec = NULL;
	b->hdr = NULL;
	b->busy = false;
	s->bc_busy--;
	fwd_maybe_free(s);
}

static void fwd_bcall_send_done(struct rconn_wr *wr, enum ibv_wc_status status)
{
	struct fwd_bcall *b =
		(struct fwd_bcall *)((char *)wr - offsetof(struct fwd_bcall, send_wr));

	b->send_pending = false;
	fwd_bcall_release(b);
}

static bool fwd_refusal_send(struct fwd_session *s, uint32_t xid);

static void fwd_refusal_done(struct rconn_wr *wr, enum ibv_wc_status status)
{
	struct fwd_bc_refusal *f =
		(struct fwd_bc_refusal *)((char *)wr - offsetof(struct fwd_bc_refusal, send_wr));
	struct fwd_session *s = f->s;

	gw_buf_put(f->buf);
	f->buf = NULL;
	s->refusals_busy--;
	/* The next waiting answer takes the slot, unless the connection is going. */
	while (s->refuse_count && status == IBV_WC_SUCCESS && s->state == FS_READY) {
		uint32_t xid = s->refuse_ring[s->refuse_head];
		s->refuse_head = (s->refuse_head + 1) % FWD_REFUSE_QUEUE;
		s->refuse_count--;
		if (fwd_refusal_send(s, xid))
			break;
	}
	fwd_maybe_free(s);
}

/* Post one SYSTEM_ERR answer from a free refusal slot; false when none is free or it failed. */
static bool fwd_refusal_send(struct fwd_session *s, uint32_t xid)
{
	struct fwd_bc_refusal *f = NULL;

	for (uint32_t i = 0; i < s->nbcalls && !f; i++) {
		if (!s->refusals[i].buf)
			f = &s->refusals[i];
	}
	if (!f || s->rdma_closed || !rconn_is_connected(s->rdma))
		return false;
	struct gw_buf *buf = rdma_pool_alloc(fwd_pool(s), RPCRDMA2_HDR_MIN_SIZE + 64);
	if (!buf)
		return false;
	ssize_t hlen = rpcrdma_encode_inline(buf->base, buf->size, s->version, xid, s->nbcalls,
					     RPCRDMA_RPC_REPLY);
	size_t rlen = hlen > 0
			      ? rpc_build_accepted_error(buf->base + hlen, buf->size - (size_t)hlen,
							 xid, RPC_ACC_SYSTEM_ERR, 0, 0)
			      : 0;
	if (rlen == 0) {
		gw_buf_put(buf);
		return false;
	}
	struct ibv_sge sge = { (uintptr_t)buf->base, (uint32_t)((size_t)hlen + rlen), buf->lkey };
	f->s = s;
	f->buf = buf;
	f->send_wr.done = fwd_refusal_done;
	if (rconn_send(s->rdma, &sge, 1, 0, &f->send_wr) != 0) {
		f->buf = NULL;
		gw_buf_put(buf);
		return false;
	}
	s->refusals_busy++;
	GW_COUNT(&s->base, bytes_inline, (uint64_t)hlen + rlen);
	return true;
}

/*
 * Answer a backward call that the client will not get with an RPC
 * SYSTEM_ERR reply, inline (RFC 8167), so that the server's callback fails
 * at once rather than at its own timeout. Bounded: as many answers in
 * flight as backward credits and FWD_REFUSE_QUEUE more waiting for them; a
 * server that floods beyond that has its calls dropped. False when dropped.
 */
bool fwd_backward_refuse(struct fwd_session *s, uint32_t xid)
{
	if (s->refuse_count == 0 && fwd_refusal_send(s, xid))
		return true;
	/* Waiting needs an answer in flight, whose completion sends the next. */
	if (s->refuse_count == FWD_REFUSE_QUEUE || s->rdma_closed || s->refusals_busy == 0)
		return false;
	s->refuse_ring[(s->refuse_head + s->refuse_count) % FWD_REFUSE_QUEUE] = xid;
	s->refuse_count++;
	return true;
}

/*
 * The client answered a backward call: send its reply to the server as an
 * inline RDMA_MSG with no chunks, straight from the record buffer, on the
 * connection that carried the call (on a shared route, the channel of the
 * client's slot, under the server's XID). Backward messages never use
 * chunks (RFC 8167), so a reply larger than the server's inline threshold
 * cannot be delivered.
 */
void fwd_backward_reply(struct fwd_session *s, struct gw_buf *buf, uint32_t off, uint32_t len,
			uint32_t xid)
{
	struct fwd_bcall *b = s->up->bcall_of(s, xid);

	if (!b) {
		gw_count_event(&s->base, GW_EV_UNMATCHED_REPLY);
		gw_buf_put(buf);
		return;
	}
	struct fwd_session *ch = b->s; /* the RDMA connection of the call */
	struct gw_buf *hdr = rdma_pool_alloc(fwd_pool(ch), RPCRDMA2_HDR_MIN_SIZE);
	ssize_t hlen = hdr ? rpcrdma_encode_inline(hdr->base, hdr->size, ch->version, xid,
						   ch->nbcalls, RPCRDMA_RPC_REPLY)
			   : -ENOBUFS;
	if (hlen < 0 || (uint32_t)hlen + len > ch->thr.send) {
		gw_warn("forward %s: backward reply xid %#x (%u bytes) cannot be sent: %s",
			s->base.client, xid, len,
			hlen < 0 ? "no buffer" : "larger than the server's inline threshold");
		gw_count_event(&s->base, GW_EV_BACKWARD_UNDELIVERABLE);
		if (hdr)
			gw_buf_put(hdr);
		gw_buf_put(buf);
		fwd_bcall_release(b);
		return;
	}
	struct ibv_sge sge[2] = {
		{ (uintptr_t)hdr->base, (uint32_t)hlen, hdr->lkey },
		{ (uintptr_t)(buf->base + off), len, buf->lkey },
	};
	b->rec = buf;
	b->hdr = hdr;
	b->send_wr.done = fwd_bcall_send_done;
	b->send_pending = true;
	int err = rconn_send(ch->rdma, sge, 2, 0, &b->send_wr);
	if (err) {
		b->send_pending = false;
		gw_count_event(&s->base, GW_EV_BACKWARD_UNDELIVERABLE);
		fwd_bcall_release(b);
		return;
	}
	GW_COUNT(&s->base, backward_replies, 1);
	GW_COUNT(&s->base, bytes_inline, (uint64_t)hlen + len);
}

/*
 * The client a backward call on @s goes to, or NULL with @why: on a
 * connection of its own its client, on a shared channel the client that
 * holds the session the call names.
 */
static struct fwd_session *fwd_backward_dest(struct fwd_session *s, const struct fwd_bcall *b,
					     struct gw_buf *buf, const struct rpcrdma_hdr *h,
					     const char **why)
{
	if (!b)
		*why = "more than the backward credits granted";
	else if (h->nreads || h->nwrites || h->has_reply)
		*why = "it has chunks";
	else if (s->state != FS_READY)
		*why = "the connection is closing";
	else
		return s->up->bcall_client(s, buf, h, why);
	return NULL;
}

/*
 * A backward call from the server: RDMA_MSG, no chunks, msg_type CALL, in
 * the server's own XID space. It goes to the client as a CALL record, by
 * reference to the receive buffer; the slot, on the connection that
 * carried it, keeps the XID and the client for the reply.
 */
void fwd_backward_call(struct fwd_session *s, struct gw_buf *buf, const struct rpcrdma_hdr *h)
{
	struct fwd_bcall *b = NULL;
	const char *why = NULL;

	for (uint32_t i = 0; i < s->nbcalls && !b; i++) {
		if (!s->bcalls[i].busy)
			b = &s->bcalls[i];
	}
	struct fwd_session *to = fwd_backward_dest(s, b, buf, h, &why);
	if (!to) {
		bool answered = fwd_backward_refuse(s, h->xid);
		/* A flooding server must not flood the log: the first of a session is said. */
		if (s->base.counters.events[GW_EV_BACKWARD_UNDELIVERABLE] == 0)
			gw_warn("forward %s: backward call xid %#x not delivered (%s): %s",
				s->base.client, h->xid, why,
				answered ? "answered SYSTEM_ERR" : "dropped");
		gw_count_event(&s->base, GW_EV_BACKWARD_UNDELIVERABLE);
		gw_buf_put(buf);
		return;
	}
	b->busy = true;
	b->xid = h->xid;
	b->client = to == s ? 0 : to->base.id;
	b->t_in = gw_now_us();
	s->bc_busy++;
	GW_COUNT(&to->base, backward_calls, 1);
	GW_COUNT(&s->base, bytes_inline, h->hdr_len + h->inline_len);
	if (tcp_conn_send_ref(to->tcp, buf, h->hdr_len, h->inline_len) != 0) {
		gw_count_event(&s->base, GW_EV_BACKWARD_UNDELIVERABLE);
		fwd_backward_refuse(s, h->xid);
		b->busy = false;
		s->bc_busy--;
	} else {
		GW_COUNT(&to->base, tcp_bytes_out, (uint64_t)h->inline_len + 4);
	}
	gw_buf_put(buf);
}

/*
 * Backward calls in @s's own slots (a connection of its own) that its
 * client has not answered within @limit: answered SYSTEM_ERR, their
 * credits freed (a shared channel's are its clients': fwd_share_bcalls_expire()).
 */
void fwd_bcalls_expire(struct fwd_session *s, uint64_t now, uint64_t limit)
{
	for (uint32_t i = 0; i < s->nbcalls; i++) {
		struct fwd_bcall *b = &s->bcalls[i];
		if (b->busy && !b->send_pending && now - b->t_in >= limit) {
			gw_warn("forward %s: backward call xid %#x unanswered by the client "
				"for %llu s: answered SYSTEM_ERR",
				s->base.client, b->xid, (unsigned long long)(limit / 1000000));
			gw_count_event(&s->base, GW_EV_CALL_TIMEOUT);
			fwd_backward_refuse(s, b->xid);
			fwd_bcall_release(b);
		}
	}
}

/* Backward calls still waiting for the client when the session closes. */
void fwd_bcalls_abandon(struct fwd_session *s)
{
	for (uint32_t i = 0; i < s->nbcalls; i++) {
		struct fwd_bcall *b = &s->bcalls[i];
		if (b->busy && !b->send_pending) {
			b->busy = false;
			s->bc_busy--;
		}
	}
}
