/* SPDX-License-Identifier: MIT */
/*
 * Configurations that are wrong: each test checks the exact messages,
 * with file, line, column and key.
 */
#include "test_config_helpers.h"

#include <netdb.h>

/* The message for the issue's example, at the issue's position. */
static void test_issue_example(void **state)
{
	(void)state;
	expect_errors("{\n"
		      "  'routes': [\n"
		      "    { 'name': 'nfs', 'mode': 'forward', 'listen': 'tcp://0.0.0.0:2049',\n"
		      "      'upstream': 'rdma://192.0.2.1:20049' },\n"
		      "    { 'name': 'back',\n"
		      "      'mode': 'reverse',\n"
		      "       'listen': 'tcp://0.0.0.0:2049',\n"
		      "      'upstream': 'tcp://192.0.2.1:2049' } ]\n"
		      "}\n",
		      "gw.json:7:18: routes[1].listen: expected \"rdma://HOST:PORT\" for a reverse "
		      "route, got \"tcp://0.0.0.0:2049\"\n");
}

/* ---- syntax: jansson's message and position ----------------------------- */

static void test_syntax_errors(void **state)
{
	(void)state;
	expect_errors("{'routes': [1,}",
		      "gw.json:1:15: JSON syntax error: unexpected token near '}'\n");
	expect_errors("{\n  'routes': [\n    {'name': 'a',}\n  ]\n}\n",
		      "gw.json:3:18: JSON syntax error: string or '}' expected near '}'\n");
	expect_errors("", "gw.json:1:1: JSON syntax error: '[' or '{' expected near end of file\n");
	expect_errors("{'routes': []} x",
		      "gw.json:1:16: JSON syntax error: end of file expected near 'x'\n");
	expect_errors("{'routes': [{'mode': tru}]}",
		      "gw.json:1:24: JSON syntax error: invalid token near 'tru'\n");
	/* Duplicate keys are refused by jansson, not silently the last one wins. */
	expect_errors("{'routes': [],\n 'routes': []}",
		      "gw.json:2:9: JSON syntax error: duplicate object key near '\"routes\"'\n");
}

/* A byte order mark is skipped, and not counted as a column. */
static void test_byte_order_mark(void **state)
{
	(void)state;
	expect_errors("\xef\xbb\xbf{'routes': 1}",
		      "gw.json:1:12: routes: expected a non-empty array of routes, got 1\n");
	gw_config_free(load_ok("\xef\xbb\xbf{'routes': [" ROUTE_FWD "]}"));
}

/* Whatever jansson quotes from the file, an error stays on one line. */
static void test_syntax_error_text_on_one_line(void **state)
{
	struct gw_conf_errors errs;

	(void)state;
	assert_null(parse_as("gw.json", "{'routes': [\x01]}", &errs));
	assert_int_equal(errs.count, 1);
	assert_null(strpbrk(errs.list[0].text, "\x01\n"));
	gw_conf_errors_clear(&errs);
}

/* ---- the document's shape ----------------------------------------------- */

static void test_document_shape(void **state)
{
	(void)state;
	expect_errors("[1]", "gw.json:1:1: expected an object with a \"routes\" array, got an "
			     "array\n");
	expect_errors("{}", "gw.json:1:1: routes: required key is missing; expected an array of "
			    "routes\n");
	expect_errors("{'routes': []}",
		      "gw.json:1:12: routes: expected a non-empty array of routes, got an empty "
		      "array\n");
	expect_errors("{'routes': {'name': 'a'}}",
		      "gw.json:1:12: routes: expected a non-empty array of routes, got an "
		      "object\n");
	expect_errors("{'routes': [" ROUTE_FWD ", 'rev']}",
		      "gw.json:1:119: routes[1]: expected a route object with \"name\", \"mode\", "
		      "\"listen\" and \"upstream\", got \"rev\"\n");
	expect_errors("{'routes': [" ROUTE_FWD "], 'logging': 'debug', 'stats': [],\n"
		      " 'defaults': 4}",
		      "gw.json:1:131: logging: expected an object, got \"debug\"\n"
		      "gw.json:1:149: stats: expected an object, got an empty array\n"
		      "gw.json:2:14: defaults: expected an object, got 4\n");
}

/* A route without its four required keys, with an unknown mode and with a known one. */
static void test_missing_route_keys(void **state)
{
	(void)state;
	expect_errors("{'routes': [\n  {}]}",
		      "gw.json:2:3: routes[0].name: required key is missing; expected a name of "
		      "1..32 letters, digits, '.', '_' or '-', starting with a letter or digit\n"
		      "gw.json:2:3: routes[0].mode: required key is missing; expected \"forward\" "
		      "or \"reverse\"\n"
		      "gw.json:2:3: routes[0].listen: required key is missing; expected "
		      "\"tcp://HOST:PORT\" or \"rdma://HOST:PORT\"\n"
		      "gw.json:2:3: routes[0].upstream: required key is missing; expected "
		      "\"tcp://HOST:PORT\" or \"rdma://HOST:PORT\"\n");
	expect_errors("{'routes': [\n  {'name': 'r', 'mode': 'reverse'}]}",
		      "gw.json:2:3: routes[0].listen: required key is missing; expected "
		      "\"rdma://HOST:PORT\" for a reverse route\n"
		      "gw.json:2:3: routes[0].upstream: required key is missing; expected "
		      "\"tcp://HOST:PORT\" for a reverse route\n");
}

static void test_route_name_and_mode(void **state)
{
	static const struct {
		const char *value;
		const char *got;
	} bad_names[] = {
		{ "''", "\"\"" },
		{ "'a b'", "\"a b\"" },
		{ "'-x'", "\"-x\"" },
		{ "'abcdefghijklmnopqrstuvwxyz0123456'", "\"abcdefghijklmnopqrstuvwxyz0123456\"" },
		{ "'caf\xc3\xa9'", "\"caf\xc3\xa9\"" },
		{ "5", "5" },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(bad_names) / sizeof(bad_names[0]); i++) {
		char *text, *want;
		assert_true(asprintf(&text,
				     "{'routes': [{'mode': 'forward', 'listen': 'tcp://0.0.0.0', "
				     "'upstream': 'rdma://192.0.2.1',\n  'name': %s}]}",
				     bad_names[i].value) > 0);
		assert_true(asprintf(&want,
				     "gw.json:2:11: routes[0].name: expected a name of 1..32 "
				     "letters, digits, '.', '_' or '-', starting with a letter or "
				     "digit, got %s\n",
				     bad_names[i].got) > 0);
		expect_errors(text, want);
		free(text);
		free(want);
	}
	/* The longest name is 32 characters. */
	const struct gw_config *cfg = load_ok(
		"{'routes': [{'mode': 'forward', 'listen': 'tcp://0.0.0.0', "
		"'upstream': 'rdma://192.0.2.1', 'name': 'abcdefghijklmnopqrstuvwxyz012345'}]}");
	gw_config_free(cfg);

	/* With the mode wrong, addresses are checked for either scheme. */
	expect_errors("{'routes': [{'name': 'a', 'mode': 'Forward', 'listen': 'rdma://0.0.0.0',\n"
		      "  'upstream': 'udp://192.0.2.1'}]}",
		      "gw.json:1:35: routes[0].mode: expected \"forward\" or \"reverse\", got "
		      "\"Forward\"; did you mean \"forward\"?\n"
		      "gw.json:2:15: routes[0].upstream: expected \"tcp://HOST:PORT\" or "
		      "\"rdma://HOST:PORT\", got \"udp://192.0.2.1\"\n");
	expect_errors("{'routes': [{'name': 'a', 'mode': 1, 'listen': 'rdma://0.0.0.0',\n"
		      "  'upstream': 'tcp://192.0.2.1'}]}",
		      "gw.json:1:35: routes[0].mode: expected \"forward\" or \"reverse\", got 1\n");
}

