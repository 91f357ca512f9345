/* SPDX-License-Identifier: MIT */
/*
 * Hand-made messages for the ULB walkers: several WRITEs and READs in one
 * COMPOUND, items in the middle of the arguments, odd lengths, unknown
 * operations, RPCSEC_GSS services, sessions, reply bounds, reduced replies,
 * and truncated or lying length fields, which must fail cleanly (ASan checks
 * that nothing is read out of bounds: every message is an exact-size heap
 * copy).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "common/xdr.h"
#include "ulb-rules/rpc_msg.h"
#include "ulb-rules/ulb.h"

#define NFS_PROG    100003
#define DEFAULT_MAX 65536

struct xb {
	uint8_t buf[1 << 17];
	uint32_t len;
};

static void u32(struct xb *b, uint32_t v)
{
	xdr_put32(b->buf + b->len, v);
	b->len += 4;
}

static void u64(struct xb *b, uint64_t v)
{
	xdr_put64(b->buf + b->len, v);
	b->len += 8;
}

static void fixed(struct xb *b, uint8_t fill, uint32_t n)
{
	memset(b->buf + b->len, fill, n);
	b->len += xdr_align(n);
}

/* An opaque of @n bytes, each byte (seed + i); returns the data offset. */
static uint32_t opaque(struct xb *b, uint8_t seed, uint32_t n)
{
	u32(b, n);
	uint32_t off = b->len;
	for (uint32_t i = 0; i < n; i++)
		b->buf[b->len + i] = (uint8_t)(seed + i);
	memset(b->buf + b->len + n, 0, xdr_pad(n));
	b->len += xdr_align(n);
	return off;
}

static void call_hdr_flavor(struct xb *b, uint32_t xid, uint32_t prog, uint32_t vers, uint32_t proc,
			    uint32_t flavor, uint32_t gss_service)
{
	b->len = 0;
	u32(b, xid);
	u32(b, RPC_MSG_CALL);
	u32(b, RPC_VERSION);
	u32(b, prog);
	u32(b, vers);
	u32(b, proc);
	u32(b, flavor);
	if (flavor == RPC_AUTH_GSS) {
		u32(b, 24); /* version, gss_proc, seq, service, handle<4> */
		u32(b, 1);
		u32(b, RPC_GSS_PROC_DATA);
		u32(b, 7);
		u32(b, gss_service);
		opaque(b, 0x40, 4);
		u32(b, RPC_AUTH_GSS); /* verifier: a MIC */
		opaque(b, 0x50, 28);
	} else {
		u32(b, 20); /* AUTH_SYS: stamp, machine "", uid, gid, gids<> */
		u32(b, 1);
		u32(b, 0);
		u32(b, 0);
		u32(b, 0);
		u32(b, 0);
		u32(b, RPC_AUTH_NONE);
		u32(b, 0);
	}
}

static void call_hdr(struct xb *b, uint32_t xid, uint32_t prog, uint32_t vers, uint32_t proc)
{
	call_hdr_flavor(b, xid, prog, vers, proc, RPC_AUTH_SYS, 0);
}

static void reply_hdr(struct xb *b, uint32_t xid)
{
	b->len = 0;
	u32(b, xid);
	u32(b, RPC_MSG_REPLY);
	u32(b, RPC_MSG_ACCEPTED);
	u32(b, RPC_AUTH_NONE);
	u32(b, 0);
	u32(b, RPC_ACC_SUCCESS);
}

static void compound_hdr(struct xb *b, uint32_t xid, uint32_t minor, uint32_t nops)
{
	call_hdr(b, xid, NFS_PROG, 4, 1);
	opaque(b, 't', 3); /* tag */
	u32(b, minor);
	u32(b, nops);
}

static const uint8_t sid_a[ULB_SESSIONID_SIZE] = { 0xa1, 2,  3,	 4,  5,	 6,  7,	 8,
						   9,	 10, 11, 12, 13, 14, 15, 16 };

static void op_sequence(struct xb *b, const uint8_t *sid)
{
	u32(b, 53);
	memcpy(b->buf + b->len, sid, ULB_SESSIONID_SIZE);
	b->len += ULB_SESSIONID_SIZE;
	u32(b, 1);
	u32(b, 0);
	u32(b, 0);
	u32(b, 0);
}

static void op_putfh(struct xb *b)
{
	u32(b, 22);
	opaque(b, 0xf0, 28);
}

static uint32_t op_write(struct xb *b, uint8_t seed, uint32_t n)
{
	u32(b, 38);
	fixed(b, 0x55, 16); /* stateid */
	u64(b, 4096);
	u32(b, 2);
	return opaque(b, seed, n);
}

static void op_read(struct xb *b, uint32_t count)
{
	u32(b, 25);
	fixed(b, 0x55, 16);
	u64(b, 0);
	u32(b, count);
}

/* A fresh heap copy of exactly the message, so ASan sees any overread. */
static uint8_t *dup_msg(const struct xb *b, uint32_t len)
{
	uint8_t *m = malloc(len ? len : 1);
	assert_non_null(m);
	memcpy(m, b->buf, len);
	return m;
}

static struct ulb_rules *rules;

static int setup(void **state)
{
	char err[512];
	struct ulb_options o = { .stock_dir = GW_SOURCE_DIR "/ulb-rules",
				 .default_reply_max = DEFAULT_MAX };
	rules = ulb_rules_load(&o, err, sizeof(err));
	if (!rules)
		fprintf(stderr, "%s\n", err);
	return rules ? 0 : -1;
}

static int teardown(void **state)
{
	ulb_rules_free(rules);
	return 0;
}

static enum ulb_status parse(const struct xb *b, uint32_t len, struct ulb_call *call,
			     const struct ulb_sessions *s)
{
	uint8_t *m = dup_msg(b, len);
	enum ulb_status st = ulb_parse_call(rules, s, m, len, call);
	free(m);
	return st;
}

static enum ulb_reply_status parse_reply(const struct ulb_call *call, const struct xb *b,
					 uint32_t len, uint32_t moved, struct ulb_reply *r,
					 struct ulb_sessions *s)
{
	uint8_t *m = dup_msg(b, len);
	enum ulb_reply_status st = ulb_parse_reply(call, s, m, len, moved, r);
	free(m);
	return st;
}

/* Every proper prefix of a valid message must fail cleanly, never crash. */
static void check_prefixes_fail(const struct xb *b)
{
	struct ulb_call c;
	for (uint32_t n = 0; n < b->len; n++) {
		enum ulb_status st = parse(b, n, &c, NULL);
		assert_true(st == ULB_GARBAGE_ARGS || st == ULB_BAD_HEADER || st == ULB_OK);
		/* nothing reported may lie outside the prefix */
		for (unsigned i = 0; i < c.n_args; i++)
			assert_true(c.args[i].offset + c.args[i].length <= n);
	}
}

