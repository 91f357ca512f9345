/* SPDX-License-Identifier: MIT */
/*
 * The reverse pipeline's byte arithmetic (gateway/reverse/reverse_plan.c): where the
 * pieces of a call with Read chunks go in the assembled message, which RDMA
 * Reads bring them there, and how a reply goes back (Write chunks, inline,
 * Reply chunk, or ERR_CHUNK), against hand-made headers and the encoder's
 * own output.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "common/xdr.h"
#include "gateway/reverse/reverse_plan.h"

/* ---- building transport headers ---- */

struct hb {
	uint8_t buf[2048];
	size_t len;
};

static void put(struct hb *b, uint32_t v)
{
	xdr_put32(b->buf + b->len, v);
	b->len += 4;
}

static void put64(struct hb *b, uint64_t v)
{
	xdr_put64(b->buf + b->len, v);
	b->len += 8;
}

static void hdr_start(struct hb *b, uint32_t proc)
{
	b->len = 0;
	put(b, 0x1234); /* xid */
	put(b, 1);
	put(b, 32);
	put(b, proc);
}

/* A Read list entry: handle = 0x100 + position, remote offset = 0x10000 * position + off. */
static void read_seg(struct hb *b, uint32_t position, uint32_t len, uint64_t remote)
{
	put(b, 1);
	put(b, position);
	put(b, 0x100 + position);
	put(b, len);
	put64(b, remote);
}

/* End the Read list; no Write list, no Reply chunk; then @inl bytes of "inline". */
static void hdr_finish(struct hb *b, uint32_t inl)
{
	put(b, 0);
	put(b, 0);
	put(b, 0);
	for (uint32_t i = 0; i < inl; i++)
		b->buf[b->len++] = (uint8_t)(i + 1);
}

static void decode(const struct hb *b, struct rpcrdma_hdr *h)
{
	struct rpcrdma_limits lim;

	rpcrdma_limits_default(&lim);
	assert_int_equal(rpcrdma_hdr_decode(h, b->buf, b->len, &lim), RPCRDMA_OK);
	assert_int_equal(rpcrdma_hdr_check_call(h), RPCRDMA_OK);
}

/* The call @b decoded into @h and laid out in @l, as a call of at most 1 MiB. */
static void lay_out(const struct hb *b, struct rpcrdma_hdr *h, struct rev_call_layout *l)
{
	decode(b, h);
	assert_int_equal(rev_call_layout(h, 1 << 20, l), REV_LAYOUT_OK);
}

/* Collect every Read of a call. */
static unsigned all_reads(const struct rev_call_layout *l, const struct rpcrdma_hdr *h,
			  struct rev_read_op *ops, unsigned cap)
{
	struct rev_read_cursor cur = { 0 };
	unsigned n = 0;
	enum rev_read_status st;

	while ((st = rev_read_next(l, h->read_list, h->read_nsegs, &cur, &ops[n])) == REV_READ_OP)
		assert_true(++n < cap);
	assert_int_equal(st, REV_READ_END);
	return n;
}

/* ---- calls ---- */

/* An NFS WRITE as the Linux client sends it: head inline, data in a chunk, tail inline. */
static void test_layout_write_with_tail(void **state)
{
	(void)state;
	struct hb b;
	struct rpcrdma_hdr h;
	struct rev_call_layout l;
	struct rev_read_op ops[8];

	hdr_start(&b, RPCRDMA_MSG);
	read_seg(&b, 100, 1021, 0x5000); /* 1021 bytes: 3 bytes of pad in the message */
	hdr_finish(&b, 108);		 /* 100 head + 8 tail */
	lay_out(&b, &h, &l);
	assert_false(l.p0);
	assert_int_equal(l.base_len, 108);
	assert_int_equal(l.total_len, 108 + 1024);
	assert_int_equal(l.ninserts, 1);
	assert_int_equal(l.ins[0].at, 100);
	assert_int_equal(l.ins[0].position, 100);

	uint32_t run, dst;
	dst = rev_layout_map(&l, 0, &run);
	assert_int_equal(dst, 0);
	assert_int_equal(run, 100);
	dst = rev_layout_map(&l, 100, &run); /* the tail, after the chunk and its pad */
	assert_int_equal(dst, 100 + 1024);
	assert_int_equal(run, 8);

	assert_int_equal(all_reads(&l, &h, ops, 8), 1);
	assert_int_equal(ops[0].dst, 100);
	assert_int_equal(ops[0].len, 1021);
	assert_int_equal(ops[0].handle, 0x100 + 100);
	assert_true(ops[0].remote == 0x5000);
}

