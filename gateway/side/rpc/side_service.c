/* SPDX-License-Identifier: MIT */
#include "gateway/side/rpc/side_service.h"

#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/queue.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>

#include "common/addr_text.h"
#include "common/clock.h"
#include "common/host.h"
#include "common/log.h"
#include "common/ratelimit.h"
#include "common/sendfrom.h"
#include "common/tbucket.h"
#include "common/xdr.h"
#include "conf/config.h"
#include "gateway/counters/counters.h"
#include "gateway/side/rpc/portmap.h"
#include "tcp/listener.h"
#include "tcp/record.h"

struct side_service_conn {
	TAILQ_ENTRY(side_service_conn) link;
	struct side_service *svc;
	struct bufferevent *bev;
	struct side_service_peer peer;
	/* The record being assembled from its fragments (RFC 5531 section 11). */
	uint8_t *rec;
	uint32_t rec_len;
	/* When the record being read began (its first byte); 0: none under way. */
	uint64_t rec_start_us;
	/* Inside the owner's handler: a close then waits until it returns. */
	bool in_handler;
	bool dead;
};

/* The reply budget of one network (side_service.h), found by a hash of its prefix. */
struct udp_budget {
	struct gw_host net; /* a host of the network; family 0: unused */
	struct gw_tbucket tb;
};

struct side_service {
	struct event_base *base;
	struct side_service_config cfg;
	int udp_fd;
	struct event *udp_ev;
	struct tcp_listener *tcp;
	uint16_t port;
	bool wildcard; /* UDP bound to the wildcard: replies carry their source (udp_send) */
	TAILQ_HEAD(, side_service_conn) conns;
	size_t nconns;
	uint64_t next_conn_id;
	uint8_t *dgram; /* receive buffer: max_msg + 1, to see a datagram that is too long */
	struct udp_budget budget[SIDE_UDP_BUDGET_SLOTS];
	/* What a peer can repeat at will is logged at most once a second, with a count. */
	struct gw_ratelimit refuse_rl;
	struct gw_ratelimit record_rl;
	struct gw_ratelimit udp_large_rl;
	struct gw_ratelimit udp_budget_rl;
	/* side_service_divert(): the messages of one host are offered to divert_fn. */
	struct gw_host divert_host;
	side_service_take_fn divert_fn;
	void *divert_arg;
};

uint16_t side_service_port(const struct side_service *svc)
{
	return svc->port;
}

size_t side_service_conns(const struct side_service *svc)
{
	return svc->nconns;
}

static void count_event(struct side_service *svc, enum gw_event_kind k)
{
	svc->cfg.counters->events[k]++;
}

void side_service_divert(struct side_service *svc, const struct sockaddr *host, socklen_t len,
			 side_service_take_fn fn, void *arg)
{
	svc->divert_fn = NULL;
	if (host && fn && gw_host_from_sockaddr(&svc->divert_host, host, len)) {
		svc->divert_fn = fn;
		svc->divert_arg = arg;
	}
}

/* Whether @peer's messages are offered to the divert handler. */
static bool diverted(const struct side_service *svc, const struct sockaddr *peer, socklen_t len)
{
	struct gw_host h;

	return svc->divert_fn && gw_host_from_sockaddr(&h, peer, len) &&
	       gw_host_equal(&h, &svc->divert_host);
}

/*
 * One message to its handler: the divert handler for its host if it takes
 * it, else on_msg when allowed_clients let @peer in (a diverted host's
 * connection was admitted without them).
 */
static void deliver(struct side_service *svc, const struct side_service_peer *peer,
		    const uint8_t *msg, size_t len)
{
	const struct sockaddr *sa = (const struct sockaddr *)&peer->addr;

	if (diverted(svc, sa, peer->addrlen)) {
		if (svc->divert_fn(svc->divert_arg, svc, peer, msg, len))
			return;
		if (!gw_route_client_allowed(svc->cfg.route, sa)) {
			count_event(svc, GW_EV_REFUSED_CLIENT);
			return;
		}
	}
	svc->cfg.on_msg(svc->cfg.arg, svc, peer, msg, len);
}

/* ---- TCP connections ---------------------------------------------------- */

static void conn_close(struct side_service_conn *c)
{
	struct side_service *svc = c->svc;

	TAILQ_REMOVE(&svc->conns, c, link);
	svc->nconns--;
	bufferevent_free(c->bev);
	free(c->rec);
	free(c);
}

