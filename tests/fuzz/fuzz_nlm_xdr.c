/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target for the NLM codec (gateway/side/nlm/nlm_xdr.c), the decoder every NLM
 * call and reply through the relay will meet first.
 *
 * Input: byte 0 picks the version (low 2 bits: 1, 3, 4, 4) and the
 * procedure (the rest, modulo 24); the remaining bytes are the argument
 * body (or reply body), copied into an allocation of exactly their size so
 * that ASan sees any read past its end.
 *
 * Checked: every view a decode gives lies inside the input and within its
 * protocol bound; what decodes re-encodes, and the encoding decodes to the
 * same fields (with the svid rewritten in place on the way); a TEST reply
 * and a result likewise; a SHARE/UNSHARE reply round-trips; FREE_ALL's
 * name stays inside the input.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "gateway/side/nlm/nlm_xdr.h"

#define check(cond)                                                                                \
	do {                                                                                       \
		if (!(cond))                                                                       \
			__builtin_trap();                                                          \
	} while (0)

static void check_view(const struct nlm_bytes *b, const uint8_t *buf, size_t len, uint32_t max)
{
	check(b->len <= max);
	if (b->len)
		check(b->p >= buf && b->p + b->len <= buf + len);
}

static bool same(const struct nlm_bytes *a, const struct nlm_bytes *b)
{
	return a->len == b->len && (a->len == 0 || memcmp(a->p, b->p, a->len) == 0);
}

static void args(uint32_t vers, uint32_t proc, uint8_t *msg, size_t len)
{
	static uint8_t out[4096];
	struct nlm_args a, b;
	size_t n;

	if (nlm_decode_args(vers, proc, msg, len, &a) != 0)
		return;
	check_view(&a.cookie, msg, len, NLM_MAXNETOBJ);
	check_view(&a.lock.caller, msg, len, NLM_LM_MAXSTRLEN);
	check_view(&a.lock.fh, msg, len, vers == 4 ? NLM4_FHSIZE : NLM3_FHSIZE);
	check_view(&a.lock.oh, msg, len, NLM_MAXNETOBJ);
	check(a.lock.svid_off + 4 <= len);
	check(nlm_encode_args(&a, out, sizeof(out), &n) == 0);
	check(n == len);
	check(nlm_decode_args(vers, proc, out, n, &b) == 0);
	check(same(&a.cookie, &b.cookie) && same(&a.lock.caller, &b.lock.caller) &&
	      same(&a.lock.fh, &b.lock.fh) && same(&a.lock.oh, &b.lock.oh));
	check(a.lock.svid == b.lock.svid && a.lock.offset == b.lock.offset &&
	      a.lock.len == b.lock.len && a.block == b.block && a.exclusive == b.exclusive &&
	      a.reclaim == b.reclaim && a.state == b.state && a.mode == b.mode &&
	      a.access == b.access);
	/* A SHARE has no svid on the wire. */
	if (a.kind == NLM_ARGS_SHARE)
		return;
	nlm_put_svid(out, &b.lock, ~a.lock.svid);
	check(nlm_decode_args(vers, proc, out, n, &b) == 0 && b.lock.svid == ~a.lock.svid);
}

static void replies(uint32_t vers, uint8_t *msg, size_t len)
{
	static uint8_t out[4096];
	struct nlm_testres r, back;
	struct nlm_res res;
	struct nlm_shareres sr, sback;
	struct nlm_bytes name;
	int32_t state;
	size_t n;

	if (nlm_decode_testres(vers, msg, len, &r) == 0) {
		check_view(&r.cookie, msg, len, NLM_MAXNETOBJ);
		check_view(&r.holder.oh, msg, len, NLM_MAXNETOBJ);
		check(nlm_encode_testres(vers, &r, out, sizeof(out), &n) == 0 && n == len);
		check(nlm_decode_testres(vers, out, n, &back) == 0 && back.stat == r.stat &&
		      back.holder.svid == r.holder.svid && same(&back.holder.oh, &r.holder.oh) &&
		      back.holder.offset == r.holder.offset);
	}
	if (nlm_decode_res(msg, len, &res) == 0)
		check_view(&res.cookie, msg, len, NLM_MAXNETOBJ);
	if (nlm_decode_shareres(msg, len, &sr) == 0) {
		check_view(&sr.cookie, msg, len, NLM_MAXNETOBJ);
		check(nlm_encode_shareres(&sr, out, sizeof(out), &n) == 0 && n == len);
		check(nlm_decode_shareres(out, n, &sback) == 0 && sback.stat == sr.stat &&
		      sback.sequence == sr.sequence && same(&sback.cookie, &sr.cookie));
	}
	if (nlm_decode_notify(msg, len, &name, &state) == 0)
		check_view(&name, msg, len, NLM_LM_MAXSTRLEN);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const uint32_t versions[4] = { 1, 3, 4, 4 };

	if (size < 1)
		return 0;
	uint32_t vers = versions[data[0] & 3];
	uint32_t proc = (uint32_t)(data[0] >> 2) % 24;
	size_t len = size - 1;
	uint8_t *msg = malloc(len ? len : 1);
	memcpy(msg, data + 1, len);
	args(vers, proc, msg, len);
	replies(vers, msg, len);
	free(msg);
	return 0;
}
