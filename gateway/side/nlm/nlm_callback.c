/* SPDX-License-Identifier: MIT */
#include "gateway/side/nlm/nlm_callback.h"

#include <errno.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/event.h>
#include <rpc/rpc.h>
#include <rpc/pmap_clnt.h>

#include "common/clock.h"
#include "common/host.h"
#include "common/log.h"
#include "common/random.h"
#include "common/sendfrom.h"
#include "common/xdr.h"
#include "conf/config.h"
#include "gateway/counters/counters.h"
#include "gateway/side/nlm/nlm_async.h"
#include "gateway/side/nlm/nlm_notify.h"
#include "gateway/side/rpc/portmap.h"
#include "gateway/side/rpc/side_service.h"

enum {
	CB_MAX_MSG = 4096, /* a GRANTED: header, cookie 1024, caller 1024, fh 64, oh 1024 */
	CB_MAX_CONNS = 16,
	CB_IDLE_MS = 60000,
	CB_MAX_OUTPUT = 64 * 1024,
	CB_DEFAULT_PENDING = 64,
	CB_DEFAULT_RETRY_MS = 1000,
	CB_DEFAULT_TIMEOUT_MS = 5000,
};

/* One server GRANTED being relayed to its client. */
struct cb_pending {
	bool used;
	bool have_port;		     /* the client's lockd port is known: GRANTED sent */
	uint32_t xid;		     /* of the gateway's call to the client (GETPORT, GRANTED) */
	struct gw_host client;	     /* its address */
	struct sockaddr_storage via; /* ours it called (family 0: unknown): calls leave from it */
	struct sockaddr_storage to;  /* where the current call goes */
	socklen_t tolen;
	uint64_t deadline_us, sent_us;
	uint32_t vers, proc;		 /* the server's call: GRANTED or GRANTED_MSG */
	struct side_service_peer server; /* a GRANTED's reply goes there */
	struct side_service *server_svc; /* through the service it came in on */
	uint32_t server_xid;
	/* The lock as the server named it: its record goes when the server is told DENIED. */
	struct nlm_owner_id up;
	uint32_t fh_len;
	uint8_t fh[NLM4_FHSIZE];
	uint64_t offset, lock_len;
	uint32_t cookie_len;
	uint8_t cookie[NLM_LM_MAXSTRLEN];
	uint32_t len; /* the GRANTED to the client */
	uint8_t msg[CB_MAX_MSG];
	uint8_t getport[64];
	uint32_t getport_len;
};

struct nlm_callback {
	struct nlm_callback_config cfg;
	struct gw_route route; /* the route with every peer allowed: the server calls here */
	struct gw_host server;
	struct sockaddr_storage local; /* the upstream-side address */
	socklen_t local_len;
	struct side_service *svc;  /* the NLM callback service there */
	struct side_service *pmap; /* its portmapper on pmap_port, or NULL */
	struct pmap_table table;
	bool registered;       /* with the host's rpcbind instead */
	uint32_t reg_versions; /* bit v: NLM version v set there by this process */
	int fd;		       /* toward clients, bound to the route's listen address */
	struct event *read_ev, *timer;
	struct cb_pending *pend;
	uint32_t live;
	struct nlm_callback_stats stats;
	uint8_t out[CB_MAX_MSG];
};

/* ---- small encoders ------------------------------------------------------------ */

/* nlm_res: cookie, stat. 0 when @cap is short. */
static size_t put_res(uint8_t *out, size_t cap, const uint8_t *cookie, uint32_t clen, uint32_t stat)
{
	size_t n = 4 + xdr_align(clen) + 4;

	if (cap < n)
		return 0;
	xdr_put32(out, clen);
	memset(out + 4, 0, xdr_align(clen));
	memcpy(out + 4, cookie, clen);
	xdr_put32(out + 4 + xdr_align(clen), stat);
	return n;
}

/* ---- answering the server ------------------------------------------------------- */

/*
 * The server learns @stat: as the reply to its GRANTED, or as a GRANTED_RES
 * (a call of the relay's own, to the server's lockd) for a GRANTED_MSG.
 */
