/* SPDX-License-Identifier: MIT */
/*
 * rdma/rpcrdma_hdr.c - RPC-over-RDMA transport header codec.
 *
 * The Version One wire format (5666bis-01 section 13.1 draws it):
 *
 *   xid vers credit proc
 *   Read list:   1 PHLOO 1 PHLOO ... 0        (same P = one Read chunk)
 *   Write list:  1 N HLOO..HLOO 1 M HLOO..HLOO ... 0
 *   Reply chunk: 0 | 1 N HLOO..HLOO
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
#define SPOKEN_VERSIONS (1u << RPCRDMA_V1)

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
 * Per-version codec: the fixed header is the same in every version
 * (5666bis-01 section 9.1 requires it), the body after rdma_proc is not.
 */
struct rpcrdma_codec {
	/* decode what follows the fixed words of buf[0, len) */
	enum rpcrdma_reason (*decode_body)(struct rpcrdma_hdr *h, const uint8_t *buf, size_t len,
					   const struct rpcrdma_limits *lim);
	ssize_t (*call_size)(const struct rpcrdma_call_desc *d);
	void (*encode_call)(uint8_t *buf, const struct rpcrdma_call_desc *d);
	ssize_t (*reply_size)(const struct rpcrdma_reply_desc *d);
	void (*encode_reply)(uint8_t *buf, const struct rpcrdma_reply_desc *d);
};

static const struct rpcrdma_codec v1_codec;

static const struct rpcrdma_codec *codec_of(uint32_t version)
{
	/* A Version Two codec goes here, beside v1_codec. */
	if (version == RPCRDMA_V1)
		return &v1_codec;
	return NULL;
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

static enum rpcrdma_reason v1_decode_chunks(struct rpcrdma_hdr *h, const uint8_t *buf,
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
	} else if (!rpcrdma_hdr_has_p0(h) && !h->has_reply) {
		/* RDMA_NOMSG: the message has to be somewhere */
		return RPCRDMA_R_NOMSG_WITHOUT_CHUNKS;
	}
	return check_read_positions(h);
}

static enum rpcrdma_reason v1_decode_error(struct rpcrdma_hdr *h, const uint8_t *buf,
					   const uint8_t *p, const uint8_t *end)
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
	default:
		return RPCRDMA_R_ERROR_BAD_CODE;
	}
	h->hdr_len = (uint32_t)(p - buf);
	h->inline_len = (uint32_t)(end - p);
	return RPCRDMA_OK;
}

/*
 * Most messages are inline calls and replies: three empty lists. Take them
 * in one look, which halves the cost of decoding them.
 */
static inline bool no_chunks(struct rpcrdma_hdr *h, const uint8_t *p, const uint8_t *end)
{
	uint32_t w[3];

	if (left(p, end) < 12)
		return false;
	memcpy(w, p, sizeof(w));
	if (w[0] | w[1] | w[2])
		return false;
	h->read_list = p + 4;
	h->read_nsegs = 0;
	h->hdr_len = RPCRDMA_HDR_MIN_SIZE;
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
		if (no_chunks(h, p, end))
			return h->proc == RPCRDMA_MSG ? RPCRDMA_OK : RPCRDMA_R_NOMSG_WITHOUT_CHUNKS;
		return v1_decode_chunks(h, buf, p, end, lim);
	case RPCRDMA_MSGP:
		/* a receiver treats it as RDMA_MSG; the padding hints are ignored */
		if (left(p, end) < 8)
			return RPCRDMA_R_SHORT_HEADER;
		h->msgp_align = xdr_get32(p);
		h->msgp_thresh = xdr_get32(p + 4);
		h->proc = RPCRDMA_MSG;
		h->nreads = h->nwrites = 0;
		h->has_reply = false;
		return v1_decode_chunks(h, buf, p + 8, end, lim);
	case RPCRDMA_DONE:
		h->proc = RPCRDMA_DONE;
		return RPCRDMA_R_RDMA_DONE;
	case RPCRDMA_ERROR:
		h->proc = RPCRDMA_ERROR;
		return v1_decode_error(h, buf, p, end);
	default:
		return RPCRDMA_R_BAD_PROC;
	}
}

