/* SPDX-License-Identifier: MIT */
/*
 * common/addr_text.h - a socket address as the logs, /stats and the
 * configuration's messages show it: "192.0.2.1:2049", "[2001:db8::1]:2049".
 *
 * One formatter for every layer, so that the same peer reads the same in an
 * RDMA warning, a session's /stats entry and a reload message, and a log
 * line can be searched for the text /stats shows.
 */
#ifndef GW_COMMON_ADDR_TEXT_H
#define GW_COMMON_ADDR_TEXT_H

#include <netinet/in.h>
#include <stddef.h>
#include <sys/socket.h>

/* Room for the longest text and its NUL: "[" IPv6 "]:" and five digits. */
#define GW_ADDR_TEXT_MAX (INET6_ADDRSTRLEN + sizeof("[]:65535") - 1)

/*
 * Writes @sa's address and port into @buf (at most @len bytes, always
 * terminated when @len > 0): IPv4 as "a.b.c.d:port", IPv6 in brackets as
 * "[addr]:port" (no scope: the text inet_ntop() gives). "?" for a NULL
 * address or another family, so that a log line never fails for want of
 * an address. Returns @buf, to be used as a printf argument.
 */
const char *gw_addr_text(const struct sockaddr *sa, char *buf, size_t len);

#endif