static void answer_server(struct nlm_callback *cb, struct side_service *svc, uint32_t proc,
			  uint32_t vers, const struct side_service_peer *server,
			  uint32_t server_xid, const uint8_t *cookie, uint32_t clen, uint32_t stat)
{
	size_t hn, m;

	if (proc == NLMPROC_GRANTED) {
		hn = rpc_encode_accept_error(cb->out, sizeof(cb->out), server_xid, RPCSTAT_SUCCESS,
					     0, 0);
		m = hn ? put_res(cb->out + hn, sizeof(cb->out) - hn, cookie, clen, stat) : 0;
		if (m)
			side_service_reply(svc, server, cb->out, hn + m);
	} else {
		hn = rpc_encode_call_hdr(cb->out, sizeof(cb->out), 0, NLM_PROG, vers,
					 NLMPROC_GRANTED_RES);
		m = hn ? put_res(cb->out + hn, sizeof(cb->out) - hn, cookie, clen, stat) : 0;
		if (!m || !nlm_relay_send_own(cb->cfg.relay, cb->out, hn + m))
			gw_warn("%s: nlm callback: GRANTED_RES could not be sent to the server",
				cb->cfg.route->name);
	}
	gw_counters_count_reply(cb->cfg.counters, NLM_PROG, vers, proc);
}

static void finish(struct nlm_callback *cb, struct cb_pending *p, uint32_t stat, const char *why)
{
	char who[64] = "?";

	inet_ntop(p->client.family, p->client.addr, who, sizeof(who));
	gw_info("%s: nlm callback: GRANTED for client %s: %s (the server is told %s)",
		cb->cfg.route->name, who, why, stat == NLM_GRANTED ? "granted" : "denied");
	answer_server(cb, p->server_svc, p->proc, p->vers, &p->server, p->server_xid, p->cookie,
		      p->cookie_len, stat);
	/*
	 * Told DENIED, the server's lockd unlocks what it had granted: the
	 * record of that blocked lock must go too, or the client's later
	 * reboot would unlock it again and /stats would count it held.
	 */
	if (stat != NLM_GRANTED)
		nlm_relay_forget_lock(cb->cfg.relay, &p->up, (struct nlm_bytes){ p->fh, p->fh_len },
				      p->offset, p->lock_len);
	p->used = false;
	cb->live--;
}

/* ---- toward the client ------------------------------------------------------------ */

static void send_current(struct nlm_callback *cb, struct cb_pending *p)
{
	const uint8_t *m = p->have_port ? p->msg : p->getport;
	size_t n = p->have_port ? p->len : p->getport_len;

	p->sent_us = gw_now_us();
	if (!gw_send_from(cb->fd, m, n, (const struct sockaddr *)&p->to, p->tolen, &p->via))
		gw_debug("%s: nlm callback: sendto: %s", cb->cfg.route->name, strerror(errno));
}

static struct cb_pending *find_xid(struct nlm_callback *cb, uint32_t xid)
{
	for (uint32_t i = 0; i < cb->cfg.max_pending; i++) {
		if (cb->pend[i].used && cb->pend[i].xid == xid)
			return &cb->pend[i];
	}
	return NULL;
}

/* Whether a call in flight holds @xid: gw_random_xid() draws again. */
static bool xid_in_use(void *arg, uint32_t xid)
{
	return find_xid(arg, xid) != NULL;
}

/* The client's portmapper or lockd answered @p. */
static void client_reply(struct nlm_callback *cb, struct cb_pending *p, const uint8_t *msg,
			 size_t len)
{
	struct nlm_res res;
	uint16_t port;
	size_t off;

	if (!p->have_port) {
		if (pmap_decode_udp_lookup_reply(msg, len, p->client.family, &port) != 0 ||
		    port == 0) {
			finish(cb, p, NLM_DENIED, "no lockd registered at its portmapper");
			return;
		}
		p->have_port = true;
		p->xid = gw_random_xid(xid_in_use, cb);
		xdr_put32(p->msg, p->xid);
		gw_host_to_sockaddr(&p->client, port, &p->to, &p->tolen);
		send_current(cb, p);
		return;
	}
	if (!rpc_reply_results(msg, len, &off) || nlm_decode_res(msg + off, len - off, &res) != 0) {
		cb->cfg.counters->events[GW_EV_GARBAGE_ARGS]++;
		finish(cb, p, NLM_DENIED, "its lockd's reply did not decode");
		return;
	}
	cb->stats.relayed++;
	if (res.stat == NLM_GRANTED)
		cb->stats.granted++;
	finish(cb, p, res.stat, res.stat == NLM_GRANTED ? "relayed, taken" : "relayed, refused");
}

