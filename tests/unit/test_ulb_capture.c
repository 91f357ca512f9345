/* SPDX-License-Identifier: MIT */
/*
 * The ULB against real traffic: every RPC record the Linux NFS client and
 * server exchanged over TCP in the capture of tests/data/ulb (NFSv3 with
 * MOUNT, NLM, NSM, NFSACL and rpcbind; NFSv4.0, 4.1, 4.2 with delegation
 * recalls), checked against Wireshark's dissection in MANIFEST:
 *   - program, version, procedure of each call;
 *   - each DDP-eligible item of calls and replies, byte for byte (length and
 *     FNV-1a of the located bytes), and the length word before it;
 *   - every exact reply bound holds for the real reply;
 *   - the reduced form of each reply (all item data removed, as a server
 *     writing them into Write chunks sends it) walks to the same items, and
 *     putting the data back at the reported offsets gives the original.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "common/xdr.h"
#include "ulb-rules/ulb.h"

#define DATA GW_TEST_DATA_DIR "/ulb"

struct expect {
	char file[160];
	uint32_t prog, vers, proc;
	char ops[256];
	unsigned n_items;
	uint32_t len[ULB_MAX_ITEMS];
	uint64_t hash[ULB_MAX_ITEMS];
};

static uint64_t fnv1a64(const uint8_t *p, size_t n)
{
	uint64_t h = 0xcbf29ce484222325ull;
	for (size_t i = 0; i < n; i++)
		h = (h ^ p[i]) * 0x100000001b3ull;
	return h;
}

static uint8_t *read_file(const char *name, size_t *len)
{
	char path[512];
	snprintf(path, sizeof(path), "%s/records/%s", DATA, name);
	FILE *f = fopen(path, "rb");
	assert_non_null(f);
	fseek(f, 0, SEEK_END);
	long n = ftell(f);
	rewind(f);
	uint8_t *buf = malloc(n > 0 ? (size_t)n : 1);
	assert_non_null(buf);
	assert_int_equal(fread(buf, 1, (size_t)n, f), (size_t)n);
	fclose(f);
	*len = (size_t)n;
	return buf;
}

static bool parse_line(const char *line, struct expect *e)
{
	char items[1024];
	memset(e, 0, sizeof(*e));
	if (line[0] == '#' || sscanf(line, "%159s %u %u %u %255s %1023s", e->file, &e->prog,
				     &e->vers, &e->proc, e->ops, items) != 6)
		return false;
	if (strcmp(items, "-") != 0) {
		char *save = NULL;
		for (char *t = strtok_r(items, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
			assert_true(e->n_items < ULB_MAX_ITEMS);
			unsigned long long h;
			assert_int_equal(sscanf(t, "%u:%llx", &e->len[e->n_items], &h), 2);
			e->hash[e->n_items++] = h;
		}
	}
	return true;
}

static const struct ulb_rules *rules;

static int setup(void **state)
{
	char err[512];
	struct ulb_options o = { .stock_dir = GW_SOURCE_DIR "/ulb-rules" };
	rules = ulb_rules_load(&o, err, sizeof(err));
	if (!rules)
		fprintf(stderr, "%s\n", err);
	return rules ? 0 : -1;
}

static int teardown(void **state)
{
	ulb_rules_free((struct ulb_rules *)rules);
	return 0;
}

static void check_items(const struct expect *e, const uint8_t *msg, unsigned n, const uint32_t *off,
			const uint32_t *len)
{
	if (n != e->n_items)
		fail_msg("%s: %u items, Wireshark found %u", e->file, n, e->n_items);
	for (unsigned i = 0; i < n; i++) {
		assert_int_equal(len[i], e->len[i]);
		assert_int_equal(xdr_get32(msg + off[i] - 4), len[i]);
		if (fnv1a64(msg + off[i], len[i]) != e->hash[i])
			fail_msg("%s: item %u bytes differ", e->file, i);
	}
}

/* Remove every item's data and pad; check the reduced walk; rebuild. */
static void check_reduced(const struct expect *e, const struct ulb_call *call,
			  const struct ulb_reply *full, const uint8_t *msg, size_t len)
{
	uint8_t *red = malloc(len);
	uint8_t *back = malloc(len);
	size_t rlen = 0, from = 0;
	uint32_t moved = (1u << full->n_items) - 1;

	assert_non_null(red);
	assert_non_null(back);
	for (unsigned i = 0; i < full->n_items; i++) {
		memcpy(red + rlen, msg + from, full->items[i].offset - from);
		rlen += full->items[i].offset - from;
		from = full->items[i].offset + xdr_align(full->items[i].length);
	}
	memcpy(red + rlen, msg + from, len - from);
	rlen += len - from;

	struct ulb_reply r;
	assert_int_equal(ulb_parse_reply(call, NULL, red, rlen, moved, &r), full->status);
	assert_int_equal(r.n_items, full->n_items);
	size_t blen = 0;
	from = 0;
	for (unsigned i = 0; i < r.n_items; i++) {
		assert_true(r.items[i].moved);
		assert_int_equal(r.items[i].length, full->items[i].length);
		memcpy(back + blen, red + from, r.items[i].offset - from);
		blen += r.items[i].offset - from;
		uint32_t padded = xdr_align(r.items[i].length);
		memcpy(back + blen, msg + full->items[i].offset, padded);
		blen += padded;
		from = r.items[i].offset;
	}
	memcpy(back + blen, red + from, rlen - from);
	blen += rlen - from;
	assert_int_equal(blen, len);
	if (memcmp(back, msg, len) != 0)
		fail_msg("%s: reduced reply does not rebuild", e->file);
	free(red);
	free(back);
}

