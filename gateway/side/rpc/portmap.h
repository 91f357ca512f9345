/* SPDX-License-Identifier: MIT */
/*
 * gateway/side/rpc/portmap.h - the rpcbind protocol as the gateway speaks it: a pure
 * codec, no I/O, no allocation.
 *
 * An unmodified NFSv3 client asks the portmapper at the server's address
 * (port 111) where NFS, MOUNT, NLM and NSM are. When that address is the
 * gateway's, the gateway answers: portmapper version 2 (RFC 1833 section 3)
 * and rpcbind versions 3 and 4 (RFC 1833 section 2), from a fixed table of
 * the services it relays. Registrations (SET, UNSET) are refused: nobody
 * registers with the gateway. CALLIT/BCAST, the address translation
 * procedures and GETSTAT are answered PR_UNAVAIL; Linux mount.nfs,
 * rpcinfo and showmount do not need them.
 *
 * The same file decodes the header of any ONC RPC call (RFC 5531) for the
 * side services (gateway/side/rpc/side_service.h) and encodes the RPC error replies they
 * make themselves, and encodes/decodes the one call the gateway makes as a
 * client: GW_PMAPPROC_GETPORT to the server's portmapper.
 */
#ifndef GW_GATEWAY_PORTMAP_H
#define GW_GATEWAY_PORTMAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

enum {
	PMAP_PROG = 100000,
	PMAP_PORT = 111,
	PMAP_VERS_LO = 2, /* portmapper */
	PMAP_VERS_HI = 4, /* rpcbind */
	PMAP_IPPROTO_TCP = 6,
	PMAP_IPPROTO_UDP = 17,
	/* RFC 5531 limits the body of a credential or verifier to 400 bytes. */
	RPC_AUTH_MAX = 400,
	/* accept_stat */
	RPCSTAT_SUCCESS = 0,
	RPCSTAT_PROG_UNAVAIL = 1,
	RPCSTAT_PROG_MISMATCH = 2,
	RPCSTAT_PROC_UNAVAIL = 3,
	RPCSTAT_GARBAGE_ARGS = 4,
	RPCSTAT_SYSTEM_ERR = 5,
};

/* An ONC RPC call's header, as far as the side services need it. */
struct rpc_call_hdr {
	uint32_t xid;
	uint32_t prog;
	uint32_t vers;
	uint32_t proc;
	uint32_t args_off; /* where the arguments start in the message */
};

enum rpc_hdr_status {
	RPC_HDR_CALL,	     /* a well-formed call header: answer it */
	RPC_HDR_REPLY,	     /* a reply (msg_type 1): not for a server */
	RPC_HDR_BAD_RPCVERS, /* rpcvers != 2: answer GW_MSG_DENIED RPC_MISMATCH (xid is set) */
	RPC_HDR_BAD_AUTH,    /* credential or verifier longer than 400 bytes: GW_AUTH_BADCRED */
	RPC_HDR_TRUNCATED,   /* not even a header: drop it (no reply can be addressed) */
};

/* Decode the call header at the start of @msg (@len bytes). */
enum rpc_hdr_status rpc_call_decode(const uint8_t *msg, size_t len, struct rpc_call_hdr *hdr);

/*
 * An accepted reply with no results: @stat is one of RPCSTAT_PROG_UNAVAIL,
 * RPCSTAT_PROC_UNAVAIL, RPCSTAT_GARBAGE_ARGS, RPCSTAT_SYSTEM_ERR, or RPCSTAT_PROG_MISMATCH
 * with the versions @lo..@hi. Returns its length, or 0 when @cap is short.
 */
size_t rpc_encode_accept_error(uint8_t *out, size_t cap, uint32_t xid, uint32_t stat, uint32_t lo,
			       uint32_t hi);
/* GW_MSG_DENIED RPC_MISMATCH (2..2), or AUTH_ERROR GW_AUTH_BADCRED when @auth. */
size_t rpc_encode_denied(uint8_t *out, size_t cap, uint32_t xid, bool auth);

/* One service the gateway offers on the route's address. */
struct pmap_entry {
	uint32_t prog;
	uint32_t vers;
	uint32_t prot; /* PMAP_IPPROTO_TCP or PMAP_IPPROTO_UDP */
	uint16_t port;
};

enum { PMAP_MAX_ENTRIES = 32 };

/* What the responder advertises: the entries, and the address they are at. */
struct pmap_table {
	struct pmap_entry entries[PMAP_MAX_ENTRIES];
	size_t count;
	struct sockaddr_storage addr; /* the route's listen address (its port is ignored) */
	socklen_t addrlen;
};

/* Add an entry; false when the table is full. */
bool pmap_table_add(struct pmap_table *t, uint32_t prog, uint32_t vers, uint32_t prot,
		    uint16_t port);

