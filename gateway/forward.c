/* SPDX-License-Identifier: MIT */
/*
 * gateway/forward.c - forward mode: record-marked TCP clients, an RPC-over-RDMA
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
 * The RDMA and TCP connections live and die together: when either side
 * goes, the other is closed, and the client reconnects and retransmits as
 * it would after a server restart. Calls lost with the RDMA connection are
 * simply not answered.
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
#include "gateway/session.h"
#include "gateway/xidmap.h"
#include "rdma/conn.h"
#include "rdma/device.h"
#include "rdma/privdata.h"
#include "rdma/rpcrdma_hdr.h"
#include "rdma/splice.h"
#include "tcp/tcp_conn.h"
#include "ulb-rules/rpc_msg.h"
#include "ulb-rules/ulb.h"

/* Exposures per call: Read chunks for the call's items, Write chunks, a Reply chunk. */
enum { FWD_MAX_EXPOSE = 2 * ULB_MAX_ITEMS + 2, FWD_MAX_SGE = ULB_MAX_ITEMS + 3 };
_Static_assert((int)FWD_MAX_EXPOSE <= (int)RCONN_FENCE_MAX,
	       "one fence must cover every window of a call");
_Static_assert(ULB_MAX_ITEMS <= 32, "result_opaque and the moved mask are 32-bit masks");

/* Transport header room: fixed part and three lists with every chunk we may offer. */
enum { FWD_HDR_MAX = 1024 };

/* Backward calls waiting for their SYSTEM_ERR answer, per session; beyond, dropped. */
enum { FWD_REFUSE_QUEUE = 64 };

/* The least Reply chunk offered to an estimated reply of a call that must not be retried. */
enum { FWD_UNSAFE_REPLY_MIN = 16384 };

enum fwd_call_state {
	FC_FREE,
	FC_QUEUED,  /* waiting for a credit, send-queue room or buffers */
	FC_SENT,    /* on the wire; the reply has not come */
	FC_FENCING, /* reply in; windows being invalidated */
	FC_DONE,    /* answered; waiting for the Send's completion */
};

struct fwd_call {
	struct fwd_session *s;
	uint32_t index;
	enum fwd_call_state state;
	TAILQ_ENTRY(fwd_call) qlink;
	struct fwd_call *next_free;

	/* The call as the client sent it. */
	uint32_t xid;
	/* The XID on the RDMA side: the client's, or the gateway's own for a retry. */
	uint32_t wire_xid;
	/* ERR_CHUNK to a Reply chunk sized from an estimate: send once more (RFC 8267). */
	bool retry;
	bool retried;
	bool failed_retry; /* a work request of the first attempt was flushed */
	struct gw_buf *rec;
	uint32_t rec_off;
	uint32_t rec_len;
	struct ulb_call ulb;

	/* What was offered for it. */
	struct gw_buf *hdr;
	uint32_t nwrites;
	struct gw_buf *wbuf[ULB_MAX_ITEMS];
	struct rpcrdma_seg wseg[ULB_MAX_ITEMS];
	struct rpcrdma_chunk_desc wdesc[ULB_MAX_ITEMS];
	bool has_reply_chunk;
	struct gw_buf *rbuf;
	struct rpcrdma_seg rseg;
	struct rpcrdma_chunk_desc rdesc;
	struct rconn_exposure exp[FWD_MAX_EXPOSE];
	unsigned nexp;
	uint32_t bytes_read_chunk; /* bytes the server pulls by RDMA Read */
	uint64_t mem;		   /* pool bytes the call holds (max_session_memory) */

	/* Completion bookkeeping. */
	struct rconn_wr send_wr;
	struct rconn_wr fence_wr;
	bool send_pending;
	bool fence_pending;

	/* The reply, while it is being fenced and delivered. */
	struct gw_buf *reply;
	uint32_t reply_len;
	uint32_t reply_proc;
	uint32_t reply_hdr_len;
	uint32_t wlen[ULB_MAX_ITEMS]; /* bytes the server wrote in each Write chunk */
	uint32_t reply_chunk_len;
	enum rpc_accept_stat fail_stat; /* non-zero: answer the client with this error */

	uint64_t t_in;
	uint64_t t_sent;
	uint64_t t_reply;
};

/*
 * A backward-direction call (RFC 8167): the server calls the client (NFSv4.1
 * CB_SEQUENCE, CB_RECALL...) on the client's own connection. The gateway relays
 * it to the TCP client as a CALL record and the client's REPLY record back as
 * an inline RDMA_MSG. A slot lives from the call's arrival until the reply's
 * Send completes; there are as many as backward credits we grant.
 */
struct fwd_bcall {
	struct fwd_session *s;
	bool busy;
	bool send_pending;
	uint32_t xid;
	struct gw_buf *rec; /* the client's reply record, until its Send completes */
	struct gw_buf *hdr;
	struct rconn_wr send_wr;
	uint64_t t_in;
};

/*
 * An RPC error reply to a backward call the client cannot be given (no
 * slot, the client gone, never answered in time): sent inline to the
 * server from its own small buffer, which goes back when the Send completes.
 */
struct fwd_bc_refusal {
	struct fwd_session *s;
	struct gw_buf *buf; /* NULL: free */
	struct rconn_wr send_wr;
};

