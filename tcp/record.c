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
 *
 * An oversized record (with skip_oversized) goes through two more states,
 * kept in skip while in_body and the marks are parsed as for any record:
 * RM_SKIP_HEAD gathers the head as a record's payload is gathered (behind
 * the first mark, continuation marks squeezed out), RM_SKIP_DISCARD then
 * sets dst back to just behind the first mark and only advances pos over
 * what is read, so every read lands in the same region behind the mark and
 * nothing is moved but a partial mark. The first mark stays (start does not
 * move) until the record ends: the record is pending, as any record under
 * way is, for the owner's deadline and for rm_eof().
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

static inline uint32_t rm_max(uint32_t a, uint32_t b)
{
	return a > b ? a : b;
}

void rm_set_skip_oversized(struct rm_parser *p, uint32_t head_max)
{
	/*
	 * At most max_record: a record is oversized once it has more than
	 * that, so the head is always there to be gathered, and gathering
	 * it needs no buffer larger than a record's.
	 */
	head_max = rm_min(head_max, p->max_record);
	p->skip_oversized = true;
	p->head_max = head_max;
	/*
	 * A buffer for a record being skipped holds its first mark and the
	 * head, and behind the mark room for a continuation mark and a
	 * read-ahead's worth of the bytes thrown away per read. Within 32
	 * bits: max_record and readahead are at most RM_MAX_RECORD.
	 */
	p->skip_need = RM_MARK_SIZE + rm_max(head_max, RM_MARK_SIZE + p->readahead);
	p->skip_need = rm_min(p->skip_need, RM_BUF_SLACK + p->max_record);
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
	/*
	 * An oversized record is read in pieces of the room there is: the
	 * head fits (rm_skip_begin() saw to it), the rest is thrown away.
	 * The room behind its mark holds a continuation mark at least.
	 */
	if (p->skip != RM_SKIP_NONE && want > room) {
		assert(p->in_body && room > 0);
		want = room;
	}
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
	/* A record being skipped is a large one, though it asks for little room. */
	if (p->rec_need > p->readahead_max || p->skip != RM_SKIP_NONE)
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

/*
 * The record whose mark was just taken is larger than max_record: gather
 * its head, then throw it away. It needs no more room than skip_need from
 * its first mark: a record's first mark asks for a buffer for that now
 * (moving what was read of it, a mark and a read-ahead at most); a later
 * mark's record already has one for the largest record.
 */
static void rm_skip_begin(struct rm_parser *p, uint32_t so_far, uint32_t len)
{
	p->skip = RM_SKIP_HEAD;
	p->skip_len = (uint64_t)so_far + len;
	p->rec_need = p->skip_need;
	/* Its bulk is not read ahead of, nor is the next record's head. */
	p->ra = p->readahead;
	if ((uint64_t)p->start + rm_required(p) > p->size)
		p->need_buffer = true;
}

/* A mark inside a record being thrown away: only the stream's own rules apply. */
static bool rm_skip_mark(struct rm_parser *p, uint32_t len, bool last)
{
	if (len == 0 && !last)
		return rm_fail(p, RM_ERR_EMPTY_FRAGMENT);
	p->pos += RM_MARK_SIZE;
	p->skip_len += len;
	p->frag_left = len;
	p->last = last;
	p->in_body = true;
	return true;
}

/* Parse the mark at pos; false (with the error recorded) when it is bad. */
static bool rm_take_mark(struct rm_parser *p)
{
	uint32_t mark = xdr_get32(p->base + p->pos);
	uint32_t len = mark & RM_LEN_MASK;
	bool last = (mark & RM_LAST_FRAG) != 0;
	bool first = rm_at_first_mark(p);
	uint32_t so_far = first ? 0 : p->dst - p->start - RM_MARK_SIZE;
	bool oversized = false;

	if (p->skip == RM_SKIP_DISCARD)
		return rm_skip_mark(p, len, last);
	if (len > p->max_record) {
		if (!p->skip_oversized)
			return rm_fail(p, RM_ERR_FRAGMENT_TOO_LARGE);
		oversized = true;
	} else if (len > p->max_record - so_far) {
		if (!p->skip_oversized)
			return rm_fail(p, RM_ERR_RECORD_TOO_LARGE);
		oversized = true;
	}
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
	if (oversized)
		rm_skip_begin(p, so_far, len);
	else if (first)
		rm_check_fit(p);
	return true;
}

/* Payload bytes of the current record gathered behind its first mark. */
static inline uint32_t rm_gathered(const struct rm_parser *p)
{
	return p->dst - p->start - RM_MARK_SIZE;
}

static void rm_take_body(struct rm_parser *p)
{
	uint32_t n = rm_min(p->fill - p->pos, p->frag_left);

	if (p->skip == RM_SKIP_DISCARD) {
		p->pos += n;
		p->frag_left -= n;
		p->skipped += n;
		return;
	}
	/* No more of an oversized record than its head is kept. */
	if (p->skip == RM_SKIP_HEAD)
		n = rm_min(n, p->head_max - rm_gathered(p));
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

/*
 * The head of an oversized record is in: report it, and throw away from
 * here on. The region behind the first mark is read over from now on, so
 * the head's span is valid until the next call only.
 */
static enum rm_status rm_report_oversized(struct rm_parser *p, struct rm_span *span)
{
	span->off = p->start + RM_MARK_SIZE;
	/* More than the head when earlier fragments brought more. */
	span->len = rm_min(rm_gathered(p), p->head_max);
	p->skipped += rm_gathered(p);
	p->dst = p->start + RM_MARK_SIZE;
	p->skip = RM_SKIP_DISCARD;
	return RM_OVERSIZED;
}

/* The last fragment of an oversized record is thrown away: on to the next record. */
static void rm_end_skip(struct rm_parser *p)
{
	p->start = p->pos;
	p->dst = p->pos;
	p->in_body = false;
	p->rec_need = RM_MARK_SIZE;
	p->skip = RM_SKIP_NONE;
	/* Nothing about the next record can be guessed from this one. */
	p->hint = 0;
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
			/*
			 * The fragment that made the record oversized takes it
			 * past max_record >= head_max: the head is complete
			 * before that fragment's end.
			 */
			if (p->skip == RM_SKIP_HEAD && rm_gathered(p) >= p->head_max)
				return rm_report_oversized(p, span);
			if (p->frag_left > 0) {
				if (p->pos == p->fill)
					return rm_want_input(p, span);
				rm_take_body(p);
				continue;
			}
			assert(p->skip != RM_SKIP_HEAD);
			if (p->last && p->skip == RM_SKIP_DISCARD) {
				rm_end_skip(p);
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
