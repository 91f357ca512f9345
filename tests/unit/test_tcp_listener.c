/* SPDX-License-Identifier: MIT */
/*
 * Tests of tcp/listener.c: listeners on IPv4 and IPv6 loopback with the
 * admission hook, groups of SO_REUSEPORT listeners steered by the client's
 * source address, and outbound connects (success, refusal, time limit,
 * cancellation, reserved source port) on a real event loop.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <event2/event.h>

#include "common/log.h"
#include "tcp/listener.h"

#include "support/loop.h"

#define WAIT_MS 30000

struct lh {
	struct event_base *base;
	struct event *tick;
	/* listener side */
	bool refuse;
	unsigned int admit_calls;
	unsigned int accepted;
	int accepted_fd;
	struct sockaddr_storage admit_peer;
	struct sockaddr_storage accepted_peer;
	/* connect side */
	unsigned int done_calls;
	int done_fd;
	int done_err;
};

static void tick_cb(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	(void)arg;
}

static struct lh *lh_new(void)
{
	struct lh *h = calloc(1, sizeof(*h));
	struct timeval tv = { 0, 5000 };

	assert_non_null(h);
	h->base = event_base_new();
	h->tick = event_new(h->base, -1, EV_PERSIST, tick_cb, NULL);
	event_add(h->tick, &tv);
	h->accepted_fd = -1;
	h->done_fd = -1;
	return h;
}

static void lh_free(struct lh *h)
{
	if (h->accepted_fd >= 0)
		close(h->accepted_fd);
	if (h->done_fd >= 0)
		close(h->done_fd);
	event_free(h->tick);
	event_base_free(h->base);
	free(h);
}

static bool on_admit(const struct sockaddr *peer, socklen_t len, void *arg)
{
	struct lh *h = arg;

	h->admit_calls++;
	memcpy(&h->admit_peer, peer, len);
	return !h->refuse;
}

static void on_accepted(evutil_socket_t fd, const struct sockaddr *peer, socklen_t len, void *arg)
{
	struct lh *h = arg;

	h->accepted++;
	memcpy(&h->accepted_peer, peer, len);
	if (h->accepted_fd >= 0)
		close(h->accepted_fd);
	h->accepted_fd = fd;
}

static const struct tcp_listener_ops lops = {
	.admit = on_admit,
	.accepted = on_accepted,
};

/* Error lines logged: counted, and printed as the real gw_log() would. */
static int logged_errors;

void __wrap_gw_log(enum gw_log_level level, const char *fmt, ...);
void __wrap_gw_log(enum gw_log_level level, const char *fmt, ...)
{
	va_list ap;

	logged_errors += level == GW_LOG_ERR;
	va_start(ap, fmt);
	gw_vlog(level, fmt, ap);
	va_end(ap);
}

static void on_connected(evutil_socket_t fd, int err, void *arg)
{
	struct lh *h = arg;

	h->done_calls++;
	h->done_fd = fd;
	h->done_err = err;
}

/* The connect ends, its callback called once, without a socket, with @err. */
static void assert_connect_fails(struct lh *h, int err)
{
	GWT_RUN_UNTIL(h->base, h->done_calls == 1, WAIT_MS);
	assert_int_equal(h->done_calls, 1);
	assert_int_equal(h->done_fd, -1);
	assert_int_equal(h->done_err, err);
}

static socklen_t loopback(struct sockaddr_storage *ss, int family, uint16_t port)
{
	memset(ss, 0, sizeof(*ss));
	if (family == AF_INET) {
		struct sockaddr_in *sin = (struct sockaddr_in *)ss;

		sin->sin_family = AF_INET;
		sin->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		sin->sin_port = htons(port);
		return sizeof(*sin);
	}
	struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)ss;

	sin6->sin6_family = AF_INET6;
	sin6->sin6_addr = in6addr_loopback;
	sin6->sin6_port = htons(port);
	return sizeof(*sin6);
}

/* The length of the address in @ss, of either family. */
static socklen_t addr_len(const struct sockaddr_storage *ss)
{
	return ss->ss_family == AF_INET ? sizeof(struct sockaddr_in) : sizeof(struct sockaddr_in6);
}