/* A chunk of several segments lands contiguously; two chunks keep their positions. */
static void test_layout_two_chunks_multi_segment(void **state)
{
	(void)state;
	struct hb b;
	struct rpcrdma_hdr h;
	struct rev_call_layout l;
	struct rev_read_op ops[8];

	hdr_start(&b, RPCRDMA_MSG);
	read_seg(&b, 40, 4096, 0xa000);
	read_seg(&b, 40, 10, 0xb000); /* same chunk: 4106 bytes, pad 2 */
	read_seg(&b, 40 + 4108 + 12, 5, 0xc000);
	hdr_finish(&b, 40 + 12 + 4);
	lay_out(&b, &h, &l);
	assert_int_equal(l.ninserts, 2);
	assert_int_equal(l.ins[0].len, 4106);
	assert_int_equal(l.ins[1].at, 52);
	assert_int_equal(l.total_len, 56 + 4108 + 8);

	assert_int_equal(all_reads(&l, &h, ops, 8), 3);
	assert_int_equal(ops[0].dst, 40);
	assert_int_equal(ops[0].len, 4096);
	assert_int_equal(ops[1].dst, 40 + 4096);
	assert_int_equal(ops[1].len, 10);
	assert_int_equal(ops[2].dst, 40 + 4108 + 12);
	assert_int_equal(ops[2].len, 5);

	uint32_t run, dst = rev_layout_map(&l, 40, &run);
	assert_int_equal(dst, 40 + 4108);
	assert_int_equal(run, 12);
	dst = rev_layout_map(&l, 52, &run);
	assert_int_equal(dst, 40 + 4108 + 12 + 8);
	assert_int_equal(run, 4);
}

/* RDMA_NOMSG: the Position-Zero chunk is the message, read whole, segment by segment. */
static void test_layout_position_zero(void **state)
{
	(void)state;
	struct hb b;
	struct rpcrdma_hdr h;
	struct rev_call_layout l;
	struct rev_read_op ops[8];

	hdr_start(&b, RPCRDMA_NOMSG);
	read_seg(&b, 0, 3000, 0x1000);
	read_seg(&b, 0, 2000, 0x9000);
	hdr_finish(&b, 0);
	lay_out(&b, &h, &l);
	assert_true(l.p0);
	assert_int_equal(l.base_len, 5000);
	assert_int_equal(l.total_len, 5000);
	assert_int_equal(all_reads(&l, &h, ops, 8), 2);
	assert_int_equal(ops[0].dst, 0);
	assert_int_equal(ops[0].len, 3000);
	assert_int_equal(ops[1].dst, 3000);
	assert_int_equal(ops[1].len, 2000);
	assert_true(ops[1].remote == 0x9000);
}

/*
 * Position Zero and another Read chunk together (RFC 8267 servers must take
 * it): a P0 segment that spans the insertion point is split there.
 */
static void test_layout_position_zero_with_insert(void **state)
{
	(void)state;
	struct hb b;
	struct rpcrdma_hdr h;
	struct rev_call_layout l;
	struct rev_read_op ops[8];

	hdr_start(&b, RPCRDMA_NOMSG);
	read_seg(&b, 0, 200, 0x1000);
	read_seg(&b, 120, 7, 0x2000); /* 7 bytes at 120: the P0 stream continues at 128 */
	hdr_finish(&b, 0);
	lay_out(&b, &h, &l);
	assert_int_equal(l.total_len, 208);
	assert_int_equal(all_reads(&l, &h, ops, 8), 3);
	assert_int_equal(ops[0].dst, 0);
	assert_int_equal(ops[0].len, 120);
	assert_true(ops[0].remote == 0x1000);
	assert_int_equal(ops[1].dst, 128); /* the rest of P0, after the chunk and its pad */
	assert_int_equal(ops[1].len, 80);
	assert_true(ops[1].remote == 0x1000 + 120);
	assert_int_equal(ops[2].dst, 120);
	assert_int_equal(ops[2].len, 7);
}

