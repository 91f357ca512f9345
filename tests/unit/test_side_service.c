/* SPDX-License-Identifier: MIT */
/*
 * The side services' endpoint (gateway/side/rpc/side_service.c) on loopback: records
 * assembled from fragments, what closes a TCP connection (a record over
 * the limit, an empty fragment that is not the last), the connection
 * limit, allowed_clients on UDP and TCP, one host's messages offered to
 * a divert handler ahead of them, and a reply for a connection that has
 * gone dropped rather than sent anywhere else; and the defences
 * against a hostile peer: a UDP reply many times its call (a reflector for
 * forged sources) answered SYSTEM_ERR, one network's replies held to a
 * budget, one address's share of the TCP connections, and a deadline for
 * a whole record against a client that sends a byte a minute.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <cmocka.h>

#include <event2/event.h>

#include "common/xdr.h"
#include "conf/config.h"
#include "gateway/counters/counters.h"
#include "gateway/side/rpc/side_service.h"

#include "support/loop.h"
#include "support/udp.h"

struct rig {
	struct event_base *base;
	struct gw_route route;
	struct gw_counters counters;
	struct side_service *svc;
	struct sockaddr_in at;
	/* what the handler saw last */
	size_t msgs;
	uint8_t last[256];
	size_t last_len;
	struct side_service_peer last_peer;
	bool echo;
};

static void on_msg(void *arg, struct side_service *svc, const struct side_service_peer *peer,
		   const uint8_t *msg, size_t len)
{
	struct rig *r = arg;

	r->msgs++;
	r->last_len = len < sizeof(r->last) ? len : sizeof(r->last);
	memcpy(r->last, msg, r->last_len);
	r->last_peer = *peer;
	if (r->echo)
		side_service_reply(svc, peer, msg, len);
}

static void rig_start_ex(struct rig *r, uint32_t max_conns, uint32_t record_ms, uint32_t ip);

static void rig_start(struct rig *r, uint32_t max_conns)
{
	rig_start_ex(r, max_conns, 0, GWT_LOOPBACK);
}

/* The service on @ip (0: the wildcard; the rig's address is then 127.0.0.1). */
static void rig_start_ex(struct rig *r, uint32_t max_conns, uint32_t record_ms, uint32_t ip)
{
	memset(r, 0, sizeof(*r));
	r->base = event_base_new();
	r->route.name = "t";
	struct side_service_config sc = {
		.name = "test",
		.route = &r->route,
		.counters = &r->counters,
		.max_msg = 128,
		.max_conns = max_conns,
		.idle_ms = 5000,
		.record_ms = record_ms,
		.max_output = 4096,
		.on_msg = on_msg,
		.arg = r,
	};
	r->at.sin_family = AF_INET;
	r->at.sin_addr.s_addr = htonl(ip);
	r->svc = side_service_start(r->base, (struct sockaddr *)&r->at, sizeof(r->at), &sc);
	assert_non_null(r->svc);
	r->at.sin_addr.s_addr = htonl(ip ? ip : GWT_LOOPBACK);
	r->at.sin_port = htons(side_service_port(r->svc));
}

static void rig_stop(struct rig *r)
{
	side_service_stop(r->svc);
	event_base_free(r->base);
}

static int tcp_client(struct rig *r)
{
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	assert_int_equal(connect(fd, (struct sockaddr *)&r->at, sizeof(r->at)), 0);
	return fd;
}

/* Whether the peer closed (EOF or reset) within the pumping. */
static bool closed(struct rig *r, int fd)
{
	uint8_t b[16];
	gwt_spin_for(r->base, 100, NULL, NULL);
	struct pollfd p = { .fd = fd, .events = POLLIN };
	if (poll(&p, 1, 0) != 1)
		return false;
	ssize_t n = recv(fd, b, sizeof(b), MSG_DONTWAIT);
	return n == 0 || (n < 0 && errno == ECONNRESET);
}

static void send_frag(int fd, const void *p, uint32_t len, bool last)
{
	uint8_t mark[4];
	xdr_put32(mark, (last ? 0x80000000u : 0) | len);
	assert_int_equal(send(fd, mark, 4, 0), 4);
	if (len)
		assert_int_equal(send(fd, p, len, 0), (ssize_t)len);
}