static void test_duplicate_route_names(void **state)
{
	(void)state;
	expect_errors("{'routes': [\n"
		      "  {'name': 'nfs', 'mode': 'forward', 'listen': 'tcp://0.0.0.0:1',\n"
		      "   'upstream': 'rdma://192.0.2.1'},\n"
		      "  {'name': 'other', 'mode': 'forward', 'listen': 'tcp://0.0.0.0:2',\n"
		      "   'upstream': 'rdma://192.0.2.1'},\n"
		      "  {'name': 'nfs', 'mode': 'forward', 'listen': 'tcp://0.0.0.0:3',\n"
		      "   'upstream': 'rdma://192.0.2.1'},\n"
		      "  {'name': 'nfs', 'mode': 'forward', 'listen': 'tcp://0.0.0.0:4',\n"
		      "   'upstream': 'rdma://192.0.2.1'}]}",
		      "gw.json:6:12: routes[2].name: expected a unique route name, got \"nfs\", "
		      "already the name of routes[0] (line 2)\n"
		      "gw.json:8:12: routes[3].name: expected a unique route name, got \"nfs\", "
		      "already the name of routes[0] (line 2)\n");
}

/* ---- unknown keys --------------------------------------------------------- */

static void test_unknown_keys(void **state)
{
	(void)state;
	/* Misspellings, with the closest key. */
	expect_errors(
		"{'route': [],\n"
		" 'routes': [{'name': 'a', 'mode': 'forward', 'listen': 'tcp://0.0.0.0',\n"
		"             'upstraem': 'rdma://192.0.2.1', 'upstream': 'rdma://192.0.2.1',\n"
		"             'Listen': 1, 'credit': 2, 'inline_recv_size': 4096}],\n"
		" 'stats': {'enable': false}, 'defaults': {'queue_limt': 1}}",
		"gw.json:1:2: route: unknown key; did you mean \"routes\"?\n"
		"gw.json:3:14: routes[0].upstraem: unknown key; did you mean \"upstream\"?\n"
		"gw.json:4:14: routes[0].Listen: unknown key; did you mean \"listen\"?\n"
		"gw.json:4:27: routes[0].credit: unknown key; did you mean \"credits\"?\n"
		"gw.json:4:40: routes[0].inline_recv_size: unknown key; did you mean "
		"\"inline_send_size\"?\n"
		"gw.json:5:12: stats.enable: unknown key; did you mean \"enabled\"?\n"
		"gw.json:5:43: defaults.queue_limt: unknown key; did you mean "
		"\"queue_limit\"?\n");
	/* Right keys in the wrong object. */
	expect_errors(
		"{'credits': 1, 'listen': 'x', 'level': 'info',\n"
		" 'defaults': {'name': 'x', 'stats': {}},\n"
		" 'routes': [{'name': 'a', 'mode': 'forward', 'listen': 'tcp://0.0.0.0',\n"
		"             'upstream': 'rdma://192.0.2.1', 'logging': {}}]}",
		"gw.json:1:2: credits: unknown key here; it is a route key: set it in "
		"\"defaults\" or in a route\n"
		"gw.json:1:16: listen: unknown key here; it is a route key: set it in each "
		"route\n"
		"gw.json:1:31: level: unknown key here; it belongs in \"logging\"\n"
		"gw.json:2:15: defaults.name: unknown key here; it cannot have a default: set "
		"it in each route\n"
		"gw.json:2:28: defaults.stats: unknown key here; it is a top-level key\n"
		"gw.json:4:46: routes[0].logging: unknown key here; it is a top-level key\n");
	/* Nothing close: small objects list their keys, large ones point to the docs. */
	expect_errors("{'zzz': 1, 'logging': {'lvl': 'info'}, 'stats': {'port': 1},\n"
		      " 'routes': [{'name': 'a', 'mode': 'forward', 'listen': 'tcp://0.0.0.0',\n"
		      "             'upstream': 'rdma://192.0.2.1', 'weight': 3}]}",
		      "gw.json:1:2: zzz: unknown key; expected \"routes\", \"defaults\", "
		      "\"logging\", \"stats\", \"drain_timeout_s\", \"drain_delay_s\", "
		      "\"max_sessions\", \"workers\", \"qos_classes\" "
		      "or \"comment\"\n"
		      "gw.json:1:24: logging.lvl: unknown key; expected \"level\", \"destination\" "
		      "or \"comment\"\n"
		      "gw.json:1:50: stats.port: unknown key; expected \"enabled\", \"listen\", "
		      "\"max_connections\" or \"comment\"\n"
		      "gw.json:3:46: routes[0].weight: unknown key; the keys are listed in "
		      "docs/configuration.md\n");
}

/* A key from the file is shown on one line, whatever it holds. */
static void test_unknown_key_with_control_characters(void **state)
{
	(void)state;
	expect_errors("{'routes': [" ROUTE_FWD "], 'a\\nb\\u0001': 1}",
		      "gw.json:1:120: a?b?: unknown key; expected \"routes\", \"defaults\", "
		      "\"logging\", \"stats\", \"drain_timeout_s\", \"drain_delay_s\", "
		      "\"max_sessions\", \"workers\", \"qos_classes\" "
		      "or \"comment\"\n");
}

/* Keys with the characters JSON Pointers escape are still found in the text. */
static void test_unknown_key_with_pointer_characters(void **state)
{
	(void)state;
	expect_errors("{'routes': [" ROUTE_FWD "],\n 'defaults': {'a/b~c': 1}}",
		      "gw.json:2:15: defaults.a/b~c: unknown key; the keys are listed in "
		      "docs/configuration.md\n");
}

