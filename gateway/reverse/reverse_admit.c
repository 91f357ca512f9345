/* SPDX-License-Identifier: MIT */
/*
 * gateway/reverse/reverse_admit.c - reverse mode, call slots and queues, and calls from the client:
 * decode, credit and slot admission, the Write list and Reply chunk kept,
 * Read chunks pulled into one contiguous message, the ULB parse, and the
 * messages parked while every slot is busy.
 */
#include "gateway/reverse/reverse_priv.h"

/* ---- queues and slots ---- */

void rev_enqueue(struct rev_queue *q, struct rev_call *c)
{
	TAILQ_INSERT_TAIL(&q->head, c, link);
	q->n++;
	c->q = q;
}

void rev_dequeue(struct rev_call *c)
{
	if (!c->q)
		return;
	TAILQ_REMOVE(&c->q->head, c, link);
	c->q->n--;
	c->q = NULL;
}

static struct rev_call *rev_call_get(struct rev_session *s)
{
	bool fresh; /* nothing to do: every slot was set up at the start */

	return gw_slots_get(&s->slots, &fresh);
}

void rev_put_buf(struct gw_buf **b)
{
	struct gw_buf *buf = *b;

	/* Cleared first: whatever the put sets off finds the slot without it. */
	*b = NULL;
	if (buf)
		gw_buf_put(buf);
}

/*
 * max_session_memory. A call reserves, when it is admitted, the pool memory
 * it may make the session hold: the assembled message of a call with Read
 * chunks, and its reply record, which can be no longer than what the client
 * offered for it (the inline threshold, its Write chunks, its Reply chunk; a
 * longer reply is refused with ERR_CHUNK as it arrives), each at most
 * max_record_size. Reserving at admission, once, means a call that holds
 * memory never waits for more, so waiting calls cannot hold each other up.
 * Summed in 64 bits: every length here is the client's.
 */
static uint64_t rev_call_mem(const struct rev_session *s, const struct rpcrdma_hdr *h)
{
	uint64_t max = s->base.route->cfg->max_record_size;
	uint64_t call = 0, reply = s->thr.send;

	if (h->nreads) {
		call = h->inline_len;
		for (uint32_t i = 0; i < h->nreads && i < RPCRDMA_MAX_READ_CHUNKS; i++)
			call += h->read[i].length;
	}
	for (uint32_t k = 0; k < h->nwrites && k < RPCRDMA_MAX_WRITE_CHUNKS; k++)
		reply += h->write[k].length;
	if (h->has_reply)
		reply += h->reply.length;
	return (call < max ? call : max) + (reply < max ? reply : max);
}

/*
 * A call that would take the session past max_session_memory waits, its
 * receive kept in arrival order as for a slot, until calls that hold
 * memory give it back; when none holds any it goes whatever its size, so
 * a session always moves. Counted once per wait.
 */
static bool rev_mem_admit(struct rev_session *s, uint64_t need)
{
	if (s->mem_held == 0 || s->mem_held + need <= s->base.route->cfg->max_session_memory) {
		s->mem_waiting = false;
		return true;
	}
	if (!s->mem_waiting) {
		s->mem_waiting = true;
		gw_count_event(&s->base, GW_EV_SESSION_MEMORY_LIMIT);
		gw_debug("reverse %s: %llu bytes held, a call needs %llu more: it waits",
			 s->base.client, (unsigned long long)s->mem_held, (unsigned long long)need);
	}
	return false;
}

/*
 * The waiting call is offered again from the event loop, not from here:
 * a slot is put back in the middle of many a caller.
 */
static void rev_mem_give_back(struct rev_session *s, struct rev_call *c)
{
	static const struct timeval now;

	if (c->mem == 0)
		return;
	s->mem_held -= c->mem;
	c->mem = 0;
	if (s->mem_waiting && s->state == RS_READY && s->mem_ev)
		evtimer_add(s->mem_ev, &now);
}

