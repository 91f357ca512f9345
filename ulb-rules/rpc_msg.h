/* SPDX-License-Identifier: MIT */
/*
 * ulb-rules/rpc_msg.h - ONC RPC message headers (RFC 5531): peek at them on
 * the data path, and build the few error replies the gateway answers itself.
 *
 * Peeking and header parsing run for every message, so they use the inline
 * word loads of common/xdr.h and never allocate. Error replies are rare
 * (GARBAGE_ARGS for a call the ULB cannot parse, PROG_UNAVAIL, a denied
 * RPC_MISMATCH...) and are encoded with libtirpc's xdr_replymsg into a
 * caller buffer, so that their layout is the reference implementation's.
 *
 * Offsets are from the first byte of the RPC message (the XID), which is
 * also how RPC-over-RDMA counts Read chunk positions.
 */
#ifndef GW_ULB_RPC_MSG_H
#define GW_ULB_RPC_MSG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum {
	RPC_MSG_CALL = 0,
	RPC_MSG_REPLY = 1,
	RPC_VERSION = 2,
	RPC_MAX_AUTH_BYTES = 400,
};

/* Authentication flavors the gateway distinguishes. */
enum {
	RPC_AUTH_NONE = 0,
	RPC_AUTH_SYS = 1,
	RPC_AUTH_SHORT = 2,
	RPC_AUTH_DH = 3,
	RPC_AUTH_GSS = 6, /* RPCSEC_GSS, RFC 2203 */
	RPC_AUTH_TLS = 7, /* RFC 9289 */
};

/* RPCSEC_GSS credential fields (RFC 2203 section 5). */
enum {
	RPC_GSS_PROC_DATA = 0,
	RPC_GSS_PROC_INIT = 1,
	RPC_GSS_PROC_CONTINUE_INIT = 2,
	RPC_GSS_PROC_DESTROY = 3,
	RPC_GSS_SVC_NONE = 1,
	RPC_GSS_SVC_INTEGRITY = 2,
	RPC_GSS_SVC_PRIVACY = 3,
};

/* reply_stat, accept_stat, reject_stat, auth_stat (RFC 5531 section 9). */
enum {
	RPC_MSG_ACCEPTED = 0,
	RPC_MSG_DENIED = 1,
};
enum rpc_accept_stat {
	RPC_ACC_SUCCESS = 0,
	RPC_ACC_PROG_UNAVAIL = 1,
	RPC_ACC_PROG_MISMATCH = 2,
	RPC_ACC_PROC_UNAVAIL = 3,
	RPC_ACC_GARBAGE_ARGS = 4,
	RPC_ACC_SYSTEM_ERR = 5,
};
enum rpc_reject_stat {
	RPC_REJ_RPC_MISMATCH = 0,
	RPC_REJ_AUTH_ERROR = 1,
};
enum rpc_auth_stat {
	RPC_AUTHSTAT_OK = 0,
	RPC_AUTHSTAT_BADCRED = 1,
	RPC_AUTHSTAT_REJECTEDCRED = 2,
	RPC_AUTHSTAT_BADVERF = 3,
	RPC_AUTHSTAT_REJECTEDVERF = 4,
	RPC_AUTHSTAT_TOOWEAK = 5,
};

/*
 * The first two words of any RPC message. False when @len < 8.
 */
bool rpc_msg_peek(const uint8_t *msg, size_t len, uint32_t *xid, uint32_t *msg_type);

/* What rpc_call_hdr_parse found wrong, in the order it checks. */
enum rpc_hdr_status {
	RPC_HDR_OK = 0,
	RPC_HDR_SHORT,	     /* fewer bytes than the fixed part of a call header */
	RPC_HDR_NOT_CALL,    /* msg_type is not CALL */
	RPC_HDR_BAD_RPCVERS, /* rpcvers != 2: answer denied RPC_MISMATCH (2, 2) */
	RPC_HDR_BAD_CRED,    /* credential or verifier longer than allowed or than the message */
};

struct rpc_call_hdr {
	uint32_t xid;
	uint32_t rpcvers;
	uint32_t prog;
	uint32_t vers;
	uint32_t proc;
	uint32_t cred_flavor;
	uint32_t cred_off; /* offset of the credential body */
	uint32_t cred_len;
	uint32_t verf_flavor;
	uint32_t verf_off;
	uint32_t verf_len;
	uint32_t args_off; /* offset of the procedure arguments */
};

/*
 * Parse a call header. On RPC_HDR_BAD_RPCVERS and RPC_HDR_BAD_CRED the XID
 * and the fields before the fault are valid, so the caller can answer.
 */
enum rpc_hdr_status rpc_call_hdr_parse(const uint8_t *msg, size_t len, struct rpc_call_hdr *hdr);

/* What rpc_reply_hdr_parse found. */
struct rpc_reply_hdr {
	uint32_t xid;
	uint32_t reply_stat;  /* RPC_MSG_ACCEPTED or RPC_MSG_DENIED */
	uint32_t stat;	      /* accept_stat, or reject_stat when denied */
	uint32_t verf_flavor; /* accepted replies */
	uint32_t verf_len;
	uint32_t results_off; /* accepted SUCCESS: offset of the results */
};

/*
 * Parse a reply header up to the results. False when the message is not a
 * well-formed reply header (too short, not REPLY, unknown reply_stat, a
 * verifier longer than allowed).
 */
bool rpc_reply_hdr_parse(const uint8_t *msg, size_t len, struct rpc_reply_hdr *hdr);

/*
 * Encode an accepted reply with @stat (not RPC_ACC_SUCCESS) and an AUTH_NONE
 * verifier; @low/@high are the supported versions for RPC_ACC_PROG_MISMATCH and
 * ignored otherwise. Returns the message length, or 0 when @cap is too
 * small. The caller adds the record mark or transport header.
 *
 * An RPCSEC_GSS caller will not accept the AUTH_NONE verifier; the gateway
 * holds no GSS context and cannot make a better one, and the client then
 * treats the call as failed, which is what the error means anyway.
 */
size_t rpc_build_accepted_error(void *buf, size_t cap, uint32_t xid, enum rpc_accept_stat stat,
				uint32_t low, uint32_t high);

/* Encode a denied reply: RPC_MISMATCH (2, 2) when @stat is RPC_REJ_RPC_MISMATCH,
 * AUTH_ERROR with @why otherwise. Returns the length, or 0 when too small. */
size_t rpc_build_rejected(void *buf, size_t cap, uint32_t xid, enum rpc_reject_stat stat,
			  enum rpc_auth_stat why);

#endif
