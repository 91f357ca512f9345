/* SPDX-License-Identifier: MIT */
/*
 * Fuzz the call walker: any byte string as an RPC call. Whatever the
 * status, nothing may be read out of bounds (ASan) and every reported item
 * must lie inside the message. A session table learnt from nothing is
 * consulted too, so the SEQUENCE path runs.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "common/version.h"
#include "ulb-rules/ulb.h"

static struct ulb_rules *rules;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct ulb_sessions sessions;
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
	ulb_parse_call(rules, &sessions, data, size, &call);
	if (call.n_args > ULB_MAX_ITEMS || call.n_results > ULB_MAX_ITEMS)
		abort();
	for (unsigned i = 0; i < call.n_args; i++)
		if (call.args[i].offset < 4 || call.args[i].offset > size ||
		    call.args[i].length > size - call.args[i].offset)
			abort();
	return 0;
}
