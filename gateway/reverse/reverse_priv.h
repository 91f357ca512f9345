/* SPDX-License-Identifier: MIT */
/*
 * gateway/reverse/reverse_priv.h - what the stages of the reverse pipeline share:
 * the session, its call slots, queues and backchannel state, and the
 * functions one stage calls in another. Internal to gateway/reverse*.c; the
 * engine sees reverse mode only through gw_reverse_mode (gateway/core/mode.h).
 *
 *   reverse.c              session life: accept, the RDMA connection, close
 *   reverse_admit.c        slots and queues; receives from the client, Read
 *                          chunks pulled, the call assembled and parsed
 *   reverse_upstream.c     the call out and its reply in, whichever the
 *                          upstream: the reply matched, the call timeout
 *   reverse_answer.c       answers to the client: Write chunks, Reply chunk,
 *                          inline Send, RDMA_ERROR and RPC errors
 *   reverse_backchannel.c  the server's callbacks to the client (RFC 8167)
 *   reverse_qos.c          calls held to their qos class's limits before the upstream
 *   reverse_upstream.h     the TCP connection a session's calls go on, as the stages see it
 *   reverse_own.c          ... a connection of its own (upstream_connections 0):
 *                          calls out, reply records in, reconnects
 *   reverse_share.c        ... one of the route's shared connections
 *                          (upstream_connections > 0)
 *   reverse_share_map.c    ... the shared connections' ledger: wire XIDs, calls, credits
 *
 * The stages reach the upstream only through the session's table (up,
 * reverse_upstream.h), chosen at accept by the route's upstream_connections.
 */
#ifndef GW_GATEWAY_REVERSE_PRIV_H
#define GW_GATEWAY_REVERSE_PRIV_H

#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/queue.h>
#include <sys/socket.h>
#include <unistd.h>

#include <event2/event.h>

#include "common/backoff.h"
#include "common/clock.h"
#include "common/log.h"
#include "common/xdr.h"
#include "common/slots.h"
#include "gateway/maps/fairq.h"
#include "gateway/reverse/reverse_plan.h"
#include "gateway/maps/wirexid.h"
#include "gateway/core/session.h"
#include "gateway/maps/xidmap.h"
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
#include "gateway/reverse/reverse_upstream.h"

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

enum {
	/* A backward call's transport header: RDMA_MSG with three empty lists. */
	REV_BC_ROOM = 32,
};

enum rev_call_state {
	RC_FREE,
	RC_READING,  /* on readq: its Read chunks are being pulled */
	RC_WAITING,  /* on upq: for the upstream connection */
	RC_SENT,     /* on sentq: on the upstream, no reply yet */
	RC_ANSWER,   /* on sqq: its answer waits for send-queue room */
	RC_ANSWERED, /* the answer's Send is posted */
	RC_PARKED,   /* abandoned; released when the connection's teardown is done */
	RC_GSS_WAIT, /* shared upstream: a GSS call whose XID another call holds there */
	RC_QOS_HELD, /* on qosq: held to its qos class's limits (reverse_qos.c) */
};

enum rev_answer {
	RA_NONE,
	RA_REPLY,	     /* the upstream's reply record */
	RA_RPC_ERROR,	     /* an RPC error reply made here: rpc_stat */
	RA_ERR_VERS,	     /* RDMA_ERROR ERR_VERS */
	RA_ERR_CHUNK,	     /* RDMA_ERROR ERR_CHUNK (Version Two: RDMA2_ERR_BAD_HEADER) */
	RA_ERR_INVAL_OPTION, /* RDMA2_ERROR RDMA2_ERR_INVAL_OPTION */
};

struct rev_session;
struct rev_call;
struct rev_chan;

struct rev_queue {
	TAILQ_HEAD(rev_callhead, rev_call) head;
	uint32_t n;
};

struct rev_call {
	struct rev_session *s;
	TAILQ_ENTRY(rev_call) link;
	struct rev_queue *q; /* the queue it is on, or NULL */
	void *next_free;     /* struct gw_slots' link */

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
	uint64_t mem; /* pool bytes reserved for it, against max_session_memory */

