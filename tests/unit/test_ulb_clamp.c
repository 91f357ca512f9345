/* SPDX-License-Identifier: MIT */
/*
 * ulb_clamp_reply(): the sizes a server advertises lowered in place to the
 * route's caps. Hand-made replies: NFSv3 FSINFO with and without
 * attributes, NFSv4 GETATTR of maxread/maxwrite behind every kind of word-0
 * attribute, GETATTRs whose attributes lie, CREATE_SESSION, a reduced reply;
 * and which calls say their reply advertises sizes. Every message is an
 * exact-size heap copy (ASan sees a byte read or written past it), and each
 * result is compared byte for byte with what should have changed.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "nfs4_session_msgs.h"

#define IO_MAX	(256u * 1024)
#define MSG_MAX (IO_MAX + 4096)

enum {
	NFS3_FSINFO = 19,
	NFS3_READ = 6,
	NFS3ERR_STALE = 70,
	OP_GETATTR = 9,
	OP_PUTFH = 22,
	OP_READ = 25,
	NFS4ERR_ACCESS = 13,
	A_MAXREAD = 30,
	A_MAXWRITE = 31,
};

static const struct ulb_size_caps caps = { .io_max = IO_MAX, .msg_max = MSG_MAX };
static const uint8_t sid[ULB_SESSIONID_SIZE] = { 0x5e, 1, 2,  3,  4,  5,  6,  7,
						 8,    9, 10, 11, 12, 13, 14, 15 };

static void msg_u64(struct msg *m, uint64_t v)
{
	xdr_put64(m->buf + m->len, v);
	m->len += 8;
}

/* An opaque of @n bytes of @fill, padded. */
static void msg_opaque(struct msg *m, uint8_t fill, uint32_t n)
{
	msg_u32(m, n);
	memset(m->buf + m->len, fill, n);
	memset(m->buf + m->len + n, 0, xdr_pad(n));
	m->len += xdr_align(n);
}

static void reply_rpc(struct msg *m, uint32_t xid)
{
	m->len = 0;
	msg_u32(m, xid);
	msg_u32(m, RPC_MSG_REPLY);
	msg_u32(m, RPC_MSG_ACCEPTED);
	msg_u32(m, RPC_AUTH_NONE);
	msg_u32(m, 0);
	msg_u32(m, RPC_ACC_SUCCESS);
}

/* An NFSv3 call with a 12-byte file handle, AUTH_NONE or RPCSEC_GSS @service. */
static void v3_call(struct msg *m, uint32_t proc, uint32_t flavor, uint32_t service)
{
	m->len = 0;
	msg_u32(m, 0x33);
	msg_u32(m, RPC_MSG_CALL);
	msg_u32(m, RPC_VERSION);
	msg_u32(m, MSG_NFS_PROG);
	msg_u32(m, 3);
	msg_u32(m, proc);
	msg_u32(m, flavor);
	if (flavor == RPC_AUTH_GSS) {
		msg_u32(m, 24); /* version, gss_proc, seq_num, service, handle<4> */
		msg_u32(m, 1);
		msg_u32(m, RPC_GSS_PROC_DATA);
		msg_u32(m, 9);
		msg_u32(m, service);
		msg_opaque(m, 0x48, 4);
		msg_u32(m, RPC_AUTH_GSS);
		msg_opaque(m, 0x4d, 16);
	} else {
		msg_u32(m, 0);
		msg_u32(m, RPC_AUTH_NONE);
		msg_u32(m, 0);
	}
	uint32_t body = m->len;
	if (service == RPC_GSS_SVC_INTEGRITY) {
		msg_u32(m, 0); /* databody_integ length, below */
		msg_u32(m, 9); /* seq_num */
	}
	msg_opaque(m, 0xfe, 12);
	if (proc == NFS3_READ) {
		msg_u64(m, 0);
		msg_u32(m, 65536);
	}
	if (service == RPC_GSS_SVC_INTEGRITY) {
		xdr_put32(m->buf + body, m->len - body - 4);
		msg_opaque(m, 0x4d, 16); /* checksum */
	}
}