/* Zero-length segments need no Read; limits and bad shapes are refused. */
static void test_layout_refused(void **state)
{
	(void)state;
	struct hb b;
	struct rpcrdma_hdr h;
	struct rev_call_layout l;
	struct rev_read_op ops[8];

	hdr_start(&b, RPCRDMA_MSG);
	read_seg(&b, 8, 0, 0x1000);
	read_seg(&b, 8, 16, 0x2000);
	hdr_finish(&b, 16);
	lay_out(&b, &h, &l);
	assert_int_equal(all_reads(&l, &h, ops, 8), 1);
	assert_int_equal(ops[0].len, 16);
	/* Longer than allowed. */
	assert_int_equal(rev_call_layout(&h, 31, &l), REV_LAYOUT_TOO_LONG);
	assert_int_equal(rev_call_layout(&h, 32, &l), REV_LAYOUT_OK);

	/* No chunks: nothing to lay out. */
	hdr_start(&b, RPCRDMA_MSG);
	hdr_finish(&b, 16);
	decode(&b, &h);
	assert_int_equal(rev_call_layout(&h, 1 << 20, &l), REV_LAYOUT_NO_CHUNKS);

	/* A hand-broken decoded header: positions going back. */
	hdr_start(&b, RPCRDMA_MSG);
	read_seg(&b, 8, 16, 0x1000);
	read_seg(&b, 40, 4, 0x2000);
	hdr_finish(&b, 32);
	decode(&b, &h);
	h.read[1].position = 12;
	assert_int_equal(rev_call_layout(&h, 1 << 20, &l), REV_LAYOUT_BAD);
	h.read[1].position = 42;
	assert_int_equal(rev_call_layout(&h, 1 << 20, &l), REV_LAYOUT_BAD);
}

/* The Read list must agree with the layout it was made from. */
static void test_read_list_mismatch(void **state)
{
	(void)state;
	struct hb b;
	struct rpcrdma_hdr h;
	struct rev_call_layout l;
	struct rev_read_op op;
	struct rev_read_cursor cur = { 0 };

	hdr_start(&b, RPCRDMA_MSG);
	read_seg(&b, 8, 16, 0x1000);
	hdr_finish(&b, 16);
	lay_out(&b, &h, &l);
	l.ins[0].len = 8; /* the list now says more than the layout holds */
	assert_int_equal(rev_read_next(&l, h.read_list, h.read_nsegs, &cur, &op), REV_READ_BAD);
}

/* ---- replies ---- */

/* An NFSv3 READ reply with 1021 bytes of data at offset 100, then 8 more bytes. */
static uint8_t *read_reply(uint32_t *len)
{
	*len = 100 + 1024 + 8;
	uint8_t *m = calloc(1, *len);
	for (uint32_t i = 0; i < *len; i++)
		m[i] = (uint8_t)(i * 3 + 1);
	return m;
}

/*
 * The reply @msg (@len bytes) with its one result @item (NULL: none), the
 * client having offered @nwrites Write chunks: to go back as Version One
 * under a 4 KiB inline limit.
 */
static struct rev_reply_in reply_in(const uint8_t *msg, uint32_t len,
				    const struct ulb_reply_item *item, uint32_t nwrites,
				    const struct rpcrdma_chunk_desc *writes)
{
	return (struct rev_reply_in){ .msg = msg,
				      .len = len,
				      .items = item,
				      .nitems = item ? 1 : 0,
				      .nwrites = nwrites,
				      .writes = writes,
				      .send_max = 4096,
				      .version = 1 };
}

static struct iovec iov[RPCRDMA_MAX_WRITE_CHUNKS + 1];

static uint8_t *flatten(const struct splice_out *o)
{
	uint8_t *f = malloc(o->len + 1), *p = f;

	for (unsigned i = 0; i < o->cnt; i++) {
		memcpy(p, o->iov[i].iov_base, o->iov[i].iov_len);
		p += o->iov[i].iov_len;
	}
	return f;
}

/*
 * The plan's transport header as rpcrdma_encode_reply() writes it, decoded
 * into @h (when it was written): its length, or the encoder's error.
 */
static ssize_t reply_header(const struct rev_reply_plan *p, struct rpcrdma_hdr *h)
{
	uint8_t hdr[256];
	struct rpcrdma_limits lim;
	ssize_t hl = rpcrdma_encode_reply(hdr, sizeof(hdr), &p->desc);

	if (hl > 0) {
		rpcrdma_limits_default(&lim);
		assert_int_equal(rpcrdma_hdr_decode(h, hdr, (size_t)hl, &lim), RPCRDMA_OK);
	}
	return hl;
}

