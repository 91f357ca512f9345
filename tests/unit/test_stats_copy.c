/* SPDX-License-Identifier: MIT */
/*
 * The engines' figures copied out for the stats endpoint
 * (gateway/stats/stats_copy.h):
 *
 * - a document rendered from a copy is the document rendered from the walk,
 *   byte for byte (JSON and Prometheus, with and without sessions), but for
 *   what the kernel says of the process, read anew by each render;
 * - the copy owns everything it hands out: the walk's structs, strings,
 *   counters and tables are freed right after each call, and the render
 *   from the copy, later, reads none of them (ASan would say);
 * - without session counters, a session keeps its credits and its counters
 *   are zero;
 * - a walk that outgrows the room prepared for it only measures, and the
 *   take walks again into room of that size; the next take, into room
 *   sized from the last, walks once; a second walk larger still than the
 *   first measured grows the copy as it goes;
 * - out of memory anywhere in a take (test_stats_copy.wrap: the n-th
 *   allocation fails), the take says so and keeps nothing, and the next
 *   take works; out of memory for the first block, nothing is walked.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>

#include "gateway/stats/stats_copy.h"
#include "gateway/stats/stats_render.h"

#include "support/statsrig.h"

/* Armed at n > 0: the n-th allocation from then on fails, once. */
void *__real_malloc(size_t size);
void *__wrap_malloc(size_t size);
static unsigned malloc_fail_in;
static unsigned malloc_failed;

void *__wrap_malloc(size_t size)
{
	if (malloc_fail_in > 0 && --malloc_fail_in == 0) {
		malloc_failed++;
		return NULL;
	}
	return __real_malloc(size);
}

enum doc_format { DOC_JSON, DOC_PROMETHEUS };

/* Drop the lines of @text that start with @prefix (Prometheus' process_* families). */
static void drop_lines(char *text, const char *const *prefixes, size_t n)
{
	char *out = text;

	for (char *line = text; *line;) {
		char *nl = strchr(line, '\n');
		size_t len = nl ? (size_t)(nl - line) + 1 : strlen(line);
		bool drop = false;
		for (size_t i = 0; i < n; i++)
			drop |= strncmp(line, prefixes[i], strlen(prefixes[i])) == 0;
		if (!drop) {
			memmove(out, line, len);
			out += len;
		}
		line += len;
	}
	*out = '\0';
}

/* The document, less what the kernel says of the process (it changes between two renders). */
static char *render(enum doc_format format, gw_stats_snapshot_fn snapshot, void *arg, bool sessions)
{
	struct evbuffer *out = evbuffer_new();
	size_t len;
	char *text;
	bool ok;

	assert_non_null(out);
	const struct stats_endpoint_view ep = { .refused = 7 };

	ok = format == DOC_JSON ? stats_render_json(snapshot, arg, &ep, sessions, out)
				: stats_render_prometheus(snapshot, arg, &ep, sessions, out);
	assert_true(ok);
	len = evbuffer_get_length(out);
	text = malloc(len + 1);
	assert_non_null(text);
	assert_int_equal(evbuffer_remove(out, text, len), len);
	text[len] = '\0';
	evbuffer_free(out);
	if (format == DOC_JSON) {
		/* {"version":...,"process":{...},"stats_connections_refused":... */
		char *from = strstr(text, ",\"process\":");
		char *to = strstr(text, ",\"stats_connections_refused\":");
		assert_non_null(from);
		assert_non_null(to);
		memmove(from, to, strlen(to) + 1);
	} else {
		const char *const process[] = { "process_", "# HELP process_", "# TYPE process_" };
		drop_lines(text, process, 3);
	}
	return text;
}

/*
 * A walk of the fake engine that hands out temporaries of everything, on
 * the heap, each freed as soon as its call returns: a copy that kept a
 * pointer into the walk is read after free when it is rendered.
 */
struct fleeting {
	struct gw_stats_visitor visitor;
	struct gw_stats_visitor *inner;
};

static char *dup_str(const char *s)
{
	char *d = s ? strdup(s) : NULL;

	assert_true(!s || d);
	return d;
}

static void *dup_mem(const void *p, size_t n)
{
	void *d = p ? malloc(n) : NULL;

	assert_true(!p || d);
	if (d)
		memcpy(d, p, n);
	return d;
}

static struct gw_counters *dup_counters(const struct gw_counters *c)
{
	struct gw_counters *d = dup_mem(c, sizeof(*c));

	if (d && c->procs_big)
		d->procs_big = dup_mem(c->procs_big, c->procs_cap * sizeof(*c->procs_big));
	return d;
}

static void free_counters(struct gw_counters *c)
{
	if (c)
		free(c->procs_big);
	free(c);
}

