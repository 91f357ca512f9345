/* SPDX-License-Identifier: MIT */
/*
 * rdma/rpcrdma_hdr.c - RPC-over-RDMA transport header decoding and checks
 * (encoding is in rpcrdma_hdr_encode.c).
 *
 * The Version One wire format (5666bis-01 section 13.1 draws it):
 *
 *   xid vers credit proc
 *   Read list:   1 PHLOO 1 PHLOO ... 0        (same P = one Read chunk)
 *   Write list:  1 N HLOO..HLOO 1 M HLOO..HLOO ... 0
 *   Reply chunk: 0 | 1 N HLOO..HLOO
 *
 * Version Two (draft-cel-nfsv4-rpcrdma-version-two-01 section 4.2):
 *
 *   RDMA2_MSG, RDMA2_NOMSG: xid 2 credit proc D <the same three lists>
 *   RDMA2_ERROR:            xid 2 credit 4 err [low high]     (no payload)
 *   RDMA2_OPTIONAL:         xid 2 credit 5 D type len info<pad> [payload]
 *
 * where D is the direction, the RPC msg_type: 0 CALL, 1 REPLY.
 *
 * The decoder makes one pass over these words with a cursor and an end
 * pointer; every read is preceded by a check that the bytes are there, and
 * every count is checked against a limit before it is used to size
 * anything, so no input can make it read outside the buffer.
 */
#include <errno.h>
#include <string.h>

#include "rdma/rpcrdma_hdr.h"

