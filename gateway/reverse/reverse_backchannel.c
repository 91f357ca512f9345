/* SPDX-License-Identifier: MIT */
/*
 * gateway/reverse/reverse_backchannel.c - reverse mode, the backchannel (RFC 8167): the server's
 * callbacks sent to the client as backward calls within its backward
 * credits, and its replies relayed to the upstream.
 */
#include "gateway/reverse/reverse_priv.h"

static void rev_bc_release(struct rev_bcall *b)
{
	struct rev_session *s = b->s;

	rev_put_buf(&b->rec);
	b->state = BC_FREE;
	s->bc_busy--;
	rev_maybe_free(s);
}

/*
 * A backward call that cannot reach the client: the server gets SYSTEM_ERR
 * (RFC 5531) at once, rather than waiting for a reply that will never come.
 */
static void rev_bc_refuse(struct rev_session *s, uint32_t xid, const char *why)
{
	uint8_t msg[REV_RPC_ERR_MAX];
	size_t n = rpc_build_accepted_error(msg, sizeof(msg), xid, RPC_ACC_SYSTEM_ERR, 0, 0);

	gw_warn("reverse %s: backward call xid %#x cannot be delivered (%s): SYSTEM_ERR",
		s->base.client, xid, why);
	gw_count_event(&s->base, GW_EV_BACKWARD_UNDELIVERABLE);
	struct tcp_conn *up = s->up->conn(s);
	if (!n || !up)
		return;
	if (tcp_conn_send_copy(up, msg, n) == 0)
		GW_COUNT(&s->base, tcp_bytes_out, (uint64_t)n + 4);
	else
		s->up->overflow(s, "the error reply to backward call", xid);
}

static void rev_bc_send_done(struct rconn_wr *wr, enum ibv_wc_status status)
{
	struct rev_bcall *b =
		(struct rev_bcall *)((char *)wr - offsetof(struct rev_bcall, send_wr));
	struct rev_session *s = b->s;
	bool ready = s->state == RS_READY;

	b->send_pending = false;
	rev_put_buf(&b->rec);
	/* While the session is ready, releasing a slot never frees it. */
	if (b->state == BC_DONE)
		rev_bc_release(b);
	if (ready && s->state == RS_READY)
		rev_sq_pump(s);
}

/* Inline, no chunks: the transport header, then the call from its record buffer. */
static int rev_bc_post(struct rev_session *s, struct rev_bcall *b)
{
	/* The credit field of a backward call asks for backward credits (RFC 8167). */
	ssize_t hlen = rpcrdma_encode_inline(b->room, REV_BC_ROOM, rev_bc_version(s), b->xid,
					     s->nbcalls, RPCRDMA_RPC_CALL);
	if (hlen < 0)
		return (int)hlen;
	struct ibv_sge sge[2] = {
		{ (uintptr_t)b->room, (uint32_t)hlen, b->room_lkey },
		{ (uintptr_t)(b->rec->base + b->rec_off), b->rec_len, b->rec->lkey },
	};
	b->send_wr.done = rev_bc_send_done;
	b->send_pending = true;
	int err = rconn_send(s->rdma, sge, 2, 0, &b->send_wr);
	if (err) {
		b->send_pending = false;
		return err;
	}
	b->state = BC_SENT;
	s->bc_out++;
	GW_COUNT(&s->base, backward_calls, 1);
	GW_COUNT(&s->base, bytes_inline, (uint64_t)hlen + b->rec_len);
	return 0;
}

/* Backward calls go to the client while its backward credits and the send queue allow. */
void rev_bc_pump(struct rev_session *s)
{
	struct rev_bcall *b;

	while (s->state == RS_READY && s->bc_out < s->bc_grant && rconn_sq_space(s->rdma) > 0 &&
	       (b = TAILQ_FIRST(&s->bcq)) != NULL) {
		TAILQ_REMOVE(&s->bcq, b, link);
		int err = rev_bc_post(s, b);
		if (err) {
			rev_bc_refuse(s, b->xid, strerror(-err));
			b->state = BC_DONE;
			rev_bc_release(b);
		}
	}
}

