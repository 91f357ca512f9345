/* SPDX-License-Identifier: MIT */
#include "rdma/conn.h"

#include <errno.h>
#include <netdb.h>
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>

#include "common/clock.h"
#include "common/log.h"

enum rconn_state {
	RCONN_RESOLVING_ADDR,
	RCONN_RESOLVING_ROUTE,
	RCONN_CONNECTING,
	RCONN_CONNECTED,
	RCONN_CLOSING, /* teardown scheduled */
	RCONN_CLOSED,  /* ops->closed has run or is running */
};

struct rconn_recv {
	struct rconn *conn;
	struct gw_buf *buf; /* NULL when not posted */
};

struct rconn_mw {
	struct ibv_mw *mw;
	uint32_t rkey; /* the rkey of the current (or last) binding */
	struct rconn_mw *next_free;
	bool bound;
};

struct rconn {
	struct rdma_cm_handler cm_handler; /* first: cm_id->context */
	struct rdma_cq_handler cq_handler;
	struct rdma_ctx *ctx;
	struct rdma_dev *dev;
	struct rdma_cm_id *id;
	struct ibv_cq *cq;
	struct rconn_params params;
	const struct rconn_ops *ops;
	void *owner;
	enum rconn_state state;
	enum rconn_close_reason reason;
	bool accepted;
	uint8_t initiator_depth;

	struct rconn_recv *recvs;
	uint32_t recvs_owed; /* receives not posted for want of buffers */
	struct rdma_pool_waiter pool_waiter;

	struct rconn_mw *mws;
	struct rconn_mw *mw_free;
	uint32_t mw_in_use;

	/* Send queue accounting: WRs posted, and the count retired by completions. */
	uint64_t sq_posted;
	uint64_t sq_retired;
	struct rconn_wr *outstanding; /* signaled WRs not completed yet */

	struct event *timer;	/* connect timeout */
	struct event *teardown; /* deferred teardown */
	struct rconn_stats stats;
};

struct rlistener {
	struct rdma_cm_handler cm_handler; /* first: cm_id->context */
	struct rdma_ctx *ctx;
	struct rdma_cm_id *id;
	struct rconn_params defaults;
	const struct rlistener_ops *ops;
	void *owner;
};

static const char *const close_reason_names[] = {
	[RCONN_CLOSE_LOCAL] = "closed locally",
	[RCONN_CLOSE_DISCONNECTED] = "peer disconnected",
	[RCONN_CLOSE_REJECTED] = "connection rejected",
	[RCONN_CLOSE_UNREACHABLE] = "peer unreachable",
	[RCONN_CLOSE_TIMEOUT] = "connect timed out",
	[RCONN_CLOSE_TRANSPORT] = "transport error",
	[RCONN_CLOSE_DEVICE] = "device removed",
	[RCONN_CLOSE_RESOURCES] = "out of resources",
	[RCONN_CLOSE_PROTOCOL] = "protocol violation by the peer",
};

const char *rconn_close_reason_str(enum rconn_close_reason reason)
{
	if ((unsigned)reason < sizeof(close_reason_names) / sizeof(close_reason_names[0]))
		return close_reason_names[reason];
	return "unknown";
}

static void rconn_fail(struct rconn *c, enum rconn_close_reason reason);

/* ---- outstanding work requests ---- */

static void wr_track(struct rconn *c, struct rconn_wr *wr)
{
	wr->seq = c->sq_posted;
	wr->prev = NULL;
	wr->next = c->outstanding;
	if (c->outstanding)
		c->outstanding->prev = wr;
	c->outstanding = wr;
}

static void wr_untrack(struct rconn *c, struct rconn_wr *wr)
{
	if (wr->prev)
		wr->prev->next = wr->next;
	else
		c->outstanding = wr->next;
	if (wr->next)
		wr->next->prev = wr->prev;
	wr->prev = wr->next = NULL;
}

static bool rconn_can_post(const struct rconn *c)
{
	return c->state == RCONN_CONNECTED && c->id && c->id->qp;
}

uint32_t rconn_sq_space(const struct rconn *c)
{
	uint64_t used = c->sq_posted - c->sq_retired;

	if (!rconn_can_post(c) || used >= c->params.send_depth)
		return 0;
	return c->params.send_depth - (uint32_t)used;
}

uint32_t rconn_mw_space(const struct rconn *c)
{
	return c->params.nmw - c->mw_in_use;
}

/*
 * Post a chain of @n send-queue WRs whose last one may be signaled with
 * @wr. A failure to post means the QP is unusable: the connection fails.
 */
static int rconn_post_chain(struct rconn *c, struct ibv_send_wr *first, unsigned n,
			    struct rconn_wr *wr)
{
	struct ibv_send_wr *bad = NULL;

	if (!rconn_can_post(c))
		return -ENOTCONN;
	if (rconn_sq_space(c) < n)
		return -EAGAIN;
	c->sq_posted += n;
	if (wr)
		wr_track(c, wr);
	int err = ibv_post_send(c->id->qp, first, &bad);
	if (err) {
		gw_err("rdma: post_send failed: %s", strerror(err));
		if (wr)
			wr_untrack(c, wr);
		rconn_fail(c, RCONN_CLOSE_TRANSPORT);
		return -err;
	}
	return 0;
}

