/* SPDX-License-Identifier: MIT */
/*
 * Loading configurations that are right: the minimal form, every key,
 * defaults and their inheritance, addresses, rule paths, the examples,
 * and the per-connection client check.
 */
#include "test_config_helpers.h"

#include <arpa/inet.h>
#include <limits.h>
#include <net/if.h>
#include <sys/un.h>

#include "common/addr_text.h"

/* The configuration's addresses as the logs show them (common/addr_text.h). */
static const char *addr_text(const struct sockaddr_storage *ss)
{
	static char buf[GW_ADDR_TEXT_MAX];

	assert_true(ss->ss_family == AF_INET || ss->ss_family == AF_INET6);
	return gw_addr_text((const struct sockaddr *)ss, buf, sizeof(buf));
}

static void assert_builtin_options(const struct gw_route *r)
{
	assert_int_equal(r->inline_send_size, 4096);
	assert_int_equal(r->inline_receive_size, 4096);
	assert_int_equal(r->credits, 64);
	assert_int_equal(r->backchannel_credits, 16);
	assert_int_equal(r->max_record_size, 1024 * 1024 + 4096);
	assert_int_equal(r->max_chunk_segments, 16);
	assert_int_equal(r->max_read_segments, 32);
	assert_int_equal(r->max_write_chunks, 4);
	assert_int_equal(r->queue_limit, 64);
	assert_int_equal(r->connect_timeout_ms, 10000);
	assert_int_equal(r->idle_timeout_ms, 0);
	assert_int_equal(r->source_port, GW_SOURCE_PORT_RESERVED);
	assert_int_equal(r->allowed_clients_count, 0);
	assert_null(r->allowed_clients);
	assert_int_equal(r->ulb_rules_count, 0);
	assert_null(r->ulb_rules);
	assert_int_equal(r->max_rpcrdma_version, 1);	     /* Version One only until asked */
	assert_int_equal(r->upstream_connections, 0);	     /* one RDMA connection per client */
	assert_int_equal(r->shared_client_max_in_flight, 0); /* half of credits */
	assert_int_equal(r->turn_budget, 16);
	assert_int_equal(r->turn_budget_contended, 4);		       /* while others are served */
	assert_int_equal(r->shared_client_max_in_flight_contended, 4); /* likewise */
	assert_int_equal(r->remote_invalidation, 1); /* Send With Invalidate offered */
}

/* Without "stats", "logging", "drain_timeout_s", "max_sessions" and "workers". */
static void assert_global_defaults(const struct gw_config *cfg)
{
	assert_true(cfg->stats_enabled);
	assert_string_equal(cfg->stats_text, "127.0.0.1:9464");
	assert_string_equal(addr_text(&cfg->stats_addr), "127.0.0.1:9464");
	assert_int_equal(cfg->log_level, GW_LOG_INFO);
	assert_int_equal(cfg->log_destination, GW_LOG_TO_STDERR);
	assert_int_equal(cfg->drain_timeout_ms, 30000);
	assert_int_equal(cfg->drain_delay_ms, 0);
	assert_int_equal(cfg->max_sessions, 4096);
	assert_int_equal(cfg->workers, 0);
	assert_int_equal(cfg->stats_max_connections, 32);
}

