/* SPDX-License-Identifier: MIT */
/*
 * rdma/conn.h - reliable-connected RDMA connections on librdmacm + libibverbs.
 *
 * An rconn is one RC queue pair with its own completion queue, made either
 * by connecting (the gateway as RPC-over-RDMA requester, forward mode) or by
 * accepting on an rlistener (responder, reverse mode). It knows nothing of
 * RPC: the owner gives it private data for the CM exchange and is told
 * about the peer's, receives arrive as gw_bufs, and the owner posts sends,
 * RDMA Reads and Writes, and exposes memory for one RPC at a time.
 *
 * Receives. The connection keeps @recv_count receives posted at all times.
 * A completed receive is handed to the owner with its buffer reference; a
 * replacement is allocated from the device pool and posted before the owner
 * sees the message, so the owner may hold the buffer as long as it needs.
 * Only a real Send is a message: a receive completed by RDMA Write With
 * Immediate (whose byte_len is the Write's, not the receive's), by a Send
 * With Invalidate the connection did not allow, or claiming more bytes than
 * the receive buffer holds, closes the connection with
 * RCONN_CLOSE_PROTOCOL; its buffer is never handed to the owner.
 *
 * Connecting. Both an outgoing and an accepted connection that is not
 * established within @connect_timeout_ms closes with RCONN_CLOSE_TIMEOUT:
 * a peer that never finishes the CM exchange holds nothing for long.
 *
 * Work requests. Each signaled operation carries an rconn_wr embedded in the
 * owner's state; its done() runs from the completion handler exactly once,
 * with the completion's status. Binds, and Writes that precede a Send, are
 * posted unsignaled: RC queues complete in order, so the next signaled
 * completion retires them. They wait for the next work request posted and
 * go to the device with it, in one ibv_post_send(): one doorbell (on
 * Soft-RoCE, one write() system call) for the bind or the Writes and the
 * Send. Send-queue space is accounted per WR, a waiting one included;
 * rconn_sq_space() says how many WRs fit now.
 *
 * Exposure. rconn_expose() binds a type 2 memory window over exactly the
 * bytes of one chunk with only the access needed and a fresh rkey.
 * rconn_fence() invalidates the windows of an RPC (skipping one the peer
 * invalidated with Send With Invalidate); the buffers may be reused when
 * its rconn_wr completes. Windows go back to the connection's set at once:
 * the send queue orders a later bind after the invalidation.
 *
 * Teardown. rconn_close() disconnects at once (rdma_disconnect() moves the
 * queue pair to the error state: from then on the peer reaches none of our
 * memory) and tears down from the event loop: the queue pair is destroyed
 * (after which the device touches none of our memory either), every
 * outstanding rconn_wr completes with IBV_WC_WR_FLUSH_ERR, and then
 * ops->closed runs, with RCONN_CLOSE_LOCAL when the owner asked for the
 * close. The owner frees the rconn with rconn_destroy() when it has let go
 * of its state.
 */
#ifndef GW_RDMA_CONN_H
#define GW_RDMA_CONN_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

#include <infiniband/verbs.h>

#include "common/buf.h"
#include "rdma/device.h"

struct rconn;
struct rlistener;

enum { RCONN_PRIVDATA_MAX = 56, RCONN_CQ_BUDGET_DEFAULT = 32 };

struct rconn_params {
	uint32_t recv_count;	     /* receives kept posted */
	uint32_t recv_size;	     /* bytes per receive buffer */
	uint32_t send_depth;	     /* send queue work requests */
	uint32_t max_send_sge;	     /* scatter/gather entries per send */
	uint32_t nmw;		     /* memory windows for exposing chunks */
	uint8_t responder_resources; /* RDMA Reads the peer may have at us */
	uint8_t initiator_depth;     /* RDMA Reads we may have at the peer */
	uint32_t connect_timeout_ms;
	/* Connect from a port below 1024, as kernel NFS clients do. */
	bool reserved_port;
	/*
	 * The peer may use Send With Invalidate (we advertised it, RFC 8797).
	 * When false, such a Send is a protocol violation.
	 */
	bool remote_invalidation;
	/*
	 * Completions one pass over the CQ takes before the connection yields
	 * to the loop's other events (0: RCONN_CQ_BUDGET_DEFAULT).
	 */
	uint32_t cq_budget;
	/*
	 * The budget while the worker's loop serves more than one client
	 * (common/turns.h); 0: cq_budget always. The connection itself never
	 * counts as a client there: its completions are every client's.
	 */
	uint32_t cq_budget_contended;
	uint8_t private_data[RCONN_PRIVDATA_MAX];
	uint8_t private_data_len;
};