/*
 * Beyond a thousand errors, the rest are counted without being located,
 * so they cannot displace earlier ones: here the route's unknown key, on
 * line 1 but found after the 3000 top-level ones, is not shown.
 */
static void test_very_many_errors(void **state)
{
	size_t n = 3000, len = 0;
	char *text = malloc(n * 16 + 64);
	struct gw_conf_errors errs;

	(void)state;
	assert_non_null(text);
	len += (size_t)sprintf(text, "{'routes': [{'name': 'a', 'mode': 'forward', 'listen': "
				     "'tcp://0.0.0.0', 'upstream': 'rdma://192.0.2.1', 'zz': 1}]");
	for (size_t i = 0; i < n; i++)
		len += (size_t)sprintf(text + len, ",\n'k%zu': 0", i);
	strcpy(text + len, "}");
	assert_null(parse_as("gw.json", text, &errs));
	assert_int_equal(errs.total, n + 1);
	assert_int_equal(errs.count, GW_CONF_MAX_ERRORS);
	assert_int_equal(errs.list[0].line, 2);
	assert_int_equal(errs.list[GW_CONF_MAX_ERRORS - 1].line, GW_CONF_MAX_ERRORS + 1);
	gw_conf_errors_clear(&errs);
	free(text);
}

static void test_comment_must_be_a_string(void **state)
{
	(void)state;
	expect_errors("{'comment': ['a'], 'routes': [" ROUTE_FWD "]}",
		      "gw.json:1:13: comment: expected a string, got an array\n");
}

/* ---- route options: every key, wrong type and out of range ---------------- */

static const char route_prefix[] = "{'routes': [{'name': 'a', 'mode': 'forward', 'listen': "
				   "'tcp://0.0.0.0', 'upstream': 'rdma://192.0.2.1', ";
static const char defaults_prefix[] = "{'defaults': {";

/*
 * Set @key to @value in a route, then in "defaults"; both must give
 * @message, at the value's column (counted here from the text).
 */
static void check_option(const char *key, const char *value, const char *message)
{
	char *text, *want;
	int column;

	column = (int)(strlen(route_prefix) + strlen(key) + 5);
	assert_true(asprintf(&text, "%s'%s': %s}]}", route_prefix, key, value) > 0);
	assert_true(asprintf(&want, "gw.json:1:%d: routes[0].%s: %s\n", column, key, message) > 0);
	expect_errors(text, want);
	free(text);
	free(want);

	column = (int)(strlen(defaults_prefix) + strlen(key) + 5);
	assert_true(asprintf(&text, "%s'%s': %s}, 'routes': [" ROUTE_FWD "]}", defaults_prefix, key,
			     value) > 0);
	assert_true(asprintf(&want, "gw.json:1:%d: defaults.%s: %s\n", column, key, message) > 0);
	expect_errors(text, want);
	free(text);
	free(want);
}

static void test_inline_sizes(void **state)
{
	static const char *const keys[] = { "inline_send_size", "inline_receive_size" };
	static const char expect[] = "expected an integer 1024..262144, a multiple of 1024, got ";
	static const char *const values[] = { "1023", "262145", "5000", "0",	  "-4096", "4096.0",
					      "'4k'", "true",	"null", "[4096]", "{}" };
	static const char *const shown[] = { "1023",  "262145",	  "5000",	    "0",
					     "-4096", "4096.0",	  "\"4k\"",	    "true",
					     "null",  "an array", "an empty object" };

	(void)state;
	for (size_t k = 0; k < 2; k++) {
		for (size_t i = 0; i < sizeof(values) / sizeof(values[0]); i++) {
			char msg[160];
			snprintf(msg, sizeof(msg), "%s%s", expect, shown[i]);
			check_option(keys[k], values[i], msg);
		}
	}
}

static void test_integer_ranges(void **state)
{
	static const struct {
		const char *key;
		const char *range;
		const char *below, *above;
	} cases[] = {
		{ "credits", "1..1024", "0", "1025" },
		{ "backchannel_credits", "1..256", "0", "257" },
		{ "max_record_size", "4096..16777216", "4095", "16777217" },
		{ "max_chunk_segments", "1..256", "0", "257" },
		{ "max_read_segments", "1..1024", "0", "1025" },
		{ "max_write_chunks", "1..64", "0", "65" },
		{ "queue_limit", "0..4096", "-1", "4097" },
		{ "reply_size_estimate", "4096..16777216", "4095", "16777217" },
		{ "max_sessions", "1..65536", "0", "65537" },
		{ "max_sessions_per_client", "1..65536", "0", "65537" },
		{ "max_session_memory", "2097152..1073741824", "2097151", "1073741825" },
		{ "max_rpcrdma_version", "1..2", "0", "3" },
		{ "upstream_connections", "0..64", "-1", "65" },
		{ "shared_client_max_in_flight", "0..1024", "-1", "1025" },
		{ "turn_budget", "1..256", "0", "257" },
		{ "turn_budget_contended", "1..256", "0", "257" },
		{ "shared_client_max_in_flight_contended", "0..1024", "-1", "1025" },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const char *const values[] = { cases[i].below, cases[i].above, "1.5", "'8'" };
		const char *const shown[] = { cases[i].below, cases[i].above, "1.5", "\"8\"" };
		for (size_t v = 0; v < 4; v++) {
			char msg[160];
			snprintf(msg, sizeof(msg), "expected an integer %s, got %s", cases[i].range,
				 shown[v]);
			check_option(cases[i].key, values[v], msg);
		}
	}
}

static void test_seconds_ranges(void **state)
{
	(void)state;
	check_option("connect_timeout_s", "0.09",
		     "expected a number of seconds 0.1..300, got 0.09");
	check_option("connect_timeout_s", "301", "expected a number of seconds 0.1..300, got 301");
	check_option("connect_timeout_s", "'10'",
		     "expected a number of seconds 0.1..300, got \"10\"");
	check_option("idle_timeout_s", "-1", "expected a number of seconds 0..86400, got -1");
	check_option("idle_timeout_s", "86400.5",
		     "expected a number of seconds 0..86400, got 86400.5");
	check_option("call_timeout_s", "3601", "expected a number of seconds 0..3600, got 3601");
	check_option("call_timeout_s", "-1", "expected a number of seconds 0..3600, got -1");
	check_option("record_timeout_s", "0.5", "expected a number of seconds 1..600, got 0.5");
	check_option("record_timeout_s", "601", "expected a number of seconds 1..600, got 601");
}

