/* SPDX-License-Identifier: MIT */
/*
 * The stats endpoint against a fake engine, on a real event loop, fetched by
 * a real HTTP client (a plain socket). The Prometheus exposition is read
 * back by prometheus_client's own parser, and every value checked against
 * the fake counters.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>

#include <event2/event.h>
#include <jansson.h>

#include "common/log.h"
#include "common/version.h"
#include "gateway/counters/counters.h"
#include "gateway/stats/stats_http.h"

#include "support/loop.h"

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

/* ---- a fake engine ---------------------------------------------------------- */

struct fake_session {
	struct gw_stats_session s;
	struct gw_counters c;
};

struct fake_route {
	struct gw_stats_route r;
	struct gw_stats_shared shared;
	struct gw_stats_nlm nlm;
	struct gw_counters totals;
	struct gw_hist proc_upstream_us[GW_PROC_SLOTS];
	struct fake_session sessions[2];
	unsigned nsessions;
};

struct fake_engine {
	struct fake_route routes[2];
	unsigned nroutes;
	struct gw_stats_device devices[2];
	unsigned ndevices;
	unsigned walks;
};

/* The second route's name needs every escape of the text format. */
static const char weird_name[] = "we\"ird\\route\nx";

/*
 * The engine may hand out temporaries: one struct is reused for every route
 * and one for every session, so a renderer that kept a pointer past its
 * callback would show the wrong route's values.
 */
static void fake_snapshot(void *arg, struct gw_stats_visitor *v)
{
	struct fake_engine *e = arg;
	struct gw_stats_route r;
	struct gw_stats_session s;

	e->walks++;
	for (unsigned i = 0; i < e->nroutes; i++) {
		struct fake_route *fr = &e->routes[i];
		r = fr->r;
		v->route(v, &r);
		for (unsigned j = 0; j < fr->nsessions; j++) {
			s = fr->sessions[j].s;
			v->session(v, &s);
		}
	}
	for (unsigned i = 0; i < e->ndevices; i++) {
		struct gw_stats_device d = e->devices[i];
		v->device(v, &d);
	}
}

static void fill_route_totals(struct gw_counters *c)
{
	c->calls = 1003;
	c->replies = 990;
	c->backward_calls = 5;
	c->backward_replies = 4;
	c->calls_queued_for_credits = 17;
	c->remote_invalidations = 29;
	c->bytes_inline = 123456;
	c->bytes_read_chunk = 1ull << 30;
	c->bytes_write_chunk = 3ull << 30;
	c->bytes_reply_chunk = 12288;
	c->tcp_bytes_in = 999;
	c->tcp_bytes_out = 888;
	c->sessions_opened = 7;
	c->sessions_closed = 5;
	c->events[GW_EV_ERR_VERS_SENT] = 2;
	c->events[GW_EV_ERR_CHUNK_SENT] = 6;
	c->events[GW_EV_MALFORMED_RECORD] = 3;
	c->events[GW_EV_REFUSED_CLIENT] = 4;
	c->events[GW_EV_UPSTREAM_RECONNECT] = 1;
	const uint64_t gw_samples[] = { 1, 2, 3, 1000, 5000000 };
	for (size_t i = 0; i < ARRAY_SIZE(gw_samples); i++)
		gw_hist_add(&c->gateway_us, gw_samples[i]);
	const uint64_t up_samples[] = { 100, 200, 300 };
	for (size_t i = 0; i < ARRAY_SIZE(up_samples); i++)
		gw_hist_add(&c->upstream_us, up_samples[i]);

	struct gw_proc_count *p = gw_counters_proc(c, 100003, 3, 6); /* READ */
	p->calls = 600;
	p->replies = 598;
	p = gw_counters_proc(c, 100003, 3, 7); /* WRITE */
	p->calls = 300;
	p->replies = 290;
	p = gw_counters_proc(c, 400000, 1, 7); /* nobody we know */
	p->calls = 40;
	p->replies = 40;
	p = gw_counters_proc(c, 100021, 4, 2); /* NLM LOCK */
	p->calls = 10;
	p->replies = 10;
	p = gw_counters_proc(c, 100003, 4, 1); /* COMPOUND */
	p->calls = 50;
	p->replies = 50;
	c->procs_other_calls = 3;
	c->procs_other_replies = 2;
}

static void fake_engine_init(struct fake_engine *e)
{
	memset(e, 0, sizeof(*e));
	e->nroutes = 2;

	struct fake_route *a = &e->routes[0];
	fill_route_totals(&a->totals);
	a->r = (struct gw_stats_route){ .name = "nfs-fwd",
					.mode = "forward",
					.listen = "0.0.0.0:2049",
					.upstream = "192.168.1.10:20049",
					.totals = &a->totals,
					.proc_upstream_us = a->proc_upstream_us,
					.live_sessions = 2 };
	/* Two shared upstream connections, the second lost and not yet made again. */
	a->shared = (struct gw_stats_shared){ .nchannels = 2,
					      .xid_entries = 61440,
					      .xid_in_flight = 3,
					      .xid_answered = 250,
					      .xid_new = 1000,
					      .xid_retransmit_in_flight = 2,
					      .xid_retransmit_answered = 1,
					      .xid_expired = 700,
					      .xid_stray = 5 };
	a->shared.channels[0] = (struct gw_stats_channel){ .state = "ready",
							   .credits_granted = 64,
							   .calls_in_flight = 3,
							   .calls_queued = 7,
							   .clients = 4,
							   .stalls = 11 };
	a->shared.channels[1] = (struct gw_stats_channel){ .state = "closed",
							   .reconnects = 2,
							   .reconnect_failures = 1,
							   .calls_resent = 9,
							   .calls_orphaned = 6,
							   .cq_yields = 14 };
	a->shared.bc_kept_now = 2;
	a->shared.bc_kept = 31;
	a->shared.bc_adopted = 32;
	a->shared.bc_expired = 33;
	a->shared.bc_replaced = 34;
	a->shared.bc_dropped = 35;
	a->r.shared = &a->shared;
	/* Its calls waited in the fair queue 50 us and 3 ms; session 11's was the 3 ms one. */
	gw_hist_add(&a->totals.queue_us, 50);
	gw_hist_add(&a->totals.queue_us, 3000);
	/* Its calls waited in their sockets 7 us and 900 us; session 11's was the 900. */
	gw_hist_add(&a->totals.socket_us, 7);
	gw_hist_add(&a->totals.socket_us, 900);
	/* An NLM relay holding two clients' locks; every figure differs. */
	a->nlm = (struct gw_stats_nlm){ .clients = 2,
					.owners = 3,
					.locks = 5,
					.callbacks_pending = 1,
					.clients_full = 6,
					.owners_full = 7,
					.locks_full = 8,
					.client_locks_full = 9,
					.oh_too_long = 10,
					.stale_owner = 12,
					.client_owners_full = 71,
					.client_prefix_full = 73,
					.cb_relayed = 13,
					.cb_granted = 14,
					.cb_stale = 15,
					.cb_full = 16,
					.cb_timed_out = 17,
					.cb_not_from_server = 18,
					.async_pending = 19,
					.async_sent = 20,
					.async_delivered = 21,
					.async_full = 22,
					.async_unknown_cookie = 23,
					.async_from_client = 24,
					.async_timed_out = 25,
					.async_refused_client_cap = 26,
					.async_late_given_back = 27,
					.notify_pending = 2,
					.sn_received = 19,
					.sn_repeated = 20,
					.sn_delivered = 21,
					.sn_not_delivered = 22,
					.sn_not_from_server = 23,
					.sn_clients_full = 24,
					.gr_state = 1001,
					.gr_persisted = 1,
					.gr_sent = 3,
					.gr_delivered = 1,
					.gr_clients_told = 2,
					.gr_clients_delivered = 4,
					.gr_reclaims_converted = 5,
					.gr_grace_refused = 6,
					.rel_pending = 31,
					.rel_in_flight = 16,
					.rel_queued = 300,
					.rel_done = 260,
					.rel_retried = 12,
					.rel_given_up = 9,
					.rel_full = 4 };
	a->r.nlm = &a->nlm;
	/* READ answered twice by the upstream, in 100 and 300 us; WRITE never timed */
	struct gw_proc_count *read = gw_counters_proc(&a->totals, 100003, 3, 6);
	unsigned nslots;
	size_t slot = (size_t)(read - gw_counters_procs(&a->totals, &nslots));
	gw_hist_add(&a->proc_upstream_us[slot], 100);
	gw_hist_add(&a->proc_upstream_us[slot], 300);
	a->nsessions = 2;

	struct fake_session *s = &a->sessions[0];
	s->c.calls = 600;
	s->c.replies = 597;
	s->c.backward_calls = 2;
	s->c.bytes_read_chunk = 1 << 20;
	s->c.tcp_bytes_in = 77;
	s->c.events[GW_EV_RETRANSMIT_ABSORBED] = 2;
	gw_hist_add(&s->c.gateway_us, 40);
	gw_hist_add(&s->c.queue_us, 3000);
	gw_hist_add(&s->c.socket_us, 900);
	gw_counters_proc(&s->c, 100003, 3, 6)->calls = 600;
	s->s = (struct gw_stats_session){ .id = 11,
					  .client = "10.0.0.1:801",
					  .upstream = "192.168.1.10:20049",
					  .state = "ready",
					  .age_ms = 1500,
					  .counters = &s->c,
					  .credits = { 128, 3, 0, 8, 1 },
					  .inline_send = 4096,
					  .inline_recv = 4096,
					  .rpcrdma_version = 2,
					  .read_yields = 23 };

	s = &a->sessions[1];
	s->c.calls = 2;
	s->s = (struct gw_stats_session){ .id = 12,
					  .client = "[fe80::1]:802",
					  .upstream = "",
					  .state = "connecting",
					  .age_ms = 20,
					  .counters = &s->c,
					  .credits = { 1, 1, 2, 0, 0 },
					  .inline_send = 1024,
					  .inline_recv = 1024 };

	struct fake_route *b = &e->routes[1];
	b->totals.calls = 42;
	b->totals.replies = 41;
	b->totals.events[GW_EV_CREDIT_OVERRUN] = 9;
	gw_hist_add(&b->totals.upstream_us, 2);
	b->r = (struct gw_stats_route){ .name = weird_name,
					.mode = "reverse",
					.listen = "[::]:20049",
					.upstream = "nfs.example:2049",
					.totals = &b->totals,
					.live_sessions = 0 };

	e->ndevices = 2;
	e->devices[0] = (struct gw_stats_device){ .name = "rxe0",
						  .bytes_registered = 75ull << 20,
						  .alloc_failures = 3,
						  .buffers_in_use = 130,
						  .buffers_total = 1088 };
	e->devices[1] = (struct gw_stats_device){ .name = "mlx5_1", .buffers_total = 64 };
}

/* ---- an HTTP client ---------------------------------------------------------- */

struct fixture {
	struct event_base *base;
	struct fake_engine engine;
	struct gw_stats_http *sh;
	struct sockaddr_storage addr;
	socklen_t addrlen;
};