/* FSINFO3res, NFS3_OK: rtmax..dtpref from @v (rtmult, wtmult among them). */
static void fsinfo_reply(struct msg *m, bool attrs, const uint32_t v[7])
{
	reply_rpc(m, 0x33);
	msg_u32(m, 0);
	msg_u32(m, attrs);
	if (attrs) {
		memset(m->buf + m->len, 0xa7, 84);
		m->len += 84;
	}
	for (int i = 0; i < 7; i++)
		msg_u32(m, v[i]);
	msg_u64(m, UINT64_MAX >> 1); /* maxfilesize */
	msg_u32(m, 0);		     /* time_delta */
	msg_u32(m, 1);
	msg_u32(m, 0x1b); /* properties */
}

/* A COMPOUND call header (minor version 1) of @nops operations, SEQUENCE first. */
static void v4_call(struct msg *m, uint32_t nops)
{
	msg_call_hdr(m, 0x44, MSG_NFS_PROG, 4, 1);
	msg_u32(m, 1);
	msg_u32(m, nops);
	msg_u32(m, MSG_OP_SEQUENCE);
	msg_sid(m, sid);
	msg_u32(m, 1);
	msg_u32(m, 0);
	msg_u32(m, 0);
	msg_u32(m, 0);
}

static void v4_getattr_call(struct msg *m, uint32_t word0, uint32_t word1)
{
	msg_u32(m, OP_GETATTR);
	msg_u32(m, 2);
	msg_u32(m, word0);
	msg_u32(m, word1);
}

/* A READ operation of @count bytes at offset 0, with the all-zero stateid. */
static void v4_read_call(struct msg *m, uint32_t count)
{
	msg_u32(m, OP_READ);
	memset(m->buf + m->len, 0, 16);
	m->len += 16;
	msg_u64(m, 0);
	msg_u32(m, count);
}

/* A COMPOUND reply of @nres results, the first SEQUENCE's. */
static void v4_reply(struct msg *m, uint32_t nres)
{
	msg_reply_hdr(m, 0x44, 0, nres);
	msg_u32(m, MSG_OP_SEQUENCE);
	msg_u32(m, 0);
	msg_sid(m, sid);
	for (int i = 0; i < 5; i++)
		msg_u32(m, i);
}

/* GETATTR4resok's head: status, bitmap {word0, word1}, the attrlist length (put
 * by getattr_end once known). Returns where the length goes. */
static uint32_t getattr_begin(struct msg *m, uint32_t word0, uint32_t word1)
{
	msg_u32(m, OP_GETATTR);
	msg_u32(m, 0);
	msg_u32(m, 2);
	msg_u32(m, word0);
	msg_u32(m, word1);
	msg_u32(m, 0);
	return m->len - 4;
}

static void getattr_end(struct msg *m, uint32_t at)
{
	xdr_put32(m->buf + at, m->len - at - 4);
}

/* Parse @call; clamp an exact-size copy of @reply with @moved; returns the copy. */
static uint8_t *clamp(const struct ulb_rules *r, const struct msg *call, const struct msg *reply,
		      uint32_t len, uint32_t moved, const struct ulb_size_caps *c,
		      struct ulb_clamp_report *rep, uint32_t *fields)
{
	struct ulb_call u;

	assert_true(msg_parse_call(r, call, &u) == ULB_OK);
	assert_true(u.advertises_sizes);
	uint8_t *p = msg_dup(reply, len);
	assert_non_null(p);
	*fields = ulb_clamp_reply(&u, p, len, moved, c, rep);
	return p;
}

/*
 * Clamping an exact-size copy of the first @len bytes of @reply, as the
 * reply to @call with nothing moved, under the caps @c, changes no field
 * and no byte.
 */
static void assert_unchanged(const struct ulb_rules *r, const struct msg *call,
			     const struct msg *reply, uint32_t len, const struct ulb_size_caps *c,
			     struct ulb_clamp_report *rep)
{
	uint32_t fields;
	uint8_t *p = clamp(r, call, reply, len, 0, c, rep, &fields);

	assert_int_equal(fields, 0);
	assert_memory_equal(p, reply->buf, len);
	free(p);
}

static void assert_field(const struct ulb_clamp_report *rep, enum ulb_clamp_field f,
			 uint64_t advertised, uint64_t clamped)
{
	assert_true(rep->fields & (1u << f));
	assert_int_equal(rep->advertised[f], advertised);
	assert_int_equal(rep->clamped[f], clamped);
}

