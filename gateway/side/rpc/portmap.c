/* SPDX-License-Identifier: MIT */
#include "gateway/side/rpc/portmap.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <rpc/types.h>
#include <rpc/xdr.h>

#include "common/xdr.h"

enum {
	GW_MSG_CALL = 0,
	GW_MSG_REPLY = 1,
	GW_MSG_ACCEPTED = 0,
	GW_MSG_DENIED = 1,
	GW_REJECT_RPC_MISMATCH = 0,
	GW_REJECT_AUTH_ERROR = 1,
	GW_AUTH_BADCRED = 1,
	GW_RPC_VERS = 2,
	/* portmapper v2 */
	GW_PMAPPROC_NULL = 0,
	GW_PMAPPROC_SET = 1,
	GW_PMAPPROC_UNSET = 2,
	GW_PMAPPROC_GETPORT = 3,
	GW_PMAPPROC_DUMP = 4,
	/* rpcbind v3 and v4 */
	GW_RPCBPROC_GETADDR = 3,
	GW_RPCBPROC_DUMP = 4,
	GW_RPCBPROC_GETTIME = 6,
	GW_RPCBPROC_GETVERSADDR = 9, /* v4 only */
	/* rpcbind strings (netid, uaddr, owner) are short; anything longer is garbage. */
	RPCB_STR_MAX = 128,
};

/* ---- the RPC header ------------------------------------------------------ */

/* Skip an opaque_auth, refusing a body over 400 bytes (RFC 5531 section 8.2). */
static bool skip_auth(XDR *x, bool *too_long)
{
	u_int flavor, len;

	if (!xdr_u_int(x, &flavor) || !xdr_u_int(x, &len))
		return false;
	if (len > RPC_AUTH_MAX) {
		*too_long = true;
		return false;
	}
	u_int pos = xdr_getpos(x);
	u_int skip = (len + 3u) & ~3u;
	/* xdr_setpos() on a memory stream checks the new position against its end. */
	return xdr_setpos(x, pos + skip);
}

enum rpc_hdr_status rpc_call_decode(const uint8_t *msg, size_t len, struct rpc_call_hdr *hdr)
{
	XDR x;
	u_int mtype, rpcvers;
	bool too_long = false;
	enum rpc_hdr_status st = RPC_HDR_TRUNCATED;

	memset(hdr, 0, sizeof(*hdr));
	if (len > UINT32_MAX)
		return RPC_HDR_TRUNCATED;
	xdrmem_create(&x, (char *)msg, (u_int)len, XDR_DECODE);
	if (!xdr_u_int(&x, &hdr->xid) || !xdr_u_int(&x, &mtype))
		goto out;
	if (mtype != GW_MSG_CALL) {
		st = mtype == GW_MSG_REPLY ? RPC_HDR_REPLY : RPC_HDR_TRUNCATED;
		goto out;
	}
	if (!xdr_u_int(&x, &rpcvers))
		goto out;
	if (rpcvers != GW_RPC_VERS) {
		st = RPC_HDR_BAD_RPCVERS;
		goto out;
	}
	if (!xdr_u_int(&x, &hdr->prog) || !xdr_u_int(&x, &hdr->vers) || !xdr_u_int(&x, &hdr->proc))
		goto out;
	/* The credential, then the verifier. */
	bool cred_ok = skip_auth(&x, &too_long);
	if (!cred_ok || !skip_auth(&x, &too_long)) {
		if (too_long)
			st = RPC_HDR_BAD_AUTH;
		goto out;
	}
	hdr->args_off = xdr_getpos(&x);
	st = RPC_HDR_CALL;
out:
	xdr_destroy(&x);
	return st;
}

bool rpc_msg_xid(const uint8_t *msg, size_t len, uint32_t *xid)
{
	if (len < 4)
		return false;
	*xid = ((uint32_t)msg[0] << 24) | ((uint32_t)msg[1] << 16) | ((uint32_t)msg[2] << 8) |
	       msg[3];
	return true;
}