struct answer {
	int status;
	char *head; /* status line and headers */
	char *body;
	size_t body_len;
};

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int connect_to(const struct fixture *f)
{
	int fd = socket(f->addr.ss_family, SOCK_STREAM, 0);

	assert_true(fd >= 0);
	/* loopback: the handshake completes in the kernel, before any accept() */
	assert_int_equal(connect(fd, (const struct sockaddr *)&f->addr, f->addrlen), 0);
	return fd;
}

static void send_all(int fd, const char *text)
{
	size_t len = strlen(text);

	while (len) {
		ssize_t n = send(fd, text, len, MSG_NOSIGNAL);
		assert_true(n > 0);
		text += n;
		len -= (size_t)n;
	}
}

/*
 * Turn the server's loop while waiting for @fd: returns what it read until
 * the server closed the connection (@closed), or what came by @timeout_s.
 */
static char *pump_and_read(struct event_base *base, int fd, double timeout_s, size_t *len,
			   bool *closed)
{
	size_t cap = 4096, n = 0;
	char *buf = malloc(cap);
	double deadline = now_s() + timeout_s;

	assert_non_null(buf);
	*closed = false;
	while (now_s() < deadline) {
		struct pollfd pfd = { .fd = fd, .events = POLLIN };

		event_base_loop(base, EVLOOP_NONBLOCK);
		if (poll(&pfd, 1, 5) <= 0)
			continue;
		if (cap - n < 2048) {
			cap *= 2;
			buf = realloc(buf, cap);
			assert_non_null(buf);
		}
		ssize_t got = recv(fd, buf + n, cap - n - 1, MSG_DONTWAIT);
		if (got == 0 || (got < 0 && errno == ECONNRESET)) {
			*closed = true;
			break;
		}
		if (got < 0) {
			assert_true(errno == EAGAIN || errno == EINTR);
			continue;
		}
		n += (size_t)got;
	}
	buf[n] = '\0';
	*len = n;
	return buf;
}

static void parse_answer(char *raw, size_t len, struct answer *a)
{
	char *end = strstr(raw, "\r\n\r\n");

	assert_non_null(end);
	*end = '\0';
	a->head = raw;
	a->body = end + 4;
	a->body_len = len - (size_t)(a->body - raw);
	assert_int_equal(sscanf(raw, "HTTP/1.%*d %d", &a->status), 1);
}

/* One request on a fresh connection; the server closes it after answering. */
static void fetch_raw(struct fixture *f, const char *request, struct answer *a)
{
	int fd = connect_to(f);
	size_t len;
	bool closed;
	char *raw;

	send_all(fd, request);
	raw = pump_and_read(f->base, fd, 10, &len, &closed);
	close(fd);
	assert_true(closed);
	parse_answer(raw, len, a);
}

static void fetch(struct fixture *f, const char *method, const char *target, struct answer *a)
{
	char req[512];

	snprintf(req, sizeof(req),
		 "%s %s HTTP/1.1\r\nHost: localhost\r\nContent-Length: 0\r\n"
		 "Connection: close\r\n\r\n",
		 method, target);
	fetch_raw(f, req, a);
}

static void answer_free(struct answer *a)
{
	free(a->head);
	memset(a, 0, sizeof(*a));
}

/* The value of header @name, or NULL; copied into @out. */
static const char *header(const struct answer *a, const char *name, char *out, size_t size)
{
	size_t nlen = strlen(name);

	for (const char *line = strstr(a->head, "\r\n"); line; line = strstr(line, "\r\n")) {
		line += 2;
		if (strncasecmp(line, name, nlen) == 0 && line[nlen] == ':') {
			const char *v = line + nlen + 1;
			size_t vlen;
			v += strspn(v, " ");
			vlen = strcspn(v, "\r");
			if (vlen >= size)
				vlen = size - 1;
			memcpy(out, v, vlen);
			out[vlen] = '\0';
			return out;
		}
	}
	return NULL;
}

/* ---- fixture ------------------------------------------------------------------ */

static struct gw_stats_http *start_on(struct fixture *f, const struct sockaddr *sa, socklen_t len)
{
	struct gw_stats_http *sh = gw_stats_http_start(f->base, sa, len, fake_snapshot, &f->engine);

	if (sh) {
		f->addrlen = gw_stats_http_local_addr(sh, &f->addr);
		assert_true(f->addrlen > 0);
	}
	return sh;
}

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));
	struct sockaddr_in sin = { .sin_family = AF_INET, .sin_port = 0 };

	if (!f)
		return -1;
	gw_log_set_level(GW_LOG_WARN);
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	f->base = event_base_new();
	fake_engine_init(&f->engine);
	f->sh = start_on(f, (struct sockaddr *)&sin, sizeof(sin));
	if (!f->base || !f->sh)
		return -1;
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;

	gw_stats_http_stop(f->sh);
	event_base_free(f->base);
	free(f);
	return 0;
}

/* ---- plain endpoints ------------------------------------------------------------ */

static void test_healthz(void **state)
{
	struct fixture *f = *state;
	struct answer a;
	char v[128];

	fetch(f, "GET", "/healthz", &a);
	assert_int_equal(a.status, 200);
	assert_string_equal(a.body, "ok\n");
	assert_non_null(header(&a, "Content-Type", v, sizeof(v)));
	assert_string_equal(v, "text/plain; charset=utf-8");
	answer_free(&a);
	/* liveness must not cost a walk of every session */
	assert_int_equal(f->engine.walks, 0);
}

static void test_index(void **state)
{
	struct fixture *f = *state;
	struct answer a;

	fetch(f, "GET", "/", &a);
	assert_int_equal(a.status, 200);
	assert_non_null(strstr(a.body, "/stats"));
	assert_non_null(strstr(a.body, "/metrics"));
	assert_non_null(strstr(a.body, "/healthz"));
	answer_free(&a);
}

static void test_not_found(void **state)
{
	struct fixture *f = *state;
	const char *paths[] = { "/nope", "/metricsx", "/stats/", "/METRICS", "/healthz/x" };
	struct answer a;

	for (size_t i = 0; i < ARRAY_SIZE(paths); i++) {
		fetch(f, "GET", paths[i], &a);
		assert_int_equal(a.status, 404);
		answer_free(&a);
	}
	/* an unknown path is unknown whatever the method */
	fetch(f, "POST", "/nope", &a);
	assert_int_equal(a.status, 404);
	answer_free(&a);
	assert_int_equal(f->engine.walks, 0);
}

static void test_method_not_allowed(void **state)
{
	struct fixture *f = *state;
	const char *methods[] = { "POST", "PUT", "DELETE", "HEAD", "OPTIONS", "PATCH" };
	const char *paths[] = { "/stats", "/metrics", "/healthz", "/" };
	struct answer a;
	char v[64];

	for (size_t m = 0; m < ARRAY_SIZE(methods); m++) {
		for (size_t p = 0; p < ARRAY_SIZE(paths); p++) {
			fetch(f, methods[m], paths[p], &a);
			assert_int_equal(a.status, 405);
			assert_non_null(header(&a, "Allow", v, sizeof(v)));
			assert_string_equal(v, "GET");
			answer_free(&a);
		}
	}
	assert_int_equal(f->engine.walks, 0);
}

/* ---- /stats ------------------------------------------------------------------------ */

static json_t *fetch_json(struct fixture *f, const char *target)
{
	struct answer a;
	json_error_t err;
	json_t *root;
	char v[128];

	fetch(f, "GET", target, &a);
	assert_int_equal(a.status, 200);
	assert_non_null(header(&a, "Content-Type", v, sizeof(v)));
	assert_string_equal(v, "application/json");
	root = json_loadb(a.body, a.body_len, 0, &err);
	if (!root)
		fail_msg("/stats is not JSON: %s at %d:%d", err.text, err.line, err.column);
	answer_free(&a);
	return root;
}

static json_int_t jint(json_t *root, const char *path)
{
	json_t *v = root;
	char key[64];

	/* a tiny path walker: "routes.0.totals.calls" */
	for (const char *p = path; *p;) {
		size_t n = strcspn(p, ".");
		assert_true(n < sizeof(key));
		memcpy(key, p, n);
		key[n] = '\0';
		if (json_is_array(v))
			v = json_array_get(v, strtoul(key, NULL, 10));
		else
			v = json_object_get(v, key);
		if (!v)
			fail_msg("no %s in the JSON (at %s)", path, key);
		p += n + (p[n] == '.');
	}
	if (!json_is_integer(v))
		fail_msg("%s is not an integer", path);
	return json_integer_value(v);
}

static const char *jtext(json_t *obj, const char *key)
{
	json_t *v = json_object_get(obj, key);

	if (!json_is_string(v))
		fail_msg("%s is not a string", key);
	return json_string_value(v);
}

static void check_json_hist(json_t *h, const struct gw_hist *want)
{
	json_t *buckets = json_object_get(h, "buckets");
	size_t n = 0;

	assert_int_equal(json_integer_value(json_object_get(h, "count")), want->count);
	assert_int_equal(json_integer_value(json_object_get(h, "sum_us")), want->sum_us);
	for (unsigned i = 0; i < GW_HIST_BUCKETS; i++) {
		if (!want->buckets[i])
			continue;
		json_t *b = json_array_get(buckets, n++);
		assert_non_null(b);
		json_t *le = json_object_get(b, "le_us");
		if (i == GW_HIST_BUCKETS - 1)
			assert_true(json_is_null(le));
		else
			assert_int_equal(json_integer_value(le), gw_hist_bucket_le(i));
		assert_int_equal(json_integer_value(json_object_get(b, "count")), want->buckets[i]);
	}
	assert_int_equal(json_array_size(buckets), n);
}

