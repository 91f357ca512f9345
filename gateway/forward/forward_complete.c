/* SPDX-License-Identifier: MIT */
/*
 * gateway/forward/forward_complete.c - forward mode, replies from the server: decode, match the
 * XID, take the grant, fence the call's windows, then rebuild the RPC reply from the inline part
 * and the Write/Reply chunk data and queue it on TCP by reference. RDMA_ERROR answers end here too.
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
#include "gateway/core/size_clamp.h"
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

static const uint8_t zero_pad[4];

/* ---- replies to the client ---- */

/* An RPC error reply the gateway makes itself (the call could not be relayed). */
/* Send the gateway's own error reply @msg for @xid; lost, the session closes. */
static void reply_own(struct fwd_session *s, uint32_t xid, const uint8_t *msg, size_t len)
{
	gw_count_event(&s->base, GW_EV_RPC_ERROR_REPLY);
	if (!s->tcp)
		return; /* the client is gone: nobody waits for it */
	if (len && tcp_conn_send_copy(s->tcp, msg, len) == 0) {
		GW_COUNT(&s->base, tcp_bytes_out, len + 4);
		return;
	}
	/* Lost, the answer would leave the client waiting for ever: it reconnects instead. */
	gw_warn("forward %s: error reply for xid %#x could not be queued: closing the client's "
		"connection",
		s->base.client, xid);
	gw_count_event(&s->base, GW_EV_OUTPUT_OVERFLOW);
	fwd_session_close(s);
}

void fwd_reply_error(struct fwd_session *s, uint32_t xid, enum rpc_accept_stat stat)
{
	uint8_t msg[64];

	reply_own(s, xid, msg, rpc_build_accepted_error(msg, sizeof(msg), xid, stat, 0, 0));
}

void fwd_reply_auth_error(struct fwd_session *s, uint32_t xid, enum rpc_auth_stat why)
{
	uint8_t msg[64];

	reply_own(s, xid, msg, rpc_build_rejected(msg, sizeof(msg), xid, RPC_REJ_AUTH_ERROR, why));
}

/* Which buffer an iovec from the splicer lies in, to send it by reference. */
static bool fwd_piece_of(const struct iovec *iov, struct gw_buf *const *bufs, unsigned nbufs,
			 struct tcp_piece *p)
{
	const uint8_t *b = iov->iov_base;

	memset(p, 0, sizeof(*p));
	p->len = (uint32_t)iov->iov_len;
	for (unsigned i = 0; i < nbufs; i++) {
		struct gw_buf *buf = bufs[i];
		if (buf && b >= buf->base && b + iov->iov_len <= buf->base + buf->size) {
			p->buf = buf;
			p->off = (uint32_t)(b - buf->base);
			return true;
		}
	}
	if (b == zero_pad || iov->iov_len <= sizeof(zero_pad)) {
		p->data = b; /* an XDR pad: copied */
		return true;
	}
	return false;
}

/*
 * Rebuild a reply whose READ/READLINK data came in Write chunks: walk the
 * reduced inline reply to find where each item belongs, then splice.
 */
