/* SPDX-License-Identifier: MIT */
/*
 * tcp/record.h - RFC 5531 record marking: a pure parser for input and the
 * encoder of a record mark for output.
 *
 * On TCP an RPC message is a record sent as one or more fragments, each
 * behind a 4-byte big-endian mark: the top bit says "last fragment", the
 * other 31 bits give the fragment's length.
 *
 * The parser does no I/O and never allocates. It works inside a buffer the
 * caller owns (in the gateway, registered memory from a gw_buf_source) and
 * steers the caller's reads so that each record's payload ends up
 * contiguous in that buffer, where it can be exposed to the RDMA peer or
 * sent with scatter/gather entries without being copied:
 *
 *	rm_next() == RM_NEED_INPUT   read at most span.len bytes into
 *	                             base + span.off, then rm_filled(n)
 *	rm_next() == RM_RECORD       base[span.off, +span.len) is a whole record
 *	rm_next() == RM_NEED_BUFFER  the record does not fit: hand the parser a
 *	                             buffer of at least span.len bytes with
 *	                             rm_set_buffer(); the few bytes already read
 *	                             of the record move to its start
 *	rm_next() == RM_OVERSIZED    (only with rm_set_skip_oversized()) a
 *	                             record larger than the maximum begins:
 *	                             base[span.off, +span.len) is its head,
 *	                             rm_oversized_len() its announced length;
 *	                             the parser throws the rest away itself
 *	rm_next() == RM_ERROR        rm_error() says why; the stream is lost
 *
 * Reads never go further than the end of the current fragment plus a
 * read-ahead, so a buffer switch moves at most one mark plus the
 * read-ahead (rm_move_bound()), never a record's bulk. The read-ahead is
 * what lets one read(2) pick up many small pipelined records.
 *
 * The read-ahead adapts (rm_set_readahead_max()): it starts at the
 * configured size, doubles after each read that came back full while the
 * record being read was small (one the largest read-ahead could take
 * whole: the socket holds more, most likely more small records), halves
 * after a short read (the socket was drained), and falls back to the
 * configured size at once when a record's mark announces a large record.
 * So a run of small pipelined records is taken many to a read, while a
 * stream of large records keeps the configured read-ahead: the head of
 * the next large record that a read brings in, and that moves when the
 * record does not fit the buffer, stays as small as before. Only the
 * first large record after a run of small ones can have up to the
 * largest read-ahead of its head moved. The first read into an empty
 * buffer uses the configured size, since it learns the size of a record
 * that may not fit there, unless the size hint below says more.
 *
 * The size hint: a client with one call at a time sends records one by
 * one, so reads never come back full and the read-ahead stays small; a
 * record larger than it (a 4 KiB WRITE: 1 KiB read, then the rest) took
 * two reads, the first into a small buffer whose bytes then moved. So the
 * parser remembers the last record's size (mark and payload) when it and
 * the configured read-ahead fit in the largest read-ahead: the read that
 * begins the next record asks for that much and the configured read-ahead
 * beyond it, and rm_size_hint() tells the owner how large a fresh buffer to
 * take for it. A record like the last one then comes in one short read,
 * into a buffer it fits. A wrong guess costs at most a larger buffer, and
 * a switch moves no more than rm_move_bound().
 *
 * A record's payload sits right behind its first mark. Continuation marks
 * of a multi-fragment record are squeezed out by moving the bytes behind
 * them down, in place, each byte at most once. That move is acceptable
 * because multi-fragment records are rare where bulk data flows: the
 * Linux kernel's RPC client and server always send a record as a single
 * fragment; user-space libtirpc splits only messages larger than its send
 * buffer, and those are small control protocols (MOUNT, NSM, rpcbind), not
 * NFS READ/WRITE data. A multi-fragment record is given a buffer for the
 * largest record up front, so it never has to move between buffers.
 *
 * Oversized records: a peer whose record (one fragment, or fragments that
 * add up) is larger than max_record is an error by default, and the stream
 * is lost. A client that was never told the limit (an NFS client whose
 * wsize is larger than the route carries) then reconnects and sends the
 * same record again, forever. With rm_set_skip_oversized() such a record
 * is skipped instead: the parser gathers its head (the first head_max
 * payload bytes, enough for the RPC call header, so that the owner can
 * answer the call with an error), returns RM_OVERSIZED once with that head,
 * then reads the rest of the record into the small region behind its first
 * mark, over and over, and throws it away, up to the end of its last
 * fragment; the next record is parsed as usual. The buffer it asks for
 * while skipping is the record's mark, the head and a read-ahead (at most
 * max_record + RM_BUF_SLACK), never the record's size; a buffer switch for
 * it moves no more than rm_move_bound(), like any other. The other errors
 * (an empty fragment inside the skipped record too) still lose the stream.
 *
 * libtirpc has record marking too (xdrrec_create), but it owns the I/O: it
 * pulls bytes through blocking read/write callbacks into its own private
 * buffers and hands them out through an XDR stream. That cannot read into
 * registered memory, cannot be driven by readiness events from an event
 * loop, and would copy every payload byte once more.
 */