	uint32_t index;
	enum rev_call_state state;
	uint32_t xid;
	uint32_t version; /* RPC-over-RDMA version of the call: its answer's */
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
	uint32_t inv_rkey; /* its answer's Send With Invalidate, or 0 (rev_inv_rkey()) */
	uint8_t nitems;
	bool in_xidmap;
	bool has_reply_chunk;
	bool reads_posted; /* the whole Read list is posted */
	bool read_failed;  /* a Read failed: the connection is going */
	bool bad_chunks;   /* the Read list does not add up: ERR_CHUNK */
	bool send_pending;
	bool timed_out; /* unanswered for call_timeout once: sent again on a new connection */
	/* Shared upstream (reverse_share.c): its entry in the route's XID map, its queue link. */
	uint32_t up_idx;   /* when up_mapped */
	uint16_t gss_chan; /* RC_GSS_WAIT: the connection it waits on */
	bool up_mapped;
	struct fairq_item fqi;
	/* Quality of service (reverse_qos.c): its client's entry in its class, when classed. */
	struct qos_entry *qos;
	uint32_t qos_cls;
	bool qos_admitted; /* counted in flight in that entry */
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
	bool peer_pd_sent; /* the client's RFC 8797 private data came with its request */
	/* Answers may invalidate the client's region: its offer, and remote_invalidation. */
	bool send_inv;
	struct rpcrdma_thresholds thr;
	/* RPC-over-RDMA version of the client's first call; 0 before it (stats, backchannel) */
	uint32_t version;
	uint32_t grant;	      /* credits granted in every answer */
	uint32_t outstanding; /* client calls holding a credit */

	/* RDMA Reads: what the client allows, and what is out. */
	uint32_t read_depth;
	uint32_t reads_in_flight;
	struct rev_read_wr rwr[REV_MAX_READ_DEPTH];

	/* The upstream's operations (reverse_upstream.h): its own or a shared one, for life. */
	const struct rev_upstream_ops *up;
	struct event *call_timer; /* the oldest call on the upstream, for call_timeout */

	/* rev_own_upstream's state (reverse_own.c): the session's own TCP connection. */
	enum rev_up_state up_state;
	struct tcp_conn *tcp;
	struct tcp_connect *connect;
	struct event *retry_timer;
	uint64_t up_missing_since; /* when the upstream was last found missing */
	struct gw_backoff backoff; /* the delay before the next connect */
	uint32_t up_gen;	   /* connections made */
	bool up_reached;	   /* connected at least once */
	bool out_congested;
	bool tcp_starved;

	/* Call slots and their queues. */
	struct rev_call *calls;
	uint32_t ncalls;
	struct gw_slots slots; /* of calls[], each set up at start (gw_reverse_accept()) */
	struct xidmap xids;
	struct rev_queue readq; /* pulling Read chunks, in arrival order */
	struct rev_queue upq;	/* waiting for its own upstream (reverse_own.c) */
	struct rev_queue sentq; /* on the upstream, in the order sent */
	struct rev_queue sqq;	/* answers waiting for send-queue room */
	struct rev_queue qosq;	/* held to their qos class's limits, in order (reverse_qos.c) */
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
	uint64_t mem_held;    /* reserved by calls, against max_session_memory */
	bool mem_waiting;     /* a received call waits for memory to be given back */
	struct event *mem_ev; /* gives the waiting call its turn, from the loop */
	bool draining;
	bool in_close;	     /* rev_session_close() is running: do not free under it */
	bool reset_upstream; /* a peer misbehaved: the upstream is reset, not closed */

	/* The backchannel. */
	struct rev_bcall *bcalls;
	uint32_t nbcalls;  /* slots: the route's backchannel_credits */
	uint32_t bc_busy;  /* slots not free */
	uint32_t bc_out;   /* backward calls posted and not answered */
	uint32_t bc_grant; /* the client's backward credits (1 until it says) */
	struct gw_buf *bc_hdr_buf;
	TAILQ_HEAD(, rev_bcall) bcq;

	/* rev_share_upstream's state (reverse_share.c): its channel, once put on one. */
	struct rev_chan *ch;
	TAILQ_ENTRY(rev_session) ch_link; /* on its channel's list of clients */
	struct fairq_client fq_client;
	struct sockaddr_storage peer; /* the client's address and CM source port */

	/* Quality of service (reverse_qos.c): the timer of the held calls (qosq), their wait. */
	struct event *qos_timer;
	struct qos_hold qos_wait;
};