static int fwd_deliver_spliced(struct fwd_session *s, struct fwd_call *c, struct gw_buf *inl_buf,
			       const uint8_t *inl, uint32_t inl_len)
{
	uint32_t moved = 0;
	struct ulb_reply rep;
	struct splice_insert ins[ULB_MAX_ITEMS];
	unsigned nins = 0;

	for (uint32_t k = 0; k < c->nwrites; k++) {
		if (c->wlen[k])
			moved |= 1u << k;
	}
	enum ulb_reply_status st =
		ulb_parse_reply(&c->ulb, &s->ulb_sessions, inl, inl_len, moved, &rep);
	gw_debug("forward %s: xid %#x: reply of %u inline bytes, moved %#x, walk %d, %u items",
		 s->base.client, c->xid, inl_len, moved, st, rep.n_items);
	if (st != ULB_REPLY_OK && st != ULB_REPLY_STOPPED) {
		if (gw_log_enabled(GW_LOG_DEBUG)) {
			char hex[3 * 160 + 1];
			size_t n = inl_len < 160 ? inl_len : 160;
			for (size_t i = 0; i < n; i++)
				snprintf(hex + 3 * i, 4, "%02x ", inl[i]);
			hex[3 * n] = '\0';
			gw_debug("forward %s: xid %#x: reply does not walk: %s", s->base.client,
				 c->xid, hex);
		}
		return -EPROTO;
	}
	/*
	 * What the inline path learns (fwd_learn_sessions()): on a shared
	 * route a reconnected client that only READs large files must become
	 * a candidate for its gone connection's back channel all the same.
	 */
	if (c->ulb.prog == 100003 && c->ulb.vers == 4)
		s->up->sessions_learned(s, &c->ulb, &rep);
	for (uint32_t k = 0; k < rep.n_items && k < c->nwrites; k++) {
		const struct ulb_reply_item *it = &rep.items[k];
		if (!it->moved)
			continue;
		/* The server's echoed length must be the item's own (RFC 8166). */
		if (it->length != c->wlen[k])
			return -EPROTO;
		ins[nins++] = (struct splice_insert){ .offset = it->offset,
						      .data = c->wbuf[k]->base,
						      .len = it->length };
	}
	/* Every chunk the server used must have found its item. */
	unsigned used = 0;
	for (uint32_t k = 0; k < c->nwrites; k++)
		used += c->wlen[k] != 0;
	if (used != nins)
		return -EPROTO;

	struct iovec iov[2 * ULB_MAX_ITEMS + 2];
	struct splice_out out = { .iov = iov, .cap = sizeof(iov) / sizeof(iov[0]) };
	if (splice_rebuild_reply(inl, inl_len, ins, nins, &out) != SPLICE_OK)
		return -EPROTO;

	struct gw_buf *bufs[ULB_MAX_ITEMS + 1];
	unsigned nbufs = 0;
	bufs[nbufs++] = inl_buf;
	for (uint32_t k = 0; k < c->nwrites; k++)
		bufs[nbufs++] = c->wbuf[k];
	struct tcp_piece pieces[2 * ULB_MAX_ITEMS + 2];
	for (unsigned i = 0; i < out.cnt; i++) {
		if (!fwd_piece_of(&iov[i], bufs, nbufs, &pieces[i]))
			return -EPROTO;
	}
	for (unsigned i = 0; i < nins; i++)
		GW_COUNT(&s->base, bytes_write_chunk, ins[i].len);
	if (tcp_conn_send_record(s->tcp, pieces, out.cnt) != 0)
		return -errno;
	GW_COUNT(&s->base, tcp_bytes_out, (uint64_t)out.len + 4);
	return 0;
}

/*
 * Learn from the inline reply @msg (@len bytes) to @s's NFSv4 call @u what
 * its sessions are: @s's session table (reply bounds), and on a shared
 * route the back channels backward calls are routed by
 * (fwd_share_sessions_learned()). A reply that does not parse teaches
 * nothing (counted by ulb_counters).
 */
void fwd_learn_sessions(struct fwd_session *s, const struct ulb_call *u, const uint8_t *msg,
			uint32_t len)
{
	struct ulb_reply rep;

	ulb_parse_reply(u, &s->ulb_sessions, msg, len, 0, &rep);
	s->up->sessions_learned(s, u, &rep);
}

/*
 * A reply just queued for @s, of call @c: replies wait for the end of the
 * loop pass so that those of one batch of completions leave in one
 * sendmsg(), but when @s holds no other call (none queued, on the wire or
 * being fenced; @c's own slot is freed after this) nothing can join it in
 * this pass, and the wait would only put the rest of the pass - other
 * clients' completions and turns - into this client's latency: a client
 * with one call at a time beside a pipelining one on the same worker.
 */
static void fwd_reply_flush(struct fwd_session *s, const struct fwd_call *c)
{
	if (s->slots.busy <= (c->s == s ? 1u : 0u))
		tcp_conn_flush_now(s->tcp);
}