/* The form of the issue, which must always be accepted, byte for byte. */
static void test_minimal_form(void **state)
{
	static const char text[] =
		"{ \"routes\": [\n"
		"    { \"name\": \"nfs\", \"mode\": \"forward\", \"listen\": "
		"\"tcp://0.0.0.0:2049\", "
		"\"upstream\": \"rdma://192.0.2.1:20049\" },\n"
		"    { \"name\": \"back\", \"mode\": \"reverse\", \"listen\": "
		"\"rdma://0.0.0.0:20049\", \"upstream\": \"tcp://192.0.2.1:2049\" } ],\n"
		"  \"stats\": { \"listen\": \"127.0.0.1:9464\" } }\n";
	struct gw_conf_errors errs;
	const struct gw_config *cfg;

	(void)state;
	gw_conf_errors_init(&errs);
	cfg = gw_config_parse("gw.json", text, strlen(text), &errs);
	assert_int_equal(errs.total, 0);
	assert_non_null(cfg);
	assert_string_equal(cfg->path, "gw.json");
	assert_int_equal(cfg->routes_count, 2);

	const struct gw_route *fwd = &cfg->routes[0], *rev = &cfg->routes[1];
	assert_string_equal(fwd->name, "nfs");
	assert_int_equal(fwd->mode, GW_MODE_FORWARD);
	assert_int_equal(fwd->listen.transport, GW_TRANSPORT_TCP);
	assert_string_equal(addr_text(&fwd->listen.addr), "0.0.0.0:2049");
	assert_int_equal(fwd->listen.addrlen, sizeof(struct sockaddr_in));
	assert_string_equal(fwd->listen.text, "tcp://0.0.0.0:2049");
	assert_int_equal(fwd->upstream.transport, GW_TRANSPORT_RDMA);
	assert_string_equal(addr_text(&fwd->upstream.addr), "192.0.2.1:20049");
	assert_string_equal(fwd->upstream.text, "rdma://192.0.2.1:20049");
	assert_builtin_options(fwd);

	assert_string_equal(rev->name, "back");
	assert_int_equal(rev->mode, GW_MODE_REVERSE);
	assert_int_equal(rev->listen.transport, GW_TRANSPORT_RDMA);
	assert_string_equal(addr_text(&rev->listen.addr), "0.0.0.0:20049");
	assert_int_equal(rev->upstream.transport, GW_TRANSPORT_TCP);
	assert_string_equal(addr_text(&rev->upstream.addr), "192.0.2.1:2049");
	assert_builtin_options(rev);

	assert_global_defaults(cfg);
	gw_config_free(cfg);
}

/* Without "stats", "logging" and "drain_timeout_s": the documented defaults. */
static void test_global_defaults(void **state)
{
	const struct gw_config *cfg = load_ok("{'routes': [" ROUTE_FWD "]}");

	(void)state;
	assert_global_defaults(cfg);
	gw_config_free(cfg);
}

/* "workers": 0 ("auto", the default) up to 64, as written. */
static void test_workers(void **state)
{
	static const unsigned values[] = { 0, 1, 7, 64 };
	const struct gw_config *cfg;
	char text[256];

	(void)state;
	assert_int_equal(GW_WORKERS_AUTO, 0);
	assert_int_equal(GW_WORKERS_MAX, 64);
	cfg = load_ok("{'routes': [" ROUTE_FWD "]}");
	assert_int_equal(cfg->workers, GW_WORKERS_AUTO);
	gw_config_free(cfg);
	for (size_t i = 0; i < sizeof(values) / sizeof(values[0]); i++) {
		snprintf(text, sizeof(text), "{'workers': %u, 'routes': [" ROUTE_FWD "]}",
			 values[i]);
		cfg = load_ok(text);
		assert_int_equal(cfg->workers, values[i]);
		gw_config_free(cfg);
	}
}

/* The configuration examples shipped in conf/examples/, each also shown in the docs. */
static const char *const examples[] = { "forward.json", "reverse.json", "chain.json" };

static char *example_path(const char *name)
{
	char *path;

	assert_true(asprintf(&path, "%s/conf/examples/%s", GW_SOURCE_DIR, name) > 0);
	return path;
}

static char *data_path(const char *name)
{
	char *path;

	assert_true(asprintf(&path, "%s/conf/%s", GW_TEST_DATA_DIR, name) > 0);
	return path;
}

/* The absolute path of tests/data/conf/rules/@name, as the loader stores it. */
static char *rule_abs(const char *name)
{
	char *dir = data_path(""), *abs = realpath(dir, NULL), *path;

	assert_non_null(abs);
	assert_true(asprintf(&path, "%s/rules/%s", abs, name) > 0);
	free(abs);
	free(dir);
	return path;
}

