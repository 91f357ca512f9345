/* SPDX-License-Identifier: MIT */
/*
 * What SIGHUP may apply: gw_config_reloadable() on pairs of
 * configurations, with the exact messages for what needs a restart.
 */
#include "test_config_helpers.h"

#include <arpa/inet.h>

/* A route with room for one more key, set by the test. */
#define ROUTE_A(extra)                                                                             \
	"{'name': 'a', 'mode': 'forward', 'listen': 'tcp://0.0.0.0:2049',\n"                       \
	"   'upstream': 'rdma://192.0.2.1:20049'" extra "}"
#define ROUTE_B(extra)                                                                             \
	"{'name': 'b', 'mode': 'reverse', 'listen': 'rdma://0.0.0.0:20049',\n"                     \
	"   'upstream': 'tcp://192.0.2.1:2049'" extra "}"

struct outcome {
	bool ok;
	unsigned changes;
	char *messages;
};

/* Load both, compare, and keep what gw_config_reloadable() said. */
static struct outcome compare(const char *cur_sq, const char *next_sq)
{
	const struct gw_config *cur = load_ok(cur_sq);
	const struct gw_config *next = load_ok(next_sq);
	struct gw_conf_errors errs;
	struct outcome out;

	gw_conf_errors_init(&errs);
	out.changes = 0xdead;
	out.ok = gw_config_reloadable(cur, next, &out.changes, &errs);
	out.messages = errors_text(&errs);
	assert_int_equal(out.ok, errs.total == 0);
	gw_conf_errors_clear(&errs);
	gw_config_free(cur);
	gw_config_free(next);
	return out;
}

static void expect_live(const char *cur_sq, const char *next_sq, unsigned changes)
{
	struct outcome out = compare(cur_sq, next_sq);

	assert_string_equal(out.messages, "");
	assert_true(out.ok);
	assert_int_equal(out.changes, changes);
	free(out.messages);
}

static void expect_restart(const char *cur_sq, const char *next_sq, unsigned changes,
			   const char *messages)
{
	struct outcome out = compare(cur_sq, next_sq);

	assert_string_equal(out.messages, messages);
	assert_false(out.ok);
	assert_int_equal(out.changes, changes);
	free(out.messages);
}

/* expect_restart() with the one message "@what, @why". */
static void expect_restart_because(const char *cur_sq, const char *next_sq, unsigned changes,
				   const char *what, const char *why)
{
	char *want;

	assert_true(asprintf(&want, "%s, %s\n", what, why) > 0);
	expect_restart(cur_sq, next_sq, changes, want);
	free(want);
}

static void test_same_file(void **state)
{
	(void)state;
	expect_live("{'routes': [" ROUTE_A("") ", " ROUTE_B("") "]}",
		    "{'routes': [" ROUTE_A("") ", " ROUTE_B("") "]}", 0);
}

/* Routes are matched by name: a new order, or new comments, change nothing. */
static void test_reorder_and_comments(void **state)
{
	(void)state;
	expect_live(
		"{'routes': [" ROUTE_A("") ", " ROUTE_B("") "]}",
		"{'comment': 'new', 'routes': [" ROUTE_B(", 'comment': 'x'") ", " ROUTE_A("") "]}",
		0);
}

/* The same value written differently, or moved to "defaults", is no change. */
static void test_same_values_written_differently(void **state)
{
	(void)state;
	expect_live("{'routes': [" ROUTE_A(", 'credits': 64, 'connect_timeout_s': 10") "]}",
		    "{'defaults': {'credits': 64},\n"
		    " 'routes': [{'name': 'a', 'mode': 'forward', 'listen': 'tcp://0.0.0.0',\n"
		    "   'upstream': 'rdma://192.0.2.1', 'connect_timeout_s': 10.0}]}",
		    0);
	/* A name that resolves to the same address. */
	expect_live("{'routes': [{'name': 'a', 'mode': 'forward', 'listen': 'tcp://127.0.0.1',\n"
		    "   'upstream': 'rdma://192.0.2.1'}], 'stats': {'enabled': false}}",
		    "{'routes': [{'name': 'a', 'mode': 'forward', 'listen': 'tcp://localhost',\n"
		    "   'upstream': 'rdma://192.0.2.1'}], 'stats': {'enabled': false}}",
		    0);
}