/*
 * The port of (@prog, @vers, @prot), or, when @any_vers, of the highest
 * version of @prog on @prot if that exact version is not offered (as
 * rpcbind answers GETPORT and GETADDR: the client then learns the versions
 * from the service's PROG_MISMATCH). 0 when none.
 */
uint16_t pmap_table_port(const struct pmap_table *t, uint32_t prog, uint32_t vers, uint32_t prot,
			 bool any_vers);

/* How an answer went, for counters and logs. */
enum pmap_outcome {
	PMAP_ANSWERED,	/* a successful reply (SET/UNSET answered FALSE count here too) */
	PMAP_REFUSED,	/* SET or UNSET: answered FALSE */
	PMAP_RPC_ERROR, /* PROG_UNAVAIL, PROG_MISMATCH, PR_UNAVAIL, denied */
	PMAP_GARBAGE,	/* arguments that did not decode: GARBAGE_ARGS */
	PMAP_NO_REPLY,	/* not a call, or too short to answer: dropped */
	PMAP_TOO_LARGE, /* the answer did not fit @cap: SYSTEM_ERR sent instead */
};

/*
 * Answer one call to the portmapper from @t. @msg is one whole RPC message
 * (a UDP datagram or a TCP record's payload). The reply goes to @out
 * (@cap bytes); *@out_len is its length, 0 when nothing is to be sent.
 * @hdr receives the decoded header (for per-procedure counters) when the
 * outcome is not PMAP_NO_REPLY.
 */
enum pmap_outcome pmap_answer(const struct pmap_table *t, const uint8_t *msg, size_t len,
			      uint8_t *out, size_t cap, size_t *out_len, struct rpc_call_hdr *hdr);

/*
 * The universal address (RFC 5665) of @sa with @port: "h1.h2.h3.h4.p1.p2"
 * or "IPV6.p1.p2". Returns false when @cap is short or the family unknown.
 */
bool pmap_uaddr(const struct sockaddr *sa, uint16_t port, char *out, size_t cap);

/* GW_PMAPPROC_GETPORT(@prog, @vers, @prot) as a call with @xid; its length or 0. */
/*
 * An RPC call header with AUTH_NONE credential and verifier (40 bytes) for
 * the side services' own calls; 0 when @cap is short. Written by hand, not
 * with libtirpc's xdr_callhdr, because the callers build the whole message
 * in their own fixed buffers and need the header's length before the
 * arguments.
 */
size_t rpc_encode_call_hdr(uint8_t *out, size_t cap, uint32_t xid, uint32_t prog, uint32_t vers,
			   uint32_t proc);

size_t pmap_encode_getport(uint8_t *out, size_t cap, uint32_t xid, uint32_t prog, uint32_t vers,
			   uint32_t prot);
/*
 * The port in a reply to GETPORT: 0 with *@port set (0 when the service is
 * not registered), or -1 when @msg is no successful GETPORT reply.
 */
int pmap_decode_getport_reply(const uint8_t *msg, size_t len, uint16_t *port);

/*
 * Ask a peer's rpcbind where (@prog, @vers) is over UDP, the peer being of address
 * family @family. AF_INET: portmapper v2 GETPORT. AF_INET6: rpcbind v3 GETADDR of
 * netid "udp6", because GETPORT is answered from the IPv4 ("udp") registrations, and a
 * daemon's udp6 socket has a port of its own (mountd, statd: unless told a port, each
 * socket gets its own). Returns the call's length, 0 when @cap is short.
 */
size_t pmap_encode_udp_lookup(uint8_t *out, size_t cap, uint32_t xid, int family, uint32_t prog,
			      uint32_t vers);
/*
 * The port in the reply to pmap_encode_udp_lookup() for @family: 0 with *@port set (0
 * when the service is not registered: GETADDR's empty address), or -1 when @msg is no
 * successful reply or its universal address has no port.
 */
int pmap_decode_udp_lookup_reply(const uint8_t *msg, size_t len, int family, uint16_t *port);

/* The XID of any RPC message; false when it is shorter than one. */
bool rpc_msg_xid(const uint8_t *msg, size_t len, uint32_t *xid);
/* Whether @msg is an RPC reply (msg_type REPLY) of at least a header's length. */
bool rpc_msg_is_reply(const uint8_t *msg, size_t len);
/*
 * Whether @msg is a reply that was accepted and succeeded; *results_off is
 * then where the procedure's results start. What the side services ask of
 * every reply whose results they read (GETPORT, NLM results).
 */
bool rpc_reply_results(const uint8_t *msg, size_t len, size_t *results_off);
/*
 * A reply that refuses the call for good: MSG_DENIED (RPC version, auth),
 * or accepted with PROG_UNAVAIL, PROG_MISMATCH, PROC_UNAVAIL or
 * GARBAGE_ARGS. Sending the same call again gets the same answer. False for
 * SUCCESS, SYSTEM_ERR (the server's memory, for now) and anything that does
 * not decode as a reply.
 */
bool rpc_reply_refused(const uint8_t *msg, size_t len);

#endif
