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
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/version.h"
#include "ulb-rules/ulb.h"

static struct ulb_rules *rules;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct ulb_sessions sessions;
	struct ulb_call call;
	struct ulb_reply reply;

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
	/* exact-size copies: ASan sees a read past either message */
	uint8_t *cmsg = malloc(clen ? clen : 1);
	uint8_t *rmsg = malloc(size - 3 - clen ? size - 3 - clen : 1);
	if (!cmsg || !rmsg)
		abort();
	memcpy(cmsg, data + 3, clen);
	size_t rlen = size - 3 - clen;
	memcpy(rmsg, data + 3 + clen, rlen);

	ulb_parse_call(rules, &sessions, cmsg, clen, &call);
	ulb_parse_reply(&call, &sessions, rmsg, rlen, moved, &reply);
	if (reply.n_items > ULB_MAX_ITEMS)
		abort();
	if (reply.binds_back &&
	    (!call.binds_session || memcmp(reply.bound_id, call.bind_id, ULB_SESSIONID_SIZE) != 0 ||
	     !ulb_sessions_has_back(&sessions, reply.bound_id)))
		abort();
	for (unsigned i = 0; i < reply.n_items; i++) {
		const struct ulb_reply_item *it = &reply.items[i];
		if (it->offset < 4 || it->offset > rlen)
			abort();
		if (!it->moved && it->length > rlen - it->offset)
			abort();
	}
	free(cmsg);
	free(rmsg);
	return 0;
}