/* A boolean route option takes true or false, nothing that could pass for one. */
static void test_boolean_options(void **state)
{
	(void)state;
	check_option("remote_invalidation", "1", "expected true or false, got 1");
	check_option("remote_invalidation", "'yes'", "expected true or false, got \"yes\"");
	check_option("remote_invalidation", "null", "expected true or false, got null");
}

static void test_drain_timeout(void **state)
{
	(void)state;
	expect_errors("{'drain_timeout_s': 3601, 'routes': [" ROUTE_FWD "]}",
		      "gw.json:1:21: drain_timeout_s: expected a number of seconds 0..3600, got "
		      "3601\n");
	expect_errors("{'drain_timeout_s': false, 'routes': [" ROUTE_FWD "]}",
		      "gw.json:1:21: drain_timeout_s: expected a number of seconds 0..3600, got "
		      "false\n");
	expect_errors("{'drain_delay_s': 601, 'routes': [" ROUTE_FWD "]}",
		      "gw.json:1:19: drain_delay_s: expected a number of seconds 0..600, got "
		      "601\n");
}

/* "workers": an integer 0..64, reported where the value is. */
static void test_workers(void **state)
{
	(void)state;
	expect_errors("{'workers': 65, 'routes': [" ROUTE_FWD "]}",
		      "gw.json:1:13: workers: expected an integer 0..64, got 65\n");
	expect_errors("{'workers': -1, 'routes': [" ROUTE_FWD "]}",
		      "gw.json:1:13: workers: expected an integer 0..64, got -1\n");
	expect_errors("{'workers': '2', 'routes': [" ROUTE_FWD "]}",
		      "gw.json:1:13: workers: expected an integer 0..64, got \"2\"\n");
	expect_errors("{'routes': [" ROUTE_FWD "],\n 'workers': 2.5}",
		      "gw.json:2:13: workers: expected an integer 0..64, got 2.5\n");
	expect_errors("{'workers': null, 'routes': [" ROUTE_FWD "]}",
		      "gw.json:1:13: workers: expected an integer 0..64, got null\n");
}

/* The process-wide session cap and the stats endpoint's connection cap. */
static void test_process_limits(void **state)
{
	(void)state;
	expect_errors("{'max_sessions': 0, 'routes': [" ROUTE_FWD "]}",
		      "gw.json:1:18: max_sessions: expected an integer 1..1048576, got 0\n");
	expect_errors("{'max_sessions': 1048577, 'routes': [" ROUTE_FWD "]}",
		      "gw.json:1:18: max_sessions: expected an integer 1..1048576, got 1048577\n");
	expect_errors("{'max_sessions': '10', 'routes': [" ROUTE_FWD "]}",
		      "gw.json:1:18: max_sessions: expected an integer 1..1048576, got \"10\"\n");
	expect_errors("{'stats': {'max_connections': 0}, 'routes': [" ROUTE_FWD "]}",
		      "gw.json:1:31: stats.max_connections: expected an integer 1..4096, got 0\n");
	expect_errors("{'stats': {'max_connections': 4097}, 'routes': [" ROUTE_FWD "]}",
		      "gw.json:1:31: stats.max_connections: expected an integer 1..4096, got "
		      "4097\n");
}

static void test_source_port(void **state)
{
	(void)state;
	check_option("source_port", "'reserve'",
		     "expected \"reserved\" or \"any\", got \"reserve\"; did you mean "
		     "\"reserved\"?");
	check_option("source_port", "'random'", "expected \"reserved\" or \"any\", got \"random\"");
	check_option("source_port", "1023", "expected \"reserved\" or \"any\", got 1023");
}

static void test_list_options(void **state)
{
	(void)state;
	check_option("allowed_clients", "'10.0.0.0/8'",
		     "expected a non-empty array of networks (omit the key to allow every "
		     "client), got \"10.0.0.0/8\"");
	check_option("allowed_clients", "[]",
		     "expected a non-empty array of networks (omit the key to allow every "
		     "client), got an empty array");
	check_option("ulb_rules", "'nfs.json'",
		     "expected a non-empty array of file names (omit the key for the stock "
		     "rules), got \"nfs.json\"");
	check_option("ulb_rules", "[]",
		     "expected a non-empty array of file names (omit the key for the stock "
		     "rules), got an empty array");
}

/* ---- client networks -------------------------------------------------------- */

static void test_bad_networks(void **state)
{
	static const char *const any_net =
		"expected an IPv4 or IPv6 network, as in \"192.0.2.0/24\" or \"2001:db8::/32\"";
	static const struct {
		const char *value;
		const char *expect;
	} cases[] = {
		{ "10.0.0.0/33", "expected a prefix length 0..32 after the '/'" },
		{ "10.0.0.0/", "expected a prefix length 0..32 after the '/'" },
		{ "10.0.0.0/-1", "expected a prefix length 0..32 after the '/'" },
		{ "10.0.0.0/ 8", "expected a prefix length 0..32 after the '/'" },
		{ "10.0.0.0/8a", "expected a prefix length 0..32 after the '/'" },
		{ "10.0.0.0/0008", "expected a prefix length 0..32 after the '/'" },
		{ "::/129", "expected a prefix length 0..128 after the '/'" },
		{ "10.0.0.1/8", "expected a network with no host bits set, as in \"10.0.0.0/8\"" },
		{ "192.0.2.129/25",
		  "expected a network with no host bits set, as in \"192.0.2.128/25\"" },
		{ "2001:db8::1/32",
		  "expected a network with no host bits set, as in \"2001:db8::/32\"" },
		{ "10.0.0", NULL },
		{ "/8", NULL },
		{ "", NULL },
		{ "nfs.example/24", NULL },
		{ "10.0.0.0/8 ", "expected a prefix length 0..32 after the '/'" },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *value, *msg;
		assert_true(asprintf(&value, "['192.0.2.0/24', '%s']", cases[i].value) > 0);
		assert_true(asprintf(&msg, "%s, got \"%s\"",
				     cases[i].expect ? cases[i].expect : any_net,
				     cases[i].value) > 0);
		char *text, *want;
		assert_true(asprintf(&text, "%s'allowed_clients': %s}]}", route_prefix, value) > 0);
		/* The element's column: after "['192.0.2.0/24', ". */
		int column = (int)(strlen(route_prefix) + strlen("'allowed_clients': ") +
				   strlen("['192.0.2.0/24', ") + 1);
		assert_true(asprintf(&want, "gw.json:1:%d: routes[0].allowed_clients[1]: %s\n",
				     column, msg) > 0);
		expect_errors(text, want);
		free(text);
		free(want);
		free(value);
		free(msg);
	}
	expect_errors(
		"{'routes': [" ROUTE_FWD "], 'defaults': {'allowed_clients': [10]}}",
		"gw.json:1:153: defaults.allowed_clients[0]: expected a network as a string, as "
		"in \"192.0.2.0/24\", got 10\n");
}