/* ---- which calls advertise sizes ---- */

static bool advertises(const struct ulb_rules *r, const struct msg *call)
{
	struct ulb_call u;

	msg_parse_call(r, call, &u);
	return u.advertises_sizes;
}

static void test_advertises_sizes(void **state)
{
	const struct ulb_rules *r = *state;
	struct msg m;

	v3_call(&m, NFS3_FSINFO, RPC_AUTH_NONE, 0);
	assert_true(advertises(r, &m));
	/* a file handle longer than the message: the call does not parse */
	m.len -= 4;
	assert_false(advertises(r, &m));
	v3_call(&m, NFS3_READ, RPC_AUTH_NONE, 0);
	assert_false(advertises(r, &m));
	v3_call(&m, NFS3_FSINFO, RPC_AUTH_GSS, RPC_GSS_SVC_NONE);
	assert_true(advertises(r, &m));
	v3_call(&m, NFS3_FSINFO, RPC_AUTH_GSS, RPC_GSS_SVC_INTEGRITY);
	assert_false(advertises(r, &m));
	v3_call(&m, NFS3_FSINFO, RPC_AUTH_GSS, RPC_GSS_SVC_PRIVACY);
	assert_false(advertises(r, &m));

	/* GETATTR of type, size, mode (word 1): no */
	v4_call(&m, 2);
	v4_getattr_call(&m, 1u << 1 | 1u << 4, 1u << 1);
	assert_false(advertises(r, &m));
	/* maxwrite alone, or maxread among others: yes */
	v4_call(&m, 2);
	v4_getattr_call(&m, 1u << A_MAXWRITE, 0);
	assert_true(advertises(r, &m));
	v4_call(&m, 2);
	v4_getattr_call(&m, 1u << 4 | 1u << A_MAXREAD, 1u << 1);
	assert_true(advertises(r, &m));
	/* a bitmap of no words asks for nothing */
	v4_call(&m, 2);
	msg_u32(&m, OP_GETATTR);
	msg_u32(&m, 0);
	assert_false(advertises(r, &m));
	/* a READ */
	v4_call(&m, 2);
	v4_read_call(&m, 4096);
	assert_false(advertises(r, &m));

	msg_create_session_call(&m, 0x45);
	assert_true(advertises(r, &m));
	/* the COMPOUND claims one operation more than it has: garbage */
	v4_call(&m, 3);
	v4_getattr_call(&m, 1u << A_MAXREAD, 0);
	assert_false(advertises(r, &m));
}

/* ---- NFSv3 FSINFO ---- */

static void fsinfo_case(const struct ulb_rules *r, bool attrs)
{
	/* rtmax above, rtpref equal, rtmult above (not a size), wtmax above,
	 * wtpref below, wtmult above, dtpref above */
	const uint32_t adv[7] = {
		1u << 20, IO_MAX, 1u << 20, 4u << 20, 65536, 1u << 20, IO_MAX + 1
	};
	struct msg call, reply, want;
	struct ulb_clamp_report rep;
	uint32_t fields;

	v3_call(&call, NFS3_FSINFO, RPC_AUTH_NONE, 0);
	fsinfo_reply(&reply, attrs, adv);
	uint8_t *p = clamp(r, &call, &reply, reply.len, 0, &caps, &rep, &fields);
	assert_int_equal(fields,
			 1u << ULB_CLAMP_RTMAX | 1u << ULB_CLAMP_WTMAX | 1u << ULB_CLAMP_DTPREF);
	assert_int_equal(rep.fields, fields);
	assert_field(&rep, ULB_CLAMP_RTMAX, 1u << 20, IO_MAX);
	assert_field(&rep, ULB_CLAMP_WTMAX, 4u << 20, IO_MAX);
	assert_field(&rep, ULB_CLAMP_DTPREF, IO_MAX + 1, IO_MAX);

	const uint32_t low[7] = { IO_MAX, IO_MAX, 1u << 20, IO_MAX, 65536, 1u << 20, IO_MAX };
	fsinfo_reply(&want, attrs, low);
	assert_int_equal(want.len, reply.len);
	assert_memory_equal(p, want.buf, want.len);
	free(p);
}