static void test_v3_write(void **state)
{
	struct xb b;
	struct ulb_call c;

	call_hdr(&b, 0x1234, NFS_PROG, 3, 7);
	uint32_t args = b.len;
	opaque(&b, 0xf0, 32); /* fh */
	u64(&b, 0);
	u32(&b, 5);
	u32(&b, 2);
	uint32_t data = opaque(&b, 'a', 5); /* odd length: 3 pad bytes */
	assert_int_equal(parse(&b, b.len, &c, NULL), ULB_OK);
	assert_int_equal(c.xid, 0x1234);
	assert_int_equal(c.prog, NFS_PROG);
	assert_int_equal(c.vers, 3);
	assert_int_equal(c.proc, 7);
	assert_int_equal(c.flavor, RPC_AUTH_SYS);
	assert_int_equal(c.args_offset, args);
	assert_true(c.known);
	assert_int_equal(c.n_args, 1);
	assert_int_equal(c.args[0].offset, data);
	assert_int_equal(c.args[0].length, 5);
	assert_int_equal(c.n_results, 0);
	/* WRITE3res: status, wcc_data (4+24 + 4+84), count, committed, verf */
	assert_true(c.reply_exact);
	assert_int_equal(c.reply_max, ULB_REPLY_HDR_MAX + 4 + 28 + 88 + 4 + 4 + 8);

	/* the pad is part of the message: without it, garbage */
	assert_int_equal(parse(&b, b.len - 1, &c, NULL), ULB_GARBAGE_ARGS);
	/* a length word larger than the message */
	xdr_put32(b.buf + data - 4, 0x7ffffff0);
	assert_int_equal(parse(&b, b.len, &c, NULL), ULB_GARBAGE_ARGS);
	xdr_put32(b.buf + data - 4, 0xfffffffe);
	assert_int_equal(parse(&b, b.len, &c, NULL), ULB_GARBAGE_ARGS);
	xdr_put32(b.buf + data - 4, 5);
	/* a file handle longer than NFS3_FHSIZE */
	xdr_put32(b.buf + args, 65);
	assert_int_equal(parse(&b, b.len, &c, NULL), ULB_GARBAGE_ARGS);
	xdr_put32(b.buf + args, 32);
	check_prefixes_fail(&b);
}

static void test_v3_read_and_reply(void **state)
{
	struct xb b;
	struct ulb_call c;
	struct ulb_reply r;

	call_hdr(&b, 7, NFS_PROG, 3, 6);
	opaque(&b, 0xf0, 32);
	u64(&b, 0);
	u32(&b, 1001);
	assert_int_equal(parse(&b, b.len, &c, NULL), ULB_OK);
	assert_int_equal(c.n_args, 0);
	assert_int_equal(c.n_results, 1);
	assert_int_equal(c.result_max[0], 1001);
	/* READ3res: status, post_op_attr, count, eof, data<1001> */
	assert_true(c.reply_exact);
	assert_int_equal(c.reply_max, ULB_REPLY_HDR_MAX + 4 + 88 + 4 + 4 + 4 + 1004);

	reply_hdr(&b, 7);
	u32(&b, 0);
	u32(&b, 1);
	fixed(&b, 0x11, 84);
	u32(&b, 1001);
	u32(&b, 1);
	uint32_t data = opaque(&b, 'r', 1001);
	assert_true(b.len <= c.reply_max);
	assert_int_equal(parse_reply(&c, &b, b.len, 0, &r, NULL), ULB_REPLY_OK);
	assert_int_equal(r.xid, 7);
	assert_int_equal(r.n_items, 1);
	assert_int_equal(r.items[0].offset, data);
	assert_int_equal(r.items[0].length, 1001);
	assert_false(r.items[0].moved);
	/* truncated reply */
	assert_int_equal(parse_reply(&c, &b, b.len - 4, 0, &r, NULL), ULB_REPLY_GARBAGE);
	assert_int_equal(r.n_items, 0);
	/* reduced: the data and pad went to a Write chunk */
	assert_int_equal(parse_reply(&c, &b, data, 1, &r, NULL), ULB_REPLY_OK);
	assert_int_equal(r.n_items, 1);
	assert_true(r.items[0].moved);
	assert_int_equal(r.items[0].offset, data);
	assert_int_equal(r.items[0].length, 1001);

	/* an error reply has no data */
	reply_hdr(&b, 7);
	u32(&b, 70); /* NFS3ERR_STALE */
	u32(&b, 0);
	assert_int_equal(parse_reply(&c, &b, b.len, 0, &r, NULL), ULB_REPLY_OK);
	assert_int_equal(r.n_items, 0);
	/* GARBAGE_ARGS and denied replies have no results */
	b.len = (uint32_t)rpc_build_accepted_error(b.buf, sizeof(b.buf), 7, RPC_ACC_GARBAGE_ARGS, 0,
						   0);
	assert_int_equal(parse_reply(&c, &b, b.len, 0, &r, NULL), ULB_REPLY_NO_RESULTS);
	assert_int_equal(r.stat, RPC_ACC_GARBAGE_ARGS);
	b.len = (uint32_t)rpc_build_rejected(b.buf, sizeof(b.buf), 7, RPC_REJ_AUTH_ERROR,
					     RPC_AUTHSTAT_BADCRED);
	assert_int_equal(parse_reply(&c, &b, b.len, 0, &r, NULL), ULB_REPLY_NO_RESULTS);
	assert_int_equal(r.reply_stat, RPC_MSG_DENIED);
}

