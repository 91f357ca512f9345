/* SPDX-License-Identifier: MIT */
/*
 * tests/unit/test_config_qos.c - quality-of-service classes in the
 * configuration: what loads, every error at its line and column, the
 * default class, matching, and what SIGHUP may change.
 */
#include <arpa/inet.h>
#include <netinet/in.h>

#include "test_config_helpers.h"

#define CLASSES                                                                                    \
	"'qos_classes': {\n"                                                                       \
	" 'backup': {'clients': ['192.0.2.0/24'], 'program': 100003, 'procedures': 'writes',\n"    \
	"            'to_server_mb_s': 4, 'max_in_flight': 8, 'burst_s': 0.5},\n"                  \
	" 'rest': {'calls_per_s': 1000, 'to_client_mb_s': 2.5}}"

static const struct gw_config *load_route_qos(const char *route_keys)
{
	char text[2048];

	snprintf(text, sizeof(text),
		 "{" CLASSES ",\n"
		 " 'routes': [{'name': 'fwd', 'mode': 'forward', 'listen': 'tcp://0.0.0.0:2049', "
		 "'upstream': 'rdma://192.0.2.1:20049'%s}]}",
		 route_keys);
	return load_ok(text);
}

/* Classes load with their limits in bytes a second, copied into the route in its order. */
static void test_classes_load(void **state)
{
	(void)state;
	const struct gw_config *cfg = load_route_qos(", 'qos': ['backup'], 'qos_default': 'rest'");

	assert_int_equal(cfg->qos_classes_count, 2);
	const struct gw_route *r = &cfg->routes[0];
	assert_int_equal(r->qos_count, 2);
	assert_true(r->qos_has_default);
	const struct gw_qos_class *b = &r->qos[0], *d = &r->qos[1];
	assert_string_equal(b->name, "backup");
	assert_int_equal(b->clients_count, 1);
	assert_int_equal(b->program, 100003);
	assert_int_equal(b->procedures, GW_QOS_PROCS_WRITES);
	assert_int_equal(b->to_server_bytes_per_s, 4000000);
	assert_int_equal(b->to_client_bytes_per_s, 0);
	assert_int_equal(b->max_in_flight, 8);
	assert_int_equal(b->burst_ms, 500);
	assert_int_equal(b->calls_per_s, 0);
	assert_string_equal(d->name, "rest");
	assert_int_equal(d->calls_per_s, 1000);
	assert_int_equal(d->to_client_bytes_per_s, 2500000);
	assert_int_equal(d->burst_ms, 250); /* the default */
	gw_config_free(cfg);
}

/* A route without "qos" has no classes, whatever "qos_classes" holds. */
static void test_route_without_qos(void **state)
{
	(void)state;
	const struct gw_config *cfg = load_route_qos("");

	assert_int_equal(cfg->routes[0].qos_count, 0);
	assert_false(cfg->routes[0].qos_has_default);
	gw_config_free(cfg);
}

static struct sockaddr_storage v4(const char *a)
{
	struct sockaddr_storage ss = { 0 };
	struct sockaddr_in *sin = (struct sockaddr_in *)&ss;

	sin->sin_family = AF_INET;
	assert_int_equal(inet_pton(AF_INET, a, &sin->sin_addr), 1);
	return ss;
}

/* A class takes a call by client network, program and procedure group, all of them. */
static void test_class_match(void **state)
{
	(void)state;
	const struct gw_config *cfg = load_route_qos(", 'qos': ['backup', 'rest']");
	const struct gw_qos_class *b = &cfg->routes[0].qos[0], *rest = &cfg->routes[0].qos[1];
	struct sockaddr_storage in = v4("192.0.2.7"), out = v4("198.51.100.1");
	const struct sockaddr *pin = (const struct sockaddr *)&in;
	const struct sockaddr *pout = (const struct sockaddr *)&out;

	assert_true(gw_qos_class_matches(b, pin, 100003, false, true));
	assert_false(gw_qos_class_matches(b, pout, 100003, false, true));   /* network */
	assert_false(gw_qos_class_matches(b, pin, 100005, false, true));    /* program */
	assert_false(gw_qos_class_matches(b, pin, 100003, true, false));    /* a read */
	assert_false(gw_qos_class_matches(b, pin, 100003, false, false));   /* metadata */
	assert_true(gw_qos_class_matches(rest, pout, 100005, true, false)); /* no match: all */

	struct gw_qos_class meta = { .procedures = GW_QOS_PROCS_METADATA };
	assert_true(gw_qos_class_matches(&meta, pout, 1, false, false));
	assert_false(gw_qos_class_matches(&meta, pout, 1, true, false));
	struct gw_qos_class reads = { .procedures = GW_QOS_PROCS_READS };
	assert_true(gw_qos_class_matches(&reads, pout, 1, true, false));
	assert_false(gw_qos_class_matches(&reads, pout, 1, false, true));
	gw_config_free(cfg);
}

