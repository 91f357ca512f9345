/* SPDX-License-Identifier: MIT */
#include "gateway/side/nlm/nlm_relay.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>
#include <rpc/types.h>
#include <rpc/xdr.h>

#include "common/clock.h"
#include "common/log.h"
#include "common/xdr.h"
#include "gateway/counters/counters.h"
#include "gateway/side/nlm/nlm_async.h"
#include "gateway/side/nlm/nlm_relay_priv.h"
#include "gateway/side/rpc/portmap.h"

struct nlm_relay *nlm_relay_new(const struct nlm_relay_config *cfg)
{
	size_t name_len = cfg->caller_name ? strlen(cfg->caller_name) : 0;
	struct nlm_relay *rl;

	if (name_len == 0 || name_len > NLM_LM_MAXSTRLEN) {
		errno = EINVAL;
		return NULL;
	}
	rl = calloc(1, sizeof(*rl));
	if (!rl) {
		errno = ENOMEM;
		return NULL;
	}
	rl->cfg = *cfg;
	rl->name_len = (uint32_t)name_len;
	if (!rl->cfg.now_us)
		rl->cfg.now_us = gw_now_us;
	/*
	 * Sent again only once the side_relay has given the last send up (its
	 * timer's period later), so that one UNLOCK never holds two slots.
	 */
	rl->resend_us =
		((uint64_t)(cfg->send_timeout_ms ? cfg->send_timeout_ms : DEFAULT_SEND_TIMEOUT_MS) +
		 NLM_RELEASE_TICK_MS) *
		1000;
	rl->st = nlm_state_new(&cfg->limits, (uint64_t)(uintptr_t)rl ^ 0x9e3779b97f4a7c15ull);
	if (!rl->st || !nlm_release_init(rl)) {
		int e = errno;
		nlm_relay_free(rl);
		errno = e;
		return NULL;
	}
	/* Made now, not when first needed: a relay whose queue could never be re-sent is refused.
	 */
	if (cfg->base) {
		rl->rq.ev = event_new(cfg->base, -1, EV_PERSIST, nlm_release_on_timer, rl);
		if (!rl->rq.ev) {
			nlm_relay_free(rl);
			errno = ENOMEM;
			return NULL;
		}
	}
	return rl;
}

void nlm_relay_free(struct nlm_relay *rl)
{
	if (!rl)
		return;
	if (rl->rq.ev)
		event_free(rl->rq.ev);
	free(rl->rq.e);
	free(rl->rq.free);
	nlm_state_free(rl->st);
	free(rl);
}

void nlm_relay_set_send(struct nlm_relay *rl, nlm_relay_send_fn send, void *arg)
{
	rl->cfg.send = send;
	rl->cfg.send_arg = arg;
}

bool nlm_relay_client_of(struct nlm_relay *rl, int32_t svid, struct nlm_bytes oh,
			 struct nlm_client_owner *out)
{
	return nlm_state_lookup_upstream(rl->st, svid, oh, out);
}

bool nlm_relay_send_own(struct nlm_relay *rl, const uint8_t *msg, size_t len)
{
	return rl->cfg.send && rl->cfg.send(rl->cfg.send_arg, msg, len);
}

void nlm_relay_set_reclaim_window(struct nlm_relay *rl, uint64_t until_us)
{
	rl->reclaim_until_us = until_us;
}

const struct nlm_relay_stats *nlm_relay_stats(const struct nlm_relay *rl)
{
	return &rl->stats;
}

bool nlm_relay_take_clients_dirty(struct nlm_relay *rl)
{
	return nlm_state_take_clients_dirty(rl->st);
}

const struct nlm_state *nlm_relay_state(const struct nlm_relay *rl)
{
	return rl->st;
}

/* ---- answers the relay gives itself ---------------------------------------- */

static size_t answer_rpc_error(struct nlm_relay *rl, uint32_t xid, uint32_t stat, uint32_t lo,
			       uint32_t hi, uint8_t *out, size_t cap)
{
	rl->cfg.counters->events[stat == RPCSTAT_GARBAGE_ARGS ? GW_EV_GARBAGE_ARGS
							      : GW_EV_RPC_ERROR_REPLY]++;
	return rpc_encode_accept_error(out, cap, xid, stat, lo, hi);
}

/*
 * An NLM result with @stat for the call @xid: a TEST's result without a
 * holder and the others' nlm_res are the same bytes (cookie, stat).
 */