static void assert_cidr(const struct gw_cidr *c, int family, const char *addr, unsigned prefix)
{
	char text[INET6_ADDRSTRLEN];

	assert_int_equal(c->family, family);
	inet_ntop(family, family == AF_INET ? (const void *)&c->addr.v4 : (const void *)&c->addr.v6,
		  text, sizeof(text));
	assert_string_equal(text, addr);
	assert_int_equal(c->prefix_len, prefix);
}

/* tests/data/conf/full.json sets every key, none to its default. */
static void test_every_key(void **state)
{
	char *path = data_path("full.json");
	char *nfs = rule_abs("nfs.json"), *extra = rule_abs("extra.json");
	struct gw_conf_errors errs;
	const struct gw_config *cfg;

	(void)state;
	gw_conf_errors_init(&errs);
	cfg = gw_config_load(path, &errs);
	assert_int_equal(errs.total, 0);
	assert_non_null(cfg);
	assert_string_equal(cfg->path, path);

	assert_int_equal(cfg->log_level, GW_LOG_DEBUG);
	assert_int_equal(cfg->log_destination, GW_LOG_TO_SYSLOG);
	assert_true(cfg->stats_enabled);
	assert_string_equal(cfg->stats_text, "[::1]:9500");
	assert_string_equal(addr_text(&cfg->stats_addr), "[::1]:9500");
	assert_int_equal(cfg->stats_addrlen, sizeof(struct sockaddr_in6));
	assert_int_equal(cfg->drain_timeout_ms, 12500);
	assert_int_equal(cfg->drain_delay_ms, 4000);
	assert_int_equal(cfg->max_sessions, 1000);
	assert_int_equal(cfg->workers, 6);
	assert_int_equal(cfg->stats_max_connections, 4);
	assert_int_equal(cfg->routes_count, 2);

	/* The first route takes everything from "defaults". */
	const struct gw_route *a = &cfg->routes[0];
	assert_string_equal(a->name, "front");
	assert_string_equal(addr_text(&a->listen.addr), "[::]:2049");
	assert_int_equal(a->inline_send_size, 8192);
	assert_int_equal(a->inline_receive_size, 16384);
	assert_int_equal(a->credits, 32);
	assert_int_equal(a->backchannel_credits, 4);
	assert_int_equal(a->max_record_size, 2097152);
	assert_int_equal(a->max_chunk_segments, 8);
	assert_int_equal(a->max_read_segments, 24);
	assert_int_equal(a->max_write_chunks, 2);
	assert_int_equal(a->queue_limit, 100);
	assert_int_equal(a->connect_timeout_ms, 2500);
	assert_int_equal(a->idle_timeout_ms, 600000);
	assert_int_equal(a->call_timeout_ms, 60000);
	assert_int_equal(a->record_timeout_ms, 10000);
	assert_int_equal(a->max_sessions, 200);
	assert_int_equal(a->max_sessions_per_client, 8);
	assert_int_equal(a->max_session_memory, 16777216);
	assert_int_equal(a->source_port, GW_SOURCE_PORT_ANY);
	assert_int_equal(a->allowed_clients_count, 2);
	assert_cidr(&a->allowed_clients[0], AF_INET, "198.51.100.0", 24);
	assert_cidr(&a->allowed_clients[1], AF_INET6, "2001:db8:100::", 48);
	assert_int_equal(a->ulb_rules_count, 1);
	assert_string_equal(a->ulb_rules[0], nfs);
	assert_int_equal(a->reply_size_estimate, 65536);
	assert_int_equal(a->max_rpcrdma_version, 2);
	assert_int_equal(a->remote_invalidation, 0);

	/* The second overrides every option, at the ends of the ranges. */
	const struct gw_route *b = &cfg->routes[1];
	assert_string_equal(b->name, "back.v6_2-x");
	assert_int_equal(b->mode, GW_MODE_REVERSE);
	assert_string_equal(addr_text(&b->listen.addr), "192.0.2.2:20049");
	assert_string_equal(addr_text(&b->upstream.addr), "[2001:db8::7]:2050");
	assert_int_equal(b->inline_send_size, 1024);
	assert_int_equal(b->inline_receive_size, 262144);
	assert_int_equal(b->credits, 1024);
	assert_int_equal(b->backchannel_credits, 256);
	assert_int_equal(b->max_record_size, 16777216);
	assert_int_equal(b->max_chunk_segments, 256);
	assert_int_equal(b->max_read_segments, 1024);
	assert_int_equal(b->max_write_chunks, 64);
	assert_int_equal(b->queue_limit, 0);
	assert_int_equal(b->connect_timeout_ms, 300000);
	assert_int_equal(b->idle_timeout_ms, 250);
	assert_int_equal(b->call_timeout_ms, 0);
	assert_int_equal(b->record_timeout_ms, 600000);
	assert_int_equal(b->max_sessions, 65536);
	assert_int_equal(b->max_sessions_per_client, 1);
	assert_int_equal(b->max_session_memory, 1073741824);
	assert_int_equal(b->source_port, GW_SOURCE_PORT_RESERVED);
	/* A list in a route replaces the default list; it is not merged. */
	assert_int_equal(b->allowed_clients_count, 4);
	assert_cidr(&b->allowed_clients[0], AF_INET, "10.0.0.0", 8);
	assert_cidr(&b->allowed_clients[1], AF_INET, "192.0.2.77", 32);
	/* An IPv4-mapped network is kept as the IPv4 network it means. */
	assert_cidr(&b->allowed_clients[2], AF_INET, "203.0.113.0", 24);
	assert_cidr(&b->allowed_clients[3], AF_INET6, "::", 0);
	assert_int_equal(b->ulb_rules_count, 2);
	assert_string_equal(b->ulb_rules[0], nfs);
	assert_string_equal(b->ulb_rules[1], extra);
	assert_int_equal(b->max_rpcrdma_version, 1);
	assert_int_equal(b->remote_invalidation, 1);
	assert_int_equal(b->reply_size_estimate, 16777216);

	gw_config_free(cfg);
	free(nfs);
	free(extra);
	free(path);
}