/*
 * What the capture must hold (the list): every NFSv3 procedure, and
 * in each NFSv4 minor version the operations of a mount, create, write, read,
 * readdir, symlink, readlink, rename, setattr, lock and delegation return.
 */
enum { NFS4_MINORS = 3, NFS4_OPS_MAX = 76 };

struct coverage {
	bool v3[22];
	bool v4[NFS4_MINORS][NFS4_OPS_MAX];
};

static void cover(struct coverage *cov, const struct ulb_call *call, const char *ops)
{
	if (call->prog != 100003)
		return;
	if (call->vers == 3 && call->proc < 22)
		cov->v3[call->proc] = true;
	if (call->vers != 4 || call->proc != 1 || call->minorversion >= NFS4_MINORS)
		return;
	for (const char *p = ops; *p && *p != '-';) {
		char *end;
		unsigned long op = strtoul(p, &end, 10);
		if (end == p)
			break;
		if (op < NFS4_OPS_MAX)
			cov->v4[call->minorversion][op] = true;
		p = *end == ',' ? end + 1 : end;
	}
}

static void check_coverage(const struct coverage *cov)
{
	/* OPEN CLOSE ACCESS LOOKUP PUTFH GETATTR WRITE COMMIT READ READDIR CREATE
	 * READLINK RENAME SETATTR LOCK LOCKU DELEGRETURN REMOVE */
	static const unsigned every[] = { 18, 4, 3,  15, 22, 9,	 38, 5, 25,
					  26, 6, 27, 29, 34, 12, 14, 8, 28 };
	/* SETCLIENTID SETCLIENTID_CONFIRM PUTROOTFH RENEW */
	static const unsigned v40[] = { 35, 36, 24, 30 };
	/* EXCHANGE_ID CREATE_SESSION SEQUENCE RECLAIM_COMPLETE SECINFO_NO_NAME DESTROY_SESSION */
	static const unsigned v41[] = { 42, 43, 53, 58, 52, 44 };

	for (unsigned p = 0; p < 22; p++) {
		if (!cov->v3[p])
			fail_msg("no NFSv3 procedure %u in the capture", p);
	}
	for (unsigned m = 0; m < NFS4_MINORS; m++) {
		for (size_t i = 0; i < sizeof(every) / sizeof(every[0]); i++) {
			if (!cov->v4[m][every[i]])
				fail_msg("no operation %u in the NFSv4.%u capture", every[i], m);
		}
		const unsigned *own = m == 0 ? v40 : v41;
		size_t nown = m == 0 ? sizeof(v40) / sizeof(v40[0]) : sizeof(v41) / sizeof(v41[0]);
		for (size_t i = 0; i < nown; i++) {
			if (!cov->v4[m][own[i]])
				fail_msg("no operation %u in the NFSv4.%u capture", own[i], m);
		}
	}
}

