/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target: the transport header decoder (and, for what it accepts, the
 * accessors, the checks and the encoder).
 *
 * Each input is decoded as a received header twice, with the default
 * limits (Version One only) and with raised ones and Version Two enabled.
 * For every header the decoder accepts, the target reads every segment back
 * through the accessors, runs the XID and role checks, and re-encodes it:
 * an RDMA_MSG or RDMA_NOMSG of either version must come out of
 * rpcrdma_encode_call() byte for byte as it came in (its direction
 * included), and a reply must pass rpcrdma_hdr_check_reply() against an
 * offer made of its own chunks. A Version Two RDMA2_OPTIONAL, decoded but
 * unknown, must come out of rpcrdma_encode_optional() the same up to its
 * pad, and a Version Two RDMA2_ERROR has no payload. Any disagreement aborts.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "rdma/rpcrdma_hdr.h"

#define FUZZ_SEGS 64u

static struct rpcrdma_seg rsegs[RPCRDMA_MAX_READ_CHUNKS][FUZZ_SEGS];
static struct rpcrdma_seg wsegs[RPCRDMA_MAX_WRITE_CHUNKS][FUZZ_SEGS];
static struct rpcrdma_seg rcsegs[FUZZ_SEGS];
static uint8_t enc[65536];

#define CHECK(cond)                                                                                \
	do {                                                                                       \
		if (!(cond))                                                                       \
			abort();                                                                   \
	} while (0)

static void check_chunk(const struct rpcrdma_chunk *c, struct rpcrdma_seg *out)
{
	uint64_t sum = 0;

	CHECK(c->nsegs <= FUZZ_SEGS);
	CHECK(rpcrdma_chunk_copy(c, out, FUZZ_SEGS) == c->nsegs);
	for (uint32_t i = 0; i < c->nsegs; i++)
		sum += out[i].length;
	CHECK(sum == c->length);
	CHECK(c->length <= RPCRDMA_MAX_CHUNK_LEN);
}

static void reencode(const struct rpcrdma_hdr *h, const uint8_t *data)
{
	struct rpcrdma_read_chunk_desc reads[RPCRDMA_MAX_READ_CHUNKS];
	struct rpcrdma_chunk_desc writes[RPCRDMA_MAX_WRITE_CHUNKS], reply = { 0, rcsegs };
	struct rpcrdma_call_desc d = {
		.version = h->version,
		.xid = h->xid,
		.credits = h->credits,
		.proc = h->proc,
		.nreads = h->nreads,
		.reads = reads,
		.nwrites = h->nwrites,
		.writes = writes,
		.reply = h->has_reply ? &reply : NULL,
		.direction = h->direction,
	};
	struct rpcrdma_offer offer = { h->nwrites, writes, h->has_reply ? &reply : NULL };
	ssize_t n;

	for (uint32_t i = 0; i < h->nreads; i++)
		reads[i] = (struct rpcrdma_read_chunk_desc){ h->read[i].position, h->read[i].nsegs,
							     rsegs[i] };
	for (uint32_t i = 0; i < h->nwrites; i++)
		writes[i] = (struct rpcrdma_chunk_desc){ h->write[i].nsegs, wsegs[i] };
	reply.nsegs = h->has_reply ? h->reply.nsegs : 0;

	n = rpcrdma_encode_call(enc, sizeof(enc), &d);
	if (h->wire_proc == RPCRDMA_MSGP) {
		/* re-encoded as RDMA_MSG, without the two padding words */
		CHECK(n == (ssize_t)h->hdr_len - 8);
	} else {
		CHECK(n == (ssize_t)h->hdr_len);
		CHECK(memcmp(enc, data, (size_t)n) == 0);
	}
	/* a reply echoing exactly what was offered never mismatches */
	enum rpcrdma_reason r = rpcrdma_hdr_check_reply(h, &offer);
	CHECK(r != RPCRDMA_R_REPLY_WRITE_LIST_MISMATCH && r != RPCRDMA_R_REPLY_CHUNK_MISMATCH);
}