static void conn_malformed(struct side_service_conn *c, const char *why)
{
	char who[80];

	gw_addr_text((const struct sockaddr *)&c->peer.addr, who, sizeof(who));
	gw_warn("%s: %s from %s: %s; closing", c->svc->cfg.route->name, c->svc->cfg.name, who, why);
	count_event(c->svc, GW_EV_MALFORMED_RECORD);
	conn_close(c);
}

/*
 * Take whole fragments off the input and hand each whole record to the
 * owner. Returns false when the connection was closed.
 */
static bool conn_parse(struct side_service_conn *c)
{
	struct evbuffer *in = bufferevent_get_input(c->bev);
	uint8_t mark[RM_MARK_SIZE];

	for (;;) {
		if (evbuffer_copyout(in, mark, sizeof(mark)) < (ev_ssize_t)sizeof(mark))
			return true;
		uint32_t m = ((uint32_t)mark[0] << 24) | ((uint32_t)mark[1] << 16) |
			     ((uint32_t)mark[2] << 8) | mark[3];
		uint32_t flen = m & RM_LEN_MASK;
		bool last = m & RM_LAST_FRAG;
		if (flen > c->svc->cfg.max_msg - c->rec_len) {
			conn_malformed(c, "record larger than the side protocols allow");
			return false;
		}
		if (flen == 0 && !last) {
			conn_malformed(c, "an empty fragment that is not the last");
			return false;
		}
		if (evbuffer_get_length(in) < sizeof(mark) + flen)
			return true;
		evbuffer_drain(in, sizeof(mark));
		evbuffer_remove(in, c->rec + c->rec_len, flen);
		c->rec_len += flen;
		if (!last)
			continue;
		if (c->rec_len == 0) {
			conn_malformed(c, "an empty record");
			return false;
		}
		uint32_t len = c->rec_len;
		c->rec_len = 0;
		c->in_handler = true;
		deliver(c->svc, &c->peer, c->rec, len);
		c->in_handler = false;
		/* Its reply found no room: closed now that the record is no longer in use. */
		if (c->dead) {
			conn_close(c);
			return false;
		}
	}
}

/*
 * The idle timer restarts with every byte, so a client sending one byte
 * a minute would hold its connection for ever: a record under way must be
 * whole within record_ms of its first byte. The read timeout is the sooner
 * of the two (a timeout closes, conn_event()).
 */
static void record_timed_out(struct side_service_conn *c)
{
	struct side_service *svc = c->svc;
	uint64_t more;

	count_event(svc, GW_EV_RECORD_TIMEOUT);
	if (gw_ratelimit_allow(&svc->record_rl, gw_now_us(), &more)) {
		char who[80];
		gw_addr_text((const struct sockaddr *)&c->peer.addr, who, sizeof(who));
		gw_warn("%s: %s: %s sent no whole record in %u ms; closing (%llu more since "
			"the last line)",
			svc->cfg.route->name, svc->cfg.name, who, svc->cfg.record_ms,
			(unsigned long long)more);
	}
	conn_close(c);
}

static void conn_deadline(struct side_service_conn *c)
{
	struct side_service *svc = c->svc;
	uint64_t now = gw_now_us();
	uint32_t ms = svc->cfg.idle_ms;

	if (c->rec_len == 0 && evbuffer_get_length(bufferevent_get_input(c->bev)) == 0) {
		c->rec_start_us = 0;
	} else {
		if (c->rec_start_us == 0)
			c->rec_start_us = now;
		uint64_t spent_ms = (now - c->rec_start_us) / 1000;
		if (spent_ms >= svc->cfg.record_ms) {
			record_timed_out(c);
			return;
		}
		if (svc->cfg.record_ms - spent_ms < ms)
			ms = (uint32_t)(svc->cfg.record_ms - spent_ms);
	}
	struct timeval rt = gw_ms_timeval(ms), idle = gw_ms_timeval(svc->cfg.idle_ms);
	bufferevent_set_timeouts(c->bev, &rt, &idle);
}

static void conn_read(struct bufferevent *bev, void *arg)
{
	struct side_service_conn *c = arg;

	(void)bev;
	if (conn_parse(c))
		conn_deadline(c);
}

