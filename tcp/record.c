/* SPDX-License-Identifier: MIT */
/*
 * tcp/record.c - RFC 5531 record-marking parser and mark encoder.
 *
 * The parser alternates between two states: reading a mark (in_body false)
 * and consuming a fragment's body (in_body true). A record's first mark
 * stays in the buffer in front of its payload; continuation marks are
 * squeezed out: body bytes behind one are moved down to dst as they are
 * parsed, so every payload byte moves at most once and the gap between dst
 * and pos closes again before the next read lands at dst.
 */
#include "tcp/record.h"

#include <assert.h>
#include <string.h>

#include "common/xdr.h"

static const char *const rm_error_names[RM_ERR_COUNT] = {
	[RM_OK] = "ok",
	[RM_ERR_FRAGMENT_TOO_LARGE] = "fragment-too-large",
	[RM_ERR_RECORD_TOO_LARGE] = "record-too-large",
	[RM_ERR_EMPTY_FRAGMENT] = "empty-fragment",
	[RM_ERR_EMPTY_RECORD] = "empty-record",
	[RM_ERR_TRUNCATED] = "truncated",
};

const char *rm_error_name(enum rm_error e)
{
	if ((unsigned int)e >= RM_ERR_COUNT)
		return "unknown";
	return rm_error_names[e];
}

void rm_encode_mark(uint8_t out[RM_MARK_SIZE], uint32_t len, bool last)
{
	assert(len <= RM_LEN_MASK);
	xdr_put32(out, len | (last ? RM_LAST_FRAG : 0));
}

void rm_init(struct rm_parser *p, uint32_t max_record, uint32_t readahead)
{
	memset(p, 0, sizeof(*p));
	if (max_record == 0)
		max_record = 1;
	if (max_record > RM_MAX_RECORD)
		max_record = RM_MAX_RECORD;
	p->max_record = max_record;
	/* Keeps the sums of offsets and the doubling within 32 bits. */
	if (readahead > RM_MAX_RECORD)
		readahead = RM_MAX_RECORD;
	p->readahead = readahead;
	p->readahead_max = readahead;
	p->ra = readahead;
	p->rec_need = RM_MARK_SIZE;
}

void rm_set_readahead_max(struct rm_parser *p, uint32_t max)
{
	if (max > RM_MAX_RECORD)
		max = RM_MAX_RECORD;
	p->readahead_max = max > p->readahead ? max : p->readahead;
	p->ra = p->readahead;
}

static inline uint32_t rm_min(uint32_t a, uint32_t b)
{
	return a < b ? a : b;
}

/* A record's first mark is being read when no payload position exists yet. */
static inline bool rm_at_first_mark(const struct rm_parser *p)
{
	return !p->in_body && p->dst == p->start;
}

static uint32_t rm_required(const struct rm_parser *p)
{
	uint32_t pending = rm_pending(p);

	return pending > p->rec_need ? pending : p->rec_need;
}

static bool rm_fail(struct rm_parser *p, enum rm_error e)
{
	p->error = e;
	return false;
}

static enum rm_status rm_ask_buffer(struct rm_parser *p, struct rm_span *span)
{
	p->need_buffer = true;
	span->off = 0;
	span->len = rm_required(p);
	return RM_NEED_BUFFER;
}

/*
 * Before a read: close the gap left by removed continuation marks, so the
 * read lands right behind the payload. Only a partial mark (< 4 bytes) or
 * nothing is unparsed at this point, so this moves next to nothing.
 */
static void rm_close_gap(struct rm_parser *p)
{
	uint32_t n = p->fill - p->pos;

	if (p->pos == p->dst)
		return;
	if (n > 0) {
		memmove(p->base + p->dst, p->base + p->pos, n);
		p->moved += n;
	}
	p->pos = p->dst;
	p->fill = p->dst + n;
}

/*
 * Where to read and how much: what the current mark or fragment still
 * lacks, plus the read-ahead, within the buffer.
 */
static enum rm_status rm_want_input(struct rm_parser *p, struct rm_span *span)
{
	uint32_t room, want, ra;

	rm_close_gap(p);
	room = p->size - p->fill;
	if (p->in_body)
		want = p->frag_left;
	else
		want = RM_MARK_SIZE - (p->fill - p->pos);
	if (room < want) {
		/*
		 * Only a record's first mark can run into the end of the
		 * buffer: bodies and continuation marks were checked to fit
		 * when the first mark was read.
		 */
		assert(rm_at_first_mark(p));
		return rm_ask_buffer(p, span);
	}
	/*
	 * An empty buffer is most often the small one taken while the next
	 * record's size is unknown: if that record does not fit, all that
	 * was read of it moves, so read no more than the configured amount.
	 * The read that begins a record asks for a record like the last one
	 * (the size hint) and the configured read-ahead beyond it, so that
	 * such a record alone in the socket comes back in a short read, which
	 * ends the turn without another read(2) that would find nothing. At
	 * most readahead_max in all: a switch still moves no more than
	 * rm_move_bound().
	 */
	ra = p->fill == 0 ? p->readahead : p->ra;
	if (rm_at_first_mark(p) && p->hint != 0 && p->hint - RM_MARK_SIZE + p->readahead > ra)
		ra = p->hint - RM_MARK_SIZE + p->readahead;
	want += rm_min(ra, room - want);
	span->off = p->fill;
	span->len = want;
	p->asked = want;
	return RM_NEED_INPUT;
}