/* Options of "defaults" apply to routes that do not set them; each route may override. */
static void test_defaults_inherited_and_overridden(void **state)
{
	const struct gw_config *cfg = load_ok(
		"{'defaults': {'credits': 32, 'allowed_clients': ['10.0.0.0/8']},\n"
		" 'routes': [" ROUTE_FWD ",\n"
		"  {'name': 'rev', 'mode': 'reverse', 'listen': 'rdma://0.0.0.0:20049',\n"
		"   'upstream': 'tcp://192.0.2.1:2049', 'credits': 128, 'queue_limit': 7}]}");

	(void)state;
	assert_int_equal(cfg->routes[0].credits, 32);
	assert_int_equal(cfg->routes[0].queue_limit, 64);
	assert_int_equal(cfg->routes[0].allowed_clients_count, 1);
	assert_int_equal(cfg->routes[1].credits, 128);
	assert_int_equal(cfg->routes[1].queue_limit, 7);
	assert_int_equal(cfg->routes[1].allowed_clients_count, 1);
	/* Each route owns its copy. */
	assert_ptr_not_equal(cfg->routes[0].allowed_clients, cfg->routes[1].allowed_clients);
	gw_config_free(cfg);
}

/* Without a port, tcp:// means NFS's 2049 and rdma:// NFS/RDMA's 20049. */
static void test_default_ports(void **state)
{
	const struct gw_config *cfg = load_ok(
		"{'routes': [{'name': 'a', 'mode': 'forward', 'listen': 'tcp://192.0.2.1',\n"
		"             'upstream': 'rdma://[2001:db8::1]'},\n"
		"            {'name': 'b', 'mode': 'reverse', 'listen': 'rdma://[::]',\n"
		"             'upstream': 'tcp://198.51.100.1'}]}");

	(void)state;
	assert_string_equal(addr_text(&cfg->routes[0].listen.addr), "192.0.2.1:2049");
	assert_string_equal(addr_text(&cfg->routes[0].upstream.addr), "[2001:db8::1]:20049");
	assert_string_equal(addr_text(&cfg->routes[1].listen.addr), "[::]:20049");
	assert_string_equal(addr_text(&cfg->routes[1].upstream.addr), "198.51.100.1:2049");
	gw_config_free(cfg);
}

