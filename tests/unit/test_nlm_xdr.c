/* SPDX-License-Identifier: MIT */
/*
 * The NLM codec (gateway/side/nlm/nlm_xdr.c): arguments built here word by word (not
 * with the encoder under test) decode to the right fields in v4 and v3;
 * every truncation, every length over its bound, a bad boolean and trailing
 * bytes are refused; a rewritten lock (another owner handle length, another
 * svid) encodes and decodes back; the svid is rewritten in place; TEST
 * replies with a holder round-trip; v3 refuses a range over 32 bits. SHARE,
 * UNSHARE, their reply and FREE_ALL's arguments likewise.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "gateway/side/nlm/nlm_xdr.h"

struct buf {
	uint8_t b[4096];
	size_t n;
};

static void w32(struct buf *b, uint32_t v)
{
	b->b[b->n++] = (uint8_t)(v >> 24);
	b->b[b->n++] = (uint8_t)(v >> 16);
	b->b[b->n++] = (uint8_t)(v >> 8);
	b->b[b->n++] = (uint8_t)v;
}

static void w64(struct buf *b, uint64_t v)
{
	w32(b, (uint32_t)(v >> 32));
	w32(b, (uint32_t)v);
}

static void wobj(struct buf *b, const void *p, uint32_t len)
{
	w32(b, len);
	memcpy(b->b + b->n, p, len);
	b->n += len;
	while (b->n % 4)
		b->b[b->n++] = 0;
}

static uint8_t fh4[NLM4_FHSIZE + 1], fh3[NLM3_FHSIZE + 1];

/* nlm4_lockargs or nlm_lockargs, with the given lengths of caller, fh and oh. */
static void lockargs(struct buf *b, uint32_t vers, uint32_t caller_len, uint32_t fh_len,
		     uint32_t oh_len)
{
	static char big[2048];

	memset(big, 'c', sizeof(big));
	b->n = 0;
	wobj(b, "cook", 4);
	w32(b, 1); /* block */
	w32(b, 1); /* exclusive */
	wobj(b, big, caller_len);
	wobj(b, vers == 4 ? fh4 : fh3, fh_len);
	wobj(b, big, oh_len);
	w32(b, 4242); /* svid */
	if (vers == 4) {
		w64(b, 0x100000000ull);
		w64(b, 10);
	} else {
		w32(b, 100);
		w32(b, 10);
	}
	w32(b, 0);  /* reclaim */
	w32(b, 17); /* state */
}

/* nlm_shareargs (v3: nlm_share; v4: nlm4_share), reclaim set. */
static void shareargs(struct buf *b, uint32_t vers, uint32_t caller_len, uint32_t fh_len,
		      uint32_t oh_len)
{
	static char big[2048];

	memset(big, 's', sizeof(big));
	b->n = 0;
	wobj(b, "cook", 4);
	wobj(b, big, caller_len);
	wobj(b, vers == 4 ? fh4 : fh3, fh_len);
	wobj(b, big, oh_len);
	w32(b, 2); /* mode: deny write */
	w32(b, 3); /* access: read and write */
	w32(b, 1); /* reclaim */
}

static void decodes_v4_lock(void **state)
{
	struct buf b;
	struct nlm_args a;

	(void)state;
	lockargs(&b, 4, 6, 64, 9);
	assert_int_equal(nlm_decode_args(4, NLMPROC_LOCK, b.b, b.n, &a), 0);
	assert_int_equal(a.kind, NLM_ARGS_LOCK);
	assert_int_equal(a.cookie.len, 4);
	assert_memory_equal(a.cookie.p, "cook", 4);
	assert_true(a.block && a.exclusive && !a.reclaim);
	assert_int_equal(a.state, 17);
	assert_int_equal(a.lock.caller.len, 6);
	assert_int_equal(a.lock.fh.len, 64);
	assert_memory_equal(a.lock.fh.p, fh4, 64);
	assert_int_equal(a.lock.oh.len, 9);
	assert_int_equal(a.lock.svid, 4242);
	assert_true(a.lock.offset == 0x100000000ull && a.lock.len == 10);
	/* The _MSG form has the same arguments. */
	assert_int_equal(nlm_decode_args(4, NLMPROC_LOCK_MSG, b.b, b.n, &a), 0);
}

