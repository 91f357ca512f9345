/* SPDX-License-Identifier: MIT */
/*
 * common/json_pos.h - where each member and element of a JSON text starts.
 *
 * jansson decodes a document and reports the position of *syntax* errors,
 * but keeps no position for the values it returns. Configuration and ULB
 * rule errors are semantic ("routes/1/listen: expected tcp://HOST:PORT"),
 * found after decoding, and must still name a line and column. This index
 * is built by one extra scan of the same text and answers, for a JSON
 * Pointer (RFC 6901) such as "/routes/1/listen", where the value (or the
 * member's key) begins. It is used only at start-up and on reload.
 */
#ifndef GW_COMMON_JSON_POS_H
#define GW_COMMON_JSON_POS_H

#include <stdbool.h>
#include <stddef.h>

struct json_pos_index;

struct json_pos {
	int line;   /* 1-based */
	int column; /* 1-based, in characters */
};

/*
 * Scan @text (@len bytes, need not be NUL-terminated). Returns NULL when out
 * of memory or when the text is not well-formed JSON (decode it with jansson
 * first to get the syntax error).
 */
struct json_pos_index *json_pos_index_build(const char *text, size_t len);
void json_pos_index_free(struct json_pos_index *idx);

/* Where the value at @pointer begins ("" is the whole document). */
bool json_pos_value(const struct json_pos_index *idx, const char *pointer, struct json_pos *out);

/*
 * Where the key of the object member at @pointer begins; for array elements
 * and the document this is the value's position.
 */
bool json_pos_key(const struct json_pos_index *idx, const char *pointer, struct json_pos *out);

/*
 * Build the JSON Pointer of member @key (escaping '~' and '/') or of element
 * @index under @parent into @out. Returns false when @outlen is too small.
 */
bool json_pointer_member(char *out, size_t outlen, const char *parent, const char *key);
bool json_pointer_index(char *out, size_t outlen, const char *parent, size_t index);

#endif
