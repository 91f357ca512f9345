/* SPDX-License-Identifier: MIT */
/*
 * rpcrdma-gw: a transparent gateway between ONC RPC over TCP and
 * RPC-over-RDMA.
 *
 *   rpcrdma-gw -c FILE            run the gateway
 *   rpcrdma-gw -c FILE --check    validate the configuration and exit
 *   rpcrdma-gw --probe rdma://HOST:PORT
 *   rpcrdma-gw stat [ENDPOINT]    the live view (gateway/stat_view.h)
 *   rpcrdma-gw --version | --help
 *
 * Signals: SIGTERM and SIGINT drain (stop accepting, finish calls in
 * flight up to the drain timeout, exit 0); SIGHUP reloads what can change
 * without dropping connections.
 */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>

#include "common/clock.h"
#include "common/log.h"
#include "common/version.h"
#include "conf/config.h"
#include "gateway/core/engine.h"
#include "gateway/stat_view.h"
#include "gateway/probe.h"
#include "gateway/sd_notify.h"
#include "gateway/side/side_route.h"
#include "gateway/stats/stats_http.h"
#include "gateway/workers.h"

struct gw_main {
	const char *config_path;
	const struct gw_config *cfg;
	struct event_base *base;
	struct gw_workers *ws;
	struct gw_stats_http *stats;
	struct event *sig_term;
	struct event *sig_int;
	struct event *sig_hup;
	struct event *drain_ev; /* drain_delay_s after SIGTERM: the drain starts */
	bool stopping;
};

static void usage(FILE *out)
{
	fprintf(out,
		"usage: rpcrdma-gw -c FILE [--check]\n"
		"       rpcrdma-gw --probe rdma://HOST[:PORT] [--timeout MS]\n"
		"       rpcrdma-gw stat [ENDPOINT] [--once] [--json] (stat --help)\n"
		"       rpcrdma-gw --version | --help\n"
		"\n"
		"A transparent gateway between ONC RPC over TCP and RPC-over-RDMA.\n"
		"\n"
		"  -c, --config FILE   the JSON configuration (docs/configuration.md)\n"
		"      --check         validate the configuration and exit: 0 when valid\n"
		"      --probe URL     send one NFSv3 NULL call to an RPC-over-RDMA server and\n"
		"                      print its credits and inline sizes\n"
		"      --timeout MS    how long the probe waits (default 10000)\n"
		"  -V, --version       print the version\n"
		"  -h, --help          this text\n"
		"\n"
		"Signals: SIGTERM/SIGINT drain and exit; SIGHUP reloads logging, client\n"
		"ACLs, limits and timeouts without dropping connections.\n");
}

static void apply_logging(const struct gw_config *cfg)
{
	gw_log_set_level(cfg->log_level);
	gw_log_use_syslog(cfg->log_destination == GW_LOG_TO_SYSLOG);
}

static void on_drained(void *arg)
{
	struct gw_main *m = arg;

	gw_info("drained; exiting");
	event_base_loopexit(m->base, NULL);
}

static void start_drain(struct gw_main *m)
{
	gw_info("draining (%zu sessions, up to %u ms)", gw_workers_sessions(m->ws),
		m->cfg->drain_timeout_ms);
	gw_workers_drain(m->ws, m->cfg->drain_timeout_ms, on_drained, m);
}

static void on_drain_delay_over(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	start_drain(arg);
}

static void on_stop_signal(evutil_socket_t sig, short what, void *arg)
{
	struct gw_main *m = arg;

	if (m->stopping) {
		gw_warn("second %s: exiting now", sig == SIGINT ? "SIGINT" : "SIGTERM");
		event_base_loopexit(m->base, NULL);
		return;
	}
	m->stopping = true;
	/* First, so that a load balancer's next health check sends no new client here. */
	gw_stats_http_set_draining(m->stats, true);
	gw_sd_notifyf("STOPPING=1\nSTATUS=draining %zu sessions", gw_workers_sessions(m->ws));
	if (m->cfg->drain_delay_ms) {
		/*
		 * Serving on, listeners open, until the director has seen /healthz
		 * and sends no new connection here: a client whose connection the
		 * drain closes then reconnects to another gateway, not to a closed
		 * port (Linux waits 3 s after a refused connect).
		 */
		struct timeval tv = gw_ms_timeval(m->cfg->drain_delay_ms);
		m->drain_ev = evtimer_new(m->base, on_drain_delay_over, m);
		if (m->drain_ev && evtimer_add(m->drain_ev, &tv) == 0) {
			gw_info("%s: /healthz says draining; serving on for %u ms, then draining",
				sig == SIGINT ? "SIGINT" : "SIGTERM", m->cfg->drain_delay_ms);
			return;
		}
	}
	start_drain(m);
}