static void test_live_changes(void **state)
{
	static const char cur[] = "{'routes': [" ROUTE_A("") "]}";

	(void)state;
	expect_live(cur, "{'logging': {'level': 'debug'}, 'routes': [" ROUTE_A("") "]}",
		    GW_CHANGE_LOGGING);
	expect_live(cur, "{'logging': {'destination': 'syslog'}, 'routes': [" ROUTE_A("") "]}",
		    GW_CHANGE_LOGGING);
	expect_live(cur, "{'routes': [" ROUTE_A(", 'allowed_clients': ['10.0.0.0/8']") "]}",
		    GW_CHANGE_CLIENTS);
	expect_live(cur, "{'routes': [" ROUTE_A(", 'max_chunk_segments': 8") "]}",
		    GW_CHANGE_LIMITS);
	expect_live(cur, "{'routes': [" ROUTE_A(", 'max_read_segments': 8") "]}", GW_CHANGE_LIMITS);
	expect_live(cur, "{'routes': [" ROUTE_A(", 'max_write_chunks': 8") "]}", GW_CHANGE_LIMITS);
	expect_live(cur, "{'routes': [" ROUTE_A(", 'max_rpcrdma_version': 2") "]}",
		    GW_CHANGE_LIMITS);
	expect_live(cur, "{'routes': [" ROUTE_A(", 'queue_limit': 8") "]}", GW_CHANGE_LIMITS);
	expect_live(cur, "{'routes': [" ROUTE_A(", 'connect_timeout_s': 8") "]}",
		    GW_CHANGE_TIMEOUTS);
	expect_live(cur, "{'routes': [" ROUTE_A(", 'idle_timeout_s': 8") "]}", GW_CHANGE_TIMEOUTS);
	expect_live(cur, "{'drain_timeout_s': 8, 'routes': [" ROUTE_A("") "]}", GW_CHANGE_TIMEOUTS);
	expect_live(cur, "{'max_sessions': 8, 'routes': [" ROUTE_A("") "]}", GW_CHANGE_LIMITS);
	expect_live(cur, "{'stats': {'max_connections': 8}, 'routes': [" ROUTE_A("") "]}",
		    GW_CHANGE_LIMITS);
	expect_live(cur, "{'routes': [" ROUTE_A(", 'max_sessions': 8") "]}", GW_CHANGE_LIMITS);
	expect_live(cur, "{'routes': [" ROUTE_A(", 'max_sessions_per_client': 8") "]}",
		    GW_CHANGE_LIMITS);
	expect_live(cur, "{'routes': [" ROUTE_A(", 'record_timeout_s': 8") "]}",
		    GW_CHANGE_TIMEOUTS);
	expect_live(cur, "{'routes': [" ROUTE_A(", 'source_port': 'any'") "]}",
		    GW_CHANGE_SOURCE_PORT);
	/* Several at once, through "defaults". */
	expect_live(cur,
		    "{'defaults': {'queue_limit': 1, 'allowed_clients': ['::/0']},\n"
		    " 'logging': {'level': 'error'}, 'routes': [" ROUTE_A("") "]}",
		    GW_CHANGE_LIMITS | GW_CHANGE_CLIENTS | GW_CHANGE_LOGGING);
}

/* Client networks: the same list is no change; another order or prefix is. */
static void test_client_list_changes(void **state)
{
	static const char cur[] =
		"{'routes': [" ROUTE_A(", 'allowed_clients': ['10.0.0.0/8', '::1']") "]}";

	(void)state;
	expect_live(cur, cur, 0);
	expect_live(cur, "{'routes': [" ROUTE_A(", 'allowed_clients': ['::1', '10.0.0.0/8']") "]}",
		    GW_CHANGE_CLIENTS);
	expect_live(cur, "{'routes': [" ROUTE_A(", 'allowed_clients': ['10.0.0.0/9', '::1']") "]}",
		    GW_CHANGE_CLIENTS);
	expect_live(cur, "{'routes': [" ROUTE_A(", 'allowed_clients': ['10.0.0.0/8']") "]}",
		    GW_CHANGE_CLIENTS);
}