static void fwd_deliver(struct fwd_session *s, struct fwd_call *c)
{
	const struct ulb_call *u = &c->ulb;

	if (c->fail_stat) {
		fwd_reply_error(s, c->xid, c->fail_stat);
		return;
	}

	struct gw_buf *inl_buf;
	const uint8_t *inl;
	uint32_t inl_len;
	if (c->reply_proc == RPCRDMA_NOMSG) {
		inl_buf = c->rbuf;
		inl = c->rbuf->base;
		inl_len = c->reply_chunk_len;
		/*
		 * Checked now that the window is fenced and the bytes can no
		 * longer change: the Reply chunk must hold this call's reply.
		 */
		if (inl_len < 8 || xdr_get32(inl) != c->wire_xid) {
			gw_warn("forward %s: xid %#x: the Reply chunk (%u bytes) does not hold its "
				"reply",
				s->base.client, c->xid, inl_len);
			gw_count_event(&s->base, GW_EV_BAD_TRANSPORT_HEADER);
			fwd_reply_error(s, c->xid, RPC_ACC_SYSTEM_ERR);
			return;
		}
		GW_COUNT(&s->base, bytes_reply_chunk, inl_len);
	} else {
		inl_buf = c->reply;
		inl = c->reply->base + c->reply_hdr_len;
		inl_len = c->reply_len - c->reply_hdr_len;
		GW_COUNT(&s->base, bytes_inline, c->reply_len);
	}

	/* A retried call's reply carries the gateway's XID: the client gets its own back. */
	if (c->wire_xid != c->xid && inl_len >= 4)
		xdr_put32((uint8_t *)inl, c->xid);

	int err;
	/* Bit k: the server wrote Write chunk k (the reply is reduced by it). */
	uint32_t moved = 0;
	for (uint32_t k = 0; k < c->nwrites; k++)
		moved |= (c->wlen[k] != 0 ? 1u : 0u) << k;
	/*
	 * An inline NFSv4 reply teaches the session table NFSv4.1 sessions for
	 * reply bounds and, on a shared route, the back channels backward calls
	 * are routed by (a spliced one in fwd_deliver_spliced()): before the
	 * sizes are lowered, so that the reply bound stays the server's own.
	 * FSINFO, an NFSv4 GETATTR of maxread/maxwrite, CREATE_SESSION: what
	 * the server advertises is lowered to what the route carries (the
	 * bytes are the gateway's own receive or Reply-chunk buffer, fenced).
	 */
	if (!moved && u->prog == 100003 && u->vers == 4)
		fwd_learn_sessions(s, u, inl, inl_len);
	if (u->advertises_sizes)
		gw_clamp_reply(&s->base, u, (uint8_t *)inl, inl_len, moved);
	if (moved) {
		err = fwd_deliver_spliced(s, c, inl_buf, inl, inl_len);
		if (err == -EPROTO) {
			gw_warn("forward %s: reply xid %#x does not match its Write chunks",
				s->base.client, c->xid);
			fwd_reply_error(s, c->xid, RPC_ACC_SYSTEM_ERR);
			return;
		}
	} else {
		err = tcp_conn_send_ref(s->tcp, inl_buf, (uint32_t)(inl - inl_buf->base), inl_len);
		err = err == 0 ? 0 : -errno;
		if (!err)
			GW_COUNT(&s->base, tcp_bytes_out, (uint64_t)inl_len + 4);
	}
	if (err) {
		/*
		 * Output room is sized for every reply the client has asked for
		 * (route_tcp_config()), so this is a client that went away or a
		 * bug. A reply lost on a live connection would leave the client
		 * waiting for ever (NFS over TCP does not retransmit on the same
		 * connection): close it, and the client retransmits after it
		 * reconnects.
		 */
		gw_warn("forward %s: reply xid %#x could not be queued (%s): closing the client's "
			"connection",
			s->base.client, c->xid, strerror(-err));
		gw_count_event(&s->base, GW_EV_OUTPUT_OVERFLOW);
		fwd_session_close(s);
		return;
	}
	fwd_reply_flush(s, c);
	uint64_t now = gw_now_pass_us();
	gw_count_reply(&s->base, u->prog, u->vers, u->proc,
		       (c->t_sent - c->t_in) + (now - c->t_reply), c->t_reply - c->t_sent);
}

static void fwd_fence_done(struct rconn_wr *wr, enum ibv_wc_status status)
{
	struct fwd_call *c = (struct fwd_call *)((char *)wr - offsetof(struct fwd_call, fence_wr));
	struct fwd_session *s = c->s;

	c->fence_pending = false;
	if (c->retry || c->resend) {
		fwd_call_retry(c, status);
		return;
	}
	/*
	 * A flushed fence: the connection is gone, and with it the reply's
	 * client, unless the connection is made again (remade): then the
	 * reply goes all the same, for the clients stay: rconn failed the
	 * connection before completing this (the queue pair is in the error
	 * state, the server reaches none of the call's memory), and the
	 * reply, which followed the server's Writes in order, is whole. On a
	 * shared channel it goes to the connection that owns the call now (a
	 * client that reconnected and retransmitted it), or nowhere.
	 */
	struct fwd_session *to = s->up->reply_to(c);
	if (to && (status == IBV_WC_SUCCESS || s->up->remade))
		fwd_deliver(to, c);
	c->state = FC_DONE;
	fwd_call_put(c);
}