static void conn_event(struct bufferevent *bev, short what, void *arg)
{
	struct side_service_conn *c = arg;

	(void)bev;
	if ((what & BEV_EVENT_TIMEOUT) && c->rec_start_us) {
		/* The read timeout was the record's deadline, or the idle time within it. */
		record_timed_out(c);
		return;
	}
	if (what & BEV_EVENT_TIMEOUT)
		gw_debug("%s: %s connection idle: closing", c->svc->cfg.route->name,
			 c->svc->cfg.name);
	conn_close(c);
}

/* TCP connections open from @peer's host (a few dozen at most: a scan). */
static uint32_t conns_of(const struct side_service *svc, const struct sockaddr *peer, socklen_t len)
{
	struct gw_host want, have;
	uint32_t count = 0;
	const struct side_service_conn *c;

	if (!gw_host_from_sockaddr(&want, peer, len))
		return 0;
	TAILQ_FOREACH (c, &svc->conns, link) {
		if (gw_host_from_sockaddr(&have, (const struct sockaddr *)&c->peer.addr,
					  c->peer.addrlen) &&
		    gw_host_equal(&want, &have))
			count++;
	}
	return count;
}

static bool tcp_admit(const struct sockaddr *peer, socklen_t len, void *arg)
{
	struct side_service *svc = arg;
	char who[80];
	uint64_t more;
	const char *why = NULL;
	enum gw_event_kind k = GW_EV_SESSION_LIMIT;

	if (!gw_route_client_allowed(svc->cfg.route, peer) && !diverted(svc, peer, len)) {
		why = "not in allowed_clients";
		k = GW_EV_REFUSED_CLIENT;
	} else if (svc->nconns >= svc->cfg.max_conns) {
		why = "the service's connections are all open";
	} else if (conns_of(svc, peer, len) >= svc->cfg.max_conns_per_addr) {
		/* TCP cannot be forged: one host does not take the others' connections. */
		why = "the address has its share of the connections";
		k = GW_EV_CLIENT_SESSION_LIMIT;
	}
	if (!why)
		return true;
	count_event(svc, k);
	if (gw_ratelimit_allow(&svc->refuse_rl, gw_now_us(), &more)) {
		gw_addr_text(peer, who, sizeof(who));
		gw_warn("%s: %s: refused a connection from %s (%s; %llu more refused since the "
			"last line)",
			svc->cfg.route->name, svc->cfg.name, who, why, (unsigned long long)more);
	}
	return false;
}

static void tcp_accepted(evutil_socket_t fd, const struct sockaddr *peer, socklen_t len, void *arg)
{
	struct side_service *svc = arg;
	struct side_service_conn *c = calloc(1, sizeof(*c));

	if (c)
		c->rec = malloc(svc->cfg.max_msg);
	if (c && c->rec)
		c->bev = bufferevent_socket_new(svc->base, fd, BEV_OPT_CLOSE_ON_FREE);
	if (!c || !c->rec || !c->bev) {
		gw_warn("%s: %s: out of memory for a connection", svc->cfg.route->name,
			svc->cfg.name);
		if (c)
			free(c->rec);
		free(c);
		close(fd);
		return;
	}
	c->svc = svc;
	memcpy(&c->peer.addr, peer, len <= sizeof(c->peer.addr) ? len : sizeof(c->peer.addr));
	c->peer.addrlen = len;
	c->peer.conn_id = ++svc->next_conn_id;
	if (svc->wildcard) {
		socklen_t ll = sizeof(c->peer.local);
		if (getsockname(fd, (struct sockaddr *)&c->peer.local, &ll) != 0)
			c->peer.local.ss_family = 0;
	}
	TAILQ_INSERT_TAIL(&svc->conns, c, link);
	svc->nconns++;
	struct timeval idle = gw_ms_timeval(svc->cfg.idle_ms);
	bufferevent_set_timeouts(c->bev, &idle, &idle);
	bufferevent_setcb(c->bev, conn_read, NULL, conn_event, c);
	bufferevent_enable(c->bev, EV_READ | EV_WRITE);
}

static const struct tcp_listener_ops side_service_tcp_ops = {
	.admit = tcp_admit,
	.accepted = tcp_accepted,
	/* side_service_start() tries another pair; a configured port taken, its caller reports */
	.in_use_is_handled = true,
};

/* ---- UDP ------------------------------------------------------------------- */