static size_t answer_nlm_stat(uint32_t xid, uint32_t vers, struct nlm_bytes cookie, uint32_t stat,
			      uint8_t *out, size_t cap)
{
	struct nlm_testres r = { .cookie = cookie, .stat = stat };
	size_t hn = rpc_encode_accept_error(out, cap, xid, RPCSTAT_SUCCESS, 0, 0), m;

	if (!hn || nlm_encode_testres(vers, &r, out + hn, cap - hn, &m) != 0)
		return 0;
	return hn + m;
}

/*
 * A client's _RES: the gateway never sends a client a _MSG (the server's
 * GRANTED_MSG reaches it as GRANTED), so it answers nothing. The empty
 * reply a _RES gets, then dropped.
 */
static size_t answer_res_from_client(struct nlm_relay *rl, uint32_t xid, uint8_t *out, size_t cap)
{
	nlm_async_from_client(rl->async);
	return rpc_encode_accept_error(out, cap, xid, RPCSTAT_SUCCESS, 0, 0);
}

/* ---- the call hook ---------------------------------------------------------- */

/*
 * The gateway's grace period after its restart (nlm_relay_set_reclaim_window()):
 * true when the call is to be answered NLM_DENIED_GRACE_PERIOD; a reclaim
 * is turned into an ordinary non-blocking LOCK in @a. A _MSG form is never
 * refused (its result would have to be a _RES call of the gateway's): only
 * its reclaim is converted. A new SHARE is refused as a new LOCK is.
 */
static bool in_gateway_grace(struct nlm_relay *rl, uint32_t proc, bool msg_form, struct nlm_args *a)
{
	if (!rl->reclaim_until_us)
		return false;
	/* Only its end closes the window: any other call in it leaves it open. */
	if (rl->cfg.now_us() >= rl->reclaim_until_us) {
		rl->reclaim_until_us = 0;
		return false;
	}
	if (a->kind == NLM_ARGS_SHARE) {
		/*
		 * A share reclaim passes (Linux lockd checks `reclaim` on a
		 * SHARE only in its own grace); a new SHARE waits behind the
		 * reclaims as a new LOCK does. An UNSHARE holds nothing new.
		 */
		if (a->reclaim || proc != NLMPROC_SHARE)
			return false;
		rl->stats.grace_refused++;
		return true;
	}
	if (a->kind != NLM_ARGS_LOCK)
		return false;
	if (a->reclaim) {
		/*
		 * The server is not in grace (only the gateway restarted) and
		 * refuses a reclaim outside it; as an ordinary LOCK it is
		 * granted unless someone took the lock meanwhile, which the
		 * client must then hear (DENIED: its kernel marks the lock
		 * lost). Never blocking: a reclaim must not wait behind the
		 * one who took it.
		 */
		a->reclaim = false;
		a->block = false;
		rl->stats.reclaims_converted++;
		return false;
	}
	if (msg_form || (proc != NLMPROC_LOCK && proc != NLMPROC_NM_LOCK))
		return false;
	rl->stats.grace_refused++;
	return true;
}

static bool relayed_proc(uint32_t vers, uint32_t proc)
{
	switch (proc) {
	case NLMPROC_TEST:
	case NLMPROC_LOCK:
	case NLMPROC_CANCEL:
	case NLMPROC_UNLOCK:
		return true;
	case NLMPROC_NM_LOCK:
	case NLMPROC_SHARE:
	case NLMPROC_UNSHARE:
		return vers != 1; /* v3's additions */
	default:
		return false;
	}
}

/* A SHARE's or UNSHARE's result with @stat (sequence 0, as Linux lockd's). */
static size_t answer_share_stat(uint32_t xid, struct nlm_bytes cookie, uint32_t stat, uint8_t *out,
				size_t cap)
{
	struct nlm_shareres r = { .cookie = cookie, .stat = stat };
	size_t hn = rpc_encode_accept_error(out, cap, xid, RPCSTAT_SUCCESS, 0, 0), m;

	if (!hn || nlm_encode_shareres(&r, out + hn, cap - hn, &m) != 0)
		return 0;
	return hn + m;
}

/*
 * A client's FREE_ALL (its reboot, from a client without NSM): never
 * relayed, since upstream every lock is the gateway's caller name's and it
 * would free every client's. The sender's locks and shares are released as
 * at its SM_NOTIFY; the name in the arguments is the client's word, logged
 * only. Linux lockd frees the host's resources whatever the state and
 * answers with a void result: so does the gateway (a retransmission finds
 * nothing left to release).
 */