static void test_capture(void **state)
{
	char path[512];
	snprintf(path, sizeof(path), "%s/MANIFEST", DATA);
	FILE *m = fopen(path, "r");
	assert_non_null(m);

	struct ulb_sessions sessions;
	memset(&sessions, 0, sizeof(sessions));
	struct coverage cov;
	memset(&cov, 0, sizeof(cov));
	char line[2048];
	unsigned pairs = 0, call_items = 0, reply_items = 0, v41_bounded = 0, exact = 0;
	unsigned v3_reads = 0, v3_readlinks = 0;
	while (fgets(line, sizeof(line), m)) {
		struct expect ec, er;
		if (!parse_line(line, &ec))
			continue;
		assert_non_null(fgets(line, sizeof(line), m));
		assert_true(parse_line(line, &er));

		size_t clen, rlen;
		uint8_t *cmsg = read_file(ec.file, &clen);
		uint8_t *rmsg = read_file(er.file, &rlen);
		struct ulb_call call;
		enum ulb_status st = ulb_parse_call(rules, &sessions, cmsg, clen, &call);
		if (st != ULB_OK)
			fail_msg("%s: status %d", ec.file, st);
		assert_int_equal(call.prog, ec.prog);
		assert_int_equal(call.vers, ec.vers);
		assert_int_equal(call.proc, ec.proc);
		if (ec.prog == 100003)
			assert_true(call.known);
		cover(&cov, &call, ec.ops);
		/* READ, READDIR and READDIRPLUS bound their replies exactly from their counts */
		if (call.prog == 100003 && call.vers == 3 &&
		    (call.proc == 6 || call.proc == 16 || call.proc == 17))
			assert_true(call.reply_exact);

		uint32_t off[ULB_MAX_ITEMS], len[ULB_MAX_ITEMS];
		for (unsigned i = 0; i < call.n_args; i++) {
			off[i] = call.args[i].offset;
			len[i] = call.args[i].length;
		}
		check_items(&ec, cmsg, call.n_args, off, len);
		call_items += call.n_args;

		/* the bound holds for the real reply */
		if (call.reply_exact && rlen > call.reply_max)
			fail_msg("%s: reply of %zu bytes, exact bound %u", er.file, rlen,
				 call.reply_max);
		exact += call.reply_exact;
		if (call.has_sequence && ulb_sessions_maxresp(&sessions, call.sessionid)) {
			assert_true(call.reply_exact);
			assert_true(call.reply_max <=
				    ulb_sessions_maxresp(&sessions, call.sessionid));
			v41_bounded++;
		}

		/* READ data is opaque, a READLINK path is a string (NFSv3: procs 6 and 5) */
		if (call.prog == 100003 && call.vers == 3 && call.proc == 6) {
			assert_int_equal(call.n_results, 1);
			assert_int_equal(call.result_opaque, 1);
			v3_reads++;
		} else if (call.prog == 100003 && call.vers == 3 && call.proc == 5) {
			assert_int_equal(call.n_results, 1);
			assert_int_equal(call.result_opaque, 0);
			v3_readlinks++;
		}

		struct ulb_reply r;
		enum ulb_reply_status rs = ulb_parse_reply(&call, &sessions, rmsg, rlen, 0, &r);
		if (rs != ULB_REPLY_OK && rs != ULB_REPLY_NO_RESULTS)
			fail_msg("%s: reply status %d", er.file, rs);
		assert_int_equal(r.xid, call.xid);
		for (unsigned i = 0; i < r.n_items; i++) {
			off[i] = r.items[i].offset;
			len[i] = r.items[i].length;
			assert_false(r.items[i].moved);
			/* the call announced the item and its largest size */
			assert_true(i < call.n_results);
			assert_true(len[i] <= call.result_max[i]);
		}
		check_items(&er, rmsg, r.n_items, off, len);
		reply_items += r.n_items;
		if (r.n_items)
			check_reduced(&er, &call, &r, rmsg, rlen);

		free(cmsg);
		free(rmsg);
		pairs++;
	}
	fclose(m);
	printf("capture: %u pairs, %u call items, %u reply items, %u exact bounds, %u by "
	       "session\n",
	       pairs, call_items, reply_items, exact, v41_bounded);
	/* the capture has WRITEs, SYMLINKs, READs, READLINKs in every version */
	assert_true(pairs > 150);
	assert_true(call_items >= 20);
	assert_true(reply_items >= 20);
	assert_true(v41_bounded > 20);
	assert_true(v3_reads > 0 && v3_readlinks > 0);
	check_coverage(&cov);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_capture),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
