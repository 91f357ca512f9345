/* SPDX-License-Identifier: MIT */
/*
 * gateway/side/rpc/rpcb_reg.h - a route's side services registered with the
 * host's rpcbind, as every Linux RPC service registers (rpc.mountd, lockd,
 * rpc.statd): what a route on the wildcard address does instead of
 * answering the portmapper itself (gateway/side/side_route.h).
 *
 * The entries (program, version, protocol, port) are set for the IPv4
 * netids (udp, tcp) or, on the IPv6 wildcard, udp6 and tcp6 (the
 * gateway's IPv6 sockets serve IPv6 only), with the wildcard universal
 * address. Live services are looked for among the IPv4 mappings (GETPORT,
 * what clients ask). Nothing already registered by a
 * live service is overwritten: when any entry's program and version map to
 * a port that something on this host holds (the kernel's lockd for NLM
 * when this host is an NFS client or server, a host rpc.statd for NSM, a
 * kernel nfsd or rpc.mountd), nothing at all is registered and the
 * collision is reported, so that a client never gets half of the gateway
 * and half of another service. A registration whose port nobody holds
 * (a previous gateway that did not stop cleanly) is stale and replaced.
 * Unregistering removes exactly the mappings this process set, and of
 * those only the ones still pointing at the gateway's port (a service
 * started since, which unsets and sets its program as rpc.mountd and the
 * kernel's nfsd do, keeps its own).
 *
 * The talking to rpcbind goes through struct rpcb_reg_ops, so that unit
 * tests can drive the logic against a fake; rpcb_reg_host_ops() is the
 * host's rpcbind through libtirpc.
 */
#ifndef GW_GATEWAY_RPCB_REG_H
#define GW_GATEWAY_RPCB_REG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct rpcb_reg;

struct rpcb_reg_ops {
	/* Whether an rpcbind answers on this host. */
	bool (*reachable)(void *arg);
	/* The port @prog @vers is mapped to over @proto (6 TCP, 17 UDP) now; 0: none. */
	uint16_t (*getport)(void *arg, uint32_t prog, uint32_t vers, uint32_t proto);
	/* Whether a socket of this host holds @port over @proto (a live service). */
	bool (*port_in_use)(void *arg, uint32_t proto, uint16_t port);
	/* Map @prog @vers over @netid ("udp", "tcp6" ...) to universal address @uaddr. */
	bool (*set)(void *arg, uint32_t prog, uint32_t vers, const char *netid, const char *uaddr);
	/* Remove the mapping of @prog @vers over @netid. */
	bool (*unset)(void *arg, uint32_t prog, uint32_t vers, const char *netid);
	void *arg;
};

/* The host's rpcbind, through libtirpc (its AF_LOCAL socket). */
const struct rpcb_reg_ops *rpcb_reg_host_ops(void);

enum rpcb_reg_outcome {
	RPCB_REG_DONE,	     /* every entry registered */
	RPCB_REG_NO_RPCBIND, /* no rpcbind answers: nothing registered */
	RPCB_REG_COLLISION,  /* a live service holds one of the programs: nothing registered */
	RPCB_REG_REFUSED,    /* rpcbind refused a SET: nothing left registered */
};

enum { RPCB_REG_MAX_ENTRIES = 48 };

/* For @ipv6 (the IPv6 wildcard: the IPv6 netids as well). NULL: out of memory. */
struct rpcb_reg *rpcb_reg_new(const struct rpcb_reg_ops *ops, bool ipv6);

/* One entry to register; false when RPCB_REG_MAX_ENTRIES are already there. */
bool rpcb_reg_add(struct rpcb_reg *reg, uint32_t prog, uint32_t vers, uint32_t proto,
		  uint16_t port);

/* Register every entry; @why says what went wrong otherwise. */
enum rpcb_reg_outcome rpcb_reg_register(struct rpcb_reg *reg, char *why, size_t whylen);

/* The mappings set (for the log). */
size_t rpcb_reg_count(const struct rpcb_reg *reg);

/* Remove what rpcb_reg_register() set (nothing when it set nothing). */
void rpcb_reg_unregister(struct rpcb_reg *reg);

/* Unregister, then free. NULL: nothing. */
void rpcb_reg_free(struct rpcb_reg *reg);

#endif
