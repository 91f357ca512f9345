/* SPDX-License-Identifier: MIT */
/*
 * Fuzz the call walker: any byte string as an RPC call. Whatever the
 * status, nothing may be read out of bounds (ASan) and every reported item
 * must lie inside the message. A session table learnt from nothing is
 * consulted too, so the SEQUENCE path runs.
 */
#include <stdint.h>
#include <stdlib.h>

#include "support/ulbfuzz.h"
#include "ulb-rules/ulb.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct ulb_sessions sessions;
	struct ulb_call call;

	ulb_parse_call(gwt_stock_rules(), &sessions, data, size, &call);
	if (call.n_args > ULB_MAX_ITEMS || call.n_results > ULB_MAX_ITEMS)
		abort();
	for (unsigned i = 0; i < call.n_args; i++)
		if (call.args[i].offset < 4 || call.args[i].offset > size ||
		    call.args[i].length > size - call.args[i].offset)
			abort();
	return 0;
}
