/* SPDX-License-Identifier: MIT */
/*
 * gateway/reverse/reverse_plan.c - where a responder puts the bytes of calls and
 * replies (see reverse_plan.h).
 *
 * Offsets are computed in 64 bits and checked before they are narrowed:
 * positions and lengths come from the client.
 */
#include "gateway/reverse/reverse_plan.h"

#include <string.h>

#include "common/xdr.h"

/* ---- calls ---- */

enum rev_layout_status rev_call_layout(const struct rpcrdma_hdr *h, uint32_t max_len,
				       struct rev_call_layout *l)
{
	uint64_t placed = 0; /* message bytes taken by inserted chunks and their pads */
	uint64_t prev_at = 0;
	uint32_t i = 0;

	l->p0 = false;
	l->ninserts = 0;
	l->base_len = 0;
	l->total_len = 0;
	if (h->nreads == 0)
		return REV_LAYOUT_NO_CHUNKS;
	if (h->nreads > RPCRDMA_MAX_READ_CHUNKS)
		return REV_LAYOUT_BAD;
	if (h->proc == RPCRDMA_NOMSG) {
		if (!rpcrdma_hdr_has_p0(h))
			return REV_LAYOUT_BAD;
		l->p0 = true;
		l->base_len = h->read[0].length;
		i = 1;
	} else {
		if (rpcrdma_hdr_has_p0(h))
			return REV_LAYOUT_BAD;
		l->base_len = h->inline_len;
	}
	for (; i < h->nreads; i++) {
		const struct rpcrdma_chunk *ch = &h->read[i];

		/*
		 * A position counts the whole message, so the base offset it
		 * names is the position less what earlier chunks took. The
		 * chunks must not overlap (pads included) nor leave the base:
		 * that is what a non-decreasing, in-range base offset means.
		 */
		if ((ch->position & 3) || ch->position < placed)
			return REV_LAYOUT_BAD;
		uint64_t at = ch->position - placed;
		if (at > l->base_len || at < prev_at)
			return REV_LAYOUT_BAD;
		l->ins[l->ninserts++] = (struct rev_insert){ .at = (uint32_t)at,
							     .position = ch->position,
							     .len = ch->length };
		placed += xdr_align(ch->length);
		prev_at = at;
	}
	uint64_t total = (uint64_t)l->base_len + placed;
	if (total > max_len)
		return REV_LAYOUT_TOO_LONG;
	l->total_len = (uint32_t)total;
	return REV_LAYOUT_OK;
}

uint32_t rev_layout_map(const struct rev_call_layout *l, uint32_t off, uint32_t *run)
{
	uint32_t shift = 0, end = l->base_len;

	/* A chunk inserted at base offset `at` comes before the base byte there. */
	for (uint32_t i = 0; i < l->ninserts; i++) {
		if (l->ins[i].at > off) {
			end = l->ins[i].at;
			break;
		}
		shift += xdr_align(l->ins[i].len);
	}
	*run = end > off ? end - off : 0;
	return off + shift;
}

static const struct rev_insert *insert_at_position(const struct rev_call_layout *l,
						   uint32_t position)
{
	for (uint32_t i = 0; i < l->ninserts; i++) {
		if (l->ins[i].position == position)
			return &l->ins[i];
	}
	return NULL;
}

static void cursor_advance(struct rev_read_cursor *cur, uint32_t entry_len)
{
	cur->chunk_off += entry_len;
	cur->entry++;
	cur->done = 0;
}

enum rev_read_status rev_read_next(const struct rev_call_layout *l, const uint8_t *read_list,
				   uint32_t nentries, struct rev_read_cursor *cur,
				   struct rev_read_op *op)
{
	while (cur->entry < nentries) {
		const uint8_t *e = read_list + (size_t)cur->entry * RPCRDMA_READ_SEG_SIZE;
		uint32_t position = xdr_get32(e);
		uint32_t handle = xdr_get32(e + 4);
		uint32_t len = xdr_get32(e + 8);
		uint64_t remote = xdr_get64(e + 12);

		/* Entries with one position are one chunk, adjacent in a sorted list. */
		if (position != cur->position) {
			cur->position = position;
			cur->chunk_off = 0;
		}
		if (cur->done >= len) {
			cursor_advance(cur, len);
			continue;
		}
		uint64_t coff = (uint64_t)cur->chunk_off + cur->done; /* offset in the chunk */
		uint32_t left = len - cur->done;
		uint32_t n, dst;
		if (l->p0 && position == 0) {
			/* The base stream: split where another chunk is inserted. */
			uint32_t run;
			if (coff >= l->base_len)
				return REV_READ_BAD;
			dst = rev_layout_map(l, (uint32_t)coff, &run);
			n = left < run ? left : run;
		} else {
			const struct rev_insert *ins = insert_at_position(l, position);
			if (!ins || coff + left > ins->len)
				return REV_READ_BAD;
			dst = ins->position + (uint32_t)coff;
			n = left;
		}
		if (n == 0 || (uint64_t)dst + n > l->total_len)
			return REV_READ_BAD;
		*op = (struct rev_read_op){
			.handle = handle, .remote = remote + cur->done, .len = n, .dst = dst
		};
		cur->done += n;
		if (cur->done == len)
			cursor_advance(cur, len);
		return REV_READ_OP;
	}
	return REV_READ_END;
}

/* ---- replies ---- */

