/* SPDX-License-Identifier: MIT */
/*
 * tcp/listener.h - accepting TCP clients and connecting to TCP servers.
 *
 * A listener is an evconnlistener on a socket made here: SO_REUSEADDR (a
 * restarted gateway must not wait for old connections' TIME_WAIT), and
 * IPV6_V6ONLY on IPv6 so that "::" and "0.0.0.0" are separate listeners
 * that can coexist. The admit hook sees each client's address before any
 * byte is read or written and may refuse it (an address ACL); a refused
 * client is reset, so it sees "connection reset" rather than a silent
 * close. Running out of descriptors pauses accepting for a moment instead
 * of spinning on a listening socket that stays readable.
 *
 * Worker threads each listen on the same address in one SO_REUSEPORT
 * group; a classic BPF program on the group steers each connection by the
 * client's source address alone (not the kernel's 4-tuple hash), since a
 * client's state lives in one worker and must be found again when it
 * reconnects from another port.
 *
 * An outbound connection is a non-blocking connect() with a time limit and
 * optionally a reserved source port (< 1024): NFS servers may insist on
 * one (the "secure" export option), and the kernel's NFS client uses one.
 * The port comes from libtirpc's bindresvport_sa(). The result comes back
 * through a callback from the event loop, never from inside
 * tcp_connect_start().
 */
#ifndef GW_TCP_LISTENER_H
#define GW_TCP_LISTENER_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

#include <event2/util.h>

struct event_base;
struct tcp_listener;
struct tcp_connect;

struct tcp_listener_ops {
	/*
	 * Optional: admit the client at peer, or refuse it (false). Called
	 * before anything else is done with the connection.
	 */
	bool (*admit)(const struct sockaddr *peer, socklen_t len, void *arg);
	/* An admitted client: fd is non-blocking and close-on-exec; the callee owns it. */
	void (*accepted)(evutil_socket_t fd, const struct sockaddr *peer, socklen_t len, void *arg);
	/*
	 * A port found taken (EADDRINUSE) is the caller's to handle, by trying
	 * another or by reporting it in its own terms: not logged as an error
	 * (a side service's UDP port, chosen by the system, may be held on
	 * TCP). Every other failure is logged.
	 */
	bool in_use_is_handled;
};

struct tcp_listener_stats {
	uint64_t accepted;
	uint64_t refused;
	uint64_t accept_errors;
};

/*
 * Listen on addr (IPv4 or IPv6; port 0 picks one, see
 * tcp_listener_local_addr()). backlog <= 0 means SOMAXCONN. ops is copied.
 * Returns NULL with errno set on failure.
 */
struct tcp_listener *tcp_listener_new(struct event_base *base, const struct sockaddr *addr,
				      socklen_t len, int backlog,
				      const struct tcp_listener_ops *ops, void *arg);

/*
 * One of @count (1..64) listeners on the same address, for worker @index
 * (0..count-1): with count > 1 the socket is bound with SO_REUSEPORT and
 * the group carries a classic BPF program (SO_ATTACH_REUSEPORT_CBPF) that
 * gives each new connection to the listener numbered
 * tcp_listener_steer_index(source address, count), so that every
 * connection from one client address, whatever its source port, reaches
 * the same worker. count == 1 is tcp_listener_new().
 *
 * The kernel numbers a group's sockets in the order they join it (at
 * listen(), which this does), so the caller creates them in index order
 * 0, 1, ... count-1, the same address and count for all, index 0 first
 * (with port 0 it picks the port; the others use that port), before any is
 * closed. Closing a member renumbers the group (the kernel moves its last
 * socket into the gap): to change the group, free all and build it again.
 * Until the last one has joined, a client steered to a missing index is
 * placed by the kernel's 4-tuple hash instead. The program goes on the
 * index-0 socket; if it cannot be attached, that listener is not made
 * (NULL, errno from setsockopt, a gw_err line) rather than silently
 * falling back to 4-tuple hashing. Any other SO_REUSEPORT socket of the
 * same user on the same address would join the group too.
 *
 * NULL with errno EINVAL when count is 0 or > 64, index >= count, or
 * count > 1 on an address that is neither IPv4 nor IPv6.
 */
struct tcp_listener *tcp_listener_new_steered(struct event_base *base, const struct sockaddr *addr,
					      socklen_t len, int backlog,
					      const struct tcp_listener_ops *ops, void *arg,
					      unsigned index, unsigned count);

/*
 * The listener index the group's program picks for a client at @peer
 * (IPv4 or IPv6; the port is ignored), so that tests and /stats can tell
 * a client's worker. With 32-bit unsigned arithmetic and the address
 * taken as big-endian 32-bit words w[] (one for IPv4, four for IPv6):
 *
 *	h = 0; for each w: h = (h ^ w) * 0x9e3779b1;
 *	index = (h >> 16) % count
 *
 * An IPv4-mapped IPv6 address counts as IPv6 (an IPv6 listener is
 * IPV6_V6ONLY, so an IPv4 client never reaches one). 0 when count <= 1 or
 * for another family.
 */
unsigned tcp_listener_steer_index(const struct sockaddr *peer, unsigned count);

/* Stop listening and close the socket. Accepted connections are not affected. */
void tcp_listener_free(struct tcp_listener *l);

/*
 * Receive timestamps (SO_TIMESTAMPNS) on the listening socket: accepted
 * connections inherit them, and the kernel keeps them turned on for as
 * long as the listener lives. Set only per connection, they would go off
 * whenever the last connection closes, and the next client's first calls
 * would carry no receive time (tcp_conn rx_timestamps). 0, or -1 with errno.
 */
int tcp_listener_rx_timestamps(struct tcp_listener *l);

/* The address the listener is bound to; 0, or -1 with errno. */
int tcp_listener_local_addr(const struct tcp_listener *l, struct sockaddr_storage *ss,
			    socklen_t *len);

const struct tcp_listener_stats *tcp_listener_stats(const struct tcp_listener *l);

/* Bind the source to a reserved port (< 1024; needs CAP_NET_BIND_SERVICE). */
#define TCP_CONNECT_RESVPORT 0x1u

/*
 * How a connect ended: a connected non-blocking socket that the callee now
 * owns and err 0, or fd -1 and an errno value (ETIMEDOUT when the time
 * limit passed, ECONNREFUSED, ...).
 */
typedef void (*tcp_connect_fn)(evutil_socket_t fd, int err, void *arg);

/*
 * Start connecting to addr. timeout_ms 0 leaves it to the kernel's SYN
 * retries. Returns a handle that lives until done is called (or until
 * tcp_connect_cancel()); NULL with errno set when the connect could not
 * even start (then done is never called).
 */
struct tcp_connect *tcp_connect_start(struct event_base *base, const struct sockaddr *addr,
				      socklen_t len, unsigned int timeout_ms, unsigned int flags,
				      tcp_connect_fn done, void *arg);

/* Give up a connect in progress: the socket is closed and done is not called. */
void tcp_connect_cancel(struct tcp_connect *cn);

#endif
