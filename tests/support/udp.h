/*
 * Loopback UDP sockets, for the tests that play a peer over UDP (a fake
 * portmapper, statd, lockd, mountd or client) next to the code under test:
 * binding them, asking a service (a portmapper's GETPORT among others) while
 * the test's loop turns, and the side services' view of such a peer.
 *
 * Addresses are IPv4 in host order: any of 127.0.0.0/8 is a local address on
 * Linux, which lets a test give each fake host an address of its own.
 */
#ifndef GW_TESTS_SUPPORT_UDP_H
#define GW_TESTS_SUPPORT_UDP_H

#include <stddef.h>
#include <stdint.h>

#include <netinet/in.h>

#include "gateway/side/rpc/side_service.h"

#include "support/loop.h"

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

/*
 * One port free on each of the @n addresses @ips, as fake portmappers on
 * several hosts need: fds[i] bound to @ips[i] on it, the port in *@port.
 * 0, or -1 when no such port was found in 20 tries (nothing left bound).
 */
int gwt_udp_bind_common(const uint32_t *ips, size_t n, int *fds, uint16_t *port);

/*
 * @msg (@len bytes) sent from @fd to @to, then turns of @base as
 * gwt_spin_until_readable() (@between(@arg) after each) until the answer
 * comes, within @ms: its length, read into @reply (@cap bytes), or 0 when
 * none came.
 */
size_t gwt_udp_ask(struct event_base *base, int fd, const struct sockaddr_in *to, const void *msg,
		   size_t len, void *reply, size_t cap, unsigned int ms, gwt_between_fn *between,
		   void *arg);

/*
 * A portmapper's GETPORT(@prog, @vers, @prot) (xid @xid) from @fd to @to,
 * asked as gwt_udp_ask() does: the port it answered, or -1 when no answer
 * came within @ms or the answer was no GETPORT reply.
 */
int gwt_pmap_getport(struct event_base *base, int fd, const struct sockaddr_in *to, uint32_t xid,
		     uint32_t prog, uint32_t vers, uint32_t prot, unsigned int ms,
		     gwt_between_fn *between, void *arg);

/* A UDP client at @ip:@port (host order) as a side service sees it. */
struct side_service_peer gwt_side_peer(uint32_t ip, uint16_t port);

#endif
