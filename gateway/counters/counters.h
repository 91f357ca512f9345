/* SPDX-License-Identifier: MIT */
/*
 * gateway/counters/counters.h - what the gateway counts, per route and per session.
 *
 * Counters are plain integers updated by the one event-loop thread: no
 * locks, no atomics, no allocation. Each event is counted twice, in the
 * session's block and in its route's, so a route's totals survive its
 * sessions. The stats endpoint reads them through a visitor (below) from
 * the same thread.
 */
#ifndef GW_GATEWAY_COUNTERS_H
#define GW_GATEWAY_COUNTERS_H

#include <stdbool.h>
#include <stdint.h>

/* Errors and unusual events, by kind. Names are stable: they are metric labels. */
enum gw_event_kind {
	GW_EV_ERR_VERS_SENT,		 /* we answered RDMA_ERROR ERR_VERS */
	GW_EV_ERR_CHUNK_SENT,		 /* we answered RDMA_ERROR ERR_CHUNK */
	GW_EV_ERR_VERS_RECEIVED,	 /* the server answered ERR_VERS */
	GW_EV_ERR_CHUNK_RECEIVED,	 /* the server answered ERR_CHUNK */
	GW_EV_BAD_TRANSPORT_HEADER,	 /* transport header did not decode */
	GW_EV_MALFORMED_RECORD,		 /* bad TCP record mark or oversize record */
	GW_EV_GARBAGE_ARGS,		 /* RPC arguments the ULB could not parse */
	GW_EV_RPC_ERROR_REPLY,		 /* an RPC error reply the gateway made itself */
	GW_EV_REFUSED_CLIENT,		 /* client address not allowed */
	GW_EV_UPSTREAM_RECONNECT,	 /* the upstream connection was re-established */
	GW_EV_UPSTREAM_FAILURE,		 /* could not reach the upstream */
	GW_EV_CONNECTION_LOST,		 /* a peer vanished */
	GW_EV_CREDIT_OVERRUN,		 /* a client sent more calls than granted */
	GW_EV_RETRANSMIT_ABSORBED,	 /* same XID again while the call was in flight */
	GW_EV_UNMATCHED_REPLY,		 /* a reply with no call waiting for it */
	GW_EV_DONE_DROPPED,		 /* RDMA_DONE received and dropped */
	GW_EV_ULB_UNKNOWN_OP,		 /* an NFSv4 op the walker does not know ended DDP */
	GW_EV_REPLY_CHUNK_RETRY,	 /* reply larger than estimated: retried with more room */
	GW_EV_BACKWARD_UNDELIVERABLE,	 /* a backward call that could not be delivered */
	GW_EV_NO_BUFFERS,		 /* a pool ran dry: the gateway applied back-pressure */
	GW_EV_OUTPUT_OVERFLOW,		 /* a reply found no room toward its TCP peer: closed */
	GW_EV_PROTOCOL_VIOLATION,	 /* an RDMA peer broke the transport's rules: closed */
	GW_EV_CALL_TIMEOUT,		 /* a call went unanswered past call_timeout: reset */
	GW_EV_SESSION_LIMIT,		 /* refused: the route's or the process's sessions full */
	GW_EV_CLIENT_SESSION_LIMIT,	 /* refused: the client address has its sessions */
	GW_EV_RECORD_TIMEOUT,		 /* a record not finished within record_timeout: closed */
	GW_EV_CONNECT_TIMEOUT,		 /* an accepted RDMA connection not established in time */
	GW_EV_SESSION_MEMORY_LIMIT,	 /* a session held its buffer cap: reading paused */
	GW_EV_ERR_INVAL_OPTION_SENT,	 /* we answered RDMA2_ERROR RDMA2_ERR_INVAL_OPTION */
	GW_EV_RPCRDMA_VERSION_FALLBACK,	 /* ERR_VERS to our Version Two: fell back, call re-sent */
	GW_EV_ERR_INVAL_OPTION_RECEIVED, /* the server answered RDMA2_ERR_INVAL_OPTION */
	GW_EV_VERSION_REMEMBERED,	 /* opened in the version the server fell back to */
	GW_EV_BACKWARD_NO_SESSION,	 /* shared route: a backward call for no client's session */
	GW_EV_COUNTERS_NO_MEMORY,	 /* a table by procedure could not grow: counted 'other' */
	GW_EV_BACKCHANNEL_BOUND,   /* shared route: BIND_CONN_TO_SESSION gave it a back channel */
	GW_EV_BACKCHANNEL_ADOPTED, /* shared route: its gone connection's back channel
				      (bc_orphans.h) */
	GW_EV_HANDOFF_REFUSED,	   /* reverse: its worker could not take the connection */
	GW_EV_SIZE_CLAMPED, /* a reply's advertised sizes lowered to what the route carries */
	GW_EV_RECORD_TOO_LARGE_ANSWERED, /* forward: a record over max_record_size skipped,
					  * answered GARBAGE_ARGS */
	GW_EV_UDP_REPLY_TOO_LARGE,    /* side services: a UDP reply over 4x its call: SYSTEM_ERR */
	GW_EV_UDP_REPLY_RATE_LIMITED, /* side services: a UDP reply over its network's budget */
	GW_EV_GSS_XID_WAIT, /* shared route: a GSS call waited for its XID to be free on the wire */
	GW_EV_INSECURE_PORT, /* forward, client_reserved_port: a call from a port >= 1024 refused */
	GW_EV_KIND_COUNT
};