static void on_client_read(evutil_socket_t fd, short what, void *arg)
{
	struct nlm_callback *cb = arg;
	uint8_t buf[CB_MAX_MSG];
	struct sockaddr_storage from;
	socklen_t flen = sizeof(from);
	struct gw_host h;
	struct cb_pending *p;
	ssize_t n;

	(void)what;
	while ((n = recvfrom(fd, buf, sizeof(buf), 0, (struct sockaddr *)&from, &flen)) >= 0) {
		/* Only a reply from the client the call went to, to a call pending. */
		if (n < 8 || !(p = find_xid(cb, xdr_get32(buf))) ||
		    !gw_host_from_sockaddr(&h, (struct sockaddr *)&from, flen) ||
		    memcmp(&h, &p->client, sizeof(h)) != 0) {
			cb->cfg.counters->events[GW_EV_UNMATCHED_REPLY]++;
		} else {
			client_reply(cb, p, buf, (size_t)n);
		}
		flen = sizeof(from);
	}
}

static void on_timer(evutil_socket_t fd, short what, void *arg)
{
	struct nlm_callback *cb = arg;
	uint64_t now = gw_now_us();

	(void)fd;
	(void)what;
	for (uint32_t i = 0; i < cb->cfg.max_pending; i++) {
		struct cb_pending *p = &cb->pend[i];

		if (!p->used)
			continue;
		if (now >= p->deadline_us) {
			cb->stats.timed_out++;
			cb->cfg.counters->events[GW_EV_CALL_TIMEOUT]++;
			finish(cb, p, NLM_DENIED, "no answer in time: gone?");
		} else if (now - p->sent_us >= (uint64_t)cb->cfg.retry_ms * 1000) {
			send_current(cb, p);
		}
	}
}

/* ---- the server's calls ---------------------------------------------------------------- */

/* The server re-sent a callback still pending (a GRANTED's XID, a GRANTED_MSG's cookie). */
static bool is_resend(struct nlm_callback *cb, uint32_t proc, uint32_t xid,
		      const struct nlm_bytes *cookie)
{
	for (uint32_t i = 0; i < cb->cfg.max_pending; i++) {
		const struct cb_pending *p = &cb->pend[i];

		if (!p->used || p->proc != proc)
			continue;
		if (proc == NLMPROC_GRANTED
			    ? p->server_xid == xid
			    : p->cookie_len == cookie->len &&
				      memcmp(p->cookie, cookie->p, cookie->len) == 0)
			return true;
	}
	return false;
}

static struct cb_pending *free_slot(struct nlm_callback *cb)
{
	for (uint32_t i = 0; i < cb->cfg.max_pending; i++) {
		if (!cb->pend[i].used)
			return &cb->pend[i];
	}
	return NULL;
}

/*
 * A GRANTED(_MSG) for the client owner @o: the call to its lockd (the
 * client's svid and oh, the server's cookie, caller name and range), sent
 * once its portmapper has given the port.
 */
static bool start_pending(struct nlm_callback *cb, struct cb_pending *p,
			  const struct nlm_client_owner *o, const struct rpc_call_hdr *h,
			  struct side_service *svc, const struct side_service_peer *server,
			  struct nlm_args *a)
{
	size_t m, hn;

	memset(p, 0, offsetof(struct cb_pending, msg));
	if (a->lock.oh.len != NLM_TOKEN_LEN || a->lock.fh.len > sizeof(p->fh))
		return false;
	p->up.svid = a->lock.svid;
	memcpy(p->up.oh, a->lock.oh.p, NLM_TOKEN_LEN);
	p->fh_len = a->lock.fh.len;
	memcpy(p->fh, a->lock.fh.p, a->lock.fh.len);
	p->offset = a->lock.offset;
	p->lock_len = a->lock.len;
	a->lock.svid = o->svid;
	a->lock.oh = o->oh;
	hn = rpc_encode_call_hdr(p->msg, sizeof(p->msg), 0, NLM_PROG, h->vers, NLMPROC_GRANTED);
	if (!hn || a->cookie.len > sizeof(p->cookie) ||
	    nlm_encode_args(a, p->msg + hn, sizeof(p->msg) - hn, &m) != 0)
		return false;
	p->len = (uint32_t)(hn + m);
	p->client = o->host;
	if (o->via.family) {
		socklen_t vl;
		gw_host_to_sockaddr(&o->via, 0, &p->via, &vl);
	}
	p->vers = h->vers;
	p->proc = h->proc;
	p->server = *server;
	p->server_svc = svc;
	p->server_xid = h->xid;
	p->cookie_len = a->cookie.len;
	memcpy(p->cookie, a->cookie.p, a->cookie.len);
	p->xid = gw_random_xid(xid_in_use, cb);
	p->getport_len = (uint32_t)pmap_encode_udp_lookup(p->getport, sizeof(p->getport), p->xid,
							  p->client.family, NLM_PROG, h->vers);
	if (!p->getport_len)
		return false;
	gw_host_to_sockaddr(&o->host, cb->cfg.pmap_port, &p->to, &p->tolen);
	p->deadline_us = gw_now_us() + (uint64_t)cb->cfg.timeout_ms * 1000;
	p->used = true;
	cb->live++;
	send_current(cb, p);
	return true;
}