static void fleeting_route(struct gw_stats_visitor *v, const struct gw_stats_route *r)
{
	struct fleeting *fl = (struct fleeting *)v;
	struct gw_stats_route t = *r;
	char *name = dup_str(r->name), *mode = dup_str(r->mode);
	char *listen = dup_str(r->listen), *upstream = dup_str(r->upstream);
	struct gw_counters *totals = dup_counters(r->totals);
	struct gw_hist *lat =
		dup_mem(r->proc_upstream_us, GW_PROC_SLOTS * sizeof(*r->proc_upstream_us));
	struct gw_stats_shared *shared = dup_mem(r->shared, sizeof(*r->shared));
	struct gw_stats_nlm *nlm = dup_mem(r->nlm, sizeof(*r->nlm));
	char *states[GW_STATS_MAX_CHANNELS] = { 0 };

	for (uint32_t i = 0; shared && i < shared->nchannels; i++)
		shared->channels[i].state = states[i] = dup_str(r->shared->channels[i].state);
	t.name = name;
	t.mode = mode;
	t.listen = listen;
	t.upstream = upstream;
	t.totals = totals;
	t.proc_upstream_us = lat;
	t.shared = shared;
	t.nlm = nlm;
	fl->inner->route(fl->inner, &t);
	for (uint32_t i = 0; i < GW_STATS_MAX_CHANNELS; i++)
		free(states[i]);
	free(name);
	free(mode);
	free(listen);
	free(upstream);
	free_counters(totals);
	free(lat);
	free(shared);
	free(nlm);
}

static void fleeting_session(struct gw_stats_visitor *v, const struct gw_stats_session *s)
{
	struct fleeting *fl = (struct fleeting *)v;
	struct gw_stats_session t = *s;
	char *client = dup_str(s->client), *upstream = dup_str(s->upstream);
	char *st = dup_str(s->state);
	struct gw_counters *c = dup_counters(s->counters);

	t.client = client;
	t.upstream = upstream;
	t.state = st;
	t.counters = c;
	fl->inner->session(fl->inner, &t);
	free(client);
	free(upstream);
	free(st);
	free_counters(c);
}

static void fleeting_device(struct gw_stats_visitor *v, const struct gw_stats_device *d)
{
	struct fleeting *fl = (struct fleeting *)v;
	struct gw_stats_device t = *d;
	char *name = dup_str(d->name);

	t.name = name;
	fl->inner->device(fl->inner, &t);
	free(name);
}

static void fleeting_snapshot(void *engine, struct gw_stats_visitor *v)
{
	struct fleeting fl = {
		.visitor = { .route = fleeting_route,
			     .session = fleeting_session,
			     .device = fleeting_device },
		.inner = v,
	};

	gwt_fake_snapshot(engine, &fl.visitor);
}

static void test_same_document(void **state)
{
	(void)state;
	struct gwt_fake_engine *e = calloc(1, sizeof(*e));
	struct gw_stats_copy c;

	assert_non_null(e);
	gwt_fake_engine_init(e);
	/* A session whose table by procedure grew: its slots must keep their places. */
	struct gw_counters *sc = &e->routes[0].sessions[1].c;
	for (uint32_t proc = 0; proc < 20; proc++)
		gw_counters_count_call(sc, 100003, 3, proc);
	assert_non_null(sc->procs_big);
	gw_stats_copy_init(&c);
	for (int f = DOC_JSON; f <= DOC_PROMETHEUS; f++) {
		for (int sessions = 0; sessions < 2; sessions++) {
			char *want = render(f, gwt_fake_snapshot, e, sessions);
			unsigned walks = e->walks;
			assert_true(gw_stats_copy_take(&c, fleeting_snapshot, e, sessions));
			assert_in_range(e->walks, walks + 1, walks + 2); /* 2: it measured first */
			char *got = render(f, gw_stats_copy_replay, &c, sessions);
			/* the copy can be rendered again: a replay changes nothing */
			char *again = render(f, gw_stats_copy_replay, &c, sessions);
			assert_string_equal(got, want);
			assert_string_equal(again, want);
			gw_stats_copy_clear(&c);
			free(want);
			free(got);
			free(again);
		}
	}
	assert_null(c.first);
	assert_null(c.blocks);
	gw_counters_release(sc);
	free(e);
}

/* The sessions the replay hands out. */
struct seen {
	struct gw_stats_visitor visitor;
	unsigned routes, sessions, devices;
	uint64_t calls;
	struct gw_credit_state credits;
};

static void seen_route(struct gw_stats_visitor *v, const struct gw_stats_route *r)
{
	((struct seen *)v)->routes++;
	assert_non_null(r->totals);
}

static void seen_session(struct gw_stats_visitor *v, const struct gw_stats_session *s)
{
	struct seen *w = (struct seen *)v;

	w->sessions++;
	w->calls += s->counters->calls;
	stats_credits_add(&w->credits, &s->credits);
}

static void seen_device(struct gw_stats_visitor *v, const struct gw_stats_device *d)
{
	(void)d;
	((struct seen *)v)->devices++;
}