static void test_reply_write_chunk_inline_rest(void **state)
{
	(void)state;
	uint32_t len;
	uint8_t *msg = read_reply(&len);
	struct ulb_reply_item item = { .offset = 100, .length = 1021 };
	/* As the Linux client offers it: the data, and a 4-byte pad segment. */
	struct rpcrdma_seg segs[2] = { { 7, 1024, 0x10000 }, { 8, 4, 0x20000 } };
	struct rpcrdma_chunk_desc wc = { 2, segs };
	struct rev_reply_in in = reply_in(msg, len, &item, 1, &wc);
	struct splice_out red = { iov, RPCRDMA_MAX_WRITE_CHUNKS + 1, 0, 0 };
	struct rev_reply_plan p;

	in.xid = 0x1234;
	in.credits = 64;
	rev_plan_reply(&in, &red, &p);
	assert_int_equal(p.how, REV_REPLY_INLINE);
	assert_int_equal(p.write_used[0], 1021); /* no pad written (RFC 8166) */
	assert_int_equal(p.write_off[0], 100);
	assert_int_equal(p.moved_bytes, 1021);
	assert_int_equal(red.len, 108); /* the data and its pad left the inline part */
	uint8_t *f = flatten(&red);
	assert_memory_equal(f, msg, 100);
	assert_memory_equal(f + 100, msg + 100 + 1024, 8);
	free(f);

	/* The echoed header: the chunk with lengths filled in order, pad segment 0. */
	struct rpcrdma_hdr h;
	assert_int_equal(reply_header(&p, &h), p.hdr_len);
	assert_int_equal(h.proc, RPCRDMA_MSG);
	assert_int_equal(h.nwrites, 1);
	assert_int_equal(h.write[0].nsegs, 2);
	assert_int_equal(h.write[0].length, 1021);
	struct rpcrdma_seg s;
	rpcrdma_chunk_seg(&h.write[0], 1, &s);
	assert_int_equal(s.length, 0);
	assert_false(h.has_reply);
	free(msg);
}

/* An item larger than its chunk: the client cannot get its reply as asked. */
static void test_reply_write_chunk_too_small(void **state)
{
	(void)state;
	uint32_t len;
	uint8_t *msg = read_reply(&len);
	struct ulb_reply_item item = { .offset = 100, .length = 1021 };
	struct rpcrdma_seg seg = { 7, 1020, 0x10000 };
	struct rpcrdma_chunk_desc wc = { 1, &seg };
	struct rev_reply_in in = reply_in(msg, len, &item, 1, &wc);
	struct splice_out red = { iov, RPCRDMA_MAX_WRITE_CHUNKS + 1, 0, 0 };
	struct rev_reply_plan p;

	rev_plan_reply(&in, &red, &p);
	assert_int_equal(p.how, REV_REPLY_ERR_CHUNK);
	assert_string_equal(p.why, "write_chunk_too_small");
	free(msg);
}

/*
 * Every offered chunk comes back: one with no room means "inline", and a
 * reply without the item (an error) returns the chunk unused.
 */
static void test_reply_unused_chunks_echoed(void **state)
{
	(void)state;
	uint32_t len;
	uint8_t *msg = read_reply(&len);
	struct ulb_reply_item item = { .offset = 100, .length = 1021 };
	struct rpcrdma_seg segs[2] = { { 7, 0, 0x10000 }, { 9, 4096, 0x30000 } };
	struct rpcrdma_chunk_desc wc[2] = { { 1, &segs[0] }, { 1, &segs[1] } };
	struct rev_reply_in in = reply_in(msg, len, &item, 2, wc);
	struct splice_out red = { iov, RPCRDMA_MAX_WRITE_CHUNKS + 1, 0, 0 };
	struct rev_reply_plan p;

	rev_plan_reply(&in, &red, &p);
	assert_int_equal(p.how, REV_REPLY_INLINE);
	assert_int_equal(p.write_used[0], 0);
	assert_int_equal(p.write_used[1], 0); /* no second item */
	assert_int_equal(red.len, len);	      /* nothing moved */
	assert_int_equal(p.desc.nwrites, 2);

	in.nitems = 0; /* an error reply: no items at all */
	rev_plan_reply(&in, &red, &p);
	assert_int_equal(p.how, REV_REPLY_INLINE);
	assert_int_equal(p.moved_bytes, 0);
	assert_int_equal(p.hdr_len, 28 + 2 * (8 + 16));
	free(msg);
}