static void test_stats_json(void **state)
{
	struct fixture *f = *state;
	const struct fake_route *fa = &f->engine.routes[0];
	const struct gw_counters *t = &fa->totals;
	json_t *root = fetch_json(f, "/stats");
	json_t *routes = json_object_get(root, "routes");
	json_t *ra = json_array_get(routes, 0), *rb = json_array_get(routes, 1);

	assert_int_equal(f->engine.walks, 1);
	assert_true(json_is_string(json_object_get(root, "version")));
	assert_int_equal(json_array_size(routes), 2);

	assert_string_equal(jtext(ra, "name"), "nfs-fwd");
	assert_string_equal(jtext(ra, "mode"), "forward");
	assert_string_equal(jtext(ra, "listen"), "0.0.0.0:2049");
	assert_string_equal(jtext(ra, "upstream"), "192.168.1.10:20049");
	assert_int_equal(jint(ra, "live_sessions"), 2);
	assert_int_equal(jint(ra, "totals.calls"), t->calls);
	assert_int_equal(jint(ra, "totals.replies"), t->replies);
	assert_int_equal(jint(ra, "totals.backward_calls"), t->backward_calls);
	assert_int_equal(jint(ra, "totals.backward_replies"), t->backward_replies);
	assert_int_equal(jint(ra, "totals.calls_queued_for_credits"), t->calls_queued_for_credits);
	assert_int_equal(jint(ra, "totals.remote_invalidations"), t->remote_invalidations);
	assert_int_equal(jint(ra, "totals.rdma_bytes.inline"), t->bytes_inline);
	assert_int_equal(jint(ra, "totals.rdma_bytes.read_chunk"), t->bytes_read_chunk);
	assert_int_equal(jint(ra, "totals.rdma_bytes.write_chunk"), t->bytes_write_chunk);
	assert_int_equal(jint(ra, "totals.rdma_bytes.reply_chunk"), t->bytes_reply_chunk);
	assert_int_equal(jint(ra, "totals.tcp_bytes.received"), t->tcp_bytes_in);
	assert_int_equal(jint(ra, "totals.tcp_bytes.sent"), t->tcp_bytes_out);
	assert_int_equal(jint(ra, "totals.sessions_opened"), t->sessions_opened);
	assert_int_equal(jint(ra, "totals.sessions_closed"), t->sessions_closed);
	json_t *events = json_object_get(json_object_get(ra, "totals"), "events");
	assert_int_equal(json_object_size(events), GW_EV_KIND_COUNT);
	for (unsigned k = 0; k < GW_EV_KIND_COUNT; k++)
		assert_int_equal(json_integer_value(json_object_get(events, gw_event_kind_name(k))),
				 t->events[k]);
	assert_int_equal(jint(ra, "totals.events.malformed_record"), 3);

	json_t *latency = json_object_get(json_object_get(ra, "totals"), "latency");
	check_json_hist(json_object_get(latency, "gateway"), &t->gateway_us);
	check_json_hist(json_object_get(latency, "upstream"), &t->upstream_us);

	/* procedures: sorted by program, version, procedure; named where known */
	json_t *procs = json_object_get(json_object_get(ra, "totals"), "procedures");
	static const struct {
		uint32_t prog, vers, proc;
		const char *prog_name, *proc_name;
	} want[] = {
		{ 100003, 3, 6, "nfs", "READ" },     { 100003, 3, 7, "nfs", "WRITE" },
		{ 100003, 4, 1, "nfs", "COMPOUND" }, { 100021, 4, 2, "nlm", "LOCK" },
		{ 400000, 1, 7, NULL, NULL },
	};
	assert_int_equal(json_array_size(procs), ARRAY_SIZE(want));
	for (size_t i = 0; i < ARRAY_SIZE(want); i++) {
		json_t *p = json_array_get(procs, i);
		const struct gw_proc_count *pc = gw_counters_proc(
			(struct gw_counters *)t, want[i].prog, want[i].vers, want[i].proc);
		assert_int_equal(jint(p, "program"), want[i].prog);
		assert_int_equal(jint(p, "version"), want[i].vers);
		assert_int_equal(jint(p, "procedure"), want[i].proc);
		assert_int_equal(jint(p, "calls"), pc->calls);
		assert_int_equal(jint(p, "replies"), pc->replies);
		if (want[i].prog_name) {
			assert_string_equal(jtext(p, "program_name"), want[i].prog_name);
			assert_string_equal(jtext(p, "procedure_name"), want[i].proc_name);
		} else {
			assert_true(json_is_null(json_object_get(p, "program_name")));
			assert_true(json_is_null(json_object_get(p, "procedure_name")));
		}
	}
	/* the upstream's latency by procedure, on the route: READ's two answers, WRITE's none */
	const struct gw_proc_count *read_slot =
		gw_counters_proc((struct gw_counters *)t, 100003, 3, 6);
	unsigned nslots;
	check_json_hist(json_object_get(json_array_get(procs, 0), "upstream_latency"),
			&fa->proc_upstream_us[read_slot - gw_counters_procs(t, &nslots)]);
	assert_int_equal(jint(json_array_get(procs, 0), "upstream_latency.count"), 2);
	assert_int_equal(jint(json_array_get(procs, 1), "upstream_latency.count"), 0);
	assert_int_equal(jint(ra, "totals.procedures_other.calls"), 3);
	assert_int_equal(jint(ra, "totals.procedures_other.replies"), 2);

	/* route credits are the sums over its live sessions */
	assert_int_equal(jint(ra, "credits.granted"), 129);
	assert_int_equal(jint(ra, "credits.in_use"), 4);
	assert_int_equal(jint(ra, "credits.queued"), 2);
	assert_int_equal(jint(ra, "credits.backward_granted"), 8);
	assert_int_equal(jint(ra, "credits.backward_in_use"), 1);

	json_t *sessions = json_object_get(ra, "sessions");
	assert_int_equal(json_array_size(sessions), 2);
	for (unsigned i = 0; i < 2; i++) {
		const struct fake_session *fs = &fa->sessions[i];
		json_t *s = json_array_get(sessions, i);
		assert_int_equal(jint(s, "id"), fs->s.id);
		assert_string_equal(jtext(s, "client"), fs->s.client);
		assert_string_equal(jtext(s, "upstream"), fs->s.upstream);
		assert_string_equal(jtext(s, "state"), fs->s.state);
		assert_int_equal(jint(s, "age_ms"), fs->s.age_ms);
		assert_int_equal(jint(s, "inline_send"), fs->s.inline_send);
		assert_int_equal(jint(s, "inline_recv"), fs->s.inline_recv);
		assert_int_equal(jint(s, "rpcrdma_version"), fs->s.rpcrdma_version);
		assert_int_equal(jint(s, "read_yields"), fs->s.read_yields);
		assert_int_equal(jint(s, "credits.granted"), fs->s.credits.granted);
		assert_int_equal(jint(s, "credits.in_use"), fs->s.credits.in_use);
		assert_int_equal(jint(s, "credits.queued"), fs->s.credits.queued);
		assert_int_equal(jint(s, "counters.calls"), fs->c.calls);
		assert_int_equal(jint(s, "counters.replies"), fs->c.replies);
		assert_int_equal(jint(s, "counters.rdma_bytes.read_chunk"), fs->c.bytes_read_chunk);
		/* a session lists only the events that happened to it */
		json_t *sev = json_object_get(json_object_get(s, "counters"), "events");
		size_t nonzero = 0;
		for (unsigned k = 0; k < GW_EV_KIND_COUNT; k++) {
			json_t *ev = json_object_get(sev, gw_event_kind_name(k));
			if (!fs->c.events[k]) {
				assert_null(ev);
				continue;
			}
			nonzero++;
			assert_int_equal(json_integer_value(ev), fs->c.events[k]);
		}
		assert_int_equal(json_object_size(sev), nonzero);
		check_json_hist(
			json_object_get(json_object_get(json_object_get(s, "counters"), "latency"),
					"gateway"),
			&fs->c.gateway_us);
	}
	assert_int_equal(jint(sessions, "0.counters.procedures.0.calls"), 600);
	assert_int_equal(jint(sessions, "0.counters.events.retransmit_absorbed"), 2);
	/* a session that never counted by procedure has no table of its own: none shown */
	assert_null(fa->sessions[1].c.procs_big);
	assert_int_equal(jint(sessions, "1.counters.calls"), 2);
	assert_int_equal(
		json_array_size(json_object_get(
			json_object_get(json_array_get(sessions, 1), "counters"), "procedures")),
		0);

	/* the second route: escapes survive, no sessions, nothing in use */
	assert_string_equal(jtext(rb, "name"), weird_name);
	assert_string_equal(jtext(rb, "mode"), "reverse");
	assert_int_equal(jint(rb, "totals.calls"), 42);
	assert_int_equal(jint(rb, "totals.events.credit_overrun"), 9);
	assert_int_equal(json_array_size(json_object_get(rb, "sessions")), 0);
	assert_int_equal(jint(rb, "credits.granted"), 0);
	assert_int_equal(jint(rb, "credits.in_use"), 0);
	/* the RDMA devices' pools, after the routes */
	json_t *devs = json_object_get(root, "rdma_devices");
	assert_int_equal(json_array_size(devs), 2);
	assert_string_equal(jtext(json_array_get(devs, 0), "name"), "rxe0");
	assert_int_equal(jint(json_array_get(devs, 0), "buffers_in_use"), 130);
	assert_int_equal(jint(json_array_get(devs, 0), "buffers"), 1088);
	assert_int_equal(jint(json_array_get(devs, 0), "registered_bytes"), 75ll << 20);
	assert_int_equal(jint(json_array_get(devs, 0), "exhausted"), 3);
	assert_string_equal(jtext(json_array_get(devs, 1), "name"), "mlx5_1");
	assert_int_equal(jint(json_array_get(devs, 1), "buffers_in_use"), 0);
	json_decref(root);
}

/* ?sessions=0: the totals and the credit sums, without the session list */
/* A route with shared upstream connections shows each channel and the XID map. */
static void test_stats_json_shared(void **state)
{
	struct fixture *f = *state;
	json_t *root = fetch_json(f, "/stats");
	json_t *rb = json_array_get(json_object_get(root, "routes"), 1);

	assert_int_equal(jint(root, "routes.0.shared_upstream.channels.0.channel"), 0);
	json_t *chans =
		json_object_get(json_object_get(json_array_get(json_object_get(root, "routes"), 0),
						"shared_upstream"),
				"channels");
	assert_int_equal(json_array_size(chans), 2);
	assert_string_equal(jtext(json_array_get(chans, 0), "state"), "ready");
	assert_string_equal(jtext(json_array_get(chans, 1), "state"), "closed");
	assert_int_equal(jint(root, "routes.0.shared_upstream.channels.0.credits_granted"), 64);
	assert_int_equal(jint(root, "routes.0.shared_upstream.channels.0.calls_in_flight"), 3);
	assert_int_equal(jint(root, "routes.0.shared_upstream.channels.0.calls_queued"), 7);
	assert_int_equal(jint(root, "routes.0.shared_upstream.channels.0.clients"), 4);
	assert_int_equal(jint(root, "routes.0.shared_upstream.channels.0.stalls"), 11);
	assert_int_equal(jint(root, "routes.0.shared_upstream.channels.1.channel"), 1);
	assert_int_equal(jint(root, "routes.0.shared_upstream.channels.1.reconnects"), 2);
	assert_int_equal(jint(root, "routes.0.shared_upstream.channels.1.reconnect_failures"), 1);
	assert_int_equal(jint(root, "routes.0.shared_upstream.channels.1.calls_resent"), 9);
	assert_int_equal(jint(root, "routes.0.shared_upstream.channels.0.calls_resent"), 0);
	assert_int_equal(jint(root, "routes.0.shared_upstream.channels.1.calls_orphaned"), 6);
	assert_int_equal(jint(root, "routes.0.shared_upstream.channels.1.cq_yields"), 14);
	assert_int_equal(jint(root, "routes.0.shared_upstream.back_channels_kept.now"), 2);
	assert_int_equal(jint(root, "routes.0.shared_upstream.back_channels_kept.kept"), 31);
	assert_int_equal(jint(root, "routes.0.shared_upstream.back_channels_kept.adopted"), 32);
	assert_int_equal(jint(root, "routes.0.shared_upstream.back_channels_kept.expired"), 33);
	assert_int_equal(jint(root, "routes.0.shared_upstream.back_channels_kept.replaced"), 34);
	assert_int_equal(jint(root, "routes.0.shared_upstream.back_channels_kept.dropped"), 35);
	assert_int_equal(jint(root, "routes.0.shared_upstream.xid_map.entries"), 61440);
	assert_int_equal(jint(root, "routes.0.shared_upstream.xid_map.in_flight"), 3);
	assert_int_equal(jint(root, "routes.0.shared_upstream.xid_map.answered"), 250);
	assert_int_equal(jint(root, "routes.0.shared_upstream.xid_map.new"), 1000);
	assert_int_equal(jint(root, "routes.0.shared_upstream.xid_map.retransmit_in_flight"), 2);
	assert_int_equal(jint(root, "routes.0.shared_upstream.xid_map.retransmit_answered"), 1);
	assert_int_equal(jint(root, "routes.0.shared_upstream.xid_map.expired"), 700);
	assert_int_equal(jint(root, "routes.0.shared_upstream.xid_map.stray"), 5);
	/* A route without: no member at all. */
	assert_null(json_object_get(rb, "shared_upstream"));
	json_decref(root);
}