enum fwd_state {
	FS_CONNECTING,
	FS_READY,
	FS_CLOSING,
};

struct fwd_session {
	struct gw_session base; /* first */
	enum fwd_state state;
	int fd; /* the accepted socket until the TCP side is set up, else -1 */
	struct tcp_conn *tcp;
	struct rconn *rdma;
	bool rdma_closed;	/* ops->closed has run, or connect never started */
	struct event *first_ev; /* waiting for the client's first bytes */

	struct rpcrdma_privdata own_pd;
	struct rpcrdma_privdata peer_pd;
	struct rpcrdma_thresholds thr;
	uint32_t granted;   /* the server's last grant (starts at 1) */
	uint32_t in_flight; /* calls sent and not answered */
	uint32_t window;    /* credits we request: route credits */

	struct fwd_call *calls;
	uint32_t ncalls;
	uint32_t busy;
	struct fwd_call *free_list;
	struct xidmap xids;
	TAILQ_HEAD(, fwd_call) queue;
	uint32_t queued;
	bool read_paused;   /* by us, for want of slots */
	bool tcp_starved;   /* reading stopped: the pool had no buffer for the client */
	bool out_congested; /* the client is not draining its replies */
	bool draining;
	bool in_close; /* fwd_session_close() is running: do not free under it */
	struct rdma_pool_waiter pool_waiter;
	struct ulb_sessions ulb_sessions;

	struct fwd_bcall *bcalls;
	uint32_t nbcalls; /* backward credits we grant */
	uint32_t bc_busy;
	struct fwd_bc_refusal *refusals; /* nbcalls of them */
	uint32_t refusals_busy;
	/* XIDs waiting for a refusal slot, oldest first. */
	uint32_t refuse_ring[FWD_REFUSE_QUEUE];
	uint32_t refuse_head, refuse_count;

	uint64_t mem_held; /* pool bytes held by calls, against max_session_memory */
	bool mem_paused;   /* reading paused for max_session_memory */

	uint32_t next_retry_xid; /* XIDs of retried calls (fwd_call_retry()) */
};

static const uint8_t zero_pad[4];

static void fwd_pump(struct fwd_session *s);
static void fwd_call_retry(struct fwd_call *c, enum ibv_wc_status status);
static void fwd_session_close(struct fwd_session *s);
static void fwd_maybe_free(struct fwd_session *s);

static struct fwd_session *fwd_of(struct gw_session *g)
{
	return (struct fwd_session *)g;
}

static struct rdma_pool *fwd_pool(const struct fwd_session *s)
{
	return rdma_dev_pool(rconn_device(s->rdma));
}

/* ---- call slots ---- */

static struct fwd_call *fwd_call_get(struct fwd_session *s)
{
	struct fwd_call *c = s->free_list;

	if (!c)
		return NULL;
	s->free_list = c->next_free;
	c->next_free = NULL;
	s->busy++;
	return c;
}

static void fwd_call_release_buffers(struct fwd_call *c)
{
	if (c->rec)
		gw_buf_put(c->rec);
	if (c->hdr)
		gw_buf_put(c->hdr);
	for (uint32_t k = 0; k < c->nwrites; k++) {
		if (c->wbuf[k])
			gw_buf_put(c->wbuf[k]);
	}
	if (c->rbuf)
		gw_buf_put(c->rbuf);
	if (c->reply)
		gw_buf_put(c->reply);
}

/* Return @c to the free list once nothing refers to its memory any more. */
static void fwd_call_put(struct fwd_call *c)
{
	struct fwd_session *s = c->s;

	if (c->send_pending || c->fence_pending)
		return;
	fwd_call_release_buffers(c);
	s->mem_held -= c->mem;
	uint32_t index = c->index;
	memset(c, 0, sizeof(*c));
	c->s = s;
	c->index = index;
	c->state = FC_FREE;
	c->next_free = s->free_list;
	s->free_list = c;
	s->busy--;
	if (s->mem_paused && s->mem_held <= s->base.route->cfg->max_session_memory / 2)
		s->mem_paused = false;
	if (s->read_paused && !s->mem_paused && s->state == FS_READY &&
	    s->queued < s->base.route->cfg->queue_limit) {
		s->read_paused = false;
		tcp_conn_resume_read(s->tcp);
	}
	if (s->draining && s->busy == 0) {
		fwd_session_close(s); /* may free s */
		return;
	}
	fwd_maybe_free(s);
}

/*
 * The session is closing and @c will get no reply: a call on the wire is
 * taken off it. Its memory is safe to reuse once no work request refers to
 * it (fwd_call_put() waits for those): rconn_close() moved the queue pair to
 * the error state, so the server can no longer reach any of its windows.
 */
static void fwd_call_abandon(struct fwd_call *c)
{
	struct fwd_session *s = c->s;

	if (c->state == FC_SENT) {
		xidmap_remove(&s->xids, c->wire_xid);
		s->in_flight--;
	}
	c->state = FC_DONE;
	fwd_call_put(c);
}

/* ---- replies to the client ---- */