/* Reason table: stable names for counters and logs, and a responder's answer. */
static const struct {
	const char *name;
	enum rpcrdma_action action;
} reasons[RPCRDMA_R__COUNT] = {
	[RPCRDMA_OK] = { "ok", RPCRDMA_ACT_ACCEPT },
	[RPCRDMA_R_SHORT_FIXED] = { "short_fixed", RPCRDMA_ACT_DROP },
	[RPCRDMA_R_BAD_VERSION] = { "bad_version", RPCRDMA_ACT_ERR_VERS },
	[RPCRDMA_R_BAD_PROC] = { "bad_proc", RPCRDMA_ACT_ERR_CHUNK },
	[RPCRDMA_R_RDMA_DONE] = { "rdma_done", RPCRDMA_ACT_DROP },
	[RPCRDMA_R_SHORT_HEADER] = { "short_header", RPCRDMA_ACT_ERR_CHUNK },
	[RPCRDMA_R_BAD_LIST_MARKER] = { "bad_list_marker", RPCRDMA_ACT_ERR_CHUNK },
	[RPCRDMA_R_TOO_MANY_READ_CHUNKS] = { "too_many_read_chunks", RPCRDMA_ACT_ERR_CHUNK },
	[RPCRDMA_R_TOO_MANY_WRITE_CHUNKS] = { "too_many_write_chunks", RPCRDMA_ACT_ERR_CHUNK },
	[RPCRDMA_R_TOO_MANY_SEGMENTS] = { "too_many_segments", RPCRDMA_ACT_ERR_CHUNK },
	[RPCRDMA_R_POSITION_UNALIGNED] = { "read_position_unaligned", RPCRDMA_ACT_ERR_CHUNK },
	[RPCRDMA_R_READ_LIST_UNSORTED] = { "read_list_unsorted", RPCRDMA_ACT_ERR_CHUNK },
	[RPCRDMA_R_READ_CHUNKS_OVERLAP] = { "read_chunks_overlap", RPCRDMA_ACT_ERR_CHUNK },
	[RPCRDMA_R_LENGTH_OVERFLOW] = { "length_overflow", RPCRDMA_ACT_ERR_CHUNK },
	[RPCRDMA_R_POSITION_ZERO_WITH_MSG] = { "position_zero_with_msg", RPCRDMA_ACT_ERR_CHUNK },
	[RPCRDMA_R_NOMSG_WITHOUT_CHUNKS] = { "nomsg_without_chunks", RPCRDMA_ACT_ERR_CHUNK },
	[RPCRDMA_R_POSITION_BEYOND_MSG] = { "read_position_beyond_message", RPCRDMA_ACT_ERR_CHUNK },
	[RPCRDMA_R_ERROR_SHORT] = { "error_short", RPCRDMA_ACT_DROP },
	[RPCRDMA_R_ERROR_BAD_CODE] = { "error_bad_code", RPCRDMA_ACT_DROP },
	[RPCRDMA_R_RPC_SHORT] = { "rpc_short", RPCRDMA_ACT_ERR_CHUNK },
	[RPCRDMA_R_XID_MISMATCH] = { "xid_mismatch", RPCRDMA_ACT_ERR_CHUNK },
	[RPCRDMA_R_CALL_NOMSG_WITHOUT_P0] = { "call_nomsg_without_position_zero",
					      RPCRDMA_ACT_ERR_CHUNK },
	[RPCRDMA_R_REPLY_HAS_READ_LIST] = { "reply_has_read_list", RPCRDMA_ACT_DROP },
	[RPCRDMA_R_REPLY_NOMSG_WITHOUT_REPLY_CHUNK] = { "reply_nomsg_without_reply_chunk",
							RPCRDMA_ACT_DROP },
	[RPCRDMA_R_REPLY_MSG_USES_REPLY_CHUNK] = { "reply_msg_uses_reply_chunk", RPCRDMA_ACT_DROP },
	[RPCRDMA_R_REPLY_WRITE_LIST_MISMATCH] = { "reply_write_list_mismatch", RPCRDMA_ACT_DROP },
	[RPCRDMA_R_REPLY_CHUNK_MISMATCH] = { "reply_chunk_mismatch", RPCRDMA_ACT_DROP },
	[RPCRDMA_R_BAD_DIRECTION] = { "bad_direction", RPCRDMA_ACT_ERR_CHUNK },
	[RPCRDMA_R_MSG_WITHOUT_PAYLOAD] = { "msg_without_payload", RPCRDMA_ACT_ERR_CHUNK },
	[RPCRDMA_R_ERROR_WITH_PAYLOAD] = { "error_with_payload", RPCRDMA_ACT_DROP },
	[RPCRDMA_R_OPTION_TOO_LONG] = { "option_too_long", RPCRDMA_ACT_ERR_CHUNK },
	[RPCRDMA_R_UNKNOWN_OPTION] = { "unknown_option", RPCRDMA_ACT_ERR_INVAL_OPTION },
	[RPCRDMA_R_UNKNOWN_OPTION_REPLY] = { "unknown_option_reply", RPCRDMA_ACT_DROP },
	[RPCRDMA_R_DIRECTION_MISMATCH] = { "direction_mismatch", RPCRDMA_ACT_ERR_CHUNK },
};

const char *rpcrdma_reason_name(enum rpcrdma_reason r)
{
	if ((unsigned)r >= RPCRDMA_R__COUNT)
		return "?";
	return reasons[r].name;
}

enum rpcrdma_action rpcrdma_reason_action(enum rpcrdma_reason r)
{
	if ((unsigned)r >= RPCRDMA_R__COUNT)
		return RPCRDMA_ACT_DROP;
	return reasons[r].action;
}

/* The versions this file has a codec for. */
#define SPOKEN_VERSIONS ((1u << RPCRDMA_V1) | (1u << RPCRDMA_V2))

void rpcrdma_limits_default(struct rpcrdma_limits *lim)
{
	lim->max_read_chunks = RPCRDMA_DEFAULT_READ_CHUNKS;
	lim->max_write_chunks = RPCRDMA_DEFAULT_WRITE_CHUNKS;
	lim->max_chunk_segs = RPCRDMA_DEFAULT_CHUNK_SEGS;
	lim->versions = 1u << RPCRDMA_V1;
}

bool rpcrdma_limits_clamp(struct rpcrdma_limits *lim)
{
	struct rpcrdma_limits old = *lim;

	if (lim->max_read_chunks > RPCRDMA_MAX_READ_CHUNKS)
		lim->max_read_chunks = RPCRDMA_MAX_READ_CHUNKS;
	if (lim->max_write_chunks > RPCRDMA_MAX_WRITE_CHUNKS)
		lim->max_write_chunks = RPCRDMA_MAX_WRITE_CHUNKS;
	lim->versions &= SPOKEN_VERSIONS;
	if (!lim->versions)
		lim->versions = 1u << RPCRDMA_V1;
	return memcmp(&old, lim, sizeof(old)) == 0;
}