static size_t free_all(struct nlm_relay *rl, const struct side_service_peer *peer,
		       const struct rpc_call_hdr *h, const uint8_t *msg, size_t len, uint8_t *out,
		       size_t cap)
{
	struct gw_host host;
	struct nlm_bytes name;
	int32_t state;

	if (nlm_decode_notify(msg + h->args_off, len - h->args_off, &name, &state) != 0) {
		gw_debug("%s: nlm relay: FREE_ALL arguments that do not decode: GARBAGE_ARGS",
			 rl->cfg.route_name);
		return answer_rpc_error(rl, h->xid, RPCSTAT_GARBAGE_ARGS, 0, 0, out, cap);
	}
	if (!gw_host_from_sockaddr(&host, (const struct sockaddr *)&peer->addr, peer->addrlen))
		return answer_rpc_error(rl, h->xid, RPCSTAT_SYSTEM_ERR, 0, 0, out, cap);
	/*
	 * Debug only: a peer repeating FREE_ALL must not fill the log (a
	 * release is logged). The name is the peer's bytes: shown only when
	 * printable ASCII, and cut.
	 */
	bool printable = true;
	for (uint32_t i = 0; i < name.len && printable; i++)
		printable = name.p[i] >= 0x20 && name.p[i] < 0x7f;
	gw_debug("%s: nlm relay: FREE_ALL (name \"%.*s\", state %d): its sender's locks and "
		 "shares released",
		 rl->cfg.route_name, printable ? (int)(name.len > 64 ? 64 : name.len) : 0,
		 name.len ? (const char *)name.p : "", state);
	nlm_release_client(rl, &host, "FREE_ALL");
	return rpc_encode_accept_error(out, cap, h->xid, RPCSTAT_SUCCESS, 0, 0);
}

/*
 * A SHARE or UNSHARE: its owner handle becomes the client's upstream owner
 * as a lock's does (keyed with svid 0: a share has none), so that two
 * clients' equal handles are two owners to the server. An UNSHARE of an
 * owner the gateway never saw holds nothing: answered GRANTED, as Linux
 * lockd answers an UNSHARE that finds nothing, without making an owner.
 * 0: @a rewritten (its owner handle points into @id); else the answer's
 * length in *@n. The owner has the call counted in flight
 * (nlm_state_call_begin()) until its reply or its end unanswered.
 */
static int share_owner(struct nlm_relay *rl, const struct gw_host *host,
		       const struct rpc_call_hdr *h, struct nlm_args *a, struct nlm_owner_id *id,
		       uint8_t *out, size_t cap, size_t *n)
{
	if (h->proc == NLMPROC_UNSHARE &&
	    nlm_state_find_owner(rl->st, host, 0, a->lock.oh, id) != 0) {
		*n = answer_share_stat(h->xid, a->cookie, NLM_GRANTED, out, cap);
		return -ENOENT;
	}
	if (nlm_state_owner(rl->st, host, 0, a->lock.oh, id) != 0) {
		rl->cfg.counters->events[GW_EV_NO_BUFFERS]++;
		*n = answer_share_stat(h->xid, a->cookie, NLM_DENIED_NOLOCKS, out, cap);
		return -ENOSPC;
	}
	nlm_state_call_begin(rl->st, id);
	a->lock.oh = (struct nlm_bytes){ id->oh, NLM_TOKEN_LEN };
	a->lock.caller = (struct nlm_bytes){ (const uint8_t *)rl->cfg.caller_name, rl->name_len };
	return 0;
}

