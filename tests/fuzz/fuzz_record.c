/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target for the record-marking parser (tcp/record.c).
 *
 * Input: 6 bytes of parameters, then the TCP byte stream.
 *   [0..1] max_record (1..65536)   [2] read-ahead (0..255)
 *   [3] size of a fresh buffer / 4  [4..5] seed of the read sizes
 *   [4] also: top bit set, oversized records are skipped
 *       (rm_set_skip_oversized()) with a head of 8 * (the low 7 bits)
 *
 * The parser is driven as the TCP connection drives it (buffers of
 * exactly the size handed out, so ASan sees overruns; reads of varying
 * sizes), and checked against a plain whole-stream decoder: the same
 * records with the same bytes, then the same error. Also checked: read
 * windows stay inside the buffer, and a buffer switch moves no more than
 * a mark plus the read-ahead. With skipping, the oversized records come
 * in order among the others, each with the head and the length the
 * decoder expects, and no buffer larger than a record's is asked for.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/xdr.h"
#include "tcp/record.h"

#define check(cond)                                                                                \
	do {                                                                                       \
		if (!(cond))                                                                       \
			__builtin_trap();                                                          \
	} while (0)

struct ref {
	uint8_t *payload; /* the records' bytes (an oversized one's head), one after the other */
	uint32_t *lens;
	/* oversized records: their length announced when reported; 0 for a record */
	uint64_t *olen;
	unsigned int nrec;
	enum rm_error err;
};

/*
 * Skip the oversized record whose mark at pos - 4 announced len more bytes
 * after cur already taken; false with r->err set if the stream ends or
 * breaks in it.
 */
static bool ref_skip(const uint8_t *in, size_t n, size_t *pos, size_t *out, uint64_t cur,
		     uint32_t len, bool last, uint32_t head, struct ref *r)
{
	/*
	 * The head: what the record has so far (the cur bytes before out),
	 * and the rest from this fragment.
	 */
	if (cur < head) {
		if (n - *pos < head - cur) {
			r->err = RM_ERR_TRUNCATED;
			return false;
		}
		memcpy(r->payload + *out, in + *pos, head - cur);
	}
	r->lens[r->nrec] = head;
	r->olen[r->nrec++] = cur + len;
	*out = *out - cur + head;
	for (;;) {
		if (n - *pos < len) {
			r->err = RM_ERR_TRUNCATED;
			return false;
		}
		*pos += len;
		if (last)
			return true;
		if (n - *pos < 4) {
			r->err = RM_ERR_TRUNCATED;
			return false;
		}
		uint32_t m = xdr_get32(in + *pos);

		len = m & RM_LEN_MASK;
		last = (m & RM_LAST_FRAG) != 0;
		*pos += 4;
		if (len == 0 && !last) {
			r->err = RM_ERR_EMPTY_FRAGMENT;
			return false;
		}
	}
}

