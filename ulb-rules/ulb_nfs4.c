/* SPDX-License-Identifier: MIT */
/*
 * ulb-rules/ulb_nfs4.c - the NFSv4 COMPOUND walker (RFC 7530, 8881, 7862;
 * DDP rules in RFC 8267 section 5).
 *
 * A COMPOUND is a counted array of operations whose argument (and result)
 * layouts depend on each operation number, which a static shape cannot
 * express. This walker reads the operation numbers and applies each
 * operation's compiled shape from the rule files. An operation without a
 * rule makes the rest of the message unknown: the call then has no DDP
 * items at all (it travels as a long message); a reply keeps the items found
 * before it.
 *
 * Sessions: the first operation's SEQUENCE session id selects the session's
 * ca_maxresponsesize for the reply bound; CREATE_SESSION results add a
 * session to the connection's table, DESTROY_SESSION removes it, and a
 * BIND_CONN_TO_SESSION whose result includes the back channel gives the
 * connection that channel (backward calls on a shared route are routed by
 * it). The fields are read at their fixed places after the shape walk has
 * checked the operation's layout.
 *
 * Replies are walked one result at a time (ulb_nfs4_next_result), so that
 * ulb_clamp.c finds the results whose sizes it lowers by the same walk.
 */
#include <string.h>

#include "common/xdr.h"
#include "ulb-rules/ulb_impl.h"

enum {
	OP_GETATTR = 9,
	OP_BIND_CONN_TO_SESSION = 41,
	OP_CREATE_SESSION = 43,
	OP_DESTROY_SESSION = 44,
	OP_SEQUENCE = 53,
	OP_ILLEGAL = 10044,
	NFS4_OK = 0,
	/* channel_dir_from_server4 (RFC 8881 section 18.34) */
	CDFS4_BACK = 2,
	CDFS4_BOTH = 3,
};

/*
 * Attributes whose values have no size a rule can estimate: an ACL (as many
 * ACEs as the file has; dacl and sacl too), fs_locations(_info) (server
 * names and paths), a security label. A GETATTR that asks for one makes the
 * reply unbounded (the default bound, a Reply chunk in forward mode): the
 * Linux server sends a reply that exceeds the inline threshold inline all
 * the same when no Reply chunk is offered, and the requester's receive
 * fails (the connection dies, and with it every retransmission).
 */
static const uint32_t unbounded_attrs[] = { 12 /* acl */,
					    24 /* fs_locations */,
					    58 /* dacl */,
					    59 /* sacl */,
					    67 /* fs_locations_info */,
					    80 /* sec_label */ };

/* Does the bitmap4 at @p (@len bytes, already walked) ask for any of them? */
static bool bitmap_unbounded(const uint8_t *p, size_t len)
{
	uint32_t words = len >= 4 ? xdr_get32(p) : 0;

	for (size_t i = 0; i < sizeof(unbounded_attrs) / sizeof(unbounded_attrs[0]); i++) {
		uint32_t bit = unbounded_attrs[i];
		size_t word = 4 + 4 * (size_t)(bit / 32); /* after the count */
		if (bit / 32 < words && word + 4 <= len &&
		    (xdr_get32(p + word) & (1u << (bit % 32))))
			return true;
	}
	return false;
}

/* Attributes whose values ulb_clamp_reply() lowers: maxread (30), maxwrite (31). */
#define SIZE_ATTRS_WORD0 (1u << 30 | 1u << 31)

/* Does the bitmap4 at @p (@len bytes, already walked) ask for maxread or maxwrite? */
static bool bitmap_asks_sizes(const uint8_t *p, size_t len)
{
	return len >= 8 && xdr_get32(p) >= 1 && (xdr_get32(p + 4) & SIZE_ATTRS_WORD0);
}

/* BIND_CONN_TO_SESSION4resok: bctsr_sessid, bctsr_dir, bctsr_use_conn_in_rdma_mode. */
#define BCTS_DIR_OFF   ULB_SESSIONID_SIZE
#define BCTS_RESOK_LEN (ULB_SESSIONID_SIZE + 4 + 4)

static const struct ulb_proc *nfs4_op(const struct ulb_version *v, uint32_t op)
{
	if (op >= v->n_ops || !v->ops[op].present)
		return NULL;
	return &v->ops[op];
}

/* The COMPOUND tag (an opaque of no declared maximum). */
static bool skip_tag(struct ulb_walk *w, uint32_t *taglen)
{
	if (w->len - w->pos < 4)
		return false;
	uint32_t len = xdr_get32(w->msg + w->pos);
	w->pos += 4;
	if (len > w->len - w->pos || xdr_align(len) > w->len - w->pos)
		return false;
	w->pos += xdr_align(len);
	*taglen = len;
	return true;
}

/* No operation is shorter than its 4-byte number: a count larger than the
 * words left is a lie, refused before the loop. */
static bool read_count(struct ulb_walk *w, uint32_t *count)
{
	if (w->len - w->pos < 4)
		return false;
	*count = xdr_get32(w->msg + w->pos);
	w->pos += 4;
	return *count <= (w->len - w->pos) / 4;
}

