/* SPDX-License-Identifier: MIT */
/*
 * Fuzz the lowering of advertised sizes (ulb_clamp_reply). Input as for
 * fuzz_ulb_reply, so that the corpora serve both: a moved mask byte, a
 * 2-byte call length, the call, then the reply. The call is parsed, and an
 * exact-size copy of the reply (ASan sees a byte read or written past it) is
 * lowered twice: to caps of one byte, which lower every size found, and to
 * a route's usual caps.
 *
 * Besides the bounds: nothing changes unless a field is reported, and
 * something does when one is; every word that changed now holds a cap (or
 * the zero high word of a 64-bit one); every report lowers; the reply to a
 * call that advertises no sizes never changes; and lowering again changes
 * nothing (the values are not part of the walk, so the walk finds them again).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/version.h"
#include "common/xdr.h"
#include "ulb-rules/ulb.h"

static struct ulb_rules *rules;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(const struct ulb_call *call, const uint8_t *orig, size_t len, uint32_t moved,
		  const struct ulb_size_caps *caps)
{
	struct ulb_clamp_report rep;
	uint8_t *msg = malloc(len ? len : 1);

	if (!msg)
		abort();
	memcpy(msg, orig, len);
	uint32_t fields = ulb_clamp_reply(call, msg, len, moved, caps, &rep);
	if (fields != rep.fields || fields >> ULB_CLAMP_NFIELDS)
		abort();
	if (!call->advertises_sizes && fields)
		abort();
	if ((fields == 0) != (memcmp(msg, orig, len) == 0))
		abort();
	/* XDR keeps every field on a 4-byte boundary of the message */
	for (size_t i = 0; i + 4 <= len; i += 4) {
		uint32_t v = xdr_get32(msg + i);
		if (v != xdr_get32(orig + i) && v != caps->io_max && v != caps->msg_max && v != 0)
			abort();
	}
	if (len % 4 && memcmp(msg + len / 4 * 4, orig + len / 4 * 4, len % 4) != 0)
		abort();
	for (int f = 0; f < ULB_CLAMP_NFIELDS; f++) {
		if (!(fields & (1u << f)))
			continue;
		uint32_t cap = f >= ULB_CLAMP_MAXREQ ? caps->msg_max : caps->io_max;
		if (rep.clamped[f] != cap || rep.advertised[f] <= cap)
			abort();
	}
	if (ulb_clamp_reply(call, msg, len, moved, caps, NULL) != 0)
		abort();
	free(msg);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const struct ulb_size_caps tiny = { .io_max = 1, .msg_max = 1 };
	static const struct ulb_size_caps usual = { .io_max = 1u << 20,
						    .msg_max = (1u << 20) + 4096 };
	struct ulb_call call;

	if (!rules) {
		char err[512];
		struct ulb_options o = { .stock_dir = GW_SOURCE_RULES_DIR };
		rules = ulb_rules_load(&o, err, sizeof(err));
		if (!rules) {
			fprintf(stderr, "%s\n", err);
			abort();
		}
	}
	if (size < 3)
		return 0;
	uint32_t moved = data[0];
	size_t clen = (size_t)data[1] << 8 | data[2];
	if (clen > size - 3)
		return 0;
	uint8_t *cmsg = malloc(clen ? clen : 1);
	if (!cmsg)
		abort();
	memcpy(cmsg, data + 3, clen);
	ulb_parse_call(rules, NULL, cmsg, clen, &call);
	free(cmsg);

	check(&call, data + 3 + clen, size - 3 - clen, moved, &tiny);
	check(&call, data + 3 + clen, size - 3 - clen, moved, &usual);
	return 0;
}
