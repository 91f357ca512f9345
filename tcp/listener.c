/* SPDX-License-Identifier: MIT */
/*
 * tcp/listener.c - TCP listeners with an admission hook, and outbound
 * connects with a time limit and an optional reserved source port.
 */
#include "tcp/listener.h"

#include <errno.h>
#include <linux/filter.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/event.h>
#include <event2/listener.h>
#include <rpc/rpc.h>

#include "common/clock.h"
#include "common/log.h"

/* How long accepting pauses when descriptors or memory run out. */
#define TCP_ACCEPT_RETRY_MS 100
/* Reserved ports tried when the chosen one is in use towards the server. */
#define TCP_RESVPORT_TRIES 8
/*
 * Steering by source address: an odd multiplier (2^32 / golden ratio) so
 * that neighbouring addresses land far apart, and the high bits of the
 * product, which depend on every bit of the address (the low ones do not).
 */
#define TCP_STEER_MUL	0x9e3779b1u
#define TCP_STEER_SHIFT 16
#define TCP_STEER_MAX	64

struct tcp_listener {
	struct evconnlistener *lev;
	struct event *retry;
	struct tcp_listener_ops ops;
	void *arg;
	struct tcp_listener_stats stats;
};

struct tcp_connect {
	evutil_socket_t fd;
	struct event *ev;
	tcp_connect_fn done;
	void *arg;
};

/* Close with RST: the peer learns at once that it is not wanted. */
static void tcp_close_reset(evutil_socket_t fd)
{
	struct linger lg = { .l_onoff = 1, .l_linger = 0 };

	setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
	evutil_closesocket(fd);
}

static const char *tcp_addr_str(const struct sockaddr *sa, socklen_t len, char *buf, size_t size)
{
	char host[NI_MAXHOST], serv[NI_MAXSERV];

	if (getnameinfo(sa, len, host, sizeof(host), serv, sizeof(serv),
			NI_NUMERICHOST | NI_NUMERICSERV) != 0)
		snprintf(buf, size, "(address family %d)", sa->sa_family);
	else
		snprintf(buf, size, sa->sa_family == AF_INET6 ? "[%s]:%s" : "%s:%s", host, serv);
	return buf;
}

/* ---- listener ------------------------------------------------------------ */

static void tcp_listener_on_accept(struct evconnlistener *lev, evutil_socket_t fd,
				   struct sockaddr *sa, int socklen, void *arg)
{
	struct tcp_listener *l = arg;

	(void)lev;
	if (l->ops.admit && !l->ops.admit(sa, (socklen_t)socklen, l->arg)) {
		char peer[NI_MAXHOST + NI_MAXSERV + 4];

		l->stats.refused++;
		gw_debug("tcp: refused client %s",
			 tcp_addr_str(sa, (socklen_t)socklen, peer, sizeof(peer)));
		tcp_close_reset(fd);
		return;
	}
	l->stats.accepted++;
	l->ops.accepted(fd, sa, (socklen_t)socklen, l->arg);
}

static void tcp_listener_on_error(struct evconnlistener *lev, void *arg)
{
	struct tcp_listener *l = arg;
	int err = EVUTIL_SOCKET_ERROR();
	struct timeval tv = { 0, (suseconds_t)TCP_ACCEPT_RETRY_MS * 1000 };

	l->stats.accept_errors++;
	gw_warn("tcp: accept: %s", strerror(err));
	/*
	 * The client stays queued and the socket readable: accepting again
	 * at once would spin until a descriptor is freed.
	 */
	if (err == EMFILE || err == ENFILE || err == ENOBUFS || err == ENOMEM) {
		evconnlistener_disable(lev);
		evtimer_add(l->retry, &tv);
	}
}

static void tcp_listener_on_retry(evutil_socket_t fd, short what, void *arg)
{
	struct tcp_listener *l = arg;

	(void)fd;
	(void)what;
	evconnlistener_enable(l->lev);
}

/*
 * The steering function, in C; tcp_steer_prog() is the same in classic BPF,
 * where ALU operations are 32-bit and a word load is in host order. Each
 * address word is folded in as h = (h ^ word) * MUL.
 */
static uint32_t tcp_steer_fold(uint32_t h, uint32_t word)
{
	return (h ^ word) * TCP_STEER_MUL;
}

