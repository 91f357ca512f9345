/* SPDX-License-Identifier: MIT */
/*
 * gateway/reverse.c - reverse mode: RPC-over-RDMA clients, a record-marked
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
 * The upstream. One TCP connection per RDMA connection, made when the RDMA
 * connection is established; calls wait until it is up. When it drops (a
 * server restart) the gateway reconnects with a growing delay, for up to
 * connect_timeout, and calls wait meanwhile (at most queue_limit of them;
 * beyond that they are answered SYSTEM_ERR). The calls that were in flight
 * are sent again on the new connection with their XIDs, as a TCP client
 * retransmits after a reconnect, so that an NFS server restart costs the
 * RDMA client a pause and not an I/O error. If the upstream cannot be
 * (re)connected in time, the RDMA connection is closed: the client
 * reconnects and retransmits as after any server restart.
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
 * ends, the upstream connection gets a normal close (its output flushed,
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
 */
#include <assert.h>
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
#include "gateway/reverse_plan.h"
#include "gateway/session.h"
#include "gateway/xidmap.h"
#include "rdma/conn.h"
#include "rdma/device.h"
#include "rdma/pool.h"
#include "rdma/privdata.h"
#include "rdma/rpcrdma_hdr.h"
#include "rdma/splice.h"
#include "tcp/listener.h"
#include "tcp/tcp_conn.h"
#include "ulb-rules/rpc_msg.h"
#include "ulb-rules/ulb.h"

enum {
	/* RDMA Reads the gateway has outstanding per connection, at most. */
	REV_MAX_READ_DEPTH = 16,
	/* Segments per chunk the slots have room for (the configuration's maximum). */
	REV_MAX_SEGS = 256,
	/* A Send: the transport header and the reduced reply's pieces. */
	REV_MAX_SGE = RPCRDMA_MAX_WRITE_CHUNKS + 2,
	/* An RPC error reply made here. */
	REV_RPC_ERR_MAX = 64,
	/* Upstream reconnects: the first retry's delay, doubling up to the cap. */
	REV_BACKOFF_MIN_MS = 100,
	REV_BACKOFF_MAX_MS = 2000,
};

/* A slot's fixed arrays hold what the decoder and the ULB may hand over. */
static_assert(REV_MAX_READ_DEPTH <= UINT8_MAX, "initiator depth is a CM byte");
static_assert(ULB_MAX_ITEMS <= UINT8_MAX, "a slot counts its items in a byte");
static_assert(REV_MAX_SGE >= 2, "a Send is the header and at least one piece");

enum rev_call_state {
	RC_FREE,
	RC_READING,  /* on readq: its Read chunks are being pulled */
	RC_WAITING,  /* on upq: for the upstream connection */
	RC_SENT,     /* on sentq: on the upstream, no reply yet */
	RC_ANSWER,   /* on sqq: its answer waits for send-queue room */
	RC_ANSWERED, /* the answer's Send is posted */
	RC_PARKED,   /* abandoned; released when the connection's teardown is done */
};

enum rev_answer {
	RA_NONE,
	RA_REPLY,     /* the upstream's reply record */
	RA_RPC_ERROR, /* an RPC error reply made here: rpc_stat */
	RA_ERR_VERS,  /* RDMA_ERROR ERR_VERS */
	RA_ERR_CHUNK, /* RDMA_ERROR ERR_CHUNK */
};

struct rev_session;
struct rev_call;

struct rev_queue {
	TAILQ_HEAD(rev_callhead, rev_call) head;
	uint32_t n;
};

struct rev_call {
	struct rev_session *s;
	TAILQ_ENTRY(rev_call) link;
	struct rev_queue *q; /* the queue it is on, or NULL */
	struct rev_call *next_free;

	/* The call: in its receive buffer (inline) or assembled in a pool buffer. */
	struct gw_buf *msg;
	/* Read chunks: the receive buffer holds the Read list until it is walked. */
	struct gw_buf *rx;
	const uint8_t *read_list;
	/* What the client offered for the reply: segments live in segs. */
	struct rpcrdma_seg *segs;
	struct rpcrdma_chunk_desc wdesc[RPCRDMA_MAX_WRITE_CHUNKS];
	struct rpcrdma_chunk_desc rdesc;
	/* The answer: the reply record, sent from where it landed. */
	struct gw_buf *reply;
	uint8_t *room; /* this slot's header room in a registered buffer */
	struct rconn_wr send_wr;