static void test_v3_symlink_readlink_readdir(void **state)
{
	struct xb b;
	struct ulb_call c;
	struct ulb_reply r;

	call_hdr(&b, 9, NFS_PROG, 3, 10);
	opaque(&b, 0xf0, 32);
	opaque(&b, 'n', 3);
	u32(&b, 1); /* mode set */
	u32(&b, 0777);
	u32(&b, 0);
	u32(&b, 0);
	u32(&b, 0);
	u32(&b, 2); /* atime: client time */
	u64(&b, 5);
	u32(&b, 0);
	uint32_t path = opaque(&b, 'p', 13);
	assert_int_equal(parse(&b, b.len, &c, NULL), ULB_OK);
	assert_int_equal(c.n_args, 1);
	assert_int_equal(c.args[0].offset, path);
	assert_int_equal(c.args[0].length, 13);
	/* a time_how out of range has no arm: garbage */
	xdr_put32(b.buf + path - 4 - 4 - 12 - 4, 3);
	assert_int_equal(parse(&b, b.len, &c, NULL), ULB_GARBAGE_ARGS);

	call_hdr(&b, 10, NFS_PROG, 3, 5);
	opaque(&b, 0xf0, 32);
	assert_int_equal(parse(&b, b.len, &c, NULL), ULB_OK);
	assert_int_equal(c.n_results, 1);
	assert_int_equal(c.result_max[0], 4096);
	reply_hdr(&b, 10);
	u32(&b, 0);
	u32(&b, 0); /* no attributes */
	uint32_t link = opaque(&b, 'l', 6);
	assert_int_equal(parse_reply(&c, &b, b.len, 0, &r, NULL), ULB_REPLY_OK);
	assert_int_equal(r.n_items, 1);
	assert_int_equal(r.items[0].offset, link);
	assert_int_equal(r.items[0].length, 6);

	/* READDIR: the bound comes from maxcount */
	call_hdr(&b, 11, NFS_PROG, 3, 16);
	opaque(&b, 0xf0, 32);
	u64(&b, 0);
	fixed(&b, 0, 8);
	u32(&b, 8192);
	assert_int_equal(parse(&b, b.len, &c, NULL), ULB_OK);
	assert_true(c.reply_exact);
	assert_int_equal(c.reply_max, ULB_REPLY_HDR_MAX + 92 + 8192);
	assert_int_equal(c.n_results, 0);
}

static void test_v2_symlink_item_in_the_middle(void **state)
{
	struct xb b;
	struct ulb_call c;

	call_hdr(&b, 12, NFS_PROG, 2, 13);
	fixed(&b, 0xf0, 32);
	opaque(&b, 'n', 4);
	uint32_t path = opaque(&b, 'p', 2);
	fixed(&b, 0xff, 32); /* sattr after the item */
	assert_int_equal(parse(&b, b.len, &c, NULL), ULB_OK);
	assert_int_equal(c.n_args, 1);
	assert_int_equal(c.args[0].offset, path);
	assert_int_equal(c.args[0].length, 2);
	/* the sattr after the path is checked too */
	assert_int_equal(parse(&b, b.len - 4, &c, NULL), ULB_GARBAGE_ARGS);
	/* NFSv2 paths are at most 1024 bytes */
	xdr_put32(b.buf + path - 4, 1025);
	assert_int_equal(parse(&b, b.len, &c, NULL), ULB_GARBAGE_ARGS);
}

static void test_compound_several_writes(void **state)
{
	struct xb b;
	struct ulb_call c;
	uint32_t off[3];

	compound_hdr(&b, 20, 1, 5);
	op_sequence(&b, sid_a);
	op_putfh(&b);
	off[0] = op_write(&b, 1, 4096);
	off[1] = op_write(&b, 2, 3);
	off[2] = op_write(&b, 3, 0);
	assert_int_equal(parse(&b, b.len, &c, NULL), ULB_OK);
	assert_int_equal(c.minorversion, 1);
	assert_int_equal(c.nops, 5);
	assert_true(c.has_sequence);
	assert_memory_equal(c.sessionid, sid_a, ULB_SESSIONID_SIZE);
	assert_int_equal(c.n_args, 3);
	assert_int_equal(c.args[0].offset, off[0]);
	assert_int_equal(c.args[0].length, 4096);
	assert_int_equal(c.args[1].offset, off[1]);
	assert_int_equal(c.args[1].length, 3);
	assert_int_equal(c.args[2].offset, off[2]);
	assert_int_equal(c.args[2].length, 0);
	assert_int_equal(c.n_results, 0);
	/* all bounded: COMPOUND4res with SEQUENCE, PUTFH, 3 WRITE results */
	assert_true(c.reply_exact);
	assert_int_equal(c.reply_max, ULB_REPLY_HDR_MAX + 4 + 8 + 4 + (8 + 36) + 8 + 3 * (8 + 16));
	check_prefixes_fail(&b);

	/* more WRITEs than ULB_MAX_ITEMS: the first ones are reported */
	compound_hdr(&b, 21, 2, 12);
	op_putfh(&b);
	for (int i = 0; i < 11; i++)
		op_write(&b, (uint8_t)i, 8);
	assert_int_equal(parse(&b, b.len, &c, NULL), ULB_OK);
	assert_int_equal(c.n_args, ULB_MAX_ITEMS);
}

static void test_compound_several_reads(void **state)
{
	struct xb b;
	struct ulb_call c;
	struct ulb_reply r;

	compound_hdr(&b, 30, 2, 5);
	op_sequence(&b, sid_a);
	op_putfh(&b);
	op_read(&b, 100);
	op_read(&b, 7);
	u32(&b, 27); /* READLINK */
	assert_int_equal(parse(&b, b.len, &c, NULL), ULB_OK);
	assert_int_equal(c.n_args, 0);
	assert_int_equal(c.n_results, 3);
	assert_int_equal(c.result_max[0], 100);
	assert_int_equal(c.result_max[1], 7);
	assert_int_equal(c.result_max[2], 4096);
	assert_true(c.reply_exact);
	assert_int_equal(c.reply_max, ULB_REPLY_HDR_MAX + 4 + 8 + 4 + (8 + 36) + 8 +
					      (8 + 4 + 4 + 100) + (8 + 4 + 4 + 8) + (8 + 4 + 4096));

	reply_hdr(&b, 30);
	u32(&b, 0);
	opaque(&b, 't', 3);
	u32(&b, 5);
	u32(&b, 53);
	u32(&b, 0);
	fixed(&b, 0xa1, 16);
	for (int i = 0; i < 5; i++)
		u32(&b, 0);
	u32(&b, 22);
	u32(&b, 0);
	uint32_t d[3];
	u32(&b, 25);
	u32(&b, 0);
	u32(&b, 0);
	d[0] = opaque(&b, 'A', 100);
	u32(&b, 25);
	u32(&b, 0);
	u32(&b, 1);
	d[1] = opaque(&b, 'B', 7);
	u32(&b, 27);
	u32(&b, 0);
	d[2] = opaque(&b, 'C', 9);
	uint32_t full_len = b.len;
	assert_true(full_len <= c.reply_max);
	assert_int_equal(parse_reply(&c, &b, full_len, 0, &r, NULL), ULB_REPLY_OK);
	assert_int_equal(r.n_items, 3);
	for (int i = 0; i < 3; i++)
		assert_int_equal(r.items[i].offset, d[i]);
	assert_int_equal(r.items[0].length, 100);
	assert_int_equal(r.items[1].length, 7);
	assert_int_equal(r.items[2].length, 9);

	/* reduced: items 0 and 2 moved (data and pad removed), item 1 inline */
	struct xb red;
	red.len = 0;
	memcpy(red.buf, b.buf, d[0]);
	red.len = d[0];
	memcpy(red.buf + red.len, b.buf + d[0] + 100, d[2] - (d[0] + 100));
	red.len += d[2] - (d[0] + 100);
	memcpy(red.buf + red.len, b.buf + d[2] + 12, full_len - (d[2] + 12));
	red.len += full_len - (d[2] + 12);
	assert_int_equal(parse_reply(&c, &red, red.len, 0x5, &r, NULL), ULB_REPLY_OK);
	assert_int_equal(r.n_items, 3);
	assert_true(r.items[0].moved);
	assert_false(r.items[1].moved);
	assert_true(r.items[2].moved);
	assert_int_equal(r.items[0].offset, d[0]);
	assert_int_equal(r.items[1].offset, d[1] - 100);
	assert_int_equal(r.items[2].offset, d[2] - 100);
	assert_int_equal(r.items[2].length, 9);
	assert_int_equal(xdr_get32(red.buf + r.items[2].offset - 4), 9);
	/* the reduced reply read as a full one does not parse */
	assert_int_equal(parse_reply(&c, &red, red.len, 0, &r, NULL), ULB_REPLY_GARBAGE);

	/* every truncation of the full reply fails cleanly */
	for (uint32_t n = 0; n < full_len; n++) {
		enum ulb_reply_status st = parse_reply(&c, &b, n, 0, &r, NULL);
		assert_true(st == ULB_REPLY_GARBAGE || st == ULB_REPLY_OK);
		for (unsigned i = 0; i < r.n_items; i++)
			assert_true(r.items[i].offset + r.items[i].length <= n);
	}
}

