/* SPDX-License-Identifier: MIT */
/*
 * What a scrape costs the data path (gateway/stats/stats_http.c): the
 * gateway's other workers are parked for as long as the engines are walked
 * (gateway/workers.h), so the walk must only copy, and the document be
 * rendered after it; and a burst of scrapes must not walk again and again.
 *
 * - nothing of a document is written while the engine is walked: /stats and
 *   /metrics, with and without sessions, are rendered once the walk is over
 *   (evbuffer_add and evbuffer_add_printf, through which every byte of
 *   both renderers goes, are watched: test_stats_http_park.wrap);
 * - requests in a burst are answered from one walk, each kind of document
 *   (format, sessions=) from its own;
 * - a document is reused for ten times what it cost, never past a second;
 * - out of memory for the copy, the answer is a 500 and nobody is parked.
 *
 * The fake engine (support/statsrig.h) says when it is being walked, and
 * can be made to take its time, as a large gateway's engines do.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/buffer.h>

#include "common/clock.h"

#include "support/statsrig.h"

/* The engine being watched, and what was written while it was walked. */
static const struct gwt_fake_engine *watched;
static unsigned written_while_walking;

int __real_evbuffer_add(struct evbuffer *buf, const void *data, size_t len);
int __wrap_evbuffer_add(struct evbuffer *buf, const void *data, size_t len);
int __wrap_evbuffer_add_printf(struct evbuffer *buf, const char *fmt, ...);

int __wrap_evbuffer_add(struct evbuffer *buf, const void *data, size_t len)
{
	if (watched && watched->walking)
		written_while_walking++;
	return __real_evbuffer_add(buf, data, len);
}

int __wrap_evbuffer_add_printf(struct evbuffer *buf, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (watched && watched->walking)
		written_while_walking++;
	va_start(ap, fmt);
	n = evbuffer_add_vprintf(buf, fmt, ap);
	va_end(ap);
	return n;
}

/* Armed: allocations of 256 KiB and more fail (the copy's first block is one). */
void *__real_malloc(size_t size);
void *__wrap_malloc(size_t size);
static bool large_malloc_fails;

void *__wrap_malloc(size_t size)
{
	if (large_malloc_fails && size >= 256 * 1024)
		return NULL;
	return __real_malloc(size);
}

static int setup(void **state)
{
	int rc = gwt_stats_rig_setup(state);

	if (rc == 0) {
		struct gwt_stats_rig *f = *state;
		watched = &f->engine;
	}
	written_while_walking = 0;
	large_malloc_fails = false;
	return rc;
}

static int teardown(void **state)
{
	watched = NULL;
	return gwt_stats_rig_teardown(state);
}

/* GET @target: its status, and its body in @body (freed by the caller) when @body. */
static int get(struct gwt_stats_rig *f, const char *target, char **body)
{
	struct gwt_http_answer a;
	int status;

	assert_int_equal(gwt_stats_fetch(f, "GET", target, &a), 0);
	status = a.status;
	if (body) {
		*body = strdup(a.body);
		assert_non_null(*body);
	}
	gwt_http_answer_free(&a);
	return status;
}

static void test_rendered_after_the_walk(void **state)
{
	struct gwt_stats_rig *f = *state;
	const char *targets[] = { "/stats", "/stats?sessions=0", "/metrics",
				  "/metrics?sessions=1" };
	char *body;

	for (size_t i = 0; i < sizeof(targets) / sizeof(targets[0]); i++) {
		assert_int_equal(get(f, targets[i], &body), 200);
		/* the document is whole: the walk's last figures are in it */
		assert_non_null(strstr(body, "mlx5_1"));
		free(body);
		assert_int_equal(f->engine.walks, i + 1);
	}
	assert_false(f->engine.walking);
	assert_int_equal(written_while_walking, 0);
}

static void test_burst_walks_once(void **state)
{
	struct gwt_stats_rig *f = *state;
	char *first, *body;

	/* 50 ms a walk: each document is reused for at least half a second */
	f->engine.walk_us = 50000;
	assert_int_equal(get(f, "/stats", &first), 200);
	for (int i = 0; i < 5; i++) {
		assert_int_equal(get(f, "/stats", &body), 200);
		assert_string_equal(body, first);
		free(body);
	}
	assert_int_equal(f->engine.walks, 1);
	free(first);
	/* each kind of document is made from a walk of its own */
	assert_int_equal(get(f, "/stats?sessions=0", NULL), 200);
	assert_int_equal(get(f, "/stats?sessions=false", NULL), 200);
	assert_int_equal(f->engine.walks, 2);
	assert_int_equal(get(f, "/metrics", NULL), 200);
	assert_int_equal(get(f, "/metrics?sessions=1", NULL), 200);
	assert_int_equal(get(f, "/metrics?sessions=0", NULL), 200);
	assert_int_equal(f->engine.walks, 4);
}

/*
 * GET @path every 20 ms until the engine has been walked @walks times; how
 * long that took from @t0 (µs). Gives up after 5 s.
 */
static uint64_t until_walked(struct gwt_stats_rig *f, const char *path, unsigned walks, uint64_t t0)
{
	while (f->engine.walks < walks && gw_now_us() - t0 < 5000000) {
		usleep(20000);
		assert_int_equal(get(f, path, NULL), 200);
	}
	assert_int_equal(f->engine.walks, walks);
	return gw_now_us() - t0;
}

/*
 * The bounds are what the rule allows whatever the machine's load: a walk
 * costs at least walk_us (the fake engine sleeps that long), so the document
 * is never made again before ten times that; and never kept past a second
 * (plus the polling's own time, well under the next bound).
 */
static void test_reused_for_ten_times_its_cost(void **state)
{
	struct gwt_stats_rig *f = *state;
	uint64_t t0, took;

	/* 20 ms to make: reused for at least 200 ms, made again within a second */
	f->engine.walk_us = 20000;
	t0 = gw_now_us();
	assert_int_equal(get(f, "/metrics", NULL), 200);
	assert_int_equal(f->engine.walks, 1);
	took = until_walked(f, "/metrics", 2, t0);
	assert_true(took >= 10 * 20000);
	assert_true(took < 1500000);

	/* 200 ms to make: ten times that is 2 s, but a second at most */
	f->engine.walk_us = 200000;
	usleep(1100000); /* the last document is out of date */
	t0 = gw_now_us();
	assert_int_equal(get(f, "/metrics", NULL), 200);
	assert_int_equal(f->engine.walks, 3);
	took = until_walked(f, "/metrics", 4, t0);
	assert_true(took >= 1000000);
	assert_true(took < 1900000); /* not ten times its cost: 2 s */
}

static void test_out_of_memory_parks_nobody(void **state)
{
	struct gwt_stats_rig *f = *state;
	char *body;

	large_malloc_fails = true;
	assert_int_equal(get(f, "/stats", &body), 500);
	assert_string_equal(body, "out of memory\n");
	free(body);
	assert_int_equal(get(f, "/metrics?sessions=1", NULL), 500);
	assert_int_equal(f->engine.walks, 0);
	large_malloc_fails = false;
	/* nothing was kept of the failures */
	assert_int_equal(get(f, "/stats", NULL), 200);
	assert_int_equal(f->engine.walks, 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_rendered_after_the_walk, setup, teardown),
		cmocka_unit_test_setup_teardown(test_burst_walks_once, setup, teardown),
		cmocka_unit_test_setup_teardown(test_reused_for_ten_times_its_cost, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_out_of_memory_parks_nobody, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