static void test_rule_list_changes(void **state)
{
	const struct gw_config *cur, *next;
	struct gw_conf_errors errs;
	unsigned changes;
	char *path;

	(void)state;
	assert_true(asprintf(&path, "%s/conf/gw.json", GW_TEST_DATA_DIR) > 0);
	cur = load_ok_as(path, "{'routes': [" ROUTE_A(", 'ulb_rules': ['rules/nfs.json']") "]}");
	next = load_ok_as(path,
			  "{'routes': [" ROUTE_A(
				  ", 'ulb_rules': ['rules/nfs.json', 'rules/extra.json']") "]}");
	gw_conf_errors_init(&errs);
	assert_true(gw_config_reloadable(cur, next, &changes, &errs));
	assert_int_equal(changes, GW_CHANGE_ULB_RULES);
	assert_true(gw_config_reloadable(cur, cur, &changes, &errs));
	assert_int_equal(changes, 0);
	assert_int_equal(errs.total, 0);
	gw_config_free(cur);
	gw_config_free(next);
	free(path);
}

static void test_routes_added_and_removed(void **state)
{
	(void)state;
	expect_restart(
		"{'routes': [" ROUTE_A("") ", " ROUTE_B("") "]}",
		"{'routes': [\n"
		"  " ROUTE_A(
			"") ",\n"
			    "  {'name': 'c', 'mode': 'forward', 'listen': 'tcp://0.0.0.0:3049',\n"
			    "   'upstream': 'rdma://192.0.2.1'}]}",
		0,
		"gw.json:1:12: routes: route \"b\" was removed, which needs a restart\n"
		"gw.json:4:3: routes[1]: route \"c\" was added, which needs a restart\n");
}

static void test_mode_and_addresses(void **state)
{
	(void)state;
	expect_restart(
		"{'routes': [" ROUTE_A("") ", " ROUTE_B("") "]}",
		"{'routes': [" ROUTE_A(
			"") ",\n"
			    "  {'name': 'b', 'mode': 'forward', 'listen': 'tcp://0.0.0.0:2050',\n"
			    "   'upstream': 'rdma://192.0.2.1:20049'},\n"
			    "  {'name': 'a2', 'mode': 'forward', 'listen': 'tcp://0.0.0.0:3049',\n"
			    "   'upstream': 'rdma://192.0.2.1'}]}",
		0,
		"gw.json:3:25: routes[1].mode: changed from \"reverse\" to \"forward\", which "
		"needs a restart\n"
		"gw.json:3:46: routes[1].listen: changed from \"rdma://0.0.0.0:20049\" to "
		"\"tcp://0.0.0.0:2050\", which needs a restart\n"
		"gw.json:4:16: routes[1].upstream: changed from \"tcp://192.0.2.1:2049\" to "
		"\"rdma://192.0.2.1:20049\", which needs a restart\n"
		"gw.json:5:3: routes[2]: route \"a2\" was added, which needs a restart\n");
	/* The port alone, and the upstream alone. */
	expect_restart(
		"{'routes': [" ROUTE_A("") "]}",
		"{'routes': [{'name': 'a', 'mode': 'forward', 'listen': 'tcp://0.0.0.0:2050',\n"
		"   'upstream': 'rdma://192.0.2.2:20049'}]}",
		0,
		"gw.json:1:56: routes[0].listen: changed from \"tcp://0.0.0.0:2049\" to "
		"\"tcp://0.0.0.0:2050\", which needs a restart\n"
		"gw.json:2:16: routes[0].upstream: changed from \"rdma://192.0.2.1:20049\" to "
		"\"rdma://192.0.2.2:20049\", which needs a restart\n");
}

/*
 * Options that size registered memory or are agreed at connection set-up:
 * reported where the new file sets them (the route, "defaults"), or at
 * the route when they went back to the built-in default.
 */
