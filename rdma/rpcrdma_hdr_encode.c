/* SPDX-License-Identifier: MIT */
/*
 * rdma/rpcrdma_hdr_encode.c - RPC-over-RDMA transport header encoding, the
 * other half of the module whose interface is rdma/rpcrdma_hdr.h (decoding
 * is in rpcrdma_hdr.c; the two share nothing but that header).
 *
 * Version One and Version Two calls and replies have the same chunk lists;
 * Version Two writes a direction word before them (draft-cel-nfsv4-rpcrdma-
 * version-two-01 section 4.2). Each encoder first checks the description as
 * the decoder would check the header it becomes, then writes it in one pass.
 */
#include <errno.h>
#include <string.h>

#include "rdma/rpcrdma_hdr.h"

static bool version_spoken(uint32_t version)
{
	return version == RPCRDMA_V1 || version == RPCRDMA_V2;
}

static bool direction_valid(uint32_t dir)
{
	return dir == RPCRDMA_RPC_CALL || dir == RPCRDMA_RPC_REPLY;
}

/* Bytes before the Read list: the fixed words, and Version Two's direction. */
static size_t lists_offset(uint32_t version)
{
	return version == RPCRDMA_V2 ? RPCRDMA_FIXED_SIZE + 4 : RPCRDMA_FIXED_SIZE;
}

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

/* The fixed words, and in Version Two the direction of the chunk lists' message. */
static uint8_t *put_head(uint8_t *p, uint32_t xid, uint32_t vers, uint32_t credits, uint32_t proc,
			 uint32_t dir)
{
	p = put_fixed(p, xid, vers, credits, proc);
	if (vers == RPCRDMA_V2)
		p = put32(p, dir);
	return p;
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

ssize_t rpcrdma_call_hdr_size(const struct rpcrdma_call_desc *d)
{
	size_t size = lists_offset(d->version) + 4 + 4 + 4;
	uint32_t i;

	if (!version_spoken(d->version))
		return -EPROTONOSUPPORT;
	if (d->version == RPCRDMA_V2 && !direction_valid(d->direction))
		return -EINVAL;
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

static void put_call(uint8_t *p, const struct rpcrdma_call_desc *d)
{
	uint32_t i, j;

	p = put_head(p, d->xid, d->version, d->credits, d->proc, d->direction);
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

ssize_t rpcrdma_encode_call(void *buf, size_t cap, const struct rpcrdma_call_desc *d)
{
	ssize_t size = rpcrdma_call_hdr_size(d);

	if (size < 0)
		return size;
	if ((size_t)size > cap)
		return -EMSGSIZE;
	put_call(buf, d);
	return size;
}

ssize_t rpcrdma_reply_hdr_size(const struct rpcrdma_reply_desc *d)
{
	size_t size = lists_offset(d->version) + 4 + 4 + 4;
	uint32_t i;

	if (!version_spoken(d->version))
		return -EPROTONOSUPPORT;
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

static void put_reply(uint8_t *p, const struct rpcrdma_reply_desc *d)
{
	uint32_t i;

	p = put_head(p, d->xid, d->version, d->credits, d->proc, RPCRDMA_RPC_REPLY);
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

ssize_t rpcrdma_encode_reply(void *buf, size_t cap, const struct rpcrdma_reply_desc *d)
{
	ssize_t size = rpcrdma_reply_hdr_size(d);

	if (size < 0)
		return size;
	if ((size_t)size > cap)
		return -EMSGSIZE;
	put_reply(buf, d);
	return size;
}

ssize_t rpcrdma_encode_inline(void *buf, size_t cap, uint32_t version, uint32_t xid,
			      uint32_t credits, uint32_t direction)
{
	const struct rpcrdma_call_desc d = {
		.version = version,
		.xid = xid,
		.credits = credits,
		.proc = RPCRDMA_MSG,
		.direction = direction,
	};

	return rpcrdma_encode_call(buf, cap, &d);
}

ssize_t rpcrdma_encode_msg_inline(void *buf, size_t cap, uint32_t version, uint32_t xid,
				  uint32_t credits)
{
	/* no direction given: Version Two, which needs one, refuses it */
	return rpcrdma_encode_inline(buf, cap, version, xid, credits, RPCRDMA_DIR_NONE);
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

ssize_t rpcrdma_encode_error(void *buf, size_t cap, uint32_t version, uint32_t xid,
			     uint32_t credits, uint32_t err)
{
	uint8_t *p = buf;

	if (!version_spoken(version))
		return -EPROTONOSUPPORT;
	if (err != RPCRDMA_ERR_CHUNK &&
	    !(version == RPCRDMA_V2 && err == RPCRDMA2_ERR_INVAL_OPTION))
		return -EINVAL;
	if (cap < RPCRDMA_ERR_CHUNK_SIZE)
		return -EMSGSIZE;
	p = put_fixed(p, xid, version, credits, RPCRDMA_ERROR);
	put32(p, err);
	return RPCRDMA_ERR_CHUNK_SIZE;
}

ssize_t rpcrdma_encode_err_chunk(void *buf, size_t cap, uint32_t xid, uint32_t credits)
{
	return rpcrdma_encode_error(buf, cap, RPCRDMA_V1, xid, credits, RPCRDMA_ERR_CHUNK);
}

ssize_t rpcrdma_optional_hdr_size(const struct rpcrdma_opt_desc *d)
{
	uint64_t size = RPCRDMA2_OPT_MIN_SIZE + (((uint64_t)d->info_len + 3) & ~3ull);

	if (!direction_valid(d->direction) || (d->info_len && !d->info))
		return -EINVAL;
	if (size > UINT32_MAX)
		return -EINVAL;
	return (ssize_t)size;
}

ssize_t rpcrdma_encode_optional(void *buf, size_t cap, const struct rpcrdma_opt_desc *d)
{
	ssize_t size = rpcrdma_optional_hdr_size(d);
	uint8_t *p = buf;

	if (size < 0)
		return size;
	if ((size_t)size > cap)
		return -EMSGSIZE;
	p = put_fixed(p, d->xid, RPCRDMA_V2, d->credits, RPCRDMA2_OPTIONAL);
	p = put32(p, d->direction);
	p = put32(p, d->type);
	p = put32(p, d->info_len);
	if (d->info_len) {
		memcpy(p, d->info, d->info_len);
		/* XDR pads opaque data with zero bytes to a multiple of 4 */
		memset(p + d->info_len, 0, (size_t)size - RPCRDMA2_OPT_MIN_SIZE - d->info_len);
	}
	return size;
}