/* Queue time: the route's over all its clients, and each client's own. */
static void test_stats_json_queue_time(void **state)
{
	struct fixture *f = *state;
	json_t *root = fetch_json(f, "/stats");

	assert_int_equal(jint(root, "routes.0.totals.latency.queue.count"), 2);
	assert_int_equal(jint(root, "routes.0.totals.latency.queue.sum_us"), 3050);
	assert_int_equal(jint(root, "routes.0.totals.latency.socket.count"), 2);
	assert_int_equal(jint(root, "routes.0.totals.latency.socket.sum_us"), 907);
	assert_int_equal(jint(root, "routes.0.totals.latency.queue.buckets.0.le_us"), 64);
	assert_int_equal(jint(root, "routes.0.totals.latency.queue.buckets.1.le_us"), 4096);
	assert_int_equal(jint(root, "routes.0.sessions.0.counters.latency.queue.count"), 1);
	assert_int_equal(jint(root, "routes.0.sessions.0.counters.latency.queue.sum_us"), 3000);
	assert_int_equal(jint(root, "routes.0.sessions.1.counters.latency.queue.count"), 0);
	json_decref(root);
}

/* A route with an NLM relay shows what it holds, its refusals and the callbacks. */
static void test_stats_json_nlm(void **state)
{
	struct fixture *f = *state;
	json_t *root = fetch_json(f, "/stats");

	assert_int_equal(jint(root, "routes.0.nlm.clients"), 2);
	assert_int_equal(jint(root, "routes.0.nlm.owners"), 3);
	assert_int_equal(jint(root, "routes.0.nlm.locks"), 5);
	assert_int_equal(jint(root, "routes.0.nlm.refused.clients_full"), 6);
	assert_int_equal(jint(root, "routes.0.nlm.refused.owners_full"), 7);
	assert_int_equal(jint(root, "routes.0.nlm.refused.locks_full"), 8);
	assert_int_equal(jint(root, "routes.0.nlm.refused.client_locks_full"), 9);
	assert_int_equal(jint(root, "routes.0.nlm.refused.oh_too_long"), 10);
	assert_int_equal(jint(root, "routes.0.nlm.refused.stale_owner"), 12);
	assert_int_equal(jint(root, "routes.0.nlm.refused.client_owners_full"), 71);
	assert_int_equal(jint(root, "routes.0.nlm.refused.client_prefix_full"), 73);
	assert_int_equal(jint(root, "routes.0.nlm.granted_callbacks.pending"), 1);
	assert_int_equal(jint(root, "routes.0.nlm.granted_callbacks.relayed"), 13);
	assert_int_equal(jint(root, "routes.0.nlm.granted_callbacks.granted"), 14);
	assert_int_equal(jint(root, "routes.0.nlm.granted_callbacks.stale"), 15);
	assert_int_equal(jint(root, "routes.0.nlm.granted_callbacks.full"), 16);
	assert_int_equal(jint(root, "routes.0.nlm.granted_callbacks.timed_out"), 17);
	assert_int_equal(jint(root, "routes.0.nlm.granted_callbacks.not_from_server"), 18);
	assert_int_equal(jint(root, "routes.0.nlm.async.pending"), 19);
	assert_int_equal(jint(root, "routes.0.nlm.async.sent"), 20);
	assert_int_equal(jint(root, "routes.0.nlm.async.delivered"), 21);
	assert_int_equal(jint(root, "routes.0.nlm.async.full"), 22);
	assert_int_equal(jint(root, "routes.0.nlm.async.unknown_cookie"), 23);
	assert_int_equal(jint(root, "routes.0.nlm.async.from_client"), 24);
	assert_int_equal(jint(root, "routes.0.nlm.async.timed_out"), 25);
	assert_int_equal(jint(root, "routes.0.nlm.async.refused_client_cap"), 26);
	assert_int_equal(jint(root, "routes.0.nlm.async.late_given_back"), 27);
	assert_int_equal(jint(root, "routes.0.nlm.server_reboots.pending"), 2);
	assert_int_equal(jint(root, "routes.0.nlm.server_reboots.received"), 19);
	assert_int_equal(jint(root, "routes.0.nlm.server_reboots.repeated"), 20);
	assert_int_equal(jint(root, "routes.0.nlm.server_reboots.delivered"), 21);
	assert_int_equal(jint(root, "routes.0.nlm.server_reboots.not_delivered"), 22);
	assert_int_equal(jint(root, "routes.0.nlm.server_reboots.not_from_server"), 23);
	assert_int_equal(jint(root, "routes.0.nlm.server_reboots.clients_full"), 24);
	assert_int_equal(jint(root, "routes.0.nlm.gateway_restart.nsm_state"), 1001);
	assert_true(json_is_true(json_object_get(
		json_object_get(
			json_object_get(json_array_get(json_object_get(root, "routes"), 0), "nlm"),
			"gateway_restart"),
		"state_persisted")));
	assert_int_equal(jint(root, "routes.0.nlm.gateway_restart.sent"), 3);
	assert_int_equal(jint(root, "routes.0.nlm.gateway_restart.delivered"), 1);
	assert_int_equal(jint(root, "routes.0.nlm.gateway_restart.not_delivered"), 0);
	assert_int_equal(jint(root, "routes.0.nlm.gateway_restart.clients_told"), 2);
	assert_int_equal(jint(root, "routes.0.nlm.gateway_restart.reclaims_converted"), 5);
	assert_int_equal(jint(root, "routes.0.nlm.gateway_restart.grace_refused"), 6);
	assert_int_equal(jint(root, "routes.0.nlm.release_queue.pending"), 31);
	assert_int_equal(jint(root, "routes.0.nlm.release_queue.in_flight"), 16);
	assert_int_equal(jint(root, "routes.0.nlm.release_queue.queued"), 300);
	assert_int_equal(jint(root, "routes.0.nlm.release_queue.released"), 260);
	assert_int_equal(jint(root, "routes.0.nlm.release_queue.retried"), 12);
	assert_int_equal(jint(root, "routes.0.nlm.release_queue.given_up"), 9);
	assert_int_equal(jint(root, "routes.0.nlm.release_queue.full"), 4);
	/* A route without side services has no "nlm" at all. */
	json_t *rb = json_array_get(json_object_get(root, "routes"), 1);
	assert_null(json_object_get(rb, "nlm"));
	json_decref(root);
}

static void test_stats_json_without_sessions(void **state)
{
	struct fixture *f = *state;
	json_t *root = fetch_json(f, "/stats?sessions=0");
	json_t *ra = json_array_get(json_object_get(root, "routes"), 0);

	assert_null(json_object_get(ra, "sessions"));
	assert_int_equal(jint(ra, "live_sessions"), 2);
	assert_int_equal(jint(ra, "totals.calls"), f->engine.routes[0].totals.calls);
	assert_int_equal(jint(ra, "credits.granted"), 129);
	assert_int_equal(jint(root, "routes.1.totals.calls"), 42);
	json_decref(root);

	root = fetch_json(f, "/stats?sessions=1");
	ra = json_array_get(json_object_get(root, "routes"), 0);
	assert_int_equal(json_array_size(json_object_get(ra, "sessions")), 2);
	json_decref(root);
}

static void test_stats_json_huge_counter_saturates(void **state)
{
	struct fixture *f = *state;

	f->engine.routes[0].totals.tcp_bytes_out = UINT64_MAX;
	json_t *root = fetch_json(f, "/stats");
	assert_int_equal(jint(root, "routes.0.totals.tcp_bytes.sent"), INT64_MAX);
	json_decref(root);
}

static void test_stats_json_no_routes(void **state)
{
	struct fixture *f = *state;

	f->engine.nroutes = 0;
	f->engine.ndevices = 0;
	json_t *root = fetch_json(f, "/stats");
	assert_true(json_is_array(json_object_get(root, "routes")));
	assert_int_equal(json_array_size(json_object_get(root, "routes")), 0);
	assert_true(json_is_array(json_object_get(root, "rdma_devices")));
	assert_int_equal(json_array_size(json_object_get(root, "rdma_devices")), 0);
	json_decref(root);
}

/* ---- /metrics, read back by prometheus_client ------------------------------------ */

/*
 * Parses argv[1] with the reference parser and prints the families as JSON.
 * It also checks what the parser lets through: a family split in two
 * groups, a sample twice, a counter not ending in _total, a histogram
 * without +Inf, with bounds out of order, buckets that are not cumulative,
 * or +Inf different from _count; and HELP and TYPE on every family.
 */
static const char prom_check_py[] =
	"import json, math, sys\n"
	"from prometheus_client.parser import text_string_to_metric_families\n"
	"text = open(sys.argv[1], encoding='utf-8').read()\n"
	"errors, out, families, series = [], [], set(), set()\n"
	"for f in text_string_to_metric_families(text):\n"
	"    if f.name in families: errors.append('family %s in two groups' % f.name)\n"
	"    families.add(f.name)\n"
	"    if not f.name.startswith(('rpcrdma_gw_', 'process_')): errors.append('prefix: ' + "
	"f.name)\n"
	"    if f.type not in ('counter', 'gauge', 'histogram'):\n"
	"        errors.append('%s has type %s' % (f.name, f.type))\n"
	"    if not f.documentation: errors.append('%s has no HELP' % f.name)\n"
	"    hists = {}\n"
	"    for s in f.samples:\n"
	"        key = (s.name, tuple(sorted(s.labels.items())))\n"
	"        if key in series: errors.append('sample twice: %r' % (key,))\n"
	"        series.add(key)\n"
	"        if f.type == 'counter' and not s.name.endswith('_total'):\n"
	"            errors.append('counter sample %s' % s.name)\n"
	"        if f.type != 'histogram': continue\n"
	"        base = tuple(sorted((k, v) for k, v in s.labels.items() if k != 'le'))\n"
	"        h = hists.setdefault(base, {'b': [], 'sum': None, 'count': None})\n"
	"        if s.name.endswith('_bucket'): h['b'].append((float(s.labels['le']), s.value))\n"
	"        elif s.name.endswith('_sum'): h['sum'] = s.value\n"
	"        elif s.name.endswith('_count'): h['count'] = s.value\n"
	"    for base, h in hists.items():\n"
	"        b = h['b']\n"
	"        if not b or b[-1][0] != math.inf: errors.append('%s%r: no +Inf' % (f.name, "
	"base))\n"
	"        elif b[-1][1] != h['count']: errors.append('%s%r: +Inf != count' % (f.name, "
	"base))\n"
	"        if [x[0] for x in b] != sorted(set(x[0] for x in b)):\n"
	"            errors.append('%s%r: bounds out of order' % (f.name, base))\n"
	"        if any(b[i][1] > b[i + 1][1] for i in range(len(b) - 1)):\n"
	"            errors.append('%s%r: buckets not cumulative' % (f.name, base))\n"
	"        if h['sum'] is None: errors.append('%s%r: no _sum' % (f.name, base))\n"
	"    out.append({'name': f.name, 'type': f.type, 'help': f.documentation,\n"
	"                'samples': [{'name': s.name, 'labels': s.labels, 'value': s.value}\n"
	"                            for s in f.samples]})\n"
	"for e in errors: print('prometheus check: ' + e, file=sys.stderr)\n"
	"json.dump(out, sys.stdout)\n"
	"sys.exit(1 if errors else 0)\n";

