/* SPDX-License-Identifier: MIT */
#include "gateway/side/nlm/nlm_notify.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/event.h>
#include <rpc/types.h>
#include <rpc/xdr.h>

#include "common/backoff.h"
#include "common/clock.h"
#include "common/localaddr.h"
#include "common/log.h"
#include "common/random.h"
#include "common/sendfrom.h"
#include "common/xdr.h"
#include "conf/config.h"
#include "gateway/counters/counters.h"
#include "gateway/side/rpc/portmap.h"

enum {
	NT_MAX_MSG = 2048, /* a reply from a client: a GETPORT's or a void result */
	NT_CALL_MAX = 160, /* the SM_NOTIFY: header 40, mon_name (an address) 48, state */
	NT_MAX_BACKOFF_MS = 8000,
	NT_DEFAULT_INFLIGHT = 16,
	NT_DEFAULT_CLIENTS = 1024,
	NT_DEFAULT_RETRY_MS = 1000,
	NT_DEFAULT_TIMEOUT_MS = 90000, /* Linux lockd's grace period */
};

/*
 * One client host being told of the server's reboot. Each (re)send goes
 * from a socket of its own on a new port: behind an IPVS director the
 * client's replies (to the listen address, a virtual one) come back through
 * the director, and one sent while this gateway was not in its table (just
 * after a restart) goes to another gateway and leaves a UDP connection entry
 * there (300 s by default) for that pair of ports. A fresh port is a fresh
 * entry, scheduled to this gateway once the director has it back.
 *
 * Each send leaves from the gateway's address the client called, and names
 * it as mon_name: the client's statd matches the notification against the
 * server it mounted by that name or by the source address. A route on one
 * address has no choice; one on the wildcard has several, and the kernel
 * would pick the source by the route back. The address called is judged at
 * each send (slot_from()).
 */
struct nt_slot {
	bool used;
	bool have_port; /* its statd's port is known: SM_NOTIFY sent */
	int fd;		/* -1, or the socket of the last send, bound to @from */
	struct event *read_ev;
	struct nlm_notify *nt;
	uint32_t xid;
	struct gw_host client;
	struct gw_host via; /* the address it called, as recorded (family 0: unknown) */
	struct sockaddr_storage to, from; /* @from: where the last send left from */
	socklen_t tolen, fromlen;
	char mon_name[INET6_ADDRSTRLEN]; /* @from's, as the client mounted it */
	uint64_t sent_us;
	struct gw_backoff backoff; /* the delay before sending again */
	uint32_t len, getport_len;
	uint8_t msg[NT_CALL_MAX];
	uint8_t getport[64];
};

struct nlm_notify {
	struct nlm_notify_config cfg;
	struct gw_host server;
	bool have_state;
	int32_t state;	     /* the server's last state relayed */
	int32_t round_state; /* the state the clients are told now */
	bool restart_round;  /* the round tells of the gateway's restart, not the server's */
	uint64_t deadline_us;
	struct nt_slot *slots;
	struct nlm_peer *queue; /* max_clients hosts still to start, from qhead to qlen */
	uint32_t qhead, qlen, live;
	struct event_base *base;
	struct event *timer;
	struct nlm_notify_stats stats;
};

/* ---- toward the clients ----------------------------------------------------------- */

static void on_client_read(evutil_socket_t fd, short what, void *arg);

static void slot_close(struct nt_slot *s)
{
	if (s->read_ev)
		event_free(s->read_ev);
	if (s->fd >= 0)
		close(s->fd);
	s->read_ev = NULL;
	s->fd = -1;
}

static size_t encode_notify(struct nlm_notify *nt, const struct nt_slot *s, uint8_t *out,
			    size_t cap);