bool rpc_msg_is_reply(const uint8_t *msg, size_t len)
{
	/* xid, msg_type, reply_stat: the least a reply can be. */
	return len >= 12 && msg[4] == 0 && msg[5] == 0 && msg[6] == 0 && msg[7] == GW_MSG_REPLY;
}

/*
 * An accepted reply: its accept_stat, and where what follows it (the
 * results) starts. False when @msg is not one (or is cut short).
 */
static bool reply_accepted(const uint8_t *msg, size_t len, uint32_t *stat, size_t *after)
{
	uint32_t vlen;
	size_t off;

	/* xid, REPLY, ACCEPTED, verifier flavor and length, the verifier, accept_stat. */
	if (len < 24 || xdr_get32(msg + 4) != GW_MSG_REPLY || xdr_get32(msg + 8) != GW_MSG_ACCEPTED)
		return false;
	vlen = xdr_get32(msg + 16);
	if (vlen > RPC_AUTH_MAX || len < 24 + (size_t)xdr_align(vlen))
		return false;
	off = 20 + xdr_align(vlen);
	*stat = xdr_get32(msg + off);
	*after = off + 4;
	return true;
}

bool rpc_reply_results(const uint8_t *msg, size_t len, size_t *results_off)
{
	uint32_t stat;
	size_t off;

	if (!reply_accepted(msg, len, &stat, &off) || stat != RPCSTAT_SUCCESS)
		return false;
	*results_off = off;
	return true;
}

bool rpc_reply_refused(const uint8_t *msg, size_t len)
{
	uint32_t stat;
	size_t off;

	if (len >= 12 && xdr_get32(msg + 4) == GW_MSG_REPLY && xdr_get32(msg + 8) == GW_MSG_DENIED)
		return true;
	return reply_accepted(msg, len, &stat, &off) && stat != RPCSTAT_SUCCESS &&
	       stat < RPCSTAT_SYSTEM_ERR;
}

/* xid, REPLY, GW_MSG_ACCEPTED, a null verifier, @stat. */
static bool encode_accepted(XDR *x, uint32_t xid, uint32_t stat)
{
	u_int w[] = { xid, GW_MSG_REPLY, GW_MSG_ACCEPTED, 0 /* AUTH_NONE */, 0, stat };

	for (size_t i = 0; i < sizeof(w) / sizeof(w[0]); i++) {
		if (!xdr_u_int(x, &w[i]))
			return false;
	}
	return true;
}

size_t rpc_encode_accept_error(uint8_t *out, size_t cap, uint32_t xid, uint32_t stat, uint32_t lo,
			       uint32_t hi)
{
	XDR x;
	size_t n = 0;

	xdrmem_create(&x, (char *)out, (u_int)(cap > UINT32_MAX ? UINT32_MAX : cap), XDR_ENCODE);
	if (encode_accepted(&x, xid, stat) &&
	    (stat != RPCSTAT_PROG_MISMATCH || (xdr_u_int(&x, &lo) && xdr_u_int(&x, &hi))))
		n = xdr_getpos(&x);
	xdr_destroy(&x);
	return n;
}

size_t rpc_encode_denied(uint8_t *out, size_t cap, uint32_t xid, bool auth)
{
	XDR x;
	size_t n = 0;
	u_int w[] = { xid,
		      GW_MSG_REPLY,
		      GW_MSG_DENIED,
		      auth ? GW_REJECT_AUTH_ERROR : GW_REJECT_RPC_MISMATCH,
		      auth ? GW_AUTH_BADCRED : GW_RPC_VERS,
		      GW_RPC_VERS };
	size_t words = auth ? 5 : 6;

	xdrmem_create(&x, (char *)out, (u_int)(cap > UINT32_MAX ? UINT32_MAX : cap), XDR_ENCODE);
	size_t i;
	for (i = 0; i < words && xdr_u_int(&x, &w[i]); i++)
		;
	if (i == words)
		n = xdr_getpos(&x);
	xdr_destroy(&x);
	return n;
}

