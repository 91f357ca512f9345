/* SPDX-License-Identifier: MIT */
/*
 * gateway/forward/forward_priv.h - what the stages of the forward pipeline share:
 * the session, its call slots and backward-call state, and the functions
 * one stage calls in another. Internal to gateway/forward*.c; the engine
 * sees forward mode only through gw_forward_mode (gateway/core/mode.h).
 *
 *   forward.c              session life: accept, first bytes, connect, close
 *   forward_admit.c        call slots; records from the client into slots
 *   forward_marshal.c      the reply plan, exposure and the Send of a call
 *   forward_complete.c     replies from the server: fence, rebuild, deliver
 *   forward_backchannel.c  backward calls (RFC 8167) and their refusals
 *   forward_upstream.h     the connection a session's calls go on, as the stages see it
 *   forward_own.c          ... a connection of its own (upstream_connections 0)
 *   forward_share.c        ... a shared channel (upstream_connections > 0)
 *   forward_share_cb.c     ... a shared channel's backward calls: which client they are for
 *
 * The stages reach the upstream only through the session's table (up,
 * forward_upstream.h) and its connection (conn). With upstream_connections
 * 0 a session is both a client and its own RDMA connection (conn is
 * itself). With N > 0 a route has N channel sessions (is_channel: an RDMA
 * connection, no TCP side, never registered with the engine) and each
 * client session's conn is one of them: what concerns the RDMA connection
 * is conn's, what concerns the client is the session's own.
 */
#ifndef GW_GATEWAY_FORWARD_PRIV_H
#define GW_GATEWAY_FORWARD_PRIV_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/queue.h>
#include <sys/socket.h>

#include "common/slots.h"
#include "gateway/maps/bc_orphans.h"
#include "gateway/maps/fairq.h"
#include "gateway/core/session.h"
#include "gateway/maps/wirexid.h"
#include "gateway/maps/xidmap.h"
#include "rdma/conn.h"
#include "rdma/device.h"
#include "rdma/privdata.h"
#include "rdma/rpcrdma_hdr.h"
#include "tcp/tcp_conn.h"
#include "ulb-rules/rpc_msg.h"
#include "ulb-rules/ulb.h"
#include "gateway/forward/forward_upstream.h"

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
	FC_QUEUED,   /* waiting for a credit, send-queue room or buffers */
	FC_SENT,     /* on the wire; the reply has not come */
	FC_FENCING,  /* reply in; windows being invalidated */
	FC_DONE,     /* answered; waiting for the Send's completion */
	FC_GSS_WAIT, /* shared channel: a GSS call whose XID another call holds on the wire */
};

struct fwd_call {
	struct fwd_session *s;
	uint32_t index;
	enum fwd_call_state state;
	TAILQ_ENTRY(fwd_call)
	qlink;		 /* its session's queue; on a shared route its channel's
			  * gss_wait (a client there has no queue of its own) */
	void *next_free; /* struct gw_slots' link */
	/* Shared channel: the call's place in the channel's fairq and its wirexid entry. */
	struct fairq_item fqi;
	uint32_t upx;	/* WIREXID_NONE: none */
	uint64_t owner; /* the entry's owner when the reply came: whom it goes to */
	bool picked;	/* counted in flight by the channel's fairq */

	/* The call as the client sent it. */
	uint32_t xid;
	/* The XID on the RDMA side: the client's, or the gateway's own for a retry. */
	uint32_t wire_xid;
	/* ERR_CHUNK to a Reply chunk sized from an estimate: send once more (RFC 8267). */
	bool retry;
	/* ERR_VERS to a Version Two call: send it again in the version fallen back to. */
	bool resend;
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

	/* Quality of service (forward_qos.c): its place among the session's held calls, */
	TAILQ_ENTRY(fwd_call) qos_link;
	/* its client's entry in its class (NULL: no class took it), */
	struct qos_entry *qos;
	uint32_t qos_cls;
	bool qos_admitted; /* counted in flight in that entry */
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
	/* Shared channel: the client session (base.id) it was given to; 0 on a client's own. */
	uint64_t client;
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
	/* The upstream's operations (forward_upstream.h): own, until put on a shared channel. */
	const struct fwd_upstream_ops *up;
	/* The session that holds the RDMA connection the calls go on: itself, or its channel. */
	struct fwd_session *conn;
	enum fwd_state state;
	int fd; /* the accepted socket until the TCP side is set up, else -1 */
	struct tcp_conn *tcp;
	struct rconn *rdma;
	bool rdma_closed;	/* ops->closed has run, or connect never started */
	struct event *first_ev; /* waiting for the client's first bytes */