/* The exposition through /usr/bin/python3 and prometheus_client: the families. */
static json_t *prometheus_parse(const char *text, size_t len)
{
	char path[] = "/tmp/gw-metrics-XXXXXX";
	int fd = mkstemp(path), pipefd[2];
	size_t cap = 1 << 16, n = 0;
	char *out = malloc(cap);
	json_error_t err;
	int status;

	assert_true(fd >= 0);
	assert_non_null(out);
	assert_int_equal(write(fd, text, len), (ssize_t)len);
	close(fd);
	assert_int_equal(pipe(pipefd), 0);

	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		dup2(pipefd[1], STDOUT_FILENO);
		close(pipefd[0]);
		close(pipefd[1]);
		/* /usr/bin: the Debian package; "python3" on PATH may be another one */
		execl("/usr/bin/python3", "python3", "-c", prom_check_py, path, (char *)NULL);
		_exit(127);
	}
	close(pipefd[1]);
	for (;;) {
		if (cap - n < 4096) {
			cap *= 2;
			out = realloc(out, cap);
			assert_non_null(out);
		}
		ssize_t got = read(pipefd[0], out + n, cap - n);
		if (got <= 0)
			break;
		n += (size_t)got;
	}
	close(pipefd[0]);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	unlink(path);
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
		fail_msg("prometheus_client rejected the exposition (status %d):\n%s", status,
			 text);
	json_t *families = json_loadb(out, n, 0, &err);
	free(out);
	if (!families)
		fail_msg("parser output: %s", err.text);
	return families;
}

static json_t *fetch_metrics(struct fixture *f, const char *target)
{
	struct answer a;
	char v[128];

	fetch(f, "GET", target, &a);
	assert_int_equal(a.status, 200);
	assert_non_null(header(&a, "Content-Type", v, sizeof(v)));
	assert_string_equal(v, "text/plain; version=0.0.4; charset=utf-8");
	json_t *families = prometheus_parse(a.body, a.body_len);
	answer_free(&a);
	return families;
}

static json_t *find_family(json_t *families, const char *name)
{
	size_t i;
	json_t *fam;

	json_array_foreach(families, i, fam)
	{
		if (strcmp(json_string_value(json_object_get(fam, "name")), name) == 0)
			return fam;
	}
	return NULL;
}

static void check_family(json_t *families, const char *name, const char *type)
{
	json_t *fam = find_family(families, name);

	if (!fam)
		fail_msg("no family %s", name);
	assert_string_equal(json_string_value(json_object_get(fam, "type")), type);
}

/* Samples of @name whose labels are exactly the NULL-terminated name/value pairs. */
static bool labels_are(json_t *labels, va_list ap)
{
	size_t n = 0;

	for (const char *k; (k = va_arg(ap, const char *));) {
		const char *v = va_arg(ap, const char *);
		json_t *got = json_object_get(labels, k);
		if (!got || strcmp(json_string_value(got), v) != 0)
			return false;
		n++;
	}
	return n == json_object_size(labels);
}

static json_t *find_sample_v(json_t *families, const char *name, va_list ap)
{
	size_t i, j;
	json_t *fam, *s;

	json_array_foreach(families, i, fam)
	{
		json_array_foreach(json_object_get(fam, "samples"), j, s)
		{
			va_list aq;
			bool match;
			if (strcmp(json_string_value(json_object_get(s, "name")), name) != 0)
				continue;
			va_copy(aq, ap);
			match = labels_are(json_object_get(s, "labels"), aq);
			va_end(aq);
			if (match)
				return s;
		}
	}
	return NULL;
}

static bool has_sample(json_t *families, const char *name, ...)
{
	va_list ap;
	json_t *s;

	va_start(ap, name);
	s = find_sample_v(families, name, ap);
	va_end(ap);
	return s != NULL;
}

static double sample(json_t *families, const char *name, ...)
{
	va_list ap;
	json_t *s;

	va_start(ap, name);
	s = find_sample_v(families, name, ap);
	va_end(ap);
	if (!s)
		fail_msg("no sample %s with those labels", name);
	return json_number_value(json_object_get(s, "value"));
}

static size_t family_size(json_t *families, const char *name)
{
	json_t *fam = find_family(families, name);

	return fam ? json_array_size(json_object_get(fam, "samples")) : 0;
}

#define R "route"

static void check_route_scalars(json_t *fams, const char *route, const struct gw_counters *c)
{
	assert_true(sample(fams, "rpcrdma_gw_rpc_calls_total", R, route, NULL) == c->calls);
	assert_true(sample(fams, "rpcrdma_gw_rpc_replies_total", R, route, NULL) == c->replies);
	assert_true(sample(fams, "rpcrdma_gw_backward_calls_total", R, route, NULL) ==
		    c->backward_calls);
	assert_true(sample(fams, "rpcrdma_gw_backward_replies_total", R, route, NULL) ==
		    c->backward_replies);
	assert_true(sample(fams, "rpcrdma_gw_calls_queued_for_credits_total", R, route, NULL) ==
		    c->calls_queued_for_credits);
	assert_true(sample(fams, "rpcrdma_gw_remote_invalidations_total", R, route, NULL) ==
		    c->remote_invalidations);
	assert_true(sample(fams, "rpcrdma_gw_sessions_opened_total", R, route, NULL) ==
		    c->sessions_opened);
	assert_true(sample(fams, "rpcrdma_gw_sessions_closed_total", R, route, NULL) ==
		    c->sessions_closed);
	assert_true(sample(fams, "rpcrdma_gw_rdma_bytes_total", R, route, "via", "inline", NULL) ==
		    c->bytes_inline);
	assert_true(sample(fams, "rpcrdma_gw_rdma_bytes_total", R, route, "via", "read_chunk",
			   NULL) == c->bytes_read_chunk);
	assert_true(sample(fams, "rpcrdma_gw_rdma_bytes_total", R, route, "via", "write_chunk",
			   NULL) == c->bytes_write_chunk);
	assert_true(sample(fams, "rpcrdma_gw_rdma_bytes_total", R, route, "via", "reply_chunk",
			   NULL) == c->bytes_reply_chunk);
	assert_true(sample(fams, "rpcrdma_gw_tcp_bytes_total", R, route, "direction", "received",
			   NULL) == c->tcp_bytes_in);
	assert_true(sample(fams, "rpcrdma_gw_tcp_bytes_total", R, route, "direction", "sent",
			   NULL) == c->tcp_bytes_out);
	for (unsigned k = 0; k < GW_EV_KIND_COUNT; k++)
		assert_true(sample(fams, "rpcrdma_gw_events_total", R, route, "kind",
				   gw_event_kind_name(k), NULL) == c->events[k]);
}

static void check_route_histogram(json_t *fams, const char *name, const char *route,
				  const struct gw_hist *h)
{
	char bucket[128], sum[128], count[128], le[32];
	double cumulative = 0;

	snprintf(bucket, sizeof(bucket), "%s_bucket", name);
	snprintf(sum, sizeof(sum), "%s_sum", name);
	snprintf(count, sizeof(count), "%s_count", name);
	for (unsigned i = 0; i < GW_HIST_BUCKETS; i++) {
		cumulative += (double)h->buckets[i];
		if (i == GW_HIST_BUCKETS - 1)
			snprintf(le, sizeof(le), "+Inf");
		else
			snprintf(le, sizeof(le), "%.6f", (double)gw_hist_bucket_le(i) / 1e6);
		/* the bound is written without trailing zeros */
		for (size_t n = strlen(le); n > 1 && strchr(le, '.') && le[n - 1] == '0';)
			le[--n] = '\0';
		if (le[strlen(le) - 1] == '.')
			le[strlen(le) - 1] = '\0';
		assert_true(sample(fams, bucket, R, route, "le", le, NULL) == cumulative);
	}
	assert_true(fabs(sample(fams, sum, R, route, NULL) - (double)h->sum_us / 1e6) < 1e-9);
	assert_true(sample(fams, count, R, route, NULL) == h->count);
}