static void test_fragments_make_one_record(void **state)
{
	(void)state;
	struct rig r;
	rig_start(&r, 4);
	r.echo = true;
	int fd = tcp_client(&r);
	send_frag(fd, "abcd", 4, false);
	send_frag(fd, "efgh", 4, false);
	send_frag(fd, "ij", 2, true);
	gwt_spin_for(r.base, 100, NULL, NULL);
	assert_int_equal(r.msgs, 1);
	assert_int_equal(r.last_len, 10);
	assert_memory_equal(r.last, "abcdefghij", 10);
	assert_int_not_equal(r.last_peer.conn_id, 0);
	/* The reply is one record. */
	uint8_t b[14];
	assert_int_equal(recv(fd, b, sizeof(b), MSG_WAITALL), 14);
	assert_int_equal(xdr_get32(b), 0x80000000u | 10);
	assert_memory_equal(b + 4, "abcdefghij", 10);
	close(fd);
	rig_stop(&r);
}

static void test_bad_records_close_only_their_connection(void **state)
{
	(void)state;
	struct rig r;
	uint8_t big[129] = { 0 };
	rig_start(&r, 4);
	int good = tcp_client(&r);
	/* Over max_msg in one fragment, and over it in two. */
	int a = tcp_client(&r);
	send_frag(a, big, 129, true);
	assert_true(closed(&r, a));
	int b = tcp_client(&r);
	send_frag(b, big, 100, false);
	send_frag(b, big, 29, true);
	assert_true(closed(&r, b));
	/* An empty fragment that is not the last; an empty record. */
	int c = tcp_client(&r);
	send_frag(c, NULL, 0, false);
	assert_true(closed(&r, c));
	int d = tcp_client(&r);
	send_frag(d, NULL, 0, true);
	assert_true(closed(&r, d));
	assert_int_equal(r.counters.events[GW_EV_MALFORMED_RECORD], 4);
	assert_int_equal(r.msgs, 0);
	/* The first connection is still served; 128 bytes is allowed. */
	send_frag(good, big, 128, true);
	gwt_spin_for(r.base, 100, NULL, NULL);
	assert_int_equal(r.msgs, 1);
	assert_false(closed(&r, good));
	close(a);
	close(b);
	close(c);
	close(d);
	close(good);
	rig_stop(&r);
}

static void test_connection_limit_and_late_reply(void **state)
{
	(void)state;
	struct rig r;
	rig_start(&r, 2);
	int a = tcp_client(&r), b = tcp_client(&r);
	gwt_spin_for(r.base, 50, NULL, NULL);
	assert_int_equal(side_service_conns(r.svc), 2);
	int c = tcp_client(&r); /* refused: reset at once */
	assert_true(closed(&r, c));
	assert_int_equal(r.counters.events[GW_EV_SESSION_LIMIT], 1);
	send_frag(a, "call", 4, true);
	gwt_spin_for(r.base, 50, NULL, NULL);
	struct side_service_peer gone = r.last_peer;
	close(a);
	gwt_spin_for(r.base, 100, NULL, NULL);
	assert_int_equal(side_service_conns(r.svc), 1);
	/* A reply for the closed connection is not sent on another. */
	assert_false(side_service_reply(r.svc, &gone, (const uint8_t *)"late", 4));
	gwt_spin_for(r.base, 50, NULL, NULL);
	struct pollfd p = { .fd = b, .events = POLLIN };
	assert_int_equal(poll(&p, 1, 0), 0);
	close(b);
	close(c);
	rig_stop(&r);
}

static void test_allowed_clients_and_datagrams(void **state)
{
	(void)state;
	struct rig r;
	struct gw_cidr only = { .family = AF_INET, .prefix_len = 32 };
	rig_start(&r, 4);
	r.echo = true;
	int u = gwt_udp_bind(GWT_LOOPBACK, 0, NULL);
	uint8_t big[200] = { 0 }, b[256];
	/* A datagram over max_msg is dropped, counted; one at the limit answered. */
	sendto(u, big, 129, 0, (struct sockaddr *)&r.at, sizeof(r.at));
	sendto(u, big, 128, 0, (struct sockaddr *)&r.at, sizeof(r.at));
	gwt_spin_for(r.base, 100, NULL, NULL);
	assert_int_equal(r.msgs, 1);
	assert_int_equal(r.counters.events[GW_EV_MALFORMED_RECORD], 1);
	assert_int_equal(recv(u, b, sizeof(b), MSG_DONTWAIT), 128);
	/* Only 10.0.0.1 allowed: loopback is refused on both transports. */
	only.addr.v4.s_addr = htonl(0x0a000001);
	r.route.allowed_clients = &only;
	r.route.allowed_clients_count = 1;
	sendto(u, big, 8, 0, (struct sockaddr *)&r.at, sizeof(r.at));
	int t = tcp_client(&r);
	assert_true(closed(&r, t));
	assert_int_equal(r.msgs, 1);
	assert_int_equal(r.counters.events[GW_EV_REFUSED_CLIENT], 2);
	close(t);
	close(u);
	r.route.allowed_clients = NULL;
	r.route.allowed_clients_count = 0;
	rig_stop(&r);
}