/*
 * Where @s's next send leaves from, and its mon_name. A route on one
 * address: that address, as configured (an IPv6 link-local one keeps its
 * scope). On the wildcard: the address the client called when @use_via and
 * it is one of this host's unicast addresses now, of the client's family
 * (a forged call's broadcast destination is not, and an address read from
 * the saved list may name another host's, or a virtual address not yet
 * up: judged again at each send); else the address the kernel sends from
 * toward the client. False (errno set) when there is none: no route to it.
 */
static bool slot_from(struct nlm_notify *nt, struct nt_slot *s, bool use_via)
{
	const struct gw_route *r = nt->cfg.route;
	const struct gw_host *v = &s->via;
	struct gw_host name;

	if (!gw_addr_is_wildcard(&r->listen.addr)) {
		memcpy(&s->from, &r->listen.addr, sizeof(s->from));
		s->fromlen = r->listen.addrlen;
	} else if (use_via && v->family == s->client.family &&
		   !(v->family == AF_INET6 && IN6_IS_ADDR_LINKLOCAL((const void *)v->addr)) &&
		   gw_host_is_local(v)) {
		gw_host_to_sockaddr(v, 0, &s->from, &s->fromlen);
	} else {
		s->fromlen = sizeof(s->from);
		if (!gw_udp_source_toward((const struct sockaddr *)&s->to, s->tolen, &s->from,
					  &s->fromlen))
			return false;
	}
	if (!gw_host_from_sockaddr(&name, (const struct sockaddr *)&s->from, s->fromlen)) {
		errno = EAFNOSUPPORT;
		return false;
	}
	gw_host_str(&name, s->mon_name, sizeof(s->mon_name));
	return true;
}

/*
 * Replace @s's socket with one on a new port, from where slot_from() says
 * (its SM_NOTIFY encoded again, naming it); false (logged) if none can be
 * made.
 */
static bool slot_socket(struct nlm_notify *nt, struct nt_slot *s)
{
	slot_close(s);
	errno = 0;
	if (slot_from(nt, s, true)) {
		s->fd = gw_udp_socket_at(&s->from, s->fromlen);
		/* The address was there a moment ago: the kernel's choice then. */
		if (s->fd < 0 && errno == EADDRNOTAVAIL && slot_from(nt, s, false))
			s->fd = gw_udp_socket_at(&s->from, s->fromlen);
	}
	if (s->fd >= 0 && s->have_port)
		s->len = (uint32_t)encode_notify(nt, s, s->msg, sizeof(s->msg));
	if (s->fd >= 0) {
		s->read_ev = event_new(nt->base, s->fd, EV_READ | EV_PERSIST, on_client_read, s);
		if (s->read_ev && event_add(s->read_ev, NULL) == 0)
			return true;
	}
	char who[INET6_ADDRSTRLEN];
	gw_warn("%s: nlm notify: no socket toward client %s's statd (tried again at the next "
		"send): %s",
		nt->cfg.route->name, gw_host_str(&s->client, who, sizeof(who)),
		strerror(errno ? errno : ENOMEM));
	slot_close(s);
	return false;
}

/* Send @s's current call; from a new port when @fresh (a first send or a re-send). */
static void send_current(struct nlm_notify *nt, struct nt_slot *s, bool fresh)
{
	s->sent_us = gw_now_us();
	if ((fresh || s->fd < 0) && !slot_socket(nt, s))
		return; /* tried again at the next re-send */
	const uint8_t *m = s->have_port ? s->msg : s->getport;
	size_t n = s->have_port ? s->len : s->getport_len;
	if (sendto(s->fd, m, n, 0, (const struct sockaddr *)&s->to, s->tolen) < 0)
		gw_debug("%s: nlm notify: sendto: %s", nt->cfg.route->name, strerror(errno));
}

