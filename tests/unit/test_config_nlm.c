/* SPDX-License-Identifier: MIT */
/*
 * The NFSv3 side services' keys (issue 13): each one's built-in default,
 * that a value reaches the route, from the route or from "defaults", that
 * a value out of range is refused with file, line, column and key, and
 * the per-client shares kept within their totals.
 */
#include "test_config_helpers.h"

#define ROUTE_HEAD                                                                                 \
	"{'routes': [{'name': 'a', 'mode': 'forward', 'listen': 'tcp://192.0.2.9', "               \
	"'upstream': 'rdma://192.0.2.1', "

static const struct {
	const char *key;
	size_t offset;
	uint32_t def;
	const char *set, *range, *below, *above;
	uint32_t set_value;
} keys[] = {
#define KEY(k, f, d, s, sv, r, lo, hi)                                                             \
	{                                                                                          \
		k, offsetof(struct gw_route, f), d, s, r, lo, hi, sv                               \
	}
	KEY("upstream_nlm_port", upstream_nlm_port, 0, "4045", 4045, "an integer 0..65535", "-1",
	    "65536"),
	KEY("upstream_nsm_port", upstream_nsm_port, 0, "32765", 32765, "an integer 0..65535", "-1",
	    "65536"),
	KEY("nlm_max_clients", nlm_max_clients, 1024, "10", 10, "an integer 1..65536", "0",
	    "65537"),
	KEY("nlm_max_clients_per_prefix", nlm_max_clients_per_prefix, 0, "3", 3,
	    "an integer 0..65536", "-1", "65537"),
	KEY("nlm_max_owners", nlm_max_owners, 4096, "2000", 2000, "an integer 1..65535", "0",
	    "65536"),
	KEY("nlm_max_owners_per_client", nlm_max_owners_per_client, 1024, "3", 3,
	    "an integer 1..65535", "0", "65536"),
	KEY("nlm_max_locks", nlm_max_locks, 16384, "5000", 5000, "an integer 1..1048576", "0",
	    "1048577"),
	KEY("nlm_max_locks_per_client", nlm_max_locks_per_client, 1024, "7", 7,
	    "an integer 1..1048576", "0", "1048577"),
	KEY("nlm_max_pending_calls", nlm_max_pending_calls, 128, "9", 9, "an integer 1..4096", "0",
	    "4097"),
	KEY("nlm_call_timeout_s", nlm_call_timeout_ms, 15000, "2.5", 2500,
	    "a number of seconds 1..300", "0", "301"),
	KEY("nlm_callback_max_pending", nlm_callback_max_pending, 64, "11", 11,
	    "an integer 1..4096", "0", "4097"),
	KEY("nlm_async_max_pending", nlm_async_max_pending, 64, "12", 12, "an integer 1..4096", "0",
	    "4097"),
	KEY("nlm_async_max_pending_per_client", nlm_async_max_pending_per_client, 16, "5", 5,
	    "an integer 1..4096", "0", "4097"),
	KEY("nlm_notify_max_hosts", nlm_notify_max_hosts, 1024, "13", 13, "an integer 1..65536",
	    "0", "65537"),
	KEY("nlm_reclaim_window_s", nlm_reclaim_window_ms, 90000, "120", 120000,
	    "a number of seconds 1..3600", "0.5", "3601"),
#undef KEY
};

enum { NKEYS = sizeof(keys) / sizeof(keys[0]) };

static uint32_t field(const struct gw_route *r, size_t i)
{
	return *(const uint32_t *)((const char *)r + keys[i].offset);
}

/* Field @i of the first route of @sq (single-quoted), which must load. */
static uint32_t loaded_field(const char *sq, size_t i)
{
	const struct gw_config *cfg = load_ok(sq);
	uint32_t v = field(&cfg->routes[0], i);

	gw_config_free(cfg);
	return v;
}

/*
 * ROUTE_HEAD with @key set to @value is refused at the value: "expected
 * @what, got @shown".
 */