/* A link-local upstream needs its zone; the zone becomes the scope id. */
static void test_ipv6_zone(void **state)
{
	const struct gw_config *cfg =
		load_ok("{'routes': [{'name': 'a', 'mode': 'reverse', 'listen': "
			"'rdma://[fe80::1%lo]:20049',\n"
			"             'upstream': 'tcp://[fe80::2%lo]:2049'}]}");
	const struct sockaddr_in6 *up = (const struct sockaddr_in6 *)&cfg->routes[0].upstream.addr;

	(void)state;
	assert_int_equal(up->sin6_family, AF_INET6);
	assert_int_equal(up->sin6_scope_id, if_nametoindex("lo"));
	assert_int_equal(ntohs(up->sin6_port), 2049);
	gw_config_free(cfg);
}

/* Names are resolved at load: the structs hold addresses. */
static void test_host_names_resolved(void **state)
{
	const struct gw_config *cfg = load_ok(
		"{'routes': [{'name': 'a', 'mode': 'forward', 'listen': 'tcp://localhost:3049',\n"
		"             'upstream': 'rdma://localhost'}],\n"
		" 'stats': {'listen': 'localhost:9999'}}");
	const char *up;

	(void)state;
	up = addr_text(&cfg->routes[0].upstream.addr);
	assert_true(strcmp(up, "127.0.0.1:20049") == 0 || strcmp(up, "[::1]:20049") == 0);
	assert_string_equal(cfg->routes[0].upstream.text, "rdma://localhost");
	up = addr_text(&cfg->stats_addr);
	assert_true(strcmp(up, "127.0.0.1:9999") == 0 || strcmp(up, "[::1]:9999") == 0);
	gw_config_free(cfg);
}

static void test_stats_disabled(void **state)
{
	const struct gw_config *cfg = load_ok("{'routes': [" ROUTE_FWD "],\n"
					      " 'stats': {'enabled': false}}");

	(void)state;
	assert_false(cfg->stats_enabled);
	gw_config_free(cfg);
}

/* Seconds may have a fraction, kept to the millisecond. */
static void test_seconds_fractions(void **state)
{
	const struct gw_config *cfg =
		load_ok("{'drain_timeout_s': 0, 'defaults': {'idle_timeout_s': 0.0015},\n"
			" 'routes': [{'name': 'a', 'mode': 'forward', 'listen': 'tcp://0.0.0.0',\n"
			"             'upstream': 'rdma://192.0.2.1', 'connect_timeout_s': 0.1}]}");

	(void)state;
	assert_int_equal(cfg->drain_timeout_ms, 0);
	assert_int_equal(cfg->routes[0].idle_timeout_ms, 2);
	assert_int_equal(cfg->routes[0].connect_timeout_ms, 100);
	gw_config_free(cfg);
}

/* "comment" is allowed in every object, so that files can explain themselves. */
static void test_comments_everywhere(void **state)
{
	const struct gw_config *cfg = load_ok(
		"{'comment': 'top', 'logging': {'comment': 'l'}, 'stats': {'comment': 's'},\n"
		" 'defaults': {'comment': 'd'},\n"
		" 'routes': [{'comment': 'r', 'name': 'a', 'mode': 'forward',\n"
		"             'listen': 'tcp://0.0.0.0', 'upstream': 'rdma://192.0.2.1'}]}");

	(void)state;
	assert_int_equal(cfg->routes_count, 1);
	gw_config_free(cfg);
}