static uint16_t port_of(const struct sockaddr_storage *ss)
{
	if (ss->ss_family == AF_INET)
		return ntohs(((const struct sockaddr_in *)ss)->sin_port);
	return ntohs(((const struct sockaddr_in6 *)ss)->sin6_port);
}

static uint16_t local_port(int fd)
{
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);

	assert_int_equal(getsockname(fd, (struct sockaddr *)&ss, &sl), 0);
	return port_of(&ss);
}

static struct tcp_listener *listen_on(struct lh *h, int family, struct sockaddr_storage *bound)
{
	struct sockaddr_storage ss;
	socklen_t len = loopback(&ss, family, 0), bl;
	struct tcp_listener *l =
		tcp_listener_new(h->base, (struct sockaddr *)&ss, len, 16, &lops, h);

	assert_non_null(l);
	assert_int_equal(tcp_listener_local_addr(l, bound, &bl), 0);
	return l;
}

/* A blocking client connect, as a test-side peer. */
static int client_to(const struct sockaddr_storage *ss)
{
	int fd = socket(ss->ss_family, SOCK_STREAM, 0);

	assert_true(fd >= 0);
	assert_int_equal(connect(fd, (const struct sockaddr *)ss, addr_len(ss)), 0);
	return fd;
}

/* A client connected to @to, once the listener has accepted it: the first it accepts. */
static int client_accepted(struct lh *h, const struct sockaddr_storage *to)
{
	int c = client_to(to);

	GWT_RUN_UNTIL(h->base, h->accepted == 1, WAIT_MS);
	assert_int_equal(h->accepted, 1);
	return c;
}

static void check_accept(int family)
{
	struct lh *h = lh_new();
	struct sockaddr_storage bound;
	struct tcp_listener *l = listen_on(h, family, &bound);
	int c = client_accepted(h, &bound);

	assert_int_equal(h->admit_calls, 1);
	/* the hooks saw the client's address */
	assert_int_equal(h->admit_peer.ss_family, family);
	assert_int_equal(port_of(&h->admit_peer), local_port(c));
	assert_int_equal(port_of(&h->accepted_peer), local_port(c));
	/* the socket is ready for the event loop */
	assert_true(fcntl(h->accepted_fd, F_GETFL) & O_NONBLOCK);
	assert_true(fcntl(h->accepted_fd, F_GETFD) & FD_CLOEXEC);
	assert_int_equal(write(c, "hi", 2), 2);
	char buf[2];
	gwt_run_for(h->base, 20);
	assert_int_equal(read(h->accepted_fd, buf, 2), 2);
	assert_int_equal(tcp_listener_stats(l)->accepted, 1);
	assert_int_equal(tcp_listener_stats(l)->refused, 0);
	close(c);
	tcp_listener_free(l);
	lh_free(h);
}

/* Receive timestamps set on the listener are the accepted connections' own. */
static void test_rx_timestamps_inherited(void **state)
{
	(void)state;
	for (int on = 0; on <= 1; on++) {
		struct lh *h = lh_new();
		struct sockaddr_storage bound;
		struct tcp_listener *l = listen_on(h, AF_INET, &bound);
		int v = -1;
		socklen_t vl = sizeof(v);

		if (on)
			assert_int_equal(tcp_listener_rx_timestamps(l), 0);
		int c = client_accepted(h, &bound);
		assert_int_equal(getsockopt(h->accepted_fd, SOL_SOCKET, SO_TIMESTAMPNS, &v, &vl),
				 0);
		assert_int_equal(v != 0, on);
		close(c);
		tcp_listener_free(l);
		lh_free(h);
	}
}

static void test_accept_ipv4(void **state)
{
	(void)state;
	check_accept(AF_INET);
}

static void test_accept_ipv6(void **state)
{
	(void)state;
	check_accept(AF_INET6);
}