static void test_without_session_counters(void **state)
{
	(void)state;
	struct gwt_fake_engine e;
	struct gw_stats_copy c;
	struct seen w = {
		.visitor = { .route = seen_route, .session = seen_session, .device = seen_device },
	};

	gwt_fake_engine_init(&e);
	gw_stats_copy_init(&c);
	assert_true(gw_stats_copy_take(&c, fleeting_snapshot, &e, false));
	gw_stats_copy_replay(&c, &w.visitor);
	assert_int_equal(w.routes, 2);
	assert_int_equal(w.sessions, 2);
	assert_int_equal(w.devices, 2);
	assert_int_equal(w.calls, 0);
	assert_int_equal(w.credits.granted, 129);
	assert_int_equal(w.credits.in_use, 4);
	assert_int_equal(w.credits.queued, 2);
	gw_stats_copy_clear(&c);
	/* with them, the calls are there */
	memset(&w.credits, 0, sizeof(w.credits));
	w.calls = w.sessions = 0;
	assert_true(gw_stats_copy_take(&c, gwt_fake_snapshot, &e, true));
	gw_stats_copy_replay(&c, &w.visitor);
	assert_int_equal(w.calls, 602);
	gw_stats_copy_clear(&c);
}

/* A route of many sessions, @more_per_walk more at each walk: the copy outgrows its room. */
struct many {
	struct gwt_fake_engine e;
	unsigned sessions, more_per_walk;
	unsigned walks;
};

static void many_snapshot(void *engine, struct gw_stats_visitor *v)
{
	struct many *m = engine;
	struct gwt_fake_route *fr = &m->e.routes[0];

	m->walks++;
	v->route(v, &fr->r);
	for (unsigned i = 0; i < m->sessions; i++) {
		struct gw_stats_session s = fr->sessions[i % 2].s;
		s.id = i + 1;
		v->session(v, &s);
	}
	v->device(v, &m->e.devices[0]);
	m->sessions += m->more_per_walk;
}

static struct many *many_new(unsigned sessions, unsigned more_per_walk)
{
	struct many *m = calloc(1, sizeof(*m));

	assert_non_null(m);
	gwt_fake_engine_init(&m->e);
	m->sessions = sessions;
	m->more_per_walk = more_per_walk;
	return m;
}

/* The sessions of the copy's replay. */
static unsigned replayed_sessions(struct gw_stats_copy *c)
{
	struct seen w = {
		.visitor = { .route = seen_route, .session = seen_session, .device = seen_device },
	};

	gw_stats_copy_replay(c, &w.visitor);
	return w.sessions;
}

static void test_walks_again_when_outgrown(void **state)
{
	(void)state;
	struct many *m = many_new(300, 0);
	struct gw_stats_copy c;
	char *want = render(DOC_JSON, many_snapshot, m, true), *got;

	gw_stats_copy_init(&c);
	/* the first take knows nothing of the size: it measures, then copies */
	m->walks = 0;
	assert_true(gw_stats_copy_take(&c, many_snapshot, m, true));
	assert_int_equal(m->walks, 2);
	got = render(DOC_JSON, gw_stats_copy_replay, &c, true);
	assert_string_equal(got, want);
	free(got);
	free(want);
	/* the next one has room: one walk, and a little growth still fits */
	m->sessions += 30;
	assert_true(gw_stats_copy_take(&c, many_snapshot, m, true));
	assert_int_equal(m->walks, 3);
	assert_int_equal(replayed_sessions(&c), 330);
	/* without session counters, a session takes little: they fit in the smallest room */
	assert_true(gw_stats_copy_take(&c, many_snapshot, m, false));
	assert_int_equal(m->walks, 4);
	assert_int_equal(replayed_sessions(&c), 330);
	/* more than a quarter more sessions: measured, then copied */
	m->sessions = 1000;
	assert_true(gw_stats_copy_take(&c, many_snapshot, m, true));
	assert_int_equal(m->walks, 6);
	assert_int_equal(replayed_sessions(&c), 1000);
	/* still more on the second walk than the first measured: the copy grows */
	m->more_per_walk = 2000;
	m->sessions = 3000;
	assert_true(gw_stats_copy_take(&c, many_snapshot, m, true));
	assert_int_equal(m->walks, 8);
	assert_int_equal(replayed_sessions(&c), 5000);
	gw_stats_copy_clear(&c);
	free(m);
}

static void test_out_of_memory(void **state)
{
	(void)state;
	struct many *m = many_new(300, 2000);
	struct gw_stats_copy c;
	unsigned failures = 0;

	gw_stats_copy_init(&c);
	for (unsigned n = 1;; n++) {
		unsigned walks = m->walks;
		m->sessions = 300;
		malloc_failed = 0;
		malloc_fail_in = n;
		bool ok = gw_stats_copy_take(&c, many_snapshot, m, true);
		malloc_fail_in = 0;
		if (!malloc_failed) {
			assert_true(ok);
			break;
		}
		failures++;
		assert_false(ok);
		assert_null(c.first);
		assert_null(c.blocks);
		/* no room for the first walk: nobody walked; for the second: one walk */
		assert_int_equal(m->walks, walks + (n < 3 ? n - 1 : 2));
	}
	/* the first walk's room, the second's, and blocks grown in the second */
	assert_true(failures >= 3);
	assert_int_equal(replayed_sessions(&c), 2300);
	gw_stats_copy_clear(&c);
	free(m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_same_document),
		cmocka_unit_test(test_without_session_counters),
		cmocka_unit_test(test_walks_again_when_outgrown),
		cmocka_unit_test(test_out_of_memory),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