void rev_mem_wake(evutil_socket_t fd, short what, void *arg)
{
	struct rev_session *s = arg;

	(void)fd;
	(void)what;
	if (s->state == RS_READY)
		rev_rx_pump(s);
}

/* Pool buffers are back: a connection that waited for them reads again, then Read chunks go. */
void rev_pool_wake(struct rdma_pool_waiter *w)
{
	struct rev_session *s =
		(struct rev_session *)((char *)w - offsetof(struct rev_session, pool_waiter));

	s->up->buffers_back(s);
	rev_reads_pump(s);
}

/* Return @c to the free list, unless a work request still refers to its memory. */
void rev_call_put(struct rev_call *c)
{
	struct rev_session *s = c->s;

	if (c->send_pending || c->reads_in_flight)
		return;
	/* A parked call may have unsignaled work on the queue pair until it is gone. */
	if (c->state == RC_PARKED && !s->rdma_closed)
		return;
	rev_dequeue(c);
	if (c->in_xidmap)
		xidmap_remove(&s->xids, c->xid);
	if (c->qos_admitted)
		rev_qos_done(c);
	rev_mem_give_back(s, c);
	rev_put_buf(&c->msg);
	rev_put_buf(&c->rx);
	rev_put_buf(&c->reply);

	uint32_t index = c->index;
	struct rpcrdma_seg *segs = c->segs;
	uint8_t *room = c->room;
	uint32_t room_lkey = c->room_lkey;
	memset(c, 0, sizeof(*c));
	c->s = s;
	c->index = index;
	c->segs = segs;
	c->room = room;
	c->room_lkey = room_lkey;
	c->state = RC_FREE;
	gw_slots_put(&s->slots, c);
	if (s->draining && s->slots.busy == 0 && s->state != RS_CLOSING && !s->in_close) {
		rev_session_close(s); /* may free s */
		return;
	}
	rev_maybe_free(s);
}

/*
 * A call that gets no answer (not a call after all, a duplicate, or the
 * connection is going): it gives its credit back.
 */
static void rev_call_drop(struct rev_call *c)
{
	struct rev_session *s = c->s;

	if (s->outstanding)
		s->outstanding--;
	rev_call_put(c);
}

/* Abandon @c for good: released once the connection's teardown is done with its memory. */
static void rev_call_park(struct rev_call *c)
{
	rev_dequeue(c);
	c->state = RC_PARKED;
	rev_call_put(c);
}

/*
 * A work request for @c could not be posted: the queue pair is failing (the
 * teardown is on its way), or the device refused what was asked. Either
 * way the client cannot get its answer on this connection: close it.
 */
void rev_call_post_failed(struct rev_session *s, struct rev_call *c, int err)
{
	if (err == -ENOTCONN)
		gw_debug("reverse %s: xid %#x: the connection is going", s->base.client, c->xid);
	else
		gw_warn("reverse %s: xid %#x: cannot post to the connection: %s; closing",
			s->base.client, c->xid, strerror(-err));
	rev_call_park(c);
	rev_session_close(s);
}

/* ---- calls from the client ---- */

