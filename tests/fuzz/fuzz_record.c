/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target for the record-marking parser (tcp/record.c).
 *
 * Input: 6 bytes of parameters, then the TCP byte stream.
 *   [0..1] max_record (1..65536)   [2] read-ahead (0..255)
 *   [3] size of a fresh buffer / 4  [4..5] seed of the read sizes
 *
 * The parser is driven as the TCP connection drives it (buffers of
 * exactly the size handed out, so ASan sees overruns; reads of varying
 * sizes), and checked against a plain whole-stream decoder: the same
 * records with the same bytes, then the same error. Also checked: read
 * windows stay inside the buffer, and a buffer switch moves no more than
 * a mark plus the read-ahead.
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
	uint8_t *payload; /* the records' bytes, one after the other */
	uint32_t *lens;
	unsigned int nrec;
	enum rm_error err;
};

/* Decode the whole stream at once, the obvious way. */
static void ref_decode(const uint8_t *in, size_t n, uint32_t max, struct ref *r)
{
	size_t pos = 0, out = 0;
	uint64_t cur = 0;
	bool inrec = false;

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

	struct ref ref;
	ref.payload = malloc(n + 1);
	ref.lens = malloc(sizeof(uint32_t) * (n / 4 + 1));
	check(ref.payload && ref.lens);
	ref_decode(in, n, max, &ref);

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
			check(nrec < ref.nrec && sp.len == ref.lens[nrec]);
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
	return 0;
}