#ifndef GW_TCP_RECORD_H
#define GW_TCP_RECORD_H

#include <stdbool.h>
#include <stdint.h>

#define RM_MARK_SIZE 4u
#define RM_LAST_FRAG 0x80000000u
#define RM_LEN_MASK  0x7fffffffu
/*
 * A buffer holds a record's first mark in front of its payload; a
 * multi-fragment record also needs room to read one continuation mark
 * behind a payload of the maximum size (it can only be an empty last
 * fragment, but that is known only once it has been read).
 */
#define RM_BUF_SLACK (2 * RM_MARK_SIZE)
/* The largest max_record the parser accepts (so that sizes fit 32 bits). */
#define RM_MAX_RECORD (RM_LEN_MASK - RM_BUF_SLACK)

/*
 * The head of an oversized record that an owner should ask for: an RPC
 * call header is 24 fixed bytes plus a credential and a verifier of at
 * most 8 + 400 bytes each (RFC 5531), 840 bytes in all.
 */
#define RM_OVERSIZED_HEAD 1024u

/* Why a stream was rejected; each is counted and logged on its own. */
enum rm_error {
	RM_OK = 0,
	/* A fragment longer than the maximum record (unless skipped). */
	RM_ERR_FRAGMENT_TOO_LARGE,
	/* Fragments that add up to more than the maximum record (unless skipped). */
	RM_ERR_RECORD_TOO_LARGE,
	/* A zero-length fragment that is not the last: it makes no progress. */
	RM_ERR_EMPTY_FRAGMENT,
	/* A record without a single byte (no RPC message is empty). */
	RM_ERR_EMPTY_RECORD,
	/* The stream ended inside a record (see rm_eof()). */
	RM_ERR_TRUNCATED,
	RM_ERR_COUNT
};

enum rm_status {
	RM_NEED_INPUT,
	RM_RECORD,
	RM_NEED_BUFFER,
	RM_ERROR,
	RM_OVERSIZED,
};

/* Where the parser is in an oversized record (rm_set_skip_oversized()). */
enum rm_skip {
	RM_SKIP_NONE = 0,
	/* Gathering the head, behind the record's first mark as a record's payload. */
	RM_SKIP_HEAD,
	/* The head was reported: the rest is read behind the first mark and dropped. */
	RM_SKIP_DISCARD,
};

/* A byte range of the current buffer; see rm_next() for what it means. */
struct rm_span {
	uint32_t off;
	uint32_t len;
};

/*
 * Embedded by the owner; fields are private to record.c. Offsets are into
 * base and always ordered start <= dst <= pos <= fill <= size.
 */
struct rm_parser {
	uint32_t max_record;
	/* The configured read-ahead, and the most it grows to. */
	uint32_t readahead;
	uint32_t readahead_max;
	/* The read-ahead of the next read (readahead..readahead_max). */
	uint32_t ra;
	/* What the last RM_NEED_INPUT asked for: a read that brought it all was full. */
	uint32_t asked;
	uint8_t *base;
	uint32_t size;
	/* The current (incomplete) record's first mark. */
	uint32_t start;
	/* End of the record's contiguous payload (below pos once marks were squeezed out). */
	uint32_t dst;
	/* First byte not parsed yet. */
	uint32_t pos;
	/* End of the bytes read. */
	uint32_t fill;
	/* Body bytes of the current fragment not parsed yet. */
	uint32_t frag_left;
	/* Bytes from start the current record needs in one buffer. */
	uint32_t rec_need;
	/* The last record's mark and payload, if readahead_max takes it and readahead; else 0. */
	uint32_t hint;
	bool in_body;
	bool last;
	bool need_buffer;
	/* Oversized records are skipped rather than an error. */
	bool skip_oversized;
	enum rm_skip skip;
	/* Head bytes reported of an oversized record (<= max_record). */
	uint32_t head_max;
	/* What a buffer needs from an oversized record's mark: mark, head, room to read. */
	uint32_t skip_need;
	/* The oversized record's payload length announced by its marks so far. */
	uint64_t skip_len;
	/* Payload bytes of oversized records consumed (the heads too). */
	uint64_t skipped;
	enum rm_error error;
	uint64_t moved;
};

/*
 * max_record: the largest record payload accepted (clamped to
 * 1..RM_MAX_RECORD). readahead: bytes read beyond the end of the current
 * fragment (or mark) in the hope of finding more records; it bounds what a
 * buffer switch moves. The parser starts without a buffer.
 */
void rm_init(struct rm_parser *p, uint32_t max_record, uint32_t readahead);