static void test_fsinfo(void **state)
{
	fsinfo_case(*state, true);
	fsinfo_case(*state, false);
}

/* Nothing above the caps, or caps of 0: nothing changes. */
static void test_fsinfo_within_caps(void **state)
{
	const uint32_t adv[7] = { IO_MAX, 4096, 1u << 20, 8192, IO_MAX, 1u << 20, 4096 };
	const struct ulb_size_caps none = { 0, 0 };
	struct msg call, reply;
	struct ulb_clamp_report rep;
	uint32_t fields;

	v3_call(&call, NFS3_FSINFO, RPC_AUTH_NONE, 0);
	fsinfo_reply(&reply, true, adv);
	uint8_t *p = clamp(*state, &call, &reply, reply.len, 0, &caps, &rep, &fields);
	assert_int_equal(fields, 0);
	assert_int_equal(rep.fields, 0);
	assert_memory_equal(p, reply.buf, reply.len);
	free(p);

	const uint32_t big[7] = { 1u << 20, 1u << 20, 1, 1u << 20, 1u << 20, 1, 1u << 20 };
	fsinfo_reply(&reply, true, big);
	assert_unchanged(*state, &call, &reply, reply.len, &none, NULL);
	/* and the same reply is lowered with caps (the report is optional) */
	p = clamp(*state, &call, &reply, reply.len, 0, &caps, NULL, &fields);
	assert_int_equal(fields, 1u << ULB_CLAMP_RTMAX | 1u << ULB_CLAMP_RTPREF |
					 1u << ULB_CLAMP_WTMAX | 1u << ULB_CLAMP_WTPREF |
					 1u << ULB_CLAMP_DTPREF);
	free(p);
}

/* Every truncation of a reply that would be lowered: no change, nothing read past it. */
static void test_fsinfo_truncated(void **state)
{
	const uint32_t adv[7] = { 1u << 20, 1u << 20, 4096, 1u << 20, 1u << 20, 4096, 1u << 20 };
	struct msg call, reply;
	struct ulb_clamp_report rep;
	uint32_t fields;

	v3_call(&call, NFS3_FSINFO, RPC_AUTH_NONE, 0);
	for (int attrs = 0; attrs < 2; attrs++) {
		fsinfo_reply(&reply, attrs, adv);
		for (uint32_t len = 0; len < reply.len; len++)
			assert_unchanged(*state, &call, &reply, len, &caps, &rep);
		uint8_t *p = clamp(*state, &call, &reply, reply.len, 0, &caps, &rep, &fields);
		assert_int_equal(fields, 0x1f);
		free(p);
	}
}

/* An error status, a failed RPC, an unknown post_op_attr discriminant: no change. */
static void test_fsinfo_errors(void **state)
{
	const uint32_t adv[7] = { 1u << 20, 1u << 20, 4096, 1u << 20, 1u << 20, 4096, 1u << 20 };
	struct msg call, reply;
	uint32_t fields;

	v3_call(&call, NFS3_FSINFO, RPC_AUTH_NONE, 0);
	fsinfo_reply(&reply, false, adv);
	uint8_t *p = clamp(*state, &call, &reply, reply.len, 0, &caps, NULL, &fields);
	assert_int_equal(fields, 0x1f);
	free(p);

	xdr_put32(reply.buf + 24, NFS3ERR_STALE);
	assert_unchanged(*state, &call, &reply, reply.len, &caps, NULL);

	xdr_put32(reply.buf + 24, 0);
	xdr_put32(reply.buf + 28, 2); /* post_op_attr neither FALSE nor TRUE */
	assert_unchanged(*state, &call, &reply, reply.len, &caps, NULL);

	xdr_put32(reply.buf + 28, 0);
	xdr_put32(reply.buf + 20, RPC_ACC_SYSTEM_ERR);
	assert_unchanged(*state, &call, &reply, reply.len, &caps, NULL);

	/* the reply to a call that does not advertise sizes is never touched */
	struct ulb_call u;
	xdr_put32(reply.buf + 20, RPC_ACC_SUCCESS);
	v3_call(&call, NFS3_FSINFO, RPC_AUTH_GSS, RPC_GSS_SVC_INTEGRITY);
	assert_true(msg_parse_call(*state, &call, &u) == ULB_OK);
	p = msg_dup(&reply, reply.len);
	assert_int_equal(ulb_clamp_reply(&u, p, reply.len, 0, &caps, NULL), 0);
	assert_memory_equal(p, reply.buf, reply.len);
	free(p);
}

