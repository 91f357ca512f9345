/* SPDX-License-Identifier: MIT */
#include "common/json_pos.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct json_pos_entry {
	char *pointer;
	struct json_pos key;
	struct json_pos value;
};

struct json_pos_index {
	struct json_pos_entry *entries;
	size_t count;
	size_t cap;
};

/* Scanner state: the text, the cursor, and its line and column. */
struct scan {
	const char *p;
	const char *end;
	int line;
	int column;
	int depth;
	struct json_pos_index *idx;
};

enum { SCAN_MAX_DEPTH = 256, SCAN_MAX_KEY = 1024 };

static void scan_advance(struct scan *s)
{
	unsigned char c = (unsigned char)*s->p++;

	if (c == '\n') {
		s->line++;
		s->column = 1;
	} else if ((c & 0xc0) != 0x80) {
		/* UTF-8 continuation bytes do not start a new column. */
		s->column++;
	}
}

static void scan_skip_ws(struct scan *s)
{
	while (s->p < s->end && (*s->p == ' ' || *s->p == '\t' || *s->p == '\n' || *s->p == '\r'))
		scan_advance(s);
}

static struct json_pos scan_here(const struct scan *s)
{
	return (struct json_pos){ .line = s->line, .column = s->column };
}

static bool index_add(struct json_pos_index *idx, const char *pointer, struct json_pos key,
		      struct json_pos value)
{
	if (idx->count == idx->cap) {
		size_t cap = idx->cap ? idx->cap * 2 : 64;
		struct json_pos_entry *e = realloc(idx->entries, cap * sizeof(*e));
		if (!e)
			return false;
		idx->entries = e;
		idx->cap = cap;
	}
	char *copy = strdup(pointer);
	if (!copy)
		return false;
	idx->entries[idx->count++] = (struct json_pos_entry){ copy, key, value };
	return true;
}

/*
 * Scan a string; when @out is not NULL, store its decoded value (escapes
 * other than \uXXXX resolved, \uXXXX kept for ASCII only; a key that needs
 * more is still indexed, under its best-effort spelling).
 */
static bool scan_string(struct scan *s, char *out, size_t outlen)
{
	size_t n = 0;

	if (s->p >= s->end || *s->p != '"')
		return false;
	scan_advance(s);
	while (s->p < s->end && *s->p != '"') {
		char c = *s->p;
		if (c == '\\') {
			scan_advance(s);
			if (s->p >= s->end)
				return false;
			c = *s->p;
			switch (c) {
			case 'n':
				c = '\n';
				break;
			case 't':
				c = '\t';
				break;
			case 'r':
				c = '\r';
				break;
			case 'b':
				c = '\b';
				break;
			case 'f':
				c = '\f';
				break;
			case 'u': {
				unsigned v = 0;
				for (int i = 0; i < 4; i++) {
					scan_advance(s);
					if (s->p >= s->end)
						return false;
					char h = *s->p;
					v = v * 16 + (unsigned)(h >= 'a'   ? h - 'a' + 10
								: h >= 'A' ? h - 'A' + 10
									   : h - '0');
				}
				c = v < 0x80 ? (char)v : '?';
				break;
			}
			default:
				break; /* '"', '\\', '/' stand for themselves */
			}
		}
		if (out && n + 1 < outlen)
			out[n++] = c;
		scan_advance(s);
	}
	if (s->p >= s->end)
		return false;
	scan_advance(s); /* closing quote */
	if (out)
		out[n] = '\0';
	return true;
}

static bool scan_value(struct scan *s, const char *pointer, struct json_pos key);

static bool scan_object(struct scan *s, const char *pointer)
{
	char key[SCAN_MAX_KEY];
	char child[4096];

	scan_advance(s); /* '{' */
	scan_skip_ws(s);
	if (s->p < s->end && *s->p == '}') {
		scan_advance(s);
		return true;
	}
	for (;;) {
		scan_skip_ws(s);
		struct json_pos kpos = scan_here(s);
		if (!scan_string(s, key, sizeof(key)))
			return false;
		scan_skip_ws(s);
		if (s->p >= s->end || *s->p != ':')
			return false;
		scan_advance(s);
		if (!json_pointer_member(child, sizeof(child), pointer, key))
			return false;
		if (!scan_value(s, child, kpos))
			return false;
		scan_skip_ws(s);
		if (s->p >= s->end)
			return false;
		if (*s->p == '}') {
			scan_advance(s);
			return true;
		}
		if (*s->p != ',')
			return false;
		scan_advance(s);
	}
}

