/* SPDX-License-Identifier: MIT */
#include "gateway/side/rpc/side_relay.h"

#include <errno.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/event.h>
#include <rpc/rpc.h>

#include "common/host.h"
#include "common/random.h"
#include "common/clock.h"
#include "common/log.h"
#include "common/xdr.h"
#include "conf/config.h"
#include "gateway/counters/counters.h"
#include "gateway/side/rpc/portmap.h"

/* ---- the mapping table ---------------------------------------------------- */

int relay_table_init(struct relay_table *t, uint32_t max_calls, uint32_t max_msg)
{
	memset(t, 0, sizeof(*t));
	if (max_calls == 0 || max_msg < 4)
		return -EINVAL;
	t->calls = calloc(max_calls, sizeof(*t->calls));
	t->store = malloc((size_t)max_calls * max_msg);
	if (!t->calls || !t->store || xidmap_init(&t->by_up_xid, max_calls) != 0) {
		relay_table_destroy(t);
		return -ENOMEM;
	}
	for (uint32_t i = 0; i < max_calls; i++)
		t->calls[i].msg = t->store + (size_t)i * max_msg;
	t->max_calls = max_calls;
	t->max_msg = max_msg;
	return 0;
}

void relay_table_destroy(struct relay_table *t)
{
	free(t->calls);
	free(t->store);
	xidmap_destroy(&t->by_up_xid);
	memset(t, 0, sizeof(*t));
}

/* Same transport, connection, family, address and port. */
static bool peer_equal(const struct side_service_peer *a, const struct side_service_peer *b)
{
	if (a->conn_id != b->conn_id || a->addr.ss_family != b->addr.ss_family)
		return false;
	if (a->addr.ss_family == AF_INET) {
		const struct sockaddr_in *x = (const void *)&a->addr, *y = (const void *)&b->addr;
		return x->sin_port == y->sin_port && x->sin_addr.s_addr == y->sin_addr.s_addr;
	}
	if (a->addr.ss_family == AF_INET6) {
		const struct sockaddr_in6 *x = (const void *)&a->addr, *y = (const void *)&b->addr;
		return x->sin6_port == y->sin6_port &&
		       memcmp(&x->sin6_addr, &y->sin6_addr, sizeof(x->sin6_addr)) == 0;
	}
	return false;
}

/*
 * A linear search: the table holds at most a few hundred calls of a
 * low-rate control protocol, and a retransmission is the rare case; an
 * index keyed by (peer, XID) would cost more code than it saves time.
 */
struct relay_call *relay_table_find_client(struct relay_table *t,
					   const struct side_service_peer *peer, uint32_t xid)
{
	if (!t->live)
		return NULL;
	for (uint32_t i = 0; i < t->max_calls; i++) {
		struct relay_call *c = &t->calls[i];
		if (c->used && c->client_xid == xid && peer_equal(&c->peer, peer))
			return c;
	}
	return NULL;
}

struct relay_call *relay_table_find_up(struct relay_table *t, uint32_t up_xid)
{
	uint32_t slot = xidmap_find(&t->by_up_xid, up_xid);

	return slot == XIDMAP_NONE ? NULL : &t->calls[slot];
}

struct relay_call *relay_table_add(struct relay_table *t, struct side_service *svc,
				   const struct side_service_peer *peer, uint32_t xid,
				   const uint8_t *msg, size_t len)
{
	uint32_t slot;

	if (t->live >= t->max_calls || len < 4 || len > t->max_msg)
		return NULL;
	for (slot = 0; slot < t->max_calls && t->calls[slot].used; slot++)
		;
	if (slot == t->max_calls)
		return NULL;
	/*
	 * A random XID (common/random.h: an off-path forger must not guess the
	 * next one), drawn again while one in flight has it.
	 */
	uint32_t up = gw_random32();
	while (xidmap_find(&t->by_up_xid, up) != XIDMAP_NONE)
		up = gw_random32();
	struct relay_call *c = &t->calls[slot];
	uint8_t *store = c->msg;
	memset(c, 0, sizeof(*c));
	c->msg = store;
	c->used = true;
	c->svc = svc;
	c->peer = *peer;
	c->client_xid = xid;
	c->up_xid = up;
	c->len = (uint32_t)len;
	memcpy(c->msg, msg, len);
	xdr_put32(c->msg, c->up_xid);
	if (!xidmap_insert(&t->by_up_xid, c->up_xid, slot)) {
		c->used = false;
		return NULL;
	}
	t->live++;
	return c;
}