/*
 * Operations that only read (RFC 7530, 8881, 7862, 8276): the rest change
 * state, or make the server hand out state (OPEN, LOCK, LAYOUTGET...).
 * SEQUENCE is here: a repeated one is a replay, answered from the slot.
 */
static bool nfs4_op_reads_only(uint32_t op)
{
	switch (op) {
	case 3:	 /* ACCESS */
	case 9:	 /* GETATTR */
	case 10: /* GETFH */
	case 15: /* LOOKUP */
	case 16: /* LOOKUPP */
	case 17: /* NVERIFY */
	case 22: /* PUTFH */
	case 23: /* PUTPUBFH */
	case 24: /* PUTROOTFH */
	case 25: /* READ */
	case 26: /* READDIR */
	case 27: /* READLINK */
	case 31: /* RESTOREFH */
	case 32: /* SAVEFH */
	case 33: /* SECINFO */
	case 37: /* VERIFY */
	case 52: /* SECINFO_NO_NAME */
	case 53: /* SEQUENCE */
	case 68: /* READ_PLUS */
	case 69: /* SEEK */
	case 72: /* GETXATTR */
	case 73: /* LISTXATTRS */
		return true;
	default:
		return false;
	}
}

static void stop_ddp(const struct ulb_version *v, const struct ulb_sessions *sessions, uint32_t op,
		     uint32_t extra, struct ulb_call *call)
{
	call->status = ULB_DDP_STOPPED;
	call->stop_op = op;
	call->n_args = 0;
	call->n_results = 0;
	call->result_opaque = 0;
	ulb_counters.ddp_stopped++;
	uint32_t maxresp = call->has_sequence && sessions
				   ? ulb_sessions_maxresp(sessions, call->sessionid)
				   : 0;
	if (maxresp) {
		call->reply_max = maxresp;
		call->reply_exact = true;
	} else {
		ulb_set_reply_bound(call, call->rules, 0, true, true, extra);
	}
	(void)v;
}

void ulb_nfs4_parse_call(const struct ulb_version *v, const struct ulb_sessions *sessions,
			 struct ulb_walk *w, uint32_t extra, struct ulb_call *call)
{
	uint32_t taglen, nops;
	bool sizes = false; /* an operation whose result advertises sizes */

	if (!skip_tag(w, &taglen) || w->len - w->pos < 4) {
		call->status = ULB_GARBAGE_ARGS;
		return;
	}
	call->minorversion = xdr_get32(w->msg + w->pos);
	w->pos += 4;
	if (!read_count(w, &nops)) {
		call->status = ULB_GARBAGE_ARGS;
		return;
	}
	call->nops = nops;

	/* COMPOUND4res: status, tag (echoed), count, then each result */
	uint64_t body = 4 + 4 + (uint64_t)xdr_align(taglen) + 4;
	bool estimate = false, unbounded = false;
	for (uint32_t i = 0; i < nops; i++) {
		if (w->len - w->pos < 4) {
			call->status = ULB_GARBAGE_ARGS;
			return;
		}
		uint32_t op = xdr_get32(w->msg + w->pos);
		w->pos += 4;
		if (!nfs4_op_reads_only(op))
			call->nfs4_mutates = true;
		const struct ulb_proc *p = nfs4_op(v, op);
		if (!p) {
			/* the results before this one are still walked */
			call->advertises_sizes = sizes && ulb_plain_body(call);
			stop_ddp(v, sessions, op, extra, call);
			return;
		}
		uint32_t start = w->pos;
		ulb_walk_reset_values(w);
		if (!ulb_walk_node(w, p->args)) {
			call->status = ULB_GARBAGE_ARGS;
			return;
		}
		if (w->pos - start >= ULB_SESSIONID_SIZE) {
			if (op == OP_SEQUENCE && i == 0) {
				memcpy(call->sessionid, w->msg + start, ULB_SESSIONID_SIZE);
				call->has_sequence = true;
			} else if (op == OP_DESTROY_SESSION) {
				memcpy(call->destroy_id, w->msg + start, ULB_SESSIONID_SIZE);
				call->destroys_session = true;
			} else if (op == OP_BIND_CONN_TO_SESSION) {
				memcpy(call->bind_id, w->msg + start, ULB_SESSIONID_SIZE);
				call->binds_session = true;
			}
		}
		if (w->collect)
			ulb_expect_results(p, w->values, call);
		body += ulb_bound_eval(&p->reply, w->values, &estimate, &unbounded);
		if (op == OP_GETATTR) {
			if (bitmap_unbounded(w->msg + start, w->pos - start))
				unbounded = true;
			if (bitmap_asks_sizes(w->msg + start, w->pos - start))
				sizes = true;
		} else if (op == OP_CREATE_SESSION) {
			sizes = true;
		}
	}
	call->advertises_sizes = sizes && ulb_plain_body(call);