static bool scan_array(struct scan *s, const char *pointer)
{
	char child[4096];

	scan_advance(s); /* '[' */
	scan_skip_ws(s);
	if (s->p < s->end && *s->p == ']') {
		scan_advance(s);
		return true;
	}
	for (size_t i = 0;; i++) {
		scan_skip_ws(s);
		if (!json_pointer_index(child, sizeof(child), pointer, i))
			return false;
		if (!scan_value(s, child, scan_here(s)))
			return false;
		scan_skip_ws(s);
		if (s->p >= s->end)
			return false;
		if (*s->p == ']') {
			scan_advance(s);
			return true;
		}
		if (*s->p != ',')
			return false;
		scan_advance(s);
	}
}

static bool scan_value(struct scan *s, const char *pointer, struct json_pos key)
{
	scan_skip_ws(s);
	if (s->p >= s->end || ++s->depth > SCAN_MAX_DEPTH)
		return false;
	if (!index_add(s->idx, pointer, key, scan_here(s)))
		return false;

	bool ok;
	switch (*s->p) {
	case '{':
		ok = scan_object(s, pointer);
		break;
	case '[':
		ok = scan_array(s, pointer);
		break;
	case '"':
		ok = scan_string(s, NULL, 0);
		break;
	default:
		/* number, true, false, null: up to the next delimiter */
		ok = false;
		while (s->p < s->end && !strchr(",]} \t\r\n", *s->p)) {
			scan_advance(s);
			ok = true;
		}
		break;
	}
	s->depth--;
	return ok;
}

struct json_pos_index *json_pos_index_build(const char *text, size_t len)
{
	struct json_pos_index *idx = calloc(1, sizeof(*idx));
	if (!idx)
		return NULL;

	struct scan s = { .p = text, .end = text + len, .line = 1, .column = 1, .idx = idx };
	if (!scan_value(&s, "", (struct json_pos){ 1, 1 })) {
		json_pos_index_free(idx);
		return NULL;
	}
	return idx;
}

void json_pos_index_free(struct json_pos_index *idx)
{
	if (!idx)
		return;
	for (size_t i = 0; i < idx->count; i++)
		free(idx->entries[i].pointer);
	free(idx->entries);
	free(idx);
}

static const struct json_pos_entry *index_find(const struct json_pos_index *idx,
					       const char *pointer)
{
	for (size_t i = 0; idx && i < idx->count; i++) {
		if (strcmp(idx->entries[i].pointer, pointer) == 0)
			return &idx->entries[i];
	}
	return NULL;
}

bool json_pos_value(const struct json_pos_index *idx, const char *pointer, struct json_pos *out)
{
	const struct json_pos_entry *e = index_find(idx, pointer);

	if (e)
		*out = e->value;
	return e != NULL;
}

bool json_pos_key(const struct json_pos_index *idx, const char *pointer, struct json_pos *out)
{
	const struct json_pos_entry *e = index_find(idx, pointer);

	if (e)
		*out = e->key;
	return e != NULL;
}

bool json_pointer_member(char *out, size_t outlen, const char *parent, const char *key)
{
	size_t n = strlen(parent);

	if (n + 2 > outlen)
		return false;
	memmove(out, parent, n);
	out[n++] = '/';
	for (const char *k = key; *k; k++) {
		const char *esc = *k == '~' ? "~0" : *k == '/' ? "~1" : NULL;
		size_t need = esc ? 2 : 1;
		if (n + need + 1 > outlen)
			return false;
		if (esc) {
			out[n++] = esc[0];
			out[n++] = esc[1];
		} else {
			out[n++] = *k;
		}
	}
	out[n] = '\0';
	return true;
}

bool json_pointer_index(char *out, size_t outlen, const char *parent, size_t index)
{
	int n = snprintf(out, outlen, "%s/%zu", parent, index);

	return n > 0 && (size_t)n < outlen;
}
