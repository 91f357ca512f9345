/* SPDX-License-Identifier: MIT */
/*
 * rdma/conn_priv.h - what the two halves of an RDMA connection share:
 *
 *   conn.c     its life: queues and set-up, the CM events, connect, accept
 *              and listen, the connect timer, teardown
 *   conn_io.c  its data path: work requests posted and tracked, memory
 *              windows bound and fenced, receives posted, checked and
 *              delivered, completions polled
 *
 * Internal to rdma/conn*.c; everything else sees rdma/conn.h.
 */
#ifndef GW_RDMA_CONN_PRIV_H
#define GW_RDMA_CONN_PRIV_H

#include "rdma/conn.h"

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
	bool bind_queued; /* its bind waits in rconn.waiting for the next post */
};

/*
 * Unsignaled work requests that must precede a later one (a window's bind,
 * the Send that advertises it; the RDMA Writes of a reply, its Send) wait
 * for it, so that all go in one ibv_post_send(): one doorbell, which on
 * Soft-RoCE is one write() system call. At most RCONN_WAIT_MAX wait, a
 * Write with at most RCONN_WAIT_SGE pieces (its list is copied).
 */
enum { RCONN_WAIT_MAX = 8, RCONN_WAIT_SGE = 4 };

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
	uint32_t mw_lost; /* slots left empty: no window could replace one (rconn_withdraw()) */

	/* Send queue accounting: WRs posted, and the count retired by completions. */
	uint64_t sq_posted;
	uint64_t sq_retired;
	struct rconn_wr *outstanding; /* signaled WRs not completed yet */

	/* WRs waiting for the next post (see RCONN_WAIT_MAX), counted in sq_posted. */
	struct ibv_send_wr waiting[RCONN_WAIT_MAX];
	struct ibv_sge waiting_sge[RCONN_WAIT_MAX][RCONN_WAIT_SGE];
	struct rconn_mw *waiting_mw[RCONN_WAIT_MAX]; /* a bind's window, else NULL */
	unsigned nwaiting;

	struct event *timer;	/* connect timeout */
	struct event *teardown; /* deferred teardown */
	struct event *cq_more;	/* the next completion pass, while the CQ is not armed */
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

/* conn_io.c */
void rconn_wr_untrack(struct rconn *c, struct rconn_wr *wr);
void rconn_recv_refill(struct rconn *c);
void rconn_pool_wake(struct rdma_pool_waiter *w);
int rconn_poll(struct rconn *c);
void rconn_cq_event(struct rdma_cq_handler *h);
void rconn_cq_more(evutil_socket_t fd, short what, void *arg);

/* conn.c */
void rconn_fail(struct rconn *c, enum rconn_close_reason reason);
void rconn_established(struct rconn *c, const uint8_t *pdata, uint8_t plen);

#endif /* GW_RDMA_CONN_PRIV_H */
