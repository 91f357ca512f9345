/* SPDX-License-Identifier: MIT */
/*
 * gateway/side/rpc/side_service.h - a small RPC service endpoint for the side protocols
 * of NFSv3 (rpcbind, MOUNT): one UDP socket and one TCP listener on the
 * same address and port, and the record-marked TCP connections they
 * accept.
 *
 * Each whole RPC message (a datagram, or a TCP record) goes to the owner's
 * handler with the peer it came from; the owner answers through
 * side_service_reply(), now or later (a relayed reply). The peer of a TCP
 * message names its connection by a number, so a reply that comes after
 * the connection closed is dropped, never sent to another client.
 *
 * These are low-rate control protocols, so the endpoint is plain: it
 * copies messages through libevent buffers and keeps everything bounded
 * (message size, connections, idle time, queued output) rather than fast.
 * The NFS data path (tcp/tcp_conn.h) reads into registered memory; none
 * of that is needed here.
 */
#ifndef GW_GATEWAY_SIDE_SERVICE_H
#define GW_GATEWAY_SIDE_SERVICE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

struct event_base;
struct gw_counters;
struct gw_route;
struct side_service;

/* Where a message came from, and where its reply goes. */
struct side_service_peer {
	struct sockaddr_storage addr;
	socklen_t addrlen;
	uint64_t conn_id;  /* 0: UDP */
	uint32_t call_len; /* UDP: the call's length, which bounds its reply's (below) */
	/*
	 * On the wildcard address: the address the call was sent to (UDP:
	 * from IP_PKTINFO, and the reply leaves from it, for a client drops a
	 * reply from another address; TCP: the connection's own), which calls
	 * the gateway makes back to the client leave from too; family 0 when
	 * the socket is bound to one address.
	 */
	struct sockaddr_storage local;
};

/*
 * UDP source addresses can be forged, so a reply to one must not make the
 * gateway a reflector: a reply longer than SIDE_UDP_REPLY_FACTOR times its
 * call (and than SIDE_UDP_REPLY_FLOOR bytes) is answered SYSTEM_ERR instead
 * (the large ones, a MOUNT EXPORT or DUMP list, are asked over TCP by
 * showmount and rpcinfo), and the replies to one network (a /24, an IPv6
 * /64) share a budget of SIDE_UDP_BUDGET_RATE bytes a second
 * (SIDE_UDP_BUDGET_BURST at once), beyond which they are dropped and the
 * client asks again.
 */
enum {
	SIDE_UDP_REPLY_FACTOR = 4,
	SIDE_UDP_REPLY_FLOOR = 256,
	SIDE_UDP_BUDGET_RATE = 128 * 1024,
	SIDE_UDP_BUDGET_BURST = 256 * 1024,
	SIDE_UDP_BUDGET_SLOTS = 256,
	SIDE_RECORD_MS = 10000,
};

/*
 * One message from @peer. @msg is valid only during the call. Bad input
 * is the handler's to count and answer.
 */
typedef void (*side_service_msg_fn)(void *arg, struct side_service *svc,
				    const struct side_service_peer *peer, const uint8_t *msg,
				    size_t len);

struct side_service_config {
	const char *name;	      /* "rpcbind", "mount": for logs */
	const struct gw_route *route; /* its allowed_clients, its name */
	struct gw_counters *counters; /* the route's: malformed records, refusals */
	uint32_t max_msg;	      /* largest call accepted (TCP record, datagram) */
	uint32_t max_conns;	      /* TCP connections at once; more are refused */
	/* TCP connections of one address at once; 0: max_conns / 8 (max_conns below 16: all). */
	uint32_t max_conns_per_addr;
	uint32_t idle_ms; /* a TCP connection silent this long is closed */
	/* A TCP record not whole this long after its first byte closes its connection;
	 * 0: SIDE_RECORD_MS. */
	uint32_t record_ms;
	size_t max_output; /* queued reply bytes per TCP connection */
	side_service_msg_fn on_msg;
	void *arg;
};

/*
 * Bind UDP and TCP on @addr (an address or the wildcard; port 0: one the
 * system chooses, the same for both). NULL with errno when either cannot
 * be bound.
 */
struct side_service *side_service_start(struct event_base *base, const struct sockaddr *addr,
					socklen_t addrlen, const struct side_service_config *cfg);

/*
 * After a configuration reload: the route's new settings (the old ones are
 * freed once every worker has taken the new configuration).
 */
void side_service_set_route(struct side_service *svc, const struct gw_route *route);

/* The port both sockets are bound to. */
uint16_t side_service_port(const struct side_service *svc);

/*
 * Send one reply to @peer: a datagram, or a record on its connection.
 * Returns false (and sends nothing) when the connection is gone or its
 * queued output is over max_output (it is then closed), or when a
 * datagram is over its network's budget; a datagram too long for its call
 * goes as SYSTEM_ERR (above), and false is returned.
 */
bool side_service_reply(struct side_service *svc, const struct side_service_peer *peer,
			const uint8_t *msg, size_t len);

/* TCP connections open now. */
size_t side_service_conns(const struct side_service *svc);

/*
 * Offer every message from @host (its address, any port; NULL: stop) to
 * @fn first, ahead of allowed_clients: true, it took the message (and
 * replies through the service it is given); false, the message goes on
 * as any other (allowed_clients, then on_msg). A TCP connection from
 * @host is admitted whatever allowed_clients say, within the connection
 * limits. For a service that another host's daemon finds in the
 * client's stead: the NLM and NSM relays of a route on the wildcard
 * address are what the host's rpcbind gives the server for the gateway's
 * NLM and NSM, so the server's GRANTED callbacks and SM_NOTIFY come to
 * them (gateway/side/nlm/nlm_callback.h).
 */
typedef bool (*side_service_take_fn)(void *arg, struct side_service *svc,
				     const struct side_service_peer *peer, const uint8_t *msg,
				     size_t len);
void side_service_divert(struct side_service *svc, const struct sockaddr *host, socklen_t len,
			 side_service_take_fn fn, void *arg);

void side_service_stop(struct side_service *svc);

#endif
