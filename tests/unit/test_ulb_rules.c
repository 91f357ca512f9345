/* SPDX-License-Identifier: MIT */
/*
 * Rule files: the stock set loads; a user's file binds a new program
 * without recompiling; malformed files are refused with FILE:LINE:COL and
 * a reason.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "common/xdr.h"
#include "ulb-rules/rpc_msg.h"
#include "ulb-rules/ulb.h"

static char dir[64];

static int setup(void **state)
{
	snprintf(dir, sizeof(dir), "/tmp/test_ulb_rules.XXXXXX");
	return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state)
{
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	return system(cmd) == 0 ? 0 : -1;
}

static const char *write_rule(const char *name, const char *text)
{
	static char path[128];
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
	return path;
}

/* Load only @text as a user file (no stock rules); returns the error. */
static const char *load_error(const char *text)
{
	static char err[512];
	const char *path = write_rule("r.json", text);
	const char *files[] = { path };
	struct ulb_options o = { .stock_dir = "", .files = files, .n_files = 1 };
	struct ulb_rules *r = ulb_rules_load(&o, err, sizeof(err));
	if (r) {
		ulb_rules_free(r);
		return NULL;
	}
	/* the message starts with the file name */
	assert_memory_equal(err, path, strlen(path));
	return err + strlen(path);
}

static void test_stock_rules(void **state)
{
	char err[512];
	struct ulb_options o = { .stock_dir = GW_SOURCE_DIR "/ulb-rules" };
	struct ulb_rules *r = ulb_rules_load(&o, err, sizeof(err));
	if (!r)
		fail_msg("%s", err);
	/* nfs 2, 3, 4; mount 1, 3; nlm 1, 3, 4; nsm 1; nfsacl 2, 3; rpcbind 2, 3, 4 */
	assert_int_equal(ulb_rules_count(r), 14);
	ulb_rules_free(r);
	/* the default directory (uninstalled: the source tree) */
	r = ulb_rules_load(NULL, err, sizeof(err));
	assert_non_null(r);
	assert_int_equal(ulb_rules_count(r), 14);
	ulb_rules_free(r);
}

static const char user_rule[] =
	"{ \"ulb-rules\": 1,\n"
	"  \"types\": { \"key\": { \"type\": \"opaque\", \"max\": 16 } },\n"
	"  \"programs\": [ { \"program\": 400123, \"name\": \"blobstore\", \"versions\": [\n"
	"    { \"version\": 2, \"procedures\": [\n"
	"      { \"proc\": 1, \"name\": \"PUT\",\n"
	"        \"args\": [ \"key\", { \"type\": \"uhyper\" }, { \"type\": \"opaque\", \"ddp\": "
	"true } ],\n"
	"        \"results\": \"uint\" },\n"
	"      { \"proc\": 2, \"name\": \"GET\",\n"
	"        \"args\": [ \"key\", { \"type\": \"uint\", \"name\": \"want\" } ],\n"
	"        \"results\": { \"type\": \"union\", \"switch\": \"uint\",\n"
	"                     \"arms\": { \"0\": { \"type\": \"opaque\", \"ddp\": true, \"max\": "
	"\"want\" } },\n"
	"                     \"default\": \"void\" } } ] } ] } ] }\n";