/* Every element in error is reported, not only the first. */
static void test_every_bad_network_reported(void **state)
{
	(void)state;
	expect_errors("{'routes': [" ROUTE_FWD "],\n"
		      " 'defaults': {'allowed_clients': ['1.2.3.4/40', '10.0.0.0/8', {}]}}",
		      "gw.json:2:35: defaults.allowed_clients[0]: expected a prefix length 0..32 "
		      "after the '/', got \"1.2.3.4/40\"\n"
		      "gw.json:2:63: defaults.allowed_clients[2]: expected a network as a string, "
		      "as in \"192.0.2.0/24\", got an empty object\n");
}

/* ---- addresses -------------------------------------------------------------- */

/* A forward route whose listen is @value must give @message. */
static void check_listen(const char *value, const char *message)
{
	static const char prefix[] = "{'routes': [{'name': 'a', 'mode': 'forward', 'upstream': "
				     "'rdma://192.0.2.1', 'listen': ";
	char *text, *want;

	assert_true(asprintf(&text, "%s%s}]}", prefix, value) > 0);
	assert_true(asprintf(&want, "gw.json:1:%zu: routes[0].listen: %s\n", strlen(prefix) + 1,
			     message) > 0);
	expect_errors(text, want);
	free(text);
	free(want);
}

static void test_bad_listen_addresses(void **state)
{
	static const struct {
		const char *value;
		const char *expect;
	} cases[] = {
		{ "0.0.0.0:2049", "\"tcp://HOST:PORT\" for a forward route" },
		{ "rdma://0.0.0.0:20049", "\"tcp://HOST:PORT\" for a forward route" },
		{ "TCP://0.0.0.0:2049", "\"tcp://HOST:PORT\" for a forward route" },
		{ "tcp://::1:2049", "an IPv6 address in brackets, as in \"[2001:db8::1]:PORT\"" },
		{ "tcp://[::1:2049", "a ']' after the IPv6 address" },
		{ "tcp://[::1]2049", "\":PORT\" or nothing after the ']'" },
		{ "tcp://[]:2049", "a host name or address" },
		{ "tcp://:2049", "a host name or address" },
		{ "tcp://", "a host name or address" },
		{ "tcp://0.0.0.0:0", "a port 1..65535 after the ':'" },
		{ "tcp://0.0.0.0:65536", "a port 1..65535 after the ':'" },
		{ "tcp://0.0.0.0:123456", "a port 1..65535 after the ':'" },
		{ "tcp://0.0.0.0:", "a port 1..65535 after the ':'" },
		{ "tcp://0.0.0.0:+80", "a port 1..65535 after the ':'" },
		{ "tcp://0.0.0.0:nfs", "a port 1..65535 after the ':'" },
		{ "tcp://300.1.1.1", "a dotted IPv4 address a.b.c.d" },
		{ "tcp://10.1", "a dotted IPv4 address a.b.c.d" },
		{ "tcp://host name",
		  "a host name, an IPv4 address or an IPv6 address in brackets" },
		{ "tcp://a/b:2049", "a host name, an IPv4 address or an IPv6 address in brackets" },
		{ "tcp://[192.0.2.1]:2049", "an IPv6 address inside the brackets" },
		{ "tcp://[nfs]:2049", "an IPv6 address inside the brackets" },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *value, *msg;
		assert_true(asprintf(&value, "'%s'", cases[i].value) > 0);
		assert_true(asprintf(&msg, "expected %s, got \"%s\"", cases[i].expect,
				     cases[i].value) > 0);
		check_listen(value, msg);
		free(value);
		free(msg);
	}
	check_listen("2049", "expected \"tcp://HOST:PORT\" for a forward route, got 2049");
	check_listen("null", "expected \"tcp://HOST:PORT\" for a forward route, got null");
	/* A long value is shortened in the message, never cut inside a character. */
	check_listen("'tcp://\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9"
		     "\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9"
		     "\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9"
		     "\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9'",
		     "expected a host name, an IPv4 address or an IPv6 address in brackets, got "
		     "\"tcp://\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9"
		     "\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9"
		     "\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9"
		     "\xc3\xa9\xc3\xa9...\"");
}

/* The scheme each mode takes on each side, and where the message points. */
static void test_scheme_follows_mode(void **state)
{
	(void)state;
	expect_errors(
		"{'routes': [\n"
		"  {'name': 'f', 'mode': 'forward', 'listen': 'rdma://0.0.0.0',\n"
		"   'upstream': 'tcp://192.0.2.1'},\n"
		"  {'name': 'r', 'mode': 'reverse', 'listen': 'tcp://0.0.0.0',\n"
		"   'upstream': 'rdma://192.0.2.1'}]}",
		"gw.json:2:46: routes[0].listen: expected \"tcp://HOST:PORT\" for a forward "
		"route, got \"rdma://0.0.0.0\"\n"
		"gw.json:3:16: routes[0].upstream: expected \"rdma://HOST:PORT\" for a forward "
		"route, got \"tcp://192.0.2.1\"\n"
		"gw.json:4:46: routes[1].listen: expected \"rdma://HOST:PORT\" for a reverse "
		"route, got \"tcp://0.0.0.0\"\n"
		"gw.json:5:16: routes[1].upstream: expected \"tcp://HOST:PORT\" for a reverse "
		"route, got \"rdma://192.0.2.1\"\n");
}

/* An upstream is connected to: the wildcard address is no destination. */
static void test_upstream_wildcard(void **state)
{
	(void)state;
	expect_errors(
		"{'routes': [\n"
		"  {'name': 'f', 'mode': 'forward', 'listen': 'tcp://0.0.0.0',\n"
		"   'upstream': 'rdma://0.0.0.0'},\n"
		"  {'name': 'r', 'mode': 'reverse', 'listen': 'rdma://[::]',\n"
		"   'upstream': 'tcp://[::]:2049'}]}",
		"gw.json:3:16: routes[0].upstream: expected an address to connect to, not the "
		"wildcard address, got \"rdma://0.0.0.0\"\n"
		"gw.json:5:16: routes[1].upstream: expected an address to connect to, not the "
		"wildcard address, got \"tcp://[::]:2049\"\n");
}

/* A name that does not resolve is an error at load, with the resolver's reason. */
static void test_unresolvable_name(void **state)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM };
	struct addrinfo *res = NULL;
	char *want;

	(void)state;
	/* RFC 6761: .invalid never resolves. The reason is the resolver's own. */
	int rc = getaddrinfo("nosuch.invalid", NULL, &hints, &res);
	assert_int_not_equal(rc, 0);
	assert_true(asprintf(&want,
			     "gw.json:2:15: routes[0].upstream: expected a host name that "
			     "resolves, got \"rdma://nosuch.invalid:20049\" (%s)\n",
			     gai_strerror(rc)) > 0);
	expect_errors("{'routes': [{'name': 'a', 'mode': 'forward', 'listen': 'tcp://0.0.0.0',\n"
		      "  'upstream': 'rdma://nosuch.invalid:20049'}]}",
		      want);
	free(want);
}

