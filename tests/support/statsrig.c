#include "support/statsrig.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/log.h"

#include "support/promtext.h"

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

/* ---- the fake engine ---- */

const char gwt_fake_weird_name[] = "we\"ird\\route\nx";

/*
 * The engine may hand out temporaries: one struct is reused for every route
 * and one for every session, so a renderer that kept a pointer past its
 * callback would show the wrong route's values.
 */
void gwt_fake_snapshot(void *arg, struct gw_stats_visitor *v)
{
	struct gwt_fake_engine *e = arg;
	struct gw_stats_route r;
	struct gw_stats_session s;

	e->walks++;
	e->walking = true;
	if (e->walk_us)
		usleep(e->walk_us);
	for (unsigned i = 0; i < e->nroutes; i++) {
		struct gwt_fake_route *fr = &e->routes[i];
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
	e->walking = false;
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

void gwt_fake_engine_init(struct gwt_fake_engine *e)
{
	memset(e, 0, sizeof(*e));
	e->nroutes = 2;

	struct gwt_fake_route *a = &e->routes[0];
	fill_route_totals(&a->totals);
	a->r = (struct gw_stats_route){ .name = "nfs-fwd",
					.mode = "forward",
					.listen = "0.0.0.0:2049",
					.upstream = "192.168.1.10:20049",
					.totals = &a->totals,
					.proc_upstream_us = a->proc_upstream_us,
					.live_sessions = 2 };
	/* as its two sessions below are */
	a->r.sessions_by_state[GW_SESSION_READY] = 1;
	a->r.sessions_by_state[GW_SESSION_CONNECTING] = 1;
	/* Two shared upstream connections, the second lost and not yet made again. */
	a->shared = (struct gw_stats_shared){ .nchannels = 2,
					      .xid_entries = 61440,
					      .xid_in_flight = 3,
					      .xid_answered = 250,
					      .xid_kept = 40,
					      .xid_kept_clients = 3,
					      .xid_new = 1000,
					      .xid_retransmit_in_flight = 2,
					      .xid_retransmit_answered = 1,
					      .xid_expired = 700,
					      .xid_evicted = 9,
					      .xid_evicted_safe_twice = 6,
					      .xid_evicted_own = 2,
					      .xid_evicted_other = 1,
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
					.clients_reclaimed = 74,
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
					.async_portmapper_silent = 28,
					.async_yielded = 29,
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

	struct gwt_fake_session *s = &a->sessions[0];
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

	struct gwt_fake_route *b = &e->routes[1];
	b->totals.calls = 42;
	b->totals.replies = 41;
	b->totals.events[GW_EV_CREDIT_OVERRUN] = 9;
	gw_hist_add(&b->totals.upstream_us, 2);
	b->r = (struct gw_stats_route){ .name = gwt_fake_weird_name,
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

/* ---- the endpoint ---- */

struct gw_stats_http *gwt_stats_rig_start_on(struct gwt_stats_rig *f, const struct sockaddr *sa,
					     socklen_t len)
{
	struct gw_stats_http *sh =
		gw_stats_http_start(f->base, sa, len, gwt_fake_snapshot, &f->engine);

	if (sh) {
		f->addrlen = gw_stats_http_local_addr(sh, &f->addr);
		if (f->addrlen == 0) {
			gw_stats_http_stop(sh);
			return NULL;
		}
	}
	return sh;
}

int gwt_stats_rig_setup(void **state)
{
	struct gwt_stats_rig *f = calloc(1, sizeof(*f));
	struct sockaddr_in sin = { .sin_family = AF_INET, .sin_port = 0 };

	if (!f)
		return -1;
	gw_log_set_level(GW_LOG_WARN);
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	f->base = event_base_new();
	gwt_fake_engine_init(&f->engine);
	if (f->base)
		f->sh = gwt_stats_rig_start_on(f, (struct sockaddr *)&sin, sizeof(sin));
	if (!f->base || !f->sh)
		return -1;
	*state = f;
	return 0;
}

int gwt_stats_rig_teardown(void **state)
{
	struct gwt_stats_rig *f = *state;

	gw_stats_http_stop(f->sh);
	event_base_free(f->base);
	free(f);
	return 0;
}

int gwt_stats_connect(const struct gwt_stats_rig *f)
{
	return gwt_http_connect((const struct sockaddr *)&f->addr, f->addrlen);
}

int gwt_stats_fetch_raw(struct gwt_stats_rig *f, const char *request, struct gwt_http_answer *a)
{
	return gwt_http_fetch_raw(f->base, (const struct sockaddr *)&f->addr, f->addrlen, request,
				  a);
}

int gwt_stats_fetch(struct gwt_stats_rig *f, const char *method, const char *target,
		    struct gwt_http_answer *a)
{
	char req[512];

	snprintf(req, sizeof(req),
		 "%s %s HTTP/1.1\r\nHost: localhost\r\nContent-Length: 0\r\n"
		 "Connection: close\r\n\r\n",
		 method, target);
	return gwt_stats_fetch_raw(f, req, a);
}

/* GET @target: 0 when the answer is a 200 of type @type, the answer in @a; -1 otherwise. */
static int get_typed(struct gwt_stats_rig *f, const char *target, const char *type,
		     struct gwt_http_answer *a)
{
	char v[128];

	if (gwt_stats_fetch(f, "GET", target, a) != 0) {
		fprintf(stderr, "GET %s: no answer\n", target);
		return -1;
	}
	if (a->status != 200 || !gwt_http_header(a, "Content-Type", v, sizeof(v)) ||
	    strcmp(v, type) != 0) {
		fprintf(stderr, "GET %s: %s\n", target, a->head);
		gwt_http_answer_free(a);
		return -1;
	}
	return 0;
}

json_t *gwt_stats_get_json(struct gwt_stats_rig *f, const char *target)
{
	struct gwt_http_answer a;
	json_error_t err;
	json_t *root;

	if (get_typed(f, target, "application/json", &a) != 0)
		return NULL;
	root = json_loadb(a.body, a.body_len, 0, &err);
	if (!root)
		fprintf(stderr, "%s is not JSON: %s at %d:%d\n", target, err.text, err.line,
			err.column);
	gwt_http_answer_free(&a);
	return root;
}

json_t *gwt_stats_get_metrics(struct gwt_stats_rig *f, const char *target)
{
	struct gwt_http_answer a;
	json_t *families;

	if (get_typed(f, target, "text/plain; version=0.0.4; charset=utf-8", &a) != 0)
		return NULL;
	families = gwt_prom_parse(a.body, a.body_len);
	gwt_http_answer_free(&a);
	return families;
}