/* Too long for inline: the Reply chunk (RDMA_NOMSG), or ERR_CHUNK without one. */
static void test_reply_long(void **state)
{
	(void)state;
	uint32_t len = 9000;
	uint8_t *msg = calloc(1, len);
	struct rpcrdma_seg rsegs[2] = { { 11, 8192, 0x40000 }, { 12, 8192, 0x50000 } };
	struct rpcrdma_chunk_desc rc = { 2, rsegs };
	struct rev_reply_in in = reply_in(msg, len, NULL, 0, NULL);
	struct splice_out red = { iov, RPCRDMA_MAX_WRITE_CHUNKS + 1, 0, 0 };
	struct rev_reply_plan p;

	in.xid = 5;
	in.credits = 64;
	rev_plan_reply(&in, &red, &p);
	assert_int_equal(p.how, REV_REPLY_ERR_CHUNK);

	in.reply = &rc;
	rev_plan_reply(&in, &red, &p);
	assert_int_equal(p.how, REV_REPLY_NOMSG);
	assert_int_equal(p.desc.proc, RPCRDMA_NOMSG);
	assert_int_equal(p.desc.reply_used, 9000);
	struct rpcrdma_hdr h;
	assert_true(reply_header(&p, &h) > 0);
	assert_int_equal(h.proc, RPCRDMA_NOMSG);
	assert_int_equal(h.reply.length, 9000);
	assert_int_equal(h.inline_len, 0);

	/* A reply that fits inline leaves the offered Reply chunk unused. */
	in.len = 100;
	rev_plan_reply(&in, &red, &p);
	assert_int_equal(p.how, REV_REPLY_INLINE);
	assert_int_equal(p.desc.reply_used, 0);

	/* Larger than the Reply chunk. */
	in.len = 8192 * 2 + 4;
	free(msg);
	msg = calloc(1, in.len);
	in.msg = msg;
	rev_plan_reply(&in, &red, &p);
	assert_int_equal(p.how, REV_REPLY_ERR_CHUNK);
	assert_string_equal(p.why, "reply_chunk_too_small");
	free(msg);
}

/* Write chunks and a Reply chunk together: data by Write, the rest by the Reply chunk. */
static void test_reply_write_and_reply_chunk(void **state)
{
	(void)state;
	uint32_t len = 100 + 65536 + 6000;
	uint8_t *msg = calloc(1, len);
	struct ulb_reply_item item = { .offset = 100, .length = 65536 };
	struct rpcrdma_seg wseg = { 7, 65536, 0x10000 }, rseg = { 8, 8192, 0x90000 };
	struct rpcrdma_chunk_desc wc = { 1, &wseg }, rc = { 1, &rseg };
	struct rev_reply_in in = reply_in(msg, len, &item, 1, &wc);
	struct splice_out red = { iov, RPCRDMA_MAX_WRITE_CHUNKS + 1, 0, 0 };
	struct rev_reply_plan p;

	in.reply = &rc;
	rev_plan_reply(&in, &red, &p);
	assert_int_equal(p.how, REV_REPLY_NOMSG);
	assert_int_equal(p.write_used[0], 65536);
	assert_int_equal(red.len, 6100);
	assert_int_equal(p.desc.reply_used, 6100);
	free(msg);
}

/* Slicing a gathered message for the RDMA Writes into a Reply chunk's segments. */
static void test_iov_slice(void **state)
{
	(void)state;
	uint8_t a[10], b[20], c[5];
	struct iovec in[3] = { { a, 10 }, { b, 20 }, { c, 5 } };
	struct iovec out[4];

	assert_int_equal(rev_iov_slice(in, 3, 0, 35, out, 4), 3);
	assert_int_equal(rev_iov_slice(in, 3, 5, 10, out, 4), 2);
	assert_ptr_equal(out[0].iov_base, a + 5);
	assert_int_equal(out[0].iov_len, 5);
	assert_ptr_equal(out[1].iov_base, b);
	assert_int_equal(out[1].iov_len, 5);
	assert_int_equal(rev_iov_slice(in, 3, 12, 3, out, 4), 1);
	assert_ptr_equal(out[0].iov_base, b + 2);
	assert_int_equal(rev_iov_slice(in, 3, 29, 6, out, 4), 2);
	assert_int_equal(out[1].iov_len, 5);
	/* Beyond the data, empty, or more pieces than room. */
	assert_int_equal(rev_iov_slice(in, 3, 30, 6, out, 4), 0);
	assert_int_equal(rev_iov_slice(in, 3, 3, 0, out, 4), 0);
	assert_int_equal(rev_iov_slice(in, 3, 0, 35, out, 2), 0);
}