int rconn_send(struct rconn *c, const struct ibv_sge *sge, unsigned nsge, uint32_t inv_rkey,
	       struct rconn_wr *wr)
{
	struct ibv_send_wr swr = {
		.wr_id = (uintptr_t)wr,
		.sg_list = (struct ibv_sge *)sge,
		.num_sge = (int)nsge,
		.opcode = inv_rkey ? IBV_WR_SEND_WITH_INV : IBV_WR_SEND,
		.send_flags = wr ? IBV_SEND_SIGNALED : 0,
	};

	if (nsge > c->params.max_send_sge)
		return -EINVAL;
	swr.invalidate_rkey = inv_rkey;
	int err = rconn_post_chain(c, &swr, 1, wr);
	if (!err)
		c->stats.sends++;
	return err;
}

static int rconn_rdma(struct rconn *c, enum ibv_wr_opcode op, const struct ibv_sge *sge,
		      unsigned nsge, uint32_t rkey, uint64_t raddr, struct rconn_wr *wr)
{
	struct ibv_send_wr swr = {
		.wr_id = (uintptr_t)wr,
		.sg_list = (struct ibv_sge *)sge,
		.num_sge = (int)nsge,
		.opcode = op,
		.send_flags = wr ? IBV_SEND_SIGNALED : 0,
		.wr.rdma = { .remote_addr = raddr, .rkey = rkey },
	};

	if (nsge > c->params.max_send_sge)
		return -EINVAL;
	return rconn_post_chain(c, &swr, 1, wr);
}

int rconn_read(struct rconn *c, const struct ibv_sge *sge, unsigned nsge, uint32_t rkey,
	       uint64_t raddr, struct rconn_wr *wr)
{
	if (!wr)
		return -EINVAL; /* a Read's data is usable only at its completion */
	int err = rconn_rdma(c, IBV_WR_RDMA_READ, sge, nsge, rkey, raddr, wr);
	if (!err)
		c->stats.reads++;
	return err;
}

int rconn_write(struct rconn *c, const struct ibv_sge *sge, unsigned nsge, uint32_t rkey,
		uint64_t raddr, struct rconn_wr *wr)
{
	int err = rconn_rdma(c, IBV_WR_RDMA_WRITE, sge, nsge, rkey, raddr, wr);
	if (!err)
		c->stats.writes++;
	return err;
}

/* ---- memory windows ---- */

int rconn_expose(struct rconn *c, struct gw_buf *buf, uint32_t offset, uint32_t len,
		 enum rconn_access access, struct rconn_exposure *out)
{
	struct rconn_mw *m = c->mw_free;

	if (!m)
		return -EAGAIN;
	if (!buf->mr || offset > buf->size || len > buf->size - offset || len == 0)
		return -EINVAL;

	uint32_t rkey = ibv_inc_rkey(m->rkey);
	struct ibv_send_wr swr = {
		.wr_id = 0,
		.opcode = IBV_WR_BIND_MW,
		.send_flags = 0,
	};
	swr.bind_mw.mw = m->mw;
	swr.bind_mw.rkey = rkey;
	/* The window lies inside the pool slab's registration. */
	swr.bind_mw.bind_info.mr = buf->mr;
	swr.bind_mw.bind_info.addr = (uintptr_t)(buf->base + offset);
	swr.bind_mw.bind_info.length = len;
	swr.bind_mw.bind_info.mw_access_flags = (unsigned)access;

	int err = rconn_post_chain(c, &swr, 1, NULL);
	if (err)
		return err;
	c->mw_free = m->next_free;
	m->next_free = NULL;
	m->rkey = rkey;
	/*
	 * A bind posted on the send queue does not update ibv_mw.rkey (only
	 * ibv_bind_mw() does, for type 1), yet providers name the window by
	 * that field in the next bind: keep it equal to the current rkey.
	 */
	m->mw->rkey = rkey;
	m->bound = true;
	c->mw_in_use++;
	c->stats.binds++;
	*out = (struct rconn_exposure){
		.mw = m, .rkey = rkey, .addr = (uintptr_t)(buf->base + offset), .length = len
	};
	return 0;
}

static void mw_put(struct rconn *c, struct rconn_mw *m)
{
	m->bound = false;
	m->next_free = c->mw_free;
	c->mw_free = m;
	c->mw_in_use--;
}

int rconn_fence(struct rconn *c, struct rconn_exposure *exp, unsigned n, uint32_t remote_inv_rkey,
		struct rconn_wr *wr)
{
	struct ibv_send_wr wrs[RCONN_FENCE_MAX];
	unsigned nwr = 0;

