/* SPDX-License-Identifier: MIT */
/*
 * common/localaddr: which addresses are this host's, over a list of
 * interface addresses given in place of getifaddrs(3)'s (-Wl,--wrap): an
 * entry with no address (a tun or WireGuard link has one) and a loopback
 * one with no mask are skipped, not read; a loopback interface's whole
 * prefix is this host's (Linux routes 127.0.0.0/8 to lo), another
 * interface's address only itself.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "common/host.h"
#include "common/localaddr.h"

static struct sockaddr_in lo4 = { .sin_family = AF_INET }, lo4_mask = { .sin_family = AF_INET },
			  eth4 = { .sin_family = AF_INET }, eth4_mask = { .sin_family = AF_INET };
static struct sockaddr_in6 lo6 = { .sin6_family = AF_INET6 },
			   lo6_mask = { .sin6_family = AF_INET6 };
static struct ifaddrs list[5];
static bool fail_read;

int __wrap_getifaddrs(struct ifaddrs **out);
int __wrap_getifaddrs(struct ifaddrs **out)
{
	if (fail_read) {
		errno = ENOMEM;
		return -1;
	}
	*out = list;
	return 0;
}

void __wrap_freeifaddrs(struct ifaddrs *ifs);
void __wrap_freeifaddrs(struct ifaddrs *ifs)
{
	(void)ifs;
}

static int setup(void **state)
{
	(void)state;
	inet_pton(AF_INET, "127.0.0.1", &lo4.sin_addr);
	inet_pton(AF_INET, "255.0.0.0", &lo4_mask.sin_addr);
	inet_pton(AF_INET, "192.0.2.2", &eth4.sin_addr);
	inet_pton(AF_INET, "255.255.255.0", &eth4_mask.sin_addr);
	inet_pton(AF_INET6, "::1", &lo6.sin6_addr);
	memset(&lo6_mask.sin6_addr, 0xff, sizeof(lo6_mask.sin6_addr));
	/* First an entry with no address at all, as a tun link's. */
	list[0] = (struct ifaddrs){ .ifa_next = &list[1], .ifa_name = "tun0", .ifa_flags = IFF_UP };
	list[1] = (struct ifaddrs){ .ifa_next = &list[2],
				    .ifa_name = "lo",
				    .ifa_flags = IFF_UP | IFF_LOOPBACK,
				    .ifa_addr = (struct sockaddr *)&lo4,
				    .ifa_netmask = (struct sockaddr *)&lo4_mask };
	list[2] = (struct ifaddrs){ .ifa_next = &list[3],
				    .ifa_name = "eth0",
				    .ifa_flags = IFF_UP,
				    .ifa_addr = (struct sockaddr *)&eth4,
				    .ifa_netmask = (struct sockaddr *)&eth4_mask };
	/* A loopback address with no mask: itself only. */
	list[3] = (struct ifaddrs){ .ifa_next = &list[4],
				    .ifa_name = "lo",
				    .ifa_flags = IFF_UP | IFF_LOOPBACK,
				    .ifa_addr = (struct sockaddr *)&lo6 };
	list[4] = (struct ifaddrs){ .ifa_name = "lo",
				    .ifa_flags = IFF_UP | IFF_LOOPBACK,
				    .ifa_addr = (struct sockaddr *)&lo6,
				    .ifa_netmask = (struct sockaddr *)&lo6_mask };
	fail_read = false;
	return 0;
}

static bool local(const char *text)
{
	struct gw_host h = { 0 };

	if (inet_pton(AF_INET, text, h.addr) == 1) {
		h.family = AF_INET;
	} else {
		assert_int_equal(inet_pton(AF_INET6, text, h.addr), 1);
		h.family = AF_INET6;
	}
	return gw_host_is_local(&h);
}

static void test_which_addresses_are_ours(void **state)
{
	(void)state;
	assert_true(local("127.0.0.1"));
	assert_true(local("127.0.0.6")); /* lo's prefix */
	assert_true(local("192.0.2.2"));
	assert_false(local("192.0.2.3"));   /* eth0's network, not its address */
	assert_false(local("192.0.2.255")); /* its broadcast: no address to send from */
	assert_false(local("198.51.100.1"));
	assert_true(local("::1"));
	assert_false(local("::2"));
	assert_false(local("2001:db8::1"));

	struct gw_host none = { 0 };
	assert_false(gw_host_is_local(&none));
}

static void test_unreadable_list_is_not_ours(void **state)
{
	(void)state;
	fail_read = true;
	assert_false(local("127.0.0.1"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_which_addresses_are_ours, setup),
		cmocka_unit_test_setup(test_unreadable_list_is_not_ours, setup),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