/* SM_NOTIFY's stat_chge: mon_name, state. 0 when it does not fit. */
static size_t encode_notify(struct nlm_notify *nt, const struct nt_slot *s, uint8_t *out,
			    size_t cap)
{
	size_t h = rpc_encode_call_hdr(out, cap, s->xid, NSM_PROG, NSM_VERS, NSMPROC_NOTIFY);
	uint32_t nl = (uint32_t)strlen(s->mon_name);

	if (!h || cap - h < 4 + xdr_align(nl) + 4)
		return 0;
	xdr_put32(out + h, nl);
	memset(out + h + 4, 0, xdr_align(nl));
	memcpy(out + h + 4, s->mon_name, nl);
	xdr_put32(out + h + 4 + xdr_align(nl), (uint32_t)nt->round_state);
	return h + 4 + xdr_align(nl) + 4;
}

static struct nt_slot *find_xid(struct nlm_notify *nt, uint32_t xid)
{
	for (uint32_t i = 0; i < nt->cfg.max_inflight; i++) {
		if (nt->slots[i].used && nt->slots[i].xid == xid)
			return &nt->slots[i];
	}
	return NULL;
}

/* Whether a call in flight holds @xid: gw_random_xid() draws again. */
static bool xid_in_use(void *arg, uint32_t xid)
{
	return find_xid(arg, xid) != NULL;
}

/* Start telling @p's host: ask its portmapper for its statd first. */
static bool start_slot(struct nlm_notify *nt, struct nt_slot *s, const struct nlm_peer *p)
{
	const struct gw_host *host = &p->host;

	slot_close(s);
	memset(s, 0, offsetof(struct nt_slot, msg));
	s->fd = -1;
	s->nt = nt;
	s->client = *host;
	s->via = p->via;
	s->xid = gw_random_xid(xid_in_use, nt);
	s->getport_len = (uint32_t)pmap_encode_udp_lookup(s->getport, sizeof(s->getport), s->xid,
							  host->family, NSM_PROG, NSM_VERS);
	if (!s->getport_len)
		return false;
	gw_host_to_sockaddr(host, nt->cfg.pmap_port, &s->to, &s->tolen);
	gw_backoff_init(&s->backoff, nt->cfg.retry_ms, NT_MAX_BACKOFF_MS);
	s->used = true;
	nt->live++;
	send_current(nt, s, true);
	return true;
}

/* Fill free slots from the queue. */
static void start_queued(struct nlm_notify *nt)
{
	for (uint32_t i = 0; i < nt->cfg.max_inflight && nt->qhead < nt->qlen; i++) {
		if (!nt->slots[i].used && !start_slot(nt, &nt->slots[i], &nt->queue[nt->qhead++]))
			nt->stats.not_delivered++;
	}
}

static void end_slot(struct nlm_notify *nt, struct nt_slot *s, bool delivered, const char *why)
{
	char who[INET6_ADDRSTRLEN];

	gw_host_str(&s->client, who, sizeof(who));
	const char *what = nt->restart_round ? "gateway restart" : "server reboot";
	if (delivered) {
		nt->stats.delivered++;
		nt->stats.restart_delivered += nt->restart_round;
		gw_info("%s: nlm notify: %s relayed to client %s (SM_NOTIFY state %d)",
			nt->cfg.route->name, what, who, nt->round_state);
	} else {
		nt->stats.not_delivered++;
		gw_warn("%s: nlm notify: %s not delivered to client %s: %s", nt->cfg.route->name,
			what, who, why);
	}
	s->used = false;
	nt->live--;
	slot_close(s); /* in its own read callback here: libevent allows the free */
	start_queued(nt);
}