enum side_relay_verdict nlm_relay_call_hook(void *arg, const struct side_service_peer *peer,
					    const struct rpc_call_hdr *h, const uint8_t *msg,
					    size_t len, uint8_t *out, size_t cap, size_t *n)
{
	struct nlm_relay *rl = arg;
	struct gw_host host;
	struct nlm_args a;
	struct nlm_owner_id id;
	size_t m;

	*n = 0;
	if (h->proc == NLMPROC_NULL)
		return SIDE_RELAY_PASS;
	/* Linux lockd's answer to version 2, which no one implements. */
	if (h->vers != 1 && h->vers != 3 && h->vers != 4) {
		*n = answer_rpc_error(rl, h->xid, RPCSTAT_PROG_MISMATCH, 1, 4, out, cap);
		return SIDE_RELAY_ANSWERED;
	}
	if (rl->async && (nlm_async_is_res(h->proc) || h->proc == NLMPROC_GRANTED_RES)) {
		*n = answer_res_from_client(rl, h->xid, out, cap);
		return SIDE_RELAY_ANSWERED;
	}
	if (h->proc == NLMPROC_FREE_ALL && h->vers != 1) {
		*n = free_all(rl, peer, h, msg, len, out, cap);
		return SIDE_RELAY_ANSWERED;
	}
	bool msg_form = rl->async && nlm_async_is_msg(h->proc);
	if (!relayed_proc(h->vers, h->proc) && !msg_form) {
		*n = answer_rpc_error(rl, h->xid, RPCSTAT_PROC_UNAVAIL, 0, 0, out, cap);
		return SIDE_RELAY_ANSWERED;
	}
	if (!gw_host_from_sockaddr(&host, (const struct sockaddr *)&peer->addr, peer->addrlen)) {
		*n = answer_rpc_error(rl, h->xid, RPCSTAT_SYSTEM_ERR, 0, 0, out, cap);
		return SIDE_RELAY_ANSWERED;
	}
	if (nlm_decode_args(h->vers, h->proc, msg + h->args_off, len - h->args_off, &a) != 0) {
		gw_debug("%s: nlm relay: %s arguments that do not decode: GARBAGE_ARGS",
			 rl->cfg.route_name, nlm_args_kind(h->proc) ? "lock" : "other");
		*n = answer_rpc_error(rl, h->xid, RPCSTAT_GARBAGE_ARGS, 0, 0, out, cap);
		return SIDE_RELAY_ANSWERED;
	}
	if (a.kind == NLM_ARGS_SHARE) {
		if (in_gateway_grace(rl, h->proc, false, &a)) {
			*n = answer_share_stat(h->xid, a.cookie, NLM_DENIED_GRACE_PERIOD, out, cap);
			return SIDE_RELAY_ANSWERED;
		}
		if (share_owner(rl, &host, h, &a, &id, out, cap, n) != 0)
			return SIDE_RELAY_ANSWERED;
		goto encode;
	}
	/*
	 * An UNLOCK of an owner the gateway does not know holds nothing through
	 * it (its locks were recorded under an owner that exists): answered as
	 * Linux lockd answers an UNLOCK that finds nothing, without making an
	 * owner a client could otherwise mint by the thousand. An UNLOCK_MSG
	 * waits for an UNLOCK_RES call, which only the server's result makes:
	 * it is relayed (its owner counts against the client's bound).
	 */
	if (a.kind == NLM_ARGS_UNLOCK && !msg_form &&
	    nlm_state_find_owner(rl->st, &host, a.lock.svid, a.lock.oh, &id) != 0) {
		*n = answer_nlm_stat(h->xid, h->vers, a.cookie, NLM_GRANTED, out, cap);
		return SIDE_RELAY_ANSWERED;
	}
	/* Before an owner is made: a refused LOCK holds nothing. */
	if (in_gateway_grace(rl, h->proc, msg_form, &a)) {
		*n = answer_nlm_stat(h->xid, h->vers, a.cookie, NLM_DENIED_GRACE_PERIOD, out, cap);
		return SIDE_RELAY_ANSWERED;
	}
	if (nlm_state_owner(rl->st, &host, a.lock.svid, a.lock.oh, &id) != 0) {
		/* A bound of nlm_state: the client is told there is no room for its lock. */
		rl->cfg.counters->events[GW_EV_NO_BUFFERS]++;
		/* A _MSG's reply carries no result: its RPC fails, as for a full async table. */
		*n = msg_form ? answer_rpc_error(rl, h->xid, RPCSTAT_SYSTEM_ERR, 0, 0, out, cap)
			      : answer_nlm_stat(h->xid, h->vers, a.cookie, NLM_DENIED_NOLOCKS, out,
						cap);
		return SIDE_RELAY_ANSWERED;
	}
	/*
	 * In flight from here: neither it nor its client is reclaimed until its
	 * end (nlm_relay_reply_hook(), nlm_relay_gone_hook(); for a _MSG, its
	 * _RES or the asynchronous table's timeout), which gives back an owner
	 * that then holds nothing.
	 */
	nlm_state_call_begin(rl->st, &id);
	a.lock.svid = id.svid;
	a.lock.oh = (struct nlm_bytes){ id.oh, NLM_TOKEN_LEN };
	a.lock.caller = (struct nlm_bytes){ (const uint8_t *)rl->cfg.caller_name, rl->name_len };
	uint8_t cookie[NLM_ASYNC_COOKIE_LEN];
	if (msg_form &&
	    !nlm_async_register(rl->async, &host, &peer->local, h->vers, h->proc, &a, cookie)) {
		/* No room to remember where its result goes: the client's RPC fails. */
		nlm_state_call_end(rl->st, &id, true);
		*n = answer_rpc_error(rl, h->xid, RPCSTAT_SYSTEM_ERR, 0, 0, out, cap);
		return SIDE_RELAY_ANSWERED;
	}
encode:
	if (peer->local.ss_family) {
		struct gw_host via;
		if (gw_host_from_sockaddr(&via, (const struct sockaddr *)&peer->local,
					  sizeof(peer->local)))
			nlm_state_client_via(rl->st, &id, &via, peer->conn_id != 0);
	}
	if (cap < h->args_off ||
	    nlm_encode_args(&a, out + h->args_off, cap - h->args_off, &m) != 0) {
		/* Never sent: it ends here (a _MSG's entry ends it at its timeout). */
		if (!msg_form)
			nlm_state_call_end(rl->st, &id, true);
		*n = answer_rpc_error(rl, h->xid, RPCSTAT_SYSTEM_ERR, 0, 0, out, cap);
		return SIDE_RELAY_ANSWERED;
	}
	memcpy(out, msg, h->args_off);
	*n = h->args_off + m;
	return SIDE_RELAY_REWRITTEN;
}