static int tcp_client_from(struct rig *r, uint32_t ip)
{
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in from = gwt_sin(ip, 0);
	assert_int_equal(bind(fd, (struct sockaddr *)&from, sizeof(from)), 0);
	assert_int_equal(connect(fd, (struct sockaddr *)&r->at, sizeof(r->at)), 0);
	return fd;
}

/* A UDP peer at @ip:@port that sent a call of @call_len bytes. */
static struct side_service_peer udp_peer(uint32_t ip, uint16_t port, uint32_t call_len)
{
	struct side_service_peer p = { .addrlen = sizeof(struct sockaddr_in),
				       .call_len = call_len };
	struct sockaddr_in a = gwt_sin(ip, port);
	memcpy(&p.addr, &a, sizeof(a));
	return p;
}

/* The divert handler's choice: a message whose first byte is 1 is taken, and echoed. */
static size_t taken;
static bool take_ones(void *arg, struct side_service *svc, const struct side_service_peer *peer,
		      const uint8_t *msg, size_t len)
{
	(void)arg;
	if (len == 0 || msg[0] != 1)
		return false;
	taken++;
	side_service_reply(svc, peer, msg, len);
	return true;
}

/*
 * side_service_divert(): the diverted host's messages are offered to the
 * handler first, ahead of allowed_clients (its TCP connection admitted);
 * what the handler declines is judged as any other message (refused
 * here); another host's messages never reach the handler.
 */
static void test_divert_ahead_of_allowed_clients(void **state)
{
	(void)state;
	struct rig r;
	struct gw_cidr only = { .family = AF_INET, .prefix_len = 32 };
	struct sockaddr_in lo = gwt_sin(GWT_LOOPBACK, 0), other = gwt_sin(0x7f000009, 0);
	uint8_t one[8] = { 1 }, zero[8] = { 0 }, b[64];

	rig_start(&r, 4);
	taken = 0;
	only.addr.v4.s_addr = htonl(0x0a000001);
	r.route.allowed_clients = &only;
	r.route.allowed_clients_count = 1;
	side_service_divert(r.svc, (struct sockaddr *)&lo, sizeof(lo), take_ones, NULL);
	int u = gwt_udp_bind(GWT_LOOPBACK, 0, NULL);
	sendto(u, one, sizeof(one), 0, (struct sockaddr *)&r.at, sizeof(r.at));
	sendto(u, zero, sizeof(zero), 0, (struct sockaddr *)&r.at, sizeof(r.at));
	gwt_spin_for(r.base, 100, NULL, NULL);
	assert_int_equal(taken, 1);
	assert_int_equal(recv(u, b, sizeof(b), MSG_DONTWAIT), (ssize_t)sizeof(one));
	assert_int_equal(b[0], 1);
	assert_int_equal(r.msgs, 0);
	assert_int_equal(r.counters.events[GW_EV_REFUSED_CLIENT], 1);
	/* TCP: admitted; a record taken is answered, one declined is refused. */
	int t = tcp_client(&r);
	send_frag(t, one, sizeof(one), true);
	send_frag(t, zero, sizeof(zero), true);
	gwt_spin_for(r.base, 100, NULL, NULL);
	assert_int_equal(taken, 2);
	assert_int_equal(recv(t, b, sizeof(b), MSG_DONTWAIT), 4 + (ssize_t)sizeof(one));
	assert_int_equal(r.msgs, 0);
	assert_int_equal(r.counters.events[GW_EV_REFUSED_CLIENT], 2);
	assert_false(closed(&r, t));
	close(t);
	/* Another host (allowed now) gets on_msg, whatever its first byte. */
	r.route.allowed_clients = NULL;
	r.route.allowed_clients_count = 0;
	side_service_divert(r.svc, (struct sockaddr *)&other, sizeof(other), take_ones, NULL);
	sendto(u, one, sizeof(one), 0, (struct sockaddr *)&r.at, sizeof(r.at));
	gwt_spin_for(r.base, 100, NULL, NULL);
	assert_int_equal(taken, 2);
	assert_int_equal(r.msgs, 1);
	close(u);
	rig_stop(&r);
}