void rpcrdma_versions_range(const struct rpcrdma_limits *lim, uint32_t *low, uint32_t *high)
{
	uint32_t v = lim->versions & SPOKEN_VERSIONS;

	if (!v)
		v = 1u << RPCRDMA_V1;
	*low = (uint32_t)__builtin_ctz(v);
	*high = 31u - (uint32_t)__builtin_clz(v);
}

/*
 * Version One decoding
 */

static inline size_t left(const uint8_t *p, const uint8_t *end)
{
	return (size_t)(end - p);
}

/*
 * Read list: entries "1 P H L OO", ended by "0". Entries with equal
 * positions are one chunk; they must be adjacent since the list is sorted.
 * Each new chunk must start at or after the end of the previous one, its
 * pad included, since the data of two chunks cannot share bytes of the
 * stream. The P0 chunk is the message itself, not a piece of it, so the
 * chunks after it are placed in the stream it carries.
 */
static enum rpcrdma_reason decode_read_list(struct rpcrdma_hdr *h, const uint8_t **pp,
					    const uint8_t *end, const struct rpcrdma_limits *lim)
{
	const uint8_t *p = *pp;
	struct rpcrdma_chunk *ch = NULL;
	uint64_t chunk_len = 0;
	uint64_t next_free = 0; /* first stream offset after the previous chunk and its pad */
	uint32_t nsegs = 0, nreads = 0;
	uint32_t max_chunks = lim->max_read_chunks;

	if (max_chunks > RPCRDMA_MAX_READ_CHUNKS)
		max_chunks = RPCRDMA_MAX_READ_CHUNKS;
	h->read_list = p + 4;
	for (;;) {
		uint32_t marker, pos, len;

		if (left(p, end) < 4)
			return RPCRDMA_R_SHORT_HEADER;
		marker = xdr_get32(p);
		if (marker == 0) {
			p += 4;
			break;
		}
		if (marker != 1)
			return RPCRDMA_R_BAD_LIST_MARKER;
		if (left(p, end) < RPCRDMA_READ_SEG_SIZE)
			return RPCRDMA_R_SHORT_HEADER;
		pos = xdr_get32(p + 4);
		len = xdr_get32(p + 12);
		if (ch && pos == ch->position) {
			if (ch->nsegs == lim->max_chunk_segs)
				return RPCRDMA_R_TOO_MANY_SEGMENTS;
			ch->nsegs++;
			chunk_len += len;
		} else {
			if (pos & 3)
				return RPCRDMA_R_POSITION_UNALIGNED;
			if (ch) {
				if (pos < ch->position)
					return RPCRDMA_R_READ_LIST_UNSORTED;
				if (chunk_len > RPCRDMA_MAX_CHUNK_LEN ||
				    (uint64_t)ch->position + chunk_len > RPCRDMA_MAX_CHUNK_LEN)
					return RPCRDMA_R_LENGTH_OVERFLOW;
				ch->length = (uint32_t)chunk_len;
				if (ch->position != 0)
					next_free = ch->position + xdr_align(ch->length);
				if (pos < next_free)
					return RPCRDMA_R_READ_CHUNKS_OVERLAP;
			}
			if (lim->max_chunk_segs == 0)
				return RPCRDMA_R_TOO_MANY_SEGMENTS;
			if (nreads == max_chunks)
				return RPCRDMA_R_TOO_MANY_READ_CHUNKS;
			ch = &h->read[nreads++];
			ch->xdr = p + 8;
			ch->nsegs = 1;
			ch->stride = RPCRDMA_READ_SEG_SIZE;
			ch->position = pos;
			chunk_len = len;
		}
		nsegs++;
		p += RPCRDMA_READ_SEG_SIZE;
	}
	if (ch) {
		if (chunk_len > RPCRDMA_MAX_CHUNK_LEN ||
		    (uint64_t)ch->position + chunk_len > RPCRDMA_MAX_CHUNK_LEN)
			return RPCRDMA_R_LENGTH_OVERFLOW;
		ch->length = (uint32_t)chunk_len;
	}
	h->read_nsegs = nsegs;
	h->nreads = nreads;
	*pp = p;
	return RPCRDMA_OK;
}