/* ---- the table ------------------------------------------------------------ */

bool pmap_table_add(struct pmap_table *t, uint32_t prog, uint32_t vers, uint32_t prot,
		    uint16_t port)
{
	if (t->count >= PMAP_MAX_ENTRIES)
		return false;
	t->entries[t->count++] = (struct pmap_entry){ prog, vers, prot, port };
	return true;
}

uint16_t pmap_table_port(const struct pmap_table *t, uint32_t prog, uint32_t vers, uint32_t prot,
			 bool any_vers)
{
	const struct pmap_entry *best = NULL;

	for (size_t i = 0; i < t->count; i++) {
		const struct pmap_entry *e = &t->entries[i];
		if (e->prog != prog || e->prot != prot)
			continue;
		if (e->vers == vers)
			return e->port;
		if (any_vers && (!best || e->vers > best->vers))
			best = e;
	}
	return best ? best->port : 0;
}

bool pmap_uaddr(const struct sockaddr *sa, uint16_t port, char *out, size_t cap)
{
	char host[INET6_ADDRSTRLEN];
	const void *a;
	int n;

	if (sa->sa_family == AF_INET)
		a = &((const struct sockaddr_in *)sa)->sin_addr;
	else if (sa->sa_family == AF_INET6)
		a = &((const struct sockaddr_in6 *)sa)->sin6_addr;
	else
		return false;
	if (!inet_ntop(sa->sa_family, a, host, sizeof(host)))
		return false;
	n = snprintf(out, cap, "%s.%u.%u", host, port >> 8, port & 0xffu);
	return n > 0 && (size_t)n < cap;
}

/* "tcp", "udp", "tcp6", "udp6" for an entry on the table's address family. */
static const char *entry_netid(const struct pmap_table *t, uint32_t prot)
{
	bool v6 = t->addr.ss_family == AF_INET6;

	if (prot == PMAP_IPPROTO_TCP)
		return v6 ? "tcp6" : "tcp";
	return v6 ? "udp6" : "udp";
}

/* The protocol a netid names on the table's family; 0 for any other netid. */
static uint32_t netid_prot(const struct pmap_table *t, const char *netid)
{
	for (uint32_t prot = PMAP_IPPROTO_TCP; prot <= PMAP_IPPROTO_UDP;
	     prot += PMAP_IPPROTO_UDP - PMAP_IPPROTO_TCP) {
		if (strcmp(netid, entry_netid(t, prot)) == 0)
			return prot;
	}
	return 0;
}

/* ---- portmapper version 2 --------------------------------------------- */

static bool pmap2_getport(const struct pmap_table *t, XDR *in, XDR *out)
{
	u_int prog, vers, prot, port;

	if (!xdr_u_int(in, &prog) || !xdr_u_int(in, &vers) || !xdr_u_int(in, &prot) ||
	    !xdr_u_int(in, &port))
		return false;
	u_int found = pmap_table_port(t, prog, vers, prot, true);
	return xdr_u_int(out, &found);
}

/* pmaplist: (TRUE, mapping)* FALSE */
static bool pmap2_dump(const struct pmap_table *t, XDR *out)
{
	u_int more = 1, none = 0;

	for (size_t i = 0; i < t->count; i++) {
		const struct pmap_entry *e = &t->entries[i];
		u_int w[] = { e->prog, e->vers, e->prot, e->port };
		if (!xdr_u_int(out, &more))
			return false;
		for (size_t k = 0; k < 4; k++) {
			if (!xdr_u_int(out, &w[k]))
				return false;
		}
	}
	return xdr_u_int(out, &none);
}

/* ---- rpcbind versions 3 and 4 ------------------------------------------ */

struct rpcb_args {
	u_int prog, vers;
	char netid[RPCB_STR_MAX + 1];
	char addr[RPCB_STR_MAX + 1];
	char owner[RPCB_STR_MAX + 1];
};