/* IPv4 and IPv6 wildcard listeners on one port coexist (IPV6_V6ONLY). */
static void test_v4_and_v6_on_one_port(void **state)
{
	(void)state;
	struct lh *h = lh_new();
	struct sockaddr_in any4 = { .sin_family = AF_INET };
	struct sockaddr_in6 any6 = { .sin6_family = AF_INET6, .sin6_addr = IN6ADDR_ANY_INIT };
	struct sockaddr_storage bound;
	socklen_t bl;
	struct tcp_listener *l4 =
		tcp_listener_new(h->base, (struct sockaddr *)&any4, sizeof(any4), 0, &lops, h);

	assert_non_null(l4);
	assert_int_equal(tcp_listener_local_addr(l4, &bound, &bl), 0);
	any6.sin6_port = htons(port_of(&bound));
	struct tcp_listener *l6 =
		tcp_listener_new(h->base, (struct sockaddr *)&any6, sizeof(any6), 0, &lops, h);
	assert_non_null(l6);
	/* but not two listeners on one address and port */
	any4.sin_port = any6.sin6_port;
	struct tcp_listener *again =
		tcp_listener_new(h->base, (struct sockaddr *)&any4, sizeof(any4), 0, &lops, h);
	assert_null(again);
	assert_int_equal(errno, EADDRINUSE);

	struct sockaddr_storage to;
	loopback(&to, AF_INET6, port_of(&bound));
	int c = client_accepted(h, &to);
	assert_int_equal(h->accepted_peer.ss_family, AF_INET6);
	assert_int_equal(tcp_listener_stats(l6)->accepted, 1);
	assert_int_equal(tcp_listener_stats(l4)->accepted, 0);
	close(c);
	tcp_listener_free(l4);
	tcp_listener_free(l6);
	lh_free(h);
}

/* A refused client is reset before any byte is exchanged. */
static void test_admit_refuses(void **state)
{
	(void)state;
	struct lh *h = lh_new();
	struct sockaddr_storage bound;
	struct tcp_listener *l = listen_on(h, AF_INET, &bound);
	char buf[4];

	h->refuse = true;
	int c = client_to(&bound);
	GWT_RUN_UNTIL(h->base, h->admit_calls == 1, WAIT_MS);
	assert_int_equal(h->admit_calls, 1);
	assert_int_equal(port_of(&h->admit_peer), local_port(c));
	assert_int_equal(h->accepted, 0);
	assert_int_equal(tcp_listener_stats(l)->refused, 1);
	assert_int_equal(read(c, buf, sizeof(buf)), -1);
	assert_int_equal(errno, ECONNRESET);
	close(c);

	/* the next one is welcome */
	h->refuse = false;
	c = client_accepted(h, &bound);
	assert_int_equal(tcp_listener_stats(l)->accepted, 1);
	close(c);
	tcp_listener_free(l);
	lh_free(h);
}

static void test_connect_ok(void **state)
{
	(void)state;
	struct lh *h = lh_new();
	struct sockaddr_storage bound;
	struct tcp_listener *l = listen_on(h, AF_INET6, &bound);
	struct tcp_connect *cn =
		tcp_connect_start(h->base, (struct sockaddr *)&bound, sizeof(struct sockaddr_in6),
				  5000, 0, on_connected, h);

	assert_non_null(cn);
	/* never from inside the call */
	assert_int_equal(h->done_calls, 0);
	GWT_RUN_UNTIL(h->base, h->done_calls == 1 && h->accepted == 1, WAIT_MS);
	assert_int_equal(h->done_calls, 1);
	assert_int_equal(h->done_err, 0);
	assert_true(h->done_fd >= 0);
	assert_true(fcntl(h->done_fd, F_GETFL) & O_NONBLOCK);
	assert_int_equal(port_of(&h->accepted_peer), local_port(h->done_fd));
	/* without the flag the port is an ordinary ephemeral one */
	assert_true(local_port(h->done_fd) >= 1024);
	tcp_listener_free(l);
	lh_free(h);
}

static void test_connect_refused(void **state)
{
	(void)state;
	struct lh *h = lh_new();
	struct sockaddr_storage ss;
	socklen_t len = loopback(&ss, AF_INET, 0), bl = sizeof(ss);
	int s = socket(AF_INET, SOCK_STREAM, 0);

	/* a port that was free a moment ago, with nobody listening */
	assert_int_equal(bind(s, (struct sockaddr *)&ss, len), 0);
	assert_int_equal(getsockname(s, (struct sockaddr *)&ss, &bl), 0);
	struct tcp_connect *cn =
		tcp_connect_start(h->base, (struct sockaddr *)&ss, len, 5000, 0, on_connected, h);
	close(s);
	assert_non_null(cn);
	assert_connect_fails(h, ECONNREFUSED);
	lh_free(h);
}