const char *gw_event_kind_name(enum gw_event_kind kind);

/*
 * Where a session is in its life, for the stats endpoint (per session, and
 * counted per route: what an operator behind a load balancer watches while
 * a gateway drains). Names are stable: they are metric labels.
 *   connecting  accepted, its other side not established yet
 *   ready       relaying calls
 *   draining    SIGTERM: takes no new call, closes once its calls in flight are answered
 *   closing     both sides being closed
 */
enum gw_session_state {
	GW_SESSION_CONNECTING,
	GW_SESSION_READY,
	GW_SESSION_DRAINING,
	GW_SESSION_CLOSING,
	GW_SESSION_STATE_COUNT
};

const char *gw_session_state_name(enum gw_session_state st);

/*
 * Latency histogram over powers of two of microseconds. Bucket i counts the
 * samples of at most 2^i us and more than 2^(i-1) us (bucket 0 takes 0 and
 * 1 us); the last bucket takes everything above 2^(GW_HIST_BUCKETS-2) us.
 * Upper bounds are inclusive, as Prometheus' "le" is, so the exposition
 * needs no translation. Buckets are not cumulative.
 */
enum { GW_HIST_BUCKETS = 24 };
struct gw_hist {
	uint64_t buckets[GW_HIST_BUCKETS];
	uint64_t count;
	uint64_t sum_us;
};

void gw_hist_add(struct gw_hist *h, uint64_t us);
/* Add every sample of @from into @into. */
void gw_hist_merge(struct gw_hist *into, const struct gw_hist *from);
/* Upper bound of bucket @i in microseconds (the last bucket is +Inf). */
uint64_t gw_hist_bucket_le(unsigned i);

/*
 * Calls and replies by RPC program, version and procedure: an open-addressed
 * table. A route's is GW_PROC_SLOTS from the start (gw_counters_reserve_procs()),
 * so that a slot's place never moves (the route's latency by procedure is
 * kept by it). A session's starts as GW_PROC_SMALL slots inside the block and
 * grows, doubling, into an allocated table only when it uses more procedures:
 * a full table is 8 KiB, and a shared route is for thousands of mostly idle
 * clients, each of which uses a few (issue 17).
 */
enum { GW_PROC_SLOTS = 256 }; /* at least every procedure gateway/counters/rpc_names.c knows */
enum { GW_PROC_SMALL = 8 };
struct gw_proc_count {
	uint32_t prog;
	uint32_t vers;
	uint32_t proc;
	bool used;
	uint64_t calls;
	uint64_t replies;
};