	if (n > RCONN_FENCE_MAX)
		return -E2BIG; /* checked before any window is let go of */
	for (unsigned i = 0; i < n; i++) {
		struct rconn_mw *m = exp[i].mw;
		if (!m)
			continue;
		exp[i].mw = NULL;
		if (remote_inv_rkey && exp[i].rkey == remote_inv_rkey) {
			c->stats.remote_invalidates++;
			mw_put(c, m);
			continue;
		}
		wrs[nwr] = (struct ibv_send_wr){
			.opcode = IBV_WR_LOCAL_INV,
			.invalidate_rkey = exp[i].rkey,
		};
		if (nwr > 0)
			wrs[nwr - 1].next = &wrs[nwr];
		nwr++;
		/* The send queue orders any later bind of this window after the invalidation. */
		mw_put(c, m);
	}
	if (nwr == 0)
		return 1;
	wrs[nwr - 1].wr_id = (uintptr_t)wr;
	wrs[nwr - 1].send_flags = IBV_SEND_SIGNALED;

	int err = rconn_post_chain(c, wrs, nwr, wr);
	if (err) {
		/*
		 * The QP is failing or full. Nothing may reach the memory once
		 * the QP is destroyed, so let the teardown complete @wr.
		 */
		wr->seq = c->sq_posted;
		wr_track(c, wr);
		if (err == -EAGAIN)
			rconn_fail(c, RCONN_CLOSE_RESOURCES);
		return 0;
	}
	c->stats.local_invalidates += nwr;
	return 0;
}

/* ---- receives ---- */

static int recv_post(struct rconn *c, struct rconn_recv *r)
{
	struct gw_buf *buf = rdma_pool_alloc(rdma_dev_pool(c->dev), c->params.recv_size);

	if (!buf)
		return -ENOBUFS;
	struct ibv_sge sge = { .addr = (uintptr_t)buf->base,
			       .length = c->params.recv_size,
			       .lkey = buf->lkey };
	struct ibv_recv_wr rwr = { .wr_id = (uintptr_t)r, .sg_list = &sge, .num_sge = 1 };
	struct ibv_recv_wr *bad;
	int err = ibv_post_recv(c->id->qp, &rwr, &bad);
	if (err) {
		gw_buf_put(buf);
		return -err;
	}
	r->buf = buf;
	return 0;
}

/* Post every receive slot that is empty; remember the shortfall. */
static void recv_refill(struct rconn *c)
{
	c->recvs_owed = 0;
	for (uint32_t i = 0; i < c->params.recv_count; i++) {
		struct rconn_recv *r = &c->recvs[i];
		if (r->buf)
			continue;
		int err = recv_post(c, r);
		if (err == -ENOBUFS) {
			c->recvs_owed++;
		} else if (err) {
			gw_err("rdma: post_recv failed: %s", strerror(-err));
			rconn_fail(c, RCONN_CLOSE_TRANSPORT);
			return;
		}
	}
	if (c->recvs_owed) {
		c->stats.recv_buffer_shortages++;
		rdma_dev_wait_for_buffers(c->dev, &c->pool_waiter);
	}
}

static void rconn_pool_wake(struct rdma_pool_waiter *w)
{
	struct rconn *c = (struct rconn *)((char *)w - offsetof(struct rconn, pool_waiter));

	if (rconn_can_post(c) || c->state == RCONN_CONNECTING)
		recv_refill(c);
}

static void rconn_established(struct rconn *c, const uint8_t *pdata, uint8_t plen);

/*
 * Send With Invalidate, as providers report it. rxe (Soft-RoCE) passes the
 * kernel's IB_WC_WITH_INVALIDATE (1 << 2) through unchanged, and user space
 * reads that bit as IBV_WC_IP_CSUM_OK, which means nothing for a
 * reliable-connected receive: either bit is an invalidation. Missing it
 * would be worse than a crash-free close: the gateway would invalidate the
 * window again, which rxe in Linux 6.1 answers with a NULL dereference.
 */
enum { RCONN_WC_KERNEL_WITH_INV = 1u << 2 };

static bool wc_with_inv(const struct ibv_wc *wc)
{
	return (wc->wc_flags & (IBV_WC_WITH_INV | RCONN_WC_KERNEL_WITH_INV)) != 0;
}

static void recv_complete(struct rconn *c, struct rconn_recv *r, const struct ibv_wc *wc)
{
	struct gw_buf *buf = r->buf;

	r->buf = NULL;
	/*
	 * On the passive side the queue pair is ready to receive once
	 * rdma_accept() returns, and the client sends its first call as soon
	 * as it has the CM's REP, while the ESTABLISHED event waits for its
	 * RTU: the call can complete here before that event is read. A
	 * message is proof enough that the connection is up (as IB's
	 * "communication established" event says).
	 */
	if (wc->status == IBV_WC_SUCCESS && c->accepted && c->state == RCONN_CONNECTING)
		rconn_established(c, NULL, 0);
	if (wc->status != IBV_WC_SUCCESS || c->state != RCONN_CONNECTED) {
		gw_buf_put(buf);
		return;
	}
	c->stats.recvs++;
	/* Keep the receive queue full before the owner sees the message. */
	int err = recv_post(c, r);
	if (err == -ENOBUFS) {
		c->recvs_owed++;
		c->stats.recv_buffer_shortages++;
		rdma_dev_wait_for_buffers(c->dev, &c->pool_waiter);
	} else if (err) {
		gw_buf_put(buf);
		rconn_fail(c, RCONN_CLOSE_TRANSPORT);
		return;
	}
	uint32_t inv = wc_with_inv(wc) ? wc->invalidated_rkey : 0;
	c->ops->recv(c, c->owner, buf, wc->byte_len, inv);
}