static void on_granted(struct nlm_callback *cb, struct side_service *svc,
		       const struct side_service_peer *peer, const struct rpc_call_hdr *h,
		       struct nlm_args *a)
{
	struct nlm_client_owner o;
	struct cb_pending *p;
	const char *why = NULL;

	if (is_resend(cb, h->proc, h->xid, &a->cookie))
		return;
	if (!nlm_relay_client_of(cb->cfg.relay, a->lock.svid, a->lock.oh, &o)) {
		cb->stats.stale++;
		why = "no client owner of the gateway's";
	} else if (!(p = free_slot(cb))) {
		struct nlm_owner_id up = { .svid = a->lock.svid };
		cb->stats.full++;
		cb->cfg.counters->events[GW_EV_NO_BUFFERS]++;
		why = "max_pending callbacks pending";
		/* Told DENIED below, the server unlocks: the record goes (as in finish()). */
		if (a->lock.oh.len == NLM_TOKEN_LEN) {
			memcpy(up.oh, a->lock.oh.p, NLM_TOKEN_LEN);
			nlm_relay_forget_lock(cb->cfg.relay, &up, a->lock.fh, a->lock.offset,
					      a->lock.len);
		}
	} else if (!start_pending(cb, p, &o, h, svc, peer, a)) {
		why = "the client's GRANTED did not encode";
	}
	if (why) {
		gw_info("%s: nlm callback: a GRANTED refused: %s", cb->cfg.route->name, why);
		answer_server(cb, svc, h->proc, h->vers, peer, h->xid, a->cookie.p, a->cookie.len,
			      NLM_DENIED);
	}
}

static void answer_error(struct nlm_callback *cb, struct side_service *svc,
			 const struct side_service_peer *peer, uint32_t xid, uint32_t stat,
			 uint32_t lo, uint32_t hi)
{
	size_t n = rpc_encode_accept_error(cb->out, sizeof(cb->out), xid, stat, lo, hi);

	cb->cfg.counters->events[stat == RPCSTAT_GARBAGE_ARGS ? GW_EV_GARBAGE_ARGS
							      : GW_EV_RPC_ERROR_REPLY]++;
	if (n)
		side_service_reply(svc, peer, cb->out, n);
}

/*
 * The server's result of a client's _MSG (gateway/side/nlm/nlm_async.h): the empty
 * reply a _RES call gets, unless its arguments do not decode.
 */
static void on_async_res(struct nlm_callback *cb, struct side_service *svc,
			 const struct side_service_peer *peer, const struct rpc_call_hdr *h,
			 const uint8_t *msg, size_t len)
{
	size_t n;

	gw_counters_count_call(cb->cfg.counters, h->prog, h->vers, h->proc);
	if (nlm_async_on_res(cb->cfg.async, h->vers, h->proc, msg + h->args_off,
			     len - h->args_off) == -EBADMSG) {
		answer_error(cb, svc, peer, h->xid, RPCSTAT_GARBAGE_ARGS, 0, 0);
		return;
	}
	n = rpc_encode_accept_error(cb->out, sizeof(cb->out), h->xid, RPCSTAT_SUCCESS, 0, 0);
	if (n)
		side_service_reply(svc, peer, cb->out, n);
	gw_counters_count_reply(cb->cfg.counters, h->prog, h->vers, h->proc);
}