/* The address a datagram was sent to, from its IP_PKTINFO / IPV6_PKTINFO (wildcard sockets). */
static void local_of(struct msghdr *mh, struct sockaddr_storage *local)
{
	for (struct cmsghdr *cm = CMSG_FIRSTHDR(mh); cm; cm = CMSG_NXTHDR(mh, cm)) {
		if (cm->cmsg_level == IPPROTO_IP && cm->cmsg_type == IP_PKTINFO) {
			struct in_pktinfo pi;
			struct sockaddr_in *sin = (struct sockaddr_in *)local;
			memcpy(&pi, CMSG_DATA(cm), sizeof(pi));
			sin->sin_family = AF_INET;
			sin->sin_addr = pi.ipi_addr;
			return;
		}
		if (cm->cmsg_level == IPPROTO_IPV6 && cm->cmsg_type == IPV6_PKTINFO) {
			struct in6_pktinfo pi;
			struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)local;
			memcpy(&pi, CMSG_DATA(cm), sizeof(pi));
			sin6->sin6_family = AF_INET6;
			sin6->sin6_addr = pi.ipi6_addr;
			sin6->sin6_scope_id = pi.ipi6_ifindex; /* a link-local address's link */
			return;
		}
	}
}

/*
 * Send @len bytes to @peer, from the address its call was sent to when the
 * socket is the wildcard's (common/sendfrom.h).
 */
static bool udp_send(struct side_service *svc, const struct side_service_peer *peer,
		     const uint8_t *msg, size_t len)
{
	return gw_send_from(svc->udp_fd, msg, len, (const struct sockaddr *)&peer->addr,
			    peer->addrlen, &peer->local);
}

static void udp_read(evutil_socket_t fd, short what, void *arg)
{
	struct side_service *svc = arg;

	(void)what;
	/* A bounded batch per wakeup, so that a flood cannot starve the loop. */
	for (int i = 0; i < 64; i++) {
		struct side_service_peer peer = { .addrlen = sizeof(peer.addr) };
		union {
			struct cmsghdr align;
			uint8_t buf[CMSG_SPACE(sizeof(struct in6_pktinfo))];
		} ctl;
		struct iovec iov = { .iov_base = svc->dgram, .iov_len = svc->cfg.max_msg + 1 };
		struct msghdr mh = { .msg_name = &peer.addr,
				     .msg_namelen = sizeof(peer.addr),
				     .msg_iov = &iov,
				     .msg_iovlen = 1,
				     .msg_control = ctl.buf,
				     .msg_controllen = sizeof(ctl.buf) };
		ssize_t n = recvmsg(fd, &mh, MSG_TRUNC);
		if (n < 0)
			return;
		peer.addrlen = mh.msg_namelen;
		if (svc->wildcard)
			local_of(&mh, &peer.local);
		if (!gw_route_client_allowed(svc->cfg.route, (const struct sockaddr *)&peer.addr) &&
		    !diverted(svc, (const struct sockaddr *)&peer.addr, peer.addrlen)) {
			count_event(svc, GW_EV_REFUSED_CLIENT);
			continue;
		}
		if ((size_t)n > svc->cfg.max_msg || n == 0) {
			/* Truncated: its arguments are lost, and no reply could be trusted. */
			count_event(svc, GW_EV_MALFORMED_RECORD);
			continue;
		}
		peer.call_len = (uint32_t)n;
		deliver(svc, &peer, svc->dgram, (size_t)n);
	}
}

/* The budget slot of @peer's network: its own, a free one, or one it shares (side_service.h). */
static struct udp_budget *budget_of(struct side_service *svc, const struct side_service_peer *peer,
				    uint64_t now)
{
	struct gw_host h;
	uint32_t hash = 2166136261u; /* FNV-1a: spreads the networks over the slots */

	if (!gw_host_from_sockaddr(&h, (const struct sockaddr *)&peer->addr, peer->addrlen))
		memset(&h, 0, sizeof(h)); /* not IP: one slot for them all */
	hash = (hash ^ h.family) * 16777619u;
	for (size_t i = 0; i < gw_host_prefix_len(h.family); i++)
		hash = (hash ^ h.addr[i]) * 16777619u;
	struct udp_budget *b = &svc->budget[hash % SIDE_UDP_BUDGET_SLOTS];
	/*
	 * Another network's slot is taken over once its bucket is full again
	 * (nothing sent to it for a while); until then the two share it, which
	 * errs toward sending less.
	 */
	if (!gw_host_same_prefix(&b->net, &h) &&
	    gw_tbucket_full(&b->tb, now, SIDE_UDP_BUDGET_RATE, SIDE_UDP_BUDGET_BURST))
		b->net = h;
	return b;
}

