/* SPDX-License-Identifier: MIT */
/*
 * conf/errors.c - error messages with positions: where a value is, how it
 * is named, how it is shown, and the bounded list the loader fills.
 */
#include "conf/conf_priv.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* ---- the error list ------------------------------------------------------ */

void gw_conf_errors_init(struct gw_conf_errors *errs)
{
	memset(errs, 0, sizeof(*errs));
}

void gw_conf_errors_clear(struct gw_conf_errors *errs)
{
	for (size_t i = 0; i < errs->count; i++)
		free(errs->list[i].text);
	gw_conf_errors_init(errs);
}

void gw_conf_errors_print(FILE *out, const struct gw_conf_errors *errs)
{
	for (size_t i = 0; i < errs->count; i++)
		fprintf(out, "%s\n", errs->list[i].text);
	if (errs->total > errs->count)
		fprintf(out, "%zu more error%s not shown\n", errs->total - errs->count,
			errs->total - errs->count == 1 ? "" : "s");
}

static bool pos_before(const struct gw_conf_error *a, const struct gw_conf_error *b)
{
	return a->line < b->line || (a->line == b->line && a->column < b->column);
}

/*
 * One error, one line, whatever the file held: control characters in a
 * key, or in the text of a syntax error, are shown as '?'.
 */
static void one_line(char *text)
{
	for (unsigned char *p = (unsigned char *)text; *p; p++) {
		if (*p < 0x20 || *p == 0x7f)
			*p = '?';
	}
}

/*
 * Take ownership of @text. The same message twice (a default that
 * several routes inherit) is kept once. Beyond the cap, and when memory
 * ran out formatting the message, the error is only counted.
 */
static void errors_add(struct gw_conf_errors *errs, int line, int column, char *text)
{
	if (text) {
		one_line(text);
		for (size_t i = 0; i < errs->count; i++) {
			if (strcmp(errs->list[i].text, text) == 0) {
				free(text);
				return;
			}
		}
	}
	struct gw_conf_error e = { line, column, text };

	errs->total++;
	if (!text)
		return;
	if (errs->count < GW_CONF_MAX_ERRORS) {
		errs->list[errs->count++] = e;
		return;
	}
	/*
	 * Full: keep the errors that come first in the file, as a compiler
	 * would show them, whatever order the loader found them in.
	 */
	size_t last = 0;
	for (size_t i = 1; i < errs->count; i++) {
		if (pos_before(&errs->list[last], &errs->list[i]))
			last = i;
	}
	if (pos_before(&e, &errs->list[last])) {
		free(errs->list[last].text);
		errs->list[last] = e;
	} else {
		free(text);
	}
}

/* Insertion sort: at most GW_CONF_MAX_ERRORS entries, and it is stable. */
void conf_errors_sort(struct gw_conf_errors *errs)
{
	for (size_t i = 1; i < errs->count; i++) {
		struct gw_conf_error e = errs->list[i];
		size_t j = i;
		while (j > 0 && pos_before(&e, &errs->list[j - 1])) {
			errs->list[j] = errs->list[j - 1];
			j--;
		}
		errs->list[j] = e;
	}
}

/* ---- where ------------------------------------------------------------- */

void conf_where_root(struct conf_where *w)
{
	w->ptr[0] = '\0';
	w->key[0] = '\0';
}

/*
 * A name too long for the buffer is cut; its pointer then stays the
 * parent's, which only makes the position that of the enclosing object.
 */
static void key_append(char *key, const char *text)
{
	size_t n = strlen(key);

	for (const char *p = text; *p && n + 1 < CONF_WHERE_MAX; p++)
		key[n++] = *p;
	key[n] = '\0';
}

void conf_where_member(struct conf_where *out, const struct conf_where *parent, const char *name)
{
	if (!json_pointer_member(out->ptr, sizeof(out->ptr), parent->ptr, name))
		memmove(out->ptr, parent->ptr, strlen(parent->ptr) + 1);
	memmove(out->key, parent->key, strlen(parent->key) + 1);
	if (out->key[0])
		key_append(out->key, ".");
	key_append(out->key, name);
}

void conf_where_index(struct conf_where *out, const struct conf_where *parent, size_t index)
{
	char sub[32];

	if (!json_pointer_index(out->ptr, sizeof(out->ptr), parent->ptr, index))
		memmove(out->ptr, parent->ptr, strlen(parent->ptr) + 1);
	memmove(out->key, parent->key, strlen(parent->key) + 1);
	snprintf(sub, sizeof(sub), "[%zu]", index);
	key_append(out->key, sub);
}