/* The client's portmapper or statd answered @s. */
static void client_reply(struct nlm_notify *nt, struct nt_slot *s, const uint8_t *msg, size_t len)
{
	uint16_t port;
	size_t off;

	if (!s->have_port) {
		if (pmap_decode_udp_lookup_reply(msg, len, s->client.family, &port) != 0 ||
		    port == 0) {
			end_slot(nt, s, false, "no statd registered at its portmapper");
			return;
		}
		s->have_port = true;
		s->xid = gw_random_xid(xid_in_use, nt);
		s->len = (uint32_t)encode_notify(nt, s, s->msg, sizeof(s->msg));
		if (!s->len) {
			end_slot(nt, s, false, "the SM_NOTIFY did not encode");
			return;
		}
		gw_host_to_sockaddr(&s->client, port, &s->to, &s->tolen);
		gw_backoff_init(&s->backoff, nt->cfg.retry_ms, NT_MAX_BACKOFF_MS);
		send_current(nt, s, false); /* the port its reply just reached */
		return;
	}
	if (!rpc_reply_results(msg, len, &off)) {
		end_slot(nt, s, false, "its statd refused the SM_NOTIFY");
		return;
	}
	end_slot(nt, s, true, NULL);
}

static void on_client_read(evutil_socket_t fd, short what, void *arg)
{
	struct nt_slot *slot = arg;
	struct nlm_notify *nt = slot->nt;
	uint8_t buf[NT_MAX_MSG];
	struct sockaddr_storage from;
	socklen_t flen = sizeof(from);
	struct gw_host h;
	struct nt_slot *s;
	ssize_t n;

	(void)what;
	/* Until this socket is replaced: a reply ends the slot, which may start another. */
	while (slot->fd == fd &&
	       (n = recvfrom(fd, buf, sizeof(buf), 0, (struct sockaddr *)&from, &flen)) >= 0) {
		/* Only a reply from the host the call went to, to its call pending. */
		s = slot;
		if (n < 8 || !s->used || s->xid != xdr_get32(buf) ||
		    !gw_host_from_sockaddr(&h, (struct sockaddr *)&from, flen) ||
		    memcmp(&h, &s->client, sizeof(h)) != 0)
			nt->cfg.counters->events[GW_EV_UNMATCHED_REPLY]++;
		else
			client_reply(nt, s, buf, (size_t)n);
		flen = sizeof(from);
	}
}

static void on_timer(evutil_socket_t fd, short what, void *arg)
{
	struct nlm_notify *nt = arg;
	uint64_t now = gw_now_us();

	(void)fd;
	(void)what;
	if (nt->live == 0 && nt->qhead == nt->qlen)
		return;
	if (now >= nt->deadline_us) {
		/* The server's grace period is over: a reclaim would be refused anyway. */
		nt->qhead = nt->qlen; /* the queued ones are given up with the rest */
		for (uint32_t i = 0; i < nt->cfg.max_inflight; i++) {
			if (nt->slots[i].used) {
				nt->cfg.counters->events[GW_EV_CALL_TIMEOUT]++;
				end_slot(nt, &nt->slots[i], false, "no answer in time");
			}
		}
		return;
	}
	for (uint32_t i = 0; i < nt->cfg.max_inflight; i++) {
		struct nt_slot *s = &nt->slots[i];

		if (s->used && gw_backoff_due(&s->backoff, s->sent_us, now)) {
			send_current(nt, s, true);
			gw_backoff_next(&s->backoff);
		}
	}
}

/* ---- the server's notification ----------------------------------------------------- */

/*
 * A new round: the first @n hosts in the queue are told @state. A round
 * still going is replaced: the new state supersedes it and its clients
 * are told again if they are in the new one.
 */
static size_t start_round(struct nlm_notify *nt, size_t n, int32_t state, bool restart)
{
	for (uint32_t i = 0; i < nt->cfg.max_inflight; i++) {
		if (nt->slots[i].used) {
			nt->slots[i].used = false;
			nt->stats.not_delivered++;
		}
		slot_close(&nt->slots[i]);
	}
	nt->live = 0;
	if (n > nt->cfg.max_clients) {
		nt->stats.clients_full += n - nt->cfg.max_clients;
		gw_warn("%s: nlm notify: %zu client hosts held locks, only max_clients %u are told",
			nt->cfg.route->name, n, nt->cfg.max_clients);
		n = nt->cfg.max_clients;
	}
	nt->round_state = state;
	nt->restart_round = restart;
	nt->qhead = 0;
	nt->qlen = (uint32_t)n;
	nt->deadline_us = gw_now_us() + (uint64_t)nt->cfg.timeout_ms * 1000;
	return n;
}

