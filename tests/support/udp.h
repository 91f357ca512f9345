/*
 * Loopback UDP sockets, for the tests that play a peer over UDP (a fake
 * portmapper, statd, lockd, mountd or client) next to the code under test,
 * and the side services' view of such a peer.
 *
 * Addresses are IPv4 in host order: any of 127.0.0.0/8 is a local address on
 * Linux, which lets a test give each fake host an address of its own.
 */
#ifndef GW_TESTS_SUPPORT_UDP_H
#define GW_TESTS_SUPPORT_UDP_H

#include <stdint.h>

#include <netinet/in.h>

#include "gateway/side/rpc/side_service.h"

/* 127.0.0.1, the address of most tests' fake peers. */
#define GWT_LOOPBACK 0x7f000001u

/* @ip:@port (host order) as a socket address. */
struct sockaddr_in gwt_sin(uint32_t ip, uint16_t port);

/*
 * A non-blocking UDP socket bound to @ip:@port (port 0: one the system
 * chooses), its port in *@got unless NULL; -1 when it cannot be had (the port
 * taken, most often), which the caller asserts on or tries again.
 */
int gwt_udp_bind(uint32_t ip, uint16_t port, uint16_t *got);

/* A UDP client at @ip:@port (host order) as a side service sees it. */
struct side_service_peer gwt_side_peer(uint32_t ip, uint16_t port);

#endif
