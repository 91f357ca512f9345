/* SPDX-License-Identifier: MIT */
/*
 * tests/unit/test_addr_text.c - socket addresses as text (common/addr_text.h):
 * the forms the logs and /stats show, IPv6 in brackets, "?" for what is not
 * an address, and a buffer too short.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <assert.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <arpa/inet.h>
#include <cmocka.h>

#include "common/addr_text.h"

static void test_ipv4(void **state)
{
	(void)state;
	struct sockaddr_in in = { .sin_family = AF_INET, .sin_port = htons(2049) };
	char buf[GW_ADDR_TEXT_MAX];

	assert_int_equal(inet_pton(AF_INET, "192.0.2.1", &in.sin_addr), 1);
	assert_ptr_equal(gw_addr_text((struct sockaddr *)&in, buf, sizeof(buf)), buf);
	assert_string_equal(buf, "192.0.2.1:2049");
	in.sin_port = 0;
	in.sin_addr.s_addr = htonl(INADDR_ANY);
	assert_string_equal(gw_addr_text((struct sockaddr *)&in, buf, sizeof(buf)), "0.0.0.0:0");
}

static void test_ipv6_in_brackets(void **state)
{
	(void)state;
	struct sockaddr_in6 in6 = { .sin6_family = AF_INET6, .sin6_port = htons(2049) };
	char buf[GW_ADDR_TEXT_MAX];

	in6.sin6_addr = in6addr_loopback;
	assert_string_equal(gw_addr_text((struct sockaddr *)&in6, buf, sizeof(buf)), "[::1]:2049");
	/* A scope is not shown: the text is inet_ntop()'s. */
	assert_int_equal(inet_pton(AF_INET6, "fe80::1", &in6.sin6_addr), 1);
	in6.sin6_scope_id = 2;
	assert_string_equal(gw_addr_text((struct sockaddr *)&in6, buf, sizeof(buf)),
			    "[fe80::1]:2049");
	/* A mapped IPv4 address stays IPv6, as the socket gave it. */
	assert_int_equal(inet_pton(AF_INET6, "::ffff:192.0.2.1", &in6.sin6_addr), 1);
	assert_string_equal(gw_addr_text((struct sockaddr *)&in6, buf, sizeof(buf)),
			    "[::ffff:192.0.2.1]:2049");
}

/* The longest text inet_ntop() can give, with the longest port, and its NUL fit. */
static_assert(GW_ADDR_TEXT_MAX >= sizeof("[ffff:ffff:ffff:ffff:ffff:ffff:255.255.255.255]:65535"),
	      "GW_ADDR_TEXT_MAX holds any address");

static void test_long_address_whole(void **state)
{
	(void)state;
	struct sockaddr_in6 in6 = { .sin6_family = AF_INET6, .sin6_port = htons(65535) };
	char buf[GW_ADDR_TEXT_MAX];

	memset(&in6.sin6_addr, 0xff, sizeof(in6.sin6_addr));
	assert_string_equal(gw_addr_text((struct sockaddr *)&in6, buf, sizeof(buf)),
			    "[ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff]:65535");
}

static void test_not_an_address(void **state)
{
	(void)state;
	struct sockaddr sa = { .sa_family = AF_UNIX };
	char buf[GW_ADDR_TEXT_MAX] = "junk";

	assert_string_equal(gw_addr_text(NULL, buf, sizeof(buf)), "?");
	strcpy(buf, "junk");
	assert_string_equal(gw_addr_text(&sa, buf, sizeof(buf)), "?");
}

/* Cut to the buffer, always terminated; a buffer of none is left alone. */
static void test_short_buffer(void **state)
{
	(void)state;
	struct sockaddr_in in = { .sin_family = AF_INET, .sin_port = htons(2049) };
	char buf[8] = "unused!";

	assert_int_equal(inet_pton(AF_INET, "192.0.2.1", &in.sin_addr), 1);
	assert_string_equal(gw_addr_text((struct sockaddr *)&in, buf, 6), "192.0");
	assert_ptr_equal(gw_addr_text((struct sockaddr *)&in, buf, 0), buf);
	assert_string_equal(buf, "192.0");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ipv4),
		cmocka_unit_test(test_ipv6_in_brackets),
		cmocka_unit_test(test_long_address_whole),
		cmocka_unit_test(test_not_an_address),
		cmocka_unit_test(test_short_buffer),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
