/* SPDX-License-Identifier: MIT */
#include "gateway/side/rpc/rpcb_reg.h"

#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <rpc/rpc.h>
#include <rpc/pmap_clnt.h>
#include <rpc/rpcb_clnt.h>

#include "gateway/counters/rpc_names.h"

enum { PROTO_TCP = 6, PROTO_UDP = 17 };

struct reg_entry {
	uint32_t prog, vers, proto;
	uint16_t port;
	bool set; /* mapped by this process */
};

struct rpcb_reg {
	struct rpcb_reg_ops ops;
	bool ipv6;
	size_t n;
	struct reg_entry e[RPCB_REG_MAX_ENTRIES];
};

/*
 * The netid of @proto: the IPv4 one, or the IPv6 one on the IPv6 wildcard
 * (the gateway's IPv6 sockets are IPV6_V6ONLY: they serve no IPv4 client).
 */
static const char *netid(const struct rpcb_reg *reg, uint32_t proto)
{
	if (proto == PROTO_UDP)
		return reg->ipv6 ? "udp6" : "udp";
	return reg->ipv6 ? "tcp6" : "tcp";
}

static const char *proto_name(uint32_t proto)
{
	return proto == PROTO_UDP ? "UDP" : "TCP";
}

struct rpcb_reg *rpcb_reg_new(const struct rpcb_reg_ops *ops, bool ipv6)
{
	struct rpcb_reg *reg = calloc(1, sizeof(*reg));

	if (!reg)
		return NULL;
	reg->ops = *ops;
	reg->ipv6 = ipv6;
	return reg;
}

bool rpcb_reg_add(struct rpcb_reg *reg, uint32_t prog, uint32_t vers, uint32_t proto, uint16_t port)
{
	if (reg->n >= RPCB_REG_MAX_ENTRIES || (proto != PROTO_TCP && proto != PROTO_UDP))
		return false;
	reg->e[reg->n++] =
		(struct reg_entry){ .prog = prog, .vers = vers, .proto = proto, .port = port };
	return true;
}

/*
 * The first entry whose program and version a live service of this host
 * holds: mapped to a port other than the entry's, which a socket holds.
 */
static const struct reg_entry *collision(struct rpcb_reg *reg, uint16_t *held)
{
	for (size_t i = 0; i < reg->n; i++) {
		const struct reg_entry *e = &reg->e[i];
		uint16_t p = reg->ops.getport(reg->ops.arg, e->prog, e->vers, e->proto);
		if (p && p != e->port && reg->ops.port_in_use(reg->ops.arg, e->proto, p)) {
			*held = p;
			return e;
		}
	}
	return NULL;
}

enum rpcb_reg_outcome rpcb_reg_register(struct rpcb_reg *reg, char *why, size_t whylen)
{
	uint16_t held = 0;

	snprintf(why, whylen, "registered");
	if (!reg->ops.reachable(reg->ops.arg)) {
		snprintf(why, whylen, "no rpcbind answers on this host");
		return RPCB_REG_NO_RPCBIND;
	}
	const struct reg_entry *c = collision(reg, &held);
	if (c) {
		const char *name = gw_rpc_program_name(c->prog);
		snprintf(why, whylen,
			 "the host's rpcbind maps %s (program %u) version %u over %s to port %u, "
			 "which a live service of this host holds%s; the gateway registers "
			 "nothing rather than overwrite it",
			 name ? name : "a program", c->prog, c->vers, proto_name(c->proto), held,
			 c->prog == 100021 ? " (the kernel's lockd: this host is an NFS client or "
					     "server)"
			 : c->prog == 100024 ? " (this host's rpc.statd)"
					     : "");
		return RPCB_REG_COLLISION;
	}
	for (size_t i = 0; i < reg->n; i++) {
		struct reg_entry *e = &reg->e[i];
		const char *id = netid(reg, e->proto);
		char uaddr[64];
		snprintf(uaddr, sizeof(uaddr), "%s.%u.%u", reg->ipv6 ? "::" : "0.0.0.0",
			 e->port >> 8, e->port & 0xff);
		/* A stale mapping (checked above: nobody holds its port) first. */
		reg->ops.unset(reg->ops.arg, e->prog, e->vers, id);
		if (!reg->ops.set(reg->ops.arg, e->prog, e->vers, id, uaddr)) {
			const char *name = gw_rpc_program_name(e->prog);
			snprintf(why, whylen,
				 "the host's rpcbind refused to map %s (program %u) version %u "
				 "over %s to %s",
				 name ? name : "a program", e->prog, e->vers, id, uaddr);
			rpcb_reg_unregister(reg);
			return RPCB_REG_REFUSED;
		}
		e->set = true;
	}
	return RPCB_REG_DONE;
}