/* Every mistake in a class is reported where it is. */
static void test_class_errors(void **state)
{
	(void)state;
	expect_errors(
		"{'qos_classes': {\n"
		" 'a b': {'clients': ['192.0.2.0/33'], 'program': 0, 'procedures': 'write',\n"
		"         'to_server_mb_s': -1, 'to_client_mb_s': 'fast', 'burst_s': 0,\n"
		"         'calls_per_s': 1.5, 'max_in_flight': 70000, 'brust_s': 1},\n"
		" 'b': 3},\n"
		" 'routes': [" ROUTE_FWD "]}",
		"gw.json:2:2: qos_classes.a b: expected a class name of 1..32 letters, "
		"digits, '.', '_' or '-', starting with a letter or digit\n"
		"gw.json:2:22: qos_classes.a b.clients[0]: expected a prefix length "
		"0..32 after the '/', got \"192.0.2.0/33\"\n"
		"gw.json:2:50: qos_classes.a b.program: expected an integer 1..4294967295, "
		"got 0\n"
		"gw.json:2:67: qos_classes.a b.procedures: expected \"any\", \"reads\", "
		"\"writes\" or \"metadata\", got \"write\"; did you mean \"writes\"?\n"
		"gw.json:3:28: qos_classes.a b.to_server_mb_s: expected megabytes (10^6 bytes) "
		"a second, 0..1000000 (0: no limit), got -1\n"
		"gw.json:3:50: qos_classes.a b.to_client_mb_s: expected megabytes (10^6 bytes) "
		"a second, 0..1000000 (0: no limit), got \"fast\"\n"
		"gw.json:3:69: qos_classes.a b.burst_s: expected a number of seconds "
		"0.01..60, got 0\n"
		"gw.json:4:25: qos_classes.a b.calls_per_s: expected an integer 0..10000000, "
		"got 1.5\n"
		"gw.json:4:47: qos_classes.a b.max_in_flight: expected an integer 0..65536, "
		"got 70000\n"
		"gw.json:4:54: qos_classes.a b.brust_s: unknown key; did you mean "
		"\"burst_s\"?\n"
		"gw.json:5:7: qos_classes.b: expected a qos class object (\"clients\", limits "
		"such as \"to_server_mb_s\"), got 3\n");
	expect_errors("{'qos_classes': [], 'routes': [" ROUTE_FWD "]}",
		      "gw.json:1:17: qos_classes: expected a non-empty object of qos classes by "
		      "name, got an empty array\n");
}

/* A route's lists: unknown classes (with a suggestion), repeats, a default with a match. */
static void test_route_errors(void **state)
{
	(void)state;
	expect_errors(
		"{" CLASSES ",\n"
		" 'routes': [{'name': 'fwd', 'mode': 'forward', 'listen': 'tcp://0.0.0.0:2049',\n"
		"  'upstream': 'rdma://192.0.2.1:20049', 'qos': ['backup', 'bakup', 'backup', 3],\n"
		"  'qos_default': 'backup'}]}",
		"gw.json:6:59: routes[0].qos[1]: expected a class of \"qos_classes\", got "
		"\"bakup\"; did you mean \"backup\"?\n"
		"gw.json:6:68: routes[0].qos[2]: expected each class once, got \"backup\" "
		"again (first at line 6)\n"
		"gw.json:6:78: routes[0].qos[3]: expected the name of a qos class, got 3\n"
		"gw.json:7:18: routes[0].qos_default: expected a class without \"clients\", "
		"\"program\" or \"procedures\" (a default class takes every call the listed "
		"classes do not), got \"backup\", which has a match\n");
	expect_errors(
		"{'routes': [{'name': 'fwd', 'mode': 'forward', 'listen': 'tcp://0.0.0.0:2049',\n"
		"  'upstream': 'rdma://192.0.2.1:20049', 'qos': []}]}",
		"gw.json:2:48: routes[0].qos: expected a non-empty array of qos class names, "
		"first match first (omit the key for no limits), got an empty array\n");
	expect_errors(
		"{'routes': [{'name': 'fwd', 'mode': 'forward', 'listen': 'tcp://0.0.0.0:2049',\n"
		"  'upstream': 'rdma://192.0.2.1:20049', 'qos_default': 'x'}]}",
		"gw.json:2:56: routes[0].qos_default: expected a class of the top-level "
		"\"qos_classes\", got \"x\", and there is no \"qos_classes\"\n");
	expect_errors("{" CLASSES ",\n"
		      " 'routes': [" ROUTE_REV "],\n"
		      " 'defaults': {'qos': ['rest']}}",
		      "gw.json:6:15: defaults.qos: unknown key here; it cannot have a default: set "
		      "it in each route\n");
	/* A reverse route's errors are a forward route's, at their line and column. */
	expect_errors(
		"{" CLASSES ",\n"
		" 'routes': [{'name': 'rev', 'mode': 'reverse', 'listen': 'rdma://0.0.0.0:20049',\n"
		"  'upstream': 'tcp://192.0.2.1:2049', 'qos': ['nope']}]}",
		"gw.json:6:47: routes[0].qos[0]: expected a class of "
		"\"qos_classes\", got \"nope\"\n");
}