/* The whole call is one message: parse its arguments, then relay it. */
static void rev_call_ready(struct rev_session *s, struct rev_call *c)
{
	const uint8_t *m = c->msg->base + c->msg_off;
	enum ulb_status st =
		ulb_parse_call(s->base.rules, &s->ulb_sessions, m, c->msg_len, &c->ulb);

	gw_count_call(&s->base, c->ulb.prog, c->ulb.vers, c->ulb.proc);
	if (st == ULB_DDP_STOPPED)
		gw_count_event(&s->base, GW_EV_ULB_UNKNOWN_OP);
	/*
	 * Arguments that do not parse are answered here (RFC 8166 section
	 * 5.3.1's responder rule): the gateway has already acted on them by
	 * placing chunks, and a server would only see a message cut wrongly.
	 * A call header the server can judge (RPC version, credentials) goes
	 * on, for the server's own RPC_MISMATCH or AUTH_ERROR.
	 */
	if (st == ULB_GARBAGE_ARGS ||
	    (st == ULB_BAD_HEADER && c->ulb.hdr_status == RPC_HDR_SHORT)) {
		gw_info("reverse %s: xid %#x: arguments of program %u version %u procedure %u do "
			"not parse: GARBAGE_ARGS",
			s->base.client, c->xid, c->ulb.prog, c->ulb.vers, c->ulb.proc);
		gw_count_event(&s->base, GW_EV_GARBAGE_ARGS);
		rev_put_buf(&c->msg);
		c->rpc_stat = RPC_ACC_GARBAGE_ARGS;
		rev_answer(s, c, RA_RPC_ERROR);
		return;
	}
	enum xidmap_put_result put = xidmap_put(&s->xids, c->xid, c->index);
	if (put == XIDMAP_DUPLICATE) {
		/* The same XID while the first is in flight: the first's reply answers both. */
		gw_count_event(&s->base, GW_EV_RETRANSMIT_ABSORBED);
		rev_call_drop(c);
		return;
	}
	if (put == XIDMAP_NO_ROOM) {
		/* The XID table could not grow (out of memory): SYSTEM_ERR, as when no upstream. */
		gw_count_event(&s->base, GW_EV_NO_BUFFERS);
		rev_put_buf(&c->msg);
		c->rpc_stat = RPC_ACC_SYSTEM_ERR;
		rev_answer(s, c, RA_RPC_ERROR);
		return;
	}
	c->in_xidmap = true;
	if (s->base.route->qos)
		rev_qos_call(s, c); /* held to its class's limits first (reverse_qos.c) */
	else
		s->up->call(s, c);
}

/* A call assembled from Read chunks: is it the call the transport header announced? */
static void rev_call_assembled(struct rev_session *s, struct rev_call *c)
{
	const uint8_t *m = c->msg->base + c->msg_off;

	if (c->msg_len < 8 || xdr_get32(m) != c->xid) {
		gw_warn("reverse %s: xid %#x: the message in the Read chunks does not carry that "
			"XID: ERR_CHUNK",
			s->base.client, c->xid);
		gw_count_event(&s->base, GW_EV_BAD_TRANSPORT_HEADER);
		rev_put_buf(&c->msg);
		rev_answer(s, c, RA_ERR_CHUNK);
		return;
	}
	if (xdr_get32(m + 4) != RPC_MSG_CALL && c->version == RPCRDMA_V2) {
		/* Its header said CALL (rpcrdma_hdr_check_call()): the message contradicts it. */
		gw_warn("reverse %s: xid %#x: a Version Two call whose message is no call: "
			"RDMA2_ERR_BAD_HEADER",
			s->base.client, c->xid);
		gw_count_event(&s->base, GW_EV_BAD_TRANSPORT_HEADER);
		rev_put_buf(&c->msg);
		rev_answer(s, c, RA_ERR_CHUNK);
		return;
	}
	if (xdr_get32(m + 4) != RPC_MSG_CALL) {
		/* Backward-direction replies travel inline (RFC 8167); no backchannel yet. */
		gw_count_event(&s->base, GW_EV_UNMATCHED_REPLY);
		rev_call_drop(c);
		return;
	}
	rev_call_ready(s, c);
}

/* The Read list is done with: an assembled call, a bad list, or a failed Read. */
static void rev_read_finished(struct rev_session *s, struct rev_call *c)
{
	if (c->read_failed || s->state != RS_READY) {
		rev_call_park(c);
		return;
	}
	if (c->bad_chunks) {
		gw_warn("reverse %s: xid %#x: the Read list does not add up: ERR_CHUNK",
			s->base.client, c->xid);
		gw_count_event(&s->base, GW_EV_BAD_TRANSPORT_HEADER);
		rev_put_buf(&c->msg);
		rev_answer(s, c, RA_ERR_CHUNK);
		return;
	}
	rev_call_assembled(s, c);
}

