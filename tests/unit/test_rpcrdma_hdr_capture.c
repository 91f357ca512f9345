/* SPDX-License-Identifier: MIT */
/*
 * Real transport headers, sent by the Linux NFS client (xprtrdma) and
 * server (svcrdma) over Soft-RoCE and captured with tshark (see
 * tests/data/rpcrdma/README.md). Every captured message must decode, pass
 * the XID and role checks, and agree with tshark's decode of the same
 * frame, kept in tests/data/rpcrdma/tshark.tsv: XID, version, credits,
 * type, the Read list entries with their positions, the Write chunks and
 * Reply chunk with their segment counts, and every segment's handle,
 * length and offset in wire order.
 *
 * GW_RPCRDMA_CAPTURE_DIR=DIR points the test at another extraction (say,
 * every message of a capture: extract.py --all).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "rdma/rpcrdma_hdr.h"

#define MAX_LIST 64

struct list {
	unsigned n;
	uint64_t v[MAX_LIST];
};

/* "a,b,c" (decimal or 0x hex) into l; "" is an empty list */
static void parse_list(const char *s, struct list *l)
{
	l->n = 0;
	while (*s) {
		char *end;
		assert_true(l->n < MAX_LIST);
		l->v[l->n++] = strtoull(s, &end, 0);
		assert_true(end != s);
		s = *end == ',' ? end + 1 : end;
	}
}

static uint64_t one(const char *s)
{
	struct list l;

	parse_list(s, &l);
	assert_int_equal(l.n, 1);
	return l.v[0];
}

static uint8_t *read_file(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	uint8_t *buf;
	long n;

	if (!f)
		fail_msg("cannot open %s", path);
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	rewind(f);
	buf = malloc(n > 0 ? (size_t)n : 1);
	assert_non_null(buf);
	assert_int_equal(fread(buf, 1, (size_t)n, f), (size_t)n);
	fclose(f);
	*len = (size_t)n;
	return buf;
}