static void test_user_program(void **state)
{
	char err[512];
	char first[128];
	snprintf(first, sizeof(first), "%s", write_rule("blob.json", user_rule));
	const char *files[] = { first };
	struct ulb_options o = { .stock_dir = GW_SOURCE_DIR "/ulb-rules",
				 .files = files,
				 .n_files = 1 };
	struct ulb_rules *r = ulb_rules_load(&o, err, sizeof(err));
	if (!r)
		fail_msg("%s", err);
	assert_int_equal(ulb_rules_count(r), 15);

	uint8_t m[128];
	uint32_t w[] = { 5, 0,		2, 400123, 2, 1,	  0,
			 0, 0,		0, /* header, AUTH_NONE */
			 3, 0x6b657900, 0, 9,	   6, 0x64617461, 0x21210000 };
	for (size_t i = 0; i < sizeof(w) / 4; i++)
		xdr_put32(m + 4 * i, w[i]);
	struct ulb_call c;
	assert_int_equal(ulb_parse_call(r, NULL, m, sizeof(w), &c), ULB_OK);
	assert_true(c.known);
	assert_int_equal(c.n_args, 1);
	assert_int_equal(c.args[0].offset, 60);
	assert_int_equal(c.args[0].length, 6);
	assert_memory_equal(m + 60, "data!!", 6);

	uint32_t g[] = { 6, 0, 2, 400123, 2, 2, 0, 0, 0, 0, 1, 0x6b000000, 512 };
	for (size_t i = 0; i < sizeof(g) / 4; i++)
		xdr_put32(m + 4 * i, g[i]);
	assert_int_equal(ulb_parse_call(r, NULL, m, sizeof(g), &c), ULB_OK);
	assert_int_equal(c.n_results, 1);
	assert_int_equal(c.result_max[0], 512);
	assert_true(c.reply_exact);
	assert_int_equal(c.reply_max, ULB_REPLY_HDR_MAX + 4 + 4 + 512);
	ulb_rules_free(r);

	/* the same program twice: refused, naming the first file */
	const char *twice[] = { files[0], write_rule("again.json", user_rule) };
	o.files = twice;
	o.n_files = 2;
	assert_null(ulb_rules_load(&o, err, sizeof(err)));
	assert_non_null(strstr(err, "again.json:4:18: program 400123 version 2 is already bound"));
	assert_non_null(strstr(err, "blob.json"));
}

static void test_syntax_error(void **state)
{
	const char *e = load_error("{ \"ulb-rules\": 1,\n  \"programs\": [ , ] }\n");
	assert_non_null(e);
	assert_memory_equal(e, ":2:17: ", 7);
}

struct bad {
	const char *text;
	const char *where_what;
};

