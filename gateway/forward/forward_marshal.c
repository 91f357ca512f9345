/* SPDX-License-Identifier: MIT */
/*
 * gateway/forward/forward_marshal.c - forward mode, sending a call: the reply plan (Write chunks,
 * Reply chunk), exposure of exactly the bytes the server may touch, the
 * transport header and the Send; the RFC 8267 retry of a call whose
 * estimated reply did not fit; the pump that sends while credits last.
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

/* ---- sending calls ---- */

static void fwd_send_done(struct rconn_wr *wr, enum ibv_wc_status status)
{
	struct fwd_call *c = (struct fwd_call *)((char *)wr - offsetof(struct fwd_call, send_wr));

	c->send_pending = false;
	/* The header buffer is free now; the record stays until the fence. */
	if (c->hdr) {
		gw_buf_put(c->hdr);
		c->hdr = NULL;
	}
	/* A client closing on a shared channel that stays: its call waits for its reply. */
	if (c->s->conn->state == FS_CLOSING)
		fwd_call_abandon(c);
	else if (c->state == FC_DONE)
		fwd_call_put(c);
	else if (c->retry || c->resend)
		fwd_call_retry(c, status);
}

/* Largest transport header of a reply that returns @nwrites Write chunks of one segment. */
static uint32_t fwd_reply_hdr_size(const struct fwd_session *s, uint32_t nwrites)
{
	return fwd_hdr_min(s->version) + nwrites * (8 + RPCRDMA_SEG_SIZE);
}

/*
 * Decide how the reply comes back. Write chunks carry READ data when the rest
 * of the reply surely fits inline; otherwise, when the whole reply may not fit
 * inline, a Reply chunk as large as the reply can be. Never both, as the Linux
 * client does: the Linux server then always writes the whole reply into the
 * Reply chunk.
 *
 * READLINK paths are DDP-eligible too (RFC 8267) but go in the Reply chunk, as
 * the Linux client sends them: the Linux 6.1 server moves an NFSv4 READLINK
 * result into a Write chunk from its length word on, leaving the last four
 * bytes of the path where the length should be. Only a leading run of opaque
 * (READ) items gets Write chunks: chunk n belongs to result item n.
 */
void fwd_plan_reply(const struct fwd_session *s, const struct fwd_call *c, uint32_t *nwrites,
		    bool *reply_chunk, uint32_t *reply_size)
{
	const struct ulb_call *u = &c->ulb;
	uint32_t pool_max = rdma_pool_max_size(fwd_pool(s));
	uint32_t limit = s->base.route->cfg->max_write_chunks;

	*nwrites = 0;
	*reply_chunk = false;
	*reply_size = u->reply_max < pool_max ? u->reply_max : pool_max;
	/*
	 * RPCSEC_GSS privacy: the procedure is encrypted, so the reply
	 * cannot be sized, and the call can never be sent again
	 * (ulb_call_safe_twice()). It is offered room for the largest reply the
	 * route carries (a record of max_record_size) and the GSS wrapping
	 * around it, whatever reply_size_estimate says. (Integrity leaves the
	 * procedure readable: its reply is bounded like any other, and an
	 * estimate gets the room of the branch below.)
	 */
	if (u->flavor == RPC_AUTH_GSS && u->gss_proc == RPC_GSS_PROC_DATA &&
	    u->gss_service == RPC_GSS_SVC_PRIVACY) {
		uint64_t room = (uint64_t)s->base.route->cfg->max_record_size + ULB_REPLY_HDR_MAX +
				ULB_GSS_BODY_OVERHEAD;
		if (room < u->reply_max)
			room = u->reply_max;
		*reply_chunk = true;
		*reply_size = room < pool_max ? (uint32_t)room : pool_max;
		return;
	}
	/*
	 * A reply only estimated for a call that must not run twice gets
	 * room to spare at once: the RFC 8267 retry is not open to it
	 * (fwd_may_retry()), and a reply larger still ends the call with an
	 * error rather than executing it twice. Twice the estimate: inline
	 * when that fits (an NFSv4.0 COMPOUND's GETATTR is an estimate, and
	 * a Reply chunk costs a window, an RDMA Write and clearing), else a
	 * Reply chunk of that size, not the largest.
	 */
	if (!u->reply_exact && !c->retried && !ulb_call_safe_twice(&c->ulb)) {
		uint64_t room = 2 * (uint64_t)u->reply_max;
		if (room + fwd_hdr_min(s->version) <= s->thr.recv)
			return;
		if (room < FWD_UNSAFE_REPLY_MIN)
			room = FWD_UNSAFE_REPLY_MIN;
		*reply_chunk = true;
		*reply_size = room < pool_max ? (uint32_t)room : pool_max;
		return;
	}
	/* 64 bits: reply_max comes from counts the client chose. */
	if ((uint64_t)u->reply_max + fwd_hdr_min(s->version) <= s->thr.recv)
		return;
	if (u->status == ULB_OK && u->n_results > 0) {
		uint32_t n = 0;
		uint64_t moved = 0;
		while (n < u->n_results && n < limit && (u->result_opaque & (1u << n)) &&
		       u->result_max[n] != ULB_LEN_UNKNOWN && u->result_max[n] > 0 &&
		       u->result_max[n] <= pool_max) {
			moved += xdr_align(u->result_max[n]);
			n++;
		}
		uint64_t rest = u->reply_max > moved ? u->reply_max - moved : 0;
		if (n > 0 && rest + fwd_reply_hdr_size(s, n) <= s->thr.recv) {
			*nwrites = n;
			return;
		}
	}
	*reply_chunk = true;
}

