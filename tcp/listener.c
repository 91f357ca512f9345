/* SPDX-License-Identifier: MIT */
/*
 * tcp/listener.c - TCP listeners with an admission hook, and outbound
 * connects with a time limit and an optional reserved source port.
 */
#include "tcp/listener.h"

#include <errno.h>
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

static evutil_socket_t tcp_listen_socket(const struct sockaddr *addr, socklen_t len, int backlog)
{
	int one = 1, err;
	evutil_socket_t fd = socket(addr->sa_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return -1;
	if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0)
		goto fail;
	if (addr->sa_family == AF_INET6 &&
	    setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one)) < 0)
		goto fail;
	if (bind(fd, addr, len) < 0 || listen(fd, backlog > 0 ? backlog : SOMAXCONN) < 0)
		goto fail;
	return fd;
fail:
	err = errno;
	close(fd);
	errno = err;
	return -1;
}

struct tcp_listener *tcp_listener_new(struct event_base *base, const struct sockaddr *addr,
				      socklen_t len, int backlog,
				      const struct tcp_listener_ops *ops, void *arg)
{
	struct tcp_listener *l;
	evutil_socket_t fd;
	char name[NI_MAXHOST + NI_MAXSERV + 4];

	l = calloc(1, sizeof(*l));
	if (!l)
		return NULL;
	l->ops = *ops;
	l->arg = arg;
	l->retry = evtimer_new(base, tcp_listener_on_retry, l);
	if (!l->retry)
		goto nomem;
	fd = tcp_listen_socket(addr, len, backlog);
	if (fd < 0) {
		int err = errno;

		gw_err("tcp: cannot listen on %s: %s", tcp_addr_str(addr, len, name, sizeof(name)),
		       strerror(err));
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

void tcp_listener_free(struct tcp_listener *l)
{
	if (!l)
		return;
	evconnlistener_free(l->lev);
	event_free(l->retry);
	free(l);
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