/* reverse_admit.c */
void rev_enqueue(struct rev_queue *q, struct rev_call *c);
void rev_dequeue(struct rev_call *c);
void rev_put_buf(struct gw_buf **b);
void rev_call_put(struct rev_call *c);
void rev_call_post_failed(struct rev_session *s, struct rev_call *c, int err);
void rev_reads_pump(struct rev_session *s);
void rev_rx_drop_all(struct rev_session *s);
void rev_rx_pump(struct rev_session *s);
void rev_mem_wake(evutil_socket_t fd, short what, void *arg);
void rev_pool_wake(struct rdma_pool_waiter *w);
void rev_recv(struct rconn *rc, void *owner, struct gw_buf *buf, uint32_t len, uint32_t inv_rkey);

/* reverse_qos.c: routes with qos classes (route->qos) */
/*
 * A parsed call, in the XID table: to the upstream (up->call) now if its
 * class allows it and no call of the session is held, else held in order
 * (qosq) until its class's buckets allow it. Never answered here.
 */
void rev_qos_call(struct rev_session *s, struct rev_call *c);
/* @c, admitted by its class (qos_admitted), is given back: its reply's bytes are charged. */
void rev_qos_done(struct rev_call *c);
/* @s closes: its held calls go with its slots (rev_session_close()); their wait is counted. */
void rev_qos_close(struct rev_session *s);
/* @s is freed: its timer goes. */
void rev_qos_free(struct rev_session *s);

/* reverse_answer.c */
void rev_sq_pump(struct rev_session *s);
void rev_answer(struct rev_session *s, struct rev_call *c, enum rev_answer a);

/* reverse_upstream.c */
void rev_call_timer_arm(struct rev_session *s);
void rev_call_timeout(evutil_socket_t fd, short what, void *arg);
/* The reply record to @c, a call on the upstream: to the client. */
void rev_reply_to_call(struct rev_session *s, struct rev_call *c, struct gw_buf *buf, uint32_t off,
		       uint32_t len);
/* A message for the upstream found no room in its output (@err): said and counted. */
void rev_up_overflow_warn(struct rev_session *s, const char *what, uint32_t xid, int err);

/* reverse_own.c: the session's retry_timer, made at accept */
void rev_up_retry(evutil_socket_t fd, short what, void *arg);

/* reverse_backchannel.c */
void rev_bc_pump(struct rev_session *s);
void rev_bc_call(struct rev_session *s, struct gw_buf *buf, uint32_t off, uint32_t len,
		 uint32_t xid);
void rev_bc_reply(struct rev_session *s, struct gw_buf *buf, const struct rpcrdma_hdr *h);
void rev_bc_drop_waiting(struct rev_session *s);
void rev_bc_abandon(struct rev_session *s);

/*
 * reverse_share_map.c: the ledger of the shared connections: the XID map,
 * the call each in-flight entry's reply goes to, and the credit it holds
 * in its connection's fair queue. No I/O.
 */
struct rev_share_map {
	struct wirexid map;
	struct rev_call **by_entry; /* per entry: the call its reply goes to, or NULL */
	uint8_t *charged;	    /* per entry: the credit it holds */
	uint64_t *sent_us;	    /* per entry: when its call was last written (rsm_sent) */
	struct rev_queue gss_wait;  /* GSS calls waiting for their XID (RSM_GSS_WAIT) */
};

enum rsm_verdict {
	RSM_QUEUED,   /* queued on the connection under its wire XID (written in the call) */
	RSM_ON_WIRE,  /* a retransmission of a call on the wire: its reply answers this one */
	RSM_FULL,     /* every entry in flight */
	RSM_GSS_WAIT, /* a GSS call whose XID a call of that connection holds: it waits
		       * (RC_GSS_WAIT) until rsm_gss_take() hands it back to be mapped again */
};

int rsm_init(struct rev_share_map *m, const struct wirexid_params *p);
void rsm_destroy(struct rev_share_map *m);
/*
 * Map @c (the client key @k) on channel @chan, whose queue is @fq. A call
 * an older connection of the same client had under that key comes back in
 * *@superseded, off the queue and the map, for the caller to answer.
 */
enum rsm_verdict rsm_map(struct rev_share_map *m, struct fairq *fq, const struct wirexid_key *k,
			 uint16_t chan, struct rev_call *c, uint64_t now_us,
			 struct rev_call **superseded);
/*
 * The GSS calls waiting for connection @chan move to @out, to be mapped
 * again (each goes, or waits once more): for after a call of that
 * connection left it (answered, dropped, or the connection restarted).
 */