static void test_bad_stats(void **state)
{
	(void)state;
	expect_errors("{'routes': [" ROUTE_FWD "],\n"
		      " 'stats': {'listen': 'http://127.0.0.1:9464', 'enabled': 'yes'}}",
		      "gw.json:2:22: stats.listen: expected \"HOST:PORT\" without a scheme, got "
		      "\"http://127.0.0.1:9464\"\n"
		      "gw.json:2:58: stats.enabled: expected true or false, got \"yes\"\n");
	expect_errors("{'routes': [" ROUTE_FWD "], 'stats': {'listen': '127.0.0.1'}}",
		      "gw.json:1:140: stats.listen: expected \"HOST:PORT\" with a port, got "
		      "\"127.0.0.1\"\n");
	expect_errors("{'routes': [" ROUTE_FWD "], 'stats': {'listen': '[::1]:99999'}}",
		      "gw.json:1:140: stats.listen: expected a port 1..65535 after the ':', got "
		      "\"[::1]:99999\"\n");
	expect_errors("{'routes': [" ROUTE_FWD "], 'stats': {'listen': 9464}}",
		      "gw.json:1:140: stats.listen: expected \"HOST:PORT\", got 9464\n");
}

static void test_bad_logging(void **state)
{
	(void)state;
	expect_errors("{'routes': [" ROUTE_FWD "],\n"
		      " 'logging': {'level': 'warn', 'destination': 'syslogd'}}",
		      "gw.json:2:23: logging.level: expected \"error\", \"warning\", \"info\" or "
		      "\"debug\", got \"warn\"; did you mean \"warning\"?\n"
		      "gw.json:2:46: logging.destination: expected \"stderr\" or \"syslog\", got "
		      "\"syslogd\"; did you mean \"syslog\"?\n");
	expect_errors("{'routes': [" ROUTE_FWD "],\n"
		      " 'logging': {'level': 3, 'destination': 'file'}}",
		      "gw.json:2:23: logging.level: expected \"error\", \"warning\", \"info\" or "
		      "\"debug\", got 3\n"
		      "gw.json:2:41: logging.destination: expected \"stderr\" or \"syslog\", got "
		      "\"file\"\n");
}

/* ---- listeners that collide ----------------------------------------------- */

static void test_listen_collisions(void **state)
{
	(void)state;
	expect_errors(
		"{'routes': [\n"
		"  {'name': 'a', 'mode': 'forward', 'listen': 'tcp://0.0.0.0:2049',\n"
		"   'upstream': 'rdma://192.0.2.1'},\n"
		"  {'name': 'b', 'mode': 'forward', 'listen': 'tcp://192.0.2.5:2049',\n"
		"   'upstream': 'rdma://192.0.2.1'},\n"
		"  {'name': 'c', 'mode': 'forward', 'listen': 'tcp://[2001:db8::5]:2050',\n"
		"   'upstream': 'rdma://192.0.2.1'},\n"
		"  {'name': 'd', 'mode': 'forward', 'listen': 'tcp://[::]:2050',\n"
		"   'upstream': 'rdma://192.0.2.1'},\n"
		"  {'name': 'e', 'mode': 'reverse', 'listen': 'rdma://192.0.2.1',\n"
		"   'upstream': 'tcp://192.0.2.1'},\n"
		"  {'name': 'f', 'mode': 'reverse', 'listen': 'rdma://192.0.2.1:20049',\n"
		"   'upstream': 'tcp://192.0.2.1'}],\n"
		" 'stats': {'listen': '127.0.0.1:2050'}}",
		"gw.json:4:46: routes[1].listen: expected an address and port of its own, got "
		"\"tcp://192.0.2.5:2049\", which overlaps routes[0].listen "
		"(\"tcp://0.0.0.0:2049\", "
		"line 2)\n"
		"gw.json:8:46: routes[3].listen: expected an address and port of its own, got "
		"\"tcp://[::]:2050\", which overlaps routes[2].listen "
		"(\"tcp://[2001:db8::5]:2050\", "
		"line 6)\n"
		"gw.json:12:46: routes[5].listen: expected an address and port of its own, got "
		"\"rdma://192.0.2.1:20049\", which overlaps routes[4].listen "
		"(\"rdma://192.0.2.1\", "
		"line 10)\n"
		"gw.json:14:22: stats.listen: expected an address and port of its own, got "
		"\"127.0.0.1:2050\", which overlaps routes[3].listen (\"tcp://[::]:2050\", line "
		"8)\n");
}

/* A portmapper advertises its route's listen address: one address, not the wildcard. */
static void test_portmapper_on_wildcard(void **state)
{
	(void)state;
	expect_errors(
		"{'routes': [{'name': 'a', 'mode': 'forward', 'listen': 'tcp://0.0.0.0',\n"
		"  'upstream': 'rdma://192.0.2.1', 'portmapper_port': 111}]}",
		"gw.json:1:56: routes[0].listen: expected one address on a route with "
		"portmapper_port 111, got \"tcp://0.0.0.0\", the wildcard (the portmapper "
		"advertises the address and binds port 111 on it alone; on the wildcard, leave "
		"portmapper_port out: the route registers with the host's rpcbind)\n");
	/* From "defaults": still at the route's listen address. */
	expect_errors(
		"{'defaults': {'portmapper_port': 111},\n"
		" 'routes': [{'name': 'a', 'mode': 'forward', 'listen': 'tcp://[::]:2049',\n"
		"  'upstream': 'rdma://192.0.2.1'}]}",
		"gw.json:2:56: routes[0].listen: expected one address on a route with "
		"portmapper_port 111, got \"tcp://[::]:2049\", the wildcard (the portmapper "
		"advertises the address and binds port 111 on it alone; on the wildcard, leave "
		"portmapper_port out: the route registers with the host's rpcbind)\n");
	/* One address: it loads. */
	gw_config_free(load_ok("{'routes': [{'name': 'a', 'mode': 'forward', "
			       "'listen': 'tcp://192.0.2.9', 'upstream': 'rdma://192.0.2.1', "
			       "'portmapper_port': 111}]}"));
}