static bool decode_str(XDR *in, char *buf)
{
	char *p = buf;

	return xdr_string(in, &p, RPCB_STR_MAX);
}

static bool decode_rpcb(XDR *in, struct rpcb_args *a)
{
	return xdr_u_int(in, &a->prog) && xdr_u_int(in, &a->vers) && decode_str(in, a->netid) &&
	       decode_str(in, a->addr) && decode_str(in, a->owner);
}

static bool encode_str(XDR *out, const char *s)
{
	char *p = (char *)s;

	return xdr_string(out, &p, RPCB_STR_MAX);
}

/* GETADDR (any version of the program will do) and GETVERSADDR (that version). */
static bool rpcb_getaddr(const struct pmap_table *t, XDR *in, XDR *out, bool any_vers)
{
	struct rpcb_args a;
	char uaddr[RPCB_STR_MAX] = "";

	if (!decode_rpcb(in, &a))
		return false;
	uint32_t prot = netid_prot(t, a.netid);
	uint16_t port = prot ? pmap_table_port(t, a.prog, a.vers, prot, any_vers) : 0;
	if (port && !pmap_uaddr((const struct sockaddr *)&t->addr, port, uaddr, sizeof(uaddr)))
		uaddr[0] = '\0';
	return encode_str(out, uaddr);
}

/* rpcblist: (TRUE, rpcb)* FALSE, the owner "superuser" as rpcbind reports the kernel's. */
static bool rpcb_dump(const struct pmap_table *t, XDR *out)
{
	u_int more = 1, none = 0;
	char uaddr[RPCB_STR_MAX];

	for (size_t i = 0; i < t->count; i++) {
		const struct pmap_entry *e = &t->entries[i];
		u_int prog = e->prog, vers = e->vers;
		if (!pmap_uaddr((const struct sockaddr *)&t->addr, e->port, uaddr, sizeof(uaddr)))
			return false;
		if (!xdr_u_int(out, &more) || !xdr_u_int(out, &prog) || !xdr_u_int(out, &vers) ||
		    !encode_str(out, entry_netid(t, e->prot)) || !encode_str(out, uaddr) ||
		    !encode_str(out, "superuser"))
			return false;
	}
	return xdr_u_int(out, &none);
}

/* ---- dispatch -------------------------------------------------------------- */

enum proc_result { PR_OK, PR_GARBAGE, PR_UNAVAIL, PR_NO_ROOM };

/* Decode the arguments from @in and encode the results to @out. */
static enum proc_result pmap_proc(const struct pmap_table *t, const struct rpc_call_hdr *h, XDR *in,
				  XDR *out, bool *refused)
{
	u_int no = 0;

	*refused = false;
	if (h->proc == GW_PMAPPROC_NULL)
		return PR_OK;
	if (h->proc == GW_PMAPPROC_SET || h->proc == GW_PMAPPROC_UNSET) {
		/* Registrations belong to the host's rpcbind, never to the gateway's. */
		*refused = true;
		return xdr_u_int(out, &no) ? PR_OK : PR_NO_ROOM;
	}
	if (h->vers == 2) {
		if (h->proc == GW_PMAPPROC_GETPORT) {
			size_t before = xdr_getpos(out);
			if (pmap2_getport(t, in, out))
				return PR_OK;
			return xdr_getpos(out) == before ? PR_GARBAGE : PR_NO_ROOM;
		}
		if (h->proc == GW_PMAPPROC_DUMP)
			return pmap2_dump(t, out) ? PR_OK : PR_NO_ROOM;
		return PR_UNAVAIL;
	}
	switch (h->proc) {
	case GW_RPCBPROC_GETADDR:
	case GW_RPCBPROC_GETVERSADDR: {
		if (h->proc == GW_RPCBPROC_GETVERSADDR && h->vers != 4)
			return PR_UNAVAIL;
		struct rpcb_args probe;
		u_int pos = xdr_getpos(in);
		if (!decode_rpcb(in, &probe))
			return PR_GARBAGE;
		xdr_setpos(in, pos);
		return rpcb_getaddr(t, in, out, h->proc == GW_RPCBPROC_GETADDR) ? PR_OK
										: PR_NO_ROOM;
	}
	case GW_RPCBPROC_DUMP:
		return rpcb_dump(t, out) ? PR_OK : PR_NO_ROOM;
	case GW_RPCBPROC_GETTIME: {
		u_int now = (u_int)time(NULL);
		return xdr_u_int(out, &now) ? PR_OK : PR_NO_ROOM;
	}
	default:
		return PR_UNAVAIL;
	}
}