/* ---- NFSv4 GETATTR ---- */

/* SEQUENCE, PUTFH, GETATTR of @word0/@word1. */
static void getattr_call(struct msg *m, uint32_t word0, uint32_t word1)
{
	v4_call(m, 3);
	msg_u32(m, OP_PUTFH);
	msg_opaque(m, 0xf4, 20);
	v4_getattr_call(m, word0, word1);
}

static void test_getattr_alone(void **state)
{
	struct msg call, reply, want;
	struct ulb_clamp_report rep;
	uint32_t fields;

	for (int which = 0; which < 3; which++) {
		uint32_t w0 = which == 0   ? 1u << A_MAXREAD
			      : which == 1 ? 1u << A_MAXWRITE
					   : 1u << A_MAXREAD | 1u << A_MAXWRITE;
		getattr_call(&call, w0, 0);
		for (int pass = 0; pass < 2; pass++) {
			struct msg *m = pass ? &want : &reply;
			uint64_t v = pass ? IO_MAX : 1ull << 33;
			v4_reply(m, 3);
			msg_u32(m, OP_PUTFH);
			msg_u32(m, 0);
			uint32_t at = getattr_begin(m, w0, 0);
			if (w0 & 1u << A_MAXREAD)
				msg_u64(m, v);
			if (w0 & 1u << A_MAXWRITE)
				msg_u64(m, pass ? IO_MAX : (1u << 20));
			getattr_end(m, at);
		}
		uint8_t *p = clamp(*state, &call, &reply, reply.len, 0, &caps, &rep, &fields);
		uint32_t expect = (w0 & 1u << A_MAXREAD ? 1u << ULB_CLAMP_MAXREAD : 0) |
				  (w0 & 1u << A_MAXWRITE ? 1u << ULB_CLAMP_MAXWRITE : 0);
		assert_int_equal(fields, expect);
		if (w0 & 1u << A_MAXREAD)
			assert_field(&rep, ULB_CLAMP_MAXREAD, 1ull << 33, IO_MAX);
		if (w0 & 1u << A_MAXWRITE)
			assert_field(&rep, ULB_CLAMP_MAXWRITE, 1u << 20, IO_MAX);
		assert_memory_equal(p, want.buf, want.len);
		free(p);
	}
}

/*
 * Every word-0 attribute before maxread, the variable ones with odd lengths,
 * and word-1 attributes (mode, numlinks) after maxwrite.
 */
#define ALL_WORD0 0xffffffffu

static void put_all_attrs(struct msg *m, uint64_t maxread, uint64_t maxwrite, uint32_t acl_count)
{
	msg_u32(m, 3); /* 0 supported_attrs: 3 words */
	msg_u32(m, ALL_WORD0);
	msg_u32(m, 0xffff);
	msg_u32(m, 0x3);
	msg_u32(m, 2);		     /* 1 type */
	msg_u32(m, 0);		     /* 2 fh_expire_type */
	msg_u64(m, 0x1234567890ull); /* 3 change */
	msg_u64(m, 1ull << 40);	     /* 4 size */
	for (int a = 5; a <= 7; a++)
		msg_u32(m, 1);
	msg_u64(m, 7); /* 8 fsid */
	msg_u64(m, 9);
	msg_u32(m, 1);	       /* 9 unique_handles */
	msg_u32(m, 90);	       /* 10 lease_time */
	msg_u32(m, 0);	       /* 11 rdattr_error */
	msg_u32(m, acl_count); /* 12 acl */
	for (uint32_t i = 0; i < 2; i++) {
		msg_u32(m, 0);
		msg_u32(m, 0x40);
		msg_u32(m, 0x1f01ff);
		msg_opaque(m, 'w', i ? 9 : 6); /* "OWNER@", "EVERYONE@" */
	}
	msg_u32(m, 0xf); /* 13 aclsupport */
	for (int a = 14; a <= 18; a++)
		msg_u32(m, a & 1);
	msg_opaque(m, 0xfb, 37); /* 19 filehandle */
	for (int a = 20; a <= 23; a++)
		msg_u64(m, (uint64_t)a << 32);
	/* 24 fs_locations: fs_root "a"/"bc", two locations of two servers each */
	msg_u32(m, 2);
	msg_opaque(m, 'a', 1);
	msg_opaque(m, 'b', 2);
	msg_u32(m, 2);
	for (int l = 0; l < 2; l++) {
		msg_u32(m, 2);
		msg_opaque(m, 's', 7);
		msg_opaque(m, 't', 12);
		msg_u32(m, 1);
		msg_opaque(m, 'r', 5);
	}
	msg_u32(m, 0);		/* 25 hidden */
	msg_u32(m, 1);		/* 26 homogeneous */
	msg_u64(m, 1ull << 62); /* 27 maxfilesize */
	msg_u32(m, 1u << 30);	/* 28 maxlink */
	msg_u32(m, 1u << 30);	/* 29 maxname */
	msg_u64(m, maxread);
	msg_u64(m, maxwrite);
	msg_u32(m, 0644);     /* 33 mode */
	msg_u32(m, 1u << 30); /* 35 numlinks */
}