static void test_compound_read_fails(void **state)
{
	struct xb b;
	struct ulb_call c;
	struct ulb_reply r;

	compound_hdr(&b, 31, 0, 3);
	op_putfh(&b);
	op_read(&b, 64);
	op_read(&b, 64);
	assert_int_equal(parse(&b, b.len, &c, NULL), ULB_OK);
	assert_int_equal(c.n_results, 2);
	/* the first READ fails: the COMPOUND stops, no item */
	reply_hdr(&b, 31);
	u32(&b, 10011); /* NFS4ERR_EXPIRED */
	opaque(&b, 't', 3);
	u32(&b, 2);
	u32(&b, 22);
	u32(&b, 0);
	u32(&b, 25);
	u32(&b, 10011);
	assert_int_equal(parse_reply(&c, &b, b.len, 0, &r, NULL), ULB_REPLY_OK);
	assert_int_equal(r.nfs4_status, 10011);
	assert_int_equal(r.n_items, 0);
	/* a lying result count */
	xdr_put32(b.buf + 24 + 4 + 8, 0x40000000);
	assert_int_equal(parse_reply(&c, &b, b.len, 0, &r, NULL), ULB_REPLY_GARBAGE);
}

static void test_compound_create_symlink(void **state)
{
	struct xb b;
	struct ulb_call c;

	compound_hdr(&b, 40, 0, 4);
	op_putfh(&b);
	u32(&b, 6); /* CREATE NF4LNK */
	u32(&b, 5);
	uint32_t link = opaque(&b, 'L', 11);
	opaque(&b, 'o', 4); /* objname */
	u32(&b, 1);	    /* createattrs: bitmap<1>, attrlist<4> */
	u32(&b, 2);
	opaque(&b, 0, 4);
	u32(&b, 10); /* GETFH */
	uint32_t wdata = op_write(&b, 9, 6);
	assert_int_equal(parse(&b, b.len, &c, NULL), ULB_OK);
	assert_int_equal(c.n_args, 2);
	assert_int_equal(c.args[0].offset, link);
	assert_int_equal(c.args[0].length, 11);
	assert_int_equal(c.args[1].offset, wdata);
	/* CREATE of a directory has no linkdata: nothing eligible */
	compound_hdr(&b, 41, 0, 2);
	op_putfh(&b);
	u32(&b, 6);
	u32(&b, 2);
	opaque(&b, 'd', 4);
	u32(&b, 0);
	u32(&b, 0);
	assert_int_equal(parse(&b, b.len, &c, NULL), ULB_OK);
	assert_int_equal(c.n_args, 0);
}

/*
 * A GETATTR asking for the ACL (or another attribute without a size) has no
 * bound but the default; the usual attributes keep the rule's estimate.
 */
static void test_compound_getattr_acl_unbounded(void **state)
{
	struct xb b;
	struct ulb_call c;

	compound_hdr(&b, 60, 0, 2);
	op_putfh(&b);
	u32(&b, 9); /* GETATTR: type, mode, size, change */
	u32(&b, 1);
	u32(&b, 0x0000001a);
	assert_int_equal(parse(&b, b.len, &c, NULL), ULB_OK);
	assert_false(c.reply_exact);
	assert_true(c.reply_max < 4096);

	compound_hdr(&b, 61, 0, 2);
	op_putfh(&b);
	u32(&b, 9); /* GETATTR: mode and the ACL (bit 12) */
	u32(&b, 2);
	u32(&b, 0x00001000);
	u32(&b, 0x00000002);
	assert_int_equal(parse(&b, b.len, &c, NULL), ULB_OK);
	assert_false(c.reply_exact);
	assert_int_equal(c.reply_max, DEFAULT_MAX);

	compound_hdr(&b, 62, 0, 2);
	op_putfh(&b);
	u32(&b, 9); /* GETATTR: sec_label (bit 80) in the third word */
	u32(&b, 3);
	u32(&b, 0);
	u32(&b, 0);
	u32(&b, 1u << 16);
	assert_int_equal(parse(&b, b.len, &c, NULL), ULB_OK);
	assert_int_equal(c.reply_max, DEFAULT_MAX);
}

/*
 * What may be executed twice (the RFC 8267 retry under a new XID): calls
 * that only read; not one that removes, writes or opens, nor anything the
 * rules do not know.
 */
