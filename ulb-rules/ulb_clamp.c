/* SPDX-License-Identifier: MIT */
/*
 * ulb-rules/ulb_clamp.c - lower, in the reply on its way to the client, the
 * I/O and message sizes an NFS server advertises to what the route carries.
 *
 * A Linux NFS server may advertise a larger rsize/wsize than a gateway route
 * can carry (its largest record). The client believes the server, sends
 * WRITEs the route cannot take, and hangs. The sizes are advertised in few
 * places: NFSv3 FSINFO, the NFSv4 maxread and maxwrite attributes of a
 * GETATTR, and the fore channel of an NFSv4.1 CREATE_SESSION. Lowering them
 * there makes the client size its requests to the route.
 *
 * Only the values change, in place: the message keeps its length and
 * layout, so nothing else in it (or in the transport header) moves. The
 * results are found by the same walks as ulb_parse_reply (the compiled
 * shapes, ulb_nfs4_next_result), so a reply that does not walk, or the part
 * of a COMPOUND after an operation that failed, is left alone. Values are
 * located first and written only when everything up to them has checked
 * out: a GETATTR whose attributes do not walk changes nothing.
 *
 * Runs only for calls whose reply can carry such sizes
 * (call->advertises_sizes, set by the call parsers), which are rare: mount
 * time and the client's periodic server probes. Nothing is allocated.
 */
#include <string.h>

#include "common/xdr.h"
#include "ulb-rules/rpc_msg.h"
#include "ulb-rules/ulb_impl.h"

enum {
	NFS_PROG = 100003,
	NFS3_FSINFO = 19,
	NFS3_OK = 0,
	NFS3_FATTR3_SIZE = 84,
	/* FSINFO3resok after obj_attributes: rtmax, rtpref, rtmult, wtmax,
	 * wtpref, wtmult, dtpref, maxfilesize (8), time_delta (8), properties */
	NFS3_FSINFO_RESOK_SIZE = 7 * 4 + 8 + 8 + 4,
	OP_GETATTR = 9,
	OP_CREATE_SESSION = 43,
	FATTR4_MAXREAD = 30,
	FATTR4_MAXWRITE = 31,
	NFS4_FHSIZE = 128,
};

static const char *const field_names[ULB_CLAMP_NFIELDS] = {
	[ULB_CLAMP_RTMAX] = "rtmax",
	[ULB_CLAMP_RTPREF] = "rtpref",
	[ULB_CLAMP_WTMAX] = "wtmax",
	[ULB_CLAMP_WTPREF] = "wtpref",
	[ULB_CLAMP_DTPREF] = "dtpref",
	[ULB_CLAMP_MAXREAD] = "maxread",
	[ULB_CLAMP_MAXWRITE] = "maxwrite",
	[ULB_CLAMP_MAXREQ] = "ca_maxrequestsize",
	[ULB_CLAMP_MAXRESP] = "ca_maxresponsesize",
	[ULB_CLAMP_MAXRESP_CACHED] = "ca_maxresponsesize_cached",
};

const char *ulb_clamp_field_name(enum ulb_clamp_field f)
{
	if ((unsigned)f >= ULB_CLAMP_NFIELDS)
		return "unknown";
	return field_names[f];
}

/* A field seen again (a second GETATTR) keeps its first report. */
static void note(struct ulb_clamp_report *rep, enum ulb_clamp_field f, uint64_t advertised,
		 uint64_t clamped)
{
	if (rep->fields & (1u << f))
		return;
	rep->fields |= 1u << f;
	rep->advertised[f] = advertised;
	rep->clamped[f] = clamped;
}

/* Lower the 32-bit value at @p (checked in bounds by the caller) to @cap. */
static void clamp32(uint8_t *p, uint32_t cap, enum ulb_clamp_field f, struct ulb_clamp_report *rep)
{
	uint32_t v = xdr_get32(p);

	if (cap == 0 || v <= cap)
		return;
	xdr_put32(p, cap);
	note(rep, f, v, cap);
}

static void clamp64(uint8_t *p, uint32_t cap, enum ulb_clamp_field f, struct ulb_clamp_report *rep)
{
	uint64_t v = xdr_get64(p);

	if (cap == 0 || v <= cap)
		return;
	xdr_put64(p, cap);
	note(rep, f, v, cap);
}

/* ---- NFSv3 FSINFO (RFC 1813 section 3.3.19) ---- */

static void clamp_fsinfo(uint8_t *msg, uint32_t len, uint32_t pos, const struct ulb_size_caps *caps,
			 struct ulb_clamp_report *rep)
{
	/* status, post_op_attr's discriminant */
	if (len - pos < 8 || xdr_get32(msg + pos) != NFS3_OK)
		return;
	uint32_t attrs = xdr_get32(msg + pos + 4);
	pos += 8;
	if (attrs > 1)
		return;
	if (attrs) {
		if (len - pos < NFS3_FATTR3_SIZE)
			return;
		pos += NFS3_FATTR3_SIZE;
	}
	if (len - pos < NFS3_FSINFO_RESOK_SIZE)
		return;
	uint8_t *r = msg + pos;
	clamp32(r + 0, caps->io_max, ULB_CLAMP_RTMAX, rep);
	clamp32(r + 4, caps->io_max, ULB_CLAMP_RTPREF, rep);
	/* rtmult at 8 and wtmult at 20 are alignments, not sizes */
	clamp32(r + 12, caps->io_max, ULB_CLAMP_WTMAX, rep);
	clamp32(r + 16, caps->io_max, ULB_CLAMP_WTPREF, rep);
	clamp32(r + 24, caps->io_max, ULB_CLAMP_DTPREF, rep);
}