	struct rpcrdma_privdata own_pd;
	struct rpcrdma_privdata peer_pd;
	struct rpcrdma_thresholds thr;
	/*
	 * The RPC-over-RDMA version calls go in: the route's highest first;
	 * settled by the server's first reply that is no error, or by falling
	 * back after ERR_VERS (the Version Two draft, section 5).
	 */
	uint32_t version;
	bool version_settled;
	/* fwd_recv(): the message's Send With Invalidate named a window of the call it answered. */
	bool inv_claimed;
	bool peer_pd_sent;  /* the server's RFC 8797 private data came with its answer */
	uint32_t granted;   /* the server's last grant (starts at 1) */
	uint32_t in_flight; /* calls sent and not answered */
	uint32_t window;    /* credits we request: route credits */

	struct fwd_call *calls;
	uint32_t ncalls;
	struct gw_slots slots; /* of calls[]: made as first needed (fwd_alloc_slots() says why) */
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
	/*
	 * Client of a shared channel: set aside in its channel's scheduler
	 * until max_session_memory has room for its next call, which needs
	 * mem_wait_need more bytes (fwd_share_mem_freed()).
	 */
	bool mem_wait;
	uint64_t mem_wait_need;

	uint32_t next_retry_xid; /* XIDs of retried calls (fwd_call_retry()) */

	/* The device the session's buffers come from, once connected. */
	struct rdma_dev *dev;
	/* Shared upstream connections: fwd_share_upstream's state (forward_share.c). */
	struct fwd_session *ch;	       /* client: its channel (its conn); NULL: on none */
	struct fairq_client fq_client; /* client: its place in its channel's scheduler */
	bool fq_detached;	       /* client: gone from the scheduler (closing) */
	struct sockaddr_storage peer;  /* client: the wirexid key's address and port */
	bool is_channel;
	uint16_t chan_idx;	 /* channel: its number on the route (the wirexid channel) */
	uint32_t users;		 /* channel: client sessions pointing at it */
	struct fairq fq;	 /* channel: the fair scheduler of its grant */
	struct fwd_share *share; /* channel: the route's shared state */
	/* Channel, a lost connection made again (forward_share.c): */
	bool reconnecting;	       /* lost; the next attempt is due or under way */
	uint32_t reconnect_tries;      /* attempts since the loss */
	bool reconnect_same_port;      /* the attempt under way binds the old source port */
	bool reconnect_any_port;       /* the old port could not be had: any from now on */
	uint64_t lost_at_us;	       /* when the loss was noticed: the deadline's start */
	struct event *reconnect_ev;    /* the back-off timer */
	struct event *pump_ev;	       /* a pump deferred to after the current callback */
	struct sockaddr_storage local; /* where its last connection came from (same port again) */
	uint32_t orphans; /* channel: calls given up unanswered on this connection (credits held) */
	/* Channel: GSS calls waiting for their XID to be free on it (forward_share.c). */
	TAILQ_HEAD(, fwd_call) gss_wait;
	/*
	 * Quality of service (forward_qos.c): calls admitted from the client
	 * but held, in order, until its class's buckets let the first go;
	 * reading the client is paused meanwhile. The timer is made with the
	 * first call held.
	 */
	TAILQ_HEAD(, fwd_call) qos_held;
	struct event *qos_timer;
	struct qos_hold qos_wait; /* the entry counted as waiting, since when */
};

/*
 * Forward mode's state of a route (gw_route_rt.mode_state, fwd_route()),
 * from route_init to route_free.
 */
struct fwd_route {
	/*
	 * The version the upstream server fell back to after ERR_VERS, and
	 * until when new connections open in it directly (0: none
	 * remembered). See fwd_opening_version().
	 */
	uint32_t remembered_version;
	uint64_t remembered_until_us;
	/* upstream_connections > 0: the shared channels, from the first client (forward_share.c).
	 */
	struct fwd_share *share;
};

/*
 * A forward route's shared upstream connections: the channels and the XID
 * map of every client's calls over them. Made with the route's first
 * client; the channels stay open for the route's life (a lost one is made
 * again by the next client that needs it).
 */