static const struct bad bad_files[] = {
	{ "[]", ":1:1: a rule file is a JSON object" },
	{ "{ \"ulb-rules\": 2, \"programs\": [] }", ":1:16: format 2 is not known" },
	{ "{ \"ulb-rules\": 1, \"programs\": [], \"extra\": 1 }",
	  ":1:35: unknown member \"extra\"" },
	{ "{ \"ulb-rules\": 1, \"programs\": [ { \"program\": 7, \"versions\": [\n"
	  "  { \"version\": 1, \"procedures\": [ { \"proc\": 1, \"args\": \"nosuch\" } ] } ] } ] "
	  "}",
	  ":2:56: unknown type \"nosuch\"" },
	{ "{ \"ulb-rules\": 1, \"types\": { \"a\": [ \"b\" ], \"b\": [ \"a\" ] },\n"
	  "  \"programs\": [ { \"program\": 7, \"versions\": [\n"
	  "  { \"version\": 1, \"procedures\": [ { \"proc\": 1, \"args\": \"a\" } ] } ] } ] }",
	  ":1:51: type \"a\" contains itself" },
	{ "{ \"ulb-rules\": 1, \"programs\": [ { \"program\": 7, \"versions\": [\n"
	  "  { \"version\": 1, \"procedures\": [ { \"proc\": 1,\n"
	  "    \"args\": { \"type\": \"opaque\", \"max\": \"count\" } } ] } ] } ] }",
	  ":3:40: \"max\" names value \"count\", which no earlier field saves" },
	{ "{ \"ulb-rules\": 1, \"programs\": [ { \"program\": 7, \"versions\": [\n"
	  "  { \"version\": 1, \"procedures\": [ { \"proc\": 1,\n"
	  "    \"args\": { \"type\": \"array\", \"of\": { \"type\": \"opaque\", \"ddp\": true } } "
	  "} "
	  "] } ] } ] }",
	  ":3:38: a DDP item inside an array or list is not supported" },
	{ "{ \"ulb-rules\": 1, \"programs\": [ { \"program\": 7, \"versions\": [\n"
	  "  { \"version\": 1, \"procedures\": [ { \"proc\": 1,\n"
	  "    \"args\": { \"type\": \"union\", \"arms\": { \"one\": \"void\" } } } ] } ] } ] }",
	  ":3:42: arm \"one\": a discriminant must be a 32-bit integer" },
	{ "{ \"ulb-rules\": 1, \"programs\": [ { \"program\": 7, \"versions\": [\n"
	  "  { \"version\": 1, \"procedures\": [ { \"proc\": 1, \"args\": \"void\" },\n"
	  "                                   { \"proc\": 1, \"args\": \"void\" } ] } ] } ] }",
	  ":3:46: procedure 1 is bound twice" },
	{ "{ \"ulb-rules\": 1, \"programs\": [ { \"program\": 7, \"versions\": [\n"
	  "  { \"version\": 1, \"procedures\": [ { \"proc\": 1, \"args\": { \"type\": \"uint\", "
	  "\"mx\": 1 } } ] } ] } ] }",
	  ":2:74: unknown member \"mx\"" },
	{ "{ \"ulb-rules\": 1, \"programs\": [ { \"program\": 7, \"versions\": [\n"
	  "  { \"version\": 1, \"procedures\": [ { \"proc\": 1, \"reply_max\": [ 4, true ] } ] } ] "
	  "} ] }",
	  ":2:66: reply_max terms are byte counts or value names" },
	{ "{ \"ulb-rules\": 1, \"programs\": [ { \"program\": 7, \"versions\": [\n"
	  "  { \"version\": 4, \"procedures\": [ { \"proc\": 1 } ],\n"
	  "    \"compound\": { \"procedure\": 1, \"operations\": [ { \"op\": 3, \"args\": \"void\" "
	  "} "
	  "] } } ] } ] }",
	  ":3:51: an operation needs \"args\" and \"results\"" },
	{ "{ \"ulb-rules\": 1, \"programs\": [ { \"program\": 7, \"versions\": [\n"
	  "  { \"version\": 1, \"procedures\": [ { \"proc\": 4096 } ] } ] } ] }",
	  ":2:45: number larger than 1023" },
	{ "{ \"ulb-rules\": 1, \"programs\": [ { \"program\": -1, \"versions\": [] } ] }",
	  ":1:46: \"program\" must be an integer" },
	{ "{ \"ulb-rules\": 1, \"programs\": [ { \"program\": 7, \"versions\": [\n"
	  "  { \"version\": 1, \"procedures\": [ { \"proc\": 1,\n"
	  "    \"args\": { \"type\": \"array\", \"of\": \"void\" } } ] } ] } ] }",
	  ":3:38: array and list elements must not be empty" },
};

static void test_semantic_errors(void **state)
{
	for (size_t i = 0; i < sizeof(bad_files) / sizeof(bad_files[0]); i++) {
		const char *e = load_error(bad_files[i].text);
		if (!e)
			fail_msg("bad file %zu was accepted", i);
		if (!strstr(e, bad_files[i].where_what))
			fail_msg("bad file %zu: got \"%s\", want \"%s\"", i, e,
				 bad_files[i].where_what);
	}
}

static void test_missing_file(void **state)
{
	char err[256];
	const char *files[] = { "/nonexistent/rules.json" };
	struct ulb_options o = { .stock_dir = "", .files = files, .n_files = 1 };
	assert_null(ulb_rules_load(&o, err, sizeof(err)));
	assert_string_equal(err, "/nonexistent/rules.json: No such file or directory");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_stock_rules),  cmocka_unit_test(test_user_program),
		cmocka_unit_test(test_syntax_error), cmocka_unit_test(test_semantic_errors),
		cmocka_unit_test(test_missing_file),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