/*
 * Listeners of different transports do not collide (rdma_cm has its own
 * port space), nor do specific addresses of one family.
 */
static void test_listeners_that_do_not_collide(void **state)
{
	const struct gw_config *cfg =
		load_ok("{'routes': [\n"
			"  {'name': 'a', 'mode': 'forward', 'listen': 'tcp://192.0.2.1:2049',\n"
			"   'upstream': 'rdma://192.0.2.9'},\n"
			"  {'name': 'b', 'mode': 'forward', 'listen': 'tcp://192.0.2.2:2049',\n"
			"   'upstream': 'rdma://192.0.2.9'},\n"
			"  {'name': 'c', 'mode': 'reverse', 'listen': 'rdma://0.0.0.0:2049',\n"
			"   'upstream': 'tcp://192.0.2.9'},\n"
			"  {'name': 'd', 'mode': 'forward', 'listen': 'tcp://[2001:db8::1]:2049',\n"
			"   'upstream': 'rdma://192.0.2.9'}],\n"
			" 'stats': {'listen': '0.0.0.0:9464'}}");

	(void)state;
	assert_int_equal(cfg->routes_count, 4);
	gw_config_free(cfg);
}

/* A stats endpoint that is disabled holds no port. */
static void test_disabled_stats_holds_no_port(void **state)
{
	const struct gw_config *cfg =
		load_ok("{'routes': [" ROUTE_FWD "],\n"
			" 'stats': {'enabled': false, 'listen': '0.0.0.0:2049'}}");

	(void)state;
	gw_config_free(cfg);
}

static void test_mode_names(void **state)
{
	(void)state;
	assert_string_equal(gw_route_mode_name(GW_MODE_FORWARD), "forward");
	assert_string_equal(gw_route_mode_name(GW_MODE_REVERSE), "reverse");
}

static void test_route_lookup(void **state)
{
	const struct gw_config *cfg = load_ok("{'routes': [" ROUTE_FWD ", " ROUTE_REV "]}");

	(void)state;
	assert_ptr_equal(gw_config_route(cfg, "rev"), &cfg->routes[1]);
	assert_ptr_equal(gw_config_route(cfg, "fwd"), &cfg->routes[0]);
	assert_null(gw_config_route(cfg, "nfs"));
	gw_config_free(cfg);
}

/* ---- the client check ---------------------------------------------------- */

static struct sockaddr_storage peer(const char *addr)
{
	struct sockaddr_storage ss;

	memset(&ss, 0, sizeof(ss));
	if (strchr(addr, ':')) {
		struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)&ss;
		sin6->sin6_family = AF_INET6;
		assert_int_equal(inet_pton(AF_INET6, addr, &sin6->sin6_addr), 1);
	} else {
		struct sockaddr_in *sin = (struct sockaddr_in *)&ss;
		sin->sin_family = AF_INET;
		assert_int_equal(inet_pton(AF_INET, addr, &sin->sin_addr), 1);
	}
	return ss;
}

static bool allowed(const struct gw_route *r, const char *addr)
{
	struct sockaddr_storage ss = peer(addr);

	return gw_route_client_allowed(r, (const struct sockaddr *)&ss);
}