/* Drop the last reference token of a JSON Pointer: "/a/b" -> "/a". */
static void pointer_parent(char *ptr)
{
	char *slash = strrchr(ptr, '/');

	if (slash)
		*slash = '\0';
	else
		ptr[0] = '\0';
}

/* The position of @w, or of the closest enclosing value that is in the text. */
static struct json_pos where_pos(const struct conf_report *rep, const struct conf_where *w,
				 enum conf_at at)
{
	struct json_pos pos = { 1, 1 };
	char ptr[CONF_WHERE_MAX];
	bool found;

	if (!rep->idx)
		return pos;
	memcpy(ptr, w->ptr, sizeof(ptr));
	found = at == CONF_AT_KEY ? json_pos_key(rep->idx, ptr, &pos)
				  : json_pos_value(rep->idx, ptr, &pos);
	while (!found && ptr[0]) {
		pointer_parent(ptr);
		found = json_pos_value(rep->idx, ptr, &pos);
	}
	return pos;
}

bool conf_where_exists(const struct conf_report *rep, const struct conf_where *w)
{
	struct json_pos pos;

	return rep->idx && json_pos_value(rep->idx, w->ptr, &pos);
}

int conf_where_line(const struct conf_report *rep, const struct conf_where *w)
{
	return where_pos(rep, w, CONF_AT_VALUE).line;
}

/* ---- reporting ----------------------------------------------------------- */

static char *vformat(const char *fmt, va_list ap) __attribute__((format(printf, 1, 0)));
static char *vformat(const char *fmt, va_list ap)
{
	char *text = NULL;

	if (vasprintf(&text, fmt, ap) < 0)
		return NULL;
	return text;
}

static char *format(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static char *format(const char *fmt, ...)
{
	va_list ap;
	char *text;

	va_start(ap, fmt);
	text = vformat(fmt, ap);
	va_end(ap);
	return text;
}

/*
 * Finding a position is a search of the index: a generated file with
 * errors by the hundred thousand would make --check crawl. Past this many
 * errors, further ones are only counted.
 */
enum { ERRORS_LOCATED_MAX = 1000 };

void conf_vfail(const struct conf_report *rep, const struct conf_where *w, enum conf_at at,
		const char *fmt, va_list ap)
{
	struct json_pos pos;
	char *msg, *text = NULL;

	if (rep->errs->total >= ERRORS_LOCATED_MAX) {
		rep->errs->total++;
		return;
	}
	pos = where_pos(rep, w, at);
	msg = vformat(fmt, ap);

	if (msg && w->key[0])
		text = format("%s:%d:%d: %s: %s", rep->path, pos.line, pos.column, w->key, msg);
	else if (msg)
		text = format("%s:%d:%d: %s", rep->path, pos.line, pos.column, msg);
	free(msg);
	errors_add(rep->errs, pos.line, pos.column, text);
}

void conf_fail(const struct conf_report *rep, const struct conf_where *w, enum conf_at at,
	       const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	conf_vfail(rep, w, at, fmt, ap);
	va_end(ap);
}

void conf_fail_at(struct gw_conf_errors *errs, const char *path, int line, int column,
		  const char *fmt, ...)
{
	va_list ap;
	char *msg, *text = NULL;

	va_start(ap, fmt);
	msg = vformat(fmt, ap);
	va_end(ap);
	if (msg && line > 0)
		text = format("%s:%d:%d: %s", path, line, column, msg);
	else if (msg)
		text = format("%s: %s", path, msg);
	free(msg);
	errors_add(errs, line, column, text);
}

/* ---- showing values ------------------------------------------------------ */

enum { DESCRIBE_MAX = 64 };

/* Cut @s to at most @max bytes plus "...", never inside a UTF-8 sequence. */
static void shorten(char *s, size_t max)
{
	size_t n = strlen(s);

	if (n <= max)
		return;
	while (max > 0 && ((unsigned char)s[max] & 0xc0) == 0x80)
		max--;
	memcpy(s + max, "...", 4);
}

void conf_describe(const json_t *v, char *buf, size_t len)
{
	char *dump;

	if (json_is_object(v)) {
		snprintf(buf, len, json_object_size(v) ? "an object" : "an empty object");
		return;
	}
	if (json_is_array(v)) {
		snprintf(buf, len, json_array_size(v) ? "an array" : "an empty array");
		return;
	}
	/*
	 * Strings come back quoted and escaped, so a newline cannot split the
	 * line; reals with 15 digits, so 0.09 is not shown as 0.0899...97.
	 */
	dump = json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT | JSON_REAL_PRECISION(15));
	if (!dump) {
		snprintf(buf, len, "a value");
		return;
	}
	if (json_is_string(v) && strlen(dump) > DESCRIBE_MAX) {
		shorten(dump, DESCRIBE_MAX - 4);
		snprintf(buf, len, "%s\"", dump);
	} else {
		snprintf(buf, len, "%s", dump);
	}
	free(dump);
}