void relay_table_remove(struct relay_table *t, struct relay_call *c)
{
	if (!c->used)
		return;
	xidmap_remove(&t->by_up_xid, c->up_xid);
	c->used = false;
	t->live--;
}

/* ---- the relay ------------------------------------------------------------ */

enum { UP_DGRAM_MAX = 65536 };

struct side_relay {
	struct event_base *base;
	struct side_relay_config cfg;
	struct relay_table table;
	int fd;
	struct event *read_ev;
	struct event *timer;
	uint16_t port;	   /* the daemon's; 0 until the portmapper said */
	uint32_t pmap_xid; /* the GETPORT in flight, when pmap_sent_us != 0 */
	uint64_t pmap_sent_us;
	uint64_t pmap_first_us;
	uint8_t in[UP_DGRAM_MAX];
	uint8_t out[512];
	uint8_t work[UP_DGRAM_MAX]; /* a message a hook rewrote */
};

uint32_t side_relay_pending(const struct side_relay *r)
{
	return r->table.live;
}

uint16_t side_relay_server_port(const struct side_relay *r)
{
	return r->port;
}

static struct sockaddr_storage server_at(const struct side_relay *r, uint16_t port)
{
	struct sockaddr_storage ss = r->cfg.server;

	gw_sockaddr_set_port(&ss, port);
	return ss;
}

static void send_up(struct side_relay *r, const uint8_t *msg, size_t len, uint16_t port)
{
	struct sockaddr_storage to = server_at(r, port);

	if (sendto(r->fd, msg, len, MSG_DONTWAIT, (struct sockaddr *)&to, r->cfg.server_len) < 0)
		gw_debug("%s: %s relay: sendto the server: %s", r->cfg.route->name, r->cfg.name,
			 strerror(errno));
}

/* Ask the server's portmapper where the daemon is, unless that is under way. */
static void discover(struct side_relay *r, uint64_t now)
{
	size_t n;

	if (r->pmap_sent_us && now - r->pmap_sent_us < (uint64_t)r->cfg.retry_ms * 1000)
		return;
	if (!r->pmap_sent_us) {
		r->pmap_xid = gw_random32();
		r->pmap_first_us = now;
	}
	n = pmap_encode_udp_lookup(r->out, sizeof(r->out), r->pmap_xid, r->cfg.server.ss_family,
				   r->cfg.prog, r->cfg.vers_hi);
	if (n)
		send_up(r, r->out, n, r->cfg.pmap_port);
	r->pmap_sent_us = now;
}

static void send_call(struct side_relay *r, struct relay_call *c, uint64_t now)
{
	if (!r->port) {
		discover(r, now);
		return;
	}
	send_up(r, c->msg, c->len, r->port);
	c->sent_us = now;
}

static void answer_error(struct side_relay *r, struct side_service *svc,
			 const struct side_service_peer *peer, size_t n)
{
	r->cfg.counters->events[GW_EV_RPC_ERROR_REPLY]++;
	if (n)
		side_service_reply(svc, peer, r->out, n);
}