static void expect_refused(const char *key, const char *value, const char *what, const char *shown)
{
	char *text, *want;
	int column = (int)(strlen(ROUTE_HEAD) + strlen(key) + 5);

	assert_true(asprintf(&text, ROUTE_HEAD "'%s': %s}]}", key, value) > 0);
	assert_true(asprintf(&want, "gw.json:1:%d: routes[0].%s: expected %s, got %s\n", column,
			     key, what, shown) > 0);
	expect_errors(text, want);
	free(text);
	free(want);
}

static void test_defaults(void **state)
{
	(void)state;
	const struct gw_config *cfg = load_ok("{'routes': [" ROUTE_FWD "]}");
	for (size_t i = 0; i < NKEYS; i++) {
		if (field(&cfg->routes[0], i) != keys[i].def)
			fail_msg("%s: %u, not the default %u", keys[i].key,
				 field(&cfg->routes[0], i), keys[i].def);
	}
	gw_config_free(cfg);
}

/* Each key set in a route, then in "defaults": the value is the route's. */
static void test_each_key_reaches_the_route(void **state)
{
	(void)state;
	for (size_t i = 0; i < NKEYS; i++) {
		char *text;
		assert_true(asprintf(&text, ROUTE_HEAD "'%s': %s}]}", keys[i].key, keys[i].set) >
			    0);
		assert_int_equal(loaded_field(text, i), keys[i].set_value);
		free(text);

		assert_true(asprintf(&text, "{'defaults': {'%s': %s}, 'routes': [" ROUTE_FWD "]}",
				     keys[i].key, keys[i].set) > 0);
		assert_int_equal(loaded_field(text, i), keys[i].set_value);
		free(text);
	}
}

/* Out of range, a fraction for an integer, a string: refused at the value. */
static void test_each_key_refuses_bad_values(void **state)
{
	(void)state;
	for (size_t i = 0; i < NKEYS; i++) {
		bool seconds = strstr(keys[i].range, "seconds") != NULL;
		const char *values[] = { keys[i].below, keys[i].above, seconds ? "true" : "1.5",
					 "'8'" };
		const char *shown[] = { keys[i].below, keys[i].above, seconds ? "true" : "1.5",
					"\"8\"" };
		for (size_t v = 0; v < 4; v++)
			expect_refused(keys[i].key, values[v], keys[i].range, shown[v]);
	}
}

/*
 * A client's share more than the whole is the whole (nlm_state refuses the
 * pair, the route would not start): set, from "defaults", or the default.
 */
static void test_per_client_shares(void **state)
{
	(void)state;
	const struct gw_config *cfg = load_ok(ROUTE_HEAD "'nlm_max_owners': 100, "
							 "  'nlm_max_owners_per_client': 200}]}");
	assert_int_equal(cfg->routes[0].nlm_max_owners, 100);
	assert_int_equal(cfg->routes[0].nlm_max_owners_per_client, 100);
	gw_config_free(cfg);
	cfg = load_ok("{'defaults': {'nlm_max_locks_per_client': 500}, "
		      " 'routes': [" ROUTE_FWD ", {'name': 'a', 'mode': 'forward', "
		      "'listen': 'tcp://0.0.0.0:2050', 'upstream': 'rdma://192.0.2.1', "
		      "'nlm_max_locks': 400}]}");
	assert_int_equal(cfg->routes[0].nlm_max_locks_per_client, 500);
	assert_int_equal(cfg->routes[1].nlm_max_locks_per_client, 400);
	gw_config_free(cfg);
	cfg = load_ok(ROUTE_HEAD "'nlm_max_owners': 100, 'nlm_max_locks': 200}]}");
	assert_int_equal(cfg->routes[0].nlm_max_owners_per_client, 100);
	assert_int_equal(cfg->routes[0].nlm_max_locks_per_client, 200);
	gw_config_free(cfg);
	cfg = load_ok(ROUTE_HEAD "'nlm_async_max_pending': 8}]}");
	assert_int_equal(cfg->routes[0].nlm_async_max_pending_per_client, 8);
	gw_config_free(cfg);
	cfg = load_ok(ROUTE_HEAD "'nlm_max_clients': 10, 'nlm_max_clients_per_prefix': 20}]}");
	assert_int_equal(cfg->routes[0].nlm_max_clients_per_prefix, 10);
	gw_config_free(cfg);
	/* Smaller shares are kept. */
	cfg = load_ok(ROUTE_HEAD "'nlm_max_owners': 100, 'nlm_max_owners_per_client': 99}]}");
	assert_int_equal(cfg->routes[0].nlm_max_owners_per_client, 99);
	gw_config_free(cfg);
}