/* ---- credits ---- */

static void test_admit_rules(void **state)
{
	(void)state;
	assert_int_equal(rev_admit_call(0, 1, 1), REV_ADMIT_TAKE);
	assert_int_equal(rev_admit_call(63, 64, 1), REV_ADMIT_TAKE);
	/* Slots all held by Sends not yet completed: the call waits, the client is fine. */
	assert_int_equal(rev_admit_call(0, 64, 0), REV_ADMIT_WAIT);
	assert_int_equal(rev_admit_call(63, 64, 0), REV_ADMIT_WAIT);
	/* Only the credits judge the client, whatever slots are free. */
	assert_int_equal(rev_admit_call(64, 64, 100), REV_ADMIT_OVERRUN);
	assert_int_equal(rev_admit_call(64, 64, 0), REV_ADMIT_OVERRUN);
	assert_int_equal(rev_admit_call(UINT32_MAX, 64, 1), REV_ADMIT_OVERRUN);
}

/*
 * The pipeline's accounting, modelled: a client that keeps its whole grant
 * in flight and sends its next call the moment an answer reaches it, and a
 * gateway whose Send completions come late (slots then stay held after the
 * client has its answer). Messages wait in arrival order, as rev_rx_pump()
 * has them.
 */
struct credit_model {
	uint32_t grant, slots;
	/* the client: calls sent, answers not yet seen */
	uint32_t client_out;
	/* on the wire toward the gateway, and toward the client */
	uint32_t to_gw, to_client;
	/* the gateway: waiting for a slot, holding a credit, Sends not completed */
	uint32_t parked, outstanding, busy, sends_pending;
	uint64_t waits;
	bool overrun;
};

static void model_pump(struct credit_model *m)
{
	while (m->parked && !m->overrun) {
		switch (rev_admit_call(m->outstanding, m->grant, m->slots - m->busy)) {
		case REV_ADMIT_WAIT:
			m->waits++;
			return;
		case REV_ADMIT_OVERRUN:
			m->overrun = true;
			return;
		case REV_ADMIT_TAKE:
			m->parked--;
			m->outstanding++;
			m->busy++;
			break;
		}
	}
}

static void model_step(struct credit_model *m, unsigned r, uint32_t extra_calls)
{
	switch (r % 8) {
	case 0: /* the client sends while it has credit (and @extra_calls beyond, if asked) */
	case 1:
		if (m->client_out < m->grant + extra_calls) {
			m->client_out++;
			m->to_gw++;
		}
		break;
	case 2: /* a receive completes */
	case 3:
		if (m->to_gw) {
			m->to_gw--;
			m->parked++;
			model_pump(m);
		}
		break;
	case 4: /* the upstream answers a call: the Send is posted, the credit is back */
	case 5:
		if (m->outstanding) {
			m->outstanding--;
			m->sends_pending++;
			m->to_client++;
		}
		break;
	case 6: /* the answer reaches the client */
		if (m->to_client) {
			m->to_client--;
			m->client_out--;
		}
		break;
	case 7: /* a Send completes, seldom: the slot frees */
		if (m->sends_pending && (r / 8) % 16 == 0) {
			m->sends_pending--;
			m->busy--;
			model_pump(m);
		}
		break;
	}
}

static void test_admit_full_credit_client(void **state)
{
	(void)state;
	struct credit_model m = { .grant = 8, .slots = 16 };

	srand(12);
	for (unsigned i = 0; i < 200000 && !m.overrun; i++)
		model_step(&m, (unsigned)rand(), 0);
	assert_false(m.overrun);
	/* The run did reach the case: calls waited for slots held by Sends. */
	assert_true(m.waits > 0);
	assert_true(m.parked + m.outstanding <= m.grant);
}

static void test_admit_overrun_client(void **state)
{
	(void)state;
	struct credit_model m = { .grant = 8, .slots = 16 };

	/* One call more than granted, all before any answer. */
	for (uint32_t i = 0; i <= m.grant; i++)
		model_step(&m, 0, 1);
	for (uint32_t i = 0; i <= m.grant; i++)
		model_step(&m, 2, 1);
	assert_true(m.overrun);
	assert_int_equal(m.outstanding, m.grant);
}