static void test_client_networks(void **state)
{
	const struct gw_config *cfg = load_ok(
		"{'routes': [{'name': 'a', 'mode': 'forward', 'listen': 'tcp://0.0.0.0',\n"
		"   'upstream': 'rdma://192.0.2.1',\n"
		"   'allowed_clients': ['10.1.16.0/20', '192.0.2.7', '2001:db8:8000::/33',\n"
		"                       '::ffff:198.51.100.0/121']}]}");
	const struct gw_route *r = &cfg->routes[0];

	(void)state;
	/* /20: the boundary falls inside the third byte. */
	assert_true(allowed(r, "10.1.16.0"));
	assert_true(allowed(r, "10.1.31.255"));
	assert_false(allowed(r, "10.1.15.255"));
	assert_false(allowed(r, "10.1.32.0"));
	/* A bare address is a single host. */
	assert_true(allowed(r, "192.0.2.7"));
	assert_false(allowed(r, "192.0.2.6"));
	/* /33: one bit into the fifth byte. */
	assert_true(allowed(r, "2001:db8:8000::1"));
	assert_true(allowed(r, "2001:db8:ffff:ffff::1"));
	assert_false(allowed(r, "2001:db8:7fff::1"));
	/* IPv4 clients of a dual-stack listener arrive mapped: checked as IPv4. */
	assert_true(allowed(r, "::ffff:10.1.20.1"));
	assert_false(allowed(r, "::ffff:10.2.0.1"));
	/* A mapped network in the list matches plain IPv4 peers. */
	assert_true(allowed(r, "198.51.100.127"));
	assert_false(allowed(r, "198.51.100.128"));
	/* Families do not mix: an IPv6 peer never matches an IPv4 network. */
	assert_false(allowed(r, "::a01:1001"));

	/* Nothing else can match a list: AF_UNIX, AF_IB... */
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	assert_false(gw_route_client_allowed(r, (const struct sockaddr *)&sun));
	gw_config_free(cfg);
}

static void test_client_networks_absent_or_everything(void **state)
{
	const struct gw_config *cfg =
		load_ok("{'routes': [" ROUTE_FWD ",\n"
			"  {'name': 'b', 'mode': 'forward', 'listen': 'tcp://0.0.0.0:3049',\n"
			"   'upstream': 'rdma://192.0.2.1', 'allowed_clients': ['0.0.0.0/0']}]}");
	struct sockaddr_un sun = { .sun_family = AF_UNIX };

	(void)state;
	/* No list: every client, whatever its family. */
	assert_true(allowed(&cfg->routes[0], "203.0.113.5"));
	assert_true(allowed(&cfg->routes[0], "2001:db8::5"));
	assert_true(gw_route_client_allowed(&cfg->routes[0], (const struct sockaddr *)&sun));
	/* /0 of one family: all of that family only. */
	assert_true(allowed(&cfg->routes[1], "203.0.113.5"));
	assert_true(allowed(&cfg->routes[1], "::ffff:203.0.113.5"));
	assert_false(allowed(&cfg->routes[1], "2001:db8::5"));
	gw_config_free(cfg);
}

/* ---- files ----------------------------------------------------------------- */

/* Relative rule paths are found from the configuration file's directory. */
static void test_rule_paths_relative_to_file(void **state)
{
	char *path = data_path("gw.json");
	char *nfs = rule_abs("nfs.json");
	char *abs_in;
	const struct gw_config *cfg;

	(void)state;
	/* An absolute path is kept as written. */
	assert_true(asprintf(&abs_in,
			     "{'routes': [{'name': 'a', 'mode': 'forward', 'listen': "
			     "'tcp://0.0.0.0', 'upstream': 'rdma://192.0.2.1',\n"
			     "  'ulb_rules': ['rules/nfs.json', '%s']}]}",
			     nfs) > 0);
	cfg = load_ok_as(path, abs_in);
	assert_int_equal(cfg->routes[0].ulb_rules_count, 2);
	assert_string_equal(cfg->routes[0].ulb_rules[0], nfs);
	assert_string_equal(cfg->routes[0].ulb_rules[1], nfs);
	gw_config_free(cfg);
	free(abs_in);
	free(nfs);
	free(path);
}