	struct ulb_call ulb;
	struct rev_call_layout layout;
	struct rev_read_cursor cursor;
	struct ulb_reply_item items[ULB_MAX_ITEMS];
	uint64_t t_in;
	uint64_t t_sent;
	uint64_t t_reply;

	uint32_t index;
	enum rev_call_state state;
	uint32_t xid;
	uint32_t msg_off;
	uint32_t msg_len;
	uint32_t inl_off; /* RDMA_MSG: where the inline part starts in rx */
	uint32_t read_nsegs;
	uint32_t reads_in_flight;
	uint32_t nwrites;
	enum rev_answer answer;
	enum rpc_accept_stat rpc_stat;
	uint32_t reply_off;
	uint32_t reply_len;
	uint32_t room_lkey;
	uint8_t nitems;
	bool in_xidmap;
	bool has_reply_chunk;
	bool reads_posted; /* the whole Read list is posted */
	bool read_failed;  /* a Read failed: the connection is going */
	bool bad_chunks;   /* the Read list does not add up: ERR_CHUNK */
	bool send_pending;
	bool timed_out; /* unanswered for call_timeout once: sent again on a new connection */
};

/*
 * A backward call: from the server's CALL record until the client's reply
 * (or the session's end) and the Send's completion, whichever is later.
 */
enum rev_bc_state {
	BC_FREE,
	BC_WAITING, /* on bcq: for a backward credit or send-queue room */
	BC_SENT,    /* posted to the client, no reply yet */
	BC_DONE,    /* replied to or abandoned; free once the Send completes */
};

struct rev_bcall {
	struct rev_session *s;
	TAILQ_ENTRY(rev_bcall) link;
	enum rev_bc_state state;
	bool send_pending;
	uint32_t xid;
	uint32_t up_gen;    /* the upstream connection that carried the call */
	struct gw_buf *rec; /* the server's call record, until the Send completes */
	uint32_t rec_off;
	uint32_t rec_len;
	uint8_t *room; /* the transport header, in registered memory */
	uint32_t room_lkey;
	struct rconn_wr send_wr;
	uint64_t t_in;
};

/* A received message that waits for a call slot. */
struct rev_rx {
	struct gw_buf *buf;
	uint32_t len;
};

/* One outstanding RDMA Read. */
struct rev_read_wr {
	struct rconn_wr wr;
	struct rev_call *c; /* NULL: free */
};

enum rev_state {
	RS_ACCEPTING, /* the RDMA connection is not established yet */
	RS_READY,
	RS_CLOSING,
};

enum rev_up_state {
	UP_NONE,       /* not connected, no attempt running (timer may be set) */
	UP_CONNECTING, /* tcp_connect_start() is running */
	UP_READY,
};

struct rev_session {
	struct gw_session base; /* first */
	enum rev_state state;
	struct rconn *rdma; /* learnt from its first callback */
	bool rdma_closed;

	struct rpcrdma_privdata own_pd;
	struct rpcrdma_privdata peer_pd;
	struct rpcrdma_thresholds thr;
	uint32_t grant;	      /* credits granted in every answer */
	uint32_t outstanding; /* client calls holding a credit */

	/* RDMA Reads: what the client allows, and what is out. */
	uint32_t read_depth;
	uint32_t reads_in_flight;
	struct rev_read_wr rwr[REV_MAX_READ_DEPTH];

	/* The upstream. */
	enum rev_up_state up;
	struct tcp_conn *tcp;
	struct tcp_connect *connect;
	struct event *retry_timer;
	struct event *call_timer;  /* the oldest call on the upstream, for call_timeout */
	uint64_t up_missing_since; /* when the upstream was last found missing */
	uint32_t backoff_ms;
	bool up_reached; /* connected at least once */
	bool out_congested;
	bool tcp_starved;

	/* Call slots and their queues. */
	struct rev_call *calls;
	uint32_t ncalls;
	uint32_t busy;
	struct rev_call *free_list;
	struct xidmap xids;
	struct rev_queue readq; /* pulling Read chunks, in arrival order */
	struct rev_queue upq;	/* waiting for the upstream */
	struct rev_queue sentq; /* on the upstream, in the order sent */
	struct rev_queue sqq;	/* answers waiting for send-queue room */
	struct rev_rx *rxq;	/* received messages waiting for a slot, a ring */
	uint32_t rxq_cap;	/* credits + backchannel_credits */
	uint32_t rxq_head;
	uint32_t rxq_n;
	bool rx_pumping;
	struct gw_buf **hdr_bufs; /* registered buffers holding every slot's header room */
	uint32_t nhdr_bufs;
	uint32_t room_size;
	struct rpcrdma_seg *segs;
	uint32_t cap_writes; /* Write chunks and segments per chunk a slot can hold */
	uint32_t cap_segs;