/* Decode the whole stream at once, the obvious way. skip: head size, or -1 for no skipping. */
static void ref_decode(const uint8_t *in, size_t n, uint32_t max, int64_t skip, struct ref *r)
{
	size_t pos = 0, out = 0;
	uint64_t cur = 0;
	bool inrec = false;
	uint32_t head = skip < 0 ? 0 : (uint32_t)(skip < max ? skip : max);

	r->err = RM_OK;
	r->nrec = 0;
	while (pos < n) {
		if (n - pos < 4) {
			r->err = RM_ERR_TRUNCATED;
			return;
		}
		uint32_t m = xdr_get32(in + pos);
		uint32_t len = m & RM_LEN_MASK;
		bool last = (m & RM_LAST_FRAG) != 0;

		pos += 4;
		if (skip >= 0 && cur + len > max) {
			if (!ref_skip(in, n, &pos, &out, cur, len, last, head, r))
				return;
			cur = 0;
			inrec = false;
			continue;
		}
		if (len > max) {
			r->err = RM_ERR_FRAGMENT_TOO_LARGE;
			return;
		}
		if (cur + len > max) {
			r->err = RM_ERR_RECORD_TOO_LARGE;
			return;
		}
		if (len == 0 && !last) {
			r->err = RM_ERR_EMPTY_FRAGMENT;
			return;
		}
		if (len == 0 && !inrec) {
			r->err = RM_ERR_EMPTY_RECORD;
			return;
		}
		if (n - pos < len) {
			r->err = RM_ERR_TRUNCATED;
			return;
		}
		memcpy(r->payload + out, in + pos, len);
		out += len;
		pos += len;
		cur += len;
		inrec = true;
		if (last) {
			r->olen[r->nrec] = 0;
			r->lens[r->nrec++] = (uint32_t)cur;
			cur = 0;
			inrec = false;
		}
	}
	if (inrec)
		r->err = RM_ERR_TRUNCATED;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 6)
		return 0;
	uint32_t max = 1 + (((uint32_t)data[0] << 8 | data[1]) & 0xffff);
	uint32_t readahead = data[2];
	uint32_t bufsize = (uint32_t)data[3] * 4;
	uint32_t seed = (uint32_t)data[4] << 8 | data[5];
	const uint8_t *in = data + 6;
	size_t n = size - 6;
	int64_t skip = data[4] & 0x80 ? 8 * (data[4] & 0x7f) : -1;

	struct ref ref;
	ref.payload = malloc(n + 1);
	ref.lens = malloc(sizeof(uint32_t) * (n / 4 + 1));
	ref.olen = malloc(sizeof(uint64_t) * (n / 4 + 1));
	check(ref.payload && ref.lens && ref.olen);
	ref_decode(in, n, max, skip, &ref);

	struct rm_parser p;
	uint8_t *buf = NULL;
	uint32_t bsize = 0;
	size_t at = 0, out = 0;
	unsigned int nrec = 0;
	enum rm_error err = RM_OK;

	rm_init(&p, max, readahead);
	/* Some runs with a read-ahead that grows (up to 64 times the configured one). */
	if (data[5] & 0x40)
		rm_set_readahead_max(&p, readahead * (1 + (data[5] & 0x3f)));
	if (skip >= 0)
		rm_set_skip_oversized(&p, (uint32_t)skip);
	for (;;) {
		struct rm_span sp;
		enum rm_status st = rm_next(&p, &sp);

		if (st == RM_ERROR) {
			err = rm_error(&p);
			check(err != RM_OK);
			break;
		}
		if (st == RM_RECORD) {
			check((uint64_t)sp.off + sp.len <= bsize);
			check(nrec < ref.nrec && sp.len == ref.lens[nrec] && ref.olen[nrec] == 0);
			check(memcmp(buf + sp.off, ref.payload + out, sp.len) == 0);
			out += sp.len;
			nrec++;
			continue;
		}
		if (st == RM_OVERSIZED) {
			check(skip >= 0 && rm_skipping(&p));
			check((uint64_t)sp.off + sp.len <= bsize);
			check(nrec < ref.nrec && sp.len == ref.lens[nrec]);
			check(ref.olen[nrec] == rm_oversized_len(&p) && ref.olen[nrec] > max);
			check(memcmp(buf + sp.off, ref.payload + out, sp.len) == 0);
			out += sp.len;
			nrec++;
			continue;
		}
		if (st == RM_NEED_BUFFER) {
			uint32_t pending = rm_pending(&p);
			uint32_t nsize = sp.len > bufsize ? sp.len : bufsize;
			uint8_t *nb = malloc(nsize ? nsize : 1);

			check(nb && pending <= sp.len && pending <= rm_move_bound(&p));
			/* A record being skipped never asks for more than a record's buffer. */
			check(!rm_skipping(&p) || sp.len <= max + RM_BUF_SLACK);
			check(!rm_set_buffer(&p, nb, sp.len - 1));
			check(rm_set_buffer(&p, nb, nsize));
			free(buf);
			buf = nb;
			bsize = nsize;
			continue;
		}
		/* RM_NEED_INPUT */
		check(sp.len > 0 && (uint64_t)sp.off + sp.len <= bsize);
		if (at == n) {
			err = rm_eof(&p);
			break;
		}
		seed = seed * 1103515245u + 12345u;
		size_t chunk = 1 + (seed >> 16) % (seed & 0x8000 ? 7 : 4096);
		if (chunk > sp.len)
			chunk = sp.len;
		if (chunk > n - at)
			chunk = n - at;
		memcpy(buf + sp.off, in + at, chunk);
		rm_filled(&p, (uint32_t)chunk);
		at += chunk;
	}
	check(nrec == ref.nrec);
	check(err == ref.err);

	free(buf);
	free(ref.payload);
	free(ref.lens);
	free(ref.olen);
	return 0;
}