struct gw_counters {
	/* RPC traffic */
	uint64_t calls;
	uint64_t replies;
	uint64_t backward_calls;
	uint64_t backward_replies;
	uint64_t calls_queued_for_credits;
	/*
	 * Send With Invalidate (RFC 8797), each a local invalidation saved:
	 * forward, the gateway's windows the server invalidated with its
	 * reply; reverse, the client's regions the gateway's answers did.
	 */
	uint64_t remote_invalidations;
	/* bytes by how they crossed the RDMA side */
	uint64_t bytes_inline;
	uint64_t bytes_read_chunk;
	uint64_t bytes_write_chunk;
	uint64_t bytes_reply_chunk;
	/* bytes on the TCP side */
	uint64_t tcp_bytes_in;
	uint64_t tcp_bytes_out;
	/* connections */
	uint64_t sessions_opened;
	uint64_t sessions_closed;
	uint64_t events[GW_EV_KIND_COUNT];
	/* latency: the gateway's own time, and the upstream's */
	struct gw_hist gateway_us;
	struct gw_hist upstream_us;
	/*
	 * By procedure; 'other' counts what did not fit the table. Read it
	 * through gw_counters_procs(): procs_big, of procs_cap slots, once
	 * allocated, else procs_small.
	 */
	struct gw_proc_count *procs_big;
	uint32_t procs_cap;
	uint32_t procs_used;
	struct gw_proc_count procs_small[GW_PROC_SMALL];
	uint64_t procs_other_calls;
	uint64_t procs_other_replies;
	/*
	 * Shared upstream routes only: how long each call waited in the fair
	 * queue, from its admission to its send on a channel (0 samples
	 * elsewhere). A client's own, and the route's over all its clients.
	 */
	struct gw_hist queue_us;
	/*
	 * Forward routes: how long a client's call waited in the gateway's TCP
	 * socket before the worker's event loop read it (the kernel's receive
	 * time, tcp_conn_rx_wait_us()): the wait for a busy loop, which the
	 * gateway's own clock, started when a call is read, cannot see.
	 */
	struct gw_hist socket_us;
};

/*
 * The table by procedure of @c and its number of slots (those with .used
 * set are taken). Valid until the next count into @c, which may grow it.
 */
static inline struct gw_proc_count *gw_counters_procs(const struct gw_counters *c, unsigned *nslots)
{
	if (c->procs_big) {
		*nslots = c->procs_cap;
		return c->procs_big;
	}
	*nslots = GW_PROC_SMALL;
	return (struct gw_proc_count *)c->procs_small;
}

/*
 * Give @c the whole table now (routes), so that no slot ever moves; 0, or
 * -ENOMEM. gw_counters_release() frees it, and whatever a count allocated.
 */
int gw_counters_reserve_procs(struct gw_counters *c);
void gw_counters_release(struct gw_counters *c);

/*
 * The slot for (prog, vers, proc), taken on first use; NULL when the table
 * is full (and could not grow: counted GW_EV_COUNTERS_NO_MEMORY in @c). The count functions below
 * give slots only to the procedures gateway/counters/rpc_names.h knows (gw_rpc_procedure_known());
 * others are 'other'.
 */
struct gw_proc_count *gw_counters_proc(struct gw_counters *c, uint32_t prog, uint32_t vers,
				       uint32_t proc);
void gw_counters_count_call(struct gw_counters *c, uint32_t prog, uint32_t vers, uint32_t proc);
/* Returns the procedure's slot, or NULL when it counted in 'other'. */
struct gw_proc_count *gw_counters_count_reply(struct gw_counters *c, uint32_t prog, uint32_t vers,
					      uint32_t proc);

/* Add every counter of @from into @into (route totals from a closed session). */
void gw_counters_add(struct gw_counters *into, const struct gw_counters *from);

/* Live credit state of a session, for the stats endpoint. */
struct gw_credit_state {
	uint32_t granted; /* credits the peer granted us (forward) or we grant (reverse) */
	uint32_t in_use;  /* calls in flight on the RDMA side */
	uint32_t queued;  /* calls waiting for a credit */
	uint32_t backward_granted;
	uint32_t backward_in_use;
};