enum rpcrdma_reason rpcrdma_hdr_decode(struct rpcrdma_hdr *h, const void *buf, size_t len,
				       const struct rpcrdma_limits *lim)
{
	const uint8_t *p = buf;
	const struct rpcrdma_codec *codec;

	/* without the fixed words there is no version to judge and no proc */
	if (len < RPCRDMA_FIXED_SIZE || len > UINT32_MAX)
		return RPCRDMA_R_SHORT_FIXED;
	h->xid = xdr_get32(p);
	h->version = xdr_get32(p + 4);
	h->credits = xdr_get32(p + 8);
	h->wire_proc = xdr_get32(p + 12);
	codec = h->version < 32 && (lim->versions & (1u << h->version)) ? codec_of(h->version)
									: NULL;
	if (codec)
		return codec->decode_body(h, p, len, lim);
	/*
	 * ERR_VERS is laid out alike in every version and is how a requester
	 * learns what its peer speaks, so it is read whatever its version field
	 * says: the Linux server puts there the version of the message it
	 * refuses (tests/data/rpcrdma), not one it speaks.
	 */
	if (h->wire_proc == RPCRDMA_ERROR && len >= RPCRDMA_ERR_VERS_SIZE &&
	    xdr_get32(p + RPCRDMA_FIXED_SIZE) == RPCRDMA_ERR_VERS) {
		h->proc = RPCRDMA_ERROR;
		return v1_decode_error(h, p, p + RPCRDMA_FIXED_SIZE, p + len);
	}
	return RPCRDMA_R_BAD_VERSION;
}