static void decodes_v3_lock_and_test(void **state)
{
	struct buf b;
	struct nlm_args a;

	(void)state;
	lockargs(&b, 3, 5, 32, 12);
	assert_int_equal(nlm_decode_args(3, NLMPROC_LOCK, b.b, b.n, &a), 0);
	assert_true(a.lock.offset == 100 && a.lock.len == 10 && a.lock.svid == 4242);

	/* TEST: cookie, exclusive, lock. */
	b.n = 0;
	wobj(&b, "", 0);
	w32(&b, 0);
	wobj(&b, "host", 4);
	wobj(&b, fh3, 32);
	wobj(&b, "owner", 5);
	w32(&b, (uint32_t)-7);
	w32(&b, 0);
	w32(&b, 0);
	assert_int_equal(nlm_decode_args(1, NLMPROC_TEST, b.b, b.n, &a), 0);
	assert_int_equal(a.kind, NLM_ARGS_TEST);
	assert_false(a.exclusive);
	assert_int_equal(a.lock.svid, -7);
	assert_int_equal(nlm_decode_args(3, NLMPROC_GRANTED_MSG, b.b, b.n, &a), 0);
}

static void refuses_bad_lengths(void **state)
{
	struct buf b;
	struct nlm_args a;

	(void)state;
	lockargs(&b, 4, 1024, 64, 1024); /* every bound exactly: fine */
	assert_int_equal(nlm_decode_args(4, NLMPROC_LOCK, b.b, b.n, &a), 0);
	lockargs(&b, 4, 1025, 64, 8);
	assert_int_equal(nlm_decode_args(4, NLMPROC_LOCK, b.b, b.n, &a), -EBADMSG);
	lockargs(&b, 4, 8, 65, 8);
	assert_int_equal(nlm_decode_args(4, NLMPROC_LOCK, b.b, b.n, &a), -EBADMSG);
	lockargs(&b, 3, 8, 33, 8);
	assert_int_equal(nlm_decode_args(3, NLMPROC_LOCK, b.b, b.n, &a), -EBADMSG);
	lockargs(&b, 4, 8, 64, 1025);
	assert_int_equal(nlm_decode_args(4, NLMPROC_LOCK, b.b, b.n, &a), -EBADMSG);
	/* A huge length word must not wrap the bounds check or the position. */
	lockargs(&b, 4, 8, 64, 8);
	b.b[8] = b.b[9] = b.b[10] = b.b[11] = 0xff; /* block = 0xffffffff */
	assert_int_equal(nlm_decode_args(4, NLMPROC_LOCK, b.b, b.n, &a), -EBADMSG);
	lockargs(&b, 4, 8, 64, 8);
	b.b[0] = b.b[1] = b.b[2] = b.b[3] = 0xff; /* cookie length */
	assert_int_equal(nlm_decode_args(4, NLMPROC_LOCK, b.b, b.n, &a), -EBADMSG);
}

static void refuses_truncated_and_trailing(void **state)
{
	struct buf b;
	struct nlm_args a;

	(void)state;
	lockargs(&b, 4, 7, 64, 9);
	for (size_t n = 0; n < b.n; n++) {
		uint8_t *copy = malloc(n ? n : 1); /* exact size: ASan sees an overread */
		memcpy(copy, b.b, n);
		assert_int_equal(nlm_decode_args(4, NLMPROC_LOCK, copy, n, &a), -EBADMSG);
		free(copy);
	}
	w32(&b, 0);
	assert_int_equal(nlm_decode_args(4, NLMPROC_LOCK, b.b, b.n, &a), -EBADMSG);
	/* The same bytes as v3 arguments are misaligned garbage. */
	lockargs(&b, 4, 7, 32, 9);
	assert_int_equal(nlm_decode_args(3, NLMPROC_LOCK, b.b, b.n, &a), -EBADMSG);
}

static void refuses_unknown(void **state)
{
	struct buf b;
	struct nlm_args a;

	(void)state;
	lockargs(&b, 4, 7, 64, 9);
	assert_int_equal(nlm_decode_args(2, NLMPROC_LOCK, b.b, b.n, &a), -EPROTONOSUPPORT);
	assert_int_equal(nlm_decode_args(4, NLMPROC_LOCK_RES, b.b, b.n, &a), -EPROTONOSUPPORT);
	/* FREE_ALL has no lock (nlm_decode_notify()); v1 has no SHARE. */
	assert_int_equal(nlm_decode_args(4, NLMPROC_FREE_ALL, b.b, b.n, &a), -EPROTONOSUPPORT);
	shareargs(&b, 3, 5, 32, 8);
	assert_int_equal(nlm_decode_args(1, NLMPROC_SHARE, b.b, b.n, &a), -EPROTONOSUPPORT);
}

