/* SPDX-License-Identifier: MIT */
/*
 * gateway/side/rpc/side_relay.h - relay of a side protocol of NFSv3 (MOUNT) from the
 * gateway's address to the server's daemon.
 *
 * Clients send their calls to the gateway's side service (UDP or TCP,
 * gateway/side/rpc/side_service.h); the relay forwards each over one UDP socket of its
 * own to the server's daemon and sends the reply back to the client on
 * the transport it came by. Many clients share that socket, so XIDs are
 * mapped: each call gets an upstream XID unique on the socket, the reply's
 * XID is restored to the client's, and a client's retransmission (same
 * peer, same XID, while the call is pending) goes out again under the
 * same upstream XID, so the server's duplicate request cache still
 * recognises it. Nothing else of the protocol is kept: the gateway holds
 * a call only until its reply or its timeout.
 *
 * The daemon's port is configured, or found by asking the server's
 * portmapper (PMAPPROC_GETPORT over UDP) when the first call needs it and
 * again after a call to the daemon went unanswered (it may have restarted
 * on another port).
 *
 * UDP upstream for every client: a datagram carries any MOUNT reply the
 * server sends over UDP (up to 64 KiB); the gateway resends a pending call
 * itself (retry_ms) so that a TCP client, which never retransmits, does
 * not wait on a lost datagram.
 */
#ifndef GW_GATEWAY_SIDE_RELAY_H
#define GW_GATEWAY_SIDE_RELAY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "gateway/side/rpc/side_service.h"
#include "gateway/maps/xidmap.h"

struct event_base;
struct gw_counters;
struct gw_route;

/* ---- the mapping table: pure, for the relay and its unit test ---------- */

struct relay_call {
	bool used;
	struct side_service *svc; /* where the client's call came in */
	struct side_service_peer peer;
	uint32_t client_xid;
	uint32_t up_xid;
	uint32_t prog, vers, proc;
	uint64_t first_us; /* when the client's call arrived */
	uint64_t sent_us;  /* when it last went upstream (0: not yet) */
	uint32_t len;
	uint8_t *msg; /* the call, for resending: max_msg bytes of the table's store */
};

struct relay_table {
	struct relay_call *calls;
	uint32_t max_calls;
	uint32_t live;
	uint32_t max_msg;
	uint8_t *store;
	struct xidmap by_up_xid; /* upstream XID -> slot: each random (common/random.h) */
};

/* Room for @max_calls pending calls of up to @max_msg bytes. -ENOMEM or 0. */
int relay_table_init(struct relay_table *t, uint32_t max_calls, uint32_t max_msg);
void relay_table_destroy(struct relay_table *t);

/* The pending call @xid from @peer (a retransmission), or NULL. */
struct relay_call *relay_table_find_client(struct relay_table *t,
					   const struct side_service_peer *peer, uint32_t xid);
/* The pending call the upstream XID @up_xid stands for, or NULL. */
struct relay_call *relay_table_find_up(struct relay_table *t, uint32_t up_xid);
/*
 * A new pending call for @peer's @xid, with an upstream XID not in use and
 * a copy of @msg (its XID already rewritten); NULL when the table is full
 * or @len is over max_msg.
 */
struct relay_call *relay_table_add(struct relay_table *t, struct side_service *svc,
				   const struct side_service_peer *peer, uint32_t xid,
				   const uint8_t *msg, size_t len);
void relay_table_remove(struct relay_table *t, struct relay_call *c);

/* ---- the relay ------------------------------------------------------------ */

struct rpc_call_hdr;

/* What a rewrite hook did with a message. */
enum side_relay_verdict {
	SIDE_RELAY_PASS,      /* relay it as it is */
	SIDE_RELAY_REWRITTEN, /* relay the hook's message instead */
	SIDE_RELAY_ANSWERED,  /* (calls) the hook's message is the reply: send it, relay nothing */
};

/*
 * A protocol's rewriting of the relayed messages (NLM's owners,
 * gateway/side/nlm/nlm_relay.h); MOUNT has none. Each hook writes its message into
 * @out (@cap bytes) and its length into *@n.
 */
struct side_relay_hooks {
	/*
	 * A new call from @peer (its header in @h, the client's XID still in
	 * it). ANSWERED with *@n 0: dropped without a reply.
	 */
	enum side_relay_verdict (*call)(void *arg, const struct side_service_peer *peer,
					const struct rpc_call_hdr *h, const uint8_t *msg,
					size_t len, uint8_t *out, size_t cap, size_t *n);
	/*
	 * The server's reply to @c (@c->msg is the call as it went upstream),
	 * before the client's XID is put back; PASS or REWRITTEN. Also called
	 * for the relay's own calls (side_relay_call_own(): @c->svc NULL).
	 */
	enum side_relay_verdict (*reply)(void *arg, const struct relay_call *c, const uint8_t *msg,
					 size_t len, uint8_t *out, size_t cap, size_t *n);
	void *arg;
	/*
	 * A call that ends without a reply: given up after timeout_ms,
	 * forgotten with its side service (side_relay_forget()), or, after the
	 * call hook passed or rewrote it, never relayed (the table full: @c is
	 * then the call as it would have gone, not a table entry). Not called
	 * by side_relay_stop(). Also for the relay's own calls (@c->svc NULL).
	 */
	void (*gone)(void *arg, const struct relay_call *c);
};

struct side_relay_config {
	const char *name; /* "mount" */
	uint32_t prog;
	uint32_t vers_lo, vers_hi;
	const struct gw_route *route;
	struct gw_counters *counters;	/* the route's */
	struct sockaddr_storage server; /* the server's address; its port is ignored */
	socklen_t server_len;
	uint16_t server_port;	       /* the daemon's port; 0: ask the server's portmapper */
	uint16_t pmap_port;	       /* the server's portmapper (111; tests use another) */
	bool reserved_port;	       /* send from a port below 1024 (mountd's "secure" check) */
	uint32_t max_calls;	       /* pending calls at once */
	uint32_t max_msg;	       /* largest call */
	uint32_t retry_ms;	       /* resend a pending call upstream this often */
	uint32_t timeout_ms;	       /* then give it up */
	struct side_relay_hooks hooks; /* NULL members: messages pass unchanged */
};

struct side_relay;

/* NULL with errno when the upstream socket cannot be made. */
struct side_relay *side_relay_start(struct event_base *base, const struct side_relay_config *cfg);

/*
 * After a configuration reload: the route's new settings (the old ones are
 * freed once every worker has taken the new configuration).
 */
void side_relay_set_route(struct side_relay *r, const struct gw_route *route);

/* A side_service_msg_fn: @arg is the relay. */
void side_relay_on_call(void *arg, struct side_service *svc, const struct side_service_peer *peer,
			const uint8_t *msg, size_t len);

/*
 * A call the relay makes itself (NLM's UNLOCKs for a rebooted client):
 * @msg is a whole call, its XID replaced by a mapped one; resent and timed
 * out like a client's, its reply goes to the reply hook only. False when
 * the table is full.
 */
bool side_relay_call_own(struct side_relay *r, const uint8_t *msg, size_t len);

/* Calls pending now; the daemon's port in use (0: not known yet). */
uint32_t side_relay_pending(const struct side_relay *r);
uint16_t side_relay_server_port(const struct side_relay *r);

/* Drop the calls of a side service that goes away (before side_service_stop()). */
void side_relay_forget(struct side_relay *r, const struct side_service *svc);

void side_relay_stop(struct side_relay *r);

#endif