/*
 * What a successful receive completion says about the peer. Only a plain
 * Send (or an allowed Send With Invalidate) of at most the receive size is
 * a message; NULL when it is one, else why not, for the log.
 */
static const char *recv_violation(const struct rconn *c, const struct ibv_wc *wc)
{
	if (wc->opcode == IBV_WC_RECV_RDMA_WITH_IMM)
		return "RDMA Write With Immediate";
	if (wc->opcode != IBV_WC_RECV)
		return "a receive completion of an unknown kind";
	if (wc_with_inv(wc) && !c->params.remote_invalidation)
		return "Send With Invalidate, which was not advertised";
	if (wc->byte_len > c->params.recv_size)
		return "a message longer than the receive buffer";
	return NULL;
}

/*
 * The peer broke the transport's rules: the buffer goes back unseen (it may
 * hold nothing of the peer's: a Write With Immediate lands elsewhere) and
 * the connection closes. Whatever the peer wrote into memory we exposed is
 * never delivered: the owner's calls end with the connection.
 */
static void recv_reject(struct rconn *c, struct rconn_recv *r, const struct ibv_wc *wc,
			const char *why)
{
	char peer[64] = "?";
	const struct sockaddr *sa = rconn_peer_addr(c);

	if (sa)
		getnameinfo(sa,
			    sa->sa_family == AF_INET6 ? sizeof(struct sockaddr_in6)
						      : sizeof(struct sockaddr_in),
			    peer, sizeof(peer), NULL, 0, NI_NUMERICHOST);
	gw_warn("rdma: %s: protocol violation by %s: %s (%u bytes): closing the connection",
		c->dev ? rdma_dev_name(c->dev) : "?", peer, why, wc->byte_len);
	c->stats.protocol_violations++;
	if (r->buf) {
		gw_buf_put(r->buf);
		r->buf = NULL;
	}
	rconn_fail(c, RCONN_CLOSE_PROTOCOL);
}

/* ---- completions ---- */

static void send_complete(struct rconn *c, const struct ibv_wc *wc)
{
	struct rconn_wr *wr = (struct rconn_wr *)(uintptr_t)wc->wr_id;

	if (!wr) {
		/* An unsignaled WR completes only when it failed. */
		if (wc->status != IBV_WC_WR_FLUSH_ERR)
			gw_err("rdma: unsignaled %s failed: %s",
			       wc->opcode == IBV_WC_BIND_MW ? "bind" : "work request",
			       ibv_wc_status_str(wc->status));
		rconn_fail(c, RCONN_CLOSE_TRANSPORT);
		return;
	}
	/* RC completes in order: this retires every WR posted before it. */
	if (wr->seq > c->sq_retired)
		c->sq_retired = wr->seq;
	wr_untrack(c, wr);
	if (wc->status != IBV_WC_SUCCESS) {
		if (wc->status != IBV_WC_WR_FLUSH_ERR)
			gw_err("rdma: %s: completion error: %s (vendor error %#x)",
			       rdma_dev_name(c->dev), ibv_wc_status_str(wc->status),
			       wc->vendor_err);
		rconn_fail(c, RCONN_CLOSE_TRANSPORT);
	}
	wr->done(wr, wc->status);
}

static void rconn_dispatch(struct rconn *c, const struct ibv_wc *wc)
{
	/*
	 * A receive is recognised by its wr_id pointing into the receive
	 * slots, never by the opcode: on error the opcode is not valid, and
	 * IBV_WC_RECV_RDMA_WITH_IMM shares IBV_WC_RECV's bit.
	 */
	uintptr_t id = (uintptr_t)wc->wr_id;
	uintptr_t lo = (uintptr_t)c->recvs;
	uintptr_t hi = lo + (uintptr_t)c->params.recv_count * sizeof(*c->recvs);
	bool is_recv = c->recvs && id >= lo && id < hi;
	if (is_recv && wc->status == IBV_WC_SUCCESS) {
		struct rconn_recv *r = (struct rconn_recv *)id;
		const char *why = recv_violation(c, wc);
		if (why && c->state < RCONN_CLOSING)
			recv_reject(c, r, wc, why);
		else
			recv_complete(c, r, wc);
		return;
	}
	if (is_recv) {
		if (wc->status != IBV_WC_WR_FLUSH_ERR) {
			gw_err("rdma: %s: receive failed: %s (vendor error %#x)%s",
			       rdma_dev_name(c->dev), ibv_wc_status_str(wc->status), wc->vendor_err,
			       wc->status == IBV_WC_LOC_LEN_ERR
				       ? ": the peer sent more than its inline threshold allows"
				       : "");
			rconn_fail(c, RCONN_CLOSE_TRANSPORT);
		}
		recv_complete(c, (struct rconn_recv *)id, wc);
		return;
	}
	send_complete(c, wc);
}