static void on_reload_signal(evutil_socket_t sig, short what, void *arg)
{
	struct gw_main *m = arg;
	struct gw_conf_errors errs;
	unsigned changes = 0;

	gw_conf_errors_init(&errs);
	gw_sd_notify("RELOADING=1");
	const struct gw_config *next = gw_config_load(m->config_path, &errs);
	if (!next) {
		gw_sd_notify("READY=1\nSTATUS=reload refused: configuration errors");
		gw_err("SIGHUP: %s has errors; keeping the running configuration:", m->config_path);
		for (size_t i = 0; i < errs.count; i++)
			gw_err("  %s", errs.list[i].text);
		gw_conf_errors_clear(&errs);
		return;
	}
	if (!gw_config_reloadable(m->cfg, next, &changes, &errs)) {
		gw_sd_notify("READY=1\nSTATUS=reload refused: changes need a restart");
		gw_err("SIGHUP: these changes need a restart; keeping the running configuration:");
		for (size_t i = 0; i < errs.count; i++)
			gw_err("  %s", errs.list[i].text);
		gw_conf_errors_clear(&errs);
		gw_config_free(next);
		return;
	}
	gw_conf_errors_clear(&errs);
	char err[768];
	if (gw_workers_reload(m->ws, next, err, sizeof(err)) != 0) {
		gw_sd_notify("READY=1\nSTATUS=reload refused: a rule file does not load");
		gw_err("SIGHUP: %s; keeping the running configuration", err);
		gw_config_free(next);
		return;
	}
	apply_logging(next);
	if (m->stats)
		gw_stats_http_set_max_connections(m->stats, next->stats_max_connections);
	gw_config_free(m->cfg);
	m->cfg = next;
	gw_info("SIGHUP: configuration reloaded (changes %#x)", changes);
	gw_sd_notify("READY=1\nSTATUS=configuration reloaded");
}

static int run_gateway(struct gw_main *m)
{
	char err[768];

	apply_logging(m->cfg);
	signal(SIGPIPE, SIG_IGN);
	m->base = event_base_new();
	if (!m->base) {
		gw_err("cannot create the event loop");
		return 1;
	}
	m->ws = gw_workers_start(m->base, m->cfg, err, sizeof(err));
	if (!m->ws) {
		gw_err("%s", err);
		event_base_free(m->base);
		return 1;
	}
	if (m->cfg->stats_enabled) {
		m->stats =
			gw_stats_http_start(m->base, (const struct sockaddr *)&m->cfg->stats_addr,
					    m->cfg->stats_addrlen, gw_workers_snapshot, m->ws);
		if (!m->stats) {
			gw_err("cannot serve statistics on %s", m->cfg->stats_text);
			gw_workers_stop(m->ws);
			event_base_free(m->base);
			return 1;
		}
		gw_stats_http_set_max_connections(m->stats, m->cfg->stats_max_connections);
	}
	m->sig_term = evsignal_new(m->base, SIGTERM, on_stop_signal, m);
	m->sig_int = evsignal_new(m->base, SIGINT, on_stop_signal, m);
	m->sig_hup = evsignal_new(m->base, SIGHUP, on_reload_signal, m);
	evsignal_add(m->sig_term, NULL);
	evsignal_add(m->sig_int, NULL);
	evsignal_add(m->sig_hup, NULL);
	gw_info("rpcrdma-gw %s running with %zu routes from %s", GW_VERSION, m->cfg->routes_count,
		m->config_path);
	/* Listeners are up: systemd (Type=notify) may start what depends on us. */
	gw_sd_notifyf("READY=1\nSTATUS=%zu routes", m->cfg->routes_count);

	event_base_dispatch(m->base);

	event_free(m->sig_term);
	event_free(m->sig_int);
	event_free(m->sig_hup);
	if (m->drain_ev)
		event_free(m->drain_ev);
	gw_stats_http_stop(m->stats);
	gw_workers_stop(m->ws);
	event_base_free(m->base);
	return 0;
}