/*
 * Let the read-ahead grow up to max while small records keep coming (see
 * the top of this file); max below the configured read-ahead keeps it
 * fixed, as after rm_init(). Call between rm_init() and the first read.
 */
void rm_set_readahead_max(struct rm_parser *p, uint32_t max);

/*
 * Skip records larger than max_record instead of failing the stream (see
 * the top of this file), reporting each with RM_OVERSIZED and the first
 * head_max bytes of its payload (clamped to max_record;
 * RM_OVERSIZED_HEAD suits an RPC call). Off after rm_init(). Call between
 * rm_init() and the first read.
 *
 * The head is always exactly head_max bytes long: a record is oversized
 * only once it is known to have more than max_record >= head_max bytes,
 * and the parser waits for the head's bytes to arrive (the record's
 * deadline, which the owner keeps, covers a peer that sends no more). For
 * a record of several fragments the head is its payload with the
 * continuation marks squeezed out, as for a record.
 */
void rm_set_skip_oversized(struct rm_parser *p, uint32_t head_max);

/*
 * At RM_OVERSIZED: the record's payload length as its marks announced it
 * so far, more than max_record; the whole record when the fragment that
 * took it past max_record was its last. It grows as further fragments of
 * the record are thrown away, and is the whole record's length once the
 * record is skipped (until the next oversized record).
 */
static inline uint64_t rm_oversized_len(const struct rm_parser *p)
{
	return p->skip_len;
}

/* True while an oversized record is being gathered or thrown away. */
static inline bool rm_skipping(const struct rm_parser *p)
{
	return p->skip != RM_SKIP_NONE;
}

/* Payload bytes of oversized records consumed so far, their heads included. */
static inline uint64_t rm_skipped(const struct rm_parser *p)
{
	return p->skipped;
}

/* The read-ahead the next read uses (for tests and counters). */
static inline uint32_t rm_readahead(const struct rm_parser *p)
{
	return p->ra;
}

/*
 * The bytes a fresh buffer should have for the next record, by the size of
 * the last one (the size hint, at the top of this file); 0 when there is
 * no hint. The owner takes a buffer of at least this and of what
 * RM_NEED_BUFFER asks.
 */
static inline uint32_t rm_size_hint(const struct rm_parser *p)
{
	return p->hint;
}

/*
 * The next step; see the top of this file. After RM_ERROR, always RM_ERROR.
 * The span of RM_OVERSIZED (the head) is valid only until the next call on
 * the parser: the bytes behind it are read over; the owner copies what it
 * needs of it. A record being thrown away keeps bytes pending (its first
 * mark at least) until its end: rm_pending() > 0, and rm_eof() inside it
 * is RM_ERR_TRUNCATED.
 */
enum rm_status rm_next(struct rm_parser *p, struct rm_span *span);

/* n bytes were read where the last RM_NEED_INPUT said. */
void rm_filled(struct rm_parser *p, uint32_t n);

/*
 * Continue in base[0, size): the bytes read of the current incomplete
 * record (rm_pending()) are moved to its start. base may be the current
 * buffer (to slide those bytes back to offset 0) or NULL with size 0 when
 * nothing is pending (to let go of the buffer). Returns false, changing
 * nothing, when the buffer is smaller than the record needs (the span of
 * RM_NEED_BUFFER).
 */
bool rm_set_buffer(struct rm_parser *p, uint8_t *base, uint32_t size);

/*
 * Bytes of the current buffer that still belong to the parser: read but
 * not yet returned as part of a record. Zero means the buffer can go.
 */
static inline uint32_t rm_pending(const struct rm_parser *p)
{
	return p->fill - p->start;
}

/*
 * The input ended. Call after rm_next() returned RM_NEED_INPUT: anything
 * still pending is a record cut short (RM_ERR_TRUNCATED, which also
 * becomes the parser's error); otherwise RM_OK.
 */
enum rm_error rm_eof(struct rm_parser *p);

static inline enum rm_error rm_error(const struct rm_parser *p)
{
	return p->error;
}

/* Total bytes the parser has moved within or between buffers. */
static inline uint64_t rm_moved(const struct rm_parser *p)
{
	return p->moved;
}

/*
 * The most a buffer switch moves: a record mark plus the largest
 * read-ahead (the configured one, unless rm_set_readahead_max() let it
 * grow). What a multi-fragment record moves to squeeze out its
 * continuation marks is not included (each payload byte moves at most
 * once for that).
 */
static inline uint32_t rm_move_bound(const struct rm_parser *p)
{
	return RM_MARK_SIZE + p->readahead_max;
}

/* A short, stable name for logs and counters ("fragment-too-large", ...). */
const char *rm_error_name(enum rm_error e);

/* Write the mark of a fragment of len bytes (len <= RM_LEN_MASK). */
void rm_encode_mark(uint8_t out[RM_MARK_SIZE], uint32_t len, bool last);

#endif