	struct rdma_pool_waiter pool_waiter;
	struct ulb_sessions ulb_sessions;
	bool draining;
	bool in_close;	     /* rev_session_close() is running: do not free under it */
	bool reset_upstream; /* a peer misbehaved: the upstream is reset, not closed */

	/* The backchannel. */
	struct rev_bcall *bcalls;
	uint32_t nbcalls;  /* slots: the route's backchannel_credits */
	uint32_t bc_busy;  /* slots not free */
	uint32_t bc_out;   /* backward calls posted and not answered */
	uint32_t bc_grant; /* the client's backward credits (1 until it says) */
	uint32_t up_gen;   /* upstream connections made */
	struct gw_buf *bc_hdr_buf;
	TAILQ_HEAD(, rev_bcall) bcq;
};

static void rev_session_close(struct rev_session *s);
static void rev_session_fail(struct rev_session *s);
static void rev_maybe_free(struct rev_session *s);
static void rev_reads_pump(struct rev_session *s);
static void rev_up_pump(struct rev_session *s);
static void rev_answer(struct rev_session *s, struct rev_call *c, enum rev_answer a);
static void rev_up_connect(struct rev_session *s);
static void rev_up_restart(struct rev_session *s);
static void rev_call_timeout(evutil_socket_t fd, short what, void *arg);
static void rev_bc_pump(struct rev_session *s);
static void rev_tcp_closed(struct tcp_conn *tc, const struct tcp_close_info *why, void *arg);
static void rev_rx_pump(struct rev_session *s);

static struct rev_session *rev_of(struct gw_session *g)
{
	return (struct rev_session *)g;
}

static struct rdma_pool *rev_pool(const struct rev_session *s)
{
	return rdma_dev_pool(rconn_device(s->rdma));
}

/* ---- queues and slots ---- */

static void rev_enqueue(struct rev_queue *q, struct rev_call *c)
{
	TAILQ_INSERT_TAIL(&q->head, c, link);
	q->n++;
	c->q = q;
}

static void rev_dequeue(struct rev_call *c)
{
	if (!c->q)
		return;
	TAILQ_REMOVE(&c->q->head, c, link);
	c->q->n--;
	c->q = NULL;
}

static struct rev_call *rev_call_get(struct rev_session *s)
{
	struct rev_call *c = s->free_list;

	if (!c)
		return NULL;
	s->free_list = c->next_free;
	c->next_free = NULL;
	s->busy++;
	return c;
}

static void rev_put_buf(struct gw_buf **b)
{
	struct gw_buf *buf = *b;

	/* Cleared first: whatever the put sets off finds the slot without it. */
	*b = NULL;
	if (buf)
		gw_buf_put(buf);
}