static void all_attrs_reply(struct msg *m, uint64_t maxread, uint64_t maxwrite, uint32_t acl_count)
{
	v4_reply(m, 3);
	msg_u32(m, OP_PUTFH);
	msg_u32(m, 0);
	uint32_t at = getattr_begin(m, ALL_WORD0, 1u << 1 | 1u << 3);
	put_all_attrs(m, maxread, maxwrite, acl_count);
	getattr_end(m, at);
}

static void test_getattr_after_others(void **state)
{
	struct msg call, reply, want;
	struct ulb_clamp_report rep;
	uint32_t fields;

	getattr_call(&call, ALL_WORD0, 1u << 1 | 1u << 3);
	all_attrs_reply(&reply, 1u << 20, 1u << 21, 2);
	all_attrs_reply(&want, IO_MAX, IO_MAX, 2);
	uint8_t *p = clamp(*state, &call, &reply, reply.len, 0, &caps, &rep, &fields);
	assert_int_equal(fields, 1u << ULB_CLAMP_MAXREAD | 1u << ULB_CLAMP_MAXWRITE);
	assert_field(&rep, ULB_CLAMP_MAXREAD, 1u << 20, IO_MAX);
	assert_field(&rep, ULB_CLAMP_MAXWRITE, 1u << 21, IO_MAX);
	assert_memory_equal(p, want.buf, want.len);
	free(p);

	/* below the cap: unchanged */
	all_attrs_reply(&reply, 65536, IO_MAX, 2);
	assert_unchanged(*state, &call, &reply, reply.len, &caps, &rep);

	/* every truncation: no change (the walk fails before the values) */
	all_attrs_reply(&reply, 1u << 20, 1u << 21, 2);
	for (uint32_t len = 0; len < reply.len; len++)
		assert_unchanged(*state, &call, &reply, len, &caps, &rep);
}

/* Attributes that do not walk: the GETATTR is left alone. */
static void test_getattr_unwalkable(void **state)
{
	struct msg call, reply;

	getattr_call(&call, ALL_WORD0, 1u << 1 | 1u << 3);
	/* an ACL claiming more ACEs than the attrlist holds: fewer than its
	 * words (each ACE walked until the attrlist ends), or more */
	const uint32_t counts[] = { 60, 1000, 1u << 30, UINT32_MAX };
	for (size_t i = 0; i < sizeof(counts) / sizeof(counts[0]); i++) {
		all_attrs_reply(&reply, 1u << 20, 1u << 21, counts[i]);
		assert_unchanged(*state, &call, &reply, reply.len, &caps, NULL);
	}

	/* a file handle longer than NFS4_FHSIZE */
	getattr_call(&call, 1u << 19 | 1u << A_MAXREAD, 0);
	v4_reply(&reply, 3);
	msg_u32(&reply, OP_PUTFH);
	msg_u32(&reply, 0);
	uint32_t at = getattr_begin(&reply, 1u << 19 | 1u << A_MAXREAD, 0);
	msg_opaque(&reply, 0xfb, 129);
	msg_u64(&reply, 1u << 20);
	getattr_end(&reply, at);
	assert_unchanged(*state, &call, &reply, reply.len, &caps, NULL);

	/* maxread present, but the attrlist ends before maxwrite: maxread stays too */
	getattr_call(&call, 1u << A_MAXREAD | 1u << A_MAXWRITE, 0);
	v4_reply(&reply, 3);
	msg_u32(&reply, OP_PUTFH);
	msg_u32(&reply, 0);
	at = getattr_begin(&reply, 1u << A_MAXREAD | 1u << A_MAXWRITE, 0);
	msg_u64(&reply, 1u << 20);
	getattr_end(&reply, at);
	msg_u64(&reply, 1u << 20); /* after the attrlist: not an attribute */
	assert_unchanged(*state, &call, &reply, reply.len, &caps, NULL);
}