/*
 * How the stats endpoint sees the gateway: it calls the engine's snapshot
 * function with a visitor, and the engine calls route() once per route
 * followed by session() for each of that route's live sessions.
 */
/* One shared upstream connection of a forward route (upstream_connections > 0). */
struct gw_stats_channel {
	const char *state; /* "connecting", "ready", "reconnecting", "closing", or "closed" */
	uint32_t credits_granted;
	uint32_t calls_in_flight;
	uint32_t calls_queued;
	uint32_t clients;
	uint64_t stalls; /* picks refused for want of a credit, calls queued */
	/* Its lost connections: made again, given up on, calls in flight sent again. */
	uint64_t reconnects;
	uint64_t reconnect_failures;
	uint64_t calls_resent;
	/* Calls the server left unanswered for call_timeout, dropped alone (not a reset). */
	uint64_t calls_orphaned;
	/* Completion passes cut short by the budget, to go on in a later loop pass. */
	uint64_t cq_yields;
};

enum { GW_STATS_MAX_CHANNELS = 64 };

/* A forward route's shared upstream connections and their XID map (gateway/maps/wirexid.h). */
struct gw_stats_shared {
	uint32_t nchannels;
	struct gw_stats_channel channels[GW_STATS_MAX_CHANNELS];
	uint32_t xid_entries; /* the map's size */
	uint32_t xid_in_flight;
	uint32_t xid_answered;	   /* kept for retransmissions */
	uint32_t xid_kept;	   /* of them, calls that must not run twice, kept per address */
	uint32_t xid_kept_clients; /* addresses holding those */
	uint64_t xid_new;
	uint64_t xid_retransmit_in_flight;
	uint64_t xid_retransmit_answered;
	uint64_t xid_expired;
	uint64_t xid_evicted; /* the three below */
	uint64_t xid_evicted_safe_twice;
	uint64_t xid_evicted_own;
	uint64_t xid_evicted_other;
	uint64_t xid_full;
	uint64_t xid_stray;
	/* Back channels of gone clients (gateway/maps/bc_orphans.h), forward routes. */
	uint32_t bc_kept_now;
	uint64_t bc_kept, bc_adopted, bc_expired, bc_replaced, bc_dropped;
};

struct wirexid;
/* The XID map's figures of a shared route (forward or reverse) into @out. */
void gw_stats_shared_xids(struct gw_stats_shared *out, const struct wirexid *map);

struct fairq;
/*
 * A shared channel's queue (gateway/maps/fairq.h) into @o, the same for both
 * modes: the credits granted, the calls in flight and waiting, the stalls,
 * and the @clients on the channel.
 */
void gw_stats_channel_queue(struct gw_stats_channel *o, const struct fairq *fq, uint32_t clients);

/*
 * A route's NLM relay (gateway/side/nlm/nlm_state.h, gateway/side/nlm/nlm_callback.h): what
 * it holds now, what its bounds refused, and the server's GRANTED callbacks.
 */
struct gw_stats_nlm {
	uint32_t clients, owners, locks; /* held now */
	uint32_t callbacks_pending;
	uint64_t clients_full, owners_full, locks_full, client_locks_full;
	uint64_t oh_too_long, stale_owner;
	uint64_t client_owners_full; /* a client at nlm_max_owners_per_client */
	uint64_t client_prefix_full; /* a new client whose /24 or /64 is at its share */
	uint64_t clients_reclaimed;  /* idle client hosts forgotten for a new one (LRU) */
	uint64_t cb_relayed, cb_granted, cb_stale, cb_full, cb_timed_out, cb_not_from_server;
	/* The clients' _MSG calls and their _RES (gateway/side/nlm/nlm_async.h). */
	uint32_t async_pending;
	uint64_t async_sent, async_delivered, async_full, async_unknown_cookie;
	uint64_t async_from_client, async_timed_out;
	uint64_t async_refused_client_cap, async_late_given_back;
	uint64_t async_portmapper_silent, async_yielded;
	/* The server's SM_NOTIFY (its reboot) relayed to the clients
	 * (gateway/side/nlm/nlm_notify.h). */
	uint32_t notify_pending;
	uint64_t sn_received, sn_repeated, sn_delivered, sn_not_delivered, sn_not_from_server;
	uint64_t sn_clients_full;
	/* The gateway's own restart told to the server's statd (gateway/side/nlm/nlm_restart.h). */
	int32_t gr_state;
	uint64_t gr_persisted, gr_sent, gr_delivered, gr_not_delivered;
	/* Its clients told to reclaim, and their reclaims (issue 13). */
	uint64_t gr_clients_told, gr_clients_delivered, gr_reclaims_converted, gr_grace_refused;
	/* A rebooted client's UNLOCKs (nlm_relay's release queue). */
	uint32_t rel_pending, rel_in_flight;
	uint64_t rel_queued, rel_done, rel_retried, rel_given_up, rel_full;
};

