/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target: XDR splicing.
 *
 * The first byte picks the operation, the next ones describe up to 8
 * pieces (a 32-bit position or offset and a 16-bit length each, so that
 * the fuzzer can reach the alignment, order and range rules), and the rest
 * of the input is the message or inline part. Chunk data lives in an
 * exact-size heap buffer, so every accepted result is read back in full
 * (which is what writev() would do) and ASan checks each iovec. Accepted
 * reductions are rebuilt both ways and must give the message back.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "rdma/splice.h"

#define NIOV   24
#define NPIECE 8

#define CHECK(cond)                                                                                \
	do {                                                                                       \
		if (!(cond))                                                                       \
			abort();                                                                   \
	} while (0)

static uint8_t sink[1 << 17];

/*
 * Read every byte of out, in order (what writev() would do). The bytes are
 * left in sink when they fit, which they do for results built from the
 * input alone (fuzz_reduce compares them).
 */
static size_t drain(const struct splice_out *out)
{
	size_t n = 0;

	CHECK(out->cnt <= out->cap);
	for (unsigned i = 0; i < out->cnt; i++) {
		const uint8_t *p = out->iov[i].iov_base;
		size_t left = out->iov[i].iov_len;

		CHECK(left > 0);
		while (left) {
			size_t at = n % sizeof(sink), k = sizeof(sink) - at;
			if (k > left)
				k = left;
			memcpy(sink + at, p, k);
			p += k;
			left -= k;
			n += k;
		}
	}
	CHECK(n == out->len);
	return n;
}

