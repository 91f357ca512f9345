/* SPDX-License-Identifier: MIT */
#include "common/host.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>

bool gw_host_from_sockaddr(struct gw_host *h, const struct sockaddr *sa, socklen_t len)
{
	memset(h, 0, sizeof(*h));
	if (sa->sa_family == AF_INET && len >= sizeof(struct sockaddr_in)) {
		h->family = AF_INET;
		memcpy(h->addr, &((const struct sockaddr_in *)sa)->sin_addr, 4);
		return true;
	}
	if (sa->sa_family == AF_INET6 && len >= sizeof(struct sockaddr_in6)) {
		const struct in6_addr *a6 = &((const struct sockaddr_in6 *)sa)->sin6_addr;
		/* A dual-stack socket shows an IPv4 client as ::ffff:a.b.c.d: one host. */
		if (IN6_IS_ADDR_V4MAPPED(a6)) {
			h->family = AF_INET;
			memcpy(h->addr, a6->s6_addr + 12, 4);
			return true;
		}
		h->family = AF_INET6;
		memcpy(h->addr, a6, 16);
		return true;
	}
	return false;
}

void gw_host_to_sockaddr(const struct gw_host *h, uint16_t port, struct sockaddr_storage *ss,
			 socklen_t *len)
{
	memset(ss, 0, sizeof(*ss));
	if (h->family == AF_INET6) {
		struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)ss;
		s6->sin6_family = AF_INET6;
		memcpy(&s6->sin6_addr, h->addr, 16);
		s6->sin6_port = htons(port);
		*len = sizeof(*s6);
	} else {
		struct sockaddr_in *s4 = (struct sockaddr_in *)ss;
		s4->sin_family = AF_INET;
		memcpy(&s4->sin_addr, h->addr, 4);
		s4->sin_port = htons(port);
		*len = sizeof(*s4);
	}
}

uint16_t gw_sockaddr_port(const struct sockaddr_storage *ss)
{
	return ntohs(ss->ss_family == AF_INET6 ? ((const struct sockaddr_in6 *)ss)->sin6_port
					       : ((const struct sockaddr_in *)ss)->sin_port);
}

void gw_sockaddr_set_port(struct sockaddr_storage *ss, uint16_t port)
{
	if (ss->ss_family == AF_INET6)
		((struct sockaddr_in6 *)ss)->sin6_port = htons(port);
	else
		((struct sockaddr_in *)ss)->sin_port = htons(port);
}

const char *gw_host_str(const struct gw_host *h, char *buf, size_t len)
{
	if (!inet_ntop(h->family, h->addr, buf, (socklen_t)len))
		snprintf(buf, len, "?");
	return buf;
}