/* A server that never answers a SYN, at @addr. */
struct silent {
	struct sockaddr_storage addr;
	int l;		/* its listening socket */
	int fillers[8]; /* the connections that fill its accept queue */
	unsigned int nfill;
};

/*
 * A listening socket whose accept queue (backlog 0) is full drops further
 * SYNs.
 */
static void silent_server(struct silent *s)
{
	socklen_t len = loopback(&s->addr, AF_INET, 0), bl = sizeof(s->addr);

	s->l = socket(AF_INET, SOCK_STREAM, 0);
	assert_int_equal(bind(s->l, (struct sockaddr *)&s->addr, len), 0);
	assert_int_equal(listen(s->l, 0), 0);
	assert_int_equal(getsockname(s->l, (struct sockaddr *)&s->addr, &bl), 0);
	s->nfill = 0;
	for (unsigned int i = 0; i < 8; i++) {
		int c = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
		int r = connect(c, (struct sockaddr *)&s->addr, len);

		s->fillers[s->nfill++] = c;
		if (r == 0)
			continue;
		assert_int_equal(errno, EINPROGRESS);
		/* still unanswered after a while: the queue is full */
		struct timeval tv = { 0, 200000 };
		fd_set w;
		FD_ZERO(&w);
		FD_SET(c, &w);
		if (select(c + 1, NULL, &w, NULL, &tv) == 0)
			return;
	}
	fail_msg("could not fill the accept queue");
}

static void silent_server_close(struct silent *s)
{
	for (unsigned int i = 0; i < s->nfill; i++)
		close(s->fillers[i]);
	close(s->l);
}

static void test_connect_timeout(void **state)
{
	(void)state;
	struct lh *h = lh_new();
	struct silent s;
	uint64_t t0;

	silent_server(&s);
	t0 = gwt_now_ms();
	struct tcp_connect *cn =
		tcp_connect_start(h->base, (struct sockaddr *)&s.addr, sizeof(struct sockaddr_in),
				  300, 0, on_connected, h);

	assert_non_null(cn);
	assert_connect_fails(h, ETIMEDOUT);
	/* not before the time limit */
	assert_true(gwt_now_ms() - t0 >= 290);
	silent_server_close(&s);
	lh_free(h);
}

static void test_connect_cancel(void **state)
{
	(void)state;
	struct lh *h = lh_new();
	struct silent s;

	silent_server(&s);
	struct tcp_connect *cn =
		tcp_connect_start(h->base, (struct sockaddr *)&s.addr, sizeof(struct sockaddr_in),
				  200, 0, on_connected, h);

	assert_non_null(cn);
	gwt_run_for(h->base, 20);
	tcp_connect_cancel(cn);
	/* past the time limit: the callback does not come */
	gwt_run_for(h->base, 400);
	assert_int_equal(h->done_calls, 0);
	silent_server_close(&s);
	lh_free(h);
}

/* A reserved source port, as kernel NFS clients use (needs root). */
static void test_connect_reserved_port(void **state)
{
	(void)state;
	if (geteuid() != 0)
		skip();
	for (int family = AF_INET; family != -1; family = family == AF_INET ? AF_INET6 : -1) {
		struct lh *h = lh_new();
		struct sockaddr_storage bound;
		struct tcp_listener *l = listen_on(h, family, &bound);
		struct tcp_connect *cn =
			tcp_connect_start(h->base, (struct sockaddr *)&bound, addr_len(&bound),
					  5000, TCP_CONNECT_RESVPORT, on_connected, h);

		assert_non_null(cn);
		GWT_RUN_UNTIL(h->base, h->done_calls == 1 && h->accepted == 1, WAIT_MS);
		assert_int_equal(h->done_err, 0);
		assert_true(h->done_fd >= 0);
		uint16_t port = local_port(h->done_fd);
		assert_true(port < 1024);
		assert_true(port > 0);
		/* the server sees it too */
		assert_int_equal(port_of(&h->accepted_peer), port);
		tcp_listener_free(l);
		lh_free(h);
	}
}

/* ---- a steered SO_REUSEPORT group ---------------------------------------- */

#define STEER_MAX      3
#define STEER_ADDRS    20
#define STEER_PER_ADDR 4

struct steer_group;

/* One worker's listener: its index, and what it was given. */
struct steer_side {
	struct steer_group *g;
	unsigned int index;
	unsigned int accepted;
};