static int rconn_poll(struct rconn *c)
{
	struct ibv_wc wcs[16];
	int n, total = 0;

	while (c->cq && (n = ibv_poll_cq(c->cq, 16, wcs)) > 0) {
		for (int i = 0; i < n; i++)
			rconn_dispatch(c, &wcs[i]);
		total += n;
	}
	return total;
}

static void rconn_cq_event(struct rdma_cq_handler *h)
{
	struct rconn *c = (struct rconn *)((char *)h - offsetof(struct rconn, cq_handler));

	if (c->state >= RCONN_CLOSING && !c->cq)
		return;
	/* Poll, re-arm, poll again: a completion between the two is not lost. */
	rconn_poll(c);
	if (c->cq && ibv_req_notify_cq(c->cq, 0) == 0)
		rconn_poll(c);
}

/* ---- set-up ---- */

static int rconn_setup_queues(struct rconn *c)
{
	c->dev = rdma_ctx_device(c->ctx, c->id->verbs);
	if (!c->dev)
		return -ENODEV;

	const struct rdma_dev_caps *caps = rdma_dev_caps(c->dev);
	if (c->params.max_send_sge > (uint32_t)caps->max_sge)
		c->params.max_send_sge = (uint32_t)caps->max_sge;
	if (c->params.nmw && !caps->mw_type2) {
		gw_err("rdma: %s has no type 2 memory windows; per-RPC exposure needs them",
		       rdma_dev_name(c->dev));
		return -EOPNOTSUPP;
	}

	int cqe = (int)(c->params.send_depth + c->params.recv_count + 16);
	c->cq = ibv_create_cq(c->id->verbs, cqe, &c->cq_handler, rdma_dev_comp_channel(c->dev), 0);
	if (!c->cq)
		return -errno;
	if (ibv_req_notify_cq(c->cq, 0) != 0)
		return -EIO;

	struct ibv_qp_init_attr qa = {
		.send_cq = c->cq,
		.recv_cq = c->cq,
		.qp_type = IBV_QPT_RC,
		.sq_sig_all = 0,
		.cap = {
			.max_send_wr = c->params.send_depth,
			.max_recv_wr = c->params.recv_count + 1,
			.max_send_sge = c->params.max_send_sge,
			.max_recv_sge = 1,
		},
	};
	if (rdma_create_qp(c->id, rdma_dev_pd(c->dev), &qa) != 0)
		return -errno;

	c->recvs = calloc(c->params.recv_count, sizeof(*c->recvs));
	c->mws = calloc(c->params.nmw ? c->params.nmw : 1, sizeof(*c->mws));
	if (!c->recvs || !c->mws)
		return -ENOMEM;
	for (uint32_t i = 0; i < c->params.recv_count; i++)
		c->recvs[i].conn = c;
	for (uint32_t i = 0; i < c->params.nmw; i++) {
		struct rconn_mw *m = &c->mws[i];
		m->mw = ibv_alloc_mw(rdma_dev_pd(c->dev), IBV_MW_TYPE_2);
		if (!m->mw)
			return -errno ? -errno : -ENOMEM;
		m->rkey = m->mw->rkey;
		m->next_free = c->mw_free;
		c->mw_free = m;
	}
	/* Receives go up before the connection does: the peer may send at once. */
	recv_refill(c);
	return 0;
}

static void rconn_fill_conn_param(const struct rconn *c, struct rdma_conn_param *p)
{
	memset(p, 0, sizeof(*p));
	p->private_data = c->params.private_data_len ? c->params.private_data : NULL;
	p->private_data_len = c->params.private_data_len;
	p->responder_resources = c->params.responder_resources;
	p->initiator_depth = c->params.initiator_depth;
	p->retry_count = 7;
	p->rnr_retry_count = 7;
	p->flow_control = 1;
}

/* ---- teardown ---- */

static void rconn_release_resources(struct rconn *c)
{
	if (c->timer) {
		event_free(c->timer);
		c->timer = NULL;
	}
	if (c->dev)
		rdma_dev_cancel_wait(c->dev, &c->pool_waiter);
	/*
	 * Windows first: a type 2 window still bound (a call whose reply
	 * never came) holds its queue pair, and rxe's destroy then waits for
	 * that reference for tens of seconds, the whole event loop with it.
	 * Deallocated, no window reaches our memory any more either.
	 */
	for (uint32_t i = 0; c->mws && i < c->params.nmw; i++) {
		if (c->mws[i].mw)
			ibv_dealloc_mw(c->mws[i].mw);
		c->mws[i].mw = NULL;
	}
	if (c->id && c->id->qp) {
		/* After this the device touches none of our memory. */
		rdma_destroy_qp(c->id);
	}
	/* Completions generated before the destroy still carry real statuses. */
	rconn_poll(c);
	while (c->outstanding) {
		struct rconn_wr *wr = c->outstanding;
		wr_untrack(c, wr);
		wr->done(wr, IBV_WC_WR_FLUSH_ERR);
	}
	c->sq_retired = c->sq_posted;
	for (uint32_t i = 0; c->recvs && i < c->params.recv_count; i++) {
		if (c->recvs[i].buf) {
			gw_buf_put(c->recvs[i].buf);
			c->recvs[i].buf = NULL;
		}
	}
	if (c->cq) {
		ibv_destroy_cq(c->cq);
		c->cq = NULL;
	}
}