/* ---- the reply hook --------------------------------------------------------- */

/* The upstream owner in a share the call hook wrote (its token alone). */
static bool share_owner_of(const struct nlm_lock *l, struct nlm_owner_id *id)
{
	return nlm_state_owner_of_token(l->oh, id);
}

/* The upstream owner in a lock the call hook wrote. */
static bool owner_of(const struct nlm_lock *l, struct nlm_owner_id *id)
{
	if (l->oh.len != NLM_TOKEN_LEN)
		return false;
	id->svid = l->svid;
	memcpy(id->oh, l->oh.p, NLM_TOKEN_LEN);
	return true;
}

static size_t encode_own_call(struct nlm_relay *rl, uint32_t vers, uint32_t proc,
			      const struct nlm_args *a, uint8_t *out, size_t cap);

/*
 * A lock granted (or blocked) that the state cannot record - no room, or
 * its owner forgotten while the LOCK was upstream (reclaimed, or the
 * client rebooted): the client's reboot could not release it, nor could a
 * later UNLOCK, which would come under a new owner. So it is given back (a
 * Linux lockd's UNLOCK also cancels a blocked request) and the client
 * refused.
 */
static void give_back(struct nlm_relay *rl, uint32_t vers, const struct nlm_args *call)
{
	struct nlm_args u = *call;
	size_t n;

	u.kind = NLM_ARGS_UNLOCK;
	/* The gateway's name, as in its LOCK: an _MSG's saved arguments carry none. */
	u.lock.caller = (struct nlm_bytes){ (const uint8_t *)rl->cfg.caller_name, rl->name_len };
	n = encode_own_call(rl, vers, NLMPROC_UNLOCK, &u, rl->own, sizeof(rl->own));
	if (!n || !rl->cfg.send || !rl->cfg.send(rl->cfg.send_arg, rl->own, n))
		gw_warn("%s: nlm relay: a lock it had no room to record could not be given back",
			rl->cfg.route_name);
}

/* A LOCK's result: record what the server holds for the owner. */
static enum side_relay_verdict lock_result(struct nlm_relay *rl, const struct relay_call *c,
					   const struct nlm_args *a, const uint8_t *msg, size_t len,
					   size_t off, uint8_t *out, size_t cap, size_t *n)
{
	struct nlm_res res;
	struct nlm_owner_id id;

	if (nlm_decode_res(msg + off, len - off, &res) != 0 || !owner_of(&a->lock, &id) ||
	    (res.stat != NLM_GRANTED && res.stat != NLM_BLOCKED))
		return SIDE_RELAY_PASS;
	int e = nlm_state_record_lock(rl->st, &id, c->vers, a->lock.fh, a->lock.offset,
				      a->lock.len);
	if (e == 0 || len > cap)
		return SIDE_RELAY_PASS;
	rl->cfg.counters->events[GW_EV_NO_BUFFERS]++;
	give_back(rl, c->vers, a);
	/* The stat is the last word: nlm_decode_res() allows nothing after it. */
	memcpy(out, msg, len);
	xdr_put32(out + len - 4, NLM_DENIED_NOLOCKS);
	*n = len;
	return SIDE_RELAY_REWRITTEN;
}

/*
 * A SHARE's result: a share granted is recorded (the client's reboot
 * UNSHAREs it); one the state has no room for is given back (an UNSHARE of
 * the relay's own) and the client told DENIED_NOLOCKS. An UNSHARE granted
 * forgets the record. The shareres passes back unchanged otherwise: its
 * cookie is the client's.
 */
