/* SPDX-License-Identifier: MIT */
/*
 * bench_stats: what a scrape of the stats endpoint (gateway/stats/stats_http.h)
 * costs the data path, at 480 and 4,096 live sessions (issue 32 item 6).
 *
 * The endpoint runs on a loopback port of its own thread, against a fake
 * gateway of two routes (one forward, shared, with an NLM relay; one reverse)
 * whose sessions each carry the counters of a busy NFSv3 client: eight
 * procedures, four latency histograms with samples over a dozen buckets,
 * bytes and a few events. The fake's snapshot function plays the part of
 * gateway/workers.c's: the time inside it is the time the other workers are
 * parked. Clients are threads with blocking sockets.
 *
 *   - one request at a time, for each document: the time parked, the time of
 *     the request as the client sees it (walk, copy and render, and reading the
 *     answer over loopback), the document's size; each request waits long
 *     enough not to be answered from the endpoint's last document;
 *   - a flood: 32 connections asking for /stats back to back for 2 s: the
 *     answers, the walks, the share of the time the workers were parked, and
 *     the CPU time of the endpoint's own thread (worker 0's loop, which also
 *     renders and sends) over that time.
 *
 * Usage: bench_stats [SESSIONS...]   (default 480 4096)
 *        BENCH_STATS_VERBOSE=1 prints every request's park and time.
 *
 * It uses only the endpoint's interface, so the same file builds against an
 * older tree for a before/after comparison. Build with
 * -DCMAKE_BUILD_TYPE=Release: figures from the Asan build measure the
 * sanitizers. It prints figures; it never passes or fails on speed.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <event2/event.h>

#include "common/log.h"
#include "gateway/counters/counters.h"
#include "gateway/stats/stats_http.h"

enum {
	ROUTES = 2,
	REPEATS = 7,	  /* single requests per document; the median is shown */
	FLOOD_CONNS = 32, /* stats.max_connections' default */
	FLOOD_MS = 2000,
};

struct fake_session {
	struct gw_counters c;
	char client[48];
};

struct fake_route {
	struct gw_stats_route r;
	struct gw_counters totals;
	struct gw_hist *proc_upstream_us; /* [GW_PROC_SLOTS] */
	struct gw_stats_shared shared;
	struct gw_stats_nlm nlm;
	struct fake_session *sessions;
	unsigned nsessions;
};

struct fake {
	struct fake_route routes[ROUTES];
	struct gw_stats_device dev;
	/* the server's thread writes, the clients' read */
	atomic_uint_fast64_t parked_ns, parked_max_ns, walks;
};

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* NFSv3: GETATTR, LOOKUP, ACCESS, READ, WRITE, READDIRPLUS, FSSTAT, COMMIT. */
static const uint32_t nfs3_procs[] = { 1, 3, 4, 6, 7, 17, 18, 21 };

static void fill_session(struct gw_counters *c, unsigned i)
{
	for (size_t p = 0; p < sizeof(nfs3_procs) / sizeof(nfs3_procs[0]); p++) {
		for (unsigned k = 0; k <= (i + p) % 5; k++) {
			gw_counters_count_call(c, 100003, 3, nfs3_procs[p]);
			gw_counters_count_reply(c, 100003, 3, nfs3_procs[p]);
		}
	}
	c->calls = c->replies = 1000 + i;
	c->bytes_inline = 4096ull * i;
	c->bytes_read_chunk = 1048576ull * (i % 7);
	c->bytes_write_chunk = 1048576ull * (i % 5);
	c->tcp_bytes_in = 300000ull + i;
	c->tcp_bytes_out = 200000ull + i;
	c->sessions_opened = 1;
	c->events[GW_EV_RETRANSMIT_ABSORBED] = i % 3;
	c->events[GW_EV_CONNECTION_LOST] = i % 2;
	for (unsigned b = 0; b < 14; b++) {
		gw_hist_add(&c->gateway_us, 1ull << (b % 8));
		gw_hist_add(&c->upstream_us, 8ull << b);
		gw_hist_add(&c->socket_us, 1ull << (b % 6));
		gw_hist_add(&c->queue_us, 2ull << (b % 10));
	}
}

