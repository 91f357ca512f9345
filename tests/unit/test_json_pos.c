/* SPDX-License-Identifier: MIT */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "common/json_pos.h"

static const char doc[] = "{\n"
			  "  \"routes\": [\n"
			  "    { \"name\": \"nfs\", \"port\": 2049 },\n"
			  "    {\"a/b\": true, \"t~x\": [1, {\"k\": null}]}\n"
			  "  ],\n"
			  "  \"caf\xc3\xa9\": \"\xc3\xa9t\xc3\xa9\", \"s\": \"x\"\n"
			  "}\n";

/* The value (or, with @key, the member name) at @ptr is found at @line, @column. */
static void assert_pos(const struct json_pos_index *idx, const char *ptr, bool key, int line,
		       int column)
{
	struct json_pos p = { 0, 0 };
	bool found = key ? json_pos_key(idx, ptr, &p) : json_pos_value(idx, ptr, &p);
	assert_true(found);
	assert_int_equal(p.line, line);
	assert_int_equal(p.column, column);
}

static void test_values_and_keys(void **state)
{
	(void)state;
	struct json_pos_index *idx = json_pos_index_build(doc, strlen(doc));
	assert_non_null(idx);

	assert_pos(idx, "", false, 1, 1);
	assert_pos(idx, "/routes", true, 2, 3);
	assert_pos(idx, "/routes", false, 2, 13);
	assert_pos(idx, "/routes/0/name", false, 3, 15);
	assert_pos(idx, "/routes/0/port", true, 3, 22);
	/* RFC 6901 escapes: '/' is ~1 and '~' is ~0 */
	assert_pos(idx, "/routes/1/a~1b", false, 4, 13);
	assert_pos(idx, "/routes/1/t~0x/1/k", false, 4, 36);
	/* columns count characters, not UTF-8 bytes */
	assert_pos(idx, "/s", true, 6, 18);

	struct json_pos none;
	assert_false(json_pos_value(idx, "/routes/2", &none));
	assert_false(json_pos_value(idx, "/nosuch", &none));
	json_pos_index_free(idx);
}

static void test_malformed_is_refused(void **state)
{
	(void)state;
	const char *bad[] = { "{", "{\"a\" 1}", "[1,", "\"open", "{\"a\":}", "" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_null(json_pos_index_build(bad[i], strlen(bad[i])));
}

static void test_pointer_builders(void **state)
{
	(void)state;
	char buf[32];
	assert_true(json_pointer_member(buf, sizeof(buf), "/a", "b/c~d"));
	assert_string_equal(buf, "/a/b~1c~0d");
	assert_true(json_pointer_index(buf, sizeof(buf), "/routes", 12));
	assert_string_equal(buf, "/routes/12");
	assert_false(json_pointer_member(buf, 6, "/abc", "defg"));
	assert_false(json_pointer_index(buf, 4, "/abc", 1));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_values_and_keys),
		cmocka_unit_test(test_malformed_is_refused),
		cmocka_unit_test(test_pointer_builders),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