static void test_read_only_calls(void **state)
{
	struct xb b;
	struct ulb_call c;

	compound_hdr(&b, 70, 0, 2); /* PUTFH, GETATTR */
	op_putfh(&b);
	u32(&b, 9);
	u32(&b, 1);
	u32(&b, 0x0000001a);
	assert_int_equal(parse(&b, b.len, &c, NULL), ULB_OK);
	assert_true(ulb_call_read_only(&c));

	compound_hdr(&b, 71, 0, 3); /* PUTFH, REMOVE "x", GETATTR */
	op_putfh(&b);
	u32(&b, 28);
	opaque(&b, 'x', 1);
	u32(&b, 9);
	u32(&b, 1);
	u32(&b, 0x0000001a);
	assert_int_equal(parse(&b, b.len, &c, NULL), ULB_OK);
	assert_false(ulb_call_read_only(&c));

	call_hdr(&b, 72, NFS_PROG, 3, 6); /* NFSv3 READ */
	u32(&b, 8);
	fixed(&b, 1, 8);
	u64(&b, 0);
	u32(&b, 4096);
	assert_int_equal(parse(&b, b.len, &c, NULL), ULB_OK);
	assert_true(ulb_call_read_only(&c));

	call_hdr(&b, 73, NFS_PROG, 3, 12); /* NFSv3 REMOVE */
	u32(&b, 8);
	fixed(&b, 1, 8);
	opaque(&b, 'x', 1);
	assert_int_equal(parse(&b, b.len, &c, NULL), ULB_OK);
	assert_false(ulb_call_read_only(&c));

	call_hdr(&b, 74, 100227, 3, 1); /* NFSACL GETACL */
	u32(&b, 8);
	fixed(&b, 1, 8);
	u32(&b, 0xf);
	parse(&b, b.len, &c, NULL);
	assert_true(ulb_call_read_only(&c));

	call_hdr(&b, 75, 399999, 1, 0); /* a program nobody knows */
	parse(&b, b.len, &c, NULL);
	assert_false(ulb_call_read_only(&c));

	/*
	 * krb5p: the COMPOUND is encrypted, so it walks as one with no
	 * operation; a WRITE inside must not be taken for a read.
	 */
	call_hdr_flavor(&b, 76, NFS_PROG, 4, 1, RPC_AUTH_GSS, RPC_GSS_SVC_PRIVACY);
	u32(&b, 64); /* databody_priv: opaque wrap token */
	fixed(&b, 0x77, 64);
	parse(&b, b.len, &c, NULL);
	assert_int_equal(c.gss_service, RPC_GSS_SVC_PRIVACY);
	assert_false(ulb_call_read_only(&c));

	/* krb5i leaves the procedure readable: an NFSv3 READ still only reads */
	call_hdr_flavor(&b, 77, NFS_PROG, 3, 6, RPC_AUTH_GSS, RPC_GSS_SVC_INTEGRITY);
	u32(&b, 4 + 4 + 32 + 8 + 4); /* databody_integ: seq_num, READ3args */
	u32(&b, 7);
	opaque(&b, 0xf0, 32);
	u64(&b, 0);
	u32(&b, 4096);
	u32(&b, 16); /* checksum */
	fixed(&b, 0x33, 16);
	parse(&b, b.len, &c, NULL);
	assert_true(ulb_call_read_only(&c));

	/* a GSS context call (RPCSEC_GSS_INIT on NULL) makes server state */
	call_hdr_flavor(&b, 78, NFS_PROG, 3, 0, RPC_AUTH_GSS, RPC_GSS_SVC_NONE);
	xdr_put32(b.buf + 36, RPC_GSS_PROC_INIT); /* the credential's gss_proc */
	opaque(&b, 0x11, 40);			  /* the GSS token */
	parse(&b, b.len, &c, NULL);
	assert_int_equal(c.gss_proc, RPC_GSS_PROC_INIT);
	assert_false(ulb_call_read_only(&c));
}

/*
 * What may reach the server again under an XID its duplicate request cache
 * does not know: a call that only reads, or an NFSv4.1 COMPOUND opening
 * with SEQUENCE (the slot's reply cache answers its repeat), whatever it
 * does; not an NFSv4.0 or NFSv3 REMOVE, nor any RPCSEC_GSS call.
 */
static void test_safe_twice_calls(void **state)
{
	struct xb b;
	struct ulb_call c;

	compound_hdr(&b, 80, 1, 3); /* SEQUENCE, PUTFH, REMOVE "x" */
	op_sequence(&b, sid_a);
	op_putfh(&b);
	u32(&b, 28);
	opaque(&b, 'x', 1);
	assert_int_equal(parse(&b, b.len, &c, NULL), ULB_OK);
	assert_false(ulb_call_read_only(&c));
	assert_true(ulb_call_safe_twice(&c));

	compound_hdr(&b, 81, 0, 2); /* NFSv4.0: PUTFH, REMOVE "x" */
	op_putfh(&b);
	u32(&b, 28);
	opaque(&b, 'x', 1);
	assert_int_equal(parse(&b, b.len, &c, NULL), ULB_OK);
	assert_false(ulb_call_safe_twice(&c));

	call_hdr(&b, 82, NFS_PROG, 3, 12); /* NFSv3 REMOVE */
	u32(&b, 8);
	fixed(&b, 1, 8);
	opaque(&b, 'x', 1);
	assert_int_equal(parse(&b, b.len, &c, NULL), ULB_OK);
	assert_false(ulb_call_safe_twice(&c));

	call_hdr(&b, 83, NFS_PROG, 3, 6); /* NFSv3 READ */
	u32(&b, 8);
	fixed(&b, 1, 8);
	u64(&b, 0);
	u32(&b, 4096);
	assert_int_equal(parse(&b, b.len, &c, NULL), ULB_OK);
	assert_true(ulb_call_safe_twice(&c));

	/* krb5i READ: it only reads, but its verifier covers the XID */
	call_hdr_flavor(&b, 84, NFS_PROG, 3, 6, RPC_AUTH_GSS, RPC_GSS_SVC_INTEGRITY);
	u32(&b, 4 + 4 + 32 + 8 + 4);
	u32(&b, 7);
	opaque(&b, 0xf0, 32);
	u64(&b, 0);
	u32(&b, 4096);
	u32(&b, 16);
	fixed(&b, 0x33, 16);
	parse(&b, b.len, &c, NULL);
	assert_true(ulb_call_read_only(&c));
	assert_false(ulb_call_safe_twice(&c));
}

static void test_compound_unknown_op(void **state)
{
	struct xb b;
	struct ulb_call c;
	struct ulb_reply r;
	uint64_t before = ulb_counters.ddp_stopped;

	compound_hdr(&b, 50, 0, 4);
	op_putfh(&b);
	op_read(&b, 512);
	u32(&b, 999); /* no rule */
	op_write(&b, 1, 64);
	assert_int_equal(parse(&b, b.len, &c, NULL), ULB_DDP_STOPPED);
	assert_int_equal(c.stop_op, 999);
	assert_int_equal(c.n_args, 0);
	assert_int_equal(c.n_results, 0);
	assert_false(c.reply_exact);
	assert_int_equal(c.reply_max, DEFAULT_MAX);
	assert_int_equal(ulb_counters.ddp_stopped, before + 1);

	/* its reply: the items before the unknown operation are found */
	reply_hdr(&b, 50);
	u32(&b, 0);
	opaque(&b, 't', 3);
	u32(&b, 3);
	u32(&b, 22);
	u32(&b, 0);
	u32(&b, 25);
	u32(&b, 0);
	u32(&b, 1);
	uint32_t d = opaque(&b, 'x', 10);
	u32(&b, 999);
	u32(&b, 0);
	assert_int_equal(parse_reply(&c, &b, b.len, 0, &r, NULL), ULB_REPLY_STOPPED);
	assert_int_equal(r.stop_op, 999);
	assert_int_equal(r.n_items, 1);
	assert_int_equal(r.items[0].offset, d);
	/* OP_ILLEGAL ends a reply */
	xdr_put32(b.buf + d + 12, 10044);
	assert_int_equal(parse_reply(&c, &b, b.len, 0, &r, NULL), ULB_REPLY_OK);
	assert_int_equal(r.n_items, 1);
}