/* A Version Two optional message: re-encoded, its words come back (pad aside). */
static void check_optional(const struct rpcrdma_hdr *h, const uint8_t *data, size_t size)
{
	const struct rpcrdma_opt_desc d = {
		.xid = h->xid,
		.credits = h->credits,
		.direction = h->direction,
		.type = h->opt_type,
		.info_len = h->opt_len,
		.info = h->opt_info,
	};
	ssize_t n;

	CHECK(h->version == RPCRDMA_V2 && h->proc == RPCRDMA2_OPTIONAL);
	CHECK(h->hdr_len + h->inline_len == size);
	CHECK(h->hdr_len >= RPCRDMA2_OPT_MIN_SIZE);
	CHECK((uint64_t)h->opt_len + RPCRDMA2_OPT_MIN_SIZE <= h->hdr_len);
	CHECK(h->opt_info == data + RPCRDMA2_OPT_MIN_SIZE);
	n = rpcrdma_encode_optional(enc, sizeof(enc), &d);
	if (n < 0) {
		CHECK(n == -EMSGSIZE && h->hdr_len > sizeof(enc));
		return;
	}
	CHECK(n == (ssize_t)h->hdr_len);
	CHECK(memcmp(enc, data, RPCRDMA2_OPT_MIN_SIZE + h->opt_len) == 0);
}

static void one(const uint8_t *data, size_t size, const struct rpcrdma_limits *lim)
{
	struct rpcrdma_hdr h;
	enum rpcrdma_reason r = rpcrdma_hdr_decode(&h, data, size, lim);
	bool v2;

	CHECK(rpcrdma_reason_name(r)[0] != '?');
	if (r == RPCRDMA_R_UNKNOWN_OPTION || r == RPCRDMA_R_UNKNOWN_OPTION_REPLY)
		check_optional(&h, data, size);
	if (r != RPCRDMA_OK)
		return;
	CHECK(h.hdr_len + h.inline_len == size);
	/* an ERR_VERS of a version not enabled is read by Version One's rules */
	v2 = h.version == RPCRDMA_V2 && (lim->versions & (1u << RPCRDMA_V2));
	CHECK(v2 ? h.direction <= RPCRDMA_RPC_REPLY : h.direction == RPCRDMA_DIR_NONE);
	if (h.proc == RPCRDMA_ERROR) {
		/* no payload after a Version Two error (4.2.1) */
		CHECK(!v2 || h.inline_len == 0);
		return;
	}
	CHECK((uint64_t)h.read_nsegs * RPCRDMA_READ_SEG_SIZE <= h.hdr_len);
	for (uint32_t i = 0; i < h.read_nsegs; i++) {
		struct rpcrdma_read_seg rs;
		rpcrdma_read_seg(&h, i, &rs);
		CHECK((rs.position & 3) == 0);
	}
	for (uint32_t i = 0; i < h.nreads; i++) {
		check_chunk(&h.read[i], rsegs[i]);
		if (i > 0)
			CHECK(h.read[i].position > h.read[i - 1].position);
	}
	for (uint32_t i = 0; i < h.nwrites; i++)
		check_chunk(&h.write[i], wsegs[i]);
	if (h.has_reply)
		check_chunk(&h.reply, rcsegs);
	if (h.proc == RPCRDMA_MSG)
		(void)rpcrdma_hdr_check_xid(&h, data + h.hdr_len, h.inline_len);
	(void)rpcrdma_hdr_check_call(&h);
	(void)rpcrdma_hdr_check_reply(&h, NULL);
	reencode(&h, data);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct rpcrdma_limits lim;

	rpcrdma_limits_default(&lim);
	one(data, size, &lim);
	lim.max_read_chunks = RPCRDMA_MAX_READ_CHUNKS;
	lim.max_write_chunks = RPCRDMA_MAX_WRITE_CHUNKS;
	lim.max_chunk_segs = FUZZ_SEGS;
	lim.versions |= 1u << RPCRDMA_V2;
	one(data, size, &lim);
	return 0;
}