struct steer_group {
	struct lh *h;
	unsigned int count;
	unsigned int accepted;
	unsigned int misplaced;
	struct tcp_listener *l[STEER_MAX];
	struct steer_side side[STEER_MAX];
};

static void on_steered(evutil_socket_t fd, const struct sockaddr *peer, socklen_t len, void *arg)
{
	struct steer_side *s = arg;

	(void)len;
	s->accepted++;
	s->g->accepted++;
	if (tcp_listener_steer_index(peer, s->g->count) != s->index)
		s->g->misplaced++;
	close(fd);
}

static const struct tcp_listener_ops steer_ops = {
	.accepted = on_steered,
};

/*
 * count listeners on the loopback address of family, in index order: the
 * first on port 0, the rest on the port it got. Returns that address.
 */
static void steer_group_listen(struct steer_group *g, struct lh *h, int family, unsigned int count,
			       struct sockaddr_storage *bound)
{
	struct sockaddr_storage ss;
	socklen_t len = loopback(&ss, family, 0), bl;

	memset(g, 0, sizeof(*g));
	g->h = h;
	g->count = count;
	for (unsigned int i = 0; i < count; i++) {
		g->side[i] = (struct steer_side){ .g = g, .index = i };
		g->l[i] = tcp_listener_new_steered(h->base, (struct sockaddr *)&ss, len, 128,
						   &steer_ops, &g->side[i], i, count);
		assert_non_null(g->l[i]);
		if (i == 0) {
			assert_int_equal(tcp_listener_local_addr(g->l[0], bound, &bl), 0);
			loopback(&ss, family, port_of(bound));
		}
	}
}

static void steer_group_free(struct steer_group *g)
{
	for (unsigned int i = 0; i < g->count; i++)
		tcp_listener_free(g->l[i]);
}

/* A client from src (port 0: any), connected once the listener has taken it. */
static int steer_connect(struct steer_group *g, const struct sockaddr_storage *src,
			 const struct sockaddr_storage *to)
{
	socklen_t len = addr_len(to);
	unsigned int before = g->accepted;
	int fd = socket(to->ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);

	assert_true(fd >= 0);
	assert_int_equal(bind(fd, (const struct sockaddr *)src, len), 0);
	assert_int_equal(connect(fd, (const struct sockaddr *)to, len), 0);
	GWT_RUN_UNTIL(g->h->base, g->accepted == before + 1, WAIT_MS);
	assert_int_equal(g->accepted, before + 1);
	return fd;
}

/*
 * Clients from 127.0.0.1 .. 127.0.0.20 (all of 127/8 is local on Linux),
 * several connections each from different source ports: every one lands
 * on the listener tcp_listener_steer_index() names, and every listener
 * gets some, so that no single socket takes them all by luck.
 */
static void check_steered_ipv4(unsigned int count)
{
	struct lh *h = lh_new();
	struct steer_group g;
	struct sockaddr_storage bound;
	int fds[STEER_ADDRS * STEER_PER_ADDR];
	unsigned int n = 0, expect[STEER_MAX] = { 0 };

	steer_group_listen(&g, h, AF_INET, count, &bound);
	for (unsigned int a = 1; a <= STEER_ADDRS; a++) {
		struct sockaddr_storage src;
		struct sockaddr_in *sin = (struct sockaddr_in *)&src;
		uint16_t first_port = 0;

		loopback(&src, AF_INET, 0);
		sin->sin_addr.s_addr = htonl(INADDR_LOOPBACK - 1 + a);
		expect[tcp_listener_steer_index((struct sockaddr *)&src, count)] += STEER_PER_ADDR;
		for (unsigned int k = 0; k < STEER_PER_ADDR; k++) {
			fds[n] = steer_connect(&g, &src, &bound);
			/* the same address from another port each time */
			if (k == 0)
				first_port = local_port(fds[n]);
			else
				assert_int_not_equal(local_port(fds[n]), first_port);
			n++;
		}
	}
	assert_int_equal(g.accepted, n);
	assert_int_equal(g.misplaced, 0);
	for (unsigned int i = 0; i < count; i++) {
		assert_int_equal(g.side[i].accepted, expect[i]);
		assert_true(g.side[i].accepted > 0);
		assert_int_equal(tcp_listener_stats(g.l[i])->accepted, expect[i]);
	}
	for (unsigned int i = 0; i < n; i++)
		close(fds[i]);
	steer_group_free(&g);
	lh_free(h);
}

