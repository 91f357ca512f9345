/* SPDX-License-Identifier: MIT */
/*
 * gateway/reverse/reverse_answer.c - reverse mode, answers to the client: result items RDMA-Written
 * into its Write chunks, the reduced reply inline or into its Reply chunk,
 * or an RDMA_ERROR / RPC error made here; the Send queue kept within bounds.
 */
#include "gateway/reverse/reverse_priv.h"

static void rev_answers_pump(struct rev_session *s);

/*
 * Send-queue room is back (a completion): answers, Reads and backward calls
 * that waited for it go now, and received calls that waited for a slot.
 */
void rev_sq_pump(struct rev_session *s)
{
	rev_answers_pump(s);
	rev_reads_pump(s);
	rev_bc_pump(s);
	rev_rx_pump(s);
}

static void rev_send_done(struct rconn_wr *wr, enum ibv_wc_status status)
{
	struct rev_call *c = (struct rev_call *)((char *)wr - offsetof(struct rev_call, send_wr));
	struct rev_session *s = c->s;
	bool ready = s->state == RS_READY;

	c->send_pending = false;
	/* While the session is ready, putting a slot never frees it. */
	rev_call_put(c);
	if (ready && s->state == RS_READY)
		rev_sq_pump(s);
}

/*
 * Post @c's answer: @n pieces, the first its transport header. The credit
 * goes back with it. With @inv_rkey (a reply, its chunks' one handle) it is
 * a Send With Invalidate: the client's region is invalidated by the time
 * the client sees the reply, which saves it a local invalidation.
 */
static int rev_post_send(struct rev_session *s, struct rev_call *c, const struct ibv_sge *sge,
			 unsigned n, uint32_t inv_rkey)
{
	c->send_wr.done = rev_send_done;
	c->send_pending = true;
	int err = rconn_send(s->rdma, sge, n, inv_rkey, &c->send_wr);
	if (err) {
		c->send_pending = false;
		return err;
	}
	c->state = RC_ANSWERED;
	if (s->outstanding)
		s->outstanding--;
	return 0;
}

static struct ibv_sge rev_room_sge(const struct rev_call *c, uint32_t len)
{
	return (struct ibv_sge){ .addr = (uintptr_t)c->room, .length = len, .lkey = c->room_lkey };
}

/*
 * RDMA_ERROR: ERR_VERS with the versions spoken (written as Version One,
 * which every peer reads); otherwise in the version of the message it
 * answers: ERR_CHUNK, which Version Two calls RDMA2_ERR_BAD_HEADER, or
 * Version Two's RDMA2_ERR_INVAL_OPTION.
 */
static int rev_post_rdma_error(struct rev_session *s, struct rev_call *c)
{
	enum gw_event_kind ev;
	ssize_t n;

	if (rconn_sq_space(s->rdma) < 1)
		return -EAGAIN;
	if (c->answer == RA_ERR_VERS) {
		uint32_t low, high;
		rpcrdma_versions_range(&s->base.route->limits, &low, &high);
		n = rpcrdma_encode_err_vers(c->room, s->room_size, c->xid, s->grant, low, high);
		ev = GW_EV_ERR_VERS_SENT;
	} else if (c->answer == RA_ERR_INVAL_OPTION) {
		n = rpcrdma_encode_error(c->room, s->room_size, RPCRDMA_V2, c->xid, s->grant,
					 RPCRDMA2_ERR_INVAL_OPTION);
		ev = GW_EV_ERR_INVAL_OPTION_SENT;
	} else {
		n = rpcrdma_encode_error(c->room, s->room_size, c->version, c->xid, s->grant,
					 RPCRDMA_ERR_CHUNK);
		ev = GW_EV_ERR_CHUNK_SENT;
	}
	if (n < 0)
		return (int)n;
	struct ibv_sge sge = rev_room_sge(c, (uint32_t)n);
	int err = rev_post_send(s, c, &sge, 1, 0);
	if (err)
		return err;
	gw_count_event(&s->base, ev);
	GW_COUNT(&s->base, bytes_inline, (uint64_t)n);
	return 0;
}

/*
 * What the reply planner needs: the reply @msg, what the client offered for
 * it, and (@with_items) the DDP-eligible results found in it.
 */
static struct rev_reply_in rev_reply_input(const struct rev_session *s, const struct rev_call *c,
					   const uint8_t *msg, uint32_t len, bool with_items)
{
	return (struct rev_reply_in){
		.msg = msg,
		.len = len,
		.items = with_items ? c->items : NULL,
		.nitems = with_items ? c->nitems : 0,
		.nwrites = c->nwrites,
		.writes = c->wdesc,
		.reply = c->has_reply_chunk ? &c->rdesc : NULL,
		.send_max = s->thr.send,
		.version = c->version,
		.xid = c->xid,
		.credits = s->grant,
	};
}

