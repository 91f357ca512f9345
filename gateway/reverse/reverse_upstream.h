/* SPDX-License-Identifier: MIT */
/*
 * gateway/reverse/reverse_upstream.h - the TCP connection a reverse
 * session's calls go on, as the stages see it: one table of operations, as
 * forward mode's stages know their RDMA connection (forward_upstream.h).
 *
 * Two implementations:
 *
 *   rev_own_upstream    reverse_own.c: the session's own TCP connection
 *                       (upstream_connections 0), the one-client case: the
 *                       client's XIDs kept end to end, the session's queue,
 *                       reconnects with the calls in flight sent again.
 *   rev_share_upstream  reverse_share.c: one of the route's shared TCP
 *                       connections (upstream_connections > 0): the
 *                       route's wire XID map, the connection's fair queue,
 *                       backward calls routed by NFSv4.1 session.
 *
 * A session points at its table (rev_session.up) from its accept to its
 * free, as its route's upstream_connections says. Either way the session
 * keeps its XID table (a client's retransmission of a call in flight is
 * absorbed before it reaches the upstream), its list of calls sent (sentq,
 * in the order sent) and the call timer over it (reverse_upstream.c).
 */
#ifndef GW_GATEWAY_REVERSE_UPSTREAM_H
#define GW_GATEWAY_REVERSE_UPSTREAM_H

#include <stdbool.h>
#include <stdint.h>

#include "ulb-rules/ulb.h"

struct rev_session;
struct rev_call;
struct tcp_conn;

struct rev_upstream_ops {
	/*
	 * Every reply is read for the NFSv4.1 sessions CREATE_SESSION makes
	 * and BIND_CONN_TO_SESSION binds (backward calls are routed by them),
	 * not only a reply whose results may go in Write chunks.
	 */
	bool learns_sessions;

	/* ---- calls ---- */

	/*
	 * A parsed call of @s, in its XID table: sent, or queued until the
	 * connection takes it; or answered here (rev_answer()) when it cannot go.
	 */
	void (*call)(struct rev_session *s, struct rev_call *c);
	/*
	 * @c, the oldest call of @s on the connection, has waited call_timeout
	 * for the first time (the calls in flight are marked timed_out): the
	 * connection starts over and they go again.
	 */
	void (*timed_out)(struct rev_session *s, const struct rev_call *c);
	/* A reply relayed to @s bound session @id's back channel to it (BIND_CONN_TO_SESSION). */
	void (*back_bound)(struct rev_session *s, const uint8_t id[ULB_SESSIONID_SIZE]);

	/* ---- the connection ---- */

	/* The connection @s's messages go on now, or NULL. */
	struct tcp_conn *(*conn)(const struct rev_session *s);
	/* Which connection that is: a backward call's reply goes only on the one that sent it. */
	uint32_t (*generation)(const struct rev_session *s);
	/*
	 * A message of @s (@what, @xid) found no room in the connection's
	 * output (errno says why): it starts over, as when the server goes
	 * away, unless the failed send closed it already.
	 */
	void (*overflow)(struct rev_session *s, const char *what, uint32_t xid);
	/* Pool buffers came back to @s's waiter: a connection that waited for them reads again. */
	void (*buffers_back)(struct rev_session *s);
	/* @s's calls waiting for the connection (the stats). */
	uint32_t (*queued)(const struct rev_session *s);

	/* ---- the session's life ---- */

	/* @s's RDMA connection is established: the upstream is opened; false: it cannot be. */
	bool (*open)(struct rev_session *s);
	/* @s starts closing (once): what the upstream holds for it goes, or starts to. */
	void (*close)(struct rev_session *s);
	/* @s is closing and must not wait for the server: a close under way ends now. */
	void (*reset)(struct rev_session *s);
	/* @s is closing and the upstream still refers to it (a close under way): not freed yet. */
	bool (*holds)(const struct rev_session *s);
};

extern const struct rev_upstream_ops rev_own_upstream;
extern const struct rev_upstream_ops rev_share_upstream;

#endif /* GW_GATEWAY_REVERSE_UPSTREAM_H */
