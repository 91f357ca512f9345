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
#include <stdlib.h>
#include <string.h>

#include "common/xdr.h"
#include "support/ulbfuzz.h"
#include "ulb-rules/ulb.h"

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
	struct gwt_call_reply in;
	struct ulb_call call;

	if (!gwt_call_reply_split(data, size, &in))
		return 0;
	ulb_parse_call(gwt_stock_rules(), NULL, in.call, in.call_len, &call);
	check(&call, in.reply, in.reply_len, in.moved, &tiny);
	check(&call, in.reply, in.reply_len, in.moved, &usual);
	gwt_call_reply_free(&in);
	return 0;
}
