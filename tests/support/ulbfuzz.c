#include "support/ulbfuzz.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/version.h"
#include "ulb-rules/ulb.h"

const struct ulb_rules *gwt_stock_rules(void)
{
	static struct ulb_rules *rules;

	if (!rules) {
		char err[512];
		struct ulb_options o = { .stock_dir = GW_SOURCE_RULES_DIR };
		rules = ulb_rules_load(&o, err, sizeof(err));
		if (!rules) {
			fprintf(stderr, "%s\n", err);
			abort();
		}
	}
	return rules;
}

static uint8_t *copy_exact(const uint8_t *p, size_t len)
{
	uint8_t *m = malloc(len ? len : 1);

	if (!m)
		abort();
	memcpy(m, p, len);
	return m;
}

bool gwt_call_reply_split(const uint8_t *data, size_t size, struct gwt_call_reply *out)
{
	if (size < 3)
		return false;
	size_t clen = (size_t)data[1] << 8 | data[2];
	if (clen > size - 3)
		return false;
	out->moved = data[0];
	out->call_len = clen;
	out->call = copy_exact(data + 3, clen);
	out->reply_len = size - 3 - clen;
	out->reply = copy_exact(data + 3 + clen, out->reply_len);
	return true;
}

void gwt_call_reply_free(struct gwt_call_reply *cr)
{
	free(cr->call);
	free(cr->reply);
}