static enum side_relay_verdict share_result(struct nlm_relay *rl, const struct relay_call *c,
					    const struct nlm_args *a, const uint8_t *msg,
					    size_t len, size_t off, uint8_t *out, size_t cap,
					    size_t *n)
{
	struct nlm_shareres res;
	struct nlm_owner_id id;

	if (nlm_decode_shareres(msg + off, len - off, &res) != 0 || res.stat != NLM_GRANTED ||
	    !share_owner_of(&a->lock, &id))
		return SIDE_RELAY_PASS;
	if (c->proc == NLMPROC_UNSHARE) {
		nlm_state_unshared(rl->st, &id, a->lock.fh);
		return SIDE_RELAY_PASS;
	}
	if (nlm_state_record_share(rl->st, &id, c->vers, a->lock.fh) == 0 || len > cap)
		return SIDE_RELAY_PASS;
	rl->cfg.counters->events[GW_EV_NO_BUFFERS]++;
	size_t m = encode_own_call(rl, c->vers, NLMPROC_UNSHARE, a, rl->own, sizeof(rl->own));
	if (!m || !rl->cfg.send || !rl->cfg.send(rl->cfg.send_arg, rl->own, m))
		gw_warn("%s: nlm relay: a share it had no room to record could not be given back",
			rl->cfg.route_name);
	/* The stat is the word before the sequence, the last. */
	memcpy(out, msg, len);
	xdr_put32(out + len - 8, NLM_DENIED_NOLOCKS);
	*n = len;
	return SIDE_RELAY_REWRITTEN;
}

/* A TEST's result: a holder that is the asking client's own owner is shown as its. */
static enum side_relay_verdict test_result(struct nlm_relay *rl, const struct relay_call *c,
					   const uint8_t *msg, size_t len, size_t off, uint8_t *out,
					   size_t cap, size_t *n)
{
	struct nlm_testres r;
	struct gw_host host;
	size_t m;

	if (!gw_host_from_sockaddr(&host, (const struct sockaddr *)&c->peer.addr,
				   c->peer.addrlen) ||
	    nlm_decode_testres(c->vers, msg + off, len - off, &r) != 0 || r.stat != NLM_DENIED)
		return SIDE_RELAY_PASS;
	nlm_state_holder_view(rl->st, &host, &r.holder);
	if (cap < off || nlm_encode_testres(c->vers, &r, out + off, cap - off, &m) != 0)
		return SIDE_RELAY_PASS;
	memcpy(out, msg, off);
	*n = off + m;
	return SIDE_RELAY_REWRITTEN;
}

/* The arguments of @c as they went upstream (the upstream owner in them). */
static bool sent_args(const struct relay_call *c, struct nlm_args *a)
{
	struct rpc_call_hdr ch;

	return nlm_args_kind(c->proc) && rpc_call_decode(c->msg, c->len, &ch) == RPC_HDR_CALL &&
	       nlm_decode_args(c->vers, c->proc, c->msg + ch.args_off, c->len - ch.args_off, a) ==
		       0;
}

void nlm_relay_call_done(struct nlm_relay *rl, const struct nlm_args *a, bool answered)
{
	struct nlm_owner_id id;
	/* Only a LOCK or a SHARE can leave the server holding something unrecorded. */
	bool settled = answered || (a->kind != NLM_ARGS_LOCK && a->kind != NLM_ARGS_SHARE);

	if (a->kind == NLM_ARGS_SHARE ? share_owner_of(&a->lock, &id) : owner_of(&a->lock, &id))
		nlm_state_call_end(rl->st, &id, settled);
}

/*
 * Whether @c's end is the end of a call the call hook counted in flight:
 * a client's, not a _MSG (whose asynchronous entry ends it), not one of
 * the relay's own (@c->svc NULL: nothing counted).
 */
static bool counted_call(const struct relay_call *c)
{
	return c->svc && !nlm_async_is_msg(c->proc);
}

void nlm_relay_gone_hook(void *arg, const struct relay_call *c)
{
	struct nlm_args a;

	/* Never sent (the port unknown, the table full): nothing can be held for it. */
	if (counted_call(c) && sent_args(c, &a))
		nlm_relay_call_done(arg, &a, c->sent_us == 0);
}