enum rconn_close_reason {
	RCONN_CLOSE_LOCAL = 0,	  /* rconn_close() by the owner */
	RCONN_CLOSE_DISCONNECTED, /* peer disconnected */
	RCONN_CLOSE_REJECTED,	  /* connect refused by the peer */
	RCONN_CLOSE_UNREACHABLE,  /* address, route or connect failed */
	RCONN_CLOSE_TIMEOUT,	  /* connect did not finish in time */
	RCONN_CLOSE_TRANSPORT,	  /* a completion error: QP in error */
	RCONN_CLOSE_DEVICE,	  /* device removed */
	RCONN_CLOSE_RESOURCES,	  /* could not set up queues, buffers, windows */
	RCONN_CLOSE_PROTOCOL,	  /* the peer broke the transport's rules (see recv) */
};
const char *rconn_close_reason_str(enum rconn_close_reason reason);

struct rconn_ops {
	/*
	 * Connected. @pdata is the peer's private data (may be empty). An
	 * accepted connection is established by the CM's ESTABLISHED event or
	 * by its first received message, whichever comes first (the client
	 * may send before its RTU is processed); the owner learns the
	 * client's private data from the accept callback.
	 */
	void (*established)(struct rconn *c, void *owner, const uint8_t *pdata, uint8_t len);
	/*
	 * A message arrived in @buf (the owner now holds the reference).
	 * @inv_rkey is non-zero when the peer used Send With Invalidate.
	 */
	void (*recv)(struct rconn *c, void *owner, struct gw_buf *buf, uint32_t len,
		     uint32_t inv_rkey);
	/* The connection is gone; every rconn_wr has completed already. */
	void (*closed)(struct rconn *c, void *owner, enum rconn_close_reason reason);
};

struct rconn_wr {
	void (*done)(struct rconn_wr *wr, enum ibv_wc_status status);
	/* Private to rconn. */
	uint64_t seq;
	struct rconn_wr *prev, *next;
};

/* A window bound over one chunk, as the peer sees it. */
struct rconn_mw;
struct rconn_exposure {
	struct rconn_mw *mw;
	uint32_t rkey;
	uint64_t addr; /* remote address of the first byte */
	uint32_t length;
};

struct rconn_stats {
	uint64_t recvs;
	uint64_t sends;
	uint64_t reads;
	uint64_t writes;
	uint64_t binds;
	uint64_t local_invalidates;
	uint64_t remote_invalidates;
	/* Windows deallocated and allocated again (rconn_withdraw()). */
	uint64_t windows_replaced;
	uint64_t recv_buffer_shortages;
	uint64_t protocol_violations;
	/* Completion passes that spent their budget and went on in a later loop pass. */
	uint64_t cq_yields;
	uint32_t sq_used;
	uint32_t mw_in_use;
};

/* Start connecting to @dst; the result comes to ops->established or ops->closed. */
struct rconn *rconn_connect(struct rdma_ctx *ctx, const struct sockaddr *dst,
			    const struct sockaddr *src, const struct rconn_params *params,
			    const struct rconn_ops *ops, void *owner);

/*
 * Accepting: ops->accept decides for each connection request. It returns
 * false to refuse; otherwise it fills @params (the listener's defaults are
 * there already, and the client's private data is in @pdata) and @ops and
 * @owner for the new connection. @req is the request as the CM reports it,
 * from this side: req->initiator_depth is the RDMA Reads this side may have
 * outstanding at the client (the client's responder resources), and
 * req->responder_resources the client's Reads at this side.
 */
struct rconn_request;
struct rlistener_ops {
	bool (*accept)(struct rlistener *l, void *owner, const struct sockaddr *peer,
		       const uint8_t *pdata, uint8_t pdata_len, const struct rdma_conn_param *req,
		       struct rconn_params *params, const struct rconn_ops **ops,
		       void **conn_owner);
	/*
	 * Optional, asked first: return true to take @r elsewhere (another
	 * thread's rdma_ctx, rconn_request_migrate()), which then owns it and
	 * must accept or reject it; false to accept it here as usual.
	 */
	bool (*steer)(struct rlistener *l, void *owner, const struct sockaddr *peer,
		      struct rconn_request *r);
};

/*
 * Listen on @addr. With @addr NULL the listener listens on nothing: it
 * accepts only the requests handed to it by rlistener_accept_request(),
 * taken from a listener on another rdma_ctx (an RDMA CM port has one
 * listener, and the threads that serve its connections are several).
 */
struct rlistener *rlistener_create(struct rdma_ctx *ctx, const struct sockaddr *addr, int backlog,
				   const struct rconn_params *defaults,
				   const struct rlistener_ops *ops, void *owner);
void rlistener_destroy(struct rlistener *l);

/*
 * A connection request a steer() took: its cm_id, the client's private
 * data and connection parameters, copied when the listener saw it.
 */
const struct sockaddr *rconn_request_peer(const struct rconn_request *r);
/*
 * Move the request's CM events to @to's event channel (rdma_migrate_id()),
 * so that its connection is served on @to's thread. Any thread may call it
 * while @to exists; 0 or -errno (the request is unchanged then).
 */
int rconn_request_migrate(struct rconn_request *r, struct rdma_ctx *to);
/*
 * Accept @r on @l (its rdma_ctx must be the one @r was migrated to), as a
 * request @l itself received: its accept op decides. @l owns @r from here.
 */
