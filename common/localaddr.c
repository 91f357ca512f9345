/* SPDX-License-Identifier: MIT */
#include "common/localaddr.h"

#include <errno.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <stddef.h>

#include "common/host.h"

static socklen_t sa_len(const struct sockaddr *sa)
{
	if (sa && sa->sa_family == AF_INET)
		return sizeof(struct sockaddr_in);
	if (sa && sa->sa_family == AF_INET6)
		return sizeof(struct sockaddr_in6);
	return 0;
}

/*
 * @h is @a's address or, @a being a loopback interface's, within its
 * prefix. An entry may have no address (a tun or WireGuard link) or no
 * mask: getifaddrs(3) says either may be NULL.
 */
static bool ifa_has(const struct ifaddrs *a, const struct gw_host *h)
{
	struct gw_host addr, mask;

	if (!sa_len(a->ifa_addr) ||
	    !gw_host_from_sockaddr(&addr, a->ifa_addr, sa_len(a->ifa_addr)) ||
	    addr.family != h->family)
		return false;
	if (!(a->ifa_flags & IFF_LOOPBACK) || !sa_len(a->ifa_netmask) ||
	    a->ifa_netmask->sa_family != a->ifa_addr->sa_family ||
	    !gw_host_from_sockaddr(&mask, a->ifa_netmask, sa_len(a->ifa_netmask)))
		return gw_host_equal(&addr, h);
	size_t n = h->family == AF_INET ? 4 : 16;
	for (size_t i = 0; i < n; i++) {
		if ((addr.addr[i] & mask.addr[i]) != (h->addr[i] & mask.addr[i]))
			return false;
	}
	return true;
}

bool gw_host_is_local(const struct gw_host *h)
{
	struct ifaddrs *ifs;
	bool ours = false;

	if (!h->family || getifaddrs(&ifs) != 0)
		return false;
	for (const struct ifaddrs *a = ifs; a && !ours; a = a->ifa_next)
		ours = ifa_has(a, h);
	freeifaddrs(ifs);
	return ours;
}