/* The server's answer to @c, whose arguments upstream were @a: its bookkeeping. */
static enum side_relay_verdict reply_results(struct nlm_relay *rl, const struct relay_call *c,
					     const struct nlm_args *a, const uint8_t *msg,
					     size_t len, uint8_t *out, size_t cap, size_t *n)
{
	struct nlm_res res;
	struct nlm_owner_id id;
	size_t off;

	/* Before the results are looked at: an RPC error is an answer to it too. */
	if (nlm_release_reply(rl, c, a, msg, len) || !rpc_reply_results(msg, len, &off))
		return SIDE_RELAY_PASS;
	switch (a->kind) {
	case NLM_ARGS_TEST:
		return test_result(rl, c, msg, len, off, out, cap, n);
	case NLM_ARGS_LOCK:
		return lock_result(rl, c, a, msg, len, off, out, cap, n);
	case NLM_ARGS_UNLOCK:
		if (nlm_decode_res(msg + off, len - off, &res) == 0 && res.stat == NLM_GRANTED &&
		    owner_of(&a->lock, &id))
			nlm_state_unlocked(rl->st, &id, a->lock.fh, a->lock.offset, a->lock.len);
		return SIDE_RELAY_PASS;
	case NLM_ARGS_CANCEL:
		/*
		 * Forgets nothing: the records do not tell a blocked request
		 * from a lock held on the same range (one record for both), and
		 * Linux lockd answers GRANTED to a CANCEL that found nothing.
		 * A record kept too long costs an UNLOCK at the client's reboot;
		 * one dropped too soon would leave a held lock that no reboot
		 * releases.
		 */
		return SIDE_RELAY_PASS;
	case NLM_ARGS_SHARE:
		return share_result(rl, c, a, msg, len, off, out, cap, n);
	case NLM_ARGS_NONE:
		break;
	}
	return SIDE_RELAY_PASS;
}

enum side_relay_verdict nlm_relay_reply_hook(void *arg, const struct relay_call *c,
					     const uint8_t *msg, size_t len, uint8_t *out,
					     size_t cap, size_t *n)
{
	struct nlm_relay *rl = arg;
	struct nlm_args a;

	*n = 0;
	if (!sent_args(c, &a))
		return SIDE_RELAY_PASS;
	enum side_relay_verdict v = reply_results(rl, c, &a, msg, len, out, cap, n);
	/*
	 * After the bookkeeping: a lock granted keeps its owner, a TEST or a
	 * refused LOCK leaves nothing behind.
	 */
	if (counted_call(c))
		nlm_relay_call_done(rl, &a, true);
	return v;
}

/* ---- the relay's own calls and the NSM service ------------------------------- */

/*
 * A call of the relay's own: AUTH_NONE, which Linux lockd accepts (it
 * checks the address against the exports). The fixed header words are
 * written directly; the arguments by nlm_encode_args(). The XID is the
 * side_relay's to set. @cookie is the call's (the server's nlm_res echoes it).
 */
size_t nlm_relay_encode_call(uint32_t vers, uint32_t proc, const struct nlm_args *a,
			     struct nlm_bytes cookie, uint8_t *out, size_t cap)
{
	size_t h = rpc_encode_call_hdr(out, cap, 0, NLM_PROG, vers, proc);
	struct nlm_args u = *a;
	size_t m;

	if (!h)
		return 0;
	u.cookie = cookie;
	u.vers = vers;
	if (nlm_encode_args(&u, out + h, cap - h, &m) != 0)
		return 0;
	return h + m;
}

/* An own call with a 4-byte cookie: never taken for a release queue's UNLOCK. */
static size_t encode_own_call(struct nlm_relay *rl, uint32_t vers, uint32_t proc,
			      const struct nlm_args *a, uint8_t *out, size_t cap)
{
	uint8_t cookie[4];

	xdr_put32(cookie, ++rl->cookie);
	return nlm_relay_encode_call(vers, proc, a, (struct nlm_bytes){ cookie, sizeof(cookie) },
				     out, cap);
}

/* ---- the NSM service --------------------------------------------------------- */

size_t nlm_relay_nsm_answer(struct nlm_relay *rl, const struct side_service_peer *peer,
			    const uint8_t *msg, size_t len, uint8_t *out, size_t cap,
			    size_t *unlocks)
{
	struct rpc_call_hdr h;
	struct gw_host host;
	int32_t state;

	*unlocks = 0;
	enum rpc_hdr_status st = rpc_call_decode(msg, len, &h);
	switch (st) {
	case RPC_HDR_CALL:
		break;
	case RPC_HDR_BAD_RPCVERS:
	case RPC_HDR_BAD_AUTH:
		rl->cfg.counters->events[GW_EV_RPC_ERROR_REPLY]++;
		return rpc_encode_denied(out, cap, h.xid, st == RPC_HDR_BAD_AUTH);
	default:
		rl->cfg.counters->events[GW_EV_MALFORMED_RECORD]++;
		return 0;
	}
	if (h.prog != NSM_PROG)
		return answer_rpc_error(rl, h.xid, RPCSTAT_PROG_UNAVAIL, 0, 0, out, cap);
	if (h.vers != NSM_VERS)
		return answer_rpc_error(rl, h.xid, RPCSTAT_PROG_MISMATCH, NSM_VERS, NSM_VERS, out,
					cap);
	/* SM_STAT, SM_MON, SM_UNMON...: for a host's own lockd, never from the network. */
	if (h.proc != NSMPROC_NULL && h.proc != NSMPROC_NOTIFY)
		return answer_rpc_error(rl, h.xid, RPCSTAT_PROC_UNAVAIL, 0, 0, out, cap);
	gw_counters_count_call(rl->cfg.counters, h.prog, h.vers, h.proc);
	if (h.proc == NSMPROC_NOTIFY) {
		if (nsm_decode_stat_chge(msg + h.args_off, len - h.args_off, &state) != 0)
			return answer_rpc_error(rl, h.xid, RPCSTAT_GARBAGE_ARGS, 0, 0, out, cap);
		/*
		 * The notifying host is the sender: mon_name is the client's
		 * word, and lockd too knows its clients by address. The state
		 * it sent last again is a retransmission (or a replay): the
		 * locks taken since that reboot stay.
		 */
		if (gw_host_from_sockaddr(&host, (const struct sockaddr *)&peer->addr,
					  peer->addrlen)) {
			if (nlm_state_client_notified(rl->st, &host, state, rl->cfg.now_us()))
				*unlocks = nlm_release_client(rl, &host, "SM_NOTIFY");
			else
				gw_info("%s: nlm relay: a client's SM_NOTIFY repeated its last "
					"state %d: nothing released",
					rl->cfg.route_name, state);
		}
	}
	gw_counters_count_reply(rl->cfg.counters, h.prog, h.vers, h.proc);
	return rpc_encode_accept_error(out, cap, h.xid, RPCSTAT_SUCCESS, 0, 0);
}