/*
 * A datagram reply to a source that may be forged (side_service.h): the
 * length sent within a few times the call's, and within the network's
 * budget. Returns the length to send (@msg's, or the SYSTEM_ERR put in
 * @alt), 0 to send nothing.
 */
static size_t udp_reply_guard(struct side_service *svc, const struct side_service_peer *peer,
			      const uint8_t *msg, size_t len, uint8_t *alt, size_t altcap,
			      const uint8_t **out)
{
	uint64_t now = gw_now_us(), more;
	char who[80];

	*out = msg;
	if (len > SIDE_UDP_REPLY_FLOOR && len > (size_t)SIDE_UDP_REPLY_FACTOR * peer->call_len) {
		count_event(svc, GW_EV_UDP_REPLY_TOO_LARGE);
		if (gw_ratelimit_allow(&svc->udp_large_rl, now, &more)) {
			gw_addr_text((const struct sockaddr *)&peer->addr, who, sizeof(who));
			gw_warn("%s: %s: a %zu-byte reply to a %u-byte UDP call from %s answered "
				"SYSTEM_ERR instead (a UDP reply may be %u times its call: "
				"asked over TCP it goes whole; %llu more since the last line)",
				svc->cfg.route->name, svc->cfg.name, len, peer->call_len, who,
				SIDE_UDP_REPLY_FACTOR, (unsigned long long)more);
		}
		len = rpc_encode_accept_error(alt, altcap, xdr_get32(msg), RPCSTAT_SYSTEM_ERR, 0,
					      0);
		*out = alt;
	}
	struct udp_budget *b = budget_of(svc, peer, now);
	if (!gw_tbucket_take(&b->tb, now, len, SIDE_UDP_BUDGET_RATE, SIDE_UDP_BUDGET_BURST)) {
		count_event(svc, GW_EV_UDP_REPLY_RATE_LIMITED);
		if (gw_ratelimit_allow(&svc->udp_budget_rl, now, &more)) {
			gw_addr_text((const struct sockaddr *)&peer->addr, who, sizeof(who));
			gw_warn("%s: %s: UDP replies to %s's network over %u KiB/s: not sent (the "
				"client asks again; %llu more since the last line)",
				svc->cfg.route->name, svc->cfg.name, who,
				SIDE_UDP_BUDGET_RATE / 1024, (unsigned long long)more);
		}
		return 0;
	}
	return len;
}

bool side_service_reply(struct side_service *svc, const struct side_service_peer *peer,
			const uint8_t *msg, size_t len)
{
	if (peer->conn_id == 0) {
		uint8_t alt[64];
		const uint8_t *send = msg;
		size_t n = len >= 4 ? udp_reply_guard(svc, peer, msg, len, alt, sizeof(alt), &send)
				    : 0;
		if (!n)
			return false;
		return udp_send(svc, peer, send, n) && send == msg;
	}
	struct side_service_conn *c;
	TAILQ_FOREACH (c, &svc->conns, link) {
		if (c->peer.conn_id == peer->conn_id)
			break;
	}
	if (!c || c->dead || len > RM_LEN_MASK)
		return false;
	struct evbuffer *out = bufferevent_get_output(c->bev);
	if (evbuffer_get_length(out) + len > svc->cfg.max_output) {
		gw_warn("%s: %s: a client does not read its replies; closing its connection",
			svc->cfg.route->name, svc->cfg.name);
		count_event(svc, GW_EV_OUTPUT_OVERFLOW);
		if (c->in_handler)
			c->dead = true;
		else
			conn_close(c);
		return false;
	}
	uint32_t m = RM_LAST_FRAG | (uint32_t)len;
	uint8_t mark[RM_MARK_SIZE] = { m >> 24, m >> 16, m >> 8, m };
	return evbuffer_add(out, mark, sizeof(mark)) == 0 && evbuffer_add(out, msg, len) == 0;
}

/* ---- life cycle --------------------------------------------------------- */