/*
 * The server rebooted with NSM state @state: forget the lock records and
 * tell the clients that had locks.
 */
static void server_rebooted(struct nlm_notify *nt, int32_t state)
{
	size_t n = nlm_relay_server_rebooted(nt->cfg.relay, nt->queue, nt->cfg.max_clients);

	nt->stats.received++;
	nt->have_state = true;
	nt->state = state;
	n = start_round(nt, n, state, false);
	gw_info("%s: nlm notify: the server rebooted (SM_NOTIFY state %d): telling %zu client "
		"host%s",
		nt->cfg.route->name, state, n, n == 1 ? "" : "s");
	start_queued(nt);
}

size_t nlm_notify_gateway_restarted(struct nlm_notify *nt, const struct nlm_peer *hosts, size_t n,
				    int32_t state)
{
	size_t q = n < nt->cfg.max_clients ? n : nt->cfg.max_clients;

	memcpy(nt->queue, hosts, q * sizeof(*hosts));
	q = start_round(nt, n, state, true);
	nt->stats.restart_clients += q;
	gw_info("%s: nlm notify: this gateway restarted (SM_NOTIFY state %d): telling %zu client "
		"host%s that held locks to reclaim them",
		nt->cfg.route->name, state, q, q == 1 ? "" : "s");
	start_queued(nt);
	return q;
}

bool nlm_notify_is_nsm(const uint8_t *msg, size_t len)
{
	/* xid, msg_type, rpcvers, prog */
	return len >= 16 && xdr_get32(msg + 4) == 0 && xdr_get32(msg + 12) == NSM_PROG;
}

static size_t answer_error(struct nlm_notify *nt, uint32_t xid, uint32_t stat, uint32_t lo,
			   uint32_t hi, uint8_t *out, size_t cap)
{
	nt->cfg.counters->events[stat == RPCSTAT_GARBAGE_ARGS ? GW_EV_GARBAGE_ARGS
							      : GW_EV_RPC_ERROR_REPLY]++;
	return rpc_encode_accept_error(out, cap, xid, stat, lo, hi);
}

size_t nlm_notify_on_call(struct nlm_notify *nt, const struct sockaddr *peer, socklen_t peer_len,
			  const uint8_t *msg, size_t len, uint8_t *out, size_t cap)
{
	struct rpc_call_hdr h;
	struct gw_host from;
	int32_t state;

	/* Only the server may say that it rebooted: anyone else would undo clients' locks. */
	if (!gw_host_from_sockaddr(&from, peer, peer_len) ||
	    memcmp(&from, &nt->server, sizeof(from)) != 0) {
		nt->stats.not_from_server++;
		nt->cfg.counters->events[GW_EV_REFUSED_CLIENT]++;
		return 0;
	}
	enum rpc_hdr_status st = rpc_call_decode(msg, len, &h);
	if (st == RPC_HDR_BAD_RPCVERS || st == RPC_HDR_BAD_AUTH) {
		nt->cfg.counters->events[GW_EV_RPC_ERROR_REPLY]++;
		return rpc_encode_denied(out, cap, h.xid, st == RPC_HDR_BAD_AUTH);
	}
	if (st != RPC_HDR_CALL) {
		nt->cfg.counters->events[GW_EV_MALFORMED_RECORD]++;
		return 0;
	}
	if (h.vers != NSM_VERS)
		return answer_error(nt, h.xid, RPCSTAT_PROG_MISMATCH, NSM_VERS, NSM_VERS, out, cap);
	/* SM_STAT, SM_MON...: a host's own lockd's, never the network's. */
	if (h.proc != NSMPROC_NULL && h.proc != NSMPROC_NOTIFY)
		return answer_error(nt, h.xid, RPCSTAT_PROC_UNAVAIL, 0, 0, out, cap);
	gw_counters_count_call(nt->cfg.counters, h.prog, h.vers, h.proc);
	if (h.proc == NSMPROC_NOTIFY) {
		if (nsm_decode_stat_chge(msg + h.args_off, len - h.args_off, &state) != 0)
			return answer_error(nt, h.xid, RPCSTAT_GARBAGE_ARGS, 0, 0, out, cap);
		/* A retransmission, or the server's second record of the gateway. */
		if (nt->have_state && state == nt->state)
			nt->stats.repeated++;
		else
			server_rebooted(nt, state);
	}
	gw_counters_count_reply(nt->cfg.counters, h.prog, h.vers, h.proc);
	return rpc_encode_accept_error(out, cap, h.xid, RPCSTAT_SUCCESS, 0, 0);
}