/* ---- did you mean -------------------------------------------------------- */

enum { SUGGEST_MAX_LEN = 48 };

static int lower(int c)
{
	return c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c;
}

static size_t min3(size_t a, size_t b, size_t c)
{
	size_t m = a < b ? a : b;

	return m < c ? m : c;
}

/*
 * Edit distance where inserting, deleting or replacing a character, or
 * swapping two neighbours, costs one, and case does not count: the usual
 * typos ("upstraem", "Listen", "credit").
 */
static size_t typo_distance(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b);
	size_t d[SUGGEST_MAX_LEN + 1][SUGGEST_MAX_LEN + 1];

	for (size_t i = 0; i <= la; i++)
		d[i][0] = i;
	for (size_t j = 0; j <= lb; j++)
		d[0][j] = j;
	for (size_t i = 1; i <= la; i++) {
		for (size_t j = 1; j <= lb; j++) {
			size_t cost = lower(a[i - 1]) != lower(b[j - 1]);
			d[i][j] = min3(d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost);
			if (i > 1 && j > 1 && lower(a[i - 1]) == lower(b[j - 2]) &&
			    lower(a[i - 2]) == lower(b[j - 1]) && d[i - 2][j - 2] + 1 < d[i][j])
				d[i][j] = d[i - 2][j - 2] + 1;
		}
	}
	return d[la][lb];
}

const char *conf_suggest(const char *word, const char *const *known, size_t n)
{
	size_t len = strlen(word);
	/* Short words need a closer match, or everything suggests everything. */
	size_t limit = len <= 4 ? 1 : len <= 10 ? 2 : 3;
	const char *best = NULL;
	size_t best_d = limit + 1;

	if (len > SUGGEST_MAX_LEN)
		return NULL;
	for (size_t i = 0; i < n; i++) {
		if (strlen(known[i]) > SUGGEST_MAX_LEN)
			continue;
		/* An abbreviation ("warn", "recv") is as good as a typo. */
		if (len >= 3 && strncasecmp(word, known[i], len) == 0)
			return known[i];
		size_t d = typo_distance(word, known[i]);
		if (d < best_d) {
			best = known[i];
			best_d = d;
		}
	}
	return best;
}

/* ---- enumerations -------------------------------------------------------- */

void conf_format_choices(const char *const *names, size_t n, char *buf, size_t len)
{
	size_t used = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < n && used < len; i++) {
		const char *sep = i == 0 ? "" : i + 1 == n ? " or " : ", ";
		int k = snprintf(buf + used, len - used, "%s\"%s\"", sep, names[i]);
		if (k < 0)
			break;
		used += (size_t)k;
	}
}

bool conf_load_enum(const struct conf_report *rep, const struct conf_where *w, const json_t *v,
		    const char *const *names, size_t n, unsigned *out)
{
	const char *s = json_string_value(v);
	const char *hint;
	char choices[160], got[96];

	for (size_t i = 0; s && i < n; i++) {
		if (strcmp(s, names[i]) == 0) {
			*out = (unsigned)i;
			return true;
		}
	}
	conf_format_choices(names, n, choices, sizeof(choices));
	conf_describe(v, got, sizeof(got));
	hint = s ? conf_suggest(s, names, n) : NULL;
	if (hint)
		conf_fail(rep, w, CONF_AT_VALUE, "expected %s, got %s; did you mean \"%s\"?",
			  choices, got, hint);
	else
		conf_fail(rep, w, CONF_AT_VALUE, "expected %s, got %s", choices, got);
	return false;
}