static void test_examples_load(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(examples) / sizeof(examples[0]); i++) {
		struct gw_conf_errors errs;
		char *path = example_path(examples[i]);

		gw_conf_errors_init(&errs);
		const struct gw_config *cfg = gw_config_load(path, &errs);
		if (errs.total) {
			char *text = errors_text(&errs);
			print_error("%s", text);
			free(text);
		}
		assert_int_equal(errs.total, 0);
		assert_non_null(cfg);
		gw_config_free(cfg);
		free(path);
	}
}

/* The chain example runs both modes in one process. */
static void test_chain_example_has_both_modes(void **state)
{
	struct gw_conf_errors errs;
	char *path = example_path("chain.json");

	(void)state;
	gw_conf_errors_init(&errs);
	const struct gw_config *cfg = gw_config_load(path, &errs);
	assert_non_null(cfg);
	bool forward = false, reverse = false;
	for (size_t i = 0; i < cfg->routes_count; i++) {
		forward |= cfg->routes[i].mode == GW_MODE_FORWARD;
		reverse |= cfg->routes[i].mode == GW_MODE_REVERSE;
	}
	assert_true(forward && reverse);
	gw_config_free(cfg);
	free(path);
}

/* The whole of a file, NUL-terminated. */
static char *slurp(const char *path)
{
	FILE *f = fopen(path, "r");
	char *buf;
	long n;

	assert_non_null(f);
	assert_int_equal(fseek(f, 0, SEEK_END), 0);
	n = ftell(f);
	assert_true(n >= 0);
	rewind(f);
	buf = malloc((size_t)n + 1);
	assert_non_null(buf);
	assert_int_equal(fread(buf, 1, (size_t)n, f), (size_t)n);
	buf[n] = '\0';
	fclose(f);
	return buf;
}

/*
 * docs/configuration.md shows each example in full, under a heading
 * "### NAME"; what it shows must be the file, byte for byte.
 */
static void test_docs_show_the_examples(void **state)
{
	char *docs_path, *docs;

	(void)state;
	assert_true(asprintf(&docs_path, "%s/docs/configuration.md", GW_SOURCE_DIR) > 0);
	docs = slurp(docs_path);
	for (size_t i = 0; i < sizeof(examples) / sizeof(examples[0]); i++) {
		char heading[64], *path, *file;
		snprintf(heading, sizeof(heading), "\n### %s", examples[i]);
		const char *at = strstr(docs, heading);
		assert_non_null(at);
		const char *start = strstr(at, "```json\n");
		assert_non_null(start);
		start += strlen("```json\n");
		const char *end = strstr(start, "```\n");
		assert_non_null(end);

		path = example_path(examples[i]);
		file = slurp(path);
		assert_int_equal(strlen(file), (size_t)(end - start));
		assert_memory_equal(file, start, strlen(file));
		free(file);
		free(path);
	}
	free(docs);
	free(docs_path);
}

static void test_free_null(void **state)
{
	(void)state;
	gw_config_free(NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_minimal_form),
		cmocka_unit_test(test_global_defaults),
		cmocka_unit_test(test_workers),
		cmocka_unit_test(test_every_key),
		cmocka_unit_test(test_defaults_inherited_and_overridden),
		cmocka_unit_test(test_default_ports),
		cmocka_unit_test(test_ipv6_zone),
		cmocka_unit_test(test_host_names_resolved),
		cmocka_unit_test(test_stats_disabled),
		cmocka_unit_test(test_seconds_fractions),
		cmocka_unit_test(test_comments_everywhere),
		cmocka_unit_test(test_listeners_that_do_not_collide),
		cmocka_unit_test(test_disabled_stats_holds_no_port),
		cmocka_unit_test(test_mode_names),
		cmocka_unit_test(test_route_lookup),
		cmocka_unit_test(test_client_networks),
		cmocka_unit_test(test_client_networks_absent_or_everything),
		cmocka_unit_test(test_rule_paths_relative_to_file),
		cmocka_unit_test(test_examples_load),
		cmocka_unit_test(test_chain_example_has_both_modes),
		cmocka_unit_test(test_docs_show_the_examples),
		cmocka_unit_test(test_free_null),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