struct fwd_share {
	struct gw_route_rt *route;
	struct wirexid map;
	struct fwd_call **by_entry; /* the call in flight under each wirexid entry */
	uint16_t nchan;
	uint32_t cap;  /* calls in flight per client */
	uint32_t live; /* channels not yet freed, closing ones included */
	struct fwd_session *chan[64];
	/* Per channel number, over the route's life: /stats and /metrics. */
	uint64_t reconnects[64];	 /* lost connections made again */
	uint64_t reconnect_failures[64]; /* given up on: the clients were closed */
	uint64_t resent[64];		 /* calls in flight sent again on the new connection */
	uint64_t orphaned[64];		 /* calls left unanswered for call_timeout, given up */
	/* Back channels of clients gone, for their reconnection (bc_orphans.h). */
	struct bc_orphans gone_holders;
};
_Static_assert(64 <= WIREXID_MAX_CHANNELS, "a route's channels are wirexid channels");

/* forward_admit.c */
void fwd_call_put(struct fwd_call *c);

/* ---- quality of service (forward_qos.c) ---- */

/*
 * A parsed call of a route with qos classes: to its upstream now if its
 * class lets it go and none of the session's calls is held, else held in
 * order (reading paused) and sent by a timer when it may.
 */
void fwd_qos_admit(struct fwd_session *s, struct fwd_call *c);
/* @c, admitted by its class, is being freed: its place in flight and its reply's bytes. */
void fwd_qos_done(struct fwd_call *c);
/* Whether the session holds calls (reading stays paused). */
static inline bool fwd_qos_holding(const struct fwd_session *s)
{
	return !TAILQ_EMPTY(&s->qos_held);
}
/* The session closes: its held calls are dropped, its timer stopped (fwd_session_close()). */
void fwd_qos_close(struct fwd_session *s);
/* The session is freed: its timer (fwd_maybe_free()). */
void fwd_qos_free(struct fwd_session *s);
void fwd_call_abandon(struct fwd_call *c);
void fwd_record(struct tcp_conn *tc, struct gw_buf *buf, uint32_t off, uint32_t len, void *arg);
void fwd_oversized(struct tcp_conn *tc, const uint8_t *head, uint32_t head_len, uint64_t record_len,
		   void *arg);

/* forward_complete.c */
void fwd_reply_error(struct fwd_session *s, uint32_t xid, enum rpc_accept_stat stat);
/* The gateway's own MSG_DENIED AUTH_ERROR @why for @xid (client_reserved_port). */
void fwd_reply_auth_error(struct fwd_session *s, uint32_t xid, enum rpc_auth_stat why);
bool fwd_may_retry(const struct fwd_session *s, const struct fwd_call *c);
/* What the inline reply @msg to @s's NFSv4 call @u says of its NFSv4.1 sessions. */
void fwd_learn_sessions(struct fwd_session *s, const struct ulb_call *u, const uint8_t *msg,
			uint32_t len);
void fwd_recv(struct rconn *rc, void *owner, struct gw_buf *buf, uint32_t len, uint32_t inv_rkey);

/* forward_marshal.c */
/* How @c's reply comes back: @nwrites Write chunks, or a Reply chunk of @reply_size, or inline. */
void fwd_plan_reply(const struct fwd_session *s, const struct fwd_call *c, uint32_t *nwrites,
		    bool *reply_chunk, uint32_t *reply_size);
void fwd_call_retry(struct fwd_call *c, enum ibv_wc_status status);
int fwd_marshal(struct fwd_session *s, struct fwd_call *c);
void fwd_call_unexpose(struct fwd_session *s, struct fwd_call *c);
/* A call given up on the wire: its windows replaced, so that the server can name none of them. */
void fwd_call_withdraw(struct fwd_session *s, struct fwd_call *c);
void fwd_call_unmarshal(struct fwd_call *c);
void fwd_pool_wake(struct rdma_pool_waiter *w);

/* forward_backchannel.c */
void fwd_bcall_release(struct fwd_bcall *b);
bool fwd_backward_refuse(struct fwd_session *s, uint32_t xid);
void fwd_backward_reply(struct fwd_session *s, struct gw_buf *buf, uint32_t off, uint32_t len,
			uint32_t xid);
