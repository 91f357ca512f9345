/* SPDX-License-Identifier: MIT */
/*
 * The side services' endpoint (gateway/side/rpc/side_service.c) on loopback: records
 * assembled from fragments, what closes a TCP connection (a record over
 * the limit, an empty fragment that is not the last), the connection
 * limit, allowed_clients on UDP and TCP, and a reply for a connection
 * that has gone dropped rather than sent anywhere else.
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

static void rig_start(struct rig *r, uint32_t max_conns)
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
		.max_output = 4096,
		.on_msg = on_msg,
		.arg = r,
	};
	r->at.sin_family = AF_INET;
	r->at.sin_addr.s_addr = htonl(0x7f000001);
	r->svc = side_service_start(r->base, (struct sockaddr *)&r->at, sizeof(r->at), &sc);
	assert_non_null(r->svc);
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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fragments_make_one_record),
		cmocka_unit_test(test_bad_records_close_only_their_connection),
		cmocka_unit_test(test_connection_limit_and_late_reply),
		cmocka_unit_test(test_allowed_clients_and_datagrams),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