static uint32_t tcp_steer_word(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

unsigned tcp_listener_steer_index(const struct sockaddr *peer, unsigned count)
{
	uint32_t h = 0;

	if (count <= 1)
		return 0;
	if (peer->sa_family == AF_INET) {
		const struct sockaddr_in *sin = (const struct sockaddr_in *)peer;

		h = tcp_steer_fold(h, ntohl(sin->sin_addr.s_addr));
	} else if (peer->sa_family == AF_INET6) {
		const struct sockaddr_in6 *sin6 = (const struct sockaddr_in6 *)peer;

		for (unsigned i = 0; i < 16; i += 4)
			h = tcp_steer_fold(h, tcp_steer_word(&sin6->sin6_addr.s6_addr[i]));
	} else {
		return 0;
	}
	return (h >> TCP_STEER_SHIFT) % count;
}

/*
 * The group's program runs on the SYN with the packet data advanced past
 * the TCP header, so the source address is reached relative to the network
 * header (SKF_NET_OFF): offset 12 in IPv4, 8..24 in IPv6. The listener's
 * own family says which: an IPv6 listener is IPV6_V6ONLY and never sees an
 * IPv4 SYN. The value returned is the socket's position in the group.
 */
static unsigned tcp_steer_prog(int family, unsigned count, struct sock_filter *prog)
{
	unsigned n = 0;
	int first = family == AF_INET ? 12 : 8, words = family == AF_INET ? 1 : 4;

	/* A = 0, then per word: X = A; A = word; A ^= X; A *= MUL */
	prog[n++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_IMM, 0);
	for (int w = 0; w < words; w++) {
		prog[n++] = (struct sock_filter)BPF_STMT(BPF_MISC | BPF_TAX, 0);
		prog[n++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
							 (uint32_t)(SKF_NET_OFF + first + 4 * w));
		prog[n++] = (struct sock_filter)BPF_STMT(BPF_ALU | BPF_XOR | BPF_X, 0);
		prog[n++] = (struct sock_filter)BPF_STMT(BPF_ALU | BPF_MUL | BPF_K, TCP_STEER_MUL);
	}
	prog[n++] = (struct sock_filter)BPF_STMT(BPF_ALU | BPF_RSH | BPF_K, TCP_STEER_SHIFT);
	prog[n++] = (struct sock_filter)BPF_STMT(BPF_ALU | BPF_MOD | BPF_K, count);
	prog[n++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_A, 0);
	return n;
}

/*
 * One program serves the whole group, so it goes on the first socket only.
 * While the group is still being built, the program may name a socket that
 * has not joined yet (index >= the number in the group): the kernel then
 * falls back to its 4-tuple hash for that connection. That only lasts
 * until the last worker's listener has joined.
 */
static int tcp_steer_attach(evutil_socket_t fd, int family, unsigned count)
{
	/* the start, four instructions per IPv6 address word, the end */
	struct sock_filter insns[1 + 4 * 4 + 3];
	struct sock_fprog fprog = { .filter = insns };

	fprog.len = (unsigned short)tcp_steer_prog(family, count, insns);
	return setsockopt(fd, SOL_SOCKET, SO_ATTACH_REUSEPORT_CBPF, &fprog, sizeof(fprog));
}

/*
 * A listening socket; *step names what failed (for the log) when it
 * returns -1 with errno set.
 */
/*
 * Whether @addr is free for a listener of our own, tried with a socket
 * without SO_REUSEPORT. A SO_REUSEPORT group admits any socket of the same
 * user that sets the option: another instance of the gateway started on
 * the same address would join the group (and replace its steering program)
 * and take part of the clients, where a plain listener would have failed to
 * bind. Port 0 has nothing to check. 0, or -1 with errno (EADDRINUSE).
 */
static int tcp_addr_free(const struct sockaddr *addr, socklen_t len)
{
	int one = 1, err = 0;
	uint16_t port = addr->sa_family == AF_INET6 ? ((const struct sockaddr_in6 *)addr)->sin6_port
						    : ((const struct sockaddr_in *)addr)->sin_port;

	if (port == 0)
		return 0;
	int fd = socket(addr->sa_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0 ||
	    (addr->sa_family == AF_INET6 &&
	     setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one)) < 0) ||
	    bind(fd, addr, len) < 0)
		err = errno;
	close(fd);
	errno = err;
	return err ? -1 : 0;
}