static void rconn_teardown_cb(evutil_socket_t fd, short what, void *arg)
{
	struct rconn *c = arg;

	rconn_release_resources(c);
	c->state = RCONN_CLOSED;
	/* The owner may call rconn_destroy() from here. */
	c->ops->closed(c, c->owner, c->reason);
}

/*
 * Start closing: tell the peer (DREQ) and run the teardown from the loop,
 * never from inside a completion or CM handler that is still using @c.
 */
static void rconn_fail(struct rconn *c, enum rconn_close_reason reason)
{
	if (c->state >= RCONN_CLOSING)
		return;
	bool was_connected = c->state == RCONN_CONNECTED;
	c->state = RCONN_CLOSING;
	c->reason = reason;
	if (was_connected && c->id)
		rdma_disconnect(c->id);
	event_active(c->teardown, 0, 0);
}

void rconn_close(struct rconn *c)
{
	rconn_fail(c, RCONN_CLOSE_LOCAL);
}

void rconn_destroy(struct rconn *c)
{
	if (!c)
		return;
	if (c->state < RCONN_CLOSED)
		rconn_release_resources(c);
	if (c->id) {
		c->id->context = NULL;
		rdma_destroy_id(c->id);
	}
	if (c->teardown)
		event_free(c->teardown);
	free(c->recvs);
	free(c->mws);
	free(c);
}

/* ---- CM events ---- */

static enum rconn_close_reason reason_for_event(enum rdma_cm_event_type t)
{
	switch (t) {
	case RDMA_CM_EVENT_REJECTED:
		return RCONN_CLOSE_REJECTED;
	case RDMA_CM_EVENT_DISCONNECTED:
		return RCONN_CLOSE_DISCONNECTED;
	case RDMA_CM_EVENT_DEVICE_REMOVAL:
		return RCONN_CLOSE_DEVICE;
	default:
		return RCONN_CLOSE_UNREACHABLE;
	}
}

static void rconn_cm_event(struct rdma_cm_handler *h, struct rdma_cm_event *ev)
{
	struct rconn *c = (struct rconn *)h;
	enum rdma_cm_event_type type = ev->event;
	int status = ev->status;
	uint8_t pdata[256];
	uint8_t plen = 0;

	if (type == RDMA_CM_EVENT_ESTABLISHED && ev->param.conn.private_data) {
		plen = ev->param.conn.private_data_len;
		memcpy(pdata, ev->param.conn.private_data, plen);
	}
	if (type == RDMA_CM_EVENT_ESTABLISHED && !c->accepted) {
		/* What the server granted for our RDMA Reads at it. */
		c->initiator_depth = ev->param.conn.initiator_depth;
	}
	/* Acknowledge first: rdma_destroy_id() waits for unacknowledged events. */
	rdma_ack_cm_event(ev);
	gw_debug("rdma: cm event %s (status %d)", rdma_event_str(type), status);

	if (c->state >= RCONN_CLOSING)
		return;

	int err = 0;
	struct rdma_conn_param cp;
	switch (type) {
	case RDMA_CM_EVENT_ADDR_RESOLVED:
		c->state = RCONN_RESOLVING_ROUTE;
		if (rdma_resolve_route(c->id, (int)c->params.connect_timeout_ms) != 0)
			rconn_fail(c, RCONN_CLOSE_UNREACHABLE);
		break;
	case RDMA_CM_EVENT_ROUTE_RESOLVED:
		c->state = RCONN_CONNECTING;
		err = rconn_setup_queues(c);
		if (err) {
			gw_err("rdma: cannot set up a connection: %s", strerror(-err));
			rconn_fail(c, RCONN_CLOSE_RESOURCES);
			break;
		}
		rconn_fill_conn_param(c, &cp);
		if (rdma_connect(c->id, &cp) != 0) {
			gw_err("rdma: rdma_connect: %s", strerror(errno));
			rconn_fail(c, RCONN_CLOSE_UNREACHABLE);
		}
		break;
	case RDMA_CM_EVENT_ESTABLISHED:
		/* An accepted connection may have been established by its first message. */
		if (c->state == RCONN_CONNECTING)
			rconn_established(c, pdata, plen);
		break;
	case RDMA_CM_EVENT_TIMEWAIT_EXIT:
	case RDMA_CM_EVENT_ADDR_CHANGE:
		break;
	default:
		if (type == RDMA_CM_EVENT_REJECTED || type == RDMA_CM_EVENT_UNREACHABLE ||
		    type == RDMA_CM_EVENT_CONNECT_ERROR || type == RDMA_CM_EVENT_ADDR_ERROR ||
		    type == RDMA_CM_EVENT_ROUTE_ERROR)
			gw_info("rdma: connection failed: %s (status %d)", rdma_event_str(type),
				status);
		rconn_fail(c, reason_for_event(type));
		break;
	}
}