static void rev_read_done(struct rconn_wr *wr, enum ibv_wc_status status)
{
	struct rev_read_wr *rw =
		(struct rev_read_wr *)((char *)wr - offsetof(struct rev_read_wr, wr));
	struct rev_call *c = rw->c;
	struct rev_session *s = c->s;

	rw->c = NULL;
	s->reads_in_flight--;
	c->reads_in_flight--;
	if (status != IBV_WC_SUCCESS)
		c->read_failed = true; /* and the connection fails with it */
	if (c->reads_in_flight == 0 && c->reads_posted)
		rev_read_finished(s, c);
	/* Send-queue room is back: answers and backward calls may wait for it too. */
	if (s->state == RS_READY)
		rev_sq_pump(s);
}

/*
 * The call's buffer: the whole message. The inline pieces of an RDMA_MSG
 * are copied to their places now (they are at most the inline threshold);
 * every chunk's XDR pad is zeroed, since the client sends none.
 */
static bool rev_read_prepare(struct rev_session *s, struct rev_call *c)
{
	const struct rev_call_layout *l = &c->layout;
	struct gw_buf *m = rdma_pool_alloc(rev_pool(s), l->total_len);

	if (!m) {
		gw_count_event(&s->base, GW_EV_NO_BUFFERS);
		rdma_dev_wait_for_buffers(rconn_device(s->rdma), &s->pool_waiter);
		return false;
	}
	c->msg = m;
	c->msg_off = 0;
	c->msg_len = l->total_len;
	if (!l->p0) {
		const uint8_t *inl = c->rx->base + c->inl_off;
		uint32_t run;
		for (uint32_t off = 0; off < l->base_len; off += run) {
			uint32_t dst = rev_layout_map(l, off, &run);
			/* The layout says so; checked anyway, as every peer-made offset. */
			if (run == 0 || (uint64_t)dst + run > l->total_len ||
			    (uint64_t)c->inl_off + off + run > c->rx->size) {
				c->bad_chunks = true;
				return true;
			}
			memcpy(m->base + dst, inl + off, run);
		}
	}
	for (uint32_t i = 0; i < l->ninserts; i++) {
		uint64_t pad_at = (uint64_t)l->ins[i].position + l->ins[i].len;
		uint32_t pad = xdr_pad(l->ins[i].len);
		if (pad_at + pad > l->total_len) {
			c->bad_chunks = true;
			return true;
		}
		memset(m->base + pad_at, 0, pad);
	}
	return true;
}

static struct rev_read_wr *rev_read_wr_get(struct rev_session *s)
{
	for (uint32_t i = 0; i < s->read_depth; i++) {
		if (!s->rwr[i].c)
			return &s->rwr[i];
	}
	return NULL;
}

/*
 * Post @c's next Reads while the client's limit and the send queue allow.
 * Returns 1 when the whole Read list is posted (or found bad), 0 when it
 * must wait, -errno when a Read cannot be posted.
 */
static int rev_read_post(struct rev_session *s, struct rev_call *c)
{
	while (s->reads_in_flight < s->read_depth && rconn_sq_space(s->rdma) > 0) {
		struct rev_read_cursor next = c->cursor;
		struct rev_read_op op;
		enum rev_read_status st =
			rev_read_next(&c->layout, c->read_list, c->read_nsegs, &next, &op);
		if (st != REV_READ_OP) {
			c->bad_chunks = st == REV_READ_BAD;
			c->reads_posted = true;
			return 1;
		}
		struct rev_read_wr *rw = rev_read_wr_get(s);
		if (!rw)
			return 0;
		struct ibv_sge sge = { .addr = (uintptr_t)(c->msg->base + op.dst),
				       .length = op.len,
				       .lkey = c->msg->lkey };
		rw->wr.done = rev_read_done;
		rw->c = c;
		int err = rconn_read(s->rdma, &sge, 1, op.handle, op.remote, &rw->wr);
		if (err) {
			rw->c = NULL;
			return err == -EAGAIN ? 0 : err;
		}
		c->cursor = next;
		s->reads_in_flight++;
		c->reads_in_flight++;
		GW_COUNT(&s->base, bytes_read_chunk, op.len);
	}
	return 0;
}