static void decodes_unaligned(void **state)
{
	struct buf b;
	struct nlm_args a;
	uint8_t *raw = malloc(4096 + 1);

	(void)state;
	lockargs(&b, 4, 7, 64, 9);
	memcpy(raw + 1, b.b, b.n);
	assert_int_equal(nlm_decode_args(4, NLMPROC_LOCK, raw + 1, b.n, &a), 0);
	assert_int_equal(a.lock.oh.len, 9);
	assert_ptr_equal(a.lock.fh.p, raw + 1 + 4 + 4 + 4 + 4 + 4 + 8 + 4);
	free(raw);
}

static void rewrites_owner(void **state)
{
	struct buf b;
	struct nlm_args a, back;
	uint8_t out[4096], token[16];
	size_t n;

	(void)state;
	memset(token, 0xab, sizeof(token));
	lockargs(&b, 4, 7, 64, 9);
	assert_int_equal(nlm_decode_args(4, NLMPROC_LOCK, b.b, b.n, &a), 0);
	a.lock.oh = (struct nlm_bytes){ token, sizeof(token) };
	a.lock.svid = 0x10002;
	a.lock.caller = (struct nlm_bytes){ (const uint8_t *)"gw", 2 };
	assert_int_equal(nlm_encode_args(&a, out, sizeof(out), &n), 0);
	assert_int_equal(n, b.n - 12 + 16 - 8 + 4); /* oh 12 -> 16, caller 8 -> 4 */
	assert_int_equal(nlm_decode_args(4, NLMPROC_LOCK, out, n, &back), 0);
	assert_int_equal(back.lock.svid, 0x10002);
	assert_int_equal(back.lock.oh.len, 16);
	assert_memory_equal(back.lock.oh.p, token, 16);
	assert_memory_equal(back.lock.fh.p, fh4, 64);
	assert_true(back.block && back.exclusive && back.state == 17);
	assert_true(back.lock.offset == 0x100000000ull && back.lock.len == 10);

	/* Too small an output buffer, at every size. */
	for (size_t cap = 0; cap < n; cap += 4)
		assert_int_equal(nlm_encode_args(&a, out, cap, &n), -ENOSPC);

	/* In place: only the svid word changes. */
	uint8_t before[4096];
	memcpy(before, b.b, b.n);
	assert_int_equal(nlm_decode_args(4, NLMPROC_LOCK, b.b, b.n, &a), 0);
	nlm_put_svid(b.b, &a.lock, -2);
	assert_int_equal(nlm_decode_args(4, NLMPROC_LOCK, b.b, b.n, &back), 0);
	assert_int_equal(back.lock.svid, -2);
	assert_memory_equal(b.b, before, a.lock.svid_off);
	assert_memory_equal(b.b + a.lock.svid_off + 4, before + a.lock.svid_off + 4,
			    b.n - a.lock.svid_off - 4);
}

static void encode_checks_bounds(void **state)
{
	struct buf b;
	struct nlm_args a;
	uint8_t out[4096];
	size_t n;

	(void)state;
	lockargs(&b, 3, 7, 32, 9);
	assert_int_equal(nlm_decode_args(3, NLMPROC_LOCK, b.b, b.n, &a), 0);
	a.lock.offset = 0x100000000ull;
	assert_int_equal(nlm_encode_args(&a, out, sizeof(out), &n), -EINVAL);
	a.lock.offset = 0;
	a.lock.fh = (struct nlm_bytes){ fh3, 33 };
	assert_int_equal(nlm_encode_args(&a, out, sizeof(out), &n), -EINVAL);
}