/* ---- replies from the server ---- */

/* Whether @rkey is one of @c's windows, still bound. */
static bool fwd_call_window(const struct fwd_call *c, uint32_t rkey)
{
	for (unsigned i = 0; i < c->nexp; i++)
		if (c->exp[i].mw && c->exp[i].rkey == rkey)
			return true;
	return false;
}

/*
 * The server answered: take the call off the wire, fence, then deliver. A
 * Send With Invalidate (@inv_rkey, one of the call's windows: the callers
 * refuse any other before they touch the call) saves that window's fence.
 */
static void fwd_call_answered(struct fwd_session *s, struct fwd_call *c, uint32_t inv_rkey)
{
	if (inv_rkey && fwd_call_window(c, inv_rkey)) {
		s->inv_claimed = true;
		GW_COUNT(&c->s->base, remote_invalidations, 1);
	} else {
		inv_rkey = 0;
	}
	/* A call sent again (retry, version fallback) keeps its entry in flight. */
	s->up->call_done(c, !c->retry && !c->resend);
	c->t_reply = gw_now_pass_us();
	gw_session_touch(&c->s->base, c->t_reply);
	c->state = FC_FENCING;
	c->fence_wr.done = fwd_fence_done;
	c->fence_pending = true;
	int r = rconn_fence(s->rdma, c->exp, c->nexp, inv_rkey, &c->fence_wr);
	if (r == 1)
		fwd_fence_done(&c->fence_wr, IBV_WC_SUCCESS);
	fwd_pump(s);
}

/*
 * RFC 8267 lets a requester whose Reply chunk was too small for a reply it
 * could only estimate (NFSACL GETACL, NFSv4.0 GETATTR; anything the rules do
 * not bound) send the call once more, under a new XID, with a larger chunk.
 * An estimate that fit inline and offered no chunk at all is the same case.
 */
bool fwd_may_retry(const struct fwd_session *s, const struct fwd_call *c)
{
	return !c->ulb.reply_exact && !c->retried && ulb_call_safe_twice(&c->ulb) &&
	       (!c->has_reply_chunk || c->rseg.length < rdma_pool_max_size(fwd_pool(s)));
}

/*
 * The server's first message that is no error settles Version Two (the
 * draft's section 5.1). Without RFC 8797 private data its inline threshold
 * is then 4096 bytes each way, Version Two's default (section 2.3).
 */
static void fwd_settle_v2(struct fwd_session *s)
{
	s->version_settled = true;
	fwd_route(s->base.route)->remembered_version = 0; /* it speaks Version Two after all */
	if (!s->peer_pd_sent) {
		s->peer_pd.send_size = RPCRDMA_V2_INLINE_DEFAULT;
		s->peer_pd.recv_size = RPCRDMA_V2_INLINE_DEFAULT;
		rpcrdma_inline_thresholds(&s->own_pd, &s->peer_pd, &s->thr);
	}
	gw_info("forward %s: the server speaks RPC-over-RDMA Version Two (inline %u/%u)",
		s->base.client, s->thr.send, s->thr.recv);
}

/*
 * ERR_VERS to the Version Two call that opens the connection (section
 * 5.2): from then on the connection speaks the highest version both sides
 * have, and the call goes again in it (fwd_call_retry(), under a new XID).
 * False when there is no such version: the call fails.
 */
static bool fwd_version_fallback(struct fwd_session *s, struct fwd_call *c,
				 const struct rpcrdma_hdr *h, uint32_t inv_rkey)
{
	/* below the version refused, whatever the range claims: never the same again */
	uint32_t v = h->vers_high < s->version ? h->vers_high : s->version - 1;

	if (s->version_settled || v < RPCRDMA_V1 || v < h->vers_low)
		return false;
	gw_info("forward %s: the server speaks RPC-over-RDMA versions %u..%u: Version %u from now "
		"on, xid %#x sent again",
		s->base.client, h->vers_low, h->vers_high, v, c->xid);
	gw_count_event(&s->base, GW_EV_RPCRDMA_VERSION_FALLBACK);
	s->version = v;
	s->version_settled = true;
	fwd_remember_version(s, v);
	c->resend = true;
	fwd_call_answered(s, c, inv_rkey);
	return true;
}