/* One counted array of segments "N HLOO..." (a Write chunk or the Reply chunk). */
static enum rpcrdma_reason decode_segments(struct rpcrdma_chunk *ch, const uint8_t **pp,
					   const uint8_t *end, const struct rpcrdma_limits *lim)
{
	const uint8_t *p = *pp;
	uint64_t len = 0;
	uint32_t n, i;

	if (left(p, end) < 4)
		return RPCRDMA_R_SHORT_HEADER;
	n = xdr_get32(p);
	p += 4;
	if (n > lim->max_chunk_segs)
		return RPCRDMA_R_TOO_MANY_SEGMENTS;
	/* n is bounded by the limit here, so n * 16 cannot wrap */
	if (left(p, end) < (size_t)n * RPCRDMA_SEG_SIZE)
		return RPCRDMA_R_SHORT_HEADER;
	for (i = 0; i < n; i++)
		len += xdr_get32(p + (size_t)i * RPCRDMA_SEG_SIZE + 4);
	if (len > RPCRDMA_MAX_CHUNK_LEN)
		return RPCRDMA_R_LENGTH_OVERFLOW;
	ch->xdr = p;
	ch->nsegs = n;
	ch->stride = RPCRDMA_SEG_SIZE;
	ch->position = 0;
	ch->length = (uint32_t)len;
	*pp = p + (size_t)n * RPCRDMA_SEG_SIZE;
	return RPCRDMA_OK;
}

static enum rpcrdma_reason decode_write_list(struct rpcrdma_hdr *h, const uint8_t **pp,
					     const uint8_t *end, const struct rpcrdma_limits *lim)
{
	uint32_t max_chunks = lim->max_write_chunks;
	uint32_t n = 0;

	if (max_chunks > RPCRDMA_MAX_WRITE_CHUNKS)
		max_chunks = RPCRDMA_MAX_WRITE_CHUNKS;
	for (;;) {
		enum rpcrdma_reason r;
		uint32_t marker;

		if (left(*pp, end) < 4)
			return RPCRDMA_R_SHORT_HEADER;
		marker = xdr_get32(*pp);
		*pp += 4;
		if (marker == 0)
			break;
		if (marker != 1)
			return RPCRDMA_R_BAD_LIST_MARKER;
		if (n == max_chunks)
			return RPCRDMA_R_TOO_MANY_WRITE_CHUNKS;
		r = decode_segments(&h->write[n], pp, end, lim);
		if (r)
			return r;
		n++;
	}
	h->nwrites = n;
	return RPCRDMA_OK;
}

static enum rpcrdma_reason decode_reply_chunk(struct rpcrdma_hdr *h, const uint8_t **pp,
					      const uint8_t *end, const struct rpcrdma_limits *lim)
{
	uint32_t marker;

	if (left(*pp, end) < 4)
		return RPCRDMA_R_SHORT_HEADER;
	marker = xdr_get32(*pp);
	*pp += 4;
	h->has_reply = marker == 1;
	if (marker == 0)
		return RPCRDMA_OK;
	if (marker != 1)
		return RPCRDMA_R_BAD_LIST_MARKER;
	return decode_segments(&h->reply, pp, end, lim);
}

/*
 * Every Read chunk must land inside the message it is inserted into: at or
 * before the end of the inline part plus the chunks placed before it. For
 * RDMA_MSG the message is what follows the header; for RDMA_NOMSG it is
 * the P0 chunk. Without a P0 chunk an RDMA_NOMSG has no stream to place
 * chunks in (rpcrdma_hdr_check_call() refuses it).
 */