static void test_udp_reply_many_times_its_call(void **state)
{
	(void)state;
	struct rig r;
	rig_start(&r, 4);
	uint16_t port;
	int u = gwt_udp_bind(GWT_LOOPBACK, 0, &port);
	uint8_t reply[1024] = { 0 }, b[2048];
	xdr_put32(reply, 0x12345678); /* its XID */
	/* 40 bytes of call: 256 bytes may go back (the floor), 257 may not. */
	struct side_service_peer p = udp_peer(GWT_LOOPBACK, port, 40);
	assert_true(side_service_reply(r.svc, &p, reply, 256));
	assert_int_equal(recv(u, b, sizeof(b), 0), 256);
	assert_false(side_service_reply(r.svc, &p, reply, 257));
	/* What goes instead: an accepted reply, SYSTEM_ERR, to the same XID. */
	assert_int_equal(recv(u, b, sizeof(b), 0), 24);
	assert_int_equal(xdr_get32(b), 0x12345678);
	assert_int_equal(xdr_get32(b + 4), 1);	/* REPLY */
	assert_int_equal(xdr_get32(b + 8), 0);	/* MSG_ACCEPTED */
	assert_int_equal(xdr_get32(b + 20), 5); /* SYSTEM_ERR */
	assert_int_equal(r.counters.events[GW_EV_UDP_REPLY_TOO_LARGE], 1);
	/* Four times a 200-byte call may go; a TCP reply is not bounded by its call. */
	p.call_len = 200;
	assert_true(side_service_reply(r.svc, &p, reply, 800));
	assert_int_equal(recv(u, b, sizeof(b), 0), 800);
	assert_int_equal(r.counters.events[GW_EV_UDP_REPLY_TOO_LARGE], 1);
	close(u);
	rig_stop(&r);
}

/*
 * On the wildcard address a datagram's reply leaves from the address its
 * call was sent to (IP_PKTINFO): a client that asked 127.0.0.2 gets its
 * answer from 127.0.0.2, not from the address the route back would choose
 * (127.0.0.1), which it would drop. A relayed reply, sent later from a
 * copy of the peer, too.
 */
static void test_udp_reply_from_the_address_asked(void **state)
{
	(void)state;
	struct rig r;
	rig_start_ex(&r, 4, 0, 0);
	r.echo = true;
	int u = gwt_udp_bind(GWT_LOOPBACK, 0, NULL);
	uint8_t call[16] = { 0x12, 0x34, 0x56, 0x78 }, b[64];
	struct sockaddr_in asked = gwt_sin(0x7f000002, side_service_port(r.svc)), from;
	socklen_t fl = sizeof(from);

	assert_true(u >= 0);
	assert_int_equal(sendto(u, call, sizeof(call), 0, (struct sockaddr *)&asked, sizeof(asked)),
			 sizeof(call));
	assert_true(gwt_spin_until_readable(r.base, u, 2000, NULL, NULL));
	assert_int_equal(recvfrom(u, b, sizeof(b), 0, (struct sockaddr *)&from, &fl), sizeof(call));
	assert_int_equal(ntohl(from.sin_addr.s_addr), 0x7f000002);
	assert_int_equal(ntohs(from.sin_port), side_service_port(r.svc));
	assert_int_equal(r.last_peer.local.ss_family, AF_INET);
	/* Later, from the peer kept (a relay's reply). */
	struct side_service_peer kept = r.last_peer;
	assert_true(side_service_reply(r.svc, &kept, call, sizeof(call)));
	fl = sizeof(from);
	assert_int_equal(recvfrom(u, b, sizeof(b), 0, (struct sockaddr *)&from, &fl), sizeof(call));
	assert_int_equal(ntohl(from.sin_addr.s_addr), 0x7f000002);
	close(u);
	rig_stop(&r);
}

