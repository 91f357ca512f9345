/* SPDX-License-Identifier: MIT */
/*
 * tests/unit/test_reverse_share.c - who "the same client" is on a reverse
 * route's shared upstream connections (gateway/reverse_share.c): the XID
 * map's key and the connection a client is put on.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "gateway/reverse_priv.h"
#include "gateway/upxid.h"

static struct rev_session *session_v4(const char *addr, uint16_t port, uint64_t id)
{
	struct rev_session *s = calloc(1, sizeof(*s));
	struct sockaddr_in *sin = (struct sockaddr_in *)&s->peer;

	assert_non_null(s);
	sin->sin_family = AF_INET;
	sin->sin_port = htons(port);
	assert_int_equal(inet_pton(AF_INET, addr, &sin->sin_addr), 1);
	s->base.id = id;
	return s;
}

static struct rev_session *session_v6(const char *addr, uint16_t port, uint64_t id)
{
	struct rev_session *s = calloc(1, sizeof(*s));
	struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)&s->peer;

	assert_non_null(s);
	sin6->sin6_family = AF_INET6;
	sin6->sin6_port = htons(port);
	assert_int_equal(inet_pton(AF_INET6, addr, &sin6->sin6_addr), 1);
	s->base.id = id;
	return s;
}

static bool same_key(const struct rev_session *a, uint32_t xa, const struct rev_session *b,
		     uint32_t xb)
{
	struct upxid_key ka, kb;

	rev_share_key(a, xa, &ka);
	rev_share_key(b, xb, &kb);
	return memcmp(&ka, &kb, sizeof(ka)) == 0;
}

/*
 * A retransmission is the same address, CM source port and XID, whichever
 * RDMA connection brings it; another port is another client (Linux
 * xprtrdma reconnects from a new port).
 */
static void test_key_is_address_port_xid(void **state)
{
	(void)state;
	struct rev_session *a = session_v4("192.0.2.2", 40000, 1);
	struct rev_session *again = session_v4("192.0.2.2", 40000, 7); /* a later connection */
	struct rev_session *other_port = session_v4("192.0.2.2", 40001, 2);
	struct rev_session *other_host = session_v4("192.0.2.3", 40000, 3);
	struct rev_session *mapped = session_v6("::ffff:192.0.2.2", 40000, 4);

	assert_true(same_key(a, 0x1234, again, 0x1234));
	assert_false(same_key(a, 0x1234, a, 0x1235));
	assert_false(same_key(a, 0x1234, other_port, 0x1234));
	assert_false(same_key(a, 0x1234, other_host, 0x1234));
	assert_true(same_key(a, 0x1234, mapped, 0x1234)); /* one client, either family */
	free(a);
	free(again);
	free(other_port);
	free(other_host);
	free(mapped);
}

/* A peer with no IP address is keyed by its connection: never another connection's or an IP's. */
static void test_non_ip_peer_keyed_by_connection(void **state)
{
	(void)state;
	struct rev_session *ib1 = calloc(1, sizeof(*ib1)), *ib2 = calloc(1, sizeof(*ib2));
	struct rev_session *zero = session_v6("::", 0, 9);

	assert_non_null(ib1);
	assert_non_null(ib2);
	ib1->peer.ss_family = AF_UNSPEC; /* as an AF_IB peer leaves it for the map */
	ib2->peer.ss_family = AF_UNSPEC;
	ib1->base.id = 11;
	ib2->base.id = 12;
	assert_true(same_key(ib1, 5, ib1, 5));
	assert_false(same_key(ib1, 5, ib2, 5));
	assert_false(same_key(ib1, 5, zero, 5));
	free(ib1);
	free(ib2);
	free(zero);
}

/* A client stays on one connection; clients spread over all of them. */
static void test_channel_stable_and_spread(void **state)
{
	(void)state;
	unsigned used[4] = { 0 };

	for (uint16_t port = 700; port < 764; port++) {
		struct rev_session *s = session_v4("192.0.2.2", port, port);
		struct rev_session *again = session_v4("192.0.2.2", port, port + 1000u);
		uint16_t ch = rev_share_channel_of(s, 4);
		assert_true(ch < 4);
		assert_int_equal(ch, rev_share_channel_of(again, 4));
		assert_int_equal(rev_share_channel_of(s, 1), 0);
		used[ch]++;
		free(s);
		free(again);
	}
	for (int i = 0; i < 4; i++)
		assert_true(used[i] > 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_key_is_address_port_xid),
		cmocka_unit_test(test_non_ip_peer_keyed_by_connection),
		cmocka_unit_test(test_channel_stable_and_spread),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