static uint64_t chunk_room(const struct rpcrdma_chunk_desc *c)
{
	uint64_t room = 0;

	for (uint32_t i = 0; i < c->nsegs; i++)
		room += c->segs[i].length;
	return room;
}

static void plan_refuse(struct rev_reply_plan *p, const char *why)
{
	p->how = REV_REPLY_ERR_CHUNK;
	p->why = why;
}

void rev_plan_reply(const struct rev_reply_in *in, struct splice_out *reduced,
		    struct rev_reply_plan *p)
{
	struct splice_item items[RPCRDMA_MAX_WRITE_CHUNKS];
	unsigned nitems = 0;
	uint32_t nw =
		in->nwrites < RPCRDMA_MAX_WRITE_CHUNKS ? in->nwrites : RPCRDMA_MAX_WRITE_CHUNKS;

	memset(p, 0, sizeof(*p));
	reduced->cnt = 0;
	reduced->len = 0;
	p->desc = (struct rpcrdma_reply_desc){
		.version = in->version,
		.xid = in->xid,
		.credits = in->credits,
		.proc = RPCRDMA_MSG,
		.nwrites = nw,
		.writes = in->writes,
		.write_used = p->write_used,
		.reply = in->reply,
	};

	/* Chunk k belongs to result item k (RFC 8166 section 4.4.5, RFC 8267). */
	for (uint32_t k = 0; k < nw && k < in->nitems; k++) {
		const struct ulb_reply_item *it = &in->items[k];
		uint64_t room = chunk_room(&in->writes[k]);

		/* No room at all: the client wants this item inline. */
		if (room == 0 || it->length == 0)
			continue;
		if (it->length > room) {
			plan_refuse(p, "write_chunk_too_small");
			return;
		}
		items[nitems++] = (struct splice_item){ .offset = it->offset, .len = it->length };
		p->write_used[k] = it->length;
		p->write_off[k] = it->offset;
		p->moved_bytes += it->length;
	}
	if (splice_reduce(in->msg, in->len, items, nitems, NULL, reduced) != SPLICE_OK) {
		plan_refuse(p, "result_items_do_not_fit_the_reply");
		return;
	}
	ssize_t hs = rpcrdma_reply_hdr_size(&p->desc);
	if (hs < 0) {
		plan_refuse(p, "reply_header_not_encodable");
		return;
	}
	p->hdr_len = (uint32_t)hs;
	if ((uint64_t)p->hdr_len + reduced->len <= in->send_max) {
		p->how = REV_REPLY_INLINE;
		return;
	}
	if (!in->reply) {
		plan_refuse(p, "reply_too_long_for_inline_and_no_reply_chunk");
		return;
	}
	if (reduced->len > chunk_room(in->reply)) {
		plan_refuse(p, "reply_chunk_too_small");
		return;
	}
	if (p->hdr_len > in->send_max) {
		plan_refuse(p, "reply_header_too_long_for_inline");
		return;
	}
	p->desc.proc = RPCRDMA_NOMSG;
	p->desc.reply_used = reduced->len;
	p->how = REV_REPLY_NOMSG;
}

unsigned rev_iov_slice(const struct iovec *iov, unsigned n, uint32_t off, uint32_t len,
		       struct iovec *out, unsigned cap)
{
	uint64_t pos = 0, end = (uint64_t)off + len;
	unsigned cnt = 0;

	if (len == 0)
		return 0;
	for (unsigned i = 0; i < n && pos < end; i++) {
		uint64_t a = pos, b = pos + iov[i].iov_len;

		pos = b;
		if (b <= off)
			continue;
		uint64_t from = a > off ? a : off;
		uint64_t to = b < end ? b : end;
		if (cnt == cap)
			return 0;
		out[cnt].iov_base = (uint8_t *)iov[i].iov_base + (from - a);
		out[cnt].iov_len = (size_t)(to - from);
		cnt++;
	}
	return pos >= end ? cnt : 0;
}

enum rev_admit rev_admit_call(uint32_t outstanding, uint32_t grant, uint32_t free_slots)
{
	if (outstanding >= grant)
		return REV_ADMIT_OVERRUN;
	return free_slots ? REV_ADMIT_TAKE : REV_ADMIT_WAIT;
}

/* Fold @handle into the common one; false once two differ. */
static bool inv_fold(uint32_t handle, bool *have, uint32_t *rkey)
{
	if (*have)
		return handle == *rkey;
	*have = true;
	*rkey = handle;
	return true;
}

uint32_t rev_inv_rkey(const struct rpcrdma_hdr *h)
{
	struct rpcrdma_read_seg r;
	struct rpcrdma_seg seg;
	uint32_t rkey = 0;
	bool have = false;

	for (uint32_t i = 0; i < h->read_nsegs; i++) {
		rpcrdma_read_seg(h, i, &r);
		if (!inv_fold(r.seg.handle, &have, &rkey))
			return 0;
	}
	for (uint32_t k = 0; k < h->nwrites; k++) {
		for (uint32_t i = 0; i < h->write[k].nsegs; i++) {
			rpcrdma_chunk_seg(&h->write[k], i, &seg);
			if (!inv_fold(seg.handle, &have, &rkey))
				return 0;
		}
	}
	for (uint32_t i = 0; h->has_reply && i < h->reply.nsegs; i++) {
		rpcrdma_chunk_seg(&h->reply, i, &seg);
		if (!inv_fold(seg.handle, &have, &rkey))
			return 0;
	}
	return have ? rkey : 0;
}