/* An RPC error reply the gateway makes itself (the call could not be relayed). */
static void fwd_reply_error(struct fwd_session *s, uint32_t xid, enum rpc_accept_stat stat)
{
	uint8_t msg[64];
	size_t len = rpc_build_accepted_error(msg, sizeof(msg), xid, stat, 0, 0);

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
	bool any_write = false;
	for (uint32_t k = 0; k < c->nwrites; k++)
		any_write |= c->wlen[k] != 0;
	if (any_write) {
		err = fwd_deliver_spliced(s, c, inl_buf, inl, inl_len);
		if (err == -EPROTO) {
			gw_warn("forward %s: reply xid %#x does not match its Write chunks",
				s->base.client, c->xid);
			fwd_reply_error(s, c->xid, RPC_ACC_SYSTEM_ERR);
			return;
		}
	} else {
		if (u->prog == 100003 && u->vers == 4) {
			/* Learn NFSv4.1 sessions (CREATE_SESSION) for reply bounds. */
			struct ulb_reply rep;
			ulb_parse_reply(u, &s->ulb_sessions, inl, inl_len, 0, &rep);
		}
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
	gw_count_reply(&s->base, u->prog, u->vers, u->proc);
	uint64_t now = gw_now_us();
	gw_count_latency(&s->base, (c->t_sent - c->t_in) + (now - c->t_reply),
			 c->t_reply - c->t_sent);
}

static void fwd_fence_done(struct rconn_wr *wr, enum ibv_wc_status status)
{
	struct fwd_call *c = (struct fwd_call *)((char *)wr - offsetof(struct fwd_call, fence_wr));
	struct fwd_session *s = c->s;

	c->fence_pending = false;
	if (c->retry) {
		fwd_call_retry(c, status);
		return;
	}
	/* A flushed fence: the connection is gone, and with it the reply's client. */
	if (status == IBV_WC_SUCCESS && s->state != FS_CLOSING)
		fwd_deliver(s, c);
	c->state = FC_DONE;
	fwd_call_put(c);
}

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
	if (c->s->state == FS_CLOSING)
		fwd_call_abandon(c);
	else if (c->state == FC_DONE)
		fwd_call_put(c);
	else if (c->retry)
		fwd_call_retry(c, status);
}

/*
 * May @c be sent a second time under a new XID (the RFC 8267 retry)? The
 * server's duplicate request cache does not know the new XID, so only
 * when a second execution is harmless: the call only reads, or it is an
 * NFSv4.1+ COMPOUND starting with SEQUENCE, whose repeat the server answers
 * from the session slot's reply cache instead of executing it.
 */
static bool fwd_retry_safe(const struct fwd_call *c)
{
	const struct ulb_call *u = &c->ulb;

	if (u->prog == 100003 && u->vers == 4 && u->minorversion >= 1 && u->has_sequence)
		return true;
	return ulb_call_read_only(u);
}