size_t rpcb_reg_count(const struct rpcb_reg *reg)
{
	size_t n = 0;

	for (size_t i = 0; i < reg->n; i++)
		n += reg->e[i].set;
	return n;
}

void rpcb_reg_unregister(struct rpcb_reg *reg)
{
	for (size_t i = 0; i < reg->n; i++) {
		struct reg_entry *e = &reg->e[i];
		/*
		 * Only while the mapping is still the gateway's: a service started
		 * since (rpc.mountd, the kernel's nfsd or lockd unset and set their
		 * programs at start) keeps its own. The IPv6 netids cannot be asked
		 * by GETPORT: removed as set.
		 */
		if (e->set && (reg->ipv6 || reg->ops.getport(reg->ops.arg, e->prog, e->vers,
							     e->proto) == e->port))
			reg->ops.unset(reg->ops.arg, e->prog, e->vers, netid(reg, e->proto));
		e->set = false;
	}
}

void rpcb_reg_free(struct rpcb_reg *reg)
{
	if (!reg)
		return;
	rpcb_reg_unregister(reg);
	free(reg);
}

/* ---- the host's rpcbind, through libtirpc ------------------------------- */

#ifndef _PATH_RPCBINDSOCK
#define _PATH_RPCBINDSOCK "/var/run/rpcbind.sock"
#endif

/*
 * rpcbind takes SET and UNSET only over its AF_LOCAL socket, where it
 * reads the caller's credentials (SO_PEERCRED) to own the mapping;
 * libtirpc's rpcb_set()/rpcb_unset() speak exactly that, so they are used
 * rather than a hand-written call. Reachable: that socket accepts.
 */
static bool host_reachable(void *arg)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	bool ok;

	(void)arg;
	if (fd < 0)
		return false;
	snprintf(sun.sun_path, sizeof(sun.sun_path), "%s", _PATH_RPCBINDSOCK);
	ok = connect(fd, (struct sockaddr *)&sun, sizeof(sun)) == 0;
	close(fd);
	return ok;
}

/* GETPORT of the IPv4 registrations, as a client of this host would ask. */
static uint16_t host_getport(void *arg, uint32_t prog, uint32_t vers, uint32_t proto)
{
	struct sockaddr_in lo = { .sin_family = AF_INET,
				  .sin_port = htons(111),
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };

	(void)arg;
	return pmap_getport(&lo, prog, vers, proto == PROTO_UDP ? IPPROTO_UDP : IPPROTO_TCP);
}

/*
 * Whether a socket holds @port: a bind of the wildcard fails. TCP with
 * SO_REUSEADDR, so that a dead service's TIME_WAIT connections do not
 * count; a port this process may not bind (below 1024, unprivileged) is
 * taken as held, which errs toward overwriting nothing.
 */
static bool host_port_in_use(void *arg, uint32_t proto, uint16_t port)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(port) };
	int one = 1;
	int fd = socket(AF_INET, (proto == PROTO_UDP ? SOCK_DGRAM : SOCK_STREAM) | SOCK_CLOEXEC, 0);
	bool held;

	(void)arg;
	if (fd < 0)
		return true;
	if (proto == PROTO_TCP)
		setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	held = bind(fd, (struct sockaddr *)&a, sizeof(a)) != 0;
	close(fd);
	return held;
}

static bool host_set(void *arg, uint32_t prog, uint32_t vers, const char *netid, const char *uaddr)
{
	struct netconfig *nc = getnetconfigent(netid);
	struct netbuf *nb = nc ? uaddr2taddr(nc, uaddr) : NULL;
	bool ok = nb && rpcb_set(prog, vers, nc, nb);

	(void)arg;
	if (nb) {
		free(nb->buf);
		free(nb);
	}
	if (nc)
		freenetconfigent(nc);
	return ok;
}

static bool host_unset(void *arg, uint32_t prog, uint32_t vers, const char *netid)
{
	struct netconfig *nc = getnetconfigent(netid);
	bool ok = nc && rpcb_unset(prog, vers, nc);

	(void)arg;
	if (nc)
		freenetconfigent(nc);
	return ok;
}

static const struct rpcb_reg_ops host_ops = {
	.reachable = host_reachable,
	.getport = host_getport,
	.port_in_use = host_port_in_use,
	.set = host_set,
	.unset = host_unset,
};

const struct rpcb_reg_ops *rpcb_reg_host_ops(void)
{
	return &host_ops;
}