/* A reverse route takes the classes as a forward route does (reverse_qos.c enforces them). */
static void test_reverse_route(void **state)
{
	(void)state;
	const struct gw_config *cfg = load_ok(
		"{" CLASSES ",\n"
		" 'routes': [{'name': 'rev', 'mode': 'reverse', 'listen': 'rdma://0.0.0.0:20049',\n"
		"  'upstream': 'tcp://192.0.2.1:2049', 'qos': ['backup'], 'qos_default': "
		"'rest'}]}");
	const struct gw_route *r = &cfg->routes[0];

	assert_int_equal(r->qos_count, 2);
	assert_true(r->qos_has_default);
	assert_string_equal(r->qos[0].name, "backup");
	assert_int_equal(r->qos[0].to_server_bytes_per_s, 4000000);
	assert_string_equal(r->qos[1].name, "rest");
	gw_config_free(cfg);
}

static bool reload(const char *was, const char *now, unsigned *changes, char **msg)
{
	const struct gw_config *cur = load_route_qos(was);
	const struct gw_config *next = load_route_qos(now);
	struct gw_conf_errors errs;

	gw_conf_errors_init(&errs);
	bool ok = gw_config_reloadable(cur, next, changes, &errs);
	*msg = errors_text(&errs);
	gw_conf_errors_clear(&errs);
	gw_config_free(cur);
	gw_config_free(next);
	return ok;
}

/* SIGHUP: new limits are live; another list or default needs a restart, and says so. */
static void test_reload(void **state)
{
	unsigned changes = 0;
	char *msg;

	(void)state;
	assert_true(reload(", 'qos': ['backup']", ", 'qos': ['backup']", &changes, &msg));
	assert_int_equal(changes, 0);
	free(msg);
	assert_false(reload(", 'qos': ['backup']", ", 'qos': ['rest', 'backup']", &changes, &msg));
	assert_non_null(strstr(msg, "routes[0].qos: the route's qos classes or their matches "
				    "changed, which needs a restart"));
	free(msg);
	assert_false(reload(", 'qos': ['backup']", ", 'qos': ['backup'], 'qos_default': 'rest'",
			    &changes, &msg));
	free(msg);
	assert_false(reload(", 'qos': ['backup']", "", &changes, &msg));
	free(msg);

	/* The same list with another limit: live, as GW_CHANGE_LIMITS. */
	const struct gw_config *cur = load_route_qos(", 'qos': ['backup']");
	const struct gw_config *next =
		load_ok("{'qos_classes': {'backup': {'clients': ['192.0.2.0/24'], 'program': "
			"100003, 'procedures': 'writes', 'to_server_mb_s': 8}},\n"
			" 'routes': [{'name': 'fwd', 'mode': 'forward', 'listen': "
			"'tcp://0.0.0.0:2049', 'upstream': 'rdma://192.0.2.1:20049', 'qos': "
			"['backup']}]}");
	struct gw_conf_errors errs;
	gw_conf_errors_init(&errs);
	changes = 0;
	assert_true(gw_config_reloadable(cur, next, &changes, &errs));
	assert_int_equal(changes, GW_CHANGE_LIMITS);
	assert_int_equal(next->routes[0].qos[0].to_server_bytes_per_s, 8000000);
	gw_conf_errors_clear(&errs);
	gw_config_free(cur);
	gw_config_free(next);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_classes_load),  cmocka_unit_test(test_route_without_qos),
		cmocka_unit_test(test_class_match),   cmocka_unit_test(test_class_errors),
		cmocka_unit_test(test_route_errors),  cmocka_unit_test(test_reload),
		cmocka_unit_test(test_reverse_route),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
