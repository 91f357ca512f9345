/* SPDX-License-Identifier: MIT */
/*
 * gateway/forward/forward_upstream.h - the connection a forward session's
 * calls go on, as the stages see it: one table of operations, as the
 * kernel's RPC client knows a transport only through its xprt ops.
 *
 * Two implementations:
 *
 *   fwd_own_upstream    forward_own.c: the session's own RDMA connection
 *                       (upstream_connections 0), the one-client case: the
 *                       session's XID table, its queue, the client's XIDs
 *                       kept end to end.
 *   fwd_share_upstream  forward_share.c, forward_share_cb.c: one of the
 *                       route's shared channels (upstream_connections > 0):
 *                       the route's wire XID map, the channel's fair queue,
 *                       backward calls routed by NFSv4.1 session.
 *
 * A session points at its table (fwd_session.up) from the start: the
 * dedicated one, until fwd_share_attach() puts a client on a channel
 * (channels are made with the shared one). Its connection is conn: itself,
 * or its channel. Operations on a call or a client take the client's
 * session; those on the connection (a reply, a grant, a backward call, the
 * connection's life) take the session that holds it.
 */
#ifndef GW_GATEWAY_FORWARD_UPSTREAM_H
#define GW_GATEWAY_FORWARD_UPSTREAM_H

#include <stdbool.h>
#include <stdint.h>

#include "rdma/conn.h"

struct fwd_session;
struct fwd_call;
struct fwd_bcall;
struct gw_buf;
struct rpcrdma_hdr;
struct ulb_call;
struct ulb_reply;

struct fwd_upstream_ops {
	/*
	 * A lost connection is made again and its clients stay: a call's
	 * flushed work request does not end the call (a retry waits for the
	 * new connection; a fenced reply is still delivered).
	 */
	bool remade;

	/* ---- calls of a client ---- */

	/* A parsed call of client @s, in its slot: mapped, queued, sent when it may. */
	void (*admit)(struct fwd_session *s, struct fwd_call *c);
	/* Send what the connection's grant allows (@s: a client, or the connection). */
	void (*pump)(struct fwd_session *s);
	/*
	 * A call sent again (RFC 8267 retry, version fallback), its reply
	 * buffers given back (fwd_call_unmarshal(): the client's mem_held is
	 * lower): a new wire XID, queued first.
	 */
	void (*requeue)(struct fwd_call *c);
	/* @c is off the wire: its credit back; @answered keeps what a retransmission needs. */
	void (*call_done)(struct fwd_call *c, bool answered);
	/* @c's slot is free and its memory given back (the client's mem_held lowered). */
	void (*call_freed)(struct fwd_call *c);
	/* Whom the fenced reply of @c goes to: a client that is relaying, or NULL. */
	struct fwd_session *(*reply_to)(struct fwd_call *c);
	/* What client @s's reply to NFSv4 call @u taught its session table (ulb_parse_reply()). */
	void (*sessions_learned)(struct fwd_session *s, const struct ulb_call *u,
				 const struct ulb_reply *rep);
	/* The backward call client @s was given under @xid (its reply goes on its connection). */
	struct fwd_bcall *(*bcall_of)(struct fwd_session *s, uint32_t xid);

	/* ---- a client's life ---- */

	/* Client @s's out_congested changed. */
	void (*pause_changed)(struct fwd_session *s);
	/* Client @s starts closing: what the connection holds for it goes (once). */
	void (*client_close)(struct fwd_session *s);
	/* Client @s is closing (again): its calls on the wire end if nothing can answer them. */
	void (*close_sent)(struct fwd_session *s);
	/* Client @s is freed: the session it held on to, to free in turn when it can, or NULL. */
	struct fwd_session *(*detach)(struct fwd_session *s);
	/* The engine's sweep of client @s, @limit call_timeout (0: none); true: @s may be gone. */
	bool (*sweep)(struct fwd_session *s, uint64_t now, uint64_t limit);

	/* ---- the connection ---- */

	/* The call a reply on connection @conn answers, by its wire XID; NULL: none on the wire. */
	struct fwd_call *(*call_by_xid)(struct fwd_session *conn, uint32_t wire_xid);
	/* The server's grant on @conn changed (conn->granted). */
	void (*grant_changed)(struct fwd_session *conn);
	/* The client a backward call on @conn goes to, or NULL with @why. */
	struct fwd_session *(*bcall_client)(struct fwd_session *conn, struct gw_buf *buf,
					    const struct rpcrdma_hdr *h, const char **why);
	/* @conn's RDMA connection @rc is established (thresholds known): start relaying. */
	void (*conn_ready)(struct fwd_session *conn, struct rconn *rc);
	/* @conn's RDMA connection is gone: true when it is being made again (nothing to close). */
	bool (*conn_lost)(struct fwd_session *conn, enum rconn_close_reason reason);
};

extern const struct fwd_upstream_ops fwd_own_upstream;
extern const struct fwd_upstream_ops fwd_share_upstream;

/* forward_own.c: a session's own RDMA connection is opened; false: it could not be. */
bool fwd_own_connect(struct fwd_session *s);

#endif /* GW_GATEWAY_FORWARD_UPSTREAM_H */
