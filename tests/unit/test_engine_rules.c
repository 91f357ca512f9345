/* SPDX-License-Identifier: MIT */
/*
 * The rule files a configuration names are loaded by --check and by a
 * reload before anything changes (gw_engine_check_rules()), and a rule set
 * lives as long as the sessions that parsed calls with it (ulb_rules_ref()).
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "conf/config.h"
#include "gateway/core/engine.h"
#include "ulb-rules/ulb.h"

static char dir[64];

static int setup(void **state)
{
	snprintf(dir, sizeof(dir), "/tmp/test_engine_rules.XXXXXX");
	return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	return system(cmd) == 0 ? 0 : -1;
}

static void write_file(const char *name, const char *text)
{
	char path[128];

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

/* A configuration of one forward route whose ulb_rules is @rules (a JSON list). */
static const struct gw_config *load_with_rules(const char *rules)
{
	char cfg[1024], path[128];
	struct gw_conf_errors errs;

	snprintf(cfg, sizeof(cfg),
		 "{ \"routes\": [ { \"name\": \"r1\", \"mode\": \"forward\",\n"
		 "  \"listen\": \"tcp://127.0.0.1:2049\", \"upstream\": "
		 "\"rdma://192.0.2.1:20049\",\n"
		 "  \"ulb_rules\": %s } ] }\n",
		 rules);
	write_file("gw.json", cfg);
	snprintf(path, sizeof(path), "%s/gw.json", dir);
	gw_conf_errors_init(&errs);
	const struct gw_config *c = gw_config_load(path, &errs);
	assert_int_equal(errs.total, 0);
	gw_conf_errors_clear(&errs);
	assert_non_null(c);
	return c;
}

static void test_good_rule_files(void **state)
{
	char err[768] = "";
	const struct gw_config *c =
		load_with_rules("[\"" GW_TEST_DATA_DIR "/conf/rules/nfs.json\", \"" GW_TEST_DATA_DIR
				"/conf/rules/extra.json\"]");

	assert_int_equal(gw_engine_check_rules(c, err, sizeof(err)), 0);
	gw_config_free(c);
}

/* A file that does not parse: the route, the key, then the file's own position. */
static void test_broken_rule_file(void **state)
{
	char err[768] = "", want[256];

	write_file("bad.json", "{ \"ulb-rules\": 1,\n  \"programs\": [ oops ] }\n");
	const struct gw_config *c = load_with_rules("[\"bad.json\"]");
	assert_int_equal(gw_engine_check_rules(c, err, sizeof(err)), -EINVAL);
	snprintf(want, sizeof(want), "route r1: ulb_rules: %s/bad.json:2:", dir);
	if (strncmp(err, want, strlen(want)) != 0)
		fail_msg("got \"%s\", want it to start with \"%s\"", err, want);
	gw_config_free(c);
}

/* A file that parses but binds a program the stock rules bind already. */
static void test_rule_file_binding_nfs_again(void **state)
{
	char err[768] = "";

	write_file("nfs3.json",
		   "{ \"ulb-rules\": 1, \"programs\": [ { \"program\": 100003,\n"
		   "  \"versions\": [ { \"version\": 3, \"procedures\": [\n"
		   "    { \"proc\": 0, \"args\": \"void\", \"results\": \"void\" } ] } ] } "
		   "] }\n");
	const struct gw_config *c = load_with_rules("[\"nfs3.json\"]");
	assert_int_equal(gw_engine_check_rules(c, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "nfs3.json:"));
	gw_config_free(c);
}

/* The set outlives the reference the route had while a session holds one. */
static void test_rules_shared_by_reference(void **state)
{
	char err[512];
	struct ulb_options o = { .stock_dir = GW_SOURCE_DIR "/ulb-rules" };
	struct ulb_rules *route = ulb_rules_load(&o, err, sizeof(err));

	assert_non_null(route);
	struct ulb_rules *session = ulb_rules_ref(route);
	assert_ptr_equal(session, route);
	ulb_rules_free(route); /* the route takes a new set on reload */
	/* the session's calls still parse with it (ASan would see a use after free) */
	assert_int_equal(ulb_rules_count(session), 14);
	static const uint8_t null3[] = { 0,    0,    0, 1, 0, 0, 0, 0, 0, 0, 0, 2, 0, 1,
					 0x86, 0xa3, 0, 0, 0, 3, 0, 0, 0, 0, 0, 0, 0, 0,
					 0,    0,    0, 0, 0, 0, 0, 0, 0, 0, 0, 0 };
	struct ulb_call call;
	assert_int_equal(ulb_parse_call(session, NULL, null3, sizeof(null3), &call), ULB_OK);
	assert_true(call.known);
	ulb_rules_free(session); /* the last reference: freed (LeakSanitizer checks) */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_good_rule_files),
		cmocka_unit_test(test_broken_rule_file),
		cmocka_unit_test(test_rule_file_binding_nfs_again),
		cmocka_unit_test(test_rules_shared_by_reference),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