void rsm_gss_take(struct rev_share_map *m, uint16_t chan, struct rev_queue *out);
/* A picked call was written to the connection at @now_us: it holds a credit until its reply. */
void rsm_sent(struct rev_share_map *m, struct rev_call *c, uint64_t now_us);
/* A reply's call, or NULL: *@stray when no call is in flight under that XID on @chan. */
struct rev_call *rsm_reply(struct rev_share_map *m, struct fairq *fq, uint16_t chan,
			   uint32_t wire_xid, uint64_t now_us, bool *stray);
/* Client @s goes: its queued calls dropped from the map, its calls on the wire orphaned. */
void rsm_detach(struct rev_share_map *m, struct fairq *fq, struct rev_session *s);
/*
 * When the oldest orphan on @chan (a call on the wire whose client went)
 * was sent, in *@sent_us; false when @chan has none. Only a reply or the
 * connection's loss gives an orphan's credit back: the caller restarts a
 * connection whose orphan is older than call_timeout.
 */
bool rsm_oldest_orphan(const struct rev_share_map *m, uint16_t chan, uint64_t *sent_us);
/*
 * Connection @chan was lost: each live call on the wire is handed to
 * @unsend and queued again under its wire XID; orphans are forgotten.
 */
void rsm_requeue(struct rev_share_map *m, struct fairq *fq, uint16_t chan, uint64_t now_us,
		 void (*unsend)(struct rev_call *c));

/* reverse_share.c: the route's pool of upstream connections (upstream_connections > 0) */
/* A channel's clients; the lookups below take it (tests build one). */
TAILQ_HEAD(rev_client_list, rev_session);
/* The client on @clients a backward call is for, by its CB_SEQUENCE's session; NULL with @why. */
struct rev_session *rev_share_cb_client(const struct rev_client_list *clients, const uint8_t *msg,
					uint32_t len, const char **why);
/* @s, one of @clients, bound session @id's back channel: the others lose it. */
void rev_share_take_back(struct rev_client_list *clients, const struct rev_session *s,
			 const uint8_t id[ULB_SESSIONID_SIZE]);
/* The XID map's key of a client's call, and the channel a client is put on (tests use them). */
void rev_share_key(const struct rev_session *s, uint32_t xid, struct wirexid_key *k);
uint16_t rev_share_channel_of(const struct rev_session *s, uint16_t nchan);
/*
 * gw_reverse_mode's route_free and route_stats. Its shared TCP connections
 * close at once (no loop turn needed): route_free closes them
 * (gw_reverse_route_close()), and the mode has no route_close.
 */
bool gw_reverse_route_stats(const struct gw_route_rt *route, struct gw_stats_shared *out);
void gw_reverse_route_close(struct gw_route_rt *route);
void gw_reverse_route_free(struct gw_route_rt *route);

/* reverse.c */
void rev_session_close(struct rev_session *s);
void rev_session_fail(struct rev_session *s);
void rev_maybe_free(struct rev_session *s);
/* gw_reverse_mode's listen_params and rdma_accept (gateway/core/mode.h). */
void gw_reverse_listen_params(const struct gw_route *r, struct rconn_params *p);
bool gw_reverse_accept(struct gw_route_rt *route, const struct sockaddr *peer, const uint8_t *pdata,
		       uint8_t pdata_len, const struct rdma_conn_param *req,
		       struct rconn_params *params, const struct rconn_ops **ops, void **owner);

/* inline helpers */

/*
 * Reverse mode's state of a route (gw_route_rt.mode_state): its shared
 * upstream connections, from the first client (reverse_share.c), or NULL.
 */
static inline struct rev_share *rev_route_share(const struct gw_route_rt *route)
{
	return route->mode_state;
}

/* The smallest RDMA_MSG header of a version: what an inline message adds. */
static inline uint32_t rev_hdr_min(uint32_t version)
{
	return version == RPCRDMA_V2 ? RPCRDMA2_HDR_MIN_SIZE : RPCRDMA_HDR_MIN_SIZE;
}

/* The version of the connection's backward calls: the client's (Version One before it spoke). */
static inline uint32_t rev_bc_version(const struct rev_session *s)
{
	return s->version ? s->version : RPCRDMA_V1;
}

static inline struct rev_session *rev_of(struct gw_session *g)
{
	return (struct rev_session *)g;
}

static inline struct rdma_pool *rev_pool(const struct rev_session *s)
{
	return rdma_dev_pool(rconn_device(s->rdma));
}

#endif /* GW_GATEWAY_REVERSE_PRIV_H */