/* ---- remote invalidation ---- */

/* A call's chunk lists with the given handles (0 entries: no such chunk), then 40 inline bytes. */
struct chunks {
	unsigned nread, nwrite, nreply;
	uint32_t read[2], write[2], reply[2];
};

/* A Write or Reply chunk: present, its @n segments of 4096 bytes naming @handles. */
static void put_chunk(struct hb *b, unsigned n, const uint32_t *handles, uint64_t base)
{
	put(b, 1);
	put(b, n);
	for (unsigned i = 0; i < n; i++) {
		put(b, handles[i]);
		put(b, 4096);
		put64(b, base * (i + 1));
	}
}

static uint32_t inv_of(const struct chunks *c)
{
	struct hb b;
	struct rpcrdma_hdr h;

	hdr_start(&b, 0 /* RDMA_MSG */);
	for (unsigned i = 0; i < c->nread; i++) {
		put(&b, 1);
		put(&b, 40); /* after the inline part */
		put(&b, c->read[i]);
		put(&b, 512);
		put64(&b, 0x10000u * (i + 1));
	}
	put(&b, 0);
	if (c->nwrite)
		put_chunk(&b, c->nwrite, c->write, 0x20000u);
	put(&b, 0); /* end of the Write list */
	if (c->nreply)
		put_chunk(&b, c->nreply, c->reply, 0x30000u);
	else
		put(&b, 0);
	for (uint32_t i = 0; i < 40; i++)
		b.buf[b.len++] = (uint8_t)(i + 1);
	decode(&b, &h);
	return rev_inv_rkey(&h);
}

/*
 * The answer invalidates the client's region only when every segment of
 * the call's chunks names one handle, as the Linux server decides it: one
 * chunk (a READ's Write chunk, a WRITE's Read chunk) or several segments
 * of one region; never when two regions are named, nor for a call without
 * chunks, nor for the handle 0 that Send With Invalidate cannot name.
 */
static void test_inv_rkey_only_for_one_region(void **state)
{
	(void)state;
	const struct {
		struct chunks c;
		uint32_t want;
	} cases[] = {
		{ { 0 }, 0 },
		{ { .nwrite = 1, .write = { 0xabc } }, 0xabc },
		{ { .nwrite = 2, .write = { 0xabc, 0xabc } }, 0xabc },
		{ { .nwrite = 2, .write = { 0xabc, 0xabd } }, 0 },
		{ { .nread = 1, .read = { 0x111 } }, 0x111 },
		{ { .nread = 2, .read = { 0x111, 0x111 } }, 0x111 },
		{ { .nread = 1, .read = { 0x111 }, .nwrite = 1, .write = { 0x222 } }, 0 },
		{ { .nwrite = 1, .write = { 0xabc }, .nreply = 1, .reply = { 0xabc } }, 0xabc },
		{ { .nwrite = 1, .write = { 0xabc }, .nreply = 1, .reply = { 0xdef } }, 0 },
		{ { .nreply = 2, .reply = { 0x5, 0x6 } }, 0 },
		{ { .nreply = 1, .reply = { 0x5 } }, 0x5 },
		{ { .nwrite = 1, .write = { 0 } }, 0 },
		{ { .nwrite = 2, .write = { 0, 0x7 } }, 0 },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		uint32_t got = inv_of(&cases[i].c);
		if (got != cases[i].want)
			fail_msg("case %zu: %#x, want %#x", i, got, cases[i].want);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_layout_write_with_tail),
		cmocka_unit_test(test_layout_two_chunks_multi_segment),
		cmocka_unit_test(test_layout_position_zero),
		cmocka_unit_test(test_layout_position_zero_with_insert),
		cmocka_unit_test(test_layout_refused),
		cmocka_unit_test(test_read_list_mismatch),
		cmocka_unit_test(test_reply_write_chunk_inline_rest),
		cmocka_unit_test(test_reply_write_chunk_too_small),
		cmocka_unit_test(test_reply_unused_chunks_echoed),
		cmocka_unit_test(test_reply_long),
		cmocka_unit_test(test_reply_write_and_reply_chunk),
		cmocka_unit_test(test_iov_slice),
		cmocka_unit_test(test_admit_rules),
		cmocka_unit_test(test_admit_full_credit_client),
		cmocka_unit_test(test_admit_overrun_client),
		cmocka_unit_test(test_inv_rkey_only_for_one_region),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