static void rconn_established(struct rconn *c, const uint8_t *pdata, uint8_t plen)
{
	c->state = RCONN_CONNECTED;
	if (c->timer)
		event_del(c->timer);
	if (c->recvs_owed)
		recv_refill(c);
	c->ops->established(c, c->owner, pdata, plen);
}

static void rconn_timeout(evutil_socket_t fd, short what, void *arg)
{
	struct rconn *c = arg;

	if (c->state < RCONN_CONNECTED)
		rconn_fail(c, RCONN_CLOSE_TIMEOUT);
}

/*
 * The connect deadline, for both sides: a peer that never finishes the CM
 * exchange (a client that never sends its RTU) must not hold a queue pair
 * and its receive buffers for ever.
 */
static void rconn_start_timer(struct rconn *c)
{
	uint32_t ms = c->params.connect_timeout_ms;

	if (!ms)
		return;
	c->timer = evtimer_new(rdma_ctx_base(c->ctx), rconn_timeout, c);
	if (c->timer) {
		struct timeval tv = gw_ms_timeval(ms);
		evtimer_add(c->timer, &tv);
	}
}

static struct rconn *rconn_alloc(struct rdma_ctx *ctx, const struct rconn_params *params,
				 const struct rconn_ops *ops, void *owner)
{
	struct rconn *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	c->cm_handler.handle = rconn_cm_event;
	c->cq_handler.handle = rconn_cq_event;
	c->pool_waiter.fn = rconn_pool_wake;
	c->ctx = ctx;
	c->params = *params;
	c->ops = ops;
	c->owner = owner;
	c->teardown = event_new(rdma_ctx_base(ctx), -1, 0, rconn_teardown_cb, c);
	if (!c->teardown) {
		free(c);
		return NULL;
	}
	return c;
}

/*
 * Bind @id to a free port below 1024 (from 1023 down to 512, the range
 * bindresvport uses) on the wildcard address of @dst's family.
 */
static int rconn_bind_reserved(struct rdma_cm_id *id, const struct sockaddr *dst)
{
	struct sockaddr_storage ss;

	for (uint16_t port = 1023; port >= 512; port--) {
		memset(&ss, 0, sizeof(ss));
		ss.ss_family = dst->sa_family;
		if (dst->sa_family == AF_INET6)
			((struct sockaddr_in6 *)&ss)->sin6_port = htons(port);
		else
			((struct sockaddr_in *)&ss)->sin_port = htons(port);
		if (rdma_bind_addr(id, (struct sockaddr *)&ss) == 0)
			return 0;
		/* rdma_cm says EADDRNOTAVAIL for a port that is taken. */
		if (errno != EADDRINUSE && errno != EADDRNOTAVAIL)
			return -errno;
	}
	return -EADDRINUSE;
}

struct rconn *rconn_connect(struct rdma_ctx *ctx, const struct sockaddr *dst,
			    const struct sockaddr *src, const struct rconn_params *params,
			    const struct rconn_ops *ops, void *owner)
{
	struct rconn *c = rconn_alloc(ctx, params, ops, owner);

	if (!c)
		return NULL;
	if (rdma_create_id(rdma_ctx_cm_channel(ctx), &c->id, &c->cm_handler, RDMA_PS_TCP) != 0) {
		gw_err("rdma: rdma_create_id: %s", strerror(errno));
		c->id = NULL;
		rconn_destroy(c);
		return NULL;
	}
	c->state = RCONN_RESOLVING_ADDR;
	rconn_start_timer(c);
	if (params->reserved_port && !src) {
		int err = rconn_bind_reserved(c->id, dst);
		if (err) {
			gw_err("rdma: no reserved source port free: %s", strerror(-err));
			rconn_fail(c, RCONN_CLOSE_RESOURCES);
			return c;
		}
	}
	if (rdma_resolve_addr(
		    c->id, (struct sockaddr *)src, (struct sockaddr *)dst,
		    (int)(params->connect_timeout_ms ? params->connect_timeout_ms : 5000)) != 0) {
		gw_err("rdma: rdma_resolve_addr: %s", strerror(errno));
		rconn_fail(c, RCONN_CLOSE_UNREACHABLE);
	}
	return c;
}

bool rconn_is_connected(const struct rconn *c)
{
	return c->state == RCONN_CONNECTED;
}

struct rdma_dev *rconn_device(const struct rconn *c)
{
	return c->dev;
}

const struct sockaddr *rconn_peer_addr(const struct rconn *c)
{
	return c->id ? rdma_get_peer_addr(c->id) : NULL;
}