/* state_directory: absolute, kept as written, inherited; NULL by default. */
static void test_state_directory(void **state)
{
	(void)state;
	const struct gw_config *cfg = load_ok("{'routes': [" ROUTE_FWD "]}");
	assert_null(cfg->routes[0].state_directory);
	gw_config_free(cfg);
	cfg = load_ok(ROUTE_HEAD "'state_directory': '/srv/gw state'}]}");
	assert_string_equal(cfg->routes[0].state_directory, "/srv/gw state");
	gw_config_free(cfg);
	cfg = load_ok("{'defaults': {'state_directory': '/srv/gw'}, 'routes': [" ROUTE_FWD "]}");
	assert_string_equal(cfg->routes[0].state_directory, "/srv/gw");
	gw_config_free(cfg);

	static const char *const bad[] = { "'var/lib/gw'", "''", "1", "null" };
	static const char *const shown[] = { "\"var/lib/gw\"", "\"\"", "1", "null" };
	for (size_t i = 0; i < 4; i++)
		expect_refused("state_directory", bad[i],
			       "an absolute directory name of at most 255 bytes", shown[i]);
	/* 256 bytes: too long for the paths made from it. */
	char *text, dir[257];
	memset(dir, 'd', 256);
	dir[0] = '/';
	dir[256] = '\0';
	assert_true(asprintf(&text, ROUTE_HEAD "'state_directory': '%s'}]}", dir) > 0);
	struct gw_conf_errors errs;
	assert_null(parse_as("gw.json", text, &errs));
	char *et = errors_text(&errs);
	assert_non_null(strstr(et, "routes[0].state_directory: expected an absolute"));
	free(et);
	gw_conf_errors_clear(&errs);
	free(text);
}

/* Every one of the keys needs a restart: the side services are set up when the route starts. */
static void test_changes_need_a_restart(void **state)
{
	(void)state;
	const struct gw_config *cur = load_ok(ROUTE_HEAD "'state_directory': '/srv/a'}]}");
	const struct gw_config *next =
		load_ok(ROUTE_HEAD "'state_directory': '/srv/b', 'nlm_max_owners': 100, "
				   "'upstream_nlm_port': 4045}]}");
	struct gw_conf_errors errs;
	unsigned changes = 0;

	gw_conf_errors_init(&errs);
	assert_false(gw_config_reloadable(cur, next, &changes, &errs));
	char *text = errors_text(&errs);
	assert_non_null(strstr(text, "routes[0].state_directory: changed from \"/srv/a\" to "
				     "\"/srv/b\", which needs a restart"));
	assert_non_null(strstr(text, "routes[0].nlm_max_owners: changed from 4096 to 100, which "
				     "needs a restart"));
	assert_non_null(strstr(text, "routes[0].upstream_nlm_port: changed from 0 to 4045, which "
				     "needs a restart"));
	free(text);
	gw_conf_errors_clear(&errs);
	gw_config_free(cur);
	gw_config_free(next);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_defaults),
		cmocka_unit_test(test_each_key_reaches_the_route),
		cmocka_unit_test(test_each_key_refuses_bad_values),
		cmocka_unit_test(test_per_client_shares),
		cmocka_unit_test(test_state_directory),
		cmocka_unit_test(test_changes_need_a_restart),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
