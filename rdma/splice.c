/* SPDX-License-Identifier: MIT */
/*
 * rdma/splice.c - XDR splicing: rebuild, reduce and plan.
 *
 * All arithmetic on positions and lengths is done in 64 bits and compared
 * against RPCRDMA_MAX_CHUNK_LEN before it is narrowed, so a hostile length
 * cannot wrap an offset into range.
 */
#include "rdma/splice.h"

/*
 * The pad put after an item of unaligned length. iovecs are not const, but
 * nothing writes through the iovecs made here: they feed writev() and
 * ibv_post_send() gather lists.
 */
static const uint8_t zero_pad[XDR_UNIT];

static const char *const status_names[SPLICE_E__COUNT] = {
	[SPLICE_OK] = "ok",
	[SPLICE_E_IOV_FULL] = "iov_full",
	[SPLICE_E_UNALIGNED] = "unaligned",
	[SPLICE_E_ORDER] = "order",
	[SPLICE_E_RANGE] = "range",
	[SPLICE_E_OVERFLOW] = "overflow",
	[SPLICE_E_P0_INLINE] = "p0_with_inline",
	[SPLICE_E_CHUNK_SMALL] = "chunk_too_small",
	[SPLICE_E_STEPS_FULL] = "steps_full",
};

const char *splice_status_name(enum splice_status s)
{
	if ((unsigned)s >= SPLICE_E__COUNT)
		return "?";
	return status_names[s];
}

static enum splice_status emit(struct splice_out *out, const void *base, uint64_t len)
{
	if (len == 0)
		return SPLICE_OK;
	if (out->cnt == out->cap)
		return SPLICE_E_IOV_FULL;
	out->iov[out->cnt].iov_base = (void *)(uintptr_t)base;
	out->iov[out->cnt].iov_len = (size_t)len;
	out->cnt++;
	return SPLICE_OK;
}

/*
 * Put pieces into an inline stream. Piece i goes at inline offset at[i]
 * (what (d) is given; (a) derives it from the position), followed by its
 * pad. Offsets never decrease and stay inside the inline part.
 */
struct piece {
	uint64_t at;
	const void *data;
	uint32_t len;
};

struct weave {
	const uint8_t *inl;
	uint32_t inl_len;
	uint64_t done;	/* inline bytes emitted */
	uint64_t total; /* bytes of the rebuilt stream */
	struct splice_out *out;
};

static enum splice_status weave_piece(struct weave *w, const struct piece *p)
{
	enum splice_status s;

	if (p->at & 3)
		return SPLICE_E_UNALIGNED;
	if (p->at < w->done)
		return SPLICE_E_ORDER;
	if (p->at > w->inl_len)
		return SPLICE_E_RANGE;
	w->total += (p->at - w->done) + xdr_align(p->len);
	if (p->len > RPCRDMA_MAX_CHUNK_LEN || w->total > RPCRDMA_MAX_CHUNK_LEN)
		return SPLICE_E_OVERFLOW;
	s = emit(w->out, w->inl + w->done, p->at - w->done);
	if (s)
		return s;
	w->done = p->at;
	s = emit(w->out, p->data, p->len);
	if (s)
		return s;
	return emit(w->out, zero_pad, xdr_pad(p->len));
}

static enum splice_status weave_end(struct weave *w)
{
	enum splice_status s;

	w->total += w->inl_len - w->done;
	if (w->total > RPCRDMA_MAX_CHUNK_LEN)
		return SPLICE_E_OVERFLOW;
	s = emit(w->out, w->inl + w->done, w->inl_len - w->done);
	if (s)
		return s;
	w->out->len = (uint32_t)w->total;
	return SPLICE_OK;
}

static void weave_start(struct weave *w, const void *inl, uint32_t inl_len, struct splice_out *out)
{
	w->inl = inl;
	w->inl_len = inl_len;
	w->done = 0;
	w->total = 0;
	w->out = out;
	out->cnt = 0;
	out->len = 0;
}