void side_relay_on_call(void *arg, struct side_service *svc, const struct side_service_peer *peer,
			const uint8_t *msg, size_t len)
{
	struct side_relay *r = arg;
	struct rpc_call_hdr h;
	uint64_t now = gw_now_us();

	enum rpc_hdr_status st = rpc_call_decode(msg, len, &h);
	switch (st) {
	case RPC_HDR_CALL:
		break;
	case RPC_HDR_BAD_RPCVERS:
	case RPC_HDR_BAD_AUTH:
		answer_error(
			r, svc, peer,
			rpc_encode_denied(r->out, sizeof(r->out), h.xid, st == RPC_HDR_BAD_AUTH));
		return;
	default:
		/* Too short to answer, or a reply: nothing can be said to its sender. */
		r->cfg.counters->events[GW_EV_MALFORMED_RECORD]++;
		return;
	}
	if (h.prog != r->cfg.prog || h.vers < r->cfg.vers_lo || h.vers > r->cfg.vers_hi) {
		/* Only the relayed program goes to the daemon; the rest is answered here. */
		uint32_t stat =
			h.prog != r->cfg.prog ? RPCSTAT_PROG_UNAVAIL : RPCSTAT_PROG_MISMATCH;
		answer_error(r, svc, peer,
			     rpc_encode_accept_error(r->out, sizeof(r->out), h.xid, stat,
						     r->cfg.vers_lo, r->cfg.vers_hi));
		return;
	}
	gw_counters_count_call(r->cfg.counters, h.prog, h.vers, h.proc);
	struct relay_call *c = relay_table_find_client(&r->table, peer, h.xid);
	if (c) {
		/* The client retransmits: the same upstream XID, so the server's DRC matches. */
		r->cfg.counters->events[GW_EV_RETRANSMIT_ABSORBED]++;
		send_call(r, c, now);
		return;
	}
	if (r->cfg.hooks.call) {
		size_t n = 0;
		switch (r->cfg.hooks.call(r->cfg.hooks.arg, peer, &h, msg, len, r->work,
					  sizeof(r->work), &n)) {
		case SIDE_RELAY_PASS:
			break;
		case SIDE_RELAY_REWRITTEN:
			msg = r->work;
			len = n;
			break;
		case SIDE_RELAY_ANSWERED:
			if (n) {
				gw_counters_count_reply(r->cfg.counters, h.prog, h.vers, h.proc);
				side_service_reply(svc, peer, r->work, n);
			}
			return;
		}
	}
	c = relay_table_add(&r->table, svc, peer, h.xid, msg, len);
	if (!c) {
		if (r->cfg.hooks.gone) {
			struct relay_call never = { .svc = svc,
						    .peer = *peer,
						    .client_xid = h.xid,
						    .prog = h.prog,
						    .vers = h.vers,
						    .proc = h.proc,
						    .first_us = now,
						    .len = (uint32_t)len,
						    .msg = (uint8_t *)msg };
			r->cfg.hooks.gone(r->cfg.hooks.arg, &never);
		}
		/* A UDP client retransmits later; a TCP one gets an answer now. */
		r->cfg.counters->events[GW_EV_NO_BUFFERS]++;
		gw_debug("%s: %s relay: %u calls pending, the limit: call dropped",
			 r->cfg.route->name, r->cfg.name, r->table.live);
		if (peer->conn_id)
			answer_error(r, svc, peer,
				     rpc_encode_accept_error(r->out, sizeof(r->out), h.xid,
							     RPCSTAT_SYSTEM_ERR, 0, 0));
		return;
	}
	c->prog = h.prog;
	c->vers = h.vers;
	c->proc = h.proc;
	c->first_us = now;
	send_call(r, c, now);
}

bool side_relay_call_own(struct side_relay *r, const uint8_t *msg, size_t len)
{
	struct side_service_peer none = { .addrlen = 0 };
	struct rpc_call_hdr h;
	uint64_t now = gw_now_us();

	if (rpc_call_decode(msg, len, &h) != RPC_HDR_CALL)
		return false;
	struct relay_call *c = relay_table_add(&r->table, NULL, &none, h.xid, msg, len);
	if (!c) {
		r->cfg.counters->events[GW_EV_NO_BUFFERS]++;
		return false;
	}
	c->prog = h.prog;
	c->vers = h.vers;
	c->proc = h.proc;
	c->first_us = now;
	gw_counters_count_call(r->cfg.counters, h.prog, h.vers, h.proc);
	send_call(r, c, now);
	return true;
}