static void test_metrics_routes(void **state)
{
	struct fixture *f = *state;
	const struct fake_engine *e = &f->engine;
	const struct gw_counters *t = &e->routes[0].totals;
	json_t *fams = fetch_metrics(f, "/metrics");

	assert_int_equal(f->engine.walks, 1);
	assert_true(sample(fams, "rpcrdma_gw_build_info", "version", GW_VERSION, NULL) == 1);
	check_family(fams, "rpcrdma_gw_rpc_calls", "counter");
	check_family(fams, "rpcrdma_gw_events", "counter");
	check_family(fams, "rpcrdma_gw_rdma_bytes", "counter");
	check_family(fams, "rpcrdma_gw_sessions", "gauge");
	check_family(fams, "rpcrdma_gw_credits_granted", "gauge");
	check_family(fams, "rpcrdma_gw_route_info", "gauge");
	check_family(fams, "rpcrdma_gw_gateway_latency_seconds", "histogram");
	check_family(fams, "rpcrdma_gw_upstream_latency_seconds", "histogram");
	check_family(fams, "rpcrdma_gw_procedure_calls", "counter");
	check_family(fams, "rpcrdma_gw_procedure_upstream_latency_seconds", "histogram");

	assert_true(sample(fams, "rpcrdma_gw_route_info", R, "nfs-fwd", "mode", "forward", "listen",
			   "0.0.0.0:2049", "upstream", "192.168.1.10:20049", NULL) == 1);
	assert_true(sample(fams, "rpcrdma_gw_sessions", R, "nfs-fwd", NULL) == 2);
	check_route_scalars(fams, "nfs-fwd", t);
	check_route_histogram(fams, "rpcrdma_gw_gateway_latency_seconds", "nfs-fwd",
			      &t->gateway_us);
	check_route_histogram(fams, "rpcrdma_gw_upstream_latency_seconds", "nfs-fwd",
			      &t->upstream_us);
	/* a few by hand, so that the bounds' spelling is pinned down too */
	assert_true(sample(fams, "rpcrdma_gw_gateway_latency_seconds_bucket", R, "nfs-fwd", "le",
			   "0.000001", NULL) == 1);
	assert_true(sample(fams, "rpcrdma_gw_gateway_latency_seconds_bucket", R, "nfs-fwd", "le",
			   "0.001024", NULL) == 4);
	assert_true(sample(fams, "rpcrdma_gw_gateway_latency_seconds_bucket", R, "nfs-fwd", "le",
			   "4.194304", NULL) == 4);
	assert_true(sample(fams, "rpcrdma_gw_gateway_latency_seconds_bucket", R, "nfs-fwd", "le",
			   "+Inf", NULL) == 5);
	assert_true(sample(fams, "rpcrdma_gw_gateway_latency_seconds_sum", R, "nfs-fwd", NULL) ==
		    5.001006);

	/* credits are the sums over the live sessions */
	assert_true(sample(fams, "rpcrdma_gw_credits_granted", R, "nfs-fwd", NULL) == 129);
	assert_true(sample(fams, "rpcrdma_gw_credits_in_use", R, "nfs-fwd", NULL) == 4);
	assert_true(sample(fams, "rpcrdma_gw_calls_waiting_for_credits", R, "nfs-fwd", NULL) == 2);
	assert_true(sample(fams, "rpcrdma_gw_backward_credits_granted", R, "nfs-fwd", NULL) == 8);
	assert_true(sample(fams, "rpcrdma_gw_backward_credits_in_use", R, "nfs-fwd", NULL) == 1);

	const char *pc = "rpcrdma_gw_procedure_calls_total";
	const char *pr = "rpcrdma_gw_procedure_replies_total";
	assert_true(sample(fams, pc, R, "nfs-fwd", "program", "nfs", "version", "3", "procedure",
			   "READ", NULL) == 600);
	assert_true(sample(fams, pr, R, "nfs-fwd", "program", "nfs", "version", "3", "procedure",
			   "READ", NULL) == 598);
	assert_true(sample(fams, pc, R, "nfs-fwd", "program", "nfs", "version", "3", "procedure",
			   "WRITE", NULL) == 300);
	assert_true(sample(fams, pc, R, "nfs-fwd", "program", "nfs", "version", "4", "procedure",
			   "COMPOUND", NULL) == 50);
	assert_true(sample(fams, pc, R, "nfs-fwd", "program", "nlm", "version", "4", "procedure",
			   "LOCK", NULL) == 10);
	assert_true(sample(fams, pc, R, "nfs-fwd", "program", "400000", "version", "1", "procedure",
			   "7", NULL) == 40);
	assert_true(sample(fams, pc, R, "nfs-fwd", "program", "other", "version", "", "procedure",
			   "", NULL) == 3);
	assert_true(sample(fams, pr, R, "nfs-fwd", "program", "other", "version", "", "procedure",
			   "", NULL) == 2);
	/* the upstream's latency of READ; none for WRITE, which was never timed */
	const char *pl = "rpcrdma_gw_procedure_upstream_latency_seconds";
	char series[96];
	snprintf(series, sizeof(series), "%s_count", pl);
	assert_true(sample(fams, series, R, "nfs-fwd", "program", "nfs", "version", "3",
			   "procedure", "READ", NULL) == 2);
	snprintf(series, sizeof(series), "%s_bucket", pl);
	assert_true(sample(fams, series, R, "nfs-fwd", "program", "nfs", "version", "3",
			   "procedure", "READ", "le", "0.000128", NULL) == 1);
	assert_true(sample(fams, series, R, "nfs-fwd", "program", "nfs", "version", "3",
			   "procedure", "READ", "le", "+Inf", NULL) == 2);
	snprintf(series, sizeof(series), "%s_sum", pl);
	assert_true(sample(fams, series, R, "nfs-fwd", "program", "nfs", "version", "3",
			   "procedure", "READ", NULL) == 0.0004);
	snprintf(series, sizeof(series), "%s_count", pl);
	assert_false(has_sample(fams, series, R, "nfs-fwd", "program", "nfs", "version", "3",
				"procedure", "WRITE", NULL));

	/* the second route's name, with a quote, a backslash and a newline, reads back intact */
	assert_true(sample(fams, "rpcrdma_gw_route_info", R, weird_name, "mode", "reverse",
			   "listen", "[::]:20049", "upstream", "nfs.example:2049", NULL) == 1);
	check_route_scalars(fams, weird_name, &e->routes[1].totals);
	check_route_histogram(fams, "rpcrdma_gw_upstream_latency_seconds", weird_name,
			      &e->routes[1].totals.upstream_us);
	assert_true(sample(fams, "rpcrdma_gw_sessions", R, weird_name, NULL) == 0);
	assert_true(sample(fams, "rpcrdma_gw_credits_granted", R, weird_name, NULL) == 0);
	/* no procedures on that route, and no 'other' either */
	assert_false(has_sample(fams, pc, R, weird_name, "program", "other", "version", "",
				"procedure", "", NULL));

	/* the RDMA devices' pools */
	check_family(fams, "rpcrdma_gw_pool_buffers_in_use", "gauge");
	check_family(fams, "rpcrdma_gw_pool_exhausted", "counter");
	assert_true(sample(fams, "rpcrdma_gw_pool_buffers_in_use", "device", "rxe0", NULL) == 130);
	assert_true(sample(fams, "rpcrdma_gw_pool_buffers", "device", "rxe0", NULL) == 1088);
	assert_true(sample(fams, "rpcrdma_gw_pool_registered_bytes", "device", "rxe0", NULL) ==
		    75 << 20);
	assert_true(sample(fams, "rpcrdma_gw_pool_exhausted_total", "device", "rxe0", NULL) == 3);
	assert_true(sample(fams, "rpcrdma_gw_pool_buffers", "device", "mlx5_1", NULL) == 64);

	/* every kind of event on every route, from the first scrape */
	assert_int_equal(family_size(fams, "rpcrdma_gw_events"), 2 * GW_EV_KIND_COUNT);

	/* per-session series are opt-in */
	size_t i;
	json_t *fam;
	json_array_foreach(fams, i, fam)
	{
		const char *name = json_string_value(json_object_get(fam, "name"));
		assert_true(strncmp(name, "rpcrdma_gw_session_", 19) != 0);
	}
	json_decref(fams);
}

static void test_metrics_shared(void **state)
{
	struct fixture *f = *state;
	json_t *fams = fetch_metrics(f, "/metrics");

	check_family(fams, "rpcrdma_gw_shared_channel_credits_granted", "gauge");
	check_family(fams, "rpcrdma_gw_shared_channel_stalls", "counter");
	check_family(fams, "rpcrdma_gw_shared_xid_map", "counter");
	check_family(fams, "rpcrdma_gw_shared_xid_map_entries", "gauge");
	const char *g = "rpcrdma_gw_shared_channel_credits_granted";
	assert_true(sample(fams, g, R, "nfs-fwd", "channel", "0", NULL) == 64);
	assert_true(sample(fams, g, R, "nfs-fwd", "channel", "1", NULL) == 0);
	assert_true(sample(fams, "rpcrdma_gw_shared_channel_calls_in_flight", R, "nfs-fwd",
			   "channel", "0", NULL) == 3);
	assert_true(sample(fams, "rpcrdma_gw_shared_channel_calls_queued", R, "nfs-fwd", "channel",
			   "0", NULL) == 7);
	assert_true(sample(fams, "rpcrdma_gw_shared_channel_clients", R, "nfs-fwd", "channel", "0",
			   NULL) == 4);
	assert_true(sample(fams, "rpcrdma_gw_shared_channel_stalls_total", R, "nfs-fwd", "channel",
			   "0", NULL) == 11);
	check_family(fams, "rpcrdma_gw_shared_channel_reconnects", "counter");
	check_family(fams, "rpcrdma_gw_shared_channel_reconnect_failures", "counter");
	check_family(fams, "rpcrdma_gw_shared_channel_calls_resent", "counter");
	check_family(fams, "rpcrdma_gw_shared_channel_calls_orphaned", "counter");
	assert_true(sample(fams, "rpcrdma_gw_shared_channel_calls_orphaned_total", R, "nfs-fwd",
			   "channel", "1", NULL) == 6);
	check_family(fams, "rpcrdma_gw_shared_back_channels_kept", "gauge");
	assert_true(sample(fams, "rpcrdma_gw_shared_back_channels_kept", R, "nfs-fwd", NULL) == 2);
	check_family(fams, "rpcrdma_gw_shared_back_channels", "counter");
	assert_true(sample(fams, "rpcrdma_gw_shared_back_channels_total", R, "nfs-fwd", "what",
			   "adopted", NULL) == 32);
	assert_true(sample(fams, "rpcrdma_gw_shared_back_channels_total", R, "nfs-fwd", "what",
			   "replaced", NULL) == 34);
	check_family(fams, "rpcrdma_gw_shared_channel_cq_yields", "counter");
	assert_true(sample(fams, "rpcrdma_gw_shared_channel_cq_yields_total", R, "nfs-fwd",
			   "channel", "1", NULL) == 14);
	assert_true(sample(fams, "rpcrdma_gw_shared_channel_reconnects_total", R, "nfs-fwd",
			   "channel", "1", NULL) == 2);
	assert_true(sample(fams, "rpcrdma_gw_shared_channel_reconnect_failures_total", R, "nfs-fwd",
			   "channel", "1", NULL) == 1);
	assert_true(sample(fams, "rpcrdma_gw_shared_channel_calls_resent_total", R, "nfs-fwd",
			   "channel", "1", NULL) == 9);
	const char *m = "rpcrdma_gw_shared_xid_map_total";
	assert_true(sample(fams, m, R, "nfs-fwd", "what", "new", NULL) == 1000);
	assert_true(sample(fams, m, R, "nfs-fwd", "what", "retransmit_in_flight", NULL) == 2);
	assert_true(sample(fams, m, R, "nfs-fwd", "what", "stray", NULL) == 5);
	const char *e = "rpcrdma_gw_shared_xid_map_entries";
	assert_true(sample(fams, e, R, "nfs-fwd", "state", "in_flight", NULL) == 3);
	assert_true(sample(fams, e, R, "nfs-fwd", "state", "answered", NULL) == 250);
	/* Only the route that has them. */
	assert_int_equal(family_size(fams, g), 2);
	assert_int_equal(family_size(fams, "rpcrdma_gw_shared_xid_map"), 7);
	/* The route's queue time, and no series for the route that does not share. */
	check_family(fams, "rpcrdma_gw_shared_queue_seconds", "histogram");
	check_route_histogram(fams, "rpcrdma_gw_shared_queue_seconds", "nfs-fwd",
			      &f->engine.routes[0].totals.queue_us);
	assert_int_equal(family_size(fams, "rpcrdma_gw_shared_queue_seconds"), GW_HIST_BUCKETS + 2);
	/* The calls' wait in their sockets: the route's, and no series where none was seen. */
	check_family(fams, "rpcrdma_gw_socket_wait_seconds", "histogram");
	check_route_histogram(fams, "rpcrdma_gw_socket_wait_seconds", "nfs-fwd",
			      &f->engine.routes[0].totals.socket_us);
	assert_int_equal(family_size(fams, "rpcrdma_gw_socket_wait_seconds"), GW_HIST_BUCKETS + 2);
	json_decref(fams);
}