/* Pull Read chunks, one call after the other in arrival order. */
void rev_reads_pump(struct rev_session *s)
{
	struct rev_call *c;

	while (s->state == RS_READY && (c = TAILQ_FIRST(&s->readq.head)) != NULL) {
		if (!c->msg && !rev_read_prepare(s, c))
			return;
		int r = c->bad_chunks ? 1 : rev_read_post(s, c);
		if (c->bad_chunks)
			c->reads_posted = true;
		if (r == 0)
			return;
		rev_dequeue(c);
		if (r < 0) {
			c->read_failed = true;
			rev_call_post_failed(s, c, r);
			return;
		}
		/* Every Read is posted: the receive buffer and its Read list can go. */
		rev_put_buf(&c->rx);
		c->read_list = NULL;
		if (c->reads_in_flight == 0)
			rev_read_finished(s, c);
	}
}

/* Keep the Write list and Reply chunk the client offered: the receive buffer goes early. */
/*
 * The decoder held the offer to rev_limits(); the slot's arrays are sized
 * by the same caps, and checked here again rather than trusted: false when
 * the offer does not fit them.
 */
static bool rev_copy_offer(struct rev_session *s, struct rev_call *c, const struct rpcrdma_hdr *h)
{
	struct rpcrdma_seg *seg = c->segs;

	if (h->nwrites > s->cap_writes)
		return false;
	c->nwrites = h->nwrites;
	for (uint32_t k = 0; k < h->nwrites; k++) {
		if (h->write[k].nsegs > s->cap_segs)
			return false;
		uint32_t n = rpcrdma_chunk_copy(&h->write[k], seg, s->cap_segs);
		c->wdesc[k] = (struct rpcrdma_chunk_desc){ .nsegs = n, .segs = seg };
		seg += n;
	}
	c->has_reply_chunk = h->has_reply;
	if (h->has_reply) {
		if (h->reply.nsegs > s->cap_segs)
			return false;
		uint32_t n = rpcrdma_chunk_copy(&h->reply, seg, s->cap_segs);
		c->rdesc = (struct rpcrdma_chunk_desc){ .nsegs = n, .segs = seg };
	}
	return true;
}

/* The decoder's limits: the route's, within what this session's slots can hold. */
static void rev_limits(const struct rev_session *s, struct rpcrdma_limits *lim)
{
	*lim = s->base.route->limits;
	if (lim->max_write_chunks > s->cap_writes)
		lim->max_write_chunks = s->cap_writes;
	if (lim->max_chunk_segs > s->cap_segs)
		lim->max_chunk_segs = s->cap_segs;
}

static void rev_credit_overrun(struct rev_session *s)
{
	gw_warn("reverse %s: the client sent more calls than the %u credits granted: closing",
		s->base.client, s->grant);
	gw_count_event(&s->base, GW_EV_CREDIT_OVERRUN);
	rev_session_fail(s);
}

/* The message waits for a slot, behind any that wait already. */
static void rev_rx_park(struct rev_session *s, struct gw_buf *buf, uint32_t len)
{
	uint32_t tail = (s->rxq_head + s->rxq_n) % s->rxq_cap;

	s->rxq[tail] = (struct rev_rx){ .buf = buf, .len = len };
	s->rxq_n++;
}

void rev_rx_drop_all(struct rev_session *s)
{
	while (s->rxq_n) {
		gw_buf_put(s->rxq[s->rxq_head].buf);
		s->rxq[s->rxq_head].buf = NULL;
		s->rxq_head = (s->rxq_head + 1) % s->rxq_cap;
		s->rxq_n--;
	}
}