static void test_compound_lying_counts(void **state)
{
	struct xb b;
	struct ulb_call c;

	compound_hdr(&b, 60, 1, 0xffffffff);
	op_putfh(&b);
	assert_int_equal(parse(&b, b.len, &c, NULL), ULB_GARBAGE_ARGS);
	compound_hdr(&b, 61, 1, 3); /* says 3, has 1 */
	op_putfh(&b);
	assert_int_equal(parse(&b, b.len, &c, NULL), ULB_GARBAGE_ARGS);
	compound_hdr(&b, 62, 1, 1);
	xdr_put32(b.buf + b.len - 16, 0xfffffff0); /* tag length */
	op_putfh(&b);
	assert_int_equal(parse(&b, b.len, &c, NULL), ULB_GARBAGE_ARGS);
	/* a TEST_STATEID array count larger than the message */
	compound_hdr(&b, 63, 1, 1);
	u32(&b, 55);
	u32(&b, 0x10000000);
	fixed(&b, 0, 16);
	assert_int_equal(parse(&b, b.len, &c, NULL), ULB_GARBAGE_ARGS);
	/* a bool that is neither 0 nor 1 in an optional */
	compound_hdr(&b, 64, 1, 1);
	u32(&b, 49); /* LAYOUTCOMMIT */
	u64(&b, 0);
	u64(&b, 0);
	u32(&b, 0);
	fixed(&b, 0, 16);
	u32(&b, 2);
	assert_int_equal(parse(&b, b.len, &c, NULL), ULB_GARBAGE_ARGS);
}

static void test_sessions(void **state)
{
	struct xb b;
	struct ulb_call c;
	struct ulb_reply r;
	struct ulb_sessions s;

	memset(&s, 0, sizeof(s));
	/* CREATE_SESSION: the reply teaches the table */
	compound_hdr(&b, 70, 1, 1);
	u32(&b, 43);
	u64(&b, 0x1122);
	u32(&b, 1);
	u32(&b, 0);
	for (int ch = 0; ch < 2; ch++) {
		for (int i = 0; i < 6; i++)
			u32(&b, 1024);
		u32(&b, 0);
	}
	u32(&b, 0x40000000);
	u32(&b, 1);
	u32(&b, 0); /* AUTH_NONE */
	assert_int_equal(parse(&b, b.len, &c, &s), ULB_OK);

	reply_hdr(&b, 70);
	u32(&b, 0);
	opaque(&b, 't', 3);
	u32(&b, 1);
	u32(&b, 43);
	u32(&b, 0);
	memcpy(b.buf + b.len, sid_a, 16);
	b.len += 16;
	u32(&b, 1);
	u32(&b, 0);
	u32(&b, 0);	  /* headerpadsize */
	u32(&b, 1049620); /* maxrequestsize */
	u32(&b, 1049480); /* maxresponsesize */
	u32(&b, 7584);	  /* maxresponsesize_cached */
	u32(&b, 8);
	u32(&b, 64);
	u32(&b, 0);
	for (int i = 0; i < 6; i++)
		u32(&b, 4096);
	u32(&b, 0);
	/* a truncated CREATE_SESSION reply teaches nothing */
	assert_int_equal(parse_reply(&c, &b, b.len - 8, 0, &r, &s), ULB_REPLY_GARBAGE);
	assert_int_equal(ulb_sessions_maxresp(&s, sid_a), 0);
	assert_int_equal(parse_reply(&c, &b, b.len, 0, &r, &s), ULB_REPLY_OK);
	assert_int_equal(ulb_sessions_maxresp(&s, sid_a), 1049480);

	/* SEQUENCE + PUTFH + GETATTR: an estimate without the session ... */
	compound_hdr(&b, 71, 1, 3);
	op_sequence(&b, sid_a);
	op_putfh(&b);
	u32(&b, 9);
	u32(&b, 1);
	u32(&b, 0x10);
	assert_int_equal(parse(&b, b.len, &c, NULL), ULB_OK);
	assert_false(c.reply_exact);
	/* ... exact with it: ca_maxresponsesize */
	assert_int_equal(parse(&b, b.len, &c, &s), ULB_OK);
	assert_true(c.reply_exact);
	assert_int_equal(c.reply_max, 1049480);
	/* an exact bound below the session's limit is kept */
	compound_hdr(&b, 72, 1, 2);
	op_sequence(&b, sid_a);
	op_putfh(&b);
	assert_int_equal(parse(&b, b.len, &c, &s), ULB_OK);
	assert_true(c.reply_exact);
	assert_int_equal(c.reply_max, ULB_REPLY_HDR_MAX + 4 + 8 + 4 + (8 + 36) + 8);
	/* an unknown op after SEQUENCE: still bounded by the session */
	compound_hdr(&b, 73, 1, 2);
	op_sequence(&b, sid_a);
	u32(&b, 1000);
	assert_int_equal(parse(&b, b.len, &c, &s), ULB_DDP_STOPPED);
	assert_true(c.reply_exact);
	assert_int_equal(c.reply_max, 1049480);

	/* DESTROY_SESSION removes it once the server agrees */
	compound_hdr(&b, 74, 1, 1);
	u32(&b, 44);
	memcpy(b.buf + b.len, sid_a, 16);
	b.len += 16;
	assert_int_equal(parse(&b, b.len, &c, &s), ULB_OK);
	assert_true(c.destroys_session);
	reply_hdr(&b, 74);
	u32(&b, 10052); /* NFS4ERR_BADSESSION */
	opaque(&b, 't', 3);
	u32(&b, 1);
	u32(&b, 44);
	u32(&b, 10052);
	assert_int_equal(parse_reply(&c, &b, b.len, 0, &r, &s), ULB_REPLY_OK);
	assert_int_equal(ulb_sessions_maxresp(&s, sid_a), 1049480);
	xdr_put32(b.buf + 24, 0);
	xdr_put32(b.buf + b.len - 4, 0);
	assert_int_equal(parse_reply(&c, &b, b.len, 0, &r, &s), ULB_REPLY_OK);
	assert_int_equal(ulb_sessions_maxresp(&s, sid_a), 0);
}