static int udp_bind(const struct sockaddr *addr, socklen_t len, uint16_t *port)
{
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	int one = 1;
	int fd = socket(addr->sa_family, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);

	memset(&ss, 0, sizeof(ss));

	if (fd < 0)
		return -1;
	if (addr->sa_family == AF_INET6)
		setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
	/* On the wildcard: learn each call's destination, for its reply's source. */
	if (gw_addr_is_wildcard((const struct sockaddr_storage *)addr) &&
	    (addr->sa_family == AF_INET6
		     ? setsockopt(fd, IPPROTO_IPV6, IPV6_RECVPKTINFO, &one, sizeof(one))
		     : setsockopt(fd, IPPROTO_IP, IP_PKTINFO, &one, sizeof(one))) != 0) {
		int e = errno;
		close(fd);
		errno = e;
		return -1;
	}
	if (bind(fd, addr, len) != 0 || getsockname(fd, (struct sockaddr *)&ss, &sl) != 0) {
		int e = errno;
		close(fd);
		errno = e;
		return -1;
	}
	*port = ntohs(ss.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port
					       : ((struct sockaddr_in *)&ss)->sin_port);
	return fd;
}

struct side_service *side_service_start(struct event_base *base, const struct sockaddr *addr,
					socklen_t addrlen, const struct side_service_config *cfg)
{
	struct side_service *svc = calloc(1, sizeof(*svc));
	struct sockaddr_storage ss;
	int e;

	if (!svc || addrlen > sizeof(ss) || cfg->max_msg == 0) {
		free(svc);
		errno = ENOMEM;
		return NULL;
	}
	svc->base = base;
	svc->cfg = *cfg;
	if (!svc->cfg.max_conns_per_addr)
		svc->cfg.max_conns_per_addr =
			cfg->max_conns >= 16 ? cfg->max_conns / 8 : cfg->max_conns;
	if (!svc->cfg.record_ms)
		svc->cfg.record_ms = SIDE_RECORD_MS;
	gw_ratelimit_init(&svc->refuse_rl, 1000000);
	gw_ratelimit_init(&svc->record_rl, 1000000);
	gw_ratelimit_init(&svc->udp_large_rl, 1000000);
	gw_ratelimit_init(&svc->udp_budget_rl, 1000000);
	svc->udp_fd = -1;
	TAILQ_INIT(&svc->conns);
	svc->dgram = malloc((size_t)cfg->max_msg + 1);
	if (!svc->dgram)
		goto fail;
	memcpy(&ss, addr, addrlen);
	svc->wildcard = gw_addr_is_wildcard(&ss);
	/*
	 * Port 0: the UDP socket takes one and the listener the same. Another
	 * program may hold that port on TCP: then try another, a few times.
	 */
	for (int attempt = 0; attempt < 8; attempt++) {
		svc->udp_fd = udp_bind((const struct sockaddr *)&ss, addrlen, &svc->port);
		if (svc->udp_fd < 0)
			goto fail;
		struct sockaddr_storage tcp_ss = ss;
		gw_sockaddr_set_port(&tcp_ss, svc->port);
		svc->tcp = tcp_listener_new(base, (const struct sockaddr *)&tcp_ss, addrlen, 0,
					    &side_service_tcp_ops, svc);
		if (svc->tcp)
			break;
		e = errno;
		close(svc->udp_fd);
		svc->udp_fd = -1;
		errno = e;
		if (e != EADDRINUSE || ntohs(((struct sockaddr_in *)addr)->sin_port) != 0)
			goto fail;
	}
	if (!svc->tcp)
		goto fail;
	svc->udp_ev = event_new(base, svc->udp_fd, EV_READ | EV_PERSIST, udp_read, svc);
	if (!svc->udp_ev || event_add(svc->udp_ev, NULL) != 0)
		goto fail;
	return svc;
fail:
	e = errno ? errno : ENOMEM;
	side_service_stop(svc);
	errno = e;
	return NULL;
}

void side_service_stop(struct side_service *svc)
{
	if (!svc)
		return;
	struct side_service_conn *c, *next;
	for (c = TAILQ_FIRST(&svc->conns); c; c = next) {
		next = TAILQ_NEXT(c, link);
		conn_close(c);
	}
	if (svc->tcp)
		tcp_listener_free(svc->tcp);
	if (svc->udp_ev)
		event_free(svc->udp_ev);
	if (svc->udp_fd >= 0)
		close(svc->udp_fd);
	free(svc->dgram);
	free(svc);
}

void side_service_set_route(struct side_service *svc, const struct gw_route *route)
{
	svc->cfg.route = route;
}