/* A message that is neither a call nor to be answered: true when it was dropped. */
static bool rev_recv_dropped(struct rev_session *s, const struct rpcrdma_hdr *h,
			     enum rpcrdma_reason r, const uint8_t *buf)
{
	if (r == RPCRDMA_R_RDMA_DONE) {
		/* Deprecated, and no RDMA_MSGP is ever sent that it could end (RFC 8166). */
		gw_count_event(&s->base, GW_EV_DONE_DROPPED);
		return true;
	}
	if (r != RPCRDMA_OK && rpcrdma_reason_action(r) == RPCRDMA_ACT_DROP) {
		gw_warn("reverse %s: dropping a message whose transport header cannot be "
			"answered: %s",
			s->base.client, rpcrdma_reason_name(r));
		gw_count_event(&s->base, GW_EV_BAD_TRANSPORT_HEADER);
		return true;
	}
	if (r == RPCRDMA_OK && h->proc == RPCRDMA_ERROR) {
		/* A requester has nothing to report an error about: never answer one. */
		gw_count_event(&s->base, GW_EV_BAD_TRANSPORT_HEADER);
		return true;
	}
	return false;
}

/*
 * The first call the client sends in an enabled version settles the
 * connection's version: the one its backward calls use, and what the stats
 * show. Every call is still answered in its own version (the Version Two
 * draft, section 5.3). A Version Two client that sent no RFC 8797 private
 * data can take 4096-byte messages, the size every Version Two receiver
 * supports (sections 2.3, 5.1), where a Version One client is assumed to
 * take only 1024.
 */
static void rev_settle_version(struct rev_session *s, uint32_t version)
{
	if (s->version)
		return;
	s->version = version;
	if (version == RPCRDMA_V2 && !s->peer_pd_sent) {
		s->peer_pd.send_size = RPCRDMA_V2_INLINE_DEFAULT;
		s->peer_pd.recv_size = RPCRDMA_V2_INLINE_DEFAULT;
		rpcrdma_inline_thresholds(&s->own_pd, &s->peer_pd, &s->thr);
	}
	gw_debug("reverse %s: the client speaks RPC-over-RDMA Version %s (inline %u/%u)",
		 s->base.client, version == RPCRDMA_V2 ? "Two" : "One", s->thr.send, s->thr.recv);
}

/*
 * A Version Two message that says it is a reply but is no backward reply
 * the gateway can take (its RPC message says otherwise, or it is not
 * inline, or it does not decode): the client is its responder, and an
 * error goes only from a responder to a requester, so it is dropped.
 */
static bool rev_recv_bad_v2_reply(struct rev_session *s, const struct rpcrdma_hdr *h,
				  enum rpcrdma_reason r)
{
	/* (an RDMA2_ERROR says REPLY too: rev_recv_dropped() takes it) */
	if (r != RPCRDMA_OK || h->direction != RPCRDMA_RPC_REPLY || h->proc == RPCRDMA_ERROR)
		return false;
	gw_warn("reverse %s: xid %#x: dropping a Version Two reply that is no backward reply",
		s->base.client, h->xid);
	gw_count_event(&s->base, GW_EV_BAD_TRANSPORT_HEADER);
	return true;
}

/* What answers a message that cannot be taken as a call. */
static enum rev_answer rev_error_answer(enum rpcrdma_action act)
{
	switch (act) {
	case RPCRDMA_ACT_ERR_VERS:
		return RA_ERR_VERS;
	case RPCRDMA_ACT_ERR_INVAL_OPTION:
		return RA_ERR_INVAL_OPTION;
	default:
		return RA_ERR_CHUNK;
	}
}

static const char *const rev_answer_names[] = {
	[RA_ERR_VERS] = "ERR_VERS",
	[RA_ERR_CHUNK] = "ERR_CHUNK",
	[RA_ERR_INVAL_OPTION] = "RDMA2_ERR_INVAL_OPTION",
};

/*
 * Decode a message from the client into @h, its transport header's verdict
 * in *@r and, for an inline message, whether its RPC header carries the
 * same XID in *@xr. True when it was a backward-direction reply (RFC 8167,
 * told by its msg_type): taken, and done with.
 */