static void test_udp_budget_per_network(void **state)
{
	(void)state;
	struct rig r;
	rig_start(&r, 4);
	uint16_t port;
	int u = gwt_udp_bind(GWT_LOOPBACK, 0, &port);
	uint8_t reply[200] = { 0 };
	/* Forged sources all over one /24: they share its budget. */
	unsigned sent = 0;
	for (unsigned i = 0; i < 4000; i++) {
		struct side_service_peer p = udp_peer(0x7f000100u | (i % 250), port, 200);
		if (!side_service_reply(r.svc, &p, reply, sizeof(reply)))
			break;
		sent++;
	}
	/* The burst, and what the rate added while the loop ran (well under a second). */
	assert_true(sent * sizeof(reply) >= SIDE_UDP_BUDGET_BURST - sizeof(reply));
	assert_true(sent * sizeof(reply) < SIDE_UDP_BUDGET_BURST + SIDE_UDP_BUDGET_RATE);
	assert_int_equal(r.counters.events[GW_EV_UDP_REPLY_RATE_LIMITED], 1);
	/* Another network is not held up by the first one's. */
	struct side_service_peer other = udp_peer(0x7f010105u, port, 200);
	assert_true(side_service_reply(r.svc, &other, reply, sizeof(reply)));
	close(u);
	rig_stop(&r);
}

static void test_tcp_share_per_address(void **state)
{
	(void)state;
	struct rig r;
	rig_start(&r, 16); /* 16 connections: 2 an address */
	int a = tcp_client_from(&r, 0x7f000002u), b = tcp_client_from(&r, 0x7f000002u);
	gwt_spin_for(r.base, 50, NULL, NULL);
	int c = tcp_client_from(&r, 0x7f000002u);
	assert_true(closed(&r, c));
	assert_int_equal(r.counters.events[GW_EV_CLIENT_SESSION_LIMIT], 1);
	/* Another host still gets in. */
	int d = tcp_client_from(&r, 0x7f000003u);
	gwt_spin_for(r.base, 50, NULL, NULL);
	assert_false(closed(&r, d));
	assert_int_equal(side_service_conns(r.svc), 3);
	close(a);
	close(b);
	close(c);
	close(d);
	rig_stop(&r);
}

static void test_record_deadline(void **state)
{
	(void)state;
	struct rig r;
	rig_start_ex(&r, 4, 300, GWT_LOOPBACK);
	r.echo = true;
	/* Whole records, however slowly they follow one another, are served. */
	int good = tcp_client(&r);
	send_frag(good, "ping", 4, true);
	gwt_spin_for(r.base, 400, NULL, NULL);
	send_frag(good, "ping", 4, true);
	gwt_spin_for(r.base, 100, NULL, NULL);
	assert_int_equal(r.msgs, 2);
	/* A record that trickles in, a byte every 100 ms (never idle): closed at 300 ms. */
	int slow = tcp_client(&r);
	uint8_t mark[4];
	xdr_put32(mark, 0x80000000u | 64);
	assert_int_equal(send(slow, mark, 4, 0), 4);
	bool gone = false;
	for (int i = 0; i < 30 && !gone; i++) {
		gwt_spin_for(r.base, 100, NULL, NULL);
		gone = send(slow, "x", 1, MSG_NOSIGNAL) != 1 || side_service_conns(r.svc) == 1;
	}
	assert_true(gone);
	assert_int_equal(side_service_conns(r.svc), 1);
	assert_int_equal(r.counters.events[GW_EV_RECORD_TIMEOUT], 1);
	/* A partial record and then silence: closed at the deadline, not the idle time. */
	int quiet = tcp_client(&r);
	assert_int_equal(send(quiet, mark, 2, 0), 2);
	assert_true(closed(&r, quiet) ||
		    (gwt_spin_for(r.base, 1500, NULL, NULL), closed(&r, quiet)));
	assert_int_equal(r.counters.events[GW_EV_RECORD_TIMEOUT], 2);
	close(good);
	close(slow);
	close(quiet);
	rig_stop(&r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fragments_make_one_record),
		cmocka_unit_test(test_bad_records_close_only_their_connection),
		cmocka_unit_test(test_connection_limit_and_late_reply),
		cmocka_unit_test(test_allowed_clients_and_datagrams),
		cmocka_unit_test(test_divert_ahead_of_allowed_clients),
		cmocka_unit_test(test_udp_reply_many_times_its_call),
		cmocka_unit_test(test_udp_reply_from_the_address_asked),
		cmocka_unit_test(test_udp_budget_per_network),
		cmocka_unit_test(test_tcp_share_per_address),
		cmocka_unit_test(test_record_deadline),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