static enum pmap_outcome answer_error(uint8_t *out, size_t cap, size_t *out_len, uint32_t xid,
				      uint32_t stat)
{
	*out_len = rpc_encode_accept_error(out, cap, xid, stat, PMAP_VERS_LO, PMAP_VERS_HI);
	return stat == RPCSTAT_GARBAGE_ARGS ? PMAP_GARBAGE : PMAP_RPC_ERROR;
}

enum pmap_outcome pmap_answer(const struct pmap_table *t, const uint8_t *msg, size_t len,
			      uint8_t *out, size_t cap, size_t *out_len, struct rpc_call_hdr *hdr)
{
	bool refused = false;

	*out_len = 0;
	switch (rpc_call_decode(msg, len, hdr)) {
	case RPC_HDR_CALL:
		break;
	case RPC_HDR_BAD_RPCVERS:
		*out_len = rpc_encode_denied(out, cap, hdr->xid, false);
		return PMAP_RPC_ERROR;
	case RPC_HDR_BAD_AUTH:
		*out_len = rpc_encode_denied(out, cap, hdr->xid, true);
		return PMAP_RPC_ERROR;
	default:
		return PMAP_NO_REPLY;
	}
	if (hdr->prog != PMAP_PROG)
		return answer_error(out, cap, out_len, hdr->xid, RPCSTAT_PROG_UNAVAIL);
	if (hdr->vers < PMAP_VERS_LO || hdr->vers > PMAP_VERS_HI)
		return answer_error(out, cap, out_len, hdr->xid, RPCSTAT_PROG_MISMATCH);

	XDR in, res;
	xdrmem_create(&in, (char *)msg + hdr->args_off, (u_int)(len - hdr->args_off), XDR_DECODE);
	xdrmem_create(&res, (char *)out, (u_int)(cap > UINT32_MAX ? UINT32_MAX : cap), XDR_ENCODE);
	enum proc_result r = PR_NO_ROOM;
	if (encode_accepted(&res, hdr->xid, RPCSTAT_SUCCESS))
		r = pmap_proc(t, hdr, &in, &res, &refused);
	size_t n = xdr_getpos(&res);
	xdr_destroy(&in);
	xdr_destroy(&res);
	switch (r) {
	case PR_OK:
		*out_len = n;
		return refused ? PMAP_REFUSED : PMAP_ANSWERED;
	case PR_GARBAGE:
		return answer_error(out, cap, out_len, hdr->xid, RPCSTAT_GARBAGE_ARGS);
	case PR_UNAVAIL:
		return answer_error(out, cap, out_len, hdr->xid, RPCSTAT_PROC_UNAVAIL);
	case PR_NO_ROOM:
		break;
	}
	answer_error(out, cap, out_len, hdr->xid, RPCSTAT_SYSTEM_ERR);
	return PMAP_TOO_LARGE;
}

/* ---- the gateway as a portmapper client -------------------------------- */

size_t rpc_encode_call_hdr(uint8_t *out, size_t cap, uint32_t xid, uint32_t prog, uint32_t vers,
			   uint32_t proc)
{
	/* xid, CALL, rpcvers, prog, vers, proc, AUTH_NONE credential and verifier */
	const uint32_t w[] = { xid, GW_MSG_CALL, GW_RPC_VERS, prog, vers, proc, 0, 0, 0, 0 };

	if (cap < sizeof(w))
		return 0;
	for (size_t i = 0; i < sizeof(w) / sizeof(w[0]); i++)
		xdr_put32(out + 4 * i, w[i]);
	return sizeof(w);
}