/* Version Two peers may send 4096-byte messages: the receive buffers must hold them. */
static void test_v2_needs_4096_receives(void **state)
{
	(void)state;
	expect_errors("{'routes': [{'name': 'a', 'mode': 'reverse', 'listen': 'rdma://0.0.0.0',\n"
		      "  'upstream': 'tcp://192.0.2.1', 'max_rpcrdma_version': 2,\n"
		      "  'inline_receive_size': 2048}]}",
		      "gw.json:3:26: routes[0].inline_receive_size: expected at least 4096 with "
		      "max_rpcrdma_version 2 (a Version Two peer without RFC 8797 private data "
		      "sends 4096-byte messages), got 2048\n");
	/* The size from "defaults", the version in the route: at the version. */
	expect_errors("{'defaults': {'inline_receive_size': 1024},\n"
		      " 'routes': [{'name': 'a', 'mode': 'reverse', 'listen': 'rdma://0.0.0.0',\n"
		      "  'upstream': 'tcp://192.0.2.1', 'max_rpcrdma_version': 2}]}",
		      "gw.json:3:57: routes[0].max_rpcrdma_version: expected 1 with "
		      "inline_receive_size 1024, got 2 (a Version Two peer without RFC 8797 "
		      "private data sends 4096-byte messages)\n");
	/* Version One with small receives: fine. */
	gw_config_free(load_ok("{'routes': [{'name': 'a', 'mode': 'reverse', "
			       "'listen': 'rdma://0.0.0.0', 'upstream': 'tcp://192.0.2.1', "
			       "'inline_receive_size': 1024}]}"));
}

/*
 * client_reserved_port judges a TCP client's port: taken on a forward route
 * and in "defaults"; a reverse route that sets it is told where.
 */
static void test_client_reserved_port_forward_only(void **state)
{
	(void)state;
	expect_errors("{'routes': [{'name': 'a', 'mode': 'reverse', 'listen': 'rdma://0.0.0.0',\n"
		      "  'upstream': 'tcp://192.0.2.1', 'client_reserved_port': true}]}",
		      "gw.json:2:34: routes[0].client_reserved_port: a reverse route's clients "
		      "are RDMA peers, which have no port: remove the key (it judges forward "
		      "routes' TCP clients)\n");
	const struct gw_config *cfg =
		load_ok("{'defaults': {'client_reserved_port': true},\n"
			" 'routes': [{'name': 'f', 'mode': 'forward', 'listen': 'tcp://0.0.0.0',\n"
			"  'upstream': 'rdma://192.0.2.1'},\n"
			" {'name': 'r', 'mode': 'reverse', 'listen': 'rdma://0.0.0.0',\n"
			"  'upstream': 'tcp://192.0.2.1'}]}");
	assert_int_equal(cfg->routes[0].client_reserved_port, 1);
	gw_config_free(cfg);
	cfg = load_ok("{'routes': [{'name': 'f', 'mode': 'forward', 'listen': 'tcp://0.0.0.0',\n"
		      "  'upstream': 'rdma://192.0.2.1'}]}");
	assert_int_equal(cfg->routes[0].client_reserved_port, 0);
	gw_config_free(cfg);
}

/* Shared upstream connections: RDMA ones in forward mode, TCP ones in reverse mode. */
static void test_shared_upstream_both_modes(void **state)
{
	(void)state;
	const struct gw_config *rev =
		load_ok("{'routes': [{'name': 'a', 'mode': 'reverse', 'listen': 'rdma://0.0.0.0', "
			"'upstream': 'tcp://192.0.2.1', 'upstream_connections': 2}]}");
	assert_int_equal(rev->routes[0].upstream_connections, 2);
	gw_config_free(rev);
	const struct gw_config *cfg =
		load_ok("{'routes': [{'name': 'a', 'mode': 'forward', "
			"'listen': 'tcp://192.0.2.9', 'upstream': 'rdma://192.0.2.1', "
			"'upstream_connections': 64, 'shared_client_max_in_flight': 4}]}");
	assert_int_equal(cfg->routes[0].upstream_connections, 64);
	assert_int_equal(cfg->routes[0].shared_client_max_in_flight, 4);
	gw_config_free(cfg);
}

/* ---- sizes that contradict each other -------------------------------------- */

static void test_record_smaller_than_inline(void **state)
{
	(void)state;
	/* In one route: at the record size. */
	expect_errors("{'routes': [{'name': 'a', 'mode': 'forward', 'listen': 'tcp://0.0.0.0',\n"
		      "  'upstream': 'rdma://192.0.2.1', 'inline_receive_size': 8192,\n"
		      "  'max_record_size': 4096}]}",
		      "gw.json:3:22: routes[0].max_record_size: expected at least the inline sizes "
		      "(8192), got 4096\n");
	/* The record size from "defaults", a larger inline size in the route: at the route's key.
	 */
	expect_errors("{'defaults': {'max_record_size': 8192},\n"
		      " 'routes': [{'name': 'a', 'mode': 'forward', 'listen': 'tcp://0.0.0.0',\n"
		      "  'upstream': 'rdma://192.0.2.1', 'inline_send_size': 16384}]}",
		      "gw.json:3:55: routes[0].inline_send_size: expected at most max_record_size "
		      "(8192), got 16384\n");
	/* Both in "defaults": once, there, not again for every route. */
	expect_errors("{'defaults': {'max_record_size': 8192, 'inline_send_size': 65536},\n"
		      " 'routes': [" ROUTE_FWD ", " ROUTE_REV "]}",
		      "gw.json:1:34: defaults.max_record_size: expected at least the inline sizes "
		      "(65536), got 8192\n");
}

/* ---- rule files -------------------------------------------------------------- */

static void test_bad_rule_files(void **state)
{
	char *path, *dir, *want;

	(void)state;
	assert_true(asprintf(&path, "%s/conf/gw.json", GW_TEST_DATA_DIR) > 0);
	assert_true(asprintf(&dir, "%s/conf", GW_TEST_DATA_DIR) > 0);
	char *abs = realpath(dir, NULL);
	assert_non_null(abs);
	assert_true(asprintf(&want,
			     "%s:2:17: routes[0].ulb_rules[0]: expected a readable rule file, got "
			     "\"rules/nfs4.json\" (%s/rules/nfs4.json: No such file or directory)\n"
			     "%s:2:36: routes[0].ulb_rules[1]: expected a readable rule file, got "
			     "\"rules\" (%s/rules: not a regular file)\n"
			     "%s:2:45: routes[0].ulb_rules[2]: expected a file name, got \"\"\n"
			     "%s:2:49: routes[0].ulb_rules[3]: expected a file name, got 7\n"
			     "%s:2:52: routes[0].ulb_rules[4]: expected a readable rule file, got "
			     "\"/nonexistent/x.json\" (/nonexistent/x.json: No such file or "
			     "directory)\n",
			     path, abs, path, abs, path, path, path) > 0);
	expect_errors_as(
		path,
		"{'routes': [{'name': 'a', 'mode': 'forward', 'listen': 'tcp://0.0.0.0', "
		"'upstream': 'rdma://192.0.2.1',\n"
		"  'ulb_rules': ['rules/nfs4.json', 'rules', '', 7, '/nonexistent/x.json']}]}",
		want);
	free(want);
	free(abs);
	free(dir);
	free(path);

	/* A text whose directory does not exist can only name rule files absolutely. */
	expect_errors_as(
		"nosuchdir/gw.json",
		"{'routes': [{'name': 'a', 'mode': 'forward', 'listen': 'tcp://0.0.0.0', "
		"'upstream': 'rdma://192.0.2.1',\n"
		"  'ulb_rules': ['rules/nfs.json']}]}",
		"nosuchdir/gw.json:2:17: routes[0].ulb_rules[0]: expected an absolute path "
		"(the directory of nosuchdir/gw.json is unknown), got \"rules/nfs.json\"\n");
}