static int fake_init(struct fake *f, unsigned nsessions)
{
	static const char *const names[ROUTES] = { "nfs-fwd", "nfs-rev" };
	static const char *const modes[ROUTES] = { "forward", "reverse" };
	static const char *const listens[ROUTES] = { "0.0.0.0:2049", "[::]:20049" };
	static const char *const upstreams[ROUTES] = { "192.168.1.10:20049", "192.168.1.11:2049" };

	memset(f, 0, sizeof(*f));
	for (unsigned k = 0; k < ROUTES; k++) {
		struct fake_route *fr = &f->routes[k];
		fr->nsessions = nsessions / ROUTES + (k < nsessions % ROUTES);
		fr->sessions = calloc(fr->nsessions ? fr->nsessions : 1, sizeof(*fr->sessions));
		fr->proc_upstream_us = calloc(GW_PROC_SLOTS, sizeof(*fr->proc_upstream_us));
		if (!fr->sessions || !fr->proc_upstream_us ||
		    gw_counters_reserve_procs(&fr->totals) != 0)
			return -1;
		for (unsigned i = 0; i < fr->nsessions; i++) {
			struct fake_session *s = &fr->sessions[i];
			unsigned n = k * 100000 + i;
			fill_session(&s->c, n);
			snprintf(s->client, sizeof(s->client), "10.%u.%u.%u:%u", k, (i >> 8) & 255,
				 i & 255, 700 + i % 300);
			gw_counters_add(&fr->totals, &s->c);
		}
		unsigned nslots;
		const struct gw_proc_count *procs = gw_counters_procs(&fr->totals, &nslots);
		for (unsigned j = 0; j < nslots; j++) {
			for (unsigned b = 0; procs[j].used && b < 12; b++)
				gw_hist_add(&fr->proc_upstream_us[j], 16ull << b);
		}
		fr->r = (struct gw_stats_route){ .name = names[k],
						 .mode = modes[k],
						 .listen = listens[k],
						 .upstream = upstreams[k],
						 .totals = &fr->totals,
						 .proc_upstream_us = fr->proc_upstream_us,
						 .live_sessions = fr->nsessions };
	}
	struct fake_route *a = &f->routes[0];
	a->shared.nchannels = 2;
	a->shared.channels[0] = (struct gw_stats_channel){
		.state = "ready", .credits_granted = 128, .calls_in_flight = 9, .clients = 100
	};
	a->shared.channels[1] = (struct gw_stats_channel){
		.state = "ready", .credits_granted = 128, .calls_in_flight = 7, .clients = 100
	};
	a->shared.xid_entries = 16384;
	a->r.shared = &a->shared;
	a->nlm.clients = 40;
	a->nlm.locks = 200;
	a->r.nlm = &a->nlm;
	f->dev = (struct gw_stats_device){ .name = "mlx5_0",
					   .bytes_registered = 64u << 20,
					   .buffers_in_use = 300,
					   .buffers_total = 4096 };
	return 0;
}

static void fake_fini(struct fake *f)
{
	for (unsigned k = 0; k < ROUTES; k++) {
		struct fake_route *fr = &f->routes[k];
		for (unsigned i = 0; fr->sessions && i < fr->nsessions; i++)
			gw_counters_release(&fr->sessions[i].c);
		gw_counters_release(&fr->totals);
		free(fr->sessions);
		free(fr->proc_upstream_us);
	}
}

/* The walk, as gw_engines_snapshot() makes it; the time inside is the time parked. */
static void fake_snapshot(void *arg, struct gw_stats_visitor *v)
{
	struct fake *f = arg;
	uint64_t t0 = now_ns();

	for (unsigned k = 0; k < ROUTES; k++) {
		struct fake_route *fr = &f->routes[k];
		struct gw_stats_route r = fr->r;
		v->route(v, &r);
		for (unsigned i = 0; i < fr->nsessions; i++) {
			struct fake_session *s = &fr->sessions[i];
			struct gw_stats_session ss = {
				.id = (uint64_t)k << 32 | i,
				.client = s->client,
				.upstream = fr->r.upstream,
				.state = "ready",
				.age_ms = 60000 + i,
				.counters = &s->c,
				.credits = { 128, i % 9, 0, 8, i % 2 },
				.inline_send = 4096,
				.inline_recv = 4096,
				.rpcrdma_version = 1,
				.read_yields = i % 4,
				.worker = i % 2,
			};
			v->session(v, &ss);
		}
	}
	v->device(v, &f->dev);
	uint64_t dt = now_ns() - t0;
	atomic_fetch_add(&f->parked_ns, dt);
	atomic_fetch_add(&f->walks, 1);
	uint64_t max = atomic_load(&f->parked_max_ns);
	while (dt > max && !atomic_compare_exchange_weak(&f->parked_max_ns, &max, dt))
		;
}