/* A CB_COMPOUND opening with CB_SEQUENCE names its session; anything else names none. */
static void test_cb_sessionid(void **state)
{
	struct xb b;
	uint8_t id[ULB_SESSIONID_SIZE];

	(void)state;
	call_hdr(&b, 9, 0x40000000, 1, 1); /* the callback program of CREATE_SESSION */
	opaque(&b, 't', 3);
	u32(&b, 1); /* minorversion */
	u32(&b, 0); /* callback_ident */
	u32(&b, 2); /* CB_SEQUENCE, CB_RECALL */
	u32(&b, 11);
	memcpy(b.buf + b.len, sid_a, ULB_SESSIONID_SIZE);
	b.len += ULB_SESSIONID_SIZE;
	u32(&b, 1);
	uint32_t full = b.len;
	memset(id, 0, sizeof(id));
	assert_true(ulb_cb_sessionid(b.buf, full, id));
	assert_memory_equal(id, sid_a, ULB_SESSIONID_SIZE);
	/* Cut anywhere inside the session id or before it: refused, never read beyond. */
	for (uint32_t n = 0; n < full - 4; n++)
		assert_false(ulb_cb_sessionid(b.buf, n, id));
	/* Not CB_SEQUENCE first. */
	xdr_put32(b.buf + full - 4 - ULB_SESSIONID_SIZE - 4, 4); /* CB_RECALL */
	assert_false(ulb_cb_sessionid(b.buf, full, id));
	xdr_put32(b.buf + full - 4 - ULB_SESSIONID_SIZE - 4, 11);
	/* No operations. */
	xdr_put32(b.buf + full - 4 - ULB_SESSIONID_SIZE - 8, 0);
	assert_false(ulb_cb_sessionid(b.buf, full, id));
	xdr_put32(b.buf + full - 4 - ULB_SESSIONID_SIZE - 8, 2);
	/* A tag that claims more than the message. */
	uint32_t tag_off = full - 4 - ULB_SESSIONID_SIZE - 4 * 4 - 4 - 4;
	xdr_put32(b.buf + tag_off, 0xfffffff0u);
	assert_false(ulb_cb_sessionid(b.buf, full, id));
	xdr_put32(b.buf + tag_off, 3);
	assert_true(ulb_cb_sessionid(b.buf, full, id));
	/* CB_NULL names no session. */
	call_hdr(&b, 9, 0x40000000, 1, 0);
	assert_false(ulb_cb_sessionid(b.buf, b.len, id));
	/* A reply is no call. */
	reply_hdr(&b, 9);
	assert_false(ulb_cb_sessionid(b.buf, b.len, id));
}

static void test_session_table_replaces_oldest(void **state)
{
	struct ulb_sessions s;
	uint8_t id[ULB_SESSIONID_SIZE];

	memset(&s, 0, sizeof(s));
	for (int i = 0; i < ULB_SESSIONS_MAX + 2; i++) {
		memset(id, i + 1, sizeof(id));
		ulb_sessions_add(&s, id, 1000 + i);
	}
	memset(id, 1, sizeof(id));
	assert_int_equal(ulb_sessions_maxresp(&s, id), 0);
	memset(id, 2, sizeof(id));
	assert_int_equal(ulb_sessions_maxresp(&s, id), 0);
	memset(id, 3, sizeof(id));
	assert_int_equal(ulb_sessions_maxresp(&s, id), 1002);
	/* re-adding updates in place */
	ulb_sessions_add(&s, id, 5);
	assert_int_equal(ulb_sessions_maxresp(&s, id), 5);
	ulb_sessions_remove(&s, id);
	assert_int_equal(ulb_sessions_maxresp(&s, id), 0);
}

/* The back channel of a session: CREATE_SESSION gives it, another's bind takes it, a bind gives it.
 */
static void test_session_table_back_channel(void **state)
{
	struct ulb_sessions s;
	uint8_t id[ULB_SESSIONID_SIZE], other[ULB_SESSIONID_SIZE];

	(void)state;
	memset(&s, 0, sizeof(s));
	memset(id, 7, sizeof(id));
	memset(other, 8, sizeof(other));
	ulb_sessions_add(&s, id, 4000);
	assert_true(ulb_sessions_has_back(&s, id));
	/* taken: the entry and its limit stay, its callbacks go */
	assert_true(ulb_sessions_unbind_back(&s, id));
	assert_false(ulb_sessions_has_back(&s, id));
	assert_true(ulb_sessions_has(&s, id));
	assert_int_equal(ulb_sessions_maxresp(&s, id), 4000);
	assert_false(ulb_sessions_unbind_back(&s, id));
	assert_false(ulb_sessions_unbind_back(&s, other));
	/* bound again: the limit is kept */
	ulb_sessions_bind_back(&s, id);
	assert_true(ulb_sessions_has_back(&s, id));
	assert_int_equal(ulb_sessions_maxresp(&s, id), 4000);
	/* a session only bound here: no limit known */
	ulb_sessions_bind_back(&s, other);
	assert_true(ulb_sessions_has_back(&s, other));
	assert_int_equal(ulb_sessions_maxresp(&s, other), 0);
}