static void fwd_recv_error(struct fwd_session *s, const struct rpcrdma_hdr *h, uint32_t inv_rkey)
{
	struct fwd_call *c = s->up->call_by_xid(s, h->xid);

	if (h->err == RPCRDMA_ERR_VERS) {
		gw_warn("forward %s: server answered ERR_VERS (%u..%u) for xid %#x", s->base.client,
			h->vers_low, h->vers_high, h->xid);
		gw_count_event(&s->base, GW_EV_ERR_VERS_RECEIVED);
	} else if (h->version >= RPCRDMA_V2 && h->err == RPCRDMA2_ERR_INVAL_OPTION) {
		/* We send no optional message: the server refused something we never sent. */
		gw_warn("forward %s: server answered RDMA2_ERR_INVAL_OPTION for xid %#x",
			s->base.client, h->xid);
		gw_count_event(&s->base, GW_EV_ERR_INVAL_OPTION_RECEIVED);
	} else {
		/* ERR_CHUNK; in Version Two the same value is RDMA2_ERR_BAD_HEADER. */
		gw_warn("forward %s: server answered %s for xid %#x", s->base.client,
			h->version >= RPCRDMA_V2 ? "RDMA2_ERR_BAD_HEADER" : "ERR_CHUNK", h->xid);
		gw_count_event(&s->base, GW_EV_ERR_CHUNK_RECEIVED);
	}
	if (!c) {
		gw_count_event(&s->base, GW_EV_UNMATCHED_REPLY);
		return;
	}
	if (inv_rkey && !fwd_call_window(c, inv_rkey))
		return; /* another call's window: fwd_recv() refuses the message */
	if (h->err == RPCRDMA_ERR_VERS && fwd_version_fallback(s, c, h, inv_rkey))
		return;
	/* Only Version One has ERR_CHUNK: RDMA2_ERR_BAD_HEADER is no reason to retry. */
	if (h->version == RPCRDMA_V1 && h->err == RPCRDMA_ERR_CHUNK && fwd_may_retry(s, c)) {
		gw_info("forward %s: xid %#x: the reply exceeds the %u bytes estimated for it: "
			"sending the call again with room for any reply",
			s->base.client, c->xid, c->has_reply_chunk ? c->rseg.length : s->thr.recv);
		gw_count_event(&s->base, GW_EV_REPLY_CHUNK_RETRY);
		c->retry = true;
		fwd_call_answered(s, c, inv_rkey);
		return;
	}
	if (h->version == RPCRDMA_V1 && h->err == RPCRDMA_ERR_CHUNK &&
	    c->ulb.flavor == RPC_AUTH_GSS)
		gw_warn("forward %s: xid %#x: an RPCSEC_GSS reply larger than the %u bytes "
			"offered; "
			"the call is not sent again under another XID (its verifier covers the "
			"XID): SYSTEM_ERR. Raise the route's max_record_size",
			s->base.client, c->xid, c->has_reply_chunk ? c->rseg.length : s->thr.recv);
	/* The call ends here: the client gets an RPC error reply for it. */
	c->fail_stat = RPC_ACC_SYSTEM_ERR;
	fwd_call_answered(s, c, inv_rkey);
}

