/* SPDX-License-Identifier: MIT */
/*
 * ulb-rules/rpc_msg.c - RPC message header access and error replies.
 *
 * The parsers below run once per message and use common/xdr.h word loads:
 * an XDR stream would cost an indirect call per word and a setup per
 * message, more than the parse itself. The builders run only when the
 * gateway answers a call itself, so they use libtirpc's xdr_replymsg.
 */
#include <rpc/rpc.h>

#include "common/xdr.h"
#include "ulb-rules/rpc_msg.h"

bool rpc_msg_peek(const uint8_t *msg, size_t len, uint32_t *xid, uint32_t *msg_type)
{
	if (len < 8)
		return false;
	*xid = xdr_get32(msg);
	*msg_type = xdr_get32(msg + 4);
	return true;
}

/*
 * An opaque_auth at @pos: flavor, then a body of at most 400 bytes.
 * Returns the offset after it, or 0 when it does not fit or is too long.
 */
static uint32_t rpc_skip_auth(const uint8_t *msg, uint32_t len, uint32_t pos, uint32_t *flavor,
			      uint32_t *body_off, uint32_t *body_len)
{
	if (len - pos < 8)
		return 0;
	*flavor = xdr_get32(msg + pos);
	*body_len = xdr_get32(msg + pos + 4);
	*body_off = pos + 8;
	if (*body_len > RPC_MAX_AUTH_BYTES || xdr_align(*body_len) > len - pos - 8)
		return 0;
	return pos + 8 + xdr_align(*body_len);
}

enum rpc_hdr_status rpc_call_hdr_parse(const uint8_t *msg, size_t len, struct rpc_call_hdr *hdr)
{
	/* xid, msg_type, rpcvers, prog, vers, proc: the fixed part */
	if (len < 24)
		return RPC_HDR_SHORT;
	if (len > UINT32_MAX)
		len = UINT32_MAX; /* positions are 32-bit; nothing that long is parsed further */
	hdr->xid = xdr_get32(msg);
	if (xdr_get32(msg + 4) != RPC_MSG_CALL)
		return RPC_HDR_NOT_CALL;
	hdr->rpcvers = xdr_get32(msg + 8);
	hdr->prog = xdr_get32(msg + 12);
	hdr->vers = xdr_get32(msg + 16);
	hdr->proc = xdr_get32(msg + 20);
	if (hdr->rpcvers != RPC_VERSION)
		return RPC_HDR_BAD_RPCVERS;

	uint32_t pos = rpc_skip_auth(msg, (uint32_t)len, 24, &hdr->cred_flavor, &hdr->cred_off,
				     &hdr->cred_len);
	if (pos == 0)
		return RPC_HDR_BAD_CRED;
	pos = rpc_skip_auth(msg, (uint32_t)len, pos, &hdr->verf_flavor, &hdr->verf_off,
			    &hdr->verf_len);
	if (pos == 0)
		return RPC_HDR_BAD_CRED;
	hdr->args_off = pos;
	return RPC_HDR_OK;
}

bool rpc_reply_hdr_parse(const uint8_t *msg, size_t len, struct rpc_reply_hdr *hdr)
{
	if (len < 16)
		return false;
	if (len > UINT32_MAX)
		len = UINT32_MAX;
	hdr->xid = xdr_get32(msg);
	if (xdr_get32(msg + 4) != RPC_MSG_REPLY)
		return false;
	hdr->reply_stat = xdr_get32(msg + 8);
	hdr->verf_flavor = 0;
	hdr->verf_len = 0;
	hdr->results_off = 0;
	if (hdr->reply_stat == RPC_MSG_DENIED) {
		hdr->stat = xdr_get32(msg + 12);
		return true;
	}
	if (hdr->reply_stat != RPC_MSG_ACCEPTED)
		return false;

	uint32_t body_off;
	uint32_t pos =
		rpc_skip_auth(msg, (uint32_t)len, 12, &hdr->verf_flavor, &body_off, &hdr->verf_len);
	if (pos == 0 || len - pos < 4)
		return false;
	hdr->stat = xdr_get32(msg + pos);
	hdr->results_off = pos + 4;
	return true;
}

/* Encode @rm with libtirpc into @buf; 0 when it does not fit. */
static size_t rpc_encode_reply(void *buf, size_t cap, struct rpc_msg *rm)
{
	XDR xdrs;
	size_t n = 0;

	if (cap > UINT32_MAX)
		cap = UINT32_MAX;
	xdrmem_create(&xdrs, buf, (u_int)cap, XDR_ENCODE);
	if (xdr_replymsg(&xdrs, rm))
		n = xdr_getpos(&xdrs);
	xdr_destroy(&xdrs);
	return n;
}

size_t rpc_build_accepted_error(void *buf, size_t cap, uint32_t xid, enum rpc_accept_stat stat,
				uint32_t low, uint32_t high)
{
	struct rpc_msg rm = { 0 };

	/* xdr_replymsg would call a results encoder for SUCCESS: not an error */
	if (stat == RPC_ACC_SUCCESS)
		return 0;
	rm.rm_xid = xid;
	rm.rm_direction = REPLY;
	rm.rm_reply.rp_stat = MSG_ACCEPTED;
	rm.acpted_rply.ar_verf = _null_auth;
	rm.acpted_rply.ar_stat = (enum accept_stat)stat;
	if (stat == RPC_ACC_PROG_MISMATCH) {
		rm.acpted_rply.ar_vers.low = low;
		rm.acpted_rply.ar_vers.high = high;
	}
	return rpc_encode_reply(buf, cap, &rm);
}

size_t rpc_build_rejected(void *buf, size_t cap, uint32_t xid, enum rpc_reject_stat stat,
			  enum rpc_auth_stat why)
{
	struct rpc_msg rm = { 0 };

	rm.rm_xid = xid;
	rm.rm_direction = REPLY;
	rm.rm_reply.rp_stat = MSG_DENIED;
	rm.rjcted_rply.rj_stat = (enum reject_stat)stat;
	if (stat == RPC_REJ_RPC_MISMATCH) {
		rm.rjcted_rply.rj_vers.low = RPC_VERSION;
		rm.rjcted_rply.rj_vers.high = RPC_VERSION;
	} else {
		rm.rjcted_rply.rj_why = (enum auth_stat)why;
	}
	return rpc_encode_reply(buf, cap, &rm);
}