/* The server's portmapper answered GETPORT. */
static void on_getport_reply(struct side_relay *r, const uint8_t *msg, size_t len, uint64_t now)
{
	uint16_t port;

	if (pmap_decode_udp_lookup_reply(msg, len, r->cfg.server.ss_family, &port) != 0 ||
	    port == 0) {
		gw_warn("%s: %s relay: the server's portmapper does not offer program %u over UDP",
			r->cfg.route->name, r->cfg.name, r->cfg.prog);
		r->cfg.counters->events[GW_EV_UPSTREAM_FAILURE]++;
		return; /* asked again at the next retry while calls wait */
	}
	r->pmap_sent_us = 0;
	if (port != r->port)
		gw_info("%s: %s relay: the server's daemon is at port %u", r->cfg.route->name,
			r->cfg.name, port);
	r->port = port;
	for (uint32_t i = 0; i < r->table.max_calls; i++) {
		if (r->table.calls[i].used)
			send_call(r, &r->table.calls[i], now);
	}
}

static void on_reply(struct side_relay *r, const uint8_t *msg, size_t len)
{
	uint32_t xid;
	struct relay_call *c;

	if (!rpc_msg_is_reply(msg, len) || !rpc_msg_xid(msg, len, &xid) ||
	    !(c = relay_table_find_up(&r->table, xid))) {
		r->cfg.counters->events[GW_EV_UNMATCHED_REPLY]++;
		return;
	}
	/* The reply goes back with the client's XID; @in and @work are the relay's own. */
	uint8_t *out = r->in;
	size_t n = len;
	if (r->cfg.hooks.reply && r->cfg.hooks.reply(r->cfg.hooks.arg, c, msg, len, r->work,
						     sizeof(r->work), &n) == SIDE_RELAY_REWRITTEN)
		out = r->work;
	else
		n = len;
	xdr_put32(out, c->client_xid);
	gw_counters_count_reply(r->cfg.counters, c->prog, c->vers, c->proc);
	if (c->svc)
		side_service_reply(c->svc, &c->peer, out, n);
	relay_table_remove(&r->table, c);
}

/* Whether @from is the server, at its daemon's or its portmapper's port. */
static bool from_server(const struct side_relay *r, const struct sockaddr_storage *from,
			uint16_t *port)
{
	if (from->ss_family != r->cfg.server.ss_family)
		return false;
	if (from->ss_family == AF_INET) {
		const struct sockaddr_in *a = (const void *)from, *s = (const void *)&r->cfg.server;
		*port = ntohs(a->sin_port);
		return a->sin_addr.s_addr == s->sin_addr.s_addr;
	}
	const struct sockaddr_in6 *a = (const void *)from, *s = (const void *)&r->cfg.server;
	*port = ntohs(a->sin6_port);
	return memcmp(&a->sin6_addr, &s->sin6_addr, sizeof(a->sin6_addr)) == 0;
}

static void up_read(evutil_socket_t fd, short what, void *arg)
{
	struct side_relay *r = arg;
	uint64_t now = gw_now_us();

	(void)what;
	for (int i = 0; i < 64; i++) {
		struct sockaddr_storage from;
		socklen_t fl = sizeof(from);

		memset(&from, 0, sizeof(from));
		uint16_t port = 0;
		uint32_t xid;
		ssize_t n = recvfrom(fd, r->in, sizeof(r->in), MSG_TRUNC, (struct sockaddr *)&from,
				     &fl);
		if (n < 0)
			return;
		if (!from_server(r, &from, &port) || (size_t)n > sizeof(r->in)) {
			r->cfg.counters->events[GW_EV_UNMATCHED_REPLY]++;
			continue;
		}
		if (r->pmap_sent_us && port == r->cfg.pmap_port && rpc_msg_xid(r->in, n, &xid) &&
		    xid == r->pmap_xid) {
			on_getport_reply(r, r->in, (size_t)n, now);
			continue;
		}
		/*
		 * Only the daemon answers its calls: a datagram from another port
		 * of the server's address (any local process there, or a forger
		 * who guessed the XID) is no reply.
		 */
		if (r->port == 0 || port != r->port) {
			r->cfg.counters->events[GW_EV_UNMATCHED_REPLY]++;
			continue;
		}
		on_reply(r, r->in, (size_t)n);
	}
}