/* Two GETATTRs: both lowered, the first reported; one after a failed operation is not. */
static void test_two_getattrs(void **state)
{
	struct msg call, reply, want;
	struct ulb_clamp_report rep;
	uint32_t fields;
	const uint32_t w0 = 1u << A_MAXREAD | 1u << A_MAXWRITE;
	uint32_t putfh = 0;

	v4_call(&call, 4);
	v4_getattr_call(&call, w0, 0);
	msg_u32(&call, OP_PUTFH);
	msg_opaque(&call, 0xf4, 20);
	v4_getattr_call(&call, w0, 0);
	for (int pass = 0; pass < 2; pass++) {
		struct msg *m = pass ? &want : &reply;
		v4_reply(m, 4);
		uint32_t at = getattr_begin(m, w0, 0);
		msg_u64(m, pass ? IO_MAX : 1u << 20);
		msg_u64(m, pass ? IO_MAX : 1u << 20);
		getattr_end(m, at);
		putfh = m->len;
		msg_u32(m, OP_PUTFH);
		msg_u32(m, 0);
		at = getattr_begin(m, w0, 0);
		msg_u64(m, pass ? IO_MAX : 1u << 21);
		msg_u64(m, pass ? IO_MAX : 1u << 22);
		getattr_end(m, at);
	}
	uint8_t *p = clamp(*state, &call, &reply, reply.len, 0, &caps, &rep, &fields);
	assert_int_equal(fields, 1u << ULB_CLAMP_MAXREAD | 1u << ULB_CLAMP_MAXWRITE);
	assert_field(&rep, ULB_CLAMP_MAXREAD, 1u << 20, IO_MAX);
	assert_field(&rep, ULB_CLAMP_MAXWRITE, 1u << 20, IO_MAX);
	assert_memory_equal(p, want.buf, want.len);
	free(p);

	/* PUTFH failed: the COMPOUND ends there, whatever follows it */
	xdr_put32(reply.buf + putfh + 4, NFS4ERR_ACCESS);
	memcpy(want.buf + putfh, reply.buf + putfh, reply.len - putfh);
	p = clamp(*state, &call, &reply, reply.len, 0, &caps, &rep, &fields);
	assert_int_equal(fields, 1u << ULB_CLAMP_MAXREAD | 1u << ULB_CLAMP_MAXWRITE);
	assert_memory_equal(p, want.buf, want.len);
	free(p);
}

/* A reduced reply: READ's data went in a Write chunk, the GETATTR after it is found. */
static void test_getattr_reduced(void **state)
{
	struct msg call, reply, want;
	uint32_t fields;

	v4_call(&call, 3);
	v4_read_call(&call, 8192);
	v4_getattr_call(&call, 1u << A_MAXREAD, 0);
	for (int pass = 0; pass < 2; pass++) {
		struct msg *m = pass ? &want : &reply;
		v4_reply(m, 3);
		msg_u32(m, OP_READ);
		msg_u32(m, 0);
		msg_u32(m, 0);	  /* eof */
		msg_u32(m, 8192); /* the data is in the Write chunk */
		uint32_t at = getattr_begin(m, 1u << A_MAXREAD, 0);
		msg_u64(m, pass ? IO_MAX : 1u << 20);
		getattr_end(m, at);
	}
	uint8_t *p = clamp(*state, &call, &reply, reply.len, 1, &caps, NULL, &fields);
	assert_int_equal(fields, 1u << ULB_CLAMP_MAXREAD);
	assert_memory_equal(p, want.buf, want.len);
	free(p);
	/* read as a full reply it does not walk: nothing changes */
	assert_unchanged(*state, &call, &reply, reply.len, &caps, NULL);
}