static int run_check(const char *path)
{
	struct gw_conf_errors errs;

	gw_conf_errors_init(&errs);
	const struct gw_config *cfg = gw_config_load(path, &errs);
	if (!cfg) {
		gw_conf_errors_print(stderr, &errs);
		gw_conf_errors_clear(&errs);
		return 1;
	}
	/* The rule files too: a broken one would stop the gateway at start-up. */
	char err[768];
	if (gw_engine_check_rules(cfg, err, sizeof(err)) != 0) {
		fprintf(stderr, "%s: %s\n", path, err);
		gw_config_free(cfg);
		return 1;
	}
	printf("%s: valid (%zu routes)\n", path, cfg->routes_count);
	/* Which way each route offers plain NFSv3, and what is missing when it cannot. */
	for (size_t i = 0; i < cfg->routes_count; i++) {
		char line[512];
		bool can = gw_side_describe(&cfg->routes[i], NULL, line, sizeof(line));
		fprintf(can ? stdout : stderr, "%s%s\n", can ? "" : "warning: ", line);
	}
	gw_config_free(cfg);
	return 0;
}

static int run_probe(const char *url, unsigned timeout_ms)
{
	struct gw_endpoint ep;
	char err[256];

	if (gw_endpoint_parse(url, GW_TRANSPORT_RDMA, &ep, err, sizeof(err)) != 0) {
		fprintf(stderr, "rpcrdma-gw: --probe: %s\n", err);
		return 2;
	}
	struct gw_probe_options opt = {
		.dst = (const struct sockaddr *)&ep.addr,
		.dst_text = url,
		.timeout_ms = timeout_ms,
		.program = 100003,
		.version = 3,
	};
	gw_log_set_level(GW_LOG_WARN);
	int rc = gw_probe_run(&opt, stdout);
	gw_endpoint_free(&ep);
	return rc;
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "config", required_argument, NULL, 'c' },
		{ "check", no_argument, NULL, 'k' },
		{ "probe", required_argument, NULL, 'p' },
		{ "timeout", required_argument, NULL, 't' },
		{ "version", no_argument, NULL, 'V' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct gw_main m = { 0 };
	const char *probe = NULL;
	bool check = false;
	unsigned timeout_ms = 10000;
	int opt;

	/* A subcommand: the live view of a running gateway, from its stats endpoint. */
	if (argc > 1 && strcmp(argv[1], "stat") == 0)
		return gw_stat_main(argc - 1, argv + 1);
	while ((opt = getopt_long(argc, argv, "c:Vh", longopts, NULL)) != -1) {
		switch (opt) {
		case 'c':
			m.config_path = optarg;
			break;
		case 'k':
			check = true;
			break;
		case 'p':
			probe = optarg;
			break;
		case 't': {
			char *end;
			unsigned long v = strtoul(optarg, &end, 10);
			if (*end || v == 0 || v > 3600000) {
				fprintf(stderr, "rpcrdma-gw: --timeout: expected milliseconds, "
						"1..3600000\n");
				return 2;
			}
			timeout_ms = (unsigned)v;
			break;
		}
		case 'V':
			printf("rpcrdma-gw %s\n", GW_VERSION);
			return 0;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "rpcrdma-gw: unexpected argument '%s'\n", argv[optind]);
		usage(stderr);
		return 2;
	}
	if (probe)
		return run_probe(probe, timeout_ms);
	if (!m.config_path) {
		fprintf(stderr, "rpcrdma-gw: a configuration file is needed (-c FILE)\n");
		usage(stderr);
		return 2;
	}
	if (check)
		return run_check(m.config_path);

	struct gw_conf_errors errs;
	gw_conf_errors_init(&errs);
	m.cfg = gw_config_load(m.config_path, &errs);
	if (!m.cfg) {
		gw_conf_errors_print(stderr, &errs);
		gw_conf_errors_clear(&errs);
		return 1;
	}
	int rc = run_gateway(&m);
	gw_config_free(m.cfg);
	return rc;
}