void nlm_relay_on_nsm(void *arg, struct side_service *svc, const struct side_service_peer *peer,
		      const uint8_t *msg, size_t len)
{
	struct nlm_relay *rl = arg;
	uint8_t out[64];
	size_t unlocks, n = nlm_relay_nsm_answer(rl, peer, msg, len, out, sizeof(out), &unlocks);

	if (n)
		side_service_reply(svc, peer, out, n);
}

/* ---- the asynchronous procedures' results (gateway/side/nlm/nlm_async.h) ------------- */

void nlm_relay_set_async(struct nlm_relay *rl, struct nlm_async *as)
{
	rl->async = as;
}

bool nlm_relay_lock_result(struct nlm_relay *rl, uint32_t vers, const struct nlm_args *a,
			   uint32_t stat)
{
	struct nlm_owner_id id;

	if ((stat != NLM_GRANTED && stat != NLM_BLOCKED) || !owner_of(&a->lock, &id))
		return true;
	if (nlm_state_record_lock(rl->st, &id, vers, a->lock.fh, a->lock.offset, a->lock.len) == 0)
		return true;
	rl->cfg.counters->events[GW_EV_NO_BUFFERS]++;
	give_back(rl, vers, a);
	return false;
}

bool nlm_relay_owner_holds(struct nlm_relay *rl, const struct nlm_args *a)
{
	struct nlm_owner_id id;

	return owner_of(&a->lock, &id) && nlm_state_owner_holds(rl->st, &id, a->lock.fh);
}

void nlm_relay_give_back(struct nlm_relay *rl, uint32_t vers, const struct nlm_args *a)
{
	give_back(rl, vers, a);
}

void nlm_relay_unlock_result(struct nlm_relay *rl, const struct nlm_args *a, uint32_t stat)
{
	struct nlm_owner_id id;

	if (stat == NLM_GRANTED && owner_of(&a->lock, &id))
		nlm_state_unlocked(rl->st, &id, a->lock.fh, a->lock.offset, a->lock.len);
}

void nlm_relay_holder_view(struct nlm_relay *rl, const struct gw_host *host, struct nlm_holder *h)
{
	nlm_state_holder_view(rl->st, host, h);
}

size_t nlm_relay_server_rebooted(struct nlm_relay *rl, struct nlm_peer *hosts, size_t max)
{
	size_t n = nlm_state_server_rebooted(rl->st, hosts, max);

	/* The server is in grace now: the clients' reclaims must reach it as reclaims. */
	rl->reclaim_until_us = 0;
	/* It has lost every lock: the UNLOCKs still queued are moot. */
	nlm_release_drop_all(rl);

	gw_info("%s: nlm relay: the server rebooted (its SM_NOTIFY): the lock records of %zu "
		"client host%s forgotten",
		rl->cfg.route_name, n, n == 1 ? "" : "s");
	return n;
}

void nlm_relay_forget_lock(struct nlm_relay *rl, const struct nlm_owner_id *owner,
			   struct nlm_bytes fh, uint64_t offset, uint64_t len)
{
	nlm_state_unlocked(rl->st, owner, fh, offset, len);
}

void nlm_relay_set_route_name(struct nlm_relay *rl, const char *route_name)
{
	rl->cfg.route_name = route_name;
}
