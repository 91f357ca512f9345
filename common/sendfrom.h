/* SPDX-License-Identifier: MIT */
/*
 * common/sendfrom.h - datagrams sent from a chosen address of this host: a
 * UDP socket bound to it, or, through a socket bound to the wildcard
 * address, IP_PKTINFO or IPV6_PKTINFO on sendmsg(2) (ip(7), ipv6(7)). A
 * reply, or a call the gateway makes back to a client, must leave from the
 * address the client spoke to: on its own the kernel chooses the source by
 * the route back, which may be another address of this host, and clients
 * drop a reply (Linux lockd a GRANTED) from an address they did not send to.
 */
#ifndef GW_COMMON_SENDFROM_H
#define GW_COMMON_SENDFROM_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/socket.h>

/*
 * Send @len bytes to @to from @from's address (an IPv6 one on the link of
 * its sin6_scope_id when set; NULL or family 0: the kernel's choice),
 * without waiting. True when the whole datagram went.
 */
bool gw_send_from(int fd, const void *msg, size_t len, const struct sockaddr *to, socklen_t tolen,
		  const struct sockaddr_storage *from);

/*
 * A non-blocking, close-on-exec UDP socket bound to @addr's address (@len
 * bytes of it) on a port the system chooses, whatever @addr's port; -1
 * with errno when it cannot be made or bound.
 */
int gw_udp_socket_at(const struct sockaddr_storage *addr, socklen_t len);

/*
 * The address of this host the kernel sends from toward @to, in @out
 * (*@outlen in: its size; out: the address's length). A UDP socket
 * connected and read back with getsockname(2): nothing is sent. False
 * with errno when there is no route.
 */
bool gw_udp_source_toward(const struct sockaddr *to, socklen_t tolen, struct sockaddr_storage *out,
			  socklen_t *outlen);

#endif
