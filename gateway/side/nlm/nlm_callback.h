/* SPDX-License-Identifier: MIT */
/*
 * gateway/side/nlm/nlm_callback.h - the server's NLM GRANTED callbacks relayed to
 * the client whose blocked lock they grant (docs/architecture.md, "NLM and
 * NSM relay", "Callbacks from the server").
 *
 * The server's lockd sees the gateway as "the client host": it calls
 * GRANTED (or, Linux, GRANTED_MSG) on the address the relayed LOCK came
 * from, the gateway's upstream-side address, and finds that host's lockd
 * through the portmapper at port 111 there. So the callback service is an
 * NLM service on that address, advertised by a portmapper of its own on
 * port 111 of that address or, when a host rpcbind holds that port, by a
 * registration with the host rpcbind (pmap_set). Where the server finds
 * the route's own NLM relay instead (a route on the wildcard address,
 * whose relays are registered with the host's rpcbind; a route whose
 * listen address is the one the server sees), its calls come to the relay
 * and are handed here (nlm_callback_take()). When none of these works (the
 * host's own kernel lockd is registered: the gateway host is itself an NFS
 * client) the service says so in the log and callbacks do not reach the
 * gateway: a blocked lock is then granted by the client's re-sent LOCK.
 *
 * A GRANTED maps to its client through the upstream owner in it
 * (nlm_relay_client_of()). The gateway asks the client's portmapper for its
 * lockd and calls GRANTED there with the client's own svid and oh, from
 * the route's listen address (Linux client lockd accepts a GRANTED only
 * from the address it sent its LOCK to). The server's call is answered
 * with the client's answer: the reply to a GRANTED, a GRANTED_RES (sent
 * upstream on the NLM relay) for a GRANTED_MSG. An unknown or stale owner,
 * no room for one more pending callback, a client without a lockd or one
 * that does not answer within the timeout: the server is told NLM_DENIED,
 * on which Linux lockd unlocks the lock it had granted (nlmsvc_grant_reply)
 * so that nobody waits behind a client that is gone.
 *
 * The server's results of the clients' _MSG calls (TEST_RES .. UNLOCK_RES)
 * come to this service too, the gateway being the host that sent the _MSG:
 * they get their empty reply and go to gateway/side/nlm/nlm_async.h.
 */
#ifndef GW_GATEWAY_NLM_CALLBACK_H
#define GW_GATEWAY_NLM_CALLBACK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "gateway/side/nlm/nlm_relay.h"

struct event_base;
struct gw_counters;
struct gw_route;
struct nlm_async;
struct nlm_callback;
struct nlm_notify;

struct nlm_callback_config {
	const struct gw_route *route; /* its listen address: where GRANTED leaves from */
	struct gw_counters *counters; /* the route's */
	struct nlm_relay *relay;      /* owners, and how GRANTED_RES goes upstream */
	uint16_t pmap_port;	      /* the portmapper's port, here and at clients (111) */
	uint32_t max_pending;	      /* callbacks relayed at once (default 64) */
	uint32_t retry_ms;	      /* resend to the client this often (default 1000) */
	uint32_t timeout_ms;	      /* then refuse the GRANTED (default 5000) */
	struct nlm_async *async;      /* the server's TEST_RES..UNLOCK_RES go there;
					 NULL: refused (PROC_UNAVAIL) */
	struct nlm_notify *notify;    /* the server's SM_NOTIFY, on the same service; NULL: none */
	/*
	 * The route registered its NLM relay with the host's rpcbind (a route
	 * on the wildcard address): that one NLM mapping is the relay's, so
	 * the callback service is not advertised; the server's calls come to
	 * the relay, which hands them here (nlm_callback_take()).
	 */
	bool route_holds_host_nlm;
};

struct nlm_callback_stats {
	uint64_t relayed;	  /* GRANTED calls answered by their client */
	uint64_t granted;	  /* of which the client took the lock */
	uint64_t stale;		  /* refused: no live owner of ours */
	uint64_t full;		  /* refused: max_pending callbacks pending */
	uint64_t timed_out;	  /* refused: the client (or its portmapper) did not answer */
	uint64_t not_from_server; /* dropped: a call not from the server's address */
};

/*
 * Start the callback service of @cfg->route toward the server at @server.
 * NULL with a message in @err when it cannot start at all; a portmapper
 * clash is not a failure (logged, nlm_callback_advertised() false).
 */
struct nlm_callback *nlm_callback_start(struct event_base *base,
					const struct nlm_callback_config *cfg,
					const struct sockaddr *server, socklen_t server_len,
					char *err, size_t errlen);

/*
 * A message from the server's host to the route's own NLM or NSM relay
 * (side_service_divert(), from gateway/side/side_route.c): where the
 * server finds the gateway's NLM and NSM at the route's (a route on the
 * wildcard address registered them with the host's rpcbind, or the
 * server reaches the gateway at its listen address), its GRANTED and
 * GRANTED_MSG callbacks, its _RES results and its SM_NOTIFY come there.
 * Those are taken (true) and handled as on the callback service, the
 * answers going back through @svc; anything else (false) is the relay's,
 * as from any client.
 */
bool nlm_callback_take(void *arg, struct side_service *svc, const struct side_service_peer *peer,
		       const uint8_t *msg, size_t len);

/*
 * After a configuration reload: the route's new settings (the old ones are
 * freed once every worker has taken the new configuration).
 */
void nlm_callback_set_route(struct nlm_callback *cb, const struct gw_route *route);
void nlm_callback_stop(struct nlm_callback *cb);

/* Whether the server can find the service (a portmapper or a registration). */
bool nlm_callback_advertised(const struct nlm_callback *cb);
uint16_t nlm_callback_port(const struct nlm_callback *cb);
uint32_t nlm_callback_pending(const struct nlm_callback *cb);
const struct nlm_callback_stats *nlm_callback_stats(const struct nlm_callback *cb);

#endif