/* Return @c to the free list, unless a work request still refers to its memory. */
static void rev_call_put(struct rev_call *c)
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
	c->next_free = s->free_list;
	s->free_list = c;
	s->busy--;
	if (s->draining && s->busy == 0 && s->state != RS_CLOSING && !s->in_close) {
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
static void rev_call_post_failed(struct rev_session *s, struct rev_call *c, int err)
{
	if (err == -ENOTCONN)
		gw_debug("reverse %s: xid %#x: the connection is going", s->base.client, c->xid);
	else
		gw_warn("reverse %s: xid %#x: cannot post to the connection: %s; closing",
			s->base.client, c->xid, strerror(-err));
	rev_call_park(c);
	rev_session_close(s);
}

/* ---- answers to the client ---- */

static void rev_answers_pump(struct rev_session *s);

/*
 * Send-queue room is back (a completion): answers, Reads and backward calls
 * that waited for it go now, and received calls that waited for a slot.
 */
static void rev_sq_pump(struct rev_session *s)
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

/* Post @c's answer: @n pieces, the first its transport header. The credit goes back with it. */
static int rev_post_send(struct rev_session *s, struct rev_call *c, const struct ibv_sge *sge,
			 unsigned n)
{
	c->send_wr.done = rev_send_done;
	c->send_pending = true;
	int err = rconn_send(s->rdma, sge, n, 0, &c->send_wr);
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

/* RDMA_ERROR: ERR_VERS with the versions spoken, or ERR_CHUNK. */
static int rev_post_rdma_error(struct rev_session *s, struct rev_call *c)
{
	ssize_t n;

	if (rconn_sq_space(s->rdma) < 1)
		return -EAGAIN;
	if (c->answer == RA_ERR_VERS) {
		uint32_t low, high;
		rpcrdma_versions_range(&s->base.route->limits, &low, &high);
		n = rpcrdma_encode_err_vers(c->room, s->room_size, c->xid, s->grant, low, high);
	} else {
		n = rpcrdma_encode_err_chunk(c->room, s->room_size, c->xid, s->grant);
	}
	if (n < 0)
		return (int)n;
	struct ibv_sge sge = rev_room_sge(c, (uint32_t)n);
	int err = rev_post_send(s, c, &sge, 1);
	if (err)
		return err;
	gw_count_event(&s->base,
		       c->answer == RA_ERR_VERS ? GW_EV_ERR_VERS_SENT : GW_EV_ERR_CHUNK_SENT);
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
		.version = RPCRDMA_V1,
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
	int err = rev_post_send(s, c, &sge, 1);
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
		err = rev_post_send(s, c, sge, nsge);
	if (err)
		return err == -EAGAIN ? -EIO : err; /* some Writes may be posted: never again */

	GW_COUNT(&s->base, bytes_write_chunk, plan.moved_bytes);
	if (plan.how == REV_REPLY_INLINE) {
		GW_COUNT(&s->base, bytes_inline, (uint64_t)hlen + reduced.len);
	} else {
		GW_COUNT(&s->base, bytes_inline, (uint64_t)hlen);
		GW_COUNT(&s->base, bytes_reply_chunk, reduced.len);
	}
	gw_count_reply(&s->base, c->ulb.prog, c->ulb.vers, c->ulb.proc);
	uint64_t now = gw_now_us();
	gw_count_latency(&s->base, (c->t_sent - c->t_in) + (now - c->t_reply),
			 c->t_reply - c->t_sent);
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
static void rev_answer(struct rev_session *s, struct rev_call *c, enum rev_answer a)
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

/* ---- calls to the upstream ---- */

/* Wake up when the oldest call on the upstream reaches call_timeout (0: never). */
static void rev_call_timer_arm(struct rev_session *s)
{
	uint64_t limit_us = (uint64_t)s->base.route->cfg->call_timeout_ms * 1000;
	const struct rev_call *c = TAILQ_FIRST(&s->sentq.head);

	if (limit_us == 0 || !c || evtimer_pending(s->call_timer, NULL))
		return;
	uint64_t now = gw_now_us(), due = c->t_sent + limit_us;
	uint64_t wait = due > now ? due - now : 0;
	struct timeval tv = { (time_t)(wait / 1000000), (suseconds_t)(wait % 1000000) };
	evtimer_add(s->call_timer, &tv);
}

static bool rev_send_upstream(struct rev_session *s, struct rev_call *c)
{
	if (tcp_conn_send_ref(s->tcp, c->msg, c->msg_off, c->msg_len) != 0) {
		gw_debug("reverse %s: xid %#x not queued upstream: %s", s->base.client, c->xid,
			 strerror(errno));
		return false;
	}
	GW_COUNT(&s->base, tcp_bytes_out, (uint64_t)c->msg_len + 4);
	c->state = RC_SENT;
	c->t_sent = gw_now_us();
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

	while (s->state == RS_READY && s->up == UP_READY && !s->out_congested &&
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

static void rev_call_to_upstream(struct rev_session *s, struct rev_call *c)
{
	if (s->up == UP_READY && !s->out_congested && s->upq.n == 0 && rev_send_upstream(s, c))
		return;
	/*
	 * While the upstream reconnects, queue_limit bounds the calls that
	 * wait. Before it was ever reached they wait anyway (the credits bound
	 * them): the session ends if it cannot be reached.
	 */
	if (s->up_reached && s->up != UP_READY && s->upq.n >= s->base.route->cfg->queue_limit) {
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

/* ---- the backchannel (RFC 8167) ---- */

enum {
	/* A backward call's transport header: RDMA_MSG with three empty lists. */
	REV_BC_ROOM = 32,
};

static void rev_bc_release(struct rev_bcall *b)
{
	struct rev_session *s = b->s;

	rev_put_buf(&b->rec);
	b->state = BC_FREE;
	s->bc_busy--;
	rev_maybe_free(s);
}

/*
 * A message for the upstream found no room in its output: the server has
 * stopped reading (output room is sized for everything it was sent).
 * Rather than lose the message on a live connection, where the server
 * would wait for it until its own timeout, start over on a new one, as
 * when the server goes away: calls in flight go again.
 */
static void rev_up_overflow(struct rev_session *s, const char *what, uint32_t xid)
{
	int err = errno;

	gw_warn("reverse %s: %s xid %#x could not be queued to the upstream (%s): reconnecting",
		s->base.client, what, xid, strerror(err));
	gw_count_event(&s->base, GW_EV_OUTPUT_OVERFLOW);
	struct tcp_close_info why = { .reason = TCP_CLOSE_ERROR, .err = err };
	rev_tcp_closed(s->tcp, &why, s);
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
	if (!n || s->up != UP_READY)
		return;
	if (tcp_conn_send_copy(s->tcp, msg, n) == 0)
		GW_COUNT(&s->base, tcp_bytes_out, (uint64_t)n + 4);
	else if (s->tcp)
		rev_up_overflow(s, "the error reply to backward call", xid);
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
	ssize_t hlen =
		rpcrdma_encode_msg_inline(b->room, REV_BC_ROOM, RPCRDMA_V1, b->xid, s->nbcalls);
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
static void rev_bc_pump(struct rev_session *s)
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
static void rev_bc_call(struct rev_session *s, struct gw_buf *buf, uint32_t off, uint32_t len,
			uint32_t xid)
{
	struct rev_bcall *b = NULL;

	for (uint32_t i = 0; i < s->nbcalls && !b; i++) {
		if (s->bcalls[i].state == BC_FREE)
			b = &s->bcalls[i];
	}
	if (!b || RPCRDMA_HDR_MIN_SIZE + (uint64_t)len > s->thr.send) {
		/* Backward messages are inline only (RFC 8167 section 5). */
		rev_bc_refuse(s, xid,
			      b ? "larger than the client's inline threshold"
				: "more backward calls at once than backchannel_credits");
		gw_buf_put(buf);
		return;
	}
	b->state = BC_WAITING;
	b->xid = xid;
	b->up_gen = s->up_gen;
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
static void rev_bc_reply(struct rev_session *s, struct gw_buf *buf, const struct rpcrdma_hdr *h)
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
	if (b->up_gen != s->up_gen || s->up != UP_READY) {
		gw_info("reverse %s: the reply to backward call xid %#x is dropped: the server's "
			"connection that sent the call is gone",
			s->base.client, h->xid);
		gw_count_event(&s->base, GW_EV_BACKWARD_UNDELIVERABLE);
	} else if (tcp_conn_send_ref(s->tcp, buf, h->hdr_len, h->inline_len) != 0) {
		gw_count_event(&s->base, GW_EV_BACKWARD_UNDELIVERABLE);
		if (s->tcp)
			rev_up_overflow(s, "the reply to backward call", h->xid);
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
static void rev_bc_drop_waiting(struct rev_session *s)
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
static void rev_bc_abandon(struct rev_session *s)
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
	if (!xidmap_insert(&s->xids, c->xid, c->index)) {
		/* The same XID while the first is in flight: the first's reply answers both. */
		gw_count_event(&s->base, GW_EV_RETRANSMIT_ABSORBED);
		rev_call_drop(c);
		return;
	}
	c->in_xidmap = true;
	rev_call_to_upstream(s, c);
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
static void rev_reads_pump(struct rev_session *s)
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

static void rev_rx_drop_all(struct rev_session *s)
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
 * One message from the client, in arrival order. False when it is a call
 * that must wait for a slot: then nothing was done with it, and it is
 * offered again when a slot frees.
 */
static bool rev_recv_msg(struct rev_session *s, struct gw_buf *buf, uint32_t len)
{
	struct rpcrdma_limits lim;
	struct rpcrdma_hdr h;

	/* @len is at most the buffer's size: rconn closes the connection otherwise. */
	rev_limits(s, &lim);
	enum rpcrdma_reason r = rpcrdma_hdr_decode(&h, buf->base, len, &lim);
	/* An inline message: its RPC header must carry the transport header's XID. */
	bool inl = r == RPCRDMA_OK && h.proc == RPCRDMA_MSG && h.nreads == 0;
	enum rpcrdma_reason xr =
		inl ? rpcrdma_hdr_check_xid(&h, buf->base + h.hdr_len, h.inline_len) : RPCRDMA_OK;
	if (inl && xr == RPCRDMA_OK &&
	    rpcrdma_rpc_msg_type(buf->base + h.hdr_len) == RPCRDMA_RPC_REPLY) {
		/* A backward-direction reply (RFC 8167): told by its msg_type. */
		gw_session_touch(&s->base, gw_now_us());
		rev_bc_reply(s, buf, &h);
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

	/* A call, or a message to answer: it holds a credit until answered. */
	switch (rev_admit_call(s->outstanding, s->grant, s->ncalls - s->busy)) {
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
	c->xid = h.xid;
	c->t_in = gw_now_us();
	gw_session_touch(&s->base, c->t_in);
	if (r != RPCRDMA_OK) {
		enum rpcrdma_action act = rpcrdma_reason_action(r);
		gw_warn("reverse %s: xid %#x: %s: %s", s->base.client, h.xid,
			rpcrdma_reason_name(r),
			act == RPCRDMA_ACT_ERR_VERS ? "ERR_VERS" : "ERR_CHUNK");
		if (act != RPCRDMA_ACT_ERR_VERS)
			gw_count_event(&s->base, GW_EV_BAD_TRANSPORT_HEADER);
		gw_buf_put(buf);
		rev_answer(s, c, act == RPCRDMA_ACT_ERR_VERS ? RA_ERR_VERS : RA_ERR_CHUNK);
		return true;
	}
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
static void rev_rx_pump(struct rev_session *s)
{
	if (s->rx_pumping)
		return;
	s->rx_pumping = true;
	while (s->state == RS_READY && s->rxq_n && s->busy < s->ncalls) {
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

static void rev_recv(struct rconn *rc, void *owner, struct gw_buf *buf, uint32_t len,
		     uint32_t inv_rkey)
{
	struct rev_session *s = owner;

	if (s->state != RS_READY) {
		gw_buf_put(buf);
		return;
	}
	if (s->rxq_n == 0 && rev_recv_msg(s, buf, len))
		return;
	if (s->rxq_n == s->rxq_cap) {
		/* More waiting than credits and backward replies allow: see the file's head. */
		gw_buf_put(buf);
		rev_credit_overrun(s);
		return;
	}
	rev_rx_park(s, buf, len);
	rev_rx_pump(s);
}

/* ---- the upstream ---- */

static const struct tcp_conn_ops rev_tcp_ops;

/* The DDP-eligible results of a full reply; only needed when the client offered Write chunks. */
static void rev_find_items(struct rev_session *s, struct rev_call *c)
{
	struct ulb_reply rep;

	c->nitems = 0;
	if (c->nwrites == 0 || (c->ulb.status != ULB_OK && c->ulb.status != ULB_DDP_STOPPED))
		return;
	enum ulb_reply_status st = ulb_parse_reply(
		&c->ulb, &s->ulb_sessions, c->reply->base + c->reply_off, c->reply_len, 0, &rep);
	if ((st != ULB_REPLY_OK && st != ULB_REPLY_STOPPED) || rep.n_items > ULB_MAX_ITEMS)
		return;
	c->nitems = rep.n_items;
	memcpy(c->items, rep.items, sizeof(rep.items[0]) * rep.n_items);
}

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
	struct rev_call *c = &s->calls[i];
	rev_dequeue(c);
	xidmap_remove(&s->xids, xid);
	c->in_xidmap = false;
	c->t_reply = gw_now_us();
	gw_session_touch(&s->base, c->t_reply);
	rev_put_buf(&c->msg); /* answered: it will not be sent again */
	c->reply = buf;
	c->reply_off = off;
	c->reply_len = len;
	rev_find_items(s, c);
	rev_answer(s, c, RA_REPLY);
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

static void rev_pool_wake(struct rdma_pool_waiter *w)
{
	struct rev_session *s =
		(struct rev_session *)((char *)w - offsetof(struct rev_session, pool_waiter));

	if (s->tcp_starved && s->tcp) {
		s->tcp_starved = false;
		tcp_conn_source_ready(s->tcp);
	}
	rev_reads_pump(s);
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
	uint64_t limit = s->base.route->cfg->connect_timeout_ms;
	uint64_t missing = rev_up_missing_ms(s);

	if (missing >= limit) {
		rev_up_give_up(s);
		return;
	}
	uint64_t delay = s->backoff_ms < limit - missing ? s->backoff_ms : limit - missing;
	s->backoff_ms =
		s->backoff_ms * 2 < REV_BACKOFF_MAX_MS ? s->backoff_ms * 2 : REV_BACKOFF_MAX_MS;
	struct timeval tv = gw_ms_timeval(delay);
	evtimer_add(s->retry_timer, &tv);
}

static void rev_up_retry(evutil_socket_t fd, short what, void *arg)
{
	struct rev_session *s = arg;

	if (s->state == RS_READY && s->up == UP_NONE)
		rev_up_connect(s);
}

static void rev_up_connected(evutil_socket_t fd, int err, void *arg)
{
	struct rev_session *s = arg;

	s->connect = NULL;
	s->up = UP_NONE;
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
	s->up = UP_READY;
	s->up_gen++;
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	if (getsockname(fd, (struct sockaddr *)&ss, &sl) == 0)
		gw_format_addr((const struct sockaddr *)&ss, s->base.upstream,
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
	s->up = UP_CONNECTING;
	s->connect = tcp_connect_start(
		gw_engine_base(s->base.route->eng), (const struct sockaddr *)&r->upstream.addr,
		r->upstream.addrlen, (unsigned)(r->connect_timeout_ms - missing), flags,
		rev_up_connected, s);
	if (!s->connect) {
		gw_warn("reverse %s: cannot connect to %s: %s", s->base.client, r->upstream.text,
			strerror(errno));
		s->up = UP_NONE;
		rev_up_retry_later(s);
	}
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
	s->up = UP_NONE;
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
	s->up = UP_NONE;
	s->out_congested = false;
	s->tcp_starved = false;
	rev_bc_drop_waiting(s);
	while ((c = TAILQ_LAST(&s->sentq.head, rev_callhead)) != NULL) {
		rev_dequeue(c);
		rev_requeue_front(s, c);
	}
	s->up_missing_since = gw_now_us();
	s->backoff_ms = REV_BACKOFF_MIN_MS;
	rev_up_connect(s);
}

/*
 * The oldest call on the upstream may have waited call_timeout: the first
 * time, the upstream starts over and the calls in flight go again; a call
 * that was sent again for that already ends the session.
 */
static void rev_call_timeout(evutil_socket_t fd, short what, void *arg)
{
	struct rev_session *s = arg;
	uint32_t limit_ms = s->base.route->cfg->call_timeout_ms;
	struct rev_call *c = TAILQ_FIRST(&s->sentq.head);

	if (s->state != RS_READY || limit_ms == 0 || !c)
		return;
	if (gw_now_us() - c->t_sent < (uint64_t)limit_ms * 1000) {
		rev_call_timer_arm(s); /* answered meanwhile: the next oldest */
		return;
	}
	gw_count_event(&s->base, GW_EV_CALL_TIMEOUT);
	if (c->timed_out) {
		gw_warn("reverse %s: xid %#x: no reply from the upstream within %u ms, twice: "
			"closing the client's connection (it retransmits after reconnecting)",
			s->base.client, c->xid, limit_ms);
		rev_session_fail(s);
		return;
	}
	gw_warn("reverse %s: xid %#x: no reply from the upstream within %u ms: a new upstream "
		"connection, %u calls in flight go again",
		s->base.client, c->xid, limit_ms, s->sentq.n);
	TAILQ_FOREACH (c, &s->sentq.head, link)
		c->timed_out = true;
	rev_up_restart(s);
}

static const struct tcp_conn_ops rev_tcp_ops = {
	.record = rev_tcp_record,
	.output_pressure = rev_tcp_pressure,
	.starved = rev_tcp_starved,
	.closed = rev_tcp_closed,
};

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
	s->up_missing_since = gw_now_us();
	s->backoff_ms = REV_BACKOFF_MIN_MS;
	rev_up_connect(s);
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
static void rev_session_close(struct rev_session *s)
{
	if (s->in_close)
		return;
	s->in_close = true;
	if (s->state != RS_CLOSING) {
		s->state = RS_CLOSING;
		if (s->retry_timer)
			evtimer_del(s->retry_timer);
		if (s->call_timer)
			evtimer_del(s->call_timer);
		if (s->connect) {
			tcp_connect_cancel(s->connect);
			s->connect = NULL;
		}
		const struct gw_route *r = s->base.route->cfg;
		bool linger =
			!s->reset_upstream && (r->source_port != GW_SOURCE_PORT_RESERVED ||
					       gw_upstream_may_linger(s->base.route, gw_now_us()));
		if (s->tcp && !linger) {
			tcp_conn_free(s->tcp);
			s->tcp = NULL;
		} else if (s->tcp) {
			/*
			 * The client is gone or going: its calls' replies have
			 * nowhere to go, but what was sent goes, and the server
			 * sees a FIN. The session waits for rev_tcp_closed().
			 */
			tcp_conn_close(s->tcp);
		}
		s->up = UP_NONE;
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
static void rev_session_fail(struct rev_session *s)
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
static void rev_maybe_free(struct rev_session *s)
{
	if (s->in_close || s->state != RS_CLOSING || s->tcp || s->connect || !s->rdma_closed ||
	    s->busy || s->bc_busy)
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
	xidmap_destroy(&s->xids);
	free(s->rxq);
	free(s->bcalls);
	free(s->hdr_bufs);
	free(s->segs);
	free(s->calls);
	gw_session_unregister(&s->base);
	free(s);
}

static const char *rev_state_name(const struct gw_session *g)
{
	const struct rev_session *s = (const struct rev_session *)g;

	if (s->state == RS_CLOSING)
		return "closing";
	return s->state == RS_READY && s->up == UP_READY ? "ready" : "connecting";
}

static void rev_credits(const struct gw_session *g, struct gw_credit_state *out,
			uint32_t *inline_send, uint32_t *inline_recv)
{
	const struct rev_session *s = (const struct rev_session *)g;

	memset(out, 0, sizeof(*out));
	out->granted = s->grant;
	out->in_use = s->outstanding;
	out->queued = s->upq.n;
	out->backward_granted = s->bc_grant;
	out->backward_in_use = s->bc_out;
	*inline_send = s->thr.send;
	*inline_recv = s->thr.recv;
}

static void rev_drain(struct gw_session *g)
{
	struct rev_session *s = rev_of(g);

	s->draining = true;
	if (s->busy == 0)
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
		if (s->state == RS_CLOSING && s->tcp) {
			tcp_conn_free(s->tcp);
			s->tcp = NULL;
		}
	}
	rev_session_close(s); /* may free s */
}

static bool rev_idle(const struct gw_session *g)
{
	const struct rev_session *s = (const struct rev_session *)g;

	return s->state == RS_READY && s->busy == 0 && s->bc_busy == 0;
}

static const struct gw_session_ops rev_session_ops = {
	.state = rev_state_name,
	.credits = rev_credits,
	.drain = rev_drain,
	.shutdown = rev_shutdown,
	.idle = rev_idle,
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
	uint64_t hdr = RPCRDMA_FIXED_SIZE + 4 + (uint64_t)writes * (8 + segs * RPCRDMA_SEG_SIZE) +
		       4 + 8 + (uint64_t)segs * RPCRDMA_SEG_SIZE;
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
	rpcrdma_privdata_encode(p->private_data, &pd);
	p->private_data_len = RPCRDMA_PD_SIZE;
}

static void rev_free_unregistered(struct rev_session *s)
{
	if (s->retry_timer)
		event_free(s->retry_timer);
	if (s->call_timer)
		event_free(s->call_timer);
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
		gw_format_addr(peer, who, sizeof(who));
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
	if (!s->calls || !s->segs || !s->hdr_bufs || !s->bcalls || !s->rxq || !s->retry_timer ||
	    !s->call_timer) {
		rev_free_unregistered(s);
		return false;
	}
	if (xidmap_init(&s->xids, s->ncalls) != 0) {
		rev_free_unregistered(s);
		return false;
	}
	for (uint32_t i = s->ncalls; i-- > 0;) {
		struct rev_call *c = &s->calls[i];
		c->s = s;
		c->index = i;
		c->segs = s->segs + i * segs_per_call;
		c->next_free = s->free_list;
		s->free_list = c;
	}
	TAILQ_INIT(&s->readq.head);
	TAILQ_INIT(&s->upq.head);
	TAILQ_INIT(&s->sentq.head);
	TAILQ_INIT(&s->sqq.head);
	TAILQ_INIT(&s->bcq);
	for (uint32_t i = 0; i < s->nbcalls; i++)
		s->bcalls[i].s = s;
	s->bc_grant = 1; /* until the client's first backward reply grants more */
	s->pool_waiter.fn = rev_pool_wake;
	s->own_pd = (struct rpcrdma_privdata){ .remote_inv = false,
					       .send_size = r->inline_send_size,
					       .recv_size = r->inline_receive_size };
	if (!rpcrdma_privdata_decode(pdata, pdata_len, &s->peer_pd))
		gw_debug("%s: a client sent no RFC 8797 private data: 1024 bytes each way",
			 r->name);
	rpcrdma_inline_thresholds(&s->own_pd, &s->peer_pd, &s->thr);
	s->grant = r->credits;
	s->state = RS_ACCEPTING;
	gw_session_register(route, &s->base, &rev_session_ops, peer);

	*ops = &rev_rdma_ops;
	*owner = s;
	(void)params; /* the route's defaults (gw_reverse_listen_params()) are right */
	return true;
}