/* A client's own queue time, for the clients that queued: session 11 only. */
static void test_metrics_session_queue_time(void **state)
{
	struct fixture *f = *state;
	json_t *fams = fetch_metrics(f, "/metrics?sessions=1");
	const char *q = "rpcrdma_gw_session_shared_queue_seconds";
	char count[128];

	snprintf(count, sizeof(count), "%s_count", q);
	check_family(fams, q, "histogram");
	assert_true(sample(fams, count, R, "nfs-fwd", "session", "11", NULL) == 1);
	assert_true(sample(fams, "rpcrdma_gw_session_shared_queue_seconds_bucket", R, "nfs-fwd",
			   "session", "11", "le", "0.002048", NULL) == 0);
	assert_true(sample(fams, "rpcrdma_gw_session_shared_queue_seconds_bucket", R, "nfs-fwd",
			   "session", "11", "le", "0.004096", NULL) == 1);
	assert_int_equal(family_size(fams, q), GW_HIST_BUCKETS + 2);
	/* Its wait in the socket, 900 us. */
	const char *w = "rpcrdma_gw_session_socket_wait_seconds_bucket";
	assert_true(sample(fams, w, R, "nfs-fwd", "session", "11", "le", "0.000512", NULL) == 0);
	assert_true(sample(fams, w, R, "nfs-fwd", "session", "11", "le", "0.001024", NULL) == 1);
	assert_int_equal(family_size(fams, "rpcrdma_gw_session_socket_wait_seconds"),
			 GW_HIST_BUCKETS + 2);
	json_decref(fams);
}

static void test_metrics_nlm(void **state)
{
	struct fixture *f = *state;
	json_t *fams = fetch_metrics(f, "/metrics");

	check_family(fams, "rpcrdma_gw_nlm_held", "gauge");
	check_family(fams, "rpcrdma_gw_nlm_refused", "counter");
	check_family(fams, "rpcrdma_gw_nlm_granted_callbacks", "counter");
	const char *h = "rpcrdma_gw_nlm_held";
	assert_true(sample(fams, h, R, "nfs-fwd", "what", "clients", NULL) == 2);
	assert_true(sample(fams, h, R, "nfs-fwd", "what", "owners", NULL) == 3);
	assert_true(sample(fams, h, R, "nfs-fwd", "what", "locks", NULL) == 5);
	assert_true(sample(fams, h, R, "nfs-fwd", "what", "callbacks_pending", NULL) == 1);
	const char *r = "rpcrdma_gw_nlm_refused_total";
	assert_true(sample(fams, r, R, "nfs-fwd", "reason", "clients_full", NULL) == 6);
	assert_true(sample(fams, r, R, "nfs-fwd", "reason", "owners_full", NULL) == 7);
	assert_true(sample(fams, r, R, "nfs-fwd", "reason", "locks_full", NULL) == 8);
	assert_true(sample(fams, r, R, "nfs-fwd", "reason", "client_locks_full", NULL) == 9);
	assert_true(sample(fams, r, R, "nfs-fwd", "reason", "oh_too_long", NULL) == 10);
	assert_true(sample(fams, r, R, "nfs-fwd", "reason", "stale_owner", NULL) == 12);
	assert_true(sample(fams, r, R, "nfs-fwd", "reason", "client_owners_full", NULL) == 71);
	assert_true(sample(fams, r, R, "nfs-fwd", "reason", "client_prefix_full", NULL) == 73);
	const char *c = "rpcrdma_gw_nlm_granted_callbacks_total";
	assert_true(sample(fams, c, R, "nfs-fwd", "outcome", "relayed", NULL) == 13);
	assert_true(sample(fams, c, R, "nfs-fwd", "outcome", "granted", NULL) == 14);
	assert_true(sample(fams, c, R, "nfs-fwd", "outcome", "stale", NULL) == 15);
	assert_true(sample(fams, c, R, "nfs-fwd", "outcome", "full", NULL) == 16);
	assert_true(sample(fams, c, R, "nfs-fwd", "outcome", "timed_out", NULL) == 17);
	assert_true(sample(fams, c, R, "nfs-fwd", "outcome", "not_from_server", NULL) == 18);
	check_family(fams, "rpcrdma_gw_nlm_async", "counter");
	const char *a = "rpcrdma_gw_nlm_async_total";
	assert_true(sample(fams, h, R, "nfs-fwd", "what", "async_pending", NULL) == 19);
	assert_true(sample(fams, a, R, "nfs-fwd", "outcome", "sent", NULL) == 20);
	assert_true(sample(fams, a, R, "nfs-fwd", "outcome", "delivered", NULL) == 21);
	assert_true(sample(fams, a, R, "nfs-fwd", "outcome", "full", NULL) == 22);
	assert_true(sample(fams, a, R, "nfs-fwd", "outcome", "unknown_cookie", NULL) == 23);
	assert_true(sample(fams, a, R, "nfs-fwd", "outcome", "from_client", NULL) == 24);
	assert_true(sample(fams, a, R, "nfs-fwd", "outcome", "timed_out", NULL) == 25);
	assert_true(sample(fams, a, R, "nfs-fwd", "outcome", "refused_client_cap", NULL) == 26);
	assert_true(sample(fams, a, R, "nfs-fwd", "outcome", "late_given_back", NULL) == 27);
	assert_int_equal(family_size(fams, "rpcrdma_gw_nlm_async"), 8);
	assert_true(sample(fams, h, R, "nfs-fwd", "what", "notify_pending", NULL) == 2);
	const char *sr = "rpcrdma_gw_nlm_server_reboot_notifications_total";
	check_family(fams, "rpcrdma_gw_nlm_server_reboot_notifications", "counter");
	assert_true(sample(fams, sr, R, "nfs-fwd", "what", "received", NULL) == 19);
	assert_true(sample(fams, sr, R, "nfs-fwd", "what", "repeated", NULL) == 20);
	assert_true(sample(fams, sr, R, "nfs-fwd", "what", "delivered", NULL) == 21);
	assert_true(sample(fams, sr, R, "nfs-fwd", "what", "not_delivered", NULL) == 22);
	assert_true(sample(fams, sr, R, "nfs-fwd", "what", "not_from_server", NULL) == 23);
	assert_true(sample(fams, sr, R, "nfs-fwd", "what", "clients_full", NULL) == 24);
	assert_int_equal(family_size(fams, "rpcrdma_gw_nlm_server_reboot_notifications"), 6);
	/* /stats nlm.gateway_restart, the same figures. */
	const char *gr = "rpcrdma_gw_nlm_gateway_restart_total";
	check_family(fams, "rpcrdma_gw_nlm_gateway_restart", "counter");
	assert_true(sample(fams, gr, R, "nfs-fwd", "what", "sent", NULL) == 3);
	assert_true(sample(fams, gr, R, "nfs-fwd", "what", "delivered", NULL) == 1);
	assert_true(sample(fams, gr, R, "nfs-fwd", "what", "not_delivered", NULL) == 0);
	assert_true(sample(fams, gr, R, "nfs-fwd", "what", "clients_told", NULL) == 2);
	assert_true(sample(fams, gr, R, "nfs-fwd", "what", "clients_delivered", NULL) == 4);
	assert_true(sample(fams, gr, R, "nfs-fwd", "what", "reclaims_converted", NULL) == 5);
	assert_true(sample(fams, gr, R, "nfs-fwd", "what", "grace_refused", NULL) == 6);
	assert_int_equal(family_size(fams, "rpcrdma_gw_nlm_gateway_restart"), 7);
	const char *gs = "rpcrdma_gw_nlm_gateway_restart_state";
	check_family(fams, gs, "gauge");
	assert_true(sample(fams, gs, R, "nfs-fwd", "what", "nsm_state", NULL) == 1001);
	assert_true(sample(fams, gs, R, "nfs-fwd", "what", "persisted", NULL) == 1);
	assert_int_equal(family_size(fams, gs), 2);
	/* Only the route that has an NLM relay. */
	assert_int_equal(family_size(fams, h), 6);
	assert_int_equal(family_size(fams, "rpcrdma_gw_nlm_refused"), 8);
	assert_int_equal(family_size(fams, "rpcrdma_gw_nlm_granted_callbacks"), 6);
	json_decref(fams);
}

static void test_metrics_sessions(void **state)
{
	struct fixture *f = *state;
	const struct fake_route *fa = &f->engine.routes[0];
	json_t *fams = fetch_metrics(f, "/metrics?sessions=1");

	check_family(fams, "rpcrdma_gw_session_info", "gauge");
	check_family(fams, "rpcrdma_gw_session_rpc_calls", "counter");
	check_family(fams, "rpcrdma_gw_session_credits_granted", "gauge");
	for (unsigned j = 0; j < 2; j++) {
		const struct fake_session *fs = &fa->sessions[j];
		const struct gw_stats_session *s = &fs->s;
		char id[24];
		snprintf(id, sizeof(id), "%" PRIu64, s->id);
		assert_true(sample(fams, "rpcrdma_gw_session_info", R, "nfs-fwd", "session", id,
				   "client", s->client, "upstream", s->upstream, "state", s->state,
				   NULL) == 1);
		assert_true(fabs(sample(fams, "rpcrdma_gw_session_age_seconds", R, "nfs-fwd",
					"session", id, NULL) -
				 (double)s->age_ms / 1000) < 1e-9);
		assert_true(sample(fams, "rpcrdma_gw_session_rpc_calls_total", R, "nfs-fwd",
				   "session", id, NULL) == fs->c.calls);
		assert_true(sample(fams, "rpcrdma_gw_session_rpc_replies_total", R, "nfs-fwd",
				   "session", id, NULL) == fs->c.replies);
		assert_true(sample(fams, "rpcrdma_gw_session_rdma_bytes_total", R, "nfs-fwd",
				   "session", id, "via", "read_chunk",
				   NULL) == fs->c.bytes_read_chunk);
		assert_true(sample(fams, "rpcrdma_gw_session_tcp_bytes_total", R, "nfs-fwd",
				   "session", id, "direction", "received",
				   NULL) == fs->c.tcp_bytes_in);
		assert_true(sample(fams, "rpcrdma_gw_session_credits_granted", R, "nfs-fwd",
				   "session", id, NULL) == s->credits.granted);
		assert_true(sample(fams, "rpcrdma_gw_session_credits_in_use", R, "nfs-fwd",
				   "session", id, NULL) == s->credits.in_use);
		assert_true(sample(fams, "rpcrdma_gw_session_calls_waiting_for_credits", R,
				   "nfs-fwd", "session", id, NULL) == s->credits.queued);
		assert_true(sample(fams, "rpcrdma_gw_session_inline_threshold_bytes", R, "nfs-fwd",
				   "session", id, "direction", "send", NULL) == s->inline_send);
		assert_true(sample(fams, "rpcrdma_gw_session_inline_threshold_bytes", R, "nfs-fwd",
				   "session", id, "direction", "receive", NULL) == s->inline_recv);
		assert_true(sample(fams, "rpcrdma_gw_session_rpcrdma_version", R, "nfs-fwd",
				   "session", id, NULL) == s->rpcrdma_version);
		assert_true(sample(fams, "rpcrdma_gw_session_read_yields_total", R, "nfs-fwd",
				   "session", id, NULL) == s->read_yields);
	}
	/* a session shows only the events that happened to it */
	assert_true(sample(fams, "rpcrdma_gw_session_events_total", R, "nfs-fwd", "session", "11",
			   "kind", "retransmit_absorbed", NULL) == 2);
	assert_int_equal(family_size(fams, "rpcrdma_gw_session_events"), 1);
	/* the route series are the same as without sessions */
	assert_true(sample(fams, "rpcrdma_gw_rpc_calls_total", R, "nfs-fwd", NULL) == 1003);
	assert_true(sample(fams, "rpcrdma_gw_credits_granted", R, "nfs-fwd", NULL) == 129);
	json_decref(fams);

	fams = fetch_metrics(f, "/metrics?sessions=0");
	assert_null(find_family(fams, "rpcrdma_gw_session_info"));
	json_decref(fams);
}