static evutil_socket_t tcp_listen_socket(const struct sockaddr *addr, socklen_t len, int backlog,
					 unsigned index, unsigned count, const char **step)
{
	int one = 1, err;

	*step = "bind (the address is taken: another process listens there)";
	if (count > 1 && index == 0 && tcp_addr_free(addr, len) < 0)
		return -1;

	evutil_socket_t fd = socket(addr->sa_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);

	*step = "socket";
	if (fd < 0)
		return -1;
	*step = "SO_REUSEADDR";
	if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0)
		goto fail;
	*step = "SO_REUSEPORT";
	if (count > 1 && setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one)) < 0)
		goto fail;
	*step = "IPV6_V6ONLY";
	if (addr->sa_family == AF_INET6 &&
	    setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one)) < 0)
		goto fail;
	*step = "bind";
	if (bind(fd, addr, len) < 0)
		goto fail;
	/* A TCP socket joins its SO_REUSEPORT group here, at listen(). */
	*step = "listen";
	if (listen(fd, backlog > 0 ? backlog : SOMAXCONN) < 0)
		goto fail;
	/*
	 * Falling back to the kernel's 4-tuple hash would scatter a client's
	 * connections over the workers: no program, no listener.
	 */
	*step = "SO_ATTACH_REUSEPORT_CBPF (steering clients by address)";
	if (count > 1 && index == 0 && tcp_steer_attach(fd, addr->sa_family, count) < 0)
		goto fail;
	return fd;
fail:
	err = errno;
	close(fd);
	errno = err;
	return -1;
}

struct tcp_listener *tcp_listener_new_steered(struct event_base *base, const struct sockaddr *addr,
					      socklen_t len, int backlog,
					      const struct tcp_listener_ops *ops, void *arg,
					      unsigned index, unsigned count)
{
	struct tcp_listener *l;
	evutil_socket_t fd;
	const char *step;
	char name[NI_MAXHOST + NI_MAXSERV + 4];

	if (count < 1 || count > TCP_STEER_MAX || index >= count ||
	    (count > 1 && addr->sa_family != AF_INET && addr->sa_family != AF_INET6)) {
		gw_err("tcp: cannot listen on %s as %u of %u: bad listener group",
		       tcp_addr_str(addr, len, name, sizeof(name)), index, count);
		errno = EINVAL;
		return NULL;
	}
	l = calloc(1, sizeof(*l));
	if (!l)
		return NULL;
	l->ops = *ops;
	l->arg = arg;
	l->retry = evtimer_new(base, tcp_listener_on_retry, l);
	if (!l->retry)
		goto nomem;
	fd = tcp_listen_socket(addr, len, backlog, index, count, &step);
	if (fd < 0) {
		int err = errno;

		if (err == EADDRINUSE && l->ops.in_use_is_handled)
			gw_debug("tcp: cannot listen on %s: %s: %s (its caller handles it)",
				 tcp_addr_str(addr, len, name, sizeof(name)), step, strerror(err));
		else if (count > 1)
			gw_err("tcp: cannot listen on %s as listener %u of %u: %s: %s",
			       tcp_addr_str(addr, len, name, sizeof(name)), index, count, step,
			       strerror(err));
		else
			gw_err("tcp: cannot listen on %s: %s: %s",
			       tcp_addr_str(addr, len, name, sizeof(name)), step, strerror(err));
		event_free(l->retry);
		free(l);
		errno = err;
		return NULL;
	}
	/* backlog 0: the socket is already listening. */
	l->lev = evconnlistener_new(base, tcp_listener_on_accept, l,
				    LEV_OPT_CLOSE_ON_FREE | LEV_OPT_CLOSE_ON_EXEC, 0, fd);
	if (!l->lev) {
		close(fd);
		goto nomem;
	}
	evconnlistener_set_error_cb(l->lev, tcp_listener_on_error);
	return l;
nomem:
	if (l->retry)
		event_free(l->retry);
	free(l);
	errno = ENOMEM;
	return NULL;
}

struct tcp_listener *tcp_listener_new(struct event_base *base, const struct sockaddr *addr,
				      socklen_t len, int backlog,
				      const struct tcp_listener_ops *ops, void *arg)
{
	return tcp_listener_new_steered(base, addr, len, backlog, ops, arg, 0, 1);
}

void tcp_listener_free(struct tcp_listener *l)
{
	if (!l)
		return;
	evconnlistener_free(l->lev);
	event_free(l->retry);
	free(l);
}

