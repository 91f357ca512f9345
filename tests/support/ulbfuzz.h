/*
 * What the fuzz targets of the Upper-Layer Binding walkers share: the stock
 * rules of the source tree, and the input format of a call with its reply,
 * which fuzz_ulb_reply and fuzz_ulb_clamp read alike so that their corpora
 * serve both.
 */
#ifndef GW_TESTS_SUPPORT_ULBFUZZ_H
#define GW_TESTS_SUPPORT_ULBFUZZ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct ulb_rules;

/* The rules in ulb-rules/ of the source tree, loaded on the first call; aborts if they fail. */
const struct ulb_rules *gwt_stock_rules(void);

/*
 * A call and its reply: a moved-mask byte, the call's length in 2 bytes
 * (big-endian), the call, then the reply to the end of the input. The two
 * messages are exact-size copies (ASan sees a byte read past either), to be
 * given back with gwt_call_reply_free().
 */
struct gwt_call_reply {
	uint32_t moved;
	uint8_t *call;
	size_t call_len;
	uint8_t *reply;
	size_t reply_len;
};

/* False when @data is too short to hold the lengths it names (the input is then of no use). */
bool gwt_call_reply_split(const uint8_t *data, size_t size, struct gwt_call_reply *out);
void gwt_call_reply_free(struct gwt_call_reply *cr);

#endif