/*
 * An RPC error reply made here (GARBAGE_ARGS, SYSTEM_ERR), inline. Like any
 * reply it echoes the Write list and Reply chunk the client offered, unused.
 */
static int rev_post_rpc_error(struct rev_session *s, struct rev_call *c)
{
	uint8_t msg[REV_RPC_ERR_MAX];
	size_t mlen = rpc_build_accepted_error(msg, sizeof(msg), c->xid, c->rpc_stat, 0, 0);
	struct iovec iov[REV_MAX_SGE];
	struct splice_out reduced = { .iov = iov, .cap = REV_MAX_SGE - 1 };
	struct rev_reply_plan plan;

	if (rconn_sq_space(s->rdma) < 1)
		return -EAGAIN;
	const struct rev_reply_in in = rev_reply_input(s, c, msg, (uint32_t)mlen, false);
	rev_plan_reply(&in, &reduced, &plan);
	ssize_t hlen = -EMSGSIZE;
	if (mlen && plan.how == REV_REPLY_INLINE)
		hlen = rpcrdma_encode_reply(c->room, s->room_size, &plan.desc);
	if (hlen < 0 || (size_t)hlen + mlen > s->room_size) {
		/* Too many chunks echoed to say it inline: ERR_CHUNK fails the call all the same.
		 */
		c->answer = RA_ERR_CHUNK;
		return rev_post_rdma_error(s, c);
	}
	memcpy(c->room + hlen, msg, mlen);
	struct ibv_sge sge = rev_room_sge(c, (uint32_t)(hlen + mlen));
	int err = rev_post_send(s, c, &sge, 1, 0);
	if (err)
		return err;
	gw_count_event(&s->base, GW_EV_RPC_ERROR_REPLY);
	GW_COUNT(&s->base, bytes_inline, (uint64_t)hlen + mlen);
	return 0;
}

/* The RDMA Writes that put @len bytes into @chunk, segments filled in order. */
static unsigned rev_chunk_steps(const struct rpcrdma_chunk_desc *chunk, uint32_t len,
				struct splice_step *steps)
{
	unsigned n = 0;

	if (len == 0 || splice_plan(chunk->segs, chunk->nsegs, len, 0, steps, REV_MAX_SEGS, &n,
				    NULL) != SPLICE_OK)
		return 0;
	return n;
}

/* Result items into their Write chunks, straight from the record buffer; no pad. */
static int rev_post_write_chunks(struct rev_session *s, struct rev_call *c,
				 const struct rev_reply_plan *plan, struct splice_step *steps)
{
	const uint8_t *msg = c->reply->base + c->reply_off;

	for (uint32_t k = 0; k < c->nwrites; k++) {
		unsigned n = rev_chunk_steps(&c->wdesc[k], plan->write_used[k], steps);
		for (unsigned i = 0; i < n; i++) {
			struct ibv_sge sge = {
				.addr = (uintptr_t)(msg + (uint64_t)plan->write_off[k] +
						    steps[i].local_offset),
				.length = steps[i].len,
				.lkey = c->reply->lkey,
			};
			int err = rconn_write(s->rdma, &sge, 1, steps[i].handle,
					      steps[i].remote_offset, NULL);
			if (err)
				return err;
		}
	}
	return 0;
}

/* A long reply: the reduced reply into the Reply chunk, gathered from the record buffer. */
static int rev_post_reply_chunk(struct rev_session *s, struct rev_call *c,
				const struct splice_out *reduced, struct splice_step *steps)
{
	unsigned n = rev_chunk_steps(&c->rdesc, reduced->len, steps);

	for (unsigned i = 0; i < n; i++) {
		struct iovec piece[REV_MAX_SGE];
		struct ibv_sge sge[REV_MAX_SGE];
		unsigned np = rev_iov_slice(reduced->iov, reduced->cnt, steps[i].local_offset,
					    steps[i].len, piece, REV_MAX_SGE);
		if (np == 0)
			return -EINVAL;
		for (unsigned j = 0; j < np; j++)
			sge[j] = (struct ibv_sge){ .addr = (uintptr_t)piece[j].iov_base,
						   .length = (uint32_t)piece[j].iov_len,
						   .lkey = c->reply->lkey };
		int err = rconn_write(s->rdma, sge, np, steps[i].handle, steps[i].remote_offset,
				      NULL);
		if (err)
			return err;
	}
	return 0;
}