enum splice_status splice_rebuild(const void *inl, uint32_t inl_len,
				  const struct splice_chunk *chunks, unsigned n,
				  struct splice_out *out)
{
	struct weave w;
	uint64_t placed = 0; /* stream bytes taken by chunks so far, pads included */
	unsigned i = 0;

	if (n > 0 && chunks[0].position == 0) {
		/* the P0 chunk is the message; an RDMA_NOMSG has nothing inline */
		if (inl_len != 0)
			return SPLICE_E_P0_INLINE;
		inl = chunks[0].data;
		inl_len = chunks[0].len;
		i = 1;
	}
	weave_start(&w, inl, inl_len, out);
	for (; i < n; i++) {
		const struct splice_chunk *c = &chunks[i];
		struct piece p = { 0, c->data, c->len };
		enum splice_status s;

		/* a position of 0 here is a second P0 chunk or earlier than the previous one */
		if (c->position < placed || (i > 0 && c->position == 0))
			return SPLICE_E_ORDER;
		p.at = c->position - placed;
		s = weave_piece(&w, &p);
		if (s)
			return s;
		placed += xdr_align(c->len);
	}
	return weave_end(&w);
}

enum splice_status splice_rebuild_reply(const void *inl, uint32_t inl_len,
					const struct splice_insert *items, unsigned n,
					struct splice_out *out)
{
	struct weave w;
	unsigned i;

	weave_start(&w, inl, inl_len, out);
	for (i = 0; i < n; i++) {
		struct piece p = { items[i].offset, items[i].data, items[i].len };
		enum splice_status s = weave_piece(&w, &p);

		if (s)
			return s;
	}
	return weave_end(&w);
}

enum splice_status splice_reduce(const void *msg, uint32_t msg_len, const struct splice_item *items,
				 unsigned n, uint32_t *reduced_offset, struct splice_out *out)
{
	const uint8_t *m = msg;
	uint64_t done = 0;    /* message bytes consumed: kept or cut */
	uint64_t removed = 0; /* bytes cut so far, pads included */
	unsigned i;

	out->cnt = 0;
	out->len = 0;
	for (i = 0; i < n; i++) {
		uint64_t off = items[i].offset;
		uint64_t end = off + xdr_align(items[i].len);
		enum splice_status s;

		if (off & 3)
			return SPLICE_E_UNALIGNED;
		if (off < done)
			return SPLICE_E_ORDER;
		if (items[i].len > RPCRDMA_MAX_CHUNK_LEN || end > msg_len)
			return SPLICE_E_RANGE;
		s = emit(out, m + done, off - done);
		if (s)
			return s;
		if (reduced_offset)
			reduced_offset[i] = (uint32_t)(off - removed);
		removed += end - off;
		done = end;
	}
	if (emit(out, m + done, msg_len - done))
		return SPLICE_E_IOV_FULL;
	out->len = (uint32_t)(msg_len - removed);
	return SPLICE_OK;
}

enum splice_status splice_plan(const struct rpcrdma_seg *segs, uint32_t nsegs, uint32_t item_len,
			       uint32_t max_step, struct splice_step *steps, unsigned cap,
			       unsigned *nsteps, uint32_t *seg_len)
{
	uint64_t room = 0;
	uint32_t left = item_len, local = 0, i;
	unsigned n = 0;

	for (i = 0; i < nsegs; i++)
		room += segs[i].length;
	if (room < item_len)
		return SPLICE_E_CHUNK_SMALL;
	for (i = 0; i < nsegs; i++) {
		uint32_t in_seg = left < segs[i].length ? left : segs[i].length;
		uint32_t off = 0;

		if (seg_len)
			seg_len[i] = in_seg;
		while (off < in_seg) {
			uint32_t len = in_seg - off;

			if (max_step && len > max_step)
				len = max_step;
			if (n == cap)
				return SPLICE_E_STEPS_FULL;
			steps[n].seg = i;
			steps[n].handle = segs[i].handle;
			steps[n].remote_offset = segs[i].offset + off;
			steps[n].local_offset = local;
			steps[n].len = len;
			n++;
			off += len;
			local += len;
		}
		left -= in_seg;
	}
	*nsteps = n;
	return SPLICE_OK;
}
