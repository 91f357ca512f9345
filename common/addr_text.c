/* SPDX-License-Identifier: MIT */
#include "common/addr_text.h"

#include <arpa/inet.h>
#include <stdio.h>

const char *gw_addr_text(const struct sockaddr *sa, char *buf, size_t len)
{
	char host[INET6_ADDRSTRLEN];

	if (len == 0)
		return buf;
	if (sa && sa->sa_family == AF_INET) {
		const struct sockaddr_in *in = (const struct sockaddr_in *)sa;

		if (inet_ntop(AF_INET, &in->sin_addr, host, sizeof(host))) {
			snprintf(buf, len, "%s:%u", host, (unsigned)ntohs(in->sin_port));
			return buf;
		}
	} else if (sa && sa->sa_family == AF_INET6) {
		const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)sa;

		if (inet_ntop(AF_INET6, &in6->sin6_addr, host, sizeof(host))) {
			snprintf(buf, len, "[%s]:%u", host, (unsigned)ntohs(in6->sin6_port));
			return buf;
		}
	}
	snprintf(buf, len, "?");
	return buf;
}