/* Fill a one-segment chunk description from an exposure. */
static void fwd_seg_from(struct rpcrdma_seg *seg, const struct rconn_exposure *e)
{
	seg->handle = e->rkey;
	seg->length = e->length;
	seg->offset = e->addr;
}

/*
 * Marshal and post one call. Returns 0 when sent; -EDQUOT when the session's
 * own max_session_memory has no room for it until its calls in flight
 * complete; -EAGAIN when it must wait for what the connection lacks
 * (buffers, windows or send-queue room); or another -errno when the call
 * cannot be sent at all. The pump decides how to wait for the first: on a
 * shared channel one client's limit must not hold up the others
 * (fwd_share_pump()).
 */
int fwd_marshal(struct fwd_session *s, struct fwd_call *c)
{
	struct fwd_session *ch = s->conn; /* the RDMA connection: s itself unless shared */
	struct rdma_pool *pool = fwd_pool(s);
	const uint8_t *msg = c->rec->base + c->rec_off;
	const struct ulb_call *u = &c->ulb;
	uint32_t nwrites, reply_size;
	bool reply_chunk;

	fwd_plan_reply(ch, c, &nwrites, &reply_chunk, &reply_size);
	/* The session's cap on pool memory: wait for replies to free some. */
	uint64_t need = FWD_HDR_MAX + (reply_chunk ? reply_size : 0);
	for (uint32_t k = 0; k < nwrites; k++)
		need += u->result_max[k];
	if (s->in_flight > 0 && s->mem_held + need > s->base.route->cfg->max_session_memory) {
		gw_count_event(&s->base, GW_EV_SESSION_MEMORY_LIMIT);
		s->mem_wait_need = need;
		return -EDQUOT;
	}

	/* Everything that can fail for want of resources, before anything is posted. */
	struct gw_buf *hdr = rdma_pool_alloc(pool, FWD_HDR_MAX);
	struct gw_buf *wbuf[ULB_MAX_ITEMS] = { 0 };
	struct gw_buf *rbuf = NULL;
	bool short_of_buffers = !hdr;
	for (uint32_t k = 0; k < nwrites && !short_of_buffers; k++) {
		wbuf[k] = rdma_pool_alloc(pool, u->result_max[k]);
		short_of_buffers = !wbuf[k];
	}
	if (reply_chunk && !short_of_buffers) {
		rbuf = rdma_pool_alloc(pool, reply_size);
		short_of_buffers = !rbuf;
	}

	/* The call: inline, Read chunks for its DDP items, or all in Position Zero. */
	struct rpcrdma_read_chunk_desc reads[ULB_MAX_ITEMS];
	struct rpcrdma_seg read_segs[ULB_MAX_ITEMS];
	uint32_t nreads = 0;
	uint32_t proc = RPCRDMA_MSG;
	struct iovec iov[FWD_MAX_SGE];
	struct splice_out inl = { .iov = iov, .cap = FWD_MAX_SGE - 1 };
	struct rpcrdma_call_desc d = {
		.version = ch->version,
		.direction = RPCRDMA_RPC_CALL,
		.xid = c->wire_xid,
		.credits = ch->window,
		.nwrites = nwrites,
		.writes = c->wdesc,
		.reply = reply_chunk ? &c->rdesc : NULL,
	};
	uint32_t hdr_plain = (uint32_t)rpcrdma_call_hdr_size(&d);

	struct splice_item items[ULB_MAX_ITEMS];
	uint32_t nitems = 0;
	if (hdr_plain + c->rec_len > ch->thr.send && u->status == ULB_OK && u->n_args > 0) {
		/* An empty item has nothing to move: it stays inline (a chunk cannot be empty). */
		for (uint32_t i = 0;
		     i < u->n_args && nitems < s->base.route->cfg->max_read_segments; i++) {
			if (u->args[i].length > 0)
				items[nitems++] = (struct splice_item){ u->args[i].offset,
									u->args[i].length };
		}
	}
	if (hdr_plain + c->rec_len <= ch->thr.send) {
		iov[0] = (struct iovec){ (void *)msg, c->rec_len };
		inl.cnt = 1;
		inl.len = c->rec_len;
	} else {
		bool reduced = false;
		if (nitems > 0 &&
		    splice_reduce(msg, c->rec_len, items, nitems, NULL, &inl) == SPLICE_OK) {
			for (uint32_t i = 0; i < nitems; i++) {
				reads[i] = (struct rpcrdma_read_chunk_desc){ items[i].offset, 1,
									     &read_segs[i] };
			}
			d.nreads = nitems;
			d.reads = reads;
			ssize_t hs = rpcrdma_call_hdr_size(&d);
			reduced = hs > 0 && (uint32_t)hs + inl.len <= ch->thr.send;
		}
		if (reduced) {
			nreads = nitems;
		} else {
			/* A long call: the whole message in a Position-Zero Read chunk. */
			proc = RPCRDMA_NOMSG;
			reads[0] = (struct rpcrdma_read_chunk_desc){ 0, 1, &read_segs[0] };
			nreads = 1;
			inl.cnt = 0;
			inl.len = 0;
		}
	}
	d.proc = proc;
	d.nreads = nreads;
	d.reads = nreads ? reads : NULL;

	unsigned nexp = nreads + nwrites + (reply_chunk ? 1 : 0);
	if (short_of_buffers || rconn_mw_space(ch->rdma) < nexp ||
	    rconn_sq_space(ch->rdma) < nexp + 1) {
		if (hdr)
			gw_buf_put(hdr);
		for (uint32_t k = 0; k < nwrites; k++) {
			if (wbuf[k])
				gw_buf_put(wbuf[k]);
		}
		if (rbuf)
			gw_buf_put(rbuf);
		if (short_of_buffers) {
			gw_count_event(&s->base, GW_EV_NO_BUFFERS);
			rdma_dev_wait_for_buffers(s->dev, &s->pool_waiter);
		}
		return -EAGAIN;
	}

	/*
	 * Memory the server may write is cleared first: a server that claims
	 * bytes it never wrote must find zeros there, never an earlier
	 * record of another client (docs/security.md; the cost is in
	 * docs/performance.md).
	 */
	for (uint32_t k = 0; k < nwrites; k++)
		memset(wbuf[k]->base, 0, u->result_max[k]);
	if (rbuf)
		memset(rbuf->base, 0, reply_size);

	/* Expose exactly what the server may touch, for this call only. */
	int err = 0;
	c->nexp = 0;
	c->bytes_read_chunk = 0;
	for (uint32_t i = 0; i < nreads && !err; i++) {
		uint32_t off = proc == RPCRDMA_NOMSG ? 0 : items[i].offset;
		uint32_t len = proc == RPCRDMA_NOMSG ? c->rec_len : items[i].len;
		struct rconn_exposure *e = &c->exp[c->nexp];
		err = rconn_expose(ch->rdma, c->rec, c->rec_off + off, len, RCONN_REMOTE_READ, e);
		if (!err) {
			fwd_seg_from(&read_segs[i], e);
			c->nexp++;
			c->bytes_read_chunk += len;
		}
	}
	for (uint32_t k = 0; k < nwrites && !err; k++) {
		struct rconn_exposure *e = &c->exp[c->nexp];
		err = rconn_expose(ch->rdma, wbuf[k], 0, u->result_max[k], RCONN_REMOTE_WRITE, e);
		if (!err) {
			fwd_seg_from(&c->wseg[k], e);
			c->wdesc[k] = (struct rpcrdma_chunk_desc){ 1, &c->wseg[k] };
			c->nexp++;
		}
	}
	if (reply_chunk && !err) {
		struct rconn_exposure *e = &c->exp[c->nexp];
		err = rconn_expose(ch->rdma, rbuf, 0, reply_size, RCONN_REMOTE_WRITE, e);
		if (!err) {
			fwd_seg_from(&c->rseg, e);
			c->rdesc = (struct rpcrdma_chunk_desc){ 1, &c->rseg };
			c->nexp++;
		}
	}
	c->hdr = hdr;
	c->nwrites = nwrites;
	memcpy(c->wbuf, wbuf, sizeof(wbuf));
	c->rbuf = rbuf;
	s->mem_held += need;
	c->mem += need;
	c->has_reply_chunk = reply_chunk;
	/*
	 * The connection is failing (the space checks above rule out -EAGAIN):
	 * fwd_pump() invalidates what was bound and ends the call.
	 */
	if (err)
		return err == -EAGAIN ? -EIO : err;

	ssize_t hlen = rpcrdma_encode_call(hdr->base, hdr->size, &d);
	if (hlen < 0) {
		gw_err("forward %s: cannot encode the transport header of xid %#x (%zd)",
		       s->base.client, c->xid, hlen);
		return (int)hlen;
	}

	struct ibv_sge sge[FWD_MAX_SGE];
	sge[0] = (struct ibv_sge){ (uintptr_t)hdr->base, (uint32_t)hlen, hdr->lkey };
	for (unsigned i = 0; i < inl.cnt; i++)
		sge[1 + i] = (struct ibv_sge){ (uintptr_t)iov[i].iov_base, (uint32_t)iov[i].iov_len,
					       c->rec->lkey };
	c->send_wr.done = fwd_send_done;
	c->send_pending = true;
	err = rconn_send(ch->rdma, sge, 1 + inl.cnt, 0, &c->send_wr);
	if (err) {
		c->send_pending = false;
		return err;
	}
	GW_COUNT(&s->base, bytes_inline, (uint64_t)hlen + inl.len);
	GW_COUNT(&s->base, bytes_read_chunk, c->bytes_read_chunk);
	return 0;
}