int tcp_listener_rx_timestamps(struct tcp_listener *l)
{
	int one = 1;

	return setsockopt(evconnlistener_get_fd(l->lev), SOL_SOCKET, SO_TIMESTAMPNS, &one,
			  sizeof(one));
}

int tcp_listener_local_addr(const struct tcp_listener *l, struct sockaddr_storage *ss,
			    socklen_t *len)
{
	*len = sizeof(*ss);
	return getsockname(evconnlistener_get_fd(l->lev), (struct sockaddr *)ss, len);
}

const struct tcp_listener_stats *tcp_listener_stats(const struct tcp_listener *l)
{
	return &l->stats;
}

/* ---- outbound ------------------------------------------------------------ */

static void tcp_connect_on_ready(evutil_socket_t fd, short what, void *arg)
{
	struct tcp_connect *cn = arg;
	tcp_connect_fn done = cn->done;
	void *done_arg = cn->arg;
	int err = 0;
	socklen_t el = sizeof(err);

	if (what & EV_TIMEOUT)
		err = ETIMEDOUT;
	else if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &el) < 0)
		err = errno;
	/* The handle is gone before the owner hears of the result. */
	event_free(cn->ev);
	free(cn);
	if (err != 0) {
		evutil_closesocket(fd);
		done(-1, err, done_arg);
		return;
	}
	done(fd, 0, done_arg);
}

/*
 * A socket with its connect() under way. With a reserved port, a port that
 * is still in use towards this very server (TIME_WAIT of an earlier
 * connection) makes connect() fail at once; another port may well do.
 */
static evutil_socket_t tcp_connect_socket(const struct sockaddr *addr, socklen_t len,
					  unsigned int flags)
{
	for (unsigned int attempt = 0;; attempt++) {
		evutil_socket_t fd =
			socket(addr->sa_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
		int err;

		if (fd < 0)
			return -1;
		if (flags & TCP_CONNECT_RESVPORT) {
			struct sockaddr_storage src = { .ss_family = addr->sa_family };

			if (bindresvport_sa(fd, (struct sockaddr *)&src) < 0)
				goto fail;
		}
		if (connect(fd, addr, len) == 0 || errno == EINPROGRESS)
			return fd;
		if ((flags & TCP_CONNECT_RESVPORT) &&
		    (errno == EADDRNOTAVAIL || errno == EADDRINUSE) &&
		    attempt + 1 < TCP_RESVPORT_TRIES) {
			close(fd);
			continue;
		}
	fail:
		err = errno;
		close(fd);
		errno = err;
		return -1;
	}
}

struct tcp_connect *tcp_connect_start(struct event_base *base, const struct sockaddr *addr,
				      socklen_t len, unsigned int timeout_ms, unsigned int flags,
				      tcp_connect_fn done, void *arg)
{
	struct tcp_connect *cn;
	struct timeval tv = gw_ms_timeval(timeout_ms);
	char name[NI_MAXHOST + NI_MAXSERV + 4];

	cn = calloc(1, sizeof(*cn));
	if (!cn)
		return NULL;
	cn->fd = tcp_connect_socket(addr, len, flags);
	if (cn->fd < 0) {
		int err = errno;

		gw_info("tcp: cannot connect to %s: %s",
			tcp_addr_str(addr, len, name, sizeof(name)), strerror(err));
		free(cn);
		errno = err;
		return NULL;
	}
	cn->done = done;
	cn->arg = arg;
	/* Writable means connected or failed (SO_ERROR tells which). */
	cn->ev = event_new(base, cn->fd, EV_WRITE, tcp_connect_on_ready, cn);
	if (!cn->ev || event_add(cn->ev, timeout_ms ? &tv : NULL) < 0) {
		if (cn->ev)
			event_free(cn->ev);
		close(cn->fd);
		free(cn);
		errno = ENOMEM;
		return NULL;
	}
	return cn;
}

void tcp_connect_cancel(struct tcp_connect *cn)
{
	if (!cn)
		return;
	event_free(cn->ev);
	/*
	 * The connect may have completed unseen: a plain close would send a
	 * FIN and keep the (reserved) source port in TIME_WAIT for a minute
	 * for a connection that never carried a byte. Reset it instead.
	 */
	struct linger lg = { .l_onoff = 1, .l_linger = 0 };
	setsockopt(cn->fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
	evutil_closesocket(cn->fd);
	free(cn);
}