/* ---- the endpoint on a thread of its own ---- */

struct server {
	struct event_base *base;
	struct gw_stats_http *sh;
	struct sockaddr_storage addr;
	socklen_t addrlen;
	struct event *check;
	atomic_bool stop;
	pthread_t thread;
};

static void server_check(evutil_socket_t fd, short what, void *arg)
{
	struct server *s = arg;

	(void)fd;
	(void)what;
	if (atomic_load(&s->stop))
		event_base_loopbreak(s->base);
}

static void *server_main(void *arg)
{
	struct server *s = arg;

	event_base_dispatch(s->base);
	return NULL;
}

static int server_start(struct server *s, struct fake *f)
{
	struct sockaddr_in sin = { .sin_family = AF_INET };
	struct timeval tick = { 0, 20000 };

	memset(s, 0, sizeof(*s));
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	s->base = event_base_new();
	if (!s->base)
		return -1;
	s->sh = gw_stats_http_start(s->base, (struct sockaddr *)&sin, sizeof(sin), fake_snapshot,
				    f);
	if (!s->sh)
		return -1;
	gw_stats_http_set_max_connections(s->sh, FLOOD_CONNS + 1);
	s->addrlen = gw_stats_http_local_addr(s->sh, &s->addr);
	s->check = event_new(s->base, -1, EV_PERSIST, server_check, s);
	if (!s->addrlen || !s->check || event_add(s->check, &tick) != 0)
		return -1;
	return pthread_create(&s->thread, NULL, server_main, s) == 0 ? 0 : -1;
}

static void server_stop(struct server *s)
{
	atomic_store(&s->stop, true);
	pthread_join(s->thread, NULL);
	event_free(s->check);
	gw_stats_http_stop(s->sh);
	event_base_free(s->base);
}