static void fwd_unexpose_done(struct rconn_wr *wr, enum ibv_wc_status status)
{
	struct fwd_call *c = (struct fwd_call *)((char *)wr - offsetof(struct fwd_call, fence_wr));

	c->fence_pending = false;
	fwd_call_put(c);
}

/*
 * A call that was not sent after all may have windows bound already: they
 * are invalidated before its buffers go back to the pool, which would
 * otherwise stay reachable through them while they are reused.
 */
void fwd_call_unexpose(struct fwd_session *s, struct fwd_call *c)
{
	struct fwd_session *ch = s->conn;

	if (c->nexp == 0 || ch->rdma_closed)
		return;
	c->fence_wr.done = fwd_unexpose_done;
	c->fence_pending = true;
	if (rconn_fence(ch->rdma, c->exp, c->nexp, 0, &c->fence_wr) == 1)
		c->fence_pending = false;
	/* Otherwise fwd_unexpose_done() runs, with a flush status if the connection fails. */
}

/*
 * A call given up while the server may still answer it: its windows are
 * replaced, not invalidated (rconn_withdraw()), so that the late reply's
 * Send With Invalidate or the server's late RDMA access finds no window
 * under their rkeys. Done at once; a window never advertised is fenced.
 */
void fwd_call_withdraw(struct fwd_session *s, struct fwd_call *c)
{
	struct fwd_session *ch = s->conn;

	if (c->nexp == 0 || ch->rdma_closed)
		return;
	if (rconn_withdraw(ch->rdma, c->exp, c->nexp) != 0)
		fwd_call_unexpose(s, c);
}