/* Whether @peer is the server's host; if not, counted as refused. */
static bool from_server(struct nlm_callback *cb, const struct side_service_peer *peer)
{
	struct gw_host from;

	if (gw_host_from_sockaddr(&from, (const struct sockaddr *)&peer->addr, peer->addrlen) &&
	    gw_host_equal(&from, &cb->server))
		return true;
	cb->stats.not_from_server++;
	cb->cfg.counters->events[GW_EV_REFUSED_CLIENT]++;
	return false;
}

static void on_server_call(void *arg, struct side_service *svc,
			   const struct side_service_peer *peer, const uint8_t *msg, size_t len)
{
	struct nlm_callback *cb = arg;
	struct rpc_call_hdr h;
	struct nlm_args a;

	/* The server's statd after its reboot: NSM shares the service
	 * (gateway/side/nlm/nlm_notify.h). */
	if (cb->cfg.notify && nlm_notify_is_nsm(msg, len)) {
		size_t n = nlm_notify_on_call(cb->cfg.notify, (const struct sockaddr *)&peer->addr,
					      peer->addrlen, msg, len, cb->out, sizeof(cb->out));
		if (n)
			side_service_reply(svc, peer, cb->out, n);
		return;
	}
	/* Only the server's lockd calls back; nobody else may grant a client's lock. */
	if (!from_server(cb, peer))
		return;
	enum rpc_hdr_status st = rpc_call_decode(msg, len, &h);
	if (st == RPC_HDR_BAD_RPCVERS || st == RPC_HDR_BAD_AUTH) {
		size_t n =
			rpc_encode_denied(cb->out, sizeof(cb->out), h.xid, st == RPC_HDR_BAD_AUTH);
		cb->cfg.counters->events[GW_EV_RPC_ERROR_REPLY]++;
		if (n)
			side_service_reply(svc, peer, cb->out, n);
		return;
	}
	if (st != RPC_HDR_CALL) {
		cb->cfg.counters->events[GW_EV_MALFORMED_RECORD]++;
		return;
	}
	if (h.prog != NLM_PROG) {
		answer_error(cb, svc, peer, h.xid, RPCSTAT_PROG_UNAVAIL, 0, 0);
		return;
	}
	if (h.vers != 1 && h.vers != 3 && h.vers != 4) {
		answer_error(cb, svc, peer, h.xid, RPCSTAT_PROG_MISMATCH, 1, 4);
		return;
	}
	if (cb->cfg.async && nlm_async_is_res(h.proc)) {
		on_async_res(cb, svc, peer, &h, msg, len);
		return;
	}
	/* Only the callbacks and (above) the results of the clients' _MSG calls. */
	if (h.proc != NLMPROC_NULL && h.proc != NLMPROC_GRANTED && h.proc != NLMPROC_GRANTED_MSG) {
		answer_error(cb, svc, peer, h.xid, RPCSTAT_PROC_UNAVAIL, 0, 0);
		return;
	}
	gw_counters_count_call(cb->cfg.counters, h.prog, h.vers, h.proc);
	if (h.proc != NLMPROC_NULL &&
	    nlm_decode_args(h.vers, h.proc, msg + h.args_off, len - h.args_off, &a) != 0) {
		answer_error(cb, svc, peer, h.xid, RPCSTAT_GARBAGE_ARGS, 0, 0);
		return;
	}
	if (h.proc != NLMPROC_GRANTED) {
		/* NULL, and GRANTED_MSG's own (void) reply: its result goes as GRANTED_RES. */
		size_t n = rpc_encode_accept_error(cb->out, sizeof(cb->out), h.xid, RPCSTAT_SUCCESS,
						   0, 0);
		if (n)
			side_service_reply(svc, peer, cb->out, n);
		if (h.proc == NLMPROC_NULL) {
			gw_counters_count_reply(cb->cfg.counters, h.prog, h.vers, h.proc);
			return;
		}
	}
	on_granted(cb, svc, peer, &h, &a);
}

bool nlm_callback_take(void *arg, struct side_service *svc, const struct side_service_peer *peer,
		       const uint8_t *msg, size_t len)
{
	struct nlm_callback *cb = arg;
	struct rpc_call_hdr h;

	if (rpc_call_decode(msg, len, &h) != RPC_HDR_CALL)
		return false;
	bool take = false;
	if (h.prog == NSM_PROG)
		take = cb->cfg.notify && h.vers == NSM_VERS && h.proc == NSMPROC_NOTIFY;
	else if (h.prog == NLM_PROG)
		take = h.proc == NLMPROC_GRANTED || h.proc == NLMPROC_GRANTED_MSG ||
		       (cb->cfg.async && nlm_async_is_res(h.proc));
	if (take) {
		on_server_call(cb, svc, peer, msg, len);
	}
	return take;
}