void rlistener_accept_request(struct rlistener *l, struct rconn_request *r);
/* Refuse @r and let it go. */
void rconn_request_reject(struct rconn_request *r);

void rconn_close(struct rconn *c);
void rconn_destroy(struct rconn *c);

bool rconn_is_connected(const struct rconn *c);
struct rdma_dev *rconn_device(const struct rconn *c);
const struct sockaddr *rconn_peer_addr(const struct rconn *c);
const struct sockaddr *rconn_local_addr(const struct rconn *c);
void rconn_set_owner(struct rconn *c, const struct rconn_ops *ops, void *owner);
/* RDMA Reads the peer allowed us to have outstanding (its responder resources). */
uint8_t rconn_initiator_depth(const struct rconn *c);
void rconn_get_stats(const struct rconn *c, struct rconn_stats *out);
/*
 * The queue pair, for test peers that must post what the gateway never
 * does (RDMA Write With Immediate, a stray Send With Invalidate); NULL
 * when not connected. The gateway itself posts only through this API.
 */
struct ibv_qp *rconn_qp(const struct rconn *c);

/* Send-queue WRs that can be posted now. */
uint32_t rconn_sq_space(const struct rconn *c);
/* Memory windows free now. */
uint32_t rconn_mw_space(const struct rconn *c);

/*
 * Post a Send of @nsge pieces (each must lie in registered memory: gw_buf
 * lkeys). With @inv_rkey non-zero it is a Send With Invalidate. @wr may be
 * NULL for an unsignaled send that a later signaled WR retires.
 * Returns 0, -EAGAIN (no send-queue space), or another -errno.
 */
int rconn_send(struct rconn *c, const struct ibv_sge *sge, unsigned nsge, uint32_t inv_rkey,
	       struct rconn_wr *wr);

/* RDMA Read of the peer's @rkey/@raddr into local @sge (signaled). */
int rconn_read(struct rconn *c, const struct ibv_sge *sge, unsigned nsge, uint32_t rkey,
	       uint64_t raddr, struct rconn_wr *wr);

/*
 * RDMA Write of local @sge to the peer's @rkey/@raddr; @wr NULL: unsignaled,
 * and it waits for the Send that must follow it (see "Work requests").
 */
int rconn_write(struct rconn *c, const struct ibv_sge *sge, unsigned nsge, uint32_t rkey,
		uint64_t raddr, struct rconn_wr *wr);

enum rconn_access {
	RCONN_REMOTE_READ = IBV_ACCESS_REMOTE_READ,
	RCONN_REMOTE_WRITE = IBV_ACCESS_REMOTE_WRITE,
};

/*
 * Expose @len bytes of @buf from @offset to the peer with @access (one of
 * enum rconn_access), through a memory window with a fresh rkey. The bind
 * is unsignaled and waits for the next work request posted (the Send that
 * advertises the rkey must follow), which carries it to the device in the
 * same ibv_post_send(): one doorbell for both.
 * Returns 0, -EAGAIN (no window or send-queue space) or -errno.
 */
int rconn_expose(struct rconn *c, struct gw_buf *buf, uint32_t offset, uint32_t len,
		 enum rconn_access access, struct rconn_exposure *out);

/* The most exposures one rconn_fence() call invalidates. */
enum { RCONN_FENCE_MAX = 32 };

/*
 * Invalidate @n (at most RCONN_FENCE_MAX) exposures, except one whose rkey is @remote_inv_rkey (the
 * peer invalidated it already). @wr completes when the buffers behind them
 * are safe to reuse. Returns 1 when nothing needed invalidating (@wr will
 * not be called), 0 when @wr will be called, or -errno (the connection is
 * failing; @wr is completed with a flush status by the teardown).
 */
int rconn_fence(struct rconn *c, struct rconn_exposure *exp, unsigned n, uint32_t remote_inv_rkey,
		struct rconn_wr *wr);

/*
 * Take back @n exposures the peer may still name: a call given up while
 * the server may yet answer it. Each window is deallocated and a new one
 * takes its place, so that a late RDMA access or Send With Invalidate
 * naming its rkey finds no window at all: the peer's request fails, and
 * with it the connection, but nothing reaches the buffers behind it. An
 * invalidation would leave the window free under the same rkey, and a
 * Send With Invalidate of a free window dereferences NULL in Soft-RoCE
 * (rxe_do_invalidate_mw(), Linux 6.1 and later): a remote crash. Done when
 * it returns 0 (ibv_dealloc_mw() is synchronous), the buffers reusable;
 * -EBUSY, with nothing done, when a window's bind has not been posted yet:
 * never advertised, it is fenced the usual way (rconn_fence()).
 */
int rconn_withdraw(struct rconn *c, struct rconn_exposure *exp, unsigned n);

/*
 * The owner found the peer breaking the transport's rules in a message it
 * was handed (a Send With Invalidate naming a window of no call it
 * answers): logged with @why and the message's @len, counted as
 * protocol_violations, and the connection fails (RCONN_CLOSE_PROTOCOL).
 */
void rconn_violation(struct rconn *c, const char *why, uint32_t len);

#endif