enum rpcrdma_reason rpcrdma_hdr_check_xid(const struct rpcrdma_hdr *h, const void *rpc, size_t len)
{
	if (len < 8)
		return RPCRDMA_R_RPC_SHORT;
	if (xdr_get32(rpc) != h->xid)
		return RPCRDMA_R_XID_MISMATCH;
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

/*
 * Version One encoding
 */

static uint8_t *put32(uint8_t *p, uint32_t v)
{
	xdr_put32(p, v);
	return p + 4;
}

static uint8_t *put_seg(uint8_t *p, uint32_t handle, uint32_t length, uint64_t offset)
{
	xdr_put32(p, handle);
	xdr_put32(p + 4, length);
	xdr_put64(p + 8, offset);
	return p + RPCRDMA_SEG_SIZE;
}

static uint8_t *put_fixed(uint8_t *p, uint32_t xid, uint32_t vers, uint32_t credits, uint32_t proc)
{
	p = put32(p, xid);
	p = put32(p, vers);
	p = put32(p, credits);
	return put32(p, proc);
}

static uint64_t segs_len(const struct rpcrdma_seg *segs, uint32_t n)
{
	uint64_t len = 0;
	uint32_t i;

	for (i = 0; i < n; i++)
		len += segs[i].length;
	return len;
}

/* The checks the decoder makes of a Read list, made of a description. */
static bool read_chunks_valid(const struct rpcrdma_call_desc *d)
{
	uint64_t next_free = 0;
	uint32_t i;

	for (i = 0; i < d->nreads; i++) {
		const struct rpcrdma_read_chunk_desc *r = &d->reads[i];
		uint64_t len = segs_len(r->segs, r->nsegs);

		if (r->nsegs == 0 || (r->position & 3) || len > RPCRDMA_MAX_CHUNK_LEN ||
		    r->position + len > RPCRDMA_MAX_CHUNK_LEN)
			return false;
		if (i > 0 && (r->position <= d->reads[i - 1].position || r->position < next_free))
			return false;
		if (r->position == 0 && d->proc != RPCRDMA_NOMSG)
			return false;
		if (r->position != 0)
			next_free = r->position + xdr_align((uint32_t)len);
	}
	return true;
}

static bool chunk_desc_valid(const struct rpcrdma_chunk_desc *c)
{
	return segs_len(c->segs, c->nsegs) <= RPCRDMA_MAX_CHUNK_LEN;
}

static ssize_t v1_call_size(const struct rpcrdma_call_desc *d)
{
	size_t size = RPCRDMA_FIXED_SIZE + 4 + 4 + 4;
	uint32_t i;

	if (d->proc != RPCRDMA_MSG && d->proc != RPCRDMA_NOMSG)
		return -EINVAL;
	if (!read_chunks_valid(d))
		return -EINVAL;
	if (d->proc == RPCRDMA_NOMSG && !d->reply && !(d->nreads && d->reads[0].position == 0))
		return -EINVAL;
	for (i = 0; i < d->nreads; i++)
		size += (size_t)d->reads[i].nsegs * RPCRDMA_READ_SEG_SIZE;
	for (i = 0; i < d->nwrites; i++) {
		if (!chunk_desc_valid(&d->writes[i]))
			return -EINVAL;
		size += 8 + (size_t)d->writes[i].nsegs * RPCRDMA_SEG_SIZE;
	}
	if (d->reply) {
		if (!chunk_desc_valid(d->reply))
			return -EINVAL;
		size += 4 + (size_t)d->reply->nsegs * RPCRDMA_SEG_SIZE;
	}
	if (size > UINT32_MAX)
		return -EINVAL;
	return (ssize_t)size;
}

static uint8_t *put_chunk(uint8_t *p, const struct rpcrdma_chunk_desc *c)
{
	uint32_t i;

	p = put32(p, c->nsegs);
	for (i = 0; i < c->nsegs; i++)
		p = put_seg(p, c->segs[i].handle, c->segs[i].length, c->segs[i].offset);
	return p;
}

static void v1_encode_call(uint8_t *p, const struct rpcrdma_call_desc *d)
{
	uint32_t i, j;

	p = put_fixed(p, d->xid, d->version, d->credits, d->proc);
	for (i = 0; i < d->nreads; i++) {
		const struct rpcrdma_read_chunk_desc *r = &d->reads[i];

		for (j = 0; j < r->nsegs; j++) {
			p = put32(p, 1);
			p = put32(p, r->position);
			p = put_seg(p, r->segs[j].handle, r->segs[j].length, r->segs[j].offset);
		}
	}
	p = put32(p, 0);
	for (i = 0; i < d->nwrites; i++) {
		p = put32(p, 1);
		p = put_chunk(p, &d->writes[i]);
	}
	p = put32(p, 0);
	if (d->reply) {
		p = put32(p, 1);
		put_chunk(p, d->reply);
	} else {
		put32(p, 0);
	}
}

static ssize_t v1_reply_size(const struct rpcrdma_reply_desc *d)
{
	size_t size = RPCRDMA_FIXED_SIZE + 4 + 4 + 4;
	uint32_t i;

	if (d->proc != RPCRDMA_MSG && d->proc != RPCRDMA_NOMSG)
		return -EINVAL;
	if (d->proc == RPCRDMA_NOMSG && !d->reply)
		return -EINVAL;
	if (d->proc == RPCRDMA_MSG && d->reply_used)
		return -EINVAL;
	if (d->nwrites && !d->write_used)
		return -EINVAL;
	for (i = 0; i < d->nwrites; i++) {
		if (d->write_used[i] > segs_len(d->writes[i].segs, d->writes[i].nsegs))
			return -EINVAL;
		size += 8 + (size_t)d->writes[i].nsegs * RPCRDMA_SEG_SIZE;
	}
	if (d->reply) {
		if (d->reply_used > segs_len(d->reply->segs, d->reply->nsegs))
			return -EINVAL;
		size += 4 + (size_t)d->reply->nsegs * RPCRDMA_SEG_SIZE;
	}
	if (size > UINT32_MAX)
		return -EINVAL;
	return (ssize_t)size;
}

/*
 * Echo a chunk with `used` bytes spread over its segments in order, the way
 * the data was written; the segment count stays what the requester sent
 * even when nothing was written (5666bis-01 section 4.4.5).
 */
static uint8_t *put_echo(uint8_t *p, const struct rpcrdma_chunk_desc *c, uint32_t used)
{
	uint32_t i;

	p = put32(p, c->nsegs);
	for (i = 0; i < c->nsegs; i++) {
		uint32_t n = used < c->segs[i].length ? used : c->segs[i].length;

		p = put_seg(p, c->segs[i].handle, n, c->segs[i].offset);
		used -= n;
	}
	return p;
}

static void v1_encode_reply(uint8_t *p, const struct rpcrdma_reply_desc *d)
{
	uint32_t i;

	p = put_fixed(p, d->xid, d->version, d->credits, d->proc);
	p = put32(p, 0); /* a reply never has a Read list */
	for (i = 0; i < d->nwrites; i++) {
		p = put32(p, 1);
		p = put_echo(p, &d->writes[i], d->write_used[i]);
	}
	p = put32(p, 0);
	if (d->reply) {
		p = put32(p, 1);
		put_echo(p, d->reply, d->reply_used);
	} else {
		put32(p, 0);
	}
}

static const struct rpcrdma_codec v1_codec = {
	.decode_body = v1_decode_body,
	.call_size = v1_call_size,
	.encode_call = v1_encode_call,
	.reply_size = v1_reply_size,
	.encode_reply = v1_encode_reply,
};

ssize_t rpcrdma_call_hdr_size(const struct rpcrdma_call_desc *d)
{
	const struct rpcrdma_codec *codec = codec_of(d->version);

	if (!codec)
		return -EPROTONOSUPPORT;
	return codec->call_size(d);
}

ssize_t rpcrdma_encode_call(void *buf, size_t cap, const struct rpcrdma_call_desc *d)
{
	const struct rpcrdma_codec *codec = codec_of(d->version);
	ssize_t size;

	if (!codec)
		return -EPROTONOSUPPORT;
	size = codec->call_size(d);
	if (size < 0)
		return size;
	if ((size_t)size > cap)
		return -EMSGSIZE;
	codec->encode_call(buf, d);
	return size;
}

ssize_t rpcrdma_reply_hdr_size(const struct rpcrdma_reply_desc *d)
{
	const struct rpcrdma_codec *codec = codec_of(d->version);

	if (!codec)
		return -EPROTONOSUPPORT;
	return codec->reply_size(d);
}

ssize_t rpcrdma_encode_reply(void *buf, size_t cap, const struct rpcrdma_reply_desc *d)
{
	const struct rpcrdma_codec *codec = codec_of(d->version);
	ssize_t size;

	if (!codec)
		return -EPROTONOSUPPORT;
	size = codec->reply_size(d);
	if (size < 0)
		return size;
	if ((size_t)size > cap)
		return -EMSGSIZE;
	codec->encode_reply(buf, d);
	return size;
}

ssize_t rpcrdma_encode_msg_inline(void *buf, size_t cap, uint32_t version, uint32_t xid,
				  uint32_t credits)
{
	const struct rpcrdma_call_desc d = {
		.version = version,
		.xid = xid,
		.credits = credits,
		.proc = RPCRDMA_MSG,
	};

	return rpcrdma_encode_call(buf, cap, &d);
}

ssize_t rpcrdma_encode_err_vers(void *buf, size_t cap, uint32_t xid, uint32_t credits, uint32_t low,
				uint32_t high)
{
	uint8_t *p = buf;

	if (cap < RPCRDMA_ERR_VERS_SIZE)
		return -EMSGSIZE;
	if (low > high)
		return -EINVAL;
	p = put_fixed(p, xid, RPCRDMA_V1, credits, RPCRDMA_ERROR);
	p = put32(p, RPCRDMA_ERR_VERS);
	p = put32(p, low);
	put32(p, high);
	return RPCRDMA_ERR_VERS_SIZE;
}

ssize_t rpcrdma_encode_err_chunk(void *buf, size_t cap, uint32_t xid, uint32_t credits)
{
	uint8_t *p = buf;

	if (cap < RPCRDMA_ERR_CHUNK_SIZE)
		return -EMSGSIZE;
	p = put_fixed(p, xid, RPCRDMA_V1, credits, RPCRDMA_ERROR);
	put32(p, RPCRDMA_ERR_CHUNK);
	return RPCRDMA_ERR_CHUNK_SIZE;
}