/* Largest transport header of a reply that returns @nwrites Write chunks of one segment. */
static uint32_t fwd_reply_hdr_size(uint32_t nwrites)
{
	return RPCRDMA_HDR_MIN_SIZE + nwrites * (8 + RPCRDMA_SEG_SIZE);
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
static void fwd_plan_reply(const struct fwd_session *s, const struct fwd_call *c, uint32_t *nwrites,
			   bool *reply_chunk, uint32_t *reply_size)
{
	const struct ulb_call *u = &c->ulb;
	uint32_t pool_max = rdma_pool_max_size(fwd_pool(s));
	uint32_t limit = s->base.route->cfg->max_write_chunks;

	*nwrites = 0;
	*reply_chunk = false;
	*reply_size = u->reply_max < pool_max ? u->reply_max : pool_max;
	/*
	 * A reply only estimated for a call that must not run twice gets
	 * room to spare at once: the RFC 8267 retry is not open to it
	 * (fwd_may_retry()), and a reply larger still ends the call with an
	 * error rather than executing it twice. Twice the estimate: inline
	 * when that fits (an NFSv4.0 COMPOUND's GETATTR is an estimate, and
	 * a Reply chunk costs a window, an RDMA Write and clearing), else a
	 * Reply chunk of that size, not the largest.
	 */
	if (!u->reply_exact && !c->retried && !fwd_retry_safe(c)) {
		uint64_t room = 2 * (uint64_t)u->reply_max;
		if (room + RPCRDMA_HDR_MIN_SIZE <= s->thr.recv)
			return;
		if (room < FWD_UNSAFE_REPLY_MIN)
			room = FWD_UNSAFE_REPLY_MIN;
		*reply_chunk = true;
		*reply_size = room < pool_max ? (uint32_t)room : pool_max;
		return;
	}
	/* 64 bits: reply_max comes from counts the client chose. */
	if ((uint64_t)u->reply_max + RPCRDMA_HDR_MIN_SIZE <= s->thr.recv)
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
		if (n > 0 && rest + fwd_reply_hdr_size(n) <= s->thr.recv) {
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
 * Marshal and post one call. Returns 0 when sent, -EAGAIN when it must wait
 * (buffers, windows or send-queue room), or another -errno when the call
 * cannot be sent at all.
 */
static int fwd_marshal(struct fwd_session *s, struct fwd_call *c)
{
	struct rdma_pool *pool = fwd_pool(s);
	const uint8_t *msg = c->rec->base + c->rec_off;
	const struct ulb_call *u = &c->ulb;
	uint32_t nwrites, reply_size;
	bool reply_chunk;

	fwd_plan_reply(s, c, &nwrites, &reply_chunk, &reply_size);
	/* The session's cap on pool memory: wait for replies to free some. */
	uint64_t need = FWD_HDR_MAX + (reply_chunk ? reply_size : 0);
	for (uint32_t k = 0; k < nwrites; k++)
		need += u->result_max[k];
	if (s->in_flight > 0 && s->mem_held + need > s->base.route->cfg->max_session_memory) {
		gw_count_event(&s->base, GW_EV_SESSION_MEMORY_LIMIT);
		rdma_dev_wait_for_buffers(rconn_device(s->rdma), &s->pool_waiter);
		return -EAGAIN;
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
		.version = RPCRDMA_V1,
		.xid = c->wire_xid,
		.credits = s->window,
		.nwrites = nwrites,
		.writes = c->wdesc,
		.reply = reply_chunk ? &c->rdesc : NULL,
	};
	uint32_t hdr_plain = (uint32_t)rpcrdma_call_hdr_size(&d);

	struct splice_item items[ULB_MAX_ITEMS];
	uint32_t nitems = 0;
	if (hdr_plain + c->rec_len > s->thr.send && u->status == ULB_OK && u->n_args > 0) {
		/* An empty item has nothing to move: it stays inline (a chunk cannot be empty). */
		for (uint32_t i = 0;
		     i < u->n_args && nitems < s->base.route->cfg->max_read_segments; i++) {
			if (u->args[i].length > 0)
				items[nitems++] = (struct splice_item){ u->args[i].offset,
									u->args[i].length };
		}
	}
	if (hdr_plain + c->rec_len <= s->thr.send) {
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
			reduced = hs > 0 && (uint32_t)hs + inl.len <= s->thr.send;
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
	if (short_of_buffers || rconn_mw_space(s->rdma) < nexp ||
	    rconn_sq_space(s->rdma) < nexp + 1) {
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
			rdma_dev_wait_for_buffers(rconn_device(s->rdma), &s->pool_waiter);
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
		err = rconn_expose(s->rdma, c->rec, c->rec_off + off, len, RCONN_REMOTE_READ, e);
		if (!err) {
			fwd_seg_from(&read_segs[i], e);
			c->nexp++;
			c->bytes_read_chunk += len;
		}
	}
	for (uint32_t k = 0; k < nwrites && !err; k++) {
		struct rconn_exposure *e = &c->exp[c->nexp];
		err = rconn_expose(s->rdma, wbuf[k], 0, u->result_max[k], RCONN_REMOTE_WRITE, e);
		if (!err) {
			fwd_seg_from(&c->wseg[k], e);
			c->wdesc[k] = (struct rpcrdma_chunk_desc){ 1, &c->wseg[k] };
			c->nexp++;
		}
	}
	if (reply_chunk && !err) {
		struct rconn_exposure *e = &c->exp[c->nexp];
		err = rconn_expose(s->rdma, rbuf, 0, reply_size, RCONN_REMOTE_WRITE, e);
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
	err = rconn_send(s->rdma, sge, 1 + inl.cnt, 0, &c->send_wr);
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
static void fwd_call_unexpose(struct fwd_session *s, struct fwd_call *c)
{
	if (c->nexp == 0 || s->rdma_closed)
		return;
	c->fence_wr.done = fwd_unexpose_done;
	c->fence_pending = true;
	if (rconn_fence(s->rdma, c->exp, c->nexp, 0, &c->fence_wr) == 1)
		c->fence_pending = false;
	/* Otherwise fwd_unexpose_done() runs, with a flush status if the connection fails. */
}

/*
 * The call comes back to the head of the queue once its Send has completed
 * and its windows are fenced, with a Reply chunk as large as any reply and
 * an XID of the gateway's own: the server may keep the first attempt in its
 * duplicate request cache, and the retry must not be taken for it.
 */
static void fwd_call_retry(struct fwd_call *c, enum ibv_wc_status status)
{
	struct fwd_session *s = c->s;

	/* A flushed work request: the connection is going, the call with it. */
	if (status != IBV_WC_SUCCESS)
		c->failed_retry = true;
	if (c->send_pending || c->fence_pending)
		return;
	c->state = FC_DONE;
	c->retry = false;
	if (s->state != FS_READY || c->failed_retry) {
		fwd_call_put(c);
		return;
	}
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
	c->retried = true;
	c->ulb.reply_max = rdma_pool_max_size(fwd_pool(s));
	/*
	 * Any XID that is not in flight will do; a client call that later comes
	 * with the same one while the retry is out is taken for a retransmit
	 * (one chance in four billion per retry).
	 */
	do
		c->wire_xid = s->next_retry_xid++;
	while (c->wire_xid == c->xid || !xidmap_insert(&s->xids, c->wire_xid, c->index));
	xdr_put32(c->rec->base + c->rec_off, c->wire_xid);
	c->state = FC_QUEUED;
	TAILQ_INSERT_HEAD(&s->queue, c, qlink);
	s->queued++;
	fwd_pump(s);
}

/* Send queued calls while the server's grant, the send queue and buffers allow. */
static void fwd_pump(struct fwd_session *s)
{
	if (s->state != FS_READY)
		return;
	while (!TAILQ_EMPTY(&s->queue) && !s->out_congested) {
		uint32_t window = s->granted < s->window ? s->granted : s->window;
		if (s->in_flight >= window)
			break;
		struct fwd_call *c = TAILQ_FIRST(&s->queue);
		int err = fwd_marshal(s, c);
		if (err == -EAGAIN)
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
		c->t_sent = gw_now_us();
		s->in_flight++;
	}
}

/* Buffers came back: resume a client read that found the pool dry, and queued calls. */
static void fwd_pool_wake(struct rdma_pool_waiter *w)
{
	struct fwd_session *s =
		(struct fwd_session *)((char *)w - offsetof(struct fwd_session, pool_waiter));

	if (s->tcp_starved && s->tcp) {
		s->tcp_starved = false;
		tcp_conn_source_ready(s->tcp);
	}
	fwd_pump(s);
}

/* ---- calls from the client ---- */

static void fwd_call_admit(struct fwd_session *s, struct gw_buf *buf, uint32_t off, uint32_t len)
{
	struct fwd_call *c = fwd_call_get(s);

	if (!c) {
		/* Cannot happen: reading pauses when slots run out. */
		gw_err("forward %s: no call slot; dropping a call", s->base.client);
		gw_buf_put(buf);
		return;
	}
	c->rec = buf;
	c->rec_off = off;
	c->rec_len = len;
	c->mem = len;
	s->mem_held += len;
	c->t_in = gw_now_us();
	gw_session_touch(&s->base, c->t_in);
	enum ulb_status st =
		ulb_parse_call(s->base.rules, &s->ulb_sessions, buf->base + off, len, &c->ulb);
	c->xid = xdr_get32(buf->base + off);
	c->wire_xid = c->xid;
	if (st == ULB_DDP_STOPPED)
		gw_count_event(&s->base, GW_EV_ULB_UNKNOWN_OP);
	/*
	 * A call the ULB cannot parse still goes to the server, inline or in
	 * Position Zero: the server is the one to answer GARBAGE_ARGS. Its
	 * reply may be as large as any.
	 */
	if (st == ULB_GARBAGE_ARGS || st == ULB_BAD_HEADER) {
		c->ulb.n_args = 0;
		c->ulb.n_results = 0;
		if (c->ulb.reply_max == 0)
			c->ulb.reply_max = rdma_pool_max_size(fwd_pool(s));
	}
	gw_count_call(&s->base, c->ulb.prog, c->ulb.vers, c->ulb.proc);

	if (!xidmap_insert(&s->xids, c->xid, c->index)) {
		/* The client sent this XID again while the first is in flight. */
		gw_count_event(&s->base, GW_EV_RETRANSMIT_ABSORBED);
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
	fwd_pump(s);
}

/* ---- the backward direction (RFC 8167) ---- */

static void fwd_bcall_release(struct fwd_bcall *b)
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
	struct gw_buf *buf = rdma_pool_alloc(fwd_pool(s), RPCRDMA_HDR_MIN_SIZE + 64);
	if (!buf)
		return false;
	ssize_t hlen = rpcrdma_encode_msg_inline(buf->base, buf->size, RPCRDMA_V1, xid, s->nbcalls);
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
static bool fwd_backward_refuse(struct fwd_session *s, uint32_t xid)
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

static struct fwd_bcall *fwd_bcall_by_xid(struct fwd_session *s, uint32_t xid)
{
	for (uint32_t i = 0; i < s->nbcalls; i++) {
		struct fwd_bcall *b = &s->bcalls[i];
		if (b->busy && !b->send_pending && b->xid == xid)
			return b;
	}
	return NULL;
}

/*
 * The client answered a backward call: send its reply to the server as an
 * inline RDMA_MSG with no chunks, straight from the record buffer. Backward
 * messages never use chunks (RFC 8167), so a reply larger than the server's
 * inline threshold cannot be delivered.
 */
static void fwd_backward_reply(struct fwd_session *s, struct gw_buf *buf, uint32_t off,
			       uint32_t len, uint32_t xid)
{
	struct fwd_bcall *b = fwd_bcall_by_xid(s, xid);

	if (!b) {
		gw_count_event(&s->base, GW_EV_UNMATCHED_REPLY);
		gw_buf_put(buf);
		return;
	}
	struct gw_buf *hdr = rdma_pool_alloc(fwd_pool(s), RPCRDMA_HDR_MIN_SIZE);
	ssize_t hlen =
		hdr ? rpcrdma_encode_msg_inline(hdr->base, hdr->size, RPCRDMA_V1, xid, s->nbcalls)
		    : -ENOBUFS;
	if (hlen < 0 || (uint32_t)hlen + len > s->thr.send) {
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
	int err = rconn_send(s->rdma, sge, 2, 0, &b->send_wr);
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
 * A backward call from the server: RDMA_MSG, no chunks, msg_type CALL, in
 * the server's own XID space. It goes to the client as a CALL record, by
 * reference to the receive buffer.
 */
static void fwd_backward_call(struct fwd_session *s, struct gw_buf *buf,
			      const struct rpcrdma_hdr *h)
{
	struct fwd_bcall *b = NULL;

	for (uint32_t i = 0; i < s->nbcalls && !b; i++) {
		if (!s->bcalls[i].busy)
			b = &s->bcalls[i];
	}
	if (!b || h->nreads || h->nwrites || h->has_reply || !s->tcp || s->state != FS_READY) {
		const char *why = !b	   ? "more than the backward credits granted"
				  : s->tcp ? "it has chunks"
					   : "the client is gone";
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
	b->t_in = gw_now_us();
	s->bc_busy++;
	GW_COUNT(&s->base, backward_calls, 1);
	GW_COUNT(&s->base, bytes_inline, h->hdr_len + h->inline_len);
	if (tcp_conn_send_ref(s->tcp, buf, h->hdr_len, h->inline_len) != 0) {
		gw_count_event(&s->base, GW_EV_BACKWARD_UNDELIVERABLE);
		fwd_backward_refuse(s, h->xid);
		b->busy = false;
		s->bc_busy--;
	} else {
		GW_COUNT(&s->base, tcp_bytes_out, (uint64_t)h->inline_len + 4);
	}
	gw_buf_put(buf);
}

/* Backward calls still waiting for the client when the session closes. */
static void fwd_bcalls_abandon(struct fwd_session *s)
{
	for (uint32_t i = 0; i < s->nbcalls; i++) {
		struct fwd_bcall *b = &s->bcalls[i];
		if (b->busy && !b->send_pending) {
			b->busy = false;
			s->bc_busy--;
		}
	}
}

static void fwd_record(struct tcp_conn *tc, struct gw_buf *buf, uint32_t off, uint32_t len,
		       void *arg)
{
	struct fwd_session *s = arg;
	uint32_t xid, type;

	GW_COUNT(&s->base, tcp_bytes_in, len + 4);
	if (s->state != FS_READY || s->draining) {
		gw_buf_put(buf);
		return;
	}
	if (!rpc_msg_peek(buf->base + off, len, &xid, &type)) {
		gw_count_event(&s->base, GW_EV_MALFORMED_RECORD);
		gw_buf_put(buf);
		return;
	}
	if (type == RPC_MSG_REPLY) {
		/* The msg_type tells a backward reply from a call, never the XID. */
		fwd_backward_reply(s, buf, off, len, xid);
		return;
	}
	fwd_call_admit(s, buf, off, len);
	if (s->state != FS_READY)
		return;
	if (s->mem_held >= s->base.route->cfg->max_session_memory && !s->mem_paused) {
		/* Resumed by fwd_call_put() once half of it is free again. */
		s->mem_paused = true;
		gw_count_event(&s->base, GW_EV_SESSION_MEMORY_LIMIT);
	}
	if (!s->free_list || s->queued >= s->base.route->cfg->queue_limit || s->mem_paused) {
		s->read_paused = true;
		tcp_conn_pause_read(s->tcp);
	}
}

static void fwd_tcp_pressure(struct tcp_conn *tc, bool congested, void *arg)
{
	struct fwd_session *s = arg;

	/* While the client does not drain, send no new calls: no new replies come. */
	s->out_congested = congested;
	if (!congested)
		fwd_pump(s);
}

static void fwd_tcp_starved(struct tcp_conn *tc, void *arg)
{
	struct fwd_session *s = arg;

	gw_count_event(&s->base, GW_EV_NO_BUFFERS);
	s->tcp_starved = true;
	rdma_dev_wait_for_buffers(rconn_device(s->rdma), &s->pool_waiter);
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
	.output_pressure = fwd_tcp_pressure,
	.starved = fwd_tcp_starved,
	.closed = fwd_tcp_closed,
};

/* ---- replies from the server ---- */

static struct fwd_call *fwd_call_by_xid(struct fwd_session *s, uint32_t xid)
{
	uint32_t i = xidmap_find(&s->xids, xid);

	if (i == XIDMAP_NONE || s->calls[i].state != FC_SENT)
		return NULL;
	return &s->calls[i];
}

/* The server answered: take the call off the wire, fence, then deliver. */
static void fwd_call_answered(struct fwd_session *s, struct fwd_call *c, uint32_t inv_rkey)
{
	xidmap_remove(&s->xids, c->wire_xid);
	s->in_flight--;
	c->t_reply = gw_now_us();
	gw_session_touch(&s->base, c->t_reply);
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
static bool fwd_may_retry(const struct fwd_session *s, const struct fwd_call *c)
{
	return !c->ulb.reply_exact && !c->retried && fwd_retry_safe(c) &&
	       (!c->has_reply_chunk || c->rseg.length < rdma_pool_max_size(fwd_pool(s)));
}

static void fwd_recv_error(struct fwd_session *s, const struct rpcrdma_hdr *h, uint32_t inv_rkey)
{
	struct fwd_call *c = fwd_call_by_xid(s, h->xid);

	if (h->err == RPCRDMA_ERR_VERS) {
		gw_warn("forward %s: server answered ERR_VERS (%u..%u) for xid %#x", s->base.client,
			h->vers_low, h->vers_high, h->xid);
		gw_count_event(&s->base, GW_EV_ERR_VERS_RECEIVED);
	} else {
		gw_warn("forward %s: server answered ERR_CHUNK for xid %#x", s->base.client,
			h->xid);
		gw_count_event(&s->base, GW_EV_ERR_CHUNK_RECEIVED);
	}
	if (!c) {
		gw_count_event(&s->base, GW_EV_UNMATCHED_REPLY);
		return;
	}
	if (h->err == RPCRDMA_ERR_CHUNK && fwd_may_retry(s, c)) {
		gw_info("forward %s: xid %#x: the reply exceeds the %u bytes estimated for it: "
			"sending the call again with room for any reply",
			s->base.client, c->xid, c->has_reply_chunk ? c->rseg.length : s->thr.recv);
		gw_count_event(&s->base, GW_EV_REPLY_CHUNK_RETRY);
		c->retry = true;
		fwd_call_answered(s, c, inv_rkey);
		return;
	}
	/* The call ends here: the client gets an RPC error reply for it. */
	c->fail_stat = RPC_ACC_SYSTEM_ERR;
	fwd_call_answered(s, c, inv_rkey);
}

static void fwd_recv(struct rconn *rc, void *owner, struct gw_buf *buf, uint32_t len,
		     uint32_t inv_rkey)
{
	struct fwd_session *s = owner;
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
	if (h.proc == RPCRDMA_ERROR) {
		fwd_recv_error(s, &h, inv_rkey);
		gw_buf_put(buf);
		return;
	}

	struct fwd_call *c = fwd_call_by_xid(s, h.xid);
	if (!c) {
		gw_count_event(&s->base, GW_EV_UNMATCHED_REPLY);
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

static void fwd_established(struct rconn *rc, void *owner, const uint8_t *pdata, uint8_t len)
{
	struct fwd_session *s = owner;

	if (!rpcrdma_privdata_decode(pdata, len, &s->peer_pd))
		gw_info("forward %s: server sent no RFC 8797 private data", s->base.client);
	rpcrdma_inline_thresholds(&s->own_pd, &s->peer_pd, &s->thr);
	gw_format_addr(rconn_local_addr(rc), s->base.upstream, sizeof(s->base.upstream));
	gw_debug("forward %s: connected upstream from %s (inline %u/%u)", s->base.client,
		 s->base.upstream, s->thr.send, s->thr.recv);

	/*
	 * Only now is the device known whose pool the client's records must be
	 * read into: the socket has waited, unread, until here.
	 */
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
	fwd_session_close(s);
}

static const struct rconn_ops fwd_rdma_ops = {
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
static void fwd_session_close(struct fwd_session *s)
{
	if (s->in_close)
		return;
	s->in_close = true;
	if (s->state != FS_CLOSING) {
		s->state = FS_CLOSING;
		while (!TAILQ_EMPTY(&s->queue)) {
			struct fwd_call *c = TAILQ_FIRST(&s->queue);
			TAILQ_REMOVE(&s->queue, c, qlink);
			s->queued--;
			xidmap_remove(&s->xids, c->wire_xid);
			c->state = FC_DONE;
			fwd_call_put(c);
		}
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
	/*
	 * Calls still waiting for their replies end once the RDMA side is gone
	 * (ops->closed has run: every work request has completed). They are not
	 * answered; the client retransmits them after it reconnects.
	 */
	if (s->rdma_closed) {
		for (uint32_t i = 0; i < s->ncalls; i++) {
			struct fwd_call *c = &s->calls[i];
			if (c->state == FC_SENT && !c->send_pending)
				fwd_call_abandon(c);
		}
	}
	s->in_close = false;
	fwd_maybe_free(s);
}

static void fwd_maybe_free(struct fwd_session *s)
{
	if (s->in_close || s->state != FS_CLOSING || s->tcp || !s->rdma_closed || s->busy ||
	    s->bc_busy || s->refusals_busy)
		return;
	if (s->rdma) {
		rdma_dev_cancel_wait(rconn_device(s->rdma), &s->pool_waiter);
		rconn_destroy(s->rdma);
		s->rdma = NULL;
	}
	if (s->first_ev)
		event_free(s->first_ev);
	xidmap_destroy(&s->xids);
	free(s->calls);
	free(s->bcalls);
	free(s->refusals);
	gw_session_unregister(&s->base);
	free(s);
}

static const char *fwd_state_name(const struct gw_session *g)
{
	static const char *const names[] = { "connecting", "ready", "closing" };

	return names[fwd_of((struct gw_session *)g)->state];
}

static void fwd_credits(const struct gw_session *g, struct gw_credit_state *out,
			uint32_t *inline_send, uint32_t *inline_recv)
{
	const struct fwd_session *s = (const struct fwd_session *)g;

	memset(out, 0, sizeof(*out));
	out->granted = s->granted;
	out->in_use = s->in_flight;
	out->queued = s->queued;
	out->backward_granted = s->nbcalls;
	out->backward_in_use = s->bc_busy;
	*inline_send = s->thr.send;
	*inline_recv = s->thr.recv;
}

static void fwd_drain(struct gw_session *g)
{
	struct fwd_session *s = fwd_of(g);

	s->draining = true;
	if (s->busy == 0)
		fwd_session_close(s);
}

static void fwd_shutdown(struct gw_session *g)
{
	fwd_session_close(fwd_of(g));
}

static bool fwd_idle(const struct gw_session *g)
{
	const struct fwd_session *s = (const struct fwd_session *)g;

	return s->state == FS_READY && s->busy == 0 && s->bc_busy == 0;
}

/*
 * Once a second (the engine's sweep): no client waits for ever. A call the
 * server has not answered within call_timeout resets the session, as the
 * kernel's RPC-over-RDMA client does after a major timeout: both sides
 * close, the client reconnects and retransmits, and the server's duplicate
 * request cache answers what it had already done. A backward call the
 * client has not answered in that time is answered SYSTEM_ERR and its
 * credit freed. Returns true when the session was closed (it may be gone).
 */
static bool fwd_sweep(struct gw_session *g, uint64_t now)
{
	struct fwd_session *s = fwd_of(g);
	uint64_t limit = (uint64_t)g->route->cfg->call_timeout_ms * 1000;

	if (!limit || s->state != FS_READY)
		return false;
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
	if (s->in_flight == 0)
		return false;
	for (uint32_t i = 0; i < s->ncalls; i++) {
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

static const struct gw_session_ops fwd_session_ops = {
	.state = fwd_state_name,
	.credits = fwd_credits,
	.drain = fwd_drain,
	.shutdown = fwd_shutdown,
	.idle = fwd_idle,
	.sweep = fwd_sweep,
};

static struct rconn_params fwd_rdma_params(const struct gw_route *r, struct rpcrdma_privdata *pd)
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
	};

	/*
	 * R (remote invalidation) stays clear: the gateway fences every window
	 * itself. The Linux server would save one LOCAL_INV per call at best
	 * (it invalidates only when a call has exactly one rkey), and rxe in
	 * Debian's 6.1 kernel dereferences a NULL pointer when a window that
	 * the peer invalidated is invalidated again, which a lost or
	 * misreported IBV_WC_WITH_INV would make the gateway do.
	 */
	*pd = (struct rpcrdma_privdata){ .remote_inv = false,
					 .send_size = r->inline_send_size,
					 .recv_size = r->inline_receive_size };
	rpcrdma_privdata_encode(p.private_data, pd);
	p.private_data_len = RPCRDMA_PD_SIZE;
	return p;
}

/* The call slots and backward-call state, when the session starts relaying. */
static int fwd_alloc_slots(struct fwd_session *s, const struct gw_route *r)
{
	uint32_t ncalls = r->credits + r->queue_limit;

	s->calls = calloc(ncalls, sizeof(*s->calls));
	s->bcalls = calloc(r->backchannel_credits, sizeof(*s->bcalls));
	s->refusals = calloc(r->backchannel_credits, sizeof(*s->refusals));
	if (!s->calls || !s->bcalls || !s->refusals || xidmap_init(&s->xids, ncalls) != 0)
		return -ENOMEM; /* fwd_maybe_free() frees what was had */
	s->ncalls = ncalls;
	s->nbcalls = r->backchannel_credits;
	for (uint32_t i = 0; i < s->nbcalls; i++)
		s->bcalls[i].s = s;
	for (uint32_t i = s->ncalls; i-- > 0;) {
		s->calls[i].s = s;
		s->calls[i].index = i;
		s->calls[i].next_free = s->free_list;
		s->free_list = &s->calls[i];
	}
	return 0;
}

static void fwd_connect_upstream(struct fwd_session *s)
{
	struct gw_route_rt *route = s->base.route;
	const struct gw_route *r = route->cfg;

	if (fwd_alloc_slots(s, r) != 0) {
		gw_err("forward %s: out of memory for the session", s->base.client);
		fwd_session_close(s);
		return;
	}
	struct rconn_params params = fwd_rdma_params(r, &s->own_pd);
	s->rdma_closed = false;
	s->rdma = rconn_connect(gw_engine_rdma(route->eng),
				(const struct sockaddr *)&r->upstream.addr, NULL, &params,
				&fwd_rdma_ops, s);
	if (!s->rdma) {
		gw_count_event(&s->base, GW_EV_UPSTREAM_FAILURE);
		s->rdma_closed = true;
		fwd_session_close(s);
	}
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

void gw_forward_accept(struct gw_route_rt *route, int fd, const struct sockaddr *peer)
{
	const struct gw_route *r = route->cfg;
	struct fwd_session *s = calloc(1, sizeof(*s));

	if (!s) {
		close(fd);
		return;
	}
	TAILQ_INIT(&s->queue);
	s->granted = 1; /* until the first reply (RFC 8166) */
	s->next_retry_xid = (uint32_t)gw_now_us() ^ 0x5a5a0000u;
	s->window = r->credits;
	s->pool_waiter.fn = fwd_pool_wake;
	rpcrdma_privdata_decode(NULL, 0, &s->peer_pd);
	s->state = FS_CONNECTING;
	s->fd = fd;
	s->rdma_closed = true; /* no connection is started until the client speaks */
	gw_session_register(route, &s->base, &fwd_session_ops, peer);

	s->first_ev = event_new(gw_engine_base(route->eng), fd, EV_READ, fwd_first_bytes, s);
	struct timeval tv = gw_ms_timeval(r->record_timeout_ms);
	if (!s->first_ev || event_add(s->first_ev, &tv) != 0) {
		gw_err("forward %s: cannot wait for the client: %s", s->base.client,
		       strerror(errno));
		fwd_session_close(s);
	}
}