static void test_steered_group_of_2(void **state)
{
	(void)state;
	check_steered_ipv4(2);
}

static void test_steered_group_of_3(void **state)
{
	(void)state;
	check_steered_ipv4(3);
}

static bool have_ipv6_loopback(void)
{
	struct sockaddr_storage ss;
	socklen_t len = loopback(&ss, AF_INET6, 0);
	int fd = socket(AF_INET6, SOCK_STREAM, 0);
	bool ok = fd >= 0 && bind(fd, (struct sockaddr *)&ss, len) == 0;

	if (fd >= 0)
		close(fd);
	return ok;
}

/* ::1 is the only IPv6 source here: all its connections go to one place. */
static void test_steered_ipv6(void **state)
{
	(void)state;
	if (!have_ipv6_loopback())
		skip();
	for (unsigned int count = 2; count <= STEER_MAX; count++) {
		struct lh *h = lh_new();
		struct steer_group g;
		struct sockaddr_storage bound, src;
		int fds[8];

		steer_group_listen(&g, h, AF_INET6, count, &bound);
		loopback(&src, AF_INET6, 0);
		unsigned int want = tcp_listener_steer_index((struct sockaddr *)&src, count);
		for (unsigned int k = 0; k < 8; k++)
			fds[k] = steer_connect(&g, &src, &bound);
		assert_int_equal(g.misplaced, 0);
		assert_int_equal(g.side[want].accepted, 8);
		for (unsigned int k = 0; k < 8; k++)
			close(fds[k]);
		steer_group_free(&g);
		lh_free(h);
	}
}

/* The C function matches the documented formula, port ignored. */
static void test_steer_index_formula(void **state)
{
	(void)state;
	struct sockaddr_in sin = { .sin_family = AF_INET, .sin_port = htons(7) };
	struct sockaddr_in6 sin6 = { .sin6_family = AF_INET6 };
	uint32_t h;

	sin.sin_addr.s_addr = htonl(0x0a000005);
	h = (0u ^ 0x0a000005u) * 0x9e3779b1u;
	for (unsigned int count = 1; count <= 64; count++)
		assert_int_equal(tcp_listener_steer_index((struct sockaddr *)&sin, count),
				 count == 1 ? 0 : (h >> 16) % count);
	sin.sin_port = htons(2049);
	assert_int_equal(tcp_listener_steer_index((struct sockaddr *)&sin, 64), (h >> 16) % 64);

	/* fe80::1:2 as words 0xfe800000 0 0x1 0x2 */
	sin6.sin6_addr.s6_addr[0] = 0xfe;
	sin6.sin6_addr.s6_addr[1] = 0x80;
	sin6.sin6_addr.s6_addr[11] = 1;
	sin6.sin6_addr.s6_addr[15] = 2;
	h = (0u ^ 0xfe800000u) * 0x9e3779b1u;
	h = (h ^ 0u) * 0x9e3779b1u;
	h = (h ^ 1u) * 0x9e3779b1u;
	h = (h ^ 2u) * 0x9e3779b1u;
	assert_int_equal(tcp_listener_steer_index((struct sockaddr *)&sin6, 5), (h >> 16) % 5);
}

/* count 1 is a plain listener: no SO_REUSEPORT, so a second one is refused. */
static void test_steered_count_1(void **state)
{
	(void)state;
	struct lh *h = lh_new();
	struct sockaddr_storage ss, bound;
	socklen_t len = loopback(&ss, AF_INET, 0), bl;
	struct tcp_listener *l =
		tcp_listener_new_steered(h->base, (struct sockaddr *)&ss, len, 16, &lops, h, 0, 1);
	int one = 0;
	socklen_t ol = sizeof(one);

	assert_non_null(l);
	assert_int_equal(tcp_listener_local_addr(l, &bound, &bl), 0);
	int c = client_accepted(h, &bound);
	assert_int_equal(h->admit_calls, 1);
	close(c);
	/* the accepted socket's listener was not a reuseport one */
	assert_int_equal(getsockopt(h->accepted_fd, SOL_SOCKET, SO_REUSEPORT, &one, &ol), 0);
	assert_int_equal(one, 0);
	struct tcp_listener *again = tcp_listener_new_steered(h->base, (struct sockaddr *)&bound,
							      bl, 16, &lops, h, 0, 1);
	assert_null(again);
	assert_int_equal(errno, EADDRINUSE);
	tcp_listener_free(l);
	lh_free(h);
}

