/* SPDX-License-Identifier: MIT */
/*
 * rdma/conn_io.c - an RDMA connection's data path: Sends, RDMA Reads and
 * Writes posted and tracked until they complete, memory windows bound and
 * fenced, receives posted and checked (only a real Send is a message)
 * before the owner sees them, and completions polled in batches.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>

#include "common/addr_text.h"
#include "common/clock.h"
#include "common/log.h"
#include "common/turns.h"
#include "rdma/conn_priv.h"

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

void rconn_wr_untrack(struct rconn *c, struct rconn_wr *wr)
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
	return c->params.nmw - c->mw_lost - c->mw_in_use;
}

/*
 * Put the waiting WRs in front of @first (NULL: post them alone) and
 * return the head of the chain to post.
 */
static struct ibv_send_wr *waiting_prepend(struct rconn *c, struct ibv_send_wr *first)
{
	if (c->nwaiting == 0)
		return first;
	for (unsigned i = 0; i + 1 < c->nwaiting; i++)
		c->waiting[i].next = &c->waiting[i + 1];
	c->waiting[c->nwaiting - 1].next = first;
	return &c->waiting[0];
}

/*
 * The waiting WRs reached the provider. It names a window by ibv_mw.rkey
 * (the rkey a bind replaces) when it converts the bind, so the field takes
 * the new rkey only now.
 */
static void waiting_posted(struct rconn *c)
{
	for (unsigned i = 0; i < c->nwaiting; i++) {
		struct rconn_mw *m = c->waiting_mw[i];
		if (!m)
			continue;
		m->mw->rkey = c->waiting[i].bind_mw.rkey;
		m->bind_queued = false;
	}
	c->nwaiting = 0;
}

/* One ibv_post_send() of @head; a failure means the QP is unusable. */
static int rconn_post_wrs(struct rconn *c, struct ibv_send_wr *head, struct rconn_wr *wr)
{
	struct ibv_send_wr *bad = NULL;

	if (wr)
		wr_track(c, wr);
	int err = ibv_post_send(c->id->qp, head, &bad);
	waiting_posted(c);
	if (err) {
		gw_err("rdma: post_send failed: %s", strerror(err));
		if (wr)
			rconn_wr_untrack(c, wr);
		rconn_fail(c, RCONN_CLOSE_TRANSPORT);
		return -err;
	}
	return 0;
}

/*
 * Post a chain of @n send-queue WRs whose last one may be signaled with
 * @wr, behind the WRs waiting for it (their space is taken already).
 */
static int rconn_post_chain(struct rconn *c, struct ibv_send_wr *first, unsigned n,
			    struct rconn_wr *wr)
{
	if (!rconn_can_post(c))
		return -ENOTCONN;
	if (rconn_sq_space(c) < n)
		return -EAGAIN;
	c->sq_posted += n;
	return rconn_post_wrs(c, waiting_prepend(c, first), wr);
}

/*
 * Let unsignaled @swr (a bind of @m, or with @m NULL a Write of at most
 * RCONN_WAIT_SGE pieces) wait for the next post. A window's second bind
 * must not share a post with its first (the provider reads the rkey to
 * replace from the window), nor may more than RCONN_WAIT_MAX wait: then
 * what waits is posted alone first.
 */