/*
 * A route's quality-of-service classes (gateway/maps/qosmap.h), in the
 * route's order; the figures of every worker summed.
 */
enum { GW_STATS_MAX_QOS = 64 };

struct gw_stats_qos_class {
	char name[33];
	uint64_t calls;		  /* admitted */
	uint64_t bytes_to_server; /* of those calls */
	uint64_t bytes_to_client; /* of their replies */
	uint64_t throttled_us;	  /* time clients' calls were held */
	uint64_t throttles;	  /* times a session began holding a call */
	uint32_t throttled_now;	  /* clients holding a call now */
	uint32_t clients;	  /* client addresses with buckets of their own now */
	uint64_t overflow;	  /* clients put in the class's shared bucket */
};

struct gw_stats_qos {
	uint32_t nclasses;
	struct gw_stats_qos_class classes[GW_STATS_MAX_QOS];
};

struct gw_stats_route {
	const char *name;
	const char *mode; /* "forward" or "reverse" */
	const char *listen;
	const char *upstream;
	const struct gw_counters *totals; /* includes live sessions */
	/* [GW_PROC_SLOTS], by the slot of totals->procs; NULL: none kept */
	const struct gw_hist *proc_upstream_us;
	uint32_t live_sessions;
	uint32_t sessions_by_state[GW_SESSION_STATE_COUNT]; /* they sum to live_sessions */
	const struct gw_stats_shared *shared; /* NULL: one upstream connection per session */
	const struct gw_stats_nlm *nlm;	      /* NULL: no NLM relay (no portmapper_port) */
	const struct gw_stats_qos *qos;	      /* NULL: no qos classes */
};

struct gw_stats_session {
	uint64_t id;
	const char *client;   /* "addr:port" of the accepted side */
	const char *upstream; /* "addr:port" of the upstream connection, or "" */
	const char *state;    /* gw_session_state_name() */
	uint64_t age_ms;
	const struct gw_counters *counters;
	struct gw_credit_state credits;
	uint32_t inline_send; /* inline thresholds in effect on the RDMA side */
	uint32_t inline_recv;
	uint32_t rpcrdma_version; /* RPC-over-RDMA version spoken; 0 until the first call */
	uint64_t read_yields;	  /* the client's turns cut short by the record budget */
	uint32_t worker;	  /* the worker thread that serves it (gateway/workers.h) */
};

/* An RDMA device's registered buffer pool, shared by every connection on it. */
struct gw_stats_device {
	const char *name;
	uint64_t bytes_registered;
	uint64_t alloc_failures; /* allocations that found the pool dry */
	uint32_t buffers_in_use;
	uint32_t buffers_total; /* carved from registered slabs so far */
};

/* route() for each route, each followed by session() for its live sessions; then device(). */
struct gw_stats_visitor {
	void (*route)(struct gw_stats_visitor *v, const struct gw_stats_route *r);
	void (*session)(struct gw_stats_visitor *v, const struct gw_stats_session *s);
	void (*device)(struct gw_stats_visitor *v, const struct gw_stats_device *d);
};

typedef void (*gw_stats_snapshot_fn)(void *engine, struct gw_stats_visitor *v);

#endif