void fwd_backward_call(struct fwd_session *s, struct gw_buf *buf, const struct rpcrdma_hdr *h);
void fwd_bcalls_abandon(struct fwd_session *s);
/* Backward calls in @s's own slots that its client has not answered within @limit. */
void fwd_bcalls_expire(struct fwd_session *s, uint64_t now, uint64_t limit);

/* forward_share.c, forward_share_cb.c: fwd_share_upstream's, and the channels' life */
bool fwd_share_attach(struct fwd_session *s);
void fwd_share_admit(struct fwd_session *s, struct fwd_call *c);
void fwd_share_pump(struct fwd_session *ch);
void fwd_share_call_done(struct fwd_call *c, bool answered);
void fwd_share_forget(struct fwd_call *c);
void fwd_share_set_grant(struct fwd_session *ch);
bool fwd_share_orphan(struct fwd_call *c);
struct fwd_call *fwd_share_call_by_xid(struct fwd_session *ch, uint32_t wire_xid);
struct fwd_session *fwd_share_reply_owner(struct fwd_call *c);
void fwd_share_requeue(struct fwd_call *c);
void fwd_share_client_close(struct fwd_session *s);
void fwd_share_client_pause_update(struct fwd_session *s);
void fwd_share_mem_freed(struct fwd_session *s);
void fwd_share_keep_back_channels(struct fwd_session *s);
void fwd_share_channel_close(struct fwd_session *ch);
bool fwd_share_channel_lost(struct fwd_session *ch, enum rconn_close_reason reason);
void fwd_share_channel_free(struct fwd_session *ch);
void fwd_share_sessions_learned(struct fwd_session *s, const struct ulb_call *u,
				const struct ulb_reply *rep);
struct fwd_session *fwd_share_cb_client(struct fwd_session *ch, const uint8_t *msg, uint32_t len,
					const char **why);
struct fwd_bcall *fwd_share_bcall_of(struct fwd_session *s, uint32_t xid);
void fwd_share_bcalls_expire(struct fwd_session *s, uint64_t now, uint64_t limit);
void fwd_share_release_idle_slots(struct fwd_session *s, uint64_t now);

/* forward.c */
void fwd_session_close(struct fwd_session *s);
void fwd_client_ready(struct fwd_session *s);
int fwd_alloc_slots(struct fwd_session *s, const struct gw_route *r, bool calls, bool bcalls);
struct rconn_params fwd_rdma_params(const struct gw_route *r, struct rpcrdma_privdata *pd);
extern const struct rconn_ops fwd_rdma_ops;
void fwd_maybe_free(struct fwd_session *s);
void fwd_abandon_sent_calls(struct fwd_session *s);
/* The server fell back to @version: new connections of the route open in it for a while. */
void fwd_remember_version(struct fwd_session *s, uint32_t version);
uint32_t fwd_opening_version(struct fwd_session *s);
/* gw_forward_mode's route_init and accept (gateway/core/mode.h). */
int gw_forward_route_init(struct gw_route_rt *route);
void gw_forward_accept(struct gw_route_rt *route, int fd, const struct sockaddr *peer);

/* forward_share.c: gw_forward_mode's route_close, route_free and route_stats. */
bool gw_forward_route_close(struct gw_route_rt *route);
void gw_forward_route_free(struct gw_route_rt *route);
bool gw_forward_route_stats(const struct gw_route_rt *route, struct gw_stats_shared *out);

/* inline helpers */

/* The forward state of @route, a forward route that started (gw_forward_mode.route_init). */
static inline struct fwd_route *fwd_route(const struct gw_route_rt *route)
{
	return route->mode_state;
}

/* The smallest RDMA_MSG header of a version: what an inline message adds. */
static inline uint32_t fwd_hdr_min(uint32_t version)
{
	return version == RPCRDMA_V2 ? RPCRDMA2_HDR_MIN_SIZE : RPCRDMA_HDR_MIN_SIZE;
}

static inline struct fwd_session *fwd_of(struct gw_session *g)
{
	return (struct fwd_session *)g;
}

/* Send what the grant of the connection @s's calls go on allows (@s: a client, or that). */
static inline void fwd_pump(struct fwd_session *s)
{
	s->up->pump(s);
}

static inline struct rdma_pool *fwd_pool(const struct fwd_session *s)
{
	return rdma_dev_pool(s->dev);
}

#endif /* GW_GATEWAY_FORWARD_PRIV_H */