static void testres_holder_round_trip(void **state)
{
	struct buf b = { .n = 0 };
	struct nlm_testres r, back;
	uint8_t out[512];
	size_t n;

	(void)state;
	wobj(&b, "ck", 2);
	w32(&b, NLM_DENIED);
	w32(&b, 1);
	w32(&b, 0x10005);
	wobj(&b, "0123456789abcdef", 16);
	w64(&b, 5);
	w64(&b, 0);
	assert_int_equal(nlm_decode_testres(4, b.b, b.n, &r), 0);
	assert_true(r.stat == NLM_DENIED && r.holder.exclusive && r.holder.svid == 0x10005);
	assert_int_equal(r.holder.oh.len, 16);
	assert_true(r.holder.offset == 5 && r.holder.len == 0);

	r.holder.svid = 99;
	r.holder.oh = (struct nlm_bytes){ (const uint8_t *)"1234@client", 11 };
	assert_int_equal(nlm_encode_testres(4, &r, out, sizeof(out), &n), 0);
	assert_int_equal(nlm_decode_testres(4, out, n, &back), 0);
	assert_int_equal(back.holder.svid, 99);
	assert_memory_equal(back.holder.oh.p, "1234@client", 11);

	/* Truncations and a trailing word are refused. */
	for (size_t k = 0; k < b.n; k++)
		assert_int_equal(nlm_decode_testres(4, b.b, k, &r), -EBADMSG);
	w32(&b, 0);
	assert_int_equal(nlm_decode_testres(4, b.b, b.n, &r), -EBADMSG);

	/* GRANTED: no holder. A v3 holder range must fit 32 bits. */
	b.n = 0;
	wobj(&b, "ck", 2);
	w32(&b, NLM_GRANTED);
	assert_int_equal(nlm_decode_testres(3, b.b, b.n, &r), 0);
	r.stat = NLM_DENIED;
	r.holder.len = 0x1ffffffffull;
	assert_int_equal(nlm_encode_testres(3, &r, out, sizeof(out), &n), -EINVAL);

	struct nlm_res res;
	assert_int_equal(nlm_decode_res(b.b, b.n, &res), 0);
	assert_int_equal(res.stat, NLM_GRANTED);
	assert_int_equal(nlm_decode_res(b.b, b.n - 1, &res), -EBADMSG);
}

/* SM_NOTIFY's stat_chge: a name and a state, nothing after; the name bounded. */
static void stat_chge_decoded_and_bounded(void **state)
{
	uint8_t b[1100];
	int32_t st = 0;

	(void)state;
	memset(b, 0, sizeof(b));
	b[3] = 4; /* mon_name "host" */
	memcpy(b + 4, "host", 4);
	b[8] = 0xff, b[9] = 0xff, b[10] = 0xff, b[11] = 0xfd; /* state -3 */
	assert_int_equal(nsm_decode_stat_chge(b, 12, &st), 0);
	assert_int_equal(st, -3);
	assert_int_equal(nsm_decode_stat_chge(b, 16, &st), -EINVAL); /* bytes after */
	assert_int_equal(nsm_decode_stat_chge(b, 10, &st), -EINVAL); /* short */
	b[2] = 4, b[3] = 1; /* a name of 1025 bytes: over SM_MAXSTRLEN */
	assert_int_equal(nsm_decode_stat_chge(b, 4 + 1028 + 4, &st), -EINVAL);
}

/*
 * SHARE and UNSHARE: every field in v4 and v3; each bound (caller 1024, fh
 * 64 or 32, oh 1024), truncation, trailing bytes and a bad reclaim word
 * refused; a rewritten owner handle encodes and decodes back. The
 * shareres round-trips; FREE_ALL's nlm_notify is bounded.
 */