static enum rpcrdma_reason check_read_positions(const struct rpcrdma_hdr *h)
{
	uint64_t base, placed = 0;
	uint32_t i = 0;

	if (h->proc == RPCRDMA_MSG) {
		base = h->inline_len;
	} else if (rpcrdma_hdr_has_p0(h)) {
		base = h->read[0].length;
		i = 1;
	} else {
		return RPCRDMA_OK;
	}
	for (; i < h->nreads; i++) {
		const struct rpcrdma_chunk *ch = &h->read[i];

		if (ch->position - placed > base)
			return RPCRDMA_R_POSITION_BEYOND_MSG;
		placed += xdr_align(ch->length);
	}
	return RPCRDMA_OK;
}

static enum rpcrdma_reason decode_chunks(struct rpcrdma_hdr *h, const uint8_t *buf,
					 const uint8_t *p, const uint8_t *end,
					 const struct rpcrdma_limits *lim)
{
	enum rpcrdma_reason r;

	r = decode_read_list(h, &p, end, lim);
	if (r)
		return r;
	r = decode_write_list(h, &p, end, lim);
	if (r)
		return r;
	r = decode_reply_chunk(h, &p, end, lim);
	if (r)
		return r;
	h->hdr_len = (uint32_t)(p - buf);
	h->inline_len = (uint32_t)(end - p);

	if (h->proc == RPCRDMA_MSG) {
		/* the message follows the header: it cannot also be in a P0 chunk */
		if (rpcrdma_hdr_has_p0(h))
			return RPCRDMA_R_POSITION_ZERO_WITH_MSG;
		/* and in Version Two it MUST be there (4.2.1) */
		if (p == end && h->version == RPCRDMA_V2)
			return RPCRDMA_R_MSG_WITHOUT_PAYLOAD;
	} else if (!rpcrdma_hdr_has_p0(h) && !h->has_reply) {
		/* RDMA_NOMSG: the message has to be somewhere */
		return RPCRDMA_R_NOMSG_WITHOUT_CHUNKS;
	}
	return check_read_positions(h);
}

/*
 * The body of an RDMA_ERROR: a code, and the version range of ERR_VERS.
 * Version Two adds RDMA2_ERR_INVAL_OPTION (its RDMA2_ERR_BAD_HEADER is
 * ERR_CHUNK by value), and no payload may follow its errors (4.2.1).
 */
static enum rpcrdma_reason decode_error(struct rpcrdma_hdr *h, const uint8_t *buf, const uint8_t *p,
					const uint8_t *end, uint32_t version)
{
	if (left(p, end) < 4)
		return RPCRDMA_R_ERROR_SHORT;
	h->err = xdr_get32(p);
	p += 4;
	switch (h->err) {
	case RPCRDMA_ERR_VERS:
		if (left(p, end) < 8)
			return RPCRDMA_R_ERROR_SHORT;
		h->vers_low = xdr_get32(p);
		h->vers_high = xdr_get32(p + 4);
		p += 8;
		break;
	case RPCRDMA_ERR_CHUNK:
		break;
	case RPCRDMA2_ERR_INVAL_OPTION:
		if (version == RPCRDMA_V2)
			break;
		return RPCRDMA_R_ERROR_BAD_CODE;
	default:
		return RPCRDMA_R_ERROR_BAD_CODE;
	}
	h->hdr_len = (uint32_t)(p - buf);
	h->inline_len = (uint32_t)(end - p);
	if (version == RPCRDMA_V2 && h->inline_len)
		return RPCRDMA_R_ERROR_WITH_PAYLOAD;
	return RPCRDMA_OK;
}

/*
 * Most messages are inline calls and replies: three empty lists. Take them
 * in one look, which halves the cost of decoding them. p is where the lists
 * start, hdr_len the header's length with them.
 */
static inline bool no_chunks(struct rpcrdma_hdr *h, const uint8_t *p, const uint8_t *end,
			     uint32_t hdr_len)
{
	uint32_t w[3];

	if (left(p, end) < 12)
		return false;
	memcpy(w, p, sizeof(w));
	/* a Read list first: the costliest headers leave at the first word */
	if (w[0] || (w[1] | w[2]))
		return false;
	h->read_list = p + 4;
	h->read_nsegs = 0;
	h->hdr_len = hdr_len;
	h->inline_len = (uint32_t)(end - p) - 12;
	return true;
}