size_t pmap_encode_getport(uint8_t *out, size_t cap, uint32_t xid, uint32_t prog, uint32_t vers,
			   uint32_t prot)
{
	/* PMAP_PROG v2 GETPORT of the mapping (prog, vers, prot, port 0) */
	size_t h = rpc_encode_call_hdr(out, cap, xid, PMAP_PROG, 2, GW_PMAPPROC_GETPORT);

	if (!h || cap - h < 16)
		return 0;
	xdr_put32(out + h, prog);
	xdr_put32(out + h + 4, vers);
	xdr_put32(out + h + 8, prot);
	xdr_put32(out + h + 12, 0);
	return h + 16;
}

int pmap_decode_getport_reply(const uint8_t *msg, size_t len, uint16_t *port)
{
	size_t off;
	uint32_t p;

	if (!rpc_reply_results(msg, len, &off) || len - off < 4)
		return -1;
	p = xdr_get32(msg + off);
	if (p > UINT16_MAX)
		return -1;
	*port = (uint16_t)p;
	return 0;
}

/* ---- asking a peer's rpcbind where a UDP service is ------------------------ */

size_t pmap_encode_udp_lookup(uint8_t *out, size_t cap, uint32_t xid, int family, uint32_t prog,
			      uint32_t vers)
{
	if (family != AF_INET6)
		return pmap_encode_getport(out, cap, xid, prog, vers, PMAP_IPPROTO_UDP);
	/* rpcbind v3 GETADDR of (prog, vers, "udp6", r_addr "", r_owner "") */
	size_t h = rpc_encode_call_hdr(out, cap, xid, PMAP_PROG, 3, GW_RPCBPROC_GETADDR);

	if (!h || cap - h < 24)
		return 0;
	xdr_put32(out + h, prog);
	xdr_put32(out + h + 4, vers);
	xdr_put32(out + h + 8, 4);
	static const uint8_t udp6[4] = { 'u', 'd', 'p', '6' }; /* the netid, XDR string body */
	memcpy(out + h + 12, udp6, sizeof(udp6));
	xdr_put32(out + h + 16, 0);
	xdr_put32(out + h + 20, 0);
	return h + 24;
}

/* The port of a universal address, its last two dotted numbers ("...p1.p2"). */
static bool uaddr_port(const char *u, size_t n, uint16_t *port)
{
	unsigned p[2];
	size_t end = n;

	for (int i = 1; i >= 0; i--) {
		size_t dot = end;
		while (dot > 0 && u[dot - 1] != '.')
			dot--;
		if (dot == 0 || dot == end || end - dot > 3)
			return false;
		p[i] = 0;
		for (size_t k = dot; k < end; k++) {
			if (u[k] < '0' || u[k] > '9')
				return false;
			p[i] = p[i] * 10 + (unsigned)(u[k] - '0');
		}
		if (p[i] > 255)
			return false;
		end = dot - 1;
	}
	if (end == 0) /* no host part before the port */
		return false;
	*port = (uint16_t)(p[0] << 8 | p[1]);
	return true;
}

int pmap_decode_udp_lookup_reply(const uint8_t *msg, size_t len, int family, uint16_t *port)
{
	size_t off;
	uint32_t n;

	if (family != AF_INET6)
		return pmap_decode_getport_reply(msg, len, port);
	if (!rpc_reply_results(msg, len, &off) || len - off < 4)
		return -1;
	n = xdr_get32(msg + off);
	if (n > RPCB_STR_MAX || len - off - 4 < n)
		return -1;
	if (n == 0) { /* not registered */
		*port = 0;
		return 0;
	}
	return uaddr_port((const char *)msg + off + 4, n, port) ? 0 : -1;
}