static void fwd_recv_message(struct fwd_session *s, struct gw_buf *buf, uint32_t len,
			     uint32_t inv_rkey)
{
	struct rpcrdma_hdr h;
	enum rpcrdma_reason r = rpcrdma_hdr_decode(&h, buf->base, len, &s->base.route->limits);

	if (r == RPCRDMA_R_RDMA_DONE) {
		gw_count_event(&s->base, GW_EV_DONE_DROPPED);
		gw_buf_put(buf);
		return;
	}
	if (r != RPCRDMA_OK) {
		gw_warn("forward %s: dropping a reply with a bad transport header: %s",
			s->base.client, rpcrdma_reason_name(r));
		gw_count_event(&s->base, GW_EV_BAD_TRANSPORT_HEADER);
		gw_buf_put(buf);
		return;
	}
	/* A responder answers in the version of the call (the Version Two draft, 5.3). */
	if (h.proc != RPCRDMA_ERROR && h.version != s->version) {
		gw_warn("forward %s: dropping a message in Version %u on a connection speaking "
			"Version %u",
			s->base.client, h.version, s->version);
		gw_count_event(&s->base, GW_EV_BAD_TRANSPORT_HEADER);
		gw_buf_put(buf);
		return;
	}
	if (h.proc != RPCRDMA_ERROR && !s->version_settled)
		fwd_settle_v2(s);
	if (h.proc == RPCRDMA_MSG) {
		r = rpcrdma_hdr_check_xid(&h, buf->base + h.hdr_len, h.inline_len);
		if (r != RPCRDMA_OK) {
			gw_warn("forward %s: dropping a message whose RPC header does not match "
				"its transport header: %s",
				s->base.client, rpcrdma_reason_name(r));
			gw_count_event(&s->base, GW_EV_BAD_TRANSPORT_HEADER);
			gw_buf_put(buf);
			return;
		}
		/*
		 * The RPC msg_type tells a backward call from a forward reply
		 * (RFC 8167); its credit field asks for backward credits and
		 * says nothing about the forward grant.
		 */
		if (rpcrdma_rpc_msg_type(buf->base + h.hdr_len) == RPCRDMA_RPC_CALL) {
			fwd_backward_call(s, buf, &h);
			return;
		}
	}
	/* A grant of 0 is forbidden; read it as 1 (RFC 8166). */
	s->granted = h.credits ? h.credits : 1;
	s->up->grant_changed(s);
	if (h.proc == RPCRDMA_ERROR) {
		fwd_recv_error(s, &h, inv_rkey);
		gw_buf_put(buf);
		return;
	}

	struct fwd_call *c = s->up->call_by_xid(s, h.xid);
	if (!c) {
		gw_count_event(&s->base, GW_EV_UNMATCHED_REPLY);
		gw_buf_put(buf);
		return;
	}
	if (inv_rkey && !fwd_call_window(c, inv_rkey)) {
		/* Another call's window: fwd_recv() refuses the message, nothing is delivered. */
		gw_buf_put(buf);
		return;
	}
	struct rpcrdma_offer offer = { .nwrites = c->nwrites,
				       .writes = c->wdesc,
				       .reply = c->has_reply_chunk ? &c->rdesc : NULL };
	r = rpcrdma_hdr_check_reply(&h, &offer);
	if (r != RPCRDMA_OK) {
		gw_warn("forward %s: reply xid %#x breaks the protocol (%s)", s->base.client, h.xid,
			rpcrdma_reason_name(r));
		gw_count_event(&s->base, GW_EV_BAD_TRANSPORT_HEADER);
		c->fail_stat = RPC_ACC_SYSTEM_ERR;
		gw_buf_put(buf);
		fwd_call_answered(s, c, inv_rkey);
		return;
	}
	c->reply = buf;
	c->reply_len = len;
	c->reply_proc = h.proc;
	c->reply_hdr_len = h.hdr_len;
	for (uint32_t k = 0; k < c->nwrites; k++)
		c->wlen[k] = h.write[k].length;
	c->reply_chunk_len = h.has_reply ? h.reply.length : 0;
	fwd_call_answered(s, c, inv_rkey);
}

/*
 * A message from the server. One sent with Send With Invalidate has
 * invalidated a window already, in the device, before it arrived: it must
 * be the reply of the call that window belongs to (fwd_call_answered()
 * claims it). Anything else (another call's window, a message that
 * answers nothing or is dropped) costs the connection: that window would
 * otherwise be invalidated again by its own call's fence, and Soft-RoCE
 * dereferences NULL when a free window is invalidated (rxe_mw.c, Linux
 * 6.1 and later). The teardown deallocates the windows instead.
 */
void fwd_recv(struct rconn *rc, void *owner, struct gw_buf *buf, uint32_t len, uint32_t inv_rkey)
{
	struct fwd_session *s = owner;

	s->inv_claimed = false;
	fwd_recv_message(s, buf, len, inv_rkey);
	if (inv_rkey && !s->inv_claimed)
		rconn_violation(rc, "Send With Invalidate naming no window of the call it answers",
				len);
}