static enum rpcrdma_reason v1_decode_body(struct rpcrdma_hdr *h, const uint8_t *buf, size_t len,
					  const struct rpcrdma_limits *lim)
{
	const uint8_t *p = buf + RPCRDMA_FIXED_SIZE, *end = buf + len;

	switch (h->wire_proc) {
	case RPCRDMA_MSG:
	case RPCRDMA_NOMSG:
		h->proc = h->wire_proc;
		h->nreads = h->nwrites = 0;
		h->has_reply = false;
		if (no_chunks(h, p, end, RPCRDMA_HDR_MIN_SIZE))
			return h->proc == RPCRDMA_MSG ? RPCRDMA_OK : RPCRDMA_R_NOMSG_WITHOUT_CHUNKS;
		return decode_chunks(h, buf, p, end, lim);
	case RPCRDMA_MSGP:
		/* a receiver treats it as RDMA_MSG; the padding hints are ignored */
		if (left(p, end) < 8)
			return RPCRDMA_R_SHORT_HEADER;
		h->msgp_align = xdr_get32(p);
		h->msgp_thresh = xdr_get32(p + 4);
		h->proc = RPCRDMA_MSG;
		h->nreads = h->nwrites = 0;
		h->has_reply = false;
		return decode_chunks(h, buf, p + 8, end, lim);
	case RPCRDMA_DONE:
		h->proc = RPCRDMA_DONE;
		return RPCRDMA_R_RDMA_DONE;
	case RPCRDMA_ERROR:
		h->proc = RPCRDMA_ERROR;
		return decode_error(h, buf, p, end, RPCRDMA_V1);
	default:
		return RPCRDMA_R_BAD_PROC;
	}
}

/*
 * Version Two decoding
 */

/* A direction word: the only values are msg_type's (section 4.2.2). */
static inline enum rpcrdma_reason decode_direction(struct rpcrdma_hdr *h, const uint8_t **pp,
						   const uint8_t *end)
{
	uint32_t dir;

	if (left(*pp, end) < 4)
		return RPCRDMA_R_SHORT_HEADER;
	dir = xdr_get32(*pp);
	if (dir != RPCRDMA_RPC_CALL && dir != RPCRDMA_RPC_REPLY)
		return RPCRDMA_R_BAD_DIRECTION;
	h->direction = dir;
	*pp += 4;
	return RPCRDMA_OK;
}

/*
 * RDMA2_MSG and RDMA2_NOMSG: a direction, then Version One's chunk lists.
 * Both are at least a direction and three list words long, which one
 * bounds check covers; decode_chunks() refuses an RDMA2_MSG with chunks
 * and no payload.
 */
static enum rpcrdma_reason v2_decode_chunks(struct rpcrdma_hdr *h, const uint8_t *buf,
					    const uint8_t *p, const uint8_t *end,
					    const struct rpcrdma_limits *lim)
{
	enum rpcrdma_reason r;

	if (left(p, end) < 16)
		return RPCRDMA_R_SHORT_HEADER;
	r = decode_direction(h, &p, end);
	if (r)
		return r;
	h->proc = h->wire_proc;
	h->nreads = h->nwrites = 0;
	h->has_reply = false;
	if (!no_chunks(h, p, end, RPCRDMA2_HDR_MIN_SIZE))
		return decode_chunks(h, buf, p, end, lim);
	if (h->proc == RPCRDMA_NOMSG)
		return RPCRDMA_R_NOMSG_WITHOUT_CHUNKS;
	/* an RDMA2_MSG MUST carry its RPC message in the Send (4.2.1) */
	if (h->inline_len == 0)
		return RPCRDMA_R_MSG_WITHOUT_PAYLOAD;
	return RPCRDMA_OK;
}