/* One captured message against tshark's columns. */
static void check_message(const char *dir, char **col)
{
	char path[4096];
	size_t len;
	uint8_t *buf;
	struct rpcrdma_limits lim;
	struct rpcrdma_hdr h;
	struct list segcounts, positions, handles, lengths, offsets;
	unsigned k = 0;

	if (snprintf(path, sizeof(path), "%s/%s", dir, col[0]) >= (int)sizeof(path))
		fail_msg("path too long");
	buf = read_file(path, &len);
	rpcrdma_limits_default(&lim);
	enum rpcrdma_reason r = rpcrdma_hdr_decode(&h, buf, len, &lim);
	if (r != RPCRDMA_OK)
		fail_msg("%s: %s", col[0], rpcrdma_reason_name(r));

	assert_int_equal(h.xid, one(col[1]));
	assert_int_equal(h.version, one(col[2]));
	assert_int_equal(h.credits, one(col[3]));
	assert_int_equal(h.wire_proc, one(col[4]));
	if (h.proc == RPCRDMA_ERROR) {
		assert_int_equal(h.err, one(col[13]));
		if (h.err == RPCRDMA_ERR_VERS) {
			assert_int_equal(h.vers_low, one(col[14]));
			assert_int_equal(h.vers_high, one(col[15]));
		}
		free(buf);
		return;
	}
	assert_int_equal(h.read_nsegs, one(col[5]));
	assert_int_equal(h.nwrites, one(col[6]));
	assert_int_equal(h.has_reply, one(col[7]));
	parse_list(col[8], &segcounts);
	parse_list(col[9], &positions);
	parse_list(col[10], &handles);
	parse_list(col[11], &lengths);
	parse_list(col[12], &offsets);

	/* segment counts: each Write chunk's, then the Reply chunk's */
	assert_int_equal(segcounts.n, h.nwrites + h.has_reply);
	for (unsigned i = 0; i < h.nwrites; i++)
		assert_int_equal(segcounts.v[i], h.write[i].nsegs);
	if (h.has_reply)
		assert_int_equal(segcounts.v[h.nwrites], h.reply.nsegs);

	/* the Read list in wire order, then the same entries through the chunks */
	assert_int_equal(positions.n, h.read_nsegs);
	for (uint32_t i = 0; i < h.read_nsegs; i++, k++) {
		struct rpcrdma_read_seg rs;
		rpcrdma_read_seg(&h, i, &rs);
		assert_int_equal(rs.position, positions.v[i]);
		assert_int_equal(rs.seg.handle, handles.v[k]);
		assert_int_equal(rs.seg.length, lengths.v[k]);
		assert_int_equal(rs.seg.offset, offsets.v[k]);
	}
	for (uint32_t c = 0, i = 0; c < h.nreads; c++) {
		for (uint32_t j = 0; j < h.read[c].nsegs; j++, i++) {
			struct rpcrdma_seg s;
			rpcrdma_chunk_seg(&h.read[c], j, &s);
			assert_int_equal(h.read[c].position, positions.v[i]);
			assert_int_equal(s.handle, handles.v[i]);
		}
	}
	for (uint32_t c = 0; c < h.nwrites + h.has_reply; c++) {
		const struct rpcrdma_chunk *ch = c < h.nwrites ? &h.write[c] : &h.reply;
		uint64_t sum = 0;
		for (uint32_t j = 0; j < ch->nsegs; j++, k++) {
			struct rpcrdma_seg s;
			rpcrdma_chunk_seg(ch, j, &s);
			assert_int_equal(s.handle, handles.v[k]);
			assert_int_equal(s.length, lengths.v[k]);
			assert_int_equal(s.offset, offsets.v[k]);
			sum += s.length;
		}
		assert_int_equal(ch->length, sum);
	}
	assert_int_equal(handles.n, k);

	/* the message against its header, and the rules of its role */
	if (h.proc == RPCRDMA_MSG) {
		const uint8_t *rpc = buf + h.hdr_len;
		assert_int_equal(rpcrdma_hdr_check_xid(&h, rpc, h.inline_len), RPCRDMA_OK);
		if (rpcrdma_rpc_msg_type(rpc) == RPCRDMA_RPC_CALL)
			assert_int_equal(rpcrdma_hdr_check_call(&h), RPCRDMA_OK);
		else
			assert_int_equal(rpcrdma_hdr_check_reply(&h, NULL), RPCRDMA_OK);
	} else if (rpcrdma_hdr_has_p0(&h)) {
		assert_int_equal(rpcrdma_hdr_check_call(&h), RPCRDMA_OK);
	} else {
		assert_int_equal(rpcrdma_hdr_check_reply(&h, NULL), RPCRDMA_OK);
	}
	free(buf);
}

static void test_captured_headers(void **state)
{
	(void)state;
	const char *dir = getenv("GW_RPCRDMA_CAPTURE_DIR");
	char path[4096], line[8192];
	unsigned n = 0, kinds[5] = { 0 };
	FILE *f;

	if (!dir)
		dir = GW_TEST_DATA_DIR "/rpcrdma";
	if (snprintf(path, sizeof(path), "%s/tshark.tsv", dir) >= (int)sizeof(path))
		fail_msg("path too long");
	f = fopen(path, "r");
	if (!f)
		fail_msg("cannot open %s", path);
	while (fgets(line, sizeof(line), f)) {
		char *col[16], *p = line;
		unsigned c;

		if (line[0] == '#')
			continue;
		line[strcspn(line, "\n")] = 0;
		for (c = 0; c < 16; c++) {
			col[c] = p;
			p = strchr(p, '\t');
			if (!p) {
				c++;
				break;
			}
			*p++ = 0;
		}
		for (; c < 16; c++)
			col[c] = "";
		check_message(dir, col);
		kinds[one(col[4]) % 5]++;
		n++;
	}
	fclose(f);
	printf("%u captured headers agree with tshark (%u RDMA_MSG, %u RDMA_NOMSG, %u "
	       "RDMA_ERROR)\n",
	       n, kinds[RPCRDMA_MSG], kinds[RPCRDMA_NOMSG], kinds[RPCRDMA_ERROR]);
	/* the kept set covers both types, calls and replies, and every kind of chunk */
	assert_true(n >= 50);
	assert_true(kinds[RPCRDMA_MSG] > 0 && kinds[RPCRDMA_NOMSG] > 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_captured_headers),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