static int rconn_wait_post(struct rconn *c, struct rconn_mw *m, const struct ibv_send_wr *swr)
{
	if (!rconn_can_post(c))
		return -ENOTCONN;
	if (rconn_sq_space(c) < 1)
		return -EAGAIN;
	if ((m && m->bind_queued) || c->nwaiting == RCONN_WAIT_MAX) {
		int err = rconn_post_wrs(c, waiting_prepend(c, NULL), NULL);
		if (err)
			return err;
	}
	unsigned i = c->nwaiting++;
	c->waiting[i] = *swr;
	c->waiting[i].next = NULL;
	if (swr->num_sge > 0) {
		memcpy(c->waiting_sge[i], swr->sg_list,
		       sizeof(*swr->sg_list) * (size_t)swr->num_sge);
		c->waiting[i].sg_list = c->waiting_sge[i];
	}
	c->waiting_mw[i] = m;
	if (m)
		m->bind_queued = true;
	c->sq_posted++;
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
	int err;

	if (nsge > c->params.max_send_sge)
		return -EINVAL;
	if (!wr && nsge <= RCONN_WAIT_SGE) {
		/* Unsignaled: a Send follows it (rconn.h); both go to the device at once. */
		struct ibv_send_wr swr = {
			.sg_list = (struct ibv_sge *)sge,
			.num_sge = (int)nsge,
			.opcode = IBV_WR_RDMA_WRITE,
			.wr.rdma = { .remote_addr = raddr, .rkey = rkey },
		};
		err = rconn_wait_post(c, NULL, &swr);
	} else {
		err = rconn_rdma(c, IBV_WR_RDMA_WRITE, sge, nsge, rkey, raddr, wr);
	}
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

	/*
	 * A bind posted on the send queue does not update ibv_mw.rkey (only
	 * ibv_bind_mw() does, for type 1), yet providers name the window by
	 * that field in the next bind: waiting_posted() sets it to @rkey.
	 */
	int err = rconn_wait_post(c, m, &swr);
	if (err)
		return err;
	c->mw_free = m->next_free;
	m->next_free = NULL;
	m->rkey = rkey;
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

/*
 * A window replaced: the old one deallocated (after ibv_dealloc_mw() returns
 * the device reaches nothing through it), a new one allocated in its place
 * and freed for the next bind. Without a new one the slot stays empty and
 * the connection has one window fewer.
 */
static void mw_replace(struct rconn *c, struct rconn_mw *m)
{
	struct ibv_pd *pd = m->mw->pd;

	ibv_dealloc_mw(m->mw);
	m->mw = ibv_alloc_mw(pd, IBV_MW_TYPE_2);
	c->stats.windows_replaced++;
	if (!m->mw) {
		gw_warn("rdma: %s: no memory window to replace one given up: %u left",
			c->dev ? rdma_dev_name(c->dev) : "?", c->params.nmw - c->mw_lost - 1);
		m->bound = false;
		c->mw_in_use--;
		c->mw_lost++;
		return;
	}
	m->rkey = m->mw->rkey;
	mw_put(c, m);
}

int rconn_withdraw(struct rconn *c, struct rconn_exposure *exp, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		if (exp[i].mw && exp[i].mw->bind_queued)
			return -EBUSY; /* never advertised: rconn_fence() is the way */
	for (unsigned i = 0; i < n; i++) {
		struct rconn_mw *m = exp[i].mw;
		if (!m)
			continue;
		exp[i].mw = NULL;
		mw_replace(c, m);
	}
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
void rconn_recv_refill(struct rconn *c)
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

void rconn_pool_wake(struct rdma_pool_waiter *w)
{
	struct rconn *c = (struct rconn *)((char *)w - offsetof(struct rconn, pool_waiter));

	if (rconn_can_post(c) || c->state == RCONN_CONNECTING)
		rconn_recv_refill(c);
}

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
 * The peer broke the transport's rules: logged with its address, counted,
 * and the connection closes. Whatever the peer wrote into memory we exposed
 * is never delivered: the owner's calls end with the connection.
 */
void rconn_violation(struct rconn *c, const char *why, uint32_t len)
{
	char peer[GW_ADDR_TEXT_MAX];

	if (c->state >= RCONN_CLOSING)
		return;
	gw_addr_text(rconn_peer_addr(c), peer, sizeof(peer));
	gw_warn("rdma: %s: protocol violation by %s: %s (%u bytes): closing the connection",
		c->dev ? rdma_dev_name(c->dev) : "?", peer, why, len);
	c->stats.protocol_violations++;
	rconn_fail(c, RCONN_CLOSE_PROTOCOL);
}

/*
 * A message that breaks the rules: its buffer goes back unseen (it may
 * hold nothing of the peer's: a Write With Immediate lands elsewhere).
 */
static void recv_reject(struct rconn *c, struct rconn_recv *r, const struct ibv_wc *wc,
			const char *why)
{
	if (r->buf) {
		gw_buf_put(r->buf);
		r->buf = NULL;
	}
	rconn_violation(c, why, wc->byte_len);
}

/* ---- completions ---- */

/*
 * A send-queue work request failed: the connection goes. A flush while the
 * connection was up is the first sign that the queue pair went into error
 * without a failed request of ours to say why: the peer disconnected or
 * failed its side (the CM's event may follow), which the log says, since
 * the close reason ("transport error") cannot.
 */
static void send_failed(struct rconn *c, const struct ibv_wc *wc)
{
	if (wc->status == IBV_WC_WR_FLUSH_ERR) {
		if (c->state == RCONN_CONNECTED) {
			char peer[GW_ADDR_TEXT_MAX];
			gw_addr_text(rconn_peer_addr(c), peer, sizeof(peer));
			gw_warn("rdma: %s: work requests flushed with no error of ours first: the "
				"queue pair went into error under us (%s disconnected or failed "
				"its side of the connection)",
				c->dev ? rdma_dev_name(c->dev) : "?", peer);
		}
	} else if (wc->wr_id == 0) {
		gw_err("rdma: unsignaled %s failed: %s",
		       wc->opcode == IBV_WC_BIND_MW ? "bind" : "work request",
		       ibv_wc_status_str(wc->status));
	} else {
		gw_err("rdma: %s: completion error: %s (vendor error %#x)",
		       c->dev ? rdma_dev_name(c->dev) : "?", ibv_wc_status_str(wc->status),
		       wc->vendor_err);
	}
	rconn_fail(c, RCONN_CLOSE_TRANSPORT);
}

static void send_complete(struct rconn *c, const struct ibv_wc *wc)
{
	struct rconn_wr *wr = (struct rconn_wr *)(uintptr_t)wc->wr_id;

	if (!wr) {
		/* An unsignaled WR completes only when it failed. */
		send_failed(c, wc);
		return;
	}
	/* RC completes in order: this retires every WR posted before it. */
	if (wr->seq > c->sq_retired)
		c->sq_retired = wr->seq;
	rconn_wr_untrack(c, wr);
	if (wc->status != IBV_WC_SUCCESS)
		send_failed(c, wc);
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

/* Take at most max completions (max 0: until the CQ is empty); returns how many. */
static int rconn_poll_upto(struct rconn *c, int max)
{
	struct ibv_wc wcs[16];
	int n, total = 0;

	while (c->cq && (max == 0 || total < max)) {
		int want = max == 0 || max - total > 16 ? 16 : max - total;

		n = ibv_poll_cq(c->cq, want, wcs);
		if (n <= 0)
			break;
		for (int i = 0; i < n; i++)
			rconn_dispatch(c, &wcs[i]);
		total += n;
	}
	return total;
}

/* Every completion there is: at teardown, where nothing else is waiting for the loop. */
int rconn_poll(struct rconn *c)
{
	return rconn_poll_upto(c, 0);
}

/*
 * The next completion pass in a later turn of the loop. A timer of zero,
 * not event_active(): an event made active from a callback runs in the
 * same pass, before the loop looks at the sockets again, so a flood of
 * completions would still hold every client's ready socket.
 */
static void rconn_cq_yield(struct rconn *c)
{
	static const struct timeval now = { 0, 0 };

	c->stats.cq_yields++;
	evtimer_add(c->cq_more, &now);
}

/*
 * One bounded pass over the CQ. Under a flood, each completion can send a
 * reply and post the next queued call, whose completion comes in turn:
 * polling until the CQ is empty could run for as long as the flood lasts,
 * while other clients' calls wait in their sockets. So a pass takes at
 * most params.cq_budget completions; one that takes them all leaves the CQ
 * unarmed (it may hold more, and no event would come for those) and comes
 * back through cq_more. Only a pass that finds the CQ empty re-arms it,
 * then polls again: a completion between that poll and the arming raises
 * no event, and would otherwise wait for the next one.
 *
 * The budget (params.cq_budget): by default 32 completions, two polls of
 * 16, a few tens of microseconds of work on hardware; enough that a
 * connection at its credit limit refills its pipeline in one pass. A
 * route's turn_budget sets it lower where other clients' latency matters
 * more than one connection's throughput, and its turn_budget_contended
 * (params.cq_budget_contended) while the loop serves more than one client.
 */
static void rconn_cq_pass(struct rconn *c)
{
	int budget = (int)gw_turns_budget(c->params.cq_budget ? c->params.cq_budget
							      : RCONN_CQ_BUDGET_DEFAULT,
					  c->params.cq_budget_contended);

	if (evtimer_pending(c->cq_more, NULL))
		evtimer_del(c->cq_more);
	if (rconn_poll_upto(c, budget) == budget) {
		rconn_cq_yield(c);
		return;
	}
	if (c->cq && ibv_req_notify_cq(c->cq, 0) == 0 && rconn_poll_upto(c, budget) == budget)
		rconn_cq_yield(c);
}

void rconn_cq_event(struct rdma_cq_handler *h)
{
	struct rconn *c = (struct rconn *)((char *)h - offsetof(struct rconn, cq_handler));

	if (c->state >= RCONN_CLOSING && !c->cq)
		return;
	rconn_cq_pass(c);
}

void rconn_cq_more(evutil_socket_t fd, short what, void *arg)
{
	struct rconn *c = arg;

	(void)fd;
	(void)what;
	if (!c->cq)
		return;
	/* The completions polled here share one clock reading (common/clock.h). */
	gw_clock_pass_begin();
	rconn_cq_pass(c);
	gw_clock_pass_end();
}