/*
 * RDMA2_OPTIONAL: a direction, a type, and opaque information; what
 * follows it, all, part or none of an RPC message, is payload (4.2.1). The
 * draft defines no type, so every one is unknown: a requester's (CALL) is
 * answered with RDMA2_ERR_INVAL_OPTION (section 3.1); a responder's (REPLY)
 * cannot be, as errors only go from responder to requester, and is dropped.
 */
static enum rpcrdma_reason v2_decode_optional(struct rpcrdma_hdr *h, const uint8_t *buf,
					      const uint8_t *p, const uint8_t *end)
{
	enum rpcrdma_reason r = decode_direction(h, &p, end);
	uint64_t padded;

	h->proc = RPCRDMA2_OPTIONAL;
	if (r)
		return r;
	if (left(p, end) < 8)
		return RPCRDMA_R_SHORT_HEADER;
	h->opt_type = xdr_get32(p);
	h->opt_len = xdr_get32(p + 4);
	p += 8;
	/* 64 bits: a length near 2^32 must not wrap when rounded up */
	padded = ((uint64_t)h->opt_len + 3) & ~3ull;
	if (padded > left(p, end))
		return RPCRDMA_R_OPTION_TOO_LONG;
	h->opt_info = p;
	p += padded;
	h->hdr_len = (uint32_t)(p - buf);
	h->inline_len = (uint32_t)(end - p);
	return h->direction == RPCRDMA_RPC_CALL ? RPCRDMA_R_UNKNOWN_OPTION
						: RPCRDMA_R_UNKNOWN_OPTION_REPLY;
}

static enum rpcrdma_reason v2_decode_body(struct rpcrdma_hdr *h, const uint8_t *buf, size_t len,
					  const struct rpcrdma_limits *lim)
{
	const uint8_t *p = buf + RPCRDMA_FIXED_SIZE, *end = buf + len;

	switch (h->wire_proc) {
	case RPCRDMA_MSG:
	case RPCRDMA_NOMSG:
		return v2_decode_chunks(h, buf, p, end, lim);
	case RPCRDMA_ERROR:
		/* only a responder sends one (4.2.2) */
		h->proc = RPCRDMA_ERROR;
		h->direction = RPCRDMA_RPC_REPLY;
		return decode_error(h, buf, p, end, RPCRDMA_V2);
	case RPCRDMA2_OPTIONAL:
		return v2_decode_optional(h, buf, p, end);
	default:
		/* RDMA_MSGP and RDMA_DONE are gone from Version Two */
		return RPCRDMA_R_BAD_PROC;
	}
}

enum rpcrdma_reason rpcrdma_hdr_decode(struct rpcrdma_hdr *h, const void *buf, size_t len,
				       const struct rpcrdma_limits *lim)
{
	const uint8_t *p = buf;

	/* without the fixed words there is no version to judge and no proc */
	if (len < RPCRDMA_FIXED_SIZE || len > UINT32_MAX)
		return RPCRDMA_R_SHORT_FIXED;
	h->xid = xdr_get32(p);
	h->version = xdr_get32(p + 4);
	h->credits = xdr_get32(p + 8);
	h->wire_proc = xdr_get32(p + 12);
	h->direction = RPCRDMA_DIR_NONE;
	/* one test each, Version One (every Linux peer) first */
	if (h->version == RPCRDMA_V1 && (lim->versions & (1u << RPCRDMA_V1)))
		return v1_decode_body(h, p, len, lim);
	if (h->version == RPCRDMA_V2 && (lim->versions & (1u << RPCRDMA_V2)))
		return v2_decode_body(h, p, len, lim);
	/*
	 * ERR_VERS is laid out alike in every version and is how a requester
	 * learns what its peer speaks, so it is read whatever its version field
	 * says: the Linux server puts there the version of the message it
	 * refuses (tests/data/rpcrdma), not one it speaks.
	 */
	if (h->wire_proc == RPCRDMA_ERROR && len >= RPCRDMA_ERR_VERS_SIZE &&
	    xdr_get32(p + RPCRDMA_FIXED_SIZE) == RPCRDMA_ERR_VERS) {
		h->proc = RPCRDMA_ERROR;
		return decode_error(h, p, p + RPCRDMA_FIXED_SIZE, p + len, RPCRDMA_V1);
	}
	return RPCRDMA_R_BAD_VERSION;
}