/*
 * A port found taken is an error line, unless the caller said it handles
 * that by trying another (a side service's port pair): then nothing is
 * logged as an error, and the caller still gets NULL and EADDRINUSE.
 */
static void test_port_in_use_logged_unless_handled(void **state)
{
	(void)state;
	struct lh *h = lh_new();
	struct sockaddr_storage ss, bound;
	socklen_t len = loopback(&ss, AF_INET, 0), bl;
	struct tcp_listener *l =
		tcp_listener_new(h->base, (struct sockaddr *)&ss, len, 0, &lops, h);
	struct tcp_listener_ops tries = lops;

	assert_non_null(l);
	assert_int_equal(tcp_listener_local_addr(l, &bound, &bl), 0);
	tries.in_use_is_handled = true;
	logged_errors = 0;
	assert_null(tcp_listener_new(h->base, (struct sockaddr *)&bound, bl, 0, &tries, h));
	assert_int_equal(errno, EADDRINUSE);
	assert_int_equal(logged_errors, 0);
	assert_null(tcp_listener_new(h->base, (struct sockaddr *)&bound, bl, 0, &lops, h));
	assert_int_equal(errno, EADDRINUSE);
	assert_int_equal(logged_errors, 1);
	tcp_listener_free(l);
	lh_free(h);
}

/*
 * A second group on an address that has one (another instance of the
 * gateway) is refused at its first listener, as a plain listener would be,
 * rather than joining the running group and taking part of its clients.
 */
static void test_steered_group_refuses_a_second(void **state)
{
	(void)state;
	struct lh *h = lh_new();
	struct steer_group g;
	struct sockaddr_storage bound;
	socklen_t bl = sizeof(struct sockaddr_in);

	steer_group_listen(&g, h, AF_INET, 2, &bound);
	errno = 0;
	struct tcp_listener *other = tcp_listener_new_steered(h->base, (struct sockaddr *)&bound,
							      bl, 16, &lops, h, 0, 2);
	assert_null(other);
	assert_int_equal(errno, EADDRINUSE);
	steer_group_free(&g);
	lh_free(h);
}

/* Groups of 0 or more than 64, or an index outside the group, are refused. */
static void test_steered_bad_group(void **state)
{
	(void)state;
	struct lh *h = lh_new();
	struct sockaddr_storage ss;
	socklen_t len = loopback(&ss, AF_INET, 0);
	const unsigned int bad[][2] = { { 0, 0 }, { 1, 1 }, { 2, 2 }, { 0, 65 } };

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		errno = 0;
		assert_null(tcp_listener_new_steered(h->base, (struct sockaddr *)&ss, len, 16,
						     &lops, h, bad[i][0], bad[i][1]));
		assert_int_equal(errno, EINVAL);
	}
	struct tcp_listener *l = tcp_listener_new_steered(h->base, (struct sockaddr *)&ss, len, 16,
							  &lops, h, 63, 64);
	assert_non_null(l);
	tcp_listener_free(l);
	lh_free(h);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rx_timestamps_inherited),
		cmocka_unit_test(test_accept_ipv4),
		cmocka_unit_test(test_port_in_use_logged_unless_handled),
		cmocka_unit_test(test_accept_ipv6),
		cmocka_unit_test(test_v4_and_v6_on_one_port),
		cmocka_unit_test(test_admit_refuses),
		cmocka_unit_test(test_connect_ok),
		cmocka_unit_test(test_connect_refused),
		cmocka_unit_test(test_connect_timeout),
		cmocka_unit_test(test_connect_cancel),
		cmocka_unit_test(test_connect_reserved_port),
		cmocka_unit_test(test_steered_group_of_2),
		cmocka_unit_test(test_steered_group_of_3),
		cmocka_unit_test(test_steered_ipv6),
		cmocka_unit_test(test_steer_index_formula),
		cmocka_unit_test(test_steered_count_1),
		cmocka_unit_test(test_steered_group_refuses_a_second),
		cmocka_unit_test(test_steered_bad_group),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