/* ---- NFSv4 GETATTR: fattr4 (RFC 7530 section 5, RFC 8881 section 5) ---- */

/*
 * A cursor over an attrlist4. Each step checks what it takes against what
 * is left, and each takes at least one XDR unit, so loops over counts the
 * peer claims end with the attrlist.
 */
struct cur {
	const uint8_t *p;
	uint32_t pos;
	uint32_t end;
};

static bool cur_skip(struct cur *c, uint32_t n)
{
	if (n > c->end - c->pos)
		return false;
	c->pos += n;
	return true;
}

static bool cur_u32(struct cur *c, uint32_t *v)
{
	if (c->end - c->pos < 4)
		return false;
	*v = xdr_get32(c->p + c->pos);
	c->pos += 4;
	return true;
}

/* A count of elements of at least 4 bytes each: more than the bytes left is a lie. */
static bool cur_count(struct cur *c, uint32_t *n)
{
	return cur_u32(c, n) && *n <= (c->end - c->pos) / 4;
}

static bool cur_opaque(struct cur *c, uint32_t max)
{
	uint32_t n;

	/* the data and its pad, counted wide: a length near 2^32 must not wrap */
	if (!cur_u32(c, &n) || n > max || ((uint64_t)n + 3) / 4 * 4 > c->end - c->pos)
		return false;
	c->pos += xdr_align(n);
	return true;
}

/* An array of opaques: pathname4 (component4<>), or fs_location4's server<>. */
static bool cur_opaques(struct cur *c)
{
	uint32_t n;

	if (!cur_count(c, &n))
		return false;
	for (uint32_t i = 0; i < n; i++)
		if (!cur_opaque(c, UINT32_MAX))
			return false;
	return true;
}

/* acl: nfsace4<>, each type, flag, access_mask, who (utf8str_mixed). */
static bool cur_acl(struct cur *c)
{
	uint32_t n;

	if (!cur_count(c, &n))
		return false;
	for (uint32_t i = 0; i < n; i++)
		if (!cur_skip(c, 12) || !cur_opaque(c, UINT32_MAX))
			return false;
	return true;
}

/* fs_locations4: fs_root, then fs_location4<>, each server<> and rootpath. */
static bool cur_fs_locations(struct cur *c)
{
	uint32_t n;

	if (!cur_opaques(c) || !cur_count(c, &n))
		return false;
	for (uint32_t i = 0; i < n; i++) {
		if (!cur_opaques(c)) /* server<> */
			return false;
		if (!cur_opaques(c)) /* rootpath */
			return false;
	}
	return true;
}

/*
 * Encoded size of the word-0 attributes before maxread with a fixed one; 0
 * for the variable ones, which step_attr() walks.
 */
static const uint8_t attr_size[FATTR4_MAXREAD] = {
	[1] = 4,  /* type */
	[2] = 4,  /* fh_expire_type */
	[3] = 8,  /* change */
	[4] = 8,  /* size */
	[5] = 4,  /* link_support */
	[6] = 4,  /* symlink_support */
	[7] = 4,  /* named_attr */
	[8] = 16, /* fsid */
	[9] = 4,  /* unique_handles */
	[10] = 4, /* lease_time */
	[11] = 4, /* rdattr_error */
	[13] = 4, /* aclsupport */
	[14] = 4, /* archive */
	[15] = 4, /* cansettime */
	[16] = 4, /* case_insensitive */
	[17] = 4, /* case_preserving */
	[18] = 4, /* chown_restricted */
	[20] = 8, /* fileid */
	[21] = 8, /* files_avail */
	[22] = 8, /* files_free */
	[23] = 8, /* files_total */
	[25] = 4, /* hidden */
	[26] = 4, /* homogeneous */
	[27] = 8, /* maxfilesize */
	[28] = 4, /* maxlink */
	[29] = 4, /* maxname */
};

static bool step_attr(struct cur *c, uint32_t attr)
{
	switch (attr) {
	case 0: /* supported_attrs: bitmap4 */
	{
		uint32_t n;
		return cur_count(c, &n) && cur_skip(c, 4 * n);
	}
	case 12:
		return cur_acl(c);
	case 19: /* filehandle */
		return cur_opaque(c, NFS4_FHSIZE);
	case 24:
		return cur_fs_locations(c);
	default:
		return cur_skip(c, attr_size[attr]);
	}
}

/*
 * The fattr4 of a successful GETATTR at @pos, within [pos, end) which the
 * shape walk has checked holds a bitmap4 and an opaque attrlist4.
 */