/* The upstream's reply: Writes (unsignaled, RC orders them before the Send), then the Send. */
static int rev_post_reply(struct rev_session *s, struct rev_call *c)
{
	struct iovec iov[REV_MAX_SGE];
	struct splice_out reduced = { .iov = iov, .cap = REV_MAX_SGE - 1 };
	struct rev_reply_plan plan;
	const struct rev_reply_in in =
		rev_reply_input(s, c, c->reply->base + c->reply_off, c->reply_len, true);

	rev_plan_reply(&in, &reduced, &plan);
	ssize_t hlen = -EMSGSIZE;
	if (plan.how != REV_REPLY_ERR_CHUNK) {
		hlen = rpcrdma_encode_reply(c->room, s->room_size, &plan.desc);
		if (hlen < 0)
			plan.why = "reply_header_too_long";
	}
	if (hlen < 0) {
		gw_warn("reverse %s: the %u-byte reply to xid %#x fits nothing the client offered "
			"(%s): ERR_CHUNK",
			s->base.client, c->reply_len, c->xid, plan.why);
		rev_put_buf(&c->reply);
		c->answer = RA_ERR_CHUNK;
		return rev_post_rdma_error(s, c);
	}

	/* Every work request of the answer fits the send queue, or none is posted yet. */
	struct splice_step steps[REV_MAX_SEGS];
	uint32_t need = 1;
	for (uint32_t k = 0; k < c->nwrites; k++)
		need += rev_chunk_steps(&c->wdesc[k], plan.write_used[k], steps);
	if (plan.how == REV_REPLY_NOMSG)
		need += rev_chunk_steps(&c->rdesc, reduced.len, steps);
	if (rconn_sq_space(s->rdma) < need)
		return -EAGAIN;

	int err = rev_post_write_chunks(s, c, &plan, steps);
	if (!err && plan.how == REV_REPLY_NOMSG)
		err = rev_post_reply_chunk(s, c, &reduced, steps);
	struct ibv_sge sge[REV_MAX_SGE];
	unsigned nsge = 0;
	sge[nsge++] = rev_room_sge(c, (uint32_t)hlen);
	if (plan.how == REV_REPLY_INLINE) {
		for (unsigned i = 0; i < reduced.cnt; i++)
			sge[nsge++] = (struct ibv_sge){ .addr = (uintptr_t)iov[i].iov_base,
							.length = (uint32_t)iov[i].iov_len,
							.lkey = c->reply->lkey };
	}
	if (!err)
		err = rev_post_send(s, c, sge, nsge, c->inv_rkey);
	if (err)
		return err == -EAGAIN ? -EIO : err; /* some Writes may be posted: never again */
	if (c->inv_rkey)
		GW_COUNT(&s->base, remote_invalidations, 1);

	GW_COUNT(&s->base, bytes_write_chunk, plan.moved_bytes);
	if (plan.how == REV_REPLY_INLINE) {
		GW_COUNT(&s->base, bytes_inline, (uint64_t)hlen + reduced.len);
	} else {
		GW_COUNT(&s->base, bytes_inline, (uint64_t)hlen);
		GW_COUNT(&s->base, bytes_reply_chunk, reduced.len);
	}
	uint64_t now = gw_now_pass_us();
	gw_count_reply(&s->base, c->ulb.prog, c->ulb.vers, c->ulb.proc,
		       (c->t_sent - c->t_in) + (now - c->t_reply), c->t_reply - c->t_sent);
	return 0;
}

static int rev_post_answer(struct rev_session *s, struct rev_call *c)
{
	switch (c->answer) {
	case RA_REPLY:
		return rev_post_reply(s, c);
	case RA_RPC_ERROR:
		return rev_post_rpc_error(s, c);
	case RA_ERR_VERS:
	case RA_ERR_CHUNK:
	case RA_ERR_INVAL_OPTION:
		return rev_post_rdma_error(s, c);
	case RA_NONE:
		break;
	}
	return -EINVAL;
}

/*
 * Answer @c now, or as soon as the send queue has room, in order. A post
 * that fails otherwise means the connection is failing: the call is
 * parked until the teardown is done with its memory.
 */
void rev_answer(struct rev_session *s, struct rev_call *c, enum rev_answer a)
{
	c->answer = a;
	if (s->sqq.n == 0) {
		int err = rev_post_answer(s, c);
		if (err == 0)
			return;
		if (err != -EAGAIN) {
			rev_call_post_failed(s, c, err);
			return;
		}
	}
	c->state = RC_ANSWER;
	rev_enqueue(&s->sqq, c);
}

static void rev_answers_pump(struct rev_session *s)
{
	struct rev_call *c;

	while (s->state == RS_READY && (c = TAILQ_FIRST(&s->sqq.head)) != NULL) {
		int err = rev_post_answer(s, c);
		if (err == -EAGAIN)
			return;
		rev_dequeue(c);
		if (err) {
			rev_call_post_failed(s, c, err);
			return;
		}
	}
}