static void test_options_that_need_a_restart(void **state)
{
	static const char why[] =
		"which needs a restart (it sizes registered memory and is exchanged when a "
		"connection is set up)";
	char *want;

	(void)state;
	assert_true(
		asprintf(&want,
			 "gw.json:1:13: routes[0].max_record_size: changed from 2097152 to "
			 "1052672, %s\n"
			 "gw.json:2:61: routes[0].inline_send_size: changed from 4096 to 8192, %s\n"
			 "gw.json:2:90: routes[0].inline_receive_size: changed from 4096 to 2048, "
			 "%s\n"
			 "gw.json:3:44: routes[0].backchannel_credits: changed from 16 to 2, %s\n",
			 why, why, why, why) > 0);
	expect_restart(
		"{'routes': [" ROUTE_A(", 'max_record_size': 2097152") "]}",
		"{'routes': [{'name': 'a', 'mode': 'forward', 'listen': 'tcp://0.0.0.0:2049',\n"
		"  'upstream': 'rdma://192.0.2.1:20049', 'inline_send_size': 8192, "
		"'inline_receive_size': 2048,\n"
		"  'queue_limit': 1, 'backchannel_credits': 2}]}",
		GW_CHANGE_LIMITS, want);
	free(want);

	/* Through "defaults": reported there, once for all the routes it changes. */
	expect_restart_because(
		"{'routes': [" ROUTE_A("") ", " ROUTE_B("") "]}",
		"{'defaults': {'credits': 128}, 'routes': [" ROUTE_A("") ", " ROUTE_B("") "]}", 0,
		"gw.json:1:26: defaults.credits: changed from 64 to 128", why);
}

static void test_stats_endpoint(void **state)
{
	(void)state;
	expect_restart("{'routes': [" ROUTE_A("") "]}",
		       "{'routes': [" ROUTE_A("") "],\n"
						  " 'stats': {'listen': '127.0.0.1:9465'}}",
		       0,
		       "gw.json:3:22: stats.listen: changed from \"127.0.0.1:9464\" to "
		       "\"127.0.0.1:9465\", which needs a restart\n");
	expect_restart("{'routes': [" ROUTE_A("") "]}",
		       "{'routes': [" ROUTE_A("") "],\n"
						  " 'stats': {'enabled': false}}",
		       0,
		       "gw.json:3:23: stats.enabled: changed from true to false, which needs a "
		       "restart\n");
	/* Where the new file has no "stats" at all: at the top. */
	expect_restart("{'routes': [" ROUTE_A("") "], 'stats': {'enabled': false}}",
		       "{'routes': [" ROUTE_A("") "]}", 0,
		       "gw.json:1:1: stats.enabled: changed from false to true, which needs a "
		       "restart\n");
	/* A disabled endpoint may move freely. */
	expect_live(
		"{'routes': [" ROUTE_A("") "], 'stats': {'enabled': false}}",
		"{'routes': [" ROUTE_A("") "], 'stats': {'enabled': false, 'listen': '[::1]:1'}}",
		0);
}

/*
 * The worker threads are set up at start: any other count, including
 * going to or from 0 ("auto"), needs a restart; the same count does not.
 */