static void clamp_fattr4(uint8_t *msg, uint32_t pos, uint32_t end, const struct ulb_size_caps *caps,
			 struct ulb_clamp_report *rep)
{
	struct cur c = { .p = msg, .pos = pos, .end = end };
	uint32_t words, word0, attrlen;

	if (!cur_count(&c, &words) || words == 0)
		return;
	word0 = xdr_get32(msg + c.pos);
	if (!(word0 & (1u << FATTR4_MAXREAD | 1u << FATTR4_MAXWRITE)) || !cur_skip(&c, 4 * words) ||
	    !cur_u32(&c, &attrlen) || attrlen > c.end - c.pos)
		return;
	/* the attribute values end with the attrlist, not with the result */
	c.end = c.pos + attrlen;
	for (uint32_t a = 0; a < FATTR4_MAXREAD; a++)
		if ((word0 & (1u << a)) && !step_attr(&c, a))
			return;
	bool has_read = word0 & (1u << FATTR4_MAXREAD);
	bool has_write = word0 & (1u << FATTR4_MAXWRITE);
	uint32_t at_read = c.pos;
	if (has_read && !cur_skip(&c, 8))
		return;
	uint32_t at_write = c.pos;
	if (has_write && !cur_skip(&c, 8))
		return;
	/* everything up to the values walked: now they may change */
	if (has_read)
		clamp64(msg + at_read, caps->io_max, ULB_CLAMP_MAXREAD, rep);
	if (has_write)
		clamp64(msg + at_write, caps->io_max, ULB_CLAMP_MAXWRITE, rep);
}

/* ---- NFSv4.1 CREATE_SESSION (RFC 8881 section 18.36) ---- */

static void clamp_create_session(uint8_t *msg, uint32_t pos, uint32_t end,
				 const struct ulb_size_caps *caps, struct ulb_clamp_report *rep)
{
	if (end - pos < ULB_CS_MAXRESP_CACHED_OFF + 4)
		return;
	uint8_t *r = msg + pos;
	clamp32(r + ULB_CS_MAXREQ_OFF, caps->msg_max, ULB_CLAMP_MAXREQ, rep);
	clamp32(r + ULB_CS_MAXRESP_OFF, caps->msg_max, ULB_CLAMP_MAXRESP, rep);
	clamp32(r + ULB_CS_MAXRESP_CACHED_OFF, caps->msg_max, ULB_CLAMP_MAXRESP_CACHED, rep);
}

static void clamp_compound(const struct ulb_call *call, uint8_t *msg, uint32_t len, uint32_t pos,
			   uint32_t moved, const struct ulb_size_caps *caps,
			   struct ulb_clamp_report *rep)
{
	struct ulb_reply_item items[ULB_MAX_ITEMS];
	struct ulb_walk w = {
		.r = call->rules,
		.msg = msg,
		.len = len,
		.pos = pos,
		/* DDP items are collected only so that moved ones are skipped as
		 * ulb_parse_reply skips them */
		.collect = true,
		.moved = moved,
		.items = items,
	};
	const struct ulb_version *v = ulb_find_version(call->rules, call->prog, call->vers);
	uint32_t status, nres, op, start;

	ulb_walk_reset_values(&w);
	if (!v || !ulb_nfs4_reply_head(&w, &status, &nres))
		return;
	for (uint32_t i = 0; i < nres; i++) {
		if (ulb_nfs4_next_result(v, &w, &op, &start) != ULB_NFS4_RESULT)
			return;
		/* the result's status is at start, the resok after it */
		if (op == OP_GETATTR)
			clamp_fattr4(msg, start + 4, w.pos, caps, rep);
		else if (op == OP_CREATE_SESSION)
			clamp_create_session(msg, start + 4, w.pos, caps, rep);
	}
}

uint32_t ulb_clamp_reply(const struct ulb_call *call, uint8_t *msg, size_t len, uint32_t moved,
			 const struct ulb_size_caps *caps, struct ulb_clamp_report *report)
{
	struct ulb_clamp_report local;
	struct rpc_reply_hdr h;
	struct ulb_clamp_report *rep = report ? report : &local;

	rep->fields = 0;
	/* advertises_sizes is only set for a parsed call with a plain body;
	 * the rest is checked again as cheap insurance against a caller's mix-up */
	if (!call->advertises_sizes || !call->rule || !call->rules || !ulb_plain_body(call) ||
	    call->prog != NFS_PROG)
		return 0;
	if (len > UINT32_MAX || !rpc_reply_hdr_parse(msg, len, &h) ||
	    h.reply_stat != RPC_MSG_ACCEPTED || h.stat != RPC_ACC_SUCCESS)
		return 0;
	if (call->vers == 3 && call->proc == NFS3_FSINFO)
		clamp_fsinfo(msg, (uint32_t)len, h.results_off, caps, rep);
	else if (call->rule->compound)
		clamp_compound(call, msg, (uint32_t)len, h.results_off, moved, caps, rep);
	return rep->fields;
}