static bool rev_recv_decode(struct rev_session *s, struct gw_buf *buf, uint32_t len,
			    struct rpcrdma_hdr *h, enum rpcrdma_reason *r, enum rpcrdma_reason *xr)
{
	struct rpcrdma_limits lim;

	/* @len is at most the buffer's size: rconn closes the connection otherwise. */
	rev_limits(s, &lim);
	*r = rpcrdma_hdr_decode(h, buf->base, len, &lim);
	/* An inline message: its RPC header must carry the transport header's XID. */
	bool inl = *r == RPCRDMA_OK && h->proc == RPCRDMA_MSG && h->nreads == 0;
	*xr = inl ? rpcrdma_hdr_check_xid(h, buf->base + h->hdr_len, h->inline_len) : RPCRDMA_OK;
	if (inl && *xr == RPCRDMA_OK &&
	    rpcrdma_rpc_msg_type(buf->base + h->hdr_len) == RPCRDMA_RPC_REPLY) {
		gw_session_touch(&s->base, gw_now_us());
		rev_bc_reply(s, buf, h);
		return true;
	}
	return false;
}

/*
 * One message from the client, in arrival order. False when it is a call
 * that must wait for a slot: then nothing was done with it, and it is
 * offered again when a slot frees.
 */
static bool rev_recv_msg(struct rev_session *s, struct gw_buf *buf, uint32_t len)
{
	struct rpcrdma_hdr h;
	enum rpcrdma_reason r, xr;

	if (rev_recv_decode(s, buf, len, &h, &r, &xr))
		return true;
	if (rev_recv_bad_v2_reply(s, &h, r)) {
		gw_buf_put(buf);
		return true;
	}
	/* Draining: no new calls; the client sends them again after it reconnects. */
	if (s->draining) {
		gw_buf_put(buf);
		return true;
	}
	if (r == RPCRDMA_OK)
		r = rpcrdma_hdr_check_call(&h);
	if (r == RPCRDMA_OK)
		r = xr;
	if (rev_recv_dropped(s, &h, r, buf->base)) {
		gw_buf_put(buf);
		return true;
	}

	uint64_t need = r == RPCRDMA_OK ? rev_call_mem(s, &h) : 0;
	if (!rev_mem_admit(s, need))
		return false;
	/* A call, or a message to answer: it holds a credit until answered. */
	switch (rev_admit_call(s->outstanding, s->grant, s->ncalls - s->slots.busy)) {
	case REV_ADMIT_WAIT:
		return false;
	case REV_ADMIT_OVERRUN:
		gw_buf_put(buf);
		rev_credit_overrun(s);
		return true;
	case REV_ADMIT_TAKE:
		break;
	}
	GW_COUNT(&s->base, bytes_inline, len);
	struct rev_call *c = rev_call_get(s);
	s->outstanding++;
	c->mem = need;
	s->mem_held += need;
	c->xid = h.xid;
	c->inv_rkey = 0;
	/* Answered in its own version; one the route does not speak gets ERR_VERS in One. */
	c->version =
		h.version == RPCRDMA_V2 && r != RPCRDMA_R_BAD_VERSION ? RPCRDMA_V2 : RPCRDMA_V1;
	c->t_in = gw_now_pass_us();
	gw_session_touch(&s->base, c->t_in);
	if (r != RPCRDMA_OK) {
		enum rev_answer a = rev_error_answer(rpcrdma_reason_action(r));
		gw_warn("reverse %s: xid %#x: %s: %s", s->base.client, h.xid,
			rpcrdma_reason_name(r), rev_answer_names[a]);
		if (a == RA_ERR_CHUNK)
			gw_count_event(&s->base, GW_EV_BAD_TRANSPORT_HEADER);
		gw_buf_put(buf);
		rev_answer(s, c, a);
		return true;
	}
	rev_settle_version(s, h.version);
	if (!rev_copy_offer(s, c, &h)) {
		gw_warn("reverse %s: xid %#x: more chunks or segments offered than the slot "
			"holds: ERR_CHUNK",
			s->base.client, h.xid);
		gw_count_event(&s->base, GW_EV_BAD_TRANSPORT_HEADER);
		c->nwrites = 0;
		c->has_reply_chunk = false;
		gw_buf_put(buf);
		rev_answer(s, c, RA_ERR_CHUNK);
		return true;
	}
	if (s->send_inv)
		c->inv_rkey = rev_inv_rkey(&h);

	if (h.nreads == 0) {
		/* An inline call: it goes upstream from the receive buffer itself. */
		c->msg = buf;
		c->msg_off = h.hdr_len;
		c->msg_len = h.inline_len;
		rev_call_ready(s, c);
		return true;
	}
	uint32_t max = s->base.route->cfg->max_record_size;
	if (max > rdma_pool_max_size(rev_pool(s)))
		max = rdma_pool_max_size(rev_pool(s));
	enum rev_layout_status ls = rev_call_layout(&h, max, &c->layout);
	if (ls != REV_LAYOUT_OK || c->layout.total_len < 8) {
		gw_warn("reverse %s: xid %#x: %s: ERR_CHUNK", s->base.client, h.xid,
			ls == REV_LAYOUT_TOO_LONG ? "the call is longer than max_record_size"
						  : "its Read chunks do not make a call");
		gw_count_event(&s->base, GW_EV_BAD_TRANSPORT_HEADER);
		gw_buf_put(buf);
		rev_answer(s, c, RA_ERR_CHUNK);
		return true;
	}
	c->rx = buf;
	c->inl_off = h.hdr_len;
	c->read_list = h.read_list;
	c->read_nsegs = h.read_nsegs;
	c->state = RC_READING;
	rev_enqueue(&s->readq, c);
	rev_reads_pump(s);
	return true;
}