	for (uint8_t i = 0; i < w->n_items; i++) {
		call->args[i].offset = w->items[i].offset;
		call->args[i].length = w->items[i].length;
	}
	call->n_args = w->n_items;
	ulb_set_reply_bound(call, call->rules, body, estimate, unbounded, extra);

	/* RFC 8267: NFSv4.1 and later bound replies by ca_maxresponsesize */
	uint32_t maxresp = call->has_sequence && sessions
				   ? ulb_sessions_maxresp(sessions, call->sessionid)
				   : 0;
	if (maxresp && (!call->reply_exact || call->reply_max > maxresp)) {
		call->reply_max = maxresp;
		call->reply_exact = true;
	}
}

/*
 * A successful BIND_CONN_TO_SESSION: when the server bound the connection
 * to the session's back channel (CDFS4_BACK or CDFS4_BOTH; a fore-channel
 * bind moves no callbacks), the connection holds it now, and @reply says so
 * for the engine to take it from the route's other clients. The session must
 * be the one the call named: a reply that names another is not believed.
 */
static void track_bind(const uint8_t *res, uint32_t res_len, const struct ulb_call *call,
		       struct ulb_sessions *sessions, struct ulb_reply *reply)
{
	if (res_len < BCTS_RESOK_LEN || !call->binds_session ||
	    memcmp(res, call->bind_id, ULB_SESSIONID_SIZE) != 0)
		return;
	uint32_t dir = xdr_get32(res + BCTS_DIR_OFF);
	if (dir != CDFS4_BACK && dir != CDFS4_BOTH)
		return;
	ulb_sessions_bind_back(sessions, res);
	reply->binds_back = true;
	memcpy(reply->bound_id, res, ULB_SESSIONID_SIZE);
}

/* Note what a successful CREATE_SESSION, BIND_CONN_TO_SESSION or DESTROY_SESSION changed. */
static void track_session(const struct ulb_walk *w, uint32_t op, uint32_t start,
			  const struct ulb_call *call, struct ulb_sessions *sessions,
			  struct ulb_reply *reply)
{
	const uint8_t *res = w->msg + start + 4; /* after the status */

	if (op == OP_CREATE_SESSION && w->pos - start >= 4 + ULB_CS_MAXRESP_OFF + 4)
		ulb_sessions_add(sessions, res, xdr_get32(res + ULB_CS_MAXRESP_OFF));
	else if (op == OP_BIND_CONN_TO_SESSION)
		track_bind(res, w->pos - start - 4, call, sessions, reply);
	else if (op == OP_DESTROY_SESSION && call->destroys_session) {
		ulb_sessions_remove(sessions, call->destroy_id);
		reply->destroys = true;
		memcpy(reply->destroyed_id, call->destroy_id, ULB_SESSIONID_SIZE);
	}
}

bool ulb_nfs4_reply_head(struct ulb_walk *w, uint32_t *status, uint32_t *nres)
{
	uint32_t taglen;

	if (w->len - w->pos < 4)
		return false;
	*status = xdr_get32(w->msg + w->pos);
	w->pos += 4;
	return skip_tag(w, &taglen) && read_count(w, nres);
}

enum ulb_nfs4_step ulb_nfs4_next_result(const struct ulb_version *v, struct ulb_walk *w,
					uint32_t *op, uint32_t *start)
{
	if (w->len - w->pos < 8)
		return ULB_NFS4_GARBAGE;
	*op = xdr_get32(w->msg + w->pos);
	w->pos += 4;
	if (*op == OP_ILLEGAL) {
		/* ILLEGAL4res is a status; it ends the COMPOUND */
		w->pos += 4;
		return ULB_NFS4_END;
	}
	const struct ulb_proc *p = v ? nfs4_op(v, *op) : NULL;
	if (!p)
		return ULB_NFS4_STOPPED;
	*start = w->pos;
	if (!ulb_walk_node(w, p->results) || w->pos - *start < 4)
		return ULB_NFS4_GARBAGE;
	if (xdr_get32(w->msg + *start) != NFS4_OK)
		return ULB_NFS4_END; /* the COMPOUND stopped at this operation */
	return ULB_NFS4_RESULT;
}

void ulb_nfs4_parse_reply(const struct ulb_version *v, const struct ulb_call *call,
			  struct ulb_sessions *sessions, struct ulb_walk *w,
			  struct ulb_reply *reply)
{
	uint32_t nres, op, start;

	if (!ulb_nfs4_reply_head(w, &reply->nfs4_status, &nres)) {
		reply->status = ULB_REPLY_GARBAGE;
		return;
	}
	for (uint32_t i = 0; i < nres; i++) {
		switch (ulb_nfs4_next_result(v, w, &op, &start)) {
		case ULB_NFS4_RESULT:
			if (sessions)
				track_session(w, op, start, call, sessions, reply);
			break;
		case ULB_NFS4_END:
			return;
		case ULB_NFS4_STOPPED:
			reply->status = ULB_REPLY_STOPPED;
			reply->stop_op = op;
			return;
		case ULB_NFS4_GARBAGE:
			reply->status = ULB_REPLY_GARBAGE;
			return;
		}
	}
}