static void test_bad_sessions_param(void **state)
{
	struct fixture *f = *state;
	struct answer a;

	fetch(f, "GET", "/metrics?sessions=maybe", &a);
	assert_int_equal(a.status, 400);
	answer_free(&a);
	fetch(f, "GET", "/stats?sessions=yes", &a);
	assert_int_equal(a.status, 400);
	answer_free(&a);
	assert_int_equal(f->engine.walks, 0);
}

static void test_metrics_no_routes(void **state)
{
	struct fixture *f = *state;

	f->engine.nroutes = 0;
	f->engine.ndevices = 0;
	json_t *fams = fetch_metrics(f, "/metrics?sessions=1");
	/* the endpoint's own families are there without any route, and the process's */
	assert_int_equal(json_array_size(fams), 7);
	assert_non_null(find_family(fams, "rpcrdma_gw_build_info"));
	check_family(fams, "rpcrdma_gw_stats_connections_refused", "counter");
	check_family(fams, "process_cpu_seconds", "counter");
	check_family(fams, "process_start_time_seconds", "gauge");
	check_family(fams, "process_resident_memory_bytes", "gauge");
	check_family(fams, "process_open_fds", "gauge");
	check_family(fams, "process_max_fds", "gauge");
	json_decref(fams);
}

/* ---- clients that misbehave ------------------------------------------------------- */

static void test_slow_client_is_dropped(void **state)
{
	struct fixture *f = *state;
	struct timeval tv = { 0, 300 * 1000 };
	struct answer a;
	size_t len;
	bool closed;

	gw_stats_http_set_timeout(f->sh, &tv);
	int slow = connect_to(f);
	send_all(slow, "GET /metr");
	double start = now_s();

	/* the loop goes on serving others meanwhile */
	fetch(f, "GET", "/healthz", &a);
	assert_int_equal(a.status, 200);
	answer_free(&a);

	free(pump_and_read(f->base, slow, 5, &len, &closed));
	assert_true(closed);
	assert_int_equal(len, 0);
	assert_true(now_s() - start >= 0.25);
	close(slow);
}

static void test_vanished_client(void **state)
{
	struct fixture *f = *state;
	struct linger hard = { .l_onoff = 1, .l_linger = 0 };
	struct answer a;

	for (int i = 0; i < 3; i++) {
		int fd = connect_to(f);
		send_all(fd, "GET /stats HTTP/1.1\r\nHost: x\r\n\r\n");
		/* gone with a reset before the answer */
		assert_int_equal(setsockopt(fd, SOL_SOCKET, SO_LINGER, &hard, sizeof(hard)), 0);
		close(fd);
		for (int k = 0; k < 20; k++)
			event_base_loop(f->base, EVLOOP_NONBLOCK);
	}
	fetch(f, "GET", "/healthz", &a);
	assert_int_equal(a.status, 200);
	answer_free(&a);
}

/* Prometheus keeps its connection: two scrapes on one, both whole. */
static void test_keep_alive(void **state)
{
	struct fixture *f = *state;
	int fd = connect_to(f);
	size_t len;
	bool closed;
	char *raw;

	send_all(fd, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n");
	raw = pump_and_read(f->base, fd, 0.3, &len, &closed);
	assert_false(closed);
	assert_non_null(strstr(raw, "\r\n\r\nok\n"));
	free(raw);
	send_all(fd, "GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
	raw = pump_and_read(f->base, fd, 5, &len, &closed);
	assert_true(closed);
	assert_non_null(strstr(raw, "200"));
	free(raw);
	close(fd);
}

/* A kept-alive connection that stays idle is closed after the timeout too. */
static void test_idle_connection_is_closed(void **state)
{
	struct fixture *f = *state;
	struct timeval tv = { 0, 300 * 1000 };
	int fd = connect_to(f);
	size_t len;
	bool closed;
	char *raw;

	gw_stats_http_set_timeout(f->sh, &tv);
	send_all(fd, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n");
	raw = pump_and_read(f->base, fd, 5, &len, &closed);
	assert_true(closed);
	assert_non_null(strstr(raw, "\r\n\r\nok\n"));
	free(raw);
	close(fd);
}

/* What pump_until_connections() waits for: the endpoint counts @want connections. */
struct connections_are {
	struct fixture *f;
	unsigned want;
};

static bool connections_are(void *arg)
{
	struct connections_are *c = arg;

	return gw_stats_http_connections(c->f->sh) == c->want;
}

/* Turn the loop until the endpoint counts @n connections (or 5 s pass). */
static void pump_until_connections(struct fixture *f, unsigned n)
{
	struct connections_are c = { f, n };

	gwt_spin_until(f->base, 5000, connections_are, &c);
	assert_int_equal(gw_stats_http_connections(f->sh), n);
}

/*
 * With max_connections open, a newcomer is closed at once (not left
 * hanging), and counted in /metrics and /stats; once a holder goes, new
 * clients are served again.
 */
static void test_connection_cap(void **state)
{
	struct fixture *f = *state;
	int idle[3];
	size_t len;
	bool closed;

	gw_stats_http_set_max_connections(f->sh, 3);
	for (int i = 0; i < 3; i++)
		idle[i] = connect_to(f);
	pump_until_connections(f, 3);

	for (int i = 0; i < 2; i++) {
		int late = connect_to(f);
		double start = now_s();
		send_all(late, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n");
		free(pump_and_read(f->base, late, 5, &len, &closed));
		assert_true(closed);
		assert_int_equal(len, 0);
		/* at once, not after the request timeout */
		assert_true(now_s() - start < 5);
		close(late);
	}
	assert_int_equal(gw_stats_http_refused(f->sh), 2);
	assert_int_equal(gw_stats_http_connections(f->sh), 3);

	/* one holder leaves: its slot comes back */
	close(idle[0]);
	pump_until_connections(f, 2);
	json_t *fams = fetch_metrics(f, "/metrics");
	assert_true(sample(fams, "rpcrdma_gw_stats_connections_refused_total", NULL) == 2);
	json_decref(fams);
	json_t *root = fetch_json(f, "/stats");
	assert_int_equal(jint(root, "stats_connections_refused"), 2);
	json_decref(root);
	close(idle[1]);
	close(idle[2]);
	pump_until_connections(f, 0);
}

/* Connections that never send a request lose their slots at the request timeout. */
static void test_idle_holders_are_shed(void **state)
{
	struct fixture *f = *state;
	struct timeval tv = { 0, 300 * 1000 };
	int idle[4];
	struct answer a;

	gw_stats_http_set_timeout(f->sh, &tv);
	gw_stats_http_set_max_connections(f->sh, 4);
	for (int i = 0; i < 4; i++)
		idle[i] = connect_to(f);
	pump_until_connections(f, 4);
	pump_until_connections(f, 0);
	fetch(f, "GET", "/healthz", &a);
	assert_int_equal(a.status, 200);
	answer_free(&a);
	assert_int_equal(gw_stats_http_refused(f->sh), 0);
	for (int i = 0; i < 4; i++)
		close(idle[i]);
}

static void test_stop_closes_connections(void **state)
{
	struct fixture *f = *state;
	int fd = connect_to(f);
	size_t len;
	bool closed;
	char buf[8];

	send_all(fd, "GET /st");
	free(pump_and_read(f->base, fd, 0.1, &len, &closed));
	assert_false(closed);
	gw_stats_http_stop(f->sh);
	f->sh = NULL;
	assert_int_equal(recv(fd, buf, sizeof(buf), 0), 0);
	close(fd);
}

/* ---- listening ---------------------------------------------------------------------- */

static void test_address_in_use(void **state)
{
	struct fixture *f = *state;

	assert_null(gw_stats_http_start(f->base, (struct sockaddr *)&f->addr, f->addrlen,
					fake_snapshot, &f->engine));
}

static void test_ipv6_loopback(void **state)
{
	struct fixture *f = *state;
	struct sockaddr_in6 sin6 = { .sin6_family = AF_INET6, .sin6_addr = IN6ADDR_LOOPBACK_INIT };
	int probe = socket(AF_INET6, SOCK_STREAM, 0);
	struct answer a;

	if (probe < 0 || bind(probe, (struct sockaddr *)&sin6, sizeof(sin6)) != 0) {
		if (probe >= 0)
			close(probe);
		skip(); /* no IPv6 loopback in this sandbox */
	}
	close(probe);

	gw_stats_http_stop(f->sh);
	f->sh = start_on(f, (struct sockaddr *)&sin6, sizeof(sin6));
	assert_non_null(f->sh);
	assert_int_equal(f->addr.ss_family, AF_INET6);
	assert_int_not_equal(((struct sockaddr_in6 *)&f->addr)->sin6_port, 0);
	fetch(f, "GET", "/healthz", &a);
	assert_int_equal(a.status, 200);
	answer_free(&a);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_healthz, setup, teardown),
		cmocka_unit_test_setup_teardown(test_index, setup, teardown),
		cmocka_unit_test_setup_teardown(test_not_found, setup, teardown),
		cmocka_unit_test_setup_teardown(test_method_not_allowed, setup, teardown),
		cmocka_unit_test_setup_teardown(test_stats_json, setup, teardown),
		cmocka_unit_test_setup_teardown(test_stats_json_without_sessions, setup, teardown),
		cmocka_unit_test_setup_teardown(test_stats_json_huge_counter_saturates, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_stats_json_no_routes, setup, teardown),
		cmocka_unit_test_setup_teardown(test_metrics_routes, setup, teardown),
		cmocka_unit_test_setup_teardown(test_metrics_shared, setup, teardown),
		cmocka_unit_test_setup_teardown(test_stats_json_shared, setup, teardown),
		cmocka_unit_test_setup_teardown(test_stats_json_nlm, setup, teardown),
		cmocka_unit_test_setup_teardown(test_stats_json_queue_time, setup, teardown),
		cmocka_unit_test_setup_teardown(test_metrics_session_queue_time, setup, teardown),
		cmocka_unit_test_setup_teardown(test_metrics_nlm, setup, teardown),
		cmocka_unit_test_setup_teardown(test_metrics_sessions, setup, teardown),
		cmocka_unit_test_setup_teardown(test_bad_sessions_param, setup, teardown),
		cmocka_unit_test_setup_teardown(test_metrics_no_routes, setup, teardown),
		cmocka_unit_test_setup_teardown(test_slow_client_is_dropped, setup, teardown),
		cmocka_unit_test_setup_teardown(test_vanished_client, setup, teardown),
		cmocka_unit_test_setup_teardown(test_keep_alive, setup, teardown),
		cmocka_unit_test_setup_teardown(test_idle_connection_is_closed, setup, teardown),
		cmocka_unit_test_setup_teardown(test_connection_cap, setup, teardown),
		cmocka_unit_test_setup_teardown(test_idle_holders_are_shed, setup, teardown),
		cmocka_unit_test_setup_teardown(test_stop_closes_connections, setup, teardown),
		cmocka_unit_test_setup_teardown(test_address_in_use, setup, teardown),
		cmocka_unit_test_setup_teardown(test_ipv6_loopback, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
