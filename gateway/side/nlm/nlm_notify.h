/* SPDX-License-Identifier: MIT */
/*
 * gateway/side/nlm/nlm_notify.h - the server's SM_NOTIFY (its reboot) relayed to
 * the client hosts that held locks through the route (docs/architecture.md,
 * "The server's SM_NOTIFY").
 *
 * The server's lockd monitors one host, the gateway, by the address its
 * LOCKs came from (the upstream-side address). After a reboot the server's
 * sm-notify asks the portmapper at port 111 there for NSM and sends
 * SM_NOTIFY; the NLM callback service (gateway/side/nlm/nlm_callback.h) shares its
 * socket and portmapper with this module and hands it NSM calls. A
 * notification from the server's address with a state number not relayed
 * before makes the route forget its lock records (the server has lost the
 * locks) and notify each client host that had some: its portmapper (port
 * 111 of the client) for NSM v1 UDP, then SM_NOTIFY there from the address
 * the client called (recorded with its locks; the listen address when not
 * known), with that address as mon_name (what the client's statd monitors:
 * the server it mounted) and the server's state passed through.
 * The client's lockd then reclaims its locks through the relay, which
 * passes the reclaim flag and records them again.
 *
 * Bounded: max_inflight clients notified at once, the rest queued (up to
 * max_clients); each re-sent (retry_ms, doubling up to 8 s) until it
 * answers or timeout_ms after the server's notification (its grace
 * period: a later reclaim is refused anyway). Counted in nlm_notify_stats.
 */
#ifndef GW_GATEWAY_NLM_NOTIFY_H
#define GW_GATEWAY_NLM_NOTIFY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "gateway/side/nlm/nlm_relay.h"

struct event_base;
struct gw_counters;
struct gw_route;
struct nlm_notify;

struct nlm_notify_config {
	const struct gw_route *route; /* its listen address: the sender when none is known */
	struct gw_counters *counters; /* the route's */
	struct nlm_relay *relay;      /* the lock records, and so the clients to tell */
	uint16_t pmap_port;	      /* the clients' portmapper (111) */
	uint32_t max_inflight;	      /* clients notified at once (default 16) */
	uint32_t max_clients;	      /* clients of one server reboot (default 1024) */
	uint32_t retry_ms;	      /* first resend (default 1000), doubling to 8 s */
	uint32_t timeout_ms;	      /* then give a client up (default 90000) */
};

struct nlm_notify_stats {
	uint64_t received;	    /* the server's SM_NOTIFY with a new state */
	uint64_t repeated;	    /* the same state again: answered, not relayed */
	uint64_t delivered;	    /* a client's statd answered the gateway's SM_NOTIFY */
	uint64_t not_delivered;	    /* a client that did not answer in time */
	uint64_t not_from_server;   /* dropped: an SM_NOTIFY not from the server */
	uint64_t clients_full;	    /* clients over max_clients, not told */
	uint64_t restart_clients;   /* clients to tell of the gateway's own restart */
	uint64_t restart_delivered; /* of those, the ones whose statd answered */
};

/* NULL with a message in @err when the socket toward clients cannot be made. */
struct nlm_notify *nlm_notify_start(struct event_base *base, const struct nlm_notify_config *cfg,
				    const struct sockaddr *server, socklen_t server_len, char *err,
				    size_t errlen);

/*
 * After a configuration reload: the route's new settings (the old ones are
 * freed once every worker has taken the new configuration).
 */
void nlm_notify_set_route(struct nlm_notify *nt, const struct gw_route *route);
void nlm_notify_stop(struct nlm_notify *nt);

/* Whether @msg is a call to NSM (program 100024): this module's to answer. */
bool nlm_notify_is_nsm(const uint8_t *msg, size_t len);

/*
 * The answer to the NSM call @msg from @peer in @out (its length, 0:
 * none); a new server SM_NOTIFY also starts the clients' notifications.
 */
size_t nlm_notify_on_call(struct nlm_notify *nt, const struct sockaddr *peer, socklen_t peer_len,
			  const uint8_t *msg, size_t len, uint8_t *out, size_t cap);

/*
 * The gateway restarted: tell each of @hosts (the client hosts that held
 * locks through the previous instance, nlm_state_load_clients()) that
 * "its server rebooted", with @state (the gateway's own NSM state, larger
 * than any before), as a server reboot's round does: SM_NOTIFY from the
 * address each called, bounded and re-sent until timeout_ms. Their lockd then
 * reclaim (nlm_relay_set_reclaim_window()). Replaces a round still going.
 * Returns how many are told (at most max_clients; the rest counted).
 */
size_t nlm_notify_gateway_restarted(struct nlm_notify *nt, const struct nlm_peer *hosts, size_t n,
				    int32_t state);

/* Clients being notified or queued now. */
uint32_t nlm_notify_pending(const struct nlm_notify *nt);
const struct nlm_notify_stats *nlm_notify_stats(const struct nlm_notify *nt);

#endif
