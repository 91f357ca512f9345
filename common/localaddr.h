/* SPDX-License-Identifier: MIT */
/*
 * common/localaddr.h - whether an address is one of this host's now, as
 * getifaddrs(3) lists them (a loopback interface's whole prefix counts:
 * Linux routes 127.0.0.0/8 to this host). For an address the gateway would
 * send from that it learned from a peer or read from a file: a socket can
 * bind a foreign one where ip_nonlocal_bind is set, and a broadcast
 * address a datagram was sent to is no address to answer from.
 */
#ifndef GW_COMMON_LOCALADDR_H
#define GW_COMMON_LOCALADDR_H

#include <stdbool.h>

struct gw_host;

/* False too when the host's addresses cannot be read (errno set). */
bool gw_host_is_local(const struct gw_host *h);

#endif