/*
 * Undo what fwd_marshal() did for @c, whose Send has completed and whose
 * windows are fenced or gone with their connection: the buffers offered
 * for the reply go back to the pool and the call holds its record only,
 * ready to be marshalled again (new windows, new rkeys). The client's
 * mem_held comes down: the upstream hears of it from the caller (the
 * requeue that follows, or forward_share.c taking the call off a lost
 * connection).
 */
void fwd_call_unmarshal(struct fwd_call *c)
{
	struct fwd_session *s = c->s;

	for (uint32_t k = 0; k < c->nwrites; k++) {
		gw_buf_put(c->wbuf[k]);
		c->wbuf[k] = NULL;
	}
	struct gw_buf **bufs[] = { &c->hdr, &c->rbuf, &c->reply };
	for (size_t i = 0; i < sizeof(bufs) / sizeof(bufs[0]); i++) {
		if (*bufs[i]) {
			gw_buf_put(*bufs[i]);
			*bufs[i] = NULL;
		}
	}
	c->nwrites = 0;
	c->has_reply_chunk = false;
	c->nexp = 0;
	s->mem_held -= c->mem - c->rec_len;
	c->mem = c->rec_len;
	c->reply_len = c->reply_chunk_len = c->reply_proc = c->reply_hdr_len = 0;
	memset(c->wlen, 0, sizeof(c->wlen));
}