/* GET @target on a fresh connection, read to the end: the body's bytes, or 0 on failure. */
static size_t fetch(const struct server *s, const char *target)
{
	char req[256], buf[65536];
	size_t got = 0;
	ssize_t n;
	int fd = socket(s->addr.ss_family, SOCK_STREAM, 0);

	if (fd < 0)
		return 0;
	snprintf(req, sizeof(req), "GET %s HTTP/1.1\r\nHost: b\r\nConnection: close\r\n\r\n",
		 target);
	if (connect(fd, (const struct sockaddr *)&s->addr, s->addrlen) != 0 ||
	    write(fd, req, strlen(req)) != (ssize_t)strlen(req)) {
		close(fd);
		return 0;
	}
	while ((n = read(fd, buf, sizeof(buf))) > 0) {
		if (got == 0 && strncmp(buf, "HTTP/1.1 200", 12) != 0)
			break;
		got += (size_t)n;
	}
	close(fd);
	return got;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/*
 * @target REPEATS times, each past the time the endpoint may reuse the last
 * document (ten times its cost, at most a second). The first request is
 * shown apart: a copy that has no room prepared yet measures, then copies.
 */
static void single_requests(const struct server *s, struct fake *f, const char *target)
{
	uint64_t parked[REPEATS], took[REPEATS], walks = atomic_load(&f->walks);
	size_t bytes = 0;

	for (int i = 0; i < REPEATS; i++) {
		uint64_t p0 = atomic_load(&f->parked_ns), w0 = atomic_load(&f->walks);
		uint64_t t0 = now_ns();
		bytes = fetch(s, target);
		took[i] = now_ns() - t0;
		parked[i] = atomic_load(&f->parked_ns) - p0;
		if (!bytes || atomic_load(&f->walks) == w0) {
			printf("  %-22s failed (answered %zu bytes, %u walks)\n", target, bytes,
			       (unsigned)(atomic_load(&f->walks) - w0));
			return;
		}
		uint64_t wait = 10 * took[i] + 20000000u;
		struct timespec ts = { 0, 0 };
		if (wait > 1050000000u)
			wait = 1050000000u;
		ts.tv_sec = (time_t)(wait / 1000000000u);
		ts.tv_nsec = (long)(wait % 1000000000u);
		nanosleep(&ts, NULL);
	}
	walks = atomic_load(&f->walks) - walks;
	if (getenv("BENCH_STATS_VERBOSE")) {
		for (int i = 0; i < REPEATS; i++)
			printf("    %.2f/%.2f", parked[i] / 1e6, took[i] / 1e6);
		printf("\n");
	}
	double first = parked[0] / 1e6;
	qsort(parked + 1, REPEATS - 1, sizeof(parked[0]), cmp_u64);
	qsort(took + 1, REPEATS - 1, sizeof(took[0]), cmp_u64);
	printf("  %-22s %6u %9.2f %9.2f %9.2f %9.2f %9.2f %9.0f\n", target, (unsigned)walks, first,
	       parked[REPEATS / 2] / 1e6, parked[REPEATS - 1] / 1e6, took[REPEATS / 2] / 1e6,
	       took[REPEATS - 1] / 1e6, bytes / 1024.0);
}

struct flooder {
	pthread_t thread;
	const struct server *s;
	uint64_t until;
	unsigned answers, failures;
};

static void *flooder_main(void *arg)
{
	struct flooder *fl = arg;

	while (now_ns() < fl->until) {
		if (fetch(fl->s, "/stats"))
			fl->answers++;
		else
			fl->failures++;
	}
	return NULL;
}

/* CPU time of the endpoint's thread: worker 0's loop, which renders and sends. */
static uint64_t server_cpu_ns(const struct server *s)
{
	struct timespec ts;
	clockid_t clk;

	if (pthread_getcpuclockid(s->thread, &clk) != 0 || clock_gettime(clk, &ts) != 0)
		return 0;
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void flood(const struct server *s, struct fake *f)
{
	struct flooder fl[FLOOD_CONNS];
	unsigned answers = 0, failures = 0;
	uint64_t p0 = atomic_load(&f->parked_ns), w0 = atomic_load(&f->walks);
	uint64_t c0 = server_cpu_ns(s);
	uint64_t t0 = now_ns();

	atomic_store(&f->parked_max_ns, 0);
	for (int i = 0; i < FLOOD_CONNS; i++) {
		fl[i] = (struct flooder){ .s = s, .until = t0 + FLOOD_MS * 1000000ull };
		if (pthread_create(&fl[i].thread, NULL, flooder_main, &fl[i]) != 0) {
			fprintf(stderr, "bench_stats: cannot start a client thread\n");
			exit(1);
		}
	}
	for (int i = 0; i < FLOOD_CONNS; i++) {
		pthread_join(fl[i].thread, NULL);
		answers += fl[i].answers;
		failures += fl[i].failures;
	}
	double wall = (double)(now_ns() - t0);
	double parked = (double)(atomic_load(&f->parked_ns) - p0);
	double cpu = (double)(server_cpu_ns(s) - c0);
	printf("  flood: %d connections, GET /stats back to back for %.1f s: %u answers "
	       "(%u failed), %u walks; workers parked %.1f %% of the time, longest park "
	       "%.2f ms; worker 0's thread busy %.0f %%\n",
	       FLOOD_CONNS, wall / 1e9, answers, failures, (unsigned)(atomic_load(&f->walks) - w0),
	       100.0 * parked / wall, atomic_load(&f->parked_max_ns) / 1e6, 100.0 * cpu / wall);
}

static int bench(unsigned nsessions)
{
	static const char *const targets[] = { "/stats", "/stats?sessions=0", "/metrics",
					       "/metrics?sessions=1" };
	struct fake *f = malloc(sizeof(*f));
	struct server s;

	if (!f || fake_init(f, nsessions) != 0 || server_start(&s, f) != 0) {
		fprintf(stderr, "bench_stats: cannot set up %u sessions\n", nsessions);
		return 1;
	}
	printf("%u sessions (%u routes), one request at a time, %d each; times in ms (median and "
	       "longest of the requests after the first), size in KiB:\n",
	       nsessions, ROUTES, REPEATS);
	printf("  %-22s %6s %9s %9s %9s %9s %9s %9s\n", "document", "walks", "1st park", "parked",
	       "max", "request", "max", "size");
	for (size_t i = 0; i < sizeof(targets) / sizeof(targets[0]); i++)
		single_requests(&s, f, targets[i]);
	flood(&s, f);
	server_stop(&s);
	fake_fini(f);
	free(f);
	return 0;
}

int main(int argc, char **argv)
{
	unsigned def[] = { 480, 4096 };
	int rc = 0;

	gw_log_set_level(GW_LOG_ERR);
	if (argc > 1) {
		for (int i = 1; i < argc; i++)
			rc |= bench((unsigned)strtoul(argv[i], NULL, 10));
	} else {
		for (size_t i = 0; i < sizeof(def) / sizeof(def[0]); i++)
			rc |= bench(def[i]);
	}
	return rc;
}