/* Messages that waited for a slot go on, in order, while slots are free. */
void rev_rx_pump(struct rev_session *s)
{
	if (s->rx_pumping)
		return;
	s->rx_pumping = true;
	while (s->state == RS_READY && s->rxq_n && !gw_slots_full(&s->slots)) {
		struct rev_rx rx = s->rxq[s->rxq_head];
		/* Off the ring first: a close inside drops what is still on it. */
		s->rxq[s->rxq_head].buf = NULL;
		s->rxq_head = (s->rxq_head + 1) % s->rxq_cap;
		s->rxq_n--;
		if (!rev_recv_msg(s, rx.buf, rx.len)) {
			/* Still no slot: back to the front, nothing was done with it. */
			s->rxq_head = (s->rxq_head + s->rxq_cap - 1) % s->rxq_cap;
			s->rxq[s->rxq_head] = rx;
			s->rxq_n++;
			break;
		}
	}
	s->rx_pumping = false;
}

void rev_recv(struct rconn *rc, void *owner, struct gw_buf *buf, uint32_t len, uint32_t inv_rkey)
{
	struct rev_session *s = owner;

	if (s->state != RS_READY) {
		gw_buf_put(buf);
		return;
	}
	if (s->rxq_n == 0 && rev_recv_msg(s, buf, len))
		return;
	/*
	 * A backward reply needs no slot nor credit: it never waits behind
	 * calls that do (for memory, a slot), so a server's callback is
	 * answered however long the client's calls wait, held by a qos class
	 * among them. (A call is decoded again when its turn comes: the slow path.)
	 */
	if (s->rxq_n) {
		struct rpcrdma_hdr h;
		enum rpcrdma_reason r, xr;
		if (rev_recv_decode(s, buf, len, &h, &r, &xr))
			return;
	}
	if (s->rxq_n == s->rxq_cap) {
		/* More waiting than credits and backward replies allow: see the file's head. */
		gw_buf_put(buf);
		rev_credit_overrun(s);
		return;
	}
	rev_rx_park(s, buf, len);
	rev_rx_pump(s);
}