static void test_gss(void **state)
{
	struct xb b;
	struct ulb_call c;
	struct ulb_reply r;

	/* krb5 (service none): DDP as usual */
	call_hdr_flavor(&b, 80, NFS_PROG, 3, 7, RPC_AUTH_GSS, RPC_GSS_SVC_NONE);
	opaque(&b, 0xf0, 32);
	u64(&b, 0);
	u32(&b, 8);
	u32(&b, 2);
	uint32_t data = opaque(&b, 'g', 8);
	assert_int_equal(parse(&b, b.len, &c, NULL), ULB_OK);
	assert_int_equal(c.flavor, RPC_AUTH_GSS);
	assert_int_equal(c.gss_service, RPC_GSS_SVC_NONE);
	assert_int_equal(c.n_args, 1);
	assert_int_equal(c.args[0].offset, data);

	/* krb5i: databody_integ<> = seq, args; then the checksum. No DDP. */
	call_hdr_flavor(&b, 81, NFS_PROG, 3, 6, RPC_AUTH_GSS, RPC_GSS_SVC_INTEGRITY);
	uint32_t body = b.len;
	u32(&b, 0);
	u32(&b, 7);
	opaque(&b, 0xf0, 32);
	u64(&b, 0);
	u32(&b, 4000);
	xdr_put32(b.buf + body, b.len - body - 4);
	opaque(&b, 0x66, 28);
	assert_int_equal(parse(&b, b.len, &c, NULL), ULB_OK);
	assert_int_equal(c.gss_service, RPC_GSS_SVC_INTEGRITY);
	assert_int_equal(c.n_args, 0);
	assert_int_equal(c.n_results, 0);
	/* the bound still follows READ's count, plus the integrity wrapping */
	assert_true(c.reply_exact);
	assert_int_equal(c.reply_max, ULB_REPLY_HDR_MAX + 4 + 88 + 12 + 4000 + 4 + 4 + 4 + 400);
	/* its reply is opaque too */
	reply_hdr(&b, 81);
	u32(&b, 16);
	fixed(&b, 0, 16);
	assert_int_equal(parse_reply(&c, &b, b.len, 0, &r, NULL), ULB_REPLY_NO_RESULTS);
	/* a databody length beyond the message */
	call_hdr_flavor(&b, 82, NFS_PROG, 3, 6, RPC_AUTH_GSS, RPC_GSS_SVC_INTEGRITY);
	u32(&b, 1000);
	u32(&b, 7);
	assert_int_equal(parse(&b, b.len, &c, NULL), ULB_GARBAGE_ARGS);

	/* krb5p: nothing can be seen */
	call_hdr_flavor(&b, 83, NFS_PROG, 3, 7, RPC_AUTH_GSS, RPC_GSS_SVC_PRIVACY);
	opaque(&b, 0x77, 200);
	assert_int_equal(parse(&b, b.len, &c, NULL), ULB_OK);
	assert_int_equal(c.gss_service, RPC_GSS_SVC_PRIVACY);
	assert_int_equal(c.n_args, 0);
	assert_false(c.reply_exact);
	assert_int_equal(c.reply_max, DEFAULT_MAX);
}

static void test_other_programs(void **state)
{
	struct xb b;
	struct ulb_call c;

	/* unknown program: relayed, no items, default estimate */
	call_hdr(&b, 90, 400000, 1, 3);
	opaque(&b, 1, 100);
	assert_int_equal(parse(&b, b.len, &c, NULL), ULB_OK);
	assert_false(c.known);
	assert_int_equal(c.n_args, 0);
	assert_false(c.reply_exact);
	assert_int_equal(c.reply_max, DEFAULT_MAX);
	/* MOUNT MNT: a version-wide estimate */
	call_hdr(&b, 91, 100005, 3, 1);
	opaque(&b, '/', 7);
	assert_int_equal(parse(&b, b.len, &c, NULL), ULB_OK);
	assert_false(c.reply_exact);
	assert_int_equal(c.reply_max, ULB_REPLY_HDR_MAX + 4096);
	/* NLM: exact */
	call_hdr(&b, 92, 100021, 4, 2);
	assert_int_equal(parse(&b, b.len, &c, NULL), ULB_OK);
	assert_true(c.reply_exact);
	assert_int_equal(c.reply_max, ULB_REPLY_HDR_MAX + 2100);
	/* NFSACL GETACL: the estimate RFC 8267 lets a requester retry */
	call_hdr(&b, 93, 100227, 3, 1);
	opaque(&b, 0xf0, 32);
	u32(&b, 3);
	assert_int_equal(parse(&b, b.len, &c, NULL), ULB_OK);
	assert_int_equal(c.n_args, 0);
	assert_false(c.reply_exact);
	assert_int_equal(c.reply_max, ULB_REPLY_HDR_MAX + 8192);
	/* NFSv4.0 GETATTR: estimate */
	compound_hdr(&b, 94, 0, 2);
	op_putfh(&b);
	u32(&b, 9);
	u32(&b, 1);
	u32(&b, 0x1a);
	assert_int_equal(parse(&b, b.len, &c, NULL), ULB_OK);
	assert_false(c.reply_exact);
	assert_int_equal(c.reply_max, ULB_REPLY_HDR_MAX + 4 + 8 + 4 + 8 + 4 + 1024);
	/* NFSv3 procedure without a rule */
	call_hdr(&b, 95, NFS_PROG, 3, 22);
	assert_int_equal(parse(&b, b.len, &c, NULL), ULB_OK);
	assert_false(c.known);
	assert_false(c.reply_exact);
}

static void test_bad_headers(void **state)
{
	struct xb b;
	struct ulb_call c;

	call_hdr(&b, 100, NFS_PROG, 3, 0);
	assert_int_equal(parse(&b, b.len, &c, NULL), ULB_OK);
	assert_int_equal(c.reply_max, ULB_REPLY_HDR_MAX);
	assert_true(c.reply_exact);
	xdr_put32(b.buf + 8, 3);
	assert_int_equal(parse(&b, b.len, &c, NULL), ULB_BAD_HEADER);
	assert_int_equal(c.hdr_status, RPC_HDR_BAD_RPCVERS);
	assert_int_equal(c.xid, 100);
	xdr_put32(b.buf + 8, 2);
	xdr_put32(b.buf + 28, 401); /* credential too long */
	assert_int_equal(parse(&b, b.len, &c, NULL), ULB_BAD_HEADER);
	assert_int_equal(c.hdr_status, RPC_HDR_BAD_CRED);
	xdr_put32(b.buf + 4, RPC_MSG_REPLY);
	assert_int_equal(parse(&b, b.len, &c, NULL), ULB_BAD_HEADER);
	assert_int_equal(c.hdr_status, RPC_HDR_NOT_CALL);
	assert_int_equal(parse(&b, 3, &c, NULL), ULB_BAD_HEADER);
	assert_int_equal(c.hdr_status, RPC_HDR_SHORT);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_v3_write),
		cmocka_unit_test(test_read_only_calls),
		cmocka_unit_test(test_safe_twice_calls),
		cmocka_unit_test(test_v3_read_and_reply),
		cmocka_unit_test(test_v3_symlink_readlink_readdir),
		cmocka_unit_test(test_v2_symlink_item_in_the_middle),
		cmocka_unit_test(test_compound_several_writes),
		cmocka_unit_test(test_compound_several_reads),
		cmocka_unit_test(test_compound_read_fails),
		cmocka_unit_test(test_compound_create_symlink),
		cmocka_unit_test(test_compound_getattr_acl_unbounded),
		cmocka_unit_test(test_compound_unknown_op),
		cmocka_unit_test(test_compound_lying_counts),
		cmocka_unit_test(test_sessions),
		cmocka_unit_test(test_session_table_replaces_oldest),
		cmocka_unit_test(test_cb_sessionid),
		cmocka_unit_test(test_session_table_back_channel),
		cmocka_unit_test(test_gss),
		cmocka_unit_test(test_other_programs),
		cmocka_unit_test(test_bad_headers),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