/* @c ends unanswered: the hook hears of it, then it goes. */
static void call_gone(struct side_relay *r, struct relay_call *c)
{
	if (r->cfg.hooks.gone)
		r->cfg.hooks.gone(r->cfg.hooks.arg, c);
	relay_table_remove(&r->table, c);
}

/* Resend what waited retry_ms, give up what waited timeout_ms. */
static void on_timer(evutil_socket_t fd, short what, void *arg)
{
	struct side_relay *r = arg;
	uint64_t now = gw_now_us(), retry = (uint64_t)r->cfg.retry_ms * 1000,
		 limit = (uint64_t)r->cfg.timeout_ms * 1000;
	bool gave_up = false;

	(void)fd;
	(void)what;
	for (uint32_t i = 0; i < r->table.max_calls; i++) {
		struct relay_call *c = &r->table.calls[i];
		if (!c->used)
			continue;
		if (now - c->first_us >= limit) {
			r->cfg.counters->events[GW_EV_CALL_TIMEOUT]++;
			call_gone(r, c);
			gave_up = true;
		} else if (!c->sent_us || now - c->sent_us >= retry) {
			send_call(r, c, now);
		}
	}
	if (r->pmap_sent_us && now - r->pmap_first_us >= limit) {
		gw_warn("%s: %s relay: the server's portmapper does not answer", r->cfg.route->name,
			r->cfg.name);
		r->cfg.counters->events[GW_EV_UPSTREAM_FAILURE]++;
		r->pmap_sent_us = 0;
	}
	/* The daemon may have restarted elsewhere: ask again for the next call. */
	if (gave_up && !r->cfg.server_port && r->port) {
		gw_info("%s: %s relay: calls to port %u went unanswered; asking the server's "
			"portmapper again",
			r->cfg.route->name, r->cfg.name, r->port);
		r->port = 0;
	}
}

struct side_relay *side_relay_start(struct event_base *base, const struct side_relay_config *cfg)
{
	struct side_relay *r = calloc(1, sizeof(*r));
	int e;

	if (!r) {
		errno = ENOMEM;
		return NULL;
	}
	r->base = base;
	r->cfg = *cfg;
	r->port = cfg->server_port;
	r->fd = -1;
	if (relay_table_init(&r->table, cfg->max_calls, cfg->max_msg) != 0) {
		errno = ENOMEM;
		goto fail;
	}
	r->fd = socket(cfg->server.ss_family, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (r->fd < 0)
		goto fail;
	/* mountd refuses MNT from an unprivileged port unless the export says "insecure". */
	if (cfg->reserved_port && bindresvport_sa(r->fd, NULL) != 0)
		goto fail;
	r->read_ev = event_new(base, r->fd, EV_READ | EV_PERSIST, up_read, r);
	r->timer = event_new(base, -1, EV_PERSIST, on_timer, r);
	struct timeval tick = gw_ms_timeval(cfg->retry_ms);
	if (!r->read_ev || !r->timer || event_add(r->read_ev, NULL) != 0 ||
	    event_add(r->timer, &tick) != 0) {
		errno = ENOMEM;
		goto fail;
	}
	return r;
fail:
	e = errno;
	side_relay_stop(r);
	errno = e;
	return NULL;
}

void side_relay_forget(struct side_relay *r, const struct side_service *svc)
{
	for (uint32_t i = 0; r && i < r->table.max_calls; i++) {
		if (r->table.calls[i].used && r->table.calls[i].svc == svc)
			call_gone(r, &r->table.calls[i]);
	}
}

void side_relay_stop(struct side_relay *r)
{
	if (!r)
		return;
	if (r->read_ev)
		event_free(r->read_ev);
	if (r->timer)
		event_free(r->timer);
	if (r->fd >= 0)
		close(r->fd);
	relay_table_destroy(&r->table);
	free(r);
}

void side_relay_set_route(struct side_relay *r, const struct gw_route *route)
{
	r->cfg.route = route;
}