/* ---- start and stop ----------------------------------------------------------------- */

struct nlm_notify *nlm_notify_start(struct event_base *base, const struct nlm_notify_config *cfg,
				    const struct sockaddr *server, socklen_t server_len, char *err,
				    size_t errlen)
{
	struct nlm_notify *nt = calloc(1, sizeof(*nt));
	const char *what = "memory";

	if (!nt)
		goto fail;
	nt->cfg = *cfg;
	nt->base = base;
	if (!nt->cfg.max_inflight)
		nt->cfg.max_inflight = NT_DEFAULT_INFLIGHT;
	if (!nt->cfg.max_clients)
		nt->cfg.max_clients = NT_DEFAULT_CLIENTS;
	if (!nt->cfg.retry_ms)
		nt->cfg.retry_ms = NT_DEFAULT_RETRY_MS;
	if (!nt->cfg.timeout_ms)
		nt->cfg.timeout_ms = NT_DEFAULT_TIMEOUT_MS;
	nt->slots = calloc(nt->cfg.max_inflight, sizeof(*nt->slots));
	for (uint32_t i = 0; nt->slots && i < nt->cfg.max_inflight; i++)
		nt->slots[i].fd = -1;
	nt->queue = calloc(nt->cfg.max_clients, sizeof(*nt->queue));
	if (!nt->slots || !nt->queue || !gw_host_from_sockaddr(&nt->server, server, server_len))
		goto fail;
	/* The sockets are made per send (struct nt_slot): this one only checks the address. */
	what = "the socket toward clients' statd";
	int probe = gw_udp_socket_at(&cfg->route->listen.addr, cfg->route->listen.addrlen);
	if (probe < 0)
		goto fail;
	close(probe);
	nt->timer = event_new(base, -1, EV_PERSIST, on_timer, nt);
	struct timeval tick = gw_ms_timeval(nt->cfg.retry_ms / 4 ? nt->cfg.retry_ms / 4 : 1);
	if (!nt->timer || event_add(nt->timer, &tick) != 0)
		goto fail;
	return nt;
fail:
	snprintf(err, errlen, "route %s: cannot start %s for the server's SM_NOTIFY: %s",
		 cfg->route->name, what, strerror(errno ? errno : ENOMEM));
	nlm_notify_stop(nt);
	return NULL;
}

void nlm_notify_stop(struct nlm_notify *nt)
{
	if (!nt)
		return;
	if (nt->timer)
		event_free(nt->timer);
	for (uint32_t i = 0; nt->slots && i < nt->cfg.max_inflight; i++)
		slot_close(&nt->slots[i]);
	free(nt->slots);
	free(nt->queue);
	free(nt);
}

uint32_t nlm_notify_pending(const struct nlm_notify *nt)
{
	return nt->live + (nt->qlen - nt->qhead);
}

const struct nlm_notify_stats *nlm_notify_stats(const struct nlm_notify *nt)
{
	return &nt->stats;
}

void nlm_notify_set_route(struct nlm_notify *nt, const struct gw_route *route)
{
	nt->cfg.route = route;
}