/* ---- NFSv4.1 CREATE_SESSION ---- */

static void test_create_session(void **state)
{
	struct msg call, reply, want;
	struct ulb_clamp_report rep;
	uint32_t fields;

	msg_create_session_call(&call, 0x46);
	msg_create_session_reply(&reply, 0x46, sid);
	/* the fore channel: maxrequestsize 1049620, maxresponsesize MSG_MAXRESP,
	 * cached 7584 (below); the back channel's are not the client's to use */
	memcpy(want.buf, reply.buf, reply.len);
	want.len = reply.len;
	uint32_t fore = reply.len - 2 * 28;
	xdr_put32(want.buf + fore + 4, MSG_MAX);
	xdr_put32(want.buf + fore + 8, MSG_MAX);
	uint8_t *p = clamp(*state, &call, &reply, reply.len, 0, &caps, &rep, &fields);
	assert_int_equal(fields, 1u << ULB_CLAMP_MAXREQ | 1u << ULB_CLAMP_MAXRESP);
	assert_field(&rep, ULB_CLAMP_MAXREQ, 1049620, MSG_MAX);
	assert_field(&rep, ULB_CLAMP_MAXRESP, MSG_MAXRESP, MSG_MAX);
	assert_memory_equal(p, want.buf, want.len);
	free(p);

	/* a cached size above the cap too */
	const struct ulb_size_caps small = { .io_max = 4096, .msg_max = 4096 };
	xdr_put32(want.buf + fore + 4, 4096);
	xdr_put32(want.buf + fore + 8, 4096);
	xdr_put32(want.buf + fore + 12, 4096);
	p = clamp(*state, &call, &reply, reply.len, 0, &small, &rep, &fields);
	assert_int_equal(fields, 1u << ULB_CLAMP_MAXREQ | 1u << ULB_CLAMP_MAXRESP |
					 1u << ULB_CLAMP_MAXRESP_CACHED);
	assert_field(&rep, ULB_CLAMP_MAXRESP_CACHED, 7584, 4096);
	assert_memory_equal(p, want.buf, want.len);
	free(p);

	/* every truncation: no change */
	for (uint32_t len = 0; len < reply.len; len++)
		assert_unchanged(*state, &call, &reply, len, &caps, &rep);
}

static void test_field_names(void **state)
{
	(void)state;
	assert_string_equal(ulb_clamp_field_name(ULB_CLAMP_RTMAX), "rtmax");
	assert_string_equal(ulb_clamp_field_name(ULB_CLAMP_DTPREF), "dtpref");
	assert_string_equal(ulb_clamp_field_name(ULB_CLAMP_MAXWRITE), "maxwrite");
	assert_string_equal(ulb_clamp_field_name(ULB_CLAMP_MAXREQ), "ca_maxrequestsize");
	assert_string_equal(ulb_clamp_field_name(ULB_CLAMP_MAXRESP_CACHED),
			    "ca_maxresponsesize_cached");
	assert_string_equal(ulb_clamp_field_name(ULB_CLAMP_NFIELDS), "unknown");
	for (int f = 0; f < ULB_CLAMP_NFIELDS; f++)
		assert_non_null(ulb_clamp_field_name((enum ulb_clamp_field)f));
}

static int setup(void **state)
{
	*state = msg_rules_load();
	return *state ? 0 : -1;
}

static int teardown(void **state)
{
	ulb_rules_free(*state);
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_advertises_sizes),
		cmocka_unit_test(test_fsinfo),
		cmocka_unit_test(test_fsinfo_within_caps),
		cmocka_unit_test(test_fsinfo_truncated),
		cmocka_unit_test(test_fsinfo_errors),
		cmocka_unit_test(test_getattr_alone),
		cmocka_unit_test(test_getattr_after_others),
		cmocka_unit_test(test_getattr_unwalkable),
		cmocka_unit_test(test_two_getattrs),
		cmocka_unit_test(test_getattr_reduced),
		cmocka_unit_test(test_create_session),
		cmocka_unit_test(test_field_names),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