static void share_decoded_bounded_and_rewritten(void **state)
{
	struct buf b;
	struct nlm_args a, back;
	uint8_t out[4096];
	size_t n;

	(void)state;
	for (uint32_t vers = 3; vers <= 4; vers++) {
		uint32_t fhmax = vers == 4 ? NLM4_FHSIZE : NLM3_FHSIZE;
		shareargs(&b, vers, 5, fhmax, 8);
		assert_int_equal(nlm_decode_args(vers, NLMPROC_UNSHARE, b.b, b.n, &a), 0);
		assert_int_equal(a.kind, NLM_ARGS_SHARE);
		assert_int_equal(a.cookie.len, 4);
		assert_int_equal(a.lock.caller.len, 5);
		assert_int_equal(a.lock.fh.len, fhmax);
		assert_int_equal(a.lock.oh.len, 8);
		assert_int_equal(a.mode, 2);
		assert_int_equal(a.access, 3);
		assert_true(a.reclaim);
		a.lock.oh = (struct nlm_bytes){ (const uint8_t *)"0123456789abcdef", 16 };
		assert_int_equal(nlm_encode_args(&a, out, sizeof(out), &n), 0);
		assert_int_equal(n, b.n + 8);
		assert_int_equal(nlm_decode_args(vers, NLMPROC_SHARE, out, n, &back), 0);
		assert_memory_equal(back.lock.oh.p, "0123456789abcdef", 16);
		assert_int_equal(back.mode, 2);
		assert_int_equal(back.access, 3);

		shareargs(&b, vers, 5, fhmax + 1, 8);
		assert_int_equal(nlm_decode_args(vers, NLMPROC_SHARE, b.b, b.n, &a), -EBADMSG);
		shareargs(&b, vers, NLM_LM_MAXSTRLEN + 1, fhmax, 8);
		assert_int_equal(nlm_decode_args(vers, NLMPROC_SHARE, b.b, b.n, &a), -EBADMSG);
		shareargs(&b, vers, 5, fhmax, NLM_MAXNETOBJ + 1);
		assert_int_equal(nlm_decode_args(vers, NLMPROC_SHARE, b.b, b.n, &a), -EBADMSG);
		shareargs(&b, vers, 5, fhmax, 8);
		for (size_t cut = 4; cut <= b.n; cut += 4)
			assert_int_equal(nlm_decode_args(vers, NLMPROC_SHARE, b.b, b.n - cut, &a),
					 -EBADMSG);
		w32(&b, 0);
		assert_int_equal(nlm_decode_args(vers, NLMPROC_SHARE, b.b, b.n, &a), -EBADMSG);
		b.n -= 4;
		b.b[b.n - 1] = 2; /* reclaim 2 */
		assert_int_equal(nlm_decode_args(vers, NLMPROC_SHARE, b.b, b.n, &a), -EBADMSG);
	}
	/* Encoding refuses what v1 cannot carry. */
	shareargs(&b, 3, 5, 32, 8);
	assert_int_equal(nlm_decode_args(3, NLMPROC_SHARE, b.b, b.n, &a), 0);
	a.vers = 1;
	assert_int_equal(nlm_encode_args(&a, out, sizeof(out), &n), -EINVAL);

	/* shareres: cookie, stat, sequence; nothing after. */
	struct nlm_shareres r, rb;
	b.n = 0;
	wobj(&b, "cook", 4);
	w32(&b, NLM_DENIED);
	w32(&b, (uint32_t)-7);
	assert_int_equal(nlm_decode_shareres(b.b, b.n, &r), 0);
	assert_int_equal(r.stat, NLM_DENIED);
	assert_int_equal(r.sequence, -7);
	assert_int_equal(nlm_encode_shareres(&r, out, sizeof(out), &n), 0);
	assert_int_equal(n, b.n);
	assert_memory_equal(out, b.b, n);
	assert_int_equal(nlm_decode_shareres(b.b, b.n - 4, &rb), -EBADMSG);
	w32(&b, 0);
	assert_int_equal(nlm_decode_shareres(b.b, b.n, &rb), -EBADMSG);

	/* nlm_notify: name (up to 1024), state; nothing after. */
	struct nlm_bytes name;
	int32_t st;
	static char big[NLM_LM_MAXSTRLEN + 1];
	memset(big, 'n', sizeof(big));
	b.n = 0;
	wobj(&b, big, NLM_LM_MAXSTRLEN);
	w32(&b, 9);
	assert_int_equal(nlm_decode_notify(b.b, b.n, &name, &st), 0);
	assert_int_equal(name.len, NLM_LM_MAXSTRLEN);
	assert_int_equal(st, 9);
	assert_int_equal(nlm_decode_notify(b.b, b.n - 4, &name, &st), -EBADMSG);
	b.n = 0;
	wobj(&b, big, NLM_LM_MAXSTRLEN + 1);
	w32(&b, 9);
	assert_int_equal(nlm_decode_notify(b.b, b.n, &name, &st), -EBADMSG);
}

int main(void)
{
	for (size_t i = 0; i < sizeof(fh4); i++)
		fh4[i] = (uint8_t)(i * 7 + 1);
	for (size_t i = 0; i < sizeof(fh3); i++)
		fh3[i] = (uint8_t)(i * 5 + 3);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(decodes_v4_lock),
		cmocka_unit_test(decodes_v3_lock_and_test),
		cmocka_unit_test(refuses_bad_lengths),
		cmocka_unit_test(refuses_truncated_and_trailing),
		cmocka_unit_test(refuses_unknown),
		cmocka_unit_test(decodes_unaligned),
		cmocka_unit_test(rewrites_owner),
		cmocka_unit_test(encode_checks_bounds),
		cmocka_unit_test(testres_holder_round_trip),
		cmocka_unit_test(stat_chge_decoded_and_bounded),
		cmocka_unit_test(share_decoded_bounded_and_rewritten),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