/* A CALL record from the server: a callback for the client. */
void rev_bc_call(struct rev_session *s, struct gw_buf *buf, uint32_t off, uint32_t len,
		 uint32_t xid)
{
	struct rev_bcall *b = NULL;

	for (uint32_t i = 0; i < s->nbcalls && !b; i++) {
		if (s->bcalls[i].state == BC_FREE)
			b = &s->bcalls[i];
	}
	if (!b || rev_hdr_min(rev_bc_version(s)) + (uint64_t)len > s->thr.send) {
		/* Backward messages are inline only (RFC 8167 section 5). */
		rev_bc_refuse(s, xid,
			      b ? "larger than the client's inline threshold"
				: "more backward calls at once than backchannel_credits");
		gw_buf_put(buf);
		return;
	}
	b->state = BC_WAITING;
	b->xid = xid;
	b->up_gen = s->up->generation(s);
	b->rec = buf;
	b->rec_off = off;
	b->rec_len = len;
	b->t_in = gw_now_us();
	s->bc_busy++;
	TAILQ_INSERT_TAIL(&s->bcq, b, link);
	rev_bc_pump(s);
}

/*
 * The client's reply to a backward call: to the server as a record, by
 * reference to the receive buffer, on the connection that carried the call.
 * Its credit field grants backward credits.
 */
void rev_bc_reply(struct rev_session *s, struct gw_buf *buf, const struct rpcrdma_hdr *h)
{
	struct rev_bcall *b = NULL;

	for (uint32_t i = 0; i < s->nbcalls && !b; i++) {
		if (s->bcalls[i].state == BC_SENT && s->bcalls[i].xid == h->xid)
			b = &s->bcalls[i];
	}
	if (!b || h->nwrites || h->has_reply) {
		gw_debug("reverse %s: a backward reply xid %#x %s: dropped", s->base.client, h->xid,
			 b ? "with chunks" : "to no backward call");
		gw_count_event(&s->base, b ? GW_EV_BAD_TRANSPORT_HEADER : GW_EV_UNMATCHED_REPLY);
		gw_buf_put(buf);
		return;
	}
	s->bc_out--;
	s->bc_grant = h->credits == 0 ? 1 : h->credits < s->nbcalls ? h->credits : s->nbcalls;
	b->state = BC_DONE;
	struct tcp_conn *up = s->up->conn(s);
	if (b->up_gen != s->up->generation(s) || !up) {
		gw_info("reverse %s: the reply to backward call xid %#x is dropped: the server's "
			"connection that sent the call is gone",
			s->base.client, h->xid);
		gw_count_event(&s->base, GW_EV_BACKWARD_UNDELIVERABLE);
	} else if (tcp_conn_send_ref(up, buf, h->hdr_len, h->inline_len) != 0) {
		gw_count_event(&s->base, GW_EV_BACKWARD_UNDELIVERABLE);
		s->up->overflow(s, "the reply to backward call", h->xid);
	} else {
		GW_COUNT(&s->base, backward_replies, 1);
		GW_COUNT(&s->base, tcp_bytes_out, (uint64_t)h->inline_len + 4);
	}
	gw_buf_put(buf);
	if (!b->send_pending)
		rev_bc_release(b);
	rev_bc_pump(s);
}

/* Backward calls that wait for the client: the connection that sent them is gone. */
void rev_bc_drop_waiting(struct rev_session *s)
{
	struct rev_bcall *b;

	while ((b = TAILQ_FIRST(&s->bcq)) != NULL) {
		TAILQ_REMOVE(&s->bcq, b, link);
		gw_count_event(&s->base, GW_EV_BACKWARD_UNDELIVERABLE);
		b->state = BC_DONE;
		rev_bc_release(b);
	}
}

/* The session is closing: no reply will come; a pending Send completes (flushed) later. */
void rev_bc_abandon(struct rev_session *s)
{
	for (uint32_t i = 0; i < s->nbcalls; i++) {
		struct rev_bcall *b = &s->bcalls[i];
		if (b->state == BC_WAITING)
			TAILQ_REMOVE(&s->bcq, b, link);
		if (b->state != BC_FREE) {
			b->state = BC_DONE;
			if (!b->send_pending)
				rev_bc_release(b);
		}
	}
}