/*
 * After a read: a full one while a small record was being read means more
 * small records are most likely queued, so the next read takes more; a
 * short one means the socket was drained. Reads inside a large record do
 * not count: the read-ahead cannot take such records whole, it would only
 * move more of the next one's head.
 */
static void rm_adapt_readahead(struct rm_parser *p, uint32_t n)
{
	if (n < p->asked) {
		p->ra = p->ra / 2 > p->readahead ? p->ra / 2 : p->readahead;
		return;
	}
	if (p->rec_need > p->readahead_max)
		return;
	p->ra = p->ra > p->readahead_max / 2 ? p->readahead_max : p->ra * 2;
}

/*
 * Once a record's first mark is known, so is the room the whole record
 * needs: its one fragment, or the largest record when more fragments
 * follow (their sizes are unknown, and a record must not have to move
 * once its bulk has arrived).
 */
static void rm_check_fit(struct rm_parser *p)
{
	if (p->last)
		p->rec_need = RM_MARK_SIZE + p->frag_left;
	else
		p->rec_need = RM_BUF_SLACK + p->max_record;
	/* Large records from here on: read no more of the next one's head than configured. */
	if (p->rec_need > p->readahead_max)
		p->ra = p->readahead;
	if ((uint64_t)p->start + rm_required(p) > p->size)
		p->need_buffer = true;
}

/* Parse the mark at pos; false (with the error recorded) when it is bad. */
static bool rm_take_mark(struct rm_parser *p)
{
	uint32_t mark = xdr_get32(p->base + p->pos);
	uint32_t len = mark & RM_LEN_MASK;
	bool last = (mark & RM_LAST_FRAG) != 0;
	bool first = rm_at_first_mark(p);
	uint32_t so_far = first ? 0 : p->dst - p->start - RM_MARK_SIZE;

	if (len > p->max_record)
		return rm_fail(p, RM_ERR_FRAGMENT_TOO_LARGE);
	if (len > p->max_record - so_far)
		return rm_fail(p, RM_ERR_RECORD_TOO_LARGE);
	/* Endless empty fragments would keep the parser busy for nothing. */
	if (len == 0 && !last)
		return rm_fail(p, RM_ERR_EMPTY_FRAGMENT);
	if (len == 0 && first)
		return rm_fail(p, RM_ERR_EMPTY_RECORD);

	p->pos += RM_MARK_SIZE;
	if (first)
		p->dst = p->pos;
	p->frag_left = len;
	p->last = last;
	p->in_body = true;
	if (first)
		rm_check_fit(p);
	return true;
}

static void rm_take_body(struct rm_parser *p)
{
	uint32_t n = rm_min(p->fill - p->pos, p->frag_left);

	if (p->dst != p->pos) {
		memmove(p->base + p->dst, p->base + p->pos, n);
		p->moved += n;
	}
	p->dst += n;
	p->pos += n;
	p->frag_left -= n;
}

static enum rm_status rm_end_record(struct rm_parser *p, struct rm_span *span)
{
	span->off = p->start + RM_MARK_SIZE;
	span->len = p->dst - span->off;
	/* Larger records get a buffer of their own at their mark: no hint. */
	uint32_t total = p->dst - p->start;
	p->hint = total + p->readahead <= p->readahead_max ? total : 0;
	/* The next record starts behind this one's last byte as read. */
	p->start = p->pos;
	p->dst = p->pos;
	p->in_body = false;
	p->rec_need = RM_MARK_SIZE;
	return RM_RECORD;
}

enum rm_status rm_next(struct rm_parser *p, struct rm_span *span)
{
	span->off = 0;
	span->len = 0;
	if (p->error != RM_OK)
		return RM_ERROR;
	for (;;) {
		if (p->need_buffer)
			return rm_ask_buffer(p, span);
		if (p->in_body) {
			if (p->frag_left > 0) {
				if (p->pos == p->fill)
					return rm_want_input(p, span);
				rm_take_body(p);
				continue;
			}
			if (p->last)
				return rm_end_record(p, span);
			p->in_body = false;
			continue;
		}
		if (p->fill - p->pos < RM_MARK_SIZE)
			return rm_want_input(p, span);
		if (!rm_take_mark(p))
			return RM_ERROR;
	}
}

void rm_filled(struct rm_parser *p, uint32_t n)
{
	assert(n <= p->size - p->fill);
	p->fill += n;
	rm_adapt_readahead(p, n);
}

bool rm_set_buffer(struct rm_parser *p, uint8_t *base, uint32_t size)
{
	uint32_t pending = rm_pending(p);

	/* Letting go (size 0) is fine as long as nothing is pending. */
	if (size < rm_required(p) && (pending > 0 || size != 0))
		return false;
	if (pending > 0 && (base != p->base || p->start != 0)) {
		memmove(base, p->base + p->start, pending);
		p->moved += pending;
	}
	p->dst -= p->start;
	p->pos -= p->start;
	p->fill -= p->start;
	p->start = 0;
	p->base = base;
	p->size = size;
	p->need_buffer = false;
	return true;
}

enum rm_error rm_eof(struct rm_parser *p)
{
	if (p->error == RM_OK && rm_pending(p) > 0)
		p->error = RM_ERR_TRUNCATED;
	return p->error;
}
