/* SPDX-License-Identifier: MIT */
/*
 * Fuzz the reply walker, full and reduced. Input: a moved mask byte, a
 * 2-byte call length, the call, then the reply. The call is parsed first
 * (it selects the procedure and rule), then the reply is walked with the
 * mask. Reported items must lie in the reply unless moved; a CREATE_SESSION
 * reply feeds the session table, and a BIND_CONN_TO_SESSION reply that binds
 * the back channel must name the session of its call, now in the table with
 * its back channel.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "support/ulbfuzz.h"
#include "ulb-rules/ulb.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct ulb_sessions sessions;
	struct gwt_call_reply in;
	struct ulb_call call;
	struct ulb_reply reply;

	if (!gwt_call_reply_split(data, size, &in))
		return 0;
	ulb_parse_call(gwt_stock_rules(), &sessions, in.call, in.call_len, &call);
	ulb_parse_reply(&call, &sessions, in.reply, in.reply_len, in.moved, &reply);
	if (reply.n_items > ULB_MAX_ITEMS)
		abort();
	if (reply.binds_back &&
	    (!call.binds_session || memcmp(reply.bound_id, call.bind_id, ULB_SESSIONID_SIZE) != 0 ||
	     !ulb_sessions_has_back(&sessions, reply.bound_id)))
		abort();
	for (unsigned i = 0; i < reply.n_items; i++) {
		const struct ulb_reply_item *it = &reply.items[i];
		if (it->offset < 4 || it->offset > in.reply_len)
			abort();
		if (!it->moved && it->length > in.reply_len - it->offset)
			abort();
	}
	gwt_call_reply_free(&in);
	return 0;
}