const struct sockaddr *rconn_local_addr(const struct rconn *c)
{
	return c->id ? rdma_get_local_addr(c->id) : NULL;
}

void rconn_set_owner(struct rconn *c, const struct rconn_ops *ops, void *owner)
{
	c->ops = ops;
	c->owner = owner;
}

uint8_t rconn_initiator_depth(const struct rconn *c)
{
	return c->initiator_depth;
}

struct ibv_qp *rconn_qp(const struct rconn *c)
{
	return c->state == RCONN_CONNECTED && c->id ? c->id->qp : NULL;
}

void rconn_get_stats(const struct rconn *c, struct rconn_stats *out)
{
	*out = c->stats;
	out->sq_used = (uint32_t)(c->sq_posted - c->sq_retired);
	out->mw_in_use = c->mw_in_use;
}

/* ---- listening ---- */

static void rlistener_connect_request(struct rlistener *l, struct rdma_cm_event *ev)
{
	struct rdma_cm_id *id = ev->id;
	struct rdma_conn_param req = ev->param.conn;
	uint8_t pdata[256];
	uint8_t plen = req.private_data_len;

	if (req.private_data && plen)
		memcpy(pdata, req.private_data, plen);
	else
		plen = 0;
	rdma_ack_cm_event(ev);

	/*
	 * The connection exists before the owner is asked, so that an owner
	 * made by the accept callback always gets its closed() callback.
	 */
	struct rconn *c = rconn_alloc(l->ctx, &l->defaults, NULL, NULL);
	if (!c) {
		rdma_reject(id, NULL, 0);
		rdma_destroy_id(id);
		return;
	}
	struct rconn_params params = l->defaults;
	const struct rconn_ops *ops = NULL;
	void *owner = NULL;
	if (!l->ops->accept(l, l->owner, rdma_get_peer_addr(id), pdata, plen, &req, &params, &ops,
			    &owner)) {
		rdma_reject(id, NULL, 0);
		rdma_destroy_id(id);
		rconn_destroy(c);
		return;
	}
	c->params = params;
	rconn_set_owner(c, ops, owner);
	c->id = id;
	c->accepted = true;
	id->context = &c->cm_handler;
	c->state = RCONN_CONNECTING;
	rconn_start_timer(c);

	/*
	 * The CM reports the request from this side: its initiator_depth is
	 * the client's responder resources, i.e. the RDMA Reads we may have
	 * outstanding at it, and its responder_resources the client's
	 * initiator depth, its Reads at us. Our own limits bound both.
	 */
	uint8_t ord = req.initiator_depth;
	if (ord > c->params.initiator_depth)
		ord = c->params.initiator_depth;
	c->initiator_depth = ord;

	int err = rconn_setup_queues(c);
	if (err) {
		gw_err("rdma: cannot set up an accepted connection: %s", strerror(-err));
		rdma_reject(id, NULL, 0);
		rconn_fail(c, RCONN_CLOSE_RESOURCES);
		return;
	}
	struct rdma_conn_param cp;
	rconn_fill_conn_param(c, &cp);
	cp.initiator_depth = ord;
	cp.responder_resources = req.responder_resources < c->params.responder_resources
					 ? req.responder_resources
					 : c->params.responder_resources;
	if (rdma_accept(id, &cp) != 0) {
		gw_err("rdma: rdma_accept: %s", strerror(errno));
		rconn_fail(c, RCONN_CLOSE_RESOURCES);
	}
}

static void rlistener_cm_event(struct rdma_cm_handler *h, struct rdma_cm_event *ev)
{
	struct rlistener *l = (struct rlistener *)h;

	if (ev->event == RDMA_CM_EVENT_CONNECT_REQUEST) {
		rlistener_connect_request(l, ev);
		return;
	}
	gw_warn("rdma: listener event %s", rdma_event_str(ev->event));
	rdma_ack_cm_event(ev);
}

struct rlistener *rlistener_create(struct rdma_ctx *ctx, const struct sockaddr *addr, int backlog,
				   const struct rconn_params *defaults,
				   const struct rlistener_ops *ops, void *owner)
{
	struct rlistener *l = calloc(1, sizeof(*l));

	if (!l)
		return NULL;
	l->cm_handler.handle = rlistener_cm_event;
	l->ctx = ctx;
	l->defaults = *defaults;
	l->ops = ops;
	l->owner = owner;
	if (rdma_create_id(rdma_ctx_cm_channel(ctx), &l->id, &l->cm_handler, RDMA_PS_TCP) != 0) {
		gw_err("rdma: rdma_create_id: %s", strerror(errno));
		free(l);
		return NULL;
	}
	if (rdma_bind_addr(l->id, (struct sockaddr *)addr) != 0 ||
	    rdma_listen(l->id, backlog) != 0) {
		gw_err("rdma: cannot listen: %s", strerror(errno));
		rdma_destroy_id(l->id);
		free(l);
		return NULL;
	}
	return l;
}

void rlistener_destroy(struct rlistener *l)
{
	if (!l)
		return;
	rdma_destroy_id(l->id);
	free(l);
}