enum rpcrdma_reason rpcrdma_hdr_check_xid(const struct rpcrdma_hdr *h, const void *rpc, size_t len)
{
	if (len < 8)
		return RPCRDMA_R_RPC_SHORT;
	if (xdr_get32(rpc) != h->xid)
		return RPCRDMA_R_XID_MISMATCH;
	/* Version Two: the header's direction is the message's msg_type (4.2.2) */
	if (h->direction != RPCRDMA_DIR_NONE && xdr_get32((const uint8_t *)rpc + 4) != h->direction)
		return RPCRDMA_R_DIRECTION_MISMATCH;
	return RPCRDMA_OK;
}

/* Only RDMA_MSG and RDMA_NOMSG carry chunk lists; the role checks pass anything else. */
static bool has_lists(const struct rpcrdma_hdr *h)
{
	return h->proc == RPCRDMA_MSG || h->proc == RPCRDMA_NOMSG;
}

enum rpcrdma_reason rpcrdma_hdr_check_call(const struct rpcrdma_hdr *h)
{
	if (!has_lists(h))
		return RPCRDMA_OK;
	if (h->direction == RPCRDMA_RPC_REPLY)
		return RPCRDMA_R_DIRECTION_MISMATCH;
	if (h->proc == RPCRDMA_NOMSG && !rpcrdma_hdr_has_p0(h))
		return RPCRDMA_R_CALL_NOMSG_WITHOUT_P0;
	return RPCRDMA_OK;
}

/* The echoed chunk has the offered shape and claims no more than offered. */
static bool chunk_echoes(const struct rpcrdma_chunk *ch, const struct rpcrdma_chunk_desc *offer)
{
	struct rpcrdma_seg s;
	uint32_t i;

	if (ch->nsegs != offer->nsegs)
		return false;
	for (i = 0; i < ch->nsegs; i++) {
		rpcrdma_chunk_seg(ch, i, &s);
		if (s.handle != offer->segs[i].handle || s.offset != offer->segs[i].offset ||
		    s.length > offer->segs[i].length)
			return false;
	}
	return true;
}

enum rpcrdma_reason rpcrdma_hdr_check_reply(const struct rpcrdma_hdr *h,
					    const struct rpcrdma_offer *offer)
{
	uint32_t i;

	if (!has_lists(h))
		return RPCRDMA_OK;
	if (h->direction == RPCRDMA_RPC_CALL)
		return RPCRDMA_R_DIRECTION_MISMATCH;
	if (h->read_nsegs)
		return RPCRDMA_R_REPLY_HAS_READ_LIST;
	if (h->proc == RPCRDMA_NOMSG && !h->has_reply)
		return RPCRDMA_R_REPLY_NOMSG_WITHOUT_REPLY_CHUNK;
	if (h->proc == RPCRDMA_MSG && h->has_reply && h->reply.length)
		return RPCRDMA_R_REPLY_MSG_USES_REPLY_CHUNK;
	if (!offer)
		return RPCRDMA_OK;
	if (h->nwrites != offer->nwrites)
		return RPCRDMA_R_REPLY_WRITE_LIST_MISMATCH;
	for (i = 0; i < h->nwrites; i++)
		if (!chunk_echoes(&h->write[i], &offer->writes[i]))
			return RPCRDMA_R_REPLY_WRITE_LIST_MISMATCH;
	if (h->has_reply && (!offer->reply || !chunk_echoes(&h->reply, offer->reply)))
		return RPCRDMA_R_REPLY_CHUNK_MISMATCH;
	return RPCRDMA_OK;
}

uint32_t rpcrdma_chunk_copy(const struct rpcrdma_chunk *c, struct rpcrdma_seg *out, uint32_t cap)
{
	uint32_t i, n = c->nsegs < cap ? c->nsegs : cap;

	for (i = 0; i < n; i++)
		rpcrdma_chunk_seg(c, i, &out[i]);
	return n;
}