static uint32_t get32(const uint8_t *p)
{
	return ((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) | ((uint32_t)p[2] << 8) | p[3];
}

struct piece {
	uint32_t at;
	uint32_t len;
};

/* sink holds msg again, except that the items' pads are zeros */
static void same_but_pads(const uint8_t *msg, uint32_t len, const struct splice_item *items,
			  unsigned n)
{
	uint32_t at = 0;

	for (unsigned i = 0; i < n; i++) {
		uint32_t pad_at = items[i].offset + items[i].len;
		CHECK(memcmp(sink + at, msg + at, pad_at - at) == 0);
		for (at = pad_at; at < pad_at + ((4 - items[i].len % 4) % 4); at++)
			CHECK(sink[at] == 0);
	}
	CHECK(memcmp(sink + at, msg + at, len - at) == 0);
}

static void fuzz_reduce(const uint8_t *msg, uint32_t len, const struct piece *pc, unsigned n,
			unsigned cap)
{
	struct splice_item items[NPIECE];
	struct splice_chunk chunks[NPIECE];
	struct splice_insert ins[NPIECE];
	struct iovec iov[NIOV], iov2[NIOV];
	struct splice_out red = { iov, cap, 0, 0 }, back = { iov2, NIOV, 0, 0 };
	uint32_t roff[NPIECE];
	uint8_t *inl;

	for (unsigned i = 0; i < n; i++)
		items[i] = (struct splice_item){ pc[i].at, pc[i].len };
	if (splice_reduce(msg, len, items, n, roff, &red) != SPLICE_OK)
		return;
	CHECK(drain(&red) <= len);
	/* the pads inside msg are put back as zeros: compare against that */
	inl = malloc(red.len + 1u);
	memcpy(inl, sink, red.len);
	for (unsigned i = 0; i < n; i++) {
		chunks[i] = (struct splice_chunk){ items[i].offset, msg + items[i].offset,
						   items[i].len };
		ins[i] = (struct splice_insert){ roff[i], msg + items[i].offset, items[i].len };
	}
	if (splice_rebuild_reply(inl, red.len, ins, n, &back) == SPLICE_OK) {
		CHECK(drain(&back) == len);
		same_but_pads(msg, len, items, n);
	} else
		CHECK(3 * n + 1 > NIOV); /* only the iovec array can be too small */
	if (!(n > 0 && items[0].offset == 0) &&
	    splice_rebuild(inl, red.len, chunks, n, &back) == SPLICE_OK) {
		CHECK(drain(&back) == len);
		same_but_pads(msg, len, items, n);
	}
	free(inl);
}

static void fuzz_rebuild(const uint8_t *inl, uint32_t len, const struct piece *pc, unsigned n,
			 unsigned cap, int reply)
{
	struct splice_chunk chunks[NPIECE];
	struct splice_insert ins[NPIECE];
	struct iovec iov[NIOV];
	struct splice_out out = { iov, cap, 0, 0 };
	uint8_t *data[NPIECE];
	enum splice_status s;

	for (unsigned i = 0; i < n; i++) {
		data[i] = malloc(pc[i].len + 1u);
		memset(data[i], (int)i, pc[i].len);
		chunks[i] = (struct splice_chunk){ pc[i].at, data[i], pc[i].len };
		ins[i] = (struct splice_insert){ pc[i].at, data[i], pc[i].len };
	}
	if (reply)
		s = splice_rebuild_reply(inl, len, ins, n, &out);
	else
		s = splice_rebuild(inl, len, chunks, n, &out);
	CHECK(splice_status_name(s)[0] != '?');
	if (s == SPLICE_OK) {
		/* the inline part (or the P0 chunk) plus every other piece with its pad */
		uint64_t want = len;
		unsigned i = 0;
		if (!reply && n > 0 && pc[0].at == 0)
			want = pc[i++].len;
		for (; i < n; i++)
			want += (pc[i].len + 3u) & ~3u;
		CHECK(drain(&out) == want);
	}
	for (unsigned i = 0; i < n; i++)
		free(data[i]);
}

static void fuzz_plan(const struct piece *pc, unsigned n, uint32_t item_len, uint32_t max_step,
		      unsigned cap)
{
	struct rpcrdma_seg segs[NPIECE];
	struct splice_step steps[64];
	uint32_t seg_len[NPIECE];
	uint64_t sum = 0;
	unsigned nsteps;

	for (unsigned i = 0; i < n; i++)
		segs[i] = (struct rpcrdma_seg){ i + 1, pc[i].len, ((uint64_t)pc[i].at << 20) };
	if (cap > 64)
		cap = 64;
	if (splice_plan(segs, n, item_len, max_step, steps, cap, &nsteps, seg_len) != SPLICE_OK)
		return;
	CHECK(nsteps <= cap);
	for (unsigned i = 0; i < nsteps; i++) {
		const struct splice_step *st = &steps[i];
		CHECK(st->seg < n && st->len > 0);
		CHECK(!max_step || st->len <= max_step);
		CHECK(st->handle == segs[st->seg].handle);
		CHECK(st->remote_offset >= segs[st->seg].offset);
		CHECK(st->remote_offset - segs[st->seg].offset + st->len <= segs[st->seg].length);
		CHECK(st->local_offset == sum);
		sum += st->len;
	}
	CHECK(sum == item_len);
	sum = 0;
	for (unsigned i = 0; i < n; i++) {
		CHECK(seg_len[i] <= segs[i].length);
		sum += seg_len[i];
	}
	CHECK(sum == item_len);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct piece pc[NPIECE];
	unsigned op, n, cap;

	if (size < 2)
		return 0;
	op = data[0] & 3;
	n = (data[0] >> 2) % (NPIECE + 1);
	cap = data[1] % (NIOV + 1);
	data += 2;
	size -= 2;
	if (size < (size_t)n * 6 + 8)
		return 0;
	for (unsigned i = 0; i < n; i++) {
		pc[i].at = get32(data);
		pc[i].len = (uint32_t)(data[4] << 8 | data[5]);
		data += 6;
		size -= 6;
	}
	uint32_t item_len = get32(data), max_step = get32(data + 4) & 0xffff;
	data += 8;
	size -= 8;
	if (size > 65536)
		size = 65536;

	switch (op) {
	case 0:
		fuzz_rebuild(data, (uint32_t)size, pc, n, cap, 0);
		break;
	case 1:
		fuzz_rebuild(data, (uint32_t)size, pc, n, cap, 1);
		break;
	case 2:
		fuzz_reduce(data, (uint32_t)size, pc, n, cap);
		break;
	default:
		fuzz_plan(pc, n, item_len, max_step, cap);
		break;
	}
	return 0;
}