/* ---- start and stop --------------------------------------------------------------------- */

/* The address the kernel sends from toward @server: where the server calls back. */
static bool upstream_side_addr(struct nlm_callback *cb, const struct sockaddr *server,
			       socklen_t server_len)
{
	int fd = socket(server->sa_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	bool ok;

	if (fd < 0)
		return false;
	cb->local_len = sizeof(cb->local);
	ok = connect(fd, server, server_len) == 0 &&
	     getsockname(fd, (struct sockaddr *)&cb->local, &cb->local_len) == 0;
	close(fd);
	return ok;
}

static struct side_service *start_svc(struct nlm_callback *cb, struct event_base *base,
				      const char *name, uint16_t port, side_service_msg_fn fn,
				      void *arg)
{
	struct sockaddr_storage ss = cb->local;
	struct side_service_config sc = {
		.name = name,
		.route = &cb->route,
		.counters = cb->cfg.counters,
		.max_msg = CB_MAX_MSG,
		.max_conns = CB_MAX_CONNS,
		.idle_ms = CB_IDLE_MS,
		.max_output = CB_MAX_OUTPUT,
		.on_msg = fn,
		.arg = arg,
	};

	gw_sockaddr_set_port(&ss, port);
	return side_service_start(base, (const struct sockaddr *)&ss, cb->local_len, &sc);
}

static void pmap_on_call(void *arg, struct side_service *svc, const struct side_service_peer *peer,
			 const uint8_t *msg, size_t len)
{
	struct nlm_callback *cb = arg;
	struct rpc_call_hdr h;
	size_t n = 0;

	/*
	 * Only the server looks up the callback service here (its lockd for
	 * GRANTED, its statd for SM_NOTIFY): anyone else, a forged source
	 * above all, would get a DUMP many times its call for nothing.
	 */
	if (!from_server(cb, peer))
		return;
	if (pmap_answer(&cb->table, msg, len, cb->out, sizeof(cb->out), &n, &h) == PMAP_NO_REPLY)
		cb->cfg.counters->events[GW_EV_MALFORMED_RECORD]++;
	if (n)
		side_service_reply(svc, peer, cb->out, n);
}

/* NLM versions 1, 3 and 4 (there is no 2) on @port, for each transport. */
static bool add_nlm(struct pmap_table *t, uint16_t port)
{
	bool ok = true;

	for (uint32_t v = 1; v <= 4; v += v == 1 ? 2 : 1) {
		ok &= pmap_table_add(t, NLM_PROG, v, PMAP_IPPROTO_UDP, port);
		ok &= pmap_table_add(t, NLM_PROG, v, PMAP_IPPROTO_TCP, port);
	}
	return ok;
}

static bool same_host(const struct sockaddr_storage *a, const struct sockaddr_storage *b)
{
	struct gw_host ha, hb;

	return gw_host_from_sockaddr(&ha, (const struct sockaddr *)a, sizeof(*a)) &&
	       gw_host_from_sockaddr(&hb, (const struct sockaddr *)b, sizeof(*b)) &&
	       gw_host_equal(&ha, &hb);
}

/*
 * Whether the host's rpcbind already maps some NLM version (this host's
 * kernel lockd, when it is an NFS client): then the gateway registers
 * nothing, and so removes nothing. rpcbind's UNSET takes every protocol of
 * a version and lets root remove anyone's entry, so registering next to
 * lockd and undoing a refusal would take lockd's own entries away.
 */
static bool host_nlm_registered(void)
{
	struct sockaddr_in lo = { .sin_family = AF_INET,
				  .sin_port = htons(PMAP_PORT),
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };

	for (unsigned long v = 1; v <= 4; v += v == 1 ? 2 : 1) {
		if (pmap_getport(&lo, NLM_PROG, v, IPPROTO_UDP) != 0 ||
		    pmap_getport(&lo, NLM_PROG, v, IPPROTO_TCP) != 0)
			return true;
	}
	return false;
}

/* Remove the NLM versions this process set with the host's rpcbind, and only those. */
static void unregister_own(struct nlm_callback *cb)
{
	for (unsigned long v = 1; v <= 4; v++) {
		if (cb->reg_versions & (1u << v))
			pmap_unset(NLM_PROG, v);
	}
	cb->reg_versions = 0;
	cb->registered = false;
}

/*
 * Let the server find the service: a portmapper of the gateway's own on
 * the upstream-side address, or, when a host rpcbind holds that port, a
 * registration with it. Neither: logged, callbacks do not come.
 */
static void advertise(struct nlm_callback *cb, struct event_base *base)
{
	uint16_t port = side_service_port(cb->svc);
	char where[INET6_ADDRSTRLEN] = "?";
	const void *a = cb->local.ss_family == AF_INET6
				? (const void *)&((struct sockaddr_in6 *)&cb->local)->sin6_addr
				: (const void *)&((struct sockaddr_in *)&cb->local)->sin_addr;

	inet_ntop(cb->local.ss_family, a, where, sizeof(where));
	if (cb->cfg.route_holds_host_nlm) {
		gw_info("%s: nlm callback: the host's rpcbind maps NLM and NSM to the route's "
			"relays (the route listens on the wildcard address): the server's "
			"GRANTED callbacks and SM_NOTIFY to %s come to them and are handled here",
			cb->cfg.route->name, where);
		return;
	}
	if (same_host(&cb->local, &cb->cfg.route->listen.addr)) {
		/* The route's portmapper is there, offering the NLM relay to clients. */
		gw_info("%s: nlm callback: the server sees the gateway at its listen address %s, "
			"where the route's portmapper offers the NLM and NSM relays: the server's "
			"GRANTED callbacks and SM_NOTIFY come to them and are handled here",
			cb->cfg.route->name, where);
		return;
	}
	cb->table.addr = cb->local;
	cb->table.addrlen = cb->local_len;
	cb->pmap = start_svc(cb, base, "rpcbind-cb", cb->cfg.pmap_port, pmap_on_call, cb);
	if (cb->pmap) {
		bool ok = add_nlm(&cb->table, port);
		/* The server's sm-notify asks here for NSM over UDP (and statd over TCP). */
		if (cb->cfg.notify) {
			ok &= pmap_table_add(&cb->table, NSM_PROG, 1, PMAP_IPPROTO_UDP, port);
			ok &= pmap_table_add(&cb->table, NSM_PROG, 1, PMAP_IPPROTO_TCP, port);
		}
		for (uint32_t v = PMAP_VERS_LO; v <= PMAP_VERS_HI; v++) {
			ok &= pmap_table_add(&cb->table, PMAP_PROG, v, PMAP_IPPROTO_UDP,
					     cb->cfg.pmap_port);
			ok &= pmap_table_add(&cb->table, PMAP_PROG, v, PMAP_IPPROTO_TCP,
					     cb->cfg.pmap_port);
		}
		gw_info("%s: nlm callback: service on %s port %u, its portmapper on port %u%s",
			cb->cfg.route->name, where, port, cb->cfg.pmap_port,
			ok ? "" : " (table full)");
		return;
	}
	int e = errno;
	bool reg = e == EADDRINUSE && cb->cfg.pmap_port == PMAP_PORT;
	if (!reg) {
		gw_warn("%s: nlm callback: no portmapper on %s port %u: %s; the server cannot "
			"call back (blocked locks are granted when the client re-sends its LOCK)",
			cb->cfg.route->name, where, cb->cfg.pmap_port, strerror(e));
		return;
	}
	if (host_nlm_registered()) {
		gw_warn("%s: nlm callback: port %u on %s: %s, and the host's rpcbind already "
			"maps NLM (this host's kernel lockd: an NFS client here?); left as it is. "
			"Blocked locks are granted only when the client re-sends its LOCK "
			"(docs/forward-mode.md)",
			cb->cfg.route->name, cb->cfg.pmap_port, where, strerror(e));
		return;
	}
	for (unsigned long v = 1; v <= 4; v += v == 1 ? 2 : 1) {
		bool udp = pmap_set(NLM_PROG, v, IPPROTO_UDP, port) != 0;
		bool tcp = pmap_set(NLM_PROG, v, IPPROTO_TCP, port) != 0;
		if (udp || tcp)
			cb->reg_versions |= 1u << v;
		reg &= udp && tcp;
	}
	cb->registered = reg;
	if (reg) {
		gw_info("%s: nlm callback: service on %s port %u, registered with the host's "
			"rpcbind (port %u on %s: %s)",
			cb->cfg.route->name, where, port, cb->cfg.pmap_port, where, strerror(e));
		if (cb->cfg.notify)
			gw_warn("%s: nlm callback: NSM is not registered with the host's rpcbind "
				"(its statd's): the server's SM_NOTIFY after a reboot does not "
				"reach "
				"the gateway, and clients reclaim nothing (docs/forward-mode.md)",
				cb->cfg.route->name);
		return;
	}
	unregister_own(cb);
	gw_warn("%s: nlm callback: the server cannot find the gateway's callback service: port "
		"%u on %s: %s, and the host's rpcbind refused NLM (is this host's kernel lockd "
		"registered, an NFS client here?). Blocked locks are granted only when the "
		"client re-sends its LOCK (docs/forward-mode.md)",
		cb->cfg.route->name, cb->cfg.pmap_port, where, strerror(e));
}

struct nlm_callback *nlm_callback_start(struct event_base *base,
					const struct nlm_callback_config *cfg,
					const struct sockaddr *server, socklen_t server_len,
					char *err, size_t errlen)
{
	struct nlm_callback *cb = calloc(1, sizeof(*cb));
	const char *what = "memory";

	if (!cb)
		goto fail;
	cb->cfg = *cfg;
	cb->fd = -1;
	if (!cb->cfg.max_pending)
		cb->cfg.max_pending = CB_DEFAULT_PENDING;
	if (!cb->cfg.retry_ms)
		cb->cfg.retry_ms = CB_DEFAULT_RETRY_MS;
	if (!cb->cfg.timeout_ms)
		cb->cfg.timeout_ms = CB_DEFAULT_TIMEOUT_MS;
	cb->route = *cfg->route;
	cb->route.allowed_clients_count = 0; /* the server: checked by address in on_server_call */
	cb->pend = calloc(cb->cfg.max_pending, sizeof(*cb->pend));
	if (!cb->pend || !gw_host_from_sockaddr(&cb->server, server, server_len))
		goto fail;
	what = "the upstream-side address";
	if (!upstream_side_addr(cb, server, server_len))
		goto fail;
	what = "the NLM callback service";
	cb->svc = start_svc(cb, base, "nlm-cb", 0, on_server_call, cb);
	if (!cb->svc)
		goto fail;
	what = "the socket toward clients' lockd";
	/* From the listen address: the client's lockd compares it with its LOCK's server. */
	cb->fd = gw_udp_socket_at(&cfg->route->listen.addr, cfg->route->listen.addrlen);
	if (cb->fd < 0)
		goto fail;
	cb->read_ev = event_new(base, cb->fd, EV_READ | EV_PERSIST, on_client_read, cb);
	cb->timer = event_new(base, -1, EV_PERSIST, on_timer, cb);
	struct timeval tick = gw_ms_timeval(cb->cfg.retry_ms / 2 ? cb->cfg.retry_ms / 2 : 1);
	if (!cb->read_ev || !cb->timer || event_add(cb->read_ev, NULL) != 0 ||
	    event_add(cb->timer, &tick) != 0)
		goto fail;
	advertise(cb, base);
	return cb;
fail:
	snprintf(err, errlen, "route %s: cannot start %s for NLM callbacks: %s", cfg->route->name,
		 what, strerror(errno ? errno : ENOMEM));
	nlm_callback_stop(cb);
	return NULL;
}

void nlm_callback_stop(struct nlm_callback *cb)
{
	if (!cb)
		return;
	unregister_own(cb);
	if (cb->read_ev)
		event_free(cb->read_ev);
	if (cb->timer)
		event_free(cb->timer);
	if (cb->fd >= 0)
		close(cb->fd);
	side_service_stop(cb->pmap);
	side_service_stop(cb->svc);
	free(cb->pend);
	free(cb);
}

bool nlm_callback_advertised(const struct nlm_callback *cb)
{
	return cb->pmap || cb->registered;
}

uint16_t nlm_callback_port(const struct nlm_callback *cb)
{
	return side_service_port(cb->svc);
}

uint32_t nlm_callback_pending(const struct nlm_callback *cb)
{
	return cb->live;
}

const struct nlm_callback_stats *nlm_callback_stats(const struct nlm_callback *cb)
{
	return &cb->stats;
}

void nlm_callback_set_route(struct nlm_callback *cb, const struct gw_route *route)
{
	cb->cfg.route = route;
	cb->route = *route;
	cb->route.allowed_clients_count = 0; /* as nlm_callback_start() has it */
}