/* ---- files -------------------------------------------------------------------- */

static void test_unreadable_files(void **state)
{
	struct gw_conf_errors errs;
	char *text;

	(void)state;
	gw_conf_errors_init(&errs);
	assert_null(gw_config_load("/nonexistent/gw.json", &errs));
	text = errors_text(&errs);
	assert_string_equal(text, "/nonexistent/gw.json: cannot read: No such file or directory\n");
	free(text);
	gw_conf_errors_clear(&errs);

	assert_null(gw_config_load(GW_TEST_DATA_DIR, &errs));
	text = errors_text(&errs);
	assert_string_equal(text, GW_TEST_DATA_DIR ": cannot read: not a regular file\n");
	free(text);
	assert_int_equal(errs.count, 1);
	assert_int_equal(errs.list[0].line, 0);
	gw_conf_errors_clear(&errs);
}

/* ---- many errors -------------------------------------------------------------- */

/*
 * Past the cap, the errors shown are the first in the file, whatever
 * order they were found in (here: the route's after the top level's).
 */
static void test_error_cap_keeps_the_first_in_the_file(void **state)
{
	char text[4096] = "{'routes': [{'name': 'a', 'mode': 'forward', 'listen': 'x', "
			  "'upstream': 'y'}]";
	char want[8192], line[256];

	(void)state;
	snprintf(want, sizeof(want),
		 "gw.json:1:56: routes[0].listen: expected \"tcp://HOST:PORT\" for a forward "
		 "route, got \"x\"\n"
		 "gw.json:1:73: routes[0].upstream: expected \"rdma://HOST:PORT\" for a forward "
		 "route, got \"y\"\n");
	for (int i = 0; i < 25; i++) {
		snprintf(line, sizeof(line), ",\n 'zz%02d': %d", i, i);
		strcat(text, line);
		if (i < 18) {
			snprintf(line, sizeof(line),
				 "gw.json:%d:2: zz%02d: unknown key; expected \"routes\", "
				 "\"defaults\", \"logging\", \"stats\", \"drain_timeout_s\", "
				 "\"drain_delay_s\", \"max_sessions\", \"workers\", "
				 "\"qos_classes\" or "
				 "\"comment\"\n",
				 i + 2, i);
			strcat(want, line);
		}
	}
	strcat(text, "}");
	strcat(want, "7 more errors not shown\n");
	expect_errors(text, want);

	struct gw_conf_errors errs;
	assert_null(parse_as("gw.json", text, &errs));
	assert_int_equal(errs.count, GW_CONF_MAX_ERRORS);
	assert_int_equal(errs.total, 27);
	assert_int_equal(errs.list[0].line, 1);
	assert_int_equal(errs.list[0].column, 56);
	gw_conf_errors_clear(&errs);
	assert_int_equal(errs.count, 0);
	assert_int_equal(errs.total, 0);
}

static void test_one_more_error_is_singular(void **state)
{
	char text[4096] = "{'routes': [" ROUTE_FWD "]";
	char line[64];
	struct gw_conf_errors errs;
	char *out;

	(void)state;
	for (int i = 0; i < GW_CONF_MAX_ERRORS + 1; i++) {
		snprintf(line, sizeof(line), ", 'zz%02d': %d", i, i);
		strcat(text, line);
	}
	strcat(text, "}");
	assert_null(parse_as("gw.json", text, &errs));
	out = errors_text(&errs);
	assert_non_null(strstr(out, "\n1 more error not shown\n"));
	free(out);
	gw_conf_errors_clear(&errs);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_issue_example),
		cmocka_unit_test(test_syntax_errors),
		cmocka_unit_test(test_byte_order_mark),
		cmocka_unit_test(test_syntax_error_text_on_one_line),
		cmocka_unit_test(test_document_shape),
		cmocka_unit_test(test_missing_route_keys),
		cmocka_unit_test(test_route_name_and_mode),
		cmocka_unit_test(test_duplicate_route_names),
		cmocka_unit_test(test_unknown_keys),
		cmocka_unit_test(test_unknown_key_with_control_characters),
		cmocka_unit_test(test_unknown_key_with_pointer_characters),
		cmocka_unit_test(test_very_many_errors),
		cmocka_unit_test(test_comment_must_be_a_string),
		cmocka_unit_test(test_inline_sizes),
		cmocka_unit_test(test_integer_ranges),
		cmocka_unit_test(test_seconds_ranges),
		cmocka_unit_test(test_boolean_options),
		cmocka_unit_test(test_drain_timeout),
		cmocka_unit_test(test_workers),
		cmocka_unit_test(test_process_limits),
		cmocka_unit_test(test_source_port),
		cmocka_unit_test(test_list_options),
		cmocka_unit_test(test_bad_networks),
		cmocka_unit_test(test_every_bad_network_reported),
		cmocka_unit_test(test_bad_listen_addresses),
		cmocka_unit_test(test_scheme_follows_mode),
		cmocka_unit_test(test_upstream_wildcard),
		cmocka_unit_test(test_unresolvable_name),
		cmocka_unit_test(test_bad_stats),
		cmocka_unit_test(test_bad_logging),
		cmocka_unit_test(test_listen_collisions),
		cmocka_unit_test(test_portmapper_on_wildcard),
		cmocka_unit_test(test_v2_needs_4096_receives),
		cmocka_unit_test(test_shared_upstream_both_modes),
		cmocka_unit_test(test_record_smaller_than_inline),
		cmocka_unit_test(test_bad_rule_files),
		cmocka_unit_test(test_unreadable_files),
		cmocka_unit_test(test_error_cap_keeps_the_first_in_the_file),
		cmocka_unit_test(test_one_more_error_is_singular),
		cmocka_unit_test(test_client_reserved_port_forward_only),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
