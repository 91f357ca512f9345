/* SPDX-License-Identifier: MIT */
/*
 * gateway/side/nlm/nlm_async.h - the clients' asynchronous NLM procedures (TEST_MSG,
 * LOCK_MSG, CANCEL_MSG, UNLOCK_MSG) through the NLM relay, and their results
 * (TEST_RES ... UNLOCK_RES) back (docs/architecture.md, "NLM and NSM relay",
 * "Asynchronous procedures").
 *
 * A server answers X_MSG with an empty RPC reply and sends its result later
 * as a call of its own, X_RES, to the NLM service of the host the X_MSG came
 * from, found through that host's portmapper (Linux lockd: nlmsvc_callback,
 * nlm_async_reply). Upstream that host is the gateway's upstream-side
 * address, where the GRANTED callback service (gateway/side/nlm/nlm_callback.h) and
 * its portmapper are: so the X_RES comes there, and this module maps it back
 * to the client and calls X_RES at the client's lockd, found through the
 * client's portmapper, from the route's listen address.
 *
 * Two clients may use the same cookie, and the cookie is all that ties an
 * X_RES to its X_MSG, so the relay gives each X_MSG a cookie of the
 * gateway's (slot and generation, 8 bytes) and this table remembers the
 * client, its cookie and the lock; the X_RES gets the bookkeeping of the
 * synchronous reply (a LOCK granted or blocked recorded, an UNLOCK
 * forgotten, a TEST holder shown as the client may see it) and the client's
 * cookie back. Its upstream owner has the call counted in flight
 * (nlm_state_call_begin()) from the X_MSG to its X_RES, or to the timeout
 * that gives the X_RES up: the relay's reply to the X_MSG itself is empty. The table is bounded
 * (max_pending) and every entry has a deadline: a result the server never sends, or a client that
 * never takes it, frees its slot; one client host may hold at most max_pending_per_client of the
 * slots, so that a host whose portmapper never answers cannot starve the others. An X_RES from
 * anyone but the server is dropped by the callback service; one with no pending cookie here is
 * dropped and counted, except a LOCK_RES granted (or blocked) for a LOCK_MSG that timed out waiting
 * for it: that lock is given back upstream (the table remembers the last max_pending such
 * LOCK_MSGs).
 *
 * Clients never see a GRANTED_MSG from the gateway (the callback service
 * relays the server's GRANTED_MSG as GRANTED), so a client's GRANTED_RES,
 * or any _RES a client sends, answers nothing: dropped and counted.
 */
#ifndef GW_GATEWAY_NLM_ASYNC_H
#define GW_GATEWAY_NLM_ASYNC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "gateway/side/nlm/nlm_state.h"
#include "gateway/side/nlm/nlm_xdr.h"

struct event_base;
struct gw_counters;
struct gw_route;
struct nlm_relay;
struct nlm_async;

enum { NLM_ASYNC_COOKIE_LEN = 8 };

struct nlm_async_config {
	const struct gw_route *route; /* its listen address: where X_RES to clients leaves from */
	struct gw_counters *counters; /* the route's */
	struct nlm_relay *relay;      /* the lock records, and giving back a lock */
	uint16_t pmap_port;	      /* the clients' portmapper port (111) */
	uint32_t max_pending;	      /* _MSG calls awaiting or delivering results (default 64) */
	uint32_t retry_ms;	      /* resend to the client this often (default 1000) */
	uint32_t timeout_ms;	      /* per stage: the server's X_RES, the client's taking it
					 (default 10000) */
	uint32_t max_pending_per_client; /* of max_pending, one client host's at most
					    (default 16, at most max_pending) */
};

struct nlm_async_stats {
	uint64_t sent;		     /* _MSG calls relayed upstream with a cookie of ours */
	uint64_t delivered;	     /* _RES calls the client's lockd accepted */
	uint64_t full;		     /* _MSG refused: max_pending pending (SYSTEM_ERR) */
	uint64_t unknown_cookie;     /* a server _RES for no pending _MSG of ours: dropped */
	uint64_t from_client;	     /* a _RES a client sent (nothing asked it): dropped */
	uint64_t timed_out;	     /* no _RES from the server, or the client never took it */
	uint64_t refused_client_cap; /* _MSG refused: its client host at max_pending_per_client */
	uint64_t late_given_back;    /* a LOCK_RES granted/blocked after its _MSG timed out:
					the lock given back upstream (UNLOCK) */
	uint64_t portmapper_silent;  /* a result dropped: the client's portmapper did not
					answer (3 GETPORTs; one for a host silent lately) */
	uint64_t yielded;	     /* a result waiting for a silent portmapper dropped for
					a new call, the table being full */
};

/* NULL with a message in @err. 0 in a limit of @cfg: its default. */
struct nlm_async *nlm_async_new(struct event_base *base, const struct nlm_async_config *cfg,
				char *err, size_t errlen);

/*
 * After a configuration reload: the route's new settings (the old ones are
 * freed once every worker has taken the new configuration).
 */
void nlm_async_set_route(struct nlm_async *as, const struct gw_route *route);
void nlm_async_free(struct nlm_async *as);

/* TEST_MSG .. UNLOCK_MSG: the client calls the relay rewrites and remembers. */
bool nlm_async_is_msg(uint32_t proc);
/* TEST_RES .. UNLOCK_RES: the server's results, calls to the callback service. */
bool nlm_async_is_res(uint32_t proc);

/*
 * A client @client's @proc (an X_MSG) whose arguments @a the relay has
 * rewritten (upstream owner): remembered, and @a->cookie replaced by the
 * gateway's, written in @cookie (which @a then points to). The X_RES to
 * the client leaves from @via, the address of this host its call was sent
 * to (family 0: the kernel's choice; common/sendfrom.h). false when the
 * table is full, or @client holds max_pending_per_client entries (each
 * counted): the relay refuses the call.
 */
bool nlm_async_register(struct nlm_async *as, const struct gw_host *client,
			const struct sockaddr_storage *via, uint32_t vers, uint32_t proc,
			struct nlm_args *a, uint8_t cookie[NLM_ASYNC_COOKIE_LEN]);

/*
 * The server's X_RES (version @vers, procedure @proc, its argument body
 * @args): mapped back and sent on to the client. 0; -EBADMSG when the
 * arguments do not decode (the caller answers GARBAGE_ARGS); -ENOENT for no
 * pending X_MSG with its cookie (dropped, counted). The server's call
 * itself gets an empty reply from the caller in the other cases.
 */
int nlm_async_on_res(struct nlm_async *as, uint32_t vers, uint32_t proc, const uint8_t *args,
		     size_t len);

/* A client sent a _RES: nothing of the gateway's asked for one (counted). */
void nlm_async_from_client(struct nlm_async *as);

uint32_t nlm_async_pending(const struct nlm_async *as);
const struct nlm_async_stats *nlm_async_stats(const struct nlm_async *as);

#endif
