/* SPDX-License-Identifier: MIT */
/*
 * common/host.h - a peer's host: its address without the port, the key
 * every per-host table uses (the engine's sessions per client, the NLM
 * relay's client hosts, the side services' connections per address), and
 * its network (an IPv4 /24, an IPv6 /64), the key of what a forger of
 * source addresses must not get around by changing the last bits.
 *
 * An IPv4 client of a dual-stack socket (::ffff:a.b.c.d) is the IPv4 host.
 */
#ifndef GW_COMMON_HOST_H
#define GW_COMMON_HOST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>

struct gw_host {
	uint8_t family; /* AF_INET or AF_INET6 */
	uint8_t addr[16];
};

/* @sa (@len bytes) as a host; false for another family, or too short for its own. */
bool gw_host_from_sockaddr(struct gw_host *h, const struct sockaddr *sa, socklen_t len);
/* @h at @port, for sendto(). */
void gw_host_to_sockaddr(const struct gw_host *h, uint16_t port, struct sockaddr_storage *ss,
			 socklen_t *len);
/* The port of @ss, an AF_INET6 address or else an AF_INET one. */
uint16_t gw_sockaddr_port(const struct sockaddr_storage *ss);
/* Set the port of @ss, an AF_INET6 address or else an AF_INET one. */
void gw_sockaddr_set_port(struct sockaddr_storage *ss, uint16_t port);
/* @h printed into @buf ("?" if it cannot be), for logs; returns @buf. */
const char *gw_host_str(const struct gw_host *h, char *buf, size_t len);

static inline bool gw_host_equal(const struct gw_host *a, const struct gw_host *b)
{
	return a->family == b->family && memcmp(a->addr, b->addr, sizeof(a->addr)) == 0;
}

/* The bytes of @family's addresses that name a host's network: 3 (/24) or 8 (/64). */
static inline size_t gw_host_prefix_len(uint8_t family)
{
	return family == AF_INET6 ? 8 : 3;
}

/* The same network: one site's hosts, or one forger's sources. */
static inline bool gw_host_same_prefix(const struct gw_host *a, const struct gw_host *b)
{
	return a->family == b->family &&
	       memcmp(a->addr, b->addr, gw_host_prefix_len(a->family)) == 0;
}

#endif