/*
 * The call comes back to the head of the queue once its Send has completed
 * and its windows are fenced, with a Reply chunk as large as any reply and
 * an XID of the gateway's own: the server may keep the first attempt in its
 * duplicate request cache, and the retry must not be taken for it.
 */
void fwd_call_retry(struct fwd_call *c, enum ibv_wc_status status)
{
	struct fwd_session *s = c->s;

	/*
	 * A flushed work request: the connection is going, the call with it,
	 * unless it is made again (a shared channel's): the call waits in the
	 * queue for the new connection.
	 */
	if (status != IBV_WC_SUCCESS && !s->up->remade)
		c->failed_retry = true;
	if (c->send_pending || c->fence_pending)
		return;
	c->state = FC_DONE;
	c->retry = false;
	bool resend = c->resend;
	c->resend = false;
	if (s->state != FS_READY || c->failed_retry) {
		fwd_call_put(c);
		return;
	}
	fwd_call_unmarshal(c);
	if (!resend) {
		/* RFC 8267: room for any reply this time */
		c->retried = true;
		c->ulb.reply_max = rdma_pool_max_size(fwd_pool(s));
	}
	s->up->requeue(c); /* under a new wire XID, first in its queue */
}

/* Buffers came back: resume a client read that found the pool dry, and queued calls. */
void fwd_pool_wake(struct rdma_pool_waiter *w)
{
	struct fwd_session *s =
		(struct fwd_session *)((char *)w - offsetof(struct fwd_session, pool_waiter));

	if (s->tcp_starved && s->tcp) {
		s->tcp_starved = false;
		tcp_conn_source_ready(s->tcp);
	}
	fwd_pump(s);
}