static void test_workers(void **state)
{
	static const char why[] =
		"which needs a restart (each worker thread's event loop, listeners and sessions "
		"are set up at start)";

	(void)state;
	expect_live("{'workers': 4, 'routes': [" ROUTE_A("") "]}",
		    "{'routes': [" ROUTE_A("") "],\n 'workers': 4}", 0);
	expect_live("{'routes': [" ROUTE_A("") "]}", "{'workers': 0, 'routes': [" ROUTE_A("") "]}",
		    0);
	expect_restart_because("{'workers': 4, 'routes': [" ROUTE_A("") "]}",
			       "{'routes': [" ROUTE_A("") "],\n 'workers': 8}", 0,
			       "gw.json:3:13: workers: changed from 4 to 8", why);
	expect_restart_because("{'routes': [" ROUTE_A("") "]}",
			       "{'workers': 2, 'routes': [" ROUTE_A("") "]}", 0,
			       "gw.json:1:13: workers: changed from 0 to 2", why);
	/* Back to the default: at the top, since the new file has no "workers". */
	expect_restart_because("{'workers': 2, 'routes': [" ROUTE_A("") "]}",
			       "{'routes': [" ROUTE_A("") "]}", 0,
			       "gw.json:1:1: workers: changed from 2 to 0", why);
	/* With a live change beside it: refused as a whole, the live bits still told. */
	expect_restart_because("{'workers': 1, 'routes': [" ROUTE_A("") "]}",
			       "{'workers': 3, 'max_sessions': 8, 'routes': [" ROUTE_A("") "]}",
			       GW_CHANGE_LIMITS, "gw.json:1:13: workers: changed from 1 to 3", why);
}

/*
 * The same name resolving elsewhere on reload (DNS changed) is a change
 * of upstream. DNS cannot be changed from a test: the resolved address of
 * the new configuration is changed by hand instead.
 */
static void test_name_resolves_elsewhere(void **state)
{
	static const char text[] =
		"{'routes': [{'name': 'a', 'mode': 'reverse', 'listen': 'rdma://0.0.0.0',\n"
		"   'upstream': 'tcp://localhost:2049'}]}";
	const struct gw_config *cur = load_ok(text);
	const struct gw_config *next = load_ok(text);
	struct gw_route *r = &((struct gw_config *)next)->routes[0];
	struct sockaddr_in *sin = (struct sockaddr_in *)&r->upstream.addr;
	struct gw_conf_errors errs;
	unsigned changes;
	char *out;

	(void)state;
	memset(&r->upstream.addr, 0, sizeof(r->upstream.addr));
	sin->sin_family = AF_INET;
	sin->sin_port = htons(2049);
	sin->sin_addr.s_addr = htonl(0xc0000209); /* 192.0.2.9 */
	r->upstream.addrlen = sizeof(*sin);

	gw_conf_errors_init(&errs);
	assert_false(gw_config_reloadable(cur, next, &changes, &errs));
	out = errors_text(&errs);
	assert_true(
		strncmp(out,
			"gw.json:2:16: routes[0].upstream: \"tcp://localhost:2049\" now resolves "
			"to 192.0.2.9:2049 instead of ",
			strlen("gw.json:2:16: routes[0].upstream: \"tcp://localhost:2049\" now "
			       "resolves to 192.0.2.9:2049 instead of ")) == 0);
	assert_true(strstr(out, "127.0.0.1:2049, which needs a restart\n") ||
		    strstr(out, "[::1]:2049, which needs a restart\n"));
	free(out);
	gw_conf_errors_clear(&errs);
	gw_config_free(cur);
	gw_config_free(next);
}

/* Live changes are still reported when a restart is needed as well. */
static void test_live_and_restart_together(void **state)
{
	(void)state;
	expect_restart("{'routes': [" ROUTE_A("") "]}",
		       "{'logging': {'level': 'debug'},\n"
		       " 'routes': [" ROUTE_A(", 'credits': 1") "]}",
		       GW_CHANGE_LOGGING,
		       "gw.json:3:53: routes[0].credits: changed from 64 to 1, which needs a "
		       "restart (it sizes registered memory and is exchanged when a connection "
		       "is set up)\n");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_same_file),
		cmocka_unit_test(test_reorder_and_comments),
		cmocka_unit_test(test_same_values_written_differently),
		cmocka_unit_test(test_live_changes),
		cmocka_unit_test(test_client_list_changes),
		cmocka_unit_test(test_rule_list_changes),
		cmocka_unit_test(test_routes_added_and_removed),
		cmocka_unit_test(test_mode_and_addresses),
		cmocka_unit_test(test_options_that_need_a_restart),
		cmocka_unit_test(test_stats_endpoint),
		cmocka_unit_test(test_workers),
		cmocka_unit_test(test_name_resolves_elsewhere),
		cmocka_unit_test(test_live_and_restart_together),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
